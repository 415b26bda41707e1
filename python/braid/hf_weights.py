"""The weights of a Hugging Face model directory, as a map the runtime loads.

    python3 -m braid.hf_weights Qwen3-8B --seq 2048 -o weights.json
    cfg = braid.from_hf("Qwen3-8B")
    braid.hf_weights.write_weights_map(cfg, "Qwen3-8B", "weights.json")

A directory holds config.json and model.safetensors, or
model.safetensors.index.json (whose "weight_map" names each entry's file) and
its shards, or one *.safetensors file. Only the safetensors headers are read
here; the runtime reads the data. `weights_map` checks every entry against the
Braid model of the configuration and raises a `WeightsError` (a
braid.ArgumentError) naming the tensor and the file: a tensor Braid needs
that the checkpoint lacks (`MissingWeightError`), an entry that maps to
nothing (`UnexpectedWeightError`), a wrong shape (`WeightShapeError`), a
dtype other than F32/BF16/F16 (`WeightDtypeError`), a header whose data runs
past its file or an index naming a file that does not exist
(`WeightsFileError`). All problems of the first kind found are reported.

The map (format "braid-weights", version 1):

    {"format": "braid-weights", "version": 1, "source": "<the directory as given>",
     "files": [{"path": "<absolute path>", "bytes": <size>}, ...],
     "tensors": [{"name": "<Braid parameter>", "shape": [...],
                  "pieces": [{"file": "<a path of files>", "key": "<entry>",
                              "dtype": "F32|BF16|F16", "entry_shape": [...],
                              "view": [...], "transpose": bool,
                              "from": [...], "to": [...], "shape": [...]}]}]}

Braid[to + i] = T[from + i] for every i < shape, where T is the entry read as
`view` (same element count, the Braid tensor's rank) with, if `transpose`,
its last two axes swapped. A tensor's pieces cover it exactly once; tensors
are listed in Braid's parameter order, every parameter once.

The naming (HF -> Braid; "^T" marks a transposed nn.Linear weight: HF stores
[out, in], Braid [in, out]):

  Llama, Mistral, Qwen2, Qwen3 (model.layers.{i}. -> layers.{i}.):
    model.embed_tokens.weight -> tok_embeddings; model.norm.weight -> norm;
    lm_head.weight^T -> output (absent when tied: an lm_head.weight in the
    file is then ignored, as transformers ties it to the embedding);
    input_layernorm -> attn_norm; self_attn.{q,k,v,o}_proj.weight^T ->
    attn.{wq,wk,wv,wo}; self_attn.{q,k,v,o}_proj.bias -> attn.{bq,bk,bv,bo};
    self_attn.{q,k}_norm -> attn.{q,k}_norm; post_attention_layernorm ->
    mlp_norm (moe_norm); mlp.{gate,up,down}_proj.weight^T -> mlp.{w_gate,w_up,w_down}.
  Mixtral: block_sparse_moe.gate.weight^T -> moe.router;
    block_sparse_moe.experts.{e}.{w1,w3,w2}.weight^T -> moe.{w_gate,w_up,w_down}[e]
    (the entry viewed as [1, out, in], transposed, at box [e, 0, 0]).
  Qwen3-MoE: mlp.gate.weight^T -> moe.router;
    mlp.experts.{e}.{gate,up,down}_proj.weight^T -> moe.{w_gate,w_up,w_down}[e].
  GPT-2 (transformer.h.{i}. -> layers.{i}.; the "transformer." prefix may be
    absent from the file): wte -> tok_embeddings; wpe -> pos_embeddings;
    ln_1 -> attn_norm, attn_norm_bias; attn.c_attn (a Conv1D, [in, out]
    already) columns [0,H), [H,2H), [2H,3H) -> attn.wq, wk, wv (bias likewise
    -> bq, bk, bv); attn.c_proj -> attn.wo, bo; ln_2 -> mlp_norm,
    mlp_norm_bias; mlp.c_fc -> mlp.w_up, b_up; mlp.c_proj -> mlp.w_down,
    b_down; ln_f -> norm, norm_bias. The causal-mask buffers h.{i}.attn.bias
    and h.{i}.attn.masked_bias are not weights and are ignored.
  Mamba (backbone.layers.{i}. -> layers.{i}.): backbone.embeddings ->
    tok_embeddings; backbone.norm_f -> norm; norm -> mamba_norm;
    mixer.in_proj.weight^T columns [0,DI), [DI,2DI) -> mamba.in_x, in_z (its
    bias -> b_in_x, b_in_z); mixer.conv1d.weight [DI,1,K] viewed [DI,K] ->
    conv_w; conv1d.bias -> conv_b; mixer.x_proj.weight^T columns [0,R),
    [R,R+N), [R+N,R+2N) -> x_dt, x_B, x_C; dt_proj.weight^T -> dt_proj;
    dt_proj.bias -> dt_bias; A_log, D; out_proj.weight^T -> out_proj (its
    bias -> out_bias).
  Jamba (model.layers.{i}.): attention layers as Llama's, Mamba layers'
    mixer under mamba. as Mamba's plus dt_layernorm, b_layernorm,
    c_layernorm -> mamba.dt_norm, B_norm, C_norm; input_layernorm ->
    attn_norm or mamba_norm; pre_ff_layernorm -> mlp_norm or moe_norm;
    feed_forward.{gate,up,down}_proj -> mlp.*; feed_forward.router ->
    moe.router; feed_forward.experts.{e}.{gate,up,down}_proj -> moe.*[e];
    model.final_layernorm -> norm.

Every architecture also ignores rotary_emb.inv_freq buffers (derived from
rope_theta). A model built with fewer layers than config.json's (--layers)
takes the first ones; the entries of the others are ignored.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from dataclasses import dataclass
from typing import Mapping, Sequence

from .config import ModelConfig
from .errors import ArgumentError, ArgumentTypeError, BraidError, PathNotFoundError
from .families import build_model
from .hf import _architecture, from_hf, read_hf_config

__all__ = ["weights_map", "write_weights_map", "hf_layout", "read_checkpoint", "Piece",
           "WeightsError", "MissingWeightError", "UnexpectedWeightError", "WeightShapeError",
           "WeightDtypeError", "WeightsFileError", "to_hf", "main"]

DTYPES = ("F32", "BF16", "F16")


class WeightsError(ArgumentError):
    """A checkpoint that does not hold the weights of the Braid model.
    `.problems` lists (tensor, file, detail) of every problem of its kind."""

    def __init__(self, message: str, problems: Sequence[tuple] = ()):
        super().__init__(message)
        self.problems = list(problems)


class MissingWeightError(WeightsError):
    """A tensor Braid needs is not in the checkpoint."""


class UnexpectedWeightError(WeightsError):
    """An entry of the checkpoint maps to no Braid parameter."""


class WeightShapeError(WeightsError):
    """An entry's shape is not the one the configuration gives."""


