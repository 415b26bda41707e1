//===- mamba_step.cu - the Mamba state of inference -----------------------===//
//
// braid_k_conv_step and braid_k_scan_step (runtime_inference.h): a Mamba
// layer's convolution and selective scan over each sequence's new rows from
// the states its previous calls left, updated in place. One thread per
// (b, c) channel for the convolution, one per (b, d) for the scan (the
// state in registers as mamba_chunk.cu's scanChunkKernel): a thread reads
// its channel's state before writing it, so in place needs no barrier. The
// arithmetic is mamba_chunk.cu's (conv: bias first, then fmaf per tap;
// scan: expf, fmaf for the output), so a decode step computes what the
// whole-sequence kernels compute at that row. A sequence whose last row is
// -1 is idle: its rows are zeros and its state is untouched. Sequence b's
// state is slot slots[b] of the state (null: b); every thread of a sequence
// checks the slot itself (in [0, state slots), not a lower sequence's), so a
// bad one is skipped by all of them. A last row outside [0, seq) or a bad
// slot is recorded in the device error record and leaves the states
// unchanged.
//
// The chunk kernels of a prefill split over cp (braid_k_conv_step_chunk,
// braid_k_scan_step_chunk) are the same kernels on one rank's rows, starting
// from the previous rank's halo or the carried state composed as
// braid_k_scan_carry composes it, writing candidates (zeros where the
// sequence's last row lies in another chunk); braid_k_take_chunk_state copies
// each sequence's state from its chunk, one thread per byte.
//
//===----------------------------------------------------------------------===//

#include "cuda/common.cuh"

#include <cstdlib>
#include <cstring>

namespace braid::cuda {
namespace {

constexpr int kStepThreads = 128;

__device__ __forceinline__ float stepSoftplus(float x) {
  return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)));
}

/// The rows a call computes: [firstRow, firstRow + seq) of each sequence's
/// `bound` rows (a whole call: 0 and seq). A sequence's state is written
/// where its last row falls in them; `zeroOthers` (a chunk's candidate
/// states) zeroes the others'.
struct StepRows {
  int64_t firstRow;
  int64_t bound;
  int zeroOthers;
};

/// The last row that marks a sequence idle in a whole call.
constexpr int kIdle = -1;

/// Where each sequence's state lives: slot slots[b] of a state of `count`
/// slots (null slots: b; a chunk's candidates are always by sequence).
struct StepSlots {
  const int32_t *slots;
  int64_t count;
};

__device__ __forceinline__ bool isIdle(const int32_t *lastRows, int64_t b, StepRows rows) {
  return lastRows && lastRows[b] == kIdle && !rows.zeroOthers;
}

/// The sequence's last real row within the call's rows (-1 or past them
/// when it lies elsewhere), or -1 after recording one outside the bound.
__device__ __forceinline__ int64_t lastRowOf(const int32_t *lastRows, int64_t b, int64_t seq,
                                             StepRows rows, bool report, DeviceError *error) {
  const int64_t last = lastRows ? lastRows[b] : seq - 1;
  if (last >= 0 && last < rows.bound)
    return last - rows.firstRow;
  if (report)
    reportIndexError(error, kMambaStepLastRow, last, rows.bound, b);
  return -1;
}

/// Sequence b's slot, or -1 after recording one outside the state or shared
/// with a lower sequence that is not idle (which keeps it).
__device__ __forceinline__ int64_t slotOf(StepSlots where, const int32_t *lastRows, int64_t b,
                                          StepRows rows, bool report, DeviceError *error) {
  if (!where.slots) {
    if (b < where.count)
      return b;
    if (report)
      reportIndexError(error, kMambaStepSlot, b, where.count, b);
    return -1;
  }
  const int64_t slot = where.slots[b];
  if (slot < 0 || slot >= where.count) {
    if (report)
      reportIndexError(error, kMambaStepSlot, slot, where.count, b);
    return -1;
  }
  for (int64_t other = 0; other < b; ++other)
    if (where.slots[other] == slot && !isIdle(lastRows, other, rows)) {
      if (report)
        reportIndexError(error, kMambaStepSlotShared, slot, other, b);
      return -1;
    }
  return slot;
}

