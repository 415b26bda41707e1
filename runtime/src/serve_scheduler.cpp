//===- serve_scheduler.cpp - continuous batching over a paged cache -------===//
//
// What serve_scheduler.h specifies. Each running sequence's cache holds its
// positions [0, cached); its next work starts at `cached`: a prefill chunk
// while cached < prefillLength (the prompt, or after a preemption the prompt
// and the tokens generated before it), else a decode row feeding its last
// token. Every running sequence arrived before every waiting one (admission
// is FCFS and a preempted sequence is the newest running one), so "oldest"
// and "newest" are orders by arrival.
//
//===----------------------------------------------------------------------===//

#include "serve_scheduler.h"

#include "serve_pages.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <limits>
#include <map>

namespace braid::rt::serve {

namespace {

/// Misuse by the driver (never by user input): a bug to stop at.
[[noreturn]] void schedulerBug(const std::string &what) {
  std::fprintf(stderr, "braid serve: scheduler misuse: %s\n", what.c_str());
  std::abort();
}

struct Sequence {
  int64_t index = 0;
  int64_t arrival = 0;           ///< the order of arrive() calls
  std::vector<int32_t> tokens;   ///< prompt + generated
  int64_t promptLength = 0;
  int64_t maxNewTokens = 0;
  int64_t prefillLength = 0;     ///< positions to prefill before decoding
  int64_t cached = 0;            ///< positions [0, cached) are in the cache
  int64_t slot = -1;             ///< decode row; -1 while waiting
  int64_t committedPages = 0;    ///< leading pages committed for sharing
  std::vector<int32_t> table;    ///< pagesPerSequence entries, -1: none

  int64_t generated() const { return int64_t(tokens.size()) - promptLength; }
  bool prefilling() const { return cached < prefillLength; }
};

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

} // namespace

struct Scheduler::State {
  SchedulerConfig config;
  PagePool pool;
  std::map<int64_t, Sequence> sequences; ///< waiting and running, by index
  std::deque<int64_t> waiting;           ///< by arrival, preempted ones in front
  std::vector<int64_t> running;          ///< by arrival, oldest first
  std::vector<int64_t> slotOwner;        ///< sequence of each decode row, -1: free
  std::vector<int32_t> plannedTables;    ///< the tables as plan() left them
  Iteration planned;
  bool outstanding = false;              ///< plan() awaits complete()
  int64_t arrivals = 0, preempted = 0, shared = 0;
  /// Static batching: the current wave's members not yet (or, preempted,
  /// no longer) admitted; they wait in front of the queue.
  int64_t waveLeft = 0;
  /// Prompt tokens the iteration being planned may still take (the token
  /// budget less its decode rows; unbounded without a budget).
  int64_t chunkTokensLeft = 0;

  explicit State(const SchedulerConfig &c)
      : config(c), pool(c.pages, c.pageSize), slotOwner(size_t(c.decodeRows), -1),
        plannedTables(size_t(c.decodeRows * c.pagesPerSequence), -1) {}

  Sequence &of(int64_t index) { return sequences.at(index); }

  // Planning (in the order plan() runs them).
  void planRunning(Iteration &it, int64_t &prefillRowsLeft);
  bool planDecode(Sequence &s, Iteration &it);
  bool planChunk(Sequence &s, Iteration &it, int64_t row);
  void admit(Iteration &it, int64_t &prefillRowsLeft);

  // Pages.
  int64_t missingPages(const Sequence &s, int64_t from, int64_t to) const;
  void takePages(Sequence &s, int64_t from, int64_t to);
  std::vector<int32_t> matchShared(const Sequence &s) const;
  void shareCommittedPrefix(Sequence &s);
  bool makeRoom(Sequence &s, int64_t needed, Iteration &it);
  void preemptNewest(Iteration &it);
  void releasePages(Sequence &s);
  void commitFullPages(Sequence &s);

