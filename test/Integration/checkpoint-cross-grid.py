# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# A checkpoint written on one grid resumes on another (runtime/src/checkpoint.h:
# each rank reads the parts of the saved pieces that overlap its own slice).
# Llama tiny (batch 4) trains 2 steps on dp=2,tp=2 with ZeRO-3 (every
# parameter and moment split over both axes) and writes a checkpoint; then
# braid-run --verify --resume continues it to step 4 on
# - tp=4 (other tp blocks, vocabulary and heads over 4 ranks),
# - pp=2,dp=2 with 2 micro-batches (pipeline stages, replicas over dp),
# - dp=2 with ZeRO-1 (the moments of unsharded weights as flat ranges),
# each against the unpartitioned program resumed from the same checkpoint on
# one rank: step 3's gradients and updates (AdamW replayed at t = 3) and the
# losses of steps 3 and 4 within --verify's 1e-5. The dp=2 ZeRO-1 run writes
# a checkpoint of its own (flat moments) after step 4, which resumes on
# dp=2,tp=2 with ZeRO-2 (ranges of tp blocks) under --verify too (steps 5, 6). On one rank, without a
# grid, the resumed losses are within 1e-5 of the uninterrupted dp=2,tp=2 run.
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import checkpoint_run as cr  # noqa: E402

from braid import checkpoint  # noqa: E402

work = sys.argv[1]
failures = []


def expect(cond, message):
    if not cond:
        failures.append(message)


model = cr.build(work, "llama-tiny-b4")
saved = os.path.join(work, "dp2tp2-zero3")
full = cr.braid_run([model, "--grid", "dp=2,tp=2", "--zero", "3", "--steps", 4, "--quiet"])
run = cr.braid_run([model, "--grid", "dp=2,tp=2", "--zero", "3", "--steps", 2, "--quiet",
                    "--checkpoint-dir", saved])
expect(full.returncode == 0 and run.returncode == 0, f"training failed:\n{run.stderr}")
manifest, _ = checkpoint.load(saved)
print(f"saved on {manifest['grid']} at step {manifest['step']}: {len(manifest['files'])} "
      f"files, {len(manifest['tensors'])} tensors")
expect(manifest["grid"] == "dp=2,tp=2" and len(manifest["files"]) == 4,
       f"unexpected manifest: grid {manifest['grid']}, files {manifest['files']}")


def verify_resumed(label, source, flags, extra=(), first=3):
    """braid-run --verify from `source` (written after step first - 1) to
    step first + 1."""
    r = cr.braid_run([model, *flags, "--steps", first + 1, "--quiet", "--verify", "--resume",
                      source, *extra])
    lines = [line[8:] for line in r.stdout.splitlines() if line.startswith("verify:")]
    print(f"resumed on {label}: {'; '.join(lines)}")
    expect(r.returncode == 0 and "PASS" in lines,
           f"{label}: expected verify: PASS, exit {r.returncode}\n{r.stdout}{r.stderr}")
    # The step judged is the one after the checkpoint.
    expect(any(re.search(rf"\(step{first}\.(grad|updated)\.", line) for line in lines),
           f"{label}: verify did not judge step {first}:\n{r.stdout}")
    steps = sorted(cr.losses(r.stdout))
    expect(steps == [first, first + 1], f"{label}: printed the losses of steps {steps}")


verify_resumed("tp=4", saved, ["--grid", "tp=4"])
verify_resumed("pp=2,dp=2", saved, ["--grid", "pp=2,dp=2", "--microbatches", "2"])
flat = os.path.join(work, "dp2-zero1")
verify_resumed("dp=2 zero-1", saved, ["--grid", "dp=2", "--zero", "1"],
               ["--checkpoint-dir", flat])
flat_manifest, _ = checkpoint.load(flat)
flat_moments = [t["name"] for t in flat_manifest["tensors"]
                if t["name"].startswith("opt.m.") and len(t["shape"]) == 1 and
                t["shape"][0] > 64]
print(f"dp=2 zero-1 wrote step {flat_manifest['step']} with {len(flat_moments)} flat moments")
expect(flat_manifest["step"] == 4 and flat_moments, "no flat ZeRO-1 moments in its checkpoint")
verify_resumed("dp=2,tp=2 zero-2 (from dp=2 zero-1's flat moments)",
               os.path.join(flat, "step-4"), ["--grid", "dp=2,tp=2", "--zero", "2"], first=5)

# One rank, no grid: against the uninterrupted dp=2,tp=2 run.
one = cr.braid_run([model, "--steps", 4, "--quiet", "--resume", saved])
want, got = cr.losses(full.stdout), cr.losses(one.stdout)
worst = max((abs(got[k] - want[k]) / abs(want[k]) for k in (3, 4) if k in got), default=1)
print(f"resumed on 1 rank: steps {sorted(got)}, largest relative loss difference from the "
      f"uninterrupted dp=2,tp=2 run {worst:.3g}")
expect(one.returncode == 0 and sorted(got) == [3, 4] and worst <= 1e-5,
       f"1 rank: losses {got}, uninterrupted {want}\n{one.stderr}")

if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