template <typename T>
__global__ void convStepKernel(const T *state, const T *halo, const T *__restrict__ x,
                               const T *__restrict__ w, const T *__restrict__ bias,
                               const int32_t *__restrict__ positions,
                               const int32_t *__restrict__ lastRows, T *__restrict__ y,
                               T *newState, int64_t batch, int64_t seq, int64_t channels,
                               int64_t kernel, StepRows rows, StepSlots where, int forget,
                               DeviceError *error) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < batch * channels;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t b = i / channels, c = i - b * channels;
    const int64_t slot =
        isIdle(lastRows, b, rows) ? -1 : slotOf(where, lastRows, b, rows, c == 0, error);
    if (slot < 0) {
      for (int64_t t = 0; t < seq; ++t)
        y[(b * seq + t) * channels + c] = fromF<T>(0.0f);
      continue;
    }
    // The K-1 inputs before the rows: the previous chunk's (the halo), the
    // carried state, or none (zeros) where the sequence starts.
    const T *before = rows.firstRow > 0                     ? halo + b * (kernel - 1) * channels
                      : (forget || positions[b] == 0) ? nullptr
                                                          : state + slot * (kernel - 1) * channels;
    // Row u of xe = concat(before or zeros, x[b]).
    auto xe = [&](int64_t u) -> T {
      if (u < kernel - 1)
        return before ? before[u * channels + c] : fromF<T>(0.0f);
      return x[(b * seq + u - (kernel - 1)) * channels + c];
    };
    for (int64_t t = 0; t < seq; ++t) {
      float acc = bias ? toF(bias[c]) : 0.0f;
      for (int64_t j = 0; j < kernel; ++j)
        acc = fmaf(toF(w[c * kernel + j]), toF(xe(t + j)), acc);
      y[(b * seq + t) * channels + c] = fromF<T>(acc);
    }
    T *st = newState + slot * (kernel - 1) * channels;
    const int64_t last = lastRowOf(lastRows, b, seq, rows, c == 0, error);
    if (last < 0 || last >= seq) {
      if (rows.zeroOthers)
        for (int64_t r = 0; r < kernel - 1; ++r)
          st[r * channels + c] = fromF<T>(0.0f);
      continue;
    }
    // Ascending: in place, element i reads row last + 1 + i > i, not yet
    // rewritten.
    for (int64_t r = 0; r < kernel - 1; ++r)
      st[r * channels + c] = xe(last + 1 + r);
  }
}

/// The earlier chunks' zero-start decays and final states, through which a
/// chunk's scan carries the state it starts from (none for a whole call).
struct ScanCarryIn {
  const float *decayAll;
  const float *hendAll;
  int64_t chunk; // the number of chunks before this one
};

template <typename T, int MAXN>
__global__ void __launch_bounds__(kStepThreads)
    scanStepKernel(const float *state, ScanCarryIn carry, const T *__restrict__ x,
                   const T *__restrict__ delta, const T *__restrict__ A,
                   const T *__restrict__ Bm, const T *__restrict__ Cm, const T *__restrict__ D,
                   const int32_t *__restrict__ positions, const int32_t *__restrict__ lastRows,
                   T *__restrict__ y, float *newState, int64_t seq, int64_t channels,
                   int nstate, StepRows rows, StepSlots where, int softplus, int forget,
                   DeviceError *error) {
  const int64_t d = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  const int64_t b = blockIdx.y;
  if (d >= channels)
    return;
  const int64_t slot =
      isIdle(lastRows, b, rows) ? -1 : slotOf(where, lastRows, b, rows, d == 0, error);
  if (slot < 0) {
    for (int64_t t = 0; t < seq; ++t)
      y[(b * seq + t) * channels + d] = fromF<T>(0.0f);
    return;
  }
  // Offsets of the (b, d) state in its slot and by sequence (the carry's
  // chunk states; a chunk's calls have no slots).
  const int64_t so = (slot * channels + d) * nstate, sb = (b * channels + d) * nstate;
  const bool fresh = forget || positions[b] == 0;
  const int64_t last = lastRowOf(lastRows, b, seq, rows, d == 0, error);
  const int64_t count = (int64_t)gridDim.y * channels * nstate;
  float a[MAXN], h[MAXN];
#pragma unroll(MAXN <= 64 ? MAXN : 1)
  for (int n = 0; n < MAXN; ++n) {
    a[n] = n < nstate ? toF(A[d * nstate + n]) : 0.0f;
    h[n] = n < nstate && !fresh ? state[so + n] : 0.0f;
    if (n < nstate && carry.chunk > 0) {
      // H_{c-1} from H_{-1}, the carried state, as scan_carry composes it.
      double H = h[n];
      for (int64_t j = 0; j < carry.chunk; ++j)
        H = double(carry.decayAll[j * count + sb + n]) * H +
            double(carry.hendAll[j * count + sb + n]);
      h[n] = float(H);
    }
  }
  const float skip = toF(D[d]);
  for (int64_t t = 0; t < seq; ++t) {
    const int64_t xi = (b * seq + t) * channels + d;
    const float xv = toF(x[xi]);
    float dt = toF(delta[xi]);
    if (softplus)
      dt = stepSoftplus(dt);
    const T *bRow = Bm + (b * seq + t) * nstate;
    const T *cRow = Cm + (b * seq + t) * nstate;
    const float dtx = dt * xv;
    float out = 0.0f;
#pragma unroll(MAXN <= 64 ? MAXN : 1)
    for (int n = 0; n < MAXN; ++n) {
      if (n < nstate) {
        h[n] = expf(dt * a[n]) * h[n] + dtx * toF(bRow[n]);
        out = fmaf(toF(cRow[n]), h[n], out);
      }
    }
    y[xi] = fromF<T>(out + skip * xv);
    if (t == last)
#pragma unroll(MAXN <= 64 ? MAXN : 1)
      for (int n = 0; n < MAXN; ++n)
        if (n < nstate)
          newState[so + n] = h[n];
  }
  if ((last < 0 || last >= seq) && rows.zeroOthers)
    for (int n = 0; n < nstate; ++n)
      newState[so + n] = 0.0f;
}

