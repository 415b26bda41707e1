//===- internal.h - cudasim: what its sources share ------------------------===//

#ifndef BRAID_CUDASIM_INTERNAL_H
#define BRAID_CUDASIM_INTERNAL_H

#include "cudasim/cudasim.h"

namespace cudasim {

/// The error the next cudaGetLastError() returns (per host thread, as CUDA's).
void setLastError(cudaError_t error);

/// An H200's memory, which cudaGetDeviceProperties and cudaMemGetInfo report
/// (the latter less what is allocated).
constexpr size_t kDeviceMemoryBytes = size_t(141) << 30;

/// Whether `stream` is the legacy default stream (null) or a live created one.
bool knownStream(cudaStream_t stream);

/// The element types cuBLASLt's and NCCL's emulations read and write, each
/// mapping its own enum onto these (scalars.cpp).
enum class Scalar { F32, F64, F16, BF16, I8, U8, I32, U32 };
size_t scalarBytes(Scalar t);
/// Element i of the array at p, as a double (exact for every type here).
double loadScalar(Scalar t, const void *p, size_t i);
/// Stores v into element i: floating types rounded to nearest even (f16 and
/// bf16 from v rounded to f32 first, as a kernel's f32 result), integers
/// truncated.
void storeScalar(Scalar t, void *p, size_t i, double v);

/// The row of `table` whose `value` is `value`, or null: the names and
/// messages of the emulated libraries' status codes.
template <typename Row, size_t N, typename Value>
const Row *findRow(const Row (&table)[N], Value value) {
  for (const Row &row : table)
    if (row.value == value)
      return &row;
  return nullptr;
}

/// A status code and its text.
template <typename Value> struct StatusText {
  Value value;
  const char *text;
};

/// The text of `value` in `table`, or `unknown`.
template <typename Value, size_t N>
const char *textOf(const StatusText<Value> (&table)[N], Value value, const char *unknown) {
  const StatusText<Value> *row = findRow(table, value);
  return row ? row->text : unknown;
}

/// Aborts with `message` (printf format) prefixed by "cudasim: ".
[[noreturn]] void fail(const char *format, ...) __attribute__((format(printf, 1, 2)));

} // namespace cudasim

#endif // BRAID_CUDASIM_INTERNAL_H
