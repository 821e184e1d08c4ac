"""The install manifests (manifests/base and its overlays), rendered with the kustomize
built into kubectl, checked object by object, then sent to a real kube-apiserver:
`kubectl apply --dry-run=server` for the base and both overlays, and a real apply of the
self-signed overlay, which shows the RBAC grants exactly what the webhook needs and that,
with no webhook pod running, the API server fails open and says so (issue 6).

    python3 tests/manifests/test_manifests.py BIN_DIR WEBHOOK_BINARY SOURCE_DIR

BIN_DIR holds kubectl, kube-apiserver and etcd (tests/e2e/build-binaries.sh).
"""

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

BIN_DIR, WEBHOOK, SOURCE = sys.argv[1:4] if len(sys.argv) >= 4 else (None, None, None)
sys.path.insert(0, os.path.join(SOURCE or ".", "tests", "e2e"))
from controlplane import ControlPlane, WEBHOOK_NAME, WEBHOOK_RULES  # noqa: E402

NS = "kubegap-system"
IMAGE = "kubegap-webhook:0.2.0"
OVERLAYS = ("base", "self-signed", "cert-manager")
SERVICE_DNS = ["kubegap-webhook", "kubegap-webhook.kubegap-system", "kubegap-webhook.kubegap-system.svc",
               "kubegap-webhook.kubegap-system.svc.cluster.local"]
SA_USER = f"system:serviceaccount:{NS}:kubegap-webhook"

TMP = None        # a copy of manifests/ with the self-signed overlay's inputs generated
RENDERED = {}     # overlay -> (YAML text, [objects])


def note(message):
    print(f"    checked: {message}", file=sys.stderr, flush=True)


def kubectl_path():
    return os.path.join(BIN_DIR, "kubectl")


def run(args, input=None, env=None, check=True):
    result = subprocess.run(args, input=input, capture_output=True, text=True, timeout=120,
                            env={**os.environ, **(env or {})})
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
    return result


def copy_manifests(dest):
    """manifests/ without anything generate.sh made in the source tree."""
    shutil.copytree(os.path.join(SOURCE, "manifests"), dest,
                    ignore=shutil.ignore_patterns("certs", "generated-by-generate.sh", "cabundle-patch.yaml*"))
    return dest


def generate(manifests, *args):
    script = os.path.join(manifests, "overlays", "self-signed", "generate.sh")
    return run([script, *args], env={"KUBEGAP_GEN_CERTS": os.path.join(SOURCE, "certs", "gen-certs.sh")})


def kustomize(path):
    return run([kubectl_path(), "kustomize", path]).stdout


def to_objects(yaml_text):
    """YAML -> objects without a YAML library: kubectl converts offline (--local)."""
    out = run([kubectl_path(), "patch", "--local", "-f", "-", "--type=merge", "-p", "{}", "-o", "json"],
              input=yaml_text, env={"KUBECONFIG": os.devnull}).stdout
    decoder, i, objects = json.JSONDecoder(), 0, []
    while True:
        while i < len(out) and out[i].isspace():
            i += 1
        if i >= len(out):
            return objects
        obj, i = decoder.raw_decode(out, i)
        objects.extend(obj["items"] if obj.get("kind") == "List" else [obj])


def setUpModule():
    global TMP
    TMP = tempfile.mkdtemp(prefix="kubegap-manifests-")
    manifests = copy_manifests(os.path.join(TMP, "manifests"))
    generate(manifests)
    for overlay in OVERLAYS:
        path = os.path.join(manifests, "base" if overlay == "base" else os.path.join("overlays", overlay))
        text = kustomize(path)
        RENDERED[overlay] = (text, to_objects(text))
        note(f"kubectl kustomize {os.path.relpath(path, TMP)}: {len(RENDERED[overlay][1])} objects")


def tearDownModule():
    if TMP:
        shutil.rmtree(TMP, ignore_errors=True)


def objects(overlay, kind=None):
    return [o for o in RENDERED[overlay][1] if kind is None or o["kind"] == kind]


def one(overlay, kind, name=None):
    found = [o for o in objects(overlay, kind) if name is None or o["metadata"]["name"] == name]
    assert len(found) == 1, f"{overlay}: want one {kind} {name or ''}, found {len(found)}"
    return found[0]


def selects(selector, labels):
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items()) and \
        not selector.get("matchExpressions")


def policy_list(text, key):
    """The block list under `key:` in the policy YAML (the ConfigMap's file)."""
    lines = text.splitlines()
    start = lines.index(f"{key}:")
    values = []
    for line in lines[start + 1:]:
        m = re.match(r"^\s+-\s+(\S+)\s*(#.*)?$", line)
        if not m:
            break
        values.append(m.group(1))
    return values


