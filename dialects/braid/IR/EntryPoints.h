//===- EntryPoints.h - the programs a braid module declares -----*- C++ -*-===//
//
// A module's programs are its entry functions, each marked with
// `braid.entry = "<kind>"` (EntryKind: train_step, forward, prefill,
// decode). Passes, the memory plan and the emitter find them here rather than
// by a function name given as an option, so that one module can hold a
// training step beside inference programs.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_ENTRYPOINTS_H
#define BRAID_DIALECT_BRAID_IR_ENTRYPOINTS_H

#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/braid/IR/BraidOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>

namespace mlir::braid {

/// The kind `func` is marked with, or nullopt when it is not marked (or the
/// mark names no kind: the dialect's verifier rejects that).
std::optional<EntryKind> getEntryKind(func::FuncOp func);

/// Marks `func` as an entry point of `kind`.
void setEntryKind(func::FuncOp func, EntryKind kind);

/// The kind of program `func`'s body runs in: its entry kind, or the kind a
/// private callee serves (braid.serves); nullopt when neither says.
std::optional<EntryKind> getProgramKind(func::FuncOp func);

/// Marks the private function `func` as called from programs of `kind` only.
void setServedKind(func::FuncOp func, EntryKind kind);

/// The entry points of `module` in module order, only those of `kind` when
/// given. A module that marks no function (IR written by hand, as a C
/// program's `main` is found by convention) has one implicit training step:
/// its only public function with a body, if it has exactly one.
SmallVector<func::FuncOp> getEntries(ModuleOp module,
                                     std::optional<EntryKind> kind = std::nullopt);

/// The one entry point of `module` (of `kind`, when given). Otherwise a
/// located error that begins with `purpose` (the pass flag or the tool, which
/// the user knows) and says how many there are and how to mark one.
FailureOr<func::FuncOp> getUniqueEntry(ModuleOp module,
                                       std::optional<EntryKind> kind,
                                       StringRef purpose);

/// The step functions of a module's ranks: a pipelined module's ranks'
/// entries in rank order (`braid.pipeline_entries`), else its one entry point
/// (of `kind`, when given; getUniqueEntry's error beginning with `purpose`
/// when there is not exactly one).
FailureOr<SmallVector<func::FuncOp>>
getRankSteps(ModuleOp module, std::optional<EntryKind> kind, StringRef purpose);

/// The program of pipeline rank `rank` (getPrograms); in a module without a
/// pipeline, rank 0 is its one entry point. A located error beginning with
/// `purpose` otherwise.
FailureOr<func::FuncOp> getProgram(ModuleOp module, int64_t rank,
                                   StringRef purpose);

/// The program named `name` among getPrograms(module) (an inference
/// module's `prefill` or `decode`, a pipeline rank's step). A located error
/// beginning with `purpose` that lists the programs otherwise.
FailureOr<func::FuncOp> getProgramNamed(ModuleOp module, StringRef name,
                                        StringRef purpose);

/// The programs the emitter and the runtime run: a pipelined module's ranks'
/// entries in rank order (`braid.pipeline_entries`), else every entry point
/// of the module.
SmallVector<func::FuncOp> getPrograms(ModuleOp module);

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_IR_ENTRYPOINTS_H
