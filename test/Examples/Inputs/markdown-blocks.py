"""Prints the fenced code blocks of one language from a Markdown file, so that
a test runs or compiles the documentation's commands and programs as written.

    markdown-blocks.py FILE LANG [--index N] [--assign NAME=VALUE ...]

Every ```LANG block, in order and separated by a blank line, or only the N-th
(from 0). --assign sets a shell variable that the block assigns on a line of
its own (`B=build P=$HOME/braid  # ...`) to a test's value instead; naming a
variable that no such line assigns is an error, so that the documentation and
the test cannot drift apart silently.
"""
import argparse
import pathlib
import re
import sys

parser = argparse.ArgumentParser()
parser.add_argument("file", type=pathlib.Path)
parser.add_argument("lang")
parser.add_argument("--index", type=int)
parser.add_argument("--assign", action="append", default=[], metavar="NAME=VALUE")
args = parser.parse_args()

blocks = re.findall(r"^```" + re.escape(args.lang) + r"\n(.*?)^```$",
                    args.file.read_text(), flags=re.S | re.M)
if args.index is not None:
    blocks = blocks[args.index:args.index + 1]
if not blocks:
    sys.exit(f"{args.file}: no ```{args.lang} block"
             + (f" #{args.index}" if args.index is not None else ""))
text = "\n".join(blocks)

# A line of assignments only, with an optional comment.
assignment_line = re.compile(r"^(\s*)((?:\w+=\S*\s+)*\w+=\S*)(\s*(?:#.*)?)$", re.M)
assignments = dict(item.split("=", 1) for item in args.assign)
unassigned = set(assignments)


def assign(match):
    words = []
    for word in match.group(2).split():
        name = word.split("=", 1)[0]
        if name in assignments:
            unassigned.discard(name)
            word = f"{name}={assignments[name]}"
        words.append(word)
    return match.group(1) + " ".join(words) + match.group(3)


text = assignment_line.sub(assign, text)
if unassigned:
    sys.exit(f"{args.file}: no line assigns {', '.join(sorted(unassigned))}")
sys.stdout.write(text)
