//===- checkpoint_format.h - checkpoint manifests and files -----*- C++ -*-===//
//
// The files of a checkpoint (checkpoint.h describes the format): the
// manifest and each rank's index as data and as JSON, the names of pieces,
// and writing a file so that it survives a crash (fsync) before it is named.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CHECKPOINT_FORMAT_H
#define BRAID_RUNTIME_CHECKPOINT_FORMAT_H

#include "boxes.h"
#include "braid/runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace braid::rt::ckpt {

constexpr const char *kFormat = "braid-checkpoint";
constexpr int64_t kVersion = 1;

/// What the manifest says of the inputs and the rng (checkpoint.h).
constexpr const char *kInputs =
    "fixed: the tokens and labels are drawn once from the seed and every step reads the "
    "same batch; the data position is the step";
/// ... and when the run trained on a dataset (--data; the position in "data").
constexpr const char *kInputsData =
    "data: each step reads the next global batch of windows of seq + 1 tokens of the file in "
    "\"data\"; \"position\" is the number of windows read (data.h)";
constexpr const char *kRng =
    "counter-based (Philox4x32-10 keyed by seed and tensor name), used only to initialize: "
    "the seed is its whole state";

/// A box of a global tensor stored as the safetensors entry `key` of `file`.
struct Piece {
  std::string file, key;
  Box box;
  uint64_t hash = 0; ///< FNV-1a 64 of its bytes
};

struct Tensor {
  std::string name;
  braid_dtype dtype = BRAID_F32;
  std::vector<int64_t> shape; ///< global
  std::vector<Piece> pieces;
};

struct File {
  std::string name;
  int64_t bytes = 0;
};

/// Where a run on a dataset stands: `position` windows of the file of
/// `tokens` ids read (data.h). `tokens` -1: the inputs are drawn from the seed.
struct DataState {
  std::string file;
  int64_t tokens = -1, position = 0;
  bool used() const { return tokens >= 0; }
};

struct Manifest {
  std::string model, grid;
  int64_t step = 0, ranks = 0;
  uint64_t seed = 0;
  DataState data;
  std::vector<File> files;
  std::vector<Tensor> tensors;

  const Tensor *find(const std::string &name) const;
};

/// One rank's part: the tensors of its program (without pieces when it
/// holds only copies) and the file it wrote (empty: none).
struct RankIndex {
  int64_t rank = 0;
  File file;
  std::vector<Tensor> tensors;
};

std::string manifestJson(const Manifest &manifest);
/// False with a message (not naming the file) when `text` is not a
/// manifest of this format version.
bool parseManifest(const std::string &text, Manifest *out, std::string *error);

std::string indexJson(const RankIndex &index);
bool parseIndex(const std::string &text, RankIndex *out, std::string *error);

/// "layers.0.attn.wq@0,32": the tensor and the piece's start.
std::string pieceKey(const std::string &tensor, const std::vector<int64_t> &start);
/// "rank00003.safetensors", "rank00003.json".
std::string rankFile(int64_t rank, const char *extension);
/// "[64, 32]".
std::string shapeText(const std::vector<int64_t> &shape);

/// The whole file; false with a message naming it.
bool readWholeFile(const std::string &path, std::string *out, std::string *error);

/// A file written so that it is on disk before anything names it: created
/// (truncated), written, then fsynced and closed by commit(). Messages name
/// the file.
class DurableFile {
public:
  DurableFile() = default;
  DurableFile(const DurableFile &) = delete;
  DurableFile &operator=(const DurableFile &) = delete;
  ~DurableFile();
  bool open(const std::string &path, std::string *error);
  bool write(const void *data, int64_t bytes, std::string *error);
  bool commit(std::string *error);
  int64_t written() const { return written_; }

private:
  std::string path_;
  int fd_ = -1;
  int64_t written_ = 0;
};

/// Writes `text` into `path` durably (DurableFile).
bool writeDurably(const std::string &path, const std::string &text, std::string *error);
/// fsync of a directory: the names created or renamed in it are on disk.
bool syncDirectory(const std::string &path, std::string *error);

} // namespace braid::rt::ckpt

#endif // BRAID_RUNTIME_CHECKPOINT_FORMAT_H
