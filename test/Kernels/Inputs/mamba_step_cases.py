"""The Mamba state kernels of inference (runtime/include/braid/runtime_inference.h:
braid_k_conv_step, braid_k_scan_step, and their chunks over cp ranks) against braid_ref.ops_inference, on the CPU
(test/Kernels/cpu-mamba-step.py) and on the CUDA kernels under cudasim
(test/Cuda/cudasim-mamba-step.py), which differ only in where the operands live
and in the wording of the fatal errors.

Usage: mamba_step_cases.py KERNELS.so [--device] [abort CASE]
  --device    KERNELS.so holds the CUDA kernels and test/Cuda/Inputs/device_shim.cpp
              (every array operand in device memory for the call).
  abort CASE  runs one call that must stop with a fatal error (Aborts).

Bounds (rel = max|a - b| / max|b| per tensor, kernel_harness.rel):
- against the float64 reference on the same stored inputs: f32 1e-5, bf16 2^-8,
  f16 2^-10 (kernel_harness.TOL); the conv state is data movement: bit for bit;
- prefill (one call over padded prompts of different lengths) then decode (one
  call per row) against the whole-sequence kernels (braid_k_conv1d,
  braid_k_selective_scan) over each sequence alone, in f32: 1e-6 (the same f32
  operations in the same order: equal unless the compiler contracts them
  differently);
- padding after a prompt's last row never reaches the state: NaN there leaves
  the states those of the real rows, bit for bit;
- a prompt split into n chunks as cp ranks hold it (braid_k_conv_step_chunk
  after the previous chunk's halo, braid_k_scan_step_chunk from every chunk's
  zero-start decay and final state, braid_k_take_chunk_state from the chunk
  holding each last row) against one braid_k_conv_step / braid_k_scan_step
  call over the whole prompt, in f32: the convolution (rows and state) bit for
  bit, the scan 1e-6 (its carry is composed in double);
- states in slots (a permuted mapping of B sequences into S' > B slots) and idle
  sequences (last row -1): against braid_ref.ops_inference as above, and against
  the identity form on the same states gathered by slot: bit for bit; an idle
  sequence's rows are zeros (NaN inputs included) and every slot no sequence
  updates (an idle one's included) is bit-identical to what it held.
"""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lib"))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

from braid_ref import ops, ops_inference  # noqa: E402
import kernel_harness  # noqa: E402
from kernel_harness import DTYPES, F32, I, I4, LIB, P, SP, rel, store, values  # noqa: E402

DEVICE = "--device" in sys.argv
RNG = np.random.default_rng(4343)

SIGS = {
    "braid_k_conv_step": [P, I4, P, P, P, P, P, P, P, P, I, I, I, I, I],
    "braid_k_scan_step": [P, I4, P, P, P, P, P, P, P, P, P, P, P, I, SP],
    "braid_k_conv_step_chunk": [P, I4, P, P, P, P, P, P, P, P, P, I, I, I, I, I, I],
    "braid_k_scan_step_chunk": [P, I4, P, P, P, P, P, P, P, P, P, P, P, P, P, SP, I, I],
    "braid_k_take_chunk_state": [P, P, P, P, I, I, I, I],
    "braid_k_selective_scan_chunk": kernel_harness.SIGS["braid_k_selective_scan_chunk"],
    "braid_k_conv1d": kernel_harness.SIGS["braid_k_conv1d"],
    "braid_k_selective_scan": kernel_harness.SIGS["braid_k_selective_scan"],
}
SHIM = {"braid_test_device_alloc": ([I], P), "braid_test_device_free": ([P], None),
        "braid_test_upload": ([P, P, I], None), "braid_test_download": ([P, P, I], None)}
if LIB is not None:
    for name, args in SIGS.items():
        getattr(LIB, name).argtypes = args
        getattr(LIB, name).restype = None
    if DEVICE:
        for name, (args, res) in SHIM.items():
            getattr(LIB, name).argtypes = args
            getattr(LIB, name).restype = res


