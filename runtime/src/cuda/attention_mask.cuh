//===- attention_mask.cuh - mask policies of the attention core -*- CUDA -*-===//
//
// The attention core (attention_core.cuh) is written once; what differs between
// the whole-sequence, chunked (q_offset) and key-block (ring, zigzag) kernels is
// a mask policy: the positions rows are rotated to, which keys a query row
// sees, and which key tiles a query tile can skip. A new kind of attention
// (decode over a KV cache with per-sequence lengths, say) is a new policy here,
// not another copy of the score / softmax / dP / dS loops.
//
// A policy is a trivially copyable struct (its parameters, passed to the
// kernel by value) with block-wide state in `__shared__ Mask::Shared`, a
// position type Pos (int, or int64 where rows carry global positions: the
// narrower type keeps the kernels' registers), and:
//
//   Pos queryPos(s), keyPos(t)         RoPE position of query row s / key t;
//                                      any thread, s < S / t < Skv
//   static bool kKeysRotated           the keys are stored rotated (a KV
//                                      cache): the forward loads them as
//                                      they are, keyPos unused there
//   bool sees(keyPos, queryPos)        the visibility of a key to a query
//   void stageQueryRow(sh, r, s, live) thread r < kBlockQ of a query tile,
//                                      row s (live: s < S and not known to
//                                      see no key); a __syncthreads follows
//   Pos tileQueryPos(sh, r, s)         after it: the mask position of tile
//                                      row r (row s < S)
//   Pos horizon(sh, q0, S)             after it: no live row of the tile
//                                      sits later
//   int keyEnd(horizon, Skv)           keys from here on are seen by no row
//   bool keyTileSeen(sh, k0, Skv, horizon)
//                                      every thread, right after a
//                                      __syncthreads: false if no row can see
//                                      a key of the tile k0.. (block-uniform;
//                                      may synchronize)
//   Pos tileKeyPos(sh, j, t)           after keyTileSeen: the mask position
//                                      of row j of the key tile (key t < Skv)
//   int firstQuery(k0)                 queries before it see no key from k0
//                                      on (the key-gradient kernel's loop)
//   long long keyRow(b, t, needed)     optional (the forward of a paged KV
//                                      cache): the row of k and v [rows,
//                                      Hkv, D] holding key t of sequence b,
//                                      or -1 (loaded as 0); `needed`: a row
//                                      sees it, so a bad address is an error
//                                      to record. Without it key t of
//                                      sequence b is row b Skv + t.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_ATTENTION_MASK_CUH
#define BRAID_RUNTIME_CUDA_ATTENTION_MASK_CUH

#include "cuda/attention_launch.cuh"

#include <climits>

namespace braid::cuda::attn {

/// The whole sequence, or a chunk of its queries (q_offset, context
/// parallelism): query row s sits at qOff + s, key t at t, and with `causal`
/// sees the keys t <= qOff + s. Positions grow with the rows, so a query
/// tile's keys end at a bound and no key tile needs a test.
struct SequenceMask {
  using Pos = int; // qOff + S < 2^31 (checked by the entry points)
  struct Shared {}; // nothing block-wide
  static constexpr bool kKeysRotated = false;
  int causal;
  int qOff;

  __device__ Pos queryPos(int s) const { return qOff + s; }
  __device__ Pos keyPos(int t) const { return t; }
  __device__ bool sees(Pos key, Pos query) const { return !causal || key <= query; }
  __device__ void stageQueryRow(Shared &, int, int, bool) const {}
  __device__ Pos tileQueryPos(const Shared &, int, int s) const { return qOff + s; }
  __device__ Pos horizon(const Shared &, int q0, int S) const {
    return qOff + min(q0 + kBlockQ, S) - 1;
  }
  __device__ int keyEnd(Pos horizon, int Skv) const {
    return causal ? min(Skv, horizon + 1) : Skv;
  }
  __device__ bool keyTileSeen(Shared &, int, int, Pos) const { return true; }
  __device__ Pos tileKeyPos(const Shared &, int, int t) const { return t; }
  __device__ int firstQuery(int k0) const { return causal ? max(0, k0 - qOff) : 0; }
};

/// Attention by key blocks (ring, zigzag): rows carry global positions in
/// int64 device arrays qPos [S], kPos [Skv]; with `causal` key t is visible
/// to query s iff kPos[t] <= qPos[s]. Zigzag positions grow only within
/// chunks, so every key tile is tested against the tile's latest query.
struct PositionMask {
  using Pos = long long;
  static constexpr bool kKeysRotated = false;
  struct Shared {
    long long qPos[kBlockQ]; // LLONG_MIN for a row that is not live
    long long kPos[kBlockK]; // LLONG_MAX past Skv
    int any;
  };
  const int64_t *qPos;
  const int64_t *kPos;
  int causal;

  __device__ long long queryPos(int s) const { return qPos[s]; }
  __device__ long long keyPos(int t) const { return kPos[t]; }
  __device__ bool sees(long long key, long long query) const { return !causal || key <= query; }
  __device__ void stageQueryRow(Shared &sh, int r, int s, bool live) const {
    sh.qPos[r] = live ? static_cast<long long>(qPos[s]) : LLONG_MIN; // no horizon
  }
  __device__ long long tileQueryPos(const Shared &sh, int r, int) const { return sh.qPos[r]; }
  __device__ long long horizon(const Shared &sh, int, int) const {
    long long qMax = LLONG_MIN;
    for (int r = 0; r < kBlockQ; ++r)
      qMax = max(qMax, sh.qPos[r]);
    return qMax;
  }
  __device__ int keyEnd(long long, int Skv) const { return Skv; }
  /// Warp 0 decides (and fills sh.kPos); the barrier makes it block-uniform.
  __device__ bool keyTileSeen(Shared &sh, int k0, int Skv, long long horizon) const {
    if (threadIdx.x < 32) {
      int t = k0 + static_cast<int>(threadIdx.x);
      long long kp = t < Skv ? static_cast<long long>(kPos[t]) : LLONG_MAX;
      sh.kPos[threadIdx.x] = kp;
      int any = __any_sync(0xffffffffu, t < Skv && (!causal || kp <= horizon));
      if (threadIdx.x == 0)
        sh.any = any;
    }
    __syncthreads();
    return sh.any != 0;
  }
  __device__ long long tileKeyPos(const Shared &sh, int j, int) const { return sh.kPos[j]; }
  __device__ int firstQuery(int) const { return 0; }
};

} // namespace braid::cuda::attn

#endif // BRAID_RUNTIME_CUDA_ATTENTION_MASK_CUH
