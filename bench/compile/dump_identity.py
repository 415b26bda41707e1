#!/usr/bin/env python3
"""Do two builds compute the same numbers? The tiny presets' dumps, byte for byte.

emit_identity.py compares the emitted C++; a change that rewrites how kernels
are called (a params struct instead of positional arguments) changes that text
on purpose. This script compares what the programs compute instead: each case
runs `braid-run MODEL --steps 2 --dump DIR` (parameters and inputs after
initialization, every step's gradients, updated weights and optimizer state,
the loss) with one build, and the two dump trees are compared file by file.

  dump_identity.py --dump BIN_DIR OUT [--cudasim]   # run the cases with BIN_DIR/braid-run
  dump_identity.py --compare A B                    # every .npy and stdout, byte for byte

The runtime a braid-run binary builds against is the one of its own build
directory, so BIN_DIR may be another build's bin/ (e.g. a worktree at the
commit before a change).
"""

import argparse
import filecmp
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAMILIES = ["gpt", "llama", "moe", "mamba", "hybrid"]

# (case name, model, extra braid-run flags): the differential grids' kinds of
# program (one rank, data/tensor/pipeline/context/expert parallelism, bf16,
# rolled loops, recompute).
CASES = (
    [(f"{m}-1", m, []) for m in FAMILIES]
    + [(f"{m}-cp2", m, ["--grid", "cp=2"]) for m in FAMILIES]
    + [(f"{m}-cp2ring", m, ["--grid", "cp=2", "--cp-attention", "ring"]) for m in FAMILIES]
    + [
        ("llama-dp2tp2-sp-zero1", "llama", ["--grid", "dp=2,tp=2", "--sequence-parallel", "--zero", "1"]),
        ("llama-pp2-mb2", "llama", ["--grid", "pp=2", "--microbatches", "2"]),
        ("moe-ep2", "moe", ["--grid", "ep=2"]),
        ("llama-ulysses", "llama", ["--grid", "cp=2", "--cp-attention", "ulysses"]),
        ("llama-bf16", "llama", ["--dtype", "bf16"]),
        ("llama-ring-bf16", "llama", ["--grid", "cp=2", "--cp-attention", "ring", "--dtype", "bf16"]),
        ("llama-ring-roll", "llama", ["--grid", "cp=2", "--cp-attention", "ring", "--roll-repeats"]),
        ("llama-cp4-contig", "llama", ["--grid", "cp=4", "--cp-attention", "ring", "--cp-layout", "contiguous"]),
        ("gpt-roll", "gpt", ["--roll-repeats"]),
        ("llama-full-recompute", "llama", ["--grid", "cp=2", "--cp-attention", "ring", "--recompute", "full"]),
    ]
)
CUDASIM_CASES = [(f"sim-{m}", m, ["--backend", "cudasim"]) for m in FAMILIES] + [
    ("sim-llama-ring", "llama", ["--backend", "cudasim", "--grid", "cp=2", "--cp-attention", "ring"]),
    ("sim-llama-ag", "llama", ["--backend", "cudasim", "--grid", "cp=2"]),
]


def dump(bin_dir, out, cudasim):
    failed = 0
    for name, model, flags in CUDASIM_CASES if cudasim else CASES:
        case = os.path.join(out, name)
        os.makedirs(case, exist_ok=True)
        cmd = [os.path.join(bin_dir, "braid-run"), os.path.join(ROOT, "examples", f"{model}-tiny.mlir"),
               "--steps", "2", "--dump", case, "--quiet", *flags]
        with open(os.path.join(case, "stdout.txt"), "w") as stdout, \
             open(os.path.join(case, "stderr.txt"), "w") as stderr:
            rc = subprocess.call(cmd, stdout=stdout, stderr=stderr, cwd=ROOT)
        print(f"{name}: rc={rc}")
        failed += rc != 0
    return 1 if failed else 0


def compare(a, b):
    compared = differ = 0
    for case in sorted(os.listdir(a)):
        left, right = os.path.join(a, case), os.path.join(b, case)
        if not os.path.isdir(left):
            continue
        names = sorted(f for f in os.listdir(left) if f.endswith(".npy") or f == "stdout.txt")
        missing = [f for f in names if not os.path.exists(os.path.join(right, f))]
        extra = set(os.listdir(right)) - set(os.listdir(left)) if os.path.isdir(right) else set()
        for f in missing:
            print(f"MISSING {case}/{f}")
        for f in sorted(x for x in extra if x.endswith(".npy")):
            print(f"EXTRA {case}/{f}")
        for f in names:
            if f in missing:
                continue
            compared += 1
            if not filecmp.cmp(os.path.join(left, f), os.path.join(right, f), shallow=False):
                differ += 1
                print(f"DIFF {case}/{f}")
        differ += len(missing) + len(extra)
    print(f"compared {compared} files: {compared - differ} identical, {differ} differ or are missing")
    return 1 if differ else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--dump", nargs=2, metavar=("BIN_DIR", "OUT"))
    g.add_argument("--compare", nargs=2, metavar=("A", "B"))
    p.add_argument("--cudasim", action="store_true", help="the CUDA backend under cudasim instead")
    args = p.parse_args()
    if args.dump:
        return dump(os.path.abspath(args.dump[0]), os.path.abspath(args.dump[1]), args.cudasim)
    return compare(*args.compare)


if __name__ == "__main__":
    sys.exit(main())
