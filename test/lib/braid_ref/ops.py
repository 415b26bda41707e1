"""numpy reference of the braid ops, one function per op.

Written from the op descriptions of dialects/braid/IR/BraidOps.td only; the
CPU/CUDA kernels are checked against these functions, not the other way round.

Precision: every op converts its float operands to float64, computes in
float64 and casts the result to the dtype of its first float operand (the
"input dtype"). Feeding float32 arrays thus models a runtime that stores
float32 tensors between ops (with more accurate accumulation); feeding
float64 arrays gives a float64 reference of the whole computation.
cross_entropy is the one exception, see there.

Shape, dtype, token and label errors raise ValueError.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "embedding", "linear", "batch_matmul", "rope", "attention", "rms_norm", "layer_norm",
    "softmax",
    "gelu", "silu", "sigmoid", "exp", "neg", "add", "mul", "relu", "relu_squared", "softplus",
    "activation", "glu", "reshape", "transpose", "cross_entropy", "conv1d",
    "selective_scan", "router", "assign_slots", "dispatch", "expert_ffn", "combine",
    "cache_write", "cache_attention", "take_rows", "add_positions",
    "ACTIVATIONS",
]


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------

def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise ValueError(msg)


def _float(x, what: str) -> np.ndarray:
    x = np.asarray(x)
    _check(np.issubdtype(x.dtype, np.floating), f"{what}: expected a float array, got {x.dtype}")
    return x


def _f64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def _index(x, what: str, bound: int) -> np.ndarray:
    """An integer array whose entries must lie in [0, bound)."""
    x = np.asarray(x)
    _check(np.issubdtype(x.dtype, np.integer), f"{what}: expected an integer array, got {x.dtype}")
    if x.size:
        _check(int(x.min()) >= 0 and int(x.max()) < bound,
               f"{what}: values must lie in [0, {bound}), got [{x.min()}, {x.max()}]")
    return x.astype(np.int64)


def _same(a: np.ndarray, b: np.ndarray, what: str) -> None:
    _check(a.shape == b.shape, f"{what}: shapes {a.shape} and {b.shape} differ")
    _check(a.dtype == b.dtype, f"{what}: dtypes {a.dtype} and {b.dtype} differ")


def _softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Stable softmax in float64; rows that are entirely -inf are not expected."""
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


# --------------------------------------------------------------------------
# transformer
# --------------------------------------------------------------------------

def embedding(tokens, table, position_table=None) -> np.ndarray:
    """tokens [..., S], table [V, H] (+ position_table [P, H], P >= S) -> [..., S, H]."""
    table = _float(table, "embedding table")
    _check(table.ndim == 2, f"embedding: table must be [V, H], got {table.shape}")
    tokens = np.asarray(tokens)
    _check(tokens.ndim >= 1, "embedding: tokens must have rank >= 1 ([..., S])")
    tok = _index(tokens, "embedding tokens", table.shape[0])
    out = _f64(table)[tok]
    if position_table is not None:
        pos = _float(position_table, "embedding position table")
        s = tokens.shape[-1]
        _check(pos.ndim == 2 and pos.shape[1] == table.shape[1] and pos.shape[0] >= s,
               f"embedding: position table {pos.shape} must be [P >= {s}, {table.shape[1]}]")
        out = out + _f64(pos)[:s]
    return out.astype(table.dtype)


def linear(x, weight, bias=None, transpose_weight: bool = False) -> np.ndarray:
    """x [..., K] times weight [K, N] (or [N, K] with transpose_weight), + bias [N]."""
    x = _float(x, "linear input")
    weight = _float(weight, "linear weight")
    _check(weight.ndim == 2, f"linear: weight must be 2-D, got {weight.shape}")
    w = _f64(weight).T if transpose_weight else _f64(weight)
    _check(x.ndim >= 1 and x.shape[-1] == w.shape[0],
           f"linear: input {x.shape} does not contract with weight {weight.shape}"
           f"{' (transposed)' if transpose_weight else ''}")
    y = _f64(x) @ w
    if bias is not None:
        bias = _float(bias, "linear bias")
        _check(bias.shape == (w.shape[1],), f"linear: bias {bias.shape} must be [{w.shape[1]}]")
        y = y + _f64(bias)
    return y.astype(x.dtype)


def batch_matmul(lhs, rhs, transpose_a: bool = False, transpose_b: bool = False) -> np.ndarray:
    """[..., M, K] x [..., K, N] -> [..., M, N], identical batch dims (no broadcasting)."""
    lhs, rhs = _float(lhs, "batch_matmul lhs"), _float(rhs, "batch_matmul rhs")
    _check(lhs.ndim >= 2 and lhs.ndim == rhs.ndim and lhs.shape[:-2] == rhs.shape[:-2],
           f"batch_matmul: batch dims of {lhs.shape} and {rhs.shape} differ")
    a, b = _f64(lhs), _f64(rhs)
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    if transpose_b:
        b = np.swapaxes(b, -1, -2)
    _check(a.shape[-1] == b.shape[-2],
           f"batch_matmul: contraction sizes {a.shape[-1]} and {b.shape[-2]} differ")
    return np.matmul(a, b).astype(lhs.dtype)


