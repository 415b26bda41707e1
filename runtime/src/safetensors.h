//===- safetensors.h - the container of checkpoint shards -------*- C++ -*-===//
//
// The safetensors format (huggingface/safetensors): an 8-byte little-endian
// header length N, N bytes of a JSON object (padded with spaces to a multiple
// of 8) mapping each tensor's key to {"dtype", "shape", "data_offsets":
// [begin, end]} (offsets into the data that follows the header) plus an
// optional "__metadata__" object of strings, then the tensors' bytes,
// contiguous, little-endian, row-major. It names bf16 (BF16), so a bf16
// tensor's bits are stored as they are.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_SAFETENSORS_H
#define BRAID_RUNTIME_SAFETENSORS_H

#include "braid/runtime.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace braid::rt::safetensors {

struct Entry {
  std::string key;
  braid_dtype dtype = BRAID_F32;
  std::vector<int64_t> shape;
  int64_t begin = 0, end = 0; ///< byte offsets into the data section
};

/// "F32", "BF16", "F16", "I32", "I64".
const char *dtypeName(braid_dtype dtype);
bool parseDtype(const std::string &name, braid_dtype *out);

using Metadata = std::vector<std::pair<std::string, std::string>>;

/// The bytes that precede the data of `entries`: the length and the header.
/// Assigns each entry's [begin, end), in order, the data contiguous.
std::string header(std::vector<Entry> *entries, const Metadata &metadata);

struct Header {
  std::vector<Entry> entries;
  Metadata metadata;
  int64_t dataStart = 0; ///< the file offset of the data section

  const Entry *find(const std::string &key) const;
};

/// Reads and checks the header of an open file of `fileBytes` bytes: every
/// entry's size matches its dtype and shape and lies inside the file. False
/// with a message (not naming the file) otherwise.
bool readHeader(FILE *file, int64_t fileBytes, Header *out, std::string *error);

} // namespace braid::rt::safetensors

#endif // BRAID_RUNTIME_SAFETENSORS_H
