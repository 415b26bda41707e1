//===- BraidTrainingOps.td - backward and optimizer ops -----*- tablegen -*-===//
//
// The ops a training step is made of besides the forward ones: vector-
// Jacobian products the autodiff pass emits (each takes the forward operands
// and the cotangent of the forward result and yields the cotangents of the
// operands), program state (optimizer moments, the step counter) and the
// optimizer updates. Gradients are values; updates write persistent state.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_BRAIDTRAININGOPS_TD
#define BRAID_DIALECT_BRAID_IR_BRAIDTRAININGOPS_TD

//===----------------------------------------------------------------------===//
// Helpers of backward graphs
//===----------------------------------------------------------------------===//

def Braid_FillOp : Braid_Op<"fill", [Pure, Braid_ScalarExpression]> {
  let summary = "a tensor whose every element is one constant";
  let description = [{
    `result[i] = value` (e.g. the seed 1.0 of the loss's cotangent).

    ```mlir
    %one = braid.fill 1.000000e+00 : tensor<f32>
    ```
  }];
  let arguments = (ins F64Attr:$value);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
}

def Braid_SumRowsOp : Braid_InferredOp<"sum_rows",
    [Braid_Cost, Braid_KernelCall]> {
  let summary = "sum over every dimension but the last (bias gradients)";
  let description = [{
    `input` [..., N] -> `result` [N], `result[n] = sum over i of input[i, n]`
    with the leading dimensions flattened, accumulated in f32.
  }];
  let arguments = (ins Braid_FloatTensor:$input);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Braid_ActivationGradOp : Braid_Op<"activation_grad",
    [Pure, Elementwise, SameOperandsAndResultType, Braid_Cost,
      Braid_KernelCall]> {
  let summary = "cotangent through a pointwise activation";
  let description = [{
    `result = dy * act'(x)`, elementwise; act' of gelu is Phi(x) + x phi(x),
    of gelu_tanh the derivative of the tanh formula, of relu 0 for x <= 0.
  }];
  let arguments = (ins Braid_ActivationAttr:$activation,
                       Braid_FloatTensor:$input, Braid_FloatTensor:$grad);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "`` $activation $input `,` $grad attr-dict `:` type($result)";
}

def Braid_SoftmaxGradOp : Braid_Op<"softmax_grad",
    [Pure, SameOperandsAndResultType, Braid_Cost, Braid_KernelCall]> {
  let summary = "cotangent of softmax's input, from its result";
  let description = [{
    With y = softmax(x) over the last dimension and dy the cotangent of y:
    `result = y * (dy - sum_j dy_j y_j)`, per row of the last dimension,
    the row's sum in f32.

    ```mlir
    %dx = braid.softmax_grad %y, %dy : tensor<2x16x32xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$output, Braid_FloatTensor:$grad);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$output `,` $grad attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Braid_ConvertOp : Braid_Op<"convert",
    [Pure, Elementwise, Braid_ShardingRule, Braid_VJP, Braid_KernelCall]> {
  let summary = "converts a float tensor to another float element type";
  let description = [{
    Elementwise conversion with round-to-nearest-even, e.g. the bf16 compute
    copy of an f32 master weight in mixed-precision training.

    ```mlir
    %w16 = braid.convert %w : tensor<64x64xf32> -> tensor<64x64xbf16>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Vector-Jacobian products
//===----------------------------------------------------------------------===//

def Braid_AttentionGradOp : Braid_InferredOp<"attention_grad",
    [Braid_Cost, Braid_KernelCall]> {
  let summary = "cotangents of attention's query, key and value";
  let description = [{
    For `braid.attention` with the same operands and attributes and the
    cotangent `grad` of its result: `dq`, `dk`, `dv` with the types of
    `query`, `key`, `value`. The softmax is recomputed from q and k (nothing
    but the operands is saved); with GQA the key/value cotangents sum over the
    query heads of a group; with RoPE, dq and dk are with respect to the
    unrotated q and k. Under ring attention (`ring_axes`) `dk` and `dv` are
    the cotangents of this rank's key and value chunk, summed over every
    rank's queries (the accumulators travel around the group with the
    blocks).
  }];
  let arguments = (ins Braid_FloatTensor:$query, Braid_FloatTensor:$key,
                       Braid_FloatTensor:$value, Braid_FloatTensor:$grad,
                       UnitAttr:$causal, OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<F64Attr>:$rope_theta,
                       OptionalAttr<StrArrayAttr>:$query_offset_axes,
                       OptionalAttr<StrArrayAttr>:$ring_axes,
                       OptionalAttr<I64Attr>:$sequence_zigzag);
  let results = (outs Braid_FloatTensor:$dquery, Braid_FloatTensor:$dkey,
                      Braid_FloatTensor:$dvalue);
  let extraClassDeclaration = [{
    /// The softmax scale: the attribute, or 1/sqrt(head dim).
    double getScaleOrDefault();
  }];
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $grad (`causal` $causal^)? attr-dict `:`
    type($query) `,` type($key) `,` type($value) `,` type($grad) `->`
    type($dquery) `,` type($dkey) `,` type($dvalue)
  }];
}

def Braid_RMSNormGradOp : Braid_InferredOp<"rms_norm_grad",
    [Braid_Cost, Braid_KernelCall]> {
  let summary = "cotangents of rms_norm's input and scale";
  let arguments = (ins Braid_FloatTensor:$input, Braid_FloatTensor:$gamma,
                       Braid_FloatTensor:$grad,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs Braid_FloatTensor:$dinput, Braid_FloatTensor:$dgamma);
  let assemblyFormat = [{
    $input `,` $gamma `,` $grad attr-dict `:` type($input) `,` type($gamma) `,`
    type($grad) `->` type($dinput) `,` type($dgamma)
  }];
}

def Braid_LayerNormGradOp : Braid_InferredOp<"layer_norm_grad",
    [Braid_Cost, Braid_KernelCall]> {
  let summary = "cotangents of layer_norm's input, scale and shift";
  let arguments = (ins Braid_FloatTensor:$input, Braid_FloatTensor:$gamma,
                       Braid_FloatTensor:$grad,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs Braid_FloatTensor:$dinput, Braid_FloatTensor:$dgamma,
                      Braid_FloatTensor:$dbeta);
  let assemblyFormat = [{
    $input `,` $gamma `,` $grad attr-dict `:` type($input) `,` type($gamma) `,`
    type($grad) `->` type($dinput) `,` type($dgamma) `,` type($dbeta)
  }];
}

def Braid_EmbeddingGradOp : Braid_Op<"embedding_grad",
    [Pure, Braid_Cost, Braid_KernelCall]> {
  let summary = "scatter-add of token cotangents into the table's cotangent";
  let description = [{
    `tokens` [..., S], `grad` [..., S, H] -> [V, H] (V from the result type):
    `result[v] = sum over positions p with tokens[p] == v of grad[p]`.
    With `vocab_axes` the result is this rank's shard of the table's
    cotangent, as in braid.embedding.
  }];
  let arguments = (ins Braid_IndexTensor:$tokens, Braid_FloatTensor:$grad,
                       OptionalAttr<StrArrayAttr>:$vocab_axes);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $tokens `,` $grad attr-dict `:` type($tokens) `,` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Braid_PositionGradOp : Braid_Op<"position_grad",
    [Pure, Braid_Cost, Braid_KernelCall]> {
  let summary = "cotangent of a learned position table";
  let description = [{
    `grad` [..., S, H] -> [P, H] with P >= S: `result[s] = sum over the
    leading dimensions of grad[..., s, :]` for s < S, zero for s >= S.
  }];
  let arguments = (ins Braid_FloatTensor:$grad);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
  let hasVerifier = 1;
}

def Braid_CrossEntropyGradOp : Braid_InferredOp<"cross_entropy_grad",
    [Braid_Cost, Braid_KernelCall]> {
  let summary = "cotangent of the logits of the mean cross-entropy";
  let description = [{
    `result = grad / N * (softmax(logits) - onehot(labels))` row by row, with
    `grad` the 0-d f32 cotangent of the loss and N the number of labels.
    `vocab_axes`, `vocab_size` and `denominator` mean what they mean on
    braid.cross_entropy (padding columns get a zero cotangent).
  }];
  let arguments = (ins Braid_FloatTensor:$logits, Braid_IndexTensor:$labels,
                       0DTensorOf<[F32]>:$grad,
                       OptionalAttr<StrArrayAttr>:$vocab_axes,
                       OptionalAttr<I64Attr>:$vocab_size,
                       OptionalAttr<I64Attr>:$denominator);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $grad attr-dict `:` type($logits) `,` type($labels)
    `,` type($grad) `->` type($result)
  }];
}

def Braid_Conv1dGradOp : Braid_InferredOp<"conv1d_grad",
    [Braid_Cost, Braid_KernelCall]> {
  let summary = "cotangents of conv1d's input, weight and bias";
  let arguments = (ins Braid_FloatTensor:$input, Braid_FloatTensor:$weight,
                       Braid_FloatTensor:$grad,
                       OptionalAttr<StrArrayAttr>:$context_axes);
  let results = (outs Braid_FloatTensor:$dinput, Braid_FloatTensor:$dweight,
                      Braid_FloatTensor:$dbias);
  let assemblyFormat = [{
    $input `,` $weight `,` $grad attr-dict `:` type($input) `,` type($weight)
    `,` type($grad) `->` type($dinput) `,` type($dweight) `,` type($dbias)
  }];
}

def Braid_SelectiveScanGradOp : Braid_InferredOp<"selective_scan_grad",
    [Braid_Cost, Braid_KernelCall]> {
  let summary = "cotangents of every operand of the selective scan";
  let description = [{
    Cotangents of x, delta (the raw delta, through the softplus when
    `delta_softplus` is set), A, B, C and D, computed by a reverse-time
    recurrence over the recomputed states.
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_FloatTensor:$delta,
                       Braid_FloatTensor:$A, Braid_FloatTensor:$B,
                       Braid_FloatTensor:$C, Braid_FloatTensor:$D,
                       Braid_FloatTensor:$grad, UnitAttr:$delta_softplus,
                       OptionalAttr<StrArrayAttr>:$context_axes);
  let results = (outs Braid_FloatTensor:$dinput, Braid_FloatTensor:$ddelta,
                      Braid_FloatTensor:$dA, Braid_FloatTensor:$dB,
                      Braid_FloatTensor:$dC, Braid_FloatTensor:$dD);
  let assemblyFormat = [{
    $input `,` $delta `,` $A `,` $B `,` $C `,` $D `,` $grad
    (`delta_softplus` $delta_softplus^)? attr-dict `:` type($input) `,`
    type($delta) `,` type($A) `,` type($B) `,` type($C) `,` type($D) `,`
    type($grad) `->` type($dinput) `,` type($ddelta) `,` type($dA) `,`
    type($dB) `,` type($dC) `,` type($dD)
  }];
}

def Braid_RouterGradOp : Braid_InferredOp<"router_grad",
    [Braid_Cost, Braid_KernelCall]> {
  let summary = "cotangent of the router's logits from that of its weights";
  let description = [{
    With the selected `indices` held fixed: back-propagates the cotangent of
    the weights through the renormalization (when `normalize`) and the
    softmax to the logits [T, E].
  }];
  let arguments = (ins Braid_FloatTensor:$logits, TensorOf<[I32]>:$indices,
                       Braid_FloatTensor:$grad, UnitAttr:$normalize);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $indices `,` $grad (`normalize` $normalize^)? attr-dict `:`
    type($logits) `,` type($indices) `,` type($grad) `->` type($result)
  }];
}

