#!/usr/bin/env bash
# go-tool.sh NAME: builds (once per machine) a pinned tool from the Go module proxy and
# prints, as the last line of stdout, the path of its binary. Cached beside the e2e
# control-plane binaries: ${KUBEGAP_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubegap-e2e}/NAME-VERSION/bin.
#   helm      helm.sh/helm/v4/cmd/helm                        (the chart test)
#   promtool  github.com/prometheus/prometheus/cmd/promtool   (the alert rules' tests)
set -euo pipefail
case "${1:-}" in
  helm) package=helm.sh/helm/v4/cmd/helm version=v4.3.2 ;;
  promtool) package=github.com/prometheus/prometheus/cmd/promtool version=v0.316.0 ;;
  *) echo "usage: go-tool.sh helm|promtool" >&2; exit 2 ;;
esac
name=$1
[[ -n "${HOME:-}" ]] || export HOME=/root
cache="${KUBEGAP_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubegap-e2e}/$name-$version"
if [[ ! -x "$cache/bin/$name" ]]; then
  echo "[go-tool] go install $package@$version (once per machine; minutes on 2 cores)" >&2
  tmp="$cache.tmp.$$"
  rm -rf "$tmp" && mkdir -p "$tmp/bin"
  # Outside any module (go install PACKAGE@VERSION), so no go.mod of ours is involved.
  (cd "$tmp" && GOBIN="$tmp/bin" CGO_ENABLED=0 GOFLAGS=-mod=mod \
     go install -trimpath -ldflags "-s -w" "$package@$version") >&2
  "$tmp/bin/$name" --version >&2 || "$tmp/bin/$name" version >&2
  rm -rf "$cache" && mv "$tmp" "$cache"
fi
echo "$cache/bin/$name"
