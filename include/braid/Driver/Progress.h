//===- Progress.h - show long phases of work on stderr ----------*- C++ -*-===//
//
// Lowering a large model and building its programs take minutes (GPT-2 small:
// about 25 s in the pipeline, longer in the host compiler) with nothing on
// the screen. A Progress names each phase as it starts, and a Ticker repeats
// a phase with its elapsed time while a step runs that prints nothing:
//   braid-run: compiling the pipeline...
//   braid-run: building program...
//   braid-run: building program (10 s)...
// Tools enable it when stderr is a terminal or on request (--progress).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DRIVER_PROGRESS_H
#define BRAID_DRIVER_PROGRESS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace braid::driver {

class Progress {
public:
  /// Prints nothing unless `enabled`; lines start with "<tool>: ".
  explicit Progress(bool enabled, llvm::StringRef tool = "braid-run",
                    std::chrono::seconds interval = std::chrono::seconds(5))
      : enabled(enabled), tool(tool.str()), interval(interval) {}

  /// Whether stderr is a terminal: the default of `enabled` for tools.
  static bool stderrIsTerminal();

  bool isEnabled() const { return enabled; }

  /// "<tool>: <what>...".
  void phase(const llvm::Twine &what);

  /// While alive, repeats "<tool>: <what> (N s)..." every interval from a
  /// thread of its own (after "<tool>: <what>..." at once).
  class Ticker {
  public:
    Ticker(Progress &progress, std::string what);
    ~Ticker();
    Ticker(const Ticker &) = delete;
    Ticker &operator=(const Ticker &) = delete;

  private:
    Progress &progress;
    std::string what;
    std::mutex mutex;
    std::condition_variable done;
    bool stopped = false;
    std::thread thread;
  };

private:
  bool enabled;
  std::string tool;
  std::chrono::seconds interval;
  /// Lines from tickers and phases are written whole.
  std::mutex output;
};

} // namespace braid::driver

#endif // BRAID_DRIVER_PROGRESS_H
