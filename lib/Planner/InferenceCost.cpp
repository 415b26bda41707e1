//===- InferenceCost.cpp - prefill, decode and memory of a serving layout -===//
//
// The closed forms of InferenceCost.h. Each block (a layer's mixer, its MLP
// or experts, the output head) is timed at the roofline of its work on one
// GPU: its products' FLOPs at the calibrated GEMM rate against the bytes it
// moves (weights read once per pass, the cache and states of its sequences)
// at the calibrated HBM bandwidth, with at least a kernel launch per kernel.
//
//===----------------------------------------------------------------------===//

#include "braid/Planner/InferenceCost.h"

#include "braid/CostModel/CommCost.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>

using namespace braid;
using namespace braid::plan;

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<ServeDtype> plan::parseServeDtype(llvm::StringRef name) {
  if (name == "bf16")
    return ServeDtype::BF16;
  if (name == "fp16")
    return ServeDtype::FP16;
  if (name == "fp8")
    return ServeDtype::FP8;
  if (name == "f32")
    return ServeDtype::F32;
  return error("--dtype is bf16, fp16, fp8 or f32, not '" + name + "'");
}

const char *plan::serveDtypeName(ServeDtype dtype) {
  switch (dtype) {
  case ServeDtype::BF16:
    return "bf16";
  case ServeDtype::FP16:
    return "fp16";
  case ServeDtype::FP8:
    return "fp8";
  case ServeDtype::F32:
    return "f32";
  }
  return "?";
}

double plan::fp8PeakFlops(const cost::Hardware &hw, llvm::StringRef source) {
  if (source.ends_with(".json")) {
    auto buffer = llvm::MemoryBuffer::getFile(source);
    if (!buffer)
      return 0;
    llvm::Expected<llvm::json::Value> root = llvm::json::parse((*buffer)->getBuffer());
    if (!root) {
      llvm::consumeError(root.takeError());
      return 0;
    }
    const llvm::json::Object *object = root->getAsObject();
    std::optional<double> peak = object ? object->getNumber("peak_fp8_flops") : std::nullopt;
    return peak && *peak >= 1 && *peak <= 1e21 ? *peak : 0;
  }
  // NVIDIA H100 and H200 datasheets: FP8 3,958 TFLOP/s with sparsity, half
  // of it dense. The A100 has no FP8 tensor cores.
  return llvm::StringSwitch<double>(hw.name)
      .Case("h100-sxm", 1978.9e12)
      .Case("h200-sxm", 1978.9e12)
      .Default(0);
}

std::string ServeLayout::str() const {
  std::string s;
  auto add = [&](const char *key, int64_t value) {
    if (value == 1)
      return;
    s += (s.empty() ? "" : ",") + std::string(key) + "=" + std::to_string(value);
  };
  add("tp", tp);
  add("pp", pp);
  add("ep", ep);
  add("dp", dp);
  add("cp", cp);
  return s.empty() ? "tp=1" : s;
}

llvm::Expected<ServeLayout> plan::parseServeLayout(llvm::StringRef spec) {
  ServeLayout layout;
  llvm::SmallVector<llvm::StringRef> items;
  spec.split(items, ',', -1, false);
  if (items.empty())
    return error("--evaluate: an empty layout");
  for (llvm::StringRef item : items) {
    auto [key, value] = item.split('=');
    key = key.trim();
    int64_t *field = llvm::StringSwitch<int64_t *>(key)
                         .Case("tp", &layout.tp)
                         .Case("pp", &layout.pp)
                         .Case("ep", &layout.ep)
                         .Case("dp", &layout.dp)
                         .Case("cp", &layout.cp)
                         .Default(nullptr);
    if (!field)
      return error("--evaluate: unknown key '" + key + "' (known: tp, pp, ep, dp, cp)");
    if (value.trim().getAsInteger(10, *field) || *field < 1 || *field > (1 << 20))
      return error("--evaluate: '" + key + "' is not an integer in [1, 2^20]: '" + value + "'");
  }
  return layout;
}

