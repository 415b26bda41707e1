//===- ComputeCost.h - achievable compute rates of a GPU kind ----*- C++ -*-===//
//
// What kernels reach on a GPU, as the planner and the schedulers see it: a
// matrix product runs at a fraction of the peak rate that falls off when a
// dimension is small (tiles left partly empty, too few blocks to fill the
// SMs), attention at its own fraction, and memory-bound kernels (norms,
// elementwise ops, the selective scan) at a fraction of the HBM bandwidth.
// The fractions are data (lib/CostModel/calibration/*.json), each with its
// source: fitted by bench/planner/validate.py --fit to published training
// throughput (a microbenchmark run on the GPU is to replace them).
//
// A product of m x k by k x n runs at
//   peak * gemm_efficiency * q(m) * q(n) * q(k),  q(x) = x / (x + gemm_half_dim)
// or at the memory floor (its operands and result over the bandwidth),
// whichever is slower: the saturating factor q is how a tiled kernel's
// efficiency behaves as one dimension shrinks towards a tile.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_COSTMODEL_COMPUTECOST_H
#define BRAID_LIB_COSTMODEL_COMPUTECOST_H

#include "braid/CostModel/Hardware.h"

#include <string>
#include <vector>

namespace braid::cost {

struct ComputeCalibration {
  std::string hardware;
  /// Fraction of the peak a large bf16 matrix product reaches.
  double gemmEfficiency = 0.8;
  /// The dimension at which a product's efficiency is halved by it.
  double gemmHalfDim = 64;
  /// Fraction of the peak fused (flash) attention reaches, forward and
  /// backward (whose work is 2.5 times the forward's: it recomputes the
  /// scores).
  double flashForwardEfficiency = 0.6;
  double flashBackwardEfficiency = 0.45;
  /// Fraction of the HBM bandwidth memory-bound kernels reach.
  double memoryEfficiency = 0.7;
  /// Fraction of the peak rate of the selective scan's arithmetic (a
  /// recurrence over the sequence, far from the tensor cores).
  double scanEfficiency = 0.02;
  /// Bytes of device memory the runtime holds besides the program's (the
  /// CUDA context, NCCL's buffers, the allocator's fragmentation).
  double reservedBytes = 3.0 * (1ull << 30);
  std::vector<std::string> sources;

  static llvm::Expected<ComputeCalibration> parse(llvm::StringRef json);
  /// The built-in calibration of hardware `name`, or the file `name` when it
  /// ends in ".json".
  static llvm::Expected<ComputeCalibration> named(llvm::StringRef name);

  /// Seconds of `batch` products of m x k by k x n in bf16.
  double gemmSeconds(const Hardware &hw, double m, double n, double k,
                     double batch = 1) const;
  /// Seconds of flash attention over `flops` of score and value products.
  double flashSeconds(const Hardware &hw, double flops, bool backward) const;
  /// Seconds of a memory-bound kernel moving `bytes`.
  double memorySeconds(const Hardware &hw, double bytes) const {
    return bytes / (hw.hbmBytesPerSecond * memoryEfficiency);
  }
  double scanSeconds(const Hardware &hw, double flops, double bytes) const;
};

} // namespace braid::cost

#endif // BRAID_LIB_COSTMODEL_COMPUTECOST_H
