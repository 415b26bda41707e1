//===- sampling-parallel-test.cpp - sampleTokensParallel against sampleToken --===//
//
// Runs sampleTokensParallel (runtime/src/sampling_parallel.h) on 1, 2, 3 and
// 4 simulated ranks (threads sharing an all-gather) over random logits split
// by vocabulary in blocks of ceil(V / ranks) (the last blocks short or
// empty, padded with huge values that must never be sampled) and in random
// blocks, and compares every rank's token of every row with sampleToken on
// the whole row: greedy, temperature alone, top-k, top-p, both, ties (logits
// of a few values), a temperature that leaves most weights 0, top-k past the
// vocabulary, top-p 0, temperatures so high that
// weights tie with the largest. Prints the number of rows checked and of differences
// (each difference on stderr).
//
// Built with BRAID_TEST_MPI, each rank is an MPI process of the grid
// tp=<ranks>: the same cases through the Communicator form (CPU backend
// buffers all-gathered over MPI), the even blocks derived by vocabBlockOf
// from the layout of a program's output split over tp.
//
//===----------------------------------------------------------------------===//

#include "sampling.h"
#include "sampling_parallel.h"

#ifdef BRAID_TEST_MPI
#include "backend.h"
#include "comm.h"
#include "comm_mpi.h"
#include "rt_impl.h"
#endif

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

using namespace braid::rt;
#ifdef BRAID_TEST_MPI
namespace mpi = braid::rt::mpi;
#endif

namespace {

/// An all-gather among `ranks` threads: each deposits its words, waits for
/// the others, reads them all, and waits until all have read.
class Hub {
public:
  explicit Hub(int ranks) : ranks(ranks), slots(size_t(ranks)) {}

  std::vector<uint64_t> gather(int rank, const std::vector<uint64_t> &mine) {
    slots[size_t(rank)] = mine;
    barrier();
    std::vector<uint64_t> all;
    for (const auto &s : slots) {
      if (s.size() != mine.size()) {
        std::fprintf(stderr, "FAIL: ranks gathered different counts\n");
        std::abort();
      }
      all.insert(all.end(), s.begin(), s.end());
    }
    barrier();
    return all;
  }

private:
  void barrier() {
    std::unique_lock<std::mutex> lock(mutex);
    int64_t generation = round;
    if (++arrived == ranks) {
      arrived = 0;
      ++round;
      cv.notify_all();
      return;
    }
    cv.wait(lock, [&] { return round != generation; });
  }

  int ranks;
  std::vector<std::vector<uint64_t>> slots;
  std::mutex mutex;
  std::condition_variable cv;
  int arrived = 0;
  int64_t round = 0;
};

struct Case {
  const char *name;
  SamplingOptions options;
  int distinct; ///< logits drawn from this many values (0: continuous)
};

int64_t rowsCompared = 0, differences = 0;

/// Splits [0, vocab) into `ranks` blocks: even (ceil, padded) or random.
std::vector<std::pair<int64_t, int64_t>> splitVocab(int64_t vocab, int ranks, bool even,
                                                    std::mt19937_64 &gen) {
  std::vector<std::pair<int64_t, int64_t>> blocks;
  if (even) {
    int64_t per = (vocab + ranks - 1) / ranks;
    for (int k = 0; k < ranks; ++k) {
      int64_t begin = std::min(vocab, k * per);
      blocks.push_back({begin, std::min(vocab, begin + per) - begin});
    }
    return blocks;
  }
  std::vector<int64_t> cuts = {0, vocab};
  for (int k = 1; k < ranks; ++k)
    cuts.push_back(int64_t(gen() % uint64_t(vocab + 1)));
  std::sort(cuts.begin(), cuts.end());
  for (int k = 0; k < ranks; ++k)
    blocks.push_back({cuts[size_t(k)], cuts[size_t(k) + 1] - cuts[size_t(k)]});
  return blocks;
}

/// A case's inputs: the whole logits and each rank's padded block.
struct Inputs {
  int64_t rows = 5, vocab = 0, stride = 1, step = 0;
  uint64_t seed = 0;
  std::vector<float> logits;
  std::vector<int64_t> requests;
  std::vector<std::pair<int64_t, int64_t>> blocks;
  std::vector<std::vector<float>> local;

