# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# braid-opt --braid-print-plan against what runs: for several plans, the
# transfers it predicts per step (count and ring-model bytes per kind, the
# point-to-point shifts of ring attention included) equal what the runtime
# counts in a step of the same program on its ranks;
# and for tensor parallelism without sequence parallelism the bytes equal the
# analytic volume, 8 b s h (t-1)/t elements per layer (two all-reduces of the
# activations forward, two backward) plus the terms outside the layers.
import os
import re
import subprocess
import sys

work = sys.argv[1]
failures = []


def build(preset, *flags):
    path = os.path.join(work, "-".join([preset, *flags]).replace("--", "") + ".mlir")
    with open(path, "w") as f:
        f.write(subprocess.run([sys.executable, "-m", "braid.models", preset, *flags],
                               check=True, capture_output=True, text=True).stdout)
    return path


def plan(model, options):
    pipeline = " ".join(f"{k}={v}" for k, v in options.items())
    r = subprocess.run(["braid-opt", f"--braid-training-pipeline={pipeline}",
                        "--braid-print-plan", model, "-o", os.devnull],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"print-plan failed:\n{r.stderr}")
    return r.stdout


def kinds(text, pattern):
    out = {}
    for kind, count, sent in re.findall(pattern, text, re.M):
        c, b = out.get(kind, (0, 0))
        out[kind] = (c + int(count), b + int(sent))
    return out


PLAN_LINE = r"^collective (\w+) over \S+: (\d+) per step, (\d+) bytes sent per rank$"
RUN_LINE = r"^collective (\w+): (\d+) per step, (\d+) bytes sent per rank$"

llama = build("llama-tiny")
moe = build("moe-tiny", "--capacity-factor", "4")
gpt = build("gpt-tiny")
gpt_mb = build("gpt-tiny", "--batch", "8")
CASES = [
    (llama, {"grid": "tp=2"}),
    (llama, {"grid": "dp=2,tp=2", "sequence-parallel": "true"}),
    (gpt, {"grid": "dp=2", "zero": "3"}),
    (gpt, {"grid": "dp=2", "zero": "2"}),
    (moe, {"grid": "ep=2,tp=2"}),
    # Ring attention: its key/value blocks and cotangents move as dist.shift
    # pairs, which the runtime counts as it counts collectives.
    (llama, {"grid": "cp=2", "cp-attention": "ring"}),
    (llama, {"grid": "dp=2,cp=2", "cp-attention": "ring"}),
    # A pipeline: the plan prints each stage's program; the run reports
    # stage 0's (rank 0's), its activations sent on to stage 1 included.
    (gpt_mb, {"grid": "pp=2,dp=2", "microbatches": "4"}),
]
for model, options in CASES:
    label = f"{os.path.basename(model)} {options}"
    predicted = plan(model, options)
    args = ["braid-run", model, "--steps", "1", "--quiet", "--grid", options["grid"]]
    if "zero" in options:
        args += ["--zero", options["zero"]]
    if options.get("sequence-parallel") == "true":
        args.append("--sequence-parallel")
    if "cp-attention" in options:
        args += ["--cp-attention", options["cp-attention"]]
    if "microbatches" in options:
        args += ["--microbatches", options["microbatches"]]
    # A pipelined plan's lines are per stage: stage 0's are what rank 0 runs.
    if "pp=" in options["grid"]:
        predicted = "\n".join(line[len("stage 0: "):] for line in predicted.splitlines()
                              if line.startswith("stage 0: "))
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        failures.append(f"{label}: braid-run failed\n{r.stdout}{r.stderr}")
        continue
    want, got = kinds(predicted, PLAN_LINE), kinds(r.stdout, RUN_LINE)
    total = re.search(r"^collective_bytes_per_step: (\d+)$", predicted, re.M)
    ran = re.search(r"^collective_bytes_per_step: (\d+)$", r.stdout, re.M)
    print(f"{label}: plan {want}, run {got}")
    if not want or want != got or not total or not ran or total.group(1) != ran.group(1):
        failures.append(f"{label}: the plan predicts {want} ({total and total.group(1)} "
                        f"bytes), the run counted {got} ({ran and ran.group(1)} bytes)")

# Tensor parallelism over t ranks on llama-tiny (b 2, s 16, h 64, 2 layers,
# f32): per layer 8 b s h (t-1)/t elements; the vocabulary-parallel
# embedding's all-reduce and its transpose; the cross-entropy's row maxima
# and (sum, label logit) per row, forward and recomputed backward, and its
# loss cotangent; the norm weights' gradients (2 per layer and the final
# one, replicated over tp); the global gradient norm (over the whole grid,
# here tp).
b, s, h, layers, t, f32 = 2, 16, 64, 2, 2, 4
ring = 2 * (t - 1) / t
expected = (layers * 8 * b * s * h * (t - 1) / t * f32
            + 2 * ring * b * s * h * f32
            + 2 * ring * (b * s * f32 + 2 * b * s * f32) + ring * f32
            + (2 * layers + 1) * ring * h * f32
            + ring * f32)
text = plan(llama, {"grid": "tp=2"})
m = re.search(r"^collective all_reduce over tp: \d+ per step, (\d+) bytes", text, re.M)
layer_volume = layers * 8 * b * s * h * (t - 1) / t * f32
print(f"tp=2 all-reduce volume: {m and m.group(1)} bytes, analytic {expected:.0f} "
      f"(of which the layers' 8bsh(t-1)/t: {layer_volume:.0f})")
if not m or int(m.group(1)) != round(expected):
    failures.append(f"tp=2: the plan's all-reduce volume {m and m.group(1)} is not the "
                    f"analytic {expected:.0f}")

if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
