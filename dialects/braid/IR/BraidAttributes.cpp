//===- BraidAttributes.cpp - verifiers of the braid.* attributes ----------===//
//
// Each discardable attribute of BraidBase.td has one verifier here: the value
// it must hold and the kind of op that may carry it. The dialect dispatches
// by name, so that an attribute a pass misspells or misplaces is an error
// where it appears, not a surprise in a later pass.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/EntryPoints.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::braid;

/// An error on `op` that begins with the attribute's quoted name.
static InFlightDiagnostic attrError(Operation *op, NamedAttribute attr) {
  return op->emitError("'") << attr.getName().getValue() << "' ";
}

/// Fails with "'<name>' <rule>" unless `ok`.
static LogicalResult expect(bool ok, Operation *op, NamedAttribute attr,
                            StringRef rule) {
  if (ok)
    return success();
  return attrError(op, attr) << rule;
}

static bool isNonNegativeI64(Attribute value) {
  auto i = dyn_cast<IntegerAttr>(value);
  return i && i.getType().isInteger(64) && i.getInt() >= 0;
}

static bool isArrayOf(Attribute value, function_ref<bool(Attribute)> element) {
  auto array = dyn_cast<ArrayAttr>(value);
  return array && llvm::all_of(array, element);
}

static bool isAxisNames(Attribute value) {
  return isArrayOf(value, llvm::IsaPred<StringAttr>);
}

/// Where the training and pipeline attributes sit: on a func.func, or on an
/// op of a function's body (the pipeline passes mark ops of the step).
static bool isFunc(Operation *op) { return isa<func::FuncOp>(op); }
static bool isInFunc(Operation *op) {
  return op->getParentOfType<func::FuncOp>() != nullptr;
}

/// The func.func a symbol reference attribute of `op` names, or null.
static func::FuncOp lookupFunc(Operation *op, FlatSymbolRefAttr name) {
  Operation *table = SymbolTable::getNearestSymbolTable(op->getParentOp());
  return table ? dyn_cast_or_null<func::FuncOp>(
                     SymbolTable::lookupSymbolIn(table, name))
               : func::FuncOp();
}

//===----------------------------------------------------------------------===//
// What a module and its functions are
//===----------------------------------------------------------------------===//

/// The function an EntryKind keyword (braid.entry, braid.serves) is on, or
/// failure (reported) when it is not on one or names no kind.
static FailureOr<func::FuncOp> funcWithEntryKind(Operation *op,
                                                 NamedAttribute attr) {
  auto func = dyn_cast<func::FuncOp>(op);
  if (!func) {
    attrError(op, attr) << "must be on a func.func";
    return failure();
  }
  auto kind = dyn_cast<StringAttr>(attr.getValue());
  if (!kind || !symbolizeEntryKind(kind.getValue())) {
    attrError(op, attr) << "must be one of \"train_step\", \"forward\", "
                        << "\"prefill\" or \"decode\", found " << attr.getValue();
    return failure();
  }
  return func;
}

static LogicalResult verifyEntry(Operation *op, NamedAttribute attr) {
  FailureOr<func::FuncOp> func = funcWithEntryKind(op, attr);
  if (failed(func))
    return failure();
  if (func->isExternal() || !func->isPublic())
    return attrError(op, attr) << "marks a public function with a body";
  return success();
}

static LogicalResult verifyServes(Operation *op, NamedAttribute attr) {
  FailureOr<func::FuncOp> func = funcWithEntryKind(op, attr);
  if (failed(func))
    return failure();
  if (func->isPublic())
    return attrError(op, attr)
           << "marks a private function (an entry point is braid.entry)";
  return success();
}

/// A flat dictionary of scalars and arrays of scalars; `name` and `family`
/// are required so that tools can say what they are looking at.
static LogicalResult verifyModel(Operation *op, NamedAttribute attr) {
  if (!isa<ModuleOp>(op))
    return attrError(op, attr) << "must be attached to a builtin.module";
  auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
  if (!dict)
    return attrError(op, attr)
           << "must be a dictionary, found " << attr.getValue();
  for (StringRef key : {"name", "family"})
    if (!isa_and_nonnull<StringAttr>(dict.get(key)))
      return attrError(op, attr) << "needs a string entry '" << key << "'";
  auto isScalar = [](Attribute a) {
    return isa<IntegerAttr, FloatAttr, StringAttr, BoolAttr>(a);
  };
  for (NamedAttribute entry : dict)
    if (!isScalar(entry.getValue()) && !isArrayOf(entry.getValue(), isScalar))
      return attrError(op, attr)
             << "entry '" << entry.getName().getValue()
             << "' must be an integer, float, string, bool or array of those";
  return success();
}

static LogicalResult verifyAxes(Operation *op, NamedAttribute attr) {
  auto names = dyn_cast<ArrayAttr>(attr.getValue());
  auto grid = dyn_cast<shard::GridOp>(op);
  if (!grid || !isAxisNames(names) || names.size() != grid.getShape().size())
    return attrError(op, attr)
           << "must name each axis of a shard.grid with a string";
  llvm::StringSet<> seen;
  for (Attribute name : names)
    if (!seen.insert(cast<StringAttr>(name).getValue()).second)
      return attrError(op, attr) << "names axis " << name << " twice";
  return success();
}

