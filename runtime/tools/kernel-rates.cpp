//===- kernel-rates.cpp - the compute calibration's microbenchmark ---------===//
//
// A program that runs the runtime's own kernels over a sweep of shapes, one
// traced op each, so that bench/planner/calibrate.py can fit the compute
// calibration (lib/CostModel/calibration: GEMM efficiency and the dimension
// that halves it, flash attention's forward and backward efficiencies, the
// memory-bound kernels' share of the bandwidth, the selective scan's, the
// launch) from a run's trace on the machine it runs on:
//
//   kernel-rates --steps 3 --trace T.json          (CPU ranks, f32)
//   kernel-rates-cuda --steps 3 --trace T.json     (a GPU, bf16)
//
// Each op's label names its shape ("m=512 n=512 k=512"), and its FLOPs are
// set as the cost model counts them (a product 2mnk; attention its
// products over the causal half). The operands are one parameter drawn by
// the runtime (normal, 0.02), read as the kernels' element type, so that no
// operand is a denormal or a NaN; the results go to a region of their own.
//
//===----------------------------------------------------------------------===//

#include "braid/runtime.h"

#include <cstdio>
#include <string>

namespace {

#ifdef BRAID_KERNEL_RATES_GPU
constexpr braid_dtype kType = BRAID_BF16;
constexpr int64_t kElementBytes = 2;
// A GPU's sweep: products from a tile to the sizes of a large model's.
const int64_t kDims[] = {128, 512, 2048, 8192};
constexpr int64_t kMaxDim = 8192;
constexpr int64_t kSeqs[] = {1024, 4096};
constexpr int64_t kHeads = 32, kHeadDim = 128;
constexpr int64_t kStream = int64_t(1) << 26; // elements of a memory-bound kernel
constexpr int64_t kScanSeq = 2048, kScanChannels = 4096;
#else
constexpr braid_dtype kType = BRAID_F32;
constexpr int64_t kElementBytes = 4;
// CPU ranks' sweep: small enough for a test, products from a few rows up.
const int64_t kDims[] = {32, 128, 512};
constexpr int64_t kMaxDim = 512;
constexpr int64_t kSeqs[] = {128, 512};
constexpr int64_t kHeads = 4, kHeadDim = 64;
constexpr int64_t kStream = int64_t(1) << 22;
constexpr int64_t kScanSeq = 256, kScanChannels = 256;
#endif
constexpr int64_t kScanState = 16;

constexpr int64_t max(int64_t a, int64_t b) { return a > b ? a : b; }
constexpr int64_t kMaxSeq = kSeqs[1];
// Bytes of the largest operand of each kind, and of all a kernel reads.
constexpr int64_t kMatrixBytes = kMaxDim * kMaxDim * kElementBytes;
constexpr int64_t kHeadsBytes = kMaxSeq * kHeads * kHeadDim * kElementBytes;
constexpr int64_t kStreamBytes = kStream * kElementBytes;
constexpr int64_t kScanBytes = kScanSeq * kScanChannels * kElementBytes;
constexpr int64_t kInputBytes =
    max(max(2 * kMatrixBytes, 4 * kHeadsBytes), max(2 * kStreamBytes, 3 * kScanBytes));
constexpr int64_t kOutputBytes = max(max(kMatrixBytes, 3 * kHeadsBytes), kStreamBytes);
constexpr int64_t kInputFloats = kInputBytes / 4;
constexpr int64_t kOutput = kInputBytes, kLoss = kOutput + kOutputBytes;

const int64_t kInputShape[] = {kInputFloats};
// The fields after these are a partitioned program's (zero: a 1-rank one).
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wmissing-field-initializers"
const braid_tensor_desc kParams[] = {
    {"operands", BRAID_F32, 1, kInputShape, BRAID_INIT_NORMAL, 0.02, 0, 0}};

/// One traced kernel: `name` as the generated programs name their ops.
template <typename Kernel>
void op(braid_rt *rt, const char *name, const std::string &shape, double flops, Kernel kernel) {
  std::string label = std::string(kType == BRAID_BF16 ? "dtype=bf16 " : "dtype=f32 ") + shape;
  braid_rt_op_begin(rt, name, label.c_str());
  braid_rt_op_flops(rt, flops);
  kernel();
  braid_rt_op_end(rt);
}

void step(braid_rt *rt, char *arena) {
  const char *in = arena;
  char *out = arena + kOutput;
  auto at = [&](int64_t bytes) { return in + bytes; };
  braid_rt_push_scope(rt, "kernel-rates");
  braid_rt_alloc(rt, kOutput, kOutputBytes, "results");
  for (int64_t m : kDims)
    for (int64_t n : kDims)
      for (int64_t k : kDims) {
        std::string label = "m=" + std::to_string(m) + " n=" + std::to_string(n) +
                            " k=" + std::to_string(k);
        op(rt, "linear", label, 2.0 * double(m) * double(n) * double(k), [&] {
          braid_k_linear(rt, kType, at(0), at(kMatrixBytes), nullptr, out, m, k, n, 1);
        });
      }
  for (int64_t s : kSeqs) {
    std::string label = "batch=1 seq=" + std::to_string(s) + " heads=" + std::to_string(kHeads) +
                        " head_dim=" + std::to_string(kHeadDim) + " causal=1";
    // The products over the causal half: 4 S (S + 1) / 2 H D.
    double flops = 4.0 * double(s) * double(s + 1) / 2 * double(kHeads * kHeadDim);
    int64_t heads = s * kHeads * kHeadDim * kElementBytes;
    const braid_attention_params p = {.batch = 1,
                                      .seq = s,
                                      .seq_kv = s,
                                      .heads = kHeads,
                                      .kv_heads = kHeads,
                                      .head_dim = kHeadDim,
                                      .v_head_dim = kHeadDim,
                                      .causal = 1,
                                      .scale = 1.0 / 8.0,
                                      .rope_theta = 0.0,
                                      .q_offset = 0};
    op(rt, "attention", label, flops,
       [&] { braid_k_attention(rt, kType, at(0), at(heads), at(2 * heads), out, &p); });
    op(rt, "attention_grad", label, 2.0 * flops, [&] {
      braid_k_attention_grad(rt, kType, at(0), at(heads), at(2 * heads), at(3 * heads), out,
                             out + heads, out + 2 * heads, &p);
    });
  }
  std::string stream = "n=" + std::to_string(kStream);
  op(rt, "add", stream, double(kStream), [&] {
    braid_k_binary(rt, kType, BRAID_BIN_ADD, at(0), at(kStreamBytes), out, kStream);
  });
  op(rt, "silu", stream, 4.0 * double(kStream), [&] {
    braid_k_unary(rt, kType, BRAID_ACT_SILU, at(0), out, kStream);
  });
  // The selective scan (Mamba): the recurrence over the sequence.
  {
    std::string label = "batch=1 seq=" + std::to_string(kScanSeq) +
                        " channels=" + std::to_string(kScanChannels) +
                        " state=" + std::to_string(kScanState);
    double flops = double(kScanSeq) * double(kScanChannels) * (8.0 * kScanState + 5);
    int64_t x = kScanSeq * kScanChannels * kElementBytes;
    const braid_scan_params p = {.batch = 1,
                                 .seq = kScanSeq,
                                 .channels = kScanChannels,
                                 .state = kScanState,
                                 .delta_softplus = 1};
    op(rt, "selective_scan", label, flops, [&] {
      braid_k_selective_scan(rt, kType, at(0), at(x), at(2 * x), at(2 * x), at(2 * x), at(0),
                             out, &p);
    });
  }
  braid_rt_free(rt, kOutput, kOutputBytes);
  braid_rt_pop_scope(rt);
  // The step's "loss" is the arena's last float, never written: nothing is
  // trained, and on a GPU the arena is device memory.
}

const braid_program kProgram = {"kernel-rates", kLoss + 4, 1, kParams, 0, nullptr, kLoss, step};
#pragma clang diagnostic pop

} // namespace

extern "C" const braid_program *braid_program_get(void) { return &kProgram; }
