//===- boxes.h - where a rank's data lies in a global tensor ----*- C++ -*-===//
//
// Checkpoints store every tensor as boxes of the global tensor (a start and
// an extent per dimension, natural order, no padding), so that a rank of any
// grid can find the part of its own slice that each saved box holds. A rank's
// local buffer is a box of its block of the tensor (ShardLayout, rt_impl.h)
// or, for a ZeRO range, a flat range of that block; these functions cut it
// into global boxes and copy between the two layouts.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_BOXES_H
#define BRAID_RUNTIME_BOXES_H

#include "rt_impl.h"

#include <cstdint>
#include <vector>

namespace braid::rt {

struct Box {
  std::vector<int64_t> start, shape;

  int64_t numel() const;
  /// The common part of two boxes of one rank (shape all zero when none).
  Box intersect(const Box &other) const;
};

/// The row-major linear index of `index` in an array of `shape`.
int64_t rowMajor(const std::vector<int64_t> &index, const std::vector<int64_t> &shape);

/// The elements [lo, hi) of a row-major array of `shape` as boxes (at most
/// 2 rank - 1), in order.
std::vector<Box> flatRangeBoxes(const std::vector<int64_t> &shape, int64_t lo, int64_t hi);

/// A box of the global tensor and the start of the box of equal shape that
/// holds the same elements in a rank's block.
struct Placed {
  Box global;
  std::vector<int64_t> local;
};

/// Where the box `box` of the block of the rank at `coords` lies in the
/// global tensor: one piece per run of consecutive global indices (a whole
/// dimension in natural order, a zigzag chunk otherwise), padding dropped.
std::vector<Placed> placeBox(const ShardLayout &layout, const std::vector<int32_t> &coords,
                             const Box &box);

/// Copies a box of extent `shape` of elements of `elementSize` bytes between
/// two row-major arrays: from the array `src` of shape `srcShape`, where it
/// starts at `srcStart`, to `dst` of `dstShape`, at `dstStart`. Either array
/// may hold only a flat range of its shape: `srcBase` / `dstBase` is the
/// linear index of its first element.
struct BoxCopy {
  const char *src;
  std::vector<int64_t> srcShape, srcStart;
  int64_t srcBase = 0;
  char *dst;
  std::vector<int64_t> dstShape, dstStart;
  int64_t dstBase = 0;
  std::vector<int64_t> shape;
  int64_t elementSize;
};
void copyBox(const BoxCopy &copy);

} // namespace braid::rt

#endif // BRAID_RUNTIME_BOXES_H
