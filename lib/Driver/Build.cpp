//===- Build.cpp - build emitted programs against the runtime -------------===//

#include "braid/Driver/Build.h"

#include "braid/Driver/Launch.h"
#include "braid/Driver/RuntimeLocation.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

using namespace llvm;

namespace braid::driver {

namespace {

void fail(const Twine &message) {
  llvm::errs() << "braid-run: " << message << "\n";
}

/// The linker arguments of MPI (configure-time FindMPI: the libraries with an
/// rpath to their directories, and its link flags); `nvcc` spells the rpath
/// for nvcc.
FailureOr<SmallVector<std::string>> mpiLinkArgs(bool nvcc) {
#ifdef BRAID_MPI_LIBRARIES
  SmallVector<std::string> args;
  SmallVector<StringRef> items;
  StringRef(BRAID_MPI_LIBRARIES).split(items, '|', -1, /*KeepEmpty=*/false);
  llvm::StringSet<> dirs;
  for (StringRef lib : items) {
    args.push_back(lib.str());
    StringRef dir = llvm::sys::path::parent_path(lib);
    if (!dir.empty() && dirs.insert(dir).second) {
      if (nvcc)
        args.append({"-Xlinker", ("-rpath," + dir).str()});
      else
        args.push_back(("-Wl,-rpath," + dir).str());
    }
  }
  items.clear();
  StringRef(BRAID_MPI_LINK_FLAGS).split(items, '|', -1, false);
  for (StringRef flags : items) {
    SmallVector<StringRef> words;
    flags.split(words, ' ', -1, false);
    for (StringRef word : words)
      if (nvcc)
        args.append({"-Xlinker", word.str()});
      else
        args.push_back(word.str());
  }
  return args;
#else
  fail("running several ranks needs the MPI runtime (braid_runtime_mpi), "
       "which this build does not have: install MPI (e.g. libopenmpi-dev) and "
       "reconfigure");
  return failure();
#endif
}

/// The host compiler's arguments that build `source` into `binary` against
/// the runtime's headers (a sanitized build's runtime is instrumented: so is
/// the program); the libraries come after them.
SmallVector<std::string> hostCompileArgs(ArrayRef<std::string> sources,
                                         StringRef binary,
                                         const std::string &include) {
  SmallVector<std::string> args = {"-std=c++17", "-O2", "-I", include};
  args.append(sources.begin(), sources.end());
  args.append({"-o", binary.str()});
#ifdef BRAID_PROGRAM_SANITIZE
  args.append({"-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
               "-fno-omit-frame-pointer"});
#endif
  return args;
}

/// The command that builds `sources` (a binary's translation units) into
/// `binary` for `backend` against `runtime`; `mpi`: for several ranks started
/// by mpirun.
FailureOr<SmallVector<std::string>>
buildCommand(ArrayRef<std::string> sources, StringRef binary,
             StringRef backend, const RuntimeLocation &runtime,
             std::string &compiler, bool mpi) {
  const std::string &lib = runtime.lib;
  const std::string &include = runtime.include;
  SmallVector<std::string> args;
  if (backend == "cpu") {
    compiler = BRAID_HOST_CXX;
    args = hostCompileArgs(sources, binary, include);
    if (mpi) {
      FailureOr<SmallVector<std::string>> mpiArgs = mpiLinkArgs(false);
      if (failed(mpiArgs))
        return failure();
      args.append({lib + "/libbraid_runtime_main_mpi.a",
                   lib + "/libbraid_runtime_mpi.a",
                   lib + "/libbraid_kernels_cpu.a",
                   lib + "/libbraid_runtime.a"});
      args.append(mpiArgs->begin(), mpiArgs->end());
    } else {
      args.append({lib + "/libbraid_runtime_main.a",
                   lib + "/libbraid_kernels_cpu.a",
                   lib + "/libbraid_runtime.a"});
    }
    // The CPU kernels' own libraries (OpenBLAS), '|'-separated.
    SmallVector<StringRef> kernelLink;
    StringRef(BRAID_CPU_KERNEL_LINK).split(kernelLink, '|', -1, false);
    for (StringRef word : kernelLink)
      args.push_back(word.str());
    args.push_back("-lpthread");
    return args;
  }
  if (backend == "cuda") {
#ifdef BRAID_NVCC
    compiler = BRAID_NVCC;
    // The source is saved as .cu, so nvcc compiles it as CUDA.
    args = {"-std=c++17",
            "-O2",
            "-ccbin",
            "g++-12",
            "-gencode",
            "arch=compute_90,code=sm_90",
            "-DBRAID_RUNTIME_CUDA",
            "-I",
            include};
    args.append(sources.begin(), sources.end());
    args.append({"-o", binary.str()});
    if (mpi) {
      // GPU ranks under mpirun: NCCL communicators, the id through MPI.
#if defined(BRAID_NCCL_LIBRARY) && defined(BRAID_HAVE_MAIN_CUDA_MPI)
      FailureOr<SmallVector<std::string>> mpiArgs = mpiLinkArgs(true);
      if (failed(mpiArgs))
        return failure();
      args.append({lib + "/libbraid_runtime_main_cuda_mpi.a",
                   lib + "/libbraid_comm_nccl.a",
                   lib + "/libbraid_runtime_mpi.a"});
      args.append(mpiArgs->begin(), mpiArgs->end());
#else
      fail("GPU ranks need NCCL and MPI (braid_runtime_main_cuda_mpi), which "
           "this build does not have");
      return failure();
#endif
    } else {
      args.push_back(lib + "/libbraid_runtime_main_cuda.a");
#ifdef BRAID_NCCL_LIBRARY
      // main() of a CUDA build runs GPU ranks over NCCL (braid_comm_nccl).
      args.push_back(lib + "/libbraid_comm_nccl.a");
#endif
    }
    args.append({lib + "/libbraid_kernels_cuda.a", lib + "/libbraid_runtime.a",
                 "-lcublasLt", "-lcudart", "-Xlinker",
                 "-rpath," BRAID_CUDA_LIB_DIR});
#ifdef BRAID_NCCL_LIBRARY
    args.append({"-L" BRAID_NCCL_LIB_DIR, "-lnccl", "-Xlinker",
                 "-rpath," BRAID_NCCL_LIB_DIR});
#endif
    return args;
#else
    fail("this build has no CUDA runtime (CUDA was not found at configure "
         "time)");
    return failure();
#endif
  }
  if (backend == "cudasim") {
    // The CUDA backend and kernels on the CPU emulation (runtime/cudasim):
    // the program is plain C++ and main() defaults to --backend cuda. Several
    // ranks: the runtime's NCCL communicators over cudasim's NCCL, which
    // runs over MPI (mpirun starts them as for CPU ranks).
    // BRAID_CUDASIM: codegen.h launches fused kernels on the compute stream;
    // include/cudasim stands in for CUDA's headers.
    compiler = BRAID_HOST_CXX;
    args = hostCompileArgs(sources, binary, include);
    args.append({"-DBRAID_CUDASIM", "-I", include + "/cudasim"});
    if (mpi) {
      FailureOr<SmallVector<std::string>> mpiArgs = mpiLinkArgs(false);
      if (failed(mpiArgs))
        return failure();
      args.append({lib + "/libbraid_runtime_main_cudasim_mpi.a",
                   lib + "/libbraid_comm_nccl_cudasim.a", lib + "/libbraid_cudasim_nccl.a",
                   lib + "/libbraid_runtime_mpi.a"});
      args.append({lib + "/libbraid_kernels_cudasim.a", lib + "/libbraid_cudasim.a",
                   lib + "/libbraid_runtime.a"});
      args.append(mpiArgs->begin(), mpiArgs->end());
    } else {
      args.append({lib + "/libbraid_runtime_main_cudasim.a",
                   lib + "/libbraid_kernels_cudasim.a", lib + "/libbraid_cudasim.a",
                   lib + "/libbraid_runtime.a"});
    }
    args.push_back("-lpthread");
    return args;
  }
  fail("--backend must be cpu, cuda or cudasim, found '" + backend + "'");
  return failure();
}

/// The cache key of the binary built from `sources` for `backend` against
/// `runtime`.
FailureOr<std::string> cacheKey(ArrayRef<std::string> sources,
                                StringRef backend,
                                const RuntimeLocation &runtime, bool mpi) {
  // The key covers what the binary is built from: the source, the compiler
  // and its whole command line (backend, runtime libraries, MPI's flags), and
  // the identity (size, modification time) of the libraries it links and the
  // runtime headers, so that a rebuilt runtime never runs under a stale
  // program.
  // Several sources: each one's length first, so that no two lists hash alike.
  std::string identity;
  for (const std::string &source : sources)
    identity += (sources.size() > 1 ? std::to_string(source.size()) + ":" : "") + source;
  identity += backend.str();
  {
    std::string compilerName;
    SmallVector<std::string> names;
    for (size_t i = 0; i < sources.size(); ++i)
      names.push_back(i ? "source" + std::to_string(i) : std::string("source"));
    FailureOr<SmallVector<std::string>> args =
        buildCommand(names, "binary", backend, runtime, compilerName, mpi);
    if (failed(args))
      return failure();
    identity += "\n" + compilerName;
    for (const std::string &arg : *args) {
      identity += "\n" + arg;
      llvm::sys::fs::file_status status;
      if ((StringRef(arg).ends_with(".a") || StringRef(arg).contains(".so")) &&
          !llvm::sys::fs::status(arg, status))
        identity +=
            ":" + std::to_string(status.getSize()) + ":" +
            std::to_string(
                status.getLastModificationTime().time_since_epoch().count());
    }
  }
  // The runtime headers the source includes (braid/runtime.h, codegen.h),
  // in a stable order.
  std::vector<std::string> headers;
  std::error_code ec;
  for (llvm::sys::fs::recursive_directory_iterator
           it(runtime.include, ec),
       end;
       it != end && !ec; it.increment(ec)) {
    llvm::sys::fs::file_status status;
    if (!llvm::sys::fs::status(it->path(), status) &&
        status.type() == llvm::sys::fs::file_type::regular_file)
      headers.push_back(
          it->path() + ":" + std::to_string(status.getSize()) + ":" +
          std::to_string(
              status.getLastModificationTime().time_since_epoch().count()));
  }
  llvm::sort(headers);
  for (const std::string &header : headers)
    identity += "\n" + header;
  return llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(identity)),
                     /*LowerCase=*/true);
}

} // namespace

