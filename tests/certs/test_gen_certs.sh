#!/usr/bin/env bash
# certs/gen-certs.sh, checked with openssl: the chain verifies, the SANs are the service's
# DNS names plus localhost, 127.0.0.1 and the extras, the keys are ECDSA P-256 with mode
# 0600, the validity is --days, a second run refuses to overwrite keys without --force,
# --force replaces them, and the printed caBundle is ca.crt.
#   tests/certs/test_gen_certs.sh SOURCE_DIR
set -uo pipefail
src=${1:?usage: test_gen_certs.sh SOURCE_DIR}
gen=$src/certs/gen-certs.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
pass() { echo "ok   - $1"; }
fail() { echo "FAIL - $1"; failures=$((failures + 1)); }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }

out=$tmp/out
svc=kg-svc ns=kg-ns
if "$gen" --out "$out" --service "$svc" --namespace "$ns" --san extra.example.com --san 10.0.0.7 \
     --days 30 >"$tmp/stdout" 2>"$tmp/stderr"; then
  pass "gen-certs.sh exits 0"
else
  fail "gen-certs.sh exits 0 (stderr: $(cat "$tmp/stderr"))"
  exit 1
fi
for f in ca.crt ca.key tls.crt tls.key client.crt client.key; do check "wrote $f" test -s "$out/$f"; done
check "client.crt is for client authentication (extendedKeyUsage clientAuth)" \
  grep -q "TLS Web Client Authentication" <(openssl x509 -in "$out/client.crt" -noout -ext extendedKeyUsage 2>/dev/null)
check "client.crt verifies against ca.crt" test "$(openssl verify -CAfile "$out/ca.crt" "$out/client.crt" 2>&1)" = "$out/client.crt: OK"

# The chain.
verify=$(openssl verify -CAfile "$out/ca.crt" "$out/tls.crt" 2>&1)
check "openssl verify -CAfile ca.crt tls.crt: OK ($verify)" test "$verify" = "$out/tls.crt: OK"
check "ca.crt is a CA (basicConstraints CA:TRUE)" \
  grep -q "CA:TRUE" <(openssl x509 -in "$out/ca.crt" -noout -ext basicConstraints 2>/dev/null)
check "tls.crt is not a CA (CA:FALSE)" \
  grep -q "CA:FALSE" <(openssl x509 -in "$out/tls.crt" -noout -ext basicConstraints 2>/dev/null)
check "tls.crt is for server authentication (extendedKeyUsage serverAuth)" \
  grep -q "TLS Web Server Authentication" <(openssl x509 -in "$out/tls.crt" -noout -ext extendedKeyUsage 2>/dev/null)
check "tls.crt subject CN is $svc.$ns.svc" \
  grep -q "CN *= *$svc.$ns.svc" <(openssl x509 -in "$out/tls.crt" -noout -subject)

# Subject alternative names: exactly the expected set.
sans=$(openssl x509 -in "$out/tls.crt" -noout -ext subjectAltName | tail -n +2 | tr -d ' ' | tr ',' '\n' | sort)
want=$(printf '%s\n' "DNS:$svc" "DNS:$svc.$ns" "DNS:$svc.$ns.svc" "DNS:$svc.$ns.svc.cluster.local" \
  DNS:localhost IPAddress:127.0.0.1 DNS:extra.example.com IPAddress:10.0.0.7 | sort)
for san in $want; do check "SAN $san" grep -qxF "$san" <<<"$sans"; done
check "no SANs beyond those ($(tr '\n' ' ' <<<"$sans"))" test "$sans" = "$want"

# Keys: ECDSA on P-256, for every key and the certificate's public key, mode 0600.
for key in ca.key tls.key client.key; do
  text=$(openssl pkey -in "$out/$key" -noout -text 2>/dev/null)
  check "$key is an EC key on prime256v1" grep -q "ASN1 OID: prime256v1" <<<"$text"
  check "$key mode is 0600 ($(stat -c %a "$out/$key"))" test "$(stat -c %a "$out/$key")" = 600
done
check "tls.crt's public key is EC prime256v1" \
  grep -q "ASN1 OID: prime256v1" <(openssl x509 -in "$out/tls.crt" -noout -text)
