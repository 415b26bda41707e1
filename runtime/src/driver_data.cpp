//===- driver_data.cpp - training on a tokenized dataset ------------------===//
//
// --data PATH replaces the batch drawn from the seed (the inputs tokens and
// labels, BRAID_INIT_TOKENS) with windows of a dataset (data.h): step k of a
// run whose data started at position P0 (0, or a resumed checkpoint's) reads
// the global batch of positions [P0 + (k - first) B, ... + B): row b of the
// global [B, S] tokens is window(P0 + ... + b)'s tokens 0..S-1, row b of the
// labels its tokens 1..S. Each rank writes only the boxes of the global
// tensors its local buffers hold (persistent.h's localSlice: a dp rank's rows,
// a cp rank's zigzag chunks), reading just those windows from the mapping; a
// pipeline stage fills the inputs it has. The programs' micro-batches cut
// the local rows as they cut the seed's batch, so N ranks see the batch one
// rank sees.
//
// --eval-data PATH --eval-every K: after every K-th step, the mean loss of
// the first --eval-batches global batches of PATH (file order, wrapping
// around), printed as "step K validation loss X". It runs the training step
// program itself on those batches, which also computes gradients and an
// update, and restores the parameters and optimizer state it held before
// (after braid_program.finish), so that training continues bit for bit as
// without evaluation: no forward-only program is linked beside the step.
//
//===----------------------------------------------------------------------===//

#include "data.h"
#include "driver.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

