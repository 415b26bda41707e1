//===- Sharding.h - shardings of values over a named device grid -*- C++ -*-===//
//
// The vocabulary Braid's SPMD passes share beyond the grid and a value's
// sharding (IR/Grid.h) and the ops' factor rules (IR/ShardingRule.h): the
// local types of sharded values, and the collectives that move a value from
// one sharding to another.
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

#include "dialects/braid/IR/Grid.h"
#include "dialects/braid/IR/ShardingRule.h"

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
// Factor rules (each op's own: ShardingRule.h)
//===----------------------------------------------------------------------===//

/// The rule of an op: its ShardingRuleOpInterface's, else the one derived
/// from an upstream `shard::ShardingInterface` (a user's or an upstream op);
/// failure for ops without one, reported at the op when `report`.
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
