//===- driver_runtime.cpp - the runtime context and its communicators -----===//
//
// The backend (--backend; cuda by default when built with
// BRAID_RUNTIME_CUDA, else cpu), the communicators (NCCL for GPU ranks, MPI
// for CPU ranks, self for one rank) and the runtime context over the
// program's arena.
//
// Communicators. The groups the program lists (braid_program.comm_groups)
// are created in that order right after the runtime, before
// initialization: creating one is collective over the world, and pipeline
// stages are different programs.
//
// GPU ranks. Built with BRAID_RUNTIME_NCCL (braid_runtime_main_cuda when
// NCCL is found), several ranks on the cuda backend communicate over NCCL
// (cuda/comm_nccl.h), one process per GPU: started by any launcher with
// BRAID_WORLD_SIZE, BRAID_RANK, BRAID_LOCAL_RANK (the GPU on its node) and
// BRAID_NCCL_STORE=DIR (a directory every rank sees; the NCCL unique id goes
// through a file there), or, built with BRAID_RUNTIME_MPI too
// (braid_runtime_main_cuda_mpi), by mpirun (the id goes through MPI_Bcast,
// the GPU is the launcher's local rank). Several ranks on the cpu backend
// need MPI.
//
//===----------------------------------------------------------------------===//

#include "driver.h"

#ifdef BRAID_RUNTIME_MPI
#include "comm_mpi.h"
#endif
#ifdef BRAID_RUNTIME_NCCL
#include "cuda/comm_nccl.h"
#endif

#include <cstdio>

namespace braid::rt::driver {

const char *defaultBackend() {
#ifdef BRAID_RUNTIME_CUDA
  return "cuda";
#else
  return "cpu";
#endif
}

namespace {

std::unique_ptr<Backend> makeBackend(const std::string &name) {
  if (name == "cpu")
    return makeCpuBackend();
#ifdef BRAID_RUNTIME_CUDA
  if (name == "cuda")
    return makeCudaBackend();
#else
  if (name == "cuda")
    fatal("this program was built without the CUDA backend (--backend cuda)");
#endif
  fatal("unknown backend '%s' (cpu or cuda)", name.c_str());
}

/// FILE with ".rank<R>" before its extension (trace.json -> trace.rank1.json).
std::string rankFile(const std::string &file, int32_t rank) {
  std::string suffix = ".rank" + std::to_string(rank);
  size_t slash = file.find_last_of('/');
  size_t dot = file.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) ||
      dot == (slash == std::string::npos ? 0 : slash + 1))
    return file + suffix;
  return file.substr(0, dot) + suffix + file.substr(dot);
}

/// The runtime's options from the command line, and what this rank does of
/// them: only rank 0 (a stage's leader) dumps unless --dump-all-ranks, the
/// trace of rank R goes to FILE with ".rank<R>" before its extension, and
/// only the ranks that talk report progress.
Options runtimeOptions(Session &s) {
  Args &args = s.args;
  const bool dumping = !args.dumpDir.empty();
  if (s.multi && !args.dumpAllRanks && !s.leader)
    args.dumpDir.clear();
  if (s.multi && !args.traceFile.empty())
    args.traceFile = rankFile(args.traceFile, s.ranks.rank);
  if (!args.quiet && !s.talks)
    args.quiet = true;

  Options options;
  options.dumpDir = args.dumpDir;
  options.dumping = dumping;
  options.dumpLocal = args.dumpAllRanks;
  options.dumpFirstStep = args.dumpFirstStep;
  options.checkReplicas = args.checkReplicas && !args.dumpAllRanks;
  options.lastStep = args.steps;
  if (args.dumpAllRanks)
    options.dumpSuffix = ".rank" + std::to_string(s.ranks.rank);
  options.trace = !args.traceFile.empty();
  return options;
}

/// The communicators of the world: NCCL's for GPU ranks, MPI's for CPU
/// ranks, the self communicator for one rank.
std::unique_ptr<CommProvider> makeComms(const Session &s, const Options &options) {
  std::unique_ptr<CommProvider> comms;
#ifdef BRAID_RUNTIME_NCCL
  if (s.useNccl) {
    // One GPU per process, chosen before the backend and NCCL use it.
    int32_t local = s.ranks.store ? s.ranks.localRank : nccl::launcherLocalRank();
    nccl::selectDevice(local >= 0 ? local : s.ranks.rank);
    nccl::Bootstrap boot;
    boot.size = s.ranks.size;
    boot.rank = s.ranks.rank;
    boot.storeDir = s.ranks.storeDir;
    boot.timed = options.trace; // the transfers' lanes in the trace
#ifdef BRAID_RUNTIME_MPI
    if (s.ranks.mpi)
      boot.broadcast = [](void *data, size_t bytes) {
        mpi::broadcastFromRoot(data, int64_t(bytes));
      };
#endif
    comms = nccl::makeCommProvider(s.grid, boot);
  }
#else
  (void)options;
#endif
#ifdef BRAID_RUNTIME_MPI
  if (s.multi && !comms)
    comms = mpi::makeCommProvider(s.grid);
#endif
  if (!comms)
    comms = makeSelfCommProvider(s.grid);
  return comms;
}

/// "braid: PROGRAM on BACKEND, arena A bytes, seed S, N steps[, grid ...]"
/// ("N tokens per request" for generation).
void reportStart(const Session &s) {
  const braid_rt &rt = *s.rt;
  std::string where;
  if (s.multi || s.grid.isExplicit)
    where = ", grid " + s.grid.str() + " (" + std::to_string(s.ranks.size) +
            (s.ranks.size == 1 ? " rank" : " ranks") +
            (s.multi ? std::string(", ") + rt.comms->kind() : std::string()) + ")";
  if (s.stageAxis >= 0)
    where +=
        ", pipeline stage " + std::to_string(s.program->stage) + " along " + s.program->stage_axis;
  // A generation binary (prefill, decode) runs requests, not steps.
  bool generates = s.program->entry_kind == BRAID_ENTRY_PREFILL;
  std::string work = generates ? std::to_string(s.args.generate) + " tokens per request"
                               : std::to_string(s.args.steps) + " steps";
  std::fprintf(stderr, "%sbraid: %s on %s, arena %lld bytes, seed %llu, %s%s\n",
               s.prefix.c_str(), s.programName.c_str(), rt.backend->name(),
               (long long)s.program->arena_bytes, (unsigned long long)s.args.seed, work.c_str(),
               where.c_str());
}

} // namespace

void startRuntime(Session &s) {
  Options options = runtimeOptions(s);
  std::unique_ptr<CommProvider> comms = makeComms(s, options);
  s.rt =
      createRuntime(makeBackend(s.args.backend), s.program->arena_bytes, options, std::move(comms));
  braid_rt *rt = s.rt.get();
  rt->grid = s.grid;
  rt->coords = s.coords;
  rt->stageAxis = s.stageAxis;
  // Every communicator, in the program's order, before anything else: making
  // one is collective over the world, and the stages' programs reach their
  // first use of a group at different points. The stage group (dumps) next.
  for (int32_t i = 0; i < s.program->num_comm_groups; ++i)
    braid_rt_comm(rt, s.program->comm_groups[i]);
  if (std::string group = s.stageAxis >= 0 ? stageGroup(rt) : ""; !group.empty())
    braid_rt_comm(rt, group.c_str());
  if (!s.args.quiet)
    reportStart(s);
}

} // namespace braid::rt::driver
