//===- driver_args.cpp - the command line of compiled programs ------------===//
//
//   PROGRAM [--steps N] [--seed S] [--dump DIR] [--trace FILE]
//           [--backend cpu|cuda] [--quiet] [--progress]
//           [--grid AXIS=SIZE,...] [--all-ranks] [--dump-all-ranks]
//           [--dump-first-step] [--check-replicas]
//           [--checkpoint-dir D] [--checkpoint-every K] [--resume D]
//           [--init-from MAP]
//           [--threads N]
//           [--data PATH [--data-dtype uint16|uint32] [--shuffle]]
//           [--eval-data PATH --eval-every K [--eval-batches N]]  (driver_data.cpp)
//           [--generate N] [--prompts FILE] [--prompt-len L] [--temperature T]
//           [--top-k K] [--top-p P] [--verify-forward]      (generation binaries)
//           [--logits-out DIR]
//           [--serve FILE | --rate R [--requests N] [--min-prompt-len L]]
//           [--output FILE] [--end-token ID] [--static-batching]
//           [--replicas R] [--disaggregate [--groups P,D]]
//                                                     (serving, driver_serve.cpp)
//
// Every flag takes its value as the next argument or after '='. A bad
// argument prints the usage and exits with status 2; --help prints it on
// stdout and exits 0. What each flag does: main.cpp.
//
//===----------------------------------------------------------------------===//

#include "driver.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace braid::rt::driver {

namespace {

void usage(const char *argv0, FILE *out) {
  std::fprintf(out,
               "usage: %s [--steps N] [--seed S] [--dump DIR] [--trace FILE] "
               "[--backend cpu|cuda] [--quiet]\n"
               "       [--grid AXIS=SIZE,...] [--all-ranks] [--dump-all-ranks] "
               "[--dump-first-step] [--check-replicas]\n"
               "       [--checkpoint-dir D] [--checkpoint-every K] [--resume D] "
               "[--init-from MAP] [--threads N]\n"
               "       [--data PATH [--data-dtype uint16|uint32] [--shuffle]] "
               "[--eval-data PATH --eval-every K [--eval-batches N]]\n"
               "       [--generate N] [--prompts FILE] [--prompt-len L] [--temperature T] "
               "[--top-k K] [--top-p P] [--verify-forward] [--logits-out DIR]\n"
               "       [--serve FILE | --rate R [--requests N] [--min-prompt-len L]] "
               "[--output FILE] [--end-token ID] [--static-batching] [--replicas R] [--disaggregate [--groups P,D]]\n",
               argv0);
}

bool parseUnsigned(const std::string &text, uint64_t *value) {
  if (text.empty() || text[0] < '0' || text[0] > '9')
    return false;
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno || *end)
    return false;
  *value = v;
  return true;
}

/// The arguments one by one: a flag, and its value from "--flag=value" or
/// the next argument.
class ArgReader {
public:
  ArgReader(int argc, char **argv) : argc(argc), argv(argv) {}

  /// Moves to the next argument; false past the last.
  bool advance() {
    if (++i >= argc)
      return false;
    flag = argv[i];
    hasValue = false;
    if (size_t eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      hasValue = true;
    }
    return true;
  }
  const std::string &name() const { return flag; }
  /// The flag's value; exits when there is none.
  std::string next() {
    if (hasValue)
      return value;
    if (i + 1 >= argc)
      fail(flag + " needs a value");
    return argv[++i];
  }
  /// A non-negative integer up to `max`; else exits with `message`.
  uint64_t unsignedValue(uint64_t max, const char *message) {
    uint64_t v;
    if (!parseUnsigned(next(), &v) || v > max)
      fail(message);
    return v;
  }
  [[noreturn]] void fail(const std::string &message) const { badArgs(argv[0], message); }
  const char *argv0() const { return argv[0]; }

private:
  int argc;
  char **argv;
  int i = 0;
  std::string flag, value;
  bool hasValue = false;
};

