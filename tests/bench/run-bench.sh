#!/usr/bin/env bash
# The performance harness (./dev bench; ctest's bench label with --quick): the in-process
# review cost by cluster and object size (review_bench), then the webhook against the
# transport floor, nginx with a fixed response (transport_bench.py), then the two plots
# (plot.py) in build/bench. Measures the release build in build/release (a sanitizer
# build's timings say nothing), which it never builds itself: ./dev bench and ./dev test
# build it first; without it, or without nginx or h2load, this skips (77; ctest label
# release-tree) saying what is missing. Prints tables; fails only on a wrong answer or a
# server that does not start, never on a figure.
#   tests/bench/run-bench.sh SOURCE_DIR [--quick]
set -euo pipefail
src=$1
shift
cd "$src"
for binary in build/release/kubegap-webhook build/release/review_bench; do
  if [[ ! -x $binary ]]; then
    echo "skipped: $binary is not built (the benchmarks measure the release build:" \
         "cmake --preset release && cmake --build --preset release)"
    exit 77
  fi
done
command -v h2load >/dev/null || { echo "skipped: h2load not on PATH (the load generator; Debian: nghttp2-client)"; exit 77; }
command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] ||
  { echo "skipped: nginx not found (the transport floor; Debian: nginx-light)"; exit 77; }
out=build/bench
mkdir -p "$out"
build/release/review_bench --series "$out/cost-by-cluster-size.csv"
tests/bench/decode_cost.sh build/release/review_bench tests/bench/reviews/gpu-pod-applied.json
python3 tests/bench/transport_bench.py build/release/kubegap-webhook "$src" --out "$out" "$@"
# Debian's python3-matplotlib belongs to the system interpreter, which may not be the
# first python3 on PATH.
plot_python=python3
[[ -x /usr/bin/python3 ]] && plot_python=/usr/bin/python3
"$plot_python" tests/bench/plot.py "$out" --series "$out/cost-by-cluster-size.csv" \
  --latency "nginx (floor)=$out/latency-nginx.log" "kubegap-webhook=$out/latency-kubegap-webhook.log"
