#!/usr/bin/env python3
"""One version everywhere a user reads it.

    python3 tests/docs/check_version.py SOURCE_DIR [BINARY]

The project's VERSION in the root CMakeLists.txt (`project(kubegap-webhook VERSION X.Y.Z
...)`, from which the binary's version is generated) must equal:
  - `BINARY --version` (it prints "kubegap-webhook X.Y.Z"), when BINARY is given;
  - the Helm chart's `version` and `appVersion` (manifests/helm/kubegap-webhook/Chart.yaml);
  - the image tag in manifests/base (the Deployment's `image:` and the kustomization's
    `newTag:`), and the Helm values' `image.tag` when it sets one (empty: the appVersion);
  - every other `kubegap-webhook:X.Y.Z` image reference under manifests/ and in the
    Containerfile;
  - the latest (first) `## X.Y.Z` section of CHANGELOG.md.
Exits 1 listing each mismatch, 0 otherwise. Standard library only.
"""

import os
import re
import subprocess
import sys

SEMVER = r"\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?"


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    root = os.path.abspath(sys.argv[1])
    binary = sys.argv[2] if len(sys.argv) == 3 else None
    problems = []
    found = []   # (where, version)

    m = re.search(r"project\(\s*kubegap-webhook\b[^)]*?\bVERSION\s+(" + SEMVER + r")", read(root, "CMakeLists.txt"))
    if not m:
        print("CMakeLists.txt: no project(kubegap-webhook VERSION X.Y.Z ...)", file=sys.stderr)
        return 1
    version = m.group(1)

    if binary:
        try:
            r = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
            out = r.stdout.strip()
            m = re.fullmatch(r"kubegap-webhook (" + SEMVER + r")", out)
            if r.returncode != 0 or not m:
                problems.append(f"{binary} --version: exit {r.returncode}, printed {out!r} "
                                f"(expected 'kubegap-webhook {version}')")
            else:
                found.append((f"{binary} --version", m.group(1)))
        except OSError as e:
            problems.append(f"{binary} --version: {e}")

    chart = read(root, "manifests/helm/kubegap-webhook/Chart.yaml")
    for key in ("version", "appVersion"):
        m = re.search(r"^" + key + r":\s*[\"']?(" + SEMVER + r")[\"']?\s*$", chart, re.M)
        if m:
            found.append((f"manifests/helm/kubegap-webhook/Chart.yaml {key}", m.group(1)))
        else:
            problems.append(f"manifests/helm/kubegap-webhook/Chart.yaml: no {key}")

    deployment = read(root, "manifests/base/deployment.yaml")
    m = re.search(r"^\s*image:\s*[\"']?kubegap-webhook:(" + SEMVER + r")", deployment, re.M)
    if m:
        found.append(("manifests/base/deployment.yaml image", m.group(1)))
    else:
        problems.append("manifests/base/deployment.yaml: no image kubegap-webhook:X.Y.Z")
    kustomization = read(root, "manifests/base/kustomization.yaml")
    m = re.search(r"^\s*newTag:\s*[\"']?(" + SEMVER + r")", kustomization, re.M)
    if m:
        found.append(("manifests/base/kustomization.yaml newTag", m.group(1)))
    else:
        problems.append("manifests/base/kustomization.yaml: no images newTag")

    values = read(root, "manifests/helm/kubegap-webhook/values.yaml")
    m = re.search(r"^image:\s*\n((?:[ \t]+.*\n|\s*\n)*)", values, re.M)
    tag = re.search(r"^\s+tag:\s*[\"']?([^\"'\s#]*)", m.group(1), re.M) if m else None
    if tag is None:
        problems.append("manifests/helm/kubegap-webhook/values.yaml: no image.tag")
    elif tag.group(1):   # empty: the chart's appVersion, checked above
        found.append(("manifests/helm/kubegap-webhook/values.yaml image.tag", tag.group(1)))

    # Every other pinned reference to the image, in the manifests and the Containerfile.
    pinned = [os.path.join(root, "Containerfile")]
    for base, dirs, files in os.walk(os.path.join(root, "manifests")):
        dirs[:] = sorted(d for d in dirs if d != "generated-by-generate.sh")
        pinned += [os.path.join(base, f) for f in sorted(files) if f.endswith((".yaml", ".yml", ".json", ".tpl", ".sh"))]
    for path in pinned:
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                for tag in re.findall(r"(?<![\w.-])kubegap-webhook:(" + SEMVER + r")\b", line):
                    found.append((f"{os.path.relpath(path, root)}:{number}", tag))

    changelog = read(root, "CHANGELOG.md")
    m = re.search(r"^##\s+\[?v?(" + SEMVER + r")\]?", changelog, re.M)
    if m:
        found.append(("CHANGELOG.md latest section", m.group(1)))
    else:
        problems.append("CHANGELOG.md: no '## X.Y.Z' section")

    for where, v in found:
        if v != version:
            problems.append(f"{where}: {v}, but CMakeLists.txt's project VERSION is {version}")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        return 1
    print(f"version {version} in all {len(found) + 1} places")
    for where, _ in found:
        print(f"  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
