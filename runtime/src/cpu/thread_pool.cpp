//===- thread_pool.cpp - the rank's kernel threads, started once ----------===//
//
// What thread_pool.h specifies. One call runs at a time (callLock): it
// publishes the task and its count under `lock`, bumps the generation and
// wakes the workers; worker w runs task(w + 1) if w + 1 < count, then counts
// itself done. Workers left over sleep through the call. The pool is never
// destroyed: its workers sleep until the
// process exits, so no kernel can meet a pool being torn down.
//
//===----------------------------------------------------------------------===//

#include "thread_pool.h"

#include "blas.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

using namespace braid::cpu;

namespace {

class Pool {
public:
  explicit Pool(int64_t workers) {
    for (int64_t w = 0; w < workers; ++w)
      std::thread([this, w] { work(w); }).detach();
    size = workers;
  }

  int64_t workers() const { return size; }

  /// Runs task(1..n-1) on workers 0..n-2 (n - 1 <= workers()) and task(0)
  /// here; returns when all are done.
  void run(int64_t n, const std::function<void(int64_t)> &task) {
    {
      std::lock_guard<std::mutex> guard(lock);
      current = &task;
      count = n;
      pending = n - 1;
      ++generation;
    }
    wake.notify_all();
    task(0);
    std::unique_lock<std::mutex> guard(lock);
    done.wait(guard, [&] { return pending == 0; });
    current = nullptr;
  }

  std::mutex callLock;

private:
  void work(int64_t w) {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> guard(lock);
    for (;;) {
      wake.wait(guard, [&] { return generation != seen; });
      seen = generation;
      if (w + 1 >= count)
        continue;
      const std::function<void(int64_t)> *task = current;
      guard.unlock();
      (*task)(w + 1);
      guard.lock();
      if (--pending == 0)
        done.notify_one();
    }
  }

  std::mutex lock;
  std::condition_variable wake, done;
  const std::function<void(int64_t)> *current = nullptr;
  int64_t count = 0, pending = 0, size = 0;
  uint64_t generation = 0;
};

Pool &pool() {
  static Pool *instance = new Pool(std::max(0, threadsPerRank() - 1));
  return *instance;
}

/// task(i) for every i in [0, count): task(0) here, the others on threads
/// started for this call.
void runOnNewThreads(int64_t count, const std::function<void(int64_t)> &task) {
  std::vector<std::thread> threads;
  threads.reserve(size_t(count - 1));
  for (int64_t i = 1; i < count; ++i)
    threads.emplace_back([&task, i] { task(i); });
  task(0);
  for (std::thread &t : threads)
    t.join();
}

} // namespace

void braid::cpu::runTasks(int64_t count, const std::function<void(int64_t)> &task) {
  if (count <= 1) {
    if (count == 1)
      task(0);
    return;
  }
  Pool &p = pool();
  std::unique_lock<std::mutex> call(p.callLock, std::try_to_lock);
  // Busy (a nested or concurrent call), or more tasks than workers.
  if (!call.owns_lock() || count > p.workers() + 1)
    return runOnNewThreads(count, task);
  p.run(count, task);
}
