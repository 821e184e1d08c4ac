"""End to end for `kubegap-webhook mcp` (issue 28) on a real kube-apiserver, as the user
`kubegap-mcp` bound only to the ClusterRole of manifests/mcp/clusterrole.yaml (applied
as the file ships, with its example ClusterRoleBinding):

  - the identity: a static token of the API server (--token-auth-file, as the harness's
    admin) for the user kubegap-mcp, written to a kubeconfig of its own with two
    contexts: "e2e" (the API server) and "slow" (the same API server behind a TCP relay
    that holds each chunk the client sends for RELAY_DELAY seconds);
  - the MCP server is started with `mcp --kubeconfig THAT` and spoken to in raw JSON-RPC
    lines (the standard library only; every read bounded);
  - scan_cluster's structuredContent equals `scan -o json --kubeconfig THAT` (without
    its additions omittedObjects, summary.byCheck and summary.objectsWithFindings, which
    are checked against the objects), with no error (the role is enough), for the whole
    cluster, one namespace, a kinds filter and a limit (the first `limit` objects);
  - explain of one object from the cluster (a PyTorchJob, a TrainJob, a cluster-scoped
    ClusterTrainingRuntime) gives the classes scan gives it and the provenance `check
    --explain` gives the same objects exported with kubectl; an object that is not there
    is an isError result naming it and the namespace;
  - the API server's audit log (the harness's policy: every request at level Metadata):
    every request of kubegap-mcp is a get, list or watch (the counts are printed, the MCP
    server's own and with the `scan` runs), at least one list, none refused; each was
    allowed by the ClusterRole alone (a SubjectAccessReview for the user without its
    groups, so not through the default discovery roles), and writes, Secrets, watch and
    subresources are not; the role grants get/list on exactly the webhook's kinds, Pods,
    PDBs and Nodes, and nothing else binds the user;
  - cancellation: a scan through the slow context, cancelled (notifications/cancelled)
    once its first request reached the API server, gets no response; a ping answers at
    once; the user's requests stop (none from a second after the cancel, fewer in all
    than the full scan through the same relay made); the server serves on and exits 0 on
    EOF, with no sanitizer report.

    python3 tests/e2e/test_mcp.py BIN_DIR WEBHOOK_BINARY SOURCE_DIR
"""

import collections
import copy
import json
import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controlplane import ADMIN_TOKEN, WEBHOOK_RULES, ControlPlane, log, wait_for  # noqa: E402
from test_scan import apply_scan_objects  # noqa: E402
from test_trainer import runtime, trainjob  # noqa: E402
from test_workloads import CRDS, crd  # noqa: E402

BIN_DIR, WEBHOOK, SOURCE = sys.argv[1:4] if len(sys.argv) >= 4 else (None, None, None)
CP = None
SERVER = None   # the MCP server (McpServer), one session for every test
RELAY = None    # the slow relay of the "slow" context
NS, OTHER_NS = "e2e-mcp", "e2e-mcp-other"
MCP_USER = "kubegap-mcp"
MCP_TOKEN = "kubegap-e2e-mcp-token"
MCP_KUBECONFIG = None
ROLE = "kubegap-mcp-reader"
RELAY_DELAY = 0.15           # seconds each client->API server chunk is held in the relay
CALL_TIMEOUT = 120           # one JSON-RPC request (the ASan build is slow)
QUIET_AFTER_CANCEL = 1.0     # requests already sent may land this long after the cancel
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                     "ERROR: UndefinedBehaviorSanitizer", "WARNING: ThreadSanitizer")
# Installed here: PyTorchJob and JobSet (as test_scan), and Kubeflow Trainer's kinds
# (schema-less, so nothing is downloaded) so that the runtimes are listed. Not Ray's nor
# Volcano's: kinds of the table that are not served, skipped without a request.
INSTALLED = [c for c in CRDS if c[2] in ("PyTorchJob", "JobSet")]
TRAINER = [("trainer.kubeflow.org", ["v1alpha1"], kind, plural, scope) for kind, plural, scope in (
    ("TrainJob", "trainjobs", "Namespaced"), ("TrainingRuntime", "trainingruntimes", "Namespaced"),
    ("ClusterTrainingRuntime", "clustertrainingruntimes", "Cluster"))]
