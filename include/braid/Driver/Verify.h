//===- Verify.h - compare a partitioned run with the 1-rank run -*- C++ -*-===//
//
// braid-run --verify runs the partitioned program on its grid and the
// unpartitioned one on one rank, both with --dump --dump-first-step, and
// judges what each side computes from the same state:
//   loss        the losses of every step (stdout "step K loss X"): |a-b| / |b|
//   gradients   step 1's gradients (step1.grad.*: both runs start from the
//               same parameters), each tensor against its largest value
//   parameters  step 1's parameters and optimizer state (step1.updated.*):
//               the optimizer's step replayed in double on the partitioned
//               run's own gradients must give the partitioned run's values.
//               Comparing them with the 1-rank run's values instead would
//               measure AdamW's sensitivity, not the plan: its first step is
//               lr * g / (|g| + eps), whose slope lr / eps turns a rounding
//               difference of a gradient element near zero into a visible
//               update difference (issue: llama-tiny dp2 x tp2 at eps 1e-8).
//   copies      every other rank's copy of what rank 0 dumps (the
//               partitioned run's replicas.* from the runtime's
//               --check-replicas: each replica of a block against the copy
//               the dump keeps, each rank's loss against rank 0's) and each
//               pipeline mirror (mirror.step1.updated.*, a tensor two stages
//               hold) against its owner's: measured like the tensor itself,
//               and named by rank
// Runs resumed from a checkpoint (--resume, written on any grid) start from
// its state instead: their first step, K+1 (the step<K+1>.* dumps, the state
// before it step<K>.*), takes step 1's place, AdamW replayed at t = K+1.
// After more than one step the runs drift apart by exactly that
// amplification; the drift of the last step's parameters is reported, and
// judged only through the losses of every step.
// A tensor's relative difference is max|a-b| / max(max|b|, 1e-3 * the
// largest value of its set); NaN anywhere fails. A file on one side only, or
// a shape that differs, is an error. The worst tensor of each set is named
// with the rank that computed its worst element (the partitioned run's
// owners.* files, from --check-replicas).
//
// At f32 every set is judged against one tolerance. At a reduced precision
// (bf16, f16 storage with f32 accumulation) the plan and the 1-rank program
// round different intermediate values (a partial sum before its all-reduce, a
// shard's slice of a product), so their losses and gradients differ by
// rounding, not by a tolerance one could pick. The bounds come from the
// rounding itself: the 1-rank program also runs at f32 (`exact`), and its
// reduced-precision run's distance from it, D, measures what rounding does to
// this model. A correct plan rounds the same function at the same stores
// (and a partial sum before its reduction), each rounding of relative size
// u, so its own distance from the exact run is of D's size, and by the
// triangle inequality it is within about 2 D of the 1-rank reduced-precision
// run. That is an estimate from one realization of the rounding, made
// robust by taking maxima over whole sets:
//   gradients   2 * the worst step-1 gradient difference (relative, as
//               above) of the 1-rank run from the exact one, over all
//               parameters: a maximum over many elements, stable where one
//               tensor's is not
//   loss        2 * the larger of the losses' worst relative difference over
//               the steps and 2 max|logits difference| / |loss| at step 1
//               (cross-entropy moves by at most 2 max|logits change|: a
//               floor that rests on a whole tensor, not on one scalar)
// each plus the tolerance; parameters (the optimizer replayed on the plan's
// own f32 gradients, on f32 master weights) and copies (bit-identical when
// right) keep the tolerance.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DRIVER_VERIFY_H
#define BRAID_DRIVER_VERIFY_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace braid::driver {

/// One run's output: its stdout and its dump directory.
struct RunRecord {
  std::string stdoutText;
  std::string dumpDir;
};

/// How the step updates one parameter: what --verify replays (the
/// braid.adamw_update / braid.sgd_update of the lowered 1-rank program).
struct UpdateRule {
  std::string param;     ///< the parameter's name (its dumps: <param>.npy)
  bool adamw = true;     ///< else SGD
  std::string m, v;      ///< AdamW moments' names
  double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weightDecay = 0;
};

/// The worst of a set of per-tensor differences.
struct Difference {
  double worst = 0;      ///< NaN when any is
  std::string worstName; ///< its tensor
  int count = 0;         ///< tensors compared

  void add(double d, const std::string &name);
  /// Whether add(d, ...) would make d the worst (so its name is worth
  /// working out).
  bool takes(double d) const;
};

/// What --verify accepts of each judged set.
struct Bounds {
  double loss = 0, gradients = 0, parameters = 0, copies = 0;

  static Bounds uniform(double tolerance) {
    return {tolerance, tolerance, tolerance, tolerance};
  }
};

struct Verdict {
  double loss = 0;        ///< max over the steps (NaN when any is)
  Difference gradients;   ///< step1.grad.* tensors
  Difference parameters;  ///< step1.updated.* tensors
  Difference drift;       ///< the last step's updated.*; none after one step
  Difference copies;      ///< other ranks' copies and pipeline mirrors

  /// Every judged difference within its bound (NaN never is).
  bool passes(const Bounds &bounds) const;
};

/// max|a-b| / max(max|b|, floor) (max|a-b| when both are zero); NaN when
/// any |a-b| is NaN. `worstAt` gets the index of the largest |a-b|.
double relativeDifference(const std::vector<double> &a,
                          const std::vector<double> &b, double floor = 0,
                          size_t *worstAt = nullptr);

/// Compares `partitioned` with `reference` over `steps` steps; `rules` say
/// how step 1 updated each parameter, `maxNorm` the global-norm clipping
/// (<= 0: none). False with a message on a missing loss line or file, or a
/// shape that differs.
bool compareRuns(const RunRecord &partitioned, const RunRecord &reference,
                 int64_t steps, const std::vector<UpdateRule> &rules,
                 double maxNorm, Verdict *out, std::string *error);

/// The bounds of a run at reduced precision (above): `rounded` is the 1-rank
/// program at that precision, `exact` the same at f32, both over `steps`;
/// `logits` names the dump of the loss's logits (empty: no such floor).
bool roundingBounds(const RunRecord &rounded, const RunRecord &exact,
                    int64_t steps, const std::vector<UpdateRule> &rules,
                    double maxNorm, const std::string &logits,
                    double tolerance, Bounds *out, std::string *error);

/// Prints the verdict's `verify: ...` lines (Verify.h's measures, the
/// bounds at a reduced precision `rounded` such as "bf16", empty at f32,
/// with a note when the model routes tokens) and `verify: PASS` or
/// `verify: FAIL (...)`; returns whether it passes.
bool reportVerdict(llvm::raw_ostream &os, const Verdict &verdict,
                   const Bounds &bounds, int64_t steps, llvm::StringRef rounded,
                   bool routed, double tolerance);

} // namespace braid::driver

#endif // BRAID_DRIVER_VERIFY_H
