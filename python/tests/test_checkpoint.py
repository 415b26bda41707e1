"""pytest suite of braid.checkpoint, the numpy reader of checkpoints (pure Python:
no braid._braid needed). The files here are written as the runtime writes them
(runtime/src/checkpoint.h: safetensors, with BF16 entries, which the
safetensors package's numpy API cannot write); the runtime's own checkpoints
are read back in test/Integration/checkpoint-resume.py.

    PYTHONPATH=python python3 -m pytest -q python/tests/test_checkpoint.py
"""

import json

import numpy as np
import pytest

import braid
from braid import checkpoint

safetensors = pytest.importorskip("safetensors")


def bf16_bits(a):
    """The top halves of float32 values (exact for values bf16 holds)."""
    return (np.asarray(a, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)


def safetensors_bytes(entries):
    """A safetensors file of {key: (dtype, shape, bytes)}, in the format's
    layout: an 8-byte header size, the JSON header, the data."""
    header, offset = {}, 0
    for key, (dtype, shape, data) in entries.items():
        header[key] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + b"".join(d for _, _, d in entries.values())


def write_checkpoint(root, step=3):
    """A checkpoint of two ranks: an f32 [4, 6] tensor split by rows and a bf16
    [4] tensor split in two, each rank's pieces in its own file."""
    w = np.arange(24, dtype=np.float32).reshape(4, 6) / 8
    b = np.array([1.0, -2.5, 0.125, 3.0], dtype=np.float32)
    d = root / f"step-{step}"
    d.mkdir(parents=True)
    for rank in range(2):
        rows = slice(2 * rank, 2 * rank + 2)
        entries = {
            f"w@{2 * rank},0": ("F32", [2, 6], np.ascontiguousarray(w[rows]).tobytes()),
            f"b@{2 * rank}": ("BF16", [2], bf16_bits(b[rows]).tobytes()),
        }
        (d / f"rank{rank:05d}.safetensors").write_bytes(safetensors_bytes(entries))
    pieces = lambda name, shape: [  # noqa: E731
        {"file": f"rank{r:05d}.safetensors", "key": f"{name}@{2 * r}" + (",0" if len(shape) > 1
                                                                         else ""),
         "start": [2 * r] + [0] * (len(shape) - 1), "shape": shape} for r in range(2)]
    manifest = {"format": "braid-checkpoint", "version": 1, "model": "toy", "step": step,
                "seed": 7, "grid": "dp=2", "ranks": 2,
                "files": [{"name": f"rank{r:05d}.safetensors"} for r in range(2)],
                "tensors": [{"name": "w", "dtype": "F32", "shape": [4, 6],
                             "pieces": pieces("w", [2, 6])},
                            {"name": "b", "dtype": "BF16", "shape": [4],
                             "pieces": pieces("b", [2])}]}
    (d / "manifest.json").write_text(json.dumps(manifest))
    (root / "latest").write_text(f"step-{step}\n")
    return w, b


def test_load_assembles_the_pieces(tmp_path):
    w, b = write_checkpoint(tmp_path)
    manifest, tensors = checkpoint.load(tmp_path)
    assert manifest["step"] == 3
    np.testing.assert_array_equal(tensors["w"], w)
    assert tensors["b"].dtype == np.float32
    np.testing.assert_array_equal(tensors["b"], b)
    _, bits = checkpoint.load(tmp_path / "step-3", bf16_bits=True)
    np.testing.assert_array_equal(bits["b"], bf16_bits(b))


def test_entries_are_the_stored_bytes(tmp_path):
    w, _ = write_checkpoint(tmp_path)
    entries = checkpoint.read_entries(tmp_path / "step-3" / "rank00001.safetensors")
    dtype, shape, data = entries["w@2,0"]
    assert (dtype, shape) == ("F32", [2, 6]) and bytes(data) == w[2:].tobytes()


def test_files_of_the_safetensors_package_read_back(tmp_path):
    from safetensors.numpy import save_file
    arrays = {"a": np.arange(6, dtype=np.float32).reshape(2, 3),
              "i": np.array([1, -2], dtype=np.int64)}
    save_file(arrays, str(tmp_path / "x.safetensors"))
    read = checkpoint.read_file(tmp_path / "x.safetensors")
    assert sorted(read) == ["a", "i"]
    for key, a in arrays.items():
        assert read[key].dtype == a.dtype
        np.testing.assert_array_equal(read[key], a)


def test_safetensors_checks_what_a_hand_reader_did_not(tmp_path):
    # A header whose offsets do not match the entry's shape: the safetensors
    # package refuses it (a reader by hand read the bytes it was given).
    header = json.dumps({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}}).encode()
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(len(header).to_bytes(8, "little") + header + bytes(8))
    with pytest.raises(braid.BraidError, match="cannot read .*bad.safetensors.* as safetensors"):
        checkpoint.read_file(bad)


def test_failures_are_braid_errors(tmp_path):
    with pytest.raises(braid.PathNotFoundError, match="no checkpoint directory"):
        checkpoint.load(tmp_path / "none")
    with pytest.raises(braid.BraidError, match="holds neither manifest.json nor latest"):
        checkpoint.load(tmp_path)
    write_checkpoint(tmp_path)
    (tmp_path / "step-3" / "rank00001.safetensors").unlink()
    with pytest.raises(braid.PathNotFoundError, match="no checkpoint file"):
        checkpoint.load(tmp_path)


def test_main_prints_the_summary(tmp_path, capsys):
    write_checkpoint(tmp_path)
    assert checkpoint.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "model toy, step 3, seed 7, written on dp=2 (2 files)" in out
    assert "  b: BF16 [4] in 2 pieces" in out
    assert checkpoint.main([str(tmp_path / "none")]) == 1
    assert "no checkpoint directory" in capsys.readouterr().err
