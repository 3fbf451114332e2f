//===- TpuNNOps.cpp - Convolution, matmul, pooling, norms
//------------------===//
//
// Inference computes what the BM1684X commands of each op compute
// (ChipMath.h): the same fp32 summation order and intermediate precisions
// as the backend's kernels executed by the simulator, then one rounding to
// the result's element type. The simulator's outputs then agree bit for bit
// (simulator/docs/semantics.md states its order).
//
//===----------------------------------------------------------------------===//
#include "TpuCommon.h"

#include "tpuc/Support/Weights.h"

#include "tpuc/Backend/Backend.h"

using namespace mlir;
using namespace tpuc;
using namespace tpuc::tpu;
using namespace tpuc::tpu::detail;

#define GET_OP_CLASSES
#include "tpuc/Dialect/Tpu/IR/TpuNNOps.cpp.inc"

void TpuDialect::registerNNOps() {
  addOperations<
#define GET_OP_LIST
#include "tpuc/Dialect/Tpu/IR/TpuNNOps.cpp.inc"
      >();
}

namespace {

/// Spatial output extent of a sliding window.
int64_t windowOut(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb,
                  int64_t pe) {
  int64_t span = d * (k - 1) + 1;
  int64_t padded = in + pb + pe;
  if (padded < span || s <= 0)
    return 0;
  return (padded - span) / s + 1;
}

/// Checks the 2-D window attributes (kernel, strides, dilations: 2 positive
/// values; pads: 4 non-negative ones).
LogicalResult checkWindow(Operation *op, const Shape &k, const Shape &s,
                          const Shape &d, const Shape &pads) {
  if (k.size() != 2 || s.size() != 2 || d.size() != 2 || pads.size() != 4)
    return op->emitOpError("needs 2 kernel_shape, strides and dilations "
                           "values and 4 pads");
  auto positive = [](int64_t v) { return v > 0; };
  if (!llvm::all_of(k, positive) || !llvm::all_of(s, positive) ||
      !llvm::all_of(d, positive))
    return op->emitOpError("kernel_shape, strides and dilations must be "
                           "positive");
  if (!llvm::all_of(pads, [](int64_t v) { return v >= 0; }))
    return op->emitOpError("pads must not be negative");
  return success();
}

/// (n, c, h, w) of a 3-D (H = 1) or 4-D activation.
Shape asNCHW(const Shape &s) {
  if (s.size() == 3)
    return {s[0], s[1], 1, s[2]};
  return s;
}

/// Fails unless \p in, the input of a 2-D window op, is 3-D or 4-D.
LogicalResult checkWindowInput(Operation *op, const Shape &in) {
  if (in.size() != 3 && in.size() != 4)
    return op->emitOpError("input must be 3-D or 4-D, is ") << shapeStr(in);
  return success();
}

/// The result shape of a 2-D window op on the 3-D or 4-D input \p in:
/// (n, c, oh, ow), or (n, c, ow) for a 3-D input.
Shape windowResult(const Shape &in, int64_t c, int64_t oh, int64_t ow) {
  if (in.size() == 3)
    return {in[0], c, ow};
  return {in[0], c, oh, ow};
}

/// The kernel parameters of a Conv2D or Deconv2D (which share the
/// attributes): shapes as NCHW, window, groups, fused relu.
template <typename OpT> kernels::ConvParams convParams(OpT op) {
  Shape in = asNCHW(shapeOf(op.getInput()));
  Shape out = asNCHW(shapeOf(op.getOutput()));
  Shape k = toI64(op.getKernelShape()), s = toI64(op.getStrides());
  Shape d = toI64(op.getDilations()), pads = toI64(op.getPads());
  kernels::ConvParams p;
  p.n = in[0];
  p.ic = in[1];
  p.ih = in[2];
  p.iw = in[3];
  p.oc = out[1];
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
  p.group = op.getGroup();
  p.doRelu = op.getDoRelu();
  p.reluLimit = op.getReluLimit().convertToDouble();
  return p;
}

} // namespace

//===----------------------------------------------------------------------===//
// Conv2D
//===----------------------------------------------------------------------===//

