//===- ListSchedule.cpp - a block ordered by a timing model ---------------===//
//
// The list scheduler of --braid-schedule-overlap, in the manner of XLA's
// latency-hiding scheduler: a dependence graph of the block's ops, a clock
// for compute and one link per group (the transfers of a group run one after
// another on it, other groups' at the same time, as the runtime's progress
// thread and the link emulator run them), and a ready list from which each
// step takes
// - every transfer whose operands are there: it starts at once, so that its
//   link is busy as early as possible (a prefetch of parameters is held
//   back by an edge from the call ahead of its use, which bounds the memory
//   gathered parameters take);
// - else the ready op that stalls least on a transfer in flight (a wait it
//   needs that has not ended by the clock), then the one with the longest
//   path to the block's end, transfers counted at their seconds (what
//   feeds a long transfer goes first, so it starts early), then program
//   order. The waits an op needs are taken just before it: as late as the
//   uses allow, which is where the memory plan frees a transfer's
//   operands, so the schedule holds no buffer longer than its uses do.
// The graph holds, beyond definitions and uses (a transfer's result through
// its wait):
// - ops writing persistent storage (updates, set_param, a call holding
//   one) and the terminator: nothing crosses them;
// - calls and ops with regions (a layer's call, a pipeline action, a rolled
//   loop): compute keeps its side of them, so that no layer's activations
//   live longer; what only a transfer reads (its feeders) moves with it;
// - a group whose ranks run different programs (`ordered`: a pipeline's
//   groups over pp): its transfers, and the calls issuing transfers on it,
//   keep their order, so every rank of it issues them alike. Every rank of
//   any other group runs this program, so the order chosen here is theirs
//   too, and no schedule can deadlock (--braid-check-collective-order
//   checks it).
// Every edge goes forward in the block's order, which therefore is one
// schedule of the graph: the scheduler always completes.
//
//===----------------------------------------------------------------------===//

#include "ScheduleOverlap.h"
#include "LiveBytes.h"

#include "dialects/dist/IR/DistDialect.h"
#include "dialects/dist/IR/DistUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

#include <map>
#include <set>
#include <tuple>
#include <optional>

using namespace mlir;

