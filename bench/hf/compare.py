#!/usr/bin/env python3
"""The peer check of Braid's Hugging Face loading (issue 46): each supported
architecture at a small size, built and initialized by `transformers` itself
and saved with save_pretrained; Braid loads the same directory
(braid.from_hf, braid.run(init_from=DIR), braid.generate(init_from=DIR)).
One row per architecture: the parameter counts, the largest logit difference
of one step's batch relative to the largest logit (f32; passes under 1e-4),
and whether greedy generation gives the same ids.

  pip install torch transformers
  python3 bench/hf/compare.py                 # every architecture
  python3 bench/hf/compare.py --arch mixtral   # one (see --list)
  python3 bench/hf/compare.py --self-check     # no torch: the numpy reference

--self-check runs the same Braid half against checkpoints written with numpy
and safetensors, with test/Integration/Inputs/hf_reference.py (transformers'
forward in float64 numpy) as the peer. Exits 1 when a row fails, 2 when the
peer's packages are missing.
"""
import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [os.path.join(ROOT, "python"), os.path.join(ROOT, "bench")]

import braid  # noqa: E402
from braid import checkpoint  # noqa: E402
from braid.families import build_model  # noqa: E402
from machine import describe  # noqa: E402

SEQ, BATCH, NEW_TOKENS, TOLERANCE = 16, 2, 6, 1e-4
PROMPTS = [[1, 2, 3, 4, 5], [7, 8, 9]]

# transformers' config class and its arguments, per architecture: small enough
# to run in seconds on a CPU, every feature Braid maps switched on somewhere
# (GQA, tied and untied heads, Qwen3's head_dim != hidden / heads, both
# routers' normalizations, Jamba's four mixer x FFN combinations).
_SMALL = dict(vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
TRANSFORMERS_CONFIGS = {
    "llama": ("LlamaConfig", dict(_SMALL)),
    # Braid refuses windowed attention, which Mistral's and Mixtral's classes default to.
    "mistral": ("MistralConfig", dict(_SMALL, sliding_window=None)),
    "qwen2": ("Qwen2Config", dict(_SMALL, tie_word_embeddings=True)),
    "qwen3": ("Qwen3Config", dict(_SMALL, head_dim=16)),
    "gpt2": ("GPT2Config", dict(vocab_size=96, n_embd=32, n_head=4, n_layer=2, n_positions=64)),
    "mixtral": ("MixtralConfig", dict(_SMALL, num_local_experts=4, num_experts_per_tok=2,
                                      sliding_window=None)),
    "qwen3_moe": ("Qwen3MoeConfig", dict(_SMALL, num_experts=4, num_experts_per_tok=2,
                                         moe_intermediate_size=24, norm_topk_prob=True,
                                         decoder_sparse_step=1, mlp_only_layers=[],
                                         head_dim=8)),
    "mamba": ("MambaConfig", dict(vocab_size=96, hidden_size=32, state_size=8,
                                  num_hidden_layers=2, expand=2, conv_kernel=4,
                                  time_step_rank=4)),
    # Attention at layers 1 and 3, experts at 0 and 3.
    "jamba": ("JambaConfig", dict(_SMALL, num_hidden_layers=4, attn_layer_period=2,
                                  attn_layer_offset=1, expert_layer_period=3,
                                  expert_layer_offset=0, num_experts=4, num_experts_per_tok=2,
                                  mamba_d_state=8, mamba_d_conv=4, mamba_expand=2,
                                  mamba_dt_rank=4, use_mamba_kernels=False)),
}


class TransformersPeer:
    """transformers' own model of each configuration, in float32."""

    def __init__(self):
        import torch
        import transformers
        self.torch, self.transformers, self.model = torch, transformers, None
        torch.set_num_threads(os.cpu_count() or 1)

    @staticmethod
    def archs():
        return list(TRANSFORMERS_CONFIGS)

    def build(self, arch, directory):
        """Writes the model of `arch` into `directory`; its parameter count."""
        torch = self.torch
        cls, kwargs = TRANSFORMERS_CONFIGS[arch]
        config = getattr(self.transformers, cls)(**kwargs)
        torch.manual_seed(0)
        model = self.transformers.AutoModelForCausalLM.from_config(config).float()
        # transformers' init leaves norms at one and weights at std 0.02: the
        # attention would be near uniform and a misplaced norm weight unseen.
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p), alpha=0.15)
        model.eval()
        # No early stop: Braid generates exactly the asked number of tokens.
        # (min_new_tokens would instead mask the eos logit and change greedy ids.)
        model.generation_config.eos_token_id = None
        model.generation_config.pad_token_id = 0
        model.save_pretrained(directory, safe_serialization=True)
        self.model = model
        return sum(p.numel() for p in model.parameters())

    def logits(self, tokens):
        with self.torch.no_grad():
            return self.model(self.torch.tensor(tokens, dtype=self.torch.long)).logits.numpy()

    def generate(self, prompt, n):
        ids = self.torch.tensor([prompt], dtype=self.torch.long)
        with self.torch.no_grad():
            out = self.model.generate(ids, attention_mask=self.torch.ones_like(ids),
                                      max_new_tokens=n, do_sample=False)
        return out[0, len(prompt):].tolist()

    def versions(self):
        return f"torch {self.torch.__version__}, transformers {self.transformers.__version__}"