class WeightDtypeError(WeightsError):
    """An entry's dtype is not F32, BF16 or F16."""


class WeightsFileError(WeightsError):
    """A safetensors file that is truncated or unreadable, or an index naming
    a file that does not exist."""


def _raise(cls, what: str, problems: list) -> None:
    # The first few by name: a wrong configuration can make every entry wrong.
    shown = "; ".join(f"{t} ({f}){': ' + d if d else ''}" for t, f, d in problems[:8])
    more = f"; and {len(problems) - 8} more" if len(problems) > 8 else ""
    raise cls(f"{len(problems)} {what}: {shown}{more}", problems)


# --------------------------------------------------------------------------
# Safetensors headers
# --------------------------------------------------------------------------

_ITEM_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2,
               "I8": 1, "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1,
               "F8_E4M3": 1, "F8_E5M2": 1}


@dataclass(frozen=True)
class Entry:
    """A safetensors entry as its header describes it."""
    file: str
    dtype: str
    shape: tuple


def read_header(path: str) -> dict:
    """{key: Entry} of one safetensors file, from its header alone; a header
    that does not parse or whose data runs past the file raises
    WeightsFileError naming the file."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(8)
        n = int.from_bytes(head, "little") if len(head) == 8 else -1
        if n < 0 or 8 + n > size:
            _raise(WeightsFileError, "unreadable safetensors file",
                   [("header", path, f"the file has {size} bytes, its header says "
                     f"{n} header bytes")])
        try:
            header = json.loads(f.read(n))
        except ValueError as e:
            _raise(WeightsFileError, "unreadable safetensors file", [("header", path, str(e))])
    data, entries, bad = size - 8 - n, {}, []
    for key, e in header.items():
        if key == "__metadata__":
            continue
        try:
            begin, end = (int(x) for x in e["data_offsets"])
            shape = tuple(int(d) for d in e["shape"])
            count = math.prod(shape)
        except (KeyError, TypeError, ValueError) as err:
            bad.append((key, path, f"malformed header entry ({type(err).__name__}: {err})"))
            continue
        if not 0 <= begin <= end:
            bad.append((key, path, f"data offsets [{begin}, {end}]"))
        elif end > data:
            bad.append((key, path, f"its data ends at byte {end} of {data} (truncated file)"))
        elif e["dtype"] in _ITEM_BYTES and end - begin != count * _ITEM_BYTES[e["dtype"]]:
            bad.append((key, path, f"{end - begin} bytes for {e['dtype']} {list(shape)}"))
        entries[key] = Entry(path, e["dtype"], shape)
    if bad:
        _raise(WeightsFileError, "bad entries (truncated or corrupt file)", bad)
    return entries


def _checkpoint_files(hf_dir: str) -> tuple[list, str]:
    """(the safetensors files of a directory, what names them)."""
    index = os.path.join(hf_dir, "model.safetensors.index.json")
    if os.path.isfile(index):
        with open(index, encoding="utf-8") as f:
            weight_map = json.load(f)["weight_map"]
        files, absent = [], []
        for key, name in weight_map.items():
            path = os.path.abspath(os.path.join(hf_dir, name))
            if not os.path.isfile(path):
                absent.append((key, path, "the index names this file, which does not exist"))
            elif path not in files:
                files.append(path)
        if absent:
            _raise(WeightsFileError, f"tensors of {index} in missing files", absent)
        return files, index
    single = os.path.join(hf_dir, "model.safetensors")
    found = [single] if os.path.isfile(single) else sorted(
        os.path.join(hf_dir, n) for n in os.listdir(hf_dir) if n.endswith(".safetensors"))
    if len(found) != 1:
        raise PathNotFoundError(f"{hf_dir}: no model.safetensors.index.json, and "
                                f"{len(found)} *.safetensors files (expected one)", hf_dir)
    return [os.path.abspath(found[0])], os.path.abspath(found[0])


def read_checkpoint(hf_dir: str) -> tuple[dict, list, str]:
    """({key: Entry}, files, source) of a Hugging Face directory; `source`
    is the index or the single file, for messages."""
    files, source = _checkpoint_files(hf_dir)
    entries, twice = {}, []
    for path in files:
        for key, e in read_header(path).items():
            if key in entries:
                twice.append((key, path, f"also in {entries[key].file}"))
            entries[key] = e
    if twice:
        _raise(WeightsFileError, "entries in two files", twice)
    return entries, files, source


# --------------------------------------------------------------------------
# The naming table: each Braid parameter as boxes of HF tensors
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Piece:
    """Braid[dst + i] = T[src + i], i < shape; T is the HF tensor `key`
    ([entry_shape]) read as `view`, its last two axes swapped if `transpose`."""
    key: str
    entry_shape: tuple
    view: tuple
    transpose: bool
    src: tuple
    dst: tuple
    shape: tuple


def _whole(key: str, shape: tuple, entry_shape: tuple | None = None) -> list:
    zero = (0,) * len(shape)
    return [Piece(key, entry_shape or shape, shape, False, zero, zero, shape)]


def _linear(key: str, shape: tuple) -> list:
    """An nn.Linear weight: [out, in] in the file, [in, out] in Braid."""
    return [Piece(key, shape[::-1], shape[::-1], True, (0, 0), (0, 0), shape)]


def _columns(key: str, entry_shape: tuple, start: int, shape: tuple, transpose: bool) -> list:
    """Braid's tensor as the columns [start, start + shape[-1]) of the
    (transposed) entry: fused projections (in_proj, x_proj, c_attn)."""
    src = (0,) * (len(shape) - 1) + (start,)
    return [Piece(key, entry_shape, entry_shape, transpose, src, (0,) * len(shape), shape)]


def _experts(pattern: str, shape: tuple) -> list:
    """[E, in, out] stacked from one nn.Linear [out, in] per expert."""
    e, a, b = shape
    return [Piece(pattern.format(e=i), (b, a), (1, b, a), True, (0, 0, 0), (i, 0, 0),
                  (1, a, b)) for i in range(e)]


# Per-architecture names: the layer prefix, the norms' names by Braid block,
# where each block's weights live.
_LLAMA = dict(embed="model.embed_tokens.weight", norm="model.norm.weight",
              layer="model.layers.{i}.", attn="self_attn.", mlp="mlp.",
              attn_norm="input_layernorm", mlp_norm="post_attention_layernorm",
              moe_norm="post_attention_layernorm", mamba_norm=None,
              router="mlp.gate", experts="mlp.experts.{e}.",
              expert=("gate_proj", "up_proj", "down_proj"))
_SCHEMES = {
    "LlamaForCausalLM": _LLAMA, "MistralForCausalLM": _LLAMA,
    "Qwen2ForCausalLM": _LLAMA, "Qwen3ForCausalLM": _LLAMA, "Qwen3MoeForCausalLM": _LLAMA,
    "MixtralForCausalLM": dict(_LLAMA, router="block_sparse_moe.gate",
                               experts="block_sparse_moe.experts.{e}.",
                               expert=("w1", "w3", "w2")),
    "MambaForCausalLM": dict(_LLAMA, embed="backbone.embeddings.weight",
                             norm="backbone.norm_f.weight", layer="backbone.layers.{i}.",
                             mamba="mixer.", mamba_norm="norm"),
    "JambaForCausalLM": dict(_LLAMA, norm="model.final_layernorm.weight", mlp="feed_forward.",
                             mlp_norm="pre_ff_layernorm", moe_norm="pre_ff_layernorm",
                             mamba_norm="input_layernorm", mamba="mamba.",
                             router="feed_forward.router",
                             experts="feed_forward.experts.{e}."),
}
_ATTN = {"wq": "q_proj", "wk": "k_proj", "wv": "v_proj", "wo": "o_proj"}
_BIAS = {"bq": "q_proj", "bk": "k_proj", "bv": "v_proj", "bo": "o_proj"}
_FFN = {"w_gate": 0, "w_up": 1, "w_down": 2}
_MAMBA_NORMS = {"dt_norm": "dt_layernorm", "B_norm": "b_layernorm", "C_norm": "c_layernorm"}


def _mamba(w: str, shape: tuple, p: str, cfg: ModelConfig) -> list | None:
    di, r, n = cfg.d_inner, cfg.dt_rank, cfg.d_state
    in_proj, x_proj = (2 * di, cfg.hidden), (r + 2 * n, di)
    table = {
        "in_x": lambda: _columns(p + "in_proj.weight", in_proj, 0, shape, True),
        "in_z": lambda: _columns(p + "in_proj.weight", in_proj, di, shape, True),
        "b_in_x": lambda: _columns(p + "in_proj.bias", (2 * di,), 0, shape, False),
        "b_in_z": lambda: _columns(p + "in_proj.bias", (2 * di,), di, shape, False),
        "conv_w": lambda: _whole(p + "conv1d.weight", shape, (di, 1, cfg.d_conv)),
        "conv_b": lambda: _whole(p + "conv1d.bias", shape),
        "x_dt": lambda: _columns(p + "x_proj.weight", x_proj, 0, shape, True),
        "x_B": lambda: _columns(p + "x_proj.weight", x_proj, r, shape, True),
        "x_C": lambda: _columns(p + "x_proj.weight", x_proj, r + n, shape, True),
        "dt_proj": lambda: _linear(p + "dt_proj.weight", shape),
        "dt_bias": lambda: _whole(p + "dt_proj.bias", shape),
        "A_log": lambda: _whole(p + "A_log", shape),
        "D": lambda: _whole(p + "D", shape),
        "out_proj": lambda: _linear(p + "out_proj.weight", shape),
        "out_bias": lambda: _whole(p + "out_proj.bias", shape),
    }
    if w in _MAMBA_NORMS:
        return _whole(p + _MAMBA_NORMS[w] + ".weight", shape)
    return table[w]() if w in table else None


def _layer_rule(local: str, shape: tuple, s: dict, p: str, cfg: ModelConfig) -> list | None:
    """The pieces of layers.{i}.<local>; p is the HF layer prefix."""
    block, _, w = local.partition(".")
    if not w:
        return _whole(p + s[block] + ".weight", shape) if s.get(block) else None
    if block == "attn":
        if w in _ATTN:
            return _linear(p + s["attn"] + _ATTN[w] + ".weight", shape)
        if w in _BIAS:
            return _whole(p + s["attn"] + _BIAS[w] + ".bias", shape)
        if w in ("q_norm", "k_norm"):
            return _whole(p + s["attn"] + w + ".weight", shape)
    if block == "mlp" and w in _FFN:
        return _linear(p + s["mlp"] + ("gate_proj", "up_proj", "down_proj")[_FFN[w]]
                       + ".weight", shape)
    if block == "moe" and w == "router":
        return _linear(p + s["router"] + ".weight", shape)
    if block == "moe" and w in _FFN:
        return _experts(p + s["experts"] + s["expert"][_FFN[w]] + ".weight", shape)
    if block == "mamba" and s.get("mamba"):
        return _mamba(w, shape, p + s["mamba"], cfg)
    return None


_GPT_LAYER = {"attn_norm": "ln_1.weight", "attn_norm_bias": "ln_1.bias",
              "attn.wo": "attn.c_proj.weight", "attn.bo": "attn.c_proj.bias",
              "mlp_norm": "ln_2.weight", "mlp_norm_bias": "ln_2.bias",
              "mlp.w_up": "mlp.c_fc.weight", "mlp.b_up": "mlp.c_fc.bias",
              "mlp.w_down": "mlp.c_proj.weight", "mlp.b_down": "mlp.c_proj.bias"}
_GPT_TOP = {"tok_embeddings": "wte.weight", "pos_embeddings": "wpe.weight",
            "norm": "ln_f.weight", "norm_bias": "ln_f.bias"}


def _gpt2_rule(name: str, shape: tuple, cfg: ModelConfig) -> list | None:
    """GPT-2's Conv1D weights are [in, out] already: no transposes, and
    c_attn's q, k, v are column blocks of one entry."""
    if name in _GPT_TOP:
        return _whole("transformer." + _GPT_TOP[name], shape)
    m = re.fullmatch(r"layers\.(\d+)\.(.+)", name)
    if not m:
        return None
    p, local, h = f"transformer.h.{m.group(1)}.", m.group(2), cfg.hidden
    if local in _GPT_LAYER:
        return _whole(p + _GPT_LAYER[local], shape)
    qkv = {"attn.wq": 0, "attn.wk": 1, "attn.wv": 2, "attn.bq": 0, "attn.bk": 1, "attn.bv": 2}
    if local in qkv:
        weight = local.startswith("attn.w")
        key = p + "attn.c_attn." + ("weight" if weight else "bias")
        entry = (h, 3 * h) if weight else (3 * h,)
        return _columns(key, entry, qkv[local] * h, shape, False)
    return None


