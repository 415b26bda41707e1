//===- comm_mpi.cpp - communicators of CPU ranks over MPI -----------------===//
//
// See comm_mpi.h. Every MPI call's result is checked; a failure aborts with
// "braid runtime: rank R: <collective> on '<axes>': MPI error: <MPI_Error_string>".
// The transfers in flight and the progress thread: comm_mpi_progress.h.
//
//===----------------------------------------------------------------------===//

#include "comm_mpi.h"
#include "comm_mpi_join.h"
#include "comm_mpi_progress.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <optional>

namespace braid::rt::mpi {

namespace {

bool isFloat16(braid_dtype dtype) { return dtype == BRAID_BF16 || dtype == BRAID_F16; }

/// The MPI type that moves elements of `dtype` unchanged.
MPI_Datatype moveType(braid_dtype dtype) {
  switch (dtype) {
  case BRAID_F32:
    return MPI_FLOAT;
  case BRAID_BF16:
  case BRAID_F16:
    return MPI_UINT16_T;
  case BRAID_I32:
    return MPI_INT32_T;
  case BRAID_I64:
    return MPI_INT64_T;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op reduceOp(braid_redop op) {
  switch (op) {
  case BRAID_RED_SUM:
    return MPI_SUM;
  case BRAID_RED_MAX:
    return MPI_MAX;
  case BRAID_RED_MIN:
    return MPI_MIN;
  }
  return MPI_OP_NULL;
}

class MpiCommunicator final : public Communicator {
public:
  /// `group` is the canonical key of the group (GroupSplit::key), whose
  /// emulated link (if any) is `link`.
  MpiCommunicator(std::shared_ptr<Handle> handle, std::string axes, std::string group,
                  std::optional<link::Link> link, std::shared_ptr<Shared> shared)
      : handle_(std::move(handle)), axes_(std::move(axes)), group_(std::move(group)),
        link_(link), shared_(std::move(shared)) {
    check(MPI_Comm_rank(handle_->comm, &rank_), "braid_rt_comm", axes_);
    check(MPI_Comm_size(handle_->comm, &size_), "braid_rt_comm", axes_);
  }
  const char *kind() const override { return "mpi"; }
  int32_t size() const override { return size_; }
  int32_t rank() const override { return rank_; }

  std::unique_ptr<Event> allReduce(Backend &backend, const void *send, void *recv, int64_t count,
                                   braid_dtype dtype, braid_redop op) override {
    const char *what = "braid_all_reduce";
    auto lock = checkArgs(backend, what, send, recv, count, dtype);
    MPI_Op mop = checkOp(what, op);
    auto event = std::make_unique<MpiEvent>(what, axes_, shared_);
    int64_t bytes = count * braid_dtype_size(dtype);
    emulate(event.get(), "all_reduce", double(bytes));
    if (isFloat16(dtype)) {
      // Reduce in f32: MPI has no bf16, and f32 accumulation is what the kernels do.
      event->recvF32.resize(size_t(count));
      toF32(dtype, send, event->recvF32.data(), count);
      event->convertTo = recv;
      event->convertDtype = dtype;
      for (int64_t at = 0; at < count; at += kChunk)
        issue(event.get(), what,
              MPI_Iallreduce(MPI_IN_PLACE, event->recvF32.data() + at, int(chunk(count, at)),
                             MPI_FLOAT, mop, comm(), next(event.get())));
      return event;
    }
    MPI_Datatype type = moveType(dtype);
    int64_t size = braid_dtype_size(dtype);
    const char *in = static_cast<const char *>(send);
    bool inPlace = send == recv;
    if (!inPlace && overlaps(send, bytes, recv, bytes))
      in = stage(event.get(), send, bytes);
    for (int64_t at = 0; at < count; at += kChunk)
      issue(event.get(), what,
            MPI_Iallreduce(inPlace ? MPI_IN_PLACE : in + at * size,
                           static_cast<char *>(recv) + at * size, int(chunk(count, at)), type,
                           mop, comm(), next(event.get())));
    return event;
  }

  std::unique_ptr<Event> allGather(Backend &backend, const void *send, void *recv,
                                   int64_t countPerRank, braid_dtype dtype) override {
    const char *what = "braid_all_gather";
    auto lock = checkArgs(backend, what, send, recv, countPerRank, dtype);
    checkIntCount(what, countPerRank);
    auto event = std::make_unique<MpiEvent>(what, axes_, shared_);
    int64_t bytes = countPerRank * braid_dtype_size(dtype);
    emulate(event.get(), "all_gather", double(bytes));
    char *out = static_cast<char *>(recv);
    const void *in = send;
    if (send == out + rank_ * bytes)
      in = MPI_IN_PLACE; // this rank's block is already in place
    else if (overlaps(send, bytes, recv, bytes * size_))
      in = stage(event.get(), send, bytes);
    issue(event.get(), what,
          MPI_Iallgather(in, int(countPerRank), moveType(dtype), recv, int(countPerRank),
                         moveType(dtype), comm(), next(event.get())));
    return event;
  }

  std::unique_ptr<Event> reduceScatter(Backend &backend, const void *send, void *recv,
                                       int64_t countPerRank, braid_dtype dtype,
                                       braid_redop op) override {
    const char *what = "braid_reduce_scatter";
    auto lock = checkArgs(backend, what, send, recv, countPerRank, dtype);
    checkIntCount(what, countPerRank);
    MPI_Op mop = checkOp(what, op);
    auto event = std::make_unique<MpiEvent>(what, axes_, shared_);
    int64_t total = countPerRank * size_;
    emulate(event.get(), "reduce_scatter", double(countPerRank * braid_dtype_size(dtype)));
    if (isFloat16(dtype)) {
      event->sendF32.resize(size_t(total));
      event->recvF32.resize(size_t(countPerRank));
      toF32(dtype, send, event->sendF32.data(), total);
      event->convertTo = recv;
      event->convertDtype = dtype;
      issue(event.get(), what,
            MPI_Ireduce_scatter_block(event->sendF32.data(), event->recvF32.data(),
                                      int(countPerRank), MPI_FLOAT, mop, comm(),
                                      next(event.get())));
      return event;
    }
    int64_t size = braid_dtype_size(dtype);
    const void *in = send;
    if (send == recv)
      in = MPI_IN_PLACE; // MPI: the input is recv's full extent, the result its first block
    else if (overlaps(send, total * size, recv, countPerRank * size))
      in = stage(event.get(), send, total * size);
    issue(event.get(), what,
          MPI_Ireduce_scatter_block(in, recv, int(countPerRank), moveType(dtype), mop, comm(),
                                    next(event.get())));
    return event;
  }

  std::unique_ptr<Event> allToAll(Backend &backend, const void *send, void *recv,
                                  int64_t countPerRank, braid_dtype dtype) override {
    const char *what = "braid_all_to_all";
    auto lock = checkArgs(backend, what, send, recv, countPerRank, dtype);
    checkIntCount(what, countPerRank);
    auto event = std::make_unique<MpiEvent>(what, axes_, shared_);
    int64_t bytes = countPerRank * size_ * braid_dtype_size(dtype);
    emulate(event.get(), "all_to_all", double(countPerRank * braid_dtype_size(dtype)));
    const void *in = send;
    if (overlaps(send, bytes, recv, bytes))
      in = stage(event.get(), send, bytes);
    issue(event.get(), what,
          MPI_Ialltoall(in, int(countPerRank), moveType(dtype), recv, int(countPerRank),
                        moveType(dtype), comm(), next(event.get())));
    return event;
  }

  std::unique_ptr<Event> broadcast(Backend &backend, void *buffer, int64_t count,
                                   braid_dtype dtype, int32_t root) override {
    const char *what = "braid_broadcast";
    auto lock = checkArgs(backend, what, buffer, buffer, count, dtype);
    checkPeer(what, "root", root);
    auto event = std::make_unique<MpiEvent>(what, axes_, shared_);
    int64_t size = braid_dtype_size(dtype);
    emulate(event.get(), "broadcast", double(count * size));
    for (int64_t at = 0; at < count; at += kChunk)
      issue(event.get(), what,
            MPI_Ibcast(static_cast<char *>(buffer) + at * size, int(chunk(count, at)),
                       moveType(dtype), root, comm(), next(event.get())));
    return event;
  }

  std::unique_ptr<Event> send(Backend &backend, const void *buffer, int64_t count,
                              braid_dtype dtype, int32_t peer, int32_t tag) override {
    const char *what = "braid_send";
    auto lock = checkArgs(backend, what, buffer, buffer, count, dtype);
    checkPeer(what, "peer", peer);
    // Complete for the program at once, on a copy of the data: see comm_mpi.h
    // (pipeline neighbours sending to each other at once would deadlock if a
    // send waited for its receive; the program may reuse its buffer at once).
    // Under the link emulator the message goes at once after a stamp of when
    // the link will have carried it, and the receiver's wait returns no
    // earlier: its arrival does not depend on when the sender's threads get
    // a core.
    int64_t size = braid_dtype_size(dtype);
    double now = nowSeconds(), begin = now, end = now;
    if (link_) {
      double &free = shared_->linkFree[group_];
      begin = std::max(free, now);
      end = free = begin + link::seconds(*link_, "send", size_, double(count * size));
    }
    shared_->sends.emplace_back();
    PendingSend &pending = shared_->sends.back();
    pending.handle = handle_;
    pending.axes = axes_;
    pending.data.assign(static_cast<const char *>(buffer),
                        static_cast<const char *>(buffer) + count * size);
    pending.count = count;
    pending.type = moveType(dtype);
    pending.elementBytes = int(size);
    pending.peer = peer;
    pending.tag = mpiTag(tag);
    pending.arrival = end;
    pending.stamped = link_.has_value();
    shared_->postSend(pending);
    shared_->wake.notify_one();
    return std::make_unique<SentEvent>(begin, end, link_.has_value());
  }

  std::unique_ptr<Event> recv(Backend &backend, void *buffer, int64_t count, braid_dtype dtype,
                              int32_t peer, int32_t tag) override {
    const char *what = "braid_recv";
    auto lock = checkArgs(backend, what, buffer, buffer, count, dtype);
    checkPeer(what, "peer", peer);
    auto event = std::make_unique<MpiEvent>(what, axes_, shared_);
    int64_t size = braid_dtype_size(dtype);
    // Under the link emulator the sender's stamp comes first: when its link
    // has carried the message, which the wait then returns no earlier than.
    if (link_) {
      event->stamped = true;
      issue(event.get(), what,
            MPI_Irecv(&event->arrival, 1, MPI_DOUBLE, peer, mpiTag(tag), comm(),
                      next(event.get())));
    }
    for (int64_t at = 0; at < count || at == 0; at += kChunk)
      issue(event.get(), what,
            MPI_Irecv(static_cast<char *>(buffer) + at * size, int(chunk(count, at)),
                      moveType(dtype), peer, mpiTag(tag), comm(), next(event.get())));
    return event;
  }

private:
  /// The program's tags are small (below kTag); -1 is the untagged stream.
  static int mpiTag(int32_t tag) {
    if (tag >= kTag)
      fatal("braid_send/braid_recv: tag %d is not below %d", int(tag), kTag);
    return tag < 0 ? kTag : int(tag);
  }

  static constexpr int kTag = 0x62726400 & 0x7fff; // within MPI's guaranteed tag range

  MPI_Comm comm() const { return handle_->comm; }
  static int64_t chunk(int64_t count, int64_t at) {
    return count - at < kChunk ? count - at : kChunk;
  }
  static MPI_Request *next(MpiEvent *event) {
    event->requests.push_back(MPI_REQUEST_NULL);
    return &event->requests.back();
  }
  // `next` pushes before the call reads the pointer: requests never reallocates
  // under an MPI call because each call takes the address after its own push.
  void issue(MpiEvent *, const char *what, int code) { check(code, what, axes_); }
  static const char *stage(MpiEvent *event, const void *send, int64_t bytes) {
    event->staging.assign(static_cast<const char *>(send),
                          static_cast<const char *>(send) + bytes);
    return event->staging.data();
  }

  /// Under the link emulator: the transfer takes the group's link from when
  /// the link is free (the group's previous transfer has ended) for the time
  /// link_model.h gives; its wait returns no earlier than that.
  /// `blockBytes` is the ring model's block (link::ringBlocks).
  void emulate(MpiEvent *event, const char *kind, double blockBytes) {
    if (!link_)
      return;
    double &free = shared_->linkFree[group_];
    event->start = std::max(free, event->issuedAt);
    event->notBefore = free =
        event->start +
        link::seconds(*link_, kind, size_, blockBytes * link::ringBlocks(kind, size_));
  }

  /// Every call starts here: takes the MPI lock (held until the call
  /// returns, so the progress thread sees whole events), checks the
  /// arguments and releases the sends MPI has completed.
  [[nodiscard]] std::unique_lock<std::mutex> checkArgs(Backend &backend, const char *what,
                                                       const void *send, const void *recv,
                                                       int64_t count, braid_dtype dtype) {
    std::unique_lock<std::mutex> lock(shared_->mpi);
    shared_->reapSends();
    if (std::strcmp(backend.name(), "cpu") != 0)
      fatal("%s on '%s': the MPI communicator works on host memory (cpu backend), not %s",
            what, axes_.c_str(), backend.name());
    checkCollectiveArgs(what, axes_, send, recv, count, dtype);
    return lock;
  }
  void checkIntCount(const char *what, int64_t count) {
    if (count > INT_MAX)
      fatal("%s on '%s': %lld elements per rank exceed MPI's int counts", what, axes_.c_str(),
            (long long)count);
  }
  MPI_Op checkOp(const char *what, braid_redop op) {
    MPI_Op mop = reduceOp(op);
    if (mop == MPI_OP_NULL)
      fatal("%s on '%s': unknown reduction %d", what, axes_.c_str(), int(op));
    return mop;
  }
  void checkPeer(const char *what, const char *role, int32_t peer) {
    if (peer < 0 || peer >= size_)
      fatal("%s on '%s': %s %d is not a rank of a communicator of size %d", what, axes_.c_str(),
            role, int(peer), size_);
  }

  std::shared_ptr<Handle> handle_;
  std::string axes_;
  std::string group_;
  std::optional<link::Link> link_;
  std::shared_ptr<Shared> shared_;
  int rank_ = 0, size_ = 1;
};

/// The live provider's shared state: MPI calls outside its communicators
/// (the launch's gathers) take its lock, as the progress thread does
/// (MPI_THREAD_SERIALIZED).
Shared *&activeShared() {
  static Shared *shared = nullptr;
  return shared;
}

std::unique_lock<std::mutex> lockMpi() {
  Shared *shared = activeShared();
  return shared ? std::unique_lock<std::mutex>(shared->mpi) : std::unique_lock<std::mutex>();
}

/// Every rank of the launch: MPI_COMM_WORLD under mpirun, the joined world
/// of ranks started through a store (comm_mpi_join.h).
MPI_Comm &launchComm() {
  static MPI_Comm comm = MPI_COMM_WORLD;
  return comm;
}

/// The communicator of this rank's replica group (splitReplicas), the launch
/// without replicas: the "world" of the program's grid.
MPI_Comm &groupComm() {
  static MPI_Comm comm = launchComm();
  return comm;
}

class MpiProvider final : public CommProvider {
public:
  explicit MpiProvider(Grid grid) : grid_(std::move(grid)) {
    int size = 0;
    check(MPI_Comm_size(groupComm(), &size), "MPI_Comm_size", "world");
    check(MPI_Comm_rank(groupComm(), &rank_), "MPI_Comm_rank", "world");
    size_ = size;
    if (grid_.ranks() != size_)
      fatal("grid %s has %lld ranks but the MPI world has %d ranks", grid_.str().c_str(),
            (long long)grid_.ranks(), size_);
    // The runtime's traffic stays on its own communicators.
    world_ = std::make_shared<Handle>();
    check(MPI_Comm_dup(groupComm(), &world_->comm), "MPI_Comm_dup", "world");
    check(MPI_Comm_set_errhandler(world_->comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler",
          "world");
    coords_ = grid_.coordinates(rank_);
    activeShared() = shared_.get();
    if (const char *text = std::getenv("BRAID_LINK"); text && *text) {
      std::string error;
      if (!link::parse(text, &shared_->links, &error))
        fatal("BRAID_LINK='%s': %s", text, error.c_str());
      for (const auto &[axis, l] : shared_->links.byAxis)
        if (axis != "*" && std::find(grid_.names.begin(), grid_.names.end(), axis) ==
                               grid_.names.end())
          fatal("BRAID_LINK='%s': axis '%s' is not an axis of the grid %s", text,
                axis.c_str(), grid_.str().c_str());
    }
    // A progress thread needs MPI_THREAD_SERIALIZED (every call is under
    // Shared::mpi); without it, or with BRAID_PROGRESS_THREAD=0,
    // communication advances at kernel boundaries and in waits only.
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    const char *want = std::getenv("BRAID_PROGRESS_THREAD");
    if (level >= MPI_THREAD_SERIALIZED && !(want && std::strcmp(want, "0") == 0)) {
      shared_->threaded = true;
      shared_->progress = std::thread([s = shared_.get()] { s->run(); });
    }
  }
  // The sends' buffers must outlive MPI's use of them.
  ~MpiProvider() override {
    if (initialized())
      drain();
    else
      stopProgress();
    if (activeShared() == shared_.get())
      activeShared() = nullptr;
  }
  const char *kind() const override { return "mpi"; }
  int32_t worldSize() const override { return size_; }
  int32_t worldRank() const override { return rank_; }

  std::unique_ptr<Communicator> create(const std::string &axes) override {
    std::lock_guard<std::mutex> lock(shared_->mpi);
    GroupSplit split = splitForGroup(grid_, coords_, axes);
    const std::string &key = split.key;
    const int color = split.color, order = split.order;
    std::shared_ptr<Handle> &handle = byGroup_[key];
    if (!handle) {
      if (split.world) {
        handle = world_;
      } else {
        handle = std::make_shared<Handle>();
        check(MPI_Comm_split(world_->comm, color, order, &handle->comm), "braid_rt_comm",
              axes);
        check(MPI_Comm_set_errhandler(handle->comm, MPI_ERRORS_RETURN), "braid_rt_comm", axes);
        std::string name = "braid:" + key;
        MPI_Comm_set_name(handle->comm, name.c_str());
      }
    }
    // The group's axes (every grid axis for the world) pick its link.
    std::vector<std::string> names;
    if (split.world) {
      names = grid_.names;
    } else {
      for (size_t at = 0; at <= key.size();) {
        size_t comma = std::min(key.find(',', at), key.size());
        names.push_back(key.substr(at, comma - at));
        at = comma + 1;
      }
    }
    std::optional<link::Link> link;
    if (link::Link l; shared_->links.group(names, &l))
      link = l;
    return std::make_unique<MpiCommunicator>(handle, axes, key, link, shared_);
  }

  // Without the progress thread: Open MPI (like most implementations)
  // advances nonblocking collectives only inside MPI calls; a probe runs its
  // progress engine (testing the pending sends does too).
  void progress() override {
    if (shared_->threaded)
      return;
    std::lock_guard<std::mutex> lock(shared_->mpi);
    if (!shared_->events.empty()) {
      int flag = 0;
      MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, world_->comm, &flag, MPI_STATUS_IGNORE);
    }
    shared_->reapSends();
  }

  // Stops the progress thread, then waits for every send in flight.
  void drain() override {
    stopProgress();
    for (PendingSend &send : shared_->sends)
      check(MPI_Waitall(int(send.requests.size()), send.requests.data(), MPI_STATUSES_IGNORE),
            "braid_send", send.axes);
    shared_->sends.clear();
  }

private:
  Grid grid_;
  int rank_ = 0;
  int32_t size_ = 1;
  std::vector<int32_t> coords_;
  std::shared_ptr<Handle> world_;
  std::map<std::string, std::shared_ptr<Handle>> byGroup_;
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();

  void stopProgress() {
    if (!shared_->threaded)
      return;
    {
      std::lock_guard<std::mutex> lock(shared_->mpi);
      shared_->stop = true;
      shared_->wake.notify_one();
    }
    shared_->progress.join();
    shared_->threaded = false;
  }
};

} // namespace

bool launched() {
  if (const char *force = std::getenv("BRAID_MPI"); force && *force)
    return std::strcmp(force, "0") != 0;
  if (storeLaunched())
    return true;
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK",
                           "MPI_LOCALNRANKS", "MV2_COMM_WORLD_SIZE", "I_MPI_HYDRA_HOST_FILE"})
    if (std::getenv(name))
      return true;
  return false;
}

void initialize(int *argc, char ***argv) {
  std::optional<StoreRanks> store;
  if (storeLaunched()) {
    store = storeRanks();
    setFatalRank(store->rank);
    pointAtRendezvous(*store);
  }
  int done = 0;
  MPI_Initialized(&done);
  if (!done) {
    int provided = 0;
    int code = MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
    if (code != MPI_SUCCESS)
      fatal("MPI_Init_thread failed: %s", errorString(code).c_str());
  }
  check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler",
        "world");
  if (store) {
    launchComm() = joinStore(*store);
    groupComm() = launchComm();
    check(MPI_Comm_set_errhandler(launchComm(), MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler",
          "launch");
  }
  if (worldSize() > 1) {
    setFatalRank(worldRank());
    // A rank that stops alone would leave the others blocked in collectives.
    setFatalAbort([] { MPI_Abort(launchComm(), 134); });
  }
}

bool initialized() {
  int done = 0, finalized = 0;
  MPI_Initialized(&done);
  MPI_Finalized(&finalized);
  return done && !finalized;
}

int32_t worldSize() {
  int size = 1;
  check(MPI_Comm_size(groupComm(), &size), "MPI_Comm_size", "world");
  return size;
}

int32_t worldRank() {
  int rank = 0;
  check(MPI_Comm_rank(groupComm(), &rank), "MPI_Comm_rank", "world");
  return rank;
}

int32_t launchSize() {
  int size = 1;
  check(MPI_Comm_size(launchComm(), &size), "MPI_Comm_size", "launch");
  return size;
}

int32_t launchRank() {
  int rank = 0;
  check(MPI_Comm_rank(launchComm(), &rank), "MPI_Comm_rank", "launch");
  return rank;
}

int32_t splitGroups(int32_t replicas, const std::vector<int32_t> &sizes) {
  const int32_t size = launchSize(), rank = launchRank();
  std::vector<int32_t> groups = sizes;
  if (groups.empty()) {
    if (replicas < 1 || size % replicas != 0)
      fatal("%d replicas cannot share the launch's %d ranks evenly", int(replicas), int(size));
    groups.assign(size_t(replicas), size / replicas);
  }
  int32_t total = 0, group = -1;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g] < 1)
      fatal("a group of %d ranks", int(groups[g]));
    if (group < 0 && rank < total + groups[g])
      group = int32_t(g);
    total += groups[g];
  }
  if (total != size)
    fatal("groups of %d ranks in all, but the launch has %d", int(total), int(size));
  if (groups.size() == 1)
    return 0;
  MPI_Comm comm;
  check(MPI_Comm_split(launchComm(), group, rank, &comm), "MPI_Comm_split", "replicas");
  check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", "replica");
  groupComm() = comm;
  return group;
}

