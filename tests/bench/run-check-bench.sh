#!/usr/bin/env bash
# Runs the `check` benchmark on an optimised build (timings of a sanitizer build say
# nothing). Builds the release preset if needed; prints figures, fails only on wrong results.
#   tests/bench/run-check-bench.sh SOURCE_DIR
set -euo pipefail
src=$1
cd "$src"
cmake --preset release >/dev/null
cmake --build --preset release --parallel "$(nproc)" >/dev/null
exec tests/bench/check_bench.sh "$src/build/release/kubegap-webhook"
