//===- Pool.cpp - BM1684X codegen of tpu.Pool2D --------------------------===//
#include "../CodegenContext.h"

using namespace mlir;
namespace backend = ::tpu::backend;

namespace tpuc::tpu {

using namespace bm1684x;

void Pool2DOp::codegenBM1684X(CodegenContext &ctx) {
  backend::PoolParams p;
  p.name = getName().str();
  p.input = ctx.tensor(*this, getInput(), nchw(getInput()));
  p.output = ctx.tensor(*this, getOutput(), nchw(getOutput()));
  p.kind =
      getPoolMode() == "max" ? backend::PoolKind::Max : backend::PoolKind::Avg;
  setWindow(p, getKernelShape(), getStrides(), getPads());
  p.countIncludePad = getCountIncludePad();
  p.act = fusedActivation(getDoRelu(), getReluLimit().convertToDouble());
  backend::pool2d(ctx.emitter(), p);
}

} // namespace tpuc::tpu
