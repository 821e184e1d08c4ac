#!/usr/bin/env python3
"""Raw-protocol fault tests of `kubegap-webhook mcp`: JSON-RPC lines written by hand to the
server's stdin, no SDK. Python standard library only.

    python3 tests/mcp/fault_test.py BINARY SOURCE_DIR [SCENARIO[,SCENARIO...]]

Each scenario starts its own server (`BINARY mcp ...`, working directory SOURCE_DIR, stderr
to a file under a temporary directory, no kubeconfig unless the scenario passes one),
initializes it (protocolVersion 2025-06-18) and then:

  not-json          a line that is not JSON (cut JSON, trailing text, a NUL byte): -32700,
                    id null; a ping still answers
  invalid-utf8      JSON-looking lines with bytes that are not UTF-8 (in the method, an
                    argument, the tool's name, a param): -32700, id null; never echoed to stdout
  not-a-request     an array (a batch), a number, a string, null, an object without
                    "method", without "jsonrpc", with a non-string method, an object id:
                    -32600 (id null, or the request's id)
  unknown-method    -32601 naming the method; an unknown notification gets no answer
  invalid-params    tools/call of an unknown tool; get_case without id, with id 42;
                    check_manifests with manifests: 7; scan_cluster with limit 0 and an
                    unknown property, ...: -32602 whose message and data.field name the field
  oversized-line    --max-message-bytes 65536: a line of 200 KB gets one -32600 with id null
                    (its content is never served), the next line is served; a line of
                    exactly the limit is served
  big-manifest      a 10 MB inline manifest (thousands of Jobs) in check_manifests, default
                    limit: a CheckReport result within BIG_BOUND seconds (printed)
  two-in-flight     tool calls written before any is read (two checks of different manifests
                    and a get_case): each answered, under its own id, in any order
  eof-mid-call      stdin closed right after a check_manifests of a few MB: exit 0 by itself
  signals           SIGTERM idle, SIGINT idle, SIGTERM during a scan that hangs, SIGTERM
                    during a check of a few MB: exit 0, promptly
  cancel            notifications/cancelled for a scan blocked on an API server that accepts
                    and never answers (a black hole): no response for it, the scan's
                    connections are closed, a ping and a tool call answer
  request-timeout   --request-timeout 5 and the black hole: an isError result within 5 s + slack
  kubeconfig        --kubeconfig of a missing file: isError naming it; an address nobody
                    listens on: isError, fast
Throughout, every line on stdout must be a JSON object with "jsonrpc": "2.0" (stdout carries
the protocol only), every response must be one the test asked for, and after each scenario
the server's stderr must hold no sanitizer report (the dev build has ASan and UBSan).

Prints one line per scenario; the first failure prints "FAIL: ..." with the tail of the
server's stderr and exits 1. Every read and every wait is bounded.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable
sys.path.insert(0, str(Path(__file__).resolve().parent))
from mcp_testlib import write_kubeconfig  # noqa: E402

PROTOCOL = "2025-06-18"
CALL_TIMEOUT = 30.0       # a small request (the ASan build is slow)
START_TIMEOUT = 30.0      # spawn + initialize
EXIT_BOUND = 15.0         # EOF or a signal to exit, idle or with a call that can stop at once
BIG_BOUND = 120.0         # the 10 MB manifest (ASan)
BIG_EXIT_BOUND = 60.0     # EOF/SIGTERM while a check of a few MB runs (a check may finish first)
PING_BOUND = 5.0          # a ping after a fault
QUIET_WINDOW = 2.0        # how long "no response" is watched for
REFUSED_BOUND = 15.0      # a refused connection, with --request-timeout at its default (120 s)
TIMEOUT_SLACK = 6.0       # over --request-timeout
SMALL_LIMIT = 65536       # --max-message-bytes of the oversized-line scenario

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                     "ERROR: UndefinedBehaviorSanitizer", "WARNING: ThreadSanitizer")
JOB_FIXTURE = "tests/fixtures/check/single/job.yaml"

_ABSENT = object()


class Failure(Exception):
    pass


def check(condition: bool, what: str) -> None:
    if not condition:
        raise Failure(what)


def short(value: Any, n: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= n else text[:n] + f"... ({len(text)} chars)"


# --- a server on pipes ------------------------------------------------------------------

class Server:
    """`BINARY mcp ARGS` with non-blocking pipes. Writes and reads interleave through one
    selector, so a large write never deadlocks against a large answer. Every stdout line
    is checked to be JSON-RPC 2.0 and kept in `inbox` until a wait claims it."""

    all: list["Server"] = []

    def __init__(self, world: "World", name: str, args: tuple[str, ...] = ()):
        self.world = world
        self.name = name
        self.args = args
        slug = "".join(c if c.isalnum() else "-" for c in name)
        self.stderr_path = world.tmp / f"{len(Server.all):02d}-{slug}.stderr"
        self.stderr_file = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen([world.binary, "mcp", *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr_file,
                                     cwd=world.src, env=world.env)
        Server.all.append(self)
        self.stdin_fd = self.proc.stdin.fileno()
        self.stdout_fd = self.proc.stdout.fileno()
        os.set_blocking(self.stdin_fd, False)
        os.set_blocking(self.stdout_fd, False)
        self.stdin_open = True
        self.eof = False
        self.parts: list[bytes] = []   # the current, unfinished stdout line
        self.inbox: list[dict] = []
        self.lines = 0
        self.next_id = 0

    # -- stdout --
    def _take(self, chunk: bytes) -> None:
        while chunk:
            newline = chunk.find(b"\n")
            if newline < 0:
                self.parts.append(chunk)
                return
            self.parts.append(chunk[:newline])
            line = b"".join(self.parts)
            self.parts = []
            chunk = chunk[newline + 1:]
            self._line(line)

    def _line(self, raw: bytes) -> None:
        self.lines += 1
        try:
            message = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise Failure(f"{self.name}: stdout line {self.lines} is not JSON ({e}): {short(repr(raw[:300]))}")
        check(isinstance(message, dict) and message.get("jsonrpc") == "2.0",
              f"{self.name}: stdout line {self.lines} is not a JSON-RPC 2.0 object: {short(message)}")
        check("method" in message or "result" in message or "error" in message,
              f"{self.name}: stdout line {self.lines} is neither a request nor a response: {short(message)}")
        check(not ("result" in message and "error" in message),
              f"{self.name}: a response with both result and error: {short(message)}")
        check("method" not in message,
              f"{self.name}: the server sent a request or notification this client never invited: {short(message)}")
        self.inbox.append(message)

    def _pump(self, timeout: float, out: memoryview | None = None) -> int:
        """Waits up to `timeout` for stdout (and for stdin to take `out`); returns bytes written."""
        written = 0
        with selectors.DefaultSelector() as sel:
            if not self.eof:
                sel.register(self.stdout_fd, selectors.EVENT_READ)
            if out is not None and len(out):
                sel.register(self.stdin_fd, selectors.EVENT_WRITE)
            if not sel.get_map():
                time.sleep(max(0.0, min(timeout, 0.05)))
                return 0
            for key, _ in sel.select(max(0.0, timeout)):
                if key.fd == self.stdout_fd:
                    try:
                        chunk = os.read(self.stdout_fd, 1 << 20)
                    except BlockingIOError:
                        continue
                    if not chunk:
                        self.eof = True
                        if self.parts:
                            raise Failure(f"{self.name}: stdout ended inside a line (no newline): "
                                          f"{short(repr(b''.join(self.parts)[:300]))}")
                    else:
                        self._take(chunk)
                else:
                    try:
                        written += os.write(self.stdin_fd, out[:1 << 20])
                    except BlockingIOError:
                        pass
                    except BrokenPipeError:
                        raise Failure(f"{self.name}: the server closed its stdin while the test was writing "
                                      f"(exit code {self.proc.poll()})")
        return written

    # -- stdin --
    def send_raw(self, data: bytes, timeout: float = CALL_TIMEOUT) -> None:
        check(self.stdin_open, f"{self.name}: internal: stdin already closed")
        view = memoryview(data)
        deadline = time.monotonic() + timeout
        while len(view):
            left = deadline - time.monotonic()
            check(left > 0, f"{self.name}: could not write {len(data)} bytes to the server within {timeout:.0f} s "
                            f"({len(data) - len(view)} taken): it stopped reading its stdin")
            check(self.proc.poll() is None, f"{self.name}: the server exited (code {self.proc.returncode}) "
                                            f"while the test was writing")
            view = view[self._pump(min(left, 1.0), view):]

    def send(self, message: Any, timeout: float = CALL_TIMEOUT) -> None:
        self.send_raw(json.dumps(message, separators=(",", ":")).encode() + b"\n", timeout)

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def request_message(self, method: str, params: dict | None = None, id: Any = _ABSENT) -> dict:
        m = {"jsonrpc": "2.0", "id": self.new_id() if id is _ABSENT else id, "method": method}
        if params is not None:
            m["params"] = params
        return m

    def notify(self, method: str, params: dict | None = None) -> None:
        m = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            m["params"] = params
        self.send(m)

    def close_stdin(self) -> None:
        if self.stdin_open:
            self.stdin_open = False
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass

    # -- waits --
    def wait_for(self, match: Callable[[dict], bool], timeout: float, what: str) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            for i, m in enumerate(self.inbox):
                if match(m):
                    return self.inbox.pop(i)
            left = deadline - time.monotonic()
            if left <= 0:
                raise Failure(f"{self.name}: no {what} within {timeout:.0f} s"
                              + (f"; unclaimed messages: {short(self.inbox, 600)}" if self.inbox else "")
                              + (f"; the server exited with {self.proc.returncode}" if self.proc.poll() is not None
                                 else ""))
            check(not self.eof, f"{self.name}: stdout ended (exit code {self.proc.poll()}) while waiting for {what}")
            self._pump(min(left, 1.0))

    def response(self, id: Any, timeout: float = CALL_TIMEOUT) -> dict:
        return self.wait_for(lambda m: "id" in m and same_id(m["id"], id), timeout, f"response to id {json.dumps(id)}")

    def request(self, method: str, params: dict | None = None, timeout: float = CALL_TIMEOUT) -> dict:
        m = self.request_message(method, params)
        self.send(m)
        return self.response(m["id"], timeout)

    def call(self, tool: str, arguments: dict, timeout: float = CALL_TIMEOUT) -> dict:
        return self.request("tools/call", {"name": tool, "arguments": arguments}, timeout)

    def watch_quiet(self, seconds: float, match: Callable[[dict], bool], what: str) -> None:
        """Reads for `seconds`; fails when a message matching `match` arrives."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0 and not self.eof:
            self._pump(min(left, 0.5))
            for m in self.inbox:
                check(not match(m), f"{self.name}: {what}: {short(m)}")
        for m in self.inbox:
            check(not match(m), f"{self.name}: {what}: {short(m)}")

    def ping(self, timeout: float = PING_BOUND) -> float:
        start = time.monotonic()
        r = self.request("ping", timeout=timeout)
        check(r.get("result") == {}, f"{self.name}: ping answered {short(r)}, expected result {{}}")
        return time.monotonic() - start

    def expect_inbox_empty(self, what: str) -> None:
        check(not self.inbox, f"{self.name}: {what}: unexpected messages on stdout: {short(self.inbox, 800)}")

    # -- the end --
    def wait_exit(self, timeout: float, what: str) -> tuple[int, float]:
        """Reads stdout to its end and waits for the exit; returns (code, seconds)."""
        start = time.monotonic()
        deadline = start + timeout
        while self.proc.poll() is None or not self.eof:
            left = deadline - time.monotonic()
            if left <= 0:
                state = "still running" if self.proc.poll() is None else f"exited {self.proc.returncode}, stdout open"
                raise Failure(f"{self.name}: {what}: the server did not exit within {timeout:.0f} s ({state})")
            self._pump(min(left, 0.2))
        return self.proc.returncode, time.monotonic() - start

    def finish(self, what: str = "EOF", timeout: float = EXIT_BOUND) -> float:
        """Closes stdin; the server must exit 0 by itself; returns seconds taken."""
        self.close_stdin()
        code, took = self.wait_exit(timeout, f"after {what}")
        check(code == 0, f"{self.name}: exit code {code} after {what}, expected 0")
        self.expect_inbox_empty(f"after {what}")
        self.check_stderr()
        return took

    def stderr_text(self) -> str:
        self.stderr_file.flush()
        return self.stderr_path.read_text(errors="replace")

    def check_stderr(self) -> None:
        text = self.stderr_text()
        found = [line for line in text.splitlines() if any(s in line for s in SANITIZER_MARKERS)]
        check(not found, f"{self.name}: sanitizer report on stderr: {found[:5]} (all of it: {self.stderr_path})")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
        self.stderr_file.close()

    def initialize(self) -> dict:
        r = self.request("initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                        "clientInfo": {"name": "kubegap-fault-test", "version": "1"}},
                         timeout=START_TIMEOUT)
        result = r.get("result")
        check(isinstance(result, dict), f"{self.name}: initialize failed: {short(r)}")
        check(result.get("protocolVersion") == PROTOCOL,
              f"{self.name}: initialize negotiated {result.get('protocolVersion')!r}, asked {PROTOCOL}")
        self.notify("notifications/initialized")
        return result


