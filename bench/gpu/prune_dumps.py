#!/usr/bin/env python3
"""Keeps of braid-run dump directories only what braid-run --verify-from
reads (lib/Driver/Verify.cpp), so that GPU runs' dumps fit the device
machine's way back: stdout.txt, the losses' copies, and per parameter and
optimizer state its step-0 and step-1 values, step 1's gradient, the last
step's value (the drift) and the replicas/owners/mirror files of those.
Activations and their gradients, which only compare.py reads on the device,
are removed.

usage: prune_dumps.py DIR...   (each DIR and the run directories below it)
"""
import os
import sys

COPIES = ("replicas.", "owners.", "mirror.")


def prune(root):
    kept = removed = 0
    for d, _, files in os.walk(root):
        names = {f[:-4] for f in files if f.endswith(".npy")}
        states = {n[len("step1.updated."):] for n in names if n.startswith("step1.updated.")}

        def wanted(stem):
            for p in COPIES:
                if stem.startswith(p):
                    stem = stem[len(p):]
            if stem.startswith("loss") or stem == "step1.logits":
                return True
            for p in ("step0.", "step1.updated.", "updated.", "step1.grad."):
                if stem.startswith(p):
                    return stem[len(p):] in states
            return False

        for f in files:
            if f.endswith(".npy") and not wanted(f[:-4]):
                os.remove(os.path.join(d, f))
                removed += 1
            else:
                kept += 1
    return kept, removed


if __name__ == "__main__":
    for root in sys.argv[1:]:
        kept, removed = prune(root)
        print(f"{root}: kept {kept} files, removed {removed}")
