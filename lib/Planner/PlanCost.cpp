//===- PlanCost.cpp - the step time and memory of a parallel plan ---------===//

#include "braid/Planner/PlanCost.h"

#include "braid/CostModel/CommCost.h"
#include "dialects/braid/Analysis/PipelineSchedule.h"

#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/Hashing.h"

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace braid;
using namespace braid::plan;
using cost::TransferKind;

const char *braid::plan::commKindName(CommKind kind) {
  static const char *names[] = {"tp", "cp", "ep", "pp", "dp", "zero-gather"};
  return names[size_t(kind)];
}

std::string Plan::gridString() const {
  std::string s;
  auto add = [&](const char *axis, int64_t size) {
    if (size > 1)
      s += (s.empty() ? "" : ",") + std::string(axis) + "=" + std::to_string(size);
  };
  add("pp", pp);
  add("dp", dp);
  add("ep", ep);
  add("cp", cp);
  add("tp", tp);
  return s.empty() ? "dp=1" : s;
}

PlanCost::PlanCost(ModelShape model, cost::Hardware hw,
                   cost::ComputeCalibration calibration, Runtime runtime)
    : m(std::move(model)), hw(std::move(hw)), cal(std::move(calibration)),
      rt(std::move(runtime)) {
  forwardFlopsPerToken = m.forwardMatmulFlopsPerToken();
  for (LayerShape s : m.layerShapes) {
    auto it = std::find(shapes.begin(), shapes.end(), s);
    shapeOf.push_back(int(it - shapes.begin()));
    if (it == shapes.end())
      shapes.push_back(s);
  }
}

double PlanCost::transfer(TransferKind kind, double bytes, int64_t ranks, int64_t nodes) const {
  if (ranks <= 1 || bytes <= 0)
    return 0;
  cost::Transfer t;
  t.kind = kind;
  t.ranks = ranks;
  t.nodes = nodes;
  t.bytes = bytes;
  t.narrowRing = rt.narrowRings;
  return cost::estimate(t, hw).seconds;
}

int64_t PlanCost::nodesOf(const Plan &plan, llvm::ArrayRef<int> axes) {
  // Ranks row-major over (pp, dp, ep, cp, tp), tp fastest.
  // Memoized: nodesSpanned walks the group's ranks.
  uint64_t key = llvm::hash_combine(plan.pp, plan.dp, plan.ep, plan.cp, plan.tp,
                                    llvm::hash_combine_range(axes.begin(), axes.end()));
  auto [it, inserted] = nodesMemo.try_emplace(key, 0);
  if (inserted) {
    int64_t sizes[] = {plan.pp, plan.dp, plan.ep, plan.cp, plan.tp};
    llvm::SmallVector<int64_t> a(axes.begin(), axes.end());
    it->second = cost::nodesSpanned(sizes, a, hw.devicesPerNode);
  }
  return it->second;
}

