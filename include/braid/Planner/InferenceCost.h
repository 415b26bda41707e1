//===- InferenceCost.h - the cost of serving a model: prefill and decode -*- C++ -*-===//
//
// The planner's cost model for inference, from the same model shapes
// (ModelShape), hardware descriptions and compute calibrations as training:
// - prefill: the prompt's products at the calibrated GEMM rate, causal flash
//   attention over it, and the layout's collectives (tp all-reduces of the
//   prompt's activations, the cp ring's key/value shifts hidden behind the
//   attention, ep all-to-alls, pp hops);
// - a decode step, per layer the slower of its bytes (the weights it reads
//   once per step, the KV cache and Mamba states of the batch) over the HBM
//   bandwidth and its FLOPs over the peak, plus the tp all-reduces of batch x
//   hidden (latency-bound at decode), the ep all-to-all of the step's tokens
//   and the pp hops;
// - memory per GPU: weights, the KV cache per token and sequence, the Mamba
//   state per sequence, the activations of the largest prefill chunk and the
//   runtime's workspace (the calibration's reserve);
// - continuous batching's steady state: at a batch of B sequences each step
//   decodes B tokens and prefills the B / output sequences that replace the
//   finished ones (chunked prefill), so a step costs the decode at the mean
//   context plus that share of prefill; the largest B that fits in memory.
//
// A layout is dp x pp x cp x tp GPUs: tp shards every product's weights
// (and the KV heads, replicated where tp exceeds them), pp cuts the layers
// into stages that hold pp micro-batches of the decode batch in flight, cp
// splits a prompt's tokens for prefill (ring attention), dp replicates
// attention (each replica serves its own sequences), and ep > 1, which is
// then dp x tp, spreads an MoE layer's experts over all the ranks of a stage
// (data-parallel attention with expert parallelism, as SGLang and vLLM
// serve large MoEs), whose tokens it dispatches by all-to-all.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_PLANNER_INFERENCECOST_H
#define BRAID_LIB_PLANNER_INFERENCECOST_H

#include "braid/CostModel/ComputeCost.h"
#include "braid/CostModel/Hardware.h"
#include "braid/Planner/ModelShape.h"

#include "llvm/Support/Error.h"

#include <string>

namespace braid::plan {

/// The precision of weights and KV cache (activations stay in 16 bits).
/// F32 is what braid-run's CPU ranks serve in (bench/planner/cpu_inference.py).
enum class ServeDtype { BF16, FP16, FP8, F32 };
llvm::Expected<ServeDtype> parseServeDtype(llvm::StringRef name);
const char *serveDtypeName(ServeDtype dtype);

/// The peak dense FP8 rate of a hardware description: the key
/// `peak_fp8_flops` of a description file (`source` ending in .json), else
/// the vendor's figure for the built-in kinds that have FP8 (H100, H200:
/// 1,978.9 TFLOP/s dense, NVIDIA's datasheets); 0 when the hardware has none
/// (A100).
double fp8PeakFlops(const cost::Hardware &hw, llvm::StringRef source);

struct ServeLayout {
  int64_t tp = 1, pp = 1, ep = 1, dp = 1, cp = 1;
  int64_t gpus() const { return dp * pp * cp * tp; }
  /// "tp=8,pp=2" (axes of size 1 left out; "tp=1" when all are).
  std::string str() const;
};
/// Parses "tp=..,pp=..,ep=..,dp=..,cp=..".
llvm::Expected<ServeLayout> parseServeLayout(llvm::StringRef spec);

/// What is served: prompt and output lengths, the precision.
struct Workload {
  int64_t prompt = 0, output = 0;
  ServeDtype dtype = ServeDtype::BF16;
  /// The most prompt tokens one prefill pass takes on a replica (chunked
  /// prefill): bounds the activations a prefill holds.
  int64_t prefillChunk = 8192;
};

/// One decode step (or one prefill) broken down, seconds on the slowest
/// stage's GPU.
struct PhaseTime {
  double compute = 0;    ///< the FLOP-bound share of the layers' work
  double memory = 0;     ///< the byte-bound share (weights, cache, state)
  double tp = 0, cp = 0, ep = 0, pp = 0; ///< exposed communication
  double launch = 0;     ///< kernel launches
  double total() const { return compute + memory + tp + cp + ep + pp + launch; }
};

struct MemoryUse {
  double weights = 0, cache = 0, state = 0, activations = 0, workspace = 0;
  double total() const { return weights + cache + state + activations + workspace; }
};

/// A layout at one batch: the figures the planner ranks by.
struct ServeEstimate {
  bool valid = false;
  std::string invalidReason;
  /// Concurrent sequences on the layout (all dp replicas).
  int64_t batch = 0;
  double ttftSeconds = 0, tpotSeconds = 0;
  /// Output tokens per second of the whole layout, and per GPU.
  double tokensPerSecond = 0, tokensPerSecondPerGpu = 0;
  MemoryUse memory;
  bool fits = false;
  /// The largest batch that fits in memory.
  int64_t maxBatch = 0;
  /// A prefill of one prompt, and a decode step at the batch (without the
  /// prefill it interleaves).
  PhaseTime prefill, decode;
};

/// Evaluates serving layouts of one model on one kind of GPU.
class InferenceCost {
public:
  InferenceCost(ModelShape model, cost::Hardware hw, cost::ComputeCalibration calibration,
                Workload workload, double fp8Flops);

