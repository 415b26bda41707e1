"""The configuration of a model: `ModelConfig`, its derived sizes and the
`braid.model` dictionary round-trip.

A `ModelConfig` holds the hyper-parameters of one model; `resolved()` fills in
the derived fields (head_dim, ffn, dt_rank, ...) and validates them for the
family, `model_attrs()` gives the `braid.model` dictionary of the module and
`config_from_attrs` rebuilds the config from it. What a family uses (its keys,
required fields, default FFN width, layer plan) is declared with the family in
`braid.families`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction

from .errors import ArgumentError

__all__ = ["ModelConfig", "moe_capacity", "config_from_attrs"]


def _families():
    # braid.families builds graphs from a ModelConfig, so it imports this module;
    # the family table is looked up when a config is resolved, not at import time.
    from . import families
    return families


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
    qkv_bias: bool = False           # biases on the q/k/v projections (Qwen2)
    o_bias: bool = False             # bias on the output projection (Llama attention_bias)
    qk_norm: bool = False            # RMSNorm over head_dim of each q and k head (Qwen3)
    max_positions: int | None = None # rows of GPT's learned position table; None: seq
    # dense MLP
    ffn: int | None = None           # None: 4 * hidden (GPT)
    # mixture of experts
    experts: int | None = None
    top_k: int | None = None
    capacity_factor: float = 1.0
    # Tokens per capacity group (GShard's groups): capacity is per group, so a
    # token's fate depends on its group alone and every parallel plan that
    # keeps groups whole drops the same tokens. None: one sequence.
    moe_group_size: int | None = None
    router_normalize: bool = True    # renormalise the top-k probabilities (Mixtral)
    # Mamba
    d_state: int = 16
    d_conv: int = 4
    expand: int = 2
    dt_rank: int | None = None       # None: ceil(hidden / 16)
    mamba_conv_bias: bool = True     # bias of the depthwise conv (HF use_conv_bias)
    mamba_proj_bias: bool = False    # biases of in_proj and out_proj (HF use_bias)
    mamba_inner_norms: bool = False  # RMSNorms on dt, B and C (Jamba's mixer)
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
    def moe_group(self) -> int:
        """Tokens per capacity group (default: one sequence)."""
        return self.moe_group_size if self.moe_group_size is not None else self.seq

    @property
    def capacity(self) -> int:
        """Slots per expert and capacity group."""
        return moe_capacity(self.capacity_factor, self.top_k, self.moe_group, self.experts)

    def resolved(self) -> "ModelConfig":
        """A copy with the derived fields filled in, validated for its family."""
        families = _families().FAMILIES
        fam = families.get(self.family)
        if fam is None:
            raise ArgumentError(f"unknown family {self.family!r}; known: {', '.join(families)}")
        c = dataclasses.replace(self)
        for key in ("vocab", "hidden", "layers", "seq", "batch", "pad_vocab_multiple"):
            if getattr(c, key) < 1:
                raise ArgumentError(f"{c.name}: {key} must be positive")
        if c.heads is not None:
            if c.kv_heads is None:
                c.kv_heads = c.heads
            if c.head_dim is None:
                if c.hidden % c.heads:
                    raise ArgumentError(f"{c.name}: hidden {c.hidden} not divisible by "
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
                raise ArgumentError(f"{c.name}: family {c.family} needs {key}")
        for key in _OPTIONS:
            if key not in fam.options and getattr(c, key) != _OPTION_DEFAULTS[key]:
                raise ArgumentError(f"{c.name}: family {c.family} does not take {key} "
                                    f"(it takes: {', '.join(fam.options) or 'none'})")
        if c.heads is not None and c.heads % c.kv_heads:
            raise ArgumentError(f"{c.name}: {c.heads} heads not a multiple of {c.kv_heads} kv heads")
        if c.top_k is not None and c.experts is not None and not 1 <= c.top_k <= c.experts:
            raise ArgumentError(f"{c.name}: top_k {c.top_k} must be in [1, experts={c.experts}]")
        if c.attn_period is not None and not 0 <= c.attn_offset < c.attn_period:
            raise ArgumentError(f"{c.name}: attn_offset must be in [0, attn_period)")
        if c.expert_period is not None and not 0 <= c.expert_offset < c.expert_period:
            raise ArgumentError(f"{c.name}: expert_offset must be in [0, expert_period)")
        if c.max_positions < c.seq:
            raise ArgumentError(f"{c.name}: max_positions {c.max_positions} < seq {c.seq}")
        if c.moe_group_size is not None and (c.moe_group_size < 1
                                             or c.tokens % c.moe_group_size):
            raise ArgumentError(f"{c.name}: moe_group_size {c.moe_group_size} must divide the "
                             f"{c.tokens} tokens of a step")
        if c.dtype not in ("f32", "bf16", "f16"):
            raise ArgumentError(f"{c.name}: dtype must be f32, bf16 or f16")
        return c

    def model_attrs(self) -> dict:
        """The `braid.model` dictionary: every hyper-parameter the family uses
        (plus a few derived sizes for convenience: d_inner, capacity, layer_pattern)."""
        c = self.resolved()
        fam = _families().FAMILIES[c.family]
        attrs = {"name": c.name, "family": c.family, "vocab": c.padded_vocab}
        if c.pad_vocab_multiple > 1:
            attrs["vocab_unpadded"] = c.vocab
            attrs["pad_vocab_multiple"] = c.pad_vocab_multiple
        attrs.update(hidden=c.hidden, layers=c.layers, seq=c.seq, batch=c.batch, dtype=c.dtype)
        for key in fam.attr_keys:
            value = getattr(c, key)
            if value is not None:
                attrs[key] = value
        # The block options are recorded only where they differ from the
        # default, so that a module built without them reads as before.
        for key in fam.options:
            if getattr(c, key) != _OPTION_DEFAULTS[key]:
                attrs[key] = getattr(c, key)
        attrs.update(norm=fam.norm.kind, norm_eps=c.norm_eps,
                     tied_embeddings=c.tied_embeddings, init_std=c.init_std,
                     scale_residual_init=c.scale_residual_init)
        if c.family == "hybrid":
            attrs["layer_pattern"] = [k.name[:-len("_layer")]
                                    for k in _families().hybrid_plan(c)]
        return attrs


# Block options (a family honours those in its Family.options) and their defaults.
_OPTIONS = ("qkv_bias", "o_bias", "qk_norm", "mamba_conv_bias", "mamba_proj_bias",
            "mamba_inner_norms")
_OPTION_DEFAULTS = {f.name: f.default for f in dataclasses.fields(ModelConfig)
                    if f.name in _OPTIONS}


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
