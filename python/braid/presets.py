"""Published model configurations (`PRESETS`) and tiny ones for tests.

    preset("llama3-8b", layers=2)  -> ModelConfig with the overrides applied
    build("llama-tiny", layers=3)  -> MLIR text of the module
"""

from __future__ import annotations

import dataclasses

from .config import ModelConfig
from .errors import ArgumentError, did_you_mean
from .families import build_model

__all__ = ["PRESETS", "preset", "build"]


PRESETS: dict = {}  # name -> ModelConfig, in --list order


def _preset(name: str, family: str, description: str, **kw) -> None:
    PRESETS[name] = ModelConfig(name=name, family=family, description=description, **kw)


def preset(name: str, /, **overrides) -> ModelConfig:
    """A copy of preset `name` with field overrides (which may rename it: name=...)."""
    if name not in PRESETS:
        raise ArgumentError(f"unknown preset {name!r}{did_you_mean(str(name), PRESETS)} "
                            "(python3 -m braid.models --list lists them)")
    return dataclasses.replace(PRESETS[name], **overrides)


def build(name: str, /, **overrides) -> str:
    """MLIR text of preset `name` with field overrides, e.g. build("llama-tiny", layers=3)."""
    return build_model(preset(name, **overrides)).render()


# ==========================================================================
# Published configurations
# ==========================================================================

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