def _rule(name: str, shape: tuple, arch: str, cfg: ModelConfig) -> list | None:
    if name == "output":
        return _linear("lm_head.weight", shape)
    if arch == "GPT2LMHeadModel":
        return _gpt2_rule(name, shape, cfg)
    s = _SCHEMES[arch]
    if name == "tok_embeddings":
        return _whole(s["embed"], shape)
    if name == "norm":
        return _whole(s["norm"], shape)
    m = re.fullmatch(r"layers\.(\d+)\.(.+)", name)
    return _layer_rule(m.group(2), shape, s, s["layer"].format(i=m.group(1)), cfg) if m else None


def hf_layout(model: ModelConfig, arch: str) -> list:
    """[(Braid name, shape, [Piece])] of every parameter of build_model(model),
    in its order, for the Hugging Face architecture `arch`: the one table
    both import (weights_map) and export (braid.checkpoint export-hf) read."""
    cfg = model.resolved()
    if cfg.padded_vocab != cfg.vocab:
        raise WeightsError(f"{cfg.name}: pad_vocab_multiple {cfg.pad_vocab_multiple} pads "
                           f"tok_embeddings to {cfg.padded_vocab} rows; a Hugging Face "
                           f"checkpoint holds {cfg.vocab}, and no weights for the others")
    layout, unmapped = [], []
    for name, param in build_model(cfg).params.items():
        shape = tuple(param.type.shape)
        pieces = _rule(name, shape, arch, cfg)
        if pieces is None:
            unmapped.append((name, arch, "Braid has no Hugging Face name for it"))
        layout.append((name, shape, pieces))
    if unmapped:
        _raise(WeightsError, f"parameters of {cfg.name} without a {arch} tensor", unmapped)
    return layout


