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

``export_hf`` (``python3 -m braid.checkpoint export-hf D OUT --config HF``)
writes a checkpoint's model as a Hugging Face directory: OUT/model.safetensors
named and laid out as transformers' architecture of the configuration HF
(a directory holding config.json, or the file), and OUT/config.json, its copy.
The naming is braid.hf_weights' table read backwards; the optimizer states
("opt.*") are not exported.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
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


# --dtype of export-hf -> the safetensors dtype it writes.
_EXPORT_DTYPES = {"f32": "F32", "bf16": "BF16", "f16": "F16"}


def _bf16_bits(a):
    """float32 values as bf16 bits, rounded to nearest even (NaNs stay NaN)."""
    import numpy as np

    a = np.ascontiguousarray(a, dtype=np.float32)
    bits = a.view(np.uint32)
    rounded = ((bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) >> 16)
    nan = (bits >> 16).astype(np.uint16) | np.uint16(0x40)
    return np.where(np.isnan(a), nan, rounded.astype(np.uint16))


def _encode(a, dtype):
    import numpy as np

    if dtype == "BF16":
        return _bf16_bits(a).astype("<u2").tobytes()
    return np.ascontiguousarray(a, dtype="<f4" if dtype == "F32" else "<f2").tobytes()


def write_safetensors(path, arrays, dtype="f32"):
    """Write {key: float array} to a safetensors file in `dtype` (f32, bf16,
    f16): by hand, since safetensors.numpy cannot write BF16. The metadata
    says format "pt", which transformers' loader expects."""
    if dtype not in _EXPORT_DTYPES:
        raise BraidError(f"dtype {dtype!r}: expected one of {', '.join(_EXPORT_DTYPES)}")
    st = _EXPORT_DTYPES[dtype]
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for key, a in arrays.items():
        data = _encode(a, st)
        header[key] = {"dtype": st, "shape": list(a.shape),
                       "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for data in blobs:
            f.write(data)


def export_hf(ckpt, out, config, dtype="f32"):
    """Write the checkpoint `ckpt` (a directory, as for load) as the Hugging
    Face model of `config` (a directory holding config.json, or the file):
    out/model.safetensors and out/config.json. Raises a
    braid.hf_weights.WeightsError naming a tensor the configuration does
    not give, or a configuration's tensor the checkpoint lacks. Returns the
    {HF name: array} written (before the cast to `dtype`)."""
    from . import hf_weights
    from .hf import _architecture, config_from_hf, read_hf_config

    if dtype not in _EXPORT_DTYPES:
        raise BraidError(f"dtype {dtype!r}: expected one of {', '.join(_EXPORT_DTYPES)}")
    hf_config, file, folder = read_hf_config(config)
    model = config_from_hf(hf_config, folder or None, source=file)
    _, tensors = load(ckpt)
    arrays = hf_weights.to_hf(model, _architecture(hf_config, file), tensors,
                              source=resolve(ckpt))
    os.makedirs(out, exist_ok=True)
    write_safetensors(os.path.join(out, "model.safetensors"), arrays, dtype)
    shutil.copyfile(file, os.path.join(out, "config.json"))
    return arrays


def _export_main(argv):
    p = argparse.ArgumentParser(prog="python3 -m braid.checkpoint export-hf",
                                description="Write a Braid checkpoint as a Hugging Face "
                                            "model directory (model.safetensors, config.json).")
    p.add_argument("ckpt", metavar="CKPT", help="checkpoint directory (or its root)")
    p.add_argument("out", metavar="OUT", help="directory to write")
    p.add_argument("--config", required=True, metavar="HF_DIR_OR_CONFIG_JSON",
                   help="the Hugging Face configuration the checkpoint's model was built from")
    p.add_argument("--dtype", choices=tuple(_EXPORT_DTYPES), default="f32")
    args = p.parse_args(argv)
    try:
        arrays = export_hf(args.ckpt, args.out, args.config, args.dtype)
    except (BraidError, OSError) as e:
        print(f"braid.checkpoint: {e}", file=sys.stderr)
        return 1
    print(f"{os.path.join(args.out, 'model.safetensors')}: {len(arrays)} tensors "
          f"({args.dtype}), and config.json")
    return 0


def main(argv=None):
    import numpy as np

    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["export-hf"]:
        return _export_main(argv[1:])
    if len(argv) != 1:
        print("usage: python3 -m braid.checkpoint DIR\n"
              "       python3 -m braid.checkpoint export-hf CKPT OUT --config HF "
              "[--dtype f32|bf16|f16]", file=sys.stderr)
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
