# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# The compiled vector-Jacobian product of each braid op, end to end: a tiny
# model makes the op's operands parameters and takes the mean cross-entropy
# of its result (reshaped to [rows, V]) as the loss; braid-run differentiates
# it (--braid-autodiff), runs it in fp32 on the CPU runtime and dumps the
# gradients, which must match central finite differences of the numpy
# reference forward (braid_ref.ops) in float64 on every parameter entry.
# Bound: relative error <= 1e-5 per tensor (max|a - b| / max|b|). The fp32
# gradients carry a few roundings of 2^-24 per op and accumulation over at
# most a few dozen terms (~1e-6 at worst); the float64 central differences
# (step 1e-5) err by O(h^2) ~ 1e-10 relative, exact by comparison.
# Covers the ops and variants the tiny presets do not: transposes, every
# activation, glu variants, batch_matmul transposes, non-causal attention
# with a scale, RoPE, GQA and a wider value head, norms, softmax, a biased and a
# transposed linear, conv1d without bias, the scan without softplus, routing
# without renormalization, and learned positions.
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from braid_ref import ops  # noqa: E402

work = sys.argv[1]
failures = []


def model(name, vocab, params, body, rows, extra_args=""):
    """A module whose step computes `body` over the params and returns the
    mean cross-entropy of `%y` viewed as [rows, vocab]."""
    decls = "\n".join(f"  braid.param @{p} normal({std}) : {t}" for p, (t, std) in params.items())
    gets = "\n".join(f"    %{p} = braid.get_param @{p} : {t}" for p, (t, _) in params.items())
    return f"""module attributes {{braid.model = {{name = "{name}", family = "test", vocab = {vocab} : i64}}}} {{
{decls}
  func.func @step({extra_args}%labels: tensor<{rows}xi32>) -> tensor<f32> {{
{gets}
{body}
    %logits = braid.reshape %y : {{Y}} -> tensor<{rows}x{vocab}xf32>
    %loss = braid.cross_entropy %logits, %labels : tensor<{rows}x{vocab}xf32>, tensor<{rows}xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }}
}}
"""


def t(*shape):
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"


CASES = []


def case(name, params, body, ytype, forward, vocab, rows, tokens=None):
    CASES.append((name, params, body, ytype, forward, vocab, rows, tokens))


case("transpose", {"x": (t(2, 3, 4), 1.0)},
     "    %y = braid.transpose %x [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>",
     t(3, 4, 2), lambda p: ops.transpose(p["x"], [1, 2, 0]), 8, 3)
for act, text in [("gelu", "braid.gelu %x"), ("gelu_tanh", "braid.gelu %x tanh"),
                  ("sigmoid", "braid.sigmoid %x"), ("relu", "braid.relu %x"),
                  ("silu", "braid.silu %x"), ("exp", "braid.exp %x"), ("neg", "braid.neg %x")]:
    case(act, {"x": (t(3, 8), 1.0)}, f"    %y = {text} : tensor<3x8xf32>", t(3, 8),
         (lambda a: lambda p: ops.activation(a, p["x"]) if a not in ("exp", "neg")
          else (np.exp(p["x"]) if a == "exp" else -p["x"]))(act), 8, 3)
case("relu_squared", {"x": (t(3, 8), 1.0)}, "    %y = braid.relu_squared %x : tensor<3x8xf32>",
     t(3, 8), lambda p: ops.relu_squared(p["x"]), 8, 3)
for act in ["gelu", "sigmoid", "relu"]:
    case("glu_" + act, {"g": (t(3, 8), 1.0), "u": (t(3, 8), 1.0)},
         f"    %y = braid.glu {act} %g, %u : tensor<3x8xf32>", t(3, 8),
         (lambda a: lambda p: ops.glu(a, p["g"], p["u"]))(act), 8, 3)
for ta in (False, True):
    for tb in (False, True):
        a = (2, 5, 3) if ta else (2, 3, 5)
        b = (2, 4, 5) if tb else (2, 5, 4)
        flags = (" transpose_a" if ta else "") + (" transpose_b" if tb else "")
        case(f"batch_matmul{flags.replace(' ', '_')}", {"a": (t(*a), 0.5), "b": (t(*b), 0.5)},
             f"    %y = braid.batch_matmul %a, %b{flags} : {t(*a)}, {t(*b)} -> {t(2, 3, 4)}",
             t(2, 3, 4), (lambda ta, tb: lambda p: ops.batch_matmul(p["a"], p["b"], ta, tb))(ta, tb),
             4, 6)