  VocabBlock blockOf(int k) const {
    return VocabBlock{local[size_t(k)].data(), rows, stride, blocks[size_t(k)].first,
                      blocks[size_t(k)].second, vocab};
  }
};

Inputs makeInputs(const Case &c, int64_t vocab, int ranks, bool even, std::mt19937_64 &gen) {
  Inputs in;
  in.vocab = vocab;
  in.seed = gen() % 100;
  in.step = int64_t(gen() % 100);
  in.logits.resize(size_t(in.rows * vocab));
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (float &l : in.logits)
    l = c.distinct ? float(int64_t(gen() % uint64_t(c.distinct))) : normal(gen);
  for (int64_t r = 0; r < in.rows; ++r)
    in.requests.push_back(int64_t(gen() % 1000));
  in.blocks = splitVocab(vocab, ranks, even, gen);
  for (auto &b : in.blocks)
    in.stride = std::max(in.stride, b.second);
  // Each rank's block, padded with values that would win if sampled.
  in.local.resize(size_t(ranks));
  for (int k = 0; k < ranks; ++k) {
    in.local[size_t(k)].assign(size_t(in.rows * in.stride), 1e30f);
    for (int64_t r = 0; r < in.rows; ++r)
      for (int64_t i = 0; i < in.blocks[size_t(k)].second; ++i)
        in.local[size_t(k)][size_t(r * in.stride + i)] =
            in.logits[size_t(r * vocab + in.blocks[size_t(k)].first + i)];
  }
  return in;
}

/// Compares rank k's tokens with sampleToken's.
void compare(const Case &c, const Inputs &in, int k, bool even, const std::vector<int32_t> &got) {
  for (int64_t r = 0; r < in.rows; ++r) {
    int32_t want = sampleToken(in.logits.data() + r * in.vocab, in.vocab, c.options, in.seed,
                               in.requests[size_t(r)], in.step);
    ++rowsCompared;
    if (got[size_t(r)] == want)
      continue;
    ++differences;
    std::fprintf(stderr,
                 "FAIL %s: vocab %lld, %d ranks (%s split), rank %d row %lld: %d, "
                 "sampleToken %d\n",
                 c.name, (long long)in.vocab, int(in.blocks.size()), even ? "even" : "random", k,
                 (long long)r, got[size_t(r)], want);
  }
}

#ifndef BRAID_TEST_MPI
/// Every rank a thread, sharing a Hub.
void runCase(const Case &c, int64_t vocab, int ranks, bool even, std::mt19937_64 &gen) {
  Inputs in = makeInputs(c, vocab, ranks, even, gen);
  Hub hub(ranks);
  std::vector<std::vector<int32_t>> got(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int k = 0; k < ranks; ++k)
    threads.emplace_back([&, k] {
      WordGather gather = [&hub, k](const std::vector<uint64_t> &mine) {
        return hub.gather(k, mine);
      };
      got[size_t(k)] = sampleTokensParallel(in.blockOf(k), gather, c.options, in.seed,
                                            in.requests, in.step);
    });
  for (auto &t : threads)
    t.join();
  for (int k = 0; k < ranks; ++k)
    compare(c, in, k, even, got[size_t(k)]);
}
#endif

const std::vector<Case> &cases() {
  static const std::vector<Case> all = {
      {"greedy", {0, 0, 1}, 0},
      {"greedy ties", {0, 0, 1}, 3},
      {"temperature", {1.0, 0, 1}, 0},
      {"temperature ties", {0.8, 0, 1}, 4},
      {"top-k", {0.9, 40, 1}, 0},
      {"top-k 1", {1.0, 1, 1}, 0},
      {"top-k past the vocabulary", {1.0, 5000, 1}, 0},
      {"top-p", {0.7, 0, 0.5}, 0},
      {"top-p 0", {1.0, 0, 0}, 0},
      {"top-p ties", {0.8, 0, 0.5}, 3},
      {"top-p ties of two values", {1.0, 0, 0.7}, 2},
      {"top-k top-p", {0.9, 40, 0.95}, 0},
      {"top-k top-p ties", {0.9, 7, 0.9}, 2},
      {"cold", {0.01, 0, 0.9}, 0},
      {"hot", {50.0, 0, 0.99}, 0},
      // Weights that round to the largest's: ties by index, not by logit.
      {"flat", {1e20, 0, 1}, 0},
      {"flat top-p 0", {1e20, 0, 0}, 0},
      {"flat top-p", {1e20, 0, 0.3}, 0},
      {"flat top-k top-p", {1e20, 3, 0.5}, 0},
      {"near-flat top-p", {1e14, 0, 0.6}, 0},
  };
  return all;
}

const int64_t kVocabs[] = {1, 2, 7, 50, 257, 1000};

} // namespace

