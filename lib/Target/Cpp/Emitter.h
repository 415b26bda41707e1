//===- Emitter.h - internals of the C++/CUDA emitter ------------*- C++ -*-===//
//
// Shared by the emitter's files: EmitCpp.cpp (program and functions),
// EmitDescriptor.cpp (the descriptor the runtime reads), Code.cpp and
// EmitRoll.cpp (statements as data; repeated ones printed as loops),
// EmitFusion.cpp (generated elementwise kernels), EmitKernelCalls.cpp (the
// runtime calls each op describes through KernelCallOpInterface),
// EmitParamAccess.cpp (ZeRO's parameter ranges), EmitSpmd.cpp
// (shard.all_slice, bias_add, slice and unslice; the sharding of tensors in
// SPMD programs), EmitDist.cpp (transfers, coordinates and index
// arithmetic).
//
// As CIRCT's ExportVerilog, emission decides nothing: the IR and the memory
// plan hold every decision, and each op's printer turns it into statements
// (Code, with its literals as data), which the function emitter prints once
// the function is done.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_TARGET_CPP_EMITTER_H
#define BRAID_LIB_TARGET_CPP_EMITTER_H

#include "Code.h"

#include "braid/Target/Cpp.h"
#include "dialects/braid/Analysis/MemoryPlan.h"
#include "dialects/braid/IR/BraidInterfaces.h"
#include "dialects/dist/IR/DistDialect.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace braid::cpp {
using namespace mlir;
using namespace mlir::braid;

/// The runtime's name of an element type (BRAID_F32, ...).
std::string dtypeName(Type type);
/// The C++ storage type of a float element type in generated kernels.
std::string storageType(Type type);
/// A double literal that reads back exactly.
std::string literal(double value);
/// A C string literal.
std::string quoted(StringRef text);
/// A C identifier for a symbol name (`layers.0.x` -> `layers_0_x`).
std::string identifier(StringRef name);
int64_t numElements(Value value);
ArrayRef<int64_t> shapeOf(Value value);

/// Reads the `braid.global_shape` / `braid.split` attributes among `attrs`
/// (a param's, a state's or a step argument's) of a tensor of local type
/// `type`: nullopt when it has none, failure (reported at `anchor`) when they
/// do not describe a sharding of it over the program grid's axes.
FailureOr<std::optional<ShardedTensor>> readSharding(DictionaryAttr attrs,
                                                     RankedTensorType type,
                                                     Operation *anchor);
/// Whether `range` is a ZeRO range of a tensor of type `whole`: a flat part
/// of it, one of `group`'s.
bool isZeroRange(RankedTensorType range, RankedTensorType whole,
                 const GridGroup &group);
/// Per dimension of `tensor`, the grid axes splitting it joined with ","
/// ("" if none): braid_tensor_desc's split_axes.
SmallVector<std::string> splitSpecs(const ShardedTensor &tensor,
                                    const Grid &grid);

/// True for the ops EmitSpmd.cpp emits: shard ops (collectives, which it
/// rejects: they reach it lowered to dist), bias_add, slice and unslice.
bool isSpmdOp(Operation *op);
/// An op computing an index (dist.coordinate, arith on indices), which the
/// uses of its value print as an expression.
bool isIndexOp(Operation *op);
/// Every dist op: transfers, waits, micro-batches.
bool isDistOp(Operation *op);

class ProgramEmitter {
public:
  ProgramEmitter(ModuleOp module, ProgramPlan &plan,
                 const CppEmitOptions &options)
      : module(module), plan(plan), options(options), symbols(module) {}

  LogicalResult emit(raw_ostream &os);

  /// Definitions of generated kernels, emitted before every function.
  std::string kernels;
  unsigned nextKernel = 0;
  /// Each generated functor's name, by its body (the computation it runs).
  llvm::StringMap<std::string> kernelNames;
  ModuleOp module;
  ProgramPlan &plan;
  CppEmitOptions options;
  /// The module's symbols by name, hashed: the descriptor and the dumps look
  /// up a parameter per persistent tensor and per gradient.
  SymbolTable symbols;
  /// The grid the program was partitioned for ("dp=2,tp=2"), empty without
  /// a shard.grid.
  std::string grid;
  /// Context parallelism with zigzag balancing: the grid axis whose splits
  /// hold sequences in zigzag order (the module's braid.zigzag_axis).
  std::string zigzagAxis;
  /// The sharded parameters and states, by name.
  llvm::StringMap<ShardedTensor> shardings;
  /// The group of each parameter a ZeRO update shards.
  llvm::StringMap<GridGroup> zeroGroups;

  /// Pipelined programs (one per pipeline rank, emitted from one module):
  /// this program's rank on the pp axis, the communicators every program of
  /// the run creates (in this order) and the persistent tensors a lower rank
  /// holds too and dumps.
  std::optional<int64_t> pipelineRank;
  /// Whether the ranks lie along a pp axis of the grid (micro-batching
  /// alone is a pipeline of one rank, on every rank).
  bool onPipelineAxis = false;
  SmallVector<std::string> commGroups;
  llvm::StringSet<> mirrors;

  /// Whether values computed in `func` are announced for dumps: in a
  /// pipelined program only the step's own (its chunk functions run once
  /// per micro-batch).
  bool announcesIn(func::FuncOp func) const {
    return !pipelineRank || func == plan.entry;
  }

