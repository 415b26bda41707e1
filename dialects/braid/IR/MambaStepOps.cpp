//===- MambaStepOps.cpp - rules of the Mamba state ops of inference -------===//
//
// braid.conv_step and braid.scan_step (BraidInferenceOps.td): a Mamba
// layer's convolution and selective scan over the new rows of each sequence,
// from the states its previous calls left and writing them back in place.
// Their verifiers, sharding rules (sequences split like the batch, channels
// like braid.conv1d's and braid.selective_scan's, so a state is split with
// the channels over tensor parallelism and, without `slots`, with the
// sequences over data parallelism; a prefill's prompt rows split over cp as
// those ops' sequence, MambaContext.cpp of BraidToDist), costs (those of the
// training ops) and runtime calls.
// Inference programs are not differentiated, so neither has a VJP.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/ScanKernelArgs.h"
#include "dialects/braid/IR/ShapeErrors.h"

using namespace mlir;
using namespace mlir::braid;
using namespace mlir::braid::detail;

using P = std::pair<Value, int64_t>;

/// `positions` and, when present, `last_rows` and `slots` must be [B].
template <typename OpTy>
static LogicalResult checkPerSequence(OpTy op, int64_t batch) {
  std::pair<Value, StringRef> perSequence[] = {{op.getPositions(), "positions"},
                                               {op.getLastRows(), "last_rows"},
                                               {op.getSlots(), "slots"}};
  for (auto [v, role] : perSequence) {
    if (!v)
      continue;
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getRank() != 1 || type.getDimSize(0) != batch)
      return op.emitOpError(role) << " must be [" << batch
                                  << "] (one per sequence), found " << type;
  }
  // In place: a second reader of the state would see it before or after
  // the update depending on where the scheduler put it.
  if (!op.getState().hasOneUse())
    return op.emitOpError("updates its state in place, so the state operand "
                          "must have no other use");
  return success();
}

/// The `last_rows` operand of a kernel call: its buffer, or null (every
/// sequence's last row is S - 1); `slots` likewise (null: sequence b's slot
/// is b).
static KernelArg perSequenceArg(Value lastRowsOrSlots) {
  return KernelArg::buffer(lastRowsOrSlots, "const int32_t *");
}

/// The state's leading dimension: its slots (B without `slots`).
static int64_t stateSlots(Value state) {
  return cast<RankedTensorType>(state.getType()).getDimSize(0);
}

/// The factor of the state's leading dimension. Without `slots` it is the
/// sequence's, split like the batch; with them any sequence may name any
/// slot, so the slots are never split (the batch factor covers the rows,
/// positions, last rows and slots alone).
static void addSequenceFactors(ShardingRuleBuilder &r, Value state,
                               Value newState, Value slots,
                               ArrayRef<P> perSequence) {
  SmallVector<P> batch;
  if (!slots)
    batch.push_back(P{state, 0});
  batch.append(perSequence.begin(), perSequence.end());
  if (slots)
    batch.push_back(P{slots, 0});
  else
    batch.push_back(P{newState, 0});
  r.add(FactorKind::Parallel, batch);
  if (slots)
    r.add(FactorKind::Whole, {P{state, 0}, P{newState, 0}});
}

/// The state's leading dimension: free with `slots`, B without.
static bool stateSlotsFit(Value slots, int64_t stateSlots, int64_t batch) {
  return slots || stateSlots == batch;
}

//===----------------------------------------------------------------------===//
// ConvStepOp
//===----------------------------------------------------------------------===//

LogicalResult ConvStepOp::verify() {
  ShapeErrors<ConvStepOp> error{getLoc()};
  auto state = getState().getType(), x = getInput().getType(),
       w = getWeight().getType();
  auto bias = typeOf(getBias());
  if (failed(error.expectRank(state, 3, "state", "[B, K-1, C]")) ||
      failed(error.expectRank(x, 3, "input", "[B, S, C]")) ||
      failed(error.expectRank(w, 2, "weight", "[C, K]")) ||
      failed(error.expectSameElementType({state, x, w, bias})))
    return failure();
  int64_t channels = x.getDimSize(2), kernel = w.getDimSize(1);
  if (w.getDimSize(0) != channels)
    return emitOpError("weight ") << w << " must be [" << channels << ", K]";
  if (bias && (bias.getRank() != 1 || bias.getDimSize(0) != channels))
    return emitOpError("bias ") << bias << " must be [" << channels << "]";
  if (!stateSlotsFit(getSlots(), state.getDimSize(0), x.getDimSize(0)) ||
      state.getDimSize(1) != kernel - 1 || state.getDimSize(2) != channels) {
    InFlightDiagnostic diag = emitOpError("state ");
    diag << state << " must hold the " << kernel - 1
         << " inputs before each sequence's rows: [";
    if (getSlots())
      diag << "slots";
    else
      diag << x.getDimSize(0);
    return diag << ", " << kernel - 1 << ", " << channels << "]";
  }
  return checkPerSequence(*this, x.getDimSize(0));
}

ShardingRule ConvStepOp::getShardingRule() {
  ShardingRuleBuilder r(*this);
  Value s = getState(), x = getInput(), w = getWeight(), y = getResult(),
        s1 = getNewState();
  addSequenceFactors(r, s, s1, getSlots(),
                     {P{x, 0}, P{getPositions(), 0}, P{getLastRows(), 0},
                      P{y, 0}});
  // A sequence's rows and its carried inputs are one recurrence: whole,
  // unless context parallelism splits a prefill's prompt (the op then takes
  // `context_axes`: a halo from the previous rank).
  r.add(FactorKind::Sequence, {P{x, 1}, P{y, 1}});
  r.add(FactorKind::Whole, {P{s, 1}, P{s1, 1}});
  r.add(FactorKind::Parallel,
        {P{s, 2}, P{x, 2}, P{w, 0}, P{getBias(), 0}, P{y, 2}, P{s1, 2}});
  r.add(FactorKind::Whole, {P{w, 1}});
  return r.take();
}

