//===- Version.cpp - Braid's version and the commit it was built from -----===//

#include "braid/Support/Version.h"

// BRAID_VERSION, BRAID_GIT_COMMIT, BRAID_GIT_COMMIT_DATE: rewritten by every
// build when the commit changes (lib/Support/CMakeLists.txt).
#include "braid/Support/VersionInfo.inc"

#include "llvm/Config/llvm-config.h"

llvm::StringRef braid::getVersion() { return BRAID_VERSION; }

llvm::StringRef braid::getCommit() { return BRAID_GIT_COMMIT; }

llvm::StringRef braid::getCommitDate() { return BRAID_GIT_COMMIT_DATE; }

void braid::printVersion(llvm::raw_ostream &os) {
  os << "Braid version " << getVersion() << "\n";
  if (getCommit().empty())
    os << "  commit unknown (not built from a git checkout)\n";
  else
    os << "  commit " << getCommit() << " (" << getCommitDate() << ")\n";
  os << "  built with LLVM and MLIR " << LLVM_VERSION_STRING << "\n";
}
