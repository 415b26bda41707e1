"""Vector-Jacobian products of the braid ops of braid_ref.ops.

Written from the math of each op (not by numerical differentiation); they are
the reference of the runtime's backward kernels (runtime.h, "Backward
kernels"). Convention: `<op>_vjp(dy, *forward operands, **forward attributes)`
returns the cotangents of the forward's float operands, in operand order, as a
tuple (a single array when the op has one float operand). An optional operand
that was not given (bias=None, ...) gets None. Integer operands (tokens,
labels, expert indices) have no cotangent and are not returned.

Precision: like ops, everything is computed in float64 and each cotangent is
cast to the dtype of its primal operand (float64 operands give a float64
reference; float32 operands model a runtime that stores f32 gradients).
"""

from __future__ import annotations

import math

import numpy as np

from . import ops

__all__ = [
    "linear_vjp", "batch_matmul_vjp", "rope_vjp", "attention_vjp", "rms_norm_vjp",
    "softmax_vjp",
    "layer_norm_vjp", "activation_grad", "activation_vjp", "gelu_vjp", "silu_vjp",
    "sigmoid_vjp", "relu_vjp", "softplus_vjp", "exp_vjp", "neg_vjp", "add_vjp", "mul_vjp",
    "glu_vjp", "reshape_vjp", "transpose_vjp", "embedding_vjp", "cross_entropy_vjp",
    "conv1d_vjp", "selective_scan_vjp", "router_vjp", "router_fixed", "dispatch_vjp",
    "combine_vjp", "expert_ffn_vjp",
]


def _f64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def _like(g, primal):
    """g cast to the dtype of its primal operand (None stays None)."""
    if primal is None or g is None:
        return None
    return np.asarray(g, dtype=np.float64).astype(np.asarray(primal).dtype).reshape(
        np.shape(primal))


def _sigmoid64(x):
    return np.exp(-np.logaddexp(0.0, -x))


# --------------------------------------------------------------------------
# transformer
# --------------------------------------------------------------------------

def linear_vjp(dy, x, weight, bias=None, transpose_weight: bool = False):
    """y = x W (+ b) -> (dx = dy W^T, dW = x^T dy (or dy^T x when W is stored [N, K]),
    db = sum of dy over all leading dims)."""
    w = _f64(weight)
    wk = w.T if transpose_weight else w                       # [K, N]
    dyf = _f64(dy)
    xf = _f64(x)
    n = wk.shape[1]
    dy2 = dyf.reshape(-1, n)
    x2 = xf.reshape(-1, wk.shape[0])
    dx = dyf @ wk.T
    dwk = x2.T @ dy2                                           # [K, N]
    dw = dwk.T if transpose_weight else dwk
    db = dy2.sum(axis=0) if bias is not None else None
    return _like(dx, x), _like(dw, weight), _like(db, bias)


def batch_matmul_vjp(dy, lhs, rhs, transpose_a: bool = False, transpose_b: bool = False):
    """C = op(A) op(B): d op(A) = dC op(B)^T, d op(B) = op(A)^T dC, then un-transposed."""
    a, b = _f64(lhs), _f64(rhs)
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    if transpose_b:
        b = np.swapaxes(b, -1, -2)
    dc = _f64(dy)
    da = np.matmul(dc, np.swapaxes(b, -1, -2))
    db = np.matmul(np.swapaxes(a, -1, -2), dc)
    if transpose_a:
        da = np.swapaxes(da, -1, -2)
    if transpose_b:
        db = np.swapaxes(db, -1, -2)
    return _like(da, lhs), _like(db, rhs)


def rope_vjp(dy, theta: float) -> np.ndarray:
    """RoPE is a rotation of each pair (i, i + D/2) by +angle; its transpose
    rotates by -angle. dy [B, S, H, D] (float64 result)."""
    g = _f64(dy)
    d = g.shape[-1]
    half = d // 2
    freq = float(theta) ** (-2.0 * np.arange(half) / d)
    angle = np.arange(g.shape[1])[:, None] * freq[None, :]
    cos = np.cos(angle)[None, :, None, :]
    sin = np.sin(angle)[None, :, None, :]
    lo, hi = g[..., :half], g[..., half:]
    return np.concatenate([lo * cos + hi * sin, hi * cos - lo * sin], axis=-1)


