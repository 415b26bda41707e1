//===- boxes.cpp - where a rank's data lies in a global tensor -------------===//

#include "boxes.h"

#include <algorithm>
#include <cstring>

namespace braid::rt {

int64_t Box::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

Box Box::intersect(const Box &other) const {
  Box out;
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t lo = std::max(start[d], other.start[d]);
    int64_t hi = std::min(start[d] + shape[d], other.start[d] + other.shape[d]);
    out.start.push_back(lo);
    out.shape.push_back(std::max<int64_t>(0, hi - lo));
  }
  return out;
}

int64_t rowMajor(const std::vector<int64_t> &index, const std::vector<int64_t> &shape) {
  int64_t at = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    at = at * shape[d] + index[d];
  return at;
}

namespace {

/// The elements [lo, hi) of the sub-array at `prefix` (indices of the
/// dimensions before d) as boxes.
void flatRange(const std::vector<int64_t> &shape, std::vector<int64_t> &prefix, int64_t lo,
               int64_t hi, std::vector<Box> *out) {
  const size_t d = prefix.size();
  if (lo >= hi)
    return;
  auto box = [&](int64_t first, int64_t count) {
    Box b;
    b.start = prefix;
    b.shape.assign(d, 1);
    if (d < shape.size()) {
      b.start.push_back(first);
      b.shape.push_back(count);
      for (size_t j = d + 1; j < shape.size(); ++j) {
        b.start.push_back(0);
        b.shape.push_back(shape[j]);
      }
    }
    out->push_back(std::move(b));
  };
  if (d == shape.size()) // one element
    return box(0, 1);
  int64_t inner = 1;
  for (size_t j = d + 1; j < shape.size(); ++j)
    inner *= shape[j];
  if (inner == 0)
    return;
  int64_t a = lo / inner, b = hi / inner;
  const int64_t ra = lo % inner, rb = hi % inner;
  auto below = [&](int64_t i, int64_t from, int64_t to) {
    prefix.push_back(i);
    flatRange(shape, prefix, from, to, out);
    prefix.pop_back();
  };
  if (a == b)
    return below(a, ra, rb);
  if (ra) // the partial sub-array the range starts in
    below(a++, ra, inner);
  if (a < b)
    box(a, b - a);
  if (rb)
    below(b, 0, rb);
}

/// Along one dimension: a run of `length` block indices from `local` that
/// hold consecutive global indices from `global`.
struct Run {
  int64_t local, global, length;
};

std::vector<Run> runsAlong(const ShardLayout &layout, size_t d, int64_t base, int64_t first,
                           int64_t count) {
  std::vector<Run> runs;
  // Stored indices past the global size are padding (natural order only).
  int64_t end = std::min(first + count, layout.global[d] - base);
  for (int64_t i = first; i < end;) {
    int64_t p = base + i;
    int64_t length = std::min(end - i, layout.contiguous(d, p));
    runs.push_back({i, layout.natural(d, p), length});
    i += length;
  }
  return runs;
}

} // namespace

std::vector<Box> flatRangeBoxes(const std::vector<int64_t> &shape, int64_t lo, int64_t hi) {
  std::vector<Box> out;
  std::vector<int64_t> prefix;
  flatRange(shape, prefix, lo, hi, &out);
  return out;
}

std::vector<Placed> placeBox(const ShardLayout &layout, const std::vector<int32_t> &coords,
                             const Box &box) {
  const size_t rank = box.shape.size();
  std::vector<std::vector<Run>> runs(rank);
  for (size_t d = 0; d < rank; ++d) {
    runs[d] =
        runsAlong(layout, d, layout.block(d, coords) * layout.local[d], box.start[d], box.shape[d]);
    if (runs[d].empty())
      return {};
  }
  // Every combination of one run per dimension, row-major.
  std::vector<Placed> out;
  std::vector<size_t> pick(rank, 0);
  while (true) {
    Placed p;
    for (size_t d = 0; d < rank; ++d) {
      const Run &r = runs[d][pick[d]];
      p.global.start.push_back(r.global);
      p.global.shape.push_back(r.length);
      p.local.push_back(r.local);
    }
    out.push_back(std::move(p));
    size_t d = rank;
    while (d > 0 && ++pick[d - 1] == runs[d - 1].size())
      pick[--d] = 0;
    if (d == 0)
      return out;
  }
}

void copyBox(const BoxCopy &c) {
  const size_t rank = c.shape.size();
  const int64_t count = rank ? c.shape[rank - 1] : 1;
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d)
    rows *= c.shape[d];
  if (count == 0)
    return;
  std::vector<int64_t> index(rank, 0), from(rank), to(rank);
  for (int64_t row = 0; row < rows; ++row) {
    for (size_t d = 0; d < rank; ++d) {
      from[d] = c.srcStart[d] + index[d];
      to[d] = c.dstStart[d] + index[d];
    }
    int64_t s = rowMajor(from, c.srcShape) - c.srcBase;
    int64_t t = rowMajor(to, c.dstShape) - c.dstBase;
    std::memcpy(c.dst + t * c.elementSize, c.src + s * c.elementSize,
                size_t(count * c.elementSize));
    for (size_t d = rank > 0 ? rank - 1 : 0; d-- > 0;) { // the next row
      if (++index[d] < c.shape[d])
        break;
      index[d] = 0;
    }
  }
}

} // namespace braid::rt
