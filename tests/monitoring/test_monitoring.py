"""The alerts and the dashboard (issue 17): `promtool check rules` and `promtool test
rules` (promtool built from the Go module proxy) on the rules file, and every metric the
rules and the Grafana dashboard query is one that a running webhook (with the live
cluster view and the background audit on) or the real kube-apiserver exports.

    python3 tests/monitoring/test_monitoring.py BIN_DIR WEBHOOK_BINARY SOURCE_DIR
"""

import json
import os
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from controlplane import ControlPlane  # noqa: E402

BIN_DIR, WEBHOOK, SOURCE = sys.argv[1:4] if len(sys.argv) >= 4 else (None, None, None)
CP = None
PROMTOOL = None
FILES = None
METRIC = re.compile(r"\b((?:kubegap|apiserver)_[a-z_]+)\b")


def exported(text):
    """Metric names in a Prometheus text exposition: of its samples, and of the families it
    declares (# TYPE) that have no series yet (kubegap_audit_findings before a finding)."""
    names = {re.split(r"[{ ]", line, 1)[0] for line in text.splitlines() if line and not line.startswith("#")}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            family, kind = line.split()[2:4]
            names |= {family} | ({family + s for s in ("_bucket", "_sum", "_count")} if kind == "histogram" else set())
    return names


def setUpModule():
    global CP, PROMTOOL, FILES
    PROMTOOL = subprocess.run([os.path.join(SOURCE, "tests", "e2e", "go-tool.sh"), "promtool"], capture_output=True,
                              text=True, check=True).stdout.strip().splitlines()[-1]
    FILES = os.path.join(SOURCE, "manifests", "helm", "kubegap-webhook", "files")
    CP = ControlPlane(BIN_DIR, WEBHOOK, SOURCE)
    CP.webhook_args = lambda: ("--kubeconfig", CP.kubeconfig, "--audit-interval", "3600")
    CP.__enter__()


def tearDownModule():
    if CP is not None:
        CP.stop()


class Monitoring(unittest.TestCase):
    def test_rules_pass_promtool_check_and_their_unit_tests(self):
        r = subprocess.run([PROMTOOL, "check", "rules", os.path.join(FILES, "prometheus-rules.yaml")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("SUCCESS: 6 rules found", r.stdout + r.stderr)
        r = subprocess.run([PROMTOOL, "test", "rules", "rules_test.yaml"], capture_output=True, text=True,
                           cwd=os.path.join(SOURCE, "tests", "monitoring"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("SUCCESS", r.stdout + r.stderr)

    def test_every_queried_metric_is_exported(self):
        # A fail-open, so that the API server's counter exists: the webhook down, a pod made.
        CP.stop_webhook()
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "fail-open", "namespace": "default"},
               "spec": {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
        CP.kubectl("create", "-f", "-", input=json.dumps(pod))
        CP.start_webhook()
        deadline = time.monotonic() + 30
        names = set()
        while time.monotonic() < deadline:
            names = exported(CP.webhook_metrics()) | exported(CP.kubectl("get", "--raw", "/metrics").stdout)
            if "kubegap_cluster_view_last_sync_timestamp_seconds" in names:
                break
            time.sleep(0.5)
        queried = {}
        with open(os.path.join(FILES, "prometheus-rules.yaml")) as f:
            for m in METRIC.findall(f.read()):
                queried.setdefault(m, "rules")
        with open(os.path.join(FILES, "grafana-dashboard.json")) as f:
            dashboard = json.load(f)
        for panel in dashboard["panels"]:
            for target in panel["targets"]:
                for m in METRIC.findall(target["expr"]):
                    queried.setdefault(m, f"dashboard panel {panel['title']!r}")
        self.assertGreaterEqual(len(queried), 12, queried)
        missing = {m: where for m, where in queried.items() if m not in names}
        self.assertEqual(missing, {}, "queried but not exported")
        print(f"{len(queried)} metrics queried by the rules and the dashboard, all exported", flush=True)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
