//===- EntryPoints.cpp - the programs a braid module declares -------------===//

#include "dialects/braid/IR/EntryPoints.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::braid;

std::optional<EntryKind> mlir::braid::getEntryKind(func::FuncOp func) {
  auto mark = func->getAttrOfType<StringAttr>(kEntryAttrName);
  if (!mark)
    return std::nullopt;
  return symbolizeEntryKind(mark.getValue());
}

void mlir::braid::setEntryKind(func::FuncOp func, EntryKind kind) {
  func->setAttr(kEntryAttrName,
                StringAttr::get(func.getContext(), stringifyEntryKind(kind)));
}

std::optional<EntryKind> mlir::braid::getProgramKind(func::FuncOp func) {
  if (std::optional<EntryKind> kind = getEntryKind(func))
    return kind;
  auto mark = func->getAttrOfType<StringAttr>(kServesAttrName);
  return mark ? symbolizeEntryKind(mark.getValue()) : std::nullopt;
}

void mlir::braid::setServedKind(func::FuncOp func, EntryKind kind) {
  func->setAttr(kServesAttrName,
                StringAttr::get(func.getContext(), stringifyEntryKind(kind)));
}

/// The only public function of `module` with a body, if it has exactly one.
static func::FuncOp implicitEntry(ModuleOp module) {
  func::FuncOp found;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal() || !func.isPublic())
      continue;
    if (found)
      return {};
    found = func;
  }
  return found;
}

SmallVector<func::FuncOp>
mlir::braid::getEntries(ModuleOp module, std::optional<EntryKind> kind) {
  SmallVector<func::FuncOp> entries;
  bool anyMarked = false;
  for (auto func : module.getOps<func::FuncOp>()) {
    std::optional<EntryKind> marked = getEntryKind(func);
    anyMarked |= func->hasAttr(kEntryAttrName);
    if (marked && (!kind || *marked == *kind))
      entries.push_back(func);
  }
  if (anyMarked)
    return entries;
  if (func::FuncOp implicit = implicitEntry(module))
    if (!kind || *kind == EntryKind::TrainStep)
      entries.push_back(implicit);
  return entries;
}

FailureOr<func::FuncOp>
mlir::braid::getUniqueEntry(ModuleOp module, std::optional<EntryKind> kind,
                            StringRef purpose) {
  SmallVector<func::FuncOp> entries = getEntries(module, kind);
  if (entries.size() == 1)
    return entries.front();
  std::string what = kind ? (stringifyEntryKind(*kind) + " entry point").str()
                          : std::string("entry point");
  if (entries.empty())
    return module.emitError(purpose)
           << ": no " << what << " (a public func.func with a body marked "
           << kEntryAttrName << " = \""
           << (kind ? stringifyEntryKind(*kind) : StringRef("train_step"))
           << "\")";
  InFlightDiagnostic diag = module.emitError(purpose)
                            << ": " << entries.size() << " " << what
                            << "s, expected one";
  for (func::FuncOp entry : entries)
    diag.attachNote(entry.getLoc()) << "@" << entry.getSymName();
  return diag;
}

SmallVector<func::FuncOp> mlir::braid::getPrograms(ModuleOp module) {
  auto ranks = module->getAttrOfType<ArrayAttr>(kPipelineEntriesAttrName);
  if (!ranks)
    return getEntries(module);
  SymbolTable symbols(module);
  SmallVector<func::FuncOp> programs;
  for (Attribute rank : ranks)
    if (auto func = symbols.lookup<func::FuncOp>(
            cast<FlatSymbolRefAttr>(rank).getValue()))
      programs.push_back(func);
  return programs;
}

FailureOr<SmallVector<func::FuncOp>>
mlir::braid::getRankSteps(ModuleOp module, std::optional<EntryKind> kind,
                          StringRef purpose) {
  if (module->hasAttr(kPipelineEntriesAttrName))
    return getPrograms(module);
  FailureOr<func::FuncOp> entry = getUniqueEntry(module, kind, purpose);
  if (failed(entry))
    return failure();
  return SmallVector<func::FuncOp>{*entry};
}

FailureOr<func::FuncOp> mlir::braid::getProgram(ModuleOp module, int64_t rank,
                                                StringRef purpose) {
  if (!module->hasAttr(kPipelineEntriesAttrName)) {
    if (rank != 0)
      return module.emitError(purpose)
             << ": pipeline rank " << rank
             << " of a module without a pipeline (braid.pipeline_entries)";
    return getUniqueEntry(module, std::nullopt, purpose);
  }
  SmallVector<func::FuncOp> programs = getPrograms(module);
  if (rank < 0 || rank >= static_cast<int64_t>(programs.size()))
    return module.emitError(purpose)
           << ": pipeline rank " << rank << " of a pipeline of "
           << programs.size() << " ranks";
  return programs[rank];
}

FailureOr<func::FuncOp> mlir::braid::getProgramNamed(ModuleOp module,
                                                     StringRef name,
                                                     StringRef purpose) {
  SmallVector<func::FuncOp> programs = getPrograms(module);
  for (func::FuncOp program : programs)
    if (program.getSymName() == name)
      return program;
  InFlightDiagnostic error = module.emitError(purpose)
                             << ": no program @" << name << "; the module's: ";
  llvm::interleaveComma(programs, error, [&](func::FuncOp program) {
    error << "@" << program.getSymName();
  });
  return failure();
}