InferenceCost::InferenceCost(ModelShape model, cost::Hardware hardware,
                             cost::ComputeCalibration calibration, Workload workload,
                             double fp8Flops)
    : m(std::move(model)), hw(std::move(hardware)), cal(std::move(calibration)), w(workload),
      fp8(fp8Flops) {}

std::string InferenceCost::check(const ServeLayout &l) const {
  auto has = [&](Mixer mixer) {
    return llvm::any_of(m.layerShapes, [&](LayerShape s) { return s.mixer == mixer; });
  };
  if (has(Mixer::Attention) && (m.heads % l.tp || (m.kvHeads % l.tp && l.tp % m.kvHeads)))
    return "tp=" + std::to_string(l.tp) + " does not divide the " + std::to_string(m.heads) +
           " heads (or the " + std::to_string(m.kvHeads) + " kv heads, nor do they divide it)";
  if ((has(Mixer::Mamba) || has(Mixer::Mamba2)) && m.dInner() % l.tp)
    return "tp=" + std::to_string(l.tp) + " does not divide Mamba's " +
           std::to_string(m.dInner()) + " channels";
  if (has(Mixer::Mamba2) && m.mambaHeads % l.tp)
    return "tp=" + std::to_string(l.tp) + " does not divide the " +
           std::to_string(m.mambaHeads) + " Mamba-2 heads";
  if (l.pp > m.layers)
    return "pp=" + std::to_string(l.pp) + " exceeds the " + std::to_string(m.layers) + " layers";
  if (l.ep > 1 && m.experts < 1)
    return "ep=" + std::to_string(l.ep) + " on a model without experts";
  if (l.ep > 1 && l.ep != l.dp * l.tp)
    return "ep=" + std::to_string(l.ep) + " is not the dp x tp = " +
           std::to_string(l.dp * l.tp) + " ranks of a stage, which the experts span";
  if (l.ep > 1 && m.experts % l.ep)
    return "ep=" + std::to_string(l.ep) + " does not divide the " + std::to_string(m.experts) +
           " experts";
  if (l.cp > 1 && !has(Mixer::Attention))
    return "cp=" + std::to_string(l.cp) + " needs attention layers to split";
  if (l.cp > w.prompt)
    return "cp=" + std::to_string(l.cp) + " exceeds the prompt's " + std::to_string(w.prompt) +
           " tokens";
  return "";
}

double InferenceCost::stageLayers(const ServeLayout &l, Mixer mixer) const {
  double n = llvm::count_if(m.layerShapes, [&](LayerShape s) { return s.mixer == mixer; });
  return n * std::ceil(double(m.layers) / l.pp) / m.layers;
}

double InferenceCost::stageLayers(const ServeLayout &l, Ffn ffn) const {
  double n = llvm::count_if(m.layerShapes, [&](LayerShape s) { return s.ffn == ffn; });
  return n * std::ceil(double(m.layers) / l.pp) / m.layers;
}

double InferenceCost::kvHeadsPerGpu(int64_t tp) const {
  return m.kvHeads >= tp ? double(m.kvHeads) / tp : 1.0;
}

double InferenceCost::cacheBytesPerToken(const ServeLayout &l) const {
  return stageLayers(l, Mixer::Attention) * 2 * kvHeadsPerGpu(l.tp) * m.headDim * weightBytes();
}

double InferenceCost::layerStateBytes(Mixer mixer, int64_t tp) const {
  // The scan's state in f32 (mamba_ssm keeps it so), the convolution's last
  // d_conv inputs in the activations' 16 bits; channels split over tp.
  double e = double(m.dInner()) / tp;
  if (mixer == Mixer::Mamba)
    return e * (m.dState * 4.0 + m.dConv * 2.0);
  if (mixer == Mixer::Mamba2)
    return e * m.dState * 4.0 + (e + 2.0 * m.nGroups * m.dState / tp) * m.dConv * 2.0;
  return 0;
}

