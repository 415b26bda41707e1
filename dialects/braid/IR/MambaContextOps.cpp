//===- MambaContextOps.cpp - a prefill's Mamba steps over cp chunks -------===//
//
// braid.conv_step_chunk, braid.scan_step_chunk and braid.take_chunk_state
// (BraidMambaContextOps.td), which --convert-braid-to-dist makes from a
// prefill's conv_step / scan_step whose prompt rows context parallelism
// splits: their verifiers, the costs of the chunk steps (those of the steps
// on the chunk's rows) and the runtime calls.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/ScanKernelArgs.h"
#include "dialects/braid/IR/VerifierHelpers.h"

using namespace mlir;
using namespace mlir::braid;
using mlir::braid::detail::expectShape;
using mlir::braid::detail::shapeOf;

/// The chunk of `rows` rows tiles a prompt of `promptLen` rows, and
/// `positions` (and `last_rows`, of the same type) are [B].
static LogicalResult verifyPromptChunk(Operation *op, int64_t batch,
                                       int64_t rows, int64_t promptLen,
                                       Value positions) {
  if (rows <= 0 || promptLen % rows != 0)
    return op->emitOpError("a chunk of ")
           << rows << " rows does not tile a prompt of " << promptLen;
  auto p = shapeOf(positions);
  if (p.size() != 1 || p[0] != batch)
    return op->emitOpError("positions and last_rows must be [")
           << batch << "] (one per sequence), found " << positions.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// ConvStepChunkOp
//===----------------------------------------------------------------------===//

LogicalResult ConvStepChunkOp::verify() {
  auto x = shapeOf(getInput()), w = shapeOf(getWeight());
  if (x.size() != 3 || w.size() != 2 || w[0] != x[2] || w[1] < 1)
    return emitOpError("input ")
           << getInput().getType() << " and weight " << getWeight().getType()
           << " must be [B, S, C] and [C, K]";
  Type element = getInput().getType().getElementType();
  if (getWeight().getType().getElementType() != element ||
      getState().getType().getElementType() != element)
    return emitOpError("state, input and weight must have one element type");
  if (failed(expectShape(*this, "state", getState(), {x[0], w[1] - 1, x[2]})))
    return failure();
  if (getBias() && failed(expectShape(*this, "bias", getBias(), {x[2]},
                                      element)))
    return failure();
  return verifyPromptChunk(*this, x[0], x[1],
                           static_cast<int64_t>(getPromptLen()),
                           getPositions());
}

OpCost ConvStepChunkOp::getCost() {
  // braid.conv_step's on the chunk's rows.
  OpCost cost;
  int64_t kernel = shapeOf(getWeight())[1];
  cost.otherFlops =
      (2 * kernel + (getBias() ? 1 : 0)) * getNumElements(getResult());
  return cost;
}

LogicalResult
ConvStepChunkOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  auto x = shapeOf(getInput());
  calls.push_back(
      {"braid_k_conv_step_chunk",
       {KernelArg::dtype(getInput().getType()),
        KernelArg::buffer(getState(), "const void *"),
        KernelArg::buffer(getHalo(), "const void *"), getInput(), getWeight(),
        getBias(), KernelArg::buffer(getPositions(), "const int32_t *"),
        KernelArg::buffer(getLastRows(), "const int32_t *"), getResult(),
        getChunkState(), x[0], x[1], x[2], shapeOf(getWeight())[1],
        KernelArg::index(getFirstRow()),
        static_cast<int64_t>(getPromptLen())}});
  return success();
}

//===----------------------------------------------------------------------===//
// ScanStepChunkOp
//===----------------------------------------------------------------------===//

