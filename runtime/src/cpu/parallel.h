//===- parallel.h - splitting a CPU kernel over the rank's threads -*- C++ -*-===//
//
// Internal to runtime/src/cpu. A kernel whose outputs fall into independent
// items (the (batch, head) pairs of attention) runs contiguous ranges of items
// on threadsPerRank() threads, the caller's among them. Each output is still
// computed by one thread in one order, so results do not depend on the thread
// count: an N-rank run and its 1-rank reference stay comparable at any
// --threads. The ranges run on the rank's pool of threads (thread_pool.h),
// started once.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CPU_PARALLEL_H
#define BRAID_RUNTIME_CPU_PARALLEL_H

#include "blas.h"
#include "thread_pool.h"

#include <algorithm>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

namespace braid::cpu {

/// Threads parallelFor uses for `items` items: min(threadsPerRank(), items).
inline int64_t parallelThreads(int64_t items) {
  return std::max<int64_t>(1, std::min<int64_t>(threadsPerRank(), items));
}

/// Calls work(slot, begin, end) on disjoint ranges covering [0, items), one
/// range per thread, slot = the range's index < parallelThreads(items) (for
/// per-thread scratch); returns when all have returned.
template <typename Work> void parallelForSlots(int64_t items, Work &&work) {
  const int64_t threads = parallelThreads(items);
  if (threads <= 1) {
    if (items > 0)
      work(int64_t(0), int64_t(0), items);
    return;
  }
  auto range = [&](int64_t i) { return items * i / threads; };
  runTasks(threads, [&](int64_t i) { work(i, range(i), range(i + 1)); });
}

/// Calls work(begin, end) on disjoint ranges covering [0, items), at most
/// one range per thread of the rank; returns when all have returned.
template <typename Work> void parallelFor(int64_t items, Work &&work) {
  parallelForSlots(items, [&](int64_t, int64_t begin, int64_t end) { work(begin, end); });
}

/// Below this many elements a row-wise kernel (norms, softmax) runs on the
/// calling thread.
constexpr int64_t kMinThreadedElems = int64_t(1) << 16;

/// parallelFor when the work is worth threads: `work` units in all (elements,
/// multiply-adds) against `minWork`; below it, one range on the calling
/// thread (starting a thread costs tens of microseconds). Results do not
/// depend on which, as with parallelFor.
template <typename Work>
void parallelForAbove(int64_t items, int64_t work, int64_t minWork, Work &&fn) {
  if (work < minWork) {
    if (items > 0)
      fn(int64_t(0), items);
    return;
  }
  parallelFor(items, std::forward<Work>(fn));
}

/// Calls item(i) for every i in [0, items), over the rank's threads when the
/// work is worth them (parallelForAbove).
template <typename Item>
void parallelForEachAbove(int64_t items, int64_t work, int64_t minWork, Item &&item) {
  parallelForAbove(items, work, minWork, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      item(i);
  });
}

} // namespace braid::cpu

#endif // BRAID_RUNTIME_CPU_PARALLEL_H
