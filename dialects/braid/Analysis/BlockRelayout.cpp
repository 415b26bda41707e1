//===- BlockRelayout.cpp - collectives over non-contiguous blocks ---------===//
//
// The re-layout a collective needs when its blocks are not contiguous per
// rank in communicator order (which --convert-braid-to-dist makes explicit
// IR around the transfer).
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Analysis/MemoryPlan.h"

#include "dialects/braid/IR/BraidOps.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::braid;

/// Drops the unit dimensions of a transpose (they move nothing).
static Transpose squeeze(ArrayRef<int64_t> shape, ArrayRef<int64_t> perm) {
  SmallVector<int64_t> index(shape.size(), -1);
  Transpose out;
  for (auto [d, size] : llvm::enumerate(shape))
    if (size != 1) {
      index[d] = out.shape.size();
      out.shape.push_back(size);
    }
  for (int64_t p : perm)
    if (index[p] >= 0)
      out.perm.push_back(index[p]);
  return out;
}

std::optional<BlockRelayout>
mlir::braid::getBlockRelayout(ArrayRef<int64_t> shape, int64_t dim,
                              const GridGroup &group) {
  // The tensor as [outer, a_1 .. a_k, L, inner] (listed axes, major to
  // minor); the rank blocks as [g_1 .. g_k, outer, L, inner] (the same axes
  // in grid order).
  int64_t k = group.sizes.size();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= shape[d];
  for (int64_t d = dim + 1, e = shape.size(); d < e; ++d)
    inner *= shape[d];
  SmallVector<int64_t> tensorShape = {outer};
  llvm::append_range(tensorShape, group.sizes);
  tensorShape.append({shape[dim] / group.size(), inner});

  SmallVector<int64_t> byGrid = llvm::to_vector(llvm::seq<int64_t>(0, k));
  llvm::stable_sort(byGrid, [&](int64_t a, int64_t b) {
    return group.positions[a] < group.positions[b];
  });
  SmallVector<int64_t> perm;
  for (int64_t listed : byGrid)
    perm.push_back(1 + listed);
  perm.append({0, k + 1, k + 2});

  BlockRelayout relayout;
  relayout.toBlocks = squeeze(tensorShape, perm);
  if (llvm::is_sorted(relayout.toBlocks.perm))
    return std::nullopt;
  SmallVector<int64_t> blockShape, inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm)) {
    blockShape.push_back(tensorShape[p]);
    inverse[p] = i;
  }
  relayout.fromBlocks = squeeze(blockShape, inverse);
  return relayout;
}

