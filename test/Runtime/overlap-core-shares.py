# RUN: %python %s %braid_src
#
# bench/overlap/overlap.py times products per core's time on ranks that
# share cores, as the simulation of a description with host_cores runs them
# (StepSimulation.cpp: a program's ranks compute together, at min(1, cores /
# (ranks per program x programs computing)) of their rate). Its helpers on
# traces made by hand, with the shares worked out by hand: a pipeline of
# two stages of two ranks on two cores, where a stage computing alone has a
# core a rank and both stages computing have half of one; and one program
# of four ranks, which computes at half a core whatever its ranks do.
import os
import sys

sys.path.insert(0, os.path.join(sys.argv[1], "bench", "overlap"))
import overlap  # noqa: E402

failures = []


def expect(what, got, want):
    if abs(got - want) > 1e-9:
        failures.append(f"{what}: {got} (expected {want})")


def kernel(ts, dur, name="pipeline", flops=None):
    args = {"step": 1}
    if flops:
        args["flops"] = flops
    return {"cat": "kernel", "name": name, "ts": ts, "dur": dur, "args": args}


def wait(ts, dur):
    return {"cat": "wait", "name": "wait", "ts": ts, "dur": dur, "args": {"step": 1}}


# A rank's compute: its top-level kernels (the product inside the pipeline
# action counts once) without the waits inside them.
spans, busy, inside = overlap.compute_spans(
    [kernel(0, 10), kernel(2, 3, "linear", 1e6), wait(6, 2), kernel(12, 4)])
if spans != [(0, 6), (8, 10), (12, 16)]:
    failures.append(f"compute spans {spans}")
expect("busy", busy, 14)
expect("waits inside", inside, 2)

# Pipeline: stage 0 (ranks 0, 1) computes 0..10, stage 1 (ranks 2, 3)
# 5..15 (rank 3 from 6: its stage computes from 5 on).
ranks = [[(0, 10)], [(0, 10)], [(5, 15)], [(6, 15)]]
segments = overlap.core_shares(ranks, 2, 2)
want = [(0, 5, 1.0), (5, 10, 0.5), (10, 15, 1.0)]
if [(a, b) for a, b, _ in segments] != [(a, b) for a, b, _ in want]:
    failures.append(f"segments {segments} (expected {want})")
for (a, b, s), (_, _, w) in zip(segments, want):
    expect(f"share {a}..{b}", s, w)
starts = [a for a, _, _ in segments]
# A product from 2 to 8: 3 us alone, 3 us at half a core.
expect("core time of 2..8", overlap.core_seconds(segments, starts, 2, 8), 4.5)
expect("core time of 11..14", overlap.core_seconds(segments, starts, 11, 14), 3.0)

# One program of four ranks on two cores: half a core each, even while some
# of them wait (the simulation runs them in lockstep).
ranks = [[(0, 10)], [(0, 4)], [(2, 10)], [(0, 10)]]
segments = overlap.core_shares(ranks, 2, 1)
starts = [a for a, _, _ in segments]
expect("one program's core time of 0..10", overlap.core_seconds(segments, starts, 0, 10), 5.0)
# Ranks with a core each (two on two cores) compute alone.
segments = overlap.core_shares([[(0, 10)], [(0, 10)]], 2, 1)
expect("a core each", overlap.core_seconds(segments, [a for a, _, _ in segments], 0, 10), 10.0)

if failures:
    sys.exit("\n".join(failures))
print("ok")