def Braid_DispatchGradOp : Braid_InferredOp<"dispatch_grad",
    [Braid_Cost, Braid_KernelCall]> {
  let summary = "cotangent of the dispatched tokens";
  let description = [{
    `grad` [E, S, H] and `indices` [T, k] -> [T, H]: the sum over the kept
    assignments of token t of `grad[e, slot]` (same `group_size` and slots
    as braid.dispatch).
  }];
  let arguments = (ins Braid_FloatTensor:$grad, TensorOf<[I32]>:$indices,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$group_size);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $indices (`group_size` $group_size^)? attr-dict `:` type($grad) `,`
    type($indices) `->` type($result)
  }];
}

def Braid_CombineGradOp : Braid_InferredOp<"combine_grad",
    [Braid_Cost, Braid_KernelCall]> {
  let summary = "cotangents of the expert outputs and of the gate weights";
  let description = [{
    For `braid.combine %e, %w, %i` and the cotangent `grad` [T, H] of its
    result: `dexpert[e, slot] = w[t, j] * grad[t]` for each kept assignment
    (zero in unused slots) and `dweights[t, j] = <e[idx, slot], grad[t]>`
    (zero for dropped assignments); the slots are braid.combine's, for the
    same `group_size`.
  }];
  let arguments = (ins Braid_FloatTensor:$expert_output,
                       Braid_FloatTensor:$weights, TensorOf<[I32]>:$indices,
                       Braid_FloatTensor:$grad,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$group_size);
  let results = (outs Braid_FloatTensor:$dexpert_output,
                      Braid_FloatTensor:$dweights);
  let assemblyFormat = [{
    $expert_output `,` $weights `,` $indices `,` $grad (`group_size` $group_size^)?
    attr-dict `:` type($expert_output) `,` type($weights) `,` type($indices) `,`
    type($grad) `->` type($dexpert_output) `,` type($dweights)
  }];
}

