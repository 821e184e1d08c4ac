"""End to end for `kubegap-webhook scan` (issue 15): workloads and pods that already run on a
real kube-apiserver are listed page by page and evaluated with the live PDBs and Nodes;
the findings equal `check`'s on the same objects (exported with kubectl); a workload's
pods are reported under it once; a training-operator CRD that is not installed is
skipped without an error.

    python3 tests/e2e/test_scan.py BIN_DIR WEBHOOK_BINARY SOURCE_DIR
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controlplane import ControlPlane  # noqa: E402
from test_workloads import CRDS, batch_job, crd, jobset, pytorchjob, template  # noqa: E402

BIN_DIR, WEBHOOK, SOURCE = sys.argv[1:4] if len(sys.argv) >= 4 else (None, None, None)
CP = None
NS, OTHER_NS = "e2e-scan", "e2e-scan-other"
# CRDs installed here: not Volcano's nor Ray's, so their kinds are in the table but not
# served, which the scan must skip quietly.
INSTALLED = [c for c in CRDS if c[2] in ("PyTorchJob", "JobSet")]
KINDS = "pods,jobs.batch,pytorchjobs.kubeflow.org,jobsets.jobset.x-k8s.io"


def owned_pod(name, owner, good):
    spec = template(good)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": spec["metadata"]["labels"],
                         "ownerReferences": [{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                                              "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                                              "controller": True}]},
            "spec": spec["spec"]}


def bare_pod(name, good):
    spec = template(good)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}},
            "spec": spec["spec"]}


def apply(obj, namespace=NS):
    """kubectl apply; the object as the API server stored it (its uid)."""
    return json.loads(CP.kubectl("apply", "-n", namespace, "-o", "json", "-f", "-", input=json.dumps(obj)).stdout)


def run(*args, check_rc=True):
    r = subprocess.run([WEBHOOK, *args], capture_output=True, text=True, timeout=120)
    if check_rc and r.returncode not in (0, 1):
        raise AssertionError(f"{' '.join(args)}: exit {r.returncode}\n{r.stderr}")
    return r


def scan_json(*flags):
    r = run("scan", "--kubeconfig", CP.kubeconfig, "-o", "json", *flags)
    return r, json.loads(r.stdout)


def by_object(report):
    """{(kind, namespace, name): [(check, outcome, message)]} of a json report."""
    out = {}
    for o in report["objects"]:
        out[(o["kind"], o["namespace"], o["name"])] = sorted(
            (f["check"], f["outcome"], f["message"]) for f in o["findings"])
    return out


def apply_scan_objects(apply_one, other_ns):
    """What runs in the scanned cluster (also test_mcp's): a PyTorchJob with gaps and two pods
    it owns, a good JobSet, a Job, bare pods with and without gaps, one object in `other_ns`."""
    job = apply_one(pytorchjob("torch-gaps", good=False))
    for i in range(2):
        apply_one(owned_pod(f"torch-gaps-worker-{i}", job, good=False))
    apply_one(jobset("jobset-good", good=True))
    apply_one(batch_job("batch-gaps", good=False))
    apply_one(bare_pod("bare-gaps", good=False))
    apply_one(bare_pod("good-pod", good=True))
    apply_one(bare_pod("elsewhere", good=False), other_ns)


def setUpModule():
    global CP
    CP = ControlPlane(BIN_DIR, WEBHOOK, SOURCE).__enter__()
    CP.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                       "items": [crd(*c) for c in INSTALLED]}))
    for c in INSTALLED:
        CP.kubectl("wait", "--for=condition=Established", f"crd/{c[3]}.{c[0]}", "--timeout=60s")
    for ns in (NS, OTHER_NS):
        CP.kubectl("create", "namespace", ns)
    # The cluster view: two Nodes in two zones, a PDB for the "good" pods only.
    CP.add_zone_nodes(("zone-a", "zone-b"))
    CP.kubectl("apply", "-n", NS, "-f", "-", input=json.dumps({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "good"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "good-pod"}}}}))
    # What runs: a PyTorchJob with gaps and two pods it owns, a good JobSet, a Job, bare
    # pods with and without gaps, and one object in the other namespace.
    apply_scan_objects(apply, OTHER_NS)


def tearDownModule():
    if CP is not None:
        CP.stop()


class Scan(unittest.TestCase):
    def test_scan_matches_check_on_the_same_objects(self):
        r, scanned = scan_json("-n", NS)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(scanned["errors"], [], r.stderr)
        # `check` on the same objects, exported with kubectl, with the same PDBs and Nodes.
        exported = CP.kubectl("get", "-n", NS, KINDS + ",pdb", "-o", "json").stdout
        nodes = CP.kubectl("get", "nodes", "-o", "json").stdout
        with tempfile.TemporaryDirectory() as tmp:
            for name, text in (("objects.json", exported), ("nodes.json", nodes)):
                with open(os.path.join(tmp, name), "w") as f:
                    f.write(text)
            checked = json.loads(run("check", "-o", "json", tmp).stdout)
        got, want = by_object(scanned), by_object(checked)
        self.assertTrue(got, "scan found no objects")
        for key, findings in got.items():
            self.assertIn(key, want, f"{key} scanned but not checked")
            self.assertEqual(findings, want[key], f"{key}: scan and check disagree")
        # Every object check saw is in the scan, except the pods a scanned object owns.
        self.assertEqual(set(want) - set(got), {("Pod", NS, "torch-gaps-worker-0"), ("Pod", NS, "torch-gaps-worker-1")})

    def test_findings_use_the_live_cluster_view(self):
        _, scanned = scan_json("-n", NS)
        objects = by_object(scanned)
        budget = {k: [f for f in v if f[0] == "disruption-budget"] for k, v in objects.items()}
        self.assertEqual([o for o in budget[("Pod", NS, "good-pod")] if o[1] == "finding"], [],
                         "the PDB selecting good-pod is seen")
        self.assertTrue(any(o[1] == "finding" for o in budget[("Pod", NS, "bare-gaps")]),
                        "a pod no PDB selects gets a disruption-budget finding, not 'not evaluated'")
        self.assertEqual(scanned["summary"]["podDisruptionBudgets"], 1)
        self.assertEqual(scanned["summary"]["nodes"], 2)

    def test_a_workloads_pods_are_reported_under_it_once(self):
        _, scanned = scan_json("-n", NS)
        names = [(o["kind"], o["name"]) for o in scanned["objects"]]
        self.assertIn(("PyTorchJob", "torch-gaps"), names)
        self.assertNotIn(("Pod", "torch-gaps-worker-0"), names)
        self.assertEqual(len(names), len(set(names)), names)

    def test_every_namespace_by_default_and_one_with_namespace(self):
        _, every = scan_json()
        self.assertIn(("Pod", OTHER_NS, "elsewhere"), by_object(every))
        _, one = scan_json("-n", OTHER_NS)
        self.assertEqual(list(by_object(one)), [("Pod", OTHER_NS, "elsewhere")])

    def test_kinds_whose_crd_is_not_installed_are_skipped_without_error(self):
        r, scanned = scan_json()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(scanned["errors"], [])
        self.assertFalse(any(o["kind"] in ("RayJob", "LeaderWorkerSet") for o in scanned["objects"]))

    def test_pages_follow_continue(self):
        _, whole = scan_json("-n", NS)
        _, paged = scan_json("-n", NS, "--page-size", "1")
        self.assertEqual(by_object(paged), by_object(whole))
        pages = [e for e in CP.audit_events()
                 if e.get("stage") == "ResponseComplete" and e.get("verb") == "list"
                 and "limit=1&continue=" in e.get("requestURI", "") and "/pods" in e["requestURI"]]
        self.assertGreaterEqual(len(pages), 2, "pods were listed one page at a time")

    def test_text_output_and_fail_on_findings(self):
        r = run("scan", "--kubeconfig", CP.kubeconfig, "-n", NS, "--fail-on-findings")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("PyTorchJob e2e-scan/torch-gaps (/apis/kubeflow.org/v1/namespaces/e2e-scan/pytorchjobs/torch-gaps)",
                      r.stdout)
        self.assertIn("reported under their owner", r.stdout)

    def test_kubectl_runs_it_as_a_plugin(self):
        # kubectl finds kubectl-kubegap on PATH: `kubectl kubegap scan` and `... check`.
        with tempfile.TemporaryDirectory() as tmp:
            os.symlink(os.path.abspath(WEBHOOK), os.path.join(tmp, "kubectl-kubegap"))
            env = {**os.environ, "PATH": tmp + os.pathsep + os.environ.get("PATH", "")}
            kubectl = os.path.join(BIN_DIR, "kubectl")
            listed = subprocess.run([kubectl, "plugin", "list"], capture_output=True, text=True, env=env)
            self.assertIn("kubectl-kubegap", listed.stdout + listed.stderr)
            r = subprocess.run([kubectl, "kubegap", "scan", "--kubeconfig", CP.kubeconfig, "-n", NS, "-o", "json"],
                               capture_output=True, text=True, env=env, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(by_object(json.loads(r.stdout)), by_object(scan_json("-n", NS)[1]))
            fixture = os.path.join(SOURCE, "tests", "fixtures", "workloads")
            r = subprocess.run([kubectl, "kubegap", "check", fixture], capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("PyTorchJob ml-research/pytorch-simple", r.stdout)
            r = subprocess.run([kubectl, "kubegap", "--help"], capture_output=True, text=True, env=env)
            self.assertIn("kubectl kubegap check [flags] PATH", r.stdout)

    def test_a_forbidden_scan_says_so_and_exits_2(self):
        # A kubeconfig whose token the API server does not know: every request is 401.
        with open(CP.kubeconfig) as f:
            config = json.load(f)
        config["users"][0]["user"]["token"] = "not-a-valid-token"
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(config, f)
        try:
            r = run("scan", "--kubeconfig", f.name, check_rc=False)
        finally:
            os.unlink(f.name)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("HTTP 401", r.stderr)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
