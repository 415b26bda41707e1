//===- CommandLine.cpp - what Braid's tools share on their command line ---===//

#include "braid/Support/CommandLine.h"
#include "braid/Support/Version.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <optional>

namespace cl = llvm::cl;
using llvm::StringRef;

void braid::installVersionPrinter() {
  cl::SetVersionPrinter([](llvm::raw_ostream &os) { printVersion(os); });
}

/// Whether `option` is one of LLVM's generic options (--help, --version,
/// --print-options, ...), which every tool keeps; their category is private
/// to LLVM's parser, and known by its name.
static bool isGeneric(const cl::Option &option) {
  return llvm::any_of(option.Categories, [](const cl::OptionCategory *category) {
    return category->getName() == "Generic Options";
  });
}

void braid::hideLibraryOptions() {
  for (auto &entry : cl::getRegisteredOptions()) {
    cl::Option *option = entry.second;
    if (option->getOptionHiddenFlag() == cl::NotHidden && !isGeneric(*option))
      option->setHiddenFlag(cl::Hidden);
  }
}

/// The option --help lists whose name is closest to `name`, if one is close
/// enough to be what was meant.
static std::optional<std::string> closestOption(StringRef name) {
  std::optional<std::string> best;
  unsigned bestDistance = std::max<unsigned>(2, name.size() / 3) + 1;
  for (auto &entry : cl::getRegisteredOptions()) {
    if (entry.second->getOptionHiddenFlag() != cl::NotHidden)
      continue;
    unsigned distance = name.edit_distance(entry.first, true, bestDistance);
    if (distance < bestDistance) {
      bestDistance = distance;
      best = entry.first.str();
    }
  }
  return best;
}

/// LLVM's parser reports an unknown option as "P: Unknown command line
/// argument '--grdi'.  Try: ..." (and "P: Did you mean '--grid'?"), then takes
/// its value for a positional argument: "P: Too many positional arguments
/// specified!" and "Can specify at most ...". Rewrites `errors` so that an
/// unknown option is named alone, with the closest option --help lists; other
/// messages pass unchanged.
static std::string rewriteUnknownOptions(StringRef errors, StringRef program) {
  llvm::SmallVector<StringRef> lines;
  errors.split(lines, '\n', -1, /*KeepEmpty=*/false);
  const StringRef unknown = ": Unknown command line argument '";
  bool anyUnknown = llvm::any_of(lines, [&](StringRef line) {
    return line.contains(unknown);
  });
  std::string out;
  llvm::raw_string_ostream os(out);
  for (size_t i = 0; i < lines.size(); ++i) {
    StringRef line = lines[i];
    size_t at = line.find(unknown);
    if (at != StringRef::npos) {
      StringRef arg = line.drop_front(at + unknown.size());
      arg = arg.take_until([](char c) { return c == '\''; });
      StringRef flag = arg.take_until([](char c) { return c == '='; });
      os << program << ": unknown option '" << flag << "'";
      if (std::optional<std::string> near = closestOption(flag.ltrim('-')))
        os << ", did you mean '" << (near->size() == 1 ? "-" : "--") << *near
           << "'?";
      else
        os << " (" << program << " --help lists the options)";
      os << "\n";
      continue;
    }
    // LLVM's own suggestion (replaced above) and, after an unknown option,
    // the positional complaint its value caused.
    if (line.contains(": Did you mean '"))
      continue;
    if (anyUnknown && line.contains(": Too many positional arguments")) {
      if (i + 1 < lines.size() && lines[i + 1].starts_with("Can specify at most"))
        ++i;
      continue;
    }
    os << line << "\n";
  }
  return out;
}

void braid::parseToolCommandLine(int argc, const char *const *argv,
                                 StringRef overview) {
  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  if (cl::ParseCommandLineOptions(argc, argv, overview, &errorStream))
    return;
  StringRef program = llvm::sys::path::filename(argv[0]);
  llvm::errs() << rewriteUnknownOptions(errors, program);
  std::exit(1);
}
