#!/usr/bin/env bash
# Builds (once per machine) the Go side of the differential oracle (issue 29): the module in
# tests/oracle/go, which answers cases with Kubernetes' own functions at the release the
# e2e tests pin (tests/e2e/kube/go.mod). Everything comes through the Go module proxy with
# ordinary `go` commands; go.sum is complete, so nothing else is fetched and the source
# tree is never written (the build runs on a copy of the module).
#
# Usage: tests/oracle/build-oracle.sh [--check] [--force]
#   prints, as the last line of stdout, the path of the kubegap-oracle binary. Progress
#   goes to stderr. Exit 77 with a "skipped: ..." line on stdout when go is not on PATH.
#   --check  build nothing; exit 0 if the cache is warm, 1 if a build would be needed.
#   --force  rebuild even if the cache is warm.
#
# Environment:
#   KUBEGAP_E2E_CACHE    cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/kubegap-e2e)
#   KUBEGAP_E2E_BUILD_P  `go build -p` value (default 2; use 1 on a machine short of RAM)
#
# Layout: $CACHE/oracle-<k8s-version>-<hash>/bin/kubegap-oracle, the hash covering
# go.mod, go.sum, every .go file of the module and the build recipe below: change any of
# them and the next run builds a new directory. A build goes to a temporary directory
# beside it and is renamed into place only once the binary reports the pinned version and
# answers a known case, so an interrupted build never leaves a half-filled cache.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mod="$here/go"
e2e_mod="$here/../e2e/kube/go.mod"

# Bump when the build command below changes in a way that alters the binary.
recipe=1

# shellcheck source=tests/e2e/go-build-lib.sh
source "$here/../e2e/go-build-lib.sh"
go_build_setup build-oracle 23 "$@"

k8s_version="$(mod_version "$mod/go.mod" k8s.io/kubernetes)"
[[ "$k8s_version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "no k8s.io/kubernetes requirement in $mod/go.mod"
if [[ -f "$e2e_mod" ]]; then
  e2e_version="$(mod_version "$e2e_mod" k8s.io/kubernetes)"
  [[ "$e2e_version" == "$k8s_version" ]] ||
    die "tests/oracle/go pins k8s.io/kubernetes $k8s_version but the e2e tests run ${e2e_version:-nothing}" \
        "(tests/e2e/kube/go.mod): move tests/oracle/go/go.mod (requirements and replace block) to the same release"
fi

# The module's files, in a fixed order: what the hash covers and what the build copies.
mapfile -t files < <(cd "$mod" && { echo go.mod; echo go.sum; ls -1 -- *.go; } | LC_ALL=C sort -u)
for f in "${files[@]}"; do [[ -f "$mod/$f" ]] || die "missing $mod/$f"; done
hash="$(
  cd "$mod"
  printf 'recipe=%s\n' "$recipe"
  for f in "${files[@]}"; do printf '%s %s\n' "$(sha256sum < "$f" | cut -d' ' -f1)" "$f"; done
)"
hash="$(printf '%s\n' "$hash" | sha256sum | cut -c1-16)"

key="oracle-$k8s_version-$hash"
dest="$cache_root/$key"
bin="$dest/bin/kubegap-oracle"

is_warm() { [[ -x "$bin" ]]; }

if [[ $force == 0 ]] && is_warm; then
  log "cache warm: $bin"
  echo "$bin"
  exit 0
fi
if [[ $check_only == 1 ]]; then
  log "cache cold: $bin"
  exit 1
fi

if ! command -v go >/dev/null 2>&1; then
  echo "skipped: go not on PATH (the differential oracle is built from k8s.io/kubernetes $k8s_version with the Go toolchain, go 1.26 or newer)"
  exit 77
fi
mkdir -p "$cache_root"

# One build at a time per cache root (parallel test runs wait for the first).
exec 9>"$cache_root/.lock-oracle"
locked=0
if command -v flock >/dev/null 2>&1; then
  locked=1
  if ! flock -n 9; then
    log "another build holds $cache_root/.lock-oracle; waiting"
    flock 9
  fi
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
mkdir -p "$tmp/src" "$tmp/bin"
for f in "${files[@]}"; do cp -- "$mod/$f" "$tmp/src/$f"; done

export CGO_ENABLED=0
export GOWORK=off  # never pick up a go.work from a parent directory
# -mod=mod: build from go.mod/go.sum as they are (the copy, never the source tree).
# -buildvcs=false: the copy is outside any repository; the build does not depend on git.
export GOFLAGS="${GOFLAGS:-} -mod=mod -buildvcs=false"
par="${KUBEGAP_E2E_BUILD_P:-2}"

log "building the oracle against k8s.io/kubernetes $k8s_version into $dest"
log "go: $(go version), -p $par; the first run downloads the k8s.io modules (shared with the e2e build)"
start=$SECONDS
(cd "$tmp/src" && go build -p "$par" -trimpath -ldflags "-s -w" -o "$tmp/bin/kubegap-oracle" .) >&2 ||
  die "go build failed"
log "built in $((SECONDS - start))s"

# Check the binary before publishing it: the pinned release, and a case Kubernetes
# documents (a NoExecute-only toleration does not tolerate a NoSchedule taint; the
# binary's own self-check also runs the taint-eviction functions it links by name).
out="$("$tmp/bin/kubegap-oracle" -version 2>&1)" || die "kubegap-oracle -version failed: $out"
[[ "$out" == *"k8s.io/kubernetes $k8s_version"* ]] || die "kubegap-oracle -version says: $out"
out="$(printf '%s\n' '{"relation":"tolerates","toleration":{"operator":"Exists","effect":"NoExecute"},"taint":{"key":"k","effect":"NoSchedule"}}' |
  "$tmp/bin/kubegap-oracle" 2>&1)" || die "kubegap-oracle failed on a known case: $out"
[[ "$out" == '{"result":false}' ]] || die "kubegap-oracle answered a known case with: $out"

rm -rf "$tmp/src"
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
