#!/usr/bin/env python3
"""`kubegap-webhook mcp` driven by the official MCP Python SDK (tests/mcp/requirements.txt).

    VENV/bin/python tests/mcp/sdk_test.py BINARY SOURCE_DIR

VENV is made by tests/mcp/sdk-venv.sh (ctest: the mcp_sdk_venv fixture). The server runs
with SOURCE_DIR as its working directory, so relative paths mean the same to it and to the
CLI runs it is compared with. Python 3.11, the SDK and the standard library only.

The same suite runs in each protocol era the SDK speaks:
  modern    mode="auto": the SDK probes server/discover (2026-07-28) and must stay modern
  legacy    mode="legacy": the initialize handshake at the SDK's offer, 2025-11-25
  legacy    the initialize handshake offering 2025-06-18 (the SDK's offer patched)
and asserts the negotiated version each time. The suite: the handshake results
(serverInfo, capabilities; on 2026-07-28 the raw server/discover result and -32022);
tools/list (five tools, schemas, annotations), every tool called and its structuredContent
compared with the CLI on the same input (`check -o json`, `check --explain`, `cases -o
json`), the SDK's outputSchema validation shown to run (and to reject a wrong result);
resources (each case, the policy), templates, the prompt; argument errors as the SDK's
MCPError -32602 naming the field; eight calls in flight at once. Then, in sessions of their
own: scan_cluster and explain against an API server address nobody listens on, a missing
kubeconfig (by $KUBECONFIG and by --kubeconfig), an API server that accepts and never
answers (--request-timeout, and a call the client abandons: notifications/cancelled),
an unknown handshake version (the server's counter-offer) and the roots of a legacy client.
Every session must end with the server exiting 0 by itself on EOF, with nothing but
JSON-RPC on its stdout and no sanitizer report on its stderr.

Each step prints what it checked; the first failure prints "FAIL: ..." with the server's
stderr tail and exits 1 (KUBEGAP_MCP_KEEP_GOING=1: failed assertions are listed and the run
goes on, to see them all; still exit 1). Every await is bounded (the SDK's request timeout
CALL_TIMEOUT, and TOTAL_TIMEOUT for all). Private SDK names it relies on (pinned version):
ClientSession._tool_output_schemas/_tool_output_validators (validation), mcp.client.session.
LATEST_HANDSHAKE_VERSION (the initialize offer), mcp.client.stdio._stop_server_process/
_terminate_process_tree/PROCESS_TERMINATION_TIMEOUT (how the server exited).
"""

from __future__ import annotations

import copy
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
sys.path.insert(0, str(Path(__file__).resolve().parent))
from mcp_testlib import write_kubeconfig  # noqa: E402

REQUIREMENTS = Path(__file__).resolve().parent / "requirements.txt"

try:
    import anyio
    import mcp
    import mcp.client.session as sdk_session
    import mcp.client.stdio as sdk_stdio
    import mcp_types
    from mcp import Client, MCPError, StdioServerParameters
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client
except ImportError as e:  # not a skip: the mcp_sdk_venv fixture should have made it
    print(f"FAIL: the MCP Python SDK is not importable from {sys.executable} ({e}); make the "
          f"environment with tests/mcp/sdk-venv.sh VENV {REQUIREMENTS} and run this with VENV/bin/python")
    sys.exit(1)

CALL_TIMEOUT = 60.0      # one request (the ASan build is slow, a check of the fixtures is not)
CONNECT_TIMEOUT = 30.0   # spawn + handshake
TOTAL_TIMEOUT = 270.0    # everything (ctest gives the test 300 s)
EXIT_GRACE = 10.0        # the SDK's wait for the server to exit after stdin closes (2 s by default)
REFUSED_BOUND = 20.0     # a refused connection must be reported well within --request-timeout (120 s)
HANG_REQUEST_TIMEOUT = 3  # --request-timeout of the session whose API server never answers

MODERN = "2026-07-28"
HANDSHAKE_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
ALL_VERSIONS = HANDSHAKE_VERSIONS + [MODERN]
TOOLS = ["check_manifests", "scan_cluster", "explain", "list_checks", "get_case"]
OPEN_WORLD = {"scan_cluster": True, "explain": True, "check_manifests": False, "list_checks": False,
              "get_case": False}
PROMPT = "audit-training-reliability"
INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002
UNSUPPORTED_VERSION = -32022
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                     "ERROR: UndefinedBehaviorSanitizer", "WARNING: ThreadSanitizer")

# Fixtures (relative to SOURCE_DIR, the server's working directory).
MANIFESTS_DIR = "tests/fixtures/check/manifests"
MIXED_DIR = "tests/fixtures/check/mixed"
SINGLE = "tests/fixtures/check/single"
MISSING_PATH = "tests/fixtures/check/no-such-dir/train.yaml"


class Failure(Exception):
    pass


def fail(message: str) -> None:
    raise Failure(message)


def ok(message: str) -> None:
    print(f"  ok: {message}", flush=True)


# KUBEGAP_MCP_KEEP_GOING=1: a failed `expect` is printed and counted, and the run goes on
# (to see every disagreement at once); the exit code is still 1. Other failures stop the run.
KEEP_GOING = os.environ.get("KUBEGAP_MCP_KEEP_GOING") == "1"
FAILED: list[str] = []


def expect(condition: Any, message: str, detail: str = "") -> None:
    if not condition:
        if not KEEP_GOING:
            fail(message + (f"\n    {detail}" if detail else ""))
        FAILED.append(message)
        print(f"  FAIL (going on): {message}" + (f"\n    {detail}" if detail else ""), flush=True)
        return
    ok(message)


def short(value: Any, limit: int = 400) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def first_difference(a: Any, b: Any, path: str = "$") -> str | None:
    """Where two JSON values first differ, as `path: a != b`; None if equal."""
    if type(a) is not type(b):
        return f"{path}: {short(a, 200)} != {short(b, 200)}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a:
                return f"{path}.{key}: missing on the left, right has {short(b[key], 200)}"
            if key not in b:
                return f"{path}.{key}: missing on the right, left has {short(a[key], 200)}"
            if (d := first_difference(a[key], b[key], f"{path}.{key}")) is not None:
                return d
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b)):
            if (d := first_difference(x, y, f"{path}[{i}]")) is not None:
                return d
        if len(a) != len(b):
            return f"{path}: {len(a)} items != {len(b)} items"
        return None
    return None if a == b else f"{path}: {short(a, 200)} != {short(b, 200)}"


def expect_equal_json(got: Any, want: Any, message: str) -> None:
    d = first_difference(got, want)
    expect(d is None, message, f"first difference (MCP left, CLI right): {d}")


