//===- RuntimeLocation.cpp - where programs find the runtime --------------===//

#include "braid/Driver/RuntimeLocation.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <dlfcn.h>
#include <link.h>
#include <optional>

using namespace llvm;

namespace braid::driver {

namespace {

void fail(const Twine &message) {
  llvm::errs() << "braid-run: " << message << "\n";
}

/// The runtime of an installation at `prefix` (`cmake --install`:
/// include/braid-runtime and lib), or nothing with the first file of it that
/// is not there in `missing`.
std::optional<RuntimeLocation> installedAt(StringRef prefix,
                                           std::string &missing) {
  SmallString<256> include(prefix), lib(prefix);
  sys::path::append(include, "include", "braid-runtime");
  sys::path::append(lib, "lib");
  SmallString<256> header(include), archive(lib);
  sys::path::append(header, "braid", "runtime.h");
  sys::path::append(archive, "libbraid_runtime.a");
  for (StringRef file : {StringRef(header), StringRef(archive)}) {
    if (!sys::fs::exists(file)) {
      missing = file.str();
      return std::nullopt;
    }
  }
  return RuntimeLocation{include.str().str(), lib.str().str()};
}

/// The file the driver's code was loaded from, symbolic links resolved: the
/// shared library that holds it (libBraidCAPI.so under a C program or
/// Python) or the executable that links it statically (braid-run).
std::string loadedFrom() {
  void *self = reinterpret_cast<void *>(&loadedFrom);
  Dl_info info;
  link_map *map = nullptr;
  std::string file;
  if (dladdr1(self, &info, reinterpret_cast<void **>(&map), RTLD_DL_LINKMAP) &&
      map && map->l_name && *map->l_name)
    file = map->l_name;
  else // The executable's own link map has no name (and dladdr gives argv[0]).
    file = sys::fs::getMainExecutable("braid-run", self);
  SmallString<256> real;
  if (!file.empty() && !sys::fs::real_path(file, real))
    return real.str().str();
  return file;
}

/// Whether `file` is one the build tree made: its executables lie in its
/// bin, its libraries in its lib (an installation never does; the tests'
/// installations lie deeper in it).
bool inBuildTree(StringRef file) {
  StringRef dir = sys::path::parent_path(file);
  for (StringRef sub : {"bin", "lib"}) {
    SmallString<256> buildDir(BRAID_BUILD_DIR);
    sys::path::append(buildDir, sub);
    if (sys::fs::equivalent(dir, buildDir))
      return true;
  }
  return false;
}

} // namespace

FailureOr<RuntimeLocation> findRuntime() {
  std::string missing;
  // An explicit choice is checked, never passed over for another runtime.
  if (const char *prefix = std::getenv("BRAID_PREFIX"); prefix && *prefix) {
    if (std::optional<RuntimeLocation> at = installedAt(prefix, missing))
      return *at;
    fail(Twine("BRAID_PREFIX=") + prefix +
         " is not a Braid installation: " + missing +
         " is missing (BRAID_PREFIX names the prefix of `cmake --install`; "
         "unset it to use the installation this program runs from)");
    return failure();
  }
  // P/lib/libBraidCAPI.so or P/bin/braid-run: the installation is P.
  std::string self = loadedFrom();
  StringRef prefix = sys::path::parent_path(sys::path::parent_path(self));
  if (std::optional<RuntimeLocation> at = installedAt(prefix, missing))
    return *at;
  if (inBuildTree(self))
    return RuntimeLocation{BRAID_RUNTIME_INCLUDE_DIR, BRAID_LIBRARY_DIR};
  fail("cannot find Braid's runtime: " + self +
       " is neither in an installation (" + missing +
       " is missing) nor in the build tree " BRAID_BUILD_DIR
       "; set BRAID_PREFIX to the prefix of `cmake --install`");
  return failure();
}

} // namespace braid::driver
