"""Pictures as SVG (no dependencies): a pipeline schedule and a run's trace.

- `pipeline_schedule_svg(model, pp=2, microbatches=4, schedule="1f1b")`: the
  simulated schedule of --braid-print-schedule, one row per pipeline stage,
  time to the right, one box per action (F: forward, B: backward, or with
  zb-h1 B: input gradient and W: weight gradient) labelled with its
  micro-batch.
- `trace_svg(run_result or trace files)`: the runtime's Perfetto traces
  (`braid.run(..., trace=FILE)`), one lane per rank's compute and per
  communication group, one box per event.

Each box is a `<rect class="box ...">`, so a picture's boxes can be counted.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from typing import Iterable, Optional, Sequence
from xml.sax.saxutils import escape

from .errors import ArgumentTypeError, BraidError, PathNotFoundError
from .options import PIPELINE_OPTIONS, api_function, boolean, choice, integer, optional
from .options import path as path_arg

_COLORS = {"F": "#4e79a7", "B": "#f28e2b", "W": "#59a14f", "comm": "#b07aa1",
           "wait": "#e15759", "kernel": "#76b7b2", "pipeline": "#edc948"}


def _svg(width: float, height: float, body: Sequence[str], title: str) -> str:
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" '
        f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'font-family="monospace" font-size="11">',
        f"<title>{escape(title)}</title>",
        f'<rect x="0" y="0" width="{width:.0f}" height="{height:.0f}" fill="white"/>',
        *body, "</svg>", ""])


def _write(text: str, file) -> str:
    if file:
        try:
            with open(file, "w") as f:
                f.write(text)
        except OSError as e:
            raise BraidError(f"cannot write {os.fspath(file)!r}: {e.strerror}") from None
    return text


def _timeline(lanes: Sequence[tuple], events: Sequence[dict], title: str,
              unit: str, width: float = 960, lane_height: float = 22,
              label_width: float = 130) -> str:
    """`lanes`: (key, label); `events`: dicts with lane, start, dur, kind,
    label, tooltip. Times in `unit`s, scaled to `width`."""
    t0 = min((e["start"] for e in events), default=0.0)
    t1 = max((e["start"] + e["dur"] for e in events), default=1.0)
    span = max(t1 - t0, 1e-9)
    plot = width - label_width - 10
    row = {key: i for i, (key, _) in enumerate(lanes)}
    top = 24
    body = [f'<text x="4" y="15">{escape(title)}</text>']
    for i, (_, label) in enumerate(lanes):
        y = top + i * lane_height
        body.append(f'<text x="4" y="{y + lane_height * 0.7:.1f}">{escape(label)}</text>')
        body.append(f'<line x1="{label_width}" y1="{y + lane_height:.1f}" x2="{width - 10}" '
                    f'y2="{y + lane_height:.1f}" stroke="#ddd"/>')
    for e in events:
        x = label_width + (e["start"] - t0) / span * plot
        w = max(e["dur"] / span * plot, 0.5)
        y = top + row[e["lane"]] * lane_height + 2
        color = _COLORS.get(e["kind"], "#999")
        body.append(
            f'<rect class="box {escape(e["kind"])}" x="{x:.2f}" y="{y:.1f}" width="{w:.2f}" '
            f'height="{lane_height - 4:.1f}" fill="{color}" stroke="white" stroke-width="0.5">'
            f'<title>{escape(e["tooltip"])}</title></rect>')
        if e.get("label") and w > 7 * len(e["label"]):
            body.append(f'<text x="{x + w / 2:.2f}" y="{y + lane_height * 0.6:.1f}" '
                        f'text-anchor="middle" fill="white">{escape(e["label"])}</text>')
    height = top + len(lanes) * lane_height + 22
    body.append(f'<text x="{label_width}" y="{height - 6:.0f}">0</text>')
    body.append(f'<text x="{width - 10}" y="{height - 6:.0f}" text-anchor="end">'
                f'{span:.4g} {escape(unit)}</text>')
    return _svg(width, height, body, title)


# ---------------------------------------------------------------------------
# The pipeline schedule
# ---------------------------------------------------------------------------

def schedule_events(model, pp: int, microbatches: int, schedule: str = "1f1b",
                    virtual_stages: int = 1, uniform: bool = False) -> tuple[list, str]:
    """(the simulated actions as trace events, the schedule's report) of
    --braid-print-schedule on `model`'s step function."""
    from .api import _message, _parse, model_text
    text, name = model_text(model)
    module = _parse(text, name)
    with tempfile.TemporaryDirectory(prefix="braid-schedule-") as tmp:
        trace = os.path.join(tmp, "schedule.json")
        options = (f"pp={pp} microbatches={microbatches} schedule={schedule} "
                   f"virtual-stages={virtual_stages} uniform={str(uniform).lower()} "
                   f"trace={trace}")
        ok, report, err = module.run_passes(f"builtin.module(braid-print-schedule{{{options}}})")
        if not ok:
            raise BraidError(_message(err, "--braid-print-schedule failed"))
        with open(trace) as f:
            doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return [e for e in events if e.get("ph") == "X"], report


def _positive(value, what: str) -> int:
    return integer(value, what, 1)


@api_function(pipeline=False, pp=_positive, microbatches=_positive,
              schedule=lambda v, w: choice(v, w, PIPELINE_OPTIONS["schedule"].choices),
              virtual_stages=_positive, uniform=boolean, path=optional(path_arg))
def pipeline_schedule_svg(model, pp: int = 2, microbatches: int = 4,
                          schedule: str = "1f1b", virtual_stages: int = 1,
                          uniform: bool = False, path=None) -> str:
    """The pipeline schedule as SVG: a row per stage (rank), a box per
    forward/backward of a micro-batch. Written to `path` when given."""
    events, report = schedule_events(model, pp, microbatches, schedule, virtual_stages,
                                     uniform)
    lanes = [(r, f"stage {r}") for r in sorted({int(e.get("tid", 0)) for e in events})]
    boxes = []
    for e in events:
        label = e.get("name", "")
        boxes.append({"lane": int(e.get("tid", 0)), "start": float(e["ts"]),
                      "dur": float(e.get("dur", 0)), "kind": label[:1] or "F",
                      "label": label, "tooltip": f"stage {e.get('tid', 0)}: {label}"})
    m = re.search(r"bubble_fraction: (\S+)", report)
    title = (f"{schedule}: pp={pp}, {microbatches} micro-batches"
             + (f", bubble {float(m.group(1)):.1%}" if m else ""))
    return _write(_timeline(lanes, boxes, title, "F"), path)


# ---------------------------------------------------------------------------
# A run's trace
# ---------------------------------------------------------------------------

def _trace_events(traces) -> list:
    if hasattr(traces, "traces"):       # a braid.RunResult
        traces = traces.traces
    if isinstance(traces, (str, os.PathLike)):
        traces = [traces]
    if not hasattr(traces, "__iter__"):
        raise ArgumentTypeError("traces must be a RunResult, a trace file or a list of "
                                f"them, found {type(traces).__name__}")
    events = []
    for file in traces:
        file = path_arg(file, "a trace file")
        try:
            with open(file) as f:
                doc = json.load(f)
            events += doc["traceEvents"] if isinstance(doc, dict) else doc
        except FileNotFoundError:
            raise PathNotFoundError(f"no trace file {file!r}", file) from None
        except (OSError, ValueError, KeyError) as e:
            raise BraidError(f"{file!r} is not a readable Perfetto trace: {e}") from None
    return events


def _steps(value, what: str) -> list:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise ArgumentTypeError(f"{what} must be a list of step numbers, found {value!r}")
    return [integer(v, f"{what}[{i}]", 0) for i, v in enumerate(value)]


@api_function(pipeline=False, path=optional(path_arg), steps=optional(_steps))
def trace_svg(traces, path=None, steps: Optional[Iterable[int]] = None) -> str:
    """A run's traces (a RunResult, a file or files) as SVG: per rank a compute
    lane (kernels, waits for transfers) and a lane per communication group.
    `steps` keeps the events of those steps (default: all, initialization is
    step 0)."""
    events = _trace_events(traces)
    names = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    keep = set(steps) if steps is not None else None
    boxes = []
    for e in events:
        if e.get("ph") != "X":
            continue
        step = e.get("args", {}).get("step")
        if keep is not None and step not in keep:
            continue
        cat = e.get("cat", "kernel")
        kind = "pipeline" if e.get("name") == "pipeline" else cat
        label = e.get("args", {}).get("label") or e.get("name", "")
        boxes.append({"lane": (e["pid"], e["tid"]), "start": float(e["ts"]),
                      "dur": float(e.get("dur", 0)), "kind": kind, "label": "",
                      "tooltip": f"{e.get('name', '')} {label} (step {step}, "
                                 f"{float(e.get('dur', 0)):.1f} us)"})
    keys = sorted({b["lane"] for b in boxes} | set(names))
    lanes = [(k, f"rank {k[0]} {names.get(k, 'compute' if k[1] == 0 else f'lane {k[1]}')}")
             for k in keys]
    ranks = len({k[0] for k in keys})
    title = f"trace: {ranks} rank{'s' if ranks != 1 else ''}, {len(boxes)} events"
    return _write(_timeline(lanes, boxes, title, "us"), path)
