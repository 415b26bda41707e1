//===- BufferPlacement.h - a frame's buffers placed by live range -*- C++ -*-===//
//
// The memory plan's last step for a frame: buffers, each live over a range
// of op positions, placed at byte offsets so that no two buffers live at the
// same time overlap (first fit by decreasing size), or only the peak of
// their live bytes counted (PlanDetail::PeakLiveBytes: a lower bound of any
// placement, in linear time).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_ANALYSIS_BUFFERPLACEMENT_H
#define BRAID_DIALECT_BRAID_ANALYSIS_BUFFERPLACEMENT_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"

#include <cstdint>

namespace mlir::braid {

/// A buffer to place: `bytes` live over the op positions [firstOp, lastOp].
struct BufferInterval {
  int64_t bytes;
  unsigned firstOp, lastOp;
  unsigned order; ///< program order, for a deterministic tie break
  int64_t offset = -1; ///< where placeFirstFit put it
};

/// First fit by decreasing size: each buffer goes to the lowest offset where
/// it overlaps no already placed buffer live at the same time. Sets every
/// interval's offset and returns the extent of the placement.
int64_t placeFirstFit(MutableArrayRef<BufferInterval> intervals);

/// The most bytes live at once.
int64_t peakLiveBytes(ArrayRef<BufferInterval> intervals);

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_ANALYSIS_BUFFERPLACEMENT_H
