//===- DistDialect.h - the dist dialect ---------------------------*- C++ -*-===//

#ifndef BRAID_DIALECT_DIST_IR_DISTDIALECT_H
#define BRAID_DIALECT_DIST_IR_DISTDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/dist/IR/DistDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/dist/IR/DistOps.h.inc"

#endif // BRAID_DIALECT_DIST_IR_DISTDIALECT_H
