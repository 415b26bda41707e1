//===- Generate.h - compile a model's inference programs and generate -*- C++ -*-===//
//
// braid-run MODEL --generate N: the model's prefill, decode and forward
// programs (--braid-derive-inference) are emitted, linked into one binary
// and run by the runtime's generation driver (runtime/src/
// driver_generate.cpp: requests, sampling, the summary, --verify-forward).
// One rank for now (issue 42).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DRIVER_GENERATE_H
#define BRAID_DRIVER_GENERATE_H

#include "braid/Driver/Run.h"

#include <optional>
#include <string>
#include <vector>

namespace braid::driver {

/// What braid-run's generation flags ask for.
struct GenerateOptions {
  int64_t tokens = 0;              ///< --generate N
  int64_t batch = 0, context = 0;  ///< 0: the pass's defaults
  int64_t promptLen = 0;           ///< 0: the longest --prompts line, else the pass's
  std::string promptsFile;
  double temperature = 0;
  int64_t topK = 0;
  double topP = 1;
  /// --prompt-text: prompts as text, encoded with --tokenizer into a
  /// --prompts file by `python3 -m braid.data encode` (the `tokenizers`
  /// package from PyPI; C++ has none).
  std::vector<std::string> promptTexts;
  /// --tokenizer DIR: each "request R: ids" line is followed by the ids'
  /// text, "request R text: ..." (`python3 -m braid.data decode`).
  std::string tokenizer;
  /// braid-run --serve FILE / --rate R: continuous batching over paged
  /// programs (Serve.cpp) instead of static waves.
  struct Serve {
    std::string requestsFile; ///< --serve FILE (JSON lines)
    double rate = 0;          ///< --rate R: Poisson arrivals of generated requests
    int64_t requests = 16;    ///< --requests N of --rate
    int64_t minPromptLen = 0; ///< --min-prompt-len of --rate (0: --prompt-len)
    std::string outputFile;   ///< --output FILE
    int64_t endToken = -1;    ///< --end-token ID
    int64_t pageSize = 16;    ///< --page-size P
    int64_t kvPages = 0;      ///< --kv-pages N (0: batch x context / P)
    int64_t kvMemory = 0;     ///< --kv-memory BYTES per rank of the pool (0: --kv-pages)
    int64_t prefillChunk = 0; ///< --prefill-chunk L (0: min(context, 512))
    int64_t prefillBatch = 1; ///< --prefill-batch: prompt chunks per iteration
    bool disaggregate = false; ///< --disaggregate: a prefill group and a decode group
    std::string prefillGrid;   ///< --prefill-grid: the prefill group's (default: --grid)
    bool staticBatches = false; ///< --static-batching: waves (bench/serving's baseline)
    /// --token-budget: decode rows + prompt tokens per mixed call (0: prefill
    /// and decode calls apart; -1: the batch + the prefill chunk where the
    /// model and the layout allow mixed calls, else 0)
    int64_t tokenBudget = -1;
    bool enabled() const { return !requestsFile.empty() || rate > 0; }
  } serve;
};

/// Derives the inference programs of `module` (in place), builds them into
/// one binary and runs it with `options` (seed, quiet, threads, emit-cpp,
/// compile-only; `options.verify`: teacher forcing); the exit code.
int generateModel(mlir::ModuleOp module,
                  const TrainingPipelineOptions &pipeline,
                  const RunOptions &options, const GenerateOptions &generate);

/// A size in bytes: digits, then B, KiB, MiB, GiB (or K, M, G, binary);
/// none when malformed or past int64.
std::optional<int64_t> parseByteSize(llvm::StringRef text);

/// braid-run --serve: derives paged prefill and decode programs of `module`
/// (in place), builds them and serves the requests; with `options.verify`,
/// also generates each request alone on one rank with the static programs
/// and compares the ids and logits (Serve.cpp). The exit code.
int serveModel(mlir::ModuleOp module, const TrainingPipelineOptions &pipeline,
               const RunOptions &options, const GenerateOptions &generate);

} // namespace braid::driver

#endif // BRAID_DRIVER_GENERATE_H
