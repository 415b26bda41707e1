//===- EmitBlockAttention.cpp - attention by key blocks (ring, zigzag) ----===//
//
// Attention whose rows carry explicit global positions, run as the
// braid_k_attention_block* kernels: ring attention (`ring_axes`) and any
// attention over a sequence held in zigzag order (`sequence_zigzag`).
//
// Ring, forward, on rank c of n: the rank's key/value chunk starts as the
// current block; at step s it holds chunk (c - s) mod n. Before computing
// with the current block it posts the receive of the next one (from c - 1)
// and sends the current one on (to c + 1), so the transfer of step s + 1's
// block overlaps step s's compute; blocks alternate between two scratch
// slots. Each block's f32 output and log-sum-exp are merged into the
// running ones by the online-softmax rule. With contiguous chunks a causal
// block from a later rank (c - s mod n > c) is all masked and skipped; in
// zigzag order every block has visible pairs and the kernel skips the
// masked half by position.
//
// Ring, backward: the forward's merged output and log-sum-exp are
// recomputed around the ring (the op saves nothing, like the single-rank
// kernel), delta = rowsum(dout * out); then the key/value chunks travel
// again, each with the f32 accumulators of its cotangents: rank c adds its
// queries' share to the block it holds and sends block and accumulators
// on. After n steps rank c holds chunk c + 1's accumulators, which one more
// transfer takes home. The next block's receive is posted before the
// compute; the accumulators are sent after it.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "braid/Target/Cpp.h"
#include "dialects/braid/IR/BraidOps.h"