LogicalResult ScanStepChunkOp::verify() {
  auto x = shapeOf(getInput()), a = shapeOf(getA());
  if (x.size() != 3 || a.size() != 2 || a[0] != x[2])
    return emitOpError("input ")
           << getInput().getType() << " and A " << getA().getType()
           << " must be [B, S, Di] and [Di, N]";
  Type element = getInput().getType().getElementType();
  int64_t b = x[0], s = x[1], di = x[2], n = a[1];
  if (failed(expectShape(*this, "delta", getDelta(), x)) ||
      failed(expectShape(*this, "A", getA(), a, element)) ||
      failed(expectShape(*this, "B", getB(), {b, s, n}, element)) ||
      failed(expectShape(*this, "C", getC(), {b, s, n}, element)) ||
      failed(expectShape(*this, "D", getD(), {di}, element)) ||
      failed(expectShape(*this, "state", getState(), {b, di, n})))
    return failure();
  int64_t promptLen = static_cast<int64_t>(getPromptLen());
  if (failed(verifyPromptChunk(*this, b, s, promptLen, getPositions())))
    return failure();
  return expectShape(*this, "decay_all", getDecayAll(),
                     {promptLen / s * b, di, n});
}

OpCost ScanStepChunkOp::getCost() {
  // braid.scan_step's on the chunk's rows, and the carry's 2 per state
  // element and earlier chunk.
  OpCost cost;
  int64_t state = shapeOf(getA())[1];
  cost.otherFlops = getNumElements(getResult()) *
                        (8 * state + 2 + (getDeltaSoftplus() ? 3 : 0)) +
                    2 * getNumElements(getDecayAll());
  return cost;
}

LogicalResult
ScanStepChunkOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  calls.push_back(
      {"braid_k_scan_step_chunk",
       {KernelArg::dtype(getInput().getType()),
        KernelArg::buffer(getState(), "const float *"),
        KernelArg::buffer(getDecayAll(), "const float *"),
        KernelArg::buffer(getHendAll(), "const float *"), getInput(),
        getDelta(), getA(), getB(), getC(), getD(),
        KernelArg::buffer(getPositions(), "const int32_t *"),
        KernelArg::buffer(getLastRows(), "const int32_t *"), getResult(),
        KernelArg::buffer(getChunkState(), "float *"),
        scanParams(getInput(), getA(), getDeltaSoftplus()),
        KernelArg::index(getFirstRow()),
        static_cast<int64_t>(getPromptLen())}});
  return success();
}

//===----------------------------------------------------------------------===//
// TakeChunkStateOp
//===----------------------------------------------------------------------===//

LogicalResult TakeChunkStateOp::verify() {
  auto state = shapeOf(getState()), all = shapeOf(getChunkStates());
  if (state.empty() || all.size() != state.size() || state[0] <= 0 ||
      all[0] % state[0] != 0 || all.drop_front() != state.drop_front() ||
      getState().getType().getElementType() !=
          getChunkStates().getType().getElementType())
    return emitOpError("chunk_states ")
           << getChunkStates().getType() << " must stack whole states "
           << getState().getType() << " along dimension 0";
  auto last = shapeOf(getLastRows());
  if (last.size() != 1 || last[0] != state[0])
    return emitOpError("last_rows must be [")
           << state[0] << "] (one per sequence), found "
           << getLastRows().getType();
  if (getChunkRows() <= 0)
    return emitOpError("chunk_rows must be positive, found ")
           << getChunkRows();
  return success();
}

LogicalResult
TakeChunkStateOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  auto state = getState().getType(), all = getChunkStates().getType();
  int64_t batch = state.getDimSize(0);
  int64_t bytes = getNumElements(getState()) / batch *
                  (state.getElementTypeBitWidth() / 8);
  calls.push_back({"braid_k_take_chunk_state",
                   {KernelArg::buffer(getNewState(), "void *"),
                    KernelArg::buffer(getChunkStates(), "const void *"),
                    KernelArg::buffer(getLastRows(), "const int32_t *"), batch,
                    all.getDimSize(0) / batch,
                    static_cast<int64_t>(getChunkRows()), bytes}});
  return success();
}
