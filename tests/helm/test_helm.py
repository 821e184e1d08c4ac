"""The Helm chart (manifests/helm/kubegap-webhook), with Helm built from the Go module proxy
and a real kube-apiserver: `helm lint` and `helm template` for the default and a full set
of values; values.schema.json refuses a typo and a wrong type; the rendered objects are
accepted by `kubectl apply --dry-run=server`; the chart renders the kustomize base's
objects with the same specs (names and labels aside); `helm install` then `helm upgrade`
keep the self-signed serving pair and its caBundle.

    python3 tests/helm/test_helm.py BIN_DIR WEBHOOK_BINARY SOURCE_DIR
"""

import base64
import calendar
import contextlib
import copy
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from controlplane import ControlPlane  # noqa: E402

BIN_DIR, WEBHOOK, SOURCE = sys.argv[1:4] if len(sys.argv) >= 4 else (None, None, None)
CP = None
HELM = None
CHART = None
NS = "kubegap-system"


def helm(*args, check=True):
    r = subprocess.run([HELM, *args, "--kubeconfig", CP.kubeconfig] if args[0] in ("install", "upgrade", "template",
                                                                                   "uninstall", "get")
                       else [HELM, *args], capture_output=True, text=True, timeout=300)
    if check and r.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


def objects(yaml_text):
    """The objects as the API server reads them (server dry run, JSON), by (kind, name)."""
    r = CP.kubectl("apply", "--dry-run=server", "-o", "json", "-f", "-", input=yaml_text)
    doc = json.loads(r.stdout)
    return {(o["kind"], o["metadata"]["name"]): o for o in doc.get("items", [doc])}


def comparable(o):
    """An object without what may differ between the chart and kustomize: names, labels,
    annotations, server-set metadata, the generated TLS material."""
    o = copy.deepcopy(o)
    meta = o.pop("metadata")
    o["namespace"] = meta.get("namespace")
    if o["kind"] == "Deployment":
        tpl = o["spec"]["template"]["metadata"]
        tpl.pop("labels", None)
        tpl.pop("annotations", None)
    if o["kind"] == "ConfigMap":
        # The policy file: the base's has comments and another layout. Its meaningful
        # lines (comments and blanks out, list markers and indentation off), sorted.
        o["data"] = {k: sorted(line.strip().lstrip("- ").strip() for line in v.splitlines()
                               if line.strip() and not line.strip().startswith("#"))
                     for k, v in o.get("data", {}).items()}
    if o["kind"] == "ValidatingWebhookConfiguration":
        for w in o["webhooks"]:
            w["clientConfig"].pop("caBundle", None)
    return o


def setUpModule():
    global CP, HELM, CHART
    HELM = subprocess.run([os.path.join(SOURCE, "tests", "e2e", "go-tool.sh"), "helm"], capture_output=True,
                          text=True, check=True).stdout.strip().splitlines()[-1]
    CHART = os.path.join(SOURCE, "manifests", "helm", "kubegap-webhook")
    CP = ControlPlane(BIN_DIR, WEBHOOK, SOURCE).__enter__()
    # The test control plane registers its own "kubegap-webhook" configuration: the
    # chart's takes that name.
    CP.kubectl("delete", "validatingwebhookconfiguration", "kubegap-webhook")
    CP.kubectl("create", "namespace", NS)
    # What the full values need besides the built-in kinds: minimal CRDs.
    crds = []
    for group, kind, plural in (("cert-manager.io", "Issuer", "issuers"), ("cert-manager.io", "Certificate", "certificates"),
                                ("monitoring.coreos.com", "ServiceMonitor", "servicemonitors"),
                                ("monitoring.coreos.com", "PrometheusRule", "prometheusrules")):
        crds.append({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                     "metadata": {"name": f"{plural}.{group}"},
                     "spec": {"group": group, "scope": "Namespaced",
                              "names": {"kind": kind, "plural": plural, "singular": kind.lower(),
                                        "listKind": kind + "List"},
                              "versions": [{"name": "v1", "served": True, "storage": True,
                                            "schema": {"openAPIV3Schema": {"type": "object",
                                                                           "x-kubernetes-preserve-unknown-fields": True}}}]}})
    CP.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": crds}))
    CP.wait_crds_established()


