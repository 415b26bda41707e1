"""The keyword arguments of Braid's Python API: checked, listed and documented.

`PIPELINE_OPTIONS` are the training pipeline's options (include/braid/Pipelines.h:
braid-opt's `--braid-training-pipeline="..."`, braid-run's flags) in snake_case,
with their types, defaults and accepted values. Python cannot read the C++
declarations when the bindings are not built, and `help(braid.compile)` must
show them regardless, so they are listed here once more;
python/tests/test_options.py holds this table to the native pipeline's (names,
defaults, accepted choices), so that the two cannot drift apart.

`api_function` gives each public function a signature with these options as
keyword-only parameters (what `help()` and `inspect.signature` show), checks
every argument before anything is compiled and turns an unknown keyword into
an ArgumentError listing the valid ones and the closest.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import numbers
import operator
import os
import textwrap
from typing import Any, Callable, Literal, Mapping, Optional, Sequence, Union

from .errors import ArgumentError, ArgumentTypeError, did_you_mean


# ---------------------------------------------------------------------------
# Checking one value
# ---------------------------------------------------------------------------

def integer(value, what: str, low: Optional[int] = None) -> int:
    """`value` as an int (not a bool), at least `low`."""
    if isinstance(value, bool):
        raise ArgumentTypeError(f"{what} must be an integer, found {value!r}")
    try:
        value = operator.index(value)
    except TypeError:
        raise ArgumentTypeError(f"{what} must be an integer, found {value!r}") from None
    if low is not None and value < low:
        raise ArgumentError(f"{what} must be >= {low}, found {value}")
    return value


def real(value, what: str, low: float = -math.inf, high: float = math.inf,
         open_low: bool = False) -> float:
    """`value` as a finite float in [low, high] ((low, high] with open_low)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(f"{what} must be a number, found {value!r}")
    value = float(value)
    if not math.isfinite(value) or value < low or value > high or (open_low and value == low):
        if open_low:
            bounds = f" in ({low:g}, {high:g}]"
        elif high < math.inf:
            bounds = f" in [{low:g}, {high:g}]"
        else:
            bounds = f" >= {low:g}" if low > -math.inf else ""
        raise ArgumentError(f"{what} must be a finite number{bounds}, found {value!r}")
    return value


def boolean(value, what: str) -> bool:
    """`value` as a bool: True or False (numpy's bool too), not 0 or "yes"."""
    numpy_bool = type(value).__module__ == "numpy" and type(value).__name__ in ("bool_", "bool")
    if isinstance(value, bool) or numpy_bool:
        return bool(value)
    raise ArgumentTypeError(f"{what} must be True or False, found {value!r}")


def string(value, what: str) -> str:
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{what} must be a string, found {value!r}")
    return value


def choice(value, what: str, choices: Sequence) -> Any:
    """`value` if it is one of `choices`, else an error listing them."""
    if isinstance(choices[0], int):
        value = integer(value, what)
    if isinstance(value, str) or isinstance(choices[0], int):
        if value in choices:
            return value
    listed = ", ".join(repr(c) for c in choices)
    hint = did_you_mean(value, map(str, choices)) if isinstance(value, str) else ""
    raise ArgumentError(f"{what} must be one of {listed}, found {value!r}{hint}")


def path(value, what: str) -> str:
    """A path argument (str or os.PathLike) as a str."""
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    raise ArgumentTypeError(f"{what} must be a path (str or os.PathLike), found {value!r}")


def optional(check: Callable, *args) -> Callable:
    """A check that lets None through (an argument whose None means "default")."""
    return lambda value, what: None if value is None else check(value, what, *args)


# ---------------------------------------------------------------------------
# The pipeline's options
# ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Option:
    """One option of the training pipeline, by its keyword (snake_case)."""
    name: str
    type: type                  # bool, int, float, str or tuple (a list of ints)
    default: Any
    doc: str
    choices: tuple = ()         # the accepted values, when it is a choice
    low: Optional[float] = None  # the least accepted value of a number

    @property
    def flag(self) -> str:
        """Its name in the pipeline's text (`microbatches`, `sequence-parallel`)."""
        return self.name.replace("_", "-")

    @property
    def annotation(self):
        if self.choices:
            return Literal[self.choices]
        return Sequence[int] if self.type is tuple else self.type

    def check(self, value):
        """`value` checked (None: the pipeline's default, passed on as None)."""
        if value is None:
            return None
        what = self.name
        if self.choices:
            return choice(value, what, self.choices)
        if self.type is bool:
            return boolean(value, what)
        if self.type is int:
            return integer(value, what, self.low)
        if self.type is float:
            return real(value, what, -math.inf if self.low is None else self.low)
        if self.type is str:
            return string(value, what)
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            raise ArgumentTypeError(f"{what} must be a list of integers, found {value!r}")
        return tuple(integer(v, f"{what}[{i}]", self.low) for i, v in enumerate(value))

    def text(self, value) -> str:
        """`value` in the pipeline's textual form."""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, tuple):
            return ",".join(map(str, value))
        return str(value)

    def describe(self) -> str:
        kind = (" | ".join(repr(c) for c in self.choices) if self.choices else
                "list of int" if self.type is tuple else self.type.__name__)
        doc = textwrap.fill(self.doc, 80, initial_indent="    ", subsequent_indent="    ")
        return f"{self.name}: {kind} = {self.default!r}\n{doc}"


