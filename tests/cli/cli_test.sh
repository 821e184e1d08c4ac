#!/usr/bin/env bash
# The command line as users run it: usage errors exit 2 with a clear message, --help works
# on every command, configuration errors exit 1 naming the file, and `serve` answers a
# review over TLS and exits 0 on SIGTERM.
#   tests/cli/cli_test.sh BINARY CERT_DIR SOURCE_DIR
set -uo pipefail
bin=$1 certs=$2 src=$3
tmp=$(mktemp -d)
server_pid=
cleanup() { [[ -n $server_pid ]] && kill -9 "$server_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
failures=0
pass() { echo "ok   - $1"; }
fail() { echo "FAIL - $1"; failures=$((failures + 1)); }

# expect CODE PATTERN DESCRIPTION -- ARGS...: exit code and a pattern in stdout+stderr.
expect() {
  local code=$1 pattern=$2 what=$3; shift 4
  local out rc
  out=$("$bin" "$@" 2>&1); rc=$?
  if [[ $rc -ne $code ]]; then fail "$what: exit $rc, want $code; output: $out"
  elif ! grep -qE -- "$pattern" <<<"$out"; then fail "$what: output lacks /$pattern/: $out"
  else pass "$what"; fi
}

expect 2 "Usage" "no arguments prints usage and exits 2" --
expect 2 'unknown command "frobnicate"' "unknown command exits 2" -- frobnicate
expect 0 "Usage" "--help" -- --help
expect 0 "Usage: kubegap-webhook serve" "serve --help" -- serve --help
expect 0 "Usage: kubegap-webhook cases" "cases --help" -- cases --help
expect 0 "Usage: kubegap-webhook version" "version --help" -- version --help
expect 0 "Usage: kubegap-webhook scan" "scan --help" -- scan --help
# As a kubectl plugin (a symlink named kubectl-kubegap): the help names `kubectl kubegap`.
ln -sf "$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")" "$tmp/kubectl-kubegap"
out=$("$tmp/kubectl-kubegap" --help 2>&1); rc=$?
if [[ $rc -eq 0 ]] && grep -q "kubectl kubegap check \[flags\] PATH" <<<"$out" && ! grep -q "kubegap-webhook check" <<<"$out"; then
  pass "kubectl-kubegap --help names kubectl kubegap"
else fail "kubectl-kubegap --help: exit $rc: $out"; fi
out=$("$tmp/kubectl-kubegap" check "$src/tests/fixtures/workloads/pytorchjob.yaml" 2>&1); rc=$?
if [[ $rc -eq 0 ]] && grep -q "PyTorchJob ml-research/pytorch-simple" <<<"$out"; then pass "kubectl kubegap check works"
else fail "kubectl-kubegap check: exit $rc: $out"; fi
expect 0 "^kind: ValidatingAdmissionPolicy$" "export vap prints policies" -- export vap
expect 2 'check "disruption-budget" has no CEL form' "export vap --checks with an unexportable check exits 2" \
  -- export vap --checks disruption-budget
expect 2 "export needs a form: vap" "export without a form exits 2" -- export
expect 2 'flag --output: expected text, json or sarif, got "yaml"' "scan -o yaml exits 2" -- scan -o yaml
expect 2 "kubegap-webhook scan: .*nowhere.kubeconfig" "scan with a missing kubeconfig names it, exit 2" \
  -- scan --kubeconfig "$tmp/nowhere.kubeconfig"
expect 2 'flag --audit-reports: expected wgpolicyk8s, openreports or none, got "yes"' "serve --audit-reports yes exits 2" \
  -- serve --tls-cert c --tls-key k --audit-reports yes
expect 2 'flag --audit-lease: expected NAMESPACE/NAME, got "oops"' "serve --audit-lease without a slash exits 2" \
  -- serve --tls-cert c --tls-key k --audit-lease oops
expect 0 "^kubegap-webhook [0-9]+\.[0-9]+\.[0-9]+" "version prints the version" -- version
expect 2 "unknown flag --bogus" "unknown flag exits 2" -- serve --bogus x
expect 2 "flag --tls-cert is required" "serve without --tls-cert exits 2" -- serve --tls-key k
expect 2 "flag --listen" "bad --listen exits 2" -- serve --tls-cert c --tls-key k --listen nonsense
expect 2 "not a port number" "bad port exits 2" -- serve --tls-cert c --tls-key k --listen 127.0.0.1:99999
expect 2 "flag --threads" "--threads 0 exits 2" -- serve --tls-cert c --tls-key k --threads 0
expect 2 "flag --client-names needs --client-ca" "serve --client-names without --client-ca exits 2" \
  -- serve --tls-cert c --tls-key k --client-names kube-apiserver
