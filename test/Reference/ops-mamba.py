# RUN: %python %s
# braid_ref.ops, Mamba ops: conv1d against np.convolve per channel,
# selective_scan against a scalar loop and the closed form for one step.

import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import numpy as np  # noqa: E402

from braid_ref import ops  # noqa: E402

RNG = np.random.default_rng(99)


def randn(*shape):
    return RNG.standard_normal(shape)


def scan_loop(x, dt, a, b, c, d):
    """S6 recurrence one scalar state at a time (dt already final)."""
    nb, s_, dd = x.shape
    n = a.shape[1]
    y = np.zeros(x.shape)
    for bb in range(nb):
        for ch in range(dd):
            h = [0.0] * n
            for t in range(s_):
                for i in range(n):
                    h[i] = math.exp(dt[bb, t, ch] * a[ch, i]) * h[i] + \
                        dt[bb, t, ch] * b[bb, t, i] * x[bb, t, ch]
                y[bb, t, ch] = sum(c[bb, t, i] * h[i] for i in range(n)) + d[ch] * x[bb, t, ch]
    return y


class Mamba(unittest.TestCase):
    def test_conv1d_vs_convolve(self):
        x, w, bias = randn(2, 9, 5), randn(5, 4), randn(5)
        y = ops.conv1d(x, w, bias)
        for b in range(2):
            for c in range(5):
                # sum_j w[j] x[t-(K-1)+j] is the full convolution with w reversed, first S
                ref = np.convolve(x[b, :, c], w[c, ::-1])[:9] + bias[c]
                np.testing.assert_allclose(y[b, :, c], ref, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(ops.conv1d(x, w), y - bias, rtol=1e-12, atol=1e-14)
        # causal: outputs up to t do not depend on inputs after t
        x2 = x.copy()
        x2[:, 5:] = 0
        np.testing.assert_array_equal(ops.conv1d(x2, w, bias)[:, :5], y[:, :5])
        # K = 1 is a per-channel scale
        np.testing.assert_allclose(ops.conv1d(x, w[:, :1]), x * w[:, 0], rtol=1e-15)
        # K > S: only the left padding is seen
        np.testing.assert_allclose(ops.conv1d(x[:, :2], randn(5, 6))[:, 0].shape, (2, 5))
        with self.assertRaises(ValueError):
            ops.conv1d(x, randn(4, 4))
        with self.assertRaises(ValueError):
            ops.conv1d(x, w, randn(4))

    def test_selective_scan_vs_loop(self):
        nb, s_, d, n = 2, 6, 3, 4
        x, delta = randn(nb, s_, d), randn(nb, s_, d)
        a = -np.exp(randn(d, n))
        b, c, dd = randn(nb, s_, n), randn(nb, s_, n), randn(d)
        sp = np.log1p(np.exp(delta))
        np.testing.assert_allclose(ops.selective_scan(x, delta, a, b, c, dd, delta_softplus=True),
                                   scan_loop(x, sp, a, b, c, dd), rtol=1e-11, atol=1e-13)
        np.testing.assert_allclose(ops.selective_scan(x, np.abs(delta), a, b, c, dd),
                                   scan_loop(x, np.abs(delta), a, b, c, dd),
                                   rtol=1e-11, atol=1e-13)
        # causal
        x2 = x.copy()
        x2[:, 4:] += 3.0
        np.testing.assert_array_equal(ops.selective_scan(x2, delta, a, b, c, dd)[:, :4],
                                      ops.selective_scan(x, delta, a, b, c, dd)[:, :4])

    def test_selective_scan_one_step_closed_form(self):
        x, delta = randn(3, 1, 5), randn(3, 1, 5)
        a, b, c, d = -np.exp(randn(5, 4)), randn(3, 1, 4), randn(3, 1, 4), randn(5)
        dt = np.log1p(np.exp(delta))
        # h = dt B x (from h = 0), y = C . h + D x
        ref = dt * x * np.sum(c * b, axis=-1, keepdims=True) + d * x
        np.testing.assert_allclose(ops.selective_scan(x, delta, a, b, c, d, True), ref,
                                   rtol=1e-12, atol=1e-14)

    def test_selective_scan_decay(self):
        # B = 0 after t = 0, C = 1: the state decays by exp(dt A) per step.
        s_ = 5
        x = np.zeros((1, s_, 1))
        x[0, 0, 0] = 1.0
        dt = np.full((1, s_, 1), 0.5)
        a = np.array([[-2.0]])
        b = np.zeros((1, s_, 1))
        b[0, 0, 0] = 1.0
        y = ops.selective_scan(x, dt, a, b, np.ones((1, s_, 1)), np.zeros(1))
        np.testing.assert_allclose(y[0, :, 0], 0.5 * np.exp(-1.0) ** np.arange(s_), rtol=1e-14)

    def test_selective_scan_shapes(self):
        x = randn(1, 3, 2)
        a, bc, d = randn(2, 4), randn(1, 3, 4), randn(2)
        with self.assertRaises(ValueError):
            ops.selective_scan(x, randn(1, 3, 3), a, bc, bc, d)
        with self.assertRaises(ValueError):
            ops.selective_scan(x, x, randn(3, 4), bc, bc, d)
        with self.assertRaises(ValueError):
            ops.selective_scan(x, x, a, randn(1, 3, 5), bc, d)
        with self.assertRaises(ValueError):
            ops.selective_scan(x, x, a, bc, bc, randn(3))


if __name__ == "__main__":
    unittest.main()
