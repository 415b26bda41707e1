# REQUIRES: mpirun
# UNSUPPORTED: sanitize
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# Pipeline, context and expert parallelism on GPU ranks, emulated:
# braid-run --backend cudasim --grid ... --verify runs the stage programs (or
# the partitioned program) on the CUDA backend under mpirun, with the
# runtime's NCCL communicators over cudasim's NCCL, whose sends wait for their
# receives as NCCL's may, and judges loss, gradients and updated parameters
# on every rank against the 1-rank program. 1F1B sends before it receives on
# both neighbours, interleaved chunks cross, the CP ring exchanges key blocks
# and merges their attention (the merge kernel's lse race, 2026-12-04), ZeRO-3
# gathers parameters beside the ring and the experts' all-to-all.
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "Integration", "Inputs"))
import verify_matrix  # noqa: E402

work = sys.argv[1]
CASES = [
    ("gpt-tiny-l5-b4", ["--grid", "pp=2", "--microbatches", "2", "--schedule", "1f1b"]),
    ("gpt-tiny-l5-b4", ["--grid", "pp=2", "--virtual-stages", "2", "--microbatches", "4",
                        "--schedule", "interleaved"]),
    ("llama-tiny-b4", ["--grid", "cp=2", "--cp-attention", "ring"]),
    ("llama-tiny-b4", ["--grid", "dp=2,cp=2", "--zero", "3", "--cp-attention", "ring",
                       "--cp-layout", "contiguous"]),
    ("moe-tiny-b4", ["--grid", "dp=2,ep=2", "--zero", "3"]),
]
failed = []
for preset, flags in CASES:
    model = verify_matrix.build(work, preset)
    r = subprocess.run(["braid-run", model, "--backend", "cudasim", *flags, "--steps", "2",
                        "--verify"], capture_output=True, text=True, timeout=900)
    out = r.stdout + r.stderr
    ok = r.returncode == 0 and "verify: PASS" in out and "on cuda" in out
    worst = [line for line in out.splitlines() if line.startswith("verify: gradients")]
    print(f"cudasim {preset} {' '.join(flags)}:", "PASS" if ok else "FAILED",
          worst[0] if worst else "")
    if not ok:
        failed.append(f"{preset} {flags}: exit {r.returncode}\n{out[-3000:]}")
if failed:
    print("\n".join(failed))
    sys.exit(1)
