//===- data.h - tokenized datasets: files, windows, order -------*- C++ -*-===//
//
// A training run's data (PROGRAM --data PATH) is a flat stream of token ids,
// memory-mapped, in one of three formats chosen by the file's extension:
//   .npy       a 1-d array of int32, int64, uint16 or uint32 (C order,
//              little-endian)
//   .bin       headerless uint16 ids, as nanoGPT writes them (uint32 with
//              --data-dtype uint32); or, when PATH.idx (the same stem) lies
//              beside it, Megatron's indexed pair
//   .idx       Megatron's indexed pair (the .bin of the same stem): the index
//              is "MMIDIDX\0\0", version u64 = 1, dtype code u8 (1 uint8,
//              2 int8, 3 int16, 4 int32, 5 int64, 8 uint16), sequence count
//              u64, document count u64, then int32 lengths, int64 byte
//              pointers (one per sequence) and int64 document indices (and
//              an int8 mode per sequence when multimodal); the stream is the
//              sequences in index order, which must lie back to back from
//              byte 0 of the .bin and fill it.
// The stream of N tokens holds W = (N - 1) / S windows of S + 1 tokens
// (window w: tokens [w S, w S + S], S the model's sequence length): inputs
// are a window's first S tokens, labels its last S. Training reads windows
// one after the other (position p: window p mod W of epoch p / W) in file
// order, or with --shuffle in the order of a permutation of [0, W) per epoch
// (DataOrder), and a global batch of B rows takes B consecutive positions.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_DATA_H
#define BRAID_RUNTIME_DATA_H

#include "rng.h"

#include <cstdint>
#include <string>

namespace braid::rt::data {

/// A memory-mapped stream of token ids.
class TokenFile {
public:
  TokenFile() = default;
  TokenFile(const TokenFile &) = delete;
  TokenFile &operator=(const TokenFile &) = delete;
  ~TokenFile();

  /// Opens `path` as its extension says; `rawDtype` ("uint16", "uint32", or
  /// empty: uint16) is the element type of a headerless .bin. False with a
  /// message naming the file when it cannot be read as a stream of ids.
  bool open(const std::string &path, const std::string &rawDtype, std::string *error);

  const std::string &path() const { return path_; }
  /// The format, for messages: "npy int32", "bin uint16", "megatron uint16".
  const std::string &format() const { return format_; }
  int64_t size() const { return count_; }

  /// Token i (0 <= i < size()).
  int64_t at(int64_t i) const;
  /// Tokens [start, start + count) as int32 / int64 into `out`.
  void read(int64_t start, int64_t count, int32_t *out) const;
  void read(int64_t start, int64_t count, int64_t *out) const;

  /// The first token of [start, end) outside [0, vocab), or -1 when none.
  int64_t firstOutside(int64_t start, int64_t end, int64_t vocab) const;

private:
  enum class Kind { U8, I8, I16, U16, I32, U32, I64 };
  /// Opens and maps `file` whole; `named` is how an open failure names it.
  bool map(const std::string &file, const std::string &named, std::string *error);
  bool openNpy(std::string *error);
  bool openMegatron(const std::string &idxPath, const std::string &binPath, std::string *error);

  std::string path_, format_;
  const unsigned char *base_ = nullptr; ///< the mapping
  size_t mapped_ = 0;
  const unsigned char *ids_ = nullptr; ///< the first id
  int64_t count_ = 0;
  Kind kind_ = Kind::U16;
};

/// Where the windows of a stream are read from: position p (0, 1, ...) is
/// window order(p mod W, p / W) of W windows.
class DataOrder {
public:
  DataOrder(int64_t windows, bool shuffle, uint64_t seed);
  int64_t windows() const { return windows_; }
  /// The window at position p.
  int64_t window(int64_t position) const;

private:
  /// A permutation of [0, W) per epoch: a 4-round Feistel network over the
  /// smallest even number of bits that holds W, its round function Philox
  /// (rng.h) keyed by (seed, "data.shuffle") with counter (half, round,
  /// epoch), cycle-walked into [0, W). O(1) per window, nothing stored.
  int64_t permute(int64_t i, int64_t epoch) const;

  int64_t windows_;
  bool shuffle_;
  rng::Key key_;
  int halfBits_ = 1;
};

} // namespace braid::rt::data

#endif // BRAID_RUNTIME_DATA_H
