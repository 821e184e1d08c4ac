#!/usr/bin/env bash
# sdk-venv.sh VENV REQUIREMENTS: makes VENV a Python virtual environment holding exactly
# the pinned packages of REQUIREMENTS (tests/mcp/requirements.txt: the official MCP SDK),
# for tests/mcp/sdk_test.py. Idempotent: when VENV/.requirements holds REQUIREMENTS'
# content and every pin is installed at its version, nothing is installed again.
# Exits 77 ("skipped: ...") when Python cannot make a virtual environment (Debian and
# Ubuntu ship venv's ensurepip in the package python3-venv). The packages come from pip's
# configured index (pip.conf, PIP_INDEX_URL), quietly.
# PYTHON overrides the interpreter (default python3).
set -euo pipefail
(($# == 2)) || { echo "usage: sdk-venv.sh VENV REQUIREMENTS" >&2; exit 2; }
venv=$1
requirements=$2
python=${PYTHON:-python3}
stamp=$venv/.requirements
[[ -r $requirements ]] || { echo "sdk-venv.sh: cannot read $requirements" >&2; exit 2; }
command -v "$python" >/dev/null 2>&1 ||
  { echo "skipped: $python not found (the MCP SDK test runs in a Python virtual environment)"; exit 77; }

# Every "name==version" line of REQUIREMENTS is installed at that version (comments,
# blank lines and pip options are ignored). Runs in VENV's interpreter.
pins_installed() {
  "$venv/bin/python" - "$requirements" <<'PY'
import re, sys
from importlib import metadata
ok = True
for line in open(sys.argv[1], encoding="utf-8"):
    line = line.split("#", 1)[0].strip()
    m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*==\s*([^\s;]+)", line)
    if not m:
        continue
    try:
        have = metadata.version(m.group(1))
    except metadata.PackageNotFoundError:
        have = None
    if have != m.group(2):
        print(f"sdk-venv.sh: {m.group(1)} is {have or 'not installed'}, {m.group(2)} is pinned")
        ok = False
sys.exit(0 if ok else 1)
PY
}

if [[ -x $venv/bin/python && -f $stamp ]] && cmp -s "$requirements" "$stamp" && pins_installed; then
  echo "sdk-venv.sh: $venv is up to date with $requirements"
  exit 0
fi

# venv is in the standard library, but Debian moves ensurepip (which puts pip into a new
# environment) into python3-venv: without it `python3 -m venv` fails half-way.
if ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
  echo "skipped: $python cannot create a virtual environment: the venv module or ensurepip is missing (Debian/Ubuntu: apt-get install python3-venv)"
  exit 77
fi

if [[ ! -x $venv/bin/python ]]; then
  # A half-made environment (an interrupted run) is made again; anything else at VENV is
  # not ours to delete.
  if [[ -e $venv && ! -f $venv/pyvenv.cfg ]]; then
    echo "sdk-venv.sh: $venv exists and is not a virtual environment; remove it or choose another path" >&2
    exit 1
  fi
  rm -rf "$venv"
  echo "sdk-venv.sh: creating $venv"
  if ! "$python" -m venv "$venv"; then
    rm -rf "$venv"
    echo "skipped: $python -m venv $venv failed (Debian/Ubuntu: apt-get install python3-venv)"
    exit 77
  fi
fi

rm -f "$stamp"
echo "sdk-venv.sh: installing $requirements into $venv"
if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$requirements"; then
  echo "sdk-venv.sh: pip could not install $requirements into $venv (is the package index reachable? pip's index is set by pip.conf or PIP_INDEX_URL)" >&2
  exit 1
fi
pins_installed || { echo "sdk-venv.sh: $venv does not hold the pinned versions after the install" >&2; exit 1; }
cp "$requirements" "$stamp"
"$venv/bin/python" -c 'import importlib.metadata as m; print("sdk-venv.sh: mcp", m.version("mcp"), "installed")'