double InferenceCost::stateBytesPerSequence(const ServeLayout &l) const {
  return stageLayers(l, Mixer::Mamba) * layerStateBytes(Mixer::Mamba, l.tp) +
         stageLayers(l, Mixer::Mamba2) * layerStateBytes(Mixer::Mamba2, l.tp);
}

double InferenceCost::allReduce(int64_t ranks, int64_t nodes, double bytes) const {
  if (ranks <= 1)
    return 0;
  cost::Transfer t;
  t.kind = cost::TransferKind::AllReduce;
  t.ranks = ranks;
  t.nodes = nodes;
  t.bytes = bytes;
  double ring = cost::estimate(t, hw).seconds;
  if (nodes > 1)
    return ring;
  // Serving runtimes reduce small buffers within a node in one shot (vLLM's
  // and TensorRT-LLM's custom all-reduce: each GPU reads the others'
  // buffers over NVLink in one kernel), which NCCL's ring of 2 (n - 1)
  // steps would make latency-bound at decode.
  double oneShot = hw.kernelLaunch + hw.intraNode.stepLatency +
                   (ranks - 1) * bytes / hw.intraNode.bytesPerSecond;
  return std::min(ring, oneShot);
}

namespace {
/// The work of one block on one GPU, timed at the roofline.
struct Block {
  double flops = 0, bytes = 0, kernels = 1;
  /// The rate the products reach (peak x efficiency x the shape's factor).
  double rate = 1;
};
} // namespace

/// The fraction of HBM peak that serving's decode kernels reach (the GEMVs
/// streaming the weights, paged attention streaming the cache). Not the
/// training calibration's memory_efficiency (fitted to training step times,
/// 0.6 on Hopper and 0.95 on A100): calibrated on the two rows that
/// bench/planner/published-serving.json marks "calibration" (TensorRT-LLM
/// 0.6.1's Llama 2 7B at 128/2048 on one A100 and one H100, decode-bound),
/// balanced between them (-3.2% and +2.8%); the other rows are held out.
static constexpr double kDecodeMemoryEfficiency = 0.76;

/// Adds `block`'s time to `t`: to compute when its FLOPs take longer than
/// its bytes, else to memory; the launches where kernels finish before the
/// next one is launched. With `overlapped` false the bytes and the FLOPs
/// add (each to its own part).
static void addBlock(PhaseTime &t, const Block &b, double bandwidth, double launch, double times,
                     bool overlapped = true) {
  double compute = b.flops / b.rate, memory = b.bytes / bandwidth;
  double work = overlapped ? std::max(compute, memory) : compute + memory;
  if (!overlapped) {
    t.compute += times * compute;
    t.memory += times * memory;
  } else {
    (compute > memory ? t.compute : t.memory) += times * work;
  }
  t.launch += times * std::max(0.0, b.kernels * launch - work);
}

