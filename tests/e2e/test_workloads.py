"""End to end for workload kinds (issue 4): with minimal CRDs of the training operators
installed, `kubectl apply` of a PyTorchJob, JobSet, RayJob, Volcano Job, MPIJob and a plain
Job with gaps prints the warnings naming the part; well-configured ones print none.

    python3 tests/e2e/test_workloads.py BIN_DIR WEBHOOK_BINARY SOURCE_DIR
"""

import copy
import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controlplane import ControlPlane  # noqa: E402

BIN_DIR, WEBHOOK, SOURCE = sys.argv[1:4] if len(sys.argv) >= 4 else (None, None, None)
CP = None
NS = "e2e-workloads"
WARNING = re.compile(r"^Warning: kubegap/([a-z-]+): (.*)$", re.M)

# (group, versions, kind, plural): minimal CRDs, as the operators would install them.
CRDS = [
    ("kubeflow.org", ["v1"], "PyTorchJob", "pytorchjobs"),
    ("kubeflow.org", ["v2beta1"], "MPIJob", "mpijobs"),
    ("jobset.x-k8s.io", ["v1alpha2"], "JobSet", "jobsets"),
    ("ray.io", ["v1"], "RayJob", "rayjobs"),
    ("batch.volcano.sh", ["v1alpha1"], "Job", "jobs"),
]


def crd(group, versions, kind, plural):
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": kind + "List"},
                 "versions": [{"name": v, "served": True, "storage": i == 0,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                                              "x-kubernetes-preserve-unknown-fields": True}}}
                              for i, v in enumerate(versions)]}}


def template(good, gpus=8, name="trainer"):
    """A pod template: with gaps (emptyDir checkpoints, zone pin, default tolerations) or
    well configured (PVC checkpoints, 60 s health tolerations, no pin)."""
    spec = {
        "restartPolicy": "Never" if good is not None else "Never",
        "containers": [{"name": name, "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                        "command": ["torchrun", "train.py", "--save-dir=/checkpoints"],
                        "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                        "volumeMounts": [{"name": "ckpt", "mountPath": "/checkpoints"}]}],
    }
    if good:
        spec["volumes"] = [{"name": "ckpt", "persistentVolumeClaim": {"claimName": "checkpoints"}}]
        spec["tolerations"] = [{"key": k, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}
                               for k in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")]
    else:
        spec["volumes"] = [{"name": "ckpt", "emptyDir": {}}]
        spec["nodeSelector"] = {"topology.kubernetes.io/zone": "us-central1-a"}
    return {"metadata": {"labels": {"app": "train"}}, "spec": spec}


def pytorchjob(name, good):
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name},
            "spec": {"pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": template(good)},
                "Worker": {"replicas": 3, "restartPolicy": "OnFailure", "template": template(good)}}}}


def mpijob(name, good):
    launcher = template(good, gpus=0, name="launcher")
    launcher["spec"]["containers"][0]["resources"] = {}
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": name},
            "spec": {"slotsPerWorker": 8, "runPolicy": {"cleanPodPolicy": "Running"},
                     "mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": launcher},
                                         "Worker": {"replicas": 2, "template": template(good)}}}}


def jobset(name, good, max_restarts=None):
    obj = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name},
           "spec": {"replicatedJobs": [{"name": "workers", "replicas": 4, "template": {"spec": {
               "parallelism": 2, "completions": 2, "backoffLimit": 0, "template": template(good)}}}]}}
    if max_restarts is None and good:
        max_restarts = 3
    if max_restarts is not None:
        obj["spec"]["failurePolicy"] = {"maxRestarts": max_restarts}
    return obj


def rayjob(name, good):
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name},
            "spec": {"entrypoint": "python /home/ray/train.py", "backoffLimit": 3 if good else 0, "rayClusterSpec": {
                "headGroupSpec": {"rayStartParams": {}, "template": template(good, gpus=0, name="ray-head")},
                "workerGroupSpecs": [{"groupName": "gpu-group", "replicas": 2, "minReplicas": 2, "maxReplicas": 2,
                                      "rayStartParams": {}, "template": template(good, name="ray-worker")}]}}}


def volcano_job(name, good):
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name},
            "spec": {"minAvailable": 2, "schedulerName": "volcano",
                     "policies": [{"event": "PodFailed", "action": "RestartJob"}] if good else [],
                     "tasks": [{"name": "worker", "replicas": 2, "template": template(good)}]}}


IGNORE_DISRUPTIONS = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}


def batch_job(name, good):
    spec = {"backoffLimit": 4, "podFailurePolicy": IGNORE_DISRUPTIONS} if good else {"backoffLimit": 0}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {**spec, "template": template(good)}}


# kind builder, the parts the warnings must name, whether the head carries the zone pin too.
WORKLOADS = {
    "pytorchjob": (pytorchjob, ["replica Master", "replica Worker"]),
    "mpijob": (mpijob, ["replica Worker"]),
    "jobset": (jobset, ["replicatedJob workers"]),
    "rayjob": (rayjob, ["workerGroup gpu-group"]),
    "volcano-job": (volcano_job, ["task worker"]),
    "job": (batch_job, []),
}


