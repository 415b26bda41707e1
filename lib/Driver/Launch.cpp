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

LaunchOptions &launchOptions() {
  static LaunchOptions options;
  return options;
}

namespace {

/// `word` as one word of a POSIX shell command line.
std::string shellQuoted(StringRef word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                              "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789_./=:,@%+-") == StringRef::npos)
    return word.str();
  std::string quoted = "'";
  for (char c : word)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

/// The value of `--backend` in a program's arguments ("cpu" unless given).
StringRef backendOf(ArrayRef<std::string> args) {
  for (size_t i = 0; i < args.size(); ++i) {
    StringRef arg = args[i];
    if (arg == "--backend" && i + 1 < args.size())
      return args[i + 1];
    if (arg.consume_front("--backend="))
      return arg;
  }
  return "cpu";
}

/// --launcher none: each rank's command, with the environment by which the
/// ranks find each other, for the user's own launcher. GPU ranks exchange
/// NCCL's id through the store; CPU ranks join one MPI world through it and
/// Open MPI's rendezvous server (runtime/src/comm_mpi_join.cpp).
int printCommands(ArrayRef<std::string> binaries, int64_t ranks,
                  ArrayRef<std::string> args, ArrayRef<int64_t> counts) {
  std::string store = launchOptions().store;
  if (store.empty() && ranks > 1) {
    SmallString<128> dir;
    if (std::error_code ec = sys::fs::createUniqueDirectory("braid-store", dir)) {
      errs() << "braid-run: cannot create a store directory: " << ec.message() << "\n";
      return 1;
    }
    store = dir.str().str();
  } else if (ranks > 1) {
    if (std::error_code ec = sys::fs::create_directories(store)) {
      errs() << "braid-run: --store " << store << ": " << ec.message() << "\n";
      return 1;
    }
    SmallString<128> absolute(store);
    sys::fs::make_absolute(absolute);
    store = absolute.str().str();
  }
  const bool gpu = backendOf(args) == "cuda";
  raw_ostream &os = outs();
  os << "# braid-run --launcher none: the programs are built; start each rank below with your\n"
        "# launcher, in any order. BRAID_LOCAL_RANK and BRAID_LOCAL_WORLD_SIZE assume one\n"
        "# machine: on several, set them per machine; the store must be a directory every rank\n"
        "# sees.\n";
  if (ranks > 1 && !gpu)
    os << "# First, once, Open MPI's rendezvous server, where every rank reaches it:\n"
       << "ompi-server --no-daemonize -r " << shellQuoted(store + "/ompi-server.uri")
       << " &\n";
  int64_t rank = 0;
  for (const auto &[index, binary] : llvm::enumerate(binaries)) {
    const int64_t count = counts.empty() ? ranks / int64_t(binaries.size()) : counts[index];
    for (int64_t r = 0; r < count; ++r, ++rank) {
      if (ranks > 1)
        os << (gpu ? "BRAID_NCCL_STORE=" : "BRAID_MPI_STORE=") << shellQuoted(store)
           << " BRAID_WORLD_SIZE=" << ranks << " BRAID_RANK=" << rank
           << " BRAID_LOCAL_RANK=" << rank << " BRAID_LOCAL_WORLD_SIZE=" << ranks << " ";
      os << shellQuoted(binary);
      for (const std::string &arg : args)
        os << " " << shellQuoted(arg);
      os << "\n";
    }
  }
  os.flush();
  return 0;
}

/// Options of launching that contradict each other or name nothing.
bool launchOptionsUsable() {
  const LaunchOptions &options = launchOptions();
  if (!options.store.empty() && !options.printOnly) {
    errs() << "braid-run: --store names the directory of the commands --launcher none "
              "prints; mpirun needs none\n";
    return false;
  }
  if (!options.hostfile.empty() && options.printOnly) {
    errs() << "braid-run: --hostfile is mpirun's; with --launcher none your launcher places "
              "the ranks\n";
    return false;
  }
  if (!options.hostfile.empty() && !sys::fs::exists(options.hostfile)) {
    errs() << "braid-run: --hostfile " << options.hostfile << ": no such file\n";
    return false;
  }
  return true;
}

} // namespace

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
  if (!launchOptionsUsable())
    return 1;
  if (launchOptions().printOnly)
    return printCommands(binaries, ranks, args, counts);
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
  if (!launchOptions().hostfile.empty())
    full.append({"--hostfile", launchOptions().hostfile});
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
  if (launchOptions().printOnly) {
    llvm::errs() << "braid-run: --launcher none prints the ranks' commands and runs nothing, "
                    "so it cannot take --verify, which compares the runs' results\n";
    return 1;
  }
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
