# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# A model whose MLP a front end wrote in linalg (products into zero-filled
# tensors, SwiGLU as a linalg.generic of its arithmetic, the residual as
# linalg.add), trained by braid-run, which raises it to braid ops
# (--raise-linalg-to-braid, the training pipeline's first pass):
# - on one rank it trains to the same losses and parameters, bit for bit,
#   as the model written in braid ops (llama-tiny);
# - annotated as a front end annotates it (shard.shard of the MLP's weights:
#   the gate and up projections split by column over tp, the down
#   projection by row, on the module's own shard.grid), it trains on
#   dp=2 x tp=2 and passes --verify against one rank;
# - softmax written as linalg.softmax (over the hidden and the sequence
#   dimensions) trains as braid.softmax does, and passes --verify on
#   dp=2 x tp=2 with sequence parallelism;
# - a reduction braid has no op for is refused with the pass's located
#   error and a non-zero exit.
import os
import re
import subprocess
import sys

import numpy as np

work = sys.argv[1]
native = subprocess.run([sys.executable, "-m", "braid.models", "llama-tiny"], check=True,
                        capture_output=True, text=True).stdout
failures = []

mlp = re.search(
    r"    %gate = braid\.linear %mlp_normed, %mlp_w_gate : tensor<(\d+)x(\d+)x(\d+)xf32>, "
    r"tensor<\d+x(\d+)xf32> -> .*\n(?:.*\n){3}    %mlp_out = braid\.add .*\n", native)
assert mlp, "llama-tiny's MLP not found"
B, S, H, F = (int(g) for g in mlp.groups())


def front_end_mlp(annotate):
    x, h, w_in, w_out = f"tensor<{B}x{S}x{H}xf32>", f"tensor<{B}x{S}x{F}xf32>", \
        f"tensor<{H}x{F}xf32>", f"tensor<{F}x{H}xf32>"
    product = ("{indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, "
               "affine_map<(d0, d1, d2, d3) -> (d3, d2)>, "
               "affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], "
               "iterator_types = [\"parallel\", \"parallel\", \"parallel\", \"reduction\"]}")
    body = ("^bb0(%a: f32, %b: f32, %c: f32):\n"
            "      %m = arith.mulf %a, %b : f32\n      %s = arith.addf %c, %m : f32\n"
            "      linalg.yield %s : f32\n    }")
    gate, up, down = "%mlp_w_gate", "%mlp_w_up", "%mlp_w_down"
    text = ""
    if annotate:
        text += (
            "    %col = shard.sharding @grid split_axes = [[], [1]] : !shard.sharding\n"
            f"    %gate_w = shard.shard %mlp_w_gate to %col annotate_for_users : {w_in}\n"
            f"    %up_w = shard.shard %mlp_w_up to %col annotate_for_users : {w_in}\n"
            "    %row = shard.sharding @grid split_axes = [[1]] : !shard.sharding\n"
            f"    %down_w = shard.shard %mlp_w_down to %row annotate_for_users : {w_out}\n")
        gate, up, down = "%gate_w", "%up_w", "%down_w"
    text += f"""    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1.0 : f32
    %empty_h = tensor.empty() : {h}
    %init_h = linalg.fill ins(%zero : f32) outs(%empty_h : {h}) -> {h}
    %gate = linalg.generic {product} ins(%mlp_normed, {gate} : {x}, {w_in}) outs(%init_h : {h}) {{
    {body} -> {h}
    %up = linalg.generic {product} ins(%mlp_normed, {up} : {x}, {w_in}) outs(%init_h : {h}) {{
    {body} -> {h}
    %act = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}} ins(%gate, %up : {h}, {h}) outs(%empty_h : {h}) {{
    ^bb0(%g: f32, %u: f32, %o: f32):
      %n = arith.negf %g : f32
      %e = math.exp %n : f32
      %d = arith.addf %one, %e : f32
      %sig = arith.divf %one, %d : f32
      %silu = arith.mulf %g, %sig : f32
      %r = arith.mulf %silu, %u : f32
      linalg.yield %r : f32
    }} -> {h}
    %empty_x = tensor.empty() : {x}
    %init_x = linalg.fill ins(%zero : f32) outs(%empty_x : {x}) -> {x}
    %down = linalg.generic {product.replace("(d3, d2)", "(d3, d2)")} ins(%act, {down} : {h}, {w_out}) outs(%init_x : {x}) {{
    {body} -> {x}
    %mlp_out = linalg.add ins(%attn_out, %down : {x}, {x}) outs(%empty_x : {x}) -> {x}
"""
    return text


