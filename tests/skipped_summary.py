"""One line naming the tests ctest skipped and why, for the end of `./dev test`.

    python3 tests/skipped_summary.py JUNIT_XML...

Reads ctest's --output-junit files. A skipped test (SKIP_RETURN_CODE 77, or disabled)
gives its reason on a line starting "skipped:"
(tests/require.sh and the tests' own checks print one); tests that share a reason are
named together. Prints nothing when nothing was skipped, so the caller's output still ends
with ctest's summary. Missing files (a ctest run that did not get far) are ignored.
"""

import collections
import sys
import xml.etree.ElementTree as ET


def skipped_tests(paths):
    """(test name, reason) of every skipped or not-run test in the files, in order."""
    out = []
    for path in paths:
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError):
            continue
        for case in root.iter("testcase"):
            skipped = case.find("skipped")
            message = skipped.get("message", "") if skipped is not None else ""
            # What ctest itself calls skipped (SKIP_RETURN_CODE, SKIP_REGULAR_EXPRESSION) or
            # disabled; a test not run because its fixture failed is counted as failed by
            # ctest, and named in its own list of failures.
            if skipped is None or not (message.startswith("SKIP_") or message.lower().startswith("disabled")):
                continue
            text = case.findtext("system-out") or ""
            reasons = [line.strip()[len("skipped:"):].strip() for line in text.splitlines()
                       if line.strip().lower().startswith("skipped:")]
            reason = reasons[-1] if reasons else f"no reason printed ({message})"
            out.append((case.get("name"), reason))
    return out


def summary(skips):
    if not skips:
        return ""
    by_reason = collections.OrderedDict()
    for name, reason in skips:
        by_reason.setdefault(reason, []).append(name)
    parts = [f"{', '.join(names)}: {reason}" for reason, names in by_reason.items()]
    return f"skipped {len(skips)} test(s): " + "; ".join(parts)


def main(argv):
    line = summary(skipped_tests(argv[1:]))
    if line:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
