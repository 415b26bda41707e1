//===- attention_block_common.cuh - shared by the key-block kernels -*- CUDA -*-===//
//
// What attention_block.cu (forward, merge, delta, positions) and
// grad_attention_block.cu (the block gradient) share: RoPE at int64 row
// positions, loading a tile of rotated rows, the per-tile causal visibility
// test, and the launch shape with its checks. The kernels' design is
// described in attention_block.cu.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_ATTENTION_BLOCK_COMMON_CUH
#define BRAID_RUNTIME_CUDA_ATTENTION_BLOCK_COMMON_CUH

#include "cuda/attention_common.cuh"

#include <climits>

namespace braid::cuda {
namespace {

using namespace attn;

//===--- RoPE at int64 positions ---------------------------------------------===//

__device__ __forceinline__ void posAngle(int d, int D, long long pos, double theta, double &sn,
                                         double &cs) {
  int half = D / 2;
  int i = d < half ? d : d - half;
  double angle = static_cast<double>(pos) * pow(theta, -2.0 * i / D);
  sincos(angle, &sn, &cs);
}

/// Element d of `row` (D values) rotated to position `pos`.
template <typename T>
__device__ __forceinline__ float ropeAt(const T *row, int d, int D, long long pos,
                                        double theta) {
  float x = toF(row[d]);
  if (theta <= 0.0)
    return x;
  int half = D / 2;
  double sn, cs;
  posAngle(d, D, pos, theta, sn, cs);
  if (d < half)
    return static_cast<float>(x * cs - static_cast<double>(toF(row[d + half])) * sn);
  return static_cast<float>(x * cs + static_cast<double>(toF(row[d - half])) * sn);
}

/// Element d of g (the gradient of a rotated vector) rotated back.
__device__ __forceinline__ float ropeBackAt(const float *g, int d, int D, long long pos,
                                            double theta) {
  if (theta <= 0.0)
    return g[d];
  int half = D / 2;
  double sn, cs;
  posAngle(d, D, pos, theta, sn, cs);
  if (d < half)
    return static_cast<float>(g[d] * cs + static_cast<double>(g[d + half]) * sn);
  return static_cast<float>(g[d] * cs - static_cast<double>(g[d - half]) * sn);
}

/// dst[r * pitch + d] = row (b, s0 + r, h) of src [B, S, H, D] rotated to
/// pos[s0 + r] (times `scale`), 0 for rows s0 + r >= S. All threads take part.
template <typename T>
__device__ __forceinline__ void loadPosTile(float *dst, int pitch, int tileRows, const T *src,
                                            const int64_t *pos, int b, int s0, int S, int H,
                                            int h, int D, double theta, float scale) {
  for (int idx = threadIdx.x; idx < tileRows * D; idx += blockDim.x) {
    int r = idx / D, d = idx - r * D, s = s0 + r;
    float val = 0.0f;
    if (s < S)
      val = ropeAt(src + rowOffset(b, s, S, H, h, D), d, D, pos[s], theta) * scale;
    dst[r * pitch + d] = val;
  }
}

/// Warp 0 decides whether any key of the tile k0.. is visible to a query at
/// position <= qMax (always, without `causal`); the result is block-uniform
/// after the __syncthreads that follows. Also fills sKPos (LLONG_MAX past Skv).
__device__ __forceinline__ void keyTileVisible(const int64_t *kPos, int k0, int Skv, int causal,
                                               long long qMax, long long *sKPos, int *sAny) {
  if (threadIdx.x < 32) {
    int t = k0 + static_cast<int>(threadIdx.x);
    long long kp = t < Skv ? static_cast<long long>(kPos[t]) : LLONG_MAX;
    sKPos[threadIdx.x] = kp;
    int any = __any_sync(0xffffffffu, t < Skv && (!causal || kp <= qMax));
    if (threadIdx.x == 0)
      *sAny = any;
  }
}

//===--- Launch shape ----------------------------------------------------------===//

struct BlockShape {
  int S, Skv, Hq, Hkv, D, Dv, causal;
  unsigned batch, heads;
  float scale;
  double theta;
};

/// Validates the shape of attention_block(_grad); false: nothing to do.
inline bool checkBlockShape(const char *kernel, int64_t batch, int64_t seq, int64_t seqKv,
                     int64_t heads, int64_t kvHeads, int64_t headDim, int64_t vHeadDim,
                     double theta) {
  if (batch < 0 || seq < 0 || seqKv < 0 || heads < 0)
    BRAID_CUDA_FATAL("%s: negative size (batch %lld, seq %lld, seq_kv %lld, heads %lld)", kernel,
                     static_cast<long long>(batch), static_cast<long long>(seq),
                     static_cast<long long>(seqKv), static_cast<long long>(heads));
  if (batch == 0 || seq == 0 || heads == 0)
    return false;
  if (kvHeads <= 0 || heads % kvHeads != 0)
    BRAID_CUDA_FATAL("%s: %lld query heads not a multiple of %lld kv heads", kernel,
                     static_cast<long long>(heads), static_cast<long long>(kvHeads));
  if (theta > 0 && headDim % 2 != 0)
    BRAID_CUDA_FATAL("%s: rope needs an even head dim, got %lld", kernel,
                     static_cast<long long>(headDim));
  if (headDim <= 0 || vHeadDim <= 0 || headDim > 256 || vHeadDim > 256)
    BRAID_CUDA_FATAL("%s: head dims %lld / %lld outside the kernel's limits (1..256)", kernel,
                     static_cast<long long>(headDim), static_cast<long long>(vHeadDim));
  if (seq > INT32_MAX || seqKv > INT32_MAX || heads > 65535 || batch > 65535)
    BRAID_CUDA_FATAL("%s: grid too large (S %lld, Skv %lld, H %lld, B %lld)", kernel,
                     static_cast<long long>(seq), static_cast<long long>(seqKv),
                     static_cast<long long>(heads), static_cast<long long>(batch));
  return true;
}

inline BlockShape blockShape(int64_t batch, int64_t seq, int64_t seqKv, int64_t heads, int64_t kvHeads,
                      int64_t headDim, int64_t vHeadDim, int32_t causal, double scale,
                      double theta) {
  return {static_cast<int>(seq),     static_cast<int>(seqKv),    static_cast<int>(heads),
          static_cast<int>(kvHeads), static_cast<int>(headDim),  static_cast<int>(vHeadDim),
          causal != 0 ? 1 : 0,       static_cast<unsigned>(batch), static_cast<unsigned>(heads),
          static_cast<float>(scale), theta};
}

} // namespace
} // namespace braid::cuda

#endif // BRAID_RUNTIME_CUDA_ATTENTION_BLOCK_COMMON_CUH
