//===- npy.cpp - minimal .npy writer --------------------------------------===//

#include "npy.h"

#include "rng.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace braid::rt::npy {

std::string header(const char *descr, const std::vector<int64_t> &shape) {
  std::string dict = "{'descr': '";
  dict += descr;
  dict += "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) {
    dict += std::to_string(shape[i]);
    dict += shape.size() == 1 ? "," : (i + 1 < shape.size() ? ", " : "");
  }
  dict += "), }";
  // magic(6) + version(2) + header length(2) + dict + padding + '\n' = 64k
  size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  uint16_t length = uint16_t(dict.size());
  out += char(length & 0xFF);
  out += char(length >> 8);
  out += dict;
  return out;
}

bool writeRaw(const std::string &path, const char *descr, const std::vector<int64_t> &shape,
              const void *data, int64_t bytes, std::string *error) {
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file) {
    if (error)
      *error = "cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  std::string head = header(descr, shape);
  bool ok = std::fwrite(head.data(), 1, head.size(), file) == head.size();
  if (ok && bytes > 0)
    ok = std::fwrite(data, 1, size_t(bytes), file) == size_t(bytes);
  ok = std::fclose(file) == 0 && ok;
  if (!ok && error)
    *error = "cannot write " + path;
  return ok;
}

bool writeTensor(const std::string &path, braid_dtype dtype, const std::vector<int64_t> &shape,
                 const void *hostData, std::string *error) {
  int64_t numel = 1;
  for (int64_t d : shape)
    numel *= d;
  switch (dtype) {
  case BRAID_F32:
    return writeRaw(path, "<f4", shape, hostData, numel * 4, error);
  case BRAID_F16:
    return writeRaw(path, "<f2", shape, hostData, numel * 2, error);
  case BRAID_I32:
    return writeRaw(path, "<i4", shape, hostData, numel * 4, error);
  case BRAID_I64:
    return writeRaw(path, "<i8", shape, hostData, numel * 8, error);
  case BRAID_BF16: {
    // numpy has no bfloat16: dump the exactly converted float32 values.
    std::vector<float> converted(static_cast<size_t>(numel));
    const auto *src = static_cast<const uint16_t *>(hostData);
    for (int64_t i = 0; i < numel; ++i)
      converted[size_t(i)] = rng::bf16ToF32(src[i]);
    return writeRaw(path, "<f4", shape, converted.data(), numel * 4, error);
  }
  }
  if (error)
    *error = "unknown dtype " + std::to_string(int(dtype));
  return false;
}

} // namespace braid::rt::npy
