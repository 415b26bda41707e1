//===- Verify.cpp - compare a partitioned run with the 1-rank run ---------===//

#include "braid/Driver/Verify.h"

#include "braid/Driver/NpyReader.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

namespace braid::driver {

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

/// Reads DIR/<stem>.npy.
bool readDump(const std::string &dir, const std::string &stem, NpyArray *out,
              std::string *error) {
  return readNpy(dir + "/" + stem + ".npy", out, error);
}

double maxAbs(const std::vector<double> &values) {
  double m = 0;
  for (double v : values)
    m = std::max(m, std::fabs(v));
  return m;
}

// A tensor is measured against its own largest value, but at least
// kVanishing of the largest value of its whole set: a gradient that vanishes
// in exact arithmetic (a key bias under softmax) is rounding noise on both
// sides, which only that scale measures meaningfully.
constexpr double kVanishing = 1e-3;

/// The stems DIR/<prefix>*.npy of both runs, which must be the same; with
/// `only`, just those whose name after the prefix it holds.
bool matchingDumps(const RunRecord &a, const RunRecord &b,
                   llvm::StringRef prefix, const std::set<std::string> *only,
                   std::set<std::string> *out, std::string *error) {
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
  *out = std::move(inB);
  return true;
}

/// Both runs' values of `stem`, of one element count (ZeRO keeps optimizer
/// moments as flat ranges: the same elements in another shape compare flat).
bool readPair(const RunRecord &a, const RunRecord &b, const std::string &stem,
              NpyArray *x, NpyArray *y, std::string *error) {
  if (!readDump(a.dumpDir, stem, x, error) ||
      !readDump(b.dumpDir, stem, y, error))
    return false;
  if (x->values.size() != y->values.size()) {
    *error = stem + ": shape " + shapeString(x->shape) +
             " in the partitioned run, " + shapeString(y->shape) +
             " in the 1-rank run";
    return false;
  }
  return true;
}

/// `stem` named with the rank the partitioned run took element `index` of
/// it from (DIR/owners.<stem>.npy), when it wrote that.
std::string located(const RunRecord &a, const std::string &stem, size_t index) {
  std::string path = a.dumpDir + "/owners." + stem + ".npy";
  NpyArray owners;
  std::string ignored;
  if (!llvm::sys::fs::exists(path) || !readNpy(path, &owners, &ignored) ||
      index >= owners.values.size() || owners.values[index] < 0)
    return stem;
  return stem + " on rank " + std::to_string(int64_t(owners.values[index]));
}

/// Adds the difference of `stem` (x: the partitioned run's values) to `out`,
/// named with its worst element's rank when it becomes the worst.
void addLocated(const RunRecord &a, const std::string &stem,
                const std::vector<double> &x, const std::vector<double> &y,
                double floor, Difference *out) {
  size_t at = 0;
  double d = relativeDifference(x, y, floor, &at);
  out->add(d, out->takes(d) && d != 0 ? located(a, stem, at) : stem);
}

/// The largest |value| over the 1-rank run's `stems`.
bool setScale(const RunRecord &b, const std::set<std::string> &stems,
              double *scale, std::string *error) {
  *scale = 0;
  for (const std::string &stem : stems) {
    NpyArray y;
    if (!readDump(b.dumpDir, stem, &y, error))
      return false;
    *scale = std::max(*scale, maxAbs(y.values));
  }
  return true;
}

/// Folds DIR/replicas.<stem>.npy (rows: rank, max |copy - kept copy|), if
/// the partitioned run wrote it, into `out`, each copy measured against
/// `scale` (the tensor's own measure).
bool addCopies(const RunRecord &a, const std::string &stem, double scale,
               Difference *out, std::string *error) {
  std::string path = a.dumpDir + "/replicas." + stem + ".npy";
  if (!llvm::sys::fs::exists(path))
    return true;
  NpyArray rows;
  if (!readNpy(path, &rows, error))
    return false;
  if (rows.shape.size() != 2 || rows.shape[1] != 2) {
    *error = path + ": expected rows of (rank, difference), found shape " +
             shapeString(rows.shape);
    return false;
  }
  for (size_t i = 0; i + 1 < rows.values.size(); i += 2) {
    double d = rows.values[i + 1];
    out->add(scale > 0 ? d / scale : d,
             stem + " on rank " + std::to_string(int64_t(rows.values[i])));
  }
  return true;
}

/// Compares the `stems` of both runs, each tensor against its own largest
/// value (at least kVanishing of the set's); with `copies`, also folds the
/// partitioned run's other copies of each tensor into it, on the same measure.
bool compareDumps(const RunRecord &a, const RunRecord &b,
                  const std::set<std::string> &stems, Difference *out,
                  Difference *copies, std::string *error) {
  double scale;
  if (!setScale(b, stems, &scale, error))
    return false;
  for (const std::string &stem : stems) {
    NpyArray x, y;
    if (!readPair(a, b, stem, &x, &y, error))
      return false;
    addLocated(a, stem, x.values, y.values, kVanishing * scale, out);
    if (copies &&
        !addCopies(a, stem, std::max(maxAbs(y.values), kVanishing * scale),
                   copies, error))
      return false;
  }
  return true;
}

/// The first step's file prefix: "step1.", or the step after a resumed
/// run's checkpoint.
std::string stepPrefix(int64_t step) {
  return "step" + std::to_string(step) + ".";
}

/// The step of a run's first loss line (1 unless it resumed).
int64_t firstStep(const std::map<int64_t, double> &losses) {
  return losses.empty() ? 1 : losses.begin()->first;
}

/// The values of a parameter and its optimizer state after step `t` that
/// `rule` gives from the state before it in `init` (the 1-rank run's
/// step<t-1>.* dumps) and the gradient `g`, clipped by `coef`: name ->
/// values.
bool replayStep(const UpdateRule &rule, const std::string &init, int64_t t,
                const std::vector<double> &g, double coef,
                std::map<std::string, std::vector<double>> *out,
                std::string *error) {
  const std::string before = stepPrefix(t - 1);
  NpyArray p0;
  if (!readDump(init, before + rule.param, &p0, error))
    return false;
  size_t n = p0.values.size();
  if (g.size() != n) {
    *error = "grad." + rule.param + " has " + std::to_string(g.size()) +
             " elements, the parameter " + std::to_string(n);
    return false;
  }
  std::vector<double> p(n);
  if (!rule.adamw) {
    for (size_t i = 0; i < n; ++i)
      p[i] = float(p0.values[i] -
                   rule.lr * (coef * g[i] + rule.weightDecay * p0.values[i]));
    (*out)[rule.param] = std::move(p);
    return true;
  }
  NpyArray m0, v0;
  if (!readDump(init, before + rule.m, &m0, error) ||
      !readDump(init, before + rule.v, &v0, error))
    return false;
  if (m0.values.size() != n || v0.values.size() != n) {
    *error = rule.m + " / " + rule.v + " do not have the " +
             std::to_string(n) + " elements of " + rule.param;
    return false;
  }
  // The runtime's update (runtime/src/cpu/optimizer.cpp) at step t: in
  // double, each result rounded once to the f32 it is stored in.
  const double bc1 = 1.0 - std::pow(rule.beta1, double(t)),
               bc2 = 1.0 - std::pow(rule.beta2, double(t));
  std::vector<double> m(n), v(n);
  for (size_t i = 0; i < n; ++i) {
    double gv = coef * g[i];
    double mv = rule.beta1 * m0.values[i] + (1.0 - rule.beta1) * gv;
    double vv = rule.beta2 * v0.values[i] + (1.0 - rule.beta2) * gv * gv;
    m[i] = float(mv);
    v[i] = float(vv);
    p[i] = float(p0.values[i] -
                 rule.lr * (mv / bc1 / (std::sqrt(vv / bc2) + rule.eps) +
                            rule.weightDecay * p0.values[i]));
  }
  (*out)[rule.param] = std::move(p);
  (*out)[rule.m] = std::move(m);
  (*out)[rule.v] = std::move(v);
  return true;
}

} // namespace