def _box(start: tuple, shape: tuple) -> tuple:
    return tuple(slice(a, a + n) for a, n in zip(start, shape))


def _check_braid(layout: list, tensors: Mapping, source: str) -> None:
    """Refuse Braid tensors that are not the model's (optimizer states
    "opt.*" aside), naming the tensor."""
    want = {name: shape for name, shape, _ in layout}
    missing = [(n, source, "") for n in want if n not in tensors]
    shapes = [(n, source, f"shape {list(tensors[n].shape)}, expected {list(s)}")
              for n, s in want.items() if n in tensors and tuple(tensors[n].shape) != s]
    extra = [(n, source, "not a parameter of the model") for n in tensors
             if n not in want and not n.startswith("opt.")]
    for cls, what, problems in ((MissingWeightError, "parameters missing", missing),
                                (WeightShapeError, "parameters of the wrong shape", shapes),
                                (UnexpectedWeightError, "unexpected tensors", extra)):
        if problems:
            _raise(cls, what, problems)


def to_hf(model: ModelConfig, arch: str, tensors: Mapping, source: str = "tensors") -> dict:
    """{HF name: numpy array} of Braid's global tensors: the inverse of the
    map, read from the same table (each HF tensor assembled from the boxes
    of the Braid tensors it feeds). Arrays keep the Braid tensors' dtype."""
    import numpy as np

    layout = hf_layout(model, arch)
    _check_braid(layout, tensors, source)
    views, filled, entries = {}, {}, {}
    for name, _, pieces in layout:
        src = np.asarray(tensors[name])
        for p in pieces:
            if p.key not in views:
                # Written in the transposed view, swapped back below.
                shape = p.view[:-2] + p.view[:-3:-1] if p.transpose else p.view
                views[p.key] = np.zeros(shape, dtype=src.dtype)
                filled[p.key], entries[p.key] = 0, p
            views[p.key][_box(p.src, p.shape)] = src[_box(p.dst, p.shape)]
            filled[p.key] += math.prod(p.shape)
    out = {}
    for key, t in views.items():
        # The table covers each HF tensor exactly once; a gap would export zeros.
        assert filled[key] == t.size, f"{key}: {filled[key]} of {t.size} elements mapped"
        t = np.swapaxes(t, -1, -2) if entries[key].transpose else t
        out[key] = np.ascontiguousarray(t).reshape(entries[key].entry_shape)
    return out


