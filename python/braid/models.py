"""Model families, published presets and the command line of the braid model builder.

    PYTHONPATH=python python3 -m braid.models llama-tiny > model.mlir
    PYTHONPATH=python python3 -m braid.models llama3-8b --layers 2 --seq 512
    PYTHONPATH=python python3 -m braid.models --list

A model is built from a `ModelConfig`. Every family is a function
(`build_gpt`, `build_llama`, `build_mamba`, `build_moe`, `build_hybrid`) that
picks the kind of each layer and hands the plan to `build_decoder`, which
declares the parameters (`tok_embeddings`, `layers.<i>.<...>`, `norm`,
`output`), emits one private func.func per layer kind and the public
`@step(tokens, labels) -> loss`, which calls the layer functions once per layer.

A layer kind is a list of residual blocks (attention, MLP, MoE, Mamba mixer);
each block declares its weights and emits its ops, so families differ only in
which blocks they stack and with which options.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Sequence

from .ir import Function, Init, Module, ONES, Value, ZEROS, normal, tensor

__all__ = [
    "ModelConfig", "PRESETS", "FAMILIES", "build", "build_model", "build_decoder",
    "build_gpt", "build_llama", "build_mamba", "build_moe", "build_hybrid",
    "config_from_attrs", "moe_capacity", "main",
]


# ==========================================================================
# Configuration
# ==========================================================================

@dataclass
class ModelConfig:
    """Hyper-parameters of one model. Fields left at None are derived from the
    others by `resolved()` (e.g. head_dim = hidden / heads), so overriding
    `hidden` on the command line re-derives them. Fields that do not apply to a
    family are ignored by it and left out of its `braid.model` dictionary."""
    name: str
    family: str                      # gpt | llama | mamba | moe | hybrid
    vocab: int                       # before padding to pad_vocab_multiple
    hidden: int
    layers: int
    seq: int
    batch: int = 1
    dtype: str = "f32"
    description: str = ""
    # attention
    heads: int | None = None
    kv_heads: int | None = None      # None: = heads (no GQA)
    head_dim: int | None = None      # None: hidden // heads
    rope_theta: float | None = None  # None: no RoPE
    max_positions: int | None = None # rows of GPT's learned position table; None: seq
    # dense MLP
    ffn: int | None = None           # None: 4 * hidden (GPT)
    # mixture of experts
    experts: int | None = None
    top_k: int | None = None
    capacity_factor: float = 1.0
    router_normalize: bool = True    # renormalise the top-k probabilities (Mixtral)
    # Mamba
    d_state: int = 16
    d_conv: int = 4
    expand: int = 2
    dt_rank: int | None = None       # None: ceil(hidden / 16)
    # hybrid (Jamba): layer i is attention iff i % attn_period == attn_offset,
    # and its FFN is MoE iff i % expert_period == expert_offset
    attn_period: int | None = None
    attn_offset: int = 0
    expert_period: int | None = None
    expert_offset: int = 0
    # common
    norm_eps: float = 1e-5
    tied_embeddings: bool = False
    pad_vocab_multiple: int = 1
    init_std: float = 0.02
    scale_residual_init: bool = True # residual output projections: std / sqrt(#residual blocks)

    # ---- derived quantities -------------------------------------------------
    @property
    def padded_vocab(self) -> int:
        m = self.pad_vocab_multiple
        return -(-self.vocab // m) * m

    @property
    def d_inner(self) -> int:
        return self.expand * self.hidden

    @property
    def tokens(self) -> int:
        return self.batch * self.seq

    @property
    def capacity(self) -> int:
        return moe_capacity(self.capacity_factor, self.top_k, self.tokens, self.experts)

    def resolved(self) -> "ModelConfig":
        """A copy with the derived fields filled in, validated for its family."""
        fam = FAMILIES.get(self.family)
        if fam is None:
            raise ValueError(f"unknown family {self.family!r}; known: {', '.join(FAMILIES)}")
        c = dataclasses.replace(self)
        for key in ("vocab", "hidden", "layers", "seq", "batch", "pad_vocab_multiple"):
            if getattr(c, key) < 1:
                raise ValueError(f"{c.name}: {key} must be positive")
        if c.heads is not None:
            if c.kv_heads is None:
                c.kv_heads = c.heads
            if c.head_dim is None:
                if c.hidden % c.heads:
                    raise ValueError(f"{c.name}: hidden {c.hidden} not divisible by "
                                     f"{c.heads} heads (give head_dim)")
                c.head_dim = c.hidden // c.heads
        if c.ffn is None and fam.default_ffn_mult:
            c.ffn = fam.default_ffn_mult * c.hidden
        if c.max_positions is None:
            c.max_positions = c.seq
        if c.dt_rank is None:
            c.dt_rank = math.ceil(c.hidden / 16)
        for key in fam.required:
            if getattr(c, key) is None:
                raise ValueError(f"{c.name}: family {c.family} needs {key}")
        if c.heads is not None and c.heads % c.kv_heads:
            raise ValueError(f"{c.name}: {c.heads} heads not a multiple of {c.kv_heads} kv heads")
        if c.top_k is not None and c.experts is not None and not 1 <= c.top_k <= c.experts:
            raise ValueError(f"{c.name}: top_k {c.top_k} must be in [1, experts={c.experts}]")
        if c.attn_period is not None and not 0 <= c.attn_offset < c.attn_period:
            raise ValueError(f"{c.name}: attn_offset must be in [0, attn_period)")
        if c.expert_period is not None and not 0 <= c.expert_offset < c.expert_period:
            raise ValueError(f"{c.name}: expert_offset must be in [0, expert_period)")
        if c.max_positions < c.seq:
            raise ValueError(f"{c.name}: max_positions {c.max_positions} < seq {c.seq}")
        if c.dtype not in ("f32", "bf16", "f16"):
            raise ValueError(f"{c.name}: dtype must be f32, bf16 or f16")
        return c

    def model_attrs(self) -> dict:
        """The `braid.model` dictionary: every hyper-parameter the family uses
        (plus a few derived sizes for convenience: d_inner, capacity, layer_pattern)."""
        c = self.resolved()
        fam = FAMILIES[c.family]
        attrs = {"name": c.name, "family": c.family, "vocab": c.padded_vocab}
        if c.pad_vocab_multiple > 1:
            attrs["vocab_unpadded"] = c.vocab
            attrs["pad_vocab_multiple"] = c.pad_vocab_multiple
        attrs.update(hidden=c.hidden, layers=c.layers, seq=c.seq, batch=c.batch, dtype=c.dtype)
        for key in fam.attr_keys:
            value = getattr(c, key)
            if value is not None:
                attrs[key] = value
        attrs.update(norm=fam.norm.kind, norm_eps=c.norm_eps,
                     tied_embeddings=c.tied_embeddings, init_std=c.init_std,
                     scale_residual_init=c.scale_residual_init)
        if c.family == "hybrid":
            attrs["layer_pattern"] = [k.name[:-len("_layer")] for k in hybrid_plan(c)]
        return attrs


def moe_capacity(capacity_factor: float, top_k: int, tokens: int, experts: int) -> int:
    """Expert capacity C = ceil(capacity_factor * top_k * tokens / experts),
    computed exactly on the decimal value of capacity_factor."""
    return max(1, math.ceil(Fraction(repr(float(capacity_factor))) * top_k * tokens / experts))


# Keys of `braid.model` that are derived, not inputs (ignored by config_from_attrs).
_DERIVED_ATTRS = ("d_inner", "capacity", "layer_pattern", "norm", "vocab_unpadded")


def config_from_attrs(attrs: dict) -> ModelConfig:
    """Rebuild a ModelConfig from a `braid.model` dictionary (as Python values)."""
    fields = {f.name for f in dataclasses.fields(ModelConfig)}
    kw = {k: v for k, v in attrs.items() if k in fields and k not in _DERIVED_ATTRS}
    if "vocab_unpadded" in attrs:
        kw["vocab"] = attrs["vocab_unpadded"]
    return ModelConfig(**kw)


# ==========================================================================
# Building blocks
# ==========================================================================

@dataclass(frozen=True)
class ParamSpec:
    """A weight of a layer, named relative to the layer (e.g. "attn.wq")."""
    name: str
    shape: tuple
    init: Init

    @property
    def arg_name(self) -> str:
        """Name of the layer function's argument that carries this weight."""
        return self.name.replace(".", "_")


