"""References of the inference ops (runtime/include/braid/runtime_inference.h):
the KV cache (cache_write, cache_attention, take_rows, add_positions), the
Mamba state steps (conv_step, scan_step), their context-parallel chunk forms,
and braid.sample.

braid.sample's is written from the op's description in
dialects/braid/IR/BraidSampleOps.td (not from the kernels): each row orders its
whole vocabulary, as sampleToken does. Weights are Python integers (exact sums)
and exp is math.exp (the C library's, as the kernels' double exp).
"""

from __future__ import annotations

import math

import numpy as np

from . import rng
from .ops import _check, _f64, _float, _index, _rotate, _softmax

WEIGHT_BITS = 40


def uniform(stream: int, step: int) -> float:
    """The draw's uniform of (stream, step): rng's key of (stream, "sample"),
    Philox at counter `step`, the 53 high bits of its first two words."""
    k0, k1 = rng.key_of(int(stream), "sample")
    x = rng.philox4x32_10(step & 0xFFFFFFFF, step >> 32, 0, 0, k0, k1)
    word = (int(x[0]) << 32) | int(x[1])
    return (word >> 11) * 2.0 ** -53


def weight(logit: float, top: float, temperature: float) -> int:
    p = math.exp((float(logit) - float(top)) / temperature)
    return int(math.ldexp(min(p, 1.0), WEIGHT_BITS))


def sample_row(row, vocab: int, temperature: float, top_k: int, top_p: float,
               stream: int, step: int) -> int:
    """One row's token (BraidSampleOps.td's semantics)."""
    row = [float(x) for x in np.asarray(row, dtype=np.float32)[:vocab]]
    if temperature <= 0 or vocab <= 1:
        best = 0
        for i, x in enumerate(row):
            if x > row[best]:
                best = i
        return best
    top = max(row)
    w = [weight(x, top, temperature) for x in row]
    order = sorted(range(vocab), key=lambda i: (-w[i], i))
    kept = order[:top_k] if 0 < top_k < vocab else order
    total = sum(w[i] for i in kept)
    if top_p < 1:
        need = math.ceil(top_p * float(total))
        mass = 0
        for j, i in enumerate(kept):
            mass += w[i]
            if mass >= need:
                kept, total = kept[:j + 1], mass
                break
    target = min(int(uniform(stream, step) * float(total)), total - 1)
    mass = 0
    for i in sorted(kept):
        mass += w[i]
        if target < mass:
            return i
    raise AssertionError("the kept mass exceeds the target")


def sample(logits, seeds, steps, temperature, top_k, top_p, vocab: int) -> np.ndarray:
    """braid.sample: ids [B] (i32) of logits [B, V] (float, read as f32) with
    per-row seeds, steps (i64), temperature, top_p (f32, read as double) and
    top_k (i32); columns at or past `vocab` are never drawn."""
    logits = np.asarray(logits, dtype=np.float32)
    t32 = np.asarray(temperature, dtype=np.float32)
    p32 = np.asarray(top_p, dtype=np.float32)
    return np.array([sample_row(logits[b], vocab, float(t32[b]), int(top_k[b]), float(p32[b]),
                                int(seeds[b]), int(steps[b]))
                     for b in range(logits.shape[0])], dtype=np.int32)


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
    """x [B, S, H], index [B] in [0, S) or -1 -> [B, H]: out[b] = x[b, index[b]], zeros
    for -1 (an idle sequence of a serving program)."""
    x = _float(x, "take_rows input")
    _check(x.ndim == 3, f"take_rows: input must be [B, S, H], got {x.shape}")
    raw = np.asarray(index)
    idle = raw == -1
    idx = _index(np.where(idle, 0, raw), "take_rows index", x.shape[1])
    _check(idx.shape == (x.shape[0],), f"take_rows: index {idx.shape} must be [{x.shape[0]}]")
    out = x[np.arange(x.shape[0]), idx].copy()
    out[idle] = 0
    return out


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
# A paged KV cache (braid.paged_cache_write, braid.paged_cache_attention)
# --------------------------------------------------------------------------

