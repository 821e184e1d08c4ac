#!/usr/bin/env bash
# The C++ sources as clang-format (.clang-format at the root) writes them: fails listing
# each file that differs, with the command that fixes it. Skips (77) when clang-format-16
# is not installed (./dev deps installs it).
#   tests/layout/check_format.sh SOURCE_DIR
set -euo pipefail
cd "$1"
format=$(command -v clang-format-16 || true)
if [[ -z $format ]]; then
  echo "skipped: clang-format-16 is not installed (./dev deps installs it)"
  exit 77
fi
mapfile -t files < <(git ls-files -co --exclude-standard -- 'policies/*.cpp' 'policies/*.h' 'webhook/*.cpp' \
  'webhook/*.h' 'tests/*.cpp' 'tests/*.h' | sort -u)
bad=()
for f in "${files[@]}"; do
  [[ -f $f ]] || continue
  "$format" --style=file --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  printf 'not clang-formatted: %s\n' "${bad[@]}"
  echo "${#bad[@]} of ${#files[@]} files differ; fix with: clang-format-16 -i ${bad[*]}"
  exit 1
fi
echo "${#files[@]} C++ files as clang-format-16 writes them"
