//===- comm_mpi.h - CPU ranks over MPI --------------------------*- C++ -*-===//
//
// The MPI communicator provider (comm_mpi.cpp, library braid_runtime_mpi) and
// the process-level MPI calls of the driver (main.cpp built with
// BRAID_RUNTIME_MPI). This header does not include mpi.h.
//
// Communicators: one per grid-axis group, made with MPI_Comm_split of a
// duplicate of MPI_COMM_WORLD (color = the coordinates of the axes not in the
// group, key = the row-major index of the group's axes in grid order), cached
// per set of axes ("dp,tp" and "tp,dp" share one), MPI_ERRORS_RETURN set on
// each. Creating a communicator is collective over the world: every rank must
// call braid_rt_comm with the same new axis lists in the same order (SPMD).
//
// Collectives are nonblocking (MPI_Iallreduce, MPI_Iallgather,
// MPI_Ireduce_scatter_block, MPI_Ialltoall, MPI_Ibcast, MPI_Irecv). A
// progress thread per rank tests them while the program computes (Open MPI
// advances nonblocking collectives only inside MPI calls), so that a transfer
// started early has finished by its wait: overlap is real on CPU ranks. It
// holds one lock around every MPI call of the runtime (MPI is initialized
// with MPI_THREAD_SERIALIZED) and sleeps between polls (20 us while the
// program waits, 100 us while it computes), so that ranks sharing cores keep
// their cycles. BRAID_PROGRESS_THREAD=0, or an MPI without
// MPI_THREAD_SERIALIZED, leaves progress to kernel boundaries and waits.
//
// Replicas (serving's data parallelism, driver_serve.cpp): with
// splitReplicas(R) the launch's ranks form R groups of consecutive ranks, each
// running the program on its own grid independently. Every "world" here
// (worldSize, worldRank, the provider's communicators, broadcastFromRoot) is
// then the rank's group; launchSize/launchRank and the gathers below span the
// whole launch.
//
// The link emulator: BRAID_LINK="tp:2us,20GB/s;dp:10us,2GB/s" gives each grid
// axis a link (braid/link_model.h), so that communication costs, relative to
// the CPU's compute, what it would on a cluster. Each group has its own link,
// taken by one transfer at a time in issue order: a transfer starts when the
// link is free and its wait returns no earlier than its end (start + the
// model's time) nor before MPI completes it. A send occupies the sender's
// link; its message goes at once, after a stamp of when the link will have
// carried it, and the receive's wait returns no earlier than that (so the
// arrival does not depend on when the sender's threads next get a core); a
// receive costs its own rank nothing. The real transfer
// runs as well, so the emulated times hold when the links are slower than the
// machine's own memory copies. bf16/f16 reductions convert to
// f32 buffers before the call and back (round to nearest even) after the wait;
// moves without reduction send the 16-bit payload as is. Buffers must stay
// untouched until the event is waited for. Host memory only (cpu backend).
//
// Sends do not wait for their receive: braid_send copies the data into a
// buffer the provider owns, posts MPI_Isend on it and returns a completed
// event. The provider keeps each send in flight with its buffer, releases the
// finished ones (MPI_Testall) at later communication calls and kernel
// boundaries, and waits for the rest before the communicators are freed
// (CommProvider::drain, from destroyRuntime). Pipeline neighbours send to each
// other in both directions at once (1F1B sends an activation forward while
// the next stage sends a gradient back): a send that waited for its receive
// would deadlock them. Messages from one rank to another on one communicator
// (one tag) arrive in the order they were sent (MPI's non-overtaking rule);
// the pipeline relies on that to match its sends and receives.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_COMM_MPI_H
#define BRAID_RUNTIME_COMM_MPI_H

#include "comm.h"

#include <memory>
#include <vector>

namespace braid::rt::mpi {

/// True when the process was started by an MPI launcher (mpirun/mpiexec/srun:
/// OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK, ... in the environment), or when
/// BRAID_MPI=1; BRAID_MPI=0 forces false.
bool launched();

/// MPI_Init_thread (MPI_THREAD_SERIALIZED), MPI_ERRORS_RETURN on
/// MPI_COMM_WORLD; with several ranks, fatal() messages name the rank.
void initialize(int *argc, char ***argv);
bool initialized();
int32_t worldSize();
int32_t worldRank();
/// Splits the launch into groups of consecutive ranks, `sizes[g]` ranks in
/// group g, or (`sizes` empty) `replicas` groups of equal size (collective
/// over the launch; the sizes must add up to it); the "world" of everything
/// after is the rank's group. The rank's group, or 0.
int32_t splitGroups(int32_t replicas, const std::vector<int32_t> &sizes);
int32_t launchSize();
int32_t launchRank();
/// Every launch rank's `values` concatenated in launch rank order, on launch
/// rank 0 (empty elsewhere). Collective over the launch.
std::vector<double> gatherOnLaunchRoot(const std::vector<double> &values);
/// MPI_Barrier over the launch.
void launchBarrier();
/// Every launch rank's `values` (the same count on each), concatenated in
/// launch rank order, on every rank.
std::vector<int64_t> allGatherOnLaunch(const std::vector<int64_t> &values);
/// Each entry of `values` replaced by its maximum over the launch.
void maxOnLaunch(std::vector<int32_t> &values);
/// MPI_Bcast of `bytes` at `data` from launch rank `root` over the launch.
void broadcastOnLaunch(void *data, int64_t bytes, int32_t root);
/// Blocking point-to-point messages between launch ranks (tag `tag`).
void sendOnLaunch(const void *data, int64_t bytes, int32_t to, int32_t tag);
void receiveOnLaunch(void *data, int64_t bytes, int32_t from, int32_t tag);
/// MPI_Bcast of `bytes` at `data` from world rank 0 over MPI_COMM_WORLD (the
/// NCCL provider's bootstrap of its unique id).
void broadcastFromRoot(void *data, int64_t bytes);
/// MPI_Finalize (after every communicator was released).
void finalize();

/// The provider of the communicators of `grid`, whose size must equal the
/// world size (aborts otherwise).
std::unique_ptr<CommProvider> makeCommProvider(const Grid &grid);

} // namespace braid::rt::mpi

#endif // BRAID_RUNTIME_COMM_MPI_H
