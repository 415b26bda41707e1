//===- Debug.h - LLVM_DEBUG for Braid's passes ------------------*- C++ -*-===//
//
// Braid's passes explain their decisions with LLVM_DEBUG under a DEBUG_TYPE
// that is the pass flag, so that `braid-opt -debug-only=braid-partition ...`
// says why a dimension got its axes or why a collective was inserted.
//
// Upstream, that output and the -debug / -debug-only options exist only
// where NDEBUG is not defined: an LLVM built with assertions (whose CMake
// options then build Braid without NDEBUG too). Debian's LLVM is a release
// build, and Braid with it, so both would be compiled out. Included in place
// of llvm/Support/Debug.h, this header leaves upstream's macros alone where
// they work and, under NDEBUG, redefines DEBUG_WITH_TYPE (and so LLVM_DEBUG)
// over Braid's own switch, which registerDebugOptions() gives a tool as
// -debug and -debug-only=<type>[,<type>...]. Disabled, a log statement costs
// the load of one bool and a branch predicted not taken.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_SUPPORT_DEBUG_H
#define BRAID_SUPPORT_DEBUG_H

#include "llvm/Support/Compiler.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/raw_ostream.h"

// In mlir::braid, not ::braid: the passes' files name their own namespace
// `braid::` under `using namespace mlir`, which a second `braid` would make
// ambiguous.
namespace mlir::braid {

/// Registers -debug and -debug-only for Braid's LLVM_DEBUG output with
/// LLVM's command line, unless LLVM registered its own (an LLVM built with
/// assertions, whose options serve upstream's macros). They set Braid's
/// switch, or, in a Braid built without NDEBUG (whose LLVM_DEBUG is
/// upstream's), upstream's. Call before the command line is parsed.
void registerDebugOptions();

namespace debug {
/// Whether -debug or -debug-only was given: the one test a disabled log
/// statement makes.
extern bool enabled;

/// Whether the output of `type` is on: -debug, or -debug-only naming it.
bool isEnabled(const char *type);
} // namespace debug

} // namespace mlir::braid

#ifdef NDEBUG
#undef DEBUG_WITH_TYPE
#define DEBUG_WITH_TYPE(TYPE, ...)                                             \
  do {                                                                         \
    if (LLVM_UNLIKELY(::mlir::braid::debug::enabled) &&                        \
        ::mlir::braid::debug::isEnabled(TYPE)) {                               \
      __VA_ARGS__;                                                             \
    }                                                                          \
  } while (false)
#endif

#endif // BRAID_SUPPORT_DEBUG_H
