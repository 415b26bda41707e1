//===- weights_load.cpp - starting from another model's weights -----------===//
//
// --init-from MAP (weights_map.h): every rank checks the map against its
// programs and the files' headers, then copies into its local buffers the
// parts of the pieces that overlap its slices, converting the element type.
// The files are mapped into memory, so a rank reads only the pages of its
// own slices (a tensor-parallel rank a column block of a transposed weight
// touches every row's page, not the whole file: the pages are the unit).
//
//===----------------------------------------------------------------------===//

#include "weights_map.h"

#include "braid/numeric.h"
#include "safetensors.h"

#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <memory>
#include <sys/mman.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace braid::rt::weights {

namespace {

/// One file of the map: its header, and its bytes mapped read-only.
class MappedFile {
public:
  MappedFile() = default;
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  ~MappedFile() {
    if (base_)
      ::munmap(base_, size_t(bytes_));
  }

  /// Reads the header of `file` (checking its size against the map's) and,
  /// with `map`, maps its bytes. False with a message naming the file.
  bool open(const File &file, const std::string &mapPath, bool map, std::string *error) {
    FILE *f = std::fopen(file.path.c_str(), "rb");
    if (!f) {
      *error = "cannot open " + file.path + " (listed in " + mapPath + "): " + std::strerror(errno);
      return false;
    }
    bool ok = readAndMap(f, file, mapPath, map, error);
    std::fclose(f);
    return ok;
  }

  const safetensors::Header &header() const { return header_; }
  /// The bytes of `entry`.
  const char *data(const safetensors::Entry &entry) const {
    return static_cast<const char *>(base_) + header_.dataStart + entry.begin;
  }

private:
  bool readAndMap(FILE *f, const File &file, const std::string &mapPath, bool map,
                  std::string *error) {
    struct stat st;
    if (::fstat(fileno(f), &st) != 0) {
      *error = "cannot stat " + file.path + ": " + std::strerror(errno);
      return false;
    }
    bytes_ = int64_t(st.st_size);
    if (bytes_ != file.bytes) {
      *error = file.path + " is " + std::to_string(bytes_) + " bytes; " + mapPath + " says " +
               std::to_string(file.bytes) + " (truncated, or changed since the map was written)";
      return false;
    }
    std::string why;
    if (!safetensors::readHeader(f, bytes_, &header_, &why)) {
      *error = file.path + ": " + (why.empty() ? std::strerror(errno) : why);
      return false;
    }
    if (!map || bytes_ == 0)
      return true;
    base_ = ::mmap(nullptr, size_t(bytes_), PROT_READ, MAP_PRIVATE, fileno(f), 0);
    if (base_ == MAP_FAILED) {
      base_ = nullptr;
      *error = "cannot map " + file.path + " into memory: " + std::strerror(errno);
      return false;
    }
    return true;
  }

  safetensors::Header header_;
  void *base_ = nullptr;
  int64_t bytes_ = 0;
};

/// The map's files by path, each opened once.
class Files {
public:
  Files(const Map &map, bool mapBytes) : map_(map), mapBytes_(mapBytes) {}

  /// The file `path` of the map; null with a message when it is not listed
  /// or cannot be read.
  const MappedFile *get(const std::string &path, std::string *error) {
    auto found = files_.find(path);
    if (found != files_.end())
      return found->second.get();
    const File *listed = nullptr;
    for (const File &f : map_.files)
      listed = f.path == path ? &f : listed;
    if (!listed) {
      *error = map_.path + ": a piece is in " + path + ", which its 'files' do not list";
      return nullptr;
    }
    auto file = std::make_unique<MappedFile>();
    if (!file->open(*listed, map_.path, mapBytes_, error))
      return nullptr;
    return (files_[path] = std::move(file)).get();
  }

  /// Opens every file of the map now; get() then only looks files up, so
  /// that other threads may call it. False with the first file's error.
  bool openAll(std::string *error) {
    for (const File &f : map_.files)
      if (!get(f.path, error))
        return false;
    return true;
  }