@dataclass(frozen=True)
class Inits:
    """Initializers shared by all blocks of one model."""
    std: float
    residual_std: float  # for projections that write into the residual stream

    @property
    def weight(self) -> Init:
        return normal(self.std)

    @property
    def residual(self) -> Init:
        return normal(self.residual_std)


class Norm:
    """A normalisation: its parameters (named from a prefix) and its op."""
    kind = ""

    def params(self, prefix: str, cfg: ModelConfig) -> list:
        raise NotImplementedError

    def apply(self, f: Function, x: Value, w: dict, prefix: str, cfg: ModelConfig) -> Value:
        raise NotImplementedError


class RMSNorm(Norm):
    kind = "rms_norm"

    def params(self, prefix, cfg):
        return [ParamSpec(prefix, (cfg.hidden,), ONES)]

    def apply(self, f, x, w, prefix, cfg):
        return f.rms_norm(x, w[prefix], cfg.norm_eps, name=prefix + "ed")


class LayerNorm(Norm):
    """Gain `<prefix>` and bias `<prefix>_bias`."""
    kind = "layer_norm"

    def params(self, prefix, cfg):
        return [ParamSpec(prefix, (cfg.hidden,), ONES),
                ParamSpec(prefix + "_bias", (cfg.hidden,), ZEROS)]

    def apply(self, f, x, w, prefix, cfg):
        return f.layer_norm(x, w[prefix], w[prefix + "_bias"], cfg.norm_eps,
                            name=prefix + "ed")


