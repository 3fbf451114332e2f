//===- TopNNOps.cpp - Convolution, matmul, pooling, norms ------------------===//
#include "TopCommon.h"

#include <cmath>

using namespace mlir;
using namespace tpuc;
using namespace tpuc::top;
using namespace tpuc::top::detail;

#define GET_OP_CLASSES
#include "tpuc/Dialect/Top/IR/TopNNOps.cpp.inc"

void TopDialect::registerNNOps() {
  addOperations<
#define GET_OP_LIST
#include "tpuc/Dialect/Top/IR/TopNNOps.cpp.inc"
      >();
}

namespace {

/// Checks kernel / stride / dilation / pad list lengths for \p spatial axes
/// and that they are positive (pads non-negative).
LogicalResult checkWindowAttrs(Operation *op, size_t spatial,
                               const Shape &kernel, const Shape &strides,
                               const Shape &dilations, const Shape &pads,
                               bool dilationsOptional) {
  if (kernel.size() != spatial)
    return op->emitOpError("kernel_shape needs ")
           << spatial << " values, has " << kernel.size();
  if (strides.size() != spatial)
    return op->emitOpError("strides needs ")
           << spatial << " values, has " << strides.size();
  if (!(dilationsOptional && dilations.empty()) && dilations.size() != spatial)
    return op->emitOpError("dilations needs ")
           << spatial << " values, has " << dilations.size();
  if (pads.size() != 2 * spatial)
    return op->emitOpError("pads needs ")
           << 2 * spatial << " values (begins, then ends), has "
           << pads.size();
  auto positive = [](int64_t v) { return v > 0; };
  if (!llvm::all_of(kernel, positive) || !llvm::all_of(strides, positive) ||
      !llvm::all_of(dilations, positive))
    return op->emitOpError(
        "kernel_shape, strides and dilations must be positive");
  if (!llvm::all_of(pads, [](int64_t v) { return v >= 0; }))
    return op->emitOpError("pads must not be negative");
  return success();
}

/// Spatial output extent of a sliding window.
int64_t windowOut(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb,
                  int64_t pe) {
  int64_t span = d * (k - 1) + 1;
  int64_t padded = in + pb + pe;
  if (padded < span)
    return 0;
  return (padded - span) / s + 1;
}

/// Verifies a per-channel operand (none or \p channels elements).
LogicalResult checkChannelOperand(Operation *op, Value v, StringRef what,
                                  int64_t channels) {
  if (isNone(v))
    return success();
  int64_t n = module::getNumElements(v);
  if (n != channels)
    return op->emitOpError() << what << " needs " << channels
                             << " values, has " << n;
  return success();
}

/// Fills the 2-D kernel parameters of a 1-D or 2-D (transposed)
/// convolution.
template <typename OpT>
kernels::ConvParams convParams(OpT op, const Shape &in, const Shape &out) {
  kernels::ConvParams p;
  Shape k = toI64(op.getKernelShape()), s = toI64(op.getStrides());
  Shape d = toI64(op.getDilations()), pads = toI64(op.getPads());
  bool oneD = in.size() == 3;
  p.n = in[0];
  p.ic = in[1];
  p.oc = out[1];
  p.group = op.getGroup();
  p.doRelu = op.getDoRelu();
  p.reluLimit = op.getReluLimit().convertToDouble();
  if (oneD) {
    p.iw = in[2];
    p.ow = out[2];
    p.kw = k[0];
    p.sw = s[0];
    p.dw = d[0];
    p.pl = pads[0];
    p.pr = pads[1];
  } else {
    p.ih = in[2];
    p.iw = in[3];
    p.oh = out[2];
    p.ow = out[3];
    p.kh = k[0];
    p.kw = k[1];
    p.sh = s[0];
    p.sw = s[1];
    p.dh = d[0];
    p.dw = d[1];
    p.pt = pads[0];
    p.pl = pads[1];
    p.pb = pads[2];
    p.pr = pads[3];
  }
  return p;
}

//===----------------------------------------------------------------------===//
// Shape functions
//===----------------------------------------------------------------------===//

FailureOr<Shape> convShape(ConvOp op) {
  Shape in = shapeOf(op.getInput()), w = shapeOf(op.getFilter());
  Shape k = toI64(op.getKernelShape()), s = toI64(op.getStrides());
  Shape d = toI64(op.getDilations()), pads = toI64(op.getPads());
  if (in.size() != 3 && in.size() != 4)
    return op.emitOpError("input must be 3-D (N, C, W) or 4-D (N, C, H, W), "
                          "is ")
           << shapeStr(in);
  size_t spatial = in.size() - 2;
  if (failed(checkWindowAttrs(op, spatial, k, s, d, pads, false)))
    return failure();
  int64_t group = op.getGroup();
  if (group < 1 || in[1] % group)
    return op.emitOpError("group ")
           << group << " does not divide the " << in[1] << " input channels";
  if (w.size() != in.size())
    return op.emitOpError("filter must have rank ")
           << in.size() << ", has shape " << shapeStr(w);
  if (w[1] * group != in[1] || w[0] % group)
    return op.emitOpError("filter ")
           << shapeStr(w) << " does not fit " << in[1]
           << " input channels in " << group << " groups";
  for (size_t i = 0; i < spatial; ++i)
    if (w[2 + i] != k[i])
      return op.emitOpError("kernel_shape ")
             << shapeStr(k) << " differs from the filter " << shapeStr(w);
  if (failed(checkChannelOperand(op, op.getBias(), "bias", w[0])))
    return failure();
  Shape out = {in[0], w[0]};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t o = windowOut(in[2 + i], k[i], s[i], d[i], pads[i],
                          pads[spatial + i]);
    if (o <= 0)
      return op.emitOpError("the kernel does not fit the padded input ")
             << shapeStr(in);
    out.push_back(o);
  }
  return out;
}