namespace braid::rt::driver {

struct DataFeed {
  struct Source {
    data::TokenFile file;
    std::unique_ptr<data::DataOrder> order;
  };
  Source train, eval;
  bool hasTrain = false, hasEval = false;
  int64_t batch = 0, seq = 0, vocab = 0;
  int64_t start = 0; ///< the position step s.firstStep reads from
};

namespace {

bool isDataInput(const Persistent &p) {
  return !p.param && p.desc->init == BRAID_INIT_TOKENS &&
         (std::strcmp(p.desc->name, "tokens") == 0 || std::strcmp(p.desc->name, "labels") == 0);
}

/// The global [B, S] of the program's tokens and labels, and the vocabulary
/// (their draws' bound); "" or why --data cannot feed this program.
std::string dataShape(const Session &s, int64_t *batch, int64_t *seq, int64_t *vocab) {
  for (const Persistent &p : s.persistent) {
    if (p.param || p.desc->init != BRAID_INIT_TOKENS)
      continue;
    if (!isDataInput(p))
      return std::string("the program's input '") + p.desc->name +
             "' is drawn token ids that are neither its tokens nor its labels";
    const ShardLayout &l = p.layout;
    if (l.global.size() != 2 || (p.desc->dtype != BRAID_I32 && p.desc->dtype != BRAID_I64))
      return std::string("the program's ") + p.desc->name +
             " are not a [batch, seq] tensor of int32 or int64";
    if ((*batch && (*batch != l.global[0] || *seq != l.global[1])))
      return "the program's tokens and labels differ in shape";
    *batch = l.global[0];
    *seq = l.global[1];
    *vocab = std::min(*vocab, p.desc->bound);
  }
  return "";
}

/// Opens one file and checks that it holds a global batch; "" or the error.
std::string openSource(const Session &s, const std::string &path, const char *flag, DataFeed &feed,
                       DataFeed::Source *out) {
  std::string error;
  if (!out->file.open(path, s.args.dataDtype, &error))
    return error;
  const int64_t tokens = out->file.size();
  const int64_t windows = tokens > 0 ? (tokens - 1) / feed.seq : 0;
  if (windows < feed.batch)
    return path + " (" + flag + "): too short for one global batch: " + std::to_string(tokens) +
           " tokens make " + std::to_string(windows) +
           " windows of seq + 1 = " + std::to_string(feed.seq + 1) +
           " tokens, a global batch takes " + std::to_string(feed.batch);
  out->order =
      std::make_unique<data::DataOrder>(windows, s.args.shuffle && out == &feed.train, s.args.seed);
  return "";
}

/// Every id of the file inside [0, vocab): the world's ranks scan a share
/// each (collective); false after the message.
bool checkIds(Session &s, const DataFeed::Source &source, int64_t vocab) {
  braid_rt *rt = s.rt.get();
  const int64_t n = source.file.size(), ranks = rt->comms->worldSize(), me = rt->comms->worldRank();
  const int64_t lo = n / ranks * me + std::min(me, n % ranks);
  const int64_t hi = lo + n / ranks + (me < n % ranks ? 1 : 0);
  std::string error;
  if (int64_t at = source.file.firstOutside(lo, hi, vocab); at >= 0)
    error = source.file.path() + ": token id " + std::to_string(source.file.at(at)) +
            " at position " + std::to_string(at) + " is outside the vocabulary [0, " +
            std::to_string(vocab) + ")";
  return agreeOnError(rt, error, "data");
}

/// The position a resumed run continues from: the checkpoint's, when it was
/// written by a run on a file of as many tokens; else the file's start.
int64_t resumedPosition(const Session &s, const DataFeed &feed) {
  if (!s.resuming)
    return 0;
  const ckpt::DataState &saved = s.resumed.manifest->data;
  if (saved.used() && saved.tokens == feed.train.file.size())
    return saved.position;
  if (s.talks && !s.args.quiet)
    std::fprintf(
        stderr, "%sbraid: %s: the checkpoint %s; reading the data from its start\n",
        s.prefix.c_str(), feed.train.file.path().c_str(),
        saved.used()
            ? ("read " + saved.file + " of " + std::to_string(saved.tokens) + " tokens").c_str()
            : "was written by a run without --data");
  return 0;
}

/// Writes positions [position, position + B) of `source` into this rank's
/// slices of the tokens and labels.
void fill(Session &s, const DataFeed &feed, const DataFeed::Source &source, int64_t position) {
  braid_rt *rt = s.rt.get();
  for (const Persistent &p : s.persistent) {
    if (!isDataInput(p) || p.numel == 0)
      continue;
    const int64_t shift = std::strcmp(p.desc->name, "labels") == 0 ? 1 : 0;
    const int64_t size = braid_dtype_size(p.desc->dtype), row = p.shape[1];
    std::vector<char> host(size_t(p.numel * size), 0); // padding stays zero
    for (const Placed &placed : localSlice(rt, p).boxes) {
      const Box &g = placed.global;
      for (int64_t i = 0; i < g.shape[0]; ++i) {
        const int64_t window = source.order->window(position + g.start[0] + i);
        const int64_t from = window * feed.seq + g.start[1] + shift;
        char *to = host.data() + ((placed.local[0] + i) * row + placed.local[1]) * size;
        if (p.desc->dtype == BRAID_I32)
          source.file.read(from, g.shape[1], reinterpret_cast<int32_t *>(to));
        else
          source.file.read(from, g.shape[1], reinterpret_cast<int64_t *>(to));
      }
    }
    rt->backend->copyToDevice(rt->arena + p.desc->offset, host.data(), p.numel * size);
  }
}

} // namespace

bool openData(Session &s) {
  if (s.args.dataFile.empty() && s.args.evalDataFile.empty())
    return true;
  braid_rt *rt = s.rt.get();
  auto feed = std::make_shared<DataFeed>();
  // The stages of a pipeline hold different inputs (tokens on the first,
  // labels on the last): the run's shape and vocabulary over the world.
  int64_t batch = 0, seq = 0, vocab = std::numeric_limits<int64_t>::max();
  std::string error = dataShape(s, &batch, &seq, &vocab);
  feed->batch = reduceOverWorld(rt, batch, BRAID_RED_MAX);
  feed->seq = reduceOverWorld(rt, seq, BRAID_RED_MAX);
  feed->vocab = reduceOverWorld(rt, vocab, BRAID_RED_MIN);
  const std::string path = s.args.dataFile.empty() ? s.args.evalDataFile : s.args.dataFile;
  if (error.empty() && feed->batch == 0)
    error = "the program has no tokens or labels input to feed";
  if (!error.empty())
    error = path + ": " + error;
  if (error.empty() && !s.args.dataFile.empty())
    error = openSource(s, s.args.dataFile, "--data", *feed, &feed->train);
  if (error.empty() && !s.args.evalDataFile.empty())
    error = openSource(s, s.args.evalDataFile, "--eval-data", *feed, &feed->eval);
  if (!agreeOnError(rt, error, "data"))
    return false;
  feed->hasTrain = !s.args.dataFile.empty();
  feed->hasEval = !s.args.evalDataFile.empty();
  if ((feed->hasTrain && !checkIds(s, feed->train, feed->vocab)) ||
      (feed->hasEval && !checkIds(s, feed->eval, feed->vocab)))
    return false;
  if (feed->hasTrain)
    feed->start = resumedPosition(s, *feed);
  if (s.talks && !s.args.quiet)
    for (const DataFeed::Source *source : {&feed->train, &feed->eval})
      if (source->order)
        std::fprintf(stderr, "%sbraid: data %s (%s): %lld tokens, %lld windows of %lld, %s%s\n",
                     s.prefix.c_str(), source->file.path().c_str(), source->file.format().c_str(),
                     (long long)source->file.size(), (long long)source->order->windows(),
                     (long long)feed->seq + 1,
                     source == &feed->eval ? "validation"
                     : s.args.shuffle      ? "shuffled"
                                           : "in order",
                     source == &feed->train && feed->start
                         ? (", from window " + std::to_string(feed->start)).c_str()
                         : "");
  s.data = std::move(feed);
  return true;
}

void feedStep(Session &s, int64_t k) {
  if (!s.data || !s.data->hasTrain)
    return;
  const DataFeed &feed = *s.data;
  fill(s, feed, feed.train, feed.start + (k - s.firstStep) * feed.batch);
}

ckpt::DataState dataStateAfter(const Session &s, int64_t k) {
  ckpt::DataState state;
  if (!s.data || !s.data->hasTrain)
    return state;
  const DataFeed &feed = *s.data;
  state.file = feed.train.file.path();
  state.tokens = feed.train.file.size();
  state.position = feed.start + (k - s.firstStep + 1) * feed.batch;
  return state;
}

void evaluate(Session &s, int64_t k) {
  if (!s.data || !s.data->hasEval || s.args.evalEvery == 0 || k % s.args.evalEvery != 0)
    return;
  braid_rt *rt = s.rt.get();
  Backend &backend = *rt->backend;
  const DataFeed &feed = *s.data;
  // The state the next step starts from: complete, then kept on the host.
  finishStep(s, k);
  backend.synchronize();
  std::vector<std::vector<char>> kept;
  for (const Persistent &p : s.persistent) {
    kept.emplace_back(p.param ? size_t(p.bytes) : 0);
    if (p.param)
      backend.copyToHost(kept.back().data(), rt->arena + p.desc->offset, p.bytes);
  }
  float trainLoss = 0;
  backend.copyToHost(&trainLoss, rt->arena + s.program->loss_offset, 4);
  const auto collectives = rt->collectives; // the last training step's, reported at the end

  double sum = 0;
  for (int64_t b = 0; b < s.args.evalBatches; ++b) {
    fill(s, feed, feed.eval, b * feed.batch);
    rt->step = -1; // no dumps: they keep the training steps' values
    s.program->step(rt, rt->arena);
    checkReturned(s, "validation after step", k);
    backend.synchronize();
    float loss = 0;
    backend.copyToHost(&loss, rt->arena + s.program->loss_offset, 4);
    sum += double(loss);
  }
  rt->step = 0;
  for (size_t i = 0; i < s.persistent.size(); ++i)
    if (s.persistent[i].param)
      backend.copyToDevice(rt->arena + s.persistent[i].desc->offset, kept[i].data(),
                           s.persistent[i].bytes);
  backend.copyToDevice(rt->arena + s.program->loss_offset, &trainLoss, 4);
  backend.synchronize();
  rt->collectives = collectives;
  if (s.talks) {
    std::printf("%sstep %lld validation loss %.9g\n", s.prefix.c_str(), (long long)k,
                sum / double(s.args.evalBatches));
    std::fflush(stdout);
  }
}

} // namespace braid::rt::driver
