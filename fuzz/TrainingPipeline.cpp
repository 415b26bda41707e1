//===- TrainingPipeline.cpp - fuzz target: the training pipeline ----------===//
//
// The input's last bytes choose the pipeline's options (a grid, sequence
// parallelism, a ZeRO stage, micro-batches, precision, recompute, the
// overlap scheduler, the layouts braid-run records); the rest is a model. A
// model that parses and verifies goes through --braid-training-pipeline with
// those options, and each program it lowers to (one per pipeline stage) is
// emitted as C++, as braid-run does before building: the static memory
// plan, the fused kernels, the rolled repeats. A located error or a program,
// never a crash. Seeds: the models the test suite builds
// (test/Fuzz/training-pipeline.py writes them with python/braid.models).
//
//===----------------------------------------------------------------------===//

#include "FuzzContext.h"
#include "braid/Driver/Compile.h"
#include "braid/InitAllPasses.h"
#include "braid/Pipelines.h"
#include "braid/Target/Cpp.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace {

/// The options the bytes pick, as --braid-training-pipeline="..." takes them.
/// Grids are small (at most 8 ranks) as the test models are; every axis the
/// pipeline knows appears in some grid.
std::string pickOptions(FuzzedDataProvider &in) {
  static const char *grids[] = {"",          "dp=2",      "tp=2",      "dp=2,tp=2", "pp=2",
                                "pp=2,dp=2", "cp=2",      "cp=2,dp=2", "ep=2",      "dp=2,ep=2",
                                "tp=4",      "pp=2,tp=2", "dp=4",      "dp=2,cp=2,tp=2",
                                "pp=4",      "dp=3"};
  static const char *dtypes[] = {"f32", "bf16", "f16"};
  static const char *recomputes[] = {"none", "selective", "full"};
  static const char *schedules[] = {"1f1b", "gpipe", "interleaved", "zb-h1"};
  static const char *cpAttention[] = {"allgather", "ulysses", "ring"};
  std::string o = "grid=";
  o += grids[in.ConsumeIntegralInRange<size_t>(0, std::size(grids) - 1)];
  o += " zero=" + std::to_string(in.ConsumeIntegralInRange<int>(0, 3));
  o += " microbatches=" + std::to_string(in.ConsumeIntegralInRange<int>(1, 4));
  o += " sequence-parallel=" + std::string(in.ConsumeBool() ? "true" : "false");
  o += " dtype=" + std::string(dtypes[in.ConsumeIntegralInRange<size_t>(0, 2)]);
  o += " recompute=" + std::string(recomputes[in.ConsumeIntegralInRange<size_t>(0, 2)]);
  o += " schedule=" + std::string(schedules[in.ConsumeIntegralInRange<size_t>(0, 3)]);
  o += " cp-attention=" + std::string(cpAttention[in.ConsumeIntegralInRange<size_t>(0, 2)]);
  o += " schedule-overlap=" + std::string(in.ConsumeBool() ? "true" : "false");
  if (in.ConsumeBool())
    o += " virtual-stages=2";
  // What braid-run adds for global dumps (the emitter reads it); braid-opt's
  // users leave it off.
  o += " record-layouts=" + std::string(in.ConsumeBool() ? "true" : "false");
  return o;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const bool passes = (braid::registerAllPasses(), true);
  (void)passes;
  mlir::MLIRContext &ctx = braid::fuzz::context();
  braid::fuzz::QuietDiagnostics quiet(ctx);
  FuzzedDataProvider in(data, size);
  std::string options = pickOptions(in); // from the input's end
  std::string text = in.ConsumeRemainingBytesAsString();
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(text, &ctx);
  if (!module)
    return 0;
  auto parsed = braid::TrainingPipelineOptions::createFromString(options);
  if (!parsed) {
    if (braid::fuzz::verbose())
      llvm::errs() << "braid-fuzz-pipeline: bad options " << options << "\n";
    return 0;
  }
  mlir::PassManager pm(&ctx);
  if (mlir::failed(braid::buildTrainingPipeline(pm, *parsed)))
    return 0;
  if (mlir::failed(pm.run(*module)))
    return 0;
  // The programs braid-run emits: one per pipeline stage, or the entry point.
  mlir::FailureOr<llvm::SmallVector<std::string>> entries =
      braid::driver::programEntries(*module);
  if (mlir::failed(entries))
    return 0;
  for (const std::string &entry : *entries) {
    std::string source;
    llvm::raw_string_ostream os(source);
    if (mlir::failed(braid::emitProgramAsCpp(*module, entry, os)))
      return 0;
  }
  if (braid::fuzz::verbose())
    llvm::errs() << "braid-fuzz-pipeline: " << options << ": programs emitted\n";
  return 0;
}