//===----------------------------------------------------------------------===//
// Partitioning
//===----------------------------------------------------------------------===//

/// The value of `braid.split` or `braid.global_shape`, wherever it is.
static LogicalResult verifyLayoutValue(Operation *op, NamedAttribute attr) {
  if (attr.getName() == kGlobalShapeAttrName)
    return expect(isa<DenseI64ArrayAttr>(attr.getValue()), op, attr,
                  "must be an array<i64>");
  return expect(
      isArrayOf(attr.getValue(), isAxisNames), op, attr,
      "must be an array (one per dimension) of arrays of grid axis names");
}

/// On an op, the layout of a persistent tensor (a step argument carries it
/// as an argument attribute).
static LogicalResult verifyLayout(Operation *op, NamedAttribute attr) {
  if (!isa<ParamOp, StateOp>(op))
    return attrError(op, attr)
           << "must be on a braid.param or braid.state (or a function "
              "argument)";
  return verifyLayoutValue(op, attr);
}

static LogicalResult verifyResultLayouts(Operation *op, NamedAttribute attr) {
  auto valid = [](Attribute a) {
    auto d = dyn_cast<DictionaryAttr>(a);
    if (!d || d.empty())
      return bool(d);
    Attribute partial = d.get(kPartialAttrName);
    return d.size() == (partial ? 3u : 2u) &&
           isa_and_nonnull<DenseI64ArrayAttr>(d.get(kGlobalShapeAttrName)) &&
           isa_and_nonnull<ArrayAttr>(d.get(kSplitAttrName)) &&
           (!partial || isa<ArrayAttr>(partial));
  };
  auto layouts = dyn_cast<ArrayAttr>(attr.getValue());
  return expect(layouts && layouts.size() == op->getNumResults() &&
                    llvm::all_of(layouts, valid),
                op, attr,
                "must hold one dictionary per result, empty or with "
                "braid.global_shape, braid.split and optionally "
                "braid.partial");
}

static LogicalResult verifyPartial(Operation *op, NamedAttribute attr) {
  return attrError(op, attr)
         << "is a key of braid.result_layouts' dictionaries, not an "
            "attribute of an op";
}

static LogicalResult verifyZero(Operation *op, NamedAttribute attr) {
  auto stage = dyn_cast<IntegerAttr>(attr.getValue());
  return expect(isa<ModuleOp>(op) && stage && stage.getInt() >= 0 &&
                    stage.getInt() <= 3,
                op, attr, "must be a ZeRO stage 0-3 on a module");
}

static LogicalResult verifyZeroAxes(Operation *op, NamedAttribute attr) {
  auto names = dyn_cast<ArrayAttr>(attr.getValue());
  return expect(
      isa<ParamOp>(op) && isAxisNames(names) && !names.empty(), op, attr,
      "must be a non-empty array of grid axis names on a braid.param");
}

static LogicalResult verifyZigzagAxis(Operation *op, NamedAttribute attr) {
  auto axis = dyn_cast<StringAttr>(attr.getValue());
  return expect(isa<ModuleOp>(op) && axis && !axis.getValue().empty(), op, attr,
                "must name a grid axis with a string on a module");
}

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

static LogicalResult verifyGradients(Operation *op, NamedAttribute attr) {
  auto names = dyn_cast<ArrayAttr>(attr.getValue());
  if (!isFunc(op) || !isArrayOf(names, llvm::IsaPred<FlatSymbolRefAttr>))
    return attrError(op, attr)
           << "must be an array of symbol references on a func.func";
  // One table for all the names (a scan of the module per name made the
  // verifier quadratic in the layers).
  Operation *tableOp = SymbolTable::getNearestSymbolTable(op->getParentOp());
  if (!tableOp)
    return attrError(op, attr) << "needs an enclosing module";
  SymbolTable symbols(tableOp);
  for (Attribute name : names)
    if (!isa_and_nonnull<ParamOp>(
            symbols.lookup(cast<FlatSymbolRefAttr>(name).getValue())))
      return attrError(op, attr)
             << "names " << name << ", which is not a braid.param";
  return success();
}

static LogicalResult verifyGradientCopies(Operation *op, NamedAttribute attr) {
  return expect(isFunc(op) && isa<DenseI64ArrayAttr>(attr.getValue()), op, attr,
                "must be an i64 array on a func.func");
}

static LogicalResult verifyFinish(Operation *op, NamedAttribute attr) {
  auto name = dyn_cast<FlatSymbolRefAttr>(attr.getValue());
  if (!isFunc(op) || !name)
    return attrError(op, attr) << "must be a symbol reference on a func.func";
  func::FuncOp finish = lookupFunc(op, name);
  if (!finish)
    return attrError(op, attr)
           << "names " << name << ", which is not a func.func";
  if (finish.getNumArguments() != 0 || finish.getNumResults() != 0)
    return attrError(op, attr)
           << "names " << name
           << ", which must take no arguments and return nothing, not "
           << finish.getFunctionType();
  return success();
}

