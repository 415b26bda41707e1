"""Braid: the pure-Python model builder of the braid MLIR compiler.

`braid.ir` emits the textual IR of the `braid` dialect; `braid.config` holds
`ModelConfig`, `braid.families` the model families, `braid.presets` the
published presets and `braid.hf` the models of Hugging Face configurations
(`braid.from_hf(path)`); `braid.models` is the command line
(`python3 -m braid.models NAME [...] > model.mlir`) and re-exports all of them.

`braid.compile`, `braid.run`, `braid.generate`, `braid.visualize_sharding`
(braid.api), `braid.serve` (braid.serving) and the SVG pictures `braid.pipeline_schedule_svg`,
`braid.trace_svg` (braid.svg) use the compiler through its C API; they take a
preset name, a path (pathlib.Path or a string ending in .mlir), a braid.Module
(`braid.Module.parse(text)` for MLIR text) or a ModelConfig, their options as
keyword arguments (braid.options) and raise braid.BraidError (braid.errors) on
any failure. They need the extension `braid._braid`, built by Braid's CMake
build into <build>/python/braid (found through $BRAID_BUILD_DIR, else ../build
next to this folder) or installed by `pip install ./python`.
"""

import os as _os


def _extension_dirs():
    # Braid's build puts _braid into <build>/python/braid: this package spans
    # that folder too, so that PYTHONPATH=python finds the bindings.
    here = _os.path.dirname(_os.path.abspath(__file__))
    builds = [_os.environ.get("BRAID_BUILD_DIR", ""),
              _os.path.join(here, "..", "..", "build")]
    for build in filter(None, builds):
        d = _os.path.join(build, "python", "braid")
        if _os.path.isdir(d):
            yield _os.path.normpath(d)


__path__ = list(__path__) + [d for d in _extension_dirs() if d not in __path__][:1]

from .ir import (FLOAT_DTYPES, INDEX_DTYPE, IRError, Function, Init, Module, ONES, Param,
                 TensorType, Value, ZEROS, format_attr, format_float, normal, tensor)

# name -> submodule that defines it
_MODEL_NAMES = {"ModelConfig": "config", "config_from_attrs": "config",
                "FAMILIES": "families", "build_model": "families",
                "PRESETS": "presets", "build": "presets", "preset": "presets",
                "from_hf": "hf", "config_from_hf": "hf", "UnsupportedConfigError": "hf"}
# name -> submodule of the API over the C API (these need braid._braid, the
# exceptions and options do not)
_API_NAMES = {"compile": "api", "run": "api", "visualize_sharding": "api",
              "generate": "api", "BraidError": "errors", "ArgumentError": "errors",
              "ArgumentTypeError": "errors", "PathNotFoundError": "errors",
              "DependencyError": "errors", "VerifyError": "api",
              "GenerateError": "api", "PIPELINE_OPTIONS": "options", "CompileResult": "api",
              "RunResult": "api", "TensorSharding": "api",
              "serve": "serving", "ServeResult": "serving",
              "RequestOutput": "serving", "ServeStats": "serving",
              "pipeline_schedule_svg": "svg", "trace_svg": "svg", "TextOutput": "text"}


def _version():
    # The compiler's version (braidGetVersion, what the tools' --version
    # prints); without the extension, the installed package's.
    try:
        from ._braid import version
        return version()
    except ImportError:
        pass
    import importlib.metadata
    try:
        return importlib.metadata.version("braid")
    except importlib.metadata.PackageNotFoundError:
        raise AttributeError("braid.__version__ needs braid._braid (Braid's build, or "
                             "pip install ./python)") from None


def __getattr__(name):
    # The model modules are imported lazily, so that `import braid` stays cheap
    # and `python3 -m braid.models` never finds braid.models already imported
    # (runpy warns about that).
    if name == "__version__":
        return _version()
    module = _MODEL_NAMES.get(name) or _API_NAMES.get(name)
    if module:
        import importlib
        return getattr(importlib.import_module(f".{module}", __name__), name)
    raise AttributeError(f"module 'braid' has no attribute {name!r}")
