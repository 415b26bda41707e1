//===- LayerCost.cpp - one layer's cost for one micro-batch on one rank ----===//
//
// The per-op formulas of PlanCost (PlanCost.h): a layer's products, attention
// or scan, memory-bound kernels and the transfers inside it, forward and
// backward, with what it keeps for its backward; and the same for the
// embedding and the output head. PipelineLayout.cpp puts them on pipeline
// stages, PlanCost.cpp into steps.
//
//===----------------------------------------------------------------------===//

#include "braid/Planner/PlanCost.h"

#include "braid/CostModel/CommCost.h"

#include <algorithm>
#include <numeric>

using namespace braid;
using namespace braid::plan;
using cost::TransferKind;

namespace {
/// Forward and backward seconds of one op, accumulated.
struct Timer {
  const cost::Hardware &hw;
  const cost::ComputeCalibration &cal;
  double forward = 0, backward = 0;
  /// The part of `backward` that is weight gradients (what a zero-bubble
  /// schedule defers).
  double weight = 0;

  /// A product of rows x k by k x n (and its two backward products: the
  /// input's gradient and the weight's).
  void gemm(double rows, double n, double k, double batch = 1) {
    forward += cal.gemmSeconds(hw, rows, n, k, batch);
    double dw = cal.gemmSeconds(hw, k, n, rows, batch);
    backward += cal.gemmSeconds(hw, rows, k, n, batch) + dw;
    weight += dw;
  }
  /// A memory-bound op moving `bytes` forward (backward: twice as many).
  void memory(double bytes) {
    forward += cal.memorySeconds(hw, bytes);
    backward += 2 * cal.memorySeconds(hw, bytes);
  }
};
} // namespace

/// Builds one layer's costs for one micro-batch on one rank: its mixer, then
/// its feed-forward block, then what the recompute policy keeps and redoes.
/// The blocks share the timer, the tp collectives' totals and the bytes kept
/// for the backward, each adding to them in the layer's order.
class PlanCost::LayerCostBuilder {
public:
  LayerCostBuilder(PlanCost &cost, const Plan &p, Recompute rc)
      : cost(cost), m(cost.m), rt(cost.rt), p(p), rc(rc), h(m.hidden), t(p.tp), s(m.seq),
        sp(p.sequenceParallel && p.tp > 1), T(double(p.microBatch) * s / p.cp),
        Te(sp ? T / t : T), tpNodes(cost.nodesOf(p, {4})), timer{cost.hw, cost.cal} {}

  void addAttention();
  void addMamba2();
  void addMamba();
  void addDenseFfn();
  void addMoE();
  /// The layer's costs under the recompute policy, with its parameters.
  LayerCost finish(LayerShape shape);

private:
  PlanCost &cost;
  const ModelShape &m;
  const Runtime &rt;
  const Plan &p;
  const Recompute rc;
  const double h, t, s;
  const bool sp;
  const double T;  ///< tokens on a rank
  const double Te; ///< ... of elementwise ops
  const int64_t tpNodes;
  static constexpr double act = 2; ///< bf16 activations
  Timer timer;
  LayerCost c;
  double attentionForward = 0, attentionBackward = 0; ///< what selective recomputes
  double tpFwd = 0, tpBwd = 0, tpExposedFwd = 0, tpExposedBwd = 0;

  void tpBlock(double gemmFwd, double gemmBwd);
  double tpExposed(const std::vector<double> &coll, double gemms) const;
  void norm();
  void contextRing(double kvl, double d);
  void expertDispatch(double received);
};

PlanCost::LayerCost PlanCost::layerCost(LayerShape shape, const Plan &p, Recompute rc) {
  LayerCostBuilder layer(*this, p, rc);
  if (shape.mixer == Mixer::Attention)
    layer.addAttention();
  else if (shape.mixer == Mixer::Mamba2)
    layer.addMamba2();
  else if (shape.mixer == Mixer::Mamba)
    layer.addMamba();
  if (shape.ffn == Ffn::Dense)
    layer.addDenseFfn();
  else if (shape.ffn == Ffn::MoE)
    layer.addMoE();
  return layer.finish(shape);
}

