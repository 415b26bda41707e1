"""The model families: the shared residual blocks (attention, MLP, MoE, Mamba
mixer), the generic decoder builder and one builder per family.

Every family is a function (`build_gpt`, `build_llama`, `build_mamba`,
`build_moe`, `build_hybrid`) that picks the kind of each layer and hands the
plan to `build_decoder`, which declares the parameters (`tok_embeddings`,
`layers.<i>.<...>`, `norm`, `output`), emits one private func.func per layer
kind and the public `@step(tokens, labels) -> loss`, which calls the layer
functions once per layer.

A layer kind is a list of residual blocks; each block declares its weights and
emits its ops, so families differ only in which blocks they stack and with
which options. `FAMILIES` maps a family name to its builder and to what it
takes from a `ModelConfig`.
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass
from typing import Callable, Sequence

from .config import ModelConfig, moe_capacity
from .ir import MAMBA_DT, Function, Init, Module, ONES, S4D_REAL, Value, ZEROS, normal, tensor

__all__ = [
    "FAMILIES", "Family", "build_model", "build_decoder", "build_gpt", "build_llama",
    "build_mamba", "build_moe", "build_hybrid", "hybrid_plan", "LayerKind", "ParamSpec",
    "Inits", "Norm", "RMSNorm", "LayerNorm", "Block", "Attention", "MLP", "MoE", "Mamba",
]


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


class Norm(abc.ABC):
    """A normalisation: its parameters (named from a prefix) and its op."""
    kind = ""

    @abc.abstractmethod
    def params(self, prefix: str, cfg: ModelConfig) -> list:
        ...

    @abc.abstractmethod
    def apply(self, f: Function, x: Value, w: dict, prefix: str, cfg: ModelConfig) -> Value:
        ...


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


class Block(abc.ABC):
    """A pre-norm residual block: x + body(norm(x)). Weights are named
    `<prefix>_norm` and `<prefix>.<weight>`."""
    prefix = ""

    def __init__(self, norm: Norm):
        self.norm = norm

    def params(self, cfg: ModelConfig, init: Inits) -> list:
        return self.norm.params(f"{self.prefix}_norm", cfg) + \
            [ParamSpec(f"{self.prefix}.{n}", tuple(s), i) for n, s, i in self.weights(cfg, init)]

    @abc.abstractmethod
    def weights(self, cfg: ModelConfig, init: Inits) -> list:
        """(name, shape, init) of the block's weights besides the norm."""

    def emit(self, f: Function, cfg: ModelConfig, x: Value, w: dict) -> Value:
        h = self.norm.apply(f, x, w, f"{self.prefix}_norm", cfg)
        local = {k[len(self.prefix) + 1:]: v for k, v in w.items()
                 if k.startswith(self.prefix + ".")}
        return f.add(x, self.body(f, cfg, h, local), name=f"{self.prefix}_out")

    @abc.abstractmethod
    def body(self, f: Function, cfg: ModelConfig, h: Value, w: dict) -> Value:
        ...


class Attention(Block):
    """Multi-head causal self-attention with separate q/k/v/o projections.
    GQA when kv_heads < heads; RoPE when cfg.rope_theta is set; optional
    biases on q/k/v (`qkv_bias`) and on the output projection (`o_bias`);
    with `qk_norm`, an RMSNorm over head_dim of every q and k head before
    RoPE (Qwen3), with gains `q_norm` and `k_norm` shared by the heads."""
    prefix = "attn"

    def __init__(self, norm: Norm, qkv_bias: bool, o_bias: bool, qk_norm: bool = False):
        super().__init__(norm)
        self.qkv_bias, self.o_bias, self.qk_norm = qkv_bias, o_bias, qk_norm

    def weights(self, cfg, init):
        h, q_dim, kv_dim = cfg.hidden, cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
        # GPT's order (wq..wo, bq..bo) is kept: checkpoints list parameters so.
        ws = [("wq", (h, q_dim), init.weight), ("wk", (h, kv_dim), init.weight),
              ("wv", (h, kv_dim), init.weight), ("wo", (q_dim, h), init.residual)]
        if self.qkv_bias:
            ws += [("bq", (q_dim,), ZEROS), ("bk", (kv_dim,), ZEROS), ("bv", (kv_dim,), ZEROS)]
        if self.o_bias:
            ws += [("bo", (h,), ZEROS)]
        if self.qk_norm:
            ws += [("q_norm", (cfg.head_dim,), ONES), ("k_norm", (cfg.head_dim,), ONES)]
        return ws

    def body(self, f, cfg, h, w):
        lead = h.shape[:-1]  # (B, S)
        heads = {"q": cfg.heads, "k": cfg.kv_heads, "v": cfg.kv_heads}
        qkv = []
        for n in "qkv":
            proj = f.linear(h, w["w" + n], bias=w.get("b" + n), name=n)
            x = f.reshape(proj, lead + (heads[n], cfg.head_dim), name=n + "_heads")
            if self.qk_norm and n != "v":
                # braid.attention applies RoPE inside, so this norm comes before it.
                x = f.rms_norm(x, w[n + "_norm"], cfg.norm_eps, name=n + "_normed")
            qkv.append(x)
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
        # Capacity per group of moe_group tokens (one sequence by default): a
        # plan that keeps groups whole drops the tokens one rank drops.
        group = cfg.moe_group
        capacity = moe_capacity(cfg.capacity_factor, cfg.top_k, group, cfg.experts)
        d = f.dispatch(flat, idx, cfg.experts, capacity, group_size=group, name="dispatched")
        e = f.expert_ffn("silu", d, w["w_up"], w["w_down"], gate=w["w_gate"], name="experts")
        y = f.combine(e, weights, idx, group_size=group, name="combined")
        return f.reshape(y, shape, name="moe_y")


