#!/usr/bin/env bash
# The container image, checked without a container engine: the docker archive is unpacked
# with tar (manifest.json -> config and layers), the layers into a temporary root, and the
# binary is run from there with the image's own loader and libraries: `version`, then
# `serve` as user 65532 answering a review over TLS. Also: the image holds nothing but
# the binary, its libraries, CA certificates, passwd and group; uid 65532 exists; the
# config runs as 65532 with the binary as entrypoint.
#
#   tests/image/test_image.sh SOURCE_DIR [TARBALL [BINARY]]
#
# With BINARY, TARBALL is (re)built from it first (images/build-oci.sh). Without TARBALL:
# SOURCE_DIR/build/image/kubegap-webhook-*.tar, built from build/release if missing.
# As root the binary also runs under chroot, where the host's libraries are out of reach
# (not for a sanitizer build, which needs /proc).
set -uo pipefail
src=${1:?usage: test_image.sh SOURCE_DIR [TARBALL [BINARY]]}
tarball=${2:-}
binary=${3:-}
tmp=$(mktemp -d)
server_pid=
cleanup() { [[ -n $server_pid ]] && kill -9 "$server_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
failures=0
pass() { echo "ok   - $1"; }
fail() { echo "FAIL - $1"; failures=$((failures + 1)); }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
die() { echo "FAIL - $1"; exit 1; }
# jsonq EXPR: evaluates a Python expression over the JSON on stdin (bound to `j`); prints
# strings as they are and anything else as compact JSON. (python3 only: no jq needed.)
jsonq() {
  python3 -c 'import json, sys
j = json.load(sys.stdin)
v = eval(sys.argv[1])
print(v if isinstance(v, str) else json.dumps(v, separators=(",", ":")))' "$1"
}

# unpinned_stages FILE: the FROM lines of a Containerfile whose image is neither scratch nor
# pinned by digest (a tag can be moved under a build; a digest cannot).
unpinned_stages() {
  grep -iE '^[[:space:]]*FROM[[:space:]]' "$1" |
    grep -viE '^[[:space:]]*FROM[[:space:]]+(--platform=[^[:space:]]+[[:space:]]+)?(scratch|[^[:space:]@]+@sha256:[0-9a-f]{64})([[:space:]]|$)'
}
check "every Containerfile stage starts from scratch or an image pinned by digest" \
  test -z "$(unpinned_stages "$src/Containerfile")"
printf 'FROM debian:bookworm AS build\nFROM scratch\n' >"$tmp/Containerfile.tag"
check "a stage by tag alone is reported ($(unpinned_stages "$tmp/Containerfile.tag"))" \
  test "$(unpinned_stages "$tmp/Containerfile.tag")" = "FROM debian:bookworm AS build"

if [[ -n $binary ]]; then
  [[ -n $tarball ]] || die "BINARY needs TARBALL"
  "$src/images/build-oci.sh" --binary "$binary" --out "$tarball" >"$tmp/build.log" 2>&1 ||
    die "images/build-oci.sh failed: $(tail -5 "$tmp/build.log")"
  grep -E "^(tarball|uncompressed|compressed)" "$tmp/build.log" | sed 's/^/     /'
elif [[ -z $tarball ]]; then
  found=("$src"/build/image/kubegap-webhook-*.tar)
  if [[ ! -f ${found[0]} ]]; then
    "$src/images/build-oci.sh" >"$tmp/build.log" 2>&1 || die "images/build-oci.sh failed: $(tail -5 "$tmp/build.log")"
    found=("$src"/build/image/kubegap-webhook-*.tar)
  fi
  tarball=${found[0]}
fi
[[ -f $tarball ]] || die "no image tarball at $tarball"
echo "     image: $tarball ($(stat -c %s "$tarball") bytes)"

# --- the archive: manifest.json, config, layers -------------------------------------------
mkdir -p "$tmp/archive" "$tmp/root"
tar -xf "$tarball" -C "$tmp/archive" || die "tar -xf $tarball"
check "the archive holds manifest.json" test -f "$tmp/archive/manifest.json"
read_manifest() {
  python3 - "$tmp/archive" "$1" <<'PY'
import json, os, sys
archive, what = sys.argv[1:3]
m = json.load(open(os.path.join(archive, "manifest.json")))
assert len(m) == 1, f"{len(m)} images in the archive"
if what == "tags":
    print(*m[0]["RepoTags"])
elif what == "layers":
    print(*m[0]["Layers"], sep="\n")
else:
    config = json.load(open(os.path.join(archive, m[0]["Config"])))
    print(json.dumps(config))
PY
}
tags=$(read_manifest tags) || die "manifest.json unreadable"
config=$(read_manifest config) || die "the image config is unreadable"
version_label=$(jsonq 'j["config"]["Labels"]["org.opencontainers.image.version"]' <<<"$config")
check "one tag, kubegap-webhook:$version_label, no registry host ($tags)" test "$tags" = "kubegap-webhook:$version_label"
user=$(jsonq 'j["config"]["User"]' <<<"$config")
check "config User is 65532 ($user)" test "${user%%:*}" = 65532
check "config Entrypoint is the binary ($(jsonq 'j["config"]["Entrypoint"]' <<<"$config"))" \
  test "$(jsonq 'j["config"]["Entrypoint"]' <<<"$config")" = '["/usr/local/bin/kubegap-webhook"]'
check "config exposes 8443/tcp and 9090/tcp" \
  test "$(jsonq 'sorted(j["config"]["ExposedPorts"])' <<<"$config")" = '["8443/tcp","9090/tcp"]'
check "config os/architecture linux/amd64 ($(jsonq 'j["os"] + "/" + j["architecture"]' <<<"$config"))" \
  test "$(jsonq 'j["os"] + "/" + j["architecture"]' <<<"$config")" = linux/amd64

# build-oci.sh leaves the digests and the SBOM beside the archive.
digests=${tarball%.tar}.digests
if [[ -f $digests ]]; then
  config_name=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["Config"])' "$tmp/archive/manifest.json")
  config_sha=$(sha256sum "$tmp/archive/$config_name" | cut -d' ' -f1)
  check "the digests file names the config the archive holds (sha256:${config_sha:0:12}...)" \
    grep -q "^sha256:$config_sha  .*(config" "$digests"
  check "the SBOM is beside the archive" test -s "${tarball%.tar}.spdx.json"
