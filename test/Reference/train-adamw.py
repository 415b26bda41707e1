# RUN: %python %s
# braid_ref.train: the optimizer step as runtime.h states it (global-norm
# clipping, SGD, AdamW with bias correction and decoupled weight decay, step
# counter starting at 1), and 10 AdamW steps on one batch lowering the loss of
# every tiny preset (float32 storage, defaults lr 1e-3, betas (0.9, 0.95),
# eps 1e-8, weight decay 0.1, max_norm 1).

import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import numpy as np  # noqa: E402

from braid_ref import autograd, models, train  # noqa: E402

PRESETS = ["gpt-tiny", "llama-tiny", "mamba-tiny", "moe-tiny", "hybrid-tiny"]
RNG = np.random.default_rng(21)


class Clip(unittest.TestCase):
    def test_coefficient(self):
        g = {"a": np.array([3.0, 0.0]), "b": np.array([[4.0]])}          # norm 5
        self.assertAlmostEqual(train.clip_coefficient(g, 1.0), 1.0 / (5.0 + 1e-6), places=15)
        self.assertEqual(train.clip_coefficient(g, 10.0), 1.0)
        self.assertEqual(train.clip_coefficient(g, 0.0), 1.0)
        self.assertEqual(train.clip_coefficient(g, -1.0), 1.0)
        self.assertEqual(train.clip_coefficient({"a": np.zeros(3)}, 1.0), 1.0)
        c32 = train.clip_coefficient({k: v.astype(np.float32) for k, v in g.items()}, 1.0,
                                     np.float32)
        self.assertEqual(c32, float(np.float32(1.0 / (5.0 + 1e-6))))


class Updates(unittest.TestCase):
    def test_sgd(self):
        p, g = RNG.standard_normal(5), RNG.standard_normal(5)
        np.testing.assert_allclose(train.sgd_update(p, g, 0.5, 0.1, 0.01),
                                   p - 0.1 * (0.5 * g + 0.01 * p), rtol=1e-15)

    def test_adamw_first_step(self):
        # t = 1: mhat = g, vhat = g^2 -> p -= lr (g / (|g| + eps) + wd p)
        p, g = RNG.standard_normal(6), RNG.standard_normal(6)
        z = np.zeros(6)
        p1, m1, v1 = train.adamw_update(p, g, z, z, 1.0, 1.0, 1e-2, 0.9, 0.95, 1e-8, 0.1)
        np.testing.assert_allclose(m1, 0.1 * g, rtol=1e-15)
        np.testing.assert_allclose(v1, 0.05 * g * g, rtol=1e-15)
        np.testing.assert_allclose(p1, p - 1e-2 * (g / (np.abs(g) + 1e-8) + 0.1 * p),
                                   rtol=1e-14)

    def test_adamw_sequence(self):
        # three updates against the formulas written out, with clipping
        b1, b2, lr, eps, wd = 0.9, 0.95, 1e-3, 1e-8, 0.1
        params = {"w": RNG.standard_normal((3, 4)), "b": RNG.standard_normal(4)}
        opt = train.AdamW(params, lr, (b1, b2), eps, wd, max_norm=1.0, dtype=np.float64)
        p = {k: v.copy() for k, v in params.items()}
        m = {k: np.zeros_like(v) for k, v in p.items()}
        v = {k: np.zeros_like(x) for k, x in p.items()}
        cur = params
        for t in (1, 2, 3):
            grads = {k: 2.0 * RNG.standard_normal(x.shape) for k, x in p.items()}
            norm = math.sqrt(sum(float(np.sum(x * x)) for x in grads.values()))
            coef = min(1.0, 1.0 / (norm + 1e-6))
            for k in p:
                gk = coef * grads[k]
                m[k] = b1 * m[k] + (1 - b1) * gk
                v[k] = b2 * v[k] + (1 - b2) * gk * gk
                p[k] = p[k] - lr * (m[k] / (1 - b1 ** t) / (np.sqrt(v[k] / (1 - b2 ** t)) + eps)
                                    + wd * p[k])
            cur = opt.step(cur, grads)
            self.assertEqual(opt.t, t)
            self.assertAlmostEqual(opt.last_coef, coef, places=15)
            for k in p:
                np.testing.assert_allclose(cur[k], p[k], rtol=1e-14, err_msg=f"t={t} {k}")

    def test_decay_subset(self):
        params = {"w": np.ones(2), "norm": np.ones(2)}
        grads = {k: np.zeros(2) for k in params}
        out = train.SGD(params, lr=0.1, weight_decay=0.5, decay=lambda n: n != "norm",
                        dtype=np.float64).step(params, grads)
        np.testing.assert_allclose(out["w"], 0.95)
        np.testing.assert_allclose(out["norm"], 1.0)


class Train(unittest.TestCase):
    def test_loss_decreases(self):
        for preset in PRESETS:
            losses, params, g0 = train.train(preset, seed=0, steps=10)
            self.assertEqual(len(losses), 10)
            self.assertTrue(all(np.isfinite(losses)), msg=preset)
            self.assertTrue(all(b < a for a, b in zip(losses, losses[1:])),
                            msg=f"{preset}: {losses}")
            self.assertLess(losses[-1], losses[0] - 0.2, msg=f"{preset}: {losses}")
            for k, p in params.items():
                self.assertEqual(p.dtype, np.float32, msg=k)
                self.assertEqual(g0[k].shape, p.shape, msg=k)
            # the first loss is the forward of the initial parameters
            cfg, p0, tok, lab = models.preset_case(preset, seed=0)
            self.assertAlmostEqual(losses[0], float(models.forward(cfg, p0, tok, lab)), places=5)

    def test_first_step_by_hand(self):
        cfg, p0, tok, lab = case = models.preset_case("llama-tiny", seed=0)
        losses, p1, g0 = train.train(None, steps=1, case=case, compute_dtype=np.float64)
        _, g = autograd.grad_of_loss(cfg, p0, tok, lab)
        norm = math.sqrt(sum(float(np.sum(x * x)) for x in g.values()))
        coef = min(1.0, 1.0 / (norm + 1e-6))
        for k in p0:
            np.testing.assert_array_equal(g0[k], g[k])
            p = p0[k].astype(np.float64)
            gk = coef * g[k]
            ref = p - 1e-3 * (gk / (np.sqrt(gk * gk) + 1e-8) + 0.1 * p)
            np.testing.assert_allclose(p1[k], ref, rtol=1e-12, atol=1e-15, err_msg=k)

    def test_sgd_and_f32_vs_f64(self):
        l32, _, _ = train.train("mamba-tiny", steps=4, optimizer="sgd", lr=0.5,
                                weight_decay=0.0, max_norm=0.0)
        l64, _, _ = train.train("mamba-tiny", steps=4, optimizer="sgd", lr=0.5,
                                weight_decay=0.0, max_norm=0.0, compute_dtype=np.float64)
        self.assertLess(l64[-1], l64[0])
        np.testing.assert_allclose(l32, l64, rtol=0, atol=1e-4)
        l32, _, _ = train.train("moe-tiny", steps=5)
        l64, _, _ = train.train("moe-tiny", steps=5, compute_dtype=np.float64)
        np.testing.assert_allclose(l32, l64, rtol=0, atol=1e-4)
        with self.assertRaises(ValueError):
            train.train("gpt-tiny", steps=1, optimizer="lion")


if __name__ == "__main__":
    unittest.main()