def _options(*options: Option) -> dict:
    return {o.name: o for o in options}


# In the order of include/braid/Pipelines.h; the defaults are Passes.td's.
PIPELINE_OPTIONS: dict = _options(
    Option("dtype", str, "f32", "Float storage: f32 is the model as written; bf16 and f16 "
           "are mixed precision, with f32 master weights when training.",
           choices=("f32", "bf16", "f16")),
    Option("optimizer", str, "adamw", "The update rule; none keeps the forward step only.",
           choices=("adamw", "sgd", "none")),
    Option("recompute", str, "none", "Activation recompute in the backward pass.",
           choices=("none", "selective", "full")),
    Option("lr", float, 1e-3, "Learning rate.", low=0.0),
    Option("weight_decay", float, 0.1, "Decoupled weight decay.", low=0.0),
    Option("eps", float, 1e-8, "AdamW epsilon.", low=0.0),
    Option("max_norm", float, 1.0, "Global-norm gradient clipping (<= 0: off)."),
    Option("plan", str, "megatron", "How unannotated weights are sharded: megatron (tensor "
           "parallel over tp, vocabulary parallel, experts over ep) or data (replicated).",
           choices=("megatron", "data")),
    Option("zero", int, 0, "ZeRO stage over dp: 0, 1 (optimizer state), 2 (+ gradients), "
           "3 (+ parameters).", choices=(0, 1, 2, 3)),
    Option("sequence_parallel", bool, False,
           "Shard norms and residuals over tp along the sequence."),
    Option("cp_attention", str, "allgather", "Attention under a cp axis: keys and values "
           "gathered, all-to-all from sequence to heads (ulysses) or a ring.",
           choices=("allgather", "ulysses", "ring")),
    Option("cp_layout", str, "auto", "The sequence's cut over cp (zigzag balances causal "
           "attention; auto: zigzag where the model allows it).",
           choices=("auto", "contiguous", "zigzag")),
    Option("microbatches", int, 1, "Micro-batches per step: the batch is split into this "
           "many, whose gradients are accumulated before the optimizer step.", low=1),
    Option("schedule", str, "1f1b", "Pipeline schedule (with a pp axis).",
           choices=("gpipe", "1f1b", "interleaved", "zb-h1")),
    Option("virtual_stages", int, 1, "Model chunks per pipeline rank (interleaved 1F1B).",
           low=1),
    Option("pp_layout", tuple, (), "Layers per model chunk, e.g. (7, 8, 8, 7) (empty: "
           "balanced by cost, or the layers' braid.stage attributes).", low=0),
    Option("lower_to_dist", bool, True, "Lower every transfer to dist ops at the end."),
    Option("collective_matmul", str, "auto", "All-gathers before matrix products as rings "
           "of shifts and product chunks (auto: where the cost model predicts them faster).",
           choices=("auto", "always", "never")),
    Option("schedule_overlap", bool, True,
           "Start transfers early and wait for them late (--braid-schedule-overlap)."),
    Option("bucket_mb", float, 25.0,
           "MiB a bucket of gradient reductions closes at (0: no buckets).", low=0.0),
    Option("first_bucket_mb", float, 1.0, "MiB the first bucket of a function closes at.",
           low=0.0),
    Option("defer_param_gather", bool, True, "Gather ZeRO-1/2's updated parameters in the "
           "next step, before each one's first read."),
    Option("schedule_hardware", str, "h100-sxm", "Hardware the overlap scheduler times ops "
           "on: a name (lib/CostModel/hardware) or a .json file."),
    Option("record_layouts", bool, False, "Record each partitioned value's place in its "
           "global tensor, for global dumps of activations (run() turns it on)."),
    Option("gather_logits", bool, True, "Gather the inference programs' vocabulary-split "
           "logits at the return (False: each rank returns its block)."),
    Option("schedule_link", str, "", "Links per grid axis the overlap scheduler times "
           "transfers on instead, as BRAID_LINK gives them (tp:2us,20GB/s;dp:...)."),
)


