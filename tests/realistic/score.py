#!/usr/bin/env python3
"""Precision and recall of one check on a labelled set of realistic fixtures.

    tests/realistic/score.py BINARY FIXTURE_DIR [--check ID] [--min-precision P] [--min-recall R]
                             [--totals-only]

Runs `BINARY check --output json FIXTURE_DIR`, takes every object whose file is labelled
in FIXTURE_DIR/labels.tsv (one workload object per file), and counts an object as
"warned" when it has a finding (outcome "finding") of the check, checkpoint-volume unless
--check names another (each labelled set is labelled for one check). Prints the
confusion counts per fixture group, the misses and false alarms by name, and exits 1
when precision or recall is below the given minimums (so a regression fails ctest).

A held-out set (one with a `.held-out` file at its top) is scored, never read: its
per-group counts and file names are not printed, whatever the flags say, so that a rule
author cannot see which of its files the rules get wrong by running this script on it.
"""
import argparse
import collections
import json
import os
import subprocess
import sys


RUNTIME_KINDS = ("TrainingRuntime", "ClusterTrainingRuntime")
HELD_OUT_MARKER = ".held-out"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("fixtures")
    ap.add_argument("--check", default="checkpoint-volume", help="the check the labels are for")
    ap.add_argument("--min-precision", type=float, default=0.0)
    ap.add_argument("--min-recall", type=float, default=0.0)
    ap.add_argument("--totals-only", action="store_true",
                    help="print only the totals (a held-out set: its misses are not read)")
    args = ap.parse_args()
    if os.path.exists(os.path.join(args.fixtures, HELD_OUT_MARKER)):
        args.totals_only = True

    labels = {}
    with open(os.path.join(args.fixtures, "labels.tsv")) as f:
        next(f)
        for line in f:
            if line.strip():
                file, expect, _why = line.rstrip("\n").split("\t", 2)
                labels[file] = expect
    files = set()
    for root, _dirs, names in os.walk(args.fixtures):
        for n in names:
            if n.endswith((".yaml", ".yml", ".json")):
                files.add(os.path.relpath(os.path.join(root, n), args.fixtures))
    unlabelled = sorted(files - set(labels))
    missing = sorted(set(labels) - files)
    if unlabelled or missing:
        if args.totals_only:
            print("labels.tsv out of date: %d unlabelled, %d missing" % (len(unlabelled), len(missing)))
        else:
            print("labels.tsv out of date: unlabelled %s, missing %s" % (unlabelled, missing))
        return 1

    run = subprocess.run([args.binary, "check", "--output", "json", args.fixtures],
                         capture_output=True, text=True)
    if run.returncode not in (0, 1):
        print("check exited %d:\n%s" % (run.returncode, run.stderr))
        return 1
    report = json.loads(run.stdout)
    # A file holds one workload, plus what it references (ConfigMaps, PVCs, and for a
    # TrainJob its runtime): when a TrainJob is in the file, its runtime is context, not
    # the labelled object.
    by_file = collections.defaultdict(list)
    for o in report["objects"]:
        by_file[os.path.relpath(o["file"], args.fixtures)].append(o)
    warned = set()
    for rel, objects in by_file.items():
        if any(o["kind"] == "TrainJob" for o in objects):
            objects = [o for o in objects if o["kind"] not in RUNTIME_KINDS]
        if any(f["check"] == args.check and f["outcome"] == "finding"
               for o in objects for f in o["findings"]):
            warned.add(rel)

    groups = collections.defaultdict(collections.Counter)
    misses, false_alarms = [], []
    for file, expect in sorted(labels.items()):
        got = file in warned
        group = file.split("/", 1)[0]
        key = ("tp" if got else "fn") if expect == "warn" else ("fp" if got else "tn")
        groups[group][key] += 1
        groups["TOTAL"][key] += 1
        if key == "fn":
            misses.append(file)
        if key == "fp":
            false_alarms.append(file)

    print("%-20s %4s %4s %4s %4s" % ("group", "tp", "fp", "fn", "tn"))
    for g in sorted(groups, key=lambda g: (g == "TOTAL", g)):
        if args.totals_only and g != "TOTAL":
            continue
        c = groups[g]
        print("%-20s %4d %4d %4d %4d" % (g, c["tp"], c["fp"], c["fn"], c["tn"]))
    t = groups["TOTAL"]
    precision = t["tp"] / (t["tp"] + t["fp"]) if t["tp"] + t["fp"] else 1.0
    recall = t["tp"] / (t["tp"] + t["fn"]) if t["tp"] + t["fn"] else 1.0
    if not args.totals_only:
        for f in misses:
            print("missed (labelled warn, no warning): " + f)
        for f in false_alarms:
            print("false alarm (labelled quiet, warned): " + f)
    print("%s on %d labelled objects: precision %.3f, recall %.3f "
          "(minimums %.2f / %.2f)" % (args.check, len(labels), precision, recall, args.min_precision,
                                      args.min_recall))
    if precision < args.min_precision or recall < args.min_recall:
        print("FAIL: below the minimum")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
