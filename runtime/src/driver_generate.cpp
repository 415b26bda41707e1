//===- driver_generate.cpp - the run loop of generation -------------------===//
//
// (The requests, their refusals and the programs' sizes:
// generate_requests.h; the exchanges between ranks: generate_ranks.h.)
//
//   PROGRAM [--generate N] [--prompts FILE | --prompt-len L] [--seed S]
//           [--temperature T] [--top-k K] [--top-p P] [--verify-forward]
//
// A generation binary holds the prefill and decode programs of a model
// (braid-opt --braid-derive-inference) and, for --verify-forward, its
// forward program; they share the parameters and the KV cache (states
// cache.*) at the same arena offsets, and each has its own inputs and logits
// after them (a call allocates and frees its own).
//
// Requests: one per line of --prompts FILE (token ids separated by spaces),
// or B prompts (the programs' batch) of --prompt-len L tokens (default:
// prefill's prompt length, or less to leave N - 1 rows of the context) where token j of request r is rng.h's integer
// draw j in [0, vocab) of stream "prompt.<r>" under the seed: a prompt does
// not depend on the batch. Requests run in waves of B: prefill (tokens
// padded with 0, positions 0, last_rows = length - 1) samples token 0 from
// its logits; decode steps (tokens [B,1] at positions length, length+1, ...)
// sample tokens 1 to N-1 (sampling.h's semantics: greedy unless --temperature). The
// free slots of the last wave hold a one-token prompt whose ids are dropped.
//
// A request is refused, with a message naming it on stderr and a line
//   request R: refused: WHY
// on stdout, when its line is malformed, its prompt is empty or longer than
// prefill's prompt length, a token id is outside [0, vocab), or its prompt
// plus N - 1 exceeds the context (the cache rows per sequence); the others
// run. stdout has, for every request in order,
//   request R: ID ID ...
// then the summary
//   generate: Q requests (F refused), N tokens each, prefill X s, decode
//   median M ms/token p99 P ms/token, T tokens/s, cache C bytes per rank
// (decode times are of each decode call, one token for the whole wave;
// tokens/s counts the generated tokens over prefill and decode time), then
// the closing report's planned_peak_bytes (the largest program's arena) and
// measured_peak_bytes, not compared: without --verify-forward the forward
// program, often the largest, does not run.
// Exit status: 0, or 2 when a request was refused (the others still ran and
// printed), or 1 when --verify-forward failed.
//
// --verify-forward (braid-run --generate --verify) is teacher forcing: after
// each wave, the forward program runs on each request's prompt and generated
// ids (padded with 0 to the context) and, for every generated step t, the
// logits that chose token t (prefill's for t = 0, the decode step's after)
// are compared with the forward logits at row length - 1 + t: max |a - b| /
// max |b| per request and step, at most 1e-5 (f32; logits stored as bf16 or
// f16, the model's --dtype, are read as f32 and judged against a bound
// derived from their rounding, generate_logits.h, printed first as
//   verify: bound B at bf16: HOW). It prints
//   verify: ok (worst difference D at request R step T)
// or one "verify: FAIL request R step T: difference D > 1e-05" per failure.
// The test hook BRAID_TEST_PERTURB_LOGITS="R:T" adds 1e-3 of the logits'
// largest magnitude to logit 0 of request R at step T before the comparison
// (after sampling), so that a test sees --verify-forward fail; nothing else
// reads it.
//
// Sampling is the programs' last op (braid.sample, --braid-derive-inference
// sample=true): the driver gives each call its per-sequence seeds (seed +
// request), steps and options (temperature and top-p as the f32 the op
// reads) and reads the ids [B] the program returns after its logits; a
// program without them is sampled here (sampleToken, or on split logits
// sampleTokensParallel). --verify-forward also checks every drawn token
// against sampleToken on the whole row ("verify: FAIL request R step T: the
// program drew X, sampleToken Y").
//
// Several ranks: every rank runs the partitioned programs on its block of
// each input (cut from the global tokens and positions); the program's
// sampler exchanges a few words per row over the ranks that split the
// vocabulary (dist ops), and the ids are gathered over the ranks that split
// the batch, so every rank holds the same ids; logits are gathered whole
// (gatherGlobal) only to verify; rank 0 prints (every rank, prefixed, with
// --all-ranks).
//
//===----------------------------------------------------------------------===//

#include "driver.h"

