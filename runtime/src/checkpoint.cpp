//===- checkpoint.cpp - writing sharded checkpoints -----------------------===//
//
// The collective protocol of checkpoint.h: every rank writes the boxes it
// keeps into D/step-K.tmp, rank 0 publishes the directory by renaming it once
// every rank's files are on disk. Resuming is checkpoint_load.cpp.
//
//===----------------------------------------------------------------------===//

#include "checkpoint.h"

#include "rng.h"
#include "safetensors.h"

#include <climits>
#include <cstdio>
#include <filesystem>
#include <map>
#include <system_error>
#include <vector>

namespace fs = std::filesystem;

namespace braid::rt {

using namespace ckpt;

int64_t reduceOverWorld(braid_rt *rt, int64_t value, braid_redop op) {
  Backend &backend = *rt->backend;
  Communicator &comm = *braid_rt_comm(rt, "world")->impl;
  // Collectives take device memory (NCCL).
  void *buffer = backend.allocate(8);
  backend.copyToDevice(buffer, &value, 8);
  comm.allReduce(backend, buffer, buffer, 1, BRAID_I64, op)->wait(backend);
  backend.synchronize();
  backend.copyToHost(&value, buffer, 8);
  backend.release(buffer);
  return value;
}

int64_t countRunTensors(braid_rt *rt, const CheckpointRun &run,
                        bool (*counts)(const Persistent &p)) {
  int64_t ours = 0;
  if (run.countsTensors)
    for (const Persistent &p : *run.persistent)
      ours += p.param && !p.desc->mirror && counts(p);
  return reduceOverWorld(rt, ours, BRAID_RED_SUM);
}

bool agreeOnError(braid_rt *rt, const std::string &error, const char *topic) {
  const int64_t rank = rt->comms->worldRank();
  const int64_t first = reduceOverWorld(rt, error.empty() ? INT64_MAX : rank, BRAID_RED_MIN);
  if (first == INT64_MAX)
    return true;
  // Every rank may have met the same problem (a missing file): one says so.
  if (first == rank) {
    std::string who =
        rt->comms->worldSize() > 1 ? "rank " + std::to_string(rank) + ": " : std::string();
    std::fprintf(stderr, "braid runtime: %s%s: %s\n", who.c_str(), topic, error.c_str());
    std::fflush(stderr);
  }
  return false;
}

namespace {

bool isStepDirectory(const fs::directory_entry &entry) {
  std::string name = entry.path().filename().string();
  return entry.is_directory() && name.rfind("step-", 0) == 0 &&
         name.find(".tmp") == std::string::npos;
}

/// Removes what interrupted writes left in `dir` (*.tmp), which nothing reads.
void removeLeftovers(const std::string &dir) {
  std::error_code ec;
  std::vector<fs::path> leftovers;
  for (const fs::directory_entry &entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".tmp")
      leftovers.push_back(entry.path());
  for (const fs::path &path : leftovers)
    fs::remove_all(path, ec);
}

/// Rank 0's check of a checkpoint directory before the run writes into it.
std::string usableDirectory(const std::string &dir, const Resumed *resumed) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec && !fs::is_directory(dir))
    return "cannot create checkpoint directory " + dir + ": " + ec.message();
  // A run continues the checkpoints it resumed from; any other refuses to
  // mix its own with them.
  std::string found;
  if (!resumed || !fs::equivalent(fs::path(resumed->path).parent_path(), fs::path(dir), ec)) {
    if (fs::exists(fs::path(dir) / "latest"))
      found = dir + "/latest";
    for (const fs::directory_entry &entry : fs::directory_iterator(dir, ec))
      if (found.empty() && isStepDirectory(entry))
        found = entry.path().string();
  }
  if (!found.empty())
    return "checkpoint directory " + dir + " already holds checkpoints (" + found +
           "): resume from them with --resume " + dir + ", or write into another directory";
  removeLeftovers(dir);
  return "";
}

/// A tensor this rank keeps a copy of, as the entries of its file.
struct Kept {
  const Persistent *p;
  LocalSlice slice;
  size_t tensor; ///< its index in RankIndex::tensors (pieces in slice order)
};

