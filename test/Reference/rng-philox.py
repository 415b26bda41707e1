# RUN: %python %s
# braid_ref.rng: Philox4x32-10 known answers, FNV-1a vectors, counter layout,
# shard/slice consistency, distribution sanity, integer draws, bf16 rounding.

import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import numpy as np  # noqa: E402

from braid_ref import rng  # noqa: E402


def philox1(ctr, key):
    out = rng.philox4x32_10(*[np.array([c], dtype=np.uint64) for c in ctr], *key)
    return [int(w[0]) for w in out]


class Philox(unittest.TestCase):
    def test_kat(self):
        # Random123 kat_vectors, philox4x32 10 rounds
        kat = [([0, 0, 0, 0], [0, 0], [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]),
               ([0xffffffff] * 4, [0xffffffff] * 2,
                [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]),
               ([0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0],
                [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1])]
        for ctr, key, expect in kat:
            self.assertEqual(philox1(ctr, key), expect)

    def test_fnv1a(self):
        self.assertEqual(rng.fnv1a64(b""), 0xcbf29ce484222325)
        self.assertEqual(rng.fnv1a64(b"a"), 0xaf63dc4c8601ec8c)
        self.assertEqual(rng.fnv1a64(b"foobar"), 0x85944171f73967e8)
        h = rng.fnv1a64(b"7:layers.0.attn.wq")
        self.assertEqual(rng.key_of(7, "layers.0.attn.wq"), (h & 0xffffffff, h >> 32))
        with self.assertRaises(ValueError):
            rng.key_of(-1, "x")

    def test_counter_layout(self):
        # element i uses counter (i mod 2^32, i >> 32, 0, 0), also across 2^32
        key = rng.key_of(3, "w")
        start = 2 ** 32 - 3
        got = rng.bits(3, "w", start, start + 6)
        for n in range(6):
            i = start + n
            self.assertEqual([int(w[n]) for w in got], philox1([i & 0xffffffff, i >> 32, 0, 0], key))
        x0, x1, _, _ = got
        u1 = (int(x0[4]) + 1) * 2.0 ** -32
        u2 = int(x1[4]) * 2.0 ** -32
        z = math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)
        self.assertAlmostEqual(rng.normal(3, "w", start + 4, start + 5)[0], z, places=14)


class Draws(unittest.TestCase):
    def test_slices_and_chunks(self):
        full = rng.normal(5, "p", 0, 5000)
        for a, b in ((0, 1), (17, 400), (4999, 5000), (1234, 4321), (7, 7)):
            np.testing.assert_array_equal(rng.normal(5, "p", a, b), full[a:b])
        old = rng._CHUNK
        try:                                  # batching does not change values
            rng._CHUNK = 333
            np.testing.assert_array_equal(rng.normal(5, "p", 100, 5000), full[100:])
            np.testing.assert_array_equal(rng.uniform_int(5, "t", 50, 9, 4000),
                                          (rng.bits(5, "t", 9, 4000)[2].astype(np.uint64)
                                           * np.uint64(50)) >> np.uint64(32))
        finally:
            rng._CHUNK = old
        w = rng.param_values(5, "p", (50, 100), "normal", 0.02, "f32")
        self.assertEqual((w.shape, w.dtype), ((50, 100), np.float32))
        np.testing.assert_array_equal(w.ravel(), (0.02 * full).astype(np.float32))
        shards = [rng.param_values(5, "p", (50, 100), "normal", 0.02, "f32", a, a + 1250)
                  for a in range(0, 5000, 1250)]
        np.testing.assert_array_equal(np.concatenate(shards), w.ravel())
        with self.assertRaises(ValueError):
            rng.param_values(5, "p", (50, 100), "normal", 0.02, "f32", 10, 5001)

    def test_streams_differ(self):
        a = rng.normal(0, "x", 0, 64)
        self.assertFalse(np.array_equal(a, rng.normal(1, "x", 0, 64)))
        self.assertFalse(np.array_equal(a, rng.normal(0, "y", 0, 64)))
        self.assertFalse(np.array_equal(a, rng.normal(0, "x", 1, 65)))
        np.testing.assert_array_equal(a, rng.normal(0, "x", 0, 64))

    def test_normal_statistics(self):
        z = rng.normal(0, "stats", 0, 100_000)
        self.assertLess(abs(z.mean()), 0.01)
        self.assertLess(abs(z.std() - 1), 0.01)
        self.assertLess(abs(np.mean(np.abs(z) > 1.959964) - 0.05), 0.005)
        self.assertLess(abs(np.mean(z ** 3)), 0.05)          # symmetric
        self.assertLess(abs(np.mean(z ** 4) - 3), 0.1)        # Gaussian kurtosis
        self.assertTrue(np.all(np.isfinite(z)))

    def test_exact_path_agrees(self):
        a = rng.normal(2, "e", 0, 20_000)
        b = rng.normal_exact(2, "e", 0, 20_000)
        self.assertLess(np.max(np.abs(a - b)), 1e-13)
        np.testing.assert_array_equal(a.astype(np.float32), b.astype(np.float32))

    def test_uniform_int(self):
        n = 97
        v = rng.uniform_int(1, "tokens", n, 0, 97_000)
        self.assertTrue(v.min() >= 0 and v.max() < n)
        x2 = rng.bits(1, "tokens", 0, 97_000)[2]
        np.testing.assert_array_equal(v, np.floor(x2 * 2.0 ** -32 * n).astype(np.int64))
        counts = np.bincount(v, minlength=n)
        chi2 = np.sum((counts - 1000.0) ** 2 / 1000.0)       # 96 dof: mean 96, sd ~14
        self.assertLess(chi2, 160)
        self.assertEqual(rng.uniform_int(1, "tokens", 1, 0, 10).tolist(), [0] * 10)

    def test_constants_and_dtypes(self):
        np.testing.assert_array_equal(rng.param_values(0, "g", (3, 2), "ones"), np.ones((3, 2)))
        np.testing.assert_array_equal(rng.param_values(0, "b", (4,), "zeros"), np.zeros(4))
        self.assertEqual(rng.param_values(0, "w", (8,), "normal", 1.0, "f16").dtype, np.float16)
        w64 = rng.param_values(0, "w", (8,), "normal", 0.5, "f64")
        np.testing.assert_array_equal(w64, 0.5 * rng.normal(0, "w", 0, 8))
        bf = rng.param_values(0, "w", (64,), "normal", 1.0, "bf16")
        self.assertTrue(np.all(bf.view(np.uint32) & 0xffff == 0))
        for bad in (("normal", None), ("uniform", 1.0)):
            with self.assertRaises(ValueError):
                rng.param_values(0, "w", (2,), *bad)

    def test_round_bf16(self):
        one = 1.0
        cases = [(one, one), (one + 2 ** -8, one),              # tie -> even (down)
                 (one + 3 * 2 ** -8, one + 2 ** -6),             # tie -> even (up)
                 (one + 2 ** -8 + 2 ** -20, one + 2 ** -7),      # above the tie
                 (-3.0, -3.0), (0.0, 0.0)]
        got = rng.round_bf16(np.array([c for c, _ in cases], dtype=np.float32))
        self.assertEqual(got.tolist(), [e for _, e in cases])
        self.assertTrue(np.isnan(rng.round_bf16(np.array([np.nan]))[0]))


if __name__ == "__main__":
    unittest.main()
