//===- DistDialect.cpp - the dist dialect: registration and verifiers -----===//

#include "dialects/dist/IR/DistDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::dist;

#include "dialects/dist/IR/DistDialect.cpp.inc"
#include "dialects/dist/IR/DistEnums.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/dist/IR/DistTypes.cpp.inc"

void DistDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/dist/IR/DistTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/dist/IR/DistOps.cpp.inc"
      >();
}

/// The schedule's attributes on a pipeline rank's calls (DistOps.td).
LogicalResult DistDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  // A value of the step computed in a function called once per step (a
  // pipeline chunk's copy for its last micro-batch): dumps announce it there.
  if (name == "dist.announce") {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError("dist.announce is a unit attribute, found ") << attr.getValue();
    return success();
  }
  if (name == "dist.action") {
    auto action = dyn_cast<StringAttr>(attr.getValue());
    if (!action || !llvm::is_contained({"F", "B", "W"}, action.getValue()))
      return op->emitError("dist.action must be \"F\", \"B\" or \"W\", found ")
             << attr.getValue();
  } else if (name == "dist.chunk" || name == "dist.microbatch") {
    auto index = dyn_cast<IntegerAttr>(attr.getValue());
    if (!index || !index.getType().isInteger(64) || index.getInt() < 0)
      return op->emitError()
             << name << " must be a non-negative i64, found " << attr.getValue();
  } else {
    return op->emitError("unknown dist attribute '") << name << "'";
  }
  if (!isa<func::FuncDialect>(op->getDialect()) || op->getName().getStringRef() != "func.call")
    return op->emitError() << name << " belongs on the func.call of a pipeline action";
  return success();
}

//===----------------------------------------------------------------------===//
// Groups and tokens
//===----------------------------------------------------------------------===//

int64_t dist::getGroupSize(Operation *anchor, FlatSymbolRefAttr gridName,
                           ArrayRef<int16_t> axes) {
  auto grid =
      SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(anchor, gridName);
  if (!grid)
    return 0;
  ArrayRef<int64_t> shape = grid.getShape();
  int64_t ranks = 1;
  for (int16_t axis : axes) {
    if (axis < 0 || axis >= static_cast<int64_t>(shape.size()))
      return 0;
    ranks *= shape[axis];
  }
  return ranks;
}

Value dist::getToken(Operation *op) {
  for (Value result : op->getResults())
    if (isa<TokenType>(result.getType()))
      return result;
  return nullptr;
}

WaitOp dist::getWait(Value token) {
  for (Operation *user : token.getUsers())
    if (auto wait = dyn_cast<WaitOp>(user))
      return wait;
  return nullptr;
}

/// The group must be distinct axes of an existing grid.
static LogicalResult verifyGroup(Operation *op, FlatSymbolRefAttr gridName,
                                 ArrayRef<int16_t> axes) {
  auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, gridName);
  if (!grid)
    return op->emitOpError("refers to no shard.grid named ") << gridName;
  if (axes.empty())
    return op->emitOpError("needs at least one grid axis");
  int64_t rank = grid.getShape().size();
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (axis < 0 || axis >= rank)
      return op->emitOpError("grid axis ")
             << axis << " is not an axis of " << gridName << " (rank " << rank
             << ")";
    // A group's size divides and indexes shapes: an axis of size 0 or a
    // dynamic one (which shard.grid accepts) has no group.
    int64_t size = grid.getShape()[axis];
    if (size <= 0) {
      auto diag = op->emitOpError("grid axis ") << axis << " of " << gridName << " has size ";
      if (ShapedType::isDynamic(size))
        diag << "?";
      else
        diag << size;
      return diag << ": a group needs a static size of at least 1";
    }
    // The runtime's communicators number ranks row-major over the grid's
    // order of the axes, which is the group order dist ops state.
    if (i > 0 && axis <= axes[i - 1])
      return op->emitOpError("grid axes must be listed in grid order, once "
                             "each; found ")
             << axis << " after " << axes[i - 1];
  }
  return success();
}

/// Each rank's block along `axis` is contiguous: every dimension before it
/// has size 1 (what the runtime's collectives move; a partitioner's
/// re-layout of blocks is explicit IR around the transfer).
static LogicalResult verifyContiguous(Operation *op, StringRef what,
                                      RankedTensorType type, int64_t axis) {
  for (int64_t d = 0; d < axis; ++d)
    if (type.getDimSize(d) != 1)
      return op->emitOpError("the blocks along ")
             << what << " " << axis << " of " << type
             << " are not contiguous: dimension " << d
             << " before it must have size 1";
  return success();
}

