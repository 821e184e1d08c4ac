#!/usr/bin/env bash
# Builds (once per machine) the pinned Helm from the Go module proxy and prints, as the
# last line of stdout, the directory holding `helm`. Cached beside the e2e binaries:
# ${KUBEGAP_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubegap-e2e}/helm-<version>/bin.
set -euo pipefail
version=v4.3.2   # helm.sh/helm/v4: the chart test's pinned Helm
[[ -n "${HOME:-}" ]] || export HOME=/root
cache="${KUBEGAP_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubegap-e2e}/helm-$version"
if [[ ! -x "$cache/bin/helm" ]]; then
  echo "[build-helm] go install helm.sh/helm/v4/cmd/helm@$version (once per machine; a few minutes on 2 cores)" >&2
  tmp="$cache.tmp.$$"
  rm -rf "$tmp" && mkdir -p "$tmp/bin"
  (cd "$tmp" && GOBIN="$tmp/bin" CGO_ENABLED=0 GOFLAGS=-mod=mod \
     go install -trimpath -ldflags "-s -w" "helm.sh/helm/v4/cmd/helm@$version") >&2
  "$tmp/bin/helm" version >&2
  rm -rf "$cache" && mv "$tmp" "$cache"
fi
echo "$cache/bin"