def _rotate(x: np.ndarray, theta: float, positions: np.ndarray) -> np.ndarray:
    """x [..., D] (float64) rotated rotate-half to positions [...] (x's leading shape,
    broadcast): with f_i = theta^(-2i/D), i < D/2, angle a = p f_i,
    x'[i] = x[i] cos a - x[i+D/2] sin a, x'[i+D/2] = x[i+D/2] cos a + x[i] sin a."""
    d = x.shape[-1]
    _check(d % 2 == 0, f"rope: head dim {d} must be even")
    half = d // 2
    freq = float(theta) ** (-2.0 * np.arange(half) / d)            # [D/2]
    angle = np.asarray(positions, dtype=np.float64)[..., None] * freq
    cos, sin = np.cos(angle), np.sin(angle)
    lo, hi = x[..., :half], x[..., half:]
    return np.concatenate([lo * cos - hi * sin, hi * cos + lo * sin], axis=-1)


def rope(x, theta: float) -> np.ndarray:
    """Rotate-half rotary embedding of x [B, S, H, D] at positions 0..S-1, in float64
    (see _rotate)."""
    x = _f64(x)
    return _rotate(x, theta, np.arange(x.shape[1])[None, :, None])


def attention(query, key, value, causal: bool = False, scale=None, rope_theta=None) -> np.ndarray:
    """query [B,S,Hq,D], key [B,Skv,Hkv,D], value [B,Skv,Hkv,Dv] -> [B,S,Hq,Dv].
    Query head h reads kv head h // (Hq/Hkv)."""
    q = _float(query, "attention query")
    k = _float(key, "attention key")
    v = _float(value, "attention value")
    _check(q.ndim == 4 and k.ndim == 4 and v.ndim == 4,
           f"attention: q, k, v must be rank 4, got {q.shape}, {k.shape}, {v.shape}")
    b, s, hq, d = q.shape
    _check(k.shape[0] == b and v.shape[0] == b, "attention: batch sizes differ")
    _check(k.shape[3] == d, f"attention: key head dim {k.shape[3]} != query head dim {d}")
    _check(k.shape[:3] == v.shape[:3], f"attention: key {k.shape} and value {v.shape} differ")
    skv, hkv = k.shape[1], k.shape[2]
    _check(hkv >= 1 and hq % hkv == 0, f"attention: {hq} query heads not a multiple of {hkv}")
    _check(not causal or s == skv, f"attention: causal needs S == Skv, got {s} and {skv}")
    qf, kf, vf = _f64(q), _f64(k), _f64(v)
    if rope_theta is not None:
        qf, kf = rope(qf, rope_theta), rope(kf, rope_theta)
    group = hq // hkv
    kv_head = np.arange(hq) // group                                 # h -> h / g
    kf, vf = kf[:, :, kv_head, :], vf[:, :, kv_head, :]              # [B, Skv, Hq, .]
    sc = 1.0 / math.sqrt(d) if scale is None else float(scale)
    scores = sc * np.einsum("bshd,bthd->bhst", qf, kf)               # [B, Hq, S, Skv]
    if causal:
        future = np.arange(skv)[None, :] > np.arange(s)[:, None]     # t > s
        scores = np.where(future, -np.inf, scores)
    p = _softmax(scores, axis=-1)
    return np.einsum("bhst,bthe->bshe", p, vf).astype(q.dtype)


def rms_norm(x, gamma, epsilon: float = 1e-5) -> np.ndarray:
    """x / sqrt(mean(x^2 over the last dim) + epsilon) * gamma."""
    x, gamma = _float(x, "rms_norm input"), _float(gamma, "rms_norm gamma")
    _check(x.ndim >= 1 and gamma.shape == x.shape[-1:],
           f"rms_norm: gamma {gamma.shape} must be [{x.shape[-1] if x.ndim else '?'}]")
    xf = _f64(x)
    ms = np.mean(xf * xf, axis=-1, keepdims=True)
    return (xf / np.sqrt(ms + epsilon) * _f64(gamma)).astype(x.dtype)


def layer_norm(x, gamma, beta, epsilon: float = 1e-5) -> np.ndarray:
    """(x - mean) / sqrt(biased var + epsilon) * gamma + beta over the last dim."""
    x = _float(x, "layer_norm input")
    gamma, beta = _float(gamma, "layer_norm gamma"), _float(beta, "layer_norm beta")
    _check(x.ndim >= 1 and gamma.shape == x.shape[-1:] and beta.shape == x.shape[-1:],
           f"layer_norm: gamma {gamma.shape} and beta {beta.shape} must be [{x.shape[-1:]}]")
    xf = _f64(x)
    m = np.mean(xf, axis=-1, keepdims=True)
    var = np.mean((xf - m) ** 2, axis=-1, keepdims=True)   # biased: divides by H
    return ((xf - m) / np.sqrt(var + epsilon) * _f64(gamma) + _f64(beta)).astype(x.dtype)


def softmax(x) -> np.ndarray:
    """exp(x - max) / sum over the last dim, in float64."""
    x = _float(x, "softmax input")
    _check(x.ndim >= 1, f"softmax: input {x.shape} has no last dimension")
    return _softmax(_f64(x), axis=-1).astype(x.dtype)


# --------------------------------------------------------------------------
# elementwise
# --------------------------------------------------------------------------

_erf = np.frompyfunc(math.erf, 1, 1)


def _gelu64(x: np.ndarray, approximate: bool) -> np.ndarray:
    if approximate:
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1.0 + np.asarray(_erf(x / math.sqrt(2.0)), dtype=np.float64))


