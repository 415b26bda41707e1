//===- PlanCost.h - the step time and memory of a parallel plan --*- C++ -*-===//
//
// The planner's cost model: for a model (ModelShape), a cluster (Hardware and
// its ComputeCalibration) and a plan (the sizes of the dp, ep, cp, tp and pp
// axes, virtual stages, micro-batch, ZeRO stage, recompute), the time of one
// training step broken into compute, recompute, exposed communication per
// kind and pipeline bubble, and the memory of the busiest GPU broken into
// parameters, gradients, optimizer state, activations and what the runtime
// holds.
//
// It is closed-form on purpose: the search evaluates hundreds of thousands
// of plans per second, where compiling one plan through the training
// pipeline takes seconds. Each term is the one the compiled program has:
// - compute per op from its shape (ComputeCalibration: GEMM efficiency by
//   shape, flash attention, memory-bound kernels at the HBM bandwidth);
// - every transfer the partitioned program issues (tp all-gathers and
//   reduce-scatters with sequence parallelism, all-reduces without; the cp
//   ring's key/value shifts; ep all-to-alls; pp sends; dp reductions and
//   ZeRO gathers), timed by CommCost over the link class its group spans in
//   the grid's rank order (pp, dp, ep, cp, tp; tp fastest, as BraidToDist
//   lays ranks out);
// - what overlaps what, as the runtime does it (`Runtime`): collective
//   matmuls hide a tp collective behind its GEMM but for a chunk, the ring
//   behind the attention blocks, gradient buckets behind the last
//   micro-batch's backward but for the last bucket, ZeRO-3 gathers one layer
//   ahead;
// - the pipeline: m micro-batches of the slowest stage plus (p - 1) / v of
//   a stage's work for the fill and drain (1F1B, interleaved with v > 1);
// - memory: parameters and optimizer state by ZeRO stage, activations saved
//   per layer by recompute policy times the micro-batches a stage holds at
//   once (1F1B: min(m, p); interleaved: Megatron's warm-up count), logits on
//   the last stage, the runtime's reserve.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_PLANNER_PLANCOST_H
#define BRAID_LIB_PLANNER_PLANCOST_H

#include "braid/CostModel/CommCost.h"
#include "braid/CostModel/ComputeCost.h"
#include "braid/Planner/ModelShape.h"
#include "dialects/braid/IR/BraidEnums.h"

#include "llvm/ADT/DenseMap.h"

#include <array>
#include <unordered_map>
#include <string>
#include <vector>

namespace braid::plan {

/// The compiler's recompute policies (none, selective, full), defined once
/// in BraidBase.td: stringifyRecompute names one, symbolizeRecompute parses.
using Recompute = mlir::braid::Recompute;

struct Plan {
  int64_t dp = 1, ep = 1, cp = 1, tp = 1, pp = 1, vpp = 1;
  /// Sequences per micro-batch on one data-parallel rank, and micro-batches
  /// per step: the global batch is dp * ep * microBatch * microbatches.
  int64_t microBatch = 1, microbatches = 1;
  /// ZB-H1 (Qi et al. 2023): the backward split into the input's gradient
  /// and the weight's, which fills the 1F1B bubble (pp > 1, vpp == 1).
  bool zeroBubble = false;
  /// The pipeline schedule these fields describe (1f1b, interleaved or
  /// zb-h1; meaningful with pp > 1).
  mlir::braid::ScheduleKind schedule() const {
    return vpp > 1       ? mlir::braid::ScheduleKind::Interleaved
           : zeroBubble ? mlir::braid::ScheduleKind::ZeroBubbleH1
                        : mlir::braid::ScheduleKind::OneFOneB;
  }
  int zero = 0;
  Recompute recompute = Recompute::None;
  /// Norms and residuals sharded over tp along the sequence (with tp > 1).
  bool sequenceParallel = true;
  /// Layers per model chunk, pp * vpp entries (chunk c on stage c % pp);
  /// empty: the cost model balances them (first and last chunks holding the
  /// embedding and the output head get fewer layers where that helps).
  std::vector<int64_t> layout;