namespace mlir::dist {

namespace {

enum class Kind {
  Start,   ///< a transfer
  Wait,    ///< dist.wait
  Fence,   ///< writes persistent storage, or the terminator
  Call,    ///< a call or an op with regions: compute keeps its side
  Feeder,  ///< only a transfer reads it: moves with the transfer
  Compute, ///< anything else
};

struct Graph {
  SmallVector<Operation *> ops;
  llvm::DenseMap<Operation *, unsigned> index;
  SmallVector<Kind> kind;
  SmallVector<SmallVector<unsigned, 4>> preds, succs;
  /// The seconds each op takes: compute for compute and calls, the link for
  /// a transfer, nothing for a wait.
  SmallVector<double> cost;
  /// A transfer's token (null for other ops), found once: a call's uses
  /// would otherwise scan its results per operand.
  SmallVector<Value> token;
  /// The longest path from an op to the block's end, its own cost included.
  SmallVector<double> height;
  /// A transfer's feeders, in program order: placed with it, just before.
  llvm::DenseMap<unsigned, SmallVector<unsigned>> feedersOf;
  /// Whether a transfer's group spans ranks that run other programs (a
  /// pipeline's stages): they wait for it.
  SmallVector<bool> crossProgram;
  /// Whether an op outside a transfer's unit (it and its feeders) is read by
  /// one: running it lets the transfer start.
  SmallVector<bool> unlocks;
};

/// The op of `block` holding `op` (itself, or an ancestor), or null.
Operation *inBlock(Block &block, Operation *op) { return block.findAncestorOpInBlock(*op); }

/// The block's ops, their kinds, their transfers' feeders and their costs.
void classifyOps(Graph &g, Block &block, const mlir::braid::StepTiming *timing,
                 const ListScheduleRules &rules) {
  for (Operation &op : block) {
    g.index[&op] = g.ops.size();
    g.ops.push_back(&op);
  }
  size_t n = g.ops.size();
  g.kind.resize(n);
  g.preds.resize(n);
  g.succs.resize(n);
  g.cost.assign(n, 0.0);
  g.height.assign(n, 0.0);
  g.token.resize(n);
  for (auto [i, op] : llvm::enumerate(g.ops))
    g.token[i] = dist::getToken(op);

  auto &feedersOf = g.feedersOf;
  llvm::DenseSet<unsigned> isFeeder;
  for (auto [i, op] : llvm::enumerate(g.ops))
    if (g.token[i])
      for (Operation *f : rules.feeders(op))
        if (auto it = g.index.find(f); it != g.index.end()) {
          feedersOf[i].push_back(it->second);
          isFeeder.insert(it->second);
        }
  for (auto [i, op] : llvm::enumerate(g.ops)) {
    Kind k = Kind::Compute;
    if (g.token[i])
      k = Kind::Start;
    else if (isa<dist::WaitOp>(op))
      k = Kind::Wait;
    else if (op->hasTrait<OpTrait::IsTerminator>() || rules.isBarrier(op))
      k = Kind::Fence;
    else if (isa<func::CallOp>(op) || op->getNumRegions() > 0)
      k = Kind::Call;
    else if (isFeeder.contains(i))
      k = Kind::Feeder;
    g.kind[i] = k;
    if (k == Kind::Start && timing)
      if (auto t = timing->transfer(op))
        g.cost[i] = t->second;
    if (k == Kind::Call)
      g.cost[i] = rules.callSeconds(op);
    else if ((k == Kind::Compute || k == Kind::Feeder) && timing)
      g.cost[i] = timing->computeSeconds(op);
  }
}

/// Every order the schedule must keep, as predecessors: definitions and
/// uses, fences, calls against compute, ordered transfers per group, the
/// parameters some op sets.
void addDependences(Graph &g, Block &block, const ListScheduleRules &rules) {
  size_t n = g.ops.size();
  auto &feedersOf = g.feedersOf;
  auto dep = [&](unsigned i, unsigned j) {
    if (j < i)
      g.preds[i].push_back(j);
  };
  // The parameters some op sets (ZeRO's deferred gathers end in a set):
  // every op touching one keeps its order with the others that do.
  llvm::StringSet<> setHere;
  for (unsigned i = 0; i < n; ++i)
    for (const auto &p : rules.setParams(g.ops[i]))
      setHere.insert(p.getKey());
  llvm::StringMap<unsigned> lastTouch;
  if (!setHere.empty())
    for (unsigned i = 0; i < n; ++i)
      for (const auto &p : rules.touchedParams(g.ops[i]))
        if (setHere.contains(p.getKey())) {
          if (auto it = lastTouch.find(p.getKey()); it != lastTouch.end())
            dep(i, it->second);
          lastTouch[p.getKey()] = i;
        }
  int64_t lastFence = -1, lastCall = -1;
  SmallVector<unsigned> sinceFence, computeSinceCall;
  llvm::StringMap<unsigned> lastOnGroup; // an ordered transfer, or a call
  for (unsigned i = 0; i < n; ++i) {
    Operation *op = g.ops[i];
    Kind k = g.kind[i];
    // Definitions and uses, nested regions' too; a transfer's result is
    // there once its wait has completed it.
    op->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (!def)
          continue;
        Operation *holder = inBlock(block, def);
        if (!holder || holder == op)
          continue;
        if (Value token = g.token[g.index[holder]]; token && operand != token)
          if (dist::WaitOp wait = dist::getWait(token); wait && wait->getBlock() == &block) {
            dep(i, g.index[wait]);
            continue;
          }
        dep(i, g.index[holder]);
      }
    });
    if (lastFence >= 0)
      dep(i, lastFence);
    if (k == Kind::Fence) {
      for (unsigned j : sinceFence)
        dep(i, j);
      sinceFence.clear();
      computeSinceCall.clear();
      lastFence = i;
      lastCall = i;
    } else {
      sinceFence.push_back(i);
    }
    if (k == Kind::Compute) {
      if (lastCall >= 0)
        dep(i, lastCall);
      computeSinceCall.push_back(i);
    }
    if (k == Kind::Call) {
      if (lastCall >= 0)
        dep(i, lastCall);
      for (unsigned j : computeSinceCall)
        dep(i, j);
      computeSinceCall.clear();
      lastCall = i;
    }
    if (k == Kind::Start) {
      if (rules.ordered(op)) {
        std::string group = transferGroupKey(op);
        if (auto it = lastOnGroup.find(group); it != lastOnGroup.end())
          dep(i, it->second);
        lastOnGroup[group] = i;
      }
      if (Operation *anchor = rules.startAfter(op))
        if (auto it = g.index.find(anchor); it != g.index.end()) {
          dep(i, it->second);
          for (unsigned f : feedersOf.lookup(i))
            dep(f, it->second);
        }
    }
    if (const llvm::StringSet<> *groups = rules.callGroups(op))
      for (const auto &group : *groups) {
        if (auto it = lastOnGroup.find(group.getKey()); it != lastOnGroup.end())
          dep(i, it->second);
        lastOnGroup[group.getKey()] = i;
      }
  }
}

