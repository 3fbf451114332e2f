//===- Norm.cpp - BM1684X codegen of softmax, layer norm and reductions --===//
#include "../CodegenContext.h"

using namespace mlir;
namespace backend = ::tpu::backend;

namespace tpuc::tpu {

using namespace bm1684x;

void SoftmaxOp::codegenBM1684X(CodegenContext &ctx) {
  auto p = ctx.ioParams<backend::SoftmaxParams>(*this);
  p.axis = getAxis();
  p.log = getLog();
  backend::softmax(ctx.emitter(), p);
}

void LayerNormOp::codegenBM1684X(CodegenContext &ctx) {
  auto p = ctx.ioParams<backend::LayerNormParams>(*this);
  p.axis = getAxis();
  p.epsilon = static_cast<float>(getEpsilon().convertToDouble());
  p.scaleAddr = ctx.optionalAddr(*this, getScale());
  p.biasAddr = ctx.optionalAddr(*this, getBias());
  backend::layerNorm(ctx.emitter(), p);
}

void ReduceOp::codegenBM1684X(CodegenContext &ctx) {
  auto p = ctx.ioParams<backend::ReduceParams>(*this);
  StringRef m = getMode();
  p.kind = m == "ReduceMean"  ? backend::ReduceKind::Mean
           : m == "ReduceMax" ? backend::ReduceKind::Max
           : m == "ReduceMin" ? backend::ReduceKind::Min
                              : backend::ReduceKind::Sum;
  p.axes = toI64(getAxes());
  backend::reduce(ctx.emitter(), p);
}

} // namespace tpuc::tpu
