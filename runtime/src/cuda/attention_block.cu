//===- attention_block.cu - attention by key blocks (ring, zigzag) --------===//
//
// The CUDA side of the context-parallel attention kernels (the CPU reference
// is runtime/src/cpu/attention_block.cpp, which explains the math). Query and
// key rows carry global positions (int64 device arrays q_pos [S], k_pos
// [Skv]): the RoPE angle of a row is its position, and with `causal` key t is
// visible to query s iff k_pos[t] <= q_pos[s]. Statistics (lse, delta) are f32
// [B, S, Hq] row-major, like the rows of out [B, S, Hq, Dv].
//
//  - sequence_positions: one thread per row.
//  - attention_block: one block per (query tile of 32 rows, query head,
//    batch), 8 warps of 4 rows, key tiles of 32 rows, the online softmax of
//    attendQueryTile (attention_common.cuh) with the mask taken from the
//    position arrays; a key tile none of whose keys the tile's latest query
//    can see is skipped (zigzag positions are monotone only within chunks, so
//    the test is per tile, not a loop bound). Writes the normalized f32
//    output and lse = m + log l (-inf and zeros for a row that sees no key).
//  - attention_merge, attention_delta: one warp per row.
//  - attention_block_grad (grad_attention_block.cu): one block per (query
//    tile, query head, batch).
//    Per visible key tile, lane j scores key j against the warp's rows:
//    p = exp(scale q'.k' - lse), ds = p (dout.v - delta), kept in shared
//    memory. dq' accumulates in registers over the tiles (rotated back and
//    added to dq at the end, plain adds: the block owns its dq rows); for
//    dk / dv each warp sums its 4 keys of the tile over the tile's 32 query
//    rows and adds the results with atomicAdd (dk rotated back first). dq, dk,
//    dv are f32 accumulators the caller zeroes; rows with lse = -inf add
//    nothing. (atomicAdd makes dk / dv not bitwise reproducible across runs.)
//
// RoPE is rotate-half, angles p theta^(-2i/D) and their sin / cos in double,
// theta <= 0: none. Limits: head dims 1..256 (DPL = 1, 2, 4, 8 values per
// lane); S, Skv < 2^31. Shared memory: forward 4 (64 D + 32 Dv + 32) bytes,
// backward about 4 (96 D + 64 Dv + 2200) bytes (~172 KiB at D = Dv = 256).
//
//===----------------------------------------------------------------------===//

#include "cuda/attention_block_common.cuh"

namespace braid::cuda {
namespace {

//===--- Forward -------------------------------------------------------------===//

template <typename T, int DPL>
__global__ void __launch_bounds__(kBlockThreads)
    attentionBlockKernel(const T *__restrict__ q, const T *__restrict__ k,
                         const T *__restrict__ v, const int64_t *__restrict__ qPos,
                         const int64_t *__restrict__ kPos, float *__restrict__ out,
                         float *__restrict__ lseOut, int S, int Skv, int Hq, int Hkv, int D,
                         int Dv, int causal, float scale, double theta) {
  extern __shared__ float smem[];
  float *sQ = smem;                   // [kBlockQ][D] (rotated, scaled)
  float *sK = sQ + kBlockQ * D;       // [kBlockK][D + 1] (rotated; padded: lanes read rows)
  float *sV = sK + kBlockK * (D + 1); // [kBlockK][Dv]
  __shared__ long long sQPos[kBlockQ], sKPos[kBlockK];
  __shared__ int sAny;
  const int b = blockIdx.z, h = blockIdx.y, q0 = blockIdx.x * kBlockQ;
  const int hk = h / (Hq / Hkv);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int rowBase = warp * kRowsPerWarp;

  loadPosTile(sQ, D, kBlockQ, q, qPos, b, q0, S, Hq, h, D, theta, scale);
  if (threadIdx.x < kBlockQ) {
    int s = q0 + static_cast<int>(threadIdx.x);
    sQPos[threadIdx.x] = s < S ? static_cast<long long>(qPos[s]) : LLONG_MIN;
  }
  __syncthreads();
  long long qMax = LLONG_MIN;
  for (int r = 0; r < kBlockQ; ++r)
    qMax = max(qMax, sQPos[r]);
  long long rowPos[kRowsPerWarp];
  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][DPL];
#pragma unroll
  for (int qi = 0; qi < kRowsPerWarp; ++qi) {
    rowPos[qi] = sQPos[rowBase + qi];
    m[qi] = -INFINITY;
    l[qi] = 0.0f;
#pragma unroll
    for (int e = 0; e < DPL; ++e)
      acc[qi][e] = 0.0f;
  }

