# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# The emitter prints repeated statement groups as loops over tables of their
# literals (lib/Target/Cpp/EmitRoll.cpp): a call per layer, an update per
# parameter, a forward and a backward per micro-batch in a pipeline's steady
# state. Rolling changes the text only: a rolled program and the same program
# printed statement by statement (--roll-repeats=false) must give the same
# losses and bit-identical dumps (every named tensor of step 1 and every
# updated parameter) on every case, and the rolled source must hold loops and
# be shorter. The cases roll layers (6 on one rank; 8 under tp), the
# micro-batches of 1F1B on pp=2 x dp=2 (8 micro-batches) and the halo and
# carry of a Mamba on cp=2.
import filecmp
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import verify_matrix  # noqa: E402

work = sys.argv[1]
MPI = shutil.which("mpirun") is not None

CASES = [
    ("gpt-tiny-l6-b4", []),
    ("llama-tiny-l8-b4", ["--grid", "tp=2"]),
    ("gpt-tiny-l5-b16", ["--grid", "pp=2,dp=2", "--microbatches", "8", "--schedule", "1f1b"]),
    ("mamba-tiny-b2", ["--grid", "cp=2"]),
]

failures = []
for preset, flags in CASES:
    if "--grid" in flags and not MPI:
        print(f"SKIP {preset} {' '.join(flags)}: no mpirun")
        continue
    model = verify_matrix.build(work, preset)
    label = "-".join([preset] + [f.strip("-").replace("=", "") for f in flags])
    results = {}
    for roll in ["true", "false"]:
        dump = os.path.join(work, f"{label}.roll-{roll}")
        source = os.path.join(work, f"{label}.roll-{roll}.cpp")
        r = subprocess.run(["braid-run", model, *flags, "--steps", "2", "--seed", "3",
                            "--quiet", "--dump", dump, "--emit-cpp", source,
                            f"--roll-repeats={roll}"], capture_output=True, text=True)
        if r.returncode != 0:
            failures.append(f"{label} roll={roll}: rc {r.returncode}\n{r.stdout}{r.stderr}")
            break
        losses = re.findall(r"^step \d+ loss \S+$", r.stdout, re.M)
        # A pipelined run writes one source per stage (NAME.stageK.cpp).
        stem, ext = os.path.splitext(source)
        sources = sorted(p for p in os.listdir(work)
                         if p == os.path.basename(source)
                         or re.fullmatch(re.escape(os.path.basename(stem)) + r"\.stage\d+" + ext, p))
        text = "".join(open(os.path.join(work, p)).read() for p in sources)
        results[roll] = (losses, dump, text)
    if len(results) != 2:
        continue
    (rolled_losses, rolled_dump, rolled), (plain_losses, plain_dump, plain) = (
        results["true"], results["false"])
    if not rolled_losses or rolled_losses != plain_losses:
        failures.append(f"{label}: losses differ: {rolled_losses} vs {plain_losses}")
    names = sorted(os.listdir(plain_dump))
    if not names or sorted(os.listdir(rolled_dump)) != names:
        failures.append(f"{label}: the dumps hold different files")
    _, mismatch, errors = filecmp.cmpfiles(rolled_dump, plain_dump, names, shallow=False)
    if mismatch or errors:
        failures.append(f"{label}: {len(mismatch) + len(errors)} dumps differ, e.g. "
                        f"{(mismatch + errors)[:3]}")
    loops = rolled.count("for (int64_t rep = 0;")
    if loops == 0 or "for (int64_t rep" in plain:
        failures.append(f"{label}: {loops} loops rolled (the plain source must have none)")
    lines_rolled, lines_plain = rolled.count("\n"), plain.count("\n")
    if not lines_rolled < lines_plain:
        failures.append(f"{label}: the rolled source is not shorter "
                        f"({lines_rolled} vs {lines_plain} lines)")
    print(f"{label}: {len(names)} dumps bit-identical, {loops} loops, "
          f"{lines_plain} -> {lines_rolled} lines")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("PASS")
