"""End to end against a real kube-apiserver: `kubectl apply` prints the webhook's
warnings and the audit log holds its annotations (issue 3).

    python3 tests/e2e/test_pods.py BIN_DIR WEBHOOK_BINARY SOURCE_DIR
"""

import json
import os
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controlplane import ControlPlane, WEBHOOK_NAME, log  # noqa: E402

BIN_DIR, WEBHOOK, SOURCE = sys.argv[1:4] if len(sys.argv) >= 4 else (None, None, None)
EXAMPLES = os.path.join(SOURCE or ".", "manifests", "examples")
CP = None

WARNING = re.compile(r"^Warning: (kubegap/[a-z-]+): (.*)$", re.M)


def setUpModule():
    global CP
    CP = ControlPlane(BIN_DIR, WEBHOOK, SOURCE).__enter__()


def tearDownModule():
    if CP is not None:
        CP.stop()


def read_example(name, **changes):
    with open(os.path.join(EXAMPLES, name)) as f:
        text = f.read()
    for old, new in changes.items():
        text = text.replace(old, new)
    return text


def warnings_of(stderr):
    """{check: message} for every kubegap warning kubectl printed."""
    return {m.group(1)[len("kubegap/"):]: m.group(2) for m in WARNING.finditer(stderr)}


def namespace(name):
    CP.kubectl("create", "namespace", name, check=False)
    return name


def annotations_of(event):
    prefix = WEBHOOK_NAME + "/"
    return {k[len(prefix):]: v for k, v in event.get("annotations", {}).items() if k.startswith(prefix)}


