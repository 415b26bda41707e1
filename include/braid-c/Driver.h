//===-- braid-c/Driver.h - C API of the driver --------------------*- C -*-===//
//
// braid-run from C (lib/Driver): a model is lowered with the training
// pipeline, its programs are built against the runtime (cached) and run on
// the grid's CPU ranks (mpirun when more than one) or GPUs, and with
// `verify` compared with the unpartitioned program on one rank. The
// programs print on stdout ("step K loss X", "verify: PASS"); the driver's
// messages go to stderr.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_C_DRIVER_H
#define BRAID_C_DRIVER_H

#include "braid-c/Pipelines.h"

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// How a model is built and run (braid-run's flags of the same names).
typedef struct BraidRunOptions {
  MlirStringRef backend; ///< "cpu" or "cuda"
  int steps;             ///< the last step to run
  bool hasSeed;          ///< else the program's default seed
  uint64_t seed;
  MlirStringRef dumpDir;   ///< every named tensor as .npy; empty: none
  MlirStringRef traceFile; ///< a Perfetto trace; empty: none
  MlirStringRef emitCpp;   ///< also write the C++ here; empty: none
  bool rollRepeats;        ///< repeated statement groups as loops
  bool quiet;              ///< only the losses and peaks
  bool progress;           ///< phases of long work on stderr
  bool compileOnly;        ///< build, do not run
  bool verify;             ///< compare with the program on one rank
  double verifyTolerance;
  MlirStringRef initFrom; ///< a weights map the parameters start from; empty: the seed's
  MlirStringRef dataFile; ///< a tokenized dataset the steps read; empty: the seed's batch
} BraidRunOptions;

/// braid-run's defaults: cpu, one step, rolled, tolerance 1e-5.
MLIR_CAPI_EXPORTED BraidRunOptions braidRunOptionsGetDefault(void);

/// Parses a model from `source` (named `name` in diagnostics) like braid-run
/// does: one builtin.module, verified, its ops named after the SSA names of
/// the source (the names of dumps and traces). Null after diagnostics.
MLIR_CAPI_EXPORTED MlirModule braidParseModel(MlirContext context,
                                              MlirStringRef source,
                                              MlirStringRef name);

/// Lowers `module` in place with `pipeline` (its grid as written, e.g.
/// "dp=2,tp=2"), builds and runs it as `options` say; returns the exit code
/// (0 on success; with verify, 1 when the runs differ).
MLIR_CAPI_EXPORTED int braidRunModel(MlirModule module,
                                     BraidTrainingPipelineOptions pipeline,
                                     const BraidRunOptions *options);

/// What braid-run's --generate flags ask for (0: the default).
typedef struct BraidGenerateOptions {
  int64_t tokens;          ///< --generate N: tokens per request
  int64_t batch;           ///< sequences per wave; 0: the model's batch
  int64_t context;         ///< KV cache rows per sequence; 0: the model's
  int64_t promptLen;       ///< 0: the longest prompt of promptsFile
  MlirStringRef promptsFile; ///< one request per line, ids separated by
                             ///< blanks; empty: drawn prompts
  double temperature;      ///< 0: greedy
  int64_t topK;            ///< 0: every token
  double topP;             ///< 1: every token
} BraidGenerateOptions;

/// Greedy generation of one token per request from drawn prompts.
MLIR_CAPI_EXPORTED BraidGenerateOptions braidGenerateOptionsGetDefault(void);

/// braid-run --generate: derives `module`'s inference programs (in place),
/// builds them at `pipeline`'s dtype and grid and runs them with `run`'s
/// backend, seed, verify (teacher forcing), quiet and compileOnly. The
/// program prints one "request R: ID ..." or "request R: refused: WHY" line
/// per request on stdout, then the summary; returns the exit code (0; 1 on an
/// error or a failed verify; 2 when a request was refused, the others ran).
MLIR_CAPI_EXPORTED int
braidGenerateModel(MlirModule module, BraidTrainingPipelineOptions pipeline,
                   const BraidRunOptions *run,
                   const BraidGenerateOptions *generate);

/// What braid-run's --serve flags ask for: continuous batching over a
/// paged KV cache (docs/serving.md). Requests come from `requestsFile`
/// (JSON lines) or, when it is empty and `rate` > 0, are generated.
typedef struct BraidServeOptions {
  MlirStringRef requestsFile; ///< --serve FILE; empty: --rate's requests
  double rate;                ///< --rate R: Poisson arrivals per second
  int64_t requests;           ///< --requests N of rate
  int64_t promptLen;          ///< --prompt-len of rate; 0: the prefill chunk
  int64_t minPromptLen;       ///< --min-prompt-len of rate; 0: promptLen
  MlirStringRef outputFile;   ///< --output: JSON lines; empty: none
  int64_t endToken;           ///< --end-token ID; -1: none
  int64_t pageSize;           ///< --page-size: positions per page
  int64_t kvPages;            ///< --kv-pages; 0: batch x context / pageSize
  int64_t prefillChunk;       ///< --prefill-chunk; 0: min(context, 512)
  int64_t prefillBatch;       ///< --prefill-batch: prompt chunks per iteration
  int64_t maxNewTokens;       ///< --generate N: max_new_tokens default
  int64_t batch;              ///< decode rows; 0: the model's batch
  int64_t context;            ///< positions per sequence; 0: the model's
  double temperature;         ///< a request's default; 0: greedy
  int64_t topK;               ///< a request's default; 0: every token
  double topP;                ///< a request's default; 1: every token
  bool staticBatching;        ///< --static-batching: waves, not continuous
  int64_t tokenBudget;        ///< --token-budget: rows of a mixed call; 0: none; -1: default
} BraidServeOptions;

/// braid-run's --serve defaults: 16 new tokens, greedy, pages of 16
/// positions, one prompt chunk per iteration, 16 requests of rate.
MLIR_CAPI_EXPORTED BraidServeOptions braidServeOptionsGetDefault(void);

/// braid-run --serve: derives `module`'s paged prefill and decode programs
/// (in place), builds them at `pipeline`'s dtype and grid (one rank or tp)
/// and serves the requests with `run`'s backend, seed, quiet, compileOnly
/// and verify (each request against itself generated alone on one rank).
/// stdout has a "request R: ID ..." or "request R: refused: WHY" line per
/// request, the summary ("serve: ...") and the verdict of verify; returns the
/// exit code (0; 1 on an error or a failed verify; 2 when a request was
/// refused, the others served).
MLIR_CAPI_EXPORTED int braidServeModel(MlirModule module,
                                       BraidTrainingPipelineOptions pipeline,
                                       const BraidRunOptions *run,
                                       const BraidServeOptions *serve);

#ifdef __cplusplus
}
#endif

#endif // BRAID_C_DRIVER_H
