//===- Conv.cpp - BM1684X codegen of the convolutions --------------------===//
//
// tpu.Conv2D -> backend conv2d, tpu.Deconv2D -> backend convTranspose2d.
//
//===----------------------------------------------------------------------===//
#include "../CodegenContext.h"

using namespace mlir;
namespace backend = ::tpu::backend;

namespace tpuc::tpu {

using namespace bm1684x;

namespace {

/// The parameters conv2d and convTranspose2d share: tensors (a 3-D tensor
/// as H = 1), filter, bias, window, dilations, groups, fused activation.
template <typename Params, typename OpT>
Params convParams(CodegenContext &ctx, OpT op) {
  Params p;
  p.name = op.getName().str();
  p.input = ctx.tensor(op, op.getInput(), nchw(op.getInput()));
  p.output = ctx.tensor(op, op.getOutput(), nchw(op.getOutput()));
  p.filterAddr = ctx.tensor(op, op.getFilter()).addr;
  p.biasAddr = ctx.optionalAddr(op, op.getBias());
  setWindow(p, op.getKernelShape(), op.getStrides(), op.getPads());
  std::vector<int64_t> d = toI64(op.getDilations());
  p.dilationH = d[0];
  p.dilationW = d[1];
  p.groups = op.getGroup();
  p.act = fusedActivation(op.getDoRelu(), op.getReluLimit().convertToDouble());
  return p;
}

} // namespace

void Conv2DOp::codegenBM1684X(CodegenContext &ctx) {
  backend::conv2d(ctx.emitter(), convParams<backend::ConvParams>(ctx, *this));
}

void Deconv2DOp::codegenBM1684X(CodegenContext &ctx) {
  auto p = convParams<backend::ConvTransposeParams>(ctx, *this);
  std::vector<int64_t> outPad = toI64(getOutputPadding());
  p.outputPadH = outPad[0];
  p.outputPadW = outPad[1];
  backend::convTranspose2d(ctx.emitter(), p);
}

} // namespace tpuc::tpu
