//===- TopCommon.h - Helpers shared by the top op families --------*- C++ -*-===//
//
// Private to lib/Dialect/Top: attribute conversion, shape helpers and the
// glue that lets one shape function serve both an op's verifier and its
// inferShapes().
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_LIB_DIALECT_TOP_IR_TOPCOMMON_H
#define TPUC_LIB_DIALECT_TOP_IR_TOPCOMMON_H

#include "tpuc/Dialect/Top/IR/TopOps.h"
#include "tpuc/Interpreter/Kernels.h"
#include "tpuc/Support/Module.h"

#include "llvm/ADT/STLExtras.h"

#include <string>
#include <vector>

namespace tpuc::top::detail {

using Shape = kernels::Shape;

using module::normalizeAxis;
using module::toI64;

inline Shape shapeOf(mlir::Value v) { return module::getShape(v); }

inline bool isRanked(mlir::Value v) {
  return mlir::isa<mlir::RankedTensorType>(v.getType()) &&
         mlir::cast<mlir::RankedTensorType>(v.getType()).hasStaticShape();
}

/// True if every tensor operand has a static ranked type (none operands
/// are ignored).
inline bool operandsRanked(mlir::Operation *op) {
  return llvm::all_of(op->getOperands(), [](mlir::Value v) {
    return mlir::isa<mlir::NoneType>(v.getType()) || isRanked(v);
  });
}

/// "[1, 3, 224, 224]".
inline std::string shapeStr(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Sets \p v's type to a ranked f32 tensor of \p shape.
inline void setShape(mlir::Value v, llvm::ArrayRef<int64_t> shape) {
  v.setType(module::getF32Type(v.getContext(), shape));
}

/// Fails with an error on \p op if \p v is ranked and its shape differs
/// from \p expected.
inline mlir::LogicalResult checkResultShape(mlir::Operation *op, mlir::Value v,
                                            llvm::ArrayRef<int64_t> expected) {
  auto ranked = mlir::dyn_cast<mlir::RankedTensorType>(v.getType());
  if (!ranked)
    return mlir::success();
  if (ranked.getShape() != expected)
    return op->emitOpError("result shape ")
           << shapeStr(ranked.getShape()) << " differs from the inferred "
           << shapeStr(expected);
  return mlir::success();
}

/// Verifier tail of a single-result op: runs \p shapeFn (which emits its own
/// errors) when the operands are ranked and checks the result against it.
template <typename OpT, typename ShapeFn>
mlir::LogicalResult verifyShape(OpT op, ShapeFn shapeFn) {
  if (!operandsRanked(op.getOperation()))
    return mlir::success();
  mlir::FailureOr<Shape> shape = shapeFn(op);
  if (mlir::failed(shape))
    return mlir::failure();
  return checkResultShape(op.getOperation(), op->getResult(0), *shape);
}

/// inferShapes() of a single-result op from \p shapeFn.
template <typename OpT, typename ShapeFn>
mlir::LogicalResult inferShape(OpT op, ShapeFn shapeFn) {
  if (!operandsRanked(op.getOperation()))
    return op.emitOpError("operand shapes are not known");
  mlir::FailureOr<Shape> shape = shapeFn(op);
  if (mlir::failed(shape))
    return mlir::failure();
  setShape(op->getResult(0), *shape);
  return mlir::success();
}

/// A result shape identical to operand 0's.
template <typename OpT> mlir::FailureOr<Shape> sameAsInput(OpT op) {
  return shapeOf(op->getOperand(0));
}

/// The data of an optional operand, or nullptr when it is none.
inline const float *optionalData(InferenceContext &ctx, mlir::Value v) {
  return isNone(v) ? nullptr : ctx.get(v).data();
}

} // namespace tpuc::top::detail

#endif // TPUC_LIB_DIALECT_TOP_IR_TOPCOMMON_H