# --------------------------------------------------------------------------
# Matching a checkpoint against the table
# --------------------------------------------------------------------------

def _ignored(key: str, arch: str, tied: bool, layers: int, file_layers: int) -> bool:
    """Entries that are not Braid weights: buffers saved by old versions
    (GPT-2's causal masks, RoPE's inv_freq, both derived from the config),
    a tied lm_head (transformers ties it to the embedding on load, so the
    embedding's values win), and layers a --layers override left out."""
    if re.search(r"\.rotary_emb\.inv_freq$", key):
        return True
    if arch == "GPT2LMHeadModel" and re.fullmatch(r"transformer\.h\.\d+\.attn\.(masked_)?bias",
                                                  key):
        return True
    if tied and key == "lm_head.weight":
        return True
    m = re.search(r"(?:^|\.)(?:layers|h)\.(\d+)\.", key)
    return bool(m) and layers <= int(m.group(1)) < file_layers


def _canonical(entries: dict, arch: str) -> dict:
    """{transformers' state-dict name: the file's key}: GPT-2 files name
    their tensors with or without GPT2LMHeadModel's "transformer." prefix."""
    if arch != "GPT2LMHeadModel":
        return {k: k for k in entries}
    out = {}
    for key in entries:
        name = key if key.startswith("transformer.") or key == "lm_head.weight" \
            else "transformer." + key
        if name in out:
            _raise(WeightsFileError, "tensors named twice", [(name, entries[key].file,
                                                              f"as {out[name]} and {key}")])
        out[name] = key
    return out


