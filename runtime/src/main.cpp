//===- main.cpp - the main() of every compiled Braid program --------------===//
//
//   PROGRAM [--steps N] [--seed S] [--dump DIR] [--trace FILE]
//           [--backend cpu|cuda] [--quiet]
//           [--grid AXIS=SIZE,...] [--all-ranks] [--dump-all-ranks]
//           [--checkpoint-dir D] [--checkpoint-every K] [--resume D]
//           [--threads N]
//
// Creates the backend and the runtime context, allocates the planned arena,
// marks the persistent tensors (parameters, inputs, loss) live, fills
// parameters and inputs from the deterministic rng (rng.h: element i of NAME
// under SEED, generated on the host and copied to the arena), runs `step` N
// times and prints after each
//   step K loss X          (K from 1; X = %.9g of the f32 loss)
// then
//   planned_peak_bytes: P
//   measured_peak_bytes: M
//   collective KIND: C per step, B bytes sent per rank   (the last step's,
//   collective_bytes_per_step: T                          ring model; rt_impl.h)
// and exits with status 1 when they differ. Progress and timing lines go to
// stderr unless --quiet; stdout carries only the lines above.
//
// --dump DIR writes DIR/<name>.npy for every parameter and input after init,
// DIR/<scope>.<name>.npy for every braid_rt_value call (the last step's value
// when several steps run), and at the end DIR/loss.npy (0-d float32) and
// DIR/updated.<name>.npy for every parameter and state (the trained values).
// bf16 tensors are dumped as float32 arrays (numpy has no bfloat16).
//
// Sharded tensors (a partitioned program's descriptors with global_shape /
// split_axes, and braid_rt_value_sharded values). Each rank initializes
// exactly its slice of the global tensor: the rng value at the element's
// global index (so that N ranks start from the state of one), zero in
// padding. Dumps hold the global tensor, as a 1-rank run of the unpartitioned
// program writes it: every rank's shard is all-gathered over "world" (only
// when dumping) and rank 0 writes it with the padding dropped; with
// --dump-all-ranks each rank writes its own shard (local shape, padding
// included) as NAME.rank<R>.npy instead.
//
// --check-replicas (braid-run --verify) checks every rank's copy: each dumped
// tensor is gathered even when whole on every rank, and beside DIR/<name>.npy
// the writer puts DIR/replicas.<name>.npy, rows (rank, max |copy - kept|) for
// every rank whose block replicates the one dumped, and DIR/owners.<name>.npy
// (int32, the tensor's shape), the global rank each element was taken from;
// each rank's loss is
// compared with rank 0's after every step (DIR/replicas.loss.npy, relative,
// the worst step per rank); a pipeline mirror is also dumped by the stage that
// mirrors it, as DIR/mirror.<name>.npy.
//
// Zigzag order (braid_program.zigzag_axis, e.g. "cp"): a dimension split over
// that axis first is stored permuted (rank i of the axis holds chunks i and
// 2n-1-i of the sequence; runtime.h). Initialization and the gathered dumps
// are in natural order all the same; a --dump-all-ranks shard is as stored.
// A zigzag axis the grid lacks exits with status 2.
//
// Checkpoints (checkpoint.h: the format). --checkpoint-dir D writes the
// parameters and optimizer state after every K-th step (--checkpoint-every
// K; 0, the default: none between) and after the last, as D/step-<K>, which
// D/latest names; D must hold no checkpoints unless the run resumed from it.
// --resume D (D/latest's checkpoint, or D/step-<K> itself) loads one written
// on any grid instead of initializing the parameters, generates the inputs
// from its seed (--seed, when given, must be that seed) and runs steps K+1
// to N (--steps N is the last step, not a count), printing their numbers;
// with --dump-first-step the run's first step is step K+1 (its dumps are
// step<K+1>.*, the state it starts from step<K>.*). A checkpoint that cannot
// be resumed (another model, a corrupt or missing file) ends the run with
// status 2 and a message naming the file before anything is written.
//
// Built with BRAID_RUNTIME_CUDA, the default backend is cuda; otherwise cpu.
//
// Ranks. --grid dp=2,tp=2 names the device grid (row-major over the ranks: the
// last axis varies fastest); its size must equal the number of ranks. Without
// it the grid is "world=<ranks>". A program partitioned for a grid
// (braid_program.grid) runs on that grid: --grid may be omitted or must equal
// it, and every axis its tensors are split over must be in it (exit status 2
// otherwise). braid_rt_comm(rt, "tp") is the group of the
// ranks that share every coordinate but tp. Built with BRAID_RUNTIME_MPI
// (braid_runtime_main_mpi) and started by mpirun, the program calls MPI_Init
// and runs one rank per process over MPI communicators (comm_mpi.h);
// otherwise, or with one rank, it is a single rank on the self communicator.
// With several ranks: only rank 0 prints (step, peak and progress lines)
// unless --all-ranks (then lines are prefixed "rank R: "); only rank 0 dumps
// unless --dump-all-ranks (then every rank writes NAME.rank<R>.npy); the
// trace of rank R goes to FILE with ".rank<R>" before its extension (trace.h).
//
// Communicators. The groups the program lists (braid_program.comm_groups) are
// created in that order right after the runtime, before initialization:
// creating one is collective over the world, and pipeline stages are
// different programs.
//
// Pipeline stages (braid_program.stage_axis, e.g. "pp"): one program per
// stage, launched together (mpirun -np K stage0 ARGS : -np K stage1 ARGS ...)
// on one grid; stage S's program must run on the ranks whose coordinate on
// the stage axis is S (a fatal error naming the program, rank, coordinate and
// stage otherwise). Its dumps are gathered over its stage group (every other
// axis) and written by the stage leader (coordinate 0 on those axes), into
// the same --dump DIR as the other stages; mirrors (braid_tensor_desc.mirror)
// are left to the stage that owns them and loss.npy to rank 0. Rank 0 prints
// as above (its own stage's peaks); in addition each stage leader prints
//   stage S: planned_peak_bytes: P measured_peak_bytes: M
// Every rank checks its own peak against its program's plan.
//
// GPU ranks. Built with BRAID_RUNTIME_NCCL (braid_runtime_main_cuda when NCCL
// is found), several ranks on the cuda backend communicate over NCCL
// (cuda/comm_nccl.h), one process per GPU: started by any launcher with
// BRAID_WORLD_SIZE, BRAID_RANK, BRAID_LOCAL_RANK (the GPU on its node) and
// BRAID_NCCL_STORE=DIR (a directory every rank sees; the NCCL unique id goes
// through a file there), or, built with BRAID_RUNTIME_MPI too
// (braid_runtime_main_cuda_mpi), by mpirun (the id goes through MPI_Bcast,
// the GPU is the launcher's local rank). Several ranks on the cpu backend
// need MPI.
//
//===----------------------------------------------------------------------===//

