#!/usr/bin/env python3
"""Rewrites a CUDA source for cudasim (runtime/cudasim), so that a host C++
compiler builds it: the two constructs that are not C++.

  kernel<<<grid, block[, smem[, stream]]>>>(args)
      -> ::cudasim::Launch("kernel", grid, block[, smem[, stream]])(kernel, args)
  extern __shared__ T name[];
      -> T *name = ::cudasim::dynamicShared<T>();

A launch on the line after a comment `// cudasim-label: NAME` is labelled by
the expression NAME (a `const char *` in scope) instead of its own text: a
helper that launches the kernel it is given names the launch after its caller.

Line numbers are kept (a #line directive names the original file), so that
compiler messages and assertion failures point into the .cu source.

usage: rewrite_cuda.py INPUT.cu OUTPUT.cpp
"""
import re
import sys

LAUNCH = re.compile(r"(?P<labelled>//[ \t]*cudasim-label:[ \t]*(?P<label>\w+)[^\n]*\n\s*)?"
                    r"(?P<name>\b[A-Za-z_][\w:]*(?:<[^<>;(){}]*>)?)\s*<<<(?P<config>.*?)>>>\s*\(",
                    re.S)
DYNAMIC_SHARED = re.compile(
    r"extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s+)?(?P<type>[\w:]+(?:\s+[\w:]+)*?)"
    r"\s+(?P<name>\w+)\s*\[\s*\]\s*;")


def rewrite(text):
    def launch(m):
        name = m.group("name")
        rest = text[m.end():]
        no_args = rest.lstrip().startswith(")")
        label = m.group("label") or '"%s"' % re.sub(r"\s+", " ", name)
        return '%s::cudasim::Launch(%s, %s)(%s%s' % (m.group("labelled") or "", label,
                                                   m.group("config"), name,
                                                   "" if no_args else ", ")

    out = LAUNCH.sub(launch, text)
    out = DYNAMIC_SHARED.sub(
        lambda m: "%s *%s = ::cudasim::dynamicShared<%s>();" % (m.group("type"), m.group("name"),
                                                                m.group("type")), out)
    if "<<<" in out or re.search(r"extern\s+__shared__", out):
        raise SystemExit("rewrite_cuda.py: a launch or dynamic shared array it cannot rewrite")
    return out


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    source, target = sys.argv[1], sys.argv[2]
    with open(source) as f:
        text = f.read()
    with open(target, "w") as f:
        f.write('#line 1 "%s"\n' % source)
        f.write(rewrite(text))


if __name__ == "__main__":
    main()
