#!/usr/bin/env bash
# The performance harness (./dev bench; ctest's bench label with --quick): the in-process
# review cost by cluster and object size (review_bench), then the webhook against the
# transport floor, nginx with a fixed response (transport_bench.py), then the two plots
# (plot.py) in build/bench. Builds the release preset first: a sanitizer build's timings
# say nothing. Prints tables; fails only on a wrong answer or a server that does not
# start, never on a figure.
#   tests/bench/run-bench.sh SOURCE_DIR [--quick]
set -euo pipefail
src=$1
shift
cd "$src"
cmake --preset release >/dev/null
cmake --build --preset release --parallel "$(nproc)" >/dev/null
out=build/bench
mkdir -p "$out"
build/release/review_bench --series "$out/cost-by-cluster-size.csv"
python3 tests/bench/transport_bench.py build/release/kubegap-webhook "$src" --out "$out" "$@"
# Debian's python3-matplotlib belongs to the system interpreter, which may not be the
# first python3 on PATH.
plot_python=python3
[[ -x /usr/bin/python3 ]] && plot_python=/usr/bin/python3
"$plot_python" tests/bench/plot.py "$out" --series "$out/cost-by-cluster-size.csv" \
  --latency "nginx (floor)=$out/latency-nginx.log" "kubegap-webhook=$out/latency-kubegap-webhook.log"