/// The flags that take no value.
constexpr std::pair<const char *, bool Args::*> kSwitches[] = {
    {"--quiet", &Args::quiet},
    {"--progress", &Args::progress},
    {"--all-ranks", &Args::allRanks},
    {"--dump-all-ranks", &Args::dumpAllRanks},
    {"--dump-first-step", &Args::dumpFirstStep},
    {"--check-replicas", &Args::checkReplicas},
    {"--verify-forward", &Args::verifyForward},
    {"--static-batching", &Args::staticBatching},
    {"--disaggregate", &Args::disaggregate},
    {"--shuffle", &Args::shuffle},
};

/// The flags that take a string, and the message for an empty one (null:
/// it may be empty).
struct StringFlag {
  const char *flag;
  std::string Args::*field;
  const char *emptyMessage;
};
const StringFlag kStringFlags[] = {
    {"--dump", &Args::dumpDir, nullptr},
    {"--trace", &Args::traceFile, nullptr},
    {"--backend", &Args::backend, nullptr},
    {"--grid", &Args::grid, "--grid needs AXIS=SIZE[,AXIS=SIZE...]"},
    {"--checkpoint-dir", &Args::checkpointDir, "--checkpoint-dir needs a directory"},
    {"--resume", &Args::resume, "--resume needs a checkpoint directory"},
    {"--init-from", &Args::initFrom, "--init-from needs a weights map (python3 -m braid.hf_weights)"},
    {"--prompts", &Args::promptsFile, "--prompts needs a file"},
    {"--logits-out", &Args::logitsOut, "--logits-out needs a directory"},
    {"--serve", &Args::serveFile, "--serve needs a file of requests"},
    {"--output", &Args::outputFile, "--output needs a file"},
    {"--data", &Args::dataFile, "--data needs a file"},
    {"--data-dtype", &Args::dataDtype, "--data-dtype needs uint16 or uint32"},
    {"--eval-data", &Args::evalDataFile, "--eval-data needs a file"},
};

/// A flag of kSwitches or kStringFlags; false when it is none of them.
bool parseSwitchOrString(ArgReader &reader, Args &args) {
  for (const auto &[flag, field] : kSwitches)
    if (reader.name() == flag) {
      args.*field = true;
      return true;
    }
  for (const StringFlag &f : kStringFlags)
    if (reader.name() == f.flag) {
      args.*f.field = reader.next();
      if (f.emptyMessage && (args.*f.field).empty())
        reader.fail(f.emptyMessage);
      return true;
    }
  return false;
}

/// A real number in [lo, hi]; else exits with `message`.
double realValue(ArgReader &reader, double lo, double hi, const char *message) {
  std::string text = reader.next();
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || errno || *end || !(v >= lo && v <= hi))
    reader.fail(message);
  return v;
}

/// A flag of generation; false when the flag is none of them.
bool parseGenerationNumber(ArgReader &reader, Args &args) {
  const std::string &flag = reader.name();
  if (flag == "--generate") {
    args.generate = int64_t(reader.unsignedValue(1ull << 30, "--generate needs a positive integer"));
    if (args.generate < 1)
      reader.fail("--generate needs a positive integer");
  } else if (flag == "--prompt-len") {
    args.promptLen = int64_t(reader.unsignedValue(1ull << 30, "--prompt-len needs a positive integer"));
    if (args.promptLen < 1)
      reader.fail("--prompt-len needs a positive integer");
  } else if (flag == "--top-k") {
    args.topK = int64_t(reader.unsignedValue(1ull << 31, "--top-k needs a non-negative integer"));
  } else if (flag == "--temperature") {
    args.temperature = realValue(reader, 0, 1e6, "--temperature needs a number >= 0");
  } else if (flag == "--top-p") {
    args.topP = realValue(reader, 1e-9, 1, "--top-p needs a number in (0, 1]");
  } else if (flag == "--rate") {
    args.rate = realValue(reader, 1e-9, 1e9, "--rate needs a number of requests per second > 0");
  } else if (flag == "--requests") {
    args.serveRequests = int64_t(reader.unsignedValue(1ull << 30, "--requests needs a positive integer"));
    if (args.serveRequests < 1)
      reader.fail("--requests needs a positive integer");
  } else if (flag == "--min-prompt-len") {
    args.minPromptLen =
        int64_t(reader.unsignedValue(1ull << 30, "--min-prompt-len needs a positive integer"));
    if (args.minPromptLen < 1)
      reader.fail("--min-prompt-len needs a positive integer");
  } else if (flag == "--groups") {
    // P,D: the disaggregated groups' sizes.
    std::string text = reader.next();
    size_t at = 0;
    while (at <= text.size()) {
      size_t comma = text.find(',', at);
      uint64_t v = 0;
      if (!parseUnsigned(text.substr(at, comma - at), &v) || v < 1 || v > (1u << 20))
        reader.fail("--groups needs sizes N,M,... of at least 1");
      args.groupSizes.push_back(int32_t(v));
      if (comma == std::string::npos)
        break;
      at = comma + 1;
    }
  } else if (flag == "--replicas") {
    args.replicas = int64_t(reader.unsignedValue(1ull << 20, "--replicas needs a positive integer"));
    if (args.replicas < 1)
      reader.fail("--replicas needs a positive integer");
  } else if (flag == "--end-token") {
    args.endToken = int64_t(reader.unsignedValue(1ull << 31, "--end-token needs a token id"));
  } else {
    return false;
  }
  return true;
}