fi

layers=$(read_manifest layers)
n=0 bytes=0
while read -r layer; do
  [[ -n $layer ]] || continue
  n=$((n + 1)); bytes=$((bytes + $(stat -L -c %s "$tmp/archive/$layer")))
  tar -xf "$tmp/archive/$layer" -C "$tmp/root" || die "unpacking layer $layer"
done <<<"$layers"
check "$n layer(s), $bytes bytes uncompressed, unpacked into a temporary root" test "$n" -ge 1
root=$tmp/root

# --- what is in it -------------------------------------------------------------------------
files=$(cd "$root" && find . -type f -o -type l | sed 's|^\./||' | sort)
unexpected=$(grep -vE '^(usr/local/bin/kubegap-webhook|lib/x86_64-linux-gnu/[^/]+\.so[.0-9]*|lib64/ld-linux-x86-64\.so\.2|etc/passwd|etc/group|etc/ssl/certs/ca-certificates\.crt|var/lib/dpkg/status\.d/[a-z0-9.+-]+|usr/share/doc/[a-z0-9.+-]+/copyright|usr/share/doc/kubegap-webhook/sbom\.spdx\.json)$' <<<"$files")
check "only the binary, its libraries, CA certificates, passwd, group, and their packages' status, copyright and SBOM ($(wc -l <<<"$files") files)" \
  test -z "$unexpected"
