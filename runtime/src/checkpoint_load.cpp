//===- checkpoint_load.cpp - resuming from sharded checkpoints ------------===//
//
// Every rank reads the manifest and checks it against its program; then each
// fills its local buffers from the saved pieces that overlap its slices
// (checkpoint.h). Nothing is written before every rank has succeeded, and the
// first problem ends the run with a message naming its file.
//
//===----------------------------------------------------------------------===//

#include "checkpoint.h"

#include "rng.h"
#include "safetensors.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <sys/stat.h>
#include <system_error>

namespace fs = std::filesystem;

namespace braid::rt {

using namespace ckpt;

namespace {

/// The checkpoint `dir` names: itself when it holds a manifest, else the one
/// its `latest` names.
std::string resolve(std::string dir, std::string *path) {
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  std::error_code ec;
  if (fs::exists(dir + "/manifest.json", ec)) {
    *path = dir;
    return "";
  }
  if (!fs::exists(dir + "/latest", ec))
    return fs::is_directory(dir, ec)
               ? dir + " holds no checkpoint (neither manifest.json nor latest)"
               : "checkpoint directory " + dir + " does not exist";
  std::string name, error;
  if (!readWholeFile(dir + "/latest", &name, &error))
    return error;
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back())))
    name.pop_back();
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    return dir + "/latest does not name a checkpoint in " + dir + " (it holds '" + name + "')";
  *path = dir + "/" + name;
  if (!fs::exists(*path + "/manifest.json", ec))
    return dir + "/latest names " + name + ", but " + *path + "/manifest.json does not exist";
  return "";
}

/// A tensor loads from a saved one of the same elements: the same shape, or
/// the same count where one side is flat (a ZeRO-1/2 plan's flat moments).
bool compatible(const std::vector<int64_t> &saved, const std::vector<int64_t> &ours) {
  if (saved == ours)
    return true;
  return (saved.size() == 1 || ours.size() == 1) && Box{{}, saved}.numel() == Box{{}, ours}.numel();
}

/// The run's program against the manifest `where` describes.
std::string checkModel(const CheckpointRun &run, const Manifest &m, const std::string &where) {
  const std::string model = run.program->name ? run.program->name : "";
  if (m.model != model)
    return where + " is a checkpoint of model '" + m.model + "'; this program is model '" + model +
           "'";
  for (const Persistent &p : *run.persistent) {
    if (!p.param)
      continue;
    const Tensor *t = m.find(p.desc->name);
    if (!t)
      return where + " has no tensor '" + p.desc->name +
             "', which this program has: it is a checkpoint of another model";
    if (t->dtype != p.desc->dtype)
      return "tensor '" + t->name + "' is " + safetensors::dtypeName(t->dtype) + " in " + where +
             ", " + safetensors::dtypeName(p.desc->dtype) + " in this program";
    if (!compatible(t->shape, globalShape(p)))
      return "tensor '" + t->name + "' has shape " + shapeText(t->shape) + " in " + where + ", " +
             shapeText(globalShape(p)) + " in this program";
  }
  return "";
}

/// Every file the manifest lists is there at its size, and every tensor's
/// pieces lie inside it, in listed files, and cover it.
std::string checkFiles(const std::string &dir, const Manifest &m, const std::string &where) {
  std::map<std::string, int64_t> sizes;
  for (const File &f : m.files) {
    std::string path = dir + "/" + f.name;
    struct stat st;
    if (f.name.find('/') != std::string::npos)
      return where + " lists a file outside the checkpoint: '" + f.name + "'";
    if (::stat(path.c_str(), &st) != 0)
      return "missing shard file " + path + " (listed in " + where + "): " + std::strerror(errno);
    if (int64_t(st.st_size) != f.bytes)
      return path + " is " + std::to_string(int64_t(st.st_size)) + " bytes; " + where + " says " +
             std::to_string(f.bytes) + " (truncated or corrupt)";
    sizes[f.name] = f.bytes;
  }
  for (const Tensor &t : m.tensors) {
    int64_t covered = 0;
    for (const Piece &p : t.pieces) {
      if (!sizes.count(p.file))
        return where + ": a piece of tensor '" + t.name + "' is in '" + p.file +
               "', which it does not list";
      for (size_t d = 0; d < t.shape.size(); ++d)
        if (p.box.start[d] + p.box.shape[d] > t.shape[d])
          return where + ": piece " + p.key + " lies outside tensor '" + t.name + "' " +
                 shapeText(t.shape);
      covered += p.box.numel();
    }
    if (covered != Box{{}, t.shape}.numel())
      return where + ": the pieces of tensor '" + t.name + "' hold " + std::to_string(covered) +
             " of its " + std::to_string(Box{{}, t.shape}.numel()) + " elements";
  }
  return "";
}

