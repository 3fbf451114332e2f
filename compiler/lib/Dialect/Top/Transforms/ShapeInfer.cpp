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

/// Whether \p v is an activation: a function argument or an activation
/// result.
bool isActivation(Value v) {
  Operation *def = v.getDefiningOp();
  return !def ||
         (!isa<WeightOp, NoneOp>(def) && isa<TopDialect>(def->getDialect()));
}

/// The axes \p op reduces over an input of rank \p rank, normalised and
/// sorted (empty `axes`: all of them); empty if one is out of range (the
/// verifier's and shape inference's error).
Shape reducedAxes(ReduceOp op, int64_t rank) {
  Shape axes = module::toI64(op.getAxes());
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  for (int64_t &a : axes)
    if ((a = module::normalizeAxis(a, rank)) < 0)
      return {};
  llvm::sort(axes);
  return axes;
}

/// Whether \p op reduces the batch axis of a batch-1 activation.
bool reducesBatch(ReduceOp op) {
  Shape in = module::getShape(op.getInput());
  return isActivation(op.getInput()) && !in.empty() && in[0] == 1 &&
         llvm::is_contained(reducedAxes(op, in.size()), 0);
}

/// Why \p op (reducesBatch) has no per-sample form, or empty: dropping the
/// batch axis but keeping others (keepdims false, not every axis) leaves
/// no axis for the batch.
std::string perSampleError(ReduceOp op) {
  int64_t rank = module::getShape(op.getInput()).size();
  Shape axes = reducedAxes(op, rank);
  if (op.getKeepdims() || int64_t(axes.size()) == rank)
    return "";
  return "reduces the batch axis without keeping it (keepdims false, axes " +
         shapeText(axes) + " of rank " + std::to_string(rank) +
         "): it has no per-sample form";
}

/// Makes \p op (reducesBatch, no perSampleError) one reduction per sample:
/// over its other axes with keepdims, the result [1, ...] now and [N, ...]
/// after re-batching. Over every axis without keepdims (a scalar) this
/// gives [1, 1, ..., 1] of the input's rank, which its readers broadcast
/// as they did the scalar; with keepdims the result is unchanged. A
/// reduction of the batch axis alone is the identity per sample and
/// becomes a Reshape of the same name. Returns the new result.
Value makePerSample(ReduceOp op) {
  Shape in = module::getShape(op.getInput());
  Shape axes = reducedAxes(op, in.size());
  // The input's shape with every reduced axis 1.
  Shape out = in;
  for (int64_t a : axes)
    out[a] = 1;
  auto type = RankedTensorType::get(
      out, cast<RankedTensorType>(op.getType()).getElementType());
  OpBuilder b(op);
  if (axes.size() == 1) {
    Value reshape = b.create<ReshapeOp>(op.getLoc(), type, op.getInput(),
                                        b.getI64ArrayAttr(out), op.getName());
    op.replaceAllUsesWith(reshape);
    op.erase();
    return reshape;
  }
  op.setAxesAttr(b.getI64ArrayAttr(ArrayRef<int64_t>(axes).drop_front()));
  op.setKeepdims(true);
  op.getOutput().setType(type);
  return op.getOutput();
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
  // Every activation's shape for the batch of 1.
  llvm::DenseMap<Value, Shape> before;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    SmallVector<ReduceOp> reduces;
    func.walk([&](ReduceOp op) {
      if (reducesBatch(op))
        reduces.push_back(op);
    });
    for (ReduceOp op : reduces)
      if (std::string why = perSampleError(op); !why.empty())
        return fail(op, why);
    // Before: the module must be batch-1 throughout. A scalar may only
    // come from one sample: a Reshape of one value (hey_jarvis' If
    // condition), which then keeps its input's [1, ...] shape, a Reduce
    // over every axis (the melspectrogram's maximum), made per sample
    // below, or an op reading such a scalar.
    llvm::DenseSet<Value> scalars;
    LogicalResult ok = success();
    forEachActivation(func, [&](Operation *op, Value r) {
      if (failed(ok))
        return;
      auto type = dyn_cast<RankedTensorType>(r.getType());
      if (!type)
        return;
      Shape shape = module::getShape(r);
      before[r] = shape;
      if (!shape.empty() && shape[0] == 1)
        return;
      if (shape.empty() &&
          (isa<ReshapeOp>(op) ||
           (isa<ReduceOp>(op) && reducesBatch(cast<ReduceOp>(op))) ||
           llvm::any_of(op->getOperands(),
                        [&](Value v) { return scalars.contains(v); }))) {
        scalars.insert(r);
        return;
      }
      ok = fail(op, "has shape " + shapeText(shape) +
                        ", not a batch of 1 first: cannot re-batch");
    });
    if (failed(ok))
      return failure();
    for (ReduceOp op : reduces) {
      Shape old = before.lookup(op.getOutput());
      before.erase(op.getOutput());
      before[makePerSample(op)] = old;
    }
    SmallVector<Type> args;
    for (BlockArgument a : func.getArguments()) {
      auto type = cast<RankedTensorType>(a.getType());
      Shape shape(type.getShape());
      before[a] = shape;
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
  // After: every activation has its batch-1 shape with the batch first; a
  // former scalar is [batch, 1, ..., 1]. An op whose attributes pin the
  // batch of 1 (a Slice of axis 0, an Expand to [1, ...]) would silently
  // drop samples, and a former scalar broadcast against operands of
  // another rank would line its batch up with another axis.
  for (auto func : module.getOps<func::FuncOp>()) {
    LogicalResult ok = success();
    forEachActivation(func, [&](Operation *op, Value r) {
      if (failed(ok))
        return;
      auto old = before.find(r);
      if (old == before.end())
        return;
      if (!old->second.empty() && !isa<ReshapeOp>(op))
        for (Value v : op->getOperands()) {
          auto in = before.find(v);
          size_t rank = module::getShape(v).size();
          if (in == before.end() || !in->second.empty() ||
              rank == old->second.size())
            continue;
          ok = fail(op, "reads '" + getTensorName(v) +
                            "', one value per sample (now " +
                            shapeText(module::getShape(v)) + ") into a rank-" +
                            std::to_string(old->second.size()) +
                            " result: it would not broadcast per sample");
          return;
        }
      Shape shape = module::getShape(r);
      Shape want = old->second;
      if (want.empty())
        want.assign(std::max<size_t>(shape.size(), 1), 1);
      want[0] = batch;
      if (shape != want)
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
