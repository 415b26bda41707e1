//===- BraidOps.td - braid dialect operations ---------------*- tablegen -*-===//
//
// Every op documents its exact semantics: the numpy reference of the test
// suite and the CPU/CUDA kernels implement these descriptions, not each other.
// Shapes follow from operands where they can, through InferTypeOpInterface;
// the printed result type is then checked against the inferred one.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_BRAIDOPS_TD
#define BRAID_DIALECT_BRAID_IR_BRAIDOPS_TD

include "dialects/braid/IR/BraidBase.td"
include "dialects/braid/IR/BraidInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"

class Braid_Op<string mnemonic, list<Trait> traits = []>
    : Op<Braid_Dialect, mnemonic, traits>;

/// Ops whose result type follows from their operands and attributes.
class Braid_InferredOp<string mnemonic, list<Trait> traits = []>
    : Braid_Op<mnemonic, !listconcat(traits, [Pure, InferTypeOpAdaptor])>;

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

def Braid_ParamOp : Braid_Op<"param", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "declares a model parameter once, at module level";
  let description = [{
    A named, trainable tensor of the model. The initializer is part of the
    declaration so that every rank can generate exactly its shard of the
    global tensor from (seed, name, global element index): `normal(std)` draws
    from N(0, std^2), `zeros` and `ones` are constant. Two initializers are
    Mamba's (Gu & Dao 2023) for its state-space parameters:
    `s4d_real` is the S4D-Real init of A_log, log(n + 1) at index n of the
    last dimension (A = -exp(A_log) = -(n + 1)); `mamba_dt` is that of the
    time-step bias, softplus^-1(dt) with dt log-uniform in [1e-3, 1e-1]
    (floored at 1e-4), so that softplus(dt_bias) starts at dt. Their exact
    definitions, which the runtime and the numpy reference share, are in
    test/lib/braid_ref/rng.py.

    ```mlir
    braid.param @layers.0.attn.wq normal(2.000000e-02) : tensor<64x64xf32>
    braid.param @layers.0.attn_norm ones : tensor<64xf32>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<Braid_FloatTensor>:$type,
                       Braid_InitKindAttr:$init,
                       OptionalAttr<F64Attr>:$init_std);
  let assemblyFormat = [{
    $sym_name `` $init (`(` $init_std^ `)`)? attr-dict `:` $type
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
  }];
}

def Braid_GetParamOp : Braid_Op<"get_param",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "reads a parameter declared by braid.param";
  let description = [{
    Yields the current value of the parameter `@name`. The result type must be
    the declared type.

    ```mlir
    %w = braid.get_param @layers.0.attn.wq : tensor<64x64xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Transformer
//===----------------------------------------------------------------------===//

def Braid_EmbeddingOp : Braid_InferredOp<"embedding",
    [Braid_ShardingRule, Braid_VJP, Braid_Cost, Braid_KernelCall]> {
  let summary = "token embedding lookup, optionally plus a learned position table";
  let description = [{
    `tokens` has shape [..., S] and `table` [V, H]. The result has shape
    [..., S, H] with `result[..., s, :] = table[tokens[..., s], :]`, plus
    `position_table[s, :]` when a position table [P, H] with P >= S is given
    (GPT-2/GPT-3 learned positions). Every token must lie in [0, V); the
    runtime checks it.

    After SPMD partitioning, `vocab_axes` names the grid axes the table's rows
    are split over: this rank's table holds rows [c V, (c + 1) V) of the
    global table (c its coordinate over those axes) and the lookup of a token
    outside them is zero, so the ranks' results sum to the whole lookup.

    ```mlir
    %h = braid.embedding %tok, %wte positions %wpe
        : tensor<2x16xi32>, tensor<97x32xf32>, tensor<16x32xf32> -> tensor<2x16x32xf32>
    ```
  }];
  let arguments = (ins Braid_IndexTensor:$tokens, Braid_FloatTensor:$table,
                       Optional<Braid_FloatTensor>:$position_table,
                       OptionalAttr<StrArrayAttr>:$vocab_axes);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $tokens `,` $table (`positions` $position_table^)? attr-dict `:` type($tokens)
    `,` type($table) (`,` type($position_table)^)? `->` type($result)
  }];
}

