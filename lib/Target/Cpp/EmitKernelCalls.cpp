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

namespace {
/// "C, G" of an MoE kernel: the capacity per group and the number of groups
/// of `tokens` (the op's group_size; one group without it) over `slots`.
std::string moeCapacityAndGroups(Operation *op, int64_t tokens,
                                 int64_t slots) {
  int64_t groups = 1;
  if (auto size = op->getAttrOfType<IntegerAttr>("group_size"))
    groups = tokens / size.getInt();
  return std::to_string(slots / groups) + ", " + std::to_string(groups);
}
} // namespace

LogicalResult FunctionEmitter::emitKernelCall(Operation *op, raw_ostream &os) {
  // Attention and its gradient share their trailing arguments: the shape,
  // mask, scale and RoPE. (A chunk of the queries, context parallelism, is
  // attention by key blocks after --convert-braid-to-dist.)
  auto attentionKernel = [](auto, StringRef name) { return name.str(); };
  auto attentionDims = [&](auto a) -> FailureOr<std::string> {
    auto q = shapeOf(a.getQuery());
    auto k = shapeOf(a.getKey());
    auto v = shapeOf(a.getValue());
    double theta = 0.0;
    if (FloatAttr attr = a.getRopeThetaAttr())
      theta = attr.getValueAsDouble();
    auto n = [](int64_t v) { return std::to_string(v); };
    return ", " + n(q[0]) + ", " + n(q[1]) + ", " + n(k[1]) + ", " + n(q[2]) +
           ", " + n(k[2]) + ", " + n(q[3]) + ", " + n(v[3]) + ", " +
           (a.getCausal() ? "1" : "0") + ", " + literal(a.getScaleOrDefault()) +
           ", " + literal(theta);
  };
  std::string call;
  auto p = [&](Value v) { return v ? ptr(v) : std::string("nullptr"); };
  auto n = [](int64_t v) { return std::to_string(v); };
  // The arena pointer of a parameter or state named by a symbol.
  auto symbol = [&](StringRef name) {
    return "at(arena, " + std::to_string(*program.plan.offsetOf(name)) + ")";
  };
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
          .Case([&](AttentionOp a) -> LogicalResult {
            FailureOr<std::string> dims = attentionDims(a);
            if (failed(dims))
              return failure();
            call = attentionKernel(a, "braid_k_attention") + "(rt, " +
                   dtypeName(a.getType()) + ", " + p(a.getQuery()) + ", " +
                   p(a.getKey()) + ", " + p(a.getValue()) + ", " +
                   p(a.getResult()) + *dims + ")";
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
          .Case([&](SoftmaxOp s) {
            int64_t cols = shapeOf(s.getInput()).back();
            call = "braid_k_softmax(rt, " + dtypeName(s.getType()) + ", " +
                   p(s.getInput()) + ", " + p(s.getResult()) + ", " +
                   n(numElements(s.getInput()) / cols) + ", " + n(cols) + ")";
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
                   n(out[0]) + ", " + moeCapacityAndGroups(d, idx[0], out[1]) +
                   ")";
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
                   moeCapacityAndGroups(c, idx[0], e[1]) + ")";
            return success();
          })
          // Backward.
          .Case([&](SumRowsOp r) {
            int64_t cols = shapeOf(r.getResult())[0];
            call = "braid_k_sum_rows(rt, " + dtypeName(r.getType()) + ", " +
                   p(r.getInput()) + ", " + p(r.getResult()) + ", " +
                   n(numElements(r.getInput()) / cols) + ", " + n(cols) + ")";
            return success();
          })
          .Case([&](ActivationGradOp a) {
            call = "braid_k_activation_grad(rt, " + dtypeName(a.getType()) +
                   ", static_cast<braid_act>(" +
                   n(static_cast<int64_t>(a.getActivation())) + "), " +
                   p(a.getInput()) + ", " + p(a.getGrad()) + ", " +
                   p(a.getResult()) + ", " + n(numElements(a.getResult())) + ")";
            return success();
          })
          .Case([&](AttentionGradOp a) -> LogicalResult {
            FailureOr<std::string> dims = attentionDims(a);
            if (failed(dims))
              return failure();
            call = attentionKernel(a, "braid_k_attention_grad") + "(rt, " +
                   dtypeName(a.getQuery().getType()) + ", " + p(a.getQuery()) +
                   ", " + p(a.getKey()) + ", " + p(a.getValue()) + ", " +
                   p(a.getGrad()) + ", " + p(a.getDquery()) + ", " +
                   p(a.getDkey()) + ", " + p(a.getDvalue()) + *dims + ")";
            return success();
          })
          .Case([&](RMSNormGradOp r) {
            int64_t h = shapeOf(r.getInput()).back();
            call = "braid_k_rms_norm_grad(rt, " + dtypeName(r.getInput().getType()) +
                   ", " + p(r.getInput()) + ", " + p(r.getGamma()) + ", " +
                   p(r.getGrad()) + ", " + p(r.getDinput()) + ", " +
                   p(r.getDgamma()) + ", " + n(numElements(r.getInput()) / h) +
                   ", " + n(h) + ", " + literal(r.getEpsilon().convertToDouble()) +
                   ")";
            return success();
          })
          .Case([&](SoftmaxGradOp s) {
            int64_t cols = shapeOf(s.getOutput()).back();
            call = "braid_k_softmax_grad(rt, " + dtypeName(s.getType()) + ", " +
                   p(s.getOutput()) + ", " + p(s.getGrad()) + ", " +
                   p(s.getResult()) + ", " +
                   n(numElements(s.getOutput()) / cols) + ", " + n(cols) + ")";
            return success();
          })
          .Case([&](LayerNormGradOp r) {
            int64_t h = shapeOf(r.getInput()).back();
            call = "braid_k_layer_norm_grad(rt, " +
                   dtypeName(r.getInput().getType()) + ", " + p(r.getInput()) +
                   ", " + p(r.getGamma()) + ", " + p(r.getGrad()) + ", " +
                   p(r.getDinput()) + ", " + p(r.getDgamma()) + ", " +
                   p(r.getDbeta()) + ", " + n(numElements(r.getInput()) / h) +
                   ", " + n(h) + ", " + literal(r.getEpsilon().convertToDouble()) +
                   ")";
            return success();
          })
          .Case([&](EmbeddingGradOp e) {
            auto table = shapeOf(e.getResult());
            call = "braid_k_embedding_grad(rt, " + dtypeName(e.getType()) +
                   ", " + dtypeName(e.getTokens().getType()) + ", " +
                   p(e.getTokens()) + ", " + p(e.getGrad()) + ", " +
                   p(e.getResult()) + ", " + n(numElements(e.getTokens())) +
                   ", " + n(table[0]) + ", " + n(table[1]) + ")";
            return success();
          })
          .Case([&](PositionGradOp e) {
            auto g = shapeOf(e.getGrad());
            auto table = shapeOf(e.getResult());
            call = "braid_k_position_grad(rt, " + dtypeName(e.getType()) +
                   ", " + p(e.getGrad()) + ", " + p(e.getResult()) + ", " +
                   n(numElements(e.getGrad()) / g.back()) + ", " +
                   n(g[g.size() - 2]) + ", " + n(table[0]) + ", " +
                   n(table[1]) + ")";
            return success();
          })
          .Case([&](CrossEntropyGradOp c) {
            int64_t vocab = shapeOf(c.getLogits()).back();
            call = "braid_k_cross_entropy_grad(rt, " +
                   dtypeName(c.getLogits().getType()) + ", " +
                   dtypeName(c.getLabels().getType()) + ", " +
                   p(c.getLogits()) + ", " + p(c.getLabels()) +
                   ", static_cast<const float *>(" + p(c.getGrad()) + "), " +
                   p(c.getResult()) + ", " +
                   n(numElements(c.getLogits()) / vocab) + ", " + n(vocab) + ")";
            return success();
          })
          .Case([&](Conv1dGradOp c) {
            auto x = shapeOf(c.getInput());
            call = "braid_k_conv1d_grad(rt, " + dtypeName(c.getInput().getType()) +
                   ", " + p(c.getInput()) + ", " + p(c.getWeight()) + ", " +
                   p(c.getGrad()) + ", " + p(c.getDinput()) + ", " +
                   p(c.getDweight()) + ", " + p(c.getDbias()) + ", " + n(x[0]) +
                   ", " + n(x[1]) + ", " + n(x[2]) + ", " +
                   n(shapeOf(c.getWeight())[1]) + ")";
            return success();
          })
          .Case([&](SelectiveScanGradOp s) {
            auto x = shapeOf(s.getInput());
            call = "braid_k_selective_scan_grad(rt, " +
                   dtypeName(s.getInput().getType()) + ", " + p(s.getInput()) +
                   ", " + p(s.getDelta()) + ", " + p(s.getA()) + ", " +
                   p(s.getB()) + ", " + p(s.getC()) + ", " + p(s.getD()) + ", " +
                   p(s.getGrad()) + ", " + p(s.getDinput()) + ", " +
                   p(s.getDdelta()) + ", " + p(s.getDA()) + ", " + p(s.getDB()) +
                   ", " + p(s.getDC()) + ", " + p(s.getDD()) + ", " + n(x[0]) +
                   ", " + n(x[1]) + ", " + n(x[2]) + ", " +
                   n(shapeOf(s.getA())[1]) + ", " +
                   (s.getDeltaSoftplus() ? "1" : "0") + ")";
            return success();
          })
          .Case([&](RouterGradOp r) {
            auto logits = shapeOf(r.getLogits());
            call = "braid_k_router_grad(rt, " + dtypeName(r.getType()) + ", " +
                   p(r.getLogits()) + ", static_cast<const int32_t *>(" +
                   p(r.getIndices()) + "), " + p(r.getGrad()) + ", " +
                   p(r.getResult()) + ", " + n(logits[0]) + ", " +
                   n(logits[1]) + ", " + n(shapeOf(r.getIndices())[1]) + ", " +
                   (r.getNormalize() ? "1" : "0") + ")";
            return success();
          })
          .Case([&](DispatchGradOp d) {
            auto g = shapeOf(d.getGrad());
            auto idx = shapeOf(d.getIndices());
            call = "braid_k_dispatch_grad(rt, " + dtypeName(d.getType()) + ", " +
                   p(d.getGrad()) + ", static_cast<const int32_t *>(" +
                   p(d.getIndices()) + "), " + p(d.getResult()) + ", " +
                   n(idx[0]) + ", " + n(g[2]) + ", " + n(idx[1]) + ", " +
                   n(g[0]) + ", " + moeCapacityAndGroups(d, idx[0], g[1]) +
                   ")";
            return success();
          })
          .Case([&](CombineGradOp c) {
            auto e = shapeOf(c.getExpertOutput());
            auto idx = shapeOf(c.getIndices());
            call = "braid_k_combine_grad(rt, " +
                   dtypeName(c.getExpertOutput().getType()) + ", " +
                   p(c.getExpertOutput()) + ", " + p(c.getWeights()) +
                   ", static_cast<const int32_t *>(" + p(c.getIndices()) +
                   "), " + p(c.getGrad()) + ", " + p(c.getDexpertOutput()) +
                   ", " + p(c.getDweights()) + ", " + n(idx[0]) + ", " +
                   n(e[2]) + ", " + n(idx[1]) + ", " + n(e[0]) + ", " +
                   moeCapacityAndGroups(c, idx[0], e[1]) + ")";
            return success();
          })
          .Case([&](ConvertOp c) {
            call = "braid_k_convert(rt, " + dtypeName(c.getInput().getType()) +
                   ", " + dtypeName(c.getType()) + ", " + p(c.getInput()) +
                   ", " + p(c.getResult()) + ", " +
                   n(numElements(c.getResult())) + ")";
            return success();
          })
          // Optimizer.
          .Case([&](SumSquaresOp q) {
            std::string out = "static_cast<float *>(" + p(q.getResult()) + ")";
            call = "braid_k_zero(rt, BRAID_F32, " + p(q.getResult()) + ", 1)";
            for (Value in : q.getInputs())
              call += ";\n  braid_k_sum_squares(rt, " + dtypeName(in.getType()) +
                      ", " + p(in) + ", " + out + ", " + n(numElements(in)) + ")";
            return success();
          })
          .Case([&](ClipCoefficientOp c) {
            call = "braid_k_clip_coefficient(rt, static_cast<const float *>(" +
                   p(c.getSumsq()) + "), static_cast<float *>(" +
                   p(c.getResult()) + "), " +
                   literal(c.getMaxNorm().convertToDouble()) + ")";
            return success();
          })
          .Case([&](IncrementOp i) {
            call = "braid_k_increment(rt, static_cast<float *>(" +
                   symbol(i.getCounter()) + "))";
            return success();
          })
          .Case<SGDUpdateOp, AdamWUpdateOp>([&](auto u) -> LogicalResult {
            // The whole parameter, or (ZeRO, an offset and a range) the
            // range [offset, offset + range) of its flat elements, from the
            // gradient's same range when the gradient is whole.
            std::string param = symbol(u.getParam()), grad = p(u.getGrad());
            int64_t count = numElements(u.getGrad());
            if (Value offset = u.getOffset()) {
              FailureOr<std::string> at = indexExpr(offset);
              if (failed(at))
                return failure();
              auto ptype = SymbolTable::lookupNearestSymbolFrom<ParamOp>(
                               u, u.getParamAttr())
                               .getTensorType();
              int64_t range = *u.getRange();
              param = "advance(" + param + ", " + *at + " * " +
                      n(getElementBytes(ptype.getElementType())) + ")";
              if (count != range)
                grad = "advance(" + grad + ", " + *at + " * " +
                       n(getElementBytes(getElementTypeOrSelf(u.getGrad().getType()))) +
                       ")";
              count = range;
            }
            std::string coef =
                "static_cast<const float *>(" + p(u.getCoef()) + ")";
            std::string dt = dtypeName(u.getGrad().getType());
            if constexpr (std::is_same_v<decltype(u), SGDUpdateOp>) {
              call = "braid_k_sgd_update(rt, " + dt + ", " + param + ", " +
                     grad + ", " + coef + ", " + n(count) + ", " +
                     literal(u.getLr().convertToDouble()) + ", " +
                     literal(u.getWeightDecay().convertToDouble()) + ")";
            } else {
              call = "braid_k_adamw_update(rt, " + dt + ", " + param + ", " +
                     grad + ", static_cast<float *>(" + symbol(u.getM()) +
                     "), static_cast<float *>(" + symbol(u.getV()) + "), " +
                     coef + ", static_cast<const float *>(" +
                     symbol(u.getStep()) + "), " + n(count) + ", " +
                     literal(u.getLr().convertToDouble()) + ", " +
                     literal(u.getBeta1().convertToDouble()) + ", " +
                     literal(u.getBeta2().convertToDouble()) + ", " +
                     literal(u.getEps().convertToDouble()) + ", " +
                     literal(u.getWeightDecay().convertToDouble()) + ")";
            }
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
  emitBracketed(op, call, os);
  return success();
}

void FunctionEmitter::emitBracketed(Operation *op, StringRef call,
                                    raw_ostream &os) {
  std::string label = op->getNumResults() ? nameOf(op->getResult(0)) : "";
  os << "  braid_rt_op_begin(rt, "
     << quoted(op->getName().stripDialect()) << ", " << quoted(label)
     << ");\n";
  if (int64_t flops = getForwardCost(op).matmulFlops)
    os << "  braid_rt_op_flops(rt, " << flops << ");\n";
  os << "  " << call << ";\n  braid_rt_op_end(rt);\n";
}

} // namespace braid::cpp