  for (int k0 = 0; k0 < Skv; k0 += kBlockK) {
    __syncthreads(); // previous tile consumed
    keyTileVisible(kPos, k0, Skv, causal, qMax, sKPos, &sAny);
    __syncthreads();
    if (!sAny) // block-uniform
      continue;
    loadPosTile(sK, D + 1, kBlockK, k, kPos, b, k0, Skv, Hkv, hk, D, theta, 1.0f);
    loadTile(sV, Dv, kBlockK, v, b, k0, Skv, Hkv, hk, Dv);
    __syncthreads();

    const int t = k0 + lane;
    const long long kp = sKPos[lane];
    float score[kRowsPerWarp];
#pragma unroll
    for (int qi = 0; qi < kRowsPerWarp; ++qi)
      score[qi] = 0.0f;
    const float *kRow = sK + lane * (D + 1);
    for (int d = 0; d < D; ++d) {
      float kv = kRow[d];
#pragma unroll
      for (int qi = 0; qi < kRowsPerWarp; ++qi)
        score[qi] = fmaf(sQ[(rowBase + qi) * D + d], kv, score[qi]);
    }

    float p[kRowsPerWarp];
#pragma unroll
    for (int qi = 0; qi < kRowsPerWarp; ++qi) {
      int s = q0 + rowBase + qi;
      bool valid = t < Skv && s < S && (!causal || kp <= rowPos[qi]);
      float sc = valid ? score[qi] : -INFINITY;
      float mNew = fmaxf(m[qi], warpMax(sc));
      if (mNew == -INFINITY) { // nothing visible yet for this row (warp-uniform)
        p[qi] = 0.0f;
        continue;
      }
      p[qi] = valid ? expf(sc - mNew) : 0.0f;
      float corr = m[qi] == -INFINITY ? 0.0f : expf(m[qi] - mNew);
      l[qi] = l[qi] * corr + warpSum(p[qi]);
      m[qi] = mNew;
#pragma unroll
      for (int e = 0; e < DPL; ++e)
        acc[qi][e] *= corr;
    }

    const int tileKeys = min(kBlockK, Skv - k0);
    for (int j = 0; j < tileKeys; ++j) {
      float pj[kRowsPerWarp];
#pragma unroll
      for (int qi = 0; qi < kRowsPerWarp; ++qi)
        pj[qi] = __shfl_sync(0xffffffffu, p[qi], j);
#pragma unroll
      for (int e = 0; e < DPL; ++e) {
        int d = lane + 32 * e;
        float vv = d < Dv ? sV[j * Dv + d] : 0.0f;
#pragma unroll
        for (int qi = 0; qi < kRowsPerWarp; ++qi)
          acc[qi][e] = fmaf(pj[qi], vv, acc[qi][e]);
      }
    }
  }

#pragma unroll
  for (int qi = 0; qi < kRowsPerWarp; ++qi) {
    int s = q0 + rowBase + qi;
    if (s >= S)
      continue;
    bool any = l[qi] > 0.0f;
    float inv = any ? 1.0f / l[qi] : 0.0f;
    float *row = out + rowOffset(b, s, S, Hq, h, Dv);
#pragma unroll
    for (int e = 0; e < DPL; ++e) {
      int d = lane + 32 * e;
      if (d < Dv)
        row[d] = acc[qi][e] * inv;
    }
    if (lane == 0)
      lseOut[(static_cast<int64_t>(b) * S + s) * Hq + h] = any ? m[qi] + logf(l[qi]) : -INFINITY;
  }
}

//===--- Small kernels -------------------------------------------------------===//

__global__ void sequencePositionsKernel(int64_t *pos, int64_t count, int64_t start, int64_t n,
                                        int64_t c) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t row = start + i;
    if (n == 0) {
      pos[i] = row;
    } else {
      int64_t j = row / (2 * c), w = row - j * 2 * c;
      pos[i] = w < c ? j * c + w : (2 * n - 1 - j) * c + (w - c);
    }
  }
}

