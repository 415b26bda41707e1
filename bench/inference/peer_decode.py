#!/usr/bin/env python3
"""The peer of bench/inference: the same model's decode step in JAX on CPU
(or, when JAX is not installed, in numpy, labelled as a stand-in), with the
same parameter shapes as Braid's module (braid_ref.models.param_specs of
the same preset and overrides), f32, random weights:

  python3 peer_decode.py CONFIG_JSON
  python3 peer_decode.py --check     # the peer against braid_ref's forward

(BRAID_BENCH_PEER=numpy: numpy even where JAX is installed.)
CONFIG_JSON: {"preset": ..., "overrides": {...}, "batch": B, "prompt": P,
"steps": N}. The KV cache (Llama) holds P + N rows per sequence; the prompt
rows are filled with random keys and values (prefill is not timed), then N
decode steps run at positions P, P+1, ... each taking the previous step's
greedy token. A Llama step attends over the whole fixed-shape cache with
rows past the position masked (static shapes, as JAX decoders are written);
a Mamba step carries the conv state [B, E, K] and SSM state [B, E, N].
Prints one JSON line {"peer": ..., "median_ms": ..., "p99_ms": ...} with
each step's time after one warm-up step (JAX: the compiled step, timed to
block_until_ready). run.py starts it under taskset so that it uses the
same cores as Braid's --cpu-threads.
"""

import json
import math
import os
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
sys.path[:0] = [str(ROOT / "python"), str(ROOT / "test" / "lib")]

try:
    if os.environ.get("BRAID_BENCH_PEER") == "numpy":   # run.py --peer numpy
        raise ImportError("numpy asked for")
    import jax
    import jax.numpy as xp
    PEER = f"jax {jax.__version__} (jit)"
except ImportError:  # the stand-in named in the table
    jax = None
    xp = np
    PEER = f"numpy {np.__version__} (stand-in)"


