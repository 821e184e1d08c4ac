#!/usr/bin/env python3
"""Sizes a reader can hold in their head (issue 26): no source file of policies/ or
webhook/ over 600 lines, no function over 100 lines. A function is found by its
signature line (ending in "{" after a ")") and ends at the first "}" at its indent;
data tables (an initializer "= {", a function that only returns "{...}", or one whose
comment's last line says "data table") are not functions.

Usage: check_sizes.py SOURCE_DIR [--self-test]
"""
import os
import re
import sys
import tempfile

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 100
SIGNATURE = re.compile(r"^(\s*)(?!(?:if|for|while|switch|catch|return|else|do)\b)[\w:~<>&*,\[\]\s\"]+\([^;]*\)"
                       r"[\w\s:&>*<-]*\{\s*$")


def braces(line):
    """The change of brace depth on a line, outside strings, characters and // comments."""
    line = re.sub(r'"(?:\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(?:\\.|[^'\\])*'", "''", line)
    line = line.split("//", 1)[0]
    return line.count("{") - line.count("}")


def functions(lines):
    """(signature, first line number, length) of each function in `lines`."""
    out = []
    for i, text in enumerate(lines):
        if not SIGNATURE.match(text) or "=" in text.split("(")[0] or text.lstrip().startswith(("return", ":")):
            continue
        if i > 0 and "data table" in lines[i - 1]:  # a table written as code, marked so
            continue
        depth = 0
        for j in range(i, len(lines)):
            depth += braces(lines[j])
            if depth <= 0:
                body = [l.strip() for l in lines[i + 1:j]
                        if l.strip() and not l.strip().startswith(("//", "using ", "constexpr auto "))]
                # A function that only returns a table (after naming its types) is data:
                # the workload table, say.
                if not (body and body[0].startswith("return {")):
                    out.append((text.strip(), i + 1, j - i + 1))
                break
    return out


def check(source_dir):
    problems = []
    for top in ("policies", "webhook"):
        for dirpath, _, files in os.walk(os.path.join(source_dir, top)):
            for name in sorted(files):
                if not name.endswith((".h", ".cpp")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, source_dir)
                with open(path, encoding="utf-8") as f:
                    lines = f.read().split("\n")
                if len(lines) - 1 > MAX_FILE_LINES:
                    problems.append(f"{rel}: {len(lines) - 1} lines (at most {MAX_FILE_LINES})")
                for signature, line, length in functions(lines):
                    if length > MAX_FUNCTION_LINES:
                        problems.append(f"{rel}:{line}: a function of {length} lines (at most {MAX_FUNCTION_LINES}): "
                                        f"{signature[:70]}")
    return problems


def self_test():
    long_body = "\n".join(f"  x += {i};" for i in range(MAX_FUNCTION_LINES))
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "webhook", "core"))
        os.makedirs(os.path.join(root, "policies"))
        with open(os.path.join(root, "webhook", "core", "a.cpp"), "w") as f:
            f.write(f"int long_one(int x) {{\n{long_body}\n  return x;\n}}\n\nint short_one() {{\n  return 1;\n}}\n"
                    f"const int kTable[] = {{\n{long_body.replace('x += ', '')}\n}};\n")
        with open(os.path.join(root, "policies", "b.h"), "w") as f:
            f.write("// x\n" * (MAX_FILE_LINES + 1))
        problems = check(root)
    expected = ["webhook/core/a.cpp:1: a function of 103 lines", "policies/b.h: 601 lines"]
    missing = [e for e in expected if not any(p.startswith(e) for p in problems)]
    if missing or len(problems) != len(expected):
        print("self-test failed; expected", expected, "found", problems)
        return 1
    print(f"self-test: the {len(expected)} planted violations found, the short function and the table not")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    problems = check(sys.argv[1])
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} size violation(s)")
        return 1
    print(f"sizes: no file over {MAX_FILE_LINES} lines, no function over {MAX_FUNCTION_LINES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