/// This rank's tensors, and which of them it writes: its index without the
/// hashes, the entries of its file, and where their data comes from.
void planRankFile(braid_rt *rt, const CheckpointRun &run, const std::string &file, RankIndex *index,
                  std::vector<safetensors::Entry> *entries, std::vector<Kept> *kept) {
  for (const Persistent &p : *run.persistent) {
    // A mirror's owner (a lower pipeline stage) writes it.
    if (!p.param || p.desc->mirror)
      continue;
    LocalSlice slice = localSlice(rt, p);
    Tensor t{p.desc->name, p.desc->dtype, slice.block->global, {}};
    if (keepsSlice(rt, p)) {
      for (const Placed &box : slice.boxes) {
        std::string key = pieceKey(t.name, box.global.start);
        t.pieces.push_back({file, key, box.global, 0});
        entries->push_back({key, t.dtype, box.global.shape});
      }
      kept->push_back({&p, std::move(slice), index->tensors.size()});
    }
    index->tensors.push_back(std::move(t));
  }
}

/// Writes one tensor's pieces (from its local buffer) into `file`, hashing
/// each into the index.
bool writePieces(braid_rt *rt, const Kept &k, Tensor *t, DurableFile *file, std::string *error) {
  const braid_tensor_desc &d = *k.p->desc;
  const int64_t size = braid_dtype_size(d.dtype);
  std::vector<char> local(size_t(k.p->bytes));
  rt->backend->synchronize();
  rt->backend->copyToHost(local.data(), rt->arena + d.offset, k.p->bytes);
  std::vector<char> piece;
  for (size_t i = 0; i < k.slice.boxes.size(); ++i) {
    const Placed &box = k.slice.boxes[i];
    piece.assign(size_t(box.global.numel() * size), 0);
    copyBox({local.data(), k.slice.block->local, box.local, k.slice.base, piece.data(),
             box.global.shape, std::vector<int64_t>(box.global.shape.size(), 0), 0,
             box.global.shape, size});
    t->pieces[i].hash = rng::fnv1a64(piece.data(), piece.size());
    if (!file->write(piece.data(), int64_t(piece.size()), error))
      return false;
  }
  return true;
}

/// Writes this rank's safetensors file (when it keeps anything) and its
/// index into `tmp`.
std::string writeRankFiles(braid_rt *rt, const CheckpointRun &run, const std::string &tmp,
                           int64_t step) {
  const int64_t rank = rt->comms->worldRank();
  RankIndex index;
  index.rank = rank;
  std::vector<safetensors::Entry> entries;
  std::vector<Kept> kept;
  const std::string name = rankFile(rank, "safetensors");
  planRankFile(rt, run, name, &index, &entries, &kept);
  std::string error;
  if (!entries.empty()) {
    std::string head = safetensors::header(
        &entries,
        {{"format", kFormat}, {"rank", std::to_string(rank)}, {"step", std::to_string(step)}});
    DurableFile file;
    if (!file.open(tmp + "/" + name, &error) ||
        !file.write(head.data(), int64_t(head.size()), &error))
      return error;
    for (const Kept &k : kept)
      if (!writePieces(rt, k, &index.tensors[k.tensor], &file, &error))
        return error;
    if (!file.commit(&error))
      return error;
    index.file = {name, file.written()};
  }
  if (!writeDurably(tmp + "/" + rankFile(rank, "json"), indexJson(index), &error))
    return error;
  return "";
}

/// Adds one rank's index to the manifest; the ranks must agree on every
/// tensor they both list.
std::string mergeIndex(const RankIndex &index, Manifest *m, std::map<std::string, size_t> *byName) {
  if (!index.file.name.empty())
    m->files.push_back(index.file);
  for (const Tensor &t : index.tensors) {
    auto [it, inserted] = byName->try_emplace(t.name, m->tensors.size());
    if (inserted) {
      m->tensors.push_back(t);
      continue;
    }
    Tensor &known = m->tensors[it->second];
    if (known.dtype != t.dtype || known.shape != t.shape)
      return "rank " + std::to_string(index.rank) + " holds tensor '" + t.name + "' as " +
             safetensors::dtypeName(t.dtype) + " " + shapeText(t.shape) + ", another rank as " +
             safetensors::dtypeName(known.dtype) + " " + shapeText(known.shape);
    known.pieces.insert(known.pieces.end(), t.pieces.begin(), t.pieces.end());
  }
  return "";
}

