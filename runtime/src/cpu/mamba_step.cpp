//===- mamba_step.cpp - CPU kernels: the Mamba state of inference ---------===//
//
// braid_k_conv_step and braid_k_scan_step (runtime_inference.h): a Mamba
// layer's convolution and selective scan over each sequence's new rows,
// continuing from the conv and SSM states its previous calls left and
// writing them back in place at the sequence's last real row (in the slot
// `slots` names, or the sequence's own; an idle sequence, last row -1, is
// skipped: zeros out, its state untouched). The sums are
// mamba.cpp's in the same order (conv1dHaloImpl; the scan's step is
// mamba_scan.h's, shared with scanChunkImpl), so a decode step computes what
// the whole-sequence forward computes at that row.
//
// Under context parallelism a prefill's steps run on one rank's chunk of the
// prompt rows (braid_k_conv_step_chunk, braid_k_scan_step_chunk): the same
// loops, starting from the previous rank's halo or the carried state
// (composed as braid_k_scan_carry composes it), writing each sequence's state
// into a candidate where its last row falls in the chunk;
// braid_k_take_chunk_state copies every sequence's from its chunk.
//
//===----------------------------------------------------------------------===//

#include "common.h"
#include "mamba_scan.h"
#include "parallel.h"

#include <cstdlib>
#include <cstring>
#include <vector>

using namespace braid::cpu;