FailureOr<Shape> convTransposeShape(ConvTransposeOp op) {
  Shape in = shapeOf(op.getInput()), w = shapeOf(op.getFilter());
  Shape k = toI64(op.getKernelShape()), s = toI64(op.getStrides());
  Shape d = toI64(op.getDilations()), pads = toI64(op.getPads());
  Shape outPad = toI64(op.getOutputPadding());
  if (in.size() != 3 && in.size() != 4)
    return op.emitOpError("input must be 3-D or 4-D, is ") << shapeStr(in);
  size_t spatial = in.size() - 2;
  if (failed(checkWindowAttrs(op, spatial, k, s, d, pads, false)))
    return failure();
  if (outPad.empty())
    outPad.assign(spatial, 0);
  if (outPad.size() != spatial)
    return op.emitOpError("output_padding needs ") << spatial << " values";
  int64_t group = op.getGroup();
  if (group < 1 || in[1] % group)
    return op.emitOpError("group ")
           << group << " does not divide the " << in[1] << " input channels";
  if (w.size() != in.size() || w[0] != in[1])
    return op.emitOpError("filter ")
           << shapeStr(w) << " must be (C, OC / group, k...) with C = "
           << in[1];
  for (size_t i = 0; i < spatial; ++i)
    if (w[2 + i] != k[i])
      return op.emitOpError("kernel_shape ")
             << shapeStr(k) << " differs from the filter " << shapeStr(w);
  int64_t oc = w[1] * group;
  if (failed(checkChannelOperand(op, op.getBias(), "bias", oc)))
    return failure();
  Shape out = {in[0], oc};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t o = (in[2 + i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 + outPad[i] -
                pads[i] - pads[spatial + i];
    if (o <= 0)
      return op.emitOpError("the pads leave no output");
    out.push_back(o);
  }
  return out;
}

FailureOr<Shape> matmulShape(MatMulOp op) {
  Shape a = shapeOf(op.getInput()), b = shapeOf(op.getRight());
  auto out = kernels::matmulShape(a, b, op.getRightTranspose());
  if (!out)
    return op.emitOpError("operands ")
           << shapeStr(a) << " and " << shapeStr(b)
           << (op.getRightTranspose() ? " (right transposed)" : "")
           << " do not fit a matrix product";
  if (!isNone(op.getBias())) {
    Shape bias = shapeOf(op.getBias());
    auto withBias = kernels::broadcastShape(*out, bias);
    if (!withBias || *withBias != *out)
      return op.emitOpError("bias ")
             << shapeStr(bias) << " does not broadcast to the product "
             << shapeStr(*out);
  }
  return *out;
}

template <typename OpT> FailureOr<Shape> poolShape(OpT op) {
  Shape in = shapeOf(op.getInput());
  Shape k = toI64(op.getKernelShape()), s = toI64(op.getStrides());
  Shape d = toI64(op.getDilations()), pads = toI64(op.getPads());
  if (in.size() < 3 || in.size() > 5)
    return op.emitOpError("input must have 1 to 3 spatial axes, is ")
           << shapeStr(in);
  size_t spatial = in.size() - 2;
  if (failed(checkWindowAttrs(op, spatial, k, s, d, pads, true)))
    return failure();
  Shape out = {in[0], in[1]};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t o = windowOut(in[2 + i], k[i], s[i], d.empty() ? 1 : d[i],
                          pads[i], pads[spatial + i]);
    if (o <= 0)
      return op.emitOpError("the kernel does not fit the padded input ")
             << shapeStr(in);
    out.push_back(o);
  }
  return out;
}

