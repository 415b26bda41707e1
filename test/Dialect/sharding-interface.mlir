// RUN: braid-opt %s -split-input-file -verify-diagnostics --pass-pipeline="builtin.module(func.func(sharding-propagation,cse),builtin.module(func.func(sharding-propagation,shard-partition)))" | FileCheck %s

// The upstream ShardingInterface of braid ops, derived from their factor
// rules: what upstream --sharding-propagation infers on shard-annotated braid
// IR, and what upstream --shard-partition accepts (functions of nested
// modules, the last two cases, are also partitioned).

shard.grid @grid(shape = 2x2)
braid.param @w_up normal(2.000000e-02) : tensor<32x128xf32>
braid.param @w_down normal(2.000000e-02) : tensor<128x32xf32>

// Megatron MLP: the column split of the first weight (and its bias) carries
// through gelu as a split of the hidden dimension; the row split of the
// second weight is then its contraction, and the result is not split.
// CHECK-LABEL: func.func @megatron_mlp
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x8x16xf32>, %[[W1:[^:]*]]: tensor<16x64xf32>, %[[B1:[^:]*]]: tensor<64xf32>, %[[W2:[^:]*]]: tensor<64x16xf32>
func.func @megatron_mlp(%x: tensor<2x8x16xf32>, %w1: tensor<16x64xf32>, %b1: tensor<64xf32>, %w2: tensor<64x16xf32>) -> tensor<2x8x16xf32> {
  // CHECK-DAG: %[[COL:.*]] = shard.sharding @grid split_axes = {{\[\[}}], [1]] : !shard.sharding
  // CHECK-DAG: %[[ROW:.*]] = shard.sharding @grid split_axes = {{\[\[}}1]] : !shard.sharding
  // CHECK-DAG: %[[REP:.*]] = shard.sharding @grid split_axes = {{\[\[}}]] : !shard.sharding
  %col = shard.sharding @grid split_axes = [[], [1]] : !shard.sharding
  %w1s = shard.shard %w1 to %col : tensor<16x64xf32>
  %row = shard.sharding @grid split_axes = [[1]] : !shard.sharding
  %w2s = shard.shard %w2 to %row : tensor<64x16xf32>
  // CHECK-DAG: %[[XR:.*]] = shard.shard %[[X]] to %[[REP]] annotate_for_users
  // CHECK-DAG: %[[B1S:.*]] = shard.shard %[[B1]] to %[[ROW]] annotate_for_users
  // CHECK: %[[H:.*]] = braid.linear %[[XR]], %{{.*}} bias %[[B1S]]
  // CHECK-NEXT: %[[HID:.*]] = shard.sharding @grid split_axes = {{\[\[}}], [], [1]] : !shard.sharding
  // CHECK-NEXT: shard.shard %[[H]] to %[[HID]] :
  %h = braid.linear %x, %w1s bias %b1 : tensor<2x8x16xf32>, tensor<16x64xf32>, tensor<64xf32> -> tensor<2x8x64xf32>
  // CHECK: %[[G:.*]] = braid.gelu
  // CHECK-NEXT: shard.shard %[[G]] to %[[HID]] :
  %g = braid.gelu %h : tensor<2x8x64xf32>
  // CHECK: %[[Y:.*]] = braid.linear
  // CHECK-NEXT: %[[YS:.*]] = shard.shard %[[Y]] to %[[REP]] :
  // CHECK-NEXT: return %[[YS]]
  %y = braid.linear %g, %w2s : tensor<2x8x64xf32>, tensor<64x16xf32> -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// Weights read with braid.get_param propagate like function arguments.
// CHECK-LABEL: func.func @get_param
func.func @get_param(%x: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // CHECK: %[[UP:.*]] = braid.get_param @w_up
  %up = braid.get_param @w_up : tensor<32x128xf32>
  %col = shard.sharding @grid split_axes = [[], [0, 1]] : !shard.sharding
  %ups = shard.shard %up to %col : tensor<32x128xf32>
  %h = braid.linear %x, %ups : tensor<2x8x32xf32>, tensor<32x128xf32> -> tensor<2x8x128xf32>
  // CHECK: %[[DOWN:.*]] = braid.get_param @w_down
  // CHECK: %[[ROW:.*]] = shard.sharding @grid split_axes = {{\[\[}}0, 1]] : !shard.sharding
  // CHECK-NEXT: %[[DOWNS:.*]] = shard.shard %[[DOWN]] to %[[ROW]] annotate_for_users
  // CHECK-NEXT: braid.linear %{{.*}}, %[[DOWNS]]
  %down = braid.get_param @w_down : tensor<128x32xf32>
  %y = braid.linear %h, %down : tensor<2x8x128xf32>, tensor<128x32xf32> -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

// Query heads split: key and value heads follow (grouped-query attention,
// 4 query heads over 2 key/value heads), as does the batch.
// CHECK-LABEL: func.func @attention_heads
// CHECK-SAME: %[[Q:[^:]*]]: tensor<2x16x4x8xf32>, %[[K:[^:]*]]: tensor<2x16x2x8xf32>, %[[V:[^:]*]]: tensor<2x16x2x8xf32>
func.func @attention_heads(%q: tensor<2x16x4x8xf32>, %k: tensor<2x16x2x8xf32>, %v: tensor<2x16x2x8xf32>) -> tensor<2x16x4x8xf32> {
  // CHECK: %[[S:.*]] = shard.sharding @grid split_axes = {{\[\[}}0], [], [1]] : !shard.sharding
  // CHECK: %[[KS:.*]] = shard.shard %[[K]] to %[[S]] annotate_for_users
  // CHECK-NEXT: %[[VS:.*]] = shard.shard %[[V]] to %[[S]] annotate_for_users
  // CHECK-NEXT: %[[O:.*]] = braid.attention %{{.*}}, %[[KS]], %[[VS]] causal
  // CHECK-NEXT: shard.shard %[[O]] to %[[S]] :
  %s = shard.sharding @grid split_axes = [[0], [], [1]] : !shard.sharding
  %qs = shard.shard %q to %s annotate_for_users : tensor<2x16x4x8xf32>
  %o = braid.attention %qs, %k, %v causal : tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32> -> tensor<2x16x4x8xf32>
  return %o : tensor<2x16x4x8xf32>
}

// The sequence is a factor attention needs whole: a split sequence is
// gathered for the op (the heads stay split) and the result is not split
// along it.
// CHECK-LABEL: func.func @attention_sequence
func.func @attention_sequence(%q: tensor<2x16x4x8xf32>, %k: tensor<2x16x2x8xf32>, %v: tensor<2x16x2x8xf32>) -> tensor<2x16x4x8xf32> {
  // CHECK: %[[SEQ:.*]] = shard.sharding @grid split_axes = {{\[\[}}], [0], [1]] : !shard.sharding
  // CHECK-NEXT: %[[QSEQ:.*]] = shard.shard %{{.*}} to %[[SEQ]] :
  // CHECK-NEXT: %[[HEADS:.*]] = shard.sharding @grid split_axes = {{\[\[}}], [], [1]] : !shard.sharding
  // CHECK-NEXT: %[[QS:.*]] = shard.shard %[[QSEQ]] to %[[HEADS]] annotate_for_users
  // CHECK: %[[O:.*]] = braid.attention %[[QS]]
  // CHECK-NEXT: shard.shard %[[O]] to %[[HEADS]] :
  %s = shard.sharding @grid split_axes = [[], [0], [1]] : !shard.sharding
  %qs = shard.shard %q to %s : tensor<2x16x4x8xf32>
  %o = braid.attention %qs, %k, %v causal : tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32> -> tensor<2x16x4x8xf32>
  return %o : tensor<2x16x4x8xf32>
}

// The batch split passes through the norm; gamma stays replicated.
// CHECK-LABEL: func.func @rms_norm_batch
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x16x32xf32>, %[[G:[^:]*]]: tensor<32xf32>
func.func @rms_norm_batch(%x: tensor<4x16x32xf32>, %g: tensor<32xf32>) -> tensor<4x16x32xf32> {
  // CHECK: %[[S:.*]] = shard.sharding @grid split_axes = {{\[\[}}0, 1]] : !shard.sharding
  // CHECK: %[[REP:.*]] = shard.sharding @grid split_axes = {{\[\[}}]] : !shard.sharding
  // CHECK-NEXT: %[[GS:.*]] = shard.shard %[[G]] to %[[REP]] annotate_for_users
  // CHECK-NEXT: %[[Y:.*]] = braid.rms_norm %{{.*}}, %[[GS]]
  // CHECK-NEXT: shard.shard %[[Y]] to %[[S]] :
  %s = shard.sharding @grid split_axes = [[0, 1]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<4x16x32xf32>
  %y = braid.rms_norm %xs, %g : tensor<4x16x32xf32>, tensor<32xf32> -> tensor<4x16x32xf32>
  return %y : tensor<4x16x32xf32>
}

// Reshape: a merged dimension is indexed by its major part. Splitting the
// hidden dimension splits the heads it is reshaped into (forward) ...
// CHECK-LABEL: func.func @reshape_split_heads
func.func @reshape_split_heads(%x: tensor<2x16x64xf32>) -> tensor<2x16x4x16xf32> {
  // CHECK: %[[S:.*]] = shard.sharding @grid split_axes = {{\[\[}}0], [], [1]] : !shard.sharding
  // CHECK: %[[Y:.*]] = braid.reshape
  // CHECK-NEXT: shard.shard %[[Y]] to %[[S]] :
  %s = shard.sharding @grid split_axes = [[0], [], [1]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<2x16x64xf32>
  %y = braid.reshape %xs : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  return %y : tensor<2x16x4x16xf32>
}

// ... and splitting the merged dimension splits the heads (backward).
// CHECK-LABEL: func.func @reshape_merge_heads
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x16x4x16xf32>
func.func @reshape_merge_heads(%x: tensor<2x16x4x16xf32>) -> tensor<2x16x64xf32> {
  // CHECK: %[[S:.*]] = shard.sharding @grid split_axes = {{\[\[}}], [], [1]] : !shard.sharding
  // CHECK-NEXT: %[[XS:.*]] = shard.shard %[[X]] to %[[S]] annotate_for_users
  // CHECK-NEXT: braid.reshape %[[XS]]
  %y = braid.reshape %x : tensor<2x16x4x16xf32> -> tensor<2x16x64xf32>
  %s = shard.sharding @grid split_axes = [[], [], [1]] : !shard.sharding
  %ys = shard.shard %y to %s : tensor<2x16x64xf32>
  return %ys : tensor<2x16x64xf32>
}

// A minor dimension of a merged dimension cannot be split: the reshape
// yields it replicated (then resharded for the annotation) and the input
// gets none of its axes.
// CHECK-LABEL: func.func @reshape_minor_dim
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x16x64xf32>
func.func @reshape_minor_dim(%x: tensor<2x16x64xf32>) -> tensor<2x16x4x16xf32> {
  // CHECK: %[[BATCH:.*]] = shard.sharding @grid split_axes = {{\[\[}}0]] : !shard.sharding
  // CHECK-NEXT: %[[XS:.*]] = shard.shard %[[X]] to %[[BATCH]] annotate_for_users
  // CHECK-NEXT: %[[Y:.*]] = braid.reshape %[[XS]]
  // CHECK-NEXT: %[[YB:.*]] = shard.shard %[[Y]] to %[[BATCH]] :
  // CHECK: %[[MINOR:.*]] = shard.sharding @grid split_axes = {{\[\[}}0], [], [], [1]] : !shard.sharding
  // CHECK-NEXT: shard.shard %{{.*}} to %[[MINOR]] :
  %y = braid.reshape %x : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  %s = shard.sharding @grid split_axes = [[0], [], [], [1]] : !shard.sharding
  %ys = shard.shard %y to %s : tensor<2x16x4x16xf32>
  return %ys : tensor<2x16x4x16xf32>
}

// Cross-entropy: the rows (a reduction into the 0-d loss) are shared with
// the labels; the vocabulary (reduced inside the op) may stay split, so the
// logits need no reshard.
// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME: %[[LOGITS:[^:]*]]: tensor<2x16x97xf32>, %[[LABELS:[^:]*]]: tensor<2x16xi32>
func.func @cross_entropy(%logits: tensor<2x16x97xf32>, %labels: tensor<2x16xi32>) -> tensor<f32> {
  // CHECK: %[[S:.*]] = shard.sharding @grid split_axes = {{\[\[}}0], [], [1]] : !shard.sharding
  // CHECK-NEXT: %[[L0:.*]] = shard.shard %[[LOGITS]] to %[[S]] :
  // CHECK-NEXT: %[[L1:.*]] = shard.shard %[[L0]] to %[[S]] annotate_for_users
  // CHECK-NEXT: %[[ROWS:.*]] = shard.sharding @grid split_axes = {{\[\[}}0]] : !shard.sharding
  // CHECK-NEXT: %[[LABS:.*]] = shard.shard %[[LABELS]] to %[[ROWS]] annotate_for_users
  // CHECK-NEXT: %[[LOSS:.*]] = braid.cross_entropy %[[L1]], %[[LABS]]
  // CHECK-NEXT: %[[SCALAR:.*]] = shard.sharding @grid split_axes = [] : !shard.sharding
  // CHECK-NEXT: shard.shard %[[LOSS]] to %[[SCALAR]] :
  %s = shard.sharding @grid split_axes = [[0], [], [1]] : !shard.sharding
  %ls = shard.shard %logits to %s : tensor<2x16x97xf32>
  %loss = braid.cross_entropy %ls, %labels : tensor<2x16x97xf32>, tensor<2x16xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// Vocabulary-parallel embedding: the table's rows are a reduction, so the
// tokens and the result are not split.
// CHECK-LABEL: func.func @embedding_vocab_parallel
// CHECK-SAME: %[[TOK:[^:]*]]: tensor<2x16xi32>
func.func @embedding_vocab_parallel(%tok: tensor<2x16xi32>, %wte: tensor<98x32xf32>) -> tensor<2x16x32xf32> {
  // CHECK: %[[REP:.*]] = shard.sharding @grid split_axes = {{\[\[}}]] : !shard.sharding
  // CHECK-NEXT: %[[TOKS:.*]] = shard.shard %[[TOK]] to %[[REP]] annotate_for_users
  // CHECK: %[[E:.*]] = braid.embedding %[[TOKS]]
  // CHECK-NEXT: shard.shard %[[E]] to %[[REP]] :
  %s = shard.sharding @grid split_axes = [[1]] : !shard.sharding
  %wtes = shard.shard %wte to %s : tensor<98x32xf32>
  %e = braid.embedding %tok, %wtes : tensor<2x16xi32>, tensor<98x32xf32> -> tensor<2x16x32xf32>
  return %e : tensor<2x16x32xf32>
}

// Mixture of experts: a token split becomes a split of the experts'
// capacity slots through dispatch and comes back through combine.
// CHECK-LABEL: func.func @moe_tokens
func.func @moe_tokens(%x: tensor<32x64xf32>, %wr: tensor<64x8xf32>, %wu: tensor<8x64x128xf32>, %wd: tensor<8x128x64xf32>) -> tensor<32x64xf32> {
  // CHECK: %[[TOKENS:.*]] = shard.sharding @grid split_axes = {{\[\[}}0]] : !shard.sharding
  // CHECK: %[[W:.*]], %[[I:.*]] = braid.router
  // CHECK-DAG: shard.shard %[[W]] to %[[TOKENS]] :
  // CHECK-DAG: shard.shard %[[I]] to %[[TOKENS]] :
  // CHECK: %[[D:.*]] = braid.dispatch
  // CHECK-NEXT: %[[SLOTS:.*]] = shard.sharding @grid split_axes = {{\[\[}}], [0]] : !shard.sharding
  // CHECK-NEXT: shard.shard %[[D]] to %[[SLOTS]] :
  // CHECK: %[[E:.*]] = braid.expert_ffn
  // CHECK-NEXT: shard.shard %[[E]] to %[[SLOTS]] :
  // CHECK: %[[Y:.*]] = braid.combine
  // CHECK-NEXT: shard.shard %[[Y]] to %[[TOKENS]] :
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<32x64xf32>
  %logits = braid.linear %xs, %wr : tensor<32x64xf32>, tensor<64x8xf32> -> tensor<32x8xf32>
  %w, %i = braid.router %logits top_k 2 normalize : tensor<32x8xf32> -> tensor<32x2xf32>, tensor<32x2xi32>
  %d = braid.dispatch %xs, %i : tensor<32x64xf32>, tensor<32x2xi32> -> tensor<8x10x64xf32>
  %e = braid.expert_ffn silu %d, %wu, %wd : tensor<8x10x64xf32>, tensor<8x64x128xf32>, tensor<8x128x64xf32> -> tensor<8x10x64xf32>
  %y = braid.combine %e, %w, %i : tensor<8x10x64xf32>, tensor<32x2xf32>, tensor<32x2xi32> -> tensor<32x64xf32>
  return %y : tensor<32x64xf32>
}

// Every other op with a factor rule passes a batch split through.
// CHECK-LABEL: func.func @batch_through_every_op
func.func @batch_through_every_op(%x: tensor<2x16x64xf32>, %bias: tensor<64xf32>, %w: tensor<64x4xf32>, %dt: tensor<2x16x64xf32>, %A: tensor<64x8xf32>, %B: tensor<2x16x8xf32>, %C: tensor<2x16x8xf32>, %D: tensor<64xf32>) -> tensor<2x64x64xf32> {
  // CHECK: %[[BATCH:.*]] = shard.sharding @grid split_axes = {{\[\[}}0]] : !shard.sharding
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<2x16x64xf32>
  // CHECK: braid.silu
  // CHECK-NEXT: shard.shard %{{.*}} to %[[BATCH]] :
  %0 = braid.silu %xs : tensor<2x16x64xf32>
  // CHECK: braid.sigmoid
  // CHECK-NEXT: shard.shard %{{.*}} to %[[BATCH]] :
  %1 = braid.sigmoid %0 : tensor<2x16x64xf32>
  // CHECK: braid.relu
  // CHECK-NEXT: shard.shard %{{.*}} to %[[BATCH]] :
  %2 = braid.relu %1 : tensor<2x16x64xf32>
  // CHECK: braid.exp
  // CHECK-NEXT: shard.shard %{{.*}} to %[[BATCH]] :
  %3 = braid.exp %2 : tensor<2x16x64xf32>
  // CHECK: braid.neg
  // CHECK-NEXT: shard.shard %{{.*}} to %[[BATCH]] :
  %4 = braid.neg %3 : tensor<2x16x64xf32>
  // CHECK: braid.mul
  // CHECK-NEXT: shard.shard %{{.*}} to %[[BATCH]] :
  %5 = braid.mul %4, %xs : tensor<2x16x64xf32>
  // CHECK: braid.glu
  // CHECK-NEXT: shard.shard %{{.*}} to %[[BATCH]] :
  %6 = braid.glu silu %5, %xs : tensor<2x16x64xf32>
  // CHECK: braid.convert
  // CHECK-NEXT: shard.shard %{{.*}} to %[[BATCH]] :
  %7 = braid.convert %6 : tensor<2x16x64xf32> -> tensor<2x16x64xbf16>
  // CHECK: braid.convert
  // CHECK-NEXT: shard.shard %{{.*}} to %[[BATCH]] :
  %8 = braid.convert %7 : tensor<2x16x64xbf16> -> tensor<2x16x64xf32>
  // CHECK: braid.bias_add
  // CHECK-NEXT: shard.shard %{{.*}} to %[[BATCH]] :
  %9 = braid.bias_add %8, %bias : tensor<2x16x64xf32>, tensor<64xf32>
  // CHECK: braid.layer_norm
  // CHECK-NEXT: shard.shard %{{.*}} to %[[BATCH]] :
  %10 = braid.layer_norm %9, %bias, %D : tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
  // CHECK: braid.softmax
  // CHECK-NEXT: shard.shard %{{.*}} to %[[BATCH]] :
  %sm = braid.softmax %10 : tensor<2x16x64xf32>
  // CHECK: braid.conv1d
  // CHECK-NEXT: shard.shard %{{.*}} to %[[BATCH]] :
  %11 = braid.conv1d %sm, %w : tensor<2x16x64xf32>, tensor<64x4xf32> -> tensor<2x16x64xf32>
  // CHECK: braid.selective_scan
  // CHECK-NEXT: shard.shard %{{.*}} to %[[BATCH]] :
  %12 = braid.selective_scan %11, %dt, %A, %B, %C, %D delta_softplus : tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
  // CHECK: braid.transpose
  // CHECK-NEXT: shard.shard %{{.*}} to %[[BATCH]] :
  %13 = braid.transpose %12 [0, 2, 1] : tensor<2x16x64xf32> -> tensor<2x64x16xf32>
  // CHECK: %[[Y:.*]] = braid.batch_matmul
  // CHECK-NEXT: %[[YS:.*]] = shard.shard %[[Y]] to %[[BATCH]] :
  // CHECK-NEXT: return %[[YS]]
  %14 = braid.batch_matmul %13, %12 : tensor<2x64x16xf32>, tensor<2x16x64xf32> -> tensor<2x64x64xf32>
  return %14 : tensor<2x64x64xf32>
}

// -----

// Upstream --shard-partition rewrites elementwise braid ops whose operands
// and result share a sharding, and replicated ones.
module {
  module @partition {
    shard.grid @grid(shape = 4)

    // CHECK-LABEL: func.func @elementwise
    // CHECK-SAME: %[[X:[^:]*]]: tensor<2x16xf32>, %[[Y:[^:]*]]: tensor<2x16xf32>
    // CHECK-NEXT: %[[A:.*]] = braid.add %[[X]], %[[Y]] : tensor<2x16xf32>
    // CHECK-NEXT: %[[G:.*]] = braid.gelu %[[A]] tanh : tensor<2x16xf32>
    // CHECK-NEXT: return %[[G]] : tensor<2x16xf32>
    func.func @elementwise(%x: tensor<8x16xf32>, %y: tensor<8x16xf32>) -> tensor<8x16xf32> {
      %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
      %xs = shard.shard %x to %s : tensor<8x16xf32>
      %a = braid.add %xs, %y : tensor<8x16xf32>
      %g = braid.gelu %a tanh : tensor<8x16xf32>
      return %g : tensor<8x16xf32>
    }

    // CHECK-LABEL: func.func @replicated
    // CHECK-NEXT: braid.linear %{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
    func.func @replicated(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>) -> tensor<8x4xf32> {
      %s = shard.sharding @grid split_axes = [[]] : !shard.sharding
      %xs = shard.shard %x to %s : tensor<8x16xf32>
      %y = braid.linear %xs, %w : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
      return %y : tensor<8x4xf32>
    }
  }
}

// -----

// Split braid ops other than elementwise ones are left to --braid-partition.
module {
  module @partition_split_linear {
    shard.grid @grid(shape = 4)

    func.func @split_linear(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>) -> tensor<8x4xf32> {
      %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
      %xs = shard.shard %x to %s : tensor<8x16xf32>
      // expected-error @+1 {{'braid.linear' op with split operands or results is not partitioned by upstream --shard-partition; partition braid programs with --braid-partition}}
      %y = braid.linear %xs, %w : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
      return %y : tensor<8x4xf32>
    }
  }
}
