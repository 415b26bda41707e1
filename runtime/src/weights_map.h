//===- weights_map.h - parameters from another model's files ----*- C++ -*-===//
//
// PROGRAM --init-from MAP starts from weights in safetensors files written by
// another framework (a Hugging Face model directory) instead of the rng. MAP
// is a weights map, written by `python3 -m braid.hf_weights DIR -o MAP`
// (python/braid/hf_weights.py knows each architecture's names and layouts;
// the runtime knows none): for every parameter of the model, the boxes of
// the files' entries it is made of.
//
// Format (version 1):
//   {"format": "braid-weights", "version": 1, "source": <the model directory>,
//    "files": [{"path": <absolute path>, "bytes": N}, ...],
//    "tensors": [{"name": "layers.0.attn.wq", "shape": [64, 64],
//                 "pieces": [{"file": <a path of files>, "key": <entry>,
//                             "dtype": "BF16", "entry_shape": [64, 64],
//                             "view": [64, 64], "transpose": true,
//                             "from": [0, 0], "to": [0, 0],
//                             "shape": [64, 64]}, ...]}, ...]}
// A piece copies a box: tensor[to + i] = T[from + i] for i < shape, T being
// the entry read as `view` (the same element count, the tensor's rank) and,
// with `transpose`, its last two axes swapped (an nn.Linear's [out, in] as
// Braid's [in, out]). GPT-2's fused c_attn is three pieces of one entry,
// Mixtral's experts one piece each of a stacked tensor. The pieces of a
// tensor cover it exactly once. Entries are F32, BF16 or F16 and convert to
// the parameter's dtype (f32 -> bf16 rounds to nearest even).
//
// Every rank reads the map and checks it against its programs before
// anything is loaded: each file there at its size, each entry in its file's
// header with the dtype and shape the map says, each piece inside its entry
// and its tensor, every parameter of the model (all but the optimizer's
// "opt.*" state and the inference caches "cache.*") in the map at its shape,
// and no tensor of the map outside the run's programs. Each rank then copies
// the parts of the pieces that overlap its own slices, from files it maps
// into memory: only those pages are read. The optimizer's state starts as
// the rng run's (zero moments, step 0).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_WEIGHTS_MAP_H
#define BRAID_RUNTIME_WEIGHTS_MAP_H

#include "boxes.h"
#include "checkpoint.h"

#include <string>
#include <vector>

namespace braid::rt::weights {

constexpr const char *kFormat = "braid-weights";
constexpr int64_t kVersion = 1;

/// A box of a tensor copied from an entry of a file (see the format above).
struct Piece {
  std::string file, key;
  braid_dtype dtype = BRAID_F32;
  std::vector<int64_t> entryShape, view;
  bool transpose = false;
  std::vector<int64_t> from; ///< in the (transposed) view
  Box box;                   ///< where it lies in the tensor, and its extent
};

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<Piece> pieces;
};

struct File {
  std::string path;
  int64_t bytes = 0;
};

struct Map {
  std::string path, source; ///< the map's file; the model it was written from
  std::vector<File> files;
  std::vector<Tensor> tensors;

  const Tensor *find(const std::string &name) const;
};

/// Parses `text` (the file `path`) and checks each piece against its tensor
/// and its view; false with a message naming the file otherwise.
bool parseMap(const std::string &text, const std::string &path, Map *out, std::string *error);

/// Whether the run's parameter `name` is state the map does not hold: the
/// optimizer's ("opt.m.W") or an inference cache ("cache.k").
bool isState(const std::string &name);

/// Reads the weights map `path` and checks it against the run and the files
/// it names (collective over the world). False, the message printed by one
/// rank, when the run cannot start from it.
bool openWeights(braid_rt *rt, const CheckpointRun &run, const std::string &path, Map *out);

/// Fills every parameter of the run the map holds (collective): each rank
/// its own slice, from the files mapped into memory.
bool loadWeights(braid_rt *rt, const CheckpointRun &run, const Map &map);

} // namespace braid::rt::weights

#endif // BRAID_RUNTIME_WEIGHTS_MAP_H
