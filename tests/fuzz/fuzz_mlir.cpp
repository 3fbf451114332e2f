//===- fuzz_mlir.cpp - tpuc deploy's module loader on arbitrary text ------===//
//
// The bytes are the text of an .mlir file, loaded as `tpuc deploy` loads
// its model before compiling: parsed and verified (tool::parseModuleBuffer,
// requiring a top module), its weights looked up (tool::checkWeightsPresent)
// and its tensor sizes checked against the chip's global memory
// (tool::checkTensorSizes). No file is read: the weight set is the empty
// in-memory one, so a module with weights is refused as deploy refuses a
// module whose weight file lacks them. A module that passes runs shape
// the start of deploy's pipeline: the F32 lowering and the weight layouts. Refusals are error messages or
// diagnostics; anything else (a crash, a sanitizer report, an exception, a
// hang) is a bug of the loader or of the top dialect.
//
//===----------------------------------------------------------------------===//
#include "FuzzContext.h"
#include "ToolCommon.h"
#include "tpuc/Conversion/TopToTpu/TopToTpu.h"
#include "tpuc/Dialect/Tpu/Transforms/Passes.h"
#include "tpuc/Support/CaliTable.h"
#include "tpuc/Support/Machine.h"
#include "tpuc/Support/Module.h"
#include "tpuc/Support/Weights.h"

#include "tpu/isa/ChipParams.h"
#include "tpu/isa/Error.h"
#include "tpu/isa/Machine.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <optional>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext &ctx = tpu::fuzz::context();
  tpuc::tool::ParsedModule parsed;
  parsed.diagnosticStream = &llvm::nulls();
  std::unique_ptr<llvm::MemoryBuffer> buffer = llvm::MemoryBuffer::getMemBufferCopy(
      llvm::StringRef(reinterpret_cast<const char *>(data), size), "fuzz.mlir");
  if (!tpuc::tool::parseModuleBuffer(ctx, std::move(buffer), "fuzz.mlir",
                                     /*requireTop=*/true, parsed)
           .empty())
    return 0;
  mlir::ModuleOp module = *parsed.module;
  // The empty in-memory weight set, as if the weight file named none of the
  // weights: loadWeights then reads no file.
  tpuc::ModuleWeights &weights = tpuc::getWeightRegistry(&ctx).get(module);
  weights.loaded = true;
  weights.loadedAttr = tpuc::module::getWeightFile(module).str();
  std::string error = tpuc::tool::checkWeightsPresent(module, "fuzz.mlir");
  if (error.empty())
    error = tpuc::tool::checkTensorSizes(
        module, /*elemBytes=*/4, tpu::isa::ChipParams::bm1684x().gmemBytes,
        "the chip's global memory (gmem_bytes)");
  std::optional<tpuc::QuantTable> table;
  std::optional<tpuc::CaliTable> cali;
  if (error.empty())
    error = tpuc::tool::loadCompileTables(module, "fuzz.mlir", "", "", table,
                                          cali);
  // What deploy compiles first: the lowering to F32 tpu ops and the weight
  // layouts, each verified.
  if (error.empty()) {
    tpuc::module::setMachine(module, tpu::isa::Machine::bm1684x());
    try {
      if (mlir::succeeded(tpuc::lowerTopToTpu(module, tpuc::QuantMode::F32)) &&
          mlir::succeeded(tpuc::tpu::reorderWeights(module)))
        (void)mlir::verify(module);
    } catch (const tpu::Error &) {
    }
  }
  tpuc::releaseWeights(module);
  return 0;
}