FailureOr<std::string> buildProgram(StringRef source, StringRef backend,
                                    bool mpi, bool quiet) {
  return buildLinkedProgram(ArrayRef<std::string>{source.str()}, backend, mpi,
                            quiet);
}

FailureOr<std::string> buildLinkedProgram(ArrayRef<std::string> sources,
                                    StringRef backend, bool mpi, bool quiet) {
  std::string error;
  // Cache the binary by the hash of what builds it.
  llvm::SmallString<128> cache;
  if (const char *dir = std::getenv("BRAID_RUN_CACHE"))
    cache = dir;
  else
    llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, cache),
        llvm::sys::path::append(cache, "braid-run-cache");
  if (std::error_code ec = llvm::sys::fs::create_directories(cache)) {
    fail("cannot create " + cache + ": " + ec.message());
    return failure();
  }
  FailureOr<RuntimeLocation> runtime = findRuntime();
  if (failed(runtime))
    return failure();
  FailureOr<std::string> key = cacheKey(sources, backend, *runtime, mpi);
  if (failed(key))
    return failure();
  llvm::SmallString<128> base(cache);
  llvm::sys::path::append(base, key->substr(0, 24));
  const char *extension = backend == "cuda" ? ".cu" : ".cpp";
  std::string sourcePath = (base + extension).str();
  std::string binary = (base + ".bin").str();
  if (llvm::sys::fs::exists(binary))
    return binary;
  // Several braid-runs may build the same program at once (tests in
  // parallel on a cold cache). Each writes and compiles files of its own and
  // renames the finished binary into place, atomically: a process never
  // reads a source another is writing, never executes a binary another is
  // still linking, and a rename never loses its file to another's.
  SmallVector<std::string> ownSources;
  llvm::SmallString<128> ownBinary;
  for (const std::string &source : sources) {
    int fd;
    llvm::SmallString<128> ownSource;
    if (std::error_code ec = llvm::sys::fs::createUniqueFile(
            base + "-%%%%%%%%" + extension, fd, ownSource)) {
      fail("cannot create a source file in " + cache + ": " + ec.message());
      return failure();
    }
    ownSources.push_back(ownSource.str().str());
    llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
    out << source;
    out.close();
    if (out.has_error()) {
      fail("cannot write " + ownSource + ": " + out.error().message());
      out.clear_error();
      return failure();
    }
  }
  // A name only: the linker creates the file (with the executable's mode).
  llvm::sys::fs::createUniquePath(base + "-%%%%%%%%.bin.tmp", ownBinary,
                                  /*MakeAbsolute=*/false);
  std::string compiler;
  FailureOr<SmallVector<std::string>> args =
      buildCommand(ownSources, ownBinary, backend, *runtime, compiler, mpi);
  if (failed(args))
    return failure();
  auto program = llvm::sys::findProgramByName(compiler);
  if (!program) {
    fail("cannot find the compiler " + compiler);
    return failure();
  }
  if (!quiet)
    llvm::errs() << "braid-run: building " << binary << "\n";
  if (execute(*program, *args) != 0) {
    llvm::sys::fs::remove(ownBinary);
    fail("building the program failed (source: " + llvm::join(ownSources, " ") +
         ")");
    return failure();
  }
  if (std::error_code ec = llvm::sys::fs::rename(ownBinary, binary)) {
    llvm::sys::fs::remove(ownBinary);
    fail("cannot move the program into the cache: " + ec.message());
    return failure();
  }
  // The sources beside their binary, for a reader (a failed build keeps
  // their own names, given in the message above): KEY.cpp, or KEY.0.cpp,
  // KEY.1.cpp, ... for several.
  for (auto [i, ownSource] : llvm::enumerate(ownSources)) {
    std::string path = sources.size() == 1
                           ? sourcePath
                           : (base + "." + Twine(i) + extension).str();
    if (llvm::sys::fs::rename(ownSource, path))
      llvm::sys::fs::remove(ownSource);
  }
  return binary;
}

} // namespace braid::driver