class Block:
    """A pre-norm residual block: x + body(norm(x)). Weights are named
    `<prefix>_norm` and `<prefix>.<weight>`."""
    prefix = ""

    def __init__(self, norm: Norm):
        self.norm = norm

    def params(self, cfg: ModelConfig, init: Inits) -> list:
        return self.norm.params(f"{self.prefix}_norm", cfg) + \
            [ParamSpec(f"{self.prefix}.{n}", tuple(s), i) for n, s, i in self.weights(cfg, init)]

    def weights(self, cfg: ModelConfig, init: Inits) -> list:
        """(name, shape, init) of the block's weights besides the norm."""
        raise NotImplementedError

    def emit(self, f: Function, cfg: ModelConfig, x: Value, w: dict) -> Value:
        h = self.norm.apply(f, x, w, f"{self.prefix}_norm", cfg)
        local = {k[len(self.prefix) + 1:]: v for k, v in w.items()
                 if k.startswith(self.prefix + ".")}
        return f.add(x, self.body(f, cfg, h, local), name=f"{self.prefix}_out")

    def body(self, f: Function, cfg: ModelConfig, h: Value, w: dict) -> Value:
        raise NotImplementedError


class Attention(Block):
    """Multi-head causal self-attention with separate q/k/v/o projections.
    GQA when kv_heads < heads; RoPE when cfg.rope_theta is set; optional biases."""
    prefix = "attn"

    def __init__(self, norm: Norm, bias: bool):
        super().__init__(norm)
        self.bias = bias

    def weights(self, cfg, init):
        h, q_dim, kv_dim = cfg.hidden, cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
        ws = [("wq", (h, q_dim), init.weight), ("wk", (h, kv_dim), init.weight),
              ("wv", (h, kv_dim), init.weight), ("wo", (q_dim, h), init.residual)]
        if self.bias:
            ws += [("bq", (q_dim,), ZEROS), ("bk", (kv_dim,), ZEROS),
                   ("bv", (kv_dim,), ZEROS), ("bo", (h,), ZEROS)]
        return ws

    def body(self, f, cfg, h, w):
        lead = h.shape[:-1]  # (B, S)
        heads = {"q": cfg.heads, "k": cfg.kv_heads, "v": cfg.kv_heads}
        qkv = []
        for n in "qkv":
            proj = f.linear(h, w["w" + n], bias=w.get("b" + n), name=n)
            qkv.append(f.reshape(proj, lead + (heads[n], cfg.head_dim), name=n + "_heads"))
        o = f.attention(*qkv, causal=True, rope_theta=cfg.rope_theta, name="attn")
        o = f.reshape(o, lead + (cfg.heads * cfg.head_dim,), name="attn_flat")
        return f.linear(o, w["wo"], bias=w.get("bo"), name="attn_proj")


class MLP(Block):
    """Dense feed-forward: SwiGLU (gated, no bias: w_gate, w_up, w_down) or
    GPT's act(x @ w_up + b_up) @ w_down + b_down."""
    prefix = "mlp"

    def __init__(self, norm: Norm, gated: bool, bias: bool, act: str):
        super().__init__(norm)
        self.gated, self.bias, self.act = gated, bias, act

    def weights(self, cfg, init):
        h, ff = cfg.hidden, cfg.ffn
        ws = [("w_gate", (h, ff), init.weight)] if self.gated else []
        ws += [("w_up", (h, ff), init.weight)]
        if self.bias:
            ws += [("b_up", (ff,), ZEROS)]
        ws += [("w_down", (ff, h), init.residual)]
        if self.bias:
            ws += [("b_down", (h,), ZEROS)]
        return ws

    def body(self, f, cfg, h, w):
        gate = f.linear(h, w["w_gate"], name="gate") if self.gated else None
        up = f.linear(h, w["w_up"], bias=w.get("b_up"), name="up")
        if self.gated:
            act = f.glu(self.act, gate, up, name="act")
        elif self.act == "gelu_tanh":
            act = f.gelu(up, tanh=True, name="act")
        else:
            act = getattr(f, self.act)(up, name="act")
        return f.linear(act, w["w_down"], bias=w.get("b_down"), name="down")