def Braid_LinearOp : Braid_InferredOp<"linear",
    [Braid_ShardingRule, Braid_VJP, Braid_Cost, Braid_KernelCall]> {
  let summary = "matrix multiply over the last dimension, with optional bias";
  let description = [{
    `input` has shape [..., K] and `weight` [K, N] (or [N, K] with
    `transpose_weight`, the layout of an LM head tied to an embedding table).
    `result[..., n] = sum_k input[..., k] * W[k, n] (+ bias[n])` where
    W = weight or weight^T. Accumulation is in f32 for every element type.

    ```mlir
    %y = braid.linear %x, %w bias %b : tensor<2x16x32xf32>, tensor<32x96xf32>, tensor<96xf32> -> tensor<2x16x96xf32>
    %logits = braid.linear %h, %wte transpose_weight : tensor<2x16x32xf32>, tensor<97x32xf32> -> tensor<2x16x97xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_FloatTensor:$weight,
                       Optional<Braid_FloatTensor>:$bias,
                       UnitAttr:$transpose_weight);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` $bias^)? (`transpose_weight` $transpose_weight^)?
    attr-dict `:` type($input) `,` type($weight) (`,` type($bias)^)? `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// Contraction size K and output size N of the weight, after transposition.
    int64_t getInFeatures();
    int64_t getOutFeatures();
  }];
}

def Braid_BatchMatmulOp : Braid_InferredOp<"batch_matmul",
    [Braid_ShardingRule, Braid_VJP, Braid_Cost, Braid_KernelCall]> {
  let summary = "batched matrix multiply with optional operand transposes";
  let description = [{
    `lhs` [..., M, K] and `rhs` [..., K, N] with identical leading (batch)
    dimensions; `transpose_a` / `transpose_b` take the operand's last two
    dimensions swapped ([..., K, M] / [..., N, K]).
    `result[..., m, n] = sum_k A[..., m, k] * B[..., k, n]`.

    ```mlir
    %c = braid.batch_matmul %a, %b transpose_b : tensor<4x8x16xf32>, tensor<4x32x16xf32> -> tensor<4x8x32xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$lhs, Braid_FloatTensor:$rhs,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_a` $transpose_a^)? (`transpose_b` $transpose_b^)?
    attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def Braid_AttentionOp : Braid_InferredOp<"attention",
    [Braid_ShardingRule, Braid_VJP, Braid_Cost, Braid_KernelCall]> {
  let summary = "multi-head / grouped-query scaled dot-product attention";
  let description = [{
    `query` [B, S, Hq, D], `key` [B, Skv, Hkv, D], `value` [B, Skv, Hkv, Dv]
    with Hq a multiple of Hkv: query head h reads key/value head
    h / (Hq / Hkv) (grouped-query attention; Hkv == Hq is multi-head).

    When `rope_theta` is present, rotary position embedding is applied to q
    and k first, in the rotate-half form (GPT-NeoX, Llama): for position p
    and i < D/2, with f_i = theta^(-2i/D),
    `x'[i] = x[i] cos(p f_i) - x[i + D/2] sin(p f_i)` and
    `x'[i + D/2] = x[i + D/2] cos(p f_i) + x[i] sin(p f_i)`; positions are
    0..S-1 for queries and 0..Skv-1 for keys.

    `score[b, h, s, t] = scale * sum_d q'[b, s, h, d] * k'[b, t, h/g, d]`,
    `scale` defaulting to 1/sqrt(D); with `causal` (which needs S == Skv)
    scores with t > s are -inf. The weights are the softmax over t, and
    `result[b, s, h, :] = sum_t p[b, h, s, t] * value[b, t, h/g, :]`.

    Context parallelism: with `query_offset_axes`, the queries are the chunk
    of the sequence this rank holds, c its coordinate over those grid axes:
    query s has global position o + s with o = c S, for RoPE and for the
    causal mask (t > o + s is masked), and S may be less than Skv.

    Ring attention: with `ring_axes`, the queries, keys and values are all
    this rank's chunk of the sequence over those grid axes, and the result is
    attention of the rank's queries over every rank's keys and values: key
    and value blocks travel around the group point to point, each block's
    partial result merged by the online-softmax rule. Chunk j holds global
    rows j S.. for queries and j Skv.. for keys.

    Zigzag load balancing: with `sequence_zigzag = n`, the global sequence is
    stored permuted: cut into 2n equal chunks, stored in the order 0, 2n-1,
    1, 2n-2, ... (so that rank i of n holds chunks i and 2n-1-i, and causal
    work is the same on every rank). A stored row's position (for RoPE and
    the causal mask) is then its chunk's position, for queries and keys
    alike; the global length must be a multiple of 2n.

    ```mlir
    %o = braid.attention %q, %k, %v causal {rope_theta = 5.000000e+05 : f64}
        : tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32> -> tensor<2x16x4x8xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$query, Braid_FloatTensor:$key,
                       Braid_FloatTensor:$value, UnitAttr:$causal,
                       OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<F64Attr>:$rope_theta,
                       OptionalAttr<StrArrayAttr>:$query_offset_axes,
                       OptionalAttr<StrArrayAttr>:$ring_axes,
                       OptionalAttr<I64Attr>:$sequence_zigzag);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`causal` $causal^)? attr-dict `:` type($query)
    `,` type($key) `,` type($value) `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// The softmax scale: the attribute, or 1/sqrt(head dim).
    double getScaleOrDefault();
  }];
}

