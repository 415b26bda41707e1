# REQUIRES: libfuzzer
# RUN: rm -rf %t && mkdir -p %t/corpus
# RUN: %python %s %t/corpus | FileCheck %s
#
# The training pipeline on the tiny presets of every family (python/braid
# models), with options the input's last bytes pick (a grid among sixteen,
# ZeRO stage, micro-batches, sequence parallelism, precision, recompute,
# pipeline schedule, cp attention, the overlap scheduler, virtual stages,
# the layouts braid-run records), each program it lowers to emitted as C++,
# and libFuzzer's mutations of both: a diagnostic or programs, no crash
# (fuzz/TrainingPipeline.cpp). First each seed once, verbose: every one must
# reach the emitter (a harness that stopped short of it would still report
# no crash).
# CHECK: 20 seeds, each lowered and emitted
# CHECK: braid-fuzz-pipeline: {{[0-9]+}} inputs, no crash
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import fuzz_run  # noqa: E402

corpus = sys.argv[1]
n = 0
for preset in ("llama-tiny", "gpt-tiny", "moe-tiny", "mamba-tiny", "hybrid-tiny"):
    # Four layers: the interleaved seed splits them into pp x virtual stages.
    text = subprocess.run([sys.executable, "-m", "braid.models", preset, "--batch", "4",
                           "--layers", "4"], check=True, capture_output=True, text=True).stdout
    # Option bytes, read from the input's end, one per choice (grid, zero,
    # micro-batches - 1, sequence parallelism, dtype, recompute, schedule, cp
    # attention, overlap, virtual stages, recorded layouts;
    # fuzz/TrainingPipeline.cpp): one rank at the defaults, dp2xtp2 ZeRO-1 SP
    # bf16, pp2xdp2 interleaved with selective recompute, cp2xdp2 ZeRO-2 ring
    # attention with full recompute; the last three as braid-run lowers them.
    for picks in ([0] * 11, [3, 1, 1, 1, 1, 0, 0, 0, 1, 0, 1], [5, 0, 1, 0, 0, 1, 2, 0, 1, 1, 1],
                  [7, 2, 0, 0, 1, 2, 0, 2, 1, 0, 1]):
        tail = bytes(reversed(picks))
        with open(os.path.join(corpus, f"seed-{n}"), "wb") as out:
            out.write(text.encode() + tail)
        n += 1
target = shutil.which("braid-fuzz-pipeline")
fuzz_run.each_seed_reaches(target, corpus, lambda line: line.endswith(": programs emitted"),
                           "lowered and emitted")
fuzz_run.run(target, corpus, runs=400, seconds=40)
