//===- TopDialect.h - The top dialect -----------------------------*- C++ -*-===//
//
// Framework-level float operators (see TopBase.td).
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_DIALECT_TOP_IR_TOPDIALECT_H
#define TPUC_DIALECT_TOP_IR_TOPDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dialect.h"

#include <memory>

namespace tpuc {
class WeightRegistry;
} // namespace tpuc

#include "tpuc/Dialect/Top/IR/TopDialect.h.inc"

#endif // TPUC_DIALECT_TOP_IR_TOPDIALECT_H
