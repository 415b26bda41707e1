//===- serve_report.cpp - what serving prints and writes ------------------===//

#include "serve_report.h"

#include "json.h"
#include "generate_ranks.h"
#include "program_calls.h"

#ifdef BRAID_RUNTIME_MPI
#include "comm_mpi.h"
#endif

#include <algorithm>

namespace braid::rt::driver {

using serve::ServeRequest;

namespace {
constexpr size_t kHeader = 10; ///< the counts before a replica's TTFTs
} // namespace

std::vector<double> ServeTotals::flatten() const {
  std::vector<double> out = {endMs,
                             double(requests),
                             double(refused),
                             double(completed),
                             double(tokens),
                             double(peakPages),
                             double(preemptions),
                             double(sharedPages),
                             double(iterations),
                             double(ttft.size())};
  out.insert(out.end(), ttft.begin(), ttft.end());
  out.insert(out.end(), tpot.begin(), tpot.end());
  return out;
}

void ServeTotals::addFlattened(const std::vector<double> &all) {
  for (size_t at = 0; at + kHeader <= all.size();) {
    const double *h = all.data() + at;
    endMs = std::max(endMs, h[0]);
    requests += int64_t(h[1]), refused += int64_t(h[2]), completed += int64_t(h[3]);
    tokens += int64_t(h[4]), peakPages = std::max(peakPages, int64_t(h[5]));
    preemptions += int64_t(h[6]), sharedPages += int64_t(h[7]), iterations += int64_t(h[8]);
    const size_t n = size_t(h[9]);
    ttft.insert(ttft.end(), h + kHeader, h + kHeader + n);
    for (size_t i = 0; i < n; ++i)
      if (h[kHeader + n + i] >= 0)
        tpot.push_back(h[kHeader + n + i]);
    at += kHeader + 2 * n;
  }
}

/// The summary line, over every replica (printed by the launch's first rank).
void summarizeServing(const Session &s, const ServeTotals &local, int64_t poolPages) {
  ServeTotals all;
  if (s.ranks.replicas > 1 && !s.args.disaggregate) {
#ifdef BRAID_RUNTIME_MPI
    // Only each replica's first rank reports; the others send nothing.
    all.addFlattened(mpi::gatherOnLaunchRoot(s.ranks.rank == 0 ? local.flatten()
                                                               : std::vector<double>()));
#endif
    if (s.ranks.replica != 0 || s.ranks.rank != 0)
      return;
  } else {
    all.addFlattened(local.flatten());
  }
  if (!s.talks)
    return;
  const std::vector<double> &ttft = all.ttft, &tpot = all.tpot;
  const double seconds = all.endMs / 1e3;
  const std::string replicas =
      s.args.disaggregate ? " (each group's pool; prefill and decode groups)"
      : s.ranks.replicas > 1
          ? " (of a replica; " + std::to_string(s.ranks.replicas) + " replicas)"
          : "";
  std::printf("%sserve: %lld requests (%lld refused), %.2f requests/s, %.1f output tokens/s, "
              "ttft median/p90/p99 %.1f/%.1f/%.1f ms, tpot median/p90/p99 %.2f/%.2f/%.2f ms, "
              "pages peak %lld of %lld%s, preemptions %lld, shared pages %lld, iterations %lld\n",
              s.prefix.c_str(), (long long)all.requests, (long long)all.refused,
              seconds > 0 ? double(all.completed) / seconds : 0.0,
              seconds > 0 ? double(all.tokens) / seconds : 0.0, percentile(ttft, 0.5),
              percentile(ttft, 0.9), percentile(ttft, 0.99), percentile(tpot, 0.5),
              percentile(tpot, 0.9), percentile(tpot, 0.99), (long long)all.peakPages,
              (long long)poolPages, replicas.c_str(), (long long)all.preemptions,
              (long long)all.sharedPages, (long long)all.iterations);
  std::fflush(stdout);
}

/// A refused request on stdout (and stderr) and in --output.
void reportRefusal(const Session &s, const ServeRequest &request, std::FILE *output) {
  std::string where = request.line ? "line " + std::to_string(request.line) + ": " : "";
  if (s.talks) {
    std::fprintf(stderr, "%s: %srequest %lld refused: %s%s\n", s.argv0, s.prefix.c_str(),
                 (long long)request.index, where.c_str(), request.refusal.c_str());
    std::printf("%srequest %lld: refused: %s%s\n", s.prefix.c_str(), (long long)request.index,
                where.c_str(), request.refusal.c_str());
    std::fflush(stdout);
  }
  if (output) {
    std::string line = "{\"request\": " + std::to_string(request.index) +
                       ", \"line\": " + std::to_string(request.line) +
                       ", \"refused\": " + json::quote(request.refusal) + "}\n";
    std::fputs(line.c_str(), output);
    std::fflush(output);
  }
}

void reportCompletion(const Session &s, const ServeRequest &request,
                      const serve::Finished &finished, double ttftMs, double tpotMs,
                      std::FILE *output) {
  if (s.talks) {
    std::string line = s.prefix + "request " + std::to_string(request.index) + ":";
    for (int32_t id : finished.ids)
      line += " " + std::to_string(id);
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
  if (!output)
    return;
  std::string line = "{\"request\": " + std::to_string(request.index) +
                     ", \"line\": " + std::to_string(request.line) + ", \"ids\": [";
  for (size_t i = 0; i < finished.ids.size(); ++i)
    line += (i ? ", " : "") + std::to_string(finished.ids[i]);
  char times[128];
  std::snprintf(times, sizeof times,
                "], \"finish\": \"%s\", \"ttft_ms\": %.3f, \"tpot_ms\": %.3f}\n",
                finished.endToken ? "end_token" : "length", ttftMs, tpotMs);
  line += times;
  std::fputs(line.c_str(), output);
  std::fflush(output);
}

/// --replicas R (serving's data parallelism, as vLLM's engines): replica r
/// serves the requests whose index is r modulo R, with its own pool and
/// scheduler.
void keepReplicaShare(const Session &s, std::vector<ServeRequest> &requests) {
  if (s.ranks.replicas <= 1 || s.args.disaggregate)
    return;
  std::vector<ServeRequest> share;
  for (ServeRequest &request : requests)
    if (request.index % s.ranks.replicas == s.ranks.replica)
      share.push_back(std::move(request));
  requests = std::move(share);
}

/// --output, on each replica's first rank: emptied by the launch's first
/// rank, then appended to line by line by every replica (whole lines, each
/// one write).
std::FILE *openServeOutput(const Session &s, bool *failed) {
  *failed = false;
  if (s.args.outputFile.empty())
    return nullptr;
  // Each replica's first rank writes; disaggregated, the decode group's (the
  // second), which reports the requests.
  const bool writes =
      s.ranks.rank == 0 && (s.args.disaggregate ? s.ranks.replica == 1 : true);
  const bool first = writes && (s.args.disaggregate || s.ranks.replica == 0);
  std::vector<int32_t> failures = {0};
  if (first) {
    std::FILE *file = std::fopen(s.args.outputFile.c_str(), "w");
    failures[0] = file ? 0 : 1;
    if (file)
      std::fclose(file);
  }
  // Every rank of the launch learns whether the file could be made, so that
  // all refuse together (none waits for a partner that left).
#ifdef BRAID_RUNTIME_MPI
  if (s.ranks.replicas > 1)
    mpi::maxOnLaunch(failures);
  else
#endif
      if (s.multi)
    maxOverRanks(s.rt.get(), failures);
  *failed = failures[0] != 0;
  if (*failed || !writes)
    return nullptr;
  std::FILE *file = std::fopen(s.args.outputFile.c_str(), "a");
  *failed = file == nullptr; // the first opened it a moment ago
  if (file)
    std::setvbuf(file, nullptr, _IOFBF, 1 << 16); // a line goes out in one write (fflush)
  return file;
}

/// The trace's words for an iteration's calls.
std::string describePrefill(const std::vector<serve::PrefillChunk> &chunks) {
  std::string text;
  for (const serve::PrefillChunk &chunk : chunks)
    text += (text.empty() ? "" : ", ") + std::string("request ") +
            std::to_string(chunk.sequence) + " at " + std::to_string(chunk.position) + " +" +
            std::to_string(chunk.tokens.size()) + (chunk.completesPrompt ? " (last)" : "");
  return text;
}

std::string describeDecode(const std::vector<serve::DecodeRow> &rows) {
  std::string text = std::to_string(rows.size()) + " rows: requests";
  for (const serve::DecodeRow &row : rows)
    text += " " + std::to_string(row.sequence);
  return text;
}

std::string describeIteration(const serve::Iteration &iteration) {
  auto list = [](const std::vector<int64_t> &ids) {
    std::string text;
    for (int64_t id : ids)
      text += (text.empty() ? "" : " ") + std::to_string(id);
    return text.empty() ? std::string("none") : text;
  };
  return std::to_string(iteration.prefill.size()) + " prompt chunks, " +
         std::to_string(iteration.decode.size()) + " decode rows; admitted " +
         list(iteration.admitted) + "; preempted " + list(iteration.preempted);
}

} // namespace braid::rt::driver