def call(name, *args):
    """Kernel `name` with a null runtime context; arrays by address (with --device
    through device copies, downloaded back into them after the call)."""
    if not DEVICE:
        getattr(LIB, name)(None, *(a.ctypes.data if isinstance(a, np.ndarray) else a
                                   for a in args))
        return
    dev = {}
    for a in args:
        if isinstance(a, np.ndarray) and id(a) not in dev:
            dev[id(a)] = LIB.braid_test_device_alloc(a.nbytes)
            LIB.braid_test_upload(dev[id(a)], a.ctypes.data, a.nbytes)
    getattr(LIB, name)(None, *(dev[id(a)] if isinstance(a, np.ndarray) else a for a in args))
    for a in args:
        if isinstance(a, np.ndarray) and id(a) in dev:
            p = dev.pop(id(a))
            LIB.braid_test_download(a.ctypes.data, p, a.nbytes)
            LIB.braid_test_device_free(p)


def i32(x):
    return np.ascontiguousarray(x, dtype=np.int32)


def optional_i32(x):
    return None if x is None else i32(x)


def conv_step(dt, state, x, w, bias, positions, last_rows, slots=None):
    """braid_k_conv_step: returns y; `state` (its slots) is updated in place."""
    b, s, c = x.shape
    y = kernel_harness.poisoned((b, s, c), dt)
    call("braid_k_conv_step", dt, state, x, w, bias, i32(positions), optional_i32(last_rows),
         optional_i32(slots), y, b, state.shape[0], s, c, w.shape[1])
    return y


def scan_step(dt, state, x, delta, A, Bm, Cm, D, positions, last_rows, softplus, slots=None):
    """braid_k_scan_step: returns y; `state` (f32, its slots) is updated in place."""
    b, s, d = x.shape
    y = kernel_harness.poisoned((b, s, d), dt)
    call("braid_k_scan_step", dt, state, x, delta, A, Bm, Cm, D, i32(positions),
         optional_i32(last_rows), optional_i32(slots), y, state.shape[0],
         kernel_harness.scan(b, s, d, A.shape[1], softplus))
    return y


class Case(kernel_harness.Case):
    rng = RNG

    def stored(self, shape, dt, scale=1.0):
        """(array passed to the kernels, its values as float64)."""
        s, v = store(self.randn(*shape, scale=scale), dt)
        return s.copy(), v.astype(np.float64)


# (batch, seq, positions, last_rows): prefill over padded prompts, a chunk of
# rows continuing from the states, decode.
CALLS = [
    (3, 6, [0, 0, 0], [5, 1, 3]),
    (3, 6, [0, 4, 9], None),
    (2, 1, [7, 3], None),
    (2, 5, [2, 0], [0, 4]),
]


class ConvStep(Case):
    def test_against_reference(self):
        c, k = 5, 4
        for b, s, positions, last in CALLS:
            for dt in DTYPES:
                for with_bias in (True, False):
                    what = f" b={b} s={s} pos={positions} last={last} bias={with_bias}"
                    state, state64 = self.stored((b, k - 1, c), dt)
                    x, x64 = self.stored((b, s, c), dt)
                    w, w64 = self.stored((c, k), dt)
                    bias, bias64 = self.stored((c,), dt) if with_bias else (None, None)
                    y_ref, state_ref = ops_inference.conv_step(state64, x64, w64, bias64,
                                                     i32(positions), last)
                    y = conv_step(dt, state, x, w, bias, positions, last)
                    self.close("conv_step", dt, y, y_ref, what)
                    np.testing.assert_array_equal(values(state, dt), state_ref,
                                                  f"conv_step state{what}")


