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
/// The step the program runs (0 outside steps), which the transfer watchdog
/// names when a wait does not return.
void setCurrentStep(int64_t step);
int64_t currentStep();
/// On SIGTERM (what mpirun sends the other ranks when one was lost), prints
/// "braid runtime: rank R: stopped at step S by SIGTERM ..." before
/// terminating, so that the run's output says where it ended next to the
/// launcher's message naming the lost rank.
void reportTermination();
/// Seconds a wait for a transfer may block before the watchdog ends the run
/// (BRAID_COLLECTIVE_TIMEOUT; default 600, PyTorch's for NCCL process
/// groups; 0 or less: no watchdog).
double collectiveTimeout();

struct Options {
  std::string dumpDir;    ///< where this rank writes dumps; empty: it writes none
  std::string dumpSuffix; ///< inserted before ".npy" (".rank1" with --dump-all-ranks)
  /// Dumps are on for the run. True on every rank, also those that write
  /// nothing: a sharded tensor is gathered collectively (every rank takes part)
  /// and written by rank 0 (a pipeline stage's leader).
  bool dumping = false;
  /// --dump-all-ranks: a sharded tensor is written as this rank's shard
  /// (local shape, padding included) instead of gathered.
  bool dumpLocal = false;
  /// --dump-first-step: dumps made during the run's first step (firstStep)
  /// are also written as step<firstStep>.<name> (the gradients of one step
  /// from the initial or resumed state).
  bool dumpFirstStep = false;
  int64_t firstStep = 1; ///< the step after the checkpoint a run resumed from

  /// --check-replicas: every dumped tensor is gathered, and the writer also
  /// writes replicas.<name>.npy, rows (rank, max |copy - kept copy|): how far
  /// each other rank's copy of a block is from the copy the dump keeps; the
  /// loss of every rank is compared with rank 0's after each step
  /// (replicas.loss.npy, relative), and pipeline mirrors are dumped as
  /// mirror.<name>.
  bool checkReplicas = false;
  /// The run's last step: values are dumped in it (and in step 1 with
  /// dumpFirstStep), not in the steps between, whose files it overwrites.
  int64_t lastStep = 0;
  bool trace = false; ///< record kernels for a trace
};

/// Where a rank's local buffer of a sharded tensor lies in the global tensor
/// (braid_tensor_desc's global_shape / split_axes on the run's grid): along
/// dimension d, the rank whose linear coordinate over axes[d] (major to
/// minor, in the order listed) is c holds the stored indices
/// [c * local[d], (c + 1) * local[d]); stored indices past global[d] are
/// padding. A stored index is the global index itself, except along a
/// dimension in zigzag order (zigzag[d] = n > 0: split over the grid's zigzag
/// axis first, of n ranks), whose stored index p is the global index
/// natural(d, p): 2n chunks of c = global[d] / (2n), stored 0, 2n-1, 1,
/// 2n-2, ... (braid_k_sequence_positions).
struct ShardLayout {
  std::vector<int64_t> local, global;
  std::vector<std::vector<int>> axes; ///< per dimension: indices into grid.names
  std::vector<int64_t> parts;         ///< per dimension: ranks splitting it (>= 1)
  /// Per dimension: the zigzag axis's size when the dimension is stored in
  /// zigzag order, else 0 (natural order).
  std::vector<int64_t> zigzag;
  std::vector<int32_t> gridSizes; ///< the grid's axis sizes

  /// Some dimension is split over more than one rank.
  bool split() const;
  /// The block index along dimension d of the rank at grid coordinates `coords`.
  int64_t block(size_t d, const std::vector<int32_t> &coords) const;
  /// The global (natural) index along dimension d of stored index p (the
  /// rank at `coords` holds p = block(d, coords) * local[d] + its local
  /// index): p itself in natural order or for padding (p >= global[d]).
  int64_t natural(size_t d, int64_t p) const;
  /// How many stored indices from p on (p < global[d]) have consecutive
  /// global indices: up to the end of p's zigzag chunk; INT64_MAX in natural
  /// order.
  int64_t contiguous(size_t d, int64_t p) const;
};

