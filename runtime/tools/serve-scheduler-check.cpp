//===- serve-scheduler-check.cpp - the serving scheduler against a fake model -===//
//
//   serve-scheduler-check [scenarios]
//       Drives serve::Scheduler (runtime/src/serve_scheduler.h) with a fake
//       model and prints one line per scenario; exit status 1 when a check
//       fails (the problem is printed). The negative scenarios make the fake
//       model break the rules and must be caught.
//   serve-scheduler-check requests FILE --vocab V [--seed S]
//       [--max-new-tokens N] [--context C] [--prompt-of I]
//       Reads a --serve JSON-lines file and prints each request, or its
//       refusal with its line number; --prompt-of I prints request I's
//       prompt alone, one id per line (as rng-dump prints tokens).
//   serve-scheduler-check poisson COUNT RATE MIN MAX --vocab V [--seed S]
//       Prints poissonRequests' arrivals and prompt lengths.
//
// The fake model (serve_fake_model.h) stands for the prefill and decode
// programs and checks, at every iteration, what the real ones need of the
// page tables.
//
//===----------------------------------------------------------------------===//

#include "serve_fake_model.h"
#include "serve_requests.h"
#include "serve_scheduler.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace braid::rt::serve;
using namespace braid::rt::serve::fake;

namespace {

//===----------------------------------------------------------------------===//
// Scenarios
//===----------------------------------------------------------------------===//

/// A small deterministic generator for the scenarios' prompts and shapes.
struct Random {
  uint64_t state;
  explicit Random(uint64_t seed) : state(seed) {}
  uint64_t next() {
    state += 0x9e3779b97f4a7c15ull;
    return mix(state, 0);
  }
  int64_t in(int64_t lo, int64_t hi) { return lo + int64_t(next() % uint64_t(hi - lo + 1)); }
};

std::vector<int32_t> randomPrompt(Random &random, int64_t length, int64_t vocab) {
  std::vector<int32_t> prompt;
  for (int64_t i = 0; i < length; ++i)
    prompt.push_back(int32_t(random.in(0, vocab - 1)));
  return prompt;
}

SchedulerConfig makeConfig(int64_t B, int64_t Bp, int64_t L, int64_t P, int64_t N, int64_t T) {
  SchedulerConfig c;
  c.decodeRows = B;
  c.prefillRows = Bp;
  c.chunk = L;
  c.pageSize = P;
  c.pages = N;
  c.pagesPerSequence = T;
  return c;
}

int failures = 0;

/// Prints a scenario's verdict line; counts a failure.
void verdict(const char *name, const std::string &problem, const std::string &figures) {
  if (problem.empty()) {
    std::printf("%s: ok, %s\n", name, figures.c_str());
    return;
  }
  ++failures;
  std::printf("%s: FAILED: %s\n", name, problem.c_str());
}

/// Rows freed by retirement are refilled by the next iteration's admission.
void scenarioContinuous() {
  const int64_t vocab = 64;
  Random random(1);
  std::vector<Request> requests;
  const int64_t maxNew[] = {2, 9, 4, 6, 3, 5};
  for (int64_t i = 0; i < 6; ++i)
    requests.push_back({i, randomPrompt(random, 3 + i, vocab), maxNew[i], 0});
  RunResult r = serveFake(makeConfig(2, 2, 8, 4, 64, 16), vocab, requests);
  int64_t freed = 0, refilled = 0;
  for (size_t i = 0; i + 1 < r.log.size(); ++i) {
    // Every request arrived at once: after the first iteration some wait
    // until the last admission.
    bool waiting = std::any_of(r.log.begin() + i + 1, r.log.end(),
                               [](const Logged &l) { return !l.plan.admitted.empty(); });
    if (r.log[i].finished.empty() || !waiting)
      continue;
    ++freed;
    refilled += !r.log[i + 1].plan.admitted.empty();
  }
  if (r.problem.empty() && refilled != freed)
    r.problem = "a freed row was not refilled at the next iteration";
  if (r.problem.empty() && r.log.size() && r.log[0].plan.admitted.size() != 2)
    r.problem = "the first iteration did not fill both rows";
  verdict("continuous", r.problem,
          std::to_string(r.ids.size()) + " requests on 2 rows in " +
              std::to_string(r.log.size()) + " iterations, freed rows refilled at once: " +
              std::to_string(refilled) + " of " + std::to_string(freed));
}

/// A long prompt is prefilled in chunks while the decoding rows go on.
void scenarioChunked() {
  const int64_t vocab = 64;
  Random random(2);
  std::vector<Request> requests = {{0, randomPrompt(random, 3, vocab), 24, 0},
                                   {1, randomPrompt(random, 5, vocab), 24, 0},
                                   {2, randomPrompt(random, 40, vocab), 2, 3}};
  RunResult r = serveFake(makeConfig(4, 1, 4, 4, 64, 16), vocab, requests);
  int64_t longChunks = 0, besideDecoding = 0, gaps = 0;
  std::map<int64_t, int64_t> lastDecode;
  for (size_t i = 0; i < r.log.size(); ++i) {
    const Iteration &plan = r.log[i].plan;
    for (const PrefillChunk &c : plan.prefill)
      if (c.sequence == 2) {
        ++longChunks;
        besideDecoding += plan.decode.size() == 2;
      }
    for (const DecodeRow &d : plan.decode) {
      if (lastDecode.count(d.sequence) && lastDecode[d.sequence] != int64_t(i) - 1)
        ++gaps;
      lastDecode[d.sequence] = int64_t(i);
    }
  }
  if (r.problem.empty() && (longChunks != 10 || besideDecoding != 10 || gaps != 0))
    r.problem = "the 40-token prompt took " + std::to_string(longChunks) + " chunks, " +
                std::to_string(besideDecoding) + " beside both decoding rows, and the " +
                "decoding rows skipped " + std::to_string(gaps) + " iterations";
  verdict("chunked", r.problem,
          "40-token prompt in " + std::to_string(longChunks) + " chunks of 4, each beside " +
              "2 decode rows; decoding rows skipped " + std::to_string(gaps) + " iterations");
}

/// A tiny pool preempts (recompute) and still ends with the same ids.
void scenarioPreemption() {
  const int64_t vocab = 64;
  Random random(3);
  std::vector<Request> requests;
  for (int64_t i = 0; i < 5; ++i)
    requests.push_back({i, randomPrompt(random, 5 + i, vocab), 10, i / 2});
  RunResult small = serveFake(makeConfig(4, 2, 8, 4, 6, 8), vocab, requests);
  RunResult large = serveFake(makeConfig(4, 2, 8, 4, 64, 8), vocab, requests);
  std::string problem = !small.problem.empty() ? small.problem : large.problem;
  if (problem.empty() && small.preemptions == 0)
    problem = "the 6-page pool preempted nobody";
  if (problem.empty() && large.preemptions != 0)
    problem = "the 64-page pool preempted";
  if (problem.empty() && small.ids != large.ids)
    problem = "the ids differ with and without preemption";
  if (problem.empty() && small.peakPages > 6)
    problem = "more pages in use than the pool holds";
  verdict("preemption", problem,
          std::to_string(small.preemptions) + " preemptions in a 6-page pool (peak " +
              std::to_string(small.peakPages) + "), ids equal to the 64-page run's: " +
              (small.ids == large.ids ? "yes" : "no"));
}

/// Identical prompts arriving at different times share their full pages.
void scenarioSharing() {
  const int64_t vocab = 64;
  Random random(4);
  std::vector<int32_t> prompt = randomPrompt(random, 18, vocab);
  std::vector<int32_t> head(prompt.begin(), prompt.begin() + 9);
  std::vector<int32_t> tail = randomPrompt(random, 6, vocab);
  head.insert(head.end(), tail.begin(), tail.end());
  std::vector<Request> requests = {{0, prompt, 12, 0}, {1, prompt, 12, 6},
                                   {2, head, 12, 8},   {3, prompt, 12, 12},
                                   {4, prompt, 12, 12}};
  SchedulerConfig config = makeConfig(4, 2, 4, 4, 64, 16);
  RunResult on = serveFake(config, vocab, requests);
  config.sharePrefixes = false;
  RunResult off = serveFake(config, vocab, requests);
  std::string problem = !on.problem.empty() ? on.problem : off.problem;
  // Requests 1, 3, 4: pages 0-3 (positions 0-15 end before the last, 17);
  // request 2: pages 0-1 (its first 9 tokens).
  if (problem.empty() && (on.shared != 14 || off.shared != 0))
    problem = "shared " + std::to_string(on.shared) + " pages (expected 14), " +
              std::to_string(off.shared) + " without sharing";
  if (problem.empty() && on.ids != off.ids)
    problem = "the ids differ with and without sharing";
  verdict("sharing", problem,
          std::to_string(on.shared) + " pages shared (peak " + std::to_string(on.peakPages) +
              " pages, " + std::to_string(off.peakPages) +
              " without sharing), every read its own sequence's tokens");
}

/// The end token ends a sequence early.
void scenarioEndToken() {
  const int64_t vocab = 12;
  Random random(5);
  std::vector<Request> requests;
  for (int64_t i = 0; i < 8; ++i)
    requests.push_back({i, randomPrompt(random, 4, vocab), 12, i});
  SchedulerConfig config = makeConfig(4, 2, 4, 4, 64, 16);
  config.endToken = 7;
  RunResult r = serveFake(config, vocab, requests);
  int64_t ended = 0, atLength = 0;
  for (const auto &[sequence, ids] : r.ids) {
    bool byToken = r.endedByToken[sequence];
    ended += byToken;
    atLength += int64_t(ids.size()) == 12 && !byToken;
    if (r.problem.empty() && byToken != (ids.back() == 7))
      r.problem = "sequence " + std::to_string(sequence) + "'s end is misreported";
  }
  if (r.problem.empty() && (ended == 0 || atLength == 0 || ended + atLength != 8))
    r.problem = std::to_string(ended) + " ended by the end token, " +
                std::to_string(atLength) + " at max_new_tokens, of 8";
  verdict("end token", r.problem,
          std::to_string(ended) + " of 8 ended by the end token, " + std::to_string(atLength) +
              " at max_new_tokens");
}

/// The sequences each static-batching wave admitted (a wave: the
/// iterations between two moments when nothing runs), re-admissions after a
/// preemption counted once.
std::vector<std::set<int64_t>> wavesOf(const RunResult &r) {
  std::vector<std::set<int64_t>> waves;
  std::set<int64_t> running;
  for (const Logged &l : r.log) {
    if (running.empty() && !l.plan.admitted.empty())
      waves.emplace_back();
    for (int64_t sequence : l.plan.admitted) {
      waves.back().insert(sequence);
      running.insert(sequence);
    }
    for (int64_t sequence : l.plan.preempted)
      running.erase(sequence);
    for (const Finished &f : l.finished)
      running.erase(f.sequence);
  }
  return waves;
}

/// Static batching (the baseline of bench/serving): requests run in waves
/// of at most B that start only when nothing runs, a finished row stays
/// empty until its wave ends, and every request's ids equal continuous
/// batching's (with a pool small enough to preempt, too).
void scenarioStatic() {
  const int64_t vocab = 64, B = 3;
  Random random(8);
  std::vector<Request> requests;
  const int64_t maxNew[] = {2, 12, 3, 7, 1, 9, 4, 5, 2, 6};
  for (int64_t i = 0; i < 10; ++i)
    requests.push_back({i, randomPrompt(random, 2 + (i * 7) % 13, vocab), maxNew[i], i / 3});
  SchedulerConfig config = makeConfig(B, 2, 4, 4, 64, 8);
  RunResult continuous = serveFake(config, vocab, requests);
  config.staticBatches = true;
  RunResult waves = serveFake(config, vocab, requests);
  config.pages = 6;
  RunResult small = serveFake(config, vocab, requests);
  std::string problem = !continuous.problem.empty() ? continuous.problem
                        : !waves.problem.empty()    ? waves.problem
                                                    : small.problem;
  size_t largest = 0, largestContinuous = 0, members = 0;
  for (const std::set<int64_t> &wave : wavesOf(waves)) {
    largest = std::max(largest, wave.size());
    members += wave.size();
  }
  for (const std::set<int64_t> &wave : wavesOf(small))
    largest = std::max(largest, wave.size());
  for (const std::set<int64_t> &wave : wavesOf(continuous))
    largestContinuous = std::max(largestContinuous, wave.size());
  if (problem.empty() && (largest > size_t(B) || members != requests.size()))
    problem = "a wave admitted " + std::to_string(largest) + " sequences on " +
              std::to_string(B) + " rows";
  if (problem.empty() && largestContinuous <= size_t(B))
    problem = "continuous batching never refilled a row (the check would not tell)";
  if (problem.empty() && small.preemptions == 0)
    problem = "the 6-page pool preempted nobody";
  if (problem.empty() && (waves.ids != continuous.ids || small.ids != continuous.ids))
    problem = "the ids differ between static and continuous batching";
  if (problem.empty() && waves.log.size() <= continuous.log.size())
    problem = "static batching took no more iterations than continuous batching";
  verdict("static", problem,
          std::to_string(wavesOf(waves).size()) + " waves of at most " + std::to_string(B) +
              " in " + std::to_string(waves.log.size()) + " iterations (continuous: " +
              std::to_string(continuous.log.size()) + "), " + std::to_string(small.preemptions) +
              " preemptions in a 6-page pool, ids equal to continuous batching's: " +
              (waves.ids == continuous.ids && small.ids == continuous.ids ? "yes" : "no"));
}

/// The checks catch a table entry pointing at another sequence's page and a
/// chunk boundary off by one (each run must FAIL).
void scenarioNegative() {
  const int64_t vocab = 64;
  Random random(7);
  std::vector<Request> requests;
  for (int64_t i = 0; i < 4; ++i)
    requests.push_back({i, randomPrompt(random, 6 + i, vocab), 6, 0});
  const std::pair<Fault, const char *> faults[] = {
      {Fault::ForeignPage, "a table entry pointing at another sequence's page"},
      {Fault::ShortChunk, "a chunk boundary off by one"}};
  for (const auto &[fault, what] : faults) {
    RunResult r = serveFake(makeConfig(4, 2, 4, 4, 64, 8), vocab, requests, fault);
    failures += r.problem.empty();
    std::printf("negative: %s: %s\n", what,
                r.problem.empty() ? "NOT CAUGHT" : ("caught (" + r.problem + ")").c_str());
  }
}

void scenarioRefusals() {
  SchedulerConfig config = makeConfig(2, 1, 4, 4, 4, 8); // context 32, pool 16 positions
  Scheduler scheduler(config);
  struct Case {
    int64_t prompt, maxNew;
  };
  for (Case c : {Case{30, 5}, Case{10, 8}, Case{0, 4}, Case{4, 0}, Case{10, 7}}) {
    std::string why;
    bool ok = scheduler.arrive(c.prompt, std::vector<int32_t>(size_t(c.prompt), 1), c.maxNew,
                               &why);
    std::printf("refusal: prompt %lld, max_new_tokens %lld: %s\n", (long long)c.prompt,
                (long long)c.maxNew, ok ? "accepted" : why.c_str());
    if (ok != why.empty() || why != scheduler.refusalOf(c.prompt, c.maxNew)) {
      ++failures;
      std::printf("refusal: FAILED: arrive() and refusalOf disagree\n");
    }
  }
}

/// Random shapes, pools from just large enough to ample, prompts drawn
/// from a few shared heads, arrivals spread out, sometimes an end token.
void scenarioStress() {
  Random random(6);
  int64_t runs = 0, requestsServed = 0, preemptions = 0, shared = 0;
  std::string problem;
  for (; runs < 400 && problem.empty(); ++runs) {
    const int64_t vocab = random.in(3, 40), P = random.in(1, 5);
    const int64_t T = random.in(2, 10);
    std::vector<std::vector<int32_t>> heads;
    for (int h = 0; h < 3; ++h)
      heads.push_back(randomPrompt(random, random.in(1, 3 * P), vocab));
    std::vector<Request> requests;
    int64_t largest = 1;
    for (int64_t i = 0, n = random.in(1, 12); i < n; ++i) {
      Request r{i, heads[size_t(random.in(0, 2))], random.in(1, 8), random.in(0, 20)}; // braces: in order
      std::vector<int32_t> more = randomPrompt(random, random.in(0, 2 * P), vocab);
      r.prompt.insert(r.prompt.end(), more.begin(), more.end());
      int64_t positions = int64_t(r.prompt.size()) + r.maxNew - 1;
      largest = std::max(largest, (positions + P - 1) / P);
      requests.push_back(r);
    }
    // One draw per statement: the order of a call's arguments is unspecified.
    const int64_t B = random.in(1, 4), Bp = random.in(1, 3), L = random.in(1, 7);
    const int64_t spare = random.in(0, 6), ample = random.in(0, 1);
    SchedulerConfig config = makeConfig(B, Bp, L, P, std::min(largest, T) + spare * ample, T);
    config.endToken = random.in(0, 1) ? random.in(0, vocab - 1) : -1;
    config.sharePrefixes = random.in(0, 3) != 0;
    // Not drawn: the other runs' draws stay those they were before waves.
    config.staticBatches = runs % 3 == 2;
    // A token budget (mixed iterations) in a quarter of the runs: from one
    // prompt token beside every decode row.
    config.tokenBudget = runs % 4 == 1 ? B + 1 + runs % 7 : 0;
    RunResult r = serveFake(config, vocab, requests);
    if (!r.problem.empty())
      problem = "run " + std::to_string(runs) + ": " + r.problem;
    requestsServed += int64_t(r.ids.size());
    preemptions += r.preemptions;
    shared += r.shared;
  }
  verdict("stress", problem,
          std::to_string(runs) + " random runs, " + std::to_string(requestsServed) +
              " requests served, " + std::to_string(preemptions) + " preemptions, " +
              std::to_string(shared) + " pages shared");
}

/// A token budget (a mixed program's rows): every iteration's decode rows
/// and prompt tokens fit it, the chunks shrink to what the decode rows
/// leave, and the ids are those of separate calls.
void scenarioTokenBudget() {
  const int64_t vocab = 64;
  Random random(7);
  std::vector<Request> requests;
  for (int64_t i = 0; i < 6; ++i)
    requests.push_back({i, randomPrompt(random, 4 + 5 * i, vocab), 6 + i, i});
  SchedulerConfig apart = makeConfig(3, 2, 8, 4, 64, 16);
  SchedulerConfig mixed = apart;
  mixed.tokenBudget = 10;
  RunResult a = serveFake(apart, vocab, requests), m = serveFake(mixed, vocab, requests);
  std::string problem = !m.problem.empty() ? m.problem : a.problem;
  int64_t full = 0, shortened = 0, most = 0;
  for (const Logged &l : m.log) {
    int64_t tokens = int64_t(l.plan.decode.size());
    for (const PrefillChunk &c : l.plan.prefill)
      tokens += int64_t(c.tokens.size());
    most = std::max(most, tokens);
    full += tokens == 10;
    // A chunk the budget cut: shorter than the chunk size, its prompt not done.
    for (const PrefillChunk &c : l.plan.prefill)
      shortened += !c.completesPrompt && int64_t(c.tokens.size()) < 8;
  }
  if (problem.empty() && a.ids != m.ids)
    problem = "the ids differ with and without the budget";
  if (problem.empty() && (full == 0 || shortened == 0))
    problem = "the budget was never filled (" + std::to_string(full) + ") or never cut a "
              "chunk (" + std::to_string(shortened) + ")";
  verdict("token budget", problem,
          "at most " + std::to_string(most) + " of 10 tokens per iteration, " +
              std::to_string(full) + " iterations full, " + std::to_string(shortened) +
              " chunks cut to the budget, ids equal to separate calls': " +
              (a.ids == m.ids ? "yes" : "no"));
}

//===----------------------------------------------------------------------===//
// Requests
//===----------------------------------------------------------------------===//

std::string idsText(const std::vector<int32_t> &ids) {
  std::string text;
  for (int32_t id : ids)
    text += (text.empty() ? "" : " ") + std::to_string(id);
  return "[" + text + "]";
}

int printRequests(const std::vector<ServeRequest> &requests, int64_t promptOf) {
  for (const ServeRequest &r : requests) {
    if (promptOf >= 0) {
      if (r.index == promptOf)
        for (int32_t id : r.prompt)
          std::printf("%d\n", id);
      continue;
    }
    if (!r.refusal.empty()) {
      std::printf("request %lld: refused: line %lld: %s\n", (long long)r.index,
                  (long long)r.line, r.refusal.c_str());
      continue;
    }
    std::printf("request %lld (line %lld): prompt %s max_new_tokens %lld temperature %g "
                "top_k %lld top_p %g seed %llu arrival_ms %g\n",
                (long long)r.index, (long long)r.line, idsText(r.prompt).c_str(),
                (long long)r.maxNewTokens, r.temperature, (long long)r.topK, r.topP,
                (unsigned long long)r.seed, r.arrivalMs);
  }
  return 0;
}

[[noreturn]] void usage(const std::string &why) {
  std::fprintf(stderr,
               "serve-scheduler-check: %s\nusage: serve-scheduler-check [scenarios]\n"
               "       serve-scheduler-check requests FILE --vocab V [--seed S] "
               "[--max-new-tokens N] [--context C] [--prompt-of I]\n"
               "       serve-scheduler-check poisson COUNT RATE MIN MAX --vocab V [--seed S]\n",
               why.c_str());
  std::exit(2);
}

/// The --flag VALUE options after the positional arguments.
RequestDefaults readOptions(int argc, char **argv, int first, int64_t *promptOf) {
  RequestDefaults defaults;
  for (int i = first; i < argc; i += 2) {
    std::string flag = argv[i];
    if (i + 1 >= argc)
      usage(flag + " needs a value");
    long long value = std::strtoll(argv[i + 1], nullptr, 10);
    if (flag == "--vocab")
      defaults.vocab = value;
    else if (flag == "--seed")
      defaults.seed = uint64_t(value);
    else if (flag == "--max-new-tokens")
      defaults.maxNewTokens = value;
    else if (flag == "--context")
      defaults.context = value;
    else if (flag == "--prompt-of" && promptOf)
      *promptOf = value;
    else
      usage("unknown option " + flag);
  }
  return defaults;
}

int requestsMode(int argc, char **argv) {
  if (argc < 3)
    usage("requests needs a file");
  int64_t promptOf = -1;
  RequestDefaults defaults = readOptions(argc, argv, 3, &promptOf);
  std::vector<ServeRequest> requests;
  std::string error;
  if (!readServeRequests(argv[2], defaults, &requests, &error)) {
    std::fprintf(stderr, "serve-scheduler-check: %s\n", error.c_str());
    return 1;
  }
  return printRequests(requests, promptOf);
}

int poissonMode(int argc, char **argv) {
  if (argc < 6)
    usage("poisson needs COUNT RATE MIN MAX");
  RequestDefaults defaults = readOptions(argc, argv, 6, nullptr);
  std::vector<ServeRequest> requests =
      poissonRequests(std::strtoll(argv[2], nullptr, 10), std::strtod(argv[3], nullptr),
                      std::strtoll(argv[4], nullptr, 10), std::strtoll(argv[5], nullptr, 10),
                      defaults.maxNewTokens, defaults);
  for (const ServeRequest &r : requests)
    std::printf("request %lld: arrival_ms %.6f prompt_len %zu seed %llu\n", (long long)r.index,
                r.arrivalMs, r.prompt.size(), (unsigned long long)r.seed);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "scenarios";
  if (mode == "requests")
    return requestsMode(argc, argv);
  if (mode == "poisson")
    return poissonMode(argc, argv);
  if (mode != "scenarios")
    usage("unknown mode " + mode);
  scenarioContinuous();
  scenarioChunked();
  scenarioPreemption();
  scenarioSharing();
  scenarioEndToken();
  scenarioStatic();
  scenarioTokenBudget();
  scenarioRefusals();
  scenarioNegative();
  scenarioStress();
  std::printf("serve-scheduler-check: %d failed\n", failures);
  return failures ? 1 : 0;
}

