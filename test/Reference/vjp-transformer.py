# RUN: %python %s
# braid_ref.vjp, transformer ops: each VJP against central finite differences
# (float64, eps 1e-6) of <dy, op(x)> with a random cotangent dy: linear
# (transposed weight, bias), batch_matmul (transposes), attention (GQA
# Hq=4/Hkv=2, odd lengths, causal, RoPE, scale, Skv != S, Dv != D),
# softmax, rms_norm, layer_norm, embedding (+ positions), cross_entropy, reshape,
# transpose. Error: max |vjp - fd| / max |fd| over the entries, and the
# same along a random direction; bound 1e-6 (observed ~1e-9: truncation
# O(eps^2), rounding ~1e-16 / eps).

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import numpy as np  # noqa: E402

from braid_ref import ops, vjp  # noqa: E402
from braid_ref.autograd import vjp_fd_errors  # noqa: E402

RNG = np.random.default_rng(11)
TOL = 1e-6


def randn(*shape):
    return RNG.standard_normal(shape)


class Base(unittest.TestCase):
    def check(self, f, xs, cts, msg=""):
        dy = randn(*np.shape(f(*xs)))
        got = cts(dy)
        got = got if isinstance(got, tuple) else (got,)
        self.assertEqual(len(got), len(xs), msg=msg)
        for i, (g, x) in enumerate(zip(got, xs)):
            if g is not None:
                self.assertEqual((g.shape, g.dtype), (x.shape, x.dtype), msg=f"{msg} arg {i}")
        errs = vjp_fd_errors(f, xs, dy, got)
        for i, e in enumerate(errs):
            if e is not None:
                self.assertLess(e, TOL, msg=f"{msg} arg {i}: {e}")
        return got


class Linear(Base):
    def test_linear(self):
        for lead in ((5,), (2, 3)):
            for tw in (False, True):
                x, b = randn(*lead, 4), randn(6)
                w = randn(6, 4) if tw else randn(4, 6)
                self.check(lambda x, w, b: ops.linear(x, w, b, tw), [x, w, b],
                           lambda dy: vjp.linear_vjp(dy, x, w, b, tw), f"{lead} tw={tw}")
                _, _, db = vjp.linear_vjp(randn(*lead, 6), x, w, None, tw)
                self.assertIsNone(db)

    def test_batch_matmul(self):
        for ta in (False, True):
            for tb in (False, True):
                a = randn(2, 3, 5) if ta else randn(2, 5, 3)     # M=5, K=3
                b = randn(2, 4, 3) if tb else randn(2, 3, 4)     # N=4
                self.check(lambda a, b: ops.batch_matmul(a, b, ta, tb), [a, b],
                           lambda dy: vjp.batch_matmul_vjp(dy, a, b, ta, tb), f"{ta} {tb}")


