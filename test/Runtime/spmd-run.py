# REQUIRES: mpi
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %mpicxx %mpirun %cxx %braid_src %braid_rt_lib %t
#
# Differential execution of an emitted SPMD program. A hand-partitioned
# per-rank program for a dp=2 x tp=2 grid (below) and its unpartitioned twin
# go through braid-translate --braid-to-cpp; the twin runs on one rank, the
# partitioned one on 4 MPI ranks. Both start from the same global state (each
# rank initializes its slice of every sharded tensor), so the losses of two
# steps must agree (fp32, relative error <= 1e-5), and so must the parameters
# the step updated and the dumped gradients (assembled from the ranks).
#
# The partitioned program exercises every piece the emitter lowers: a
# vocabulary-parallel embedding (49 rows per rank, the last one padding, summed
# over tp) with positions added once (bias_add), a sequence split over tp
# (all_slice; unslice and an all-reduce make it whole again, as a slice's
# adjoint does, and it is split again), all_gather / reduce_scatter along the sequence (dimension 1,
# through re-laid-out scratch) around a column- then row-parallel MLP,
# all_to_all to a hidden split and back (re-layout on both sides) with a
# hidden-sharded bias in between, a vocabulary-parallel cross-entropy over
# the global batch (denominator) summed over dp, its gradient carried back
# through the tied table into a vocabulary-parallel embedding gradient (a
# stand-in for the table's gradient, dumped as grad.wte), and ZeRO updates
# over dp:
# SGD of a tp-sharded parameter from its whole gradient, AdamW of a
# replicated one from a reduce-scattered (ZeRO-2) gradient, each ending with
# the in-place all-gather of the parameter.
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import mpi_launch  # noqa: E402

mpicxx, mpirun, cxx = sys.argv[1], sys.argv[2], sys.argv[3]
src, libdir, tmp = pathlib.Path(sys.argv[4]), pathlib.Path(sys.argv[5]), pathlib.Path(sys.argv[6])
failures = []


def expect(cond, message):
    if not cond:
        failures.append(message)


MODEL = '{braid.model = {name = "spmd-mlp", family = "gpt", vocab = 97 : i64}}'
ADAMW = ('beta1 = 9.000000e-01 : f64, beta2 = 0.95 : f64, eps = 1.000000e-08 : f64, '
         'lr = 1.000000e-02 : f64, weight_decay = 1.000000e-01 : f64')
SGD = 'lr = 1.000000e-01 : f64, weight_decay = 5.000000e-01 : f64'

TWIN = f"""
module attributes {MODEL} {{
  braid.param @wte normal(0.5) : tensor<97x8xf32>
  braid.param @wpe normal(0.5) : tensor<8x8xf32>
  braid.param @norm.g ones : tensor<8xf32>
  braid.param @up normal(0.3) : tensor<8x32xf32>
  braid.param @up.b normal(0.1) : tensor<32xf32>
  braid.param @down normal(0.3) : tensor<32x8xf32>
  braid.param @down.b normal(0.1) : tensor<8xf32>
  braid.param @c normal(0.2) : tensor<8xf32>
  braid.state @opt.step zeros : tensor<f32>
  braid.state @opt.m.wpe zeros : tensor<8x8xf32>
  braid.state @opt.v.wpe zeros : tensor<8x8xf32>

  func.func @step(%tok: tensor<4x8xi32>, %labels: tensor<4x8xi32>) -> tensor<f32> {{
    %wte = braid.get_param @wte : tensor<97x8xf32>
    %wpe = braid.get_param @wpe : tensor<8x8xf32>
    %h = braid.embedding %tok, %wte positions %wpe : tensor<4x8xi32>, tensor<97x8xf32>, tensor<8x8xf32> -> tensor<4x8x8xf32> loc("h")
    %g = braid.get_param @norm.g : tensor<8xf32>
    %n = braid.rms_norm %h, %g : tensor<4x8x8xf32>, tensor<8xf32> -> tensor<4x8x8xf32>
    %up = braid.get_param @up : tensor<8x32xf32>
    %upb = braid.get_param @up.b : tensor<32xf32>
    %a = braid.linear %n, %up bias %upb : tensor<4x8x8xf32>, tensor<8x32xf32>, tensor<32xf32> -> tensor<4x8x32xf32>
    %ge = braid.gelu %a : tensor<4x8x32xf32>
    %down = braid.get_param @down : tensor<32x8xf32>
    %downb = braid.get_param @down.b : tensor<8xf32>
    %y = braid.linear %ge, %down bias %downb : tensor<4x8x32xf32>, tensor<32x8xf32>, tensor<8xf32> -> tensor<4x8x8xf32>
    %r = braid.add %h, %y : tensor<4x8x8xf32>
    %c = braid.get_param @c : tensor<8xf32>
    %q = braid.bias_add %r, %c : tensor<4x8x8xf32>, tensor<8xf32>
    %logits = braid.linear %q, %wte transpose_weight : tensor<4x8x8xf32>, tensor<97x8xf32> -> tensor<4x8x97xf32> loc("logits")
    %loss = braid.cross_entropy %logits, %labels : tensor<4x8x97xf32>, tensor<4x8xi32> -> tensor<f32>
    %one = braid.fill 1.0 : tensor<f32>
    %dl = braid.cross_entropy_grad %logits, %labels, %one : tensor<4x8x97xf32>, tensor<4x8xi32>, tensor<f32> -> tensor<4x8x97xf32>
    %dq = braid.linear %dl, %wte : tensor<4x8x97xf32>, tensor<97x8xf32> -> tensor<4x8x8xf32>
    %gwte = braid.embedding_grad %tok, %dq : tensor<4x8xi32>, tensor<4x8x8xf32> -> tensor<97x8xf32> loc("grad.wte")
    %gc = braid.fill 0.5 : tensor<8xf32> loc("grad.c")
    braid.sgd_update @c, %gc, %one {{{SGD}}} : tensor<8xf32>, tensor<f32>
    %gwpe = braid.fill 0.5 : tensor<8x8xf32> loc("grad.wpe")
    braid.increment @opt.step
    braid.adamw_update @wpe, %gwpe, %one moments @opt.m.wpe, @opt.v.wpe step @opt.step {{{ADAMW}}} : tensor<8x8xf32>, tensor<f32>
    return %loss : tensor<f32>
  }}
}}
"""

