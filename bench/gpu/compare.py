#!/usr/bin/env python3
"""Compares two braid-run dump directories (CPU vs CUDA) and two losses.

usage: compare.py CPU_DIR CUDA_DIR [--cpu-log F --cuda-log F] [--tol T] [--model NAME]

Every NAME.npy present in both directories (recursively, matched by relative
path) is compared: max relative difference = max|a - b| / scale, where the
scale is max|a|, at least 1e-3 of the largest max|a| of its set (gradients,
parameters, each optimizer state, the other values), as braid-run --verify
measures. Updated parameters and optimizer states (updated.*, and
step<K>.updated.* with --dump-first-step) are reported as drift, not judged:
AdamW's first step is lr * g / (|g| + eps), so a gradient element near zero
(moe-tiny: one element of its layer-1 attention output projection is
2.6e-9 at step 1, against a largest of 0.057) turns the two backends'
rounding into update differences of a few 1e-3 of the
tensor. The updates are judged as braid-run --verify judges them, by
replaying the optimizer on each run's own gradients: braid-run MODEL
--steps 2 --verify-from DIR --verify-tolerance TOL, DIR holding the CUDA
run's dumps (with --dump-first-step) and stdout.txt and DIR/reference the
CPU run's (Verify.h).
bf16 dumps (numpy has no bf16: descr '<u2' / '|V2' / 'bfloat16') are widened
to f32. Prints one summary line per model (worst tensor, loss difference) and
the 5 worst tensors; exits 1 when the worst difference exceeds --tol or when
nothing could be compared.
"""
import argparse
import ast
import os
import re
import struct
import sys

try:
    import numpy as np
except ImportError:  # the check still reports losses
    np = None


def read_npy(path):
    with open(path, "rb") as f:
        if f.read(6) != b"\x93NUMPY":
            raise ValueError(f"{path}: not an npy file")
        major, _minor = f.read(2)
        hlen = struct.unpack("<H" if major == 1 else "<I", f.read(2 if major == 1 else 4))[0]
        header = ast.literal_eval(f.read(hlen).decode("latin1"))
        data = f.read()
    descr, shape = header["descr"], tuple(header["shape"])
    if descr in ("<u2", "|V2", "V2", "bfloat16", "<bf16"):  # bf16 bits
        bits = np.frombuffer(data, dtype="<u2").astype(np.uint32) << 16
        arr = bits.view(np.float32)
    else:
        arr = np.frombuffer(data, dtype=np.dtype(descr))
    if header.get("fortran_order"):
        return arr.reshape(shape[::-1]).T
    return arr.reshape(shape)


LOSS_RE = re.compile(r"loss\s*[:=]?\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)", re.I)


def last_loss(log):
    if not log or not os.path.exists(log):
        return None
    found = LOSS_RE.findall(open(log, errors="replace").read())
    return float(found[-1]) if found else None


def npy_files(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(".npy"):
                full = os.path.join(d, f)
                out[os.path.relpath(full, root)] = full
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cpu_dir")
    ap.add_argument("cuda_dir")
    ap.add_argument("--cpu-log")
    ap.add_argument("--cuda-log")
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--model", default="?")
    args = ap.parse_args()

    cpu_loss, cuda_loss = last_loss(args.cpu_log), last_loss(args.cuda_log)
    loss_txt = "loss n/a"
    loss_rel = 0.0
    if cpu_loss is not None and cuda_loss is not None:
        loss_rel = abs(cpu_loss - cuda_loss) / max(abs(cpu_loss), 1e-30)
        loss_txt = f"loss cpu {cpu_loss:.6f} cuda {cuda_loss:.6f} (rel {loss_rel:.2e})"

    if np is None:
        print(f"{args.model:<14} {loss_txt}; numpy missing: tensors not compared")
        return 0 if loss_rel <= args.tol else 1

    a, b = npy_files(args.cpu_dir), npy_files(args.cuda_dir)
    common = sorted(set(a) & set(b))
    loaded, rows = {}, []
    for rel in common:
        try:
            x = read_npy(a[rel]).astype(np.float64)
            y = read_npy(b[rel]).astype(np.float64)
        except Exception as e:  # noqa: BLE001 - report and continue
            rows.append((float("inf"), rel, f"unreadable: {e}"))
            continue
        if x.shape != y.shape:
            rows.append((float("inf"), rel, f"shape {x.shape} vs {y.shape}"))
            continue
        if x.size:
            loaded[rel] = (x, y)

    def group(rel):
        name = re.sub(r"^step\d+\.", "", os.path.basename(rel))
        for prefix in ("grad.", "updated.opt.m.", "updated.opt.v.", "updated.", "opt.m.", "opt.v."):
            if name.startswith(prefix):
                return prefix, name[len(prefix):]
        return "", name

    largest = {}
    for rel, (x, _) in loaded.items():
        g = group(rel)[0]
        largest[g] = max(largest.get(g, 0.0), float(np.nanmax(np.abs(x))))
    drift = []  # (difference, name) of updated.*: reported, not judged
    for rel, (x, y) in loaded.items():
        g = group(rel)[0]
        scale = max(float(np.nanmax(np.abs(x))), 1e-3 * largest[g], 1e-30)
        diff = np.abs(x - y)
        bad = ~np.isfinite(y) & np.isfinite(x)
        d = float("inf") if bad.any() else float(np.nanmax(diff)) / scale
        if g.startswith("updated.") and np.isfinite(d):
            drift.append((d, rel))
        else:
            rows.append((d, rel, f"shape {tuple(x.shape)}"))
    rows.sort(key=lambda r: -r[0])
    only = len(set(a) ^ set(b))
    worst = rows[0][0] if rows else float("inf")
    status = "ok" if rows and worst <= args.tol and loss_rel <= args.tol else "FAIL"
    worst_txt = f"worst {worst:.2e} ({rows[0][1]})" if rows else "no common dumps"
    print(f"{args.model:<14} {status:<4} {len(rows)} tensors, {worst_txt}; {loss_txt}"
          + (f"; {only} dumps only on one side" if only else ""))
    for d, rel, note in rows[:5]:
        print(f"    {d:.2e}  {rel}  {note}")
    if drift:
        d, rel = max(drift)
        print(f"    updates (not judged here: --verify-from replays them): {len(drift)} tensors, "
              f"worst drift {d:.2e} ({rel})")
    return 0 if status == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
