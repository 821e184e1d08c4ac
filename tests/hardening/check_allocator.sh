#!/usr/bin/env bash
# The release binary runs on mimalloc (cmake/Dependencies.cmake): libmimalloc is among the
# libraries it needs, ahead of libc (the first malloc the loader finds is the process's),
# and `serve` says in its "serving" log line that mimalloc serves its malloc (the server
# asks the allocator about a block malloc returned, so a load order that left glibc in
# charge would say so).
#   tests/hardening/check_allocator.sh BINARY CERT_DIR
# Exit 0 as promised, 1 not (each line says what), 77 readelf is missing or the tree
# was configured without mimalloc. Listens on loopback, on ports the kernel picks; stops
# the server itself.
set -uo pipefail
bin=$1 certs=$2
command -v readelf >/dev/null || { echo "skipped: readelf (binutils) is not installed"; exit 77; }
[[ -x $bin ]] || { echo "FAIL - no binary at $bin"; exit 1; }
# A tree configured without it (-DKUBEGAP_MIMALLOC=OFF) is not this test's to judge.
if grep -qs '^KUBEGAP_MIMALLOC:BOOL=OFF$' "$(dirname "$bin")/CMakeCache.txt"; then
  echo "skipped: $(dirname "$bin") is configured with KUBEGAP_MIMALLOC=OFF"
  exit 77
fi
failures=0
result() { # ok?, description
  if [[ $1 == 0 ]]; then echo "ok   - $2"; else echo "FAIL - $2"; failures=$((failures + 1)); fi
}
needed=$(readelf -dW "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
mi=$(grep -n '^libmimalloc' <<<"$needed" | cut -d: -f1)
libc=$(grep -n '^libc\.so' <<<"$needed" | cut -d: -f1)
[[ -n $mi && -n $libc && $mi -lt $libc ]]
result $? "libmimalloc is needed before libc (NEEDED: $(tr '\n' ' ' <<<"$needed"))"

tmp=$(mktemp -d)
log=$tmp/serve.log
"$bin" serve --tls-cert "$certs/tls.crt" --tls-key "$certs/tls.key" --listen 127.0.0.1:0 \
  --health-listen 127.0.0.1:0 --log-format json >"$log" 2>&1 &
pid=$!
trap 'kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
line=
for _ in $(seq 1 100); do
  line=$(grep -m1 '"msg":"serving"' "$log")
  [[ -n $line ]] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
kill -TERM "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
allocator=$(sed -n 's/.*"allocator":"\([^"]*\)".*/\1/p' <<<"$line")
[[ $allocator == "mimalloc "[0-9]* ]]
result $? "serve runs on mimalloc (its serving line says allocator \"${allocator:-none: $(head -c 300 "$log")}\")"
echo "# allocator of $bin: $failures failure(s)"
[[ $failures -eq 0 ]]