class MoE(Block):
    """Top-k routed mixture of SwiGLU experts (Mixtral): tokens are flattened to
    [T,H], routed, dispatched to [E,C,H] with capacity C, run through the
    experts and combined back."""
    prefix = "moe"

    def weights(self, cfg, init):
        h, ff, e = cfg.hidden, cfg.ffn, cfg.experts
        return [("router", (h, e), init.weight),
                ("w_gate", (e, h, ff), init.weight),
                ("w_up", (e, h, ff), init.weight),
                ("w_down", (e, ff, h), init.residual)]

    def body(self, f, cfg, h, w):
        shape = h.shape
        tokens = math.prod(shape[:-1])
        flat = f.reshape(h, (tokens, cfg.hidden), name="flat")
        logits = f.linear(flat, w["router"], name="router_logits")
        weights, idx = f.router(logits, cfg.top_k, normalize=cfg.router_normalize, name="route")
        capacity = moe_capacity(cfg.capacity_factor, cfg.top_k, tokens, cfg.experts)
        d = f.dispatch(flat, idx, cfg.experts, capacity, name="dispatched")
        e = f.expert_ffn("silu", d, w["w_up"], w["w_down"], gate=w["w_gate"], name="experts")
        y = f.combine(e, weights, idx, name="combined")
        return f.reshape(y, shape, name="moe_y")


class Mamba(Block):
    """Mamba-1 mixer. in_proj is split into in_x and in_z, x_proj into x_dt,
    x_B and x_C; A = -exp(A_log)."""
    prefix = "mamba"

    def weights(self, cfg, init):
        h, di, r, n = cfg.hidden, cfg.d_inner, cfg.dt_rank, cfg.d_state
        # A_log zeros (A = -1) and D ones stand in for Mamba's exact init
        # (A_log = log(1..N), dt_bias = softplus^-1(dt)), which the runtime adds.
        return [("in_x", (h, di), init.weight), ("in_z", (h, di), init.weight),
                ("conv_w", (di, cfg.d_conv), init.weight), ("conv_b", (di,), ZEROS),
                ("x_dt", (di, r), init.weight), ("x_B", (di, n), init.weight),
                ("x_C", (di, n), init.weight),
                ("dt_proj", (r, di), init.weight), ("dt_bias", (di,), ZEROS),
                ("A_log", (di, n), ZEROS), ("D", (di,), ONES),
                ("out_proj", (di, h), init.residual)]

    def body(self, f, cfg, h, w):
        x = f.linear(h, w["in_x"], name="x_in")
        z = f.linear(h, w["in_z"], name="z")
        x = f.conv1d(x, w["conv_w"], bias=w["conv_b"], name="x_conv")
        x = f.silu(x, name="x_act")
        dt = f.linear(x, w["x_dt"], name="dt_low")
        b = f.linear(x, w["x_B"], name="B")
        c = f.linear(x, w["x_C"], name="C")
        dt = f.linear(dt, w["dt_proj"], bias=w["dt_bias"], name="dt")
        a = f.neg(f.exp(w["A_log"], name="A_exp"), name="A")
        y = f.selective_scan(x, dt, a, b, c, w["D"], delta_softplus=True, name="y")
        y = f.glu("silu", z, y, name="y_gated")
        return f.linear(y, w["out_proj"], name="mamba_proj")


@dataclass(frozen=True)
class LayerKind:
    """A kind of layer: becomes one private func.func `@<name>`."""
    name: str
    blocks: tuple

    def params(self, cfg: ModelConfig, init: Inits) -> list:
        return [p for b in self.blocks for p in b.params(cfg, init)]

    def emit(self, module: Module, cfg: ModelConfig, init: Inits) -> Function:
        specs = self.params(cfg, init)
        act = tensor((cfg.batch, cfg.seq, cfg.hidden), cfg.dtype)
        f = module.function(self.name, [("x", act)] +
                            [(p.arg_name, tensor(p.shape, cfg.dtype)) for p in specs],
                            private=True)
        w = {p.name: a for p, a in zip(specs, f.args[1:])}
        x = f.args[0]
        for block in self.blocks:
            x = block.emit(f, cfg, x, w)
        f.ret(x)
        return f


# ==========================================================================
# The generic decoder builder
# ==========================================================================