  int64_t gpus() const { return dp * ep * cp * tp * pp; }
  int64_t globalBatch() const { return dp * ep * microBatch * microbatches; }
  /// "dp=2,tp=8,pp=4" (axes of size 1 left out; "dp=1" when all are).
  std::string gridString() const;
};

/// How the runtime executing a plan overlaps and stores, so that published
/// measurements of other systems can be modelled with the same formulas.
struct Runtime {
  std::string name = "braid";
  bool flashAttention = true;
  bool overlapTensorParallel = true;  ///< collective matmuls
  bool overlapContextRing = true;
  bool overlapGradReduce = true;      ///< buckets during the last backward
  bool overlapParamGather = true;     ///< ZeRO-1/2 gathers in the next forward
  bool overlapPipelineSends = true;
  /// Megatron-Core's MoE parallel folding with expert tensor parallelism 1:
  /// the expert layers on their own grid, the ep ranks consecutive (tp's
  /// among them), each expert whole rather than sharded over tp, the
  /// sequence-sharded tokens dispatched as they are. Braid shards experts
  /// over tp and lays ep out beside dp.
  bool foldedExperts = false;
  /// Whether a micro-batch's first ZeRO-3 gathers cost the step once (as
  /// DeepSpeed's and FSDP's prefetch by the recorded order hides them behind
  /// the previous micro-batch) or once per micro-batch. Braid gathers them
  /// at each chunk's start, but they are one layer's: its compiler's
  /// simulation exposes 0.4 ms of 30 ms of gathers on Llama 3 8B, dp2 x tp4,
  /// two micro-batches (bench/planner/crosscheck.py), closer to once.
  bool prefetchAcrossMicrobatches = true;
  /// Bytes per element of the logits and of their gradient: Braid keeps
  /// both in the compute type (bf16; the loss's statistics in f32),
  /// Megatron's vocabulary-parallel cross entropy works on an f32 copy.
  double logitBytes = 2;
  /// Bytes per parameter: the stored weights (f32 masters), the copy the
  /// forward reads (bf16; none when the weights are stored in bf16), the
  /// gradients, the optimizer state (Adam: 2 x f32, plus an f32 master when
  /// the weights are stored in bf16).
  double weightBytes = 4, workingCopyBytes = 2, gradBytes = 4, optimizerBytes = 8;
  /// With sequence parallelism, whether a tp block's backward reads the
  /// input gathered in the forward, kept whole (Braid: its collective matmul
  /// assembles the gathered value for the weight's gradient; the memory plan
  /// of Llama 3 70B on tp=8 holds two [s, h] copies per layer and
  /// micro-batch), rather than the sequence-sharded input, gathered again
  /// in the backward (Megatron).
  bool keepsGatheredInputs = true;
  /// Whether the step casts the weights to the compute type where it reads
  /// them, so that one layer's copies are live at a time (Braid: the
  /// backward casts again what the forward cast, and each piece of a
  /// pipeline or of a step cut into micro-batches casts its own), rather
  /// than one copy of the weights held from the forward to the backward.
  bool castsWeightsPerUse = true;
  /// Whether attention's backward recomputes the softmax statistics from
  /// the queries and keys (Braid's attention_grad takes q, k, v and the
  /// output's gradient: nothing but them is kept), rather than reading the
  /// forward's log-sum-exp (FlashAttention in Megatron: [b, heads, s] f32).
  bool attentionRecomputesStats = true;
  /// Whether, with several micro-batches and ZeRO, the reduce-scattered
  /// gradients are a set of their own beside the sums they come from (Braid:
  /// its last backward returns them while the caller still holds the sums;
  /// the memory plans of Llama 3 8B on dp2 x tp4 with two micro-batches peak
  /// there), rather than reduced in place (Megatron's main-grad buffer).
  bool reducedGradientsBesideSums = true;
  /// Whether, with several micro-batches, ZeRO-2's gradient sum stays whole
  /// until the last micro-batch's backward reduce-scatters it (Braid: the
  /// reductions run in the last backward only, so ZeRO-2 then holds what
  /// ZeRO-1 does; its memory plans of Llama 3 70B on pp4 x dp16 x tp8 are
  /// equal for the two).
  bool wholeGradientSum = true;
  /// Whether the runtime runs ZB-H1 pipelines (Braid: --schedule zb-h1).
  bool zeroBubbleSchedule = true;
  /// Whether, with one micro-batch, gradients take the memory the backward
  /// frees (Braid's memory plan allocates each where it is produced)
  /// rather than a buffer held from the start.
  bool gradientsReplaceActivations = true;
  /// Whether the weight gradient is accumulated into the gradient buffer by
  /// the product itself (cuBLAS beta = 1) rather than by a separate add per
  /// micro-batch.
  bool fusedGradAccumulation = false;
  /// Whether, without sequence parallelism, a pipeline stage's tp ranks
  /// each send their share of the activation (whole on every tp rank) and
  /// the next stage's gather it over tp (Megatron's scatter/gather of
  /// Narayanan et al. 2021, sec. 4.1; DeepSpeed's partitioned pipeline
  /// activations) rather than each sending it whole.
  bool scatterPipelineSends = false;
  /// Whether an MoE layer's token dispatch makes the host wait for the
  /// device (Megatron-Core's alltoall and DeepEP dispatchers read how many
  /// tokens each expert receives: "the CPU will wait for GPU's signal to
  /// arrive", megatron/core/transformer/moe/fused_a2a.py), so that the
  /// experts' kernels run no faster than the host launches them, at
  /// `hostKernelSeconds` each (its framework's per-kernel host time).
  bool moeHostSync = false;
  double hostKernelSeconds = 0;
  /// Whether the expert-parallel dispatch sends a token once to each rank
  /// that holds one of its experts, the rank then copying it to each of
  /// them (DeepEP's dispatch, its combine the reverse: what the model's
  /// ranksPerToken gives), rather than once per chosen expert (an
  /// all-to-all of the tokens permuted by expert, Megatron-Core's alltoall
  /// dispatcher and Braid's).
  bool dispatchPerRank = false;
  /// Whether the local experts' products are one grouped GEMM call per
  /// projection (grouped_gemm's gmm: the host pays hostKernelSeconds once per
  /// call, the device runs the experts back to back) rather than a call per
  /// local expert (Transformer Engine's GroupedLinear in Megatron-Core).
  bool groupedExpertCalls = false;
  /// Whether a sharded optimizer (ZeRO-1/2) still all-reduces whole
  /// gradients (DeepSpeed's BF16_Optimizer, which then updates its shard)
  /// rather than reduce-scattering them.
  bool allReduceWithZero = false;
  /// Whether its rings across nodes leave a node one port wide
  /// (cost::Transfer::narrowRing). The step times published for 2021-22's
  /// frameworks fit narrow rings: validate.py's six ZeRO-3 rows of
  /// Narayanan et al. (DeepSpeed, 384 to 2240 A100s, each rank's group with
  /// all 8 GPUs of its node) within 9%, and 24-73% too fast with rings as
  /// wide as the group's ports on a node; the FSDP of 2025-26 (NeMo
  /// AutoModel's FSDP2, Llama 3 70B on 64 H100s) fits the wide ones (-4%;
  /// +51% narrow).
  bool narrowRings = false;
  /// Elements of the logits' size, in logitBytes each, that the loss holds
  /// at once at its peak: the logits and their gradient (Braid, Megatron's
  /// fused vocabulary-parallel loss), or three f32 copies in eager PyTorch's
  /// cross entropy on upcast logits (log_softmax's saved output, the
  /// gradient nll_loss's backward writes, and the one log_softmax's
  /// backward makes from it).
  double lossCopies = 2;
  /// PyTorch FSDP2 as torchtitan runs it: gathered layer by layer in bf16,
  /// reduced in f32 (MixedPrecisionPolicy(param_dtype=bf16,
  /// reduce_dtype=f32)) and stored in f32, with these consequences for
  /// memory (torch/distributed/_composable/fsdp of December 2024):
  /// - the root module (embedding, final norm, output head) is not resharded
  ///   after the forward ("For the root, do not reshard after forward"), so
  ///   its bf16 copy lives through the step, beside one layer's (the last
  ///   layer is not resharded either: torchtitan's apply_fsdp);
  /// - the gathers and reductions allocate their buffers on their own
  ///   streams, whose memory the caching allocator pools apart from the
  ///   compute stream's: the all-gather pool holds the root's gathered
  ///   buffer and the next layer's (the previous gather is kept until the
  ///   next copy-out), the reduce-scatter pool a layer's f32 input, then the
  ///   root's, and every sharded gradient, which FSDP2 makes a view of the
  ///   reduce-scatter output;
  /// - the sharded gradients are freed before each step
  ///   (optimizer.zero_grad(set_to_none=True)), so the forward and the
  ///   loss peak without them.
  bool fsdpStreamPools = false;
  /// torchtitan's op-level selective checkpointing of a dense block
  /// (selective_ac_option "op", parallelize_llama.py _save_list): each
  /// block keeps its input, every other product's output (the first, third,
  /// ... in forward order: q, v, w1, w2 of a Llama block), the attention's
  /// output and log-sum-exp, and with sequence parallelism the
  /// reduce-scatters' outputs; the rest is recomputed. Megatron's selective
  /// recomputes the attention core only.
  bool opSelectiveCheckpoint = false;
  /// Whether the final norm, outside any checkpoint, keeps an f32 copy of
  /// its input, its bf16 normalized value and its output (an RMSNorm that
  /// upcasts, eager: 8 bytes an element), rather than its input and output.
  bool normKeepsUpcast = false;

