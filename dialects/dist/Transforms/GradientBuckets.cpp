//===- GradientBuckets.cpp - reductions of one group moved in buckets -----===//
//
// --braid-schedule-overlap (ScheduleOverlap.cpp) buckets reductions once
// their starts sit right after what they reduce: consecutive reductions of
// one group, kind and element type become one transfer of a flat bucket
// (dist.pack, the transfer, a dist.unpack per tensor before the first use of
// any),
// as PyTorch DDP's gradient buckets: a step's hundreds of small gradient
// all-reduces each pay the link's latency, a bucket pays it once and still
// starts while the backward runs. A bucket closes once it holds `bytes`
// (DDP's 25 MiB), the first one of a block at `firstBytes` (DDP's 1 MiB),
// so that the first reduction starts early; a tensor of the cap or more is
// a bucket of its own, left as it is (nothing to gain from a copy).
//
// A reduce-scatter (ZeRO's, of flat gradients) packs each tensor's n blocks
// (contiguous, as dist requires) part by part, so that rank r's part of the
// bucket holds its block of every tensor; all-reduces pack as a
// concatenation.
//
// A reduction joins the open bucket only if it is ready before every member
// is needed (its result's first reader, or the next write of persistent
// storage, where the schedule waits at the latest): the bucket starts after
// its last member's operand and completes before its first member's reader,
// so no member depends on another and nothing waits on a value the bucket
// has not reduced yet. Groups whose ranks run different programs (`ordered`:
// a pipeline's groups over pp) are never bucketed.
//
//===----------------------------------------------------------------------===//

#include "ScheduleOverlap.h"

#include "dialects/braid/Analysis/MemoryPlan.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/dist/IR/DistDialect.h"
#include "dialects/dist/IR/DistUtils.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace mlir::braid;

namespace {

/// A reduction a bucket may take, with the positions it must fit between.
struct Candidate {
  Operation *transfer;
  unsigned ready;  ///< its position (its operands are there)
  unsigned needed; ///< the first position that needs it complete
  int64_t bytes;   ///< what it reduces
};

/// One bucket of a class: consecutive candidates.
struct Bucket {
  SmallVector<Candidate> members;
  int64_t bytes = 0;
  unsigned ready = 0, needed = ~0u;
};

/// The input of `op` when buckets may take it: an all-reduce or a
/// reduce-scatter (whose blocks dist requires contiguous) of a static
/// tensor.
Value bucketableInput(Operation *op) {
  Value input;
  if (auto reduce = dyn_cast<dist::AllReduceOp>(op))
    input = reduce.getInput();
  else if (auto scatter = dyn_cast<dist::ReduceScatterOp>(op))
    input = scatter.getInput();
  if (!input || !cast<RankedTensorType>(input.getType()).hasStaticShape())
    return nullptr;
  return input;
}

/// What buckets are formed within: one transfer kind, group, reduction and
/// element type.
std::string classOf(Operation *op, Value input) {
  std::string key = op->getName().getStringRef().str() + "|" +
                    dist::transferGroupKey(op);
  llvm::raw_string_ostream os(key);
  os << "|" << op->getAttr("reduction") << "|"
     << cast<RankedTensorType>(input.getType()).getElementType();
  return key;
}

/// Replaces the members of `bucket` by one transfer of their pack.
void materialize(const Bucket &bucket) {
  Operation *last = bucket.members.back().transfer;
  for (const Candidate &c : bucket.members)
    if (last->isBeforeInBlock(c.transfer))
      last = c.transfer;
  Operation *first = bucket.members.front().transfer;
  MLIRContext *ctx = first->getContext();
  OpBuilder b(ctx);
  b.setInsertionPointAfter(last);
  SmallVector<Value> inputs;
  SmallVector<Location> locs;
  for (const Candidate &c : bucket.members) {
    inputs.push_back(bucketableInput(c.transfer));
    locs.push_back(c.transfer->getLoc());
  }
  Location loc = FusedLoc::get(ctx, locs);
  auto element = cast<RankedTensorType>(inputs.front().getType()).getElementType();
  int64_t total = 0;
  for (Value input : inputs)
    total += cast<RankedTensorType>(input.getType()).getNumElements();
  // A reduce-scatter's group size: its input's elements over its result's.
  int64_t parts = 1;
  if (auto scatter = dyn_cast<dist::ReduceScatterOp>(first))
    parts = scatter.getInput().getType().getNumElements() /
            scatter.getResult().getType().getNumElements();
  auto flat = RankedTensorType::get({total}, element);
  Value pack = dist::PackOp::create(b, loc, flat, inputs, b.getI64IntegerAttr(parts));
  Operation *transfer = b.clone(*first);
  transfer->setLoc(loc);
  transfer->removeAttr("dist.announce"); // its members' unpacks announce them
  transfer->setOperand(0, pack);
  transfer->getResult(0).setType(RankedTensorType::get({total / parts}, element));
  if (auto scatter = dyn_cast<dist::ReduceScatterOp>(transfer))
    scatter.setScatterAxis(0);
  Value reduced = transfer->getResult(0);
  // Waited for at once; the schedule then moves the wait to the unpacks.
  dist::WaitOp::create(b, loc, ValueRange{dist::getToken(transfer)});
  // Every member's result, unpacked right before the first reader of any:
  // the bucket is then freed at once (unpacked before each reader, the
  // buckets would all be live where the updates start).
  Operation *reader = nullptr;
  for (const Candidate &c : bucket.members)
    for (Operation *user : c.transfer->getResult(0).getUsers()) {
      Operation *at = c.transfer->getBlock()->findAncestorOpInBlock(*user);
      if (!reader || at->isBeforeInBlock(reader))
        reader = at;
    }
  int64_t offset = 0;
  for (const Candidate &c : bucket.members) {
    Operation *old = c.transfer;
    Value result = old->getResult(0);
    auto type = cast<RankedTensorType>(result.getType());
    if (!result.use_empty()) {
      b.setInsertionPoint(reader);
      auto unpack = dist::UnpackOp::create(b, old->getLoc(), type, reduced,
                                           b.getI64IntegerAttr(offset), b.getI64IntegerAttr(1));
      if (old->hasAttr("dist.announce"))
        unpack->setAttr("dist.announce", b.getUnitAttr());
      result.replaceAllUsesWith(unpack.getResult());
    }
    offset += type.getNumElements();
    // The member's wait no longer waits for it.
    Value token = dist::getToken(old);
    if (dist::WaitOp oldWait = dist::getWait(token)) {
      SmallVector<Value> rest;
      for (Value t : oldWait.getTokens())
        if (t != token)
          rest.push_back(t);
      if (rest.empty())
        oldWait->erase();
      else
        oldWait->setOperands(rest);
    }
    old->erase();
  }
}

} // namespace