def build_decoder(cfg: ModelConfig, plan: Sequence[LayerKind], final_norm: Norm,
                  learned_positions: bool = False) -> Module:
    """Token embedding (+ learned positions), the layers of `plan` (one
    LayerKind per layer), final norm, LM head (tied or `output`) and loss."""
    assert len(plan) == cfg.layers
    dt, hidden, vocab = cfg.dtype, cfg.hidden, cfg.padded_vocab
    # GPT-2-style scaled init of the projections that write into the residual
    # stream: std / sqrt(number of residual blocks), rounded to 7 significant digits
    # so that it prints as a short `%e` float.
    residual_blocks = sum(len(k.blocks) for k in plan)
    residual_std = cfg.init_std
    if cfg.scale_residual_init:
        residual_std = float("%.6e" % (cfg.init_std / math.sqrt(residual_blocks)))
    init = Inits(cfg.init_std, residual_std)
    m = Module(cfg.model_attrs())

    # ---- parameters, declared once ----------------------------------------
    p_wte = m.param("tok_embeddings", tensor((vocab, hidden), dt), init.weight)
    p_wpe = m.param("pos_embeddings", tensor((cfg.max_positions, hidden), dt), init.weight) \
        if learned_positions else None
    layer_params = []
    for i, kind in enumerate(plan):
        layer_params.append([(spec, m.param(f"layers.{i}.{spec.name}", tensor(spec.shape, dt),
                                            spec.init))
                             for spec in kind.params(cfg, init)])
    p_norm = [(spec, m.param(spec.name, tensor(spec.shape, dt), spec.init))
              for spec in final_norm.params("norm", cfg)]
    p_out = None if cfg.tied_embeddings else \
        m.param("output", tensor((hidden, vocab), dt), init.weight)

    # ---- one function per layer kind, in order of first use ---------------
    funcs = {}
    for kind in plan:
        if kind.name not in funcs:
            funcs[kind.name] = kind.emit(m, cfg, init)

    # ---- @step ------------------------------------------------------------
    ids = tensor((cfg.batch, cfg.seq), "i32")
    f = m.function("step", [("tokens", ids), ("labels", ids)])
    tokens, labels = f.args
    wte = f.get_param(p_wte, name="wte")
    wpe = f.get_param(p_wpe, name="wpe") if p_wpe else None
    h = f.embedding(tokens, wte, positions=wpe, name="h0")
    for i, (kind, params) in enumerate(zip(plan, layer_params)):
        ws = [f.get_param(p, name=f"l{i}_{spec.arg_name}") for spec, p in params]
        h = f.call(funcs[kind.name], [h] + ws, name=f"h{i + 1}")
    w_norm = {spec.name: f.get_param(p, name=spec.arg_name) for spec, p in p_norm}
    h = final_norm.apply(f, h, w_norm, "norm", cfg)
    if p_out is None:
        logits = f.linear(h, wte, transpose_weight=True, name="logits")
    else:
        logits = f.linear(h, f.get_param(p_out, name="wout"), name="logits")
    f.ret(f.cross_entropy(logits, labels, name="loss"))
    return m


# ==========================================================================
# Families
# ==========================================================================

def build_gpt(cfg: ModelConfig) -> Module:
    """GPT-2/GPT-3: learned positions, pre-LayerNorm, biased projections,
    GELU(tanh) MLP, LM head tied to the token embedding."""
    ln = LayerNorm()
    layer = LayerKind("gpt_layer", (Attention(ln, bias=True),
                                    MLP(ln, gated=False, bias=True, act="gelu_tanh")))
    return build_decoder(cfg, [layer] * cfg.layers, ln, learned_positions=True)


def build_llama(cfg: ModelConfig) -> Module:
    """Llama 2/3: RMSNorm, RoPE, GQA, SwiGLU, no biases."""
    rms = RMSNorm()
    layer = LayerKind("llama_layer", (Attention(rms, bias=False),
                                      MLP(rms, gated=True, bias=False, act="silu")))
    return build_decoder(cfg, [layer] * cfg.layers, rms)


def build_mamba(cfg: ModelConfig) -> Module:
    """Mamba-1: a stack of RMSNorm + Mamba mixer blocks, tied LM head."""
    rms = RMSNorm()
    layer = LayerKind("mamba_layer", (Mamba(rms),))
    return build_decoder(cfg, [layer] * cfg.layers, rms)


def build_moe(cfg: ModelConfig) -> Module:
    """Mixtral: Llama attention and a top-k routed SwiGLU MoE in every layer."""
    rms = RMSNorm()
    layer = LayerKind("moe_layer", (Attention(rms, bias=False), MoE(rms)))
    return build_decoder(cfg, [layer] * cfg.layers, rms)


