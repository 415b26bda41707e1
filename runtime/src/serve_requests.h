//===- serve_requests.h - the requests braid-run --serve reads --*- C++ -*-===//
//
// REQUESTS is a JSON-lines file, one request per line (blank lines are
// skipped, and still counted):
//   {"prompt": [ids...]} or {"prompt_len": N}, "max_new_tokens": N,
//   and optionally "temperature", "top_k", "top_p", "seed", "arrival_ms".
// A prompt_len prompt is drawn as --generate draws one (rng.h's integer
// draws in [0, vocab) of stream "prompt.<index>" under the run's seed).
// Defaults: max_new_tokens --generate's N (else 16), temperature/top_k/top_p
// the run's options, seed the run's seed + index (so that a request's tokens
// equal --generate's for the same request index), arrival_ms 0.
// A line that is not a JSON object, an unknown field, a field of the wrong
// type or range, both or neither of prompt and prompt_len, a token outside
// [0, vocab) or an empty prompt makes that request refused, with its line
// number and the reason; the others run. --rate R generates requests
// instead: arrivals of a Poisson process of R requests/s (seeded), prompt
// lengths drawn in a range.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_SERVE_REQUESTS_H
#define BRAID_RUNTIME_SERVE_REQUESTS_H

#include <cstdint>
#include <string>
#include <vector>

namespace braid::rt::serve {

/// One request to serve.
struct ServeRequest {
  int64_t index = 0;   ///< 0-based, in file order (refused lines included)
  int64_t line = 0;    ///< 1-based line of the file (0: generated)
  std::vector<int32_t> prompt;
  int64_t maxNewTokens = 0;
  double temperature = 0;
  int64_t topK = 0;
  double topP = 1;
  uint64_t seed = 0;
  double arrivalMs = 0;
  std::string refusal; ///< why it cannot run, without the line number; empty: it runs
};

/// What a request takes when it does not say.
struct RequestDefaults {
  int64_t vocab = 0;
  int64_t maxNewTokens = 16;
  double temperature = 0;
  int64_t topK = 0;
  double topP = 1;
  uint64_t seed = 0; ///< the run's; a request's is seed + index
  /// The programs' context: a longer prompt_len is refused without drawing
  /// it (0: unknown, then 2^24 bounds it).
  int64_t context = 0;
};

/// Reads the file; false with `error` only when it cannot be read at all
/// (a bad line is that request's refusal).
bool readServeRequests(const std::string &path, const RequestDefaults &defaults,
                       std::vector<ServeRequest> *requests, std::string *error);

/// Parses the file's text (for tests); never fails as a whole.
std::vector<ServeRequest> parseServeRequests(const std::string &text,
                                             const RequestDefaults &defaults);

/// `count` requests with Poisson arrivals at `rate` per second (seeded by
/// defaults.seed: exponential gaps from rng.h's stream "arrival"), each
/// prompt's length drawn uniformly in [minPrompt, maxPrompt] (stream
/// "prompt_len") and its tokens as prompt_len prompts are, and
/// `maxNewTokens` each. Exactly, with rng.h's draws under defaults.seed:
///   arrival_ms[0] = 0,
///   arrival_ms[i + 1] = arrival_ms[i] - 1000 ln((x0 + 1) 2^-32) / rate,
///     x0 the first word of bitsAt(keyOf(seed, "arrival"), i) (so the gap is
///     an exponential draw of mean 1000 / rate ms; rate <= 0: all at 0);
///   length[i] = minPrompt + uniformIntAt(keyOf(seed, "prompt_len"), i,
///     maxPrompt - minPrompt + 1) (minPrompt when maxPrompt <= minPrompt);
///   prompt[i][j] = uniformIntAt(keyOf(seed, "prompt.<i>"), j, vocab).
/// Requests are not refused here (the scheduler's refusalOf judges them).
std::vector<ServeRequest> poissonRequests(int64_t count, double rate, int64_t minPrompt,
                                          int64_t maxPrompt, int64_t maxNewTokens,
                                          const RequestDefaults &defaults);

} // namespace braid::rt::serve

#endif // BRAID_RUNTIME_SERVE_REQUESTS_H
