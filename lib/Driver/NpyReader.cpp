//===- NpyReader.cpp - read the .npy files Braid programs dump ------------===//

#include "braid/Driver/NpyReader.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <cstring>

namespace braid::driver {

namespace {

float halfToFloat(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1Fu, mant = bits & 0x3FFu;
  if (exp == 0x1F) {
    uint32_t u = sign | 0x7F800000u | (mant << 13);
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  float magnitude = exp ? std::ldexp(float(mant | 0x400u), int(exp) - 25)
                        : std::ldexp(float(mant), -24);
  return sign ? -magnitude : magnitude;
}

/// The value of `key` in the header dict: the text after "'key':" up to the
/// next top-level ',' or '}' (a tuple is kept whole).
llvm::StringRef dictValue(llvm::StringRef dict, llvm::StringRef key) {
  std::string quoted = "'" + key.str() + "'";
  size_t at = dict.find(quoted);
  if (at == llvm::StringRef::npos)
    return {};
  llvm::StringRef rest = dict.drop_front(at + quoted.size()).ltrim();
  if (!rest.consume_front(":"))
    return {};
  rest = rest.ltrim();
  size_t end =
      rest.starts_with("(") ? rest.find(')') + 1 : rest.find_first_of(",}");
  return rest.take_front(end).trim();
}

} // namespace

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

bool readNpy(const std::string &path, NpyArray *out, std::string *error) {
  auto fail = [&](const std::string &message) {
    *error = path + ": " + message;
    return false;
  };
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail(buffer.getError().message());
  llvm::StringRef data = (*buffer)->getBuffer();
  if (data.size() < 10 || !data.starts_with("\x93NUMPY"))
    return fail("not a .npy file");
  unsigned major = uint8_t(data[6]);
  size_t headerLength, headerStart;
  if (major == 1) {
    headerLength = uint8_t(data[8]) | size_t(uint8_t(data[9])) << 8;
    headerStart = 10;
  } else if ((major == 2 || major == 3) && data.size() >= 12) {
    headerLength = 0;
    for (int i = 3; i >= 0; --i)
      headerLength = headerLength << 8 | uint8_t(data[8 + size_t(i)]);
    headerStart = 12;
  } else {
    return fail("unsupported .npy version " + std::to_string(major));
  }
  if (data.size() < headerStart + headerLength)
    return fail("truncated header");
  llvm::StringRef dict = data.substr(headerStart, headerLength);
  NpyArray array;
  llvm::StringRef descr = dictValue(dict, "descr").trim("'\"");
  array.descr = descr.str();
  if (dictValue(dict, "fortran_order") != "False")
    return fail("only C-order arrays are read");
  llvm::StringRef shape = dictValue(dict, "shape");
  if (!shape.consume_front("(") || !shape.consume_back(")"))
    return fail("no shape in the header");
  int64_t numel = 1;
  llvm::SmallVector<llvm::StringRef> dims;
  shape.split(dims, ',');
  for (llvm::StringRef dim : dims) {
    dim = dim.trim();
    if (dim.empty())
      continue; // "(5,)"
    int64_t n;
    if (dim.getAsInteger(10, n) || n < 0)
      return fail("bad shape '(" + shape.str() + ")'");
    array.shape.push_back(n);
    numel *= n;
  }
  size_t size = descr == "<f4" || descr == "<i4"   ? 4
                : descr == "<f8" || descr == "<i8" ? 8
                : descr == "<f2"                   ? 2
                                                   : 0;
  if (size == 0)
    return fail("unsupported dtype '" + descr.str() + "'");
  llvm::StringRef body = data.drop_front(headerStart + headerLength);
  if (body.size() != size_t(numel) * size)
    return fail("expected " + std::to_string(numel * int64_t(size)) +
                " bytes of data, found " + std::to_string(body.size()));
  array.values.resize(size_t(numel));
  const char *p = body.data();
  for (int64_t i = 0; i < numel; ++i, p += size) {
    double &v = array.values[size_t(i)];
    if (descr == "<f4") {
      float f;
      std::memcpy(&f, p, 4);
      v = f;
    } else if (descr == "<f8") {
      std::memcpy(&v, p, 8);
    } else if (descr == "<f2") {
      uint16_t h;
      std::memcpy(&h, p, 2);
      v = halfToFloat(h);
    } else if (descr == "<i4") {
      int32_t x;
      std::memcpy(&x, p, 4);
      v = double(x);
    } else {
      int64_t x;
      std::memcpy(&x, p, 8);
      v = double(x);
    }
  }
  *out = std::move(array);
  return true;
}

} // namespace braid::driver
