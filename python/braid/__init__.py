"""Braid: the pure-Python model builder of the braid MLIR compiler.

`braid.ir` emits the textual IR of the `braid` dialect; `braid.models` holds the
model families, the published presets and the command line
(`python3 -m braid.models NAME [...] > model.mlir`).
"""

from .ir import (FLOAT_DTYPES, INDEX_DTYPE, IRError, Function, Init, Module, ONES, Param,
                 TensorType, Value, ZEROS, format_attr, format_float, normal, tensor)

_MODEL_NAMES = ("ModelConfig", "PRESETS", "FAMILIES", "build", "build_model", "preset",
                "config_from_attrs")


def __getattr__(name):
    # braid.models is imported lazily so that `python3 -m braid.models` does not
    # find it already imported (runpy warns about that).
    if name in _MODEL_NAMES:
        from . import models
        return getattr(models, name)
    raise AttributeError(f"module 'braid' has no attribute {name!r}")
