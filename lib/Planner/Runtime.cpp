//===- Runtime.cpp - the runtimes a plan's cost can model -----------------===//
//
// What each system whose published runs validate.py compares with does
// (storage per parameter, overlap, kernels), as PlanCost reads it.
//
//===----------------------------------------------------------------------===//

#include "braid/Planner/PlanCost.h"

using namespace braid;
using namespace braid::plan;

/// Megatron-Core's host time per expert kernel after a dispatch that waits
/// for the device (PyTorch eager dispatch, Transformer Engine's grouped
/// linear issuing one cuBLAS product per local expert): fitted to the one
/// published layout that shows it, Qwen3-235B on 256 H100s with tp4 pp8 ep8
/// (bench/planner/published.json moezoo-qwen3-235b-h100-5: 512-row expert
/// products, 29.0 s against 17.6 s for the same FLOPs in 4096-row ones),
/// with its DeepEP dispatch sending a token once per rank (--moe-dispatcher
/// deepep, random routing: 5.38 copies, not 8).
constexpr double kMegatronCoreHostKernelSeconds = 66e-6;

namespace {
/// pytorch/torchtitan at 9dec370 (its benchmarks/llama3_h100_202412_
/// torchtitan.md) on torch of 2024-12-23, without torch.compile or Float8.
/// Its storage is the defaults' (Braid's): the model in f32, which FSDP2
/// shards (4 + 4 bytes per parameter of weights and gradients, AdamW's two
/// f32 moments: 8) and gathers in bf16 layer by layer (the working copy, 2
/// bytes); autograd accumulates into the gradients with separate adds and
/// keeps what a product reads (with sequence parallelism: the gathered
/// input).
void setTorchtitan(Runtime &r) {
  r.logitBytes = 4; // loss_fn: cross_entropy(pred.flatten(0, 1).float(), ...)
  r.lossCopies = 3;
  r.attentionRecomputesStats = false; // SDPA's flash kernel keeps the log-sum-exp
  r.reducedGradientsBesideSums = false;
  r.wholeGradientSum = false;
  r.zeroBubbleSchedule = false;
  r.gradientsReplaceActivations = false;
  r.overlapTensorParallel = false; // AsyncTP is opt-in and needs torch.compile
  r.fsdpStreamPools = true;
  r.opSelectiveCheckpoint = true;
  r.normKeepsUpcast = true; // torchtitan's RMSNorm: _norm(x.float()).type_as(x) * weight
}

/// What the Megatron family shares: bf16 weights, f32 main gradients and an
/// optimizer state of f32 master weights plus Adam's two moments
/// (Narayanan et al. 2021, Rajbhandari et al. 2020: 2 + 4 + 12 bytes per
/// parameter), the weight-gradient accumulation fused into the product.
void setMegatron(Runtime &r) {
  r.weightBytes = 2;
  r.workingCopyBytes = 0;
  r.gradBytes = 4;
  r.optimizerBytes = 12;
  r.fusedGradAccumulation = true;
  r.logitBytes = 4;
  r.keepsGatheredInputs = false;
  r.attentionRecomputesStats = false;
  r.reducedGradientsBesideSums = false;
  r.wholeGradientSum = false;
  r.zeroBubbleSchedule = false;
  r.gradientsReplaceActivations = false; // Megatron's main grads: one buffer from the start
  r.scatterPipelineSends = true;
}

/// Megatron-LM of 2021: unfused attention, nothing overlapped; with
/// `deepspeed`, BigScience's Megatron-DeepSpeed.
void setMegatron2021(Runtime &r, bool deepspeed) {
  r.flashAttention = false;
  r.overlapTensorParallel = false;
  r.overlapContextRing = false;
  r.overlapGradReduce = false;
  r.overlapParamGather = false;
  r.overlapPipelineSends = false;
  r.narrowRings = true;
  if (deepspeed) {
    // BLOOM's (bigscience tr11-176B-ml README: "The new BF16_Optimizer
    // accumulates grads in fp32 ... It doesn't shard the static fp32
    // buffer"; DeepSpeed's pipe engine adds each micro-batch's gradients
    // into the f32 buffer, update_hp_grads, and its bf16 optimizer
    // all-reduces them, _bf16_reduce_grads, after the pipeline finishes).
    r.fusedGradAccumulation = false;
    r.allReduceWithZero = true;
  }
}

void setMegatronCore(Runtime &r) {
  r.overlapTensorParallel = false; // --tp-comm-overlap is opt-in
  r.overlapGradReduce = true;
  r.overlapParamGather = true;
  r.foldedExperts = true;
  r.moeHostSync = true;
  r.hostKernelSeconds = kMegatronCoreHostKernelSeconds;
}

/// NVIDIA-NeMo/Automodel at 2861c414, the recipes of its MoE rows
/// (examples/llm_benchmark/qwen/qwen3_moe_30b_te_deepep.yaml,
/// nemotron/nemotron_nano_v3_te_deepep.yaml). The model is built in bf16
/// (torch_dtype "auto" is bf16 in _transformers/auto_model.py; its FSDP2
/// config: "Pair with model.torch_dtype: float32 for fp32 optimizer
/// state"), so FSDP2 shards bf16 weights and gradients (reduced in f32,
/// stored as the weights are) and torch.optim.Adam keeps bf16 moments:
/// 2 + 2 + 4 bytes per parameter, no master copy. FSDP2 gathers and
/// prefetches layer by layer, overlapped like Megatron-Core's.
void setNemoAutomodel(Runtime &r) {
  r.weightBytes = 2;
  r.workingCopyBytes = 0;
  r.gradBytes = 2;
  r.optimizerBytes = 4;
  r.fusedGradAccumulation = false;
  r.logitBytes = 2; // MaskedCrossEntropy with fp32_upcast: false
  r.overlapTensorParallel = false;
  r.overlapGradReduce = true;
  r.overlapParamGather = true;
  // experts: gmm (grouped_gemm.ops.gmm, one call per projection) after
  // dispatcher: deepep, whose dispatch makes the host wait for the
  // tokens each expert receives; the host's time per call is taken as
  // Megatron-Core's (both are PyTorch eager programs).
  r.moeHostSync = true;
  r.dispatchPerRank = true;
  r.groupedExpertCalls = true;
  r.hostKernelSeconds = kMegatronCoreHostKernelSeconds;
}
} // namespace

llvm::Expected<Runtime> Runtime::named(llvm::StringRef name) {
  Runtime r;
  r.name = name.str();
  if (name == "braid")
    return r;
  if (name == "torchtitan") {
    setTorchtitan(r);
    return r;
  }
  bool megatron2021 = name == "megatron-2021" || name == "megatron-deepspeed";
  if (!megatron2021 && name != "megatron-core" && name != "nemo-automodel")
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "unknown runtime '" + name +
            "' (known: braid, megatron-2021, megatron-deepspeed, megatron-core, "
            "nemo-automodel, torchtitan)");
  // NeMo AutoModel starts from Megatron's storage too, and replaces it.
  setMegatron(r);
  if (megatron2021)
    setMegatron2021(r, name == "megatron-deepspeed");
  else if (name == "megatron-core")
    setMegatronCore(r);
  else
    setNemoAutomodel(r);
  return r;
}
