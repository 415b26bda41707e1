# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# A checkpoint that cannot be resumed ends the run with status 2 and one
# message naming the file, before anything is written (runtime/src/checkpoint.h):
# the checkpoint directory is unchanged file for file (size, time, bytes), and
# neither the --dump directory nor a --checkpoint-dir is created. Llama tiny
# (batch 4) writes a checkpoint on dp=2,tp=2 with ZeRO-1 after step 1; each
# case breaks a copy of it, or resumes it into the wrong program:
# - on dp=2,tp=2 (4 ranks: the rank that meets the problem says so, once): a
#   missing shard file, a flipped byte in a tensor's data (its FNV-1a 64), a
#   garbage safetensors header, a truncated file, a manifest that is not
#   JSON, a latest naming a missing checkpoint, --seed other than the
#   checkpoint's;
# - on one rank: another model (GPT tiny), the same model with another width
#   (shapes), with another layer count (a tensor missing; a tensor too many),
#   with bf16 parameters (dtypes), a directory holding no checkpoint;
# and a fresh run refuses to write into a directory that holds checkpoints.
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import checkpoint_run as cr  # noqa: E402

work = sys.argv[1]
failures = []
GRID = ["--grid", "dp=2,tp=2", "--zero", "1"]


def expect(cond, message):
    if not cond:
        failures.append(message)


def model(name, *flags):
    path = os.path.join(work, name + ".mlir")
    with open(path, "w") as f:
        f.write(subprocess.run([sys.executable, "-m", "braid.models", *flags], check=True,
                               capture_output=True, text=True).stdout)
    return path


llama = model("llama-b4", "llama-tiny", "--batch", "4")
good = os.path.join(work, "good")
r = cr.braid_run([llama, *GRID, "--steps", 1, "--quiet", "--checkpoint-dir", good])
expect(r.returncode == 0, f"writing the checkpoint failed:\n{r.stderr}")
step1 = "step-1"


def broken(label, damage):
    """A copy of the good checkpoint, damaged by damage(its step-1 path)."""
    path = os.path.join(work, label)
    shutil.copytree(good, path)
    damage(os.path.join(path, step1))
    return path


def flip(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset, os.SEEK_END if offset < 0 else os.SEEK_SET)
        b = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([b[0] ^ 0x40]))


def truncate(path):
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 12)


def refused(label, prog, flags, ckpt, want):
    """Resumes `ckpt`; the run must fail with `want` in one message, leaving
    the checkpoint as it was and writing nothing."""
    before = cr.snapshot(ckpt)
    dump, out = os.path.join(work, label + "-dump"), os.path.join(work, label + "-out")
    r = cr.braid_run([prog, *flags, "--steps", 3, "--quiet", "--resume", ckpt, "--dump", dump,
                      "--checkpoint-dir", out], timeout=300)
    said = [line for line in r.stderr.splitlines() if "checkpoint:" in line]
    print(f"{label}: exit {r.returncode}: {said[0] if said else r.stderr.strip()[-300:]}")
    expect(r.returncode == 2, f"{label}: exit {r.returncode}, expected 2\n{r.stderr}")
    expect(len(said) == 1 and want in said[0],
           f"{label}: expected one message with '{want}', found {said}\n{r.stderr}")
    expect("step " not in r.stdout, f"{label}: steps ran:\n{r.stdout}")
    expect(cr.snapshot(ckpt) == before, f"{label}: the checkpoint directory changed")
    expect(not os.path.exists(dump) and not os.path.exists(out),
           f"{label}: the run created its dump or checkpoint directory")


# On the grid the checkpoint was written on.
refused("missing shard", llama, GRID,
        broken("missing", lambda d: os.remove(os.path.join(d, "rank00003.safetensors"))),
        "missing shard file " + os.path.join(work, "missing", step1, "rank00003.safetensors"))
refused("flipped data byte", llama, GRID,
        broken("flipped", lambda d: flip(os.path.join(d, "rank00002.safetensors"), -100)),
        os.path.join(work, "flipped", step1, "rank00002.safetensors") +
        ": entry 'opt.v.output@32,0' does not match its hash in the manifest")
refused("garbage header", llama, GRID,
        broken("header", lambda d: flip(os.path.join(d, "rank00001.safetensors"), 20)),
        os.path.join(work, "header", step1, "rank00001.safetensors") + ": malformed header")
refused("truncated file", llama, GRID,
        broken("truncated", lambda d: truncate(os.path.join(d, "rank00000.safetensors"))),
        os.path.join(work, "truncated", step1, "rank00000.safetensors") + " is ")
refused("manifest not JSON", llama, GRID,
        broken("manifest", lambda d: truncate(os.path.join(d, "manifest.json"))),
        os.path.join(work, "manifest", step1, "manifest.json") + ": malformed JSON")
refused("latest names no checkpoint", llama, GRID,
        broken("latest", lambda d: open(os.path.join(os.path.dirname(d), "latest"), "w")
               .write("step-7\n")),
        os.path.join(work, "latest", "latest") + " names step-7, but")
refused("another seed", llama, [*GRID, "--seed", "5"], good,
        "--seed 5 differs from the seed 0 of checkpoint " + os.path.join(good, step1))

# Other programs, on one rank.
where = os.path.join(good, step1, "manifest.json")
refused("another model", model("gpt-b4", "gpt-tiny", "--batch", "4"), [], good,
        where + " is a checkpoint of model 'llama-tiny'; this program is model 'gpt-tiny'")
refused("other shapes", model("wide", "llama-tiny", "--batch", "4", "--hidden", "96"), [], good,
        "tensor 'tok_embeddings' has shape [256, 64] in " + where + ", [256, 96] in this "
        "program")
refused("a tensor missing", model("deep", "llama-tiny", "--batch", "4", "--layers", "3"), [],
        good, where + " has no tensor 'layers.2.attn_norm', which this program has")
refused("a tensor too many", model("shallow", "llama-tiny", "--batch", "4", "--layers", "1"),
        [], good, where + " holds 64 tensors, this run's programs 37")
refused("other dtypes", model("bf16", "llama-tiny", "--batch", "4", "--dtype", "bf16"), [],
        good, "tensor 'tok_embeddings' is F32 in " + where + ", BF16 in this program")
empty = os.path.join(work, "empty")
os.makedirs(empty)
refused("no checkpoint", llama, [], empty, empty + " holds no checkpoint")

# A fresh run does not mix its checkpoints with another run's.
before = cr.snapshot(good)
r = cr.braid_run([llama, "--steps", 1, "--quiet", "--checkpoint-dir", good])
said = [line for line in r.stderr.splitlines() if "checkpoint:" in line]
print(f"fresh run into a checkpoint directory: exit {r.returncode}: {said}")
expect(r.returncode == 2 and said and "already holds checkpoints" in said[0] and
       cr.snapshot(good) == before and "step " not in r.stdout,
       f"a fresh run wrote into {good}: exit {r.returncode}\n{r.stdout}{r.stderr}")

if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
