"""End to end for `export vap` (issue 16): the exported ValidatingAdmissionPolicies on a real
kube-apiserver say what the webhook says. Every workload and review fixture is applied with
--dry-run=server twice: first with the webhook registered (no VAP), then with the VAPs
applied and the webhook unregistered. For each exported check the warnings must be equal
(the VAP's carry the API server's "Validation failed for ValidatingAdmissionPolicy ..."
prefix, which is taken off), except for the differences docs/vap.md lists under "Webhook or
ValidatingAdmissionPolicy?", which are asserted here to be exactly those. The audit
annotations are compared the same way, on every fixture's objects created for real and
on the review fixtures' pods. The policies pass the API server's CEL type checking and
cost estimation (applying them succeeds without a warning). The generated CEL is thus
evaluated by the real API server: on its own, it warns on the gappy GPU pod for every
exported check and says nothing about the clean fixtures. (The unit tests of the export,
tests/webhook/report/vap_export_test.cpp, only read the generated text; this is where it
runs. Without Go on PATH this test is skipped, saying so, as every e2e test.)

    python3 tests/e2e/test_vap.py BIN_DIR WEBHOOK_BINARY SOURCE_DIR
"""

import json
import os
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controlplane import ControlPlane, WEBHOOK_NAME  # noqa: E402

BIN_DIR, WEBHOOK, SOURCE = sys.argv[1:4] if len(sys.argv) >= 4 else (None, None, None)
CP = None
NS = "e2e-vap"
CHECKS = ("checkpoint-volume", "zone-spread", "gpu-health-tolerations", "restart-on-failure")
# A bare Pod has no restart budget (nobody restarts it): every other exported check.
POD_CHECKS = tuple(c for c in CHECKS if c != "restart-on-failure")
WARNING = re.compile(r"^Warning: (?:Validation failed for ValidatingAdmissionPolicy '[^']+' with binding '[^']+': )?"
                     r"kubegap/([a-z-]+): (.*)$", re.M)
# What the VAP says differently, by fixture, and why (docs/vap.md: "Webhook or
# ValidatingAdmissionPolicy?"). Anything else that differs fails the test.
KNOWN = {
    # The webhook judges a DaemonSet-owned pod as its DaemonSet (ownerReferences):
    # the controller adds the untimed tolerations, not the user. The VAP has no
    # owner-aware rows.
    "daemonset-pod.yaml": "owner-aware classes",
    "replicaset-pod.yaml": "owner-aware classes",
    # DRA claims make a pod an accelerator pod for the webhook (it resolves their device
    # classes); the VAP sees only extended resources.
    "dra-pod.yaml": "DRA claims",
    # Wrapped objects (Katib trials, AppWrapper components, KubeDL Cron workloads) are
    # judged by their own kind's row in the webhook; the VAP has no wrapper rows.
    "appwrapper.yaml": "wrapped objects",
    "katib-experiment.yaml": "wrapped objects",
    "kubedl-cron.yaml": "wrapped objects",
    # A StatefulSet that runs torchrun is training for the webhook (evidencePromotes); the
    # VAP has no command evidence and judges it as serving.
    "statefulset.yaml": "training evidence in a serving kind",
    # A TrainJob is judged through its runtime, another object, which CEL cannot read.
    "trainjob.yaml": "TrainJob runtimes",
    # The webhook reads the commands: the Master names where it saves (--model_path), the
    # Workers name nothing and are no writers; the VAP judges every part by its mounts.
    "xgboostjob.yaml": "save paths and writers read from the command",
    # A TFJob's Chief writes the checkpoints (role: writer): the webhook judges the Workers
    # that name no save path and mount nothing with it; the VAP judges every part alone.
    "tfjob-chief-writes.yaml": "the Chief writes the checkpoints",
    "appwrapper-writer-scope.yaml": "wrapped objects",
}
# Where only the audit annotations differ (the warnings are the same).
KNOWN_ANNOTATIONS = {
    # A RayCluster runs no workload of its own: the webhook needs evidence (auto class) and
    # annotates "not evaluated" without it; the VAP writes no such annotation.
    "raycluster.yaml": "auto class notes",
}


