//===- rng.cpp - deterministic, shardable initialization ------------------===//
//
// Bit-exact with test/lib/braid_ref/rng.py (see rng.h). This file is compiled
// with -ffp-contract=off: a fused multiply-add would change the last bit of
// the double before rounding.
//
//===----------------------------------------------------------------------===//

#include "rng.h"

#include "sampling_rows.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace braid::rt::rng {

uint64_t fnv1a64(const void *data, size_t size) {
  const auto *bytes = static_cast<const unsigned char *>(data);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) {
    h ^= bytes[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

Key keyOf(uint64_t seed, const char *name) {
  std::string s = std::to_string(seed);
  s += ':';
  s += name ? name : "";
  uint64_t h = fnv1a64(s.data(), s.size());
  return {uint32_t(h), uint32_t(h >> 32)};
}

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> c, Key key) {
  sampling::philox4x32_10(c.data(), key.k0, key.k1); // the one copy, host and device
  return c;
}

double normalAt(Key key, uint64_t i) {
  std::array<uint32_t, 4> x = bitsAt(key, i);
  const double twoM32 = 0x1p-32;
  const double twoPi = 2.0 * 3.141592653589793; // == 2.0 * math.pi
  double u1 = (double(x[0]) + 1.0) * twoM32;
  double u2 = double(x[1]) * twoM32;
  double radius = std::sqrt(-2.0 * std::log(u1));
  double angle = twoPi * u2;
  return radius * std::cos(angle);
}

double mambaDtBiasAt(Key key, uint64_t i) {
  // dt = exp(u (ln 0.1 - ln 0.001) + ln 0.001), floored at 1e-4; the bias is
  // softplus^-1(dt) = dt + ln(-expm1(-dt)).
  const double lo = std::log(1e-3), hi = std::log(1e-1);
  double u = double(bitsAt(key, i)[3]) * 0x1p-32;
  double dt = std::max(std::exp(u * (hi - lo) + lo), 1e-4);
  return dt + std::log(-std::expm1(-dt));
}

uint64_t uniformIntAt(Key key, uint64_t i, uint64_t n) {
  return (uint64_t(bitsAt(key, i)[2]) * n) >> 32;
}

uint16_t f32ToBf16(float value) {
  uint32_t u;
  std::memcpy(&u, &value, 4);
  if (std::isnan(value))
    return uint16_t((u >> 16) | 0x40); // quiet NaN, sign kept
  u += 0x7FFFu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

float bf16ToF32(uint16_t bits) {
  uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Correctly rounded double -> binary16 (round to nearest, ties to even), as
// numpy's astype(np.float16) from float64.
uint16_t f64ToF16(double value) {
  uint64_t d;
  std::memcpy(&d, &value, 8);
  uint16_t sign = uint16_t((d >> 48) & 0x8000u);
  uint64_t absBits = d & 0x7FFFFFFFFFFFFFFFull;
  if (absBits >= 0x7FF0000000000000ull) { // inf or nan
    if (absBits == 0x7FF0000000000000ull)
      return sign | 0x7C00u;
    return sign | 0x7E00u;
  }
  int exp = int(absBits >> 52) - 1023;      // unbiased exponent
  uint64_t mant = absBits & ((1ull << 52) - 1);
  if (exp > 15)
    return sign | 0x7C00u; // overflow (also covers values rounding past 65504 below)
  if (exp >= -14) {
    // normal half: 10 mantissa bits; drop 42 bits with RNE
    uint64_t m = mant;
    uint64_t keep = m >> 42, rest = m & ((1ull << 42) - 1), half = 1ull << 41;
    uint32_t h = uint32_t((exp + 15) << 10) | uint32_t(keep);
    if (rest > half || (rest == half && (keep & 1)))
      ++h; // carries into the exponent correctly, up to inf
    return sign | uint16_t(h);
  }
  if (exp < -25)
    return sign; // below half the smallest subnormal: rounds to zero
  // subnormal half: value = m * 2^-24 with m = full mantissa shifted
  uint64_t full = mant | (1ull << 52); // value = full * 2^(exp - 52)
  int shift = 52 - 24 - exp;           // to units of 2^-24: exp - 52 + 24 = -shift
  uint64_t keep = full >> shift, rest = full & ((1ull << shift) - 1), half = 1ull << (shift - 1);
  uint32_t h = uint32_t(keep);
  if (rest > half || (rest == half && (keep & 1)))
    ++h;
  return sign | uint16_t(h);
}

float f16ToF32(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1Fu, mant = bits & 0x3FFu;
  uint32_t u;
  if (exp == 0x1F) {
    u = sign | 0x7F800000u | (mant << 13);
  } else if (exp) {
    u = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (!mant) {
    u = sign;
  } else {
    float f = std::ldexp(float(mant), -24);
    std::memcpy(&u, &f, 4);
    u |= sign;
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

namespace {

struct Job {
  void *dst;
  braid_dtype dtype;
  braid_init init;
  double stddev;
  uint64_t bound;
  Key key;
};

// Elements [begin, end) of the global index space into dst[begin - base ...].
void fillRange(const Job &job, uint64_t base, uint64_t begin, uint64_t end) {
  for (uint64_t i = begin; i < end; ++i) {
    uint64_t at = i - base;
    switch (job.init) {
    case BRAID_INIT_NORMAL:
    case BRAID_INIT_ZEROS:
    case BRAID_INIT_ONES:
    case BRAID_INIT_S4D_REAL:
    case BRAID_INIT_MAMBA_DT: {
      double v = 0.0;
      if (job.init == BRAID_INIT_NORMAL)
        v = job.stddev * normalAt(job.key, i);
      else if (job.init == BRAID_INIT_ONES)
        v = 1.0;
      else if (job.init == BRAID_INIT_S4D_REAL)
        v = std::log(double(1 + i % job.bound));
      else if (job.init == BRAID_INIT_MAMBA_DT)
        v = mambaDtBiasAt(job.key, i);
      switch (job.dtype) {
      case BRAID_F32:
        static_cast<float *>(job.dst)[at] = float(v);
        break;
      case BRAID_BF16:
        static_cast<uint16_t *>(job.dst)[at] = f32ToBf16(float(v));
        break;
      case BRAID_F16:
        static_cast<uint16_t *>(job.dst)[at] = f64ToF16(v);
        break;
      case BRAID_I32:
        static_cast<int32_t *>(job.dst)[at] = int32_t(v);
        break;
      case BRAID_I64:
        static_cast<int64_t *>(job.dst)[at] = int64_t(v);
        break;
      }
      break;
    }
    case BRAID_INIT_TOKENS: {
      uint64_t v = uniformIntAt(job.key, i, job.bound);
      if (job.dtype == BRAID_I32)
        static_cast<int32_t *>(job.dst)[at] = int32_t(v);
      else
        static_cast<int64_t *>(job.dst)[at] = int64_t(v);
      break;
    }
    }
  }
}

} // namespace

bool fill(void *dst, braid_dtype dtype, braid_init init, double stddev, int64_t bound,
          uint64_t seed, const char *name, uint64_t start, uint64_t count, std::string *error) {
  auto fail = [&](std::string message) {
    if (error)
      *error = std::string(name ? name : "?") + ": " + message;
    return false;
  };
  bool isInt = dtype == BRAID_I32 || dtype == BRAID_I64;
  bool isFloat = dtype == BRAID_F32 || dtype == BRAID_BF16 || dtype == BRAID_F16;
  if (!isInt && !isFloat)
    return fail("unknown dtype " + std::to_string(int(dtype)));
  if (init != BRAID_INIT_NORMAL && init != BRAID_INIT_ZEROS && init != BRAID_INIT_ONES &&
      init != BRAID_INIT_TOKENS && init != BRAID_INIT_S4D_REAL && init != BRAID_INIT_MAMBA_DT)
    return fail("unknown init " + std::to_string(int(init)));
  switch (init) {
  case BRAID_INIT_NORMAL:
    if (!isFloat)
      return fail("normal init needs a floating-point dtype");
    if (!std::isfinite(stddev))
      return fail("normal init needs a finite std");
    break;
  case BRAID_INIT_ZEROS:
  case BRAID_INIT_ONES:
    break;
  case BRAID_INIT_S4D_REAL:
  case BRAID_INIT_MAMBA_DT:
    if (!isFloat)
      return fail("Mamba's inits need a floating-point dtype");
    if (init == BRAID_INIT_S4D_REAL && bound < 1)
      return fail("s4d_real init needs its period (the last dimension), got " +
                  std::to_string(bound));
    break;
  case BRAID_INIT_TOKENS:
    if (!isInt)
      return fail("tokens init needs an integer dtype (i32 or i64)");
    if (bound < 1 || uint64_t(bound) >= (1ull << 32))
      return fail("tokens bound " + std::to_string(bound) + " must be in [1, 2^32)");
    if (dtype == BRAID_I32 && bound > (int64_t(1) << 31))
      return fail("tokens bound " + std::to_string(bound) + " does not fit i32");
    break;
  }
  if (count && start + count < start)
    return fail("index range overflows 2^64");
  Job job{dst, dtype, init, stddev, uint64_t(bound), keyOf(seed, name)};
  uint64_t end = start + count;
  // Normal draws cost ~50 ns each: split large tensors over the cores.
  unsigned threads = 1;
  if (init == BRAID_INIT_NORMAL || init == BRAID_INIT_TOKENS || init == BRAID_INIT_MAMBA_DT) {
    unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    threads = unsigned(std::min<uint64_t>(hw, count / (1u << 16)));
    threads = std::max(threads, 1u);
  }
  if (threads == 1) {
    fillRange(job, start, start, end);
    return true;
  }
  std::vector<std::thread> pool;
  uint64_t per = (count + threads - 1) / threads;
  for (unsigned t = 0; t < threads; ++t) {
    uint64_t a = start + std::min<uint64_t>(count, per * t);
    uint64_t b = start + std::min<uint64_t>(count, per * (t + 1));
    if (a < b)
      pool.emplace_back([&job, start, a, b] { fillRange(job, start, a, b); });
  }
  for (std::thread &thread : pool)
    thread.join();
  return true;
}

} // namespace braid::rt::rng
