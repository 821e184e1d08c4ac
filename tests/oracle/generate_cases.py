#!/usr/bin/env python3
"""Seeded cases for the differential oracle (issue 29), as JSON lines.

    generate_cases.py --seed S --per-relation N [--relations tolerates,quantity,...]

Writes N cases of each relation (tolerates, untolerated, eviction, nodeaffinity, selector,
quantity: the protocol is in kubegap_cases.cpp and differential.py --help) to stdout,
in chunks of CHUNK (10,000) cases per relation. The same seed gives the same lines:
chunk c draws from its own random.Random("S/c"), so a longer run repeats a shorter one's
whole chunks and goes on with new ones.

Inputs are well formed JSON of the Kubernetes shapes but biased to the edges: empty keys,
values and effects; Exists against Equal (and the default, absent); tolerationSeconds 0,
negative, absent, huge (around the largest int64 and the largest time.Duration in
seconds); several tolerations or taints with the same key; Gt/Lt with integers at the
int64 limits; label keys and values at their length limits (63, 253) and one over; empty
and null selectors and node selector terms; quantities such as 0.0Gi, 1e3, 500m, +1,
1Ki, -0, .5, 1., "", " 1", 1E3, 1e-3, 0x1, 1Mi, 1MB. Some inputs are ones the API
server's validation would reject (NotIn with no values, an invalid label value): each
side answers what its function does with them, as the contract says. About 85% of the
cases are built only of parts the API server accepts on create; chunk() says of each
case whether it is one (differential.py reports "valid" and "edge" disagreements apart),
and case_valid() says it of any parsed case.

Python's standard library only; a chunk is built from pools of pre-serialised parts, so
that a few hundred thousand cases take seconds.
"""

import argparse
import json
import random
import re
import sys

RELATIONS = ("tolerates", "untolerated", "eviction", "nodeaffinity", "selector", "quantity")
# Cases per relation in one chunk: part of the stream's definition (chunk c is seeded
# "S/c"), so changing it changes every seed's cases.
CHUNK = 10000
POOL = 1500  # parts of each kind drawn per chunk
# The share of cases built only of parts the API server accepts; the rest may hold any.
STRICT = 0.85


def dumps(value):
    return json.dumps(value, separators=(",", ":"))


def weighted(pairs):
    """(choices, cumulative weights) for rng.choices from [(weight, choice), ...]."""
    total, cum, items = 0, [], []
    for weight, item in pairs:
        total += weight
        cum.append(total)
        items.append(item)
    return items, cum


ABSENT = object()

# Taint and toleration keys: few, so that tolerations and taints meet often.
TAINT_KEYS = weighted([
    (5, "nvidia.com/gpu"), (5, "node.kubernetes.io/not-ready"), (4, "node.kubernetes.io/unreachable"),
    (4, "example.com/gpu-fault"), (3, "a"), (2, "A"), (1, "k" * 63), (1, "example.com/" + "k" * 63),
    (1, "k" * 64), (2, ""),
])
VALUES = weighted([
    (6, ""), (4, "true"), (3, "v"), (2, "V"), (2, "0"), (2, "1"), (2, "10"), (1, "-1"), (1, "007"),
    (1, "9223372036854775807"), (1, "9223372036854775808"), (1, "x" * 63), (1, "x" * 64), (1, " v"),
])
TOLERATION_OPS = weighted([
    (20, ABSENT), (4, ""), (25, "Equal"), (35, "Exists"), (3, "Gt"), (3, "Lt"), (2, "exists"), (1, "equal"),
    (1, "In"), (1, "bogus"),
])
TOLERATION_EFFECTS = weighted([
    (20, ABSENT), (8, ""), (25, "NoSchedule"), (30, "NoExecute"), (8, "PreferNoSchedule"), (2, "noexecute"),
    (1, "Other"),
])
TAINT_EFFECTS = weighted([
    (35, "NoSchedule"), (40, "NoExecute"), (15, "PreferNoSchedule"), (4, ""), (2, "noschedule"), (1, "Other"),
])
NOEXECUTE_TOLERATION_EFFECTS = weighted([(55, "NoExecute"), (15, ABSENT), (10, ""), (15, "NoSchedule"),
                                         (4, "PreferNoSchedule"), (1, "noexecute")])
