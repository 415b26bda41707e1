# RUN: %python %s
# braid_ref.ops, mixture-of-experts ops: router ties and order, the j-major
# slot assignment with capacity, dispatch/combine round trip, expert_ffn.

import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import numpy as np  # noqa: E402

from braid_ref import ops  # noqa: E402

RNG = np.random.default_rng(7)


def randn(*shape):
    return RNG.standard_normal(shape)


class Router(unittest.TestCase):
    def test_ties_to_lower_index(self):
        cases = [([0, 0, 0, 0], 2, [0, 1]), ([1, 2, 2, 0], 2, [1, 2]),
                 ([3, 1, 3, 3], 3, [0, 2, 3]), ([0, 5, 0, 5], 4, [1, 3, 0, 2]),
                 ([-1, -1, 2, -1], 3, [2, 0, 1])]
        for logits, k, expect in cases:
            w, i = ops.router(np.array([logits], dtype=np.float32), k)
            self.assertEqual(i.dtype, np.int32)
            self.assertEqual(i[0].tolist(), expect, msg=str(logits))
            self.assertTrue(np.all(np.diff(w[0]) <= 0))

    def test_vs_sorted(self):
        lg = np.round(randn(40, 6), 1)                      # rounding makes ties likely
        for norm in (False, True):
            w, idx = ops.router(lg, 3, normalize=norm)
            for t in range(40):
                p = [math.exp(v) for v in lg[t]]
                z = sum(p)
                p = [v / z for v in p]
                top = sorted(range(6), key=lambda e: (-p[e], e))[:3]
                self.assertEqual(idx[t].tolist(), top)
                ref = [p[e] for e in top]
                if norm:
                    ref = [v / sum(ref) for v in ref]
                np.testing.assert_allclose(w[t], ref, rtol=1e-12)
        np.testing.assert_allclose(ops.router(lg, 3, True)[0].sum(-1), 1.0, rtol=1e-14)

    def test_bad(self):
        for k in (0, 7):
            with self.assertRaises(ValueError):
                ops.router(randn(4, 6), k)
        with self.assertRaises(ValueError):
            ops.router(randn(2, 4, 6), 2)


class DispatchCombine(unittest.TestCase):
    def test_j_major_slots(self):
        idx = np.array([[0, 1], [1, 0], [0, 1]], dtype=np.int32)
        # j = 0: t0 -> e0 s0, t1 -> e1 s0, t2 -> e0 dropped (C = 1);
        # j = 1: t0 -> e1 dropped, t1 -> e0 dropped, t2 -> e1 dropped.
        self.assertEqual(ops.assign_slots(idx, 2, 1).tolist(), [[0, -1], [0, -1], [-1, -1]])
        # C = 2: j = 0 fills e0 {t0, t2}, e1 {t1}; then t0 -> e1 s1, t1/t2 dropped
        self.assertEqual(ops.assign_slots(idx, 2, 2).tolist(), [[0, 1], [0, -1], [1, -1]])
        x = np.arange(1.0, 4.0)[:, None] * np.ones((3, 2))
        d = ops.dispatch(x, idx, 2, 2)
        np.testing.assert_array_equal(d[0], [[1, 1], [3, 3]])
        np.testing.assert_array_equal(d[1], [[2, 2], [1, 1]])
        d = ops.dispatch(x, idx, 3, 4)       # e0 gets t0, t2 (j = 0), then t1 (j = 1)
        np.testing.assert_array_equal(d[0, :3], [[1, 1], [3, 3], [2, 2]])
        np.testing.assert_array_equal(d[0, 3:], 0)          # empty slot
        np.testing.assert_array_equal(d[2], 0)              # unused expert

    def test_round_trip(self):
        t, h, e, k = 40, 6, 5, 2
        x = randn(t, h)
        w, idx = ops.router(randn(t, e) * 2, k, normalize=True)   # rows sum to 1
        for cap in (1, 5, 12, t * k):
            slot = ops.assign_slots(idx, e, cap)
            y = ops.combine(ops.dispatch(x, idx, e, cap), w, idx)  # identity experts
            for tt in range(t):
                kept = slot[tt] >= 0
                if kept.all():
                    np.testing.assert_allclose(y[tt], x[tt], rtol=1e-13)
                elif not kept.any():
                    np.testing.assert_array_equal(y[tt], 0.0)
                else:
                    np.testing.assert_allclose(y[tt], w[tt, kept].sum() * x[tt], rtol=1e-13)
            counts = np.bincount(idx[slot >= 0], minlength=e)
            self.assertTrue(np.all(counts <= cap))
            self.assertEqual(int((slot >= 0).sum()),
                             int(sum(min(cap, c) for c in np.bincount(idx.ravel(), minlength=e))))
        self.assertTrue((ops.assign_slots(idx, e, t * k) >= 0).all())

    def test_combine_weights_expert_outputs(self):
        idx = np.array([[2, 0], [0, 1]], dtype=np.int32)
        w = np.array([[0.7, 0.3], [0.4, 0.6]])
        eo = randn(3, 2, 4)
        y = ops.combine(eo, w, idx)
        # slots: t0 j0 -> e2 s0, t1 j0 -> e0 s0, t0 j1 -> e0 s1, t1 j1 -> e1 s0
        np.testing.assert_allclose(y[0], 0.7 * eo[2, 0] + 0.3 * eo[0, 1], rtol=1e-14)
        np.testing.assert_allclose(y[1], 0.4 * eo[0, 0] + 0.6 * eo[1, 0], rtol=1e-14)

    def test_bad(self):
        x = randn(3, 2)
        with self.assertRaises(ValueError):
            ops.dispatch(x, np.array([[0], [4], [1]]), 4, 2)
        with self.assertRaises(ValueError):
            ops.dispatch(x, np.array([[0], [1]]), 4, 2)
        with self.assertRaises(ValueError):
            ops.combine(randn(4, 2, 2), randn(3, 2), np.zeros((3, 1), np.int32))


class ExpertFFN(unittest.TestCase):
    def test_vs_loop(self):
        e, c, h, f = 3, 4, 5, 7
        x, wu, wd, wg = randn(e, c, h), randn(e, h, f), randn(e, f, h), randn(e, h, f)
        sig = lambda v: 1 / (1 + np.exp(-v))
        y = ops.expert_ffn("silu", x, wu, wd, wg)
        y_plain = ops.expert_ffn("relu", x, wu, wd)
        for ee in range(e):
            for cc in range(c):
                g = np.array([sum(x[ee, cc, i] * wg[ee, i, j] for i in range(h)) for j in range(f)])
                u = np.array([sum(x[ee, cc, i] * wu[ee, i, j] for i in range(h)) for j in range(f)])
                hid = g * sig(g) * u
                ref = [sum(hid[j] * wd[ee, j, o] for j in range(f)) for o in range(h)]
                np.testing.assert_allclose(y[ee, cc], ref, rtol=1e-10, atol=1e-12)
                ref = [sum(max(u[j], 0) * wd[ee, j, o] for j in range(f)) for o in range(h)]
                np.testing.assert_allclose(y_plain[ee, cc], ref, rtol=1e-10, atol=1e-12)
        with self.assertRaises(ValueError):
            ops.expert_ffn("silu", x, wu, wd[:, :, :4])
        with self.assertRaises(ValueError):
            ops.expert_ffn("tanh", x, wu, wd)


if __name__ == "__main__":
    unittest.main()