class Braid_NormOp<string mnemonic>
    : Braid_InferredOp<mnemonic,
        [Braid_ShardingRule, Braid_VJP, Braid_Cost, Braid_KernelCall]> {
  let results = (outs Braid_FloatTensor:$result);
}

def Braid_RMSNormOp : Braid_NormOp<"rms_norm"> {
  let summary = "root-mean-square normalization over the last dimension";
  let description = [{
    `input` [..., H], `gamma` [H]:
    `result = input / sqrt(mean(input^2 over H) + epsilon) * gamma`,
    computed in f32.

    ```mlir
    %y = braid.rms_norm %x, %g {epsilon = 1.000000e-05 : f64} : tensor<2x16x32xf32>, tensor<32xf32> -> tensor<2x16x32xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_FloatTensor:$gamma,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let assemblyFormat = [{
    $input `,` $gamma attr-dict `:` type($input) `,` type($gamma) `->` type($result)
  }];
}

def Braid_LayerNormOp : Braid_NormOp<"layer_norm"> {
  let summary = "layer normalization over the last dimension";
  let description = [{
    `input` [..., H], `gamma` and `beta` [H]: with mean m and biased variance
    v over H, `result = (input - m) / sqrt(v + epsilon) * gamma + beta`,
    computed in f32.

    ```mlir
    %y = braid.layer_norm %x, %g, %b : tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<2x16x32xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_FloatTensor:$gamma,
                       Braid_FloatTensor:$beta,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let assemblyFormat = [{
    $input `,` $gamma `,` $beta attr-dict `:` type($input) `,` type($gamma)
    `,` type($beta) `->` type($result)
  }];
}

def Braid_SoftmaxOp : Braid_Op<"softmax",
    [Pure, SameOperandsAndResultType, Braid_ShardingRule, Braid_VJP,
      Braid_Cost, Braid_KernelCall]> {
  let summary = "softmax over the last dimension";
  let description = [{
    `input` [..., N]: `result[..., i] = exp(x_i - m) / sum_j exp(x_j - m)`
    with m the row's maximum, computed in f32 (a row of -inf gives NaN, as
    in numpy and PyTorch). The op front ends' softmax over another dimension
    raises to (transposes around it: `--raise-linalg-to-braid`); attention
    computes its own softmax inside `braid.attention`.

    ```mlir
    %p = braid.softmax %x : tensor<2x16x32xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Braid_UnaryOp<string mnemonic, list<Trait> traits = []>
    : Braid_Op<mnemonic, !listconcat(traits,
        [Pure, Elementwise, SameOperandsAndResultType], Braid_ElementwiseRules)> {
  let arguments = (ins Braid_FloatTensor:$input);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Braid_GeluOp : Braid_UnaryOp<"gelu"> {
  let summary = "Gaussian error linear unit";
  let description = [{
    `x * Phi(x)` with Phi the standard normal CDF, `0.5 x (1 + erf(x/sqrt 2))`;
    with `tanh`, the approximation of GPT-2:
    `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.

    ```mlir
    %y = braid.gelu %x tanh : tensor<2x16x128xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, UnitAttr:$approximate);
  let assemblyFormat = "$input (`tanh` $approximate^)? attr-dict `:` type($result)";
}

def Braid_SiluOp : Braid_UnaryOp<"silu"> {
  let summary = "sigmoid linear unit, x * sigmoid(x)";
  let description = "`result = x / (1 + exp(-x))`, elementwise.";
}

def Braid_SigmoidOp : Braid_UnaryOp<"sigmoid"> {
  let summary = "logistic sigmoid";
  let description = "`result = 1 / (1 + exp(-x))`, elementwise.";
}

def Braid_ReluOp : Braid_UnaryOp<"relu"> {
  let summary = "rectified linear unit";
  let description = "`result = max(x, 0)`, elementwise.";
}

def Braid_ReluSquaredOp : Braid_UnaryOp<"relu_squared"> {
  let summary = "squared rectified linear unit";
  let description = [{
    `result = max(x, 0)^2`, elementwise: the MLP activation of Primer (So et
    al. 2021) and Nemotron-4.

    ```mlir
    %y = braid.relu_squared %x : tensor<2x16x128xf32>
    ```
  }];
}

def Braid_ExpOp : Braid_UnaryOp<"exp"> {
  let summary = "natural exponential";
  let description = "`result = exp(x)`, elementwise.";
}

def Braid_NegOp : Braid_UnaryOp<"neg"> {
  let summary = "negation";
  let description = "`result = -x`, elementwise.";
  let hasFolder = 1;
}

class Braid_BinaryOp<string mnemonic, list<Trait> traits = []>
    : Braid_Op<mnemonic, !listconcat(traits,
        [Pure, Elementwise, SameOperandsAndResultType], Braid_ElementwiseRules)> {
  let arguments = (ins Braid_FloatTensor:$lhs, Braid_FloatTensor:$rhs);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Braid_AddOp : Braid_BinaryOp<"add", [Commutative]> {
  let summary = "elementwise sum of two tensors of one type (residual add)";
  let description = "`result = lhs + rhs`; no broadcasting.";
}

def Braid_MulOp : Braid_BinaryOp<"mul", [Commutative]> {
  let summary = "elementwise product of two tensors of one type";
  let description = "`result = lhs * rhs`; no broadcasting.";
}

def Braid_BiasAddOp : Braid_InferredOp<"bias_add",
    [Braid_ShardingRule, Braid_VJP]> {
  let summary = "adds a tensor broadcast over the leading dimensions";
  let description = [{
    `bias`'s shape is a suffix of `input`'s: `result[..., i] = input[..., i] +
    bias[i]` over the trailing dimensions bias has. SPMD partitioning uses it
    to add a row-parallel linear's bias, or a learned position table, once
    after the partial sums are reduced.

    ```mlir
    %y = braid.bias_add %x, %b : tensor<2x16x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_FloatTensor:$bias);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $bias attr-dict `:` type($input) `,` type($bias)
  }];
}

