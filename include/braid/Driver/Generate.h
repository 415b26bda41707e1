//===- Generate.h - compile a model's inference programs and generate -*- C++ -*-===//
//
// braid-run MODEL --generate N: the model's prefill, decode and forward
// programs (--braid-derive-inference) are emitted, linked into one binary
// and run by the runtime's generation driver (runtime/src/
// driver_generate.cpp: requests, sampling, the summary, --verify-forward).
// One rank for now (issue 42).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DRIVER_GENERATE_H
#define BRAID_DRIVER_GENERATE_H

#include "braid/Driver/Run.h"

#include <string>

namespace braid::driver {

/// What braid-run's generation flags ask for.
struct GenerateOptions {
  int64_t tokens = 0;              ///< --generate N
  int64_t batch = 0, context = 0;  ///< 0: the pass's defaults
  int64_t promptLen = 0;           ///< 0: the longest --prompts line, else the pass's
  std::string promptsFile;
  double temperature = 0;
  int64_t topK = 0;
  double topP = 1;
};

/// Derives the inference programs of `module` (in place), builds them into
/// one binary and runs it with `options` (seed, quiet, threads, emit-cpp,
/// compile-only; `options.verify`: teacher forcing); the exit code.
int generateModel(mlir::ModuleOp module,
                  const TrainingPipelineOptions &pipeline,
                  const RunOptions &options, const GenerateOptions &generate);

} // namespace braid::driver

#endif // BRAID_DRIVER_GENERATE_H