expect 2 'flag --client-names: an empty name' "serve --client-names with an empty name exits 2" \
  -- serve --tls-cert c --tls-key k --client-ca ca --client-names "kube-apiserver,,x"
expect 2 "flag --request-timeout" "serve --request-timeout 0 exits 2" -- serve --tls-cert c --tls-key k --request-timeout 0
expect 2 "flag --max-connections-per-source" "serve --max-connections-per-source over the cap exits 2" \
  -- serve --tls-cert c --tls-key k --max-connections 8 --max-connections-per-source 9
expect 2 "flag --log-format" "--log-format xml exits 2" -- serve --tls-cert c --tls-key k --log-format xml
expect 2 "flag --log-level" "--log-level loud exits 2" -- serve --tls-cert c --tls-key k --log-level loud
expect 2 "needs a value" "flag without value exits 2" -- serve --tls-cert
expect 2 "flag --output" "cases --output xml exits 2" -- cases --output xml
expect 1 "$tmp/missing.crt" "missing certificate file exits 1 naming it" -- \
  serve --tls-cert "$tmp/missing.crt" --tls-key "$certs/tls.key" --listen 127.0.0.1:0 --health-listen 127.0.0.1:0
expect 1 "certs/gen-certs.sh" "missing certificate says how to make one" -- \
  serve --tls-cert "$tmp/missing.crt" --tls-key "$certs/tls.key" --listen 127.0.0.1:0 --health-listen 127.0.0.1:0
# A port in use: the message names the address, the flag and what to do.
python3 -c 'import socket, time; s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(30)' > "$tmp/port" &
holder=$!
for _ in $(seq 50); do [[ -s $tmp/port ]] && break; sleep 0.1; done
busy=$(cat "$tmp/port")
expect 1 "cannot listen on 127.0.0.1:$busy \(--listen\): .*another process is using the port.*--listen HOST:PORT" \
  "port in use names the address and the flag" -- \
  serve --tls-cert "$certs/tls.crt" --tls-key "$certs/tls.key" --listen "127.0.0.1:$busy" --health-listen 127.0.0.1:0
expect 1 "cannot listen on 127.0.0.1:$busy \(--health-listen\)" "health port in use names its flag" -- \
  serve --tls-cert "$certs/tls.crt" --tls-key "$certs/tls.key" --listen 127.0.0.1:0 --health-listen "127.0.0.1:$busy"
kill "$holder" 2>/dev/null
expect 0 "Usage: kubegap-webhook check" "help COMMAND is COMMAND --help" -- help check
expect 0 '"kind": "CheckReport"' "check -o json (kubectl's short flag)" -- check -o json "$src/manifests/examples/training-pod-gaps.yaml"
expect 0 '"kind": "CheckReport"' "check -ojson -p FILE" -- check -ojson -p "$src/policies/default-policy.yaml" "$src/manifests/examples/training-pod-gaps.yaml"
expect 0 "^kubegap-webhook [0-9]" "--version" -- --version
# ./dev: --help is not an error; an unknown command is, with the usage on stderr.
for arg in --help -h help; do
  out=$("$src/dev" "$arg" 2>/dev/null); rc=$?
  if [[ $rc -eq 0 && $out == *"./dev run"* && $out == *"./dev test"* ]]; then pass "./dev $arg prints usage, exit 0"
  else fail "./dev $arg: exit $rc, output: $out"; fi
done
out=$("$src/dev" frobnicate 2>&1 >/dev/null); rc=$?
if [[ $rc -eq 2 && $out == *"./dev run"* ]]; then pass "./dev with an unknown command exits 2 with usage"
else fail "./dev frobnicate: exit $rc, stderr: $out"; fi
printf 'enabledChecks: [checkpoint-volume]\nfrobnicate: true\n' > "$tmp/bad-policy.yaml"
expect 1 "bad-policy.yaml:2: frobnicate: unknown key" "bad policy exits 1 naming file, line and key" -- \
  serve --tls-cert "$certs/tls.crt" --tls-key "$certs/tls.key" --policy "$tmp/bad-policy.yaml" --listen 127.0.0.1:0 --health-listen 127.0.0.1:0