//===----------------------------------------------------------------------===//
// Program state and optimizer updates
//===----------------------------------------------------------------------===//

def Braid_SliceOp : Braid_Op<"slice", [Pure, Braid_VJP]> {
  let summary = "this rank's block of a replicated value, blocks shared by neighbours";
  let description = [{
    `input` is whole on every rank of grid `axes`; the result is its block
    b = floor(c / replicas) along `dim` (c the rank's coordinate over `axes`,
    the block size the result's): `result[..., i, ...] = input[..., b L + i,
    ...]`. With `replicas` = 1 this is `shard.all_slice`; with more, groups of
    `replicas` consecutive ranks hold the same block, as tensor parallelism
    over more ranks than key/value heads gives each rank the one key/value
    head its query heads share.
  }];
  let arguments = (ins Braid_FloatTensor:$input, StrArrayAttr:$axes,
                       I64Attr:$dim, DefaultValuedAttr<I64Attr, "1">:$replicas);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$input `along` $dim `over` $axes attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Braid_UnsliceOp : Braid_Op<"unslice", [Pure]> {
  let summary = "places this rank's slice into zeros of the whole shape";
  let description = [{
    The adjoint of `shard.all_slice` and `braid.slice`: `input` is the block
    b = floor(c / replicas) of `dim` that the rank with coordinate c over grid
    `axes` holds (size L), the result is zero except
    `result[..., b L + i, ...] = input[..., i, ...]` (indices past the
    result's size dropped). Under the SPMD convention that a replicated
    value's cotangent may be spread over the ranks, this is exact without
    communication.
  }];
  let arguments = (ins Braid_FloatTensor:$input, StrArrayAttr:$axes,
                       I64Attr:$dim, DefaultValuedAttr<I64Attr, "1">:$replicas);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$input `along` $dim `over` $axes attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Braid_StateOp : Braid_Op<"state", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "declares persistent, non-trainable program state";
  let description = [{
    A tensor that keeps its value from one step to the next, such as
    optimizer moments or the step counter. Zeros or ones at the start.

    ```mlir
    braid.state @adamw.m.layers.0.wq zeros : tensor<64x64xf32>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<Braid_FloatTensor>:$type,
                       Braid_InitKindAttr:$init);
  let assemblyFormat = "$sym_name `` $init attr-dict `:` $type";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
  }];
}