def uncut(report: Any, limit: int = 200) -> Any:
    """A tool's report (check_manifests, scan_cluster) as the CLI prints it: the additions of
    a report cut to `limit` objects are checked against the objects, then taken out."""
    if not isinstance(report, dict) or "omittedObjects" not in report:
        fail(f"a cut report has omittedObjects: {short(report)}")
    summary = report.get("summary") or {}
    total = summary.get("objects", 0)
    listed = report.get("objects") or []
    expect(len(listed) == min(total, limit) and report["omittedObjects"] == total - len(listed),
           f"the report lists min(objects, {limit}) = {len(listed)} and omittedObjects counts the rest",
           f"objects {total}, listed {len(listed)}, omittedObjects {report['omittedObjects']}")
    if total <= limit:  # every object is listed: the counts can be checked against them
        by_check: dict[str, int] = {}
        with_findings = 0
        for o in listed:
            found = [f["check"] for f in o.get("findings", []) if f.get("outcome") == "finding"]
            with_findings += 1 if found else 0
            for check in found:
                by_check[check] = by_check.get(check, 0) + 1
        expect(summary.get("byCheck") == by_check and summary.get("objectsWithFindings") == with_findings,
               "summary.byCheck and objectsWithFindings count the findings of the objects",
               f"byCheck {summary.get('byCheck')} vs {by_check}, objectsWithFindings "
               f"{summary.get('objectsWithFindings')} vs {with_findings}")
    out = json.loads(json.dumps(report))
    del out["omittedObjects"]
    out["summary"].pop("byCheck", None)
    out["summary"].pop("objectsWithFindings", None)
    return out


# --- the environment: CLI runs, kubeconfigs, sockets ------------------------------------

class World:
    def __init__(self, binary: str, src: str, tmp: str):
        self.binary = binary
        self.src = src
        self.tmp = Path(tmp)
        self.home = self.tmp / "home"
        self.home.mkdir()
        # Sanitizer settings reach the server (the SDK passes only a few variables on).
        self.passthrough = {k: v for k, v in os.environ.items()
                            if k.split("_", 1)[0] in ("ASAN", "UBSAN", "LSAN", "TSAN", "MSAN")
                            or k in ("LLVM_PROFILE_FILE", "TMPDIR")}
        self.cli_env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        self.cli_env.update(HOME=str(self.home), NO_COLOR="1")
        # An address nobody listens on: bound (so nobody else gets the port) but not listening,
        # so a connect is refused at once.
        self.refused_socket = socket.socket()
        self.refused_socket.bind(("127.0.0.1", 0))
        self.refused_port = self.refused_socket.getsockname()[1]
        self.refused_kubeconfig = self.write_kubeconfig("refused.yaml", self.refused_port)
        # An API server that accepts TCP connections (the kernel completes them into the
        # backlog) and never says a word: a TLS handshake with it never ends.
        self.hang_socket = socket.socket()
        self.hang_socket.bind(("127.0.0.1", 0))
        self.hang_socket.listen(64)
        self.hang_port = self.hang_socket.getsockname()[1]
        self.hang_kubeconfig = self.write_kubeconfig("hang.yaml", self.hang_port)
        self.missing_kubeconfig = str(self.tmp / "no-such-dir" / "kubeconfig.yaml")
        # A manifest outside SOURCE_DIR (outside the server's working directory).
        self.outside_manifest = self.tmp / "outside" / "job.yaml"
        self.outside_manifest.parent.mkdir()
        self.outside_manifest.write_text(Path(src, SINGLE, "job.yaml").read_text())

    def write_kubeconfig(self, name: str, port: int) -> str:
        return write_kubeconfig(self.tmp / name, port)

    def cli(self, *args: str, stdin: str | None = None, codes: tuple[int, ...] = (0,)) -> str:
        """Runs BINARY ARGS in SOURCE_DIR; returns stdout; fails on another exit code."""
        shown = " ".join([Path(self.binary).name, *args]) + (" < (text)" if stdin is not None else "")
        try:
            r = subprocess.run([self.binary, *args], cwd=self.src, env=self.cli_env, input=stdin,
                               capture_output=True, text=True, timeout=CALL_TIMEOUT)
        except subprocess.TimeoutExpired:
            fail(f"CLI `{shown}` did not finish within {CALL_TIMEOUT:.0f} s")
        if r.returncode not in codes:
            fail(f"CLI `{shown}` exited {r.returncode}, expected {codes}\n    stderr: {short(r.stderr, 1000)}")
        return r.stdout

    def cli_json(self, *args: str, stdin: str | None = None, codes: tuple[int, ...] = (0,)) -> Any:
        out = self.cli(*args, stdin=stdin, codes=codes)
        try:
            return json.loads(out)
        except json.JSONDecodeError as e:
            fail(f"CLI `{' '.join(args)}` printed no JSON ({e}): {short(out)}")


class Expected:
    """Everything the CLI says about the inputs the suite uses: computed once, up front."""

    def __init__(self, w: World):
        print("CLI: the expected answers", flush=True)
        self.version = w.cli("version").split()[-1]
        check_codes = (0, 1, 2)
        self.job_text = Path(w.src, SINGLE, "job.yaml").read_text()
        self.inline_text = Path(w.src, SINGLE, "nodes-and-pod.yaml").read_text()
        self.broken_text = self.job_text + "\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: [unbalanced\n"
        self.abs_path = str(Path(w.src, SINGLE, "job.yaml"))
        self.escaping_path = os.path.relpath(w.outside_manifest, w.src)
        self.both_path = f"{SINGLE}/job-and-pdb.yaml"
        self.check_paths = w.cli_json("check", "-o", "json", MANIFESTS_DIR, codes=check_codes)
        self.check_mixed = w.cli_json("check", "-o", "json", MIXED_DIR, codes=check_codes)
        self.check_abs = w.cli_json("check", "-o", "json", self.abs_path, codes=check_codes)
        self.check_missing = w.cli_json("check", "-o", "json", MISSING_PATH, codes=check_codes)
        self.check_outside = w.cli_json("check", "-o", "json", str(w.outside_manifest), codes=check_codes)
        self.check_inline = w.cli_json("check", "-o", "json", "-", stdin=self.inline_text, codes=check_codes)
        self.check_broken = w.cli_json("check", "-o", "json", "-", stdin=self.broken_text, codes=check_codes)
        self.check_both = w.cli_json("check", "-o", "json", "-", self.both_path, stdin=self.job_text,
                                     codes=check_codes)
        self.explain_text = w.cli("check", "--explain", "--color", "never", "-", stdin=self.inline_text,
                                  codes=check_codes)
        self.explain_broken_text = w.cli("check", "--explain", "--color", "never", "-",
                                         stdin=self.broken_text, codes=check_codes)
        self.cases = w.cli_json("cases", "-o", "json")
        self.case_ids = [c["id"] for c in self.cases["cases"]]
        self.check_ids = [c["id"] for c in self.cases["checks"]]
        self.case_json = {i: w.cli_json("cases", i, "-o", "json") for i in self.case_ids + self.check_ids}
        self.case_text = {i: w.cli("cases", i) for i in self.case_ids}
        self.policy = Path(w.src, "policies", "default-policy.yaml").read_text()
        if self.check_paths.get("kind") != "CheckReport" or not self.check_paths.get("objects"):
            fail(f"`check -o json {MANIFESTS_DIR}` is not a CheckReport with objects: {short(self.check_paths)}")
        if not self.check_broken.get("errors"):
            fail("`check -o json -` on the broken text reports no input error: pick another broken text")
        ok(f"version {self.version}; {len(self.case_ids)} cases, {len(self.check_ids)} checks; "
           f"{len(self.check_paths['objects'])} objects in {MANIFESTS_DIR}")


