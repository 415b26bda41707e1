"""Tests of the braid model builder (standard library only).

    cd python && python3 -m unittest braid.test_models -v

The generated text is parsed back with the small parser below and checked
structurally (params, get_params, calls, SSA def-before-use, call signatures),
against closed-form parameter counts computed here from the preset configs,
and against published parameter counts.
"""

import contextlib
import io
import math
import os
import re
import subprocess
import sys
import unittest

from braid import ir
from braid.models import PRESETS, ModelConfig, build, build_model, config_from_attrs, main, preset

TINY = ["gpt-tiny", "llama-tiny", "mamba-tiny", "moe-tiny", "hybrid-tiny"]

# ==========================================================================
# A small parser for the text we print
# ==========================================================================

_TYPE_RE = re.compile(r"tensor<((?:\d+x)*)(\w+)>")
_PARAM_RE = re.compile(r"^  braid\.param @([\w.$]+) (normal\(([^)]*)\)|zeros|ones|s4d_real|mamba_dt) : (tensor<[^>]*>)$")
_FUNC_RE = re.compile(r"^  func\.func (private )?@([\w.]+)\((.*)\)(?: -> (.*?))?"
                      r'(?: attributes \{braid\.entry = "(\w+)"\})? \{$')
_GET_RE = re.compile(r"braid\.get_param @([\w.$]+) : (tensor<[^>]*>)$")
_CALL_RE = re.compile(r"^(.*) = func\.call @([\w.]+)\((.*)\) : \((.*)\) -> (.*)$")
_VALUE_RE = re.compile(r"%[A-Za-z_][\w.$]*")


def shape_of(type_text):
    m = _TYPE_RE.fullmatch(type_text.strip())
    assert m, type_text
    dims = tuple(int(d) for d in m.group(1).split("x") if d)
    return dims, m.group(2)


