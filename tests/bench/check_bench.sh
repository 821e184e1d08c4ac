#!/usr/bin/env bash
# Benchmark of `kubegap-webhook check`: a generated directory of 10,000 objects (6,000
# Pods, 2,000 Jobs, 1,000 PyTorchJobs, 1,000 PodDisruptionBudgets in 100 files: 80
# multi-document YAML, 20 JSON Lists), checked 3 times with --output json. Prints the wall
# time of each run, the median objects/s and ms per 1,000 objects, and the peak RSS.
# It asserts correctness only (exit 0, 9,000 objects evaluated, 1,000 PDBs in the cluster
# view) and never fails on timing. Use a release build:
#   tests/bench/check_bench.sh BUILD/kubegap-webhook
set -uo pipefail
bin=$(realpath "$1")
runs=3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL - $1"; failures=$((failures + 1)); }

# Peak RSS needs GNU time; install it only when we are root and it is missing.
timer=/usr/bin/time
if [[ ! -x $timer ]] && [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time) >/dev/null 2>&1
fi
[[ -x $timer ]] || { timer=; echo "note: /usr/bin/time not available: peak RSS not measured"; }

python3 - "$tmp/manifests" <<'EOF' || { echo "FAIL - generating the manifests"; exit 1; }
import json, os, sys

out = sys.argv[1]
os.makedirs(out)

def pod(i):
    ns = f"team-{i % 20:02d}"
    gpu = i % 3 != 0  # two thirds request a GPU, a third are plain services
    spec = {"containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                            "resources": {"limits": {"nvidia.com/gpu": 8} if gpu else {"cpu": "1"}},
                            "volumeMounts": [{"name": "ckpt", "mountPath": "/checkpoints"}]}],
            "volumes": [{"name": "ckpt", "emptyDir": {}} if i % 2 else
                        {"name": "ckpt", "persistentVolumeClaim": {"claimName": f"ckpt-{i}"}}]}
    if i % 4 == 0:
        spec["nodeSelector"] = {"topology.kubernetes.io/zone": "us-east-1a"}
    if i % 5 == 0:
        spec["tolerations"] = [{"key": k, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}
                               for k in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"pod-{i}", "namespace": ns, "labels": {"app": f"app-{i % 50}"}},
            "spec": spec}

def template(i):
    return {"metadata": {"labels": {"app": f"train-{i}"}}, "spec": pod(i)["spec"] | {"restartPolicy": "Never"}}

def job(i):
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"job-{i}", "namespace": f"team-{i % 20:02d}"},
            "spec": {"backoffLimit": 4, "template": template(i)}}

def pytorchjob(i):
    t = template(i)
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": f"ptj-{i}", "namespace": f"team-{i % 20:02d}"},
            "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": t},
                                             "Worker": {"replicas": 7, "template": t}}}}

def pdb(n, kind, i):
    # Selects a Job by the label its controller adds, or a PyTorchJob by its operator's.
    label = "batch.kubernetes.io/job-name" if kind == "Job" else "training.kubeflow.org/job-name"
    target = f"job-{i}" if kind == "Job" else f"ptj-{i}"
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": f"pdb-{n}", "namespace": f"team-{i % 20:02d}"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {label: target}}}}

def yaml_value(v, indent):
    """A small YAML emitter (block style) for the generated dicts: no PyYAML needed."""
    pad = "  " * indent
    if isinstance(v, dict):
        lines = []
        for k, x in v.items():
            if isinstance(x, (dict, list)) and x:
                lines.append(f"{pad}{k}:")
                lines.append(yaml_value(x, indent + 1))
            else:
                lines.append(f"{pad}{k}: {json.dumps(x)}")
        return "\n".join(lines)
    if isinstance(v, list):
        lines = []
        for x in v:
            body = yaml_value(x, indent + 1) if isinstance(x, (dict, list)) else "  " * (indent + 1) + json.dumps(x)
            lines.append(f"{pad}- " + body.lstrip())
        return "\n".join(lines)
    return pad + json.dumps(v)

counts = {"Pod": 0, "Job": 0, "PyTorchJob": 0, "PodDisruptionBudget": 0}
for f in range(100):
    objects = ([pod(f * 60 + k) for k in range(60)] + [job(f * 20 + k) for k in range(20)] +
               [pytorchjob(f * 10 + k) for k in range(10)] +
               [pdb(f * 10 + k, "Job", f * 20 + k) if k % 2 else pdb(f * 10 + k, "PyTorchJob", f * 10 + k)
                for k in range(10)])
    for o in objects:
        counts[o["kind"]] += 1
    sub = os.path.join(out, f"team-{f % 10}")
    os.makedirs(sub, exist_ok=True)
    if f % 5 == 4:
        with open(os.path.join(sub, f"objects-{f:03d}.json"), "w") as fh:
            json.dump({"apiVersion": "v1", "kind": "List", "items": objects}, fh, indent=2)
    else:
        with open(os.path.join(sub, f"objects-{f:03d}.yaml"), "w") as fh:
            fh.write("".join("---\n" + yaml_value(o, 0) + "\n" for o in objects))
assert counts == {"Pod": 6000, "Job": 2000, "PyTorchJob": 1000, "PodDisruptionBudget": 1000}, counts
EOF
echo "input: 10,000 objects in 100 files, $(du -sh "$tmp/manifests" | cut -f1) ($(nproc) CPUs)"