[[ -z $unexpected ]] || echo "     unexpected: $unexpected"
check "no shell in the image" test ! -e "$root/bin/sh"
check "no setuid/setgid files" test -z "$(find "$root" -perm /6000)"
check "nothing is writable by others, so 65532 can write nowhere (as with readOnlyRootFilesystem)" \
  test -z "$(find "$root" ! -type l -perm -0002)"
check "the binary is executable" test -x "$root/usr/local/bin/kubegap-webhook"
check "the dynamic loader is there" test -x "$root/lib64/ld-linux-x86-64.so.2"
check "CA certificates are there" grep -q "BEGIN CERTIFICATE" "$root/etc/ssl/certs/ca-certificates.crt"
check "/etc/passwd has nonroot with uid and gid 65532" grep -qx 'nonroot:x:65532:65532:[^:]*:[^:]*:[^:]*' "$root/etc/passwd"
check "/etc/group has nonroot, gid 65532" grep -qx 'nonroot:x:65532:' "$root/etc/group"

# What a scanner sees (issue 31): each library's Debian package in the dpkg status that
# distroless images use, at the version this host has, and the same in the SPDX SBOM.
sbom=$root/usr/share/doc/kubegap-webhook/sbom.spdx.json
check "the SBOM is SPDX 2.3 JSON" test "$(jsonq 'j["spdxVersion"]' <"$sbom" 2>/dev/null)" = SPDX-2.3
unseen=
for lib in $(cd "$root" && find lib lib64 -name '*.so*' -type f | sort); do
  pkg=$(dpkg -S "/$lib" 2>/dev/null || dpkg -S "$(readlink -f "/$lib")" 2>/dev/null | head -1)
  name=${pkg%%:*}
  status=$root/var/lib/dpkg/status.d/$name
  want=$(dpkg-query -W -f '${Version}' "$name" 2>/dev/null)
  got=$(awk '/^Version:/{print $2}' "$status" 2>/dev/null)
  in_sbom=$(jsonq "[p['versionInfo'] for p in j['packages'] if p['name'] == '$name']" <"$sbom")
  if [[ -z $name || -z $want || $got != "$want" || $in_sbom != "[\"$want\"]" ]]; then
    unseen+=" $lib($name: status '$got', SBOM $in_sbom, host '$want')"
  fi
done
check "every library's package is in the dpkg status and the SBOM at the host's version" test -z "$unseen"
[[ -z $unseen ]] || echo "     not seen:$unseen"
check "libssl3 (libssl.so.3, libcrypto.so.3) is declared" grep -qx 'Package: libssl3' "$root/var/lib/dpkg/status.d/libssl3"
check "the SBOM names the binary at its version with its SHA-256" test "$(jsonq "[p['checksums'][0]['checksumValue'] for p in j['packages'] if p['name'] == 'kubegap-webhook']" <"$sbom")" = "[\"$(sha256sum "$root/usr/local/bin/kubegap-webhook" | cut -d' ' -f1)\"]"
check "each package's purl names Debian and its version" \
  test "$(jsonq "all(r['referenceLocator'].startswith('pkg:deb/debian/' + p['name'] + '@' + p['versionInfo']) for p in j['packages'][1:] for r in p['externalRefs'])" <"$sbom")" = true

# Every library the binary needs resolves inside the image.
loader=$root/lib64/ld-linux-x86-64.so.2
libpath=$root/lib/x86_64-linux-gnu:$root/usr/lib/x86_64-linux-gnu
listing=$("$loader" --inhibit-cache --library-path "$libpath" --list "$root/usr/local/bin/kubegap-webhook" 2>&1)
outside=$(grep '=>' <<<"$listing" | grep -v "=> $root/" )
check "every library resolves inside the image ($(grep -c '=>' <<<"$listing") libraries)" test -z "$outside"
[[ -z $outside ]] || echo "     resolved elsewhere: $outside"

# --- run it ----------------------------------------------------------------------------------
out=$("$loader" --inhibit-cache --library-path "$libpath" "$root/usr/local/bin/kubegap-webhook" version 2>&1)
check "the bundled loader runs \`kubegap-webhook version\`: $out" test "$out" = "kubegap-webhook $version_label"

