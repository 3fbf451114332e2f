//===- fuzz_onnx.cpp - ONNX import of arbitrary bytes ---------------------===//
//
// The bytes are parsed as an onnx::ModelProto and imported as `tpuc
// transform` imports a model (tpuc::frontend::importOnnxModel: input shapes,
// folding of the shape subgraphs, top ops), then shape inference and the
// canonicalizer run and the module is verified, all in memory. A model may
// be refused with tpu::Error or fail a pass with a diagnostic; anything else
// (a crash, a sanitizer report, another exception, a hang, memory without
// bound) is a bug of the importer or of the top dialect.
//
//===----------------------------------------------------------------------===//
#include "FuzzContext.h"
#include "ToolCommon.h"
#include "tpuc/Dialect/Top/Transforms/Passes.h"
#include "tpuc/Frontend/OnnxImporter.h"
#include "tpuc/Support/Weights.h"

#include "tpu/isa/Error.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include <onnx/onnx_pb.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

namespace {

/// The model's path in messages. Its directory does not exist, so that a
/// tensor stored as external data is refused (the importer resolves it
/// relative to the model) instead of reading whatever the fuzzer's working
/// directory holds.
constexpr const char *kModelPath = "/nonexistent-fuzz-dir/fuzz.onnx";

[[noreturn]] void broken(const char *what) {
  std::fprintf(stderr, "fuzz_onnx: %s\n", what);
  std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  onnx::ModelProto model;
  if (!model.ParseFromArray(data, static_cast<int>(size)))
    return 0;
  mlir::MLIRContext &ctx = tpu::fuzz::context();
  tpuc::frontend::OnnxImportResult imported;
  try {
    imported = tpuc::frontend::importOnnxModel(
        ctx, model, kModelPath, tpuc::frontend::OnnxImportOptions());
  } catch (const tpu::Error &) {
    return 0;
  }
  if (!imported.module)
    broken("importOnnxModel returned no module and threw nothing");
  mlir::ModuleOp module = *imported.module;
  // As tpuc transform does (the pass manager verifies after each pass; the
  // importer verified what it built): a failure is a diagnostic, fine.
  mlir::PassManager pm(&ctx);
  pm.addPass(tpuc::top::createShapeInferPass());
  pm.addPass(mlir::createCanonicalizerPass());
  try {
    (void)pm.run(module);
  } catch (const tpu::Error &) {
  }
  tpuc::releaseWeights(module);
  return 0;
}
