# RUN: %python %s
# braid_ref.ops, transformer ops: each checked by independent means (explicit
# loops, invariances, known values), not by re-stating the vectorized formula.

import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import numpy as np  # noqa: E402

from braid_ref import ops  # noqa: E402

RNG = np.random.default_rng(1234)


def randn(*shape):
    return RNG.standard_normal(shape)


def rope_loop(x, theta):
    """Rotate-half RoPE of x [B, S, H, D], one scalar at a time."""
    out = np.array(x, dtype=np.float64)
    b_, s_, h_, d = x.shape
    for b in range(b_):
        for p in range(s_):
            for h in range(h_):
                for i in range(d // 2):
                    a = p * theta ** (-2.0 * i / d)
                    lo, hi = x[b, p, h, i], x[b, p, h, i + d // 2]
                    out[b, p, h, i] = lo * math.cos(a) - hi * math.sin(a)
                    out[b, p, h, i + d // 2] = hi * math.cos(a) + lo * math.sin(a)
    return out


def attention_loop(q, k, v, causal=False, scale=None, rope_theta=None):
    """Per (batch, head, query) loop over keys, with an explicit softmax."""
    if rope_theta is not None:
        q, k = rope_loop(q, rope_theta), rope_loop(k, rope_theta)
    b_, s_, hq, d = q.shape
    skv, hkv = k.shape[1], k.shape[2]
    g = hq // hkv
    sc = 1 / math.sqrt(d) if scale is None else scale
    out = np.zeros((b_, s_, hq, v.shape[3]))
    for b in range(b_):
        for h in range(hq):
            for s in range(s_):
                ts = [t for t in range(skv) if not causal or t <= s]
                sco = [sc * sum(q[b, s, h, i] * k[b, t, h // g, i] for i in range(d)) for t in ts]
                m = max(sco)
                w = [math.exp(x - m) for x in sco]
                z = sum(w)
                for t, wt in zip(ts, w):
                    out[b, s, h] += wt / z * v[b, t, h // g]
    return out


class Transformer(unittest.TestCase):
    def test_embedding(self):
        table, pos = randn(7, 3), randn(5, 3)
        tok = np.array([[0, 6, 2, 2], [1, 1, 5, 3]], dtype=np.int32)
        y = ops.embedding(tok, table, pos)
        self.assertEqual(y.shape, (2, 4, 3))
        for b in range(2):
            for s in range(4):
                np.testing.assert_allclose(y[b, s], table[tok[b, s]] + pos[s], rtol=1e-15)
        np.testing.assert_array_equal(ops.embedding(tok, table)[1, 2], table[5])
        for bad in (np.array([[0, 7]]), np.array([[-1, 0]])):
            with self.assertRaises(ValueError):
                ops.embedding(bad, table)
        with self.assertRaises(ValueError):           # P < S
            ops.embedding(np.zeros((1, 6), np.int32), table, pos)
        with self.assertRaises(ValueError):           # float tokens
            ops.embedding(np.zeros((1, 2)), table)

    def test_linear(self):
        x, w, b = randn(2, 3, 4), randn(4, 5), randn(5)
        y = ops.linear(x, w, b)
        for i in range(2):
            for j in range(3):
                for n in range(5):
                    ref = b[n] + sum(x[i, j, kk] * w[kk, n] for kk in range(4))
                    self.assertAlmostEqual(y[i, j, n], ref, places=12)
        np.testing.assert_allclose(ops.linear(x, w.T.copy(), transpose_weight=True),
                                   ops.linear(x, w), rtol=1e-13)
        self.assertEqual(ops.linear(x.astype(np.float32), w.astype(np.float32)).dtype, np.float32)
        with self.assertRaises(ValueError):
            ops.linear(x, w.T.copy())
        with self.assertRaises(ValueError):
            ops.linear(x, w, randn(4))

    def test_batch_matmul(self):
        a, b = randn(3, 2, 4), randn(3, 4, 5)
        ref = np.stack([a[i] @ b[i] for i in range(3)])
        np.testing.assert_allclose(ops.batch_matmul(a, b), ref, rtol=1e-13)
        at, bt = np.swapaxes(a, 1, 2).copy(), np.swapaxes(b, 1, 2).copy()
        np.testing.assert_allclose(ops.batch_matmul(at, b, transpose_a=True), ref, rtol=1e-13)
        np.testing.assert_allclose(ops.batch_matmul(at, bt, True, True), ref, rtol=1e-13)
        with self.assertRaises(ValueError):
            ops.batch_matmul(a, randn(2, 4, 5))      # batch dims differ (no broadcasting)
        with self.assertRaises(ValueError):
            ops.batch_matmul(a, b, transpose_b=True)

    def test_attention_vs_loop(self):
        q, k, v = randn(2, 5, 4, 6), randn(2, 5, 2, 6), randn(2, 5, 2, 3)
        for causal in (False, True):
            for theta in (None, 100.0):
                np.testing.assert_allclose(ops.attention(q, k, v, causal, rope_theta=theta),
                                           attention_loop(q, k, v, causal, rope_theta=theta),
                                           rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(ops.attention(q, k, v, scale=0.3),
                                   attention_loop(q, k, v, scale=0.3), rtol=1e-10, atol=1e-12)
        # cross attention, Skv != S (not causal)
        k2, v2 = randn(2, 7, 2, 6), randn(2, 7, 2, 3)
        np.testing.assert_allclose(ops.attention(q, k2, v2, rope_theta=10.0),
                                   attention_loop(q, k2, v2, rope_theta=10.0),
                                   rtol=1e-10, atol=1e-12)
        with self.assertRaises(ValueError):
            ops.attention(q, k2, v2, causal=True)
        with self.assertRaises(ValueError):
            ops.attention(randn(2, 5, 3, 6), k, v)    # 3 heads, 2 kv heads

    def test_gqa_is_mha_with_repeated_kv(self):
        q, k, v = randn(1, 6, 8, 4), randn(1, 6, 2, 4), randn(1, 6, 2, 4)
        rep = lambda t: np.repeat(t, 4, axis=2)      # kv head j serves heads 4j..4j+3
        np.testing.assert_allclose(ops.attention(q, k, v, True, rope_theta=1e4),
                                   ops.attention(q, rep(k), rep(v), True, rope_theta=1e4),
                                   rtol=1e-13, atol=1e-15)

    def test_rope_relative_position(self):
        d, theta = 8, 50.0
        qv, kv = randn(d), randn(d)
        n = 12
        qr = ops.rope(np.tile(qv, (1, n, 1, 1)), theta)[0, :, 0]   # q at every position
        kr = ops.rope(np.tile(kv, (1, n, 1, 1)), theta)[0, :, 0]
        dots = qr @ kr.T                                           # [s, t]
        for s in range(n):
            for t in range(n):
                for c in range(-min(s, t), n - max(s, t)):         # shift both by c
                    self.assertAlmostEqual(dots[s, t], dots[s + c, t + c], places=10)
        self.assertAlmostEqual(dots[0, 0], qv @ kv, places=12)    # position 0: identity
        # a rotation: norms of the pairs (i, i + D/2) are preserved
        pair = lambda x: x[..., : d // 2] ** 2 + x[..., d // 2:] ** 2
        np.testing.assert_allclose(pair(qr), np.tile(pair(qv), (n, 1)), rtol=1e-12)
        # attention with rope == attention without, on rotated q and k
        q, k, v = randn(1, 5, 2, d), randn(1, 5, 2, d), randn(1, 5, 2, d)
        np.testing.assert_allclose(ops.attention(q, k, v, True, rope_theta=theta),
                                   ops.attention(ops.rope(q, theta), ops.rope(k, theta), v, True),
                                   rtol=1e-13)

    def test_causal_ignores_future(self):
        q, k, v = randn(2, 8, 4, 4), randn(2, 8, 2, 4), randn(2, 8, 2, 4)
        y = ops.attention(q, k, v, causal=True, rope_theta=1e4)
        for s in range(8):
            q2, k2, v2 = q.copy(), k.copy(), v.copy()
            for t in (q2, k2, v2):
                t[:, s + 1:] = randn(*t[:, s + 1:].shape) * 10
            y2 = ops.attention(q2, k2, v2, causal=True, rope_theta=1e4)
            np.testing.assert_array_equal(y2[:, : s + 1], y[:, : s + 1])
        # position 0 attends only to itself
        np.testing.assert_allclose(y[:, 0], np.repeat(v[:, 0], 2, axis=1), rtol=1e-13)

    def test_norms(self):
        x, g, b = randn(3, 4, 16) * 5 + 2, randn(16), randn(16)
        y = ops.rms_norm(x, np.ones(16), epsilon=0.0)
        np.testing.assert_allclose(np.mean(y ** 2, axis=-1), 1.0, rtol=1e-12)
        np.testing.assert_allclose(ops.rms_norm(7.5 * x, g, 0.0), ops.rms_norm(x, g, 0.0), rtol=1e-12)
        row = x[1, 2]
        ref = row / math.sqrt(sum(v * v for v in row) / 16 + 1e-3) * g
        np.testing.assert_allclose(ops.rms_norm(x, g, 1e-3)[1, 2], ref, rtol=1e-12)
        y = ops.layer_norm(x, np.ones(16), np.zeros(16), epsilon=0.0)
        np.testing.assert_allclose(np.mean(y, -1), 0.0, atol=1e-12)
        np.testing.assert_allclose(np.mean(y ** 2, -1), 1.0, rtol=1e-12)   # biased variance
        np.testing.assert_allclose(ops.layer_norm(3 * x + 11, g, b, 0.0),
                                   ops.layer_norm(x, g, b, 0.0), rtol=1e-10, atol=1e-12)
        m = sum(row) / 16
        var = sum((v - m) ** 2 for v in row) / 16
        ref = (row - m) / math.sqrt(var + 1e-2) * g + b
        np.testing.assert_allclose(ops.layer_norm(x, g, b, 1e-2)[1, 2], ref, rtol=1e-12)
        with self.assertRaises(ValueError):
            ops.rms_norm(x, np.ones(15))

    def test_softmax(self):
        x = randn(3, 4, 7) * 4
        y = ops.softmax(x)
        # An explicit loop over one row, known values and invariances.
        row = x[2, 1]
        e = [math.exp(v) for v in row]
        np.testing.assert_allclose(y[2, 1], [v / sum(e) for v in e], rtol=1e-13)
        np.testing.assert_allclose(ops.softmax(np.zeros((2, 5))), 0.2, rtol=1e-15)
        np.testing.assert_allclose(ops.softmax(np.array([0.0, math.log(3.0)])), [0.25, 0.75],
                                   rtol=1e-14)
        np.testing.assert_allclose(y.sum(axis=-1), 1.0, rtol=1e-13)
        np.testing.assert_allclose(ops.softmax(x + 700.0), y, rtol=1e-12)  # shift-invariant
        np.testing.assert_allclose(ops.softmax(x[..., ::-1]), y[..., ::-1], rtol=1e-13)
        masked = x.copy()
        masked[..., 0] = -np.inf
        self.assertTrue(np.all(ops.softmax(masked)[..., 0] == 0))
        self.assertEqual(ops.softmax(np.float32(x)).dtype, np.float32)
        with self.assertRaises(ValueError):
            ops.softmax(np.array(1.0))

    def test_elementwise(self):
        self.assertAlmostEqual(float(ops.gelu(np.array(1.0))), 0.8413447460685429, places=14)
        self.assertAlmostEqual(float(ops.gelu(np.array(-2.0))), -2 * 0.022750131948179195, places=14)
        x = np.linspace(-6, 6, 241)
        self.assertLess(np.max(np.abs(ops.gelu(x, True) - ops.gelu(x))), 1e-3)
        t = 0.5 * 1.5 * (1 + math.tanh(math.sqrt(2 / math.pi) * (1.5 + 0.044715 * 1.5 ** 3)))
        self.assertAlmostEqual(float(ops.gelu(np.array(1.5), True)), t, places=14)
        sig = lambda v: 1 / (1 + math.exp(-v))
        for v in (-30.0, -1.0, 0.0, 0.5, 30.0):
            self.assertAlmostEqual(float(ops.sigmoid(np.array(v))), sig(v), places=14)
            self.assertAlmostEqual(float(ops.silu(np.array(v))), v * sig(v), places=12)
        big = ops.sigmoid(np.array([-1000.0, 1000.0]))                # no overflow
        np.testing.assert_array_equal(big, [0.0, 1.0])
        np.testing.assert_array_equal(ops.exp(np.array([0.0, 1.0])), [1.0, math.e])
        np.testing.assert_array_equal(ops.neg(x), -x)
        a, b = randn(3, 4), randn(3, 4)
        np.testing.assert_array_equal(ops.add(a, b), a + b)
        np.testing.assert_array_equal(ops.mul(a, b), a * b)
        with self.assertRaises(ValueError):
            ops.add(a, b[:, :3])                                     # no broadcasting
        with self.assertRaises(ValueError):
            ops.mul(a, b.astype(np.float32))
        acts = {"silu": lambda g: g * sig(g), "sigmoid": sig, "relu": lambda g: max(g, 0.0),
                "gelu": lambda g: 0.5 * g * (1 + math.erf(g / math.sqrt(2))),
                "gelu_tanh": lambda g: 0.5 * g * (1 + math.tanh(math.sqrt(2 / math.pi)
                                                               * (g + 0.044715 * g ** 3)))}
        for name, fn in acts.items():
            y = ops.glu(name, a, b)
            for i, j in np.ndindex(a.shape):
                self.assertAlmostEqual(y[i, j], fn(a[i, j]) * b[i, j], places=12, msg=name)
        self.assertEqual(ops.silu(a.astype(np.float32)).dtype, np.float32)

    def test_layout(self):
        x = np.arange(24).reshape(2, 3, 4)
        y = ops.reshape(x, (4, 6))
        for i in range(24):
            self.assertEqual(y[i // 6, i % 6], x[i // 12, (i // 4) % 3, i % 4])
        with self.assertRaises(ValueError):
            ops.reshape(x, (5, 5))
        perm = (2, 0, 1)
        y = ops.transpose(x, perm)
        self.assertEqual(y.shape, tuple(x.shape[p] for p in perm))
        for idx in np.ndindex(y.shape):
            j = [0] * 3
            for kk in range(3):
                j[perm[kk]] = idx[kk]                 # j[perm[k]] = i_k
            self.assertEqual(y[idx], x[tuple(j)])
        with self.assertRaises(ValueError):
            ops.transpose(x, (0, 0, 1))

    def test_cross_entropy(self):
        lg, lab = randn(2, 3, 7), RNG.integers(0, 7, (2, 3))
        ref = 0.0
        for i in range(2):
            for j in range(3):
                ref += math.log(sum(math.exp(v) for v in lg[i, j])) - lg[i, j, lab[i, j]]
        self.assertAlmostEqual(float(ops.cross_entropy(lg, lab)), ref / 6, places=12)
        self.assertAlmostEqual(float(ops.cross_entropy(lg + 1e4, lab)), ref / 6, places=9)
        self.assertAlmostEqual(float(ops.cross_entropy(np.zeros((5, 97)), np.arange(5))),
                               math.log(97), places=14)
        l32 = ops.cross_entropy(lg.astype(np.float32), lab)
        self.assertEqual((l32.shape, l32.dtype), ((), np.float32))
        for bad in (np.full((2, 3), 7), np.full((2, 3), -1)):
            with self.assertRaises(ValueError):
                ops.cross_entropy(lg, bad)
        with self.assertRaises(ValueError):
            ops.cross_entropy(lg, lab[:, :2])


if __name__ == "__main__":
    unittest.main()
