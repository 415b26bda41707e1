# RUN: %python %s %braid_src
#
# Invalid input must give a located error and exit 1, never a crash or a hang:
# braid-opt (verify, canonicalize, model stats) runs on deterministic mutations
# of the example models — a dimension changed, an op swapped for another one,
# an operand dropped, a type's element type changed, a line deleted.
import pathlib
import random
import re
import subprocess
import sys

root = pathlib.Path(sys.argv[1])
rng = random.Random(20261130)
OPS = ["linear", "attention", "rms_norm", "layer_norm", "glu silu", "add", "conv1d",
       "selective_scan", "router", "dispatch", "combine", "expert_ffn silu",
       "embedding", "cross_entropy", "reshape", "transpose", "batch_matmul"]


def mutate(text):
    lines = text.split("\n")
    i = rng.randrange(len(lines))
    line = lines[i]
    kind = rng.randrange(5)
    if kind == 0:  # change one dimension of one type
        dims = list(re.finditer(r"(?<=[<x])\d+(?=x)", line))
        if dims:
            m = rng.choice(dims)
            line = line[:m.start()] + str(rng.choice([0, 1, 3, 7, 97])) + line[m.end():]
    elif kind == 1:  # swap the op for another braid op
        line = re.sub(r"braid\.[a-z_]+( silu| gelu)?", "braid." + rng.choice(OPS), line, count=1)
    elif kind == 2:  # drop one operand
        line = re.sub(r", %[\w.]+", "", line, count=1)
    elif kind == 3:  # change an element type
        line = line.replace("xf32>", "xbf16>", 1) if rng.random() < 0.5 else line.replace("xi32>", "xf32>", 1)
    else:  # delete the line
        line = ""
    lines[i] = line
    return "\n".join(lines)


examples = sorted((root / "examples").glob("*.mlir"))
runs = rejected = 0
failures = []
for path in examples:
    text = path.read_text()
    for _ in range(20):
        mutant = mutate(mutate(text))
        for args in (["--canonicalize"], ["--braid-model-stats"]):
            runs += 1
            try:
                proc = subprocess.run(["braid-opt", "-", "-o", "/dev/null", *args],
                                      input=mutant, capture_output=True, text=True,
                                      timeout=20)
            except subprocess.TimeoutExpired:
                failures.append(f"{path.name}: braid-opt {' '.join(args)} hung")
                continue
            if proc.returncode == 0:
                continue
            rejected += 1
            if proc.returncode != 1 or not re.search(r"<stdin>:\d+:\d+: error: ", proc.stderr):
                failures.append(f"{path.name}: braid-opt {' '.join(args)} exited "
                                f"{proc.returncode} without a located error:\n"
                                f"{proc.stderr[-2000:]}")
print(f"{runs} runs, {rejected} rejected with a located error, {len(failures)} failures")
for failure in failures[:5]:
    print(failure)
sys.exit(1 if failures else 0)
