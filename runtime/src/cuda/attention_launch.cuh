//===- attention_launch.cuh - shapes and launch helpers of attention -*- CUDA -*-===//
//
// The host side the attention entry points share: the tile geometry, the
// call's shape and operands as structs (what launchers and kernels take
// instead of a dozen positional sizes), the checks of the public entry
// points' arguments (one message per mistake, whichever entry point meets
// it), and the dispatch over accumulator widths.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_ATTENTION_LAUNCH_CUH
#define BRAID_RUNTIME_CUDA_ATTENTION_LAUNCH_CUH

#include "cuda/common.cuh"

#include <climits>
#include <type_traits>

namespace braid::cuda::attn {

/// Tiles of 32 queries x 32 keys, 8 warps per block, each owning 4 rows of
/// the block's tile.
constexpr int kBlockQ = 32, kBlockK = 32, kWarps = 8, kRowsPerWarp = kBlockQ / kWarps;
constexpr int kBlockThreads = kWarps * 32;

//===--- Shape and operands ------------------------------------------------===//

/// Sizes and scalars of one attention call, checked and narrowed to int by its
/// entry point: q [batch, S, Hq, D], k [batch, Skv, Hkv, D], v [batch, Skv,
/// Hkv, Dv]; Hq a multiple of Hkv (GQA).
struct AttentionShape {
  int batch, S, Skv, Hq, Hkv, D, Dv;
  float scale;  // of the scores; applied to q as it is loaded
  double theta; // RoPE base; <= 0: no rotation
};

/// The operands in storage type T; dout [batch, S, Hq, Dv] in the backward.
template <typename T> struct AttentionInputs {
  const T *q, *k, *v, *dout;
};

/// The shape of sizes the entry point has checked.
inline AttentionShape narrowShape(const braid_attention_params &p) {
  return {static_cast<int>(p.batch),    static_cast<int>(p.seq),
          static_cast<int>(p.seq_kv),   static_cast<int>(p.heads),
          static_cast<int>(p.kv_heads), static_cast<int>(p.head_dim),
          static_cast<int>(p.v_head_dim), static_cast<float>(p.scale),
          p.rope_theta};
}

//===--- Checks of the entry points' arguments -------------------------------===//

inline void checkHeads(const char *kernel, int64_t heads, int64_t kvHeads) {
  if (kvHeads <= 0 || heads % kvHeads != 0)
    BRAID_CUDA_FATAL("%s: %lld query heads not a multiple of %lld kv heads", kernel,
                     static_cast<long long>(heads), static_cast<long long>(kvHeads));
}

inline void checkRope(const char *kernel, double theta, int64_t headDim) {
  if (theta > 0 && headDim % 2 != 0)
    BRAID_CUDA_FATAL("%s: rope needs an even head dim, got %lld", kernel,
                     static_cast<long long>(headDim));
}

/// Head dims within the accumulators of the backward and key-block kernels.
inline void checkHeadDims(const char *kernel, int64_t headDim, int64_t vHeadDim) {
  if (headDim <= 0 || vHeadDim <= 0 || headDim > 256 || vHeadDim > 256)
    BRAID_CUDA_FATAL("%s: head dims %lld / %lld outside the kernel's limits (1..256)", kernel,
                     static_cast<long long>(headDim), static_cast<long long>(vHeadDim));
}

/// The queries are rows q_offset.. of a sequence whose keys are 0..Skv-1.
inline void checkQueryOffset(const char *kernel, int64_t qOffset, int64_t seq, int64_t seqKv,
                             int32_t causal) {
  if (qOffset < 0 || qOffset + seq > INT32_MAX)
    BRAID_CUDA_FATAL("%s: query offset %lld outside 0..2^31 - 1 - S (S %lld)", kernel,
                     static_cast<long long>(qOffset), static_cast<long long>(seq));
  if (causal && qOffset + seq > seqKv)
    BRAID_CUDA_FATAL("%s: causal needs q_offset + S <= Skv, got %lld + %lld and %lld", kernel,
                     static_cast<long long>(qOffset), static_cast<long long>(seq),
                     static_cast<long long>(seqKv));
}

/// Validates the rows of attention_merge / attention_delta; false: nothing
/// to do.
inline bool checkRowShape(const char *kernel, int64_t rows, int64_t vHeadDim) {
  if (rows < 0 || vHeadDim < 0 || vHeadDim > INT32_MAX)
    BRAID_CUDA_FATAL("%s: bad size (rows %lld, v_head_dim %lld)", kernel,
                     static_cast<long long>(rows), static_cast<long long>(vHeadDim));
  return rows != 0;
}

/// Validates the shape of attention_block(_grad); false: nothing to do.
inline bool checkBlockShape(const char *kernel, const braid_attention_params &p) {
  if (p.batch < 0 || p.seq < 0 || p.seq_kv < 0 || p.heads < 0)
    BRAID_CUDA_FATAL("%s: negative size (batch %lld, seq %lld, seq_kv %lld, heads %lld)", kernel,
                     static_cast<long long>(p.batch), static_cast<long long>(p.seq),
                     static_cast<long long>(p.seq_kv), static_cast<long long>(p.heads));
  // The rows' positions are the arrays: an offset would be a second source.
  if (p.q_offset != 0)
    BRAID_CUDA_FATAL("%s: query offset %lld: the key-block kernels take positions instead",
                     kernel, static_cast<long long>(p.q_offset));
  if (p.batch == 0 || p.seq == 0 || p.heads == 0)
    return false;
  checkHeads(kernel, p.heads, p.kv_heads);
  checkRope(kernel, p.rope_theta, p.head_dim);
  checkHeadDims(kernel, p.head_dim, p.v_head_dim);
  if (p.seq > INT32_MAX || p.seq_kv > INT32_MAX || p.heads > 65535 || p.batch > 65535)
    BRAID_CUDA_FATAL("%s: grid too large (S %lld, Skv %lld, H %lld, B %lld)", kernel,
                     static_cast<long long>(p.seq), static_cast<long long>(p.seq_kv),
                     static_cast<long long>(p.heads), static_cast<long long>(p.batch));
  return true;
}

//===--- Launch ------------------------------------------------------------===//

/// The grid of a kernel with one block per (tile of `rows`, head, batch).
inline dim3 tileGrid(int rows, int heads, int batch) {
  return dim3(static_cast<unsigned>((rows + kBlockQ - 1) / kBlockQ),
              static_cast<unsigned>(heads), static_cast<unsigned>(batch));
}

/// kernel(args...) in `grid` blocks of kBlockThreads with `smemBytes` of
/// dynamic shared memory, opted into more than 48 KiB when it needs it.
template <typename... P, typename... A>
void launchTiles(const char *name, void (*kernel)(P...), dim3 grid, size_t smemBytes,
                 cudaStream_t stream, const A &...args) {
  if (smemBytes > 48 * 1024)
    BRAID_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(smemBytes)));
  launchWithShared(name, grid, kBlockThreads, smemBytes, stream, kernel, args...);
}