/// Reads the pieces of a checkpoint's files, each file's header once,
/// checking every piece against the manifest and its hash.
class PieceReader {
public:
  explicit PieceReader(std::string dir) : dir_(std::move(dir)) {}

  /// The bytes of `piece` of `tensor`; null with a message naming the file.
  const std::vector<char> *read(const Tensor &tensor, const Piece &piece, std::string *error) {
    auto cached = pieces_.find(piece.key);
    if (cached != pieces_.end())
      return &cached->second;
    const std::string path = dir_ + "/" + piece.file;
    FILE *file = std::fopen(path.c_str(), "rb");
    if (!file) {
      *error = "cannot open " + path + ": " + std::strerror(errno);
      return nullptr;
    }
    std::vector<char> bytes;
    bool ok = readChecked(file, path, tensor, piece, &bytes, error);
    std::fclose(file);
    if (!ok)
      return nullptr;
    return &(pieces_[piece.key] = std::move(bytes));
  }

  /// Forgets the pieces read so far (one tensor's).
  void clear() { pieces_.clear(); }

private:
  bool readChecked(FILE *file, const std::string &path, const Tensor &tensor, const Piece &piece,
                   std::vector<char> *bytes, std::string *error) {
    auto [it, fresh] = headers_.try_emplace(piece.file);
    if (fresh) {
      struct stat st;
      std::string why;
      if (::fstat(fileno(file), &st) != 0 ||
          !safetensors::readHeader(file, int64_t(st.st_size), &it->second, &why)) {
        headers_.erase(it);
        *error = path + ": " + (why.empty() ? std::strerror(errno) : why);
        return false;
      }
    }
    const safetensors::Entry *e = it->second.find(piece.key);
    if (!e) {
      *error = path + " has no entry '" + piece.key + "', which the manifest lists";
      return false;
    }
    if (e->dtype != tensor.dtype || e->shape != piece.box.shape) {
      *error = path + ": entry '" + piece.key + "' is " + safetensors::dtypeName(e->dtype) + " " +
               shapeText(e->shape) + "; the manifest says " + safetensors::dtypeName(tensor.dtype) +
               " " + shapeText(piece.box.shape);
      return false;
    }
    bytes->resize(size_t(e->end - e->begin));
    if (std::fseek(file, long(it->second.dataStart + e->begin), SEEK_SET) != 0 ||
        std::fread(bytes->data(), 1, bytes->size(), file) != bytes->size()) {
      *error = "cannot read entry '" + piece.key + "' of " + path;
      return false;
    }
    if (rng::fnv1a64(bytes->data(), bytes->size()) != piece.hash) {
      *error = path + ": entry '" + piece.key +
               "' does not match its hash in the manifest (the file is corrupt)";
      return false;
    }
    return true;
  }

  std::string dir_;
  std::map<std::string, safetensors::Header> headers_;
  std::map<std::string, std::vector<char>> pieces_;
};

