# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %cxx %braid_src %braid_rt_lib %t
#
# A hand-written "generated program" (Inputs/tiny-program.cpp) linked with
# braid_runtime_main + braid_runtime runs on the CPU backend: its loss equals the
# value computed from braid_ref.rng's parameters, the measured peak equals the
# plan, --dump writes the parameters, inputs, values and loss as .npy files equal
# to rng.py (and the parameters after the last step as updated.<name>.npy), --trace
# writes valid Chrome JSON with the bracketed kernels. Variants:
# overlapping live buffers abort naming both, a plan that differs from the
# measured peak exits non-zero, a send to self aborts naming braid_send, an
# entry point that is not a training step is refused.
import json
import os
import pathlib
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import numpy as np  # noqa: E402

from braid_ref import rng  # noqa: E402

cxx, src, libdir, tmp = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3]), \
    pathlib.Path(sys.argv[4])
program = pathlib.Path(__file__).parent / "Inputs" / "tiny-program.cpp"
failures = []


def build(variant):
    exe = tmp / f"tiny{'-' + variant.lower() if variant else ''}"
    cmd = [cxx, "-std=c++17", "-O1", f"-I{src / 'runtime' / 'include'}", str(program),
           str(libdir / "libbraid_runtime_main.a"), str(libdir / "libbraid_runtime.a"),
           "-lpthread", "-o", str(exe)]
    if variant:
        cmd.insert(2, f"-DVARIANT_{variant}")
    subprocess.run(cmd, check=True)
    return exe


with ThreadPoolExecutor(4) as pool:
    tiny, overlap, peak, send, decode = pool.map(build, ["", "OVERLAP", "PEAK", "SEND", "DECODE"])


def expect(cond, message):
    if not cond:
        failures.append(message)


# --- the reference, from rng.py ---------------------------------------------------------
SEED = 1234
w = rng.param_values(SEED, "embed.w", (4, 8), "normal", 0.02, "f32", exact=True)
g = rng.param_values(SEED, "layers.0.norm.g", (3, 5), "normal", 1.0, "bf16", exact=True)
tokens = rng.uniform_int(SEED, "tokens", 4, 0, 12).reshape(2, 6)
gf = g.ravel()
h = np.zeros((2, 8), np.float32)
for b in range(2):
    for j in range(8):
        acc = 0.0
        for s in range(6):
            acc += float(w[tokens[b, s], j]) * float(gf[(b * 8 + j) % 15])
        h[b, j] = np.float32(acc)
hh = [float(v) for v in h.ravel()]
tmpv = np.array([(hh[j] * hh[j] + hh[8 + j] * hh[8 + j]) / 2.0 for j in range(8)], np.float32)
loss = np.float32(sum(float(v) for v in tmpv))  # sequential double sum, as the C++

# --- a normal run with dumps and a trace ------------------------------------------------
dump, trace = tmp / "dump", tmp / "trace.json"
r = subprocess.run([str(tiny), "--steps", "2", "--seed", str(SEED), "--dump", str(dump),
                    "--trace", str(trace), "--backend", "cpu"], capture_output=True, text=True)
expect(r.returncode == 0, f"tiny failed ({r.returncode}): {r.stderr}")
want_out = (f"step 1 loss {float(loss):.9g}\nstep 2 loss {float(loss):.9g}\n"
            f"planned_peak_bytes: 352\nmeasured_peak_bytes: 352\n")
expect(r.stdout == want_out, f"stdout:\n{r.stdout}\nexpected:\n{want_out}")
expect("braid: tiny on cpu" in r.stderr, f"no progress line on stderr: {r.stderr!r}")

files = sorted(p.name for p in dump.glob("*.npy"))
want_files = sorted(["embed.w.npy", "layers.0.norm.g.npy", "tokens.npy", "layers.0.h.npy",
                     "grad.tmp.npy", "loss.npy", "updated.embed.w.npy",
                     "updated.layers.0.norm.g.npy"])
expect(files == want_files, f"dump files {files}, expected {want_files}")


def same(name, want, dtype):
    path = dump / name
    if not path.exists():
        return
    got = np.load(path)
    expect(got.dtype == dtype and got.shape == want.shape and
           np.array_equal(got.reshape(-1).view(np.uint8),
                          np.asarray(want).astype(dtype).reshape(-1).view(np.uint8)),
           f"{name}: {got.dtype} {got.shape} {got.ravel()[:4]} vs {want.ravel()[:4]}")