NOEXECUTE_TAINT_EFFECTS = weighted([(85, "NoExecute"), (8, "NoSchedule"), (5, "PreferNoSchedule"), (2, "")])
# tolerationSeconds: absent, 0, negative, small, the 300 s default, huge: time.Duration
# holds at most 9223372036 s, int64 at most 9223372036854775807.
SECONDS = weighted([
    (45, ABSENT), (8, 0), (4, -1), (1, -300), (1, -9223372036854775808), (3, 1), (2, 2), (6, 300), (3, 60),
    (2, 3600), (1, 86400), (1, 9223372036), (1, 9223372037), (1, 18446744073), (1, 9223372036854775807),
    (1, 9223372036854775806), (4, "random"),
])

# Label keys and values for node affinity and selectors: few, and at the edges.
LABEL_KEYS = weighted([
    (6, "zone"), (5, "topology.kubernetes.io/zone"), (4, "gpu"), (3, "pool"), (2, "kubernetes.io/hostname"),
    (2, "Zone"), (1, ""), (1, "k" * 63), (1, "k" * 64), (1, "example.com/" + "k" * 63), (1, "a" * 253 + "/k"),
    (1, "a" * 254 + "/k"), (1, "bad key"), (1, "-k"), (1, "example.com/"), (1, "/k"),
])
LABEL_VALUES = weighted([
    (6, "a"), (5, "b"), (4, "us-east-1a"), (3, ""), (3, "1"), (3, "10"), (2, "-3"), (2, "0"), (1, "+5"),
    (1, "007"), (1, "9223372036854775807"), (1, "9223372036854775808"), (1, "-9223372036854775808"),
    (1, "v" * 63), (1, "v" * 64), (1, "1.5"), (1, " 1"), (1, "a b"), (1, "-a"), (1, "a_b.c-d"),
])
NODE_SELECTOR_OPS = weighted([
    (16, "In"), (12, "NotIn"), (10, "Exists"), (8, "DoesNotExist"), (8, "Gt"), (8, "Lt"), (1, "in"),
    (1, "Equals"), (1, ""),
])
LABEL_SELECTOR_OPS = weighted([
    (16, "In"), (12, "NotIn"), (10, "Exists"), (8, "DoesNotExist"), (3, "Gt"), (3, "Lt"), (1, "in"),
    (1, "Equals"), (1, ""),
])
# How many values a requirement lists; ABSENT leaves the member out.
VALUE_COUNTS = weighted([(4, ABSENT), (6, 0), (30, 1), (12, 2), (3, 3)])
FIELD_KEYS = weighted([(20, "metadata.name"), (1, "metadata.namespace"), (1, ""), (1, "spec.unschedulable")])
FIELD_OPS = weighted([(12, "In"), (10, "NotIn"), (1, "Exists"), (1, "DoesNotExist"), (1, "Gt")])
NODE_NAMES = weighted([(10, "node-1"), (6, "node-2"), (2, "n"), (1, ""), (1, "Node-1"), (1, "n" * 253)])
EVICTION_TAINT_COUNTS = weighted([(5, 0), (40, 1), (30, 2), (15, 3), (7, 4), (3, 6)])
COUNTS = weighted([(20, 0), (30, 1), (25, 2), (12, 3), (7, 4), (4, 5), (2, 8)])

