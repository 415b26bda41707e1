//===- driver.h - the driver of compiled programs, in parts -----*- C++ -*-===//
//
// main() (main.cpp) reads what the program says it is (braid_program: its
// entry kind, persistent tensors, grid, communicators, pipeline stage) and
// runs it through these parts, each in a file of its own:
//   driver_args.cpp        the command line (Args)
//   driver_placement.cpp   this process among the ranks, and the program's
//                          grid, stage and persistent tensors on them
//   driver_runtime.cpp     the communicators and the runtime context
//   driver_state.cpp       the persistent state: initialized or resumed,
//                          dumped; calling the program's functions
//   driver_train_step.cpp  the run loop of a train_step entry
//   driver_data.cpp        its batches from a dataset (--data), validation
//   driver_generate.cpp    the run loop of generation (prefill + decode), with
//                          generate_requests.cpp (requests, sizes) and
//                          generate_ranks.cpp (exchanges between ranks)
//   driver_teardown.cpp    the closing report and the exit status
// A driver for another entry kind (prefill, decode) is a run loop beside
// driver_train_step.cpp and a line of main.cpp's table; the other parts are
// shared. The parts that differ by build (driver_runtime.cpp,
// driver_placement.cpp, driver_serve.cpp, serve_report.cpp,
// serve_transfer.cpp and main.cpp: BRAID_RUNTIME_MPI / _CUDA / _NCCL) are
// built once per main() library (braid_runtime_main*); the others once for
// all of them (braid_runtime_driver_common).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_DRIVER_H
#define BRAID_RUNTIME_DRIVER_H

#include "checkpoint.h"
#include "persistent.h"
#include "rt_impl.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace braid::rt::driver {

//===----------------------------------------------------------------------===//
// The command line (driver_args.cpp)
//===----------------------------------------------------------------------===//

/// "cuda" where main() was built with BRAID_RUNTIME_CUDA, else "cpu"
/// (driver_runtime.cpp): the one place the backend's build shows, so that the
/// driver's other sources compile once for every braid_runtime_main* variant.
const char *defaultBackend();

struct Args {
  int64_t steps = 1;
  uint64_t seed = 0;
  bool seedGiven = false; ///< --seed given (a resumed run must match it)
  std::string dumpDir, traceFile;
  std::string backend = defaultBackend();
  bool quiet = false;
  bool progress = false; ///< report initialization's progress (braid-run --progress)
  std::string grid;      ///< empty: "world=<ranks>"
  bool allRanks = false, dumpAllRanks = false;
  bool dumpFirstStep = false; ///< also keep the first step's dumps as step<K>.*
  bool checkReplicas = false; ///< dump how far every copy is from rank 0's
  std::string checkpointDir, resume;
  /// A weights map the parameters start from (weights_map.h).
  std::string initFrom;
  int64_t checkpointEvery = 0; ///< 0: only after the last step
  // Data (driver_data.cpp): a tokenized dataset instead of the seed's batch.
  std::string dataFile;        ///< --data PATH
  std::string dataDtype;       ///< --data-dtype uint16|uint32 of a headerless .bin
  bool shuffle = false;        ///< --shuffle: windows in a permuted order per epoch
  std::string evalDataFile;    ///< --eval-data PATH
  int64_t evalEvery = 0;       ///< --eval-every K: a validation loss after every K-th step
  int64_t evalBatches = 8;     ///< --eval-batches N: global batches averaged
  // Generation (driver_generate.cpp).
  int64_t generate = 8;       ///< --generate N: tokens per request
  std::string promptsFile;    ///< --prompts FILE: one request per line
  int64_t promptLen = 0;      ///< --prompt-len L of drawn prompts; 0: prefill's
  double temperature = 0;     ///< 0: greedy
  int64_t topK = 0;           ///< 0: no top-k cut
  double topP = 1;            ///< 1: no top-p cut
  bool verifyForward = false; ///< teacher forcing against the forward program
  std::string logitsOut;      ///< --logits-out DIR: each request's logits, DIR/request<R>.npy
  // Serving (driver_serve.cpp).
  std::string serveFile;      ///< --serve FILE: JSON-lines requests
  double rate = 0;            ///< --rate R: Poisson arrivals of generated requests
  int64_t serveRequests = 16; ///< --requests N of --rate
  int64_t minPromptLen = 0;   ///< --min-prompt-len: generated prompts' shortest (0: --prompt-len)
  std::string outputFile;     ///< --output FILE: each request's ids as JSON lines
  int64_t endToken = -1;      ///< --end-token ID: a drawn ID ends its request (-1: none)
  bool staticBatching = false; ///< --static-batching: waves instead of continuous batching
  int64_t replicas = 1;        ///< --replicas R: R independent groups of ranks serve (dp)
  bool disaggregate = false;   ///< --disaggregate: group 0 prefills, group 1 decodes
  std::vector<int32_t> groupSizes; ///< --groups P,D: the groups' sizes (else --replicas')
};

