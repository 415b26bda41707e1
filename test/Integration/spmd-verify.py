# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# The SPMD differential matrix: every parallel plan, run on N CPU ranks
# (MPI), equals the unpartitioned program on one rank over 10 AdamW steps at
# braid-run's defaults (eps 1e-8), fp32: braid-run --verify judges step 1's
# gradients (both runs start from one state) and step 1's updates (AdamW
# replayed on the partitioned run's own gradients) and every step's loss,
# within a relative 1e-5, and reports how far the last step's parameters
# drifted (include/braid/Driver/Verify.h says why that is not judged).
#
# MoE models run at the builder's capacity factor (1.25) and at 1.0: capacity
# is per group of one sequence, so data, expert and pipeline shards hold whole
# groups and drop exactly the tokens one rank drops; each MoE case prints how
# many assignments the 1-rank run dropped, which must be more than none.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import verify_matrix  # noqa: E402

work = sys.argv[1]

MATRIX = []
for preset in ["gpt-tiny", "llama-tiny"]:
    MATRIX += [
        (preset, ["--grid", "dp=2"]),
        (preset, ["--grid", "tp=2"]),
        (preset, ["--grid", "tp=2", "--sequence-parallel"]),
        (preset, ["--grid", "dp=2,tp=2"]),
        (preset, ["--grid", "dp=2", "--zero", "1"]),
        (preset, ["--grid", "dp=2", "--zero", "2"]),
        (preset, ["--grid", "dp=2", "--zero", "3"]),
        (preset, ["--grid", "dp=2,tp=2", "--zero", "3"]),
    ]
MATRIX += [
    # gpt-tiny's vocabulary (97) over 4 ranks: 25 rows each, 3 of padding.
    ("gpt-tiny", ["--grid", "tp=4"]),
    # llama-tiny's 2 key/value heads over 4 ranks: each rank computes both
    # and takes the one its query head uses.
    ("llama-tiny", ["--grid", "tp=4"]),
    ("moe-tiny", ["--grid", "ep=2"]),
    ("moe-tiny", ["--grid", "ep=2,tp=2"]),
    ("moe-tiny-b4", ["--grid", "dp=2"]),
    ("moe-tiny-b4", ["--grid", "dp=2,ep=2"]),
    ("moe-tiny-b4", ["--grid", "dp=2", "--zero", "3"]),
    ("moe-tiny-c1.0", ["--grid", "ep=2"]),
    ("moe-tiny-c1.0", ["--grid", "ep=2,tp=2"]),
    ("moe-tiny-b4-c1.0", ["--grid", "dp=2"]),
    ("moe-tiny-b4-c1.0", ["--grid", "dp=2,ep=2"]),
    ("moe-tiny-b4-c1.0", ["--grid", "dp=2,ep=2", "--zero", "3"]),
    ("mamba-tiny", ["--grid", "tp=2"]),
    ("hybrid-tiny", ["--grid", "dp=2,tp=2"]),
    # Eight ranks: data, tensor (8 heads, 2 key/value heads: each kv head on
    # four ranks), a 2-D grid, experts (one per rank).
    ("gpt-tiny-b8", ["--grid", "dp=8"]),
    ("llama-tiny-h8", ["--grid", "tp=8"]),
    ("llama-tiny-b4", ["--grid", "dp=4,tp=2"]),
    ("moe-tiny-b4", ["--grid", "ep=4"]),
    # Compositions: expert parallelism with sequence parallelism, another
    # seed, batches that are not powers of two (3 rows on tp, 6 over dp=2).
    ("moe-tiny", ["--grid", "ep=2,tp=2", "--sequence-parallel"]),
    ("llama-tiny", ["--grid", "dp=2,tp=2", "--seed", "7"]),
    ("llama-tiny-b3", ["--grid", "tp=2"]),
    ("gpt-tiny-b6", ["--grid", "dp=2", "--zero", "3"]),
    # Activations large enough next to the parameters that the overlap
    # scheduler moves ZeRO-3's gathers out of the layers and prefetches them
    # a layer ahead (test/Dialect/Dist/schedule-overlap-zero3.mlir).
    ("llama-tiny-b16-s64", ["--grid", "dp=2", "--zero", "3"]),
    ("mamba-tiny-b6", ["--grid", "dp=2,tp=2", "--seed", "3"]),
    # Collective matmul (--braid-collective-matmul, which the cost model
    # chooses for large layers only): the sequence-parallel gathers before
    # the products as rings of shifts and product chunks.
    ("llama-tiny", ["--grid", "tp=2", "--sequence-parallel", "--collective-matmul", "always"]),
    ("llama-tiny-b4", ["--grid", "dp=2,tp=4", "--sequence-parallel", "--collective-matmul",
                       "always"]),
    # Gradient buckets (--braid-schedule-overlap): the defaults make a tiny
    # model's gradients one bucket (the first, 1 MiB), which the cases above
    # run where the schedule fits its memory budget; 20 KiB buckets after a
    # first of 5 KiB make several, each packed, reduced and unpacked:
    # all-reduces, ZeRO-2's reduce-scatters (each rank's blocks of every
    # gradient together), ZeRO-3's in the layers' backward over dp beside tp
    # (activations large enough next to the parameters that ZeRO's
    # schedules fit the budget).
    ("llama-tiny", ["--grid", "dp=2", "--bucket-mb", "0.02", "--first-bucket-mb", "0.005"]),
    ("llama-tiny-b16-s64", ["--grid", "dp=2", "--zero", "2", "--bucket-mb", "0.02",
                            "--first-bucket-mb", "0.005"]),
    ("llama-tiny-b16-s64", ["--grid", "dp=2,tp=2", "--zero", "3", "--bucket-mb", "0.02",
                            "--first-bucket-mb", "0.005"]),
    # Mixed precision (bf16 compute, f32 master weights): judged against
    # bounds from bf16 rounding itself (include/braid/Driver/Verify.h);
    # collectives move bf16 activations and f32 gradients, ZeRO-3 gathers
    # bf16 weights.
    ("llama-tiny", ["--grid", "dp=2,tp=2", "--sequence-parallel", "--dtype", "bf16"]),
    ("gpt-tiny", ["--grid", "dp=2", "--zero", "3", "--dtype", "bf16"]),
]

paths, failures, drops = verify_matrix.run(work, MATRIX)
for label, (dropped, total) in drops.items():
    if label.startswith("moe-") and not dropped > 0:
        failures.append(f"{label}: no assignment was dropped ({total} in all)")


if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