  const std::string &mapPath() const { return map_.path; }

private:
  const Map &map_;
  bool mapBytes_;
  std::map<std::string, std::unique_ptr<MappedFile>> files_;
};

/// The entry `piece` names, checked against what the map says of it.
const safetensors::Entry *findEntry(const MappedFile &file, const Piece &piece,
                                    const std::string &path, std::string *error) {
  const safetensors::Entry *e = file.header().find(piece.key);
  if (!e) {
    *error = path + " has no tensor '" + piece.key + "', which the weights map lists";
    return nullptr;
  }
  if (e->dtype != piece.dtype || e->shape != piece.entryShape) {
    *error = path + ": tensor '" + piece.key + "' is " + safetensors::dtypeName(e->dtype) + " " +
             ckpt::shapeText(e->shape) + "; the weights map says " +
             safetensors::dtypeName(piece.dtype) + " " + ckpt::shapeText(piece.entryShape);
    return nullptr;
  }
  return e;
}

/// Why the run's programs cannot start from `map` ("" when they can).
std::string checkProgram(const CheckpointRun &run, const Map &map) {
  for (const Persistent &p : *run.persistent) {
    const std::string name = p.desc->name;
    if (!p.param || isState(name))
      continue;
    const Tensor *t = map.find(name);
    if (!t)
      return map.path + " has no tensor '" + name + "', which this program has: it maps " +
             map.source + " onto another model";
    if (t->shape != globalShape(p))
      return "tensor '" + name + "' has shape " + ckpt::shapeText(t->shape) + " in " + map.path +
             ", " + ckpt::shapeText(globalShape(p)) + " in this program";
    braid_dtype d = p.desc->dtype;
    if (d != BRAID_F32 && d != BRAID_BF16 && d != BRAID_F16)
      return "parameter '" + name + "' is " + safetensors::dtypeName(d) +
             ": weights load into F32, BF16 or F16 parameters";
  }
  return "";
}

/// Why the map's pieces do not match their files ("" when they do).
std::string checkFiles(const Map &map) {
  Files files(map, /*mapBytes=*/false);
  std::string error;
  for (const Tensor &t : map.tensors)
    for (const Piece &piece : t.pieces) {
      const MappedFile *file = files.get(piece.file, &error);
      if (!file || !findEntry(*file, piece, piece.file, &error))
        return error;
    }
  return "";
}

/// Row-major strides of the piece's view, the last two swapped with
/// `transpose`: the element of the transposed view at index i is at
/// sum(i[d] * s[d]).
std::vector<int64_t> readStrides(const Piece &piece) {
  const size_t rank = piece.view.size();
  std::vector<int64_t> strides(rank, 1);
  for (size_t d = rank; d-- > 1;)
    strides[d - 1] = strides[d] * piece.view[d];
  if (piece.transpose)
    std::swap(strides[rank - 2], strides[rank - 1]);
  return strides;
}

/// Row-major strides of `shape`.
std::vector<int64_t> rowStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

/// Element types as the copies read and write them (unaligned: an entry's
/// bytes need not be aligned in its file).
struct F32 {
  using Bits = float;
  static float get(Bits v) { return v; }
  static Bits put(float v) { return v; }
};
struct BF16 {
  using Bits = uint16_t;
  static float get(Bits v) { return bf16_to_float(v); }
  static Bits put(float v) { return float_to_bf16(v); }
};
struct F16 {
  using Bits = uint16_t;
  static float get(Bits v) { return f16_to_float(v); }
  static Bits put(float v) { return float_to_f16(v); }
};

/// A 2-d block of `rows` x `cols` elements: the source's element (r, c) at
/// src[r * srcRow + c * srcCol], the destination's at dst[r * dstRow + c].
struct Block {
  const char *src;
  int64_t srcRow, srcCol;
  char *dst;
  int64_t dstRow, rows, cols;
};

template <typename From, typename To> void copyBlock(const Block &b) {
  using S = typename From::Bits;
  using D = typename To::Bits;
  auto load = [&](int64_t i) {
    S v;
    std::memcpy(&v, b.src + i * int64_t(sizeof(S)), sizeof(S));
    return From::get(v);
  };
  auto store = [&](int64_t i, float v) {
    D bits = To::put(v);
    std::memcpy(b.dst + i * int64_t(sizeof(D)), &bits, sizeof(D));
  };
  if (b.srcCol == 1) { // rows of both are contiguous
    for (int64_t r = 0; r < b.rows; ++r)
      for (int64_t c = 0; c < b.cols; ++c)
        store(r * b.dstRow + c, load(r * b.srcRow + c));
    return;
  }
  // A transposed source, tile by tile through a small buffer: each tile's
  // source rows are read in one contiguous run each, and its destination rows
  // written so. Copying straight across would step through one side at a
  // power-of-two stride (a row of 2048 elements), every access then falling
  // into the same cache set: perf put 90% of a 1B model's load there.
  constexpr int64_t kTile = 64;
  float tile[kTile][kTile];
  for (int64_t r0 = 0; r0 < b.rows; r0 += kTile)
    for (int64_t c0 = 0; c0 < b.cols; c0 += kTile) {
      const int64_t rows = std::min(kTile, b.rows - r0), cols = std::min(kTile, b.cols - c0);
      for (int64_t c = 0; c < cols; ++c)
        for (int64_t r = 0; r < rows; ++r)
          tile[r][c] = load((r0 + r) * b.srcRow + (c0 + c) * b.srcCol);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
          store((r0 + r) * b.dstRow + c0 + c, tile[r][c]);
    }
}

template <typename From> void copyBlockTo(braid_dtype to, const Block &b) {
  if (to == BRAID_F32)
    return copyBlock<From, F32>(b);
  if (to == BRAID_BF16)
    return copyBlock<From, BF16>(b);
  copyBlock<From, F16>(b);
}

void copyBlockAs(braid_dtype from, braid_dtype to, const Block &b) {
  if (from == to && b.srcCol == 1) { // no conversion: a memcpy per row
    const int64_t size = braid_dtype_size(from);
    for (int64_t r = 0; r < b.rows; ++r)
      std::memcpy(b.dst + r * b.dstRow * size, b.src + r * b.srcRow * size, size_t(b.cols * size));
    return;
  }
  if (from == BRAID_F32)
    return copyBlockTo<F32>(to, b);
  if (from == BRAID_BF16)
    return copyBlockTo<BF16>(to, b);
  copyBlockTo<F16>(to, b);
}

/// Asks the kernel to read the pages of `common` in the source ahead
/// (MADV_WILLNEED: asynchronous reads of the whole range, where faulting
/// them in one by one reads 4 KiB at a time from a cold cache).
void prefetch(const char *src, int64_t size, const Piece &piece, const Box &common,
              const std::vector<int64_t> &strides) {
  int64_t first = 0, last = 0;
  for (size_t d = 0; d < strides.size(); ++d) {
    const int64_t start = piece.from[d] + common.start[d] - piece.box.start[d];
    first += start * strides[d];
    last += (start + common.shape[d] - 1) * strides[d];
  }
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = uintptr_t(src + first * size) / page * page;
  const uintptr_t end = uintptr_t(src + (last + 1) * size);
  ::madvise(reinterpret_cast<void *>(begin), size_t(end - begin), MADV_WILLNEED); // advice only
}

/// A tensor's local buffer being filled: its slice and where it is written
/// (the arena itself on a host-addressable backend, else a staging copy).
struct Target {
  const LocalSlice &slice;
  char *buffer;
  braid_dtype dtype;
};

/// Copies the part `common` of `piece` (bytes at `src`) that lies in the
/// box `need` of `target`: a 2-d block (the last two dimensions) for each
/// index of the others.
void copyCommon(const Piece &piece, const char *src, const Box &common, const Placed &need,
                const Target &target) {
  const size_t rank = common.shape.size();
  const std::vector<int64_t> srcStrides = readStrides(piece);
  const std::vector<int64_t> dstStrides = rowStrides(target.slice.block->local);
  const int64_t srcSize = braid_dtype_size(piece.dtype), dstSize = braid_dtype_size(target.dtype);
  // The block's dimensions: the last two (a vector's one, a scalar's none).
  const size_t inner = rank < 2 ? 0 : rank - 2;
  auto extent = [&](size_t d) { return d < rank ? common.shape[d] : 1; };
  auto stride = [&](const std::vector<int64_t> &s, size_t d) { return d < rank ? s[d] : 0; };
  const size_t rowDim = rank >= 2 ? rank - 2 : rank, colDim = rank >= 1 ? rank - 1 : rank;
  int64_t outer = 1;
  for (size_t d = 0; d < inner; ++d)
    outer *= common.shape[d];
  std::vector<int64_t> index(inner, 0);
  for (int64_t n = 0; n < outer; ++n) {
    int64_t at = 0, to = -target.slice.base;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t global = common.start[d] + (d < inner ? index[d] : 0);
      at += (piece.from[d] + global - piece.box.start[d]) * srcStrides[d];
      to += (need.local[d] + global - need.global.start[d]) * dstStrides[d];
    }
    copyBlockAs(piece.dtype, target.dtype,
                {src + at * srcSize, stride(srcStrides, rowDim), stride(srcStrides, colDim),
                 target.buffer + to * dstSize, stride(dstStrides, rowDim), extent(rowDim),
                 extent(colDim)});
    for (size_t d = inner; d-- > 0;) {
      if (++index[d] < common.shape[d])
        break;
      index[d] = 0;
    }
  }
}

