#!/usr/bin/env python3
"""The layout rules, checked on the sources (issue 26):

- policies/ includes the standard library and policies/ only: a check cannot do I/O.
- each folder webhook/NAME/ includes only headers of its own folder, of policies/ and of
  the layers it uses, and only the external libraries it links, as webhook/CMakeLists.txt
  declares them (the build writes them to layers.txt; pass its path);
- core never includes Asio, Beast or OpenSSL, whatever layers.txt says;
- the includes between our headers have no cycle.

Usage: check_layers.py SOURCE_DIR LAYERS_TXT. Exits 1 listing every violation.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
# The external libraries by the first component of their include path.
EXTERNAL = {"boost": "boost", "openssl": "openssl", "rapidjson": "rapidjson", "yaml-cpp": "yaml-cpp",
            "spdlog": "spdlog", "fmt": "spdlog", "mimalloc.h": "mimalloc"}
# Headers of libraries that are neither the standard library nor ours: what a file that
# links nothing may not include (the standard library's headers have no directory, or are
# C headers, which policies/ does not need).
SOCKET_LIBS = {"boost", "openssl"}


def read_layers(path):
    layers = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, rest = line.split(":", 1)
            uses, libs = rest.split("|")
            layers[name.strip()] = (set(uses.split()), set(libs.split()))
    return layers


def sources(folder):
    for dirpath, _, files in os.walk(folder):
        for name in sorted(files):
            if name.endswith((".h", ".cpp", ".h.in")):
                yield os.path.join(dirpath, name)


def includes(path):
    with open(path, encoding="utf-8") as f:
        return [(m.group(1), m.group(2)) for m in INCLUDE.finditer(f.read())]


def check(source_dir, layers):
    problems = []
    graph = {}
    rel = lambda p: os.path.relpath(p, source_dir)

    for path in sources(os.path.join(source_dir, "policies")):
        graph[rel(path)] = []
        for kind, target in includes(path):
            if kind == '"':
                if not target.startswith("policies/"):
                    problems.append(f"{rel(path)}: policies/ may include only policies/ and the standard library: {target}")
                graph[rel(path)].append(target)
            elif "/" in target or target.endswith(".h"):
                problems.append(f"{rel(path)}: policies/ may include only the standard library: <{target}>")

    webhook = os.path.join(source_dir, "webhook")
    folders = sorted(d for d in os.listdir(webhook) if os.path.isdir(os.path.join(webhook, d)))
    for folder in folders:
        if folder not in layers:
            problems.append(f"webhook/{folder}/: not a layer of webhook/CMakeLists.txt")
            continue
    for name, (uses, libs) in layers.items():
        if name == "core" and libs & SOCKET_LIBS:
            problems.append(f"webhook/CMakeLists.txt: core may not link {sorted(libs & SOCKET_LIBS)}")
        allowed = {f"webhook/{name}/"} | {f"webhook/{u}/" for u in uses if u != "policies"}
        if "policies" in uses:
            allowed.add("policies/")
        for path in sources(os.path.join(webhook, name)):
            graph[rel(path)] = []
            for kind, target in includes(path):
                first = target.split("/", 1)[0]
                if kind == '"':
                    if not any(target.startswith(a) for a in allowed):
                        problems.append(f"{rel(path)}: webhook/{name} does not use the layer of \"{target}\"")
                    graph[rel(path)].append(target)
                elif first in EXTERNAL and EXTERNAL[first] not in libs:
                    problems.append(f"{rel(path)}: webhook/{name} does not link {EXTERNAL[first]}: <{target}>")
                if name == "core" and first in SOCKET_LIBS:
                    problems.append(f"{rel(path)}: core may not include Asio, Beast or OpenSSL: <{target}>")

    problems += cycles(graph)
    return problems


def cycles(graph):
    """Every include cycle among our files, each reported once."""
    found, state, stack = [], {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in graph.get(node, []):
            if nxt not in graph:
                continue
            if state.get(nxt) == "open":
                found.append("include cycle: " + " -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def self_test():
    """The checker on a small tree with one violation of each rule: it must find each."""
    import tempfile
    with tempfile.TemporaryDirectory() as root:
        files = {
            "policies/a.h": '#include <vector>\n#include "webhook/core/x.h"\n',
            "policies/b.cpp": '#include <boost/asio.hpp>\n',
            "webhook/core/x.h": '#include <openssl/ssl.h>\n#include "webhook/core/y.h"\n',
            "webhook/core/y.h": '#include "webhook/core/x.h"\n#include "webhook/server/s.h"\n',
            "webhook/server/s.h": '#include <boost/asio.hpp>\n#include "webhook/core/x.h"\n',
            "webhook/stray/z.h": '',
        }
        for name, text in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(name)), exist_ok=True)
            with open(os.path.join(root, name), "w", encoding="utf-8") as f:
                f.write(text)
        layers = {"core": ({"policies"}, {"openssl"}), "server": ({"policies", "core"}, {"boost"})}
        problems = check(root, layers)
        expected = ["policies/a.h: policies/ may include only policies/",
                    "policies/b.cpp: policies/ may include only the standard library: <boost/asio.hpp>",
                    "webhook/CMakeLists.txt: core may not link ['openssl']",
                    "webhook/core/x.h: core may not include Asio, Beast or OpenSSL",
                    "webhook/core/y.h: webhook/core does not use the layer of \"webhook/server/s.h\"",
                    "webhook/stray/: not a layer",
                    "include cycle: webhook/core/x.h -> webhook/core/y.h -> webhook/core/x.h",
                    "include cycle: webhook/core/x.h -> webhook/core/y.h -> webhook/server/s.h"]
        missing = [e for e in expected if not any(p.startswith(e) for p in problems)]
        for m in missing:
            print(f"self-test: the checker missed: {m}")
        if len(problems) != len(expected):
            print("self-test: expected", len(expected), "problems, found:", *problems, sep="\n  ")
            return 1
        print(f"self-test: each of the {len(expected)} planted violations found")
        return 1 if missing else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    source_dir, layers_txt = sys.argv[1:]
    layers = read_layers(layers_txt)
    for required in ("core", "server", "kube", "report", "cmd"):
        if required not in layers:
            print(f"layers.txt names no layer {required}", file=sys.stderr)
            return 1
    problems = check(source_dir, layers)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} layout violation(s)")
        return 1
    print(f"layout: {len(layers)} layers and policies/ include only what they link; no include cycles")
    return 0


if __name__ == "__main__":
    sys.exit(main())