// The tp collectives around a block whose first product takes the gathered
// input and whose last one produces partial sums; `gemmFwd` and `gemmBwd`:
// the block's products, which collective matmuls overlap.
void PlanCost::LayerCostBuilder::tpBlock(double gemmFwd, double gemmBwd) {
  if (p.tp == 1)
    return;
  double bytes = T * h * act;
  double fwd, bwd;
  std::vector<double> fwdColl, bwdColl;
  if (sp) {
    double ag = cost.transfer(TransferKind::AllGather, bytes, p.tp, tpNodes);
    double rs = cost.transfer(TransferKind::ReduceScatter, bytes, p.tp, tpNodes);
    fwdColl = {ag, rs};
    // The output's gradient, the input's, and the input gathered again
    // unless the forward's gathered copy was kept.
    bwdColl = {ag, rs};
    if (rt.keepsGatheredInputs)
      c.savedBytes += bytes;
    else
      bwdColl.push_back(ag);
  } else {
    double ar = cost.transfer(TransferKind::AllReduce, bytes, p.tp, tpNodes);
    fwdColl = {ar};
    bwdColl = {ar};
  }
  fwd = bwd = 0;
  for (double x : fwdColl)
    fwd += x;
  for (double x : bwdColl)
    bwd += x;
  tpFwd += fwd;
  tpBwd += bwd;
  tpExposedFwd += tpExposed(fwdColl, gemmFwd);
  tpExposedBwd += tpExposed(bwdColl, gemmBwd);
}

double PlanCost::LayerCostBuilder::tpExposed(const std::vector<double> &coll,
                                             double gemms) const {
  if (!rt.overlapTensorParallel)
    return std::accumulate(coll.begin(), coll.end(), 0.0);
  // A ring of tp steps hides each step's transfer behind the previous
  // chunk's product, all but the first; a chunk's product is 1/tp of the
  // block's products shared among its collectives.
  double e = 0, share = gemms / coll.size();
  for (double x : coll)
    e += std::min(x, x / t + std::max(0.0, (x - share) * (t - 1) / t) +
                         (t - 1) * cost.hw.collectiveLatency);
  return e;
}

void PlanCost::LayerCostBuilder::norm() {
  timer.memory(Te * h * act * 2);
  // Its input (the backward recomputes the statistics from it) and its
  // output, the next product's input, unless that product keeps the
  // gathered copy instead (sequence parallelism where the runtime keeps
  // gathered inputs: tpBlock counts it; Braid's memory plan of Llama 3 8B
  // on dp2 x tp4 keeps no sequence-sharded norm output).
  c.savedBytes += Te * h * act;
  if (!(sp && rt.keepsGatheredInputs))
    c.savedBytes += Te * h * act;
}

