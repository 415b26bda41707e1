//===- RaiseLinalgToBraid.cpp - front ends' linalg/tensor IR as braid ops -===//
//
// Front ends that lower to MLIR's upstream dialects (torch-mlir, StableHLO's
// linalg lowering, hand-written shard examples) produce `linalg` on tensors,
// with `tensor` reshapes and `shard.shard` annotations. Braid plans and
// differentiates its own ops, so this pass raises what has a braid
// equivalent: contractions to `braid.linear` / `braid.batch_matmul`,
// elementwise bodies to the elementwise ops (with sigmoid, SiLU, SwiGLU's
// gate and ReLU recognised from their arithmetic), broadcast adds to
// `braid.bias_add`, `linalg.softmax`, `linalg.transpose` and the tensor
// reshapes. Annotations stay where they were: they annotate the raised
// values as they annotated the linalg ones. An op that has no equivalent is
// an error at its location that says why, so that a user learns what to
// write instead; nothing is left half raised.
//
//===----------------------------------------------------------------------===//

#include "braid/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace braid {
#define GEN_PASS_DEF_RAISELINALGTOBRAIDPASS
#include "braid/Conversion/Passes.h.inc"
} // namespace braid

using namespace mlir;
namespace bd = mlir::braid;

namespace {

/// Whether `t` is a type braid's float ops take: a static tensor of f32,
/// bf16 or f16.
bool isBraidFloatTensor(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  return tensor && tensor.hasStaticShape() &&
         isa<Float32Type, BFloat16Type, Float16Type>(tensor.getElementType());
}

/// Whether `v` is a float constant equal to `value` (a scalar in a body, or
/// a splat).
bool isFloatConstant(Value v, double value) {
  FloatAttr attr;
  if (matchPattern(v, m_Constant(&attr)))
    return attr.getValueAsDouble() == value;
  DenseFPElementsAttr dense;
  if (matchPattern(v, m_Constant(&dense)) && dense.isSplat())
    return dense.getSplatValue<APFloat>().convertToDouble() == value;
  return false;
}

/// Whether the tensor `init` is all zeros: a `linalg.fill` of 0.0 or a zero
/// splat constant (what front ends accumulate a product into).
bool isZeroTensor(Value init) {
  if (auto fill = init.getDefiningOp<linalg::FillOp>())
    return isFloatConstant(fill.getInputs()[0], 0.0);
  return isFloatConstant(init, 0.0);
}

/// The dims of `map`'s results, if each is a plain dimension.
std::optional<SmallVector<unsigned>> resultDims(AffineMap map) {
  SmallVector<unsigned> dims;
  for (AffineExpr e : map.getResults()) {
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d)
      return std::nullopt;
    dims.push_back(d.getPosition());
  }
  return dims;
}

SmallVector<unsigned> concat(ArrayRef<unsigned> a, ArrayRef<unsigned> b,
                             ArrayRef<unsigned> c = {}) {
  SmallVector<unsigned> r(a);
  r.append(b.begin(), b.end());
  r.append(c.begin(), c.end());
  return r;
}

class Raiser {
public:
  explicit Raiser(IRRewriter &rewriter) : rewriter(rewriter) {}