/// fn(piece, its entry's bytes, common, need) for each part `common` of a
/// piece of `t` that lies in a box `need` of this rank's slice; the error of
/// a file that cannot be read, else "".
template <typename Fn>
std::string forEachOverlap(const LocalSlice &slice, const Tensor &t, Files &files, Fn fn) {
  std::string error;
  for (const Placed &need : slice.boxes)
    for (const Piece &piece : t.pieces) {
      const Box common = need.global.intersect(piece.box);
      if (common.numel() == 0)
        continue;
      const MappedFile *file = files.get(piece.file, &error);
      const safetensors::Entry *entry = file ? findEntry(*file, piece, piece.file, &error) : nullptr;
      if (!entry)
        return error;
      fn(piece, file->data(*entry), common, need);
    }
  return "";
}

/// Asks for the pages of `p`'s slice of the files ahead (prefetch).
std::string prefetchTensor(braid_rt *rt, const Persistent &p, const Tensor &t, Files &files) {
  return forEachOverlap(localSlice(rt, p), t, files,
                        [](const Piece &piece, const char *src, const Box &common, const Placed &) {
                          prefetch(src, braid_dtype_size(piece.dtype), piece, common,
                                   readStrides(piece));
                        });
}

/// Fills `p`'s local buffer from the pieces of `t`: its slice, padding zero.
/// `staging`: the host copy a device backend's buffer is written through.
std::string loadTensor(braid_rt *rt, const Persistent &p, const Tensor &t, Files &files,
                       std::vector<char> &staging) {
  const LocalSlice slice = localSlice(rt, p);
  const bool direct = rt->backend->hostAddressable();
  char *buffer = rt->arena + p.desc->offset;
  if (!direct) {
    staging.resize(std::max(staging.size(), size_t(p.bytes)));
    buffer = staging.data();
  }
  int64_t wanted = 0, covered = 0;
  for (const Placed &need : slice.boxes)
    wanted += need.global.numel();
  if (wanted != p.numel) // padding (a split that does not divide): zeros
    std::memset(buffer, 0, size_t(p.bytes));
  const Target target{slice, buffer, p.desc->dtype};
  std::string error = forEachOverlap(
      slice, t, files,
      [&](const Piece &piece, const char *src, const Box &common, const Placed &need) {
        copyCommon(piece, src, common, need, target);
        covered += common.numel();
      });
  if (!error.empty())
    return error;
  if (covered != wanted)
    return "the pieces of tensor '" + t.name + "' in " + files.mapPath() + " hold " +
           std::to_string(covered) + " of the " + std::to_string(wanted) +
           " elements this rank needs (they overlap)";
  if (!direct)
    rt->backend->copyToDevice(rt->arena + p.desc->offset, buffer, p.bytes);
  return "";
}

} // namespace