/// Successors, the transfers' reach across programs, what unlocks a
/// transfer, and each op's height.
void finishGraph(Graph &g, const ListScheduleRules &rules) {
  size_t n = g.ops.size();
  auto &feedersOf = g.feedersOf;
  for (unsigned i = 0; i < n; ++i) {
    llvm::sort(g.preds[i]);
    g.preds[i].erase(std::unique(g.preds[i].begin(), g.preds[i].end()), g.preds[i].end());
    for (unsigned j : g.preds[i])
      g.succs[j].push_back(i);
  }
  g.crossProgram.assign(n, false);
  for (unsigned i = 0; i < n; ++i)
    g.crossProgram[i] = g.kind[i] == Kind::Start && rules.ordered(g.ops[i]);
  g.unlocks.assign(n, false);
  for (unsigned i = 0; i < n; ++i)
    if (g.kind[i] == Kind::Start) {
      SmallVector<unsigned> unit = feedersOf.lookup(i);
      unit.push_back(i);
      for (unsigned m : unit)
        for (unsigned p : g.preds[m])
          if (!llvm::is_contained(unit, p))
            g.unlocks[p] = true;
    }
  for (unsigned i = n; i-- > 0;) {
    double longest = 0;
    for (unsigned s : g.succs[i])
      longest = std::max(longest, g.height[s]);
    g.height[i] = g.cost[i] + longest;
  }
}

Graph build(Block &block, const mlir::braid::StepTiming *timing,
            const ListScheduleRules &rules) {
  Graph g;
  classifyOps(g, block, timing, rules);
  addDependences(g, block, rules);
  finishGraph(g, rules);
  return g;
}

/// The ops' order of preference among ops stalling alike (`better` in the
/// file's comment): what lets a transfer start, then the longer path
/// (heights within 1e-12 of each other tie), then program order; without a
/// timing model, program order. Returns each op's rank in it.
SmallVector<unsigned> rankByPreference(const Graph &g, bool byCost) {
  size_t n = g.ops.size();
  SmallVector<unsigned> order = llvm::to_vector(llvm::seq<unsigned>(0, unsigned(n)));
  if (byCost) {
    llvm::stable_sort(order, [&](unsigned a, unsigned b) {
      if (g.unlocks[a] != g.unlocks[b])
        return bool(g.unlocks[a]);
      return g.height[a] > g.height[b];
    });
    // A run of heights each within 1e-12 of the one before is one height.
    for (size_t i = 0; i < n;) {
      size_t j = i + 1;
      while (j < n && g.unlocks[order[j]] == g.unlocks[order[i]] &&
             std::abs(g.height[order[j - 1]] - g.height[order[j]]) <= 1e-12)
        ++j;
      std::sort(order.begin() + i, order.begin() + j);
      i = j;
    }
  }
  SmallVector<unsigned> rank(n);
  for (auto [r, i] : llvm::enumerate(order))
    rank[i] = r;
  return rank;
}

