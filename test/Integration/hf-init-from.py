# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# braid-run --init-from (runtime/src/weights_map.h) on random Hugging Face
# checkpoints written here in each architecture's own naming and layout
# (Inputs/hf_reference.py: no download, no torch), through the weights map
# python3 -m braid.hf_weights writes:
# - Llama (GQA, untied, a BF16 file), Qwen2 (q/k/v biases, tied), Qwen3
#   (q/k RMSNorm per head), GPT-2 (fused Conv1D c_attn, the transformer.
#   prefix, mask buffers), Mixtral and Qwen3-MoE (stacked experts, the
#   router's normalization as configured) and Mamba (split in_proj and x_proj,
#   conv1d [DI, 1, K]): the first step's logits equal transformers' forward
#   written in numpy (float64) within 1e-4 of the largest logit, and its loss
#   the cross entropy of those logits;
# - grids: Llama on dp=2 x tp=2, Qwen2 (tied: a pipeline mirror) on
#   pp=2 x tp=2 and Mixtral on ep=2 (each rank its experts' pieces) under
#   --verify (every rank reads its own slices; loss, gradients and updates
#   equal the 1-rank run's);
# - generation: greedy ids equal the reference's greedy decoding (Llama, Mamba);
# - the Python API: braid.run(cfg, init_from=DIR) (the map written for the
#   directory) gives the logits braid-run gave, braid.run(..., data=FILE) its
#   --data losses, braid.generate(cfg, ..., init_from=DIR) the reference's ids;
# - round trip: import, train a step with a checkpoint, export-hf, map the
#   export, load it: every parameter bit-identical to the checkpoint's;
# - refusals, each a named error before any step: a truncated file, a map
#   of another model and a model directory instead of its map (exit 2 from
#   the program), --init-from with --resume (braid-run's own check).
import json
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import hf_reference as ref  # noqa: E402

from braid import checkpoint, from_hf, hf_weights  # noqa: E402
from braid.families import build_model  # noqa: E402

work = sys.argv[1]
failures = []
SEQ, BATCH = 16, 2


def expect(cond, message):
    if not cond:
        failures.append(message)


def write_model(kind, dtype="f32"):
    """The HF directory of `kind`, its Braid model and weights map: (config,
    tensors as the file holds them, model path, map path)."""
    config, drawn = ref.checkpoint(kind)
    d = os.path.join(work, kind)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f)
    shard = os.path.join(d, "model.safetensors")
    checkpoint.write_safetensors(shard, drawn, dtype)
    # The reference computes with what the file holds (bf16 rounded).
    tensors = {k: v.astype(np.float64) for k, v in checkpoint.read_file(shard).items()}
    cfg = from_hf(d, seq=SEQ, batch=BATCH)
    model = os.path.join(work, kind + ".mlir")
    with open(model, "w") as f:
        f.write(build_model(cfg).render())
    weights = os.path.join(work, kind + "-weights.json")
    hf_weights.write_weights_map(cfg, d, weights)
    return config, tensors, model, weights


def run(model, *args, ok=True):
    r = subprocess.run(["braid-run", model, "--quiet", *map(str, args)],
                       capture_output=True, text=True)
    if ok and r.returncode != 0:
        raise RuntimeError(f"braid-run {model} {' '.join(map(str, args))} failed:\n"
                           f"{r.stdout}{r.stderr}")
    return r


def check_logits(kind, dtype="f32"):
    config, tensors, model, weights = write_model(kind, dtype)
    dump = os.path.join(work, kind + "-dump")
    run(model, "--init-from", weights, "--steps", 1, "--dump", dump)
    tokens, labels = np.load(f"{dump}/tokens.npy"), np.load(f"{dump}/labels.npy")
    want = ref.forward(config, tensors, tokens)
    got = np.load(f"{dump}/logits.npy")
    err = np.abs(got - want).max() / np.abs(want).max()
    print(f"{kind} ({dtype}): largest logit difference {err:.2e} of the largest logit")
    expect(err < 1e-4, f"{kind}: logits differ from transformers' by {err:.2e} (relative)")
    loss, want_loss = float(np.load(f"{dump}/loss.npy")), ref.cross_entropy(want, labels)
    expect(abs(loss - want_loss) < 1e-4 * abs(want_loss),
           f"{kind}: loss {loss} differs from the reference's {want_loss}")
    return config, tensors, model, weights


models = {}
for kind in ("llama", "qwen2", "qwen3", "gpt2", "mixtral", "qwen3_moe", "mamba"):
    models[kind] = check_logits(kind, "bf16" if kind == "llama" else "f32")

