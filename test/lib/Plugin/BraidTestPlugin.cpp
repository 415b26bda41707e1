//===- BraidTestPlugin.cpp - a pass and a dialect loaded by braid-opt -----===//
//
// What an out-of-tree extension of Braid looks like: a pass over braid ops
// (here it counts a model's parameters and their elements, as a sharding
// pass would visit them) and a dialect Braid does not register (index),
// each behind the entry point MlirOptMain looks for.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/IR/BraidOps.h"

#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"

using namespace mlir;

namespace {
/// Records on the module how many braid.param ops it holds and their
/// elements (plugin.params, plugin.param_elements).
struct CountParamsPass
    : public PassWrapper<CountParamsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CountParamsPass)

  StringRef getArgument() const final {
    return "braid-test-plugin-count-params";
  }
  StringRef getDescription() const final {
    return "Count a model's parameters (a pass loaded from a plugin)";
  }

  void runOnOperation() override {
    int64_t params = 0, elements = 0;
    // isa<> of a braid op: its TypeID comes from braid-opt itself.
    getOperation().walk([&](mlir::braid::ParamOp param) {
      ++params;
      elements += cast<ShapedType>(param.getType()).getNumElements();
    });
    Builder b(&getContext());
    getOperation()->setAttr("plugin.params", b.getI64IntegerAttr(params));
    getOperation()->setAttr("plugin.param_elements",
                            b.getI64IntegerAttr(elements));
  }
};
} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "BraidTestPlugin", LLVM_VERSION_STRING,
          [] { PassRegistration<CountParamsPass>(); }};
}

extern "C" LLVM_ATTRIBUTE_WEAK DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "BraidTestPlugin", LLVM_VERSION_STRING,
          [](DialectRegistry *registry) {
            registry->insert<index::IndexDialect>();
          }};
}
