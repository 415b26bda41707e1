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

/// Emits the program `program` of a module lowered by the training pipeline
/// (an entry point, or a pipeline rank's step; empty: the module's only
/// program) as C++ (compiles with the host compiler against the
/// CPU runtime and with nvcc against the CUDA one); `rollRepeats` prints
/// repeated statement groups (layers, micro-batches) as loops. The text goes
/// to `callback` in pieces.
MLIR_CAPI_EXPORTED MlirLogicalResult braidEmitCpp(MlirModule module,
                                                  MlirStringRef program,
                                                  bool rollRepeats,
                                                  MlirStringCallback callback,
                                                  void *userData);

/// The names of the programs of a lowered module, one per call of `callback`
/// in order: a pipelined module's ranks' steps (braid.pipeline_entries),
/// else its entry points (functions marked braid.entry). Each is a name
/// braidEmitCpp takes.
MLIR_CAPI_EXPORTED void braidGetPrograms(MlirModule module,
                                         MlirStringCallback callback,
                                         void *userData);

#ifdef __cplusplus
}
#endif

#endif // BRAID_C_TARGET_H