std::string PlanCost::check(const Plan &p) const {
  if (p.dp < 1 || p.ep < 1 || p.cp < 1 || p.tp < 1 || p.pp < 1 || p.vpp < 1 ||
      p.microBatch < 1 || p.microbatches < 1)
    return "every axis, the micro-batch and the micro-batch count must be >= 1";
  if (p.zero < 0 || p.zero > 3)
    return "ZeRO stage must be 0, 1, 2 or 3";
  if (p.zeroBubble && (p.pp == 1 || p.vpp > 1))
    return "ZB-H1 needs a pipeline (pp > 1) without virtual stages";
  if (p.zeroBubble && !rt.zeroBubbleSchedule)
    return "the runtime " + rt.name + " has no ZB-H1 schedule";
  bool attention = false, mamba = false, moe = false;
  for (LayerShape s : shapes) {
    attention |= s.mixer == Mixer::Attention;
    mamba |= s.mixer == Mixer::Mamba || s.mixer == Mixer::Mamba2;
    moe |= s.ffn == Ffn::MoE;
  }
  if (attention && (m.heads % p.tp || (m.kvHeads % p.tp && p.tp % m.kvHeads)))
    return "tp=" + std::to_string(p.tp) + " does not divide the " +
               std::to_string(m.heads) + " heads (or the kv heads)";
  if (m.ffn && m.ffn % p.tp)
    return "tp=" + std::to_string(p.tp) + " does not divide ffn " + std::to_string(m.ffn);
  if (mamba && m.dInner() % p.tp)
    return "tp=" + std::to_string(p.tp) + " does not divide d_inner";
  if (mamba && m.mambaHeads && (m.mambaHeads % p.tp || m.nGroups % p.tp))
    return "tp=" + std::to_string(p.tp) + " does not divide Mamba-2's heads and groups";
  if (p.tp > hw.devicesPerNode)
    return "tp=" + std::to_string(p.tp) + " spans more than a node";
  if (m.seq % (p.cp > 1 ? 2 * p.cp : 1))
    return "cp=" + std::to_string(p.cp) + ": the sequence splits into 2 * cp blocks";
  if (p.cp > 1 && mamba)
    return "cp over a Mamba layer's scan is not modelled";
  if (p.ep > 1 && (!moe || m.experts % p.ep))
    return "ep=" + std::to_string(p.ep) + " does not divide the experts";
  int64_t chunks = p.pp * p.vpp;
  if (chunks > m.layers)
    return "pp * virtual stages exceeds the layers";
  if (p.vpp > 1 && (p.pp < 2 || p.microbatches % p.pp))
    return "virtual stages need pp > 1 and micro-batches divisible by pp";
  if (p.pp > 1 && p.microbatches < p.pp)
    return "fewer micro-batches than pipeline stages";
  if (p.sequenceParallel && p.tp > 1 && (p.microBatch * m.seq / p.cp) % p.tp)
    return "sequence parallelism needs the tokens of a micro-batch divisible by tp";
  if (!p.layout.empty()) {
    if (int64_t(p.layout.size()) != chunks)
      return "the layout has " + std::to_string(p.layout.size()) + " chunks, not pp * "
                 "virtual stages = " + std::to_string(chunks);
    int64_t sum = 0;
    for (int64_t l : p.layout) {
      if (l < 1)
        return "every chunk of the layout holds a layer";
      sum += l;
    }
    if (sum != m.layers)
      return "the layout holds " + std::to_string(sum) + " layers, the model " +
                 std::to_string(m.layers);
  }
  return "";
}

const std::vector<PlanCost::LayerCost> &PlanCost::layerCosts(const Plan &p) {
  uint64_t key = llvm::hash_combine(p.tp, p.cp, p.ep, p.microBatch, int(p.recompute),
                                    p.sequenceParallel);
  auto [it, inserted] = layerMemo.try_emplace(key);
  if (inserted)
    for (LayerShape s : shapes)
      it->second.push_back(layerCost(s, p, p.recompute));
  return it->second;
}

Estimate PlanCost::estimate(const Plan &plan) { return evaluate(plan, false); }

