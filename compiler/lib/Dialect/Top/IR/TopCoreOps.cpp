//===- TopCoreOps.cpp - None, Input and Weight -----------------------------===//
#include "TopCommon.h"

#include "tpu/isa/Numerics.h"

#include "mlir/Dialect/Quant/QuantTypes.h"

#include "tpuc/Support/Weights.h"

using namespace mlir;
using namespace tpuc;
using namespace tpuc::top;
using namespace tpuc::top::detail;

#define GET_OP_CLASSES
#include "tpuc/Dialect/Top/IR/TopCoreOps.cpp.inc"

void TopDialect::registerCoreOps() {
  addOperations<
#define GET_OP_LIST
#include "tpuc/Dialect/Top/IR/TopCoreOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// None
//===----------------------------------------------------------------------===//

LogicalResult NoneOp::verify() { return success(); }
LogicalResult NoneOp::inferShapes() { return success(); }
LogicalResult NoneOp::inference(InferenceContext &) { return success(); }

//===----------------------------------------------------------------------===//
// Input
//===----------------------------------------------------------------------===//

LogicalResult InputOp::verify() {
  if (getName().empty())
    return emitOpError("needs a non-empty name");
  if (getInput().getType() != getOutput().getType() && isRanked(getInput()) &&
      isRanked(getOutput()))
    return emitOpError("result type ")
           << getOutput().getType() << " differs from the input type "
           << getInput().getType();
  return success();
}

LogicalResult InputOp::inferShapes() {
  getOutput().setType(getInput().getType());
  return success();
}

LogicalResult InputOp::inference(InferenceContext &ctx) {
  if (!ctx.contains(getInput()))
    return emitOpError("input '") << getName() << "' was not set";
  const std::vector<float> &in = ctx.get(getInput());
  std::vector<float> &out = ctx.output(getOutput());
  if (in.size() != out.size())
    return emitOpError("input '")
           << getName() << "' needs " << out.size() << " values, got "
           << in.size();
  // A quantised input (tpuc deploy --quant-input) takes real values and
  // quantises them as tpusim does for a float32 array (the bmodel stores
  // fl32(1 / scale)).
  if (auto q = dyn_cast<quant::UniformQuantizedType>(
          cast<ShapedType>(getOutput().getType()).getElementType())) {
    float inv = float(1.0 / q.getScale());
    for (size_t i = 0; i < in.size(); ++i)
      out[i] = float(::tpu::isa::quantizeInputValue(
          double(in[i]), inv, q.getZeroPoint(), ::tpu::isa::Prec::Int8,
          q.isSigned()));
    return success();
  }
  std::copy(in.begin(), in.end(), out.begin());
  return success();
}

//===----------------------------------------------------------------------===//
// Weight
//===----------------------------------------------------------------------===//

LogicalResult WeightOp::verify() {
  if (getName().empty())
    return emitOpError("needs a non-empty name");
  if (!isRanked(getOutput()))
    return emitOpError("needs a static ranked tensor type");
  return success();
}

LogicalResult WeightOp::inferShapes() { return success(); }

LogicalResult WeightOp::inference(InferenceContext &ctx) {
  std::vector<float> data;
  if (failed(readWeightData(*this, data)))
    return failure();
  ctx.set(getOutput(), std::move(data));
  return success();
}
