//===- rope.h - rotary position embedding for the CPU attention kernels --===//
//
// Rotate-half RoPE as the attention kernels apply it: for position p and
// i < D/2, angle p f_i with f_i = theta^(-2i/D) formed in double (positions
// can be large: p f_0 = p radians), its cos / sin rounded to float, and
// x'[i] = x[i] c - x[i + D/2] s, x'[i + D/2] = x[i + D/2] c + x[i] s. The
// transposed rotation takes a gradient back. theta <= 0: no rotation (a
// copy). Shared by attention.cpp, grad_attention.cpp, attention_block.cpp
// and attention_gemm.cpp, which must rotate identically for their results to
// agree.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CPU_ROPE_H
#define BRAID_RUNTIME_CPU_ROPE_H

#include "common.h"

#include <cmath>
#include <vector>

namespace braid::cpu {

struct Rope {
  bool on = false;
  int64_t d = 0;
  double freq[kMaxHeadDim / 2];

  Rope(double theta, int64_t dim) : on(theta > 0.0), d(dim) {
    if (on)
      for (int64_t i = 0; i < dim / 2; ++i)
        freq[i] = std::pow(theta, -2.0 * double(i) / double(dim));
  }
  /// cos / sin of the angles of position p (on only).
  void angles(int64_t p, float *c, float *s) const {
    for (int64_t i = 0; i < d / 2; ++i) {
      const double a = double(p) * freq[i];
      c[i] = float(std::cos(a));
      s[i] = float(std::sin(a));
    }
  }
};

/// dst[0..D) = x rotated by the angles (c, s), or a copy without RoPE.
template <typename T>
inline void rotate(const T *x, float *dst, const float *c, const float *s, const Rope &r) {
  if (!r.on) {
    for (int64_t i = 0; i < r.d; ++i)
      dst[i] = braid::load(x, i);
    return;
  }
  const int64_t half = r.d / 2;
  for (int64_t i = 0; i < half; ++i) {
    const float lo = braid::load(x, i), hi = braid::load(x, i + half);
    dst[i] = lo * c[i] - hi * s[i];
    dst[i + half] = hi * c[i] + lo * s[i];
  }
}

/// dst[0..D) = x rotated to position p (angles formed here).
template <typename T>
inline void loadRotated(const T *x, float *dst, int64_t p, const Rope &r) {
  float c[kMaxHeadDim / 2], s[kMaxHeadDim / 2];
  if (r.on)
    r.angles(p, c, s);
  rotate(x, dst, c, s, r);
}

/// dst[0..D) += scale * g rotated back by the angles (c, s) (the transposed
/// rotation), or scale * g without RoPE.
inline void addUnrotated(const float *g, float *dst, float scale, const float *c, const float *s,
                         const Rope &r) {
  if (!r.on) {
    for (int64_t i = 0; i < r.d; ++i)
      dst[i] += scale * g[i];
    return;
  }
  const int64_t half = r.d / 2;
  for (int64_t i = 0; i < half; ++i) {
    const float lo = g[i], hi = g[i + half];
    dst[i] += scale * (lo * c[i] + hi * s[i]);
    dst[i + half] += scale * (hi * c[i] - lo * s[i]);
  }
}

/// dst[0..D) = scale * g rotated back by the angles (c, s) (stored as T).
template <typename T>
inline void storeUnrotated(const float *g, T *dst, float scale, const float *c, const float *s,
                           const Rope &r) {
  if (!r.on) {
    for (int64_t i = 0; i < r.d; ++i)
      braid::store(dst, i, scale * g[i]);
    return;
  }
  const int64_t half = r.d / 2;
  for (int64_t i = 0; i < half; ++i) {
    const float lo = g[i], hi = g[i + half];
    braid::store(dst, i, scale * (lo * c[i] + hi * s[i]));
    braid::store(dst, i + half, scale * (hi * c[i] - lo * s[i]));
  }
}

/// dst[0..D) = scale * g rotated back from position p (stored as T).
template <typename T>
inline void storeUnrotated(const float *g, T *dst, float scale, int64_t p, const Rope &r) {
  float c[kMaxHeadDim / 2], s[kMaxHeadDim / 2];
  if (r.on)
    r.angles(p, c, s);
  storeUnrotated(g, dst, scale, c, s, r);
}

/// The cos / sin of every row's angles, computed once per call: a key row
/// is visited once per query block and head, and double-precision cos/sin
/// per visit would cost more than the visit's arithmetic at small head dims
/// (and more for large positions, making equal-work ranks unequal in time).
struct AngleTable {
  std::vector<float> c, s;
  int64_t half = 0;
  float dummy[1] = {0.0f};

  AngleTable(const Rope &rope, const int64_t *pos, int64_t rows) {
    if (!rope.on)
      return;
    half = rope.d / 2;
    c.resize(size_t(rows * half));
    s.resize(size_t(rows * half));
    for (int64_t r = 0; r < rows; ++r)
      rope.angles(pos[r], c.data() + r * half, s.data() + r * half);
  }
  const float *cosOf(int64_t row) const { return half ? c.data() + row * half : dummy; }
  const float *sinOf(int64_t row) const { return half ? s.data() + row * half : dummy; }
};

} // namespace braid::cpu

#endif // BRAID_RUNTIME_CPU_ROPE_H