class ScanStep(Case):
    def test_against_reference(self):
        d, n = 6, 4
        for b, s, positions, last in CALLS:
            for dt in DTYPES:
                for softplus in (True, False):
                    what = f" b={b} s={s} pos={positions} last={last} softplus={softplus}"
                    state = self.randn(b, d, n)
                    x, x64 = self.stored((b, s, d), dt)
                    delta, delta64 = self.stored((b, s, d), dt, scale=0.5)
                    if not softplus:
                        delta = store(np.abs(values(delta, dt)), dt)[0]
                        delta64 = values(delta, dt).astype(np.float64)
                    A, A64 = store(-np.exp(self.randn(d, n)), dt)
                    A64 = A64.astype(np.float64)
                    Bm, B64 = self.stored((b, s, n), dt)
                    Cm, C64 = self.stored((b, s, n), dt)
                    D, D64 = self.stored((d,), dt)
                    y_ref, state_ref = ops_inference.scan_step(state.astype(np.float64), x64, delta64,
                                                     A64, B64, C64, D64, i32(positions),
                                                     last, softplus)
                    y = scan_step(dt, state, x, delta, A, Bm, Cm, D, positions, last, softplus)
                    self.close("scan_step", dt, y, y_ref, what)
                    self.close("scan_step state", F32, state, state_ref, what)


class PrefillThenDecode(Case):
    """Prompts of lengths 2, 5 and 3 padded to L = 6 (NaN in the padding), then
    decode one row at a time: each sequence's rows equal the whole-sequence
    kernel's over that sequence alone, and no padding reaches a state."""

    def test_equals_whole_sequence(self):
        lengths, L, total = [2, 5, 3], 6, 9
        b, c, k, n = len(lengths), 6, 4, 4
        x = self.randn(b, total, c)
        delta = self.randn(b, total, c, scale=0.5)
        Bm, Cm = self.randn(b, total, n), self.randn(b, total, n)
        w, bias, D = self.randn(c, k), self.randn(c), self.randn(c)
        A = -np.exp(self.randn(c, n))
        conv_state = np.full((b, k - 1, c), 7.0, np.float32)   # leftovers of a wave
        ssm_state = np.full((b, c, n), 7.0, np.float32)
        prompt = np.full((b, L, c), np.nan, np.float32)
        pdelta, pB, pC = (np.full((b, L, m), np.nan, np.float32) for m in (c, n, n))
        for i, length in enumerate(lengths):
            prompt[i, :length] = x[i, :length]
            pdelta[i, :length] = delta[i, :length]
            pB[i, :length], pC[i, :length] = Bm[i, :length], Cm[i, :length]
        last = [length - 1 for length in lengths]
        conv_rows = [conv_step(F32, conv_state, prompt, w, bias, [0] * b, last)]
        scan_in = np.ascontiguousarray(np.nan_to_num(conv_rows[0], nan=0.0))
        for i, length in enumerate(lengths):
            scan_in[i, :length] = x[i, :length]
        scan_rows = [scan_step(F32, ssm_state, scan_in, pdelta, A, pB, pC, D, [0] * b, last,
                               True)]
        for t in range(total - min(lengths)):
            at = [length + t for length in lengths]
            pick = [min(p, total - 1) for p in at]
            row = np.ascontiguousarray(x[np.arange(b), pick][:, None])
            conv_rows.append(conv_step(F32, conv_state, row, w, bias, at, None))
            scan_rows.append(scan_step(
                F32, ssm_state, row, np.ascontiguousarray(delta[np.arange(b), pick][:, None]),
                A, np.ascontiguousarray(Bm[np.arange(b), pick][:, None]),
                np.ascontiguousarray(Cm[np.arange(b), pick][:, None]), D, at, None, True))
        for i, length in enumerate(lengths):
            conv_got = np.concatenate([conv_rows[0][i, :length]] +
                                      [r[i] for r in conv_rows[1:]])[:total]
            scan_got = np.concatenate([scan_rows[0][i, :length]] +
                                      [r[i] for r in scan_rows[1:]])[:total]
            whole_conv = kernel_harness.poisoned((1, total, c), F32)
            call("braid_k_conv1d", F32, np.ascontiguousarray(x[i:i + 1]), w, bias, whole_conv,
                 1, total, c, k)
            whole_scan = kernel_harness.poisoned((1, total, c), F32)
            call("braid_k_selective_scan", F32, np.ascontiguousarray(x[i:i + 1]),
                 np.ascontiguousarray(delta[i:i + 1]), A, np.ascontiguousarray(Bm[i:i + 1]),
                 np.ascontiguousarray(Cm[i:i + 1]), D, whole_scan,
                 kernel_harness.scan(1, total, c, n, True))
            for name, got, whole in (("conv", conv_got, whole_conv[0]),
                                     ("scan", scan_got, whole_scan[0])):
                err = rel(got, whole)
                key = (f"{name} prefill+decode vs whole", "f32")
                kernel_harness.MAX_ERR[key] = max(kernel_harness.MAX_ERR.get(key, 0.0), err)
                self.assertLessEqual(err, 1e-6, f"{name}_step sequence {i}: {err:.3g}")

    def test_padding_does_not_reach_the_state(self):
        b, L, c, k, n = 2, 5, 4, 4, 3
        lengths = [2, 5]
        x, w = self.randn(b, L, c), self.randn(c, k)
        delta, Bm, Cm = self.randn(b, L, c), self.randn(b, L, n), self.randn(b, L, n)
        A, D = -np.exp(self.randn(c, n)), self.randn(c)
        states = []
        for pad in (0.0, np.nan):
            xs, ds, bs, cs = (a.copy() for a in (x, delta, Bm, Cm))
            for a in (xs, ds, bs, cs):
                a[0, lengths[0]:] = pad
            cst, sst = np.zeros((b, k - 1, c), np.float32), np.zeros((b, c, n), np.float32)
            conv_step(F32, cst, xs, w, None, [0, 0], [lengths[0] - 1, lengths[1] - 1])
            scan_step(F32, sst, xs, ds, A, bs, cs, D, [0, 0], [lengths[0] - 1, lengths[1] - 1],
                      True)
            states.append((cst, sst))
        for got, want in zip(states[1], states[0]):
            np.testing.assert_array_equal(got, want)


