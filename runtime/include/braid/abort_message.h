//===- abort_message.h - print a fatal message and abort --------*- C++ -*-===//
//
// The last words of the kernels' and cudasim's fatal errors (cpu/common.h,
// cuda/check.h, cudasim/src/device.cpp): each formats its own prefix.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_ABORT_MESSAGE_H
#define BRAID_RUNTIME_ABORT_MESSAGE_H

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace braid {

/// Flushes stdout (what was printed before comes first), writes `prefix`, the
/// message of `format` and `args` and a newline to stderr, and aborts.
[[noreturn]] inline void abortWithMessage(const char *prefix, const char *format,
                                          va_list args) {
  std::fflush(stdout);
  std::fputs(prefix, stderr);
  std::vfprintf(stderr, format, args);
  std::fputc('\n', stderr);
  std::fflush(stderr);
  std::abort();
}

} // namespace braid

#endif // BRAID_RUNTIME_ABORT_MESSAGE_H
