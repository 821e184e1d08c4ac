"""End to end for Kubeflow Trainer v2 TrainJobs and Katib Experiments (issue 27): `serve`
with the live cluster view (--kubeconfig) on a real kube-apiserver with the upstream CRDs
installed from the Go module proxy (Trainer v2.3.0: TrainJob, TrainingRuntime,
ClusterTrainingRuntime; Katib v0.19.0: Experiment). A TrainJob is judged through the
runtime it names, which the view lists and watches:

  - before the Trainer CRDs exist, the view syncs without them (runtimes "not listed"),
    says so once at info and counts no error;
  - the webhook's ServiceAccount (manifests/base/rbac.yaml) may get/list/watch the runtimes;
  - a TrainJob on a runtime whose node container checkpoints to emptyDir gets a
    checkpoint-volume warning with its fix; the same TrainJob with a PVC patched in
    (runtimePatches, the v2.2+ override field) gets none;
  - a TrainJob applied before its runtime exists is annotated "not evaluated: runtime
    ClusterTrainingRuntime/<name> not found", and warns once the view has the runtime;
  - a Katib Experiment whose trial Job checkpoints to emptyDir gets the warning.

    python3 tests/e2e/test_trainer.py BIN_DIR WEBHOOK_BINARY SOURCE_DIR
"""

import copy
import json
import os
import re
import sys
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controlplane import ControlPlane, WEBHOOK_NAME, log, wait_for  # noqa: E402
from test_audit import module_dir  # noqa: E402

BIN_DIR, WEBHOOK, SOURCE = sys.argv[1:4] if len(sys.argv) >= 4 else (None, None, None)
CP = None
NS = "e2e-trainer"
WARNING = re.compile(r"^Warning: kubegap/([a-z-]+): (.*)$", re.M)
# Served by the Go module proxy; the CRDs are in the modules' manifests.
TRAINER = "github.com/kubeflow/trainer/v2@v2.3.0"
KATIB = "github.com/kubeflow/katib@v0.19.0"
SA_USER = "system:serviceaccount:kubegap-system:kubegap-webhook"
RUNTIME_RESOURCES = ("clustertrainingruntimes", "trainingruntimes")
FIRST_RUN = {}  # the webhook's log and metrics before the CRDs were installed


def trainer_crds():
    base = os.path.join(module_dir(TRAINER), "manifests", "base", "crds")
    return [os.path.join(base, f"trainer.kubeflow.org_{plural}.yaml")
            for plural in ("trainjobs", "trainingruntimes", "clustertrainingruntimes")]


def katib_crd():
    return os.path.join(module_dir(KATIB), "manifests", "v1beta1", "components", "crd", "experiment.yaml")


def webhook_lines(start=0):
    out = []
    for line in CP.process_log("webhook")[start:].splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return out


def metrics():
    with urllib.request.urlopen(f"http://127.0.0.1:{CP.webhook_health_port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return {k: float(v) for k, _, v in (line.rpartition(" ") for line in text.splitlines()
                                        if line and not line.startswith("#"))}


def synced_line(start):
    return next((line for line in webhook_lines(start) if line.get("msg") == "cluster view synced"), None)


def setUpModule():
    global CP
    CP = ControlPlane(BIN_DIR, WEBHOOK, SOURCE)
    CP.webhook_args = lambda: ("--kubeconfig", CP.kubeconfig, "--audit-interval", "0")
    CP.__enter__()
    # The first run: no Trainer CRDs yet.
    wait_for("the view to sync without the Trainer CRDs", lambda: synced_line(0), 60)
    FIRST_RUN["lines"] = webhook_lines()
    FIRST_RUN["metrics"] = metrics()
    crds = trainer_crds() + [katib_crd()]
    for path in crds:
        # Server-side: the runtime CRDs (~900 KB) are too large for the last-applied annotation.
        CP.kubectl("apply", "--server-side", "--force-conflicts", "-f", path, timeout=120)
    established = [f"{p}.trainer.kubeflow.org" for p in ("trainjobs",) + RUNTIME_RESOURCES]
    established.append("experiments.kubeflow.org")
    for name in established:
        CP.kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s")
    log(f"installed the CRDs of {TRAINER} and {KATIB}")
    # The running webhook would see the CRDs at its next recheck (5 minutes): restart it
    # so it lists them now.
    start = len(CP.process_log("webhook"))
    CP.stop_webhook()
    CP.start_webhook()
    FIRST_RUN["restart_offset"] = start
    wait_for("the view to sync with the runtimes", lambda: synced_line(start), 60)
    CP.kubectl("create", "namespace", NS)