  /// The sharding a gradient dump announces for the value named `name` of
  /// `type`: a `grad.NAME` of sharded parameter NAME's local shape, or of its
  /// ZeRO range.
  std::optional<ShardedTensor> gradSharding(StringRef name,
                                           RankedTensorType type);
  /// The sharding an activation's dump announces: where the partitioner
  /// recorded the op result's place in its global tensor
  /// (`braid.result_layouts`) and it still matches `type`; `partial` gets
  /// the group a partial sum's terms are summed over ("" if none).
  std::optional<ShardedTensor> activationSharding(Value value,
                                                 RankedTensorType type,
                                                 std::string *partial);
  /// A gradient that is a ZeRO range of a sharded parameter's block: the
  /// ZeRO group and the block's sharding (braid_rt_value_zero_sharded).
  struct ZeroBlockGrad {
    GridGroup group;
    ShardedTensor block;
    SmallVector<int64_t> blockShape;
  };
  std::optional<ZeroBlockGrad> zeroBlockGrad(StringRef name, RankedTensorType type);
  /// The program's grid (set by collectSpmd when it has one).
  std::optional<Grid> devices;

private:
  LogicalResult emitDescriptor(raw_ostream &os);
  /// Fills `grid`, `shardings` and `zeroGroups`.
  LogicalResult collectSpmd();
};

class FunctionEmitter {
public:
  FunctionEmitter(ProgramEmitter &program, const FunctionPlan &fp)
      : program(program), fp(fp) {}

  LogicalResult emit(raw_ostream &os);

private:
  ProgramEmitter &program;
  const FunctionPlan &fp;
  /// What the body declares before its statements: static arrays, the
  /// roller's tables, the transfers' event slots.
  std::string declarations;
  /// The body's statements in order: a line each, a call's block whole.
  SmallVector<Code> statements;
  unsigned nextArray = 0, nextTable = 0;
  /// The static arrays of the body, by content.
  llvm::StringMap<std::string> arrays;
  /// The event slot of each transfer's token (taken by its start).
  llvm::DenseMap<Value, unsigned> events;

  /// Appends the statement `code;`.
  void addStatement(const Code &code);
  /// The pointer expression of a stored value.
  Code ptr(Value value);
  /// The name of a value for traces and dumps.
  std::string nameOf(Value value);
  /// The variable holding the runtime event of a transfer's `token`.
  Code event(Value token);
  /// A static array of int64 in the body; returns its name.
  std::string array(ArrayRef<int64_t> values);
  /// A static array of C strings in the body; returns its name.
  std::string strings(ArrayRef<std::string> values);
  /// This rank's coordinate over `group` (an expression).
  Code coordinate(const GridGroup &group);
  /// The dumps' announcements of what `op` computed (EmitAnnounce.cpp).
  void announceResults(Operation &op);
  /// Makes a dump announce `result` (braid_rt_value, or
  /// braid_rt_value_sharded for a sharded gradient) under its name, inside
  /// the call path's scope or, `topLevel`, as a value of the step itself.
  void announce(Value result, bool topLevel = false);
  /// The call of `kernel` (braid_k_slice, braid_k_unslice, braid_k_place)
  /// copying between `from` and `to` the block `block` of `local` rows
  /// along `dim` of a tensor of shape `whole`.
  Code blockCall(StringRef kernel, Value from, Value to,
                 ArrayRef<int64_t> whole, int64_t dim, int64_t local,
                 const Code &block);
  /// Writes `calls` bracketed for the trace.
  void emitBracketed(Operation *op, ArrayRef<Code> calls);

  LogicalResult emitOp(Operation *op);
  /// The runtime calls an op describes (EmitKernelCalls.cpp).
  LogicalResult emitKernelCalls(KernelCallOpInterface op);
  FailureOr<Code> printKernelArg(const KernelArg &arg, Operation *op);
  FailureOr<Code> printParams(const KernelArg &arg, Operation *op);
  /// get_param_range and set_param (EmitParamAccess.cpp).
  LogicalResult emitParamAccess(Operation *op);
  LogicalResult emitSpmdOp(Operation *op);
  LogicalResult emitFusedGroup(Operation *root);
  LogicalResult emitCall(func::CallOp call);
  std::string callScope(func::CallOp call);

  /// Dist ops, a method per family (EmitDist.cpp).
  LogicalResult emitDistOp(Operation *op);
  /// all_reduce, all_gather, reduce_scatter, all_to_all, broadcast.
  LogicalResult emitCollective(Operation *op);
  LogicalResult emitShift(dist::ShiftOp shift);
  /// send, recv.
  LogicalResult emitPeerTransfer(Operation *op);
  LogicalResult emitWait(dist::WaitOp wait);
  /// assemble, block: blocks at the rank's coordinate.
  LogicalResult emitBlockCopy(Operation *op);
  /// pack, unpack: a bucket's tensors in and out.
  LogicalResult emitBucketCopy(Operation *op);
  LogicalResult emitMicrobatch(dist::MicrobatchOp microbatch);
  /// `ev[k] = braid_<fn>(rt, <the communicator of group>, <args>)` after
  /// the `prelude` statements, bracketed for the trace.
  void emitTransferStart(Operation *op, const GridGroup &group, StringRef fn,
                         const Code &args, ArrayRef<Code> prelude = {});
  /// The C++ expression of an index value: a dist.coordinate or arith
  /// arithmetic over them (EmitDist.cpp); such ops emit no statement.
  FailureOr<Code> indexExpr(Value value);
};

} // namespace braid::cpp

#endif // BRAID_LIB_TARGET_CPP_EMITTER_H