# (batch, seq, positions, last_rows, slots, state slots): sequences in a
# permuted choice of slots, idle ones (-1; an idle sequence's slot is not read:
# out of range or another's), and idle rows without slots.
SLOT_CALLS = [
    (3, 4, [0, 2, 5], [3, 1, 2], [4, 0, 2], 5),
    (4, 3, [1, 0, 3, 2], [-1, 2, 0, -1], [7, 1, 3, 1], 4),
    (2, 1, [6, 4], [0, -1], [3, -5], 6),
    (3, 5, [0, 3, 1], [-1, 4, 2], None, 3),
]


class SlotsAndIdle(Case):
    """States in slots and idle sequences: against braid_ref.ops_inference, against
    the identity form over the states gathered by slot, and slots left alone."""

    def scan_operands(self, dt, b, s, d, n):
        delta, delta64 = self.stored((b, s, d), dt, scale=0.5)
        A, A64 = store(-np.exp(self.randn(d, n)), dt)
        Bm, B64 = self.stored((b, s, n), dt)
        Cm, C64 = self.stored((b, s, n), dt)
        D, D64 = self.stored((d,), dt)
        return (delta, A, Bm, Cm, D), (delta64, A64.astype(np.float64), B64, C64, D64)

    def check_identity_form(self, name, got_y, got_state, step, state, slots, last):
        """The same call with each live sequence's slot gathered into [B, ...] and
        no slots: the rows and the live slots' new states bit for bit."""
        live = [b for b, row in enumerate(last) if row != -1]
        gathered = np.ascontiguousarray(state[[slots[b] if b in live else 0
                                               for b in range(len(last))]])
        want_y = step(gathered)
        np.testing.assert_array_equal(got_y, want_y, f"{name} rows vs identity form")
        for b in live:
            np.testing.assert_array_equal(got_state[slots[b]], gathered[b],
                                          f"{name} slot {slots[b]} vs identity form")

    def check_untouched(self, name, got_state, state, slots, last):
        written = {(b if slots is None else slots[b]) for b, row in enumerate(last)
                   if row != -1}
        for slot in range(state.shape[0]):
            if slot not in written:
                np.testing.assert_array_equal(got_state[slot], state[slot],
                                              f"{name}: slot {slot} changed")

    def test_conv_step(self):
        c, k = 5, 4
        for b, s, positions, last, slots, nslots in SLOT_CALLS:
            for dt in DTYPES:
                what = f" b={b} s={s} last={last} slots={slots}"
                state, state64 = self.stored((nslots, k - 1, c), dt)
                x, x64 = self.stored((b, s, c), dt)
                w, w64 = self.stored((c, k), dt)
                bias, bias64 = self.stored((c,), dt)
                for i, row in enumerate(last):
                    if row == -1:   # an idle sequence's rows are not read
                        x[i] = store(np.full((s, c), np.nan, np.float32), dt)[0]
                y_ref, state_ref = ops_inference.conv_step(state64, x64, w64, bias64,
                                                           i32(positions), last, slots)
                got = state.copy()
                y = conv_step(dt, got, x, w, bias, positions, last, slots)
                self.close("conv_step slots", dt, y, y_ref, what)
                np.testing.assert_array_equal(values(got, dt), state_ref,
                                              f"conv_step state{what}")
                self.check_untouched("conv_step" + what, got, state,
                                     slots, last)
                if slots is not None:
                    self.check_identity_form(
                        "conv_step" + what, y, got,
                        lambda g: conv_step(dt, g, x, w, bias, positions, last),
                        state, slots, last)
                for i, row in enumerate(last):
                    if row == -1:
                        self.assertFalse(np.any(values(y[i], dt)), "idle rows" + what)

    def test_scan_step(self):
        d, n = 6, 4
        for b, s, positions, last, slots, nslots in SLOT_CALLS:
            for dt in DTYPES:
                what = f" b={b} s={s} last={last} slots={slots}"
                state = self.randn(nslots, d, n)
                x, x64 = self.stored((b, s, d), dt)
                ops, ops64 = self.scan_operands(dt, b, s, d, n)
                for i, row in enumerate(last):
                    if row == -1:
                        x[i] = store(np.full((s, d), np.nan, np.float32), dt)[0]
                y_ref, state_ref = ops_inference.scan_step(
                    state.astype(np.float64), x64, *ops64, i32(positions), last, True, slots)
                got = state.copy()
                y = scan_step(dt, got, x, *ops, positions, last, True, slots)
                self.close("scan_step slots", dt, y, y_ref, what)
                self.close("scan_step slots state", F32, got, state_ref, what)
                self.check_untouched("scan_step" + what, got, state, slots, last)
                if slots is not None:
                    self.check_identity_form(
                        "scan_step" + what, y, got,
                        lambda g: scan_step(dt, g, x, *ops, positions, last, True),
                        state, slots, last)
                for i, row in enumerate(last):
                    if row == -1:
                        self.assertFalse(np.any(values(y[i], dt)), "idle rows" + what)