namespace braid::cpp {

LogicalResult FunctionEmitter::emitBlockAttention(Operation *op,
                                                  raw_ostream &os) {
  auto n = [](int64_t v) { return std::to_string(v); };
  bool grad = isa<AttentionGradOp>(op);
  auto attr = [&](StringRef name) { return op->getAttr(name); };
  auto ring = dyn_cast_or_null<ArrayAttr>(attr("ring_axes"));
  auto offsetAxes = dyn_cast_or_null<ArrayAttr>(attr("query_offset_axes"));
  int64_t zigzag = 0;
  if (auto z = dyn_cast_or_null<IntegerAttr>(attr("sequence_zigzag")))
    zigzag = z.getInt();
  bool causal = op->hasAttr("causal");
  double scale = grad ? cast<AttentionGradOp>(op).getScaleOrDefault()
                      : cast<AttentionOp>(op).getScaleOrDefault();
  double theta = 0.0;
  if (auto t = dyn_cast_or_null<FloatAttr>(attr("rope_theta")))
    theta = t.getValueAsDouble();

  auto found = fp.scratch.find(op);
  if (found == fp.scratch.end())
    return op->emitError("internal: no scratch planned for attention by "
                         "key blocks");
  BlockAttentionScratch s = getBlockAttentionScratch(op);
  auto at = [&](int64_t offset) {
    return "at(arena, frame + " + n(found->second.offset + offset) + ")";
  };
  auto f32 = [&](int64_t offset) {
    return "reinterpret_cast<float *>(" + at(offset) + ")";
  };
  auto i64 = [&](int64_t offset) {
    return "reinterpret_cast<int64_t *>(" + at(offset) + ")";
  };

  Value q = op->getOperand(0), k = op->getOperand(1), v = op->getOperand(2);
  auto qs = shapeOf(q), ks = shapeOf(k), vs = shapeOf(v);
  int64_t rows = qs[0] * qs[1] * qs[2];
  int64_t kCount = ks[0] * ks[1] * ks[2] * ks[3];
  int64_t vCount = vs[0] * vs[1] * vs[2] * vs[3];
  std::string dt = dtypeName(q.getType());

  // Whose rows the local queries and keys are: this rank's chunk of the
  // stored sequence over `ring` / `query_offset_axes`, else all of it.
  std::optional<GridGroup> group;
  if (ArrayAttr axes = ring ? ring : offsetAxes) {
    FailureOr<GridGroup> g =
        getGridGroup(op, axes, [&] { return op->emitError(); });
    if (failed(g))
      return failure();
    group = *g;
  }
  int64_t ranks = group ? group->size() : 1;
  std::string c = group ? coordinate(*group) : std::string("0");
  int64_t qGlobal = group ? qs[1] * ranks : qs[1];
  int64_t kGlobal = ring ? ks[1] * ranks : ks[1];
  if (zigzag && (qGlobal % (2 * zigzag) || kGlobal % (2 * zigzag)))
    return op->emitError("a sequence of ")
           << qGlobal << " positions in zigzag order over " << zigzag
           << " ranks needs a multiple of " << 2 * zigzag;

  std::string body;
  auto add = [&](const std::string &statement) {
    body += (body.empty() ? "" : "\n    ") + statement + ";";
  };
  auto positions = [&](int64_t offset, int64_t count, const std::string &start,
                       int64_t global) {
    return "braid_k_sequence_positions(rt, " + i64(offset) + ", " + n(count) +
           ", " + start + ", " + n(global) + ", " + n(zigzag) + ")";
  };
  std::string dims = n(qs[0]) + ", " + n(qs[1]) + ", " + n(ks[1]) + ", " +
                     n(qs[2]) + ", " + n(ks[2]) + ", " + n(qs[3]) + ", " +
                     n(vs[3]) + ", " + (causal ? "1" : "0") + ", " +
                     literal(scale) + ", " + literal(theta);
  auto block = [&](const std::string &key, const std::string &value,
                   const std::string &out, const std::string &lse) {
    return "braid_k_attention_block(rt, " + dt + ", " + ptr(q) + ", " + key +
           ", " + value + ", " + i64(s.qPos) + ", " + i64(s.kPos) + ", " +
           out + ", " + lse + ", " + dims + ")";
  };
  auto blockGrad = [&](const std::string &key, const std::string &value,
                       const std::string &dk, const std::string &dv) {
    return "braid_k_attention_block_grad(rt, " + dt + ", " + ptr(q) + ", " +
           key + ", " + value + ", " + ptr(op->getOperand(3)) + ", " +
           i64(s.qPos) + ", " + i64(s.kPos) + ", " + f32(s.lse) + ", " +
           f32(s.delta) + ", " + f32(s.dq) + ", " + dk + ", " + dv + ", " +
           dims + ")";
  };
  auto convert = [&](const std::string &from, Value to, int64_t count) {
    return "braid_k_convert(rt, BRAID_F32, " + dt + ", " + from + ", " +
           ptr(to) + ", " + n(count) + ")";
  };

  // The backward's start: delta from the (recomputed) output, the f32
  // accumulators zeroed.
  auto gradPrologue = [&] {
    add("braid_k_attention_delta(rt, " + dt + ", " + ptr(op->getOperand(3)) +
        ", " + f32(s.out) + ", " + f32(s.delta) + ", " + n(rows) + ", " +
        n(vs[3]) + ")");
    add("braid_k_zero(rt, BRAID_F32, " + at(s.dq) + ", " + n(rows * qs[3]) + ")");
    add("braid_k_zero(rt, BRAID_F32, " + at(s.dk[0]) + ", " + n(kCount) + ")");
    add("braid_k_zero(rt, BRAID_F32, " + at(s.dv[0]) + ", " + n(vCount) + ")");
  };
  auto finish = [&] {
    emitBracketed(op, "{\n    " + body + "\n  }", os);
    return success();
  };

  if (!ring) {
    add(positions(s.qPos, qs[1],
                  group ? c + " * " + n(qs[1]) : std::string("0"), qGlobal));
    // One block: every key (gathered, or the whole sequence after Ulysses'
    // all-to-all) at its stored positions.
    add(positions(s.kPos, ks[1], "0", kGlobal));
    add(block(ptr(k), ptr(v), f32(s.out), f32(s.lse)));
    if (!grad) {
      add(convert(f32(s.out), op->getResult(0), rows * vs[3]));
    } else {
      gradPrologue();
      add(blockGrad(ptr(k), ptr(v), f32(s.dk[0]), f32(s.dv[0])));
      add(convert(f32(s.dq), op->getResult(0), rows * qs[3]));
      add(convert(f32(s.dk[0]), op->getResult(1), kCount));
      add(convert(f32(s.dv[0]), op->getResult(2), vCount));
    }
    return finish();
  }

  // The ring. Slot expressions are chosen at run time by the step's parity.
  std::string cm = "braid_rt_comm(rt, " + quoted(group->spec()) + ")";
  std::string prev = "(c + " + n(ranks - 1) + ") % " + n(ranks);
  std::string next = "(c + 1) % " + n(ranks);
  auto slot = [&](const int64_t (&offsets)[2], const std::string &parity,
                  bool f32Slot) {
    std::string type = f32Slot ? "float *" : "void *";
    return "(" + parity + " ? static_cast<" + type + ">(" +
           (f32Slot ? f32(offsets[1]) : at(offsets[1])) + ") : static_cast<" +
           type + ">(" + (f32Slot ? f32(offsets[0]) : at(offsets[0])) + "))";
  };
  // Causal over contiguous chunks: a later rank's chunk is all masked.
  std::string skip = causal && !zigzag ? "src > c" : "false";
  // --braid-test-inject-fault=kind=skip-ring-step: a broken ring for the
  // negative tests of --verify (braid/Target/Cpp.h).
  if (auto broken = op->getAttrOfType<IntegerAttr>(::braid::kTestSkipRingStepAttr))
    skip = "(" + skip + ") || step == " + n(broken.getInt());
  auto loop = [&](bool backward) {
    std::string l;
    l += "{\n      const void *curK = " + ptr(k) + ", *curV = " + ptr(v) + ";\n";
    if (backward)
      l += "      float *curDk = " + f32(s.dk[0]) + ", *curDv = " + f32(s.dv[0]) +
           ";\n";
    l += "      for (int32_t step = 0; step < " + n(ranks) + "; ++step) {\n";
    l += "        const bool more = step + 1 < " + n(ranks) + ";\n";
    l += "        void *nextK = " + slot(s.k, "step % 2", false) +
         ", *nextV = " + slot(s.v, "step % 2", false) + ";\n";
    // Each block moves one step around the ring as one send-receive pair
    // (one NCCL group: every rank sends and receives at once), issued before
    // the block is computed and waited for after.
    // `to` / `from`: the peers' expressions (-1: none).
    auto pair = [&](StringRef event, StringRef send, StringRef into,
                    int64_t count, StringRef type, const std::string &to,
                    const std::string &from) {
      return "        braid_event *" + event.str() + " = braid_sendrecv(rt, " +
             cm + ", " + send.str() + ", " + n(count) + ", " + to + ", " +
             into.str() + ", " + n(count) + ", " + from + ", " + type.str() +
             ");\n";
    };
    // A step of the ring: on to the next rank while blocks remain.
    auto exchange = [&](StringRef event, StringRef send, StringRef into,
                        int64_t count, StringRef type) {
      return pair(event, send, into, count, type, "more ? " + next + " : -1",
                  "more ? " + prev + " : -1");
    };
    l += exchange("ek", "curK", "nextK", kCount, dt);
    l += exchange("ev", "curV", "nextV", vCount, dt);
    if (backward)
      l += "        float *nextDk = " + slot(s.dk, "(step + 1) % 2", true) +
           ", *nextDv = " + slot(s.dv, "(step + 1) % 2", true) + ";\n";
    l += "        const int32_t src = (c + " + n(ranks) + " - step) % " +
         n(ranks) + ";\n";
    l += "        if (!(" + skip + ")) {\n";
    l += "          " + positions(s.kPos, ks[1], "src * " + n(ks[1]), kGlobal) +
         ";\n";
    if (backward) {
      l += "          " + blockGrad("curK", "curV", "curDk", "curDv") + ";\n";
    } else {
      l += "          if (step == 0) {\n            " +
           block("curK", "curV", f32(s.out), f32(s.lse)) +
           ";\n          } else {\n            " +
           block("curK", "curV", f32(s.blockOut), f32(s.blockLse)) +
           ";\n            braid_k_attention_merge(rt, " + f32(s.out) + ", " +
           f32(s.lse) + ", " + f32(s.blockOut) + ", " + f32(s.blockLse) +
           ", " + n(rows) + ", " + n(vs[3]) + ");\n          }\n";
    }
    l += "        }\n";
    if (backward) {
      // The cotangents travel with their block, once this rank added to them.
      l += exchange("edk", "curDk", "nextDk", kCount, "BRAID_F32");
      l += exchange("edv", "curDv", "nextDv", vCount, "BRAID_F32");
      l += "        braid_event_wait(rt, edk);\n        braid_event_wait(rt, edv);\n";
    }
    l += "        braid_event_wait(rt, ek);\n        braid_event_wait(rt, ev);\n";
    l += "        curK = nextK;\n        curV = nextV;\n";
    if (backward)
      l += "        if (more) {\n          curDk = nextDk;\n          curDv = "
           "nextDv;\n        }\n";
    l += "      }\n";
    if (backward) {
      // The accumulators of chunk c + 1 go home; chunk c's arrive.
      l += "      if (" + n(ranks) + " > 1) {\n";
      l += "        float *homeDk = " + slot(s.dk, n(ranks % 2), true) +
           ", *homeDv = " + slot(s.dv, n(ranks % 2), true) + ";\n";
      l += pair("edk", "curDk", "homeDk", kCount, "BRAID_F32", next, prev);
      l += pair("edv", "curDv", "homeDv", vCount, "BRAID_F32", next, prev);
      l += "        braid_event_wait(rt, edk);\n        braid_event_wait(rt, edv);\n";
      l += "        curDk = homeDk;\n        curDv = homeDv;\n      }\n";
      l += "      " + convert("curDk", op->getResult(1), kCount) + ";\n";
      l += "      " + convert("curDv", op->getResult(2), vCount) + ";\n";
    }
    l += "    }";
    return l;
  };

  body += "const int32_t c = " + c + ";\n    (void)c;\n    ";
  add(positions(s.qPos, qs[1], "c * " + n(qs[1]), qGlobal));
  body += "\n    " + loop(false);
  if (!grad) {
    body += "\n    ";
    add(convert(f32(s.out), op->getResult(0), rows * vs[3]));
  } else {
    body += "\n    ";
    gradPrologue();
    body += "\n    " + loop(true);
    body += "\n    ";
    add(convert(f32(s.dq), op->getResult(0), rows * qs[3]));
  }
  return finish();
}

} // namespace braid::cpp
