# RUN: %python %s
# braid_ref.models on the builder's tiny presets: every family runs, the loss
# at init is finite and close to log(vocab), deterministic, f32 ~ f64, and the
# parameter names match the builder's declarations exactly.

import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import numpy as np  # noqa: E402

from braid_ref import models  # noqa: E402

PRESETS = ["gpt-tiny", "llama-tiny", "mamba-tiny", "moe-tiny", "hybrid-tiny"]


class Presets(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cases = {n: models.preset_case(n, seed=0) for n in PRESETS}

    def test_loss_at_init(self):
        for name, (cfg, params, tok, lab) in self.cases.items():
            loss = models.forward(cfg, params, tok, lab)
            self.assertEqual((loss.shape, loss.dtype), ((), np.float32), msg=name)
            self.assertTrue(np.isfinite(loss), msg=name)
            # logits span the padded vocabulary; at init they are nearly uniform
            self.assertLess(abs(float(loss) - math.log(cfg["vocab"])), 0.1, msg=name)

    def test_deterministic(self):
        for name, (cfg, params, tok, lab) in self.cases.items():
            cfg2, params2, tok2, lab2 = models.preset_case(name, seed=0)
            self.assertEqual(sorted(params), sorted(params2))
            for k in params:
                np.testing.assert_array_equal(params[k], params2[k], err_msg=k)
            np.testing.assert_array_equal(tok, tok2)
            self.assertEqual(float(models.forward(cfg, params, tok, lab)),
                             float(models.forward(cfg2, params2, tok2, lab2)), msg=name)
        other = models.preset_case("llama-tiny", seed=1)
        self.assertNotEqual(float(models.forward(*other)),
                            float(models.forward(*self.cases["llama-tiny"])))

    def test_f32_close_to_f64(self):
        for name, (cfg, params, tok, lab) in self.cases.items():
            l32 = float(models.forward(cfg, params, tok, lab))
            l64 = float(models.forward(cfg, params, tok, lab, compute_dtype=np.float64))
            self.assertLess(abs(l32 - l64), 1e-5, msg=name)

    def test_inputs(self):
        for name, (cfg, _, tok, lab) in self.cases.items():
            n = cfg.get("vocab_unpadded", cfg["vocab"])
            for a in (tok, lab):
                self.assertEqual((a.shape, a.dtype), ((cfg["batch"], cfg["seq"]), np.int32))
                self.assertTrue(a.min() >= 0 and a.max() < n, msg=name)
            self.assertFalse(np.array_equal(tok, lab))

    def test_causal_models(self):
        # dense families: logits at positions < S-1 ignore the last token. (Not MoE:
        # capacity drops make routing depend on later tokens of the batch.)
        for name in ("gpt-tiny", "llama-tiny", "mamba-tiny"):
            cfg, params, tok, _ = self.cases[name]
            tok2 = tok.copy()
            tok2[:, -1] = (tok2[:, -1] + 1) % cfg["vocab"]
            a = models.logits(cfg, params, tok, compute_dtype=np.float64)
            b = models.logits(cfg, params, tok2, compute_dtype=np.float64)
            np.testing.assert_array_equal(a[:, :-1], b[:, :-1])
            self.assertFalse(np.array_equal(a[:, -1], b[:, -1]), msg=name)

    def test_layer_plan(self):
        cfg = self.cases["hybrid-tiny"][0]
        self.assertEqual(models.layer_blocks(cfg), [("mamba", "mlp"), ("mamba", "moe"),
                                                    ("attn", "mlp"), ("mamba", "moe")])
        bad = dict(cfg, layer_pattern=["attn_mlp"] * 4)
        with self.assertRaises(ValueError):
            models.layer_blocks(bad)
        self.assertEqual(models.moe_capacity(cfg, 16), 10)      # ceil(1.25 * 2 * 16 / 4): a sequence

    def test_param_names_checked(self):
        cfg, params, tok, lab = self.cases["moe-tiny"]
        missing = dict(params)
        del missing["layers.1.moe.router"]
        with self.assertRaises(KeyError):
            models.forward(cfg, missing, tok, lab)
        extra = dict(params, **{"layers.0.attn.bq": np.zeros(64, np.float32)})
        with self.assertRaises(ValueError):
            models.forward(cfg, extra, tok, lab)
        with self.assertRaises(ValueError):               # token out of range
            models.forward(cfg, params, np.full_like(tok, cfg["vocab"]), lab)


if __name__ == "__main__":
    unittest.main()
