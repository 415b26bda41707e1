# RUN: %python %s
#
# The overlap scheduler's memory budget inside the list scheduler's picks:
# with no growth allowed at all (memory-growth=0, no buckets), the scheduled
# program's peak of live bytes stays within the unscheduled one's, and the
# schedule still hides communication: it holds a transfer back that would
# raise the peak over the budget and, when nothing else fits, takes early the
# wait that frees the most (a reduce-scatter's whole gradient). Before the
# budget was in the picks, such a budget left every function in its order
# (nothing hidden). At the default budget (5%) the tiny models, whose
# gradients are a large part of their memory, are scheduled too.
import re
import subprocess
import sys

CASES = [
    ("llama-tiny", ["--batch", "4"], "grid=dp=2 zero=1"),
    ("llama-tiny", ["--batch", "4"], "grid=dp=2 zero=2"),
    ("llama-tiny", ["--batch", "4"], "grid=dp=2,tp=2 sequence-parallel=true"),
    ("llama-tiny", ["--batch", "4"], "grid=pp=2,dp=2 zero=1 microbatches=2"),
    ("moe-tiny", ["--batch", "4"], "grid=ep=2"),
]


def run(args, stdin):
    return subprocess.run(args, input=stdin, check=True, capture_output=True, text=True).stdout


def arena(module):
    """The largest program's arena (a pipeline's busiest stage)."""
    ranks = len(re.findall(r"func\.func @step\.pp\d+\(", module)) or 1
    best = 0
    for rank in range(ranks):
        out = run(["braid-opt", f"--braid-print-memory-plan=pipeline-rank={rank}", "-o",
                   "/dev/null"], module)
        best = max(best, int(re.search(r"arena_bytes: (\d+)", out).group(1)))
    return best


def exposed(module):
    """Exposed seconds of the step (a pipeline: the sum over its stages)."""
    out = run(["braid-opt", "--braid-print-plan", "-o", "/dev/null"], module)
    return sum(float(x) for x in re.findall(r"exposed_time_per_step: ([0-9.]+) us", out))


failures = 0
for preset, args, options in CASES:
    model = run([sys.executable, "-m", "braid.models", preset] + args, None)
    lowered = run(["braid-opt", f"--braid-training-pipeline={options} schedule-overlap=false"],
                  model)
    before_arena, before_exposed = arena(lowered), exposed(lowered)
    tight = run(["braid-opt", "--braid-schedule-overlap=memory-growth=0 bucket-mb=0"], lowered)
    tight_arena, tight_exposed = arena(tight), exposed(tight)
    default = run(["braid-opt", "--braid-schedule-overlap"], lowered)
    default_exposed = exposed(default)
    ok = (tight_arena <= before_arena and tight_exposed < 0.8 * before_exposed and
          default_exposed < 0.8 * before_exposed)
    failures += not ok
    print(f"{'ok' if ok else 'FAIL'}: {preset} {options}: arena {before_arena} -> "
          f"{tight_arena} at memory-growth=0; exposed {before_exposed:.1f} -> {tight_exposed:.1f} us "
          f"(default budget: {default_exposed:.1f} us)")
sys.exit(1 if failures else 0)
