"""The ops of test/lib/braid_ref/ops.py in PyTorch (eager, CPU, f32), the
twin of jax_ops.py: braid_ref.models calls its ops through a namespace, so it
builds the same model in PyTorch (same shapes, parameter names and
semantics: causal GQA attention with rotate-half RoPE, capacity-limited
top-k MoE in the slot order of braid_ref.ops.assign_slots, the S6 selective
scan as a loop over the sequence, as Mamba's reference implementation runs
it without its CUDA kernel)."""

import math

import torch
import torch.nn.functional as F


def _long(a):
    return torch.as_tensor(a, dtype=torch.long) if not torch.is_tensor(a) else a.long()


def embedding(tokens, table, position_table=None):
    tokens = _long(tokens)
    out = table[tokens]
    if position_table is not None:
        out = out + position_table[: tokens.shape[-1]]
    return out


def linear(x, weight, bias=None, transpose_weight=False):
    y = x @ (weight.T if transpose_weight else weight)
    return y if bias is None else y + bias


def reshape(x, shape):
    return x.reshape(tuple(int(d) for d in shape))


def add(lhs, rhs):
    return lhs + rhs


def neg(x):
    return -x


def exp(x):
    return torch.exp(x)


def silu(x):
    return F.silu(x)


def gelu(x, approximate=False):
    return F.gelu(x, approximate="tanh" if approximate else "none")


_ACTIVATIONS = {"silu": F.silu, "gelu": lambda x: F.gelu(x),
                "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
                "sigmoid": torch.sigmoid, "relu": F.relu}


def glu(act, gate, up):
    return _ACTIVATIONS[act](gate) * up


def rms_norm(x, gamma, epsilon=1e-5):
    return x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + epsilon) * gamma


def layer_norm(x, gamma, beta, epsilon=1e-5):
    m = torch.mean(x, dim=-1, keepdim=True)
    var = torch.mean((x - m) ** 2, dim=-1, keepdim=True)
    return (x - m) * torch.rsqrt(var + epsilon) * gamma + beta


def _rope(x, theta):
    d = x.shape[-1]
    half = d // 2
    freq = float(theta) ** (-2.0 * torch.arange(half, dtype=torch.float32) / d)
    angle = torch.arange(x.shape[1], dtype=torch.float32)[:, None] * freq[None, :]
    cos, sin = torch.cos(angle)[None, :, None, :], torch.sin(angle)[None, :, None, :]
    lo, hi = x[..., :half], x[..., half:]
    return torch.cat([lo * cos - hi * sin, hi * cos + lo * sin], dim=-1)


def attention(query, key, value, causal=False, scale=None, rope_theta=None):
    b, s, hq, d = query.shape
    hkv = key.shape[2]
    if rope_theta is not None:
        query, key = _rope(query, rope_theta), _rope(key, rope_theta)
    group = hq // hkv
    q = query.reshape(b, s, hkv, group, d)
    sc = 1.0 / math.sqrt(d) if scale is None else float(scale)
    scores = sc * torch.einsum("bshgd,bthd->bhgst", q, key)
    if causal:
        future = torch.arange(key.shape[1])[None, :] > torch.arange(s)[:, None]
        scores = scores.masked_fill(future, float("-inf"))
    p = torch.softmax(scores, dim=-1)
    out = torch.einsum("bhgst,bthe->bshge", p, value)
    return out.reshape(b, s, hq, value.shape[-1])


def cross_entropy(logits, labels):
    x = logits.reshape(-1, logits.shape[-1])
    lse = torch.logsumexp(x, dim=-1)
    picked = torch.gather(x, 1, _long(labels).reshape(-1, 1))[:, 0]
    return torch.mean(lse - picked)


def conv1d(x, weight, bias=None):
    k = weight.shape[1]
    s = x.shape[1]
    xp = F.pad(x, (0, 0, k - 1, 0))
    y = sum(weight[:, j] * xp[:, j:j + s, :] for j in range(k))
    return y if bias is None else y + bias


def selective_scan(x, delta, A, B, C, D, delta_softplus=False):
    dt = F.softplus(delta) if delta_softplus else delta
    h = torch.zeros((x.shape[0], x.shape[2], A.shape[1]), dtype=x.dtype)
    ys = []
    for t in range(x.shape[1]):
        dtt = dt[:, t, :, None]
        h = torch.exp(dtt * A) * h + dtt * B[:, t, None, :] * x[:, t, :, None]
        ys.append(torch.einsum("bn,bdn->bd", C[:, t], h))
    return torch.stack(ys, dim=1) + D * x


def router(logits, top_k, normalize=False):
    p = torch.softmax(logits, dim=-1)
    w, idx = torch.topk(p, top_k, dim=-1)
    if normalize:
        w = w / torch.sum(w, dim=-1, keepdim=True)
    return w, idx


def _slots(indices, experts, capacity, groups):
    """assign_slots: per group, assignments j-major then t take their expert's
    next slot; -1 when the expert is full."""
    t, k = indices.shape
    size = t // groups
    order = indices.reshape(groups, size, k).transpose(1, 2).reshape(groups, k * size)
    onehot = F.one_hot(order, experts)
    rank = torch.sum((torch.cumsum(onehot, dim=1) - 1) * onehot, dim=-1)
    slot = torch.where(rank < capacity, rank + capacity * torch.arange(groups)[:, None],
                       torch.full_like(rank, -1))
    return slot.reshape(groups, k, size).transpose(1, 2).reshape(t, k)


def dispatch(x, indices, experts, capacity, groups=1):
    slot = _slots(indices, experts, capacity, groups)
    k = indices.shape[1]
    rows = torch.where(slot >= 0, slot, torch.full_like(slot, groups * capacity))
    out = torch.zeros((experts, groups * capacity + 1, x.shape[1]), dtype=x.dtype)
    out = out.index_put((indices.reshape(-1), rows.reshape(-1)),
                        torch.repeat_interleave(x, k, dim=0))
    return out[:, :-1]


def expert_ffn(act, x, w_up, w_down, w_gate=None):
    up = torch.matmul(x, w_up)
    hidden = _ACTIVATIONS[act](torch.matmul(x, w_gate)) * up if w_gate is not None \
        else _ACTIVATIONS[act](up)
    return torch.matmul(hidden, w_down)


def combine(expert_output, weights, indices, groups=1):
    e, c, h = expert_output.shape
    slot = _slots(indices, e, c // groups, groups)
    picked = expert_output[indices, torch.clamp(slot, min=0)]
    w = torch.where(slot >= 0, weights, torch.zeros_like(weights))
    return torch.einsum("tk,tkh->th", w, picked)
