"""Braid: the pure-Python model builder of the braid MLIR compiler.

`braid.ir` emits the textual IR of the `braid` dialect; `braid.config` holds
`ModelConfig`, `braid.families` the model families and `braid.presets` the
published presets; `braid.models` is the command line
(`python3 -m braid.models NAME [...] > model.mlir`) and re-exports all of them.
"""

from .ir import (FLOAT_DTYPES, INDEX_DTYPE, IRError, Function, Init, Module, ONES, Param,
                 TensorType, Value, ZEROS, format_attr, format_float, normal, tensor)

# name -> submodule that defines it
_MODEL_NAMES = {"ModelConfig": "config", "config_from_attrs": "config",
                "FAMILIES": "families", "build_model": "families",
                "PRESETS": "presets", "build": "presets", "preset": "presets"}


def __getattr__(name):
    # The model modules are imported lazily, so that `import braid` stays cheap
    # and `python3 -m braid.models` never finds braid.models already imported
    # (runpy warns about that).
    if name in _MODEL_NAMES:
        import importlib
        return getattr(importlib.import_module(f".{_MODEL_NAMES[name]}", __name__), name)
    raise AttributeError(f"module 'braid' has no attribute {name!r}")