namespace {

/// The integers of the tpu.Weight \p v (\p count of them), read from the
/// weight store as integers: the interpreter's float32 buffer of an int32
/// weight would round values above 2^24 (multipliers, biases).
LogicalResult intWeightValues(Operation *op, Value v, int64_t count,
                              std::vector<int64_t> &values) {
  auto w = v.getDefiningOp<WeightOp>();
  if (!w)
    return op->emitOpError("its integer parameters must be a tpu.Weight");
  const ::tpu::npz::Array *array =
      findWeight(module::getModule(op), w.getName());
  if (!array)
    return op->emitOpError("no data for weight '") << w.getName() << "'";
  values = array->toInt64();
  if (int64_t(values.size()) != count)
    return op->emitOpError("weight '")
           << w.getName() << "' holds " << values.size() << " values, not "
           << count;
  return success();
}

/// The int32 requantisation records of an INT8 conv: (oc, 4), or (oc, 8)
/// for two steps (chip::RequantRecord).
LogicalResult requantRecords(Operation *op, Value v, int64_t oc,
                             std::vector<chip::RequantRecord> &records) {
  Shape shape = shapeOf(v);
  int64_t words = shape.size() == 2 ? shape[1] : 4;
  std::vector<int64_t> d;
  if (failed(intWeightValues(op, v, oc * words, d)))
    return failure();
  records.resize(size_t(oc));
  for (int64_t c = 0; c < oc; ++c) {
    auto at = [&](int64_t k) { return int32_t(d[size_t(c * words + k)]); };
    chip::RequantRecord &r = records[size_t(c)];
    r = {at(0), at(1), at(2), at(3)};
    if (words == 8) {
      r.twoSteps = true;
      r.multiplier2 = at(4);
      r.shift2 = at(5);
      r.zeroPoint2 = at(6);
    }
  }
  return success();
}

/// The code a conv's relu limit clamps its INT8 result to
/// (chip::int8ReluHigh), or the int64 maximum.
template <typename OpT>
int64_t reluHighOf(OpT op, quant::UniformQuantizedType outQ) {
  return chip::int8ReluHigh(op.getDoRelu(),
                            op.getReluLimit().convertToDouble(),
                            outQ.getScale(), outQ.getZeroPoint(),
                            outQ.isSigned())
      .value_or(std::numeric_limits<int64_t>::max());
}

} // namespace

FailureOr<std::vector<chip::KShares>>
tpuc::tpu::detail::kSharesAttr(Operation *op, int64_t extent, int64_t columns) {
  std::vector<chip::KShares> out;
  Attribute attr = op->getAttr(kKSharesAttr);
  if (!attr)
    return out;
  auto entries = dyn_cast<ArrayAttr>(attr);
  if (!entries)
    return op->emitOpError(kKSharesAttr) << " must be an array of arrays";
  for (auto [i, e] : llvm::enumerate(entries)) {
    auto arr = dyn_cast<DenseI64ArrayAttr>(e);
    auto bad = [&, i = i]() {
      return op->emitOpError(kKSharesAttr)
             << " entry " << i << " must be [col_begin, col_end, 0, ..., "
             << extent << "] with rising bounds and columns within [0, "
             << columns << "]";
    };
    if (!arr || arr.size() < 4)
      return bad();
    chip::KShares s;
    s.colBegin = arr[0];
    s.colEnd = arr[1];
    s.bounds.assign(arr.asArrayRef().begin() + 2, arr.asArrayRef().end());
    bool ok =
        s.bounds.front() == 0 && s.bounds.back() == extent &&
        ((s.colBegin == 0 && s.colEnd == 0) ||
         (0 <= s.colBegin && s.colBegin < s.colEnd && s.colEnd <= columns));
    for (size_t j = 1; j < s.bounds.size(); ++j)
      ok = ok && s.bounds[j - 1] < s.bounds[j];
    if (!ok)
      return bad();
    out.push_back(std::move(s));
  }
  return out;
}

