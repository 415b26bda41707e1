//===- Sharding.h - shardings of values over a named device grid -*- C++ -*-===//
//
// The vocabulary Braid's SPMD passes share beyond the grid and a value's
// sharding (Analysis/Grid.h): the factor rules that say how an op's
// dimensions correspond, and the collectives that move a value from one
// sharding to another.
//
// Conventions. A dimension split over axes (a, b), major to minor, is cut
// into n_a * n_b blocks of ceil(size / (n_a n_b)) elements; the rank with
// coordinates (c_a, c_b) holds block c_a n_b + c_b, and indices past the
// size are zero padding. A value partial over axes P holds, on each rank,
// a term of a sum over the ranks of P.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_TRANSFORMS_SHARDING_H
#define BRAID_DIALECT_BRAID_TRANSFORMS_SHARDING_H

#include "dialects/braid/Analysis/Grid.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::braid {

/// The local type of a value of global type `type` under `sharding`.
RankedTensorType localType(RankedTensorType type, const ValueSharding &sharding,
                           const Grid &grid);

/// `[["tp"], []]`: the split axes by name, for attributes.
ArrayAttr splitAttr(MLIRContext *context, const ValueSharding &sharding,
                    const Grid &grid);

//===----------------------------------------------------------------------===//
// Factor rules
//===----------------------------------------------------------------------===//

/// How an op may split one factor (a loop of its computation).
enum class FactorKind {
  Parallel,  ///< split freely: every tensor holding it is split alike
  Reduction, ///< summed over: splitting it leaves the results partial
  Vocab,     ///< the vocabulary of a cross-entropy: split, reduced inside
  Sequence,  ///< a recurrence's sequence (Mamba's mixer): one dimension
             ///< through the op, whole unless split by context parallelism
             ///< (the op then takes `context_axes`)
  Whole,     ///< must not be split for this op
};

/// A tensor dimension: operand index, or numOperands + result index.
struct TensorDim {
  unsigned tensor;
  unsigned dim;
};

struct Factor {
  FactorKind kind;
  SmallVector<TensorDim> dims;
};

/// The factors of an op. Dimensions of merged reshape dimensions other
/// than the major one belong to no factor (they cannot be split).
struct ShardingRule {
  SmallVector<Factor> factors;
  unsigned numOperands = 0;
  /// The factor of a tensor dimension, or -1.
  int factorOf(unsigned tensor, unsigned dim) const;
};

/// The rule of a braid op (forward ops); failure for ops without one,
/// reported at the op when `report`.
FailureOr<ShardingRule> getShardingRule(Operation *op, bool report = true);

//===----------------------------------------------------------------------===//
// Resharding
//===----------------------------------------------------------------------===//

/// Emits the collectives moving `value` (global type `global`) from sharding
/// `from` to `to`: reduce-scatter or all-reduce of partial sums, all-to-all
/// when an axis moves between dimensions, all-gather, all-slice. Each new op
/// gets location `loc`. Fails with a located error on a padded dimension
/// that would have to move.
FailureOr<Value> reshard(OpBuilder &b, Location loc, Value value,
                         RankedTensorType global, ValueSharding from,
                         const ValueSharding &to, const Grid &grid);

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_TRANSFORMS_SHARDING_H
