//===- ShapeInfer.cpp - --shape-infer and --save-weights -------------------===//
#include "tpuc/Dialect/Top/Transforms/Passes.h"
#include "tpuc/Support/Weights.h"

#include "tpuc/Support/Module.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace tpuc::top {

using Shape = std::vector<int64_t>;

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

std::string shapeText(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(d);
  return s + "]";
}

/// The activations: every result but weights' and none's.
template <typename Fn> void forEachActivation(func::FuncOp func, Fn fn) {
  func.walk([&](Operation *op) {
    if (isa<WeightOp, NoneOp>(op) || !isa<TopDialect>(op->getDialect()))
      return;
    for (Value r : op->getResults())
      fn(op, r);
  });
}

} // namespace

LogicalResult rebatch(ModuleOp module, int64_t batch, std::string &error) {
  if (batch < 1) {
    error = "the batch must be at least 1, got " + std::to_string(batch);
    return failure();
  }
  auto fail = [&](Operation *op, const std::string &why) {
    error = std::string(op->getName().getStringRef()) + " '" +
            getTensorName(op->getResult(0)) + "' " + why;
    return failure();
  };
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    // Before: the module must be batch-1 throughout; a scalar may only come
    // from a Reshape of one value (hey_jarvis' If condition), which then
    // keeps its input's [1, ...] shape.
    LogicalResult ok = success();
    forEachActivation(func, [&](Operation *op, Value r) {
      if (failed(ok))
        return;
      auto type = dyn_cast<RankedTensorType>(r.getType());
      if (!type)
        return;
      Shape shape = module::getShape(r);
      if (!shape.empty() && shape[0] == 1)
        return;
      if (shape.empty() && isa<ReshapeOp>(op))
        return;
      ok = fail(op, "has shape " + shapeText(shape) +
                        ", not a batch of 1 first: cannot re-batch");
    });
    if (failed(ok))
      return failure();
    SmallVector<Type> args;
    for (BlockArgument a : func.getArguments()) {
      auto type = cast<RankedTensorType>(a.getType());
      Shape shape(type.getShape());
      shape[0] = batch;
      a.setType(RankedTensorType::get(shape, type.getElementType()));
      args.push_back(a.getType());
    }
    func.setType(FunctionType::get(module.getContext(), args,
                                   func.getResultTypes()));
    func.walk([&](ReshapeOp op) {
      Shape target = module::toI64(op.getShape());
      if (target.empty())
        target = module::getShape(op.getInput());
      // 0 copies the input's (new) batch and -1 takes what is left: only
      // a literal 1 needs changing.
      if (target[0] == 1)
        target[0] = batch;
      op.setShapeAttr(Builder(op).getI64ArrayAttr(target));
    });
  }
  if (failed(inferShapes(module))) {
    error = "shape inference for a batch of " + std::to_string(batch) +
            " failed";
    return failure();
  }
  // After: an op whose attributes pin the batch of 1 (a Slice of axis 0,
  // an Expand to [1, ...]) would silently drop samples.
  for (auto func : module.getOps<func::FuncOp>()) {
    LogicalResult ok = success();
    forEachActivation(func, [&](Operation *op, Value r) {
      Shape shape = module::getShape(r);
      if (succeeded(ok) && (shape.empty() || shape[0] != batch))
        ok = fail(op, "has shape " + shapeText(shape) + " for a batch of " +
                          std::to_string(batch) +
                          ": it does not follow the batch");
    });
    if (failed(ok))
      return failure();
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
