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

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

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
OnnxImportResult importTfliteFile(mlir::MLIRContext &context,
                                  const std::string &path,
                                  const OnnxImportOptions &options);

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
