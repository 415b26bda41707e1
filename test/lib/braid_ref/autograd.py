"""Reverse-mode differentiation of braid_ref models with the VJPs of braid_ref.vjp.

`TapedOps` is an op namespace with the functions of braid_ref.ops: each call
runs the op of ops.py and records (outputs, inputs, vjp). models.py calls its
ops through a substitutable namespace (`ops_ns`), so running the model with a
TapedOps records the whole forward; `Tape.backward` then runs the VJPs in
reverse. Arrays are identified by object identity: the tape keeps every
recorded array alive, and the parameters are looked up from one dict of
arrays, so a parameter used twice (tied embeddings) is one node whose
cotangent contributions are summed.

Public entry points:
    grad_of_loss(cfg, params, tokens, labels, compute_dtype=np.float64, record=None)
        -> (loss: float, grads: {name: array})
    TapedOps / Tape for differentiating other compositions of ops:
        t = TapedOps(); y = f(t, ...); g = t.tape.backward({id(y): dy}); g[id(x)]
    directional_fd, entry_fd, vjp_fd_errors: central finite differences (test
    utilities).
"""

from __future__ import annotations

import numpy as np

from . import ops, vjp

__all__ = ["Tape", "TapedOps", "grad_of_loss", "loss_of", "directional_fd", "entry_fd",
           "vjp_fd_errors"]


def _is_float(a) -> bool:
    return isinstance(a, np.ndarray) and np.issubdtype(a.dtype, np.floating)


class Tape:
    """A list of nodes (outputs, inputs, back); back(*output cotangents) returns
    the cotangents of `inputs` (None entries for non-differentiable ones)."""

    def __init__(self):
        self.nodes = []
        self.keep = []          # arrays referenced by id: kept alive

    def record(self, outs, ins, back):
        self.nodes.append((tuple(outs), tuple(ins), back))
        self.keep.extend(a for a in list(outs) + list(ins) if isinstance(a, np.ndarray))

    def backward(self, seeds: dict) -> dict:
        """seeds: {id(array): cotangent}. Returns {id(array): float64 cotangent}
        for every array reached (contributions summed)."""
        grads = {k: np.asarray(v, dtype=np.float64) for k, v in seeds.items()}
        for outs, ins, back in reversed(self.nodes):
            dys = [grads.get(id(o)) for o in outs]
            if all(d is None for d in dys):
                continue
            dys = [np.zeros(o.shape) if d is None else d for d, o in zip(dys, outs)]
            cts = back(*dys)
            if not isinstance(cts, tuple):
                cts = (cts,)
            assert len(cts) == len(ins), (len(cts), len(ins))
            for a, ct in zip(ins, cts):
                if a is None or ct is None or not _is_float(a):
                    continue
                ct = np.asarray(ct, dtype=np.float64).reshape(a.shape)
                prev = grads.get(id(a))
                grads[id(a)] = ct if prev is None else prev + ct
        return grads