def attention_vjp(dy, query, key, value, causal: bool = False, scale=None, rope_theta=None):
    """(dq, dk, dv) of ops.attention. Recomputes the softmax P; with
    dP = dO V^T and dS = P * (dP - rowsum(P * dP)): dq = sc dS K, dk = sc dS^T q,
    dv = P^T dO. GQA: the cotangents of the Hq/Hkv query heads reading one kv
    head are summed. RoPE: dq, dk are pulled back through the rotation
    (gradients w.r.t. the unrotated q and k)."""
    qf, kf, vf = _f64(query), _f64(key), _f64(value)
    b, s, hq, d = qf.shape
    skv, hkv = kf.shape[1], kf.shape[2]
    group = hq // hkv
    if rope_theta is not None:
        qf, kf = ops.rope(qf, rope_theta), ops.rope(kf, rope_theta)
    kv_head = np.arange(hq) // group
    ke, ve = kf[:, :, kv_head, :], vf[:, :, kv_head, :]          # [B, Skv, Hq, .]
    sc = 1.0 / math.sqrt(d) if scale is None else float(scale)
    scores = sc * np.einsum("bshd,bthd->bhst", qf, ke)
    if causal:
        future = np.arange(skv)[None, :] > np.arange(s)[:, None]
        scores = np.where(future, -np.inf, scores)
    m = np.max(scores, axis=-1, keepdims=True)
    e = np.exp(scores - m)
    p = e / np.sum(e, axis=-1, keepdims=True)                    # [B, Hq, S, Skv]
    do = _f64(dy)                                                # [B, S, Hq, Dv]
    dve = np.einsum("bhst,bshe->bthe", p, do)                    # [B, Skv, Hq, Dv]
    dp = np.einsum("bshe,bthe->bhst", do, ve)
    ds = p * (dp - np.sum(p * dp, axis=-1, keepdims=True))
    dq = sc * np.einsum("bhst,bthd->bshd", ds, ke)
    dke = sc * np.einsum("bhst,bshd->bthd", ds, qf)
    # query head h = g * group + j reads kv head g
    dk = dke.reshape(b, skv, hkv, group, d).sum(axis=3)
    dv = dve.reshape(b, skv, hkv, group, dve.shape[-1]).sum(axis=3)
    if rope_theta is not None:
        dq, dk = rope_vjp(dq, rope_theta), rope_vjp(dk, rope_theta)
    return _like(dq, query), _like(dk, key), _like(dv, value)


def rms_norm_vjp(dy, x, gamma, epsilon: float = 1e-5):
    """y = x r g, r = (mean x^2 + eps)^-1/2, xh = x r:
    dgamma = sum_rows dy xh; dx = r (dxh - xh mean(dxh xh)), dxh = dy g."""
    xf, g, dyf = _f64(x), _f64(gamma), _f64(dy)
    r = 1.0 / np.sqrt(np.mean(xf * xf, axis=-1, keepdims=True) + epsilon)
    xh = xf * r
    dxh = dyf * g
    dx = r * (dxh - xh * np.mean(dxh * xh, axis=-1, keepdims=True))
    dg = np.sum((dyf * xh).reshape(-1, xf.shape[-1]), axis=0)
    return _like(dx, x), _like(dg, gamma)


def softmax_vjp(dy, x):
    """y = softmax(x) over the last dim: dx = y (dy - sum(dy y)), from x (the
    reference recomputes y in float64; the kernel reads the stored y)."""
    y = ops._softmax(_f64(x), axis=-1)
    dyf = _f64(dy)
    return _like(y * (dyf - np.sum(dyf * y, axis=-1, keepdims=True)), x)


def layer_norm_vjp(dy, x, gamma, beta, epsilon: float = 1e-5):
    """xh = (x - mean) r, r = (biased var + eps)^-1/2:
    dx = r (dxh - mean(dxh) - xh mean(dxh xh)); dgamma = sum dy xh; dbeta = sum dy."""
    xf, g, dyf = _f64(x), _f64(gamma), _f64(dy)
    mu = np.mean(xf, axis=-1, keepdims=True)
    xc = xf - mu
    r = 1.0 / np.sqrt(np.mean(xc * xc, axis=-1, keepdims=True) + epsilon)
    xh = xc * r
    dxh = dyf * g
    dx = r * (dxh - np.mean(dxh, axis=-1, keepdims=True)
              - xh * np.mean(dxh * xh, axis=-1, keepdims=True))
    h = xf.shape[-1]
    dg = np.sum((dyf * xh).reshape(-1, h), axis=0)
    db = np.sum(dyf.reshape(-1, h), axis=0)
    return _like(dx, x), _like(dg, gamma), _like(db, beta)


# --------------------------------------------------------------------------
# elementwise
# --------------------------------------------------------------------------

_erf = np.frompyfunc(math.erf, 1, 1)
_GELU_C = math.sqrt(2.0 / math.pi)