OpCost ConvStepOp::getCost() {
  // braid.conv1d's: K multiply-adds per output, plus the bias, over every
  // sequence (idle ones included: the op's static upper bound).
  OpCost cost;
  int64_t kernel = getWeight().getType().getDimSize(1);
  cost.otherFlops =
      (2 * kernel + (getBias() ? 1 : 0)) * getNumElements(getResult());
  return cost;
}

LogicalResult ConvStepOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  ArrayRef<int64_t> x = getInput().getType().getShape();
  calls.push_back(
      {"braid_k_conv_step",
       {KernelArg::dtype(getInput().getType()), getNewState(), getInput(),
        getWeight(), getBias(),
        KernelArg::buffer(getPositions(), "const int32_t *"),
        perSequenceArg(getLastRows()), perSequenceArg(getSlots()), getResult(),
        x[0], stateSlots(getState()), x[1], x[2],
        getWeight().getType().getDimSize(1)}});
  return success();
}

//===----------------------------------------------------------------------===//
// ScanStepOp
//===----------------------------------------------------------------------===//

LogicalResult ScanStepOp::verify() {
  ShapeErrors<ScanStepOp> error{getLoc()};
  auto state = getState().getType(), x = getInput().getType(),
       dt = getDelta().getType(), a = getA().getType(), b = getB().getType(),
       c = getC().getType(), d = getD().getType();
  if (failed(error.expectRank(state, 3, "state", "[B, Di, N]")) ||
      failed(error.expectRank(x, 3, "input", "[B, S, Di]")) ||
      failed(error.expectRank(a, 2, "A", "[Di, N]")) ||
      failed(error.expectSameElementType({x, dt, a, b, c, d})))
    return failure();
  int64_t batch = x.getDimSize(0), seq = x.getDimSize(1),
          channels = x.getDimSize(2), n = a.getDimSize(1);
  if (dt.getShape() != x.getShape())
    return emitOpError("delta ") << dt << " must have the input's shape " << x;
  if (a.getDimSize(0) != channels)
    return emitOpError("A ") << a << " must be [" << channels << ", N]";
  SmallVector<int64_t> rows = {batch, seq, n};
  if (b.getShape() != ArrayRef<int64_t>(rows) ||
      c.getShape() != ArrayRef<int64_t>(rows))
    return emitOpError("B ") << b << " and C " << c << " must be [" << batch
                             << ", " << seq << ", " << n << "]";
  if (d.getRank() != 1 || d.getDimSize(0) != channels)
    return emitOpError("D ") << d << " must be [" << channels << "]";
  if (!stateSlotsFit(getSlots(), state.getDimSize(0), batch) ||
      state.getDimSize(1) != channels || state.getDimSize(2) != n) {
    InFlightDiagnostic diag = emitOpError("state ");
    diag << state << " must be [";
    if (getSlots())
      diag << "slots";
    else
      diag << batch;
    return diag << ", " << channels << ", " << n << "]";
  }
  return checkPerSequence(*this, batch);
}

ShardingRule ScanStepOp::getShardingRule() {
  ShardingRuleBuilder r(*this);
  Value s = getState(), x = getInput(), dt = getDelta(), B = getB(),
        C = getC(), y = getResult(), s1 = getNewState();
  addSequenceFactors(r, s, s1, getSlots(),
                     {P{x, 0}, P{dt, 0}, P{B, 0}, P{C, 0}, P{getPositions(), 0},
                      P{getLastRows(), 0}, P{y, 0}});
  // As braid.selective_scan's: under cp a prefill's chunk starts from the
  // state the previous chunks carry into it (`context_axes`).
  r.add(FactorKind::Sequence,
        {P{x, 1}, P{dt, 1}, P{B, 1}, P{C, 1}, P{y, 1}});
  r.add(FactorKind::Parallel, {P{s, 1}, P{x, 2}, P{dt, 2}, P{getA(), 0},
                               P{getD(), 0}, P{y, 2}, P{s1, 1}});
  r.add(FactorKind::Whole, {P{s, 2}, P{getA(), 1}, P{B, 2}, P{C, 2}, P{s1, 2}});
  return r.take();
}

OpCost ScanStepOp::getCost() {
  // braid.selective_scan's: 8 N + 2 per (b, t, d), 3 more for the softplus
  // (idle sequences included, as braid.conv_step's).
  OpCost cost;
  int64_t state = getA().getType().getDimSize(1);
  cost.otherFlops = getNumElements(getResult()) *
                    (8 * state + 2 + (getDeltaSoftplus() ? 3 : 0));
  return cost;
}

LogicalResult ScanStepOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  calls.push_back(
      {"braid_k_scan_step",
       {KernelArg::dtype(getInput().getType()),
        KernelArg::buffer(getNewState(), "float *"), getInput(), getDelta(),
        getA(), getB(), getC(), getD(),
        KernelArg::buffer(getPositions(), "const int32_t *"),
        perSequenceArg(getLastRows()), perSequenceArg(getSlots()), getResult(),
        stateSlots(getState()),
        scanParams(getInput(), getA(), getDeltaSoftplus())}});
  return success();
}
