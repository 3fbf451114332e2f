//===- InitAll.cpp - Register every dialect and pass of tpuc ---------------===//
#include "tpuc/InitAll.h"
#include "tpuc/Dialect/Top/IR/TopOps.h"
#include "tpuc/Dialect/Top/Transforms/Passes.h"
#include "tpuc/Conversion/TopToTpu/TopToTpu.h"
#include "tpuc/Dialect/Tpu/IR/TpuOps.h"
#include "tpuc/Dialect/Tpu/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Quant/QuantOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/Passes.h"

namespace tpuc {

void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<top::TopDialect, tpu::TpuDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::quant::QuantizationDialect,
                  mlir::tensor::TensorDialect>();
}

void registerAllPasses() {
  top::registerTopPasses();
  registerTopToTpuPasses();
  tpu::registerTpuPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::registerInlinerPass();
  mlir::registerSCCPPass();
}

} // namespace tpuc