/// Calls f(std::integral_constant<int, DPL>()) with DPL, the values per lane
/// of an accumulator row, covering `width` <= 256 dimensions: the kernels are
/// instantiated for DPL = 1, 2, 4, 8.
template <typename F> void withDpl(int64_t width, F &&f) {
  if (width <= 32)
    f(std::integral_constant<int, 1>());
  else if (width <= 64)
    f(std::integral_constant<int, 2>());
  else if (width <= 128)
    f(std::integral_constant<int, 4>());
  else
    f(std::integral_constant<int, 8>());
}

/// The two dispatches of every entry point: f(in, dpl) with the operands in
/// the storage type of `dt` (AttentionInputs<T>) and dpl as withDpl gives it
/// for `width` dimensions.
template <typename F>
void dispatchAttention(braid_dtype dt, int64_t width, const void *q, const void *k,
                       const void *v, const void *dout, F &&f) {
  BRAID_DISPATCH_FLOAT(dt, T, {
    const AttentionInputs<T> in{static_cast<const T *>(q), static_cast<const T *>(k),
                                static_cast<const T *>(v), static_cast<const T *>(dout)};
    withDpl(width, [&](auto dpl) { f(in, dpl); });
  });
}

} // namespace braid::cuda::attn

#endif // BRAID_RUNTIME_CUDA_ATTENTION_LAUNCH_CUH