def _sigmoid64(x: np.ndarray) -> np.ndarray:
    # 1 / (1 + exp(-x)) = exp(-log(1 + exp(-x))), without overflow for large |x|.
    return np.exp(-np.logaddexp(0.0, -x))


# activation name (Braid_Activation) -> float64 function
ACTIVATIONS = {
    "silu": lambda x: x * _sigmoid64(x),
    "gelu": lambda x: _gelu64(x, False),
    "gelu_tanh": lambda x: _gelu64(x, True),
    "sigmoid": _sigmoid64,
    "relu": lambda x: np.maximum(x, 0.0),
}


def _unary(fn, x, what: str) -> np.ndarray:
    x = _float(x, what)
    return np.asarray(fn(_f64(x))).astype(x.dtype)


def activation(name: str, x) -> np.ndarray:
    _check(name in ACTIVATIONS, f"unknown activation {name!r}; known: {', '.join(ACTIVATIONS)}")
    return _unary(ACTIVATIONS[name], x, name)


def gelu(x, approximate: bool = False) -> np.ndarray:
    """x Phi(x) (erf form), or GPT-2's tanh approximation with approximate=True."""
    return _unary(lambda v: _gelu64(v, approximate), x, "gelu")


def silu(x) -> np.ndarray:
    return activation("silu", x)


def sigmoid(x) -> np.ndarray:
    return activation("sigmoid", x)


def relu(x) -> np.ndarray:
    return activation("relu", x)


def relu_squared(x) -> np.ndarray:
    """max(x, 0)^2 (Primer, Nemotron-4)."""
    return _unary(lambda v: np.maximum(v, 0.0) ** 2, x, "relu_squared")


def softplus(x) -> np.ndarray:
    """log(1 + exp(x)), stable (used by selective_scan's delta_softplus)."""
    return _unary(lambda v: np.logaddexp(0.0, v), x, "softplus")


def exp(x) -> np.ndarray:
    return _unary(np.exp, x, "exp")


def neg(x) -> np.ndarray:
    return _unary(np.negative, x, "neg")


def add(lhs, rhs) -> np.ndarray:
    lhs, rhs = _float(lhs, "add lhs"), _float(rhs, "add rhs")
    _same(lhs, rhs, "add")
    return (_f64(lhs) + _f64(rhs)).astype(lhs.dtype)


def mul(lhs, rhs) -> np.ndarray:
    lhs, rhs = _float(lhs, "mul lhs"), _float(rhs, "mul rhs")
    _same(lhs, rhs, "mul")
    return (_f64(lhs) * _f64(rhs)).astype(lhs.dtype)


def glu(act: str, gate, up) -> np.ndarray:
    """act(gate) * up, elementwise (SwiGLU with "silu"; Mamba's y * silu(z))."""
    gate, up = _float(gate, "glu gate"), _float(up, "glu up")
    _same(gate, up, "glu")
    _check(act in ACTIVATIONS, f"glu: unknown activation {act!r}")
    return (ACTIVATIONS[act](_f64(gate)) * _f64(up)).astype(gate.dtype)


# --------------------------------------------------------------------------
# layout
# --------------------------------------------------------------------------

def reshape(x, shape) -> np.ndarray:
    """Row-major reinterpretation with an equal element count (no -1 wildcard)."""
    x = np.asarray(x)
    shape = tuple(int(d) for d in shape)
    _check(all(d >= 1 for d in shape), f"reshape: bad shape {shape}")
    _check(math.prod(shape) == x.size, f"reshape: {x.shape} and {shape} sizes differ")
    return np.reshape(x, shape, order="C").copy()


def transpose(x, permutation) -> np.ndarray:
    """result.shape[i] = x.shape[perm[i]], result[i_0..i_n] = x[j], j[perm[k]] = i_k."""
    x = np.asarray(x)
    perm = tuple(int(p) for p in permutation)
    _check(sorted(perm) == list(range(x.ndim)),
           f"transpose: {perm} is not a permutation of rank {x.ndim}")
    return np.transpose(x, perm).copy()


# --------------------------------------------------------------------------
# loss
# --------------------------------------------------------------------------

def cross_entropy(logits, labels) -> np.ndarray:
    """Mean over label elements of logsumexp(logits[i]) - logits[i, labels[i]].

    A 0-d array: float32 per the op (whatever the logits' dtype), except for
    float64 logits, which give a float64 result (the float64 reference mode)."""
    logits = _float(logits, "cross_entropy logits")
    labels = np.asarray(labels)
    _check(logits.ndim >= 1 and labels.shape == logits.shape[:-1],
           f"cross_entropy: labels {labels.shape} must be logits' leading dims "
           f"{logits.shape[:-1]}")
    lab = _index(labels, "cross_entropy labels", logits.shape[-1])
    _check(lab.size > 0, "cross_entropy: no labels")
    x = _f64(logits).reshape(-1, logits.shape[-1])
    lab = lab.reshape(-1)
    m = np.max(x, axis=-1)
    lse = m + np.log(np.sum(np.exp(x - m[:, None]), axis=-1))
    loss = np.mean(lse - x[np.arange(x.shape[0]), lab])
    return np.asarray(loss, dtype=np.float64 if logits.dtype == np.float64 else np.float32)