def _paged_positions(positions, pages, last_rows, batch: int, seq: int, n_pages: int,
                     page_size: int, what: str):
    """Per sequence b: (its real rows' positions, range(first, last + 1), or None when
    idle), checking last_rows[b] in [-1, seq) and the positions in the page table's
    reach. Pages are checked by the callers (a write checks those it writes, an
    attention those it reads)."""
    pos, table, last = (np.asarray(a) for a in (positions, pages, last_rows))
    _check(pos.shape == (batch,) and last.shape == (batch,) and table.ndim == 2
           and table.shape[0] == batch,
           f"{what}: positions {pos.shape}, last_rows {last.shape} must be [{batch}], "
           f"pages {table.shape} [{batch}, T]")
    reach = table.shape[1] * page_size
    spans = []
    for b in range(batch):
        _check(-1 <= last[b] < seq,
               f"{what}: sequence {b} has last row {last[b]}, outside [-1, {seq})")
        if last[b] == -1:
            spans.append(None)
            continue
        first, end = int(pos[b]), int(pos[b]) + int(last[b])
        _check(first >= 0 and end < reach, f"{what}: sequence {b} has positions "
               f"{first}..{end}, outside its page table's [0, {reach})")
        spans.append(range(first, end + 1))
    return spans


def _page_of(pages, b: int, t: int, page_size: int, n_pages: int, what: str) -> int:
    page = int(np.asarray(pages)[b, t // page_size])
    _check(0 <= page < n_pages, f"{what}: sequence {b} position {t} in page {page}, "
           f"outside the pool's [0, {n_pages})")
    return page


def paged_cache_write(pool, rows, positions, pages, last_rows, rope_theta=None) -> np.ndarray:
    """pool [N, P, H, D], rows [B, S, H, D] -> the pool with, for s <= last_rows[b] and
    p = positions[b] + s, pool[pages[b, p // P], p % P] = rows[b, s] rotated to p
    (last_rows[b] == -1: nothing of sequence b; rows after last_rows[b]: never)."""
    pool = _float(pool, "paged_cache_write pool")
    rows = _float(rows, "paged_cache_write rows")
    _check(pool.ndim == 4 and rows.ndim == 4 and rows.shape[2:] == pool.shape[2:],
           f"paged_cache_write: rows {rows.shape} do not fit the pool {pool.shape}")
    n, size = pool.shape[:2]
    b_, s_ = rows.shape[:2]
    out = _f64(pool).copy()
    spans = _paged_positions(positions, pages, last_rows, b_, s_, n, size, "paged_cache_write")
    for b, span in enumerate(spans):
        for s, p in enumerate(span or ()):
            page = _page_of(pages, b, p, size, n, "paged_cache_write")
            row = _rotated(_f64(rows)[b:b + 1, s:s + 1], rope_theta, np.array([[p]]))
            out[page, p % size] = row[0, 0]
    return out.astype(pool.dtype)


def paged_cache_attention(q, k_pool, v_pool, positions, pages, last_rows, scale=None,
                          rope_theta=None) -> np.ndarray:
    """cache_attention of each sequence's real query rows (s <= last_rows[b]) over the
    key and value rows of its positions t <= p, read from the pools [N, P, Hkv, .] at
    [pages[b, t // P], t % P]; zeros at padding rows and idle sequences."""
    q = _float(q, "paged_cache_attention query")
    k = _f64(_float(k_pool, "paged_cache_attention k_pool"))
    v = _f64(_float(v_pool, "paged_cache_attention v_pool"))
    _check(q.ndim == 4 and k.ndim == 4 and v.ndim == 4 and k.shape[:3] == v.shape[:3],
           f"paged_cache_attention: q {q.shape}, pools {k.shape} {v.shape} do not fit")
    b_, s_ = q.shape[:2]
    n, size = k.shape[:2]
    out = np.zeros(q.shape[:3] + (v.shape[3],))
    spans = _paged_positions(positions, pages, last_rows, b_, s_, n, size,
                             "paged_cache_attention")
    for b, span in enumerate(spans):
        if span is None:
            continue
        keys = range(span[-1] + 1)
        at = [(_page_of(pages, b, t, size, n, "paged_cache_attention"), t % size) for t in keys]
        kc = np.stack([k[page, row] for page, row in at])[None]
        vc = np.stack([v[page, row] for page, row in at])[None]
        out[b, :len(span)] = cache_attention(_f64(q)[b:b + 1, :len(span)], kc, vc,
                                             np.array([span[0]]), scale, rope_theta)[0]
    return out.astype(q.dtype)


# --------------------------------------------------------------------------
# Mamba state of inference (braid.conv_step, braid.scan_step)
# --------------------------------------------------------------------------

def _last_rows(last_rows, batch: int, seq: int, what: str, idle: bool = False) -> np.ndarray:
    """Each sequence's last real row in [0, seq), or -1 (idle) where `idle` allows it;
    None: seq - 1 for all."""
    if last_rows is None:
        return np.full(batch, seq - 1, np.int64)
    if not idle:
        last = _index(last_rows, f"{what} last_rows", seq)
    else:
        last = np.asarray(last_rows)
        _check(np.issubdtype(last.dtype, np.integer),
               f"{what} last_rows: expected an integer array, got {last.dtype}")
        for b, row in enumerate(last.reshape(-1)):
            _check(-1 <= row < seq,
                   f"{what}: last row {row} of sequence {b} is outside [0, {seq}) (-1: idle)")
        last = last.astype(np.int64)
    _check(last.shape == (batch,), f"{what}: last_rows {last.shape} must be [{batch}]")
    return last


def _slots(slots, last: np.ndarray, state_slots: int, what: str) -> np.ndarray:
    """Each sequence's state slot (None: its own, b); the slots of the sequences that
    are not idle (last != -1) must lie in [0, state_slots) and be distinct."""
    batch = last.shape[0]
    if slots is None:
        _check(batch <= state_slots,
               f"{what}: a state of {state_slots} slots cannot hold {batch} sequences")
        return np.arange(batch)
    slot = np.asarray(slots)
    _check(np.issubdtype(slot.dtype, np.integer) and slot.shape == (batch,),
           f"{what}: slots must be [{batch}] integers, got {slot.shape} {slot.dtype}")
    owner = {}
    for b in range(batch):
        if last[b] == -1:
            continue
        s = int(slot[b])
        _check(0 <= s < state_slots,
               f"{what}: slot {s} of sequence {b} is outside [0, {state_slots})")
        _check(s not in owner, f"{what}: slot {s} of sequence {b} is also sequence "
               f"{owner.get(s)}'s")
        owner[s] = b
    return slot.astype(np.int64)


def conv_step(state, x, weight, bias, positions, last_rows=None, slots=None):
    """state [S', K-1, C] (the K-1 inputs before each sequence's rows, in slots),
    x [B, S, C], weight [C, K], bias [C] or None, positions [B], last_rows [B] or None
    (S - 1), slots [B] or None (sequence b in slot b; S' = B) -> (y [B, S, C], new
    state [S', K-1, C]). For each sequence b that is not idle (last_rows[b] != -1),
    with s = slots[b]: xe[b] = concat(state[s], or zeros where positions[b] == 0, x[b]);
    y[b, t] = bias + sum_j weight[:, j] xe[b, t + j]; new_state[s] =
    xe[b, last_rows[b] + 1 : last_rows[b] + K]. An idle sequence's y rows are zeros;
    the slots no sequence updates keep their values."""
    state, x = _float(state, "conv_step state"), _float(x, "conv_step input")
    weight = _float(weight, "conv_step weight")
    nb, s, c = x.shape
    k = weight.shape[1]
    _check(state.shape[1:] == (k - 1, c) and (slots is not None or state.shape[0] == nb),
           f"conv_step: state {state.shape} must be [{'S' if slots is not None else nb}, "
           f"{k - 1}, {c}]")
    pos = np.asarray(positions)
    _check(pos.shape == (nb,), f"conv_step: positions {pos.shape} must be [{nb}]")
    last = _last_rows(last_rows, nb, s, "conv_step", idle=True)
    slot = _slots(slots, last, state.shape[0], "conv_step")
    live = last != -1
    mine = np.where(live, slot, 0)                                   # idle: any slot
    carried = np.where((pos == 0)[:, None, None], 0.0, _f64(state)[mine])
    xe = np.concatenate([carried, _f64(x)], axis=1)                  # [B, K-1+S, C]
    y = np.zeros((nb, s, c))
    w = _f64(weight)
    for j in range(k):
        y += w[:, j] * xe[:, j:j + s, :]
    if bias is not None:
        y += _f64(_float(bias, "conv_step bias"))
    y[~live] = 0.0
    new_state = _f64(state).copy()
    for b in np.flatnonzero(live):
        new_state[slot[b]] = xe[b, last[b] + 1:last[b] + k]
    return y.astype(x.dtype), new_state.astype(state.dtype)


def scan_step(state, x, delta, A, B, C, D, positions, last_rows=None,
              delta_softplus: bool = False, slots=None):
    """state [S', D, N] (each sequence's h before its rows, in slots), x, delta
    [B, S, D], A [D, N], B, C [B, S, N], D [D], positions [B], last_rows [B] or None
    (S - 1), slots [B] or None (sequence b in slot b; S' = B) -> (y [B, S, D], new
    state [S', D, N]): for each sequence b that is not idle, selective_scan's
    recurrence from h = state[slots[b]] (0 where positions[b] == 0); new_state[slots[b]]
    is h after row last_rows[b]. An idle sequence's y rows are zeros; the slots no
    sequence updates keep their values."""
    state = _float(state, "scan_step state")
    x, delta, A = _float(x, "scan_step input"), _float(delta, "scan_step delta"), \
        _float(A, "scan_step A")
    B, C, D = _float(B, "scan_step B"), _float(C, "scan_step C"), _float(D, "scan_step D")
    nb, s, d = x.shape
    n = A.shape[1]
    _check(state.shape[1:] == (d, n) and (slots is not None or state.shape[0] == nb),
           f"scan_step: state {state.shape} must be [{'S' if slots is not None else nb}, "
           f"{d}, {n}]")
    pos = np.asarray(positions)
    _check(pos.shape == (nb,), f"scan_step: positions {pos.shape} must be [{nb}]")
    last = _last_rows(last_rows, nb, s, "scan_step", idle=True)
    slot = _slots(slots, last, state.shape[0], "scan_step")
    live = last != -1
    mine = np.where(live, slot, 0)
    xf, af, bf, cf, df = _f64(x), _f64(A), _f64(B), _f64(C), _f64(D)
    dt = np.logaddexp(0.0, _f64(delta)) if delta_softplus else _f64(delta)
    h = np.where((pos == 0)[:, None, None], 0.0, _f64(state)[mine])
    new_state = _f64(state).copy()
    y = np.empty((nb, s, d))
    for t in range(s):
        dtt = dt[:, t, :, None]
        h = np.exp(dtt * af) * h + dtt * bf[:, t, None, :] * xf[:, t, :, None]
        y[:, t, :] = np.einsum("bn,bdn->bd", cf[:, t, :], h) + df * xf[:, t, :]
        for b in range(nb):
            if live[b] and last[b] == t:
                new_state[slot[b]] = h[b]
    y[~live] = 0.0
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