  /// "braid" (this compiler's programs), "megatron-2021" (Megatron-LM as in
  /// Narayanan et al. 2021: unfused softmax attention, bf16 weights with f32
  /// master and main grads, no overlap of dp or tp communication),
  /// "megatron-deepspeed" (BigScience's Megatron-DeepSpeed of 2022, as BLOOM
  /// ran it: megatron-2021 with DeepSpeed's BF16_Optimizer, which adds each
  /// micro-batch's bf16 gradients into f32 ones and all-reduces them whole),
  /// "megatron-core" (flash attention, overlapped grad reduce and param
  /// gather, tp communication overlapped), "nemo-automodel" (NeMo
  /// AutoModel's MoE benchmark recipes: PyTorch FSDP2 over weights stored in
  /// bf16 with torch.optim.Adam's moments in bf16, experts as grouped GEMMs
  /// after DeepEP's dispatch, the loss on bf16 logits), "torchtitan"
  /// (torchtitan's Llama training of December 2024, eager: FSDP2 in f32
  /// with bf16 gathers and f32 reductions, op-level selective
  /// checkpointing, the loss on an f32 copy of the logits; see
  /// fsdpStreamPools).
  static llvm::Expected<Runtime> named(llvm::StringRef name);
};

/// Communication kinds of the report, in print order.
enum class CommKind { TP, CP, EP, PP, DP, ZeroGather, Count };
const char *commKindName(CommKind kind);

struct Estimate {
  bool valid = false;
  std::string invalidReason;

