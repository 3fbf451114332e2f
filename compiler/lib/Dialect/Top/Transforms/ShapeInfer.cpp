//===- ShapeInfer.cpp - --shape-infer and --save-weights -------------------===//
#include "tpuc/Dialect/Top/Transforms/Passes.h"
#include "tpuc/Support/Weights.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace tpuc::top {

#define GEN_PASS_DEF_SHAPEINFER
#define GEN_PASS_DEF_SAVEWEIGHTS
#include "tpuc/Dialect/Top/Transforms/Passes.h.inc"

LogicalResult inferShapes(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>()) {
    WalkResult walk = func.walk([](Operation *op) {
      if (auto shaped = dyn_cast<ShapeInterface>(op))
        if (failed(shaped.inferShapes()))
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    if (func.isExternal())
      continue;
    Operation *terminator = func.getBody().back().getTerminator();
    func.setType(FunctionType::get(module.getContext(),
                                   func.getArgumentTypes(),
                                   terminator->getOperandTypes()));
  }
  return success();
}

namespace {

struct ShapeInferPass : impl::ShapeInferBase<ShapeInferPass> {
  void runOnOperation() override {
    if (failed(inferShapes(getOperation())))
      signalPassFailure();
  }
};

struct SaveWeightsPass : impl::SaveWeightsBase<SaveWeightsPass> {
  using SaveWeightsBase::SaveWeightsBase;
  explicit SaveWeightsPass(const std::string &path) { file = path; }

  void runOnOperation() override {
    if (file.empty()) {
      getOperation().emitError("--save-weights needs file=<npz path>");
      return signalPassFailure();
    }
    if (failed(saveWeights(getOperation(), file)))
      signalPassFailure();
  }
};

} // namespace

std::unique_ptr<Pass> createShapeInferPass() {
  return std::make_unique<ShapeInferPass>();
}

std::unique_ptr<Pass> createSaveWeightsPass() {
  return std::make_unique<SaveWeightsPass>();
}

std::unique_ptr<Pass> createSaveWeightsPass(const std::string &file) {
  return std::make_unique<SaveWeightsPass>(file);
}

} // namespace tpuc::top
