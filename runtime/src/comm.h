//===- comm.h - communicators behind braid_comm / braid_event ---*- C++ -*-===//
//
// The C ABI's braid_comm wraps a Communicator and braid_event an Event. One
// CommProvider per process creates the communicator of each grid-axis group
// ("world", "tp", "dp,tp"). Implementations:
//   self  (comm_self.cpp): one rank; collectives are copies, events complete
//                          immediately.
//   mpi   (comm_mpi.cpp, library braid_runtime_mpi): CPU ranks; collectives
//          are nonblocking MPI calls that a progress thread completes while
//          the program computes; sends complete for the program at once (the
//          runtime owns a copy of the data); BRAID_LINK emulates the links of
//          a cluster.
//   nccl  (cuda/comm_nccl.cu, library braid_comm_nccl): GPU ranks,
//          collectives on their group's stream (the backend's
//          commStream(group)), events are cudaEvents the compute stream
//          waits on.
//
// Counts are in elements of `dtype`; all_gather / reduce_scatter / all_to_all
// take the count of one rank's block. `send` may equal `recv` (in place).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_COMM_H
#define BRAID_RUNTIME_COMM_H

#include "backend.h"
#include "braid/runtime.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace braid::rt {

/// Completion of one collective.
class Event {
public:
  virtual ~Event() = default;
  /// Makes work issued later on the compute stream wait for the collective.
  virtual void wait(Backend &backend) = 0;
  /// After wait: when the transfer began and ended, in seconds on the
  /// steady clock (the trace's communication lanes), and when its emulated
  /// link finished with it (0: no emulator, or a receive, which costs the
  /// receiver's link nothing); false when the provider does not know (self,
  /// nccl).
  virtual bool interval(double *begin, double *end, double *linkEnd) const {
    (void)begin;
    (void)end;
    (void)linkEnd;
    return false;
  }
  /// After wait, when interval() does not know: the device events that
  /// bracket the transfer on its stream (GPU ranks, recorded only when the
  /// run is traced), which the trace places on the steady clock when it is
  /// written; null when none were recorded.
  virtual std::shared_ptr<DeviceSpan> deviceSpan() const { return nullptr; }
};

/// The checks every communicator makes of a collective's buffers (`what` on
/// the group `axes`): a count >= 0, a known dtype, both buffers when there
/// is data; aborts with a message otherwise.
void checkCollectiveArgs(const char *what, const std::string &axes, const void *send,
                         const void *recv, int64_t count, braid_dtype dtype);

/// Whether the byte ranges [a, a + aBytes) and [b, b + bBytes) overlap.
inline bool overlaps(const void *a, int64_t aBytes, const void *b, int64_t bBytes) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return aBytes > 0 && bBytes > 0 && x < y + uintptr_t(bBytes) && y < x + uintptr_t(aBytes);
}

class Communicator {
public:
  virtual ~Communicator() = default;
  /// "self", "mpi", "nccl".
  virtual const char *kind() const = 0;
  virtual int32_t size() const = 0;
  virtual int32_t rank() const = 0;

  virtual std::unique_ptr<Event> allReduce(Backend &backend, const void *send, void *recv,
                                           int64_t count, braid_dtype dtype, braid_redop op) = 0;
  virtual std::unique_ptr<Event> allGather(Backend &backend, const void *send, void *recv,
                                           int64_t countPerRank, braid_dtype dtype) = 0;
  virtual std::unique_ptr<Event> reduceScatter(Backend &backend, const void *send, void *recv,
                                               int64_t countPerRank, braid_dtype dtype,
                                               braid_redop op) = 0;
  virtual std::unique_ptr<Event> allToAll(Backend &backend, const void *send, void *recv,
                                          int64_t countPerRank, braid_dtype dtype) = 0;
  virtual std::unique_ptr<Event> broadcast(Backend &backend, void *buffer, int64_t count,
                                           braid_dtype dtype, int32_t root) = 0;
  /// `tag` >= 0 matches a send with the receive of the same tag (MPI); -1
  /// is the untagged stream. NCCL has no tags: its transfers match in order.
  virtual std::unique_ptr<Event> send(Backend &backend, const void *buffer, int64_t count,
                                      braid_dtype dtype, int32_t peer, int32_t tag) = 0;
  virtual std::unique_ptr<Event> recv(Backend &backend, void *buffer, int64_t count,
                                      braid_dtype dtype, int32_t peer, int32_t tag) = 0;
  /// One step of a ring or a halo exchange: `send` to rank `dst` and `recv`
  /// from rank `src` (-1: none), issued together so that ranks that all send
  /// and receive at once cannot deadlock (NCCL groups them; elsewhere the
  /// receive is posted first, then the send).
  virtual std::unique_ptr<Event> sendRecv(Backend &backend, const void *send,
                                          int64_t sendCount, int32_t dst, void *recv,
                                          int64_t recvCount, int32_t src, braid_dtype dtype);
};