def same_id(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def start(world: "World", name: str, args: tuple[str, ...] = ()) -> Server:
    s = Server(world, name, args)
    s.initialize()
    return s


# --- expectations -----------------------------------------------------------------------

def expect_error(s: Server, r: dict, code: int, what: str, ids: tuple = (None,),
                 names: tuple[str, ...] = ()) -> dict:
    error = r.get("error")
    check(isinstance(error, dict), f"{s.name}: {what}: expected error {code}, got {short(r)}")
    check(error.get("code") == code, f"{s.name}: {what}: error code {error.get('code')}, expected {code}: {short(r)}")
    check(isinstance(error.get("message"), str) and error["message"],
          f"{s.name}: {what}: the error has no message: {short(r)}")
    check(any(same_id(r.get("id", _ABSENT), i) for i in ids),
          f"{s.name}: {what}: the error's id is {json.dumps(r.get('id', '(absent)'))}, expected one of "
          f"{json.dumps(list(ids))}")
    for n in names:
        check(n in error["message"], f"{s.name}: {what}: the message does not name {n!r}: {error['message']!r}")
    return error


def next_null_id(s: Server, what: str, timeout: float = CALL_TIMEOUT) -> dict:
    return s.wait_for(lambda m: "id" in m and m["id"] is None, timeout, f"error (id null) for {what}")


def tool_result(s: Server, r: dict, what: str) -> dict:
    result = r.get("result")
    check(isinstance(result, dict), f"{s.name}: {what}: expected a result, got {short(r)}")
    content = result.get("content")
    check(isinstance(content, list) and content and content[0].get("type") == "text"
          and isinstance(content[0].get("text"), str),
          f"{s.name}: {what}: content[0] is not text: {short(result)}")
    check(isinstance(result.get("isError"), bool), f"{s.name}: {what}: no boolean isError: {short(result)}")
    return result


def expect_tool_error(s: Server, r: dict, what: str) -> str:
    result = tool_result(s, r, what)
    check(result["isError"] is True, f"{s.name}: {what}: expected isError true: {short(result)}")
    check("structuredContent" not in result,
          f"{s.name}: {what}: an isError result has structuredContent: {short(result)}")
    text = result["content"][0]["text"]
    check(text.strip() != "", f"{s.name}: {what}: isError with an empty message")
    return text


def expect_report(s: Server, r: dict, what: str) -> dict:
    result = tool_result(s, r, what)
    check(result["isError"] is False, f"{s.name}: {what}: isError: {short(result['content'][0]['text'])}")
    report = result.get("structuredContent")
    check(isinstance(report, dict) and report.get("kind") == "CheckReport",
          f"{s.name}: {what}: structuredContent is not a CheckReport: {short(report)}")
    return report


# --- the world: fixtures, kubeconfigs, a black-hole API server ---------------------------

class BlackHole:
    """A TCP server that accepts every connection, reads and discards what it is sent and
    never writes a byte: a TLS handshake with it never ends. Counts the connections the
    client closed."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(128)
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.accepted = 0
        self.open: set[socket.socket] = set()
        self.stopping = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self.listener, selectors.EVENT_READ)
        while not self.stopping:
            for key, _ in sel.select(0.1):
                if key.fileobj is self.listener:
                    try:
                        conn, _ = self.listener.accept()
                    except (BlockingIOError, OSError):
                        continue
                    conn.setblocking(False)
                    sel.register(conn, selectors.EVENT_READ)
                    with self.lock:
                        self.accepted += 1
                        self.open.add(conn)
                else:
                    conn = key.fileobj
                    try:
                        data = conn.recv(65536)
                    except BlockingIOError:
                        continue
                    except OSError:
                        data = b""
                    if not data:
                        sel.unregister(conn)
                        conn.close()
                        with self.lock:
                            self.open.discard(conn)
        sel.close()

    def counts(self) -> tuple[int, int]:
        with self.lock:
            return self.accepted, len(self.open)

    def stop(self) -> None:
        self.stopping = True
        self.thread.join(5)
        with self.lock:
            for c in self.open:
                c.close()
        self.listener.close()


class World:
    def __init__(self, binary: str, src: str, tmp: str):
        self.binary = binary
        self.src = src
        self.tmp = Path(tmp)
        home = self.tmp / "home"
        home.mkdir()
        # No cluster unless a scenario names one: no $KUBECONFIG, an empty home, not a pod.
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("KUBE") and not k.startswith("KUBERNETES_")}
        self.env.update(HOME=str(home), NO_COLOR="1")
        self.job = Path(src, JOB_FIXTURE).read_text()
        self.black_hole = BlackHole()
        self.black_hole_kubeconfig = self.kubeconfig("black-hole.yaml", self.black_hole.port)
        # Bound but not listening: a connect is refused at once, and nobody else gets the port.
        self.refused = socket.socket()
        self.refused.bind(("127.0.0.1", 0))
        self.refused_kubeconfig = self.kubeconfig("refused.yaml", self.refused.getsockname()[1])
        self.missing_kubeconfig = str(self.tmp / "no-such-dir" / "kubeconfig.yaml")

    def kubeconfig(self, name: str, port: int) -> str:
        return write_kubeconfig(self.tmp / name, port)

    def jobs(self, min_bytes: int, prefix: str = "train") -> tuple[str, int]:
        """Job documents, each named apart, joined into one YAML stream of min_bytes or more."""
        docs, size = [], 0
        while size < min_bytes:
            doc = self.job.replace("name: resnet-train", f"name: {prefix}-{len(docs):06d}")
            docs.append(doc)
            size += len(doc) + 4
        return "---\n".join(docs), len(docs)

    def close(self) -> None:
        self.black_hole.stop()
        self.refused.close()


# --- the scenarios ----------------------------------------------------------------------

def not_json(w: World) -> str:
    s = start(w, "not-json")
    lines = [b"this is not json", b'{"jsonrpc":"2.0","id":1,"method":"ping"', b"{'single': 'quotes'}",
             b'{"jsonrpc":"2.0","id":2,"method":"ping"} trailing', b"\x00", b"{}}"]
    for line in lines:
        s.send_raw(line + b"\n")
        r = next_null_id(s, f"the line {line!r}")
        expect_error(s, r, PARSE_ERROR, f"the line {line!r}")
        took = s.ping()
    s.expect_inbox_empty("after the lines that are not JSON")
    s.finish()
    return f"{len(lines)} lines, each -32700 with id null; the ping after each answered (last in {took:.2f} s)"


def invalid_utf8(w: World) -> str:
    """JSON text is UTF-8 (RFC 8259 8.1): bytes that are not are not JSON, and must never be
    echoed into a response (stdout would stop being JSON for the client)."""
    s = start(w, "invalid-utf8")
    lines = [b'{"jsonrpc":"2.0","id":31,"method":"\xff\xfe"}',
             b'{"jsonrpc":"2.0","id":32,"method":"tools/call","params":{"name":"get_case","arguments":{"id":"\xc3\x28"}}}',
             b'{"jsonrpc":"2.0","id":33,"method":"tools/call","params":{"name":"no_such_\xe2\x82","arguments":{}}}',
             b'{"jsonrpc":"2.0","id":34,"method":"ping","params":{"note":"\xed\xa0\x80"}}']
    for line in lines:
        s.send_raw(line + b"\n")
        r = s.wait_for(lambda m: "id" in m, CALL_TIMEOUT, f"a response to {line!r}")
        expect_error(s, r, PARSE_ERROR, f"the line {line!r} (invalid UTF-8)")
        s.ping()
    s.expect_inbox_empty("after the lines of invalid UTF-8")
    s.finish()
    return f"{len(lines)} lines with invalid UTF-8 (method, argument, tool name, a param): -32700, id null"


def not_a_request(w: World) -> str:
    s = start(w, "not-a-request")
    cases: list[tuple[str, tuple]] = [
        ("[]", (None,)),
        ('[{"jsonrpc":"2.0","id":101,"method":"ping"}]', (None,)),
        ("42", (None,)),
        ('"ping"', (None,)),
        ("null", (None,)),
        ("true", (None,)),
        ('{"jsonrpc":"2.0","id":102}', (None, 102)),
        ('{"jsonrpc":"2.0","id":103,"params":{}}', (None, 103)),
        ('{"id":104,"method":"ping"}', (None, 104)),
        ('{"jsonrpc":"1.0","id":105,"method":"ping"}', (None, 105)),
        ('{"jsonrpc":"2.0","id":106,"method":7}', (None, 106)),
        ('{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', (None,)),
    ]
    for line, ids in cases:
        s.send_raw(line.encode() + b"\n")
        r = s.wait_for(lambda m: "error" in m and any(same_id(m.get("id"), i) for i in ids), CALL_TIMEOUT,
                       f"an error for {line}")
        expect_error(s, r, INVALID_REQUEST, f"the line {line}", ids)
    s.ping()
    s.watch_quiet(0.5, lambda m: m.get("id") in (101,), "the ping inside a batch was answered")
    s.expect_inbox_empty("after the messages that are not requests")
    s.finish()
    return f"{len(cases)} lines (array, batch, number, string, null, true, no method, no/bad jsonrpc, bad method/id): -32600"


def unknown_method(w: World) -> str:
    s = start(w, "unknown-method")
    m = s.request_message("frobnicate/everything")
    s.send(m)
    expect_error(s, s.response(m["id"]), METHOD_NOT_FOUND, "an unknown method", (m["id"],), ("frobnicate/everything",))
    s.notify("notifications/frobnicated", {"x": 1})  # a notification is never answered, known or not
    s.ping()
    s.expect_inbox_empty("after an unknown notification")
    s.finish()
    return "-32601 naming frobnicate/everything; an unknown notification got no answer"


def invalid_params(w: World) -> str:
    s = start(w, "invalid-params")
    m = s.request_message("tools/call", {"name": "no_such_tool", "arguments": {}})
    s.send(m)
    expect_error(s, s.response(m["id"]), INVALID_PARAMS, "tools/call of an unknown tool", (m["id"],), ("no_such_tool",))
    cases = [  # (tool, arguments, the field the error must name)
        ("get_case", {}, "id"),
        ("get_case", {"id": 42}, "id"),
        ("get_case", {"id": "no-such-case-or-check"}, "id"),
        ("check_manifests", {"manifests": 7}, "manifests"),
        ("check_manifests", {"paths": "one.yaml"}, "paths"),
        ("check_manifests", {"paths": ["one.yaml", 3]}, "paths[1]"),
        ("scan_cluster", {"limit": 0}, "limit"),
        ("scan_cluster", {"limit": 5001}, "limit"),
        ("scan_cluster", {"limit": "10"}, "limit"),
        ("scan_cluster", {"limit": 1.5}, "limit"),
        ("scan_cluster", {"frobnicate": True}, "frobnicate"),
        ("scan_cluster", {"kinds": ["Job", "NoSuchKind"]}, "kinds[1]"),
        ("scan_cluster", {"namespace": ["default"]}, "namespace"),
    ]
    for tool, arguments, field in cases:
        what = f"{tool} {json.dumps(arguments)}"
        m = s.request_message("tools/call", {"name": tool, "arguments": arguments})
        s.send(m)
        error = expect_error(s, s.response(m["id"]), INVALID_PARAMS, what, (m["id"],), (field,))
        data = error.get("data")
        check(isinstance(data, dict) and data.get("field") == field,
              f"{s.name}: {what}: error.data is {short(data)}, expected {{\"field\": {json.dumps(field)}}}")
    m = s.request_message("tools/call", {"name": "list_checks", "arguments": [1, 2]})
    s.send(m)
    expect_error(s, s.response(m["id"]), INVALID_PARAMS, "tools/call with arguments that are an array", (m["id"],))
    s.ping()
    s.expect_inbox_empty("after the argument errors")
    s.finish()
    return (f"unknown tool and {len(cases)} bad arguments: -32602 naming the field (message and data.field); "
            f"arguments as an array: -32602")


def oversized_line(w: World) -> str:
    s = start(w, "oversized-line", ("--max-message-bytes", str(SMALL_LIMIT)))

    def padded_ping(id: int, size: int) -> bytes:
        head = b'{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"pad":"' % id
        tail = b'"}}'
        return head + b"x" * (size - len(head) - len(tail)) + tail

    big = padded_ping(900, 200 * 1024)
    s.send_raw(big + b"\n")
    expect_error(s, next_null_id(s, "a 200 KB line"), INVALID_REQUEST, "a 200 KB line (limit 64 KiB)",
                 names=(str(SMALL_LIMIT),))
    took = s.ping()
    # The line over the limit and the next request in one write, cut inside the big line.
    both = padded_ping(901, 300 * 1024) + b"\n" + json.dumps(s.request_message("ping", id=902)).encode() + b"\n"
    s.send_raw(both[:100_000])
    time.sleep(0.2)
    s.send_raw(both[100_000:])
    r = s.response(902, PING_BOUND)
    check(r.get("result") == {}, f"{s.name}: the ping after a 300 KB line: {short(r)}")
    expect_error(s, next_null_id(s, "a 300 KB line"), INVALID_REQUEST, "a 300 KB line")
    # A line that is not JSON and over the limit: one error, not one per chunk.
    s.send_raw(b"{" * (250 * 1024) + b"\n")
    expect_error(s, next_null_id(s, "a 250 KB line of '{'"), INVALID_REQUEST, "a 250 KB line that is not JSON")
    # Exactly at the limit (the newline not counted) is served; one byte more is not.
    r_at = padded_ping(903, SMALL_LIMIT)
    s.send_raw(r_at + b"\n")
    r = s.response(903)
    check(r.get("result") == {}, f"{s.name}: a ping of exactly {SMALL_LIMIT} bytes: {short(r)}")
    s.send_raw(padded_ping(904, SMALL_LIMIT + 1) + b"\n")
    expect_error(s, next_null_id(s, f"a line of {SMALL_LIMIT + 1} bytes"), INVALID_REQUEST,
                 f"a line of {SMALL_LIMIT + 1} bytes")
    s.ping()
    s.watch_quiet(0.5, lambda m: m.get("id") in (900, 901, 904), "a request over the limit was served")
    s.expect_inbox_empty("after the oversized lines")
    s.finish()
    return (f"200 KB / 300 KB / 250 KB lines over {SMALL_LIMIT}: one -32600 each, id null, never served; "
            f"the next line served (ping {took:.2f} s); {SMALL_LIMIT} bytes served, {SMALL_LIMIT + 1} refused")


def big_manifest(w: World) -> str:
    text, jobs = w.jobs(10 * 1024 * 1024, "big")
    s = start(w, "big-manifest")
    m = s.request_message("tools/call", {"name": "check_manifests", "arguments": {"manifests": text}})
    line = json.dumps(m).encode()
    check(len(line) < 16 * 1024 * 1024, f"internal: the request is {len(line)} bytes, over the default limit")
    began = time.monotonic()
    s.send_raw(line + b"\n", BIG_BOUND)
    report = expect_report(s, s.response(m["id"], max(1.0, BIG_BOUND - (time.monotonic() - began))),
                           f"check_manifests of {jobs} Jobs")
    took = time.monotonic() - began
    summary, listed = report.get("summary", {}), len(report.get("objects", []))
    # The whole report, or (a result cut to `limit` objects) the first objects and the count of the rest.
    omitted = report.get("omittedObjects", 0)
    check(summary.get("objects") == jobs and listed > 0 and listed + omitted == jobs,
          f"{s.name}: {jobs} Jobs checked, the report has summary.objects {summary.get('objects')}, "
          f"{listed} objects and omittedObjects {report.get('omittedObjects')}")
    check(summary.get("errors") == 0, f"{s.name}: input errors in the 10 MB manifest: {short(report.get('errors'))}")
    check(all(o.get("file") == "<stdin>" for o in report["objects"][:5]),
          f"{s.name}: inline text is not named <stdin>: {short(report['objects'][0])}")
    s.ping()
    s.finish()
    return (f"{len(line) / 1e6:.1f} MB request, {jobs} Jobs: a CheckReport of {jobs} objects "
            f"({listed} listed, {omitted} omitted) in {took:.1f} s")


def two_in_flight(w: World) -> str:
    s = start(w, "two-in-flight")
    a = s.request_message("tools/call", {"name": "check_manifests",
                                         "arguments": {"manifests": w.jobs(400_000, "alpha")[0]}})
    b = s.request_message("tools/call", {"name": "check_manifests",
                                         "arguments": {"manifests": w.job.replace("resnet-train", "beta-only")}})
    c = s.request_message("tools/call", {"name": "get_case", "arguments": {"id": "llama3-pretraining-2024"}})
    s.send_raw(b"".join(json.dumps(m).encode() + b"\n" for m in (a, b, c)))
    order = []
    while len(order) < 3:
        r = s.wait_for(lambda m: any(same_id(m.get("id"), x["id"]) for x in (a, b, c)), CALL_TIMEOUT * 2,
                       "the responses to three calls in flight")
        order.append(r["id"])
        if same_id(r["id"], a["id"]):
            ra = expect_report(s, r, "the first call")
            check(ra["objects"] and all(o["name"].startswith("alpha-") for o in ra["objects"]),
                  f"{s.name}: the response to id {a['id']} is not the alpha check: {short(ra['objects'][:1])}")
        elif same_id(r["id"], b["id"]):
            rb = expect_report(s, r, "the second call")
            check([o["name"] for o in rb["objects"]] == ["beta-only"],
                  f"{s.name}: the response to id {b['id']} is not the beta check: {short(rb['objects'])}")
        else:
            rc = tool_result(s, r, "get_case")
            check(rc["isError"] is False and rc.get("structuredContent", {}).get("id") == "llama3-pretraining-2024",
                  f"{s.name}: the response to id {c['id']} is not the case: {short(rc)}")
    check(sorted(order) == sorted([a["id"], b["id"], c["id"]]), f"{s.name}: answered ids {order}")
    s.expect_inbox_empty("after the calls in flight")
    s.finish()
    return f"three calls written at once, all answered with their ids (in the order {order})"


def eof_mid_call(w: World) -> str:
    s = start(w, "eof-mid-call")
    text, jobs = w.jobs(3 * 1024 * 1024, "eof")
    m = s.request_message("tools/call", {"name": "check_manifests", "arguments": {"manifests": text}})
    s.send_raw(json.dumps(m).encode() + b"\n")
    s.close_stdin()
    code, took = s.wait_exit(BIG_EXIT_BOUND, "after EOF during a call")
    check(code == 0, f"{s.name}: exit code {code} after EOF during a call, expected 0")
    answered = [r for r in s.inbox if same_id(r.get("id"), m["id"])]
    s.inbox = [r for r in s.inbox if not same_id(r.get("id"), m["id"])]
    s.expect_inbox_empty("after EOF")
    s.check_stderr()
    return (f"stdin closed right after a {len(text) / 1e6:.1f} MB check_manifests: exit 0 in {took:.1f} s "
            f"({'the call was answered first' if answered else 'the call was dropped'})")


def signals(w: World) -> str:
    out = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        s = start(w, f"{sig.name.lower()}-idle")
        s.ping()
        s.proc.send_signal(sig)
        code, took = s.wait_exit(EXIT_BOUND, f"{sig.name} while idle")
        check(code == 0, f"{s.name}: exit code {code} after {sig.name} while idle, expected 0")
        s.expect_inbox_empty(f"after {sig.name}")
        s.check_stderr()
        out.append(f"{sig.name} idle: 0 in {took:.2f} s")

    s = start(w, "sigterm-scan", ("--kubeconfig", w.black_hole_kubeconfig))
    before, _ = w.black_hole.counts()
    m = s.request_message("tools/call", {"name": "scan_cluster", "arguments": {}})
    s.send(m)
    wait_until(lambda: w.black_hole.counts()[0] > before, 15.0, "the scan to connect to the black hole")
    s.proc.send_signal(signal.SIGTERM)
    code, took = s.wait_exit(EXIT_BOUND, "SIGTERM during a scan")
    check(code == 0, f"{s.name}: exit code {code} after SIGTERM during a scan, expected 0")
    s.inbox = [r for r in s.inbox if not same_id(r.get("id"), m["id"])]  # answered or not: both fine
    s.expect_inbox_empty("after SIGTERM")
    s.check_stderr()
    out.append(f"SIGTERM during a hanging scan: 0 in {took:.2f} s")

    s = start(w, "sigterm-check")
    text, _ = w.jobs(3 * 1024 * 1024, "term")
    m = s.request_message("tools/call", {"name": "check_manifests", "arguments": {"manifests": text}})
    s.send(m)
    time.sleep(0.3)
    s.proc.send_signal(signal.SIGTERM)
    code, took = s.wait_exit(BIG_EXIT_BOUND, "SIGTERM during a check")
    check(code == 0, f"{s.name}: exit code {code} after SIGTERM during a check, expected 0")
    s.inbox = [r for r in s.inbox if not same_id(r.get("id"), m["id"])]
    s.expect_inbox_empty("after SIGTERM")
    s.check_stderr()
    out.append(f"SIGTERM during a 3 MB check: 0 in {took:.1f} s")
    return "; ".join(out)


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> float:
    start_time = time.monotonic()
    while not condition():
        if time.monotonic() - start_time > timeout:
            raise Failure(f"no {what} within {timeout:.0f} s")
        time.sleep(0.05)
    return time.monotonic() - start_time


def cancel(w: World) -> str:
    s = start(w, "cancel", ("--kubeconfig", w.black_hole_kubeconfig))
    hole = w.black_hole
    before, _ = hole.counts()
    m = s.request_message("tools/call", {"name": "scan_cluster", "arguments": {}})
    s.send(m)
    wait_until(lambda: hole.counts()[0] > before, 15.0, "connection from the scan to the black hole")
    time.sleep(0.5)
    s.notify("notifications/cancelled", {"requestId": m["id"], "reason": "the user changed their mind"})
    cancelled_at = time.monotonic()
    took = s.ping()
    # The scan stops: its connections to the API server are closed.
    closed_in = wait_until(lambda: hole.counts()[1] == 0, 10.0,
                           "close of the scan's connections to the API server after the cancel")
    s.watch_quiet(max(QUIET_WINDOW, 3.0 - (time.monotonic() - cancelled_at)),
                  lambda r: same_id(r.get("id"), m["id"]), "a response to the cancelled call")
    # Healthy: a cancel of an id nobody uses is ignored, a tool call answers.
    s.notify("notifications/cancelled", {"requestId": 424242})
    r = s.call("list_checks", {})
    check(tool_result(s, r, "list_checks after the cancel")["isError"] is False, f"{s.name}: list_checks failed")
    s.ping()
    s.expect_inbox_empty("after the cancel")
    exit_took = s.finish()
    return (f"scan cancelled: no response for id {m['id']}, ping {took:.2f} s after, the scan's connection "
            f"closed {closed_in:.2f} s after; list_checks answers; exit 0 in {exit_took:.2f} s")


def request_timeout(w: World) -> str:
    s = start(w, "request-timeout", ("--kubeconfig", w.black_hole_kubeconfig, "--request-timeout", "5"))
    began = time.monotonic()
    r = s.call("scan_cluster", {}, 5 + TIMEOUT_SLACK)
    took = time.monotonic() - began
    text = expect_tool_error(s, r, "a scan of an API server that never answers")
    s.ping()
    s.finish()
    return f"isError after {took:.1f} s (--request-timeout 5): {short(text, 160)}"


def kubeconfig(w: World) -> str:
    s = start(w, "missing-kubeconfig", ("--kubeconfig", w.missing_kubeconfig))
    text = expect_tool_error(s, s.call("scan_cluster", {}), "scan_cluster with a missing --kubeconfig")
    check(w.missing_kubeconfig in text, f"{s.name}: the error does not name {w.missing_kubeconfig}: {text!r}")
    s.finish()
    s = start(w, "refused", ("--kubeconfig", w.refused_kubeconfig))
    began = time.monotonic()
    text2 = expect_tool_error(s, s.call("scan_cluster", {}, REFUSED_BOUND), "scan_cluster of a refused address")
    took = time.monotonic() - began
    s.finish()
    return f"missing file: isError naming it; refused port: isError in {took:.2f} s ({short(text2, 120)})"


SCENARIOS: list[tuple[str, Callable[[World], str]]] = [
    ("not-json", not_json),
    ("not-a-request", not_a_request),
    ("unknown-method", unknown_method),
    ("invalid-params", invalid_params),
    ("oversized-line", oversized_line),
    ("invalid-utf8", invalid_utf8),
    ("two-in-flight", two_in_flight),
    ("kubeconfig", kubeconfig),
    ("cancel", cancel),
    ("request-timeout", request_timeout),
    ("signals", signals),
    ("eof-mid-call", eof_mid_call),
    ("big-manifest", big_manifest),
]


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__.split("\n\n")[1] if __doc__ else "fault_test.py BINARY SOURCE_DIR", file=sys.stderr)
        return 2
    binary, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    only = set(sys.argv[3].split(",")) if len(sys.argv) > 3 else None
    with tempfile.TemporaryDirectory(prefix="kubegap-mcp-faults-") as tmp:
        w = World(binary, src, tmp)
        name = ""
        try:
            for name, scenario in SCENARIOS:
                if only and name not in only:
                    continue
                began = time.monotonic()
                detail = scenario(w)
                print(f"ok   - {name}: {detail} [{time.monotonic() - began:.1f} s]", flush=True)
        except Failure as e:
            print(f"FAIL: {name}: {e}", flush=True)
            current = Server.all[-1] if Server.all else None
            if current is not None:
                if current.proc.poll() is None:
                    time.sleep(0.5)  # a sanitizer report may still be being written
                lines = current.stderr_text().splitlines()
                report = next((i for i, line in enumerate(lines) if any(s in line for s in SANITIZER_MARKERS)), None)
                if report is not None:
                    shown, how = lines[max(0, report - 2):report + 40], "its sanitizer report"
                else:
                    shown, how = lines[-25:], "last lines"
                print(f"  stderr of '{current.name}', {how}:", flush=True)
                for line in shown:
                    print(f"    {line}", flush=True)
            return 1
        finally:
            for s in Server.all:
                s.kill()
            w.close()
    lines = sum(s.lines for s in Server.all)
    print(f"ok   - stdout: all {lines} lines from {len(Server.all)} servers were JSON-RPC 2.0 objects", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