# --- the SDK: spies on its validation and its shutdown ----------------------------------

VALIDATED: list[tuple[str, bool, int]] = []  # (tool, a compiled outputSchema validator ran, id(result))
TERMINATED: set[int] = set()             # server pids the SDK had to signal
EXITS: list[tuple[int, int | None, bool]] = []  # (pid, returncode, signalled)

_orig_validate = ClientSession.validate_tool_result


async def _spy_validate(self: ClientSession, name: str, result: Any) -> None:
    await _orig_validate(self, name, result)
    # `_output_schema_validator` compiles and caches the validator it just ran iter_errors with.
    VALIDATED.append((name, name in self._tool_output_validators, id(result)))  # noqa: SLF001


ClientSession.validate_tool_result = _spy_validate  # type: ignore[method-assign]

_orig_terminate = sdk_stdio._terminate_process_tree  # noqa: SLF001
_orig_stop = sdk_stdio._stop_server_process  # noqa: SLF001


async def _spy_terminate(process: Any) -> None:
    TERMINATED.add(process.pid)
    await _orig_terminate(process)


async def _spy_stop(process: Any) -> None:
    await _orig_stop(process)
    EXITS.append((process.pid, process.returncode, process.pid in TERMINATED))


sdk_stdio._terminate_process_tree = _spy_terminate  # noqa: SLF001
sdk_stdio._stop_server_process = _spy_stop  # noqa: SLF001
sdk_stdio.PROCESS_TERMINATION_TIMEOUT = EXIT_GRACE  # ASan's exit (leak check) can be slow


class Session:
    """One server process and its SDK client; `stderr` is its log file."""

    def __init__(self, w: World, label: str):
        self.w = w
        self.label = label
        self.stderr_path = w.tmp / f"server-{re.sub(r'[^a-z0-9]+', '-', label.lower())}.log"
        self.stream_errors: list[Exception] = []
        self.roots_requests = 0
        self.client: Client | None = None

    def stderr_tail(self, lines: int = 30) -> str:
        try:
            text = self.stderr_path.read_text(errors="replace")
        except OSError:
            return "(no stderr file)"
        return "\n".join("    | " + line for line in text.splitlines()[-lines:]) or "    (empty)"

    async def message_handler(self, message: Any) -> None:
        if isinstance(message, Exception):  # a line on stdout that is not JSON-RPC
            self.stream_errors.append(message)


CURRENT: list[Session] = []  # the session whose stderr a failure prints


@asynccontextmanager
async def serve(w: World, label: str, *, mode: str = "auto", offer: str | None = None,
                args: tuple[str, ...] = (), kubeconfig: str | None = None,
                roots: list[str] | None = None):
    """`BINARY mcp ARGS` in SOURCE_DIR under the SDK's stdio client, connected in `mode`
    ("auto" or "legacy"; `offer` replaces the SDK's initialize protocolVersion)."""
    s = Session(w, label)
    CURRENT.append(s)
    env = dict(w.passthrough, HOME=str(w.home))
    if kubeconfig is not None:
        env["KUBECONFIG"] = kubeconfig
    params = StdioServerParameters(command=w.binary, args=["mcp", *args], env=env, cwd=w.src)
    list_roots = None
    if roots is not None:
        async def list_roots(_context: Any) -> mcp_types.ListRootsResult:
            s.roots_requests += 1
            return mcp_types.ListRootsResult(roots=[mcp_types.Root(uri=r) for r in roots])
    print(f"\n== {label}: {Path(w.binary).name} mcp {' '.join(args)}".rstrip()
          + (f" (KUBECONFIG={Path(kubeconfig).name})" if kubeconfig else ""), flush=True)
    with open(s.stderr_path, "w") as errlog:
        client = Client(stdio_client(params, errlog=errlog), mode=mode, read_timeout_seconds=CALL_TIMEOUT,
                        message_handler=s.message_handler, list_roots_callback=list_roots,
                        client_info=mcp_types.Implementation(name="kubegap-sdk-test", version="1"))
        saved_offer = sdk_session.LATEST_HANDSHAKE_VERSION
        if offer is not None:
            # session.initialize() offers this module constant; the SDK has no parameter for it.
            sdk_session.LATEST_HANDSHAKE_VERSION = offer
        # No anyio scope of ours around __aenter__/__aexit__: the client's task group must nest
        # in the caller's scopes. Both are bounded by the SDK itself: the discover probe (10 s)
        # and initialize (read_timeout_seconds) time out; the shutdown's waits are bounded.
        t0 = time.monotonic()
        try:
            await client.__aenter__()
        except Exception as e:  # noqa: BLE001 - MCPError, a closed connection, a rejected result
            fail(f"{label}: the handshake failed after {time.monotonic() - t0:.1f} s: {type(e).__name__}: {e}")
        finally:
            sdk_session.LATEST_HANDSHAKE_VERSION = saved_offer
        if time.monotonic() - t0 > CONNECT_TIMEOUT:
            fail(f"{label}: the handshake took {time.monotonic() - t0:.1f} s (bound {CONNECT_TIMEOUT:.0f} s)")
        s.client = client
        exits_before = len(EXITS)
        try:
            yield s
        finally:
            # Closing stdin is the end of the session: the server must exit 0 by itself.
            await client.__aexit__(*sys.exc_info())
    if len(EXITS) == exits_before:
        fail(f"{label}: the SDK did not report the server's exit")
    pid, code, signalled = EXITS[-1]
    expect(not signalled and code == 0,
           f"{label}: on EOF the server exited {code} by itself within {EXIT_GRACE:.0f} s",
           f"pid {pid} exit code {code}; the SDK had to signal it: {signalled}")
    log = s.stderr_path.read_text(errors="replace")
    hits = [m for m in SANITIZER_MARKERS if m in log]
    expect(not hits, f"{label}: no sanitizer report on stderr", f"found {hits}")
    expect(not s.stream_errors, f"{label}: stdout held only JSON-RPC messages",
           f"{len(s.stream_errors)} unparseable: {short(str(s.stream_errors[:3]))}")
    CURRENT.pop()


