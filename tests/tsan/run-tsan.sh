#!/usr/bin/env bash
# The server and cluster-watcher tests under ThreadSanitizer, the server on 4 I/O threads, then on 1
# (the dev tree's ASan build cannot run TSan). Skips (77) when the tsan tree has not been
# built: `./dev test` builds it (cmake --preset tsan && cmake --build --preset tsan).
#
#   tests/tsan/run-tsan.sh SOURCE_DIR
set -euo pipefail
src=$1
tree=$src/build/tsan
if [[ ! -x $tree/tests/server_test || ! -x $tree/tests/cluster_watcher_test ]]; then
  echo "skipped: build/tsan is not built (the ThreadSanitizer tree: cmake --preset tsan && cmake --build --preset tsan)"
  exit 77
fi
# halt_on_error: the first race fails the test instead of scrolling past.
# suppressions.txt: races inside library constructs TSan cannot see into (each explained).
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$src/tests/tsan/suppressions.txt ${TSAN_OPTIONS:-}"
KUBEGAP_TEST_IO_THREADS=4 ctest --test-dir "$tree" \
  -R '^(ServerTest|PolicyReload|TlsFiles|Reflector|ClusterWatcher|SnapshotPublisher|Backoff)' \
  --output-on-failure --parallel 2 --no-tests=error
# The server once more with one thread running its loop, as `serve --threads 1` runs it:
# connections share the loop's executor then, without a strand each, while the tests'
# threads and the drain's own loop reach them from outside.
KUBEGAP_TEST_IO_THREADS=1 ctest --test-dir "$tree" -R '^ServerTest' --output-on-failure --parallel 2 --no-tests=error
