//===- BraidToDist.h - protocol families of the dist lowering ---*- C++ -*-===//
//
// One function per protocol family, each in its own file, called by the
// --convert-braid-to-dist pass (BraidToDist.cpp) on every op it handles.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_CONVERSION_BRAIDTODIST_BRAIDTODIST_H
#define BRAID_LIB_CONVERSION_BRAIDTODIST_BRAIDTODIST_H

#include "dialects/braid/Analysis/MemoryPlan.h"
#include "dialects/dist/IR/DistUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace braid::conversion {

using mlir::dist::unnamed;

/// Whether `op` is a upstream shard collective that moves data
/// (all_reduce, all_gather, reduce_scatter, all_to_all).
bool isShardTransfer(mlir::Operation *op);

/// Replaces the shard collective `op` by dist ops (Collectives.cpp).
mlir::LogicalResult lowerShardCollective(mlir::Operation *op);

/// Whether `op` is attention (or its gradient) by key blocks: ring attention,
/// queries that are this rank's chunk, or a sequence in zigzag order
/// (ContextAttention.cpp).
bool isContextAttention(mlir::Operation *op);

/// Replaces context-parallel attention by block ops and, for a ring, its
/// dist.shift transfers (ContextAttention.cpp).
mlir::LogicalResult lowerContextAttention(mlir::Operation *op);

/// Whether `op` is a cache_write or cache_attention whose KV cache is split
/// by sequence (`cache_axes`, CacheContext.cpp).
bool isCacheContext(mlir::Operation *op);

/// Replaces it by the chunk ops of this rank's rows and, for attention, the
/// all-gather and log-sum-exp merge of the ranks' partials (CacheContext.cpp).
mlir::LogicalResult lowerCacheContext(mlir::Operation *op);

/// Whether `op` is a Mamba op over this rank's chunk of a sequence
/// (`context_axes`: conv1d, selective_scan and their gradients).
bool isSequenceChunked(mlir::Operation *op);

/// Replaces a context-parallel Mamba op by chunk ops and their transfers
/// (SequenceChunks.cpp).
mlir::LogicalResult lowerSequenceChunked(mlir::Operation *op);

/// Whether `op` is a prefill's conv_step or scan_step over this rank's chunk
/// of the prompt rows (`context_axes`, MambaContext.cpp).
bool isMambaContext(mlir::Operation *op);

/// Replaces it by the chunk step with its halo or carried state and the
/// gather of each sequence's new state from its chunk (MambaContext.cpp).
mlir::LogicalResult lowerMambaContext(mlir::Operation *op);

/// Whether `op` is an embedding or cross-entropy over this rank's rows of
/// the vocabulary, or a cross-entropy over a share of the batch's rows
/// (VocabParallel.cpp).
bool isVocabParallel(mlir::Operation *op);

/// Replaces a vocabulary-parallel op by its pieces and their all-reduces
/// (VocabParallel.cpp).
mlir::LogicalResult lowerVocabParallel(mlir::Operation *op);

/// Whether `op` is a braid.sample over this rank's columns of the
/// vocabulary (`vocab_axes`, Sampling.cpp).
bool isSampleParallel(mlir::Operation *op);

/// Replaces it by its mode's phases: local words, their all-gather and the
/// merge into every row's state, then the ids (Sampling.cpp).
mlir::LogicalResult lowerSampleParallel(mlir::Operation *op);

/// Whether `op` is an optimizer update sharded over `zero_axes`
/// (ZeroUpdate.cpp).
bool isZeroUpdate(mlir::Operation *op);

/// Replaces a ZeRO-sharded update by the update of this rank's range and
/// the all-gather of the parameter (ZeroUpdate.cpp). `symbols` caches the
/// module's table: a lookup per update would scan the module, quadratic in
/// layers.
mlir::LogicalResult lowerZeroUpdate(mlir::Operation *op,
                                    mlir::SymbolTableCollection &symbols);

/// A group as dist ops state it: the program's grid and the group's axes in
/// the listed order (grid order, where a dist transfer needs it).
struct DistGroup {
  mlir::FlatSymbolRefAttr grid;
  mlir::DenseI16ArrayAttr axes;
};
DistGroup getDistGroup(mlir::OpBuilder &b, mlir::Operation *anchor,
                       const mlir::braid::GridGroup &group);

/// The group of ranks named by `op`'s attribute `attr` (cache_axes,
/// context_axes) over which a tensor is split in contiguous chunks, rank i
/// of the communicator holding chunk i: the axes must be in grid order.
/// Failure reported at `op`.
mlir::FailureOr<mlir::braid::GridGroup> getChunkGroup(mlir::Operation *op,
                                                      llvm::StringRef attr);

/// This rank's coordinate over `group`'s axes in the listed order: a
/// dist.coordinate, composed from one per axis when the axes are not listed
/// in grid order.
mlir::Value buildCoordinate(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::Operation *anchor,
                            const mlir::braid::GridGroup &group);

/// Replaces the single-result `op` by `result`, the value its expansion
/// produced, and erases it: the producer takes the op's location (its name,
/// which dumps use) and the op's recorded place in the global tensor
/// (`braid.result_layouts`, for dumps), on the result that replaces it.
void replaceLowered(mlir::Operation *op, mlir::Value result);

} // namespace braid::conversion

#endif // BRAID_LIB_CONVERSION_BRAIDTODIST_BRAIDTODIST_H
