//===- rt_impl.h - the runtime context behind braid_rt ----------*- C++ -*-===//
//
// Internal to the runtime (rt.cpp, main.cpp, comm_*.cpp): the definition of
// braid_rt and the C++ entry points that create and drive it.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_RT_IMPL_H
#define BRAID_RUNTIME_RT_IMPL_H

#include "backend.h"
#include "braid/runtime.h"
#include "comm.h"
#include "trace.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace braid::rt {

/// Prints "braid runtime: <message>" to stderr and aborts.
[[noreturn]] void fatal(const char *format, ...) __attribute__((format(printf, 1, 2)));
/// With several ranks: fatal() messages read "braid runtime: rank R: ...".
/// Negative (the default): no rank in the message.
void setFatalRank(int32_t rank);
/// Called by fatal() after the message instead of std::abort (the MPI
/// provider sets MPI_Abort so that the launcher ends every rank); null: abort.
void setFatalAbort(void (*abortFn)());

struct Options {
  std::string dumpDir;    ///< empty: no dumps
  std::string dumpSuffix; ///< inserted before ".npy" (".rank1" with --dump-all-ranks)
  bool trace = false;     ///< record kernels for a trace
};

} // namespace braid::rt

struct braid_rt {
  struct Live {
    int64_t end;
    std::string name;
  };

  std::unique_ptr<braid::rt::Backend> backend;
  std::unique_ptr<braid::rt::CommProvider> comms;
  std::map<std::string, std::unique_ptr<braid_comm>> commByAxes;
  braid::rt::Options options;

  char *arena = nullptr; ///< backend memory
  int64_t arenaBytes = 0;
  std::map<int64_t, Live> live; ///< by begin offset; never overlapping
  int64_t peakBytes = 0;        ///< max over time of the highest live end

  std::vector<std::string> scopes; ///< pushed call-path components
  int64_t step = 0;                ///< the step in flight (1-based; 0 = init)
  braid::rt::Trace trace;
};

namespace braid::rt {

/// A context on `backend` with an arena of `arenaBytes` (allocated here) and
/// the given communicator provider (self when null).
std::unique_ptr<braid_rt> createRuntime(std::unique_ptr<Backend> backend, int64_t arenaBytes,
                                        Options options,
                                        std::unique_ptr<CommProvider> comms = nullptr);
/// Releases the arena (the context's destructor does not).
void destroyRuntime(std::unique_ptr<braid_rt> rt);

/// The current scope: the pushed components joined with '.'.
std::string currentScope(const braid_rt *rt);

/// Dumps `bytes` of backend memory as DIR/<file><suffix>.npy when dumping is on
/// ('/' in `file` becomes '.'); bf16 becomes float32.
void dumpTensor(braid_rt *rt, const std::string &file, const void *data, braid_dtype dtype,
                const std::vector<int64_t> &shape);

/// Elements of a shape (aborts on a negative dimension or overflow).
int64_t numElements(const char *what, int32_t rank, const int64_t *shape);

} // namespace braid::rt

#endif // BRAID_RUNTIME_RT_IMPL_H