void PlanCost::LayerCostBuilder::addAttention() {
  double ql = m.heads / t, kvl = m.kvHeads >= p.tp ? m.kvHeads / t : 1, d = m.headDim;
  norm();
  double f0 = timer.forward, b0 = timer.backward;
  timer.gemm(T, (ql + 2 * kvl) * d, h);
  timer.memory(T * (ql + kvl) * d * act * 2); // rope on q and k
  double gemmF = timer.forward - f0, gemmB = timer.backward - b0;
  c.savedBytes += T * (ql + 2 * kvl) * d * act;
  // The causal products: each query meets on average half the sequence.
  double coreFlops = 4.0 * T * (s / 2) * ql * d;
  if (rt.flashAttention) {
    attentionForward = cost.cal.flashSeconds(cost.hw, coreFlops, false);
    attentionBackward = cost.cal.flashSeconds(cost.hw, 2.5 * coreFlops, true);
    // The output (the projection's input) and, unless the backward
    // recomputes it, the log-sum-exp.
    c.savedBytes += T * ql * d * act + (rt.attentionRecomputesStats ? 0 : T * ql * 4);
  } else {
    // Scores materialized (the whole square: the mask is applied to it),
    // softmax and dropout on them, then the values.
    double rows = s / p.cp, batch = p.microBatch * ql;
    Timer core{cost.hw, cost.cal};
    core.gemm(rows, s, d, batch);
    core.gemm(rows, d, s, batch);
    core.memory(batch * rows * s * act * 3);
    attentionForward = core.forward;
    attentionBackward = core.backward;
    c.savedBytes += batch * rows * s * 5 + T * ql * d * act; // probs, mask, dropped
  }
  timer.forward += attentionForward;
  timer.backward += attentionBackward;
  double f1 = timer.forward, b1 = timer.backward;
  timer.gemm(T, h, ql * d);
  gemmF += timer.forward - f1;
  gemmB += timer.backward - b1;
  timer.memory(Te * h * act * 3); // residual add (and bias, dropout)
  if (!rt.flashAttention)
    c.savedBytes += Te * h; // dropout mask
  tpBlock(gemmF, gemmB);
  if (p.cp > 1)
    contextRing(kvl, d);
}

// The ring: cp - 1 shifts of this rank's keys and values, each behind the
// attention of the block in hand; backward shifts them again with their
// gradients.
void PlanCost::LayerCostBuilder::contextRing(double kvl, double d) {
  int64_t cpNodes = cost.nodesOf(p, {3}) > 1 ? 2 : 1;
  double step = cost.transfer(TransferKind::PointToPoint, T * 2 * kvl * d * act, 2, cpNodes);
  double fwd = (p.cp - 1) * step, bwd = 2 * fwd;
  c.comm[size_t(CommKind::CP)] += fwd + bwd;
  double fe = fwd, be = bwd;
  if (rt.overlapContextRing) {
    fe = (p.cp - 1) * std::max(0.0, step - attentionForward / p.cp);
    be = (p.cp - 1) * std::max(0.0, 2 * step - attentionBackward / p.cp);
  }
  c.exposedComm[size_t(CommKind::CP)] += fe + be;
  if (rc == Recompute::Full) {
    c.comm[size_t(CommKind::CP)] += fwd;
    c.exposedComm[size_t(CommKind::CP)] += fe;
  }
}

// Megatron's Mamba-2 under tp: in_proj column-parallel (heads and groups
// split), out_proj row-parallel, the scan local to a rank's heads.
void PlanCost::LayerCostBuilder::addMamba2() {
  double e = m.dInner() / t, g = double(m.nGroups) / t, n = m.dState;
  double heads = double(m.mambaHeads) / t, hp = m.mambaHeadDim, q = m.chunk;
  double xbc = e + 2 * g * n;
  norm();
  double f0 = timer.forward, b0 = timer.backward;
  timer.gemm(T, 2 * e + 2 * g * n + heads, h); // in_proj: z, x, B, C, dt
  // conv1d and silu, one kernel (causal_conv1d: its input read once, the
  // taps from on-chip memory, its output written once).
  timer.memory(T * xbc * act * 2);
  // The chunked scan's products, batched over chunks and heads (groups).
  double chunks = T / q;
  timer.gemm(q, q, n, chunks * g);            // C B^T
  timer.gemm(q, hp, q, chunks * heads);       // (L o C B^T) x
  timer.gemm(n, hp, q, chunks * heads);       // states B^T x
  timer.gemm(q, hp, n, chunks * heads);       // C times the states
  // What the scan's kernels (mamba_ssm's ssd_combined, which Megatron-LM's
  // and NeMo AutoModel's Mamba-2 run) move besides their operands: C B^T
  // per chunk and group, written and read in bf16, and the chunks' states,
  // written in f32 by the chunk-state kernel, read by the state passing,
  // which writes them in bf16 for the chunk scan to read. The decay mask
  // L is made in registers, never stored.
  double states = chunks * heads * hp * n;
  timer.memory(T * g * q * act * 2 + states * (4 + 4 + 2 + 2));
  timer.memory(T * e * act * 3);              // gated norm
  timer.gemm(T, h, e);                        // out_proj
  timer.memory(Te * h * act * 3);
  double gemmF = timer.forward - f0, gemmB = timer.backward - b0;
  c.savedBytes += T * (2 * e + 2 * g * n + heads + xbc + 2 * e) * act;
  tpBlock(gemmF, gemmB);
}

