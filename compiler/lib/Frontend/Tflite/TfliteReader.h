//===- TfliteReader.h - Checked view of a .tflite flatbuffer ------*- C++ -*-===//
//
// Reads a TensorFlow Lite model (flatbuffer, file identifier TFL3) into a
// plain description of its main subgraph, checking everything the importer
// relies on before it is used: the identifier, the flatbuffers verifier over
// the whole buffer, every tensor / buffer / operator-code index, that each
// constant's buffer holds exactly its shape's bytes, one producer per
// tensor and no cycle among the operators. Failures throw tpu::Error
// "<file>: <what> <index> ('<name>'): <what is wrong>".
//
// Free of MLIR and ONNX so that the fuzz target (tests/fuzz/fuzz_tflite.cpp)
// builds it alone.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_LIB_FRONTEND_TFLITE_TFLITEREADER_H
#define TPUC_LIB_FRONTEND_TFLITE_TFLITEREADER_H

#include "tpuc/Frontend/tflite_generated.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tpuc::frontend::tflite {

namespace fb = ::tpuc::tflite::fb;

/// Quantisation parameters of a tensor (empty scale: none).
struct Quantization {
  std::vector<float> scale;
  std::vector<int64_t> zeroPoint;
  /// The axis of per-channel parameters (scale.size() > 1).
  int32_t axis = 0;
};

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  /// shape_signature when the model has it (-1: a dynamic dimension),
  /// else shape.
  std::vector<int64_t> signature;
  fb::TensorType type = fb::TensorType_FLOAT32;
  /// The constant data (null: a run-time tensor); size checked against
  /// shape and type.
  const uint8_t *data = nullptr;
  size_t size = 0;
  Quantization quant;
  /// Index of the operator that writes it, -1 for none.
  int32_t producer = -1;
  bool isConstant() const { return data != nullptr; }
};

struct Operator {
  /// Index in the subgraph's operator list (what messages name).
  int32_t index = 0;
  int32_t code = 0;
  std::string customCode;
  int32_t version = 1;
  /// Tensor indices; -1 marks an omitted optional input.
  std::vector<int32_t> inputs;
  std::vector<int32_t> outputs;
  const fb::Operator *op = nullptr;
};

/// One subgraph: subgraph 0 is the model's entry, the others are bodies of
/// control-flow operators (IF branches).
struct Subgraph {
  int32_t index = 0;
  std::string name;
  std::vector<Tensor> tensors;
  /// The operators in an order where every input is produced before use
  /// (the file's order unless it had to be sorted).
  std::vector<Operator> ops;
  std::vector<int32_t> inputs;
  std::vector<int32_t> outputs;
  /// Subgraphs its operators run (IF branches, WHILE bodies, CALL_ONCE).
  std::vector<int32_t> callees;
};

struct Model {
  std::string path;
  std::vector<uint8_t> bytes;
  const fb::Model *root = nullptr;
  std::vector<Subgraph> subgraphs;
};

/// Checks and reads \p bytes (the contents of \p path, which names it in
/// messages): every subgraph, and that no subgraph runs itself through a
/// chain of control-flow operators.
Model readModel(std::vector<uint8_t> bytes, const std::string &path);
/// Reads the file \p path and calls readModel.
Model readModelFile(const std::string &path);
/// True if \p bytes carry the TFL3 file identifier.
bool hasTfliteIdentifier(const uint8_t *bytes, size_t size);

/// TFLite's name of builtin operator \p code ("CONV_2D"), or "BUILTIN_<n>".
std::string builtinName(int32_t code);
/// TFLite's name of tensor type \p t ("FLOAT32").
std::string typeName(fb::TensorType t);
/// Bytes per element of \p t; 0 for types without a fixed size.
size_t typeSize(fb::TensorType t);
/// "operator 3 (CONV_2D)" ("subgraph 2 operator 3 (CONV_2D)" outside the
/// entry subgraph).
std::string describe(const Subgraph &sg, const Operator &op);
/// "tensor 7 ('conv1/weights')" (with the subgraph outside the entry).
std::string describeTensor(const Subgraph &sg, int32_t index);

} // namespace tpuc::frontend::tflite

#endif // TPUC_LIB_FRONTEND_TFLITE_TFLITEREADER_H
