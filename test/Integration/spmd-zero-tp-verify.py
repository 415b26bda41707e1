# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
# RUN: braid-run %t/llama-tiny-b4.mlir --grid dp=2,tp=2 --zero 1 --compile-only --emit-cpp %t/z1.cpp
# RUN: FileCheck %s --input-file=%t/z1.cpp
#
# ZeRO-1 and ZeRO-2 over dp with tp (found by the planner's plan files,
# whose plans often pair them): the reduced gradients and the AdamW moments
# of a tp-sharded weight are flat dp-ranges of each tp rank's block, which a
# flat layout over dp cannot place in the global tensor. Their dumps gather
# the block over the ZeRO group first (braid_rt_value_zero_sharded for the
# gradients; the descriptor's zero_axes and block fields for the moments),
# so --verify compares them with the 1-rank run: 10 AdamW steps at
# braid-run's defaults, Llama tiny (GQA: wk/wv sharded over tp along their
# heads), on dp=2,tp=2 and pp=2,dp=2,tp=2.
#
# The moment of wk ([64, 32], split over tp along dim 1): a range of 512 of
# its [64, 16] block over dp.
# CHECK-DAG: constexpr int64_t [[BLOCK:kShape[0-9]+]][] = {64, 16};
# CHECK-DAG: constexpr int64_t kGlobal[[ID:[0-9]+]][] = {64, 32};
# CHECK-DAG: const char *const kSplit[[ID]][] = {"", "tp"};
# CHECK: {"opt.m.layers.0.attn.wk", BRAID_F32, 1, {{kShape[0-9]+}}, BRAID_INIT_ZEROS, 0, 0, {{[0-9]+}}, {{kGlobal[0-9]+}}, {{kSplit[0-9]+}}, 0, "dp", 2, [[BLOCK]], kGlobal[[ID]], kSplit[[ID]]},
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import verify_matrix  # noqa: E402

work = sys.argv[1]
MATRIX = [
    ("llama-tiny-b4", ["--grid", "dp=2,tp=2", "--zero", "1"]),
    ("llama-tiny-b4", ["--grid", "dp=2,tp=2", "--zero", "2", "--sequence-parallel"]),
    ("llama-tiny-b8-l4", ["--grid", "pp=2,dp=2,tp=2", "--zero", "1", "--microbatches", "4"]),
    # ZeRO-3 with micro-batches: each chunk gathers its layers' parameters a
    # layer ahead, inside the chunk (schedule-overlap-zero3.mlir: MICRO), in
    # f32 and bf16 (a read and a convert of its own per gather), and on a
    # pipeline.
    ("llama-tiny-b8", ["--grid", "dp=2,tp=2", "--zero", "3", "--microbatches", "2"]),
    ("llama-tiny-b8", ["--grid", "dp=2,tp=2", "--zero", "3", "--microbatches", "2",
                       "--dtype", "bf16"]),
    ("llama-tiny-b8-l4", ["--grid", "pp=2,dp=2", "--zero", "3", "--microbatches", "4"]),
]
_, failures, _ = verify_matrix.run(work, MATRIX)
if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
