//===- comm_nccl.h - GPU ranks over NCCL ------------------------*- C++ -*-===//
//
// The NCCL communicator provider (comm_nccl.cu, library braid_comm_nccl, built
// when CUDA and NCCL are found) and the process-level calls of the driver
// (main.cpp built with BRAID_RUNTIME_NCCL), which comm_nccl_bootstrap.cu
// holds with the unique id's file store. This header includes neither nccl.h
// nor cuda_runtime.h: the driver is compiled by the host compiler.
//
// Bootstrap of the world communicator (ncclCommInitRank needs one
// ncclUniqueId on every rank, made by rank 0):
//   MPI    under mpirun (braid_runtime_main_cuda_mpi): the driver passes a
//          broadcast function (MPI_Bcast from world rank 0);
//   store  without MPI: BRAID_NCCL_STORE=DIR (a directory every rank sees,
//          e.g. on a shared file system for several nodes), BRAID_WORLD_SIZE,
//          BRAID_RANK and BRAID_LOCAL_RANK (the GPU of this process on its
//          node; default BRAID_RANK). Rank 0 writes DIR/nccl-unique-id
//          (BRAID_RUN_ID, when set, is appended to the name) atomically (write
//          a temporary file, then rename); the others poll for it (60 s,
//          BRAID_NCCL_STORE_TIMEOUT seconds when set) and fail with a clear
//          message. Rank 0 removes the file once the world communicator is up
//          (every rank has read it then).
//
// Communicators: one per grid-axis group, made with ncclCommSplit of the world
// communicator (color = row-major index of the coordinates of the other axes,
// key = row-major index of the group's axes = the rank in the group), cached
// per set of axes ("dp,tp" and "tp,dp" share one). Creating one is collective
// over the world (SPMD: every rank asks for the same new axis lists in the
// same order).
//
// Collectives run on their group's stream (the backend's commStream(group):
// one per communicator, at the highest priority, so that groups' transfers
// run at once as the overlap scheduler models them): the stream first waits
// for an event recorded on the compute stream (the producers are done), the
// NCCL call is issued, a completion event is recorded on the comm stream;
// braid_event_wait polls ncclCommGetAsyncError, makes the compute stream wait
// for the completion event (cudaStreamWaitEvent) and returns the event to a
// pool. Nothing blocks the host. Buffers are device memory (cuda backend) and
// must stay untouched until the event is waited for. Every dtype is reduced
// natively (f32, bf16, f16, i32, i64; sum, max, min). Errors name the rank,
// the collective, the axes and NCCL's error string and last error; a failed
// NCCL call aborts every communicator of the process (ncclCommAbort) first.
//
// Point to point: an NCCL send or receive blocks its communicator until the
// peer's matching call runs, and a communicator's operations run one after
// another. So sends and receives between ring neighbours of a group (group
// ranks r and r+1 mod n) go on edge communicators, one per direction of each
// neighbour pair, split from the group's when it is made (two to six
// ncclCommSplit calls), each with its own stream ("<axes>[from>to]"): a
// pipeline's sends then wait only for their own receives, as the MPI
// provider's do, whatever the schedule. Transfers between other ranks stay
// on the group's communicator. send/recv to oneself are not supported (NCCL
// would need both in one group).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_COMM_NCCL_H
#define BRAID_RUNTIME_CUDA_COMM_NCCL_H

#include "comm.h"

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace braid::rt::nccl {

/// How the world's ranks find each other.
struct Bootstrap {
  int32_t size = 1, rank = 0;
  /// Broadcasts `bytes` at `data` from world rank 0 to every rank (MPI). Null:
  /// the file store in `storeDir`.
  std::function<void(void *data, size_t bytes)> broadcast;
  std::string storeDir;
  /// The run is traced: each transfer is bracketed by timed events on its
  /// stream (Event::deviceSpan), the trace's communication lanes.
  bool timed = false;
};

/// True when BRAID_WORLD_SIZE is set (store mode: one process per GPU started
/// by any launcher, ranks from BRAID_RANK / BRAID_WORLD_SIZE).
bool storeLaunched();
/// Store mode: size, rank, local rank and BRAID_NCCL_STORE from the
/// environment; aborts with a message on a missing or bad value.
void storeRanks(int32_t *size, int32_t *rank, int32_t *localRank, std::string *storeDir);
/// The local rank an MPI launcher gives (OMPI_COMM_WORLD_LOCAL_RANK,
/// MPI_LOCALRANKID, SLURM_LOCALID, MV2_COMM_WORLD_LOCAL_RANK, LOCAL_RANK;
/// BRAID_LOCAL_RANK first), or -1.
int32_t launcherLocalRank();
/// cudaSetDevice(localRank) (aborts when the node has no such device). Call
/// before the cuda backend and the provider are created.
void selectDevice(int32_t localRank);

/// The file store of the unique id (comm_nccl_bootstrap.cu), for the
/// provider: rank 0 writes the id's bytes to DIR/nccl-unique-id[.BRAID_RUN_ID]
/// atomically; the others poll for it (BRAID_NCCL_STORE_TIMEOUT); rank 0
/// removes it once the world communicator is up.
void storeWrite(const std::string &dir, const void *id, size_t bytes);
void storeRead(const std::string &dir, int32_t rank, void *id, size_t bytes);
void storeRemove(const std::string &dir);

/// The NCCL provider of `grid` (size must equal bootstrap.size) on the
/// current device. Also sets the rank of fatal() messages.
std::unique_ptr<CommProvider> makeCommProvider(const Grid &grid, const Bootstrap &bootstrap);

/// ncclCommAbort on every NCCL communicator of the process (for fatal paths:
/// the peers then fail instead of hanging). Safe to call more than once.
void abortAll();

} // namespace braid::rt::nccl

#endif // BRAID_RUNTIME_CUDA_COMM_NCCL_H
