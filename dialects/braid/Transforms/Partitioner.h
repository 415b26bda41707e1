//===- Partitioner.h - the SPMD partitioner's state ------------*- C++ -*-===//
//
// Private to --braid-partition: one class, its two jobs in two files —
// propagation (ShardingPropagation.cpp: dimension classes, seeds from
// annotations, the plan, the sequence and the batch, canonical shardings)
// and partitioning (Partition.cpp: rewriting ops on local shapes with
// collectives, and the pass).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_TRANSFORMS_PARTITIONER_H
#define BRAID_DIALECT_BRAID_TRANSFORMS_PARTITIONER_H

#include "dialects/braid/IR/BraidEnums.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/Transforms/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::braid::partition {

using DimKey = std::pair<Value, unsigned>;

/// Why a class has its axes, for diagnostics.
struct Seed {
  AxisList axes;
  int priority = 0; ///< 2 weights, 1 sequence, 0 batch
  Location loc;
  std::string source;
};

inline RankedTensorType tensorTypeOf(Value v) {
  return dyn_cast<RankedTensorType>(v.getType());
}

/// Tensor `t` of `op` as its factor rule numbers them: an operand, or
/// numOperands + a result.
inline Value tensorAt(Operation *op, const ShardingRule &rule, unsigned t) {
  return t < rule.numOperands ? op->getOperand(t)
                              : op->getResult(t - rule.numOperands);
}

/// A value named for debug output: `@param` for a parameter read,
/// `argument #i of @f`, else its op and location.
std::string describe(Value v);

/// Records on `local` where each of its results lies in its global tensor
/// (`braid.result_layouts`), for the emitted program's dumps.
void recordLayouts(Operation *local, ArrayRef<ValueSharding> shardings,
                   ArrayRef<RankedTensorType> globals, const Grid &grid);

/// The sharding of tensor `t` of an op (rank `rank`; numbered as its rule
/// numbers them) when its factors are split over `axes`.
ValueSharding shardingOf(const ShardingRule &rule, ArrayRef<AxisList> axes,
                         unsigned t, int64_t rank);

/// The location without its name, for ops the partitioner adds (a NameLoc
/// would make dumps show them under the name of the op they serve).
inline Location plain(Location loc) {
  if (auto named = dyn_cast<NameLoc>(loc))
    return named.getChildLoc();
  return loc;
}

class Partitioner {
public:
  Partitioner(ModuleOp module, Grid grid, ShardPlan plan, int zero,
              bool sequenceParallel, CpAttention cpAttention, CpLayout cpLayout)
      : module(module), grid(std::move(grid)), plan(plan),
        zero(zero), sequenceParallel(sequenceParallel),
        cpAttention(cpAttention), cpLayout(cpLayout) {}

  LogicalResult run();

  /// Whether `entry` returns its logits split by vocabulary (an inference
  /// program when logits are not gathered).
  bool returnsSplitLogits(func::FuncOp entry) const;

private:
  // --- Propagation -------------------------------------------------------
  LogicalResult collectFunctions();
  LogicalResult readAnnotations();
  LogicalResult seedAnnotations();
  /// Two programs' annotations of one parameter or state must agree.
  LogicalResult checkAnnotationsAgree();
  void unite();
  unsigned node(Value v, unsigned d);
  LogicalResult seed(Value v, unsigned d, AxisList axes, int priority,
                     Location loc, const std::string &source);
  LogicalResult seedPlan();
  LogicalResult seedBatchAndSequence();
  LogicalResult seedBatchAndSequence(func::FuncOp entry);
  const Seed *seedOf(Value v, unsigned d);
  /// Whether n divides every dimension tied to (v, d).
  bool classDivides(Value v, unsigned d, int64_t n);
  /// The sharding a value has where nothing forces another.
  FailureOr<ValueSharding> canonical(Value v);
  bool isPaddable(Value v, unsigned d);

