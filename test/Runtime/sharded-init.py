# REQUIRES: mpi
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %mpicxx %mpirun %cxx %braid_src %braid_rt_lib %t
#
# Sharded tensors (braid_tensor_desc.global_shape / split_axes, braid_program.grid,
# braid_rt_value_sharded). Inputs/sharded-program.cpp built plain (1 rank) and with
# -DSHARDED (partitioned for dp=2,tp=2: a dimension of 97 split over tp, one of 7
# over "dp,tp", one over "tp, dp" (minor axis first), both dimensions split, a
# ones init with padding, tokens split over dp) and run on 4 MPI ranks:
# - the 4-rank --dump equals the 1-rank --dump file for file, bit for bit: the
#   initial parameters and inputs, the sharded values, updated.<name>.npy, loss;
#   the loss lines agree;
# - with --dump-all-ranks every rank's file is its own shard: exactly its slice of
#   the global tensor, zero padding (also for the ones init);
# - the grid comes from the program when --grid is absent; a --grid that differs,
#   a world of another size, a run without mpirun, and (for a program that names
#   no grid) a split axis missing from the grid exit 2 with a message.
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
program = pathlib.Path(__file__).parent / "Inputs" / "sharded-program.cpp"
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


with ThreadPoolExecutor(3) as pool:
    jobs = [pool.submit(build, "twin", [], mpi=False),
            pool.submit(build, "sharded", ["SHARDED"]),
            pool.submit(build, "nogrid", ["SHARDED", "VARIANT_NOGRID"])]
    twin, sharded, nogrid = [j.result() for j in jobs]


def run(cmd, ranks=None):
    return mpi_launch.run(launcher, env, cmd, ranks, 60, failures)


def steps(stdout):
    return re.findall(r"^step \d+ loss \S+$", stdout, re.M)


SEED = ["--seed", "7", "--steps", "2", "--quiet"]
GRID = {"dp": 2, "tp": 2}
# name -> split axes per dimension (as in the program)
SPLITS = {"w": [[], ["tp"]], "e": [["dp", "tp"], []], "x": [["dp"], ["tp"]], "g": [["tp"]],
          "m": [[]], "z": [["tp", "dp"], []], "tokens": [["dp"], []]}
VALUES = {"layers.0.h": "w", "emb": "e", **{f"updated.{n}": n for n in SPLITS if n != "tokens"}}
ALL = sorted([*SPLITS, *VALUES, "loss"])

# --- the 1-rank program ------------------------------------------------------------------
ref = tmp / "ref"
base = run([twin, *SEED, "--dump", ref])
expect(base.returncode == 0 and len(steps(base.stdout)) == 2, f"twin: {base}")
files = sorted(p.name[:-4] for p in ref.glob("*.npy"))
expect(files == ALL, f"twin dump files {files}, expected {ALL}")
if (ref / "w.npy").exists():
    want = rng.param_values(7, "w", (5, 97), "normal", 0.02, "f32", exact=True)
    expect(np.array_equal(np.load(ref / "w.npy"), want), "twin: w.npy differs from rng.py")


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


# --- 4 ranks: the same global state, dumps and losses --------------------------------------
for label, cmd in (("--grid dp=2,tp=2", [sharded, "--grid", "dp=2,tp=2"]),
                   ("the program's grid", [sharded]),
                   ("--grid of a program without one", [nogrid, "--grid", "dp=2,tp=2"])):
    out = tmp / f"dump-{len(list(tmp.glob('dump-*')))}"
    r = run([*cmd, *SEED, "--dump", out], ranks=4)
    expect(r.returncode == 0, f"{label}: rc {r.returncode}\n{r.stdout}\n{r.stderr}")
    expect(steps(r.stdout) == steps(base.stdout) and r.stderr == "",
           f"{label}: {r.stdout!r} {r.stderr!r} vs {base.stdout!r}")
    same_files(out, label)


# --- every rank's own shard -----------------------------------------------------------------
def local_slice(glob, axes_per_dim, coords):
    """The shard the rank at `coords` holds: its block of every split dimension,
    zero-padded to ceil(global / parts)."""
    out = glob
    for d, axes in enumerate(axes_per_dim):
        parts, c = 1, 0
        for a in axes:
            parts *= GRID[a]
            c = c * GRID[a] + coords[a]
        n = glob.shape[d]
        local = -(-n // parts)
        block = np.take(out, range(c * local, min(n, (c + 1) * local)), axis=d)
        pad = [(0, 0)] * out.ndim
        pad[d] = (0, local - block.shape[d])
        out = np.pad(block, pad)
    return out


local = tmp / "local"
r = run([sharded, *SEED, "--dump", local, "--dump-all-ranks"], ranks=4)
expect(r.returncode == 0, f"--dump-all-ranks: rc {r.returncode}\n{r.stderr}")
for rank in range(4):
    coords = {"dp": rank // 2, "tp": rank % 2}
    for name in ALL:
        if name == "loss":
            continue
        path, want_path = local / f"{name}.rank{rank}.npy", ref / f"{name}.npy"
        if not path.exists() or not want_path.exists():
            failures.append(f"--dump-all-ranks: no {path.name}")
            continue
        got = np.load(path)
        want = local_slice(np.load(want_path), SPLITS[VALUES.get(name, name)], coords)
        expect(got.dtype == want.dtype and got.shape == want.shape and
               got.tobytes() == want.tobytes(),
               f"rank {rank} {name}: local {got.shape}\n{got}\nexpected\n{want}")
# The padding is really there (zero, whatever the init).
if (local / "g.rank1.npy").exists():
    expect(np.load(local / "g.rank1.npy").tolist() == [1.0, 1.0, 0.0], "g on tp=1")
if (local / "w.rank3.npy").exists():
    w3 = np.load(local / "w.rank3.npy")
    expect(w3.shape == (5, 49) and not w3[:, 48].any() and w3[:, :48].all(), f"w on rank 3 {w3}")

# --- grids that do not fit ----------------------------------------------------------------
for cmd, ranks, message in (
        ([sharded, "--grid", "dp=4"], 4,
         "--grid dp=4 differs from the grid dp=2,tp=2 program sharded was partitioned for"),
        ([sharded, "--grid", "tp=2,dp=2"], 4,
         "--grid tp=2,dp=2 differs from the grid dp=2,tp=2 program sharded was partitioned for"),
        ([sharded], 2, "grid dp=2,tp=2 (program sharded was partitioned for it) has 4 ranks "
                       "but the MPI world has 2 ranks"),
        ([sharded], None, "grid dp=2,tp=2 (program sharded was partitioned for it) has 4 ranks "
                          "but this process runs 1 rank (not launched by mpirun"),
        ([nogrid], 4, "program sharded: parameter w: dimension 1 is split over axis 'tp', "
                      "which grid world=4 does not have"),
        ([nogrid, "--grid", "dp=2,ep=2"], 4, "program sharded: parameter w: dimension 1 is "
                                             "split over axis 'tp', which grid dp=2,ep=2 does "
                                             "not have")):
    r = run([*cmd, "--quiet"], ranks=ranks)
    expect(r.returncode == 2 and r.stdout == "" and r.stderr.count(message) == 1,
           f"{cmd} on {ranks} ranks: rc {r.returncode} {r.stdout!r} {r.stderr!r}")

for f in failures:
    print(f)
print("ok" if not failures else f"{len(failures)} failures")
sys.exit(1 if failures else 0)
