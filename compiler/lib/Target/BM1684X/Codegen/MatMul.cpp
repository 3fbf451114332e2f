//===- MatMul.cpp - BM1684X codegen of tpu.MatMul ------------------------===//
#include "../CodegenContext.h"

#include "mlir/Dialect/Quant/QuantTypes.h"

using namespace mlir;
namespace backend = ::tpu::backend;

namespace tpuc::bm1684x {

backend::MatMulParams matmulParams(CodegenContext &ctx, tpu::MatMulOp op) {
  backend::MatMulParams p;
  p.name = op.getName().str();
  p.left = ctx.tensor(op, op.getInput());
  p.right = ctx.tensor(op, op.getRight());
  p.output = ctx.tensor(op, op.getOutput());
  p.rightTransposed = op.getRightTranspose();
  // A right weight stored transposed (tpu-weight-reorder) is [K, N] in DDR.
  if (auto w = op.getRight().getDefiningOp<tpu::WeightOp>();
      w && p.rightTransposed && w.getLayout() == tpu::kLayoutTransposed) {
    std::swap(p.right.shape[0], p.right.shape[1]);
    p.rightTransposed = false;
  }
  p.biasAddr = ctx.optionalAddr(op, op.getBias());
  p.act = fusedActivation(op.getDoRelu(), op.getReluLimit().convertToDouble());
  if (auto outQ = dyn_cast<quant::UniformQuantizedType>(
          tpu::getElementType(op.getOutput()))) {
    auto mult = op->getAttrOfType<ArrayAttr>(tpu::kQuantMultiplierAttr);
    auto shift = op->getAttrOfType<ArrayAttr>(tpu::kQuantRShiftAttr);
    bool tflite = op->hasAttr(tpu::kTfliteArithmeticAttr);
    size_t steps = tflite ? 2 : 1;
    if (!mult || !shift || mult.size() != steps || shift.size() != steps)
      throw CodegenError{op, "an INT8 matmul needs its multiplier and shift"};
    backend::MatMulParams::Quant q;
    q.biasAddr = p.biasAddr;
    q.multiplier = int32_t(toI64(mult)[0]);
    q.rshift = int(toI64(shift)[0]);
    q.zeroPoint = int32_t(outQ.getZeroPoint());
    q.round = tflite ? tpu::kTfliteRoundModes[0] : tpu::kInt8RoundMode;
    if (tflite)
      q.second = backend::RequantStep{int32_t(toI64(mult)[1]),
                                      int(toI64(shift)[1]),
                                      tpu::kTfliteRoundModes[1]};
    p.quant = q;
    p.biasAddr.reset();
    p.act = {};
  }
  return p;
}

} // namespace tpuc::bm1684x

namespace tpuc::tpu {

using namespace bm1684x;

void MatMulOp::codegenBM1684X(CodegenContext &ctx) {
  backend::matmul(ctx.emitter(), matmulParams(ctx, *this));
}

} // namespace tpuc::tpu
