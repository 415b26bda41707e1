//===- FramePlan.h - the memory plan of one function's frame ----*- C++ -*-===//
//
// Where each value of one function is stored (MemoryPlan.h): an argument,
// the caller's buffer for a result, a parameter (a value set into it, a view
// of a range of it) or a buffer of the function's frame, placed by liveness.
// MemoryPlan.cpp plans the program's persistent part and walks the call
// graph; this plans each function once its callees are planned.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_ANALYSIS_FRAMEPLAN_H
#define BRAID_DIALECT_BRAID_ANALYSIS_FRAMEPLAN_H

#include "dialects/braid/Analysis/MemoryPlan.h"
#include "dialects/braid/Analysis/PersistentEffects.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MathExtras.h"

#include <memory>

namespace mlir::braid {

/// `bytes` rounded up to a multiple of kBufferAlignment.
inline int64_t alignBuffer(int64_t bytes) { return llvm::alignTo(bytes, kBufferAlignment); }

/// Plans the frame of `func` (one block) at `plan.detail`, every callee of
/// it already in `plan`; `paramOffsets` gives the arena offset of each
/// parameter and state. Emits a located error for what the plan does not
/// support (a second block, ops with regions, a result returned twice or
/// returning an argument or a parameter).
FailureOr<std::unique_ptr<FunctionPlan>>
planFrame(func::FuncOp func, const ProgramPlan &plan, SymbolTable &symbols,
          PersistentEffects &effects, const llvm::StringMap<int64_t> &paramOffsets);

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_ANALYSIS_FRAMEPLAN_H
