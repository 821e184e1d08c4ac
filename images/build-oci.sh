#!/usr/bin/env bash
# Builds the kubegap-webhook container image from the release binary, without a container
# engine and without pulling any base image: Debian's umoci makes an empty OCI image and
# a layer holding only the binary, its shared libraries (with the dynamic loader), the CA
# certificates and a non-root user (images/make-rootfs.sh); Debian's skopeo writes it as a
# docker archive that `docker load`, `ctr images import` and `kind load image-archive` read.
#
#   images/build-oci.sh [--binary FILE] [--out TARBALL] [--no-strip]
#
# Defaults: --binary build/release/kubegap-webhook (./dev build release makes it),
# --out build/image/kubegap-webhook-VERSION.tar, where VERSION is what `BINARY version`
# prints. The image is named kubegap-webhook:VERSION, the name manifests/ use. The OCI
# layout stays in build/image/oci. The binary is stripped in the image (--no-strip keeps
# its symbols). umoci and skopeo are installed with apt-get when missing.
set -euo pipefail
source_dir=$(cd "$(dirname "$0")/.." && pwd)

binary=$source_dir/build/release/kubegap-webhook
out=
strip=--strip
while (($#)); do
  case "$1" in
    --binary) binary=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-strip) strip=; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-oci.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