PhaseTime InferenceCost::decodeStep(const ServeLayout &l, double batch, double context) const {
  // Sequences a stage of one replica runs at a time: pp micro-batches of the
  // replica's share are in flight.
  double b = std::max(1.0, batch / l.dp) / l.pp;
  double h = m.hidden, q = double(m.heads) * m.headDim;
  double wb = weightBytes(), act = activationBytes();
  double bandwidth = hw.hbmBytesPerSecond * kDecodeMemoryEfficiency;
  auto rate = [&](double rows) {
    return peak() * cal.gemmEfficiency * rows / (rows + cal.gemmHalfDim);
  };
  PhaseTime t;
  double tpReduce = allReduce(l.tp, nodes(l.tp), b * h * act);
  // Attention: its projections' weights, the batch's cache, the scores and
  // the values over the context (each sequence its own: no weights shared).
  if (double n = stageLayers(l, Mixer::Attention)) {
    double kv = kvHeadsPerGpu(l.tp) * m.headDim;
    double params = 2 * h * q / l.tp + 2 * h * kv;
    Block proj{2 * b * params, params * wb + 2 * b * h * act, 3, rate(b)};
    Block core{4 * b * context * q / l.tp, b * context * 2 * kv * wb, 1,
               hw.peakBf16Flops * cal.flashForwardEfficiency};
    addBlock(t, proj, bandwidth, hw.kernelLaunch, n);
    addBlock(t, core, bandwidth, hw.kernelLaunch, n);
    t.tp += n * tpReduce;
  }
  // Mamba mixers: their weights and the batch's states, read and written.
  for (Mixer mixer : {Mixer::Mamba, Mixer::Mamba2})
    if (double n = stageLayers(l, mixer)) {
      double params = m.layerParameters({mixer, Ffn::None}) / l.tp;
      double state = 2 * b * layerStateBytes(mixer, l.tp);
      Block block{2 * b * params, params * wb + state, 5, rate(b)};
      addBlock(t, block, bandwidth, hw.kernelLaunch, n);
      t.tp += n * tpReduce;
    }
  double mats = m.gated ? 3 : 2;
  if (double n = stageLayers(l, Ffn::Dense)) {
    double params = mats * h * m.ffn / l.tp;
    addBlock(t, {2 * b * params, params * wb, 2, rate(b)}, bandwidth, hw.kernelLaunch, n);
    t.tp += n * tpReduce;
  }
  // Experts: the step's tokens over the stage's expert group touch
  // E (1 - (1 - k/E)^T) distinct experts, whose weights are read; each
  // token's k experts' products.
  if (double n = stageLayers(l, Ffn::MoE)) {
    double tokens = b * (l.ep > 1 ? l.dp : 1);
    double e = m.experts, k = m.topK;
    double touched = e * (1 - std::pow(1 - k / e, tokens));
    double expert = mats * h * m.ffn, shards = expertShards(l);
    double shared = mats * h * m.sharedFfn / l.tp + h * e;
    Block block{2 * tokens * k * expert / shards + 2 * b * shared,
                (touched * expert / shards + shared) * wb,
                2 + double(m.sharedFfn > 0), rate(std::max(1.0, tokens * k / e))};
    addBlock(t, block, bandwidth, hw.kernelLaunch, n);
    // With ep the experts' outputs come back by the combine; a shared
    // expert (split over tp) still reduces its own.
    t.ep += n * dispatchSeconds(l, b);
    t.tp += n * (l.ep == 1 || m.sharedFfn > 0 ? tpReduce : 0);
  }
  // The output head on the last stage (the busiest one is costed whole).
  double head = double(m.vocab) * h / l.tp;
  addBlock(t, {2 * b * head, head * wb, 1, rate(b)}, bandwidth, hw.kernelLaunch, 1);
  // A token passes every stage, one hop between each.
  if (l.pp > 1) {
    double send = hopSeconds(l, b * h * act);
    t.compute *= l.pp;
    t.memory *= l.pp;
    t.launch *= l.pp;
    t.tp *= l.pp;
    t.ep *= l.pp;
    t.pp = l.pp * send;
  }
  return t;
}