/// A transfer's token is waited for exactly once, by a dist.wait later in
/// the same block, and its results are read only after that wait.
static LogicalResult verifyCompletion(Operation *op, Value token,
                                      ValueRange results) {
  if (!token.hasOneUse())
    return op->emitOpError("token must be used by exactly one dist.wait, "
                           "found ")
           << std::distance(token.use_begin(), token.use_end()) << " uses";
  auto wait = dyn_cast<WaitOp>(*token.getUsers().begin());
  if (!wait)
    return op->emitOpError("token must be used by a dist.wait, not by ")
           << token.getUsers().begin()->getName();
  if (wait->getBlock() != op->getBlock() || !op->isBeforeInBlock(wait))
    return op->emitOpError("must be waited for later in its own block");
  for (Value result : results)
    for (Operation *user : result.getUsers()) {
      Operation *at = op->getBlock()->findAncestorOpInBlock(*user);
      if (!at || !wait->isBeforeInBlock(at))
        return op->emitOpError("result is read before its dist.wait")
                   .attachNote(user->getLoc())
               << "read here";
    }
  return success();
}

/// The element type is kept; `shape` is what the result must be.
static LogicalResult verifyResult(Operation *op, RankedTensorType input,
                                  RankedTensorType result,
                                  ArrayRef<int64_t> shape) {
  if (result.getElementType() != input.getElementType())
    return op->emitOpError("result element type ")
           << result.getElementType() << " differs from the input's "
           << input.getElementType();
  if (result.getShape() != shape)
    return op->emitOpError("result must be ")
           << input.clone(shape) << ", found " << result;
  return success();
}

