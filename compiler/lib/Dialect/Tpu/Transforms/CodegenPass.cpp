//===- CodegenPass.cpp - --tpu-codegen
//-------------------------------------===//
#include "tpuc/Dialect/Tpu/Transforms/Passes.h"
#include "tpuc/Support/Machine.h"
#include "tpuc/Target/BM1684X/Codegen.h"

#include "tpu/isa/Error.h"

using namespace mlir;

namespace tpuc::tpu {

#define GEN_PASS_DEF_CODEGEN
#include "tpuc/Dialect/Tpu/Transforms/Passes.h.inc"

namespace {

struct CodegenPass : impl::CodegenBase<CodegenPass> {
  void runOnOperation() override {
    if (file.empty()) {
      getOperation().emitError("--tpu-codegen needs file=<bmodel path>");
      return signalPassFailure();
    }
    bm1684x::CodegenOptions options;
    options.groupPerOp = groupPerOp;
    // The machine the module records (tpuc deploy), else the BM1684X.
    FailureOr<::tpu::isa::Machine> machine =
        module::getMachineOrDefault(getOperation(), "--tpu-codegen");
    if (failed(machine))
      return signalPassFailure();
    FailureOr<::tpu::isa::bmodel::Model> model =
        bm1684x::buildBmodel(getOperation(), *machine, options);
    if (failed(model))
      return signalPassFailure();
    try {
      ::tpu::isa::bmodel::writeModel(*model, file);
    } catch (const ::tpu::Error &e) {
      getOperation().emitError("cannot write ") << file << ": " << e.what();
      signalPassFailure();
    }
  }
};

} // namespace

std::unique_ptr<Pass> createCodegenPass() {
  return std::make_unique<CodegenPass>();
}

} // namespace tpuc::tpu
