"""The ops of test/lib/braid_ref/ops.py in jax.numpy, f32 throughout, so that
braid_ref.models (which calls its ops through a namespace) builds the same
model in JAX: same shapes, same parameter names, same semantics (causal GQA
attention with rotate-half RoPE, capacity-limited top-k MoE with the slot
order of braid_ref.ops.assign_slots, the S6 selective scan)."""

import math

import jax
import jax.numpy as jnp


def embedding(tokens, table, position_table=None):
    out = table[tokens]
    if position_table is not None:
        out = out + position_table[: tokens.shape[-1]]
    return out


def linear(x, weight, bias=None, transpose_weight=False):
    y = x @ (weight.T if transpose_weight else weight)
    return y if bias is None else y + bias


def reshape(x, shape):
    return jnp.reshape(x, tuple(int(d) for d in shape))


def add(lhs, rhs):
    return lhs + rhs


def neg(x):
    return -x


def exp(x):
    return jnp.exp(x)


def silu(x):
    return jax.nn.silu(x)


def gelu(x, approximate=False):
    return jax.nn.gelu(x, approximate=approximate)


_ACTIVATIONS = {"silu": jax.nn.silu, "gelu": lambda x: jax.nn.gelu(x, approximate=False),
                "gelu_tanh": lambda x: jax.nn.gelu(x, approximate=True),
                "sigmoid": jax.nn.sigmoid, "relu": jax.nn.relu}


def glu(act, gate, up):
    return _ACTIVATIONS[act](gate) * up


def rms_norm(x, gamma, epsilon=1e-5):
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + epsilon) * gamma


def layer_norm(x, gamma, beta, epsilon=1e-5):
    m = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - m) ** 2, axis=-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(var + epsilon) * gamma + beta


def _rope(x, theta):
    d = x.shape[-1]
    half = d // 2
    freq = float(theta) ** (-2.0 * jnp.arange(half, dtype=jnp.float32) / d)
    angle = jnp.arange(x.shape[1], dtype=jnp.float32)[:, None] * freq[None, :]
    cos, sin = jnp.cos(angle)[None, :, None, :], jnp.sin(angle)[None, :, None, :]
    lo, hi = x[..., :half], x[..., half:]
    return jnp.concatenate([lo * cos - hi * sin, hi * cos + lo * sin], axis=-1)


def attention(query, key, value, causal=False, scale=None, rope_theta=None):
    b, s, hq, d = query.shape
    hkv = key.shape[2]
    if rope_theta is not None:
        query, key = _rope(query, rope_theta), _rope(key, rope_theta)
    group = hq // hkv
    # Query heads grouped by their kv head: [B, S, Hkv, G, D].
    q = query.reshape(b, s, hkv, group, d)
    sc = 1.0 / math.sqrt(d) if scale is None else float(scale)
    scores = sc * jnp.einsum("bshgd,bthd->bhgst", q, key)
    if causal:
        future = jnp.arange(key.shape[1])[None, :] > jnp.arange(s)[:, None]
        scores = jnp.where(future, -jnp.inf, scores)
    p = jax.nn.softmax(scores, axis=-1)
    out = jnp.einsum("bhgst,bthe->bshge", p, value)
    return out.reshape(b, s, hq, value.shape[-1])


def cross_entropy(logits, labels):
    x = logits.reshape(-1, logits.shape[-1])
    lse = jax.nn.logsumexp(x, axis=-1)
    picked = jnp.take_along_axis(x, labels.reshape(-1, 1), axis=-1)[:, 0]
    return jnp.mean(lse - picked)


def conv1d(x, weight, bias=None):
    k = weight.shape[1]
    s = x.shape[1]
    xp = jnp.pad(x, ((0, 0), (k - 1, 0), (0, 0)))
    y = sum(weight[:, j] * xp[:, j:j + s, :] for j in range(k))
    return y if bias is None else y + bias


def selective_scan(x, delta, A, B, C, D, delta_softplus=False):
    dt = jax.nn.softplus(delta) if delta_softplus else delta

    def step(h, inputs):
        xt, dtt, bt, ct = inputs                    # [B, D], [B, D], [B, N], [B, N]
        h = jnp.exp(dtt[..., None] * A) * h + dtt[..., None] * bt[:, None, :] * xt[..., None]
        return h, jnp.einsum("bn,bdn->bd", ct, h)

    h0 = jnp.zeros((x.shape[0], x.shape[2], A.shape[1]), x.dtype)
    seq_first = [jnp.swapaxes(a, 0, 1) for a in (x, dt, B, C)]
    _, y = jax.lax.scan(step, h0, seq_first)
    return jnp.swapaxes(y, 0, 1) + D * x


def router(logits, top_k, normalize=False):
    p = jax.nn.softmax(logits, axis=-1)
    w, idx = jax.lax.top_k(p, top_k)  # ties to the lower index, like a stable sort
    if normalize:
        w = w / jnp.sum(w, axis=-1, keepdims=True)
    return w, idx.astype(jnp.int32)


def _slots(indices, experts, capacity, groups):
    """assign_slots: per group, assignments j-major then t take their expert's
    next slot; -1 when the expert is full."""
    t, k = indices.shape
    size = t // groups
    # [groups, k, size] in the order slots are taken.
    order = jnp.swapaxes(indices.reshape(groups, size, k), 1, 2).reshape(groups, k * size)
    onehot = jax.nn.one_hot(order, experts, dtype=jnp.int32)
    rank = jnp.sum((jnp.cumsum(onehot, axis=1) - 1) * onehot, axis=-1)   # [groups, k*size]
    slot = jnp.where(rank < capacity, rank + capacity * jnp.arange(groups)[:, None], -1)
    return jnp.swapaxes(slot.reshape(groups, k, size), 1, 2).reshape(t, k)


def dispatch(x, indices, experts, capacity, groups=1):
    slot = _slots(indices, experts, capacity, groups)
    k = indices.shape[1]
    rows = jnp.where(slot >= 0, slot, groups * capacity)  # dropped: a spare row
    out = jnp.zeros((experts, groups * capacity + 1, x.shape[1]), x.dtype)
    out = out.at[indices.reshape(-1), rows.reshape(-1)].set(jnp.repeat(x, k, axis=0))
    return out[:, :-1]


def expert_ffn(act, x, w_up, w_down, w_gate=None):
    up = jnp.matmul(x, w_up)
    hidden = _ACTIVATIONS[act](jnp.matmul(x, w_gate)) * up if w_gate is not None \
        else _ACTIVATIONS[act](up)
    return jnp.matmul(hidden, w_down)


def combine(expert_output, weights, indices, groups=1):
    e, c, h = expert_output.shape
    slot = _slots(indices, e, c // groups, groups)
    picked = expert_output[indices, jnp.maximum(slot, 0)]              # [T, k, H]
    w = jnp.where(slot >= 0, weights, 0.0)
    return jnp.einsum("tk,tkh->th", w, picked)