#ifndef BRAID_TEST_MPI
int main() {
  std::mt19937_64 gen(42);
  for (const Case &c : cases())
    for (int64_t vocab : kVocabs)
      for (int ranks = 1; ranks <= 4; ++ranks)
        for (bool even : {true, false})
          runCase(c, vocab, ranks, even, gen);
  std::printf("sampling-parallel: %lld rows checked on 1, 2, 3, 4 ranks, %lld differences\n",
              (long long)rowsCompared, (long long)differences);
  return differences == 0 ? 0 : 1;
}
#else
/// Every rank an MPI process: the same cases through sampleTokensParallel's
/// Communicator form (an all-gather of CPU backend buffers over MPI).
int main(int argc, char **argv) {
  mpi::initialize(&argc, &argv);
  const int ranks = mpi::worldSize(), k = mpi::worldRank();
  Grid grid;
  std::string error;
  if (!parseGrid("tp=" + std::to_string(ranks), &grid, &error)) {
    std::fprintf(stderr, "FAIL: %s\n", error.c_str());
    return 1;
  }
  std::unique_ptr<CommProvider> provider = mpi::makeCommProvider(grid);
  std::unique_ptr<Communicator> comm = provider->create("tp");
  std::unique_ptr<Backend> backend = makeCpuBackend();
  std::mt19937_64 gen(42);
  for (const Case &c : cases())
    for (int64_t vocab : kVocabs)
      for (bool even : {true, false}) {
        Inputs in = makeInputs(c, vocab, ranks, even, gen); // the same on every rank
        VocabBlock block = in.blockOf(k);
        if (even) {
          // The block as a program's output layout gives it (vocabBlockOf).
          const int64_t local[] = {in.rows, in.stride}, global[] = {in.rows, vocab};
          const char *const split[] = {"", "tp"};
          ShardLayout layout;
          std::string group;
          if (!shardLayout(grid, 2, local, global, split, &layout, &error)) {
            std::fprintf(stderr, "FAIL: %s\n", error.c_str());
            return 1;
          }
          VocabBlock derived = vocabBlockOf(block.logits, in.rows, layout, grid,
                                            grid.coordinates(k), vocab, &group);
          // (An empty block's offset does not matter.)
          if ((block.count > 0 && derived.offset != block.offset) ||
              derived.count != block.count || derived.stride != block.stride ||
              group != "tp") {
            ++differences;
            std::fprintf(stderr, "FAIL: vocabBlockOf on rank %d: offset %lld count %lld "
                         "group '%s'\n", k, (long long)derived.offset,
                         (long long)derived.count, group.c_str());
          }
          block = derived;
        }
        compare(c, in, k, even,
                sampleTokensParallel(block, *comm, *backend, c.options, in.seed, in.requests,
                                     in.step));
      }
  int64_t mine[2] = {rowsCompared, differences}, all[2] = {0, 0};
  comm->allReduce(*backend, mine, all, 2, BRAID_I64, BRAID_RED_SUM)->wait(*backend);
  backend->synchronize();
  if (k == 0)
    std::printf("sampling-parallel-mpi: %lld rows checked on %d ranks, %lld differences\n",
                (long long)all[0], ranks, (long long)all[1]);
  comm.reset();
  provider->drain();
  provider.reset();
  mpi::finalize();
  return all[1] == 0 ? 0 : 1;
}
#endif