  // --- Partitioning --------------------------------------------------------
  struct Local {
    Value value;
    ValueSharding sharding;
  };
  /// How one op is split: the axes of its factors, and what attention and
  /// recurrences over a split sequence are told besides.
  struct OpSplit {
    SmallVector<AxisList> axes; ///< per factor of the op's rule
    AxisList partial;           ///< of the results: split reductions' axes
    /// Query heads per key/value head when there are fewer key/value heads
    /// than ranks splitting the query heads (each rank slices its group's).
    int64_t kvReplicas = 0;
    AxisList queryAxes;    ///< attention's query heads
    AxisList contextAxes;  ///< all-gather attention: the queries' chunk
    AxisList ringAxes;     ///< ring attention: keys and values passed round
    AxisList mixerContext; ///< a recurrence's sequence split over cp
    AxisList cacheAxes;    ///< a KV cache split by sequence over cp
    bool zigzagged = false;
  };
  LogicalResult partitionFunction(func::FuncOp func,
                                  ArrayRef<ValueSharding> argShardings);
  LogicalResult partitionOp(OpBuilder &b, Operation *op);
  LogicalResult partitionCall(OpBuilder &b, func::CallOp call);
  /// `global` as `user` needs it, resharded (once per target) if its local
  /// value has another sharding.
  FailureOr<Value> use(OpBuilder &b, Operation *user, Value global,
                       const ValueSharding &to);
  FailureOr<SmallVector<AxisList>> factorAxes(Operation *op,
                                              const ShardingRule &rule);
  FailureOr<OpSplit> splitOf(Operation *op, const ShardingRule &rule);
  LogicalResult splitAttention(AttentionOp attention, const ShardingRule &rule,
                               OpSplit &split);
  /// Key/value heads of an attention op (operands: queries, keys, values)
  /// follow its query heads' split, or are sliced per rank when there are
  /// fewer of them than ranks.
  void splitKeyValueHeads(Operation *attention, const ShardingRule &rule,
                          OpSplit &split);
  void splitRecurrence(Operation *op, const ShardingRule &rule,
                       OpSplit &split);
  /// A cache_write or cache_attention whose cache is split by sequence over
  /// cp (PartitionCacheContext.cpp).
  void splitCacheSequence(Operation *op, const ShardingRule &rule,
                          OpSplit &split);
  LogicalResult mapOperands(OpBuilder &b, Operation *op,
                            const ShardingRule &rule, const OpSplit &split,
                            IRMapping &mapping);
  LogicalResult partitionRowParallelLinear(OpBuilder &b, LinearOp linear,
                                           const IRMapping &mapping,
                                           ArrayRef<ValueSharding> natural);
  /// Completes an op whose local result is a partial sum and to which an
  /// `addend` (a bias, positions) is added once, after the sum: the sum as
  /// `want` shards it plus the addend (a braid.bias_add).
  LogicalResult addAfterSum(OpBuilder &b, Operation *op,
                            const ValueSharding &want, Value addend,
                            const ValueSharding &addendSharding);
  LogicalResult partitionVocabEmbedding(OpBuilder &b, EmbeddingOp e,
                                        const IRMapping &mapping,
                                        const OpSplit &split,
                                        ArrayRef<ValueSharding> natural);
  LogicalResult cloneLocal(OpBuilder &b, Operation *op,
                           const ShardingRule &rule, const OpSplit &split,
                           IRMapping &mapping,
                           ArrayRef<ValueSharding> natural);
  /// Debug output: how `op` is split and why.
  void logSplit(Operation *op, const ShardingRule &rule, const OpSplit &split);
  ValueSharding paramStorage(StringRef name);
  /// Each parameter's storage: its reads' canonical sharding, split over dp
  /// too under ZeRO-3.
  LogicalResult chooseParamShardings();
  /// An entry's inputs: split by their batch's and sequence's seeds.
  FailureOr<SmallVector<ValueSharding>> inputShardings(func::FuncOp entry);
  /// The grid, the parameters' local types and global places, the ZeRO
  /// stage and the sequence layout, on the module.
  void recordGlobalLayouts();