  /// Raises one op (a linalg op or a tensor reshape); emits an error at the
  /// op and fails where braid has no equivalent.
  LogicalResult raise(Operation *op) {
    rewriter.setInsertionPoint(op);
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
      if (isa<linalg::FillOp>(op))
        return success(); // an init, erased once no product reads it
      if (!linalgOp.hasPureTensorSemantics())
        return op->emitOpError("cannot be raised to a braid op: it works on "
                               "buffers, not tensors");
      for (Value v : op->getOperands())
        if (isa<ShapedType>(v.getType()) && !isBraidFloatTensor(v.getType()))
          return op->emitOpError("cannot be raised to a braid op: operand "
                                 "type ")
                 << v.getType()
                 << " is not a static tensor of f32, bf16 or f16";
      if (auto transpose = dyn_cast<linalg::TransposeOp>(op))
        return replace(
            op, bd::TransposeOp::create(
                    rewriter, op->getLoc(), op->getResultTypes()[0],
                    transpose.getInput(),
                    rewriter.getDenseI64ArrayAttr(transpose.getPermutation()))
                    .getResult());
      if (linalg::isaContractionOpInterface(linalgOp))
        return raiseContraction(linalgOp);
      if (linalgOp.getNumReductionLoops() == 0)
        return raiseElementwise(linalgOp);
      return op->emitOpError("cannot be raised to a braid op: a reduction "
                             "that is not a matrix product (braid has no "
                             "general reduction: write a softmax as "
                             "linalg.softmax, norms with braid's own ops)");
    }
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::ReshapeOp>(
            op)) {
      Value input = op->getOperand(0);
      Type result = op->getResultTypes()[0];
      auto resultTensor = cast<RankedTensorType>(result);
      if (!cast<RankedTensorType>(input.getType()).hasStaticShape() ||
          !resultTensor.hasStaticShape())
        return op->emitOpError("cannot be raised to braid.reshape: shapes "
                               "must be static");
      return replace(
          op, bd::ReshapeOp::create(rewriter, op->getLoc(), result, input)
                  .getResult());
    }
    if (auto softmax = dyn_cast<linalg::SoftmaxOp>(op))
      return raiseSoftmax(softmax);
    if (isa<arith::ArithDialect, math::MathDialect>(op->getDialect()))
      return op->emitOpError("cannot be raised to a braid op: elementwise "
                             "arithmetic on whole tensors (write it as a "
                             "linalg op or a braid op)");
    return op->emitOpError("cannot be raised to a braid op: braid has no "
                           "equivalent");
  }

