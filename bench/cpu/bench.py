#!/usr/bin/env python3
"""One training step (forward, backward, AdamW) of GPT-2 small, a Llama, a
Mamba and a MoE on CPU: Braid (braid-run, 1 rank) against JAX/XLA on CPU
and, when torch is installed, PyTorch eager on CPU (the same model written
from the same op semantics in jax_ops.py and torch_ops.py, f32, the same
AdamW with clipping), in one run on one machine:

  PYTHONPATH=python python3 bench/cpu/bench.py --build build [--models gpt2-small,llama]

prints per model the step times, the ratio Braid / the faster peer, GFLOP/s
of Braid and JAX (FLOPs of the step as XLA counts them, the same figure for
all), the share of the step Braid spends in GEMMs and their GFLOP/s and
fraction of peak (from the program's trace), and the step-1 losses of each
(the peers' models are initialized from the same deterministic rng as
Braid's, so they agree).

Peak = cores x GHz x FLOPs/cycle/core, from /proc/cpuinfo: 64 f32 FLOPs per
cycle with AVX-512 (two 512-bit FMA pipes, as on Zen 4/5 and Xeon), 32 with
AVX2+FMA; --peak-gflops overrides it. All run with every core of the
machine (Braid: --threads, JAX: XLA's own pool, PyTorch: set_num_threads).
"""

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(ROOT / "python"), str(ROOT / "test" / "lib"), str(ROOT / "bench"), str(HERE)]

import machine  # noqa: E402

# name -> (preset, overrides): the shapes, one sequence of 1024 tokens.
MODELS = {
    "gpt2-small": ("gpt2-small", {}),
    "llama": ("llama-tiny", dict(layers=4, hidden=1024, heads=16, kv_heads=4, ffn=2816,
                                 vocab=32000, seq=1024)),
    "mamba": ("mamba-tiny", dict(layers=4, hidden=1024, vocab=32000, seq=1024)),
    "moe": ("moe-tiny", dict(layers=4, hidden=768, heads=12, kv_heads=4, ffn=1024, experts=8,
                             top_k=2, vocab=32000, seq=1024)),
}
# Braid ops that are GEMMs (their trace events carry 2mnk FLOPs).
GEMM_OPS = ("linear", "batch_matmul", "matmul", "expert_ffn")


def peak_gflops():
    ghz, flags = None, ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("cpu MHz") and ghz is None:
                ghz = float(line.split(":")[1]) / 1000
            if line.startswith("flags") and not flags:
                flags = line
    per_cycle = 64 if " avx512f" in flags else 32 if " fma" in flags else 8
    return os.cpu_count() * ghz * per_cycle, f"{os.cpu_count()} x {ghz:.2f} GHz x {per_cycle}"


def braid_step(model_file, build, steps, threads, trace):
    cmd = [str(build / "bin" / "braid-run"), str(model_file), "--steps", str(steps),
           "--cpu-threads", str(threads), "--trace", str(trace)]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{result.stdout}\n{result.stderr}")
    per_step = float(re.search(r"steps in \S+ s \((\S+) ms/step\)", result.stderr).group(1))
    init = float(re.search(r"initialized \d+ tensors in (\S+) s", result.stderr).group(1))
    loss = float(re.search(r"^step 1 loss (\S+)$", result.stdout, re.M).group(1))
    return per_step / 1e3, init, loss


def gemm_share(trace, steps):
    """(seconds, FLOPs) per step of the trace's GEMM ops, and of all its ops."""
    events = json.loads(pathlib.Path(trace).read_text())["traceEvents"]
    gemm_s = gemm_f = total = 0.0
    for e in events:
        if e.get("ph") != "X" or e.get("cat") == "comm" or "step" not in e.get("args", {}):
            continue
        dur = e["dur"] / 1e6
        total += dur
        if any(e["name"].endswith(op) for op in GEMM_OPS):
            gemm_s += dur
            gemm_f += e["args"].get("flops", 0.0)
    return gemm_s / steps, gemm_f / steps, total / steps


def framework_params(models, params, ops):
    """braid_ref.models' parameter lookup over a framework's own tensors (JAX
    values, torch tensors: no np.asarray), the model's ops from `ops`."""
    class Lookup(models._Params):
        def __call__(self, name):
            self.used.add(name)
            return self._p[name]

    return Lookup(params, None, ops)


def jax_step(preset, overrides, steps):
    import jax
    import jax.numpy as jnp
    import jax_ops
    from braid_ref import models, train

    cfg, params, tokens, labels = models.preset_case(preset, seed=0, **overrides)
    d = train.DEFAULTS
    b1, b2 = d["betas"]

    def loss_fn(p):
        ps = framework_params(models, p, jax_ops)
        return jax_ops.cross_entropy(models.logits(cfg, p, tokens, _p=ps), jnp.asarray(labels))

    def step(p, m, v, t):
        loss, g = jax.value_and_grad(loss_fn)(p)
        sumsq = sum(jnp.sum(x * x) for x in jax.tree_util.tree_leaves(g))
        coef = jnp.minimum(1.0, d["max_norm"] / (jnp.sqrt(sumsq) + 1e-6))
        t = t + 1.0
        new_p, new_m, new_v = {}, {}, {}
        for k in p:
            gk = coef * g[k]
            new_m[k] = b1 * m[k] + (1 - b1) * gk
            new_v[k] = b2 * v[k] + (1 - b2) * gk * gk
            mh, vh = new_m[k] / (1 - b1 ** t), new_v[k] / (1 - b2 ** t)
            new_p[k] = p[k] - d["lr"] * (mh / (jnp.sqrt(vh) + d["eps"]) + d["weight_decay"] * p[k])
        return loss, new_p, new_m, new_v, t

    p = {k: jnp.asarray(x, jnp.float32) for k, x in params.items()}
    m = {k: jnp.zeros_like(x) for k, x in p.items()}
    v = {k: jnp.zeros_like(x) for k, x in p.items()}
    t = jnp.float32(0)
    compiled = jax.jit(step, donate_argnums=(0, 1, 2)).lower(p, m, v, t).compile()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    flops = float(cost.get("flops", 0.0))
    loss, p, m, v, t = compiled(p, m, v, t)    # warm-up: the step-1 loss
    first = float(loss)
    start = time.perf_counter()
    for _ in range(steps):
        loss, p, m, v, t = compiled(p, m, v, t)
    loss.block_until_ready()
    return (time.perf_counter() - start) / steps, flops, first


