//===- Conv.cpp - BM1684X codegen of the convolutions --------------------===//
//
// tpu.Conv2D -> backend conv2d, tpu.Deconv2D -> backend convTranspose2d.
//
//===----------------------------------------------------------------------===//
#include "../CodegenContext.h"

using namespace mlir;
namespace backend = ::tpu::backend;

namespace tpuc::bm1684x {

backend::ConvTransposeParams deconvParams(CodegenContext &ctx,
                                          tpu::Deconv2DOp op) {
  auto p = convParams<backend::ConvTransposeParams>(ctx, op);
  std::vector<int64_t> outPad = toI64(op.getOutputPadding());
  p.outputPadH = outPad[0];
  p.outputPadW = outPad[1];
  return p;
}

} // namespace tpuc::bm1684x

namespace tpuc::tpu {

using namespace bm1684x;


void Conv2DOp::codegenBM1684X(CodegenContext &ctx) {
  backend::conv2d(ctx.emitter(), convParams<backend::ConvParams>(ctx, *this));
}

void Deconv2DOp::codegenBM1684X(CodegenContext &ctx) {
  backend::convTranspose2d(ctx.emitter(), deconvParams(ctx, *this));
}

} // namespace tpuc::tpu