/// `axis` names a dimension of `type`, which the group size divides when
/// `divisible`.
static LogicalResult verifyAxis(Operation *op, StringRef what, int64_t axis,
                                RankedTensorType type, int64_t group,
                                bool divisible) {
  if (axis < 0 || axis >= type.getRank())
    return op->emitOpError(what) << " " << axis << " is not a dimension of "
                                 << type;
  if (type.isDynamicDim(axis))
    return op->emitOpError(what) << " " << axis << " of " << type
                                 << " must be static";
  if (divisible && type.getDimSize(axis) % group != 0)
    return op->emitOpError("dimension ")
           << axis << " of " << type << " is not a multiple of the group's "
           << group << " ranks";
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

#define DIST_GROUP_SIZE(Op)                                                    \
  int64_t Op::getGroupSize() {                                                 \
    return dist::getGroupSize(*this, getGridAttr(), getGridAxes());            \
  }
DIST_GROUP_SIZE(AllReduceOp)
DIST_GROUP_SIZE(AllGatherOp)
DIST_GROUP_SIZE(ReduceScatterOp)
DIST_GROUP_SIZE(AllToAllOp)
DIST_GROUP_SIZE(BroadcastOp)
DIST_GROUP_SIZE(ShiftOp)
DIST_GROUP_SIZE(CoordinateOp)
DIST_GROUP_SIZE(SendOp)
DIST_GROUP_SIZE(RecvOp)
#undef DIST_GROUP_SIZE

/// What every collective checks: its group, its completion, and (through
/// `shape`) its result.
template <typename Op>
static LogicalResult
verifyCollective(Op op,
                 llvm::function_ref<FailureOr<SmallVector<int64_t>>(int64_t)>
                     resultShape) {
  if (failed(verifyGroup(op, op.getGridAttr(), op.getGridAxes())) ||
      failed(verifyCompletion(op, op.getToken(), op->getResult(0))))
    return failure();
  FailureOr<SmallVector<int64_t>> shape = resultShape(op.getGroupSize());
  if (failed(shape))
    return failure();
  return verifyResult(op, op.getInput().getType(), op.getResult().getType(),
                      *shape);
}

LogicalResult AllReduceOp::verify() {
  return verifyCollective(*this, [&](int64_t) -> FailureOr<SmallVector<int64_t>> {
    return llvm::to_vector(getInput().getType().getShape());
  });
}

LogicalResult AllGatherOp::verify() {
  return verifyCollective(*this, [&](int64_t group) -> FailureOr<SmallVector<int64_t>> {
    RankedTensorType input = getInput().getType();
    int64_t axis = getGatherAxis();
    if (failed(verifyAxis(*this, "gather_axis", axis, input, group, false)) ||
        failed(verifyContiguous(*this, "gather_axis", input, axis)))
      return failure();
    SmallVector<int64_t> shape(input.getShape());
    shape[axis] *= group;
    return shape;
  });
}

LogicalResult ReduceScatterOp::verify() {
  return verifyCollective(*this, [&](int64_t group) -> FailureOr<SmallVector<int64_t>> {
    RankedTensorType input = getInput().getType();
    int64_t axis = getScatterAxis();
    if (failed(verifyAxis(*this, "scatter_axis", axis, input, group, true)) ||
        failed(verifyContiguous(*this, "scatter_axis", input, axis)))
      return failure();
    SmallVector<int64_t> shape(input.getShape());
    shape[axis] /= group;
    return shape;
  });
}

LogicalResult AllToAllOp::verify() {
  return verifyCollective(*this, [&](int64_t group) -> FailureOr<SmallVector<int64_t>> {
    RankedTensorType input = getInput().getType();
    int64_t split = getSplitAxis(), concat = getConcatAxis();
    if (failed(verifyAxis(*this, "split_axis", split, input, group, true)) ||
        failed(verifyAxis(*this, "concat_axis", concat, input, group, false)) ||
        failed(verifyContiguous(*this, "split_axis", input, split)))
      return failure();
    SmallVector<int64_t> shape(input.getShape());
    shape[split] /= group;
    shape[concat] *= group;
    if (failed(verifyContiguous(*this, "concat_axis", input.clone(shape),
                                concat)))
      return failure();
    return shape;
  });
}

LogicalResult BroadcastOp::verify() {
  return verifyCollective(*this, [&](int64_t group) -> FailureOr<SmallVector<int64_t>> {
    int64_t root = static_cast<int64_t>(getRoot());
    if (root < 0 || root >= group)
      return emitOpError("root ") << root << " is not one of the group's "
                                  << group << " ranks";
    return llvm::to_vector(getInput().getType().getShape());
  });
}

LogicalResult ShiftOp::verify() {
  return verifyCollective(*this, [&](int64_t group) -> FailureOr<SmallVector<int64_t>> {
    int64_t offset = getOffset();
    if (offset == 0 || offset <= -group || offset >= group)
      return emitOpError("offset ")
             << offset << " must be nonzero and less than the group's "
             << group << " ranks in magnitude";
    return llvm::to_vector(getInput().getType().getShape());
  });
}

LogicalResult CoordinateOp::verify() {
  return verifyGroup(*this, getGridAttr(), getGridAxes());
}

//===----------------------------------------------------------------------===//
// Point to point
//===----------------------------------------------------------------------===//

/// The peer must be a coordinate of the group; a tag fits the runtime's.
static LogicalResult verifyPeer(Operation *op, FlatSymbolRefAttr grid,
                                ArrayRef<int16_t> axes, int64_t peer,
                                std::optional<int64_t> tag) {
  if (failed(verifyGroup(op, grid, axes)))
    return failure();
  int64_t ranks = dist::getGroupSize(op, grid, axes);
  if (peer < 0 || peer >= ranks)
    return op->emitOpError("peer ")
           << peer << " is not a coordinate of the " << ranks
           << " ranks along the grid axes";
  // The runtime's tags (runtime.h): 0 <= tag < 25600.
  if (tag && (*tag < 0 || *tag >= 25600))
    return op->emitOpError("tag ") << *tag << " is not in [0, 25600)";
  return success();
}

LogicalResult SendOp::verify() {
  if (failed(verifyPeer(*this, getGridAttr(), getGridAxes(), getPeer(),
                        getTag())))
    return failure();
  return verifyCompletion(*this, getToken(), {});
}

LogicalResult RecvOp::verify() {
  if (failed(verifyPeer(*this, getGridAttr(), getGridAxes(), getPeer(),
                        getTag())))
    return failure();
  return verifyCompletion(*this, getToken(), getResult());
}

LogicalResult WaitOp::verify() {
  if (getTokens().empty())
    return emitOpError("needs at least one token");
  for (auto [i, token] : llvm::enumerate(getTokens()))
    if (llvm::is_contained(getTokens().take_front(i), token))
      return emitOpError("waits for a token twice");
  return success();
}

//===----------------------------------------------------------------------===//
// Micro-batches
//===----------------------------------------------------------------------===//

LogicalResult MicrobatchOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  int64_t count = getCount(), index = getIndex();
  if (count < 1)
    return emitOpError("count must be at least 1, found ") << count;
  if (index < 0 || index >= count)
    return emitOpError("index ") << index << " is not one of the " << count
                                 << " micro-batches";
  if (input.getRank() < 1 || input.isDynamicDim(0) ||
      input.getDimSize(0) % count != 0)
    return emitOpError("the leading dimension of ")
           << input << " must be a multiple of " << count;
  SmallVector<int64_t> shape(input.getShape());
  shape[0] /= count;
  if (result.getShape() != ArrayRef<int64_t>(shape) ||
      result.getElementType() != input.getElementType())
    return emitOpError("result must be ")
           << input.clone(shape) << ", found " << result;
  return success();
}

