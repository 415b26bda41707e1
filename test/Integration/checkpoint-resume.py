# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# Checkpoints resume bit for bit (runtime/src/checkpoint.h): on one grid, N
# steps in one run equal K steps, a checkpoint and a run resumed from it to
# step N: the same loss lines (%.9g) for steps K+1..N and the same final
# parameters and optimizer state (updated.*.npy, byte for byte), for
# - Llama tiny on dp=2,tp=2 with ZeRO-1 (the parameter gathers deferred to the
#   next step: a checkpoint completes them first); writing checkpoints every
#   2 steps leaves that run itself unchanged;
# - GPT tiny (tied embedding: a mirror on the last stage) on pp=2 with 2
#   micro-batches (1F1B);
# - Llama tiny with bf16 parameters on dp=2, ZeRO-1: stored as BF16, the bits
#   themselves.
# The format is read back with safetensors into numpy (python/braid/checkpoint.py): the global
# tensors assembled from every rank's pieces are the run's own dumps of the
# same step, the pieces' hashes are FNV-1a 64 of their bytes, and D/latest
# names the last checkpoint.
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import checkpoint_run as cr  # noqa: E402

import numpy as np  # noqa: E402

from braid import checkpoint  # noqa: E402

work = sys.argv[1]
failures = []


def expect(cond, message):
    if not cond:
        failures.append(message)


def resume_case(label, model, flags, steps=4, at=2, every=None):
    """Runs `steps` steps plainly, then `at` steps with a checkpoint and the
    rest resumed from it; returns the checkpoint directory."""
    base = os.path.join(work, label)
    full = cr.braid_run([model, *flags, "--steps", steps, "--quiet", "--dump", base + "-full"])
    expect(full.returncode == 0, f"{label}: the plain run failed:\n{full.stderr}")
    ckpt = base + "-ckpt"
    saved = cr.braid_run([model, *flags, "--steps", at, "--quiet", "--checkpoint-dir", ckpt,
                          "--dump", base + "-saved"])
    expect(saved.returncode == 0, f"{label}: the run writing the checkpoint failed:\n"
                                  f"{saved.stderr}")
    resumed = cr.braid_run([model, *flags, "--steps", steps, "--quiet", "--resume", ckpt,
                            "--dump", base + "-resumed"])
    expect(resumed.returncode == 0, f"{label}: the resumed run failed:\n{resumed.stderr}")
    want = cr.loss_lines(full.stdout)[at:]
    got = cr.loss_lines(resumed.stdout)
    differ, count = cr.differing_dumps(base + "-full", base + "-resumed")
    print(f"{label}: steps {at + 1}..{steps} resumed from step {at}: losses "
          f"{'identical' if got == want else 'DIFFER'}, {count - len(differ)} of {count} "
          "updated tensors identical")
    expect(got == want and len(want) == steps - at,
           f"{label}: resumed losses {got}, uninterrupted {want}")
    expect(count > 0 and not differ, f"{label}: final state differs: {differ[:5]}")
    if every:
        # Checkpoints during a run leave its numbers alone.
        run = cr.braid_run([model, *flags, "--steps", steps, "--quiet", "--checkpoint-dir",
                            base + "-every", "--checkpoint-every", every, "--dump",
                            base + "-every-dump"])
        differ, count = cr.differing_dumps(base + "-full", base + "-every-dump")
        same = cr.loss_lines(run.stdout) == cr.loss_lines(full.stdout)
        print(f"{label}: a checkpoint every {every} steps: losses "
              f"{'identical' if same else 'DIFFER'}, {count - len(differ)} of {count} updated "
              "tensors identical")
        expect(run.returncode == 0 and same and not differ,
               f"{label}: checkpointing changed the run: {differ[:5]}\n{run.stderr}")
        return base + "-every", base + "-every-dump", steps
    return ckpt, base + "-saved", at


def check_format(label, ckpt, dump, step, grid, bf16=False):
    """The checkpoint `ckpt` (its latest) against the dumps of the same state."""
    manifest, tensors = checkpoint.load(ckpt, bf16_bits=bf16)
    latest = open(os.path.join(ckpt, "latest")).read().strip()
    expect(latest == f"step-{step}" and manifest["step"] == step and manifest["grid"] == grid,
           f"{label}: latest {latest}, manifest step {manifest['step']} grid {manifest['grid']}")
    expect(manifest["format"] == "braid-checkpoint" and manifest["version"] == 1,
           f"{label}: format {manifest['format']} version {manifest['version']}")
    mismatched, dtypes = [], set()
    for t in manifest["tensors"]:
        dtypes.add(t["dtype"])
        want = np.load(os.path.join(dump, f"updated.{t['name']}.npy")).reshape(-1)
        got = tensors[t["name"]].reshape(-1)
        if t["dtype"] == "BF16":  # the bits; the dump holds them widened to f32
            got = (got.astype(np.uint32) << 16).view(np.float32)
        if got.shape != want.shape or got.tobytes() != want.astype(got.dtype).tobytes():
            mismatched.append(t["name"])
    # The documented hash, on the small pieces (pure Python is slow).
    directory = checkpoint.resolve(ckpt)
    hashed = bad = 0
    entries = {}
    for t in manifest["tensors"]:
        for p in t["pieces"]:
            if p["file"] not in entries:
                entries[p["file"]] = checkpoint.read_entries(os.path.join(directory, p["file"]))
            data = entries[p["file"]][p["key"]][2]
            if len(data) > 4096:
                continue
            hashed += 1
            bad += checkpoint.fnv1a64(data) != int(p["fnv1a64"], 16)
    print(f"{label}: step-{step} holds {len(tensors)} tensors ({', '.join(sorted(dtypes))}) in "
          f"{len(manifest['files'])} files; {len(tensors) - len(mismatched)} equal the run's "
          f"dumps; {hashed - bad} of {hashed} small pieces match their FNV-1a 64")
    expect(not mismatched, f"{label}: tensors differ from the dumps: {mismatched[:5]}")
    expect(hashed > 0 and bad == 0, f"{label}: {bad} pieces do not match their hash")
    return manifest


llama = cr.build(work, "llama-tiny-b4")
written = resume_case("llama dp=2,tp=2 zero-1", llama, ["--grid", "dp=2,tp=2", "--zero", "1"],
                      every=2)
manifest = check_format("llama dp=2,tp=2 zero-1", *written, "dp=2,tp=2")
expect(len(manifest["files"]) == 4, f"expected 4 rank files, found {manifest['files']}")

gpt = cr.build(work, "gpt-tiny-l5-b4")
written = resume_case("gpt pp=2 1f1b", gpt, ["--grid", "pp=2", "--microbatches", "2"])
check_format("gpt pp=2 1f1b", *written, "pp=2")

bf16 = os.path.join(work, "llama-tiny-b4-bf16.mlir")
with open(bf16, "w") as f:
    f.write(subprocess.run([sys.executable, "-m", "braid.models", "llama-tiny", "--batch", "4",
                            "--dtype", "bf16"], check=True, capture_output=True,
                           text=True).stdout)
written = resume_case("llama bf16 dp=2 zero-1", bf16, ["--grid", "dp=2", "--zero", "1"],
                      steps=3, at=1, every=1)
manifest = check_format("llama bf16 dp=2 zero-1", *written, "dp=2", bf16=True)
expect("BF16" in {t["dtype"] for t in manifest["tensors"]}, "no BF16 tensor in the checkpoint")

if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
