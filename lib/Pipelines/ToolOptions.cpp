//===- ToolOptions.cpp - the pipeline's options as a tool's flags ---------===//
//
// braid-run takes the training pipeline's options as flags of its own
// (--grid, --zero, ...). Rather than a second list of cl::opts copied into
// the struct, the struct's own options move from its private option set to
// the tool's top-level command line: each is defined once, in Pipelines.h,
// with its default and its help.
//
//===----------------------------------------------------------------------===//

#include "braid/Pipelines.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"

namespace braid {

void TrainingPipelineOptions::addToCommandLine(
    llvm::cl::OptionCategory &category, llvm::ArrayRef<llvm::StringRef> keep) {
  // PassOptions keeps its options in a llvm::cl::SubCommand of its own (a
  // protected base): they are taken from there, and registered again at the
  // top level, in the tool's category.
  llvm::cl::SubCommand &own = *this;
  llvm::SmallVector<llvm::cl::Option *> moved;
  for (auto &entry : own.OptionsMap)
    if (!llvm::is_contained(keep, entry.first))
      moved.push_back(entry.second);
  for (llvm::cl::Option *option : moved) {
    option->removeArgument();
    option->Subs.clear();
    option->addSubCommand(llvm::cl::SubCommand::getTopLevel());
    option->addCategory(category);
    option->addArgument();
  }
}

} // namespace braid