namespace {

/// The last row that marks a sequence idle in a whole call.
constexpr int32_t kIdle = -1;

/// Every sequence's last row lies in [0, seq), or is kIdle where `idle`
/// allows it (a whole call; a chunk's last rows are a prompt's).
void checkLastRows(const char *kernel, const int32_t *lastRows, int64_t batch, int64_t seq,
                   bool idle = false) {
  if (!lastRows)
    return;
  for (int64_t b = 0; b < batch; ++b)
    if ((lastRows[b] < 0 || lastRows[b] >= seq) && !(idle && lastRows[b] == kIdle))
      fail(kernel, "last row %lld of sequence %lld is outside [0, %lld)",
           (long long)lastRows[b], (long long)b, (long long)seq);
}

bool isIdle(const int32_t *lastRows, int64_t b) { return lastRows && lastRows[b] == kIdle; }

/// The slots of the sequences that are not idle lie in [0, stateSlots) and
/// are distinct (without `slots`, sequence b's slot b must exist).
void checkSlots(const char *kernel, const int32_t *slots, const int32_t *lastRows,
                int64_t batch, int64_t stateSlots) {
  if (!slots) {
    if (batch > stateSlots)
      fail(kernel, "a state of %lld slots cannot hold %lld sequences", (long long)stateSlots,
           (long long)batch);
    return;
  }
  for (int64_t b = 0; b < batch; ++b) {
    if (isIdle(lastRows, b))
      continue;
    if (slots[b] < 0 || slots[b] >= stateSlots)
      fail(kernel, "slot %lld of sequence %lld is outside [0, %lld)", (long long)slots[b],
           (long long)b, (long long)stateSlots);
    // Quadratic in the batch, which is small beside the rows' work.
    for (int64_t other = 0; other < b; ++other)
      if (!isIdle(lastRows, other) && slots[other] == slots[b])
        fail(kernel, "slot %lld of sequence %lld is also sequence %lld's", (long long)slots[b],
             (long long)b, (long long)other);
  }
}

/// Sequence b's state slot (null `slots`: b).
int64_t slotOf(const int32_t *slots, int64_t b) { return slots ? slots[b] : b; }

/// BRAID_TEST_FORGET_MAMBA_STATE names the states a test drops ("conv",
/// "ssm" or "both"): their kernels start every sequence fresh.
bool forgets(const char *which) {
  const char *hook = std::getenv("BRAID_TEST_FORGET_MAMBA_STATE");
  return hook && (!std::strcmp(hook, which) || !std::strcmp(hook, "both"));
}

/// The rows a call computes: [firstRow, firstRow + S) of each sequence's
/// rows (a whole call: firstRow 0). A sequence's state is written where its
/// last row falls in them; `zeroOthers` (a chunk's candidate states) zeroes
/// the others'.
struct StepRows {
  int64_t firstRow = 0;
  bool zeroOthers = false;
};

/// Where each sequence's state lives: slot slots[b] of the state (null: b;
/// a chunk's candidates are always by sequence).
struct StepSlots {
  const int32_t *slots = nullptr;
};

template <typename T>
void convStepImpl(const T *state, const T *halo, const T *x, const T *w, const T *bias,
                  const int32_t *positions, const int32_t *lastRows, T *y, T *newState,
                  int64_t B, int64_t S, int64_t C, int64_t K, StepRows rows, StepSlots where,
                  bool forget) {
  // One sequence's channels at a time: its new state may be its old one's
  // storage (in place), so the inputs before the rows are copied aside.
  std::vector<T> old(size_t((K - 1) * C));
  const size_t stateBytes = old.size() * sizeof(T);
  for (int64_t b = 0; b < B; ++b) {
    if (isIdle(lastRows, b) && !rows.zeroOthers) {
      std::memset(static_cast<void *>(y + b * S * C), 0, size_t(S * C) * sizeof(T));
      continue;
    }
    const int64_t slot = slotOf(where.slots, b);
    // The K-1 inputs before the rows: the previous chunk's (the halo), the
    // carried state, or none (zeros) where the sequence starts.
    const T *before = rows.firstRow > 0                     ? halo + b * (K - 1) * C
                      : (forget || positions[b] == 0) ? nullptr
                                                          : state + slot * (K - 1) * C;
    if (before)
      std::memcpy(old.data(), before, stateBytes);
    // Row u of xe = concat(before or zeros, x[b]), as extLoad reads a halo.
    auto xe = [&](int64_t u, int64_t c) -> float {
      if (u < K - 1)
        return before ? braid::load(old.data(), u * C + c) : 0.0f;
      return braid::load(x, (b * S + u - (K - 1)) * C + c);
    };
    for (int64_t t = 0; t < S; ++t)
      for (int64_t c = 0; c < C; ++c) {
        float acc = 0.0f;
        for (int64_t j = 0; j < K; ++j)
          acc += braid::load(w, c * K + j) * xe(t + j, c);
        braid::store(y, (b * S + t) * C + c, bias ? acc + braid::load(bias, c) : acc);
      }
    T *st = newState + slot * (K - 1) * C;
    const int64_t last = (lastRows ? lastRows[b] : S - 1) - rows.firstRow;
    if (last < 0 || last >= S) {
      if (rows.zeroOthers)
        std::memset(st, 0, stateBytes);
      continue;
    }
    for (int64_t i = 0; i < K - 1; ++i)
      for (int64_t c = 0; c < C; ++c)
        braid::store(st, i * C + c, xe(last + 1 + i, c));
  }
}

/// The earlier chunks' zero-start decays and final states, through which a
/// chunk's scan carries the state it starts from.
struct ScanCarryIn {
  const float *decayAll = nullptr, *hendAll = nullptr;
  int64_t chunk = 0; ///< the number of chunks before this one
};

template <typename T>
void scanStepImpl(const float *state, ScanCarryIn carry, const T *x, const T *delta,
                  const T *A, const T *Bm, const T *Cm, const T *Dp, const int32_t *positions,
                  const int32_t *lastRows, T *y, float *newState, int64_t B, int64_t S,
                  int64_t Di, int64_t N, StepRows rows, StepSlots where, bool softplus,
                  bool forget) {
  // Channels (b, d) are independent, as in scanChunkImpl.
  parallelFor(B * Di, [&](int64_t lo, int64_t hi) {
    float h[kMaxState], a[kMaxState];
    for (int64_t bd = lo; bd < hi; ++bd) {
      const int64_t b = bd / Di, d = bd % Di;
      if (isIdle(lastRows, b) && !rows.zeroOthers) {
        for (int64_t t = 0; t < S; ++t)
          braid::store(y, (b * S + t) * Di + d, 0.0f);
        continue;
      }
      // Offsets of the (b, d) state in its slot and by sequence (the
      // carry's chunk states; a chunk's calls have no slots).
      const int64_t so = (slotOf(where.slots, b) * Di + d) * N, sb = (b * Di + d) * N;
      const bool fresh = forget || positions[b] == 0;
      const int64_t last = (lastRows ? lastRows[b] : S - 1) - rows.firstRow;
      for (int64_t n = 0; n < N; ++n) {
        // H_{c-1} from H_{-1}, the carried state, as braid_k_scan_carry
        // composes it (double accumulation).
        double H = fresh ? 0.0 : double(state[so + n]);
        for (int64_t j = 0; j < carry.chunk; ++j) {
          const int64_t i = j * B * Di * N + sb + n;
          H = double(carry.decayAll[i]) * H + double(carry.hendAll[i]);
        }
        h[n] = carry.chunk ? float(H) : (fresh ? 0.0f : state[so + n]);
        a[n] = braid::load(A, d * N + n);
      }
      const float skip = braid::load(Dp, d);
      for (int64_t t = 0; t < S; ++t) {
        const int64_t bt = b * S + t;
        const float xv = braid::load(x, bt * Di + d);
        float dt = braid::load(delta, bt * Di + d);
        if (softplus)
          dt = braid::softplus(dt);
        const float out = scanStep(h, a, Bm + bt * N, Cm + bt * N, dt, xv, N);
        braid::store(y, bt * Di + d, out + skip * xv);
        if (t == last)
          std::memcpy(newState + so, h, size_t(N) * sizeof(float));
      }
      if ((last < 0 || last >= S) && rows.zeroOthers)
        std::memset(newState + so, 0, size_t(N) * sizeof(float));
    }
  });
}

} // namespace

