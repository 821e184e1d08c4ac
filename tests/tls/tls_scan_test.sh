#!/usr/bin/env bash
# The webhook's TLS port as a scanner sees it (sslscan, Debian): nothing below TLS 1.2,
# only AEAD suites with forward secrecy, no renegotiation, TLS fallback SCSV honoured.
# Prints the scan. Compression is not tested: Debian's OpenSSL 3 (sslscan's and
# s_client's) cannot offer it, so no client here could show the server refusing it (the
# server sets SSL_OP_NO_COMPRESSION, webhook/server/tls.cpp).
#   tests/tls/tls_scan_test.sh BINARY CERT_DIR
set -uo pipefail
bin=${1:?usage: tls_scan_test.sh BINARY CERT_DIR} certs=${2:?}
command -v sslscan >/dev/null || { echo "FAIL - sslscan is not installed (./dev deps installs it)"; exit 1; }
tmp=$(mktemp -d)
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
failures=0
pass() { echo "ok   - $1"; }
fail() { echo "FAIL - $1"; failures=$((failures + 1)); }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }

"$bin" serve --tls-cert "$certs/tls.crt" --tls-key "$certs/tls.key" --listen 127.0.0.1:0 \
  --health-listen 127.0.0.1:0 --log-format json >"$tmp/serve.log" 2>&1 &
pid=$!
port=
for _ in $(seq 100); do
  port=$(sed -n 's/.*"msg":"serving".*"listen":"127.0.0.1:\([0-9]*\)".*/\1/p' "$tmp/serve.log")
  [[ -n $port ]] && break
  sleep 0.1
done
[[ -n $port ]] || { echo "FAIL - the server did not start:"; cat "$tmp/serve.log"; exit 1; }

timeout 120 sslscan --no-colour --xml="$tmp/scan.xml" "127.0.0.1:$port" >"$tmp/scan.txt" 2>&1
sed -n '/SSL\/TLS Protocols/,$p' "$tmp/scan.txt" | grep -vE '^\s*$' | sed 's/^/     /'
xml=$(cat "$tmp/scan.xml")

for old in 'ssl" version="2' 'ssl" version="3' 'tls" version="1.0' 'tls" version="1.1'; do
  check "protocol ${old//\" version=\"/ } disabled" grep -q "type=\"$old\" enabled=\"0\"" <<<"$xml"
done
check "TLS 1.2 enabled" grep -q 'type="tls" version="1.2" enabled="1"' <<<"$xml"
check "TLS 1.3 enabled" grep -q 'type="tls" version="1.3" enabled="1"' <<<"$xml"
check "renegotiation not supported" grep -q '<renegotiation supported="0"' <<<"$xml"
suites=$(grep -o 'cipher status="[a-z]*" sslversion="[^"]*" bits="[0-9]*" cipher="[^"]*"' <<<"$xml" |
  sed 's/.*cipher="\([^"]*\)"/\1/')
check "the scan found accepted suites ($(wc -w <<<"$suites"))" test -n "$suites"
for suite in $suites; do
  # AEAD: GCM or ChaCha20-Poly1305 (TLS 1.3 suites are AEAD by definition); TLS 1.2
  # suites with ECDHE key exchange (forward secrecy).
  case $suite in
    TLS_AES_*_GCM_*|TLS_CHACHA20_POLY1305_*) pass "TLS 1.3 suite $suite is AEAD" ;;
    ECDHE-*-GCM-*|ECDHE-*-CHACHA20-POLY1305) pass "TLS 1.2 suite $suite is ECDHE with AEAD" ;;
    *) fail "suite $suite is accepted: not an AEAD suite with ECDHE" ;;
  esac
done
check "TLS fallback SCSV supported" grep -q "Server supports TLS Fallback SCSV" "$tmp/scan.txt"

echo "$failures failure(s)"
((failures == 0))
