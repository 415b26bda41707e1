//===- GenerateVerify.h - a partitioned generation against one rank -*- C++ -*-===//
//
// The second check of braid-run --generate --verify (the first, teacher
// forcing, runs in the generation binary): the programs partitioned for a
// grid generate what they generate on one rank.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DRIVER_GENERATEVERIFY_H
#define BRAID_DRIVER_GENERATEVERIFY_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace braid::driver {

/// What one generation run left: its stdout ("request R: ..." lines) and
/// its --logits-out directory (request<R>.npy).
struct GenerationRun {
  std::string text;
  std::string logitsDir;
};

/// Prints "verify: grid G against 1 rank: ok (...)" or one "verify: FAIL
/// grid G against 1 rank: ..." line per difference to `os`; false on one:
/// a request's ids differ, or its logits at a step differ by more than
/// `tolerance` relative (max |a - b| / max |b|; at bf16 or f16 the bound the
/// partitioned run's teacher forcing printed, derived from the rounding), or
/// it ran on one side only.
bool compareGenerations(const GenerationRun &partitioned, const GenerationRun &reference,
                        llvm::StringRef comparison, double tolerance, llvm::raw_ostream &os);

} // namespace braid::driver

#endif // BRAID_DRIVER_GENERATEVERIFY_H