/// The list scheduler's loop (see listSchedule). The ready ops are kept in
/// sets ordered as the choice among them goes, so that each step looks at
/// the few that can win instead of at every ready op (a ZeRO step's
/// deferred gathers and the sets they end in are ready from the start):
/// - `startable`: the transfers needing no wait, by (another stage waits
///   for it, preference);
/// - `unstalled`: the ops that would not stall (no wait pending, or the
///   transfers of their waits done by the clock), by preference;
/// - `stalled`: the others, by the end of their last transfer, then
///   preference.
/// An op that does not fit the memory budget is passed over in order.
class ReadyList {
public:
  ReadyList(Block &block, const mlir::braid::StepTiming *timing, const ListScheduleRules &rules)
      : block(block), timing(timing), rules(rules), g(build(block, timing, rules)),
        n(g.ops.size()), memory(block, [this](Operation *op) { return this->rules.callBytes(op, true); }),
        rank(rankByPreference(g, rules.byCost)) {}

  ListScheduleResult run();

private:
  /// A ready op (or a transfer's unit): the waits it needs that are not
  /// taken yet (ascending) and when the last of their transfers ends.
  struct Candidate {
    SmallVector<unsigned, 2> waits;
    double end = 0;
    bool ready = false;
  };

  Block &block;
  const mlir::braid::StepTiming *timing;
  const ListScheduleRules &rules;
  Graph g;
  size_t n;
  // The live bytes as ops are placed, calls holding their callees' frames
  // as scheduled, against the budget.
  LiveBytes memory;
  SmallVector<unsigned> rank;
  // pending: preds not yet available. A pred is available once placed,
  // or, for a wait, once its transfer has started (the wait itself is taken
  // just before the first op that needs it).
  SmallVector<unsigned> pending;
  SmallVector<bool> emitted;
  // A transfer is placed with its feeders, as one unit, once every pred of
  // the unit from outside it is available: unitPending counts those edges.
  SmallVector<int64_t> owner; // the transfer whose unit holds an op
  SmallVector<unsigned> unitPending;
  /// Each candidate's ops: a transfer's unit (its feeders, then it), else
  /// the op.
  SmallVector<SmallVector<unsigned, 1>> members;
  SmallVector<Candidate> candidates;
  size_t readyCount = 0;
  /// Per wait, the candidates that needed it when they became ready.
  SmallVector<SmallVector<unsigned, 1>> needers;
  /// The waits whose transfers have started, not taken yet.
  std::set<unsigned> inFlight;
  std::set<std::pair<unsigned, unsigned>> startable; // (cross ? 0 : n) + rank, op
  std::set<std::pair<unsigned, unsigned>> unstalled; // rank, op
  std::set<std::tuple<double, unsigned, unsigned>> stalled; // end, rank, op

  double now = 0;
  std::map<std::string, double> linkFree;
  SmallVector<double> ends; // a transfer's: when its wait returns
  SmallVector<Operation *> order;

  void initialize();
  void available(unsigned j);
  void becomeReady(unsigned c);
  void unlist(unsigned c);
  void list(unsigned c);
  double waitEnd(unsigned w) const;
  double stallOf(const Candidate &c) const;
  bool fits(unsigned c);
  std::optional<unsigned> leastStalled(bool mustFit);
  std::optional<unsigned> freeingWait();
  void emit(unsigned i);
  void place(unsigned i);
};

void ReadyList::initialize() {
  pending.resize(n);
  for (unsigned i = 0; i < n; ++i)
    pending[i] = g.preds[i].size();
  emitted.assign(n, false);
  owner.assign(n, -1);
  unitPending.assign(n, 0);
  members.resize(n);
  candidates.resize(n);
  needers.resize(n);
  ends.assign(n, 0.0);
  for (unsigned t = 0; t < n; ++t) {
    if (g.kind[t] != Kind::Start) {
      members[t] = {t};
      continue;
    }
    SmallVector<unsigned> feeders = g.feedersOf.lookup(t);
    members[t].assign(feeders.begin(), feeders.end());
    members[t].push_back(t);
    for (unsigned m : members[t])
      owner[m] = t;
  }
  for (unsigned m = 0; m < n; ++m)
    if (owner[m] >= 0)
      for (unsigned p : g.preds[m])
        if (owner[p] != owner[m])
          ++unitPending[owner[m]];
  // Candidates: ops other than waits and unit members with every pred
  // available, and transfers whose unit is.
  for (unsigned i = 0; i < n; ++i) {
    if (owner[i] >= 0) {
      if (owner[i] == int64_t(i) && unitPending[i] == 0)
        becomeReady(i);
      continue;
    }
    if (pending[i] == 0) {
      if (g.kind[i] == Kind::Wait)
        available(i); // a wait of nothing in this block: a no-op
      else
        becomeReady(i);
    }
  }
}