PhaseTime InferenceCost::stagePrefill(const ServeLayout &l, double prompts, double tokens,
                                      bool readsWeights) const {
  double rows = prompts * tokens / l.cp; // a rank's share of the prompts' tokens
  double h = m.hidden, q = double(m.heads) * m.headDim, kv = kvHeadsPerGpu(l.tp) * m.headDim;
  double wb = weightBytes(), act = activationBytes(), mats = m.gated ? 3 : 2;
  double bandwidth = hw.hbmBytesPerSecond * cal.memoryEfficiency;
  auto qf = [&](double x) { return x / (x + cal.gemmHalfDim); };
  // A product of rows x k by k x n, its weights in the serving precision.
  double weightRead = readsWeights ? wb : 0;
  auto gemm = [&](double mRows, double n, double k) {
    return Block{2 * mRows * n * k, mRows * k * act + k * n * weightRead + mRows * n * act, 1,
                 peak() * cal.gemmEfficiency * qf(mRows) * qf(n) * qf(k)};
  };
  PhaseTime t;
  // Chunks riding along with a decode step share its launches and its
  // all-reduces' latency: only their bytes add.
  double launch = readsWeights ? hw.kernelLaunch : 0;
  // A prefill's products stream their weights (and the prompt's activations)
  // once while the tensor cores work on the tiles already loaded; at the
  // row counts of a prompt (a few 128-row tiles) the loads are not hidden
  // behind the math, so the two add: the roofline's max would leave a
  // 128-token first token on A100 at 0.57-0.67 of TensorRT-LLM 0.5's
  // published latency (nothing fitted: bench/planner/serving.py).
  auto add = [&](const Block &block, double times) {
    addBlock(t, block, bandwidth, launch, times, /*overlapped=*/false);
  };
  double tpReduce = allReduce(l.tp, nodes(l.tp), rows * h * act) -
                    (readsWeights ? 0 : allReduce(l.tp, nodes(l.tp), 1));
  if (double n = stageLayers(l, Mixer::Attention)) {
    add(gemm(rows, q / l.tp + 2 * kv, h), n);
    add(gemm(rows, h, q / l.tp), n);
    // Causal attention over the prompt: half the square, split over the cp
    // ring (balanced by zigzag chunks); the ring's key/value shifts hidden
    // behind it.
    double flops = prompts * 2 * tokens * tokens * q / l.tp / l.cp;
    double core = flops / (hw.peakBf16Flops * cal.flashForwardEfficiency) + launch;
    t.compute += n * core;
    if (l.cp > 1) {
      cost::Transfer shift;
      shift.kind = cost::TransferKind::PointToPoint;
      shift.ranks = 2;
      shift.nodes = l.tp * l.cp > hw.devicesPerNode ? 2 : 1;
      shift.bytes = rows * 2 * kv * act;
      double ring = (l.cp - 1) * cost::estimate(shift, hw).seconds;
      t.cp += n * std::max(0.0, ring - core);
    }
    t.tp += n * tpReduce;
  }
  for (Mixer mixer : {Mixer::Mamba, Mixer::Mamba2})
    if (double n = stageLayers(l, mixer)) {
      double params = m.layerParameters({mixer, Ffn::None}) / l.tp;
      add(gemm(rows, params / h, h), n);
      double e = double(m.dInner()) / l.tp;
      if (mixer == Mixer::Mamba)
        t.compute += n * cal.scanSeconds(hw, rows * e * m.dState * 9, rows * e * act * 4);
      else
        t.compute += n * (rows * m.mamba2ScanFlopsPerToken() / l.tp /
                          (peak() * cal.gemmEfficiency));
      t.tp += n * tpReduce;
    }
  if (double n = stageLayers(l, Ffn::Dense)) {
    add(gemm(rows, (mats - 1) * m.ffn / l.tp, h), n);
    add(gemm(rows, h, double(m.ffn) / l.tp), n);
    t.tp += n * tpReduce;
  }
  if (double n = stageLayers(l, Ffn::MoE)) {
    double tokens = rows * (l.ep > 1 ? l.dp : 1), e = m.experts, k = m.topK;
    double expert = mats * h * m.ffn, shards = expertShards(l);
    double touched = e * (1 - std::pow(1 - k / e, tokens));
    double perExpert = std::max(1.0, tokens * k / e);
    Block experts{2 * tokens * k * expert / shards,
                  touched * expert / shards * weightRead + 2 * tokens * k * h * act / shards, 2,
                  peak() * cal.gemmEfficiency * qf(perExpert) * qf(h) * qf(m.ffn)};
    add(experts, n);
    if (m.sharedFfn)
      add(gemm(rows, mats * m.sharedFfn / l.tp, h), n);
    t.ep += n * dispatchSeconds(l, rows);
    t.tp += n * (l.ep == 1 || m.sharedFfn > 0 ? tpReduce : 0);
  }
  // The head on each prompt's last token only.
  add(gemm(prompts, double(m.vocab) / l.tp, h), 1);
  return t;
}

