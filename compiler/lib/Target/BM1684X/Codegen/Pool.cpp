//===- Pool.cpp - BM1684X codegen of tpu.Pool2D and tpu.Pool3D -----------===//
#include "../CodegenContext.h"

#include "mlir/Dialect/Quant/QuantTypes.h"

using namespace mlir;
namespace backend = ::tpu::backend;

namespace tpuc::bm1684x {

backend::PoolParams poolParams(CodegenContext &ctx, tpu::Pool2DOp op) {
  backend::PoolParams p;
  p.name = op.getName().str();
  p.input = ctx.tensor(op, op.getInput(), nchw(op.getInput()));
  p.output = ctx.tensor(op, op.getOutput(), nchw(op.getOutput()));
  p.kind = op.getPoolMode() == "max" ? backend::PoolKind::Max
                                     : backend::PoolKind::Avg;
  setWindow(p, op.getKernelShape(), op.getStrides(), op.getPads());
  p.countIncludePad = op.getCountIncludePad();
  p.act = fusedActivation(op.getDoRelu(), op.getReluLimit().convertToDouble());
  if (isa<quant::UniformQuantizedType>(tpu::getElementType(op.getOutput()))) {
    // INT8: a relu is the saturation to the unsigned result.
    p.act = {};
    if (p.kind == backend::PoolKind::Avg) {
      auto mult = op->getAttrOfType<ArrayAttr>(tpu::kQuantMultiplierAttr);
      auto shift = op->getAttrOfType<ArrayAttr>(tpu::kQuantRShiftAttr);
      if (!mult || !shift || mult.size() != 1 || shift.size() != 1)
        throw CodegenError{op, "an INT8 average pool needs its multiplier "
                               "and shift"};
      // TFLite's arithmetic averages the raw codes (no zero points).
      bool raw = op->hasAttr(tpu::kTfliteArithmeticAttr);
      p.quant = backend::PoolParams::Requant{
          int32_t(toI64(mult)[0]), int(toI64(shift)[0]), tpu::kInt8RoundMode,
          raw ? 0
              : int32_t(cast<quant::UniformQuantizedType>(
                            tpu::getElementType(op.getInput()))
                            .getZeroPoint()),
          raw ? 0
              : int32_t(cast<quant::UniformQuantizedType>(
                            tpu::getElementType(op.getOutput()))
                            .getZeroPoint())};
    }
  }
  return p;
}

} // namespace tpuc::bm1684x

namespace tpuc::tpu {

using namespace bm1684x;

void Pool2DOp::codegenBM1684X(CodegenContext &ctx) {
  backend::pool2d(ctx.emitter(), poolParams(ctx, *this));
}

void Pool3DOp::codegenBM1684X(CodegenContext &ctx) {
  auto p = ctx.ioParams<backend::Pool3dParams>(*this);
  p.kind =
      getPoolMode() == "max" ? backend::PoolKind::Max : backend::PoolKind::Avg;
  std::vector<int64_t> k = toI64(getKernelShape()), s = toI64(getStrides()),
                       pads = toI64(getPads()); // begins (d, h, w), then ends
  p.kernelD = k[0];
  p.kernelH = k[1];
  p.kernelW = k[2];
  p.strideD = s[0];
  p.strideH = s[1];
  p.strideW = s[2];
  p.padFront = pads[0];
  p.padTop = pads[1];
  p.padLeft = pads[2];
  p.padBack = pads[3];
  p.padBottom = pads[4];
  p.padRight = pads[5];
  p.countIncludePad = getCountIncludePad();
  p.act = fusedActivation(getDoRelu(), getReluLimit().convertToDouble());
  backend::pool3d(ctx.emitter(), p);
}

} // namespace tpuc::tpu
