"""What the MCP tests share (tests/mcp/fault_test.py, tests/mcp/sdk_test.py): a kubeconfig
for an API server at a local port that is not a real one (refused, or a black hole)."""
from pathlib import Path


def write_kubeconfig(path: Path, port: int) -> str:
    """A kubeconfig whose only context reaches https://127.0.0.1:PORT with a token."""
    path.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: https://127.0.0.1:{port}
    insecure-skip-tls-verify: true
users:
- name: test
  user:
    token: not-a-real-token
contexts:
- name: test
  context:
    cluster: test
    user: test
    namespace: default
current-context: test
""")
    return str(path)