  double stepSeconds = 0;
  /// Busy compute on the slowest stage: the model's work, then recompute.
  double computeSeconds = 0, recomputeSeconds = 0;
  double bubbleSeconds = 0, optimizerSeconds = 0;
  /// Of computeSeconds, the adds that accumulate micro-batches' gradients.
  double accumulationSeconds = 0;
  std::array<double, size_t(CommKind::Count)> exposed{}, total{};
  double exposedSeconds() const {
    double s = 0;
    for (double e : exposed)
      s += e;
    return s;
  }

  /// Bytes on the busiest GPU. communicationBytes: the collectives' own
  /// buffers where the runtime pools them apart (Runtime::fsdpStreamPools).
  double weightBytes = 0, gradBytes = 0, optimizerBytes = 0, activationBytes = 0,
         logitBytes = 0, communicationBytes = 0, reservedBytes = 0;
  double memoryBytes() const {
    return weightBytes + gradBytes + optimizerBytes + activationBytes + logitBytes +
           communicationBytes + reservedBytes;
  }
  bool fits = false;
  /// Of activationBytes, the working set of the layer running (the rest is
  /// what the micro-batches in flight keep).
  double activationWorkingBytes = 0;
  /// The two moments a stage can peak at with several micro-batches: the
  /// steady state (activationBytes with the micro-batches in flight) and
  /// the last micro-batch's backward, where only its activations are left
  /// (lastBackwardActivationBytes) but the reduce-scattered gradients
  /// (reducedShardBytes) lie beside the sums. gradBytes holds the shards
  /// only when the second is the peak.
  double lastBackwardActivationBytes = 0, reducedShardBytes = 0;
  /// Sets activationBytes to the larger of the two moments for the steady
  /// state's `steadyActivationBytes`, moving the shards in or out of
  /// gradBytes.
  void placePeak(double steadyActivationBytes) {
    if (shardsCounted)
      gradBytes -= reducedShardBytes;
    shardsCounted = reducedShardBytes > 0 &&
                    lastBackwardActivationBytes + reducedShardBytes > steadyActivationBytes;
    activationBytes = shardsCounted ? lastBackwardActivationBytes : steadyActivationBytes;
    if (shardsCounted)
      gradBytes += reducedShardBytes;
  }
  /// Whether gradBytes holds reducedShardBytes.
  bool shardsCounted = false;
  /// Seconds of one send between pipeline stages.
  double sendSeconds = 0;
  /// Whether the pipeline terms come from the schedule simulator.
  bool simulated = false;
  /// Bytes one layer (of the model's first kind) keeps for its backward per
  /// micro-batch: what Korthikanti et al. 2022 count per layer.
  double layerActivationBytes = 0;
  /// Copies of a token the expert-parallel dispatch sends (to ranks, by
  /// the model's routing, where the runtime dispatches per rank; else one
  /// per chosen expert); 0 without ep.
  double epCopiesPerToken = 0;

