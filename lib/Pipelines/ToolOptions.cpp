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
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"

#include <deque>

namespace braid {

/// Each option's value as the pipeline's text gives it ({dtype=f32 lr=...}),
/// numbers in their shortest form ("0.001", not "1.000000e-03"); options at
/// an empty default (a list, the grid) have none.
static llvm::StringMap<std::string>
printedValues(const TrainingPipelineOptions &options) {
  std::string text;
  llvm::raw_string_ostream os(text);
  options.print(os);
  llvm::StringMap<std::string> values;
  llvm::SmallVector<llvm::StringRef> items;
  llvm::StringRef(text).trim().trim("{}").split(items, ' ', -1, false);
  for (llvm::StringRef item : items) {
    auto [name, value] = item.split('=');
    double number;
    if (value.contains_insensitive("e") && !value.getAsDouble(number)) {
      std::string shortest;
      llvm::raw_string_ostream(shortest) << llvm::format("%g", number);
      values[name] = shortest;
    } else if (!value.empty()) {
      values[name] = value.str();
    }
  }
  return values;
}

void TrainingPipelineOptions::addToCommandLine(
    llvm::function_ref<llvm::cl::OptionCategory *(llvm::StringRef)> categoryOf) {
  // The descriptions with their defaults live as long as the options.
  static std::deque<std::string> descriptions;
  llvm::StringMap<std::string> defaults = printedValues(*this);
  // PassOptions keeps its options in a llvm::cl::SubCommand of its own (a
  // protected base): they are taken from there, and registered again at the
  // top level, in the tool's categories.
  llvm::cl::SubCommand &own = *this;
  llvm::SmallVector<std::pair<llvm::cl::Option *, llvm::cl::OptionCategory *>> moved;
  for (auto &entry : own.OptionsMap)
    if (llvm::cl::OptionCategory *category = categoryOf(entry.first))
      moved.push_back({entry.second, category});
  for (auto [option, category] : moved) {
    option->removeArgument();
    option->Subs.clear();
    option->addSubCommand(llvm::cl::SubCommand::getTopLevel());
    option->Categories.assign({category});
    // A switch shows its default only when it is on; a choice lists its
    // values, and the default is one of them.
    auto value = defaults.find(option->ArgStr);
    if (value != defaults.end() && value->second != "false") {
      descriptions.push_back(
          (option->HelpStr + " (default: " + value->second + ")").str());
      option->setDescription(descriptions.back());
    }
    option->addArgument();
  }
}

} // namespace braid