void ReadyList::available(unsigned j) {
  if (g.kind[j] == Kind::Wait && !emitted[j])
    inFlight.insert(j);
  for (unsigned s : g.succs[j]) {
    if (owner[s] >= 0) {
      if (owner[s] != owner[j] && --unitPending[owner[s]] == 0)
        becomeReady(owner[s]);
      continue;
    }
    if (--pending[s] == 0) {
      if (g.kind[s] == Kind::Wait)
        available(s);
      else
        becomeReady(s);
    }
  }
}

void ReadyList::becomeReady(unsigned c) {
  Candidate &cand = candidates[c];
  if (cand.ready)
    return;
  cand.ready = true;
  ++readyCount;
  for (unsigned m : members[c])
    for (unsigned p : g.preds[m])
      if (g.kind[p] == Kind::Wait && !emitted[p] && !llvm::is_contained(cand.waits, p))
        cand.waits.push_back(p);
  llvm::sort(cand.waits);
  for (unsigned w : cand.waits) {
    needers[w].push_back(c);
    cand.end = std::max(cand.end, waitEnd(w));
  }
  list(c);
}

void ReadyList::unlist(unsigned c) {
  startable.erase({(g.crossProgram[c] ? 0 : n) + rank[c], c});
  unstalled.erase({rank[c], c});
  stalled.erase({candidates[c].end, rank[c], c});
}

void ReadyList::list(unsigned c) {
  const Candidate &cand = candidates[c];
  if (cand.waits.empty() && g.kind[c] == Kind::Start)
    startable.insert({(g.crossProgram[c] ? 0 : n) + rank[c], c});
  if (stallOf(cand) == 0)
    unstalled.insert({rank[c], c});
  else
    stalled.insert({cand.end, rank[c], c});
}

double ReadyList::waitEnd(unsigned w) const {
  double end = 0;
  for (Value token : cast<dist::WaitOp>(g.ops[w]).getTokens())
    if (Operation *start = inBlock(block, token.getDefiningOp()))
      end = std::max(end, ends[g.index.lookup(start)]);
  return end;
}

double ReadyList::stallOf(const Candidate &c) const {
  if (!rules.byCost || c.waits.empty())
    return 0;
  double stall = std::max(0.0, c.end - now);
  return stall > 1e-12 ? stall : 0.0;
}

// Whether `c` (a unit: its members together) fits the budget placed now,
// the waits it needs taken first.
bool ReadyList::fits(unsigned c) {
  if (rules.memoryBudget < 0)
    return true;
  int64_t live = memory.live(), peak = live;
  for (unsigned w : candidates[c].waits)
    live -= memory.freedBy(g.ops[w]);
  for (unsigned m : members[c]) {
    int64_t during = memory.during(g.ops[m]) - memory.live() + live;
    peak = std::max(peak, during);
    live = during - rules.callBytes(g.ops[m], true) - memory.freedBy(g.ops[m]);
  }
  return peak <= rules.memoryBudget;
}

// The candidate that stalls least (that fits the budget too, with
// `mustFit`), preferred among those stalling alike; none if nothing
// qualifies.
std::optional<unsigned> ReadyList::leastStalled(bool mustFit) {
  for (auto [r, c] : unstalled)
    if (!mustFit || fits(c))
      return c;
  // Ordered by their transfers' ends, the stalls ascend: the least among
  // those that qualify, the preferred one among those stalling as much.
  std::optional<unsigned> best;
  double bestStall = 0;
  for (auto [end, r, c] : stalled) {
    double stall = stallOf(candidates[c]);
    if (best && stall != bestStall)
      break;
    if (mustFit && !fits(c))
      continue;
    if (!best || rank[c] < rank[*best]) {
      best = c;
      bestStall = stall;
    }
  }
  return best;
}

