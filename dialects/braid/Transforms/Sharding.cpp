//===- Sharding.cpp - grids, value shardings and resharding ---------------===//

#include "dialects/braid/Transforms/Sharding.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::braid;

RankedTensorType mlir::braid::localType(RankedTensorType type,
                                        const ValueSharding &sharding,
                                        const Grid &grid) {
  SmallVector<int64_t> shape(type.getShape());
  for (auto [d, axes] : llvm::enumerate(sharding.split)) {
    int64_t n = grid.size(axes);
    shape[d] = (shape[d] + n - 1) / n;
  }
  return type.clone(shape);
}

ArrayAttr mlir::braid::splitAttr(MLIRContext *context,
                                 const ValueSharding &sharding,
                                 const Grid &grid) {
  SmallVector<Attribute> dims;
  for (const AxisList &axes : sharding.split)
    dims.push_back(grid.nameAttr(context, axes));
  return ArrayAttr::get(context, dims);
}

//===----------------------------------------------------------------------===//
// Resharding
//===----------------------------------------------------------------------===//

namespace {
/// Emits collectives step by step, tracking the value's current sharding.
struct Resharder {
  OpBuilder &b;
  Location loc;
  const Grid &grid;
  RankedTensorType global;
  Value value;
  ValueSharding current;

  RankedTensorType typeWith(const ValueSharding &s) const {
    return localType(global, s, grid);
  }
  /// A dimension whose size the split does not divide cannot move: its
  /// padding would travel with it.
  LogicalResult checkEven(unsigned d, ArrayRef<int16_t> axes) {
    if (global.getDimSize(d) % grid.size(axes) == 0)
      return success();
    return emitError(loc, "cannot reshard dimension ")
           << d << " of " << global << " over " << grid.describe(axes)
           << ": its size is not a multiple of the split, and padded "
              "dimensions stay where the plan put them";
  }
  FlatSymbolRefAttr gridRef() const {
    return FlatSymbolRefAttr::get(b.getContext(), grid.symbol);
  }

  void allReduce(AxisList axes) {
    llvm::sort(axes);
    for (int16_t a : axes)
      llvm::erase(current.partial, a);
    value = shard::AllReduceOp::create(b, loc, typeWith(current), grid.symbol,
                                       axes, value);
  }
  LogicalResult reduceScatter(int16_t axis, unsigned d) {
    ValueSharding next = current;
    llvm::erase(next.partial, axis);
    next.split[d].push_back(axis);
    if (failed(checkEven(d, next.split[d])))
      return failure();
    value = shard::ReduceScatterOp::create(
        b, loc, typeWith(next), gridRef(), b.getDenseI16ArrayAttr({axis}),
        value,
        shard::ReductionKindAttr::get(b.getContext(), shard::ReductionKind::Sum),
        b.getIndexAttr(d));
    current = next;
    return success();
  }
  LogicalResult allGather(unsigned d) {
    int16_t axis = current.split[d].back();
    if (failed(checkEven(d, current.split[d])))
      return failure();
    ValueSharding next = current;
    next.split[d].pop_back();
    value = shard::AllGatherOp::create(b, loc, typeWith(next), gridRef(),
                                       b.getDenseI16ArrayAttr({axis}), value,
                                       b.getIndexAttr(d));
    current = next;
    return success();
  }
  LogicalResult allToAll(unsigned from, unsigned to) {
    int16_t axis = current.split[from].back();
    ValueSharding next = current;
    next.split[from].pop_back();
    next.split[to].push_back(axis);
    if (failed(checkEven(from, current.split[from])) ||
        failed(checkEven(to, next.split[to])))
      return failure();
    value = shard::AllToAllOp::create(
        b, loc, typeWith(next), gridRef(), b.getDenseI16ArrayAttr({axis}),
        value, b.getIndexAttr(to), b.getIndexAttr(from));
    current = next;
    return success();
  }
  LogicalResult allSlice(unsigned d, int16_t axis) {
    ValueSharding next = current;
    next.split[d].push_back(axis);
    if (failed(checkEven(d, next.split[d])))
      return failure();
    value = shard::AllSliceOp::create(b, loc, typeWith(next), gridRef(),
                                      b.getDenseI16ArrayAttr({axis}), value,
                                      b.getIndexAttr(d));
    current = next;
    return success();
  }
};

bool isPrefix(ArrayRef<int16_t> prefix, ArrayRef<int16_t> of) {
  return prefix.size() <= of.size() && of.take_front(prefix.size()) == prefix;
}
} // namespace

FailureOr<Value> mlir::braid::reshard(OpBuilder &b, Location loc, Value value,
                                      RankedTensorType global,
                                      ValueSharding from,
                                      const ValueSharding &to,
                                      const Grid &grid) {
  if (from == to)
    return value;
  Resharder r{b, loc, grid, global, value, std::move(from)};
  unsigned rank = global.getRank();

  // 1. Partial sums: scatter onto a dimension that wants the axis next,
  // otherwise sum everywhere.
  AxisList summed;
  for (int16_t axis : AxisList(r.current.partial)) {
    if (llvm::is_contained(to.partial, axis))
      continue;
    std::optional<unsigned> scatterDim;
    for (unsigned d = 0; d < rank && !scatterDim; ++d) {
      ArrayRef<int16_t> want = to.split[d];
      ArrayRef<int16_t> have = r.current.split[d];
      if (want.size() == have.size() + 1 && isPrefix(have, want) &&
          want.back() == axis)
        scatterDim = d;
    }
    if (scatterDim) {
      if (failed(r.reduceScatter(axis, *scatterDim)))
        return failure();
    } else {
      summed.push_back(axis);
    }
  }
  if (!summed.empty())
    r.allReduce(summed);
  if (!llvm::all_of(to.partial, [&](int16_t a) {
        return llvm::is_contained(r.current.partial, a);
      }))
    return emitError(loc, "cannot make a value partial by resharding");

  // 2. Axes leaving a dimension: to another dimension that wants them next
  // (all-to-all), else gathered. Minor axes leave first, which keeps the
  // blocks contiguous.
  for (unsigned d = 0; d < rank; ++d) {
    while (!isPrefix(r.current.split[d], to.split[d])) {
      int16_t axis = r.current.split[d].back();
      std::optional<unsigned> dest;
      for (unsigned e = 0; e < rank && !dest; ++e) {
        ArrayRef<int16_t> want = to.split[e];
        ArrayRef<int16_t> have = r.current.split[e];
        if (e != d && want.size() > have.size() && isPrefix(have, want) &&
            want[have.size()] == axis)
          dest = e;
      }
      if (failed(dest ? r.allToAll(d, *dest) : r.allGather(d)))
        return failure();
    }
  }
  // 3. Axes arriving: each rank keeps its block.
  for (unsigned d = 0; d < rank; ++d)
    while (r.current.split[d].size() < to.split[d].size())
      if (failed(r.allSlice(d, to.split[d][r.current.split[d].size()])))
        return failure();
  return r.value;
}