FailureOr<Shape> batchNormShape(BatchNormOp op) {
  Shape in = shapeOf(op.getInput());
  if (in.size() < 2)
    return op.emitOpError("input needs a channel axis, is ") << shapeStr(in);
  int64_t c = in[1];
  if (failed(checkChannelOperand(op, op.getMean(), "mean", c)) ||
      failed(checkChannelOperand(op, op.getVariance(), "variance", c)) ||
      failed(checkChannelOperand(op, op.getScale(), "scale", c)) ||
      failed(checkChannelOperand(op, op.getBias(), "bias", c)))
    return failure();
  return in;
}

FailureOr<Shape> layerNormShape(LayerNormOp op) {
  Shape in = shapeOf(op.getInput());
  int64_t axis = normalizeAxis(op.getAxis(), in.size());
  if (axis < 0)
    return op.emitOpError("axis ")
           << op.getAxis() << " is out of range for " << shapeStr(in);
  Shape normShape(in.begin() + axis, in.end());
  for (Value v : {op.getScale(), op.getBias()}) {
    if (isNone(v))
      continue;
    auto b = kernels::broadcastShape(normShape, shapeOf(v));
    if (!b || *b != normShape)
      return op.emitOpError("scale and bias must broadcast to ")
             << shapeStr(normShape) << ", got " << shapeStr(shapeOf(v));
  }
  return in;
}

FailureOr<Shape> softmaxShape(SoftmaxOp op) {
  Shape in = shapeOf(op.getInput());
  if (normalizeAxis(op.getAxis(), in.size()) < 0)
    return op.emitOpError("axis ")
           << op.getAxis() << " is out of range for " << shapeStr(in);
  return in;
}

/// Broadcasts an optional per-element operand to \p shape (empty if none).
std::vector<float> expandOptional(InferenceContext &ctx, Value v,
                                  const Shape &shape) {
  if (isNone(v))
    return {};
  std::vector<float> out(kernels::numElements(shape));
  kernels::broadcastTo(shapeOf(v), ctx.get(v).data(), shape, out.data());
  return out;
}

} // namespace

//===----------------------------------------------------------------------===//
// Conv
//===----------------------------------------------------------------------===//

LogicalResult ConvOp::verify() { return verifyShape(*this, convShape); }
LogicalResult ConvOp::inferShapes() { return inferShape(*this, convShape); }

LogicalResult ConvOp::inference(InferenceContext &ctx) {
  Shape in = shapeOf(getInput()), out = shapeOf(getOutput());
  kernels::ConvParams p = convParams(*this, in, out);
  kernels::conv2d(p, ctx.get(getInput()).data(), ctx.get(getFilter()).data(),
                  optionalData(ctx, getBias()), ctx.output(getOutput()).data(),
                  ctx.getNumThreads());
  return success();
}

//===----------------------------------------------------------------------===//
// ConvTranspose
//===----------------------------------------------------------------------===//

LogicalResult ConvTransposeOp::verify() {
  return verifyShape(*this, convTransposeShape);
}
LogicalResult ConvTransposeOp::inferShapes() {
  return inferShape(*this, convTransposeShape);
}

LogicalResult ConvTransposeOp::inference(InferenceContext &ctx) {
  Shape in = shapeOf(getInput()), out = shapeOf(getOutput());
  kernels::ConvParams p = convParams(*this, in, out);
  kernels::convTranspose2d(p, ctx.get(getInput()).data(),
                           ctx.get(getFilter()).data(),
                           optionalData(ctx, getBias()),
                           ctx.output(getOutput()).data(),
                           ctx.getNumThreads());
  return success();
}

//===----------------------------------------------------------------------===//
// MatMul
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::verify() { return verifyShape(*this, matmulShape); }
LogicalResult MatMulOp::inferShapes() {
  return inferShape(*this, matmulShape);
}