/// The command line; --help prints the usage and exits 0, a bad argument
/// exits 2 (badArgs). --threads sets BRAID_CPU_THREADS.
Args parseArgs(int argc, char **argv);

/// Prints "ARGV0: MESSAGE" and the usage on stderr and exits with status 2.
[[noreturn]] void badArgs(const char *argv0, const std::string &message);

//===----------------------------------------------------------------------===//
// Ranks and placement (driver_placement.cpp)
//===----------------------------------------------------------------------===//

/// This process among the ranks: MPI when launched by mpirun (MPI builds).
struct Ranks {
  int32_t size = 1, rank = 0;    ///< in this rank's replica (the program's world)
  int32_t replica = 0, replicas = 1; ///< --replicas: the launch's groups (serving's dp)
  int32_t launchSize = 1, launchRank = 0; ///< over every group
  bool mpi = false;
  bool store = false;     ///< GPU ranks from BRAID_WORLD_SIZE / BRAID_RANK (NCCL)
  int32_t localRank = -1; ///< store mode: BRAID_LOCAL_RANK
  std::string storeDir;   ///< store mode: BRAID_NCCL_STORE
  void finalize();
};

/// Joins the ranks this process was launched among: MPI_Init under mpirun
/// (MPI builds), the file store's ranks (NCCL builds), else one rank. With
/// `replicas` > 1 (MPI), the launch is split into that many groups of
/// consecutive ranks and the rank's group is its world.
Ranks startRanks(int *argc, char ***argv, int64_t replicas = 1,
                 const std::vector<int32_t> &groupSizes = {});

/// One run of a program: what it describes, the command line, and what the
/// driver's parts make of them, in the order they run.
struct Session {
  const char *argv0 = "";
  const braid_program *program = nullptr;
  std::string programName;
  Args args;
  Ranks ranks;

  // Placement (place).
  Grid grid = worldGrid(1);
  std::vector<int32_t> coords; ///< this rank's coordinates on `grid`
  int stageAxis = -1;          ///< the pipeline's axis in grid.names; -1: none
  /// Writes the dumps: rank 0, or each stage's leader (coordinate 0 on every
  /// axis but the stage axis).
  bool leader = false;
  bool multi = false;                 ///< more than one rank
  bool talks = false;                 ///< prints lines: rank 0, or every rank with --all-ranks
  std::string prefix;                 ///< "rank R: " before each line with --all-ranks
  bool useNccl = false;               ///< several ranks on the cuda backend (NCCL builds)
  std::vector<Persistent> persistent; ///< parameters, state and inputs

  // The runtime (startRuntime) and the state in it (initializeState).
  std::unique_ptr<braid_rt> rt;
  /// Buffers the entry writes that live for the whole run beside the
  /// persistent tensors (a training step's loss).
  struct Result {
    int64_t offset, bytes;
    const char *name;
  };
  std::vector<Result> results;
  size_t persistentLive = 0; ///< live buffers between calls
  bool resuming = false;
  Resumed resumed;
  int64_t firstStep = 1; ///< the first step to run (after a resumed one)
  /// --data and --eval-data, opened and checked (openData); null: none.
  std::shared_ptr<struct DataFeed> data;
  std::chrono::steady_clock::time_point initStart;

  /// What checkpoints are written from and loaded into.
  CheckpointRun checkpointRun() const { return {program, &persistent, leader}; }
  /// Releases the runtime (its communicators first) and leaves MPI; `status`.
  int stop(int status);
  /// Rank 0 prints "ARGV0: MESSAGE" (every rank reaches the same verdict);
  /// then stop(2).
  int refuse(const std::string &message);
};

/// Places the program on the grid: the grid it was partitioned for (--grid
/// may only repeat it), else --grid, else "world=<ranks>"; its pipeline
/// stage, zigzag axis and persistent tensors on it. Returns 0, or the exit
/// status after a refusal (every rank refuses alike).
int place(Session &s);

//===----------------------------------------------------------------------===//
// The runtime (driver_runtime.cpp)
//===----------------------------------------------------------------------===//

/// Creates the communicator provider and the runtime context with the
/// program's arena, then every communicator the program lists, and reports
/// the run on stderr (unless --quiet).
void startRuntime(Session &s);

