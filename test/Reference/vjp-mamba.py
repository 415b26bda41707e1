# RUN: %python %s
# braid_ref.vjp, Mamba ops: conv1d (K=1, K<S, K>S, with and without bias) and
# selective_scan (every operand; with and without delta_softplus, odd
# lengths) against central finite differences (float64, eps 1e-6), bound 1e-6.

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import numpy as np  # noqa: E402

from braid_ref import ops, vjp  # noqa: E402
from braid_ref.autograd import vjp_fd_errors  # noqa: E402

RNG = np.random.default_rng(13)
TOL = 1e-6


def randn(*shape):
    return RNG.standard_normal(shape)


class Base(unittest.TestCase):
    def check(self, f, xs, cts, msg=""):
        dy = randn(*np.shape(f(*xs)))
        got = cts(dy)
        got = got if isinstance(got, tuple) else (got,)
        self.assertEqual(len(got), len(xs))
        for g, x in zip(got, xs):
            self.assertEqual(g.shape, x.shape, msg=msg)
        for i, e in enumerate(vjp_fd_errors(f, xs, dy, got)):
            self.assertLess(e, TOL, msg=f"{msg} arg {i}: {e}")
        return got


class Conv1d(Base):
    def test_kernels(self):
        for s, k in ((5, 1), (7, 3), (5, 4), (3, 6), (1, 2)):       # K = 1, K < S, K > S
            x, w, b = randn(2, s, 3), randn(3, k), randn(3)
            self.check(lambda x, w, b: ops.conv1d(x, w, b), [x, w, b],
                       lambda dy: vjp.conv1d_vjp(dy, x, w, b), f"S={s} K={k}")
            self.check(lambda x, w: ops.conv1d(x, w), [x, w],
                       lambda dy: vjp.conv1d_vjp(dy, x, w)[:2], f"S={s} K={k} no bias")
            self.assertIsNone(vjp.conv1d_vjp(randn(2, s, 3), x, w)[2])

    def test_k_beyond_s(self):
        # taps j < K - S only ever see the zero padding: their weight gradient is 0
        x, w = randn(2, 3, 2), randn(2, 6)
        _, dw, _ = vjp.conv1d_vjp(randn(2, 3, 2), x, w)
        self.assertTrue(np.all(dw[:, :3] == 0))
        self.assertTrue(np.all(dw[:, 3:] != 0))


class SelectiveScan(Base):
    def operands(self, nb, s, d, n, softplus):
        x = randn(nb, s, d)
        delta = randn(nb, s, d) if softplus else RNG.uniform(0.1, 1.0, (nb, s, d))
        a = -np.exp(0.5 * randn(d, n))
        return [x, delta, a, randn(nb, s, n), randn(nb, s, n), randn(d)]

    def test_all_operands(self):
        for softplus in (True, False):
            for nb, s, d, n in ((2, 5, 3, 4), (1, 7, 2, 3), (1, 1, 2, 2)):
                xs = self.operands(nb, s, d, n, softplus)
                self.check(lambda *a: ops.selective_scan(*a, delta_softplus=softplus), xs,
                           lambda dy: vjp.selective_scan_vjp(dy, *xs, delta_softplus=softplus),
                           f"{(nb, s, d, n)} softplus={softplus}")

    def test_softplus_chain(self):
        # ddelta through softplus = ddelta w.r.t. dt (no softplus) times sigmoid(delta)
        xs = self.operands(2, 5, 3, 4, True)
        dy = randn(2, 5, 3)
        with_sp = vjp.selective_scan_vjp(dy, *xs, delta_softplus=True)
        dt = np.logaddexp(0.0, xs[1])
        without = vjp.selective_scan_vjp(dy, xs[0], dt, *xs[2:], delta_softplus=False)
        np.testing.assert_allclose(with_sp[1], without[1] / (1 + np.exp(-xs[1])), rtol=1e-12)
        for i in (0, 2, 3, 4, 5):
            np.testing.assert_allclose(with_sp[i], without[i], rtol=1e-12, atol=1e-15)

    def test_causality(self):
        # the cotangent of y_t reaches no input after t
        xs = self.operands(1, 6, 2, 3, True)
        dy = np.zeros((1, 6, 2))
        dy[0, 2] = randn(2)
        dx, dd, _, db, dc, _ = vjp.selective_scan_vjp(dy, *xs, delta_softplus=True)
        for g in (dx, dd, db, dc):
            self.assertTrue(np.all(g[0, 3:] == 0))
        self.assertTrue(np.all(dc[0, :2] == 0))    # C_t only acts on y_t


if __name__ == "__main__":
    unittest.main()
