//===- StepSimulation.cpp - a per-rank program's step, simulated ----------===//
//
// The simulation of StepSimulation.h: --braid-print-plan prints it,
// braid-plan --compile takes its figures.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Transforms/StepSimulation.h"

#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/EntryPoints.h"
#include "dialects/dist/IR/DistDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <limits>
#include <map>
#include <tuple>

using namespace mlir;
using namespace mlir::braid;

namespace {

struct StepSimulator {
  ModuleOp module;
  const StepTiming &timing;

  /// The simulated step: compute as StepTiming times it (the hardware's
  /// calibration, or its roofline: FLOPs at its bf16 peak or the bytes an
  /// op reads and writes at its HBM bandwidth, whichever is slower), each group's
  /// transfers on the group's own link in issue order (a group's transfer
  /// waits for the group's previous one, not for other groups': tp's
  /// NVLink and dp's network carry theirs at once, as the link emulator's
  /// groups do), a wait exposing what of its transfer has not ended by then.
  /// A pipeline runs one process per stage: a send takes the sender's link
  /// (its own wait returns at once, as the runtime's), and the receive
  /// matching it (from that stage, with that tag, in order) ends when the
  /// message has arrived. A stage's wait for its neighbour is exposed
  /// communication from when the message left on; before, the stage waits
  /// for the neighbour's compute (the pipeline's bubble), counted apart.
  ///
  /// Ranks sharing cores (the hardware's hostCores below the ranks: CPU
  /// ranks on one machine) run on one clock: each program stands for
  /// ranks / programs ranks, and an op computes at min(1, cores / ranks
  /// computing at the time) of its rate, so that a stage whose neighbour
  /// sleeps in the pipeline's warm-up, cool-down or waits computes faster
  /// than one whose neighbour computes too.
  struct Process {
    SmallVector<Operation *> ops; ///< the program, calls expanded
    size_t pc = 0;
    int64_t stage = 0;
    double now = 0, compute = 0, communication = 0, bubble = 0;
    /// By group: when its link is next free.
    std::map<std::string, double> commFree;
    llvm::DenseMap<Value, std::pair<double, StepTiming::Key>> ends;
    /// A matched receive's token: when its message left the sender.
    llvm::DenseMap<Value, double> sent;
    /// Receives whose message has not been matched: token -> (peer, tag,
    /// ordinal among the receives from that peer with that tag).
    llvm::DenseMap<Value, std::tuple<int64_t, int64_t, int64_t>> receives;
    std::map<std::pair<int64_t, int64_t>, int64_t> received;
    std::map<StepTiming::Key, double> exposed;
    /// With shared cores: the seconds of work, at a whole core's rate, the
    /// compute op at `pc` has left (it began at `now`).
    double work = 0;
  };
  /// What stopped `run`: the program's end, a message not sent yet, or
  /// (with shared cores) a compute op, which the shared clock runs.
  enum class Stop { End, Message, Compute };
  /// The cores the ranks share and how many ranks a program stands for
  /// (cores 0: each rank computes alone).
  int64_t cores = 0, ranksPerProgram = 1;
  /// The messages from stage to stage with a tag, in order: when each took
  /// the sender's link and when it arrived.
  using Mailbox = std::map<std::tuple<int64_t, int64_t, int64_t>,
                           SmallVector<std::pair<double, double>>>;

  void expand(func::FuncOp func, SmallVector<Operation *> &ops, unsigned depth = 0) {
    if (depth > 64)
      return;
    for (Operation &op : func.getBody().getOps()) {
      if (auto call = dyn_cast<func::CallOp>(op)) {
        if (auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee()))
          expand(callee, ops, depth + 1);
        continue;
      }
      ops.push_back(&op);
    }
  }

  /// Runs `p` until it ends, waits for a message not sent yet or (with
  /// shared cores) reaches a compute op.
  Stop run(Process &p, Mailbox &mail) {
    for (; p.pc < p.ops.size(); ++p.pc) {
      Operation &op = *p.ops[p.pc];
      if (auto wait = dyn_cast<dist::WaitOp>(op)) {
        // Resolve the messages first: a wait whose message is not sent
        // yet stops the process here, to resume once it is.
        for (Value token : wait.getTokens()) {
          auto r = p.receives.find(token);
          if (r == p.receives.end())
            continue;
          auto [peer, tag, ordinal] = r->second;
          auto box = mail.find({peer, p.stage, tag});
          if (box == mail.end() || int64_t(box->second.size()) <= ordinal)
            return Stop::Message;
          p.sent[token] = box->second[ordinal].first;
          p.ends[token].first = box->second[ordinal].second;
          p.receives.erase(r);
        }
        for (Value token : wait.getTokens()) {
          auto it = p.ends.find(token);
          if (it == p.ends.end())
            continue;
          if (it->second.first > p.now) {
            double waited = it->second.first - p.now, bubble = 0;
            if (auto s = p.sent.find(token); s != p.sent.end())
              bubble = std::clamp(s->second - p.now, 0.0, waited);
            p.bubble += bubble;
            p.exposed[it->second.second] += waited - bubble;
            p.now = it->second.first;
          }
        }
        continue;
      }
      if (auto t = timing.transfer(&op)) {
        Value token = dist::getToken(&op);
        p.exposed.try_emplace(t->first, 0.0);
        if (auto recv = dyn_cast<dist::RecvOp>(op)) {
          int64_t peer = recv.getPeer(), tag = recv.getTag().value_or(-1);
          p.receives[token] = {peer, tag, p.received[{peer, tag}]++};
          p.ends[token] = {p.now, t->first};
          continue;
        }
        double &free = p.commFree[t->first.second];
        double start = std::max(p.now, free);
        free = start + t->second;
        p.communication += t->second;
        if (auto send = dyn_cast<dist::SendOp>(op)) {
          mail[{p.stage, send.getPeer(), send.getTag().value_or(-1)}].push_back(
              {start, free});
          p.ends[token] = {p.now, t->first};
          continue;
        }
        p.ends[token] = {free, t->first};
        continue;
      }
      double seconds = timing.computeSeconds(&op);
      if (cores > 0 && seconds > 0) {
        p.work = seconds;
        return Stop::Compute;
      }
      p.now += seconds;
      p.compute += seconds;
    }
    return Stop::End;
  }