class ChunkAgainstReference(Case):
    """Each chunk kernel against braid_ref.ops_inference on one chunk (the second of three:
    a halo and an earlier chunk's carry; the first: the carried states), every
    element type; last rows in this chunk and in others."""

    def test_against_reference(self):
        b, S, c, k, N, n = 4, 3, 5, 4, 3, 3
        positions, last = [0, 4, 0, 7], [4, 1, 8, 3]
        for dt in DTYPES:
            for first in (0, S):
                what = f" first row {first}"
                state, state64 = self.stored((b, k - 1, c), dt)
                halo, halo64 = self.stored((b, k - 1, c), dt)
                x, x64 = self.stored((b, S, c), dt)
                w, w64 = self.stored((c, k), dt)
                bias, bias64 = self.stored((c,), dt)
                y_ref, cs_ref = ops_inference.conv_step_chunk(state64, halo64, x64, w64, bias64,
                                                    i32(positions), last, first, n * S)
                y = kernel_harness.poisoned((b, S, c), dt)
                cs = kernel_harness.poisoned((b, k - 1, c), dt)
                call("braid_k_conv_step_chunk", dt, state, halo, x, w, bias, i32(positions),
                     i32(last), y, cs, b, S, c, k, first, n * S)
                self.close("conv_step_chunk", dt, y, y_ref, what)
                np.testing.assert_array_equal(values(cs, dt), cs_ref,
                                              f"conv_step_chunk state{what}")

                h = self.randn(b, c, N)
                decays = np.exp(-np.abs(self.randn(n * b, c, N)))
                hends = self.randn(n * b, c, N)
                delta, delta64 = self.stored((b, S, c), dt, scale=0.5)
                A, A64 = store(-np.exp(self.randn(c, N)), dt)
                A64 = A64.astype(np.float64)
                Bm, B64 = self.stored((b, S, N), dt)
                Cm, C64 = self.stored((b, S, N), dt)
                D, D64 = self.stored((c,), dt)
                y_ref, hs_ref = ops_inference.scan_step_chunk(h, decays, hends, x64, delta64, A64, B64,
                                                    C64, D64, i32(positions), last, first,
                                                    n * S, True)
                y = kernel_harness.poisoned((b, S, c), dt)
                hs = kernel_harness.poisoned((b, c, N), F32)
                call("braid_k_scan_step_chunk", dt, h, decays, hends, x, delta, A, Bm, Cm, D,
                     i32(positions), i32(last), y, hs, kernel_harness.scan(b, S, c, N, True),
                     first, n * S)
                self.close("scan_step_chunk", dt, y, y_ref, what)
                self.close("scan_step_chunk state", F32, hs, hs_ref, what)

                all_states, _ = self.stored((n * b, k - 1, c), dt)
                taken = kernel_harness.poisoned((b, k - 1, c), dt)
                call("braid_k_take_chunk_state", taken, all_states, i32(last), b, n, S,
                     taken[0].nbytes)
                np.testing.assert_array_equal(taken, ops_inference.take_chunk_state(all_states, last, S),
                                              f"take_chunk_state{what}")