def Braid_SumSquaresOp : Braid_Op<"sum_squares",
    [Pure, Braid_Cost, Braid_KernelCall]> {
  let summary = "sum of squares of every element of every operand";
  let description = [{
    The squared global norm of the gradients, a 0-d f32 accumulated in f32.
  }];
  let arguments = (ins Variadic<Braid_FloatTensor>:$inputs);
  let results = (outs 0DTensorOf<[F32]>:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($result)";
  let hasVerifier = 1;
}

def Braid_ClipCoefficientOp : Braid_Op<"clip_coefficient",
    [Pure, AllTypesMatch<["sumsq", "result"]>, Braid_KernelCall]> {
  let summary = "the factor that clips gradients to a maximal global norm";
  let description = [{
    `result = min(1, max_norm / (sqrt(sumsq) + 1e-6))`, 1 when max_norm <= 0.
  }];
  let arguments = (ins 0DTensorOf<[F32]>:$sumsq, F64Attr:$max_norm);
  let results = (outs 0DTensorOf<[F32]>:$result);
  let assemblyFormat = "$sumsq `max_norm` $max_norm attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Braid_IncrementOp : Braid_Op<"increment",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
      MemoryEffects<[MemWrite]>, Braid_KernelCall]> {
  let summary = "adds one to a scalar state (the optimizer's step counter)";
  let arguments = (ins FlatSymbolRefAttr:$counter);
  let assemblyFormat = "$counter attr-dict";
}

def Braid_SGDUpdateOp : Braid_Op<"sgd_update",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
      MemoryEffects<[MemWrite]>, Braid_Cost, Braid_KernelCall]> {
  let summary = "in-place SGD step of one parameter";
  let description = [{
    With g = coef * grad: `param -= lr * (g + weight_decay * param)`.
    `zero_axes`, or `offset` and `range`, shard the update as on
    braid.adamw_update.
  }];
  let arguments = (ins FlatSymbolRefAttr:$param, Braid_FloatTensor:$grad,
                       0DTensorOf<[F32]>:$coef, F64Attr:$lr,
                       F64Attr:$weight_decay,
                       OptionalAttr<StrArrayAttr>:$zero_axes,
                       Optional<Index>:$offset, OptionalAttr<I64Attr>:$range);
  let assemblyFormat = [{
    $param (`at` $offset^)? `,` $grad `,` $coef attr-dict `:` type($grad) `,`
    type($coef)
  }];
  let hasVerifier = 1;
}

