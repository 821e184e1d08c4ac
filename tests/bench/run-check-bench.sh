#!/usr/bin/env bash
# Runs the `check` benchmark on the optimised build in build/release (timings of a
# sanitizer build say nothing); prints figures, fails only on wrong results. It never
# builds that tree itself: `./dev test` builds it first; without it this skips (77, ctest
# label release-tree) saying so.
#   tests/bench/run-check-bench.sh SOURCE_DIR
set -euo pipefail
src=$1
cd "$src"
if [[ ! -x build/release/kubegap-webhook ]]; then
  echo "skipped: build/release/kubegap-webhook is not built (the benchmarks measure the release build:" \
       "cmake --preset release && cmake --build --preset release)"
  exit 77
fi
exec tests/bench/check_bench.sh "$src/build/release/kubegap-webhook"
