//===- CommandLine.h - what Braid's tools share on their command line -*- C++ -*-===//
//
// braid-opt, braid-run, braid-plan and braid-translate: --version prints
// Braid's version (Version.h) and --help shows the tool's own options, not
// the code generators' of the LLVM libraries they link (--x86-...,
// --amdgpu-...); an unknown option is named with the closest known one.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_SUPPORT_COMMANDLINE_H
#define BRAID_SUPPORT_COMMANDLINE_H

#include "llvm/ADT/StringRef.h"

namespace braid {

/// Makes --version print Braid's version and commit, then LLVM's.
void installVersionPrinter();

/// Moves every option registered so far to --help-hidden, except the generic
/// ones (--help, --version, ...). Called first in a tool whose own options
/// are registered in main (braid-opt's passes, braid-translate's
/// translations): what is registered before is LLVM's libraries'.
void hideLibraryOptions();

/// llvm::cl::ParseCommandLineOptions, except that a mistyped option gets
/// "TOOL: unknown option '--grdi', did you mean '--grid'?" (the closest
/// option --help lists) and not the complaint about positional arguments
/// that its value, taken for one, then adds. Exits 1 after an error.
void parseToolCommandLine(int argc, const char *const *argv,
                          llvm::StringRef overview);

} // namespace braid

#endif // BRAID_SUPPORT_COMMANDLINE_H
