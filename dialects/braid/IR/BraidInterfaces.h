//===- BraidInterfaces.h - what each op says about itself -------*- C++ -*-===//
//
// The op interfaces of BraidInterfaces.td and the vocabulary they speak:
// sharding rules (ShardingRule.h), costs and kernel calls (OpRules.h).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_BRAIDINTERFACES_H
#define BRAID_DIALECT_BRAID_IR_BRAIDINTERFACES_H

#include "dialects/braid/IR/OpRules.h"
#include "dialects/braid/IR/ShardingRule.h"

#include "mlir/IR/OpDefinition.h"

#include "dialects/braid/IR/BraidInterfaces.h.inc"

#endif // BRAID_DIALECT_BRAID_IR_BRAIDINTERFACES_H
