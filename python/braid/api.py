"""Braid as a Python backend: compile, run and inspect a model through the C API.

    import braid
    r = braid.compile("llama-tiny", grid="dp=2,tp=2", sequence_parallel=True)
    print(r.plan)                    # what braid-opt --braid-print-plan prints
    out = braid.run("llama-tiny", grid="dp=2", steps=2, verify=True, dump=True)
    out.losses, out.dumps["logits"].shape
    braid.visualize_sharding("llama-tiny", grid="dp=2,tp=2", tensors=["output"])
    ids = braid.generate("llama-tiny", [[5, 9, 2], [7]], max_new_tokens=4)

A model is a preset name (`braid.PRESETS`), a path (a `pathlib.Path`, or a
string ending in `.mlir`), a builder `braid.Module` or `braid.ModelConfig`, or
MLIR text through `braid.Module.parse(text)`: any other string is an error
naming what it tried. The training pipeline's options (braid-opt's
`--braid-training-pipeline="..."`, braid-run's flags) are keyword arguments in
snake_case, listed with their types and defaults in each function's signature
(braid.options): `zero=1`, `microbatches=4`, `dtype="bf16"`. Every failure is a
BraidError (braid.errors). The native part is `braid._braid` (nanobind over
include/braid-c); only the functions here need it, the builder does not.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import re
import shutil
import tempfile
from typing import Iterable, Mapping, Optional, Sequence

from . import hf_weights
from . import text as text_io
from .errors import (ArgumentError, ArgumentTypeError, BraidError, DependencyError,
                     PathNotFoundError, did_you_mean)
from .options import (Grid, api_function, boolean, choice, grid_text, integer, optional, path,
                      pipeline_text, real, string)

__all__ = ["compile", "run", "generate", "visualize_sharding", "BraidError", "ArgumentError",
           "VerifyError", "GenerateError", "CompileResult", "RunResult", "TensorSharding"]


class VerifyError(BraidError):
    """`run(..., verify=True)` found the runs different; `.result` holds them."""

    def __init__(self, message: str, result: "RunResult"):
        super().__init__(message)
        self.result = result


def _native():
    try:
        from . import _braid
    except ImportError as e:
        raise DependencyError(
            "braid._braid (the bindings over Braid's C API) is not built: build Braid "
            "with nanobind importable (tools/braid-dev setup), or `pip install ./python` "
            f"(see README.md, 'Using it'); {e}") from e
    return _braid


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------

_MODEL_KINDS = ("a preset name (braid.PRESETS), a path (pathlib.Path or a string ending in "
               "'.mlir'), a braid.Module, a braid.ModelConfig, or MLIR text through "
               "braid.Module.parse(text)")


def model_text(model) -> tuple[str, str]:
    """(MLIR text, name for diagnostics) of anything `compile` accepts."""
    from . import ir
    if isinstance(model, ir.Module):
        return model.render(), getattr(model, "source_name", "model.mlir")
    from .config import ModelConfig
    if isinstance(model, ModelConfig):
        from .families import build_model
        return build_model(model).render(), f"{model.name or 'model'}.mlir"
    if isinstance(model, os.PathLike):
        return _read_model(os.fspath(model))
    if isinstance(model, str):
        from .presets import PRESETS, build
        if model in PRESETS:
            return build(model), f"{model}.mlir"
        if model.endswith(".mlir"):
            return _read_model(model)
        raise ArgumentError(_not_a_model(model, PRESETS))
    raise ArgumentTypeError(f"model must be {_MODEL_KINDS}; found {type(model).__name__}")



def _read_model(file: str) -> tuple[str, str]:
    try:
        with open(file) as f:
            return f.read(), file
    except FileNotFoundError:
        raise PathNotFoundError(f"model file {file!r} does not exist (read as a path: a "
                                "pathlib.Path or a string ending in '.mlir')", file) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ArgumentError(f"cannot read the model file {file!r}: "
                            f"{getattr(e, 'strerror', None) or e}") from None


def _not_a_model(model: str, presets) -> str:
    """What a string that is neither a preset nor a .mlir path was taken for."""
    if "\n" in model or "{" in model or model.lstrip().startswith(("module", "func.func")):
        return ("the model string is not a preset name nor a path ending in '.mlir'; it "
                "looks like MLIR text, which the API takes as braid.Module.parse(text)")
    text = (f"unknown model {model!r}: not a preset{did_you_mean(model, presets)} "
            "(braid.PRESETS, python3 -m braid.models --list), and not a path (a "
            "pathlib.Path or a string ending in '.mlir')")
    if os.path.isfile(model):
        text += f"; to read the file {model!r}, pass pathlib.Path({model!r})"
    return text + "; MLIR text goes through braid.Module.parse(text)"


def _options(grid, options: Mapping):
    """The native pipeline options of `grid` and PIPELINE_OPTIONS by keyword."""
    text = pipeline_text(grid, **options)
    native = _native()
    opts = native.PipelineOptions()
    ok, err = opts.parse(text)
    if not ok:
        raise BraidError(_message(err, f"bad pipeline options '{text}'"))
    return opts


def _message(stderr: str, fallback: str) -> str:
    # The first lines carry the message; MLIR's notes after it can print whole
    # functions ("see current operation").
    lines = [l for l in stderr.strip().splitlines() if l.strip()]
    cut = next((i for i, l in enumerate(lines) if "note: see current operation" in l),
               len(lines))
    text = "\n".join(lines[:cut]).strip()
    return text or fallback


def _parse(text: str, name: str):
    native = _native()
    module = native.Module()
    ok, err = module.parse(text, name)
    if not ok:
        raise BraidError(_message(err, f"cannot parse {name}"))
    return module


# ---------------------------------------------------------------------------
# The plan's shardings
# ---------------------------------------------------------------------------

@dataclasses.dataclass
class TensorSharding:
    """One line of the plan: a tensor's global shape, the grid axes splitting
    each dimension (outermost first) and its shape on every rank."""
    kind: str                       # "param", "state" or "boundary"
    name: str
    global_shape: tuple
    dims: tuple                     # per dimension: a tuple of axis names
    local_shape: tuple

    def shard(self, coords: Mapping[str, int], grid: Mapping[str, int]) -> tuple:
        """The slice (start, stop) per dimension that the rank at `coords` holds."""
        out = []
        for size, local, axes in zip(self.global_shape, self.local_shape, self.dims):
            index = 0
            for a in axes:
                index = index * grid[a] + coords[a]
            start = min(index * local, size)
            out.append((start, min(start + local, size)))
        return tuple(out)


_PLAN_GRID = re.compile(r"^plan: grid (\S+) \((\d+) ranks?\)")
_PLAN_TENSOR = re.compile(
    r"^(param|state|boundary) (.+?): (\S*) (?:\[(.*?)\]|replicated) -> (\S*)")


def _shape(text: str) -> tuple:
    return tuple(int(d) for d in text.split("x")) if text else ()


def parse_grid(text: str) -> dict:
    """`dp=2,tp=2` -> {"dp": 2, "tp": 2} (the order is the ranks' order)."""
    grid = {}
    for part in filter(None, text.split(",")):
        axis, _, size = part.partition("=")
        grid[axis.strip()] = int(size)
    return grid


def parse_plan(plan: str) -> tuple[dict, dict]:
    """(grid, {name: TensorSharding}) from --braid-print-plan's report."""
    grid: dict = {}
    tensors: dict = {}
    for line in plan.splitlines():
        m = _PLAN_GRID.match(line)
        if m:
            grid = parse_grid(m.group(1))
            continue
        m = _PLAN_TENSOR.match(line)
        if not m:
            continue
        kind, name, shape, dims, local = m.groups()
        shape = _shape(shape)
        if dims is None:
            axes = tuple(() for _ in shape)
        else:
            axes = tuple(() if d.strip() in ("-", "") else
                         tuple(a.strip() for a in d.split(","))
                         for d in re.split(r",\s+", dims))
        tensors[name] = TensorSharding(kind, name, shape, axes, _shape(local))
    return grid, tensors


# ---------------------------------------------------------------------------
# compile
# ---------------------------------------------------------------------------

@dataclasses.dataclass
class CompileResult:
    """What `compile` made of a model."""
    options: str                    # the pipeline's option text
    ir: str                         # the partitioned, lowered module
    plan: str                       # --braid-print-plan's report
    programs: dict                  # step function -> its C++ (one per pp stage)
    grid: dict                      # axis -> size, as the plan names them
    shardings: dict                 # tensor name -> TensorSharding
    log: str = ""                   # what the C API printed on stderr

    @property
    def cpp(self) -> str:
        """The C++ of the (first) program."""
        return next(iter(self.programs.values()), "")

    def __str__(self) -> str:
        return self.plan


def _backend(value, what: str) -> str:
    # lib/Driver/Build.cpp's backends.
    return choice(value, what, ("cpu", "cuda", "cudasim"))


@api_function(emit_cpp=boolean, roll_repeats=boolean, plan_options=string)
def compile(model, grid: Grid = "", *, emit_cpp: bool = True, roll_repeats: bool = True,
            plan_options: str = "", **options) -> CompileResult:
    """Lowers `model` with the training pipeline on `grid` ("dp=2,tp=2" or
    {"dp": 2, "tp": 2}; "" for one rank); returns the partitioned IR, the plan
    and the emitted C++ (`emit_cpp`; `roll_repeats` keeps a model's repeated
    layers a loop). `plan_options` are --braid-print-plan's
    ("hardware=h200-sxm"). `model`: a preset name, a path (pathlib.Path or a
    string ending in .mlir), a braid.Module (braid.Module.parse(text) for MLIR
    text) or a braid.ModelConfig. Raises BraidError."""
    text, name = model_text(model)
    grid = grid_text(grid)
    opts = _options(grid, options)
    module = _parse(text, name)
    ok, _, err = module.lower(opts)
    log = err
    if not ok:
        raise BraidError(_message(err, "the training pipeline failed"))
    ir_text = module.str()
    ok, plan, err = module.print_plan(plan_options)
    log += err
    if not ok:
        raise BraidError(_message(err, "--braid-print-plan failed"))
    programs = {}
    if emit_cpp:
        for program in module.programs():
            ok, source, err = module.emit_cpp(program, roll_repeats)
            log += err
            if not ok:
                raise BraidError(_message(err, f"cannot emit the program @{program}"))
            programs[program] = source
    plan_grid, shardings = parse_plan(plan)
    return CompileResult(str(opts), ir_text, plan, programs,
                         plan_grid or parse_grid(grid), shardings, log)


# ---------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------

_STEP_LOSS = re.compile(r"\bstep (\d+) loss (\S+)")


@dataclasses.dataclass
class RunResult:
    """What `run` brought back."""
    losses: list                    # loss of step 1..steps
    dumps: dict                     # tensor name -> numpy array (dump=...)
    traces: list                    # trace files written (one per rank)
    verified: Optional[bool]        # verify's verdict (None: not asked)
    stdout: str
    stderr: str


def parse_losses(stdout: str) -> list:
    losses: dict = {}
    for m in _STEP_LOSS.finditer(stdout):
        losses.setdefault(int(m.group(1)), float(m.group(2)))
    return [losses[k] for k in sorted(losses)]


def load_dumps(directory: str) -> dict:
    """Every .npy the runtime dumped into `directory` (not its subfolders)."""
    import numpy as np
    return {os.path.basename(p)[:-4]: np.load(p)
            for p in sorted(glob.glob(os.path.join(glob.escape(directory), "*.npy")))}


def _dump(value, what: str):
    return bool(value) if value is None or isinstance(value, bool) else path(value, what)


@api_function(steps=lambda v, w: integer(v, w, 1), verify=boolean,
              verify_tolerance=lambda v, w: real(v, w, 0.0), dump=_dump,
              trace=optional(path), seed=optional(integer, 0), backend=_backend,
              quiet=boolean)
def run(model, grid: Grid = "", *, steps: int = 1, verify: bool = False,
        verify_tolerance: float = 1e-5, dump=False, trace=None,
        seed: Optional[int] = None, backend: str = "cpu", quiet: bool = True,
        init_from=None, data=None, **options) -> RunResult:
    """Compiles `model` for `grid`, builds it and trains `steps` steps on its
    CPU ranks (as braid-run does). `dump`: True (a temporary folder) or a
    folder: every named tensor comes back as a numpy array in `.dumps`.
    `trace`: a file for the Perfetto trace (one per rank with several).
    `verify`: also runs the 1-rank program and compares (VerifyError when they
    differ beyond `verify_tolerance`). `seed` (default: the model's) seeds
    the initialization and the data; `backend` is "cpu", "cuda" or
    "cudasim". `init_from`: the parameters start from these weights (a
    weights map, or a Hugging Face model directory when `model` is its
    braid.from_hf config; the optimizer starts fresh). `data`: the steps
    read their batches from this tokenized dataset (braid-run --data: .npy,
    uint16 .bin, Megatron .bin/.idx). Raises BraidError when a step fails."""
    text, name = model_text(model)
    grid = grid_text(grid)
    opts = _options(grid, options)
    module = _parse(text, name)
    dump_dir = ""
    trace_file = os.fspath(trace) if trace else ""
    data_file = "" if data is None else os.fspath(data)
    if data_file and not os.path.isfile(data_file):
        raise PathNotFoundError(f"no data file {data_file!r}", data_file)
    scratch = tempfile.mkdtemp(prefix="braid-run-")
    try:
        weights = hf_weights.map_for_run(model, init_from, scratch)
        try:
            if dump is True:
                dump_dir = os.path.join(scratch, "dump")
                os.makedirs(dump_dir)
            elif dump:
                dump_dir = os.fspath(dump)
                os.makedirs(dump_dir, exist_ok=True)
            if trace_file:
                os.makedirs(os.path.dirname(os.path.abspath(trace_file)), exist_ok=True)
                # Stale traces of an earlier run with more ranks would mislead.
                for old in _trace_files(trace_file):
                    os.remove(old)
        except OSError as e:
            raise BraidError(f"cannot prepare {e.filename!r} for the run's output: "
                             f"{e.strerror}") from None
        rc, out, err = module.run(opts, steps, verify, verify_tolerance, dump_dir,
                                  trace_file, backend, -1 if seed is None else seed, quiet,
                                  init_from=weights, data_file=data_file)
        dumps = load_dumps(dump_dir) if dump_dir and rc == 0 else {}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    verified = None
    if verify:
        verified = "verify: PASS" in out
    result = RunResult(parse_losses(out), dumps,
                       _trace_files(trace_file) if trace_file else [], verified, out, err)
    if rc != 0:
        if verify and "verify: FAIL" in out:
            report = "\n".join(l for l in out.splitlines() if l.startswith("verify:"))
            raise VerifyError(report, result)
        raise BraidError(_message(err, f"the run failed (exit code {rc})"))
    return result


def _trace_files(trace_file: str) -> list:
    if os.path.exists(trace_file):
        return [trace_file]
    stem, ext = os.path.splitext(trace_file)
    found = glob.glob(f"{glob.escape(stem)}.rank*{ext}")
    return sorted(found, key=lambda p: int(re.search(r"\.rank(\d+)", p).group(1)))


# ---------------------------------------------------------------------------
# generate
# ---------------------------------------------------------------------------

class GenerateError(BraidError, ValueError):
    """`generate` refused some prompts (too long for the context, a token id
    outside the vocabulary, empty). The others still ran: `.ids` holds every
    prompt's ids in order, None for a refused one; `.refused` maps a refused
    prompt's index to the reason; with a tokenizer, `.outputs` holds each
    prompt's TextOutput (None for a refused one), else it is None."""

    def __init__(self, message: str, ids: list, refused: dict,
                 outputs: Optional[list] = None):
        super().__init__(message)
        self.ids = ids
        self.refused = refused
        self.outputs = outputs


_REQUEST = re.compile(r"^request (\d+): (.*)$", re.M)


def parse_requests(stdout: str, count: int) -> tuple[list, dict]:
    """(ids per request, {index: reason} of the refused) from the "request R:"
    lines of a generation run (runtime/src/driver_generate.cpp)."""
    ids: list = [None] * count
    refused: dict = {}
    for m in _REQUEST.finditer(stdout):
        index, rest = int(m.group(1)), m.group(2).strip()
        if index >= count:
            continue
        if rest.startswith("refused:"):
            refused[index] = rest[len("refused:"):].strip()
        else:
            ids[index] = [int(t) for t in rest.split()]
    return ids, refused


def _prompt_list(prompts) -> list:
    if isinstance(prompts, (str, bytes)) or not hasattr(prompts, "__iter__"):
        raise ArgumentTypeError("prompts must be a list of prompts, each a list of token "
                                f"ids (or text, with a tokenizer); found "
                                f"{type(prompts).__name__}")
    return list(prompts)


def _prompt_lines(prompts) -> list:
    lines = []
    for i, prompt in enumerate(prompts):
        if isinstance(prompt, (str, bytes)):
            raise ArgumentTypeError(f"prompt {i} is text; generate takes token ids "
                                    "(a list of ints per prompt) unless a tokenizer is given")
        try:
            tokens = [int(t) for t in prompt]
        except (TypeError, ValueError) as e:
            raise ArgumentTypeError(f"prompt {i} is not a sequence of token ids: {e}") from None
        if any(int(t) != t for t in prompt):
            raise ArgumentTypeError(f"prompt {i} holds a token id that is not an integer")
        lines.append(" ".join(map(str, tokens)))
    return lines


@api_function(max_new_tokens=lambda v, w: integer(v, w, 1),
              temperature=lambda v, w: real(v, w, 0.0), top_k=lambda v, w: integer(v, w, 0),
              top_p=lambda v, w: real(v, w, 0.0, 1.0, open_low=True),
              seed=optional(integer, 0), batch=optional(integer, 1),
              context=optional(integer, 1), verify=boolean, backend=_backend, quiet=boolean)
def generate(model, prompts, max_new_tokens: int = 16, grid: Grid = "", *,
             temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0,
             seed: Optional[int] = None, batch: Optional[int] = None,
             context: Optional[int] = None, verify: bool = False,
             backend: str = "cpu", quiet: bool = True, tokenizer=None, init_from=None,
             **options) -> list:
    """Generates `max_new_tokens` token ids after each prompt (a list of
    token-id lists, of any lengths) with the model's prefill and decode
    programs, as `braid-run MODEL --generate N --prompts FILE` does; returns
    one list of ids per prompt, in order.

    Greedy unless `temperature` > 0; `top_k` (0: all) and `top_p` (1: all)
    narrow the sampling, drawn per prompt from `seed` so that a prompt's ids do
    not depend on the others. `batch` is the sequences per wave (default: the
    model's batch), `context` the KV cache rows per sequence (default: its
    sequence length); the prefill program takes the longest prompt. `grid`
    and the other keyword arguments are the pipeline's (dtype="bf16").
    `verify`: teacher forcing, every step's logits against the forward
    program's (VerifyError when they differ). `init_from`: the weights (as
    `run`'s), else the seed's.

    `tokenizer` (a directory holding a Hugging Face tokenizer.json, the
    file, or a tokenizers.Tokenizer; needs the `tokenizers` package): a
    prompt may then be text, encoded with the tokenizer's special tokens as
    Hugging Face encodes for generation, and each prompt's result is a
    TextOutput: `.text` the new tokens decoded without special tokens,
    `.ids` the new ids, `.prompt_ids` the encoded prompt. A tokenizer with
    more ids than the model's vocabulary, or a text encoding to an id past
    it, raises ArgumentError.

    A prompt the programs cannot take (empty, a token id outside the
    vocabulary, prompt + max_new_tokens - 1 past the context) raises
    GenerateError naming it, as vLLM refuses such a prompt with a ValueError;
    the other prompts still ran, their ids in the error's `.ids`. Raises
    BraidError when the model cannot be compiled or run (e.g. a grid the
    generation does not run on)."""
    prompts = _prompt_list(prompts)
    if tokenizer is not None:
        tokenizer = text_io.load_tokenizer(tokenizer)
    if not prompts:
        return []
    text, name = model_text(model)
    if tokenizer is not None:
        vocab = text_io.model_vocab(text)
        text_io.check_fits(tokenizer, vocab)
        prompts = [text_io.encode_one(tokenizer, p, i, vocab) if isinstance(p, str) else p
                   for i, p in enumerate(prompts)]
    lines = _prompt_lines(prompts)
    grid = grid_text(grid)
    opts = _options(grid, options)
    module = _parse(text, name)
    scratch = tempfile.mkdtemp(prefix="braid-generate-")
    try:
        weights = hf_weights.map_for_run(model, init_from, scratch)
        prompts_file = os.path.join(scratch, "prompts.txt")
        with open(prompts_file, "w") as f:
            f.write("".join(line + "\n" for line in lines))
        rc, out, err = module.generate(
            opts, max_new_tokens, prompts_file, batch or 0, context or 0,
            float(temperature), int(top_k), float(top_p), verify, backend,
            -1 if seed is None else seed, quiet, init_from=weights)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    ids, refused = parse_requests(out, len(lines))
    if rc == 1 and verify and "verify: FAIL" in out:
        report = "\n".join(l for l in out.splitlines() if l.startswith("verify: FAIL"))
        raise VerifyError(report, RunResult([], {}, [], False, out, err))
    outputs = None
    if tokenizer is not None:
        # Text is only a wrapper: the ids are those of the encoded prompts.
        outputs = [None if i is None else
                   text_io.TextOutput(text_io.decode(tokenizer, i), i, list(map(int, p)))
                   for i, p in zip(ids, prompts)]
    if refused:
        names = "; ".join(f"prompt {i}: {why}" for i, why in sorted(refused.items()))
        raise GenerateError(f"generate refused {len(refused)} of {len(lines)} prompts: "
                            f"{names}", ids, refused, outputs)
    if rc != 0 or any(i is None for i in ids):
        raise BraidError(_message(err, f"generation failed (exit code {rc})"))
    return ids if outputs is None else outputs


# ---------------------------------------------------------------------------
# visualize_sharding
# ---------------------------------------------------------------------------

def _ranks(grid: Mapping[str, int]) -> list:
    """Every rank's coordinates, row-major over the grid as the plan names it
    (its last axis varies fastest)."""
    coords = [{}]
    for axis, size in grid.items():
        coords = [dict(c, **{axis: i}) for c in coords for i in range(size)]
    return coords


def _fmt_shape(shape: Sequence[int]) -> str:
    return "x".join(map(str, shape)) if shape else "scalar"


def sharding_table(t: TensorSharding, grid: Mapping[str, int]) -> str:
    """The text table of one tensor: which axes split which dimension, and
    the slice and shape every rank holds."""
    spec = ", ".join("+".join(a) if a else "-" for a in t.dims)
    lines = [f"{t.kind} {t.name}: {_fmt_shape(t.global_shape)} [{spec}] on "
             f"{','.join(f'{a}={n}' for a, n in grid.items()) or '1 rank'}"]
    for d, (size, axes, local) in enumerate(zip(t.global_shape, t.dims, t.local_shape)):
        how = (f"split over {'x'.join(f'{a}({grid[a]})' for a in axes)}" if axes
               else "replicated")
        lines.append(f"  dim {d}: {size:>6} {how:<28} -> {local}")
    used = {a for axes in t.dims for a in axes}
    replicated = [a for a in grid if a not in used]
    if replicated:
        lines.append(f"  replicated over {','.join(replicated)}")
    header = ["rank", "coords", "shard", "slice"]
    rows = []
    for rank, coords in enumerate(_ranks(grid)):
        box = t.shard(coords, grid)
        rows.append([str(rank), ",".join(f"{a}={i}" for a, i in coords.items()),
                     _fmt_shape([b - a for a, b in box]),
                     "[" + ", ".join(f"{a}:{b}" for a, b in box) + "]"])
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    fmt = "  " + "  ".join(f"{{:<{w}}}" for w in widths)
    lines.append(fmt.format(*header).rstrip())
    lines += [fmt.format(*r).rstrip() for r in rows]
    return "\n".join(lines)


_KINDS = ("param", "state", "boundary")


def _names(value, what: str) -> list:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise ArgumentTypeError(f"{what} must be a list of names, found {value!r}")
    return [string(v, f"{what}[{i}]") for i, v in enumerate(value)]


def _kinds(value, what: str) -> list:
    return [choice(k, f"{what}[{i}]", _KINDS) for i, k in enumerate(_names(value, what))]


@api_function(tensors=optional(_names), kinds=_kinds)
def visualize_sharding(model, grid: Grid = "", *, tensors: Optional[Iterable[str]] = None,
                       kinds: Sequence[str] = ("param", "boundary"), file=None,
                       **options) -> str:
    """Prints (to `file`, default stdout; None-like False: not at all) a table
    per tensor of the plan: which mesh axes shard which dimension and each
    rank's shard, as jax.debug.visualize_array_sharding does for one array.
    `tensors` picks names (default: every tensor of `kinds`: "param", "state",
    "boundary"). Returns the text; a name the plan does not hold raises
    ArgumentError."""
    grid = grid_text(grid)
    result = compile(model, grid, emit_cpp=False, **options)
    if not result.shardings:
        # --braid-print-plan reports a pipelined plan per stage, without the
        # tensors' shardings.
        raise BraidError(f"the plan of grid '{grid}' lists no tensor shardings "
                         "(a pipelined plan's report has none)")
    if tensors is None:
        chosen = [t for t in result.shardings.values() if t.kind in kinds]
    else:
        chosen = []
        for name in tensors:
            if name not in result.shardings:
                names = list(result.shardings)
                raise ArgumentError(
                    f"no tensor {name!r} in the plan of grid '{grid}'"
                    f"{did_you_mean(name, names)} (it has {len(names)}: "
                    f"{', '.join(names[:8])}{', ...' if len(names) > 8 else ''})")
            chosen.append(result.shardings[name])
    text = "\n\n".join(sharding_table(t, result.grid) for t in chosen) + "\n"
    if file is not False:
        import sys
        print(text, end="", file=file or sys.stdout)
    return text
