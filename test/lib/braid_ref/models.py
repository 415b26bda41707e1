"""Forward pass (loss) of each braid model family, composed from braid_ref.ops.

`cfg` is the `braid.model` dictionary of a module (as Python values, e.g.
`ModelConfig.model_attrs()`), `params` maps parameter names to numpy arrays.
The structure follows python/braid/families.py:

    h = embedding(tokens, tok_embeddings [, pos_embeddings (gpt)])
    for each layer i, for each block <p> of its kind:
        h = h + body_<p>(norm(h, layers.i.<p>_norm))      (pre-norm residual)
    logits = linear(norm(h, norm), output | tok_embeddings^T (tied))
    loss = cross_entropy(logits, labels)

Layer kinds (blocks):  gpt   (attn with biases, GELU-tanh MLP with biases), LayerNorm
                       llama (attn + RoPE/GQA, SwiGLU MLP), RMSNorm
                       mamba (mamba mixer), RMSNorm
                       moe   (attn, top-k SwiGLU MoE), RMSNorm
                       hybrid: per layer, mixer attn|mamba and FFN mlp|moe from the
                       periods/offsets (cross-checked with `layer_pattern`), RMSNorm
A LayerNorm named n has gain n and bias n + "_bias".

Every given parameter must be used exactly as named, so that a naming drift
between the builder and this reference fails loudly. Which weights exist and
how they are initialized is the builder's business: `preset_case` asks the
builder (python/braid) for the parameter declarations and fills them with rng.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from . import ops, rng

__all__ = ["forward", "logits", "layer_blocks", "moe_capacity", "init_params",
           "make_inputs", "param_specs", "preset_case"]


class _Params:
    """Parameter lookup that records which names were used. `ops_ns` is the op
    namespace the model calls (braid_ref.ops by default; braid_ref.autograd
    substitutes a taping one)."""

    def __init__(self, params: dict, cast=None, ops_ns=None):
        self._p = params
        self._cast = cast
        self.used = set()
        self.ops = ops if ops_ns is None else ops_ns

    def __call__(self, name: str) -> np.ndarray:
        if name not in self._p:
            raise KeyError(f"missing parameter {name!r}")
        self.used.add(name)
        a = np.asarray(self._p[name])
        return a.astype(self._cast) if self._cast is not None else a

    def check_all_used(self) -> None:
        unused = sorted(set(self._p) - self.used)
        if unused:
            raise ValueError(f"parameters not used by the model: {', '.join(unused)}")


# --------------------------------------------------------------------------
# layer plan
# --------------------------------------------------------------------------

def layer_blocks(cfg: dict) -> list:
    """The blocks of each layer, e.g. [("attn", "mlp"), ...] or [("mamba",), ...]."""
    fam, n = cfg["family"], cfg["layers"]
    if fam in ("gpt", "llama"):
        return [("attn", "mlp")] * n
    if fam == "mamba":
        return [("mamba",)] * n
    if fam == "moe":
        return [("attn", "moe")] * n
    if fam == "hybrid":
        plan = []
        for i in range(n):
            mixer = "attn" if i % cfg["attn_period"] == cfg.get("attn_offset", 0) else "mamba"
            period = cfg.get("expert_period")
            moe = cfg.get("experts") and period and i % period == cfg.get("expert_offset", 0)
            plan.append((mixer, "moe" if moe else "mlp"))
        if "layer_pattern" in cfg:
            pattern = ["_".join(k) for k in plan]
            if list(cfg["layer_pattern"]) != pattern:
                raise ValueError(f"layer_pattern {cfg['layer_pattern']} disagrees with the "
                                 f"periods/offsets, which give {pattern}")
        return plan
    raise ValueError(f"unknown family {fam!r}")


def moe_capacity(cfg: dict, tokens: int) -> int:
    """C = max(1, ceil(capacity_factor * top_k * tokens / experts)) for a capacity
    group of `tokens`, exact on the decimal value of capacity_factor; checked
    against cfg["capacity"] if given."""
    cf = Fraction(repr(float(cfg.get("capacity_factor", 1.0))))
    c = max(1, math.ceil(cf * cfg["top_k"] * tokens / cfg["experts"]))
    if "capacity" in cfg and cfg["capacity"] != c:
        raise ValueError(f"capacity {cfg['capacity']} in the config, expected {c}")
    return c


# --------------------------------------------------------------------------
# blocks
# --------------------------------------------------------------------------

def _norm(cfg: dict, p: _Params, x: np.ndarray, name: str) -> np.ndarray:
    ops = p.ops
    eps = cfg.get("norm_eps", 1e-5)
    kind = cfg.get("norm", "layer_norm" if cfg["family"] == "gpt" else "rms_norm")
    if kind == "layer_norm":
        return ops.layer_norm(x, p(name), p(name + "_bias"), eps)
    if kind == "rms_norm":
        return ops.rms_norm(x, p(name), eps)
    raise ValueError(f"unknown norm {kind!r}")


def _attn(cfg: dict, p: _Params, h: np.ndarray, pre: str) -> np.ndarray:
    ops = p.ops
    bias = cfg["family"] == "gpt"
    heads = cfg["heads"]
    kv_heads = cfg.get("kv_heads", heads)
    hd = cfg.get("head_dim", cfg["hidden"] // heads)
    lead = h.shape[:-1]
    qkv = []
    for n, nh in (("q", heads), ("k", kv_heads), ("v", kv_heads)):
        proj = ops.linear(h, p(f"{pre}.w{n}"), p(f"{pre}.b{n}") if bias else None)
        qkv.append(ops.reshape(proj, lead + (nh, hd)))
    o = ops.attention(*qkv, causal=True, rope_theta=cfg.get("rope_theta"))
    o = ops.reshape(o, lead + (heads * hd,))
    return ops.linear(o, p(f"{pre}.wo"), p(f"{pre}.bo") if bias else None)


def _mlp(cfg: dict, p: _Params, h: np.ndarray, pre: str) -> np.ndarray:
    ops = p.ops
    if cfg["family"] == "gpt":   # act(x Wu + bu) Wd + bd, GELU tanh
        up = ops.linear(h, p(f"{pre}.w_up"), p(f"{pre}.b_up"))
        return ops.linear(ops.gelu(up, approximate=True), p(f"{pre}.w_down"), p(f"{pre}.b_down"))
    gate = ops.linear(h, p(f"{pre}.w_gate"))   # SwiGLU, no biases
    up = ops.linear(h, p(f"{pre}.w_up"))
    return ops.linear(ops.glu("silu", gate, up), p(f"{pre}.w_down"))


def _moe(cfg: dict, p: _Params, h: np.ndarray, pre: str) -> np.ndarray:
    ops = p.ops
    shape = h.shape
    t = math.prod(shape[:-1])
    flat = ops.reshape(h, (t, shape[-1]))
    w, idx = ops.router(ops.linear(flat, p(f"{pre}.router")), cfg["top_k"],
                        normalize=bool(cfg.get("router_normalize", True)))
    # Capacity per group of moe_group_size consecutive tokens (default: one
    # sequence), so that a token's fate depends on its group alone.
    size = int(cfg.get("moe_group_size", shape[-2]))
    cap = moe_capacity(cfg, size)
    d = ops.dispatch(flat, idx, cfg["experts"], cap, t // size)
    e = ops.expert_ffn("silu", d, p(f"{pre}.w_up"), p(f"{pre}.w_down"), p(f"{pre}.w_gate"))
    return ops.reshape(ops.combine(e, w, idx, t // size), shape)


def _mamba(cfg: dict, p: _Params, h: np.ndarray, pre: str) -> np.ndarray:
    ops = p.ops
    x = ops.linear(h, p(f"{pre}.in_x"))
    z = ops.linear(h, p(f"{pre}.in_z"))
    x = ops.silu(ops.conv1d(x, p(f"{pre}.conv_w"), p(f"{pre}.conv_b")))
    dt = ops.linear(x, p(f"{pre}.x_dt"))
    b = ops.linear(x, p(f"{pre}.x_B"))
    c = ops.linear(x, p(f"{pre}.x_C"))
    dt = ops.linear(dt, p(f"{pre}.dt_proj"), p(f"{pre}.dt_bias"))
    a = ops.neg(ops.exp(p(f"{pre}.A_log")))                    # A = -exp(A_log)
    y = ops.selective_scan(x, dt, a, b, c, p(f"{pre}.D"), delta_softplus=True)
    y = ops.glu("silu", z, y)                                  # y * silu(z)
    return ops.linear(y, p(f"{pre}.out_proj"))


_BODIES = {"attn": _attn, "mlp": _mlp, "moe": _moe, "mamba": _mamba}


# --------------------------------------------------------------------------
# model
# --------------------------------------------------------------------------

def logits(cfg: dict, params: dict, tokens, compute_dtype=None, _p=None,
           record: dict | None = None, ops_ns=None) -> np.ndarray:
    """Logits [B, S, V] of the model. `compute_dtype` (e.g. np.float64) casts
    every parameter first; by default the parameters' own dtype is kept.
    `record`, when given, receives the activations the builder names in the
    step function: h0 (embedding), h1..hL (layer outputs), logits. `ops_ns`
    replaces braid_ref.ops as the namespace of the ops called (see _Params)."""
    p = _p or _Params(params, compute_dtype, ops_ns)
    ops = p.ops
    tokens = np.asarray(tokens)
    if tokens.shape != (cfg["batch"], cfg["seq"]):
        raise ValueError(f"tokens {tokens.shape} must be [{cfg['batch']}, {cfg['seq']}]")
    wte = p("tok_embeddings")
    record = {} if record is None else record
    h = ops.embedding(tokens, wte, p("pos_embeddings") if cfg["family"] == "gpt" else None)
    record["h0"] = h
    for i, blocks in enumerate(layer_blocks(cfg)):
        for blk in blocks:
            pre = f"layers.{i}.{blk}"
            h = ops.add(h, _BODIES[blk](cfg, p, _norm(cfg, p, h, pre + "_norm"), pre))
        record[f"h{i + 1}"] = h
    h = _norm(cfg, p, h, "norm")
    if cfg.get("tied_embeddings", False):
        out = ops.linear(h, wte, transpose_weight=True)
    else:
        out = ops.linear(h, p("output"))
    record["logits"] = out
    return out


def forward(cfg: dict, params: dict, tokens, labels, compute_dtype=None,
            ops_ns=None) -> np.ndarray:
    """The loss (0-d array) of the step function; every parameter must be used."""
    p = _Params(params, compute_dtype, ops_ns)
    loss = p.ops.cross_entropy(logits(cfg, params, tokens, _p=p), labels)
    p.check_all_used()
    return loss


# --------------------------------------------------------------------------
# initialization and inputs
# --------------------------------------------------------------------------

def init_params(specs, seed: int, dtype: str = "f32", exact: bool = False) -> dict:
    """{name: array} from [(name, shape, init kind, std)], std None unless normal;
    a fifth element, if present, is the element type ("f32", "bf16", ...)."""
    out = {}
    for spec in specs:
        name, shape, kind, std = spec[:4]
        dt = spec[4] if len(spec) > 4 else dtype
        out[name] = rng.param_values(seed, name, tuple(shape), kind, std, dt, exact=exact)
    return out


def make_inputs(cfg: dict, seed: int) -> tuple:
    """(tokens, labels) int32 [B, S], uniform in [0, vocab_unpadded or vocab)
    from the streams "tokens" and "labels" (see rng's spec)."""
    n = cfg.get("vocab_unpadded", cfg["vocab"])
    numel = cfg["batch"] * cfg["seq"]
    shape = (cfg["batch"], cfg["seq"])
    return tuple(rng.uniform_int(seed, s, n, 0, numel).astype(np.int32).reshape(shape)
                 for s in ("tokens", "labels"))


def _python_braid():
    """Import the builder (python/braid, pure Python), from PYTHONPATH or the tree."""
    try:
        import braid.families  # noqa: F401
    except ImportError:
        import os
        import sys
        here = os.path.dirname(os.path.abspath(__file__))
        sys.path.insert(0, os.path.join(here, "..", "..", "..", "python"))
        import braid.families  # noqa: F401
    import braid
    return braid


def param_specs(config) -> list:
    """[(name, shape, init kind, std, dtype)] of the builder's module for a
    braid ModelConfig (declaration order)."""
    braid = _python_braid()
    module = braid.families.build_model(config)
    return [(p.name, tuple(p.type.shape), p.init.kind, p.init.std, p.type.dtype)
            for p in module.params.values()]


def preset_case(name: str, seed: int = 0, exact: bool = False, **overrides) -> tuple:
    """(cfg, params, tokens, labels) of builder preset `name` with overrides."""
    _python_braid()
    from braid.presets import preset
    config = preset(name, **overrides)
    cfg = config.model_attrs()
    params = init_params(param_specs(config), seed, exact=exact)
    tokens, labels = make_inputs(cfg, seed)
    return cfg, params, tokens, labels