/// Both of two events (either may be null).
class PairEvent : public Event {
public:
  PairEvent(std::unique_ptr<Event> a, std::unique_ptr<Event> b)
      : a_(std::move(a)), b_(std::move(b)) {}
  void wait(Backend &backend) override {
    if (a_)
      a_->wait(backend);
    if (b_)
      b_->wait(backend);
  }
  bool interval(double *begin, double *end, double *linkEnd) const override {
    double b[2], e[2], l[2] = {0, 0};
    bool has[2] = {a_ && a_->interval(&b[0], &e[0], &l[0]),
                   b_ && b_->interval(&b[1], &e[1], &l[1])};
    if (!has[0] && !has[1])
      return false;
    *begin = has[0] && has[1] ? std::min(b[0], b[1]) : has[0] ? b[0] : b[1];
    *end = has[0] && has[1] ? std::max(e[0], e[1]) : has[0] ? e[0] : e[1];
    *linkEnd = std::max(l[0], l[1]);
    return true;
  }

private:
  std::unique_ptr<Event> a_, b_;
};

/// The device grid: named axes and their sizes, row-major over the world
/// ranks (the last axis varies fastest). Without --grid the grid is
/// "world=<size>" (implicit).
struct Grid {
  std::vector<std::string> names;
  std::vector<int32_t> sizes;
  bool isExplicit = false; ///< given with --grid (axes are then checked)
  /// Context parallelism (braid_program.zigzag_axis): the index in `names` of
  /// the axis whose splits hold a sequence in zigzag order; -1 when none.
  /// Sharded layouts (shardLayout, rt_impl.h) read it: a dimension split over
  /// this axis first is stored permuted.
  int zigzagAxis = -1;

  int64_t ranks() const;
  std::string str() const; ///< "dp=2,tp=2"
  /// The coordinates of world rank `rank` (row-major).
  std::vector<int32_t> coordinates(int32_t rank) const;
};

/// Parses "dp=2,tp=2" (names [A-Za-z_][A-Za-z0-9_]*, distinct, sizes >= 1;
/// "world" only as the sole axis).
bool parseGrid(const std::string &text, Grid *grid, std::string *error);
/// The implicit grid of `size` ranks: "world=<size>".
Grid worldGrid(int32_t size);
/// The grid axes (indices into grid.names, ascending) of a group spec: "world"
/// (all axes) or a comma-separated list of axis names in any order. False with
/// a message on an unknown, repeated or empty name.
bool groupAxes(const Grid &grid, const std::string &axes, std::vector<int> *out,
               std::string *error);

/// How a world rank joins the communicator of an axis group, for backends
/// that split the world (MPI_Comm_split, ncclCommSplit): the canonical group
/// key (axis names in grid order), whether the group is the whole world, the
/// color (row-major index of the coordinates outside the group) and the order
/// (row-major index of those inside: the rank in the group). Aborts with a
/// message naming the grid when `axes` does not name axes of it.
struct GroupSplit {
  std::string key;
  bool world = false;
  int color = 0;
  int order = 0;
};
GroupSplit splitForGroup(const Grid &grid, const std::vector<int32_t> &coords,
                         const std::string &axes);

/// Creates the communicators of a process (one per distinct axis list).
class CommProvider {
public:
  virtual ~CommProvider() = default;
  virtual const char *kind() const = 0;
  virtual int32_t worldSize() const = 0;
  virtual int32_t worldRank() const = 0;
  /// The communicator of the group along `axes` ("world" or a comma-separated
  /// list of grid axes) that contains this rank; aborts on an unknown axis.
  virtual std::unique_ptr<Communicator> create(const std::string &axes) = 0;
  /// Lets communication in flight advance (called at kernel boundaries,
  /// braid_rt_op_begin / braid_rt_op_end); cheap when nothing is in flight.
  virtual void progress() {}
  /// Waits for the communication the program no longer waits for (MPI: sends
  /// in flight). Called before the communicators are freed.
  virtual void drain() {}
};

/// A single rank: every group is {this rank}. Any axis list is accepted.
std::unique_ptr<CommProvider> makeSelfCommProvider();
/// A single rank on `grid` (whose size must be 1): an explicit grid's axis
/// lists are checked (unknown axes abort); an implicit one accepts any.
std::unique_ptr<CommProvider> makeSelfCommProvider(const Grid &grid);

/// An event that is already complete (wait does nothing).
std::unique_ptr<Event> makeCompletedEvent();

/// Copies `bytes` from `src` to `dst`, both in backend memory, with memmove
/// semantics (CPU: memmove; other backends: through a host staging buffer,
/// until the Backend interface gains a device-to-device copy).
void copyOnDevice(Backend &backend, void *dst, const void *src, int64_t bytes);

} // namespace braid::rt

struct braid_comm {
  std::string axes;
  std::unique_ptr<braid::rt::Communicator> impl;
};

struct braid_event {
  std::unique_ptr<braid::rt::Event> impl;
  /// What the trace calls it: the kind ("all_reduce", "send", ...) and the
  /// group's axes; null for a group of one rank (nothing moves).
  const char *kind = nullptr;
  const braid_comm *comm = nullptr;
};

#endif // BRAID_RUNTIME_COMM_H
