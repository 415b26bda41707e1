//===- nccl_cases.cpp - NCCL usage cudasim must catch, and its fixed forms --===//
//
// nccl-cases CASE, started as two ranks by mpirun, runs one pattern of point
// to point transfers on cudasim's NCCL (over MPI) and exits 0 when every rank
// received what its peer sent; the emulation reports a deadlock (and aborts)
// where NCCL would hang (test/Runtime/cudasim-nccl-checks.py):
//   crossed          each rank sends to the other, then receives from it, as
//                    two lone calls on one communicator: each send blocks the
//                    communicator until the peer receives, which the peer
//                    does only after its own send: a deadlock
//   crossed-grouped  the same send and receive in one ncclGroupStart/End
//   crossed-edges    the send on a communicator of its own direction, with a
//                    stream of its own (what comm_nccl.cu does between ring
//                    neighbours)
//
//===----------------------------------------------------------------------===//

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace {

#define CHECK(expr)                                                                            \
  do {                                                                                         \
    if (auto code = (expr); code != 0) {                                                       \
      std::fprintf(stderr, "%s failed (%d)\n", #expr, static_cast<int>(code));              \
      MPI_Abort(MPI_COMM_WORLD, 2);                                                            \
    }                                                                                          \
  } while (0)

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string which = argc > 1 ? argv[1] : "";
  if (size != 2 || (which != "crossed" && which != "crossed-grouped" && which != "crossed-edges")) {
    std::fprintf(stderr, "usage: mpirun -np 2 nccl-cases crossed|crossed-grouped|crossed-edges\n");
    MPI_Finalize();
    return 2;
  }
  ncclUniqueId id;
  if (rank == 0)
    CHECK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  CHECK(ncclCommInitRank(&comm, size, id, rank));
  const int peer = 1 - rank, count = 256;
  float host[count];
  for (int i = 0; i < count; ++i)
    host[i] = float(rank * 1000 + i);
  float *send = nullptr, *recv = nullptr;
  CHECK(cudaMalloc(&send, sizeof host));
  CHECK(cudaMalloc(&recv, sizeof host));
  CHECK(cudaMemcpy(send, host, sizeof host, cudaMemcpyHostToDevice));
  cudaStream_t stream, sendStream;
  CHECK(cudaStreamCreate(&stream));
  CHECK(cudaStreamCreate(&sendStream));

  if (which == "crossed") {
    CHECK(ncclSend(send, count, ncclFloat32, peer, comm, stream));
    CHECK(ncclRecv(recv, count, ncclFloat32, peer, comm, stream));
  } else if (which == "crossed-grouped") {
    CHECK(ncclGroupStart());
    CHECK(ncclSend(send, count, ncclFloat32, peer, comm, stream));
    CHECK(ncclRecv(recv, count, ncclFloat32, peer, comm, stream));
    CHECK(ncclGroupEnd());
  } else {
    // One communicator per direction: rank r's sends to its peer go on the
    // communicator of "from r" (both ranks make both, in the same order).
    ncclComm_t from[2];
    for (int r = 0; r < 2; ++r)
      CHECK(ncclCommSplit(comm, 0, rank, &from[r], nullptr));
    CHECK(ncclSend(send, count, ncclFloat32, peer, from[rank], sendStream));
    CHECK(ncclRecv(recv, count, ncclFloat32, peer, from[peer], stream));
    CHECK(cudaStreamSynchronize(sendStream));
  }
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaMemcpy(host, recv, sizeof host, cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < count; ++i)
    wrong += host[i] != float(peer * 1000 + i);
  std::printf("%s: rank %d received %s\n", which.c_str(), rank,
              wrong ? "wrong values" : "its peer's values");
  MPI_Finalize();
  return wrong ? 1 : 0;
}
