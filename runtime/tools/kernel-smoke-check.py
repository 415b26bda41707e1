#!/usr/bin/env python3
"""Checks a run of kernel-smoke: kernel-smoke-check.py BRAID_SRC STDOUT_FILE DUMP_DIR TRACE SEED."""
import json
import math
import pathlib
import sys

src, out, dump, trace, seed = sys.argv[1:6]
sys.path.insert(0, str(pathlib.Path(src) / "test" / "lib"))
import numpy as np  # noqa: E402
from braid_ref import rng  # noqa: E402

seed = int(seed)
w = rng.param_values(seed, "w", (4, 8), "normal", 1.0, "f32", exact=True)
labels = rng.uniform_int(seed, "labels", 8, 0, 4)
h = (w * w).astype(np.float32)
hd = h.astype(np.float64)
loss = np.mean([math.log(np.sum(np.exp(hd[r] - hd[r].max()))) + hd[r].max() - hd[r, labels[r]]
                for r in range(4)])
lines = pathlib.Path(out).read_text().splitlines()
ok = True
got = [float(l.split()[3]) for l in lines if l.startswith("step ")]
print("expected loss", loss, "got", got)
ok &= len(got) == 2 and all(abs(g - loss) <= 1e-5 * abs(loss) for g in got)
ok &= "planned_peak_bytes: 324" in lines and "measured_peak_bytes: 324" in lines
d = pathlib.Path(dump)
ok &= np.array_equal(np.load(d / "w.npy"), w) and np.array_equal(np.load(d / "labels.npy"), labels)
ok &= np.allclose(np.load(d / "block.h.npy"), h, rtol=1e-6, atol=0)
ok &= abs(float(np.load(d / "loss.npy")) - loss) <= 1e-5 * abs(loss)
ev = [e for e in json.load(open(trace))["traceEvents"] if e["ph"] == "X"]
print([(e["name"], e["args"]["scope"], e["ts"], e["dur"]) for e in ev])
ok &= [e["name"] for e in ev] == ["binary", "cross_entropy"] * 2
print("OK" if ok else "FAIL")
sys.exit(0 if ok else 1)