async def bounded(what: str, awaitable: Any, timeout: float = CALL_TIMEOUT + 5) -> Any:
    try:
        with anyio.fail_after(timeout):
            return await awaitable
    except TimeoutError:
        fail(f"{what}: no answer within {timeout:.0f} s")


async def call(s: Session, tool: str, arguments: dict[str, Any], **kw: Any) -> mcp_types.CallToolResult:
    assert s.client is not None
    return await bounded(f"tools/call {tool} {short(arguments, 200)}", s.client.call_tool(tool, arguments, **kw))


async def call_ok(s: Session, tool: str, arguments: dict[str, Any]) -> Any:
    """A successful call: isError false, a text summary, structuredContent (validated by the SDK)."""
    r = await call(s, tool, arguments)
    text = r.content[0].text if r.content and r.content[0].type == "text" else None
    if r.is_error:
        fail(f"{tool} {short(arguments, 200)}: isError: {short(text or r.content)}")
    if not text:
        fail(f"{tool}: content[0] is not a non-empty text summary: {short([c.model_dump() for c in r.content])}")
    if r.structured_content is None:
        fail(f"{tool}: no structuredContent")
    if (tool, True, id(r)) not in VALIDATED:
        fail(f"{tool}: the SDK did not validate this structuredContent against the outputSchema")
    return r


async def call_error_result(s: Session, tool: str, arguments: dict[str, Any], *,
                            bound: float = CALL_TIMEOUT) -> tuple[str, float]:
    """A tool failure: isError true, content[0].text the message, no structuredContent."""
    t0 = time.monotonic()
    r = await call(s, tool, arguments)
    elapsed = time.monotonic() - t0
    text = r.content[0].text if r.content and r.content[0].type == "text" else ""
    if not r.is_error:
        fail(f"{tool} {short(arguments, 200)}: expected isError, got a result: "
             f"{short(r.structured_content if r.structured_content is not None else text)}")
    if not text.strip():
        fail(f"{tool}: isError without a text message: {short([c.model_dump() for c in r.content])}")
    if r.structured_content is not None or "structured_content" in r.model_fields_set:
        fail(f"{tool}: an isError result carries structuredContent: {short(r.structured_content)}")
    if elapsed > bound:
        fail(f"{tool}: the error took {elapsed:.1f} s (bound {bound:.0f} s): {short(text)}")
    return text, elapsed


async def expect_mcp_error(what: str, awaitable: Any, code: int) -> MCPError:
    try:
        result = await bounded(what, awaitable)
    except MCPError as e:
        if e.code != code:
            fail(f"{what}: MCPError {e.code} ({e.message!r}, data {e.data!r}), expected {code}")
        return e
    fail(f"{what}: expected MCPError {code}, got a result: {short(getattr(result, 'model_dump', lambda: result)())}")
    raise AssertionError  # unreachable


async def expect_invalid_params(s: Session, tool: str, arguments: dict[str, Any], field: str) -> None:
    assert s.client is not None
    e = await expect_mcp_error(f"tools/call {tool} {short(arguments, 200)}",
                               s.client.call_tool(tool, arguments), INVALID_PARAMS)
    named = field in e.message
    data_field = e.data.get("field") if isinstance(e.data, dict) else None
    expect(named and data_field == field,
           f"{tool} {short(arguments, 120)}: MCPError -32602 naming {field!r}: {e.message!r}",
           f"message {e.message!r}, data {e.data!r} (contract: the message names the field, data {{field: {field!r}}})")


# --- the suite, once per era -------------------------------------------------------------

async def handshake_checks(s: Session, x: Expected, era: str) -> None:
    client = s.client
    assert client is not None
    session = client.session
    expect(client.protocol_version == era, f"negotiated protocol version {era}",
           f"negotiated {client.protocol_version!r}")
    if era == MODERN:
        expect(session.discover_result is not None and session.initialize_result is None,
               "mode auto stayed modern: server/discover answered, no initialize fallback")
    else:
        expect(session.initialize_result is not None and session.discover_result is None,
               "mode legacy: initialize handshake")
    info = client.server_info
    expect(info is not None and (info.name, info.title, info.version) == ("kubegap-webhook", "kubegap", x.version),
           f"serverInfo kubegap-webhook / kubegap / {x.version}",
           f"got {info.model_dump(exclude_none=True) if info else None}")
    caps = client.server_capabilities.model_dump(by_alias=True, exclude_none=True)
    want_caps = {"tools": {"listChanged": False}, "resources": {"listChanged": False, "subscribe": False},
                 "prompts": {"listChanged": False}}
    expect_equal_json(caps, want_caps, "capabilities: tools, resources, prompts; nothing changes, no subscribe")
    expect(bool(client.instructions), "instructions given", f"got {client.instructions!r}")
    if era == MODERN:
        raw = await bounded("server/discover", session.send_discover(MODERN))
        expect(sorted(raw.get("supportedVersions") or []) == ALL_VERSIONS,
               f"discover: supportedVersions are the five (in any order): {raw.get('supportedVersions')}",
               f"got {raw.get('supportedVersions')}")
        expect(raw.get("resultType") == "complete" and raw.get("ttlMs") == 0 and raw.get("cacheScope") == "private",
               "discover: resultType complete, ttlMs 0, cacheScope private",
               f"got {({k: raw.get(k) for k in ('resultType', 'ttlMs', 'cacheScope')})}")
        want_info = {"name": "kubegap-webhook", "title": "kubegap", "version": x.version}
        stamp = (raw.get("_meta") or {}).get("io.modelcontextprotocol/serverInfo")
        expect(raw.get("serverInfo") == want_info and stamp == want_info,
               "discover: serverInfo, and the same in _meta io.modelcontextprotocol/serverInfo",
               f"serverInfo {raw.get('serverInfo')}, _meta stamp {stamp}")
        expect_equal_json(raw.get("capabilities"), want_caps, "discover: capabilities")
        e = await expect_mcp_error("server/discover at 2099-01-01", session.send_discover("2099-01-01"),
                                   UNSUPPORTED_VERSION)
        data = e.data if isinstance(e.data, dict) else {}
        expect(sorted(data.get("supported") or []) == ALL_VERSIONS and data.get("requested") == "2099-01-01",
               "an unsupported modern version: -32022 with data {supported, requested}", f"data {e.data!r}")
    else:
        await bounded("ping", session.send_ping())
        ok("ping answered (an empty result, as the SDK validated)")