def torch_step(preset, overrides, steps, threads):
    """(seconds per step, step-1 loss) of the same model and update in PyTorch
    eager on CPU, or None when torch is not installed."""
    try:
        import torch
    except ImportError:
        return None
    import torch_ops
    from braid_ref import models, train

    torch.set_num_threads(threads)
    cfg, params, tokens, labels = models.preset_case(preset, seed=0, **overrides)
    d = train.DEFAULTS
    b1, b2 = d["betas"]

    p = {k: torch.tensor(x, dtype=torch.float32, requires_grad=True) for k, x in params.items()}
    m = {k: torch.zeros_like(x) for k, x in p.items()}
    v = {k: torch.zeros_like(x) for k, x in p.items()}
    labels_t = torch.as_tensor(labels, dtype=torch.long)

    def step(t):
        for x in p.values():
            x.grad = None
        loss = torch_ops.cross_entropy(
            models.logits(cfg, p, tokens, _p=framework_params(models, p, torch_ops)), labels_t)
        loss.backward()
        with torch.no_grad():
            sumsq = sum(torch.sum(x.grad * x.grad) for x in p.values())
            coef = torch.clamp(d["max_norm"] / (torch.sqrt(sumsq) + 1e-6), max=1.0)
            for k, x in p.items():
                g = coef * x.grad
                m[k].mul_(b1).add_((1 - b1) * g)
                v[k].mul_(b2).add_((1 - b2) * g * g)
                mh, vh = m[k] / (1 - b1 ** t), v[k] / (1 - b2 ** t)
                x.sub_(d["lr"] * (mh / (torch.sqrt(vh) + d["eps"]) + d["weight_decay"] * x))
        return float(loss.detach())

    first = step(1)   # warm-up: the step-1 loss
    start = time.perf_counter()
    for t in range(2, steps + 2):
        step(t)
    return (time.perf_counter() - start) / steps, first


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"), help="Braid build directory")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--steps", type=int, default=2, help="steps timed (after a warm-up for JAX)")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--peak-gflops", type=float)
    args = ap.parse_args()
    build = pathlib.Path(args.build)
    from braid.presets import build as build_model

    peak, how = (args.peak_gflops, "given") if args.peak_gflops else peak_gflops()
    print(f"machine: {machine.describe()}; peak {peak:.0f} GFLOP/s f32 ({how})")
    import jax
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; braid --cpu-threads {args.threads}")
    try:
        import torch
        print(f"torch {torch.__version__} (eager) with {args.threads} threads")
    except ImportError:
        print("torch: not installed (its columns show -)")
    header = (f"{'model':<11} {'braid s':>8} {'jax s':>7} {'torch s':>7} {'ratio':>6} {'GFLOP':>7} "
              f"{'braid GF/s':>10} {'jax GF/s':>8} {'gemm %':>6} {'gemm GF/s':>9} "
              f"{'gemm %pk':>8} {'init s':>6} {'loss braid / jax / torch':>28}")
    print(header)
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            preset, overrides = MODELS[name]
            model_file = pathlib.Path(tmp) / f"{name}.mlir"
            model_file.write_text(build_model(preset, **overrides))
            trace = pathlib.Path(tmp) / f"{name}.json"
            braid_s, init_s, braid_loss = braid_step(model_file, build, args.steps,
                                                     args.threads, trace)
            gemm_s, gemm_f, _ = gemm_share(trace, args.steps)
            jax_s, flops, jax_loss = jax_step(preset, overrides, args.steps)
            torch_run = torch_step(preset, overrides, args.steps, args.threads)
            torch_s, torch_loss = torch_run if torch_run else (None, None)
            best = min(jax_s, torch_s) if torch_s else jax_s
            print(f"{name:<11} {braid_s:>8.2f} {jax_s:>7.2f} "
                  f"{f'{torch_s:.2f}' if torch_s else '-':>7} {braid_s / best:>6.2f} "
                  f"{flops / 1e9:>7.0f} {flops / braid_s / 1e9:>10.1f} {flops / jax_s / 1e9:>8.1f} "
                  f"{100 * gemm_s / braid_s:>6.0f} {gemm_f / gemm_s / 1e9:>9.1f} "
                  f"{100 * gemm_f / gemm_s / 1e9 / peak:>8.0f} {init_s:>6.2f} "
                  f"{braid_loss:>9.5f} / {jax_loss:.5f}"
                  f"{f' / {torch_loss:.5f}' if torch_loss is not None else ''}", flush=True)


if __name__ == "__main__":
    main()
