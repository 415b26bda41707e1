"""braid.serve: continuous batching over a paged KV cache, from Python (issue 43).

    out = braid.serve("llama-tiny", [{"prompt": [5, 9, 2], "max_new_tokens": 4},
                                     {"prompt_len": 6, "temperature": 0.8, "seed": 3}])
    out[0].ids, out[0].finish, out[0].ttft_ms     # per request, in order
    out.stats.tokens_per_s, out.stats.tpot_ms     # the run's summary

It runs what `braid-run MODEL --serve REQUESTS --output FILE` runs
(docs/serving.md) through the C API's braidServeModel: the requests go to a
JSON-lines file, each request's ids, finish reason and latencies come back
from the run's --output file, the summary from its "serve:" line. The
request fields are checked here before anything is compiled; what depends on
the model (a token outside the vocabulary, a prompt past the context, a
request that never fits the pool) is the runtime's to refuse.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import tempfile
from typing import Iterator, Mapping, Optional

from . import hf_weights
from .api import (BraidError, GenerateError, VerifyError, _backend, _message, _native,
                  _options, _parse, grid_text, model_text)
from .errors import ArgumentError, ArgumentTypeError, PathNotFoundError, did_you_mean
from .options import Grid, api_function, boolean, integer as _integer, real as _real


@dataclasses.dataclass
class RequestOutput:
    """One served request (vLLM's RequestOutput, kept small)."""
    index: int                      # its place in the requests, from 0
    ids: list                       # the generated token ids
    finish: str                     # "length" (max_new_tokens) or "end_token"
    ttft_ms: float                  # time to first token, from its arrival
    tpot_ms: float                  # mean time per output token after the first


@dataclasses.dataclass
class ServeStats:
    """The run's summary line ("serve: ..."); latencies are (median, p90, p99)."""
    requests: int
    refused: int
    requests_per_s: float
    tokens_per_s: float             # output tokens
    ttft_ms: tuple
    tpot_ms: tuple
    pages_peak: int                 # most pages of a pool in use at once
    pages: int                      # a pool's pages (each dp replica has its own)
    preemptions: int
    shared_pages: int
    iterations: int
    replicas: int = 1               # dp replicas, each with its pool and scheduler


@dataclasses.dataclass
class ServeResult:
    """What `serve` brought back: a sequence of RequestOutput, one per request
    in order (None for a refused one), with the summary in `.stats`."""
    outputs: list
    stats: Optional[ServeStats]
    verified: Optional[bool]        # verify's verdict (None: not asked)
    stdout: str
    stderr: str

    def __len__(self) -> int:
        return len(self.outputs)

    def __getitem__(self, index):
        return self.outputs[index]

    def __iter__(self) -> Iterator[Optional[RequestOutput]]:
        return iter(self.outputs)

    @property
    def ids(self) -> list:
        """Each request's ids (None for a refused one), as `generate` returns them."""
        return [o.ids if o else None for o in self.outputs]


_NUMBER = r"(\S+?)"
_SUMMARY = re.compile(
    r"serve: (\d+) requests \((\d+) refused\), {n} requests/s, {n} output tokens/s, "
    r"ttft median/p90/p99 {n}/{n}/{n} ms, tpot median/p90/p99 {n}/{n}/{n} ms, "
    r"pages peak (\d+) of (\d+)(?: \(of a replica; (\d+) replicas\))?, preemptions (\d+), "
    r"shared pages (\d+), iterations (\d+)".format(n=_NUMBER))


def parse_summary(stdout: str) -> Optional[ServeStats]:
    """The ServeStats of a serving run's "serve:" line (None when it has none)."""
    m = _SUMMARY.search(stdout)
    if not m:
        return None
    g = m.groups()
    return ServeStats(int(g[0]), int(g[1]), float(g[2]), float(g[3]),
                      tuple(map(float, g[4:7])), tuple(map(float, g[7:10])),
                      int(g[10]), int(g[11]), *map(int, g[13:16]), replicas=int(g[12] or 1))


def parse_outputs(text: str, count: int) -> tuple[list, dict]:
    """(RequestOutput per request, {index: reason} of the refused) from the
    JSON lines of a serving run's --output file."""
    outputs: list = [None] * count
    refused: dict = {}
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # blank, or the last line of a run that was killed
        index = record["request"]
        if not 0 <= index < count:
            continue
        if "refused" in record:
            refused[index] = record["refused"]
        else:
            outputs[index] = RequestOutput(index, record["ids"], record["finish"],
                                           record["ttft_ms"], record["tpot_ms"])
    return outputs, refused


# ---------------------------------------------------------------------------
# Checking the arguments
# ---------------------------------------------------------------------------

def _prompt(value, what: str) -> list:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise ArgumentTypeError(f"{what} must be a list of token ids, found {value!r}")
    return [_integer(t, f"{what}[{j}]", 0) for j, t in enumerate(value)]


# A request's fields: how each is checked (the runtime's ranges, serve_requests.cpp).
_FIELDS = {
    "prompt": _prompt,
    "prompt_len": lambda v, w: _integer(v, w, 0),
    "max_new_tokens": lambda v, w: _integer(v, w, 1),
    "temperature": lambda v, w: _real(v, w, 0.0),
    "top_k": lambda v, w: _integer(v, w, 0),
    "top_p": lambda v, w: _real(v, w, 0.0, 1.0, open_low=True),
    "seed": lambda v, w: _integer(v, w, 0),
    "arrival_ms": lambda v, w: _real(v, w, 0.0),
}


def request_lines(requests) -> list:
    """The JSON line of each request (a mapping of the fields above), checked."""
    lines = []
    for i, request in enumerate(requests):
        if not isinstance(request, Mapping):
            raise ArgumentTypeError(f"request {i} must be a dict of request fields, found "
                                    f"{type(request).__name__}")
        unknown = [k for k in request if k not in _FIELDS]
        if unknown:
            raise ArgumentError(f"request {i}: unknown field {unknown[0]!r}"
                                f"{did_you_mean(str(unknown[0]), _FIELDS)} (the fields: "
                                f"{', '.join(_FIELDS)})")
        if ("prompt" in request) == ("prompt_len" in request):
            raise ArgumentError(f"request {i}: give one of 'prompt' (token ids) and "
                                "'prompt_len' (drawn ids)")
        record = {k: check(request[k], f"request {i}: {k}")
                  for k, check in _FIELDS.items() if k in request}
        lines.append(json.dumps(record))
    return lines


def _request_count(path: str) -> int:
    # The runtime skips blank lines (space, tab, CR) without counting them.
    try:
        with open(path, newline="") as f:
            return sum(1 for line in f.read().split("\n") if line.strip(" \t\r"))
    except (OSError, UnicodeDecodeError) as e:
        raise ArgumentError(f"cannot read the requests file {path!r}: "
                            f"{getattr(e, 'strerror', None) or e}") from None


def _optional(value, what: str, low: int) -> int:
    """0 (the C API's default) for None, else a checked integer."""
    return 0 if value is None else _integer(value, what, low)


def _serve_options(native, **values):
    serve = native.ServeOptions()
    for name, value in values.items():
        setattr(serve, name, value)
    return serve


# ---------------------------------------------------------------------------
# serve
# ---------------------------------------------------------------------------

@api_function()
def serve(model, requests, *, max_new_tokens: int = 16, grid: Grid = "",
          batch: Optional[int] = None, context: Optional[int] = None,
          page_size: int = 16, kv_pages: Optional[int] = None,
          prefill_chunk: Optional[int] = None, prefill_batch: int = 1,
          temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0,
          seed: Optional[int] = None, end_token: Optional[int] = None,
          static_batching: bool = False, token_budget: Optional[int] = None,
          verify: bool = False,
          backend: str = "cpu", quiet: bool = True, init_from=None,
          **options) -> ServeResult:
    """Serves `requests` with continuous batching and chunked prefill over a
    paged KV cache, as `braid-run MODEL --serve FILE` does (docs/serving.md);
    returns a ServeResult: one RequestOutput per request in order (`.ids`,
    `.finish`, `.ttft_ms`, `.tpot_ms`) and the run's summary in `.stats`.

    `requests` is a list of dicts with the JSON-lines fields (`prompt`: token
    ids, or `prompt_len`: ids drawn from the seed; `max_new_tokens`,
    `temperature`, `top_k`, `top_p`, `seed`, `arrival_ms`), or the path of
    such a file. A request's missing fields take this call's
    `max_new_tokens`, `temperature`, `top_k`, `top_p`, its seed `seed` + its
    index (so its ids equal `generate`'s for the same prompt at the same
    index), its arrival 0. `batch` is the decode rows (default: the model's
    batch), `context` the positions per sequence (default: its sequence
    length), `page_size` the positions per page, `kv_pages` the pool's pages
    (default: every row may hold a whole context), `prefill_chunk` the prompt
    tokens per prefill call (default: the context, at most 512),
    `prefill_batch` the chunks per iteration; `end_token` ends a request at
    that id; `static_batching` admits requests in waves of `batch` that start
    when the last has ended (the baseline continuous batching is measured
    against); `token_budget` runs each iteration's decode rows and prompt
    chunks as one call of at most that many token rows (more than `batch`;
    default: `batch` + `prefill_chunk` for a model without Mamba layers; 0:
    prefill and decode calls apart). `grid` (one that serving runs on, docs/serving.md) and the
    other keyword arguments are the pipeline's (dtype="bf16"). `verify`:
    every request's ids and logits against itself generated alone on one
    rank (VerifyError when they differ). `init_from`: the weights (a weights
    map, or a Hugging Face directory when `model` is its braid.from_hf
    config), else the seed's.

    A field or argument that is unknown or of the wrong type or range raises
    ArgumentError (also a ValueError; ArgumentTypeError, also a TypeError, for
    a wrong type) naming the request or the argument before anything runs; a
    missing requests file, PathNotFoundError. A request the model
    cannot take (a token outside the vocabulary, a prompt that does not fit
    the context with its output, more pages than the pool holds) raises
    GenerateError naming it; the others were served: the error's `.result`
    holds them (`.ids`, `.refused` as `generate`'s). Raises BraidError when
    the model cannot be compiled or run."""
    checked = dict(
        max_new_tokens=_integer(max_new_tokens, "max_new_tokens", 1),
        batch=_optional(batch, "batch", 1),
        context=_optional(context, "context", 1),
        page_size=_integer(page_size, "page_size", 1),
        kv_pages=_optional(kv_pages, "kv_pages", 1),
        prefill_chunk=_optional(prefill_chunk, "prefill_chunk", 1),
        prefill_batch=_integer(prefill_batch, "prefill_batch", 1),
        temperature=_real(temperature, "temperature", 0.0),
        top_k=_integer(top_k, "top_k", 0),
        top_p=_real(top_p, "top_p", 0.0, 1.0, open_low=True),
        end_token=-1 if end_token is None else _integer(end_token, "end_token", 0),
        static_batching=boolean(static_batching, "static_batching"),
        token_budget=-1 if token_budget is None else _integer(token_budget, "token_budget", 0))
    seed = -1 if seed is None else _integer(seed, "seed", 0)
    backend = _backend(backend, "backend")
    verify, quiet = boolean(verify, "verify"), boolean(quiet, "quiet")
    if isinstance(requests, (str, os.PathLike)):
        requests_file = os.fspath(requests)
        if not os.path.isfile(requests_file):
            raise PathNotFoundError(f"no requests file {requests_file!r}", requests_file)
        lines, count = None, _request_count(requests_file)
    else:
        if isinstance(requests, (bytes, Mapping)) or not hasattr(requests, "__iter__"):
            raise ArgumentTypeError("requests must be a list of dicts or the path of a "
                                    f"JSON-lines file, found {type(requests).__name__}")
        lines = request_lines(requests)
        count = len(lines)
    if count == 0:
        return ServeResult([], None, None, "", "")

    text, name = model_text(model)
    opts = _options(grid_text(grid), options)
    module = _parse(text, name)
    scratch = tempfile.mkdtemp(prefix="braid-serve-")
    try:
        weights = hf_weights.map_for_run(model, init_from, scratch)
        if lines is not None:
            requests_file = os.path.join(scratch, "requests.jsonl")
            with open(requests_file, "w") as f:
                f.write("".join(line + "\n" for line in lines))
        output_file = os.path.join(scratch, "output.jsonl")
        serve_options = _serve_options(_native(), requests_file=requests_file,
                                       output_file=output_file, **checked)
        rc, out, err = module.serve(opts, serve_options, bool(verify), backend, seed,
                                    bool(quiet), init_from=weights)
        written = ""
        if os.path.exists(output_file):
            with open(output_file) as f:
                written = f.read()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return _result(rc, out, err, written, count, bool(verify))


def _result(rc: int, out: str, err: str, written: str, count: int,
            verify: bool) -> ServeResult:
    """The ServeResult of a run, or the exception its exit code and output say."""
    outputs, refused = parse_outputs(written, count)
    verified = None
    if verify:
        verified = rc in (0, 2) and "verify: FAIL" not in out
    result = ServeResult(outputs, parse_summary(out), verified, out, err)
    if rc == 1 and verify and "verify: FAIL" in out:
        report = "\n".join(l for l in out.splitlines() if l.startswith("verify: FAIL"))
        raise VerifyError(report, result)
    if refused:
        names = "; ".join(f"request {i}: {why}" for i, why in sorted(refused.items()))
        error = GenerateError(f"serve refused {len(refused)} of {count} requests: {names}",
                              result.ids, refused)
        error.result = result
        raise error
    if rc != 0 or any(o is None for o in outputs):
        raise BraidError(_message(err, f"serving failed (exit code {rc})"))
    return result
