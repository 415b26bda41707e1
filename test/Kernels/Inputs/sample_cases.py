"""braid.sample's kernels (runtime_inference.h's braid_k_sample*) against
braid_ref.ops_inference.sample, on the CPU (test/Kernels/cpu-sample.py) and
the CUDA kernels under cudasim (test/Cuda/cudasim-sample.py, with --device).

Usage: sample_cases.py KERNELS.so [--device] [abort CASE]

Ids must be identical (the arithmetic is on integers): the whole-row kernel
on f32 and bf16 logits, and the split pieces (braid_k_sample_local, the
all-gather simulated by stacking every rank's words, braid_k_sample_merge,
braid_k_sample_ids) on 2, 3 and 4 ranks of a padded vocabulary (97 on 2
ranks: blocks of 49; 50 on 4 ranks: the last rank holds no token), in each
mode with the rows it can draw, the gather in two rank orders. Padding
columns hold 1e9, which a kernel reading them would draw. Rows mix greedy,
temperature, top-k, top-k with top-p, and top-p alone (thresholds 0.0 to
0.99), on Gaussian logits and on integer ones (ties).
"""

import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lib"))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

from braid_ref import ops_inference  # noqa: E402
import kernel_harness  # noqa: E402
from kernel_harness import BF16, F32, I, I4, LIB, P, Case, store  # noqa: E402
from cache_cases import DEVICE, call  # noqa: E402

SIGS = {
    "braid_k_sample": [P, I4, P, P, P, P, P, P, P, I, I, I, I, I],
    "braid_k_sample_local": [P, I4, P, P, P, P, P, P, I, I, I, I, I, I, I],
    "braid_k_sample_merge": [P, P, P, P, P, P, P, P, P, I, I, I, I, I],
    "braid_k_sample_ids": [P, P, P, I, I],
}
if LIB is not None:
    for name, args in SIGS.items():
        getattr(LIB, name).argtypes = args
        getattr(LIB, name).restype = None

GREEDY, SAMPLE, NUCLEUS = 0, 1, 2
MAX, MASS, SEARCH, SHARES, DRAW = range(5)
CAP = 16
PAD = 1e9
# (temperature, top_k, top_p) per row, and the least mode that draws it.
ROWS = [
    ((0.0, 0, 1.0), GREEDY), ((0.0, 5, 0.5), GREEDY),
    ((0.7, 0, 1.0), SAMPLE), ((1.5, 0, 1.0), SAMPLE), ((0.8, 1, 1.0), SAMPLE),
    ((1.0, 5, 1.0), SAMPLE), ((1.0, 16, 1.0), SAMPLE), ((0.9, 10, 0.5), SAMPLE),
    ((1.0, 0, 0.9), NUCLEUS), ((0.6, 0, 0.3), NUCLEUS), ((1.0, 0, 0.0), NUCLEUS),
    ((2.0, 0, 0.99), NUCLEUS), ((3.0, 0, 0.7), NUCLEUS),
]


def schedule(mode):
    if mode == GREEDY:
        return [MAX]
    return [MAX, MASS] + ([SEARCH] * 8 + [SHARES] if mode == NUCLEUS else []) + [DRAW]


def words_of(phase, cap):
    return {MAX: 2, MASS: 2 + 2 * cap, SEARCH: 63, SHARES: 2, DRAW: 1}[phase]


class Rows:
    """A batch of rows of one mode: logits [B, V] and each row's parameters."""

    def __init__(self, rng, mode, vocab, integer, repeat):
        picked = [p for p, least in ROWS if least <= mode] * repeat
        self.b = len(picked)
        self.vocab = vocab
        x = rng.standard_normal((self.b, vocab)) * 3
        self.logits = (np.round(x) if integer else x).astype(np.float32)
        self.t = np.array([p[0] for p in picked], np.float32)
        self.k = np.array([p[1] for p in picked], np.int32)
        self.p = np.array([p[2] for p in picked], np.float32)
        self.seeds = rng.integers(0, 2 ** 40, self.b).astype(np.int64)
        self.steps = rng.integers(0, 1000, self.b).astype(np.int64)

    def reference(self, logits):
        return ops_inference.sample(logits, self.seeds, self.steps, self.t, self.k, self.p,
                                    self.vocab)


def sample_whole(dt, rows, mode, cap=CAP, pad=0):
    """braid_k_sample on the rows, `pad` padding columns after the vocabulary."""
    x = np.concatenate([rows.logits, np.full((rows.b, pad), PAD, np.float32)], axis=1)
    stored, held = store(x, dt)
    ids = np.full(rows.b, -1, np.int32)
    call("braid_k_sample", dt, stored, rows.seeds, rows.steps, rows.t, rows.k, rows.p, ids,
         rows.b, x.shape[1], rows.vocab, mode, cap)
    return ids, held[:, :rows.vocab]


