//===- BraidEnums.h - the dialect's enums, and their keyword lists -*- C++ -*-===//
//
// The enums of BraidBase.td (ODS generates symbolize<E>, stringify<E> and
// getMaxEnumValFor<E>) without the ops: the planner and the tools use the
// same choices as the passes. `enumKeywords<E>()` lists an enum's keywords
// for a message ("none, selective or full"), so that an error never lists
// them by hand.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_BRAIDENUMS_H
#define BRAID_DIALECT_BRAID_IR_BRAIDENUMS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

#include "dialects/braid/IR/BraidEnums.h.inc"

namespace mlir::braid {

/// The keywords of enum `E` (numbered from 0 without gaps), in order:
/// "a, b or c".
template <typename E> std::string enumKeywords() {
  std::string text;
  for (uint32_t i = 0;; ++i) {
    llvm::StringRef word = stringifyEnum(static_cast<E>(i));
    if (word.empty())
      return text;
    if (i) {
      bool last = stringifyEnum(static_cast<E>(i + 1)).empty();
      text += last ? " or " : ", ";
    }
    text += word.str();
  }
}

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_IR_BRAIDENUMS_H
