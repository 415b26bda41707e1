//===- Launch.cpp - run the programs braid-run builds ---------------------===//

#include "braid/Driver/Launch.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <unistd.h>

using namespace llvm;

namespace braid::driver {

int execute(StringRef program, ArrayRef<std::string> args,
            std::optional<StringRef> stdoutFile) {
  SmallVector<StringRef> argv = {program};
  for (const std::string &arg : args)
    argv.push_back(arg);
  std::string error;
  // Programs read nothing; stdin from /dev/null ("") keeps mpirun, which
  // forwards its stdin to rank 0, from consuming a caller's script.
  std::optional<StringRef> redirects[] = {StringRef(""), stdoutFile,
                                          std::nullopt};
  int rc = llvm::sys::ExecuteAndWait(program, argv, std::nullopt, redirects, 0,
                                     0, &error);
  if (rc < 0)
    llvm::errs() << "braid-run: cannot run " << program << ": " << error
                 << "\n";
  return rc;
}

int runPrograms(ArrayRef<std::string> binaries, int64_t ranks,
                StringRef gridSpec, ArrayRef<std::string> args,
                std::optional<StringRef> stdoutFile, ArrayRef<int64_t> counts) {
  const int64_t programs = binaries.size();
  if (programs == 0 || (counts.empty() && ranks % programs != 0) ||
      (!counts.empty() && counts.size() != binaries.size())) {
    llvm::errs() << "braid-run: --grid " << gridSpec << " has " << ranks
                 << " ranks, which " << programs
                 << " pipeline stages cannot share evenly\n";
    return 1;
  }
  if (ranks == 1)
    return execute(binaries.front(), args, stdoutFile);
  llvm::ErrorOr<std::string> launcher = llvm::sys::findProgramByName("mpirun");
  if (!launcher)
    launcher = llvm::sys::findProgramByName("mpiexec");
  if (!launcher) {
    llvm::errs() << "braid-run: --grid " << gridSpec << " runs " << ranks
                 << " ranks, which needs mpirun on PATH (e.g. apt-get install "
                    "openmpi-bin)\n";
    return 1;
  }
  SmallVector<std::string> full;
  // Open MPI refuses more ranks than cores, and root, unless told.
  llvm::SmallString<128> versionFile;
  if (!llvm::sys::fs::createTemporaryFile("braid-run-mpirun", "txt",
                                          versionFile)) {
    std::optional<StringRef> redirects[] = {
        std::nullopt, StringRef(versionFile), StringRef(versionFile)};
    StringRef argv[] = {*launcher, "--version"};
    llvm::sys::ExecuteAndWait(*launcher, argv, std::nullopt, redirects);
    auto text = llvm::MemoryBuffer::getFile(versionFile);
    if (text && ((*text)->getBuffer().contains("Open MPI") ||
                 (*text)->getBuffer().contains("OpenRTE"))) {
      full.push_back("--oversubscribe");
      if (geteuid() == 0)
        full.push_back("--allow-run-as-root");
    }
    llvm::sys::fs::remove(versionFile);
  }
  // One app context per program; those flags above are global, and each
  // context gets its ranks in order, which is what puts stage S on
  // [S*K, (S+1)*K).
  for (const auto &[index, binary] : llvm::enumerate(binaries)) {
    if (index > 0)
      full.push_back(":");
    const int64_t count = counts.empty() ? ranks / programs : counts[index];
    full.append({"-np", std::to_string(count), binary});
    full.append(args.begin(), args.end());
  }
  return execute(*launcher, full, stdoutFile);
}

int runCaptured(ArrayRef<std::string> binaries, int64_t ranks,
                StringRef gridSpec, ArrayRef<std::string> args,
                std::string &text, bool echo, ArrayRef<int64_t> counts) {
  llvm::SmallString<128> file;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("braid-run", "out", file)) {
    llvm::errs() << "braid-run: cannot create a temporary file: "
                 << ec.message() << "\n";
    return 1;
  }
  int rc = runPrograms(binaries, ranks, gridSpec, args, StringRef(file), counts);
  if (auto buffer = llvm::MemoryBuffer::getFile(file))
    text = (*buffer)->getBuffer().str();
  llvm::sys::fs::remove(file);
  if (echo || rc != 0) {
    llvm::outs() << text;
    llvm::outs().flush();
  }
  return rc;
}

} // namespace braid::driver