# --------------------------------------------------------------------------
# Mamba
# --------------------------------------------------------------------------

def conv1d(x, weight, bias=None) -> np.ndarray:
    """Causal depthwise convolution: x [B,S,C], weight [C,K], bias [C];
    result[b,t,c] = bias[c] + sum_{j<K} weight[c,j] x[b, t-(K-1)+j, c], x<0 := 0."""
    x, weight = _float(x, "conv1d input"), _float(weight, "conv1d weight")
    _check(x.ndim == 3, f"conv1d: input must be [B, S, C], got {x.shape}")
    _check(weight.ndim == 2 and weight.shape[0] == x.shape[2],
           f"conv1d: weight {weight.shape} must be [{x.shape[2]}, K]")
    _, s, c = x.shape
    k = weight.shape[1]
    xp = np.concatenate([np.zeros((x.shape[0], k - 1, c)), _f64(x)], axis=1)  # left pad K-1
    w = _f64(weight)
    y = np.zeros(x.shape)
    for j in range(k):
        y += w[:, j] * xp[:, j:j + s, :]
    if bias is not None:
        bias = _float(bias, "conv1d bias")
        _check(bias.shape == (c,), f"conv1d: bias {bias.shape} must be [{c}]")
        y += _f64(bias)
    return y.astype(x.dtype)


def selective_scan(x, delta, A, B, C, D, delta_softplus: bool = False) -> np.ndarray:
    """The S6 recurrence. x, delta [B,S,D]; A [D,N]; B, C [B,S,N]; D [D].
    h = exp(dt A) h + dt B x;  y = C . h + D x  (h starts at 0)."""
    x = _float(x, "selective_scan input")
    delta, A = _float(delta, "selective_scan delta"), _float(A, "selective_scan A")
    B, C, D = _float(B, "selective_scan B"), _float(C, "selective_scan C"), \
        _float(D, "selective_scan D")
    _check(x.ndim == 3, f"selective_scan: input must be [B, S, D], got {x.shape}")
    nb, s, d = x.shape
    _check(delta.shape == x.shape, f"selective_scan: delta {delta.shape} != input {x.shape}")
    _check(A.ndim == 2 and A.shape[0] == d, f"selective_scan: A {A.shape} must be [{d}, N]")
    n = A.shape[1]
    _check(B.shape == (nb, s, n) and C.shape == (nb, s, n),
           f"selective_scan: B {B.shape} and C {C.shape} must be [{nb}, {s}, {n}]")
    _check(D.shape == (d,), f"selective_scan: D {D.shape} must be [{d}]")
    xf, af, bf, cf, df = _f64(x), _f64(A), _f64(B), _f64(C), _f64(D)
    dt = np.logaddexp(0.0, _f64(delta)) if delta_softplus else _f64(delta)
    h = np.zeros((nb, d, n))
    y = np.empty((nb, s, d))
    for t in range(s):
        dtt = dt[:, t, :, None]                                     # [B, D, 1]
        h = np.exp(dtt * af) * h + dtt * bf[:, t, None, :] * xf[:, t, :, None]
        y[:, t, :] = np.einsum("bn,bdn->bd", cf[:, t, :], h) + df * xf[:, t, :]
    return y.astype(x.dtype)


# --------------------------------------------------------------------------
# mixture of experts
# --------------------------------------------------------------------------

def router(logits, top_k: int, normalize: bool = False):
    """logits [T, E] -> (weights [T, k] in the logits' dtype, indices [T, k] int32).

    p = softmax over E; per token the k largest p in decreasing order, ties to
    the lower expert index (a stable sort of -p keeps index order among equal
    p); weights renormalized to sum to 1 over the k when `normalize`."""
    logits = _float(logits, "router logits")
    _check(logits.ndim == 2, f"router: logits must be [T, E], got {logits.shape}")
    e = logits.shape[1]
    _check(isinstance(top_k, (int, np.integer)) and 1 <= top_k <= e,
           f"router: top_k {top_k} must be in [1, {e}]")
    p = _softmax(_f64(logits), axis=-1)
    order = np.argsort(-p, axis=-1, kind="stable")[:, :top_k]
    w = np.take_along_axis(p, order, axis=-1)
    if normalize:
        w = w / np.sum(w, axis=-1, keepdims=True)
    return w.astype(logits.dtype), order.astype(np.int32)


def assign_slots(indices, experts: int, capacity: int, groups: int = 1) -> np.ndarray:
    """The row of each assignment (t, j) of indices [T, k] in its expert's
    buffer, or -1 when dropped.

    The T tokens form `groups` consecutive groups of T / groups; each group
    has `capacity` slots per expert, group g owning rows [g C, (g + 1) C).
    Within a group, assignments are taken j-major, then t; each gets the next
    free slot of its expert in the group, and once an expert holds `capacity`
    assignments of the group further ones are dropped. Shared by dispatch and
    combine."""
    _check(experts >= 1 and capacity >= 1, f"bad experts {experts} / capacity {capacity}")
    idx = np.asarray(indices)
    _check(idx.ndim == 2, f"indices must be [T, k], got {idx.shape}")
    idx = _index(idx, "expert indices", experts)
    t_count, k = idx.shape
    _check(groups >= 1 and t_count % groups == 0, f"{t_count} tokens in {groups} groups")
    size = t_count // groups
    slot = np.full((t_count, k), -1, dtype=np.int64)
    for g in range(groups):
        used = [0] * experts
        for j in range(k):                                # every token's j-th choice ...
            for t in range(g * size, (g + 1) * size):     # ... in token order, before any (j+1)-th
                e = idx[t, j]
                if used[e] < capacity:
                    slot[t, j] = g * capacity + used[e]
                    used[e] += 1
    return slot