case("attention_gqa_rope_scale", {"q": (t(1, 3, 4, 4), 1.0), "k": (t(1, 5, 2, 4), 1.0),
                                  "v": (t(1, 5, 2, 6), 1.0)},
     "    %y = braid.attention %q, %k, %v {scale = 0.3 : f64, rope_theta = 100.0 : f64} : "
     f"{t(1, 3, 4, 4)}, {t(1, 5, 2, 4)}, {t(1, 5, 2, 6)} -> {t(1, 3, 4, 6)}", t(1, 3, 4, 6),
     lambda p: ops.attention(p["q"], p["k"], p["v"], False, 0.3, 100.0), 6, 12)
case("attention_causal", {"q": (t(2, 5, 2, 4), 1.0), "k": (t(2, 5, 1, 4), 1.0),
                          "v": (t(2, 5, 1, 4), 1.0)},
     f"    %y = braid.attention %q, %k, %v causal : {t(2, 5, 2, 4)}, {t(2, 5, 1, 4)}, "
     f"{t(2, 5, 1, 4)} -> {t(2, 5, 2, 4)}", t(2, 5, 2, 4),
     lambda p: ops.attention(p["q"], p["k"], p["v"], True), 8, 10)
case("layer_norm", {"x": (t(3, 8), 1.0), "g": (t(8), 1.0), "b": (t(8), 1.0)},
     f"    %y = braid.layer_norm %x, %g, %b : {t(3, 8)}, {t(8)}, {t(8)} -> {t(3, 8)}", t(3, 8),
     lambda p: ops.layer_norm(p["x"], p["g"], p["b"]), 8, 3)
case("rms_norm", {"x": (t(3, 8), 1.0), "g": (t(8), 1.0)},
     f"    %y = braid.rms_norm %x, %g {{epsilon = 1.0e-3 : f64}} : {t(3, 8)}, {t(8)} -> {t(3, 8)}",
     t(3, 8), lambda p: ops.rms_norm(p["x"], p["g"], 1e-3), 8, 3)
# softmax's VJP reads its result; scaled by w so that the loss is not flat
# in x (a softmax of probabilities feeding a softmax).
case("softmax", {"x": (t(3, 4, 6), 2.0), "w": (t(3, 4, 6), 4.0)},
     f"    %s = braid.softmax %x : {t(3, 4, 6)}\n"
     f"    %y = braid.mul %s, %w : {t(3, 4, 6)}",
     t(3, 4, 6), lambda p: ops.softmax(p["x"]) * p["w"], 6, 12)
case("linear_bias", {"x": (t(2, 3, 4), 1.0), "w": (t(4, 6), 0.5), "b": (t(6), 1.0)},
     f"    %y = braid.linear %x, %w bias %b : {t(2, 3, 4)}, {t(4, 6)}, {t(6)} -> {t(2, 3, 6)}",
     t(2, 3, 6), lambda p: ops.linear(p["x"], p["w"], p["b"]), 6, 6)
case("linear_transposed", {"x": (t(3, 4), 1.0), "w": (t(5, 4), 0.5)},
     f"    %y = braid.linear %x, %w transpose_weight : {t(3, 4)}, {t(5, 4)} -> {t(3, 5)}",
     t(3, 5), lambda p: ops.linear(p["x"], p["w"], transpose_weight=True), 5, 3)
case("conv1d", {"x": (t(2, 5, 3), 1.0), "w": (t(3, 4), 0.5)},
     f"    %y = braid.conv1d %x, %w : {t(2, 5, 3)}, {t(3, 4)} -> {t(2, 5, 3)}", t(2, 5, 3),
     lambda p: ops.conv1d(p["x"], p["w"]), 3, 10)
