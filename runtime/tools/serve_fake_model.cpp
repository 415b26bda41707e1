//===- serve_fake_model.cpp - a fake model for the serving scheduler ------===//
//
// What serve_fake_model.h specifies.
//
//===----------------------------------------------------------------------===//

#include "serve_fake_model.h"

#include <algorithm>
#include <set>

namespace braid::rt::serve::fake {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

namespace {

/// The fake's K/V row at a position: a hash of the row before it and the
/// token there, so that it stands for the whole prefix as a real one does
/// (a layer's K and V at p depend on every token up to p).
constexpr uint64_t kNoRow = 0x243f6a8885a308d3ull; ///< "the row before position 0"
uint64_t kvRow(uint64_t previous, int32_t token) { return mix(previous, uint64_t(uint32_t(token))); }

/// The token a sequence draws at `step` from its last K/V row.
int32_t drawToken(int64_t sequence, int64_t step, uint64_t lastRow, int64_t vocab) {
  return int32_t(mix(mix(uint64_t(sequence) * 1000003u, uint64_t(step)), lastRow) %
                 uint64_t(vocab));
}

/// The K/V rows of `tokens` computed from the tokens themselves.
std::vector<uint64_t> trueRows(const std::vector<int32_t> &tokens) {
  std::vector<uint64_t> rows;
  for (int32_t token : tokens)
    rows.push_back(kvRow(rows.empty() ? kNoRow : rows.back(), token));
  return rows;
}

/// The ids of `r` generated alone from its true tokens.
std::vector<int32_t> generateAlone(const Request &r, int64_t vocab, int64_t endToken) {
  std::vector<int32_t> tokens = r.prompt, ids;
  for (int64_t step = 0; step < r.maxNew; ++step) {
    ids.push_back(drawToken(r.index, step, trueRows(tokens).back(), vocab));
    tokens.push_back(ids.back());
    if (ids.back() == endToken)
      break;
  }
  return ids;
}


/// A run of the scheduler with the fake model.
class FakeServing {
public:
  FakeServing(const SchedulerConfig &config, int64_t vocab, Fault fault)
      : config(config), vocab(vocab), fault(fault), scheduler(config),
        pool(size_t(config.pages * config.pageSize), 0) {}

  RunResult run(const std::vector<Request> &requests);

private:
  bool fail(const std::string &what) {
    if (result.problem.empty())
      result.problem = "iteration " + std::to_string(iteration) + ": " + what;
    return false;
  }
  void arrivals(const std::vector<Request> &requests, size_t *next);
  bool checkRows(const Iteration &plan);
  bool write(int64_t sequence, int64_t slot, int64_t position, int32_t token);
  bool attend(int64_t sequence, int64_t slot, int64_t last, int32_t *drawn, int64_t step);
  bool runPrefill(const Iteration &plan, std::vector<int32_t> &drawn);
  bool runDecode(const Iteration &plan, std::vector<int32_t> &drawn);
  bool finish(const std::vector<Finished> &finished);