# The labelled restart-on-failure set (tests/fixtures/realistic-restart): its restart
# warnings are compared too, file by file. These differ, each for a reason docs/vap.md lists.
KNOWN_RESTART = {
    # Placeholders and diagnostics are read from the command by the webhook and not
    # warned; the VAP does not read commands and judges them as the kind's class.
    "jobset/capacity-hold-sleep.yaml": "placeholder (sleep infinity)",
    "kubeflow/paddlejob-run-check.yaml": "diagnostic (paddle run_check)",
    "kubeflow/pytorchjob-allreduce-bandwidth.yaml": "diagnostic (all-reduce benchmark)",
    "mpi/nccl-allreduce-perf.yaml": "diagnostic (nccl-tests)",
}


def restart_files():
    base = os.path.join(SOURCE, "tests", "fixtures", "realistic-restart")
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(base) for f in fs if f.endswith(".yaml"))


def fixture_files():
    base = os.path.join(SOURCE, "tests", "fixtures", "workloads")
    return sorted(os.path.join(base, f) for f in os.listdir(base) if f.endswith(".yaml"))


def crds_for(files):
    """Minimal CRDs (preserve-unknown-fields) for every non-built-in kind in the fixtures."""
    builtin = {"", "v1", "apps", "batch", "policy"}
    seen = {}
    for path in files:
        # Top-level apiVersion and kind of each document (no YAML library here).
        with open(path) as f:
            text = f.read()
        for doc in re.split(r"^---.*$", text, flags=re.M):
            api = re.search(r"^apiVersion:\s*(\S+)", doc, re.M)
            kind = re.search(r"^kind:\s*(\S+)", doc, re.M)
            if not api or not kind:
                continue
            group, _, version = api.group(1).rpartition("/")
            if group in builtin or not group:
                continue
            seen.setdefault((group, kind.group(1)), set()).add(version)
    out = []
    for (group, kind), versions in sorted(seen.items()):
        plural = kind.lower() + "s"
        scope = "Cluster" if kind.startswith("Cluster") else "Namespaced"
        out.append({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                    "metadata": {"name": f"{plural}.{group}"},
                    "spec": {"group": group, "scope": scope,
                             "names": {"kind": kind, "plural": plural, "singular": kind.lower(),
                                       "listKind": kind + "List"},
                             "versions": [{"name": v, "served": True, "storage": i == 0,
                                           "schema": {"openAPIV3Schema": {"type": "object",
                                                                          "x-kubernetes-preserve-unknown-fields": True}}}
                                          for i, v in enumerate(sorted(versions))]}})
    return out


def warnings(path):
    """{check: sorted messages} of the exported checks, from a server dry run of `path`."""
    # create, not apply: a fixture with generateName cannot be applied.
    r = CP.kubectl("create", "--dry-run=server", "-f", path, check=False)
    if r.returncode != 0:
        raise AssertionError(f"{os.path.basename(path)}: kubectl create: {r.stderr.strip()[-500:]}")
    got = {}
    for check, message in WARNING.findall(r.stderr):
        if check in CHECKS:
            got.setdefault(check, []).append(message)
    return {k: sorted(v) for k, v in got.items()}, r


def setUpModule():
    global CP
    CP = ControlPlane(BIN_DIR, WEBHOOK, SOURCE).__enter__()
    files = fixture_files() + restart_files()
    CP.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": crds_for(files)}))
    CP.wait_crds_established()
    # The fixtures name their namespaces (ml-research, ...): create them all.
    namespaces = {NS}
    for path in files:
        with open(path) as f:
            namespaces |= set(re.findall(r"^  namespace:\s*(\S+)", f.read(), re.M))
    for ns in sorted(namespaces - {"kube-system", "default"}):
        CP.kubectl("create", "namespace", ns)


def tearDownModule():
    if CP is not None:
        CP.stop()