#include "backend.h"
#ifdef BRAID_RUNTIME_MPI
#include "comm_mpi.h"
#endif
#ifdef BRAID_RUNTIME_NCCL
#include "cuda/comm_nccl.h"
#endif
#include "checkpoint.h"
#include "persistent.h"
#include "rng.h"
#include "rt_impl.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

using namespace braid::rt;

namespace {

struct Args {
  int64_t steps = 1;
  uint64_t seed = 0;
  bool seedGiven = false; ///< --seed given (a resumed run must match it)
  std::string dumpDir, traceFile;
#ifdef BRAID_RUNTIME_CUDA
  std::string backend = "cuda";
#else
  std::string backend = "cpu";
#endif
  bool quiet = false;
  bool progress = false; ///< report initialization's progress (braid-run --progress)
  std::string grid; ///< empty: "world=<ranks>"
  bool allRanks = false, dumpAllRanks = false;
  bool dumpFirstStep = false; ///< also keep the first step's dumps as step<K>.*
  bool checkReplicas = false; ///< dump how far every copy is from rank 0's
  std::string checkpointDir, resume;
  int64_t checkpointEvery = 0; ///< 0: only after the last step
};

void usage(const char *argv0, FILE *out) {
  std::fprintf(out,
               "usage: %s [--steps N] [--seed S] [--dump DIR] [--trace FILE] "
               "[--backend cpu|cuda] [--quiet]\n"
               "       [--grid AXIS=SIZE,...] [--all-ranks] [--dump-all-ranks] "
               "[--dump-first-step] [--check-replicas]\n"
               "       [--checkpoint-dir D] [--checkpoint-every K] [--resume D] "
               "[--threads N]\n",
               argv0);
}

[[noreturn]] void badArgs(const char *argv0, const std::string &message) {
  std::fprintf(stderr, "%s: %s\n", argv0, message.c_str());
  usage(argv0, stderr);
  std::exit(2);
}

bool parseUnsigned(const std::string &text, uint64_t *value) {
  if (text.empty() || text[0] < '0' || text[0] > '9')
    return false;
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno || *end)
    return false;
  *value = v;
  return true;
}

