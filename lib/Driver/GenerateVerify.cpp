//===- GenerateVerify.cpp - a partitioned generation against one rank -----===//
//
// braid-run --generate --verify --grid G runs the programs partitioned for G
// and the same programs on one rank, each with --logits-out, and compares
// what they generated: every request's ids must be identical, and the
// logits that chose each token within the tolerance of teacher forcing (max
// |a - b| / max |b| per request and step). A partitioned plan that computes
// something else (a dropped all-reduce, a cache block written on the wrong
// rank) changes the logits long before it changes a greedy id, so both are
// checked.
//
//===----------------------------------------------------------------------===//

#include "braid/Driver/GenerateVerify.h"

#include "braid/Driver/NpyReader.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace braid::driver {

namespace {

/// The ids a run printed ("request R: ID ID ..."), by request; refused
/// requests ("request R: refused: ...") are left out.
std::map<int64_t, std::string> generatedIds(llvm::StringRef text) {
  std::map<int64_t, std::string> out;
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    line = line.rtrim("\r");
    if (!line.consume_front("request "))
      continue;
    auto [index, rest] = line.split(':');
    int64_t r;
    if (index.getAsInteger(10, r) || rest.trim().starts_with("refused"))
      continue;
    out[r] = rest.trim().str();
  }
  return out;
}

/// `value` printed with the printf format `format`.
std::string number(const char *format, double value) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format(format, value);
  return text;
}

/// The bound the run's teacher forcing judged by, when it printed one
/// ("verify: bound B at bf16: ..." for logits stored below f32), else
/// `tolerance`: the grid's rounding differs from one rank's as the decode
/// program's differs from the forward's, by the sums' order.
double boundOf(llvm::StringRef text, double tolerance) {
  size_t at = text.find("verify: bound ");
  if (at == llvm::StringRef::npos)
    return tolerance;
  llvm::StringRef value = text.drop_front(at + 14).split(' ').first;
  double bound;
  if (value.getAsDouble(bound) || !(bound > 0))
    return tolerance;
  return bound;
}

/// The worst difference seen and where.
struct Worst {
  double difference = -1;
  int64_t request = 0, step = 0;
};

} // namespace

bool compareGenerations(const GenerationRun &partitioned, const GenerationRun &reference,
                        llvm::StringRef comparison, double tolerance, llvm::raw_ostream &os) {
  // A run that stopped before its summary (a bad argument, a crash) has
  // nothing to compare.
  for (const auto &[run, name] : {std::pair{&partitioned, "the partitioned run"},
                                  std::pair{&reference, "the 1-rank run"}})
    if (!llvm::any_of(std::initializer_list<llvm::StringRef>{"generate: ", "serve: "},
                      [&](llvm::StringRef summary) {
                        llvm::StringRef text(run->text);
                        return text.starts_with(summary) || text.contains("\n" + summary.str());
                      })) {
      os << "verify: FAIL " << comparison << ": " << name
         << " did not complete (no summary line)\n";
      return false;
    }
  const double bound = boundOf(partitioned.text, tolerance);
  std::map<int64_t, std::string> ids = generatedIds(partitioned.text);
  std::map<int64_t, std::string> expected = generatedIds(reference.text);
  bool ok = true;
  auto failLine = [&](const llvm::Twine &what) {
    os << "verify: FAIL " << comparison << ": " << what << "\n";
    ok = false;
  };
  for (const auto &[r, want] : expected)
    if (!ids.count(r))
      failLine("request " + llvm::Twine(r) + " generated nothing (1 rank: " + want + ")");
  Worst worst;
  for (const auto &[r, got] : ids) {
    auto want = expected.find(r);
    if (want == expected.end()) {
      failLine("request " + llvm::Twine(r) + " was refused on 1 rank");
      continue;
    }
    if (got != want->second)
      failLine("request " + llvm::Twine(r) + " generated " + got + ", 1 rank " + want->second);
    std::string file = "/request" + std::to_string(r) + ".npy", error;
    NpyArray a, b;
    if (!readNpy(partitioned.logitsDir + file, &a, &error) ||
        !readNpy(reference.logitsDir + file, &b, &error)) {
      failLine("request " + llvm::Twine(r) + ": " + error);
      continue;
    }
    if (a.shape != b.shape || a.shape.size() != 2) {
      failLine("request " + llvm::Twine(r) + ": logits of shape " + shapeString(a.shape) +
               ", 1 rank " + shapeString(b.shape));
      continue;
    }
    const int64_t steps = a.shape[0], vocab = a.shape[1];
    for (int64_t t = 0; t < steps; ++t) {
      double diff = 0, scale = 0;
      for (int64_t v = t * vocab; v < (t + 1) * vocab; ++v) {
        diff = std::max(diff, std::fabs(a.values[size_t(v)] - b.values[size_t(v)]));
        scale = std::max(scale, std::fabs(b.values[size_t(v)]));
      }
      double relative = scale > 0 ? diff / scale : diff;
      if (std::isnan(relative) || relative > worst.difference)
        worst = {std::isnan(relative) ? INFINITY : relative, r, t};
      if (!(relative <= bound))
        failLine("request " + llvm::Twine(r) + " step " + llvm::Twine(t) +
                 ": logit difference " + number("%.3g", relative) + " > " +
                 number("%.3g", bound));
    }
  }
  if (ok) {
    os << "verify: " << comparison << ": ok (ids identical for " << ids.size()
       << " requests";
    if (worst.difference >= 0)
      os << ", worst logit difference " << llvm::format("%.3g", worst.difference)
         << " at request " << worst.request << " step " << worst.step;
    os << ")\n";
  }
  os.flush();
  return ok;
}

} // namespace braid::driver
