# FLOPs per token of braid-opt --braid-model-stats against closed forms.
#
# GPT (Megatron-LM, Narayanan et al. 2021, eq. 3): a training step of B
# sequences of s tokens through l layers of width h with vocabulary V costs,
# with full activation recomputation,
#     F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h))
# (forward 24 h^2 + 4 s h per layer and token, 2 h V for the LM head; backward
# twice the forward, recomputation one more layer forward). Without
# recomputation it is 72 B s l h^2 (1 + s/(6h) + V/(12 l h)). Both are exact
# for these models, so `training_flops_per_token_full_recompute` and
# `training_flops_per_token` must equal F / (B s) to 1e-9. B, s, l, h and V are
# read back from the `config.*` lines and must match the preset (and the
# command-line overrides).
#
# Llama: `forward_flops_per_token` must equal 2 x (the weights of the matrix
# products) + 4 s heads head_dim per layer (scores and values of causal
# attention, counted in full) + 2 h V for the LM head, computed here from the
# preset's fields; `layer.llama_layer.forward_flops_per_token` the per-layer part.
#
# RUN: %python %s braid-opt | FileCheck %s

# CHECK-NOT: FAIL
# CHECK: gpt2-small: B 1 s 1024 l 12 h 768 V 50257
# CHECK-NEXT: gpt2-small: training_flops_per_token_full_recompute 1062056448 megatron 1062056448 rel_diff 0
# CHECK-NEXT: gpt2-small: training_flops_per_token 854438400 megatron 854438400 rel_diff 0
# CHECK: gpt3-1.3b: B 1 s 2048 l 24 h 2048 V 50257
# CHECK: gpt3-175b: B 1 s 2048 l 96 h 12288 V 50257
# CHECK-NEXT: gpt3-175b: training_flops_per_token_full_recompute 1433929457664 megatron 1433929457664 rel_diff 0
# CHECK-NEXT: gpt3-175b: training_flops_per_token 1076373430272 megatron 1076373430272 rel_diff 0
# CHECK: gpt3-1.3b --layers 5 --seq 1000 --batch 3: B 3 s 1000 l 5 h 2048 V 50257
# CHECK: llama2-7b: forward_flops_per_token 15361638400 closed_form 15361638400 rel_diff 0
# CHECK: llama3-8b: forward_flops_per_token 19304284160 closed_form 19304284160 rel_diff 0
# CHECK: llama-tiny --layers 3 --seq 24: forward_flops_per_token {{[0-9]+}} closed_form {{[0-9]+}} rel_diff 0
# CHECK: all FLOP formulas hold

import dataclasses
import os
import sys
from fractions import Fraction

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from braid_stats import CheckError, preset_stats, rel_err, run_checks  # noqa: E402

from braid.presets import PRESETS  # noqa: E402

TOLERANCE = 1e-9

# (command line of braid.models, the config fields it overrides)
GPT_CASES = [
    (["gpt2-small"], {}),
    (["gpt3-1.3b"], {}),
    (["gpt3-175b"], {}),
    (["gpt3-1.3b", "--layers", "5", "--seq", "1000", "--batch", "3"],
     dict(layers=5, seq=1000, batch=3)),
]
LLAMA_CASES = [
    (["llama2-7b"], {}),
    (["llama3-8b"], {}),
    (["llama-tiny", "--layers", "3", "--seq", "24"], dict(layers=3, seq=24)),
]


def config_of(argv, overrides):
    """The preset's fields with the overrides, derived sizes worked out here."""
    c = dataclasses.replace(PRESETS[argv[0]], **overrides)
    m = c.pad_vocab_multiple
    return c, -(-c.vocab // m) * m


def compare(label, key, got, want, name):
    diff = float(rel_err(got, want))
    shown = want.numerator if want.denominator == 1 else f"{float(want):.17g}"
    print(f"{label}: {key} {got} {name} {shown} rel_diff {diff:.3g}")
    if diff > TOLERANCE:
        raise CheckError(f"{label}: {key} is {got}, the {name} formula gives "
                         f"{float(want):.17g} (relative difference {diff:.3g})")


def check_gpt(braid_opt, argv, overrides):
    label = " ".join(argv)
    stats = preset_stats(braid_opt, argv)
    B, s, l, h, V = (stats[f"config.{k}"] for k in ("batch", "seq", "layers", "hidden", "vocab"))
    print(f"{label}: B {B} s {s} l {l} h {h} V {V}")
    c, vocab = config_of(argv, overrides)
    if (B, s, l, h, V) != (c.batch, c.seq, c.layers, c.hidden, vocab):
        raise CheckError(f"{label}: config.* lines give B, s, l, h, V = {(B, s, l, h, V)}, "
                         f"the preset {(c.batch, c.seq, c.layers, c.hidden, vocab)}")
    if stats["tokens_per_step"] != B * s:
        raise CheckError(f"{label}: tokens_per_step {stats['tokens_per_step']} != B s = {B * s}")
    full = 96 * l * h * h * (1 + Fraction(s, 6 * h) + Fraction(V, 16 * l * h))
    train = 72 * l * h * h * (1 + Fraction(s, 6 * h) + Fraction(V, 12 * l * h))
    compare(label, "training_flops_per_token_full_recompute",
            stats["training_flops_per_token_full_recompute"], full, "megatron")
    compare(label, "training_flops_per_token", stats["training_flops_per_token"], train,
            "megatron")


def check_llama(braid_opt, argv, overrides):
    label = " ".join(argv)
    stats = preset_stats(braid_opt, argv)
    c, V = config_of(argv, overrides)
    h, s, L = c.hidden, c.seq, c.layers
    heads = c.heads
    kv = c.kv_heads or heads
    hd = c.head_dim or h // heads
    # wq, wk, wv, wo, then w_gate, w_up, w_down
    weights = h * heads * hd + 2 * h * kv * hd + heads * hd * h + 3 * h * c.ffn
    layer = 2 * weights + 4 * s * heads * hd
    head = 2 * h * V
    forward = Fraction(L * layer + head)
    compare(label, "forward_flops_per_token", stats["forward_flops_per_token"], forward,
            "closed_form")
    compare(label, "layer.llama_layer.forward_flops_per_token",
            stats["layer.llama_layer.forward_flops_per_token"], Fraction(layer), "closed_form")
    if stats["layer.llama_layer.calls"] != L:
        raise CheckError(f"{label}: {stats['layer.llama_layer.calls']} layer calls, not {L}")


def main(braid_opt):
    for argv, overrides in GPT_CASES:
        check_gpt(braid_opt, argv, overrides)
    for argv, overrides in LLAMA_CASES:
        check_llama(braid_opt, argv, overrides)
    print("all FLOP formulas hold")


run_checks(lambda: main(sys.argv[1]))