# Paths given on the command line are relative to where the script was started.
[[ $binary == /* ]] || binary=$PWD/$binary
[[ -z $out || $out == /* ]] || out=$PWD/$out
cd "$source_dir"

[[ -x $binary ]] || { echo "build-oci.sh: $binary not found; run ./dev build release" >&2; exit 1; }
version=$("$binary" version | awk '{print $NF}')
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]] || { echo "build-oci.sh: '$binary version' printed '$version'" >&2; exit 1; }
name=kubegap-webhook
out=${out:-build/image/$name-$version.tar}

missing=()
for tool in umoci skopeo; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if ((${#missing[@]})); then
  log "installing ${missing[*]} (Debian packages)"
  sudo=(); ((EUID == 0)) || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

image_dir=$(dirname "$out")
mkdir -p "$image_dir"
layout=$image_dir/oci
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rootless=(); ((EUID == 0)) || rootless=(--rootless)

log "OCI layout $layout: an empty image $name:$version (no base image)"
rm -rf "$layout"
umoci init --layout "$layout"
umoci new --image "$layout:$version"
umoci unpack "${rootless[@]}" --image "$layout:$version" "$work/bundle"
log "root filesystem: $binary, its libraries, CA certificates, user 65532"
images/make-rootfs.sh "$binary" "$work/bundle/rootfs" $strip
umoci repack --image "$layout:$version" "$work/bundle"
umoci config --image "$layout:$version" \
  --os linux --architecture "$(dpkg --print-architecture 2>/dev/null || echo amd64)" \
  --config.user 65532:65532 \
  --config.entrypoint /usr/local/bin/kubegap-webhook \
  --clear config.cmd \
  --config.env PATH=/usr/local/bin \
  --config.env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
  --config.workingdir / \
  --config.exposedports 8443/tcp \
  --config.exposedports 9090/tcp \
  --config.label org.opencontainers.image.title=$name \
  --config.label org.opencontainers.image.version="$version" \
  --config.label org.opencontainers.image.description="Kubernetes validating admission webhook, audit mode, for ML training jobs" \
  --author kubegap \
  --history.created_by "images/build-oci.sh: kubegap-webhook $version, its shared libraries, CA certificates, user 65532"
umoci gc --layout "$layout"

# skopeo checks a signature policy even for local copies; use the system's if there is one.
policy=()
if [[ ! -f /etc/containers/policy.json && ! -f ${HOME:-/nonexistent}/.config/containers/policy.json ]]; then
  echo '{"default":[{"type":"insecureAcceptAnything"}]}' > "$work/policy.json"
  policy=(--policy "$work/policy.json")
fi
log "docker archive $out ($name:$version)"
rm -f "$out" "$out.tmp"
skopeo "${policy[@]}" copy --quiet "oci:$layout:$version" "docker-archive:$out.tmp:$name:$version"
# skopeo records the tag in its fully qualified form (default registry host + "library/").
# Write the short name, as `docker save` does, so loading gives exactly $name:$version.
python3 - "$out.tmp" "$out" "$name:$version" <<'PY'
import io, json, sys, tarfile
src, dst, tag = sys.argv[1:4]
def short(ref):
    first, _, rest = ref.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        ref = rest
    return ref[len("library/"):] if ref.startswith("library/") else ref
with tarfile.open(src) as tin, tarfile.open(dst, "w", format=tarfile.PAX_FORMAT) as tout:
    for member in tin.getmembers():
        data = tin.extractfile(member).read() if member.isfile() else None
        if member.name == "manifest.json":
            manifest = json.loads(data)
            for entry in manifest:
                entry["RepoTags"] = [short(t) for t in entry.get("RepoTags") or []]
            assert manifest[0]["RepoTags"] == [tag], manifest[0]["RepoTags"]
            data = json.dumps(manifest, separators=(",", ":")).encode()
        elif member.name == "repositories":
            data = json.dumps({short(k): v for k, v in json.loads(data).items()}, separators=(",", ":")).encode()
        if data is not None:
            member.size = len(data)
            tout.addfile(member, io.BytesIO(data))
        else:
            tout.addfile(member)
PY
rm -f "$out.tmp"

# Sizes: the tarball, and the layers as they unpack (uncompressed).
tar_bytes=$(stat -c %s "$out")
layer_bytes=0
for layer in $(tar -xOf "$out" manifest.json | python3 -c 'import json,sys; print(*json.load(sys.stdin)[0]["Layers"])'); do
  n=$(tar -xOf "$out" "$layer" | { if [[ $(tar -xOf "$out" "$layer" | head -c2 | od -An -tx1 | tr -d ' ') == 1f8b ]]; then gzip -dc; else cat; fi; } | wc -c)
  layer_bytes=$((layer_bytes + n))
done
human() { numfmt --to=iec-i --suffix=B --format=%.1f "$1"; }
echo "image: $name:$version"
echo "tarball: $out $tar_bytes bytes ($(human "$tar_bytes"))"
echo "uncompressed layers: $layer_bytes bytes ($(human "$layer_bytes"))"
gz_bytes=$(python3 - "$layout" <<'PY'
import json, os, sys
layout = sys.argv[1]
blob = lambda d: os.path.join(layout, "blobs", *d["digest"].split(":"))
manifest = json.load(open(blob(json.load(open(os.path.join(layout, "index.json")))["manifests"][0])))
print(sum(layer["size"] for layer in manifest["layers"]))
PY
)
echo "compressed layers (gzip, as a registry would store them): $gz_bytes bytes ($(human "$gz_bytes"))"
# What a user checks the image against: its digests, and its SBOM beside it.
digests=$(python3 - "$layout" <<'PY'
import json, os, sys
layout = sys.argv[1]
descriptor = json.load(open(os.path.join(layout, "index.json")))["manifests"][0]
manifest = json.load(open(os.path.join(layout, "blobs", *descriptor["digest"].split(":"))))
print(descriptor["digest"], manifest["config"]["digest"])
PY
)
read -r manifest_digest config_digest <<<"$digests"
tar -xOf "$out" "$(tar -xOf "$out" manifest.json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Config"])')" |
  sha256sum | grep -q "^${config_digest#sha256:} " || { echo "build-oci.sh: the archive's config is not $config_digest" >&2; exit 1; }
sbom=${out%.tar}.spdx.json
umoci raw unpack "${rootless[@]}" --image "$layout:$version" "$work/check" >/dev/null 2>"$work/raw.log" ||
  { cat "$work/raw.log" >&2; exit 1; }
cp "$work/check/usr/share/doc/kubegap-webhook/sbom.spdx.json" "$sbom"
printf '%s  %s\n' "$manifest_digest" "$name:$version (OCI manifest)" "$config_digest" "$name:$version (config: the image ID docker load prints)" > "${out%.tar}.digests"
echo "OCI manifest digest: $manifest_digest"
echo "config digest (image ID): $config_digest"
echo "SBOM (SPDX 2.3): $sbom; digests: ${out%.tar}.digests"
echo "load it with one of:"
echo "  docker load -i $out"
echo "  ctr -n k8s.io images import $out"
echo "  kind load image-archive $out"
