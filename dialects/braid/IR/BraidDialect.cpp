//===- BraidDialect.cpp - braid dialect registration -----------------------===//

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
