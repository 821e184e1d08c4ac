#!/usr/bin/env python3
"""Checks the relative links and anchors of the project's Markdown documents.

    python3 tests/docs/check_links.py SOURCE_DIR                      # every link and anchor
    python3 tests/docs/check_links.py SOURCE_DIR --max-readme-lines N # README.md has at most N lines

Documents: README.md, CONTRIBUTING.md, CHANGELOG.md and docs/**/*.md. For each inline link
or image `[text](target)` and each reference definition `[id]: target` outside code:
  - http(s):, mailto: and other URL schemes are not checked;
  - a path must name a file or directory in the repository (relative to the document);
  - an anchor (`#...`, alone or after a Markdown path) must be a heading of the target,
    by GitHub's rules (lowercase; spaces to '-'; punctuation other than '-' and '_'
    dropped; a repeated heading gets -1, -2, ...), or an explicit <a id=...>/<a name=...>.
Exits 1 listing every broken link as FILE:LINE: message, 0 otherwise. Standard library only.
"""

import argparse
import os
import re
import sys
import unicodedata

DOCUMENTS = ("README.md", "CONTRIBUTING.md", "CHANGELOG.md")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
INLINE_LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
EXPLICIT_ANCHOR = re.compile(r"<a\s+[^>]*?\b(?:id|name)\s*=\s*[\"']([^\"']+)[\"']", re.I)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def documents(root):
    found = [os.path.join(root, d) for d in DOCUMENTS if os.path.isfile(os.path.join(root, d))]
    for base, dirs, files in os.walk(os.path.join(root, "docs")):
        dirs.sort()
        found += [os.path.join(base, f) for f in sorted(files) if f.endswith(".md")]
    return found


def prose_lines(text):
    """(line number, line) of the lines outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)[0] * len(m.group(1))
            continue
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):].strip():
                fence = None
            continue
        yield number, line


def strip_code_spans(line):
    """The line with `code spans` blanked, so links inside them are not links."""
    return re.sub(r"(`+)(.+?)\1", lambda m: " " * len(m.group(0)), line)


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)    # links: their text
    text = re.sub(r"<[^>]+>", "", text)                           # inline HTML
    text = text.replace("`", "")
    text = text.strip().lower()
    out = []
    for ch in text:
        if ch in "-_" or ch == " ":
            out.append("-" if ch == " " else ch)
        elif unicodedata.category(ch)[0] in "LNM":                # letters, digits, marks
            out.append(ch)
        # everything else (punctuation, symbols) is dropped
    return "".join(out)


_anchor_cache = {}


def anchors(path):
    """Every anchor a Markdown file defines."""
    if path not in _anchor_cache:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        found, seen = set(), {}
        previous = None
        for _, line in prose_lines(text):
            m = HEADING.match(line)
            title = m.group(2) if m else None
            if title is None and previous and previous.strip() and SETEXT.match(line) and not HEADING.match(previous):
                title = previous.strip()
            if title is not None:
                base = slug(title)
                n = seen.get(base, 0)
                found.add(base if n == 0 else f"{base}-{n}")
                seen[base] = n + 1
            for a in EXPLICIT_ANCHOR.findall(line):
                found.add(a)
            previous = line
        _anchor_cache[path] = found
    return _anchor_cache[path]


def check_document(root, path):
    problems = []
    with open(path, encoding="utf-8") as f:
        text = f.read()
    rel = os.path.relpath(path, root)
    for number, line in prose_lines(text):
        plain = strip_code_spans(line)
        targets = [m.group(2) for m in INLINE_LINK.finditer(plain)]
        m = REFERENCE_DEF.match(plain)
        if m:
            targets.append(m.group(1))
        for target in targets:
            target = target.strip("<>")
            if SCHEME.match(target):
                continue                                          # http(s), mailto, ...
            file_part, _, anchor = target.partition("#")
            if file_part:
                resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                if not os.path.exists(resolved):
                    problems.append(f"{rel}:{number}: {target}: no such file {os.path.relpath(resolved, root)}")
                    continue
                if not os.path.abspath(resolved).startswith(os.path.abspath(root) + os.sep):
                    problems.append(f"{rel}:{number}: {target}: outside the repository")
                    continue
            else:
                resolved = path
            if anchor:
                if os.path.isdir(resolved) or not resolved.endswith(".md"):
                    problems.append(f"{rel}:{number}: {target}: an anchor into a file that is not Markdown")
                elif anchor not in anchors(resolved):
                    problems.append(f"{rel}:{number}: {target}: no heading or <a id> \"{anchor}\" "
                                    f"in {os.path.relpath(resolved, root)}")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", help="the repository's root")
    parser.add_argument("--max-readme-lines", type=int, metavar="N",
                        help="only check that README.md has at most N lines")
    args = parser.parse_args()
    root = os.path.abspath(args.source)

    if args.max_readme_lines is not None:
        with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
            lines = len(f.read().splitlines())
        if lines > args.max_readme_lines:
            print(f"README.md: {lines} lines, more than {args.max_readme_lines}: it is the front page; "
                  "move the details into docs/", file=sys.stderr)
            return 1
        print(f"README.md: {lines} lines (at most {args.max_readme_lines})")
        return 0

    docs = documents(root)
    problems = []
    for path in docs:
        problems += check_document(root, path)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"{len(problems)} broken link(s) in {len(docs)} document(s)", file=sys.stderr)
        return 1
    print(f"{len(docs)} documents, every relative link and anchor resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
