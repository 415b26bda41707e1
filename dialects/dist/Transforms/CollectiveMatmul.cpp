//===- CollectiveMatmul.cpp - an all-gather's products as a ring -----------===//
//
// --braid-collective-matmul (Passes.td): an all-gather over n ranks whose
// every use is the input of a matrix product becomes n steps of product
// chunks, each computed from the block a rank holds while a cyclic shift
// brings the next one, the pieces assembled by the rank's coordinate.
//
//===----------------------------------------------------------------------===//

#include "dialects/dist/Transforms/Passes.h"

#include "braid/CostModel/CommCost.h"
#include "dialects/braid/Analysis/MemoryPlan.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/dist/IR/DistDialect.h"
#include "dialects/dist/IR/DistUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::dist {
#define GEN_PASS_DEF_BRAIDCOLLECTIVEMATMULPASS
#include "dialects/dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::braid;
using dist::unnamed;

namespace {

struct Candidate {
  dist::AllGatherOp gather;
  dist::WaitOp wait;
  /// What is gathered (the rank's block), along which dimension, and the
  /// whole value the products read.
  Value source, whole;
  int64_t axis = 0;
  /// The re-layout between the gather and `whole` (reshape, transpose,
  /// reshape), when the gather moves a flat copy.
  SmallVector<Operation *> relayout;
  SmallVector<LinearOp> products; ///< in program order
};

template <typename OpT>
OpT onlyUser(Value v) {
  return v.hasOneUse() ? dyn_cast<OpT>(*v.getUsers().begin()) : OpT();
}

/// What the gather gathers: its input along its axis; or, when the lowering
/// moved a flat copy ([1, N], gathered along 0, reshaped to [n, shape...],
/// the new dimension transposed to `axis` and merged into it), the block it
/// flattened along `axis`.
bool gathered(Candidate &c) {
  dist::AllGatherOp g = c.gather;
  auto in = cast<RankedTensorType>(g.getInput().getType());
  int64_t gatherAxis = static_cast<int64_t>(g.getGatherAxis());
  auto direct = [&] {
    if (gatherAxis >= in.getRank() - 1)
      return false;
    c.source = g.getInput();
    c.axis = gatherAxis;
    c.whole = g.getResult();
    return true;
  };
  auto flatten = g.getInput().getDefiningOp<ReshapeOp>();
  if (gatherAxis != 0 || in.getRank() != 2 || in.getShape()[0] != 1 || !flatten)
    return direct();
  auto block = cast<RankedTensorType>(flatten.getInput().getType());
  int64_t ranks = g.getGroupSize(), rank = block.getRank();
  auto split = onlyUser<ReshapeOp>(g.getResult());

  auto move = split ? onlyUser<TransposeOp>(split.getResult()) : TransposeOp();
  auto merge = move ? onlyUser<ReshapeOp>(move.getResult()) : ReshapeOp();
  if (!merge)
    return direct();
  SmallVector<int64_t> splitShape = {ranks};
  llvm::append_range(splitShape, block.getShape());
  if (cast<RankedTensorType>(split.getResult().getType()).getShape() !=
      ArrayRef<int64_t>(splitShape))
    return false;
  // The permutation [1, ..., axis, 0, axis + 1, ...] puts the ranks' dimension
  // before `axis`; the merge makes it part of `axis`.
  ArrayRef<int64_t> perm = move.getPermutation();
  int64_t axis = -1;
  for (int64_t i = 0, e = perm.size(); i < e; ++i)
    if (perm[i] == 0)
      axis = i;
  if (axis < 0 || axis >= rank - 1)
    return false;
  for (int64_t i = 0, e = perm.size(); i < e; ++i)
    if (i != axis && perm[i] != (i < axis ? i + 1 : i)) {
      return false;
    }
  SmallVector<int64_t> wholeShape(block.getShape());
  wholeShape[axis] *= ranks;
  if (cast<RankedTensorType>(merge.getResult().getType()).getShape() !=
      ArrayRef<int64_t>(wholeShape)) {
    return false;
  }
  c.source = flatten.getInput();
  c.axis = axis;
  c.whole = merge.getResult();
  c.relayout = {split, move, merge};
  return true;
}

/// The gather's products, when the decomposition applies: what it gathers
/// is the input of some braid.linear of its block (the products), the
/// gathered dimension is not the contracted (last) one, its token has one
/// wait, what the products read besides is there before the first of them,
/// and any other use comes after it.
std::optional<Candidate> candidate(dist::AllGatherOp gather) {
  Candidate c;
  c.gather = gather;
  Value token = gather.getToken();
  if (!token.hasOneUse())
    return std::nullopt;
  c.wait = dyn_cast<dist::WaitOp>(*token.getUsers().begin());
  if (!c.wait || c.wait.getTokens().size() != 1 || !gathered(c) || c.whole.use_empty())
    return std::nullopt;
  SmallVector<Operation *> others;
  for (OpOperand &use : c.whole.getUses()) {
    auto linear = dyn_cast<LinearOp>(use.getOwner());
    if (linear && use.getOperandNumber() == 0 && linear->getBlock() == gather->getBlock())
      c.products.push_back(linear);
    else
      others.push_back(use.getOwner());
  }
  if (c.products.empty())
    return std::nullopt;
  llvm::sort(c.products, [](LinearOp a, LinearOp b) { return a->isBeforeInBlock(b); });
  Operation *first = c.products.front();
  // The whole value is assembled from the ring's blocks for its other uses
  // (the activation saved for the backward), after the products.
  for (Operation *other : others)
    if (other->getBlock() != gather->getBlock() || other->isBeforeInBlock(first))
      return std::nullopt;
  for (LinearOp p : c.products)
    for (Value v : p->getOperands())
      if (Operation *def = v.getDefiningOp();
          def && v != c.whole && !def->isBeforeInBlock(first))
        return std::nullopt;
  return c;
}

/// The seconds of a kernel reading and writing `bytes` for `flops`, at the
/// roofline, its launch included.
double kernelSeconds(double flops, double bytes, const ::braid::cost::Hardware &hw) {
  return hw.rooflineSeconds(flops, bytes) + hw.kernelLaunch;
}

/// A ring and the collective it would replace, in seconds of their kernels.
struct RingCost {
  double step = 0;   ///< one step's kernels (product chunks, copies, adds)
  double whole = 0;  ///< the products computed at once (and their adds)
  double copies = 0; ///< what the ring does once (assembling its pieces)
  double shiftBytes = 0;
  ::braid::cost::Transfer collective;
};

/// Whether the ring is faster: a step waits for the block (or partial sum)
/// the previous step's shift brings, so the ring takes one step and then
/// n - 1 times the slower of a step and a shift (a message on the group's
/// link: tensor parallelism inside a node); without it the products wait
/// for the whole collective (what they read is what it moves, so nothing
/// hides it), then run at once. Smaller products pay their launches and
/// reread their weights, which is what keeps tiny layers on the collective.
bool ringPays(const RingCost &c, const ::braid::cost::Hardware &hw) {
  int64_t ranks = c.collective.ranks;
  ::braid::cost::Transfer shift;
  shift.kind = ::braid::cost::TransferKind::PointToPoint;
  shift.ranks = ranks;
  shift.nodes = c.collective.nodes;
  shift.bytes = c.shiftBytes;
  double s = ::braid::cost::estimate(shift, hw).seconds;
  double ring = c.step + double(ranks - 1) * std::max(c.step, s) + c.copies;
  double plain = c.whole + ::braid::cost::estimate(c.collective, hw).seconds;
  return ring < plain;
}

/// Auto: the ring of an all-gather's products against the gather and the
/// products on the whole value.
bool worthIt(Candidate c, const ::braid::cost::Hardware &hw) {
  int64_t ranks = c.gather.getGroupSize();
  auto in = cast<RankedTensorType>(c.source.getType());
  RingCost cost;
  for (LinearOp p : c.products) {
    auto out = cast<RankedTensorType>(p.getResult().getType());
    double weight = double(getTensorBytes(p.getOperand(1).getType()));
    double rows = double(in.getNumElements()) / double(in.getShape().back());
    double flops = 2.0 * rows * double(in.getShape().back()) * double(out.getShape().back());
    cost.step += kernelSeconds(flops, double(getTensorBytes(in)) + weight +
                                          double(getTensorBytes(out)) / double(ranks),
                               hw);
    cost.whole += kernelSeconds(flops * double(ranks),
                                double(getTensorBytes(in)) * double(ranks) + weight +
                                    double(getTensorBytes(out)),
                                hw);
    // Its pieces assembled into its result.
    cost.copies += kernelSeconds(0, 2.0 * double(getTensorBytes(out)), hw);
  }
  if (llvm::any_of(c.whole.getUsers(), [&](Operation *u) {
        return !llvm::is_contained(c.products, dyn_cast<LinearOp>(u));
      }))
    cost.copies += kernelSeconds(0, 2.0 * double(getTensorBytes(c.whole.getType())), hw);
  cost.shiftBytes = double(getTensorBytes(in));
  cost.collective.kind = ::braid::cost::TransferKind::AllGather;
  cost.collective.ranks = ranks;
  cost.collective.bytes = double(getTensorBytes(in)) * double(ranks);
  return ringPays(cost, hw);
}

void decompose(Candidate c) {
  dist::AllGatherOp gather = c.gather;
  int64_t ranks = gather.getGroupSize(), axis = c.axis;
  OpBuilder b(c.products.front());
  Location loc = gather.getLoc();
  MLIRContext *ctx = b.getContext();
  Value block = c.source;
  auto inType = cast<RankedTensorType>(block.getType());
  SmallVector<SmallVector<Value>> pieces(c.products.size());
  SmallVector<Value> blocks;
  for (int64_t k = 0; k < ranks; ++k) {
    blocks.push_back(block);
    dist::ShiftOp shift;
    if (k + 1 < ranks)
      shift = dist::ShiftOp::create(b, loc, inType, dist::TokenType::get(ctx), block,
                                    gather.getGridAttr(), gather.getGridAxesAttr(),
                                    b.getI64IntegerAttr(-1), b.getUnitAttr());
    for (auto [j, product] : llvm::enumerate(c.products)) {
      IRMapping map;
      map.map(c.whole, block);
      Operation *piece = b.clone(*product, map);
      piece->setLoc(unnamed(product.getLoc()));
      auto out = cast<RankedTensorType>(product.getResult().getType());
      SmallVector<int64_t> shape(out.getShape());
      shape[axis] = inType.getShape()[axis];
      piece->getResult(0).setType(out.clone(shape));
      pieces[j].push_back(piece->getResult(0));
    }
    if (shift) {
      dist::WaitOp::create(b, loc, ValueRange{shift.getToken()});
      block = shift.getResult();
    }
  }
  // Block k is that of the rank k places up: together, the gathered value,
  // for the uses other than the products.
  llvm::SmallPtrSet<Operation *, 4> products;
  for (LinearOp p : c.products)
    products.insert(p);
  if (llvm::any_of(c.whole.getUsers(), [&](Operation *u) { return !products.contains(u); })) {
    Value whole = dist::AssembleOp::create(b, loc, c.whole.getType(), blocks,
                                           b.getI64IntegerAttr(axis), gather.getGridAttr(),
                                           gather.getGridAxesAttr());
    c.whole.replaceUsesWithIf(whole, [&](OpOperand &use) {
      return !products.contains(use.getOwner());
    });
  }
  // Each product's pieces assembled where it was.
  for (auto [j, product] : llvm::enumerate(c.products)) {
    b.setInsertionPoint(product);
    Value whole = dist::AssembleOp::create(b, product.getLoc(), product.getResult().getType(),
                                           pieces[j], b.getI64IntegerAttr(axis),
                                           gather.getGridAttr(), gather.getGridAxesAttr());
    product.getResult().replaceAllUsesWith(whole);
    product.erase();
  }
  for (Operation *op : llvm::reverse(c.relayout))
    op->erase();
  Operation *flatten = c.relayout.empty() ? nullptr : gather.getInput().getDefiningOp();
  c.wait.erase();
  gather.erase();
  if (flatten && flatten->use_empty())
    flatten->erase();
}

/// Products whose rows a reduce-scatter sums over the ranks and splits
/// among them (a row-parallel product under sequence parallelism; in the
/// backward, an input's gradient summed over the products that read it).
struct Scatter {
  dist::ReduceScatterOp scatter;
  dist::WaitOp wait;
  /// The products, and the adds summing them (the last one the sum).
  SmallVector<LinearOp> products;
  SmallVector<AddOp> adds;
  Operation *root = nullptr; ///< what defines the sum
  int64_t axis = 0; ///< the scattered dimension of the product's rows
  /// The re-layout to the flat form the lowering scatters (reshape,
  /// transpose, reshape) and back (a reshape), when it does.
  SmallVector<Operation *> before;
  Operation *after = nullptr;
  Value result; ///< the rank's block of the sum, which the ring replaces
};

/// Whether `v` is a braid.linear's result or a braid.add of two such sums,
/// each read by nothing else and of `v`'s type: the products and adds join
/// `c` (the adds after what they sum).
bool sumOfProducts(Value v, Scatter &c) {
  if (!v.hasOneUse() || v.getType() != c.root->getResult(0).getType())
    return false;
  if (auto product = v.getDefiningOp<LinearOp>()) {
    c.products.push_back(product);
    return true;
  }
  auto add = v.getDefiningOp<AddOp>();
  if (!add || !sumOfProducts(add.getLhs(), c) || !sumOfProducts(add.getRhs(), c))
    return false;
  c.adds.push_back(add);
  return true;
}

/// Whether `v` is a sum of products (sumOfProducts), which `c` then holds.
bool sumOfProductsAt(Value v, Scatter &c) {
  c.root = v.getDefiningOp();
  if (!c.root || !isa<LinearOp, AddOp>(c.root))
    return false;
  return sumOfProducts(v, c);
}

/// The products a reduce-scatter sums, when the ring applies: a sum of
/// braid.linear results read by nothing else, scattered along a leading
/// dimension (directly, or through the lowering's flat copy: reshape to
/// [.., n, s, ..], the ranks' dimension transposed first, flattened,
/// scattered along 0 and reshaped to the block).
std::optional<Scatter> scatterOf(dist::ReduceScatterOp rs) {
  Scatter c;
  c.scatter = rs;
  if (rs.getReduction() != dist::ReductionKind::Sum)
    return std::nullopt;
  Value token = rs.getToken();
  c.wait = token.hasOneUse() ? dyn_cast<dist::WaitOp>(*token.getUsers().begin())
                             : dist::WaitOp();
  if (!c.wait || c.wait.getTokens().size() != 1)
    return std::nullopt;
  int64_t ranks = rs.getGroupSize();
  int64_t scatterAxis = static_cast<int64_t>(rs.getScatterAxis());
  if (isa_and_nonnull<LinearOp, AddOp>(rs.getInput().getDefiningOp())) {
    auto type = cast<RankedTensorType>(rs.getInput().getType());
    if (scatterAxis >= type.getRank() - 1 || !sumOfProductsAt(rs.getInput(), c))
      return std::nullopt;
    c.axis = scatterAxis;
    c.result = rs.getResult();
    return c;
  }
  auto flatten = rs.getInput().getDefiningOp<ReshapeOp>();
  auto move = flatten ? flatten.getInput().getDefiningOp<TransposeOp>() : TransposeOp();
  auto split = move ? move.getInput().getDefiningOp<ReshapeOp>() : ReshapeOp();
  auto back = onlyUser<ReshapeOp>(rs.getResult());
  if (scatterAxis != 0 || !split || !back || !split.getResult().hasOneUse() ||
      !move.getResult().hasOneUse() || !flatten.getResult().hasOneUse() ||
      !sumOfProductsAt(split.getInput(), c))
    return std::nullopt;
  auto rows = cast<RankedTensorType>(split.getInput().getType());
  // The split: dimension `axis` of the rows becomes [n, s].
  ArrayRef<int64_t> perm = move.getPermutation();
  int64_t axis = perm.empty() ? -1 : perm[0];
  if (axis < 0 || axis >= rows.getRank() - 1 || rows.getDimSize(axis) % ranks != 0)
    return std::nullopt;
  SmallVector<int64_t> splitShape;
  for (int64_t d = 0; d < rows.getRank(); ++d) {
    if (d == axis) {
      splitShape.push_back(ranks);
      splitShape.push_back(rows.getDimSize(d) / ranks);
    } else {
      splitShape.push_back(rows.getDimSize(d));
    }
  }
  if (cast<RankedTensorType>(split.getResult().getType()).getShape() !=
      ArrayRef<int64_t>(splitShape))
    return std::nullopt;
  for (int64_t i = 1, e = perm.size(); i < e; ++i)
    if (perm[i] != (i <= axis ? i - 1 : i))
      return std::nullopt;
  SmallVector<int64_t> block(rows.getShape());
  block[axis] /= ranks;
  if (cast<RankedTensorType>(back.getResult().getType()).getShape() != ArrayRef<int64_t>(block))
    return std::nullopt;
  c.axis = axis;
  c.before = {split, move, flatten};
  c.after = back;
  c.result = back.getResult();
  return c;
}

/// Auto: the ring of partial sums against the products on the whole rows
/// and the reduce-scatter of their sum.
bool worthIt(Scatter c, const ::braid::cost::Hardware &hw) {
  int64_t ranks = c.scatter.getGroupSize();
  auto out = cast<RankedTensorType>(c.result.getType());
  double block = double(getTensorBytes(out));
  RingCost cost;
  for (LinearOp p : c.products) {
    auto in = cast<RankedTensorType>(p->getOperand(0).getType());
    double weight = double(getTensorBytes(p->getOperand(1).getType()));
    double rows = double(in.getNumElements()) / double(in.getShape().back());
    double flops = 2.0 * rows * double(in.getShape().back()) * double(out.getShape().back());
    double rowsBytes = double(getTensorBytes(in));
    // A step: the block of the rows (a copy), its product, the add into
    // the step's sum.
    cost.step += kernelSeconds(0, 2.0 * rowsBytes / double(ranks), hw) +
                 kernelSeconds(flops / double(ranks), rowsBytes / double(ranks) + weight + block,
                               hw) +
                 kernelSeconds(0, 3.0 * block, hw);
    cost.whole += kernelSeconds(flops, rowsBytes + weight + block * double(ranks), hw);
  }
  // The products' sum (an add between two of them).
  cost.whole += double(c.products.size() - 1) * kernelSeconds(0, 3.0 * block * double(ranks), hw);
  cost.shiftBytes = block;
  cost.collective.kind = ::braid::cost::TransferKind::ReduceScatter;
  cost.collective.ranks = ranks;
  cost.collective.bytes = block * double(ranks);
  return ringPays(cost, hw);
}

/// The ring of partial sums: at step k the rank computes the rows of block
/// (c - 1 - k) mod n of every product, sums them and adds the sum its lower
/// neighbour passed on (a shift by +1), which after n - 1 steps is its own
/// block summed over the ranks.
void decompose(Scatter c) {
  dist::ReduceScatterOp rs = c.scatter;
  int64_t ranks = rs.getGroupSize(), axis = c.axis;
  // After the sum's definition: every product's operands are there.
  OpBuilder b(c.root);
  Location loc = rs.getLoc();
  MLIRContext *ctx = b.getContext();
  auto partType = cast<RankedTensorType>(c.result.getType());
  Value sum;
  dist::ShiftOp shift;
  for (int64_t k = 0; k < ranks; ++k) {
    // This step's rows of every product, summed.
    Value local;
    for (LinearOp product : c.products) {
      Value rows = product->getOperand(0);
      auto rowsType = cast<RankedTensorType>(rows.getType());
      SmallVector<int64_t> blockShape(rowsType.getShape());
      blockShape[axis] /= ranks;
      Value block = dist::BlockOp::create(b, loc, rowsType.clone(blockShape), rows,
                                          b.getI64IntegerAttr(axis),
                                          b.getI64IntegerAttr(ranks - 1 - k), rs.getGridAttr(),
                                          rs.getGridAxesAttr());
      IRMapping map;
      map.map(rows, block);
      Operation *part = b.clone(*product, map);
      part->setLoc(unnamed(product.getLoc()));
      part->getResult(0).setType(partType);
      local = local ? Value(AddOp::create(b, loc, local, part->getResult(0)).getResult())
                    : Value(part->getResult(0));
    }
    if (shift) {
      dist::WaitOp::create(b, loc, ValueRange{shift.getToken()});
      sum = AddOp::create(b, loc, shift.getResult(), local).getResult();
    } else {
      sum = local;
    }
    if (k + 1 < ranks)
      shift = dist::ShiftOp::create(b, loc, partType, dist::TokenType::get(ctx), sum,
                                    rs.getGridAttr(), rs.getGridAxesAttr(),
                                    b.getI64IntegerAttr(1), b.getUnitAttr());
  }
  // The sum keeps the name dumps know the block by.
  if (Operation *def = sum.getDefiningOp())
    def->setLoc(c.after ? c.after->getLoc() : rs.getLoc());
  c.result.replaceAllUsesWith(sum);
  if (c.after)
    c.after->erase();
  c.wait.erase();
  rs.erase();
  for (Operation *op : llvm::reverse(c.before))
    op->erase();
  for (AddOp add : llvm::reverse(c.adds))
    add.erase();
  for (LinearOp product : c.products)
    product.erase();
}

struct BraidCollectiveMatmulPass
    : mlir::dist::impl::BraidCollectiveMatmulPassBase<BraidCollectiveMatmulPass> {
  using BraidCollectiveMatmulPassBase::BraidCollectiveMatmulPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    using mlir::braid::CollectiveMatmulMode;
    if (mode == CollectiveMatmulMode::Never)
      return;
    llvm::Expected<::braid::cost::Hardware> hw = ::braid::cost::Hardware::named(hardware);
    if (!hw) {
      emitError(module.getLoc(), "--braid-collective-matmul: ") << llvm::toString(hw.takeError());
      return signalPassFailure();
    }
    SmallVector<Candidate> chosen;
    module.walk([&](dist::AllGatherOp gather) {
      if (gather.getGroupSize() <= 1)
        return;
      if (std::optional<Candidate> c = candidate(gather))
        if (mode == CollectiveMatmulMode::Always || worthIt(*c, *hw))
          chosen.push_back(std::move(*c));
    });
    // A product both rings would take stays with the gather's.
    llvm::SmallPtrSet<Operation *, 16> taken;
    for (Candidate &c : chosen)
      for (LinearOp p : c.products)
        taken.insert(p);
    SmallVector<Scatter> scatters;
    module.walk([&](dist::ReduceScatterOp rs) {
      if (rs.getGroupSize() <= 1)
        return;
      if (std::optional<Scatter> c = scatterOf(rs))
        if (llvm::none_of(c->products, [&](LinearOp p) { return taken.contains(p); }) &&
            (mode == CollectiveMatmulMode::Always || worthIt(*c, *hw)))
          scatters.push_back(std::move(*c));
    });
    for (Candidate &c : chosen)
      decompose(c);
    for (Scatter &c : scatters)
      decompose(c);
  }
};

} // namespace