QUANTITY_EDGES = [
    "0", "0.0Gi", "1e3", "500m", "+1", "1Ki", "-0", ".5", "1.", "", " 1", "1 ", "1E3", "1e-3", "0x1", "1Mi",
    "1MB", "1K", "1k", "1n", "1u", "1m", "0m", "-0.0", "+0", "+", "-", ".", "+.", "-.", "00", "0e5", "0E0",
    "0.000000001", "0.0000000001", "1e-9", "1e-10", "0e-10", "1e", "1E", "1e+3", "1e+", "1e-", "1Ei", "8Ei",
    "9Ei", "1Eix", "1i", "Ki", "e3", "1.5.5", "1..5", "1,5", "1_000", "١", "Infinity", "NaN", "inf", "-inf",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "99999999999999999999999",
    "1e18", "1e19", "1e308", "1e309", "1e400", "1e2147483647", "1e4294967296", "1e99999999999",
    "0.1", "0.5Gi", ".0", "0.", "0.0", "-.5", "+.5", "5m ", "\t1", "1\n", "1Gi0", "1G", "1T", "1P", "1E",
    "1Ti", "1Pi", "1mi", "1Mb", "1KiB", "1e3Ki", "1.0e3", "1.e3", ".e3", "0x10", "0b1", "01", "-1", "-1m",
    "100Mi", "4", "8", "nvidia.com/gpu", "$GPUS", "${GPUS}", "{{ .Values.gpus }}",
]
Q_SIGNS = weighted([(80, ""), (8, "+"), (10, "-"), (2, " ")])
Q_SUFFIXES = weighted([
    (20, ""), (8, "m"), (4, "k"), (2, "M"), (2, "G"), (1, "T"), (1, "P"), (1, "E"), (6, "Ki"), (6, "Mi"),
    (6, "Gi"), (1, "Ti"), (1, "Pi"), (1, "Ei"), (2, "n"), (2, "u"), (3, "e3"), (2, "E3"), (2, "e-3"),
    (1, "e+3"), (1, "e0"), (1, "e-9"), (1, "e-10"), (1, "e18"), (1, "e"), (1, "K"), (1, "KB"), (1, "MB"),
    (1, "mi"), (1, "i"), (1, " "), (1, "Gi "), (1, "x"), (1, "e3m"),
])


# --- what the API server's validation accepts (k8s.io/apimachinery validation, the
# core/v1 and policy/v1 ValidateX functions): cases built only of accepted parts are
# "valid", the others "edge" (differential.py reports the two apart).
_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def is_subdomain(text):
    return 0 < len(text) <= 253 and _SUBDOMAIN.fullmatch(text) is not None


def is_qualified_name(key):
    prefix, slash, name = key.rpartition("/")
    if slash and (not is_subdomain(prefix) or "/" in prefix):
        return False
    return 0 < len(name) <= 63 and _NAME.fullmatch(name) is not None


def is_label_value(value):
    return value == "" or (len(value) <= 63 and _NAME.fullmatch(value) is not None)


def are_labels(labels):
    return all(is_qualified_name(k) and is_label_value(v) for k, v in labels.items())


TAINT_EFFECT_NAMES = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def toleration_issues(t):
    """core/v1 ValidateTolerations (without the TaintTolerationComparisonOperators gate)."""
    key, op, value, effect = t.get("key", ""), t.get("operator", ""), t.get("value", ""), t.get("effect", "")
    out = []
    if key and not is_qualified_name(key):
        out.append("toleration: invalid key")
    if not key and op != "Exists":
        out.append("toleration: no key without Exists")
    if "tolerationSeconds" in t and effect != "NoExecute":
        out.append("toleration: tolerationSeconds without NoExecute")
    if op in ("", "Equal"):
        if not is_label_value(value):
            out.append("toleration: invalid value")
    elif op == "Exists":
        if value:
            out.append("toleration: Exists with a value")
    else:
        out.append(f"toleration: operator {op}")
    if effect and effect not in TAINT_EFFECT_NAMES:
        out.append("toleration: invalid effect")
    return out


