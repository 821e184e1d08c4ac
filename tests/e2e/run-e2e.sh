#!/usr/bin/env bash
# Runs one end-to-end test file against a local control plane.
#   tests/e2e/run-e2e.sh WEBHOOK_BINARY SOURCE_DIR TEST_FILE
# The control-plane binaries come from build-binaries.sh's cache (built on first use).
set -euo pipefail
webhook=$1 src=$2 test_file=$3
bin_dir=$("$src/tests/e2e/build-binaries.sh" | tail -n 1)
exec python3 "$test_file" "$bin_dir" "$webhook" "$src"