def split_top(text, sep=","):
    """Split on `sep` outside <>, (), [] and {}."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def parse_attr_value(text):
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    if text.startswith('"'):
        return text[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    if text.startswith("["):
        return [parse_attr_value(t) for t in split_top(text[1:-1])]
    value, _, kind = text.partition(" : ")
    return int(value) if kind == "i64" else float(value)


class ParsedModule:
    """Model attributes, params (name -> (init, shape, dtype)) and functions
    (name -> dict(private, args [(name, type)], results, lines))."""

    def __init__(self, text):
        self.text = text
        header, _, rest = text.partition("}} {\n")
        m = re.match(r"module attributes \{braid\.model = \{(.*)$", header, re.S)
        assert m, "no braid.model attribute"
        self.attrs = {}
        for entry in split_top(" ".join(m.group(1).split())):
            key, _, value = entry.partition(" = ")
            self.attrs[key] = parse_attr_value(value)
        self.params, self.functions = {}, {}
        current = None
        for line in rest.splitlines():
            if line == "}" or not line.strip():
                continue
            pm = _PARAM_RE.match(line)
            fm = _FUNC_RE.match(line)
            if pm:
                shape, dtype = shape_of(pm.group(4))
                self.params[pm.group(1)] = (pm.group(2), shape, dtype)
            elif fm:
                args = [tuple(a.split(": ")) for a in split_top(fm.group(3))]
                results = split_top(fm.group(4).strip("()")) if fm.group(4) else []
                current = dict(private=bool(fm.group(1)), args=args, results=results,
                               entry=fm.group(5), lines=[])
                self.functions[fm.group(2)] = current
            elif line == "  }":
                current = None
            else:
                assert current is not None and line.startswith("    "), f"stray line {line!r}"
                current["lines"].append(line.strip())

    def calls(self, func="step"):
        return [_CALL_RE.match(l) for l in self.functions[func]["lines"] if "func.call" in l]

    def get_params(self, func="step"):
        return [_GET_RE.search(l) for l in self.functions[func]["lines"] if "braid.get_param" in l]

    def num_params(self):
        return sum(math.prod(shape) for _, shape, _ in self.params.values())


# ==========================================================================
# Closed-form parameter counts, from the preset configs
# ==========================================================================

def expected_param_count(c: ModelConfig) -> int:
    """Independent count from the config fields (derivations repeated here)."""
    H, L = c.hidden, c.layers
    V = -(-c.vocab // c.pad_vocab_multiple) * c.pad_vocab_multiple
    heads = c.heads
    kv = c.kv_heads or heads
    hd = c.head_dim or (H // heads if heads else None)
    F = c.ffn or 4 * H
    Di, N = c.expand * H, c.d_state
    R = c.dt_rank or math.ceil(H / 16)

    def attention(bias):
        n = H * heads * hd + 2 * H * kv * hd + heads * hd * H
        return n + (heads * hd + 2 * kv * hd + H if bias else 0)

    swiglu = 3 * H * F
    moe = H * c.experts + 3 * c.experts * H * F if c.experts else 0
    mamba = (2 * H * Di            # in_proj (x and z)
             + Di * c.d_conv + Di  # conv weight and bias
             + Di * (R + 2 * N)    # x_proj (dt, B, C)
             + R * Di + Di         # dt_proj and its bias
             + Di * N + Di         # A_log, D
             + Di * H)             # out_proj
    head = 0 if c.tied_embeddings else H * V

    if c.family == "gpt":
        gpt_mlp = 2 * H * F + F + H
        return V * H + c.seq * H + L * (4 * H + attention(True) + gpt_mlp) + 2 * H + head
    if c.family == "llama":
        return V * H + L * (2 * H + attention(False) + swiglu) + H + head
    if c.family == "moe":
        return V * H + L * (2 * H + attention(False) + moe) + H + head
    if c.family == "mamba":
        return V * H + L * (H + mamba) + H + head
    if c.family == "hybrid":
        total = V * H + H + head
        for i in range(L):
            total += H + (attention(False) if i % c.attn_period == c.attn_offset else mamba)
            total += H + (moe if i % c.expert_period == c.expert_offset else swiglu)
        return total
    raise AssertionError(c.family)


# Published parameter counts: (preset, count, relative tolerance).
# Exact values are the parameter counts of the released checkpoints.
PUBLISHED = [
    ("gpt2-small", 124.4e6, 0.005), ("gpt2-small", 124_439_808, 0),
    ("gpt2-medium", 354_823_168, 0), ("gpt2-xl", 1_557_611_200, 0),
    ("gpt3-175b", 175.0e9, 0.005),
    ("llama2-7b", 6_738_415_616, 0), ("llama2-13b", 13_015_864_320, 0),
    ("llama2-70b", 68_976_648_192, 0),
    ("llama3-8b", 8.03e9, 0.005), ("llama3-8b", 8_030_261_248, 0),
    ("llama3-70b", 70.6e9, 0.005), ("llama3-70b", 70_553_706_496, 0),
    ("llama3-405b", 405_853_388_800, 0),
    ("mixtral-8x7b", 46.7e9, 0.005), ("mixtral-8x7b", 46_702_792_704, 0),
    ("mamba-130m", 129_135_360, 0),
    ("mamba-2.8b", 2.77e9, 0.005), ("mamba-2.8b", 2_768_345_600, 0),
    ("jamba-v0.1", 51.6e9, 0.005),  # (no inner dt/B/C norms: ~0.2M fewer)
]

# ==========================================================================
# Tests
# ==========================================================================

_PARSED = {}


def parsed(name):
    if name not in _PARSED:
        _PARSED[name] = ParsedModule(build(name))
    return _PARSED[name]


def run_cli(*argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(list(argv))
    return rc, out.getvalue()


class TestIR(unittest.TestCase):
    def test_format_float(self):
        self.assertEqual(ir.format_float(0.02), "2.000000e-02")
        self.assertEqual(ir.format_float(1e-5), "1.000000e-05")
        self.assertEqual(ir.format_float(500000.0), "5.000000e+05")
        self.assertEqual(ir.format_float(0.125), "1.250000e-01")
        x = 1 / math.sqrt(3)
        self.assertEqual(float(ir.format_float(x)), x)  # falls back to more digits

    def test_attrs(self):
        self.assertEqual(ir.format_attr_dict({"a": 1, "b": 1e-5, "c": "x", "d": True, "e": ["m"]}),
                         '{a = 1 : i64, b = 1.000000e-05 : f64, c = "x", d = true, e = ["m"]}')

    def test_types(self):
        self.assertEqual(str(ir.tensor((2, 16, 64))), "tensor<2x16x64xf32>")
        self.assertEqual(str(ir.tensor((), "f32")), "tensor<f32>")
        self.assertEqual(str(ir.tensor((3,), "bf16")), "tensor<3xbf16>")
        with self.assertRaises(ir.IRError):
            ir.tensor((0, 2))

    def _func(self, *types):
        m = ir.Module({"name": "t"})
        return m, m.function("f", [(f"a{i}", t) for i, t in enumerate(types)])

    def test_linear_shapes(self):
        _, f = self._func(ir.tensor((2, 3, 8)), ir.tensor((8, 5)), ir.tensor((5,)),
                          ir.tensor((5, 8)))
        x, w, b, wt = f.args
        y = f.linear(x, w, bias=b)
        self.assertEqual(y.shape, (2, 3, 5))
        self.assertEqual(f.linear(x, wt, transpose_weight=True).shape, (2, 3, 5))
        with self.assertRaises(ir.IRError):
            f.linear(x, wt)
        with self.assertRaises(ir.IRError):
            f.linear(x, w, bias=x)
        self.assertIn("braid.linear %a0, %a1 bias %a2 : tensor<2x3x8xf32>, tensor<8x5xf32>, "
                      "tensor<5xf32> -> tensor<2x3x5xf32>", f._lines[0])
        self.assertIn("braid.linear %a0, %a3 transpose_weight : ", f._lines[1])

    def test_batch_matmul_and_transpose(self):
        _, f = self._func(ir.tensor((4, 3, 5)), ir.tensor((4, 7, 5)))
        a, b = f.args
        c = f.batch_matmul(a, b, transpose_b=True)
        self.assertEqual(c.shape, (4, 3, 7))
        self.assertEqual(f.transpose(c, [0, 2, 1]).shape, (4, 7, 3))
        self.assertIn("braid.transpose %mm [0, 2, 1] : tensor<4x3x7xf32> -> tensor<4x7x3xf32>",
                      f._lines[-1])
        with self.assertRaises(ir.IRError):
            f.batch_matmul(a, b)

    def test_attention_rules(self):
        _, f = self._func(ir.tensor((2, 8, 4, 16)), ir.tensor((2, 8, 2, 16)),
                          ir.tensor((2, 8, 3, 16)))
        q, kv, bad = f.args
        o = f.attention(q, kv, kv, causal=True, scale=0.125, rope_theta=1e4)
        self.assertEqual(o.type, q.type)
        self.assertIn("causal {scale = 1.250000e-01 : f64, rope_theta = 1.000000e+04 : f64} : ",
                      f._lines[0])
        f.attention(q, kv, kv, causal=False)
        self.assertIn("braid.attention %a0, %a1, %a1 : ", f._lines[1])
        with self.assertRaises(ir.IRError):
            f.attention(q, bad, bad)  # 4 query heads, 3 kv heads

    def test_moe_ops(self):
        _, f = self._func(ir.tensor((32, 64)), ir.tensor((64, 4)))
        x, wr = f.args
        w, i = f.router(f.linear(x, wr), 2, normalize=True)
        self.assertEqual((w.shape, w.dtype, i.shape, i.dtype), ((32, 2), "f32", (32, 2), "i32"))
        d = f.dispatch(x, i, experts=4, capacity=20)
        self.assertEqual(d.shape, (4, 20, 64))
        self.assertEqual(f.combine(d, w, i).shape, (32, 64))
        self.assertIn("%route_w, %route_i = braid.router %y top_k 2 normalize : "
                      "tensor<32x4xf32> -> tensor<32x2xf32>, tensor<32x2xi32>", f._lines[1])

    def test_reshape_and_elementwise_checks(self):
        _, f = self._func(ir.tensor((2, 16, 64)), ir.tensor((2, 16, 64), "bf16"))
        x, xb = f.args
        self.assertEqual(f.reshape(x, (32, 64)).shape, (32, 64))
        with self.assertRaises(ir.IRError):
            f.reshape(x, (33, 64))
        with self.assertRaises(ir.IRError):
            f.add(x, xb)  # element types differ
        self.assertEqual(f.gelu(x, tanh=True).type, x.type)
        self.assertTrue(f._lines[-1].endswith("= braid.gelu %a0 tanh : tensor<2x16x64xf32>"))
        self.assertEqual(f.softmax(xb).type, xb.type)
        self.assertTrue(f._lines[-1].endswith("= braid.softmax %a1 : tensor<2x16x64xbf16>"))
        _, g = self._func(ir.tensor(()))
        with self.assertRaises(ir.IRError):
            g.softmax(g.args[0])  # no dimension to normalize

    def test_call_checks_signature(self):
        m = ir.Module({})
        g = m.function("g", [("x", ir.tensor((4,)))], private=True)
        g.ret(g.neg(g.args[0]))
        f = m.function("f", [("y", ir.tensor((4,))), ("z", ir.tensor((5,)))])
        r = f.call(g, [f.args[0]])
        self.assertEqual(r.type, ir.tensor((4,)))
        with self.assertRaises(ir.IRError):
            f.call(g, [f.args[1]])


class TestPresets(unittest.TestCase):
    def test_every_preset_builds_and_is_well_formed(self):
        for name in PRESETS:
            with self.subTest(name):
                p = parsed(name)
                cfg = PRESETS[name]
                self.assertEqual(p.attrs["name"], name)
                self.assertEqual(p.attrs["family"], cfg.family)
                self.assertEqual(p.attrs["layers"], cfg.layers)
                self.check_structure(p, cfg)

    def check_structure(self, p, cfg):
        step = p.functions["step"]
        self.assertFalse(step["private"])
        # the one program, marked as the training step; nothing else is an entry
        self.assertEqual(step["entry"], "train_step")
        self.assertEqual([n for n, f in p.functions.items() if f["entry"]], ["step"])
        B, S = cfg.batch, cfg.seq
        self.assertEqual(step["args"], [("%tokens", f"tensor<{B}x{S}xi32>"),
                                        ("%labels", f"tensor<{B}x{S}xi32>")])
        self.assertEqual(step["results"], ["tensor<f32>"])
        self.assertTrue(step["lines"][-1].startswith("return %loss : tensor<f32>"))
        # one func.call per layer, each to a private layer function, chained h0 -> hL
        calls = p.calls()
        self.assertEqual(len(calls), cfg.layers)
        self.assertEqual(p.text.count("func.call"), cfg.layers)  # layers are not nested
        for i, c in enumerate(calls):
            self.assertEqual(c.group(1), f"%h{i + 1}")
            self.assertTrue(c.group(3).startswith(f"%h{i},"))
            callee = p.functions[c.group(2)]
            self.assertTrue(callee["private"])
            self.assertTrue(c.group(2).endswith("_layer"))
            # the call's types are the callee's signature
            self.assertEqual(split_top(c.group(4)), [t for _, t in callee["args"]])
            self.assertEqual([c.group(5)], callee["results"])
        # every param is fetched exactly once, in @step only, with its declared type
        gets = p.get_params()
        fetched = [g.group(1) for g in gets]
        self.assertEqual(sorted(fetched), sorted(p.params))
        for g in gets:
            _, shape, dtype = p.params[g.group(1)]
            self.assertEqual(shape_of(g.group(2)), (shape, dtype))
        for fname, f in p.functions.items():
            if fname != "step":
                self.assertFalse(any("get_param" in l for l in f["lines"]), fname)
        # SSA: each value defined once, before its uses, in every function
        for fname, f in p.functions.items():
            defined = {a for a, _ in f["args"]}
            self.assertEqual(len(defined), len(f["args"]))
            for line in f["lines"]:
                lhs, eq, rhs = line.partition(" = ")
                if not eq:
                    lhs, rhs = "", line
                for use in _VALUE_RE.findall(rhs):
                    self.assertIn(use, defined, f"{fname}: {use} used before definition")
                for d in _VALUE_RE.findall(lhs):
                    self.assertNotIn(d, defined, f"{fname}: {d} defined twice")
                    defined.add(d)
        # every function but @step is called
        called = {c.group(2) for c in calls}
        self.assertEqual(called, set(p.functions) - {"step"})

    def test_param_names_are_hierarchical(self):
        p = parsed("llama-tiny")
        for name in ["tok_embeddings", "layers.0.attn_norm", "layers.1.attn.wq",
                     "layers.1.mlp.w_gate", "layers.0.mlp.w_down", "norm", "output"]:
            self.assertIn(name, p.params)
        self.assertTrue(all(n.startswith("layers.") or n in ("tok_embeddings", "norm", "output")
                            for n in p.params))

    def test_param_count_matches_closed_form(self):
        for name, cfg in PRESETS.items():
            with self.subTest(name):
                self.assertEqual(parsed(name).num_params(), expected_param_count(cfg))

    def test_published_param_counts(self):
        for name, count, tol in PUBLISHED:
            with self.subTest(name, count=count):
                got = parsed(name).num_params()
                if tol == 0:
                    self.assertEqual(got, count)
                else:
                    self.assertLessEqual(abs(got - count) / count, tol, f"{name}: {got:,}")

    def test_attrs_rebuild_the_same_module(self):
        for name in PRESETS:
            with self.subTest(name):
                p = parsed(name)
                self.assertEqual(build_model(config_from_attrs(p.attrs)).render(), p.text)

    def test_attrs_hold_family_keys_only(self):
        self.assertNotIn("experts", parsed("llama-tiny").attrs)
        self.assertNotIn("d_state", parsed("llama-tiny").attrs)
        self.assertNotIn("rope_theta", parsed("gpt-tiny").attrs)
        self.assertNotIn("heads", parsed("mamba-tiny").attrs)
        a = parsed("llama3-8b").attrs
        self.assertEqual((a["heads"], a["kv_heads"], a["head_dim"], a["ffn"], a["rope_theta"]),
                         (32, 8, 128, 14336, 5e5))
        self.assertEqual(parsed("llama2-7b").attrs["rope_theta"], 1e4)
        self.assertEqual(parsed("mixtral-8x7b").attrs["rope_theta"], 1e6)
        self.assertIn("norm_eps = 1.000000e-05 : f64", parsed("llama-tiny").text)


class TestFamilies(unittest.TestCase):
    def lines(self, name, func):
        return parsed(name).functions[func]["lines"]

    def test_gpt(self):
        p = parsed("gpt-tiny")
        self.assertEqual(p.params["pos_embeddings"][1], (16, 64))
        self.assertNotIn("output", p.params)
        self.assertEqual(p.params["tok_embeddings"][1], (97, 64))
        step = "\n".join(p.functions["step"]["lines"])
        self.assertIn("braid.embedding %tokens, %wte positions %wpe : tensor<2x16xi32>, "
                      "tensor<97x64xf32>, tensor<16x64xf32> -> tensor<2x16x64xf32>", step)
        self.assertIn("braid.linear %normed, %wte transpose_weight : tensor<2x16x64xf32>, "
                      "tensor<97x64xf32> -> tensor<2x16x97xf32>", step)
        self.assertIn("braid.cross_entropy %logits, %labels : tensor<2x16x97xf32>, "
                      "tensor<2x16xi32> -> tensor<f32>", step)
        body = "\n".join(self.lines("gpt-tiny", "gpt_layer"))
        self.assertEqual(body.count("braid.layer_norm"), 2)
        self.assertIn("braid.attention %q_heads, %k_heads, %v_heads causal : ", body)
        self.assertIn("braid.gelu %up tanh : tensor<2x16x256xf32>", body)
        self.assertEqual(body.count(" bias "), 6)
        self.assertEqual(p.params["layers.0.attn.wo"][0], "normal(1.000000e-02)")  # 0.02/sqrt(4)
        self.assertEqual(p.params["layers.0.attn_norm"][0], "ones")
        self.assertEqual(p.params["layers.0.attn.bq"][0], "zeros")

    def test_llama_gqa(self):
        p = parsed("llama-tiny")
        self.assertEqual(p.params["layers.0.attn.wq"][1], (64, 64))
        self.assertEqual(p.params["layers.0.attn.wk"][1], (64, 32))
        self.assertEqual(p.params["output"][1], (64, 256))
        body = "\n".join(self.lines("llama-tiny", "llama_layer"))
        self.assertIn("causal {rope_theta = 1.000000e+04 : f64} : tensor<2x16x4x16xf32>, "
                      "tensor<2x16x2x16xf32>, tensor<2x16x2x16xf32> -> tensor<2x16x4x16xf32>", body)
        self.assertIn("braid.glu silu %gate, %up : tensor<2x16x128xf32>", body)
        self.assertNotIn(" bias ", body)
        self.assertEqual(body.count("braid.rms_norm"), 2)

    def test_mamba(self):
        p = parsed("mamba-tiny")
        self.assertEqual(p.params["tok_embeddings"][1], (128, 64))  # 122 padded to 128
        self.assertEqual(p.attrs["vocab"], 128)
        self.assertEqual(p.attrs["vocab_unpadded"], 122)
        self.assertEqual(parsed("mamba-130m").params["tok_embeddings"][1], (50280, 768))
        # Mamba's own init: S4D-Real A, the time-step bias, nn.Linear's std.
        self.assertEqual(p.params["layers.1.mamba.A_log"], ("s4d_real", (128, 16), "f32"))
        self.assertEqual(p.params["layers.1.mamba.dt_bias"], ("mamba_dt", (128,), "f32"))
        self.assertEqual(p.params["layers.1.mamba.x_B"][0], "normal(5.103104e-02)")
        self.assertEqual(p.params["layers.1.mamba.D"], ("ones", (128,), "f32"))
        self.assertEqual(p.params["layers.1.mamba.x_dt"][1], (128, 4))  # dt_rank ceil(64/16)
        self.assertEqual(p.params["layers.1.mamba.conv_w"][1], (128, 4))
        body = "\n".join(self.lines("mamba-tiny", "mamba_layer"))
        self.assertIn("braid.selective_scan %x_act, %dt, %A, %B, %C, %mamba_D delta_softplus : "
                      "tensor<2x16x128xf32>, tensor<2x16x128xf32>, tensor<128x16xf32>, "
                      "tensor<2x16x16xf32>, tensor<2x16x16xf32>, tensor<128xf32> -> "
                      "tensor<2x16x128xf32>", body)
        self.assertIn("braid.conv1d %x_in, %mamba_conv_w bias %mamba_conv_b : ", body)
        self.assertIn("%A_exp = braid.exp %mamba_A_log : tensor<128x16xf32>", body)
        self.assertIn("%A = braid.neg %A_exp : tensor<128x16xf32>", body)
        self.assertIn("braid.glu silu %z, %y : tensor<2x16x128xf32>", body)
        self.assertIn("transpose_weight", "\n".join(p.functions["step"]["lines"]))

    def test_moe_capacity(self):
        body = "\n".join(self.lines("moe-tiny", "moe_layer"))
        # One capacity group per sequence of 16 tokens: C = ceil(1.25 * 2 * 16 / 4) = 10
        # slots per group, 2 groups.
        self.assertIn("braid.dispatch %flat, %route_i group_size 16 : tensor<32x64xf32>, "
                      "tensor<32x2xi32> -> tensor<4x20x64xf32>", body)
        self.assertIn("braid.router %router_logits top_k 2 normalize : tensor<32x4xf32> -> "
                      "tensor<32x2xf32>, tensor<32x2xi32>", body)
        self.assertIn("braid.expert_ffn silu %dispatched, %moe_w_up, %moe_w_down gate "
                      "%moe_w_gate : tensor<4x20x64xf32>, tensor<4x64x128xf32>, "
                      "tensor<4x128x64xf32>, tensor<4x64x128xf32> -> tensor<4x20x64xf32>", body)
        self.assertIn("braid.combine %experts, %route_w, %route_i group_size 16 : "
                      "tensor<4x20x64xf32>, tensor<32x2xf32>, tensor<32x2xi32> -> "
                      "tensor<32x64xf32>", body)
        self.assertEqual(parsed("moe-tiny").attrs["capacity"], 10)
        # Groups of 8 tokens: C = ceil(1.25 * 2 * 8 / 4) = 5, 4 groups.
        p = ParsedModule(run_cli("moe-tiny", "--moe-group-size", "8")[1])
        self.assertEqual(p.attrs["moe_group_size"], 8)
        self.assertIn("group_size 8 : tensor<32x64xf32>, tensor<32x2xi32> -> "
                      "tensor<4x20x64xf32>", p.text)
        with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
            run_cli("moe-tiny", "--moe-group-size", "5")  # cuts a group of 32 tokens
        # Mixtral: capacity factor 1.0, T = 4096 -> C = 2 * 4096 / 8
        self.assertIn("-> tensor<8x1024x4096xf32>", "\n".join(self.lines("mixtral-8x7b",
                                                                        "moe_layer")))

    def test_hybrid_pattern(self):
        p = parsed("hybrid-tiny")
        self.assertEqual(p.attrs["layer_pattern"],
                         ["mamba_mlp", "mamba_moe", "attn_mlp", "mamba_moe"])
        self.assertEqual([c.group(2) for c in p.calls()],
                         ["mamba_mlp_layer", "mamba_moe_layer", "attn_mlp_layer",
                          "mamba_moe_layer"])
        j = parsed("jamba-v0.1")
        kinds = [c.group(2) for c in j.calls()]
        self.assertEqual(sum(k.startswith("attn") for k in kinds), 4)      # 1:7
        self.assertEqual(sum(k.endswith("moe_layer") for k in kinds), 16)  # every other layer
        self.assertEqual(kinds[4], "attn_mlp_layer")
        self.assertEqual(kinds[1], "mamba_moe_layer")
        # Jamba's attention layers (4, 12, ...) fall on dense-FFN layers
        self.assertEqual(set(j.functions) - {"step"}, {"mamba_mlp_layer", "mamba_moe_layer",
                                                       "attn_mlp_layer"})
        # moving attention onto an odd layer gives an attention + MoE layer kind
        _, text = run_cli("hybrid-tiny", "--attn-offset", "1")
        p = ParsedModule(text)
        self.assertEqual(p.attrs["layer_pattern"],
                         ["mamba_mlp", "attn_moe", "mamba_mlp", "mamba_moe"])
        self.assertEqual(p.num_params(), expected_param_count(preset("hybrid-tiny",
                                                                     attn_offset=1)))


class TestCLI(unittest.TestCase):
    def test_layers_override(self):
        _, text = run_cli("llama-tiny", "--layers", "3")
        p = ParsedModule(text)
        self.assertEqual(len(p.calls()), 3)
        self.assertEqual(p.attrs["layers"], 3)
        self.assertIn("layers.2.attn.wq", p.params)
        self.assertNotIn("layers.3.attn.wq", p.params)

    def test_shape_overrides(self):
        _, text = run_cli("llama3-8b", "--layers", "1", "--hidden", "256", "--heads", "4",
                          "--kv-heads", "2", "--ffn", "512", "--vocab", "1000", "--seq", "32",
                          "--batch", "2")
        p = ParsedModule(text)
        self.assertEqual(p.params["layers.0.attn.wk"][1], (256, 128))  # 2 kv heads of 64
        self.assertEqual(p.params["layers.0.mlp.w_up"][1], (256, 512))
        self.assertEqual(p.params["output"][1], (256, 1000))
        self.assertEqual(p.functions["step"]["args"][0][1], "tensor<2x32xi32>")
        self.assertEqual(p.attrs["rope_theta"], 5e5)  # kept from the preset
        self.assertEqual(p.num_params(), expected_param_count(
            preset("llama3-8b", layers=1, hidden=256, heads=4, kv_heads=2, ffn=512, vocab=1000,
                   seq=32, batch=2)))

    def test_derived_fields_follow_overrides(self):
        p = ParsedModule(run_cli("gpt-tiny", "--hidden", "128")[1])
        self.assertEqual(p.params["layers.0.mlp.w_up"][1], (128, 512))  # ffn = 4H
        self.assertEqual(p.attrs["head_dim"], 32)
        p = ParsedModule(run_cli("mamba-tiny", "--hidden", "100", "--vocab", "97")[1])
        self.assertEqual(p.params["layers.0.mamba.x_dt"][1], (200, 7))  # ceil(100/16)
        self.assertEqual(p.params["tok_embeddings"][1], (104, 100))

    def test_moe_overrides(self):
        p = ParsedModule(run_cli("moe-tiny", "--experts", "8", "--top-k", "1",
                                 "--capacity-factor", "1.0")[1])
        self.assertEqual(p.params["layers.0.moe.w_up"][1], (8, 64, 128))
        self.assertIn("top_k 1 normalize", p.text)
        self.assertIn("-> tensor<8x4x64xf32>", p.text)  # ceil(1 * 32 / 8)

    def test_dtype_and_tying(self):
        p = ParsedModule(run_cli("llama-tiny", "--dtype", "bf16", "--tied")[1])
        self.assertTrue(all(dt == "bf16" for _, _, dt in p.params.values()))
        self.assertNotIn("xf32>", p.text.replace("tensor<f32>", ""))
        self.assertNotIn("output", p.params)
        self.assertIs(p.attrs["tied_embeddings"], True)
        self.assertEqual(p.attrs["dtype"], "bf16")
        self.assertIn("-> tensor<f32>", p.functions["step"]["lines"][-2])

    def test_name_override(self):
        p = ParsedModule(run_cli("llama-tiny", "--name", "my-llama")[1])
        self.assertEqual(p.attrs["name"], "my-llama")
        self.assertEqual(len(p.calls()), 2)

    def test_list_and_errors(self):
        rc, text = run_cli("--list")
        self.assertEqual(rc, 0)
        listed = [line.split()[0] for line in text.splitlines()]
        self.assertEqual(listed, list(PRESETS))
        with contextlib.redirect_stderr(io.StringIO()):
            with self.assertRaises(SystemExit):
                run_cli("no-such-model")
            with self.assertRaises(SystemExit):
                run_cli("llama-tiny", "--heads", "3")  # 64 not divisible by 3

    def test_module_entry_point(self):
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ, PYTHONPATH=here)
        out = subprocess.run([sys.executable, "-m", "braid.models", "moe-tiny", "--layers", "1"],
                             capture_output=True, text=True, env=env, check=True)
        self.assertEqual(out.stderr, "")
        self.assertEqual(len(ParsedModule(out.stdout).calls()), 1)
        out = subprocess.run([sys.executable, "-m", "braid", "--list"],
                             capture_output=True, text=True, env=env, check=True)
        self.assertIn("mamba-2.8b", out.stdout)


class TestModules(unittest.TestCase):
    def test_models_reexports_the_builder(self):
        import braid
        from braid import config, families, models, presets
        for mod in (config, families, presets):
            for name in mod.__all__:
                self.assertIs(getattr(models, name), getattr(mod, name), name)
        for name in braid._MODEL_NAMES:
            self.assertIs(getattr(braid, name), getattr(models, name), name)


if __name__ == "__main__":
    unittest.main()