double InferenceCost::dispatchSeconds(const ServeLayout &l, double rows) const {
  if (l.ep <= 1)
    return 0;
  // Each rank of the stage sends its share of its tokens' k copies (the tp
  // ranks of a replica hold the same tokens) and receives them back.
  cost::Transfer a2a;
  a2a.kind = cost::TransferKind::AllToAll;
  a2a.ranks = l.dp * l.tp;
  a2a.nodes = nodes(l.dp * l.tp);
  a2a.bytes = rows * m.topK * m.hidden * 2.0 / l.tp;
  return 2 * cost::estimate(a2a, hw).seconds;
}

double InferenceCost::hopSeconds(const ServeLayout &l, double bytes) const {
  cost::Transfer hop;
  hop.kind = cost::TransferKind::PointToPoint;
  hop.ranks = 2;
  hop.nodes = l.tp * l.cp * l.pp > hw.devicesPerNode ? 2 : 1;
  hop.bytes = bytes;
  return cost::estimate(hop, hw).seconds;
}

PhaseTime InferenceCost::prefill(const ServeLayout &l, double prompts, double tokens) const {
  PhaseTime t = stagePrefill(l, prompts, tokens);
  // The prompt passes the stages one after the other.
  t.compute *= l.pp;
  t.memory *= l.pp;
  t.launch *= l.pp;
  t.tp *= l.pp;
  t.cp *= l.pp;
  t.ep *= l.pp;
  t.pp = (l.pp - 1) * hopSeconds(l, prompts * tokens / l.cp * m.hidden * 2);
  return t;
}

double InferenceCost::prefillRate(const ServeLayout &l, int64_t prompts) const {
  // pp prompts' passes in flight: a stage's time (and its hop) per pass.
  double stage = stagePrefill(l, prompts, w.prompt).total();
  if (l.pp > 1)
    stage += hopSeconds(l, double(prompts) * w.prompt / l.cp * m.hidden * 2);
  return l.dp * prompts / stage;
}

MemoryUse InferenceCost::memory(const ServeLayout &l, double batch) const {
  MemoryUse mem;
  double wb = weightBytes(), h = m.hidden;
  double dense = 0, expertParams = 0;
  int64_t perStage = (m.layers + l.pp - 1) / l.pp;
  // The busiest stage: ceil(layers / pp) layers of the model's mix.
  for (LayerShape s : m.layerShapes) {
    double p = m.layerParameters(s), e = m.layerExpertParameters(s);
    dense += (p - e) * perStage / m.layers;
    expertParams += e * perStage / m.layers;
  }
  // The embedding and head: both on a single stage, one of them on an end
  // stage of a pipeline.
  double outer = m.outerParameters();
  dense += l.pp == 1 || m.tiedEmbeddings ? outer : outer / 2;
  mem.weights = (dense / l.tp + expertParams / expertShards(l)) * wb;
  double sequences = std::max(1.0, batch / l.dp);
  mem.cache = sequences * (w.prompt + w.output) * cacheBytesPerToken(l);
  mem.state = sequences * stateBytesPerSequence(l);
  // The largest prefill chunk's working set (its input and residual, the
  // projections' outputs, the MLP's intermediate), and the step's logits in
  // f32.
  double chunk = double(std::min(w.prompt, w.prefillChunk)) / l.cp;
  double q = double(m.heads) * m.headDim, kv = kvHeadsPerGpu(l.tp) * m.headDim;
  bool mamba = llvm::any_of(m.layerShapes, [](LayerShape s) {
    return s.mixer == Mixer::Mamba || s.mixer == Mixer::Mamba2;
  });
  double ffnWidth = std::max<double>({double(m.ffn) * (m.experts ? m.topK : 1),
                                      double(m.sharedFfn), mamba ? 2.0 * m.dInner() : 0.0});
  mem.activations = chunk * 2 * (2 * h + 2 * q / l.tp + 2 * kv + 2 * ffnWidth / l.tp) +
                    sequences / l.pp * double(m.vocab) / l.tp * 4;
  mem.workspace = cal.reservedBytes;
  return mem;
}