constexpr int kRowWarps = 8; // rows (warps) per block of the merge / delta kernels

__global__ void __launch_bounds__(kRowWarps * 32)
    attentionMergeKernel(float *__restrict__ out, float *__restrict__ lse,
                         const float *__restrict__ blockOut, const float *__restrict__ blockLse,
                         int64_t rows, int Dv) {
  const int lane = threadIdx.x & 31;
  for (int64_t r = blockIdx.x * static_cast<int64_t>(kRowWarps) + (threadIdx.x >> 5); r < rows;
       r += static_cast<int64_t>(gridDim.x) * kRowWarps) {
    const float a = lse[r], bl = blockLse[r];
    float *o = out + r * Dv;
    const float *ob = blockOut + r * Dv;
    float wa, wb, merged;
    if (bl == -INFINITY) {
      if (a != -INFINITY)
        continue; // the block adds nothing
      wa = 0.0f, wb = 0.0f, merged = -INFINITY; // both -inf: (0, -inf)
    } else if (a == -INFINITY) {
      wa = 0.0f, wb = 1.0f, merged = bl;
    } else {
      double m = fmax(static_cast<double>(a), static_cast<double>(bl));
      double ml = m + log(exp(a - m) + exp(bl - m));
      wa = static_cast<float>(exp(a - ml));
      wb = static_cast<float>(exp(bl - ml));
      merged = static_cast<float>(ml);
    }
    for (int e = lane; e < Dv; e += 32)
      o[e] = (wa != 0.0f ? wa * o[e] : 0.0f) + (wb != 0.0f ? wb * ob[e] : 0.0f);
    // Every lane has read lse[r] before lane 0 overwrites it: the lanes of a
    // warp need not run in step (independent thread scheduling), and cudasim,
    // which runs them one after another, gave the later lanes the merged lse.
    __syncwarp();
    if (lane == 0)
      lse[r] = merged;
  }
}

template <typename T>
__global__ void __launch_bounds__(kRowWarps * 32)
    attentionDeltaKernel(const T *__restrict__ dout, const float *__restrict__ out,
                         float *__restrict__ delta, int64_t rows, int Dv) {
  const int lane = threadIdx.x & 31;
  for (int64_t r = blockIdx.x * static_cast<int64_t>(kRowWarps) + (threadIdx.x >> 5); r < rows;
       r += static_cast<int64_t>(gridDim.x) * kRowWarps) {
    float sum = 0.0f;
    for (int e = lane; e < Dv; e += 32)
      sum = fmaf(toF(dout[r * Dv + e]), out[r * Dv + e], sum);
    sum = warpSum(sum);
    if (lane == 0)
      delta[r] = sum;
  }
}

//===--- Launcher --------------------------------------------------------------===//

template <typename T, int DPL>
void launchBlock(cudaStream_t stream, const BlockShape &sh, const void *q, const void *k,
                 const void *v, const int64_t *qPos, const int64_t *kPos, float *out,
                 float *lse) {
  size_t smemBytes = sizeof(float) * static_cast<size_t>(kBlockQ * sh.D +
                                                         kBlockK * (sh.D + 1) + kBlockK * sh.Dv);
  auto kernel = attentionBlockKernel<T, DPL>;
  setSmem(kernel, smemBytes);
  dim3 grid(static_cast<unsigned>((sh.S + kBlockQ - 1) / kBlockQ), sh.heads, sh.batch);
  kernel<<<grid, kBlockThreads, smemBytes, stream>>>(
      static_cast<const T *>(q), static_cast<const T *>(k), static_cast<const T *>(v), qPos,
      kPos, out, lse, sh.S, sh.Skv, sh.Hq, sh.Hkv, sh.D, sh.Dv, sh.causal, sh.scale, sh.theta);
  BRAID_CUDA_CHECK_LAUNCH();
}

} // namespace
} // namespace braid::cuda

