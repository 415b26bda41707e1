# RUN: %python %s
# braid_ref.vjp, mixture-of-experts ops against central finite differences
# (float64, eps 1e-6), bound 1e-6:
#  - router: dlogits from dweights with the forward's indices held fixed
#    (k = 1..E, with and without renormalization). The FD of the router
#    itself is only taken where the selection cannot change: random logits
#    (gaps >> eps; asserted), and tied logits perturbed along directions
#    that are equal on every group of tied entries of a row, so that ties stay
#    exact ties in float64 and the stable order (lower index first) keeps the
#    forward's selection and order (asserted at x +- eps d). For arbitrary
#    directions the FD is taken of router_fixed (the weights as a function of
#    the logits for the forward's indices).
#  - dispatch / combine with capacity drops and unused slots; expert_ffn
#    gated and ungated with every activation.

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import numpy as np  # noqa: E402

from braid_ref import ops, vjp  # noqa: E402
from braid_ref.autograd import directional_fd, vjp_fd_errors  # noqa: E402

RNG = np.random.default_rng(14)
TOL = 1e-6
EPS = 1e-6


def randn(*shape):
    return RNG.standard_normal(shape)


class Base(unittest.TestCase):
    def check(self, f, xs, dy, got, msg=""):
        got = got if isinstance(got, tuple) else (got,)
        for i, e in enumerate(vjp_fd_errors(f, xs, dy, got, eps=EPS)):
            if e is not None:
                self.assertLess(e, TOL, msg=f"{msg} arg {i}: {e}")


class Router(Base):
    def router_case(self, lg, k, norm, direction, msg):
        w, idx = ops.router(lg, k, norm)
        dw = randn(*w.shape)
        dl = vjp.router_vjp(dw, lg, idx, norm)
        self.assertEqual(dl.shape, lg.shape)
        # fixed-selection function: every entry
        np.testing.assert_allclose(vjp.router_fixed(lg, idx, norm), w, rtol=1e-15)
        self.check(lambda x: vjp.router_fixed(x, idx, norm), [lg], dw, dl, msg)
        # the router itself along a selection-preserving direction
        for sign in (1, -1):
            np.testing.assert_array_equal(ops.router(lg + sign * EPS * direction, k, norm)[1],
                                          idx, err_msg=f"{msg}: selection changed")
        fd = directional_fd(lambda x: np.sum(dw * ops.router(x, k, norm)[0]), [lg],
                            [direction], EPS)
        an = float(np.sum(dl * direction))
        self.assertLessEqual(abs(fd - an), TOL * np.linalg.norm(dl) * np.linalg.norm(direction),
                        msg=f"{msg}: {fd} vs {an}")
        return dl

    def test_random(self):
        for e, k in ((5, 1), (5, 2), (5, 3), (4, 4)):
            for norm in (False, True):
                lg = 2 * randn(7, e)
                gaps = np.diff(np.sort(lg, axis=-1), axis=-1)
                self.assertGreater(gaps.min(), 1e-4)
                self.router_case(lg, k, norm, randn(7, e), f"E={e} k={k} norm={norm}")

    def tie_direction(self, lg):
        """Random, equal on the entries of a row holding equal values."""
        d = np.empty_like(lg)
        for t in range(lg.shape[0]):
            vals, inv = np.unique(lg[t], return_inverse=True)
            d[t] = randn(len(vals))[inv]
        return d

    def test_ties(self):
        lg = np.array([[1, 2, 2, 0, -1], [2, 1, 1, 0, 1], [0, 0, 0, 0, 0], [3, 1, 3, 3, 1],
                       [0.5, 0.5, -2, 0.5, 4], [-1, -1, 2, -1, 2]], dtype=np.float64)
        for k in (1, 2, 3, 4):
            for norm in (False, True):
                self.router_case(lg, k, norm, self.tie_direction(lg), f"ties k={k} norm={norm}")
        # the selection the VJP uses is the forward's: a tie straddling the k
        # boundary ([2, 1, 1, 0, 1], k = 2 keeps experts 0, 1): the dropped tied
        # expert 2 gets the cotangent of an unselected one, -p_2 sum(p dp)
        w, idx = ops.router(lg[1:2], 2)
        self.assertEqual(idx[0].tolist(), [0, 1])
        dw = randn(1, 2)
        dl = vjp.router_vjp(dw, lg[1:2], idx)
        p = np.exp(lg[1]) / np.exp(lg[1]).sum()
        dp = np.zeros(5)
        dp[[0, 1]] = dw[0]
        np.testing.assert_allclose(dl[0], p * (dp - np.dot(p, dp)), rtol=1e-13)
        self.assertNotAlmostEqual(dl[0, 1], dl[0, 2])

    def test_normalized_top1_constant(self):
        lg = randn(6, 4)
        w, idx = ops.router(lg, 1, True)
        np.testing.assert_array_equal(w, 1.0)
        np.testing.assert_allclose(vjp.router_vjp(randn(6, 1), lg, idx, True), 0, atol=1e-16)