#include "generate_logits.h"
#include "generate_requests.h"
#include "generate_ranks.h"
#include "program_calls.h"
#include "npy.h"
#include "sampling.h"
#include "sampling_parallel.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

namespace braid::rt::driver {

namespace {

constexpr double kVerifyTolerance = 1e-5;

int64_t numel(const braid_tensor_desc &desc) {
  int64_t n = 1;
  for (int32_t d = 0; d < desc.rank; ++d)
    n *= desc.shape[d];
  return n;
}

const braid_tensor_desc *findParam(const braid_program &program, const char *name) {
  for (int32_t i = 0; i < program.num_params; ++i)
    if (std::string(program.params[i].name) == name)
      return &program.params[i];
  return nullptr;
}

/// Fatal unless every parameter of `other` lies where prefill's does.
void checkSharedState(const braid_program &prefill, const braid_program &other,
                      const char *what) {
  for (int32_t i = 0; i < other.num_params; ++i) {
    const braid_tensor_desc &p = other.params[i];
    const braid_tensor_desc *q = findParam(prefill, p.name);
    if (!q || q->offset != p.offset || q->dtype != p.dtype || numel(*q) != numel(p))
      fatal("the %s program's %s is not prefill's (offset %lld)", what, p.name,
            (long long)p.offset);
  }
}

/// The time of each call, for the summary.
struct Timings {
  double prefillSeconds = 0;
  std::vector<double> decodeSeconds;
};

/// Generation over the requests, wave by wave.
class Generation {
public:
  Generation(Session &s, const InferencePrograms &programs, const Shapes &shapes)
      : s(s), rt(s.rt.get()), programs(programs), shapes(shapes) {
    bound = teacherForcingBound(shapes.logitsDtype, shapes.layers, kVerifyTolerance);
    // As braid.sample reads them: temperature and top-p rounded to f32.
    options.temperature = double(float(s.args.temperature));
    options.topK = s.args.topK;
    options.topP = double(float(s.args.topP));
  }

  /// Runs the requests that can run; false when --verify-forward failed.
  bool run(std::vector<Request> &requests) {
    std::vector<Request *> runnable;
    for (Request &request : requests)
      if (request.refusal = refusalOf(request, shapes); request.refusal.empty())
        runnable.push_back(&request);
    bool verified = true;
    for (size_t first = 0; first < runnable.size(); first += size_t(shapes.batch)) {
      std::vector<Request *> wave(runnable.begin() + first,
                                  runnable.begin() +
                                      std::min(runnable.size(), first + size_t(shapes.batch)));
      runWave(wave);
      if (s.args.verifyForward)
        verified &= verifyWave(wave);
    }
    return verified && drawnOk;
  }

  const Timings &timings() const { return times; }
  TeacherForcingBound bound; ///< of --verify-forward, by the logits' type
  double worst = 0;
  std::string worstAt;

private:
  /// Calls `program` and returns its `count` logits as f32, whole on every
  /// rank (gathered over the ranks that split them; a pipeline's last stage
  /// shares them): what verification reads. With `drawn`, also the token of
  /// each of the wave's rows at `step`, the same on every rank: the
  /// program's braid.sample's, else sampleToken's from the whole logits.
  std::vector<float> call(const braid_program &program, const CallInputs &inputs,
                          int64_t count, const char *what,
                          std::vector<int32_t> *drawn = nullptr,
                          const std::vector<Request *> *wave = nullptr, int64_t step = 0) {
    ProgramCaller::Launched launched = caller.launch(program, inputs, what);
    std::vector<float> values;
    if (launched.logits) {
      values = caller.logits(launched);
      if (drawn && launched.ids)
        *drawn = caller.ids(launched);
      else if (drawn)
        for (size_t b = 0; b < wave->size(); ++b)
          drawn->push_back(sampleToken(values.data() + b * size_t(shapes.vocab), shapes.vocab,
                                       (*wave)[b]->sampling, (*wave)[b]->seed, 0, step));
      if (drawn)
        drawn->resize(wave->size());
    }
    caller.release(program, launched, what);
    shareFromLastStage(rt, values, count);
    if (drawn) {
      shareFromLastStage(rt, *drawn, int64_t(wave->size()));
      checkDrawn(*wave, values, *drawn, step);
    }
    if (int64_t(values.size()) != count)
      fatal("%s: %zu logits, not the %lld expected", what, values.size(), (long long)count);
    return values;
  }

