"""End to end for the background audit (issue 15): `serve --audit-interval` on a real
kube-apiserver with the upstream PolicyReport CRDs (wgpolicyk8s.io/v1alpha2, from Kyverno's
module through the Go module proxy) installed. Workloads with gaps appear in
`kubectl get policyreports -A` with fail results; fixing one flips it to pass; deleting one
removes its results, and a namespace left with nothing loses its report; of two replicas
one writes, and the other takes over when the first stops. The metrics say the same.

    python3 tests/e2e/test_audit.py BIN_DIR WEBHOOK_BINARY SOURCE_DIR
"""

import json
import os
import re
import subprocess
import sys
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controlplane import ControlPlane, wait_for as poll  # noqa: E402
from test_workloads import CRDS, crd, pytorchjob, template  # noqa: E402

BIN_DIR, WEBHOOK, SOURCE = sys.argv[1:4] if len(sys.argv) >= 4 else (None, None, None)
CP = None
NS, GONE_NS, LEASE_NS = "e2e-audit", "e2e-audit-gone", "kubegap-system"
LEASE = f"{LEASE_NS}/kubegap-webhook-audit"
# Kyverno ships the wg-policy CRDs; this version's go.mod is served by the Go module proxy.
KYVERNO = "github.com/kyverno/kyverno@v1.19.1"
AUDIT_ARGS = ("--audit-interval", "2", "--audit-lease", LEASE)


OPENREPORTS = "github.com/openreports/reports-api@v0.2.1"


def module_dir(module):
    """A module's files in Go's module cache (downloaded through the proxy once)."""
    r = subprocess.run(["go", "mod", "download", "-json", module], capture_output=True, text=True, timeout=600,
                       cwd="/", env={**os.environ, "GOFLAGS": "-mod=mod"})
    info = json.loads(r.stdout)
    if "Dir" not in info:
        raise RuntimeError(f"go mod download {module}: {info.get('Error', r.stderr)}")
    return info["Dir"]


def policy_report_crds():
    """The upstream wgpolicyk8s.io CRD files, from the module cache."""
    base = os.path.join(module_dir(KYVERNO), "config", "crds", "policyreport")
    return [os.path.join(base, f"wgpolicyk8s.io_{name}.yaml") for name in ("policyreports", "clusterpolicyreports")]


def gpu_pod(name, good):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}},
            "spec": template(good)["spec"]}


def results(namespace):
    """{(kind, name, policy): result} of our PolicyReport in `namespace` ({} when there is none)."""
    r = CP.kubectl("get", "policyreports.wgpolicyk8s.io", "-n", namespace, "kubegap", "-o", "json", check=False)
    if r.returncode != 0:
        return {}
    report = json.loads(r.stdout)
    return {(res["resources"][0]["kind"], res["resources"][0]["name"], res["policy"]): res for res in report["results"]}


def wait_for(what, predicate, timeout=60):
    return poll(what, predicate, timeout, interval=0.5)


def metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            out[key] = float(value)
    return out


def start_second_replica(name="webhook-b", audit_args=AUDIT_ARGS):
    """Another `serve` with the given audit flags, on ports of its own; its health port."""
    CP._spawn(name, [WEBHOOK, "serve", "--tls-cert", os.path.join(CP.webhook_certs, "tls.crt"),
                     "--tls-key", os.path.join(CP.webhook_certs, "tls.key"), "--listen", "127.0.0.1:0",
                     "--health-listen", "127.0.0.1:0", "--log-format", "json", "--threads", "1",
                     "--kubeconfig", CP.kubeconfig, *audit_args])

    def serving():
        for line in CP.process_log(name).splitlines():
            entry = json.loads(line)
            if entry.get("msg") == "serving":
                return int(entry["health_listen"].rsplit(":", 1)[1])
        return None

    return wait_for("the second replica to serve", serving, 30)


def setUpModule():
    global CP
    CP = ControlPlane(BIN_DIR, WEBHOOK, SOURCE)
    CP.webhook_args = lambda: ("--kubeconfig", CP.kubeconfig, *AUDIT_ARGS)
    CP.__enter__()
    for path in policy_report_crds():
        CP.kubectl("apply", "-f", path)
    CP.kubectl("apply", "-f", "-", input=json.dumps(crd(*[c for c in CRDS if c[2] == "PyTorchJob"][0])))
    for name in ("policyreports.wgpolicyk8s.io", "clusterpolicyreports.wgpolicyk8s.io", "pytorchjobs.kubeflow.org"):
        CP.kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s")
    for ns in (NS, GONE_NS, LEASE_NS):
        CP.kubectl("create", "namespace", ns)


def tearDownModule():
    if CP is not None:
        CP.stop()


def apply(obj, namespace=NS):
    CP.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(obj))