class Test1Rendered(unittest.TestCase):
    """kubectl kustomize of the base and both overlays: the objects and their properties."""

    def test_base_has_exactly_the_expected_objects(self):
        got = sorted((o["kind"], o["metadata"]["name"]) for o in objects("base"))
        want = sorted([("Namespace", NS), ("ServiceAccount", "kubegap-webhook"),
                       ("ClusterRole", "kubegap-webhook"), ("ClusterRoleBinding", "kubegap-webhook"),
                       ("ConfigMap", "kubegap-policy"), ("Deployment", "kubegap-webhook"),
                       ("PodDisruptionBudget", "kubegap-webhook"), ("Service", "kubegap-webhook"),
                       ("NetworkPolicy", "kubegap-webhook"),
                       ("Role", "kubegap-webhook-audit"), ("RoleBinding", "kubegap-webhook-audit"),
                       ("ValidatingWebhookConfiguration", "kubegap-webhook")])
        self.assertEqual(got, want)
        cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding", "ValidatingWebhookConfiguration"}
        for o in objects("base"):
            if o["kind"] not in cluster_scoped:
                self.assertEqual(o["metadata"].get("namespace"), NS, o["kind"])
        note(f"base: {', '.join(f'{k}/{n}' for k, n in got)}; namespaced ones in {NS}")

    def test_namespace_enforces_restricted_pod_security(self):
        labels = one("base", "Namespace")["metadata"]["labels"]
        self.assertEqual(labels.get("pod-security.kubernetes.io/enforce"), "restricted")
        note("Namespace kubegap-system enforces Pod Security 'restricted'")

    def test_rbac_reads_what_it_evaluates_and_writes_only_its_reports_and_lease(self):
        role = one("base", "ClusterRole")
        reads = sorted((tuple(r["apiGroups"]), tuple(r["resources"])) for r in role["rules"]
                       if sorted(r["verbs"]) == ["get", "list", "watch"])
        # The cluster view, and for the background audit every kind the webhook evaluates.
        want = sorted([(("",), ("nodes",)), (("policy",), ("poddisruptionbudgets",))] +
                      [(tuple(r["apiGroups"]), tuple(r["resources"])) for r in WEBHOOK_RULES])
        self.assertEqual(reads, want)
        writes = sorted((tuple(r["apiGroups"]), tuple(r["resources"]), tuple(sorted(r["verbs"])),
                         tuple(r.get("resourceNames", ())))
                        for r in role["rules"] if sorted(r["verbs"]) != ["get", "list", "watch"])
        # Its own reports only (named kubegap) for get, update and delete; create and list
        # cannot be limited by name (issue 31).
        by_name, unnamed = ("delete", "get", "update"), ("create", "list")
        self.assertEqual(writes, [(("openreports.io",), ("reports", "clusterreports"), unnamed, ()),
                                  (("openreports.io",), ("reports", "clusterreports"), by_name, ("kubegap",)),
                                  (("wgpolicyk8s.io",), ("policyreports", "clusterpolicyreports"), unnamed, ()),
                                  (("wgpolicyk8s.io",), ("policyreports", "clusterpolicyreports"), by_name,
                                   ("kubegap",))])
        for r in role["rules"]:
            self.assertNotIn("nonResourceURLs", r)
            self.assertNotIn("*", r["verbs"] + r["resources"] + r["apiGroups"])
        lease_role = one("base", "Role")
        self.assertEqual(lease_role["metadata"]["namespace"], NS)
        self.assertEqual(lease_role["rules"], [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                                                "resourceNames": ["kubegap-webhook-audit"],
                                                "verbs": ["get", "update"]},
                                               {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                                                "verbs": ["create"]}])
        for kind, ref in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
            binding = one("base", kind)
            self.assertEqual(binding["roleRef"]["kind"], ref)
            self.assertEqual(binding["subjects"], [{"kind": "ServiceAccount", "name": "kubegap-webhook",
                                                    "namespace": NS}])
        pod = one("base", "Deployment")["spec"]["template"]["spec"]
        self.assertEqual(pod["serviceAccountName"], "kubegap-webhook")
        env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in pod["containers"][0]["env"]}
        self.assertEqual(env, {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"})
        note("ClusterRole: get/list/watch on PDBs, Nodes and the webhook rules' kinds; get/update/delete on "
             "its reports by name, create/list on its report kinds; Role: its Lease by name in its own namespace")

    def test_policy_configmap_excludes_system_namespaces_and_loads(self):
        cm = one("base", "ConfigMap", "kubegap-policy")
        self.assertEqual(list(cm["data"]), ["policy.yaml"])
        policy = cm["data"]["policy.yaml"]
        excluded = policy_list(policy, "excludedNamespaces")
        self.assertIn("kube-system", excluded)
        self.assertIn(NS, excluded)
        # The webhook itself accepts the file (an invalid policy stops `serve`).
        path = os.path.join(TMP, "policy.yaml")
        with open(path, "w") as f:
            f.write(policy)
        certs = os.path.join(TMP, "manifests", "overlays", "self-signed", "generated-by-generate.sh")
        proc = subprocess.Popen([WEBHOOK, "serve", "--tls-cert", os.path.join(certs, "tls.crt"),
                                 "--tls-key", os.path.join(certs, "tls.key"), "--policy", path,
                                 "--listen", "127.0.0.1:0", "--health-listen", "127.0.0.1:0",
                                 "--log-format", "json"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            first = json.loads(proc.stdout.readline())
            health = first.get("health_listen", "")
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:  # SIGTERM once it is ready: a clean drain, exit 0
                try:
                    with urllib.request.urlopen(f"http://{health}/readyz", timeout=2) as r:
                        if r.status == 200:
                            break
                except OSError:
                    time.sleep(0.1)
        finally:
            proc.send_signal(signal.SIGTERM)
            rest = proc.communicate(timeout=30)[0]
        self.assertEqual(first.get("msg"), "serving", rest)
        self.assertEqual(first.get("policy"), path)
        self.assertEqual(proc.returncode, 0, rest)
        note(f"ConfigMap kubegap-policy: excludedNamespaces {excluded}; `serve --policy` accepts it")

    def test_deployment(self):
        d = one("base", "Deployment")
        spec = d["spec"]
        self.assertEqual(spec["replicas"], 2)
        self.assertEqual(spec["strategy"]["rollingUpdate"]["maxUnavailable"], 0)
        template = spec["template"]
        self.assertTrue(selects(spec["selector"], template["metadata"]["labels"]))
        pod = template["spec"]
        psc = pod["securityContext"]
        self.assertIs(psc["runAsNonRoot"], True)
        self.assertEqual(psc["runAsUser"], 65532)
        self.assertEqual(psc["seccompProfile"], {"type": "RuntimeDefault"})
        self.assertEqual(len(pod["containers"]), 1)
        self.assertNotIn("initContainers", pod)
        c = pod["containers"][0]
        self.assertEqual(c["image"], IMAGE)
        self.assertNotIn("/", c["image"], "no registry host in the image name")
        self.assertEqual(c.get("imagePullPolicy"), "IfNotPresent")
        sc = c["securityContext"]
        self.assertIs(sc["runAsNonRoot"], True)
        self.assertEqual(sc["runAsUser"], 65532)
        self.assertIs(sc["readOnlyRootFilesystem"], True)
        self.assertIs(sc["allowPrivilegeEscalation"], False)
        self.assertEqual(sc["capabilities"], {"drop": ["ALL"]})
        self.assertEqual(sc["seccompProfile"], {"type": "RuntimeDefault"})
        self.assertFalse(sc.get("privileged", False))

        args = c["args"]
        self.assertEqual(args[:9], ["serve", "--tls-cert", "/tls/tls.crt", "--tls-key", "/tls/tls.key",
                                    "--policy", "/etc/kubegap/policy.yaml", "--log-format", "json"])
        flags = dict(zip(args[1::2], args[2::2]))
        self.assertNotIn("command", c, "the image's entrypoint is the binary")
        # Only the API server may send reviews (issue 31): its client certificate, signed
        # by the Secret's CA, with the name both overlays issue it under.
        self.assertEqual((flags.get("--client-ca"), flags.get("--client-names")), ("/tls/ca.crt", "kube-apiserver"))

        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        self.assertEqual(ports, {"https": 8443, "health": 9090})
        for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
            get = c[probe]["httpGet"]
            self.assertEqual(get["path"], path)
            self.assertIn(get["port"], (9090, "health"))
            self.assertNotEqual(get.get("scheme", "HTTP"), "HTTPS")

        drain = int(flags.get("--shutdown-timeout", 25))
        sleep = c.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0)
        grace = pod["terminationGracePeriodSeconds"]
        self.assertEqual(drain, 25)
        self.assertGreaterEqual(grace, sleep + drain, "SIGKILL must not cut the drain short")
        self.assertLessEqual(grace, sleep + drain + 10, "grace matches the drain, not much longer")

        res = c["resources"]
        for kind in ("cpu", "memory"):
            self.assertIn(kind, res["requests"])
            self.assertIn(kind, res["limits"])
        mib = {"Mi": 1, "Gi": 1024}
        req = int(res["requests"]["memory"][:-2]) * mib[res["requests"]["memory"][-2:]]
        lim = int(res["limits"]["memory"][:-2]) * mib[res["limits"]["memory"][-2:]]
        self.assertLessEqual(req, lim)
        self.assertGreaterEqual(req, 32, "measured idle RSS is 12 MiB, 63 MiB with a 5,000-node view")

        mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
        self.assertEqual(set(mounts), {"/tls", "/etc/kubegap"})
        for m in mounts.values():
            self.assertIs(m.get("readOnly"), True)
            self.assertNotIn("subPath", m, "subPath mounts never see Secret/ConfigMap updates")
        volumes = {v["name"]: v for v in pod["volumes"]}
        self.assertEqual(volumes[mounts["/tls"]["name"]]["secret"]["secretName"], "kubegap-webhook-tls")
        self.assertEqual(volumes[mounts["/etc/kubegap"]["name"]]["configMap"]["name"], "kubegap-policy")
        secret_mode = volumes[mounts["/tls"]["name"]]["secret"].get("defaultMode", 0o644)
        if secret_mode & 0o004 == 0:
            self.assertEqual(psc.get("fsGroup"), 65532, "group-readable key needs fsGroup")

        spread = {t["topologyKey"]: t for t in pod["topologySpreadConstraints"]}
        self.assertEqual(set(spread), {"topology.kubernetes.io/zone", "kubernetes.io/hostname"})
        self.assertEqual(spread["topology.kubernetes.io/zone"]["whenUnsatisfiable"], "ScheduleAnyway")
        self.assertEqual(spread["kubernetes.io/hostname"]["whenUnsatisfiable"], "DoNotSchedule")
        for t in spread.values():
            self.assertEqual(t["maxSkew"], 1)
            self.assertTrue(selects(t["labelSelector"], template["metadata"]["labels"]))
        note(f"Deployment: 2 replicas, non-root 65532, read-only root, drop ALL, no privilege escalation, "
             f"seccomp RuntimeDefault, image {IMAGE}, probes /healthz /readyz on 9090, "
             f"grace {grace} s >= preStop {sleep} s + drain {drain} s, resources {res}, "
             f"spread zone ScheduleAnyway + hostname DoNotSchedule, /tls and /etc/kubegap mounted read-only")

    def test_network_policy_admits_reviews_and_prometheus_only(self):
        policy = one("base", "NetworkPolicy")
        d = one("base", "Deployment")
        spec = policy["spec"]
        self.assertTrue(selects(spec["podSelector"], d["spec"]["template"]["metadata"]["labels"]))
        self.assertEqual(spec["policyTypes"], ["Ingress", "Egress"])
        ports = {p["name"]: p["containerPort"] for p in d["spec"]["template"]["spec"]["containers"][0]["ports"]}
        rules = {}
        for rule in spec["ingress"]:
            self.assertEqual(len(rule["ports"]), 1, rule)
            port = rule["ports"][0]["port"]
            rules[ports.get(port, port)] = rule.get("from")
        self.assertEqual(set(rules), {8443, 9090}, "no other port is reachable")
        self.assertIsNone(rules[8443], "the API server's addresses cannot be named portably: open, --client-ca guards it")
        self.assertEqual(rules[9090], [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
                                         "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}])
        # Egress: the API server's ports only, never link-local (cloud metadata) addresses.
        self.assertEqual(len(spec["egress"]), 1, spec["egress"])
        egress = spec["egress"][0]
        self.assertEqual(sorted(p["port"] for p in egress["ports"]), [443, 6443])
        blocks = {b["ipBlock"]["cidr"]: b["ipBlock"]["except"] for b in egress["to"]}
        self.assertEqual(set(blocks), {"0.0.0.0/0", "::/0"})
        self.assertIn("169.254.0.0/16", blocks["0.0.0.0/0"])
        self.assertIn("fd00:ec2::254/128", blocks["::/0"])
        note("NetworkPolicy: 8443 from any source (the API server), 9090 from Prometheus pods in monitoring only; "
             "egress to 443/6443 only, metadata and link-local excluded")

    def test_pdb(self):
        pdb = one("base", "PodDisruptionBudget")
        self.assertEqual(pdb["spec"]["minAvailable"], 1)
        self.assertNotIn("maxUnavailable", pdb["spec"])
        d = one("base", "Deployment")
        self.assertEqual(pdb["spec"]["selector"], d["spec"]["selector"])
        self.assertTrue(selects(pdb["spec"]["selector"], d["spec"]["template"]["metadata"]["labels"]))
        note("PodDisruptionBudget: minAvailable 1, selects the Deployment's pods")

    def test_service(self):
        svc = one("base", "Service")
        self.assertEqual(len(svc["spec"]["ports"]), 1)
        port = svc["spec"]["ports"][0]
        self.assertEqual(port["port"], 443)
        container = one("base", "Deployment")["spec"]["template"]["spec"]["containers"][0]
        by_name = {p["name"]: p["containerPort"] for p in container["ports"]}
        self.assertEqual(by_name.get(port["targetPort"], port["targetPort"]), 8443)
        labels = one("base", "Deployment")["spec"]["template"]["metadata"]["labels"]
        self.assertTrue(all(labels.get(k) == v for k, v in svc["spec"]["selector"].items()))
        note("Service kubegap-webhook: 443 -> 8443, selects the Deployment's pods")

    def test_webhook_configuration(self):
        vwc = one("base", "ValidatingWebhookConfiguration")
        self.assertEqual(vwc["metadata"]["name"], "kubegap-webhook")
        self.assertEqual(len(vwc["webhooks"]), 1)
        w = vwc["webhooks"][0]
        self.assertEqual(w["name"], WEBHOOK_NAME)
        self.assertEqual(w["failurePolicy"], "Ignore")
        self.assertEqual(w["sideEffects"], "None")
        self.assertEqual(w["admissionReviewVersions"], ["v1"])
        self.assertEqual(w["timeoutSeconds"], 5)
        self.assertEqual(w["namespaceSelector"], {"matchExpressions": [{
            "key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", NS]}]})
        self.assertNotIn("objectSelector", w)
        self.assertEqual(w["rules"], WEBHOOK_RULES, "the same rules as tests/e2e/controlplane.py")
        for r in w["rules"]:
            self.assertIn(r.get("scope", "*"), ("*",))
            want = ["CREATE"] if r["resources"] == ["pods"] else ["CREATE", "UPDATE"]
            self.assertEqual(r["operations"], want)
        self.assertEqual(w["clientConfig"], {"service": {"name": "kubegap-webhook", "namespace": NS,
                                                         "path": "/validate", "port": 443}})
        svc = one("base", "Service")
        self.assertEqual((svc["metadata"]["name"], svc["metadata"]["namespace"]), ("kubegap-webhook", NS))
        note(f"ValidatingWebhookConfiguration: {WEBHOOK_NAME}, failurePolicy Ignore, sideEffects None, "
             f"v1 reviews, timeout 5 s, kube-system and {NS} excluded, {len(w['rules'])} rules == WEBHOOK_RULES, "
             f"service {NS}/kubegap-webhook:443/validate")

    def test_overlays_change_only_the_tls_parts(self):
        base = {(o["kind"], o["metadata"]["name"]): o for o in objects("base")}
        for overlay, extra in (("self-signed", {("Secret", "kubegap-webhook-tls")}),
                               ("cert-manager", {("Issuer", "kubegap-selfsigned"), ("Issuer", "kubegap-ca"),
                                                 ("Certificate", "kubegap-webhook-ca"),
                                                 ("Certificate", "kubegap-webhook-tls"),
                                                 ("Certificate", "kubegap-apiserver-client")})):
            got = {(o["kind"], o["metadata"]["name"]): o for o in objects(overlay)}
            self.assertEqual(set(got) - set(base), extra, overlay)
            self.assertEqual(set(base) - set(got), set(), overlay)
            for key, obj in base.items():
                if key[0] != "ValidatingWebhookConfiguration":
                    self.assertEqual(got[key], obj, f"{overlay} changed {key}")
            for key in extra:
                self.assertEqual(got[key]["metadata"].get("namespace"), NS, key)
        note("overlays: the base objects unchanged except the webhook configuration; "
             "self-signed adds the Secret, cert-manager two Issuers and three Certificates")

    def test_self_signed_secret_and_ca_bundle(self):
        certs = os.path.join(TMP, "manifests", "overlays", "self-signed", "generated-by-generate.sh")
        secret = one("self-signed", "Secret", "kubegap-webhook-tls")
        self.assertEqual(secret["type"], "kubernetes.io/tls")
        self.assertEqual(set(secret["data"]), {"tls.crt", "tls.key", "ca.crt"})
        for key in secret["data"]:
            with open(os.path.join(certs, key), "rb") as f:
                self.assertEqual(base64.b64decode(secret["data"][key]), f.read(), key)
        vwc = one("self-signed", "ValidatingWebhookConfiguration")
        bundle = base64.b64decode(vwc["webhooks"][0]["clientConfig"]["caBundle"])
        with open(os.path.join(certs, "ca.crt"), "rb") as f:
            self.assertEqual(bundle, f.read(), "first generation: the caBundle is ca.crt")
        bundle_file = os.path.join(TMP, "bundle.pem")
        with open(bundle_file, "wb") as f:
            f.write(bundle)
        verify = run(["openssl", "verify", "-CAfile", bundle_file, os.path.join(certs, "tls.crt")], check=False)
        self.assertEqual(verify.returncode, 0, verify.stdout + verify.stderr)
        sans = run(["openssl", "x509", "-in", os.path.join(certs, "tls.crt"), "-noout", "-ext",
                    "subjectAltName"]).stdout
        for name in SERVICE_DNS:
            self.assertIn(f"DNS:{name}", sans)
        self.assertFalse(os.path.exists(os.path.join(certs, "ca.key")), "generate.sh keeps no CA key")
        # The API server's client certificate: the Secret's CA signed it for client use,
        # under the name the Deployment's --client-names asks for.
        client = os.path.join(certs, "client.crt")
        verify = run(["openssl", "verify", "-purpose", "sslclient", "-CAfile", os.path.join(certs, "ca.crt"), client],
                     check=False)
        self.assertEqual(verify.returncode, 0, verify.stdout + verify.stderr)
        self.assertRegex(run(["openssl", "x509", "-in", client, "-noout", "-subject"]).stdout,
                         r"CN\s*=\s*kube-apiserver\s*$")
        note("self-signed: Secret kubegap-webhook-tls (kubernetes.io/tls) holds the generated files; "
             "caBundle = ca.crt; tls.crt verifies against it with the Service's DNS names")

    def test_self_signed_generate_is_idempotent_and_rotation_keeps_the_old_ca_trusted(self):
        manifests = copy_manifests(os.path.join(TMP, "rotation"))
        overlay = os.path.join(manifests, "overlays", "self-signed")
        failed = run([kubectl_path(), "kustomize", overlay], check=False)
        self.assertNotEqual(failed.returncode, 0, "without generate.sh the overlay does not render")
        # Kustomize prints no message of ours; the missing directory's name says what to run.
        self.assertIn("self-signed/generated-by-generate.sh: no such file or directory", failed.stderr)

        generate(manifests)
        certs = os.path.join(overlay, "generated-by-generate.sh")

        def read(name):
            with open(os.path.join(certs, name), "rb") as f:
                return f.read()

        first = {n: read(n) for n in ("ca.crt", "tls.crt", "tls.key")}
        self.assertEqual(oct(os.stat(os.path.join(certs, "tls.key")).st_mode & 0o777), "0o600")
        generate(manifests)
        self.assertEqual({n: read(n) for n in first}, first, "a second run without --force keeps the certificates")
        generate(manifests, "--force")
        second = {n: read(n) for n in first}
        for n in first:
            self.assertNotEqual(second[n], first[n], f"--force replaced {n}")
        vwc = [o for o in to_objects(kustomize(overlay)) if o["kind"] == "ValidatingWebhookConfiguration"][0]
        bundle = base64.b64decode(vwc["webhooks"][0]["clientConfig"]["caBundle"])
        self.assertEqual(bundle, second["ca.crt"] + first["ca.crt"], "new CA, then the previous one")
        bundle_file = os.path.join(TMP, "rotation-bundle.pem")
        with open(bundle_file, "wb") as f:
            f.write(bundle)
        old_tls = os.path.join(TMP, "old-tls.crt")
        with open(old_tls, "wb") as f:
            f.write(first["tls.crt"])
        for what, path in (("new", os.path.join(certs, "tls.crt")), ("old", old_tls)):
            r = run(["openssl", "verify", "-CAfile", bundle_file, path], check=False)
            self.assertEqual(r.returncode, 0, f"the {what} serving certificate verifies: {r.stderr}")
        generate(manifests, "--force")
        vwc = [o for o in to_objects(kustomize(overlay)) if o["kind"] == "ValidatingWebhookConfiguration"][0]
        bundle = base64.b64decode(vwc["webhooks"][0]["clientConfig"]["caBundle"])
        self.assertEqual(bundle, read("ca.crt") + second["ca.crt"], "the next rotation drops the oldest CA")
        note("generate.sh: the overlay does not render without it; a rerun keeps the certificates; --force "
             "rotates, and the caBundle trusts the new and the previous CA (both serving certificates verify)")

    def test_self_signed_generate_moves_the_old_layout(self):
        """Files made by an older generate.sh (certs/ and cabundle-patch.yaml beside it)
        are moved, so the CA the cluster already trusts is kept."""
        manifests = copy_manifests(os.path.join(TMP, "old-layout"))
        overlay = os.path.join(manifests, "overlays", "self-signed")
        old = os.path.join(overlay, "certs")
        run([os.path.join(SOURCE, "certs", "gen-certs.sh"), "--out", old])
        with open(os.path.join(overlay, "cabundle-patch.yaml"), "w") as f:
            f.write("# old\n")
        with open(os.path.join(old, "ca.crt"), "rb") as f:
            ca = f.read()
        generate(manifests)
        self.assertFalse(os.path.exists(old))
        self.assertFalse(os.path.exists(os.path.join(overlay, "cabundle-patch.yaml")))
        with open(os.path.join(overlay, "generated-by-generate.sh", "ca.crt"), "rb") as f:
            self.assertEqual(f.read(), ca, "the CA is kept")
        vwc = [o for o in to_objects(kustomize(overlay)) if o["kind"] == "ValidatingWebhookConfiguration"][0]
        self.assertEqual(base64.b64decode(vwc["webhooks"][0]["clientConfig"]["caBundle"]), ca)

    def test_callers_by_network_component(self):
        """The opt-out for control planes without a client certificate: the component drops
        exactly the two flags, and the example patch limits port 8443; with the base's
        flags moved, kustomize refuses rather than remove the wrong arguments."""
        manifests = copy_manifests(os.path.join(TMP, "callers"))
        overlay = os.path.join(TMP, "callers", "mine")
        os.makedirs(overlay)
        shutil.copy(os.path.join(manifests, "components", "callers-by-network", "webhook-sources.example.yaml"),
                    os.path.join(overlay, "webhook-sources.yaml"))
        with open(os.path.join(overlay, "kustomization.yaml"), "w") as f:
            f.write("resources: [../base]\ncomponents: [../components/callers-by-network]\npatches:\n"
                    "  - path: webhook-sources.yaml\n    target: {kind: NetworkPolicy, name: kubegap-webhook}\n")
        got = {(o["kind"], o["metadata"]["name"]): o for o in to_objects(kustomize(overlay))}
        base = {(o["kind"], o["metadata"]["name"]): o for o in objects("base")}
        self.assertEqual(set(got), set(base))
        args = got[("Deployment", "kubegap-webhook")]["spec"]["template"]["spec"]["containers"][0]["args"]
        base_args = base[("Deployment", "kubegap-webhook")]["spec"]["template"]["spec"]["containers"][0]["args"]
        at = base_args.index("--client-ca")
        self.assertEqual(args, base_args[:at] + base_args[at + 4:])
        ingress = got[("NetworkPolicy", "kubegap-webhook")]["spec"]["ingress"]
        self.assertEqual(ingress[0]["ports"][0]["port"], "https")
        self.assertEqual(ingress[0]["from"], [{"ipBlock": {"cidr": "192.0.2.10/32"}}])
        self.assertEqual(ingress[1:], base[("NetworkPolicy", "kubegap-webhook")]["spec"]["ingress"][1:])
        for key, obj in base.items():
            if key not in (("Deployment", "kubegap-webhook"), ("NetworkPolicy", "kubegap-webhook")):
                self.assertEqual(got[key], obj, key)
        # The base's flags moved (here: --client-names gone): refused, not mis-patched.
        deployment = os.path.join(manifests, "base", "deployment.yaml")
        with open(deployment) as f:
            text = f.read()
        with open(deployment, "w") as f:
            f.write(text.replace("            - --client-names\n            - kube-apiserver\n", ""))
        moved = run([kubectl_path(), "kustomize", overlay], check=False)
        self.assertNotEqual(moved.returncode, 0, "a component over moved flags must not build")
        self.assertIn("test", moved.stderr.lower())
        note("components/callers-by-network: drops --client-ca/--client-names only; the example patch "
             "limits 8443 to its ipBlock; refuses to build when the base's flags have moved")

    def test_cert_manager_issuers_certificate_and_injection(self):
        issuers = {o["metadata"]["name"]: o for o in objects("cert-manager", "Issuer")}
        certificates = {o["metadata"]["name"]: o for o in objects("cert-manager", "Certificate")}
        for o in list(issuers.values()) + list(certificates.values()):
            self.assertEqual(o["apiVersion"], "cert-manager.io/v1")
        self.assertEqual(issuers["kubegap-selfsigned"]["spec"], {"selfSigned": {}})
        ca = certificates["kubegap-webhook-ca"]["spec"]
        self.assertIs(ca["isCA"], True)
        self.assertEqual(ca["issuerRef"]["name"], "kubegap-selfsigned")
        self.assertEqual(issuers["kubegap-ca"]["spec"], {"ca": {"secretName": ca["secretName"]}})
        tls = certificates["kubegap-webhook-tls"]["spec"]
        self.assertEqual(tls["secretName"], "kubegap-webhook-tls")
        self.assertEqual(tls["issuerRef"], {"kind": "Issuer", "name": "kubegap-ca"})
        self.assertEqual(sorted(tls["dnsNames"]), sorted(SERVICE_DNS))
        self.assertEqual(tls["privateKey"]["algorithm"], "ECDSA")
        self.assertEqual(tls["privateKey"]["size"], 256)
        self.assertIn("server auth", tls["usages"])
        client = certificates["kubegap-apiserver-client"]["spec"]
        self.assertEqual((client["commonName"], client["usages"], client["issuerRef"]),
                         ("kube-apiserver", ["digital signature", "client auth"], {"kind": "Issuer", "name": "kubegap-ca"}))
        self.assertEqual(client["secretName"], "kubegap-webhook-apiserver-client")
        vwc = one("cert-manager", "ValidatingWebhookConfiguration")
        self.assertEqual(vwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
                         f"{NS}/kubegap-webhook-tls")
        self.assertNotIn("caBundle", vwc["webhooks"][0]["clientConfig"], "cainjector fills it")
        base_webhook = one("base", "ValidatingWebhookConfiguration")["webhooks"]
        self.assertEqual(vwc["webhooks"], base_webhook)
        note("cert-manager: self-signed Issuer -> CA Certificate -> CA Issuer -> serving Certificate "
             "(ECDSA P-256, Service DNS names, Secret kubegap-webhook-tls); inject-ca-from "
             f"{NS}/kubegap-webhook-tls")

    def test_image_tag_is_the_binary_version(self):
        version = run([WEBHOOK, "version"]).stdout.split()[-1]
        self.assertEqual(IMAGE, f"kubegap-webhook:{version}")
        note(f"image tag {IMAGE} == `kubegap-webhook version` ({version})")


CP = None

# Just enough of cert-manager's CRDs for the API server to accept Issuers and Certificates.
CERT_MANAGER_CRDS = [{
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{plural}.cert-manager.io"},
    "spec": {"group": "cert-manager.io", "scope": "Namespaced",
             "names": {"kind": kind, "plural": plural, "singular": plural[:-1], "listKind": f"{kind}List"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]},
} for kind, plural in (("Issuer", "issuers"), ("Certificate", "certificates"))]


class Test2AgainstTheApiServer(unittest.TestCase):
    """A real kube-apiserver (tests/e2e/controlplane.py) takes the rendered manifests."""

    @classmethod
    def setUpClass(cls):
        global CP
        CP = ControlPlane(BIN_DIR, WEBHOOK, SOURCE).__enter__()
        # A server dry run of namespaced objects needs their namespace to exist (a dry-run
        # Namespace is not created); create the rendered Namespace itself, with its Pod
        # Security labels, so the dry runs below also get Pod Security's verdict.
        namespace = [o for o in objects("base", "Namespace")]
        CP.kubectl("apply", "-f", "-", input=json.dumps(namespace[0]))

    @classmethod
    def tearDownClass(cls):
        if CP is not None:
            CP.stop()

    def dry_run(self, overlay):
        text = RENDERED[overlay][0]
        r = CP.kubectl("apply", "--dry-run=server", "-f", "-", input=text, check=False)
        self.assertEqual(r.returncode, 0, f"{overlay}: {r.stderr}")
        lines = [line for line in r.stdout.splitlines() if line.strip()]
        self.assertEqual(len(lines), len(RENDERED[overlay][1]), r.stdout)
        for line in lines:
            self.assertTrue(line.endswith("(server dry run)"), line)
        # Pod Security (warn: restricted on the namespace) would print "would violate".
        self.assertNotIn("PodSecurity", r.stderr)
        self.assertNotIn("Warning", r.stderr, r.stderr)
        note(f"kubectl apply --dry-run=server ({overlay}): {len(lines)} objects accepted, no warnings "
             "(Pod Security 'restricted' included)")
        return r

    def test_1_base(self):
        self.dry_run("base")

    def test_2_self_signed(self):
        self.dry_run("self-signed")

    def test_3_cert_manager_with_minimal_crds(self):
        CP.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                         "items": CERT_MANAGER_CRDS}))
        for crd in CERT_MANAGER_CRDS:
            CP.kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{crd['metadata']['name']}")
        self.dry_run("cert-manager")

    def test_4_dry_run_rejects_a_broken_manifest(self):
        """The dry runs above mean something: a misspelt field is refused (strict validation)."""
        text = RENDERED["base"][0].replace("nodeTaintsPolicy: Honor", "nodeTaintPolicy: Honor")
        self.assertNotEqual(text, RENDERED["base"][0])
        r = CP.kubectl("apply", "--dry-run=server", "-f", "-", input=text, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("nodeTaintPolicy", r.stderr)
        note("a misspelt field (nodeTaintPolicy) is refused by the server dry run")

    def test_5_real_apply_rbac_and_fail_open(self):
        """Installed for real (no kubelet: no pod runs), the webhook is down: the API
        server fails open, records it in the audit log and counts it in a metric."""
        CP.stop_webhook()
        CP.kubectl("delete", "validatingwebhookconfiguration", "kubegap-webhook", "--ignore-not-found")
        r = CP.kubectl("apply", "-f", "-", input=RENDERED["self-signed"][0])
        self.assertEqual(len([line for line in r.stdout.splitlines() if line.strip()]),
                         len(RENDERED["self-signed"][1]), r.stdout)
        note(f"kubectl apply (self-signed): {len(RENDERED['self-signed'][1])} objects stored")

        # RBAC, asked of the real authorizer as the webhook's service account.
        allowed = {("get", "nodes"), ("list", "nodes"), ("watch", "nodes"),
                   ("get", "poddisruptionbudgets.policy"), ("list", "poddisruptionbudgets.policy"),
                   ("watch", "poddisruptionbudgets.policy"), ("list", "pods"), ("list", "jobs.batch"),
                   ("list", "deployments.apps")}
        # (The report kinds' rules are checked in the rendered base: kubectl cannot ask
        # about a kind whose CRD is not installed here.)
        denied = {("create", "nodes"), ("patch", "nodes"), ("delete", "poddisruptionbudgets.policy"),
                  ("get", "secrets"), ("list", "secrets"), ("create", "pods"), ("delete", "pods"),
                  ("get", "configmaps"), ("update", "validatingwebhookconfigurations"),
                  ("create", "pods/eviction"), ("update", "jobs.batch")}
        for verb, resource in sorted(allowed | denied):
            r = CP.kubectl("auth", "can-i", verb, resource, "-A", "--as", SA_USER, check=False)
            self.assertEqual(r.stdout.strip(), "yes" if (verb, resource) in allowed else "no",
                             f"can-i {verb} {resource}: {r.stdout} {r.stderr}")
        # The Lease: its own, in its own namespace only; create cannot be limited by name.
        for verb, resource, namespace, want in (
                ("update", "leases.coordination.k8s.io/kubegap-webhook-audit", NS, "yes"),
                ("get", "leases.coordination.k8s.io/kubegap-webhook-audit", NS, "yes"),
                ("update", "leases.coordination.k8s.io/kube-scheduler", NS, "no"),
                ("update", "leases.coordination.k8s.io/kubegap-webhook-audit", "default", "no"),
                ("create", "leases.coordination.k8s.io", NS, "yes"),
                ("create", "leases.coordination.k8s.io", "default", "no")):
            r = CP.kubectl("auth", "can-i", verb, resource, "-n", namespace, "--as", SA_USER, check=False)
            self.assertEqual(r.stdout.strip(), want, f"can-i {verb} {resource} -n {namespace}: {r.stdout}")
        note(f"kubectl auth can-i as {SA_USER}: yes for reads of what it evaluates, its reports and "
             f"its Lease in {NS}; no for {len(denied)} other verbs/resources (secrets, writes)")

        # No pod serves the Service: every call fails, and is ignored.
        CP.kubectl("create", "namespace", "fail-open", check=False)
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "fail-open"},
               "spec": {"containers": [{"name": "c", "image": "busybox",
                                        "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
        deadline, failed_open, created = time.monotonic() + 60, {}, 0
        while time.monotonic() < deadline and not failed_open:
            created += 1
            pod["metadata"]["name"] = f"gpu-{created}"
            r = CP.kubectl("create", "-f", "-", input=json.dumps(pod))
            self.assertIn(f"pod/gpu-{created} created", r.stdout)
            self.assertNotIn("kubegap/", r.stderr)
            for _ in range(25):
                events = CP.pod_create_events("fail-open", f"gpu-{created}")
                if events:
                    failed_open = {k: v for k, v in events[-1].get("annotations", {}).items()
                                   if k.startswith("failed-open.validating.webhook.admission.k8s.io/")}
                    break
                time.sleep(0.2)
        self.assertIn(WEBHOOK_NAME, failed_open.values(), "audit annotation failed-open...")
        metrics = CP.kubectl("get", "--raw", "/metrics").stdout
        fail_open = [line for line in metrics.splitlines()
                     if line.startswith("apiserver_admission_webhook_fail_open_count{")
                     and f'name="{WEBHOOK_NAME}"' in line]
        self.assertTrue(fail_open, "apiserver_admission_webhook_fail_open_count for the webhook")
        self.assertGreaterEqual(float(fail_open[0].rsplit(" ", 1)[1]), 1)
        note(f"webhook down: pods created, audit annotation {failed_open}; metric {fail_open[0]}")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