private:
  /// Replaces `op`'s result by `value`; an annotation of the op's init (the
  /// result's sharding, in destination-passing style) annotates `value`
  /// unless the result is annotated already.
  LogicalResult replace(Operation *op, Value value) {
    if (auto dps = dyn_cast<DestinationStyleOpInterface>(op);
        dps && dps.getNumDpsInits() == 1 &&
        llvm::none_of(op->getResult(0).getUsers(),
                      [](Operation *u) { return isa<shard::ShardOp>(u); })) {
      Value init = dps.getDpsInits()[0];
      shard::ShardOp annotation;
      while (!annotation && init) {
        if (auto shardOp = init.getDefiningOp<shard::ShardOp>())
          annotation = shardOp;
        else if (auto fill = init.getDefiningOp<linalg::FillOp>())
          init = fill.getOutputs()[0];
        else
          init = Value();
      }
      if (annotation && !annotation.getAnnotateForUsers()) {
        rewriter.setInsertionPointAfterValue(value);
        value = shard::ShardOp::create(rewriter, op->getLoc(), value,
                                       annotation.getSharding());
      }
    }
    rewriter.replaceOp(op, value);
    return success();
  }

  /// `linalg.softmax` over dimension d: `braid.softmax` (over the last
  /// dimension), between transposes that swap d and the last where d is
  /// another. Its init only names the result's type (and its annotation).
  LogicalResult raiseSoftmax(linalg::SoftmaxOp op) {
    if (op->getNumResults() != 1)
      return op->emitOpError("cannot be raised to braid.softmax: it works on "
                             "buffers, not tensors");
    Value input = op.getInput();
    for (Type t : {input.getType(), op->getResultTypes()[0]})
      if (!isBraidFloatTensor(t))
        return op->emitOpError("cannot be raised to braid.softmax: type ")
               << t << " is not a static tensor of f32, bf16 or f16";
    if (input.getType() != op->getResultTypes()[0])
      return op->emitOpError("cannot be raised to braid.softmax: its input "
                             "and result types differ");
    auto type = cast<RankedTensorType>(input.getType());
    int64_t rank = type.getRank(), dim = op.getDimension();
    Location loc = op->getLoc();
    if (dim == rank - 1)
      return replace(op, bd::SoftmaxOp::create(rewriter, loc, input).getResult());
    // Swap d and the last dimension (a permutation that is its own inverse).
    SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    std::swap(perm[dim], perm[rank - 1]);
    SmallVector<int64_t> shape(type.getShape());
    std::swap(shape[dim], shape[rank - 1]);
    auto swapped = RankedTensorType::get(shape, type.getElementType());
    auto permAttr = rewriter.getDenseI64ArrayAttr(perm);
    Value t = bd::TransposeOp::create(rewriter, loc, swapped, input, permAttr);
    Value s = bd::SoftmaxOp::create(rewriter, loc, t);
    return replace(op, bd::TransposeOp::create(rewriter, loc, type, s, permAttr)
                           .getResult());
  }

  /// `linalg.matmul`, `linalg.batch_matmul` and generic contractions of one
  /// reduced and one free dimension per operand, into zero.
  LogicalResult raiseContraction(linalg::LinalgOp op) {
    auto fail = [&](const Twine &why) {
      return op->emitOpError("cannot be raised to a braid product: ") << why;
    };
    if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
      return fail("expected two inputs and one output");
    if (!isZeroTensor(op.getDpsInits()[0]))
      return fail("it accumulates into a tensor that is not zero (add the "
                  "product to it with an elementwise add)");
    Type elem = getElementTypeOrSelf(op->getResultTypes()[0]);
    for (Value in : op.getDpsInputs())
      if (getElementTypeOrSelf(in.getType()) != elem)
        return fail("its inputs' element type differs from its result's "
                    "(braid's products accumulate in f32 and return the "
                    "inputs' type)");
    FailureOr<linalg::ContractionDimensions> dims =
        linalg::inferContractionDims(op);
    if (failed(dims) || dims->k.size() != 1 || dims->n.size() != 1)
      return fail("expected one contracted and one weight dimension");
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    auto lhs = resultDims(maps[0]), rhs = resultDims(maps[1]),
         out = resultDims(maps[2]);
    if (!lhs || !rhs || !out)
      return fail("an indexing map is not a permutation of loop dimensions");
    unsigned k = dims->k[0], n = dims->n[0];
    Location loc = op->getLoc();
    Type resultType = op->getResultTypes()[0];
    Value a = op.getDpsInputs()[0], b = op.getDpsInputs()[1];
    if (dims->batch.empty()) {
      // x [m..., k] times W [k, n] or [n, k]: braid.linear.
      if (*lhs != concat(dims->m, {k}) || *out != concat(dims->m, {n}))
        return fail("expected the input as [rows..., k] and the result as "
                    "[rows..., n]");
      bool transposed;
      if (*rhs == SmallVector<unsigned>{k, n})
        transposed = false;
      else if (*rhs == SmallVector<unsigned>{n, k})
        transposed = true;
      else
        return fail("expected the weight as [k, n] or [n, k]");
      return replace(op, bd::LinearOp::create(rewriter, loc, resultType, a, b,
                                              Value(), transposed)
                             .getResult());
    }
    if (dims->m.size() != 1)
      return fail("a batched product needs one row dimension");
    unsigned m = dims->m[0];
    ArrayRef<unsigned> batch = dims->batch;
    if (*out != concat(batch, {m, n}))
      return fail("expected the result as [batch..., m, n]");
    bool transposeA, transposeB;
    if (*lhs == concat(batch, {m, k}))
      transposeA = false;
    else if (*lhs == concat(batch, {k, m}))
      transposeA = true;
    else
      return fail("expected the left operand as [batch..., m, k] or "
                  "[batch..., k, m]");
    if (*rhs == concat(batch, {k, n}))
      transposeB = false;
    else if (*rhs == concat(batch, {n, k}))
      transposeB = true;
    else
      return fail("expected the right operand as [batch..., k, n] or "
                  "[batch..., n, k]");
    return replace(op, bd::BatchMatmulOp::create(rewriter, loc, resultType, a,
                                                 b, transposeA, transposeB)
                           .getResult());
  }

  /// A parallel op whose body computes one element from its inputs'
  /// elements: the body's arithmetic rebuilt from braid's elementwise ops.
  LogicalResult raiseElementwise(linalg::LinalgOp op) {
    auto fail = [&](const Twine &why) {
      return op->emitOpError("cannot be raised to braid's elementwise ops: ")
             << why;
    };
    if (op.getNumDpsInits() != 1 || op->getNumResults() != 1)
      return fail("expected one output");
    auto resultType = cast<RankedTensorType>(op->getResultTypes()[0]);
    unsigned rank = resultType.getRank();
    if (!op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity())
      return fail("the output's indexing map is not the identity");
    Block *body = op.getBlock();
    if (!op.getMatchingBlockArgument(op.getDpsInitOperand(0)).use_empty())
      return fail("the body reads the output (an accumulation)");
    Body b;
    b.op = op;
    b.type = resultType;
    for (OpOperand *in : op.getDpsInputOperands()) {
      BlockArgument arg = op.getMatchingBlockArgument(in);
      AffineMap map = op.getMatchingIndexingMap(in);
      if (map.isIdentity() && in->get().getType() == resultType) {
        b.values[arg] = in->get();
        continue;
      }
      // Broadcast over leading dimensions: the map selects the result's
      // trailing dimensions in order (a bias or a position table).
      auto dims = resultDims(map);
      bool trailing = dims && !dims->empty() && dims->size() < rank;
      for (unsigned i = 0; trailing && i < dims->size(); ++i)
        trailing = (*dims)[i] == rank - dims->size() + i;
      if (trailing && getElementTypeOrSelf(in->get().getType()) ==
                          resultType.getElementType()) {
        b.broadcasts[arg] = in->get();
        continue;
      }
      return fail("input #")
             << in->getOperandNumber()
             << " is neither the result's shape nor broadcast over its "
                "leading dimensions";
    }
    auto yield = cast<linalg::YieldOp>(body->getTerminator());
    std::string why;
    FailureOr<Value> result = build(b, yield.getOperand(0), why);
    if (failed(result))
      return fail(why);
    return replace(op, *result);
  }

  struct Body {
    linalg::LinalgOp op;
    RankedTensorType type;
    DenseMap<Value, Value> values;     ///< body value -> raised tensor
    DenseMap<Value, Value> broadcasts; ///< body argument -> broadcast input
  };

  /// The body value `v` computed by braid ops on whole tensors.
  FailureOr<Value> build(Body &b, Value v, std::string &why) {
    if (Value known = b.values.lookup(v))
      return known;
    FailureOr<Value> built = buildNew(b, v, why);
    if (succeeded(built))
      b.values[v] = *built;
    return built;
  }

  /// `x` if `v` is 1 / (1 + exp(-x)).
  static Value sigmoidOf(Value v) {
    auto div = v.getDefiningOp<arith::DivFOp>();
    if (!div || !isFloatConstant(div.getLhs(), 1.0))
      return {};
    return onePlusExpNeg(div.getRhs());
  }
  /// `x` if `v` is 1 + exp(-x) (either order).
  static Value onePlusExpNeg(Value v) {
    auto add = v.getDefiningOp<arith::AddFOp>();
    if (!add)
      return {};
    Value other;
    if (isFloatConstant(add.getLhs(), 1.0))
      other = add.getRhs();
    else if (isFloatConstant(add.getRhs(), 1.0))
      other = add.getLhs();
    auto exp = other ? other.getDefiningOp<math::ExpOp>() : nullptr;
    auto neg = exp ? exp.getOperand().getDefiningOp<arith::NegFOp>() : nullptr;
    return neg ? neg.getOperand() : Value();
  }
  /// The factors of a product tree of `v` (arith.mulf, any nesting), and
  /// the product of its float constants.
  static void factors(Value v, SmallVectorImpl<Value> &out, double &scale) {
    FloatAttr constant;
    if (matchPattern(v, m_Constant(&constant))) {
      scale *= constant.getValueAsDouble();
      return;
    }
    if (auto mul = v.getDefiningOp<arith::MulFOp>()) {
      factors(mul.getLhs(), out, scale);
      factors(mul.getRhs(), out, scale);
      return;
    }
    out.push_back(v);
  }
  /// `x` if `v` is x / sqrt(2) (as a product or a quotient).
  static Value overSqrt2(Value v) {
    constexpr double kInvSqrt2 = 0.70710678118654752440;
    if (auto div = v.getDefiningOp<arith::DivFOp>()) {
      FloatAttr c;
      if (matchPattern(div.getRhs(), m_Constant(&c)) &&
          std::abs(c.getValueAsDouble() * kInvSqrt2 - 1) < 1e-6)
        return div.getLhs();
      return {};
    }
    SmallVector<Value> fs;
    double scale = 1;
    factors(v, fs, scale);
    if (fs.size() == 1 && std::abs(scale / kInvSqrt2 - 1) < 1e-6)
      return fs[0];
    return {};
  }
  /// `x` if `v` is GELU's exact form, 0.5 x (1 + erf(x / sqrt 2)), its
  /// factors in any order (what PyTorch's GELU lowers to).
  static Value geluOf(Value v) {
    SmallVector<Value> fs;
    double scale = 1;
    factors(v, fs, scale);
    if (fs.size() != 2 || std::abs(scale - 0.5) > 1e-12)
      return {};
    for (auto [x, rest] : {std::pair(fs[0], fs[1]), std::pair(fs[1], fs[0])}) {
      auto add = rest.getDefiningOp<arith::AddFOp>();
      if (!add)
        continue;
      for (auto [one, e] : {std::pair(add.getLhs(), add.getRhs()),
                            std::pair(add.getRhs(), add.getLhs())}) {
        auto erf = e.getDefiningOp<math::ErfOp>();
        if (isFloatConstant(one, 1.0) && erf && overSqrt2(erf.getOperand()) == x)
          return x;
      }
    }
    return {};
  }
  /// `x` if `v` is x * sigmoid(x) or x / (1 + exp(-x)).
  static Value siluOf(Value v) {
    if (auto div = v.getDefiningOp<arith::DivFOp>())
      if (Value x = onePlusExpNeg(div.getRhs()); x && x == div.getLhs())
        return x;
    if (auto mul = v.getDefiningOp<arith::MulFOp>()) {
      if (Value x = sigmoidOf(mul.getRhs()); x && x == mul.getLhs())
        return x;
      if (Value x = sigmoidOf(mul.getLhs()); x && x == mul.getRhs())
        return x;
    }
    return {};
  }

  FailureOr<Value> buildNew(Body &b, Value v, std::string &why) {
    Location loc = b.op->getLoc();
    if (b.broadcasts.count(v)) {
      why = "a broadcast input is used other than as an added bias";
      return failure();
    }
    if (isa<BlockArgument>(v)) {
      why = "the body reads a value from outside the op";
      return failure();
    }
    if (matchPattern(v, m_Constant())) {
      why = "a constant operand (braid's elementwise ops take tensors)";
      return failure();
    }
    Operation *def = v.getDefiningOp();
    if (def->getBlock() != b.op.getBlock()) {
      why = "the body uses a value defined outside the op";
      return failure();
    }
    auto unary = [&](Value x, auto tag) -> FailureOr<Value> {
      using OpTy = decltype(tag);
      FailureOr<Value> in = build(b, x, why);
      if (failed(in))
        return failure();
      return OpTy::create(rewriter, loc, b.type, *in).getResult();
    };
    auto binary = [&](Value x, Value y, auto tag) -> FailureOr<Value> {
      using OpTy = decltype(tag);
      FailureOr<Value> l = build(b, x, why);
      if (failed(l))
        return failure();
      FailureOr<Value> r = build(b, y, why);
      if (failed(r))
        return failure();
      return OpTy::create(rewriter, loc, b.type, *l, *r).getResult();
    };
    if (Value x = sigmoidOf(v))
      return unary(x, bd::SigmoidOp());
    if (Value x = siluOf(v))
      return unary(x, bd::SiluOp());
    if (Value x = geluOf(v))
      return unary(x, bd::GeluOp());
    if (auto add = dyn_cast<arith::AddFOp>(def)) {
      for (auto [bias, other] : {std::pair(add.getLhs(), add.getRhs()),
                                 std::pair(add.getRhs(), add.getLhs())})
        if (Value tensor = b.broadcasts.lookup(bias)) {
          FailureOr<Value> in = build(b, other, why);
          if (failed(in))
            return failure();
          return bd::BiasAddOp::create(rewriter, loc, b.type, *in, tensor)
              .getResult();
        }
      return binary(add.getLhs(), add.getRhs(), bd::AddOp());
    }
    if (auto sub = dyn_cast<arith::SubFOp>(def)) {
      FailureOr<Value> r = build(b, sub.getRhs(), why);
      if (failed(r))
        return failure();
      Value neg = bd::NegOp::create(rewriter, loc, b.type, *r);
      FailureOr<Value> l = build(b, sub.getLhs(), why);
      if (failed(l))
        return failure();
      return bd::AddOp::create(rewriter, loc, b.type, *l, neg).getResult();
    }
    if (auto mul = dyn_cast<arith::MulFOp>(def)) {
      // SwiGLU's gate: silu(g) * u.
      for (auto [gate, up] : {std::pair(mul.getLhs(), mul.getRhs()),
                              std::pair(mul.getRhs(), mul.getLhs())})
        if (Value g = siluOf(gate)) {
          FailureOr<Value> gt = build(b, g, why);
          if (failed(gt))
            return failure();
          FailureOr<Value> u = build(b, up, why);
          if (failed(u))
            return failure();
          return bd::GluOp::create(rewriter, loc, b.type, bd::Activation::SiLU,
                                   *gt, *u)
              .getResult();
        }
      return binary(mul.getLhs(), mul.getRhs(), bd::MulOp());
    }
    if (auto neg = dyn_cast<arith::NegFOp>(def))
      return unary(neg.getOperand(), bd::NegOp());
    if (auto exp = dyn_cast<math::ExpOp>(def))
      return unary(exp.getOperand(), bd::ExpOp());
    if (isa<arith::MaximumFOp, arith::MaxNumFOp>(def)) {
      Value l = def->getOperand(0), r = def->getOperand(1);
      if (isFloatConstant(r, 0.0))
        return unary(l, bd::ReluOp());
      if (isFloatConstant(l, 0.0))
        return unary(r, bd::ReluOp());
    }
    why = ("'" + def->getName().getStringRef() + "' has no braid equivalent")
              .str();
    return failure();
  }

  IRRewriter &rewriter;
};

