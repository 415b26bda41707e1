//===- serve_scheduler.h - continuous batching over a paged cache -*- C++ -*-===//
//
// The serving loop's policy (braid-run --serve), with no MLIR and no
// program in it: which requests run, which pages of the KV cache pool each
// sequence's positions live in, which prompt chunks and which decode rows
// the next iteration runs, and whom to preempt when pages run out. The
// driver (driver_serve.cpp) runs each planned iteration's prefill and decode
// calls, then reports the tokens they drew.
//
// The programs it plans for (--braid-derive-inference page-size=P): a
// prefill call of `prefillRows` rows of at most `chunk` prompt tokens each,
// a decode call of `decodeRows` rows of one token each; both address a pool
// of `pages` pages of `pageSize` positions through a table of
// `pagesPerSequence` entries per row (-1: no page).
//
// Policy (as vLLM's scheduler, in the order of each iteration):
//  1. Arrived requests wait in arrival order (FCFS); a preempted sequence
//     goes back to the front of the queue.
//  2. Decode: every running sequence whose prompt is complete decodes one
//     token, at its next position. A position that starts a new page takes a
//     free page; when none is free, the newest running sequence is preempted
//     (recompute: its pages are released; later it is prefilled again over
//     its prompt and the tokens it has generated, and continues), until the
//     older ones fit.
//  3. Prefill: sequences whose prompt is not yet in the cache get at most
//     `chunk` rows each, at most `prefillRows` of them per iteration, the
//     oldest first; a chunk's new pages are taken as a decode row's are
//     (newer sequences preempted), except that the newest running sequence
//     takes a shorter chunk when pages are short (and is preempted when not
//     one position fits). Steps 2 and 3 visit the running sequences in one
//     pass, oldest first, so an older sequence's work always comes first and
//     the oldest always progresses (it fits the pool alone: refusalOf). Then
//     a waiting request is admitted (given a decode row, its slot, until it
//     retires or is preempted) while a decode row, a prefill row and the
//     pages of its first chunk are free (without preempting anyone for it);
//     the first that cannot be admitted stops admission (FCFS), and an
//     iteration that preempted admits nobody (the pages it freed would go
//     straight back). With nothing running every page is free, so the first
//     waiting request is admitted.
//     A chunk that completes the prompt yields the sequence's next token
//     (sampled by the driver from the prefill's logits of that row).
//  4. Prefix sharing: a full page whose tokens, and every token before them,
//     equal those of a page already written for another running sequence is
//     shared (reference counted) instead of computed: the new sequence's
//     prefill starts after its shared pages. Only pages that end before a
//     prompt's last token are shared (that token's logits must be computed),
//     and a page is shared only once the prefill that writes it has run
//     (committed by complete()). Writes never reach a shared page: a
//     sequence writes only positions past its shared prefix. Pages are
//     looked up at admission and again whenever a prefilling sequence
//     reaches a page boundary (another sequence may have committed the next
//     ones meanwhile). A page freed by its last holder is forgotten (no
//     cache of freed pages). serve_pages.h keeps the pages.
//  5. A sequence is retired when it has generated its max_new_tokens or
//     drawn the end token (if any); its pages and row are released at once.
//  6. Static batching (staticBatches, the baseline continuous batching is
//     measured against, bench/serving): requests are admitted in waves. A
//     wave forms only when no sequence runs: the first decodeRows waiting
//     requests (those that have arrived), admitted as in 3 (a few per
//     iteration when prefillRows < decodeRows); nobody else is admitted
//     until the wave's last sequence retires, so a retired sequence's row
//     stays empty meanwhile. A wave member preempted in 2 or 3 waits in
//     front of the queue and is admitted again within its wave. Chunking,
//     paging and sampling are as above.
//  7. A token budget (tokenBudget, vLLM's max_num_batched_tokens): the
//     iteration's decode rows and prompt tokens together are at most the
//     budget, so that the driver runs them as one call of a mixed program
//     (a prompt chunk's tokens are rows beside the decode rows). Every
//     sequence past its prompt counts as a decode row before any chunk is
//     planned; the chunks (still at most prefillRows of at most chunk
//     tokens) take what is left, the oldest first, the last one shorter.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_SERVE_SCHEDULER_H
#define BRAID_RUNTIME_SERVE_SCHEDULER_H

#include <cstdint>
#include <string>
#include <vector>

