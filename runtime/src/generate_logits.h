//===- generate_logits.h - generation's logits at any storage type -*- C++ -*-===//
//
// The generation driver (driver_generate.cpp) samples from and verifies
// logits on the host in f32, whatever type the programs store them in (the
// model's dtype: f32, bf16 or f16, --braid-convert-element-type), and its
// teacher forcing (--verify-forward) judges them against a bound that
// follows from that type's rounding.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_GENERATE_LOGITS_H
#define BRAID_RUNTIME_GENERATE_LOGITS_H

#include "braid/runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace braid::rt {

/// Whether generation reads logits stored as `dtype` (a float type).
bool isLogitsType(braid_dtype dtype);

/// `count` logits stored as `dtype` at `data` (host memory) as f32 values,
/// each converted exactly (bf16 and f16 are subsets of f32).
std::vector<float> logitsAsF32(const void *data, int64_t count, braid_dtype dtype);

/// The layers that keep state between calls: the distinct `cache.<layer>`
/// of the program's `cache.<layer>.<part>` states (a Llama layer's k and v).
int64_t cacheLayers(const braid_program &program);

/// The bound of teacher forcing: max |a - b| / max |b| between the logits a
/// decode step (or prefill) chose a token with and the forward program's at
/// that row, both stored as `dtype` by a model of `layers` layers.
struct TeacherForcingBound {
  double bound = 0;
  std::string derivation; ///< how it follows from `dtype`; empty at f32
};

/// At f32, `tolerance` (the programs compute the same sums in another
/// order: 1e-5). At bf16 and f16 the two programs round different
/// intermediate values (generate_logits.cpp derives the bound from the unit
/// roundoff u of `dtype` and the rounding stages on a logit's path).
TeacherForcingBound teacherForcingBound(braid_dtype dtype, int64_t layers, double tolerance);

} // namespace braid::rt

#endif // BRAID_RUNTIME_GENERATE_LOGITS_H
