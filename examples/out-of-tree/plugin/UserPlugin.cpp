//===- UserPlugin.cpp - a user's op and plan pass, loaded by braid-opt ----===//
//
// What extending Braid out of tree takes, built against the installed
// package (find_package(Braid): Braid::BraidHeaders) and loaded by the
// installed braid-opt:
// - a dialect with an op Braid does not have (user.softcap), whose sharding
//   rule is upstream MLIR's ShardingInterface: an elementwise op, every
//   dimension split like its input's;
// - a plan pass over braid ops (user-vocab-plan): it annotates the LM head's
//   weight column-parallel over the grid's tp axis, as a user's own sharding
//   plan would, for --braid-partition (plan=data) to propagate: the logits
//   come out split by vocabulary, the soft-cap keeps them so, and the
//   cross-entropy runs vocabulary-parallel.
// The plugin links nothing: MLIR's symbols come from libMLIR.so, Braid's
// (its ops, its Grid) from braid-opt, which exports them.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/IR/Grid.h"
#include "dialects/braid/IR/BraidOps.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterfaceImpl.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"

#include "UserDialect.h.inc"
#define GET_OP_CLASSES
#include "UserOps.h.inc"

using namespace mlir;

#include "UserDialect.cpp.inc"
#define GET_OP_CLASSES
#include "UserOps.cpp.inc"

void user::UserDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "UserOps.cpp.inc"
      >();
}

namespace {
/// Annotates every read of the parameter named by `param` (the LM head by
/// default) as split by columns over the grid's tp axis, declaring the
/// grid (`shard.grid @grid`) of `grid` for the annotations.
struct VocabPlanPass
    : public PassWrapper<VocabPlanPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(VocabPlanPass)

  VocabPlanPass() = default;
  VocabPlanPass(const VocabPlanPass &other) : PassWrapper(other) {}

  StringRef getArgument() const final { return "user-vocab-plan"; }
  StringRef getDescription() const final {
    return "Split the LM head's weight by vocabulary over tp (a user's plan)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<shard::ShardDialect>();
  }

  Option<std::string> gridOption{*this, "grid",
                                 llvm::cl::desc("the grid, as --braid-partition's")};
  Option<std::string> param{*this, "param", llvm::cl::desc("the LM head"),
                            llvm::cl::init("output")};

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string error;
    // Braid's own grid parser, resolved in braid-opt.
    FailureOr<mlir::braid::Grid> grid = mlir::braid::Grid::parse(gridOption, error);
    if (failed(grid)) {
      module.emitError("user-vocab-plan: ") << error;
      return signalPassFailure();
    }
    std::optional<int16_t> tp = grid->find("tp");
    if (!tp) {
      module.emitError("user-vocab-plan: the grid has no tp axis");
      return signalPassFailure();
    }
    OpBuilder b(module.getBodyRegion());
    auto gridOp = shard::GridOp::create(b, module.getLoc(), "grid",
                                        ArrayRef<int64_t>(grid->sizes));
    module.walk([&](mlir::braid::GetParamOp get) {
      if (get.getName() != param)
        return;
      b.setInsertionPointAfter(get);
      // [[], [tp]]: the second dimension (the vocabulary) over tp.
      SmallVector<shard::GridAxesAttr> split = {
          shard::GridAxesAttr::get(b.getContext(), {}),
          shard::GridAxesAttr::get(b.getContext(), {*tp})};
      auto sharding = shard::ShardingOp::create(
          b, get.getLoc(), FlatSymbolRefAttr::get(gridOp.getSymNameAttr()),
          split);
      auto annotated = shard::ShardOp::create(b, get.getLoc(), get.getResult(),
                                              sharding.getResult());
      get.getResult().replaceAllUsesExcept(annotated.getResult(), annotated);
    });
  }
};
} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "BraidUserPlugin", LLVM_VERSION_STRING,
          [] { PassRegistration<VocabPlanPass>(); }};
}

extern "C" LLVM_ATTRIBUTE_WEAK DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "BraidUserPlugin", LLVM_VERSION_STRING,
          [](DialectRegistry *registry) {
            registry->insert<user::UserDialect>();
            // The sharding rule: elementwise (upstream's model).
            registry->addExtension(+[](MLIRContext *ctx, user::UserDialect *) {
              user::SoftcapOp::attachInterface<
                  shard::ElementwiseShardingInterface<user::SoftcapOp>>(*ctx);
            });
          }};
}
