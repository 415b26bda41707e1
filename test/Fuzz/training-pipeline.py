# REQUIRES: libfuzzer
# RUN: rm -rf %t && mkdir -p %t/corpus
# RUN: %python %s %t/corpus | FileCheck %s
#
# The training pipeline on the tiny presets of every family (python/braid
# models), with options the input's last bytes pick (a grid among sixteen,
# ZeRO stage, micro-batches, sequence parallelism, precision, recompute,
# pipeline schedule, cp attention, the overlap scheduler, virtual stages),
# and libFuzzer's mutations of both: a diagnostic or a program, no crash
# (fuzz/TrainingPipeline.cpp).
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
    text = subprocess.run([sys.executable, "-m", "braid.models", preset, "--batch", "4"],
                          check=True, capture_output=True, text=True).stdout
    # Option bytes, read from the input's end, one per choice (grid, zero,
    # micro-batches - 1, sequence parallelism, dtype, recompute, schedule, cp
    # attention, overlap, virtual stages; fuzz/TrainingPipeline.cpp): one
    # rank at the defaults, dp2xtp2 ZeRO-1 SP bf16, pp2xdp2 interleaved with
    # selective recompute, cp2xdp2 ZeRO-2 ring attention with full recompute.
    for picks in ([0] * 10, [3, 1, 1, 1, 1, 0, 0, 0, 1, 0], [5, 0, 1, 0, 0, 1, 2, 0, 1, 1],
                  [7, 2, 0, 0, 1, 2, 0, 2, 1, 0]):
        tail = bytes(reversed(picks))
        with open(os.path.join(corpus, f"seed-{n}"), "wb") as out:
            out.write(text.encode() + tail)
        n += 1
fuzz_run.run(shutil.which("braid-fuzz-pipeline"), corpus, runs=400, seconds=40)