  /// Calls `program` and draws the token of each of the wave's rows at
  /// `step` from this rank's block of the logits: the vocabulary-parallel
  /// sampler (sampling_parallel.h) exchanges a few candidates per row over
  /// the ranks that split the vocabulary, never the logits, and draws what
  /// sampleToken draws from the whole row. A pipeline's last stage draws and
  /// shares the ids.
  std::vector<int32_t> callAndSample(const braid_program &program, const CallInputs &inputs,
                                     const std::vector<Request *> &wave, int64_t step,
                                     const char *what) {
    ProgramCaller::Launched launched = caller.launch(program, inputs, what);
    std::vector<int32_t> ids;
    if (launched.ids) {
      ids = caller.ids(launched);
      ids.resize(wave.size());
    } else if (launched.logits) {
      const Persistent &logits = *launched.logits;
      std::vector<char> local(size_t(logits.bytes));
      rt->backend->copyToHost(local.data(), rt->arena + launched.out.offset, logits.bytes);
      std::vector<float> block = logitsAsF32(local.data(), logits.numel, launched.out.dtype);
      std::string group;
      VocabBlock vocab = vocabBlockOf(block.data(), logits.shape[0], logits.layout, s.grid,
                                      s.coords, shapes.vocab, &group);
      std::vector<int64_t> requests;
      for (const Request *request : wave) {
        requests.push_back(request->index);
        const SamplingOptions &own = request->sampling;
        if (request->seed != s.args.seed + uint64_t(request->index) ||
            own.temperature != options.temperature || own.topK != options.topK ||
            own.topP != options.topP)
          fatal("request %lld samples with its own options, which a program without "
                "braid.sample cannot follow (--braid-derive-inference sample=true)",
                (long long)request->index);
      }
      ids = group.empty()
                ? sampleTokensParallel(vocab, gatherAlone(), options, s.args.seed, requests, step)
                : sampleTokensParallel(vocab, *braid_rt_comm(rt, group.c_str())->impl,
                                       *rt->backend, options, s.args.seed, requests, step);
    }
    caller.release(program, launched, what);
    shareFromLastStage(rt, ids, int64_t(wave.size()));
    return ids;
  }

  /// braid.sample's inputs for the wave's token `step` (free slots draw
  /// as request 0 and are dropped).
  SampleInputs sampleInputs(const std::vector<Request *> &wave, int64_t step) const {
    const auto B = size_t(shapes.batch);
    SampleInputs in;
    in.seeds.assign(B, int64_t(s.args.seed));
    in.steps.assign(B, step);
    in.temperature.assign(B, float(options.temperature));
    in.topK.assign(B, int32_t(options.topK));
    in.topP.assign(B, float(options.topP));
    for (size_t b = 0; b < wave.size(); ++b) {
      in.seeds[b] = int64_t(wave[b]->seed);
      in.temperature[b] = float(wave[b]->sampling.temperature);
      in.topK[b] = int32_t(wave[b]->sampling.topK);
      in.topP[b] = float(wave[b]->sampling.topP);
    }
    return in;
  }

  void runWave(const std::vector<Request *> &wave) {
    const int64_t B = shapes.batch, L = shapes.promptLen;
    // Free slots hold a one-token prompt (token 0), whose ids are dropped.
    std::vector<int32_t> tokens(size_t(B * L), 0), positions(size_t(B), 0), lastRows(size_t(B), 0);
    for (size_t b = 0; b < wave.size(); ++b) {
      std::copy(wave[b]->prompt.begin(), wave[b]->prompt.end(), tokens.begin() + b * size_t(L));
      lastRows[b] = int32_t(wave[b]->prompt.size()) - 1;
    }
    auto start = std::chrono::steady_clock::now();
    SampleInputs sample = sampleInputs(wave, 0);
    step(*programs.prefill,
         CallInputs()
             .add("tokens", &tokens)
             .add("positions", &positions)
             .add("last_rows", &lastRows)
             .addSample(&sample),
         wave, 0, "prefill");
    times.prefillSeconds += secondsSince(start);
    int64_t steps = 1;
    for (const Request *request : wave)
      steps = std::max(steps, request->maxNewTokens);
    for (int64_t t = 1; t < steps; ++t) {
      std::vector<int32_t> next(size_t(B), 0);
      for (int64_t b = 0; b < B; ++b) {
        bool used = size_t(b) < wave.size();
        next[size_t(b)] = used ? wave[size_t(b)]->ids.back() : 0;
        // A request past its own length repeats its last position (inside
        // the context its refusal check allowed); those ids are dropped.
        int64_t own = used ? std::min(t, wave[size_t(b)]->maxNewTokens - 1) : t;
        positions[size_t(b)] = int32_t((used ? wave[size_t(b)]->prompt.size() : 1) + own - 1);
      }
      start = std::chrono::steady_clock::now();
      sample = sampleInputs(wave, t);
      step(*programs.decode,
           CallInputs().add("tokens", &next).add("positions", &positions).addSample(&sample),
           wave, t, "decode");
      times.decodeSeconds.push_back(secondsSince(start));
    }
    for (Request *request : wave)
      truncate(*request);
  }

