//===- generate_requests.h - generation's requests and sizes ----*- C++ -*-===//
//
// What the generation driver (driver_generate.cpp) serves: the requests
// (--prompts FILE's lines, or prompts drawn from the seed), the sizes the
// programs were built for (and those of serving's paged programs,
// driver_serve.cpp), and why a request cannot run with them.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_GENERATE_REQUESTS_H
#define BRAID_RUNTIME_GENERATE_REQUESTS_H

#include "driver.h"
#include "sampling.h"
#include "serve_mixed.h"
#include "serve_requests.h"

#include <cstdint>
#include <string>
#include <vector>

namespace braid::rt::driver {

/// One request: its prompt, how it samples, what was generated and the
/// logits that chose it.
struct Request {
  int64_t index = 0;
  std::vector<int32_t> prompt;
  int64_t maxNewTokens = 0;  ///< tokens to generate (--generate N, or its line's)
  SamplingOptions sampling;  ///< as braid.sample reads them (f32 temperature and top-p)
  uint64_t seed = 0;         ///< its stream: the run's seed + index, or its line's
  int64_t line = 0;          ///< of a JSON-lines --prompts file (0: none)
  std::string refusal; ///< empty: it runs
  std::vector<int32_t> ids;
  std::vector<std::vector<float>> logits; ///< kept for --verify-forward
};

/// The sizes the programs were built for, the type of their logits and
/// the layers that keep a cache (of every pipeline stage).
struct Shapes {
  int64_t batch = 0, promptLen = 0, context = 0, vocab = 0;
  braid_dtype logitsDtype = BRAID_F32;
  int64_t layers = 0;
};

/// The global size of dimension `d` of `desc` (a partitioned program's
/// tensors are blocks of it).
int64_t globalDim(const braid_tensor_desc &desc, int32_t d);

/// The program's input named `name`, or null.
const braid_tensor_desc *findInput(const braid_program &program, const char *name);

/// What a persistent tensor holds, by its name: an attention layer's keys
/// or values (cache.<...>.k / .v, a micro-batch's copy cache.<...>.k.mb<j>
/// too), a Mamba layer's state (cache.<...>.conv / .ssm), or neither.
enum class CacheState { None, KeysValues, Mamba };
CacheState cacheStateOf(const std::string &name);

/// The sizes of the whole run: each the largest any rank's programs know,
/// the layers summed over the pipeline's stages (collective).
Shapes shapesOf(Session &s, const InferencePrograms &programs);

/// The sizes the paged programs were built for.
struct ServeShapes {
  int64_t decodeRows = 0, prefillRows = 0, chunk = 0;
  int64_t pageSize = 0, pages = 0, tableEntries = 0, context = 0, vocab = 0;
  bool slots = false; ///< prefill takes Mamba state slots
  bool mamba = false; ///< the model has Mamba layers (states per slot)
  /// The rows and groups of rows (the logits each returns) of the mixed
  /// programs, smallest first.
  std::vector<serve::MixedShape> mixed;
  /// The largest mixed program's rows (the token budget); 0 without one.
  int64_t tokenBudget() const { return mixed.empty() ? 0 : mixed.back().rows; }
  braid_dtype logitsDtype = BRAID_F32;
};

/// Reads the sizes of paged programs (braid-run --serve: driver_serve.cpp)
/// from their inputs and the cache pool; fatal when the programs are not
/// paged.
ServeShapes serveShapesOf(const InferencePrograms &programs);

/// The requests: --prompts FILE's lines (token ids, or JSON objects as
/// braid-run --serve reads them: serve_requests.h), else B drawn prompts
/// (the run stops with status 2 when the file cannot be read).
std::vector<Request> readRequests(Session &s, const Shapes &shapes);

/// What a JSON-lines request takes when it does not say: the run's
/// --generate N, sampling options and seed, and the programs' sizes.
serve::RequestDefaults requestDefaultsOf(const Args &args, int64_t vocab, int64_t context);

/// Why `request` cannot run with these programs; empty when it can.
std::string refusalOf(const Request &request, const Shapes &shapes);

} // namespace braid::rt::driver

#endif // BRAID_RUNTIME_GENERATE_REQUESTS_H