def activation_grad(name: str, x) -> np.ndarray:
    """act'(x) in float64 (relu'(0) := 0)."""
    x = _f64(x)
    if name == "silu":
        s = _sigmoid64(x)
        return s * (1.0 + x * (1.0 - s))
    if name == "sigmoid":
        s = _sigmoid64(x)
        return s * (1.0 - s)
    if name == "relu":
        return (x > 0).astype(np.float64)
    if name == "gelu":       # d/dx x Phi(x) = Phi(x) + x phi(x)
        phi = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
        cdf = 0.5 * (1.0 + np.asarray(_erf(x / math.sqrt(2.0)), dtype=np.float64))
        return cdf + x * phi
    if name == "gelu_tanh":  # y = x/2 (1 + tanh u), u = c (x + 0.044715 x^3)
        t = np.tanh(_GELU_C * (x + 0.044715 * x ** 3))
        return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _GELU_C * (1.0 + 3 * 0.044715 * x * x)
    raise ValueError(f"unknown activation {name!r}")


def activation_vjp(name: str, dy, x):
    """dx = dy * act'(x) (braid_k_activation_grad)."""
    return _like(_f64(dy) * activation_grad(name, x), x)


def gelu_vjp(dy, x, approximate: bool = False):
    return activation_vjp("gelu_tanh" if approximate else "gelu", dy, x)


def silu_vjp(dy, x):
    return activation_vjp("silu", dy, x)


def sigmoid_vjp(dy, x):
    return activation_vjp("sigmoid", dy, x)


def relu_vjp(dy, x):
    return activation_vjp("relu", dy, x)


def softplus_vjp(dy, x):
    """softplus' = sigmoid."""
    return _like(_f64(dy) * _sigmoid64(_f64(x)), x)


def exp_vjp(dy, x):
    return _like(_f64(dy) * np.exp(_f64(x)), x)


def neg_vjp(dy, x):
    return _like(-_f64(dy), x)


def add_vjp(dy, lhs, rhs):
    return _like(dy, lhs), _like(dy, rhs)


def mul_vjp(dy, lhs, rhs):
    dyf = _f64(dy)
    return _like(dyf * _f64(rhs), lhs), _like(dyf * _f64(lhs), rhs)


def glu_vjp(act: str, dy, gate, up):
    """y = act(gate) up: dgate = dy up act'(gate), dup = dy act(gate)."""
    dyf, g, u = _f64(dy), _f64(gate), _f64(up)
    dgate = dyf * u * activation_grad(act, g)
    dup = dyf * ops.ACTIVATIONS[act](g)
    return _like(dgate, gate), _like(dup, up)


# --------------------------------------------------------------------------
# layout
# --------------------------------------------------------------------------

def reshape_vjp(dy, x, shape=None):
    return np.reshape(np.asarray(dy), np.shape(x)).astype(np.asarray(x).dtype)


def transpose_vjp(dy, x, permutation):
    inv = np.argsort(np.asarray(permutation, dtype=np.int64))
    return np.transpose(np.asarray(dy), tuple(int(i) for i in inv)).astype(np.asarray(x).dtype)


# --------------------------------------------------------------------------
# embedding and loss
# --------------------------------------------------------------------------

def embedding_vjp(dy, tokens, table, position_table=None):
    """(dtable, dpos): dtable = scatter-add of the dy rows by token; dpos[s] =
    sum over the leading (batch) dims of dy[..., s, :] for s < S, zero beyond."""
    tok = np.asarray(tokens).astype(np.int64)
    dyf = _f64(dy)
    h = np.shape(table)[1]
    dtable = np.zeros(np.shape(table))
    np.add.at(dtable, tok.reshape(-1), dyf.reshape(-1, h))
    dpos = None
    if position_table is not None:
        s = tok.shape[-1]
        dpos = np.zeros(np.shape(position_table))
        dpos[:s] = dyf.reshape(-1, s, h).sum(axis=0)
    return _like(dtable, table), _like(dpos, position_table)


def cross_entropy_vjp(dloss, logits, labels):
    """dlogits = dloss / N (softmax(logits) - onehot(labels)), N = number of labels."""
    x = _f64(logits)
    v = x.shape[-1]
    x2 = x.reshape(-1, v)
    lab = np.asarray(labels).astype(np.int64).reshape(-1)
    p = np.exp(x2 - np.max(x2, axis=-1, keepdims=True))
    p /= np.sum(p, axis=-1, keepdims=True)
    p[np.arange(x2.shape[0]), lab] -= 1.0
    return _like(float(np.asarray(dloss, dtype=np.float64)) / x2.shape[0] * p, logits)