/// Rank 0: the manifest from every rank's index. The pieces must cover
/// each tensor once (what keepsSlice promises).
std::string buildManifest(braid_rt *rt, const CheckpointRun &run, const std::string &tmp,
                          int64_t step, uint64_t seed, Manifest *m) {
  m->model = run.program->name ? run.program->name : "";
  m->grid = rt->grid.str();
  m->step = step;
  m->seed = seed;
  m->ranks = rt->comms->worldSize();
  std::map<std::string, size_t> byName;
  for (int64_t r = 0; r < m->ranks; ++r) {
    std::string path = tmp + "/" + rankFile(r, "json"), text, error;
    RankIndex index;
    if (!readWholeFile(path, &text, &error))
      return error;
    if (!parseIndex(text, &index, &error))
      return path + ": " + error;
    if (std::string e = mergeIndex(index, m, &byName); !e.empty())
      return e;
  }
  for (const Tensor &t : m->tensors) {
    int64_t covered = 0, numel = Box{{}, t.shape}.numel();
    for (const Piece &p : t.pieces)
      covered += p.box.numel();
    if (covered != numel)
      return "the ranks wrote " + std::to_string(covered) + " elements of tensor '" + t.name +
             "', which has " + std::to_string(numel);
  }
  return "";
}

/// Rank 0: names the complete directory `tmp` dir/name, then dir/latest.
std::string publish(const std::string &dir, const std::string &name, const std::string &tmp) {
  std::string error;
  const fs::path final = fs::path(dir) / name, old = fs::path(dir) / (name + ".old.tmp");
  std::error_code ec;
  if (!syncDirectory(tmp, &error))
    return error;
  // A run that resumed from an earlier checkpoint writes this step again:
  // the new one replaces it.
  bool replacing = fs::exists(final);
  if (replacing) {
    fs::remove_all(old, ec);
    fs::rename(final, old, ec);
    if (ec)
      return "cannot move " + final.string() + " aside: " + ec.message();
  }
  fs::rename(tmp, final, ec);
  if (ec)
    return "cannot rename " + tmp + " to " + final.string() + ": " + ec.message();
  const std::string latest = dir + "/latest";
  if (!syncDirectory(dir, &error) || !writeDurably(latest + ".tmp", name + "\n", &error))
    return error;
  fs::rename(latest + ".tmp", latest, ec);
  if (ec)
    return "cannot rename " + latest + ".tmp to " + latest + ": " + ec.message();
  if (!syncDirectory(dir, &error))
    return error;
  if (replacing)
    fs::remove_all(old, ec);
  return "";
}

} // namespace

bool checkCheckpointDir(braid_rt *rt, const std::string &dir, const Resumed *resumed) {
  std::string error;
  if (rt->comms->worldRank() == 0)
    error = usableDirectory(dir, resumed);
  return agreeOnError(rt, error);
}

bool saveCheckpoint(braid_rt *rt, const CheckpointRun &run, const std::string &dir, int64_t step,
                    uint64_t seed, const ckpt::DataState &data) {
  const bool root = rt->comms->worldRank() == 0;
  const std::string name = "step-" + std::to_string(step);
  const std::string tmp = dir + "/" + name + ".tmp";
  std::string error;
  // A .tmp directory is what a crash left: never read, replaced.
  if (root) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    if (!fs::create_directories(tmp, ec) || ec)
      error = "cannot create " + tmp + ": " + (ec ? ec.message() : "it exists");
  }
  if (!agreeOnError(rt, error))
    return false;
  if (!agreeOnError(rt, writeRankFiles(rt, run, tmp, step)))
    return false;
  // Every rank's files are on disk: rank 0 publishes them.
  Manifest manifest;
  if (root) {
    error = buildManifest(rt, run, tmp, step, seed, &manifest);
    manifest.data = data;
    if (error.empty() && !writeDurably(tmp + "/manifest.json", manifestJson(manifest), &error))
      error = error.empty() ? "cannot write the manifest" : error;
    if (error.empty())
      error = publish(dir, name, tmp);
  }
  return agreeOnError(rt, error);
}

} // namespace braid::rt
