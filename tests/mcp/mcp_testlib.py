"""What the MCP tests share (tests/mcp/fault_test.py, tests/mcp/sdk_test.py): a kubeconfig
for an API server at a local port that is not a real one (refused, or a black hole)."""
from pathlib import Path


def write_kubeconfig(path: Path, port: int) -> str:
    """A kubeconfig whose only context reaches https://127.0.0.1:PORT, sending no credentials:
    it skips TLS verification (the test servers have no certificate to verify), and with a
    token kubegap would refuse it (--allow-insecure-kubeconfig)."""
    path.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: https://127.0.0.1:{port}
    insecure-skip-tls-verify: true
users:
- name: test
  user: {{}}
contexts:
- name: test
  context:
    cluster: test
    user: test
    namespace: default
current-context: test
""")
    return str(path)
