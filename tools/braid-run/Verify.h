//===- Verify.h - compare a partitioned run with the 1-rank run -*- C++ -*-===//
//
// braid-run --verify runs the partitioned program on its grid and the
// unpartitioned one on one rank, both with --dump, and compares:
//   loss        the losses of every step (stdout "step K loss X"): |a-b| / |b|
//   gradients   every grad.*.npy (the gradients the step announces)
//   parameters  every updated.*.npy (parameters and optimizer state after the
//               last step)
// where a tensor's relative difference is max|a-b| / max|b| (b: the 1-rank
// value; max|a-b| itself when b is all zero). NaN anywhere fails. A file on
// one side only, or a shape that differs, is an error.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUN_VERIFY_H
#define BRAID_RUN_VERIFY_H

#include <cstdint>
#include <string>
#include <vector>

namespace braid::run {

/// One run's output: its stdout and its dump directory.
struct RunRecord {
  std::string stdoutText;
  std::string dumpDir;
};

struct Verdict {
  double loss = 0;      ///< max over the steps (NaN when any is)
  double gradients = 0; ///< max over grad.* tensors
  std::string worstGradient;
  int numGradients = 0;
  double parameters = 0; ///< max over updated.* tensors
  std::string worstParameter;
  int numParameters = 0;
  /// Parameters (and their state) left out of `parameters`: their
  /// gradient vanishes in exact arithmetic.
  std::vector<std::string> vanishing;

  /// Every difference within `tolerance` (NaN never is).
  bool passes(double tolerance) const;
};

/// max|a-b| / max(max|b|, floor) (max|a-b| when both are zero); NaN when
/// any |a-b| is NaN.
double relativeDifference(const std::vector<double> &a,
                          const std::vector<double> &b, double floor = 0);

/// Compares `partitioned` with `reference` over `steps` steps. False with a
/// message on a missing loss line or file, or a shape that differs.
bool compareRuns(const RunRecord &partitioned, const RunRecord &reference,
                 int64_t steps, Verdict *out, std::string *error);

} // namespace braid::run

#endif // BRAID_RUN_VERIFY_H