class BackgroundAudit(unittest.TestCase):
    # One story, in order: the replicas and reports carry over from step to step.
    def test_reports_follow_the_cluster_and_one_replica_writes(self):
        apply(pytorchjob("torch", good=False))
        apply(gpu_pod("bare-gaps", good=False))
        apply(gpu_pod("other", good=False), GONE_NS)

        # Workloads with gaps appear with fail results, citing the cases.
        got = wait_for("the PyTorchJob's results", lambda: results(NS).get(("PyTorchJob", "torch", "checkpoint-volume")))
        self.assertEqual(got["result"], "fail")
        self.assertEqual(got["source"], "kubegap")
        self.assertIn("(case ", got["message"])
        self.assertIn("bloom-176b-training-2022", got["properties"]["cases"])
        # An audit run can fall between the two applies: the pod's results may come a run later
        # (CI run of fe65905: KeyError here, the one failure of 1054).
        bare = wait_for("the bare pod's results", lambda: results(NS).get(("Pod", "bare-gaps", "zone-spread")))
        self.assertEqual(bare["result"], "fail")
        # The other namespace's pod, too, may be written a run later (CI run of 3ca4778:
        # its report was not listed yet when this namespace's results were).
        wait_for("the other namespace's report",
                 lambda: CP.kubectl("get", "policyreports", "-n", GONE_NS, "-o", "name").stdout.strip() != "")
        listed = CP.kubectl("get", "policyreports", "-A").stdout
        self.assertIn(NS, listed)
        self.assertIn(GONE_NS, listed)

        # Fixing the workload flips its results to pass.
        apply(pytorchjob("torch", good=True))
        wait_for("the fixed PyTorchJob to pass checkpoint-volume",
                 lambda: results(NS).get(("PyTorchJob", "torch", "checkpoint-volume"), {}).get("result") == "pass")

        # Deleting an object removes its results; a namespace with nothing left loses its report.
        CP.kubectl("delete", "pod", "-n", NS, "bare-gaps", "--wait=false")
        wait_for("bare-gaps' results to go", lambda: not any(k[1] == "bare-gaps" for k in results(NS)))
        CP.kubectl("delete", "pod", "-n", GONE_NS, "other", "--wait=false")
        wait_for("the emptied namespace's report to be deleted",
                 lambda: CP.kubectl("get", "policyreports", "-n", GONE_NS, "-o", "name").stdout.strip() == "")

        # The metrics of the leader.
        first = metrics(CP.webhook_health_port)
        self.assertEqual(first["kubegap_audit_leader"], 1)
        self.assertGreaterEqual(first['kubegap_audit_runs_total{result="success"}'], 1)
        self.assertGreater(first["kubegap_audit_objects_scanned"], 0)
        self.assertGreater(first["kubegap_audit_last_run_timestamp_seconds"], 0)

        # Two replicas: one writer. The second stays a follower while the first renews.
        second_port = start_second_replica()
        time.sleep(8)  # more than one renew period and several audit intervals
        self.assertEqual(metrics(second_port)["kubegap_audit_leader"], 0)
        self.assertEqual(metrics(CP.webhook_health_port)["kubegap_audit_leader"], 1)
        second_runs = metrics(second_port)['kubegap_audit_runs_total{result="success"}']
        self.assertEqual(second_runs, 0, "a follower does not scan")
        holder = json.loads(CP.kubectl("get", "lease", "-n", LEASE_NS, "kubegap-webhook-audit", "-o", "json").stdout)
        first_holder = holder["spec"]["holderIdentity"]

        # The first stops (SIGTERM): it releases the Lease, the second takes over and writes.
        self.assertEqual(CP.stop_webhook(), 0)
        wait_for("the second replica to lead", lambda: metrics(second_port)["kubegap_audit_leader"] == 1, 30)
        holder = json.loads(CP.kubectl("get", "lease", "-n", LEASE_NS, "kubegap-webhook-audit", "-o", "json").stdout)
        self.assertNotEqual(holder["spec"]["holderIdentity"], first_holder)
        apply(gpu_pod("after-handover", good=False))
        wait_for("the new leader's report to list a new pod",
                 lambda: results(NS).get(("Pod", "after-handover", "checkpoint-volume")))
        self.assertRegex(CP.process_log("webhook"), re.compile("lease released"))

    def test_z_openreports_flavour(self):
        # The successor API (openreports.io/v1alpha1 Report), by flag, with its upstream CRD.
        base = os.path.join(module_dir(OPENREPORTS), "config", "crd")
        for name in ("reports", "clusterreports"):
            CP.kubectl("apply", "-f", os.path.join(base, f"openreports.io_{name}.yaml"))
            CP.kubectl("wait", "--for=condition=Established", f"crd/{name}.openreports.io", "--timeout=60s")
        apply(gpu_pod("open-gaps", good=False))
        start_second_replica("webhook-open", ("--audit-interval", "2", "--audit-reports", "openreports",
                                              "--audit-lease", f"{LEASE_NS}/kubegap-openreports"))

        def report():
            r = CP.kubectl("get", "reports.openreports.io", "-n", NS, "kubegap", "-o", "json", check=False)
            return json.loads(r.stdout) if r.returncode == 0 else None

        got = wait_for("an openreports.io Report", lambda: (lambda rep: rep if rep and any(
            x["resources"][0]["name"] == "open-gaps" for x in rep["results"]) else None)(report()))
        self.assertEqual(got["kind"], "Report")
        self.assertEqual(got["source"], "kubegap")
        fails = [x for x in got["results"] if x["resources"][0]["name"] == "open-gaps" and x["result"] == "fail"]
        self.assertTrue(fails, got["results"][:3])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
