//===- WeightReorder.cpp - --tpu-weight-reorder
//----------------------------===//
//
// Decides the coefficient layout of every weight from the kernel that reads
// it. Convolution filters have their special layouts (isa/docs/bm1684x.md
// 3.4); a matmul's right weight read transposed is stored transposed (the
// `transposed` layout: [K, N], as an untransposed one); everything else is
// stored compact (row-major), which is what the backend kernels load.
// The byte conversion itself happens when the coefficient blob is built
// (tpu::backend::reorderConvFilter), so the IR keeps logical data.
//
//===----------------------------------------------------------------------===//
#include "tpuc/Dialect/Tpu/Transforms/Passes.h"

#include "tpuc/Backend/Backend.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Quant/QuantTypes.h"

using namespace mlir;

namespace tpuc::tpu {

#define GEN_PASS_DEF_WEIGHTREORDER
#include "tpuc/Dialect/Tpu/Transforms/Passes.h.inc"

namespace {

/// The layout the backend's conv2d expects for \p conv's filter.
StringRef convFilterLayout(Conv2DOp conv) {
  auto filter = cast<RankedTensorType>(conv.getFilter().getType());
  int64_t oc = filter.getDimSize(0);
  int64_t icPerGroup = filter.getDimSize(1);
  int64_t groups = conv.getGroup();
  if (::tpu::backend::isDepthwise(icPerGroup * groups, oc, groups))
    return kLayoutDepthwise;
  if (isa<quant::QuantizedType>(filter.getElementType()))
    return kLayoutConv64IC;
  return filter.getElementType().isF32() ? kLayoutConv1IC : kLayoutConv32IC;
}

/// Gives the weight of \p operand \p layout (its own copy when others read
/// it too).
void setLayout(OpOperand &operand, WeightOp weight, StringRef layout) {
  if (weight.getLayout() == layout)
    return;
  if (!weight->hasOneUse()) {
    OpBuilder b(weight);
    b.setInsertionPointAfter(weight);
    auto copy = cast<WeightOp>(b.clone(*weight));
    operand.set(copy.getOutput());
    weight = copy;
  }
  weight.setLayout(layout);
}

} // namespace

LogicalResult reorderWeights(ModuleOp module) {
  WalkResult walk = module.walk([&](Operation *op) {
    if (auto mm = dyn_cast<MatMulOp>(op)) {
      OpOperand &right = mm->getOpOperand(1);
      if (auto weight = right.get().getDefiningOp<WeightOp>();
          weight && mm.getRightTranspose() &&
          cast<RankedTensorType>(weight.getOutput().getType()).getRank() == 2)
        setLayout(right, weight, kLayoutTransposed);
      return WalkResult::advance();
    }
    if (!isa<Conv2DOp, Deconv2DOp>(op))
      return WalkResult::advance();
    OpOperand &filterOperand = op->getOpOperand(1);
    auto weight = filterOperand.get().getDefiningOp<WeightOp>();
    if (!weight) {
      op->emitOpError("the filter must be a tpu.Weight");
      return WalkResult::interrupt();
    }
    auto conv = dyn_cast<Conv2DOp>(op);
    setLayout(filterOperand, weight,
              conv ? convFilterLayout(conv) : StringRef(kLayoutDeconv));
    // An INT8 convolution's bias operand holds its requantisation records
    // (int32 (oc, 4 or 8)), loaded part by part.
    OpOperand &biasOperand = op->getOpOperand(2);
    auto records = biasOperand.get().getDefiningOp<WeightOp>();
    auto filterType = cast<RankedTensorType>(weight.getOutput().getType());
    if (records && isa<quant::QuantizedType>(filterType.getElementType()) &&
        getElementTypeOrSelf(records.getOutput().getType()).isInteger(32))
      setLayout(biasOperand, records, kLayoutInt8Records);
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

namespace {

struct WeightReorderPass : impl::WeightReorderBase<WeightReorderPass> {
  void runOnOperation() override {
    if (failed(reorderWeights(getOperation())))
      signalPassFailure();
  }
};

} // namespace

std::unique_ptr<Pass> createWeightReorderPass() {
  return std::make_unique<WeightReorderPass>();
}

} // namespace tpuc::tpu
