"""How long `--init-from` takes to load a Hugging Face checkpoint onto CPU
ranks, against the time to read the checkpoint's bytes once, in the same run.

    python3 bench/hf/load_speed.py                       # Llama 3.2 1B shapes, bf16, 1 rank
    python3 bench/hf/load_speed.py --grid tp=2           # each rank its own slices
    python3 bench/hf/load_speed.py --dir path/to/Llama-3.1-8B --grid tp=4

Without --dir it writes a checkpoint of the configuration's shapes with
random bf16 weights (--config: a config.json; default Llama 3.2 1B's) into
--work. It then measures, for the page cache emptied of the files
(posix_fadvise DONTNEED, "cold") and full ("warm"):
- read: every byte of the safetensors files read once, in 64 MiB blocks;
- load: the runtime's initialization of a generation program with
  --init-from (the "initialized N tensors in X s" line: mapping the files,
  the checks, the copies with their transposes and bf16 -> f32 conversion;
  the KV cache's zeros too), on the grid's CPU ranks.
The figure is load / read (issue 46 asks at most 1.5 for an 8B checkpoint).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "..", "python"))
import machine  # noqa: E402

LLAMA_32_1B = {
    "architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "intermediate_size": 8192,
    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
    "num_hidden_layers": 16, "vocab_size": 128256, "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "hidden_act": "silu",
    "tie_word_embeddings": True, "torch_dtype": "bfloat16"}


def random_bf16(shape, rng):
    """bf16 bits of values of magnitude about 2^-6..2^-5 with random signs and
    mantissas: the bytes of a weight without the cost of normal draws."""
    n = int(np.prod(shape))
    bits = rng.integers(0, 1 << 8, n, dtype=np.uint16) | np.uint16(0x3C00)
    bits |= (rng.integers(0, 2, n, dtype=np.uint16) << 15).astype(np.uint16)
    return bits.reshape(shape)


def hf_shapes(c):
    """The tensors of a LlamaForCausalLM of config `c` (nn.Linear: [out, in])."""
    h, f, hd = c["hidden_size"], c["intermediate_size"], c.get("head_dim") or \
        c["hidden_size"] // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    shapes = {"model.embed_tokens.weight": (c["vocab_size"], h), "model.norm.weight": (h,)}
    if not c.get("tie_word_embeddings"):
        shapes["lm_head.weight"] = (c["vocab_size"], h)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes.update({p + "input_layernorm.weight": (h,),
                       p + "post_attention_layernorm.weight": (h,),
                       p + "self_attn.q_proj.weight": (q, h), p + "self_attn.k_proj.weight": (kv, h),
                       p + "self_attn.v_proj.weight": (kv, h), p + "self_attn.o_proj.weight": (h, q),
                       p + "mlp.gate_proj.weight": (f, h), p + "mlp.up_proj.weight": (f, h),
                       p + "mlp.down_proj.weight": (h, f)})
    return shapes


def write_checkpoint(d, config):
    """config.json and model.safetensors (bf16) of random weights."""
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f)
    shapes, rng = hf_shapes(config), np.random.default_rng(0)
    header, offset = {}, 0
    for name, shape in shapes.items():
        size = 2 * int(np.prod(shape))
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text)
        for shape in shapes.values():
            f.write(random_bf16(shape, rng).tobytes())


def safetensors_files(d):
    return sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(".safetensors"))


def drop_cache(files):
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def read_seconds(files):
    """Seconds to read every byte of `files` once."""
    block = bytearray(64 << 20)
    t0 = time.perf_counter()
    for path in files:
        with open(path, "rb", buffering=0) as f:
            while f.readinto(block):
                pass
    return time.perf_counter() - t0


def load_seconds(model, weights, grid):
    cmd = ["braid-run", model, "--generate", "1", "--prompt-len", "1", "--init-from", weights]
    if grid:
        cmd += ["--grid", grid]
    r = subprocess.run(cmd, capture_output=True, text=True)
    found = re.search(r"initialized \d+ tensors in ([0-9.]+) s", r.stderr)
    if r.returncode != 0 or not found:
        sys.exit(f"braid-run failed ({r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return float(found.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", help="an existing Hugging Face model directory")
    ap.add_argument("--config", help="config.json of the random checkpoint (default: Llama 3.2 1B)")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "braid-load-speed"))
    ap.add_argument("--grid", default="", help="the CPU ranks' grid (default: one rank)")
    args = ap.parse_args()

    from braid import from_hf, hf_weights
    from braid.families import build_model
    d = args.dir
    if not d:
        d = os.path.join(args.work, "model")
        config = json.load(open(args.config)) if args.config else LLAMA_32_1B
        if not os.path.exists(os.path.join(d, "model.safetensors")):
            print(f"writing a random checkpoint into {d} ...", flush=True)
            write_checkpoint(d, config)
    os.makedirs(args.work, exist_ok=True)
    cfg = from_hf(d, seq=128, batch=1)
    model, weights = os.path.join(args.work, "model.mlir"), os.path.join(args.work, "weights.json")
    with open(model, "w") as f:
        f.write(build_model(cfg).render())
    hf_weights.write_weights_map(cfg, d, weights)
    files = safetensors_files(d)
    gb = sum(os.path.getsize(f) for f in files) / 1e9
    print(f"{d}: {sum(p.type.numel for p in build_model(cfg).params.values()) / 1e9:.2f} B "
          f"parameters, {gb:.2f} GB in {len(files)} file(s); grid {args.grid or '1 rank'}")
    print(f"machine: {machine.describe()}")
    load_seconds(model, weights, args.grid)  # compiles the program once, outside the timing
    for state in ("cold", "warm"):
        if state == "cold":
            drop_cache(files)
        read = read_seconds(files)
        if state == "cold":
            drop_cache(files)
        load = load_seconds(model, weights, args.grid)
        print(f"{state}: read {read:.2f} s ({gb / read:.2f} GB/s), load {load:.2f} s: "
              f"load / read = {load / read:.2f}")


if __name__ == "__main__":
    main()
