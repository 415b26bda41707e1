"""pytest suite of braid.hf_weights (the weights map of a Hugging Face
directory) and of braid.checkpoint's export-hf, in pure Python: small random
checkpoints in each architecture's Hugging Face naming, the map applied by a
reference reading of its format, and each Braid tensor compared with what the
architecture's modeling code means (written here independently of the table).

    PYTHONPATH=python python3 -m pytest -q python/tests/test_hf_weights.py
"""

import json
import os
import re

import numpy as np
import pytest

from braid import checkpoint, hf_weights
from braid.families import build_model
from braid.hf import config_from_hf

safetensors_numpy = pytest.importorskip("safetensors.numpy")

H, V, F = 16, 32, 24  # hidden, vocabulary, FFN width of every case


# --------------------------------------------------------------------------
# Checkpoints in Hugging Face layout, and what Braid's tensors must be
# --------------------------------------------------------------------------

def llama_config(arch, **kw):
    c = {"architectures": [arch], "hidden_size": H, "intermediate_size": F,
         "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
         "vocab_size": V, "max_position_embeddings": 32, "tie_word_embeddings": False}
    c.update(kw)
    return c


def attention_hf(p, heads=4, kv=2, hd=4, bias=False, o_bias=False, qk_norm=False):
    """Shapes of a Llama-style attention under prefix p (nn.Linear: [out, in])."""
    t = {p + "q_proj.weight": (heads * hd, H), p + "k_proj.weight": (kv * hd, H),
         p + "v_proj.weight": (kv * hd, H), p + "o_proj.weight": (H, heads * hd)}
    if bias:
        t.update({p + "q_proj.bias": (heads * hd,), p + "k_proj.bias": (kv * hd,),
                  p + "v_proj.bias": (kv * hd,)})
    if o_bias:
        t[p + "o_proj.bias"] = (H,)
    if qk_norm:
        t.update({p + "q_norm.weight": (hd,), p + "k_norm.weight": (hd,)})
    return t


def attention_braid(h, p, b):
    """Braid's attention of the HF tensors h under prefix p, into layer b."""
    out = {b + "attn.w" + n: h[p + n + "_proj.weight"].T for n in "qkvo"}
    for n in "qkvo":
        if p + n + "_proj.bias" in h:
            out[b + "attn.b" + n] = h[p + n + "_proj.bias"]
    for n in "qk":
        if p + n + "_norm.weight" in h:
            out[b + f"attn.{n}_norm"] = h[p + n + "_norm.weight"]
    return out


def experts_hf(p, names, e, f=F):
    gate, up, down = names
    t = {}
    for i in range(e):
        t.update({f"{p}{i}.{gate}.weight": (f, H), f"{p}{i}.{up}.weight": (f, H),
                  f"{p}{i}.{down}.weight": (H, f)})
    return t


def experts_braid(h, p, names, e, b):
    gate, up, down = names
    stack = lambda n: np.stack([h[f"{p}{i}.{n}.weight"].T for i in range(e)])  # noqa: E731
    return {b + "moe.w_gate": stack(gate), b + "moe.w_up": stack(up),
            b + "moe.w_down": stack(down)}