# cases --output json: every check with its cases in order, and the case library.
if "$bin" cases --output json | python3 -c '
import json, sys
doc = json.load(sys.stdin)
ids = {c["id"] for c in doc["cases"]}
assert {"acme-llm-pretraining-2023", "osm-amsterdam-power-2022"} <= ids, ids
assert [c["id"] for c in doc["checks"]] == ["checkpoint-volume", "disruption-budget", "zone-spread",
                                             "gpu-health-tolerations", "restart-on-failure"], doc["checks"]
for check in doc["checks"]:
    assert check["remedy"] and len(check["cases"]) >= 2, check
    for cited in check["cases"]:
        assert cited["id"] in ids and cited["why"], cited
for c in doc["cases"]:
    for key in ("id", "title", "date", "checks", "sources", "key_figures"):
        assert c[key], (c["id"], key)
    assert all(f["source"].startswith("https://") for f in c["key_figures"]), c["id"]
    assert all(s["url"].startswith("https://") for s in c["sources"]), c["id"]
'; then pass "cases --output json lists the checks and the library"; else fail "cases --output json"; fi
expect 0 "^zone-spread: " "cases (text) lists the checks" -- cases
expect 0 "What the sources say:" "cases CASE-ID prints the case in full" -- cases osm-amsterdam-power-2022
expect 0 '"id": "osm-amsterdam-power-2022"' "cases CASE-ID --output json" -- cases osm-amsterdam-power-2022 --output json
expect 0 "^zone-spread: " "cases CHECK-ID prints that check" -- cases zone-spread
expect 2 'no case or check "nope"' "cases with an unknown id exits 2 naming it" -- cases nope

# The copy of `cases` in docs/checks.md and the cases column of the README's check table
# match the binary.
if python3 - "$bin" "$src/README.md" "$src/docs/checks.md" <<'PY'
import json, re, subprocess, sys
binary, readme, checks_doc = sys.argv[1], open(sys.argv[2]).read(), open(sys.argv[3]).read()
text = subprocess.run([binary, "cases"], check=True, capture_output=True, text=True).stdout
block = re.search(r"#+ Why each check cites its cases.*?```text\n(.*?)```", checks_doc, re.S)
assert block, "docs/checks.md: no ```text block under 'Why each check cites its cases'"
assert block.group(1) == text, "docs/checks.md's copy of `kubegap-webhook cases` differs: regenerate it"
doc = json.loads(subprocess.run([binary, "cases", "--output", "json"], check=True, capture_output=True, text=True).stdout)
for check in doc["checks"]:
    row = re.search(r"^\| `" + re.escape(check["id"]) + r"` \|.*\| ([^|]*) \|$", readme, re.M)
    assert row, "README: no check-table row for " + check["id"]
    listed = [c.strip() for c in row.group(1).split(",")]
    assert listed == [c["id"] for c in check["cases"]], (check["id"], listed)
PY
then pass "docs/checks.md's case list and the README's check table match cases"; else fail "docs/checks.md's case list or the README's check table differ from cases"; fi

# Every relative link in the README names a file in the repository.
missing=$(cd "$src" && grep -ohE '\]\([^)#]+' README.md | sed 's/^](//' | grep -v '^https\?:' | sort -u |
  while read -r f; do [[ -e $f ]] || echo "$f"; done)
if [[ -z $missing ]]; then pass "the README's relative links all resolve"; else fail "README links to missing files: $missing"; fi

# serve: ephemeral ports, JSON logs, one review over TLS, then SIGTERM.
"$bin" serve --tls-cert "$certs/tls.crt" --tls-key "$certs/tls.key" --listen 127.0.0.1:0 \
  --health-listen 127.0.0.1:0 --threads 2 --log-format json 2>"$tmp/serve.log" &
server_pid=$!
for _ in $(seq 100); do grep -q '"msg":"serving"' "$tmp/serve.log" 2>/dev/null && break; sleep 0.1; done
port=$(python3 -c 'import json,sys; print(next(json.loads(l)["listen"] for l in open(sys.argv[1]) if "serving" in l).rsplit(":",1)[1])' "$tmp/serve.log")
health=$(python3 -c 'import json,sys; print(next(json.loads(l)["health_listen"] for l in open(sys.argv[1]) if "serving" in l).rsplit(":",1)[1])' "$tmp/serve.log")
if [[ -z $port || -z $health ]]; then fail "serve did not log its ports"; cat "$tmp/serve.log"; exit 1; fi
response=$(curl -sS --max-time 10 --cacert "$certs/ca.crt" -H 'Content-Type: application/json' \
  --data-binary @"$src/tests/fixtures/reviews/gpu-pod-gaps.json" "https://127.0.0.1:$port/validate?timeout=10s")