async def tools_checks(s: Session, x: Expected) -> dict[str, mcp_types.Tool]:
    assert s.client is not None
    listing = await bounded("tools/list", s.client.list_tools())
    tools = {t.name: t for t in listing.tools}
    expect(sorted(tools) == sorted(TOOLS), f"tools/list: {', '.join(TOOLS)}", f"got {sorted(tools)}")
    for name in TOOLS:
        t = tools[name]
        a = t.annotations
        got = (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint) if a else None
        want = (True, False, True, OPEN_WORLD[name])
        expect(got == want, f"{name}: annotations readOnly, not destructive, idempotent, openWorld {OPEN_WORLD[name]}",
               f"got (readOnly, destructive, idempotent, openWorld) = {got}")
        expect(isinstance(t.input_schema, dict) and t.input_schema.get("type") == "object"
               and isinstance(t.output_schema, dict) and t.output_schema.get("type") == "object",
               f"{name}: inputSchema and outputSchema are object schemas",
               f"input {short(t.input_schema, 200)}, output {short(t.output_schema, 200)}")
        expect(bool(t.description), f"{name}: a description")
    props = {n: tools[n].input_schema.get("properties") or {} for n in TOOLS}
    want_props = {"check_manifests": {"manifests", "paths", "limit"},
                  "scan_cluster": {"context", "namespace", "kinds", "limit"},
                  "explain": {"manifests", "kind", "namespace", "name", "context"},
                  "list_checks": set(), "get_case": {"id"}}
    expect(all(set(props[n]) == want_props[n] for n in TOOLS), "every inputSchema has the contract's properties",
           f"got {({n: sorted(props[n]) for n in TOOLS})}")
    id_enum = props["get_case"]["id"].get("enum")
    expect(sorted(id_enum or []) == sorted(x.case_ids + x.check_ids) and tools["get_case"].input_schema.get(
        "required") == ["id"], "get_case: id is required, its enum every case id and check id", f"enum {id_enum}")
    kinds = props["scan_cluster"]["kinds"]
    kind_enum = (kinds.get("items") or {}).get("enum") or []
    expect(kinds.get("type") == "array" and {"Pod", "Job", "PyTorchJob", "JobSet"} <= set(kind_enum),
           "scan_cluster: kinds is an array of the workload table's kinds and Pod", f"kinds {short(kinds)}")
    limit = props["scan_cluster"]["limit"]
    expect((limit.get("type"), limit.get("minimum"), limit.get("maximum"), limit.get("default"))
           == ("integer", 1, 5000, 200), "scan_cluster: limit integer 1..5000, default 200", f"limit {limit}")
    return tools


async def check_manifests_checks(s: Session, x: Expected) -> dict[str, Any]:
    w = s.w
    r = await call_ok(s, "check_manifests", {"paths": [MANIFESTS_DIR]})
    expect_equal_json(uncut(r.structured_content), x.check_paths,
                      f"check_manifests paths [{MANIFESTS_DIR}] == `check -o json {MANIFESTS_DIR}`")
    results = {"check_manifests": r.structured_content}
    r = await call_ok(s, "check_manifests", {"paths": [MIXED_DIR]})
    expect_equal_json(uncut(r.structured_content), x.check_mixed,
                      f"check_manifests paths [{MIXED_DIR}] (input errors, notes) == `check -o json {MIXED_DIR}`")
    r = await call_ok(s, "check_manifests", {"paths": [x.abs_path]})
    expect_equal_json(uncut(r.structured_content), x.check_abs, "check_manifests with an absolute path under the "
                      "working directory == `check -o json` of it")
    r = await call_ok(s, "check_manifests", {"paths": [MISSING_PATH]})
    expect_equal_json(uncut(r.structured_content), x.check_missing,
                      "check_manifests with a missing path: an input error in the report, as `check -o json`")
    r = await call_ok(s, "check_manifests", {"manifests": x.inline_text})
    expect_equal_json(uncut(r.structured_content), x.check_inline,
                      f"check_manifests inline ({SINGLE}/nodes-and-pod.yaml) == `check -o json -` on it")
    r = await call_ok(s, "check_manifests", {"manifests": x.broken_text})
    expect_equal_json(uncut(r.structured_content), x.check_broken,
                      "check_manifests inline with invalid YAML: errors in structuredContent, == `check -o json -`")
    r = await call_ok(s, "check_manifests", {"manifests": x.job_text, "paths": [x.both_path]})
    expect_equal_json(uncut(r.structured_content), x.check_both,
                      f"check_manifests inline + paths == `check -o json - {x.both_path}`")
    for path in (str(w.outside_manifest), x.escaping_path):
        text, _ = await call_error_result(s, "check_manifests", {"paths": [path]})
        expect(path in text, f"check_manifests with a path outside the working directory ({path}): isError naming it",
               f"message {short(text)}")
    await nothing_given(s, "check_manifests", {}, ("manifests", "paths"))
    return results


async def nothing_given(s: Session, tool: str, arguments: dict[str, Any], names: tuple[str, ...]) -> None:
    """The contract says "at least one of the two" without saying how a call with neither fails:
    accepted as -32602 or as an isError result, either naming the arguments; printed which."""
    assert s.client is not None
    try:
        r = await bounded(f"tools/call {tool} {arguments}", s.client.call_tool(tool, arguments))
    except MCPError as e:
        expect(e.code == INVALID_PARAMS and all(n in e.message for n in names),
               f"{tool} with none of {names}: MCPError -32602 naming them: {e.message!r}",
               f"code {e.code}, message {e.message!r}")
        return
    text = r.content[0].text if r.content and r.content[0].type == "text" else ""
    expect(r.is_error and all(n in text for n in names),
           f"{tool} with none of {names}: isError naming them (not -32602): {short(text, 200)}",
           f"isError {r.is_error}, text {short(text)}")


async def explain_checks(s: Session, x: Expected) -> dict[str, Any]:
    for text, report, cli_text, what in ((x.inline_text, x.check_inline, x.explain_text, "nodes-and-pod.yaml"),
                                         (x.broken_text, x.check_broken, x.explain_broken_text, "invalid YAML")):
        r = await call_ok(s, "explain", {"manifests": text})
        sc = r.structured_content
        keys = ("file", "line", "apiVersion", "kind", "namespace", "name", "classes")
        got = [{k: o.get(k) for k in keys} for o in sc.get("objects", [])]
        want = [{k: o.get(k) for k in keys} for o in report["objects"]]
        expect_equal_json(got, want, f"explain inline ({what}): objects and their classes == `check -o json -`'s")
        expect(all(isinstance(o.get("provenance"), list) and all(isinstance(p, str) for p in o["provenance"])
                   for o in sc["objects"]), f"explain ({what}): provenance is a list of strings per object")
        expect_equal_json(sc.get("errors"), report["errors"], f"explain ({what}): errors == `check -o json -`'s")
        expect(sc.get("text") == cli_text, f"explain ({what}): structuredContent.text == `check --explain -`",
               f"first difference: {first_difference(sc.get('text'), cli_text)}")
        expect(cli_text in r.content[0].text, f"explain ({what}): the content text holds `check --explain -`'s text",
               f"content {short(r.content[0].text)}")
        result = sc
    await nothing_given(s, "explain", {}, ("manifests", "kind"))
    return {"explain": result}


