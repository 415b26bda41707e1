//===- EmitPieces.cpp - calls of the per-rank pieces of partitioned ops ---===//
//
// One op of those --convert-braid-to-dist expands a partitioned op into
// (attention by key blocks, Mamba over a sequence chunk, vocabulary shards,
// a ZeRO parameter range), one braid_k_* or runtime call, bracketed for
// the trace. Pieces whose kernels accumulate in place get their
// accumulators copied to the results first; a rank's offsets are the index
// expressions of EmitDist.cpp.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "dialects/braid/Analysis/OpCost.h"
#include "dialects/braid/IR/BraidOps.h"

#include "llvm/ADT/TypeSwitch.h"

namespace braid::cpp {

bool isPieceOp(Operation *op) {
  return isa<SequencePositionsOp, AttentionBlockOp, AttentionMergeOp,
             AttentionDeltaOp, AttentionBlockGradOp, TailOp, Conv1dHaloOp,
             Conv1dHaloGradOp, AddTailOp, ScanChunkStateOp, ScanChunkOp,
             ScanChunkGradOp, ScanChunkStateGradOp, ScanCarryOp,
             ScanCarryGradOp, EmbeddingShardOp, EmbeddingGradShardOp,
             CrossEntropyRowMaxOp, CrossEntropyStatsOp,
             CrossEntropyFromStatsOp, CrossEntropyGradShardOp,
             GetParamRangeOp, SetParamOp>(op);
}

LogicalResult FunctionEmitter::emitPieceCall(Operation *op, raw_ostream &os) {
  std::string call;
  auto p = [&](Value v) { return v ? ptr(v) : std::string("nullptr"); };
  auto n = [](int64_t v) { return std::to_string(v); };
  // The arena pointer of a parameter named by a symbol.
  auto symbol = [&](StringRef name) {
    return "at(arena, " + std::to_string(*program.plan.offsetOf(name)) + ")";
  };
  auto f32 = [&](Value v) { return "static_cast<float *>(" + p(v) + ")"; };
  auto i64 = [&](Value v) { return "static_cast<int64_t *>(" + p(v) + ")"; };
  auto copy = [&](Value to, Value from) {
    return "braid_rt_copy(rt, " + p(to) + ", " + p(from) + ", " +
           n(getTensorBytes(from.getType())) + ")";
  };
  // ", B, S, C, K" of a convolution of the chunk `x` [B, S, C] by `w` [C, K].
  auto convDims = [&](Value x, Value w) {
    auto xs = shapeOf(x);
    return ", " + n(xs[0]) + ", " + n(xs[1]) + ", " + n(xs[2]) + ", " +
           n(shapeOf(w)[1]);
  };
  // "dt, x, delta, A, B, C, D" and ", B, S, Di, N, softplus" of a scan op.
  auto scanArgs = [&](Operation *s) {
    std::string args = dtypeName(s->getOperand(0).getType());
    for (Value v : s->getOperands().take_front(6))
      args += ", " + p(v);
    return args;
  };
  auto scanDims = [&](Operation *s) {
    auto x = shapeOf(s->getOperand(0));
    return ", " + n(x[0]) + ", " + n(x[1]) + ", " + n(x[2]) + ", " +
           n(shapeOf(s->getOperand(2))[1]) + ", " +
           (s->hasAttr("delta_softplus") ? "1" : "0");
  };
  // The cotangents of x, delta, A, B, C and D: the op's first six results.
  auto scanGrads = [&](Operation *s) {
    std::string grads;
    for (Value v : s->getResults().take_front(6))
      grads += (grads.empty() ? "" : ", ") + p(v);
    return grads;
  };
  // "rows, vocab" of a cross-entropy piece's logits [..., vocab].
  auto ceRows = [&](Value logits) {
    int64_t vocab = shapeOf(logits).back();
    return n(numElements(logits) / vocab) + ", " + n(vocab);
  };
  // The shape, mask, scale and RoPE of a block op.
  auto blockDims = [&](auto a) {
    auto q = shapeOf(a.getQuery()), k = shapeOf(a.getKey()),
         v = shapeOf(a.getValue());
    double theta = 0.0;
    if (FloatAttr attr = a.getRopeThetaAttr())
      theta = attr.getValueAsDouble();
    return ", " + n(q[0]) + ", " + n(q[1]) + ", " + n(k[1]) + ", " + n(q[2]) +
           ", " + n(k[2]) + ", " + n(q[3]) + ", " + n(v[3]) + ", " +
           (a.getCausal() ? "1" : "0") + ", " +
           literal(a.getScale().convertToDouble()) + ", " + literal(theta);
  };
  LogicalResult result =
      TypeSwitch<Operation *, LogicalResult>(op)
          // Attention by key blocks (ContextAttention.cpp of BraidToDist).
          .Case([&](SequencePositionsOp sp) -> LogicalResult {
            FailureOr<std::string> start = indexExpr(sp.getStart());
            if (failed(start))
              return failure();
            call = "braid_k_sequence_positions(rt, " + i64(sp.getResult()) +
                   ", " + n(numElements(sp.getResult())) + ", " + *start +
                   ", " + n(sp.getLength()) + ", " + n(sp.getZigzag()) + ")";
            return success();
          })
          .Case([&](AttentionBlockOp a) {
            call = "braid_k_attention_block(rt, " +
                   dtypeName(a.getQuery().getType()) + ", " + p(a.getQuery()) +
                   ", " + p(a.getKey()) + ", " + p(a.getValue()) + ", " +
                   i64(a.getQueryPositions()) + ", " + i64(a.getKeyPositions()) +
                   ", " + f32(a.getOut()) + ", " + f32(a.getLse()) +
                   blockDims(a) + ")";
            return success();
          })
          .Case([&](AttentionMergeOp m) {
            // The kernel merges in place: the running result is copied to
            // the merged one first.
            call = copy(m.getMergedOut(), m.getOut()) + ";\n  " +
                   copy(m.getMergedLse(), m.getLse()) +
                   ";\n  braid_k_attention_merge(rt, " + f32(m.getMergedOut()) +
                   ", " + f32(m.getMergedLse()) + ", " + f32(m.getBlockOut()) +
                   ", " + f32(m.getBlockLse()) + ", " +
                   n(numElements(m.getLse())) + ", " +
                   n(shapeOf(m.getOut()).back()) + ")";
            return success();
          })
          .Case([&](AttentionDeltaOp d) {
            call = "braid_k_attention_delta(rt, " +
                   dtypeName(d.getGrad().getType()) + ", " + p(d.getGrad()) +
                   ", " + f32(d.getOut()) + ", " + f32(d.getDelta()) + ", " +
                   n(numElements(d.getDelta())) + ", " +
                   n(shapeOf(d.getOut()).back()) + ")";
            return success();
          })
          .Case([&](AttentionBlockGradOp g) {
            // The kernel adds to its accumulators: they are copied to the
            // results first.
            call = copy(g.getDquery(), g.getDqueryIn()) + ";\n  " +
                   copy(g.getDkey(), g.getDkeyIn()) + ";\n  " +
                   copy(g.getDvalue(), g.getDvalueIn()) +
                   ";\n  braid_k_attention_block_grad(rt, " +
                   dtypeName(g.getQuery().getType()) + ", " + p(g.getQuery()) +
                   ", " + p(g.getKey()) + ", " + p(g.getValue()) + ", " +
                   p(g.getGrad()) + ", " + i64(g.getQueryPositions()) + ", " +
                   i64(g.getKeyPositions()) + ", " + f32(g.getLse()) + ", " +
                   f32(g.getDelta()) + ", " + f32(g.getDquery()) + ", " +
                   f32(g.getDkey()) + ", " + f32(g.getDvalue()) + blockDims(g) +
                   ")";
            return success();
          })
          // Mamba over a chunk of the sequence (SequenceChunks.cpp of
          // BraidToDist).
          .Case([&](TailOp t) {
            auto x = shapeOf(t.getInput());
            int64_t rows = shapeOf(t.getResult())[1];
            call = "braid_k_slice(rt, " + dtypeName(t.getType()) + ", " +
                   p(t.getInput()) + ", " + p(t.getResult()) + ", " + n(x[0]) +
                   ", " + n(x[1]) + ", " + n(rows) + ", " + n(x[2]) + ", " +
                   n(x[1] - rows) + ")";
            return success();
          })
          .Case([&](Conv1dHaloOp c) {
            call = "braid_k_conv1d_halo(rt, " + dtypeName(c.getType()) + ", " +
                   p(c.getInput()) + ", " + p(c.getHalo()) + ", " +
                   p(c.getWeight()) + ", " + p(c.getBias()) + ", " +
                   p(c.getResult()) + convDims(c.getInput(), c.getWeight()) +
                   ")";
            return success();
          })
          .Case([&](Conv1dHaloGradOp c) {
            call = "braid_k_conv1d_halo_grad(rt, " +
                   dtypeName(c.getInput().getType()) + ", " + p(c.getInput()) +
                   ", " + p(c.getHalo()) + ", " + p(c.getWeight()) + ", " +
                   p(c.getGrad()) + ", " + p(c.getDinput()) + ", " +
                   p(c.getDweight()) + ", " + p(c.getDbias()) + ", " +
                   p(c.getDhalo()) + convDims(c.getInput(), c.getWeight()) + ")";
            return success();
          })
          .Case([&](AddTailOp a) {
            // The kernel adds in place: the chunk is copied to the result
            // first.
            auto x = shapeOf(a.getInput());
            call = copy(a.getResult(), a.getInput()) +
                   ";\n  braid_k_conv1d_halo_accumulate(rt, " +
                   dtypeName(a.getType()) + ", " + p(a.getResult()) + ", " +
                   p(a.getTail()) + ", " + n(x[0]) + ", " + n(x[1]) + ", " +
                   n(x[2]) + ", " + n(shapeOf(a.getTail())[1] + 1) + ")";
            return success();
          })
          .Case([&](ScanChunkStateOp s) {
            call = "braid_k_selective_scan_chunk(rt, " + scanArgs(s) +
                   ", nullptr, nullptr, " + f32(s.getHend()) + ", " +
                   f32(s.getDecay()) + scanDims(s) + ")";
            return success();
          })
          .Case([&](ScanChunkOp s) {
            call = "braid_k_selective_scan_chunk(rt, " + scanArgs(s) + ", " +
                   f32(s.getH0()) + ", " + p(s.getResult()) +
                   ", nullptr, nullptr" + scanDims(s) + ")";
            return success();
          })
          .Case([&](ScanChunkGradOp s) {
            call = "braid_k_selective_scan_chunk_grad(rt, " + scanArgs(s) +
                   ", " + f32(s.getH0()) + ", " + p(s.getGrad()) +
                   ", nullptr, nullptr, " + scanGrads(s) + ", " +
                   f32(s.getDh0()) + scanDims(s) + ", 0)";
            return success();
          })
          .Case([&](ScanChunkStateGradOp s) {
            // The kernel adds to the accumulators: they are copied to the
            // results first.
            for (auto [to, from] :
                 llvm::zip_equal(s->getResults(), s->getOperands().slice(8, 6)))
              call += copy(to, from) + ";\n  ";
            call += "braid_k_selective_scan_chunk_grad(rt, " + scanArgs(s) +
                    ", nullptr, nullptr, " + f32(s.getDhend()) + ", " +
                    f32(s.getDdecay()) + ", " + scanGrads(s) + ", nullptr" +
                    scanDims(s) + ", 1)";
            return success();
          })
          .Case([&](ScanCarryOp c) -> LogicalResult {
            FailureOr<std::string> chunk = indexExpr(c.getChunk());
            if (failed(chunk))
              return failure();
            int64_t count = numElements(c.getResult());
            call = "braid_k_scan_carry(rt, " + f32(c.getDecayAll()) + ", " +
                   f32(c.getHendAll()) + ", " + f32(c.getResult()) + ", " +
                   n(numElements(c.getDecayAll()) / count) + ", " + *chunk +
                   ", " + n(count) + ")";
            return success();
          })
          .Case([&](ScanCarryGradOp c) -> LogicalResult {
            FailureOr<std::string> chunk = indexExpr(c.getChunk());
            if (failed(chunk))
              return failure();
            int64_t count = numElements(c.getDdecay());
            call = "braid_k_scan_carry_grad(rt, " + f32(c.getDecayAll()) + ", " +
                   f32(c.getHendAll()) + ", " + f32(c.getDh0All()) + ", " +
                   f32(c.getDdecay()) + ", " + f32(c.getDhend()) + ", " +
                   n(numElements(c.getDecayAll()) / count) + ", " + *chunk +
                   ", " + n(count) + ")";
            return success();
          })
          // Vocabulary-parallel embedding and cross-entropy (VocabParallel.cpp
          // of BraidToDist).
          .Case([&](EmbeddingShardOp e) -> LogicalResult {
            FailureOr<std::string> offset = indexExpr(e.getOffset());
            if (failed(offset))
              return failure();
            auto table = shapeOf(e.getTable());
            call = "braid_k_embedding_shard(rt, " + dtypeName(e.getType()) +
                   ", " + dtypeName(e.getTokens().getType()) + ", " +
                   p(e.getTokens()) + ", " + p(e.getTable()) + ", " +
                   p(e.getResult()) + ", " + n(numElements(e.getTokens())) +
                   ", " + n(table[0]) + ", " + n(table[1]) + ", " + *offset +
                   ")";
            return success();
          })
          .Case([&](EmbeddingGradShardOp e) -> LogicalResult {
            FailureOr<std::string> offset = indexExpr(e.getOffset());
            if (failed(offset))
              return failure();
            auto table = shapeOf(e.getResult());
            call = "braid_k_embedding_grad_shard(rt, " +
                   dtypeName(e.getType()) + ", " +
                   dtypeName(e.getTokens().getType()) + ", " +
                   p(e.getTokens()) + ", " + p(e.getGrad()) + ", " +
                   p(e.getResult()) + ", " + n(numElements(e.getTokens())) +
                   ", " + n(table[0]) + ", " + n(table[1]) + ", " + *offset +
                   ")";
            return success();
          })
          .Case([&](CrossEntropyRowMaxOp c) -> LogicalResult {
            FailureOr<std::string> offset = indexExpr(c.getOffset());
            if (failed(offset))
              return failure();
            call = "braid_k_ce_shard_max(rt, " +
                   dtypeName(c.getLogits().getType()) + ", " +
                   p(c.getLogits()) + ", " + f32(c.getResult()) + ", " +
                   ceRows(c.getLogits()) + ", " + *offset + ", " +
                   n(c.getValid()) + ")";
            return success();
          })
          .Case([&](CrossEntropyStatsOp c) -> LogicalResult {
            FailureOr<std::string> offset = indexExpr(c.getOffset());
            if (failed(offset))
              return failure();
            call = "braid_k_ce_shard_stats(rt, " +
                   dtypeName(c.getLogits().getType()) + ", " +
                   dtypeName(c.getLabels().getType()) + ", " +
                   p(c.getLogits()) + ", " + p(c.getLabels()) + ", " +
                   f32(c.getRowMax()) + ", " + f32(c.getResult()) + ", " +
                   ceRows(c.getLogits()) + ", " + *offset + ", " +
                   n(c.getValid()) + ")";
            return success();
          })
          .Case([&](CrossEntropyFromStatsOp c) {
            call = "braid_k_ce_shard_loss(rt, " + f32(c.getRowMax()) + ", " +
                   f32(c.getStats()) + ", " + f32(c.getResult()) + ", " +
                   n(numElements(c.getRowMax())) + ", " +
                   n(c.getDenominator()) + ")";
            return success();
          })
          .Case([&](CrossEntropyGradShardOp c) -> LogicalResult {
            FailureOr<std::string> offset = indexExpr(c.getOffset());
            if (failed(offset))
              return failure();
            call = "braid_k_ce_shard_grad(rt, " +
                   dtypeName(c.getLogits().getType()) + ", " +
                   dtypeName(c.getLabels().getType()) + ", " +
                   p(c.getLogits()) + ", " + p(c.getLabels()) + ", " +
                   f32(c.getRowMax()) + ", " + f32(c.getStats()) + ", " +
                   f32(c.getGrad()) + ", " + p(c.getResult()) + ", " +
                   ceRows(c.getLogits()) + ", " + *offset + ", " +
                   n(c.getValid()) + ", " + n(c.getDenominator()) + ")";
            return success();
          })
          .Case([&](GetParamRangeOp g) -> LogicalResult {
            FailureOr<std::string> at = indexExpr(g.getOffset());
            if (failed(at))
              return failure();
            // A view of the parameter (the memory plan's, when nothing
            // writes it while the range is read): nothing to copy.
            std::string range = "advance(" + symbol(g.getParam()) + ", " + *at +
                                " * " + n(getElementBytes(g.getType().getElementType())) +
                                ")";
            if (fp.storage.lookup(g.getResult()).kind != Storage::Kind::ParamRange)
              call = "braid_rt_copy(rt, " + p(g.getResult()) + ", " + range + ", " +
                     n(getTensorBytes(g.getType())) + ")";
            return success();
          })
          .Case([&](SetParamOp s) {
            // The memory plan stores the value in the parameter when it can
            // (an all-gather then writes it in place): nothing to copy.
            std::string param = symbol(s.getParam());
            if (p(s.getValue()) != param)
              call = "braid_rt_copy(rt, " + param + ", " + p(s.getValue()) +
                     ", " + n(getTensorBytes(s.getValue().getType())) + ")";
            return success();
          })
          .Default([&](Operation *other) {
            return other->emitError("not a per-rank piece the emitter knows: '")
                   << other->getName() << "'";
          });
  if (failed(result))
    return failure();
  if (!call.empty()) // an op whose value is in place already: no call
    emitBracketed(op, call, os);
  return success();
}

} // namespace braid::cpp
