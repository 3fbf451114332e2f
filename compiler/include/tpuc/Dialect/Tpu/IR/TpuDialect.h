//===- TpuDialect.h - The tpu dialect -----------------------------*- C++
//-*-===//
//
// BM1684X-level operators (see TpuBase.td).
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_DIALECT_TPU_IR_TPUDIALECT_H
#define TPUC_DIALECT_TPU_IR_TPUDIALECT_H

#include "tpuc/Dialect/Top/IR/TopDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Quant/QuantOps.h"
#include "mlir/IR/Dialect.h"

#include "tpuc/Dialect/Tpu/IR/TpuDialect.h.inc"

#endif // TPUC_DIALECT_TPU_IR_TPUDIALECT_H