std::optional<chip::RequantRecord>
tpuc::tpu::detail::requantAttrs(Operation *op, int64_t zeroPoint) {
  auto mult = op->getAttrOfType<ArrayAttr>(kQuantMultiplierAttr);
  auto shift = op->getAttrOfType<ArrayAttr>(kQuantRShiftAttr);
  size_t steps = op->hasAttr(kTfliteArithmeticAttr) ? 2 : 1;
  if (!mult || !shift || mult.size() != steps || shift.size() != steps)
    return std::nullopt;
  Shape m = toI64(mult), r = toI64(shift);
  chip::RequantRecord rq;
  rq.multiplier = int32_t(m[0]);
  rq.shift = -int32_t(r[0]);
  rq.zeroPoint = int32_t(zeroPoint);
  if (steps == 2) {
    rq.zeroPoint = 0;
    rq.twoSteps = true;
    rq.multiplier2 = int32_t(m[1]);
    rq.shift2 = -int32_t(r[1]);
    rq.zeroPoint2 = int32_t(zeroPoint);
  }
  return rq;
}

LogicalResult Conv2DOp::verify() {
  if (failed(verifyName(*this)))
    return failure();
  Shape k = toI64(getKernelShape()), s = toI64(getStrides());
  Shape d = toI64(getDilations()), pads = toI64(getPads());
  if (failed(checkWindow(*this, k, s, d, pads)))
    return failure();
  Shape in = shapeOf(getInput()), w = shapeOf(getFilter());
  if (failed(checkWindowInput(*this, in)))
    return failure();
  if (in.size() == 3 && (k[0] != 1 || pads[0] != 0 || pads[2] != 0))
    return emitOpError("a 3-D input needs kernel height 1 and no H pads");
  Shape nchw = asNCHW(in);
  int64_t g = getGroup();
  if (g <= 0 || nchw[1] % g != 0)
    return emitOpError("group ")
           << g << " does not divide " << nchw[1] << " input channels";
  if (w.size() != 4 || w[1] != nchw[1] / g || w[2] != k[0] || w[3] != k[1] ||
      w[0] % g != 0)
    return emitOpError("filter shape ")
           << shapeStr(w) << " does not fit input " << shapeStr(in)
           << ", group " << g << " and kernel " << shapeStr(k);
  bool integer = isa<quant::UniformQuantizedType>(getElementType(getInput()));
  if (integer) {
    // INT8: the bias operand is the (OC, 4) int32 requantisation records.
    if (isNone(getBias()) ||
        (shapeOf(getBias()) != Shape{w[0], 4} &&
         shapeOf(getBias()) != Shape{w[0], 8}) ||
        !getElementType(getBias()).isInteger(32))
      return emitOpError("an INT8 conv needs its (")
             << w[0] << ", 4) i32 requantisation records (or (" << w[0]
             << ", 8) for two steps) as the bias";
    if (!isa<quant::UniformQuantizedType>(getElementType(getOutput())) ||
        !isa<quant::UniformQuantizedPerAxisType>(getElementType(getFilter())))
      return emitOpError("an INT8 conv needs a quantised result and a "
                         "per-channel quantised filter");
  } else if (!isNone(getBias()) && module::getNumElements(getBias()) != w[0])
    return emitOpError("bias needs ") << w[0] << " values";
  if (failed(checkSameElementType(*this, getFilter(), getInput(), "filter")))
    return failure();
  Shape out =
      windowResult(in, w[0],
                   windowOut(nchw[2], k[0], s[0], d[0], pads[0], pads[2]),
                   windowOut(nchw[3], k[1], s[1], d[1], pads[1], pads[3]));
  return checkShape(*this, getOutput(), out, "result");
}