def hybrid_plan(cfg: ModelConfig) -> list:
    """Jamba-style layer plan: the mixer is attention when
    i % attn_period == attn_offset, else Mamba; the FFN is MoE when
    i % expert_period == expert_offset, else a dense SwiGLU MLP.
    Each (mixer, FFN) combination is one layer kind, e.g. @mamba_moe_layer."""
    rms = RMSNorm()
    mixers = {"attn": Attention(rms, bias=False), "mamba": Mamba(rms)}
    ffns = {"mlp": MLP(rms, gated=True, bias=False, act="silu"), "moe": MoE(rms)}
    kinds, plan = {}, []
    for i in range(cfg.layers):
        mixer = "attn" if i % cfg.attn_period == cfg.attn_offset else "mamba"
        moe = cfg.experts and cfg.expert_period and i % cfg.expert_period == cfg.expert_offset
        ffn = "moe" if moe else "mlp"
        name = f"{mixer}_{ffn}_layer"
        if name not in kinds:
            kinds[name] = LayerKind(name, (mixers[mixer], ffns[ffn]))
        plan.append(kinds[name])
    return plan


def build_hybrid(cfg: ModelConfig) -> Module:
    """Jamba-style hybrid: Mamba and attention mixers by `attn_period`, each
    followed by a dense or MoE FFN by `expert_period`."""
    return build_decoder(cfg, hybrid_plan(cfg), RMSNorm())


@dataclass(frozen=True)
class Family:
    build: Callable
    norm: Norm
    attr_keys: tuple            # family-specific keys of braid.model
    required: tuple = ()        # config fields that must be set
    default_ffn_mult: int = 0   # ffn = mult * hidden when ffn is not given


_ATTN_KEYS = ("heads", "kv_heads", "head_dim", "rope_theta")
_MOE_KEYS = ("experts", "top_k", "capacity_factor", "capacity", "router_normalize")
_MAMBA_KEYS = ("d_state", "d_conv", "expand", "d_inner", "dt_rank")

FAMILIES = {
    "gpt": Family(build_gpt, LayerNorm(), ("heads", "head_dim", "ffn", "max_positions"),
                  required=("heads",), default_ffn_mult=4),
    "llama": Family(build_llama, RMSNorm(), _ATTN_KEYS + ("ffn",),
                    required=("heads", "ffn")),
    "mamba": Family(build_mamba, RMSNorm(), _MAMBA_KEYS),
    "moe": Family(build_moe, RMSNorm(), _ATTN_KEYS + ("ffn",) + _MOE_KEYS,
                  required=("heads", "ffn", "experts", "top_k")),
    "hybrid": Family(build_hybrid, RMSNorm(),
                     _ATTN_KEYS + ("ffn",) + _MOE_KEYS + _MAMBA_KEYS +
                     ("attn_period", "attn_offset", "expert_period", "expert_offset"),
                     required=("heads", "ffn", "experts", "top_k", "attn_period",
                               "expert_period")),
}


def build_model(cfg: ModelConfig) -> Module:
    """Build the module of a config (derived fields are filled in first)."""
    cfg = cfg.resolved()
    return FAMILIES[cfg.family].build(cfg)


def build(name: str, **overrides) -> str:
    """MLIR text of preset `name` with field overrides, e.g. build("llama-tiny", layers=3)."""
    return build_model(preset(name, **overrides)).render()


# ==========================================================================
# Presets (published configurations)
# ==========================================================================

PRESETS: dict = {}


def _preset(name: str, family: str, description: str, **kw) -> None:
    PRESETS[name] = ModelConfig(name=name, family=family, description=description, **kw)


def preset(name: str, **overrides) -> ModelConfig:
    if name not in PRESETS:
        raise KeyError(f"unknown preset {name!r}; see --list")
    return dataclasses.replace(PRESETS[name], **overrides)


# --- GPT-2 (Radford et al. 2019): V 50257, context 1024, tied head
for _n, _l, _h, _a, _size in [("small", 12, 768, 12, "124M"), ("medium", 24, 1024, 16, "355M"),
                              ("large", 36, 1280, 20, "774M"), ("xl", 48, 1600, 25, "1.5B")]:
    _preset(f"gpt2-{_n}", "gpt", f"GPT-2 {_n} ({_size}): {_l}L, d {_h}, {_a} heads, ctx 1024",
            vocab=50257, hidden=_h, layers=_l, heads=_a, seq=1024, tied_embeddings=True)

# --- GPT-3 (Brown et al. 2020, table 2.1): V 50257, context 2048, tied head
for _n, _l, _h, _a in [("1.3b", 24, 2048, 16), ("2.7b", 32, 2560, 32), ("6.7b", 32, 4096, 32),
                       # The paper lists d_model 5140 with 40 heads, which does not divide;
                       # we use 5120 (head_dim 128) as Megatron/OPT-style 13B models do.
                       ("13b", 40, 5120, 40),
                       ("175b", 96, 12288, 96)]:
    _preset(f"gpt3-{_n}", "gpt", f"GPT-3 {_n.upper()}: {_l}L, d {_h}, {_a} heads, ctx 2048",
            vocab=50257, hidden=_h, layers=_l, heads=_a, seq=2048, tied_embeddings=True)

