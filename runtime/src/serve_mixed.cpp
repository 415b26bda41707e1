//===- serve_mixed.cpp - the rows of a mixed serving call -----------------===//
//
// What serve_mixed.h specifies.
//
//===----------------------------------------------------------------------===//

#include "serve_mixed.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace braid::rt::serve {

namespace {

[[noreturn]] void layoutBug(const char *what, long long size) {
  std::fprintf(stderr, "braid serve: %s %lld\n", what, size);
  std::abort();
}

} // namespace

size_t pickMixedShape(const Iteration &iteration, const std::vector<MixedShape> &shapes) {
  int64_t tokens = int64_t(iteration.decode.size()), logitRows = tokens;
  for (const PrefillChunk &chunk : iteration.prefill) {
    tokens += int64_t(chunk.tokens.size());
    logitRows += chunk.completesPrompt ? 1 : 0;
  }
  size_t pick = 0;
  while (pick + 1 < shapes.size() &&
         (shapes[pick].rows < tokens || shapes[pick].groups < logitRows))
    ++pick;
  return pick;
}

MixedLayout layoutMixedCall(const Iteration &iteration, MixedShape shape, int64_t tableEntries,
                            const std::function<std::vector<int32_t>(int64_t)> &pageTable,
                            int64_t chunkShift) {
  const int64_t M = shape.rows, K = shape.groups, G = M / K, T = tableEntries;
  MixedLayout out;
  out.tokens.assign(size_t(M), 0);
  out.positions.assign(size_t(M), 0);
  out.lastRows.assign(size_t(M), -1);
  out.pages.assign(size_t(M * T), -1);
  out.logitRows.assign(size_t(K), -1);
  out.chunkGroups.assign(iteration.prefill.size(), -1);
  std::vector<bool> used(size_t(M), false);
  auto place = [&](int64_t row, int32_t token, int64_t position, int64_t slot) {
    used[size_t(row)] = true;
    out.tokens[size_t(row)] = token;
    out.positions[size_t(row)] = int32_t(position);
    out.lastRows[size_t(row)] = 0;
    std::vector<int32_t> table = pageTable(slot);
    std::copy(table.begin(), table.end(), out.pages.begin() + row * T);
  };
  int64_t group = 0;
  auto placeWithLogits = [&](int32_t token, int64_t position, int64_t slot) {
    if (group == K)
      layoutBug("an iteration needs more logits than the mixed program's groups:", K);
    place(group * G, token, position, slot);
    out.logitRows[size_t(group)] = 0;
    return group++;
  };
  auto startOf = [&](const PrefillChunk &chunk) {
    return chunk.position - (chunk.position > 0 ? chunkShift : 0);
  };
  for (const DecodeRow &row : iteration.decode)
    out.decodeGroups.push_back(placeWithLogits(row.token, row.position, row.slot));
  for (size_t c = 0; c < iteration.prefill.size(); ++c) {
    const PrefillChunk &chunk = iteration.prefill[c];
    if (chunk.completesPrompt)
      out.chunkGroups[c] =
          placeWithLogits(chunk.tokens.back(),
                          startOf(chunk) + int64_t(chunk.tokens.size()) - 1, chunk.slot);
  }
  int64_t free = 0;
  for (const PrefillChunk &chunk : iteration.prefill) {
    const int64_t n = int64_t(chunk.tokens.size()) - (chunk.completesPrompt ? 1 : 0);
    for (int64_t i = 0; i < n; ++i) {
      while (free < M && used[size_t(free)])
        ++free;
      if (free == M)
        layoutBug("an iteration's tokens exceed the mixed program's rows:", M);
      place(free, chunk.tokens[size_t(i)], startOf(chunk) + i, chunk.slot);
    }
  }
  return out;
}

} // namespace braid::rt::serve
