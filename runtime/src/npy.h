//===- npy.h - minimal .npy writer ------------------------------*- C++ -*-===//
//
// NumPy format version 1.0, little-endian, C order. bf16 has no numpy dtype:
// bf16 tensors are written as float32 arrays (each element converted exactly).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_NPY_H
#define BRAID_RUNTIME_NPY_H

#include "braid/runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace braid::rt::npy {

/// The header (magic, version, length, dict, padding) for `descr` ("<f4"...)
/// and `shape` (empty: a 0-d array).
std::string header(const char *descr, const std::vector<int64_t> &shape);

/// Writes `bytes` of raw little-endian data as an array of `descr`/`shape`.
bool writeRaw(const std::string &path, const char *descr, const std::vector<int64_t> &shape,
              const void *data, int64_t bytes, std::string *error);

/// Writes a host tensor of `dtype`; bf16 is converted to float32.
bool writeTensor(const std::string &path, braid_dtype dtype, const std::vector<int64_t> &shape,
                 const void *hostData, std::string *error);

} // namespace braid::rt::npy

#endif // BRAID_RUNTIME_NPY_H
