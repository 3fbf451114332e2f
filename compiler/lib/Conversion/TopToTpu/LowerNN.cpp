//===- LowerNN.cpp - Lowering of convolutions, matmul, pools, norms
//--------===//
//
// Filters and matmul weights take the mode's element type; biases and the
// LayerNorm scale / bias stay f32, which is what the BM1684X float kernels
// read (isa/docs/bm1684x.md 8.4). The filter layout is chosen later by
// --tpu-weight-reorder. 1-D and 2-D pools become tpu.Pool2D, 3-D pools
// tpu.Pool3D.
//
//===----------------------------------------------------------------------===//
#include "Lowering.h"

using namespace mlir;
using namespace tpuc;
using namespace tpuc::lowering;

namespace {

/// 2-D window attributes from a 1-D or 2-D top op (a 1-D op gets H = 1).
struct Window {
  Shape kernel, strides, dilations, pads; // pads: top, left, bottom, right
};

FailureOr<Window> window2d(Operation *op, Lowering &l, ArrayAttr kernel,
                           ArrayAttr strides, ArrayAttr dilations,
                           ArrayAttr pads) {
  Shape k = toI64(kernel), s = toI64(strides), d = toI64(dilations);
  Shape p = toI64(pads);
  if (d.empty())
    d.assign(k.size(), 1);
  if (k.size() == 1)
    return Window{{1, k[0]}, {1, s[0]}, {1, d[0]}, {0, p[0], 0, p[1]}};
  if (k.size() == 2)
    return Window{k, s, d, p};
  return l.unsupported(op, Twine(k.size()) + "-D windows are not supported");
}

/// An optional f32 per-channel operand: a weight, or none.
FailureOr<Value> f32Weight(Operation *op, Lowering &l, Value v,
                           StringRef what) {
  if (top::isNone(v))
    return v;
  if (!Lowering::isWeight(v))
    return l.unsupported(op, Twine("the ") + what + " must be a weight");
  return l.weight(v, Builder(l.getContext()).getF32Type());
}

/// The largest stride the backend's conv2d takes (its command fields are 4
/// bits; compiler/backend/include/tpuc/Backend/Backend.h, ConvParams).
constexpr int64_t kMaxConvStride = 15;

/// A 1-D conv (H = 1) whose stride s exceeds kMaxConvStride, e.g. an STFT
/// as a conv: rewritten as a stride-1 conv on the input folded s-wise into
/// channels (space to depth),
///   y[o] = sum_{c, j < k} w[c][j] x[c][o s + j]
///        = sum_{c, r < s, q < Q} w[c][q s + r] X[c s + r][o + q],
/// with X[c s + r][t] = x[c][t s + r] and Q = ceil(k / s): a reshape and a
/// permute of the (padded or cut) input, and a filter of C s input
/// channels and width Q (taps past k are zero).
LogicalResult lowerStridedConv1D(top::ConvOp op, Lowering &l, const Window &w) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  Shape in = module::getShape(op.getInput());
  Shape out = module::getShape(op.getOutput());
  bool threeD = in.size() == 3;
  int64_t n = in[0], c = in[1], len = in.back(), oc = out[1], ow = out.back();
  int64_t s = w.strides[1], k = w.kernel[1], q = (k + s - 1) / s;
  int64_t frames = ow + q - 1, padded = frames * s;
  int64_t padBegin = w.pads[1];
  int64_t padEnd = padded - len - padBegin;
  Value x = l.activation(b, op.getInput());
  std::string base = op.getName().str();
  // (n, c, len): pad or cut to (n, c, frames * s).
  x = b.create<tpu::ReshapeOp>(loc, l.tensorType({n, c, len}), x, base + "_1d")
          .getOutput();
  int64_t kept = len + std::min<int64_t>(padEnd, 0);
  if (kept < len)
    x = b.create<tpu::SliceOp>(loc, l.tensorType({n, c, kept}), x,
                               b.getI64ArrayAttr({0, 0, 0}),
                               b.getI64ArrayAttr({1, 1, 1}), base + "_cut")
            .getOutput();
  if (padBegin > 0 || padEnd > 0)
    x = b.create<tpu::PadOp>(loc, l.tensorType({n, c, padded}), x,
                             b.getI64ArrayAttr({0, 0, padBegin, 0, 0,
                                                std::max<int64_t>(padEnd, 0)}),
                             "constant", APFloat(0.0), base + "_pad")
            .getOutput();
  // (n, c, frames, s) -> (n, c, s, frames) -> (n, c * s, frames).
  x = b.create<tpu::ReshapeOp>(loc, l.tensorType({n, c, frames, s}), x,
                               base + "_frames")
          .getOutput();
  x = b.create<tpu::PermuteOp>(loc, l.tensorType({n, c, s, frames}), x,
                               b.getI64ArrayAttr({0, 1, 3, 2}), base + "_s2d")
          .getOutput();
  x = b.create<tpu::ReshapeOp>(loc, l.tensorType({n, c * s, frames}), x,
                               base + "_folded")
          .getOutput();
  std::vector<float> filter = l.weightData(op.getFilter());
  std::vector<float> folded(size_t(oc * c * s * q), 0.0f);
  for (int64_t o = 0; o < oc; ++o)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t j = 0; j < k; ++j)
        folded[size_t(((o * c + ci) * s + j % s) * q + j / s)] =
            filter[size_t((o * c + ci) * k + j)];
  Value wt = l.newWeight(b, loc, base + "_folded_filter", {oc, c * s, 1, q},
                         folded, l.actType());
  FailureOr<Value> bias = f32Weight(op, l, op.getBias(), "bias");
  if (failed(bias))
    return failure();
  Shape convOut = {n, oc, ow};
  auto conv = b.create<tpu::Conv2DOp>(
      loc, l.tensorType(convOut), x, wt, *bias, b.getI64ArrayAttr({1, q}),
      b.getI64ArrayAttr({1, 1}), b.getI64ArrayAttr({0, 0, 0, 0}),
      b.getI64ArrayAttr({1, 1}), 1, op.getDoRelu(), op.getReluLimit(),
      threeD ? op.getName() : StringRef(base + "_conv"));
  Value result = conv.getOutput();
  if (!threeD)
    result = b.create<tpu::ReshapeOp>(loc, l.actTypeOf(op.getOutput()), result,
                                      op.getName())
                 .getOutput();
  replaceOp(op, result);
  return success();
}

