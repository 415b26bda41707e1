//===- InitAllPasses.cpp - passes registered by braid tools ---------------===//

#include "braid/InitAllPasses.h"

#include "braid/Conversion/Passes.h"
#include "braid/Pipelines.h"
#include "dialects/braid/Transforms/Passes.h"
#include "dialects/dist/Transforms/Passes.h"

#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

void braid::registerAllPasses() {
  // Generic passes (canonicalize, cse, inline, symbol-dce, ...).
  mlir::registerTransformsPasses();
  // Upstream sharding propagation and partitioning.
  mlir::shard::registerShardPasses();
  mlir::braid::registerBraidPasses();
  mlir::dist::registerDistPasses();
  braid::registerBraidConversionPasses();
  braid::registerTrainingPipeline();
}