Estimate PlanCost::simulate(const Plan &p) {
  Estimate est = evaluate(p, false);
  if (!est.valid || p.pp == 1)
    return est;
  const Pipeline &pl = pipeline(p);
  // The simulator reports through MLIR diagnostics; the plan was checked, so
  // an error here is the simulator's (left as the closed form).
  mlir::MLIRContext context;
  mlir::Location loc = mlir::UnknownLoc::get(&context);
  mlir::braid::ScheduleKind kind = p.schedule();
  mlir::FailureOr<mlir::braid::PipelineSchedule> schedule =
      mlir::braid::buildSchedule(kind, p.pp, p.vpp, p.microbatches, loc);
  if (mlir::failed(schedule))
    return est;
  mlir::braid::ChunkTimes times;
  times.forward.assign(pl.chunkForward.begin(), pl.chunkForward.end());
  times.backward.assign(pl.chunkBackward.begin(), pl.chunkBackward.end());
  times.weight.assign(pl.chunkForward.size(), 0.0);
  // ZB-H1 runs a chunk's weight gradients as their own action (W).
  if (p.zeroBubble)
    for (size_t c = 0; c < times.weight.size(); ++c) {
      times.weight[c] = pl.chunkWeight[c];
      times.backward[c] -= pl.chunkWeight[c];
    }
  // A send between stages delays what depends on it; a runtime that waits
  // for its sends where they are issued also stands still for each, which
  // the closed form's term keeps counting.
  times.comm = est.sendSeconds;
  mlir::FailureOr<mlir::braid::PipelineSimulation> sim =
      mlir::braid::simulateSchedule(*schedule, times, loc, /*keepTimelines=*/false);
  if (mlir::failed(sim))
    return est;
  // The step: the simulated pipeline instead of the closed form's, which
  // was the compute, recompute, in-layer exposure and bubble.
  double closedForm = est.computeSeconds + est.recomputeSeconds + est.bubbleSeconds;
  for (CommKind k : {CommKind::TP, CommKind::CP, CommKind::EP})
    closedForm += est.exposed[size_t(k)];
  double other = est.stepSeconds - closedForm;
  if (rt.overlapPipelineSends)
    other -= est.exposed[size_t(CommKind::PP)];
  // What the chunk times hold: the gradient accumulation's adds are not in
  // them, and run beside the pipeline's actions.
  double busy = est.computeSeconds - est.accumulationSeconds + est.recomputeSeconds;
  for (CommKind k : {CommKind::TP, CommKind::CP, CommKind::EP})
    busy += est.exposed[size_t(k)];
  est.bubbleSeconds = std::max(0.0, sim->makespan - busy);
  if (rt.overlapPipelineSends)
    est.exposed[size_t(CommKind::PP)] = 0; // inside the makespan now
  est.stepSeconds = sim->makespan + est.accumulationSeconds + other;
  // Activations: each rank's most chunk-micro-batches in flight at once,
  // each keeping its chunk's bytes (the closed form assumed the warm-up
  // count of the schedule).
  double worst = 0;
  for (int64_t r = 0; r < p.pp; ++r) {
    double perChunk = 0;
    int64_t count = 0;
    for (size_t c = size_t(r); c < pl.chunkSaved.size(); c += size_t(p.pp), ++count)
      perChunk += pl.chunkSaved[c];
    perChunk /= std::max<int64_t>(1, count);
    worst = std::max(worst, double(sim->peakLive[size_t(r)]) * perChunk);
  }
  // The closed form's in-flight part replaced; its working set (one
  // layer's) kept.
  est.placePeak(worst + est.activationWorkingBytes);
  est.fits = est.memoryBytes() <= hw.memoryBytes;
  est.mfu = est.modelFlops / (est.stepSeconds * p.gpus() * hw.peakBf16Flops);
  est.tokensPerSecond = double(p.globalBatch()) * m.seq / est.stepSeconds;
  est.simulated = true;
  return est;
}
Estimate PlanCost::memory(const Plan &plan) { return evaluate(plan, true); }

