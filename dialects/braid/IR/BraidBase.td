//===- BraidBase.td - braid dialect, enums and attributes ---*- tablegen -*-===//
//
// The `braid` dialect describes a large-language-model graph at the level a
// practitioner reasons about when choosing a parallel plan: linear layers,
// attention, norms, scans and routers rather than scalar loops.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_BRAIDBASE_TD
#define BRAID_DIALECT_BRAID_IR_BRAIDBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Braid_Dialect : Dialect {
  let name = "braid";
  let cppNamespace = "::mlir::braid";
  let summary = "Model graphs of Transformers, Mamba, MoE and hybrids";
  let description = [{
    Tensor-level ops of LLM blocks with exact semantics. A model is a module:
    parameters are declared once with `braid.param`, each layer kind is a
    private function called once per layer, and a public step function, marked
    `braid.entry = "train_step"`, takes tokens and labels and returns the scalar
    loss. Hyper-parameters live in the
    `braid.model` module attribute, a dictionary.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  // The discardable `braid.*` attributes that passes leave for later passes,
  // the emitter and the runtime. Each is named once here (BraidAttributes.h
  // gives the C++ spellings) and verified where it appears by
  // BraidAttributes.cpp: the type below and the kind of op that may carry it.
  let discardableAttrs = (ins
    // The program an entry function is (EntryKind's keyword) on a func.func
    // (EntryPoints.h).
    "::mlir::StringAttr":$entry,
    // The one kind of program a private function is called from (EntryKind's
    // keyword): --braid-derive-inference clones the step's callees once per
    // program, and marks each clone with it (EntryPoints.h:
    // getProgramKind). Its kernel calls may depend on it (a decode step's
    // linears: braid_k_linear's BRAID_LINEAR_ROWS_APART).
    "::mlir::StringAttr":$serves,
    // The runtime's name for an entry's argument (an argument attribute)
    // where its readers do not tell it: the mixed serving program's
    // `logit_rows`, which braid.take_rows reads as prefill's last rows are.
    "::mlir::StringAttr":$input,
    // The model's hyper-parameters on the module: a flat dictionary of
    // scalars and arrays of scalars with a string `name` and `family`.
    "::mlir::DictionaryAttr":$model,
    // The names of a shard.grid's axes, in order.
    "::mlir::ArrayAttr":$axes,

    // Partitioning (--braid-partition). Per dimension, the grid axis names
    // splitting a braid.param, a braid.state or a step argument, and its
    // global (unsplit) shape beside it.
    "::mlir::ArrayAttr":$split,
    "::mlir::DenseI64ArrayAttr":$global_shape,
    // One dictionary per result of an op (record-layouts): empty, or the
    // result's global_shape and split, and `partial` (the grid axes of a
    // partial sum), which is a key of these dictionaries only.
    "::mlir::ArrayAttr":$result_layouts,
    "::mlir::ArrayAttr":$partial,
    // The ZeRO stage (0-3) of the module's optimizer update.
    "::mlir::IntegerAttr":$zero,
    // The grid axes a braid.param's update is ZeRO-sharded over (set by
    // --convert-braid-to-dist).
    "::mlir::ArrayAttr":$zero_axes,
    // The module's grid axis whose splits hold sequences in zigzag order
    // (context parallelism with load balancing).
    "::mlir::StringAttr":$zigzag_axis,

    // Training. The parameters whose gradients a differentiated step returns
    // after its loss, in order (--braid-autodiff, read by --braid-optimizer).
    "::mlir::ArrayAttr":$gradients,
    // Per gradient of a pipelined step, how many copies of it the step
    // returns (one per model chunk that reads its parameter).
    "::mlir::DenseI64ArrayAttr":$gradient_copies,
    // What completes a step's persistent tensors after it: a func.func of no
    // arguments and no results (--braid-schedule-overlap).
    "::mlir::FlatSymbolRefAttr":$finish,

    // Pipeline parallelism (PipelineStages.cpp, Autodiff.cpp, Microbatch.cpp
    // and Pipeline.cpp). The model chunk an op of the step belongs to, and
    // the mark of the ops the reverse pass created.
    "::mlir::IntegerAttr":$stage,
    "::mlir::UnitAttr":$backward,
    // The step's micro-batch count (--braid-microbatch).
    "::mlir::IntegerAttr":$microbatches,
    // The step's model chunks (--braid-pipeline-stages, read by
    // --braid-pipeline).
    "::mlir::DictionaryAttr":$pipeline,
    // On a pipelined module: each pipeline rank's step function, in rank
    // order; on each such function its rank and the largest number of
    // micro-batches it holds in flight.
    "::mlir::ArrayAttr":$pipeline_entries,
    "::mlir::IntegerAttr":$pipeline_rank,
    "::mlir::IntegerAttr":$peak_live_microbatches,
    // Marks a function that runs one model chunk of a pipeline rank.
    "::mlir::UnitAttr":$pipeline_chunk
  );
  let extraClassDeclaration = [{
    /// Name of the module attribute holding the model's hyper-parameters.
    static constexpr ::llvm::StringLiteral getModelAttrName() {
      return ModelAttrHelper::getNameStr();
    }
  }];
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Braid_InitKind : I32EnumAttr<"InitKind", "initializer of a parameter", [
    I32EnumAttrCase<"Normal", 0, "normal">,
    I32EnumAttrCase<"Zeros", 1, "zeros">,
    I32EnumAttrCase<"Ones", 2, "ones">,
    // Mamba's initialization of its state-space parameters (the numbering is
    // the runtime's braid_init).
    I32EnumAttrCase<"S4DReal", 4, "s4d_real">,
    I32EnumAttrCase<"MambaDt", 5, "mamba_dt">
  ]> {
  let cppNamespace = "::mlir::braid";
  let genSpecializedAttr = 0;
}
def Braid_InitKindAttr : EnumAttr<Braid_Dialect, Braid_InitKind, "init_kind">;

def Braid_Activation : I32EnumAttr<"Activation", "pointwise activation", [
    I32EnumAttrCase<"SiLU", 0, "silu">,
    I32EnumAttrCase<"GELU", 1, "gelu">,
    I32EnumAttrCase<"GELUTanh", 2, "gelu_tanh">,
    I32EnumAttrCase<"Sigmoid", 3, "sigmoid">,
    I32EnumAttrCase<"ReLU", 4, "relu">
  ]> {
  let cppNamespace = "::mlir::braid";
  let genSpecializedAttr = 0;
}
def Braid_ActivationAttr : EnumAttr<Braid_Dialect, Braid_Activation, "activation">;

// What a program's entry function computes (`braid.entry` on a func.func;
// dialects/braid/IR/EntryPoints.h finds them). A training step takes its
// inputs (tokens, labels) and returns the loss, updating the parameters and
// the optimizer state; a forward pass returns the loss without updating
// anything; prefill and decode are the inference programs.
def Braid_EntryKind : I32EnumAttr<"EntryKind", "kind of a program entry point", [
    I32EnumAttrCase<"TrainStep", 0, "train_step">,
    I32EnumAttrCase<"Forward", 1, "forward">,
    I32EnumAttrCase<"Prefill", 2, "prefill">,
    I32EnumAttrCase<"Decode", 3, "decode">
  ]> {
  let cppNamespace = "::mlir::braid";
  let genSpecializedAttr = 0;
}

// Choices of the compiler, defined once: the passes' options, the training
// pipeline's, braid-run's, braid-plan's and its plan file take them as these
// types; their keywords (parsed and printed by the generated symbolize* /
// stringify*, listed by the option parser of BraidEnums.h) are the command
// lines' and plan files' words.

// Activation recompute (--braid-autodiff): what the backward recomputes
// instead of keeping from the forward.
def Braid_Recompute : I32EnumAttr<"Recompute", "activation recompute policy", [
    I32EnumAttrCase<"None", 0, "none">,
    // The attention cores (Korthikanti et al. 2022's selective recompute).
    I32EnumAttrCase<"Selective", 1, "selective">,
    // Every layer's forward, from its input.
    I32EnumAttrCase<"Full", 2, "full">
  ]> {
  let cppNamespace = "::mlir::braid";
  let genSpecializedAttr = 0;
}

// A pipeline schedule (--braid-pipeline, PipelineSchedule.h).
def Braid_ScheduleKind : I32EnumAttr<"ScheduleKind", "pipeline schedule", [
    I32EnumAttrCase<"GPipe", 0, "gpipe">,
    I32EnumAttrCase<"OneFOneB", 1, "1f1b">,
    // 1F1B over virtual stages (Narayanan et al. 2021).
    I32EnumAttrCase<"Interleaved", 2, "interleaved">,
    // ZB-H1 (Qi et al. 2023): the backward split into input and weight
    // gradients, which fill the 1F1B bubble.
    I32EnumAttrCase<"ZeroBubbleH1", 3, "zb-h1">
  ]> {
  let cppNamespace = "::mlir::braid";
  let genSpecializedAttr = 0;
}

// The optimizer of the training step (--braid-optimizer). `none` is the
// pipeline's alone: no backward, no update, the forward step only.
def Braid_OptimizerKind : I32EnumAttr<"OptimizerKind", "optimizer", [
    I32EnumAttrCase<"AdamW", 0, "adamw">,
    I32EnumAttrCase<"SGD", 1, "sgd">,
    I32EnumAttrCase<"None", 2, "none">
  ]> {
  let cppNamespace = "::mlir::braid";
  let genSpecializedAttr = 0;
}

// The element type floats are stored in (the pipeline's dtype,
// --braid-convert-element-type's `to`); f32 is the model as written.
def Braid_Precision : I32EnumAttr<"Precision", "float storage type", [
    I32EnumAttrCase<"F32", 0, "f32">,
    I32EnumAttrCase<"BF16", 1, "bf16">,
    I32EnumAttrCase<"F16", 2, "f16">
  ]> {
  let cppNamespace = "::mlir::braid";
  let genSpecializedAttr = 0;
}

// How --braid-partition shards the weights no annotation places.
def Braid_ShardPlan : I32EnumAttr<"ShardPlan", "sharding of unannotated weights", [
    // Tensor parallel over tp, vocabulary parallel, experts over ep.
    I32EnumAttrCase<"Megatron", 0, "megatron">,
    // Replicated: data parallelism alone.
    I32EnumAttrCase<"Data", 1, "data">
  ]> {
  let cppNamespace = "::mlir::braid";
  let genSpecializedAttr = 0;
}

// Attention whose sequence is split over a cp axis (--braid-partition).
def Braid_CpAttention : I32EnumAttr<"CpAttention", "context-parallel attention", [
    // Keys and values gathered; the queries keep their chunk.
    I32EnumAttrCase<"AllGather", 0, "allgather">,
    // All-to-all from the sequence to the heads (DeepSpeed-Ulysses).
    I32EnumAttrCase<"Ulysses", 1, "ulysses">,
    // Key/value chunks passed around the group (ring attention).
    I32EnumAttrCase<"Ring", 2, "ring">
  ]> {
  let cppNamespace = "::mlir::braid";
  let genSpecializedAttr = 0;
}

// How the sequence is cut over a cp axis (--braid-partition).
def Braid_CpLayout : I32EnumAttr<"CpLayout", "sequence layout over cp", [
    // Zigzag where the model allows it, contiguous chunks elsewhere.
    I32EnumAttrCase<"Auto", 0, "auto">,
    I32EnumAttrCase<"Contiguous", 1, "contiguous">,
    // Rank i holds chunks i and 2cp-1-i, balancing causal attention.
    I32EnumAttrCase<"Zigzag", 2, "zigzag">
  ]> {
  let cppNamespace = "::mlir::braid";
  let genSpecializedAttr = 0;
}

// When --braid-collective-matmul makes a collective a ring of product
// chunks.
def Braid_CollectiveMatmulMode
    : I32EnumAttr<"CollectiveMatmulMode", "collective matmul choice", [
    // Where the cost model predicts the ring faster.
    I32EnumAttrCase<"Auto", 0, "auto">,
    I32EnumAttrCase<"Always", 1, "always">,
    I32EnumAttrCase<"Never", 2, "never">
  ]> {
  let cppNamespace = "::mlir::braid";
  let genSpecializedAttr = 0;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Braid_FloatElement : AnyTypeOf<[F32, BF16, F16]>;
def Braid_FloatTensor : StaticShapeTensorOf<[F32, BF16, F16]>;
def Braid_IndexTensor : StaticShapeTensorOf<[I32, I64]>;
def Braid_AnyTensor : StaticShapeTensorOf<[F32, BF16, F16, I32, I64]>;
def Braid_ScalarFloatTensor : 0DTensorOf<[F32, BF16, F16]>;

#endif // BRAID_DIALECT_BRAID_IR_BRAIDBASE_TD
