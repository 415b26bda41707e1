//===- driver_serve.cpp - continuous batching over paged programs ---------===//
//
//   PROGRAM --serve REQUESTS.jsonl | --rate R [--requests N] [--prompt-len L]
//           [--min-prompt-len M] [--generate N] [--output FILE]
//           [--end-token ID] [--logits-out DIR] [--seed S] [--static-batching]
//
// A serving binary holds prefill and decode programs derived with a paged KV
// cache (--braid-derive-inference page-size=P): prefill takes Bp rows of at
// most L prompt tokens (a chunk), decode B rows of one token (the running
// sequences), both with each row's positions, last real row (-1: idle),
// page table [rows, T] and (prefill, Mamba layers) the decode row whose
// Mamba state it advances. The scheduler (serve_scheduler.h) decides each
// iteration: the chunks of prompts to prefill (a prompt longer than L takes
// several iterations, each beside the decode rows), then one decode row per
// running sequence; this file runs the two calls and hands back the drawn
// tokens. Requests arrive at their arrival_ms (a wall clock from the start);
// every rank admits the same ones (the largest count any rank saw).
// --static-batching admits them in waves instead (serve_scheduler.h, policy
// 6): the baseline bench/serving measures continuous batching against.
//
// stdout: each request's ids as it completes, "request R: ID ...", a refused
// one's "request R: refused: line L: WHY" (also on stderr), then
//   serve: Q requests (F refused), X requests/s, Y output tokens/s, ttft
//   median/p90/p99 A/B/C ms, tpot median/p90/p99 D/E/F ms, pages peak U of
//   N, preemptions K, shared pages S, iterations I
// --output FILE gets one JSON object per request as it completes:
//   {"request": R, "line": L, "ids": [...], "finish": "length"|"end_token",
//    "ttft_ms": T, "tpot_ms": U}  (a refused one: {"request": R, "line": L,
//    "refused": WHY}), flushed line by line, so that what completed before a
//   failure is kept.
// --logits-out DIR writes each request's logits that chose its tokens, as
// --generate does, for braid-run --serve --verify to compare with the same
// requests generated alone on one rank.
// Exit status: 0, or 2 when a request was refused (the others ran).
//
// Test hooks (BRAID_TEST_SERVE_FAULT), each a bug --verify must see:
// "page" points every decode row's first page table entry but the first
// row's at the first row's page (a page table entry pointing at another
// sequence's page); "chunk" starts every prompt chunk after a sequence's
// first one position early (a chunk boundary off by one).
//
//===----------------------------------------------------------------------===//

#include "driver.h"

#include "generate_logits.h"
#include "generate_ranks.h"
#include "generate_requests.h"
#include "json.h"
#include "npy.h"
#include "program_calls.h"
#include "serve_mixed.h"
#include "serve_requests.h"
#include "serve_report.h"
#include "serve_scheduler.h"
#include "serve_transfer.h"

#ifdef BRAID_RUNTIME_MPI
#include "comm_mpi.h"
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <thread>

namespace braid::rt::driver {

namespace {

using serve::ServeRequest;
using Clock = std::chrono::steady_clock;

/// BRAID_TEST_SERVE_FAULT, or empty.
std::string serveFault() {
  const char *hook = std::getenv("BRAID_TEST_SERVE_FAULT");
  return hook ? hook : "";
}

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// A request's life in the run: when each token was drawn and, for
/// --logits-out, the logits that chose it (by step).
struct RequestLife {
  ServeRequest *request = nullptr;
  /// When it arrived on this rank's clock: its arrival_ms, or earlier when
  /// another rank's clock admitted it first (every rank admits what any has
  /// seen arrive), so that its time to first token is never negative.
  double arrivedMs = 0;
  std::vector<double> tokenMs; ///< ms from the start
  std::vector<int32_t> ids;    ///< once finished
  std::map<int64_t, std::vector<float>> logits;
};

/// What this rank's group runs: both calls, or (--disaggregate) the
/// prefill calls or the decode calls of the same plan.
enum class Role { Colocated, Prefill, Decode };

Role roleOf(const Session &s) {
  if (!s.args.disaggregate)
    return Role::Colocated;
  return s.ranks.replica == 0 ? Role::Prefill : Role::Decode;
}

/// The serving loop.
class Server {
public:
  Server(Session &s, const InferencePrograms &programs, const ServeShapes &shapes,
         std::vector<ServeRequest> &requests, std::FILE *output)
      : s(s), programs(programs), shapes(shapes), scheduler(configOf(s, shapes)), caller(s),
        output(output), role(roleOf(s)) {
    for (ServeRequest &request : requests)
      lives[request.index].request = &request;
    if (role != Role::Colocated)
      transfer.emplace(s);
  }

