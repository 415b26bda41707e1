//===- scratch.h - the CPU kernels' scratch arena ---------------*- C++ -*-===//
//
// Internal to runtime/src/cpu. Kernels keep their scratch in bounded stack
// arrays where they can; scratch that grows with the problem (the blocked
// attention of attention_gemm.cpp: keys, values and score blocks of one
// (batch, kv head), which grow with the sequence; cross_entropy's per-row
// terms, which grow with the rows) comes from this arena instead. The arena
// is one block owned by the runtime library, grown to the largest request
// seen (the first training step's, in practice) and then reused: after
// warm-up a kernel call allocates nothing. It is outside the compiler's
// static memory plan, which covers tensors only; its size is the high-water
// mark of the requests, bounded per kernel in the kernel's header comment.
// A second arena of the same kind stages bf16 / f16 operands as f32 for the
// kernels that run on f32 only (staged_f32.h): the copies, no more.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CPU_SCRATCH_H
#define BRAID_RUNTIME_CPU_SCRATCH_H

#include <cstdint>
#include <mutex>

namespace braid::cpu {

/// Which arena: the kernels' own, or the staging arena in which bf16 and
/// f16 operands are converted to f32 around a kernel that then takes the
/// kernels' arena (staged_f32.h), so that the two are held at once.
enum class ScratchArena { Kernel, Staging };

/// An arena for the duration of one kernel call: a shared region of
/// `sharedBytes` and `slots` regions of `slotBytes` (one per worker thread),
/// each 64-byte aligned. Holding it serializes callers (a rank runs its
/// kernels one at a time, so this never waits there).
class Scratch {
public:
  Scratch(int64_t sharedBytes, int64_t slots, int64_t slotBytes,
          ScratchArena which = ScratchArena::Kernel);
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;

  char *shared() const { return base; }
  char *slot(int64_t i) const { return base + sharedStride + i * slotStride; }

  /// Bytes the arena holds now (its high-water mark).
  static int64_t capacity(ScratchArena which = ScratchArena::Kernel);

private:
  std::unique_lock<std::mutex> hold;
  char *base = nullptr;
  int64_t sharedStride = 0, slotStride = 0;
};

} // namespace braid::cpu

#endif // BRAID_RUNTIME_CPU_SCRATCH_H
