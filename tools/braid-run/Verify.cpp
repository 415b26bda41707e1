//===- Verify.cpp - compare a partitioned run with the 1-rank run ---------===//

#include "Verify.h"

#include "NpyReader.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

namespace braid::run {

namespace {

/// a is worse than b: larger, or NaN.
bool worse(double a, double b) {
  return std::isnan(a) || (!std::isnan(b) && a > b);
}

/// The losses a program printed ("step K loss X"), by step.
std::map<int64_t, double> losses(llvm::StringRef text) {
  std::map<int64_t, double> out;
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    line = line.rtrim("\r");
    if (!line.consume_front("step "))
      continue;
    auto [step, rest] = line.split(' ');
    int64_t k;
    if (step.getAsInteger(10, k) || !rest.consume_front("loss "))
      continue;
    std::string value = rest.trim().str();
    char *end = nullptr;
    double x = std::strtod(value.c_str(), &end);
    if (!value.empty() && end && *end == '\0')
      out[k] = x;
  }
  return out;
}

/// The stems ("grad.w") of DIR/<prefix>*.npy.
bool listDumps(const std::string &dir, llvm::StringRef prefix,
               std::set<std::string> *out, std::string *error) {
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    if (name.starts_with(prefix) && name.ends_with(".npy"))
      out->insert(name.drop_back(4).str());
  }
  if (ec) {
    *error = "cannot list " + dir + ": " + ec.message();
    return false;
  }
  return true;
}

/// Compares the DIR/<prefix>*.npy of both runs; the worst relative difference
/// and its tensor.
/// With `only`, just the stems whose name after the prefix it holds (the
/// gradients of parameters: cotangents of activations are per-rank values).
bool compareDumps(const RunRecord &a, const RunRecord &b,
                  llvm::StringRef prefix, double *worst, std::string *worstName,
                  int *count, std::string *error,
                  const std::set<std::string> *only = nullptr) {
  std::set<std::string> inA, inB;
  if (!listDumps(a.dumpDir, prefix, &inA, error) ||
      !listDumps(b.dumpDir, prefix, &inB, error))
    return false;
  if (only)
    for (std::set<std::string> *set : {&inA, &inB})
      for (auto it = set->begin(); it != set->end();)
        it = only->count(it->substr(prefix.size())) ? std::next(it)
                                                    : set->erase(it);
  for (const std::string &name : inB)
    if (!inA.count(name)) {
      *error = "the partitioned run dumped no " + name +
               ".npy (the 1-rank run did, in " + b.dumpDir + ")";
      return false;
    }
  for (const std::string &name : inA)
    if (!inB.count(name)) {
      *error = "the 1-rank run dumped no " + name +
               ".npy (the partitioned run did, in " + a.dumpDir + ")";
      return false;
    }
  // A tensor is measured against its own largest value, but at least
  // kVanishing of the largest value of the whole set: a gradient that
  // vanishes in exact arithmetic (a key bias under softmax) is rounding
  // noise on both sides, which only that scale measures meaningfully.
  constexpr double kVanishing = 1e-3;
  double setScale = 0;
  for (const std::string &name : inB) {
    NpyArray y;
    if (!readNpy(b.dumpDir + "/" + name + ".npy", &y, error))
      return false;
    for (double v : y.values)
      setScale = std::max(setScale, std::fabs(v));
  }
  *worst = 0;
  *count = 0;
  for (const std::string &name : inB) {
    NpyArray x, y;
    if (!readNpy(a.dumpDir + "/" + name + ".npy", &x, error) ||
        !readNpy(b.dumpDir + "/" + name + ".npy", &y, error))
      return false;
    // ZeRO keeps optimizer moments as flat ranges: the same elements in
    // another shape compare flat.
    if (x.shape != y.shape && x.values.size() != y.values.size()) {
      *error = name + ": shape " + shapeString(x.shape) +
               " in the partitioned run, " + shapeString(y.shape) +
               " in the 1-rank run";
      return false;
    }
    double d = relativeDifference(x.values, y.values, kVanishing * setScale);
    if (*count == 0 || worse(d, *worst)) {
      *worst = d;
      *worstName = name;
    }
    ++*count;
  }
  return true;
}

} // namespace

