//===- store_env.h - ranks started through a store directory ----*- C++ -*-===//
//
// What the two ways of starting ranks without mpirun share: GPU ranks
// exchanging NCCL's id through BRAID_NCCL_STORE (cuda/comm_nccl_bootstrap.cu)
// and CPU ranks joining one MPI world through BRAID_MPI_STORE
// (comm_mpi_join.cpp) read the same variables and name their files alike.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_STORE_ENV_H
#define BRAID_RUNTIME_STORE_ENV_H

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace braid::rt::store {

/// The variable's value, empty when unset.
inline std::string env(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "";
}

/// A whole decimal integer (false for empty text or trailing characters).
inline bool parseInt(const std::string &text, int64_t *value) {
  if (text.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno || *end)
    return false;
  *value = v;
  return true;
}

/// DIR/BASE, suffixed with .BRAID_RUN_ID when set, so that runs sharing a
/// store directory do not read each other's files.
inline std::string fileName(const std::string &dir, const char *base) {
  std::string name = dir + "/" + base;
  if (std::string run = env("BRAID_RUN_ID"); !run.empty())
    name += "." + run;
  return name;
}

} // namespace braid::rt::store

#endif // BRAID_RUNTIME_STORE_ENV_H