def sample_split(dt, rows, mode, ranks, order, cap=CAP):
    """The split pieces over `ranks` ranks of ceil(V / ranks) columns (the last
    padded), their words stacked in rank order `order` at each exchange."""
    cols = -(-rows.vocab // ranks)
    x = np.full((rows.b, cols * ranks), PAD, np.float32)
    x[:, :rows.vocab] = rows.logits
    stored, held = store(x, dt)
    blocks = [np.ascontiguousarray(stored[:, k * cols:(k + 1) * cols]) for k in range(ranks)]
    state = None
    for phase in schedule(mode):
        w = words_of(phase, cap)
        words = []
        for k in range(ranks):
            out = np.zeros((rows.b, w), np.int64)
            call("braid_k_sample_local", dt, blocks[k], state, rows.t, rows.k, rows.p, out,
                 rows.b, cols, k * cols, rows.vocab, phase, cap, ranks)
            words.append(out)
        gathered = np.ascontiguousarray(np.concatenate([words[k] for k in order]))
        new = np.zeros((rows.b, 10 + 3 * ranks), np.int64)
        call("braid_k_sample_merge", gathered, state, rows.t, rows.k, rows.p, rows.seeds,
             rows.steps, new, rows.b, ranks, rows.vocab, phase, cap)
        state = new
    ids = np.full(rows.b, -1, np.int32)
    call("braid_k_sample_ids", state, ids, rows.b, ranks)
    return ids, held[:, :rows.vocab]


class Whole(Case):
    rng = np.random.default_rng(7)

    def test_every_mode(self):
        for dt in (F32, BF16):
            for mode in (GREEDY, SAMPLE, NUCLEUS):
                for integer in (False, True):
                    rows = Rows(self.rng, mode, 97, integer, 2)
                    ids, held = sample_whole(dt, rows, mode, pad=3)
                    np.testing.assert_array_equal(ids, rows.reference(held),
                                                  f"dt {dt} mode {mode} integer {integer}")

    def test_one_token(self):
        rows = Rows(self.rng, NUCLEUS, 1, False, 1)
        ids, _ = sample_whole(F32, rows, NUCLEUS)
        np.testing.assert_array_equal(ids, np.zeros(rows.b, np.int32))


class Split(Case):
    rng = np.random.default_rng(11)

    def test_ranks(self):
        for vocab, ranks in ((97, 2), (97, 3), (97, 4), (50, 4)):
            for mode in (GREEDY, SAMPLE, NUCLEUS):
                for integer in (False, True):
                    rows = Rows(self.rng, mode, vocab, integer, 1)
                    dt = BF16 if integer else F32
                    for order in (list(range(ranks)), list(reversed(range(ranks)))):
                        ids, held = sample_split(dt, rows, mode, ranks, order)
                        np.testing.assert_array_equal(
                            ids, rows.reference(held),
                            f"V {vocab} ranks {ranks} mode {mode} order {order}")

    def test_small_cap_still_exact(self):
        # Top-p rows whose nucleus is past a cap of 2 go through the search.
        rows = Rows(self.rng, NUCLEUS, 97, False, 2)
        rows.k[:] = np.minimum(rows.k, 2)
        ids, held = sample_split(F32, rows, NUCLEUS, 2, [0, 1], cap=2)
        np.testing.assert_array_equal(ids, rows.reference(held))


def abort_case(which):
    """One call that must stop (run in a child process)."""
    rows = Rows(np.random.default_rng(1), NUCLEUS, 20, False, 1)
    if which == "top_k_past_cap":
        rows.k[:] = 5
        sample_whole(F32, rows, SAMPLE, cap=4)
    elif which == "greedy_mode_samples":
        sample_whole(F32, rows, GREEDY)
    elif which == "top_p_needs_nucleus":
        rows.t[:], rows.k[:], rows.p[:] = 1.0, 0, 0.9
        sample_whole(F32, rows, SAMPLE, cap=0)
    print("returned")


MESSAGES = {
    "top_k_past_cap": "braid: sample: row 2: top_k 5 exceeds the 4 candidates per rank that the program's "
                      "top_k_cap sends",
    "greedy_mode_samples": "row 2 was not drawn: it samples (temperature > 0), which the "
                           "greedy schedule does not draw",
    "top_p_needs_nucleus": "row 0 was not drawn: its top-p nucleus is not among the "
                           "candidates, which needs the nucleus schedule",
}


# The CUDA kernels record the first row they cannot draw on the device.
DEVICE_MESSAGES = {
    "top_k_past_cap": "sample: top_k (past the program's top_k_cap) 5 of row 2 is out of "
                      "range [0, 5)",
    "greedy_mode_samples": "sample: stage (a sampling the program's mode does not draw) 1 of "
                           "row 2 is out of range [0, 1)",
    "top_p_needs_nucleus": "sample: stage (a sampling the program's mode does not draw) 2 of "
                           "row 0 is out of range [0, 1)",
}


class Aborts(Case):
    def test_fatal_errors(self):
        self.check_abort_cases(__file__, DEVICE_MESSAGES if DEVICE else MESSAGES, DEVICE)


def main():
    kernel_harness.case_main("sample_cases.py", 28, abort_case)


if __name__ == "__main__":
    main()
