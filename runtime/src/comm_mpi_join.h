//===- comm_mpi_join.h - CPU ranks started without mpirun ------*- C++ -*-===//
//
// See comm_mpi_join.cpp: ranks that a launcher other than mpirun starts, each
// an MPI singleton, join one world through a store directory
// (BRAID_MPI_STORE) and Open MPI's rendezvous server.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_COMM_MPI_JOIN_H
#define BRAID_RUNTIME_COMM_MPI_JOIN_H

#include <mpi.h>

#include <cstdint>
#include <string>

namespace braid::rt::mpi {

struct StoreRanks {
  int32_t size = 1, rank = 0;
  std::string store;
};

/// True when BRAID_MPI_STORE names a store: the ranks join by it.
bool storeLaunched();
/// BRAID_WORLD_SIZE and BRAID_RANK, checked (fatal with the variable's name).
StoreRanks storeRanks();
/// Before MPI_Init: OMPI_MCA_pmix_server_uri=file:STORE/ompi-server.uri
/// unless the environment names a rendezvous server already.
void pointAtRendezvous(const StoreRanks &ranks);
/// After MPI_Init: the world of the store's ranks, ordered by BRAID_RANK
/// (collective over them; fatal after BRAID_STORE_TIMEOUT seconds, 120 by
/// default, if some never join).
MPI_Comm joinStore(const StoreRanks &ranks);

} // namespace braid::rt::mpi

#endif // BRAID_RUNTIME_COMM_MPI_JOIN_H