def random_params(specs, seed=0):
    """{name: f32 array}: normal(std) for weights, ones/zeros as declared,
    Mamba's A_log as S4D-real (log 1..N) and dt_bias as softplus^-1(0.01)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape, kind, std, _ in specs:
        if kind == "normal":
            a = rng.standard_normal(shape, dtype=np.float32) * np.float32(std)
        elif kind == "ones":
            a = np.ones(shape, np.float32)
        elif kind == "s4d_real":
            a = np.broadcast_to(np.log(np.arange(1, shape[-1] + 1, dtype=np.float32)),
                                shape).copy()
        elif kind == "mamba_dt":
            a = np.full(shape, math.log(math.expm1(0.01)), np.float32)
        else:
            a = np.zeros(shape, np.float32)
        out[name] = xp.asarray(a)
    return out


def rms_norm(x, gamma, eps):
    return x / xp.sqrt(xp.mean(x * x, axis=-1, keepdims=True) + eps) * gamma


def silu(x):
    return x / (1 + xp.exp(-x))


def set_row(cache, pos, rows):
    """cache [B, C, H, D] with row `pos` set to rows [B, H, D]."""
    if jax is not None:
        return cache.at[:, pos].set(rows)
    cache[:, pos] = rows
    return cache


def rope(x, pos, theta):
    """Rotate-half RoPE of x [B, H, D] at position pos."""
    half = x.shape[-1] // 2
    freq = theta ** (-xp.arange(half, dtype=xp.float32) * 2 / x.shape[-1])
    ang = pos * freq
    cos, sin = xp.cos(ang), xp.sin(ang)
    x1, x2 = x[..., :half], x[..., half:]
    return xp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def llama_step(cfg, p, caches, tokens, pos):
    """One decode step: tokens [B] at position pos -> (logits [B, V], caches)."""
    heads, kv, hd = cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
    eps, theta = cfg["norm_eps"], cfg["rope_theta"]
    b = tokens.shape[0]
    h = p["tok_embeddings"][tokens]
    new_caches = []
    for i in range(cfg["layers"]):
        pre = f"layers.{i}."
        x = rms_norm(h, p[pre + "attn_norm"], eps)
        q = rope((x @ p[pre + "attn.wq"]).reshape(b, heads, hd), pos, theta)
        k = rope((x @ p[pre + "attn.wk"]).reshape(b, kv, hd), pos, theta)
        v = (x @ p[pre + "attn.wv"]).reshape(b, kv, hd)
        kc, vc = caches[i]
        kc, vc = set_row(kc, pos, k), set_row(vc, pos, v)
        new_caches.append((kc, vc))
        qg = q.reshape(b, kv, heads // kv, hd)
        scores = xp.einsum("bkgd,btkd->bkgt", qg, kc) / math.sqrt(hd)
        later = xp.arange(kc.shape[1]) > pos
        scores = xp.where(later, -xp.inf, scores)
        scores = scores - xp.max(scores, axis=-1, keepdims=True)
        w = xp.exp(scores)
        w = w / xp.sum(w, axis=-1, keepdims=True)
        o = xp.einsum("bkgt,btkd->bkgd", w, vc).reshape(b, heads * hd)
        h = h + o @ p[pre + "attn.wo"]
        x = rms_norm(h, p[pre + "mlp_norm"], eps)
        act = silu(x @ p[pre + "mlp.w_gate"]) * (x @ p[pre + "mlp.w_up"])
        h = h + act @ p[pre + "mlp.w_down"]
    logits = rms_norm(h, p["norm"], eps) @ p["output"]
    return logits, new_caches


def mamba_step(cfg, p, states, tokens, pos):
    """One decode step of a Mamba: the conv window and the SSM state carried."""
    del pos
    eps = cfg["norm_eps"]
    h = p["tok_embeddings"][tokens]
    new_states = []
    for i in range(cfg["layers"]):
        pre = f"layers.{i}.mamba"
        conv, ssm = states[i]
        x = rms_norm(h, p[pre + "_norm"], eps)
        xi, z = x @ p[pre + ".in_x"], x @ p[pre + ".in_z"]                 # [B, E]
        conv = xp.concatenate([conv[:, :, 1:], xi[:, :, None]], axis=-1)    # [B, E, K]
        xc = silu(xp.sum(conv * p[pre + ".conv_w"], axis=-1) + p[pre + ".conv_b"])
        dt = (xc @ p[pre + ".x_dt"]) @ p[pre + ".dt_proj"] + p[pre + ".dt_bias"]
        dt = xp.logaddexp(0.0, dt)[:, :, None]                              # softplus
        bm, cm = xc @ p[pre + ".x_B"], xc @ p[pre + ".x_C"]                 # [B, N]
        a = -xp.exp(p[pre + ".A_log"])                                      # [E, N]
        ssm = xp.exp(dt * a) * ssm + dt * bm[:, None, :] * xc[:, :, None]
        y = xp.einsum("ben,bn->be", ssm, cm) + p[pre + ".D"] * xc
        h = h + (y * silu(z)) @ p[pre + ".out_proj"]
        new_states.append((conv, ssm))
    logits = rms_norm(h, p["norm"], eps) @ p["tok_embeddings"].T
    return logits, new_states


def initial_state(cfg, batch, rows, rng):
    if cfg["family"] == "mamba":
        e = cfg["expand"] * cfg["hidden"]
        return [(xp.zeros((batch, e, cfg["d_conv"]), xp.float32),
                 xp.zeros((batch, e, cfg["d_state"]), xp.float32)) for _ in range(cfg["layers"])]
    shape = (batch, rows, cfg["kv_heads"], cfg["head_dim"])
    return [(xp.asarray(rng.standard_normal(shape, dtype=np.float32)),
             xp.asarray(rng.standard_normal(shape, dtype=np.float32)))
            for _ in range(cfg["layers"])]


def check(preset_name):
    """Largest relative difference of the peer's decode logits, stepped from
    position 0, from braid_ref.models.logits of the whole sequence (the same
    weights): the peer computes the model Braid compiles."""
    from braid.presets import preset
    from braid_ref import models
    config = preset(preset_name)
    cfg = model_cfg(config)
    params = random_params(models.param_specs(config))
    host = {k: np.asarray(v) for k, v in params.items()}
    tokens, _ = models.make_inputs(cfg, 0)
    want = models.logits(cfg, host, tokens)
    rng = np.random.default_rng(1)
    state = initial_state(cfg, cfg["batch"], cfg["seq"], rng)
    body = llama_step if cfg["family"] == "llama" else mamba_step
    worst = 0.0
    for t in range(cfg["seq"]):
        logits, state = body(cfg, params, state, xp.asarray(tokens[:, t]), xp.int32(t))
        got = np.asarray(logits)
        worst = max(worst, float(np.max(np.abs(got - want[:, t])) / np.max(np.abs(want[:, t]))))
    return worst


def model_cfg(config):
    cfg = config.model_attrs()
    cfg.setdefault("norm_eps", 1e-5)
    if cfg["family"] == "llama":
        cfg.setdefault("head_dim", cfg["hidden"] // cfg["heads"])
        cfg.setdefault("kv_heads", cfg["heads"])
    return cfg


def main():
    if sys.argv[1] == "--check":
        for name in ("llama-tiny", "mamba-tiny"):
            print(f"{PEER} {name}: decode against braid_ref forward, worst relative "
                  f"difference {check(name):.2e}")
        return
    job = json.loads(sys.argv[1])
    from braid.presets import preset
    from braid_ref import models
    config = preset(job["preset"], **job["overrides"])
    cfg = model_cfg(config)
    b, prompt, steps = job["batch"], job["prompt"], job["steps"]
    params = random_params(models.param_specs(config))
    rng = np.random.default_rng(1)
    state = initial_state(cfg, b, prompt + steps, rng)
    body = llama_step if cfg["family"] == "llama" else mamba_step

    def step(p, s, tokens, pos):
        logits, s = body(cfg, p, s, tokens, pos)
        return xp.argmax(logits, axis=-1).astype(xp.int32), s

    if jax is not None:
        step = jax.jit(step, donate_argnums=(1,))
    tokens = xp.asarray(rng.integers(0, cfg["vocab"], b, dtype=np.int32))
    times = []
    for t in range(-1, steps):                       # t = -1: compile and warm up
        start = time.perf_counter()
        tokens, state = step(params, state, tokens, xp.int32(prompt + max(t, 0)))
        if jax is not None:
            tokens.block_until_ready()
        if t >= 0:
            times.append(time.perf_counter() - start)
    times.sort()
    print(json.dumps({"peer": PEER, "median_ms": 1e3 * times[len(times) // 2],
                      "p99_ms": 1e3 * times[min(len(times) - 1, int(0.99 * len(times)))]}))


if __name__ == "__main__":
    main()
