# REQUIRES: mpi
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %mpicxx %mpirun %braid_src %braid_rt_lib %t
#
# Pipeline stages of the inference programs run (issue 42;
# dialects/braid/Transforms/PipelineInference.cpp): the training pipeline
# with no optimizer cuts prefill, decode and forward into one program per pp
# stage, braid-translate --braid-output-dir writes them, and each stage's
# three programs are linked into one binary (they export
# braid_program_get_prefill/_decode/_forward, as one rank's do) and launched
# together, one binary per stage (mpirun -np K stage0 : -np K stage1 ...).
# Inputs/pipeline-inference-driver.cpp runs prefill and three decode steps on
# fixed tokens; the last stage's logits must equal those of the programs
# built for one rank (seed 5 initializes both alike), which checks the
# transfers between stages, each stage's KV cache (decode reads what prefill
# wrote) and the micro-batches (each its own cache, the logits concatenated
# in the batch's order):
# - gpt-tiny (the tied embedding on both stages), pp=2: bitwise equal (every
#   rank, the reference's too, on one thread: OpenBLAS splits a product among
#   threads into tiles whose edges other kernels compute, so a row's bits can
#   depend on the thread count);
# - llama-tiny, pp=2, 2 micro-batches of 2 sequences: within 1e-5 relative.
#   A micro-batch's products have fewer rows than the whole batch's, and on
#   some processors (AMD EPYC's OpenBLAS kernels; not the AVX-512 Xeon's)
#   a row's bits depend on the rows beside it (the edge tile's kernel adds in
#   another order: a cblas_sgemm of 2 rows differs from the same 2 rows of a
#   64-row product by ~1e-7 relative);
# - llama-tiny, pp=2 x tp=2, 2 micro-batches: within 1e-5 relative (the tp
#   all-reduces add in another order);
# - hybrid-tiny (Mamba, attention and MoE layers: conv and SSM states beside
#   the KV cache, each per micro-batch), pp=2, 2 micro-batches: within 1e-5
#   relative (a micro-batch's expert buffers hold other rows).
import os
import pathlib
import subprocess
import sys

import numpy as np
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import mpi_launch  # noqa: E402

mpicxx, mpirun = sys.argv[1], sys.argv[2]
src, libdir, tmp = pathlib.Path(sys.argv[3]), pathlib.Path(sys.argv[4]), pathlib.Path(sys.argv[5])
failures = []
env, launcher = mpi_launch.launcher(mpirun)
env["PIPELINE_TEST_PROMPT_LEN"] = "8"
env["BRAID_CPU_THREADS"] = "1"
libs = [libdir / "libbraid_runtime_main_mpi.a", libdir / "libbraid_runtime_mpi.a",
        libdir / "libbraid_kernels_cpu.a", libdir / "libbraid_runtime.a"]
kernel_link = (libdir / "braid_kernels_cpu.link").read_text().split()

driver = tmp / "driver.o"
subprocess.run([mpicxx, "-std=c++17", "-O1", "-c", f"-I{src / 'runtime' / 'include'}",
                f"-I{src / 'runtime' / 'src'}",
                str(src / "test" / "Runtime" / "Inputs" / "pipeline-inference-driver.cpp"),
                "-o", str(driver)], check=True, env=env)


def build(name, model, options):
    """The programs of `options` in tmp/name, one binary per stage (one when
    there is no pipeline); their paths in stage order."""
    out = tmp / name
    out.mkdir()
    derived = subprocess.run(["braid-opt", "--braid-derive-inference=batch=4 prompt-len=8",
                              str(src / "examples" / model)],
                             check=True, capture_output=True, text=True).stdout
    lowered = subprocess.run(["braid-opt", f"--braid-training-pipeline=optimizer=none {options}"],
                             input=derived, check=True, capture_output=True, text=True).stdout
    (out / "m.mlir").write_text(lowered)
    subprocess.run(["braid-translate", "--braid-to-cpp", f"--braid-output-dir={out}",
                    str(out / "m.mlir")], check=True)
    stages = sorted({p.name.split(".")[1] for p in out.glob("prefill.pp*.cpp")}) or [""]
    binaries = []
    for stage in stages:
        suffix = f".{stage}" if stage else ""
        exe = out / f"run{suffix}"
        sources = [str(out / f"{p}{suffix}.cpp") for p in ("prefill", "decode", "forward")]
        subprocess.run([mpicxx, "-std=c++17", "-O1", f"-I{src / 'runtime' / 'include'}",
                        str(driver), *sources, *map(str, libs), *kernel_link, "-lpthread",
                        "-o", str(exe)], check=True, env=env)
        binaries.append(exe)
    return binaries


def launch(binaries, ranks_per_stage):
    """The logits the last rank printed: {"prefill 0": array, "decode 1": ...}."""
    command = list(launcher)
    for i, exe in enumerate(binaries):
        command += ([":"] if i else []) + ["-np", str(ranks_per_stage), str(exe), "--seed", "5"]
    try:
        r = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    except subprocess.TimeoutExpired:
        failures.append(f"timed out: {command}")
        return {}
    if r.returncode:
        failures.append(f"{command} failed ({r.returncode})\n{r.stdout}\n{r.stderr}")
        return {}
    logits = {}
    for line in r.stdout.splitlines():
        if ":" in line and line.split(":")[0].split()[0] in ("prefill", "decode"):
            what, values = line.split(":", 1)
            logits[what] = np.array([float(v) for v in values.split()])
    return logits


def compare(name, got, want, tolerance):
    if sorted(got) != sorted(want) or len(want) != 4:
        failures.append(f"{name}: calls {sorted(got)}, expected {sorted(want)}")
        return
    for what, reference in want.items():
        worst = np.abs(got[what] - reference).max() / np.abs(reference).max()
        print(f"{name} {what}: {reference.size} logits, worst relative difference {worst:.3g}")
        if not worst <= tolerance:
            failures.append(f"{name} {what}: logits differ from one rank's by {worst:.3g}")


references = {}
for name, model, options, per_stage, tolerance in [
        ("llama-pp2-mb2", "llama-tiny.mlir", "grid=pp=2 microbatches=2", 1, 1e-5),
        ("gpt-pp2", "gpt-tiny.mlir", "grid=pp=2", 1, 0.0),
        ("llama-pp2tp2-mb2", "llama-tiny.mlir", "grid=pp=2,tp=2 microbatches=2", 2, 1e-5),
        ("hybrid-pp2-mb2", "hybrid-tiny.mlir", "grid=pp=2 microbatches=2", 1, 1e-5)]:
    if model not in references:
        references[model] = launch(build(f"{model}-one", model, ""), 1)
    compare(name, launch(build(name, model, options), per_stage), references[model], tolerance)

if failures:
    print("\n\n".join(failures))
    sys.exit(1)
print("ok")
