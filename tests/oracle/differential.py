#!/usr/bin/env python3
"""The differential oracle (issue 29): kubegap's re-implementation of Kubernetes semantics
against Kubernetes' own code, on the same generated cases.

    differential.py --cases-bin BIN (--oracle BIN | --oracle-path-file FILE)
                    [--per-relation N] [--seed S] [--relations R,...] [--time-limit SECONDS]

Generates N cases of each relation with generate_cases.py (seeded), sends each chunk of
them to both runners, kubegap's (tests/oracle/kubegap_cases.cpp: kubegap's decoders and
functions) and the Go oracle (tests/oracle/go: Kubernetes' own functions), and compares
their answers line by line. Prints, per relation, the cases, how many agree, how many
disagree, the errors and the oracle's answers by kind. Disagreements are split into
"valid" (objects the API server's validation accepts on create; every quantity text
counts as valid) and "edge" (objects it would reject: they still reach kubegap through
`check` on files, as pod templates inside custom resources, or as objects stored before a
validation was tightened); either kind fails the run. On a
disagreement it prints the first cases of each kind of answers with both answers, each
shrunk to a minimal case that disagrees the same way (dropping tolerations, taints,
terms, requirements, labels, fields and quantity characters one at a time, keeping a
valid case valid), and exits 1; --dump FILE writes every disagreement.

The protocol (one JSON line per case on the runner's stdin, one answer line per case on
its stdout, in order: {"result": ...} or {"error": "..."}):
  tolerates     {"toleration": {...}, "taint": {...}}             -> bool
  untolerated   {"tolerations": [...], "taints": [...]}           -> index of the first
                untolerated NoSchedule/NoExecute taint, or -1
  eviction      {"tolerations": [...], "taints": [...]}           -> -1 never evicted, 0 at
                once, N seconds
  nodeaffinity  {"nodeSelector"?, "affinity"?, "node": {"name", "labels"}} -> bool
  selector      {"selector": null | {...}, "labels": {...}}       -> bool
  quantity      {"text": "..."}                                   -> {"valid", "zero"}
Answers are compared as JSON values; an error on both sides counts as agreement (and is
counted), an error on one side only as a disagreement. Each chunk goes to a fresh
process of each runner, whole, with stdin closed after it: a runner may buffer its output.

Exit status: 0 every case agrees; 1 some disagree; 2 a runner failed (crashed, answered
the wrong number of lines) or the time limit passed; 77 the oracle is not built (with
--oracle-path-file: the file, or the binary it names, is missing).

ctest runs oracle_differential with 200,000 cases per relation, seed 29 (35 to 70 s on
the ASan tree of a 2-core machine, idle to busy; --time-limit fails it past 110 s).
Before a release, run the long version, 5,000,000 cases per relation (15 to 25 minutes
there, bound by the ASan runner; no --time-limit):
    tests/oracle/differential.py --cases-bin build/dev/tests/oracle/kubegap_oracle_cases \\
        --oracle "$(tests/oracle/build-oracle.sh | tail -n1)" --per-relation 5000000 --seed 29
and now and then with a seed of your own (--seed "$(date +%F)"): each seed is another
set of cases; the same seed gives the same cases everywhere.

Other modes:
  --build-oracle SCRIPT --oracle-path-file FILE   run SCRIPT (tests/oracle/build-oracle.sh),
      write the path it prints last to FILE; exit 77 (removing FILE) when it does
  --self-test   the driver's own checks: a planted disagreement is caught and shrunk
"""

import argparse
import collections
import copy
import json
import os
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate_cases  # noqa: E402  (beside this file)

EXIT_DISAGREE, EXIT_FAILED, EXIT_SKIP = 1, 2, 77
SHOW_PER_KIND = 2  # disagreements printed per relation and kind (answers, validation issues)
SHRINK_SECONDS = 60  # all shrinking together; past it, cases print as found


class RunnerFailed(Exception):
    pass


