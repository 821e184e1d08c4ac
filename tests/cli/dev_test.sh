#!/usr/bin/env bash
# ./dev's own behaviour, without building anything: its functions are sourced and the
# slow commands (apt-get, cmake) replaced by stand-ins. A step is one line when it starts
# and one with its duration; a failing step shows its whole output and exits with its
# code; colour only on a terminal and never with NO_COLOR; `install` runs cmake --install
# with the prefix and says when the prefix is not on PATH.
#   tests/cli/dev_test.sh SOURCE_DIR
set -uo pipefail
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
pass() { echo "ok   - $1"; }
fail() { echo "FAIL - $1"; failures=$((failures + 1)); }

# in_dev SCRIPT: runs SCRIPT in a bash that sourced ./dev (stdout and stderr together).
in_dev() { TMPDIR=$tmp bash -c "source '$src/dev'; $1" 2>&1; }

out=$(in_dev 'step "quiet step" sh -c "echo chatter; echo more chatter >&2"'); rc=$?
if [[ $rc -eq 0 && $out == *"==> quiet step"* && $out =~ "==> quiet step: done in "[0-9]+s && $out != *chatter* ]]; then
  pass "a step that succeeds prints its start and its duration, not its output"
else fail "quiet step: exit $rc, output: $out"; fi

out=$(in_dev 'step "failing step" sh -c "echo line one; echo line two >&2; exit 3"; echo not reached'); rc=$?
if [[ $rc -eq 3 && $out == *"line one"* && $out == *"line two"* && $out == *"failing step: failed (exit 3)"* &&
      $out == *"kept in $tmp/kubegap-dev."* && $out != *"not reached"* ]]; then
  pass "a failing step shows its whole output, keeps the log, exits with its code"
else fail "failing step: exit $rc, output: $out"; fi

out=$(KUBEGAP_VERBOSE=1 in_dev 'step "verbose step" echo shown'); rc=$?
if [[ $rc -eq 0 && $out == *shown* ]]; then pass "KUBEGAP_VERBOSE=1 shows a step's output"
else fail "verbose: exit $rc, output: $out"; fi
# ... on stderr: a step inside $(...) (the demo's control-plane build) must not add to
# what the caller captures.
out=$(KUBEGAP_VERBOSE=1 TMPDIR=$tmp bash -c "source '$src/dev'; step 'verbose step' echo shown" 2>/dev/null)
if [[ -z $out ]]; then pass "KUBEGAP_VERBOSE=1 writes a step's output to stderr, not stdout"
else fail "verbose step wrote to stdout: $out"; fi

# Colour: never into a pipe; on a terminal (script(1)) unless NO_COLOR.
esc=$'\033['
out=$(in_dev 'log hello')
if [[ $out == "==> hello" ]]; then pass "no colour codes when stderr is not a terminal"; else fail "log in a pipe: $(cat -v <<<"$out")"; fi
script -qec "bash -c 'source $src/dev; log hello'" /dev/null </dev/null >"$tmp/tty" 2>&1
if grep -qF "$esc" "$tmp/tty"; then pass "bold on a terminal"; else fail "no bold on a terminal: $(cat -v "$tmp/tty")"; fi
NO_COLOR=1 script -qec "bash -c 'source $src/dev; log hello'" /dev/null </dev/null >"$tmp/tty" 2>&1
if grep -qF "$esc" "$tmp/tty"; then fail "NO_COLOR still bold: $(cat -v "$tmp/tty")"; else pass "NO_COLOR: no colour on a terminal"; fi

# On a terminal a build shows ninja's counter on one line instead of its output.
script -qec "bash -c 'source $src/dev; step building sh -c \"echo [1/2] Building a.o; echo [2/2] Linking x\"'" /dev/null \
  </dev/null >"$tmp/tty" 2>&1
if grep -q "2/2" "$tmp/tty" && grep -q "building: done in" "$tmp/tty" && ! grep -q "Linking" "$tmp/tty"; then
  pass "on a terminal a step shows ninja's counter, not its lines"
else fail "terminal progress: $(cat -v "$tmp/tty")"; fi

# deps: only missing packages are installed, through one quiet step; apt's failure is shown.
out=$(in_dev 'packages=(bash kubegap-no-such-package); apt_install() { echo "apt says: no $*"; return 100; }; deps'); rc=$?
if [[ $rc -eq 100 && $out == *"installing 1 Debian package(s) with apt-get: kubegap-no-such-package"* &&
      $out == *"apt says: no kubegap-no-such-package"* ]]; then
  pass "deps installs only what is missing, and shows apt's output when it fails"
else fail "deps: exit $rc, output: $out"; fi
out=$(in_dev 'packages=(bash); test_packages=(); apt_install() { echo called; }; deps test'); rc=$?
if [[ $rc -eq 0 && -z $out ]]; then pass "deps with nothing missing is silent"; else fail "deps, nothing missing: $out"; fi
if grep -q '^packages=.*umoci\|^packages=.*skopeo' "$src/dev"; then fail "./dev run would install the image tools"
else pass "the image tools are test packages only"; fi

