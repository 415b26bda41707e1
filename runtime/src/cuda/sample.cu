//===- sample.cu - braid.sample and its split pieces on the GPU ----------===//
//
// runtime_inference.h's braid_k_sample*: sampling_rows.h's phases, the one
// copy of the arithmetic that the CPU kernels run too, on the device. One
// block of one thread per row (correctness first: a decode step samples a
// few rows, each a pass or a few over its vocabulary block); the candidates
// and the whole-row kernel's words live in dynamic shared memory. A top_k
// past top_k_cap, and a row that the program's mode does not draw, are
// recorded in the device error record (the backend aborts at its next
// synchronization, naming the row); the row's id is then 0.
//
//===----------------------------------------------------------------------===//

#include "cuda/common.cuh"

#include "sampling_rows.h"

namespace braid::cuda {
namespace {

namespace rs = braid::rt::sampling;

template <typename T> struct DeviceRow {
  const T *row;
  __host__ __device__ float operator()(int64_t i) const { return toF(row[i]); }
};

__device__ inline rs::RowParams paramsOf(const float *temperature, const int32_t *topK,
                                         const float *topP, int64_t r) {
  rs::RowParams p;
  p.temperature = temperature[r];
  p.topK = topK[r];
  p.topP = topP[r];
  return p;
}

__device__ inline int64_t validColumns(int64_t vocab, int64_t offset, int64_t columns) {
  const int64_t count = vocab - offset;
  return count < 0 ? 0 : count > columns ? columns : count;
}

__device__ inline void reportProblem(rs::Problem problem, const rs::RowParams &p, int64_t cap,
                                     int64_t row, DeviceError *error) {
  if (problem == rs::kTopKPastCap)
    reportIndexError(error, kSampleTopK, p.topK, cap + 1, row);
}

/// Row r's token, or 0 with the error recorded.
__device__ inline int32_t tokenOf(const uint64_t *state, int64_t row, DeviceError *error) {
  if (state[rs::kStage] != rs::kDecided) {
    reportIndexError(error, kSampleUndrawn, (long long)state[rs::kStage], 1, row);
    return 0;
  }
  return int32_t(state[rs::kToken]);
}

template <typename T>
__global__ void sampleWholeKernel(const T *logits, const int64_t *seeds, const int64_t *steps,
                                  const float *temperature, const int32_t *topK,
                                  const float *topP, int32_t *ids, int64_t columns,
                                  int64_t vocab, int64_t mode, int64_t cap,
                                  DeviceError *error) {
  extern __shared__ uint64_t sampleShared[];
  const int64_t r = blockIdx.x;
  uint64_t *state = sampleShared, *words = state + rs::stateWords(1);
  auto *scratch = reinterpret_cast<rs::Candidate *>(words + rs::wordsOf(rs::kPhaseMass, cap));
  const rs::RowParams p = paramsOf(temperature, topK, topP, r);
  const rs::Block<DeviceRow<T>> block{{logits + r * columns}, validColumns(vocab, 0, columns), 0};
  int32_t phases[rs::kMaxPhases];
  const int n = rs::scheduleOf(mode, phases);
  for (int i = 0; i < n; ++i) {
    rs::localWords(phases[i], block, state, 1, p, cap, words);
    auto own = [words](int64_t) { return static_cast<const uint64_t *>(words); };
    reportProblem(rs::mergeWords(phases[i], own, 1, p, cap, vocab, uint64_t(seeds[r]), steps[r],
                                 state, scratch),
                  p, cap, r, error);
  }
  ids[r] = tokenOf(state, r, error);
}

template <typename T>
__global__ void sampleLocalKernel(const T *logits, const int64_t *state,
                                  const float *temperature, const int32_t *topK,
                                  const float *topP, int64_t *words, int64_t columns,
                                  int64_t offset, int64_t vocab, int64_t phase, int64_t cap,
                                  int64_t ranks) {
  const int64_t r = blockIdx.x;
  const rs::Block<DeviceRow<T>> block{
      {logits + r * columns}, validColumns(vocab, offset, columns), offset};
  const auto *s =
      state ? reinterpret_cast<const uint64_t *>(state + r * rs::stateWords(ranks)) : nullptr;
  rs::localWords(int32_t(phase), block, s, ranks, paramsOf(temperature, topK, topP, r), cap,
                 reinterpret_cast<uint64_t *>(words + r * rs::wordsOf(int32_t(phase), cap)));
}

__global__ void sampleMergeKernel(const int64_t *gathered, const int64_t *state,
                                  const float *temperature, const int32_t *topK,
                                  const float *topP, const int64_t *seeds, const int64_t *steps,
                                  int64_t *result, int64_t rows, int64_t ranks, int64_t vocab,
                                  int64_t phase, int64_t cap, DeviceError *error) {
  extern __shared__ uint64_t sampleShared[];
  const int64_t r = blockIdx.x, perState = rs::stateWords(ranks);
  const int64_t perRow = rs::wordsOf(int32_t(phase), cap);
  auto *s = reinterpret_cast<uint64_t *>(result + r * perState);
  if (state)
    for (int64_t i = 0; i < perState; ++i)
      s[i] = uint64_t(state[r * perState + i]);
  const auto *all = reinterpret_cast<const uint64_t *>(gathered);
  auto of = [all, rows, r, perRow](int64_t k) { return all + (k * rows + r) * perRow; };
  const rs::RowParams p = paramsOf(temperature, topK, topP, r);
  reportProblem(rs::mergeWords(int32_t(phase), of, ranks, p, cap, vocab, uint64_t(seeds[r]),
                               steps[r], s,
                               reinterpret_cast<rs::Candidate *>(sampleShared)),
                p, cap, r, error);
}

__global__ void sampleIdsKernel(const int64_t *state, int32_t *ids, int64_t rows, int64_t ranks,
                                DeviceError *error) {
  for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < rows;
       r += (int64_t)gridDim.x * blockDim.x)
    ids[r] = tokenOf(reinterpret_cast<const uint64_t *>(state + r * rs::stateWords(ranks)), r,
                     error);
}

} // namespace
} // namespace braid::cuda