async def cases_checks(s: Session, x: Expected) -> dict[str, Any]:
    r = await call_ok(s, "list_checks", {})
    expect_equal_json(r.structured_content, x.cases, "list_checks == `cases -o json`")
    results = {"list_checks": r.structured_content}
    for i in (x.case_ids[0], x.check_ids[0]):
        r = await call_ok(s, "get_case", {"id": i})
        expect_equal_json(r.structured_content, x.case_json[i], f"get_case {i} == `cases {i} -o json`")
        results["get_case"] = r.structured_content
    return results


async def argument_errors(s: Session, x: Expected) -> None:
    assert s.client is not None
    await expect_invalid_params(s, "get_case", {"id": 42}, "id")
    await expect_invalid_params(s, "get_case", {"id": "no-such-case"}, "id")
    await expect_invalid_params(s, "get_case", {}, "id")
    await expect_invalid_params(s, "get_case", {"id": x.case_ids[0], "colour": "red"}, "colour")
    await expect_invalid_params(s, "scan_cluster", {"kinds": ["Job", "Foo"]}, "kinds[1]")
    await expect_invalid_params(s, "scan_cluster", {"limit": 0}, "limit")
    await expect_invalid_params(s, "scan_cluster", {"limit": 5001}, "limit")
    await expect_invalid_params(s, "check_manifests", {"paths": "tests"}, "paths")
    e = await expect_mcp_error("tools/call no_such_tool", s.client.call_tool("no_such_tool", {}), INVALID_PARAMS)
    expect("no_such_tool" in e.message, f"unknown tool: MCPError -32602 naming it: {e.message!r}")


async def cluster_unreachable_checks(s: Session) -> None:
    w = s.w
    address = f"127.0.0.1:{w.refused_port}"
    for tool, arguments in (("scan_cluster", {}), ("scan_cluster", {"namespace": "ml", "kinds": ["Job"]}),
                            ("explain", {"kind": "Job", "namespace": "ml", "name": "train"})):
        text, elapsed = await call_error_result(s, tool, arguments, bound=REFUSED_BOUND)
        expect(address in text, f"{tool} {short(arguments, 100)} against {address} (refused): isError in "
               f"{elapsed:.1f} s naming the API server: {short(text, 300)}", f"message {short(text)}")


async def resources_checks(s: Session, x: Expected) -> None:
    assert s.client is not None
    listing = await bounded("resources/list", s.client.list_resources())
    by_uri = {r.uri: r for r in listing.resources}
    want = {f"kubegap://cases/{i}" for i in x.case_ids} | {"kubegap://policy"}
    expect(set(by_uri) == want, f"resources/list: kubegap://cases/<id> for the {len(x.case_ids)} cases and "
           "kubegap://policy", f"extra {sorted(set(by_uri) - want)}, missing {sorted(want - set(by_uri))}")
    for i in x.case_ids:
        r = by_uri[f"kubegap://cases/{i}"]
        if r.name != i or not r.title or r.mime_type != "text/plain":
            fail(f"resource kubegap://cases/{i}: name {r.name!r}, title {r.title!r}, mimeType {r.mime_type!r} "
                 f"(contract: name {i!r}, a title, text/plain)")
    ok("each case resource: name = id, a title, mimeType text/plain")
    expect(by_uri["kubegap://policy"].mime_type == "application/yaml", "kubegap://policy: mimeType application/yaml")
    templates = await bounded("resources/templates/list", s.client.list_resource_templates())
    got = [t.model_dump(by_alias=True, exclude_none=True) for t in templates.resource_templates]
    for t in got:
        t.pop("title", None)
        t.pop("description", None)
    expect_equal_json(got, [{"uriTemplate": "kubegap://cases/{id}", "name": "case", "mimeType": "text/plain"}],
                      "resources/templates/list: kubegap://cases/{id}")
    for i in x.case_ids:
        uri = f"kubegap://cases/{i}"
        r = await bounded(f"resources/read {uri}", s.client.read_resource(uri))
        c = r.contents[0] if len(r.contents) == 1 else None
        if c is None or c.uri != uri or c.mime_type != "text/plain" or getattr(c, "text", None) != x.case_text[i]:
            fail(f"resources/read {uri} != `cases {i}`: "
                 + (f"{len(r.contents)} contents" if c is None else
                    f"uri {c.uri!r}, mimeType {c.mime_type!r}, first difference "
                    f"{first_difference(getattr(c, 'text', None), x.case_text[i])}"))
    ok(f"resources/read of each of the {len(x.case_ids)} cases == `cases ID` text")
    r = await bounded("resources/read kubegap://policy", s.client.read_resource("kubegap://policy"))
    c = r.contents[0]
    expect(len(r.contents) == 1 and c.uri == "kubegap://policy" and c.mime_type == "application/yaml"
           and getattr(c, "text", None) == x.policy, "resources/read kubegap://policy == policies/default-policy.yaml",
           f"uri {c.uri!r}, mimeType {c.mime_type!r}, first difference "
           f"{first_difference(getattr(c, 'text', None), x.policy)}")
    uri = "kubegap://cases/no-such-case"
    e = await expect_mcp_error(f"resources/read {uri}", s.client.read_resource(uri), RESOURCE_NOT_FOUND)
    expect(isinstance(e.data, dict) and e.data.get("uri") == uri, "an unknown resource: -32002 with data {uri}",
           f"data {e.data!r}")


async def prompt_checks(s: Session) -> None:
    assert s.client is not None
    listing = await bounded("prompts/list", s.client.list_prompts())
    prompts = {p.name: p for p in listing.prompts}
    expect(list(prompts) == [PROMPT], f"prompts/list: {PROMPT}", f"got {list(prompts)}")
    args = {a.name: a.required for a in prompts[PROMPT].arguments or []}
    expect(set(args) == {"paths", "namespace"} and not any(args.values()),
           f"{PROMPT}: optional arguments paths and namespace", f"got {args}")
    for arguments, must in (({"paths": f"{MANIFESTS_DIR}, {MIXED_DIR}"}, ["check_manifests", MANIFESTS_DIR, MIXED_DIR]),
                            ({"paths": f"{MANIFESTS_DIR} {MIXED_DIR}"}, ["check_manifests", MANIFESTS_DIR, MIXED_DIR]),
                            ({"namespace": "ml-research"}, ["scan_cluster", "ml-research"]),
                            ({}, ["scan_cluster"])):
        r = await bounded(f"prompts/get {PROMPT} {arguments}", s.client.get_prompt(PROMPT, arguments))
        m = r.messages[0] if r.messages else None
        text = m.content.text if m is not None and m.content.type == "text" else ""
        missing = [w for w in must if w not in text]
        expect(r.description and m is not None and m.role == "user" and not missing and "patch" in text,
               f"prompts/get {PROMPT} {arguments}: a user message naming {', '.join(must)}, fixes as patches",
               f"description {r.description!r}, role {m.role if m else None}, missing {missing}: {short(text)}")
    e = await expect_mcp_error("prompts/get no-such-prompt", s.client.get_prompt("no-such-prompt", {}), INVALID_PARAMS)
    ok(f"an unknown prompt: MCPError -32602 ({e.message!r})")