  /// Keeps a request's own number of tokens, up to its first --end-token.
  void truncate(Request &request) const {
    size_t keep = size_t(std::min<int64_t>(request.maxNewTokens, int64_t(request.ids.size())));
    if (s.args.endToken >= 0)
      for (size_t t = 0; t < keep; ++t)
        if (request.ids[t] == s.args.endToken) {
          keep = t + 1;
          break;
        }
    request.ids.resize(keep);
    if (request.logits.size() > keep)
      request.logits.resize(keep);
  }

  /// One prefill or decode call and its sampling (timed together): from the
  /// whole logits when something reads them (--verify-forward,
  /// --logits-out), else by the vocabulary-parallel sampler.
  void step(const braid_program &program, const CallInputs &inputs,
            const std::vector<Request *> &wave, int64_t t, const char *what) {
    if (s.args.verifyForward || !s.args.logitsOut.empty()) {
      std::vector<int32_t> ids;
      std::vector<float> logits =
          call(program, inputs, shapes.batch * shapes.vocab, what, &ids, &wave, t);
      keepWave(wave, logits, ids);
      return;
    }
    std::vector<int32_t> ids = callAndSample(program, inputs, wave, t, what);
    for (size_t b = 0; b < wave.size(); ++b)
      wave[b]->ids.push_back(ids[b]);
  }

  /// --verify-forward: each token the program drew (braid.sample, its
  /// exchanges on a split vocabulary) is sampleToken's from the whole row.
  /// The test hook BRAID_TEST_SAMPLE_FAULT="R:T" judges request R's token at
  /// step T as if the program had drawn the next id, so that a test sees the
  /// check fail.
  void checkDrawn(const std::vector<Request *> &wave, const std::vector<float> &logits,
                  const std::vector<int32_t> &ids, int64_t step) {
    if (!s.args.verifyForward)
      return;
    const char *hook = std::getenv("BRAID_TEST_SAMPLE_FAULT");
    long long faultRequest = -1, faultStep = -1;
    if (hook && std::sscanf(hook, "%lld:%lld", &faultRequest, &faultStep) != 2)
      faultRequest = -1;
    for (size_t b = 0; b < wave.size(); ++b) {
      const int32_t expected =
          sampleToken(logits.data() + b * size_t(shapes.vocab), shapes.vocab,
                      wave[b]->sampling, wave[b]->seed, 0, step);
      const bool fault = faultRequest == wave[b]->index && faultStep == step;
      if (ids[b] + (fault ? 1 : 0) == expected)
        continue;
      drawnOk = false;
      if (s.talks)
        std::printf("%sverify: FAIL request %lld step %lld: the program drew %d, sampleToken %d\n",
                    s.prefix.c_str(), (long long)wave[b]->index, (long long)step,
                    int(ids[b]) + (fault ? 1 : 0), int(expected));
    }
  }

  /// Keeps each request's drawn token and its row of `logits` [B, V] for
  /// verification.
  void keepWave(const std::vector<Request *> &wave, const std::vector<float> &logits,
                const std::vector<int32_t> &ids) {
    for (size_t b = 0; b < wave.size(); ++b) {
      const float *row = logits.data() + b * size_t(shapes.vocab);
      wave[b]->ids.push_back(ids[b]);
      wave[b]->logits.emplace_back(row, row + shapes.vocab);
    }
  }

