#!/usr/bin/env bash
# clang-tidy-16 (checks and reasons in .clang-tidy at the root) over every .cpp in
# policies/ and webhook/ (not tests/, not the generated case_data.cpp), with the project
# headers they include. Fails listing every warning or error; a .cpp missing from the
# compilation database fails too, as it would otherwise go unchecked. Skips (77) when
# clang-tidy-16 / run-clang-tidy-16 is not installed or BUILD_DIR has no
# compile_commands.json (configure any preset first). Slow: about 15 s CPU a file.
#   tests/layout/run_clang_tidy.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
if (($# != 2)); then
  echo "usage: $0 SOURCE_DIR BUILD_DIR" >&2
  exit 2
fi
src=$(realpath "$1")
build=$(realpath -m "$2")
tidy=$(command -v clang-tidy-16 || true)
runner=$(command -v run-clang-tidy-16 || true)
if [[ -z $tidy || -z $runner ]]; then
  echo "skipped: clang-tidy-16 or run-clang-tidy-16 is not installed (apt-get install clang-tidy-16)"
  exit 77
fi
if [[ ! -f $build/compile_commands.json ]]; then
  echo "skipped: $build/compile_commands.json is missing (configure the build first)"
  exit 77
fi

mapfile -t files < <(cd "$src" && find policies webhook -type f -name '*.cpp' | sort)
if ((${#files[@]} == 0)); then
  echo "no .cpp files under $src/policies or $src/webhook" >&2
  exit 1
fi

# Every file must be in the database: run-clang-tidy only runs the files it lists.
missing=$(python3 - "$build/compile_commands.json" "$src" "${files[@]}" <<'EOF'
import json, os, sys
db, src, files = sys.argv[1], sys.argv[2], sys.argv[3:]
known = set()
for entry in json.load(open(db)):
    path = entry["file"]
    if not os.path.isabs(path):
        path = os.path.join(entry["directory"], path)
    known.add(os.path.realpath(path))
print("\n".join(f for f in files if os.path.realpath(os.path.join(src, f)) not in known))
EOF
)
if [[ -n $missing ]]; then
  echo "not in $build/compile_commands.json (reconfigure the build):"
  echo "$missing"
  exit 1
fi

# One anchored regex: SOURCE_DIR/(policies|webhook)/....cpp, nothing from tests/ or BUILD_DIR.
src_re=$(printf '%s' "$src" | sed 's/[][\.*^$+?(){}|]/\\&/g')
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
(cd "$src" && "$runner" -clang-tidy-binary "$tidy" -p "$build" -j "$(nproc)" -quiet \
  "^$src_re/(policies|webhook)/.*\.cpp\$") >"$log" 2>&1 || status=$?

# Diagnostics, with the source line and caret clang-tidy prints under each one.
findings=$(grep -E '(warning|error): |^Error while processing|terminated by signal' "$log" || true)
if [[ -n $findings ]]; then
  # Drop the runner's echo of each command line and clang's "N warnings generated."
  grep -vE '^[0-9]+ (warnings?|errors?)( and [0-9]+ errors?)? generated\.$|^Suppressed [0-9]+ warnings' "$log" |
    grep -vF "$tidy " || true
  count=$(grep -cE '(warning|error): ' <<<"$findings" || true)
  echo "clang-tidy-16: $count finding(s) in policies/ and webhook/ (checks: .clang-tidy)"
  exit 1
fi
if ((status != 0)); then
  cat "$log"
  echo "run-clang-tidy-16 failed (exit $status) without printing a diagnostic"
  exit 1
fi
echo "clang-tidy-16: ${#files[@]} files in policies/ and webhook/ clean (checks: .clang-tidy)"