# install: cmake --install with the prefix; a hint when the prefix's bin is not on PATH.
out=$(in_dev 'deps() { :; }; build() { :; }; cmake() { echo "cmake $*"; }; install_binary '"$tmp/prefix"); rc=$?
if [[ $rc -eq 0 && $out == *"installing into $tmp/prefix: done"* && $out == *"$tmp/prefix/bin is not on PATH"* ]]; then
  pass "install: cmake --install into the prefix, with a PATH hint"
else fail "install: exit $rc, output: $out"; fi
out=$(in_dev 'deps() { :; }; build() { :; }; cmake() { echo "cmake $*" >'"$tmp/cmake-args"'; }; KUBEGAP_VERBOSE=1 install_binary '"$tmp/prefix")
if [[ $(cat "$tmp/cmake-args") == "cmake --install build/release --prefix $tmp/prefix" ]]; then
  pass "install runs cmake --install build/release --prefix PREFIX"
else fail "install ran: $(cat "$tmp/cmake-args" 2>&1)"; fi

# test: ctest's summary ends the output; when tests were skipped, one line after it names
# them and the reasons they printed (read from ctest's JUnit files). ctest is a stand-in
# that writes a JUnit file with the given test cases.
junit_case() {  # NAME [SKIP_REASON]
  if [[ -n ${2:-} ]]; then
    printf '<testcase name="%s" status="notrun"><skipped message="SKIP_RETURN_CODE=77"/><system-out>%s\n</system-out></testcase>' \
      "$1" "skipped: $2"
  else printf '<testcase name="%s" status="run"><system-out>ok</system-out></testcase>' "$1"; fi
}
fake_ctest() {  # the body of a ctest() that writes $bench_cases or $suite_cases
  cat <<'FAKE'
ctest() {
  local out= label=
  while (($#)); do case $1 in --output-junit) out=$2; shift ;; -L) label=bench ;; esac; shift; done
  local cases=$suite_cases
  [[ $label == bench ]] && cases=$bench_cases
  printf '<?xml version="1.0"?><testsuite>%s</testsuite>' "$cases" >"$out"
  printf '\n100%% tests passed, 0 tests failed out of 3\n\nTotal Test time (real) =   1.00 sec\n'
}
FAKE
}
stubs="deps() { :; }; build() { :; }; $(fake_ctest)"
suite_cases="$(junit_case unit_a)$(junit_case e2e_pods 'go not on PATH (the e2e tests build kube-apiserver with it)')$(junit_case e2e_scan 'go not on PATH (the e2e tests build kube-apiserver with it)')$(junit_case tsan_server_and_watcher 'build/tsan is not built')"
bench_cases="$(junit_case perf_bench)"
out=$(KUBEGAP_JUNIT_DIR=$tmp bench_cases=$bench_cases suite_cases=$suite_cases in_dev "$stubs; test_all" 2>/dev/null); rc=$?
last=$(tail -n 1 <<<"$out")
want="skipped 3 test(s): e2e_pods, e2e_scan: go not on PATH (the e2e tests build kube-apiserver with it); tsan_server_and_watcher: build/tsan is not built"
if [[ $rc -eq 0 && $last == "$want" && $(tail -n 2 <<<"$out" | head -n 1) == "Total Test time"* ]]; then
  pass "test: after ctest's summary, one line names the skipped tests and why"
else fail "test with skips: exit $rc, last line: $last, output: $out"; fi
suite_cases="$(junit_case unit_a)$(junit_case unit_b)"
out=$(KUBEGAP_JUNIT_DIR=$tmp bench_cases=$bench_cases suite_cases=$suite_cases in_dev "$stubs; test_all" 2>/dev/null); rc=$?
if [[ $rc -eq 0 && $(tail -n 1 <<<"$out") == "Total Test time"* ]]; then
  pass "test: nothing skipped, ctest's summary ends the output"
else fail "test without skips: exit $rc, output: $out"; fi
bench_cases="$(junit_case check_bench 'build/release/kubegap-webhook is not built')"
out=$(KUBEGAP_JUNIT_DIR=$tmp bench_cases=$bench_cases suite_cases=$suite_cases in_dev "$stubs; test_all" 2>/dev/null); rc=$?
if [[ $rc -eq 0 && $(tail -n 1 <<<"$out") == "skipped 1 test(s): check_bench: build/release/kubegap-webhook is not built" ]]; then
  pass "test: a benchmark skipped in the first run is named too"
else fail "test with a skipped benchmark: exit $rc, output: $out"; fi

echo "# ./dev: $failures failure(s)"
[[ $failures -eq 0 ]]
