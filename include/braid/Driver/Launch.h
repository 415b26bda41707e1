//===- Launch.h - run the programs braid-run builds -------------*- C++ -*-===//
//
// A built program runs on one rank directly, or on several under mpirun
// (-np N; with Open MPI also --oversubscribe, and --allow-run-as-root as
// root). A pipelined model is several programs, one per stage, started
// together by one mpirun, MPMD:
//   mpirun <flags> -np K stage0 ARGS : -np K stage1 ARGS : ...
// so that stage S runs on the world ranks [S*K, (S+1)*K). Programs read
// nothing: their stdin is /dev/null, so that mpirun, which forwards its stdin
// to rank 0, cannot consume a caller's script.
//
// Across machines, mpirun takes a hostfile (LaunchOptions::hostfile). For any
// other launcher (Slurm's srun, a Kubernetes job, a shell loop), braid-run
// builds the programs and prints each rank's command with its environment
// instead (LaunchOptions::printOnly): the ranks find each other through a
// store directory (BRAID_MPI_STORE and Open MPI's rendezvous server for CPU
// ranks, runtime/src/comm_mpi_join.cpp; BRAID_NCCL_STORE for GPU ranks).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DRIVER_LAUNCH_H
#define BRAID_DRIVER_LAUNCH_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace braid::driver {

/// How runPrograms starts several ranks; braid-run's --hostfile, --launcher
/// and --store set it.
struct LaunchOptions {
  /// mpirun's --hostfile: the machines and their slots.
  std::string hostfile;
  /// Print each rank's command rather than run it (--launcher none).
  bool printOnly = false;
  /// The store directory the printed commands name; empty: a new directory
  /// under the system's temporary one (one machine only).
  std::string store;
};
LaunchOptions &launchOptions();

/// Runs `program` with `args`, output passed through (stdout into
/// `stdoutFile` when given); returns its exit code.
int execute(llvm::StringRef program, llvm::ArrayRef<std::string> args,
            std::optional<llvm::StringRef> stdoutFile = std::nullopt);

/// Runs built programs, each with `args`, on `ranks` ranks: one program on
/// all of them (under mpirun when more than one), or several under one
/// mpirun, MPMD, program S on the K = ranks / programs ranks [S*K, (S+1)*K)
/// (an error unless they divide evenly), or program S on `counts[S]` ranks
/// in order when `counts` is given (serving's groups). `gridSpec` names the
/// grid in errors; stdout into `stdoutFile` when given. Returns the exit
/// code.
int runPrograms(llvm::ArrayRef<std::string> binaries, int64_t ranks,
                llvm::StringRef gridSpec, llvm::ArrayRef<std::string> args,
                std::optional<llvm::StringRef> stdoutFile = std::nullopt,
                llvm::ArrayRef<int64_t> counts = {});

/// runPrograms with stdout captured into `text`, then copied to ours when
/// `echo` or on failure.
int runCaptured(llvm::ArrayRef<std::string> binaries, int64_t ranks,
                llvm::StringRef gridSpec, llvm::ArrayRef<std::string> args,
                std::string &text, bool echo, llvm::ArrayRef<int64_t> counts = {});

} // namespace braid::driver

#endif // BRAID_DRIVER_LAUNCH_H
