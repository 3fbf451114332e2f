//===- ToolCommon.h - What the tpuc subcommands share ------------*- C++ -*-===//
//
// Reading an .mlir file into a module (with its diagnostics printed at their
// file locations) and feeding an input .npz to the interpreter.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_TOOLS_TPUC_TOOLCOMMON_H
#define TPUC_TOOLS_TPUC_TOOLCOMMON_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/SourceMgr.h"

#include <memory>
#include <string>
#include <vector>

namespace tpu::npz {
class Npz;
}
namespace tpuc {
class ModuleInterpreter;
}

namespace tpuc::tool {

/// An MLIR context with every tpuc dialect loaded.
std::unique_ptr<mlir::MLIRContext> createContext();

/// A parsed .mlir file. The source buffer and the diagnostic handler stay
/// alive as long as the module, so that later passes report errors at
/// their file locations too.
struct ParsedModule {
  llvm::SourceMgr sourceMgr;
  std::unique_ptr<mlir::SourceMgrDiagnosticHandler> diagnostics;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

/// Reads and parses \p path into \p out. With \p requireTop, a module whose
/// top.state is not TOP_F32 is refused. Returns the error message naming
/// the file, empty on success.
std::string parseModule(mlir::MLIRContext &context, const std::string &path,
                        bool requireTop, ParsedModule &out);

/// parseModule, then loads the module's weights (tpuc::loadWeights).
/// Returns the error message naming the file, empty on success.
std::string loadModule(mlir::MLIRContext &context, const std::string &path,
                       bool requireTop, ParsedModule &out);

/// "none" for no names, else "a, b, c".
std::string joinNames(const std::vector<std::string> &names);

/// Sets every input of \p interpreter from the array of the same name in
/// \p inputs (read from \p inputPath). Throws tpu::Error naming the file
/// and the input when one is missing or misshapen.
void setInputs(ModuleInterpreter &interpreter, const ::tpu::npz::Npz &inputs,
               const std::string &inputPath);

} // namespace tpuc::tool

#endif // TPUC_TOOLS_TPUC_TOOLCOMMON_H
