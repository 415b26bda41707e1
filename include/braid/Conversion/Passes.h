//===- Passes.h - Braid's conversion passes ---------------------*- C++ -*-===//
#ifndef BRAID_CONVERSION_PASSES_H
#define BRAID_CONVERSION_PASSES_H

#include "dialects/braid/IR/BraidOps.h"
#include "dialects/dist/IR/DistDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace braid {

#define GEN_PASS_DECL
#include "braid/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "braid/Conversion/Passes.h.inc"

/// A test hook, set only by --braid-test-inject-fault=kind=skip-ring-step
/// (test/lib/Transforms/InjectFault.cpp): on a ring braid.attention, the
/// lowering to dist leaves out the key/value block of this ring step, so
/// that --verify's negative tests can break a ring.
inline constexpr llvm::StringLiteral kTestSkipRingStepAttr =
    "braid_test.skip_ring_step";

/// A test hook, set only by --braid-test-inject-fault=kind=wrong-cp-merge:
/// on a cache_attention whose cache is split by sequence (cache_axes), the
/// lowering to dist merges the ranks' partial results with equal weights
/// instead of their log-sum-exps, so that --verify's negative tests can
/// break the merge.
inline constexpr llvm::StringLiteral kTestWrongCpMergeAttr =
    "braid_test.wrong_cp_merge";

/// A test hook, set only by --braid-test-inject-fault=kind=drop-cp-prefill-carry:
/// on a prefill's scan_step over a prompt split by cp (context_axes), the
/// lowering to dist gives every chunk zeros for the earlier chunks' decays
/// and final states, so that each rank's chunk starts from the carried state
/// as if it were the first (the state not carried across cp ranks).
inline constexpr llvm::StringLiteral kTestDropCpPrefillCarryAttr =
    "braid_test.drop_cp_prefill_carry";

} // namespace braid

#endif // BRAID_CONVERSION_PASSES_H
