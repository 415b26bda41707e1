//===- data.cpp - tokenized datasets: files, windows, order ---------------===//

#include "data.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace braid::rt::data {

namespace {

bool endsWith(const std::string &s, const char *suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

template <typename T> T load(const unsigned char *p) {
  T v;
  std::memcpy(&v, p, sizeof v); // little-endian hosts only (as the runtime)
  return v;
}

/// The value of 'key' in a .npy header dict, up to its closing delimiter
/// (the quotes of a string, the parentheses of a tuple, else ',' or '}').
std::string npyField(const std::string &dict, const std::string &key) {
  size_t at = dict.find("'" + key + "'");
  if (at == std::string::npos)
    return "";
  at = dict.find(':', at);
  if (at == std::string::npos)
    return "";
  at = dict.find_first_not_of(' ', at + 1);
  if (at == std::string::npos)
    return "";
  char open = dict[at];
  size_t end = open == '\''  ? dict.find('\'', at + 1)
               : open == '(' ? dict.find(')', at + 1)
                             : dict.find_first_of(",}", at);
  if (end == std::string::npos)
    return "";
  return open == '\'' ? dict.substr(at + 1, end - at - 1) : dict.substr(at, end - at + 1);
}

} // namespace

TokenFile::~TokenFile() {
  if (base_)
    ::munmap(const_cast<unsigned char *>(base_), mapped_);
}

bool TokenFile::map(const std::string &file, const std::string &named, std::string *error) {
  int fd = ::open(file.c_str(), O_RDONLY);
  if (fd < 0) {
    *error = named + ": " + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    *error = file + ": " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  mapped_ = size_t(st.st_size);
  void *p = mapped_ ? ::mmap(nullptr, mapped_, PROT_READ, MAP_SHARED, fd, 0) : nullptr;
  ::close(fd); // the mapping outlives the descriptor
  if (p == MAP_FAILED) {
    *error = file + ": cannot map it: " + std::strerror(errno);
    return false;
  }
  // An empty file maps nothing: the checks after find it too short.
  base_ = static_cast<const unsigned char *>(p);
  return true;
}

bool TokenFile::open(const std::string &path, const std::string &rawDtype, std::string *error) {
  path_ = path;
  const bool isNpy = endsWith(path, ".npy"), isBin = endsWith(path, ".bin"),
             isIdx = endsWith(path, ".idx");
  if (!isNpy && !isBin && !isIdx) {
    *error = path + ": unknown extension: a dataset is a .npy array, a headerless .bin of ids "
                    "or Megatron's .bin/.idx pair";
    return false;
  }
  const std::string stem = path.substr(0, path.size() - 4);
  const bool megatron = isIdx || (isBin && exists(stem + ".idx"));
  if (!rawDtype.empty() && (!isBin || megatron)) {
    *error = path + ": --data-dtype applies to a headerless .bin (a .npy or Megatron index "
                    "says its own type)";
    return false;
  }
  if (megatron)
    return openMegatron(stem + ".idx", stem + ".bin", error);
  if (!map(path, path, error))
    return false;
  if (isNpy)
    return openNpy(error);
  if (rawDtype.empty() || rawDtype == "uint16") {
    kind_ = Kind::U16;
  } else if (rawDtype == "uint32") {
    kind_ = Kind::U32;
  } else {
    *error = path + ": --data-dtype is uint16 or uint32, found '" + rawDtype + "'";
    return false;
  }
  const size_t size = kind_ == Kind::U16 ? 2 : 4;
  if (mapped_ % size) {
    *error = path + ": " + std::to_string(mapped_) + " bytes are not a whole number of " +
             (kind_ == Kind::U16 ? "uint16" : "uint32") + " ids";
    return false;
  }
  ids_ = base_;
  count_ = int64_t(mapped_ / size);
  format_ = std::string("bin ") + (kind_ == Kind::U16 ? "uint16" : "uint32");
  return true;
}

bool TokenFile::openNpy(std::string *error) {
  auto bad = [&](const std::string &why) {
    *error = path_ + ": not a .npy array of token ids: " + why;
    return false;
  };
  if (mapped_ < 10 || std::memcmp(base_, "\x93NUMPY", 6) != 0)
    return bad("no .npy magic");
  const int major = base_[6];
  size_t headerLen = 0, start = 0;
  if (major == 1) {
    headerLen = load<uint16_t>(base_ + 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (mapped_ < 12)
      return bad("truncated header");
    headerLen = load<uint32_t>(base_ + 8);
    start = 12;
  } else {
    return bad("format version " + std::to_string(major));
  }
  if (start + headerLen > mapped_)
    return bad("truncated header");
  const std::string dict(reinterpret_cast<const char *>(base_ + start), headerLen);
  const std::string descr = npyField(dict, "descr"), order = npyField(dict, "fortran_order"),
                    shape = npyField(dict, "shape");
  struct Type {
    const char *descr;
    Kind kind;
    const char *name;
  };
  static const Type kTypes[] = {{"<i4", Kind::I32, "int32"},
                                {"<i8", Kind::I64, "int64"},
                                {"<u2", Kind::U16, "uint16"},
                                {"<u4", Kind::U32, "uint32"}};
  const Type *type = nullptr;
  for (const Type &t : kTypes)
    if (descr == t.descr)
      type = &t;
  if (!type)
    return bad("dtype '" + descr + "' (int32, int64, uint16 or uint32 are read)");
  if (order.rfind("False", 0) != 0)
    return bad("Fortran order");
  // A 1-d shape: "(N,)".
  char *end = nullptr;
  const long long n = shape.size() > 2 ? std::strtoll(shape.c_str() + 1, &end, 10) : -1;
  if (n < 0 || !end || std::strcmp(end, ",)") != 0)
    return bad("shape " + shape + " (a 1-d array is read)");
  kind_ = type->kind;
  const size_t size = kind_ == Kind::I64 ? 8 : kind_ == Kind::U16 ? 2 : 4;
  if (start + headerLen + size_t(n) * size > mapped_)
    return bad("truncated: " + std::to_string(n) + " ids of " + type->name + " need " +
               std::to_string(start + headerLen + size_t(n) * size) + " bytes, the file has " +
               std::to_string(mapped_));
  ids_ = base_ + start + headerLen;
  count_ = n;
  format_ = std::string("npy ") + type->name;
  return true;
}

bool TokenFile::openMegatron(const std::string &idxPath, const std::string &binPath,
                             std::string *error) {
  // The index is read whole (it is small), the data file mapped.
  int fd = ::open(idxPath.c_str(), O_RDONLY);
  if (fd < 0) {
    *error = idxPath + ": " + std::strerror(errno);
    return false;
  }
  std::string idx;
  {
    struct stat st;
    if (::fstat(fd, &st) == 0) {
      idx.resize(size_t(st.st_size));
      ssize_t got = st.st_size ? ::pread(fd, idx.data(), idx.size(), 0) : 0;
      if (got != ssize_t(idx.size()))
        idx.clear();
    }
    ::close(fd);
  }
  auto bad = [&](const std::string &why) {
    *error = idxPath + ": not a Megatron index: " + why;
    return false;
  };
  constexpr size_t kHeader = 34; // magic 9, version 8, dtype 1, counts 8 + 8
  const auto *p = reinterpret_cast<const unsigned char *>(idx.data());
  if (idx.size() < kHeader)
    return bad("truncated header (" + std::to_string(idx.size()) + " bytes)");
  if (std::memcmp(p, "MMIDIDX\0\0", 9) != 0)
    return bad("no MMIDIDX magic");
  if (uint64_t version = load<uint64_t>(p + 9); version != 1)
    return bad("version " + std::to_string(version));
  struct Type {
    Kind kind;
    int size;
    const char *name;
  };
  static const Type kTypes[9] = {{}, // codes: Megatron's DType
                                 {Kind::U8, 1, "uint8"},
                                 {Kind::I8, 1, "int8"},
                                 {Kind::I16, 2, "int16"},
                                 {Kind::I32, 4, "int32"},
                                 {Kind::I64, 8, "int64"},
                                 {Kind::U8, 0, "float64"},
                                 {Kind::U8, 0, "float32"},
                                 {Kind::U16, 2, "uint16"}};
  const unsigned code = p[17];
  if (code < 1 || code > 8 || kTypes[code].size == 0)
    return bad("dtype code " + std::to_string(code) +
               (code == 6 || code == 7 ? std::string(" (") + kTypes[code].name + ")" : "") +
               " (integer ids are read)");
  const Type &type = kTypes[code];
  const uint64_t sequences = load<uint64_t>(p + 18), documents = load<uint64_t>(p + 26);
  // Lengths (4), pointers (8), document indices (8), and modes (1) when multimodal.
  const uint64_t limit = uint64_t(1) << 40;
  if (sequences > limit || documents > limit)
    return bad("counts " + std::to_string(sequences) + " sequences, " + std::to_string(documents) +
               " documents");
  const uint64_t plain = kHeader + 12 * sequences + 8 * documents;
  if (idx.size() != plain && idx.size() != plain + sequences)
    return bad(std::to_string(sequences) + " sequences and " + std::to_string(documents) +
               " documents take " + std::to_string(plain) + " bytes, the file has " +
               std::to_string(idx.size()) + " (truncated or malformed)");
  // The sequences back to back, in order: the stream is the data file.
  const unsigned char *lengths = p + kHeader, *pointers = lengths + 4 * sequences;
  int64_t at = 0;
  for (uint64_t i = 0; i < sequences; ++i) {
    const int32_t length = load<int32_t>(lengths + 4 * i);
    const int64_t pointer = load<int64_t>(pointers + 8 * i);
    if (length < 0 || pointer != at * type.size)
      return bad("sequence " + std::to_string(i) + " (length " + std::to_string(length) +
                 ", byte " + std::to_string(pointer) +
                 ") does not follow the one before it "
                 "(byte " +
                 std::to_string(at * type.size) + ")");
    at += length;
  }
  const unsigned char *docs = pointers + 8 * sequences;
  for (uint64_t i = 0; i < documents; ++i)
    if (uint64_t d = load<uint64_t>(docs + 8 * i); d > sequences)
      return bad("document " + std::to_string(i) + " starts at sequence " + std::to_string(d) +
                 " of " + std::to_string(sequences));

  if (!map(binPath, binPath + " (the data of " + idxPath + ")", error))
    return false;
  if (mapped_ != size_t(at * type.size)) {
    *error = binPath + ": " + std::to_string(mapped_) + " bytes, its index " + idxPath +
             " describes " + std::to_string(at) + " " + type.name + " ids (" +
             std::to_string(at * type.size) + " bytes)" +
             (mapped_ < size_t(at * type.size) ? ": truncated" : "");
    return false;
  }
  path_ = binPath;
  kind_ = type.kind;
  ids_ = base_;
  count_ = at;
  format_ = std::string("megatron ") + type.name;
  return true;
}

int64_t TokenFile::at(int64_t i) const {
  switch (kind_) {
  case Kind::U8:
    return ids_[i];
  case Kind::I8:
    return int8_t(ids_[i]);
  case Kind::I16:
    return load<int16_t>(ids_ + 2 * i);
  case Kind::U16:
    return load<uint16_t>(ids_ + 2 * i);
  case Kind::I32:
    return load<int32_t>(ids_ + 4 * i);
  case Kind::U32:
    return load<uint32_t>(ids_ + 4 * i);
  case Kind::I64:
    return load<int64_t>(ids_ + 8 * i);
  }
  return 0;
}

void TokenFile::read(int64_t start, int64_t count, int32_t *out) const {
  for (int64_t i = 0; i < count; ++i)
    out[i] = int32_t(at(start + i)); // checked against the vocabulary when opened
}

void TokenFile::read(int64_t start, int64_t count, int64_t *out) const {
  for (int64_t i = 0; i < count; ++i)
    out[i] = at(start + i);
}

int64_t TokenFile::firstOutside(int64_t start, int64_t end, int64_t vocab) const {
  for (int64_t i = start; i < end; ++i)
    if (int64_t id = at(i); id < 0 || id >= vocab)
      return i;
  return -1;
}

DataOrder::DataOrder(int64_t windows, bool shuffle, uint64_t seed)
    : windows_(windows), shuffle_(shuffle), key_(rng::keyOf(seed, "data.shuffle")) {
  while ((int64_t(1) << (2 * halfBits_)) < windows_)
    ++halfBits_;
}

int64_t DataOrder::window(int64_t position) const {
  const int64_t i = position % windows_, epoch = position / windows_;
  return shuffle_ ? permute(i, epoch) : i;
}

int64_t DataOrder::permute(int64_t i, int64_t epoch) const {
  const uint64_t mask = (uint64_t(1) << halfBits_) - 1;
  uint64_t x = uint64_t(i);
  do {
    uint64_t left = x >> halfBits_, right = x & mask;
    for (uint32_t round = 0; round < 4; ++round) {
      const uint64_t f =
          rng::philox4x32_10({uint32_t(right), round, uint32_t(epoch), uint32_t(epoch >> 32)},
                             key_)[0] &
          mask;
      const uint64_t next = left ^ f;
      left = right;
      right = next;
    }
    x = (left << halfBits_) | right;
  } while (x >= uint64_t(windows_)); // a cycle of the permutation leads back below W
  return int64_t(x);
}

} // namespace braid::rt::data