# --------------------------------------------------------------------------
# Mamba
# --------------------------------------------------------------------------

def conv1d_vjp(dy, x, weight, bias=None):
    """y[b,t,c] = bias[c] + sum_j w[c,j] xp[b,t+j,c], xp = x left-padded by K-1 zeros:
    dxp[b,t+j,c] += w[c,j] dy[b,t,c] (dx = dxp without the pad),
    dw[c,j] = sum_{b,t} dy[b,t,c] xp[b,t+j,c], db = sum_{b,t} dy."""
    xf, w, dyf = _f64(x), _f64(weight), _f64(dy)
    nb, s, c = xf.shape
    k = w.shape[1]
    xp = np.concatenate([np.zeros((nb, k - 1, c)), xf], axis=1)
    dxp = np.zeros_like(xp)
    dw = np.zeros(w.shape)
    for j in range(k):
        dxp[:, j:j + s, :] += w[:, j] * dyf
        dw[:, j] = np.sum(dyf * xp[:, j:j + s, :], axis=(0, 1))
    db = dyf.sum(axis=(0, 1)) if bias is not None else None
    return _like(dxp[:, k - 1:, :], x), _like(dw, weight), _like(db, bias)


def selective_scan_vjp(dy, x, delta, A, B, C, D, delta_softplus: bool = False):
    """(dx, ddelta, dA, dB, dC, dD) of ops.selective_scan.

    Forward, per (b, d, n): a_t = exp(dt_t A), h_t = a_t h_{t-1} + dt_t B_t x_t
    (h_{-1} = 0), y_t = sum_n C_t h_t + D x_t. Reverse-time recurrence for
    g_t = dL/dh_t: g_t = dy_t C_t + a_{t+1} g_{t+1}. Then
      dC_t = sum_d dy_t h_t,   dD = sum dy x,
      dx_t = D dy_t + sum_n g_t dt_t B_t,
      ddt_t = sum_n g_t (h_{t-1} a_t A + B_t x_t),
      dA = sum_{b,t} g_t h_{t-1} a_t dt_t,   dB_t = sum_d g_t dt_t x_t,
    and ddelta = ddt * sigmoid(delta) through the softplus when set."""
    xf, af, bf, cf, df = _f64(x), _f64(A), _f64(B), _f64(C), _f64(D)
    dyf = _f64(dy)
    raw = _f64(delta)
    dt = np.logaddexp(0.0, raw) if delta_softplus else raw
    nb, s, d = xf.shape
    n = af.shape[1]
    # forward, keeping h_t and a_t
    hs = np.zeros((s + 1, nb, d, n))                 # hs[t + 1] = h_t, hs[0] = 0
    da_all = np.empty((s, nb, d, n))
    for t in range(s):
        a_t = np.exp(dt[:, t, :, None] * af)
        da_all[t] = a_t
        hs[t + 1] = a_t * hs[t] + dt[:, t, :, None] * bf[:, t, None, :] * xf[:, t, :, None]
    dx = np.empty((nb, s, d))
    ddt = np.empty((nb, s, d))
    dA = np.zeros((d, n))
    dB = np.empty((nb, s, n))
    dC = np.empty((nb, s, n))
    g = np.zeros((nb, d, n))
    for t in reversed(range(s)):
        dyt = dyf[:, t, :]                                           # [B, D]
        dC[:, t, :] = np.einsum("bd,bdn->bn", dyt, hs[t + 1])
        g = g + dyt[:, :, None] * cf[:, t, None, :]                  # now dL/dh_t
        a_t = da_all[t]
        dtt = dt[:, t, :, None]
        bt = bf[:, t, None, :]
        xt = xf[:, t, :, None]
        dx[:, t, :] = df * dyt + np.sum(g * dtt * bt, axis=-1)
        gha = g * hs[t] * a_t                                        # dL/d(dt A) at t
        ddt[:, t, :] = np.sum(gha * af + g * bt * xt, axis=-1)
        dA += np.sum(gha * dtt, axis=0)
        dB[:, t, :] = np.sum(g * dtt * xt, axis=1)
        g = g * a_t                                                  # contribution to h_{t-1}
    dD = np.sum(dyf * xf, axis=(0, 1))
    ddelta = ddt * _sigmoid64(raw) if delta_softplus else ddt
    return (_like(dx, x), _like(ddelta, delta), _like(dA, A), _like(dB, B), _like(dC, C),
            _like(dD, D))


# --------------------------------------------------------------------------
# mixture of experts
# --------------------------------------------------------------------------