bool Difference::takes(double d) const {
  return count == 0 || worse(d, worst);
}

void Difference::add(double d, const std::string &name) {
  if (takes(d)) {
    worst = d;
    worstName = name;
  }
  ++count;
}

bool Verdict::passes(const Bounds &bounds) const {
  return loss <= bounds.loss && gradients.worst <= bounds.gradients &&
         parameters.worst <= bounds.parameters && copies.worst <= bounds.copies;
}

double relativeDifference(const std::vector<double> &a,
                          const std::vector<double> &b, double floor,
                          size_t *worstAt) {
  double diff = 0, scale = 0;
  if (worstAt)
    *worstAt = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    double d = std::fabs(a[i] - b[i]);
    if (std::isnan(d)) {
      if (worstAt)
        *worstAt = i;
      return NAN;
    }
    if (d > diff && worstAt)
      *worstAt = i;
    diff = std::max(diff, d);
    scale = std::max(scale, std::fabs(b[i]));
  }
  scale = std::max(scale, floor);
  return scale > 0 ? diff / scale : diff;
}

bool compareRuns(const RunRecord &partitioned, const RunRecord &reference,
                 int64_t steps, const std::vector<UpdateRule> &rules,
                 double maxNorm, Verdict *out, std::string *error) {
  Verdict verdict;
  std::map<int64_t, double> a = losses(partitioned.stdoutText),
                            b = losses(reference.stdoutText);
  // Both runs start from one state: the initial one, or the checkpoint they
  // resumed from (its step's successor is the first judged).
  const int64_t first = firstStep(a);
  const std::string prefix = stepPrefix(first);
  for (int64_t k = first; k <= steps; ++k) {
    if (!a.count(k) || !b.count(k)) {
      *error = std::string("the ") + (a.count(k) ? "1-rank" : "partitioned") +
               " run printed no loss for step " + std::to_string(k);
      return false;
    }
    double d = std::fabs(a[k] - b[k]);
    d = b[k] != 0 ? d / std::fabs(b[k]) : d;
    if (k == first || worse(d, verdict.loss))
      verdict.loss = d;
  }
  if (steps < first) {
    *out = verdict;
    return true;
  }
  // What the step updates: parameters and optimizer state (step1.updated.*);
  // the gradients of the parameters among them.
  std::set<std::string> updated, names;
  if (!matchingDumps(partitioned, reference, prefix + "updated.", nullptr,
                     &updated, error))
    return false;
  if (updated.empty()) {
    *error = "no " + prefix + "updated.*.npy in " + reference.dumpDir +
             " (the programs must run with --dump-first-step)";
    return false;
  }
  for (const std::string &stem : updated)
    names.insert(stem.substr((prefix + "updated.").size()));
  std::set<std::string> gradients;
  if (!matchingDumps(partitioned, reference, prefix + "grad.", &names, &gradients,
                     error))
    return false;
  if (!compareDumps(partitioned, reference, gradients, &verdict.gradients,
                    &verdict.copies, error))
    return false;

  // Step 1 replayed on the partitioned run's own gradients, clipped by the
  // global norm it implies (each parameter's gradient counted once).
  std::map<std::string, std::vector<double>> partitionedGrads;
  double sumSquares = 0;
  for (const UpdateRule &rule : rules) {
    std::string stem = prefix + "grad." + rule.param;
    if (!gradients.count(stem))
      continue;
    NpyArray g;
    if (!readDump(partitioned.dumpDir, stem, &g, error))
      return false;
    for (double x : g.values)
      sumSquares += x * x;
    partitionedGrads[rule.param] = std::move(g.values);
  }
  double coef = 1.0;
  if (maxNorm > 0)
    coef = std::min(1.0, maxNorm / (std::sqrt(sumSquares) + 1e-6));
  std::map<std::string, std::vector<double>> expected;
  for (const UpdateRule &rule : rules) {
    auto g = partitionedGrads.find(rule.param);
    if (g != partitionedGrads.end() &&
        !replayStep(rule, reference.dumpDir, first, g->second, coef, &expected,
                    error))
      return false;
  }
  double scale;
  if (!setScale(reference, updated, &scale, error))
    return false;
  for (const std::string &stem : updated) {
    NpyArray x, y;
    if (!readPair(partitioned, reference, stem, &x, &y, error))
      return false;
    auto replayed = expected.find(stem.substr((prefix + "updated.").size()));
    // Without a rule (the step counter): the 1-rank run's value.
    const std::vector<double> &want =
        replayed != expected.end() ? replayed->second : y.values;
    if (want.size() != x.values.size()) {
      *error = stem + ": " + std::to_string(x.values.size()) +
               " elements, the replayed update has " +
               std::to_string(want.size());
      return false;
    }
    addLocated(partitioned, stem, x.values, want, kVanishing * scale,
               &verdict.parameters);
    // Other ranks' copies, and a mirror on another pipeline stage.
    double own = std::max(maxAbs(y.values), kVanishing * scale);
    if (!addCopies(partitioned, stem, own, &verdict.copies, error))
      return false;
    std::string mirror = partitioned.dumpDir + "/mirror." + stem + ".npy";
    if (llvm::sys::fs::exists(mirror)) {
      NpyArray m;
      if (!readNpy(mirror, &m, error))
        return false;
      if (m.values.size() != x.values.size()) {
        *error = mirror + ": " + std::to_string(m.values.size()) +
                 " elements, its owner's " + std::to_string(x.values.size());
        return false;
      }
      verdict.copies.add(relativeDifference(m.values, x.values, own),
                         "mirror." + stem);
    }
  }
  // Every rank's loss against rank 0's (already relative).
  if (!addCopies(partitioned, "loss", 1.0, &verdict.copies, error))
    return false;

  // The drift of the last step's state (reported, not judged).
  if (steps > first) {
    std::set<std::string> final;
    if (!matchingDumps(partitioned, reference, "updated.", nullptr, &final,
                       error))
      return false;
    if (!compareDumps(partitioned, reference, final, &verdict.drift,
                      /*copies=*/nullptr, error))
      return false;
  }
  *out = verdict;
  return true;
}

