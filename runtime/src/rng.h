//===- rng.h - deterministic, shardable initialization ----------*- C++ -*-===//
//
// The C++ side of test/lib/braid_ref/rng.py, whose module docstring is the
// specification: element i of tensor NAME under SEED is a function of
// (seed, name, i) only.
//   key   = FNV-1a 64 of "SEED:NAME" split into (low, high) 32-bit words
//   bits  = Philox4x32-10(counter = (i mod 2^32, i >> 32, 0, 0), key)
//   normal: std * sqrt(-2 ln((x0 + 1) 2^-32)) cos(2 pi x1 2^-32) in double,
//           rounded to the element type (bf16: RNE of the f32 value)
//   integer in [0, n): (x2 * n) >> 32
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_RNG_H
#define BRAID_RUNTIME_RNG_H

#include "braid/runtime.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace braid::rt::rng {

uint64_t fnv1a64(const void *data, size_t size);

struct Key {
  uint32_t k0 = 0, k1 = 0;
};

/// The Philox key of stream `name` under `seed`.
Key keyOf(uint64_t seed, const char *name);

/// Philox4x32-10 of a raw counter and key (Random123's).
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, Key key);

/// (x0, x1, x2, x3) of global element index i.
inline std::array<uint32_t, 4> bitsAt(Key key, uint64_t i) {
  return philox4x32_10({uint32_t(i), uint32_t(i >> 32), 0u, 0u}, key);
}

/// A standard normal draw (double) of element i.
double normalAt(Key key, uint64_t i);

/// An integer uniform in [0, n) of element i; 1 <= n < 2^32.
uint64_t uniformIntAt(Key key, uint64_t i, uint64_t n);
/// Mamba's dt bias at global index i (x3 of the bits; see rng.py).
double mambaDtBiasAt(Key key, uint64_t i);

/// Element-type conversions (round to nearest even; NaN stays NaN).
uint16_t f32ToBf16(float value);
float bf16ToF32(uint16_t bits);
uint16_t f64ToF16(double value);
float f16ToF32(uint16_t bits);

/// Writes elements [start, start + count) (row-major global indices) of the
/// tensor `name` initialized with `init` into `dst` (host memory, `count`
/// elements of `dtype`). Uses several threads for large counts. Returns false
/// with a message in `error` for an unsupported init/dtype pair or bad bound.
bool fill(void *dst, braid_dtype dtype, braid_init init, double stddev, int64_t bound,
          uint64_t seed, const char *name, uint64_t start, uint64_t count, std::string *error);

} // namespace braid::rt::rng

#endif // BRAID_RUNTIME_RNG_H