Estimate PlanCost::evaluate(const Plan &p, bool memoryOnly) {
  Estimate est;
  est.invalidReason = check(p);
  if (!est.invalidReason.empty())
    return est;
  est.valid = true;
  const int64_t M = p.microbatches;
  const Pipeline &pl = pipeline(p);
  const std::vector<LayerCost> &costs = layerCosts(p);
  const std::vector<Stage> &stages = pl.stages;
  est.layout = pl.layout;
  est.layerActivationBytes = costs[0].savedBytes;
  if (m.experts && p.ep > 1)
    est.epCopiesPerToken = dispatchCopies(p.ep);
  estimateMemory(est, p, stages);
  if (memoryOnly)
    return est;

  double pipelineSeconds = 0;
  const Stage &sl = estimatePipeline(est, p, stages, pipelineSeconds);
  // Gradient accumulation by a separate add per micro-batch.
  double stageParams = sl.params + sl.expertParams;
  if (!rt.fusedGradAccumulation && M > 1) {
    est.accumulationSeconds = (M - 1) * cal.memorySeconds(hw, stageParams * rt.gradBytes * 3);
    est.computeSeconds += est.accumulationSeconds;
  }
  if (p.pp > 1)
    estimatePipelineSends(est, p);
  estimateDataParallel(est, p, stages[0], sl, costs);

  // The optimizer: Adam reads and writes every weight, gradient and moment
  // of its shard (about 32 bytes per parameter).
  double updated = p.zero >= 1
                       ? sl.params / denseReplicas(p) + sl.expertParams / expertReplicas(p)
                       : stageParams;
  est.optimizerSeconds = cal.memorySeconds(hw, updated * 32);

  est.stepSeconds = pipelineSeconds + est.exposed[size_t(CommKind::PP)] +
                    est.exposed[size_t(CommKind::DP)] +
                    est.exposed[size_t(CommKind::ZeroGather)] + est.optimizerSeconds +
                    (est.computeSeconds - M * (sl.forward + sl.backward));
  double tokens = double(p.globalBatch()) * m.seq;
  est.modelFlops = 3 * forwardFlopsPerToken * tokens;
  est.mfu = est.modelFlops / (est.stepSeconds * p.gpus() * hw.peakBf16Flops);
  est.tokensPerSecond = tokens / est.stepSeconds;
  return est;
}

/// What one pipeline stage holds at its peak, by kind.
struct PlanCost::StageMemory {
  double weights = 0, working = 0, grads = 0, shards = 0, optimizer = 0, logits = 0,
         communication = 0;
  /// Micro-batches whose activations the stage holds at once.
  double inflight = 0;
  /// The steady state's activations, the last backward's, and of both the
  /// working set of the layer running.
  double activations = 0, lastActivations = 0, workingActivations = 0;

  double total() const {
    return weights + working + grads + optimizer + logits + communication +
           std::max(activations, lastActivations + shards);
  }
};

void PlanCost::estimateMemory(Estimate &est, const Plan &p, const std::vector<Stage> &stages) {
  // Memory of each stage; the report is the busiest's.
  double memBest = -1;
  for (int64_t s = 0; s < p.pp; ++s) {
    StageMemory mem = stageMemory(p, stages[s], s);
    double total = mem.total();
    if (total > memBest) {
      memBest = total;
      est.activationWorkingBytes = mem.workingActivations;
      est.communicationBytes = mem.communication;
      est.weightBytes = mem.weights + mem.working;
      est.gradBytes = mem.grads;
      est.optimizerBytes = mem.optimizer;
      est.logitBytes = mem.logits;
      est.lastBackwardActivationBytes = mem.lastActivations;
      est.reducedShardBytes = mem.shards;
      est.shardsCounted = false;
      est.placePeak(mem.activations);
    }
  }
  est.reservedBytes = cal.reservedBytes;
  est.fits = est.memoryBytes() <= hw.memoryBytes;
}