int64_t InferenceCost::maxBatch(const ServeLayout &l) const {
  MemoryUse one = memory(l, l.dp), two = memory(l, 2 * l.dp);
  double perSequence = two.total() - one.total(); // per sequence of a replica
  double free = hw.memoryBytes - (one.total() - perSequence);
  if (free < perSequence || perSequence <= 0)
    return 0;
  int64_t perReplica = int64_t(free / perSequence);
  perReplica -= perReplica % l.pp;
  return perReplica * l.dp;
}

ServeEstimate InferenceCost::continuous(const ServeLayout &l, int64_t batch,
                                        bool refill) const {
  ServeEstimate est;
  est.maxBatch = maxBatch(l);
  est.batch = batch ? batch : est.maxBatch;
  est.memory = memory(l, double(std::max<int64_t>(est.batch, 1)));
  est.fits = est.batch >= 1 && est.memory.total() <= hw.memoryBytes;
  if (est.batch < 1)
    return est;
  est.valid = true;
  double perReplica = std::max(1.0, double(est.batch) / l.dp);
  est.prefill = prefill(l, 1, w.prompt);
  est.decode = decodeStep(l, double(est.batch), w.prompt + w.output / 2.0);
  // Each round of the replica's sequences, perReplica / output of them
  // finish and new prompts take their place, prefilled in chunks that ride
  // along with the steps (the weights the step reads serve them too): each
  // stage does their prompts' work once per round. Added to the step's
  // time, an upper bound where the step is memory-bound.
  double refillSeconds =
      refill ? stagePrefill(l, perReplica / w.output, w.prompt, /*readsWeights=*/false).total()
             : 0;
  est.ttftSeconds = est.prefill.total();
  est.tpotSeconds = est.decode.total() + refillSeconds;
  // Each sequence emits a token a step (fewer sequences than replicas leave
  // some idle).
  est.tokensPerSecond = est.batch / est.tpotSeconds;
  est.tokensPerSecondPerGpu = est.tokensPerSecond / l.gpus();
  return est;
}

ServeEstimate InferenceCost::staticBatch(const ServeLayout &l, int64_t batch) const {
  ServeEstimate est;
  est.maxBatch = maxBatch(l);
  est.batch = batch;
  est.memory = memory(l, double(batch));
  est.fits = batch >= 1 && est.memory.total() <= hw.memoryBytes;
  if (batch < 1)
    return est;
  est.valid = true;
  double perReplica = std::max(1.0, double(batch) / l.dp);
  // The batch's prompts in one pass (per pp micro-batch), then output - 1
  // steps at the mean context (the first token comes from the prefill).
  est.prefill = prefill(l, perReplica, w.prompt);
  est.decode = decodeStep(l, double(batch), w.prompt + w.output / 2.0);
  est.ttftSeconds = est.prefill.total();
  est.tpotSeconds = est.decode.total();
  double seconds = est.ttftSeconds + (w.output - 1) * est.tpotSeconds;
  est.tokensPerSecond = double(batch) * w.output / seconds;
  est.tokensPerSecondPerGpu = est.tokensPerSecond / l.gpus();
  return est;
}