def write(name, text):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write(text)
    return path


models = {
    "native": write("native.mlir", native),
    "linalg": write("linalg.mlir", native[:mlp.start()] + front_end_mlp(False) +
                    native[mlp.end():]),
}
annotated = native[:mlp.start()] + front_end_mlp(True) + native[mlp.end():]
annotated = re.sub(r"(\{\n|\} \{\n)", r"\1  shard.grid @grid(shape = 2x2)\n", annotated, count=1)
models["annotated"] = write("annotated.mlir", annotated)


def run(model, *args):
    r = subprocess.run(["braid-run", model, "--quiet", *args], capture_output=True, text=True)
    return r


def losses(r, what):
    if r.returncode:
        failures.append(f"{what} failed ({r.returncode}): {r.stdout}{r.stderr}")
        return []
    return [float(x) for x in re.findall(r"^step \d+ loss (\S+)$", r.stdout, re.M)]


# One rank: the raised model is the native one.
dumps = {}
for name in ("native", "linalg"):
    dumps[name] = os.path.join(work, f"dump-{name}")
    got = losses(run(models[name], "--steps", "3", "--dump", dumps[name]), name)
    dumps[name] = (got, dumps[name])
(native_losses, native_dump), (linalg_losses, linalg_dump) = dumps["native"], dumps["linalg"]
if len(native_losses) != 3 or native_losses != linalg_losses:
    failures.append(f"losses differ: native {native_losses}, linalg {linalg_losses}")
files = sorted(f for f in os.listdir(native_dump) if f.endswith(".npy")) \
    if os.path.isdir(native_dump) else []
if not files:
    failures.append("no dumps from the native run")
for f in files:
    a = np.load(os.path.join(native_dump, f))
    path = os.path.join(linalg_dump, f)
    if not os.path.exists(path):
        failures.append(f"{f}: not dumped by the linalg model's run")
    elif not np.array_equal(a, np.load(path)):
        failures.append(f"{f}: differs between the native and the linalg model")
print(f"one rank: {len(files)} dumped tensors and losses {linalg_losses} equal bit for bit")

# The annotated front-end model on dp=2 x tp=2, checked against one rank.
r = run(models["annotated"], "--grid", "dp=2,tp=2", "--steps", "2", "--verify")
if r.returncode or "verify: PASS" not in r.stdout:
    failures.append(f"annotated dp=2,tp=2 --verify: {r.returncode}\n{r.stdout}{r.stderr}")
else:
    print("annotated dp=2,tp=2: verify PASS")
# Its plan (with plan=data, so that the annotations alone split the weights)
# splits the MLP's weights as annotated.
plan = subprocess.run(["braid-opt", "--braid-training-pipeline=grid=dp=2,tp=2 plan=data",
                       "--braid-print-plan", models["annotated"], "-o", os.devnull],
                      capture_output=True, text=True)
for w, split in (("w_gate", "[-, tp]"), ("w_up", "[-, tp]"), ("w_down", "[tp, -]")):
    for layer in range(2):
        if f"param layers.{layer}.mlp.{w}: {F if w == 'w_down' else H}x" \
                f"{H if w == 'w_down' else F} {split}" not in plan.stdout:
            failures.append(f"plan: layers.{layer}.mlp.{w} not split {split}:\n"
                            f"{plan.stdout}{plan.stderr}")
if not any(f.startswith("plan:") for f in failures):
    print("plan=data: the MLP weights split as annotated")