class ChunksOverRanks(Case):
    """The prompt of L rows split into n chunks, each computed as cp rank j
    computes it, against the whole prompt in one call: sequences at position
    0 and continuing (position > 0, the carried states), last rows in every
    chunk."""

    def run_chunks(self, n, L, positions, last, conv_state, ssm_state, x, delta, Bm, Cm, w,
                   bias, A, D):
        b, _, c = x.shape
        k, N, S = w.shape[1], A.shape[1], L // n
        piece = [np.ascontiguousarray(a[:, j * S:(j + 1) * S]) for a in (x, delta, Bm, Cm)
                 for j in range(n)]
        xs, ds, bs, cs = (piece[i * n:(i + 1) * n] for i in range(4))
        conv_y, conv_c, scan_y, scan_c, hends, decays = [], [], [], [], [], []
        for j in range(n):
            halo = (np.ascontiguousarray(xs[j - 1][:, S - (k - 1):]) if j else
                    np.zeros((b, k - 1, c), np.float32))
            y = kernel_harness.poisoned((b, S, c), F32)
            cand = kernel_harness.poisoned((b, k - 1, c), F32)
            call("braid_k_conv_step_chunk", F32, conv_state, halo, xs[j], w, bias,
                 i32(positions), i32(last), y, cand, b, S, c, k, j * S, L)
            conv_y.append(y)
            conv_c.append(cand)
            hend, decay = (np.zeros((b, c, N), np.float32) for _ in range(2))
            call("braid_k_selective_scan_chunk", F32, xs[j], ds[j], A, bs[j], cs[j], D, None,
                 None, hend, decay, kernel_harness.scan(b, S, c, N, True))
            hends.append(hend)
            decays.append(decay)
        decay_all, hend_all = np.concatenate(decays), np.concatenate(hends)
        for j in range(n):
            y = kernel_harness.poisoned((b, S, c), F32)
            cand = kernel_harness.poisoned((b, c, N), F32)
            call("braid_k_scan_step_chunk", F32, ssm_state, decay_all, hend_all, xs[j], ds[j],
                 A, bs[j], cs[j], D, i32(positions), i32(last), y, cand,
                 kernel_harness.scan(b, S, c, N, True), j * S, L)
            scan_y.append(y)
            scan_c.append(cand)
        for state, cands in ((conv_state, conv_c), (ssm_state, scan_c)):
            call("braid_k_take_chunk_state", state, np.concatenate(cands), i32(last), b, n, S,
                 state[0].nbytes)
        return np.concatenate(conv_y, axis=1), np.concatenate(scan_y, axis=1)

    def test_equals_whole_prompt(self):
        b, c, k, N = 4, 6, 4, 4
        for n, L, last in ((2, 8, [7, 2, 0, 4]), (3, 9, [8, 4, 3, 1]), (4, 12, [11, 2, 5, 8])):
            positions = [0, 5, 0, 9]
            x, delta = self.randn(b, L, c), self.randn(b, L, c, scale=0.5)
            Bm, Cm = self.randn(b, L, N), self.randn(b, L, N)
            w, bias, D = self.randn(c, k), self.randn(c), self.randn(c)
            A = -np.exp(self.randn(c, N))
            conv0, ssm0 = self.randn(b, k - 1, c), self.randn(b, c, N)
            whole_conv, whole_ssm = conv0.copy(), ssm0.copy()
            want_conv = conv_step(F32, whole_conv, x, w, bias, positions, last)
            want_scan = scan_step(F32, whole_ssm, want_conv, delta, A, Bm, Cm, D, positions,
                                  last, True)
            got_conv_state, got_ssm = conv0.copy(), ssm0.copy()
            got_conv, _ = self.run_chunks(n, L, positions, last, got_conv_state, ssm0.copy(),
                                          x, delta, Bm, Cm, w, bias, A, D)
            _, got_scan = self.run_chunks(n, L, positions, last, conv0.copy(), got_ssm,
                                          want_conv, delta, Bm, Cm, w, bias, A, D)
            what = f" over {n} chunks"
            np.testing.assert_array_equal(got_conv, want_conv, "conv rows" + what)
            np.testing.assert_array_equal(got_conv_state, whole_conv, "conv state" + what)
            for name, got, want in (("scan rows", got_scan, want_scan),
                                    ("scan state", got_ssm, whole_ssm)):
                err = rel(got, want)
                key = (f"{name} by chunks vs whole", "f32")
                kernel_harness.MAX_ERR[key] = max(kernel_harness.MAX_ERR.get(key, 0.0), err)
                self.assertLessEqual(err, 1e-6, f"{name}{what}: {err:.3g}")


