//===- BraidDialect.cpp - braid dialect registration and attributes -------===//

#include "dialects/braid/IR/BraidDialect.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/EntryPoints.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::braid;

#include "dialects/braid/IR/BraidDialect.cpp.inc"
#include "dialects/braid/IR/BraidEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/braid/IR/BraidAttrs.cpp.inc"

void BraidDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/braid/IR/BraidOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/braid/IR/BraidAttrs.cpp.inc"
      >();
}

/// `braid.model` holds the hyper-parameters of the model as a flat dictionary
/// of integers, floats, strings, booleans and arrays of those; `name` and
/// `family` are required so that tools can say what they are looking at.
/// `braid.split` (per dimension, the grid axis names splitting it) and
/// `braid.global_shape`, on a parameter, state or step argument of a
/// partitioned program.
static LogicalResult verifyShardAttr(Operation *op, NamedAttribute attr) {
  if (attr.getName() == "braid.global_shape") {
    if (!isa<DenseI64ArrayAttr>(attr.getValue()))
      return op->emitError("'braid.global_shape' must be an array<i64>");
    return success();
  }
  auto dims = dyn_cast<ArrayAttr>(attr.getValue());
  if (!dims || !llvm::all_of(dims, [](Attribute dim) {
        auto axes = dyn_cast<ArrayAttr>(dim);
        return axes && llvm::all_of(axes, llvm::IsaPred<StringAttr>);
      }))
    return op->emitError("'braid.split' must be an array (one per dimension) "
                         "of arrays of grid axis names");
  return success();
}

LogicalResult BraidDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                     unsigned,
                                                     NamedAttribute attr) {
  if (attr.getName() == "braid.split" || attr.getName() == "braid.global_shape")
    return verifyShardAttr(op, attr);
  return op->emitError() << "unknown braid argument attribute '"
                         << attr.getName().getValue() << "'";
}

/// Attributes of pipeline parallelism (PipelineStages.cpp, Autodiff.cpp,
/// Pipeline.cpp and Microbatch.cpp say what each means).
static bool isPipelineAttr(StringRef name) {
  return llvm::is_contained(
      {"braid.stage", "braid.backward", "braid.microbatches", "braid.pipeline",
       "braid.pipeline_entries", "braid.pipeline_rank", "braid.pipeline_chunk",
       "braid.gradient_copies", "braid.peak_live_microbatches"},
      name);
}

/// `braid.result_layouts` (set by --braid-partition's record-layouts; dumps
/// of split or partial activations assemble the global tensor by it): one
/// dictionary per result, empty or holding braid.global_shape and
/// braid.split, and braid.partial (grid axis names) for a partial sum.
static LogicalResult verifyResultLayouts(Operation *op, NamedAttribute attr) {
  auto layouts = dyn_cast<ArrayAttr>(attr.getValue());
  auto valid = [](Attribute a) {
    auto d = dyn_cast<DictionaryAttr>(a);
    if (!d || d.empty())
      return bool(d);
    auto partial = d.get("braid.partial");
    return d.size() == (partial ? 3u : 2u) &&
           isa_and_nonnull<DenseI64ArrayAttr>(d.get("braid.global_shape")) &&
           isa_and_nonnull<ArrayAttr>(d.get("braid.split")) &&
           (!partial || isa<ArrayAttr>(partial));
  };
  if (!layouts || layouts.size() != op->getNumResults() ||
      !llvm::all_of(layouts, valid))
    return op->emitError("'braid.result_layouts' must hold one dictionary "
                         "per result, empty or with braid.global_shape, "
                         "braid.split and optionally braid.partial");
  return success();
}

