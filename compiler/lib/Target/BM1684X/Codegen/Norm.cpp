//===- Norm.cpp - BM1684X codegen of softmax, layer norm and reductions --===//
#include "../CodegenContext.h"

using namespace mlir;
namespace backend = ::tpu::backend;

namespace tpuc::bm1684x {

backend::SoftmaxParams softmaxParams(CodegenContext &ctx, tpu::SoftmaxOp op) {
  auto p = ctx.ioParams<backend::SoftmaxParams>(op);
  p.axis = op.getAxis();
  p.log = op.getLog();
  return p;
}

backend::LayerNormParams layerNormParams(CodegenContext &ctx,
                                         tpu::LayerNormOp op) {
  auto p = ctx.ioParams<backend::LayerNormParams>(op);
  p.axis = op.getAxis();
  p.epsilon = static_cast<float>(op.getEpsilon().convertToDouble());
  p.scaleAddr = ctx.optionalAddr(op, op.getScale());
  p.biasAddr = ctx.optionalAddr(op, op.getBias());
  return p;
}

backend::ReduceParams reduceParams(CodegenContext &ctx, tpu::ReduceOp op) {
  auto p = ctx.ioParams<backend::ReduceParams>(op);
  StringRef m = op.getMode();
  p.kind = m == "ReduceMean"  ? backend::ReduceKind::Mean
           : m == "ReduceMax" ? backend::ReduceKind::Max
           : m == "ReduceMin" ? backend::ReduceKind::Min
                              : backend::ReduceKind::Sum;
  p.axes = toI64(op.getAxes());
  return p;
}

} // namespace tpuc::bm1684x

namespace tpuc::tpu {

using namespace bm1684x;

void SoftmaxOp::codegenBM1684X(CodegenContext &ctx) {
  backend::softmax(ctx.emitter(), softmaxParams(ctx, *this));
}

void LayerNormOp::codegenBM1684X(CodegenContext &ctx) {
  backend::layerNorm(ctx.emitter(), layerNormParams(ctx, *this));
}

void ReduceOp::codegenBM1684X(CodegenContext &ctx) {
  backend::reduce(ctx.emitter(), reduceParams(ctx, *this));
}

} // namespace tpuc::tpu
