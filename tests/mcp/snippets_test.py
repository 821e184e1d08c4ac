#!/usr/bin/env python3
"""The client snippets of docs/mcp.md run as written: they start a server that answers.

    python3 tests/mcp/snippets_test.py BINARY SOURCE_DIR

docs/mcp.md must hold
  - a Claude Code snippet: a fenced sh block (sh, bash, shell or console) with
    `claude mcp add [OPTIONS] NAME -- kubegap-webhook mcp [FLAGS]`;
  - a Codex snippet: a fenced toml block with `[mcp_servers.kubegap]` whose `command` is a
    string and `args` a list of strings (it must parse with tomllib).
A fenced json block with "mcpServers" (Claude Code's project file, .mcp.json) is held to the
same rules: "kubegap" with type "stdio", `command` and `args`. The same snippets anywhere else
in the documentation (README.md, docs/*.md) are held to the same rules. A Codex
`tool_timeout_sec` must exceed the server's --request-timeout (as docs/mcp.md advises). Each server command line is then run the way its client would run it: `command`
and `args` (and `env`) of the TOML as they are; the words after `--` of the Claude Code line
after the shell's expansion of `~` and `$VAR` (the shell runs `claude mcp add`), with its
`-e KEY=VALUE` as the environment. `kubegap-webhook` (a bare name or a path ending in it) is
replaced by BINARY; `kubectl kubegap ...` runs as kubectl would run the plugin: a
`kubectl-kubegap` symlink to BINARY. The server must answer `initialize` (protocolVersion 2025-06-18) and
`tools/list` (the five tools) over stdio, and exit 0 when its stdin closes, with nothing
but JSON-RPC on stdout and no sanitizer report on stderr. A server command that is neither
is reported and not run.

Python 3.11 standard library only. Prints one line per snippet; the first failure prints
"FAIL: ..." and exits 1. Every read is bounded.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import shlex
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

PROTOCOL = "2025-06-18"
TOOLS = {"check_manifests", "scan_cluster", "explain", "list_checks", "get_case"}
SERVER_NAME = "kubegap"        # the name both clients register the server under
PROGRAM = "kubegap-webhook"
DEFAULT_POLICY = "policies/default-policy.yaml"
READ_TIMEOUT = 30.0            # spawn + one answer (the ASan build is slow)
EXIT_BOUND = 15.0
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                     "ERROR: UndefinedBehaviorSanitizer", "WARNING: ThreadSanitizer")
SHELL_LANGUAGES = {"sh", "bash", "shell", "console", "zsh"}
# `claude mcp add` options that take a value (the name is the only positional argument).
CLAUDE_VALUE_OPTIONS = {"-s", "--scope", "-t", "--transport", "-e", "--env", "-H", "--header"}


class Failure(Exception):
    pass


def check(condition: bool, what: str) -> None:
    if not condition:
        raise Failure(what)


@dataclass
class Block:
    file: str
    line: int      # of the opening fence
    language: str
    text: str


@dataclass
class Launch:
    label: str                     # file:line and the client, for the report line
    where: str                     # file:line and which client
    argv: list[str]                # as the client would start it, before BINARY replaces the program
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None


def fenced_blocks(path: Path, rel: str) -> list[Block]:
    """Fenced code blocks (``` or ~~~, CommonMark: the closing fence as long or longer)."""
    blocks, lines = [], path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^( {0,3})(`{3,}|~{3,})\s*([^`\s]*)", lines[i])
        if not m:
            i += 1
            continue
        indent, fence, language = len(m.group(1)), m.group(2), m.group(3).lower()
        start, body = i, []
        i += 1
        while i < len(lines) and not re.match(r"^ {0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$",
                                               lines[i]):
            body.append(lines[i][indent:] if lines[i][:indent].isspace() else lines[i])
            i += 1
        blocks.append(Block(rel, start + 1, language, "\n".join(body) + "\n"))
        i += 1
    return blocks


def shell_commands(block: Block) -> list[str]:
    """The commands of a shell block: `\\` continuations joined, `$ ` prompts dropped (in a
    console block only the prompted lines are commands), comments and blank lines skipped."""
    out, pending = [], ""
    for raw in block.text.splitlines():
        line = raw
        if block.language == "console":
            if pending == "" and not line.lstrip().startswith(("$ ", "# ", "% ")):
                continue  # output, not a command
            if pending == "":
                line = line.lstrip()[2:]
        if pending == "" and line.lstrip().startswith("#"):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        command = (pending + line).strip()
        pending = ""
        if command:
            out.append(command)
    if pending.strip():
        out.append(pending.strip())
    return out


def expand_word(word: str, home: str) -> str:
    """What the user's shell makes of an (unquoted) word: ~ and $VAR."""
    if word == "~" or word.startswith("~/"):
        word = home + word[1:]
    return re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: os.environ.get(m.group(1), "")
                  if m.group(1) != "HOME" else home, word)


def claude_launches(block: Block, home: str) -> list[Launch]:
    launches = []
    for command in shell_commands(block):
        if not re.search(r"(^|[\s;&|])claude\s+mcp\s+add(\s|$)", command):
            continue
        where = f"{block.file}:{block.line} (Claude Code: {command})"
        try:
            words = shlex.split(command, comments=True)
        except ValueError as e:
            raise Failure(f"{where}: the shell cannot parse it: {e}")
        at = next(i for i in range(len(words) - 2) if words[i:i + 3] == ["claude", "mcp", "add"])
        check(words[:at] == [] or all("=" in w for w in words[:at]),
              f"{where}: something other than variable assignments before `claude`: {words[:at]}")
        check("--" in words[at:], f"{where}: no `--` before the server's command line")
        dashdash = words.index("--", at)
        options, server = words[at + 3:dashdash], [expand_word(w, home) for w in words[dashdash + 1:]]
        check(bool(server), f"{where}: nothing after `--`")
        positional, env, i = [], {}, 0
        while i < len(options):
            word = options[i]
            name, _, inline = word.partition("=")
            if name in CLAUDE_VALUE_OPTIONS:
                value = inline if inline else (options[i + 1] if i + 1 < len(options) else None)
                check(value is not None, f"{where}: {name} without a value")
                i += 1 if inline else 2
                if name in ("-t", "--transport"):
                    check(value == "stdio", f"{where}: transport {value!r}: the server speaks stdio")
                if name in ("-e", "--env"):
                    key, eq, val = value.partition("=")
                    check(bool(eq) and key != "", f"{where}: {name} {value!r} is not KEY=VALUE")
                    env[key] = expand_word(val, home)
                continue
            check(not word.startswith("-"), f"{where}: unknown `claude mcp add` option {word!r}")
            positional.append(word)
            i += 1
        check(positional == [SERVER_NAME],
              f"{where}: the server's name should be {SERVER_NAME!r} (as in [mcp_servers.{SERVER_NAME}]), "
              f"found {positional}")
        launches.append(Launch(f"{block.file}:{block.line} Claude Code", where, server, env))
    return launches


def codex_launches(block: Block) -> list[Launch]:
    where = f"{block.file}:{block.line} (Codex)"
    try:
        config = tomllib.loads(block.text)
    except tomllib.TOMLDecodeError as e:
        raise Failure(f"{where}: the TOML does not parse: {e}")
    servers = config.get("mcp_servers")
    check(isinstance(servers, dict) and isinstance(servers.get(SERVER_NAME), dict),
          f"{where}: no [mcp_servers.{SERVER_NAME}] table: {json.dumps(config)}")
    server = servers[SERVER_NAME]
    command, args = server.get("command"), server.get("args", [])
    check(isinstance(command, str) and command != "", f"{where}: `command` is not a string: {command!r}")
    check("args" in server, f"{where}: no `args` (the server needs at least [\"mcp\"])")
    check(isinstance(args, list) and all(isinstance(a, str) for a in args),
          f"{where}: `args` is not a list of strings: {args!r}")
    env = server.get("env", {})
    check(isinstance(env, dict) and all(isinstance(v, str) for v in env.values()),
          f"{where}: `env` is not a table of strings: {env!r}")
    tool_timeout = server.get("tool_timeout_sec")
    if tool_timeout is not None:
        request_timeout = 120
        for i, a in enumerate(args[:-1]):
            if a == "--request-timeout":
                request_timeout = int(args[i + 1])
        for a in args:
            if a.startswith("--request-timeout="):
                request_timeout = int(a.partition("=")[2])
        check(isinstance(tool_timeout, (int, float)) and tool_timeout > request_timeout,
              f"{where}: tool_timeout_sec {tool_timeout!r} is not above the server's --request-timeout "
              f"({request_timeout} s): Codex would give up on a slow scan before the server answers")
    cwd = server.get("cwd")
    check(cwd is None or isinstance(cwd, str), f"{where}: `cwd` is not a string: {cwd!r}")
    return [Launch(f"{block.file}:{block.line} Codex",
                   f"{where}: command = {json.dumps(command)}, args = {json.dumps(args)}", [command, *args],
                   dict(env), cwd)]


def project_file_launches(block: Block) -> list[Launch]:
    """Claude Code's .mcp.json: {"mcpServers": {"kubegap": {"type": "stdio", "command", "args", "env"}}}."""
    where = f"{block.file}:{block.line} (.mcp.json)"
    try:
        config = json.loads(block.text)
    except ValueError as e:
        raise Failure(f"{where}: the JSON does not parse: {e}")
    servers = config.get("mcpServers") if isinstance(config, dict) else None
    check(isinstance(servers, dict) and isinstance(servers.get(SERVER_NAME), dict),
          f"{where}: no mcpServers.{SERVER_NAME}: {json.dumps(config)[:300]}")
    server = servers[SERVER_NAME]
    check(server.get("type", "stdio") == "stdio", f"{where}: type {server.get('type')!r}, the server speaks stdio")
    command, args, env = server.get("command"), server.get("args", []), server.get("env", {})
    check(isinstance(command, str) and command != "", f"{where}: `command` is not a string: {command!r}")
    check(isinstance(args, list) and all(isinstance(a, str) for a in args),
          f"{where}: `args` is not a list of strings: {args!r}")
    check(isinstance(env, dict) and all(isinstance(v, str) for v in env.values()),
          f"{where}: `env` is not an object of strings: {env!r}")
    return [Launch(f"{block.file}:{block.line} .mcp.json",
                   f"{where}: command = {json.dumps(command)}, args = {json.dumps(args)}", [command, *args], dict(env))]


# --- running a launch -------------------------------------------------------------------

class Pipe:
    def __init__(self, proc: subprocess.Popen, what: str):
        self.proc, self.what = proc, what
        self.buffer = b""
        os.set_blocking(proc.stdout.fileno(), False)

    def send(self, message: dict) -> None:
        try:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise Failure(f"{self.what}: the server exited (code {self.proc.poll()}) before reading "
                          f"{message.get('method')}")

    def read(self, id: int, timeout: float = READ_TIMEOUT) -> dict:
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            while True:
                while b"\n" in self.buffer:
                    line, self.buffer = self.buffer.split(b"\n", 1)
                    try:
                        message = json.loads(line)
                    except ValueError:
                        raise Failure(f"{self.what}: a stdout line that is not JSON: {line[:200]!r}")
                    check(isinstance(message, dict) and message.get("jsonrpc") == "2.0",
                          f"{self.what}: a stdout line that is not JSON-RPC 2.0: {line[:200]!r}")
                    if message.get("id") == id and "method" not in message:
                        return message
                left = deadline - time.monotonic()
                check(left > 0, f"{self.what}: no response to id {id} within {timeout:.0f} s")
                if sel.select(min(left, 1.0)):
                    chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
                    if not chunk:
                        try:
                            code = self.proc.wait(5)
                        except subprocess.TimeoutExpired:
                            code = "none yet"
                        raise Failure(f"{self.what}: the server closed its stdout (exit code {code}) "
                                      f"before answering id {id}")
                    self.buffer += chunk

    def drain(self, timeout: float) -> bytes:
        deadline, rest = time.monotonic() + timeout, b""
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            while time.monotonic() < deadline:
                if sel.select(0.2):
                    chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
                    if not chunk:
                        break
                    rest += chunk
        return self.buffer + rest


def run(launch: Launch, binary: str, src: str, home: str, stderr_path: Path) -> str:
    argv = list(launch.argv)
    program = argv[0]
    if Path(program).name == "kubectl" and argv[1:2] == [SERVER_NAME]:
        # kubectl runs the plugin kubectl-kubegap with the words after `kubectl kubegap`.
        plugin = Path(home).parent / "plugin" / "kubectl-kubegap"
        if not plugin.exists():
            plugin.parent.mkdir(exist_ok=True)
            plugin.symlink_to(binary)
        argv = [str(plugin), *argv[2:]]
    elif Path(program).name == PROGRAM:
        argv[0] = binary
    else:
        return f"not run: its program is {program!r}, neither {PROGRAM} nor kubectl {SERVER_NAME}"
    check(len(argv) > 1 and argv[1] == "mcp", f"{launch.where}: the server's first argument is not `mcp`: {argv[1:]}")
    # A policy file of the reader's own (`--policy my-policy.yaml`) is stood in for by the
    # built-in policy's file, so that the snippet's other flags are still run.
    notes = []
    for i, word in enumerate(argv):
        flag, eq, value = word.partition("=")
        if flag in ("-p", "--policy") and (eq or i + 1 < len(argv)):
            value = value if eq else argv[i + 1]
            if not Path(launch.cwd or src, value).is_file():
                stand_in = str(Path(src, DEFAULT_POLICY))
                if eq:
                    argv[i] = f"{flag}={stand_in}"
                else:
                    argv[i + 1] = stand_in
                notes.append(f"--policy {value} stood in for by {DEFAULT_POLICY}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update(HOME=home, NO_COLOR="1")
    env.update(launch.env)
    cwd = launch.cwd or src
    with open(stderr_path, "wb") as stderr:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, cwd=cwd,
                                    env=env)
        except OSError as e:
            raise Failure(f"{launch.where}: cannot start {shlex.join(argv)}: {e}")
        try:
            pipe = Pipe(proc, launch.where)
            pipe.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"protocolVersion": PROTOCOL, "capabilities": {},
                                  "clientInfo": {"name": "kubegap-snippets-test", "version": "1"}}})
            r = pipe.read(1)
            result = r.get("result")
            check(isinstance(result, dict), f"{launch.where}: initialize failed: {json.dumps(r)[:300]}")
            check(result.get("protocolVersion") == PROTOCOL,
                  f"{launch.where}: initialize negotiated {result.get('protocolVersion')!r}")
            check(result.get("serverInfo", {}).get("name") == PROGRAM,
                  f"{launch.where}: serverInfo {result.get('serverInfo')}")
            pipe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            pipe.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            r = pipe.read(2)
            tools = {t.get("name") for t in (r.get("result") or {}).get("tools", [])}
            check(tools == TOOLS, f"{launch.where}: tools/list gave {sorted(tools)}, expected {sorted(TOOLS)}")
            proc.stdin.close()
            rest = pipe.drain(EXIT_BOUND)
            check(rest.strip() == b"", f"{launch.where}: unexpected output after the last answer: {rest[:200]!r}")
            try:
                code = proc.wait(EXIT_BOUND)
            except subprocess.TimeoutExpired:
                raise Failure(f"{launch.where}: the server did not exit within {EXIT_BOUND:.0f} s of EOF")
            check(code == 0, f"{launch.where}: exit code {code} on EOF, expected 0")
        except Failure as e:
            stderr.flush()
            tail = stderr_path.read_text(errors="replace").splitlines()[-15:]
            raise Failure(str(e) + ("\n  the server's stderr:\n    " + "\n    ".join(tail) if tail else ""))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)
    text = stderr_path.read_text(errors="replace")
    found = [line for line in text.splitlines() if any(s in line for s in SANITIZER_MARKERS)]
    check(not found, f"{launch.where}: sanitizer report on stderr: {found[:3]}")
    return (f"`{shlex.join(launch.argv)}` answered initialize and tools/list ({len(tools)} tools), exit 0 on EOF"
            + "".join(f" ({n})" for n in notes))


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: snippets_test.py BINARY SOURCE_DIR", file=sys.stderr)
        return 2
    binary, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    doc = Path(src, "docs", "mcp.md")
    try:
        check(doc.is_file(), f"{doc} does not exist: it holds the Claude Code and Codex snippets")
        docs = [Path(src, "README.md"), *sorted(Path(src, "docs").glob("*.md"))]
        launches: list[Launch] = []
        per_file: dict[str, tuple[int, int]] = {}
        for path in docs:
            if not path.is_file():
                continue
            rel = str(path.relative_to(src))
            claude = codex = 0
            for block in fenced_blocks(path, rel):
                if block.language in SHELL_LANGUAGES and re.search(r"claude\s+mcp\s+add", block.text):
                    found = claude_launches(block, "/home/snippet-user")
                    claude += len(found)
                    launches += found
                elif block.language == "toml" and "mcp_servers" in block.text:
                    found = codex_launches(block)
                    codex += len(found)
                    launches += found
                elif block.language in ("json", "jsonc") and '"mcpServers"' in block.text:
                    found = project_file_launches(block)
                    claude += len(found)
                    launches += found
            if claude or codex:
                per_file[rel] = (claude, codex)
        claude_in_doc, codex_in_doc = per_file.get("docs/mcp.md", (0, 0))
        check(claude_in_doc > 0, "docs/mcp.md: no ```sh block with `claude mcp add ... -- kubegap-webhook mcp`")
        check(codex_in_doc > 0, f"docs/mcp.md: no ```toml block with [mcp_servers.{SERVER_NAME}]")
        check(any(Path(l.argv[0]).name == PROGRAM for l in launches if "Claude Code" in l.label),
              f"no Claude Code snippet starts {PROGRAM}")
        check(any(Path(l.argv[0]).name == PROGRAM for l in launches if l.label.endswith("Codex")),
              f"no Codex snippet starts {PROGRAM}")
        for rel, (claude, codex) in per_file.items():
            print(f"ok   - {rel}: {claude} Claude Code snippet(s) (.mcp.json included), {codex} Codex snippet(s)",
                  flush=True)
        with tempfile.TemporaryDirectory(prefix="kubegap-mcp-snippets-") as tmp:
            home = Path(tmp, "home")
            home.mkdir()
            for i, launch in enumerate(launches):
                # The Claude Code words were expanded with a stand-in home; run with the real one.
                launch.argv = [w.replace("/home/snippet-user", str(home)) for w in launch.argv]
                launch.env = {k: v.replace("/home/snippet-user", str(home)) for k, v in launch.env.items()}
                detail = run(launch, binary, src, str(home), Path(tmp, f"{i:02d}.stderr"))
                print(f"ok   - {launch.label}: {detail}", flush=True)
    except Failure as e:
        print(f"FAIL: {e}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
