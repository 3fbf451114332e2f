//===- tpuc-opt.cpp - mlir-opt with the tpuc dialects and passes ----------===//
#include "tpuc/InitAll.h"

#include "tpu/Tool.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  tpuc::registerAllDialects(registry);
  tpuc::registerAllPasses();
  llvm::cl::AddExtraVersionPrinter(
      [](llvm::raw_ostream &os) { tpu::tool::printVersion("tpuc-opt", os); });
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tpuc optimizer driver\n", registry));
}