class ForgetHook(Case):
    """BRAID_TEST_FORGET_MAMBA_STATE: the state is not carried (a child process)."""

    def test_hook_starts_fresh(self):
        import subprocess
        me = os.path.abspath(__file__)
        script = (f"import runpy, sys; sys.argv = [{me!r}, sys.argv[1], 'forget'] + "
                  f"(['--device'] if {DEVICE!r} else []); "
                  f"runpy.run_path({me!r}, run_name='__main__')")
        for which in ("conv", "ssm", "none"):
            r = subprocess.run([sys.executable, "-c", script, kernel_harness.LIB_PATH],
                               capture_output=True, text=True, timeout=60,
                               env=dict(os.environ, BRAID_TEST_FORGET_MAMBA_STATE=which))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.split(), ["conv", "fresh" if which == "conv" else "carried",
                                                "ssm", "fresh" if which == "ssm" else "carried"])


def forget_case():
    """Prints whether each kernel carried a nonzero state into a step at position 3."""
    x = np.ones((1, 1, 2), np.float32)
    cst = np.full((1, 3, 2), 5.0, np.float32)
    y = conv_step(F32, cst, x, np.ones((2, 4), np.float32), None, [3], None)
    print("conv", "fresh" if y[0, 0, 0] == 1.0 else "carried")
    sst = np.full((1, 2, 1), 5.0, np.float32)
    zeros = np.zeros((1, 1, 2), np.float32)
    y = scan_step(F32, sst, zeros, zeros, -np.ones((2, 1), np.float32),
                  np.ones((1, 1, 1), np.float32), np.ones((1, 1, 1), np.float32),
                  np.zeros(2, np.float32), [3], None, False)
    print("ssm", "fresh" if y[0, 0, 0] == 0.0 else "carried")