namespace {
std::string formatDifference(double d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", d);
  return text;
}
} // namespace

bool reportVerdict(llvm::raw_ostream &os, const Verdict &verdict,
                   const Bounds &bounds, int64_t steps, llvm::StringRef rounded,
                   bool routed, double tolerance) {
  auto line = [&](const std::string &what, const Difference &d) {
    os << "verify: " << what << formatDifference(d.worst) << " ("
       << (d.count ? d.worstName : std::string("none")) << ")\n";
  };
  os << "verify: loss " << formatDifference(verdict.loss) << "\n";
  line("gradients ", verdict.gradients);
  line("parameters ", verdict.parameters);
  os << "verify: copies on other ranks " << formatDifference(verdict.copies.worst)
     << " (" << verdict.copies.count << " compared"
     << (verdict.copies.worst != 0 ? ", worst " + verdict.copies.worstName
                                   : std::string())
     << ")\n";
  if (verdict.drift.count)
    line("drift after " + std::to_string(steps) + " steps (not judged) ",
         verdict.drift);
  if (!rounded.empty()) {
    os << "verify: bounds at " << rounded << ": loss "
       << formatDifference(bounds.loss) << ", gradients "
       << formatDifference(bounds.gradients) << " (twice the 1-rank " << rounded
       << " run's distance from its f32 run, plus the tolerance; parameters "
          "and copies: the tolerance)\n";
    if (routed)
      os << "verify: note: a " << rounded
         << " rounding can move a token to another expert, which these "
            "bounds do not cover\n";
  }
  if (verdict.passes(bounds)) {
    os << "verify: PASS\n";
    return true;
  }
  if (!rounded.empty())
    os << "verify: FAIL (bounds at " << rounded << " above)\n";
  else
    os << "verify: FAIL (tolerance " << formatDifference(tolerance) << ")\n";
  return false;
}

