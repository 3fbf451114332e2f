//===- TopOps.h - Ops of the top dialect --------------------------*- C++ -*-===//
//
// Declares every op of the `top` dialect (tpuc::top::<Name>Op), with the
// interfaces they implement. Include this, not the per-family .h.inc files.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_DIALECT_TOP_IR_TOPOPS_H
#define TPUC_DIALECT_TOP_IR_TOPOPS_H

#include "tpuc/Dialect/Top/IR/TopDialect.h"
#include "tpuc/Interfaces/InferenceInterface.h"
#include "tpuc/Interfaces/ShapeInterface.h"

#include "mlir/Dialect/Quant/QuantTypes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <limits>

#define GET_OP_CLASSES
#include "tpuc/Dialect/Top/IR/TopCoreOps.h.inc"
#define GET_OP_CLASSES
#include "tpuc/Dialect/Top/IR/TopNNOps.h.inc"
#define GET_OP_CLASSES
#include "tpuc/Dialect/Top/IR/TopElementwiseOps.h.inc"
#define GET_OP_CLASSES
#include "tpuc/Dialect/Top/IR/TopShapeOps.h.inc"

namespace tpuc::top {

/// True if \p v is absent (produced by top.None or of none type).
bool isNone(mlir::Value v);

/// The framework tensor name of \p v: the `name` of its defining op (for
/// Split result i, names[i] when given, else "<name>_<i>"), or "" for block
/// arguments and top.None.
std::string getTensorName(mlir::Value v);

} // namespace tpuc::top

#endif // TPUC_DIALECT_TOP_IR_TOPOPS_H
