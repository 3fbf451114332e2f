//===- TpuCommon.h - Helpers shared by the tpu op families --------*- C++
//-*-===//
//
// Private to lib/Dialect/Tpu: attribute conversion, shape checks and the
// rounding step every inference method ends with.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_LIB_DIALECT_TPU_IR_TPUCOMMON_H
#define TPUC_LIB_DIALECT_TPU_IR_TPUCOMMON_H

#include "tpuc/Dialect/Top/IR/TopOps.h"
#include "tpuc/Dialect/Tpu/IR/ChipMath.h"
#include "tpuc/Dialect/Tpu/IR/Int8.h"
#include "tpuc/Dialect/Tpu/IR/TpuOps.h"
#include "tpuc/Interpreter/Kernels.h"
#include "tpuc/Support/Module.h"

#include "mlir/Dialect/Quant/QuantTypes.h"
#include "llvm/ADT/STLExtras.h"

#include <optional>
#include <string>
#include <vector>

namespace tpuc::tpu::detail {

using Shape = kernels::Shape;

using module::normalizeAxis;
using module::toI64;

/// The doubles of an F64ArrayAttr.
inline std::vector<double> toF64(mlir::ArrayAttr attr) {
  std::vector<double> out;
  if (!attr)
    return out;
  for (mlir::Attribute a : attr)
    out.push_back(mlir::cast<mlir::FloatAttr>(a).getValueAsDouble());
  return out;
}

inline Shape shapeOf(mlir::Value v) { return module::getShape(v); }

/// "[1, 3, 224, 224]".
inline std::string shapeStr(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// True if \p v is absent (none type or produced by top.None).
inline bool isNone(mlir::Value v) { return top::isNone(v); }

/// Fails with an error on \p op unless \p v's shape is \p expected.
inline mlir::LogicalResult checkShape(mlir::Operation *op, mlir::Value v,
                                      llvm::ArrayRef<int64_t> expected,
                                      llvm::StringRef what) {
  Shape actual = shapeOf(v);
  if (llvm::ArrayRef<int64_t>(actual) != expected)
    return op->emitOpError()
           << what << " shape " << shapeStr(actual)
           << " differs from the expected " << shapeStr(expected);
  return mlir::success();
}

/// The storage type of a quantised element type, else the type itself.
inline mlir::Type storageType(mlir::Type t) {
  if (auto q = mlir::dyn_cast<mlir::quant::QuantizedType>(t))
    return q.getStorageType();
  return t;
}

/// Fails unless \p a and \p b have the same element type (quantised types
/// only need the same storage type: their scales may differ).
inline mlir::LogicalResult checkSameElementType(mlir::Operation *op,
                                                mlir::Value a, mlir::Value b,
                                                llvm::StringRef what) {
  if (storageType(getElementType(a)) != storageType(getElementType(b)))
    return op->emitOpError()
           << what << " has element type " << getElementType(a)
           << ", the result " << getElementType(b);
  return mlir::success();
}

/// Fails unless the op has a non-empty `name`.
inline mlir::LogicalResult verifyName(mlir::Operation *op) {
  auto name = op->getAttrOfType<mlir::StringAttr>("name");
  if (!name || name.getValue().empty())
    return op->emitOpError("needs a non-empty name");
  return mlir::success();
}

/// The data of an optional operand, or nullptr when it is none.
inline const float *optionalData(InferenceContext &ctx, mlir::Value v) {
  return isNone(v) ? nullptr : ctx.get(v).data();
}

/// Rounds the result buffer of \p v to its element type (the last step of
/// every inference: the hardware writes the result in that type).
inline void roundResult(InferenceContext &ctx, mlir::Value v) {
  roundBuffer(ctx.output(v), getElementType(v));
}

/// The precision ChipMath rounds to for element type \p t (Fp32, i.e. no
/// rounding, for anything but f16 / bf16).
inline chip::Prec chipPrec(mlir::Type t) {
  if (t.isF16())
    return chip::Prec::Fp16;
  if (t.isBF16())
    return chip::Prec::Bf16;
  return chip::Prec::Fp32;
}

/// Relu with the optional upper limit, as the kernels apply it before the
/// result is rounded.
inline void applyRelu(std::vector<float> &data, bool doRelu, double limit) {
  if (doRelu)
    kernels::applyRelu(data.data(), static_cast<int64_t>(data.size()), limit);
}

/// The requantisation of an INT8 op with immediates (matmul): its
/// quant_multiplier / quant_rshift, one step of zero point \p zeroPoint, or
/// two with tflite_arithmetic (the zero point in the second); none when the
/// attributes are missing or of the wrong length.
std::optional<chip::RequantRecord> requantAttrs(mlir::Operation *op,
                                                int64_t zeroPoint);

/// The k_shares of \p op (kKSharesAttr; none: empty), each entry checked:
/// bounds rising from 0 to \p extent, columns within \p columns (0, 0:
/// all). An error names the op and the entry.
mlir::FailureOr<std::vector<chip::KShares>>
kSharesAttr(mlir::Operation *op, int64_t extent, int64_t columns);

} // namespace tpuc::tpu::detail

#endif // TPUC_LIB_DIALECT_TPU_IR_TPUCOMMON_H
