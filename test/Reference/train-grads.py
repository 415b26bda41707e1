# RUN: %python %s
# braid_ref.autograd.grad_of_loss on the builder's tiny presets against finite
# differences of the loss (models.forward), everything in float64.
#
# Two parameter sets per preset:
#  - "init": the preset's initialization (seed 0). Some gradients are far too
#    small there for any finite difference of the loss to resolve (the Mamba
#    B/C/dt/A path is a product of several 0.02-scale factors: |g| ~ 1e-11,
#    below the float64 resolution of a loss of ~5 for any sane step; GPT's
#    key bias has an exactly zero gradient, softmax being shift invariant).
#    Checked: the directional derivative of the loss along a random direction
#    in the space of all parameters (central difference, eps 1e-6, rel. err.
#    <= 1e-6), and 20 random entries among those with |g| >= 1e-6.
#  - "spread": init + 0.1 N(0, 1) noise on every parameter, where every
#    tensor's gradient is resolvable. Checked: the largest-|g| entry of every
#    parameter tensor.
# Entrywise FD: the 4-point stencil (8 (f(+h) - f(-h)) - (f(+2h) - f(-2h))) / 12h,
# h = 1e-3 (truncation O(h^4), rounding ~1e-16 * loss / h); relative error
# |g - fd| / |fd| <= 1e-5 (observed <= ~1e-6). An exactly zero gradient
# (|g| < 1e-12) must have |fd| < 1e-9.
# MoE: routing is piecewise constant in the parameters. Every FD evaluation
# records the router indices of every MoE layer (autograd.TapedOps) and
# compares them to the unperturbed ones; when a step changes the routing the
# entry is retried with h = 1e-5, 1e-6 (the routing decision then lies within
# ~h of a tie), and skipped if it still changes (counted: at most 2 per preset).

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import numpy as np  # noqa: E402

from braid_ref import autograd, models  # noqa: E402

PRESETS = ["gpt-tiny", "llama-tiny", "mamba-tiny", "moe-tiny", "hybrid-tiny"]
TOL = 1e-5
RESOLVABLE = 1e-6
VERBOSE = bool(os.environ.get("BRAID_REF_VERBOSE"))


class Case:
    def __init__(self, name, spread):
        cfg, params, tok, lab = models.preset_case(name, seed=0)
        rng = np.random.default_rng(1234)
        self.params = {k: v.astype(np.float64) for k, v in params.items()}
        if spread:
            self.params = {k: v + 0.1 * rng.standard_normal(v.shape)
                           for k, v in self.params.items()}
        self.cfg, self.tok, self.lab = cfg, tok, lab
        self.moe = bool(cfg.get("experts"))
        rec = {}
        self.loss, self.grads = autograd.grad_of_loss(cfg, self.params, tok, lab, record=rec)
        self.routing = [i.copy() for i in rec["router_indices"]]
        self.skipped = 0
        self.retried = 0

    def loss_at(self, name, entry, delta):
        """(loss, routing unchanged) with params[name].flat[entry] += delta."""
        p = dict(self.params)
        x = p[name].copy()
        x.reshape(-1)[entry] += delta
        p[name] = x
        if not self.moe:
            return float(models.forward(self.cfg, p, self.tok, self.lab)), True
        taped = autograd.TapedOps()
        loss = float(models.forward(self.cfg, p, self.tok, self.lab, ops_ns=taped))
        same = all(np.array_equal(a, b) for a, b in zip(taped.router_indices, self.routing))
        return loss, same

    def fd(self, name, entry):
        """4-point central difference, or None when every step changed the routing."""
        for h in (1e-3, 1e-5, 1e-6):
            vals, same = {}, True
            for k in (1, -1, 2, -2):
                vals[k], ok = self.loss_at(name, entry, k * h)
                same = same and ok
            if same:
                return (8 * (vals[1] - vals[-1]) - (vals[2] - vals[-2])) / (12 * h)
            self.retried += 1
        self.skipped += 1
        return None


