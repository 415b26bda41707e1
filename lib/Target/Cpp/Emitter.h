//===- Emitter.h - internals of the C++/CUDA emitter ------------*- C++ -*-===//
//
// Shared by the emitter's files: EmitCpp.cpp (program and functions),
// EmitFusion.cpp (generated elementwise kernels), EmitKernelCalls.cpp (calls
// of the runtime's kernels).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_TARGET_CPP_EMITTER_H
#define BRAID_LIB_TARGET_CPP_EMITTER_H

#include "dialects/braid/Analysis/MemoryPlan.h"

#include "mlir/IR/BuiltinOps.h"
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

class FunctionEmitter;

class ProgramEmitter {
public:
  ProgramEmitter(ModuleOp module, ProgramPlan &plan)
      : module(module), plan(plan) {}

  LogicalResult emit(raw_ostream &os);

  /// Definitions of generated kernels, emitted before every function.
  std::string kernels;
  unsigned nextKernel = 0;
  ModuleOp module;
  ProgramPlan &plan;

private:
  LogicalResult emitDescriptor(raw_ostream &os);
};

class FunctionEmitter {
public:
  FunctionEmitter(ProgramEmitter &program, const FunctionPlan &fp)
      : program(program), fp(fp) {}

  LogicalResult emit(raw_ostream &os);

private:
  ProgramEmitter &program;
  const FunctionPlan &fp;
  std::string body;
  unsigned nextArray = 0;

  /// The pointer expression of a stored value.
  std::string ptr(Value value);
  /// The name of a value for traces and dumps.
  std::string nameOf(Value value);
  /// A static array of int64 in the body; returns its name.
  std::string array(ArrayRef<int64_t> values);

  LogicalResult emitOp(Operation *op, raw_ostream &os);
  LogicalResult emitKernelCall(Operation *op, raw_ostream &os);
  LogicalResult emitFusedGroup(Operation *root, raw_ostream &os);
  LogicalResult emitCall(func::CallOp call, raw_ostream &os);
  std::string callScope(func::CallOp call);
};

} // namespace braid::cpp

#endif // BRAID_LIB_TARGET_CPP_EMITTER_H
