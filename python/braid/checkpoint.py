"""Reading Braid checkpoints with numpy (the format: runtime/src/checkpoint.h).

A checkpoint directory D holds D/latest (the name of the newest complete
checkpoint) and D/step-<K>/: manifest.json and one safetensors file per rank
that wrote data. Every tensor is its global tensor cut into boxes ("pieces"),
each a safetensors entry. ``load(D)`` assembles them:

    from braid import checkpoint
    manifest, tensors = checkpoint.load("ckpt")        # D/latest's checkpoint
    tensors["layers.0.attn.wq"]                         # numpy, global shape

bf16 tensors come back as float32 (exactly: bf16 is the top half of an f32),
or as their uint16 bits with ``bf16_bits=True``. ``python3 -m braid.checkpoint
D`` prints the manifest's summary and every tensor's shape, dtype and norm.
"""
from __future__ import annotations

import json
import os
import struct
import sys

_DTYPES = {"F32": "<f4", "F16": "<f2", "I32": "<i4", "I64": "<i8", "BF16": "<u2"}


def resolve(path):
    """The checkpoint directory `path` names: itself when it holds a
    manifest, else the one its `latest` file names."""
    if os.path.exists(os.path.join(path, "manifest.json")):
        return path
    with open(os.path.join(path, "latest")) as f:
        return os.path.join(path, f.read().strip())


def read_safetensors_header(path):
    """(header dict without __metadata__, metadata, data offset) of a file."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    metadata = header.pop("__metadata__", {})
    return header, metadata, 8 + n


def read_entry(path, header, data_start, key, bf16_bits=False):
    """One safetensors entry as a numpy array."""
    import numpy as np

    entry = header[key]
    begin, end = entry["data_offsets"]
    with open(path, "rb") as f:
        f.seek(data_start + begin)
        raw = f.read(end - begin)
    a = np.frombuffer(raw, dtype=_DTYPES[entry["dtype"]]).reshape(entry["shape"])
    if entry["dtype"] == "BF16" and not bf16_bits:
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return a


def fnv1a64(data):
    """FNV-1a 64 of bytes (the hash of each piece in the manifest)."""
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def load(path, bf16_bits=False):
    """(manifest, {name: global numpy array}) of the checkpoint `path` names."""
    import numpy as np

    directory = resolve(path)
    with open(os.path.join(directory, "manifest.json")) as f:
        manifest = json.load(f)
    headers = {}
    tensors = {}
    for t in manifest["tensors"]:
        dtype = np.uint16 if t["dtype"] == "BF16" and bf16_bits else (
            np.float32 if t["dtype"] == "BF16" else np.dtype(_DTYPES[t["dtype"]]))
        out = np.zeros(t["shape"], dtype=dtype)
        for p in t["pieces"]:
            file = os.path.join(directory, p["file"])
            if file not in headers:
                headers[file] = read_safetensors_header(file)
            header, _, start = headers[file]
            box = tuple(slice(s, s + n) for s, n in zip(p["start"], p["shape"]))
            out[box] = read_entry(file, header, start, p["key"], bf16_bits)
        tensors[t["name"]] = out
    return manifest, tensors


def main(argv=None):
    import numpy as np

    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python3 -m braid.checkpoint DIR", file=sys.stderr)
        return 2
    manifest, tensors = load(argv[0])
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
