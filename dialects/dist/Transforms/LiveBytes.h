//===- LiveBytes.h - a block's live bytes as its ops are placed -*- C++ -*-===//
//
// The list scheduler's memory budget (ListSchedule.cpp): the bytes a
// function's frame holds while its ops are placed one by one, counted as the
// memory plan counts them (MemoryPlan.cpp), without placing buffers: a value
// is live from its definition to its last read, a transfer's operands and
// results until its wait; reshapes and an all-reduce of a value read nowhere
// else share their input's bytes; parameters, their ranges and what is set
// into them live in the parameters, returned values in the caller's
// buffers, fused elementwise groups' inner values nowhere; a call holds its
// callee's frame while it runs. It is the memory plan's peak of live bytes
// (PlanDetail::PeakLiveBytes) up to what the plan does in place beyond
// those (fused groups writing over an operand read last), which the
// scheduler's tries still check with the plan itself.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_DIST_TRANSFORMS_LIVEBYTES_H
#define BRAID_DIALECT_DIST_TRANSFORMS_LIVEBYTES_H

#include "mlir/IR/Block.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <functional>

namespace mlir::dist {

class LiveBytes {
public:
  /// `callBytes`: the frame a call (an op with regions: 0) holds while it
  /// runs.
  LiveBytes(mlir::Block &block, std::function<int64_t(mlir::Operation *)> callBytes);

  /// The bytes live while `op` runs, were it placed now.
  int64_t during(mlir::Operation *op) const;
  /// The bytes placing `op` now frees once it has run (what it reads last).
  int64_t freedBy(mlir::Operation *op) const;
  /// Places `op`: what it defines is allocated, what it reads last freed.
  void place(mlir::Operation *op);

  int64_t live() const { return liveBytes; }
  int64_t peak() const { return peakBytes; }

  /// The peak of `block` in its program order.
  static int64_t programOrderPeak(mlir::Block &block,
                                  llvm::function_ref<int64_t(mlir::Operation *)> callBytes);

private:
  std::function<int64_t(mlir::Operation *)> callBytes;
  llvm::DenseMap<mlir::Operation *, unsigned> index;
  /// Per op: the bytes it allocates, and the stored values it may be the
  /// last reader of.
  llvm::SmallVector<int64_t> alloc;
  llvm::SmallVector<llvm::SmallVector<unsigned, 4>> releases;
  /// Per stored value: its bytes and how many of its readers are unplaced.
  llvm::SmallVector<int64_t> bytes;
  llvm::SmallVector<unsigned> pending;
  /// Per fused group's root: the stored values it may write its result over
  /// (read last there, of the result's type).
  llvm::SmallVector<llvm::SmallVector<unsigned, 2>> reusable;
  /// The bytes op `i`'s result takes over from an operand read last there.
  int64_t reused(unsigned i) const;
  int64_t liveBytes = 0, peakBytes = 0;
};

} // namespace mlir::dist

#endif // BRAID_DIALECT_DIST_TRANSFORMS_LIVEBYTES_H