bool openWeights(braid_rt *rt, const CheckpointRun &run, const std::string &path, Map *out) {
  std::string text, error;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    error = path + " is a directory; --init-from takes the weights map of a model directory: " +
            "python3 -m braid.hf_weights " + path + " -o MAP.json (with the model's overrides)";
  else if (!ckpt::readWholeFile(path, &text, &error) && error.empty())
    error = "cannot read the weights map " + path;
  if (error.empty())
    parseMap(text, path, out, &error);
  if (error.empty())
    error = checkProgram(run, *out);
  if (error.empty())
    error = checkFiles(*out);
  if (!agreeOnError(rt, error, "init-from"))
    return false;
  // Every tensor of the map belongs to one of the run's programs (one rank
  // per pipeline stage counts its own): a map with more is another model's.
  const int64_t total =
      countRunTensors(rt, run, [](const Persistent &p) { return !isState(p.desc->name); });
  if (total != int64_t(out->tensors.size()))
    error = path + " holds " + std::to_string(out->tensors.size()) +
            " tensors, this run's programs " + std::to_string(total) + " parameters: it maps " +
            out->source + " onto another model";
  return agreeOnError(rt, error, "init-from");
}

bool loadWeights(braid_rt *rt, const CheckpointRun &run, const Map &map) {
  Files files(map, /*mapBytes=*/true);
  std::vector<const Persistent *> loaded;
  for (const Persistent &p : *run.persistent)
    if (p.param && !isState(p.desc->name))
      loaded.push_back(&p);
  std::vector<char> staging;
  std::string error;
  if (files.openAll(&error)) {
    // A thread asks for every range this rank reads, in the order the
    // copies read them, while the copies run: the reads of a cold cache
    // then stream beside the copies (asking for them all first took as
    // long as reading them, before the first copy). Advice only: a range
    // not read ahead yet is faulted in by the copy.
    std::thread ahead([&] {
      for (const Persistent *p : loaded)
        (void)prefetchTensor(rt, *p, *map.find(p->desc->name), files);
    });
    for (const Persistent *p : loaded) {
      error = loadTensor(rt, *p, *map.find(p->desc->name), files, staging);
      if (!error.empty())
        break;
    }
    ahead.join();
  }
  rt->backend->synchronize();
  return agreeOnError(rt, error, "init-from");
}

} // namespace braid::rt::weights