def dispatch(x, indices, experts: int, capacity: int, groups: int = 1) -> np.ndarray:
    """x [T, H], indices [T, k] -> [E, groups * C, H]; empty slots are 0."""
    x = _float(x, "dispatch input")
    _check(x.ndim == 2, f"dispatch: input must be [T, H], got {x.shape}")
    idx = np.asarray(indices)
    _check(idx.ndim == 2 and idx.shape[0] == x.shape[0],
           f"dispatch: indices {idx.shape} must be [{x.shape[0]}, k]")
    slot = assign_slots(idx, experts, capacity, groups)
    out = np.zeros((experts, groups * capacity, x.shape[1]), dtype=x.dtype)
    for t, j in zip(*np.nonzero(slot >= 0)):
        out[idx[t, j], slot[t, j]] = x[t]
    return out


def expert_ffn(act: str, x, w_up, w_down, w_gate=None) -> np.ndarray:
    """x [E, C, H], w_up [E, H, F], w_down [E, F, H], w_gate [E, H, F]:
    per expert (act(X Wg) * (X Wu)) Wd when gated, else act(X Wu) Wd."""
    x = _float(x, "expert_ffn input")
    w_up, w_down = _float(w_up, "expert_ffn w_up"), _float(w_down, "expert_ffn w_down")
    _check(act in ACTIVATIONS, f"expert_ffn: unknown activation {act!r}")
    _check(x.ndim == 3, f"expert_ffn: input must be [E, C, H], got {x.shape}")
    e, _, h = x.shape
    _check(w_up.ndim == 3 and w_up.shape[:2] == (e, h),
           f"expert_ffn: w_up {w_up.shape} must be [{e}, {h}, F]")
    f = w_up.shape[2]
    _check(w_down.shape == (e, f, h), f"expert_ffn: w_down {w_down.shape} must be [{e}, {f}, {h}]")
    xf = _f64(x)
    up = np.matmul(xf, _f64(w_up))
    if w_gate is not None:
        w_gate = _float(w_gate, "expert_ffn w_gate")
        _check(w_gate.shape == w_up.shape,
               f"expert_ffn: w_gate {w_gate.shape} must be {w_up.shape}")
        hidden = ACTIVATIONS[act](np.matmul(xf, _f64(w_gate))) * up
    else:
        hidden = ACTIVATIONS[act](up)
    return np.matmul(hidden, _f64(w_down)).astype(x.dtype)