Args parseArgs(int argc, char **argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    bool hasValue = false;
    if (size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      hasValue = true;
    }
    auto next = [&]() -> std::string {
      if (hasValue)
        return value;
      if (i + 1 >= argc)
        badArgs(argv[0], arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      usage(argv[0], stdout);
      std::exit(0);
    } else if (arg == "--steps") {
      uint64_t v;
      if (!parseUnsigned(next(), &v) || v > (1ull << 62))
        badArgs(argv[0], "--steps needs a non-negative integer");
      args.steps = int64_t(v);
    } else if (arg == "--seed") {
      if (!parseUnsigned(next(), &args.seed))
        badArgs(argv[0], "--seed needs a non-negative integer below 2^64");
      args.seedGiven = true;
    } else if (arg == "--dump") {
      args.dumpDir = next();
    } else if (arg == "--trace") {
      args.traceFile = next();
    } else if (arg == "--backend") {
      args.backend = next();
    } else if (arg == "--quiet") {
      args.quiet = true;
    } else if (arg == "--progress") {
      args.progress = true;
    } else if (arg == "--grid") {
      args.grid = next();
      if (args.grid.empty())
        badArgs(argv[0], "--grid needs AXIS=SIZE[,AXIS=SIZE...]");
    } else if (arg == "--all-ranks") {
      args.allRanks = true;
    } else if (arg == "--dump-all-ranks") {
      args.dumpAllRanks = true;
    } else if (arg == "--dump-first-step") {
      args.dumpFirstStep = true;
    } else if (arg == "--check-replicas") {
      args.checkReplicas = true;
    } else if (arg == "--checkpoint-dir") {
      args.checkpointDir = next();
      if (args.checkpointDir.empty())
        badArgs(argv[0], "--checkpoint-dir needs a directory");
    } else if (arg == "--checkpoint-every") {
      uint64_t v;
      if (!parseUnsigned(next(), &v) || v > (1ull << 62))
        badArgs(argv[0], "--checkpoint-every needs a non-negative integer");
      args.checkpointEvery = int64_t(v);
    } else if (arg == "--threads") {
      // Threads of this rank's CPU kernels: the kernel library reads
      // BRAID_CPU_THREADS (its default: the cores shared by the local ranks).
      uint64_t v;
      std::string text = next();
      if (!parseUnsigned(text, &v) || v < 1 || v > 4096)
        badArgs(argv[0], "--threads needs a positive integer");
      setenv("BRAID_CPU_THREADS", text.c_str(), /*overwrite=*/1);
    } else if (arg == "--resume") {
      args.resume = next();
      if (args.resume.empty())
        badArgs(argv[0], "--resume needs a checkpoint directory");
    } else {
      badArgs(argv[0], "unknown argument '" + arg + "'");
    }
  }
  return args;
}

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

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
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

/// This process among the ranks: MPI when launched by mpirun (MPI builds).
struct Ranks {
  int32_t size = 1, rank = 0;
  bool mpi = false;
  bool store = false;       ///< GPU ranks from BRAID_WORLD_SIZE / BRAID_RANK (NCCL)
  int32_t localRank = -1;   ///< store mode: BRAID_LOCAL_RANK
  std::string storeDir;     ///< store mode: BRAID_NCCL_STORE
  void finalize() {
#ifdef BRAID_RUNTIME_MPI
    if (mpi)
      braid::rt::mpi::finalize();
    mpi = false;
#endif
  }
};

/// Opens the checkpoint --resume names and takes its seed (collective); false,
/// the message printed, when the run cannot resume from it.
bool openResumed(braid_rt *rt, const CheckpointRun &run, Args *args, Resumed *resumed) {
  if (!openCheckpoint(rt, run, args->resume, resumed))
    return false;
  std::string error;
  if (args->seedGiven && args->seed != resumed->seed)
    error = "--seed " + std::to_string(args->seed) + " differs from the seed " +
            std::to_string(resumed->seed) + " of checkpoint " + resumed->path;
  if (!agreeOnError(rt, error))
    return false;
  args->seed = resumed->seed;
  return true;
}

} // namespace