CLUSTER_SCOPED = {"ClusterTrainingRuntime"}  # listed whatever the namespace
ADDITIONS = ("omittedObjects",)
SUMMARY_ADDITIONS = ("byCheck", "objectsWithFindings")


def note(message):
    print(f"    checked: {message}", file=sys.stderr, flush=True)


# --- the control plane, with the user kubegap-mcp -----------------------------------

class McpControlPlane(ControlPlane):
    """The harness's control plane whose API server also knows MCP_TOKEN as the user
    kubegap-mcp (no groups of its own). A small extension written here, not in
    controlplane.py: the token file is written by _start_apiserver, and this adds a line
    before the API server reads it (also on a retry on another port)."""

    def _spawn_apiserver(self, port, cert_dir, tokens, *rest):
        with open(tokens) as f:
            known = f.read()
        if MCP_TOKEN not in known:
            with open(tokens, "a") as f:
                f.write(f"{MCP_TOKEN},{MCP_USER},{MCP_USER}-uid\n")
        super()._spawn_apiserver(port, cert_dir, tokens, *rest)


class SlowRelay:
    """A TCP relay to the API server that holds each chunk the client sends for `delay`
    seconds (TLS passes through untouched: the API server's certificate is for
    127.0.0.1, whatever the port). Every request of a scan through it takes `delay` more,
    so a scan lasts long enough to be cancelled in the middle."""

    def __init__(self, upstream_port, delay):
        self.upstream_port, self.delay = upstream_port, delay
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client):
        try:
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=10)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        back = threading.Thread(target=self._pump, args=(upstream, client, 0), daemon=True)
        back.start()
        self._pump(client, upstream, self.delay)
        back.join(60)
        client.close()
        upstream.close()

    @staticmethod
    def _pump(src, dst, delay):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if delay:
                    time.sleep(delay)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
                try:
                    s.shutdown(how)
                except OSError:
                    pass

    def close(self):
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()


def write_mcp_kubeconfig(path, relay_port):
    """The admin kubeconfig's cluster (its CA), with the user kubegap-mcp's token, and the
    contexts "e2e" (current) and "slow" (through the relay)."""
    with open(CP.kubeconfig) as f:
        admin = json.load(f)
    cluster = admin["clusters"][0]["cluster"]
    slow = dict(cluster, server=f"https://127.0.0.1:{relay_port}")
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "e2e",
        "clusters": [{"name": "e2e", "cluster": cluster}, {"name": "slow", "cluster": slow}],
        "users": [{"name": MCP_USER, "user": {"token": MCP_TOKEN}}],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": MCP_USER}},
                     {"name": "slow", "context": {"cluster": "slow", "user": MCP_USER}}],
    }
    with open(path, "w") as f:
        json.dump(config, f)


