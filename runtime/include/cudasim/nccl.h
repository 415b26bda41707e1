//===- nccl.h - cudasim's NCCL: the subset Braid's GPU ranks use, over MPI -===//
//
// Each communicator is an MPI communicator (the world's: MPI_COMM_WORLD; a
// split's: MPI_Comm_split). A collective, send or receive is queued on its
// CUDA stream like NCCL's kernels, and runs when the stream reaches it:
// non-blocking MPI calls, tested under one process-wide lock (the runtime
// initializes MPI for MPI_THREAD_SERIALIZED), so that the collectives of two
// streams progress together as NCCL's do. Reductions of bf16 and f16 are in
// f32, rounded once. ncclGroupStart/End gather sends and receives of one
// stream and post them together, as NCCL does (no ordering deadlock).
// Sends are synchronous (MPI_Issend): one completes only once its receive
// has started, as an NCCL send may, where MPI's eager protocol would let a
// small send finish alone and hide a hang. An operation that waits for its
// peers longer than BRAID_CUDASIM_NCCL_TIMEOUT seconds (default 300) is
// reported as a deadlock, naming it, its size, peer and communicator, and
// the process aborts (mpirun then ends the others).
// Not emulated: NCCL runs one communicator's operations one after another
// even when they are issued on different streams; here each stream runs its
// own (the runtime issues each communicator's on one stream). Ranks come
// from mpirun (BRAID_NCCL_STORE's file bootstrap is not emulated: the unique
// id is only passed through).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_CUDASIM_NCCL_H
#define BRAID_CUDASIM_NCCL_H

#include "cudasim/cudasim.h"

#include <cstddef>

namespace cudasim::nccl {
struct Comm;
} // namespace cudasim::nccl
using ncclComm_t = cudasim::nccl::Comm *;

#define NCCL_UNIQUE_ID_BYTES 128
struct ncclUniqueId {
  char internal[NCCL_UNIQUE_ID_BYTES];
};
struct ncclConfig_t {
  int blocking;
};
#define NCCL_SPLIT_NOCOLOR -1

enum ncclResult_t {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8,
};
enum ncclDataType_t {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclNumTypes = 10,
};
enum ncclRedOp_t { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 };

const char *ncclGetErrorString(ncclResult_t result);
const char *ncclGetLastError(ncclComm_t comm);
ncclResult_t ncclGetUniqueId(ncclUniqueId *id);
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                           ncclConfig_t *config);
ncclResult_t ncclCommFinalize(ncclComm_t comm);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError);
ncclResult_t ncclCommCount(const ncclComm_t comm, int *count);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank);
ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream);
ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclGroupStart();
ncclResult_t ncclGroupEnd();

#endif // BRAID_CUDASIM_NCCL_H
