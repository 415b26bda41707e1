"""Reference training loop: gradients from braid_ref.autograd and the optimizer
step exactly as runtime/include/braid/runtime.h ("Optimizer kernels") states:

    sumsq = sum over all gradients of g^2
    coef  = min(1, max_norm / (sqrt(sumsq) + 1e-6))          (max_norm <= 0: 1)
    g     = coef * grad
    SGD:    p -= lr * (g + weight_decay * p)
    AdamW:  t += 1 (before the update; the first update has t = 1)
            m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
            p -= lr * (m / (1 - b1^t) / (sqrt(v / (1 - b2^t)) + eps) + weight_decay * p)

Weight decay applies to every parameter (the kernels take one weight_decay;
`decay` may select a subset). With compute_dtype float32 the parameters and
gradients are f32, sumsq, coef and the step counter are rounded to f32 like
the runtime's 0-d f32 tensors, m and v are f32; each update is computed in
float64 from those values and rounded once. With float64 everything is
float64 (a reference free of rounding to f32).
"""

from __future__ import annotations

import math

import numpy as np

from . import autograd

__all__ = ["clip_coefficient", "sgd_update", "adamw_update", "AdamW", "SGD", "train",
           "DEFAULTS"]

DEFAULTS = dict(lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, max_norm=1.0)


def _state_dtype(dtype):
    return np.float64 if np.dtype(dtype) == np.float64 else np.float32


def global_sumsq(grads: dict) -> float:
    """Sum of squares of all gradients (float64 accumulation)."""
    return float(sum(np.sum(np.square(np.asarray(g, dtype=np.float64))) for g in grads.values()))


def clip_coefficient(grads: dict, max_norm: float, dtype=np.float64) -> float:
    """min(1, max_norm / (sqrt(sumsq) + 1e-6)); 1 when max_norm <= 0. With a
    float32 dtype, sumsq and the coefficient are rounded to f32 (0-d f32 tensors
    of the runtime)."""
    if max_norm <= 0:
        return 1.0
    sd = _state_dtype(dtype)
    sumsq = float(sd(global_sumsq(grads)))
    return float(sd(min(1.0, max_norm / (math.sqrt(sumsq) + 1e-6))))


def sgd_update(p, g, coef: float, lr: float, weight_decay: float = 0.0) -> np.ndarray:
    """The new p: p - lr * (coef g + weight_decay p), in float64, rounded to p's dtype."""
    pf = np.asarray(p, dtype=np.float64)
    gf = coef * np.asarray(g, dtype=np.float64)
    return (pf - lr * (gf + weight_decay * pf)).astype(np.asarray(p).dtype)


def adamw_update(p, g, m, v, coef: float, t: float, lr: float, beta1: float, beta2: float,
                 eps: float, weight_decay: float) -> tuple:
    """(new p, new m, new v) of one AdamW update with step counter t (>= 1)."""
    pf = np.asarray(p, dtype=np.float64)
    gf = coef * np.asarray(g, dtype=np.float64)
    m1 = beta1 * np.asarray(m, dtype=np.float64) + (1.0 - beta1) * gf
    v1 = beta2 * np.asarray(v, dtype=np.float64) + (1.0 - beta2) * gf * gf
    mh = m1 / (1.0 - beta1 ** t)
    vh = v1 / (1.0 - beta2 ** t)
    p1 = pf - lr * (mh / (np.sqrt(vh) + eps) + weight_decay * pf)
    return (p1.astype(np.asarray(p).dtype), m1.astype(np.asarray(m).dtype),
            v1.astype(np.asarray(v).dtype))


class SGD:
    def __init__(self, params: dict, lr=DEFAULTS["lr"], weight_decay=DEFAULTS["weight_decay"],
                 max_norm=DEFAULTS["max_norm"], decay=None, dtype=np.float32):
        self.lr, self.wd, self.max_norm, self.decay = lr, weight_decay, max_norm, decay
        self.dtype = dtype
        self.last_coef = None

    def step(self, params: dict, grads: dict) -> dict:
        coef = self.last_coef = clip_coefficient(grads, self.max_norm, self.dtype)
        return {k: sgd_update(p, grads[k], coef, self.lr,
                              self.wd if self.decay is None or self.decay(k) else 0.0)
                for k, p in params.items()}


class AdamW:
    def __init__(self, params: dict, lr=DEFAULTS["lr"], betas=DEFAULTS["betas"],
                 eps=DEFAULTS["eps"], weight_decay=DEFAULTS["weight_decay"],
                 max_norm=DEFAULTS["max_norm"], decay=None, dtype=np.float32):
        self.lr, self.b1, self.b2, self.eps = lr, betas[0], betas[1], eps
        self.wd, self.max_norm, self.decay, self.dtype = weight_decay, max_norm, decay, dtype
        sd = _state_dtype(dtype)
        self.m = {k: np.zeros(np.shape(p), sd) for k, p in params.items()}
        self.v = {k: np.zeros(np.shape(p), sd) for k, p in params.items()}
        self.t = 0.0
        self.last_coef = None

    def step(self, params: dict, grads: dict) -> dict:
        coef = self.last_coef = clip_coefficient(grads, self.max_norm, self.dtype)
        self.t += 1.0
        out = {}
        for k, p in params.items():
            wd = self.wd if self.decay is None or self.decay(k) else 0.0
            out[k], self.m[k], self.v[k] = adamw_update(p, grads[k], self.m[k], self.v[k], coef,
                                                       self.t, self.lr, self.b1, self.b2,
                                                       self.eps, wd)
        return out


def train(preset, seed: int = 0, steps: int = 10, optimizer: str = "adamw",
          lr: float = DEFAULTS["lr"], betas=DEFAULTS["betas"], eps: float = DEFAULTS["eps"],
          weight_decay: float = DEFAULTS["weight_decay"], max_norm: float = DEFAULTS["max_norm"],
          compute_dtype=np.float32, decay=None, case=None, **overrides) -> tuple:
    """`steps` training steps on one fixed batch. Returns (losses, params, grads0):
    losses[i] the loss of step i (the forward at the start of step i, before its
    update, like the compiled step's result), params the parameters after the
    last update (compute_dtype), grads0 the gradients of the first step.

    preset: a builder preset name (preset_case(preset, seed, **overrides) gives
    the config, initial parameters and batch) or None with case=(cfg, params,
    tokens, labels). optimizer: "adamw" or "sgd"."""
    if case is None:
        from . import models
        case = models.preset_case(preset, seed=seed, **overrides)
    cfg, params, tokens, labels = case
    params = {k: np.array(v, dtype=compute_dtype) for k, v in params.items()}
    if optimizer == "adamw":
        opt = AdamW(params, lr, betas, eps, weight_decay, max_norm, decay, compute_dtype)
    elif optimizer == "sgd":
        opt = SGD(params, lr, weight_decay, max_norm, decay, compute_dtype)
    else:
        raise ValueError(f"unknown optimizer {optimizer!r}")
    losses, grads0 = [], None
    for _ in range(steps):
        loss, grads = autograd.grad_of_loss(cfg, params, tokens, labels, compute_dtype)
        if grads0 is None:
            grads0 = grads
        losses.append(loss)
        params = opt.step(params, grads)
    return losses, params, grads0
