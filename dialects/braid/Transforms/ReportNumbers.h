//===- ReportNumbers.h - numbers as the report passes print them -*- C++ -*-===//
//
// Private to dialects/braid/Transforms: --braid-model-stats and
// --braid-print-schedule print `name: value` lines that scripts read, with
// numbers in one format.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_TRANSFORMS_REPORTNUMBERS_H
#define BRAID_DIALECT_BRAID_TRANSFORMS_REPORTNUMBERS_H

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdint>

namespace mlir::braid {

/// Prints integers exactly and other values with 6 decimals.
inline void printReportNumber(llvm::raw_ostream &os, double value) {
  if (value == std::floor(value) && std::fabs(value) < 9.0e15)
    os << static_cast<int64_t>(value);
  else
    os << llvm::format("%.6f", value);
}

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_TRANSFORMS_REPORTNUMBERS_H
