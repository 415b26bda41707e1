"""The command line of the braid model builder, and the builder's public API in one place.

    PYTHONPATH=python python3 -m braid.models llama-tiny > model.mlir
    PYTHONPATH=python python3 -m braid.models llama3-8b --layers 2 --seq 512
    PYTHONPATH=python python3 -m braid.models --list
    PYTHONPATH=python python3 -m braid.models --hf path/to/Qwen3-8B --seq 2048

The work is done in three modules, whose public names are re-exported here:
`braid.config` (`ModelConfig`, derived sizes, the `braid.model` dictionary),
`braid.families` (the residual blocks, `build_decoder` and the family builders
`build_gpt`, `build_llama`, `build_mamba`, `build_moe`, `build_hybrid`) and
`braid.presets` (`PRESETS`, `preset`, `build`); `braid.hf` reads Hugging
Face configurations (`from_hf`).
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from .config import ModelConfig, config_from_attrs, moe_capacity
from .families import (FAMILIES, Attention, Block, Family, Inits, LayerKind, LayerNorm, MLP,
                       Mamba, MoE, Norm, ParamSpec, RMSNorm, build_decoder, build_gpt,
                       build_hybrid, build_llama, build_mamba, build_model, build_moe,
                       hybrid_plan)
from .hf import UnsupportedConfigError, config_from_hf, from_hf
from .presets import PRESETS, build, preset

__all__ = [
    "ModelConfig", "PRESETS", "FAMILIES", "build", "build_model", "build_decoder",
    "build_gpt", "build_llama", "build_mamba", "build_moe", "build_hybrid",
    "config_from_attrs", "moe_capacity", "preset", "from_hf", "config_from_hf",
    "UnsupportedConfigError", "main",
]


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
    ("--moe-group-size", "moe_group_size", int,
     "tokens per MoE capacity group (default: the sequence length)"),
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


def add_override_flags(p: argparse.ArgumentParser) -> None:
    """The ModelConfig overrides as flags (--layers, --seq, ..., --dtype,
    --tied/--untied, --router-normalize): braid.models' and
    braid.hf_weights', which must build the same model from the same flags."""
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


def overrides_of(args: argparse.Namespace) -> dict:
    """The overrides add_override_flags' flags were given, as from_hf and
    preset take them."""
    fields = [d for _, d, _, _ in _OVERRIDES] + ["dtype", "tied_embeddings", "router_normalize"]
    return {k: getattr(args, k) for k in fields if getattr(args, k) is not None}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python3 -m braid.models",
        description="Print the braid MLIR module of a model preset or of a Hugging Face "
                    "configuration, with overrides.")
    p.add_argument("preset", nargs="?", help="preset name (see --list)")
    p.add_argument("--hf", metavar="DIR_OR_CONFIG",
                   help="build the model of a Hugging Face config.json (a directory "
                        "holding it, or the file) instead of a preset")
    p.add_argument("--list", action="store_true", help="list the presets and exit")
    p.add_argument("-o", "--output", help="write to this file instead of stdout")
    p.add_argument("--count-params", action="store_true",
                   help="print the parameter count instead of the module")
    add_override_flags(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.list:
        width = max(map(len, PRESETS))
        for name, cfg in PRESETS.items():
            print(f"{name:<{width}}  {cfg.description}")
        return 0
    if bool(args.preset) == bool(args.hf):
        parser.error("give a preset name (see --list) or --hf DIR_OR_CONFIG" +
                     (", not both" if args.preset else ""))
    overrides = overrides_of(args)
    try:
        cfg = from_hf(args.hf, **overrides) if args.hf else preset(args.preset, **overrides)
        module = build_model(cfg)
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
