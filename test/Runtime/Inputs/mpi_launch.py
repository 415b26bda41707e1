"""How the runtime tests start MPI ranks: the runtime's MPI libraries and an
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
