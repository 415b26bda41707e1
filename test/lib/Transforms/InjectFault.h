//===- InjectFault.h - break a partitioned program on purpose ---*- C++ -*-===//
//
// The test pass --braid-test-inject-fault (InjectFault.cpp says what each
// fault does), for braid-opt and braid-run's hidden --inject-fault.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_TEST_LIB_TRANSFORMS_INJECTFAULT_H
#define BRAID_TEST_LIB_TRANSFORMS_INJECTFAULT_H

#include "mlir/Pass/Pass.h"
#include "llvm/ADT/SmallVector.h"

#include <memory>

namespace braid::test {

/// The faults the pass knows.
llvm::SmallVector<llvm::StringRef> faultKinds();

/// The pass injecting fault `kind`.
std::unique_ptr<mlir::Pass> createInjectFaultPass(llvm::StringRef kind);

/// Registers --braid-test-inject-fault.
void registerTestPasses();

} // namespace braid::test

#endif // BRAID_TEST_LIB_TRANSFORMS_INJECTFAULT_H
