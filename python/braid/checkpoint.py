"""Reading Braid checkpoints with numpy (the format: runtime/src/checkpoint.h).

A checkpoint directory D holds D/latest (the name of the newest complete
checkpoint) and D/step-<K>/: manifest.json and one safetensors file per rank
that wrote data. Every tensor is its global tensor cut into boxes ("pieces"),
each a safetensors entry. ``load(D)`` assembles them:

    from braid import checkpoint
    manifest, tensors = checkpoint.load("ckpt")        # D/latest's checkpoint
    tensors["layers.0.attn.wq"]                         # numpy, global shape

The files are read by the `safetensors` package (PyPI). bf16 tensors come back
as float32 (exactly: bf16 is the top half of an f32), or as their uint16 bits
with ``bf16_bits=True``. ``python3 -m braid.checkpoint D`` prints the
manifest's summary and every tensor's shape, dtype and norm. A failure raises
braid.BraidError (a missing directory: braid.PathNotFoundError).
"""
from __future__ import annotations

import json
import os
import sys

from .errors import BraidError, DependencyError, PathNotFoundError

# safetensors' dtype names -> numpy's, for the dtypes Braid writes. BF16 is
# here because numpy has no bfloat16 (safetensors.numpy refuses BF16 entries):
# its entries come back as their uint16 bits and are widened by hand below.
_DTYPES = {"F32": "<f4", "F16": "<f2", "I32": "<i4", "I64": "<i8", "BF16": "<u2"}


def resolve(path):
    """The checkpoint directory `path` names: itself when it holds a
    manifest, else the one its `latest` file names."""
    path = os.fspath(path)
    if os.path.exists(os.path.join(path, "manifest.json")):
        return path
    if not os.path.isdir(path):
        raise PathNotFoundError(f"no checkpoint directory {path!r}", path)
    try:
        with open(os.path.join(path, "latest")) as f:
            return os.path.join(path, f.read().strip())
    except OSError:
        raise BraidError(f"{path!r} is not a checkpoint: it holds neither manifest.json "
                         "nor latest") from None


def _safetensors():
    try:
        import safetensors
    except ImportError as e:
        raise DependencyError("braid.checkpoint reads safetensors files with the "
                              f"safetensors package: pip install safetensors ({e})") from e
    return safetensors


def read_entries(path) -> dict:
    """{key: (dtype, shape, data)} of every entry of a safetensors file, as
    the safetensors package parses and checks it (its header, offsets and
    sizes); `data` is the entry's bytes as stored (little endian)."""
    safetensors = _safetensors()
    try:
        with open(path, "rb") as f:
            entries = safetensors.deserialize(f.read())
    except FileNotFoundError:
        raise PathNotFoundError(f"no checkpoint file {os.fspath(path)!r}",
                                os.fspath(path)) from None
    except (OSError, safetensors.SafetensorError) as e:
        raise BraidError(f"cannot read {os.fspath(path)!r} as safetensors: {e}") from None
    return {key: (e["dtype"], list(e["shape"]), e["data"]) for key, e in entries}


def read_file(path, bf16_bits=False) -> dict:
    """Every entry of a safetensors file as a numpy array, as
    safetensors.numpy.load reads them (numpy over safetensors.deserialize's
    entries), and BF16, which it refuses, as float32 (or its uint16 bits with
    `bf16_bits`)."""
    import numpy as np

    arrays = {}
    for key, (dtype, shape, data) in read_entries(path).items():
        if dtype not in _DTYPES:
            raise BraidError(f"{os.fspath(path)!r}: entry {key!r} has dtype {dtype}, which "
                             f"Braid does not write ({', '.join(_DTYPES)})")
        a = np.frombuffer(data, dtype=_DTYPES[dtype]).reshape(shape)
        if dtype == "BF16" and not bf16_bits:
            a = (a.astype(np.uint32) << 16).view(np.float32)
        arrays[key] = a
    return arrays


def fnv1a64(data):
    """FNV-1a 64 of bytes (the hash of each piece in the manifest)."""
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def _manifest(directory):
    try:
        with open(os.path.join(directory, "manifest.json")) as f:
            return json.load(f)
    except FileNotFoundError:
        raise BraidError(f"{directory!r} holds no manifest.json (an incomplete "
                         "checkpoint?)") from None
    except (OSError, ValueError) as e:
        raise BraidError(f"cannot read {directory!r}/manifest.json: {e}") from None


def load(path, bf16_bits=False):
    """(manifest, {name: global numpy array}) of the checkpoint `path` names."""
    import numpy as np

    directory = resolve(path)
    manifest = _manifest(directory)
    files = {}
    tensors = {}
    try:
        for t in manifest["tensors"]:
            dtype = np.uint16 if t["dtype"] == "BF16" and bf16_bits else (
                np.float32 if t["dtype"] == "BF16" else np.dtype(_DTYPES[t["dtype"]]))
            out = np.zeros(t["shape"], dtype=dtype)
            for p in t["pieces"]:
                file = os.path.join(directory, p["file"])
                if file not in files:
                    files[file] = read_file(file, bf16_bits)
                box = tuple(slice(s, s + n) for s, n in zip(p["start"], p["shape"]))
                out[box] = files[file][p["key"]]
            tensors[t["name"]] = out
    except BraidError:
        raise
    except (KeyError, TypeError, ValueError) as e:
        raise BraidError(f"{directory!r}: the manifest does not match its files "
                         f"({type(e).__name__}: {e})") from None
    return manifest, tensors


def main(argv=None):
    import numpy as np

    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python3 -m braid.checkpoint DIR", file=sys.stderr)
        return 2
    try:
        manifest, tensors = load(argv[0])
    except BraidError as e:
        print(f"braid.checkpoint: {e}", file=sys.stderr)
        return 1
    print(f"{resolve(argv[0])}: model {manifest['model']}, step {manifest['step']}, "
          f"seed {manifest['seed']}, written on {manifest['grid']} "
          f"({len(manifest['files'])} files)")
    for t in manifest["tensors"]:
        a = tensors[t["name"]]
        print(f"  {t['name']}: {t['dtype']} {list(a.shape)} in {len(t['pieces'])} pieces, "
              f"norm {float(np.linalg.norm(a.astype(np.float64))):.6g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
