//===- nccl_mpi.cpp - cudasim's NCCL over MPI ------------------------------===//
//
// See runtime/include/cudasim/nccl.h. Every operation becomes work on its
// CUDA stream; the work posts non-blocking MPI calls and tests them, taking
// the process's MPI lock for each call only, so the collectives of several
// streams (one per communicator, as the runtime issues them) progress at once.
// Reductions gather every rank's contribution and reduce in rank order.
//
//===----------------------------------------------------------------------===//

#include "nccl.h"
#include "internal.h"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <unistd.h>

namespace cudasim::nccl {

struct Comm {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
};

namespace {

std::mutex &mpiLock() {
  static std::mutex m;
  return m;
}

/// How long an operation may wait for its peers before it is reported as a
/// deadlock (BRAID_CUDASIM_NCCL_TIMEOUT seconds; default 300, far above any
/// step of the emulation).
std::chrono::seconds deadlockTimeout() {
  static const std::chrono::seconds timeout = [] {
    const char *text = std::getenv("BRAID_CUDASIM_NCCL_TIMEOUT");
    long seconds = text ? std::strtol(text, nullptr, 10) : 0;
    return std::chrono::seconds(seconds > 0 ? seconds : 300);
  }();
  return timeout;
}

/// Waits for `request`, releasing the MPI lock between tests. A real NCCL
/// would hang where this waits too long; the emulation names the operation.
void wait(MPI_Request &request, const Comm &c, const char *what, size_t bytes, int peer = -1) {
  auto start = std::chrono::steady_clock::now();
  while (true) {
    int done = 0;
    {
      std::lock_guard<std::mutex> lock(mpiLock());
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    }
    if (done)
      return;
    if (std::chrono::steady_clock::now() - start > deadlockTimeout()) {
      int world = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &world);
      std::string with = peer >= 0 ? " with rank " + std::to_string(peer) : std::string();
      fail("NCCL emulation: world rank %d: %s of %zu bytes%s (rank %d of a communicator of "
           "%d) has waited %lld s: a deadlock (NCCL's sends and receives block their "
           "communicator until the peer's matching call runs; transfers that must progress "
           "together belong in one ncclGroupStart/ncclGroupEnd)",
           world, what, bytes, with.c_str(), c.rank, c.size,
           static_cast<long long>(deadlockTimeout().count()));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

/// The element type of t, but for the 64-bit integers (reduced exactly in
/// reduce(), not through a double).
Scalar scalar(ncclDataType_t t) {
  switch (t) {
  case ncclInt8:
    return Scalar::I8;
  case ncclUint8:
    return Scalar::U8;
  case ncclFloat16:
    return Scalar::F16;
  case ncclBfloat16:
    return Scalar::BF16;
  case ncclInt32:
    return Scalar::I32;
  case ncclUint32:
    return Scalar::U32;
  case ncclFloat64:
    return Scalar::F64;
  default:
    return Scalar::F32;
  }
}

size_t elementBytes(ncclDataType_t t) {
  if (t == ncclInt64 || t == ncclUint64)
    return 8;
  return t == ncclNumTypes ? 0 : scalarBytes(scalar(t));
}

int checkedInt(size_t bytes) {
  if (bytes > size_t(1) << 30)
    fail("NCCL emulation: a transfer of %zu bytes (more than MPI's int count)", bytes);
  return static_cast<int>(bytes);
}

/// out[i] = op over ranks r of parts[r][offset + i], in rank order (f32
/// accumulation for the float types, as NCCL's kernels; 64-bit integers exact).
void reduce(ncclDataType_t t, ncclRedOp_t op, const char *parts, size_t partBytes, int ranks,
            size_t offset, size_t count, char *out) {
  const bool int64 = t == ncclInt64 || t == ncclUint64;
  for (size_t i = 0; i < count; ++i) {
    if (int64) {
      int64_t acc = 0;
      for (int r = 0; r < ranks; ++r) {
        int64_t v = reinterpret_cast<const int64_t *>(parts + r * partBytes)[offset + i];
        acc = r == 0 ? v : op == ncclSum ? acc + v : op == ncclMax ? std::max(acc, v)
                         : op == ncclMin ? std::min(acc, v) : acc * v;
      }
      reinterpret_cast<int64_t *>(out)[i] = acc;
      continue;
    }
    const bool f32 = t == ncclFloat32 || t == ncclBfloat16 || t == ncclFloat16;
    double acc = 0;
    for (int r = 0; r < ranks; ++r) {
      double v = loadScalar(scalar(t), parts + r * partBytes, offset + i);
      if (r == 0)
        acc = v;
      else if (op == ncclSum || op == ncclAvg)
        acc = f32 ? double(float(acc) + float(v)) : acc + v;
      else if (op == ncclMax)
        acc = std::max(acc, v);
      else if (op == ncclMin)
        acc = std::min(acc, v);
      else
        acc = f32 ? double(float(acc) * float(v)) : acc * v;
    }
    if (op == ncclAvg)
      acc /= ranks;
    storeScalar(scalar(t), out, i, acc);
  }
}

/// Every rank's `bytes` from `send`, in rank order.
std::vector<char> gatherAll(const Comm &c, const void *send, size_t bytes, const char *what) {
  std::vector<char> mine(static_cast<const char *>(send), static_cast<const char *>(send) + bytes);
  std::vector<char> all(bytes * size_t(c.size));
  MPI_Request request;
  {
    std::lock_guard<std::mutex> lock(mpiLock());
    MPI_Iallgather(mine.data(), checkedInt(bytes), MPI_BYTE, all.data(), checkedInt(bytes),
                   MPI_BYTE, c.comm, &request);
  }
  wait(request, c, what, bytes);
  return all;
}

struct PointToPoint {
  bool send;
  const void *sendBuffer;
  void *recvBuffer;
  size_t bytes;
  int peer;
  Comm *comm;
  cudaStream_t stream;
};

thread_local int groupDepth = 0; // NCCL groups are per host thread
thread_local std::vector<PointToPoint> grouped;

void runPointToPoint(const std::vector<PointToPoint> &ops) {
  std::vector<MPI_Request> requests(ops.size());
  // Sends from a copy: NCCL reads the buffer when the stream gets there.
  std::vector<std::vector<char>> staged(ops.size());
  {
    std::lock_guard<std::mutex> lock(mpiLock());
    for (size_t i = 0; i < ops.size(); ++i) {
      const PointToPoint &op = ops[i];
      if (op.send) {
        staged[i].assign(static_cast<const char *>(op.sendBuffer),
                         static_cast<const char *>(op.sendBuffer) + op.bytes);
        // Synchronous mode: a send completes only once its receive has
        // started, as NCCL's may (MPI's eager sends of small messages would
        // hide a send that NCCL leaves waiting for its receive).
        MPI_Issend(staged[i].data(), checkedInt(op.bytes), MPI_BYTE, op.peer, 0, op.comm->comm,
                   &requests[i]);
      } else {
        MPI_Irecv(op.recvBuffer, checkedInt(op.bytes), MPI_BYTE, op.peer, 0, op.comm->comm,
                  &requests[i]);
      }
    }
  }
  for (size_t i = 0; i < ops.size(); ++i)
    wait(requests[i], *ops[i].comm, ops[i].send ? "ncclSend" : "ncclRecv", ops[i].bytes,
         ops[i].peer);
}

ncclResult_t queuePointToPoint(PointToPoint op) {
  if (!op.comm || op.peer < 0 || op.peer >= op.comm->size)
    return ncclInvalidArgument;
  if (groupDepth > 0) {
    grouped.push_back(op);
    return ncclSuccess;
  }
  enqueue(op.stream, [op] { runPointToPoint({op}); });
  return ncclSuccess;
}

bool validBuffers(const void *send, const void *recv, size_t sendBytes, size_t recvBytes) {
  return (sendBytes == 0 || isDevicePointer(send, sendBytes)) &&
         (recvBytes == 0 || isDevicePointer(recv, recvBytes));
}

} // namespace
} // namespace cudasim::nccl

using cudasim::nccl::Comm;
namespace sim = cudasim::nccl;

const char *ncclGetErrorString(ncclResult_t result) {
  static constexpr cudasim::StatusText<ncclResult_t> kTexts[] = {
      {ncclSuccess, "no error"},
      {ncclInvalidArgument, "invalid argument"},
      {ncclInvalidUsage, "invalid usage"},
      {ncclInProgress, "operation in progress"}};
  return cudasim::textOf(kTexts, result, "internal error");
}
const char *ncclGetLastError(ncclComm_t) { return ""; }

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  std::memset(id, 0, sizeof *id);
  std::snprintf(id->internal, sizeof id->internal, "cudasim-nccl-%d", static_cast<int>(getpid()));
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId, int rank) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  int worldSize = 0, worldRank = 0;
  if (initialized) {
    MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
    MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  }
  if (!initialized || worldSize != nranks || worldRank != rank) {
    std::fprintf(stderr,
                 "cudasim: its NCCL runs over MPI: start the ranks with mpirun (rank %d of %d "
                 "asked for; MPI %s)\n",
                 rank, nranks, initialized ? "world differs" : "not initialized");
    return ncclInvalidUsage;
  }
  auto c = std::make_unique<Comm>();
  {
    std::lock_guard<std::mutex> lock(sim::mpiLock());
    MPI_Comm_dup(MPI_COMM_WORLD, &c->comm);
  }
  c->rank = rank;
  c->size = nranks;
  *comm = c.release();
  return ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                           ncclConfig_t *) {
  if (!comm)
    return ncclInvalidArgument;
  // Meet every rank first (the lock is free between tests), then split:
  // MPI_Comm_split blocks, but every rank is already at it.
  int mine[2] = {color, key};
  sim::gatherAll(*comm, mine, sizeof mine, "ncclCommSplit");
  MPI_Comm out = MPI_COMM_NULL;
  {
    std::lock_guard<std::mutex> lock(sim::mpiLock());
    MPI_Comm_split(comm->comm, color == NCCL_SPLIT_NOCOLOR ? MPI_UNDEFINED : color, key, &out);
  }
  if (out == MPI_COMM_NULL) {
    *newcomm = nullptr;
    return ncclSuccess;
  }
  auto c = std::make_unique<Comm>();
  c->comm = out;
  MPI_Comm_rank(out, &c->rank);
  MPI_Comm_size(out, &c->size);
  *newcomm = c.release();
  return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) { return comm ? ncclSuccess : ncclInvalidArgument; }
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm)
    return ncclInvalidArgument;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    std::lock_guard<std::mutex> lock(sim::mpiLock());
    MPI_Comm_free(&comm->comm);
  }
  delete comm;
  return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t comm) { return comm ? ncclSuccess : ncclInvalidArgument; }
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
  *asyncError = ncclSuccess;
  return comm ? ncclSuccess : ncclInvalidArgument;
}
ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
  *count = comm->size;
  return ncclSuccess;
}
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
  *rank = comm->rank;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  size_t bytes = count * sim::elementBytes(datatype);
  if (!comm || !bytes || !sim::validBuffers(sendbuff, recvbuff, bytes, bytes))
    return count == 0 && comm ? ncclSuccess : ncclInvalidArgument;
  cudasim::enqueue(stream, [=] {
    std::vector<char> all = sim::gatherAll(*comm, sendbuff, bytes, "ncclAllReduce");
    sim::reduce(datatype, op, all.data(), bytes, comm->size, 0, count,
                static_cast<char *>(recvbuff));
  });
  return ncclSuccess;
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  size_t bytes = recvcount * sim::elementBytes(datatype);
  if (!comm || !bytes || !sim::validBuffers(sendbuff, recvbuff, bytes * comm->size, bytes))
    return recvcount == 0 && comm ? ncclSuccess : ncclInvalidArgument;
  cudasim::enqueue(stream, [=] {
    size_t total = bytes * size_t(comm->size);
    std::vector<char> all = sim::gatherAll(*comm, sendbuff, total, "ncclReduceScatter");
    sim::reduce(datatype, op, all.data(), total, comm->size, recvcount * size_t(comm->rank),
                recvcount, static_cast<char *>(recvbuff));
  });
  return ncclSuccess;
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  size_t bytes = sendcount * sim::elementBytes(datatype);
  if (!comm || !bytes || !sim::validBuffers(sendbuff, recvbuff, bytes, bytes * comm->size))
    return sendcount == 0 && comm ? ncclSuccess : ncclInvalidArgument;
  cudasim::enqueue(stream, [=] {
    std::vector<char> all = sim::gatherAll(*comm, sendbuff, bytes, "ncclAllGather");
    std::memcpy(recvbuff, all.data(), all.size());
  });
  return ncclSuccess;
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  size_t bytes = count * sim::elementBytes(datatype);
  if (!comm || root < 0 || root >= comm->size ||
      !sim::validBuffers(comm->rank == root ? sendbuff : nullptr, recvbuff,
                         comm->rank == root ? bytes : 0, bytes))
    return ncclInvalidArgument;
  if (!bytes)
    return ncclSuccess;
  cudasim::enqueue(stream, [=] {
    if (comm->rank == root && sendbuff != recvbuff)
      std::memmove(recvbuff, sendbuff, bytes);
    MPI_Request request;
    {
      std::lock_guard<std::mutex> lock(sim::mpiLock());
      MPI_Ibcast(recvbuff, sim::checkedInt(bytes), MPI_BYTE, root, comm->comm, &request);
    }
    sim::wait(request, *comm, "ncclBroadcast", bytes, root);
  });
  return ncclSuccess;
}

ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  size_t bytes = count * sim::elementBytes(datatype);
  if (!sim::validBuffers(sendbuff, nullptr, bytes, 0))
    return ncclInvalidArgument;
  return sim::queuePointToPoint({true, sendbuff, nullptr, bytes, peer, comm, stream});
}
ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  size_t bytes = count * sim::elementBytes(datatype);
  if (!sim::validBuffers(nullptr, recvbuff, 0, bytes))
    return ncclInvalidArgument;
  return sim::queuePointToPoint({false, nullptr, recvbuff, bytes, peer, comm, stream});
}

ncclResult_t ncclGroupStart() {
  ++sim::groupDepth;
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd() {
  if (sim::groupDepth == 0)
    return ncclInvalidUsage;
  if (--sim::groupDepth > 0)
    return ncclSuccess;
  std::vector<sim::PointToPoint> ops = std::move(sim::grouped);
  sim::grouped.clear();
  if (ops.empty())
    return ncclSuccess;
  // NCCL runs a group's operations on their streams together; the runtime
  // issues one group per stream.
  for (const sim::PointToPoint &op : ops)
    if (op.stream != ops.front().stream) {
      std::fprintf(stderr, "cudasim: an NCCL group over several streams (not emulated)\n");
      return ncclInvalidUsage;
    }
  cudasim::enqueue(ops.front().stream, [ops] { sim::runPointToPoint(ops); });
  return ncclSuccess;
}
