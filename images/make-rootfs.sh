#!/usr/bin/env bash
# Fills a directory with the smallest root filesystem kubegap-webhook runs in: the binary,
# the shared libraries it loads (from ldd, with the dynamic loader), the CA certificates,
# and /etc/passwd and /etc/group with the non-root user 65532 (nonroot); and what a
# scanner reads to know them: the dpkg status of their Debian packages, their copyright
# files and an SPDX SBOM. No shell, no package manager, nothing else. Used by images/build-oci.sh and the Containerfile.
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

# --- what scanners read: the Debian packages the files above come from -------------------
# The libraries are copied, not installed, so no dpkg database knows them. Write what
# distroless images write: one dpkg status stanza per package in /var/lib/dpkg/status.d/
# (Trivy, Grype and Syft read it), each package's copyright file, and an SPDX 2.3 SBOM of
# the packages and the binary (also left beside the image by build-oci.sh).
command -v dpkg-query >/dev/null || { echo "make-rootfs.sh: dpkg-query not found (a Debian build host is needed)" >&2; exit 1; }
owner() {  # owner PATH: the package (name:arch) that installed PATH, or nothing
  local hit
  hit=$(dpkg -S "$1" 2>/dev/null || dpkg -S "$(readlink -f "$1")" 2>/dev/null) || return 0
  head -1 <<<"$hit" | sed 's/: .*//'
}
packages=()
for lib in $libs; do
  pkg=$(owner "$lib")
  [[ -n $pkg ]] || { echo "make-rootfs.sh: $lib is in no Debian package: a scanner could not see it" >&2; exit 1; }
  packages+=("$pkg")
done
packages+=("$(dpkg-query -W -f '${Package}:${Architecture}' ca-certificates)")  # the CA bundle is made from it
mapfile -t packages < <(printf '%s\n' "${packages[@]}" | sort -u)
mkdir -p "$root/var/lib/dpkg/status.d"
for pkg in "${packages[@]}"; do
  name=${pkg%%:*}
  dpkg-query -s "$pkg" > "$root/var/lib/dpkg/status.d/$name"
  if [[ -f /usr/share/doc/$name/copyright ]]; then
    mkdir -p "$root/usr/share/doc/$name"
    install -m 0644 /usr/share/doc/"$name"/copyright "$root/usr/share/doc/$name/copyright"
  fi
done
chmod 0644 "$root"/var/lib/dpkg/status.d/*
version=$("$binary" version | awk '{print $NF}')
mkdir -p "$root/usr/share/doc/kubegap-webhook"
python3 - "$root" "$version" "$root/usr/local/bin/kubegap-webhook" "${packages[@]}" > "$root/usr/share/doc/kubegap-webhook/sbom.spdx.json" <<'PY'
import datetime, hashlib, json, os, re, sys
root, version, binary, packages = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
distro = "debian"
os_release = open("/etc/os-release").read()
version_id = (re.search(r'^VERSION_ID="?([^"\n]*)', os_release, re.M) or [None, ""])[1]
def stanza(name):
    fields = {}
    for line in open(os.path.join(root, "var/lib/dpkg/status.d", name)):
        if line[:1] not in (" ", "\t") and ":" in line:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields
def spdx_id(text):
    return "SPDXRef-" + re.sub(r"[^A-Za-z0-9.-]", "-", text)
digest = hashlib.sha256(open(binary, "rb").read()).hexdigest()
doc = {
    "spdxVersion": "SPDX-2.3", "dataLicense": "CC0-1.0", "SPDXID": "SPDXRef-DOCUMENT",
    "name": f"kubegap-webhook-{version}-image",
    "documentNamespace": f"https://kubegap.io/spdx/kubegap-webhook-{version}-{digest}",
    "creationInfo": {"created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                     "creators": ["Tool: images/make-rootfs.sh"]},
    "packages": [{"name": "kubegap-webhook", "SPDXID": "SPDXRef-kubegap-webhook", "versionInfo": version,
                  "downloadLocation": "NOASSERTION", "filesAnalyzed": False, "licenseConcluded": "NOASSERTION",
                  "licenseDeclared": "NOASSERTION", "copyrightText": "NOASSERTION",
                  "checksums": [{"algorithm": "SHA256", "checksumValue": digest}],
                  "primaryPackagePurpose": "APPLICATION"}],
    "relationships": [{"spdxElementId": "SPDXRef-DOCUMENT", "relationshipType": "DESCRIBES",
                       "relatedSpdxElement": "SPDXRef-kubegap-webhook"}],
}
for pkg in packages:
    name, _, arch = pkg.partition(":")
    f = stanza(name)
    purl = f"pkg:deb/{distro}/{name}@{f['Version']}?arch={f.get('Architecture', arch)}&distro={distro}-{version_id}"
    entry = {"name": name, "SPDXID": spdx_id(f"deb-{name}"), "versionInfo": f["Version"],
             "supplier": "Organization: Debian", "downloadLocation": "NOASSERTION", "filesAnalyzed": False,
             "licenseConcluded": "NOASSERTION", "licenseDeclared": "NOASSERTION", "copyrightText": "NOASSERTION",
             "externalRefs": [{"referenceCategory": "PACKAGE-MANAGER", "referenceType": "purl",
                               "referenceLocator": purl}],
             "primaryPackagePurpose": "LIBRARY"}
    if "Source" in f:
        entry["sourceInfo"] = f"built from the Debian source package {f['Source']}"
    doc["packages"].append(entry)
    doc["relationships"].append({"spdxElementId": "SPDXRef-kubegap-webhook", "relationshipType": "DEPENDS_ON",
                                 "relatedSpdxElement": entry["SPDXID"]})
json.dump(doc, sys.stdout, indent=1)
print()
PY
chmod 0644 "$root/usr/share/doc/kubegap-webhook/sbom.spdx.json"

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
echo "make-rootfs.sh: $root holds the binary, $(wc -w <<<"$libs") libraries (from ${#packages[@]} Debian packages, in its dpkg status and SBOM), the CA certificates and user 65532" >&2
