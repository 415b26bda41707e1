//===- OpCost.cpp - forward FLOPs of braid ops ----------------------------===//

#include "dialects/braid/Analysis/OpCost.h"

#include "dialects/braid/Analysis/MemoryPlan.h"

#include "dialects/braid/IR/BraidOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::braid;

int64_t mlir::braid::getElementBytes(Type type) {
  if (auto shaped = dyn_cast<ShapedType>(type))
    type = shaped.getElementType();
  return std::max<int64_t>(1, type.getIntOrFloatBitWidth() / 8);
}

static int64_t numElements(Value value) {
  return cast<ShapedType>(value.getType()).getNumElements();
}

/// Per-element costs of the pointwise functions, counting exp, erf, tanh and
/// division as one FLOP each.
static int64_t activationFlops(Activation act) {
  switch (act) {
  case Activation::SiLU:
    return 4; // x / (1 + exp(-x))
  case Activation::GELU:
    return 5; // 0.5 x (1 + erf(x / sqrt 2))
  case Activation::GELUTanh:
    return 9; // 0.5 x (1 + tanh(c (x + 0.044715 x^3)))
  case Activation::Sigmoid:
    return 3;
  case Activation::ReLU:
    return 1;
  }
  return 1;
}

OpCost mlir::braid::getForwardCost(Operation *op) {
  OpCost cost;
  TypeSwitch<Operation *>(op)
      .Case<EmbeddingOp>([&](EmbeddingOp e) {
        if (e.getPositionTable())
          cost.otherFlops = numElements(e.getResult());
      })
      .Case<LinearOp>([&](LinearOp l) {
        int64_t rows = numElements(l.getResult()) / l.getOutFeatures();
        cost.matmulFlops = 2 * rows * l.getInFeatures() * l.getOutFeatures();
        if (l.getBias())
          cost.otherFlops = numElements(l.getResult());
      })
      .Case<BatchMatmulOp>([&](BatchMatmulOp m) {
        auto lhs = m.getLhs().getType();
        int64_t k = lhs.getShape()[lhs.getRank() - (m.getTransposeA() ? 2 : 1)];
        cost.matmulFlops = 2 * numElements(m.getResult()) * k;
      })
      .Case<AttentionOp>([&](AttentionOp a) {
        auto q = a.getQuery().getType().getShape();
        auto k = a.getKey().getType().getShape();
        auto v = a.getValue().getType().getShape();
        // Ring attention: the queries meet every rank's key chunk in turn.
        int64_t keys = k[1];
        if (ArrayAttr ring = a.getRingAxesAttr())
          if (FailureOr<GridGroup> group = getGridGroup(a, ring); succeeded(group))
            keys *= group->size();
        int64_t scores = q[0] * q[2] * q[1] * keys; // B * Hq * S * Skv
        cost.matmulFlops = 2 * scores * q[3] + 2 * scores * v[3];
        // scale, mask, max, subtract, exp, sum, divide: ~5 per score.
        cost.otherFlops = 5 * scores;
        if (a.getRopeTheta()) // 3 per element of q and k (2 mul, 1 add)
          cost.otherFlops += 3 * (numElements(a.getQuery()) +
                                  numElements(a.getKey()));
        // Backward keeps the log-sum-exp of every query row, in f32.
        cost.savedBytes = 4 * q[0] * q[1] * q[2];
      })
      // A block of keys of context-parallel attention (ContextAttention.cpp
      // of BraidToDist): the products of its queries with the block's keys.
      .Case<AttentionBlockOp>([&](AttentionBlockOp a) {
        auto q = a.getQuery().getType().getShape();
        auto k = a.getKey().getType().getShape();
        auto v = a.getValue().getType().getShape();
        int64_t scores = q[0] * q[2] * q[1] * k[1];
        cost.matmulFlops = 2 * scores * q[3] + 2 * scores * v[3];
        cost.otherFlops = 5 * scores;
      })
      .Case<RMSNormOp>([&](RMSNormOp n) {
        cost.otherFlops = 4 * numElements(n.getResult());
      })
      .Case<LayerNormOp>([&](LayerNormOp n) {
        cost.otherFlops = 7 * numElements(n.getResult());
      })
      .Case<SoftmaxOp>([&](SoftmaxOp s) {
        // max, subtract, exp, sum, divide.
        cost.otherFlops = 5 * numElements(s.getResult());
      })
      .Case<GeluOp>([&](GeluOp g) {
        cost.otherFlops = activationFlops(g.getApproximate() ? Activation::GELUTanh
                                                            : Activation::GELU) *
                          numElements(g.getResult());
      })
      .Case<SiluOp>([&](SiluOp s) {
        cost.otherFlops = activationFlops(Activation::SiLU) * numElements(s.getResult());
      })
      .Case<SigmoidOp>([&](SigmoidOp s) {
        cost.otherFlops = activationFlops(Activation::Sigmoid) * numElements(s.getResult());
      })
      .Case<ExpOp, NegOp, ReluOp, AddOp, MulOp>(
          [&](Operation *e) { cost.otherFlops = numElements(e->getResult(0)); })
      .Case<GluOp>([&](GluOp g) {
        cost.otherFlops =
            (activationFlops(g.getActivation()) + 1) * numElements(g.getResult());
      })
      .Case<CrossEntropyOp>([&](CrossEntropyOp c) {
        // max, subtract, exp, sum per logit; log and pick per row.
        cost.otherFlops = 4 * numElements(c.getLogits());
      })
      .Case<Conv1dOp>([&](Conv1dOp c) {
        int64_t kernel = c.getWeight().getType().getShape()[1];
        cost.otherFlops = (2 * kernel + (c.getBias() ? 1 : 0)) *
                          numElements(c.getResult());
      })
      .Case<SelectiveScanOp>([&](SelectiveScanOp s) {
        int64_t state = s.getA().getType().getShape()[1];
        // Per (b, t, d, n): dt*A, exp, decay*h, dt*B*x (2), add, C*h, sum = 8.
        // Per (b, t, d): D*x + add = 2, softplus = 3 when applied.
        cost.otherFlops = numElements(s.getResult()) *
                          (8 * state + 2 + (s.getDeltaSoftplus() ? 3 : 0));
      })
      .Case<RouterOp>([&](RouterOp r) {
        // softmax (4 per logit) plus a top-k pass (1 per logit and choice).
        int64_t logits = numElements(r.getLogits());
        cost.otherFlops = (4 + r.getTopK()) * logits;
      })
      .Case<ExpertFFNOp>([&](ExpertFFNOp f) {
        auto x = f.getInput().getType().getShape();
        int64_t hidden = x[2];
        int64_t ffn = f.getWUp().getType().getShape()[2];
        // Every slot of every expert's buffer is computed, padding included:
        // the FLOPs the step executes (and what its expansion into batched
        // matmuls counts). At capacity factor 1 they equal the routed ones.
        int64_t rows = x[0] * x[1];
        int64_t mats = f.getWGate() ? 3 : 2;
        cost.matmulFlops = 2 * rows * hidden * ffn * mats;
        cost.otherFlops = rows * ffn *
                          (activationFlops(f.getActivation()) + (f.getWGate() ? 1 : 0));
      })
      .Case<CombineOp>([&](CombineOp c) {
        cost.otherFlops = 2 * numElements(c.getWeights()) *
                          c.getExpertOutput().getType().getShape()[2];
      })
      // Backward: matrix-product FLOPs counted as in the forward accounting
      // (Megatron-LM): the backward of a product is two products of its size.
      // attention_grad is the four products dQ, dK, dV, dP; its kernel's
      // recomputation of the scores is an implementation choice, not model
      // FLOPs.
      .Case<AttentionGradOp>([&](AttentionGradOp a) {
        auto q = a.getQuery().getType().getShape();
        auto k = a.getKey().getType().getShape();
        auto v = a.getValue().getType().getShape();
        int64_t scores = q[0] * q[2] * q[1] * k[1];
        cost.matmulFlops = 2 * (2 * scores * q[3] + 2 * scores * v[3]);
        cost.otherFlops = 8 * scores;
      })
      .Case<AttentionBlockGradOp>([&](AttentionBlockGradOp a) {
        auto q = a.getQuery().getType().getShape();
        auto k = a.getKey().getType().getShape();
        auto v = a.getValue().getType().getShape();
        int64_t scores = q[0] * q[2] * q[1] * k[1];
        cost.matmulFlops = 2 * (2 * scores * q[3] + 2 * scores * v[3]);
        cost.otherFlops = 8 * scores;
      })
      .Case<SoftmaxGradOp>([&](SoftmaxGradOp s) {
        // dy * y, the row's sum, subtract, multiply.
        cost.otherFlops = 4 * numElements(s.getResult());
      })
      .Case<RMSNormGradOp, LayerNormGradOp>([&](Operation *n) {
        cost.otherFlops = 10 * numElements(n->getOperand(0));
      })
      .Case<ActivationGradOp>([&](ActivationGradOp a) {
        cost.otherFlops = (activationFlops(a.getActivation()) + 3) *
                          numElements(a.getResult());
      })
      .Case<SumRowsOp, EmbeddingGradOp, PositionGradOp, DispatchGradOp,
            SumSquaresOp>([&](Operation *o) {
        for (Value operand : o->getOperands())
          if (isa<FloatType>(cast<ShapedType>(operand.getType()).getElementType()))
            cost.otherFlops += numElements(operand);
      })
      .Case<CrossEntropyGradOp>([&](CrossEntropyGradOp c) {
        cost.otherFlops = 5 * numElements(c.getLogits());
      })
      .Case<Conv1dGradOp>([&](Conv1dGradOp c) {
        int64_t kernel = c.getWeight().getType().getShape()[1];
        cost.otherFlops = 4 * kernel * numElements(c.getInput());
      })
      .Case<SelectiveScanGradOp>([&](SelectiveScanGradOp s) {
        int64_t state = s.getA().getType().getShape()[1];
        cost.otherFlops = 2 * numElements(s.getInput()) * (8 * state + 5);
      })
      .Case<RouterGradOp>([&](RouterGradOp r) {
        cost.otherFlops = 6 * numElements(r.getLogits());
      })
      .Case<CombineGradOp>([&](CombineGradOp c) {
        cost.otherFlops = 4 * numElements(c.getWeights()) *
                          c.getExpertOutput().getType().getShape()[2];
      })
      .Case<SGDUpdateOp>([&](SGDUpdateOp u) {
        cost.otherFlops = 4 * numElements(u.getGrad());
      })
      .Case<AdamWUpdateOp>([&](AdamWUpdateOp u) {
        cost.otherFlops = 12 * numElements(u.getGrad());
      })
      .Default([](Operation *) {});
  return cost;
}
