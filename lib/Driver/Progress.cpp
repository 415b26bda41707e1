//===- Progress.cpp - show long phases of work on stderr ------------------===//

#include "braid/Driver/Progress.h"

#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

namespace braid::driver {

bool Progress::stderrIsTerminal() {
  return llvm::sys::Process::StandardErrIsDisplayed();
}

void Progress::phase(const llvm::Twine &what) {
  if (!enabled)
    return;
  std::string line = tool + ": " + what.str() + "...\n";
  std::lock_guard<std::mutex> lock(output);
  llvm::errs() << line;
  llvm::errs().flush();
}

Progress::Ticker::Ticker(Progress &progress, std::string what)
    : progress(progress), what(std::move(what)) {
  if (!progress.enabled)
    return;
  progress.phase(this->what);
  thread = std::thread([this] {
    auto start = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mutex);
    while (!done.wait_for(lock, this->progress.interval,
                          [this] { return stopped; })) {
      auto seconds = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::steady_clock::now() - start)
                         .count();
      this->progress.phase(this->what + " (" + std::to_string(seconds) + " s)");
    }
  });
}

Progress::Ticker::~Ticker() {
  if (!thread.joinable())
    return;
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopped = true;
  }
  done.notify_one();
  thread.join();
}

} // namespace braid::driver
