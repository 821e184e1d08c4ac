#!/usr/bin/env bash
# server_cost.sh WEBHOOK REVIEW_JSON [N]: instructions the server spends on one review
# request, everything included (TLS, HTTP, the handler, the log line, metrics), from
# callgrind: the serving process answering N+1 requests on one keep-alive connection
# less the same answering 1, divided by N (default 1000). The machine has no hardware
# counters; callgrind's count is deterministic where timing is not. Prints the figure
# and the ten functions whose own cost grew most per request. Skips (exit 0, saying why)
# without valgrind or h2load. Listens on loopback, on ports the kernel picks.
set -euo pipefail
webhook=$1 review=$2 n=${3:-1000}
for tool in valgrind callgrind_annotate h2load openssl; do
  command -v "$tool" >/dev/null || { echo "server cost: skipped ($tool not installed)"; exit 0; }
done
[[ -x $webhook && -r $review ]] || { echo "server_cost.sh: no executable $webhook or no readable $review" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kubegap-server-cost.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$here/../../certs/gen-certs.sh" --out "$tmp/certs" >/dev/null 2>&1

# run COUNT OUT: callgrind's profile of a server that answered COUNT reviews.
run() {
  local count=$1 out=$2 log="$tmp/server.log" pid port
  : >"$log"
  valgrind --tool=callgrind --callgrind-out-file="$out" "$webhook" serve --tls-cert "$tmp/certs/tls.crt" \
    --tls-key "$tmp/certs/tls.key" --listen 127.0.0.1:0 --health-listen 127.0.0.1:0 --threads 1 \
    --log-format json >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 1 200); do
    port=$(sed -n 's/.*"msg":"serving".*"listen":"127.0.0.1:\([0-9]*\)".*/\1/p' "$log" | head -1)
    [[ -n $port ]] && break
    kill -0 "$pid" 2>/dev/null || { echo "server_cost.sh: the webhook exited before serving" >&2; cat "$log" >&2; exit 2; }
    sleep 0.1
  done
  [[ -n $port ]] || { echo "server_cost.sh: the webhook did not log 'serving'" >&2; kill "$pid"; exit 2; }
  local done_line
  done_line=$(h2load --h1 -n "$count" -c 1 -t 1 -d "$review" -H 'Content-Type: application/json' \
    "https://127.0.0.1:$port/validate" 2>&1 | grep '^status codes:')
  kill -TERM "$pid"
  wait "$pid" || true
  [[ $done_line == "status codes: $count 2xx"* ]] || { echo "server_cost.sh: not every answer was 2xx: $done_line" >&2; exit 2; }
}
run 1 "$tmp/one.out"
run $((n + 1)) "$tmp/many.out"
one=$(awk '/^summary:/ {print $2}' "$tmp/one.out")
many=$(awk '/^summary:/ {print $2}' "$tmp/many.out")
echo "server: $(((many - one) / n)) instructions per review request ($(basename "$review"), $n requests, one connection)"
# Each function's own cost, per request: the ten that grew most.
python3 - "$tmp/one.out" "$tmp/many.out" "$n" <<'EOF'
import collections, re, subprocess, sys

def own(path):
    text = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", path],
                          capture_output=True, text=True, check=True).stdout
    cost = collections.Counter()
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \([ \d.%]+\)\s+(\S.*)", line)
        if m and "=>" not in line and ":" in m.group(2):
            cost[m.group(2)] += int(m.group(1).replace(",", ""))
    return cost

one, many, n = own(sys.argv[1]), own(sys.argv[2]), int(sys.argv[3])
rows = sorted(((many[k] - one[k]) / n, k) for k in many)
for per, name in reversed(rows[-10:]):
    name = name.split(":", 1)[-1].replace("(anonymous namespace)::", "")
    print(f"  {per:8.0f}  {re.sub(r'[(<].*', '', name)[:100]}")
EOF