LogicalResult lowerConv(Operation *o, Lowering &l) {
  auto op = cast<top::ConvOp>(o);
  FailureOr<Window> w = window2d(o, l, op.getKernelShape(), op.getStrides(),
                                 op.getDilations(), op.getPads());
  if (failed(w))
    return failure();
  Shape inShape = module::getShape(op.getInput());
  bool oneD = inShape.size() == 3 ||
              (inShape.size() == 4 && inShape[2] == 1 && w->kernel[0] == 1 &&
               w->pads[0] == 0 && w->pads[2] == 0);
  if (oneD && w->strides[1] > kMaxConvStride && w->dilations[1] == 1 &&
      op.getGroup() == 1 && Lowering::isWeight(op.getFilter()))
    return lowerStridedConv1D(op, l, *w);
  if (!Lowering::isWeight(op.getFilter()))
    return l.unsupported(o, "the filter must be a weight");
  FailureOr<Value> bias = f32Weight(o, l, op.getBias(), "bias");
  if (failed(bias))
    return failure();
  OpBuilder b(o);
  Value input = l.activation(b, op.getInput());
  Shape filterShape = module::getShape(op.getFilter());
  if (filterShape.size() == 3) // (oc, ic, kw) -> (oc, ic, 1, kw)
    filterShape.insert(filterShape.begin() + 2, 1);
  Value filter =
      l.weight(op.getFilter(), l.actType(), tpu::kLayoutCompact, filterShape);
  auto conv = b.create<tpu::Conv2DOp>(
      op.getLoc(), l.actTypeOf(op.getOutput()), input, filter, *bias,
      b.getI64ArrayAttr(w->kernel), b.getI64ArrayAttr(w->strides),
      b.getI64ArrayAttr(w->pads), b.getI64ArrayAttr(w->dilations),
      op.getGroup(), op.getDoRelu(), op.getReluLimit(), op.getName());
  replaceOp(o, conv.getOutput());
  return success();
}