namespace braid::rt::serve {

struct SchedulerConfig {
  int64_t decodeRows = 0;       ///< B: running sequences at most (decode rows)
  int64_t prefillRows = 0;      ///< Bp: prompt chunks per iteration at most
  int64_t chunk = 0;            ///< L: prompt rows per chunk at most
  int64_t pageSize = 0;         ///< P: positions per page
  int64_t pages = 0;            ///< N: pages in the pool
  int64_t pagesPerSequence = 0; ///< T: table entries per row (context = T * P)
  int64_t endToken = -1;        ///< a drawn token that ends a sequence (-1: none)
  /// Share full pages between identical prompt heads. Must be false for a
  /// model with Mamba layers: their state has no pages, so a sequence that
  /// starts its prefill past shared pages would miss their tokens.
  bool sharePrefixes = true;
  /// Static batching (policy 6): admit a wave only when nothing runs, and
  /// nobody else until the wave ends.
  bool staticBatches = false;
  /// Mixed iterations (policy 7): an iteration's decode rows and prompt
  /// tokens together at most (0: no budget; else > decodeRows).
  int64_t tokenBudget = 0;
};

/// One prompt chunk of an iteration's prefill call, in row `row` of it.
struct PrefillChunk {
  int64_t sequence = 0; ///< the request's index
  int64_t row = 0;      ///< row of the prefill call, < prefillRows
  int64_t slot = 0;     ///< the sequence's decode row (its Mamba state slot)
  int64_t position = 0; ///< first position of the chunk
  std::vector<int32_t> tokens; ///< the chunk's tokens, 1..chunk of them
  bool completesPrompt = false; ///< its last row's logits give the next token
  int64_t step = 0; ///< if completesPrompt: the step of the token drawn (generated so far)
};

/// One decode row of an iteration.
struct DecodeRow {
  int64_t sequence = 0;
  int64_t slot = 0;     ///< the decode row
  int64_t position = 0; ///< of the token fed (the last one drawn)
  int32_t token = 0;
  int64_t step = 0;     ///< the step of the token drawn (generated so far)
};

/// What one iteration runs (either part may be empty; both are empty only
/// when no request waits or runs: the oldest running sequence, or with none
/// the first waiting one, always has work planned).
struct Iteration {
  std::vector<PrefillChunk> prefill;
  std::vector<DecodeRow> decode;
  std::vector<int64_t> admitted;  ///< requests given a row this iteration
  std::vector<int64_t> preempted; ///< sequences preempted this iteration
};

/// A finished sequence (its ids include the end token that ended it).
struct Finished {
  int64_t sequence = 0;
  std::vector<int32_t> ids; ///< the generated tokens
  bool endToken = false;    ///< ended by the end token (else by its length)
};

class Scheduler {
public:
  /// Every size of `config` must be in [1, 2^31) (the driver's bug otherwise:
  /// it stops with a message).
  explicit Scheduler(const SchedulerConfig &config);
  ~Scheduler();

  /// Why a request with this prompt and output length can never run with
  /// this configuration (its prompt plus max_new_tokens - 1 positions past
  /// the table's T * P, or more pages than the pool holds, an empty prompt,
  /// max_new_tokens < 1); empty when it can. arrive() refuses such requests.
  std::string refusalOf(int64_t promptLength, int64_t maxNewTokens) const;

  /// A request arrives (indices are unique, any order); false (and the
  /// refusal in `why`) when refusalOf says it can never run.
  bool arrive(int64_t sequence, const std::vector<int32_t> &prompt, int64_t maxNewTokens,
              std::string *why = nullptr);

  /// Plans the next iteration (admission, preemption, chunks, decode rows).
  Iteration plan();

  /// The pages of `slot`'s sequence as the programs read them: pagesPerSequence
  /// entries, -1 where no page is held; all -1 for a free slot. Valid from
  /// plan() to the next plan(), for the rows of the planned iteration.
  std::vector<int32_t> pageTable(int64_t slot) const;

  /// The planned iteration ran: `prefillTokens[i]` is the token drawn by
  /// prefill chunk i (ignored unless it completesPrompt), `decodeTokens[j]`
  /// by decode row j. Commits the written pages for sharing and returns the
  /// sequences that finished.
  std::vector<Finished> complete(const std::vector<int32_t> &prefillTokens,
                                 const std::vector<int32_t> &decodeTokens);

  /// Whether any request waits or runs.
  bool busy() const;

  /// Pages in use now, and the most ever in use at once.
  int64_t pagesInUse() const;
  int64_t peakPagesInUse() const;
  /// Preemptions so far.
  int64_t preemptions() const;
  /// Pages shared instead of computed so far (a page counts once per sequence that shares it).
  int64_t sharedPages() const;

  /// A consistency check for tests and --verify: every held page is held by
  /// the sequences that reference it and no page is in two places; empty or
  /// the first problem.
  std::string checkInvariants() const;

private:
  struct State;
  State *state;
};

} // namespace braid::rt::serve

#endif // BRAID_RUNTIME_SERVE_SCHEDULER_H
