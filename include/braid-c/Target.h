//===-- braid-c/Target.h - C API of the plan printer and emitter --*- C -*-===//
//
// What a lowered module is turned into: the report of its parallel plan
// (--braid-print-plan) and the C++ source of a program (braid-translate
// --braid-to-cpp), the text the driver builds against the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_C_TARGET_H
#define BRAID_C_TARGET_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Runs --braid-print-plan with `passOptions` (its textual options, e.g.
/// "hardware=h200-sxm"; empty: the defaults) on a module lowered by the
/// training pipeline: the plan is printed on stdout, the module unchanged.
/// (Registers Braid's passes, as braidRegisterAllPasses.)
MLIR_CAPI_EXPORTED MlirLogicalResult braidPrintPlan(MlirModule module,
                                                    MlirStringRef passOptions);

/// Emits the program whose step function is `entry` of a module lowered by
/// the training pipeline as C++ (compiles with the host compiler against the
/// CPU runtime and with nvcc against the CUDA one); `rollRepeats` prints
/// repeated statement groups (layers, micro-batches) as loops. The text goes
/// to `callback` in pieces.
MLIR_CAPI_EXPORTED MlirLogicalResult braidEmitCpp(MlirModule module,
                                                  MlirStringRef entry,
                                                  bool rollRepeats,
                                                  MlirStringCallback callback,
                                                  void *userData);

#ifdef __cplusplus
}
#endif

#endif // BRAID_C_TARGET_H