# A sanitizer build (the dev preset's binary) needs /proc, which a bare chroot lacks.
sanitized=0
compgen -G "$root/lib/x86_64-linux-gnu/libasan.so*" >/dev/null && sanitized=1
if ((EUID == 0 && sanitized == 0)) && command -v chroot >/dev/null; then
  out=$(chroot --userspec=65532:65532 "$root" /usr/local/bin/kubegap-webhook version 2>&1)
  check "chroot as 65532: \`kubegap-webhook version\`: $out" test "$out" = "kubegap-webhook $version_label"
  run_in_image=(chroot --userspec=65532:65532 "$root")
  inside=   # paths as the process sees them
else
  if ((sanitized)); then echo "     (sanitizer build: no chroot, it needs /proc; the server runs through the bundled loader)"
  else echo "     (not root: no chroot; the server runs through the bundled loader)"; fi
  run_in_image=("$loader" --inhibit-cache --library-path "$libpath")
  inside=$root
fi

# serve: TLS with a generated certificate, the health port, one review.
mkdir -p "$root/tls"
"$src/certs/gen-certs.sh" --out "$tmp/certs" >/dev/null 2>&1 || die "gen-certs.sh"
cp "$tmp/certs/tls.crt" "$tmp/certs/tls.key" "$root/tls/"
chmod 0755 "$root/tls"; chmod 0644 "$root/tls/tls.crt"; chmod 0640 "$root/tls/tls.key"
# As in the Deployment (defaultMode 0440 with fsGroup): readable by group 65532, never by
# every user (the server refuses such a key). Without root the server runs as the key's
# owner, which 0640 already lets read it.
chgrp 65532 "$root/tls/tls.key" 2>/dev/null || true
entry=$inside/usr/local/bin/kubegap-webhook
[[ -z $inside ]] && entry=/usr/local/bin/kubegap-webhook
: >"$tmp/serve.log"
"${run_in_image[@]}" "$entry" serve --tls-cert "$inside/tls/tls.crt" --tls-key "$inside/tls/tls.key" \
  --listen 127.0.0.1:0 --health-listen 127.0.0.1:0 --log-format json --threads 2 >"$tmp/serve.log" 2>&1 &
server_pid=$!
serving=
for _ in $(seq 100); do
  serving=$(grep -m1 '"msg":"serving"' "$tmp/serve.log") && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
if [[ -n $serving ]]; then
  pass "serve starts inside the image"
  listen=$(jsonq 'j["listen"]' <<<"$serving") health=$(jsonq 'j["health_listen"]' <<<"$serving")
  ready=$(curl -s -o /dev/null -w '%{http_code}' "http://$health/readyz")
  check "/readyz answers 200 ($ready)" test "$ready" = 200
  response=$(curl -s --cacert "$tmp/certs/ca.crt" --resolve "localhost:${listen##*:}:127.0.0.1" \
    -H 'Content-Type: application/json' --data-binary @"$src/tests/fixtures/reviews/gpu-pod-gaps.json" \
    "https://localhost:${listen##*:}/validate")
  check "a review over TLS is allowed with kubegap warnings" \
    test "$(jsonq 'j["response"]["allowed"] is True and len(j["response"]["warnings"]) > 0' <<<"$response" 2>/dev/null)" = true
  if [[ -z $inside ]]; then
    uid=$(awk '/^Uid:/{print $2}' "/proc/$server_pid/status" 2>/dev/null)
    check "the server runs as uid 65532 ($uid)" test "$uid" = 65532
  fi
  kill -TERM "$server_pid"; wait "$server_pid"; rc=$?; server_pid=
  check "SIGTERM: exit 0 ($rc)" test "$rc" -eq 0
else
  fail "serve starts inside the image: $(tail -5 "$tmp/serve.log")"
fi

if ((failures)); then echo "$failures check(s) failed"; exit 1; fi
echo "all image checks passed"
