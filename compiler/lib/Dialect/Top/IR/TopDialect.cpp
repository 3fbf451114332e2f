//===- TopDialect.cpp - The top dialect ------------------------------------===//
#include "tpuc/Dialect/Top/IR/TopOps.h"
#include "tpuc/Support/Weights.h"

using namespace mlir;
using namespace tpuc::top;

#include "tpuc/Dialect/Top/IR/TopDialect.cpp.inc"

void TopDialect::initialize() {
  weightRegistry = std::make_shared<::tpuc::WeightRegistry>();
  registerCoreOps();
  registerNNOps();
  registerElementwiseOps();
  registerShapeOps();
}

::tpuc::WeightRegistry &TopDialect::getWeightRegistry() {
  return *weightRegistry;
}

namespace tpuc::top {

bool isNone(Value v) {
  return !v || isa<NoneType>(v.getType()) ||
         isa_and_nonnull<NoneOp>(v.getDefiningOp());
}

std::string getTensorName(Value v) {
  Operation *op = v.getDefiningOp();
  if (!op || isa<NoneOp>(op))
    return "";
  if (auto split = dyn_cast<SplitOp>(op)) {
    unsigned i = cast<OpResult>(v).getResultNumber();
    if (auto names = split.getNames(); names && i < names->size())
      return cast<StringAttr>((*names)[i]).getValue().str();
    if (i == 0)
      return split.getName().str();
    return split.getName().str() + "_" + std::to_string(i);
  }
  // An op whose single-block body yields its results (tpu.Group) names
  // each result after the value its body yields for it.
  if (op->getNumRegions() == 1 && op->getRegion(0).hasOneBlock()) {
    Operation *term = op->getRegion(0).front().getTerminator();
    unsigned i = cast<OpResult>(v).getResultNumber();
    if (term && term->getNumOperands() == op->getNumResults())
      return getTensorName(term->getOperand(i));
  }
  auto name = op->getAttrOfType<StringAttr>("name");
  if (!name)
    return "";
  if (op->getNumResults() > 1)
    return name.getValue().str() + "_" +
           std::to_string(cast<OpResult>(v).getResultNumber());
  return name.getValue().str();
}

} // namespace tpuc::top