class VapMatchesTheWebhook(unittest.TestCase):
    def test_warnings_and_annotations_match_except_the_documented_differences(self):
        files = fixture_files()
        by_webhook = {os.path.basename(f): warnings(f)[0] for f in files}
        restart_by_webhook = self.restart_warnings()
        self.assertTrue(any(by_webhook.values()), "the webhook warned about some fixture")
        webhook_pods, webhook_pod_warnings = self.create_pods("w")
        webhook_objects = self.created_annotations(files)

        # Now the VAPs, and no webhook.
        CP.kubectl("delete", "validatingwebhookconfiguration", "kubegap-webhook")
        exported = subprocess.run([WEBHOOK, "export", "vap"], capture_output=True, text=True, check=True).stdout
        applied = CP.kubectl("apply", "-f", "-", input=exported)
        self.assertNotIn("Warning", applied.stderr, "no cost or type warning on apply")
        self.assertNotIn("exceed", applied.stderr)
        probe = os.path.join(SOURCE, "tests", "fixtures", "workloads", "job.yaml")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not warnings(probe)[0]:
            time.sleep(0.5)  # the API server picks the policies up through an informer
        by_vap = {os.path.basename(f): warnings(f)[0] for f in files}
        # The API server loads each policy through an informer, one at a time: on a busy
        # machine the last ones may not be in force yet when the first ones are. A
        # fixture the webhook warned about and no VAP did is asked again for a while
        # (a policy not loaded yet only ever shows as no warning).
        deadline = time.monotonic() + 30
        for f in files:
            name = os.path.basename(f)
            while by_webhook[name] and not by_vap[name] and name not in KNOWN and time.monotonic() < deadline:
                time.sleep(1)
                by_vap[name] = warnings(f)[0]
        restart_by_vap = self.restart_warnings()
        vap_pods, vap_pod_warnings = self.create_pods("v")
        vap_objects = self.created_annotations(files)

        # The exported CEL, evaluated by the API server, on its own terms: the gappy GPU pod
        # gets a warning from the VAP of every exported check, and the fixtures the webhook
        # finds nothing in (clean objects) get none from any VAP.
        self.assertEqual(sorted({c for c, _ in vap_pod_warnings["gpu-pod-gaps.json"]}), sorted(POD_CHECKS),
                         f"the VAPs on the gappy pod: {vap_pod_warnings['gpu-pod-gaps.json']}")
        clean = sorted(n for n in by_webhook if not by_webhook[n] and n not in KNOWN)
        self.assertTrue(clean, "some workload fixture is clean")
        self.assertEqual({n: by_vap[n] for n in clean if by_vap[n]}, {}, "the VAPs warned about a clean object")
        clean_pods = sorted(n for n, said in webhook_pod_warnings.items() if not said)
        self.assertTrue(clean_pods, "some review fixture's pod is clean")
        self.assertEqual({n: vap_pod_warnings[n] for n in clean_pods if vap_pod_warnings[n]}, {},
                         "the VAPs warned about a clean pod")

        differ = {}
        for name in sorted(by_webhook):
            if by_webhook[name] != by_vap[name]:
                differ[name] = (by_webhook[name], by_vap[name])
                print(f"DIFF {name}:\n  webhook: {by_webhook[name]}\n  vap:     {by_vap[name]}", flush=True)
        same = [n for n in by_webhook if n not in differ and by_webhook[n]]
        print(f"{len(same)} fixtures with warnings say the same; {len(differ)} differ: {sorted(differ)}", flush=True)
        self.assertEqual(sorted(differ), sorted(k for k in KNOWN if k in by_webhook),
                         "only the documented differences")

        # restart-on-failure on the labelled restart set: the same warnings, file by file,
        # but where the webhook reads the command (diagnostics, placeholders) or a runtime.
        self.assertTrue(any(restart_by_webhook.values()), "the webhook warned about some restart fixture")
        restart_differ = sorted(n for n in restart_by_webhook if restart_by_webhook[n] != restart_by_vap[n])
        for name in restart_differ:
            print(f"RESTART DIFF {name}:\n  webhook: {restart_by_webhook[name]}\n  vap:     {restart_by_vap[name]}",
                  flush=True)
        restart_same = [n for n in restart_by_webhook if n not in restart_differ and restart_by_webhook[n]]
        print(f"restart set: {len(restart_same)} files with warnings say the same; {len(restart_differ)} differ",
              flush=True)
        self.assertEqual(restart_differ, sorted(KNOWN_RESTART), "restart set: only the documented differences")

        # Audit annotations of the same pods: <webhook-name>/<check> and <policy>/<check>.
        for pods in (webhook_pods, vap_pods):
            self.assertEqual(set(pods["gpu-pod-gaps.json"]), set(POD_CHECKS), pods["gpu-pod-gaps.json"])
        for name, webhook_annotations in webhook_pods.items():
            vap_annotations = vap_pods[name]
            self.assertEqual(vap_annotations, webhook_annotations, f"{name}: audit annotations")
            self.assertEqual(vap_pod_warnings[name], webhook_pod_warnings[name], f"{name}: warnings")
        # And of every workload fixture's objects, created for real.
        self.assertTrue(any(webhook_objects.values()), "the webhook annotated some workload")
        annotation_differ = sorted({key[0] for key in webhook_objects
                                    if webhook_objects[key] != vap_objects.get(key)})
        for key in sorted(webhook_objects):
            if webhook_objects[key] != vap_objects.get(key):
                print(f"ANNOTATIONS DIFF {key}:\n  webhook: {webhook_objects[key]}\n  vap:     {vap_objects.get(key)}",
                      flush=True)
        self.assertEqual(annotation_differ, sorted(k for k in {**KNOWN, **KNOWN_ANNOTATIONS} if k in by_webhook),
                         "audit annotations: only the documented differences")

    def restart_warnings(self):
        """{dir/file: sorted restart-on-failure warnings} of the labelled restart set."""
        base = os.path.join(SOURCE, "tests", "fixtures", "realistic-restart")
        return {os.path.relpath(f, base): warnings(f)[0].get("restart-on-failure", []) for f in restart_files()}

    def created_annotations(self, files):
        """Creates each workload fixture for real, reads the audit annotations of the exported
        checks from its create events, and deletes it: {(file, kind, namespace, name): {check: value}}."""
        created = []
        for path in files:
            r = CP.kubectl("create", "-f", path, "-o", "json", check=False)
            if r.returncode != 0:
                raise AssertionError(f"{os.path.basename(path)}: kubectl create: {r.stderr.strip()[-500:]}")
            text = r.stdout.strip()
            docs = json.loads("[" + re.sub(r"}\s*{", "},{", text) + "]") if text else []
            for d in docs:
                for o in d.get("items", [d]):
                    created.append((os.path.basename(path), o["kind"], o["metadata"].get("namespace", ""),
                                    o["metadata"]["name"], o["metadata"]["uid"]))
            # Gone before the next file: fixtures share names (no controller runs here, so
            # nothing holds them back).
            CP.kubectl("delete", "-f", path, "--wait=true", "--timeout=30s", check=False)
        time.sleep(1)
        # The audit log (level Metadata) has no uid: the events of a name, in order; this
        # phase's creations are the last ones of each name.
        events = {}
        for e in CP.audit_events():
            ref = e.get("objectRef", {})
            if e.get("stage") != "ResponseComplete" or e.get("verb") != "create" or "dryRun" in e.get("requestURI", ""):
                continue
            got = {}
            for k, v in e.get("annotations", {}).items():
                prefix, _, key = k.partition("/")
                if key in CHECKS and (prefix == WEBHOOK_NAME or prefix.startswith("kubegap-")):
                    got[key] = v
            events.setdefault((ref.get("namespace", ""), ref.get("name")), []).append(got)
        mine = {}
        for f, kind, ns, name, _ in created:
            mine.setdefault((ns, name), []).append((f, kind))
        out = {}
        for (ns, name), owners in mine.items():
            theirs = events.get((ns, name), [])[-len(owners):]
            for (f, kind), got in zip(owners, theirs):
                out[(f, kind, ns, name)] = got
        return out

    def create_pods(self, suffix):
        """Creates each review fixture's Pod (valid ones) as <name>-<suffix>: ({fixture: {check: annotation}},
        {fixture: [(check, warning)]})."""
        base = os.path.join(SOURCE, "tests", "fixtures", "reviews")
        out, said = {}, {}
        for f in sorted(os.listdir(base)):
            with open(os.path.join(base, f)) as text:
                review = json.load(text)
            obj = (review.get("request") or {}).get("object")
            if not isinstance(obj, dict) or obj.get("kind") != "Pod" or review["request"].get("operation") != "CREATE":
                continue
            if review["request"].get("namespace") == "kube-system":
                continue
            meta = obj.setdefault("metadata", {})
            meta.pop("namespace", None)
            meta.pop("generateName", None)
            meta["name"] = f[:-5][:50] + "-" + suffix
            r = CP.kubectl("create", "-n", NS, "-f", "-", input=json.dumps(obj), check=False)
            if r.returncode != 0:
                continue  # the malformed fixtures: the API server refuses them
            out[f] = meta["name"]
            said[f] = sorted((c, m) for c, m in WARNING.findall(r.stderr) if c in CHECKS)
        time.sleep(1)
        annotations = {}
        for f, name in out.items():
            events = CP.pod_create_events(NS, name)
            got = {}
            for e in events:
                for k, v in e.get("annotations", {}).items():
                    prefix, _, key = k.partition("/")
                    if key in CHECKS and (prefix == WEBHOOK_NAME or prefix.startswith("kubegap-")):
                        got[key] = v
            annotations[f] = got
        return annotations, said


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
