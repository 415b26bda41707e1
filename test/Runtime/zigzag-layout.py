# REQUIRES: mpi
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %mpicxx %mpirun %cxx %braid_src %braid_rt_lib %t
#
# Zigzag sequence layout (braid_program.zigzag_axis): a dimension split over the
# zigzag axis first is stored permuted, rank i of the axis holding chunks i and
# 2n-1-i of 2n. Inputs/zigzag-program.cpp built plain (1 rank) and with -DZIGZAG
# (cp=2,tp=2; -DCP4: cp=4,tp=1), run on 4 MPI ranks:
# - the 4-rank --dump equals the 1-rank --dump file for file, bit for bit:
#   tokens [B, S] (S over cp: the innermost split dimension), pe [S, 3] (over
#   cp,tp), feat [B, S, 4] (S over cp, 4 over tp: zigzag outside the innermost
#   split dimension), w (not zigzag), the value act [B, S, 3] (S over cp,tp,
#   braid_rt_value_sharded), updated.*, loss; the loss lines agree (the
#   program weights each token by its global position);
# - with --dump-all-ranks every rank's file is its shard as stored: tokens are
#   exactly the natural-order columns of chunks i and 2n-1-i; every tensor is
#   the rank's slice of the global tensor permuted into zigzag order;
# - S not a multiple of 2n, the zigzag axis listed second ("tp,cp") and a
#   zigzag axis the grid lacks exit 2 with a message.
import os
import pathlib
import re
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import numpy as np  # noqa: E402

from braid_ref import rng  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import mpi_launch  # noqa: E402

mpicxx, mpirun, cxx = sys.argv[1], sys.argv[2], sys.argv[3]
src, libdir, tmp = pathlib.Path(sys.argv[4]), pathlib.Path(sys.argv[5]), pathlib.Path(sys.argv[6])
program = pathlib.Path(__file__).parent / "Inputs" / "zigzag-program.cpp"
failures = []


def expect(cond, message):
    if not cond:
        failures.append(message)


mpi_libs = mpi_launch.mpi_libraries(libdir)
env, launcher = mpi_launch.launcher(mpirun)


def build(name, defines, mpi=True):
    return mpi_launch.build_program(
        tmp / name, program, defines, mpicxx if mpi else cxx, src,
        mpi_libs if mpi else mpi_launch.serial_libraries(libdir), env)


VARIANTS = {"twin": ([], False), "cp2": (["ZIGZAG"], True), "cp4": (["ZIGZAG", "CP4"], True),
            "odd": (["ZIGZAG", "VARIANT_ODD"], True), "minor": (["ZIGZAG", "VARIANT_MINOR"], True),
            "noaxis": (["ZIGZAG", "VARIANT_NOAXIS"], True)}
with ThreadPoolExecutor(len(VARIANTS)) as pool:
    jobs = {name: pool.submit(build, name, d, mpi) for name, (d, mpi) in VARIANTS.items()}
    exe = {name: job.result() for name, job in jobs.items()}


def run(cmd, ranks=None):
    return mpi_launch.run(launcher, env, cmd, ranks, 60, failures)


def steps(stdout):
    return re.findall(r"^step \d+ loss \S+$", stdout, re.M)


B, S = 2, 16
SEED = ["--seed", "5", "--steps", "2", "--quiet"]
# name -> split axes per dimension (as in the program); the zigzag axis is "cp"
SPLITS = {"w": [[], ["tp"]], "pe": [["cp", "tp"], []], "tokens": [[], ["cp"]],
          "feat": [[], ["cp"], ["tp"]], "act": [[], ["cp", "tp"], []]}
VALUES = {"updated.w": "w", "updated.pe": "pe"}
ALL = sorted([*SPLITS, *VALUES, "loss"])

# --- the 1-rank program ------------------------------------------------------------------
ref = tmp / "ref"
base = run([exe["twin"], *SEED, "--dump", ref])
expect(base.returncode == 0 and len(steps(base.stdout)) == 2, f"twin: {base}")
files = sorted(p.name[:-4] for p in ref.glob("*.npy"))
expect(files == ALL, f"twin dump files {files}, expected {ALL}")
if (ref / "tokens.npy").exists():
    want = rng.uniform_int(5, "tokens", 11, 0, B * S).reshape(B, S)
    expect(np.array_equal(np.load(ref / "tokens.npy"), want),
           "twin: tokens.npy differs from rng.py")
    # The loss weights every token by its position (+1).
    tok = np.load(ref / "tokens.npy")
    want_loss = float((tok * (np.arange(S) + 1)).sum())
    expect(steps(base.stdout) == [f"step {k} loss {want_loss:.9g}" for k in (1, 2)],
           f"twin: loss {steps(base.stdout)}, expected {want_loss}")