class Grads(unittest.TestCase):
    def check_entries(self, case, entries, msg):
        worst = 0.0
        for name, e in entries:
            g = float(case.grads[name].reshape(-1)[e])
            fd = case.fd(name, e)
            if fd is None:
                continue
            if abs(g) < 1e-12:
                self.assertLess(abs(fd), 1e-9, msg=f"{msg} {name}[{e}]: g {g} fd {fd}")
                continue
            err = abs(g - fd) / abs(fd)
            worst = max(worst, err)
            self.assertLess(err, TOL, msg=f"{msg} {name}[{e}]: g {g!r} fd {fd!r}")
        self.assertLessEqual(case.skipped, 2, msg=f"{msg}: routing changed too often")
        return worst

    def random_entries(self, case, rng, count):
        """`count` random (name, entry) with |g| >= RESOLVABLE."""
        names = sorted(n for n, g in case.grads.items() if np.abs(g).max() >= RESOLVABLE)
        out = []
        for name in rng.choice(names, count):
            ok = np.nonzero(np.abs(case.grads[name].reshape(-1)) >= RESOLVABLE)[0]
            out.append((str(name), int(rng.choice(ok))))
        return out

    def test_presets(self):
        rng = np.random.default_rng(99)
        for preset in PRESETS:
            t0 = time.time()
            # init: directional derivative over all parameters + random entries
            case = Case(preset, spread=False)
            self.assertEqual(sorted(case.grads), sorted(case.params))
            names = sorted(case.params)
            dirs = [rng.standard_normal(case.params[k].shape) for k in names]
            fdd = autograd.directional_fd(
                lambda *xs: models.forward(case.cfg, dict(zip(names, xs)), case.tok, case.lab),
                [case.params[k] for k in names], dirs, 1e-6)
            an = sum(float(np.sum(case.grads[k] * d)) for k, d in zip(names, dirs))
            self.assertLess(abs(an - fdd) / abs(fdd), 1e-6, msg=f"{preset}: {an} vs {fdd}")
            w0 = self.check_entries(case, self.random_entries(case, rng, 20), f"{preset} init")
            s0 = (case.retried, case.skipped)
            # spread: every tensor's largest entry
            case = Case(preset, spread=True)
            entries = [(k, int(np.argmax(np.abs(g)))) for k, g in sorted(case.grads.items())]
            for k, g in case.grads.items():
                if not (preset == "gpt-tiny" and k.endswith("attn.bk")):
                    self.assertGreaterEqual(np.abs(g).max(), RESOLVABLE, msg=f"{preset} {k}")
            w1 = self.check_entries(case, entries, f"{preset} spread")
            if VERBOSE:
                print(f"{preset}: 20 + {len(entries)} entries, worst rel. err. init {w0:.1e} "
                      f"spread {w1:.1e}, routing changes (retried, skipped) init {s0} "
                      f"spread {(case.retried, case.skipped)}, {time.time() - t0:.1f}s",
                      file=sys.stderr)

    def test_key_bias_gradient_is_zero(self):
        # q.(k + bk) = q.k + q.bk is constant over the keys of one query: softmax
        # ignores it, so the key bias gets no gradient (an identity, not a bug)
        case = Case("gpt-tiny", spread=True)
        for k, g in case.grads.items():
            if k.endswith("attn.bk"):
                self.assertLess(np.abs(g).max(), 1e-15, msg=k)

    def test_float32_close(self):
        # float32 mode (each op and VJP rounded to f32) vs the float64 reference
        for preset in ("llama-tiny", "mamba-tiny"):
            cfg, params, tok, lab = models.preset_case(preset, seed=0)
            l64, g64 = autograd.grad_of_loss(cfg, params, tok, lab, np.float64)
            l32, g32 = autograd.grad_of_loss(cfg, params, tok, lab, np.float32)
            self.assertLess(abs(l32 - l64), 1e-5)
            for k in g64:
                self.assertEqual(g32[k].dtype, np.float32)
                scale = np.abs(g64[k]).max()
                np.testing.assert_allclose(g32[k], g64[k], rtol=0, atol=1e-3 * scale + 1e-12,
                                           err_msg=f"{preset} {k}")


if __name__ == "__main__":
    unittest.main()
