"""Scale of `scan` and the background audit (issue 15): 10,000 Pods and 2,000 workloads on
the e2e control plane (1,000 PyTorchJobs with 8 pods each, 1,000 Jobs, 2,000 bare pods).
Prints the time, peak RSS and API requests of `scan` (twice: page sizes 250 and 500) and
of one background audit run; asserts only that the results are whole and right (every
object reported once, owned pods under their PyTorchJob), never a time.

    python3 tests/e2e/test_scan_scale.py BIN_DIR WEBHOOK_BINARY SOURCE_DIR
"""

import concurrent.futures
import http.client
import json
import os
import re
import subprocess
import sys
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controlplane import ADMIN_TOKEN, ControlPlane  # noqa: E402
from test_workloads import CRDS, batch_job, crd, pytorchjob, template  # noqa: E402

BIN_DIR, WEBHOOK, SOURCE = sys.argv[1:4] if len(sys.argv) >= 4 else (None, None, None)
# Figures of a sanitizer build say nothing: the release build when there is one
# (./dev test builds it), else the binary given.
if SOURCE and os.access(os.path.join(SOURCE, "build", "release", "kubegap-webhook"), os.X_OK):
    WEBHOOK = os.path.join(SOURCE, "build", "release", "kubegap-webhook")
    print(f"measuring {WEBHOOK} (the release build)", flush=True)
elif WEBHOOK:
    # Said, not silent: without build/release the figures are the given (sanitizer) build's.
    print(f"build/release is not built: measuring {WEBHOOK}, whose figures include its sanitizers", flush=True)
CP = None
NS, LEASE_NS = "e2e-scale", "kubegap-system"
JOBS, PODS_PER_JOB, BATCH_JOBS, BARE_PODS = 1000, 8, 1000, 2000


def post_all(path_and_bodies, threads=8):
    """POSTs each (path, object) to the API server over kept-alive connections."""
    ctx = CP.apiserver_ssl_context()

    def worker(chunk):
        conn = http.client.HTTPSConnection("127.0.0.1", CP.apiserver_port, context=ctx, timeout=60)
        out = []
        for path, obj in chunk:
            conn.request("POST", path, json.dumps(obj), {"Authorization": f"Bearer {ADMIN_TOKEN}",
                                                         "Content-Type": "application/json"})
            r = conn.getresponse()
            body = r.read()
            if r.status != 201:
                raise RuntimeError(f"POST {path}: {r.status} {body[:300]!r}")
            out.append(json.loads(body))
        conn.close()
        return out

    chunks = [path_and_bodies[i::threads] for i in range(threads)]
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        return [o for part in pool.map(worker, chunks) for o in part]


def pod(name, good, owner=None):
    meta = {"name": name, "labels": {"app": name}}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                                    "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                                    "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template(good)["spec"]}


def setUpModule():
    global CP
    print(f"measuring {WEBHOOK}", flush=True)
    CP = ControlPlane(BIN_DIR, WEBHOOK, SOURCE)
    CP.__enter__()
    CP.kubectl("apply", "-f", "-", input=json.dumps(crd(*[c for c in CRDS if c[2] == "PyTorchJob"][0])))
    CP.kubectl("wait", "--for=condition=Established", "crd/pytorchjobs.kubeflow.org", "--timeout=60s")
    for ns in (NS, LEASE_NS):
        CP.kubectl("create", "namespace", ns)
    started = time.monotonic()
    jobs = post_all([(f"/apis/kubeflow.org/v1/namespaces/{NS}/pytorchjobs", pytorchjob(f"job-{i}", good=i % 2 == 0))
                     for i in range(JOBS)])
    post_all([(f"/apis/batch/v1/namespaces/{NS}/jobs", batch_job(f"batch-{i}", good=i % 2 == 0))
              for i in range(BATCH_JOBS)])
    pods = [(f"/api/v1/namespaces/{NS}/pods", pod(f"{j['metadata']['name']}-worker-{k}", False, j))
            for j in jobs for k in range(PODS_PER_JOB)]
    pods += [(f"/api/v1/namespaces/{NS}/pods", pod(f"bare-{i}", i % 2 == 0)) for i in range(BARE_PODS)]
    post_all(pods)
    print(f"created {JOBS + BATCH_JOBS} workloads and {len(pods)} pods in {time.monotonic() - started:.0f} s",
          flush=True)