class Mamba(Block):
    """Mamba-1 mixer. in_proj is split into in_x and in_z, x_proj into x_dt,
    x_B and x_C; A = -exp(A_log). Options: the conv's bias (`conv_bias`),
    biases of in_proj and out_proj (`proj_bias`: b_in_x, b_in_z, out_bias)
    and Jamba's RMSNorms on dt, B and C after x_proj (`inner_norms`: gains
    dt_norm, B_norm, C_norm)."""
    prefix = "mamba"

    def __init__(self, norm: Norm, conv_bias: bool = True, proj_bias: bool = False,
                 inner_norms: bool = False):
        super().__init__(norm)
        self.conv_bias, self.proj_bias, self.inner_norms = conv_bias, proj_bias, inner_norms

    def weights(self, cfg, init):
        # Mamba's own initialization (mamba_ssm: Mamba.__init__ and
        # _init_weights), with each uniform U(-a, a) drawn as a normal of its
        # std a / sqrt(3): projections as torch.nn.Linear (a = fan_in^-1/2),
        # the depthwise conv as nn.Conv1d (fan_in d_conv), dt_proj's weight
        # a = dt_rank^-1/2, out_proj scaled like the other residual outputs;
        # dt_bias = softplus^-1(dt) with dt log-uniform in [1e-3, 0.1] and
        # A_log the S4D-Real log(1..N). With these the scan's state carries
        # the signal it does in a trained Mamba (decay exp(-dt (n + 1)) per
        # token, so memory over ~1/dt tokens), and a plan that loses the
        # state across ranks computes another loss; the generic normal(0.02)
        # left B and C so small that the state path carried gradients 1e-9
        # of the largest.
        h, di, r, n = cfg.hidden, cfg.d_inner, cfg.dt_rank, cfg.d_state

        def linear(fan_in):
            return normal(float("%.6e" % (1.0 / math.sqrt(3.0 * fan_in))))

        out_std = (1.0 / math.sqrt(3.0 * di)) * (init.residual_std / init.std)
        ws = [("in_x", (h, di), linear(h)), ("in_z", (h, di), linear(h)),
              ("conv_w", (di, cfg.d_conv), linear(cfg.d_conv))]
        ws += [("conv_b", (di,), ZEROS)] if self.conv_bias else []
        ws += [("x_dt", (di, r), linear(di)), ("x_B", (di, n), linear(di)),
               ("x_C", (di, n), linear(di)),
               ("dt_proj", (r, di), linear(r)), ("dt_bias", (di,), MAMBA_DT),
               ("A_log", (di, n), S4D_REAL), ("D", (di,), ONES),
               ("out_proj", (di, h), normal(float("%.6e" % out_std)))]
        if self.proj_bias:
            ws += [("b_in_x", (di,), ZEROS), ("b_in_z", (di,), ZEROS), ("out_bias", (h,), ZEROS)]
        if self.inner_norms:
            ws += [("dt_norm", (r,), ONES), ("B_norm", (n,), ONES), ("C_norm", (n,), ONES)]
        return ws

    def body(self, f, cfg, h, w):
        x = f.linear(h, w["in_x"], bias=w.get("b_in_x"), name="x_in")
        z = f.linear(h, w["in_z"], bias=w.get("b_in_z"), name="z")
        x = f.conv1d(x, w["conv_w"], bias=w.get("conv_b"), name="x_conv")
        x = f.silu(x, name="x_act")
        dt = f.linear(x, w["x_dt"], name="dt_low")
        b = f.linear(x, w["x_B"], name="B")
        c = f.linear(x, w["x_C"], name="C")
        if self.inner_norms:
            dt = f.rms_norm(dt, w["dt_norm"], cfg.norm_eps, name="dt_normed")
            b = f.rms_norm(b, w["B_norm"], cfg.norm_eps, name="B_normed")
            c = f.rms_norm(c, w["C_norm"], cfg.norm_eps, name="C_normed")
        dt = f.linear(dt, w["dt_proj"], bias=w["dt_bias"], name="dt")
        a = f.neg(f.exp(w["A_log"], name="A_exp"), name="A")
        y = f.selective_scan(x, dt, a, b, c, w["D"], delta_softplus=True, name="y")
        y = f.glu("silu", z, y, name="y_gated")
        return f.linear(y, w["out_proj"], bias=w.get("out_bias"), name="mamba_proj")


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
    f = m.function("step", [("tokens", ids), ("labels", ids)], entry="train_step")
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
    layer = LayerKind("gpt_layer", (Attention(ln, qkv_bias=True, o_bias=True),
                                    MLP(ln, gated=False, bias=True, act="gelu_tanh")))
    return build_decoder(cfg, [layer] * cfg.layers, ln, learned_positions=True)