  /// Simulates the programs of `funcs` (one per pipeline stage, or the
  /// step alone) together; false when they wait for each other forever.
  bool simulate(ArrayRef<func::FuncOp> funcs, std::vector<Process> &procs) {
    procs.assign(funcs.size(), Process());
    for (auto [k, func] : llvm::enumerate(funcs)) {
      procs[k].stage = int64_t(k);
      expand(func, procs[k].ops);
    }
    Mailbox mail;
    SmallVector<Stop> stop(procs.size(), Stop::Message);
    // Every program that is not computing runs on until it computes, waits
    // for a message or ends; until none moves (a send releases a receive).
    auto runAll = [&] {
      for (bool progress = true; progress;) {
        progress = false;
        for (auto [k, p] : llvm::enumerate(procs)) {
          if (stop[k] != Stop::Message)
            continue;
          size_t before = p.pc;
          stop[k] = run(p, mail);
          progress |= stop[k] != Stop::Message || p.pc != before;
        }
      }
    };
    runAll();
    // With shared cores, the compute ops run on one clock: those begun by
    // `clock` share the cores until the first of them ends or another
    // program's begins (a program's clock runs ahead of the shared one
    // after a wait for a transfer: its op begins then).
    for (double clock = 0;;) {
      SmallVector<size_t> computing;
      double next = std::numeric_limits<double>::infinity();
      for (auto [k, p] : llvm::enumerate(procs)) {
        if (stop[k] != Stop::Compute)
          continue;
        if (p.now <= clock)
          computing.push_back(k);
        else
          next = std::min(next, p.now);
      }
      if (computing.empty() && next == std::numeric_limits<double>::infinity())
        break;
      double rate = std::min(
          1.0, double(cores) / double(int64_t(computing.size()) * ranksPerProgram));
      size_t first = computing.size();
      for (auto [i, k] : llvm::enumerate(computing))
        if (clock + procs[k].work / rate < next) {
          next = clock + procs[k].work / rate;
          first = i;
        }
      for (auto [i, k] : llvm::enumerate(computing)) {
        Process &p = procs[k];
        p.work = i == first ? 0 : p.work - (next - clock) * rate;
        // Ops that end together (equal work begun together) end at once.
        if (p.work > 1e-12 * std::max(1.0, next))
          continue;
        p.compute += next - p.now;
        p.now = next;
        ++p.pc;
        stop[k] = Stop::Message;
      }
      clock = next;
      runAll();
    }
    return llvm::all_of(stop, [](Stop s) { return s == Stop::End; });
  }

};

} // namespace

std::optional<SmallVector<SimulatedProgram>>
mlir::braid::simulatePrograms(ModuleOp module, ArrayRef<func::FuncOp> funcs,
                              const StepTiming &timing) {
  StepSimulator simulator{module, timing};
  int64_t ranks = timing.grid.numRanks();
  simulator.cores = timing.hardware.sharedCores(ranks);
  simulator.ranksPerProgram = std::max<int64_t>(1, ranks / int64_t(funcs.size()));
  std::vector<StepSimulator::Process> procs;
  if (!simulator.simulate(funcs, procs))
    return std::nullopt;
  SmallVector<SimulatedProgram> out;
  for (const StepSimulator::Process &p : procs) {
    SimulatedProgram s;
    s.stage = p.stage;
    s.stepSeconds = p.now;
    s.computeSeconds = p.compute;
    s.transferSeconds = p.communication;
    s.bubbleSeconds = p.bubble;
    s.exposed = p.exposed;
    out.push_back(std::move(s));
  }
  return out;
}

FailureOr<SmallVector<SimulatedProgram>>
mlir::braid::simulateStep(ModuleOp module,
                          const ::braid::cost::Hardware &hardware,
                          const ::braid::link::Links &links,
                          const ::braid::cost::ComputeCalibration *calibration) {
  FailureOr<std::optional<Grid>> grid = Grid::of(module);
  if (failed(grid))
    return failure();
  if (!*grid)
    return module.emitError("simulating the step: the module is not partitioned (no grid)");
  // The verifier has checked that braid.pipeline_entries names functions.
  FailureOr<SmallVector<func::FuncOp>> funcs =
      getRankSteps(module, std::nullopt, "simulating the step");
  if (failed(funcs))
    return failure();
  StepTiming timing(**grid, hardware, links, calibration);
  std::optional<SmallVector<SimulatedProgram>> out = simulatePrograms(module, *funcs, timing);
  if (!out)
    return module.emitError("simulating the step: the stages wait for each other forever");
  return std::move(*out);
}