def Braid_AdamWUpdateOp : Braid_Op<"adamw_update",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
      MemoryEffects<[MemWrite]>, Braid_Cost, Braid_KernelCall]> {
  let summary = "in-place AdamW step of one parameter and its moments";
  let description = [{
    With g = coef * grad and t the value of the `step` counter:
    `m = b1 m + (1 - b1) g`, `v = b2 v + (1 - b2) g^2`,
    `param -= lr * (m / (1 - b1^t) / (sqrt(v / (1 - b2^t)) + eps) + weight_decay * param)`
    (bias correction, decoupled weight decay). m and v are f32 states.

    ZeRO: with `zero_axes` the update is sharded over those grid axes. The
    parameter is viewed flat and split into equal ranges, one per rank of
    the axes (c the rank's coordinate); m and v hold this rank's range only,
    `grad` is either the whole gradient or (ZeRO-2) this rank's range, and
    after updating its range each rank all-gathers the parameter.

    --convert-braid-to-dist expands that protocol: the update then takes
    `offset` (this rank's first element, an index) and `range` (its
    element count) and updates the range [offset, offset + range) of the
    flat parameter alone (`grad` the whole gradient, read at the same
    range, or the range itself); `braid.get_param_range`, a dist.all_gather
    and `braid.set_param` follow it.
  }];
  let arguments = (ins FlatSymbolRefAttr:$param, Braid_FloatTensor:$grad,
                       0DTensorOf<[F32]>:$coef, FlatSymbolRefAttr:$m,
                       FlatSymbolRefAttr:$v, FlatSymbolRefAttr:$step,
                       F64Attr:$lr, F64Attr:$beta1, F64Attr:$beta2,
                       F64Attr:$eps, F64Attr:$weight_decay,
                       OptionalAttr<StrArrayAttr>:$zero_axes,
                       Optional<Index>:$offset, OptionalAttr<I64Attr>:$range);
  let assemblyFormat = [{
    $param (`at` $offset^)? `,` $grad `,` $coef `moments` $m `,` $v `step`
    $step attr-dict `:` type($grad) `,` type($coef)
  }];
  let hasVerifier = 1;
}

def Braid_GetParamRangeOp : Braid_Op<"get_param_range",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
      MemoryEffects<[MemRead]>]> {
  let summary = "a range of a parameter's flat elements";
  let description = [{
    `result[i] = flat(param)[offset + i]` for the result's R elements: the
    range of a ZeRO-sharded parameter this rank has updated, which the
    ranks all-gather.

    ```mlir
    %part = braid.get_param_range @w at %off : tensor<512xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$param, Index:$offset);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$param `at` $offset attr-dict `:` type($result)";
}

def Braid_SetParamOp : Braid_Op<"set_param",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
      MemoryEffects<[MemWrite]>]> {
  let summary = "writes a parameter";
  let description = [{
    The parameter takes `value`'s elements (its shape, or flat). The memory
    plan stores a value set into a parameter in the parameter itself when
    nothing reads the parameter while the value is live, so that an
    all-gather of the parameter's ranges writes it in place.

    ```mlir
    braid.set_param @w, %whole : tensor<1024xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$param, Braid_FloatTensor:$value);
  let assemblyFormat = "$param `,` $value attr-dict `:` type($value)";
}

#endif // BRAID_DIALECT_BRAID_IR_BRAIDTRAININGOPS_TD
