//===- PlanReport.cpp - braid-plan's reports and --evaluate's plans -------===//
//
// See PlanReport.h.
//
//===----------------------------------------------------------------------===//

#include "PlanReport.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Format.h"

using namespace llvm;
using namespace braid::plan;

namespace braid::plan::report {

double gb(double bytes) { return bytes / double(1ull << 30); }

void printTable(raw_ostream &os, const std::vector<RankedPlan> &plans) {
  os << format("%-4s %-30s %3s %4s %6s %4s %-9s %9s %6s %11s %7s %13s %7s\n", "rank", "grid",
               "vpp", "mbs", "micro", "zero", "recompute", "step (s)", "MFU", "tokens/s",
               "mem GiB", "exposed comm", "bubble");
  for (size_t i = 0; i < plans.size(); ++i) {
    const Plan &p = plans[i].plan;
    const Estimate &e = plans[i].estimate;
    if (!e.valid) {
      os << format("%-4zu %-30s cannot run: %s\n", i + 1, p.gridString().c_str(),
                   e.invalidReason.c_str());
      continue;
    }
    // The vpp column: the virtual stages, or "zb" for ZB-H1.
    std::string vpp = p.zeroBubble ? "zb" : std::to_string(p.vpp);
    os << format("%-4zu %-30s %3s %4lld %6lld %4d %-9s %9.3f %5.1f%% %11.0f %7.1f %6.3f (%4.1f%%) "
                 "%6.1f%%%s\n",
                 i + 1, p.gridString().c_str(), vpp.c_str(), (long long)p.microBatch,
                 (long long)p.microbatches, p.zero, mlir::braid::stringifyRecompute(p.recompute).data(), e.stepSeconds,
                 100 * e.mfu, e.tokensPerSecond, gb(e.memoryBytes()), e.exposedSeconds(),
                 100 * e.exposedSeconds() / e.stepSeconds,
                 100 * e.bubbleSeconds / e.stepSeconds, e.fits ? "" : "  does not fit");
  }
}

void printExplain(raw_ostream &os, const RankedPlan &r) {
  const Plan &p = r.plan;
  const Estimate &e = r.estimate;
  auto line = [&](const char *what, double seconds) {
    os << format("  %-28s %9.4f s  %5.1f%%\n", what, seconds, 100 * seconds / e.stepSeconds);
  };
  os << "plan " << p.gridString() << " vpp=" << p.vpp
     << (p.zeroBubble ? " schedule=zb-h1" : "") << " mbs=" << p.microBatch
     << " microbatches=" << p.microbatches << " zero=" << p.zero
     << " recompute=" << mlir::braid::stringifyRecompute(p.recompute)
     << " sequence-parallel=" << (p.sequenceParallel && p.tp > 1 ? "true" : "false") << "\n";
  os << "  layers per chunk:";
  for (int64_t l : e.layout)
    os << " " << l;
  os << "\n";
  os << format("  %-28s %9.4f s\n", "step", e.stepSeconds);
  line("compute (slowest stage)", e.computeSeconds);
  line("recompute", e.recomputeSeconds);
  line("pipeline bubble", e.bubbleSeconds);
  line("optimizer", e.optimizerSeconds);
  for (size_t k = 0; k < size_t(CommKind::Count); ++k)
    if (e.total[k] > 0)
      os << format("  %-28s %9.4f s  %5.1f%%  (of %.4f s issued)\n",
                   ("exposed " + std::string(commKindName(CommKind(k)))).c_str(), e.exposed[k],
                   100 * e.exposed[k] / e.stepSeconds, e.total[k]);
  if (e.epCopiesPerToken > 0)
    os << format("  ep dispatch sends each token %.3g times (ep=%d)\n", e.epCopiesPerToken,
                 int(p.ep));
  os << format("  MFU %.1f%%, %.0f tokens/s, %.3g model FLOPs per step\n", 100 * e.mfu,
               e.tokensPerSecond, e.modelFlops);
  if (!e.fits)
    os << "  DOES NOT FIT: ";
  else
    os << "  ";
  os << format("memory per GPU %.2f GiB: weights %.2f, gradients %.2f, optimizer %.2f, "
               "activations %.2f, logits %.2f, ",
               gb(e.memoryBytes()), gb(e.weightBytes), gb(e.gradBytes), gb(e.optimizerBytes),
               gb(e.activationBytes), gb(e.logitBytes));
  // The collectives' own pools, where the runtime keeps them apart.
  if (e.communicationBytes > 0)
    os << format("communication buffers %.2f, ", gb(e.communicationBytes));
  os << format("reserved %.2f\n", gb(e.reservedBytes));
}

json::Object toJson(const RankedPlan &r) {
  const Plan &p = r.plan;
  const Estimate &e = r.estimate;
  if (!e.valid)
    return json::Object{{"grid", p.gridString()}, {"invalid", e.invalidReason}};
  json::Object exposed, issued;
  for (size_t k = 0; k < size_t(CommKind::Count); ++k) {
    exposed[commKindName(CommKind(k))] = e.exposed[k];
    issued[commKindName(CommKind(k))] = e.total[k];
  }
  json::Array layout;
  for (int64_t l : e.layout)
    layout.push_back(l);
  return json::Object{
      {"grid", p.gridString()},
      {"dp", p.dp}, {"ep", p.ep}, {"cp", p.cp}, {"tp", p.tp}, {"pp", p.pp},
      {"vpp", p.vpp}, {"micro_batch", p.microBatch}, {"microbatches", p.microbatches},
      {"schedule", p.pp == 1 ? "none" : mlir::braid::stringifyScheduleKind(p.schedule()).str()},
      {"zero", p.zero}, {"recompute", mlir::braid::stringifyRecompute(p.recompute).str()},
      {"sequence_parallel", p.sequenceParallel && p.tp > 1},
      {"layout", std::move(layout)},
      {"step_s", e.stepSeconds}, {"compute_s", e.computeSeconds},
      {"recompute_s", e.recomputeSeconds}, {"bubble_s", e.bubbleSeconds},
      {"optimizer_s", e.optimizerSeconds}, {"exposed_s", std::move(exposed)},
      {"issued_s", std::move(issued)}, {"mfu", e.mfu}, {"tokens_per_s", e.tokensPerSecond},
      {"memory_bytes", e.memoryBytes()}, {"fits", e.fits},
      {"layer_activation_bytes", e.layerActivationBytes},
      {"ep_copies_per_token", e.epCopiesPerToken},
      {"model_flops", e.modelFlops},
      {"simulated", e.simulated},
      {"memory", json::Object{{"weights", e.weightBytes}, {"gradients", e.gradBytes},
                              {"optimizer", e.optimizerBytes},
                              {"activations", e.activationBytes}, {"logits", e.logitBytes},
                              {"communication", e.communicationBytes},
                              {"reserved", e.reservedBytes}}}};
}

Expected<Plan> parsePlan(StringRef text, int64_t batch) {
  auto bad = [](const Twine &msg) {
    return createStringError(inconvertibleErrorCode(), "--evaluate: " + msg);
  };
  Plan p;
  SmallVector<StringRef> items;
  text.split(items, ',', -1, false);
  bool haveMicrobatches = false;
  for (StringRef item : items) {
    auto [key, value] = item.split('=');
    key = key.trim();
    value = value.trim();
    int64_t n = 0;
    bool isInt = !value.getAsInteger(10, n) && n >= 0;
    int64_t *field = llvm::StringSwitch<int64_t *>(key)
                         .Case("dp", &p.dp)
                         .Case("ep", &p.ep)
                         .Case("cp", &p.cp)
                         .Case("tp", &p.tp)
                         .Case("pp", &p.pp)
                         .Case("vpp", &p.vpp)
                         .Case("mbs", &p.microBatch)
                         .Case("microbatches", &p.microbatches)
                         .Default(nullptr);
    if (field || key == "zero") {
      if (!isInt)
        return bad(key + " needs a non-negative integer, not '" + value + "'");
      if (field)
        *field = n;
      else
        p.zero = int(n);
      haveMicrobatches |= key == "microbatches";
    } else if (key == "schedule") {
      std::optional<mlir::braid::ScheduleKind> kind = mlir::braid::symbolizeScheduleKind(value);
      if (!kind || *kind == mlir::braid::ScheduleKind::GPipe)
        return bad("schedule is 1f1b, interleaved (with vpp > 1) or zb-h1");
      p.zeroBubble = *kind == mlir::braid::ScheduleKind::ZeroBubbleH1;
    } else if (key == "sp") {
      p.sequenceParallel = value == "true" || value == "1";
    } else if (key == "recompute") {
      std::optional<Recompute> recompute = mlir::braid::symbolizeRecompute(value);
      if (!recompute)
        return bad("recompute is " + mlir::braid::enumKeywords<Recompute>());
      p.recompute = *recompute;
    } else if (key == "layout") {
      SmallVector<StringRef> parts;
      value.split(parts, ':');
      for (StringRef part : parts) {
        int64_t l;
        if (part.getAsInteger(10, l))
          return bad("layout is the layers per chunk, a:b:c");
        p.layout.push_back(l);
      }
    } else {
      return bad("unknown key '" + key + "'");
    }
  }
  if (!haveMicrobatches) {
    int64_t per = p.dp * p.ep * p.microBatch;
    if (per < 1 || batch % per)
      return bad("the global batch " + Twine(batch) +
                 " does not split over dp * ep * mbs = " + Twine(per));
    p.microbatches = batch / per;
  }
  return p;
}

} // namespace braid::plan::report