def admin_post(path, obj):
    """POST as the admin (urllib; verified TLS); the decoded answer."""
    request = urllib.request.Request(f"https://127.0.0.1:{CP.apiserver_port}{path}", data=json.dumps(obj).encode(),
                                     headers={"Authorization": f"Bearer {ADMIN_TOKEN}",
                                              "Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, context=CP.apiserver_ssl_context(), timeout=30) as r:
        return json.load(r)


def allowed(user, attributes):
    """A SubjectAccessReview for `user` with no groups (so only what is bound to the user
    itself counts, not system:authenticated's discovery roles): (allowed, reason)."""
    spec = {"user": user, **attributes}
    review = admin_post("/apis/authorization.k8s.io/v1/subjectaccessreviews",
                        {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec})
    status = review.get("status", {})
    return bool(status.get("allowed")), status.get("reason", "") or status.get("evaluationError", "")


def mcp_events():
    """The audit log's ResponseComplete events of requests made as kubegap-mcp (the
    MCP server's and the `scan` runs it is compared with). The log grows fast with the
    API server's own requests: lines that do not name the user are not decoded."""
    out = []
    with open(CP.audit_log) as f:
        for line in f:
            if f'"username":"{MCP_USER}"' not in line:
                continue
            try:
                e = json.loads(line)
            except json.JSONDecodeError:
                continue
            if e.get("user", {}).get("username") == MCP_USER and e.get("stage") == "ResponseComplete":
                out.append(e)
    return out


SERVER_EVENTS = []  # the audit events of the MCP server's tool calls (the CLI's are not in it)


def server_call(tool, arguments):
    """A tool call of the MCP server; the user's audit events meanwhile are its own (the
    test makes no other request as kubegap-mcp while it waits)."""
    before = len(mcp_events())
    result = SERVER.call(tool, arguments)
    SERVER_EVENTS.extend(mcp_events()[before:])
    return result


def apply(obj, namespace=NS):
    return json.loads(CP.kubectl("apply", "-n", namespace, "-o", "json", "-f", "-", input=json.dumps(obj)).stdout)


# --- the MCP server over stdio -------------------------------------------------------

class McpServer:
    """`WEBHOOK mcp ...` with JSON-RPC lines on its stdin and stdout; stderr to a file.
    Every line it writes must be a JSON-RPC message; every wait is bounded."""

    def __init__(self, args, stderr_path):
        self.stderr_path = stderr_path
        with open(stderr_path, "wb") as err:
            self.proc = subprocess.Popen([WEBHOOK, "mcp", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=err, cwd=SOURCE, start_new_session=True)
        self.inbox = queue.Queue()
        self.early = []       # messages read while waiting for another id
        self.not_json = []    # stdout lines that are not JSON-RPC (must stay empty)
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in self.proc.stdout:
            try:
                message = json.loads(raw)
                if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
                    raise ValueError("not a JSON-RPC 2.0 message")
            except ValueError:
                self.not_json.append(raw)
                continue
            self.inbox.put(message)
        self.inbox.put(None)  # EOF

    def stderr(self):
        with open(self.stderr_path, errors="replace") as f:
            return f.read()

    def excerpt(self):
        """Its stderr for a failure message: from the first sanitizer report, else the tail."""
        text = self.stderr()
        starts = [text.find(m) for m in SANITIZER_MARKERS if m in text]
        if starts:
            start = text.rfind("\n", 0, min(starts)) + 1
            return text[start:start + 8000]
        return text[-3000:]

    def send(self, message):
        try:
            self.proc.stdin.write((json.dumps(message, separators=(",", ":")) + "\n").encode())
            self.proc.stdin.flush()
        except OSError as e:
            raise AssertionError(f"the MCP server does not read its stdin ({e}; exit {self.proc.poll()}):\n"
                                 f"{self.excerpt()}") from None

    def start(self, method, params=None):
        """Sends a request; its id."""
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.next_id

    def notify(self, method, params=None):
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def collect(self, seconds):
        """Every message that arrives within `seconds` (and those read before)."""
        out, self.early = self.early, []
        deadline = time.monotonic() + seconds
        while (message := self._next(deadline)) is not None:
            out.append(message)
        return out

    def _next(self, deadline):
        """The next message before `deadline`, or None when none came."""
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        try:
            message = self.inbox.get(timeout=left)
        except queue.Empty:
            return None
        if message is None:
            raise AssertionError(f"the MCP server closed stdout (exit {self.proc.poll()}):\n{self.excerpt()}")
        return message

    def wait(self, request_id, timeout=CALL_TIMEOUT):
        """The response to `request_id` (others are kept for later)."""
        for i, message in enumerate(self.early):
            if message.get("id") == request_id and "method" not in message:
                return self.early.pop(i)
        deadline = time.monotonic() + timeout
        while (message := self._next(deadline)) is not None:
            if message.get("id") == request_id and "method" not in message:
                return message
            self.early.append(message)
        raise AssertionError(f"no response to request {request_id} within {timeout} s:\n{self.excerpt()}")

    def request(self, method, params=None, timeout=CALL_TIMEOUT):
        return self.wait(self.start(method, params), timeout)

    def call(self, tool, arguments, timeout=CALL_TIMEOUT):
        """tools/call; the result (a JSON-RPC error fails)."""
        response = self.request("tools/call", {"name": tool, "arguments": arguments}, timeout)
        if "error" in response:
            raise AssertionError(f"tools/call {tool} {arguments}: JSON-RPC error {response['error']}")
        return response["result"]

    def close(self, timeout=30):
        """EOF on stdin; the exit code (killed after `timeout` s: then None)."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            code = None
        self.reader.join(10)
        self.proc.stdout.close()
        return code


# --- comparisons ---------------------------------------------------------------------

def cli_scan(*flags):
    r = subprocess.run([WEBHOOK, "scan", "--kubeconfig", MCP_KUBECONFIG, "-o", "json", *flags],
                       capture_output=True, text=True, timeout=CALL_TIMEOUT)
    if r.returncode != 0:
        raise AssertionError(f"scan {' '.join(flags)}: exit {r.returncode}\n{r.stderr}")
    return json.loads(r.stdout)


def without_additions(structured):
    """scan_cluster's structuredContent without what it adds to `scan -o json`."""
    out = copy.deepcopy(structured)
    for key in ADDITIONS:
        out.pop(key, None)
    for key in SUMMARY_ADDITIONS:
        out["summary"].pop(key, None)
    return out


def object_keys(report):
    return [(o["kind"], o["namespace"], o["name"]) for o in report["objects"]]


def check_explain_provenance(resources):
    """{(kind, name): the "from ..." lines} of `check --explain` on `resources` of NS (and
    the cluster-scoped ones), exported by the admin with kubectl."""
    path = os.path.join(CP.dir, "explain-export.json")
    with open(path, "w") as f:
        f.write(CP.kubectl("get", "-n", NS, resources, "-o", "json").stdout)
    r = subprocess.run([WEBHOOK, "check", "--explain", path], capture_output=True, text=True, timeout=CALL_TIMEOUT)
    if r.returncode != 0:
        raise AssertionError(f"check --explain: exit {r.returncode}\n{r.stderr}")
    out, current = {}, None
    for line in r.stdout.splitlines():
        m = re.match(r"^(\S+) (?:[^/\s]+/)?(\S+) \(", line)
        if m:
            current = out.setdefault((m.group(1), m.group(2)), [])
        elif current is not None and line.startswith("  from "):
            current.append(line[len("  from "):])
        elif not line.startswith(" "):
            current = None
    return out


def requests_of(report):
    """M of scan's note "listed N object(s) in M API request(s), ..."."""
    for n in report.get("notes", []):
        m = re.search(r"listed \d+ object\(s\) in (\d+) API request\(s\)", n)
        if m:
            return int(m.group(1))
    return None


def setUpModule():
    global CP, SERVER, RELAY, MCP_KUBECONFIG
    CP = McpControlPlane(BIN_DIR, WEBHOOK, SOURCE).__enter__()
    try:
        crds = [crd(*c) for c in INSTALLED]
        for group, versions, kind, plural, scope in TRAINER:
            definition = crd(group, versions, kind, plural)
            definition["spec"]["scope"] = scope
            crds.append(definition)
        CP.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": crds}))
        for c in INSTALLED + TRAINER:
            CP.kubectl("wait", "--for=condition=Established", f"crd/{c[3]}.{c[0]}", "--timeout=60s")
        for ns in (NS, OTHER_NS):
            CP.kubectl("create", "namespace", ns)
        # The cluster view: two Nodes in two zones, a PDB for good-pod only.
        CP.add_zone_nodes(("zone-a", "zone-b"))
        apply({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "good"},
               "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "good-pod"}}}})
        # What runs: test_scan's objects, and a TrainJob on a runtime that checkpoints to
        # emptyDir (judged through the runtime: the runtimes must be listable).
        apply_scan_objects(apply, OTHER_NS)
        CP.kubectl("apply", "-f", "-", input=json.dumps(runtime("torch-emptydir", "ckpt")))
        apply(trainjob("train-gaps", "torch-emptydir"))
        # The user: bound by the shipped file only (the role and its example binding).
        CP.kubectl("apply", "-f", os.path.join(SOURCE, "manifests", "mcp", "clusterrole.yaml"))
        RELAY = SlowRelay(CP.apiserver_port, RELAY_DELAY)
        MCP_KUBECONFIG = os.path.join(CP.dir, "kubegap-mcp.kubeconfig")
        write_mcp_kubeconfig(MCP_KUBECONFIG, RELAY.port)
        SERVER = McpServer(["--kubeconfig", MCP_KUBECONFIG, "--log-level", "info"], os.path.join(CP.dir, "mcp.stderr"))
        response = SERVER.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                 "clientInfo": {"name": "kubegap-e2e", "version": "0"}}, 60)
        if response.get("result", {}).get("protocolVersion") != "2025-11-25":
            raise AssertionError(f"initialize: {response}")
        SERVER.notify("notifications/initialized")
        log(f"MCP server up as {MCP_USER} (kubeconfig {MCP_KUBECONFIG}, slow relay on {RELAY.port})")
    except BaseException:
        tearDownModule()
        raise


def tearDownModule():
    if SERVER is not None and SERVER.proc.poll() is None:
        SERVER.proc.kill()
        SERVER.close()
    if RELAY is not None:
        RELAY.close()
    if CP is not None:
        CP.stop()


class Mcp(unittest.TestCase):
    # In order: the audit-log test counts what the tests before it made.
    full = None  # the whole cluster, as `scan -o json` (test_2)

    def assert_scan_equals(self, structured, cli, limit=None):
        got = without_additions(structured)
        want = copy.deepcopy(cli)
        if limit is not None:
            want["objects"] = want["objects"][:limit]
        self.assertEqual(got, want)
        self.assertEqual(structured["omittedObjects"], len(cli["objects"]) - len(want["objects"]))
        # The additions, from the whole scan's objects.
        by_check = collections.Counter(f["check"] for o in cli["objects"] for f in o["findings"]
                                       if f["outcome"] == "finding")
        with_findings = sum(any(f["outcome"] == "finding" for f in o["findings"]) for o in cli["objects"])
        self.assertEqual(structured["summary"]["byCheck"], dict(by_check))
        self.assertEqual(structured["summary"]["objectsWithFindings"], with_findings)

    def scan_result(self, arguments):
        result = server_call("scan_cluster", arguments)
        self.assertFalse(result.get("isError"), result["content"][0]["text"])
        self.assertEqual(result["content"][0]["type"], "text")
        return result["structuredContent"]

    def test_1_tools_are_read_only(self):
        tools = {t["name"]: t for t in SERVER.request("tools/list")["result"]["tools"]}
        self.assertLessEqual({"scan_cluster", "explain"}, set(tools))
        for name, tool in tools.items():
            self.assertTrue(tool["annotations"]["readOnlyHint"], name)
            self.assertFalse(tool["annotations"]["destructiveHint"], name)
        note(f"tools/list: {sorted(tools)}, every one readOnlyHint and not destructive")

    def test_2_scan_cluster_equals_scan_json(self):
        cli = cli_scan()
        Mcp.full = cli
        self.assertEqual(cli["errors"], [], "scan as kubegap-mcp: the ClusterRole is not enough")
        structured = self.scan_result({})
        self.assertEqual(structured["errors"], [])
        self.assertEqual(structured["summary"]["errors"], 0)
        self.assert_scan_equals(structured, cli)
        keys = object_keys(cli)
        for key in (("PyTorchJob", NS, "torch-gaps"), ("JobSet", NS, "jobset-good"), ("Job", NS, "batch-gaps"),
                    ("Pod", NS, "bare-gaps"), ("Pod", NS, "good-pod"), ("Pod", OTHER_NS, "elsewhere"),
                    ("TrainJob", NS, "train-gaps")):
            self.assertIn(key, keys)
        # (A cluster-scoped object's namespace in scan's report is not asserted: scan says "default".)
        self.assertIn(("ClusterTrainingRuntime", "torch-emptydir"), [(k, n) for k, _, n in keys])
        self.assertNotIn(("Pod", NS, "torch-gaps-worker-0"), keys)
        self.assertEqual(cli["summary"]["podDisruptionBudgets"], 1)
        self.assertEqual(cli["summary"]["nodes"], 2)
        train = next(o for o in cli["objects"] if o["kind"] == "TrainJob")
        self.assertIn("checkpoint-volume", [f["check"] for f in train["findings"] if f["outcome"] == "finding"],
                      "the TrainJob is judged through its runtime's emptyDir")
        note(f"scan_cluster {{}} == scan -o json as {MCP_USER}: {len(keys)} objects, "
             f"{cli['summary']['findings']} findings, no errors; PDBs, Nodes and the Trainer runtime were read")

    def test_3_namespace(self):
        cli = cli_scan("-n", NS)
        self.assertEqual(cli["errors"], [])
        structured = self.scan_result({"namespace": NS})
        self.assert_scan_equals(structured, cli)
        namespaces = {o["namespace"] for o in cli["objects"] if o["kind"] not in CLUSTER_SCOPED}
        self.assertEqual(namespaces, {NS}, "namespaced objects of the namespace only")
        other = self.scan_result({"namespace": OTHER_NS})
        self.assert_scan_equals(other, cli_scan("-n", OTHER_NS))
        self.assertIn(("Pod", OTHER_NS, "elsewhere"), object_keys(other))
        note(f"scan_cluster {{namespace}} == scan -n for {NS} ({len(cli['objects'])} objects) and {OTHER_NS}")

    def test_4_kinds(self):
        # scan has no kinds flag: the whole scan's objects of those kinds. PyTorchJob is
        # among them, so its pods are under it in both.
        for kinds in (["PyTorchJob", "Pod"], ["TrainJob"], ["JobSet", "Job"]):
            structured = self.scan_result({"kinds": kinds})
            self.assertEqual(structured["errors"], [])
            want = [o for o in Mcp.full["objects"] if o["kind"] in kinds]
            self.assertTrue(want, kinds)
            self.assertEqual(structured["objects"], want, kinds)
            self.assertEqual(structured["summary"]["objects"], len(want))
            self.assertEqual(structured["omittedObjects"], 0)
            self.assertEqual(structured["summary"]["findings"],
                             sum(f["outcome"] == "finding" for o in want for f in o["findings"]))
            note(f"scan_cluster {{kinds: {kinds}}}: the {len(want)} objects of scan -o json of those kinds, "
                 "same findings")

    def test_5_limit(self):
        total = len(Mcp.full["objects"])
        self.assertGreater(total, 2)
        structured = self.scan_result({"limit": 2})
        self.assert_scan_equals(structured, Mcp.full, limit=2)
        self.assertEqual(len(structured["objects"]), 2)
        self.assertEqual(structured["omittedObjects"], total - 2)
        self.assertEqual(structured["summary"]["objects"], Mcp.full["summary"]["objects"])
        note(f"scan_cluster {{limit: 2}}: the first 2 of scan's {total} objects, omittedObjects {total - 2}, "
             "summary of the whole scan")

    def test_6_explain(self):
        cli = {(o["kind"], o["name"]): o for o in Mcp.full["objects"]}
        explained = check_explain_provenance(
            "pytorchjobs.kubeflow.org,trainjobs.trainer.kubeflow.org,clustertrainingruntimes.trainer.kubeflow.org")
        # Two namespaced objects, and a cluster-scoped one named without a namespace.
        for kind, namespace, name in (("PyTorchJob", NS, "torch-gaps"), ("TrainJob", NS, "train-gaps"),
                                      ("ClusterTrainingRuntime", None, "torch-emptydir")):
            arguments = {"kind": kind, "name": name, **({"namespace": namespace} if namespace else {})}
            with self.subTest(**arguments):
                self.explain_one(arguments, cli[(kind, name)], explained[(kind, name)])

    def explain_one(self, arguments, want, want_provenance):
        kind, name = arguments["kind"], arguments["name"]
        result = server_call("explain", arguments)
        self.assertFalse(result.get("isError"), result["content"][0]["text"])
        structured = result["structuredContent"]
        self.assertEqual(structured["errors"], [])
        self.assertEqual(len(structured["objects"]), 1, structured["objects"])
        got = structured["objects"][0]
        for field in ("file", "line", "apiVersion", "kind", "namespace", "name", "classes"):
            self.assertEqual(got[field], want[field], f"{kind} {name}: {field}")
        self.assertTrue(all(isinstance(p, str) for p in got["provenance"]), got)
        # The provenance `check --explain` gives the same objects (exported with kubectl):
        # for the TrainJob, where each part of the JobSet it is judged as came from.
        if kind == "TrainJob":
            self.assertTrue(want_provenance, "check --explain gives the TrainJob's provenance")
        self.assertEqual(got["provenance"], want_provenance, f"{kind} {name}: provenance")
        self.assertEqual(result["content"][0]["text"], structured["text"])
        self.assertIn(name, structured["text"])
        for line in want_provenance:
            self.assertIn(f"  from {line}\n", structured["text"])
        note(f"explain {arguments}: classes {[c['class'] for c in got['classes']]} as scan's, "
             f"{len(got['provenance'])} provenance lines")

    def test_6_explain_of_a_missing_object(self):
        missing = server_call("explain", {"kind": "PyTorchJob", "namespace": NS, "name": "no-such-job"})
        self.assertTrue(missing["isError"])
        self.assertNotIn("structuredContent", missing)
        text = missing["content"][0]["text"]
        self.assertIn('"no-such-job"', text)
        self.assertIn(f'namespace "{NS}"', text, "the message names the namespace it looked in")
        note(f"explain of an object that is not there: isError, naming it and its namespace ({text!r})")

    def test_7_audit_only_reads_and_the_role_alone_allows_them(self):
        events = mcp_events()
        self.assertTrue(SERVER_EVENTS, f"no audit event of the MCP server (user {MCP_USER})")
        for who, these in (("the MCP server", SERVER_EVENTS), (f"{MCP_USER} in all (with the scan runs)", events)):
            verbs = collections.Counter(e["verb"] for e in these)
            print(f"    audit: {len(these)} requests by {who}, verbs {dict(sorted(verbs.items()))}",
                  file=sys.stderr, flush=True)
            self.assertLessEqual(set(verbs), {"get", "list", "watch"}, verbs)
            self.assertGreaterEqual(verbs["list"], 1)
        failed = [(e["requestURI"], e.get("responseStatus", {}).get("code")) for e in events
                  if e.get("responseStatus", {}).get("code") != 200]
        self.assertEqual(failed, [], "every request of the user succeeded (none forbidden)")
        # Each distinct request, asked of the authorizer for the user alone (no groups):
        # the ClusterRole covers it without the default discovery roles.
        asked = {}
        for e in events:
            ref = e.get("objectRef")
            if ref:
                attributes = {"verb": e["verb"], "group": ref.get("apiGroup", ""), "version": ref.get("apiVersion", ""),
                              "resource": ref["resource"], "namespace": ref.get("namespace", "")}
                key = ("resource", *sorted(attributes.items()))
                asked[key] = {"resourceAttributes": attributes}
            else:
                path = e["requestURI"].split("?", 1)[0]
                asked[("path", path, e["verb"])] = {"nonResourceAttributes": {"path": path, "verb": e["verb"]}}
        denied = [(k, why) for k, spec in asked.items() for ok, why in [allowed(MCP_USER, spec)] if not ok]
        self.assertEqual(denied, [], "requests the ClusterRole alone does not allow")
        resources = sorted({(s["resourceAttributes"]["group"], s["resourceAttributes"]["resource"])
                            for s in asked.values() if "resourceAttributes" in s})
        paths = sorted({s["nonResourceAttributes"]["path"] for s in asked.values() if "nonResourceAttributes" in s})
        note(f"the ClusterRole alone allows all {len(asked)} distinct requests: resources {resources}, paths {paths}")
        # And not more: writes, Secrets, watch, subresources; and the review is not trivially yes.
        for spec in ({"verb": "create", "resource": "pods", "namespace": NS},
                     {"verb": "delete", "group": "batch", "resource": "jobs", "namespace": NS},
                     {"verb": "patch", "group": "kubeflow.org", "resource": "pytorchjobs", "namespace": NS},
                     {"verb": "list", "resource": "secrets"},
                     {"verb": "get", "resource": "configmaps", "namespace": NS},
                     {"verb": "watch", "resource": "pods"},
                     {"verb": "get", "resource": "pods", "subresource": "log", "namespace": NS},
                     {"verb": "create", "resource": "pods", "subresource": "exec", "namespace": NS}):
            self.assertFalse(allowed(MCP_USER, {"resourceAttributes": spec})[0], spec)
        self.assertFalse(allowed("someone-else", {"resourceAttributes": {"verb": "list", "resource": "pods"}})[0])
        note("not allowed: create/delete/patch, Secrets, ConfigMaps, watch, pods/log, pods/exec")
        # The user has no binding but the file's.
        bindings = []
        for kind in ("clusterrolebindings", "rolebindings"):
            for b in json.loads(CP.kubectl("get", kind, "-A", "-o", "json").stdout)["items"]:
                if any(s.get("kind") == "User" and s.get("name") == MCP_USER for s in b.get("subjects") or []):
                    bindings.append((b["kind"], b["metadata"]["name"], b["roleRef"]["name"]))
        self.assertEqual(bindings, [("ClusterRoleBinding", ROLE, ROLE)])
        # The role: get/list only; its resource rules are the webhook's kinds, Pods, PDBs and Nodes.
        role = json.loads(CP.kubectl("get", "clusterrole", ROLE, "-o", "json").stdout)
        granted = set()
        for rule in role["rules"]:
            if "nonResourceURLs" in rule:
                self.assertEqual(rule["verbs"], ["get"])
                continue
            self.assertEqual(sorted(rule["verbs"]), ["get", "list"], rule)
            self.assertNotIn("resourceNames", rule)
            granted |= {(g, r) for g in rule["apiGroups"] for r in rule["resources"]}
        want = {(g, r) for rule in WEBHOOK_RULES for g in rule["apiGroups"] for r in rule["resources"]}
        want |= {("", "pods"), ("", "nodes"), ("policy", "poddisruptionbudgets")}
        self.assertEqual(granted, want)
        note(f"{ROLE}: get/list on exactly the webhook's kinds, Pods, PDBs and Nodes; bound to {MCP_USER} only")

    def test_8_cancel_stops_the_scan(self):
        # A full scan through the slow relay: how many requests and how long.
        before = len(mcp_events())
        started = time.monotonic()
        full = self.scan_result({"context": "slow"})
        took = time.monotonic() - started
        full_requests = len(mcp_events()) - before
        self.assertEqual(without_additions(full), Mcp.full, "the slow context reaches the same cluster")
        self.assertEqual(requests_of(full), full_requests, "scan's own count of its requests")
        self.assertGreater(took, 2.0, f"the slow scan took {took:.1f} s: too fast to cancel in the middle")
        note(f"scan_cluster {{context: slow}}: {full_requests} requests in {took:.1f} s, the same report")

        # The same scan, cancelled once its first request reached the API server.
        before = len(mcp_events())
        call = SERVER.start("tools/call", {"name": "scan_cluster", "arguments": {"context": "slow"}})
        wait_for("the cancelled scan's first request", lambda: len(mcp_events()) > before, 30, 0.05)
        SERVER.notify("notifications/cancelled", {"requestId": call, "reason": "e2e: cancelled by the test"})
        cancelled_at = time.monotonic()
        at_cancel = len(mcp_events()) - before
        pong = SERVER.request("ping", timeout=5)
        self.assertEqual(pong.get("result"), {}, pong)
        ping_took = time.monotonic() - cancelled_at
        time.sleep(max(0.0, cancelled_at + QUIET_AFTER_CANCEL - time.monotonic()))
        settled = len(mcp_events()) - before
        # Listen for longer than the whole scan took: no response to the cancelled call.
        listen = max(3.0, took + 2.0)
        arrived = SERVER.collect(listen)
        later = len(mcp_events()) - before
        self.assertEqual([m for m in arrived if m.get("id") == call], [], "a response to the cancelled call")
        self.assertEqual(later, settled, f"requests went on after the cancel ({settled} at +{QUIET_AFTER_CANCEL} s, "
                                         f"{later} at +{QUIET_AFTER_CANCEL + listen:.1f} s)")
        self.assertLess(settled, full_requests, "the cancelled scan made as many requests as a full one")
        cancelled_events = mcp_events()[before:]
        SERVER_EVENTS.extend(cancelled_events)
        self.assertLessEqual({e["verb"] for e in cancelled_events}, {"get", "list"})
        note(f"cancelled after its first request: {at_cancel} requests at the cancel, {settled} in all "
             f"(a full scan makes {full_requests}), none from +{QUIET_AFTER_CANCEL} s to "
             f"+{QUIET_AFTER_CANCEL + listen:.1f} s; ping answered in {ping_took:.2f} s; no response to id {call}")

        # The server serves on: a scan answers as before.
        again = self.scan_result({"namespace": OTHER_NS})
        self.assertIn(("Pod", OTHER_NS, "elsewhere"), object_keys(again))
        note("after the cancel the server serves on (scan_cluster answers)")

    def test_9_exits_0_on_eof(self):
        code = SERVER.close()
        self.assertEqual(code, 0, SERVER.excerpt())
        stderr = SERVER.stderr()
        self.assertFalse([m for m in SANITIZER_MARKERS if m in stderr], SERVER.excerpt())
        self.assertEqual(SERVER.not_json, [], "stdout carried something other than JSON-RPC")
        self.assertIn("cancelled", stderr, "the cancel was logged (--log-level info)")
        note("EOF: exit 0, no sanitizer report, nothing but JSON-RPC on stdout")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
