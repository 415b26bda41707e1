//===- NpyReader.h - read the .npy files Braid programs dump ----*- C++ -*-===//
//
// The reading side of runtime/src/npy.cpp, for braid-run --verify: NumPy
// format versions 1 and 2, C order, little-endian float32/float16/float64 and
// int32/int64 (what the runtime writes; bf16 is dumped as float32). Values
// come back as doubles.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DRIVER_NPYREADER_H
#define BRAID_DRIVER_NPYREADER_H

#include <cstdint>
#include <string>
#include <vector>

namespace braid::driver {

struct NpyArray {
  std::string descr; ///< "<f4", "<i8", ...
  std::vector<int64_t> shape;
  std::vector<double> values; ///< row-major
};

/// Reads `path`; false with a message naming the file on anything else.
bool readNpy(const std::string &path, NpyArray *out, std::string *error);

/// "[2, 3]"
std::string shapeString(const std::vector<int64_t> &shape);

} // namespace braid::driver

#endif // BRAID_DRIVER_NPYREADER_H