def _file_layers(config: Mapping) -> int:
    for key in ("num_hidden_layers", "n_layer"):
        if isinstance(config.get(key), int):
            return config[key]
    return 0


def _piece_json(piece: Piece, key: str, entry: Entry) -> dict:
    return {"file": entry.file, "key": key, "dtype": entry.dtype,
            "entry_shape": list(entry.shape), "view": list(piece.view),
            "transpose": piece.transpose, "from": list(piece.src), "to": list(piece.dst),
            "shape": list(piece.shape)}


def _match(layout: list, entries: dict, names: dict, source: str) -> tuple[list, set]:
    """The map's tensors and the keys they use; raises the first kind of
    problem found (missing, shape, dtype) with all its cases."""
    missing, shapes, dtypes, used, tensors = [], [], [], set(), []
    for name, shape, pieces in layout:
        out = []
        for piece in pieces:
            key = names.get(piece.key)
            if key is None:
                missing.append((piece.key, source, f"for Braid's {name}"))
                continue
            # A fused entry (in_proj, c_attn) feeds several tensors: checked once.
            e, checked = entries[key], key in used
            used.add(key)
            if not checked and e.shape != piece.entry_shape:
                shapes.append((key, e.file, f"shape {list(e.shape)}, expected "
                               f"{list(piece.entry_shape)} for Braid's {name}"))
            if not checked and e.dtype not in DTYPES:
                dtypes.append((key, e.file, f"dtype {e.dtype}, expected one of "
                               f"{', '.join(DTYPES)}"))
            out.append(_piece_json(piece, key, e))
        tensors.append({"name": name, "shape": list(shape), "pieces": out})
    for cls, what, problems in ((MissingWeightError, "tensors missing", missing),
                                (WeightShapeError, "tensors of the wrong shape", shapes),
                                (WeightDtypeError, "tensors of an unsupported dtype", dtypes)):
        if problems:
            _raise(cls, what, problems)
    return tensors, used


