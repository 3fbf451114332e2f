//===- MatMul.cpp - BM1684X codegen of tpu.MatMul ------------------------===//
#include "../CodegenContext.h"

#include "mlir/Dialect/Quant/QuantTypes.h"

using namespace mlir;
namespace backend = ::tpu::backend;

namespace tpuc::tpu {

using namespace bm1684x;

void MatMulOp::codegenBM1684X(CodegenContext &ctx) {
  backend::MatMulParams p;
  p.name = getName().str();
  p.left = ctx.tensor(*this, getInput());
  p.right = ctx.tensor(*this, getRight());
  p.output = ctx.tensor(*this, getOutput());
  p.rightTransposed = getRightTranspose();
  p.biasAddr = ctx.optionalAddr(*this, getBias());
  p.act = fusedActivation(getDoRelu(), getReluLimit().convertToDouble());
  if (auto outQ = dyn_cast<quant::UniformQuantizedType>(
          tpu::getElementType(getOutput()))) {
    auto mult = (*this)->getAttrOfType<ArrayAttr>(kQuantMultiplierAttr);
    auto shift = (*this)->getAttrOfType<ArrayAttr>(kQuantRShiftAttr);
    bool tflite = (*this)->hasAttr(kTfliteArithmeticAttr);
    size_t steps = tflite ? 2 : 1;
    if (!mult || !shift || mult.size() != steps || shift.size() != steps)
      throw bm1684x::CodegenError{*this, "an INT8 matmul needs its "
                                         "multiplier and shift"};
    backend::MatMulParams::Quant q;
    q.biasAddr = p.biasAddr;
    q.multiplier = int32_t(toI64(mult)[0]);
    q.rshift = int(toI64(shift)[0]);
    q.zeroPoint = int32_t(outQ.getZeroPoint());
    q.round = tflite ? kTfliteRoundModes[0] : kInt8RoundMode;
    if (tflite)
      q.second = backend::RequantStep{int32_t(toI64(mult)[1]),
                                      int(toI64(shift)[1]),
                                      kTfliteRoundModes[1]};
    p.quant = q;
    p.biasAddr.reset();
    p.act = {};
  }
  backend::matmul(ctx.emitter(), p);
}

} // namespace tpuc::tpu
