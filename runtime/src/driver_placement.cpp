//===- driver_placement.cpp - ranks, and the program's place on the grid ---===//
//
// Ranks. Built with BRAID_RUNTIME_MPI (braid_runtime_main_mpi) and started by
// mpirun, the program calls MPI_Init and runs one rank per process over MPI
// communicators (comm_mpi.h). Built with BRAID_RUNTIME_NCCL, ranks on the
// cuda backend may instead come from BRAID_WORLD_SIZE / BRAID_RANK /
// BRAID_LOCAL_RANK / BRAID_NCCL_STORE (cuda/comm_nccl.h). Otherwise, or with
// one rank, it is a single rank on the self communicator.
//
// The grid. --grid dp=2,tp=2 names the device grid (row-major over the
// ranks: the last axis varies fastest); its size must equal the number of
// ranks. Without it the grid is "world=<ranks>". A program partitioned for a
// grid (braid_program.grid) runs on that grid: --grid may be omitted or must
// equal it, and every axis its tensors are split over must be in it (exit
// status 2 otherwise).
//
// Pipeline stages (braid_program.stage_axis, e.g. "pp"): one program per
// stage, launched together (mpirun -np K stage0 ARGS : -np K stage1 ARGS ...)
// on one grid; stage S's program must run on the ranks whose coordinate on
// the stage axis is S (a fatal error naming the program, rank, coordinate and
// stage otherwise).
//
// Zigzag order (braid_program.zigzag_axis, e.g. "cp"): a dimension split over
// that axis first is stored permuted (runtime.h). A zigzag axis the grid
// lacks exits with status 2.
//
//===----------------------------------------------------------------------===//

#include "driver.h"

#ifdef BRAID_RUNTIME_MPI
#include "comm_mpi.h"
#endif
#ifdef BRAID_RUNTIME_NCCL
#include "cuda/comm_nccl.h"
#endif

#include <algorithm>
#include <cstdio>