class Attention(Base):
    def run_case(self, b, s, skv, hq, hkv, d, dv, causal, scale, theta):
        q, k, v = randn(b, s, hq, d), randn(b, skv, hkv, d), randn(b, skv, hkv, dv)
        self.check(lambda q, k, v: ops.attention(q, k, v, causal, scale, theta), [q, k, v],
                   lambda dy: vjp.attention_vjp(dy, q, k, v, causal, scale, theta),
                   f"{(b, s, skv, hq, hkv, d, dv, causal, scale, theta)}")

    def test_gqa_causal_rope(self):
        for s in (5, 7):
            self.run_case(2, s, s, 4, 2, 4, 4, True, None, 10000.0)
            self.run_case(1, s, s, 4, 2, 6, 6, True, None, 7.0)     # large angles

    def test_variants(self):
        self.run_case(2, 5, 5, 4, 2, 4, 4, True, None, None)        # causal, no rope
        self.run_case(2, 5, 7, 4, 2, 4, 3, False, None, None)       # Skv != S, Dv != D
        self.run_case(1, 7, 7, 4, 4, 4, 4, False, 0.3, 100.0)       # MHA, scale, rope
        self.run_case(1, 5, 5, 4, 1, 4, 2, True, 0.7, 100.0)        # MQA

    def test_gqa_sums_group(self):
        # with Hkv = 1 the kv cotangent is the sum over all query heads of the
        # MHA cotangent with the kv head repeated
        q, k, v = randn(1, 5, 4, 4), randn(1, 5, 1, 4), randn(1, 5, 1, 4)
        dy = randn(1, 5, 4, 4)
        _, dk, dv = vjp.attention_vjp(dy, q, k, v, True, None, 50.0)
        krep, vrep = np.repeat(k, 4, axis=2), np.repeat(v, 4, axis=2)
        _, dk4, dv4 = vjp.attention_vjp(dy, q, krep, vrep, True, None, 50.0)
        np.testing.assert_allclose(dk, dk4.sum(axis=2, keepdims=True), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(dv, dv4.sum(axis=2, keepdims=True), rtol=1e-12, atol=1e-14)

    def test_rope_vjp_is_inverse(self):
        x = randn(2, 7, 3, 8)
        np.testing.assert_allclose(vjp.rope_vjp(ops.rope(x, 10.0), 10.0), x, atol=1e-13)

    def test_causal_first_key(self):
        # the last key/value can only receive from the last query
        q, k, v = randn(1, 5, 2, 4), randn(1, 5, 2, 4), randn(1, 5, 2, 4)
        dy = np.zeros((1, 5, 2, 4))
        dy[0, :4] = randn(4, 2, 4)
        _, dk, dv = vjp.attention_vjp(dy, q, k, v, True)
        self.assertTrue(np.all(dk[0, 4] == 0) and np.all(dv[0, 4] == 0))


class Norms(Base):
    def test_softmax(self):
        for shape in ((5, 8), (2, 3, 6), (4, 1)):
            x = 3 * randn(*shape)
            self.check(lambda x: ops.softmax(x), [x], lambda dy: vjp.softmax_vjp(dy, x),
                       str(shape))

    def test_rms_norm(self):
        for shape in ((5, 8), (2, 3, 6)):
            x, g = randn(*shape), randn(shape[-1])
            self.check(lambda x, g: ops.rms_norm(x, g, 1e-5), [x, g],
                       lambda dy: vjp.rms_norm_vjp(dy, x, g, 1e-5), str(shape))
        x = 1e-2 * randn(4, 6)   # epsilon matters
        g = randn(6)
        self.check(lambda x, g: ops.rms_norm(x, g, 1e-3), [x, g],
                   lambda dy: vjp.rms_norm_vjp(dy, x, g, 1e-3), "eps")

    def test_layer_norm(self):
        for shape in ((5, 8), (2, 3, 6)):
            x, g, b = randn(*shape) + 1.5, randn(shape[-1]), randn(shape[-1])
            self.check(lambda x, g, b: ops.layer_norm(x, g, b, 1e-5), [x, g, b],
                       lambda dy: vjp.layer_norm_vjp(dy, x, g, b, 1e-5), str(shape))


class Embedding(Base):
    def test_table_and_positions(self):
        tok = np.array([[1, 3, 1, 0, 5], [5, 5, 2, 1, 3]], dtype=np.int32)  # repeats
        table, pos = randn(7, 4), randn(9, 4)                               # P > S
        dt, dp = self.check(lambda t, p: ops.embedding(tok, t, p), [table, pos],
                            lambda dy: vjp.embedding_vjp(dy, tok, table, pos))
        self.assertTrue(np.all(dt[[4, 6]] == 0))           # unused tokens
        self.assertTrue(np.all(dp[5:] == 0))               # positions >= S
        dt1, dp1 = vjp.embedding_vjp(randn(2, 5, 4), tok, table)
        self.assertIsNone(dp1)
        tok1 = np.array([2, 2, 0], dtype=np.int64)          # rank-1 tokens
        self.check(lambda t: ops.embedding(tok1, t), [table],
                   lambda dy: vjp.embedding_vjp(dy, tok1, table)[:1])

    def test_position_rule(self):
        dy = randn(3, 4, 2)
        _, dp = vjp.embedding_vjp(dy, np.zeros((3, 4), np.int32), randn(2, 2), randn(6, 2))
        np.testing.assert_allclose(dp[:4], dy.sum(axis=0), rtol=1e-15)


class Loss(Base):
    def test_cross_entropy(self):
        for shape in ((6, 5), (2, 3, 7)):
            x = 3 * randn(*shape)
            lab = RNG.integers(0, shape[-1], shape[:-1])
            dy = 1.7
            got = vjp.cross_entropy_vjp(dy, x, lab)
            errs = vjp_fd_errors(lambda x: ops.cross_entropy(x, lab), [x], dy, [got])
            self.assertLess(errs[0], TOL, msg=str(shape))
            # rows sum to zero; dloss/N (softmax - onehot)
            np.testing.assert_allclose(got.sum(-1), 0, atol=1e-15)
            n = int(np.prod(shape[:-1]))
            x2 = x.reshape(-1, shape[-1])
            p = np.exp(x2) / np.exp(x2).sum(-1, keepdims=True)
            p[np.arange(n), lab.reshape(-1)] -= 1
            np.testing.assert_allclose(got.reshape(-1, shape[-1]), dy / n * p, rtol=1e-12)


class Layout(Base):
    def test_reshape(self):
        x = randn(2, 3, 4)
        self.check(lambda x: ops.reshape(x, (4, 6)), [x], lambda dy: vjp.reshape_vjp(dy, x))

    def test_transpose(self):
        x = randn(2, 3, 4, 5)
        for perm in ((0, 2, 1, 3), (3, 1, 0, 2), (1, 2, 3, 0)):
            self.check(lambda x: ops.transpose(x, perm), [x],
                       lambda dy: vjp.transpose_vjp(dy, x, perm), str(perm))


class Dtypes(unittest.TestCase):
    def test_float32_cotangents(self):
        x, w, b = randn(3, 4).astype(np.float32), randn(4, 5).astype(np.float32), \
            randn(5).astype(np.float32)
        for g in vjp.linear_vjp(randn(3, 5).astype(np.float32), x, w, b):
            self.assertEqual(g.dtype, np.float32)


if __name__ == "__main__":
    unittest.main()