  /// The callee of `call` (hashed lookups: a scan of the module per call
  /// made partitioning quadratic in the layers).
  func::FuncOp calleeOf(func::CallOp call) {
    return symbols.lookupNearestSymbolFrom<func::FuncOp>(call,
                                                         call.getCalleeAttr());
  }

  ModuleOp module;
  SymbolTableCollection symbols;
  Grid grid;
  ShardPlan plan;
  int zero;
  bool sequenceParallel;
  CpAttention cpAttention;
  CpLayout cpLayout;

public:
  /// Whether ops record their results' place in the global tensors
  /// (braid.result_layouts, for dumps).
  bool recordingLayouts = false;
  /// Whether the inference programs (prefill, decode, forward) gather their
  /// vocabulary-split logits at the return (gather-logits); when not, they
  /// return this rank's block of the vocabulary and record where it lies
  /// (braid.split, braid.global_shape on the result), for a sampler that
  /// never gathers them; the vocabulary may then be padded.
  bool gatheringLogits = true;

private:
  /// Zigzag load balancing: the cp size when sequences split over cp are
  /// held in zigzag order (rank i: chunks i and 2cp-1-i), else 0.
  int64_t zigzag = 0;
  /// Refuses a cp split of a KV cache that cp does not divide
  /// (PartitionCacheContext.cpp).
  LogicalResult checkInferenceGrid();
  /// Seeds every KV cache's sequence over cp (PartitionCacheContext.cpp).
  LogicalResult seedCacheSequence();
  /// Whether `entry`'s inputs have their sequence split over cp (not a
  /// decode step's one token).
  bool splitsSequence(func::FuncOp entry);
  /// The most rows a Mamba convolution of the inference programs reads
  /// before a chunk (K-1; 0 without one).
  int64_t mambaHaloRows();
  /// Decides `zigzag` from cp-layout and the model.
  LogicalResult chooseSequenceLayout();

  /// The module's entry points (its programs), in module order.
  SmallVector<func::FuncOp> entries;
  SmallVector<func::FuncOp> functions; ///< entries and their callees
  /// The entry whose program first reaches each function.
  llvm::DenseMap<func::FuncOp, func::FuncOp> programOf;
  llvm::DenseMap<DimKey, unsigned> nodes;
  llvm::EquivalenceClasses<unsigned> classes;
  llvm::DenseMap<unsigned, Seed> seeds; ///< by class leader
  llvm::DenseSet<unsigned> paddable;    ///< class leaders of vocabularies
  struct Annotation {
    Value value;
    unsigned dim;
    AxisList axes;
    Location loc;
    std::string source;
  };
  SmallVector<Annotation> annotations; ///< read before the classes exist

  llvm::DenseMap<Value, Local> locals; ///< global value -> local value
  llvm::DenseMap<Value, SmallVector<std::pair<ValueSharding, Value>>> resharded;
  /// Global types, recorded before arguments and parameter reads are
  /// retyped in place.
  llvm::DenseMap<Value, RankedTensorType> globalTypes;
  RankedTensorType globalType(Value v) {
    auto it = globalTypes.find(v);
    return it != globalTypes.end() ? it->second : tensorTypeOf(v);
  }
  llvm::DenseMap<func::FuncOp, SmallVector<ValueSharding>> argShardingsOf;
  llvm::DenseMap<func::FuncOp, SmallVector<ValueSharding>> resultShardingsOf;
  llvm::StringMap<ValueSharding> paramShardings;
  llvm::StringMap<RankedTensorType> paramGlobal;
};

} // namespace mlir::braid::partition

#endif // BRAID_DIALECT_BRAID_TRANSFORMS_PARTITIONER_H
