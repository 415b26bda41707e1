//===- device.cpp - cudasim: errors and the device --------------------------===//
//
// Errors (the per-thread last error, the names and messages of the codes
// cudasim returns) and the device an H200 node shows: 8 devices, their
// properties, stream priorities.
//
//===----------------------------------------------------------------------===//

#include "braid/abort_message.h"
#include "cudasim/cudasim.h"
#include "internal.h"

#include <cstdarg>
#include <cstdio>

namespace cudasim {

void fail(const char *format, ...) {
  va_list args;
  va_start(args, format);
  braid::abortWithMessage("cudasim: ", format, args);
}

namespace {
thread_local cudaError_t lastError = cudaSuccess;
} // namespace

void setLastError(cudaError_t error) { lastError = error; }

} // namespace cudasim

namespace {
struct ErrorText {
  cudaError_t value;
  const char *name, *message;
};
constexpr ErrorText kErrorTexts[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration",
     "invalid configuration argument"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection",
     "invalid copy direction for memcpy"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
};
} // namespace

const char *cudaGetErrorName(cudaError_t error) {
  const ErrorText *row = cudasim::findRow(kErrorTexts, error);
  return row ? row->name : "cudaErrorUnknown";
}
const char *cudaGetErrorString(cudaError_t error) {
  const ErrorText *row = cudasim::findRow(kErrorTexts, error);
  return row ? row->message : "unknown error";
}
cudaError_t cudaGetLastError() {
  cudaError_t e = cudasim::lastError;
  cudasim::lastError = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return cudasim::lastError; }

namespace {
/// An HGX H200 node has 8 GPUs: GPU ranks choose theirs by local rank.
constexpr int kDevices = 8;
thread_local int currentDevice = 0; // per host thread, as CUDA's
} // namespace

cudaError_t cudaGetDeviceCount(int *count) {
  *count = kDevices;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int *device) {
  *device = currentDevice;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= kDevices)
    return cudaErrorInvalidDevice;
  currentDevice = device;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device) {
  if (device < 0 || device >= kDevices)
    return cudaErrorInvalidDevice;
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof(prop->name), "cudasim (CPU emulation of an H200)");
  prop->totalGlobalMem = cudasim::kDeviceMemoryBytes;
  prop->sharedMemPerBlock = 48 * 1024;
  prop->sharedMemPerBlockOptin = 227 * 1024;
  prop->multiProcessorCount = 132;
  prop->major = 9;
  prop->minor = 0;
  prop->clockRate = 1980000;
  prop->memoryClockRate = 2619000;
  prop->memoryBusWidth = 6144;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest) {
  *least = 0;
  *greatest = -5;
  return cudaSuccess;
}