def taint_issues(t):
    """core/v1 validateNodeTaints, one taint."""
    out = []
    if not is_qualified_name(t.get("key", "")):
        out.append("taint: invalid key")
    if not is_label_value(t.get("value", "")):
        out.append("taint: invalid value")
    if t.get("effect") not in TAINT_EFFECT_NAMES:
        out.append("taint: invalid effect")
    return out


def requirement_count_issues(where, op, values, operators):
    n = len(values)
    counts = {"In": n > 0, "NotIn": n > 0, "Exists": n == 0, "DoesNotExist": n == 0, "Gt": n == 1, "Lt": n == 1}
    if op not in operators:
        return [f"{where}: operator {op!r}"]
    if not counts[op]:
        return [f"{where}: {op} with {n} values"]
    return []


def node_requirement_issues(r):
    """ValidateNodeSelectorRequirement (new pods: no allowInvalidLabelValueInRequiredNodeAffinity):
    the count of values by operator, the key, each value a label value."""
    values = r.get("values", [])
    out = requirement_count_issues("matchExpressions", r.get("operator", ""), values,
                                   ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"))
    if not is_qualified_name(r.get("key", "")):
        out.append("matchExpressions: invalid key")
    if not all(is_label_value(v) for v in values):
        out.append("matchExpressions: invalid label value")
    return out


def field_requirement_issues(r):
    """ValidateNodeFieldSelectorRequirement: metadata.name, In or NotIn, one value, a node name."""
    values = r.get("values", [])
    out = []
    if r.get("key") != "metadata.name":
        out.append("matchFields: key not metadata.name")
    if r.get("operator") not in ("In", "NotIn"):
        out.append(f"matchFields: operator {r.get('operator')!r}")
    elif len(values) != 1:
        out.append(f"matchFields: {len(values)} values")
    if not all(is_subdomain(v) for v in values):
        out.append("matchFields: value not a node name")
    return out


def selector_requirement_issues(r):
    """metav1 ValidateLabelSelectorRequirement, values checked as label values."""
    values = r.get("values", [])
    out = requirement_count_issues("selector", r.get("operator", ""), values, ("In", "NotIn", "Exists", "DoesNotExist"))
    if not is_qualified_name(r.get("key", "")):
        out.append("selector: invalid key")
    if not all(is_label_value(v) for v in values):
        out.append("selector: invalid label value")
    return out


def toleration_valid(t):
    return not toleration_issues(t)


def taint_valid(t):
    return isinstance(t, dict) and not taint_issues(t)


def node_requirement_valid(r):
    return not node_requirement_issues(r)


def field_requirement_valid(r):
    return not field_requirement_issues(r)


def selector_requirement_valid(r):
    return not selector_requirement_issues(r)


class Pool:
    """Serialised parts, and which of them the API server accepts."""

    def __init__(self, items):
        self.all = [text for text, _ in items]
        self.valid = [text for text, ok in items if ok] or self.all
        self.invalid = {text for text, ok in items if not ok}
        self._keys = None
        self._ids = None

    def of(self, strict):
        return self.valid if strict else self.all

    def ident(self, text):
        """A taint's (key, effect): a node holds at most one taint of each."""
        if self._ids is None:
            self._ids = {}
            for t in self.all:
                taint = json.loads(t)
                self._ids[t] = (taint.get("key", ""), taint.get("effect", ""))
        return self._ids[text]

    def keyed(self, strict):
        """{"key" member: [parts]}: tolerations by the taint key they name, and taints."""
        if self._keys is None:
            self._keys = {True: {}, False: {}}
            for text in self.all:
                key = json.loads(text).get("key", "")
                self._keys[False].setdefault(key, []).append(text)
                if text not in self.invalid:
                    self._keys[True].setdefault(key, []).append(text)
        return self._keys[strict]


class Parts:
    """One chunk's pools of serialised parts, drawn from its own generator."""

    def __init__(self, rng):
        self.rng = rng
        self._cache = {}

    def pick(self, table):
        return self.rng.choices(table[0], cum_weights=table[1])[0]

    def pool(self, name, make):
        if name not in self._cache:
            self._cache[name] = Pool([make() for _ in range(POOL)])
        return self._cache[name]

    def listing(self, pool, strict, count_table=COUNTS):
        """(a JSON list of pool items, valid); now and then one item twice (a duplicate key)."""
        n = self.pick(count_table)
        items = self.rng.choices(pool.valid if strict else pool.all, k=n)
        if n >= 2 and self.rng.random() < 0.15:
            items[self.rng.randrange(n)] = items[0]
        valid = strict or not any(item in pool.invalid for item in items)
        return "[" + ",".join(items) + "]", valid

    def seconds(self):
        s = self.pick(SECONDS)
        return self.rng.randrange(-5, 100000) if s == "random" else s

    # --- tolerations and taints

    def toleration(self, effects=TOLERATION_EFFECTS, timed=0.0):
        """A toleration; `timed`: the share that sets tolerationSeconds whatever SECONDS says."""
        t = {}
        key = self.pick(TAINT_KEYS) if self.rng.random() < 0.9 else ABSENT
        op = self.pick(TOLERATION_OPS)
        value = self.pick(VALUES) if self.rng.random() < 0.6 else ABSENT
        if op in ("Gt", "Lt") and self.rng.random() < 0.8:
            value = self.rng.choice(["0", "1", "5", "10", "-1", "100", "9223372036854775807", "1.5", "a"])
        if op == "Exists" and self.rng.random() < 0.7:
            value = ABSENT  # mostly as validation wants
        effect = self.pick(effects)
        seconds = self.seconds()
        while seconds is ABSENT and self.rng.random() < timed:
            seconds = self.seconds()
        if seconds is not ABSENT and effect != "NoExecute" and self.rng.random() < 0.8:
            seconds = ABSENT  # mostly as validation wants: a time only with NoExecute
        for name, v in (("key", key), ("operator", op), ("value", value), ("effect", effect),
                        ("tolerationSeconds", seconds)):
            if v is not ABSENT:
                t[name] = v
        return dumps(t), toleration_valid(t)

    def toleration_for(self, tolerations, taints, taint, strict):
        """A toleration: mostly one naming `taint`'s key (or no key), so that matches,
        near misses (another value or effect) and timed tolerations are common."""
        roll = self.rng.random()
        if taint is None or roll < 0.35:
            return self.rng.choice(tolerations.of(strict))
        key = json.loads(taint).get("key", "") if roll < 0.85 else ""
        same_key = tolerations.keyed(strict).get(key)
        return self.rng.choice(same_key) if same_key else self.rng.choice(tolerations.of(strict))

    def taint(self, effects=TAINT_EFFECTS):
        t = {"key": self.pick(TAINT_KEYS)}
        if self.rng.random() < 0.7:
            t["value"] = self.pick(VALUES)
            if self.rng.random() < 0.15:
                t["value"] = self.rng.choice(["0", "1", "3", "5", "10", "99", "-7"])
        t["effect"] = self.pick(effects)
        return dumps(t), taint_valid(t)

    # --- labels, requirements, selectors

    def label_map(self, max_entries):
        n = self.rng.choice(range(max_entries + 1))
        return {self.pick(LABEL_KEYS): self.pick(LABEL_VALUES) for _ in range(n)}

    def labels(self, max_entries=5):
        labels = self.label_map(max_entries)
        return dumps(labels), are_labels(labels)

    def values(self, op, integers):
        count = self.pick(VALUE_COUNTS)
        if count is ABSENT:
            return ABSENT
        if op in ("Gt", "Lt") and integers and self.rng.random() < 0.85:
            return [self.rng.choice(["0", "1", "5", "9", "10", "-3", "+5", "007", "9223372036854775807",
                                     "-9223372036854775808", "9223372036854775808", "1.5", "a"])
                    for _ in range(count)]
        return [self.pick(LABEL_VALUES) for _ in range(count)]

    def requirement(self, ops, valid):
        op = self.pick(ops)
        r = {"key": self.pick(LABEL_KEYS), "operator": op}
        values = self.values(op, integers=True)
        if values is not ABSENT:
            r["values"] = values
        return dumps(r), valid(r)

    def field_requirement(self):
        r = {"key": self.pick(FIELD_KEYS), "operator": self.pick(FIELD_OPS)}
        count = self.pick(VALUE_COUNTS)
        if count is not ABSENT:
            r["values"] = [self.pick(NODE_NAMES) for _ in range(count)]
        return dumps(r), field_requirement_valid(r)

    def term(self):
        strict = self.rng.random() < STRICT
        expressions = self.pool("node_req", lambda: self.requirement(NODE_SELECTOR_OPS, node_requirement_valid))
        fields = self.pool("field_req", self.field_requirement)
        parts, valid = [], True
        roll = self.rng.random()
        if roll < 0.9:
            text, ok = self.listing(expressions, strict)
            parts.append('"matchExpressions":' + text)
            valid = valid and ok
        elif roll < 0.93:
            parts.append('"matchExpressions":null')
        if self.rng.random() < 0.3:
            text, ok = self.listing(fields, strict)
            parts.append('"matchFields":' + text)
            valid = valid and ok
        return "{" + ",".join(parts) + "}", valid

    def affinity(self):
        """(affinity JSON, valid): mostly required node affinity with terms."""
        roll = self.rng.random()
        odd = [("{}", True), ('{"nodeAffinity":{}}', True),
               ('{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":null}}', True),
               ('{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{}}}', False),
               ('{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":null}}}',
                False)]
        if roll < 0.07:
            return odd[int(roll / 0.014)]
        terms = self.pool("term", self.term)
        text, valid = self.listing(terms, self.rng.random() < STRICT, COUNTS)
        return ('{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":' + text +
                "}}}"), valid and text != "[]"

    def node(self):
        name = self.pick(NODE_NAMES)
        labels = self.label_map(6)
        return '{"name":' + dumps(name) + ',"labels":' + dumps(labels) + "}", is_subdomain(name) and are_labels(labels)

    def label_selector(self):
        roll = self.rng.random()
        if roll < 0.04:
            return "null", True
        if roll < 0.08:
            return "{}", True
        parts, valid = [], True
        if roll < 0.55 or self.rng.random() < 0.3:
            text, ok = self.labels(3)
            parts.append('"matchLabels":' + text)
            valid = ok
        if roll >= 0.4 or self.rng.random() < 0.1:
            requirements = self.pool("sel_req",
                                     lambda: self.requirement(LABEL_SELECTOR_OPS, selector_requirement_valid))
            text, ok = self.listing(requirements, self.rng.random() < STRICT)
            parts.append('"matchExpressions":' + text)
            valid = valid and ok
        return "{" + ",".join(parts) + "}", valid

    # --- quantities

    def quantity(self):
        rng = self.rng
        if rng.random() < 0.2:
            return dumps(rng.choice(QUANTITY_EDGES)), True
        whole = "".join(rng.choice("0000123456789") for _ in range(rng.choice((0, 1, 1, 1, 2, 3, 4, 20))))
        text = self.pick(Q_SIGNS) + whole
        if rng.random() < 0.3:
            text += "." + "".join(rng.choice("0000123456789") for _ in range(rng.choice((0, 1, 1, 2, 3, 9, 10))))
        return dumps(text + self.pick(Q_SUFFIXES)), True


def chunk(seed, index, per_relation, relations=RELATIONS):
    """Chunk `index`: {relation: (lines, valid)}: per_relation JSON lines of the relation,
    and for each whether the API server would accept its objects (quantities: always)."""
    parts = Parts(random.Random(f"{seed}/{index}"))
    rng = parts.rng
    out = {}
    tolerations = parts.pool("toleration", parts.toleration)
    taints = parts.pool("taint", parts.taint)
    noexecute = parts.pool("noexecute", lambda: parts.taint(NOEXECUTE_TAINT_EFFECTS))
    # For eviction: tolerations mostly of NoExecute (or every effect), half of them timed.
    evicting = parts.pool("evicting", lambda: parts.toleration(NOEXECUTE_TOLERATION_EFFECTS, timed=0.5))
    for relation in relations:
        lines, valid = [], []
        if relation == "tolerates":
            head = '{"relation":"tolerates","toleration":'
            for _ in range(per_relation):
                strict = rng.random() < STRICT
                taint = rng.choice(taints.of(strict))
                t = parts.toleration_for(tolerations, taints, taint, strict)
                lines.append(head + t + ',"taint":' + taint + "}")
                valid.append(strict or (t not in tolerations.invalid and taint not in taints.invalid))
        elif relation in ("untolerated", "eviction"):
            head = '{"relation":"' + relation + '","tolerations":'
            pool = taints if relation == "untolerated" else noexecute
            for _ in range(per_relation):
                strict = rng.random() < STRICT
                if relation == "untolerated":
                    which = tolerations
                    xs = rng.choices(pool.of(strict), k=parts.pick(COUNTS))
                    ts = [parts.toleration_for(which, pool, rng.choice(xs) if xs else None, strict)
                          for _ in range(parts.pick(COUNTS))]
                else:  # one toleration aimed at each taint, and a few more, in any order
                    which = evicting
                    xs = rng.choices(pool.of(strict), k=parts.pick(EVICTION_TAINT_COUNTS))
                    ts = [parts.toleration_for(which, pool, x, strict) for x in xs]
                    ts += [parts.toleration_for(which, pool, rng.choice(xs) if xs else None, strict)
                           for _ in range(rng.choice((0, 0, 1, 1, 2, 3)))]
                    rng.shuffle(ts)
                for items in (xs, ts):
                    if len(items) >= 2 and rng.random() < 0.15:
                        items[rng.randrange(len(items))] = items[0]  # the same key twice
                ids = [pool.ident(x) for x in xs]
                if strict and len(set(ids)) < len(ids):  # a node has one taint per key and effect
                    xs = [x for i, x in enumerate(xs) if ids[i] not in ids[:i]]
                    ids = sorted(set(ids))
                lines.append(head + "[" + ",".join(ts) + '],"taints":[' + ",".join(xs) + "]}")
                valid.append(len(set(ids)) == len(ids) and (strict or not (
                    any(t in which.invalid for t in ts) or any(x in pool.invalid for x in xs))))
        elif relation == "nodeaffinity":
            selectors = parts.pool("node_selector", lambda: parts.labels(3))
            affinities = parts.pool("affinity", parts.affinity)
            nodes = parts.pool("node", parts.node)
            for _ in range(per_relation):
                strict = rng.random() < STRICT
                fields, chosen = ['"relation":"nodeaffinity"'], []
                roll = rng.random()
                if roll < 0.6:
                    chosen.append((selectors, rng.choice(selectors.valid if strict else selectors.all)))
                    fields.append('"nodeSelector":' + chosen[-1][1])
                if roll > 0.35:
                    chosen.append((affinities, rng.choice(affinities.valid if strict else affinities.all)))
                    fields.append('"affinity":' + chosen[-1][1])
                chosen.append((nodes, rng.choice(nodes.valid if strict else nodes.all)))
                fields.append('"node":' + chosen[-1][1])
                lines.append("{" + ",".join(fields) + "}")
                valid.append(strict or not any(text in pool.invalid for pool, text in chosen))
        elif relation == "selector":
            selectors = parts.pool("selector", parts.label_selector)
            label_sets = parts.pool("labels", lambda: parts.labels(6))
            for _ in range(per_relation):
                strict = rng.random() < STRICT
                s = rng.choice(selectors.valid if strict else selectors.all)
                labels = rng.choice(label_sets.valid if strict else label_sets.all)
                lines.append('{"relation":"selector","selector":' + s + ',"labels":' + labels + "}")
                valid.append(strict or (s not in selectors.invalid and labels not in label_sets.invalid))
        elif relation == "quantity":
            texts = parts.pool("quantity", parts.quantity)
            lines = ['{"relation":"quantity","text":' + t + "}" for t in rng.choices(texts.all, k=per_relation)]
            valid = [True] * per_relation
        else:
            raise ValueError(f"unknown relation {relation}")
        out[relation] = (lines, valid)
    return out


def chunks(seed, per_relation, relations=RELATIONS):
    """Yields (index, {relation: (lines, valid)}) until per_relation cases of each relation."""
    index, done = 0, 0
    while done < per_relation:
        n = min(CHUNK, per_relation - done)
        yield index, chunk(seed, index, n, relations)
        index += 1
        done += n


def case_issues(case):
    """What the API server's validation would reject in a parsed case, as a set of short
    reasons ("matchExpressions: NotIn with 0 values", "node: invalid name"...); empty for
    a valid case. A case missing a member its relation needs gets "malformed"."""
    try:
        return set(_case_issues(case))
    except (KeyError, TypeError, AttributeError):
        return {"malformed"}


def case_valid(case):
    """Whether the API server would accept the objects of a parsed case (what chunk()
    reports from its pools, here from the case itself: for shrinking)."""
    return not case_issues(case)


def _labels_issues(where, labels):
    return [] if are_labels(labels) else [f"{where}: invalid labels"]


def _case_issues(case):
    relation = case.get("relation")
    if relation == "tolerates":
        return toleration_issues(case["toleration"]) + taint_issues(case["taint"])
    if relation in ("untolerated", "eviction"):
        taints = case.get("taints") or []
        ids = [(t.get("key", ""), t.get("effect", "")) for t in taints]
        out = [i for t in case.get("tolerations") or [] for i in toleration_issues(t)]
        out += [i for t in taints for i in taint_issues(t)]
        if len(set(ids)) != len(ids):
            out.append("taints: two of one key and effect")
        return out
    if relation == "nodeaffinity":
        node = case["node"]
        out = [] if is_subdomain(node.get("name", "")) else ["node: invalid name"]
        out += _labels_issues("node", node.get("labels") or {})
        out += _labels_issues("nodeSelector", case.get("nodeSelector") or {})
        required = ((case.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution")
        if required is not None:
            terms = required.get("nodeSelectorTerms") or []
            if not terms:
                out.append("required node affinity without terms")
            for term in terms:
                out += [i for r in term.get("matchExpressions") or [] for i in node_requirement_issues(r)]
                out += [i for r in term.get("matchFields") or [] for i in field_requirement_issues(r)]
        return out
    if relation == "selector":
        out = _labels_issues("pod", case["labels"] or {})
        selector = case["selector"]
        if selector is not None:
            out += _labels_issues("selector matchLabels", selector.get("matchLabels") or {})
            out += [i for r in selector.get("matchExpressions") or [] for i in selector_requirement_issues(r)]
        return out
    return []


def parse_relations(text):
    relations = tuple(r for r in text.split(",") if r)
    unknown = [r for r in relations if r not in RELATIONS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown relation(s) {', '.join(unknown)}; known: {', '.join(RELATIONS)}")
    return relations


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--seed", required=True, help="any string; the same seed gives the same cases")
    parser.add_argument("--per-relation", type=int, required=True, metavar="N")
    parser.add_argument("--relations", type=parse_relations, default=RELATIONS,
                        help="comma-separated subset (default: all)")
    args = parser.parse_args(argv)
    out = sys.stdout
    for _, cases in chunks(args.seed, args.per_relation, args.relations):
        for relation in args.relations:
            out.write("\n".join(cases[relation][0]))
            out.write("\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        sys.exit(141)
