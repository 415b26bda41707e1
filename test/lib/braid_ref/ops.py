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