  /// Teacher forcing: the forward program over the wave's sequences; false
  /// on a difference past the tolerance.
  bool verifyWave(const std::vector<Request *> &wave) {
    const braid_program &forward = *programs.forward;
    // Forward takes tokens [B, C] (on a pipeline's first stage only).
    const int64_t B = shapes.batch, C = shapes.context;
    const int64_t V = shapes.vocab;
    std::vector<int32_t> tokens(size_t(B * C), 0);
    for (size_t b = 0; b < wave.size(); ++b) {
      std::vector<int32_t> sequence = wave[b]->prompt;
      sequence.insert(sequence.end(), wave[b]->ids.begin(), wave[b]->ids.end() - 1);
      std::copy(sequence.begin(), sequence.end(), tokens.begin() + b * size_t(C));
    }
    // The forward program's frame overlaps the cache, which the next wave
    // rewrites before reading: the cache is dead during the call.
    std::vector<const Persistent *> caches;
    for (const Persistent &p : s.persistent)
      if (std::string(p.desc->name).rfind("cache.", 0) == 0 && !findParam(forward, p.desc->name))
        caches.push_back(&p);
    for (const Persistent *p : caches)
      braid_rt_free(rt, p->desc->offset, p->bytes);
    s.persistentLive -= caches.size();
    std::vector<float> logits = call(forward, CallInputs().add("tokens", &tokens), B * C * V, "forward");
    for (const Persistent *p : caches)
      braid_rt_alloc(rt, p->desc->offset, p->bytes, p->desc->name);
    s.persistentLive += caches.size();
    bool ok = true;
    for (size_t b = 0; b < wave.size(); ++b)
      ok &= compareRequest(*wave[b], logits.data() + b * size_t(C * V), V);
    return ok;
  }

  /// One request's generated steps against the forward logits `rows` [C, V].
  bool compareRequest(Request &request, const float *rows, int64_t V) {
    perturbForTest(request);
    bool ok = true;
    for (size_t t = 0; t < request.logits.size(); ++t) {
      const float *b = rows + (request.prompt.size() - 1 + t) * size_t(V);
      const std::vector<float> &a = request.logits[t];
      double diff = 0, scale = 0;
      for (int64_t v = 0; v < V; ++v) {
        diff = std::max(diff, std::fabs(double(a[size_t(v)]) - double(b[v])));
        scale = std::max(scale, std::fabs(double(b[v])));
      }
      double relative = scale > 0 ? diff / scale : diff;
      if (relative >= worst) {
        worst = relative;
        worstAt = "request " + std::to_string(request.index) + " step " + std::to_string(t);
      }
      if (!(relative <= bound.bound)) {
        ok = false;
        if (s.talks)
          std::printf("%sverify: FAIL request %lld step %zu: difference %.3g > %.2g\n",
                      s.prefix.c_str(), (long long)request.index, t, relative, bound.bound);
      }
    }
    return ok;
  }

  /// BRAID_TEST_PERTURB_LOGITS="R:T": the negative test's corruption.
  static void perturbForTest(Request &request) {
    const char *hook = std::getenv("BRAID_TEST_PERTURB_LOGITS");
    long long r = -1, t = -1;
    if (!hook || std::sscanf(hook, "%lld:%lld", &r, &t) != 2 || r != request.index || t < 0 ||
        size_t(t) >= request.logits.size())
      return;
    std::vector<float> &row = request.logits[size_t(t)];
    float largest = 0;
    for (float x : row)
      largest = std::max(largest, std::fabs(x));
    row[0] += 1e-3f * largest;
  }