bool roundingBounds(const RunRecord &rounded, const RunRecord &exact,
                    int64_t steps, const std::vector<UpdateRule> &rules,
                    double maxNorm, const std::string &logits,
                    double tolerance, Bounds *out, std::string *error) {
  // What rounding alone does: the 1-rank program at reduced precision
  // against itself at f32, measured as --verify measures a plan.
  Verdict distance;
  if (!compareRuns(rounded, exact, steps, rules, maxNorm, &distance, error))
    return false;
  double loss = distance.loss;
  std::map<int64_t, double> exactLosses = losses(exact.stdoutText);
  const int64_t first = firstStep(exactLosses);
  if (!logits.empty() && steps >= first) {
    NpyArray x, y;
    if (!readPair(rounded, exact, stepPrefix(first) + logits, &x, &y, error))
      return false;
    double step1 = exactLosses[first];
    double moved = 0;
    for (size_t i = 0; i < x.values.size(); ++i)
      moved = std::max(moved, std::fabs(x.values[i] - y.values[i]));
    if (step1 != 0)
      loss = std::max(loss, 2 * moved / std::fabs(step1));
  }
  Bounds bounds = Bounds::uniform(tolerance);
  bounds.loss = 2 * loss + tolerance;
  bounds.gradients = 2 * distance.gradients.worst + tolerance;
  *out = bounds;
  return true;
}

} // namespace braid::driver