# --- Llama 2 (Touvron et al. 2023): V 32000, context 4096, RoPE theta 1e4
for _n, _l, _h, _a, _kv, _f in [("7b", 32, 4096, 32, 32, 11008), ("13b", 40, 5120, 40, 40, 13824),
                                ("70b", 80, 8192, 64, 8, 28672)]:
    _preset(f"llama2-{_n}", "llama", f"Llama 2 {_n.upper()}: {_l}L, d {_h}, {_a} heads "
            f"({_kv} kv), ffn {_f}, ctx 4096",
            vocab=32000, hidden=_h, layers=_l, heads=_a, kv_heads=_kv, ffn=_f, seq=4096,
            rope_theta=1e4, norm_eps=1e-5)

# --- Llama 3 (Meta 2024): V 128256, RoPE theta 5e5, GQA 8 kv heads; seq capped at 8192
for _n, _l, _h, _a, _f in [("8b", 32, 4096, 32, 14336), ("70b", 80, 8192, 64, 28672),
                           ("405b", 126, 16384, 128, 53248)]:
    _preset(f"llama3-{_n}", "llama", f"Llama 3 {_n.upper()}: {_l}L, d {_h}, {_a} heads (8 kv), "
            f"ffn {_f}, ctx 8192",
            vocab=128256, hidden=_h, layers=_l, heads=_a, kv_heads=8, ffn=_f, seq=8192,
            rope_theta=5e5, norm_eps=1e-5)

# --- Mixtral 8x7B (Jiang et al. 2024): 32k native context, default seq 4096
_preset("mixtral-8x7b", "moe", "Mixtral 8x7B (46.7B total): 32L, d 4096, 32 heads (8 kv), "
        "8 experts top-2, ffn 14336, seq 4096",
        vocab=32000, hidden=4096, layers=32, heads=32, kv_heads=8, ffn=14336, seq=4096,
        experts=8, top_k=2, capacity_factor=1.0, rope_theta=1e6, norm_eps=1e-5)

# --- Mamba-1 (Gu & Dao 2023): V 50277 padded to 50280, d_state 16, expand 2, d_conv 4, tied
for _n, _l, _h in [("130m", 24, 768), ("370m", 48, 1024), ("790m", 48, 1536),
                   ("1.4b", 48, 2048), ("2.8b", 64, 2560)]:
    _preset(f"mamba-{_n}", "mamba", f"Mamba {_n.upper()}: {_l}L, d {_h}, d_state 16, expand 2, "
            f"seq 2048",
            vocab=50277, pad_vocab_multiple=8, hidden=_h, layers=_l, seq=2048,
            d_state=16, d_conv=4, expand=2, tied_embeddings=True, norm_eps=1e-5)

# --- Jamba v0.1 (AI21 2024): 1 attention per 8 layers (offset 4), MoE every other layer
#     (offset 1), 16 experts top-2, no positional encoding. The Mamba mixer here omits
#     Jamba's inner dt/B/C RMSNorms. Native context 256k; default seq 4096.
_preset("jamba-v0.1", "hybrid", "Jamba v0.1 shape (~52B total): 32L, d 4096, attn:mamba 1:7, "
        "MoE 16 experts top-2 every other layer, seq 4096",
        vocab=65536, hidden=4096, layers=32, heads=32, kv_heads=8, ffn=14336, seq=4096,
        experts=16, top_k=2, capacity_factor=1.0, router_normalize=False,
        attn_period=8, attn_offset=4, expert_period=2, expert_offset=1, norm_eps=1e-6)

# --- tiny models for tests (batch 2). gpt-tiny and moe-tiny have vocab 97 (not a
#     multiple of 4) so uneven vocabulary sharding can be exercised.
_preset("gpt-tiny", "gpt", "tiny GPT for tests: 2L, d 64, 4 heads, V 97, seq 16",
        vocab=97, hidden=64, layers=2, heads=4, seq=16, batch=2, tied_embeddings=True)
_preset("llama-tiny", "llama", "tiny Llama for tests: 2L, d 64, 4 heads (2 kv), ffn 128, V 256",
        vocab=256, hidden=64, layers=2, heads=4, kv_heads=2, ffn=128, seq=16, batch=2,
        rope_theta=1e4)
_preset("mamba-tiny", "mamba", "tiny Mamba for tests: 2L, d 64, d_state 16, V 122 padded to 128",
        vocab=122, pad_vocab_multiple=8, hidden=64, layers=2, seq=16, batch=2,
        tied_embeddings=True)
