//===- BraidDialect.cpp - braid dialect registration and attributes -------===//

#include "dialects/braid/IR/BraidDialect.h"
#include "dialects/braid/IR/BraidOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
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
LogicalResult BraidDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  // The parameters whose gradients a differentiated step returns after its
  // loss, in order (set by --braid-autodiff, consumed by --braid-optimizer).
  if (attr.getName() == "braid.gradients") {
    auto names = dyn_cast<ArrayAttr>(attr.getValue());
    if (!isa<func::FuncOp>(op) || !names ||
        !llvm::all_of(names, llvm::IsaPred<FlatSymbolRefAttr>))
      return op->emitError("'braid.gradients' must be an array of symbol "
                           "references on a func.func");
    for (Attribute name : names)
      if (!isa_and_nonnull<ParamOp>(SymbolTable::lookupNearestSymbolFrom(
              op, cast<FlatSymbolRefAttr>(name))))
        return op->emitError("'braid.gradients' names ")
               << name << ", which is not a braid.param";
    return success();
  }
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