void PlanCost::LayerCostBuilder::addMamba() {
  double e = m.dInner() / t, r = m.dtRank, n = m.dState;
  norm();
  double f0 = timer.forward, b0 = timer.backward;
  timer.gemm(T, 2 * e, h);                  // in_x, in_z
  timer.memory(T * e * act * (2 + m.dConv)); // conv, silu
  timer.gemm(T, r + 2 * n, e);              // x_dt, x_B, x_C: partial sums over tp
  timer.gemm(T, e, r);                      // dt_proj
  double scanFlops = T * e * (8 * n + 5), scanBytes = T * (5 * e + 2 * n) * act;
  double scan = cost.cal.scanSeconds(cost.hw, scanFlops, scanBytes);
  timer.forward += scan;
  timer.backward += 2 * scan;
  timer.memory(T * e * act * 3);            // gate
  timer.gemm(T, h, e);                      // out_proj
  timer.memory(Te * h * act * 3);
  double gemmF = timer.forward - f0, gemmB = timer.backward - b0;
  c.savedBytes += T * (7 * e + r + 2 * n) * act;
  tpBlock(gemmF, gemmB);
  if (p.tp > 1) {
    double ar = cost.transfer(TransferKind::AllReduce, T * (r + 2 * n) * act, p.tp, tpNodes);
    tpFwd += ar;
    tpBwd += ar;
    tpExposedFwd += ar;
    tpExposedBwd += ar;
  }
}

void PlanCost::LayerCostBuilder::addDenseFfn() {
  double f = m.ffn / t;
  norm();
  double f0 = timer.forward, b0 = timer.backward;
  timer.gemm(T, (m.gated ? 2 : 1) * f, h);
  timer.memory(T * f * act * (m.gated ? 3 : 2));
  timer.gemm(T, h, f);
  double gemmF = timer.forward - f0, gemmB = timer.backward - b0;
  timer.memory(Te * h * act * 3);
  c.savedBytes += T * f * act * (m.gated ? 3 : 2) + (rt.flashAttention ? 0 : Te * h);
  tpBlock(gemmF, gemmB);
}

