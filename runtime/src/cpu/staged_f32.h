//===- staged_f32.h - bf16 / f16 operands as f32 for f32 kernels -*- C++ -*-===//
//
// Internal to runtime/src/cpu. Some kernels have a fast path for f32 only
// (attention as blocked sgemm products, attention_gemm.cpp). For bf16 and
// f16 storage they run that path on f32 copies: the inputs converted (exact:
// every bf16 and f16 value is an f32), the kernel run in f32, each output
// rounded once to the storage type. So a low-precision call computes what
// the f32 kernel computes on the same values, rounded at the store, which
// the reference kernels of those types also do (f32 arithmetic inside,
// one rounding at the store); only the order of the f32 sums differs.
//
// The copies live in the staging arena (scratch.h), grown to the largest
// call and reused, so that the kernel inside can hold the kernels' arena.
// For f32 storage nothing is copied: the views are the tensors.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CPU_STAGED_F32_H
#define BRAID_RUNTIME_CPU_STAGED_F32_H

#include "common.h"
#include "parallel.h"
#include "scratch.h"
#include "to_f32.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>

namespace braid::cpu {

/// The inputs and outputs of one call (at most kMax of each): `in(i)` and
/// `out(i)` are f32 views; `finish()` rounds the outputs into their tensors.
class StagedF32 {
public:
  static constexpr size_t kMax = 4;
  struct Input {
    const void *data;
    int64_t elems;
  };
  struct Output {
    void *data;
    int64_t elems;
  };

  StagedF32(braid_dtype dt, const char *kernel, std::initializer_list<Input> inputs,
            std::initializer_list<Output> outputs)
      : dt(dt), kernel(kernel), numOutputs(outputs.size()) {
    if (inputs.size() > kMax || outputs.size() > kMax)
      fail(kernel, "more than %zu staged operands", kMax);
    std::copy(outputs.begin(), outputs.end(), outputTensors.begin());
    if (dt == BRAID_F32) {
      size_t i = 0;
      for (const Input &input : inputs)
        ins[i++] = static_cast<const float *>(input.data);
      for (i = 0; i < numOutputs; ++i)
        outs[i] = static_cast<float *>(outputTensors[i].data);
      return;
    }
    int64_t floats = 0;
    for (const Input &input : inputs)
      floats += roundUp(input.elems);
    for (const Output &output : outputs)
      floats += roundUp(output.elems);
    scratch.emplace(floats * int64_t(sizeof(float)), 0, 0, ScratchArena::Staging);
    float *next = reinterpret_cast<float *>(scratch->shared());
    size_t i = 0;
    for (const Input &input : inputs) {
      ins[i++] = next;
      convert(input.data, next, input.elems);
      next += roundUp(input.elems);
    }
    for (i = 0; i < numOutputs; ++i) {
      outs[i] = next;
      next += roundUp(outputTensors[i].elems);
    }
  }

  const float *in(size_t i) const { return ins[i]; }
  float *out(size_t i) const { return outs[i]; }

  /// Rounds each output into its tensor (nothing for f32 storage).
  void finish() {
    if (dt == BRAID_F32)
      return;
    for (size_t i = 0; i < numOutputs; ++i) {
      const float *src = outs[i];
      withFloatType(dt, kernel, [&](auto tag) {
        using T = decltype(tag);
        T *dst = static_cast<T *>(outputTensors[i].data);
        const int64_t n = outputTensors[i].elems;
        parallelForAbove(n, n, kMinThreadedElems, [&](int64_t begin, int64_t end) {
          for (int64_t e = begin; e < end; ++e)
            braid::store(dst, e, src[e]);
        });
      });
    }
  }

private:
  /// 16 floats (64 bytes): each view starts aligned.
  static int64_t roundUp(int64_t elems) { return (elems + 15) / 16 * 16; }

  void convert(const void *data, float *dst, int64_t n) {
    withFloatType(dt, kernel, [&](auto tag) {
      using T = decltype(tag);
      const T *src = static_cast<const T *>(data);
      parallelForAbove(n, n, kMinThreadedElems, [&](int64_t begin, int64_t end) {
        toF32(src + begin, dst + begin, end - begin);
      });
    });
  }

  braid_dtype dt;
  const char *kernel;
  size_t numOutputs;
  std::array<Output, kMax> outputTensors{};
  std::array<const float *, kMax> ins{};
  std::array<float *, kMax> outs{};
  std::optional<Scratch> scratch;
};

} // namespace braid::cpu

#endif // BRAID_RUNTIME_CPU_STAGED_F32_H