def tearDownModule():
    if CP is not None:
        CP.stop()


def apply(obj, *flags):
    """kubectl apply; (result, {check: message} of the kubegap warnings)."""
    namespace = ("-n", NS) if obj["kind"] not in ("ClusterTrainingRuntime",) else ()
    r = CP.kubectl("apply", *namespace, *flags, "-f", "-", input=json.dumps(obj))
    return r, {m.group(1): m.group(2) for m in WARNING.finditer(r.stderr)}


def audit_annotations(resource, name, verb):
    """The kubegap audit annotations of the last ResponseComplete `verb` of `name`."""
    def latest():
        events = [e for e in CP.audit_events()
                  if e.get("stage") == "ResponseComplete" and e.get("verb") == verb
                  and e.get("objectRef", {}).get("resource") == resource
                  and e.get("objectRef", {}).get("name") == name]
        return events[-1] if events else None

    event = wait_for(f"the audit event of {verb} {resource}/{name}", latest, 10)
    prefix = f"{WEBHOOK_NAME}/"
    return {k[len(prefix):]: v for k, v in event.get("annotations", {}).items() if k.startswith(prefix)}


def runtime(name, volume):
    """A ClusterTrainingRuntime shaped like Trainer v2.3's torch-distributed: one
    replicatedJob "node", the trainer step, whose container mounts `volume` (an emptyDir)
    at /checkpoints."""
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
            "metadata": {"name": name, "labels": {"trainer.kubeflow.org/framework": "torch"}},
            "spec": {"mlPolicy": {"numNodes": 1, "torch": {}},
                     "template": {"spec": {"replicatedJobs": [{
                         "name": "node",
                         "template": {
                             "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                             "spec": {"template": {"spec": {
                                 "containers": [{"name": "node",
                                                 "image": "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime",
                                                 "command": ["torchrun", "/workspace/train.py"],
                                                 "volumeMounts": [{"name": volume, "mountPath": "/checkpoints"}]}],
                                 "volumes": [{"name": volume, "emptyDir": {}}]}}}}}]}}}}


def trainjob(name, runtime_name, pvc=None):
    """A TrainJob: torchrun train.py saving to /checkpoints on 2 nodes of 8 GPUs. With
    `pvc`, a runtimePatches entry (v2.2+; `time` is required in v2.3 and set by Trainer's
    own webhook, which does not run here) mounts that claim at /checkpoints instead."""
    obj = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
           "metadata": {"name": name, "labels": {"attempt": "0"}},
           "spec": {"runtimeRef": {"name": runtime_name},
                    "trainer": {"numNodes": 2, "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                                "command": ["torchrun", "train.py", "--save-dir=/checkpoints"],
                                "resourcesPerNode": {"limits": {"nvidia.com/gpu": "8"}}}}}
    if pvc:
        pod = {"volumes": [{"name": "ckpt", "persistentVolumeClaim": {"claimName": pvc}}],
               "containers": [{"name": "node", "volumeMounts": [{"name": "ckpt", "mountPath": "/checkpoints"}]}]}
        obj["spec"]["runtimePatches"] = [{
            "manager": "e2e.kubegap.io/storage", "time": "2026-01-01T00:00:00Z",
            "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{
                "name": "node", "template": {"spec": {"template": {"spec": pod}}}}]}}}}]
    return obj


