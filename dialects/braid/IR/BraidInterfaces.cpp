//===- BraidInterfaces.cpp - the op interfaces' definitions ---------------===//

#include "dialects/braid/IR/BraidInterfaces.h"

#include "dialects/braid/IR/BraidInterfaces.cpp.inc"