DP = '{braid.global_shape = array<i64: 4, 8>, braid.split = [["dp"], []]}'
PARTITIONED = f"""
module attributes {MODEL} {{
  shard.grid @grid(shape = 2x2) {{braid.axes = ["dp", "tp"]}}
  braid.param @wte normal(0.5) {{braid.global_shape = array<i64: 97, 8>, braid.split = [["tp"], []]}} : tensor<49x8xf32>
  braid.param @wpe normal(0.5) : tensor<8x8xf32>
  braid.param @norm.g ones : tensor<8xf32>
  braid.param @up normal(0.3) {{braid.global_shape = array<i64: 8, 32>, braid.split = [[], ["tp"]]}} : tensor<8x16xf32>
  braid.param @up.b normal(0.1) {{braid.global_shape = array<i64: 32>, braid.split = [["tp"]]}} : tensor<16xf32>
  braid.param @down normal(0.3) {{braid.global_shape = array<i64: 32, 8>, braid.split = [["tp"], []]}} : tensor<16x8xf32>
  braid.param @down.b normal(0.1) : tensor<8xf32>
  braid.param @c normal(0.2) {{braid.global_shape = array<i64: 8>, braid.split = [["tp"]]}} : tensor<4xf32>
  braid.state @opt.step zeros : tensor<f32>
  braid.state @opt.m.wpe zeros {{braid.global_shape = array<i64: 64>, braid.split = [["dp"]]}} : tensor<32xf32>
  braid.state @opt.v.wpe zeros {{braid.global_shape = array<i64: 64>, braid.split = [["dp"]]}} : tensor<32xf32>

  func.func @step(%tok: tensor<2x8xi32> {DP}, %labels: tensor<2x8xi32> {DP}) -> tensor<f32> {{
    %wte = braid.get_param @wte : tensor<49x8xf32>
    %part = braid.embedding %tok, %wte {{vocab_axes = ["tp"]}} : tensor<2x8xi32>, tensor<49x8xf32> -> tensor<2x8x8xf32>
    %h0 = shard.all_reduce %part on @grid grid_axes = [1] : tensor<2x8x8xf32> -> tensor<2x8x8xf32>
    %wpe = braid.get_param @wpe : tensor<8x8xf32>
    %h = braid.bias_add %h0, %wpe : tensor<2x8x8xf32>, tensor<8x8xf32> loc("h")
    %s0 = shard.all_slice %h on @grid grid_axes = [1] slice_axis = 1 : tensor<2x8x8xf32> -> tensor<2x4x8xf32>
    %u = braid.unslice %s0 along 1 over ["tp"] : tensor<2x4x8xf32> -> tensor<2x8x8xf32>
    %hu = shard.all_reduce %u on @grid grid_axes = [1] : tensor<2x8x8xf32> -> tensor<2x8x8xf32>
    %s = shard.all_slice %hu on @grid grid_axes = [1] slice_axis = 1 : tensor<2x8x8xf32> -> tensor<2x4x8xf32>
    %g = braid.get_param @norm.g : tensor<8xf32>
    %n = braid.rms_norm %s, %g : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
    %ng = shard.all_gather %n on @grid grid_axes = [1] gather_axis = 1 : tensor<2x4x8xf32> -> tensor<2x8x8xf32>
    %up = braid.get_param @up : tensor<8x16xf32>
    %upb = braid.get_param @up.b : tensor<16xf32>
    %a = braid.linear %ng, %up bias %upb : tensor<2x8x8xf32>, tensor<8x16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
    %ge = braid.gelu %a : tensor<2x8x16xf32>
    %down = braid.get_param @down : tensor<16x8xf32>
    %p = braid.linear %ge, %down : tensor<2x8x16xf32>, tensor<16x8xf32> -> tensor<2x8x8xf32>
    %ps = shard.reduce_scatter %p on @grid grid_axes = [1] scatter_axis = 1 : tensor<2x8x8xf32> -> tensor<2x4x8xf32>
    %downb = braid.get_param @down.b : tensor<8xf32>
    %y = braid.bias_add %ps, %downb : tensor<2x4x8xf32>, tensor<8xf32>
    %r = braid.add %s, %y : tensor<2x4x8xf32>
    %rh = shard.all_to_all %r on @grid grid_axes = [1] split_axis = 2 concat_axis = 1 : tensor<2x4x8xf32> -> tensor<2x8x4xf32>
    %c = braid.get_param @c : tensor<4xf32>
    %qh = braid.bias_add %rh, %c : tensor<2x8x4xf32>, tensor<4xf32>
    %qs = shard.all_to_all %qh on @grid grid_axes = [1] split_axis = 1 concat_axis = 2 : tensor<2x8x4xf32> -> tensor<2x4x8xf32>
    %q = shard.all_gather %qs on @grid grid_axes = [1] gather_axis = 1 : tensor<2x4x8xf32> -> tensor<2x8x8xf32>
    %logits = braid.linear %q, %wte transpose_weight : tensor<2x8x8xf32>, tensor<49x8xf32> -> tensor<2x8x49xf32>
    %l = braid.cross_entropy %logits, %labels {{vocab_axes = ["tp"], vocab_size = 97 : i64, denominator = 32 : i64}} : tensor<2x8x49xf32>, tensor<2x8xi32> -> tensor<f32>
    %loss = shard.all_reduce %l on @grid grid_axes = [0] : tensor<f32> -> tensor<f32>
    %one = braid.fill 1.0 : tensor<f32>
    %dl = braid.cross_entropy_grad %logits, %labels, %one {{vocab_axes = ["tp"], vocab_size = 97 : i64, denominator = 32 : i64}} : tensor<2x8x49xf32>, tensor<2x8xi32>, tensor<f32> -> tensor<2x8x49xf32>
    %dqp = braid.linear %dl, %wte : tensor<2x8x49xf32>, tensor<49x8xf32> -> tensor<2x8x8xf32>
    %dq = shard.all_reduce %dqp on @grid grid_axes = [1] : tensor<2x8x8xf32> -> tensor<2x8x8xf32>
    %gwl = braid.embedding_grad %tok, %dq {{vocab_axes = ["tp"]}} : tensor<2x8xi32>, tensor<2x8x8xf32> -> tensor<49x8xf32>
    %gwte = shard.all_reduce %gwl on @grid grid_axes = [0] : tensor<49x8xf32> -> tensor<49x8xf32> loc("grad.wte")
    %gc = braid.fill 0.5 : tensor<4xf32> loc("grad.c")
    braid.sgd_update @c, %gc, %one {{{SGD}, zero_axes = ["dp"]}} : tensor<4xf32>, tensor<f32>
    %half = braid.fill 0.25 : tensor<8x8xf32>
    %flat = braid.reshape %half : tensor<8x8xf32> -> tensor<64xf32>
    %gwpe = shard.reduce_scatter %flat on @grid grid_axes = [0] scatter_axis = 0 : tensor<64xf32> -> tensor<32xf32> loc("grad.wpe")
    braid.increment @opt.step
    braid.adamw_update @wpe, %gwpe, %one moments @opt.m.wpe, @opt.v.wpe step @opt.step {{{ADAMW}, zero_axes = ["dp"]}} : tensor<32xf32>, tensor<f32>
    return %loss : tensor<f32>
  }}
}}
"""