LogicalResult Conv2DOp::inference(InferenceContext &ctx) {
  kernels::ConvParams p = convParams(*this);
  const float *in = ctx.get(getInput()).data();
  const float *filter = ctx.get(getFilter()).data();
  if (auto inQ = dyn_cast<quant::UniformQuantizedType>(
          getElementType(getInput()))) {
    std::vector<chip::RequantRecord> records;
    if (failed(requantRecords(*this, getBias(), p.oc, records)))
      return failure();
    auto outQ = cast<quant::UniformQuantizedType>(getElementType(getOutput()));
    std::vector<float> &out = ctx.output(getOutput());
    chip::convInt8(p, in, filter, records.data(),
                   int32_t(inQ.getZeroPoint()),
                   ::tpu::backend::isDepthwise(p.ic, p.oc, p.group),
                   outQ.isSigned(),
                   // A relu is the saturation at the zero point, except on
                   // a signed output of zero point 0.
                   getDoRelu() && outQ.isSigned() && outQ.getZeroPoint() == 0,
                   kInt8RoundMode, out.data(), ctx.getNumThreads(),
                   reluHighOf(*this, outQ));
    return success();
  }
  const float *bias = optionalData(ctx, getBias());
  std::vector<float> &out = ctx.output(getOutput());
  // The backend runs a depthwise conv on the vector unit (sPorD, which adds
  // the bias in the input's precision), any other on the cube, one group
  // per command (compiler/backend/lib/Conv.cpp).
  if (::tpu::backend::isDepthwise(p.ic, p.oc, p.group))
    chip::depthwise(p, in, filter, bias, chipPrec(getElementType(getInput())),
                    out.data(), ctx.getNumThreads());
  else
    chip::conv2d(p, in, filter, bias, out.data(), ctx.getNumThreads());
  applyRelu(out, p.doRelu, p.reluLimit);
  roundResult(ctx, getOutput());
  return success();
}

//===----------------------------------------------------------------------===//
// Deconv2D
//===----------------------------------------------------------------------===//

namespace {

/// Output extent of a transposed convolution along one axis.
int64_t deconvOut(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb,
                  int64_t pe, int64_t outPad) {
  return (in - 1) * s + d * (k - 1) + 1 + outPad - pb - pe;
}

} // namespace

LogicalResult Deconv2DOp::verify() {
  if (failed(verifyName(*this)))
    return failure();
  Shape k = toI64(getKernelShape()), s = toI64(getStrides());
  Shape d = toI64(getDilations()), pads = toI64(getPads());
  Shape outPad = toI64(getOutputPadding());
  if (failed(checkWindow(*this, k, s, d, pads)))
    return failure();
  if (outPad.size() != 2)
    return emitOpError("output_padding needs 2 values");
  Shape in = shapeOf(getInput()), w = shapeOf(getFilter());
  if (failed(checkWindowInput(*this, in)))
    return failure();
  Shape nchw = asNCHW(in);
  int64_t g = getGroup();
  if (g <= 0 || nchw[1] % g != 0)
    return emitOpError("group ")
           << g << " does not divide " << nchw[1] << " input channels";
  if (w.size() != 4 || w[0] != nchw[1] || w[2] != k[0] || w[3] != k[1])
    return emitOpError("filter shape ")
           << shapeStr(w) << " does not fit input " << shapeStr(in)
           << " and kernel " << shapeStr(k);
  int64_t oc = w[1] * g;
  if (isa<quant::UniformQuantizedType>(getElementType(getInput()))) {
    // INT8: the bias operand is the (OC, 4) int32 requantisation records.
    if (isNone(getBias()) ||
        (shapeOf(getBias()) != Shape{oc, 4} &&
         shapeOf(getBias()) != Shape{oc, 8}) ||
        !getElementType(getBias()).isInteger(32))
      return emitOpError("an INT8 deconv needs its (")
             << oc << ", 4) i32 requantisation records (or (" << oc
             << ", 8) for two steps) as the bias";
    if (!isa<quant::UniformQuantizedType>(getElementType(getOutput())) ||
        !isa<quant::UniformQuantizedPerAxisType>(getElementType(getFilter())))
      return emitOpError("an INT8 deconv needs a quantised result and a "
                         "per-channel quantised filter");
  } else if (!isNone(getBias()) && module::getNumElements(getBias()) != oc)
    return emitOpError("bias needs ") << oc << " values";
  if (failed(checkSameElementType(*this, getFilter(), getInput(), "filter")))
    return failure();
  Shape out = windowResult(
      in, oc, deconvOut(nchw[2], k[0], s[0], d[0], pads[0], pads[2], outPad[0]),
      deconvOut(nchw[3], k[1], s[1], d[1], pads[1], pads[3], outPad[1]));
  return checkShape(*this, getOutput(), out, "result");
}

