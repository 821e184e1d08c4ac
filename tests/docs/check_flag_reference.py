#!/usr/bin/env python3
"""The flag reference is generated from the flag tables (webhook/cmd/commands.cpp), and
so must every place that names a serve flag agree with them:

- docs/cli.md holds, between <!-- flags:begin --> and <!-- flags:end -->, exactly what
  `kubegap-webhook help --flag-reference` prints (regenerate it with --write);
- every flag that the manifests pass to `serve` (manifests/base, the Helm chart's
  deployment template) is one the serve table knows.

Usage: check_flag_reference.py SOURCE_DIR BINARY [--write]
"""
import re
import subprocess
import sys

BEGIN, END = "<!-- flags:begin -->", "<!-- flags:end -->"


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    src, binary = sys.argv[1], sys.argv[2]
    write = sys.argv[3:] == ["--write"]
    generated = subprocess.run([binary, "help", "--flag-reference"], check=True, capture_output=True,
                               text=True).stdout
    path = f"{src}/docs/cli.md"
    with open(path, encoding="utf-8") as f:
        doc = f.read()
    if BEGIN not in doc or END not in doc:
        print(f"{path}: no {BEGIN} ... {END} section")
        return 1
    head, rest = doc.split(BEGIN, 1)
    current, tail = rest.split(END, 1)
    wanted = "\n" + generated.strip("\n") + "\n"
    problems = []
    if write:
        with open(path, "w", encoding="utf-8") as f:
            f.write(head + BEGIN + wanted + END + tail)
        print(f"{path}: flag reference regenerated")
    elif current != wanted:
        problems.append(f"{path}: the flag reference differs from `{binary} help --flag-reference` "
                        f"(regenerate: {sys.argv[0]} {src} {binary} --write)")

    serve_help = subprocess.run([binary, "serve", "--help"], check=True, capture_output=True, text=True).stdout
    known = set(re.findall(r"^\s+(?:-\w, )?(--[a-z-]+)", serve_help, re.M))
    for manifest in ("manifests/base/deployment.yaml", "manifests/helm/kubegap-webhook/templates/deployment.yaml"):
        with open(f"{src}/{manifest}", encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                m = re.match(r"\s*-\s+\"?(--[a-z-]+)", line)
                if m and m.group(1) not in known:
                    problems.append(f"{manifest}:{number}: serve has no flag {m.group(1)}")
    for p in problems:
        print(p)
    if not problems:
        print(f"flag reference and manifests agree with the flag tables ({len(known)} serve flags)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