  /// Why `layout` cannot serve this model, or empty.
  std::string check(const ServeLayout &layout) const;

  /// The prefill of `prompts` prompts of `tokens` tokens each on one
  /// replica (all its stages, one after the other).
  PhaseTime prefill(const ServeLayout &layout, double prompts, double tokens) const;
  /// One decode step of `batch` sequences (all replicas) at mean context
  /// `context`, as one sequence sees it (all pp stages; each stage runs
  /// batch / (dp pp) sequences at a time).
  PhaseTime decodeStep(const ServeLayout &layout, double batch, double context) const;
  /// Memory of the busiest GPU serving `batch` sequences of prompt + output
  /// tokens.
  MemoryUse memory(const ServeLayout &layout, double batch) const;
  /// The largest batch (a multiple of dp x pp) that fits in memory; 0: none.
  int64_t maxBatch(const ServeLayout &layout) const;

  /// Continuous batching's steady state at `batch` (0: the largest that
  /// fits): TTFT a prefill of one prompt, TPOT a step (decode at the mean
  /// context plus the prefill of the sequences that replace the finished
  /// ones; none with `refill` false: a decode instance of a disaggregated
  /// layout, whose prompts another prefills), the output rate.
  ServeEstimate continuous(const ServeLayout &layout, int64_t batch, bool refill = true) const;
  /// Static batching (a batch prefilled together, then decoded to the end,
  /// as TensorRT-LLM's gptSessionBenchmark measures): TTFT the batch's
  /// prefill, TPOT the mean decode step, the output rate over the whole.
  ServeEstimate staticBatch(const ServeLayout &layout, int64_t batch) const;
  /// A prefill-only layout: prompts per second of the whole layout, at
  /// `prompts` prompts a pass per replica.
  double prefillRate(const ServeLayout &layout, int64_t prompts) const;

  const ModelShape &model() const { return m; }
  const cost::Hardware &hardware() const { return hw; }
  const Workload &workload() const { return w; }
  /// Bytes per weight and per cached element.
  double weightBytes() const {
    return w.dtype == ServeDtype::FP8 ? 1 : w.dtype == ServeDtype::F32 ? 4 : 2;
  }
  /// Activations are 16-bit on GPUs, f32 on braid-run's CPU ranks.
  double activationBytes() const { return w.dtype == ServeDtype::F32 ? 4 : 2; }
  /// Bytes of KV cache one token of one sequence holds on one GPU of
  /// `layout`'s busiest stage, and of Mamba state one sequence holds.
  double cacheBytesPerToken(const ServeLayout &layout) const;
  double stateBytesPerSequence(const ServeLayout &layout) const;

private:
  /// Layers of each kind on the busiest stage (ceil(layers / pp) of the
  /// model's mix).
  double stageLayers(const ServeLayout &layout, Mixer mixer) const;
  double stageLayers(const ServeLayout &layout, Ffn ffn) const;
  /// A prefill of `prompts` prompts on one stage of one replica; without
  /// `readsWeights`, chunks that ride along with a decode step, which reads
  /// the weights for both.
  PhaseTime stagePrefill(const ServeLayout &layout, double prompts, double tokens,
                         bool readsWeights = true) const;
  /// An MoE layer's dispatch and combine of `rows` tokens a replica over
  /// the ep ranks (0 without ep).
  double dispatchSeconds(const ServeLayout &layout, double rows) const;
  /// One send of `bytes` between pipeline stages.
  double hopSeconds(const ServeLayout &layout, double bytes) const;
  /// Bytes of state one sequence holds in one Mamba layer on one GPU.
  double layerStateBytes(Mixer mixer, int64_t tp) const;
  /// KV heads one GPU holds (replicated when tp exceeds them).
  double kvHeadsPerGpu(int64_t tp) const;
  /// Ranks an expert's weights are spread over (with ep > 1 the stage's
  /// dp x tp ranks hold distinct pieces; else tp, replicated over dp).
  int64_t expertShards(const ServeLayout &layout) const {
    return layout.ep > 1 ? layout.dp * layout.tp : layout.tp;
  }
  /// The peak rate of the products in the serving precision.
  double peak() const { return w.dtype == ServeDtype::FP8 ? fp8 : hw.peakBf16Flops; }
  double allReduce(int64_t ranks, int64_t nodes, double bytes) const;
  /// Nodes a group of `ranks` consecutive ranks spans.
  int64_t nodes(int64_t ranks) const {
    return (ranks + hw.devicesPerNode - 1) / hw.devicesPerNode;
  }

  ModelShape m;
  cost::Hardware hw;
  cost::ComputeCalibration cal;
  Workload w;
  double fp8 = 0;
};

} // namespace braid::plan

#endif // BRAID_LIB_PLANNER_INFERENCECOST_H