env, launcher = mpi_launch.launcher(mpirun)

include = f"-I{src / 'runtime' / 'include'}"
plain_libs = [libdir / "libbraid_runtime_main.a", libdir / "libbraid_kernels_cpu.a",
              libdir / "libbraid_runtime.a"]
mpi_libs = [libdir / "libbraid_runtime_main_mpi.a", libdir / "libbraid_runtime_mpi.a",
            libdir / "libbraid_runtime.a", libdir / "libbraid_kernels_cpu.a"]
missing = [str(p) for p in plain_libs + mpi_libs if not p.exists()]
if missing:
    print(f"missing {missing}: build braid_runtime_main, braid_kernels_cpu and (MPI found) "
          f"braid_runtime_main_mpi, braid_runtime_mpi")
    sys.exit(1)


def build(name, text, compiler, libs):
    mlir, source, exe = tmp / f"{name}.mlir", tmp / f"{name}.cpp", tmp / name
    mlir.write_text(text)
    # Transfers become dist ops first, their re-layouts explicit (the
    # training pipeline's last step), names kept for the dumps.
    lowered = subprocess.run(["braid-opt", str(mlir), "--convert-braid-to-dist",
                              "-mlir-print-debuginfo"], check=True, capture_output=True,
                             text=True).stdout
    subprocess.run(["braid-translate", "--braid-to-cpp", "-", "-o", str(source)],
                   input=lowered, text=True, check=True)
    # libbraid_kernels_cpu.a's own libraries (OpenBLAS) follow it.
    kernel_link = (libdir / "braid_kernels_cpu.link").read_text().split()
    subprocess.run([compiler, "-std=c++17", "-O1", include, str(source)] +
                   [str(p) for p in libs] + kernel_link + ["-lpthread", "-o", str(exe)],
                   check=True, env=env)
    return exe