# Softmax as front ends write it (linalg.softmax, over the hidden and over
# the sequence dimension) raises to braid.softmax (with transposes around
# the second): on one rank the same losses and updated parameters, bit for
# bit, as the model written with braid.softmax; on dp=2 x tp=2 with
# sequence parallelism (the sequence split where the softmax needs it
# whole) it passes --verify.
T, TT = f"tensor<{B}x{S}x{H}xf32>", f"tensor<{B}x{H}x{S}xf32>"
written = {
    "softmax-linalg": (
        f"    %sm_e = tensor.empty() : {T}\n"
        f"    %sm = linalg.softmax dimension(2) ins(%down : {T}) outs(%sm_e : {T}) -> {T}\n"
        f"    %sm2_e = tensor.empty() : {T}\n"
        f"    %sm2 = linalg.softmax dimension(1) ins(%sm : {T}) outs(%sm2_e : {T}) -> {T}\n"),
    "softmax-braid": (
        f"    %sm = braid.softmax %down : {T}\n"
        f"    %sm_t = braid.transpose %sm [0, 2, 1] : {T} -> {TT}\n"
        f"    %sm_s = braid.softmax %sm_t : {TT}\n"
        f"    %sm2 = braid.transpose %sm_s [0, 2, 1] : {TT} -> {T}\n"),
}
results = {}
for name, text in written.items():
    assert native.count("    %mlp_out = braid.add %attn_out, %down") == 1  # the layer function
    model = write(name + ".mlir", native.replace(
        "    %mlp_out = braid.add %attn_out, %down",
        text + "    %mlp_out = braid.add %attn_out, %sm2"))
    folder = os.path.join(work, "dump-" + name)
    results[name] = (losses(run(model, "--steps", "3", "--dump", folder), name), folder, model)
(la, da, linalg_model), (lb, db, _) = results["softmax-linalg"], results["softmax-braid"]
if len(la) != 3 or la != lb:
    failures.append(f"softmax: losses differ: linalg {la}, braid {lb}")
updated = sorted(f for f in os.listdir(db) if f.startswith("updated.")) \
    if os.path.isdir(db) else []
if not updated:
    failures.append("softmax: no updated parameters dumped")
for f in updated:
    path = os.path.join(da, f)
    if not os.path.exists(path) or not np.array_equal(np.load(path), np.load(os.path.join(db, f))):
        failures.append(f"softmax: {f} differs between linalg.softmax and braid.softmax")
print(f"linalg.softmax: losses {la} and {len(updated)} updated parameters equal to braid.softmax")
r = run(linalg_model, "--grid", "dp=2,tp=2", "--sequence-parallel", "--steps", "2", "--verify")
if r.returncode or "verify: PASS" not in r.stdout:
    failures.append(f"linalg.softmax dp=2,tp=2 sp --verify: {r.returncode}\n{r.stdout}{r.stderr}")
else:
    print("linalg.softmax on dp=2,tp=2 with sequence parallelism: verify PASS")

# What braid has no op for is refused at its location.
reduce = native.replace(
    "    %mlp_out = braid.add %attn_out, %down",
    f"    %red_e = tensor.empty() : tensor<{B}x{S}xf32>\n"
    f"    %red = linalg.reduce ins(%down : {T}) outs(%red_e : tensor<{B}x{S}xf32>) "
    "dimensions = [2]\n"
    "      (%in: f32, %acc: f32) {\n"
    "        %m = arith.maximumf %in, %acc : f32\n"
    "        linalg.yield %m : f32\n"
    "      }\n"
    "    %mlp_out = braid.add %attn_out, %down", 1)
r = run(write("reduce.mlir", reduce), "--steps", "1")
if r.returncode == 0 or not re.search(r"reduce\.mlir:\d+:\d+: error: 'linalg.reduce' op "
                                      r"cannot be raised to a braid op", r.stderr):
    failures.append(f"linalg.reduce not refused as expected ({r.returncode}):\n"
                    f"{r.stdout}{r.stderr}")
else:
    print("linalg.reduce: refused at its location")

if failures:
    print("\n".join(failures))
    sys.exit(1)