def weights_map(model: ModelConfig, hf_dir: str | os.PathLike) -> dict:
    """The weights map (format above) of the Hugging Face directory `hf_dir`
    for `model`, the ModelConfig of its config.json (braid.from_hf, with
    any overrides). Raises a WeightsError naming the tensor and the file."""
    hf_dir = os.fspath(hf_dir)
    config, file, _ = read_hf_config(hf_dir)
    arch = _architecture(config, file)
    layout = hf_layout(model, arch)
    entries, files, source = read_checkpoint(hf_dir)
    names = _canonical(entries, arch)
    cfg = model.resolved()
    tensors, used = _match(layout, entries, names, source)
    head = names.get("lm_head.weight")
    if cfg.tied_embeddings and head and entries[head].shape != (cfg.vocab, cfg.hidden):
        # Ignored as tied, but of another shape it is another model's head.
        _raise(WeightShapeError, "tensors of the wrong shape",
               [(head, entries[head].file, f"shape {list(entries[head].shape)}, expected "
                 f"{[cfg.vocab, cfg.hidden]} (tied to tok_embeddings)")])
    extra = [(k, entries[k].file, "no Braid parameter is made of it")
             for n, k in names.items() if k not in used and
             not _ignored(n, arch, cfg.tied_embeddings, cfg.layers, _file_layers(config))]
    if extra:
        _raise(UnexpectedWeightError, "unexpected tensors", extra)
    return {"format": "braid-weights", "version": 1, "source": hf_dir,
            "files": [{"path": f, "bytes": os.path.getsize(f)} for f in files],
            "tensors": tensors}