def wait_for_audit(ns, name, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events = CP.pod_create_events(ns, name)
        if events:
            return events
        time.sleep(0.2)
    return []


CASE_ID = re.compile(r"\(case [a-z0-9-]+\)$")
EXPECTED_GAPS = ("checkpoint-volume", "zone-spread", "gpu-health-tolerations")


def offline_findings(example):
    """{check: finding} from `kubegap-webhook check --output json` on an example: the
    webhook's own words for the object, to compare with what kubectl prints."""
    r = subprocess.run([WEBHOOK, "check", "--output", "json", os.path.join(EXAMPLES, example)],
                       capture_output=True, text=True, check=True)
    [obj] = json.loads(r.stdout)["objects"]
    return {f["check"]: f for f in obj["findings"] if f["outcome"] == "finding"}


def first_cases():
    """{check: the case its warnings print} from `kubegap-webhook cases`."""
    r = subprocess.run([WEBHOOK, "cases", "--output", "json"], capture_output=True, text=True, check=True)
    return {c["id"]: c["cases"][0]["id"] for c in json.loads(r.stdout)["checks"]}


class KubectlApply(unittest.TestCase):
    def test_1_gaps_print_whole_warnings_naming_cases(self):
        ns = namespace("e2e-gaps")
        r = CP.kubectl("apply", "-n", ns, "-f", "-", input=read_example("training-pod-gaps.yaml"))
        self.assertIn("pod/llm-pretrain-gaps created", r.stdout)
        found = warnings_of(r.stderr)
        for check in EXPECTED_GAPS:
            self.assertIn(check, found, r.stderr)
            # Whole, not cut: the case citation at the end survived.
            self.assertRegex(found[check], CASE_ID, f"{check} warning cut or without a case: {found[check]}")
        self.assertNotIn("disruption-budget", found, "no cluster view: never a false warning")
        # Exactly the webhook's words (as `check` and the golden files have them), each
        # with its fix and the strongest case for its check.
        offline = offline_findings("training-pod-gaps.yaml")
        cases = first_cases()
        for check in EXPECTED_GAPS:
            self.assertEqual("kubegap/" + check + ": " + found[check], offline[check]["message"])
            self.assertIn("; fix: " + offline[check]["remedy"] + " (case " + cases[check] + ")", found[check])
        CP.kubectl("get", "pod", "-n", ns, "llm-pretrain-gaps")

    def test_2_server_dry_run_prints_the_same_and_creates_nothing(self):
        ns = namespace("e2e-dry-run")
        r = CP.kubectl("apply", "--dry-run=server", "-n", ns, "-f", "-", input=read_example("training-pod-gaps.yaml"))
        self.assertIn("(server dry run)", r.stdout)
        self.assertEqual(sorted(warnings_of(r.stderr)), sorted(EXPECTED_GAPS), r.stderr)
        got = CP.kubectl("get", "pod", "-n", ns, "llm-pretrain-gaps", check=False)
        self.assertNotEqual(got.returncode, 0)
        self.assertIn("NotFound", got.stderr)

    def test_3_well_configured_pod_has_no_warnings(self):
        ns = namespace("e2e-good")
        r = CP.kubectl("apply", "-n", ns, "-f", "-", input=read_example("training-pod-good.yaml"))
        self.assertIn("pod/llm-pretrain-good created", r.stdout)
        self.assertNotIn("kubegap/", r.stderr)
        annotations = annotations_of(wait_for_audit(ns, "llm-pretrain-good")[-1])
        # The class annotation says why it was judged as training.
        self.assertEqual(set(annotations), {"disruption-budget", "class"}, annotations)
        self.assertEqual(annotations["class"], "training (launcher torchrun)")
        self.assertTrue(annotations["disruption-budget"].startswith("not evaluated"))

    def test_4_audit_log_holds_annotations_with_cases(self):
        ns = "e2e-gaps"
        events = wait_for_audit(ns, "llm-pretrain-gaps")
        self.assertTrue(events, "no audit event for the pod of test 1")
        annotations = annotations_of(events[-1])
        offline = offline_findings("training-pod-gaps.yaml")
        for check in EXPECTED_GAPS:
            self.assertIn(check, annotations, events[-1].get("annotations"))
            # Reason, fix and every case id: the annotation `check` reports.
            self.assertEqual(annotations[check], offline[check]["reason"])
            self.assertIn("; fix: " + offline[check]["remedy"] + "; cases: " + first_cases()[check], annotations[check])
        self.assertTrue(annotations["disruption-budget"].startswith("not evaluated"))

    def test_5_api_server_defaults_of_300_s_are_reported(self):
        ns = namespace("e2e-defaults")
        manifest = read_example("training-pod-good.yaml", **{"name: llm-pretrain-good": "name: no-own-tolerations"})
        # Drop the pod's own tolerations: the API server adds not-ready/unreachable for 300 s.
        manifest = manifest.split("  tolerations:")[0]
        r = CP.kubectl("apply", "-n", ns, "-f", "-", input=manifest)
        found = warnings_of(r.stderr)
        self.assertEqual(sorted(found), ["gpu-health-tolerations"], r.stderr)
        # What the API server's default means, exactly, and how to shorten it.
        self.assertIn("stays on an unresponsive node 300 s before eviction (default not-ready/unreachable tolerations)",
                      found["gpu-health-tolerations"])
        self.assertIn("fix: add them as NoExecute tolerations with tolerationSeconds < 300",
                      found["gpu-health-tolerations"])
        pod = json.loads(CP.kubectl("get", "pod", "-n", ns, "no-own-tolerations", "-o", "json").stdout)
        seconds = {t["key"]: t.get("tolerationSeconds") for t in pod["spec"]["tolerations"]}
        self.assertEqual(seconds.get("node.kubernetes.io/not-ready"), 300, "the API server added the default")

    def test_5_an_empty_key_toleration_with_an_effect_tolerates_only_that_effect(self):
        # Issue 29: {operator: Exists, effect: X} with no key tolerates every taint of effect X
        # and no other (ToleratesTaint); the warning says which, and what follows from it.
        ns = namespace("e2e-every-key")
        cases = {
            # First among the pod's tolerations, it decides not-ready and unreachable too.
            "NoExecute": "tolerates every NoExecute taint (empty key, operator Exists), no time limit: never "
                         "evicted from an unresponsive or GPU-failed node",
            "NoSchedule": "tolerates every NoSchedule taint (empty key, operator Exists): can be scheduled onto a "
                          "node quarantined for a GPU fault",
        }
        for effect, words in cases.items():
            name = f"every-{effect.lower()}"
            manifest = read_example("training-pod-good.yaml", **{"name: llm-pretrain-good": f"name: {name}"})
            manifest = manifest.replace("  tolerations:\n", f"  tolerations:\n    - operator: Exists\n      effect: {effect}\n", 1)
            r = CP.kubectl("apply", "-n", ns, "-f", "-", input=manifest)
            found = warnings_of(r.stderr)
            self.assertEqual(sorted(found), ["gpu-health-tolerations"], r.stderr)
            self.assertIn(words, found["gpu-health-tolerations"])
            self.assertNotIn("tolerates every taint", found["gpu-health-tolerations"])
            self.assertIn("; fix: name the taints it tolerates instead of the empty key", found["gpu-health-tolerations"])

    def test_6_fails_open_when_the_webhook_is_down(self):
        ns = namespace("e2e-fail-open")
        self.assertEqual(CP.stop_webhook(), 0, "the webhook exits 0 on SIGTERM")
        try:
            r = CP.kubectl("apply", "-n", ns, "-f", "-",
                           input=read_example("training-pod-gaps.yaml", **{"llm-pretrain-gaps": "while-down"}))
            self.assertIn("pod/while-down created", r.stdout)
            self.assertNotIn("kubegap/", r.stderr)
            events = wait_for_audit(ns, "while-down")
            self.assertTrue(events)
            failed_open = {k: v for k, v in events[-1].get("annotations", {}).items()
                           if k.startswith("failed-open.validating.webhook.admission.k8s.io/")}
            self.assertIn(WEBHOOK_NAME, failed_open.values(), events[-1].get("annotations"))
        finally:
            CP.start_webhook()
        r = CP.kubectl("apply", "-n", ns, "-f", "-",
                       input=read_example("training-pod-gaps.yaml", **{"llm-pretrain-gaps": "after-restart"}))
        self.assertEqual(sorted(warnings_of(r.stderr)), sorted(EXPECTED_GAPS), r.stderr)

    def test_7_two_hundred_pods_no_review_lost(self):
        ns = namespace("e2e-load")
        before = reviews_200(CP.webhook_metrics())
        count = 200
        manifest = read_example("training-pod-gaps.yaml")
        started = time.monotonic()
        for i in range(count):
            r = CP.kubectl("apply", "-n", ns, "-f", "-", input=manifest.replace("llm-pretrain-gaps", f"load-{i:03d}"))
            self.assertIn(f"pod/load-{i:03d} created", r.stdout)
            self.assertEqual(sorted(warnings_of(r.stderr)), sorted(EXPECTED_GAPS), f"pod {i}: {r.stderr}")
        log(f"applied {count} pods in {time.monotonic() - started:.1f} s")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(CP.pod_create_events(ns)) < count:
            time.sleep(0.2)
        events = CP.pod_create_events(ns)
        self.assertEqual(len(events), count)
        for e in events:
            annotations = annotations_of(e)
            self.assertTrue(set(EXPECTED_GAPS) <= set(annotations), (e["objectRef"]["name"], annotations))
        self.assertEqual(reviews_200(CP.webhook_metrics()) - before, count)

    def test_8_only_the_api_server_with_its_client_certificate_is_served(self):
        """The webhook runs with --client-ca; the API server presents client.crt through
        its AdmissionConfiguration (controlplane.py): its reviews are answered (test 1 and
        this one), a client without that certificate is turned away."""
        import ssl
        import socket
        ns = namespace("e2e-client-ca")
        failures_before = handshake_failures(CP.webhook_metrics())
        r = CP.kubectl("apply", "-n", ns, "-f", "-",
                       input=read_example("training-pod-gaps.yaml", **{"llm-pretrain-gaps": "with-client-cert"}))
        self.assertEqual(sorted(warnings_of(r.stderr)), sorted(EXPECTED_GAPS), r.stderr)
        self.assertEqual(handshake_failures(CP.webhook_metrics()), failures_before,
                         "the API server's handshakes all succeeded")

        certs = CP.webhook_certs
        with open(os.path.join(SOURCE, "tests", "fixtures", "reviews", "gpu-pod-gaps.json"), "rb") as f:
            body = f.read()
        request = (b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)) + body

        def post(with_certificate):
            context = (CP.webhook_client_context() if with_certificate
                       else ssl.create_default_context(cafile=os.path.join(certs, "ca.crt")))
            try:
                with socket.create_connection(("127.0.0.1", CP.webhook_port), timeout=10) as raw:
                    with context.wrap_socket(raw, server_hostname="localhost") as tls:
                        tls.sendall(request)
                        answer = b""
                        while chunk := tls.recv(65536):
                            answer += chunk
                        return answer.split(b"\r\n", 1)[0].decode()
            except (ssl.SSLError, ConnectionError) as e:
                return f"refused: {e}"

        self.assertEqual(post(with_certificate=True), "HTTP/1.1 200 OK")
        anonymous = post(with_certificate=False)
        self.assertTrue(anonymous.startswith("refused"), anonymous)
        # The server counts the failure just after sending its alert: poll briefly.
        deadline = time.monotonic() + 5
        while handshake_failures(CP.webhook_metrics()) < failures_before + 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(handshake_failures(CP.webhook_metrics()), failures_before + 1)


def handshake_failures(metrics):
    return int(re.search(r"^kubegap_tls_handshake_failures_total (\d+)$", metrics, re.M).group(1))


def reviews_200(metrics):
    match = re.search(r'^kubegap_reviews_total\{code="200"\} (\d+)$', metrics, re.M)
    return int(match.group(1))


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