PlanCost::StageMemory PlanCost::stageMemory(const Plan &p, const Stage &st, int64_t s) const {
  const int64_t chunks = p.pp * p.vpp, M = p.microbatches;
  const int64_t dense = denseReplicas(p), expert = expertReplicas(p);
  auto shard = [&](double params, int64_t replicas, bool sharded) {
    return sharded ? params / replicas : params;
  };
  StageMemory mem;
  mem.weights = rt.weightBytes * (shard(st.params, dense, p.zero >= 3) +
                                  shard(st.expertParams, expert, p.zero >= 3));
  // The compute copy: of every weight, or of two layers at a time (with
  // ZeRO-3 those gathered; in a step that casts where it reads, those
  // cast).
  double perLayer = (st.params + st.expertParams) / std::max<int64_t>(1, st.layers);
  bool perLayerCopies = p.zero >= 3 || rt.castsWeightsPerUse;
  mem.working =
      rt.workingCopyBytes * (perLayerCopies ? 2 * perLayer : st.params + st.expertParams);
  if (p.zero >= 3 && rt.workingCopyBytes == 0)
    mem.working = rt.weightBytes * 2 * perLayer;
  bool shardedSum = p.zero >= 3 || (p.zero == 2 && (M == 1 || !rt.wholeGradientSum));
  mem.grads = rt.gradBytes * (shard(st.params, dense, shardedSum) +
                              shard(st.expertParams, expert, shardedSum));
  // Accumulated by a separate add, a micro-batch's gradients come out of
  // its backward whole beside the sum so far: a second set, unsharded;
  // with ZeRO-3 each layer's is reduce-scattered into the sharded sum as
  // the backward produces it, so that two layers' are whole at a time
  // (Braid's memory plan of Llama 3 70B on pp4 x dp16 x tp8, 32
  // micro-batches, holds no stage-wide set).
  if (!rt.fusedGradAccumulation && M > 1)
    mem.grads += rt.gradBytes * (p.zero >= 3 ? 2 * perLayer : st.params + st.expertParams);
  // The sums' reduce-scattered shards, returned by the last backward
  // (when only the last micro-batch's activations are left).
  if (rt.reducedGradientsBesideSums && M > 1 && p.zero >= 1)
    mem.shards = rt.gradBytes * (shard(st.params, dense, true) +
                                 shard(st.expertParams, expert, true));
  mem.optimizer = rt.optimizerBytes * (shard(st.params, dense, p.zero >= 1) +
                                       shard(st.expertParams, expert, p.zero >= 1));
  if (p.pp == 1)
    mem.inflight = 1;
  else if (p.vpp == 1)
    mem.inflight = double(std::min<int64_t>(M, p.pp - s));
  else
    mem.inflight =
        double(std::min<int64_t>(M * p.vpp, (p.pp - s - 1) * 2 + (p.vpp - 1) * p.pp + 1)) /
        p.vpp;
  mem.activations = mem.inflight * st.saved + st.working;
  mem.lastActivations = st.saved / double(p.vpp) + st.working;
  if (s == (chunks - 1) % p.pp) {
    double T = double(p.microBatch) * m.seq / p.cp;
    mem.logits = T * m.vocab / p.tp * rt.logitBytes * rt.lossCopies;
  }
  // One micro-batch: the backward frees a layer's activations as it
  // produces its gradients, so only what the gradients exceed the
  // activations by adds to the peak (Braid's memory plans of Llama 3 8B on
  // dp=8 and dp2 x tp4: the peak is the forward's activations); with
  // several, the gradients' sum lives beside every micro-batch's.
  if (M == 1 && rt.gradientsReplaceActivations)
    mem.grads = std::max(0.0, mem.grads - (mem.activations + mem.logits));
  mem.workingActivations = st.working;
  if (rt.fsdpStreamPools && p.zero >= 3)
    applyFsdpStreamPools(mem, p, st);
  return mem;
}

// FSDP2 (Runtime::fsdpStreamPools). The root module's parameters are the
// stage's embedding, final norm and head.
void PlanCost::applyFsdpStreamPools(StageMemory &mem, const Plan &p, const Stage &st) const {
  double root = st.outerParams, largestLayer = st.largestLayerParams;
  // Gathered in bf16 on the compute stream: the root's through the step
  // and one layer's at a time; with a pipeline no layer is resharded after
  // its forward (torchtitan's apply_fsdp), so all are.
  double gathered = p.pp > 1 ? st.params + st.expertParams : root + largestLayer;
  mem.working = rt.workingCopyBytes * gathered;
  // The all-gather stream's pool: the root's gathered buffer, kept until
  // the first layer's copy-out, beside that layer's. The reduce-scatter
  // stream's: a layer's f32 input, freed before the next and so reused,
  // then the root's, larger, beside it (when it does not fit where the
  // layers' were), and the sharded gradients (`grads`), views of the
  // reductions' outputs.
  mem.communication = rt.workingCopyBytes * (root + largestLayer) +
                      rt.gradBytes * (root > largestLayer ? root + largestLayer : largestLayer);
  // Set to None before the step, the sharded gradients are not in the
  // compute stream's pool, which peaks at the loss's backward (every
  // layer's saved activations and the loss's copies) or at a layer's
  // recompute and backward (the loss's copies freed by then).
  mem.workingActivations = std::max(0.0, st.working - mem.logits);
  mem.activations = mem.inflight * st.saved + mem.workingActivations;
  mem.lastActivations = st.saved / double(p.vpp) + mem.workingActivations;
}