int main(int argc, char **argv) {
  Args args = parseArgs(argc, argv);

  Ranks ranks;
#ifdef BRAID_RUNTIME_MPI
  if (mpi::launched()) {
    mpi::initialize(&argc, &argv);
    ranks.mpi = true;
    ranks.size = mpi::worldSize();
    ranks.rank = mpi::worldRank();
  }
#endif
#ifdef BRAID_RUNTIME_NCCL
  if (!ranks.mpi && nccl::storeLaunched()) {
    nccl::storeRanks(&ranks.size, &ranks.rank, &ranks.localRank, &ranks.storeDir);
    ranks.store = true;
  }
#endif
  reportTermination();
  const braid_program *program = braid_program_get();
  if (!program || !program->step)
    fatal("braid_program_get returned no program");
  const char *programName = program->name ? program->name : "?";
  if ((program->num_params && !program->params) || (program->num_inputs && !program->inputs) ||
      program->num_params < 0 || program->num_inputs < 0)
    fatal("program %s: bad parameter/input tables", programName);
  if (program->num_comm_groups < 0 || (program->num_comm_groups && !program->comm_groups))
    fatal("program %s: bad communicator group table", programName);
  if (program->num_outputs < 0 || (program->num_outputs && !program->outputs))
    fatal("program %s: bad output table", programName);
  // This driver runs training steps (and, with no optimizer, their forward
  // pass): it reads one loss per step. Inference programs need their own.
  if (program->entry_kind != BRAID_ENTRY_TRAIN_STEP)
    fatal("program %s: its entry point is not a training step (entry kind %d); "
          "braid-run's driver runs training steps only",
          programName, int(program->entry_kind));
  // Every rank reaches the same verdict; rank 0 says why.
  auto refuse = [&](const std::string &message) {
    if (ranks.rank == 0)
      std::fprintf(stderr, "%s: %s\n", argv[0], message.c_str());
    ranks.finalize();
    return 2;
  };

  // The grid: the one the program was partitioned for (--grid may only
  // repeat it), else --grid, else "world=<ranks>".
  Grid grid = worldGrid(ranks.size);
  if (!args.grid.empty()) {
    std::string error;
    if (!parseGrid(args.grid, &grid, &error)) {
      ranks.finalize();
      badArgs(argv[0], error);
    }
  }
  std::string partitionedFor;
  if (program->grid && *program->grid) {
    Grid compiled;
    std::string error;
    if (!parseGrid(program->grid, &compiled, &error))
      return refuse("program " + std::string(programName) + " has a malformed grid: " + error);
    if (!args.grid.empty() && grid.str() != compiled.str())
      return refuse("--grid " + grid.str() + " differs from the grid " + compiled.str() +
                    " program " + programName + " was partitioned for");
    grid = compiled;
    partitionedFor = " (program " + std::string(programName) + " was partitioned for it)";
  }
  if (grid.ranks() != ranks.size) {
    if (ranks.rank == 0) {
      std::string g = grid.str() + partitionedFor;
      if (ranks.mpi)
        std::fprintf(stderr, "%s: grid %s has %lld ranks but the MPI world has %d ranks\n",
                     argv[0], g.c_str(), (long long)grid.ranks(), int(ranks.size));
      else if (ranks.store)
        std::fprintf(stderr, "%s: grid %s has %lld ranks but BRAID_WORLD_SIZE is %d\n",
                     argv[0], g.c_str(), (long long)grid.ranks(), int(ranks.size));
      else
        std::fprintf(stderr,
                     "%s: grid %s has %lld ranks but this process runs 1 rank (%s)\n", argv[0],
                     g.c_str(), (long long)grid.ranks(),
#ifdef BRAID_RUNTIME_MPI
                     "not launched by mpirun: run mpirun -np N PROGRAM"
#else
                     "built without MPI: link braid_runtime_main_mpi and run mpirun -np N PROGRAM"
#endif
        );
    }
    ranks.finalize();
    return 2;
  }
  // Pipeline: the program is one stage, launched (mpirun -np K stage0 : -np K
  // stage1 ...) on the ranks whose coordinate on the stage axis is its stage.
  // A mixed-up launch would pair the wrong programs' communication.
  const std::vector<int32_t> coords = grid.coordinates(ranks.rank);
  int stageAxis = -1;
  if (program->stage_axis && *program->stage_axis) {
    auto axis = std::find(grid.names.begin(), grid.names.end(), program->stage_axis);
    if (axis == grid.names.end())
      fatal("program %s is pipeline stage %d along axis '%s', which grid %s does not have",
            programName, int(program->stage), program->stage_axis, grid.str().c_str());
    stageAxis = int(axis - grid.names.begin());
    if (coords[size_t(stageAxis)] != program->stage)
      fatal("program %s is pipeline stage %d but runs on rank %d, whose coordinate on axis "
            "'%s' is %d (were the stages' programs launched in the wrong order?)",
            programName, int(program->stage), int(ranks.rank), program->stage_axis,
            int(coords[size_t(stageAxis)]));
  }
  // Context parallelism: sequences split over the zigzag axis first are
  // stored in zigzag order (braid_program.zigzag_axis); the layouts of the
  // persistent tensors and of sharded values (rt->grid) read it from the grid.
  if (program->zigzag_axis && *program->zigzag_axis) {
    auto axis = std::find(grid.names.begin(), grid.names.end(), program->zigzag_axis);
    if (axis == grid.names.end())
      return refuse("program " + std::string(programName) + " holds sequences in zigzag order " +
                    "along axis '" + program->zigzag_axis + "', which grid " + grid.str() +
                    " does not have");
    grid.zigzagAxis = int(axis - grid.names.begin());
  }
  // Rank 0, or each stage's leader (coordinate 0 on every other axis), writes
  // the dumps: the stages' tensors differ, so their files do not collide.
  bool leader = ranks.rank == 0;
  if (stageAxis >= 0) {
    leader = true;
    for (size_t a = 0; a < coords.size(); ++a)
      leader &= int(a) == stageAxis || coords[a] == 0;
  }

  const bool multi = ranks.size > 1;
  // Lines on stdout/stderr: rank 0, or every rank (prefixed) with --all-ranks.
  const bool talks = ranks.rank == 0 || args.allRanks;
  const std::string prefix =
      multi && args.allRanks ? "rank " + std::to_string(ranks.rank) + ": " : "";
  // Several ranks: NCCL on the cuda backend (NCCL builds), MPI on the cpu backend.
  bool useNccl = false;
#ifdef BRAID_RUNTIME_NCCL
  useNccl = multi && args.backend == "cuda";
#endif
  if (multi && !useNccl && !ranks.mpi)
    fatal("ranks from BRAID_WORLD_SIZE run on the cuda backend over NCCL (--backend %s); CPU "
          "ranks need mpirun",
          args.backend.c_str());
  if (multi && !useNccl && args.backend != "cpu")
    fatal("MPI ranks run on the cpu backend (--backend %s)", args.backend.c_str());
  // Persistent tensors, and where sharded ones lie on the grid (every split
  // axis must be one of its axes).
  std::vector<Persistent> persistent;
  for (int32_t i = 0; i < program->num_params + program->num_inputs; ++i) {
    bool isParam = i < program->num_params;
    const braid_tensor_desc &desc =
        isParam ? program->params[i] : program->inputs[i - program->num_params];
    std::string error;
    persistent.emplace_back();
    if (!describe(desc, isParam ? "parameter" : "input", grid, &persistent.back(), &error))
      return refuse("program " + std::string(programName) + ": " + error);
  }

  const bool dumping = !args.dumpDir.empty();
  if (multi && !args.dumpAllRanks && !leader)
    args.dumpDir.clear();
  if (multi && !args.traceFile.empty())
    args.traceFile = rankFile(args.traceFile, ranks.rank);
  if (!args.quiet && !talks)
    args.quiet = true;

  Options options;
  options.dumpDir = args.dumpDir;
  options.dumping = dumping;
  options.dumpLocal = args.dumpAllRanks;
  options.dumpFirstStep = args.dumpFirstStep;
  options.checkReplicas = args.checkReplicas && !args.dumpAllRanks;
  options.lastStep = args.steps;
  if (args.dumpAllRanks)
    options.dumpSuffix = ".rank" + std::to_string(ranks.rank);
  options.trace = !args.traceFile.empty();
  std::unique_ptr<CommProvider> comms;
#ifdef BRAID_RUNTIME_NCCL
  if (useNccl) {
    // One GPU per process, chosen before the backend and NCCL use it.
    int32_t local = ranks.store ? ranks.localRank : nccl::launcherLocalRank();
    nccl::selectDevice(local >= 0 ? local : ranks.rank);
    nccl::Bootstrap boot;
    boot.size = ranks.size;
    boot.rank = ranks.rank;
    boot.storeDir = ranks.storeDir;
    boot.timed = options.trace; // the transfers' lanes in the trace
#ifdef BRAID_RUNTIME_MPI
    if (ranks.mpi)
      boot.broadcast = [](void *data, size_t bytes) {
        mpi::broadcastFromRoot(data, int64_t(bytes));
      };
#endif
    comms = nccl::makeCommProvider(grid, boot);
  }
#endif
#ifdef BRAID_RUNTIME_MPI
  if (multi && !comms)
    comms = mpi::makeCommProvider(grid);
#endif
  if (!comms)
    comms = makeSelfCommProvider(grid);
  std::unique_ptr<braid_rt> rt = createRuntime(makeBackend(args.backend), program->arena_bytes,
                                               options, std::move(comms));
  rt->grid = grid;
  rt->coords = coords;
  rt->stageAxis = stageAxis;
  // Every communicator, in the program's order, before anything else: making
  // one is collective over the world, and the stages' programs reach their
  // first use of a group at different points. The stage group (dumps) next.
  for (int32_t i = 0; i < program->num_comm_groups; ++i)
    braid_rt_comm(rt.get(), program->comm_groups[i]);
  if (std::string group = stageAxis >= 0 ? stageGroup(rt.get()) : ""; !group.empty())
    braid_rt_comm(rt.get(), group.c_str());
  if (!args.quiet) {
    std::string where;
    if (multi || grid.isExplicit)
      where = ", grid " + grid.str() + " (" + std::to_string(ranks.size) +
              (ranks.size == 1 ? " rank" : " ranks") +
              (multi ? std::string(", ") + rt->comms->kind() : std::string()) + ")";
    if (stageAxis >= 0)
      where += ", pipeline stage " + std::to_string(program->stage) + " along " +
               program->stage_axis;
    std::fprintf(stderr, "%sbraid: %s on %s, arena %lld bytes, seed %llu, %lld steps%s\n",
                 prefix.c_str(), programName, rt->backend->name(),
                 (long long)program->arena_bytes, (unsigned long long)args.seed,
                 (long long)args.steps, where.c_str());
  }

  // A checkpoint to resume from is read and checked before anything is
  // written; it sets the seed the inputs are drawn from.
  const CheckpointRun run{program, &persistent, leader};
  const bool resuming = !args.resume.empty();
  Resumed resumed;
  const auto stop = [&](int status) {
    destroyRuntime(std::move(rt));
    ranks.finalize();
    return status;
  };
  if (resuming && !openResumed(rt.get(), run, &args, &resumed))
    return stop(2);
  const int64_t firstStep = resumed.step + 1;
  rt->options.firstStep = firstStep;

  // Persistent tensors: live for the whole run.
  auto t0 = std::chrono::steady_clock::now();
  for (const Persistent &p : persistent)
    braid_rt_alloc(rt.get(), p.desc->offset, p.bytes, p.desc->name);
  braid_rt_alloc(rt.get(), program->loss_offset, 4, "loss");
  size_t persistentLive = rt->live.size();
  // With --progress, initialization says what it does and, every 5 s, how
  // far it is (a real-size model's parameters take seconds to generate).
  const bool progress = args.progress && talks;
  double totalMb = 0, doneMb = 0;
  for (const Persistent &p : persistent)
    totalMb += double(p.bytes) / 1e6;
  if (progress)
    std::fprintf(stderr, "%sbraid: initializing %zu tensors (%.1f MB)...\n", prefix.c_str(),
                 persistent.size(), totalMb);
  double reported = 0;
  for (size_t i = 0; i < persistent.size(); ++i) {
    const Persistent &p = persistent[i];
    if (!resuming || !p.param)
      initialize(rt.get(), p, args.seed);
    doneMb += double(p.bytes) / 1e6;
    if (progress && secondsSince(t0) - reported >= 5) {
      reported = secondsSince(t0);
      std::fprintf(stderr, "%sbraid: initializing: %zu of %zu tensors, %.0f of %.0f MB (%.0f s)\n",
                   prefix.c_str(), i + 1, persistent.size(), doneMb, totalMb, reported);
    }
  }
  if (resuming && !loadCheckpoint(rt.get(), run, resumed))
    return stop(2);
  if (!args.checkpointDir.empty() &&
      !checkCheckpointDir(rt.get(), args.checkpointDir, resuming ? &resumed : nullptr))
    return stop(2);
  if (resuming && !args.quiet)
    std::fprintf(stderr, "%sbraid: resumed from %s (step %lld, seed %llu, written on %s)\n",
                 prefix.c_str(), resumed.path.c_str(), (long long)resumed.step,
                 (unsigned long long)resumed.seed, resumed.manifest->grid.c_str());
  if (!args.dumpDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(args.dumpDir, ec);
    if (ec && !std::filesystem::is_directory(args.dumpDir)) // ranks may race to create it
      fatal("cannot create dump directory %s: %s", args.dumpDir.c_str(), ec.message().c_str());
  }
  // A mirror is dumped by the stage that owns it (and, checking replicas,
  // by its own stage as mirror.NAME).
  const auto mirrorName = [](const Persistent &p, const std::string &name) {
    return p.desc->mirror ? "mirror." + name : name;
  };
  const auto dumpsPersistent = [&](const Persistent &p) {
    return !p.desc->mirror || options.checkReplicas;
  };
  for (const Persistent &p : persistent)
    if (!p.desc->mirror) {
      dumpPersistent(rt.get(), p.desc->name, rt->arena + p.desc->offset, p);
      // Under a name no value of a step can overwrite: what the first step
      // starts from.
      if (args.dumpFirstStep && p.param)
        dumpPersistent(rt.get(), "step" + std::to_string(firstStep - 1) + "." + p.desc->name,
                       rt->arena + p.desc->offset, p);
    }
  rt->backend->synchronize();
  if (!args.quiet)
    std::fprintf(stderr, "%sbraid: initialized %zu tensors in %.3f s\n", prefix.c_str(),
                 persistent.size(), secondsSince(t0));

  // What a step (or the program's finish) leaves behind must be what it
  // found: the persistent tensors, nothing open.
  const auto checkReturned = [&](const char *what, int64_t k) {
    if (!rt->scopes.empty())
      fatal("%s %lld returned inside scope '%s'", what, (long long)k,
            currentScope(rt.get()).c_str());
    if (rt->trace.openCount())
      fatal("%s %lld returned with %lld unclosed braid_rt_op_begin", what, (long long)k,
            (long long)rt->trace.openCount());
    if (rt->live.size() != persistentLive) {
      for (const auto &[offset, buffer] : rt->live) {
        bool isPersistent = offset == program->loss_offset && buffer.end == offset + 4;
        for (const Persistent &p : persistent)
          isPersistent |= p.desc->offset == offset && p.desc->offset + p.bytes == buffer.end;
        if (!isPersistent)
          fatal("%s %lld returned with buffer %s [%lld, %lld) still live", what, (long long)k,
                buffer.name.c_str(), (long long)offset, (long long)buffer.end);
      }
      fatal("%s %lld freed a persistent tensor", what, (long long)k);
    }
  };
  // Completes the parameters a step leaves to the next (ZeRO's deferred
  // gathers) before anything reads them. It is no step's (rt->step 0): its
  // events are outside every step's, and the collectives reported are the
  // last step's alone.
  const auto finish = [&](int64_t k) {
    if (!program->finish)
      return;
    rt->step = 0;
    program->finish(rt.get(), rt->arena);
    checkReturned("finish after step", k);
  };

  // The state after step k, when it is one to keep.
  double checkpointSeconds = 0;
  const auto checkpoint = [&](int64_t k) {
    if (args.checkpointDir.empty() ||
        (k != args.steps && (args.checkpointEvery == 0 || k % args.checkpointEvery != 0)))
      return true;
    auto start = std::chrono::steady_clock::now();
    finish(k);
    rt->backend->synchronize();
    if (!saveCheckpoint(rt.get(), run, args.checkpointDir, k, args.seed))
      return false;
    checkpointSeconds += secondsSince(start);
    if (!args.quiet)
      std::fprintf(stderr, "%sbraid: checkpoint %s/step-%lld in %.3f s\n", prefix.c_str(),
                   args.checkpointDir.c_str(), (long long)k, secondsSince(start));
    return true;
  };

  auto t1 = std::chrono::steady_clock::now();
  for (int64_t k = firstStep; k <= args.steps; ++k) {
    rt->step = k;
    setCurrentStep(k);
    rt->collectives.clear();
    program->step(rt.get(), rt->arena);
    checkReturned("step", k);
    // The state after the first step, which starts from the same state on
    // any grid: --verify compares what one step does before runs drift apart.
    if (k == firstStep && args.dumpFirstStep) {
      finish(k);
      rt->step = 0;
      for (const Persistent &p : persistent)
        if (p.param && dumpsPersistent(p))
          dumpPersistent(rt.get(),
                         mirrorName(p, "step" + std::to_string(k) + ".updated." + p.desc->name),
                         rt->arena + p.desc->offset, p);
    }
    rt->backend->synchronize();
    float loss = 0;
    rt->backend->copyToHost(&loss, rt->arena + program->loss_offset, 4);
    if (options.checkReplicas)
      checkLossCopies(rt.get(), program->loss_offset);
    if (talks) {
      std::printf("%sstep %lld loss %.9g\n", prefix.c_str(), (long long)k, double(loss));
      std::fflush(stdout);
    }
    if (!checkpoint(k))
      return stop(1);
  }
  rt->backend->synchronize();
  const int64_t stepsRun = std::max<int64_t>(0, args.steps - firstStep + 1);
  double stepSeconds = secondsSince(t1) - checkpointSeconds;
  if (stepsRun > 0)
    finish(args.steps);
  rt->backend->synchronize();
  rt->step = 0;
  if (ranks.rank == 0 || args.dumpAllRanks) // rank 0's, not every stage leader's
    dumpTensor(rt.get(), "loss", rt->arena + program->loss_offset, BRAID_F32, {});
  if (options.checkReplicas)
    writeLossCopies(rt.get());
  // The trained weights and optimizer state, to compare runs.
  for (const Persistent &p : persistent)
    if (p.param && dumpsPersistent(p))
      dumpPersistent(rt.get(), mirrorName(p, std::string("updated.") + p.desc->name),
                     rt->arena + p.desc->offset, p);

  if (!args.quiet && stepsRun > 0)
    std::fprintf(stderr, "%sbraid: %lld steps in %.3f s (%.3f ms/step)\n", prefix.c_str(),
                 (long long)stepsRun, stepSeconds, 1e3 * stepSeconds / double(stepsRun));

  if (!args.traceFile.empty()) {
    std::string error;
    if (!rt->trace.write(*rt->backend, args.traceFile, ranks.rank, &error))
      fatal("trace: %s", error.c_str());
  }

  int64_t planned = program->arena_bytes, measured = rt->peakBytes;
  if (talks) {
    std::printf("%splanned_peak_bytes: %lld\n%smeasured_peak_bytes: %lld\n", prefix.c_str(),
                (long long)planned, prefix.c_str(), (long long)measured);
    // What the last step's collectives moved (the plan printer's model).
    double total = 0;
    for (const auto &[kind, stat] : rt->collectives) {
      std::printf("%scollective %s: %lld per step, %.0f bytes sent per rank\n", prefix.c_str(),
                  kind.c_str(), (long long)stat.first, stat.second);
      total += stat.second;
    }
    if (!rt->collectives.empty())
      std::printf("%scollective_bytes_per_step: %.0f\n", prefix.c_str(), total);
    std::fflush(stdout);
  }
  // Rank 0's lines are its stage's: each stage's leader reports its program.
  if (stageAxis >= 0 && leader) {
    std::printf("%sstage %d: planned_peak_bytes: %lld measured_peak_bytes: %lld\n",
                prefix.c_str(), int(program->stage), (long long)planned, (long long)measured);
    std::fflush(stdout);
  }
  destroyRuntime(std::move(rt)); // frees the communicators before MPI_Finalize
  ranks.finalize();
  // The plan is of a step: with none run (--steps 0: initialization only)
  // the peak is the persistent tensors'.
  if (planned != measured && args.steps > 0) {
    std::fprintf(stderr,
                 "braid runtime: %smeasured peak %lld bytes differs from the planned %lld bytes\n",
                 multi ? ("rank " + std::to_string(ranks.rank) + ": ").c_str() : "",
                 (long long)measured, (long long)planned);
    return 1;
  }
  return 0;
}
