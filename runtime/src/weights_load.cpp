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
#include <cstring>
#include <fcntl.h>
#include <map>
#include <memory>
#include <sys/mman.h>
#include <sys/stat.h>
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

/// The global shape `p` has in this program.
const std::vector<int64_t> &globalShape(const Persistent &p) {
  return (p.zeroAxes.empty() ? p.layout : p.zeroBlock).global;
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

/// Row-major strides of `shape`, the last two swapped with `transpose`:
/// the element of the transposed view at index i is at sum(i[d] * s[d]).
std::vector<int64_t> readStrides(const Piece &piece) {
  const size_t rank = piece.view.size();
  std::vector<int64_t> strides(rank, 1);
  for (size_t d = rank; d-- > 1;)
    strides[d - 1] = strides[d] * piece.view[d];
  if (piece.transpose)
    std::swap(strides[rank - 2], strides[rank - 1]);
  return strides;
}

float loadElement(const char *src, braid_dtype dtype, int64_t i) {
  if (dtype == BRAID_F32) {
    float v;
    std::memcpy(&v, src + 4 * i, 4);
    return v;
  }
  uint16_t bits;
  std::memcpy(&bits, src + 2 * i, 2);
  return dtype == BRAID_BF16 ? bf16_to_float(bits) : f16_to_float(bits);
}

void storeElement(char *dst, braid_dtype dtype, int64_t i, float v) {
  if (dtype == BRAID_F32) {
    std::memcpy(dst + 4 * i, &v, 4);
    return;
  }
  uint16_t bits = dtype == BRAID_BF16 ? float_to_bf16(v) : float_to_f16(v);
  std::memcpy(dst + 2 * i, &bits, 2);
}

/// Copies `count` elements from src (every `step`-th from `at`) to dst (from
/// `to`), converting the type: the same type and a step of 1 is a memcpy.
void copyRow(const char *src, braid_dtype srcType, int64_t at, int64_t step, char *dst,
             braid_dtype dstType, int64_t to, int64_t count) {
  if (srcType == dstType && step == 1) {
    const int64_t size = braid_dtype_size(srcType);
    std::memcpy(dst + to * size, src + at * size, size_t(count * size));
    return;
  }
  for (int64_t k = 0; k < count; ++k)
    storeElement(dst, dstType, to + k, loadElement(src, srcType, at + k * step));
}

/// A tensor's local buffer being filled: its slice and the host copy.
struct Target {
  const LocalSlice &slice;
  char *host;
  braid_dtype dtype;
};

/// Copies the part `common` of `piece` (bytes at `src`) that lies in the
/// box `need` of `target`, row by row along the last dimension.
void copyCommon(const Piece &piece, const char *src, const Box &common, const Placed &need,
                const Target &target) {
  const size_t rank = common.shape.size();
  const std::vector<int64_t> strides = readStrides(piece);
  const int64_t count = rank ? common.shape[rank - 1] : 1;
  const int64_t step = rank ? strides[rank - 1] : 1;
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d)
    rows *= common.shape[d];
  std::vector<int64_t> index(rank, 0), local(rank);
  for (int64_t row = 0; row < rows && count > 0; ++row) {
    int64_t at = 0;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t global = common.start[d] + index[d];
      at += (piece.from[d] + global - piece.box.start[d]) * strides[d];
      local[d] = need.local[d] + global - need.global.start[d];
    }
    const int64_t to = rowMajor(local, target.slice.block->local) - target.slice.base;
    copyRow(src, piece.dtype, at, step, target.host, target.dtype, to, count);
    for (size_t d = rank > 0 ? rank - 1 : 0; d-- > 0;) {
      if (++index[d] < common.shape[d])
        break;
      index[d] = 0;
    }
  }
}

/// Fills `p`'s local buffer from the pieces of `t`: its slice, padding zero.
std::string loadTensor(braid_rt *rt, const Persistent &p, const Tensor &t, Files &files) {
  const LocalSlice slice = localSlice(rt, p);
  std::vector<char> host(size_t(p.bytes), 0);
  const Target target{slice, host.data(), p.desc->dtype};
  int64_t wanted = 0, covered = 0;
  std::string error;
  for (const Placed &need : slice.boxes) {
    wanted += need.global.numel();
    for (const Piece &piece : t.pieces) {
      const Box common = need.global.intersect(piece.box);
      if (common.numel() == 0)
        continue;
      const MappedFile *file = files.get(piece.file, &error);
      const safetensors::Entry *entry = file ? findEntry(*file, piece, piece.file, &error) : nullptr;
      if (!entry)
        return error;
      copyCommon(piece, file->data(*entry), common, need, target);
      covered += common.numel();
    }
  }
  if (covered != wanted)
    return "the pieces of tensor '" + t.name + "' in " + files.mapPath() + " hold " +
           std::to_string(covered) + " of the " + std::to_string(wanted) +
           " elements this rank needs (they overlap)";
  rt->backend->copyToDevice(rt->arena + p.desc->offset, host.data(), p.bytes);
  return "";
}

} // namespace

bool openWeights(braid_rt *rt, const CheckpointRun &run, const std::string &path, Map *out) {
  std::string text, error;
  if (!ckpt::readWholeFile(path, &text, &error) && error.empty())
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
  int64_t ours = 0;
  if (run.countsTensors)
    for (const Persistent &p : *run.persistent)
      ours += p.param && !p.desc->mirror && !isState(p.desc->name);
  const int64_t total = reduceOverWorld(rt, ours, BRAID_RED_SUM);
  if (total != int64_t(out->tensors.size()))
    error = path + " holds " + std::to_string(out->tensors.size()) +
            " tensors, this run's programs " + std::to_string(total) + " parameters: it maps " +
            out->source + " onto another model";
  return agreeOnError(rt, error, "init-from");
}

bool loadWeights(braid_rt *rt, const CheckpointRun &run, const Map &map) {
  Files files(map, /*mapBytes=*/true);
  std::string error;
  for (const Persistent &p : *run.persistent) {
    if (!p.param || isState(p.desc->name))
      continue;
    error = loadTensor(rt, p, *map.find(p.desc->name), files);
    if (!error.empty())
      break;
  }
  rt->backend->synchronize();
  return agreeOnError(rt, error, "init-from");
}

} // namespace braid::rt::weights