async def validation_checks(s: Session, x: Expected, tools: dict[str, mcp_types.Tool],
                            results: dict[str, Any]) -> None:
    """The SDK validated every successful result (call_ok asserts it per call); here: that the
    validation can fail, with the server's schemas and with a deliberately wrong one."""
    assert s.client is not None
    session = s.client.session
    # 1. Each tool's own outputSchema rejects its own result with one top-level value of the wrong type.
    for name, sc in results.items():
        key = next(k for k, v in sc.items() if isinstance(v, (list, dict, str)))
        bad = dict(sc, **{key: 12345})
        try:
            await session.validate_tool_result(name, mcp_types.CallToolResult(
                content=[mcp_types.TextContent(text="x")], structured_content=bad))
        except RuntimeError as e:
            expect("Invalid structured content" in str(e),
                   f"{name}: its outputSchema rejects the result with {key!r} a number")
            continue
        fail(f"{name}: its outputSchema accepts the result with {key!r} = 12345: the SDK cannot catch a wrong result "
             f"(schema {short(tools[name].output_schema, 300)})")
    # 2. scan_cluster never succeeds here (no cluster): its outputSchema must accept the contract's shape,
    #    `scan -o json` (a CheckReport, as check's) cut to `limit` objects plus the additions.
    report = copy.deepcopy(x.check_paths)
    by_check: dict[str, int] = {}
    for o in report["objects"]:
        for f in o["findings"]:
            if f["outcome"] == "finding":
                by_check[f["check"]] = by_check.get(f["check"], 0) + 1
    report["summary"]["byCheck"] = by_check
    report["summary"]["objectsWithFindings"] = sum(
        any(f["outcome"] == "finding" for f in o["findings"]) for o in report["objects"])
    report["omittedObjects"] = len(report["objects"]) - 1
    report["objects"] = report["objects"][:1]
    await bounded("validate a scan-shaped result", session.validate_tool_result(
        "scan_cluster", mcp_types.CallToolResult(content=[mcp_types.TextContent(text="x")], structured_content=report)))
    ok("scan_cluster: its outputSchema accepts a CheckReport cut to limit with omittedObjects, "
       "summary.byCheck and summary.objectsWithFindings")
    # 3. A deliberately wrong schema in the SDK's cache: a real call must now raise.
    saved = session._tool_output_schemas["list_checks"]  # noqa: SLF001
    session._tool_output_schemas["list_checks"] = {  # noqa: SLF001
        "type": "object", "required": ["kubegapNoSuchField"]}
    session._tool_output_validators.pop("list_checks", None)  # noqa: SLF001
    try:
        await call(s, "list_checks", {})
    except RuntimeError as e:
        expect("Invalid structured content returned by tool list_checks" in str(e),
               "with a wrong outputSchema in the SDK's cache, a real list_checks call raises: "
               f"{short(str(e).splitlines()[0], 120)}")
    else:
        fail("the SDK accepted list_checks' result against a schema it cannot satisfy: its validation is not active")
    finally:
        session._tool_output_schemas["list_checks"] = saved  # noqa: SLF001
        session._tool_output_validators.pop("list_checks", None)  # noqa: SLF001
    await call_ok(s, "list_checks", {})
    ok("with the server's schema back, list_checks validates again")


async def concurrency_checks(s: Session, x: Expected) -> None:
    """Eight calls at once, answered out of order: each answer equals the same call's answer
    made alone (that one was compared with the CLI above)."""
    assert s.client is not None
    ids = (x.check_ids + x.case_ids)[:6]
    alone: dict[str, Any] = {}
    for i in ids:
        alone[i] = (await call_ok(s, "get_case", {"id": i})).structured_content
    alone["paths"] = (await call_ok(s, "check_manifests", {"paths": [MANIFESTS_DIR]})).structured_content
    alone["inline"] = (await call_ok(s, "check_manifests", {"manifests": x.inline_text})).structured_content
    got: dict[str, Any] = {}

    async def one(key: str, tool: str, arguments: dict[str, Any]) -> None:
        got[key] = (await call_ok(s, tool, arguments)).structured_content

    with anyio.fail_after(CALL_TIMEOUT * 2):
        async with anyio.create_task_group() as tg:
            for i in ids:
                tg.start_soon(one, i, "get_case", {"id": i})
            tg.start_soon(one, "paths", "check_manifests", {"paths": [MANIFESTS_DIR]})
            tg.start_soon(one, "inline", "check_manifests", {"manifests": x.inline_text})
    for key in alone:
        if (d := first_difference(got[key], alone[key])) is not None:
            fail(f"the concurrent call {key} got another answer than alone: {d}")
    ok(f"{len(ids) + 2} calls in flight at once: each answer is its own")


async def suite(w: World, x: Expected, era: str, mode: str, offer: str | None) -> None:
    async with serve(w, f"{era} ({'server/discover' if mode == 'auto' else 'initialize'})", mode=mode,
                     offer=offer, kubeconfig=w.refused_kubeconfig) as s:
        await handshake_checks(s, x, era)
        tools = await tools_checks(s, x)
        results = await check_manifests_checks(s, x)
        results |= await explain_checks(s, x)
        results |= await cases_checks(s, x)
        await cluster_unreachable_checks(s)
        await argument_errors(s, x)
        await resources_checks(s, x)
        await prompt_checks(s)
        await validation_checks(s, x, tools, results)
        await concurrency_checks(s, x)
        validated = {name for name, compiled, _ in VALIDATED if compiled}
        expect(validated >= {"check_manifests", "explain", "list_checks", "get_case", "scan_cluster"},
               "the SDK validated results of every tool against its outputSchema (scan_cluster: the shaped one)",
               f"validated: {sorted(validated)}")


# --- sessions of their own ---------------------------------------------------------------

