//===- TfliteImporter.h - TFLite model -> top dialect -------------*- C++ -*-===//
//
// Reads a TensorFlow Lite flatbuffer (checked by the flatbuffers verifier and
// lib/Frontend/Tflite/TfliteReader before anything is used) and builds the
// same `top` module `tpuc transform` builds for ONNX: the model is
// translated operator by operator (TfliteOps.def) into an in-memory ONNX
// graph in NCHW form, which the ONNX importer then imports (its const
// folding, shape inference and op builders). NHWC activations are converted
// where a layout-bound operator (convolution, pooling, resize) needs NCHW;
// elementwise operators follow their input's layout, so the conversions
// between consecutive convolutions cancel.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_FRONTEND_TFLITEIMPORTER_H
#define TPUC_FRONTEND_TFLITEIMPORTER_H

#include "tpuc/Frontend/OnnxImporter.h"
#include "tpuc/Support/CaliTable.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace tpuc::frontend {

/// True if \p path names a TFLite model: the .tflite extension, or the TFL3
/// identifier at byte 4.
bool isTfliteFile(const std::string &path);

/// Translates the TFLite model \p path into an ONNX model (opset 14) whose
/// graph computes the same function in NCHW form. Throws tpu::Error naming
/// the file and operator for anything unreadable or unsupported; every
/// unsupported operator is listed in one error.
onnx::ModelProto translateTfliteFile(const std::string &path);

/// translateTfliteFile + importOnnxModel. Input and output names are the
/// TFLite tensor names; the inputs keep their TFLite shapes (NHWC).
///
/// A quantised model (int8 / uint8 activations with scales and zero
/// points) is imported as the float graph of its real values
/// (scale * (q - zp); weights and biases dequantised, QUANTIZE and
/// DEQUANTIZE become identities, inputs and outputs are float), and the
/// module records the model's own quantisation as a calibration table
/// (attribute top.quant_table, TPU-MLIR's table text), which
/// `tpuc deploy --quantize INT8` uses when no --calibration-table is given.
OnnxImportResult importTfliteFile(mlir::MLIRContext &context,
                                  const std::string &path,
                                  const OnnxImportOptions &options);

/// The module attribute holding an imported model's own quantisation.
inline constexpr llvm::StringLiteral kQuantTableAttr("top.quant_table");
/// The module attribute holding the same model's exact scales, zero points
/// and those of its quantised weights and biases (formatModelQuant): with
/// it, INT8 keeps the model's codes and follows TFLite's arithmetic.
inline constexpr llvm::StringLiteral kQuantParamsAttr("top.quant_params");
/// Stores \p table as the module's top.quant_table (and its modelQuant as
/// top.quant_params).
void setModelQuantTable(mlir::ModuleOp module, const CaliTable &table);
/// The module's top.quant_table (with top.quant_params as modelQuant)
/// restricted to the tensors it still has;
/// std::nullopt when it has none. Throws tpu::Error if it does not parse.
std::optional<CaliTable> getModelQuantTable(mlir::ModuleOp module);

/// One row of the TFLite dispatch table (TfliteOps.def).
struct TfliteOpInfo {
  llvm::StringRef name;
  int32_t code;
  llvm::StringRef note;
};

/// Every supported builtin operator, in table order.
llvm::ArrayRef<TfliteOpInfo> getSupportedTfliteOps();
/// The support matrix as Markdown (compiler/docs/tflite-support.md).
std::string tfliteSupportMatrixMarkdown();

} // namespace tpuc::frontend

#endif // TPUC_FRONTEND_TFLITEIMPORTER_H