same("embed.w.npy", w, np.float32)
same("layers.0.norm.g.npy", g, np.float32)  # bf16 is dumped as float32
same("tokens.npy", tokens.astype(np.int32), np.int32)
same("layers.0.h.npy", h, np.float32)
same("grad.tmp.npy", tmpv, np.float32)
same("loss.npy", np.array(loss, np.float32), np.float32)
# The parameters after the last step (the tiny step leaves them as they were).
same("updated.embed.w.npy", w, np.float32)
same("updated.layers.0.norm.g.npy", g, np.float32)

events = json.load(open(trace))
expect(events.get("displayTimeUnit") == "ms", "trace: displayTimeUnit")
allev = events.get("traceEvents", [])
meta = [e for e in allev if e.get("ph") == "M"]
expect([(e["name"], e["pid"], e["args"]) for e in meta] ==
       [("process_name", 0, {"name": "rank 0"}), ("process_sort_index", 0, {"sort_index": 0})],
       f"trace metadata {meta}")
ev = [e for e in allev if e.get("ph") != "M"]
got = [(e["name"], e["args"]["label"], e["args"]["scope"], e["args"]["step"]) for e in ev]
want = [(n, l, s, k) for k in (1, 2) for n, l, s in
        (("embed_sum", "h", "layers.0"), ("square_mean", "tmp", "layers.0"),
         ("all_reduce", "loss", ""))]
expect(got == want, f"trace events {got}, expected {want}")
for e in ev:
    expect(e["ph"] == "X" and e["cat"] == "kernel" and e["pid"] == 0 and e["tid"] == 0
           and e["dur"] >= 0 and e["ts"] >= 0, f"trace event {e}")
expect(all(a["ts"] <= b["ts"] for a, b in zip(ev, ev[1:])), "trace events out of order")

# --quiet: only the step and peak lines; no files without --dump/--trace.
r = subprocess.run([str(tiny), "--quiet", "--seed", str(SEED)], capture_output=True, text=True)
expect(r.returncode == 0 and r.stderr == "" and r.stdout.startswith(f"step 1 loss {float(loss):.9g}\n"),
       f"--quiet: {r.returncode} {r.stdout!r} {r.stderr!r}")
# another seed, another loss
r = subprocess.run([str(tiny), "--quiet"], capture_output=True, text=True)
expect(r.returncode == 0 and not r.stdout.startswith(f"step 1 loss {float(loss):.9g}\n"),
       f"seed 0 gives the same loss: {r.stdout!r}")
# bad arguments
for args in (["--steps", "x"], ["--bogus"], ["--backend", "tpu"], ["--seed", "-1"]):
    r = subprocess.run([str(tiny)] + args, capture_output=True, text=True)
    expect(r.returncode != 0 and r.stdout == "", f"{args}: {r.returncode} {r.stdout!r}")

# --- failures -----------------------------------------------------------------------------
r = subprocess.run([str(overlap), "--quiet"], capture_output=True, text=True)
expect(r.returncode != 0 and "braid runtime: buffer bad [300, 340) overlaps live buffer h [256, 320)"
       in r.stderr, f"overlap: {r.returncode} {r.stderr!r}")
r = subprocess.run([str(peak), "--quiet"], capture_output=True, text=True)
expect(r.returncode == 1 and "planned_peak_bytes: 384\nmeasured_peak_bytes: 352\n" in r.stdout
       and "differs" in r.stderr, f"peak: {r.returncode} {r.stdout!r} {r.stderr!r}")
r = subprocess.run([str(send), "--quiet"], capture_output=True, text=True)
expect(r.returncode != 0 and "braid runtime: braid_send" in r.stderr,
       f"send: {r.returncode} {r.stderr!r}")
# The driver runs training steps: another kind of entry is refused by name, before any step.
r = subprocess.run([str(decode), "--quiet"], capture_output=True, text=True)
expect(r.returncode != 0 and r.stdout == "" and
       "program tiny: its entry point is not a training step (entry kind 3)" in r.stderr,
       f"decode: {r.returncode} {r.stdout!r} {r.stderr!r}")

for f in failures:
    print(f)
print("ok" if not failures else f"{len(failures)} failures")
sys.exit(1 if failures else 0)