  /// Serves every request (those refused by the file already reported).
  void run(std::vector<ServeRequest> &requests);
  /// What the summary counts, of this replica.
  ServeTotals totals() const;
  /// --logits-out DIR/request<R>.npy of each completed request.
  void writeLogits() const;
  int64_t refused = 0;

private:
  static serve::SchedulerConfig configOf(const Session &s, const ServeShapes &shapes) {
    serve::SchedulerConfig config;
    config.decodeRows = shapes.decodeRows;
    config.prefillRows = shapes.prefillRows;
    config.chunk = shapes.chunk;
    config.pageSize = shapes.pageSize;
    config.pages = shapes.pages;
    config.pagesPerSequence = shapes.tableEntries;
    config.endToken = s.args.endToken;
    // A shared page holds the keys and values of its prefix, not the Mamba
    // states after it: a model with Mamba layers computes every prefix.
    config.sharePrefixes = !shapes.mamba;
    // The baseline continuous batching is measured against (bench/serving).
    config.staticBatches = s.args.staticBatching;
    // A mixed program runs an iteration's decode rows and prompt tokens in
    // one call: the iteration holds at most its rows (disaggregated groups
    // run the two apart, so they keep the separate calls).
    if (roleOf(s) == Role::Colocated)
      config.tokenBudget = shapes.tokenBudget();
    return config;
  }

  void admitArrivals(size_t *next, const std::vector<ServeRequest *> &order);
  /// --trace: the interval from *beginUs to now on the lane "serve" (and
  /// *beginUs moved to now).
  void traceSpan(const std::string &name, const std::string &detail, double *beginUs);
  void waitForArrival(const ServeRequest &request);
  std::vector<int32_t> runPrefill(const std::vector<serve::PrefillChunk> &chunks);
  std::vector<int32_t> runDecode(const std::vector<serve::DecodeRow> &rows);
  int64_t runMixed(const serve::Iteration &iteration, std::vector<int32_t> &prefillIds,
                   std::vector<int32_t> &decodeIds);
  std::vector<int32_t> call(const braid_program &program, const CallInputs &inputs,
                            const char *what, std::vector<float> *logits);
  SampleInputs sampleInputs(int64_t rows) const;
  void setSample(SampleInputs &in, int64_t row, int64_t sequence, int64_t step) const;
  void keepLogits(const std::vector<float> &logits, int64_t row, int64_t sequence,
                  int64_t step);
  void finish(const serve::Finished &finished);
  /// --disaggregate: the iteration's calls on this group, the prefilled
  /// rows moved, the drawn tokens (and the first tokens' logits) shared.
  void runCalls(const serve::Iteration &iteration, std::vector<int32_t> &prefillIds,
                std::vector<int32_t> &decodeIds);
  void shareTokens(const serve::Iteration &iteration, std::vector<int32_t> &prefillIds,
                   std::vector<int32_t> &decodeIds);