def router_fixed(logits, indices, normalize: bool = False) -> np.ndarray:
    """The router weights as a smooth function of the logits for fixed indices:
    w[t, j] = p[t, indices[t, j]] (/ sum_j of them when normalize). Equal to
    ops.router(...)[0] wherever the selection is indices (float64 result)."""
    x = _f64(logits)
    p = np.exp(x - np.max(x, axis=-1, keepdims=True))
    p /= np.sum(p, axis=-1, keepdims=True)
    w = np.take_along_axis(p, np.asarray(indices).astype(np.int64), axis=-1)
    if normalize:
        w = w / np.sum(w, axis=-1, keepdims=True)
    return w


def router_vjp(dweights, logits, indices, normalize: bool = False):
    """dlogits [T, E] from dweights [T, k], the indices held fixed.
    normalize: w_j = p_j / s, s = sum of the selected p: dp_j = (dw_j - sum_i dw_i w_i) / s
    on the selected experts (0 elsewhere); otherwise dp_j = dw_j.
    softmax: dlogits = p (dp - sum_e p_e dp_e)."""
    x = _f64(logits)
    idx = np.asarray(indices).astype(np.int64)
    p = np.exp(x - np.max(x, axis=-1, keepdims=True))
    p /= np.sum(p, axis=-1, keepdims=True)
    dw = _f64(dweights)
    psel = np.take_along_axis(p, idx, axis=-1)
    if normalize:
        ssum = np.sum(psel, axis=-1, keepdims=True)
        w = psel / ssum
        dsel = (dw - np.sum(dw * w, axis=-1, keepdims=True)) / ssum
    else:
        dsel = dw
    dp = np.zeros_like(p)
    rows = np.arange(p.shape[0])[:, None]
    np.add.at(dp, (np.broadcast_to(rows, idx.shape), idx), dsel)
    dl = p * (dp - np.sum(p * dp, axis=-1, keepdims=True))
    return _like(dl, logits)


def dispatch_vjp(ddispatched, x, indices, experts: int, capacity: int, groups: int = 1):
    """dx[t] = sum over kept assignments (t, j) of ddispatched[indices[t, j], slot(t, j)]."""
    dd = _f64(ddispatched)
    idx = np.asarray(indices).astype(np.int64)
    slot = ops.assign_slots(idx, experts, capacity, groups)
    dx = np.zeros(np.shape(x))
    for t, j in zip(*np.nonzero(slot >= 0)):
        dx[t] += dd[idx[t, j], slot[t, j]]
    return _like(dx, x)


def combine_vjp(dy, expert_output, weights, indices, groups: int = 1):
    """(dexpert_output, dweights): dexpert_output[e, slot(t, j)] = weights[t, j] dy[t]
    (zero in unused slots), dweights[t, j] = dy[t] . expert_output[e, slot(t, j)]
    (zero for dropped assignments)."""
    eo, w, dyf = _f64(expert_output), _f64(weights), _f64(dy)
    idx = np.asarray(indices).astype(np.int64)
    e, c, _ = eo.shape
    slot = ops.assign_slots(idx, e, c // groups, groups)
    deo = np.zeros(eo.shape)
    dw = np.zeros(w.shape)
    for t, j in zip(*np.nonzero(slot >= 0)):
        deo[idx[t, j], slot[t, j]] += w[t, j] * dyf[t]
        dw[t, j] = np.dot(dyf[t], eo[idx[t, j], slot[t, j]])
    return _like(deo, expert_output), _like(dw, weights)


def expert_ffn_vjp(act: str, dy, x, w_up, w_down, w_gate=None):
    """(dx, dw_up, dw_down, dw_gate) through the composition
    u = X Wu [, g = X Wg], hid = act(g) u (gated) or act(u), y = hid Wd."""
    xf, wu, wd = _f64(x), _f64(w_up), _f64(w_down)
    up = np.matmul(xf, wu)
    if w_gate is not None:
        wg = _f64(w_gate)
        gate = np.matmul(xf, wg)
        hidden = ops.ACTIVATIONS[act](gate) * up
    else:
        hidden = ops.ACTIVATIONS[act](up)
    dhid, dwd = batch_matmul_vjp(dy, hidden, wd)
    if w_gate is not None:
        dgate, dup = glu_vjp(act, dhid, gate, up)
        dx1, dwg = batch_matmul_vjp(dgate, xf, wg)
    else:
        dup = _f64(dhid) * activation_grad(act, up)
        dx1, dwg = 0.0, None
    dx2, dwu = batch_matmul_vjp(dup, xf, wu)
    return _like(dx1 + dx2, x), _like(dwu, w_up), _like(dwd, w_down), _like(dwg, w_gate)
