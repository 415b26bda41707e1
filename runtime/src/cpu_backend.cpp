//===- cpu_backend.cpp - host memory and wall-clock timings ---------------===//

#include "backend.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>

namespace braid::rt {

namespace {

class CpuBackend final : public Backend {
public:
  CpuBackend() = default;
  const char *name() const override { return "cpu"; }

  bool hostAddressable() const override { return true; }

  void *allocate(int64_t bytes) override {
    // A large buffer (the arena) lies on 2 MiB boundaries and asks for
    // transparent huge pages: its first touch (the memset below) then takes
    // one fault per 2 MiB instead of per 4 KiB, and the kernels fewer TLB
    // misses. perf put page faults at a third of loading a 1B model.
    constexpr size_t kHuge = size_t(2) << 20;
    size_t size = size_t(bytes > 0 ? bytes : 1);
    const size_t alignment = size >= 2 * kHuge ? kHuge : 64;
    size = (size + alignment - 1) / alignment * alignment; // aligned_alloc wants a multiple
    void *pointer = std::aligned_alloc(alignment, size);
#ifdef MADV_HUGEPAGE
    if (pointer && alignment == kHuge)
      ::madvise(pointer, size, MADV_HUGEPAGE); // advice only: failure changes nothing
#endif
    if (!pointer) {
      std::fprintf(stderr, "braid runtime: cpu backend: cannot allocate %lld bytes\n",
                   (long long)bytes);
      std::abort();
    }
    std::memset(pointer, 0, size); // deterministic contents of never-written bytes
    return pointer;
  }
  void release(void *pointer) override { std::free(pointer); }

  void copyToDevice(void *dst, const void *src, int64_t bytes) override {
    if (bytes > 0)
      std::memmove(dst, src, size_t(bytes));
  }
  void copyToHost(void *dst, const void *src, int64_t bytes) override {
    if (bytes > 0)
      std::memmove(dst, src, size_t(bytes));
  }
  void copy(void *dst, const void *src, int64_t bytes) override {
    if (bytes > 0)
      std::memcpy(dst, src, size_t(bytes));
  }
  void synchronize() override {}

  void markBegin(int64_t id) override { at(id).beginUs = now(); }
  void markEnd(int64_t id) override { at(id).endUs = now(); }
  std::vector<OpTiming> resolveTimings(int64_t count) override {
    std::vector<OpTiming> out(timings_.begin(),
                              timings_.begin() + std::min<int64_t>(count, timings_.size()));
    out.resize(size_t(count > 0 ? count : 0));
    return out;
  }

private:
  using Clock = std::chrono::steady_clock;
  // Since the clock's epoch, not this process's start (backend.h).
  static double now() {
    return std::chrono::duration<double, std::micro>(Clock::now().time_since_epoch()).count();
  }
  OpTiming &at(int64_t id) {
    if (id < 0) {
      std::fprintf(stderr, "braid runtime: cpu backend: negative kernel id\n");
      std::abort();
    }
    if (size_t(id) >= timings_.size())
      timings_.resize(size_t(id) + 1);
    return timings_[size_t(id)];
  }

  std::vector<OpTiming> timings_;
};

} // namespace

std::unique_ptr<Backend> makeCpuBackend() { return std::make_unique<CpuBackend>(); }

} // namespace braid::rt
