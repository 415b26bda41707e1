"""Are two builds' emitted programs byte-identical?

A refactoring of the compiler (op interfaces replacing per-op switches, a new
emitter structure) must not change what it emits. This script compiles the
tiny presets (4 layers, batch 4: every grid below divides them) on the grids the differential tests run them on, plus a 12-layer
GPT-3 under the planner's usual configurations, with the `braid-opt` and
`braid-translate` of each build, and compares every partitioned module and
every emitted C++ program byte for byte.

usage:
  python3 bench/compile/emit_identity.py --emit BIN_DIR OUT_DIR
  python3 bench/compile/emit_identity.py --compare OUT_A OUT_B
  python3 bench/compile/emit_identity.py BIN_A BIN_B   (both, in a temp dir)

It prints one line per differing file and a summary, and exits non-zero when
anything differs or fails to compile.
"""
import argparse
import concurrent.futures
import filecmp
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

TINY = ["llama-tiny", "gpt-tiny", "moe-tiny", "mamba-tiny", "hybrid-tiny"]
# The differential grids of test/Runtime (data, tensor with sequence
# parallelism, ZeRO stages, context, expert, pipelines with micro-batches).
TINY_CONFIGS = {
    "dp2tp2-z1-sp": "grid=dp=2,tp=2 zero=1 sequence-parallel=true",
    "dp2tp2-z2-sel": "grid=dp=2,tp=2 zero=2 sequence-parallel=true recompute=selective",
    "dp2tp2-z3": "grid=dp=2,tp=2 zero=3",
    "cp2tp2": "grid=cp=2,tp=2",
    "dp2cp2-full": "grid=dp=2,cp=2 recompute=full",
    "pp2-mb2": "grid=pp=2 microbatches=2",
    "pp2dp2-z1": "grid=pp=2,dp=2 zero=1 microbatches=2",
    "pp2dp2-il": "grid=pp=2,dp=2 zero=1 microbatches=2 schedule=interleaved virtual-stages=2",
    "dp2-bf16": "grid=dp=2 dtype=bf16",
}
MOE_CONFIGS = {"dp2ep2": "grid=dp=2,ep=2 zero=1"}
GPT3 = "grid=dp=8,tp=8 sequence-parallel=true recompute=selective"
GPT3_CONFIGS = {
    "z1": f"{GPT3} zero=1",
    "z3": f"{GPT3} zero=3",
    "pp": "grid=pp=4,dp=2,tp=8 sequence-parallel=true recompute=selective zero=1 microbatches=4",
}


def preset(out_dir, name, *extra):
    path = os.path.join(out_dir, "models", f"{name}.mlir")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        text = subprocess.run([sys.executable, "-m", "braid.models", *extra], check=True,
                              capture_output=True, text=True,
                              cwd=os.path.join(ROOT, "python")).stdout
        with open(path, "w") as f:
            f.write(text)
    return path


def compile_one(bin_dir, out_dir, name, model, options):
    """Partitions `model` under `options` and emits every program as
    `name`.<program>.cpp (`name`.step.cpp for a module's only program);
    returns an error line or None."""
    module = os.path.join(out_dir, f"{name}.mlir")
    r = subprocess.run([os.path.join(bin_dir, "braid-opt"), model,
                        f"--braid-training-pipeline={options}", "-o", module],
                       capture_output=True, text=True)
    if r.returncode:
        return f"braid-opt failed: {name}: {r.stderr.strip()[-400:]}"
    translate = [os.path.join(bin_dir, "braid-translate"), "--braid-to-cpp", module]
    with open(module) as f:
        pipelined = "braid.pipeline_entries = [" in f.read(8192)
    # Every program from one parse of the module (--braid-output-dir).
    with tempfile.TemporaryDirectory(dir=out_dir) as programs_dir:
        r = subprocess.run(translate + [f"--braid-output-dir={programs_dir}"],
                           capture_output=True, text=True)
        if "Unknown command line argument '--braid-output-dir" in r.stderr:
            return compile_each(translate, out_dir, name, module)  # an older build
        if r.returncode:
            return f"braid-translate failed: {name}: {r.stderr.strip()[-400:]}"
        files = sorted(os.listdir(programs_dir))
        if not pipelined and len(files) != 1:
            return f"braid-translate: {name}: {len(files)} programs in a module without a pipeline"
        for file in files:
            program = file[:-len(".cpp")] if pipelined else "step"
            os.replace(os.path.join(programs_dir, file),
                       os.path.join(out_dir, f"{name}.{program}.cpp"))
    return None


