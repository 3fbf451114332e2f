//===- OnnxImporter.h - ONNX model -> top dialect -----------------*- C++
//-*-===//
//
// Reads an ONNX model, fixes its input shapes, folds the shape-computing
// subgraphs to constants and builds a `top` module in the form written by
// `tpuc transform`: func @main, one top.Input per graph input, one top.Weight
// per constant tensor a float op consumes, every op named by the first ONNX
// output it produces.
//
// Errors (unreadable model, unsupported operators, attributes we cannot
// honour, shapes that do not fit) are thrown as tpu::Error whose message names
// the file and, where there is one, the node.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_FRONTEND_ONNXIMPORTER_H
#define TPUC_FRONTEND_ONNXIMPORTER_H

#include "tpu/isa/Npz.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace onnx {
class ModelProto;
class TensorProto;
} // namespace onnx

namespace tpuc::frontend {

/// How to import a model.
struct OnnxImportOptions {
  /// Shapes of the graph inputs (initialisers excluded), in graph order.
  /// Empty: every input must have a static shape in the model.
  std::vector<std::vector<int64_t>> inputShapes;
  /// Symbol name of the module; empty: the graph name, else "model".
  std::string modelName;
  /// Value of the module's top.weight_file attribute (a path relative to
  /// the .mlir file). Empty: none yet; the weights stay in the in-memory
  /// store until tpuc::saveWeights() writes them and sets the attribute.
  std::string weightFile;
};

/// What importOnnxModel produced.
struct OnnxImportResult {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  /// Graph input and output names, in the order of @main's arguments and
  /// results (output names are the ONNX names even where the returned value
  /// is an op of another name, e.g. behind an Identity).
  std::vector<std::string> inputNames;
  std::vector<std::string> outputNames;
  /// ONNX element type (onnx::TensorProto::DataType) of each input/output.
  std::vector<int32_t> inputTypes;
  std::vector<int32_t> outputTypes;
};

/// Parses \p path as an ONNX ModelProto. Throws tpu::Error naming the file
/// if it is missing, truncated or not a model.
onnx::ModelProto loadOnnxModel(const std::string &path);

/// Builds the top module of \p model. \p path names the model in messages
/// and locates tensors stored as external data (relative to its directory).
/// The weights are created through tpuc's weight store (Support/Weights.h).
OnnxImportResult importOnnxModel(mlir::MLIRContext &context,
                                 const onnx::ModelProto &model,
                                 const std::string &path,
                                 const OnnxImportOptions &options);

/// loadOnnxModel + importOnnxModel.
OnnxImportResult importOnnxFile(mlir::MLIRContext &context,
                                const std::string &path,
                                const OnnxImportOptions &options);

/// Registers the dialects an imported module uses.
void registerImportDialects(mlir::MLIRContext &context);

/// Converts an ONNX TensorProto (raw or typed data; external data located
/// relative to \p baseDir) to an npz array: float types as F32, BOOL as
/// Bool, other integer types as I64. \p what names it in errors.
::tpu::npz::Array tensorProtoToArray(const onnx::TensorProto &tensor,
                                   const std::string &baseDir,
                                   const std::string &what);

/// One row of the operator dispatch table (OnnxOps.def).
struct OnnxOpInfo {
  llvm::StringRef name;
  int64_t minOpset;
  int64_t maxOpset;
  /// Operand positions whose data must be known at import time (shapes,
  /// axes, pads, scales, ...).
  llvm::ArrayRef<unsigned> constantOperands;
  /// Short note for the support matrix ("" if none).
  llvm::StringRef note;
};

/// Every supported operator, in table order.
llvm::ArrayRef<OnnxOpInfo> getSupportedOnnxOps();
/// The row of \p opType (default ONNX domain) or nullptr.
const OnnxOpInfo *lookupOnnxOp(llvm::StringRef opType);
/// True if operand \p index of \p opType must be a constant.
bool isConstantOperand(llvm::StringRef opType, unsigned index);
/// The support matrix as Markdown (compiler/docs/onnx-support.md).
std::string onnxSupportMatrixMarkdown();

} // namespace tpuc::frontend

#endif // TPUC_FRONTEND_ONNXIMPORTER_H