def tearDownModule():
    if CP is not None:
        CP.stop()


@contextlib.contextmanager
def loopback_webhook(tmp, certs, *args):
    """The built webhook serving TLS on 127.0.0.1, port 0 (the bound port read back from
    its "serving" log line); yields the port and stops it (SIGTERM) afterwards."""
    log_path = os.path.join(tmp, "webhook.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen([WEBHOOK, "serve", "--tls-cert", os.path.join(certs, "tls.crt"),
                                 "--tls-key", os.path.join(certs, "tls.key"), "--listen", "127.0.0.1:0",
                                 "--health-listen", "127.0.0.1:0", "--log-format", "json", *args],
                                stdout=log, stderr=subprocess.STDOUT)
    try:
        port = None
        deadline = time.monotonic() + 30
        while port is None:
            with open(log_path) as log:
                for line in log:
                    entry = json.loads(line)
                    if entry.get("msg") == "serving":
                        port = int(entry["listen"].rsplit(":", 1)[1])
            if port is None:
                if proc.poll() is not None or time.monotonic() > deadline:
                    with open(log_path) as log:
                        raise AssertionError(f"the webhook did not serve (exit {proc.poll()}):\n{log.read()}")
                time.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        proc.wait(20)


def run_hook(shell, script, tmp, port):
    """Runs the hook's script as its pod does (`sh -c SCRIPT`), with a curl that connects
    the Service's name and port to 127.0.0.1:PORT."""
    bin_dir = os.path.join(tmp, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    wrapper = os.path.join(bin_dir, "curl")
    with open(wrapper, "w") as f:
        f.write(f"#!/bin/sh\nexec {shutil.which('curl')} --connect-to "
                f"kubegap-webhook.{NS}.svc:443:127.0.0.1:{port} \"$@\"\n")
    os.chmod(wrapper, 0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    return subprocess.run([*shell, script], capture_output=True, text=True, env=env, timeout=60)


class Chart(unittest.TestCase):
    full = None

    @classmethod
    def setUpClass(cls):
        cls.full = os.path.join(SOURCE, "tests", "helm", "full-values.yaml")

    def test_lint_default_and_full_values(self):
        for extra in ((), ("-f", self.full)):
            r = helm("lint", CHART, "--strict", *extra)
            self.assertIn("0 chart(s) failed", r.stdout)

    def test_schema_refuses_a_typo_and_a_wrong_type(self):
        for flag, says in (("--set=serve.thread=2", "thread"), ("--set=serve.threads=many", "threads"),
                           ("--set=networkPolicy.webhookSources={10.0.0.1}", "webhookSources"),
                           ("--set=networkPolicy.webhookPeers[0].ipBlock.cidr=10.0.0.0/8", "webhookPeers"),
                           ("--set=certificates.mode=vault", "mode"),
                           # The helm test image by digest only: a tag can be moved under it.
                           ("--set=helmTest.image=curlimages/curl:8.11.1", "helmTest"),
                           ("--set=helmTest.image=curlimages/curl@sha256:c1fe", "helmTest")):
            r = helm("template", "kg", CHART, "-n", NS, flag, check=False)
            self.assertNotEqual(r.returncode, 0, flag)
            self.assertIn(says, r.stderr, r.stderr)

    def test_rendered_objects_are_accepted_by_the_api_server(self):
        for extra in ((), ("-f", self.full)):
            rendered = helm("template", "kg", CHART, "-n", NS, *extra).stdout
            got = objects(rendered)
            self.assertIn(("ValidatingWebhookConfiguration", "kubegap-webhook" if not extra else "kubegap"), got)
        full = objects(helm("template", "kg", CHART, "-n", NS, "-f", self.full).stdout)
        args = full[("Deployment", "kubegap")]["spec"]["template"]["spec"]["containers"][0]["args"]
        for flag, value in (("--threads", "4"), ("--audit-reports", "openreports"), ("--memory-budget", "268435456"),
                            ("--client-ca", "/tls/client-ca.crt"), ("--log-level", "warn"),
                            ("--client-names", "kube-apiserver,kube-apiserver-webhook-client"),
                            ("--audit-lease", "kubegap-system/kubegap-audit")):
            self.assertEqual(args[args.index(flag) + 1], value, args)
        # networkPolicy.webhookSources: /validate only from the API server's addresses;
        # by default from every source.
        ingress = full[("NetworkPolicy", "kubegap")]["spec"]["ingress"]
        webhook_port = [r for r in ingress if r["ports"][0]["port"] == "https"][0]
        self.assertEqual([f["ipBlock"]["cidr"] for f in webhook_port["from"] if "ipBlock" in f],
                         ["10.0.0.10/32", "fd00::10/128"])
        # networkPolicy.webhookPeers: the Konnectivity agents the API server's calls come
        # through (AKS's label), beside the addresses.
        self.assertEqual([f for f in webhook_port["from"] if "ipBlock" not in f],
                         [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                           "podSelector": {"matchLabels": {"app": "konnectivity-agent"}}}])
        plain = objects(helm("template", "kg", CHART, "-n", NS).stdout)
        plain_port = [r for r in plain[("NetworkPolicy", "kubegap-webhook")]["spec"]["ingress"]
                      if r["ports"][0]["port"] == "https"][0]
        self.assertNotIn("from", plain_port)
        self.assertIn(("Certificate", "kubegap-tls"), full)
        self.assertIn(("ServiceMonitor", "kubegap"), full)
        alerts = [r["alert"] for g in full[("PrometheusRule", "kubegap")]["spec"]["groups"] for r in g["rules"]]
        self.assertEqual(len(alerts), 6, alerts)
        # Each alert links its runbook page under prometheusRule.runbookBaseUrl (full values:
        # a trailing slash, which the chart drops); by default, the project's docs/runbooks.
        for g in full[("PrometheusRule", "kubegap")]["spec"]["groups"]:
            for rule in g["rules"]:
                self.assertEqual(rule["annotations"]["runbook_url"],
                                 f"https://wiki.example/kubegap/runbooks/{rule['alert'].lower()}.md")
        default = objects(helm("template", "kg", CHART, "-n", NS, "--set", "prometheusRule.enabled=true").stdout)
        for g in default[("PrometheusRule", "kubegap-webhook")]["spec"]["groups"]:
            for rule in g["rules"]:
                url = rule["annotations"]["runbook_url"]
                self.assertEqual(url, "https://github.com/kubegap/kubegap-webhook/blob/main/docs/runbooks/"
                                      f"{rule['alert'].lower()}.md")
                page = os.path.join(SOURCE, "docs", "runbooks", rule["alert"].lower() + ".md")
                self.assertTrue(os.path.isfile(page), page)
        dashboard = json.loads(full[("ConfigMap", "kubegap-dashboard")]["data"]["kubegap-webhook.json"])
        self.assertEqual(dashboard["uid"], "kubegap-webhook")
        self.assertNotIn(("Secret", "kubegap-tls"), full, "cert-manager makes the Secret")
        vwc = full[("ValidatingWebhookConfiguration", "kubegap")]
        self.assertEqual(vwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"], f"{NS}/kubegap-tls")

    def test_helm_test_hook_posts_a_review_through_the_service(self):
        rendered = helm("template", "kg", CHART, "-n", NS, "--show-only", "templates/tests/test-review.yaml").stdout
        pod = objects(rendered)[("Pod", "kubegap-webhook-test-review")]
        self.assertRegex(pod["spec"]["containers"][0]["image"], r"^curlimages/curl:[\w.-]+@sha256:[0-9a-f]{64}$")
        self.assertEqual(pod["metadata"]["annotations"]["helm.sh/hook"], "test")
        sources = {src["secret"]["name"]: src["secret"]["items"]
                   for src in pod["spec"]["volumes"][0]["projected"]["sources"]}
        self.assertEqual(sources, {"kubegap-webhook-tls": [{"key": "ca.crt", "path": "ca.crt"}],
                                   "kubegap-webhook-apiserver-client": [{"key": "tls.crt", "path": "client.crt"},
                                                                        {"key": "tls.key", "path": "client.key"}]})
        command = pod["spec"]["containers"][0]["command"]
        # The hook's script, run as the pod runs it (sh -c) against the built webhook serving
        # on loopback: curl reaches the Service name, kubegap-webhook.kubegap-system.svc:443,
        # at 127.0.0.1 (--connect-to keeps the name for TLS verification) and the Secret's
        # ca.crt is where the pod mounts it.
        with tempfile.TemporaryDirectory(prefix="kubegap-helm-hook-") as tmp:
            certs = os.path.join(tmp, "certs")
            subprocess.run([os.path.join(SOURCE, "certs", "gen-certs.sh"), "--out", certs], check=True,
                           capture_output=True)
            script = command[-1]
            for mounted in ("ca.crt", "client.crt", "client.key"):
                script = script.replace(f"/tls/{mounted}", os.path.join(certs, mounted))
            self.assertNotIn("/tls/", script, "the hook reads only what its pod mounts")
            # The chart's default (--client-ca, --client-names kube-apiserver) and the
            # default policy: the hook presents the API server's certificate, passes and
            # prints the warning.
            client = ("--client-ca", os.path.join(certs, "ca.crt"), "--client-names", "kube-apiserver")
            with loopback_webhook(tmp, certs, *client) as port:
                run = run_hook(command[:-1], script, tmp, port)
            self.assertEqual(run.returncode, 0, f"the hook failed against a live webhook:\n{run.stdout}\n{run.stderr}")
            self.assertIn("kubegap/zone-spread", run.stdout)
            self.assertIn('"allowed":true', run.stdout)
            # Without the client certificate the same webhook refuses the hook.
            bare = script.replace(f" --cert {os.path.join(certs, 'client.crt')} --key {os.path.join(certs, 'client.key')}", "")
            self.assertNotEqual(bare, script)
            with loopback_webhook(tmp, certs, *client) as port:
                run = run_hook(command[:-1], bare, tmp, port)
            self.assertNotEqual(run.returncode, 0, f"a client without a certificate was served:\n{run.stdout}")
            # With every check off the answer carries no warning: the hook must fail, or
            # it would pass whatever the webhook said.
            policy = os.path.join(tmp, "no-checks.yaml")
            with open(policy, "w") as f:
                f.write("enabledChecks: []\n")
            with loopback_webhook(tmp, certs, "--policy", policy) as port:
                run = run_hook(command[:-1], script, tmp, port)
            self.assertNotEqual(run.returncode, 0, f"the hook passed on an answer without warnings:\n{run.stdout}")
            # Nothing listening (a port held bound, never listened on): the hook fails too.
            with socket.socket() as held:
                held.bind(("127.0.0.1", 0))
                run = run_hook(command[:-1], script, tmp, held.getsockname()[1])
            self.assertNotEqual(run.returncode, 0, "the hook passed with no webhook listening")
        off = helm("template", "kg", CHART, "-n", NS, "--set", "helmTest.enabled=false").stdout
        self.assertNotIn("helm.sh/hook: test", off)
        # With client certificates off, the pod neither mounts nor presents one.
        anyone = helm("template", "kg", CHART, "-n", NS, "--set", "serve.clientCAKey=", "--set",
                      "networkPolicy.allowAnyCaller=true", "--show-only", "templates/tests/test-review.yaml").stdout
        self.assertNotIn("name: kubegap-webhook-apiserver-client", anyone)
        self.assertNotIn("--cert", anyone)

    def test_only_the_api_server_may_call_by_default(self):
        """Issue 31: the default install takes reviews only from a client certificate the
        chart issues for the API server; turning that off needs another limit, or saying so."""
        rendered = objects(helm("template", "kg", CHART, "-n", NS).stdout)
        args = rendered[("Deployment", "kubegap-webhook")]["spec"]["template"]["spec"]["containers"][0]["args"]
        self.assertEqual(args[args.index("--client-ca") + 1], "/tls/ca.crt")
        self.assertEqual(args[args.index("--client-names") + 1], "kube-apiserver")
        client = rendered[("Secret", "kubegap-webhook-apiserver-client")]
        self.assertEqual(client["type"], "kubernetes.io/tls")
        tls = rendered[("Secret", "kubegap-webhook-tls")]
        with tempfile.TemporaryDirectory() as tmp:
            paths = {}
            for name, b64 in (("ca.crt", tls["data"]["ca.crt"]), ("client.crt", client["data"]["tls.crt"])):
                paths[name] = os.path.join(tmp, name)
                with open(paths[name], "wb") as f:
                    f.write(base64.b64decode(b64))
            verify = subprocess.run(["openssl", "verify", "-purpose", "sslclient", "-CAfile", paths["ca.crt"],
                                     paths["client.crt"]], capture_output=True, text=True)
            self.assertEqual(verify.returncode, 0, verify.stdout + verify.stderr)
            subject = subprocess.run(["openssl", "x509", "-noout", "-subject", "-in", paths["client.crt"]],
                                     capture_output=True, text=True, check=True).stdout
            self.assertRegex(subject, r"CN\s*=\s*kube-apiserver\s*$")
        # Off, with nothing else limiting port 8443: refused, naming the ways out.
        r = helm("template", "kg", CHART, "-n", NS, "--set", "serve.clientCAKey=", check=False)
        self.assertNotEqual(r.returncode, 0)
        for says in ("serve.clientCAKey", "webhookSources", "allowAnyCaller"):
            self.assertIn(says, r.stderr)
        # A NetworkPolicy that is off limits nothing: still refused.
        r = helm("template", "kg", CHART, "-n", NS, "--set", "serve.clientCAKey=", "--set",
                 "networkPolicy.webhookSources={10.0.0.1/32}", "--set", "networkPolicy.enabled=false", check=False)
        self.assertNotEqual(r.returncode, 0)
        for ok in (("--set", "networkPolicy.webhookSources={10.0.0.1/32}"), ("--set", "networkPolicy.allowAnyCaller=true")):
            r = objects(helm("template", "kg", CHART, "-n", NS, "--set", "serve.clientCAKey=", *ok).stdout)
            off = r[("Deployment", "kubegap-webhook")]["spec"]["template"]["spec"]["containers"][0]["args"]
            self.assertNotIn("--client-ca", off, ok)
        # cert-manager issues the same client certificate from its CA Issuer.
        cm = objects(helm("template", "kg", CHART, "-n", NS, "--set", "certificates.mode=certManager").stdout)
        spec = cm[("Certificate", "kubegap-webhook-apiserver-client")]["spec"]
        self.assertEqual((spec["commonName"], spec["usages"], spec["issuerRef"]["name"]),
                         ("kube-apiserver", ["digital signature", "client auth"], "kubegap-ca"))

    def test_audit_off_profile_drops_the_workload_reads_the_report_writes_and_the_lease(self):
        """serve.auditInterval 0: the pod keeps only what the cluster view reads (issue 31)."""
        rendered = objects(helm("template", "kg", CHART, "-n", NS, "--set", "serve.auditInterval=0",
                                "--set", "helmTest.enabled=false").stdout)
        role = rendered[("ClusterRole", "kubegap-webhook")]
        rules = sorted((tuple(r["apiGroups"]), tuple(r["resources"]), tuple(r["verbs"])) for r in role["rules"])
        reads = ("get", "list", "watch")
        self.assertEqual(rules, [(("",), ("nodes",), reads), (("policy",), ("poddisruptionbudgets",), reads),
                                 (("trainer.kubeflow.org",), ("trainingruntimes", "clustertrainingruntimes"), reads)])
        self.assertNotIn(("Role", "kubegap-webhook-audit"), rendered)
        self.assertNotIn(("RoleBinding", "kubegap-webhook-audit"), rendered)
        args = rendered[("Deployment", "kubegap-webhook")]["spec"]["template"]["spec"]["containers"][0]["args"]
        self.assertEqual(args[args.index("--audit-interval") + 1], "0")

    def test_chart_and_kustomize_base_agree(self):
        chart = objects(helm("template", "kg", CHART, "-n", NS, "--set", "helmTest.enabled=false").stdout)
        base = objects(CP.kubectl("kustomize", os.path.join(SOURCE, "manifests", "base")).stdout)
        # Helm's convention: the namespace is made by `helm install --create-namespace`;
        # the chart's self-signed Secret is the overlay's (generate.sh) in kustomize.
        self.assertEqual(set(chart) - {("Secret", "kubegap-webhook-tls"), ("Secret", "kubegap-webhook-tls-ca"),
                                       ("Secret", "kubegap-webhook-apiserver-client")},
                         set(base) - {("Namespace", NS)})
        for key in sorted(base):
            if key[0] == "Namespace":
                continue
            self.assertEqual(comparable(chart[key]), comparable(base[key]), f"{key}: chart and base differ")

    def test_install_then_upgrade_keeps_the_self_signed_pair(self):
        helm("install", "kg", CHART, "-n", NS)
        first = json.loads(CP.kubectl("get", "secret", "-n", NS, "kubegap-webhook-tls", "-o", "json").stdout)["data"]
        bundle = json.loads(CP.kubectl("get", "validatingwebhookconfiguration", "kubegap-webhook", "-o",
                                       "json").stdout)["webhooks"][0]["clientConfig"]["caBundle"]
        self.assertEqual(bundle, first["ca.crt"], "the caBundle is the CA that signed the Secret's certificate")
        with tempfile.TemporaryDirectory() as tmp:
            for name in ("ca.crt", "tls.crt"):
                with open(os.path.join(tmp, name), "wb") as f:
                    f.write(base64.b64decode(first[name]))
            verify = subprocess.run(["openssl", "verify", "-CAfile", os.path.join(tmp, "ca.crt"),
                                     os.path.join(tmp, "tls.crt")], capture_output=True, text=True)
            self.assertEqual(verify.returncode, 0, verify.stdout + verify.stderr)
        client = json.loads(CP.kubectl("get", "secret", "-n", NS, "kubegap-webhook-apiserver-client", "-o",
                                       "json").stdout)["data"]
        self.assertTrue(verifies(first["ca.crt"], client["tls.crt"]), "the API server's certificate is the CA's")
        helm("upgrade", "kg", CHART, "-n", NS, "--set", "replicas=3")
        second = json.loads(CP.kubectl("get", "secret", "-n", NS, "kubegap-webhook-tls", "-o", "json").stdout)["data"]
        self.assertEqual(second, first, "an upgrade keeps the serving pair")
        kept = json.loads(CP.kubectl("get", "secret", "-n", NS, "kubegap-webhook-apiserver-client", "-o",
                                     "json").stdout)["data"]
        self.assertEqual(kept, client, "and the API server's client certificate, which the control plane holds")
        bundle = json.loads(CP.kubectl("get", "validatingwebhookconfiguration", "kubegap-webhook", "-o",
                                       "json").stdout)["webhooks"][0]["clientConfig"]["caBundle"]
        self.assertEqual(bundle, first["ca.crt"])
        replicas = json.loads(CP.kubectl("get", "deployment", "-n", NS, "kubegap-webhook", "-o", "json").stdout)
        self.assertEqual(replicas["spec"]["replicas"], 3)

        # The serving certificate lives a year at most (issue 31: it was 3,650 days, never
        # rotated), and its end is recorded on the Secret.
        secret = json.loads(CP.kubectl("get", "secret", "-n", NS, "kubegap-webhook-tls", "-o", "json").stdout)
        not_after = int(secret["metadata"]["annotations"]["kubegap.io/not-after-unix"])
        self.assertLessEqual(not_after - time.time(), 366 * 86400)
        self.assertLessEqual(abs(cert_end(first["tls.crt"]) - not_after), 120, "the annotation is the leaf's end")
        # Within renewBeforeDays of that end, an upgrade issues a new serving certificate
        # from the same CA: the caBundle stays, and the new one verifies against it.
        # (Edited by hand here, so helm's server-side apply takes the field back by force.)
        CP.kubectl("annotate", "secret", "-n", NS, "kubegap-webhook-tls", "--overwrite",
                   f"kubegap.io/not-after-unix={int(time.time()) + 10 * 86400}")
        helm("upgrade", "kg", CHART, "-n", NS, "--set", "replicas=3", "--force-conflicts")
        third = json.loads(CP.kubectl("get", "secret", "-n", NS, "kubegap-webhook-tls", "-o", "json").stdout)
        self.assertNotEqual(third["data"]["tls.crt"], first["tls.crt"], "a certificate near its end is reissued")
        self.assertNotEqual(third["data"]["tls.key"], first["tls.key"], "with a new key")
        self.assertEqual(third["data"]["ca.crt"], first["ca.crt"], "by the same CA")
        bundle = json.loads(CP.kubectl("get", "validatingwebhookconfiguration", "kubegap-webhook", "-o",
                                       "json").stdout)["webhooks"][0]["clientConfig"]["caBundle"]
        self.assertEqual(bundle, first["ca.crt"], "the caBundle does not change")
        self.assertGreater(int(third["metadata"]["annotations"]["kubegap.io/not-after-unix"]),
                           time.time() + 300 * 86400)
        self.assertTrue(verifies(third["data"]["ca.crt"], third["data"]["tls.crt"]))
        # The CA's key is in a Secret of its own, which no pod mounts.
        deployment = json.loads(CP.kubectl("get", "deployment", "-n", NS, "kubegap-webhook", "-o", "json").stdout)
        mounted = [v.get("secret", {}).get("secretName") for v in deployment["spec"]["template"]["spec"]["volumes"]]
        self.assertIn("kubegap-webhook-tls", mounted)
        self.assertNotIn("kubegap-webhook-tls-ca", mounted)
        self.assertNotIn("kubegap-webhook-apiserver-client", mounted)
        ca_secret = json.loads(CP.kubectl("get", "secret", "-n", NS, "kubegap-webhook-tls-ca", "-o", "json").stdout)
        self.assertEqual(ca_secret["data"]["tls.crt"], first["ca.crt"])
        helm("uninstall", "kg", "-n", NS)


def cert_end(b64_pem):
    """The certificate's notAfter, in seconds since the epoch."""
    out = subprocess.run(["openssl", "x509", "-noout", "-enddate"], input=base64.b64decode(b64_pem),
                         capture_output=True, check=True).stdout.decode()
    return calendar.timegm(time.strptime(out.strip().split("=", 1)[1], "%b %d %H:%M:%S %Y %Z"))


def verifies(b64_ca, b64_leaf):
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in (("ca.crt", b64_ca), ("tls.crt", b64_leaf)):
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(base64.b64decode(data))
        return subprocess.run(["openssl", "verify", "-CAfile", os.path.join(tmp, "ca.crt"),
                               os.path.join(tmp, "tls.crt")], capture_output=True).returncode == 0


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
