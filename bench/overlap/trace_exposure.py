"""Measured exposed communication from a run's traces, per kind and group.

braid-run --trace T.json on several ranks writes T.rank<R>.json per rank;
each wait for a transfer is an event of category "wait" on the compute lane
(label "KIND over AXES") and each transfer an event on its group's lane
(category "comm", with "link_end" under the link emulator). This prints, for
one step (default: the last), what --braid-print-plan's exposed_time lines
predict, measured: per kind and group, the time the ranks stood in those
waits (the mean over ranks), and the part of it before each transfer's
emulated link was done ("on links"; the rest is waiting for ranks of the
group that reached the transfer later; a receive's whole wait counts).

usage: python3 bench/overlap/trace_exposure.py T.json [--step K]
"""
import argparse
import collections
import glob
import json
import sys


def load(trace):
    """Every rank's complete events ("ph": "X"), by rank, from T.json's
    T.rank<R>.json files (or T.json itself for one rank)."""
    stem = trace[:-len(".json")] if trace.endswith(".json") else trace
    paths = sorted(glob.glob(stem + ".rank*.json"),
                   key=lambda p: int(p[len(stem) + len(".rank"):-len(".json")])) or [trace]
    ranks = []
    for path in paths:
        with open(path) as f:
            ranks.append([e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"])
    return ranks


def waits(events, step):
    """(label, whole wait, part on links) of each traced wait in `step`, in
    microseconds. The k-th wait of a rank is its k-th transfer: both are
    recorded at the wait, in the program's order."""
    ws = [e for e in events if e["cat"] == "wait"]
    ts = [e for e in events if e["cat"] == "comm"]
    out = []
    for w, t in zip(ws, ts):
        if w["args"]["step"] != step:
            continue
        end = w["ts"] + w["dur"]
        if "link_end" in t["args"]:
            end = min(end, t["args"]["link_end"])
        out.append((w["args"]["label"], w["dur"], max(0.0, end - w["ts"])))
    return out


def exposure(ranks, step):
    """Per label: (mean whole wait, mean on links) over ranks, microseconds."""
    total = collections.defaultdict(lambda: [0.0, 0.0])
    for events in ranks:
        for label, whole, linked in waits(events, step):
            total[label][0] += whole / len(ranks)
            total[label][1] += linked / len(ranks)
    return dict(total)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("trace")
    p.add_argument("--step", type=int, default=None, help="the step (default: the last)")
    args = p.parse_args()
    ranks = load(args.trace)
    step = args.step
    if step is None:
        step = max((e["args"].get("step", 0) for r in ranks for e in r), default=0)
    found = exposure(ranks, step)
    if not found:
        sys.exit(f"no traced waits in step {step} (a run on one rank, or one without --trace?)")
    whole = linked = 0.0
    for label in sorted(found):
        w, l = found[label]
        print(f"exposed_time {label}: {w:.1f} us per step (measured, mean over {len(ranks)} "
              f"ranks; on links {l:.1f} us)")
        whole, linked = whole + w, linked + l
    print(f"exposed_time_per_step: {whole:.1f} us (measured, step {step}; on links {linked:.1f} us)")


if __name__ == "__main__":
    main()
