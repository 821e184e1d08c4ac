#!/usr/bin/env bash
# Generates development TLS material for kubegap-webhook: an ECDSA P-256 CA, a serving
# certificate signed by it, and a client certificate for the API server to present when
# the webhook runs with --client-ca. Keys are written with mode 0600 and never committed.
#
#   certs/gen-certs.sh [--out DIR] [--service NAME] [--namespace NS] [--san DNS_OR_IP]...
#                      [--days N] [--force]
#
# Writes DIR/ca.crt, DIR/ca.key, DIR/tls.crt, DIR/tls.key, DIR/client.crt, DIR/client.key
# (CN kube-apiserver, clientAuth) and prints the base64 caBundle.
# SANs: NAME, NAME.NS, NAME.NS.svc, NAME.NS.svc.cluster.local, localhost, IP 127.0.0.1,
# plus every --san. Refuses to overwrite existing keys unless --force is given.
set -euo pipefail

out=certs/out
service=kubegap-webhook
namespace=kubegap-system
days=365
force=0
extra=()

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; }
while (($#)); do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --service) service=$2; shift 2 ;;
    --namespace) namespace=$2; shift 2 ;;
    --san) extra+=("$2"); shift 2 ;;
    --days) days=$2; shift 2 ;;
    --force) force=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gen-certs.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
[[ $days =~ ^[0-9]+$ && $days -gt 0 ]] || { echo "gen-certs.sh: --days must be a positive integer" >&2; exit 2; }
command -v openssl >/dev/null || { echo "gen-certs.sh: openssl not found (apt-get install openssl)" >&2; exit 1; }

if [[ -e $out/tls.key || -e $out/ca.key ]] && ((force == 0)); then
  echo "gen-certs.sh: $out already holds keys; pass --force to replace them" >&2
  exit 1
fi
mkdir -p "$out"
umask 077

sans="DNS:$service,DNS:$service.$namespace,DNS:$service.$namespace.svc,DNS:$service.$namespace.svc.cluster.local,DNS:localhost,IP:127.0.0.1"
for san in "${extra[@]}"; do
  if [[ $san =~ ^[0-9.]+$ || $san == *:* ]]; then sans+=",IP:$san"; else sans+=",DNS:$san"; fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

openssl ecparam -name prime256v1 -genkey -noout -out "$tmp/ca.key"
openssl req -x509 -new -key "$tmp/ca.key" -sha256 -days "$days" -subj "/CN=kubegap-webhook dev CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -out "$tmp/ca.crt" 2>/dev/null

openssl ecparam -name prime256v1 -genkey -noout -out "$tmp/tls.key"
openssl req -new -key "$tmp/tls.key" -subj "/CN=$service.$namespace.svc" -out "$tmp/tls.csr" 2>/dev/null
cat > "$tmp/ext.cnf" <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=$sans
EXT
openssl x509 -req -in "$tmp/tls.csr" -CA "$tmp/ca.crt" -CAkey "$tmp/ca.key" -CAcreateserial \
  -days "$days" -sha256 -extfile "$tmp/ext.cnf" -out "$tmp/tls.crt" 2>/dev/null

openssl ecparam -name prime256v1 -genkey -noout -out "$tmp/client.key"
openssl req -new -key "$tmp/client.key" -subj "/CN=kube-apiserver" -out "$tmp/client.csr" 2>/dev/null
cat > "$tmp/client.cnf" <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth
EXT
openssl x509 -req -in "$tmp/client.csr" -CA "$tmp/ca.crt" -CAkey "$tmp/ca.key" -CAcreateserial \
  -days "$days" -sha256 -extfile "$tmp/client.cnf" -out "$tmp/client.crt" 2>/dev/null

openssl verify -CAfile "$tmp/ca.crt" "$tmp/tls.crt" "$tmp/client.crt" >/dev/null
for f in ca.key ca.crt tls.key tls.crt client.key client.crt; do mv -f "$tmp/$f" "$out/$f"; done
chmod 0644 "$out/ca.crt" "$out/tls.crt" "$out/client.crt"

echo "wrote $out/ca.crt $out/tls.crt $out/tls.key $out/client.crt $out/client.key (SANs: $sans)" >&2
echo "caBundle: $(base64 -w0 < "$out/ca.crt")"
