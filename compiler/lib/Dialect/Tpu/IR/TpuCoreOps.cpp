//===- TpuCoreOps.cpp - Weight and Cast
//------------------------------------===//
#include "tpuc/Support/Weights.h"

#include "TpuCommon.h"

#include "mlir/Dialect/Quant/QuantTypes.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace tpuc;
using namespace tpuc::tpu;
using namespace tpuc::tpu::detail;

#define GET_OP_CLASSES
#include "tpuc/Dialect/Tpu/IR/TpuCoreOps.cpp.inc"

void TpuDialect::registerCoreOps() {
  addOperations<
#define GET_OP_LIST
#include "tpuc/Dialect/Tpu/IR/TpuCoreOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Weight
//===----------------------------------------------------------------------===//

LogicalResult WeightOp::verify() {
  if (getName().empty())
    return emitOpError("needs a non-empty name");
  if (!cast<RankedTensorType>(getOutput().getType()).hasStaticShape())
    return emitOpError("needs a static shape");
  if (!isKnownLayout(getLayout()))
    return emitOpError("unknown layout '") << getLayout() << "'";
  int64_t rank = cast<RankedTensorType>(getOutput().getType()).getRank();
  if ((getLayout() == kLayoutConv1IC || getLayout() == kLayoutConv32IC ||
       getLayout() == kLayoutDepthwise || getLayout() == kLayoutDeconv) &&
      rank != 4)
    return emitOpError("layout '")
           << getLayout() << "' needs a 4-D (oc, ic, kh, kw) filter";
  if (getLayout() == kLayoutTransposed && rank != 2)
    return emitOpError("layout '") << getLayout() << "' needs a 2-D weight";
  if (getLayout() == kLayoutInt8Records) {
    auto type = cast<RankedTensorType>(getOutput().getType());
    if (rank != 2 || !type.getElementType().isInteger(32) ||
        (type.getDimSize(1) != 4 && type.getDimSize(1) != 8))
      return emitOpError("layout '")
             << getLayout() << "' needs (oc, 4) or (oc, 8) int32 records";
  }
  return success();
}

LogicalResult WeightOp::inference(InferenceContext &ctx) {
  ModuleOp module = module::getModule(getOperation());
  const ::tpu::npz::Array *array = findWeight(module, getName());
  if (!array)
    return emitOpError("no data for weight '") << getName() << "'";
  std::vector<float> data = array->toFloat();
  int64_t want = module::getNumElements(getOutput());
  if (static_cast<int64_t>(data.size()) != want)
    return emitOpError("weight '") << getName() << "' has " << data.size()
                                   << " values, its type " << want;
  roundBuffer(data, getElementType(getOutput()));
  ctx.set(getOutput(), std::move(data));
  return success();
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

LogicalResult CastOp::verify() {
  if (failed(verifyName(*this)))
    return failure();
  if (std::optional<Type> via = getViaInt()) {
    auto i = dyn_cast<IntegerType>(*via);
    if (!i || (i.getWidth() != 8 && i.getWidth() != 16 && i.getWidth() != 32))
      return emitOpError("via_int must be an 8-, 16- or 32-bit integer type, "
                         "not ")
             << *via;
    if (!isa<FloatType>(getElementType(getInput())) ||
        !isa<FloatType>(getElementType(getOutput())))
      return emitOpError("via_int needs a float input and result");
  }
  return checkShape(*this, getOutput(), shapeOf(getInput()), "result");
}

LogicalResult CastOp::inference(InferenceContext &ctx) {
  const std::vector<float> &in = ctx.get(getInput());
  std::vector<float> &out = ctx.output(getOutput());
  Type from = getElementType(getInput()), to = getElementType(getOutput());
  if (std::optional<Type> via = getViaInt()) {
    // Toward zero, saturating (NaN gives 0), then nearest even: the AR
    // casts of the backend's cast kernel.
    auto i = cast<IntegerType>(*via);
    unsigned w = i.getWidth();
    double lo = i.isUnsigned() ? 0.0 : -std::ldexp(1.0, w - 1);
    double hi =
        i.isUnsigned() ? std::ldexp(1.0, w) - 1 : std::ldexp(1.0, w - 1) - 1;
    for (size_t k = 0; k < in.size(); ++k)
      out[k] = std::isnan(in[k]) ? 0.0f
                                 : static_cast<float>(std::clamp(
                                       std::trunc(double(in[k])), lo, hi));
    roundBuffer(out, to);
    return success();
  }
  auto qFrom = dyn_cast<quant::UniformQuantizedType>(from);
  auto qTo = dyn_cast<quant::UniformQuantizedType>(to);
  // Quantise / dequantise as the rq0 / dq0 commands the cast kernel emits.
  if (qTo && isa<FloatType>(from)) {
    for (size_t i = 0; i < in.size(); ++i)
      out[i] = chip::quantizeRq0(in[i], qTo.getScale(), qTo.getZeroPoint(),
                                 qTo.isSigned(), kQuantizeRoundMode);
    return success();
  }
  if (qFrom && isa<FloatType>(to)) {
    for (size_t i = 0; i < in.size(); ++i)
      out[i] = chip::dequantizeDq0(in[i], qFrom.getScale(),
                                   qFrom.getZeroPoint());
    roundBuffer(out, to);
    return success();
  }
  for (size_t i = 0; i < in.size(); ++i) {
    double x = in[i];
    if (qFrom)
      x = (x - qFrom.getZeroPoint()) * qFrom.getScale();
    if (qTo)
      x = x / qTo.getScale() + qTo.getZeroPoint();
    out[i] = static_cast<float>(x);
  }
  roundBuffer(out, to);
  return success();
}

//===----------------------------------------------------------------------===//
// Group and Yield
//===----------------------------------------------------------------------===//

namespace tpuc::tpu {

LogicalResult GroupOp::verify() {
  Region &r = getBody();
  if (!r.hasOneBlock())
    return emitOpError("needs a body of one block");
  Block &b = r.front();
  if (b.getNumArguments() != getInputs().size())
    return emitOpError("has ")
           << getInputs().size() << " operands but its body "
           << b.getNumArguments() << " arguments";
  for (auto [arg, in] : llvm::zip(b.getArguments(), getInputs()))
    if (arg.getType() != in.getType())
      return emitOpError("body argument type ")
             << arg.getType() << " differs from its operand's " << in.getType();
  auto yield = dyn_cast<YieldOp>(b.getTerminator());
  if (!yield)
    return emitOpError("body must end with tpu.Yield");
  if (yield.getValues().size() != getOutputs().size())
    return emitOpError("yields ")
           << yield.getValues().size() << " values for "
           << getOutputs().size() << " results";
  for (auto [v, res] : llvm::zip(yield.getValues(), getOutputs()))
    if (v.getType() != res.getType())
      return emitOpError("yielded type ")
             << v.getType() << " differs from the result's " << res.getType();
  if (getNSlices() < 1 || getHSlices() < 1)
    return emitOpError("n_slices and h_slices must be at least 1");
  return success();
}

LogicalResult GroupOp::inference(InferenceContext &ctx) {
  Block &b = getBody().front();
  for (auto [arg, in] : llvm::zip(b.getArguments(), getInputs()))
    ctx.set(arg, ctx.get(in));
  for (Operation &op : b.without_terminator()) {
    auto infer = dyn_cast<InferenceInterface>(op);
    if (!infer)
      return op.emitError("interpreter: op has no inference implementation");
    if (failed(infer.inference(ctx)))
      return failure();
  }
  for (auto [v, res] : llvm::zip(b.getTerminator()->getOperands(),
                                 getOutputs()))
    ctx.set(res, ctx.get(v));
  for (BlockArgument arg : b.getArguments())
    ctx.erase(arg);
  return success();
}

LogicalResult YieldOp::verify() { return success(); }

LogicalResult YieldOp::inference(InferenceContext &) { return success(); }

} // namespace tpuc::tpu