LogicalResult Deconv2DOp::inference(InferenceContext &ctx) {
  kernels::ConvParams p = convParams(*this);
  if (isa<quant::UniformQuantizedType>(getElementType(getInput()))) {
    std::vector<chip::RequantRecord> records;
    if (failed(requantRecords(*this, getBias(), p.oc, records)))
      return failure();
    auto outQ = cast<quant::UniformQuantizedType>(getElementType(getOutput()));
    const float *in = ctx.get(getInput()).data();
    const float *filter = ctx.get(getFilter()).data();
    std::vector<float> &out = ctx.output(getOutput());
    chip::deconvInt8(p, in, filter, records.data(), outQ.isSigned(),
                     // As Conv2D: a relu is the saturation at the zero point
                     // except on a signed output of zero point 0.
                     getDoRelu() && outQ.isSigned() &&
                         outQ.getZeroPoint() == 0,
                     kInt8RoundMode, out.data(), ctx.getNumThreads(),
                     reluHighOf(*this, outQ));
    return success();
  }
  std::vector<float> &dst = ctx.output(getOutput());
  chip::deconv2d(p, ctx.get(getInput()).data(), ctx.get(getFilter()).data(),
                 optionalData(ctx, getBias()), dst.data(), ctx.getNumThreads());
  applyRelu(dst, getDoRelu(), getReluLimit().convertToDouble());
  roundResult(ctx, getOutput());
  return success();
}

//===----------------------------------------------------------------------===//
// MatMul
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::verify() {
  if (failed(verifyName(*this)))
    return failure();
  Shape a = shapeOf(getInput()), b = shapeOf(getRight());
  std::optional<Shape> out = kernels::matmulShape(a, b, getRightTranspose());
  if (!out)
    return emitOpError("operand shapes ")
           << shapeStr(a) << " and " << shapeStr(b) << " do not multiply";
  if (!isNone(getBias())) {
    Shape bias = shapeOf(getBias());
    std::optional<Shape> withBias = kernels::broadcastShape(*out, bias);
    if (!withBias || *withBias != *out)
      return emitOpError("bias shape ")
             << shapeStr(bias) << " does not broadcast to " << shapeStr(*out);
  }
  return checkShape(*this, getOutput(), *out, "result");
}