if python3 -c '
import json, sys
r = json.loads(sys.argv[1])["response"]
assert r["allowed"] is True and r["uid"] == "0f4e1b6a-3c1d-4a8e-9b52-7d2c1e9a4f10"
w = r["warnings"]
for check in ("checkpoint-volume", "zone-spread", "gpu-health-tolerations"):
    assert any(x.startswith("kubegap/" + check + ": ") and "(case " in x for x in w), (check, w)
' "$response"; then pass "serve answers a review over TLS with the warnings"; else fail "serve review: $response"; fi
[[ $(curl -s --max-time 5 "http://127.0.0.1:$health/readyz") == ready ]] && pass "/readyz is ready" || fail "/readyz"
# Read whole, then searched: `curl | grep -q` fails under pipefail when grep stops
# reading before curl has written everything (curl exits 23 on the closed pipe).
metrics=$(curl -s --max-time 5 "http://127.0.0.1:$health/metrics")
grep -q 'kubegap_reviews_total{code="200"} 1' <<<"$metrics" && pass "/metrics counts the review" \
  || fail "/metrics: $(grep kubegap_reviews_total <<<"$metrics")"
kill -TERM "$server_pid"
for _ in $(seq 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$server_pid" 2>/dev/null; then fail "serve still running 10 s after SIGTERM"
else wait "$server_pid"; rc=$?; [[ $rc -eq 0 ]] && pass "SIGTERM exits 0" || fail "SIGTERM exit code $rc"; fi
server_pid=
if python3 -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
reviews = [l for l in lines if l["msg"] == "review"]
assert len(reviews) == 1, lines
r = reviews[0]
assert r["uid"] == "0f4e1b6a-3c1d-4a8e-9b52-7d2c1e9a4f10" and r["kind"] == "Pod" and r["operation"] == "CREATE"
assert r["object"] == "ml-research/llm-pretrain-0" and isinstance(r["latency_us"], int)
assert r["found"] == "checkpoint-volume,zone-spread,gpu-health-tolerations", r["found"]
assert any(l["msg"] == "stopped" for l in lines)
' "$tmp/serve.log"; then pass "JSON log: one parseable line per review"; else fail "JSON log"; cat "$tmp/serve.log"; fi

# A second signal during the drain stops at once: a request whose body never comes holds
# the drain open (--shutdown-timeout 60), the first SIGTERM starts it, the second ends it.
"$bin" serve --tls-cert "$certs/tls.crt" --tls-key "$certs/tls.key" --listen 127.0.0.1:0 \
  --health-listen 127.0.0.1:0 --threads 1 --shutdown-timeout 60 --log-format json 2>"$tmp/serve2.log" &
server_pid=$!
for _ in $(seq 100); do grep -q '"msg":"serving"' "$tmp/serve2.log" 2>/dev/null && break; sleep 0.1; done
port=$(python3 -c 'import json,sys; print(next(json.loads(l)["listen"] for l in open(sys.argv[1]) if "serving" in l).rsplit(":",1)[1])' "$tmp/serve2.log")
python3 - "$port" "$certs/ca.crt" "$server_pid" <<'EOF' && pass "a second SIGTERM ends the drain at once" || fail "second SIGTERM"
import os, signal, socket, ssl, sys, time
port, ca, pid = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])

def running():  # a process that has exited stays a zombie until the shell waits for it
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False

context = ssl.create_default_context(cafile=ca)
conn = context.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1")
conn.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
time.sleep(0.3)
os.kill(pid, signal.SIGTERM)
time.sleep(1.0)
if not running():
    sys.exit("serve stopped at the first signal although a request was open")
os.kill(pid, signal.SIGTERM)
for _ in range(100):
    if not running():
        break
    time.sleep(0.05)
else:
    sys.exit("serve still running 5 s after the second SIGTERM")
EOF
kill -0 "$server_pid" 2>/dev/null && { kill -KILL "$server_pid"; fail "serve outlived the second SIGTERM"; }
wait "$server_pid" 2>/dev/null
server_pid=
grep -q '"msg":"second signal: stopping without waiting for the drain"' "$tmp/serve2.log" \
  && pass "the second signal is logged" || { fail "no second-signal log line"; cat "$tmp/serve2.log"; }

echo "$failures failure(s)"
exit $((failures > 0))