bool Verdict::passes(double tolerance) const {
  for (double d : {loss, gradients, parameters})
    if (!(d <= tolerance))
      return false;
  return true;
}

double relativeDifference(const std::vector<double> &a,
                          const std::vector<double> &b, double floor) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    double d = std::fabs(a[i] - b[i]);
    if (std::isnan(d))
      return NAN;
    diff = std::max(diff, d);
    scale = std::max(scale, std::fabs(b[i]));
  }
  scale = std::max(scale, floor);
  return scale > 0 ? diff / scale : diff;
}

bool compareRuns(const RunRecord &partitioned, const RunRecord &reference,
                 int64_t steps, Verdict *out, std::string *error) {
  Verdict verdict;
  std::map<int64_t, double> a = losses(partitioned.stdoutText),
                            b = losses(reference.stdoutText);
  for (int64_t k = 1; k <= steps; ++k) {
    if (!a.count(k) || !b.count(k)) {
      *error = std::string("the ") + (a.count(k) ? "1-rank" : "partitioned") +
               " run printed no loss for step " + std::to_string(k);
      return false;
    }
    double d = std::fabs(a[k] - b[k]);
    d = b[k] != 0 ? d / std::fabs(b[k]) : d;
    if (k == 1 || worse(d, verdict.loss))
      verdict.loss = d;
  }
  // Gradients of what the step updates: parameters (their updated.*).
  std::set<std::string> updated, names;
  if (!listDumps(reference.dumpDir, "updated.", &updated, error))
    return false;
  for (const std::string &stem : updated)
    names.insert(stem.substr(std::string("updated.").size()));
  if (!compareDumps(partitioned, reference, "grad.", &verdict.gradients,
                    &verdict.worstGradient, &verdict.numGradients, error,
                    &names))
    return false;
  // A parameter whose gradient vanishes in exact arithmetic (a key bias
  // under softmax) gets rounding noise for a gradient, which an adaptive
  // optimizer scales up to a step of lr either way: its update says nothing
  // about the partitioning, so it is listed and left out.
  double gradScale = 0;
  std::map<std::string, double> gradMax;
  for (const std::string &name : names) {
    NpyArray g;
    std::string ignored;
    if (!readNpy(reference.dumpDir + "/grad." + name + ".npy", &g, &ignored))
      continue;
    double m = 0;
    for (double v : g.values)
      m = std::max(m, std::fabs(v));
    gradMax[name] = m;
    gradScale = std::max(gradScale, m);
  }
  // Vanishing: tiny (within 1e-6 of the largest gradient) and noise (the
  // two runs' gradients differ by more than a tenth of their size).
  std::set<std::string> noise;
  for (const auto &[param, m] : gradMax) {
    if (m > 1e-6 * gradScale)
      continue;
    NpyArray x, y;
    std::string ignored;
    if (readNpy(partitioned.dumpDir + "/grad." + param + ".npy", &x, &ignored) &&
        readNpy(reference.dumpDir + "/grad." + param + ".npy", &y, &ignored) &&
        !(relativeDifference(x.values, y.values) <= 0.1))
      noise.insert(param);
  }
  std::set<std::string> compared;
  for (const std::string &name : names) {
    bool vanishing = noise.count(name) > 0;
    // Optimizer state follows its parameter.
    for (const std::string &param : noise)
      if (llvm::StringRef(name).ends_with("." + param) &&
          llvm::StringRef(name).starts_with("opt."))
        vanishing = true;
    if (vanishing)
      verdict.vanishing.push_back(name);
    else
      compared.insert(name);
  }
  if (!compareDumps(partitioned, reference, "updated.", &verdict.parameters,
                    &verdict.worstParameter, &verdict.numParameters, error,
                    &compared))
    return false;
  *out = verdict;
  return true;
}

} // namespace braid::run
