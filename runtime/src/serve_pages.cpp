//===- serve_pages.cpp - the KV cache's page pool, with prefix sharing ----===//
//
// What serve_pages.h specifies.
//
//===----------------------------------------------------------------------===//

#include "serve_pages.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace braid::rt::serve {

namespace {
constexpr uint64_t kFnvOffset = 1469598103934665603ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

/// Misuse by the scheduler (never by user input): a bug to stop at.
[[noreturn]] void poolBug(const char *what, int64_t page) {
  std::fprintf(stderr, "braid serve: page pool misuse: %s (page %lld)\n", what, (long long)page);
  std::abort();
}
} // namespace

PagePool::PagePool(int64_t pages, int64_t pageSize)
    : positions(pageSize), refs(size_t(std::max<int64_t>(pages, 0)), 0),
      committed(refs.size(), false), parents(refs.size(), -1), keys(refs.size(), 0),
      tokenOf(refs.size() * size_t(std::max<int64_t>(pageSize, 0)), 0) {
  for (int64_t page = size() - 1; page >= 0; --page)
    freeList.push_back(int32_t(page));
}

int32_t PagePool::allocate() {
  if (freeList.empty())
    return -1;
  int32_t page = freeList.back();
  freeList.pop_back();
  refs[page] = 1;
  peak = std::max(peak, inUse());
  return page;
}

void PagePool::retain(int32_t page) {
  if (page < 0 || page >= size() || refs[page] == 0 || !committed[page])
    poolBug("sharing a page that is not held and committed", page);
  ++refs[page];
}

void PagePool::release(int32_t page) {
  if (page < 0 || page >= size() || refs[page] == 0)
    poolBug("releasing a page that is not held", page);
  if (--refs[page] > 0)
    return;
  forget(page);
  freeList.push_back(page);
}

uint64_t PagePool::keyOf(int32_t parent, const int32_t *tokens) const {
  // FNV-1a over the parent's key (the hash of the prefix before this page)
  // and this page's tokens: a hash of the whole prefix up to the page's end.
  uint64_t h = parent < 0 ? kFnvOffset : keys[parent];
  auto feed = [&](const void *data, size_t n) {
    for (size_t i = 0; i < n; ++i)
      h = (h ^ static_cast<const unsigned char *>(data)[i]) * kFnvPrime;
  };
  feed(tokens, sizeof(int32_t) * size_t(positions));
  return h;
}

void PagePool::commit(int32_t page, int32_t parent, const int32_t *tokens) {
  if (page < 0 || page >= size() || refs[page] == 0 || committed[page])
    poolBug("committing a page that is not held or already committed", page);
  if (parent >= 0 && !committed[parent])
    poolBug("committing a page after an uncommitted parent", page);
  std::copy(tokens, tokens + positions, tokenOf.begin() + page * positions);
  parents[page] = parent;
  keys[page] = keyOf(parent, tokens);
  committed[page] = true;
  index.emplace(keys[page], page);
}

int32_t PagePool::find(int32_t parent, const int32_t *tokens) const {
  auto [begin, end] = index.equal_range(keyOf(parent, tokens));
  for (auto it = begin; it != end; ++it) {
    int32_t page = it->second;
    if (parents[page] == parent &&
        std::equal(tokens, tokens + positions, tokenOf.begin() + page * positions))
      return page;
  }
  return -1;
}

void PagePool::forget(int32_t page) {
  if (!committed[page])
    return;
  auto [begin, end] = index.equal_range(keys[page]);
  for (auto it = begin; it != end; ++it)
    if (it->second == page) {
      index.erase(it);
      break;
    }
  committed[page] = false;
  parents[page] = -1;
}

std::string PagePool::checkInvariants() const {
  std::vector<bool> isFree(refs.size(), false);
  for (int32_t page : freeList) {
    if (page < 0 || page >= size() || isFree[page])
      return "page " + std::to_string(page) + " is on the free list twice or out of range";
    isFree[page] = true;
  }
  size_t committedPages = 0;
  for (int64_t page = 0; page < size(); ++page) {
    if (isFree[page] != (refs[page] == 0))
      return "page " + std::to_string(page) + " has " + std::to_string(refs[page]) +
             " holders but is " + (isFree[page] ? "" : "not ") + "free";
    if (committed[page] && isFree[page])
      return "free page " + std::to_string(page) + " is still committed for sharing";
    if (committed[page] && parents[page] >= 0 && !committed[parents[page]])
      return "committed page " + std::to_string(page) + "'s parent is not committed";
    committedPages += committed[page];
  }
  if (committedPages != index.size())
    return "the sharing index holds " + std::to_string(index.size()) + " pages, not the " +
           std::to_string(committedPages) + " committed";
  return "";
}

} // namespace braid::rt::serve
