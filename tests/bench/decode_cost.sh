#!/usr/bin/env bash
# decode_cost.sh REVIEW_BENCH REVIEW_JSON: instructions per byte of decoding one review,
# by the one-pass decoder and by the DOM decoder it replaced, from callgrind (the machine
# has no hardware counters; callgrind's count is deterministic). Each decoder's cost is
# the difference between N+1 and 1 decodes, so start-up is left out. Prints a table;
# skips (exit 0, saying why) without valgrind.
set -euo pipefail
bench=$1 review=$2
n=200
command -v valgrind >/dev/null || { echo "decode instructions: skipped (valgrind not installed)"; exit 0; }
[[ -x $bench && -r $review ]] || { echo "decode_cost.sh: no executable $bench or no readable $review" >&2; exit 2; }
bytes=$(wc -c <"$review")
instructions() {  # instructions of `review_bench --decode $1 $review $2`
  local out
  out=$(mktemp "${TMPDIR:-/tmp}/kubegap-callgrind.XXXXXX")
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bench" --decode "$1" "$review" "$2" >/dev/null 2>&1
  # A run that failed leaves no summary: say so rather than print a cost of 0.
  local count
  count=$(awk '/^summary:/ {print $2}' "$out")
  rm -f "$out"
  [[ -n $count ]] || { echo "decode_cost.sh: callgrind recorded nothing for $1 $2" >&2; exit 2; }
  echo "$count"
}
echo
echo "| decoder ($(basename "$review"), $bytes bytes) | instructions per decode | per byte (target <= 5) |"
echo "|---|---|---|"
for decoder in one-pass dom; do
  one=$(instructions 1 "$decoder")
  many=$(instructions $((n + 1)) "$decoder")
  per=$(((many - one) / n))
  printf '| %s | %s | %s |\n' "$decoder" "$per" "$(awk -v p="$per" -v b="$bytes" 'BEGIN {printf "%.1f", p / b}')"
done
