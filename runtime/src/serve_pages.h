//===- serve_pages.h - the KV cache's page pool, with prefix sharing -*- C++ -*-===//
//
// The pages of the paged KV cache as the serving scheduler
// (serve_scheduler.h) hands them out: a free list, a reference count per
// page, and the FULL pages committed for sharing. A committed page is known
// by its tokens and its parent (the page before it in the sequence that
// committed it, -1 for a sequence's first page); its key is a hash of the
// whole token prefix up to its end, chained through the parents. A lookup
// verifies a candidate token by token and by parent, so a match holds
// exactly the same prefix: by induction over the pages, the parent holds
// the same tokens before it (a page's parent is held as long as the page
// is: every holder holds the parent at the index before it).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_SERVE_PAGES_H
#define BRAID_RUNTIME_SERVE_PAGES_H

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace braid::rt::serve {

class PagePool {
public:
  PagePool(int64_t pages, int64_t pageSize);

  int64_t size() const { return int64_t(refs.size()); }
  int64_t pageSize() const { return positions; }
  int64_t freePages() const { return int64_t(freeList.size()); }
  int64_t inUse() const { return size() - freePages(); }
  int64_t peakInUse() const { return peak; }

  /// A free page, held once; -1 when none is free.
  int32_t allocate();
  /// One more holder of a committed page (a sequence shares it).
  void retain(int32_t page);
  /// One holder less; the last one frees the page (and forgets its tokens).
  void release(int32_t page);
  int64_t holders(int32_t page) const { return refs[page]; }

  /// `page` is full and written with `tokens` (pageSize of them) after the
  /// prefix that `parent` ends (-1: the sequence's first page): others may
  /// share it from now on. A page is committed once.
  void commit(int32_t page, int32_t parent, const int32_t *tokens);
  bool isCommitted(int32_t page) const { return committed[page]; }

  /// A committed page holding `tokens` after the prefix that `parent` ends;
  /// -1 when none does.
  int32_t find(int32_t parent, const int32_t *tokens) const;

  /// The pool's own consistency (free list against reference counts, the
  /// sharing index against the committed pages); empty or the problem.
  std::string checkInvariants() const;

private:
  uint64_t keyOf(int32_t parent, const int32_t *tokens) const;
  void forget(int32_t page);

  int64_t positions;
  int64_t peak = 0;
  std::vector<int64_t> refs;
  std::vector<int32_t> freeList; ///< a stack: the lowest page is handed out first
  std::vector<bool> committed;
  std::vector<int32_t> parents;
  std::vector<uint64_t> keys;    ///< the prefix hash of a committed page
  std::vector<int32_t> tokenOf;  ///< pageSize tokens per committed page
  std::unordered_multimap<uint64_t, int32_t> index;
};

} // namespace braid::rt::serve

#endif // BRAID_RUNTIME_SERVE_PAGES_H