//===----------------------------------------------------------------------===//
// The persistent state and the program's functions (driver_state.cpp)
//===----------------------------------------------------------------------===//

/// Opens the checkpoint --resume names (its seed becomes the run's), marks
/// the persistent tensors and s.results live, initializes them from the rng
/// and loads the checkpoint's parameters over them. False, the message
/// printed, when the run cannot resume (collective).
bool initializeState(Session &s);

/// Says where a resumed state came from, dumps the initial state (with
/// --dump) and reports the time initialization took.
void dumpInitialState(Session &s);

/// Aborts unless a call of the program (`what` `k`: "step 3") left what it
/// found: the persistent tensors live, no scope or trace event open.
void checkReturned(Session &s, const char *what, int64_t k);

/// Runs braid_program.finish, when the program has one: completes what a
/// step leaves to the next before anything reads the parameters. Outside
/// every step (rt->step 0).
void finishStep(Session &s, int64_t k);

/// Dumps every parameter and state as PREFIX<name> (a mirror as
/// mirror.PREFIX<name>, only when checking replicas: its owner dumps it).
void dumpParameters(Session &s, const std::string &prefix);

//===----------------------------------------------------------------------===//
// Data (driver_data.cpp)
//===----------------------------------------------------------------------===//

/// Opens --data and --eval-data (collective over the world) and checks them
/// against the program's tokens and labels: the format, a global batch of
/// windows at least, every id inside the vocabulary (each rank scans its
/// share of the file). A resumed run continues at the checkpoint's data
/// position. False, the message printed naming the file, on a refusal.
bool openData(Session &s);

/// Writes step k's global batch into this rank's slices of the tokens and
/// labels (no-op without --data).
void feedStep(Session &s, int64_t k);

/// Where the data stands after step k (for its checkpoint).
ckpt::DataState dataStateAfter(const Session &s, int64_t k);

/// After step k: the loss of --eval-batches global batches of --eval-data
/// with the parameters of step k, printed as "step K validation loss X".
/// The training state is restored after, so that the run continues unchanged.
void evaluate(Session &s, int64_t k);

//===----------------------------------------------------------------------===//
// Entry drivers
//===----------------------------------------------------------------------===//

/// Runs a train_step entry (driver_train_step.cpp): steps, losses, dumps,
/// checkpoints; the exit status.
int runTrainSteps(Session &s);

/// The programs of a generation binary (weak getters, main.cpp): prefill and
/// decode, forward when linked (teacher forcing), and the mixed programs,
/// smallest first, when serving with a token budget (--braid-derive-inference
/// mixed-rows: decode rows and prompt chunks in one call).
struct InferencePrograms {
  const braid_program *prefill = nullptr, *decode = nullptr, *forward = nullptr;
  std::vector<const braid_program *> mixed;
};

/// Runs generation (driver_generate.cpp) with `programs`; s.program must be
/// mergedProgram's description of them. The exit status.
int runGeneration(Session &s, const InferencePrograms &programs);

/// Serves --serve's (or --rate's) requests with continuous batching
/// (driver_serve.cpp) on paged prefill and decode programs.
int runServing(Session &s, const InferencePrograms &programs);

/// One description of the programs for placement and the runtime: prefill's
/// parameters and states (checked to lie where decode's and forward's do),
/// no inputs (each call allocates its own), the largest arena. Fatal when
/// the programs disagree.
braid_program mergedProgram(const InferencePrograms &programs);

//===----------------------------------------------------------------------===//
// Teardown (driver_teardown.cpp)
//===----------------------------------------------------------------------===//

/// Writes the trace, prints the peaks and the last step's collectives,
/// releases the runtime and MPI, and returns the exit status: 1 when the
/// measured peak differs from the plan and `peakIsPlanned` (the plan is of
/// a step: with none run the peak is the persistent tensors'), else 0.
int tearDown(Session &s, bool peakIsPlanned);

/// The exit status of an inference run after tearDown's `status`: the first
/// rank (of each group) says the run's `verdict`, which every rank reached
/// and it printed; the others their own status. mpirun ends a job when one
/// rank exits non-zero while others are still leaving (their exit is then a
/// kill, noise on stderr; seen under load): a non-zero verdict waits for
/// them first, as they have nothing left to do but exit.
int exitStatus(const Session &s, int status, int verdict);

/// Seconds since `t0`.
double secondsSince(std::chrono::steady_clock::time_point t0);

} // namespace braid::rt::driver

#endif // BRAID_RUNTIME_DRIVER_H