def run_runner(name, command, data, count, timeout):
    """The answer lines (bytes) of `command` for `count` cases in `data`."""
    try:
        proc = subprocess.run(command, input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise RunnerFailed(f"{name} ({command[0]}) did not answer {count} cases within {timeout:.0f} s")
    except OSError as e:
        raise RunnerFailed(f"{name} ({command[0]}) could not be started: {e}")
    lines = proc.stdout.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if proc.returncode != 0 or len(lines) != count:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-15:]
        raise RunnerFailed(f"{name} ({command[0]}) exited {proc.returncode} after {len(lines)} answer lines for "
                           f"{count} cases" + "".join(f"\n    {line}" for line in tail))
    return lines


class Job:
    """One runner on one chunk: stdin from the chunk's file, stdout to a file of its own,
    so that the runners need no pipe pumping from this (GIL-bound) process."""

    def __init__(self, name, command, input_path, count, tmpdir):
        self.name, self.command, self.count = name, command, count
        self.out = tempfile.TemporaryFile(dir=tmpdir)
        self.err = tempfile.TemporaryFile(dir=tmpdir)
        try:
            with open(input_path, "rb") as stdin:
                self.proc = subprocess.Popen(command, stdin=stdin, stdout=self.out, stderr=self.err)
        except OSError as e:
            raise RunnerFailed(f"{name} ({command[0]}) could not be started: {e}")

    def lines(self, timeout):
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise RunnerFailed(f"{self.name} ({self.command[0]}) did not answer {self.count} cases "
                               f"within {timeout:.0f} s")
        self.out.seek(0)
        lines = self.out.read().split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        if rc != 0 or len(lines) != self.count:
            self.err.seek(0)
            tail = self.err.read().decode("utf-8", "replace").strip().splitlines()[-15:]
            raise RunnerFailed(f"{self.name} ({self.command[0]}) exited {rc} after {len(lines)} answer lines for "
                               f"{self.count} cases" + "".join(f"\n    {line}" for line in tail))
        self.out.close()
        self.err.close()
        return lines

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def parse_answer(line):
    """(kind, value): ("result", value), ("error", None) or ("bad", raw text)."""
    try:
        answer = json.loads(line)
    except ValueError:
        return "bad", line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    if isinstance(answer, dict) and set(answer) == {"result"}:
        return "result", answer["result"]
    if isinstance(answer, dict) and "error" in answer and "result" not in answer:
        return "error", None
    return "bad", json.dumps(answer)


def same(a, b):
    """Whether two answer lines agree: equal JSON results, or both errors."""
    if a == b:
        return True
    ka, va = parse_answer(a)
    kb, vb = parse_answer(b)
    if ka == "bad" or kb == "bad":
        return False
    if ka == "error" or kb == "error":
        return ka == kb
    # JSON equality, but true is not 1 (Python's True == 1).
    return type(va) is type(vb) and va == vb


def is_error(line):
    return line.startswith(b'{"error"') or parse_answer(line)[0] == "error"


def kind_of(line):
    """A short class of an answer for grouping disagreements: true, 0, >0, error..."""
    k, v = parse_answer(line)
    if k != "result":
        return k
    if isinstance(v, bool) or v is None:
        return json.dumps(v)
    if isinstance(v, int):
        return str(v) if v <= 0 else ">0"
    return json.dumps(v, sort_keys=True)


def text(line):
    return line.decode("utf-8", "replace") if isinstance(line, bytes) else line


class Tally:
    show = 8  # examples kept per relation (--show)
    dump = None  # a file taking every disagreement (--dump)

    def __init__(self):
        self.cases = 0
        self.disagree_valid = 0
        self.disagree_edge = 0
        self.errors_kubegap = 0
        self.errors_oracle = 0
        self.answers = collections.Counter()
        self.shown = collections.Counter()
        self.examples = []  # (case line, kubegap answer, oracle answer, valid)