//===----------------------------------------------------------------------===//
// Pipeline parallelism
//===----------------------------------------------------------------------===//

static LogicalResult verifyStage(Operation *op, NamedAttribute attr) {
  return expect(isInFunc(op) && isNonNegativeI64(attr.getValue()), op, attr,
                "must be a non-negative i64 on an op of a function");
}

static LogicalResult verifyBackward(Operation *op, NamedAttribute attr) {
  return expect(isInFunc(op) && isa<UnitAttr>(attr.getValue()), op, attr,
                "must be a unit attribute on an op of a function");
}

static LogicalResult verifyMicrobatches(Operation *op, NamedAttribute attr) {
  return expect(isFunc(op) && isNonNegativeI64(attr.getValue()) &&
                    cast<IntegerAttr>(attr.getValue()).getInt() >= 1,
                op, attr, "must be a positive i64 on a func.func");
}

static LogicalResult verifyPipeline(Operation *op, NamedAttribute attr) {
  return expect(isFunc(op) && isa<DictionaryAttr>(attr.getValue()), op, attr,
                "must be a dictionary on a func.func");
}

static LogicalResult verifyPipelineEntries(Operation *op, NamedAttribute attr) {
  auto entries = dyn_cast<ArrayAttr>(attr.getValue());
  if (!isa<ModuleOp>(op) ||
      !isArrayOf(entries, llvm::IsaPred<FlatSymbolRefAttr>))
    return attrError(op, attr)
           << "must be an array of symbol references on a module";
  SymbolTable symbols(op);
  for (Attribute entry : entries)
    if (!isa_and_nonnull<func::FuncOp>(
            symbols.lookup(cast<FlatSymbolRefAttr>(entry).getValue())))
      return attrError(op, attr)
             << "names " << entry << ", which is not a function of the module";
  return success();
}

/// `braid.pipeline_rank` and `braid.peak_live_microbatches`.
static LogicalResult verifyRankCount(Operation *op, NamedAttribute attr) {
  return expect(isFunc(op) && isNonNegativeI64(attr.getValue()), op, attr,
                "must be a non-negative i64 on a func.func");
}

static LogicalResult verifyPipelineChunk(Operation *op, NamedAttribute attr) {
  return expect(isFunc(op) && isa<UnitAttr>(attr.getValue()), op, attr,
                "must be a unit attribute on a func.func");
}

//===----------------------------------------------------------------------===//
// The dialect's hooks
//===----------------------------------------------------------------------===//

using AttrVerifier = LogicalResult (*)(Operation *, NamedAttribute);

/// The verifier of the attribute named `name`, or null if the dialect has no
/// such attribute.
static AttrVerifier lookupVerifier(StringRef name) {
  return llvm::StringSwitch<AttrVerifier>(name)
      .Case(kEntryAttrName, verifyEntry)
      .Case(kServesAttrName, verifyServes)
      .Case(kModelAttrName, verifyModel)
      .Case(kAxesAttrName, verifyAxes)
      .Cases(kSplitAttrName, kGlobalShapeAttrName, verifyLayout)
      .Case(kResultLayoutsAttrName, verifyResultLayouts)
      .Case(kPartialAttrName, verifyPartial)
      .Case(kZeroAttrName, verifyZero)
      .Case(kZeroAxesAttrName, verifyZeroAxes)
      .Case(kZigzagAxisAttrName, verifyZigzagAxis)
      .Case(kGradientsAttrName, verifyGradients)
      .Case(kGradientCopiesAttrName, verifyGradientCopies)
      .Case(kFinishAttrName, verifyFinish)
      .Case(kStageAttrName, verifyStage)
      .Case(kBackwardAttrName, verifyBackward)
      .Case(kMicrobatchesAttrName, verifyMicrobatches)
      .Case(kPipelineAttrName, verifyPipeline)
      .Case(kPipelineEntriesAttrName, verifyPipelineEntries)
      .Cases(kPipelineRankAttrName, kPeakLiveMicrobatchesAttrName,
             verifyRankCount)
      .Case(kPipelineChunkAttrName, verifyPipelineChunk)
      .Default(nullptr);
}

LogicalResult BraidDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  if (AttrVerifier verify = lookupVerifier(attr.getName().getValue()))
    return verify(op, attr);
  return op->emitError() << "unknown braid attribute '"
                         << attr.getName().getValue() << "'";
}

/// A partitioned step's arguments carry their layout as argument attributes.
LogicalResult BraidDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                     unsigned,
                                                     NamedAttribute attr) {
  if (attr.getName() == kSplitAttrName ||
      attr.getName() == kGlobalShapeAttrName)
    return verifyLayoutValue(op, attr);
  if (attr.getName() == kInputNameAttrName)
    return expect(isFunc(op) && isa<StringAttr>(attr.getValue()) &&
                      !cast<StringAttr>(attr.getValue()).empty(),
                  op, attr, "must be a non-empty string on a func.func argument");
  return op->emitError() << "unknown braid argument attribute '"
                         << attr.getName().getValue() << "'";
}