/// A numeric flag; false when the flag is none of them.
bool parseNumber(ArgReader &reader, Args &args) {
  const std::string &flag = reader.name();
  if (flag == "--steps") {
    args.steps = int64_t(reader.unsignedValue(1ull << 62, "--steps needs a non-negative integer"));
  } else if (flag == "--seed") {
    args.seed = reader.unsignedValue(UINT64_MAX, "--seed needs a non-negative integer below 2^64");
    args.seedGiven = true;
  } else if (flag == "--checkpoint-every") {
    args.checkpointEvery = int64_t(
        reader.unsignedValue(1ull << 62, "--checkpoint-every needs a non-negative integer"));
  } else if (flag == "--eval-every") {
    args.evalEvery =
        int64_t(reader.unsignedValue(1ull << 62, "--eval-every needs a non-negative integer"));
  } else if (flag == "--eval-batches") {
    args.evalBatches =
        int64_t(reader.unsignedValue(1ull << 30, "--eval-batches needs a positive integer"));
    if (args.evalBatches < 1)
      reader.fail("--eval-batches needs a positive integer");
  } else if (flag == "--threads") {
    // Threads of this rank's CPU kernels: the kernel library reads
    // BRAID_CPU_THREADS (its default: the cores shared by the local ranks).
    uint64_t v;
    std::string text = reader.next();
    if (!parseUnsigned(text, &v) || v < 1 || v > 4096)
      reader.fail("--threads needs a positive integer");
    setenv("BRAID_CPU_THREADS", text.c_str(), /*overwrite=*/1);
  } else {
    return false;
  }
  return true;
}

} // namespace

[[noreturn]] void badArgs(const char *argv0, const std::string &message) {
  std::fprintf(stderr, "%s: %s\n", argv0, message.c_str());
  usage(argv0, stderr);
  std::exit(2);
}

Args parseArgs(int argc, char **argv) {
  Args args;
  ArgReader reader(argc, argv);
  while (reader.advance()) {
    const std::string &flag = reader.name();
    if (flag == "--help" || flag == "-h") {
      usage(reader.argv0(), stdout);
      std::exit(0);
    }
    if (!parseSwitchOrString(reader, args) && !parseNumber(reader, args) &&
        !parseGenerationNumber(reader, args))
      reader.fail("unknown argument '" + flag + "'");
  }
  if (args.evalDataFile.empty() != (args.evalEvery == 0))
    reader.fail("--eval-data and --eval-every K (K >= 1) go together");
  if (!args.initFrom.empty() && !args.resume.empty())
    reader.fail("--init-from starts from another model's weights, --resume from a checkpoint's: "
                "give one of them");
  return args;
}

} // namespace braid::rt::driver