def abort_case(which):
    """One call with a bad last row (run in a child process)."""
    x = np.zeros((2, 3, 4), np.float32)
    if which == "conv_last_past_end":
        conv_step(F32, np.zeros((2, 3, 4), np.float32), x, np.zeros((4, 4), np.float32), None,
                  [0, 0], [2, 3])
    elif which == "scan_last_negative":   # -1 is idle; below it, fatal
        scan_step(F32, np.zeros((2, 4, 2), np.float32), x, x, np.zeros((4, 2), np.float32),
                  np.zeros((2, 3, 2), np.float32), np.zeros((2, 3, 2), np.float32),
                  np.zeros(4, np.float32), [0, 0], [-2, 0], False)
    elif which == "conv_slot_outside":
        conv_step(F32, np.zeros((5, 3, 4), np.float32), x, np.zeros((4, 4), np.float32), None,
                  [0, 0], [2, 1], slots=[0, 5])
    elif which == "scan_slot_shared":   # sequence 1 is idle: its slot 2 is free
        x3 = np.zeros((3, 3, 4), np.float32)
        scan_step(F32, np.zeros((4, 4, 2), np.float32), x3, x3, np.zeros((4, 2), np.float32),
                  np.zeros((3, 3, 2), np.float32), np.zeros((3, 3, 2), np.float32),
                  np.zeros(4, np.float32), [0, 0, 0], [0, -1, 2], False, slots=[2, 2, 2])
    elif which == "conv_too_few_slots":
        x3 = np.zeros((3, 3, 4), np.float32)
        conv_step(F32, np.zeros((2, 3, 4), np.float32), x3, np.zeros((4, 4), np.float32), None,
                  [0, 0, 0], None)
    elif which == "chunk_last_past_prompt":
        call("braid_k_conv_step_chunk", F32, np.zeros((2, 3, 4), np.float32),
             np.zeros((2, 3, 4), np.float32), x, np.zeros((4, 4), np.float32), None,
             i32([0, 0]), i32([2, 6]), np.zeros_like(x), np.zeros((2, 3, 4), np.float32),
             2, 3, 4, 4, 3, 6)
    elif which == "take_last_past_chunks":
        call("braid_k_take_chunk_state", np.zeros((2, 4), np.float32),
             np.zeros((4, 4), np.float32), i32([-2, 0]), 2, 2, 3, 16)
    print("returned")


CPU_MESSAGES = {
    "conv_last_past_end": "braid: conv_step: last row 3 of sequence 1 is outside [0, 3)",
    "scan_last_negative": "braid: scan_step: last row -2 of sequence 0 is outside [0, 3)",
    "conv_slot_outside": "braid: conv_step: slot 5 of sequence 1 is outside [0, 5)",
    "scan_slot_shared": "braid: scan_step: slot 2 of sequence 2 is also sequence 0's",
    "conv_too_few_slots": "braid: conv_step: a state of 2 slots cannot hold 3 sequences",
    "chunk_last_past_prompt":
        "braid: conv_step_chunk: last row 6 of sequence 1 is outside [0, 6)",
    "take_last_past_chunks":
        "braid: take_chunk_state: last row -2 of sequence 0 is outside [0, 6)",
}
DEVICE_MESSAGES = {
    "conv_last_past_end": "conv_step/scan_step: last row 3 of sequence 1 is out of range [0, 3)",
    "scan_last_negative": "conv_step/scan_step: last row -2 of sequence 0 is out of range [0, 3)",
    "conv_slot_outside": "conv_step/scan_step: slot 5 of sequence 1 is out of range [0, 5)",
    "scan_slot_shared": "conv_step/scan_step: slot 2 of sequence 2 is also sequence 0's",
    "conv_too_few_slots": "conv_step/scan_step: slot 2 of sequence 2 is out of range [0, 2)",
    "chunk_last_past_prompt":
        "conv_step/scan_step: last row 6 of sequence 1 is out of range [0, 6)",
    "take_last_past_chunks":
        "conv_step/scan_step: last row -2 of sequence 0 is out of range [0, 6)",
}


class Aborts(Case):
    def test_fatal_errors(self):
        self.check_abort_cases(__file__, DEVICE_MESSAGES if DEVICE else CPU_MESSAGES, DEVICE)


def main():
    kernel_harness.case_main("mamba_step_cases.py", 34, abort_case, {"forget": forget_case})


if __name__ == "__main__":
    main()