def _attention(norm: Norm, cfg: ModelConfig) -> Attention:
    """The attention block of the RMSNorm families, with the config's options."""
    return Attention(norm, qkv_bias=cfg.qkv_bias, o_bias=cfg.o_bias, qk_norm=cfg.qk_norm)


def _mamba(norm: Norm, cfg: ModelConfig) -> Mamba:
    """The Mamba mixer with the config's options."""
    return Mamba(norm, conv_bias=cfg.mamba_conv_bias, proj_bias=cfg.mamba_proj_bias,
                 inner_norms=cfg.mamba_inner_norms)


def build_llama(cfg: ModelConfig) -> Module:
    """Llama 2/3: RMSNorm, RoPE, GQA, SwiGLU, no biases (Qwen2's q/k/v biases
    and Qwen3's q/k norms as options)."""
    rms = RMSNorm()
    layer = LayerKind("llama_layer", (_attention(rms, cfg),
                                      MLP(rms, gated=True, bias=False, act="silu")))
    return build_decoder(cfg, [layer] * cfg.layers, rms)


def build_mamba(cfg: ModelConfig) -> Module:
    """Mamba-1: a stack of RMSNorm + Mamba mixer blocks, tied LM head."""
    rms = RMSNorm()
    layer = LayerKind("mamba_layer", (_mamba(rms, cfg),))
    return build_decoder(cfg, [layer] * cfg.layers, rms)


def build_moe(cfg: ModelConfig) -> Module:
    """Mixtral: Llama attention and a top-k routed SwiGLU MoE in every layer."""
    rms = RMSNorm()
    layer = LayerKind("moe_layer", (_attention(rms, cfg), MoE(rms)))
    return build_decoder(cfg, [layer] * cfg.layers, rms)


def hybrid_plan(cfg: ModelConfig) -> list:
    """Jamba-style layer plan: the mixer is attention when
    i % attn_period == attn_offset, else Mamba; the FFN is MoE when
    i % expert_period == expert_offset, else a dense SwiGLU MLP.
    Each (mixer, FFN) combination is one layer kind, e.g. @mamba_moe_layer."""
    rms = RMSNorm()
    mixers = {"attn": _attention(rms, cfg), "mamba": _mamba(rms, cfg)}
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
    options: tuple = ()         # block options of ModelConfig the family honours


_ATTN_KEYS = ("heads", "kv_heads", "head_dim", "rope_theta")
_MOE_KEYS = ("experts", "top_k", "capacity_factor", "moe_group_size", "capacity",
             "router_normalize")
_MAMBA_KEYS = ("d_state", "d_conv", "expand", "d_inner", "dt_rank")
_ATTN_OPTIONS = ("qkv_bias", "o_bias", "qk_norm")
_MAMBA_OPTIONS = ("mamba_conv_bias", "mamba_proj_bias", "mamba_inner_norms")

FAMILIES = {
    "gpt": Family(build_gpt, LayerNorm(), ("heads", "head_dim", "ffn", "max_positions"),
                  required=("heads",), default_ffn_mult=4),
    "llama": Family(build_llama, RMSNorm(), _ATTN_KEYS + ("ffn",),
                    required=("heads", "ffn"), options=_ATTN_OPTIONS),
    "mamba": Family(build_mamba, RMSNorm(), _MAMBA_KEYS, options=_MAMBA_OPTIONS),
    "moe": Family(build_moe, RMSNorm(), _ATTN_KEYS + ("ffn",) + _MOE_KEYS,
                  required=("heads", "ffn", "experts", "top_k"), options=_ATTN_OPTIONS),
    "hybrid": Family(build_hybrid, RMSNorm(),
                     _ATTN_KEYS + ("ffn",) + _MOE_KEYS + _MAMBA_KEYS +
                     ("attn_period", "attn_offset", "expert_period", "expert_offset"),
                     required=("heads", "ffn", "experts", "top_k", "attn_period",
                               "expert_period"),
                     options=_ATTN_OPTIONS + _MAMBA_OPTIONS),
}


def build_model(cfg: ModelConfig) -> Module:
    """Build the module of a config (derived fields are filled in first)."""
    cfg = cfg.resolved()
    return FAMILIES[cfg.family].build(cfg)
