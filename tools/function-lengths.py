#!/usr/bin/env python3
"""The longest functions of Braid's C++ and CUDA sources.

Issue 41's bound: no function in dialects/, lib/, tools/ or runtime/src over
150 lines. A function is a brace block whose header ends in `)` (possibly
followed by qualifiers, a trailing return type or a constructor's
initializer list) and that does not open a control statement, a namespace,
a class or an initializer; its length counts the lines from its header to
its closing brace. Comments, strings and character literals are blanked
first, so braces inside them do not count. Lambdas inside a function count
with it.

usage: python3 tools/function-lengths.py [--root CHECKOUT] [--top N] [--limit L] [DIR ...]
Exits 1 when a function is longer than --limit (default: report only).
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIRS = ["dialects", "lib", "tools", "runtime/src"]
SUFFIXES = (".cpp", ".h", ".cu", ".cuh", ".c", ".cc")
CONTROL = re.compile(r"\b(if|for|while|switch|catch|do|else|try)\s*$")
NOT_FUNCTION = re.compile(r"\b(namespace|class|struct|union|enum)\b|=\s*$|\breturn\b")


def blank(text):
    """`text` with comments, string and character literals replaced by spaces
    (newlines kept, so line numbers hold)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif text[i] == "R" and text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            delim = re.match(r'R"([^(\s]*)\(', text[i:])
            if not delim:
                out.append(text[i])
                i += 1
                continue
            end = text.find(")" + delim.group(1) + '"', i)
            j = n if end < 0 else end + len(delim.group(1)) + 2
        elif text[i] in "\"'" and not (text[i] == "'" and i > 0 and text[i - 1].isalnum()):
            quote, j = text[i], i + 1
            while j < n and text[j] != quote and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
        else:
            out.append(text[i])
            i += 1
            continue
        out.append("".join(c if c == "\n" else " " for c in text[i:j]))
        i = j
    return "".join(out)


def functions(path):
    """(name, first line, line count) of each function defined in `path`."""
    text = blank(open(path, errors="replace").read())
    found, stack = [], []  # stack: (is function, header line, name) per open brace
    line, start = 1, 0
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        elif c == "{":
            inside = any(f for f, _, _ in stack)
            # The header: what follows the previous ; { or }.
            head = text[start:i].rstrip()
            is_function = False
            name = ""
            if not inside:
                tail = re.sub(r"(\bconst|\boverride|\bnoexcept|\bfinal|\bmutable|->\s*[\w:<>,\s*&]+)\s*$",
                              "", head).rstrip()
                tail = re.sub(r"\)\s*:\s*[\w:]+\s*\(.*$", ")", tail, flags=re.S)  # ctor init list
                if tail.endswith(")") and not NOT_FUNCTION.search(head):
                    depth, k = 0, len(tail) - 1
                    while k >= 0:
                        depth += {")": 1, "(": -1}.get(tail[k], 0)
                        if depth == 0:
                            break
                        k -= 1
                    before = tail[:k].rstrip()
                    if before and not CONTROL.search(before):
                        name = re.search(r"([\w:~<>=!+\-*/\[\]]+)$", before)
                        name = name.group(1) if name else "?"
                        is_function = True
            first = line - text[start:i].lstrip().count("\n") if is_function else line
            stack.append((is_function, first, name))
            start = i + 1
        elif c == "}":
            if stack:
                is_function, first, name = stack.pop()
                if is_function:
                    found.append((name, first, line - first + 1))
            start = i + 1
        elif c == ";":
            start = i + 1
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--root", default=ROOT, help="the checkout to measure (default: this one)")
    ap.add_argument("dirs", nargs="*", default=DIRS)
    args = ap.parse_args()
    rows = []
    for d in args.dirs:
        for base, _, files in os.walk(os.path.join(args.root, d)):
            for f in sorted(files):
                if f.endswith(SUFFIXES):
                    path = os.path.join(base, f)
                    rel = os.path.relpath(path, args.root)
                    rows += [(n, rel, first, name) for name, first, n in functions(path)]
    rows.sort(reverse=True)
    for n, rel, first, name in rows[:args.top]:
        print(f"{n:5d}  {rel}:{first}  {name}")
    over = [r for r in rows if args.limit and r[0] > args.limit]
    print(f"{len(rows)} functions; {sum(1 for r in rows if r[0] > 100)} over 100 lines, "
          f"{sum(1 for r in rows if r[0] > 150)} over 150")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