def setUpModule():
    global CP
    CP = ControlPlane(BIN_DIR, WEBHOOK, SOURCE).__enter__()
    CP.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                       "items": [crd(*c) for c in CRDS]}))
    for c in CRDS:
        CP.kubectl("wait", "--for=condition=Established", f"crd/{c[3]}.{c[0]}", "--timeout=60s")
    CP.kubectl("create", "namespace", NS)


def tearDownModule():
    if CP is not None:
        CP.stop()


def apply(obj, *flags):
    """kubectl apply: the result, {check: statement}, and [(check, statement)]. A fix that did
    not fit beside its statement comes as the next warning, "kubegap/<check>: fix: ...": the
    statements are returned with it joined on, so each carries its fix (issue 29)."""
    r = CP.kubectl("apply", "-n", NS, *flags, "-f", "-", input=json.dumps(obj))
    statements = []
    for check, message in WARNING.findall(r.stderr):
        if message.startswith("fix: "):
            assert statements and statements[-1][0] == check and "; fix: " not in statements[-1][1], (
                f"a fix warning with no statement before it: {message}\n{r.stderr}")
            statements[-1] = (check, statements[-1][1] + " [" + message + "]")
        else:
            statements.append((check, message))
    for check, message in statements:
        assert "fix: " in message, f"kubectl apply printed a warning without its fix: {check}: {message}\n{r.stderr}"
    return r, dict(statements), statements


