//===- BraidSequenceChunkOps.cpp - verifiers of Mamba over chunks ---------===//

#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/VerifierHelpers.h"

using namespace mlir;
using namespace mlir::braid;
using mlir::braid::detail::expectType;
using mlir::braid::detail::shapeOf;

namespace {
/// A chunk [B, S, C], its halo [B, K-1, C] for a weight [C, K].
LogicalResult verifyHalo(Operation *op, Value input, Value halo,
                         Value weight) {
  auto x = shapeOf(input), w = shapeOf(weight);
  if (x.size() != 3 || w.size() != 2 || w[0] != x[2] || w[1] < 1)
    return op->emitOpError("input must be [B, S, C] and weight [C, K], found ")
           << input.getType() << ", " << weight.getType();
  if (x[1] < w[1] - 1)
    return op->emitOpError("a chunk of ")
           << x[1] << " rows is shorter than the convolution's " << w[1] - 1
           << "-row halo";
  auto type = cast<RankedTensorType>(input.getType());
  return expectType(op, "halo", halo,
                    type.clone(ArrayRef<int64_t>{x[0], w[1] - 1, x[2]}));
}

/// x [B, S, Di], delta [B, S, Di], A [Di, N], B and C [B, S, N], D [Di];
/// returns the state type f32 [B, Di, N].
FailureOr<RankedTensorType> verifyScan(Operation *op, ValueRange operands) {
  auto x = shapeOf(operands[0]), a = shapeOf(operands[2]);
  if (x.size() != 3 || a.size() != 2 || a[0] != x[2])
    return op->emitOpError("input must be [B, S, Di] and A [Di, N], found ")
           << operands[0].getType() << ", " << operands[2].getType();
  auto type = cast<RankedTensorType>(operands[0].getType());
  SmallVector<int64_t> bsn = {x[0], x[1], a[1]};
  if (failed(expectType(op, "delta", operands[1], type)) ||
      failed(expectType(op, "B", operands[3], type.clone(bsn))) ||
      failed(expectType(op, "C", operands[4], type.clone(bsn))) ||
      failed(expectType(op, "D", operands[5],
                        type.clone(ArrayRef<int64_t>{x[2]}))) ||
      failed(expectType(op, "A", operands[2], type.clone(a))))
    return failure();
  return RankedTensorType::get({x[0], x[2], a[1]},
                               Float32Type::get(op->getContext()));
}

/// Every chunk's states, [n B, Di, N], for a chunk's state [B, Di, N].
LogicalResult verifyGathered(Operation *op, StringRef what, Value all,
                             RankedTensorType state) {
  auto s = shapeOf(all);
  if (s.size() != 3 || s[1] != state.getDimSize(1) ||
      s[2] != state.getDimSize(2) || s[0] % state.getDimSize(0) != 0)
    return op->emitOpError()
           << what << " must be every chunk's " << state << " stacked along "
           << "dimension 0, found " << all.getType();
  return success();
}

/// The cotangents of the scan's operands have their types.
LogicalResult verifyScanCotangents(Operation *op, ValueRange operands,
                                   ValueRange cotangents, StringRef what) {
  for (auto [i, pair] : llvm::enumerate(llvm::zip(operands, cotangents)))
    if (failed(expectType(op, (what + " #" + Twine(i)).str(),
                          std::get<1>(pair), std::get<0>(pair).getType())))
      return failure();
  return success();
}
} // namespace

LogicalResult Conv1dHaloOp::verify() {
  if (failed(verifyHalo(*this, getInput(), getHalo(), getWeight())) ||
      failed(expectType(*this, "result", getResult(), getInput().getType())))
    return failure();
  if (getBias() &&
      shapeOf(getBias()) != ArrayRef<int64_t>{shapeOf(getInput())[2]})
    return emitOpError("bias must hold one value per channel, found ")
           << getBias().getType();
  return success();
}