LogicalResult MatMulOp::inference(InferenceContext &ctx) {
  Shape out = shapeOf(getOutput());
  std::vector<float> &dst = ctx.output(getOutput());
  kernels::matmul(shapeOf(getInput()), ctx.get(getInput()).data(),
                  shapeOf(getRight()), ctx.get(getRight()).data(),
                  getRightTranspose(), dst.data(), ctx.getNumThreads());
  if (!isNone(getBias()))
    kernels::broadcastBinary(out, dst.data(), shapeOf(getBias()),
                             ctx.get(getBias()).data(), out, dst.data(),
                             [](float a, float b) { return a + b; });
  if (getDoRelu())
    kernels::applyRelu(dst.data(), dst.size(),
                       getReluLimit().convertToDouble());
  return success();
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

namespace {

template <typename OpT> kernels::PoolParams poolParams(OpT op) {
  kernels::PoolParams p;
  p.inShape = shapeOf(op.getInput());
  p.outShape = shapeOf(op.getOutput());
  p.kernel = toI64(op.getKernelShape());
  p.strides = toI64(op.getStrides());
  p.dilations = toI64(op.getDilations());
  p.pads = toI64(op.getPads());
  p.countIncludePad = op.getCountIncludePad();
  return p;
}

template <typename OpT> void finishPool(OpT op, std::vector<float> &dst) {
  if (op.getDoRelu())
    kernels::applyRelu(dst.data(), dst.size(),
                       op.getReluLimit().convertToDouble());
}

} // namespace

LogicalResult MaxPoolOp::verify() {
  return verifyShape(*this, poolShape<MaxPoolOp>);
}
LogicalResult MaxPoolOp::inferShapes() {
  return inferShape(*this, poolShape<MaxPoolOp>);
}
LogicalResult MaxPoolOp::inference(InferenceContext &ctx) {
  std::vector<float> &dst = ctx.output(getOutput());
  kernels::maxPool(poolParams(*this), ctx.get(getInput()).data(), dst.data(),
                   ctx.getNumThreads());
  finishPool(*this, dst);
  return success();
}

LogicalResult AvgPoolOp::verify() {
  return verifyShape(*this, poolShape<AvgPoolOp>);
}
LogicalResult AvgPoolOp::inferShapes() {
  return inferShape(*this, poolShape<AvgPoolOp>);
}
LogicalResult AvgPoolOp::inference(InferenceContext &ctx) {
  std::vector<float> &dst = ctx.output(getOutput());
  kernels::avgPool(poolParams(*this), ctx.get(getInput()).data(), dst.data(),
                   ctx.getNumThreads());
  finishPool(*this, dst);
  return success();
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

LogicalResult BatchNormOp::verify() {
  return verifyShape(*this, batchNormShape);
}
LogicalResult BatchNormOp::inferShapes() {
  return inferShape(*this, batchNormShape);
}
LogicalResult BatchNormOp::inference(InferenceContext &ctx) {
  kernels::batchNorm(shapeOf(getInput()), ctx.get(getInput()).data(),
                     ctx.get(getMean()).data(), ctx.get(getVariance()).data(),
                     optionalData(ctx, getScale()),
                     optionalData(ctx, getBias()),
                     getEpsilon().convertToDouble(),
                     ctx.output(getOutput()).data());
  std::vector<float> &dst = ctx.output(getOutput());
  if (getDoRelu())
    kernels::applyRelu(dst.data(), dst.size(),
                       getReluLimit().convertToDouble());
  return success();
}

LogicalResult LayerNormOp::verify() {
  return verifyShape(*this, layerNormShape);
}
LogicalResult LayerNormOp::inferShapes() {
  return inferShape(*this, layerNormShape);
}
LogicalResult LayerNormOp::inference(InferenceContext &ctx) {
  Shape in = shapeOf(getInput());
  int64_t axis = normalizeAxis(getAxis(), in.size());
  Shape normShape(in.begin() + axis, in.end());
  int64_t inner = kernels::numElements(normShape);
  int64_t outer = inner ? kernels::numElements(in) / inner : 0;
  std::vector<float> scale = expandOptional(ctx, getScale(), normShape);
  std::vector<float> bias = expandOptional(ctx, getBias(), normShape);
  const float *src = ctx.get(getInput()).data();
  float *dst = ctx.output(getOutput()).data();
  double eps = getEpsilon().convertToDouble();
  ctx.parallelFor(outer, 1, [&](int64_t b, int64_t e) {
    kernels::layerNorm(e - b, inner, src + b * inner,
                       scale.empty() ? nullptr : scale.data(),
                       bias.empty() ? nullptr : bias.data(), eps,
                       dst + b * inner);
  });
  return success();
}

LogicalResult SoftmaxOp::verify() { return verifyShape(*this, softmaxShape); }
LogicalResult SoftmaxOp::inferShapes() {
  return inferShape(*this, softmaxShape);
}
LogicalResult SoftmaxOp::inference(InferenceContext &ctx) {
  Shape in = shapeOf(getInput());
  int64_t axis = normalizeAxis(getAxis(), in.size());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= in[i];
  for (size_t i = axis + 1; i < in.size(); ++i)
    inner *= in[i];
  int64_t len = in[axis];
  const float *src = ctx.get(getInput()).data();
  float *dst = ctx.output(getOutput()).data();
  bool log = getLog();
  ctx.parallelFor(outer, 1, [&](int64_t b, int64_t e) {
    kernels::softmax(e - b, len, inner, src + b * len * inner, log,
                     dst + b * len * inner);
  });
  return success();
}