check "tls.crt signed with ecdsa-with-SHA256" \
  grep -q "Signature Algorithm: ecdsa-with-SHA256" <(openssl x509 -in "$out/tls.crt" -noout -text)
check "tls.key matches tls.crt" test "$(openssl pkey -in "$out/tls.key" -pubout 2>/dev/null)" = \
  "$(openssl x509 -in "$out/tls.crt" -noout -pubkey)"

# Validity: --days 30, for the serving certificate and the CA (allow a minute of skew).
for crt in tls.crt ca.crt; do
  start=$(date -d "$(openssl x509 -in "$out/$crt" -noout -startdate | cut -d= -f2)" +%s)
  end=$(date -d "$(openssl x509 -in "$out/$crt" -noout -enddate | cut -d= -f2)" +%s)
  now=$(date +%s)
  span=$(( (end - start) / 86400 ))
  check "$crt valid for 30 days (notAfter - notBefore = $span days)" test $((end - start)) -eq $((30 * 86400))
  check "$crt valid now" test "$start" -le $((now + 60)) -a "$end" -gt "$now"
done

# The printed caBundle is ca.crt, base64 on one line.
bundle=$(sed -n 's/^caBundle: //p' "$tmp/stdout")
check "prints one caBundle line" test "$(grep -c '^caBundle: ' "$tmp/stdout")" = 1
check "the caBundle decodes to ca.crt" cmp -s <(base64 -d <<<"$bundle") "$out/ca.crt"

# A second run without --force refuses and leaves the keys alone.
sums() { sha256sum "$out"/ca.key "$out"/ca.crt "$out"/tls.key "$out"/tls.crt | cut -d' ' -f1; }
before=$(sums)
"$gen" --out "$out" --service "$svc" --namespace "$ns" >"$tmp/stdout2" 2>"$tmp/stderr2"; rc=$?
check "a second run without --force exits non-zero (exit $rc)" test "$rc" -ne 0
check "... says to pass --force" grep -q -- "--force" "$tmp/stderr2"
check "... and leaves every file unchanged" test "$(sums)" = "$before"
check "... and prints no caBundle" test ! -s "$tmp/stdout2"
# Only tls.key present (ca.key gone) still counts as keys.
mv "$out/ca.key" "$tmp/ca.key.saved"
"$gen" --out "$out" >/dev/null 2>&1; rc=$?
check "a run refuses when only tls.key exists (exit $rc)" test "$rc" -ne 0
mv "$tmp/ca.key.saved" "$out/ca.key"

# --force replaces every file with new keys.
if "$gen" --out "$out" --service "$svc" --namespace "$ns" --days 30 --force >"$tmp/stdout3" 2>/dev/null; then
  pass "--force exits 0"
else
  fail "--force exits 0"
fi
after=$(sums)
paste <(echo "$before") <(echo "$after") | {
  i=0; names=(ca.key ca.crt tls.key tls.crt)
  while read -r old new; do
    if [[ $old != "$new" ]]; then pass "--force replaced ${names[$i]}"; else fail "--force replaced ${names[$i]}"; fi
    i=$((i + 1))
  done
} | tee "$tmp/force.txt"
failures=$((failures + $(grep -c '^FAIL' "$tmp/force.txt")))
check "after --force: openssl verify OK" \
  test "$(openssl verify -CAfile "$out/ca.crt" "$out/tls.crt" 2>&1)" = "$out/tls.crt: OK"
check "after --force: keys still mode 0600" \
  test "$(stat -c %a "$out/tls.key")$(stat -c %a "$out/ca.key")" = 600600
check "after --force: the new caBundle decodes to the new ca.crt" \
  cmp -s <(sed -n 's/^caBundle: //p' "$tmp/stdout3" | base64 -d) "$out/ca.crt"

# Bad arguments: exit 2, nothing written.
for bad in "--days 0" "--days x" "--bogus"; do
  # shellcheck disable=SC2086
  "$gen" --out "$tmp/bad" $bad >/dev/null 2>&1; rc=$?
  check "gen-certs.sh $bad exits 2 (exit $rc)" test "$rc" -eq 2
done
check "bad arguments wrote nothing" test ! -e "$tmp/bad"

if ((failures)); then echo "$failures check(s) failed"; exit 1; fi
echo "all gen-certs.sh checks passed"
