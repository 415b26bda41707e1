# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# Pipeline parallelism, differentially: each pipeline rank runs its own
# program (its model chunks' forward and backward over the micro-batches, in
# the schedule's order, with activations sent forward and gradients back);
# 10 AdamW steps at braid-run's defaults equal the unpartitioned program on
# one rank with the whole batch (braid-run --verify: step 1's gradients and
# updates and every step's loss within 1e-5, fp32). GPT tiny is tied (its embedding
# table lives on the first and the last rank, their gradients summed) and has
# 5 layers, so pp=2 and pp=4 split it unevenly; every schedule runs on both.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import verify_matrix  # noqa: E402

work = sys.argv[1]

MATRIX = []
for schedule in ["gpipe", "1f1b", "zb-h1"]:
    MATRIX += [
        ("gpt-tiny-l5-b4", ["--grid", "pp=2", "--microbatches", "2", "--schedule", schedule]),
        ("gpt-tiny-l5-b4", ["--grid", "pp=4", "--microbatches", "4", "--schedule", schedule]),
    ]
MATRIX += [
    # Interleaved 1F1B: two model chunks per rank.
    ("gpt-tiny-l5-b4", ["--grid", "pp=2", "--virtual-stages", "2", "--microbatches", "4",
                        "--schedule", "interleaved"]),
    ("gpt-tiny-l9-b4", ["--grid", "pp=4", "--virtual-stages", "2", "--microbatches", "4",
                        "--schedule", "interleaved"]),
    # A user layout; gradient accumulation alone (one rank, micro-batches).
    ("gpt-tiny-l5-b4", ["--grid", "pp=2", "--pp-layout", "1,4", "--microbatches", "2"]),
    ("gpt-tiny-l5-b4", ["--microbatches", "4"]),
    # With the SPMD axes.
    ("gpt-tiny-l5-b4", ["--grid", "pp=2,dp=2", "--microbatches", "2"]),
    ("gpt-tiny-l5-b4", ["--grid", "pp=2,dp=2", "--microbatches", "2", "--zero", "3"]),
    ("gpt-tiny-l5-b4", ["--grid", "pp=2,tp=2", "--microbatches", "2", "--sequence-parallel"]),
    ("llama-tiny-b4", ["--grid", "pp=2,dp=2,tp=2", "--microbatches", "2"]),
    ("mamba-tiny-b4", ["--grid", "pp=2", "--microbatches", "2"]),
    ("moe-tiny-b4", ["--grid", "pp=2", "--microbatches", "2"]),
    ("moe-tiny-b4", ["--grid", "pp=2,ep=2", "--microbatches", "2", "--zero", "1"]),
    # Experts dropping tokens (capacity per sequence) under micro-batches.
    ("moe-tiny-b4-c1.0", ["--grid", "pp=2,ep=2", "--microbatches", "2"]),
    # Context parallelism across a pipeline (attention and Mamba layers).
    ("hybrid-tiny-b4", ["--grid", "pp=2,cp=2", "--microbatches", "2"]),
    # Each schedule with data, tensor and ZeRO parallelism; an odd number of
    # micro-batches.
    ("gpt-tiny-l5-b4", ["--grid", "pp=2,dp=2", "--microbatches", "2", "--schedule", "gpipe",
                        "--zero", "1"]),
    ("gpt-tiny-l5-b4", ["--grid", "pp=2,tp=2", "--microbatches", "2", "--schedule", "gpipe"]),
    ("gpt-tiny-l5-b4", ["--grid", "pp=2,dp=2", "--microbatches", "2", "--schedule", "zb-h1",
                        "--zero", "3"]),
    ("gpt-tiny-l5-b4", ["--grid", "pp=2,tp=2", "--microbatches", "4", "--schedule", "zb-h1",
                        "--sequence-parallel"]),
    ("gpt-tiny-l5-b4", ["--grid", "pp=2,dp=2", "--virtual-stages", "2", "--microbatches", "2",
                        "--schedule", "interleaved", "--zero", "2"]),
    ("gpt-tiny-l5-b4", ["--grid", "pp=2,tp=2", "--virtual-stages", "2", "--microbatches", "4",
                        "--schedule", "interleaved"]),
    ("gpt-tiny-l5-b6", ["--grid", "pp=2", "--microbatches", "3"]),
    # Gradient buckets of 20 KiB (after a first of 5 KiB) in the chunks'
    # last backward: several per stage, over dp, ZeRO-1's reduce-scatters.
    ("gpt-tiny-l5-b4", ["--grid", "pp=2,dp=2", "--microbatches", "2", "--zero", "1",
                        "--bucket-mb", "0.02", "--first-bucket-mb", "0.005"]),
    # bf16 across stages (bounds from bf16 rounding: include/braid/Driver/Verify.h).
    ("gpt-tiny-l5-b4", ["--grid", "pp=2,dp=2", "--microbatches", "2", "--dtype", "bf16"]),
]

_, failures, drops = verify_matrix.run(work, MATRIX)
for label, (dropped, total) in drops.items():
    if not dropped > 0:
        failures.append(f"{label}: no assignment was dropped ({total} in all)")

if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