class WorkloadKinds(unittest.TestCase):
    def check_gaps(self, key):
        build, parts = WORKLOADS[key]
        r, by_check, all_warnings = apply(build(f"{key}-gaps", good=False))
        self.assertIn("created", r.stdout)
        for check in ("checkpoint-volume", "zone-spread", "gpu-health-tolerations"):
            self.assertIn(check, by_check, r.stderr)
        for check, message in all_warnings:
            self.assertRegex(message, r"\(case [a-z0-9-]+\)( \[fix: .*\])?$", f"cut or uncited: {message}")
        for part in parts:
            self.assertTrue(any(part in m for c, m in all_warnings if c == "gpu-health-tolerations"),
                            f"{key}: no warning names {part!r}:\n{r.stderr}")
        # One warning per distinct gap: the same gap in several parts is listed once.
        self.assertEqual(len([c for c, _ in all_warnings if c == "gpu-health-tolerations"]), 1, r.stderr)

    def check_good(self, key):
        build, _ = WORKLOADS[key]
        r, by_check, _ = apply(build(f"{key}-good", good=True))
        self.assertIn("created", r.stdout)
        self.assertEqual(by_check, {}, r.stderr)

    def test_pytorchjob_gaps(self): self.check_gaps("pytorchjob")
    def test_pytorchjob_good(self): self.check_good("pytorchjob")
    def test_mpijob_gaps(self): self.check_gaps("mpijob")
    def test_mpijob_good(self): self.check_good("mpijob")
    def test_jobset_gaps(self): self.check_gaps("jobset")
    def test_jobset_good(self): self.check_good("jobset")
    def test_rayjob_gaps(self): self.check_gaps("rayjob")
    def test_rayjob_good(self): self.check_good("rayjob")
    def test_volcano_job_gaps(self): self.check_gaps("volcano-job")
    def test_volcano_job_good(self): self.check_good("volcano-job")
    def test_job_gaps(self): self.check_gaps("job")
    def test_job_good(self): self.check_good("job")

    def test_pytorchjob_master_and_worker_listed_in_one_warning(self):
        r, _, all_warnings = apply(pytorchjob("pytorch-listed", good=False))
        zone = [m for c, m in all_warnings if c == "zone-spread"]
        self.assertEqual(len(zone), 1, r.stderr)
        self.assertTrue(zone[0].startswith("replica Master, replica Worker: "), zone[0])

    def test_update_is_evaluated(self):
        obj = pytorchjob("pytorch-update", good=True)
        apply(obj)
        changed = copy.deepcopy(obj)
        changed["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["nodeSelector"] = {
            "topology.kubernetes.io/zone": "us-central1-b"}
        r, by_check, _ = apply(changed)
        self.assertIn("configured", r.stdout)
        self.assertEqual(list(by_check), ["zone-spread"], r.stderr)
        self.assertIn("replica Worker", by_check["zone-spread"])

    def test_audit_annotations_name_the_parts(self):
        apply(rayjob("ray-audit", good=False))
        events = [e for e in CP.audit_events()
                  if e.get("objectRef", {}).get("resource") == "rayjobs" and e.get("verb") == "create"
                  and e.get("objectRef", {}).get("name") == "ray-audit" and e.get("stage") == "ResponseComplete"]
        self.assertTrue(events)
        annotations = events[-1].get("annotations", {})
        self.assertIn("workerGroup gpu-group", annotations.get("kubegap.kubegap.io/gpu-health-tolerations", ""))
        self.assertIn("acme-llm-pretraining-2023", annotations.get("kubegap.kubegap.io/checkpoint-volume", ""))

    # Issue 30: restart-on-failure, on the real API server.
    def test_jobset_without_failure_policy_is_warned_with_the_fix(self):
        obj = jobset("jobset-no-restarts", good=True)
        del obj["spec"]["failurePolicy"]
        r, by_check, _ = apply(obj)
        self.assertEqual(list(by_check), ["restart-on-failure"], r.stderr)
        warning = by_check["restart-on-failure"]
        self.assertIn("replicatedJob workers: spec.failurePolicy.maxRestarts is unset (0 by default)", warning)
        self.assertIn("one failed child Job ends the JobSet", warning)
        self.assertIn("set spec.failurePolicy.maxRestarts to 3 or more", warning)
        self.assertIn("(case opt-175b-logbook-2021)", warning)

    def test_jobset_with_max_restarts_3_gets_no_restart_warning(self):
        r, by_check, _ = apply(jobset("jobset-three-restarts", good=True, max_restarts=3))
        self.assertIn("created", r.stdout)
        self.assertNotIn("restart-on-failure", by_check, r.stderr)
        self.assertEqual(by_check, {}, r.stderr)

    def test_job_with_backoff_limit_0_is_warned_and_audited_with_cases(self):
        obj = batch_job("job-no-restarts", good=True)
        obj["spec"] = {"backoffLimit": 0, "template": obj["spec"]["template"]}
        r, by_check, _ = apply(obj)
        self.assertEqual(list(by_check), ["restart-on-failure"], r.stderr)
        self.assertIn("spec.backoffLimit is 0: one failed pod or lost node ends the run", by_check["restart-on-failure"])
        # The printed fix is cut to one line; the audit annotation below carries it whole.
        self.assertIn("[fix: set spec.backoffLimit to 3 or more", by_check["restart-on-failure"])
        events = [e for e in CP.audit_events()
                  if e.get("objectRef", {}).get("resource") == "jobs" and e.get("verb") == "create"
                  and e.get("objectRef", {}).get("name") == "job-no-restarts" and e.get("stage") == "ResponseComplete"]
        self.assertTrue(events)
        annotation = events[-1].get("annotations", {}).get("kubegap.kubegap.io/restart-on-failure", "")
        self.assertIn("spec.backoffLimit is 0: no restart", annotation)
        self.assertIn("{action: Ignore, onPodConditions: [{type: DisruptionTarget}]}", annotation)
        self.assertIn("resumes only from a durable checkpoint", annotation)
        self.assertIn("cases: opt-175b-logbook-2021, bloom-176b-training-2022, llama3-pretraining-2024, "
                      "acme-llm-pretraining-2023", annotation)

    # Issues 10 and 19: warnings only where training happens.
    def test_gpu_inference_deployment_gets_no_warning(self):
        tpl = template(good=False, gpus=1, name="vllm")
        c = tpl["spec"]["containers"][0]
        c["command"] = ["python3", "-m", "vllm.entrypoints.openai.api_server"]
        c["volumeMounts"] = [{"name": "ckpt", "mountPath": "/root/.cache/huggingface"}]
        tpl["metadata"]["labels"] = {"app": "vllm"}
        tpl["spec"]["restartPolicy"] = "Always"
        deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "vllm"},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "vllm"}}, "template": tpl}}
        r, by_check, _ = apply(deploy)
        self.assertIn("created", r.stdout)
        self.assertEqual(by_check, {}, r.stderr)

    def test_nccl_tests_mpijob_is_diagnostic(self):
        obj = mpijob("nccl-tests", good=False)
        specs = obj["spec"]["mpiReplicaSpecs"]
        specs["Launcher"]["template"]["spec"]["containers"][0]["command"] = [
            "mpirun", "-np", "16", "/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "8G"]
        specs["Worker"]["template"]["spec"]["containers"][0]["command"] = ["/usr/sbin/sshd", "-De"]
        r, by_check, _ = apply(obj)
        self.assertIn("created", r.stdout)
        self.assertEqual(by_check, {}, r.stderr)

    def test_gpu_download_job_gets_no_checkpoint_warning(self):
        obj = batch_job("download", good=False)
        obj["spec"]["template"]["spec"]["containers"][0]["command"] = [
            "huggingface-cli", "download", "meta-llama/Llama-3.1-8B", "--local-dir", "/models"]
        obj["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [{"name": "ckpt", "mountPath": "/models"}]
        r, by_check, _ = apply(obj)
        self.assertIn("created", r.stdout)
        self.assertNotIn("checkpoint-volume", by_check, r.stderr)
        self.assertIn("gpu-health-tolerations", by_check, "its accelerator checks still run")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
