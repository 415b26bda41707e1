//===- scratch.cpp - the CPU kernels' scratch arena -----------------------===//

#include "scratch.h"

#include "common.h"

#include <cstdlib>

namespace braid::cpu {

namespace {
constexpr int64_t kAlign = 64;

int64_t roundUp(int64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

struct Arena {
  std::mutex mutex;
  char *data = nullptr;
  int64_t bytes = 0;
  ~Arena() { std::free(data); }
};

Arena &arena(ScratchArena which) {
  static Arena kernel, staging;
  return which == ScratchArena::Kernel ? kernel : staging;
}
} // namespace

Scratch::Scratch(int64_t sharedBytes, int64_t slots, int64_t slotBytes, ScratchArena which)
    : hold(arena(which).mutex), sharedStride(roundUp(sharedBytes)),
      slotStride(roundUp(slotBytes)) {
  Arena &a = arena(which);
  const int64_t need = sharedStride + (slots > 0 ? slots : 0) * slotStride;
  if (need > a.bytes) {
    std::free(a.data);
    a.data = static_cast<char *>(std::aligned_alloc(size_t(kAlign), size_t(roundUp(need))));
    if (!a.data)
      fail("scratch", "cannot allocate %lld bytes of kernel scratch", (long long)need);
    a.bytes = roundUp(need);
  }
  base = a.data;
}

int64_t Scratch::capacity(ScratchArena which) {
  std::lock_guard<std::mutex> lock(arena(which).mutex);
  return arena(which).bytes;
}

} // namespace braid::cpu