LogicalResult MatMulOp::inference(InferenceContext &ctx) {
  Shape a = shapeOf(getInput()), b = shapeOf(getRight());
  Shape outShape = shapeOf(getOutput());
  std::vector<float> &out = ctx.output(getOutput());
  // The shares of reduced-axis slices (checked either way; an int32 sum
  // is exact in any of them).
  FailureOr<std::vector<chip::KShares>> shares = kSharesAttr(
      *this, a.back(), getRightTranspose() ? b[b.size() - 2] : b.back());
  if (failed(shares))
    return failure();
  if (auto outQ =
          dyn_cast<quant::UniformQuantizedType>(getElementType(getOutput()))) {
    // INT8: a fully connected layer (a 2-D right weight, an int32 bias)
    // or two activations (batched as numpy broadcasts, no bias); int32
    // sums per batch, one requantisation.
    std::optional<chip::RequantRecord> rq =
        requantAttrs(*this, outQ.getZeroPoint());
    if (!rq)
      return emitOpError("an INT8 matmul needs one ")
             << kQuantMultiplierAttr << " / " << kQuantRShiftAttr
             << " (two with " << kTfliteArithmeticAttr << ")";
    if (!getRight().getDefiningOp<WeightOp>()) {
      if (!isNone(getBias()))
        return emitOpError("an INT8 matmul of two activations has no bias");
      std::optional<kernels::MatmulPlan> plan =
          kernels::planMatmul(a, b, getRightTranspose());
      if (!plan)
        return emitOpError("operand shapes do not multiply");
      const kernels::MatmulPlan &p = *plan;
      const float *left = ctx.get(getInput()).data();
      const float *right = ctx.get(getRight()).data();
      for (int64_t i = 0; i < p.numBatch; ++i)
        chip::matmulInt8(p.m, p.k, p.n, left + p.leftOffset(i),
                         right + p.rightOffset(i), getRightTranspose(), nullptr,
                         *rq, outQ.isSigned(), kInt8RoundMode,
                         out.data() + p.outOffset(i));
      return success();
    }
    if (b.size() != 2)
      return emitOpError("an INT8 matmul by a weight needs a 2-D weight");
    int64_t k = a.back(), n = getRightTranspose() ? b[0] : b[1];
    int64_t m = int64_t(ctx.get(getInput()).size()) / k;
    std::vector<int32_t> bias;
    if (!isNone(getBias())) {
      std::vector<int64_t> values;
      if (failed(intWeightValues(*this, getBias(), n, values)))
        return failure();
      bias.assign(values.begin(), values.end());
    }
    chip::matmulInt8(m, k, n, ctx.get(getInput()).data(),
                     ctx.get(getRight()).data(), getRightTranspose(),
                     bias.empty() ? nullptr : bias.data(), *rq,
                     outQ.isSigned(), kInt8RoundMode, out.data());
    return success();
  }
  // MM sums over K ascending (in the shares of reduced-axis slices, where
  // the commands cut K) and adds the fp32 bias after the products.
  chip::matmul(a, ctx.get(getInput()).data(), b, ctx.get(getRight()).data(),
               getRightTranspose(), out.data(), ctx.getNumThreads(), *shares);
  if (!isNone(getBias())) {
    std::vector<float> sum(out.size());
    kernels::broadcastBinary(outShape, out.data(), shapeOf(getBias()),
                             ctx.get(getBias()).data(), outShape, sum.data(),
                             [](float x, float y) { return x + y; });
    out = std::move(sum);
  }
  applyRelu(out, getDoRelu(), getReluLimit().convertToDouble());
  roundResult(ctx, getOutput());
  return success();
}

//===----------------------------------------------------------------------===//
// Pool2D
//===----------------------------------------------------------------------===//

LogicalResult Pool2DOp::verify() {
  if (failed(verifyName(*this)))
    return failure();
  if (getPoolMode() != "max" && getPoolMode() != "avg")
    return emitOpError("pool_mode must be \"max\" or \"avg\"");
  Shape k = toI64(getKernelShape()), s = toI64(getStrides());
  Shape pads = toI64(getPads());
  if (failed(checkWindow(*this, k, s, {1, 1}, pads)))
    return failure();
  Shape in = shapeOf(getInput());
  if (failed(checkWindowInput(*this, in)))
    return failure();
  if (failed(checkSameElementType(*this, getInput(), getOutput(), "input")))
    return failure();
  Shape nchw = asNCHW(in);
  Shape out =
      windowResult(in, nchw[1],
                   windowOut(nchw[2], k[0], s[0], 1, pads[0], pads[2]),
                   windowOut(nchw[3], k[1], s[1], 1, pads[1], pads[3]));
  return checkShape(*this, getOutput(), out, "result");
}