  /// Model FLOPs of a step (3 x the forward's matrix products, attention's
  /// whole square included, recompute not), MFU against the peak, tokens/s.
  double modelFlops = 0, mfu = 0, tokensPerSecond = 0;
  /// Layers per chunk the estimate used.
  std::vector<int64_t> layout;
};

/// Evaluates plans of one model on one cluster, memoizing what plans share
/// (per-layer costs by tp, cp, ep and micro-batch), so that a search over
/// many plans spends microseconds on each.
class PlanCost {
public:
  PlanCost(ModelShape model, cost::Hardware hw, cost::ComputeCalibration calibration,
           Runtime runtime);

  /// The step of `plan`, or an invalid estimate naming why it cannot run
  /// (an axis that does not divide the heads, the layers, the batch...).
  Estimate estimate(const Plan &plan);
  /// Only the memory terms (the search's first, cheaper test).
  Estimate memory(const Plan &plan);
  /// `estimate` with the pipeline's time and its activations in flight
  /// taken from the pipeline schedule simulator (PipelineSchedule.h: the
  /// schedule's own action lists, timed per chunk) instead of the closed
  /// form: slower, for the plans the search ranks first.
  Estimate simulate(const Plan &plan);

  /// Why `plan` cannot run on this model, or empty.
  std::string check(const Plan &plan) const;

  const ModelShape &model() const { return m; }
  const cost::Hardware &hardware() const { return hw; }
  const Runtime &runtime() const { return rt; }

  /// Costs of one layer for one micro-batch on one rank.
  struct LayerCost {
    double forward = 0, backward = 0, recompute = 0; ///< compute seconds
    double weight = 0; ///< of `backward`, the weight gradients
    /// Communication inside the layer, by kind: its whole time and what the
    /// overlap leaves exposed, forward and backward (recompute's included).
    std::array<double, size_t(CommKind::Count)> comm{}, exposedComm{};
    double savedBytes = 0;   ///< kept from forward to backward
    double workingBytes = 0; ///< live while the layer runs
    double parameters = 0, expertParameters = 0;
  };

private:
  /// Per pipeline stage: its chunks' work for one micro-batch, its
  /// parameters, the activations one micro-batch leaves on it.
  struct Stage {
    double forward, backward, recompute, weight;
    std::array<double, size_t(CommKind::Count)> exposed, comm;
    double params, expertParams, saved, working, chunkSaved;
    /// Of params and expertParams: the embedding's and the head's (what the
    /// stage holds beside its layers), and the largest layer's.
    double outerParams, largestLayerParams;
    int64_t layers;
    std::vector<int64_t> kindCount; ///< layers of each shape
  };
  struct Pipeline {
    std::vector<int64_t> layout;
    std::vector<Stage> stages;
    /// Per chunk, one micro-batch: forward and backward seconds (exposed
    /// communication shared between them as the compute is, recompute in
    /// the backward) and the bytes it keeps from its forward to its backward.
    std::vector<double> chunkForward, chunkBackward, chunkSaved;
    /// Of chunkBackward, the weight gradients (a zero-bubble schedule's W).
    std::vector<double> chunkWeight;
  };
  /// The stages of `plan`'s pipeline, memoized (they depend on the layer
  /// costs and the layout, not on dp or the ZeRO stage).
  const Pipeline &pipeline(const Plan &plan);
  /// Builds a layer's costs block by block (LayerCost.cpp).
  class LayerCostBuilder;
  LayerCost layerCost(LayerShape shape, const Plan &plan, Recompute recompute);
  /// A dense attention block's saved bytes and recompute under op-level
  /// selective checkpointing (Runtime::opSelectiveCheckpoint).
  void opSelective(LayerCost &c, const Plan &plan, double attentionForward);
  /// The layer costs of `plan`'s shape, memoized.
  const std::vector<LayerCost> &layerCosts(const Plan &plan);
  LayerCost outerCost(const Plan &plan, bool first, bool last);
  std::vector<int64_t> balance(const Plan &plan, const std::vector<LayerCost> &costs,
                               const LayerCost &head, const LayerCost &tail);
  Estimate evaluate(const Plan &plan, bool memoryOnly);