# A grid argument: "dp=2,tp=2" or {"dp": 2, "tp": 2} ("" or None: one rank).
Grid = Union[str, Mapping[str, int], None]


def grid_text(grid) -> str:
    """A grid as the pipeline takes it: "dp=2,tp=2", or {"dp": 2, "tp": 2}."""
    if grid is None:
        return ""
    if isinstance(grid, str):
        return grid
    if isinstance(grid, Mapping):
        return ",".join(f"{string(axis, 'grid axis')}={integer(size, f'grid[{axis!r}]', 1)}"
                        for axis, size in grid.items())
    raise ArgumentTypeError('grid must be a string ("dp=2,tp=2") or a mapping '
                            f'({{"dp": 2, "tp": 2}}), found {grid!r}')


def pipeline_text(grid="", **options) -> str:
    """The training pipeline's option text: `grid=dp=2,tp=2 sequence-parallel=true`.
    `options` are PIPELINE_OPTIONS by keyword, checked; None ones are left out."""
    grid = grid_text(grid)
    parts = [f"grid={grid}"] if grid else []
    for key, value in options.items():
        option = PIPELINE_OPTIONS.get(key)
        if option is None:
            raise unknown_keyword("pipeline_text", key, PIPELINE_OPTIONS)
        value = option.check(value)
        if value is not None:
            parts.append(f"{option.flag}={option.text(value)}")
    return " ".join(parts)


# ---------------------------------------------------------------------------
# Signatures
# ---------------------------------------------------------------------------

def unknown_keyword(function: str, name: str, valid) -> ArgumentTypeError:
    """The error of a keyword `function` does not take: the closest and all valid ones."""
    valid = list(valid)
    return ArgumentTypeError(f"{function}() has no option {name!r}{did_you_mean(name, valid)} "
                             f"(its arguments: {', '.join(valid)})")


def options_doc() -> str:
    """The pipeline options' section of a docstring."""
    lines = ["Pipeline options (keyword arguments; braid-opt's --braid-training-pipeline",
             "and braid-run's flags, in snake_case; None: the default):"]
    lines += ["  " + o.describe().replace("\n", "\n  ") for o in PIPELINE_OPTIONS.values()]
    return "\n".join(lines)


def api_function(pipeline: bool = True, **checks: Callable) -> Callable:
    """Decorates a public function of the API: `checks` maps a parameter to
    its check (value, name) -> value; with `pipeline`, the function ends in
    `**options` and takes PIPELINE_OPTIONS there, shown in its signature and
    docstring and checked before it is called. Any other keyword, or an
    argument the signature cannot bind, raises ArgumentTypeError."""
    def wrap(fn: Callable) -> Callable:
        try:
            # The annotations as types, not strings (`from __future__ import
            # annotations`), so that help() shows them as the options' are.
            signature = inspect.signature(fn, eval_str=True)
        except (TypeError, NameError):  # Python 3.9 has no eval_str
            signature = inspect.signature(fn)
        params = [p for p in signature.parameters.values()
                  if p.kind is not inspect.Parameter.VAR_KEYWORD]
        if pipeline:
            params += [inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY,
                                         default=o.default, annotation=o.annotation)
                       for o in PIPELINE_OPTIONS.values()]
        public = signature.replace(parameters=params)
        keywords = [p.name for p in params if p.kind is not inspect.Parameter.POSITIONAL_ONLY]

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            for name in kwargs:
                if name not in public.parameters:
                    raise unknown_keyword(fn.__name__, name, keywords)
            try:
                bound = public.bind(*args, **kwargs)
            except TypeError as e:
                raise ArgumentTypeError(f"{fn.__name__}(): {e}") from None
            for name, check in checks.items():
                if name in bound.arguments:
                    bound.arguments[name] = check(bound.arguments[name], name)
            for name in list(bound.arguments):
                option = PIPELINE_OPTIONS.get(name) if pipeline else None
                if option is not None:
                    bound.arguments[name] = option.check(bound.arguments[name])
            return fn(*bound.args, **bound.kwargs)

        wrapper.__signature__ = public
        if pipeline:
            wrapper.__doc__ = inspect.cleandoc(fn.__doc__ or "") + "\n\n" + options_doc()
        return wrapper
    return wrap
