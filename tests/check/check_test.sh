#!/usr/bin/env bash
# `kubegap-webhook check` as a CI pipeline runs it: golden outputs for text, json and
# sarif; the JSON schema; SARIF locations; exit codes; stdin; the cluster view built from
# the input; skipped kinds; --policy.
#   tests/check/check_test.sh BINARY SOURCE_DIR
# Paths are relative to SOURCE_DIR so the outputs are stable. KUBEGAP_UPDATE_GOLDEN=1
# rewrites the golden files (read them before committing).
set -uo pipefail
bin=$(realpath "$1")
cd "$2" || exit 2
fx=tests/fixtures/check
golden=$fx/golden
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0 passes=0
pass() { echo "ok   - $1"; passes=$((passes + 1)); }
fail() { echo "FAIL - $1"; failures=$((failures + 1)); }

# run ARGS...: runs check, stdout in $tmp/out, stderr in $tmp/err, exit code in $rc.
run() { "$bin" check "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }

# expect CODE PATTERN DESCRIPTION -- ARGS...: exit code and an ERE in stdout+stderr.
expect() {
  local code=$1 pattern=$2 what=$3; shift 4
  run "$@"
  local out; out=$(cat "$tmp/out" "$tmp/err")
  if [[ $rc -ne $code ]]; then fail "$what: exit $rc, want $code; output: $out"
  elif ! grep -qE -- "$pattern" <<<"$out"; then fail "$what: output lacks /$pattern/: $out"
  else pass "$what"; fi
}

# py DESCRIPTION SCRIPT [ARGS...]: a python assertion over $tmp/out (sys.argv[1]).
py() {
  local what=$1 script=$2; shift 2
  local msg
  if msg=$(python3 -c "$script" "$tmp/out" "$@" 2>&1); then pass "$what"; else fail "$what: $msg"; fi
}

# The version is in the json and sarif outputs; the golden files say @VERSION@.
version=$("$bin" version | awk '{print $2}')
normalize() { sed "s/\"version\": \"$version\"/\"version\": \"@VERSION@\"/"; }

# --- golden outputs, one per format, over the fixture directories ------------------------
# manifests/ is clean (exit 0); mixed/ has unreadable files (exit 2, the report still whole).
for dir_code in manifests:0 mixed:2; do
for format in text json sarif; do
  dir=${dir_code%:*} code=${dir_code#*:}
  ext=$([[ $format == text ]] && echo txt || echo "$format")
  want=$golden/$dir.$ext
  run --output "$format" "$fx/$dir"
  if [[ $format == text ]]; then cp "$tmp/out" "$tmp/got"; else normalize <"$tmp/out" >"$tmp/got"; fi
  if [[ $rc -ne $code ]]; then fail "golden $dir $format: exit $rc, want $code: $(cat "$tmp/err")"; continue; fi
  if [[ ${KUBEGAP_UPDATE_GOLDEN:-0} == 1 ]]; then
    cp "$tmp/got" "$want"
    pass "golden $format: rewrote $want"
  elif diff -u "$want" "$tmp/got"; then
    pass "golden $format matches $want"
  else
    fail "golden $format differs from $want (KUBEGAP_UPDATE_GOLDEN=1 rewrites it)"
  fi
done
done

# --- the JSON schema -------------------------------------------------------------------------
run --output json "$fx/manifests"
py "json: parses and follows the documented schema" '
import json, sys
r = json.load(open(sys.argv[1]))
assert set(r) == {"apiVersion", "kind", "version", "objects", "skipped", "errors", "notes", "summary"}, sorted(r)
assert r["errors"] == [] and r["notes"] == [], (r["errors"], r["notes"])
assert r["apiVersion"] == "kubegap.io/v1alpha1" and r["kind"] == "CheckReport", r
assert isinstance(r["version"], str) and r["version"]
checks = {"checkpoint-volume", "disruption-budget", "zone-spread", "gpu-health-tolerations", "restart-on-failure"}
findings = 0
for o in r["objects"]:
    for k, t in (("file", str), ("line", int), ("kind", str), ("namespace", str), ("name", str), ("findings", list)):
        assert isinstance(o.get(k), t), (k, o)
    assert o["line"] >= 1, o
    for f in o["findings"]:
        for k, t in (("check", str), ("outcome", str), ("message", str), ("action", str), ("reason", str), ("remedy", str), ("parts", list), ("cases", list)):
            assert isinstance(f.get(k), t), (k, f)
        # Every finding says how to fix it, in the JSON and in its audit annotation.
        assert (f["remedy"] != "") == (f["outcome"] == "finding"), f
        assert f["outcome"] != "finding" or "fix: " + f["remedy"] in f["reason"], f
        # "input": the note naming what the input left open (the runtime of a TrainJob, a placeholder).
        assert f["check"] in checks or (f["check"] == "input" and f["outcome"] == "note"), f
        assert f["outcome"] in ("finding", "exempt", "not-evaluated", "note"), f
        assert f["cases"] or f["check"] == "input", f
        for c in f["cases"]:
            assert set(c) == {"id", "url"} and c["url"].startswith("https://"), c
        if f["outcome"] == "finding":
            findings += 1
            assert f["message"].startswith("kubegap/" + f["check"] + ": "), f
            assert "(case " + f["cases"][0]["id"] + ")" in f["message"], f
        else:
            assert f["message"] == "", f
for s in r["skipped"]:
    for k, t in (("file", str), ("line", int), ("kind", str), ("name", str)):
        assert isinstance(s.get(k), t), (k, s)
sm = r["summary"]
assert sm["objects"] == len(r["objects"]) == 8 and sm["errors"] == 0, sm
assert sm["findings"] == findings == 14, (sm, findings)
assert sm["podDisruptionBudgets"] == 1 and sm["nodes"] == 0, sm
'
py "json: every file of the tree but README.txt; kinds and lines as in the files" '
import json, sys
r = json.load(open(sys.argv[1]))
files = {o["file"] for o in r["objects"]} | {s["file"] for s in r["skipped"]}
base = "tests/fixtures/check/manifests/"
assert files == {base + f for f in ("training.yaml", "pods.json", "review.json", "nested/team-b/jobs.yml")}, files
got = [(o["file"][len(base):], o["line"], o["kind"], o["namespace"], o["name"]) for o in r["objects"]]
want = [("nested/team-b/jobs.yml", 3, "TrainJob", "team-b", "llama-sft"),
        ("nested/team-b/jobs.yml", 12, "Deployment", "team-b", "tensorboard"),
        ("pods.json", 5, "Pod", "ml-research", "eval-0"),
        ("pods.json", 34, "Pod", "frontend", "web"),
        ("pods.json", 40, "Pod", "ml-research", "notebook"),
        ("review.json", 11, "Pod", "ml-research", "captured-0"),
        ("training.yaml", 6, "PyTorchJob", "ml-research", "llm-pretrain"),
        ("training.yaml", 56, "Job", "ml-research", "llm-finetune")]
assert got == want, got
skipped = [(s["file"][len(base):], s["line"], s["kind"], s["name"]) for s in r["skipped"]]
assert skipped == [("training.yaml", 89, "ConfigMap", "finetune-config")], skipped
by_name = {o["name"]: {f["check"]: f for f in o["findings"]} for o in r["objects"]}
pt = by_name["llm-pretrain"]
assert set(pt) == {"checkpoint-volume", "disruption-budget", "zone-spread", "gpu-health-tolerations"}, pt
assert pt["zone-spread"]["parts"] == ["replica Master", "replica Worker"], pt["zone-spread"]
# The PDB in training.yaml selects the Job by batch.kubernetes.io/job-name: no disruption-budget.
assert set(by_name["llm-finetune"]) == {"checkpoint-volume"}, by_name["llm-finetune"]
# A notebook shows no sign of training (class auto): checkpoint-volume is not evaluated,
# with the reason and how to opt in, before its exemption is even needed.
assert by_name["notebook"]["checkpoint-volume"]["outcome"] == "not-evaluated", by_name["notebook"]
assert by_name["notebook"]["disruption-budget"]["outcome"] == "exempt", by_name["notebook"]
assert by_name["notebook"]["disruption-budget"]["reason"] == "exempt: interactive notebook, nothing to resume"
assert "no sign that this pod trains" in by_name["notebook"]["checkpoint-volume"]["reason"], by_name["notebook"]
assert by_name["web"] == {} and by_name["tensorboard"] == {}, by_name
'

# --- SARIF -----------------------------------------------------------------------------------
run --output sarif "$fx/manifests"
# shellcheck disable=SC2016  # python, not shell: $schema is a JSON key
py "sarif: 2.1.0, the five rules, every result located at its object" '
import json, sys
s = json.load(open(sys.argv[1]))
assert s["version"] == "2.1.0", s["version"]
assert "sarif" in s["$schema"], s["$schema"]
run = s["runs"][0]
rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
assert rules == ["checkpoint-volume", "disruption-budget", "zone-spread", "gpu-health-tolerations",
                 "restart-on-failure"], rules
for r in run["tool"]["driver"]["rules"]:
    assert r["shortDescription"]["text"] and r["helpUri"].startswith("https://"), r
    assert r["help"]["text"].startswith("Fix: "), r
results = run["results"]
assert len(results) == 15, len(results)  # 14 findings and 1 exempt (suppressed)
for x in results:
    assert x["ruleId"] in rules, x
    assert x["level"] in ("warning", "error", "note"), x
    assert x["message"]["text"], x
    loc = x["locations"][0]["physicalLocation"]
    uri, line = loc["artifactLocation"]["uri"], loc["region"]["startLine"]
    text = open(uri).read().splitlines()[line - 1]
    # Every object starts at its apiVersion (YAML) or at its opening brace (JSON).
    assert text.startswith("apiVersion:") or text.rstrip().endswith("{"), (uri, line, text)
suppressed = [x for x in results if x.get("suppressions")]
assert len(suppressed) == 1 and suppressed[0]["ruleId"] == "disruption-budget", suppressed
assert suppressed[0]["suppressions"][0]["justification"] == "interactive notebook, nothing to resume"
'
py "sarif: two results checked by hand (PyTorchJob zone-spread, Job checkpoint-volume)" '
import json, sys
results = json.load(open(sys.argv[1]))["runs"][0]["results"]
def at(rule, name):
    [x] = [x for x in results if x["ruleId"] == rule and name in x["message"]["text"]]
    loc = x["locations"][0]["physicalLocation"]
    return x["message"]["text"], loc["artifactLocation"]["uri"], loc["region"]["startLine"]
text, uri, line = at("zone-spread", "PyTorchJob ml-research/llm-pretrain")
assert (uri, line) == ("tests/fixtures/check/manifests/training.yaml", 6), (uri, line)
assert "pinned to zone \"us-central1-a\" by nodeSelector" in text, text
assert text.endswith(". Fix: allow several zones (node affinity In) instead of the zone nodeSelector"), text
assert open(uri).read().splitlines()[5] == "apiVersion: kubeflow.org/v1"
assert open(uri).read().splitlines()[6] == "kind: PyTorchJob"
text, uri, line = at("checkpoint-volume", "Job ml-research/llm-finetune")
assert (uri, line) == ("tests/fixtures/check/manifests/training.yaml", 56), (uri, line)
assert "emptyDir \"ckpt\"" in text, text
assert open(uri).read().splitlines()[55:57] == ["apiVersion: batch/v1", "kind: Job"]
text, uri, line = at("gpu-health-tolerations", "Pod ml-research/captured-0")
assert (uri, line) == ("tests/fixtures/check/manifests/review.json", 11), (uri, line)
assert "\"object\": {" in open(uri).read().splitlines()[10]
'
run --output sarif "$fx/single/job-and-pdb.yaml"
py "sarif: a clean input has the rules and no results" '
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
assert len(run["tool"]["driver"]["rules"]) == 5 and run["results"] == [], run["results"]
'

# --- an unreadable input costs only itself (mixed/: see its README.txt) ----------------------
mixed=$fx/mixed
# The errors, each at the line of its offending field, in the order the files are read.
mixed_errors="$mixed/broken.yaml:15: invalid YAML: end of map not found
$mixed/gpu-var.yaml:17: Job.spec.template.spec.containers[0].resources.limits.nvidia.com/gpu: not a quantity
$mixed/no-kind.yaml:2: not a Kubernetes object: apiVersion and kind are required"
good_objects="Pod web/before-break|Pod web/after-break|Pod web/cpu-only|Job vision/good-train|Pod web/next-to-templated|PyTorchJob ml-research/merged-replicas"
run "$mixed"
if [[ $rc -eq 2 ]]; then pass "mixed: exit 2 when any input could not be read"; else fail "mixed: exit $rc, want 2"; fi
if [[ $(grep -cE "^($good_objects) \(" "$tmp/out") -eq 6 ]]; then pass "mixed text: every good object is in the report"
else fail "mixed text: good objects missing: $(cat "$tmp/out")"; fi
if [[ $(sed 's/^kubegap-webhook check: //' "$tmp/err") == "$mixed_errors" ]]; then
  pass "mixed text: every error on stderr as file:line: message, in file order"
else fail "mixed text: stderr is $(cat "$tmp/err")"; fi
expect 2 "6 object\(s\) checked, 3 finding\(s\), 3 input error\(s\)" \
  "mixed: --fail-on-findings with input errors exits 2, not 1" -- --fail-on-findings "$mixed"
for skipped in kustomization.yaml chart/Chart.yaml chart/values.yaml chart/templates/job.yaml; do
  if grep -q "^note: $mixed/$skipped: skipped: " "$tmp/out"; then pass "mixed: $skipped skipped with a note"
  else fail "mixed: no note for $skipped: $(cat "$tmp/out")"; fi
done
run --output json "$mixed"
py "mixed json: good objects evaluated, errors with file and line, notes, exit 2" '
import json, sys
r = json.load(open(sys.argv[1]))
want_errors = [line.split(":", 2) for line in sys.argv[2].splitlines()]
got = [[e["file"], str(e["line"]), " " + e["message"]] for e in r["errors"]]
assert got == want_errors, got
# Every error line is the offending field, not the first line of its object.
lines = {e["file"]: open(e["file"]).read().splitlines()[e["line"] - 1] for e in r["errors"]}
assert "nvidia.com/gpu: \"{{ .Values.gpus }}\"" in lines[sys.argv[3] + "/gpu-var.yaml"], lines
assert lines[sys.argv[3] + "/no-kind.yaml"] == "apiVersion: v1", lines
names = [o["name"] for o in r["objects"]]
assert names == ["before-break", "after-break", "cpu-only", "good-train", "next-to-templated", "merged-replicas"], names
by_name = {o["name"]: {f["check"]: f for f in o["findings"]} for o in r["objects"]}
assert by_name["cpu-only"] == {}, by_name["cpu-only"]  # an empty nvidia.com/gpu: requests no GPU
# The Worker is the Master through <<: *replica: both replicas are evaluated.
assert by_name["merged-replicas"]["zone-spread"]["parts"] == ["replica Master", "replica Worker"], by_name["merged-replicas"]
assert "templated" not in names  # the Job with a Helm expression is an error, not a GPU request
assert [n.split(": ")[0] for n in r["notes"]] == [sys.argv[3] + "/" + f for f in
        ("chart/Chart.yaml", "chart/templates/job.yaml", "chart/values.yaml", "kustomization.yaml")], r["notes"]
assert r["summary"]["errors"] == 3 and r["summary"]["objects"] == 6, r["summary"]
' "$mixed_errors" "$mixed"
if [[ $rc -eq 2 ]]; then pass "mixed json: exit 2"; else fail "mixed json: exit $rc, want 2"; fi
run --output sarif "$mixed"
py "mixed sarif: results for the good objects, each error a notification at its file and line" '
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
texts = [x["message"]["text"] for x in run["results"]]
assert any(t.startswith("PyTorchJob ml-research/merged-replicas: ") for t in texts), texts
[inv] = run["invocations"]
assert inv["executionSuccessful"] is False, inv
errors = [n for n in inv["toolExecutionNotifications"] if n["level"] == "error"]
got = []
for n in errors:
    loc = n["locations"][0]["physicalLocation"]
    got.append([loc["artifactLocation"]["uri"], str(loc["region"]["startLine"]), " " + n["message"]["text"]])
assert got == [line.split(":", 2) for line in sys.argv[2].splitlines()], got
notes = [n for n in inv["toolExecutionNotifications"] if n["level"] == "note"]
assert len(notes) == 4, notes
' "$mixed_errors"
if [[ $rc -eq 2 ]]; then pass "mixed sarif: exit 2"; else fail "mixed sarif: exit $rc, want 2"; fi
run --output sarif "$fx/single/job.yaml"
py "sarif: a clean run records executionSuccessful and no notifications" '
import json, sys
[inv] = json.load(open(sys.argv[1]))["runs"][0]["invocations"]
assert inv == {"executionSuccessful": True, "toolExecutionNotifications": []}, inv
'
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n' >"$tmp/Chart.yaml"
expect 0 "1 object\(s\) checked" "a Chart.yaml that holds a Kubernetes object is checked, not skipped" -- "$tmp/Chart.yaml"

# --- exit codes ------------------------------------------------------------------------------
expect 0 "1 object\(s\) checked, 0 finding\(s\)$" "exit 0 when clean" -- "$fx/single/job-and-pdb.yaml"
expect 0 "8 object\(s\) checked, 14 finding\(s\)" "exit 0 with findings (no --fail-on-findings)" -- "$fx/manifests"
expect 1 "8 object\(s\) checked, 14 finding\(s\)" "exit 1 with findings and --fail-on-findings" -- --fail-on-findings "$fx/manifests"
expect 0 "0 finding\(s\)" "exit 0 when clean with --fail-on-findings" -- --fail-on-findings "$fx/single/job-and-pdb.yaml"
expect 0 "0 finding\(s\)" "not evaluated is not a finding (--fail-on-findings, no PDB)" -- --fail-on-findings "$fx/single/job.yaml"
expect 1 '"findings": 14' "exit 1 with --output json --fail-on-findings, flags after the path" -- "$fx/manifests" --output json --fail-on-findings
expect 2 "^kubegap-webhook check: $fx/invalid/malformed.yaml:11: invalid YAML" \
  "exit 2 on malformed YAML, naming file and line" -- "$fx/invalid/malformed.yaml"
if grep -q "^Pod default/ok ($fx/invalid/malformed.yaml:2)$" "$tmp/out" && grep -q "1 input error(s)" "$tmp/out"; then
  pass "exit 2 still prints the report: the document before the syntax error is checked"
else fail "malformed.yaml: the first document is not in the report: $(head -c 300 "$tmp/out")"; fi
expect 2 "$fx/invalid/no-kind.yaml:9: not a Kubernetes object: apiVersion and kind are required" \
  "exit 2 on a document without kind, naming file and line" -- "$fx/invalid/no-kind.yaml"
expect 2 "no Kubernetes objects found.*$fx/invalid/empty.yaml: no Kubernetes objects" \
  "exit 2 on an empty file only" -- "$fx/invalid/empty.yaml"
expect 2 "no Kubernetes objects" "exit 2 on a file of comments and --- only" -- "$fx/invalid/comments-only.yaml"
expect 2 "$fx/does-not-exist.yaml: no such file or directory" "exit 2 on a missing path" -- "$fx/does-not-exist.yaml"
expect 2 "$fx/does-not-exist: no such file or directory" "exit 2 on a missing path next to a good one" -- \
  "$fx/single/job.yaml" "$fx/does-not-exist"
expect 2 'flag --output: expected text, json or sarif, got "xml"' "exit 2 on an unknown --output" -- --output xml "$fx/manifests"
expect 2 "check needs at least one PATH" "exit 2 without PATH" --
expect 2 "check needs at least one PATH" "exit 2 without PATH (flags only)" -- --output json --fail-on-findings
expect 2 "unknown flag --bogus" "exit 2 on an unknown flag" -- --bogus "$fx/manifests"
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: {name: c}\n' >"$tmp/type-error.yaml"
expect 2 "type-error.yaml:5: Pod.spec.containers: expected an array" \
  "exit 2 on an object that cannot be decoded, naming file, line and JSON path" -- "$tmp/type-error.yaml"
printf 'enabledChecks: [checkpoint-volume]\nfrobnicate: true\n' >"$tmp/bad-policy.yaml"
expect 2 "bad-policy.yaml:2: frobnicate: unknown key" "a bad --policy file is a parse error: exit 2 naming file and line" -- \
  --policy "$tmp/bad-policy.yaml" "$fx/manifests"
expect 0 "Usage: kubegap-webhook check" "check --help" -- --help
expect 0 "Usage: kubegap-webhook check" "check -h" -- -h
if [[ -s $tmp/err ]]; then fail "check -h wrote to stderr: $(cat "$tmp/err")"; fi

# --- inputs ----------------------------------------------------------------------------------
run - <"$fx/single/job.yaml"
if [[ $rc -eq 0 ]] && grep -q "^Job vision/resnet-train (<stdin>:3)$" "$tmp/out"; then
  pass "stdin (-) is read"
else fail "stdin: exit $rc: $(cat "$tmp/out" "$tmp/err")"; fi
run --output json "$fx/single/job.yaml"; cp "$tmp/out" "$tmp/file.json"
run --output json - <"$fx/single/job.yaml"
py "stdin gives the same report as the file, but for the file name" '
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert [o.pop("file") for o in a["objects"]] == ["<stdin>"]
[o.pop("file") for o in b["objects"]]
assert a == b, (a, b)
' "$tmp/file.json"

run --output json "$fx/single/job-and-pdb.yaml"
py "a Job and its PDB in one file: disruption-budget passes" '
import json, sys
r = json.load(open(sys.argv[1]))
[o] = r["objects"]
assert (o["kind"], o["name"], o["findings"]) == ("Job", "resnet-train", []), o
assert r["summary"] == {"objects": 1, "findings": 0, "errors": 0, "podDisruptionBudgets": 1, "nodes": 0}, r["summary"]
assert r["skipped"] == [], r["skipped"]  # a PDB is the cluster view, not a skipped object
'
run --output json "$fx/single/job.yaml"
py "the same Job without the PDB: disruption-budget not evaluated" '
import json, sys
r = json.load(open(sys.argv[1]))
[o] = r["objects"]
[f] = o["findings"]
assert (f["check"], f["outcome"]) == ("disruption-budget", "not-evaluated"), f
assert f["reason"] == "not evaluated: no PodDisruptionBudgets or Nodes in the input", f
assert r["summary"]["findings"] == 0 and r["summary"]["podDisruptionBudgets"] == 0, r["summary"]
'
expect 0 "disruption-budget: not evaluated: no PodDisruptionBudgets or Nodes in the input" \
  "text: not evaluated is shown on the object" -- "$fx/single/job.yaml"
# The view spans every PATH: the Job from one file, its PDB from stdin.
sed -n '/^kind: PodDisruptionBudget/,$p' "$fx/single/job-and-pdb.yaml" | sed '1i apiVersion: policy/v1' >"$tmp/pdb.yaml"
run --output json "$fx/single/job.yaml" - <"$tmp/pdb.yaml"
py "the cluster view spans files (the PDB on stdin covers the Job in a file)" '
import json, sys
r = json.load(open(sys.argv[1]))
assert [o["findings"] for o in r["objects"]] == [[]], r["objects"]
assert r["summary"]["podDisruptionBudgets"] == 1, r["summary"]
'

run --output json "$fx/single/nodes-and-pod.yaml"
py "Nodes in the input form the view: node-aware zone-spread, disruption-budget evaluated" '
import json, sys
r = json.load(open(sys.argv[1]))
[o] = r["objects"]
assert (o["kind"], o["name"], o["line"]) == ("Pod", "finetune-0", 16), o
f = {x["check"]: x for x in o["findings"]}
assert set(f) == {"disruption-budget", "zone-spread"}, f
assert all(x["outcome"] == "finding" for x in f.values()), f
assert "us-east-1a" in f["zone-spread"]["reason"], f["zone-spread"]
assert r["summary"] == {"objects": 1, "findings": 2, "errors": 0, "podDisruptionBudgets": 0, "nodes": 2}, r["summary"]
assert r["skipped"] == [], r["skipped"]  # Nodes are the cluster view, not skipped objects
'

run --output json "$fx/single/configmap.yaml"
py "unknown kinds (ConfigMap, a CRD not in the table) are skipped, not errors" '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["objects"] == [], r["objects"]
assert [(s["kind"], s["name"], s["line"]) for s in r["skipped"]] == [("ConfigMap", "settings", 2), ("Widget", "gadget", 9)], r["skipped"]
'
expect 0 "^skipped 2 object\(s\) of kinds kubegap does not evaluate: ConfigMap \(1\), Widget \(1\) \(--show-skipped lists them\)$" \
  "text: skipped kinds are summarised in one line, exit 0" -- "$fx/single/configmap.yaml"
expect 0 "skipped Widget gadget \($fx/single/configmap.yaml:9\): not a kind kubegap evaluates" \
  "text --show-skipped: each skipped object is listed, exit 0" -- --show-skipped "$fx/single/configmap.yaml"
expect 0 "note: $fx/invalid/empty.yaml: no Kubernetes objects" "an empty file next to objects is a note, not an error" -- \
  "$fx/invalid/empty.yaml" "$fx/single/job.yaml"

run --output json --policy "$fx/policy-no-zone-spread.yaml" "$fx/manifests"
py "--policy is honoured (zone-spread disabled, the others still run)" '
import json, sys
r = json.load(open(sys.argv[1]))
checks = {f["check"] for o in r["objects"] for f in o["findings"]}
assert checks == {"checkpoint-volume", "disruption-budget", "gpu-health-tolerations", "input"}, checks
assert r["summary"]["findings"] == 11, r["summary"]  # zone-spread and restart-on-failure are not enabled
'
expect 0 "8 object\(s\) checked, 11 finding\(s\)" "--policy=FILE form" -- "--policy=$fx/policy-no-zone-spread.yaml" "$fx/manifests"

# checkActions: a check whose action is `audit` is listed as "(audit only)", is not a
# warning, and does not make the exit code 1 by itself.
printf 'checkActions:\n  zone-spread: audit\n' >"$tmp/audit-zone.yaml"
run --output json --policy "$tmp/audit-zone.yaml" "$fx/manifests"
py "checkActions audit: zone-spread findings have action audit and no warning text" '
import json, sys
r = json.load(open(sys.argv[1]))
zone = [f for o in r["objects"] for f in o["findings"] if f["check"] == "zone-spread" and f["outcome"] == "finding"]
assert len(zone) == 2, zone
assert all(f["action"] == "audit" and f["message"] == "" and f["reason"] for f in zone), zone
others = [f for o in r["objects"] for f in o["findings"] if f["check"] != "zone-spread" and f["outcome"] == "finding"]
assert others and all(f["action"] == "warn" and f["message"] for f in others), others
assert r["summary"]["findings"] == 12, r["summary"]  # the two zone-spread findings no longer warn
'
expect 0 "zone-spread: \(audit only\) pinned to zone" "checkActions audit: text lists the finding as audit only" -- \
  --policy "$tmp/audit-zone.yaml" "$fx/manifests"
run --output sarif --policy "$tmp/audit-zone.yaml" "$fx/manifests"
py "checkActions audit: SARIF reports those findings at level note" '
import json, sys
results = json.load(open(sys.argv[1]))["runs"][0]["results"]
zone = [x for x in results if x["ruleId"] == "zone-spread"]
assert len(zone) == 2 and all(x["level"] == "note" for x in zone), zone
assert all(x["level"] == "warning" for x in results if x["ruleId"] != "zone-spread" and not x.get("suppressions")), results
'
printf 'checkActions:\n  zone-spread: shout\n' >"$tmp/bad-action.yaml"
expect 2 "bad-action.yaml:2: checkActions.zone-spread: expected warn or audit" "a bad check action is a policy error naming the line" -- \
  --policy "$tmp/bad-action.yaml" "$fx/manifests"

# DRA: a ResourceClaimTemplate in the input resolves the device class of the pods that use it.
cat >"$tmp/dra-pod.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: dra-train, namespace: ml}
spec:
  resourceClaims: [{name: dev, resourceClaimTemplateName: one-device}]
  containers:
    - name: trainer
      image: pytorch/pytorch
      command: [torchrun, train.py]
      resources: {claims: [{name: dev}]}
      volumeMounts: [{name: ckpt, mountPath: /checkpoints}]
  volumes: [{name: ckpt, emptyDir: {}}]
YAML
dra_template() {
  printf 'apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: one-device, namespace: ml}\n'
  printf 'spec:\n  spec:\n    devices:\n      requests: [{name: dev, exactly: {deviceClassName: %s}}]\n' "$1"
}
dra_template gpu.nvidia.com >"$tmp/dra-gpu.yaml"
dra_template nic.example.com >"$tmp/dra-nic.yaml"
expect 0 "checkpoints at /checkpoints" "DRA: a claim template of a GPU device class makes the pod an accelerator pod" -- \
  "$tmp/dra-pod.yaml" "$tmp/dra-gpu.yaml"
# Of another device class, the pod is on CPU: judged only because it runs torchrun
# (policy judgeCpuTraining), and not at all with that policy off.
expect 0 "torchrun \(no accelerator: policy judgeCpuTraining\)" "DRA: a claim template of another device class does not" -- \
  --explain "$tmp/dra-pod.yaml" "$tmp/dra-nic.yaml"
printf 'judgeCpuTraining: false\n' >"$tmp/gpu-only-policy.yaml"
expect 0 "dra-train .*\n? *no findings|1 object\(s\) checked, 0 finding" "DRA: ... and with judgeCpuTraining off, it is not judged" -- \
  --policy "$tmp/gpu-only-policy.yaml" "$tmp/dra-pod.yaml" "$tmp/dra-nic.yaml"
expect 0 "checkpoints at /checkpoints" "DRA: an unresolved claim counts as an accelerator" -- "$tmp/dra-pod.yaml"

# --explain: the class of each part and the rule that decided it.
expect 0 "class replica Launcher: diagnostic \(diagnostic all_reduce_perf; coordinator: judged with its job\)" \
  "--explain: an nccl-tests MPIJob is diagnostic, its Launcher a coordinator" -- \
  --explain tests/fixtures/realistic/diagnostics/mpijob-nccl-tests-all-reduce.yaml
expect 0 "class auto \(no sign of training" "--explain: a GPU web server in a Pod is auto, not training" -- \
  --explain tests/fixtures/realistic/demos/gpu-http-server-pod.yaml
run --output json tests/fixtures/realistic/object-storage/job-envfrom-configmap-gcs.yaml
py "json: classes per object; an envFrom ConfigMap in the input says where checkpoints go" '
import json, sys
r = json.load(open(sys.argv[1]))
(job,) = [o for o in r["objects"] if o["kind"] == "Job"]
assert job["classes"] == [{"part": "", "class": "training", "coordinator": False, "why": job["classes"][0]["why"]}], job["classes"]
(ckpt,) = [f for f in job["findings"] if f["check"] == "checkpoint-volume"]
assert ckpt["outcome"] == "note" and ckpt["reason"].startswith("note: checkpoints go to gs://"), ckpt
'
run --output text "$fx/manifests"
if grep -q "^  class " "$tmp/out"; then fail "without --explain no class lines"; else pass "without --explain no class lines"; fi

# Hostile YAML: alias cycles and exponential alias trees are refused (exit 2), not expanded.
printf 'apiVersion: v1\nkind: List\nitems: &a [{apiVersion: v1, kind: List, items: *a}]\n' >"$tmp/cycle.yaml"
expect 2 "cycle.yaml" "a List that contains itself through an alias exits 2" -- "$tmp/cycle.yaml"
python3 -c '
lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
lines += ["a%d: &a%d [%s]" % (i, i, ", ".join(["*a%d" % (i - 1)] * 10)) for i in range(1, 12)]
print("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: laughs}\ndata:\n  " + "\n  ".join(lines))
' >"$tmp/laughs.yaml"
expect 2 "too many nodes" "a billion-laughs alias tree exits 2" -- "$tmp/laughs.yaml"
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {priority: 1e999}\n' >"$tmp/huge.yaml"
expect 0 "1 object" "an out-of-range number is read, not an unexpected error" -- "$tmp/huge.yaml"

# Colour: only on a terminal (a pseudo-terminal from script(1) here), never with NO_COLOR,
# and --color always|never overrides the terminal test.
esc=$'\033['
colour_on_tty() {  # colour_on_tty ENV...: 0 if check's output on a terminal has ANSI codes
  env "$@" script -qec "$(printf '%q ' "$bin" check "$fx/single/job.yaml")" /dev/null </dev/null >"$tmp/tty" 2>&1
  grep -qF "$esc" "$tmp/tty"
}
if colour_on_tty -u NO_COLOR; then pass "text on a terminal is coloured"; else fail "no colour on a terminal: $(cat -v "$tmp/tty")"; fi
if colour_on_tty NO_COLOR=1; then fail "NO_COLOR=1 still coloured: $(cat -v "$tmp/tty")"; else pass "NO_COLOR turns colour off on a terminal"; fi
run "$fx/single/job.yaml"
if grep -qF "$esc" "$tmp/out"; then fail "colour codes in a file or pipe"; else pass "no colour codes when stdout is not a terminal"; fi
run --color always manifests/examples/training-pod-gaps.yaml
if grep -qF "${esc}1;33mcheckpoint-volume${esc}0m" "$tmp/out"; then pass "--color always colours the check id of a finding"
else fail "--color always: $(cat -v "$tmp/out")"; fi
expect 2 "flag --color: expected auto, always or never" "--color with a bad value exits 2" -- --color sometimes "$fx/single/job.yaml"

echo "# $passes passed, $failures failed"
[[ $failures -eq 0 ]]