  Session &s;
  braid_rt *rt;
  const InferencePrograms &programs;
  Shapes shapes;
  SamplingOptions options;
  Timings times;
  ProgramCaller caller{s};
  bool drawnOk = true; ///< every drawn token was sampleToken's (checkDrawn)
};

/// The ids of every request and the summary line (rank 0, or every rank
/// with --all-ranks: each computed the same ids); the number refused.
int64_t report(const Session &s, const std::vector<Request> &requests, const Timings &times) {
  int64_t refused = 0, generated = 0;
  const char *prefix = s.prefix.c_str();
  for (const Request &request : requests) {
    if (!request.refusal.empty()) {
      ++refused;
      if (s.talks) {
        std::fprintf(stderr, "%s: %srequest %lld refused: %s\n", s.argv0, prefix,
                     (long long)request.index, request.refusal.c_str());
        std::printf("%srequest %lld: refused: %s\n", prefix, (long long)request.index,
                    request.refusal.c_str());
      }
      continue;
    }
    generated += int64_t(request.ids.size());
    if (!s.talks)
      continue;
    std::printf("%srequest %lld:", prefix, (long long)request.index);
    for (int32_t id : request.ids)
      std::printf(" %d", int(id));
    std::printf("\n");
  }
  int64_t cacheBytes = 0;
  for (const Persistent &p : s.persistent)
    if (std::string(p.desc->name).rfind("cache.", 0) == 0)
      cacheBytes += p.bytes;
  double decodeTotal = 0;
  for (double t : times.decodeSeconds)
    decodeTotal += t;
  double total = times.prefillSeconds + decodeTotal;
  if (s.talks)
    std::printf("%sgenerate: %zu requests (%lld refused), %lld tokens each, prefill %.6f s, "
                "decode median %.3f ms/token p99 %.3f ms/token, %.1f tokens/s, cache %lld bytes "
                "per rank\n",
                prefix, requests.size(), (long long)refused, (long long)s.args.generate,
                times.prefillSeconds, 1e3 * percentile(times.decodeSeconds, 0.5),
                1e3 * percentile(times.decodeSeconds, 0.99),
                total > 0 ? double(generated) / total : 0.0, (long long)cacheBytes);
  std::fflush(stdout);
  return refused;
}

/// --logits-out DIR (rank 0): DIR/request<R>.npy, the [N, V] f32 logits
/// that chose each generated token of request R (as --verify-forward
/// compared them), for braid-run --verify to compare runs on two grids.
void writeLogits(const Session &s, const std::vector<Request> &requests, int64_t vocab) {
  if (s.args.logitsOut.empty() || s.ranks.rank != 0)
    return;
  for (const Request &request : requests) {
    if (!request.refusal.empty())
      continue;
    std::vector<float> rows;
    for (const std::vector<float> &row : request.logits)
      rows.insert(rows.end(), row.begin(), row.end());
    std::string path =
        s.args.logitsOut + "/request" + std::to_string(request.index) + ".npy", error;
    if (!npy::writeTensor(path, BRAID_F32, {int64_t(request.logits.size()), vocab},
                          rows.data(), &error))
      fatal("--logits-out: %s", error.c_str());
  }
}

} // namespace

braid_program mergedProgram(const InferencePrograms &programs) {
  braid_program merged = *programs.prefill;
  checkSharedState(*programs.prefill, *programs.decode, "decode");
  if (programs.forward)
    checkSharedState(*programs.prefill, *programs.forward, "forward");
  for (const braid_program *p : programs.mixed)
    checkSharedState(*programs.prefill, *p, "mixed");
  std::vector<const braid_program *> others = {programs.decode, programs.forward};
  others.insert(others.end(), programs.mixed.begin(), programs.mixed.end());
  for (const braid_program *p : others)
    if (p)
      merged.arena_bytes = std::max(merged.arena_bytes, p->arena_bytes);
  merged.num_inputs = 0;
  merged.inputs = nullptr;
  merged.num_outputs = 0;
  merged.outputs = nullptr;
  return merged;
}

int runGeneration(Session &s, const InferencePrograms &programs) {
  if (s.args.verifyForward && !programs.forward)
    return s.refuse("--verify-forward needs the forward program, which this binary lacks");
  if (!s.args.resume.empty() || !s.args.checkpointDir.empty())
    return s.refuse("generation starts from initialized parameters (the seed's, or "
                    "--init-from's; --resume and --checkpoint-dir are for training)");
  // The requests first: an unreadable --prompts file ends the run before
  // anything is initialized.
  const Shapes shapes = shapesOf(s, programs);
  std::vector<Request> requests = readRequests(s, shapes);
  if (!initializeState(s))
    return s.stop(2);
  dumpInitialState(s);
  Generation generation(s, programs, shapes);
  bool verified = generation.run(requests);
  int64_t refused = report(s, requests, generation.timings());
  writeLogits(s, requests, shapes.vocab);
  if (s.args.verifyForward && s.talks && !generation.bound.derivation.empty())
    std::printf("%sverify: bound %.3g %s\n", s.prefix.c_str(), generation.bound.bound,
                generation.bound.derivation.c_str());
  if (s.args.verifyForward && verified && s.talks) {
    if (generation.worstAt.empty())
      std::printf("%sverify: ok (no generated step to check)\n", s.prefix.c_str());
    else
      std::printf("%sverify: ok (worst difference %.3g at %s)\n", s.prefix.c_str(),
                  generation.worst, generation.worstAt.c_str());
    std::fflush(stdout);
  }
  const int status = tearDown(s, /*peakIsPlanned=*/false);
  return exitStatus(s, status, !verified ? 1 : refused ? 2 : status);
}

} // namespace braid::rt::driver