async def kubeconfig_missing(w: World, x: Expected) -> None:
    async with serve(w, "KUBECONFIG names a missing file", kubeconfig=w.missing_kubeconfig) as s:
        for tool, arguments in (("scan_cluster", {}), ("explain", {"kind": "Job", "name": "train"})):
            text, _ = await call_error_result(s, tool, arguments, bound=REFUSED_BOUND)
            expect(w.missing_kubeconfig in text, f"{tool}: isError naming {w.missing_kubeconfig}: {short(text, 200)}",
                   f"message {short(text)}")
        r = await call_ok(s, "list_checks", {})
        expect_equal_json(r.structured_content, x.cases, "list_checks needs no kubeconfig")
    flag_missing = str(w.tmp / "flag-missing.yaml")
    async with serve(w, "--kubeconfig names a missing file", args=("--kubeconfig", flag_missing),
                     kubeconfig=w.refused_kubeconfig) as s:
        text, _ = await call_error_result(s, "scan_cluster", {}, bound=REFUSED_BOUND)
        expect(flag_missing in text, f"scan_cluster: isError naming {flag_missing} (the flag wins over $KUBECONFIG)",
               f"message {short(text)}")


async def cluster_hangs(w: World, x: Expected) -> None:
    address = f"127.0.0.1:{w.hang_port}"
    async with serve(w, f"an API server at {address} that never answers",
                     args=("--request-timeout", str(HANG_REQUEST_TIMEOUT)), kubeconfig=w.hang_kubeconfig) as s:
        assert s.client is not None
        # The client gives up after 1 s: the SDK sends notifications/cancelled; the server keeps serving.
        e = await expect_mcp_error("scan_cluster abandoned after 1 s",
                                   s.client.call_tool("scan_cluster", {}, read_timeout_seconds=1.0), -32001)
        ok(f"the SDK gave up on scan_cluster after 1 s and cancelled it ({e.message!r})")
        r = await call_ok(s, "list_checks", {})
        expect_equal_json(r.structured_content, x.cases, "after the cancelled call, the server still answers")
        bound = HANG_REQUEST_TIMEOUT + 10.0
        text, elapsed = await call_error_result(s, "scan_cluster", {}, bound=bound)
        expect(address in text, f"scan_cluster: isError after {elapsed:.1f} s (--request-timeout "
               f"{HANG_REQUEST_TIMEOUT}, bound {bound:.0f} s) naming {address}: {short(text, 200)}",
               f"message {short(text)}")


async def counter_offer(w: World) -> None:
    async with serve(w, "initialize offering 2024-10-07 (unknown)", mode="legacy", offer="2024-10-07") as s:
        assert s.client is not None
        expect(s.client.protocol_version == "2025-11-25", "an unknown offer is answered with 2025-11-25",
               f"negotiated {s.client.protocol_version!r}")


async def legacy_roots(w: World, x: Expected) -> None:
    roots = [Path(w.src, MANIFESTS_DIR).as_uri(), w.outside_manifest.parent.as_uri()]
    async with serve(w, "2025-11-25 with roots", mode="legacy", roots=roots) as s:
        r = await call_ok(s, "check_manifests", {"paths": [str(Path(w.src, MANIFESTS_DIR))]})
        got = uncut(r.structured_content)
        expect(got["summary"] == x.check_paths["summary"] and len(got["objects"]) == len(x.check_paths["objects"]),
               f"roots: {MANIFESTS_DIR} lies under a root: the same objects and findings as `check`",
               f"summary {got['summary']} vs {x.check_paths['summary']}")
        expect(s.roots_requests > 0, f"the server asked the client for its roots ({s.roots_requests} roots/list)")
        # Relative paths are relative to the first root, the client's workspace.
        r = await call_ok(s, "check_manifests", {"paths": ["."]})
        expect(uncut(r.structured_content)["summary"] == x.check_paths["summary"],
               "roots: \".\" is the first root: the same findings as `check` of it",
               f"summary {r.structured_content.get('summary')}")
        r = await call_ok(s, "check_manifests", {"paths": [str(w.outside_manifest)]})
        expect_equal_json(uncut(r.structured_content), x.check_outside,
                          "roots: a path outside the working directory but under a root is checked")
        mixed = str(Path(w.src, MIXED_DIR))
        text, _ = await call_error_result(s, "check_manifests", {"paths": [mixed]})
        expect(mixed in text, f"roots: {MIXED_DIR} (under the working directory, under no root): isError "
               "naming it", f"message {short(text)}")


async def run_all(w: World, x: Expected) -> None:
    with anyio.fail_after(TOTAL_TIMEOUT):
        await suite(w, x, MODERN, "auto", None)
        await suite(w, x, "2025-11-25", "legacy", None)
        await suite(w, x, "2025-06-18", "legacy", "2025-06-18")
        await counter_offer(w)
        await kubeconfig_missing(w, x)
        await cluster_hangs(w, x)
        await legacy_roots(w, x)


def leaf_failures(e: BaseException) -> list[BaseException]:
    if isinstance(e, BaseExceptionGroup):
        return [leaf for sub in e.exceptions for leaf in leaf_failures(sub)]
    return [e]


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: sdk_test.py BINARY SOURCE_DIR", file=sys.stderr)
        return 2
    binary, src = str(Path(sys.argv[1]).resolve()), str(Path(sys.argv[2]).resolve())
    pinned = re.search(r"^mcp==(\S+)", REQUIREMENTS.read_text(), re.M)
    from importlib.metadata import version as installed_version
    have = installed_version("mcp")
    if not pinned or have != pinned.group(1):
        print(f"FAIL: the SDK in {sys.executable} is mcp {have}, {REQUIREMENTS} pins "
              f"{pinned.group(1) if pinned else '(nothing)'}: run tests/mcp/sdk-venv.sh again")
        return 1
    print(f"MCP Python SDK {have} ({Path(mcp.__file__).parent}), server {binary}, cwd {src}", flush=True)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kubegap-mcp-sdk-") as tmp:
        w = World(binary, src, tmp)
        try:
            x = Expected(w)
            anyio.run(run_all, w, x)
        except BaseException as e:  # noqa: BLE001 - report the first real failure, however wrapped
            leaves = leaf_failures(e)
            first = next((f for f in leaves if isinstance(f, Failure)), leaves[0])
            if isinstance(first, Failure):
                print(f"FAIL: {first}")
            elif isinstance(first, TimeoutError):
                print(f"FAIL: the whole test ran over {TOTAL_TIMEOUT:.0f} s")
            else:
                import traceback
                print("FAIL: " + "".join(traceback.format_exception(first)).rstrip())
            if CURRENT:
                print(f"  server stderr ({CURRENT[-1].label}), last lines:\n{CURRENT[-1].stderr_tail()}")
            return 1
        finally:
            w.refused_socket.close()
            w.hang_socket.close()
    if FAILED:
        print(f"\nFAIL: {len(FAILED)} check(s) failed:\n" + "\n".join(f"  - {m}" for m in FAILED))
        return 1
    print(f"\nPASS: kubegap-webhook mcp with the MCP Python SDK {have}: eras {MODERN}, 2025-11-25, 2025-06-18 "
          f"({time.monotonic() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