LogicalResult Conv1dHaloGradOp::verify() {
  if (failed(verifyHalo(*this, getInput(), getHalo(), getWeight())) ||
      failed(expectType(*this, "grad", getGrad(), getInput().getType())) ||
      failed(expectType(*this, "dinput", getDinput(), getInput().getType())) ||
      failed(expectType(*this, "dweight", getDweight(), getWeight().getType())) ||
      failed(expectType(*this, "dhalo", getDhalo(), getHalo().getType())))
    return failure();
  auto type = cast<RankedTensorType>(getWeight().getType());
  return expectType(*this, "dbias", getDbias(),
                    type.clone(ArrayRef<int64_t>{shapeOf(getWeight())[0]}));
}

static LogicalResult verifyTail(Operation *op, Value chunk, Value tail) {
  auto x = shapeOf(chunk), t = shapeOf(tail);
  if (x.size() != 3 || t.size() != 3 || t[0] != x[0] || t[2] != x[2] ||
      t[1] > x[1] ||
      getElementTypeOrSelf(chunk.getType()) != getElementTypeOrSelf(tail.getType()))
    return op->emitOpError("the tail ")
           << tail.getType() << " must be the last rows of the chunk "
           << chunk.getType();
  return success();
}

LogicalResult AddTailOp::verify() {
  return verifyTail(*this, getInput(), getTail());
}

LogicalResult TailOp::verify() {
  return verifyTail(*this, getInput(), getResult());
}

LogicalResult ScanChunkStateOp::verify() {
  FailureOr<RankedTensorType> state = verifyScan(*this, getOperands());
  if (failed(state) || failed(expectType(*this, "hend", getHend(), *state)) ||
      failed(expectType(*this, "decay", getDecay(), *state)))
    return failure();
  return success();
}

LogicalResult ScanChunkOp::verify() {
  FailureOr<RankedTensorType> state =
      verifyScan(*this, getOperands().take_front(6));
  if (failed(state) || failed(expectType(*this, "h0", getH0(), *state)) ||
      failed(expectType(*this, "result", getResult(), getInput().getType())))
    return failure();
  return success();
}

LogicalResult ScanChunkGradOp::verify() {
  ValueRange scan = getOperands().take_front(6);
  FailureOr<RankedTensorType> state = verifyScan(*this, scan);
  if (failed(state) || failed(expectType(*this, "h0", getH0(), *state)) ||
      failed(expectType(*this, "grad", getGrad(), getInput().getType())) ||
      failed(expectType(*this, "dh0", getDh0(), *state)))
    return failure();
  return verifyScanCotangents(*this, scan, getResults().take_front(6),
                              "cotangent");
}

LogicalResult ScanChunkStateGradOp::verify() {
  ValueRange scan = getOperands().take_front(6);
  FailureOr<RankedTensorType> state = verifyScan(*this, scan);
  if (failed(state) || failed(expectType(*this, "dhend", getDhend(), *state)) ||
      failed(expectType(*this, "ddecay", getDdecay(), *state)) ||
      failed(verifyScanCotangents(*this, scan, getOperands().slice(8, 6),
                                  "accumulator")))
    return failure();
  return verifyScanCotangents(*this, scan, getResults(), "cotangent");
}

LogicalResult ScanCarryOp::verify() {
  auto state = cast<RankedTensorType>(getResult().getType());
  if (state.getRank() != 3)
    return emitOpError("the state must be [B, Di, N], found ") << state;
  if (failed(expectType(*this, "hend_all", getHendAll(),
                        getDecayAll().getType())))
    return failure();
  return verifyGathered(*this, "decay_all", getDecayAll(), state);
}

LogicalResult ScanCarryGradOp::verify() {
  auto state = cast<RankedTensorType>(getDdecay().getType());
  if (state.getRank() != 3)
    return emitOpError("the state must be [B, Di, N], found ") << state;
  if (failed(expectType(*this, "dhend", getDhend(), state)) ||
      failed(expectType(*this, "hend_all", getHendAll(),
                        getDecayAll().getType())) ||
      failed(expectType(*this, "dh0_all", getDh0All(),
                        getDecayAll().getType())))
    return failure();
  return verifyGathered(*this, "decay_all", getDecayAll(), state);
}