walls=()
peak_kb=0
for run in $(seq "$runs"); do
  start=$(date +%s%N)
  if [[ -n $timer ]]; then
    "$timer" -v -o "$tmp/time.txt" "$bin" check --output json "$tmp/manifests" >"$tmp/out.json" 2>"$tmp/err"
  else
    "$bin" check --output json "$tmp/manifests" >"$tmp/out.json" 2>"$tmp/err"
  fi
  rc=$?
  end=$(date +%s%N)
  ms=$(( (end - start) / 1000000 ))
  walls+=("$ms")
  rss=
  if [[ -n $timer ]]; then
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$tmp/time.txt")
    (( rss > peak_kb )) && peak_kb=$rss
  fi
  echo "run $run: ${ms} ms wall${rss:+, peak RSS $((rss / 1024)) MiB}, exit $rc"
  [[ $rc -eq 0 ]] || fail "run $run exited $rc: $(head -c 500 "$tmp/err")"
  python3 - "$tmp/out.json" <<'EOF' || fail "run $run: wrong report"
import json, sys
r = json.load(open(sys.argv[1]))
s = r["summary"]
assert s["objects"] == 9000 == len(r["objects"]), s
assert s["podDisruptionBudgets"] == 1000 and s["nodes"] == 0, s
kinds = {}
for o in r["objects"]:
    kinds[o["kind"]] = kinds.get(o["kind"], 0) + 1
assert kinds == {"Pod": 6000, "Job": 2000, "PyTorchJob": 1000}, kinds
assert r["skipped"] == [], r["skipped"][:3]
# The cluster view is used: some workloads pass disruption-budget, none is "not evaluated".
outcomes = [f["outcome"] for o in r["objects"] for f in o["findings"] if f["check"] == "disruption-budget"]
assert "not-evaluated" not in outcomes, "disruption-budget not evaluated"
# A PyTorchJob is a training job by kind: its PDB (every even one) is what decides.
for o in r["objects"]:
    if o["kind"] != "PyTorchJob":
        continue
    i = int(o["name"].split("-")[1])
    covered = i % 2 == 0
    flagged = any(f["check"] == "disruption-budget" for f in o["findings"])
    assert flagged != covered, (o["name"], covered, o["findings"])
assert s["findings"] > 0, s
EOF
done

# The --cluster-state loader: 5,000 Nodes (30 labels, as a GPU cluster's) and 5,000 PDBs
# in one JSON List, the shape `kubectl get nodes,pdb -A -o json` writes, read by the loader
# `serve --cluster-state` uses (load_objects; `check` takes them from its input); one pod.
python3 - "$tmp/state.json" "$tmp/pod.yaml" <<'EOF' || fail "generating the cluster state"
import json, sys
nodes = [{"apiVersion": "v1", "kind": "Node",
          "metadata": {"name": f"node-{i}", "labels": dict(
              [("kubernetes.io/hostname", f"node-{i}"), ("topology.kubernetes.io/zone", f"zone-{i % 3}"),
               ("pool", f"pool-{i % 50}")] + [(f"example.com/label-{k}", f"value-{k}") for k in range(27)])},
          "spec": {}, "status": {"capacity": {"cpu": "192", "nvidia.com/gpu": "8"}}} for i in range(5000)]
pdbs = [{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
         "metadata": {"name": f"pdb-{i}", "namespace": f"team-{i % 20:02d}"},
         "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": f"job-{i}"}}}} for i in range(5000)]
json.dump({"apiVersion": "v1", "kind": "List", "items": nodes + pdbs}, open(sys.argv[1], "w"), indent=2)
open(sys.argv[2], "w").write("""apiVersion: v1
kind: Pod
metadata: {name: p, namespace: team-01, labels: {app: job-1}}
spec:
  nodeSelector: {pool: pool-7}
  containers: [{name: c, image: trainer, command: [torchrun, train.py], resources: {limits: {nvidia.com/gpu: 8}}}]
""")
EOF
state_rc=0
if [[ -n $timer ]]; then
  "$timer" -v -o "$tmp/state-time.txt" "$bin" check --output json "$tmp/state.json" "$tmp/pod.yaml" >"$tmp/state-out" 2>"$tmp/err" || state_rc=$?
else
  "$bin" check --output json "$tmp/state.json" "$tmp/pod.yaml" >"$tmp/state-out" 2>"$tmp/err" || state_rc=$?
fi
# Exit 0 or 1 (findings) both mean it ran; anything else is a failure.
(( state_rc <= 1 )) || fail "check of the cluster state exited $state_rc: $(head -c 500 "$tmp/err")"
python3 - "$tmp/state-out" <<'EOF' || fail "check of the cluster state: wrong report"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["summary"]["nodes"] == 5000 and r["summary"]["podDisruptionBudgets"] == 5000, r["summary"]
# pdb-1 (team-01, app=job-1) covers the pod: no disruption-budget finding, and evaluated.
findings = [f for o in r["objects"] for f in o["findings"] if f["check"] == "disruption-budget"]
assert all(f["outcome"] not in ("finding", "not-evaluated") for f in findings), findings
EOF
if [[ -n $timer ]]; then
  echo "cluster-state loader: 5,000 Nodes (30 labels) + 5,000 PDBs, $(du -h "$tmp/state.json" | cut -f1) of JSON:" \
    "peak RSS $(( $(awk -F': ' '/Maximum resident set size/ {print $2}' "$tmp/state-time.txt") / 1024 )) MiB," \
    "$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$tmp/state-time.txt") wall"
fi

median=$(printf '%s\n' "${walls[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
(( median > 0 )) || median=1
echo "median: ${median} ms for 10,000 objects (9,000 evaluated + 1,000 PDBs):" \
  "$(( 10000 * 1000 / median )) objects/s, $(awk -v m="$median" 'BEGIN { printf "%.1f", m / 10 }') ms per 1,000 objects"
[[ -n $timer ]] && echo "peak RSS: $((peak_kb / 1024)) MiB"
if [[ $failures -ne 0 ]]; then echo "# $failures failure(s)"; exit 1; fi
echo "# ok (timings are informational, never a failure)"
