//===- ShardingRule.h - how an op's dimensions may be split -----*- C++ -*-===//
//
// The factor rule of an op, in the manner of Shardy's op sharding rules: the
// op's loops ("factors") and the tensor dimensions each one indexes. Each op
// gives its own through ShardingRuleOpInterface (BraidInterfaces.td). The
// propagation unites the dimensions of a factor; the partitioner splits a
// factor over the axes its dimensions carry, leaves results partial over the
// axes of split reduction factors, and gathers dimensions of `Whole` factors
// the op needs entire (attention's sequence, a norm's features).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_SHARDINGRULE_H
#define BRAID_DIALECT_BRAID_IR_SHARDINGRULE_H

#include "mlir/IR/Operation.h"

namespace mlir::braid {

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

/// Builds a rule with tensors named by value (operands and results), which
/// is how the ops' rules read.
class ShardingRuleBuilder {
public:
  explicit ShardingRuleBuilder(Operation *op);

  /// A factor of `kind` over (value, dim) pairs; null values (absent
  /// optional operands) are skipped. A value the op takes as several
  /// operands (`layer_norm %x, %g, %g`) has the dimension at each position.
  void add(FactorKind kind, ArrayRef<std::pair<Value, int64_t>> dims);
  /// Every operand and result has the same shape: one parallel factor per
  /// dimension.
  void elementwise();
  /// The leading dimensions [0, n) of `a` and `b` correspond one to one.
  void leading(Value a, Value b, int64_t n,
               FactorKind kind = FactorKind::Parallel);
  /// Attention's factors over q [B, S, Hq, D], k [B, Skv, Hkv, D], v
  /// [B, Skv, Hkv, Dv] and o [B, S, Hq, Dv] (a cache's rows are its Skv);
  /// `perSequence` [B] (positions), when given, follows the batch.
  void attention(Value q, Value k, Value v, Value o,
                 Value perSequence = Value());

  static int64_t rankOf(Value v);
  ShardingRule take() { return std::move(rule); }

private:
  SmallVector<unsigned> tensorsOf(Value v) const;
  Operation *op;
  ShardingRule rule;
};

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_IR_SHARDINGRULE_H
