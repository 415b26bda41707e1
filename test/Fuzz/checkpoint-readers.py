# REQUIRES: libfuzzer
# RUN: rm -rf %t && mkdir -p %t/corpus
# RUN: %python %s %t | FileCheck %s
#
# The readers of --resume (the manifest's and a rank index's JSON, a
# safetensors header) over a checkpoint braid-run writes (Llama tiny, one
# rank, one step), and of --init-from's weights map over a map of two
# tensors, and libFuzzer's mutations of them: no input crashes
# (fuzz/CheckpointReaders.cpp; the first byte picks the reader).
# CHECK: braid-fuzz-checkpoint: {{[0-9]+}} inputs, no crash
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import fuzz_run  # noqa: E402

work = sys.argv[1]
corpus = os.path.join(work, "corpus")
model = os.path.join(work, "llama.mlir")
with open(model, "w") as f:
    f.write(subprocess.run([sys.executable, "-m", "braid.models", "llama-tiny", "--batch", "2"],
                           check=True, capture_output=True, text=True).stdout)
ckpt = os.path.join(work, "ckpt")
subprocess.run(["braid-run", model, "--steps", "1", "--quiet", "--checkpoint-dir", ckpt],
               check=True, capture_output=True)
n = 0
for root, _, files in os.walk(ckpt):
    for f in sorted(files):
        data = open(os.path.join(root, f), "rb").read()
        kinds = [0, 1, 2] if f.endswith(".json") else [3] if f.endswith(".safetensors") else []
        for k in kinds:
            with open(os.path.join(corpus, f"seed-{n}"), "wb") as out:
                # A safetensors seed: its header and the first tensors.
                out.write(bytes([k]) + data[:65536])
            n += 1
# A weights map (runtime/src/weights_map.h): a transposed piece and two
# column blocks of one entry.
piece = {"file": "/m.safetensors", "dtype": "BF16", "entry_shape": [8, 4], "view": [8, 4]}
weights_map = {"format": "braid-weights", "version": 1, "source": "m",
               "files": [{"path": "/m.safetensors", "bytes": 200}],
               "tensors": [{"name": "wq", "shape": [4, 8], "pieces": [
                   dict(piece, key="q", transpose=True, **{"from": [0, 0]}, to=[0, 0],
                        shape=[4, 8])]},
                   {"name": "wk", "shape": [8, 4], "pieces": [
                       dict(piece, key="k", transpose=False, **{"from": [0, 0]}, to=[0, 0],
                            shape=[8, 2]),
                       dict(piece, key="k", transpose=False, **{"from": [0, 2]}, to=[0, 2],
                            shape=[8, 2])]}]}
with open(os.path.join(corpus, f"seed-{n}"), "wb") as out:
    out.write(bytes([4]) + json.dumps(weights_map).encode())
n += 1
if n < 5:
    sys.exit(f"the checkpoint gave {n} seeds: {sorted(os.listdir(ckpt))}")
fuzz_run.run(shutil.which("braid-fuzz-checkpoint"), corpus, runs=20000, seconds=30)