namespace mlir::dist {

int64_t bucketReductions(Block &block, BucketSizes sizes,
                         llvm::function_ref<bool(Operation *)> ordered,
                         llvm::function_ref<bool(Operation *)> isBarrier) {
  if (sizes.bytes <= 0)
    return 0;
  SmallVector<Operation *> ops;
  llvm::DenseMap<Operation *, unsigned> position;
  for (Operation &op : block) {
    position[&op] = ops.size();
    ops.push_back(&op);
  }
  // The next write of persistent storage after each position.
  SmallVector<unsigned> nextBarrier(ops.size() + 1, ops.size());
  for (size_t i = ops.size(); i-- > 0;)
    nextBarrier[i] = isBarrier(ops[i]) ? i : nextBarrier[i + 1];

  llvm::MapVector<StringRef, SmallVector<Bucket>> classes;
  llvm::StringMap<std::string> keys; // owns the class names
  for (Operation *op : ops) {
    Value input = bucketableInput(op);
    if (!input || ordered(op))
      continue;
    Candidate c{op, position[op], nextBarrier[position[op] + 1],
                getTensorBytes(input.getType())};
    for (Operation *user : op->getResult(0).getUsers())
      if (Operation *at = block.findAncestorOpInBlock(*user))
        c.needed = std::min(c.needed, position[at]);
    std::string key = classOf(op, input);
    StringRef name = keys.try_emplace(key, key).first->getKey();
    SmallVector<Bucket> &buckets = classes[name];
    // Join the open bucket if it is not full and the candidate is ready
    // before every member is needed (and is needed after they are all ready).
    bool join = !buckets.empty() && !buckets.back().members.empty();
    if (join) {
      Bucket &open = buckets.back();
      int64_t cap = buckets.size() == 1 ? sizes.firstBytes : sizes.bytes;
      join = open.bytes < cap && c.bytes < cap && c.ready < open.needed && open.ready < c.needed;
    }
    if (!join)
      buckets.emplace_back();
    Bucket &bucket = buckets.back();
    bucket.members.push_back(c);
    bucket.bytes += c.bytes;
    bucket.ready = std::max(bucket.ready, c.ready);
    bucket.needed = std::min(bucket.needed, c.needed);
  }
  int64_t largest = 0;
  for (auto &[name, buckets] : classes)
    for (Bucket &bucket : buckets)
      if (bucket.members.size() > 1) {
        largest = std::max(largest, bucket.bytes);
        materialize(bucket);
      }
  return largest;
}

} // namespace mlir::dist
