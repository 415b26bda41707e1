//===- Version.h - Braid's version and the commit it was built from -*- C++ -*-===//
//
// What --version prints on every Braid tool, and what the C API
// (braidGetVersion) and Python (braid.__version__) report: the project's
// version (CMakeLists.txt) and the git commit the build was made from, read
// at build time (cmake/BraidVersion.cmake).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_SUPPORT_VERSION_H
#define BRAID_SUPPORT_VERSION_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

namespace braid {

/// Braid's version, "MAJOR.MINOR.PATCH".
llvm::StringRef getVersion();

/// The abbreviated hash of the commit the build was made from; empty when
/// the sources were not a git checkout (a release tarball).
llvm::StringRef getCommit();

/// The date of that commit (YYYY-MM-DD); empty without a commit.
llvm::StringRef getCommitDate();

/// Prints the version block of --version: Braid's version and commit, then
/// the LLVM/MLIR release it was built against.
void printVersion(llvm::raw_ostream &os);

} // namespace braid

#endif // BRAID_SUPPORT_VERSION_H
