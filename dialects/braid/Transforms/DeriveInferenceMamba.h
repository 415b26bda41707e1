//===- DeriveInferenceMamba.h - Mamba layers in inference programs -*- C++ -*-===//
//
// Private to dialects/braid/Transforms. --braid-derive-inference threads a
// program's persistent states through the layer functions; a Mamba mixer's
// are its convolution's last inputs and its selective scan's h, per
// sequence, which the ops here carry from prefill to each decode step.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_TRANSFORMS_DERIVEINFERENCEMAMBA_H
#define BRAID_DIALECT_BRAID_TRANSFORMS_DERIVEINFERENCEMAMBA_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Operation.h"

#include <string>

namespace mlir::braid {

/// Whether `op` carries a state per sequence between inference calls
/// (braid.conv1d, braid.selective_scan).
bool carriesMambaState(Operation *op);

/// Whether `f` or a function it calls has an op that carries a Mamba state.
bool hasMambaState(func::FuncOp f, SymbolTable &symbols);

/// Whether `f`, or a function it calls (through func.call, recursively),
/// holds an op that `matches`.
bool reachesOp(func::FuncOp f, SymbolTable &symbols,
               llvm::function_ref<bool(Operation *)> matches);

/// The state `op` (a braid.conv1d or braid.selective_scan of a program of
/// `batch` sequences) carries: its name within the layer ("conv" for the
/// convolution's last K-1 inputs [B, K-1, C], "ssm" for the scan's f32 h
/// [B, Di, N]) and its type.
std::pair<std::string, RankedTensorType> mambaStateOf(Operation *op,
                                                      int64_t batch);

/// Replaces `op` by its step over each sequence's new rows from `state`,
/// updated in place (braid.conv_step, braid.scan_step) at each sequence's
/// `positions`; `lastRows` is each row's last real row (prefill; with a
/// paged cache also decode, -1: idle), absent in decode; `slots` (a paged
/// prefill) the state slot each row advances.
void replaceWithStep(Operation *op, Value state, Value positions,
                     Value lastRows, Value slots = Value());

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_TRANSFORMS_DERIVEINFERENCEMAMBA_H
