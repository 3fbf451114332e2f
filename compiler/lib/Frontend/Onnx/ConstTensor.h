//===- ConstTensor.h - Tensors known at ONNX import time ----------*- C++
//-*-===//
//
// Initialisers, Constant nodes and everything computed from them (shape
// subgraphs: Shape, Gather, Concat, arithmetic over int64, ...) are held as
// ConstTensor while the model is imported. Float element types keep their
// values as double (each rounded to its ONNX type after every operation),
// integer and bool types as int64, so int64 shape arithmetic is exact.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_LIB_FRONTEND_ONNX_CONSTTENSOR_H
#define TPUC_LIB_FRONTEND_ONNX_CONSTTENSOR_H

#include "tpu/isa/Npz.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace onnx {
class TensorProto;
} // namespace onnx

namespace tpuc::frontend {

/// An ONNX element type code (onnx::TensorProto::DataType).
using ElemType = int32_t;

/// Codes of onnx::TensorProto::DataType we refer to by name (the values are
/// fixed by onnx.proto).
namespace elem {
constexpr ElemType Undefined = 0;
constexpr ElemType Float = 1;
constexpr ElemType UInt8 = 2;
constexpr ElemType Int8 = 3;
constexpr ElemType UInt16 = 4;
constexpr ElemType Int16 = 5;
constexpr ElemType Int32 = 6;
constexpr ElemType Int64 = 7;
constexpr ElemType String = 8;
constexpr ElemType Bool = 9;
constexpr ElemType Float16 = 10;
constexpr ElemType Double = 11;
constexpr ElemType UInt32 = 12;
constexpr ElemType UInt64 = 13;
constexpr ElemType BFloat16 = 16;
} // namespace elem

/// True for FLOAT, DOUBLE, FLOAT16 and BFLOAT16.
bool isFloatType(ElemType type);
/// True for the signed/unsigned integer types and BOOL.
bool isIntegerType(ElemType type);
/// ONNX's name of \p type ("FLOAT", "INT64", ...).
std::string elemTypeName(ElemType type);
/// Rounds \p v to what an element of \p type can hold (float types round to
/// nearest even, integer types truncate toward zero and wrap to their
/// width, BOOL is v != 0).
double roundToElemType(double v, ElemType type);
/// Wraps \p v to the width of integer type \p type (BOOL: v != 0).
int64_t wrapToElemType(int64_t v, ElemType type);

using Shape = std::vector<int64_t>;

/// Element count of \p shape (1 for rank 0). Throws tpu::Error when the
/// count overflows int64 (or a dimension is negative).
int64_t numElements(llvm::ArrayRef<int64_t> shape);
/// The element count of \p shape if it and its size in bytes at
/// \p elemBytes per element (8: the widest element the importer keeps)
/// fit int64; otherwise throws tpu::Error starting with \p what.
int64_t checkedNumElements(llvm::ArrayRef<int64_t> shape,
                           const std::string &what, int64_t elemBytes = 8);
/// "[1, 3, 224, 224]".
std::string shapeToString(llvm::ArrayRef<int64_t> shape);

/// A tensor whose value is known at import time.
class ConstTensor {
public:
  ConstTensor() = default;

  static ConstTensor ofInts(Shape shape, std::vector<int64_t> values,
                            ElemType type = elem::Int64);
  static ConstTensor ofDoubles(Shape shape, std::vector<double> values,
                               ElemType type = elem::Float);
  /// A tensor of \p shape and \p type with every element \p value.
  static ConstTensor filled(Shape shape, double value, ElemType type);

  ElemType getType() const { return type; }
  const Shape &getShape() const { return shape; }
  int64_t getRank() const { return static_cast<int64_t>(shape.size()); }
  int64_t size() const { return numElements(shape); }
  bool isFloat() const { return isFloatType(type); }

  /// Element \p k as double / int64 (floats truncated toward zero).
  double getDouble(int64_t k) const;
  int64_t getInt(int64_t k) const;
  /// All elements.
  std::vector<int64_t> toInts() const;
  std::vector<double> toDoubles() const;
  std::vector<float> toFloats() const;

  /// The same elements with another shape of equal size.
  ConstTensor reshaped(Shape newShape) const;
  /// The elements converted to \p newType (ONNX Cast semantics).
  ConstTensor castTo(ElemType newType) const;

  /// Sets element \p k (rounded/wrapped to the element type).
  void set(int64_t k, double v);
  void setInt(int64_t k, int64_t v);

private:
  ElemType type = elem::Float;
  Shape shape;
  std::vector<double> floats; ///< float element types
  std::vector<int64_t> ints;  ///< integer and bool element types
};

/// Decodes \p tensor (typed fields or raw_data, or external data located
/// relative to \p baseDir). Throws tpu::Error naming \p what on malformed or
/// unsupported (string, complex) data.
/// A float32 initializer as the float32 npz array toNpzArray would make of
/// its ConstTensor, without the ConstTensor (which holds doubles, twice the
/// size: a VGG-sized model's weights would take a gigabyte); the same checks
/// and errors as constTensorFromProto. nullopt for other element types.
std::optional<tpu::npz::Array>
float32ArrayFromProto(const onnx::TensorProto &tensor,
                      const std::string &baseDir, const std::string &what);

ConstTensor constTensorFromProto(const onnx::TensorProto &tensor,
                                 const std::string &baseDir,
                                 const std::string &what);

/// numpy broadcast of two shapes; throws tpu::Error mentioning \p what if
/// they do not broadcast.
Shape broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b,
                      const std::string &what);

/// For each element of \p outShape, the index of the element of \p inShape
/// that numpy broadcasting maps to it.
std::vector<int64_t> broadcastIndices(llvm::ArrayRef<int64_t> inShape,
                                      llvm::ArrayRef<int64_t> outShape);

/// Row-major strides of \p shape.
std::vector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape);

} // namespace tpuc::frontend

#endif // TPUC_LIB_FRONTEND_ONNX_CONSTTENSOR_H