  SchedulerConfig config;
  int64_t vocab;
  Fault fault;
  Scheduler scheduler;
  std::vector<uint64_t> pool; ///< [page * P + offset]: the K/V row written
  std::map<int64_t, std::vector<int32_t>> truth; ///< prompt + ids so far
  std::map<int64_t, int64_t> generated;
  std::map<int64_t, const Request *> byIndex;
  int64_t iteration = 0;
  RunResult result;
};

void FakeServing::arrivals(const std::vector<Request> &requests, size_t *next) {
  for (; *next < requests.size() && requests[*next].arriveAt <= iteration; ++*next) {
    const Request &r = requests[*next];
    std::string why;
    if (!scheduler.arrive(r.index, r.prompt, r.maxNew, &why)) {
      result.refused.push_back("request " + std::to_string(r.index) + ": " + why);
      continue;
    }
    truth[r.index] = r.prompt;
    generated[r.index] = 0;
    byIndex[r.index] = &r;
  }
}

/// The rows of a plan: distinct prefill rows and decode slots in range, a
/// sequence in at most one row, chunks of 1..chunk tokens.
bool FakeServing::checkRows(const Iteration &plan) {
  std::set<int64_t> rows, slots, sequences;
  if (int64_t(plan.prefill.size()) > config.prefillRows)
    return fail("more prompt chunks than prefill rows");
  for (const PrefillChunk &c : plan.prefill)
    if (c.row < 0 || c.row >= config.prefillRows || !rows.insert(c.row).second ||
        c.tokens.empty() || int64_t(c.tokens.size()) > config.chunk ||
        !sequences.insert(c.sequence).second || !slots.insert(c.slot).second)
      return fail("bad prefill row for sequence " + std::to_string(c.sequence));
  for (const DecodeRow &d : plan.decode)
    if (d.slot < 0 || d.slot >= config.decodeRows || !slots.insert(d.slot).second ||
        !sequences.insert(d.sequence).second)
      return fail("bad decode row for sequence " + std::to_string(d.sequence));
  // A token budget (a mixed program's rows) holds the whole iteration.
  int64_t tokens = int64_t(plan.decode.size());
  for (const PrefillChunk &c : plan.prefill)
    tokens += int64_t(c.tokens.size());
  if (config.tokenBudget && tokens > config.tokenBudget)
    return fail(std::to_string(tokens) + " tokens in an iteration, over the budget of " +
                std::to_string(config.tokenBudget));
  return true;
}

/// The program's cache write: the row of `token` after the row before it
/// (read through `slot`'s table), written through the table, never into a
/// page that another row's table holds.
bool FakeServing::write(int64_t sequence, int64_t slot, int64_t position, int32_t token) {
  const int64_t P = config.pageSize;
  std::vector<int32_t> table = scheduler.pageTable(slot);
  auto pageOf = [&](int64_t p) { return p / P < int64_t(table.size()) ? table[p / P] : -1; };
  int32_t page = pageOf(position);
  if (page < 0 || page >= config.pages || (position > 0 && pageOf(position - 1) < 0))
    return fail("sequence " + std::to_string(sequence) + " has no page for position " +
                std::to_string(position) + " or the one before");
  for (int64_t other = 0; other < config.decodeRows; ++other) {
    std::vector<int32_t> theirs = scheduler.pageTable(other);
    if (other != slot && std::count(theirs.begin(), theirs.end(), page))
      return fail("sequence " + std::to_string(sequence) + " writes page " +
                  std::to_string(page) + " that row " + std::to_string(other) + " holds");
  }
  uint64_t previous =
      position == 0 ? kNoRow : pool[size_t(pageOf(position - 1) * P + (position - 1) % P)];
  pool[size_t(page * P + position % P)] = kvRow(previous, token);
  return true;
}

/// The program's attention and sampling: reads the rows of positions
/// [0, last] through `slot`'s table; each must be the row of the sequence's
/// own tokens up to it. Draws the token of `step` from the last row.
bool FakeServing::attend(int64_t sequence, int64_t slot, int64_t last, int32_t *drawn,
                         int64_t step) {
  const int64_t P = config.pageSize;
  std::vector<int32_t> table = scheduler.pageTable(slot);
  for (int64_t other = 0; fault == Fault::ForeignPage && other < config.decodeRows; ++other)
    if (int32_t page = scheduler.pageTable(other)[0]; page >= 0 && page != table[0]) {
      table[0] = page;
      break;
    }
  std::vector<int32_t> mine(truth[sequence].begin(), truth[sequence].begin() + last + 1);
  std::vector<uint64_t> expected = trueRows(mine);
  uint64_t row = 0;
  for (int64_t p = 0; p <= last; ++p) {
    int32_t page = table[p / P];
    if (page < 0)
      return fail("sequence " + std::to_string(sequence) + " reads position " +
                  std::to_string(p) + " with no page");
    row = pool[size_t(page * P + p % P)];
    if (row != expected[p])
      return fail("sequence " + std::to_string(sequence) + " reads at position " +
                  std::to_string(p) + " (page " + std::to_string(page) +
                  ") a row that is not that of its own tokens");
  }
  if (drawn)
    *drawn = drawToken(sequence, step, row, vocab);
  return true;
}

bool FakeServing::runPrefill(const Iteration &plan, std::vector<int32_t> &drawn) {
  for (const PrefillChunk &c : plan.prefill) {
    const std::vector<int32_t> &mine = truth[c.sequence];
    int64_t end = c.position + int64_t(c.tokens.size());
    if (end > int64_t(mine.size()) ||
        !std::equal(c.tokens.begin(), c.tokens.end(), mine.begin() + c.position))
      return fail("sequence " + std::to_string(c.sequence) + "'s chunk at " +
                  std::to_string(c.position) + " is not its tokens");
    if (c.completesPrompt != (end == int64_t(mine.size())) ||
        (c.completesPrompt && c.step != generated[c.sequence]))
      return fail("sequence " + std::to_string(c.sequence) + "'s chunk ends at " +
                  std::to_string(end) + " of " + std::to_string(mine.size()) +
                  " tokens with the wrong completion or step");
    for (int64_t p = c.position; p < end - (fault == Fault::ShortChunk); ++p)
      if (!write(c.sequence, c.slot, p, mine[p]))
        return false;
    drawn.push_back(-1);
    // Every row attends to the rows before it; the last one's read covers them.
    if (!attend(c.sequence, c.slot, end - 1, c.completesPrompt ? &drawn.back() : nullptr,
                c.step))
      return false;
  }
  return true;
}

bool FakeServing::runDecode(const Iteration &plan, std::vector<int32_t> &drawn) {
  for (const DecodeRow &d : plan.decode) {
    const std::vector<int32_t> &mine = truth[d.sequence];
    if (d.position != int64_t(mine.size()) - 1 || d.token != mine.back() ||
        d.step != generated[d.sequence])
      return fail("sequence " + std::to_string(d.sequence) + "'s decode row feeds token " +
                  std::to_string(d.token) + " at " + std::to_string(d.position) + " step " +
                  std::to_string(d.step) + ", not its last");
    drawn.push_back(-1);
    if (!write(d.sequence, d.slot, d.position, d.token) ||
        !attend(d.sequence, d.slot, d.position, &drawn.back(), d.step))
      return false;
  }
  return true;
}

bool FakeServing::finish(const std::vector<Finished> &finished) {
  for (const Finished &f : finished) {
    const Request &r = *byIndex.at(f.sequence);
    if (result.ids.count(f.sequence))
      return fail("sequence " + std::to_string(f.sequence) + " finished twice");
    std::vector<int32_t> alone = generateAlone(r, vocab, config.endToken);
    if (f.ids != alone)
      return fail("sequence " + std::to_string(f.sequence) +
                  "'s ids differ from those generated alone");
    result.ids[f.sequence] = f.ids;
    result.endedByToken[f.sequence] = f.endToken;
  }
  return true;
}

RunResult FakeServing::run(const std::vector<Request> &requests) {
  size_t next = 0;
  for (; iteration < 100000; ++iteration) {
    arrivals(requests, &next);
    if (!scheduler.busy()) {
      if (next == requests.size())
        break;
      continue;
    }
    Iteration plan = scheduler.plan();
    if (plan.prefill.empty() && plan.decode.empty()) {
      fail("requests wait or run but nothing was planned (deadlock)");
      break;
    }
    std::vector<int32_t> prefillDrawn, decodeDrawn;
    if (!checkRows(plan) || !runPrefill(plan, prefillDrawn) || !runDecode(plan, decodeDrawn))
      break;
    std::vector<Finished> finished = scheduler.complete(prefillDrawn, decodeDrawn);
    // The truth as the programs' tokens extend it.
    for (size_t i = 0; i < plan.prefill.size(); ++i)
      if (plan.prefill[i].completesPrompt) {
        truth[plan.prefill[i].sequence].push_back(prefillDrawn[i]);
        ++generated[plan.prefill[i].sequence];
      }
    for (size_t j = 0; j < plan.decode.size(); ++j) {
      truth[plan.decode[j].sequence].push_back(decodeDrawn[j]);
      ++generated[plan.decode[j].sequence];
    }
    if (std::string problem = scheduler.checkInvariants(); !problem.empty()) {
      fail(problem);
      break;
    }
    if (!finish(finished))
      break;
    result.log.push_back({std::move(plan), std::move(finished)});
  }
  if (result.problem.empty() && (scheduler.busy() || next < requests.size()))
    fail("the run did not end");
  if (result.problem.empty() && result.ids.size() + result.refused.size() != requests.size())
    fail("finished " + std::to_string(result.ids.size()) + " and refused " +
         std::to_string(result.refused.size()) + " of " + std::to_string(requests.size()));
  if (result.problem.empty() && scheduler.pagesInUse() != 0)
    fail(std::to_string(scheduler.pagesInUse()) + " pages still in use at the end");
  result.preemptions = scheduler.preemptions();
  result.shared = scheduler.sharedPages();
  result.peakPages = scheduler.peakPagesInUse();
  return result;
}

} // namespace

RunResult serveFake(const SchedulerConfig &config, int64_t vocab, std::vector<Request> requests,
                    Fault fault) {
  std::sort(requests.begin(), requests.end(), [](const Request &a, const Request &b) {
    return a.arriveAt != b.arriveAt ? a.arriveAt < b.arriveAt : a.index < b.index;
  });
  return FakeServing(config, vocab, fault).run(requests);
}

} // namespace braid::rt::serve::fake