LogicalResult AssembleOp::verify() {
  if (failed(verifyGroup(*this, getGridAttr(), getGridAxes())))
    return failure();
  int64_t ranks = dist::getGroupSize(*this, getGridAttr(), getGridAxes());
  if (static_cast<int64_t>(getPieces().size()) != ranks)
    return emitOpError("takes one piece per rank of the group: ")
           << ranks << ", found " << getPieces().size();
  auto piece = cast<RankedTensorType>(getPieces().front().getType());
  if (llvm::any_of(getPieces().getTypes(), [&](Type t) { return t != piece; }))
    return emitOpError("pieces must have one type");
  int64_t axis = getAxis();
  if (axis < 0 || axis >= piece.getRank() || piece.isDynamicDim(axis))
    return emitOpError("axis ") << axis << " is not a static dimension of " << piece;
  SmallVector<int64_t> shape(piece.getShape());
  shape[axis] *= ranks;
  auto result = cast<RankedTensorType>(getResult().getType());
  if (result.getShape() != ArrayRef<int64_t>(shape) ||
      result.getElementType() != piece.getElementType())
    return emitOpError("result must be ") << piece.clone(shape) << ", found " << result;
  return success();
}

LogicalResult BlockOp::verify() {
  if (failed(verifyGroup(*this, getGridAttr(), getGridAxes())))
    return failure();
  int64_t ranks = dist::getGroupSize(*this, getGridAttr(), getGridAxes());
  auto input = cast<RankedTensorType>(getInput().getType());
  int64_t axis = getAxis();
  if (axis < 0 || axis >= input.getRank() || input.isDynamicDim(axis) ||
      input.getDimSize(axis) % ranks != 0)
    return emitOpError("axis ") << axis << " of " << input
                                << " is not a static dimension of a multiple of " << ranks;
  int64_t offset = static_cast<int64_t>(getOffset());
  if (offset < 0 || offset >= ranks)
    return emitOpError("offset ") << offset << " is not in [0, " << ranks << ")";
  SmallVector<int64_t> shape(input.getShape());
  shape[axis] /= ranks;
  auto result = cast<RankedTensorType>(getResult().getType());
  if (result.getShape() != ArrayRef<int64_t>(shape) ||
      result.getElementType() != input.getElementType())
    return emitOpError("result must be ") << input.clone(shape) << ", found " << result;
  return success();
}

/// A bucket: a static 1-D tensor of `elementType`, cut in `parts` equal
/// parts.
static LogicalResult verifyBucket(Operation *op, RankedTensorType bucket, Type elementType,
                                  int64_t parts) {
  if (parts < 1)
    return op->emitOpError("parts must be positive, found ") << parts;
  if (bucket.getRank() != 1 || !bucket.hasStaticShape())
    return op->emitOpError("bucket must be a static 1-D tensor, found ") << bucket;
  if (bucket.getElementType() != elementType)
    return op->emitOpError("bucket element type ")
           << bucket.getElementType() << " differs from the tensors' " << elementType;
  if (bucket.getNumElements() % parts != 0)
    return op->emitOpError("bucket of ")
           << bucket.getNumElements() << " elements is not " << parts << " equal parts";
  return success();
}

/// A tensor in a bucket: static, in `parts` equal blocks.
static LogicalResult verifyBucketed(Operation *op, RankedTensorType type, int64_t parts) {
  if (!type.hasStaticShape())
    return op->emitOpError("bucketed tensor must be static, found ") << type;
  if (parts >= 1 && type.getNumElements() % parts != 0)
    return op->emitOpError("bucketed tensor ")
           << type << " is not " << parts << " equal blocks";
  return success();
}

LogicalResult PackOp::verify() {
  auto result = cast<RankedTensorType>(getResult().getType());
  if (getInputs().empty())
    return emitOpError("packs at least one tensor");
  Type element = cast<RankedTensorType>(getInputs().front().getType()).getElementType();
  int64_t parts = static_cast<int64_t>(getParts()), total = 0;
  for (Type type : getInputs().getTypes()) {
    auto input = cast<RankedTensorType>(type);
    if (input.getElementType() != element)
      return emitOpError("packed tensors must have one element type: ")
             << element << " and " << input.getElementType();
    if (failed(verifyBucketed(*this, input, parts)))
      return failure();
    total += input.getNumElements();
  }
  if (failed(verifyBucket(*this, result, element, parts)))
    return failure();
  if (result.getNumElements() != total)
    return emitOpError("bucket must hold the ")
           << total << " elements packed, found " << result;
  return success();
}

LogicalResult UnpackOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  int64_t parts = static_cast<int64_t>(getParts());
  if (failed(verifyBucket(*this, input, result.getElementType(), parts)) ||
      failed(verifyBucketed(*this, result, parts)))
    return failure();
  int64_t offset = static_cast<int64_t>(getOffset()), part = input.getNumElements() / parts,
          block = result.getNumElements() / parts;
  if (offset < 0 || offset + block > part)
    return emitOpError("blocks of ")
           << block << " elements at offset " << offset << " leave parts of " << part;
  return success();
}

#define GET_OP_CLASSES
#include "dialects/dist/IR/DistOps.cpp.inc"