class TapedOps:
    """Drop-in namespace for braid_ref.ops that records every call on `tape`.
    `router_indices` lists the indices each router call selected (in call order)."""

    ACTIVATIONS = ops.ACTIVATIONS
    assign_slots = staticmethod(ops.assign_slots)
    rope = staticmethod(ops.rope)

    def __init__(self, tape: Tape | None = None):
        self.tape = Tape() if tape is None else tape
        self.router_indices = []

    def _rec(self, out, ins, back):
        self.tape.record([out], ins, back)
        return out

    # transformer
    def embedding(self, tokens, table, position_table=None):
        y = ops.embedding(tokens, table, position_table)
        return self._rec(y, [table, position_table],
                         lambda dy: vjp.embedding_vjp(dy, tokens, table, position_table))

    def linear(self, x, weight, bias=None, transpose_weight=False):
        y = ops.linear(x, weight, bias, transpose_weight)
        return self._rec(y, [x, weight, bias],
                         lambda dy: vjp.linear_vjp(dy, x, weight, bias, transpose_weight))

    def batch_matmul(self, lhs, rhs, transpose_a=False, transpose_b=False):
        y = ops.batch_matmul(lhs, rhs, transpose_a, transpose_b)
        return self._rec(y, [lhs, rhs],
                         lambda dy: vjp.batch_matmul_vjp(dy, lhs, rhs, transpose_a, transpose_b))

    def attention(self, query, key, value, causal=False, scale=None, rope_theta=None):
        y = ops.attention(query, key, value, causal, scale, rope_theta)
        return self._rec(y, [query, key, value], lambda dy: vjp.attention_vjp(
            dy, query, key, value, causal, scale, rope_theta))

    def rms_norm(self, x, gamma, epsilon=1e-5):
        y = ops.rms_norm(x, gamma, epsilon)
        return self._rec(y, [x, gamma], lambda dy: vjp.rms_norm_vjp(dy, x, gamma, epsilon))

    def softmax(self, x):
        y = ops.softmax(x)
        return self._rec(y, [x], lambda dy: vjp.softmax_vjp(dy, x))

    def layer_norm(self, x, gamma, beta, epsilon=1e-5):
        y = ops.layer_norm(x, gamma, beta, epsilon)
        return self._rec(y, [x, gamma, beta],
                         lambda dy: vjp.layer_norm_vjp(dy, x, gamma, beta, epsilon))

    # elementwise
    def activation(self, name, x):
        y = ops.activation(name, x)
        return self._rec(y, [x], lambda dy: vjp.activation_vjp(name, dy, x))

    def gelu(self, x, approximate=False):
        y = ops.gelu(x, approximate)
        return self._rec(y, [x], lambda dy: vjp.gelu_vjp(dy, x, approximate))

    def silu(self, x):
        return self.activation("silu", x)

    def sigmoid(self, x):
        return self.activation("sigmoid", x)

    def relu(self, x):
        return self.activation("relu", x)

    def softplus(self, x):
        y = ops.softplus(x)
        return self._rec(y, [x], lambda dy: vjp.softplus_vjp(dy, x))

    def exp(self, x):
        y = ops.exp(x)
        return self._rec(y, [x], lambda dy: vjp.exp_vjp(dy, x))

    def neg(self, x):
        y = ops.neg(x)
        return self._rec(y, [x], lambda dy: vjp.neg_vjp(dy, x))

    def add(self, lhs, rhs):
        y = ops.add(lhs, rhs)
        return self._rec(y, [lhs, rhs], lambda dy: vjp.add_vjp(dy, lhs, rhs))

    def mul(self, lhs, rhs):
        y = ops.mul(lhs, rhs)
        return self._rec(y, [lhs, rhs], lambda dy: vjp.mul_vjp(dy, lhs, rhs))

    def glu(self, act, gate, up):
        y = ops.glu(act, gate, up)
        return self._rec(y, [gate, up], lambda dy: vjp.glu_vjp(act, dy, gate, up))

    # layout
    def reshape(self, x, shape):
        y = ops.reshape(x, shape)
        return self._rec(y, [x], lambda dy: vjp.reshape_vjp(dy, x))

    def transpose(self, x, permutation):
        y = ops.transpose(x, permutation)
        return self._rec(y, [x], lambda dy: vjp.transpose_vjp(dy, x, permutation))

    # loss
    def cross_entropy(self, logits, labels):
        y = ops.cross_entropy(logits, labels)
        return self._rec(y, [logits], lambda dy: vjp.cross_entropy_vjp(dy, logits, labels))

    # mamba
    def conv1d(self, x, weight, bias=None):
        y = ops.conv1d(x, weight, bias)
        return self._rec(y, [x, weight, bias], lambda dy: vjp.conv1d_vjp(dy, x, weight, bias))

    def selective_scan(self, x, delta, A, B, C, D, delta_softplus=False):
        y = ops.selective_scan(x, delta, A, B, C, D, delta_softplus)
        return self._rec(y, [x, delta, A, B, C, D], lambda dy: vjp.selective_scan_vjp(
            dy, x, delta, A, B, C, D, delta_softplus))

    # mixture of experts
    def router(self, logits, top_k, normalize=False):
        w, idx = ops.router(logits, top_k, normalize)
        self.router_indices.append(idx)
        self.tape.record([w], [logits], lambda dw: vjp.router_vjp(dw, logits, idx, normalize))
        return w, idx

    def dispatch(self, x, indices, experts, capacity, groups=1):
        y = ops.dispatch(x, indices, experts, capacity, groups)
        return self._rec(y, [x], lambda dy: vjp.dispatch_vjp(dy, x, indices, experts, capacity,
                                                            groups))

    def expert_ffn(self, act, x, w_up, w_down, w_gate=None):
        y = ops.expert_ffn(act, x, w_up, w_down, w_gate)
        return self._rec(y, [x, w_up, w_down, w_gate],
                         lambda dy: vjp.expert_ffn_vjp(act, dy, x, w_up, w_down, w_gate))

    def combine(self, expert_output, weights, indices, groups=1):
        y = ops.combine(expert_output, weights, indices, groups)
        return self._rec(y, [expert_output, weights],
                         lambda dy: vjp.combine_vjp(dy, expert_output, weights, indices, groups))


def _cast_params(params: dict, dtype) -> dict:
    return {k: np.array(v, dtype=dtype) for k, v in params.items()}


