//===- BraidDialect.h - braid dialect declaration ---------------*- C++ -*-===//
#ifndef BRAID_DIALECT_BRAID_IR_BRAIDDIALECT_H
#define BRAID_DIALECT_BRAID_IR_BRAIDDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dialect.h"

#include "dialects/braid/IR/BraidDialect.h.inc"

#endif // BRAID_DIALECT_BRAID_IR_BRAIDDIALECT_H
