#!/usr/bin/env bash
# Builds (once per machine) the upstream control-plane binaries the e2e tests run:
# kube-apiserver and kubectl from the pinned k8s.io/kubernetes module (wrapper module
# tests/e2e/kube) and etcd from the matching go.etcd.io/etcd/server/v3 module (wrapper
# module tests/e2e/etcd). Everything comes through the Go module proxy with ordinary
# `go` commands; no other download happens.
#
# Usage: tests/e2e/build-binaries.sh [--check] [--force]
#   prints, as the last line of stdout, the directory holding kube-apiserver, kubectl
#   and etcd. Progress goes to stderr.
#   --check  build nothing; exit 0 if the cache is warm, 1 if a build would be needed.
#   --force  rebuild even if the cache is warm.
#
# Environment:
#   KUBEGAP_E2E_CACHE    cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/kubegap-e2e)
#   KUBEGAP_E2E_BUILD_P  `go build -p` value (default 2; use 1 on a machine short of RAM)
#
# Layout: $CACHE/<k8s-version>-etcd<etcd-version>/{bin/{kube-apiserver,kubectl,etcd},stamp}.
# A build goes to a temporary directory beside it and is renamed into place only once
# all three binaries exist and report the expected versions, so an interrupted build
# never leaves a half-filled cache. The stamp records the versions, the build recipe and
# the wrappers' go.sum hashes: change any of them and the next run rebuilds.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
kube_mod="$here/kube"
etcd_mod="$here/etcd"

# Bump when the build commands below change in a way that alters the binaries.
recipe=1

# shellcheck source=tests/e2e/go-build-lib.sh
source "$here/go-build-lib.sh"
go_build_setup build-binaries 22 "$@"

k8s_version="$(mod_version "$kube_mod/go.mod" k8s.io/kubernetes)"
etcd_version="$(mod_version "$etcd_mod/go.mod" go.etcd.io/etcd/server/v3)"
[[ -n "$k8s_version" ]] || die "no k8s.io/kubernetes requirement in $kube_mod/go.mod"
[[ -n "$etcd_version" ]] || die "no go.etcd.io/etcd/server/v3 requirement in $etcd_mod/go.mod"
if [[ ! "$k8s_version" =~ ^v([0-9]+)\.([0-9]+)\.[0-9]+$ ]]; then
  die "unexpected k8s.io/kubernetes version $k8s_version"
fi
k8s_major="${BASH_REMATCH[1]}"
k8s_minor="${BASH_REMATCH[2]}"

key="${k8s_version}-etcd${etcd_version#v}"
dest="$cache_root/$key"
bin="$dest/bin"

# Build tags as upstream's hack/lib/golang.sh uses them for release (non-debug) builds.
tags="selinux,notest,grpcnotrace"

expected_stamp() {
  printf 'recipe=%s\nkubernetes=%s\netcd=%s\ntags=%s\n' "$recipe" "$k8s_version" "$etcd_version" "$tags"
  printf 'kube-go.sum=%s\n' "$(sha256sum < "$kube_mod/go.sum" | cut -d' ' -f1)"
  printf 'etcd-go.sum=%s\n' "$(sha256sum < "$etcd_mod/go.sum" | cut -d' ' -f1)"
}

is_warm() {
  local b
  for b in kube-apiserver kubectl etcd; do
    [[ -x "$bin/$b" ]] || return 1
  done
  [[ -f "$dest/stamp" ]] && [[ "$(cat "$dest/stamp")" == "$(expected_stamp)" ]]
}

if [[ $force == 0 ]] && is_warm; then
  log "cache warm: $bin ($k8s_version, etcd $etcd_version)"
  echo "$bin"
  exit 0
fi
if [[ $check_only == 1 ]]; then
  log "cache cold: $bin"
  exit 1
fi

command -v go >/dev/null || die "go is not installed (needs the Go toolchain named in $kube_mod/go.mod or newer)"
mkdir -p "$cache_root"

