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
