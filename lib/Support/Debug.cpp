//===- Debug.cpp - -debug and -debug-only for Braid's LLVM_DEBUG ----------===//
//
// The switch behind braid/Support/Debug.h's DEBUG_WITH_TYPE in a build with
// NDEBUG, and the options that set it. They mean what upstream's mean:
// -debug turns every type's output on, -debug-only=a,b only a's and b's.
//
//===----------------------------------------------------------------------===//

#include "braid/Support/Debug.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"

#include <string>
#include <vector>

namespace cl = llvm::cl;

bool mlir::braid::debug::enabled = false;

/// The types -debug-only named (none: every type).
static llvm::StringSet<> &onlyTypes() {
  static llvm::StringSet<> types;
  return types;
}

bool mlir::braid::debug::isEnabled(const char *type) {
  return onlyTypes().empty() || onlyTypes().contains(type);
}

void mlir::braid::registerDebugOptions() {
  // An LLVM built with assertions has its own (a Braid file built with
  // NDEBUG against it logs nothing, as upstream's macros would not).
  const auto &registered = cl::getRegisteredOptions();
  if (registered.count("debug") || registered.count("debug-only"))
    return;
#ifdef NDEBUG
  // Braid's switch (Debug.h's DEBUG_WITH_TYPE).
  static cl::opt<bool, /*ExternalStorage=*/true> debugOption(
      "debug", cl::desc("Print the debug output of Braid's passes"),
      cl::Hidden, cl::location(debug::enabled));
  auto only = [](const std::string &type) {
    debug::enabled = true;
    onlyTypes().insert(type);
  };
#else
  // Upstream's macros are live (Braid built without NDEBUG) but a release
  // LLVM registered no options for them: these set upstream's switch.
  static cl::opt<bool, /*ExternalStorage=*/true> debugOption(
      "debug", cl::desc("Print the debug output of Braid's passes"),
      cl::Hidden, cl::location(llvm::DebugFlag));
  auto only = [](const std::string &type) {
    static std::vector<std::string> types;
    types.push_back(type);
    llvm::SmallVector<const char *> names;
    for (const std::string &t : types)
      names.push_back(t.c_str());
    llvm::DebugFlag = true;
    llvm::setCurrentDebugTypes(names.data(), names.size());
  };
#endif
  static cl::list<std::string> debugOnlyOption(
      "debug-only",
      cl::desc("Print the debug output of these Braid passes only (their "
               "flags: -debug-only=braid-partition,braid-pipeline)"),
      cl::Hidden, cl::value_desc("pass flag"), cl::CommaSeparated,
      cl::callback(only));
}