  // Completion.
  bool finishes(const Sequence &s) const;
  void retire(Sequence &s, std::vector<Finished> &finished);
  std::string checkSequences() const;
};

//===----------------------------------------------------------------------===//
// Pages
//===----------------------------------------------------------------------===//

int64_t Scheduler::State::missingPages(const Sequence &s, int64_t from, int64_t to) const {
  int64_t missing = 0;
  for (int64_t j = from / config.pageSize; from < to && j <= (to - 1) / config.pageSize; ++j)
    missing += s.table[j] < 0;
  return missing;
}

/// Allocates the pages of positions [from, to) that `s` does not hold (the
/// caller made sure enough are free).
void Scheduler::State::takePages(Sequence &s, int64_t from, int64_t to) {
  for (int64_t j = from / config.pageSize; from < to && j <= (to - 1) / config.pageSize; ++j)
    if (s.table[j] < 0 && (s.table[j] = pool.allocate()) < 0)
      schedulerBug("a page was planned but none is free");
}

/// The committed pages that can stand for `s`'s next pages: `s.cached` is at
/// a page boundary, and only full pages that end before the last position
/// to prefill are shared (that position's logits must be computed).
std::vector<int32_t> Scheduler::State::matchShared(const Sequence &s) const {
  std::vector<int32_t> match;
  if (!config.sharePrefixes || s.cached % config.pageSize != 0)
    return match;
  int64_t P = config.pageSize;
  for (int64_t j = s.cached / P; (j + 1) * P <= s.prefillLength - 1 && s.table[j] < 0; ++j) {
    int32_t parent = j == 0 ? -1 : (match.empty() ? s.table[j - 1] : match.back());
    if (parent < 0 && j > 0)
      break;
    if (j > 0 && !pool.isCommitted(parent))
      break;
    int32_t page = pool.find(parent, s.tokens.data() + j * P);
    if (page < 0)
      break;
    match.push_back(page);
  }
  return match;
}

void Scheduler::State::shareCommittedPrefix(Sequence &s) {
  for (int32_t page : matchShared(s)) {
    pool.retain(page);
    s.table[s.cached / config.pageSize] = page;
    s.cached += config.pageSize;
    ++s.committedPages;
    ++shared;
  }
}

void Scheduler::State::releasePages(Sequence &s) {
  for (int32_t &page : s.table)
    if (page >= 0) {
      pool.release(page);
      page = -1;
    }
  s.committedPages = 0;
}

/// Preempts the newest running sequence (recompute): its pages and row are
/// released and it waits in front of the queue to prefill its prompt and
/// generated tokens again.
void Scheduler::State::preemptNewest(Iteration &it) {
  Sequence &s = of(running.back());
  running.pop_back();
  releasePages(s);
  slotOwner[s.slot] = -1;
  s.slot = -1;
  s.cached = 0;
  s.prefillLength = int64_t(s.tokens.size());
  waiting.push_front(s.index);
  it.preempted.push_back(s.index);
  ++preempted;
  if (config.staticBatches)
    ++waveLeft;
}

/// Preempts newer running sequences until `needed` pages are free for `s`;
/// false when `s`, the newest, is preempted itself.
bool Scheduler::State::makeRoom(Sequence &s, int64_t needed, Iteration &it) {
  while (pool.freePages() < needed) {
    bool self = running.back() == s.index;
    preemptNewest(it);
    if (self)
      return false;
  }
  return true;
}

/// Commits `s`'s full pages for sharing, in order (a page's parent first).
void Scheduler::State::commitFullPages(Sequence &s) {
  int64_t P = config.pageSize;
  for (int64_t j = s.committedPages; j < s.cached / P; ++j, ++s.committedPages)
    if (!pool.isCommitted(s.table[j]))
      pool.commit(s.table[j], j == 0 ? -1 : s.table[j - 1], s.tokens.data() + j * P);
}

//===----------------------------------------------------------------------===//
// Planning
//===----------------------------------------------------------------------===//

/// A decode row for `s` at its next position; false when `s` was preempted
/// for want of a page.
bool Scheduler::State::planDecode(Sequence &s, Iteration &it) {
  int64_t position = s.cached;
  if (!makeRoom(s, missingPages(s, position, position + 1), it))
    return false;
  takePages(s, position, position + 1);
  DecodeRow row;
  row.sequence = s.index;
  row.slot = s.slot;
  row.position = position;
  row.token = s.tokens[position];
  row.step = s.generated();
  it.decode.push_back(row);
  return true;
}

/// The next prompt chunk of `s` in prefill row `row`: as long as `chunk`
/// allows, preempting newer sequences for its pages; once `s` is the newest,
/// a shorter chunk when pages are short, and `s` preempted when not one
/// position fits. False when `s` was preempted.
bool Scheduler::State::planChunk(Sequence &s, Iteration &it, int64_t row) {
  shareCommittedPrefix(s);
  int64_t from = s.cached;
  int64_t to = std::min(s.prefillLength, from + std::min(config.chunk, chunkTokensLeft));
  while (missingPages(s, from, to) > pool.freePages()) {
    if (running.back() != s.index) {
      preemptNewest(it);
      continue;
    }
    while (to > from && missingPages(s, from, to) > pool.freePages())
      --to;
    if (to == from) {
      preemptNewest(it);
      return false;
    }
  }
  takePages(s, from, to);
  chunkTokensLeft -= to - from;
  PrefillChunk chunk;
  chunk.sequence = s.index;
  chunk.row = row;
  chunk.slot = s.slot;
  chunk.position = from;
  chunk.tokens.assign(s.tokens.begin() + from, s.tokens.begin() + to);
  chunk.completesPrompt = to == s.prefillLength;
  chunk.step = s.generated();
  it.prefill.push_back(std::move(chunk));
  return true;
}

/// Every running sequence's work, the oldest first: a decode row each, a
/// chunk each while prefill rows are left.
void Scheduler::State::planRunning(Iteration &it, int64_t &prefillRowsLeft) {
  for (size_t i = 0; i < running.size(); ++i) {
    Sequence &s = of(running[i]);
    if (!s.prefilling())
      planDecode(s, it);
    else if (prefillRowsLeft > 0 && chunkTokensLeft > 0 &&
             planChunk(s, it, config.prefillRows - prefillRowsLeft))
      --prefillRowsLeft;
  }
}

/// Admits waiting requests in order while a decode row, a prefill row and
/// the pages of the first chunk are free; the first that cannot be admitted
/// stops admission (FCFS). Static batching admits only the current wave's
/// members, and forms the next wave once nothing runs.
void Scheduler::State::admit(Iteration &it, int64_t &prefillRowsLeft) {
  if (config.staticBatches && running.empty() && waveLeft == 0)
    waveLeft = std::min(config.decodeRows, int64_t(waiting.size()));
  while (!waiting.empty() && prefillRowsLeft > 0 && chunkTokensLeft > 0 &&
         (!config.staticBatches || waveLeft > 0)) {
    auto freeSlot = std::find(slotOwner.begin(), slotOwner.end(), -1);
    if (freeSlot == slotOwner.end())
      return;
    Sequence &s = of(waiting.front());
    int64_t start = int64_t(matchShared(s).size()) * config.pageSize;
    int64_t end = std::min(s.prefillLength, start + std::min(config.chunk, chunkTokensLeft));
    // The pages shared are held by others: the first chunk needs only its own.
    if (missingPages(s, start, end) > pool.freePages())
      return;
    waiting.pop_front();
    s.slot = freeSlot - slotOwner.begin();
    *freeSlot = s.index;
    running.push_back(s.index);
    it.admitted.push_back(s.index);
    if (!planChunk(s, it, config.prefillRows - prefillRowsLeft))
      schedulerBug("an admitted sequence's first chunk did not fit");
    --prefillRowsLeft;
    if (config.staticBatches)
      --waveLeft;
  }
}

//===----------------------------------------------------------------------===//
// Completion
//===----------------------------------------------------------------------===//

bool Scheduler::State::finishes(const Sequence &s) const {
  if (s.generated() >= s.maxNewTokens)
    return true;
  return config.endToken >= 0 && s.generated() > 0 && s.tokens.back() == config.endToken;
}

void Scheduler::State::retire(Sequence &s, std::vector<Finished> &finished) {
  Finished done;
  done.sequence = s.index;
  done.ids.assign(s.tokens.begin() + s.promptLength, s.tokens.end());
  done.endToken = config.endToken >= 0 && done.ids.back() == config.endToken;
  finished.push_back(std::move(done));
  releasePages(s);
  slotOwner[s.slot] = -1;
  running.erase(std::find(running.begin(), running.end(), s.index));
  sequences.erase(s.index);
}

//===----------------------------------------------------------------------===//
// Scheduler
//===----------------------------------------------------------------------===//

Scheduler::Scheduler(const SchedulerConfig &config) {
  for (int64_t size : {config.decodeRows, config.prefillRows, config.chunk, config.pageSize,
                       config.pages, config.pagesPerSequence})
    if (size < 1 || size > std::numeric_limits<int32_t>::max())
      schedulerBug("a scheduler needs rows, chunk, page size, pages and table entries in "
                   "[1, 2^31)");
  if (config.tokenBudget && (config.tokenBudget <= config.decodeRows ||
                             config.tokenBudget > std::numeric_limits<int32_t>::max()))
    schedulerBug("a token budget must exceed the decode rows and be below 2^31");
  state = new State(config);
}

Scheduler::~Scheduler() { delete state; }

std::string Scheduler::refusalOf(int64_t promptLength, int64_t maxNewTokens) const {
  const SchedulerConfig &c = state->config;
  if (promptLength < 1)
    return "empty prompt";
  if (maxNewTokens < 1)
    return "max_new_tokens " + std::to_string(maxNewTokens) + " is not at least 1";
  // The last token drawn is never fed: the cache holds prompt + N - 1 positions.
  int64_t positions = promptLength + maxNewTokens - 1;
  int64_t context = c.pagesPerSequence * c.pageSize;
  if (positions > context)
    return "prompt of " + std::to_string(promptLength) + " tokens plus " +
           std::to_string(maxNewTokens) + " generated exceeds the context of " +
           std::to_string(context) + " (prompt + max_new_tokens - 1 > context)";
  if (ceilDiv(positions, c.pageSize) > c.pages)
    return "needs " + std::to_string(ceilDiv(positions, c.pageSize)) + " pages of " +
           std::to_string(c.pageSize) + " positions, more than the cache's " +
           std::to_string(c.pages);
  return "";
}

bool Scheduler::arrive(int64_t sequence, const std::vector<int32_t> &prompt,
                       int64_t maxNewTokens, std::string *why) {
  std::string refusal = refusalOf(int64_t(prompt.size()), maxNewTokens);
  if (refusal.empty() && state->sequences.count(sequence))
    refusal = "request " + std::to_string(sequence) + " is already being served";
  if (!refusal.empty()) {
    if (why)
      *why = refusal;
    return false;
  }
  Sequence &s = state->sequences[sequence];
  s.index = sequence;
  s.arrival = state->arrivals++;
  s.tokens = prompt;
  s.promptLength = s.prefillLength = int64_t(prompt.size());
  s.maxNewTokens = maxNewTokens;
  s.table.assign(size_t(state->config.pagesPerSequence), -1);
  state->waiting.push_back(sequence);
  return true;
}

Iteration Scheduler::plan() {
  State &st = *state;
  if (st.outstanding)
    schedulerBug("plan() called again before complete()");
  Iteration it;
  int64_t prefillRowsLeft = st.config.prefillRows;
  // A token budget holds every decode row that may run (each running
  // sequence past its prompt) and the prompt tokens beside them.
  st.chunkTokensLeft = std::numeric_limits<int64_t>::max();
  if (st.config.tokenBudget > 0) {
    int64_t decoding = 0;
    for (int64_t index : st.running)
      decoding += st.of(index).prefilling() ? 0 : 1;
    st.chunkTokensLeft = st.config.tokenBudget - decoding;
  }
  st.planRunning(it, prefillRowsLeft);
  // Pages were short: admitting now would only take them back (as vLLM,
  // no admission in an iteration that preempted; one still runs).
  if (it.preempted.empty())
    st.admit(it, prefillRowsLeft);
  // The tables the programs read, as planned (complete() may retire rows).
  int64_t T = st.config.pagesPerSequence;
  std::fill(st.plannedTables.begin(), st.plannedTables.end(), -1);
  for (int64_t slot = 0; slot < st.config.decodeRows; ++slot)
    if (st.slotOwner[slot] >= 0) {
      const std::vector<int32_t> &table = st.of(st.slotOwner[slot]).table;
      std::copy(table.begin(), table.end(), st.plannedTables.begin() + slot * T);
    }
  st.planned = it;
  st.outstanding = true;
  return it;
}

std::vector<int32_t> Scheduler::pageTable(int64_t slot) const {
  int64_t T = state->config.pagesPerSequence;
  if (slot < 0 || slot >= state->config.decodeRows)
    return std::vector<int32_t>(size_t(T), -1);
  auto begin = state->plannedTables.begin() + slot * T;
  return std::vector<int32_t>(begin, begin + T);
}

std::vector<Finished> Scheduler::complete(const std::vector<int32_t> &prefillTokens,
                                          const std::vector<int32_t> &decodeTokens) {
  State &st = *state;
  const Iteration &it = st.planned;
  if (!st.outstanding)
    schedulerBug("complete() without a plan()");
  if (prefillTokens.size() != it.prefill.size() || decodeTokens.size() != it.decode.size())
    schedulerBug("complete() got " + std::to_string(prefillTokens.size()) + " prefill and " +
                 std::to_string(decodeTokens.size()) + " decode tokens for a plan of " +
                 std::to_string(it.prefill.size()) + " and " + std::to_string(it.decode.size()));
  st.outstanding = false;
  std::vector<int64_t> touched;
  for (size_t i = 0; i < it.prefill.size(); ++i) {
    Sequence &s = st.of(it.prefill[i].sequence);
    s.cached += int64_t(it.prefill[i].tokens.size());
    if (it.prefill[i].completesPrompt)
      s.tokens.push_back(prefillTokens[i]);
    touched.push_back(s.index);
  }
  for (size_t j = 0; j < it.decode.size(); ++j) {
    Sequence &s = st.of(it.decode[j].sequence);
    s.cached += 1;
    s.tokens.push_back(decodeTokens[j]);
    touched.push_back(s.index);
  }
  std::vector<Finished> finished;
  for (int64_t index : touched) {
    Sequence &s = st.of(index);
    if (st.finishes(s))
      st.retire(s, finished);
    else
      st.commitFullPages(s);
  }
  return finished;
}

bool Scheduler::busy() const { return !state->waiting.empty() || !state->running.empty(); }
int64_t Scheduler::pagesInUse() const { return state->pool.inUse(); }
int64_t Scheduler::peakPagesInUse() const { return state->pool.peakInUse(); }
int64_t Scheduler::preemptions() const { return state->preempted; }
int64_t Scheduler::sharedPages() const { return state->shared; }

//===----------------------------------------------------------------------===//
// Invariants
//===----------------------------------------------------------------------===//

/// Each running sequence's pages against the pool: holders counted from the
/// tables, no holes below `cached`, a page in two tables shared (committed,
/// at the same index, full in both), rows owned both ways.
std::string Scheduler::State::checkSequences() const {
  std::vector<int64_t> holders(size_t(pool.size()), 0), indexOf(size_t(pool.size()), -1);
  int64_t P = config.pageSize;
  for (int64_t index : running) {
    const Sequence &s = sequences.at(index);
    std::string who = "sequence " + std::to_string(index);
    if (s.slot < 0 || s.slot >= config.decodeRows || slotOwner[s.slot] != index)
      return who + " does not own its decode row";
    for (int64_t j = 0; j < config.pagesPerSequence; ++j) {
      int32_t page = s.table[j];
      if (page < 0) {
        if (j * P < s.cached)
          return who + " has no page for position " + std::to_string(j * P) + " it holds";
        continue;
      }
      if (page >= pool.size())
        return who + " holds page " + std::to_string(page) + " outside the pool";
      if (holders[page]++ > 0 &&
          (indexOf[page] != j || !pool.isCommitted(page) || (j + 1) * P > s.cached))
        return who + " holds page " + std::to_string(page) + " that is held elsewhere " +
               "without being a shared full page";
      indexOf[page] = j;
    }
  }
  for (int64_t page = 0; page < pool.size(); ++page)
    if (holders[page] != pool.holders(int32_t(page)))
      return "page " + std::to_string(page) + " has " + std::to_string(pool.holders(int32_t(page))) +
             " holders in the pool but " + std::to_string(holders[page]) + " in the tables";
  for (int64_t index : waiting)
    if (sequences.at(index).slot >= 0 ||
        std::count(sequences.at(index).table.begin(), sequences.at(index).table.end(), -1) !=
            config.pagesPerSequence)
      return "waiting sequence " + std::to_string(index) + " holds a row or pages";
  if (waveLeft < 0 || waveLeft > int64_t(waiting.size()) ||
      waveLeft + int64_t(running.size()) > config.decodeRows)
    return "the wave's " + std::to_string(waveLeft) + " members to admit do not fit " +
           std::to_string(waiting.size()) + " waiting and " +
           std::to_string(config.decodeRows - int64_t(running.size())) + " free rows";
  return "";
}

std::string Scheduler::checkInvariants() const {
  std::string problem = state->pool.checkInvariants();
  return problem.empty() ? state->checkSequences() : problem;
}

} // namespace braid::rt::serve
