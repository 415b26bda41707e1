//===- Build.h - build emitted programs against the runtime -----*- C++ -*-===//
//
// A program's C++ source is built with the host compiler (cpu) or nvcc
// (cuda) against the runtime's libraries, linking the MPI runtime when it
// runs on several ranks under mpirun. Binaries are cached by the hash of
// everything that builds them (source, compiler, command line, the runtime's
// libraries and headers), in $BRAID_RUN_CACHE or the temporary directory.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DRIVER_BUILD_H
#define BRAID_DRIVER_BUILD_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/LogicalResult.h"

#include <string>

namespace braid::driver {

/// Builds `source` for `backend` ("cpu" or "cuda"; `mpi`: for several ranks
/// started by mpirun) unless the cache has it; returns the binary's path, or
/// failure after a message. `quiet` leaves out the "building" line.
llvm::FailureOr<std::string> buildProgram(llvm::StringRef source,
                                          llvm::StringRef backend, bool mpi,
                                          bool quiet);

/// buildProgram of one binary from several translation units (a generation
/// binary's prefill, decode and forward programs, each exporting its own
/// braid_program_get_<name>).
llvm::FailureOr<std::string>
buildLinkedProgram(llvm::ArrayRef<std::string> sources, llvm::StringRef backend,
             bool mpi, bool quiet);

} // namespace braid::driver

#endif // BRAID_DRIVER_BUILD_H