std::vector<int64_t> minus(const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
  std::vector<int64_t> out(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    out[i] = a[i] - b[i];
  return out;
}

std::vector<int64_t> plus(const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
  std::vector<int64_t> out(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    out[i] = a[i] + b[i];
  return out;
}

/// Fills the box `need` of the local buffer `host` (slice `slice`) from the
/// pieces of `saved` that overlap `box` (in the saved tensor's shape), the
/// box's elements being those of the flat run from `flat` in the buffer
/// from `at` when the shapes differ. Adds what it copied to `covered`.
struct Fill {
  const Tensor &saved;
  const LocalSlice &slice;
  char *host;
  int64_t elementSize;
  PieceReader &reader;
  int64_t covered = 0;

  /// The same shape: the box `need` of the global tensor.
  bool box(const Placed &need, std::string *error) {
    return copyOverlaps(
        need.global, error, [&](const Piece &piece, const Box &common, const char *data) {
          copyBox({data, piece.box.shape, minus(common.start, piece.box.start), 0, host,
                   slice.block->local, plus(need.local, minus(common.start, need.global.start)),
                   slice.base, common.shape, elementSize});
        });
  }

  /// Another shape of the same elements: the flat run [flat, flat + count)
  /// of the global tensor, at `at` in the local buffer.
  bool run(int64_t flat, int64_t count, int64_t at, std::string *error) {
    for (const Box &part : flatRangeBoxes(saved.shape, flat, flat + count))
      if (!copyOverlaps(part, error, [&](const Piece &piece, const Box &common, const char *data) {
            // The buffer seen as the saved shape, its element `flat` at `at`.
            copyBox({data, piece.box.shape, minus(common.start, piece.box.start), 0, host,
                     saved.shape, common.start, flat - at, common.shape, elementSize});
          }))
        return false;
    return true;
  }

  /// copy(piece, common, piece's bytes) for each saved piece that overlaps
  /// `box` in `common`, then counts `common` as covered; false when a piece
  /// cannot be read.
  template <typename Copy> bool copyOverlaps(const Box &box, std::string *error, Copy &&copy) {
    for (const Piece &piece : saved.pieces) {
      Box common = box.intersect(piece.box);
      if (common.numel() == 0)
        continue;
      const std::vector<char> *bytes = reader.read(saved, piece, error);
      if (!bytes)
        return false;
      copy(piece, common, bytes->data());
      covered += common.numel();
    }
    return true;
  }
};

/// The flat runs (rows) of `need` in the global shape `shape`: fn(first
/// linear index, count, the local buffer's index of the first).
template <typename Fn>
bool forEachRow(const Placed &need, const std::vector<int64_t> &shape, const LocalSlice &slice,
                Fn fn) {
  const size_t rank = shape.size();
  const int64_t count = rank ? need.global.shape[rank - 1] : 1;
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d)
    rows *= need.global.shape[d];
  std::vector<int64_t> index(rank, 0);
  for (int64_t row = 0; row < rows && count > 0; ++row) {
    if (!fn(rowMajor(plus(need.global.start, index), shape), count,
            rowMajor(plus(need.local, index), slice.block->local) - slice.base))
      return false;
    for (size_t d = rank > 0 ? rank - 1 : 0; d-- > 0;) {
      if (++index[d] < need.global.shape[d])
        break;
      index[d] = 0;
    }
  }
  return true;
}

/// Fills `p`'s local buffer from the checkpoint: its slice, padding zero.
std::string loadTensor(braid_rt *rt, const Persistent &p, const Tensor &saved,
                       PieceReader &reader) {
  const LocalSlice slice = localSlice(rt, p);
  std::vector<char> host(size_t(p.bytes), 0);
  Fill fill{saved, slice, host.data(), braid_dtype_size(p.desc->dtype), reader};
  const std::vector<int64_t> &shape = globalShape(p);
  int64_t wanted = 0;
  std::string error;
  for (const Placed &need : slice.boxes) {
    wanted += need.global.numel();
    bool ok = saved.shape == shape
                  ? fill.box(need, &error)
                  : forEachRow(need, shape, slice, [&](int64_t flat, int64_t count, int64_t at) {
                      return fill.run(flat, count, at, &error);
                    });
    if (!ok)
      return error;
  }
  reader.clear();
  if (fill.covered != wanted)
    return "the pieces of tensor '" + saved.name + "' hold " + std::to_string(fill.covered) +
           " of the " + std::to_string(wanted) + " elements this rank needs";
  rt->backend->copyToDevice(rt->arena + p.desc->offset, host.data(), p.bytes);
  return "";
}

} // namespace

bool openCheckpoint(braid_rt *rt, const CheckpointRun &run, const std::string &dir, Resumed *out) {
  std::string path, text, error = resolve(dir, &path);
  const std::string where = path + "/manifest.json";
  auto manifest = std::make_shared<Manifest>();
  if (error.empty() && !readWholeFile(where, &text, &error))
    error = error.empty() ? "cannot read " + where : error;
  if (error.empty() && !parseManifest(text, manifest.get(), &error))
    error = where + ": " + error;
  if (error.empty())
    error = checkModel(run, *manifest, where);
  if (error.empty())
    error = checkFiles(path, *manifest, where);
  if (!agreeOnError(rt, error))
    return false;
  // Every tensor of the manifest belongs to one of the run's programs: a
  // model with more (another layer count) is another model.
  const int64_t total = countRunTensors(rt, run, [](const Persistent &) { return true; });
  if (total != int64_t(manifest->tensors.size()))
    error = where + " holds " + std::to_string(manifest->tensors.size()) +
            " tensors, this run's programs " + std::to_string(total) +
            ": it is a checkpoint of another model";
  if (!agreeOnError(rt, error))
    return false;
  out->path = path;
  out->step = manifest->step;
  out->seed = manifest->seed;
  out->manifest = std::move(manifest);
  return true;
}

bool loadCheckpoint(braid_rt *rt, const CheckpointRun &run, const Resumed &resumed) {
  PieceReader reader(resumed.path);
  std::string error;
  for (const Persistent &p : *run.persistent) {
    if (!p.param)
      continue;
    error = loadTensor(rt, p, *resumed.manifest->find(p.desc->name), reader);
    if (!error.empty())
      break;
  }
  rt->backend->synchronize();
  return agreeOnError(rt, error);
}

} // namespace braid::rt