__global__ void takeChunkStateKernel(char *state, const char *__restrict__ all,
                                     const int32_t *__restrict__ lastRows, int64_t batch,
                                     int64_t chunks, int64_t chunkRows, int64_t bytes,
                                     DeviceError *error) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < batch * bytes;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t b = i / bytes, k = i - b * bytes;
    const int64_t last = lastRows[b];
    if (last < 0 || last >= chunks * chunkRows) {
      if (k == 0)
        reportIndexError(error, kMambaStepLastRow, last, chunks * chunkRows, b);
      continue;
    }
    state[i] = all[((last / chunkRows) * batch + b) * bytes + k];
  }
}

template <typename T, int MAXN>
void launchScanStep(cudaStream_t stream, const float *state, ScanCarryIn carry, const void *x,
                    const void *delta, const void *A, const void *Bm, const void *Cm,
                    const void *D, const int32_t *positions, const int32_t *lastRows, void *y,
                    float *newState, const braid_scan_params &p, StepRows rows,
                    StepSlots where, int forget) {
  dim3 grid(static_cast<unsigned>((p.channels + kStepThreads - 1) / kStepThreads),
            static_cast<unsigned>(p.batch));
  launch("scan_step", grid, kStepThreads, stream, scanStepKernel<T, MAXN>, state, carry, x,
         delta, A, Bm, Cm, D, positions, lastRows, y, newState, p.seq, p.channels,
         static_cast<int>(p.state), rows, where, p.delta_softplus ? 1 : 0, forget,
         deviceErrorRecord());
}

/// Checks the scan's sizes; false when there is nothing to compute.
bool checkScan(const char *name, const braid_scan_params *p) {
  if (p->state <= 0 || p->state > 256)
    BRAID_CUDA_FATAL("%s: state size %lld outside [1, 256]", name,
                     static_cast<long long>(p->state));
  if (p->batch > 65535)
    BRAID_CUDA_FATAL("%s: batch %lld exceeds the grid", name, static_cast<long long>(p->batch));
  return p->batch > 0 && p->channels > 0 && p->seq > 0;
}

/// The scan kernel for the state size, over the element type `dt`.
void dispatchScanStep(braid_rt *rt, braid_dtype dt, const float *state, ScanCarryIn carry,
                      const void *x, const void *delta, const void *A, const void *Bm,
                      const void *Cm, const void *D, const int32_t *positions,
                      const int32_t *lastRows, void *y, float *newState,
                      const braid_scan_params *p, StepRows rows, StepSlots where, int forget) {
  cudaStream_t stream = streamOf(rt);
  BRAID_DISPATCH_FLOAT(dt, T, {
    if (p->state <= 16)
      launchScanStep<T, 16>(stream, state, carry, x, delta, A, Bm, Cm, D, positions, lastRows,
                            y, newState, *p, rows, where, forget);
    else if (p->state <= 64)
      launchScanStep<T, 64>(stream, state, carry, x, delta, A, Bm, Cm, D, positions, lastRows,
                            y, newState, *p, rows, where, forget);
    else
      launchScanStep<T, 256>(stream, state, carry, x, delta, A, Bm, Cm, D, positions, lastRows,
                             y, newState, *p, rows, where, forget);
  });
}

/// BRAID_TEST_FORGET_MAMBA_STATE names the states a test drops ("conv",
/// "ssm" or "both"): their kernels start every sequence fresh.
int forgets(const char *which) {
  const char *hook = std::getenv("BRAID_TEST_FORGET_MAMBA_STATE");
  return hook && (!std::strcmp(hook, which) || !std::strcmp(hook, "both")) ? 1 : 0;
}

} // namespace
} // namespace braid::cuda

