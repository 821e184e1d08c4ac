"""A real control plane for end-to-end tests: etcd, kube-apiserver and the webhook as
plain processes on free loopback ports, envtest style (see tests/e2e/NOTES.md).

    with ControlPlane(bin_dir, webhook_binary, source_dir) as cp:
        cp.kubectl("apply", "-f", "pod.yaml")       # -> CompletedProcess
        cp.audit_events()                           # parsed audit log

Every process it starts is stopped when the `with` block ends, also on failure, on
Ctrl-C and on SIGTERM.
"""

import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import ssl

WEBHOOK_NAME = "kubegap.kubegap.io"
ADMIN_TOKEN = "kubegap-e2e-admin-token"
CANARY_NAMESPACE = "kubegap-canary"

# What the webhook is registered for: Pods on CREATE, and the workload kinds of the
# default policy on CREATE and UPDATE (manifests/ registers the same).
WEBHOOK_RULES = [
    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]},
    {"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
     "resources": ["jobs", "cronjobs"]},
    {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
     "resources": ["deployments", "statefulsets", "replicasets", "daemonsets"]},
    {"apiGroups": ["jobset.x-k8s.io"], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"],
     "resources": ["jobsets"]},
    {"apiGroups": ["kubeflow.org"], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"],
     "resources": ["pytorchjobs", "tfjobs", "xgboostjobs", "paddlejobs", "jaxjobs", "mpijobs", "mxjobs",
                   "experiments"]},
    {"apiGroups": ["training.kubedl.io"], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"],
     "resources": ["tfjobs", "pytorchjobs", "xgboostjobs", "xdljobs", "marsjobs", "elasticdljobs", "mpijobs"]},
    {"apiGroups": ["elastic.pytorch.org", "elastic.iml.github.io"], "apiVersions": ["*"],
     "operations": ["CREATE", "UPDATE"], "resources": ["elasticjobs"]},
    {"apiGroups": ["ray.io"], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"],
     "resources": ["rayjobs", "rayclusters", "raycronjobs", "rayservices"]},
    {"apiGroups": ["batch.volcano.sh"], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"],
     "resources": ["jobs", "cronjobs"]},
    {"apiGroups": ["flow.volcano.sh"], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"],
     "resources": ["jobtemplates"]},
    {"apiGroups": ["trainer.kubeflow.org"], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"],
     "resources": ["trainjobs", "trainingruntimes", "clustertrainingruntimes"]},
    {"apiGroups": ["workload.codeflare.dev"], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"],
     "resources": ["appwrappers"]},
    {"apiGroups": ["apps.kubedl.io"], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"],
     "resources": ["crons"]},
    {"apiGroups": ["sagemaker.amazonaws.com"], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"],
     "resources": ["hyperpodpytorchjobs"]},
    {"apiGroups": ["leaderworkerset.x-k8s.io"], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"],
     "resources": ["leaderworkersets"]},
]

AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
"""


def free_port():
    """A port nothing listens on now (bind port 0, read it, release it). Only for etcd and
    kube-apiserver, which cannot listen on port 0 and report the port: another process may
    take it before they bind, so ControlPlane._start_on_free_port retries on another. The
    webhook listens on port 0 and its bound ports are read from its "serving" line."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, predicate, timeout=30, interval=0.2):
    """Polls predicate() until it returns something true (returned) or timeout seconds pass."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")


def log(message):
    print(f"[e2e {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class ControlPlane:
    def __init__(self, bin_dir, webhook_binary, source_dir, keep=False, audit_log=None):
        self.bin_dir = bin_dir
        self.webhook_binary = webhook_binary
        self.source_dir = source_dir
        self.keep = keep
        self.dir = tempfile.mkdtemp(prefix="kubegap-e2e-")
        self.processes = {}
        self.webhook_port = None
        self.webhook_health_port = None
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        # The audit log lives in the temporary directory unless a path outside it is
        # given (the demo's, which outlives the control plane).
        self.audit_log = audit_log or os.path.join(self.dir, "audit.log")
        self.webhook_args = lambda: ()  # extra serve flags, e.g. ("--kubeconfig", path)

    # --- lifecycle -----------------------------------------------------------------

    def __enter__(self):
        self._old_handlers = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            self._start_etcd()
            self._make_webhook_certs()  # first: the API server presents the client certificate
            self._start_apiserver()
            self._write_kubeconfig()
            self.start_webhook()
            self.register_webhook()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def _on_signal(self, signum, frame):
        log(f"signal {signum}: stopping every process")
        self.stop()
        sys.exit(128 + signum)

    def stop(self):
        for name in list(self.processes)[::-1]:
            self._stop_process(name)
        if hasattr(self, "_old_handlers"):
            for s, h in self._old_handlers.items():
                signal.signal(s, h)
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _log_path(self, name):
        return os.path.join(self.dir, f"{name}.log")

    def _spawn(self, name, args):
        # A new session: a Ctrl-C in the terminal reaches us, and we stop the children.
        with open(self._log_path(name), "ab") as out:
            proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.processes[name] = proc
        return proc

    def _stop_process(self, name, sig=signal.SIGTERM, timeout=20):
        proc = self.processes.pop(name, None)
        if proc is None or proc.poll() is not None:
            return None
        proc.send_signal(sig)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()

    def process_log(self, name):
        with open(self._log_path(name), errors="replace") as f:
            return f.read()

    def _wait(self, what, predicate, timeout, process=None):
        deadline = time.monotonic() + timeout
        last_error = None
        while time.monotonic() < deadline:
            if process is not None and self.processes[process].poll() is not None:
                raise RuntimeError(f"{process} exited while waiting for {what}:\n{self.process_log(process)[-4000:]}")
            try:
                if predicate():
                    return
            except Exception as e:  # noqa: BLE001 - kept for the message below
                last_error = e
            time.sleep(0.2)
        tail = self.process_log(process)[-4000:] if process else ""
        reason = f" (last error: {last_error!r})" if last_error is not None else ""
        raise TimeoutError(f"timed out after {timeout} s waiting for {what}{reason}\n{tail}")

    # --- etcd and kube-apiserver -----------------------------------------------------

    def _start_on_free_port(self, name, start, attempts=3):
        """start(port) spawns process `name` on `port` and waits until it is ready. If the
        process exits because another took the port between free_port() and its bind,
        it is started again on another port (at most `attempts` times)."""
        for attempt in range(attempts):
            port = free_port()
            path = os.path.join(self.dir, f"{name}.log")
            offset = os.path.getsize(path) if os.path.exists(path) else 0
            try:
                start(port)
                return port
            except RuntimeError:
                with open(path, errors="replace") as f:
                    f.seek(offset)
                    taken = "address already in use" in f.read().lower()
                if not taken or attempt == attempts - 1:
                    raise
                log(f"{name}: port {port} was taken before it could bind; trying another")
                self.processes.pop(name, None)

    def _start_etcd(self):
        def start(port):
            self.etcd_port = port
            url = f"http://127.0.0.1:{port}"
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(os.path.join(self.dir, "etcd"))
            self._spawn("etcd", [
                os.path.join(self.bin_dir, "etcd"),
                "--data-dir", os.path.join(self.dir, "etcd"),
                "--listen-client-urls", url, "--advertise-client-urls", url,
                "--listen-peer-urls", "http://127.0.0.1:0",
                "--unsafe-no-fsync",
            ])

            def healthy():
                with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                    return json.load(r).get("health") == "true"

            self._wait("etcd", healthy, 60, "etcd")

        self._start_on_free_port("etcd", start)
        log(f"etcd ready on http://127.0.0.1:{self.etcd_port}")

    def _start_apiserver(self):
        cert_dir = os.path.join(self.dir, "apiserver-certs")
        os.makedirs(cert_dir)
        sa_key = os.path.join(self.dir, "sa.key")
        subprocess.run(["openssl", "genrsa", "-out", sa_key, "2048"], check=True, capture_output=True)
        tokens = os.path.join(self.dir, "tokens.csv")
        with open(tokens, "w") as f:
            f.write(f'{ADMIN_TOKEN},admin,admin-uid,"system:masters"\n')
        audit_policy = os.path.join(self.dir, "audit-policy.yaml")
        with open(audit_policy, "w") as f:
            f.write(AUDIT_POLICY)
        admission_config = self._write_admission_config()
        self._start_on_free_port("kube-apiserver", lambda port: self._spawn_apiserver(
            port, cert_dir, tokens, sa_key, audit_policy, admission_config))
        log(f"kube-apiserver ready on https://127.0.0.1:{self.apiserver_port}")

    def _spawn_apiserver(self, port, cert_dir, tokens, sa_key, audit_policy, admission_config):
        self.apiserver_port = port
        self.apiserver_args = [
            os.path.join(self.bin_dir, "kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
            f"--cert-dir={cert_dir}",
            f"--secure-port={self.apiserver_port}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--authorization-mode=RBAC",
            f"--token-auth-file={tokens}",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={sa_key}",
            f"--service-account-signing-key-file={sa_key}",
            "--disable-admission-plugins=ServiceAccount",
            f"--audit-policy-file={audit_policy}",
            f"--audit-log-path={self.audit_log}",
            "--audit-log-mode=blocking",
            f"--admission-control-config-file={admission_config}",
        ]
        self._spawn("kube-apiserver", self.apiserver_args)
        self._wait("kube-apiserver /readyz", lambda: self._get(f"/readyz") == "ok", 180, "kube-apiserver")

    def _write_admission_config(self):
        """The API server presents the webhook certs' client.crt to every webhook (user
        "*"), as the AdmissionConfiguration in docs/security.md shows; the webhook runs with
        --client-ca, so a review without it would fail (and fail open)."""
        client_kubeconfig = os.path.join(self.dir, "webhook-client.kubeconfig")
        with open(client_kubeconfig, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "Config", "users": [{"name": "*", "user": {
                "client-certificate": os.path.join(self.webhook_certs, "client.crt"),
                "client-key": os.path.join(self.webhook_certs, "client.key")}}]}, f)
        path = os.path.join(self.dir, "admission-config.yaml")
        with open(path, "w") as f:
            json.dump({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AdmissionConfiguration",
                       "plugins": [{"name": "ValidatingAdmissionWebhook", "configuration": {
                           "apiVersion": "apiserver.config.k8s.io/v1", "kind": "WebhookAdmissionConfiguration",
                           "kubeConfigFile": client_kubeconfig}}]}, f)
        return path

    def restart_apiserver(self):
        self._stop_process("kube-apiserver")
        self._spawn("kube-apiserver", self.apiserver_args)
        self._wait("kube-apiserver /readyz", lambda: self._get(f"/readyz") == "ok", 180, "kube-apiserver")

    def apiserver_ssl_context(self):
        """TLS for a test's own requests to the API server: verified against its
        self-signed certificate (raises until kube-apiserver has written it)."""
        return ssl.create_default_context(cafile=os.path.join(self.dir, "apiserver-certs", "apiserver.crt"))

    def _get(self, path):
        # Verified against the API server's self-signed certificate (written to --cert-dir
        # before it serves), never with verification off: until the file exists this
        # raises, and _wait keeps polling.
        context = self.apiserver_ssl_context()
        request = urllib.request.Request(f"https://127.0.0.1:{self.apiserver_port}{path}",
                                         headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        with urllib.request.urlopen(request, context=context, timeout=5) as r:
            return r.read().decode()

    def _write_kubeconfig(self):
        # The API server's serving certificate is self-signed in --cert-dir; trust it.
        ca = os.path.join(self.dir, "apiserver-certs", "apiserver.crt")
        with open(ca, "rb") as f:
            ca_data = base64.b64encode(f.read()).decode()
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "e2e",
            "clusters": [{"name": "e2e", "cluster": {
                "server": f"https://127.0.0.1:{self.apiserver_port}",
                "certificate-authority-data": ca_data}}],
            "users": [{"name": "admin", "user": {"token": ADMIN_TOKEN}}],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "admin"}}],
        }
        with open(self.kubeconfig, "w") as f:
            json.dump(config, f)
        # kube-apiserver signs its self-signed certificate for its bind and advertise
        # addresses, so kubectl verifies it. Never fall back to skipping verification: a
        # transient failure is retried for a bounded time, a lasting one fails with
        # kubectl's reason (a certificate that stopped matching must be seen, not hidden).
        self.verify_kubeconfig()

    def verify_kubeconfig(self, timeout=30):
        """kubectl, with the kubeconfig's CA, reaches /readyz within `timeout` seconds;
        otherwise RuntimeError with kubectl's last error."""
        deadline = time.monotonic() + timeout
        while True:
            result = self.kubectl("get", "--raw", "/readyz", check=False)
            if result.returncode == 0:
                return
            if time.monotonic() >= deadline:
                raise RuntimeError(
                    f"kubectl cannot reach the API server with TLS verification (CA: the API server's "
                    f"self-signed certificate) after {timeout} s; verification is never turned off. "
                    f"kubectl said:\n{result.stderr.strip()}")
            time.sleep(0.5)

    def kubectl(self, *args, input=None, check=True, timeout=60):
        result = subprocess.run([os.path.join(self.bin_dir, "kubectl"), "--kubeconfig", self.kubeconfig, *args],
                                input=input, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
        return result

    # --- the webhook -----------------------------------------------------------------

    def wait_crds_established(self, bound=60):
        """Waits until every CRD is Established. `kubectl wait --all` fails at once ("<nil>
        is of the type <nil>") on a CRD whose status has no conditions yet, just after it
        was created: it is asked again, within `bound` seconds."""
        deadline = time.monotonic() + bound
        while True:
            r = self.kubectl("wait", "--for=condition=Established", "crd", "--all", f"--timeout={bound}s",
                             check=False)
            if r.returncode == 0:
                return
            if time.monotonic() > deadline or "accessor error" not in r.stderr:
                raise AssertionError(f"CRDs not established: {r.stderr.strip()}")
            time.sleep(0.5)

    def add_zone_nodes(self, zones=("zone-a", "zone-b")):
        """One Node per zone, gpu-0, gpu-1, ...: the multi-zone view zone-spread reads."""
        for i, zone in enumerate(zones):
            self.kubectl("apply", "-f", "-", input=json.dumps({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": f"gpu-{i}", "labels": {"topology.kubernetes.io/zone": zone}}}))

    def _make_webhook_certs(self):
        self.webhook_certs = os.path.join(self.dir, "webhook-certs")
        subprocess.run([os.path.join(self.source_dir, "certs", "gen-certs.sh"), "--out", self.webhook_certs],
                       check=True, capture_output=True)
        with open(os.path.join(self.webhook_certs, "ca.crt"), "rb") as f:
            self.ca_bundle = base64.b64encode(f.read()).decode()

    def start_webhook(self, extra_args=()):
        """Starts the webhook; on a restart it takes the same port again."""
        listen = f"127.0.0.1:{self.webhook_port or 0}"
        # Where this start's lines begin, taken before it runs: on a loaded machine the new
        # process can log "serving" before this line would run after the spawn, and a wait
        # that starts past its own line never ends (a CI run timed out so).
        start = len(self.process_log("webhook")) if os.path.exists(self._log_path("webhook")) else 0
        self._spawn("webhook", [
            self.webhook_binary, "serve",
            "--tls-cert", os.path.join(self.webhook_certs, "tls.crt"),
            "--tls-key", os.path.join(self.webhook_certs, "tls.key"),
            "--listen", listen, "--health-listen", "127.0.0.1:0",
            # Only the API server's certificate (certs/gen-certs.sh: CN kube-apiserver),
            # not any the CA signed: every e2e test shows the real API server passes it.
            "--client-ca", os.path.join(self.webhook_certs, "ca.crt"), "--client-names", "kube-apiserver",
            "--log-format", "json", "--threads", "2", *self.webhook_args(), *extra_args,
        ])

        def serving():
            for line in self.process_log("webhook")[start:].splitlines():
                entry = json.loads(line)
                if entry.get("msg") == "serving":
                    self.webhook_port = int(entry["listen"].rsplit(":", 1)[1])
                    self.webhook_health_port = int(entry["health_listen"].rsplit(":", 1)[1])
                    return True
            return False

        self._wait("webhook to serve", serving, 30, "webhook")
        log(f"webhook serving on 127.0.0.1:{self.webhook_port}")

    def webhook_client_context(self):
        """TLS for a test's own requests to the webhook: it trusts the webhook's CA and
        presents the client certificate the API server presents (--client-ca is on)."""
        context = ssl.create_default_context(cafile=os.path.join(self.webhook_certs, "ca.crt"))
        context.load_cert_chain(os.path.join(self.webhook_certs, "client.crt"),
                                os.path.join(self.webhook_certs, "client.key"))
        return context

    def stop_webhook(self):
        return self._stop_process("webhook")

    def webhook_metrics(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.webhook_health_port}/metrics", timeout=5) as r:
            return r.read().decode()

    def register_webhook(self, resources=None):
        config = {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "kubegap-webhook"},
            "webhooks": [{
                "name": WEBHOOK_NAME,
                "clientConfig": {"url": f"https://127.0.0.1:{self.webhook_port}/validate",
                                 "caBundle": self.ca_bundle},
                "rules": WEBHOOK_RULES,
                "failurePolicy": "Ignore",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "timeoutSeconds": 5,
                "namespaceSelector": {"matchExpressions": [{
                    "key": "kubernetes.io/metadata.name", "operator": "NotIn",
                    "values": ["kube-system", "kubegap-system"]}]},
            }],
        }
        self.kubectl("apply", "-f", "-", input=json.dumps(config))
        # The canary: a GPU pod sent with a server dry-run (never stored) in its own
        # namespace, so it is told apart from the user's pods in the audit log. Its image is
        # not an operating system image: one of those without a command runs nothing, a
        # placeholder that gets no checks (policy placeholderCommands).
        self.kubectl("create", "namespace", CANARY_NAMESPACE, check=False)
        canary = {"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": "canary", "namespace": CANARY_NAMESPACE},
                  "spec": {"containers": [{"name": "c", "image": "example.com/canary/train:1",
                                           "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}

        # The API server picks the configuration up through an informer: wait until a
        # dry-run create of a GPU pod comes back with our warnings.
        def in_use():
            r = self.kubectl("apply", "--dry-run=server", "-f", "-", input=json.dumps(canary), check=False)
            return "kubegap/" in r.stderr

        self._wait("the API server to call the webhook", in_use, 60)
        log("the API server calls the webhook")

    # --- audit log -------------------------------------------------------------------

    def audit_events(self):
        events = []
        with open(self.audit_log) as f:
            for line in f:
                with contextlib.suppress(json.JSONDecodeError):
                    events.append(json.loads(line))
        return events

    def pod_create_events(self, namespace, name=None):
        """ResponseComplete audit events of Pod creates in `namespace` (and `name`)."""
        out = []
        for e in self.audit_events():
            ref = e.get("objectRef", {})
            if (e.get("stage") == "ResponseComplete" and e.get("verb") == "create"
                    and ref.get("resource") == "pods" and not ref.get("subresource")
                    and ref.get("namespace") == namespace and (name is None or ref.get("name") == name)):
                out.append(e)
        return out


def demo_steps(examples):
    """The demo's kubectl steps, in an order that works on a fresh control plane: each
    (command, what it prints). tests/e2e/test_demo.py runs them and checks the warnings."""
    return [
        (f"kubectl apply --dry-run=server -f {examples}/training-pod-gaps.yaml",
         "four kubegap warnings, one per check; nothing is stored"),
        (f"kubectl apply -f {examples}/training-pod-gaps.yaml",
         "the same four; the pod is stored, its audit event carries them"),
        (f"kubectl apply --dry-run=server -f {examples}/training-pod-good.yaml",
         "one: disruption-budget (no PodDisruptionBudget selects it yet)"),
        (f"kubectl apply -f {examples}/pdb-good.yaml",
         "a PodDisruptionBudget for app=llm-pretrain-good"),
        (f"kubectl apply -f {examples}/training-pod-good.yaml",
         "none: all four checks pass"),
        (f"kubectl apply -f {examples}/crds-minimal.yaml",
         "the PyTorchJob and JobSet kinds (schema-less CRDs)"),
        (f"kubectl apply -f {examples}/pytorchjob-gaps.yaml",
         "warnings that name the replicas"),
    ]


def demo_message(cp, kubectl, examples):
    steps = "\n".join(f"  {command}\n      # {prints}" for command, prints in demo_steps(examples))
    return f"""
A local kube-apiserver (https://127.0.0.1:{cp.apiserver_port}) is calling kubegap-webhook
(https://127.0.0.1:{cp.webhook_port}/validate, metrics http://127.0.0.1:{cp.webhook_health_port}/metrics),
which watches PodDisruptionBudgets and Nodes there. No scheduler or kubelet runs: pods are
stored, never started. In another terminal:

  export KUBECONFIG={cp.kubeconfig}
  alias kubectl={kubectl}
{steps}

The audit log ({cp.audit_log}) holds the same findings as annotations:

  jq -c 'select(.objectRef.resource=="pods" and .verb=="create" and .stage=="ResponseComplete") | {{pod: .objectRef.name, annotations}}' {cp.audit_log}

Its pod {CANARY_NAMESPACE}/canary is the demo's own start-up probe: a server dry-run, never
stored, sent until the API server was calling the webhook.

Ctrl-C stops everything; the audit log is kept.
"""


def demo(bin_dir, webhook_binary, source_dir):
    """`./dev demo`: a local control plane with the webhook, until Ctrl-C. The webhook
    watches the control plane (--kubeconfig), so disruption-budget is evaluated too."""
    audit_log = os.path.abspath(os.environ.get("KUBEGAP_DEMO_AUDIT_LOG") or
                                os.path.join(source_dir, "build", "demo-audit.log"))
    os.makedirs(os.path.dirname(audit_log), exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        os.remove(audit_log)  # one demo's events per file
    cp = ControlPlane(bin_dir, webhook_binary, source_dir, audit_log=audit_log)
    cp.webhook_args = lambda: ("--kubeconfig", cp.kubeconfig)
    try:
        with cp:
            examples = os.path.join(source_dir, "manifests", "examples")
            print(demo_message(cp, os.path.join(bin_dir, "kubectl"), examples), flush=True)
            while all(p.poll() is None for p in cp.processes.values()):
                time.sleep(1)
            log("a process of the control plane exited; stopping")
    finally:
        # Ctrl-C and SIGTERM arrive as SystemExit from the control plane's handler.
        if os.path.exists(audit_log):
            print(f"stopped; the audit log is kept in {audit_log}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] != "demo":
        sys.exit("usage: controlplane.py demo BIN_DIR WEBHOOK_BINARY SOURCE_DIR")
    demo(*sys.argv[2:])