  Session &s;
  const InferencePrograms &programs;
  ServeShapes shapes;
  serve::Scheduler scheduler;
  ProgramCaller caller;
  std::FILE *output;
  std::map<int64_t, RequestLife> lives;
  std::vector<int64_t> completed; ///< in completion order
  Clock::time_point start = Clock::now();
  double endMs = 0;
  int64_t iterations = 0;
  Role role;
  std::optional<CacheTransfer> transfer;
  /// The logits of the prefill rows that completed a prompt, in chunk order
  /// (--logits-out, shared with the decode group).
  std::vector<float> firstTokenLogits;
};

/// Admits every request whose arrival time has come (the same ones on every
/// rank: the most any rank counts).
void Server::admitArrivals(size_t *next, const std::vector<ServeRequest *> &order) {
  std::vector<int32_t> count = {0};
  const double now = msSince(start);
  while (*next + size_t(count[0]) < order.size() &&
         order[*next + size_t(count[0])]->arrivalMs <= now)
    ++count[0];
#ifdef BRAID_RUNTIME_MPI
  if (role != Role::Colocated)
    mpi::maxOnLaunch(count); // both groups plan alike
  else
#endif
      if (s.multi)
    maxOverRanks(s.rt.get(), count);
  for (int32_t i = 0; i < count[0]; ++i) {
    ServeRequest &request = *order[(*next)++];
    lives[request.index].arrivedMs = std::min(request.arrivalMs, now);
    std::string why;
    if (scheduler.arrive(request.index, request.prompt, request.maxNewTokens, &why))
      continue;
    request.refusal = why;
    reportRefusal(s, request, output);
    ++refused;
  }
}

void Server::traceSpan(const std::string &name, const std::string &detail, double *beginUs) {
  const double now = Trace::nowUs();
  if (!s.args.traceFile.empty())
    s.rt->trace.addSpan({"serve", name, detail, caller.calls, *beginUs, now});
  *beginUs = now;
}

void Server::waitForArrival(const ServeRequest &request) {
  double wait = request.arrivalMs - msSince(start);
  if (wait > 0)
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(wait));
}

void Server::run(std::vector<ServeRequest> &requests) {
  std::vector<ServeRequest *> order;
  for (ServeRequest &request : requests)
    if (request.refusal.empty())
      order.push_back(&request);
  std::sort(order.begin(), order.end(), [](const ServeRequest *a, const ServeRequest *b) {
    return a->arrivalMs != b->arrivalMs ? a->arrivalMs < b->arrivalMs : a->index < b->index;
  });
  size_t next = 0;
  start = Clock::now();
  while (true) {
    admitArrivals(&next, order);
    if (!scheduler.busy()) {
      if (next == order.size())
        break;
      waitForArrival(*order[next]);
      continue;
    }
    serve::Iteration iteration = scheduler.plan();
    if (iteration.prefill.empty() && iteration.decode.empty())
      fatal("serve: the scheduler has requests but planned nothing (pages %lld of %lld in use)",
            (long long)scheduler.pagesInUse(), (long long)shapes.pages);
    ++iterations;
    double iterationUs = Trace::nowUs();
    std::vector<int32_t> prefillIds, decodeIds;
    runCalls(iteration, prefillIds, decodeIds);
    traceSpan("iteration " + std::to_string(iterations), describeIteration(iteration),
              &iterationUs);
    const double now = msSince(start);
    for (size_t i = 0; i < iteration.prefill.size(); ++i)
      if (iteration.prefill[i].completesPrompt)
        lives[iteration.prefill[i].sequence].tokenMs.push_back(now);
    for (const serve::DecodeRow &row : iteration.decode)
      lives[row.sequence].tokenMs.push_back(now);
    for (const serve::Finished &finished : scheduler.complete(prefillIds, decodeIds))
      finish(finished);
    if (std::string problem = scheduler.checkInvariants(); !problem.empty())
      fatal("serve: the scheduler's pages are inconsistent: %s", problem.c_str());
  }
  endMs = msSince(start);
}

void Server::runCalls(const serve::Iteration &iteration, std::vector<int32_t> &prefillIds,
                      std::vector<int32_t> &decodeIds) {
  double callUs = Trace::nowUs();
  if (role == Role::Colocated && !shapes.mixed.empty() && !iteration.prefill.empty()) {
    const int64_t rows = runMixed(iteration, prefillIds, decodeIds);
    traceSpan("mixed", describeIteration(iteration) + " in " + std::to_string(rows) + " rows",
              &callUs);
    return;
  }
  if (role != Role::Decode && !iteration.prefill.empty()) {
    prefillIds = runPrefill(iteration.prefill);
    traceSpan("prefill", describePrefill(iteration.prefill), &callUs);
  }
  std::vector<std::vector<int32_t>> tables;
  for (const serve::PrefillChunk &chunk : iteration.prefill)
    tables.push_back(scheduler.pageTable(chunk.slot));
  if (role == Role::Prefill && !iteration.prefill.empty()) {
    transfer->send(iteration.prefill, tables);
    traceSpan("send cache", describePrefill(iteration.prefill), &callUs);
  }
  if (role != Role::Prefill && !iteration.decode.empty()) {
    decodeIds = runDecode(iteration.decode);
    traceSpan("decode", describeDecode(iteration.decode), &callUs);
  }
  if (role == Role::Decode && !iteration.prefill.empty()) {
    transfer->receive(iteration.prefill, tables);
    traceSpan("receive cache", describePrefill(iteration.prefill), &callUs);
  }
  if (role != Role::Colocated)
    shareTokens(iteration, prefillIds, decodeIds);
}

/// The prefill group's first rank gives its tokens (and, for --logits-out,
/// the first tokens' logits) to every rank, the decode group's first rank
/// its own, so that both groups complete the iteration alike.
void Server::shareTokens(const serve::Iteration &iteration, std::vector<int32_t> &prefillIds,
                         std::vector<int32_t> &decodeIds) {
#ifdef BRAID_RUNTIME_MPI
  prefillIds.resize(iteration.prefill.size());
  decodeIds.resize(iteration.decode.size());
  // The decode group's first rank follows the prefill group's ranks.
  const int32_t decodeRoot =
      role == Role::Prefill ? s.ranks.size : s.ranks.launchSize - s.ranks.size;
  mpi::broadcastOnLaunch(prefillIds.data(), int64_t(prefillIds.size() * sizeof(int32_t)), 0);
  mpi::broadcastOnLaunch(decodeIds.data(), int64_t(decodeIds.size() * sizeof(int32_t)),
                         decodeRoot);
  if (s.args.logitsOut.empty())
    return;
  size_t completing = 0;
  for (const serve::PrefillChunk &chunk : iteration.prefill)
    completing += chunk.completesPrompt ? 1 : 0;
  firstTokenLogits.resize(completing * size_t(shapes.vocab));
  mpi::broadcastOnLaunch(firstTokenLogits.data(),
                         int64_t(firstTokenLogits.size() * sizeof(float)), 0);
  size_t row = 0;
  for (const serve::PrefillChunk &chunk : iteration.prefill)
    if (chunk.completesPrompt)
      keepLogits(firstTokenLogits, int64_t(row++), chunk.sequence, chunk.step);
#else
  (void)iteration, (void)prefillIds, (void)decodeIds;
  fatal("--disaggregate needs ranks launched by mpirun");
#endif
}

SampleInputs Server::sampleInputs(int64_t rows) const {
  SampleInputs in;
  in.seeds.assign(size_t(rows), int64_t(s.args.seed));
  in.steps.assign(size_t(rows), 0);
  in.temperature.assign(size_t(rows), 0.0f);
  in.topK.assign(size_t(rows), 0);
  in.topP.assign(size_t(rows), 1.0f);
  return in;
}

void Server::setSample(SampleInputs &in, int64_t row, int64_t sequence, int64_t step) const {
  const ServeRequest &request = *lives.at(sequence).request;
  in.seeds[size_t(row)] = int64_t(request.seed);
  in.steps[size_t(row)] = step;
  // As braid.sample reads them: f32.
  in.temperature[size_t(row)] = float(request.temperature);
  in.topK[size_t(row)] = int32_t(request.topK);
  in.topP[size_t(row)] = float(request.topP);
}

/// Runs one call and returns the ids it drew (whole on every rank); its
/// logits too when `logits` is given.
std::vector<int32_t> Server::call(const braid_program &program, const CallInputs &inputs,
                                  const char *what, std::vector<float> *logits) {
  ProgramCaller::Launched launched = caller.launch(program, inputs, what);
  std::vector<int32_t> ids = caller.ids(launched);
  if (logits)
    *logits = caller.logits(launched);
  caller.release(program, launched, what);
  return ids;
}

void Server::keepLogits(const std::vector<float> &logits, int64_t row, int64_t sequence,
                        int64_t step) {
  const float *first = logits.data() + size_t(row * shapes.vocab);
  lives[sequence].logits[step].assign(first, first + shapes.vocab);
}

/// The iteration's prompt chunks, one per prefill row (the others idle).
std::vector<int32_t> Server::runPrefill(const std::vector<serve::PrefillChunk> &chunks) {
  if (chunks.empty())
    return {};
  const int64_t rows = shapes.prefillRows, L = shapes.chunk, T = shapes.tableEntries;
  std::vector<int32_t> tokens(size_t(rows * L), 0), positions(size_t(rows), 0),
      lastRows(size_t(rows), -1), pages(size_t(rows * T), -1), slots(size_t(rows), 0);
  SampleInputs sample = sampleInputs(rows);
  for (const serve::PrefillChunk &chunk : chunks) {
    const size_t r = size_t(chunk.row);
    std::copy(chunk.tokens.begin(), chunk.tokens.end(), tokens.begin() + r * size_t(L));
    positions[r] = int32_t(chunk.position);
    if (chunk.position > 0 && serveFault() == "chunk")
      --positions[r];
    lastRows[r] = int32_t(chunk.tokens.size()) - 1;
    std::vector<int32_t> table = scheduler.pageTable(chunk.slot);
    std::copy(table.begin(), table.end(), pages.begin() + r * size_t(T));
    slots[r] = int32_t(chunk.slot);
    setSample(sample, chunk.row, chunk.sequence, chunk.step);
  }
  CallInputs inputs;
  inputs.add("tokens", &tokens).add("positions", &positions).add("last_rows", &lastRows);
  inputs.add("pages", &pages).addSample(&sample);
  if (shapes.slots)
    inputs.add("slots", &slots);
  std::vector<float> logits;
  const bool keep = !s.args.logitsOut.empty();
  std::vector<int32_t> drawn = call(*programs.prefill, inputs, "prefill", keep ? &logits : nullptr);
  std::vector<int32_t> ids;
  firstTokenLogits.clear();
  for (const serve::PrefillChunk &chunk : chunks) {
    ids.push_back(drawn[size_t(chunk.row)]);
    if (!keep || !chunk.completesPrompt)
      continue;
    keepLogits(logits, chunk.row, chunk.sequence, chunk.step);
    const float *first = logits.data() + size_t(chunk.row * shapes.vocab);
    firstTokenLogits.insert(firstTokenLogits.end(), first, first + shapes.vocab);
  }
  return ids;
}

/// One decode row per running sequence, in its slot (the others idle).
std::vector<int32_t> Server::runDecode(const std::vector<serve::DecodeRow> &rows) {
  if (rows.empty())
    return {};
  const int64_t B = shapes.decodeRows, T = shapes.tableEntries;
  std::vector<int32_t> tokens(size_t(B), 0), positions(size_t(B), 0), lastRows(size_t(B), -1),
      pages(size_t(B * T), -1);
  SampleInputs sample = sampleInputs(B);
  for (const serve::DecodeRow &row : rows) {
    const size_t r = size_t(row.slot);
    tokens[r] = row.token;
    positions[r] = int32_t(row.position);
    lastRows[r] = 0;
    std::vector<int32_t> table = scheduler.pageTable(row.slot);
    std::copy(table.begin(), table.end(), pages.begin() + r * size_t(T));
    setSample(sample, row.slot, row.sequence, row.step);
  }
  if (serveFault() == "page")
    for (size_t j = 1; j < rows.size(); ++j)
      pages[size_t(rows[j].slot) * size_t(T)] = pages[size_t(rows[0].slot) * size_t(T)];
  CallInputs inputs;
  inputs.add("tokens", &tokens).add("positions", &positions).add("last_rows", &lastRows);
  inputs.add("pages", &pages).addSample(&sample);
  std::vector<float> logits;
  const bool keep = !s.args.logitsOut.empty();
  std::vector<int32_t> drawn = call(*programs.decode, inputs, "decode", keep ? &logits : nullptr);
  std::vector<int32_t> ids;
  for (const serve::DecodeRow &row : rows) {
    ids.push_back(drawn[size_t(row.slot)]);
    if (keep)
      keepLogits(logits, row.slot, row.sequence, row.step);
  }
  return ids;
}

/// The iteration's decode rows and prompt chunks as rows of one call of the
/// smallest mixed program that holds them (serve_mixed.h lays them out);
/// returns the program's rows.
int64_t Server::runMixed(const serve::Iteration &iteration, std::vector<int32_t> &prefillIds,
                         std::vector<int32_t> &decodeIds) {
  const size_t pick = serve::pickMixedShape(iteration, shapes.mixed);
  const serve::MixedShape shape = shapes.mixed[pick];
  const int64_t T = shapes.tableEntries;
  serve::MixedLayout layout = serve::layoutMixedCall(
      iteration, shape, T, [&](int64_t slot) { return scheduler.pageTable(slot); },
      serveFault() == "chunk" ? 1 : 0);
  const int64_t G = shape.rows / shape.groups;
  if (serveFault() == "page")
    for (size_t j = 1; j < layout.decodeGroups.size(); ++j)
      layout.pages[size_t(layout.decodeGroups[j] * G * T)] =
          layout.pages[size_t(layout.decodeGroups[0] * G * T)];
  SampleInputs sample = sampleInputs(shape.groups);
  for (size_t j = 0; j < iteration.decode.size(); ++j)
    setSample(sample, layout.decodeGroups[j], iteration.decode[j].sequence,
              iteration.decode[j].step);
  for (size_t c = 0; c < iteration.prefill.size(); ++c)
    if (layout.chunkGroups[c] >= 0)
      setSample(sample, layout.chunkGroups[c], iteration.prefill[c].sequence,
                iteration.prefill[c].step);
  CallInputs inputs;
  inputs.add("tokens", &layout.tokens).add("positions", &layout.positions);
  inputs.add("last_rows", &layout.lastRows).add("pages", &layout.pages);
  inputs.add("logit_rows", &layout.logitRows).addSample(&sample);
  std::vector<float> logits;
  const bool keep = !s.args.logitsOut.empty();
  std::vector<int32_t> drawn =
      call(*programs.mixed[pick], inputs, "mixed", keep ? &logits : nullptr);
  decodeIds.clear();
  for (size_t j = 0; j < iteration.decode.size(); ++j) {
    decodeIds.push_back(drawn[size_t(layout.decodeGroups[j])]);
    if (keep)
      keepLogits(logits, layout.decodeGroups[j], iteration.decode[j].sequence,
                 iteration.decode[j].step);
  }
  prefillIds.assign(iteration.prefill.size(), 0);
  for (size_t c = 0; c < iteration.prefill.size(); ++c) {
    if (layout.chunkGroups[c] < 0)
      continue;
    prefillIds[c] = drawn[size_t(layout.chunkGroups[c])];
    if (keep)
      keepLogits(logits, layout.chunkGroups[c], iteration.prefill[c].sequence,
                 iteration.prefill[c].step);
  }
  return shape.rows;
}

/// Mean time per output token after the first; 0 for one token.
double tpotMs(const RequestLife &life) {
  if (life.tokenMs.size() < 2)
    return 0;
  return (life.tokenMs.back() - life.tokenMs.front()) / double(life.tokenMs.size() - 1);
}

void Server::finish(const serve::Finished &finished) {
  RequestLife &life = lives[finished.sequence];
  completed.push_back(finished.sequence);
  life.tokenMs.resize(finished.ids.size());
  life.ids = finished.ids;
  reportCompletion(s, *life.request, finished, life.tokenMs.front() - life.arrivedMs,
                   tpotMs(life), output);
}

ServeTotals Server::totals() const {
  ServeTotals t;
  t.endMs = endMs;
  t.requests = int64_t(lives.size());
  t.refused = refused;
  t.completed = int64_t(completed.size());
  t.peakPages = scheduler.peakPagesInUse();
  t.preemptions = scheduler.preemptions();
  t.sharedPages = scheduler.sharedPages();
  t.iterations = iterations;
  for (int64_t sequence : completed) {
    const RequestLife &life = lives.at(sequence);
    t.ttft.push_back(life.tokenMs.front() - life.arrivedMs);
    t.tpot.push_back(life.tokenMs.size() > 1 ? tpotMs(life) : -1.0);
    t.tokens += int64_t(life.tokenMs.size());
  }
  return t;
}

void Server::writeLogits() const {
  if (s.args.logitsOut.empty() || s.ranks.rank != 0 || role == Role::Prefill)
    return;
  for (int64_t sequence : completed) {
    const RequestLife &life = lives.at(sequence);
    std::vector<float> rows;
    for (size_t step = 0; step < life.ids.size(); ++step) {
      auto it = life.logits.find(int64_t(step));
      if (it == life.logits.end())
        fatal("serve: request %lld has no logits for step %zu", (long long)sequence, step);
      rows.insert(rows.end(), it->second.begin(), it->second.end());
    }
    std::string path = s.args.logitsOut + "/request" + std::to_string(sequence) + ".npy", error;
    if (!npy::writeTensor(path, BRAID_F32,
                          {int64_t(life.ids.size()), shapes.vocab}, rows.data(), &error))
      fatal("--logits-out: %s", error.c_str());
  }
}

} // namespace

