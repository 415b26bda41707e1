//===- Registration.cpp - the --braid-to-cpp translation ------------------===//

#include "braid/InitAllDialects.h"
#include "braid/Target/Cpp.h"

#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

/// Writes every program of `module` to `dir`/<name>.cpp: one parse of the
/// module for all of a pipeline's ranks, rather than one per rank. Errors are
/// reported at the module's location without printing it (a pipelined
/// module is megabytes).
static mlir::LogicalResult writePrograms(mlir::ModuleOp module,
                                         llvm::StringRef dir,
                                         const braid::CppEmitOptions &options) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return mlir::emitError(module.getLoc(), "cannot write the programs to '")
           << dir << "': " << ec.message();
  mlir::FailureOr<llvm::SmallVector<braid::EmittedProgram>> programs =
      braid::emitProgramsAsCpp(module, options);
  if (mlir::failed(programs))
    return mlir::failure();
  for (const braid::EmittedProgram &program : *programs) {
    std::string fileName = program.name + ".cpp";
    // A symbol may be any string; a file name of the directory may not.
    if (llvm::sys::path::filename(fileName) != fileName)
      return mlir::emitError(module.getLoc(), "program @")
             << program.name << " has no file name of its own in '" << dir
             << "'";
    llvm::SmallString<128> path(dir);
    llvm::sys::path::append(path, fileName);
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> file =
        mlir::openOutputFile(path, &error);
    if (!file)
      return mlir::emitError(module.getLoc(), "cannot write program @")
             << program.name << ": " << error;
    file->os() << program.source;
    file->keep();
  }
  return mlir::success();
}

void braid::registerToCppTranslation() {
  // Registered with the translation, not when the library loads: braid-run
  // and the C API link the emitter without these flags, and braid-translate
  // registers them after hiding LLVM's own from --help.
  static llvm::cl::opt<std::string> programOption(
      "braid-program",
      llvm::cl::desc("The program to emit when the module has several: an entry "
                     "point (braid.entry) or a pipeline rank's step"),
      llvm::cl::init(""));
  static llvm::cl::opt<std::string> outputDirOption(
      "braid-output-dir",
      llvm::cl::desc("Emit every program of the module (its pipeline ranks or "
                     "entry points), each to <dir>/<program>.cpp, instead of "
                     "one program to the output"),
      llvm::cl::value_desc("dir"), llvm::cl::init(""));
  static llvm::cl::opt<bool> rollOption(
      "braid-roll-repeats",
      llvm::cl::desc("Print repeated op groups (layers, micro-batches) as loops "
                     "over tables of their literals"),
      llvm::cl::init(true));
  mlir::TranslateFromMLIRRegistration registration(
      "braid-to-cpp", "emit a braid program as C++/CUDA source for the runtime",
      [](mlir::Operation *op, llvm::raw_ostream &os) -> mlir::LogicalResult {
        auto module = llvm::dyn_cast<mlir::ModuleOp>(op);
        if (!module)
          return op->emitError("expected a builtin.module");
        braid::CppEmitOptions options;
        options.rollRepeats = rollOption;
        if (outputDirOption.empty())
          return braid::emitProgramAsCpp(module, programOption, os, options);
        if (!programOption.empty())
          return mlir::emitError(module.getLoc(),
                                 "--braid-program names one program to emit "
                                 "to the output; --braid-output-dir emits "
                                 "them all: give one of them");
        return writePrograms(module, outputDirOption, options);
      },
      [](mlir::DialectRegistry &registry) {
        braid::registerAllDialects(registry);
      });
}