LogicalResult Pool2DOp::inference(InferenceContext &ctx) {
  kernels::PoolParams p;
  p.inShape = asNCHW(shapeOf(getInput()));
  p.outShape = asNCHW(shapeOf(getOutput()));
  p.kernel = toI64(getKernelShape());
  p.strides = toI64(getStrides());
  p.dilations = {1, 1};
  Shape pads = toI64(getPads()); // t, l, b, r = begins then ends
  p.pads = pads;
  p.countIncludePad = getCountIncludePad();
  std::vector<float> &out = ctx.output(getOutput());
  auto outQ = dyn_cast<quant::UniformQuantizedType>(getElementType(getOutput()));
  if (outQ && getPoolMode() == "avg") {
    auto mult = (*this)->getAttrOfType<ArrayAttr>(kQuantMultiplierAttr);
    auto shift = (*this)->getAttrOfType<ArrayAttr>(kQuantRShiftAttr);
    if (!mult || !shift || mult.size() != 1 || shift.size() != 1)
      return emitOpError("an INT8 average pool needs one ")
             << kQuantMultiplierAttr << " and " << kQuantRShiftAttr;
    auto inQ = cast<quant::UniformQuantizedType>(getElementType(getInput()));
    // TFLite's arithmetic averages the raw codes (no zero points).
    bool raw = (*this)->hasAttr(kTfliteArithmeticAttr);
    chip::avgPoolInt8(p, ctx.get(getInput()).data(), toI64(mult)[0],
                      int(toI64(shift)[0]), raw ? 0 : inQ.getZeroPoint(),
                      raw ? 0 : outQ.getZeroPoint(), outQ.isSigned(),
                      kInt8RoundMode, out.data(), ctx.getNumThreads());
    return success();
  }
  if (getPoolMode() == "max")
    kernels::maxPool(p, ctx.get(getInput()).data(), out.data(),
                     ctx.getNumThreads());
  else
    chip::avgPool2d(p, ctx.get(getInput()).data(), out.data(),
                    ctx.getNumThreads());
  applyRelu(out, getDoRelu(), getReluLimit().convertToDouble());
  roundResult(ctx, getOutput());
  return success();
}

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  if (failed(verifyName(*this)))
    return failure();
  Shape in = shapeOf(getInput());
  int64_t axis = static_cast<int64_t>(getAxis());
  if (axis < 0 || axis >= static_cast<int64_t>(in.size()))
    return emitOpError("axis ")
           << axis << " is not in [0, " << in.size() << ")";
  // Any float types: the kernel computes in fp32 and rounds once to the
  // result's type (an F16 softmax feeding an f32 model output writes f32).
  Type inT = getElementType(getInput()), outT = getElementType(getOutput());
  if (!isa<FloatType>(inT) || !isa<FloatType>(outT))
    return emitOpError("input and result must be float, not ")
           << inT << " and " << outT;
  return checkShape(*this, getOutput(), in, "result");
}

LogicalResult SoftmaxOp::inference(InferenceContext &ctx) {
  Shape in = shapeOf(getInput());
  int64_t axis = getAxis();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= in[i];
  for (size_t i = axis + 1; i < in.size(); ++i)
    inner *= in[i];
  std::vector<float> &out = ctx.output(getOutput());
  chip::softmax(outer, in[axis], inner, ctx.get(getInput()).data(), getLog(),
                out.data());
  roundResult(ctx, getOutput());
  return success();
}

//===----------------------------------------------------------------------===//
// LayerNorm
//===----------------------------------------------------------------------===//

LogicalResult LayerNormOp::verify() {
  if (failed(verifyName(*this)))
    return failure();
  Shape in = shapeOf(getInput());
  int64_t axis = static_cast<int64_t>(getAxis());
  if (axis < 0 || axis >= static_cast<int64_t>(in.size()))
    return emitOpError("axis ")
           << axis << " is not in [0, " << in.size() << ")";
  int64_t inner = 1;
  for (size_t i = axis; i < in.size(); ++i)
    inner *= in[i];
  for (Value v : {getScale(), getBias()})
    if (!isNone(v) && module::getNumElements(v) != inner)
      return emitOpError("scale and bias need ") << inner << " values";
  return checkShape(*this, getOutput(), in, "result");
}

LogicalResult LayerNormOp::inference(InferenceContext &ctx) {
  Shape in = shapeOf(getInput());
  int64_t axis = static_cast<int64_t>(getAxis());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= in[i];
  for (size_t i = axis; i < in.size(); ++i)
    inner *= in[i];
  std::vector<float> &out = ctx.output(getOutput());
  chip::layerNorm(outer, inner, ctx.get(getInput()).data(),
                  optionalData(ctx, getScale()), optionalData(ctx, getBias()),
                  static_cast<float>(getEpsilon().convertToDouble()),
                  out.data());
  roundResult(ctx, getOutput());
  return success();
}