// The pipeline: M micro-batches of the slowest stage, plus the fill and
// drain of (pp - 1) / v of a stage's work.
const PlanCost::Stage &PlanCost::estimatePipeline(Estimate &est, const Plan &p,
                                               const std::vector<Stage> &stages,
                                               double &pipelineSeconds) const {
  const int64_t M = p.microbatches;
  auto stageWork = [&](const Stage &st) {
    double w = st.forward + st.backward + st.recompute;
    for (double e : st.exposed)
      w += e;
    return w;
  };
  int64_t slowest = 0;
  double wMax = 0, wSum = 0, weightSum = 0;
  for (int64_t s = 0; s < p.pp; ++s) {
    double w = stageWork(stages[s]);
    wSum += w;
    weightSum += stages[s].weight;
    if (w > wMax) {
      wMax = w;
      slowest = s;
    }
  }
  const Stage &sl = stages[slowest];
  // The fill and drain: (p - 1) stages' work for 1F1B, over v interleaved;
  // ZB-H1 fills them with weight gradients: (p - 1)(F + B - W) of a
  // micro-batch, B the input's gradient only (Qi et al. 2023).
  double fill = wSum / p.pp - (p.zeroBubble ? 2 * weightSum / p.pp : 0);
  pipelineSeconds = M * wMax + (p.pp - 1) * std::max(0.0, fill) / p.vpp;
  est.computeSeconds = M * (sl.forward + sl.backward);
  est.recomputeSeconds = M * sl.recompute;
  for (size_t k = 0; k < sl.exposed.size(); ++k) {
    est.exposed[k] = M * sl.exposed[k];
    est.total[k] = M * sl.comm[k];
  }
  est.bubbleSeconds = pipelineSeconds - M * wMax;
  return sl;
}

// Pipeline sends: an activation (sharded over tp with sequence parallelism)
// forward and its gradient back, per micro-batch and chunk.
void PlanCost::estimatePipelineSends(Estimate &est, const Plan &p) {
  double T = double(p.microBatch) * m.seq / p.cp;
  double whole = T * m.hidden * 2;
  bool sharded = p.sequenceParallel && p.tp > 1;
  bool scatter = rt.scatterPipelineSends && p.tp > 1 && !sharded;
  double bytes = sharded || scatter ? whole / p.tp : whole;
  int64_t nodes = p.gpus() / p.pp >= hw.devicesPerNode ? 2 : 1;
  double send = transfer(TransferKind::PointToPoint, bytes, 2, nodes);
  // Scattered, the receiving stage gathers the shares over tp.
  if (scatter)
    send += transfer(TransferKind::AllGather, whole, p.tp, nodesOf(p, {4}));
  est.sendSeconds = send;
  double all = 2.0 * p.microbatches * p.vpp * send;
  est.total[size_t(CommKind::PP)] = all;
  est.exposed[size_t(CommKind::PP)] = rt.overlapPipelineSends ? 2.0 * (p.pp - 1) * send : all;
}