// Over the budget, the wait of a transfer in flight that frees the most
// bytes (a reduction's operand, its gradient), taken early: its
// transfer's end may stall the clock, but the schedule stays within the
// memory the program had.
std::optional<unsigned> ReadyList::freeingWait() {
  std::optional<unsigned> best;
  int64_t most = 0;
  for (unsigned w : inFlight)
    if (int64_t freed = memory.freedBy(g.ops[w]); freed > most) {
      most = freed;
      best = w;
    }
  return best;
}

void ReadyList::emit(unsigned i) {
  emitted[i] = true;
  order.push_back(g.ops[i]);
  memory.place(g.ops[i]);
  if (g.kind[i] != Kind::Wait)
    return;
  inFlight.erase(i);
  // The candidates that needed this wait need it no more.
  for (unsigned c : needers[i]) {
    Candidate &cand = candidates[c];
    if (!cand.ready || !llvm::is_contained(cand.waits, i))
      continue;
    unlist(c);
    llvm::erase(cand.waits, i);
    cand.end = 0;
    for (unsigned w : cand.waits)
      cand.end = std::max(cand.end, waitEnd(w));
    list(c);
  }
  needers[i].clear();
}

// Places `i`: the waits it needs first (the clock then stands at their
// transfers' ends), then `i`: a transfer on its group's link, compute on
// the clock.
void ReadyList::place(unsigned i) {
  if (candidates[i].ready) {
    unlist(i);
    candidates[i].ready = false;
    --readyCount;
  }
  SmallVector<unsigned> waits;
  for (unsigned p : g.preds[i])
    if (g.kind[p] == Kind::Wait && !emitted[p] && !llvm::is_contained(waits, p))
      waits.push_back(p);
  llvm::sort(waits);
  for (unsigned w : waits) {
    now = std::max(now, waitEnd(w));
    emit(w);
  }
  emit(i);
  if (g.kind[i] == Kind::Start) {
    Operation *op = g.ops[i];
    double end = now;
    if (timing)
      if (auto t = timing->transfer(op)) {
        double &free = linkFree[t->first.second];
        double begins = std::max(now, free);
        free = begins + t->second;
        // A send's wait returns at once (the runtime's): the link is busy.
        end = isa<dist::SendOp>(op) ? now : free;
      }
    ends[i] = end;
  } else {
    now += g.cost[i];
  }
  available(i);
}

ListScheduleResult ReadyList::run() {
  initialize();
  ListScheduleResult result;
  while (readyCount > 0) {
    // A transfer that needs no wait starts now: its link is busy early. A
    // pipeline's transfers first: another stage waits for them, which this
    // block's timing does not see.
    std::optional<unsigned> best;
    for (auto [key, c] : startable)
      if (fits(c)) {
        best = c;
        break;
      }
    if (!best) {
      // The stalled ops whose transfers the clock has passed stall no more.
      while (!stalled.empty() && stallOf(candidates[std::get<2>(*stalled.begin())]) == 0) {
        unsigned c = std::get<2>(*stalled.begin());
        stalled.erase(stalled.begin());
        unstalled.insert({rank[c], c});
      }
      // Else the op that stalls least, then the preferred one. Nothing
      // fits the budget: free memory first, while a wait can.
      best = leastStalled(/*mustFit=*/true);
      if (!best) {
        if (std::optional<unsigned> w = freeingWait()) {
          now = std::max(now, waitEnd(*w));
          emit(*w);
          continue;
        }
        best = leastStalled(/*mustFit=*/false);
      }
    }
    SmallVector<unsigned, 1> unit = members[*best];
    for (unsigned m : unit)
      place(m);
  }
  // Every edge goes forward in the block's order, so every op is placed;
  // were one not, the block keeps its order.
  result.seconds = now;
  if (order.size() != n) {
    result.peak = LiveBytes::programOrderPeak(
        block, [&](Operation *op) { return rules.callBytes(op, true); });
    return result;
  }
  for (Operation *op : order)
    op->moveBefore(&block, block.end());
  result.peak = memory.peak();
  return result;
}

} // namespace

ListScheduleResult listSchedule(Block &block, const mlir::braid::StepTiming *timing,
                                const ListScheduleRules &rules) {
  return ReadyList(block, timing, rules).run();
}

} // namespace mlir::dist
