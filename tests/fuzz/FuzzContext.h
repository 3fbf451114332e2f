//===- FuzzContext.h - The MLIR context the compiler fuzz targets share ---===//
//
// One MLIRContext with the project's dialects for fuzz_onnx and fuzz_mlir,
// replaced every kInputsPerContext inputs: names, types and attributes are
// interned in a context for its lifetime, so a fresh one now and then keeps a
// campaign's memory flat. One thread (deterministic runs, no thread pool per
// context); diagnostics are expected for bad inputs and go nowhere.
//
//===----------------------------------------------------------------------===//
#ifndef TPU_TESTS_FUZZ_FUZZCONTEXT_H
#define TPU_TESTS_FUZZ_FUZZCONTEXT_H

#include "ToolCommon.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <memory>

namespace tpu::fuzz {

constexpr unsigned kInputsPerContext = 1000;

inline mlir::MLIRContext &context() {
  static std::unique_ptr<mlir::MLIRContext> ctx;
  static unsigned uses = 0;
  if (!ctx || ++uses == kInputsPerContext) {
    ctx.reset();
    ctx = tpuc::tool::createContext();
    ctx->disableMultithreading();
    ctx->getDiagEngine().registerHandler(
        [](mlir::Diagnostic &) { return mlir::success(); });
    uses = 0;
  }
  return *ctx;
}

} // namespace tpu::fuzz

#endif // TPU_TESTS_FUZZ_FUZZCONTEXT_H