def tearDownModule():
    if CP is not None:
        CP.stop()


def timed_scan(page_size):
    """`scan -o json` under /usr/bin/time (its own fork, so the figure is the scan's alone,
    not this Python process's pages the child shared before exec): (report, s, peak MiB)."""
    stats = os.path.join(CP.dir, "scan.time")
    started = time.monotonic()
    r = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", stats, WEBHOOK, "scan", "--kubeconfig", CP.kubeconfig,
                        "-o", "json", "--page-size", str(page_size)], capture_output=True, text=True, timeout=600)
    seconds = time.monotonic() - started
    if r.returncode != 0:
        raise AssertionError(f"scan exit {r.returncode}: {r.stderr[-2000:]}")
    with open(stats) as f:
        peak_kib = int(f.read().split()[-1])
    return json.loads(r.stdout), seconds, peak_kib / 1024


class Scale(unittest.TestCase):
    def test_1_scan(self):
        for page_size in (250, 500):
            report, seconds, rss = timed_scan(page_size)
            kinds = {}
            for o in report["objects"]:
                kinds[o["kind"]] = kinds.get(o["kind"], 0) + 1
            # Every workload once; pods only when no evaluated object owns them.
            self.assertEqual(kinds.get("PyTorchJob"), JOBS)
            self.assertEqual(kinds.get("Job"), BATCH_JOBS)
            self.assertEqual(kinds.get("Pod"), BARE_PODS)
            self.assertEqual(report["errors"], [])
            listed = [n for n in report["notes"] if n.startswith("listed ")]
            print(f"scan, page size {page_size}: {len(report['objects'])} objects reported, "
                  f"{report['summary']['findings']} findings, {seconds:.1f} s, peak RSS {rss:.0f} MiB; "
                  f"{listed[0] if listed else ''}", flush=True)

    def test_2_background_audit(self):
        CP.stop_webhook()
        CP.start_webhook(("--kubeconfig", CP.kubeconfig, "--audit-interval", "3600",
                          "--audit-lease", f"{LEASE_NS}/kubegap-webhook-audit", "--audit-reports", "none"))
        pid = CP.processes["webhook"].pid

        def metrics():
            with urllib.request.urlopen(f"http://127.0.0.1:{CP.webhook_health_port}/metrics", timeout=5) as r:
                return {k: float(v) for k, _, v in (line.rpartition(" ") for line in r.read().decode().splitlines()
                                                    if line and not line.startswith("#"))}

        deadline = time.monotonic() + 600
        m = metrics()
        while time.monotonic() < deadline and m.get('kubegap_audit_runs_total{result="success"}', 0) < 1:
            time.sleep(1)
            m = metrics()
        self.assertEqual(m['kubegap_audit_runs_total{result="success"}'], 1, m)
        self.assertEqual(m["kubegap_audit_objects_scanned"], JOBS + BATCH_JOBS + BARE_PODS)
        with open(f"/proc/{pid}/status") as f:
            hwm = int(re.search(r"^VmHWM:\s+(\d+)", f.read(), re.M).group(1)) / 1024
        findings = sum(v for k, v in m.items() if k.startswith("kubegap_audit_findings{"))
        print(f"background audit: {m['kubegap_audit_objects_scanned']:.0f} objects, {findings:.0f} findings, "
              f"{m['kubegap_audit_duration_seconds']:.1f} s, {m['kubegap_audit_api_requests']:.0f} API requests; "
              f"serve's peak RSS {hwm:.0f} MiB", flush=True)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