extern "C" void braid_k_sequence_positions(braid_rt *rt, int64_t *pos, int64_t count,
                                           int64_t start, int64_t seq, int64_t zigzag_ranks) {
  using namespace braid::cuda;
  if (zigzag_ranks < 0)
    BRAID_CUDA_FATAL("sequence_positions: negative zigzag rank count %lld",
                     static_cast<long long>(zigzag_ranks));
  if (count < 0 || start < 0 || start > seq - count)
    BRAID_CUDA_FATAL("sequence_positions: rows %lld + %lld outside the sequence of %lld rows",
                     static_cast<long long>(start), static_cast<long long>(count),
                     static_cast<long long>(seq));
  if (zigzag_ranks > 0 && seq % (2 * zigzag_ranks) != 0)
    BRAID_CUDA_FATAL("sequence_positions: zigzag over %lld ranks needs seq a multiple of %lld, "
                     "got %lld",
                     static_cast<long long>(zigzag_ranks),
                     static_cast<long long>(2 * zigzag_ranks), static_cast<long long>(seq));
  if (count == 0)
    return;
  const int64_t c = zigzag_ranks > 0 ? seq / (2 * zigzag_ranks) : 0;
  sequencePositionsKernel<<<gridFor(count, 256), 256, 0, streamOf(rt)>>>(pos, count, start,
                                                                          zigzag_ranks, c);
  BRAID_CUDA_CHECK_LAUNCH();
}

extern "C" void braid_k_attention_block(braid_rt *rt, braid_dtype dt, const void *q,
                                        const void *k, const void *v, const int64_t *q_pos,
                                        const int64_t *k_pos, float *out, float *lse,
                                        int64_t batch, int64_t seq, int64_t seq_kv,
                                        int64_t heads, int64_t kv_heads, int64_t head_dim,
                                        int64_t v_head_dim, int32_t causal, double scale,
                                        double rope_theta) {
  using namespace braid::cuda;
  if (!checkBlockShape("attention_block", batch, seq, seq_kv, heads, kv_heads, head_dim,
                       v_head_dim, rope_theta))
    return;
  cudaStream_t stream = streamOf(rt);
  const BlockShape sh = blockShape(batch, seq, seq_kv, heads, kv_heads, head_dim, v_head_dim,
                                   causal, scale, rope_theta);
  BRAID_DISPATCH_FLOAT(dt, T, {
    if (v_head_dim <= 32)
      launchBlock<T, 1>(stream, sh, q, k, v, q_pos, k_pos, out, lse);
    else if (v_head_dim <= 64)
      launchBlock<T, 2>(stream, sh, q, k, v, q_pos, k_pos, out, lse);
    else if (v_head_dim <= 128)
      launchBlock<T, 4>(stream, sh, q, k, v, q_pos, k_pos, out, lse);
    else
      launchBlock<T, 8>(stream, sh, q, k, v, q_pos, k_pos, out, lse);
  });
}

extern "C" void braid_k_attention_merge(braid_rt *rt, float *out, float *lse,
                                        const float *block_out, const float *block_lse,
                                        int64_t rows, int64_t v_head_dim) {
  using namespace braid::cuda;
  if (rows < 0 || v_head_dim < 0 || v_head_dim > INT32_MAX)
    BRAID_CUDA_FATAL("attention_merge: bad size (rows %lld, v_head_dim %lld)",
                     static_cast<long long>(rows), static_cast<long long>(v_head_dim));
  if (rows == 0)
    return;
  attentionMergeKernel<<<gridFor(rows, kRowWarps), kRowWarps * 32, 0, streamOf(rt)>>>(
      out, lse, block_out, block_lse, rows, static_cast<int>(v_head_dim));
  BRAID_CUDA_CHECK_LAUNCH();
}

extern "C" void braid_k_attention_delta(braid_rt *rt, braid_dtype dt, const void *dout,
                                        const float *out, float *delta, int64_t rows,
                                        int64_t v_head_dim) {
  using namespace braid::cuda;
  if (rows < 0 || v_head_dim < 0 || v_head_dim > INT32_MAX)
    BRAID_CUDA_FATAL("attention_delta: bad size (rows %lld, v_head_dim %lld)",
                     static_cast<long long>(rows), static_cast<long long>(v_head_dim));
  if (rows == 0)
    return;
  cudaStream_t stream = streamOf(rt);
  BRAID_DISPATCH_FLOAT(dt, T, {
    attentionDeltaKernel<T><<<gridFor(rows, kRowWarps), kRowWarps * 32, 0, stream>>>(
        static_cast<const T *>(dout), out, delta, rows, static_cast<int>(v_head_dim));
    BRAID_CUDA_CHECK_LAUNCH();
  });
}
