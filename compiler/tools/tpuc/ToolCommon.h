//===- ToolCommon.h - What the tpuc subcommands share ------------*- C++ -*-===//
//
// Reading an .mlir file into a module (with its diagnostics printed at their
// file locations) and feeding an input .npz or image to the interpreter.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_TOOLS_TPUC_TOOLCOMMON_H
#define TPUC_TOOLS_TPUC_TOOLCOMMON_H

#include "tpu/isa/Bmodel.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tpu::npz {
class Npz;
struct InputSpec;
}
namespace tpuc {
class ModuleInterpreter;
struct CaliTable;
struct QuantTable;
}

namespace tpuc::tool {

/// An MLIR context with every tpuc dialect loaded.
std::unique_ptr<mlir::MLIRContext> createContext();

/// A parsed .mlir file. The source buffer and the diagnostic handler stay
/// alive as long as the module, so that later passes report errors at
/// their file locations too.
struct ParsedModule {
  llvm::SourceMgr sourceMgr;
  /// Where the diagnostics go (null: llvm::errs()); set before parsing.
  llvm::raw_ostream *diagnosticStream = nullptr;
  std::unique_ptr<mlir::SourceMgrDiagnosticHandler> diagnostics;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

/// Reads and parses \p path into \p out. With \p requireTop, a module whose
/// top.state is not TOP_F32 is refused. Returns the error message naming
/// the file, empty on success.
std::string parseModule(mlir::MLIRContext &context, const std::string &path,
                        bool requireTop, ParsedModule &out);

/// parseModule of text already in memory (\p buffer, named \p path in
/// messages and locations).
std::string parseModuleBuffer(mlir::MLIRContext &context,
                              std::unique_ptr<llvm::MemoryBuffer> buffer,
                              const std::string &path, bool requireTop,
                              ParsedModule &out);

/// parseModule, then loads the module's weights (tpuc::loadWeights).
/// Returns the error message naming the file, empty on success.
std::string loadModule(mlir::MLIRContext &context, const std::string &path,
                       bool requireTop, ParsedModule &out);

/// "" when every weight op of \p module (read from \p path) has its data in
/// the module's loaded weight set (tpuc::loadWeights), else the error naming
/// the first weight without data and the weight file it was looked for in.
std::string checkWeightsPresent(mlir::ModuleOp module, const std::string &path);

/// Throws tpu::Error naming \p path and the tensor when one of \p module's
/// tensors (as float32) is larger than this machine's memory: called before
/// interpreting a module, which would otherwise allocate until killed.
void checkFitsHostMemory(mlir::ModuleOp module, const std::string &path);

/// What the inputs of a top module (its top.Input ops) expect of an input
/// .npz: name, shape and float32.
std::vector<::tpu::npz::InputSpec> inputSpecs(mlir::ModuleOp module);

/// An error naming the first of \p paths (each called "output") that is an
/// existing directory, whose directory does not exist, or that is the file
/// of another output or of one of \p inputs; empty when all can be written
/// (isa::bmodel::checkOutputPaths). Tools call it before writing anything.
std::string
checkOutputPaths(const std::vector<std::string> &paths,
                 const std::vector<::tpu::isa::bmodel::NamedPath> &inputs = {});

/// The inputs of a tool that reads the module at \p modulePath, for
/// checkOutputPaths: the module, called \p what ("the module", "the
/// model"), and the weight file its text names (top.weight_file, beside the
/// module; none when the first 64 KiB of the file name none: MLIR bytecode,
/// a module without weights), "<what>'s weight file"; then \p others.
std::vector<::tpu::isa::bmodel::NamedPath>
moduleInputs(const std::string &modulePath, const std::string &what,
             std::vector<::tpu::isa::bmodel::NamedPath> others = {});

/// An error naming the first tensor of \p module whose byte size at
/// \p elemBytes per element overflows or exceeds \p limit (described as
/// \p limitName, e.g. "global memory"); empty when all fit.
std::string checkTensorSizes(mlir::ModuleOp module, uint64_t elemBytes,
                             uint64_t limit, const std::string &limitName);

/// "" if the calibration table \p t fits \p module: every tensor the table
/// names is a tensor of the module (a table of another model is refused,
/// naming up to five of the strangers), and the module's inputs are in it.
/// A tensor INT8 needs and the table lacks is found by the lowering, which
/// runs that op in float instead and lists it.
std::string checkCaliTable(mlir::ModuleOp module, const CaliTable &t);

/// The tables of one compile (tpuc deploy, and the in-memory compile of
/// explore and regress): the quantize table at \p qtablePath (none if
/// empty), checked against the module (errors end with " (modelName)"), and
/// the calibration table at \p caliPath, checked with checkCaliTable, or,
/// without a path, the one a model imported with its own quantisation
/// carries (a quantised TFLite model's top.quant_table). Returns the error
/// message, empty on success.
std::string loadCompileTables(mlir::ModuleOp module,
                              const std::string &modelName,
                              const std::string &qtablePath,
                              const std::string &caliPath,
                              std::optional<QuantTable> &qtable,
                              std::optional<CaliTable> &cali);

/// "none" for no names, else "a, b, c".
std::string joinNames(const std::vector<std::string> &names);

/// The message for required arguments some of which are missing: "missing
/// X and Y (SUBCOMMAND needs A, B and C; see tpuc SUBCOMMAND --help)", or ""
/// when none is. \p required: each argument's name and whether it was given.
std::string
missingRequired(const std::string &subcommand,
                const std::vector<std::pair<std::string, bool>> &required);

/// Sets every input of \p interpreter from the array of the same name in
/// \p inputs (read from \p inputPath), after tpu::npz::checkInputs (the
/// rule of every tool: one float32 array per input with its shape, no other
/// array). Throws tpu::Error naming the file and the array.
void setInputs(ModuleInterpreter &interpreter, const ::tpu::npz::Npz &inputs,
               const std::string &inputPath);

/// Sets the one input of \p interpreter from the image \p imagePath
/// through \p module's top.preprocess (mean 0, scale 1, rgb, nchw when it
/// records none; tpuc/Support/Preprocess.h) and returns that input as an
/// .npz (TPU-MLIR's _in_f32.npz). Throws tpu::Error naming the file: a
/// model with other than one input, an unreadable record, an image that
/// does not decode, an input the preprocessing does not fit.
::tpu::npz::Npz setImageInput(ModuleInterpreter &interpreter,
                              mlir::ModuleOp module,
                              const std::string &imagePath);

} // namespace tpuc::tool

#endif // TPUC_TOOLS_TPUC_TOOLCOMMON_H