class DispatchCombine(Base):
    def setUp(self):
        # T=6 tokens, k=2, E=3 experts: expert 1 is oversubscribed
        self.idx = np.array([[1, 0], [1, 2], [1, 0], [0, 1], [1, 2], [2, 1]], dtype=np.int32)
        self.slot2 = ops.assign_slots(self.idx, 3, 2)
        self.assertTrue(np.any(self.slot2 < 0))

    def test_dispatch(self):
        for cap in (1, 2, 5):
            x = randn(6, 3)
            y = ops.dispatch(x, self.idx, 3, cap)
            dd = randn(*y.shape)
            dx = vjp.dispatch_vjp(dd, x, self.idx, 3, cap)
            self.check(lambda x: ops.dispatch(x, self.idx, 3, cap), [x], dd, dx, f"cap={cap}")
        # cap = 1: token 5's choices (2, 1) are both dropped (expert 2 taken by
        # token 1's second choice... j-major: slots of j=0 first)
        slot = ops.assign_slots(self.idx, 3, 1)
        dx = vjp.dispatch_vjp(randn(3, 1, 3), randn(6, 3), self.idx, 3, 1)
        for t in range(6):
            self.assertEqual(bool(np.all(dx[t] == 0)), bool(np.all(slot[t] < 0)), msg=str(t))

    def test_combine(self):
        for cap in (1, 2, 5):
            eo, w = randn(3, cap, 4), randn(6, 2)
            y = ops.combine(eo, w, self.idx)
            dy = randn(*y.shape)
            deo, dw = vjp.combine_vjp(dy, eo, w, self.idx)
            self.check(lambda eo, w: ops.combine(eo, w, self.idx), [eo, w], dy, (deo, dw),
                       f"cap={cap}")
            slot = ops.assign_slots(self.idx, 3, cap)
            self.assertTrue(np.all(dw[slot < 0] == 0))
            used = np.zeros((3, cap), bool)
            for t, j in zip(*np.nonzero(slot >= 0)):
                used[self.idx[t, j], slot[t, j]] = True
            self.assertTrue(np.all(deo[~used] == 0))
            if cap == 5:
                self.assertFalse(used.all())

    def test_expert_ffn(self):
        x = randn(2, 3, 4)
        for act in ops.ACTIVATIONS:
            for gated in (True, False):
                wu, wd = randn(2, 4, 5), randn(2, 5, 4)
                wg = randn(2, 4, 5) if gated else None
                y = ops.expert_ffn(act, x, wu, wd, wg)
                dy = randn(*y.shape)
                got = vjp.expert_ffn_vjp(act, dy, x, wu, wd, wg)
                if gated:
                    self.check(lambda *a: ops.expert_ffn(act, *a), [x, wu, wd, wg], dy, got,
                               f"{act} gated")
                else:
                    self.assertIsNone(got[3])
                    self.check(lambda *a: ops.expert_ffn(act, *a), [x, wu, wd], dy, got[:3],
                               f"{act}")


if __name__ == "__main__":
    unittest.main()