LogicalResult lowerConvTranspose(Operation *o, Lowering &l) {
  auto op = cast<top::ConvTransposeOp>(o);
  FailureOr<Window> w = window2d(o, l, op.getKernelShape(), op.getStrides(),
                                 op.getDilations(), op.getPads());
  if (failed(w))
    return failure();
  if (!Lowering::isWeight(op.getFilter()))
    return l.unsupported(o, "the filter must be a weight");
  FailureOr<Value> bias = f32Weight(o, l, op.getBias(), "bias");
  if (failed(bias))
    return failure();
  Shape outPad = toI64(op.getOutputPadding());
  if (outPad.empty())
    outPad = {0, 0};
  else if (outPad.size() == 1)
    outPad = {0, outPad[0]};
  Shape filterShape = module::getShape(op.getFilter());
  if (filterShape.size() == 3) // (ic, oc / g, kw) -> (ic, oc / g, 1, kw)
    filterShape.insert(filterShape.begin() + 2, 1);
  OpBuilder b(o);
  Value input = l.activation(b, op.getInput());
  Value filter =
      l.weight(op.getFilter(), l.actType(), tpu::kLayoutCompact, filterShape);
  auto deconv = b.create<tpu::Deconv2DOp>(
      op.getLoc(), l.actTypeOf(op.getOutput()), input, filter, *bias,
      b.getI64ArrayAttr(w->kernel), b.getI64ArrayAttr(w->strides),
      b.getI64ArrayAttr(w->pads), b.getI64ArrayAttr(w->dilations),
      b.getI64ArrayAttr(outPad), op.getGroup(), op.getDoRelu(),
      op.getReluLimit(), op.getName());
  replaceOp(o, deconv.getOutput());
  return success();
}

LogicalResult lowerMatMul(Operation *o, Lowering &l) {
  auto op = cast<top::MatMulOp>(o);
  OpBuilder b(o);
  Shape out = module::getShape(op.getOutput());
  Value input = l.activation(b, op.getInput());
  Value right = l.activation(b, op.getRight());
  // The kernel adds an f32 bias of N values; any other bias is an Add.
  Value bias = op.getBias();
  bool fuseBias =
      top::isNone(bias) || (Lowering::isWeight(bias) && !out.empty() &&
                            module::getNumElements(bias) == out.back());
  Value fused = fuseBias && !top::isNone(bias) ? l.weight(bias, b.getF32Type())
                                               : (fuseBias ? bias : Value());
  if (!fused)
    fused = b.create<top::NoneOp>(op.getLoc(), b.getNoneType()).getOutput();
  bool reluInMatMul = fuseBias && op.getDoRelu();
  std::string mmName =
      fuseBias ? op.getName().str() : op.getName().str() + "_mm";
  auto mm = b.create<tpu::MatMulOp>(op.getLoc(), l.actTypeOf(op.getOutput()),
                                    input, right, fused, op.getRightTranspose(),
                                    reluInMatMul, op.getReluLimit(), mmName);
  Value result = mm.getOutput();
  if (!fuseBias) {
    Value biasAct = l.activation(b, bias);
    result = b.create<tpu::AddOp>(op.getLoc(), l.actTypeOf(op.getOutput()),
                                  result, biasAct, op.getDoRelu(),
                                  op.getReluLimit(), op.getName())
                 .getOutput();
  }
  replaceOp(o, result);
  return success();
}

/// A 3-D pool (rank-5 input): tpu.Pool3D with the pads in ONNX order
/// (front, top, left, back, bottom, right).
template <typename PoolOpT>
LogicalResult lowerPool3D(PoolOpT op, Lowering &l, StringRef mode) {
  Operation *o = op.getOperation();
  Shape k = toI64(op.getKernelShape()), s = toI64(op.getStrides());
  Shape d = toI64(op.getDilations()), p = toI64(op.getPads());
  if (module::getShape(op.getInput()).size() != 5 || s.size() != 3 ||
      p.size() != 6)
    return l.unsupported(o, "a 3-D window needs a 5-D input, 3 strides and "
                            "6 pads");
  if (llvm::any_of(d, [](int64_t v) { return v != 1; }))
    return l.unsupported(o, "dilated pooling is not supported");
  for (int i = 0; i < 3; ++i)
    if (p[i] >= k[i] || p[i + 3] >= k[i])
      return l.unsupported(o, "pads must be smaller than the kernel (a window "
                              "of padding only has no value)");
  OpBuilder b(o);
  Value input = l.activation(b, op.getInput());
  auto pool = b.create<tpu::Pool3DOp>(
      op.getLoc(), l.actTypeOf(op.getOutput()), input, mode,
      op.getKernelShape(), op.getStrides(), op.getPads(),
      op.getCountIncludePad(), op.getDoRelu(), op.getReluLimit(), op.getName());
  replaceOp(o, pool.getOutput());
  return success();
}

