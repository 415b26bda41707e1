//===- EmitKernelCalls.cpp - calls of the runtime's kernels ---------------===//
//
// One braid op, one braid_k_* call of runtime/include/braid/runtime.h, with
// the flattened sizes the kernel takes, bracketed for the trace.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "dialects/braid/IR/BraidOps.h"

#include "dialects/braid/Analysis/OpCost.h"

#include "llvm/ADT/TypeSwitch.h"

namespace braid::cpp {

LogicalResult FunctionEmitter::emitKernelCall(Operation *op, raw_ostream &os) {
  std::string call;
  auto p = [&](Value v) { return v ? ptr(v) : std::string("nullptr"); };
  auto n = [](int64_t v) { return std::to_string(v); };
  LogicalResult result =
      TypeSwitch<Operation *, LogicalResult>(op)
          .Case([&](EmbeddingOp e) {
            auto table = shapeOf(e.getTable());
            call = "braid_k_embedding(rt, " + dtypeName(e.getType()) + ", " +
                   dtypeName(e.getTokens().getType()) + ", " +
                   p(e.getTokens()) + ", " + p(e.getTable()) + ", " +
                   p(e.getPositionTable()) + ", " + p(e.getResult()) + ", " +
                   n(numElements(e.getTokens())) + ", " +
                   n(shapeOf(e.getTokens()).back()) + ", " + n(table[0]) +
                   ", " + n(table[1]) + ")";
            return success();
          })
          .Case([&](LinearOp l) {
            int64_t out = l.getOutFeatures();
            call = "braid_k_linear(rt, " + dtypeName(l.getType()) + ", " +
                   p(l.getInput()) + ", " + p(l.getWeight()) + ", " +
                   p(l.getBias()) + ", " + p(l.getResult()) + ", " +
                   n(numElements(l.getResult()) / out) + ", " +
                   n(l.getInFeatures()) + ", " + n(out) + ", " +
                   (l.getTransposeWeight() ? "1" : "0") + ")";
            return success();
          })
          .Case([&](BatchMatmulOp m) {
            auto lhs = shapeOf(m.getLhs());
            auto res = shapeOf(m.getResult());
            int64_t rank = lhs.size();
            int64_t k = lhs[rank - (m.getTransposeA() ? 2 : 1)];
            int64_t batch = numElements(m.getResult()) /
                            (res[rank - 2] * res[rank - 1]);
            call = "braid_k_batch_matmul(rt, " + dtypeName(m.getType()) +
                   ", " + p(m.getLhs()) + ", " + p(m.getRhs()) + ", " +
                   p(m.getResult()) + ", " + n(batch) + ", " +
                   n(res[rank - 2]) + ", " + n(k) + ", " + n(res[rank - 1]) +
                   ", " + (m.getTransposeA() ? "1" : "0") + ", " +
                   (m.getTransposeB() ? "1" : "0") + ")";
            return success();
          })
          .Case([&](AttentionOp a) {
            auto q = shapeOf(a.getQuery());
            auto k = shapeOf(a.getKey());
            auto v = shapeOf(a.getValue());
            double theta = 0.0;
            if (FloatAttr attr = a.getRopeThetaAttr())
              theta = attr.getValueAsDouble();
            call = "braid_k_attention(rt, " + dtypeName(a.getType()) + ", " +
                   p(a.getQuery()) + ", " + p(a.getKey()) + ", " +
                   p(a.getValue()) + ", " + p(a.getResult()) + ", " +
                   n(q[0]) + ", " + n(q[1]) + ", " + n(k[1]) + ", " +
                   n(q[2]) + ", " + n(k[2]) + ", " + n(q[3]) + ", " +
                   n(v[3]) + ", " + (a.getCausal() ? "1" : "0") + ", " +
                   literal(a.getScaleOrDefault()) + ", " + literal(theta) +
                   ")";
            return success();
          })
          .Case([&](RMSNormOp r) {
            int64_t h = shapeOf(r.getInput()).back();
            call = "braid_k_rms_norm(rt, " + dtypeName(r.getType()) + ", " +
                   p(r.getInput()) + ", " + p(r.getGamma()) + ", " +
                   p(r.getResult()) + ", " +
                   n(numElements(r.getInput()) / h) + ", " + n(h) + ", " +
                   literal(r.getEpsilon().convertToDouble()) + ")";
            return success();
          })
          .Case([&](LayerNormOp r) {
            int64_t h = shapeOf(r.getInput()).back();
            call = "braid_k_layer_norm(rt, " + dtypeName(r.getType()) + ", " +
                   p(r.getInput()) + ", " + p(r.getGamma()) + ", " +
                   p(r.getBeta()) + ", " + p(r.getResult()) + ", " +
                   n(numElements(r.getInput()) / h) + ", " + n(h) + ", " +
                   literal(r.getEpsilon().convertToDouble()) + ")";
            return success();
          })
          .Case([&](TransposeOp t) {
            auto shape = shapeOf(t.getInput());
            std::string s = array(shape);
            std::string perm = array(t.getPermutation());
            call = "braid_k_transpose(rt, " + dtypeName(t.getType()) + ", " +
                   p(t.getInput()) + ", " + p(t.getResult()) + ", " +
                   n(shape.size()) + ", " + s + ", " + perm + ")";
            return success();
          })
          .Case([&](CrossEntropyOp c) {
            int64_t vocab = shapeOf(c.getLogits()).back();
            call = "braid_k_cross_entropy(rt, " +
                   dtypeName(c.getLogits().getType()) + ", " +
                   dtypeName(c.getLabels().getType()) + ", " +
                   p(c.getLogits()) + ", " + p(c.getLabels()) +
                   ", static_cast<float *>(" + p(c.getResult()) + "), " +
                   n(numElements(c.getLogits()) / vocab) + ", " + n(vocab) +
                   ")";
            return success();
          })
          .Case([&](Conv1dOp c) {
            auto x = shapeOf(c.getInput());
            call = "braid_k_conv1d(rt, " + dtypeName(c.getType()) + ", " +
                   p(c.getInput()) + ", " + p(c.getWeight()) + ", " +
                   p(c.getBias()) + ", " + p(c.getResult()) + ", " + n(x[0]) +
                   ", " + n(x[1]) + ", " + n(x[2]) + ", " +
                   n(shapeOf(c.getWeight())[1]) + ")";
            return success();
          })
          .Case([&](SelectiveScanOp s) {
            auto x = shapeOf(s.getInput());
            call = "braid_k_selective_scan(rt, " + dtypeName(s.getType()) +
                   ", " + p(s.getInput()) + ", " + p(s.getDelta()) + ", " +
                   p(s.getA()) + ", " + p(s.getB()) + ", " + p(s.getC()) +
                   ", " + p(s.getD()) + ", " + p(s.getResult()) + ", " +
                   n(x[0]) + ", " + n(x[1]) + ", " + n(x[2]) + ", " +
                   n(shapeOf(s.getA())[1]) + ", " +
                   (s.getDeltaSoftplus() ? "1" : "0") + ")";
            return success();
          })
          .Case([&](RouterOp r) {
            auto logits = shapeOf(r.getLogits());
            call = "braid_k_router(rt, " + dtypeName(r.getLogits().getType()) +
                   ", " + p(r.getLogits()) + ", " + p(r.getWeights()) +
                   ", static_cast<int32_t *>(" + p(r.getIndices()) + "), " +
                   n(logits[0]) + ", " + n(logits[1]) + ", " +
                   n(r.getTopK()) + ", " + (r.getNormalize() ? "1" : "0") +
                   ")";
            return success();
          })
          .Case([&](DispatchOp d) {
            auto out = shapeOf(d.getResult());
            auto idx = shapeOf(d.getIndices());
            call = "braid_k_dispatch(rt, " + dtypeName(d.getType()) + ", " +
                   p(d.getInput()) + ", static_cast<const int32_t *>(" +
                   p(d.getIndices()) + "), " + p(d.getResult()) + ", " +
                   n(idx[0]) + ", " + n(out[2]) + ", " + n(idx[1]) + ", " +
                   n(out[0]) + ", " + n(out[1]) + ")";
            return success();
          })
          .Case([&](CombineOp c) {
            auto e = shapeOf(c.getExpertOutput());
            auto idx = shapeOf(c.getIndices());
            call = "braid_k_combine(rt, " + dtypeName(c.getType()) + ", " +
                   p(c.getExpertOutput()) + ", " + p(c.getWeights()) +
                   ", static_cast<const int32_t *>(" + p(c.getIndices()) +
                   "), " + p(c.getResult()) + ", " + n(idx[0]) + ", " +
                   n(e[2]) + ", " + n(idx[1]) + ", " + n(e[0]) + ", " +
                   n(e[1]) + ")";
            return success();
          })
          .Case([&](ExpertFFNOp f) {
            return f.emitError("braid-translate needs expert FFNs expanded "
                               "first (--braid-expand-expert-ffn)");
          })
          .Default([&](Operation *other) {
            return other->emitError("braid-translate cannot emit '")
                   << other->getName() << "'";
          });
  if (failed(result))
    return failure();
  std::string label = op->getNumResults() ? nameOf(op->getResult(0)) : "";
  os << "  braid_rt_op_begin(rt, "
     << quoted(op->getName().stripDialect()) << ", " << quoted(label)
     << ");\n";
  if (int64_t flops = getForwardCost(op).matmulFlops)
    os << "  braid_rt_op_flops(rt, " << flops << ");\n";
  os << "  " << call << ";\n  braid_rt_op_end(rt);\n";
  return success();
}

/// How a step input is generated: tokens for an embedding, labels for the
/// loss; both uniform below the vocabulary the model draws from.
} // namespace braid::cpp