namespace braid::rt::driver {

void Ranks::finalize() {
#ifdef BRAID_RUNTIME_MPI
  if (mpi)
    mpi::finalize();
  mpi = false;
#endif
}

Ranks startRanks(int *argc, char ***argv, int64_t replicas,
                 const std::vector<int32_t> &groupSizes) {
  Ranks ranks;
#ifdef BRAID_RUNTIME_MPI
  if (mpi::launched()) {
    mpi::initialize(argc, argv);
    ranks.mpi = true;
    ranks.replicas = groupSizes.empty() ? int32_t(replicas) : int32_t(groupSizes.size());
    ranks.replica = mpi::splitGroups(int32_t(replicas), groupSizes);
    ranks.launchSize = mpi::launchSize();
    ranks.launchRank = mpi::launchRank();
    ranks.size = mpi::worldSize();
    ranks.rank = mpi::worldRank();
  }
#else
  (void)argc;
  (void)argv;
#endif
  if ((replicas > 1 || !groupSizes.empty()) && !ranks.mpi)
    fatal("--replicas %lld needs ranks launched by mpirun", (long long)replicas);
#ifdef BRAID_RUNTIME_NCCL
  if (!ranks.mpi && nccl::storeLaunched()) {
    nccl::storeRanks(&ranks.size, &ranks.rank, &ranks.localRank, &ranks.storeDir);
    ranks.store = true;
  }
#endif
  return ranks;
}

int Session::stop(int status) {
  if (rt)
    destroyRuntime(std::move(rt)); // frees the communicators before MPI_Finalize
  ranks.finalize();
  return status;
}

int Session::refuse(const std::string &message) {
  if (ranks.rank == 0)
    std::fprintf(stderr, "%s: %s\n", argv0, message.c_str());
  return stop(2);
}

namespace {

/// Rank 0 says why the grid does not fit the ranks this process runs among.
void reportRankCount(const Session &s, const std::string &partitionedFor) {
  if (s.ranks.rank != 0)
    return;
  std::string g = s.grid.str() + partitionedFor;
  long long gridRanks = (long long)s.grid.ranks();
  if (s.ranks.mpi)
    std::fprintf(stderr, "%s: grid %s has %lld ranks but the MPI world has %d ranks\n", s.argv0,
                 g.c_str(), gridRanks, int(s.ranks.size));
  else if (s.ranks.store)
    std::fprintf(stderr, "%s: grid %s has %lld ranks but BRAID_WORLD_SIZE is %d\n", s.argv0,
                 g.c_str(), gridRanks, int(s.ranks.size));
  else
    std::fprintf(stderr, "%s: grid %s has %lld ranks but this process runs 1 rank (%s)\n", s.argv0,
                 g.c_str(), gridRanks,
#ifdef BRAID_RUNTIME_MPI
                 "not launched by mpirun: run mpirun -np N PROGRAM"
#else
                 "built without MPI: link braid_runtime_main_mpi and run mpirun -np N PROGRAM"
#endif
    );
}

/// The grid: the one the program was partitioned for (--grid may only
/// repeat it), else --grid, else "world=<ranks>"; its size must be the
/// number of ranks. 0, or the exit status.
int chooseGrid(Session &s) {
  s.grid = worldGrid(s.ranks.size);
  if (!s.args.grid.empty()) {
    std::string error;
    if (!parseGrid(s.args.grid, &s.grid, &error)) {
      s.ranks.finalize();
      badArgs(s.argv0, error);
    }
  }
  std::string partitionedFor;
  if (s.program->grid && *s.program->grid) {
    Grid compiled;
    std::string error;
    if (!parseGrid(s.program->grid, &compiled, &error))
      return s.refuse("program " + s.programName + " has a malformed grid: " + error);
    if (!s.args.grid.empty() && s.grid.str() != compiled.str())
      return s.refuse("--grid " + s.grid.str() + " differs from the grid " + compiled.str() +
                      " program " + s.programName + " was partitioned for");
    s.grid = compiled;
    partitionedFor = " (program " + s.programName + " was partitioned for it)";
  }
  if (s.grid.ranks() != s.ranks.size) {
    reportRankCount(s, partitionedFor);
    return s.stop(2);
  }
  s.coords = s.grid.coordinates(s.ranks.rank);
  return 0;
}

/// Pipeline: the program is one stage, launched (mpirun -np K stage0 : -np
/// K stage1 ...) on the ranks whose coordinate on the stage axis is its
/// stage. A mixed-up launch would pair the wrong programs' communication.
void placeStage(Session &s) {
  const braid_program &program = *s.program;
  if (!program.stage_axis || !*program.stage_axis)
    return;
  const Grid &grid = s.grid;
  auto axis = std::find(grid.names.begin(), grid.names.end(), program.stage_axis);
  if (axis == grid.names.end())
    fatal("program %s is pipeline stage %d along axis '%s', which grid %s does not have",
          s.programName.c_str(), int(program.stage), program.stage_axis, grid.str().c_str());
  s.stageAxis = int(axis - grid.names.begin());
  if (s.coords[size_t(s.stageAxis)] != program.stage)
    fatal("program %s is pipeline stage %d but runs on rank %d, whose coordinate on axis "
          "'%s' is %d (were the stages' programs launched in the wrong order?)",
          s.programName.c_str(), int(program.stage), int(s.ranks.rank), program.stage_axis,
          int(s.coords[size_t(s.stageAxis)]));
}

/// Context parallelism: sequences split over the zigzag axis first are
/// stored in zigzag order (braid_program.zigzag_axis); the layouts of the
/// persistent tensors and of sharded values (rt->grid) read it from the
/// grid. 0, or the exit status.
int placeZigzag(Session &s) {
  const char *zigzag = s.program->zigzag_axis;
  if (!zigzag || !*zigzag)
    return 0;
  auto axis = std::find(s.grid.names.begin(), s.grid.names.end(), zigzag);
  if (axis == s.grid.names.end())
    return s.refuse("program " + s.programName + " holds sequences in zigzag order " +
                    "along axis '" + zigzag + "', which grid " + s.grid.str() + " does not have");
  s.grid.zigzagAxis = int(axis - s.grid.names.begin());
  return 0;
}

/// Who writes and who prints, and over what the ranks talk.
void chooseRoles(Session &s) {
  // Rank 0, or each stage's leader (coordinate 0 on every other axis), writes
  // the dumps: the stages' tensors differ, so their files do not collide.
  s.leader = s.ranks.rank == 0;
  if (s.stageAxis >= 0) {
    s.leader = true;
    for (size_t a = 0; a < s.coords.size(); ++a)
      s.leader &= int(a) == s.stageAxis || s.coords[a] == 0;
  }
  s.multi = s.ranks.size > 1;
  // Lines on stdout/stderr: rank 0, or every rank (prefixed) with --all-ranks.
  s.talks = s.ranks.rank == 0 || s.args.allRanks;
  s.prefix = s.multi && s.args.allRanks ? "rank " + std::to_string(s.ranks.rank) + ": " : "";
  // Several ranks: NCCL on the cuda backend (NCCL builds), MPI on the cpu backend.
#ifdef BRAID_RUNTIME_NCCL
  s.useNccl = s.multi && s.args.backend == "cuda";
#endif
  if (s.multi && !s.useNccl && !s.ranks.mpi)
    fatal("ranks from BRAID_WORLD_SIZE run on the cuda backend over NCCL (--backend %s); CPU "
          "ranks need mpirun",
          s.args.backend.c_str());
  if (s.multi && !s.useNccl && s.args.backend != "cpu")
    fatal("MPI ranks run on the cpu backend (--backend %s)", s.args.backend.c_str());
}

/// Persistent tensors, and where sharded ones lie on the grid (every split
/// axis must be one of its axes). 0, or the exit status.
int describePersistent(Session &s) {
  const braid_program &program = *s.program;
  for (int32_t i = 0; i < program.num_params + program.num_inputs; ++i) {
    bool isParam = i < program.num_params;
    const braid_tensor_desc &desc =
        isParam ? program.params[i] : program.inputs[i - program.num_params];
    std::string error;
    s.persistent.emplace_back();
    if (!describe(desc, isParam ? "parameter" : "input", s.grid, &s.persistent.back(), &error))
      return s.refuse("program " + s.programName + ": " + error);
  }
  return 0;
}

} // namespace

int place(Session &s) {
  if (int status = chooseGrid(s))
    return status;
  placeStage(s);
  if (int status = placeZigzag(s))
    return status;
  chooseRoles(s);
  return describePersistent(s);
}

} // namespace braid::rt::driver