  // The terms of an estimate, each part set by one of these (PlanCost.cpp).
  struct StageMemory;
  /// The memory terms: those of the stage that holds the most.
  void estimateMemory(Estimate &est, const Plan &plan, const std::vector<Stage> &stages);
  StageMemory stageMemory(const Plan &plan, const Stage &stage, int64_t index) const;
  /// Where the runtime pools the collectives' buffers apart (FSDP2).
  void applyFsdpStreamPools(StageMemory &memory, const Plan &plan, const Stage &stage) const;
  /// The compute, the exposed communication inside the layers and the
  /// bubble of the pipeline; returns its slowest stage, and in
  /// `pipelineSeconds` the time the pipeline takes.
  const Stage &estimatePipeline(Estimate &est, const Plan &plan, const std::vector<Stage> &stages,
                             double &pipelineSeconds) const;
  /// The sends between pipeline stages.
  void estimatePipelineSends(Estimate &est, const Plan &plan);
  /// The gradients' reduction over the data-parallel replicas and ZeRO's
  /// gathers of the weights (`first`: the first stage, `slowest`: the
  /// slowest).
  void estimateDataParallel(Estimate &est, const Plan &plan, const Stage &first,
                         const Stage &slowest, const std::vector<LayerCost> &costs);
  /// ZeRO-3's gathers, layer by layer.
  void estimateLayerGathers(Estimate &est, const Plan &plan, const Stage &slowest,
                         const std::vector<LayerCost> &costs);
  /// Ranks holding a copy of a dense weight, and of an expert's.
  int64_t denseReplicas(const Plan &plan) const { return plan.dp * plan.ep * plan.cp; }
  int64_t expertReplicas(const Plan &plan) const {
    return plan.dp * plan.cp * (rt.foldedExperts ? plan.tp : 1);
  }
  /// Seconds of a collective of `kind` moving `bytesPerParam` of each
  /// dense parameter over the dense replicas and of each expert parameter
  /// over the expert replicas.
  double overReplicas(const Plan &plan, cost::TransferKind kind, double denseParams,
                      double expertParams, double bytesPerParam);
  double transfer(cost::TransferKind kind, double bytes, int64_t ranks, int64_t nodes) const;
  /// The copies of a token an MoE layer's dispatch over `ep` ranks makes: one
  /// per rank holding one of its experts where the runtime dispatches per
  /// rank (the model's routing decides how many), else one per chosen
  /// expert (its slots: top k times the capacity factor).
  double dispatchCopies(int64_t ep) const {
    return rt.dispatchPerRank ? m.ranksPerToken(ep) : m.capacityFactor * m.topK;
  }
  int64_t nodesOf(const Plan &plan, llvm::ArrayRef<int> axes);

  ModelShape m;
  cost::Hardware hw;
  cost::ComputeCalibration cal;
  Runtime rt;
  /// Distinct layer shapes of the model and the shape index of each layer.
  std::vector<LayerShape> shapes;
  std::vector<int> shapeOf;
  llvm::DenseMap<uint64_t, std::vector<LayerCost>> layerMemo;
  llvm::DenseMap<uint64_t, std::vector<int64_t>> layoutMemo;
  std::unordered_map<uint64_t, Pipeline> pipelineMemo;
  llvm::DenseMap<uint64_t, int64_t> nodesMemo;
  double forwardFlopsPerToken = 0;
};

} // namespace braid::plan

#endif // BRAID_LIB_PLANNER_PLANCOST_H