twin = build("twin", TWIN, cxx, plain_libs)
partitioned = build("partitioned", PARTITIONED, mpicxx, mpi_libs)
source = (tmp / "partitioned.cpp").read_text()
expect(re.search(r'step, "dp=2,tp=2"(, [^{}]*)?};', source) is not None,
       "the partitioned program does not record its grid")
expect("braid_rt_comm(rt, \"world\")" not in source, "the step reduces the loss over the world")


def run(cmd, ranks=None):
    return mpi_launch.run(launcher, env, cmd, ranks, 120, failures)


def losses(result, what):
    expect(result.returncode == 0,
           f"{what} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    peaks = re.findall(r"^(planned|measured)_peak_bytes: (\d+)$", result.stdout, re.M)
    expect(len(peaks) == 2 and peaks[0][1] == peaks[1][1],
           f"{what}: planned and measured peaks differ: {peaks}")
    return [float(x) for x in re.findall(r"^step \d+ loss (\S+)$", result.stdout, re.M)]


args = ["--seed", "7", "--steps", "2", "--quiet"]
dump1, dump4 = tmp / "dump-twin", tmp / "dump-partitioned"
want = losses(run([twin, *args, "--dump", dump1]), "twin")
got = losses(run([partitioned, *args, "--dump", dump4], ranks=4), "partitioned on 4 ranks")
expect(len(want) == 2 and len(got) == 2, f"losses: twin {want}, partitioned {got}")
for step, (a, b) in enumerate(zip(got, want), 1):
    expect(abs(a - b) <= 1e-5 * abs(b), f"step {step}: partitioned loss {a} != twin loss {b}")
if len(want) == 2:
    expect(want[0] != want[1], f"the updates did not change the loss: {want}")

# Updated parameters and gradients, assembled from the ranks by the runtime.
for name in ["updated.c", "updated.wpe", "updated.up", "updated.wte", "grad.c", "grad.wpe",
             "grad.wte"]:
    a, b = dump4 / f"{name}.npy", dump1 / f"{name}.npy"
    if not (a.exists() and b.exists()):
        failures.append(f"{name}.npy missing: partitioned {a.exists()}, twin {b.exists()}")
        continue
    x, y = np.load(a).astype(np.float64).ravel(), np.load(b).astype(np.float64).ravel()
    if x.shape != y.shape:
        failures.append(f"{name}: shape {x.shape} != {y.shape}")
        continue
    err = float(np.max(np.abs(x - y)))
    expect(err <= 1e-5 * max(1.0, float(np.max(np.abs(y)))), f"{name}: max error {err}")

for f in failures:
    print(f)
print(f"twin {want}, partitioned {got}")
print("ok" if not failures else f"{len(failures)} failures")
sys.exit(1 if failures else 0)