std::vector<double> gatherOnLaunchRoot(const std::vector<double> &values) {
  const int32_t size = launchSize();
  int count = int(values.size());
  std::vector<int> counts(size_t(size), 0), offsets(size_t(size), 0);
  std::unique_lock<std::mutex> lock = lockMpi();
  check(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, launchComm()),
        "MPI_Gather", "launch");
  int total = 0;
  for (int32_t r = 0; r < size; ++r) {
    offsets[size_t(r)] = total;
    total += counts[size_t(r)];
  }
  std::vector<double> all(launchRank() == 0 ? size_t(total) : 0);
  check(MPI_Gatherv(values.data(), count, MPI_DOUBLE, all.data(), counts.data(), offsets.data(),
                    MPI_DOUBLE, 0, launchComm()),
        "MPI_Gatherv", "launch");
  return all;
}

std::vector<int64_t> allGatherOnLaunch(const std::vector<int64_t> &values) {
  std::vector<int64_t> all(values.size() * size_t(launchSize()));
  std::unique_lock<std::mutex> lock = lockMpi();
  check(MPI_Allgather(values.data(), int(values.size()), MPI_INT64_T, all.data(),
                      int(values.size()), MPI_INT64_T, launchComm()),
        "MPI_Allgather", "launch");
  return all;
}

