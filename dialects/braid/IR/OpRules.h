//===- OpRules.h - the vocabulary of the ops' own rules ---------*- C++ -*-===//
//
// What an op says about itself through the interfaces of BraidInterfaces.td,
// beside its sharding rule (ShardingRule.h): its cost (OpCostInterface) and
// the runtime calls that execute it (KernelCallOpInterface). Each op family
// implements these next to its ops (ElementwiseOps.cpp, AttentionOps.cpp,
// ...); the planner, the model statistics, the overlap scheduler and the
// emitter read them through the interfaces only.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_OPRULES_H
#define BRAID_DIALECT_BRAID_IR_OPRULES_H

#include "dialects/braid/IR/BraidEnums.h"

#include "mlir/IR/Builders.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mlir::braid {

//===----------------------------------------------------------------------===//
// Cost
//===----------------------------------------------------------------------===//

/// The FLOPs of one execution of an op on its static shapes, split into
/// matmul-class FLOPs (what MFU is measured in) and the rest, and the bytes
/// it keeps for its backward pass.
struct OpCost {
  /// 2 x multiply-accumulates of matrix products (linear, batch_matmul, the
  /// two products inside attention, expert FFNs over their whole buffers).
  /// Attention is counted over the full S x S score matrix, causal or not,
  /// the convention of Megatron-LM and PaLM's MFU.
  int64_t matmulFlops = 0;
  /// Everything else: norms, activations, softmax, RoPE, conv1d, the
  /// selective scan, the loss. Per-element counts are documented with each
  /// op's rule.
  int64_t otherFlops = 0;
  /// Bytes of activations the op keeps for its backward pass beyond its
  /// results (e.g. attention's per-row log-sum-exp, flash-attention style).
  int64_t savedBytes = 0;
};

/// Bytes of one element of `type` (f32: 4, bf16: 2, i32: 4, ...).
int64_t getElementBytes(Type type);

/// Bytes of a tensor of static shape.
int64_t getTensorBytes(Type type);

/// Elements of a shaped value.
int64_t getNumElements(Value value);

/// Per-element FLOPs of a pointwise function, counting exp, erf, tanh and
/// division as one FLOP each.
int64_t getActivationFlops(Activation activation);

/// `act(x)` as a unary braid op.
Value createActivation(OpBuilder &b, Location loc, Activation activation,
                       Value x);

//===----------------------------------------------------------------------===//
// Kernel calls
//===----------------------------------------------------------------------===//

/// One argument of a runtime call, as the op describes it: what it is (a
/// tensor's buffer, a parameter's, a size, a flag, an element type, ...),
/// not how it prints. The emitter decides the spelling (an arena address, an
/// exact literal, an index expression of the rank's coordinates).
class KernelArg {
public:
  enum class Kind {
    Buffer,  ///< the buffer of a value; `nullptr` for a null (absent) value
    Symbol,  ///< the arena address of a parameter or state, by name
    Integer, ///< a size or a 0/1 flag
    Real,    ///< a double that reads back exactly
    DType,   ///< the runtime's name of an element type (BRAID_F32, ...)
    Shape,   ///< a static array of integers in the function body
    Index,   ///< the expression of an index value (a rank's offset)
    Enum,    ///< `static_cast<C enum type>(N)`
    Struct,  ///< a C params struct of named scalars, passed by const pointer
  };

  /// The buffer of `value`.
  KernelArg(Value value) : kind(Kind::Buffer), value(value) {}
  /// An integer; `true`/`false` print as 1/0.
  KernelArg(int64_t integer) : kind(Kind::Integer), integer(integer) {}
  KernelArg(int integer) : KernelArg(static_cast<int64_t>(integer)) {}
  KernelArg(bool flag) : KernelArg(static_cast<int64_t>(flag)) {}
  /// Doubles must say how they print (`real`), not truncate silently.
  KernelArg(double) = delete;

  /// The buffer of `value` as `cType` (`static_cast<float *>(...)`).
  static KernelArg buffer(Value value, StringRef cType);
  /// The arena address of the parameter or state `name` (`cType` as above,
  /// none when empty).
  static KernelArg symbol(StringRef name, StringRef cType = "");
  static KernelArg real(double value);
  static KernelArg dtype(Type type);
  static KernelArg shape(ArrayRef<int64_t> values);
  static KernelArg index(Value value);
  static KernelArg enumerator(StringRef cType, int64_t value);
  /// The address of a C struct `cType` (a kernel's params struct, e.g.
  /// braid_attention_params) built in the call from `fields`, named as the
  /// header names them, in its order; fields left out are zero. Fields are
  /// scalars: Integer for the int64_t ones, Enum for narrower integers, Real.
  static KernelArg params(StringRef cType,
                          ArrayRef<std::pair<StringRef, KernelArg>> fields);

  /// This address advanced by `index` elements (an index value) of
  /// `elementBytes` bytes each; without `elementBytes`, those of the symbol's
  /// declared element type (a ZeRO range of a parameter or state).
  KernelArg advancedBy(Value index,
                       std::optional<int64_t> elementBytes = {}) const;

  Kind kind;
  /// Buffer and Index: the value.
  Value value;
  /// Integer and Enum: the number.
  int64_t integer = 0;
  double realValue = 0.0;
  /// DType: the element type (of a shaped type).
  Type type;
  /// Symbol: the name; Enum: the C enum type; Struct: the C struct type.
  std::string text;
  /// Buffer and Symbol: the C pointer type to cast to, none when empty.
  std::string cType;
  /// Shape: the integers.
  SmallVector<int64_t> values;
  /// For an advanced address: the index value and the element size.
  Value offset;
  std::optional<int64_t> offsetElementBytes;
  /// Struct: the fields' names and values, shared by the argument's copies
  /// (a pointer keeps KernelArg, and so KernelCall, small).
  std::shared_ptr<const std::vector<std::pair<std::string, KernelArg>>> fields;

private:
  explicit KernelArg(Kind kind) : kind(kind) {}
};

/// One call of a runtime function (`braid_k_*`, `braid_rt_copy`) whose first
/// argument is the runtime handle; an op runs as a list of them (a kernel
/// that accumulates in place needs its accumulators copied first).
struct KernelCall {
  std::string callee;
  SmallVector<KernelArg> args;
  KernelCall(StringRef callee, std::initializer_list<KernelArg> args)
      : callee(callee.str()), args(args) {}
  KernelCall(StringRef callee, SmallVector<KernelArg> args)
      : callee(callee.str()), args(std::move(args)) {}
};

/// `braid_rt_copy` of all of `from` into `to` (same type).
KernelCall copyCall(Value to, Value from);

/// A double as a C++ literal that reads back exactly (%.17g).
std::string formatReal(double value);

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_IR_OPRULES_H