case("selective_scan", {"x": (t(1, 5, 3), 1.0), "dt": (t(1, 5, 3), 0.3), "A": (t(3, 2), 0.5),
                        "B": (t(1, 5, 2), 1.0), "C": (t(1, 5, 2), 1.0), "D": (t(3), 1.0)},
     f"    %y = braid.selective_scan %x, %dt, %A, %B, %C, %D : {t(1, 5, 3)}, {t(1, 5, 3)}, "
     f"{t(3, 2)}, {t(1, 5, 2)}, {t(1, 5, 2)}, {t(3)} -> {t(1, 5, 3)}", t(1, 5, 3),
     lambda p: ops.selective_scan(p["x"], p["dt"], p["A"], p["B"], p["C"], p["D"]), 3, 5)


def moe_forward(p):
    w, i = ops.router(p["r"], 2, normalize=False)
    d = ops.dispatch(p["x"], i, 4, 3)
    return ops.combine(d * 1.5, w, i)


case("router_dispatch_combine", {"x": (t(6, 4), 1.0), "r": (t(6, 4), 1.0)},
     "    %w, %i = braid.router %r top_k 2 : tensor<6x4xf32> -> tensor<6x2xf32>, tensor<6x2xi32>\n"
     "    %d = braid.dispatch %x, %i : tensor<6x4xf32>, tensor<6x2xi32> -> tensor<4x3x4xf32>\n"
     "    %s = braid.fill 1.5 : tensor<4x3x4xf32>\n"
     "    %e = braid.mul %d, %s : tensor<4x3x4xf32>\n"
     "    %y = braid.combine %e, %w, %i : tensor<4x3x4xf32>, tensor<6x2xf32>, tensor<6x2xi32> -> tensor<6x4xf32>",
     t(6, 4), moe_forward, 4, 6)
case("embedding_positions", {"wte": (t(7, 4), 1.0), "wpe": (t(6, 4), 1.0)},
     "    %y = braid.embedding %tokens, %wte positions %wpe : tensor<2x5xi32>, tensor<7x4xf32>, "
     "tensor<6x4xf32> -> tensor<2x5x4xf32>", t(2, 5, 4),
     None, 4, 10, tokens=(2, 5))

for name, params, body, ytype, forward, vocab, rows, tokens in CASES:
    text = model(name, vocab, params, body, rows,
                 extra_args=f"%tokens: tensor<{tokens[0]}x{tokens[1]}xi32>, " if tokens else "")
    text = text.replace("{Y}", ytype)
    path = os.path.join(work, name + ".mlir")
    with open(path, "w") as f:
        f.write(text)
    dump = os.path.join(work, name)
    r = subprocess.run(["braid-run", path, "--seed", "11", "--quiet", "--dump", dump,
                        "--optimizer", "sgd", "--lr", "0", "--weight-decay", "0"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        failures.append(f"{name}: braid-run failed:\n{r.stdout}{r.stderr}")
        continue
    values = {p: np.load(os.path.join(dump, p + ".npy")).astype(np.float64) for p in params}
    labels = np.load(os.path.join(dump, "labels.npy"))
    if tokens:
        tok = np.load(os.path.join(dump, "tokens.npy"))
        forward = lambda p: ops.embedding(tok, p["wte"], p["wpe"])  # noqa: E731

    def loss(v):
        y = np.asarray(forward(v), dtype=np.float64)
        return float(ops.cross_entropy(y.reshape(rows, vocab), labels))

    worst = 0.0
    for p in params:
        got = np.load(os.path.join(dump, f"grad.{p}.npy")).astype(np.float64)
        want = np.zeros_like(values[p])
        for index in np.ndindex(values[p].shape):
            plus = {k: v.copy() for k, v in values.items()}
            minus = {k: v.copy() for k, v in values.items()}
            plus[p][index] += 1e-5
            minus[p][index] -= 1e-5
            want[index] = (loss(plus) - loss(minus)) / 2e-5
        err = float(np.max(np.abs(got - want))) / max(float(np.max(np.abs(want))), 1e-12)
        worst = max(worst, err)
        if not err <= 1e-5:
            failures.append(f"{name}: gradient of {p}: relative error {err:.3g}")
    print(f"{name}: {len(params)} gradients, worst relative error {worst:.1e}")

for failure in failures:
    print("FAIL:", failure)
sys.exit(1 if failures else 0)