void PlanCost::LayerCostBuilder::addMoE() {
  const bool folded = rt.foldedExperts;
  double f = folded ? m.ffn : m.ffn / t, E = m.experts;
  // Slots per rank: k choices per token, padded to capacity; folded, the
  // tokens are the sequence-sharded ones.
  double tokens = folded ? Te : T;
  double slots = m.capacityFactor * m.topK * tokens;
  norm();
  double f0 = timer.forward, b0 = timer.backward;
  timer.gemm(tokens, E, h); // router
  // The tokens permuted to their experts' rows and back. Dispatched once
  // per rank (DeepEP), a rank permutes the copies it received into a row
  // per chosen expert and sums them back after the experts (Megatron's
  // permute / unpermute after fused_dispatch, which NeMo AutoModel runs
  // too); otherwise the slots are permuted before the all-to-all and
  // after it, each way.
  double received = tokens * cost.dispatchCopies(p.ep);
  timer.memory(2 * (received + slots) * h * act);
  double local = E / p.ep, perExpert = slots / local; // after the all-to-all
  double e0 = timer.forward, eb0 = timer.backward;
  timer.gemm(perExpert, (m.gated ? 2 : 1) * f, h, local);
  timer.memory(slots * f * act * (m.gated ? 3 : 2));
  timer.gemm(perExpert, h, f, local);
  // A dispatch that makes the host wait for the device (the tokens each
  // expert receives decide the kernels' shapes) leaves the device idle
  // while the host launches the experts' kernels one by one: forward an
  // fc1 and an fc2 product per local expert, backward each one's input
  // and weight gradients. Small experts' products finish before the next
  // is launched (Megatron's MoE guide: "CPU Overhead Bottleneck ...
  // Decrease TP size or increase micro-batch size").
  if (rt.moeHostSync) {
    double calls = rt.groupedExpertCalls ? 1 : local;
    double hostF = 2 * calls * rt.hostKernelSeconds, hostB = 2 * hostF;
    timer.forward += std::max(0.0, hostF - (timer.forward - e0));
    timer.backward += std::max(0.0, hostB - (timer.backward - eb0));
  }
  // An expert every token passes through (sharded over tp as a dense
  // MLP; folded, over the expert grid's tp of 1: whole).
  if (m.sharedFfn) {
    double sf = folded ? m.sharedFfn : m.sharedFfn / t;
    timer.gemm(tokens, (m.gated ? 2 : 1) * sf, h);
    timer.memory(tokens * sf * act * (m.gated ? 3 : 2));
    timer.gemm(tokens, h, sf);
    c.savedBytes += tokens * sf * act * (m.gated ? 3 : 2);
  }
  double gemmF = timer.forward - f0, gemmB = timer.backward - b0;
  timer.memory(Te * h * act * 3);
  c.savedBytes += tokens * E * 4 + slots * h * act * 2 + slots * f * act * (m.gated ? 3 : 2);
  if (!folded)
    tpBlock(gemmF, gemmB);
  if (p.ep > 1)
    expertDispatch(received);
}

// The all-to-alls over ep: what a rank sends is its slots, or, dispatched
// once per rank, a copy of a token for each rank holding one of its experts
// (`received` tokens either way).
void PlanCost::LayerCostBuilder::expertDispatch(double received) {
  int64_t nodes = rt.foldedExperts ? (p.ep + cost.hw.devicesPerNode - 1) / cost.hw.devicesPerNode
                                   : cost.nodesOf(p, {2});
  double a2a = cost.transfer(TransferKind::AllToAll, received * h * act, p.ep, nodes);
  double fwd = 2 * a2a, bwd = 2 * a2a; // dispatch and combine
  c.comm[size_t(CommKind::EP)] += fwd + bwd + (rc == Recompute::Full ? fwd : 0);
  c.exposedComm[size_t(CommKind::EP)] += fwd + bwd + (rc == Recompute::Full ? fwd : 0);
}

PlanCost::LayerCost PlanCost::LayerCostBuilder::finish(LayerShape shape) {
  c.forward = timer.forward;
  c.backward = timer.backward;
  c.weight = timer.weight;
  c.comm[size_t(CommKind::TP)] = tpFwd + tpBwd;
  c.exposedComm[size_t(CommKind::TP)] = tpExposedFwd + tpExposedBwd;
  double full = c.savedBytes;
  c.workingBytes = full;
  switch (rc) {
  case Recompute::None:
    break;
  case Recompute::Selective:
    if (rt.opSelectiveCheckpoint && shape.mixer == Mixer::Attention &&
        shape.ffn == Ffn::Dense) {
      cost.opSelective(c, p, attentionForward);
      break;
    }
    c.recompute = attentionForward;
    if (!rt.flashAttention && shape.mixer == Mixer::Attention)
      c.savedBytes -= p.microBatch * (m.heads / t) * (s / p.cp) * s * 5;
    break;
  case Recompute::Full:
    c.recompute = c.forward;
    c.comm[size_t(CommKind::TP)] += tpFwd;
    c.exposedComm[size_t(CommKind::TP)] += tpExposedFwd;
    c.savedBytes = Te * h * act; // the layer's input
    break;
  }
  c.expertParameters = m.layerExpertParameters(shape) / ((rt.foldedExperts ? 1 : t) * p.ep);
  c.parameters = (m.layerParameters(shape) - m.layerExpertParameters(shape)) / t;
  return c;
}

