//===- softmax_rows.h - rows of scores to softmax numerators ----*- C++ -*-===//
//
// Internal to runtime/src/cpu. The blocked f32 attention kernels
// (attention_gemm.cpp, cache_attention.cpp) turn a row of scaled scores into
// its softmax numerators e^(x - max) and their sum in the same fixed order
// (8 lanes, lane j taking t = j mod 8), so that attention over a KV cache
// computes what whole-sequence attention computes on the same rows.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CPU_SOFTMAX_ROWS_H
#define BRAID_RUNTIME_CPU_SOFTMAX_ROWS_H

#include "vexp.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace braid::cpu {

/// max of row[0, n) over 8 lanes (lane j takes t = j mod 8).
inline float rowMax(const float *row, int64_t n) {
  float lane[8];
  std::fill(lane, lane + 8, -INFINITY);
  int64_t t = 0;
  for (; t + 8 <= n; t += 8)
    for (int64_t j = 0; j < 8; ++j)
      lane[j] = row[t + j] > lane[j] ? row[t + j] : lane[j];
  for (int64_t j = 0; t < n; ++t, ++j)
    lane[j] = row[t] > lane[j] ? row[t] : lane[j];
  float m = lane[0];
  for (int64_t j = 1; j < 8; ++j)
    m = lane[j] > m ? lane[j] : m;
  return m;
}

/// row[t] <- e^(row[t] - c) over [0, n); returns the sum in double (8 lanes).
inline double expRow(float *row, int64_t n, float c) {
  double lane[8] = {};
  int64_t t = 0;
  for (; t + 8 <= n; t += 8)
    for (int64_t j = 0; j < 8; ++j) {
      const float p = expLanes(row[t + j] - c);
      row[t + j] = p;
      lane[j] += p;
    }
  for (int64_t j = 0; t < n; ++t, ++j) {
    const float p = expLanes(row[t] - c);
    row[t] = p;
    lane[j] += p;
  }
  double sum = 0.0;
  for (int64_t j = 0; j < 8; ++j)
    sum += lane[j];
  return sum;
}

/// The softmax numerators of a scaled row: row[0, n) <- e^(row - m) with m
/// its max; returns (m, sum) in (m, l). A row that sees no key: zeros,
/// (-inf, 0).
inline void softmaxRow(float *row, int64_t n, float &m, double &l) {
  m = rowMax(row, n);
  l = 0.0;
  if (m == -INFINITY) {
    std::fill(row, row + n, 0.0f);
    return;
  }
  l = expRow(row, n, m);
}

} // namespace braid::cpu

#endif // BRAID_RUNTIME_CPU_SOFTMAX_ROWS_H
