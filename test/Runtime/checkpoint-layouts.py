# REQUIRES: mpi
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %mpicxx %mpirun %cxx %braid_src %braid_rt_lib %t
#
# Checkpoints across shard layouts (runtime/src/checkpoint.h, boxes.h): the
# hand-written programs of sharded-init.py and zigzag-layout.py compute the
# same numbers on any grid, so a checkpoint written on one resumes on every
# other bit for bit. Each program writes a checkpoint after step 1 (seed 5);
# every program of its family resumes it to step 3, and its loss lines and
# final dumps (updated.*, loss) equal the uninterrupted 1-rank run's, byte for
# byte:
# - Inputs/sharded-program.cpp, 1 rank and dp=2,tp=2: a dimension of 97 over
#   tp (padding), a bf16 tensor of 7 rows over "dp,tp" (its last piece one
#   row; stored as BF16), both dimensions split, axes listed minor first
#   ("tp,dp"), a tensor whole on every rank (written once);
# - Inputs/zigzag-program.cpp, 1 rank, cp=2,tp=2 and cp=4,tp=1 (zigzag order:
#   on cp=4 each rank's rows of pe are two chunks, saved as two pieces in
#   natural order).
import json
import os
import pathlib
import re
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import mpi_launch  # noqa: E402

mpicxx, mpirun, cxx = sys.argv[1], sys.argv[2], sys.argv[3]
src, libdir, tmp = pathlib.Path(sys.argv[4]), pathlib.Path(sys.argv[5]), pathlib.Path(sys.argv[6])
inputs = pathlib.Path(__file__).parent / "Inputs"
failures = []


def expect(cond, message):
    if not cond:
        failures.append(message)


env, launcher = mpi_launch.launcher(mpirun)
mpi_libs = mpi_launch.mpi_libraries(libdir)
# name -> (source, defines, ranks); 1 rank: the plain (serial) program.
PROGRAMS = {
    "sharded-1": ("sharded-program.cpp", [], 1),
    "sharded-dp2tp2": ("sharded-program.cpp", ["SHARDED"], 4),
    "zigzag-1": ("zigzag-program.cpp", [], 1),
    "zigzag-cp2tp2": ("zigzag-program.cpp", ["ZIGZAG"], 4),
    "zigzag-cp4": ("zigzag-program.cpp", ["ZIGZAG", "CP4"], 4),
}


def build(name):
    source, defines, ranks = PROGRAMS[name]
    return mpi_launch.build_program(
        tmp / name, inputs / source, defines, mpicxx if ranks > 1 else cxx, src,
        mpi_libs if ranks > 1 else mpi_launch.serial_libraries(libdir), env)


with ThreadPoolExecutor(len(PROGRAMS)) as pool:
    exe = dict(zip(PROGRAMS, pool.map(build, PROGRAMS)))


def run(name, *args):
    ranks = PROGRAMS[name][2]
    return mpi_launch.run(launcher, env, [exe[name], "--seed", "5", "--quiet", *args],
                          ranks if ranks > 1 else None, 120, failures)


def steps(stdout):
    return re.findall(r"^step \d+ loss \S+$", stdout, re.M)


def same_dumps(a, b):
    names = sorted(p.name for p in a.glob("*.npy") if p.name.startswith(("updated.", "loss")))
    differ = [n for n in names if not (b / n).exists() or
              (a / n).read_bytes() != (b / n).read_bytes()]
    return names, differ


for family in ("sharded", "zigzag"):
    members = [name for name in PROGRAMS if name.startswith(family)]
    ref = tmp / f"{family}-ref"
    base = run(f"{family}-1", "--steps", "3", "--dump", ref)
    expect(base.returncode == 0, f"{family}: the 1-rank run failed:\n{base.stderr}")
    for saver in members:
        ckpt = tmp / f"ckpt-{saver}"
        r = run(saver, "--steps", "1", "--checkpoint-dir", ckpt)
        expect(r.returncode == 0, f"{saver}: writing the checkpoint failed:\n{r.stderr}")
        for loader in members:
            out = tmp / f"{saver}-to-{loader}"
            r = run(loader, "--steps", "3", "--resume", ckpt, "--dump", out)
            names, differ = same_dumps(ref, out)
            same = steps(r.stdout) == steps(base.stdout)[1:]
            print(f"{saver} -> {loader}: losses {'identical' if same else 'DIFFER'}, "
                  f"{len(names) - len(differ)} of {len(names)} final dumps identical")
            expect(r.returncode == 0 and same and names and not differ,
                   f"{saver} -> {loader}: exit {r.returncode}, differ {differ}\n"
                   f"{r.stdout}{r.stderr}")


def pieces(saver, tensor):
    manifest = json.loads((tmp / f"ckpt-{saver}" / "step-1" / "manifest.json").read_text())
    t = next(t for t in manifest["tensors"] if t["name"] == tensor)
    return t["dtype"], sorted((p["start"], p["shape"]) for p in t["pieces"])


dtype, e = pieces("sharded-dp2tp2", "e")
print(f"sharded-dp2tp2: e is {dtype} in pieces {e}")
expect(dtype == "BF16" and e == [([0, 0], [2, 6]), ([2, 0], [2, 6]), ([4, 0], [2, 6]),
                                 ([6, 0], [1, 6])], f"e: {dtype} {e}")
_, m = pieces("sharded-dp2tp2", "m")
expect(m == [([0], [3])], f"m (whole on every rank) saved as {m}")
_, pe = pieces("zigzag-cp4", "pe")
print(f"zigzag-cp4: pe in pieces {pe}")
expect(pe == [([2 * i, 0], [2, 3]) for i in range(8)], f"pe: {pe}")

if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
