# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# --verify fails broken plans: each case injects one fault into the
# partitioned program (braid-run's hidden --inject-fault, the test pass
# --braid-test-inject-fault: test/lib/Transforms/InjectFault.cpp) and
# braid-run --verify, at the defaults of the differential matrices (10 AdamW
# steps, eps 1e-8, tolerance 1e-5), must judge it FAIL and exit 1. The same
# plans without the fault pass in spmd-verify.py, cp-verify.py and
# pipeline-verify.py, so each failure is the fault's.
#   drop-all-reduce    the attention output's tp all-reduce removed
#   wrong-axis         that all-reduce over dp instead of tp
#   drop-state-carry   Mamba's first scan starts each cp chunk from zero:
#                      caught because the builder initializes Mamba as Mamba
#                      does (dt ~ 1e-3..0.1, A = -(n + 1)), so the state
#                      carries across the chunk boundary
#   zero-offset        ZeRO-1 updates every rank's range with the first
#                      range's gradient (caught by the replayed update)
#   swap-microbatches  stage 0 pairs micro-batch 1's tokens with micro-batch
#                      0's labels on the last stage
#   corrupt-replica    ranks other than coordinate 0 of dp get a wrong copy
#                      of a dp-reduced gradient; at one step without clipping
#                      (so that nothing carries rank 1's error to rank 0) only
#                      the check of every rank's copy sees it, and names the
#                      rank
#   skip-ring-step     ring attention leaves out the previous rank's block
# At bf16 --verify judges against bounds from the rounding itself (the 1-rank
# program at bf16 and at f32: include/braid/Driver/Verify.h); a dropped or
# misdirected all-reduce is far outside them.
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import verify_matrix  # noqa: E402

work = sys.argv[1]

MATRIX = [
    ("llama-tiny", ["--grid", "dp=2,tp=2", "--inject-fault", "drop-all-reduce"]),
    ("llama-tiny", ["--grid", "dp=2,tp=2", "--inject-fault", "wrong-axis"]),
    ("mamba-tiny", ["--grid", "cp=2", "--inject-fault", "drop-state-carry"]),
    ("hybrid-tiny", ["--grid", "cp=2,tp=2", "--inject-fault", "drop-state-carry"]),
    ("llama-tiny", ["--grid", "dp=2", "--zero", "1", "--inject-fault", "zero-offset"]),
    # ZeRO-1 with tp: the moments are ranges of tp blocks (runtime.h: zero_axes).
    ("llama-tiny", ["--grid", "dp=2,tp=2", "--zero", "1", "--inject-fault", "zero-offset"]),
    ("gpt-tiny-l5-b4", ["--grid", "pp=2", "--microbatches", "2",
                        "--inject-fault", "swap-microbatches"]),
    ("llama-tiny", ["--grid", "dp=2,tp=2", "--inject-fault", "corrupt-replica"]),
    ("llama-tiny", ["--grid", "cp=2", "--cp-attention", "ring",
                    "--inject-fault", "skip-ring-step"]),
    ("llama-tiny", ["--grid", "dp=2,tp=2", "--dtype", "bf16",
                    "--inject-fault", "drop-all-reduce"]),
    ("llama-tiny", ["--grid", "dp=2,tp=2", "--dtype", "bf16", "--inject-fault", "wrong-axis"]),
]

paths, failures, _ = verify_matrix.run(work, MATRIX, expect="FAIL")

# The copy check alone: rank 0's loss, gradients and parameters are right.
r = subprocess.run(["braid-run", paths["llama-tiny"], "--grid", "dp=2,tp=2", "--steps", "1",
                    "--max-norm", "0", "--verify", "--quiet",
                    "--inject-fault", "corrupt-replica"], capture_output=True, text=True)
lines = {l.split(" ")[1]: l for l in r.stdout.splitlines() if l.startswith("verify: ")}
print("corrupt-replica, 1 step, no clipping:", "; ".join(lines.values()))
copies = lines.get("copies", "")
if (r.returncode != 1 or "verify: FAIL (tolerance 1e-05)" not in r.stdout
        or lines.get("loss") != "verify: loss 0" or " on rank 3)" not in copies
        or "step1.updated." not in copies):
    failures.append(f"corrupt-replica alone: exit {r.returncode}\n{r.stdout}{r.stderr}")

# The worst element is named with the rank that computed it: the partitioned
# run's owners.* files map each element of a dump to the rank whose copy was
# kept (dp2 x tp2: rank 2 dp + tp). wq is split by columns over tp, wo by rows.
import numpy as np  # noqa: E402

dump = os.path.join(work, "owners")
r = subprocess.run(["braid-run", paths["llama-tiny"], "--grid", "dp=2,tp=2", "--verify",
                    "--quiet", "--dump", dump, "--inject-fault", "drop-all-reduce"],
                   capture_output=True, text=True)
grads = next((l for l in r.stdout.splitlines() if l.startswith("verify: gradients")), "")
print("drop-all-reduce, 1 step:", grads)
if r.returncode != 1 or not re.search(r" on rank [0-3]\)$", grads):
    failures.append(f"drop-all-reduce, worst rank: exit {r.returncode}\n{r.stdout}{r.stderr}")
wq = np.load(os.path.join(dump, "owners.step1.grad.layers.0.attn.wq.npy"))
wo = np.load(os.path.join(dump, "owners.step1.grad.layers.0.attn.wo.npy"))
if not ((wq[:, :32] == 0).all() and (wq[:, 32:] == 1).all()
        and (wo[:32] == 0).all() and (wo[32:] == 1).all()):
    failures.append(f"owners of wq {np.unique(wq)} / wo {np.unique(wo)}: not the tp layout")

if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