static LogicalResult verifyPipelineAttr(Operation *op, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  auto nonNegative = [&](Attribute v) {
    auto i = dyn_cast<IntegerAttr>(v);
    return i && i.getType().isInteger(64) && i.getInt() >= 0;
  };
  if ((name == "braid.stage" || name == "braid.pipeline_rank" ||
       name == "braid.peak_live_microbatches") &&
      !nonNegative(value))
    return op->emitError("'") << name << "' must be a non-negative i64";
  if (name == "braid.microbatches" &&
      !(nonNegative(value) && cast<IntegerAttr>(value).getInt() >= 1))
    return op->emitError("'braid.microbatches' must be a positive i64");
  if ((name == "braid.backward" || name == "braid.pipeline_chunk") &&
      !isa<UnitAttr>(value))
    return op->emitError("'") << name << "' must be a unit attribute";
  if (name == "braid.pipeline" &&
      !(isa<DictionaryAttr>(value) && isa<func::FuncOp>(op)))
    return op->emitError("'braid.pipeline' must be a dictionary on a "
                         "func.func");
  if (name == "braid.gradient_copies" && !isa<DenseI64ArrayAttr>(value))
    return op->emitError("'braid.gradient_copies' must be an i64 array");
  if (name == "braid.pipeline_entries") {
    auto entries = dyn_cast<ArrayAttr>(value);
    if (!isa<ModuleOp>(op) || !entries ||
        !llvm::all_of(entries, llvm::IsaPred<FlatSymbolRefAttr>))
      return op->emitError("'braid.pipeline_entries' must be an array of "
                           "symbol references on a module");
    SymbolTable symbols(op);
    for (Attribute entry : entries)
      if (!isa_and_nonnull<func::FuncOp>(
              symbols.lookup(cast<FlatSymbolRefAttr>(entry).getValue())))
        return op->emitError("'braid.pipeline_entries' names ")
               << entry << ", which is not a function of the module";
  }
  return success();
}

/// `braid.entry` (EntryPoints.h): a program's entry point is a public
/// func.func with a body, marked with the keyword of its kind.
static LogicalResult verifyEntryAttr(Operation *op, NamedAttribute attr) {
  auto func = dyn_cast<func::FuncOp>(op);
  if (!func)
    return op->emitError("'") << kEntryAttrName << "' must be on a func.func";
  auto kind = dyn_cast<StringAttr>(attr.getValue());
  if (!kind || !symbolizeEntryKind(kind.getValue()))
    return op->emitError("'")
           << kEntryAttrName << "' must be one of \"train_step\", \"forward\", "
           << "\"prefill\" or \"decode\", found " << attr.getValue();
  if (func.isExternal() || !func.isPublic())
    return op->emitError("'") << kEntryAttrName
                              << "' marks a public function with a body";
  return success();
}

