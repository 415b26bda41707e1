//===- Model.cpp - parse a model with the names it was written with -------===//

#include "braid/Driver/Compile.h"
#include "braid/Driver/Run.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/AsmParser/AsmParserState.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace braid::driver {

/// Names every op after the SSA name of its first result in the source, so
/// that dumps and traces use the names the model was written with; the
/// original file location stays inside the NameLoc for diagnostics.
static void nameOpsFromSource(ModuleOp module, const AsmParserState &state) {
  module.walk([&](Operation *op) {
    const AsmParserState::OperationDefinition *def = state.getOpDef(op);
    if (!def || def->resultGroups.empty())
      return;
    llvm::SMRange range = def->resultGroups.front().definition.loc;
    StringRef name(range.Start.getPointer(),
                   range.End.getPointer() - range.Start.getPointer());
    name = name.ltrim("%");
    name = name.take_until([](char c) { return c == '#' || c == ':'; });
    if (!name.empty() && !llvm::all_of(name, llvm::isDigit))
      op->setLoc(
          NameLoc::get(StringAttr::get(op->getContext(), name), op->getLoc()));
  });
}

OwningOpRef<ModuleOp> parseModel(llvm::SourceMgr &sourceMgr,
                                 MLIRContext *context) {
  Block block;
  AsmParserState state;
  ParserConfig config(context);
  if (failed(parseAsmSourceFile(sourceMgr, &block, config, &state)))
    return nullptr;
  if (block.getOperations().size() != 1 ||
      !isa<ModuleOp>(block.getOperations().front())) {
    StringRef name = sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())
                         ->getBufferIdentifier();
    fail("expected one builtin.module in " + name);
    return nullptr;
  }
  OwningOpRef<ModuleOp> module(cast<ModuleOp>(&block.front()));
  module->getOperation()->remove();
  if (failed(verify(*module)))
    return nullptr;
  nameOpsFromSource(*module, state);
  return module;
}

} // namespace braid::driver