/// The layout of a tensor of local shape `shape` (rank `rank`) with
/// `globalShape` / `splitAxes` (either may be null: not split) on `grid`.
/// False with a message when an axis is not in the grid or repeated, a local
/// dimension is not ceil(global / parts) (global itself when not split), the
/// grid's zigzag axis splits a dimension but not as its first axis, or a
/// dimension in zigzag order over n ranks is not a multiple of 2n long.
bool shardLayout(const Grid &grid, int32_t rank, const int64_t *shape,
                 const int64_t *globalShape, const char *const *splitAxes, ShardLayout *out,
                 std::string *error);

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
  /// --check-replicas: per rank, the largest relative distance of its loss
  /// from rank 0's over the steps so far.
  std::vector<double> lossCopies;
  braid::rt::Trace trace;

  /// The run's grid and this rank's coordinates on it (sharded dumps place
  /// every rank's block by its coordinates). Default: one rank, "world=1".
  braid::rt::Grid grid = braid::rt::worldGrid(1);
  std::vector<int32_t> coords = {0};
  /// Pipeline (braid_program.stage_axis): the index in grid.names of the axis
  /// the stages lie along; -1 when the program runs on every rank of the grid.
  /// Sharded dumps are then gathered over the stage group (stageGroup)
  /// instead of the world.
  int stageAxis = -1;

  /// Collectives issued during the step in flight (reset when a step
  /// starts): per kind, how many and the bytes this rank sends under the
  /// ring model (all-reduce 2(n-1)/n of the buffer, all-gather,
  /// reduce-scatter and all-to-all (n-1) blocks), the volumes
  /// --braid-print-plan predicts. Groups of one rank move nothing and are
  /// not counted.
  std::map<std::string, std::pair<int64_t, double>> collectives;
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

/// The axis group of the ranks that run the same pipeline stage as this one:
/// every grid axis but rt->stageAxis, in grid order ("dp,tp"; "" when the
/// grid has no other axis). Only for a pipelined program (stageAxis >= 0).
std::string stageGroup(const braid_rt *rt);

/// Dumps a sharded tensor whose local buffer (backend memory) is `data`:
/// normally every rank's shard is all-gathered over "world" (collective:
/// every rank must call this in the same order) and rank 0 writes the global
/// tensor, padding dropped, as DIR/<file>.npy; with options.dumpLocal each
/// rank writes its own shard (local shape) with its suffix. A pipeline stage
/// (rt->stageAxis >= 0) gathers over its stage group instead, and its leader
/// (coordinate 0 on the group's axes) writes; with no other axis its shard is
/// the whole tensor. Nothing when dumps are off.
void dumpSharded(braid_rt *rt, const std::string &file, const void *data, braid_dtype dtype,
                 const ShardLayout &layout);
/// The global tensor of which `data` (device memory) is this rank's block
/// as `layout` says, on the host of every rank (collective over the world,
/// or over a pipeline stage's group: dumps' groups); padding dropped, natural
/// order. A tensor whole on every rank is copied, with no collective.
std::vector<char> gatherGlobal(braid_rt *rt, const std::string &name, const void *data,
                               braid_dtype dtype, const ShardLayout &layout);
/// Dumps a ZeRO range of a sharded block: `data` holds this rank's `count`
/// elements of the flat block, the ranks of group `zeroAxes` its consecutive
/// ranges; the block is gathered over that group, then dumped as `block`
/// says. Every rank makes the call.
void dumpZeroBlock(braid_rt *rt, const std::string &file, const void *data, braid_dtype dtype,
                   int64_t count, const char *zeroAxes, const ShardLayout &block);

/// --check-replicas: compares every rank's loss with rank 0's after a step
/// (collective over the world), keeping the worst per rank; writeLossCopies
/// writes them (rank 0) as replicas.loss.npy.
void checkLossCopies(braid_rt *rt, int64_t lossOffset);
void writeLossCopies(braid_rt *rt);

/// Elements of a shape (aborts on a negative dimension or overflow).
int64_t numElements(const char *what, int32_t rank, const int64_t *shape);

} // namespace braid::rt

#endif // BRAID_RUNTIME_RT_IMPL_H
