//===- comm_mpi_join.cpp - CPU ranks started without mpirun ----------------===//
//
// A launcher other than mpirun (Slurm's srun without PMI, a Kubernetes job,
// a shell loop) starts each rank as its own process with BRAID_WORLD_SIZE,
// BRAID_RANK and BRAID_MPI_STORE, a directory every rank sees. Each process
// is then an MPI singleton; they make one world by MPI's dynamic-process
// calls: rank 0 opens a port and writes its name to the store, and the
// group grows by one accept/connect per rank (each round is collective over
// the ranks already joined), merged into one intracommunicator and finally
// ordered by BRAID_RANK. Open MPI matches ports across separately started
// processes only through a rendezvous server, `ompi-server -r
// DIR/ompi-server.uri`, which every rank names in OMPI_MCA_pmix_server_uri
// (set here from the store unless the environment sets it).
//
//===----------------------------------------------------------------------===//

#include "comm_mpi_join.h"

#include "rt_impl.h"
#include "store_env.h"

#include <mpi.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace braid::rt::mpi {

namespace {

using store::env;
using store::parseInt;

std::string portFile(const std::string &dir) { return store::fileName(dir, "mpi-port"); }

std::string mpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, size_t(length));
}

void check(int code, const char *call) {
  if (code != MPI_SUCCESS)
    fatal("joining the ranks of BRAID_MPI_STORE: %s failed: %s", call, mpiError(code).c_str());
}

int64_t joinTimeout() {
  int64_t timeout = 120;
  if (std::string t = env("BRAID_STORE_TIMEOUT");
      !t.empty() && (!parseInt(t, &timeout) || timeout <= 0))
    fatal("BRAID_STORE_TIMEOUT must be a positive number of seconds, not '%s'", t.c_str());
  return timeout;
}

/// Ends the process when the join has not finished in time: MPI's accept and
/// connect have no timeout, and a rank that never starts would leave the
/// others waiting for ever.
class JoinWatchdog {
public:
  JoinWatchdog(const StoreRanks &ranks, int64_t seconds)
      : thread_([this, ranks, seconds] {
          std::unique_lock<std::mutex> lock(mutex_);
          if (!done_.wait_for(lock, std::chrono::seconds(seconds), [this] { return finished_; }))
            fatal("rank %d: the %d ranks of BRAID_MPI_STORE=%s did not all join within %lld s "
                  "(%d had): is every rank started with the same BRAID_WORLD_SIZE, store "
                  "and BRAID_RUN_ID, and is `ompi-server -r %s/ompi-server.uri` running?",
                  int(ranks.rank), int(ranks.size), ranks.store.c_str(), (long long)seconds,
                  joined_.load(), ranks.store.c_str());
        }) {}
  ~JoinWatchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      finished_ = true;
    }
    done_.notify_one();
    thread_.join();
  }
  void joined(int count) { joined_ = count; }

private:
  std::mutex mutex_;
  std::condition_variable done_;
  bool finished_ = false;
  std::atomic<int> joined_{1};
  std::thread thread_;
};

std::string readPort(const StoreRanks &ranks, int64_t seconds) {
  const std::string file = portFile(ranks.store);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  for (;;) {
    std::ifstream in(file);
    std::string port;
    if (in && std::getline(in, port) && !port.empty())
      return port;
    if (std::chrono::steady_clock::now() > deadline)
      fatal("rank %d found no port of rank 0 in %s after %lld s: is rank 0 running with the "
            "same BRAID_MPI_STORE (and BRAID_RUN_ID), on a directory every rank sees?",
            int(ranks.rank), file.c_str(), (long long)seconds);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void writePort(const StoreRanks &ranks, const char *port) {
  const std::string file = portFile(ranks.store);
  const std::string temp = file + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(temp);
    out << port << "\n";
    if (!out.flush())
      fatal("cannot write %s: BRAID_MPI_STORE must be a writable directory", temp.c_str());
  }
  if (std::rename(temp.c_str(), file.c_str()) != 0)
    fatal("renaming %s to %s: %s", temp.c_str(), file.c_str(), std::strerror(errno));
}

/// `group` (the ranks joined so far) accepts the next rank and becomes the
/// merged group, the newcomer last.
void acceptOne(MPI_Comm *group, const char *port) {
  MPI_Comm inter, merged;
  check(MPI_Comm_accept(port, MPI_INFO_NULL, 0, *group, &inter), "MPI_Comm_accept");
  check(MPI_Intercomm_merge(inter, /*high=*/0, &merged), "MPI_Intercomm_merge");
  MPI_Comm_free(&inter);
  if (*group != MPI_COMM_SELF)
    MPI_Comm_free(group);
  *group = merged;
}

int sizeOf(MPI_Comm comm) {
  int size = 0;
  check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  return size;
}

} // namespace

