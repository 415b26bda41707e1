//===- BraidSequenceChunkOps.cpp - Mamba over chunks of the sequence ------===//
//
// The pieces --convert-braid-to-dist expands a context-parallel conv1d and
// selective_scan into (SequenceChunks.cpp of BraidToDist): their verifiers
// and runtime calls. Pieces whose kernels accumulate in place get their
// accumulators copied to the results first.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/ScanKernelArgs.h"
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

//===----------------------------------------------------------------------===//
// Kernel calls
//===----------------------------------------------------------------------===//

/// B, S, C, K of a convolution of the chunk `x` [B, S, C] by `w` [C, K].
static void appendConvDims(SmallVectorImpl<KernelArg> &args, Value x,
                           Value w) {
  auto xs = shapeOf(x);
  args.append({xs[0], xs[1], xs[2], shapeOf(w)[1]});
}

/// dt, x, delta, A, B, C, D of a scan op.
static void appendScanArgs(SmallVectorImpl<KernelArg> &args, Operation *s) {
  args.push_back(KernelArg::dtype(s->getOperand(0).getType()));
  for (Value v : s->getOperands().take_front(6))
    args.push_back(v);
}

/// The braid_scan_params of a scan op (x and A its operands 0 and 2).
static void appendScanParams(SmallVectorImpl<KernelArg> &args, Operation *s) {
  args.push_back(scanParams(s->getOperand(0), s->getOperand(2),
                            s->hasAttr("delta_softplus")));
}

/// The cotangents of x, delta, A, B, C and D: the op's first six results.
static void appendScanGrads(SmallVectorImpl<KernelArg> &args, Operation *s) {
  for (Value v : s->getResults().take_front(6))
    args.push_back(v);
}

//===----------------------------------------------------------------------===//
// TailOp
//===----------------------------------------------------------------------===//

LogicalResult TailOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  auto x = shapeOf(getInput());
  int64_t rows = shapeOf(getResult())[1];
  calls.push_back({"braid_k_slice",
                   {KernelArg::dtype(getType()), getInput(), getResult(),
                    x[0], x[1], rows, x[2], x[1] - rows}});
  return success();
}

//===----------------------------------------------------------------------===//
// Conv1dHaloOp
//===----------------------------------------------------------------------===//

LogicalResult
Conv1dHaloOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  SmallVector<KernelArg> args = {KernelArg::dtype(getType()), getInput(),
                                 getHalo(), getWeight(), getBias(),
                                 getResult()};
  appendConvDims(args, getInput(), getWeight());
  calls.push_back({"braid_k_conv1d_halo", std::move(args)});
  return success();
}

//===----------------------------------------------------------------------===//
// Conv1dHaloGradOp
//===----------------------------------------------------------------------===//

LogicalResult
Conv1dHaloGradOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  SmallVector<KernelArg> args = {
      KernelArg::dtype(getInput().getType()), getInput(), getHalo(),
      getWeight(), getGrad(), getDinput(), getDweight(), getDbias(),
      getDhalo()};
  appendConvDims(args, getInput(), getWeight());
  calls.push_back({"braid_k_conv1d_halo_grad", std::move(args)});
  return success();
}

//===----------------------------------------------------------------------===//
// AddTailOp
//===----------------------------------------------------------------------===//

LogicalResult AddTailOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  // The kernel adds in place: the chunk is copied to the result first.
  auto x = shapeOf(getInput());
  calls.push_back(copyCall(getResult(), getInput()));
  calls.push_back({"braid_k_conv1d_halo_accumulate",
                   {KernelArg::dtype(getType()), getResult(), getTail(), x[0],
                    x[1], x[2], shapeOf(getTail())[1] + 1}});
  return success();
}

//===----------------------------------------------------------------------===//
// ScanChunkStateOp
//===----------------------------------------------------------------------===//

LogicalResult
ScanChunkStateOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  // From a zero state, keeping only the final state and the decay.
  SmallVector<KernelArg> args;
  appendScanArgs(args, *this);
  args.append({Value(), Value(), KernelArg::buffer(getHend(), "float *"),
               KernelArg::buffer(getDecay(), "float *")});
  appendScanParams(args, *this);
  calls.push_back({"braid_k_selective_scan_chunk", std::move(args)});
  return success();
}

//===----------------------------------------------------------------------===//
// ScanChunkOp
//===----------------------------------------------------------------------===//

LogicalResult ScanChunkOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  // From the entering state, keeping only the result.
  SmallVector<KernelArg> args;
  appendScanArgs(args, *this);
  args.append({KernelArg::buffer(getH0(), "float *"), getResult(), Value(),
               Value()});
  appendScanParams(args, *this);
  calls.push_back({"braid_k_selective_scan_chunk", std::move(args)});
  return success();
}

//===----------------------------------------------------------------------===//
// ScanChunkGradOp
//===----------------------------------------------------------------------===//

LogicalResult
ScanChunkGradOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  // The cotangent of the result only (no final state, no decay), written.
  SmallVector<KernelArg> args;
  appendScanArgs(args, *this);
  args.append({KernelArg::buffer(getH0(), "float *"), getGrad(), Value(),
               Value()});
  appendScanGrads(args, *this);
  args.push_back(KernelArg::buffer(getDh0(), "float *"));
  appendScanParams(args, *this);
  args.push_back(/*accumulate=*/false);
  calls.push_back({"braid_k_selective_scan_chunk_grad", std::move(args)});
  return success();
}

//===----------------------------------------------------------------------===//
// ScanChunkStateGradOp
//===----------------------------------------------------------------------===//

LogicalResult
ScanChunkStateGradOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  // The kernel adds to the accumulators: they are copied to the results
  // first.
  for (auto [to, from] :
       llvm::zip_equal(getResults(), getOperands().slice(8, 6)))
    calls.push_back(copyCall(to, from));
  SmallVector<KernelArg> args;
  appendScanArgs(args, *this);
  args.append({Value(), Value(), KernelArg::buffer(getDhend(), "float *"),
               KernelArg::buffer(getDdecay(), "float *")});
  appendScanGrads(args, *this);
  args.push_back(Value());
  appendScanParams(args, *this);
  args.push_back(/*accumulate=*/true);
  calls.push_back({"braid_k_selective_scan_chunk_grad", std::move(args)});
  return success();
}

//===----------------------------------------------------------------------===//
// ScanCarryOp
//===----------------------------------------------------------------------===//

LogicalResult ScanCarryOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  int64_t count = getNumElements(getResult());
  calls.push_back({"braid_k_scan_carry",
                   {KernelArg::buffer(getDecayAll(), "float *"),
                    KernelArg::buffer(getHendAll(), "float *"),
                    KernelArg::buffer(getResult(), "float *"),
                    getNumElements(getDecayAll()) / count,
                    KernelArg::index(getChunk()), count}});
  return success();
}

//===----------------------------------------------------------------------===//
// ScanCarryGradOp
//===----------------------------------------------------------------------===//

LogicalResult
ScanCarryGradOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  int64_t count = getNumElements(getDdecay());
  calls.push_back({"braid_k_scan_carry_grad",
                   {KernelArg::buffer(getDecayAll(), "float *"),
                    KernelArg::buffer(getHendAll(), "float *"),
                    KernelArg::buffer(getDh0All(), "float *"),
                    KernelArg::buffer(getDdecay(), "float *"),
                    KernelArg::buffer(getDhend(), "float *"),
                    getNumElements(getDecayAll()) / count,
                    KernelArg::index(getChunk()), count}});
  return success();
}
