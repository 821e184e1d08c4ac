#!/usr/bin/env bash
# run-fuzz.sh FUZZER SOURCE_DIR TARGET SECONDS [SCRATCH]: one libFuzzer run of TARGET's
# binary (built by the fuzz preset) for SECONDS, seeded from tests/fuzz/corpus/TARGET and
# tests/fuzz/regressions/TARGET. New inputs go to SCRATCH (default: a fresh temporary
# directory), never into the checked-in corpus: libFuzzer writes to its first corpus
# directory only. Crashes land in SCRATCH/artifacts. Ends with the run's figures.
#
# Exit 77 (ctest: skipped) when FUZZER has not been built: the dev tree registers these
# runs whether or not build/fuzz exists (./dev test builds it).
set -euo pipefail
fuzzer=$1 src=$2 target=$3 seconds=$4 scratch=${5:-}
if [[ ! -x $fuzzer ]]; then
  echo "skipped: $fuzzer is not built (the libFuzzer tree: ./dev build fuzz)"
  exit 77
fi
[[ -n $scratch ]] || scratch=$(mktemp -d "${TMPDIR:-/tmp}/kubegap-fuzz-$target.XXXXXX")
mkdir -p "$scratch/corpus" "$scratch/artifacts"
seeds=("$src/tests/fuzz/corpus/$target")
[[ -d $src/tests/fuzz/regressions/$target ]] && seeds+=("$src/tests/fuzz/regressions/$target")
log=$scratch/fuzz.log
# -timeout: one input taking 10 s is a finding (a slow input), as is 2 GiB of memory.
rc=0
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -dict="$src/tests/fuzz/dict/$target.dict" -artifact_prefix="$scratch/artifacts/" \
  "$scratch/corpus" "${seeds[@]}" >"$log" 2>&1 || rc=$?
# The figures: the last status line (cov = edges covered, ft = features, corp = corpus
# entries/size, exec/s) and libFuzzer's final statistics.
last=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
echo "$target: ${last:-no status line}"
grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' "$log" || true
echo "$target: new inputs in $scratch/corpus ($(find "$scratch/corpus" -type f | wc -l) files)"
if ((rc != 0)); then
  tail -n 60 "$log"
  echo "$target: libFuzzer failed (exit $rc); the input is in $scratch/artifacts/ — add it to tests/fuzz/regressions/$target/"
  ls -l "$scratch/artifacts/" || true
  exit "$rc"
fi