extern "C" {

void braid_k_conv_step(braid_rt *, braid_dtype dt, void *conv_state, const void *x,
                       const void *w, const void *bias, const int32_t *positions,
                       const int32_t *last_rows, const int32_t *slots, void *y, int64_t batch,
                       int64_t state_slots, int64_t seq, int64_t channels, int64_t kernel) {
  if (kernel < 1)
    fail("conv_step", "kernel size %lld is below 1", (long long)kernel);
  if (seq <= 0)
    return;
  checkLastRows("conv_step", last_rows, batch, seq, /*idle=*/true);
  checkSlots("conv_step", slots, last_rows, batch, state_slots);
  const bool forget = forgets("conv");
  withFloatType(dt, "conv_step", [&](auto tag) {
    using T = decltype(tag);
    T *state = out<T>(conv_state);
    convStepImpl<T>(state, nullptr, in<T>(x), in<T>(w), bias ? in<T>(bias) : nullptr,
                    positions, last_rows, out<T>(y), state, batch, seq, channels, kernel, {},
                    {slots}, forget);
  });
}

void braid_k_scan_step(braid_rt *, braid_dtype dt, float *ssm_state, const void *x,
                       const void *delta, const void *A, const void *Bm, const void *Cm,
                       const void *D, const int32_t *positions, const int32_t *last_rows,
                       const int32_t *slots, void *y, int64_t state_slots,
                       const braid_scan_params *p) {
  if (p->state > kMaxState)
    fail("scan_step", "state size %lld exceeds the supported %lld", (long long)p->state,
         (long long)kMaxState);
  if (p->seq <= 0)
    return;
  checkLastRows("scan_step", last_rows, p->batch, p->seq, /*idle=*/true);
  checkSlots("scan_step", slots, last_rows, p->batch, state_slots);
  const bool forget = forgets("ssm");
  withFloatType(dt, "scan_step", [&](auto tag) {
    using T = decltype(tag);
    scanStepImpl<T>(ssm_state, {}, in<T>(x), in<T>(delta), in<T>(A), in<T>(Bm), in<T>(Cm),
                    in<T>(D), positions, last_rows, out<T>(y), ssm_state, p->batch, p->seq,
                    p->channels, p->state, {}, {slots}, p->delta_softplus != 0, forget);
  });
}

void braid_k_conv_step_chunk(braid_rt *, braid_dtype dt, const void *conv_state,
                             const void *halo, const void *x, const void *w, const void *bias,
                             const int32_t *positions, const int32_t *last_rows, void *y,
                             void *chunk_state, int64_t batch, int64_t seq, int64_t channels,
                             int64_t kernel, int64_t first_row, int64_t prompt_len) {
  if (kernel < 1)
    fail("conv_step_chunk", "kernel size %lld is below 1", (long long)kernel);
  if (!last_rows)
    fail("conv_step_chunk", "needs each sequence's last row");
  if (seq <= 0)
    return;
  checkLastRows("conv_step_chunk", last_rows, batch, prompt_len);
  const bool forget = forgets("conv");
  withFloatType(dt, "conv_step_chunk", [&](auto tag) {
    using T = decltype(tag);
    convStepImpl<T>(in<T>(conv_state), in<T>(halo), in<T>(x), in<T>(w),
                    bias ? in<T>(bias) : nullptr, positions, last_rows, out<T>(y),
                    out<T>(chunk_state), batch, seq, channels, kernel, {first_row, true}, {},
                    forget);
  });
}

void braid_k_scan_step_chunk(braid_rt *, braid_dtype dt, const float *ssm_state,
                             const float *decay_all, const float *hend_all, const void *x,
                             const void *delta, const void *A, const void *Bm, const void *Cm,
                             const void *D, const int32_t *positions, const int32_t *last_rows,
                             void *y, float *chunk_state, const braid_scan_params *p,
                             int64_t first_row, int64_t prompt_len) {
  if (p->state > kMaxState)
    fail("scan_step_chunk", "state size %lld exceeds the supported %lld",
         (long long)p->state, (long long)kMaxState);
  if (!last_rows)
    fail("scan_step_chunk", "needs each sequence's last row");
  if (p->seq <= 0)
    return;
  checkLastRows("scan_step_chunk", last_rows, p->batch, prompt_len);
  const bool forget = forgets("ssm");
  const ScanCarryIn carry{decay_all, hend_all, first_row / p->seq};
  withFloatType(dt, "scan_step_chunk", [&](auto tag) {
    using T = decltype(tag);
    scanStepImpl<T>(ssm_state, carry, in<T>(x), in<T>(delta), in<T>(A), in<T>(Bm), in<T>(Cm),
                    in<T>(D), positions, last_rows, out<T>(y), chunk_state, p->batch, p->seq,
                    p->channels, p->state, {first_row, true}, {}, p->delta_softplus != 0,
                    forget);
  });
}

void braid_k_take_chunk_state(braid_rt *, void *state, const void *chunk_states,
                              const int32_t *last_rows, int64_t batch, int64_t chunks,
                              int64_t chunk_rows, int64_t sequence_bytes) {
  checkLastRows("take_chunk_state", last_rows, batch, chunks * chunk_rows);
  auto *to = static_cast<char *>(state);
  const auto *from = static_cast<const char *>(chunk_states);
  for (int64_t b = 0; b < batch; ++b)
    std::memcpy(to + b * sequence_bytes,
                from + ((last_rows[b] / chunk_rows) * batch + b) * sequence_bytes,
                size_t(sequence_bytes));
}

} // extern "C"