def llama_case(arch, tied=False, bias=False, o_bias=False, qk_norm=False, moe=None, **kw):
    """(config, HF shapes, expectation) of the Llama-like architectures;
    moe = (router name, experts prefix, expert names, E)."""
    cfg = llama_config(arch, tie_word_embeddings=tied, **kw)
    hd = cfg.get("head_dim", H // 4)
    shapes = {"model.embed_tokens.weight": (V, H), "model.norm.weight": (H,)}
    if not tied:
        shapes["lm_head.weight"] = (V, H)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes.update({p + "input_layernorm.weight": (H,),
                       p + "post_attention_layernorm.weight": (H,)})
        shapes.update(attention_hf(p + "self_attn.", hd=hd, bias=bias, o_bias=o_bias,
                                   qk_norm=qk_norm))
        if moe:
            router, ep, names, e = moe
            shapes[p + router] = (e, H)
            shapes.update(experts_hf(p + ep, names, e, cfg.get("moe_intermediate_size", F)))
        else:
            shapes.update({p + "mlp.gate_proj.weight": (F, H), p + "mlp.up_proj.weight": (F, H),
                           p + "mlp.down_proj.weight": (H, F)})

    def expect(h):
        out = {"tok_embeddings": h["model.embed_tokens.weight"], "norm": h["model.norm.weight"]}
        if not tied:
            out["output"] = h["lm_head.weight"].T
        for i in range(cfg["num_hidden_layers"]):
            p, b = f"model.layers.{i}.", f"layers.{i}."
            out[b + "attn_norm"] = h[p + "input_layernorm.weight"]
            out.update(attention_braid(h, p + "self_attn.", b))
            post = h[p + "post_attention_layernorm.weight"]
            if moe:
                router, ep, names, e = moe
                out[b + "moe_norm"], out[b + "moe.router"] = post, h[p + router].T
                out.update(experts_braid(h, p + ep, names, e, b))
            else:
                out[b + "mlp_norm"] = post
                for n in ("gate", "up", "down"):
                    out[b + "mlp.w_" + n] = h[p + f"mlp.{n}_proj.weight"].T
        return out
    return cfg, shapes, expect


def gpt2_case(prefix):
    cfg = {"architectures": ["GPT2LMHeadModel"], "n_embd": H, "n_head": 4, "n_layer": 2,
           "vocab_size": V, "n_positions": 32}
    shapes = {prefix + "wte.weight": (V, H), prefix + "wpe.weight": (32, H),
              prefix + "ln_f.weight": (H,), prefix + "ln_f.bias": (H,)}
    for i in range(2):
        p = f"{prefix}h.{i}."
        shapes.update({p + "ln_1.weight": (H,), p + "ln_1.bias": (H,),
                       p + "attn.c_attn.weight": (H, 3 * H), p + "attn.c_attn.bias": (3 * H,),
                       p + "attn.c_proj.weight": (H, H), p + "attn.c_proj.bias": (H,),
                       p + "ln_2.weight": (H,), p + "ln_2.bias": (H,),
                       p + "mlp.c_fc.weight": (H, 4 * H), p + "mlp.c_fc.bias": (4 * H,),
                       p + "mlp.c_proj.weight": (4 * H, H), p + "mlp.c_proj.bias": (H,)})
        if not prefix:  # the old files' causal-mask buffers
            shapes.update({p + "attn.bias": (1, 1, 32, 32), p + "attn.masked_bias": ()})

    def expect(h):
        out = {"tok_embeddings": h[prefix + "wte.weight"],
               "pos_embeddings": h[prefix + "wpe.weight"],
               "norm": h[prefix + "ln_f.weight"], "norm_bias": h[prefix + "ln_f.bias"]}
        for i in range(2):
            p, b = f"{prefix}h.{i}.", f"layers.{i}."
            qkv, qkv_b = h[p + "attn.c_attn.weight"], h[p + "attn.c_attn.bias"]
            for j, n in enumerate("qkv"):
                out[b + "attn.w" + n] = qkv[:, j * H:(j + 1) * H]
                out[b + "attn.b" + n] = qkv_b[j * H:(j + 1) * H]
            out.update({b + "attn_norm": h[p + "ln_1.weight"],
                        b + "attn_norm_bias": h[p + "ln_1.bias"],
                        b + "attn.wo": h[p + "attn.c_proj.weight"],
                        b + "attn.bo": h[p + "attn.c_proj.bias"],
                        b + "mlp_norm": h[p + "ln_2.weight"],
                        b + "mlp_norm_bias": h[p + "ln_2.bias"],
                        b + "mlp.w_up": h[p + "mlp.c_fc.weight"],
                        b + "mlp.b_up": h[p + "mlp.c_fc.bias"],
                        b + "mlp.w_down": h[p + "mlp.c_proj.weight"],
                        b + "mlp.b_down": h[p + "mlp.c_proj.bias"]})
        return out
    return cfg, shapes, expect


DI, R, N, K = 2 * H, 4, 8, 4  # Mamba: d_inner, dt rank, state, conv width


def mixer_hf(p, proj_bias, inner_norms):
    t = {p + "in_proj.weight": (2 * DI, H), p + "conv1d.weight": (DI, 1, K),
         p + "conv1d.bias": (DI,), p + "x_proj.weight": (R + 2 * N, DI),
         p + "dt_proj.weight": (DI, R), p + "dt_proj.bias": (DI,), p + "A_log": (DI, N),
         p + "D": (DI,), p + "out_proj.weight": (H, DI)}
    if proj_bias:
        t.update({p + "in_proj.bias": (2 * DI,), p + "out_proj.bias": (H,)})
    if inner_norms:
        t.update({p + "dt_layernorm.weight": (R,), p + "b_layernorm.weight": (N,),
                  p + "c_layernorm.weight": (N,)})
    return t


def mixer_braid(h, p, b):
    m = b + "mamba."
    in_proj, x_proj = h[p + "in_proj.weight"], h[p + "x_proj.weight"]
    out = {m + "in_x": in_proj[:DI].T, m + "in_z": in_proj[DI:].T,
           m + "conv_w": h[p + "conv1d.weight"][:, 0, :], m + "conv_b": h[p + "conv1d.bias"],
           m + "x_dt": x_proj[:R].T, m + "x_B": x_proj[R:R + N].T, m + "x_C": x_proj[R + N:].T,
           m + "dt_proj": h[p + "dt_proj.weight"].T, m + "dt_bias": h[p + "dt_proj.bias"],
           m + "A_log": h[p + "A_log"], m + "D": h[p + "D"],
           m + "out_proj": h[p + "out_proj.weight"].T}
    if p + "in_proj.bias" in h:
        out.update({m + "b_in_x": h[p + "in_proj.bias"][:DI],
                    m + "b_in_z": h[p + "in_proj.bias"][DI:],
                    m + "out_bias": h[p + "out_proj.bias"]})
    for n, hf in (("dt_norm", "dt_layernorm"), ("B_norm", "b_layernorm"),
                  ("C_norm", "c_layernorm")):
        if f"{p}{hf}.weight" in h:
            out[m + n] = h[f"{p}{hf}.weight"]
    return out


def mamba_case():
    cfg = {"architectures": ["MambaForCausalLM"], "hidden_size": H, "state_size": N,
           "num_hidden_layers": 2, "vocab_size": V, "expand": 2, "conv_kernel": K,
           "time_step_rank": R, "use_bias": True, "use_conv_bias": True}
    shapes = {"backbone.embeddings.weight": (V, H), "backbone.norm_f.weight": (H,)}
    for i in range(2):
        shapes[f"backbone.layers.{i}.norm.weight"] = (H,)
        shapes.update(mixer_hf(f"backbone.layers.{i}.mixer.", True, False))

    def expect(h):
        out = {"tok_embeddings": h["backbone.embeddings.weight"],
               "norm": h["backbone.norm_f.weight"]}
        for i in range(2):
            out[f"layers.{i}.mamba_norm"] = h[f"backbone.layers.{i}.norm.weight"]
            out.update(mixer_braid(h, f"backbone.layers.{i}.mixer.", f"layers.{i}."))
        return out
    return cfg, shapes, expect


def jamba_case():
    """Layer 0: Mamba + MoE, layer 1: attention + dense MLP."""
    cfg = {"architectures": ["JambaForCausalLM"], "hidden_size": H, "intermediate_size": F,
           "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
           "vocab_size": V, "num_experts": 4, "num_experts_per_tok": 2,
           "attn_layer_period": 2, "attn_layer_offset": 1, "expert_layer_period": 2,
           "expert_layer_offset": 0, "mamba_d_state": N, "mamba_d_conv": K,
           "mamba_expand": 2, "mamba_dt_rank": R, "mamba_proj_bias": False,
           "tie_word_embeddings": False, "max_position_embeddings": 32}
    l0, l1 = "model.layers.0.", "model.layers.1."
    shapes = {"model.embed_tokens.weight": (V, H), "model.final_layernorm.weight": (H,),
              "lm_head.weight": (V, H), l0 + "input_layernorm.weight": (H,),
              l0 + "pre_ff_layernorm.weight": (H,), l0 + "feed_forward.router.weight": (4, H),
              l1 + "input_layernorm.weight": (H,), l1 + "pre_ff_layernorm.weight": (H,),
              l1 + "feed_forward.gate_proj.weight": (F, H),
              l1 + "feed_forward.up_proj.weight": (F, H),
              l1 + "feed_forward.down_proj.weight": (H, F)}
    shapes.update(mixer_hf(l0 + "mamba.", False, True))
    shapes.update(experts_hf(l0 + "feed_forward.experts.", ("gate_proj", "up_proj",
                                                            "down_proj"), 4))
    shapes.update(attention_hf(l1 + "self_attn."))

    def expect(h):
        out = {"tok_embeddings": h["model.embed_tokens.weight"],
               "norm": h["model.final_layernorm.weight"], "output": h["lm_head.weight"].T,
               "layers.0.mamba_norm": h[l0 + "input_layernorm.weight"],
               "layers.0.moe_norm": h[l0 + "pre_ff_layernorm.weight"],
               "layers.0.moe.router": h[l0 + "feed_forward.router.weight"].T,
               "layers.1.attn_norm": h[l1 + "input_layernorm.weight"],
               "layers.1.mlp_norm": h[l1 + "pre_ff_layernorm.weight"]}
        out.update(mixer_braid(h, l0 + "mamba.", "layers.0."))
        out.update(experts_braid(h, l0 + "feed_forward.experts.",
                                 ("gate_proj", "up_proj", "down_proj"), 4, "layers.0."))
        out.update(attention_braid(h, l1 + "self_attn.", "layers.1."))
        for n in ("gate", "up", "down"):
            out["layers.1.mlp.w_" + n] = h[l1 + f"feed_forward.{n}_proj.weight"].T
        return out
    return cfg, shapes, expect


CASES = {
    "llama": lambda: llama_case("LlamaForCausalLM"),
    "llama-attention-bias": lambda: llama_case("LlamaForCausalLM", bias=True, o_bias=True,
                                               attention_bias=True),
    "mistral": lambda: llama_case("MistralForCausalLM"),
    "qwen2": lambda: llama_case("Qwen2ForCausalLM", tied=True, bias=True),
    "qwen3": lambda: llama_case("Qwen3ForCausalLM", tied=True, qk_norm=True, head_dim=8),
    "gpt2": lambda: gpt2_case("transformer."),
    "gpt2-unprefixed": lambda: gpt2_case(""),
    "mixtral": lambda: llama_case("MixtralForCausalLM", num_local_experts=4,
                                  num_experts_per_tok=2,
                                  moe=("block_sparse_moe.gate.weight",
                                       "block_sparse_moe.experts.", ("w1", "w3", "w2"), 4)),
    "qwen3-moe": lambda: llama_case("Qwen3MoeForCausalLM", tied=True, qk_norm=True,
                                    num_experts=4, num_experts_per_tok=2,
                                    moe_intermediate_size=12,
                                    moe=("mlp.gate.weight", "mlp.experts.",
                                         ("gate_proj", "up_proj", "down_proj"), 4)),
    "mamba": mamba_case,
    "jamba": jamba_case,
}


# --------------------------------------------------------------------------
# Writing directories, applying maps
# --------------------------------------------------------------------------

def bf16_round(a):
    """float32 values that bf16 holds exactly, and their bits."""
    bits = (np.asarray(a, np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return (bits.astype(np.uint32) << 16).view(np.float32), bits


def safetensors_bytes(entries):
    """{key: (dtype, shape, bytes)} as a safetensors file (for BF16 and
    other entries safetensors.numpy does not write)."""
    header, offset = {}, 0
    for key, (dtype, shape, data) in entries.items():
        header[key] = {"dtype": dtype, "shape": list(shape),
                       "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + b"".join(d for _, _, d in entries.values())


def random_tensors(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}


def write_hf(root, config, tensors, shards=1, bf16=False):
    """config.json and the tensors: model.safetensors, or `shards` files and
    model.safetensors.index.json; bf16 writes BF16 entries (tensors must
    hold bf16 values)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps(config))
    keys = list(tensors)
    names = ["model.safetensors"] if shards == 1 else \
        [f"model-{i + 1:05d}-of-{shards:05d}.safetensors" for i in range(shards)]
    for i, name in enumerate(names):
        part = {k: tensors[k] for k in keys[i::shards]}
        if bf16:
            entries = {k: ("BF16", a.shape, bf16_round(a)[1].tobytes()) for k, a in part.items()}
            (root / name).write_bytes(safetensors_bytes(entries))
        else:
            safetensors_numpy.save_file(part, str(root / name))
    if shards > 1:
        index = {"metadata": {}, "weight_map": {k: names[i % shards] for i, k in enumerate(keys)}}
        (root / "model.safetensors.index.json").write_text(json.dumps(index))
    return root


def apply_map(wmap):
    """The Braid tensors a map means, read literally: Braid[to + i] =
    T[from + i], T the entry viewed as `view` and maybe transposed; every
    element written exactly once."""
    files = {f["path"]: checkpoint.read_file(f["path"]) for f in wmap["files"]}
    out = {}
    for t in wmap["tensors"]:
        braid, hits = np.zeros(t["shape"], np.float32), np.zeros(t["shape"], np.int32)
        for p in t["pieces"]:
            entry = files[p["file"]][p["key"]]
            assert list(entry.shape) == p["entry_shape"]
            view = entry.reshape(p["view"])
            if p["transpose"]:
                view = np.swapaxes(view, -1, -2)
            src = tuple(slice(a, a + n) for a, n in zip(p["from"], p["shape"]))
            dst = tuple(slice(a, a + n) for a, n in zip(p["to"], p["shape"]))
            braid[dst] = view[src]
            hits[dst] += 1
        assert (hits == 1).all(), t["name"]
        out[t["name"]] = braid
    return out


def model_of(config, **overrides):
    return config_from_hf(config, "test", **overrides)


def check_against(model, braid, expected):
    params = build_model(model).params
    assert list(braid) == list(params)  # every parameter, in Braid's order
    assert set(expected) == set(params)
    for name, p in params.items():
        assert braid[name].shape == tuple(p.type.shape), name
        np.testing.assert_array_equal(braid[name], expected[name], err_msg=name)


# --------------------------------------------------------------------------
# The map of every architecture
# --------------------------------------------------------------------------

@pytest.mark.parametrize("case", list(CASES))
def test_map_gives_each_architectures_tensors(tmp_path, case):
    config, shapes, expect = CASES[case]()
    hf = random_tensors(shapes)
    write_hf(tmp_path, config, hf)
    model = model_of(config)
    wmap = hf_weights.weights_map(model, tmp_path)
    assert wmap["format"] == "braid-weights" and wmap["version"] == 1
    assert wmap["source"] == str(tmp_path)
    assert wmap["files"] == [{"path": str(tmp_path / "model.safetensors"),
                              "bytes": os.path.getsize(tmp_path / "model.safetensors")}]
    check_against(model, apply_map(wmap), expect(hf))


def test_sharded_checkpoint_through_its_index(tmp_path):
    config, shapes, expect = CASES["mixtral"]()
    hf = random_tensors(shapes, seed=1)
    write_hf(tmp_path, config, hf, shards=2)
    wmap = hf_weights.weights_map(model_of(config), tmp_path)
    assert len(wmap["files"]) == 2
    used = {p["file"] for t in wmap["tensors"] for p in t["pieces"]}
    assert used == {f["path"] for f in wmap["files"]}
    check_against(model_of(config), apply_map(wmap), expect(hf))


def test_bf16_entries_keep_their_dtype(tmp_path):
    config, shapes, expect = CASES["qwen3"]()
    hf = {k: bf16_round(a)[0] for k, a in random_tensors(shapes, seed=2).items()}
    write_hf(tmp_path, config, hf, bf16=True)
    wmap = hf_weights.weights_map(model_of(config), tmp_path)
    assert {p["dtype"] for t in wmap["tensors"] for p in t["pieces"]} == {"BF16"}
    check_against(model_of(config), apply_map(wmap), expect(hf))


def test_tied_lm_head_in_the_file_is_accepted(tmp_path):
    config, shapes, expect = CASES["qwen2"]()
    hf = random_tensors(dict(shapes, **{"lm_head.weight": (V, H)}))
    write_hf(tmp_path, config, hf)
    wmap = hf_weights.weights_map(model_of(config), tmp_path)
    assert "output" not in [t["name"] for t in wmap["tensors"]]
    check_against(model_of(config), apply_map(wmap), expect(hf))


def test_fewer_layers_take_the_first(tmp_path):
    config, shapes, expect = CASES["llama"]()
    hf = random_tensors(shapes)
    write_hf(tmp_path, config, hf)
    model = model_of(config, layers=1)
    expected = {k: v for k, v in expect(hf).items() if not k.startswith("layers.1.")}
    check_against(model, apply_map(hf_weights.weights_map(model, tmp_path)), expected)


def test_command_line_writes_the_map(tmp_path, capsys):
    config, shapes, _ = CASES["gpt2"]()
    write_hf(tmp_path / "gpt", config, random_tensors(shapes))
    out = tmp_path / "map.json"
    assert hf_weights.main([str(tmp_path / "gpt"), "--seq", "16", "-o", str(out)]) == 0
    wmap = json.loads(out.read_text())
    assert len(wmap["tensors"]) == len(build_model(model_of(config, seq=16)).params)
    assert capsys.readouterr().out.startswith(f"{out}: {len(wmap['tensors'])} tensors in ")


# --------------------------------------------------------------------------
# What the map refuses
# --------------------------------------------------------------------------

def llama_dir(tmp_path, edit=None):
    config, shapes, _ = CASES["llama"]()
    hf = random_tensors(shapes)
    if edit:
        edit(hf)
    return write_hf(tmp_path, config, hf), model_of(config)


def test_missing_tensor(tmp_path):
    d, model = llama_dir(tmp_path, lambda h: h.pop("model.layers.1.self_attn.k_proj.weight"))
    with pytest.raises(hf_weights.MissingWeightError,
                       match=r"model\.layers\.1\.self_attn\.k_proj\.weight .*model\.safetensors"
                             r".*layers\.1\.attn\.wk"):
        hf_weights.weights_map(model, d)


def test_unexpected_tensors_all_named(tmp_path):
    def edit(h):
        h["model.layers.0.self_attn.rotary_emb.inv_freq"] = np.ones(2, np.float32)  # ignored
        h["model.layers.0.mlp.extra.weight"] = np.ones(2, np.float32)
        h["model.something"] = np.ones(2, np.float32)
    d, model = llama_dir(tmp_path, edit)
    with pytest.raises(hf_weights.UnexpectedWeightError, match="2 unexpected tensors") as e:
        hf_weights.weights_map(model, d)
    assert {p[0] for p in e.value.problems} == {"model.layers.0.mlp.extra.weight",
                                                "model.something"}
    assert str(d / "model.safetensors") in str(e.value)


def test_wrong_shape(tmp_path):
    d, model = llama_dir(tmp_path, lambda h: h.update(
        {"model.layers.0.mlp.up_proj.weight": np.ones((F, H + 1), np.float32)}))
    with pytest.raises(hf_weights.WeightShapeError,
                       match=rf"model\.layers\.0\.mlp\.up_proj\.weight \(.*model\.safetensors\)"
                             rf": shape \[{F}, {H + 1}\], expected \[{F}, {H}\]"):
        hf_weights.weights_map(model, d)


def test_unsupported_dtype(tmp_path):
    config, shapes, _ = CASES["llama"]()
    d = write_hf(tmp_path, config, random_tensors(shapes))
    entries = {k: ("F32", a.shape, a.tobytes())
               for k, a in checkpoint.read_file(d / "model.safetensors").items()}
    entries["model.norm.weight"] = ("I32", (H,), np.zeros(H, np.int32).tobytes())
    (d / "model.safetensors").write_bytes(safetensors_bytes(entries))
    with pytest.raises(hf_weights.WeightDtypeError, match=r"model\.norm\.weight .*dtype I32"):
        hf_weights.weights_map(model_of(config), d)


def test_truncated_file(tmp_path):
    d, model = llama_dir(tmp_path)
    f = d / "model.safetensors"
    f.write_bytes(f.read_bytes()[:-10])
    with pytest.raises(hf_weights.WeightsFileError, match=r"truncated") as e:
        hf_weights.weights_map(model, d)
    assert str(f) in str(e.value) and e.value.problems[0][0] in CASES["llama"]()[1]


def test_index_naming_a_missing_file(tmp_path):
    config, shapes, _ = CASES["llama"]()
    d = write_hf(tmp_path, config, random_tensors(shapes), shards=2)
    gone = d / "model-00002-of-00002.safetensors"
    gone.unlink()
    with pytest.raises(hf_weights.WeightsFileError, match="does not exist") as e:
        hf_weights.weights_map(model_of(config), d)
    assert str(gone) in str(e.value) and "model.layers.0.input_layernorm.weight" in str(e.value)


def test_architecture_refused_by_the_reader_has_no_map():
    config = llama_config("Qwen2MoeForCausalLM", num_experts=4, num_experts_per_tok=2,
                          moe_intermediate_size=8, shared_expert_intermediate_size=16)
    with pytest.raises(ValueError, match="shared_expert_intermediate_size"):
        model_of(config)


# --------------------------------------------------------------------------
# Export: the table read backwards
# --------------------------------------------------------------------------

def canonical(case, hf):
    """What export writes: transformers' state-dict names, without buffers."""
    if case != "gpt2-unprefixed":
        return hf
    return {"transformer." + k: v for k, v in hf.items()
            if not re.search(r"\.attn\.(masked_)?bias$", k)}


@pytest.mark.parametrize("case", list(CASES))
def test_export_inverts_the_map(tmp_path, case):
    config, shapes, expect = CASES[case]()
    hf = random_tensors(shapes, seed=3)
    arch = config["architectures"][0]
    back = hf_weights.to_hf(model_of(config), arch, expect(hf))
    want = canonical(case, hf)
    assert set(back) == set(want)
    for k, a in want.items():
        assert back[k].dtype == np.float32 and back[k].shape == a.shape, k
        assert np.array_equal(back[k].view(np.uint32), a.view(np.uint32)), k


def write_braid_checkpoint(root, tensors):
    """A one-rank Braid checkpoint (runtime/src/checkpoint.h's layout): each
    tensor whole, one piece."""
    d = root / "step-5"
    d.mkdir(parents=True)
    entries = {n: ("F32", a.shape, np.ascontiguousarray(a, np.float32).tobytes())
               for n, a in tensors.items()}
    (d / "rank00000.safetensors").write_bytes(safetensors_bytes(entries))
    manifest = {"format": "braid-checkpoint", "version": 1, "model": "test", "step": 5,
                "seed": 1, "grid": "dp=1", "ranks": 1,
                "files": [{"name": "rank00000.safetensors"}],
                "tensors": [{"name": n, "dtype": "F32", "shape": list(a.shape),
                             "pieces": [{"file": "rank00000.safetensors", "key": n,
                                         "start": [0] * a.ndim, "shape": list(a.shape)}]}
                            for n, a in tensors.items()]}
    (d / "manifest.json").write_text(json.dumps(manifest))
    (root / "latest").write_text("step-5")
    return root


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_export_hf_through_a_checkpoint(tmp_path, dtype):
    config, shapes, expect = CASES["jamba"]()
    hf = {k: bf16_round(a)[0] for k, a in random_tensors(shapes, seed=4).items()}
    braid = expect(hf)
    braid["opt.m.norm"] = np.zeros(H, np.float32)  # optimizer state: not exported
    ckpt = write_braid_checkpoint(tmp_path / "ckpt", braid)
    write_hf(tmp_path / "hf", config, hf)
    out = tmp_path / "out"
    assert checkpoint.main(["export-hf", str(ckpt), str(out), "--config", str(tmp_path / "hf"),
                            "--dtype", dtype]) == 0
    assert json.loads((out / "config.json").read_text()) == config
    back = checkpoint.read_file(out / "model.safetensors", bf16_bits=(dtype == "bf16"))
    assert set(back) == set(hf)
    for k, a in hf.items():
        want = bf16_round(a)[1] if dtype == "bf16" else a
        assert np.array_equal(back[k], want), k
    # The exported directory maps back to the same Braid tensors.
    check_against(model_of(config), apply_map(hf_weights.weights_map(model_of(config), out)),
                  expect(hf))


def test_export_refuses_a_checkpoint_of_another_model(tmp_path):
    config, shapes, expect = CASES["llama"]()
    braid = expect(random_tensors(shapes))
    braid["layers.0.attn.wq"] = np.zeros((H, H + 4), np.float32)
    ckpt = write_braid_checkpoint(tmp_path / "ckpt", braid)
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text(json.dumps(config))
    with pytest.raises(hf_weights.WeightShapeError, match=r"layers\.0\.attn\.wq .*shape"):
        checkpoint.export_hf(ckpt, tmp_path / "out", tmp_path / "hf")
    braid["layers.0.attn.wq"] = np.zeros((H, H), np.float32)
    braid["layers.9.attn.wq"] = np.zeros((H, H), np.float32)
    ckpt = write_braid_checkpoint(tmp_path / "ckpt2", braid)
    with pytest.raises(hf_weights.UnexpectedWeightError, match=r"layers\.9\.attn\.wq"):
        checkpoint.export_hf(ckpt, tmp_path / "out", tmp_path / "hf")


def test_bf16_export_rounds_to_nearest_even():
    a = np.array([1.0, 1.00390625, 1.01171875, -2.5, np.inf, np.nan], np.float32)
    bits = checkpoint._bf16_bits(a)
    # 1 + 2^-8 is halfway between 1 and 1 + 2^-7: it rounds to the even 1.
    assert list(bits[:5]) == [0x3F80, 0x3F80, 0x3F82, 0xC020, 0x7F80]
    assert np.isnan((bits[5:].astype(np.uint32) << 16).view(np.float32)).all()