def same_files(got_dir, what):
    names = sorted(p.name[:-4] for p in got_dir.glob("*.npy"))
    expect(names == ALL, f"{what}: dump files {names}, expected {ALL}")
    for name in ALL:
        a, b = got_dir / f"{name}.npy", ref / f"{name}.npy"
        if a.exists() and b.exists():
            x, y = np.load(a), np.load(b)
            expect(x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(),
                   f"{what}: {name}: {x.dtype} {x.shape} differs from the 1-rank "
                   f"{y.dtype} {y.shape}\n{x}\n{y}")


def zigzag_order(n, size):
    """Global index of each stored index: chunks 0, 2n-1, 1, 2n-2, ... of size/(2n)."""
    c = size // (2 * n)
    return np.concatenate([np.arange(k * c, (k + 1) * c)
                           for j in range(n) for k in (j, 2 * n - 1 - j)])


def local_slice(glob, axes_per_dim, grid, coords):
    """The shard the rank at `coords` holds: a dimension split over cp first is
    permuted into zigzag order, then cut into contiguous blocks (no padding here)."""
    out = glob
    for d, axes in enumerate(axes_per_dim):
        if not axes:
            continue
        if axes[0] == "cp" and grid["cp"] > 1:
            out = np.take(out, zigzag_order(grid["cp"], out.shape[d]), axis=d)
        parts, c = 1, 0
        for a in axes:
            parts *= grid[a]
            c = c * grid[a] + coords[a]
        local = out.shape[d] // parts
        out = np.take(out, range(c * local, (c + 1) * local), axis=d)
    return out


for label, grid in (("cp2", {"cp": 2, "tp": 2}), ("cp4", {"cp": 4, "tp": 1})):
    # --- 4 ranks: the same global state, dumps and losses ---------------------------------
    out = tmp / f"dump-{label}"
    r = run([exe[label], *SEED, "--dump", out], ranks=4)
    expect(r.returncode == 0, f"{label}: rc {r.returncode}\n{r.stdout}\n{r.stderr}")
    expect(steps(r.stdout) == steps(base.stdout) and r.stderr == "",
           f"{label}: {r.stdout!r} {r.stderr!r} vs {base.stdout!r}")
    same_files(out, label)

    # --- every rank's own shard, as stored ------------------------------------------------
    local = tmp / f"local-{label}"
    r = run([exe[label], *SEED, "--dump", local, "--dump-all-ranks"], ranks=4)
    expect(r.returncode == 0, f"{label} --dump-all-ranks: rc {r.returncode}\n{r.stderr}")
    n = grid["cp"]
    c = S // (2 * n)
    for rank in range(4):
        coords = {"cp": rank // grid["tp"], "tp": rank % grid["tp"]}
        i = coords["cp"]
        path = local / f"tokens.rank{rank}.npy"
        if path.exists() and (ref / "tokens.npy").exists():
            tok = np.load(ref / "tokens.npy")
            want = np.concatenate([tok[:, i * c:(i + 1) * c],
                                   tok[:, (2 * n - 1 - i) * c:(2 * n - i) * c]], axis=1)
            got = np.load(path)
            expect(got.dtype == want.dtype and np.array_equal(got, want),
                   f"{label} rank {rank} tokens: {got}\nexpected chunks {i} and "
                   f"{2 * n - 1 - i}\n{want}")
        for name in ALL:
            if name == "loss":
                continue
            path, want_path = local / f"{name}.rank{rank}.npy", ref / f"{name}.npy"
            if not path.exists() or not want_path.exists():
                failures.append(f"{label} --dump-all-ranks: no {path.name}")
                continue
            got = np.load(path)
            want = local_slice(np.load(want_path), SPLITS[VALUES.get(name, name)], grid, coords)
            expect(got.dtype == want.dtype and got.shape == want.shape and
                   got.tobytes() == want.tobytes(),
                   f"{label} rank {rank} {name}: local {got.shape}\n{got}\nexpected\n{want}")

# --- layouts that do not fit ----------------------------------------------------------------
for name, message in (
        ("odd", "program zigzag: parameter pe: dimension 0 of size 18 is split in zigzag order "
                "over axis 'cp' of 2 ranks: its size must be a multiple of 2 x 2 = 4"),
        ("minor", "program zigzag: parameter pe: dimension 0 is split over 'tp,cp' (zigzag axis "
                  "'cp'): the zigzag axis must be the first (major) axis splitting a dimension"),
        ("noaxis", "program zigzag holds sequences in zigzag order along axis 'sp', which grid "
                   "cp=2,tp=2 does not have")):
    r = run([exe[name], "--quiet"], ranks=4)
    expect(r.returncode == 2 and r.stdout == "" and r.stderr.count(message) == 1,
           f"{name}: rc {r.returncode} {r.stdout!r} {r.stderr!r}")

for f in failures:
    print(f)
print("ok" if not failures else f"{len(failures)} failures")
sys.exit(1 if failures else 0)
