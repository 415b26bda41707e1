//===- Passes.cpp - C API of Braid's passes -------------------------------===//

#include "braid-c/Passes.h"

#include "braid/InitAllPasses.h"

void braidRegisterAllPasses(void) {
  // Once: a second registration of a pipeline's name is an error in debug
  // builds of MLIR.
  static const bool registered = [] {
    braid::registerAllPasses();
    return true;
  }();
  (void)registered;
}