LogicalResult BraidDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  if (attr.getName() == kEntryAttrName)
    return verifyEntryAttr(op, attr);
  // The parameters whose gradients a differentiated step returns after its
  // loss, in order (set by --braid-autodiff, consumed by --braid-optimizer).
  if (attr.getName() == "braid.gradients") {
    auto names = dyn_cast<ArrayAttr>(attr.getValue());
    if (!isa<func::FuncOp>(op) || !names ||
        !llvm::all_of(names, llvm::IsaPred<FlatSymbolRefAttr>))
      return op->emitError("'braid.gradients' must be an array of symbol "
                           "references on a func.func");
    // One table for all the names (a scan of the module per name made the
    // verifier quadratic in the layers).
    Operation *tableOp = SymbolTable::getNearestSymbolTable(op->getParentOp());
    if (!tableOp)
      return op->emitError("'braid.gradients' needs an enclosing module");
    SymbolTable symbols(tableOp);
    for (Attribute name : names)
      if (!isa_and_nonnull<ParamOp>(
              symbols.lookup(cast<FlatSymbolRefAttr>(name).getValue())))
        return op->emitError("'braid.gradients' names ")
               << name << ", which is not a braid.param";
    return success();
  }
  if (attr.getName() == "braid.axes") {
    // The names of a shard.grid's axes, in order.
    auto names = dyn_cast<ArrayAttr>(attr.getValue());
    auto grid = dyn_cast<shard::GridOp>(op);
    if (!grid || !names || !llvm::all_of(names, llvm::IsaPred<StringAttr>) ||
        names.size() != grid.getShape().size())
      return op->emitError("'braid.axes' must name each axis of a shard.grid "
                           "with a string");
    llvm::StringSet<> seen;
    for (Attribute name : names)
      if (!seen.insert(cast<StringAttr>(name).getValue()).second)
        return op->emitError("'braid.axes' names axis ")
               << name << " twice";
    return success();
  }
  if (attr.getName() == "braid.split" || attr.getName() == "braid.global_shape")
    return verifyShardAttr(op, attr);
  if (attr.getName() == "braid.result_layouts")
    return verifyResultLayouts(op, attr);
  // The grid axes a parameter's optimizer update is ZeRO-sharded over (set
  // by --convert-braid-to-dist, which expands the update; dumps of its
  // ZeRO-2 gradient describe their sharding by it).
  if (attr.getName() == "braid.zero_axes") {
    auto names = dyn_cast<ArrayAttr>(attr.getValue());
    if (!isa<ParamOp>(op) || !names || names.empty() ||
        !llvm::all_of(names, llvm::IsaPred<StringAttr>))
      return op->emitError("'braid.zero_axes' must be a non-empty array of "
                           "grid axis names on a braid.param");
    return success();
  }
  if (attr.getName() == "braid.zero") {
    auto stage = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !stage || stage.getInt() < 0 || stage.getInt() > 3)
      return op->emitError("'braid.zero' must be a ZeRO stage 0-3 on a module");
    return success();
  }
  // What completes a step's persistent tensors after it (set by
  // --braid-schedule-overlap, which defers ZeRO's parameter gathers to the
  // next step): a function of no arguments and no results.
  if (attr.getName() == "braid.finish") {
    auto name = dyn_cast<FlatSymbolRefAttr>(attr.getValue());
    if (!isa<func::FuncOp>(op) || !name)
      return op->emitError("'braid.finish' must be a symbol reference on a func.func");
    Operation *tableOp = SymbolTable::getNearestSymbolTable(op->getParentOp());
    auto finish = tableOp ? dyn_cast_or_null<func::FuncOp>(
                                SymbolTable::lookupSymbolIn(tableOp, name))
                          : func::FuncOp();
    if (!finish)
      return op->emitError("'braid.finish' names ") << name << ", which is not a func.func";
    if (finish.getNumArguments() != 0 || finish.getNumResults() != 0)
      return op->emitError("'braid.finish' names ")
             << name << ", which must take no arguments and return nothing, not "
             << finish.getFunctionType();
    return success();
  }
  // Context parallelism with zigzag load balancing: the grid axis whose
  // splits hold sequences in zigzag order (set by --braid-partition).
  if (attr.getName() == "braid.zigzag_axis") {
    auto axis = dyn_cast<StringAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !axis || axis.getValue().empty())
      return op->emitError("'braid.zigzag_axis' must name a grid axis with a "
                           "string on a module");
    return success();
  }
  if (failed(verifyPipelineAttr(op, attr)))
    return failure();
  if (isPipelineAttr(attr.getName().getValue()))
    return success();
  if (attr.getName() != getModelAttrName())
    return op->emitError() << "unknown braid attribute '" << attr.getName().getValue()
                           << "'";
  if (!isa<ModuleOp>(op))
    return op->emitError() << "'" << getModelAttrName()
                           << "' must be attached to a builtin.module";
  auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
  if (!dict)
    return op->emitError() << "'" << getModelAttrName()
                           << "' must be a dictionary, found "
                           << attr.getValue();
  for (StringRef key : {"name", "family"})
    if (!isa_and_nonnull<StringAttr>(dict.get(key)))
      return op->emitError() << "'" << getModelAttrName()
                             << "' needs a string entry '" << key << "'";
  for (NamedAttribute entry : dict) {
    auto isScalar = [](Attribute a) {
      return isa<IntegerAttr, FloatAttr, StringAttr, BoolAttr>(a);
    };
    Attribute value = entry.getValue();
    bool ok = isScalar(value);
    if (auto array = dyn_cast<ArrayAttr>(value))
      ok = llvm::all_of(array, isScalar);
    if (!ok)
      return op->emitError()
             << "'" << getModelAttrName() << "' entry '" << entry.getName().getValue()
             << "' must be an integer, float, string, bool or array of those";
  }
  return success();
}
