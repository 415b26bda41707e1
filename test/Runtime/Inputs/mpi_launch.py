"""How the runtime tests build and start programs: the runtime's libraries, a
hand-written program's compile line, runs with a time limit, and an
mpirun command line that works as root and with more ranks than cores
(Open MPI refuses both by default)."""
import os
import subprocess
import sys


def mpi_libraries(libdir):
    """The MPI driver, the MPI runtime and the runtime core, link order; exits
    with a message when one was not built (MPI not found at configure time)."""
    libs = [libdir / "libbraid_runtime_main_mpi.a", libdir / "libbraid_runtime_mpi.a",
            libdir / "libbraid_runtime.a"]
    missing = [str(p) for p in libs if not p.exists()]
    if missing:
        print(f"missing {missing}: configure with MPI found (find_package(MPI COMPONENTS C)) "
              "and build the braid_runtime_mpi and braid_runtime_main_mpi targets")
        sys.exit(1)
    return libs


def launcher(mpirun):
    """(environment, command prefix) for `prefix + ["-np", N, program]`."""
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1",  # 4 ranks on fewer cores
               OMPI_MCA_orte_base_help_aggregate="0")
    command = [mpirun]
    version = subprocess.run([mpirun, "--version"], capture_output=True, text=True, env=env)
    if "Open MPI" in version.stdout + version.stderr:
        command.append("--oversubscribe")
    return env, command


def serial_libraries(libdir):
    """The single-rank driver and the runtime core, link order."""
    return [libdir / "libbraid_runtime_main.a", libdir / "libbraid_runtime.a"]


def build_program(exe, source, defines, compiler, src, libs, env):
    """Compiles a hand-written program against the runtime's C ABI (src: the
    repository, for runtime/include) with -D<each define>; returns exe."""
    subprocess.run([str(compiler), "-std=c++17", "-O1", f"-I{src / 'runtime' / 'include'}",
                    *[f"-D{d}" for d in defines], str(source), *[str(p) for p in libs],
                    "-lpthread", "-o", str(exe)], check=True, env=env)
    return exe


def run(launcher, env, cmd, ranks=None, timeout=60, failures=None):
    """Runs cmd (under `launcher -np ranks` when ranks is given) and returns
    the CompletedProcess; a run past `timeout` seconds is appended to
    `failures` and returned with exit code 124."""
    full = launcher + ["-np", str(ranks)] + cmd if ranks else cmd
    try:
        return subprocess.run([str(c) for c in full], capture_output=True, text=True, env=env,
                              timeout=timeout)
    except subprocess.TimeoutExpired as e:
        if failures is not None:
            failures.append(f"timed out: {full}")
        return subprocess.CompletedProcess(full, 124, e.stdout or "", e.stderr or "")