class ReferencePeer:
    """--self-check: the numpy checkpoints and forward of the integration test."""

    def __init__(self):
        sys.path.insert(0, os.path.join(ROOT, "test", "Integration", "Inputs"))
        import hf_reference
        self.ref, self.config, self.tensors = hf_reference, None, None

    def archs(self):
        return list(self.ref.CONFIGS)

    def build(self, arch, directory):
        self.config, self.tensors = self.ref.checkpoint(arch)
        with open(os.path.join(directory, "config.json"), "w") as f:
            json.dump(self.config, f)
        checkpoint.write_safetensors(os.path.join(directory, "model.safetensors"),
                                     self.tensors, "f32")
        # GPT-2's causal-mask buffers are in the file but are not parameters.
        return sum(a.size for k, a in self.tensors.items() if not k.endswith(".attn.bias"))

    def logits(self, tokens):
        return self.ref.forward(self.config, self.tensors, tokens)

    def generate(self, prompt, n):
        return self.ref.greedy(self.config, self.tensors, prompt, n)

    def versions(self):
        return f"numpy {np.__version__} (test/Integration/Inputs/hf_reference.py, float64)"


@dataclasses.dataclass
class Row:
    arch: str
    architecture: str = "?"
    braid_params: int = 0
    peer_params: int = 0
    difference: float = float("nan")
    same_ids: bool = False
    seconds: float = 0.0
    error: str = ""

    def passed(self):
        return (not self.error and self.difference < TOLERANCE and self.same_ids
                and self.braid_params == self.peer_params)


def compare(peer, arch, work):
    """One architecture: the peer writes the directory, both sides run it."""
    row, start = Row(arch), time.time()
    directory = os.path.join(work, arch)
    os.makedirs(directory)
    try:
        row.peer_params = peer.build(arch, directory)
        with open(os.path.join(directory, "config.json")) as f:
            row.architecture = json.load(f)["architectures"][0]
        cfg = braid.from_hf(directory, seq=SEQ, batch=BATCH)
        row.braid_params = build_model(cfg).num_parameters()
        dumps = braid.run(cfg, init_from=directory, steps=1, dump=True).dumps
        want = np.asarray(peer.logits(dumps["tokens"]), np.float64)
        got = dumps["logits"].astype(np.float64)
        row.difference = float(np.abs(got - want).max() / np.abs(want).max())
        braid_ids = braid.generate(cfg, PROMPTS, NEW_TOKENS, init_from=directory)
        row.same_ids = braid_ids == [peer.generate(p, NEW_TOKENS) for p in PROMPTS]
    except Exception as e:  # a row's failure is reported, the others still run
        row.error = f"{type(e).__name__}: {e}".splitlines()[0]
    row.seconds = time.time() - start
    return row


def print_table(rows, peer_name):
    print(f"{'architecture':<32} {'params Braid':>12} {'params ' + peer_name:>20} "
          f"{'max |dlogit|/max|logit|':>24} {'<' + format(TOLERANCE, 'g'):>6} "
          f"{'same ids':>8} {'s':>5}")
    for r in rows:
        name = f"{r.arch} ({r.architecture})"
        if r.error:
            print(f"{name:<32} FAIL: {r.error}")
            continue
        print(f"{name:<32} {r.braid_params:>12} {r.peer_params:>20} {r.difference:>24.2e} "
              f"{'pass' if r.difference < TOLERANCE else 'FAIL':>6} "
              f"{'yes' if r.same_ids else 'NO':>8} {r.seconds:>5.1f}")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--arch", action="append", metavar="NAME",
                   help="run only this architecture (repeatable; see --list)")
    p.add_argument("--list", action="store_true", help="print the architectures and exit")
    p.add_argument("--self-check", action="store_true",
                   help="the numpy reference as the peer (no torch needed)")
    return p.parse_args(argv)


def make_peer(self_check):
    if self_check:
        return ReferencePeer(), "reference"
    try:
        return TransformersPeer(), "transformers"
    except ImportError as e:
        print(f"compare.py: the peer needs torch and transformers ({e}).\n"
              "Install them with: pip install torch transformers\n"
              "(or run python3 bench/hf/compare.py --self-check, whose peer is numpy)",
              file=sys.stderr)
        sys.exit(2)


def main(argv=None):
    args = parse_args(argv)
    archs = list(ReferencePeer().archs() if args.self_check else TransformersPeer.archs())
    if args.list:
        print("\n".join(archs))
        return 0
    unknown = [a for a in args.arch or [] if a not in archs]
    if unknown:
        print(f"compare.py: unknown architecture {unknown[0]!r} (known: {', '.join(archs)})",
              file=sys.stderr)
        return 2
    peer, peer_name = make_peer(args.self_check)
    with tempfile.TemporaryDirectory(prefix="braid-hf-compare-") as work:
        rows = [compare(peer, a, work) for a in (args.arch or archs)]
    print_table(rows, peer_name)
    print(f"seq {SEQ}, batch {BATCH}; generation: {len(PROMPTS)} prompts x {NEW_TOKENS} "
          "greedy tokens; f32")
    print(f"machine: {describe()}")
    print(f"peer: {peer.versions()}")
    failed = [r.arch for r in rows if not r.passed()]
    print(f"{len(rows) - len(failed)} passed, {len(failed)} failed" +
          (f" ({', '.join(failed)})" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
