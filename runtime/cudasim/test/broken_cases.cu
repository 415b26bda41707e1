//===- broken_cases.cu - code cudasim must catch, and its corrected forms --===//
//
// cudasim-broken-cases CASE runs one case and exits 0 when its result is
// right, 1 when it is wrong; cudasim itself aborts on a deadlock. Each broken
// case has a fixed twin that must pass (test/Runtime/cudasim-checks.test):
//   race / race-fixed          a block reads shared memory another thread
//                              writes, without (with) __syncthreads
//   deadlock                   half a warp at __syncthreads, half at __syncwarp
//   config                     1025 threads per block
//   smem / smem-fixed          64 KiB of dynamic shared memory without (with)
//                              cudaFuncSetAttribute
//   memcpy-kind                cudaMemcpyHostToDevice from device memory
//   stream-wait / stream-wait-fixed
//                              a kernel on one stream reads what a kernel on
//                              another writes, without (with) an event wait
//
//===----------------------------------------------------------------------===//

#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace {

__global__ void shiftKernel(const float *in, float *out, int n, int sync) {
  __shared__ float tile[256];
  int i = threadIdx.x;
  tile[i] = in[i];
  if (sync)
    __syncthreads();
  out[i] = tile[(i + 1) % n]; // the neighbour's element: needs the barrier
}

__global__ void halfBarrierKernel(float *out) {
  if (threadIdx.x < 16)
    __syncthreads(); // waits for lanes 16..31, which wait for these at
  else
    __syncwarp(); // the warp's barrier
  out[threadIdx.x] = 1.0f;
}

__global__ void fillKernel(float *out, float value) { out[threadIdx.x] = value; }

__global__ void bigSharedKernel(float *out) {
  extern __shared__ float big[];
  big[threadIdx.x] = 2.0f;
  __syncthreads();
  out[threadIdx.x] = big[(threadIdx.x + 1) % blockDim.x];
}

__global__ void gatedWriteKernel(const int *gate, float *buffer) {
  while (__atomic_load_n(gate, __ATOMIC_ACQUIRE) == 0) {
  }
  buffer[threadIdx.x] = 1.0f;
}

__global__ void copyKernel(const float *in, float *out) { out[threadIdx.x] = in[threadIdx.x]; }

bool allEqual(const float *device, int n, float value) {
  float host[256];
  cudaDeviceSynchronize();
  cudaMemcpy(host, device, sizeof(float) * n, cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; ++i)
    if (host[i] != value)
      return false;
  return true;
}

int race(bool sync) {
  const int n = 64;
  float host[n], *in, *out;
  for (int i = 0; i < n; ++i)
    host[i] = float(i);
  cudaMalloc(&in, sizeof(host));
  cudaMalloc(&out, sizeof(host));
  cudaMemcpy(in, host, sizeof(host), cudaMemcpyHostToDevice);
  shiftKernel<<<1, n>>>(in, out, n, sync ? 1 : 0);
  cudaMemcpy(host, out, sizeof(host), cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; ++i)
    if (host[i] != float((i + 1) % n)) {
      std::printf("race: out[%d] = %g, want %d\n", i, host[i], (i + 1) % n);
      return 1;
    }
  return 0;
}

int launchFails(cudaError_t want, const char *what) {
  cudaError_t got = cudaGetLastError();
  std::printf("%s: %s\n", what, cudaGetErrorName(got));
  return got == want ? 1 : 0; // the broken launch is reported: the check "fails" it
}

int streamWait(bool wait) {
  int *gate;
  float *buffer, *out;
  cudaHostAlloc(&gate, sizeof(int), cudaHostAllocMapped);
  *gate = 0;
  cudaMalloc(&buffer, 32 * sizeof(float));
  cudaMalloc(&out, 32 * sizeof(float));
  cudaMemset(buffer, 0, 32 * sizeof(float));
  cudaStream_t producer, consumer;
  cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking);
  gatedWriteKernel<<<1, 32, 0, producer>>>(gate, buffer);
  if (wait) {
    cudaEvent_t written;
    cudaEventCreate(&written);
    cudaEventRecord(written, producer);
    cudaStreamWaitEvent(consumer, written, 0);
  }
  copyKernel<<<1, 32, 0, consumer>>>(buffer, out);
  if (!wait)
    cudaStreamSynchronize(consumer); // the consumer has read before the gate opens
  __atomic_store_n(gate, 1, __ATOMIC_RELEASE);
  cudaStreamSynchronize(consumer);
  cudaStreamSynchronize(producer);
  bool ok = allEqual(out, 32, 1.0f);
  std::printf("stream-wait: the consumer read %s\n", ok ? "the producer's values" : "too early");
  return ok ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  std::string c = argc > 1 ? argv[1] : "";
  float *out;
  cudaMalloc(&out, 1024 * sizeof(float));
  if (c == "race" || c == "race-fixed")
    return race(c == "race-fixed");
  if (c == "deadlock") {
    halfBarrierKernel<<<1, 32>>>(out);
    return allEqual(out, 32, 1.0f) ? 0 : 1;
  }
  if (c == "config") {
    fillKernel<<<1, 1025>>>(out, 1.0f);
    return launchFails(cudaErrorInvalidConfiguration, "config");
  }
  if (c == "smem" || c == "smem-fixed") {
    size_t bytes = 64 * 1024;
    if (c == "smem-fixed")
      cudaFuncSetAttribute(bigSharedKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           int(bytes));
    bigSharedKernel<<<1, 128, bytes>>>(out);
    if (cudaGetLastError() != cudaSuccess)
      return 1;
    return allEqual(out, 128, 2.0f) ? 0 : 1;
  }
  if (c == "memcpy-kind") {
    float *other;
    cudaMalloc(&other, 16 * sizeof(float));
    cudaError_t e = cudaMemcpy(other, out, 16 * sizeof(float), cudaMemcpyHostToDevice);
    std::printf("memcpy-kind: %s\n", cudaGetErrorName(e));
    return e == cudaSuccess ? 0 : 1;
  }
  if (c == "stream-wait" || c == "stream-wait-fixed")
    return streamWait(c == "stream-wait-fixed");
  std::fprintf(stderr, "usage: cudasim-broken-cases CASE\n");
  return 2;
}