def Braid_GluOp : Braid_Op<"glu",
    [Pure, Elementwise, SameOperandsAndResultType, Braid_ShardingRule,
      Braid_VJP, Braid_Cost, Braid_ScalarExpression]> {
  let summary = "gated linear unit: act(gate) * up (SwiGLU, GeGLU, Mamba's gate)";
  let description = [{
    `result = act(gate) * up`, elementwise. With `silu` this is SwiGLU's
    gating (Llama, Mixtral experts) and Mamba's output gate `y * silu(z)`
    (`braid.glu silu %z, %y`); `gelu`/`gelu_tanh` give GeGLU, `sigmoid` the
    original GLU.

    ```mlir
    %h = braid.glu silu %g, %u : tensor<2x16x128xf32>
    ```
  }];
  let arguments = (ins Braid_ActivationAttr:$activation,
                       Braid_FloatTensor:$gate, Braid_FloatTensor:$up);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "`` $activation $gate `,` $up attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

def Braid_ReshapeOp : Braid_Op<"reshape",
    [Pure, Braid_ShardingRule, Braid_VJP]> {
  let summary = "reinterprets a tensor with another shape of equal size";
  let description = [{
    Row-major reinterpretation: the element at linear index i of `input` is the
    element at linear index i of the result. Element counts and element types
    must be equal.

    ```mlir
    %y = braid.reshape %x : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
    ```
  }];
  let arguments = (ins Braid_AnyTensor:$input);
  let results = (outs Braid_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Braid_TransposeOp : Braid_InferredOp<"transpose",
    [Braid_ShardingRule, Braid_VJP, Braid_KernelCall]> {
  let summary = "permutes the dimensions of a tensor";
  let description = [{
    `result.shape[i] = input.shape[permutation[i]]` and
    `result[i_0, ..., i_n] = input[j]` with `j[permutation[k]] = i_k`.

    ```mlir
    %y = braid.transpose %x [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
    ```
  }];
  let arguments = (ins Braid_AnyTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Braid_AnyTensor:$result);
  let assemblyFormat = [{
    $input $permutation attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

def Braid_CrossEntropyOp : Braid_InferredOp<"cross_entropy",
    [Braid_ShardingRule, Braid_VJP, Braid_Cost, Braid_KernelCall]> {
  let summary = "mean softmax cross-entropy over a vocabulary";
  let description = [{
    `logits` [..., V] and integer `labels` [...]: with N the number of label
    elements, `result = (1/N) sum_i (logsumexp(logits[i, :]) - logits[i, labels[i]])`,
    a 0-d f32 tensor whatever the logits' element type. Labels must lie in
    [0, V).

    Attributes set by SPMD partitioning: `denominator` replaces N (the global
    number of labels when the batch is split, so that the ranks' results sum
    to the global mean); `vocab_axes` names the grid axes the logits' last
    dimension is split over (this rank holds global columns [c V, (c + 1) V);
    the softmax statistics are all-reduced over those axes, so every rank of
    them returns the same value); `vocab_size` is the number of real columns
    of the global vocabulary, the rest being padding that takes no part.

    ```mlir
    %loss = braid.cross_entropy %logits, %labels : tensor<2x16x97xf32>, tensor<2x16xi32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$logits, Braid_IndexTensor:$labels,
                       OptionalAttr<StrArrayAttr>:$vocab_axes,
                       OptionalAttr<I64Attr>:$vocab_size,
                       OptionalAttr<I64Attr>:$denominator);
  let results = (outs 0DTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Mamba
//===----------------------------------------------------------------------===//

def Braid_Conv1dOp : Braid_InferredOp<"conv1d",
    [Braid_ShardingRule, Braid_VJP, Braid_Cost, Braid_KernelCall]> {
  let summary = "causal depthwise 1-D convolution over the sequence";
  let description = [{
    `input` [B, S, C], `weight` [C, K], optional `bias` [C]:
    `result[b, t, c] = bias[c] + sum_{j<K} weight[c, j] * input[b, t - (K-1) + j, c]`,
    with input at negative positions taken as 0 (left padding by K-1, the
    convolution of Mamba's mixer).

    Context parallelism: with `context_axes`, `input` is this rank's chunk of
    a sequence split over those grid axes, and the K-1 positions before it
    come from the previous rank's chunk (a halo; zeros on the first rank).

    ```mlir
    %y = braid.conv1d %x, %w bias %b : tensor<2x16x64xf32>, tensor<64x4xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_FloatTensor:$weight,
                       Optional<Braid_FloatTensor>:$bias,
                       OptionalAttr<StrArrayAttr>:$context_axes);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` $bias^)? attr-dict `:` type($input) `,` type($weight)
    (`,` type($bias)^)? `->` type($result)
  }];
}

def Braid_SelectiveScanOp : Braid_InferredOp<"selective_scan",
    [Braid_ShardingRule, Braid_VJP, Braid_Cost, Braid_KernelCall]> {
  let summary = "the S6 selective state-space recurrence of Mamba";
  let description = [{
    `input` x and `delta` [B, S, D], `A` [D, N] (negative decays), `B` and `C`
    [B, S, N] (input dependent), `D` [D] (skip). With dt = softplus(delta)
    when `delta_softplus` is set and dt = delta otherwise, the state
    h[b, d, n] starts at 0 and for t = 0..S-1:
    `h = exp(dt[b,t,d] * A[d,n]) * h + dt[b,t,d] * B[b,t,n] * x[b,t,d]`,
    `result[b,t,d] = sum_n C[b,t,n] * h[b,d,n] + D[d] * x[b,t,d]`.
    All arithmetic is in f32.

    Context parallelism: with `context_axes`, the inputs are this rank's
    chunk of a sequence split over those grid axes, and the scan starts from
    the state the previous chunks leave (composed across ranks from each
    chunk's final state and decay, an exclusive scan), not from zero.

    ```mlir
    %y = braid.selective_scan %x, %dt, %A, %B, %C, %D delta_softplus
        : tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x8xf32>, tensor<2x16x8xf32>,
          tensor<2x16x8xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_FloatTensor:$delta,
                       Braid_FloatTensor:$A, Braid_FloatTensor:$B,
                       Braid_FloatTensor:$C, Braid_FloatTensor:$D,
                       UnitAttr:$delta_softplus,
                       OptionalAttr<StrArrayAttr>:$context_axes);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $delta `,` $A `,` $B `,` $C `,` $D (`delta_softplus` $delta_softplus^)?
    attr-dict `:` type($input) `,` type($delta) `,` type($A) `,` type($B) `,`
    type($C) `,` type($D) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

def Braid_RouterOp : Braid_InferredOp<"router",
    [Braid_ShardingRule, Braid_VJP, Braid_Cost, Braid_KernelCall]> {
  let summary = "softmax gate and top-k expert selection";
  let description = [{
    `logits` [T, E] (from a linear router). p = softmax over E (in f32). For
    each token the k largest probabilities are selected, in decreasing order,
    ties broken by the lower expert index; `indices` [T, k] holds the experts
    (i32) and `weights` [T, k] their probabilities, renormalized to sum to 1
    over the k selected when `normalize` is set (Mixtral) and raw otherwise
    (GShard, Switch).

    ```mlir
    %w, %i = braid.router %logits top_k 2 normalize : tensor<32x8xf32> -> tensor<32x2xf32>, tensor<32x2xi32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$logits,
                       ConfinedAttr<I64Attr, [IntPositive]>:$top_k,
                       UnitAttr:$normalize);
  let results = (outs Braid_FloatTensor:$weights, TensorOf<[I32]>:$indices);
  let assemblyFormat = [{
    $logits `top_k` $top_k (`normalize` $normalize^)? attr-dict `:` type($logits)
    `->` type($weights) `,` type($indices)
  }];
}

def Braid_DispatchOp : Braid_Op<"dispatch",
    [Pure, Braid_ShardingRule, Braid_VJP, Braid_KernelCall]> {
  let summary = "scatters tokens into per-expert buffers of fixed capacity";
  let description = [{
    `input` [T, H], `indices` [T, k] from braid.router; the result [E, S, H]
    has E experts and S slots per expert (both from the result type).

    Capacity is per group (GShard's groups): the tokens are cut into
    G = T / `group_size` consecutive groups (one group of all T tokens when
    `group_size` is absent), and each expert has C = S / G slots per group,
    group g owning slots [g C, (g + 1) C). Within a group, assignments
    (t, j) are taken in the order j-major, then t (every token's first
    choice before any second choice, as GShard); an assignment to expert e
    gets the next free slot of e in its group, and once e has C assignments
    from the group further ones are dropped. `result[e, s, :] =
    input[t, :]` for the assignment in slot s of e, and 0 for slots left
    empty. braid.combine uses the same slot assignment.

    A token's fate depends only on the tokens of its group, so splitting the
    tokens into whole groups (data, expert or pipeline micro-batch shards)
    computes the same function; the partitioner and micro-batching refuse
    splits that cut a group. The Python builder makes one group per sequence.

    ```mlir
    %d = braid.dispatch %x, %i group_size 16 : tensor<32x64xf32>, tensor<32x2xi32> -> tensor<8x10x64xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, TensorOf<[I32]>:$indices,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$group_size);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $indices (`group_size` $group_size^)? attr-dict `:` type($input) `,`
    type($indices) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Braid_ExpertFFNOp : Braid_InferredOp<"expert_ffn",
    [Braid_ShardingRule, Braid_VJP, Braid_Cost, Braid_KernelCall]> {
  let summary = "a feed-forward network per expert over stacked expert weights";
  let description = [{
    `input` [E, C, H], `w_up` [E, H, F], `w_down` [E, F, H], optional
    `w_gate` [E, H, F]. For each expert e, with X = input[e]:
    gated, `result[e] = (act(X w_gate[e]) * (X w_up[e])) w_down[e]` (SwiGLU
    with `silu`); otherwise `result[e] = act(X w_up[e]) w_down[e]`.

    ```mlir
    %y = braid.expert_ffn silu %d, %wu, %wd gate %wg
        : tensor<8x10x64xf32>, tensor<8x64x128xf32>, tensor<8x128x64xf32>, tensor<8x64x128xf32> -> tensor<8x10x64xf32>
    ```
  }];
  let arguments = (ins Braid_ActivationAttr:$activation,
                       Braid_FloatTensor:$input, Braid_FloatTensor:$w_up,
                       Braid_FloatTensor:$w_down,
                       Optional<Braid_FloatTensor>:$w_gate);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    `` $activation $input `,` $w_up `,` $w_down (`gate` $w_gate^)? attr-dict `:`
    type($input) `,` type($w_up) `,` type($w_down) (`,` type($w_gate)^)?
    `->` type($result)
  }];
}

def Braid_CombineOp : Braid_InferredOp<"combine",
    [Braid_ShardingRule, Braid_VJP, Braid_Cost, Braid_KernelCall]> {
  let summary = "gathers expert outputs back to tokens, weighted by the gate";
  let description = [{
    `expert_output` [E, S, H], `weights` [T, k] and `indices` [T, k]:
    `result[t, :] = sum_j weights[t, j] * expert_output[indices[t, j], slot(t, j), :]`
    over the assignments braid.dispatch kept (same `group_size`, groups and
    capacity per group); dropped assignments contribute nothing.

    ```mlir
    %y = braid.combine %e, %w, %i group_size 16 : tensor<8x10x64xf32>, tensor<32x2xf32>, tensor<32x2xi32> -> tensor<32x64xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$expert_output,
                       Braid_FloatTensor:$weights, TensorOf<[I32]>:$indices,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$group_size);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $expert_output `,` $weights `,` $indices (`group_size` $group_size^)? attr-dict `:`
    type($expert_output) `,` type($weights) `,` type($indices) `->` type($result)
  }];
}

include "dialects/braid/IR/BraidTrainingOps.td"
include "dialects/braid/IR/BraidBlockAttentionOps.td"
include "dialects/braid/IR/BraidSequenceChunkOps.td"
include "dialects/braid/IR/BraidVocabShardOps.td"
include "dialects/braid/IR/BraidInferenceOps.td"
include "dialects/braid/IR/BraidCacheContextOps.td"
include "dialects/braid/IR/BraidSampleOps.td"
include "dialects/braid/IR/BraidMambaContextOps.td"
include "dialects/braid/IR/BraidPagedCacheOps.td"

#endif // BRAID_DIALECT_BRAID_IR_BRAIDOPS_TD
