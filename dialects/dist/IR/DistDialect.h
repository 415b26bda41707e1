//===- DistDialect.h - the dist dialect ---------------------------*- C++ -*-===//

#ifndef BRAID_DIALECT_DIST_IR_DISTDIALECT_H
#define BRAID_DIALECT_DIST_IR_DISTDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/dist/IR/DistDialect.h.inc"
#include "dialects/dist/IR/DistEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/dist/IR/DistTypes.h.inc"

#define GET_OP_CLASSES
#include "dialects/dist/IR/DistOps.h.inc"

namespace mlir::dist {

/// The dist.wait that completes `token` (nullptr when it has none, which
/// the verifier rejects).
WaitOp getWait(Value token);

/// The !dist.token `op` returns: a transfer's; null for any other op.
Value getToken(Operation *op);

/// The group size of a transfer on `grid` over `axes` (0 when the grid or
/// an axis is missing).
int64_t getGroupSize(Operation *anchor, FlatSymbolRefAttr grid,
                     ArrayRef<int16_t> axes);

} // namespace mlir::dist

#endif // BRAID_DIALECT_DIST_IR_DISTDIALECT_H
