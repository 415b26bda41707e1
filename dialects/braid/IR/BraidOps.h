//===- BraidOps.h - braid dialect operations --------------------*- C++ -*-===//
#ifndef BRAID_DIALECT_BRAID_IR_BRAIDOPS_H
#define BRAID_DIALECT_BRAID_IR_BRAIDOPS_H

#include "dialects/braid/IR/BraidDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/braid/IR/BraidEnums.h"
#include "dialects/braid/IR/BraidInterfaces.h"

#define GET_ATTRDEF_CLASSES
#include "dialects/braid/IR/BraidAttrs.h.inc"

#define GET_OP_CLASSES
#include "dialects/braid/IR/BraidOps.h.inc"

#endif // BRAID_DIALECT_BRAID_IR_BRAIDOPS_H