_preset("moe-tiny", "moe", "tiny Mixtral for tests: 2L, d 64, 4 heads (2 kv), 4 experts top-2, "
        "capacity factor 1.25, V 97",
        vocab=97, hidden=64, layers=2, heads=4, kv_heads=2, ffn=128, seq=16, batch=2,
        experts=4, top_k=2, capacity_factor=1.25, rope_theta=1e4)
_preset("hybrid-tiny", "hybrid", "tiny Jamba-style hybrid for tests: 4L (mamba, mamba, attn, "
        "mamba), MoE on odd layers, 4 experts top-2, V 128",
        vocab=128, hidden=64, layers=4, heads=4, kv_heads=2, ffn=128, seq=16, batch=2,
        experts=4, top_k=2, capacity_factor=1.25, router_normalize=False,
        attn_period=4, attn_offset=2, expert_period=2, expert_offset=1)


# ==========================================================================
# Command line
# ==========================================================================

# (flag, config field, type, help)
_OVERRIDES = [
    ("--layers", "layers", int, "number of layers"),
    ("--hidden", "hidden", int, "model width"),
    ("--heads", "heads", int, "attention heads"),
    ("--kv-heads", "kv_heads", int, "key/value heads (GQA)"),
    ("--head-dim", "head_dim", int, "head dimension (default hidden/heads)"),
    ("--ffn", "ffn", int, "MLP / expert inner width"),
    ("--vocab", "vocab", int, "vocabulary size (before padding)"),
    ("--seq", "seq", int, "sequence length"),
    ("--batch", "batch", int, "batch size"),
    ("--max-positions", "max_positions", int, "rows of the learned position table (GPT)"),
    ("--experts", "experts", int, "number of experts"),
    ("--top-k", "top_k", int, "experts per token"),
    ("--capacity-factor", "capacity_factor", float, "expert capacity factor"),
    ("--d-state", "d_state", int, "Mamba state size N"),
    ("--d-conv", "d_conv", int, "Mamba conv width"),
    ("--expand", "expand", int, "Mamba expansion (d_inner = expand * hidden)"),
    ("--dt-rank", "dt_rank", int, "Mamba dt rank (default ceil(hidden/16))"),
    ("--attn-period", "attn_period", int, "hybrid: attention every N layers"),
    ("--attn-offset", "attn_offset", int, "hybrid: index of the attention layer in a period"),
    ("--expert-period", "expert_period", int, "hybrid: MoE FFN every N layers"),
    ("--expert-offset", "expert_offset", int, "hybrid: index of the MoE layer in a period"),
    ("--rope-theta", "rope_theta", float, "RoPE base"),
    ("--norm-eps", "norm_eps", float, "normalisation epsilon"),
    ("--init-std", "init_std", float, "std of normal-initialised weights"),
    ("--pad-vocab-multiple", "pad_vocab_multiple", int, "pad the vocabulary to a multiple"),
    ("--name", "name", str, "model name recorded in braid.model"),
]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python3 -m braid.models",
        description="Print the braid MLIR module of a model preset, with overrides.")
    p.add_argument("preset", nargs="?", help="preset name (see --list)")
    p.add_argument("--list", action="store_true", help="list the presets and exit")
    p.add_argument("-o", "--output", help="write to this file instead of stdout")
    p.add_argument("--count-params", action="store_true",
                   help="print the parameter count instead of the module")
    for flag, dest, typ, help_ in _OVERRIDES:
        p.add_argument(flag, dest=dest, type=typ, help=help_)
    p.add_argument("--dtype", choices=("f32", "bf16", "f16"), help="parameter/activation type")
    tie = p.add_mutually_exclusive_group()
    tie.add_argument("--tied", dest="tied_embeddings", action="store_const", const=True,
                     help="tie the LM head to the token embedding")
    tie.add_argument("--untied", dest="tied_embeddings", action="store_const", const=False,
                     help="separate `output` LM head")
    rn = p.add_mutually_exclusive_group()
    rn.add_argument("--router-normalize", dest="router_normalize", action="store_const",
                    const=True, help="renormalise top-k router weights")
    rn.add_argument("--no-router-normalize", dest="router_normalize", action="store_const",
                    const=False)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.list:
        width = max(map(len, PRESETS))
        for name, cfg in PRESETS.items():
            print(f"{name:<{width}}  {cfg.description}")
        return 0
    if not args.preset:
        parser.error("a preset name is required (see --list)")
    fields = [d for _, d, _, _ in _OVERRIDES] + ["dtype", "tied_embeddings", "router_normalize"]
    overrides = {k: getattr(args, k) for k in fields if getattr(args, k) is not None}
    try:
        module = build_model(preset(args.preset, **overrides))
    except (KeyError, ValueError) as e:
        parser.error(str(e).strip("'\""))
    text = f"{module.num_parameters()}\n" if args.count_params else module.render()
    if args.output:
        with open(args.output, "w") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
