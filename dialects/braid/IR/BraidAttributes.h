//===- BraidAttributes.h - names of the braid.* attributes ------*- C++ -*-===//
//
// The discardable attributes by which braid passes hand decisions to later
// passes, the emitter and the runtime. BraidBase.td declares each once (its
// `discardableAttrs`, which says what it holds and means); these are their
// names as C++ spells them, so that no pass writes one as a string literal.
// BraidAttributes.cpp verifies each where it appears.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_BRAIDATTRIBUTES_H
#define BRAID_DIALECT_BRAID_IR_BRAIDATTRIBUTES_H

#include "dialects/braid/IR/BraidDialect.h"

namespace mlir::braid {

#define BRAID_ATTR_NAME(CONSTANT, HELPER)                                      \
  inline constexpr StringLiteral CONSTANT =                                    \
      BraidDialect::HELPER##AttrHelper::getNameStr();

// What a module and its functions are.
BRAID_ATTR_NAME(kEntryAttrName, Entry)
BRAID_ATTR_NAME(kServesAttrName, Serves)
BRAID_ATTR_NAME(kInputNameAttrName, Input)
BRAID_ATTR_NAME(kModelAttrName, Model)
BRAID_ATTR_NAME(kAxesAttrName, Axes)

// Partitioning.
BRAID_ATTR_NAME(kSplitAttrName, Split)
BRAID_ATTR_NAME(kGlobalShapeAttrName, GlobalShape)
BRAID_ATTR_NAME(kResultLayoutsAttrName, ResultLayouts)
BRAID_ATTR_NAME(kPartialAttrName, Partial)
BRAID_ATTR_NAME(kZeroAttrName, Zero)
BRAID_ATTR_NAME(kZeroAxesAttrName, ZeroAxes)
BRAID_ATTR_NAME(kZigzagAxisAttrName, ZigzagAxis)

// Training.
BRAID_ATTR_NAME(kGradientsAttrName, Gradients)
BRAID_ATTR_NAME(kGradientCopiesAttrName, GradientCopies)
BRAID_ATTR_NAME(kFinishAttrName, Finish)

// Pipeline parallelism.
BRAID_ATTR_NAME(kStageAttrName, Stage)
BRAID_ATTR_NAME(kBackwardAttrName, Backward)
BRAID_ATTR_NAME(kMicrobatchesAttrName, Microbatches)
BRAID_ATTR_NAME(kPipelineAttrName, Pipeline)
BRAID_ATTR_NAME(kPipelineEntriesAttrName, PipelineEntries)
BRAID_ATTR_NAME(kPipelineRankAttrName, PipelineRank)
BRAID_ATTR_NAME(kPeakLiveMicrobatchesAttrName, PeakLiveMicrobatches)
BRAID_ATTR_NAME(kPipelineChunkAttrName, PipelineChunk)

#undef BRAID_ATTR_NAME

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_IR_BRAIDATTRIBUTES_H
