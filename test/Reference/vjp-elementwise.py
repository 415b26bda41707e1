# RUN: %python %s
# braid_ref.vjp, elementwise ops: gelu (erf and tanh), silu, sigmoid, relu,
# softplus, exp, neg, add, mul, glu (every activation), activation_grad against
# central finite differences (float64, eps 1e-6), bound 1e-6.

import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import numpy as np  # noqa: E402

from braid_ref import ops, vjp  # noqa: E402
from braid_ref.autograd import TapedOps, vjp_fd_errors  # noqa: E402

RNG = np.random.default_rng(12)
TOL = 1e-6


def randn(*shape):
    return RNG.standard_normal(shape)


def away_from_zero(x):
    """relu has a kink at 0: keep |x| > 1e-3 so that x +- eps stays on one side."""
    return np.where(np.abs(x) < 1e-3, 0.5, x)


class Elementwise(unittest.TestCase):
    def check(self, f, xs, cts, msg=""):
        dy = randn(*np.shape(f(*xs)))
        got = cts(dy)
        got = got if isinstance(got, tuple) else (got,)
        for i, e in enumerate(vjp_fd_errors(f, xs, dy, got)):
            self.assertLess(e, TOL, msg=f"{msg} arg {i}: {e}")

    def test_unary(self):
        x = away_from_zero(3 * randn(4, 9))
        cases = [
            ("gelu", lambda x: ops.gelu(x), lambda dy: vjp.gelu_vjp(dy, x)),
            ("gelu_tanh", lambda x: ops.gelu(x, True), lambda dy: vjp.gelu_vjp(dy, x, True)),
            ("silu", ops.silu, lambda dy: vjp.silu_vjp(dy, x)),
            ("sigmoid", ops.sigmoid, lambda dy: vjp.sigmoid_vjp(dy, x)),
            ("relu", ops.relu, lambda dy: vjp.relu_vjp(dy, x)),
            ("softplus", ops.softplus, lambda dy: vjp.softplus_vjp(dy, x)),
            ("exp", ops.exp, lambda dy: vjp.exp_vjp(dy, x)),
            ("neg", ops.neg, lambda dy: vjp.neg_vjp(dy, x)),
        ]
        for name, f, ct in cases:
            self.check(f, [x], ct, name)

    def test_activation_grad_table(self):
        x = away_from_zero(4 * randn(50))
        for name in ops.ACTIVATIONS:
            h = 1e-6
            fd = (ops.ACTIVATIONS[name](x + h) - ops.ACTIVATIONS[name](x - h)) / (2 * h)
            np.testing.assert_allclose(vjp.activation_grad(name, x), fd, rtol=1e-7, atol=1e-9,
                                       err_msg=name)
            self.check(lambda v: ops.activation(name, v), [x],
                       lambda dy: vjp.activation_vjp(name, dy, x), name)
        # closed forms at 0
        self.assertAlmostEqual(float(vjp.activation_grad("gelu", np.array(0.0))), 0.5)
        self.assertAlmostEqual(float(vjp.activation_grad("gelu_tanh", np.array(0.0))), 0.5)
        self.assertAlmostEqual(float(vjp.activation_grad("silu", np.array(0.0))), 0.5)
        self.assertEqual(float(vjp.activation_grad("relu", np.array(0.0))), 0.0)
        # large |x| stays finite
        big = np.array([-800.0, 800.0])
        for name in ops.ACTIVATIONS:
            self.assertTrue(np.all(np.isfinite(vjp.activation_grad(name, big))), msg=name)
        self.assertAlmostEqual(float(vjp.activation_grad("gelu", np.array(1.0))),
                               0.5 * (1 + math.erf(1 / math.sqrt(2)))
                               + math.exp(-0.5) / math.sqrt(2 * math.pi), places=14)

    def test_binary(self):
        a, b = randn(3, 5), randn(3, 5)
        self.check(ops.add, [a, b], lambda dy: vjp.add_vjp(dy, a, b), "add")
        self.check(ops.mul, [a, b], lambda dy: vjp.mul_vjp(dy, a, b), "mul")

    def test_glu(self):
        g, u = away_from_zero(2 * randn(4, 6)), randn(4, 6)
        for act in ops.ACTIVATIONS:
            self.check(lambda g, u: ops.glu(act, g, u), [g, u],
                       lambda dy: vjp.glu_vjp(act, dy, g, u), act)

    def test_dtype(self):
        x = randn(5).astype(np.float32)
        self.assertEqual(vjp.silu_vjp(randn(5), x).dtype, np.float32)
        self.assertEqual(vjp.glu_vjp("silu", randn(5), x, x)[1].dtype, np.float32)


class Tape(unittest.TestCase):
    def test_composition_with_reuse(self):
        # a graph where x feeds three ops and w two: the tape sums contributions
        x, w = randn(2, 3, 4), randn(4, 4)

        def f(o, x, w):
            a = o.linear(x, w)
            b = o.mul(o.sigmoid(a), o.transpose(o.linear(x, w, None, True), (0, 1, 2)))
            c = o.batch_matmul(b, o.relu(o.add(x, o.neg(b))), transpose_b=True)
            d = o.softplus(o.reshape(c, (2, 9)))
            return o.exp(o.mul(d, o.gelu(d, True)))

        dy = randn(2, 9)
        t = TapedOps()
        out = f(t, x, w)
        g = t.tape.backward({id(out): dy})
        errs = vjp_fd_errors(lambda x, w: f(ops, x, w), [x, w], dy, [g[id(x)], g[id(w)]])
        for e in errs:
            self.assertLess(e, TOL)


if __name__ == "__main__":
    unittest.main()