template <typename PoolOpT>
LogicalResult lowerPool(Operation *o, Lowering &l, StringRef mode) {
  auto op = cast<PoolOpT>(o);
  if (op.getKernelShape().size() == 3)
    return lowerPool3D(op, l, mode);
  FailureOr<Window> w = window2d(o, l, op.getKernelShape(), op.getStrides(),
                                 op.getDilations(), op.getPads());
  if (failed(w))
    return failure();
  if (w->dilations != Shape{1, 1})
    return l.unsupported(o, "dilated pooling is not supported");
  OpBuilder b(o);
  Value input = l.activation(b, op.getInput());
  auto pool = b.create<tpu::Pool2DOp>(
      op.getLoc(), l.actTypeOf(op.getOutput()), input, mode,
      b.getI64ArrayAttr(w->kernel), b.getI64ArrayAttr(w->strides),
      b.getI64ArrayAttr(w->pads), op.getCountIncludePad(), op.getDoRelu(),
      op.getReluLimit(), op.getName());
  replaceOp(o, pool.getOutput());
  return success();
}

LogicalResult lowerMaxPool(Operation *o, Lowering &l) {
  return lowerPool<top::MaxPoolOp>(o, l, "max");
}
LogicalResult lowerAvgPool(Operation *o, Lowering &l) {
  return lowerPool<top::AvgPoolOp>(o, l, "avg");
}

/// A BatchNorm that was not folded into a conv: y = x * a + c per channel
/// with a = scale / sqrt(var + eps) and c = bias - mean * a, one tpu.Scale
/// with (1, C, 1, ...) weights that also applies the fused relu.
LogicalResult lowerBatchNorm(Operation *o, Lowering &l) {
  auto op = cast<top::BatchNormOp>(o);
  std::string why;
  std::optional<BatchNormAffine> affine = batchNormAffine(op, l, why);
  if (!affine)
    return l.unsupported(o, why);
  Shape in = module::getShape(op.getInput());
  int64_t c = in[1];
  const std::vector<float> &a = affine->scale, &shift = affine->shift;
  Shape wShape(in.size(), 1);
  wShape[1] = c;
  OpBuilder b(o);
  Value input = l.activation(b, op.getInput());
  Value wa = l.newWeight(b, op.getLoc(), op.getName().str() + "_scale", wShape,
                         a, l.actType());
  Value wc = l.newWeight(b, op.getLoc(), op.getName().str() + "_shift", wShape,
                         shift, l.actType());
  auto scaleOp = b.create<tpu::ScaleOp>(
      op.getLoc(), l.actTypeOf(op.getOutput()), input, wa, wc,
      op.getDoRelu(), op.getReluLimit(), op.getName());
  replaceOp(o, scaleOp.getOutput());
  return success();
}