def write_weights_map(model: ModelConfig, hf_dir: str | os.PathLike,
                      out_path: str | os.PathLike) -> dict:
    """weights_map(model, hf_dir), written as JSON to `out_path`; returns it."""
    wmap = weights_map(model, hf_dir)
    # One tensor a line: a large model's map stays readable and diffable.
    head = json.dumps({k: v for k, v in wmap.items() if k != "tensors"})
    body = ",\n".join(json.dumps(t) for t in wmap["tensors"])
    with open(out_path, "w", encoding="utf-8") as f:
        f.write(f'{head[:-1]}, "tensors": [\n{body}\n]}}\n')
    return wmap


def map_for_run(model, init_from, scratch: str) -> str:
    """The weights map the runtime's --init-from reads, for `init_from`: a
    map file as it is, or a Hugging Face model directory (config.json and
    safetensors), whose map braid.hf_weights writes into `scratch` for
    `model`, which must then be the braid.ModelConfig of that configuration
    (braid.from_hf(directory, ...)). "" for None."""
    if init_from is None:
        return ""
    if not isinstance(init_from, (str, os.PathLike)):
        raise ArgumentTypeError("init_from must be a weights map or a Hugging Face model "
                                f"directory, found {type(init_from).__name__}")
    path = os.fspath(init_from)
    if os.path.isfile(path):
        return path
    if not os.path.isdir(path):
        raise PathNotFoundError(f"init_from {path!r} does not exist", path)
    if not isinstance(model, ModelConfig):
        raise ArgumentError(f"init_from={path!r} is a model directory: its weights map needs "
                            "the model as a braid.ModelConfig (braid.from_hf(directory)); "
                            "or pass a map from python3 -m braid.hf_weights")
    out = os.path.join(scratch, "weights.json")
    write_weights_map(model, path, out)
    return out


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    from .models import add_override_flags  # the model braid.models builds
    p = argparse.ArgumentParser(
        prog="python3 -m braid.hf_weights",
        description="Write the weights map of a Hugging Face model directory (config.json "
                    "and safetensors) for the Braid model of its configuration.")
    p.add_argument("hf_dir", metavar="DIR", help="directory of config.json and the weights")
    p.add_argument("-o", "--output", required=True, metavar="MAP.json")
    add_override_flags(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    from .models import overrides_of
    args = _parser().parse_args(argv)
    try:
        cfg = from_hf(args.hf_dir, **overrides_of(args))
        wmap = write_weights_map(cfg, args.hf_dir, args.output)
    except (BraidError, OSError) as e:
        print(f"braid.hf_weights: {e}", file=sys.stderr)
        return 1
    pieces = sum(len(t["pieces"]) for t in wmap["tensors"])
    print(f"{args.output}: {len(wmap['tensors'])} tensors in {pieces} pieces of "
          f"{len(wmap['files'])} file{'s' if len(wmap['files']) != 1 else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
