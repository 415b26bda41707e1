//===- common.h - shared helpers of the CPU reference kernels ---*- C++ -*-===//
//
// Internal to runtime/src/cpu. Kernels are templates over the storage type
// (float, braid::bf16, braid::f16) and compute in f32 (double for reductions
// where it is cheap). Scratch is bounded stack arrays, except where it grows
// with the problem (the blocked f32 attention of attention_gemm.cpp: key,
// value and score blocks sized by the sequence): that comes from the
// runtime's scratch arena (scratch.h), allocated at the first call that needs
// more and reused, so that kernels do not allocate once a program has run a
// step. Tensors stay in the compiler's static memory plan; the arena is
// the one piece of kernel memory outside it (its bound: scratch.h).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CPU_COMMON_H
#define BRAID_RUNTIME_CPU_COMMON_H

// The runtime's public root: the kernel tests build src/cpu with runtime/include alone.
#include "braid/abort_message.h"
#include "braid/numeric.h"
#include "braid/runtime.h"

#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace braid::cpu {

/// Prints "braid: <kernel>: <message>" and aborts. Used for errors of the
/// program (out-of-range tokens, labels, experts; unsupported dtypes), never
/// of the user.
[[noreturn]] inline void fail(const char *kernel, const char *fmt, ...) {
  char prefix[256];
  std::snprintf(prefix, sizeof prefix, "braid: %s: ", kernel);
  va_list args;
  va_start(args, fmt);
  abortWithMessage(prefix, fmt, args);
}

/// Calls fn(T{}) with T the storage type of `dt` (float, bf16, f16).
template <typename Fn> inline void withFloatType(braid_dtype dt, const char *kernel, Fn &&fn) {
  switch (dt) {
  case BRAID_F32: fn(float{}); return;
  case BRAID_BF16: fn(braid::bf16{}); return;
  case BRAID_F16: fn(braid::f16{}); return;
  default: fail(kernel, "unsupported floating-point dtype %d", int(dt));
  }
}

/// Bytes of one element of `dt`.
inline int64_t elementBytes(braid_dtype dt, const char *kernel) {
  switch (dt) {
  case BRAID_F32: case BRAID_I32: return 4;
  case BRAID_BF16: case BRAID_F16: return 2;
  case BRAID_I64: return 8;
  }
  fail(kernel, "unknown dtype %d", int(dt));
}

/// Calls fn(E{}) with E an unsigned integer of the size of `dt`'s elements:
/// kernels that move elements without looking at them.
template <typename Fn> inline void withElementType(braid_dtype dt, const char *kernel, Fn &&fn) {
  switch (elementBytes(dt, kernel)) {
  case 2: fn(uint16_t{}); return;
  case 4: fn(uint32_t{}); return;
  case 8: fn(uint64_t{}); return;
  }
}

/// Element i of an i32 or i64 index tensor.
inline int64_t loadIndex(const void *p, braid_dtype dt, int64_t i, const char *kernel) {
  if (dt == BRAID_I32)
    return static_cast<const int32_t *>(p)[i];
  if (dt == BRAID_I64)
    return static_cast<const int64_t *>(p)[i];
  fail(kernel, "index dtype %d is neither i32 nor i64", int(dt));
}

/// Label r of a cross-entropy, which must lie in [0, valid).
inline int64_t loadLabel(const void *labels, braid_dtype index_dt, int64_t r, int64_t valid,
                         const char *kernel) {
  const int64_t label = loadIndex(labels, index_dt, r, kernel);
  if (label < 0 || label >= valid)
    fail(kernel, "label %lld of row %lld is outside [0, %lld)", (long long)label, (long long)r,
         (long long)valid);
  return label;
}

inline void checkAct(int act, const char *kernel) {
  if (act < BRAID_ACT_SILU || act > BRAID_ACT_NEG)
    fail(kernel, "unknown activation %d", act);
}

template <typename T> inline const T *in(const void *p) { return static_cast<const T *>(p); }
template <typename T> inline T *out(void *p) { return static_cast<T *>(p); }

/// sum_i a[i] b[i] in f32 over 16 interleaved partial sums (lane j takes
/// i = j mod 16), then those in order: a fixed order that vectorizes, where a
/// single running sum is a dependency chain the compiler may not reorder.
inline float dot(const float *a, const float *b, int64_t n) {
  float part[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int64_t j = 0; j < 16; ++j)
      part[j] += a[i + j] * b[i + j];
  for (int64_t j = 0; i < n; ++i, ++j)
    part[j] += a[i] * b[i];
  float s = 0.0f;
  for (int64_t j = 0; j < 16; ++j)
    s += part[j];
  return s;
}

/// sum_{i < n} term(i) in double over 8 interleaved partial sums (lane j
/// takes i = j mod 8), then those in order: a fixed order that vectorizes
/// (the row statistics of the norms).
template <typename Term> inline double laneSum(int64_t n, Term &&term) {
  double part[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int64_t j = 0; j < 8; ++j)
      part[j] += term(i + j);
  for (int64_t j = 0; i < n; ++i, ++j)
    part[j] += term(i);
  double s = 0.0;
  for (int64_t j = 0; j < 8; ++j)
    s += part[j];
  return s;
}

/// A softmax row's statistics, as cross_entropy and its gradient compute
/// them: its maximum and the f64 sum of exp(x - max), in index order.
struct RowStats {
  float max;
  double sum;
};
template <typename T> RowStats rowStats(const T *row, int64_t n) {
  float mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i) {
    const float v = braid::load(row, i);
    mx = v > mx ? v : mx;
  }
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sum += std::exp(double(braid::load(row, i)) - double(mx));
  return {mx, sum};
}

/// Bounds of the fixed scratch arrays (aborting, with the bound, beyond).
constexpr int64_t kMaxHeadDim = 1024;   // attention D and Dv
constexpr int64_t kMaxState = 1024;     // selective_scan N
constexpr int64_t kMaxTopK = 64;        // router / dispatch / combine k
constexpr int64_t kMaxExpertSlots = 16384; // experts * top_k counters

} // namespace braid::cpu

#endif // BRAID_RUNTIME_CPU_COMMON_H