LogicalResult lowerLayerNorm(Operation *o, Lowering &l) {
  auto op = cast<top::LayerNormOp>(o);
  Shape in = module::getShape(op.getInput());
  int64_t axis = normalizeAxis(op.getAxis(), in.size());
  if (axis < 0)
    return l.unsupported(o, "axis out of range");
  int64_t inner = 1;
  for (size_t i = axis; i < in.size(); ++i)
    inner *= in[i];
  OpBuilder b(o);
  SmallVector<Value, 2> params;
  for (auto [v, what] :
       {std::pair{op.getScale(), "scale"}, std::pair{op.getBias(), "bias"}}) {
    if (top::isNone(v)) {
      params.push_back(v);
      continue;
    }
    if (!Lowering::isWeight(v))
      return l.unsupported(o, Twine("the ") + what + " must be a weight");
    std::vector<float> data = l.weightData(v);
    if (static_cast<int64_t>(data.size()) == inner) {
      params.push_back(l.weight(v, b.getF32Type()));
      continue;
    }
    // Broadcast a smaller parameter to the normalised axes.
    Shape target(in.begin() + axis, in.end());
    std::vector<float> full(inner);
    Shape src = module::getShape(v);
    src.insert(src.begin(), target.size() - std::min(target.size(), src.size()),
               1);
    for (int64_t i = 0; i < inner; ++i) {
      int64_t rem = i, off = 0, stride = 1;
      for (int64_t d = static_cast<int64_t>(target.size()) - 1; d >= 0; --d) {
        int64_t idx = rem % target[d];
        rem /= target[d];
        off += (src[d] == 1 ? 0 : idx) * stride;
        stride *= src[d];
      }
      full[i] = data[off];
    }
    params.push_back(l.newWeight(b, op.getLoc(),
                                 op.getName().str() + "_" + what, target, full,
                                 b.getF32Type()));
  }
  Value input = l.activation(b, op.getInput());
  auto ln = b.create<tpu::LayerNormOp>(op.getLoc(), l.actTypeOf(op.getOutput()),
                                       input, params[0], params[1], axis,
                                       op.getEpsilon(), op.getName());
  replaceOp(o, ln.getOutput());
  return success();
}

LogicalResult lowerSoftmax(Operation *o, Lowering &l) {
  auto op = cast<top::SoftmaxOp>(o);
  int64_t axis =
      normalizeAxis(op.getAxis(), module::getShape(op.getInput()).size());
  if (axis < 0)
    return l.unsupported(o, "axis out of range");
  OpBuilder b(o);
  Value input = l.activation(b, op.getInput());
  auto sm = b.create<tpu::SoftmaxOp>(op.getLoc(), l.actTypeOf(op.getOutput()),
                                     input, axis, op.getLog(), op.getName());
  replaceOp(o, sm.getOutput());
  return success();
}

} // namespace

namespace tpuc::lowering {

std::optional<BatchNormAffine> batchNormAffine(top::BatchNormOp op, Lowering &l,
                                               std::string &why) {
  for (Value v : {op.getMean(), op.getVariance()})
    if (!Lowering::isWeight(v)) {
      why = "mean and variance must be weights";
      return std::nullopt;
    }
  for (Value v : {op.getScale(), op.getBias()})
    if (!top::isNone(v) && !Lowering::isWeight(v)) {
      why = "scale and bias must be weights";
      return std::nullopt;
    }
  Shape in = module::getShape(op.getInput());
  if (in.size() < 2) {
    why = "the input needs a channel axis";
    return std::nullopt;
  }
  size_t c = size_t(in[1]);
  std::vector<float> mean = l.weightData(op.getMean());
  std::vector<float> var = l.weightData(op.getVariance());
  std::vector<float> scale = top::isNone(op.getScale())
                                 ? std::vector<float>(c, 1.0f)
                                 : l.weightData(op.getScale());
  std::vector<float> bias = top::isNone(op.getBias())
                                ? std::vector<float>(c, 0.0f)
                                : l.weightData(op.getBias());
  double eps = op.getEpsilon().convertToDouble();
  BatchNormAffine r{std::vector<float>(c), std::vector<float>(c)};
  for (size_t i = 0; i < c; ++i) {
    r.scale[i] = static_cast<float>(scale[i] / std::sqrt(double(var[i]) + eps));
    r.shift[i] = bias[i] - mean[i] * r.scale[i];
  }
  return r;
}

void registerNNLowerings(LoweringTable &table) {
  table["top.Conv"] = lowerConv;
  table["top.ConvTranspose"] = lowerConvTranspose;
  table["top.MatMul"] = lowerMatMul;
  table["top.MaxPool"] = lowerMaxPool;
  table["top.AvgPool"] = lowerAvgPool;
  table["top.BatchNorm"] = lowerBatchNorm;
  table["top.LayerNorm"] = lowerLayerNorm;
  table["top.Softmax"] = lowerSoftmax;
}

} // namespace tpuc::lowering