int runServing(Session &s, const InferencePrograms &programs) {
  if (!s.args.resume.empty() || !s.args.checkpointDir.empty())
    return s.refuse("serving starts from initialized parameters (the seed's, or "
                    "--init-from's; --resume and --checkpoint-dir are for training)");
  if (!s.args.serveFile.empty() && s.args.rate > 0)
    return s.refuse("--serve FILE and --rate R are two sources of requests: give one");
  if (s.args.disaggregate && s.ranks.replicas != 2)
    return s.refuse("--disaggregate serves with two groups of ranks (--groups P,D): prefill, "
                    "then decode");
  // Disaggregated, the decode group reports what is served.
  if (roleOf(s) == Role::Prefill)
    s.talks = false;
  for (const std::string &axis : s.grid.names)
    if (axis != "tp" && axis != "world")
      return s.refuse("serving runs on one rank or a tp grid; the " + axis +
                      " axis is not served yet");
  const ServeShapes shapes = serveShapesOf(programs);
  serve::RequestDefaults defaults = requestDefaultsOf(s.args, shapes.vocab, shapes.context);
  std::vector<ServeRequest> requests;
  if (s.args.rate > 0) {
    const int64_t longest = s.args.promptLen ? s.args.promptLen : shapes.chunk;
    const int64_t shortest = s.args.minPromptLen ? s.args.minPromptLen : longest;
    if (shortest > longest)
      return s.refuse("--min-prompt-len exceeds --prompt-len");
    requests = serve::poissonRequests(s.args.serveRequests, s.args.rate, shortest, longest,
                                      s.args.generate, defaults);
  } else {
    std::string error;
    if (!serve::readServeRequests(s.args.serveFile, defaults, &requests, &error))
      return s.refuse("--serve: " + error);
  }
  keepReplicaShare(s, requests);
  // The requests are read before anything is initialized: an unreadable
  // file ends the run first.
  bool outputFailed = false;
  std::FILE *output = openServeOutput(s, &outputFailed);
  if (outputFailed)
    return s.refuse("--output: cannot write " + s.args.outputFile);
  if (!initializeState(s))
    return s.stop(2);
  dumpInitialState(s);
  Server server(s, programs, shapes, requests, output);
  for (ServeRequest &request : requests)
    if (!request.refusal.empty()) {
      reportRefusal(s, request, output);
      ++server.refused;
    }
  server.run(requests);
  summarizeServing(s, server.totals(), shapes.pages);
  server.writeLogits();
  if (output)
    std::fclose(output);
  const int status = tearDown(s, /*peakIsPlanned=*/false);
  return exitStatus(s, status, status ? status : server.refused ? 2 : 0);
}

} // namespace braid::rt::driver