def compile_each(translate, out_dir, name, module):
    """Builds before --braid-output-dir: one braid-translate run per program."""
    with open(module) as f:
        m = re.search(r"braid\.pipeline_entries = \[([^\]]*)\]", f.read(8192))
    for program in re.findall(r"@([\w.]+)", m.group(1)) if m else [""]:
        cpp = os.path.join(out_dir, f"{name}.{program or 'step'}.cpp")
        r = subprocess.run(translate + [f"--braid-program={program}", "-o", cpp],
                           capture_output=True, text=True)
        if r.returncode:
            return f"braid-translate failed: {name} {program}: {r.stderr.strip()[-400:]}"
    return None


def emit(bin_dir, out_dir, jobs):
    os.makedirs(out_dir, exist_ok=True)
    work = []
    for model in TINY:
        path = preset(out_dir, model, model, "--batch", "4", "--layers", "4")
        configs = dict(TINY_CONFIGS, **(MOE_CONFIGS if model == "moe-tiny" else {}))
        work += [(f"{model}.{c}", path, o) for c, o in configs.items()]
    gpt3 = preset(out_dir, "gpt3-12", "gpt3-175b", "--layers", "12", "--batch", "8",
                  "--dtype", "bf16")
    work += [(f"gpt3-12.{c}", gpt3, o) for c, o in GPT3_CONFIGS.items()]
    errors = []
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for error in pool.map(lambda w: compile_one(bin_dir, out_dir, *w), work):
            if error:
                errors.append(error)
    for error in errors:
        print(error)
    return not errors


def differs_only_in_params_calls(path_a, path_b):
    """Whether B is A with some kernel calls re-spelled with a params struct
    (`braid::params(...)`, issue 41's change of the kernels' ABI): the same
    lines, in the same number, apart from the calls of those kernels."""
    with open(path_a) as fa, open(path_b) as fb:
        la, lb = fa.read().split("\n"), fb.read().split("\n")
    kernels = set(re.findall(r"(braid_k_\w+)\(rt[^\n]*braid::params\(", "\n".join(lb)))
    if not kernels or len(la) != len(lb):
        return False
    keep = lambda line: not any(k + "(" in line for k in kernels)
    return [x for x in la if keep(x)] == [x for x in lb if keep(x)]


def compare(a, b, params_calls=False):
    names = sorted(n for n in os.listdir(a) if n.endswith((".mlir", ".cpp")))
    missing = [n for n in names if not os.path.exists(os.path.join(b, n))]
    differ = [n for n in names if n not in missing and
              not filecmp.cmp(os.path.join(a, n), os.path.join(b, n), shallow=False)]
    respelled = [n for n in differ if params_calls and
                 differs_only_in_params_calls(os.path.join(a, n), os.path.join(b, n))]
    differ = [n for n in differ if n not in respelled]
    for n in missing:
        print(f"missing in {b}: {n}")
    for n in differ:
        print(f"differs: {n}")
    extra = f", {len(respelled)} differ only in params-struct calls" if params_calls else ""
    print(f"compared {len(names)} files: {len(names) - len(differ) - len(missing) - len(respelled)} "
          f"identical{extra}, {len(differ)} differ, {len(missing)} missing")
    return not differ and not missing


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--emit", nargs=2, metavar=("BIN_DIR", "OUT_DIR"))
    parser.add_argument("--compare", nargs=2, metavar=("OUT_A", "OUT_B"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--params-calls", action="store_true",
                        help="accept kernel calls re-spelled with a params struct "
                             "(same line count, nothing else changed)")
    parser.add_argument("bins", nargs="*", metavar="BIN_DIR")
    args = parser.parse_args()
    if args.emit:
        ok = emit(*args.emit, args.jobs)
    elif args.compare:
        ok = compare(*args.compare, params_calls=args.params_calls)
    elif len(args.bins) == 2:
        with tempfile.TemporaryDirectory() as tmp:
            a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
            ok = emit(args.bins[0], a, args.jobs) and emit(args.bins[1], b, args.jobs)
            ok = ok and compare(a, b, params_calls=args.params_calls)
    else:
        parser.error("give --emit, --compare or two build directories")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
