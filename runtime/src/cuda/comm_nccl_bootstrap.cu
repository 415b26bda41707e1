//===- comm_nccl_bootstrap.cu - how NCCL ranks find each other ------------===//
//
// See comm_nccl.h: the process-level calls of the driver (store-launched
// ranks, the local rank a launcher gives, the device of a rank) and the file
// store of the unique id that NcclProvider (comm_nccl.cu) exchanges without
// MPI. Needs neither nccl.h nor libnccl: the id is bytes here.
//
//===----------------------------------------------------------------------===//

#include "cuda/comm_nccl.h"

#include "rt_impl.h"
#include "store_env.h"

#include <cuda_runtime.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace braid::rt::nccl {

namespace {

using store::env;
using store::parseInt;

std::string storeFile(const std::string &dir) { return store::fileName(dir, "nccl-unique-id"); }

} // namespace

/// Rank 0: writes the id to a temporary file, then renames it into place.
void storeWrite(const std::string &dir, const void *id, size_t bytes) {
  std::string file = storeFile(dir);
  std::string temp = file + ".tmp." + std::to_string(getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    fatal("NCCL store: cannot create %s: %s (BRAID_NCCL_STORE must be a writable directory)",
          temp.c_str(), std::strerror(errno));
  const char *data = static_cast<const char *>(id);
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = ::write(fd, data + done, bytes - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      fatal("NCCL store: writing %s: %s", temp.c_str(), std::strerror(errno));
    done += size_t(n);
  }
  ::fsync(fd);
  ::close(fd);
  if (std::rename(temp.c_str(), file.c_str()) != 0)
    fatal("NCCL store: renaming %s to %s: %s", temp.c_str(), file.c_str(), std::strerror(errno));
}

/// Other ranks: poll for the file until it holds a whole id.
void storeRead(const std::string &dir, int32_t rank, void *id, size_t bytes) {
  std::string file = storeFile(dir);
  int64_t timeout = 60;
  if (std::string t = env("BRAID_NCCL_STORE_TIMEOUT"); !t.empty() &&
                                                        (!parseInt(t, &timeout) || timeout <= 0))
    fatal("BRAID_NCCL_STORE_TIMEOUT must be a positive number of seconds, not '%s'", t.c_str());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout);
  for (;;) {
    int fd = ::open(file.c_str(), O_RDONLY);
    if (fd >= 0) {
      size_t done = 0;
      char *data = static_cast<char *>(id);
      while (done < bytes) {
        ssize_t n = ::read(fd, data + done, bytes - done);
        if (n < 0 && errno == EINTR)
          continue;
        if (n <= 0)
          break;
        done += size_t(n);
      }
      ::close(fd);
      if (done == bytes)
        return;
    }
    if (std::chrono::steady_clock::now() > deadline)
      fatal("NCCL store: rank %d found no unique id in %s after %lld s: is rank 0 running "
            "with the same BRAID_NCCL_STORE (and BRAID_RUN_ID), on a directory every rank sees?",
            int(rank), file.c_str(), (long long)timeout);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void storeRemove(const std::string &dir) { std::remove(storeFile(dir).c_str()); }

bool storeLaunched() { return !env("BRAID_WORLD_SIZE").empty(); }

void storeRanks(int32_t *size, int32_t *rank, int32_t *localRank, std::string *storeDir) {
  int64_t s = 0, r = 0, l = 0;
  std::string sizeText = env("BRAID_WORLD_SIZE"), rankText = env("BRAID_RANK");
  if (!parseInt(sizeText, &s) || s < 1 || s > (1 << 24))
    fatal("BRAID_WORLD_SIZE must be a positive integer, not '%s'", sizeText.c_str());
  if (rankText.empty() && s == 1)
    rankText = "0";
  if (!parseInt(rankText, &r) || r < 0 || r >= s)
    fatal("BRAID_RANK must be set to an integer in [0, %lld) with BRAID_WORLD_SIZE=%lld, not "
          "'%s'",
          (long long)s, (long long)s, rankText.c_str());
  std::string localText = env("BRAID_LOCAL_RANK");
  if (localText.empty())
    l = r;
  else if (!parseInt(localText, &l) || l < 0)
    fatal("BRAID_LOCAL_RANK must be a non-negative integer, not '%s'", localText.c_str());
  *size = int32_t(s);
  *rank = int32_t(r);
  *localRank = int32_t(l);
  *storeDir = env("BRAID_NCCL_STORE");
  if (s > 1 && storeDir->empty())
    fatal("BRAID_WORLD_SIZE=%lld without MPI needs BRAID_NCCL_STORE=DIR (a directory every "
          "rank sees) to exchange the NCCL unique id",
          (long long)s);
}

int32_t launcherLocalRank() {
  for (const char *name : {"BRAID_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                           "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "PMI_LOCAL_RANK",
                           "LOCAL_RANK"}) {
    int64_t v = 0;
    if (parseInt(env(name), &v) && v >= 0)
      return int32_t(v);
  }
  return -1;
}

void selectDevice(int32_t localRank) {
  int count = 0;
  cudaError_t code = cudaGetDeviceCount(&count);
  if (code != cudaSuccess)
    fatal("cudaGetDeviceCount failed: %s", cudaGetErrorString(code));
  if (localRank < 0 || localRank >= count)
    fatal("local rank %d has no GPU: this node has %d (one process per GPU: set "
          "BRAID_LOCAL_RANK, or start at most %d ranks per node)",
          int(localRank), count, count);
  code = cudaSetDevice(localRank);
  if (code != cudaSuccess)
    fatal("cudaSetDevice(%d) failed: %s", int(localRank), cudaGetErrorString(code));
}

} // namespace braid::rt::nccl
