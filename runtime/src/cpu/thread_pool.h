//===- thread_pool.h - the rank's kernel threads, started once --*- C++ -*-===//
//
// Internal to runtime/src/cpu. parallel.h's splits run on these threads: a
// decode step calls a hundred kernels of well under a millisecond each, and
// starting threads per call (tens of microseconds each time) was a tenth of
// its time. Idle workers sleep on a condition variable: they do not spin on
// cores that another rank or the caller's next kernel needs.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CPU_THREAD_POOL_H
#define BRAID_RUNTIME_CPU_THREAD_POOL_H

#include <cstdint>
#include <functional>

namespace braid::cpu {

/// Calls task(i) for every i in [0, count): task(0) on the calling thread,
/// the others on the pool's workers (started at the first call, up to
/// threadsPerRank() - 1 of them); returns when all have returned. A call
/// made while the pool is busy (from inside a task, or from a second thread
/// at the same time) starts threads of its own instead, as a call for more
/// tasks than the pool has workers does for the rest.
void runTasks(int64_t count, const std::function<void(int64_t)> &task);

} // namespace braid::cpu

#endif // BRAID_RUNTIME_CPU_THREAD_POOL_H
