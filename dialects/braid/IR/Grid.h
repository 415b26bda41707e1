//===- Grid.h - the device grid, its groups and value shardings -*- C++ -*-===//
//
// One description of the device grid for every pass, the memory plan, the
// lowering to dist and the emitter: the grid (an upstream `shard.grid`
// whose `braid.axes` attribute names its axes), a group of its axes (what a
// collective or a partitioned op runs over), and the sharding of one value
// (which axes split each dimension, over which it is a partial sum), with
// the global shape a sharded tensor's descriptor records.
//
// Conventions. A dimension split over axes (a, b), major to minor, is cut
// into n_a * n_b blocks of ceil(size / (n_a n_b)) elements; the rank with
// coordinates (c_a, c_b) holds block c_a n_b + c_b, and indices past the
// size are zero padding. A value partial over axes P holds, on each rank,
// a term of a sum over the ranks of P.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_GRID_H
#define BRAID_DIALECT_BRAID_IR_GRID_H

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace mlir::braid {

using AxisList = SmallVector<int16_t, 2>;

/// Grid axes a collective or a partitioned op runs over, in the order it
/// lists them (major to minor): the rank's coordinate over them is the
/// row-major index of its coordinates along them, and block c of a
/// dimension split over them is that rank's.
struct GridGroup {
  SmallVector<std::string> names;
  SmallVector<int64_t> sizes;
  /// The index of each listed axis in the grid.
  SmallVector<unsigned> positions;

  /// The number of ranks in the group.
  int64_t size() const;
  /// True when the axes are listed in grid order, the order of the runtime's
  /// communicator ranks (braid_rt_comm orders its ranks row-major over the
  /// group's axes as the grid lists them, whatever order the spec names them
  /// in).
  bool inGridOrder() const;
  /// The communicator spec: the names joined with ",".
  std::string spec() const;
};

/// The device grid: axis names and sizes, in grid order.
struct Grid {
  std::string symbol = "grid";
  SmallVector<std::string> names;
  SmallVector<int64_t> sizes;

  /// Parses "dp=2,tp=4". Axis names are dp, ep, cp and tp.
  static FailureOr<Grid> parse(StringRef text, std::string &error);
  /// The grid of a partitioned module (its shard.grid with braid.axes), or
  /// none; failure, with an error at the grid, when an axis has a dynamic
  /// size or one below 1.
  static FailureOr<std::optional<Grid>> of(ModuleOp module);
  /// The grid of `op`'s module, which a collective or sharded op needs: a
  /// located error at `op` when the module has none.
  static FailureOr<Grid> required(Operation *op);
  /// The grid `op` declares; failure (reported through `emitError` when
  /// given) without braid.axes naming each of its static axes.
  static FailureOr<Grid> get(shard::GridOp op,
                             function_ref<InFlightDiagnostic()> emitError = {});

  int64_t size(ArrayRef<int16_t> axes) const;
  int64_t numRanks() const { return size(allAxes()); }
  AxisList allAxes() const;
  std::optional<int16_t> find(StringRef name) const;
  std::string describe(ArrayRef<int16_t> axes) const; ///< "dp,tp"
  ArrayAttr nameAttr(MLIRContext *context, ArrayRef<int16_t> axes) const;
  /// The group of `axes` (grid axis indices, in the order listed).
  GridGroup group(ArrayRef<int16_t> axes) const;
  /// Creates `shard.grid @grid(shape = ...) {braid.axes = [...]}`.
  void declare(OpBuilder &b, Location loc) const;
};

/// How one value is laid out over the grid.
struct ValueSharding {
  SmallVector<AxisList> split; ///< per dimension, major to minor
  AxisList partial;            ///< partial-sum axes, in grid order

  static ValueSharding replicated(int64_t rank) {
    ValueSharding s;
    s.split.resize(rank);
    return s;
  }
  bool isReplicated() const;
  bool operator==(const ValueSharding &other) const {
    return split == other.split && partial == other.partial;
  }
  bool operator!=(const ValueSharding &other) const { return !(*this == other); }
  /// Every axis the value is split or partial over.
  AxisList usedAxes() const;
  std::string describe(const Grid &grid) const; ///< "[tp, -, -] partial(dp)"
};

/// A tensor's place in its global tensor, as braid.global_shape and
/// braid.split record it on a parameter, a state or a step argument, and as
/// a dump's descriptor states it.
struct ShardedTensor {
  SmallVector<int64_t> globalShape;
  ValueSharding sharding;
};

/// The program's device grid: the one shard.grid of the module holding
/// `op`, or null.
shard::GridOp getProgramGrid(Operation *op);
/// The names of `grid`'s axes (its `braid.axes` attribute, an array of one
/// string per axis); failure with an error at the grid when missing.
FailureOr<SmallVector<std::string>> getGridAxisNames(shard::GridOp grid);

/// The group of a shard collective on `grid` over `axes` (grid axis
/// indices); the group named by `names` (a braid op's `vocab_axes`,
/// `zero_axes`, `axes`) on the program's grid. Failures are reported
/// through `emitError` when given.
FailureOr<GridGroup>
getGridGroup(Operation *op, FlatSymbolRefAttr grid, ArrayRef<int16_t> axes,
             function_ref<InFlightDiagnostic()> emitError = {});
FailureOr<GridGroup>
getGridGroup(Operation *op, ArrayAttr names,
             function_ref<InFlightDiagnostic()> emitError = {});

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_IR_GRID_H