# One build at a time per cache root (parallel test runs wait for the first).
exec 9>"$cache_root/.lock"
locked=0
if command -v flock >/dev/null; then
  locked=1
  if ! flock -n 9; then
    log "another build holds $cache_root/.lock; waiting"
    flock 9
  fi
  # Another process may have finished the same build while we waited.
  if [[ $force == 0 ]] && is_warm; then
    log "cache warm after waiting: $bin"
    echo "$bin"
    exit 0
  fi
fi

# Holding the lock, leftovers of builds killed outright (SIGKILL, power loss) are stale.
if [[ $locked == 1 ]]; then
  rm -rf "$cache_root/.tmp.$key."* "$cache_root/.old.$key."*
fi
tmp="$(mktemp -d "$cache_root/.tmp.$key.XXXXXX")"
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir -p "$tmp/bin"

export CGO_ENABLED=0
export GOWORK=off          # never pick up a go.work from a parent directory
# -buildvcs=false: the wrappers live in this repository; stamping its git state would make
# the build depend on the checkout (and on git) for nothing.
export GOFLAGS="${GOFLAGS:-} -mod=readonly -buildvcs=false"
par="${KUBEGAP_E2E_BUILD_P:-2}"

log "building $k8s_version (kube-apiserver, kubectl) and etcd $etcd_version into $bin"
log "go: $(go version), -p $par; first run downloads several hundred MB of modules"

log "downloading modules for $kube_mod"
(cd "$kube_mod" && go mod download >&2)
log "downloading modules for $etcd_mod"
(cd "$etcd_mod" && go mod download >&2)

# buildDate: the module's publication time from the proxy, so rebuilds are reproducible.
build_date="$(cd "$kube_mod" && go list -m -json k8s.io/kubernetes | sed -n 's/^[[:space:]]*"Time": "\([^"]*\)".*/\1/p' | head -n1)"
[[ -n "$build_date" ]] || build_date="1970-01-01T00:00:00Z"

kube_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_ldflags+=" -X $pkg.gitVersion=$k8s_version"
  kube_ldflags+=" -X $pkg.gitMajor=$k8s_major"
  kube_ldflags+=" -X $pkg.gitMinor=$k8s_minor"
  kube_ldflags+=" -X $pkg.buildDate=$build_date"
done

start=$SECONDS
log "go build kube-apiserver kubectl (takes minutes on 2 cores when the Go build cache is cold)"
(cd "$kube_mod" && go build -p "$par" -trimpath -tags "$tags" -ldflags "$kube_ldflags" \
  -o "$tmp/bin/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl)
log "kube binaries built in $((SECONDS - start))s"

start=$SECONDS
log "go build etcd"
# etcd's own version string is a constant in go.etcd.io/etcd/api/v3/version; its GitSHA
# (set by etcd's release scripts from git) is unknown for a module build and stays unset.
(cd "$etcd_mod" && go build -p "$par" -trimpath -ldflags "-s -w" \
  -o "$tmp/bin/etcd" go.etcd.io/etcd/server/v3)
log "etcd built in $((SECONDS - start))s"

# Check that the binaries report what they were pinned to before publishing them.
# (Output is captured first: `cmd | grep -q` can fail under pipefail through SIGPIPE.)
out="$("$tmp/bin/kube-apiserver" --version 2>&1)"
[[ "$out" == *"Kubernetes $k8s_version"* ]] || die "kube-apiserver --version says: $out"
out="$("$tmp/bin/kubectl" version --client 2>&1)"
[[ "$out" == *"Client Version: $k8s_version"* ]] || die "kubectl version --client says: $out"
out="$("$tmp/bin/etcd" --version 2>&1)"
[[ "$out" == *"etcd Version: ${etcd_version#v}"* ]] || die "etcd --version says: $out"

expected_stamp > "$tmp/stamp"
chmod 0755 "$tmp" "$tmp/bin"

# Publish: rename the finished directory into place (same filesystem, so atomic).
if [[ -e "$dest" ]]; then
  old="$cache_root/.old.$key.$$"
  mv -T "$dest" "$old"
  mv -T "$tmp" "$dest"
  rm -rf "$old"
else
  mv -T "$tmp" "$dest"
fi
log "done: $bin"
echo "$bin"