double PlanCost::overReplicas(const Plan &p, TransferKind kind, double denseParams,
                              double expertParams, double bytesPerParam) {
  return transfer(kind, denseParams * bytesPerParam, denseReplicas(p),
                  nodesOf(p, {1, 2, 3})) +
         transfer(kind, expertParams * bytesPerParam, expertReplicas(p), nodesOf(p, {1, 3}));
}

// Data parallelism: the gradients of the first stage (the one whose last
// backward ends the step) reduced over their replicas, dense and expert
// weights apart; and ZeRO's gathers of the weights.
void PlanCost::estimateDataParallel(Estimate &est, const Plan &p, const Stage &st0,
                                 const Stage &sl, const std::vector<LayerCost> &costs) {
  double reduce = p.zero == 0 || (rt.allReduceWithZero && p.zero < 3)
                      ? overReplicas(p, TransferKind::AllReduce, st0.params, st0.expertParams,
                                     rt.gradBytes)
                      : overReplicas(p, TransferKind::ReduceScatter, st0.params,
                                     st0.expertParams, rt.gradBytes);
  double window = st0.backward + st0.recompute; // the last micro-batch's backward
  double lastBucket = reduce / std::max<int64_t>(1, st0.layers);
  est.total[size_t(CommKind::DP)] = reduce;
  est.exposed[size_t(CommKind::DP)] =
      rt.overlapGradReduce ? std::max(lastBucket, reduce - window) : reduce;
  double paramBytes = rt.weightBytes; // ZeRO gathers the stored weights
  if (p.zero == 1 || p.zero == 2) {
    double gather =
        overReplicas(p, TransferKind::AllGather, st0.params, st0.expertParams, paramBytes);
    est.total[size_t(CommKind::ZeroGather)] = gather;
    // Overlapped, the gathers start with the next step and each layer waits
    // for its own: the first layer's is exposed, and what the first forward
    // does not cover.
    est.exposed[size_t(CommKind::ZeroGather)] =
        rt.overlapParamGather
            ? std::max(gather / double(std::max<int64_t>(1, st0.layers)), gather - st0.forward)
            : gather;
  } else if (p.zero == 3) {
    estimateLayerGathers(est, p, sl, costs);
  }
}

// ZeRO-3: every layer gathered in forward and again in backward, per
// micro-batch, one layer ahead of its use; what a chunk gathers first (the
// first layer's, and the embedding's or the head's where the chunk holds
// them) has nothing before it to hide behind.
void PlanCost::estimateLayerGathers(Estimate &est, const Plan &p, const Stage &sl,
                                 const std::vector<LayerCost> &costs) {
  const int64_t M = p.microbatches;
  double paramBytes = rt.weightBytes;
  double exposed = 0, total = 0, first = 0;
  for (size_t k = 0; k < shapes.size(); ++k) {
    if (!sl.kindCount[k])
      continue;
    const LayerCost &lc = costs[k];
    double g = overReplicas(p, TransferKind::AllGather, lc.parameters, lc.expertParameters,
                            paramBytes);
    total += sl.kindCount[k] * 2 * g;
    exposed +=
        sl.kindCount[k] * (std::max(0.0, g - lc.forward) + std::max(0.0, g - lc.backward));
    first = std::max(first, g);
  }
  double layered = 0;
  for (size_t k = 0; k < shapes.size(); ++k)
    layered += sl.kindCount[k] * costs[k].parameters;
  double outer = std::max(0.0, sl.params - layered); // embedding, head, final norm
  double outerGather = transfer(TransferKind::AllGather, outer * paramBytes,
                                denseReplicas(p), nodesOf(p, {1, 2, 3}));
  total += 2 * outerGather;
  // The chunks' first gathers, forward and backward: every chunk of the
  // stage runs once per micro-batch; or, prefetched across micro-batches,
  // once per step.
  double firsts = 2 * (p.vpp * first + outerGather);
  est.total[size_t(CommKind::ZeroGather)] = M * total;
  est.exposed[size_t(CommKind::ZeroGather)] =
      M * exposed + (rt.prefetchAcrossMicrobatches ? firsts : M * firsts);
}