# Grids: each rank reads its own slices; the 1-rank run is the judge.
for kind, grid in (("llama", "dp=2,tp=2"), ("qwen2", "pp=2,tp=2"), ("mixtral", "ep=2")):
    _, _, model, weights = models[kind]
    r = run(model, "--init-from", weights, "--grid", grid, "--steps", 2, "--verify", ok=False)
    expect(r.returncode == 0 and "verify: PASS" in r.stdout,
           f"{kind} on {grid}: --verify did not pass:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")

# Generation from the loaded weights.
prompts = os.path.join(work, "prompts.txt")
PROMPTS = [[1, 2, 3, 4, 5], [7, 8, 9]]
with open(prompts, "w") as f:
    f.write("".join(" ".join(map(str, p)) + "\n" for p in PROMPTS))
for kind in ("llama", "mamba"):
    config, tensors, model, weights = models[kind]
    r = run(model, "--init-from", weights, "--generate", 6, "--prompts", prompts)
    got = [line.split(":")[1].split() for line in r.stdout.splitlines()
           if line.startswith("request ")]
    want = [[str(i) for i in ref.greedy(config, tensors, p, 6)] for p in PROMPTS]
    expect(got == want, f"{kind}: generated {got}, the reference {want}")

# The Python API takes the model directory itself.
import braid  # noqa: E402

cfg = from_hf(os.path.join(work, "mixtral"), seq=SEQ, batch=BATCH)
result = braid.run(cfg, init_from=os.path.join(work, "mixtral"), steps=1, dump=True)
expect(np.array_equal(result.dumps["logits"], np.load(f"{work}/mixtral-dump/logits.npy")),
       "braid.run(init_from=DIR): logits differ from braid-run --init-from's")
tokens_file = os.path.join(work, "tokens.npy")
np.save(tokens_file, np.random.default_rng(1).integers(0, ref.V, 4 * SEQ * BATCH, dtype=np.int32))
api = braid.run(cfg, init_from=os.path.join(work, "mixtral"), steps=2, data=tokens_file)
cli = run(models["mixtral"][2], "--init-from", models["mixtral"][3], "--steps", 2,
          "--data", tokens_file)
expect(api.losses == [float(x) for x in re.findall(r"^step \d+ loss (\S+)$", cli.stdout, re.M)]
       and len(api.losses) == 2,
       f"braid.run(data=...): losses {api.losses}, braid-run --data's {cli.stdout}")
config, tensors, _, _ = models["mixtral"]
ids = braid.generate(cfg, PROMPTS, 4, init_from=os.path.join(work, "mixtral"))
want = [ref.greedy(config, tensors, p, 4) for p in PROMPTS]
expect(ids == want, f"braid.generate(init_from=DIR): {ids}, the reference {want}")

# Round trip: import, train a step, export, import again.
config, tensors, model, weights = models["qwen3"]
ckpt = os.path.join(work, "ckpt")
run(model, "--init-from", weights, "--steps", 1, "--checkpoint-dir", ckpt)
exported = os.path.join(work, "exported")
checkpoint.export_hf(ckpt, exported, os.path.join(work, "qwen3"))
again = os.path.join(work, "again.json")
hf_weights.write_weights_map(from_hf(exported, seq=SEQ, batch=BATCH), exported, again)
dump = os.path.join(work, "again-dump")
run(model, "--init-from", again, "--steps", 0, "--dump", dump)
_, saved = checkpoint.load(ckpt)
for name, value in saved.items():
    if not name.startswith("opt."):
        loaded = np.load(os.path.join(dump, name + ".npy"))
        expect(np.array_equal(loaded, value), f"round trip: {name} differs after export-hf")

# Refusals.
config, tensors, model, weights = models["gpt2"]
shard = os.path.join(work, "gpt2", "model.safetensors")
with open(shard, "r+b") as f:
    f.truncate(os.path.getsize(shard) - 8)
r = run(model, "--init-from", weights, ok=False)
expect(r.returncode == 2 and shard in r.stderr and "truncated" in r.stderr,
       f"a truncated file: exit {r.returncode}, {r.stderr[-500:]}")
r = run(models["llama"][2], "--init-from", models["qwen2"][3], ok=False)
expect(r.returncode == 2 and "has no tensor 'output'" in r.stderr,
       f"another model's map: exit {r.returncode}, {r.stderr[-500:]}")
r = run(models["llama"][2], "--init-from", os.path.join(work, "llama"), ok=False)
expect(r.returncode == 2 and "python3 -m braid.hf_weights" in r.stderr,
       f"a model directory given to --init-from: exit {r.returncode}, {r.stderr[-500:]}")
r = run(models["llama"][2], "--init-from", models["llama"][3], "--resume", ckpt, ok=False)
expect(r.returncode != 0 and "give one of them" in r.stderr,
       f"--init-from with --resume: exit {r.returncode}, {r.stderr[-500:]}")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