void PlanCost::opSelective(LayerCost &c, const Plan &p, double attentionForward) {
  const double h = m.hidden, t = p.tp, f = m.ffn / t, act = 2;
  const double T = double(p.microBatch) * m.seq / p.cp;
  const bool sp = p.sequenceParallel && p.tp > 1;
  const double Te = sp ? T / t : T;
  const double ql = m.heads / t, kvl = m.kvHeads >= p.tp ? m.kvHeads / t : 1, d = m.headDim;
  // The block's products in forward order, each as (output columns, inner
  // dimension) over T rows.
  std::vector<std::pair<double, double>> products = {
      {ql * d, h}, {kvl * d, h}, {kvl * d, h}, {h, ql * d}, {f, h}};
  if (m.gated)
    products.push_back({f, h});
  products.push_back({h, f});
  double saved = Te * h * act;                  // the block's input
  saved += T * ql * d * act + T * ql * 4;       // attention's output and log-sum-exp
  if (sp)
    saved += 2 * Te * h * act;                  // the reduce-scatters' outputs
  double productSeconds = 0, recomputed = 0;
  for (size_t i = 0; i < products.size(); ++i) {
    auto [n, k] = products[i];
    double seconds = cal.gemmSeconds(hw, T, n, k);
    productSeconds += seconds;
    if (i % 2 == 0)
      saved += T * n * act; // the first, third, ... product
    else
      recomputed += seconds;
  }
  c.savedBytes = saved;
  // The products not kept, and every memory-bound op (norms, rotary
  // embedding, the gate's activation), run again; attention does not.
  c.recompute = recomputed + std::max(0.0, c.forward - productSeconds - attentionForward);
}

PlanCost::LayerCost PlanCost::outerCost(const Plan &p, bool first, bool last) {
  LayerCost c;
  const double h = m.hidden, t = p.tp, V = m.vocab;
  const bool sp = p.sequenceParallel && p.tp > 1;
  const double T = double(p.microBatch) * m.seq / p.cp, Te = sp ? T / t : T, act = 2;
  const int64_t tpNodes = nodesOf(p, {4});
  Timer timer{hw, cal};
  double tp = 0;
  if (first) {
    // The vocabulary-parallel lookup and its reduction over tp.
    timer.memory(T * h * act * 2);
    c.parameters += V * h / t + (m.learnedPositions ? m.seq * h : 0);
    if (p.tp > 1)
      tp += 2 * transfer(sp ? TransferKind::ReduceScatter : TransferKind::AllReduce,
                         T * h * act, p.tp, tpNodes);
  }
  if (last) {
    timer.memory(Te * h * act * 2); // final norm
    timer.gemm(T, V / t, h);
    // The loss over f32 logits: written, read for the softmax, its gradient.
    timer.memory(T * V / t * rt.logitBytes * 3);
    c.parameters += (m.layerNorm ? 2 : 1) * h;
    if (!m.tiedEmbeddings || !first)
      c.parameters += V * h / t;
    // The final norm's input and output, or with an upcasting norm its
    // input in f32, the normalized value and the output.
    c.savedBytes += rt.normKeepsUpcast ? Te * h * (4 + 2 * act) : Te * h * act * 2;
    if (p.tp > 1)
      tp += 2 * transfer(sp ? TransferKind::AllGather : TransferKind::AllReduce,
                         T * h * act, p.tp, tpNodes) +
            transfer(TransferKind::AllReduce, T * 4 * 2, p.tp, tpNodes);
  }
  c.forward = timer.forward;
  c.backward = timer.backward;
  c.weight = timer.weight;
  c.comm[size_t(CommKind::TP)] = c.exposedComm[size_t(CommKind::TP)] = tp;
  if (p.recompute == Recompute::Full)
    c.recompute = 0; // the embedding and the head are not recomputed
  return c;
}