bool storeLaunched() { return !env("BRAID_MPI_STORE").empty(); }

StoreRanks storeRanks() {
  StoreRanks ranks;
  ranks.store = env("BRAID_MPI_STORE");
  int64_t size = 0, rank = 0;
  const std::string sizeText = env("BRAID_WORLD_SIZE"), rankText = env("BRAID_RANK");
  if (!parseInt(sizeText, &size) || size < 1 || size > (1 << 24))
    fatal("BRAID_MPI_STORE needs BRAID_WORLD_SIZE, a positive integer, not '%s'",
          sizeText.c_str());
  if (!parseInt(rankText, &rank) || rank < 0 || rank >= size)
    fatal("BRAID_RANK must be set to an integer in [0, %lld) with BRAID_WORLD_SIZE=%lld, not "
          "'%s'",
          (long long)size, (long long)size, rankText.c_str());
  ranks.size = int32_t(size);
  ranks.rank = int32_t(rank);
  return ranks;
}

void pointAtRendezvous(const StoreRanks &ranks) {
  if (!env("OMPI_MCA_pmix_server_uri").empty() || ranks.size == 1)
    return;
  // Open MPI reads its MCA parameters from the environment at MPI_Init, and
  // fails there, without a word a user could act on, when the server's file
  // is missing: wait for it (the server may start after the ranks).
  const std::string file = ranks.store + "/ompi-server.uri";
  const int64_t seconds = joinTimeout();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  auto written = [&file] {
    std::ifstream in(file);
    std::string line;
    return in && std::getline(in, line) && !line.empty();
  };
  while (!written()) {
    if (std::chrono::steady_clock::now() > deadline)
      fatal("rank %d: no rendezvous server after %lld s: %s does not exist; start `ompi-server "
            "--no-daemonize -r %s` where every rank reaches it",
            int(ranks.rank), (long long)seconds, file.c_str(), file.c_str());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  setenv("OMPI_MCA_pmix_server_uri", ("file:" + file).c_str(), /*overwrite=*/0);
}

MPI_Comm joinStore(const StoreRanks &ranks) {
  if (ranks.size == 1)
    return MPI_COMM_SELF;
  const int64_t seconds = joinTimeout();
  JoinWatchdog watchdog(ranks, seconds);
  MPI_Comm group = MPI_COMM_SELF;
  char port[MPI_MAX_PORT_NAME] = {0};
  if (ranks.rank == 0) {
    check(MPI_Open_port(MPI_INFO_NULL, port), "MPI_Open_port");
    writePort(ranks, port);
  } else {
    std::string name = readPort(ranks, seconds);
    MPI_Comm inter;
    check(MPI_Comm_connect(name.c_str(), MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter),
          "MPI_Comm_connect");
    check(MPI_Intercomm_merge(inter, /*high=*/1, &group), "MPI_Intercomm_merge");
    MPI_Comm_free(&inter);
  }
  // Every joined rank takes part in accepting the next; only rank 0 (the
  // group's first) needs the port's name.
  while (sizeOf(group) < ranks.size) {
    watchdog.joined(sizeOf(group));
    acceptOne(&group, port);
  }
  if (ranks.rank == 0) {
    MPI_Close_port(port);
    std::remove(portFile(ranks.store).c_str());
  }
  // Join order is arrival order; the world is ordered by BRAID_RANK, and two
  // processes that claim one rank are an error rather than a wrong program.
  std::vector<int> claimed(size_t(ranks.size), 0);
  int me = ranks.rank;
  check(MPI_Allgather(&me, 1, MPI_INT, claimed.data(), 1, MPI_INT, group), "MPI_Allgather");
  std::vector<int> seen(size_t(ranks.size), 0);
  for (int r : claimed)
    if (seen[size_t(r)]++)
      fatal("two processes joined BRAID_MPI_STORE=%s as BRAID_RANK=%d", ranks.store.c_str(), r);
  MPI_Comm world;
  check(MPI_Comm_split(group, 0, ranks.rank, &world), "MPI_Comm_split");
  MPI_Comm_free(&group);
  return world;
}

} // namespace braid::rt::mpi
