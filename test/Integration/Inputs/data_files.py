"""Datasets for the --data tests (runtime/src/data.h has the formats), written
with numpy, and the reference of the order in which a run reads windows.

As a script, `data_files.py DIR` writes the malformed files of
data-errors.test into DIR."""
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib"))
from braid_ref import rng  # noqa: E402

# Megatron's DType codes (megatron/core/datasets/indexed_dataset.py).
MEGATRON_CODES = {np.uint8: 1, np.int8: 2, np.int16: 3, np.int32: 4, np.int64: 5, np.uint16: 8}


def write_megatron(prefix, sequences, dtype, documents=None):
    """PREFIX.bin and PREFIX.idx as Megatron's _IndexWriter lays them out:
    "MMIDIDX\\0\\0", version 1 (u64), dtype code (u8), sequence and document
    counts (u64), int32 lengths, int64 byte pointers, int64 document indices."""
    dtype = np.dtype(dtype).type
    lengths = [len(s) for s in sequences]
    itemsize = np.dtype(dtype).itemsize
    pointers = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) * itemsize
    if documents is None:
        documents = list(range(len(sequences) + 1))
    with open(prefix + ".bin", "wb") as f:
        for s in sequences:
            f.write(np.asarray(s, dtype=dtype).tobytes())
    with open(prefix + ".idx", "wb") as f:
        f.write(b"MMIDIDX\x00\x00")
        f.write(struct.pack("<Q", 1))
        f.write(struct.pack("<B", MEGATRON_CODES[dtype]))
        f.write(struct.pack("<Q", len(sequences)))
        f.write(struct.pack("<Q", len(documents)))
        f.write(np.asarray(lengths, dtype=np.int32).tobytes())
        f.write(pointers.tobytes())
        f.write(np.asarray(documents, dtype=np.int64).tobytes())


def window_order(windows, shuffle, seed, position):
    """The window read at `position` (data.h's DataOrder): file order, or a
    4-round Feistel permutation per epoch over 2h bits (the least h with
    4^h >= W), round function Philox keyed by (seed, "data.shuffle") with
    counter (right half, round, epoch low, epoch high), cycle-walked below W."""
    i, epoch = position % windows, position // windows
    if not shuffle:
        return i
    half = 1
    while (1 << (2 * half)) < windows:
        half += 1
    mask = (1 << half) - 1
    k0, k1 = rng.key_of(seed, "data.shuffle")
    x = i
    while True:
        left, right = x >> half, x & mask
        for r in range(4):
            f = int(rng.philox4x32_10(right, r, epoch & 0xFFFFFFFF, epoch >> 32, k0, k1)[0]) & mask
            left, right = right, left ^ f
        x = (left << half) | right
        if x < windows:
            return x


def batch(stream, seq, batch_size, position, shuffle=False, seed=0):
    """The global batch (tokens, labels) read at `position`: row b is window
    window_order(position + b), its first seq tokens and its last seq."""
    windows = (len(stream) - 1) // seq
    rows = [window_order(windows, shuffle, seed, position + b) for b in range(batch_size)]
    tokens = np.stack([stream[w * seq:w * seq + seq] for w in rows])
    labels = np.stack([stream[w * seq + 1:w * seq + seq + 1] for w in rows])
    return tokens.astype(np.int64), labels.astype(np.int64)


def write_error_files(d):
    """The files data-errors.test refuses (llama-tiny-b4-s8: vocab 256, a
    global batch of 4 windows of 9 tokens, so 33 tokens at least)."""
    good = np.arange(200, dtype=np.int32) % 256
    np.save(os.path.join(d, "short.npy"), good[:32])          # 3 windows
    past = good.copy()
    past[77] = 256
    np.save(os.path.join(d, "past.npy"), past)                # id 256 >= vocab
    neg = good.copy()
    neg[5] = -3
    np.save(os.path.join(d, "negative.npy"), neg)
    np.save(os.path.join(d, "float.npy"), good.astype(np.float32))
    np.save(os.path.join(d, "matrix.npy"), good.reshape(20, 10))
    good.astype(np.uint16).tofile(os.path.join(d, "ok.bin"))
    with open(os.path.join(d, "odd.bin"), "wb") as f:        # not whole uint32 ids
        f.write(good.astype(np.uint16).tobytes()[:-2])
    good.astype(np.uint16).tofile(os.path.join(d, "tokens.txt"))
    seqs = [good[:100], good[100:]]
    write_megatron(os.path.join(d, "truncated"), seqs, np.uint16)
    with open(os.path.join(d, "truncated.idx"), "r+b") as f:  # the document indices cut
        f.truncate(os.path.getsize(os.path.join(d, "truncated.idx")) - 5)
    write_megatron(os.path.join(d, "magic"), seqs, np.uint16)
    with open(os.path.join(d, "magic.idx"), "r+b") as f:
        f.write(b"NOTANIDX\x00")
    write_megatron(os.path.join(d, "shortbin"), seqs, np.uint16)
    with open(os.path.join(d, "shortbin.bin"), "r+b") as f:   # the data cut
        f.truncate(300)
    write_megatron(os.path.join(d, "gap"), seqs, np.uint16)
    with open(os.path.join(d, "gap.idx"), "r+b") as f:        # sequence 1 at byte 202
        f.seek(34 + 4 * 2 + 8)
        f.write(struct.pack("<q", 202))


if __name__ == "__main__":
    write_error_files(sys.argv[1])