extern "C" void braid_k_conv_step(braid_rt *rt, braid_dtype dt, void *conv_state, const void *x,
                                  const void *w, const void *bias, const int32_t *positions,
                                  const int32_t *last_rows, const int32_t *slots, void *y,
                                  int64_t batch, int64_t state_slots, int64_t seq,
                                  int64_t channels, int64_t kernel) {
  using namespace braid::cuda;
  if (kernel < 1)
    BRAID_CUDA_FATAL("conv_step: kernel size %lld below 1", static_cast<long long>(kernel));
  if (seq <= 0)
    return;
  const int forget = forgets("conv");
  const StepRows rows{0, seq, 0};
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchElements("conv_step", batch * channels, streamOf(rt),
                                      convStepKernel<T>, static_cast<const T *>(conv_state),
                                      static_cast<const T *>(nullptr), x, w, bias, positions,
                                      last_rows, y, static_cast<T *>(conv_state), batch, seq,
                                      channels, kernel, rows, StepSlots{slots, state_slots},
                                      forget, deviceErrorRecord()));
}

extern "C" void braid_k_scan_step(braid_rt *rt, braid_dtype dt, float *ssm_state, const void *x,
                                  const void *delta, const void *A, const void *Bm,
                                  const void *Cm, const void *D, const int32_t *positions,
                                  const int32_t *last_rows, const int32_t *slots, void *y,
                                  int64_t state_slots, const braid_scan_params *p) {
  using namespace braid::cuda;
  if (!checkScan("scan_step", p))
    return;
  dispatchScanStep(rt, dt, ssm_state, ScanCarryIn{nullptr, nullptr, 0}, x, delta, A, Bm, Cm, D,
                   positions, last_rows, y, ssm_state, p, StepRows{0, p->seq, 0},
                   StepSlots{slots, state_slots}, forgets("ssm"));
}

extern "C" void braid_k_conv_step_chunk(braid_rt *rt, braid_dtype dt, const void *conv_state,
                                        const void *halo, const void *x, const void *w,
                                        const void *bias, const int32_t *positions,
                                        const int32_t *last_rows, void *y, void *chunk_state,
                                        int64_t batch, int64_t seq, int64_t channels,
                                        int64_t kernel, int64_t first_row,
                                        int64_t prompt_len) {
  using namespace braid::cuda;
  if (kernel < 1)
    BRAID_CUDA_FATAL("conv_step_chunk: kernel size %lld below 1",
                     static_cast<long long>(kernel));
  if (!last_rows)
    BRAID_CUDA_FATAL("conv_step_chunk: needs each sequence's last row");
  if (seq <= 0)
    return;
  const int forget = forgets("conv");
  const StepRows rows{first_row, prompt_len, 1};
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchElements("conv_step_chunk", batch * channels, streamOf(rt),
                                      convStepKernel<T>, static_cast<const T *>(conv_state),
                                      static_cast<const T *>(halo), x, w, bias, positions,
                                      last_rows, y, static_cast<T *>(chunk_state), batch, seq,
                                      channels, kernel, rows, StepSlots{nullptr, batch}, forget,
                                      deviceErrorRecord()));
}

extern "C" void braid_k_scan_step_chunk(braid_rt *rt, braid_dtype dt, const float *ssm_state,
                                        const float *decay_all, const float *hend_all,
                                        const void *x, const void *delta, const void *A,
                                        const void *Bm, const void *Cm, const void *D,
                                        const int32_t *positions, const int32_t *last_rows,
                                        void *y, float *chunk_state,
                                        const braid_scan_params *p, int64_t first_row,
                                        int64_t prompt_len) {
  using namespace braid::cuda;
  if (!last_rows)
    BRAID_CUDA_FATAL("scan_step_chunk: needs each sequence's last row");
  if (!checkScan("scan_step_chunk", p))
    return;
  dispatchScanStep(rt, dt, ssm_state, ScanCarryIn{decay_all, hend_all, first_row / p->seq}, x,
                   delta, A, Bm, Cm, D, positions, last_rows, y, chunk_state, p,
                   StepRows{first_row, prompt_len, 1}, StepSlots{nullptr, p->batch},
                   forgets("ssm"));
}

extern "C" void braid_k_take_chunk_state(braid_rt *rt, void *state, const void *chunk_states,
                                         const int32_t *last_rows, int64_t batch,
                                         int64_t chunks, int64_t chunk_rows,
                                         int64_t sequence_bytes) {
  using namespace braid::cuda;
  if (batch <= 0 || sequence_bytes <= 0)
    return;
  launchElements("take_chunk_state", batch * sequence_bytes, streamOf(rt),
                 takeChunkStateKernel, static_cast<char *>(state),
                 static_cast<const char *>(chunk_states), last_rows, batch, chunks, chunk_rows,
                 sequence_bytes, deviceErrorRecord());
}
