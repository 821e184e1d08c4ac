#!/usr/bin/env bash
# Fills a directory with the smallest root filesystem kubegap-webhook runs in: the binary,
# the shared libraries it loads (from ldd, with the dynamic loader), the CA certificates,
# and /etc/passwd and /etc/group with the non-root user 65532 (nonroot). No shell, no
# package manager, nothing else. Used by images/build-oci.sh and the Containerfile.
#
#   images/make-rootfs.sh BINARY ROOTFS_DIR [--strip]
#
# The libraries keep the paths ldd prints (/lib/x86_64-linux-gnu/..., /lib64/ld-linux-...),
# which are in the loader's built-in search path: no ld.so.cache is needed.
set -euo pipefail
binary=${1:?usage: make-rootfs.sh BINARY ROOTFS_DIR [--strip]}
root=${2:?usage: make-rootfs.sh BINARY ROOTFS_DIR [--strip]}
strip=0
[[ ${3:-} == --strip ]] && strip=1
[[ -x $binary ]] || { echo "make-rootfs.sh: $binary is not an executable" >&2; exit 1; }
command -v ldd >/dev/null || { echo "make-rootfs.sh: ldd not found" >&2; exit 1; }

mkdir -p "$root/usr/local/bin" "$root/etc/ssl/certs"
install -m 0755 "$binary" "$root/usr/local/bin/kubegap-webhook"
if ((strip)); then
  command -v strip >/dev/null || { echo "make-rootfs.sh: --strip needs strip (binutils)" >&2; exit 1; }
  strip --strip-unneeded "$root/usr/local/bin/kubegap-webhook"
fi

# Every library ldd resolves ("name => /path (addr)"), and the loader ("/path (addr)").
# A library ldd cannot find ("=> not found") would fail at run time: stop here instead.
ldd_out=$(ldd "$binary")
if grep -q "not found" <<<"$ldd_out"; then
  echo "make-rootfs.sh: missing libraries:" >&2; grep "not found" <<<"$ldd_out" >&2; exit 1
fi
libs=$(awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' <<<"$ldd_out" | sort -u)
[[ -n $libs ]] || { echo "make-rootfs.sh: ldd listed no libraries for $binary" >&2; exit 1; }
grep -q 'ld-linux' <<<"$libs" || { echo "make-rootfs.sh: no dynamic loader in ldd's output" >&2; exit 1; }
for lib in $libs; do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"      # the file itself, under the name the binary asks for
  chmod 0755 "$root$lib"
done

ca=/etc/ssl/certs/ca-certificates.crt
[[ -f $ca ]] || { echo "make-rootfs.sh: $ca not found (apt-get install ca-certificates)" >&2; exit 1; }
install -m 0644 "$ca" "$root/etc/ssl/certs/ca-certificates.crt"

cat > "$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
PASSWD
cat > "$root/etc/group" <<'GROUP'
root:x:0:
nonroot:x:65532:
GROUP
chmod 0644 "$root/etc/passwd" "$root/etc/group"
# No /tmp and no home directory: the webhook writes nothing to disk (the Deployment mounts
# the root filesystem read-only).
echo "make-rootfs.sh: $root holds the binary, $(wc -w <<<"$libs") libraries, the CA certificates and user 65532" >&2