extern "C" void braid_k_sample(braid_rt *rt, braid_dtype dt, const void *logits,
                               const int64_t *seeds, const int64_t *steps,
                               const float *temperature, const int32_t *top_k,
                               const float *top_p, int32_t *ids, int64_t rows, int64_t columns,
                               int64_t vocab, int64_t mode, int64_t top_k_cap) {
  using namespace braid::cuda;
  namespace rs = braid::rt::sampling;
  checkRows("sample", rows);
  if (rows <= 0)
    return;
  const size_t shared = sizeof(uint64_t) * size_t(rs::stateWords(1) +
                                                  rs::wordsOf(rs::kPhaseMass, top_k_cap)) +
                        sizeof(rs::Candidate) * size_t(2 * top_k_cap);
  BRAID_DISPATCH_FLOAT_IN("sample", dt, T,
                          launchWithShared("sample", unsigned(rows), 1, shared, streamOf(rt),
                                           sampleWholeKernel<T>, logits, seeds, steps,
                                           temperature, top_k, top_p, ids, columns, vocab, mode,
                                           top_k_cap, deviceErrorRecord()));
}

extern "C" void braid_k_sample_local(braid_rt *rt, braid_dtype dt, const void *logits,
                                     const int64_t *state, const float *temperature,
                                     const int32_t *top_k, const float *top_p, int64_t *words,
                                     int64_t rows, int64_t columns, int64_t offset,
                                     int64_t vocab, int64_t phase, int64_t top_k_cap,
                                     int64_t ranks) {
  using namespace braid::cuda;
  checkRows("sample_local", rows);
  if (rows <= 0)
    return;
  BRAID_DISPATCH_FLOAT_IN("sample_local", dt, T,
                          launch("sample_local", unsigned(rows), 1, streamOf(rt),
                                 sampleLocalKernel<T>, logits, state, temperature, top_k, top_p,
                                 words, columns, offset, vocab, phase, top_k_cap, ranks));
}

extern "C" void braid_k_sample_merge(braid_rt *rt, const int64_t *gathered,
                                     const int64_t *state, const float *temperature,
                                     const int32_t *top_k, const float *top_p,
                                     const int64_t *seeds, const int64_t *steps, int64_t *result,
                                     int64_t rows, int64_t ranks, int64_t vocab, int64_t phase,
                                     int64_t top_k_cap) {
  using namespace braid::cuda;
  checkRows("sample_merge", rows);
  if (rows <= 0)
    return;
  const size_t shared = sizeof(braid::rt::sampling::Candidate) * size_t(2 * ranks * top_k_cap);
  launchWithShared("sample_merge", unsigned(rows), 1, shared, streamOf(rt), sampleMergeKernel,
                   gathered, state, temperature, top_k, top_p, seeds, steps, result, rows, ranks,
                   vocab, phase, top_k_cap, deviceErrorRecord());
}

extern "C" void braid_k_sample_ids(braid_rt *rt, const int64_t *state, int32_t *ids,
                                   int64_t rows, int64_t ranks) {
  using namespace braid::cuda;
  launchElements("sample_ids", rows, streamOf(rt), sampleIdsKernel, state, ids, rows, ranks,
                 deviceErrorRecord());
}