void maxOnLaunch(std::vector<int32_t> &values) {
  std::unique_lock<std::mutex> lock = lockMpi();
  check(MPI_Allreduce(MPI_IN_PLACE, values.data(), int(values.size()), MPI_INT32_T, MPI_MAX,
                      launchComm()),
        "MPI_Allreduce", "launch");
}

namespace {
int messageBytes(int64_t bytes, const char *what) {
  if (bytes < 0 || bytes > INT_MAX)
    fatal("%s of %lld bytes over the launch", what, (long long)bytes);
  return int(bytes);
}
} // namespace

void broadcastOnLaunch(void *data, int64_t bytes, int32_t root) {
  std::unique_lock<std::mutex> lock = lockMpi();
  check(MPI_Bcast(data, messageBytes(bytes, "MPI_Bcast"), MPI_BYTE, root, launchComm()),
        "MPI_Bcast", "launch");
}

void sendOnLaunch(const void *data, int64_t bytes, int32_t to, int32_t tag) {
  std::unique_lock<std::mutex> lock = lockMpi();
  check(MPI_Send(data, messageBytes(bytes, "MPI_Send"), MPI_BYTE, to, tag, launchComm()),
        "MPI_Send", "launch");
}

void receiveOnLaunch(void *data, int64_t bytes, int32_t from, int32_t tag) {
  std::unique_lock<std::mutex> lock = lockMpi();
  check(MPI_Recv(data, messageBytes(bytes, "MPI_Recv"), MPI_BYTE, from, tag, launchComm(),
                 MPI_STATUS_IGNORE),
        "MPI_Recv", "launch");
}

void launchBarrier() {
  std::unique_lock<std::mutex> lock = lockMpi();
  check(MPI_Barrier(launchComm()), "MPI_Barrier", "launch");
}

void broadcastFromRoot(void *data, int64_t bytes) {
  if (bytes < 0 || bytes > INT_MAX)
    fatal("MPI_Bcast of %lld bytes", (long long)bytes);
  check(MPI_Bcast(data, int(bytes), MPI_BYTE, 0, groupComm()), "MPI_Bcast", "world");
}

void finalize() {
  setFatalAbort(nullptr);
  if (!initialized())
    return;
  if (groupComm() != launchComm())
    MPI_Comm_free(&groupComm());
  if (launchComm() != MPI_COMM_WORLD && launchComm() != MPI_COMM_SELF)
    MPI_Comm_free(&launchComm());
  MPI_Finalize();
}

std::unique_ptr<CommProvider> makeCommProvider(const Grid &grid) {
  return std::make_unique<MpiProvider>(grid);
}

} // namespace braid::rt::mpi