def compare(relation, lines, valid, ours, theirs, tally):
    tally.cases += len(lines)
    tally.answers.update(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a == b:
            if a.startswith(b'{"error"'):
                tally.errors_kubegap += 1
                tally.errors_oracle += 1
            continue
        tally.errors_kubegap += is_error(a)
        tally.errors_oracle += is_error(b)
        if same(a, b):
            continue
        if valid[i]:
            tally.disagree_valid += 1
        else:
            tally.disagree_edge += 1
        if Tally.dump:
            Tally.dump.write(json.dumps({"relation": relation, "valid": valid[i], "kubegap": text(a),
                                         "kubernetes": text(b), "case": lines[i]}) + "\n")
        if len(tally.examples) >= Tally.show:
            continue
        # One kind: the answers' kinds and what validation would reject in the case.
        issues = frozenset() if valid[i] else frozenset(generate_cases.case_issues(json.loads(lines[i])))
        kind = (valid[i], kind_of(a), kind_of(b), issues)
        if tally.shown[kind] < SHOW_PER_KIND:
            tally.shown[kind] += 1
            tally.examples.append((lines[i], a, b, valid[i]))


# --- shrinking


def candidates(case):
    """Copies of `case` with one list element or one object member removed (not
    "relation"), the outermost first."""
    out = []

    def walk(node, path):
        if isinstance(node, dict):
            for key in node:
                if path or key != "relation":
                    out.append((path, key))
            for key, value in node.items():
                walk(value, path + (key,))
        elif isinstance(node, list):
            for i in range(len(node)):
                out.append((path, i))
            for i, value in enumerate(node):
                walk(value, path + (i,))

    walk(case, ())
    out.sort(key=lambda c: len(c[0]))
    for path, victim in out:
        smaller = copy.deepcopy(case)
        parent = smaller
        for step in path:
            parent = parent[step]
        del parent[victim]
        yield smaller
    # A quantity's text, one character shorter.
    if case.get("relation") == "quantity" and isinstance(case.get("text"), str):
        for i in range(len(case["text"])):
            yield dict(case, text=case["text"][:i] + case["text"][i + 1:])


def shrink(line, ours_cmd, theirs_cmd, deadline):
    """The smallest case found, by removals, that still disagrees the same way: each side's
    answer of the same kind (true, -1, 0, >0, error...), and nothing the API server would
    reject that the case did not already have (a valid case stays valid)."""
    case = json.loads(line)
    issues = generate_cases.case_issues(case)
    first_a = run_runner("kubegap", ours_cmd, (line + "\n").encode(), 1, 60)[0]
    first_b = run_runner("kubernetes", theirs_cmd, (line + "\n").encode(), 1, 60)[0]
    kinds = (kind_of(first_a), kind_of(first_b))
    answers = (first_a, first_b)
    while time.monotonic() < deadline:
        cands = [c for c in candidates(case) if generate_cases.case_issues(c) <= issues]
        if not cands:
            break
        data = "".join(json.dumps(c, separators=(",", ":")) + "\n" for c in cands).encode()
        ours = run_runner("kubegap", ours_cmd, data, len(cands), 60)
        theirs = run_runner("kubernetes", theirs_cmd, data, len(cands), 60)
        for cand, a, b in zip(cands, ours, theirs):
            if not same(a, b) and (kind_of(a), kind_of(b)) == kinds:
                case, answers = cand, (a, b)
                break
        else:
            break
    return json.dumps(case, separators=(",", ":")), answers


# --- the run


def run(args, ours_cmd, theirs_cmd):
    start = args.started
    deadline = start + args.time_limit if args.time_limit > 0 else None
    relations = args.relations
    tallies = {r: Tally() for r in relations}
    generation = 0.0
    print(f"differential oracle: seed {args.seed}, {args.per_relation} cases per relation "
          f"({', '.join(relations)})\n  kubegap:    {' '.join(ours_cmd)}\n  kubernetes: {' '.join(theirs_cmd)}",
          flush=True)

    def remaining():
        return max(1.0, deadline - time.monotonic()) if deadline else 3600.0

    with tempfile.TemporaryDirectory(prefix="kubegap-oracle-") as tmpdir:

        def launch(index, cases):
            lines = [line for r in relations for line in cases[r][0]]
            path = os.path.join(tmpdir, f"chunk-{index}.jsonl")
            with open(path, "wb") as f:
                f.write(("\n".join(lines) + "\n").encode())
            jobs = [Job("kubegap", ours_cmd, path, len(lines), tmpdir)]
            try:
                jobs.append(Job("kubernetes", theirs_cmd, path, len(lines), tmpdir))
            finally:
                os.remove(path)  # the runners hold it open
            return jobs

        def finish(cases, jobs):
            try:
                ours, theirs = jobs[0].lines(remaining()), jobs[1].lines(remaining())
            finally:
                for job in jobs:
                    job.kill()
            at = 0
            for r in relations:
                lines, valid = cases[r]
                n = len(lines)
                compare(r, lines, valid, ours[at:at + n], theirs[at:at + n], tallies[r])
                at += n

        chunks = generate_cases.chunks(args.seed, args.per_relation, relations)
        last_progress = start
        pending = None  # (cases, jobs) of the chunk the runners have
        try:
            while True:
                t0 = time.monotonic()
                nxt = next(chunks, None)  # generated while the runners work on `pending`
                generation += time.monotonic() - t0
                if pending:
                    finish(*pending)
                    pending = None
                if deadline and time.monotonic() > deadline:
                    done = tallies[relations[0]].cases
                    raise RunnerFailed(f"the time limit of {args.time_limit:.0f} s passed after {done} of "
                                       f"{args.per_relation} cases per relation")
                if nxt is None:
                    break
                if time.monotonic() - last_progress > 30:
                    last_progress = time.monotonic()
                    print(f"  ... {tallies[relations[0]].cases} cases per relation in "
                          f"{last_progress - start:.0f} s", flush=True)
                pending = (nxt[1], launch(*nxt))
        finally:
            if pending:
                for job in pending[1]:
                    job.kill()
    elapsed = time.monotonic() - start
    return tallies, elapsed, generation


def answers_summary(counter, total):
    """The oracle's answers by kind (true, -1, 0, >0, error...), the commonest first."""
    kinds = collections.Counter()
    for answer, n in counter.items():
        kinds[kind_of(answer)] += n
    return ", ".join(f"{kind} {100.0 * n / total:.1f}%" for kind, n in kinds.most_common())


def report(args, tallies, elapsed, generation, ours_cmd, theirs_cmd):
    print(f"\n{'relation':<13} {'cases':>9} {'agree':>9} {'disagree':>9} {'(valid':>7} {'edge)':>6} "
          f"{'errors k/K':>11}  kubernetes answers")
    total = agree = 0
    for r, t in tallies.items():
        d = t.disagree_valid + t.disagree_edge
        total += t.cases
        agree += t.cases - d
        print(f"{r:<13} {t.cases:>9} {t.cases - d:>9} {d:>9} {t.disagree_valid:>7} {t.disagree_edge:>6} "
              f"{t.errors_kubegap:>5}/{t.errors_oracle:<5}  {answers_summary(t.answers, max(t.cases, 1))}")
    rate = total / elapsed if elapsed else 0
    print(f"\n{agree} of {total} cases agree ({100.0 * agree / max(total, 1):.4f}%) in {elapsed:.1f} s "
          f"({rate:,.0f} cases/s; generating {generation:.1f} s)")
    if agree == total:
        return 0
    print("\nDISAGREEMENTS (valid: the API server accepts the objects; edge: its validation would reject them)")
    # Shrinking stops at SHRINK_SECONDS, and inside the time limit: past either, the
    # remaining cases print as found.
    shrink_deadline = time.monotonic() + (0 if args.no_shrink else SHRINK_SECONDS)
    if args.time_limit > 0:
        shrink_deadline = min(shrink_deadline, args.started + args.time_limit - 5)
    for r, t in tallies.items():
        if not t.examples:
            continue
        print(f"\n{r}: {t.disagree_valid + t.disagree_edge} of {t.cases} disagree "
              f"({t.disagree_valid} valid, {t.disagree_edge} edge)")
        seen = set()
        for line, a, b, valid in t.examples:
            minimal, (ma, mb) = line, (a, b)
            if time.monotonic() < shrink_deadline:
                try:
                    minimal, (ma, mb) = shrink(line, ours_cmd, theirs_cmd, shrink_deadline)
                except RunnerFailed as e:
                    print(f"  (could not shrink: {e})")
            if minimal in seen:
                continue
            seen.add(minimal)
            # Labelled by the minimal case: an edge case may shrink to a valid one.
            issues = "; ".join(sorted(generate_cases.case_issues(json.loads(minimal))))
            print(f"  [{'edge: ' + issues if issues else 'valid'}] kubegap {text(ma)}  kubernetes {text(mb)}")
            print(f"    minimal: {minimal}")
            if minimal != line:
                print(f"    found:   {text(line)}  (kubegap {text(a)}, kubernetes {text(b)})")
    return EXIT_DISAGREE


def resolve_oracle(args):
    if args.oracle:
        return args.oracle
    reason = ("the Go oracle is not built: the oracle_build test builds it with tests/oracle/build-oracle.sh, "
              "which needs go")
    try:
        with open(args.oracle_path_file, encoding="utf-8") as f:
            path = f.read().strip()
    except OSError:
        print(f"skipped: {reason} ({args.oracle_path_file} is missing)")
        sys.exit(EXIT_SKIP)
    if not (path and os.access(path, os.X_OK)):
        print(f"skipped: {reason} ({path or 'an empty path'} is not an executable)")
        sys.exit(EXIT_SKIP)
    return path


def build_oracle(args):
    """--build-oracle: run the build script, keep the path it prints last."""
    if not args.oracle_path_file:
        print("differential.py: --build-oracle needs --oracle-path-file", file=sys.stderr)
        return EXIT_FAILED
    try:
        os.remove(args.oracle_path_file)
    except FileNotFoundError:
        pass
    proc = subprocess.run(["bash", args.build_oracle], stdout=subprocess.PIPE, check=False)
    out = proc.stdout.decode("utf-8", "replace")
    sys.stdout.write(out)
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    if proc.returncode == EXIT_SKIP:
        if not any(line.lower().startswith("skipped:") for line in lines):
            print(f"skipped: the Go oracle was not built ({args.build_oracle} exited 77: no go on PATH)")
        return EXIT_SKIP
    if proc.returncode != 0:
        print(f"{args.build_oracle} failed (exit {proc.returncode})")
        return proc.returncode or EXIT_FAILED
    path = lines[-1] if lines else ""
    if not os.access(path, os.X_OK):
        print(f"{args.build_oracle} printed {path!r} last, which is not an executable")
        return EXIT_FAILED
    os.makedirs(os.path.dirname(os.path.abspath(args.oracle_path_file)), exist_ok=True)
    with open(args.oracle_path_file, "w", encoding="utf-8") as f:
        f.write(path + "\n")
    print(f"oracle: {path}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--cases-bin", metavar="BIN", help="kubegap's runner (kubegap_oracle_cases)")
    parser.add_argument("--oracle", metavar="BIN", help="the Go oracle's binary")
    parser.add_argument("--oracle-path-file", metavar="FILE",
                        help="a file holding the oracle's path (written by --build-oracle); "
                             "exit 77 when it or the binary is missing")
    parser.add_argument("--per-relation", type=int, default=200000, metavar="N", help="default 200000")
    parser.add_argument("--seed", default="29", help="default 29")
    parser.add_argument("--relations", type=generate_cases.parse_relations, default=generate_cases.RELATIONS,
                        help="comma-separated subset (default: all)")
    parser.add_argument("--time-limit", type=float, default=0, metavar="SECONDS",
                        help="fail (exit 2) when the comparison is not done by then; 0: no limit")
    parser.add_argument("--no-shrink", action="store_true", help="print disagreements as found")
    parser.add_argument("--show", type=int, default=8, metavar="N",
                        help="disagreements printed per relation, at most 2 of a kind (default 8)")
    parser.add_argument("--dump", metavar="FILE",
                        help="write every disagreement to FILE as a JSON line (case, both answers, valid)")
    parser.add_argument("--build-oracle", metavar="SCRIPT", help=argparse.SUPPRESS)
    parser.add_argument("--self-test", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.self_test:
        return self_test()
    if args.build_oracle:
        return build_oracle(args)
    if not args.cases_bin or not (args.oracle or args.oracle_path_file):
        parser.error("--cases-bin and --oracle (or --oracle-path-file) are required")
    args.started = time.monotonic()
    ours_cmd = [os.path.abspath(args.cases_bin)]
    theirs_cmd = [os.path.abspath(resolve_oracle(args))]
    Tally.show = args.show
    try:
        if args.dump:
            Tally.dump = open(args.dump, "w", encoding="utf-8")
        tallies, elapsed, generation = run(args, ours_cmd, theirs_cmd)
    except RunnerFailed as e:
        print(f"FAILED: {e}")
        return EXIT_FAILED
    finally:
        if Tally.dump:
            Tally.dump.close()
    return report(args, tallies, elapsed, generation, ours_cmd, theirs_cmd)


# --- self-test: the comparison, the generator, and a planted disagreement end to end

FAKE_RUNNER = r'''#!/usr/bin/env python3
# A stand-in runner for differential.py --self-test: answers every case with 0, or with 1
# when PLANT is set and a toleration has tolerationSeconds 9223372036; MODE=short drops
# the last answer, MODE=crash exits 3.
import json, os, sys
lines = sys.stdin.read().splitlines()
if os.environ.get("MODE") == "crash":
    sys.exit(3)
out = []
for line in lines:
    case = json.loads(line)
    tols = case.get("tolerations") or ([case["toleration"]] if "toleration" in case else [])
    planted = os.environ.get("PLANT") and any(t.get("tolerationSeconds") == 9223372036 for t in tols)
    out.append('{"result":%d}' % (1 if planted else 0))
if os.environ.get("MODE") == "short":
    out.pop()
sys.stdout.write("".join(o + "\n" for o in out))
'''


def self_test():
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    # The comparison.
    check(same(b'{"result":true}', b'{"result": true}'), "whitespace matters")
    check(same(b'{"result":{"valid":true,"zero":false}}', b'{"result":{"zero":false,"valid":true}}'),
          "member order matters")
    check(not same(b'{"result":true}', b'{"result":false}'), "true equals false")
    check(not same(b'{"result":1}', b'{"result":true}'), "1 equals true")
    check(not same(b'{"result":-1}', b'{"result":0}'), "-1 equals 0")
    check(same(b'{"error":"a"}', b'{"error":"b"}'), "two errors disagree")
    check(not same(b'{"error":"a"}', b'{"result":false}'), "an error agrees with a result")
    check(not same(b'garbage', b'garbage2'), "garbage agrees")
    tally = Tally()
    compare("eviction", ['{"c":1}', '{"c":2}', '{"c":3}'], [True, False, True],
            [b'{"result":0}', b'{"result":5}', b'{"error":"x"}'],
            [b'{"result":0}', b'{"result":-1}', b'{"error":"y"}'], tally)
    check((tally.cases, tally.disagree_valid, tally.disagree_edge, tally.errors_kubegap, tally.errors_oracle)
          == (3, 0, 1, 1, 1), f"tally {vars(tally)}")
    check([e[0] for e in tally.examples] == ['{"c":2}'], "the planted disagreement is not kept")

    # The generator: deterministic, chunked, valid flags as case_valid says.
    one = [line for _, c in generate_cases.chunks("s", 300) for r in generate_cases.RELATIONS for line in c[r][0]]
    two = [line for _, c in generate_cases.chunks("s", 300) for r in generate_cases.RELATIONS for line in c[r][0]]
    check(one == two, "the same seed gives different cases")
    check(one != [line for _, c in generate_cases.chunks("t", 300) for r in generate_cases.RELATIONS
                  for line in c[r][0]], "two seeds give the same cases")
    for r, (lines, valid) in generate_cases.chunk("s", 0, 2000).items():
        cases = [json.loads(line) for line in lines]
        check(all(c["relation"] == r for c in cases), f"{r}: a case of another relation")
        check([generate_cases.case_valid(c) for c in cases] == valid, f"{r}: valid flags differ from case_valid")
        if r != "quantity":
            check(0.6 < sum(valid) / len(valid) < 1, f"{r}: {sum(valid)} of {len(valid)} valid")

    # End to end, with stand-in runners: the same runner twice agrees; a planted
    # disagreement fails the run and shrinks to its one toleration; a short answer and a
    # crash are runner failures.
    with tempfile.TemporaryDirectory() as tmp:
        fake = os.path.join(tmp, "fake_runner.py")
        with open(fake, "w", encoding="utf-8") as f:
            f.write(FAKE_RUNNER)
        os.chmod(fake, 0o755)

        def wrapper(name, env):
            path = os.path.join(tmp, name)
            with open(path, "w", encoding="utf-8") as f:
                f.write("#!/bin/sh\n" + "".join(f"export {k}={v}\n" for k, v in env.items()) +
                        f'exec "{sys.executable}" "{fake}"\n')
            os.chmod(path, 0o755)
            return path

        plain = wrapper("plain", {})
        planted = wrapper("planted", {"PLANT": "1"})
        short = wrapper("short", {"MODE": "short"})
        crash = wrapper("crash", {"MODE": "crash"})
        base = [sys.executable, os.path.abspath(__file__), "--per-relation", "1500", "--seed", "self"]

        def drive(oracle, *extra):
            proc = subprocess.run(base + ["--cases-bin", plain, "--oracle", oracle, *extra],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
            return proc.returncode, proc.stdout.decode()

        rc, out = drive(plain)
        check(rc == 0 and "agree (100.0000%)" in out, f"identical runners: exit {rc}\n{out}")
        rc, out = drive(planted)
        expected = sum(1 for _, c in generate_cases.chunks("self", 1500) for r in ("tolerates", "untolerated",
                       "eviction") for line in c[r][0] if '"tolerationSeconds":9223372036,' in line
                       or '"tolerationSeconds":9223372036}' in line)
        found = sum(int(row.split()[3]) for row in out.splitlines()
                    if row.split()[:1] and row.split()[0] in ("tolerates", "untolerated", "eviction")
                    and len(row.split()) > 3 and row.split()[1].isdigit())
        check(rc == EXIT_DISAGREE, f"planted disagreement: exit {rc}\n{out}")
        check(expected > 0 and found == expected, f"planted: {found} disagreements counted, {expected} planted")
        minimal = [line.split("minimal: ", 1)[1] for line in out.splitlines() if "minimal: " in line]
        check(minimal and all(json.loads(m).get("taints") is None for m in minimal),
              f"not shrunk to no taints: {minimal}")
        for m in minimal:
            case = json.loads(m)
            tols = case.get("tolerations") or [case.get("toleration")]
            check(len(tols) == 1 and tols[0].get("tolerationSeconds") == 9223372036
                  and generate_cases.case_valid(case) == ("[valid]" in out.split(m)[0].splitlines()[-2]),
                  f"not minimal: {m}")
        rc, out = drive(short)
        check(rc == EXIT_FAILED and "answer lines" in out, f"short answers: exit {rc}\n{out}")
        rc, out = drive(crash, "--relations", "quantity")
        check(rc == EXIT_FAILED and "exited 3" in out, f"crash: exit {rc}\n{out}")
        rc, out = drive(plain, "--oracle-path-file", os.path.join(tmp, "missing"))
        check(rc == 0, f"--oracle wins over --oracle-path-file: exit {rc}")
        proc = subprocess.run(base + ["--cases-bin", plain, "--oracle-path-file", os.path.join(tmp, "missing")],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
        check(proc.returncode == EXIT_SKIP and proc.stdout.decode().startswith("skipped: "),
              f"no oracle: exit {proc.returncode}")
        # --build-oracle: the path printed last is kept; a skip (77) removes a stale one.
        path_file = os.path.join(tmp, "oracle-path.txt")
        for script, body in (("builds", f'echo building >&2\necho "{plain}"\n'),
                             ("skips", "echo 'skipped: no go'\nexit 77\n")):
            with open(os.path.join(tmp, script), "w", encoding="utf-8") as f:
                f.write(body)
        build = [sys.executable, os.path.abspath(__file__), "--oracle-path-file", path_file, "--build-oracle"]
        proc = subprocess.run(build + [os.path.join(tmp, "builds")], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, check=False)
        with open(path_file, encoding="utf-8") as f:
            check(proc.returncode == 0 and f.read().strip() == plain, f"--build-oracle: exit {proc.returncode}")
        proc = subprocess.run(build + [os.path.join(tmp, "skips")], stdout=subprocess.PIPE, check=False)
        check(proc.returncode == EXIT_SKIP and not os.path.exists(path_file) and
              proc.stdout.decode().count("skipped:") == 1, f"--build-oracle skip: exit {proc.returncode}")
    for f in failures:
        print(f"FAIL: {f}")
    print("self-test: " + ("ok" if not failures else f"{len(failures)} failed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
