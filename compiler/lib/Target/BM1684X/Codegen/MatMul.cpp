//===- MatMul.cpp - BM1684X codegen of tpu.MatMul ------------------------===//
#include "../CodegenContext.h"

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
  backend::matmul(ctx.emitter(), p);
}

} // namespace tpuc::tpu