def loss_of(cfg: dict, params: dict, tokens, labels, compute_dtype=np.float64) -> float:
    """The loss (float) of models.forward with every parameter cast to compute_dtype."""
    from . import models
    return float(models.forward(cfg, _cast_params(params, compute_dtype), tokens, labels))


def grad_of_loss(cfg: dict, params: dict, tokens, labels, compute_dtype=np.float64,
                 record: dict | None = None) -> tuple:
    """(loss, grads) of the training loss of models.forward: loss a float, grads
    {name: array of compute_dtype} for every parameter.

    Every parameter is cast to compute_dtype first. float64: a float64
    reference of forward and backward. float32: each op's result and each VJP's
    cotangent is rounded to f32 (a runtime storing f32 tensors), the
    contributions to one tensor being summed in float64.
    `record`, if given, receives models.logits' activations (h0.., logits),
    "loss", and "router_indices" (the indices of each router call, in order)."""
    from . import models
    taped = TapedOps()
    cast = _cast_params(params, compute_dtype)
    p = models._Params(cast, None, taped)
    rec = {} if record is None else record
    loss = taped.cross_entropy(models.logits(cfg, cast, tokens, _p=p, record=rec), labels)
    p.check_all_used()
    rec["loss"] = loss
    rec["router_indices"] = taped.router_indices
    g = taped.tape.backward({id(loss): np.float64(1.0)})
    grads = {}
    for name, a in cast.items():
        ga = g.get(id(a))
        grads[name] = (np.zeros(a.shape) if ga is None else ga).astype(compute_dtype)
    return float(loss), grads


# --------------------------------------------------------------------------
# finite differences (test utilities)
# --------------------------------------------------------------------------

def directional_fd(f, xs, dirs, eps: float = 1e-6) -> float:
    """Central difference (f(xs + eps dirs) - f(xs - eps dirs)) / (2 eps) of the
    scalar function f(*xs) (None in dirs: that argument is not perturbed)."""
    def at(sign):
        return float(f(*[x if d is None else x + sign * eps * d for x, d in zip(xs, dirs)]))
    return (at(1.0) - at(-1.0)) / (2.0 * eps)


def entry_fd(f, xs, i: int, entries, eps: float = 1e-6) -> np.ndarray:
    """Central differences of the scalar f(*xs) w.r.t. the flat entries of xs[i]."""
    out = []
    for e in entries:
        vals = []
        for sign in (1.0, -1.0):
            x = np.array(xs[i], dtype=np.float64)
            x.reshape(-1)[e] += sign * eps
            args = list(xs)
            args[i] = x
            vals.append(float(f(*args)))
        out.append((vals[0] - vals[1]) / (2.0 * eps))
    return np.asarray(out)


def vjp_fd_errors(f, xs, dy, cts, eps: float = 1e-6, max_entries: int = 256,
                  seed: int = 0) -> list:
    """Checks cotangents cts[i] of the inputs xs of an array function f against
    central finite differences of the scalar phi(xs) = <dy, f(*xs)> in float64.

    For each i with cts[i] not None: the entrywise FD of every entry of xs[i]
    (a random subset of max_entries when larger) and the FD along one random
    direction. Returns per input (None where cts[i] is None) the larger of
      max_e |ct[e] - fd[e]| / max_e |fd[e]|   and
      |<ct, u> - fd_u| / (|ct| |u|)."""
    rng = np.random.default_rng(seed)
    xs = [np.asarray(x, dtype=np.float64) for x in xs]
    dyf = np.asarray(dy, dtype=np.float64)

    def phi(*a):
        return float(np.sum(dyf * np.asarray(f(*a), dtype=np.float64)))

    errs = []
    for i, ct in enumerate(cts):
        if ct is None:
            errs.append(None)
            continue
        ct = np.asarray(ct, dtype=np.float64)
        assert ct.shape == xs[i].shape, (i, ct.shape, xs[i].shape)
        n = xs[i].size
        entries = np.arange(n) if n <= max_entries else rng.choice(n, max_entries, replace=False)
        fd = entry_fd(phi, xs, i, entries, eps)
        scale = max(float(np.max(np.abs(fd))), 1e-300)
        e1 = float(np.max(np.abs(ct.reshape(-1)[entries] - fd))) / scale
        u = rng.standard_normal(xs[i].shape)
        dirs = [None] * len(xs)
        dirs[i] = u
        fdu = directional_fd(phi, xs, dirs, eps)
        e2 = abs(float(np.sum(ct * u)) - fdu) / max(float(np.linalg.norm(ct) * np.linalg.norm(u)),
                                                    1e-300)
        errs.append(max(e1, e2))
    return errs