def combine(expert_output, weights, indices, groups: int = 1) -> np.ndarray:
    """expert_output [E, groups * C, H], weights and indices [T, k] -> [T, H]:
    sum over kept assignments of weights[t, j] * expert_output[e, slot(t, j)]."""
    eo = _float(expert_output, "combine expert_output")
    w = _float(weights, "combine weights")
    idx = np.asarray(indices)
    _check(eo.ndim == 3, f"combine: expert_output must be [E, C, H], got {eo.shape}")
    _check(w.ndim == 2 and idx.shape == w.shape,
           f"combine: weights {w.shape} and indices {idx.shape} must be one [T, k] shape")
    e, c, h = eo.shape
    _check(c % groups == 0, f"combine: {c} slots in {groups} groups")
    slot = assign_slots(idx, e, c // groups, groups)
    out = np.zeros((w.shape[0], h))
    eo64, w64 = _f64(eo), _f64(w)
    for t, j in zip(*np.nonzero(slot >= 0)):
        out[t] += w64[t, j] * eo64[idx[t, j], slot[t, j]]
    return out.astype(eo.dtype)


# --------------------------------------------------------------------------
# KV cache and generation (runtime/include/braid/runtime_inference.h)
# --------------------------------------------------------------------------

def _sequence_rows(positions, batch: int, seq: int, rows: int, what: str) -> np.ndarray:
    """[B, S] rows positions[b] + s, which must lie in [0, rows)."""
    pos = np.asarray(positions)
    _check(np.issubdtype(pos.dtype, np.integer) and pos.shape == (batch,),
           f"{what}: positions must be [{batch}] integers, got {pos.shape} {pos.dtype}")
    at = pos.astype(np.int64)[:, None] + np.arange(seq)[None, :]
    for b in range(batch):
        _check(seq == 0 or (at[b, 0] >= 0 and at[b, -1] < rows),
               f"{what}: sequence {b} at positions {at[b, 0]}..{at[b, -1]} is outside "
               f"[0, {rows})")
    return at


def _rotated(x: np.ndarray, rope_theta, positions: np.ndarray) -> np.ndarray:
    """x [B, S, H, D] (float64) rotated to positions [B, S]; rope_theta None or <= 0: x."""
    if rope_theta is None or rope_theta <= 0:
        return x
    return _rotate(x, rope_theta, positions[:, :, None])


def cache_write(cache, rows, positions, rope_theta=None) -> np.ndarray:
    """cache [B, C, H, D], rows [B, S, H, D], positions [B] -> the cache with
    cache[b, p] = rows[b, s] rotated to p, p = positions[b] + s (keys are cached after
    RoPE; rope_theta None or <= 0: copied)."""
    cache = _float(cache, "cache_write cache")
    rows = _float(rows, "cache_write rows")
    _check(cache.ndim == 4 and rows.ndim == 4 and rows.shape[0] == cache.shape[0]
           and rows.shape[2:] == cache.shape[2:],
           f"cache_write: rows {rows.shape} do not fit the cache {cache.shape}")
    b, s = rows.shape[:2]
    at = _sequence_rows(positions, b, s, cache.shape[1], "cache_write")
    out = _f64(cache).copy()
    out[np.arange(b)[:, None], at] = _rotated(_f64(rows), rope_theta, at)
    return out.astype(cache.dtype)


def cache_attention(q, k_cache, v_cache, positions, scale=None, rope_theta=None) -> np.ndarray:
    """q [B, S, Hq, D] over k_cache [B, C, Hkv, D] (keys already rotated) and v_cache
    [B, C, Hkv, Dv] -> [B, S, Hq, Dv]: query s of sequence b sits at p = positions[b] + s,
    is rotated to p and attends to the cache rows t <= p; query head h reads kv head
    h // (Hq/Hkv)."""
    q = _float(q, "cache_attention query")
    k = _float(k_cache, "cache_attention k_cache")
    v = _float(v_cache, "cache_attention v_cache")
    _check(q.ndim == 4 and k.ndim == 4 and v.ndim == 4 and k.shape[:3] == v.shape[:3]
           and k.shape[0] == q.shape[0] and k.shape[3] == q.shape[3],
           f"cache_attention: q {q.shape}, k_cache {k.shape}, v_cache {v.shape} do not fit")
    b, s, hq, d = q.shape
    c, hkv = k.shape[1], k.shape[2]
    _check(hkv >= 1 and hq % hkv == 0, f"cache_attention: {hq} query heads not a multiple "
           f"of {hkv}")
    at = _sequence_rows(positions, b, s, c, "cache_attention")
    qf = _rotated(_f64(q), rope_theta, at)
    kv_head = np.arange(hq) // (hq // hkv)
    kf, vf = _f64(k)[:, :, kv_head], _f64(v)[:, :, kv_head]        # [B, C, Hq, .]
    sc = 1.0 / math.sqrt(d) if scale is None else float(scale)
    scores = sc * np.einsum("bshd,bthd->bhst", qf, kf)               # [B, Hq, S, C]
    later = np.arange(c)[None, None, None, :] > at[:, None, :, None]  # t > p
    p = _softmax(np.where(later, -np.inf, scores), axis=-1)
    return np.einsum("bhst,bthe->bshe", p, vf).astype(q.dtype)


def take_rows(x, index) -> np.ndarray:
    """x [B, S, H], index [B] in [0, S) -> [B, H]: out[b] = x[b, index[b]]."""
    x = _float(x, "take_rows input")
    _check(x.ndim == 3, f"take_rows: input must be [B, S, H], got {x.shape}")
    idx = _index(index, "take_rows index", x.shape[1])
    _check(idx.shape == (x.shape[0],), f"take_rows: index {idx.shape} must be [{x.shape[0]}]")
    return x[np.arange(x.shape[0]), idx].copy()


def add_positions(x, table, positions) -> np.ndarray:
    """x [B, S, H] + table [P, H] at each sequence's own offset:
    out[b, s] = x[b, s] + table[positions[b] + s]."""
    x = _float(x, "add_positions input")
    table = _float(table, "add_positions table")
    _check(x.ndim == 3 and table.ndim == 2 and table.shape[1] == x.shape[2],
           f"add_positions: input {x.shape} and table {table.shape} do not fit")
    at = _sequence_rows(positions, x.shape[0], x.shape[1], table.shape[0], "add_positions")
    return (_f64(x) + _f64(table)[at]).astype(x.dtype)


# --------------------------------------------------------------------------
# Mamba state of inference (braid.conv_step, braid.scan_step)
# --------------------------------------------------------------------------

def _last_rows(last_rows, batch: int, seq: int, what: str) -> np.ndarray:
    """Each sequence's last real row in [0, seq); None: seq - 1 for all."""
    if last_rows is None:
        return np.full(batch, seq - 1, np.int64)
    last = _index(last_rows, f"{what} last_rows", seq)
    _check(last.shape == (batch,), f"{what}: last_rows {last.shape} must be [{batch}]")
    return last


def conv_step(state, x, weight, bias, positions, last_rows=None):
    """state [B, K-1, C] (the K-1 inputs before each sequence's rows), x [B, S, C],
    weight [C, K], bias [C] or None, positions [B], last_rows [B] or None (S - 1) ->
    (y [B, S, C], new state [B, K-1, C]). xe[b] = concat(state[b], or zeros where
    positions[b] == 0, x[b]); y[b, t] = bias + sum_j weight[:, j] xe[b, t + j];
    new_state[b] = xe[b, last_rows[b] + 1 : last_rows[b] + K]."""
    state, x = _float(state, "conv_step state"), _float(x, "conv_step input")
    weight = _float(weight, "conv_step weight")
    nb, s, c = x.shape
    k = weight.shape[1]
    _check(state.shape == (nb, k - 1, c),
           f"conv_step: state {state.shape} must be [{nb}, {k - 1}, {c}]")
    pos = np.asarray(positions)
    _check(pos.shape == (nb,), f"conv_step: positions {pos.shape} must be [{nb}]")
    last = _last_rows(last_rows, nb, s, "conv_step")
    carried = np.where((pos == 0)[:, None, None], 0.0, _f64(state))
    xe = np.concatenate([carried, _f64(x)], axis=1)                  # [B, K-1+S, C]
    y = np.zeros((nb, s, c))
    w = _f64(weight)
    for j in range(k):
        y += w[:, j] * xe[:, j:j + s, :]
    if bias is not None:
        y += _f64(_float(bias, "conv_step bias"))
    new_state = np.stack([xe[b, last[b] + 1:last[b] + k] for b in range(nb)])
    return y.astype(x.dtype), new_state.astype(state.dtype)


def scan_step(state, x, delta, A, B, C, D, positions, last_rows=None,
              delta_softplus: bool = False):
    """state [B, D, N] (each sequence's h before its rows), x, delta [B, S, D], A [D, N],
    B, C [B, S, N], D [D], positions [B], last_rows [B] or None (S - 1) -> (y [B, S, D],
    new state [B, D, N]): selective_scan's recurrence from h = state[b] (0 where
    positions[b] == 0); the new state is h after row last_rows[b]."""
    state = _float(state, "scan_step state")
    x, delta, A = _float(x, "scan_step input"), _float(delta, "scan_step delta"), \
        _float(A, "scan_step A")
    B, C, D = _float(B, "scan_step B"), _float(C, "scan_step C"), _float(D, "scan_step D")
    nb, s, d = x.shape
    n = A.shape[1]
    _check(state.shape == (nb, d, n), f"scan_step: state {state.shape} must be [{nb}, {d}, {n}]")
    pos = np.asarray(positions)
    _check(pos.shape == (nb,), f"scan_step: positions {pos.shape} must be [{nb}]")
    last = _last_rows(last_rows, nb, s, "scan_step")
    xf, af, bf, cf, df = _f64(x), _f64(A), _f64(B), _f64(C), _f64(D)
    dt = np.logaddexp(0.0, _f64(delta)) if delta_softplus else _f64(delta)
    h = np.where((pos == 0)[:, None, None], 0.0, _f64(state))
    new_state = np.empty((nb, d, n))
    y = np.empty((nb, s, d))
    for t in range(s):
        dtt = dt[:, t, :, None]
        h = np.exp(dtt * af) * h + dtt * bf[:, t, None, :] * xf[:, t, :, None]
        y[:, t, :] = np.einsum("bn,bdn->bd", cf[:, t, :], h) + df * xf[:, t, :]
        for b in range(nb):
            if last[b] == t:
                new_state[b] = h[b]
    return y.astype(x.dtype), new_state.astype(state.dtype)


# --------------------------------------------------------------------------
# A prefill's Mamba steps over context-parallel chunks of the prompt
# (runtime_inference.h: braid_k_conv_step_chunk, _scan_step_chunk,
# braid_k_take_chunk_state)
# --------------------------------------------------------------------------

def _chunk_rows(last_rows, nb, s, first_row: int, prompt_len: int, name):
    """Each sequence's last row within the chunk [first_row, first_row + s) (outside
    [0, s) when it lies in another chunk); every last row must lie in the prompt."""
    last = np.asarray(last_rows)
    _check(last.shape == (nb,), f"{name}: last_rows {last.shape} must be [{nb}]")
    _check(bool(((last >= 0) & (last < prompt_len)).all()),
           f"{name}: a last row lies outside [0, {prompt_len})")
    return last - first_row


def conv_step_chunk(state, halo, x, weight, bias, positions, last_rows, first_row: int,
                    prompt_len: int):
    """conv_step of the chunk of rows [first_row, first_row + S) after halo [B, K-1, C]
    (the K-1 inputs before it; the first chunk starts from state, or zeros where
    positions[b] == 0) -> (y, chunk_state): chunk_state[b] is conv_step's new state
    where the sequence's last row falls in the chunk, zeros elsewhere."""
    nb, s, _ = np.shape(x)
    local = _chunk_rows(last_rows, nb, s, first_row, prompt_len, "conv_step_chunk")
    before = halo if first_row > 0 else np.where(
        (np.asarray(positions) == 0)[:, None, None], 0.0, _f64(state)).astype(x.dtype)
    y, new = conv_step(before, x, weight, bias, np.ones(nb, np.int32), np.clip(local, 0, s - 1))
    owned = (local >= 0) & (local < s)
    return y, np.where(owned[:, None, None], new, 0.0).astype(new.dtype)


def scan_step_chunk(state, decay_all, hend_all, x, delta, A, B, C, D, positions, last_rows,
                    first_row: int, prompt_len: int, delta_softplus: bool = False):
    """scan_step of chunk c = first_row / S from H_{c-1}: H_{-1} = state (0 where
    positions[b] == 0), H_j = decay_all[j] H_{j-1} + hend_all[j] (decay_all, hend_all
    [n B, D, N], chunk j at rows j B) -> (y, chunk_state): h after the sequence's last
    row where it falls in the chunk, zeros elsewhere."""
    nb, s, _ = np.shape(x)
    local = _chunk_rows(last_rows, nb, s, first_row, prompt_len, "scan_step_chunk")
    h = np.where((np.asarray(positions) == 0)[:, None, None], 0.0, _f64(state))
    for j in range(first_row // s):
        h = _f64(decay_all)[j * nb:(j + 1) * nb] * h + _f64(hend_all)[j * nb:(j + 1) * nb]
    y, new = scan_step(h, x, delta, A, B, C, D, np.ones(nb, np.int32), np.clip(local, 0, s - 1),
                       delta_softplus)
    owned = (local >= 0) & (local < s)
    return y, np.where(owned[:, None, None], new, 0.0)


def take_chunk_state(chunk_states, last_rows, chunk_rows: int) -> np.ndarray:
    """chunk_states [n B, ...] (chunk j at rows j B) -> [B, ...]: each sequence's from
    the chunk holding its last row, chunk_states[(last_rows[b] / chunk_rows) B + b]."""
    last = np.asarray(last_rows)
    nb = last.shape[0]
    _check(bool(((last >= 0) & (last < chunk_states.shape[0] // nb * chunk_rows)).all()),
           "take_chunk_state: a last row lies outside the chunks")
    return np.stack([chunk_states[(last[b] // chunk_rows) * nb + b] for b in range(nb)])


# --------------------------------------------------------------------------
# A KV cache split by sequence over context-parallel ranks
# (runtime_inference.h: braid_k_cache_write_chunk, _attention_chunk, _merge)
# --------------------------------------------------------------------------

def cache_write_chunk(cache, rows, positions, first_row: int, context_len: int,
                      rope_theta=None) -> np.ndarray:
    """cache [B, Cl, H, D] holds rows [first_row, first_row + Cl) of a context of
    context_len rows: cache_write of the rows whose position p = positions[b] + s falls in
    it, at p - first_row; every p must lie in [0, context_len)."""
    cache = _float(cache, "cache_write_chunk cache")
    rows = _float(rows, "cache_write_chunk rows")
    b, s = rows.shape[:2]
    cl = cache.shape[1]
    _check(0 <= first_row and first_row + cl <= context_len,
           f"cache_write_chunk: chunk [{first_row}, {first_row + cl}) outside [0, {context_len})")
    at = _sequence_rows(positions, b, s, context_len, "cache_write_chunk")
    rotated = _rotated(_f64(rows), rope_theta, at)
    out = _f64(cache).copy()
    for i in range(b):
        for j in range(s):
            t = at[i, j] - first_row
            if 0 <= t < cl:
                out[i, t] = rotated[i, j]
    return out.astype(cache.dtype)


def cache_attention_chunk(q, k_cache, v_cache, positions, first_row: int, context_len: int,
                          scale=None, rope_theta=None):
    """cache_attention over one chunk (local row t at position first_row + t, visible to a
    query at p iff first_row + t <= p) -> (out [B, S, Hq, Dv], lse [B, S, Hq]) in float64:
    the softmax-weighted visible values and the log-sum-exp of their scores (a row that
    sees none: 0 and -inf)."""
    q = _float(q, "cache_attention_chunk query")
    k = _float(k_cache, "cache_attention_chunk k_cache")
    v = _float(v_cache, "cache_attention_chunk v_cache")
    b, s, hq, d = q.shape
    cl, hkv = k.shape[1], k.shape[2]
    at = _sequence_rows(positions, b, s, context_len, "cache_attention_chunk")
    qf = _rotated(_f64(q), rope_theta, at)
    kv_head = np.arange(hq) // (hq // hkv)
    kf, vf = _f64(k)[:, :, kv_head], _f64(v)[:, :, kv_head]
    sc = 1.0 / math.sqrt(d) if scale is None else float(scale)
    scores = sc * np.einsum("bshd,bthd->bhst", qf, kf)                     # [B, Hq, S, Cl]
    hidden = (first_row + np.arange(cl))[None, None, None, :] > at[:, None, :, None]
    scores = np.where(hidden, -np.inf, scores)
    m = scores.max(axis=-1, keepdims=True)
    seen = np.isfinite(m)
    e = np.where(seen, np.exp(scores - np.where(seen, m, 0.0)), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    p = np.where(seen, e / np.where(seen, total, 1.0), 0.0)
    out = np.einsum("bhst,bthe->bshe", p, vf)
    lse = np.where(seen, m + np.log(np.where(seen, total, 1.0)), -np.inf)[..., 0]  # [B,Hq,S]
    return out, lse.transpose(0, 2, 1)


def cache_attention_merge(outs, lses, parts: int) -> np.ndarray:
    """outs [parts B, S, H, Dv], lses [parts B, S, H] (chunk j at rows j B..) -> [B, S, H, Dv]:
    per row sum_j e^(lse_j - m) out_j / sum_j e^(lse_j - m), m = max_j lse_j (zeros where
    every lse is -inf)."""
    o = _f64(outs).reshape(parts, -1, *np.shape(outs)[1:])
    l = _f64(lses).reshape(parts, -1, *np.shape(lses)[1:])
    m = l.max(axis=0)
    seen = np.isfinite(m)
    w = np.where(seen, np.exp(l - np.where(seen, m, 0.0)), 0.0)
    total = w.sum(axis=0)
    merged = (w[..., None] * o).sum(axis=0) / np.where(seen, total, 1.0)[..., None]
    return np.where(seen[..., None], merged, 0.0)