struct RaiseLinalgToBraidPass
    : ::braid::impl::RaiseLinalgToBraidPassBase<RaiseLinalgToBraidPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    IRRewriter rewriter(&getContext());
    Raiser raiser(rewriter);
    bool failed = false;
    for (auto func : module.getOps<func::FuncOp>()) {
      SmallVector<Operation *> ops;
      func.walk<WalkOrder::PreOrder>([&](Operation *op) {
        if (isa<linalg::YieldOp, linalg::FillOp, tensor::EmptyOp>(op))
          return WalkResult::skip();
        Dialect *dialect = op->getDialect();
        bool tensorResult = llvm::any_of(
            op->getResultTypes(), [](Type t) { return isa<TensorType>(t); });
        if (isa_and_nonnull<linalg::LinalgDialect, tensor::TensorDialect>(
                dialect) ||
            (isa_and_nonnull<arith::ArithDialect, math::MathDialect>(dialect) &&
             tensorResult && !isa<arith::ConstantOp>(op)))
          ops.push_back(op);
        // A linalg op's body is raised with the op.
        return isa<linalg::LinalgOp>(op) ? WalkResult::skip()
                                         : WalkResult::advance();
      });
      for (Operation *op : ops)
        failed |= mlir::failed(raiser.raise(op));
      // What only the raised ops read (their zero inits and the
      // annotations of those, the body's constants) goes.
      // Only the candidates are collected: erasing an op frees what it
      // nests (a fill's body), which a list of every op would still hold.
      SmallVector<Operation *> candidates;
      func.walk([&](Operation *op) {
        if (isa<linalg::FillOp, tensor::EmptyOp, arith::ConstantOp,
                shard::ShardOp>(op))
          candidates.push_back(op);
      });
      for (Operation *op : llvm::reverse(candidates)) {
        bool initAnnotation = false;
        if (auto annotation = dyn_cast<shard::ShardOp>(op))
          initAnnotation =
              annotation->use_empty() &&
              isa_and_nonnull<tensor::EmptyOp, linalg::FillOp>(
                  annotation.getSrc().getDefiningOp());
        if (initAnnotation ||
            (!isa<shard::ShardOp>(op) && isOpTriviallyDead(op)))
          rewriter.eraseOp(op);
      }
    }
    if (failed)
      signalPassFailure();
  }
};

} // namespace
