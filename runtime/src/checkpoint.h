//===- checkpoint.h - sharded checkpoints: format, save, resume -*- C++ -*-===//
//
// PROGRAM --checkpoint-dir D [--checkpoint-every K] writes the training state
// after every K-th step and after the last one; PROGRAM --resume D continues
// from D's latest checkpoint (or from D itself when it is one), on the grid it
// was written on or on any other.
//
// Format (version 1). A checkpoint directory D holds
//   D/latest              one line, the name of the newest complete checkpoint
//                         ("step-8")
//   D/step-<K>/           the state after step K:
//     manifest.json       what the checkpoint holds (below), written last
//     rank<R>.safetensors the boxes of global tensors world rank R wrote
//                         (absent when R holds only copies of others' data)
//     rank<R>.json        rank R's index of them (merged into the manifest)
// manifest.json:
//   {"format": "braid-checkpoint", "version": 1, "model": <braid.model name>,
//    "step": K, "seed": S, "grid": "dp=2,tp=2", "ranks": 4,
//    "inputs": <how the step's batch is made>, "rng": <what draws remain>,
//    ["data": {"file": F, "tokens": N, "position": P},]  (--data runs)
//    "files": [{"name": "rank00000.safetensors", "bytes": N}, ...],
//    "tensors": [{"name": "layers.0.attn.wq", "dtype": "F32",
//                 "shape": [64, 64],          (global)
//                 "pieces": [{"file": "rank00000.safetensors",
//                             "key": "layers.0.attn.wq@0,0",
//                             "start": [0, 0], "shape": [64, 32],
//                             "fnv1a64": "<16 hex digits>"}, ...]}, ...]}
// Every parameter and optimizer state (the step counter, AdamW's moments) is
// there as its global tensor, cut into pieces: boxes at `start` of extent
// `shape` in natural order (no padding, zigzag undone), which together cover
// it exactly once. A piece is the safetensors entry `key` of `file`, its
// dtype the tensor's (bf16 as BF16: the bits themselves), and `fnv1a64` the
// FNV-1a 64 hash of its bytes. A tensor a ZeRO-1/2 plan keeps as flat ranges
// (a moment of an unsharded weight) has the flat global shape it had there
// ([N]); it loads into a program that holds it as [a, b] (a * b = N, row
// major) and back. The inputs are not saved: the tokens and labels are drawn
// once from the seed (rng.h) and every step reads the same batch, so the
// data position is the step; the seed is the whole of the rng's state (no
// draws after initialization). A run on a dataset (--data, data.h) also
// writes "data": {"file": F, "tokens": N, "position": P}, the windows it has
// read; a run resumed with a file of N tokens continues from window P (on any
// grid: the global batch is the model's), with another file from its start.
//
// Writing is collective over the world and atomic: rank 0 makes
// D/step-K.tmp/ (removing a stale one), every rank that owns data (coordinate
// 0 on the grid axes that only replicate it) writes and fsyncs its files
// there, then rank 0 merges the indexes into manifest.json, fsyncs it,
// renames the directory to D/step-K and replaces D/latest (write, fsync,
// rename). A crash at any point leaves D/latest naming the previous complete
// checkpoint; a .tmp directory is never read (and a run that writes into D
// again removes it). The parameters are completed first
// (braid_program.finish: ZeRO's deferred gathers).
//
// Resuming reads the manifest on every rank and checks it against the run's
// programs (the model's name, each tensor's dtype and shape, the number of
// tensors over all pipeline stages, every file present at its size); each
// rank then reads the pieces that overlap its own slice of each tensor
// (checking their hashes) and writes its local buffer: its block or ZeRO
// range, padding zero. Errors name the file and end the run before anything
// is written. The printed step numbers, dumps and the optimizer's step
// counter continue from K, and --steps N still names the last step.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CHECKPOINT_H
#define BRAID_RUNTIME_CHECKPOINT_H

#include "checkpoint_format.h"
#include "persistent.h"

#include <memory>
#include <string>
#include <vector>

namespace braid::rt {

/// The run a checkpoint is written from or loaded into.
struct CheckpointRun {
  const braid_program *program = nullptr;
  const std::vector<Persistent> *persistent = nullptr;
  /// This rank counts its program's tensors toward the run's total (one rank
  /// per pipeline stage: its leader).
  bool countsTensors = false;
};

/// What a resumed run continues from.
struct Resumed {
  std::string path; ///< the checkpoint's directory (D/step-K)
  int64_t step = 0;
  uint64_t seed = 0;
  std::shared_ptr<const ckpt::Manifest> manifest;
};

/// Collective over the world: the lowest rank with a non-empty `error`
/// prints it ("braid runtime: <topic>: ..." on stderr); true when no rank
/// has one.
bool agreeOnError(braid_rt *rt, const std::string &error, const char *topic = "checkpoint");

/// `value` reduced over the world with `op` (collective).
int64_t reduceOverWorld(braid_rt *rt, int64_t value, braid_redop op);

/// The run's parameters and states, each counted once over the world (the
/// leader of each pipeline stage counts its program's, mirrors left out),
/// those `counts` accepts (collective). A checkpoint or a weights map with
/// another number of tensors is another model's.
int64_t countRunTensors(braid_rt *rt, const CheckpointRun &run,
                        bool (*counts)(const Persistent &p));

/// Reads the checkpoint `dir` (D/step-K, or D holding `latest`) and checks
/// it against the run (collective over the world). False, the message
/// printed by one rank, when it cannot be resumed.
bool openCheckpoint(braid_rt *rt, const CheckpointRun &run, const std::string &dir, Resumed *out);

/// Fills every parameter and state of the run from the checkpoint opened as
/// `resumed` (collective over the world): each rank its own slice.
bool loadCheckpoint(braid_rt *rt, const CheckpointRun &run, const Resumed &resumed);

/// Whether the run may write checkpoints into `dir` (collective): it must
/// hold none, unless the run resumed from it. Then rank 0 removes what
/// interrupted writes left there (*.tmp).
bool checkCheckpointDir(braid_rt *rt, const std::string &dir, const Resumed *resumed);

/// Writes the state after `step` as dir/step-<step> and points dir/latest
/// at it (collective over the world; the parameters must be complete). False,
/// the message printed, when a rank could not write. `data`: where a run on
/// a dataset stands after the step.
bool saveCheckpoint(braid_rt *rt, const CheckpointRun &run, const std::string &dir, int64_t step,
                    uint64_t seed, const ckpt::DataState &data = {});

} // namespace braid::rt

#endif // BRAID_RUNTIME_CHECKPOINT_H