def experiment(name):
    """A Katib Experiment whose trial is a CPU batch/v1 Job marked as training
    (kubegap.io/training-job) that saves checkpoints to an emptyDir."""
    return {"apiVersion": "kubeflow.org/v1beta1", "kind": "Experiment", "metadata": {"name": name},
            "spec": {"objective": {"type": "minimize", "objectiveMetricName": "loss"},
                     "algorithm": {"algorithmName": "random"}, "parallelTrialCount": 2, "maxTrialCount": 4,
                     "parameters": [{"name": "lr", "parameterType": "double",
                                     "feasibleSpace": {"min": "0.0001", "max": "0.01"}}],
                     "trialTemplate": {
                         "primaryContainerName": "training-container",
                         "trialParameters": [{"name": "learningRate", "reference": "lr"}],
                         "trialSpec": {"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": {
                             "metadata": {"annotations": {"kubegap.io/training-job": "true"}},
                             "spec": {"restartPolicy": "Never",
                                      "containers": [{"name": "training-container",
                                                      "image": "docker.io/kubeflowkatib/pytorch-mnist-cpu:v0.17.0",
                                                      "command": ["python3", "/opt/pytorch-mnist/mnist.py",
                                                                  "--epochs=1",
                                                                  "--lr=${trialParameters.learningRate}",
                                                                  "--checkpoint-dir=/checkpoints"],
                                                      "volumeMounts": [{"name": "ckpt",
                                                                        "mountPath": "/checkpoints"}]}],
                                      "volumes": [{"name": "ckpt", "emptyDir": {}}]}}}}}}}


