//===- generate_logits.cpp - generation's logits at any storage type ------===//

#include "generate_logits.h"

#include "braid/numeric.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>

namespace braid::rt {

bool isLogitsType(braid_dtype dtype) {
  return dtype == BRAID_F32 || dtype == BRAID_BF16 || dtype == BRAID_F16;
}

std::vector<float> logitsAsF32(const void *data, int64_t count, braid_dtype dtype) {
  std::vector<float> values(size_t(count > 0 ? count : 0));
  if (dtype == BRAID_F32) {
    std::memcpy(values.data(), data, values.size() * sizeof(float));
    return values;
  }
  const auto *bits = static_cast<const uint16_t *>(data);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = dtype == BRAID_BF16 ? bf16_to_float(bits[i]) : f16_to_float(bits[i]);
  return values;
}

int64_t cacheLayers(const braid_program &program) {
  std::set<std::string> layers;
  for (int32_t i = 0; i < program.num_params; ++i) {
    std::string name = program.params[i].name;
    if (name.rfind("cache.", 0) == 0)
      layers.insert(name.substr(0, name.rfind('.')));
  }
  return int64_t(layers.size());
}

// Decode and forward hold the same parameters, stored in the same type, and
// compute the same function: they differ only where one program rounds a
// value to the storage type that the other keeps in f32 (the cache stores
// keys rotated, where the forward program's attention rotates them inside
// the kernel) and in the order of f32 sums. Rounding to nearest moves a
// value by at most u relative, u = 2^-p for p significand bits (bf16: 2^-8,
// f16: 2^-11). As --verify does for training at reduced precision (braid/
// Driver/Verify.h), the bound is twice each program's distance from exact
// arithmetic plus the f32 tolerance; here that distance is not measured but
// counted: u for the logits' own rounding, and u per layer for the value one
// program rounds and the other does not, carried to the logits with a gain
// of about 1 along the residual stream:
//   bound = 2 u (layers + 1) + tolerance.
// Its floor, 2u, is one unit in the last place of the largest logit: two
// sums that differ in the last bits of f32 can round to neighbouring values,
// which no smaller bound would accept (llama-tiny at bf16 reaches 0.0077,
// just under 2^-7; gpt-tiny, without rotated keys, 0).
TeacherForcingBound teacherForcingBound(braid_dtype dtype, int64_t layers, double tolerance) {
  TeacherForcingBound out;
  out.bound = tolerance;
  if (dtype != BRAID_BF16 && dtype != BRAID_F16)
    return out;
  const int bits = dtype == BRAID_BF16 ? 8 : 11;
  const char *name = dtype == BRAID_BF16 ? "bf16" : "f16";
  out.bound = 2 * std::ldexp(1.0, -bits) * double(layers + 1) + tolerance;
  char text[256];
  std::snprintf(text, sizeof text,
                "at %s: 2u(L + 1) + %.0e with u = 2^-%d, L = %lld layers (twice each "
                "program's rounding: u for its logits, u per layer)",
                name, tolerance, bits, (long long)layers);
  out.derivation = text;
  return out;
}

} // namespace braid::rt