class Trainer(unittest.TestCase):
    def assert_checkpoint_warning(self, r, warnings):
        self.assertIn("checkpoint-volume", warnings, r.stderr)
        message = warnings["checkpoint-volume"]
        self.assertIn("checkpoint", message)
        self.assertIn("; fix: ", message, "the warning says how to fix it")
        self.assertRegex(message, r"\(case [a-z0-9-]+\)$", f"cut or uncited: {message}")

    def test_1_view_synced_without_the_trainer_crds_and_said_so_once(self):
        lines = FIRST_RUN["lines"]
        for resource in RUNTIME_RESOURCES:
            absent = [l for l in lines if l.get("msg") == "cluster view resource not served"
                      and l.get("resource") == resource]
            self.assertEqual(len(absent), 1, f"{resource}: {absent}")
            self.assertEqual(absent[0].get("level"), "info", absent[0])
            errors = [l for l in lines if l.get("msg") == "cluster view error" and l.get("resource") == resource]
            self.assertEqual(errors, [], f"a missing CRD is not an error: {errors}")
            self.assertEqual(FIRST_RUN["metrics"].get(f'kubegap_cluster_view_errors_total{{resource="{resource}"}}'),
                             0.0)
        synced = next(l for l in lines if l.get("msg") == "cluster view synced")
        self.assertIs(synced.get("trainingruntimes_listed"), False, synced)
        after = synced_line(FIRST_RUN["restart_offset"])
        self.assertIs(after.get("trainingruntimes_listed"), True, after)
        log(f"without the CRDs: synced, runtimes not listed, one info line each; after: {after}")

    def test_2_rbac_lets_the_service_account_watch_the_runtimes(self):
        for path in ("namespace.yaml", "rbac.yaml"):
            CP.kubectl("apply", "-f", os.path.join(SOURCE, "manifests", "base", path))
        allowed = [(verb, f"{resource}.trainer.kubeflow.org") for verb in ("get", "list", "watch")
                   for resource in RUNTIME_RESOURCES]
        allowed += [("list", "trainjobs.trainer.kubeflow.org"), ("watch", "trainjobs.trainer.kubeflow.org"),
                    ("list", "experiments.kubeflow.org")]
        denied = [("create", "clustertrainingruntimes.trainer.kubeflow.org"),
                  ("delete", "trainingruntimes.trainer.kubeflow.org"), ("update", "trainjobs.trainer.kubeflow.org")]
        for verb, resource in allowed + denied:
            r = CP.kubectl("auth", "can-i", verb, resource, "-A", f"--as={SA_USER}", check=False)
            want = "yes" if (verb, resource) in allowed else "no"
            self.assertEqual(r.stdout.strip(), want, f"can-i {verb} {resource}: {r.stdout} {r.stderr}")
        log(f"kubectl auth can-i as {SA_USER}: get/list/watch on the runtimes, no writes")

    def test_3_trainjob_on_an_emptydir_runtime_warns_with_the_fix(self):
        r, warnings = apply(runtime("e2e-torch", "scratch"))
        self.assertIn("created", r.stdout)
        job = trainjob("llm-finetune", "e2e-torch")
        # The view has the runtime a watch event and a publish delay after its creation.
        wait_for("the view to have ClusterTrainingRuntime/e2e-torch",
                 lambda: "checkpoint-volume" in apply(job, "--dry-run=server")[1])
        r, warnings = apply(job)
        self.assertIn("created", r.stdout)
        self.assert_checkpoint_warning(r, warnings)
        self.assertIn("emptyDir", warnings["checkpoint-volume"])
        annotations = audit_annotations("trainjobs", "llm-finetune", "create")
        self.assertIn("acme-llm-pretraining-2023", annotations.get("checkpoint-volume", ""), annotations)

    def test_4_the_same_trainjob_with_a_pvc_patched_in_does_not(self):
        apply(runtime("e2e-torch", "scratch"))
        wait_for("the view to have ClusterTrainingRuntime/e2e-torch",
                 lambda: "checkpoint-volume" in apply(trainjob("probe", "e2e-torch"), "--dry-run=server")[1])
        r, warnings = apply(trainjob("llm-finetune-pvc", "e2e-torch", pvc="llm-checkpoints"))
        self.assertIn("created", r.stdout)
        self.assertNotIn("checkpoint-volume", warnings, r.stderr)
        annotations = audit_annotations("trainjobs", "llm-finetune-pvc", "create")
        self.assertNotIn("not evaluated", annotations.get("checkpoint-volume", ""), annotations)

    def test_5_a_trainjob_before_its_runtime_is_not_evaluated_then_warns(self):
        job = trainjob("early-bird", "e2e-late")
        r, warnings = apply(job)
        self.assertIn("created", r.stdout)
        self.assertNotIn("checkpoint-volume", warnings, r.stderr)
        annotations = audit_annotations("trainjobs", "early-bird", "create")
        self.assertIn("not evaluated: runtime ClusterTrainingRuntime/e2e-late not found",
                      annotations.get("checkpoint-volume", ""), annotations)
        apply(runtime("e2e-late", "scratch"))
        attempt = [0]

        def reapplied_warns():
            attempt[0] += 1
            changed = copy.deepcopy(job)
            changed["metadata"]["labels"]["attempt"] = str(attempt[0])
            r, warnings = apply(changed)
            self.assertIn("configured", r.stdout)
            return (r, warnings) if "checkpoint-volume" in warnings else None

        started = time.monotonic()
        r, warnings = wait_for("a re-apply of the TrainJob to warn once the view has its runtime", reapplied_warns,
                               30, interval=0.3)
        log(f"runtime created -> TrainJob re-apply warns after {time.monotonic() - started:.2f} s "
            f"({attempt[0]} re-applies)")
        self.assert_checkpoint_warning(r, warnings)
        annotations = audit_annotations("trainjobs", "early-bird", "patch")
        self.assertNotIn("not evaluated", annotations.get("checkpoint-volume", ""), annotations)

    def test_6_katib_experiment_with_an_emptydir_trial_warns(self):
        r, warnings = apply(experiment("lr-search"))
        self.assertIn("created", r.stdout)
        self.assert_checkpoint_warning(r, warnings)
        self.assertTrue(warnings["checkpoint-volume"].startswith("trial"), warnings["checkpoint-volume"])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
