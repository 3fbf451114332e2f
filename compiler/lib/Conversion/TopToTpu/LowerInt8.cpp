//===- LowerInt8.cpp - INT8 lowering of the ops that have an INT8 form ----===//
//
// Symmetric INT8 (compiler/docs/design.md "INT8"):
//  * an activation's type comes from the calibration table: threshold th,
//    scale th / 127 (int8), or th / 255 and uint8 when the calibrated
//    minimum is >= 0 and no reader needs it signed (a depthwise conv: the
//    sPorD result takes its input's sign, so an unsigned input would
//    saturate negative sums at 0). Zero points are 0;
//  * conv filters are int8 per output channel, scale max|w| / 127 (an
//    unfolded BatchNorm is a depthwise 1 x 1 conv of its scale and shift); the
//    bias is int32 in units of s_w * s_in; the int32 accumulator is
//    requantised per output channel by multiplier / 2^rshift =
//    s_w * s_in / s_out (getScaleAndShift, 32 bits). The four int32 words
//    [bias, multiplier, -rshift, zero point] of every output channel are
//    one weight, the conv's third operand;
//  * max pooling and data movement (reshape, permute, slice, zero pad,
//    nearest resize, concat of one type) keep their input's type; a concat
//    of different types requantises the other inputs to its own by tables;
//  * a transposed convolution is the conv's sequence on the zero-inserted
//    input (input zero point 0);
//  * average pooling rescales its int32 window sum by s_in / (s_out * k);
//  * add / sub rescale both inputs to the output (16-bit multipliers, 8
//    fraction bits, see tpu.Add);
//  * element-wise functions of one input are 256-entry tables; a chain of
//    them is one table.
// Every op without an INT8 form here runs in the fallback float mode;
// tpu.Cast ops quantise and dequantise at the boundaries.
//
//===----------------------------------------------------------------------===//
#include "Lowering.h"

#include "tpu/isa/Numerics.h"
#include "tpuc/Dialect/Tpu/IR/Int8.h"

#include "tpuc/Support/Weights.h"

#include <cmath>
#include <functional>

using namespace mlir;
using namespace tpuc;
using namespace tpuc::lowering;

namespace tpuc::lowering {

namespace tisa = ::tpu::isa;

namespace {

/// A top.Conv reading \p v as a depthwise convolution, or a BatchNorm
/// (INT8 runs it as one).
bool readByDepthwise(Value v) {
  for (Operation *user : v.getUsers())
    if (isa<top::BatchNormOp>(user))
      return true;
    else if (auto conv = dyn_cast<top::ConvOp>(user)) {
      Shape in = module::getShape(conv.getInput());
      Shape out = module::getShape(conv.getOutput());
      int64_t g = int64_t(conv.getGroup());
      if (in.size() >= 2 && out.size() >= 2 && g > 1 && g == in[1] &&
          g == out[1])
        return true;
    }
  return false;
}

quant::UniformQuantizedType int8Type(MLIRContext *ctx, double scale,
                                     bool isSigned, int64_t zeroPoint = 0) {
  return quant::UniformQuantizedType::get(
      isSigned ? quant::QuantizationFlags::Signed : 0,
      IntegerType::get(ctx, 8), Float32Type::get(ctx), scale, zeroPoint,
      isSigned ? -128 : 0, isSigned ? 127 : 255);
}

/// Every reader of \p v is a conv or a BatchNorm (which fold an input zero
/// point into their bias), and \p v is computed by one of them or comes
/// from a float op (whose quantising cast takes a zero point).
bool zeroPointFoldable(Value v) {
  if (v.use_empty())
    return false;
  for (Operation *user : v.getUsers())
    if (!isa<top::ConvOp, top::BatchNormOp>(user))
      return false;
  Operation *def = v.getDefiningOp();
  // An add / sub with a one-element weight is a table (any zero point).
  bool table = def && isa<top::AddOp, top::SubOp>(def) &&
               llvm::any_of(def->getOperands(), [](Value o) {
                 return Lowering::isWeight(o) &&
                        module::getNumElements(o) == 1;
               });
  return !def || table || isa<top::ConvOp, top::BatchNormOp>(def) ||
         !isa<top::MaxPoolOp, top::AvgPoolOp, top::AddOp, top::SubOp,
              top::ReshapeOp, top::PermuteOp, top::SliceOp, top::PadOp,
              top::ConcatOp, top::InterpOp>(def);
}

} // namespace

const ModelQuant *Lowering::modelQuant(Value v) const {
  if (!tfliteArithmetic() || top::isNone(v))
    return nullptr;
  return cali->findModelQuant(top::getTensorName(v));
}

quant::UniformQuantizedType Lowering::quantType(Value v) {
  std::string name = top::getTensorName(v);
  auto it = qtypes.find(name);
  if (it != qtypes.end())
    return it->second;
  if (const ModelQuant *mq = modelQuant(v);
      mq && mq->storage != ModelQuant::Storage::Int32 &&
      mq->scales.size() == 1) {
    // The model's own scale and zero point, exactly.
    bool isSigned = mq->storage == ModelQuant::Storage::Int8;
    auto t = int8Type(getContext(), mq->scales[0], isSigned, mq->zeroPoint);
    qtypes[name] = t;
    return t;
  }
  const CaliEntry *e = cali ? cali->find(name) : nullptr;
  if (!e)
    return {};
  double th = std::max(e->threshold, 1e-5);
  quant::UniformQuantizedType t;
  if (asymmetric) {
    // [min, max] widened to hold 0, in the 256 int8 codes: scale
    // (max - min) / 255, q = x / scale + zp with zp = round(-128 - min /
    // scale) (0 is exactly a code).
    double lo = std::min(e->min, 0.0), hi = std::max(e->max, 0.0);
    double scale = std::max(hi - lo, 1e-5) / 255.0;
    int64_t zp = std::clamp<int64_t>(
        tisa::roundToInt(-128.0 - lo / scale,
                         tisa::RoundMode::HalfAwayFromZero),
        -128, 127);
    t = int8Type(getContext(), scale, true, zp);
  } else if (e->min < 0 && e->min > -th && v.getDefiningOp() &&
             readByDepthwise(v) && zeroPointFoldable(v)) {
    // A skewed value a depthwise conv reads (PP-OCRv4's affine block
    // output: [-0.8, 76]): [max(min, -th), th] in the 256 codes with a zero
    // point the readers fold into their bias, up to twice the resolution
    // of th / 127.
    double scale = (th - e->min) / 255.0;
    int64_t zp = std::clamp<int64_t>(
        tisa::roundToInt(-128.0 - e->min / scale,
                         tisa::RoundMode::HalfAwayFromZero),
        -128, 127);
    t = int8Type(getContext(), scale, true, zp);
  } else if (e->min < 0)
    t = int8Type(getContext(), th / 127.0, true);
  else if (!readByDepthwise(v))
    t = int8Type(getContext(), th / 255.0, false);
  else if (zeroPointFoldable(v))
    // [0, th] in all 256 int8 codes: q = x / s - 128 (the readers fold the
    // zero point into their bias; the depthwise sPorD needs a signed input).
    t = int8Type(getContext(), th / 255.0, true, -128);
  else
    t = int8Type(getContext(), th / 127.0, true);
  qtypes[name] = t;
  return t;
}

Value Lowering::int8Operand(Value v) {
  if (isa<quant::UniformQuantizedType>(tpu::getElementType(v)))
    return v;
  if (isWeight(v) || top::isNone(v))
    return {};
  auto t = quantType(v);
  if (!t)
    return {};
  return castTo(v, t);
}

namespace {

quant::UniformQuantizedType qtypeOf(Value v) {
  return dyn_cast<quant::UniformQuantizedType>(tpu::getElementType(v));
}

/// A relu on a result of type \p q is its saturation: real 0 is the
/// lowest code (uint8 zero point 0, or int8 zero point -128).
bool reluIsSaturation(quant::UniformQuantizedType q) {
  return q.getZeroPoint() == q.getStorageTypeMin();
}

/// "no calibration entry for 'x'".
std::string noEntry(Value v) {
  return "the calibration table has no entry for '" + top::getTensorName(v) +
         "'";
}

bool fits4(ArrayRef<int64_t> v) {
  return llvm::all_of(v, [](int64_t x) { return x >= 0 && x <= 15; });
}

/// Symmetric int8 weights: scale max|w| / 127 (1 for all zeros), q =
/// clamp(round_half_away(w / scale), -127, 127) into \p q; returns the
/// scale. Conv filters use it per output channel, matmuls per tensor.
double quantizeSymmetricInt8(ArrayRef<float> w, MutableArrayRef<float> q) {
  float mx = 0.0f;
  for (float v : w)
    mx = std::max(mx, std::fabs(v));
  double scale = mx > 0 ? double(mx) / 127.0 : 1.0;
  for (size_t i = 0; i < w.size(); ++i)
    q[i] = float(std::clamp<int64_t>(
        tisa::roundToInt(double(w[i]) / scale,
                         tisa::RoundMode::HalfAwayFromZero),
        -127, 127));
  return scale;
}

/// Output channel \p c's requantisation record in \p coeff (oc, 4): the
/// int32 bias \p bq (in accumulator units), the multiplier and the negated
/// right shift of \p scale (accumulator unit / output unit), and the output
/// zero point. Conv and deconv write the same record.
void setRequantRecord(std::vector<int32_t> &coeff, int64_t c, int64_t bq,
                      double scale, quant::UniformQuantizedType outQ) {
  int64_t mult = 1;
  int rshift = 0;
  tisa::getScaleAndShift(scale, mult, rshift, 32);
  coeff[size_t(c * 4 + 0)] =
      int32_t(tisa::saturate(bq, tisa::Prec::Int32, true));
  coeff[size_t(c * 4 + 1)] = int32_t(mult);
  coeff[size_t(c * 4 + 2)] = -rshift;
  coeff[size_t(c * 4 + 3)] = int32_t(outQ.getZeroPoint());
}

/// TFLite's requantisation by \p real (QuantizeMultiplier: multiplier M in
/// [2^30, 2^31), left shift e) as two RQ1 steps, written as the
/// (multiplier, -rshift) pairs of chip::RequantRecord: t = (acc * M) >>
/// (31 - max(e, 0)) rounding half up (its doubling high multiply, with the
/// left shift folded in), then y = t >> max(-e, 0) rounding half away from
/// zero (its rounding divide by a power of two), plus the zero point.
struct TfliteRequant {
  int32_t m1 = 0, negShift1 = 0, negShift2 = 0; ///< the second multiplier is 1
};
TfliteRequant tfliteRequant(double real) {
  int32_t m = 0;
  int e = 0;
  tisa::quantizeMultiplier(real, m, e);
  TfliteRequant r;
  r.m1 = m;
  r.negShift1 = -(31 - std::max(e, 0));
  r.negShift2 = -std::max(-e, 0);
  return r;
}

/// A channel's eight-word record of TFLite's two steps (chip::
/// RequantRecord) at \p rec: int32 bias \p bias, tfliteRequant(\p real),
/// the output zero point in the second step.
void setTfliteRecord(int32_t *rec, int64_t bias, double real,
                     quant::UniformQuantizedType outQ) {
  TfliteRequant r = tfliteRequant(real);
  rec[0] = int32_t(tisa::saturate(bias, tisa::Prec::Int32, true));
  rec[1] = r.m1;
  rec[2] = r.negShift1;
  rec[3] = 0;
  rec[4] = 1;
  rec[5] = r.negShift2;
  rec[6] = int32_t(outQ.getZeroPoint());
  rec[7] = 0;
}

/// The int8 codes of a weight of the model's own symmetric quantisation
/// \p mq: w / s (exact: the import computed w = s * q); element i is in
/// channel (i / \p inner) mod (number of scales), one scale: per tensor.
/// False for a zero point, or when a value is no int8 code (the weights
/// were changed since the import).
bool modelCodes(ArrayRef<float> w, const ModelQuant &mq, size_t inner,
                std::vector<int64_t> &q) {
  if (mq.zeroPoint != 0)
    return false;
  q.resize(w.size());
  size_t channels = mq.scales.size();
  for (size_t i = 0; i < w.size(); ++i) {
    double v = double(w[i]) / mq.scales[(i / std::max<size_t>(inner, 1)) % channels];
    int64_t c = tisa::roundToInt(v, tisa::RoundMode::HalfAwayFromZero);
    if (c < -128 || c > 127 || std::fabs(v - double(c)) > 1e-3)
      return false;
    q[i] = c;
  }
  return true;
}

/// The int32 code of channel \p c's bias value \p b: by the bias's own
/// scale when the model has one for it (\p bQ, fitting the channels), else
/// by the accumulator's unit \p accScale (s_in * s_w).
int64_t biasCode(float b, const ModelQuant *bQ, size_t c, double accScale) {
  return tisa::roundToInt(double(b) / (bQ ? bQ->scale(c) : accScale),
                          tisa::RoundMode::HalfAwayFromZero);
}

/// The symmetric int8 type of a filter quantised per output channel along
/// \p axis (0: conv's (OC, ...), 1: deconv's (IC, OC, ...)).
quant::UniformQuantizedPerAxisType int8FilterType(MLIRContext *ctx,
                                                  ArrayRef<double> scales,
                                                  int32_t axis) {
  return quant::UniformQuantizedPerAxisType::get(
      quant::QuantizationFlags::Signed, IntegerType::get(ctx, 8),
      Float32Type::get(ctx), scales, SmallVector<int64_t>(scales.size(), 0),
      axis, -128, 127);
}

/// int8Conv with the model's own filter codes and scales \p wQ (and bias
/// codes \p bQ when it has them): TFLite's arithmetic, records of two
/// steps. Null when the filter's values are not its codes.
Value tfliteConv(OpBuilder &b, Lowering &l, Location loc, StringRef name,
                 Value input, quant::UniformQuantizedType outQ, Shape out,
                 Shape fshape, const std::vector<float> &w,
                 const std::vector<float> &bias, const ModelQuant &wQ,
                 const ModelQuant *bQ, ArrayAttr kernel, ArrayAttr strides,
                 ArrayAttr pads, ArrayAttr dilations, int64_t group,
                 bool doRelu, APFloat reluLimit) {
  auto inQ = qtypeOf(input);
  int64_t oc = out[1];
  int64_t per = int64_t(w.size()) / oc;
  std::vector<int64_t> codes;
  if (!wQ.fits(oc) || !modelCodes(w, wQ, size_t(per), codes))
    return {};
  if (bQ && !bQ->fits(oc))
    bQ = nullptr;
  std::vector<double> scales(static_cast<size_t>(oc));
  std::vector<float> wq(w.size());
  std::vector<int32_t> coeff(static_cast<size_t>(oc) * 8, 0);
  int64_t zpIn = inQ.getZeroPoint();
  for (int64_t c = 0; c < oc; ++c) {
    // TFLite's scales are float32: its effective scale is computed from
    // them in double.
    double sw = wQ.scale(size_t(c));
    scales[size_t(c)] = sw;
    int64_t acc = biasCode(bias[size_t(c)], bQ, size_t(c), sw * inQ.getScale());
    for (int64_t i = 0; i < per; ++i) {
      int64_t q = codes[size_t(c * per + i)];
      wq[size_t(c * per + i)] = float(q);
      acc -= zpIn * q;
    }
    setTfliteRecord(coeff.data() + c * 8, acc,
                    inQ.getScale() * sw / outQ.getScale(), outQ);
  }
  MLIRContext *ctx = l.getContext();
  Value filter = l.newWeight(b, loc, (name + "_filter_int8").str(), fshape, wq,
                             int8FilterType(ctx, scales, 0));
  Value coeffW = l.newIntWeight(b, loc, (name + "_requant").str(), {oc, 8},
                                coeff, IntegerType::get(ctx, 32));
  auto conv = b.create<tpu::Conv2DOp>(loc, RankedTensorType::get(out, outQ),
                                      input, filter, coeffW, kernel, strides,
                                      pads, dilations, group, doRelu,
                                      reluLimit, name);
  conv->setAttr(tpu::kTfliteArithmeticAttr, b.getUnitAttr());
  return conv.getOutput();
}

/// The tpu.Conv2D of an INT8 convolution of \p input (int8 / uint8) into
/// \p outQ: per-channel int8 filter (scale max|w| / 127), int32 bias in
/// units of s_w * s_in, and the (oc, 4) requantisation records; with the
/// model's own quantisation of the filter \p wQ (and bias \p bQ),
/// tfliteConv's.
Value int8Conv(OpBuilder &b, Lowering &l, Location loc, StringRef name,
               Value input, quant::UniformQuantizedType outQ, Shape out,
               Shape fshape, const std::vector<float> &w,
               const std::vector<float> &bias, ArrayAttr kernel,
               ArrayAttr strides, ArrayAttr pads, ArrayAttr dilations,
               int64_t group, bool doRelu, APFloat reluLimit,
               const ModelQuant *wQ = nullptr, const ModelQuant *bQ = nullptr) {
  if (wQ)
    if (Value v = tfliteConv(b, l, loc, name, input, outQ, out, fshape, w,
                             bias, *wQ, bQ, kernel, strides, pads, dilations,
                             group, doRelu, reluLimit))
      return v;
  double sIn = qtypeOf(input).getScale(), sOut = outQ.getScale();
  int64_t oc = out[1];
  int64_t per = int64_t(w.size()) / oc;
  std::vector<double> scales(static_cast<size_t>(oc));
  std::vector<float> wq(w.size());
  std::vector<int32_t> coeff(size_t(oc) * 4);
  for (int64_t c = 0; c < oc; ++c) {
    size_t at = size_t(c * per);
    double sw = quantizeSymmetricInt8(
        ArrayRef<float>(w).slice(at, size_t(per)),
        MutableArrayRef<float>(wq).slice(at, size_t(per)));
    scales[size_t(c)] = sw;
    int64_t bq = tisa::roundToInt(double(bias[size_t(c)]) / (sw * sIn),
                                  tisa::RoundMode::HalfAwayFromZero);
    // An input zero point: sum w (q - zp) = sum w q - zp sum w; the pads
    // read zp (the command's pad value), i.e. real 0.
    int64_t zpIn = qtypeOf(input).getZeroPoint();
    for (int64_t i = 0; i < per; ++i)
      bq -= zpIn * int64_t(wq[size_t(c * per + i)]);
    setRequantRecord(coeff, c, bq, sw * sIn / sOut, outQ);
  }
  MLIRContext *ctx = l.getContext();
  auto wType = int8FilterType(ctx, scales, 0);
  Value filter =
      l.newWeight(b, loc, (name + "_filter_int8").str(), fshape, wq, wType);
  Value coeffW = l.newIntWeight(b, loc, (name + "_requant").str(), {oc, 4},
                                coeff, IntegerType::get(ctx, 32));
  return b
      .create<tpu::Conv2DOp>(loc, RankedTensorType::get(out, outQ), input,
                             filter, coeffW, kernel, strides, pads, dilations,
                             group, doRelu, reluLimit, name)
      .getOutput();
}

/// A BatchNorm that was not folded into a conv (pre-activation networks):
/// y = x * a + c per channel as an INT8 depthwise 1 x 1 convolution (the
/// float modes run it as tpu.Scale).
FailureOr<bool> lowerBatchNormInt8(Operation *o, Lowering &l,
                                   std::string &why) {
  auto op = cast<top::BatchNormOp>(o);
  Shape in = module::getShape(op.getInput());
  if (in.size() != 4) {
    why = "only a 4-D BatchNorm has an INT8 form";
    return false;
  }
  std::optional<BatchNormAffine> affine = batchNormAffine(op, l, why);
  if (!affine)
    return false;
  auto outQ = l.quantType(op.getOutput());
  if (!outQ) {
    why = noEntry(op.getOutput());
    return false;
  }
  Value input = l.int8Operand(op.getInput());
  if (!input) {
    why = noEntry(op.getInput());
    return false;
  }
  if (!qtypeOf(input).isSigned()) {
    why = "its input is unsigned (the depthwise form needs a signed one)";
    return false;
  }
  int64_t c = in[1];
  OpBuilder b(o);
  Value conv = int8Conv(b, l, op.getLoc(), op.getName(), input, outQ, in,
                        {c, 1, 1, 1}, affine->scale, affine->shift,
                        b.getI64ArrayAttr({1, 1}),
                        b.getI64ArrayAttr({1, 1}),
                        b.getI64ArrayAttr({0, 0, 0, 0}),
                        b.getI64ArrayAttr({1, 1}), c, op.getDoRelu(),
                        op.getReluLimit());
  replaceOp(o, conv);
  return true;
}

FailureOr<bool> lowerConvInt8(Operation *o, Lowering &l, std::string &why) {
  auto op = cast<top::ConvOp>(o);
  Shape in = module::getShape(op.getInput());
  Shape out = module::getShape(op.getOutput());
  Shape k = toI64(op.getKernelShape()), s = toI64(op.getStrides());
  Shape d = toI64(op.getDilations()), p = toI64(op.getPads());
  if (d.empty())
    d.assign(k.size(), 1);
  if (in.size() != 4 || k.size() != 2) {
    why = "only 2-D convolutions have an INT8 form";
    return false;
  }
  if (!fits4(s) || !fits4(p) || llvm::any_of(d, [](int64_t x) {
        return x < 1 || x > 16;
      })) {
    why = "strides, pads or dilations beyond the command fields";
    return false;
  }
  if (!Lowering::isWeight(op.getFilter()) ||
      (!top::isNone(op.getBias()) && !Lowering::isWeight(op.getBias()))) {
    why = "the filter and bias must be weights";
    return false;
  }
  int64_t g = int64_t(op.getGroup()), ic = in[1], oc = out[1];
  bool depthwise = g > 1 && g == ic && g == oc;
  auto outQ = l.quantType(op.getOutput());
  if (!outQ) {
    why = noEntry(op.getOutput());
    return false;
  }
  if (!l.quantType(op.getInput()) && !qtypeOf(op.getInput())) {
    why = noEntry(op.getInput());
    return false;
  }
  Value input = l.int8Operand(op.getInput());
  if (depthwise && !qtypeOf(input).isSigned()) {
    why = "a depthwise convolution needs a signed input (the input is "
          "uint8)";
    return false;
  }
  if (op.getDoRelu() && !reluIsSaturation(outQ) &&
      !(outQ.isSigned() && outQ.getZeroPoint() == 0)) {
    why = "a fused relu on a result of zero point " +
          std::to_string(outQ.getZeroPoint());
    return false;
  }
  std::vector<float> w = l.weightData(op.getFilter());
  std::vector<float> bias = top::isNone(op.getBias())
                                ? std::vector<float>(size_t(oc), 0.0f)
                                : l.weightData(op.getBias());
  OpBuilder b(o);
  Value conv = int8Conv(b, l, op.getLoc(), op.getName(), input, outQ, out,
                        module::getShape(op.getFilter()), w, bias,
                        op.getKernelShape(), op.getStrides(), op.getPads(),
                        b.getI64ArrayAttr(d), g, op.getDoRelu(),
                        op.getReluLimit(), l.modelQuant(op.getFilter()),
                        l.modelQuant(op.getBias()));
  replaceOp(o, conv);
  return true;
}

/// The INT8 result type of a matmul from the table, null (with `why`)
/// when the table has none or a fused relu cannot be the saturation.
quant::UniformQuantizedType matmulResultType(top::MatMulOp op, Lowering &l,
                                             std::string &why) {
  auto outQ = l.quantType(op.getOutput());
  if (!outQ)
    why = noEntry(op.getOutput());
  else if (op.getDoRelu() && !reluIsSaturation(outQ))
    why = "a fused relu needs a result whose zero point is its lowest code";
  else
    return outQ;
  return {};
}

/// Two activations (attention's Q K^T and P V): both int8 operands as they
/// are, int32 sums, one requantisation s_a * s_b / s_out. The sums have no
/// place for zero points (their correction depends on both operands), so
/// both must have none: symmetric mode. No bias (an ONNX MatMul has none;
/// a fused one is a weight the top op carries only for a 2-D right).
FailureOr<bool> lowerMatMulActInt8(top::MatMulOp op, Lowering &l,
                                   std::string &why) {
  if (!top::isNone(op.getBias())) {
    why = "a matmul of two activations with a bias";
    return false;
  }
  if (l.tfliteArithmetic()) {
    why = "a TFLite matmul of two activations (TFLite's two roundings)";
    return false;
  }
  auto outQ = matmulResultType(op, l, why);
  if (!outQ)
    return false;
  // The operands' types first: a quantising cast made for a matmul that
  // then falls back would be left without a reader.
  auto typeOf = [&](Value v) {
    auto q = qtypeOf(v);
    return q ? q : l.quantType(v);
  };
  auto lq = typeOf(op.getInput()), rq = typeOf(op.getRight());
  if (!lq || !rq) {
    why = noEntry(lq ? op.getRight() : op.getInput());
    return false;
  }
  if (lq.getZeroPoint() != 0 || rq.getZeroPoint() != 0) {
    why = "a matmul of two activations needs operands without zero point";
    return false;
  }
  // Both have types and neither is a weight: int8Operand cannot fail.
  Value left = l.int8Operand(op.getInput());
  Value right = l.int8Operand(op.getRight());
  assert(left && right && "operand types checked above");
  int64_t mult = 1;
  int rshift = 0;
  tisa::getScaleAndShift(lq.getScale() * rq.getScale() / outQ.getScale(), mult,
                         rshift, 32);
  OpBuilder b(op);
  Value none = b.create<top::NoneOp>(op.getLoc(), b.getNoneType()).getOutput();
  auto mm = b.create<tpu::MatMulOp>(
      op.getLoc(),
      RankedTensorType::get(module::getShape(op.getOutput()), outQ), left,
      right, none, op.getRightTranspose(), op.getDoRelu(), op.getReluLimit(),
      op.getName());
  mm->setAttr(tpu::kQuantMultiplierAttr, b.getI64ArrayAttr({mult}));
  mm->setAttr(tpu::kQuantRShiftAttr, b.getI64ArrayAttr({rshift}));
  replaceOp(op, mm.getOutput());
  return true;
}

/// A fully connected layer: a 2-D weight on the right, an optional bias of
/// N values. Per-tensor int8 weights (scale max|W| / 127), int32 bias in
/// units of s_w * s_in (input zero point folded in), one requantisation
/// s_w * s_in / s_out.
FailureOr<bool> lowerMatMulInt8(Operation *o, Lowering &l, std::string &why) {
  auto op = cast<top::MatMulOp>(o);
  if (!Lowering::isWeight(op.getRight()) && !Lowering::isWeight(op.getInput()))
    return lowerMatMulActInt8(op, l, why);
  Shape a = module::getShape(op.getInput());
  Shape wshape = module::getShape(op.getRight());
  Shape out = module::getShape(op.getOutput());
  if (!Lowering::isWeight(op.getRight()) || wshape.size() != 2 ||
      Lowering::isWeight(op.getInput()) || a.empty()) {
    why = "only an activation times a 2-D weight or another activation has "
          "an INT8 form";
    return false;
  }
  bool transB = op.getRightTranspose();
  int64_t k = a.back(), n = transB ? wshape[0] : wshape[1];
  Value biasV = op.getBias();
  if (!top::isNone(biasV) &&
      (!Lowering::isWeight(biasV) || module::getNumElements(biasV) != n)) {
    why = "the bias is not a weight of N values";
    return false;
  }
  auto outQ = matmulResultType(op, l, why);
  if (!outQ)
    return false;
  Value input = l.int8Operand(op.getInput());
  if (!input) {
    why = noEntry(op.getInput());
    return false;
  }
  auto inQ = qtypeOf(input);
  std::vector<float> w = l.weightData(op.getRight());
  std::vector<float> wq(w.size());
  // The model's own per-tensor weight codes (TFLite's arithmetic), else
  // symmetric codes of max|W| / 127.
  const ModelQuant *wQ = l.modelQuant(op.getRight());
  if (wQ && transB && n > 1 && int64_t(wQ->scales.size()) == n) {
    // Per-channel weights (a TFLite FULLY_CONNECTED quantised along its
    // units): the matmul's requantisation has immediates only, so the
    // layer runs as a 1 x 1 convolution of the M rows, [M, K, 1, 1] x
    // filter [N, K, 1, 1] (the (N, K) weight as it is), with the conv's
    // per-channel records.
    int64_t m = module::getNumElements(op.getInput()) / k;
    OpBuilder b(o);
    Location loc = op.getLoc();
    std::string base = op.getName().str();
    Value x4 = b.create<tpu::ReshapeOp>(
                    loc, RankedTensorType::get({m, k, 1, 1}, inQ), input,
                    base + "_nchw")
                   .getOutput();
    std::vector<float> bias = top::isNone(biasV)
                                  ? std::vector<float>(size_t(n), 0.0f)
                                  : l.weightData(biasV);
    auto one = [&](int64_t v, size_t count) {
      return b.getI64ArrayAttr(SmallVector<int64_t>(count, v));
    };
    Value conv = int8Conv(b, l, loc, base + "_conv", x4, outQ, {m, n, 1, 1},
                          {n, k, 1, 1}, w, bias, one(1, 2), one(1, 2),
                          one(0, 4), one(1, 2), 1, op.getDoRelu(),
                          op.getReluLimit(), wQ, l.modelQuant(biasV));
    Value y = b.create<tpu::ReshapeOp>(loc, RankedTensorType::get(out, outQ),
                                       conv, op.getName())
                  .getOutput();
    replaceOp(o, y);
    return true;
  }
  std::vector<int64_t> codes;
  bool tflite = wQ && wQ->scales.size() == 1 &&
                modelCodes(w, *wQ, w.size(), codes);
  double sw;
  if (tflite) {
    sw = wQ->scales[0];
    for (size_t i = 0; i < w.size(); ++i)
      wq[i] = float(codes[i]);
  } else {
    sw = quantizeSymmetricInt8(w, wq);
  }
  const ModelQuant *bQ = tflite ? l.modelQuant(biasV) : nullptr;
  if (bQ && bQ->scales.size() != 1)
    bQ = nullptr;
  std::vector<float> bias = top::isNone(biasV) ? std::vector<float>()
                                               : l.weightData(biasV);
  std::vector<int32_t> bq(static_cast<size_t>(n), 0);
  int64_t zpIn = inQ.getZeroPoint();
  for (int64_t j = 0; j < n; ++j) {
    int64_t v = bias.empty() ? 0
                             : biasCode(bias[size_t(j)], bQ, 0,
                                        sw * inQ.getScale());
    for (int64_t kk = 0; kk < k; ++kk)
      v -= zpIn * int64_t(wq[transB ? size_t(j * k + kk) : size_t(kk * n + j)]);
    bq[size_t(j)] = int32_t(tisa::saturate(v, tisa::Prec::Int32, true));
  }
  bool needBias = !bias.empty() || zpIn != 0;
  int64_t mult = 1;
  int rshift = 0;
  tisa::getScaleAndShift(sw * inQ.getScale() / outQ.getScale(), mult, rshift,
                         32);
  OpBuilder b(o);
  MLIRContext *ctx = l.getContext();
  auto wType = quant::UniformQuantizedType::get(
      quant::QuantizationFlags::Signed, IntegerType::get(ctx, 8),
      Float32Type::get(ctx), sw, 0, -128, 127);
  std::string base = op.getName().str();
  Value right =
      l.newWeight(b, op.getLoc(), base + "_weight_int8", wshape, wq, wType);
  Value biasW =
      needBias ? l.newIntWeight(b, op.getLoc(), base + "_bias_int32", {n}, bq,
                                IntegerType::get(ctx, 32))
               : b.create<top::NoneOp>(op.getLoc(), b.getNoneType()).getOutput();
  auto mm = b.create<tpu::MatMulOp>(op.getLoc(), RankedTensorType::get(out, outQ),
                                    input, right, biasW, transB,
                                    op.getDoRelu(), op.getReluLimit(),
                                    op.getName());
  if (tflite) {
    // Two RQ1 steps (tfliteRequant): multipliers [m1, m2], right shifts
    // [r1, r2]; the zero point is added by the second.
    TfliteRequant r = tfliteRequant(inQ.getScale() * sw / outQ.getScale());
    mm->setAttr(tpu::kQuantMultiplierAttr, b.getI64ArrayAttr({r.m1, 1}));
    mm->setAttr(tpu::kQuantRShiftAttr,
                b.getI64ArrayAttr({-r.negShift1, -r.negShift2}));
    mm->setAttr(tpu::kTfliteArithmeticAttr, b.getUnitAttr());
  } else {
    mm->setAttr(tpu::kQuantMultiplierAttr, b.getI64ArrayAttr({mult}));
    mm->setAttr(tpu::kQuantRShiftAttr, b.getI64ArrayAttr({rshift}));
  }
  replaceOp(o, mm.getOutput());
  return true;
}

template <typename PoolOpT>
FailureOr<bool> lowerPoolInt8(Operation *o, Lowering &l, std::string &why,
                              bool isMax) {
  auto op = cast<PoolOpT>(o);
  Shape in = module::getShape(op.getInput());
  Shape out = module::getShape(op.getOutput());
  Shape k = toI64(op.getKernelShape()), s = toI64(op.getStrides());
  Shape p = toI64(op.getPads()), d = toI64(op.getDilations());
  if (in.size() != 4 || k.size() != 2) {
    why = "only 2-D pooling has an INT8 form";
    return false;
  }
  if (llvm::any_of(d, [](int64_t x) { return x != 1; }) || !fits4(s) ||
      !fits4(p)) {
    why = "dilation, strides or pads beyond the command fields";
    return false;
  }
  bool padded = llvm::any_of(p, [](int64_t x) { return x != 0; });
  if (!isMax && padded && !op.getCountIncludePad()) {
    why = "padded average pooling that does not count the padding";
    return false;
  }
  Value input = l.int8Operand(op.getInput());
  if (!input) {
    why = noEntry(op.getInput());
    return false;
  }
  auto inQ = qtypeOf(input);
  auto outQ = isMax ? inQ : l.quantType(op.getOutput());
  if (!outQ) {
    why = noEntry(op.getOutput());
    return false;
  }
  if (op.getDoRelu() && !reluIsSaturation(outQ)) {
    why = "a fused relu needs a result whose zero point is its lowest code";
    return false;
  }
  OpBuilder b(o);
  auto pool = b.create<tpu::Pool2DOp>(
      op.getLoc(), RankedTensorType::get(out, outQ), input,
      isMax ? "max" : "avg", op.getKernelShape(), op.getStrides(),
      op.getPads(), op.getCountIncludePad(), op.getDoRelu(),
      op.getReluLimit(), op.getName());
  int64_t count = k[0] * k[1];
  if (!isMax && l.tfliteArithmetic() && !padded && inQ == outQ &&
      count < 2048) {
    // TFLite's average of the raw codes, rounded half away from zero:
    // sum * M >> 30 with M = floor(2^30 / count) + 1 rounding half up is
    // exactly that for |sum| <= 128 * count < 2^30 / (2 * count) (M lies
    // above 2^30 / count by less than one, moving every quotient away from
    // zero by less than half the gap to the next rounding boundary, and
    // never onto one). The zero points are left out: in and out are the
    // same type.
    pool->setAttr(tpu::kQuantMultiplierAttr,
                  b.getI64ArrayAttr({(int64_t(1) << 30) / count + 1}));
    pool->setAttr(tpu::kQuantRShiftAttr, b.getI64ArrayAttr({30}));
    pool->setAttr(tpu::kTfliteArithmeticAttr, b.getUnitAttr());
  } else if (!isMax) {
    int64_t mult = 1;
    int rshift = 0;
    tisa::getScaleAndShift(inQ.getScale() / (outQ.getScale() * count),
                          mult, rshift, 32);
    pool->setAttr(tpu::kQuantMultiplierAttr, b.getI64ArrayAttr({mult}));
    pool->setAttr(tpu::kQuantRShiftAttr, b.getI64ArrayAttr({rshift}));
  }
  replaceOp(o, pool.getOutput());
  return true;
}

FailureOr<bool> lowerMaxPoolInt8(Operation *o, Lowering &l, std::string &why) {
  return lowerPoolInt8<top::MaxPoolOp>(o, l, why, true);
}
FailureOr<bool> lowerAvgPoolInt8(Operation *o, Lowering &l, std::string &why) {
  return lowerPoolInt8<top::AvgPoolOp>(o, l, why, false);
}

FailureOr<bool> lowerScalarBinaryLut(Operation *o, Lowering &l,
                                     std::string &why);

/// What an INT8 add / sub / mul of two activations needs: the result's
/// type (a fused relu must be its saturation) and both operands as int8
/// values; none (with `why`) when it has no INT8 form.
struct BinaryInt8Operands {
  quant::UniformQuantizedType outQ;
  Value lhs, rhs;
};
std::optional<BinaryInt8Operands> binaryInt8Operands(Operation *o, Lowering &l,
                                                     std::string &why) {
  Value out = o->getResult(0);
  auto outQ = l.quantType(out);
  if (!outQ) {
    why = noEntry(out);
    return std::nullopt;
  }
  auto relu = o->getAttrOfType<BoolAttr>("do_relu");
  if (relu && relu.getValue() && !reluIsSaturation(outQ)) {
    why = "a fused relu needs a result whose zero point is its lowest code";
    return std::nullopt;
  }
  Value lhs = l.int8Operand(o->getOperand(0)),
        rhs = l.int8Operand(o->getOperand(1));
  if (!lhs || !rhs) {
    why = noEntry(lhs ? o->getOperand(1) : o->getOperand(0));
    return std::nullopt;
  }
  return BinaryInt8Operands{outQ, lhs, rhs};
}

template <typename TopOpT, typename TpuOpT>
FailureOr<bool> lowerAddSubInt8(Operation *o, Lowering &l, std::string &why) {
  auto op = cast<TopOpT>(o);
  if (Lowering::isWeight(op.getLhs()) || Lowering::isWeight(op.getRhs()))
    return lowerScalarBinaryLut(o, l, why);
  std::optional<BinaryInt8Operands> ops = binaryInt8Operands(o, l, why);
  if (!ops)
    return false;
  auto [outQ, lhs, rhs] = *ops;
  if (l.tfliteArithmetic()) {
    // TFLite's ADD / SUB: both inputs scaled by s_x / (2 max(s_a, s_b))
    // after a left shift of 20, summed, scaled by 2 max / (2^20 s_out);
    // each scaling two RQ1 steps (tfliteRequant), the left shift folded
    // into the inputs' first.
    constexpr int kLeftShift = 20;
    double sa = qtypeOf(lhs).getScale(), sb = qtypeOf(rhs).getScale();
    double twiceMax = 2 * std::max(sa, sb);
    SmallVector<int64_t, 3> mults;
    SmallVector<int64_t, 6> shifts;
    for (double real : {sa / twiceMax, sb / twiceMax,
                        twiceMax / (double(1 << kLeftShift) * outQ.getScale())}) {
      TfliteRequant r = tfliteRequant(real);
      int shift1 = -r.negShift1 - (mults.size() < 2 ? kLeftShift : 0);
      if (shift1 < 0) {
        why = "input and output scales too far apart for TFLite's add";
        return false;
      }
      mults.push_back(r.m1);
      shifts.push_back(shift1);
      shifts.push_back(-r.negShift2);
    }
    OpBuilder b(o);
    auto r = b.create<TpuOpT>(
        op.getLoc(), RankedTensorType::get(module::getShape(op.getOutput()), outQ),
        lhs, rhs, op.getDoRelu(), op.getReluLimit(), op.getName());
    r->setAttr(tpu::kQuantMultiplierAttr, b.getI64ArrayAttr(mults));
    r->setAttr(tpu::kQuantRShiftAttr, b.getI64ArrayAttr(shifts));
    r->setAttr(tpu::kTfliteArithmeticAttr, b.getUnitAttr());
    replaceOp(o, r.getOutput());
    return true;
  }
  // t = x * s_x / s_out * 2^kAddFraction, with 16-bit multipliers.
  SmallVector<int64_t, 2> mults, shifts;
  for (Value v : {lhs, rhs}) {
    int64_t m = 1;
    int r = 0;
    tisa::getScaleAndShift(qtypeOf(v).getScale() / outQ.getScale() *
                              double(1 << tpu::kAddFractionBits),
                          m, r, 16);
    // An exact power-of-two ratio comes back with the smallest (possibly
    // negative) shift: a left shift is a larger multiplier.
    if (r < 0 && m >= 0 && (m << -r) <= 0x7FFF) {
      m <<= -r;
      r = 0;
    }
    if (m < 0 || r < 0) {
      why = "input and output scales too far apart";
      return false;
    }
    mults.push_back(m);
    shifts.push_back(r);
  }
  OpBuilder b(o);
  auto r = b.create<TpuOpT>(op.getLoc(),
                            RankedTensorType::get(
                                module::getShape(op.getOutput()), outQ),
                            lhs, rhs, op.getDoRelu(), op.getReluLimit(),
                            op.getName());
  r->setAttr(tpu::kQuantMultiplierAttr, b.getI64ArrayAttr(mults));
  r->setAttr(tpu::kQuantRShiftAttr, b.getI64ArrayAttr(shifts));
  replaceOp(o, r.getOutput());
  return true;
}

/// f(x) of the unary top op \p o (double precision; the table rounds it).
std::optional<double> unaryValue(Operation *o, double x) {
  auto f64 = [&](StringRef name, double dflt) {
    if (auto a = o->getAttrOfType<FloatAttr>(name))
      return a.getValueAsDouble();
    return dflt;
  };
  double sig = 1.0 / (1.0 + std::exp(-x));
  if (isa<top::ReluOp>(o)) {
    double lim = f64("relu_limit", -1.0);
    double y = std::max(x, 0.0);
    return lim > 0 ? std::min(y, lim) : y;
  }
  if (isa<top::LeakyReluOp>(o))
    return x < 0 ? f64("alpha", 0.01) * x : x;
  if (isa<top::ClipOp>(o))
    return std::min(std::max(x, f64("min", -INFINITY)), f64("max", INFINITY));
  if (isa<top::SigmoidOp>(o))
    return sig;
  if (isa<top::HardSigmoidOp>(o))
    return std::clamp(f64("alpha", 0.2) * x + f64("beta", 0.5), 0.0, 1.0);
  if (isa<top::HardSwishOp>(o))
    return x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0);
  if (isa<top::TanhOp>(o))
    return std::tanh(x);
  if (isa<top::ExpOp>(o))
    return std::exp(x);
  if (isa<top::ErfOp>(o))
    return std::erf(x);
  if (auto g = dyn_cast<top::GeluOp>(o)) {
    if (g.getApproximate() == "tanh")
      return 0.5 * x *
             (1.0 + std::tanh(std::sqrt(2.0 / M_PI) *
                              (x + 0.044715 * x * x * x)));
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  }
  if (isa<top::SiLUOp>(o))
    return x * sig;
  if (isa<top::AbsOp>(o))
    return std::fabs(x);
  if (isa<top::NegOp>(o))
    return -x;
  return std::nullopt;
}

/// f((code - zp_in) * s_in) for the input code whose raw byte is b, b =
/// 0..255; none when f has no value.
std::optional<std::vector<double>>
lutValues(quant::UniformQuantizedType inQ,
          const std::function<std::optional<double>(double)> &f) {
  std::vector<double> values(256);
  for (int b = 0; b < 256; ++b) {
    int64_t code = inQ.isSigned() ? int64_t(int8_t(uint8_t(b))) : int64_t(b);
    std::optional<double> y =
        f(double(code - inQ.getZeroPoint()) * inQ.getScale());
    if (!y)
      return std::nullopt;
    values[size_t(b)] = *y;
  }
  return values;
}

/// The output codes of real values: y / s_out + zp_out rounded half away
/// from zero and saturated (non-finite values go to the end of the range
/// they lie at, NaN to the zero point).
std::vector<float> lutCodes(ArrayRef<double> values,
                            quant::UniformQuantizedType outQ) {
  std::vector<float> table(values.size());
  double lo = double(outQ.getStorageTypeMin()),
         hi = double(outQ.getStorageTypeMax());
  for (size_t b = 0; b < values.size(); ++b) {
    double y = values[b], q;
    if (std::isnan(y))
      q = double(outQ.getZeroPoint());
    else if (std::isinf(y))
      q = y > 0 ? hi : lo;
    else
      q = std::clamp(double(tisa::roundToInt(
                         y / outQ.getScale() + double(outQ.getZeroPoint()),
                         tisa::RoundMode::HalfAwayFromZero)),
                     lo, hi);
    table[b] = float(q);
  }
  return table;
}

/// The 256 output codes of f over the codes of \p inQ (lutValues, then
/// lutCodes); none when f has no value.
std::optional<std::vector<float>>
lutTable(quant::UniformQuantizedType inQ, quant::UniformQuantizedType outQ,
         const std::function<std::optional<double>(double)> &f) {
  std::optional<std::vector<double>> values = lutValues(inQ, f);
  if (!values)
    return std::nullopt;
  return lutCodes(*values, outQ);
}

/// A unary function as a 256-entry table (tpu.Lut): entry b holds the
/// output's code of f((b - zp_in) * s_in) for the input code whose raw byte
/// is b (lutValues, lutCodes), or, when the input is a table only this op
/// reads, of f applied to that table's chain.
FailureOr<bool>
lowerLutInt8(Operation *o, Lowering &l, std::string &why, Value in,
             const std::function<std::optional<double>(double)> &f) {
  Value res = o->getResult(0);
  auto outQ = l.quantType(res);
  if (!outQ) {
    why = noEntry(res);
    return false;
  }
  if (!l.quantType(in) && !qtypeOf(in)) {
    why = noEntry(in);
    return false;
  }
  Value input = l.int8Operand(in);
  if (!input) {
    why = "its input is a weight";
    return false;
  }
  // A table whose only reader is this one is fused into it: the new table
  // reads the first table's input and computes the whole chain in double
  // (PP-OCRv4's hard-swish, then a scalar scale, then a scalar shift, is
  // one table, one rounding, instead of three).
  std::optional<std::vector<double>> values;
  tpu::LutOp fused;
  auto &chains = l.lutChains();
  auto known = chains.find(input);
  if (known != chains.end() && input.hasOneUse()) {
    fused = input.getDefiningOp<tpu::LutOp>();
    values = known->second.values;
    for (double &y : *values) {
      if (std::isnan(y))
        continue;
      std::optional<double> z = f(y);
      if (!z) {
        values.reset();
        break;
      }
      y = *z;
    }
    input = known->second.source;
  } else {
    values = lutValues(qtypeOf(input), f);
  }
  if (!values) {
    why = "no table for this function";
    return false;
  }
  OpBuilder b(o);
  std::string name = top::getTensorName(res);
  Value tw = l.newWeight(b, o->getLoc(), name + "_lut", {256},
                         lutCodes(*values, outQ), outQ);
  auto lut = b.create<tpu::LutOp>(
      o->getLoc(), RankedTensorType::get(module::getShape(res), outQ), input,
      tw, name);
  replaceOp(o, lut.getOutput());
  if (fused) {
    // The fused table and its weight have no reader left.
    chains.erase(fused.getOutput());
    Operation *oldTable = fused.getOperand(1).getDefiningOp();
    fused->erase();
    if (oldTable && oldTable->use_empty())
      oldTable->erase();
  }
  chains[lut.getOutput()] = {input, std::move(*values)};
  return true;
}

FailureOr<bool> lowerUnaryInt8(Operation *o, Lowering &l, std::string &why) {
  return lowerLutInt8(o, l, why, o->getOperand(0),
                      [o](double x) { return unaryValue(o, x); });
}

/// An element-wise binary op of an activation and a one-element weight
/// (x + 3 of a decomposed hard-swish, x / 6, ...) is a function of one
/// input: a table.
FailureOr<bool> lowerScalarBinaryLut(Operation *o, Lowering &l,
                                     std::string &why) {
  Value a = o->getOperand(0), b = o->getOperand(1);
  bool constLeft = Lowering::isWeight(a);
  Value c = constLeft ? a : b, x = constLeft ? b : a;
  if (!Lowering::isWeight(c) || Lowering::isWeight(x) ||
      module::getNumElements(c) != 1 ||
      module::getShape(x) != module::getShape(o->getResult(0))) {
    why = "only an activation and a one-element weight have a table form";
    return false;
  }
  double k = double(l.weightData(c)[0]);
  StringRef name = o->getName().getStringRef();
  auto f = [=](double v) -> std::optional<double> {
    double p = constLeft ? k : v, q = constLeft ? v : k;
    if (name == "top.Add")
      return p + q;
    if (name == "top.Sub")
      return p - q;
    if (name == "top.Mul")
      return p * q;
    if (name == "top.Div")
      return p / q;
    if (name == "top.Max")
      return std::max(p, q);
    if (name == "top.Min")
      return std::min(p, q);
    if (name == "top.Pow")
      return std::pow(p, q);
    return std::nullopt;
  };
  if (o->getAttrOfType<BoolAttr>("do_relu") &&
      o->getAttrOfType<BoolAttr>("do_relu").getValue()) {
    double lim = -1.0;
    if (auto a = o->getAttrOfType<FloatAttr>("relu_limit"))
      lim = a.getValueAsDouble();
    return lowerLutInt8(o, l, why, x, [=](double v) -> std::optional<double> {
      std::optional<double> y = f(v);
      if (!y)
        return y;
      double r = std::max(*y, 0.0);
      return lim > 0 ? std::min(r, lim) : r;
    });
  }
  return lowerLutInt8(o, l, why, x, f);
}

/// Mul of two activations: (a - zp_a) (b - zp_b) in int32, requantised by
/// s_a s_b / s_out (32-bit multiplier); a one-element weight operand makes
/// it a table (lowerScalarBinaryLut).
FailureOr<bool> lowerMulInt8(Operation *o, Lowering &l, std::string &why) {
  auto op = cast<top::MulOp>(o);
  if (Lowering::isWeight(op.getLhs()) || Lowering::isWeight(op.getRhs()))
    return lowerScalarBinaryLut(o, l, why);
  std::optional<BinaryInt8Operands> ops = binaryInt8Operands(o, l, why);
  if (!ops)
    return false;
  auto [outQ, lhs, rhs] = *ops;
  int64_t m = 1;
  int r = 0;
  tisa::getScaleAndShift(qtypeOf(lhs).getScale() * qtypeOf(rhs).getScale() /
                             outQ.getScale(),
                         m, r, 32);
  OpBuilder b(o);
  auto mul = b.create<tpu::MulOp>(
      op.getLoc(), RankedTensorType::get(module::getShape(op.getOutput()), outQ),
      lhs, rhs, op.getDoRelu(), op.getReluLimit(), op.getName());
  mul->setAttr(tpu::kQuantMultiplierAttr, b.getI64ArrayAttr({m}));
  mul->setAttr(tpu::kQuantRShiftAttr, b.getI64ArrayAttr({r}));
  replaceOp(o, mul.getOutput());
  return true;
}

/// Data movement: the float lowering runs with the input's quantised type
/// as the activation type (Lowering::setActTypeOverride).
FailureOr<bool> lowerMoveInt8(Operation *o, Lowering &l, std::string &why) {
  if (o->getNumOperands() == 0)
    return false;
  for (Value v : o->getOperands())
    if (Lowering::isWeight(v)) {
      why = "a weight operand";
      return false;
    }
  auto t = qtypeOf(o->getOperand(0));
  if (!t) {
    why = "its input is a float value";
    return false;
  }
  for (Value v : o->getOperands())
    if (qtypeOf(v) != t) {
      why = "its inputs have different quantised types";
      return false;
    }
  if (auto pad = dyn_cast<top::PadOp>(o))
    if (pad.getMode() != "constant" || pad.getVal().convertToDouble() != 0.0 ||
        t.getZeroPoint() != 0) {
      why = "only zero padding of a zero point 0 keeps the quantised values";
      return false;
    }
  l.setActTypeOverride(t);
  return false;
}

/// Nearest resize copies codes: the input's type, as the other data
/// movement. A linear resize blends codes; it runs in float.
FailureOr<bool> lowerInterpInt8(Operation *o, Lowering &l, std::string &why) {
  if (cast<top::InterpOp>(o).getMode() != "nearest") {
    why = "only a nearest resize has an INT8 form";
    return false;
  }
  return lowerMoveInt8(o, l, why);
}

/// Concat. Inputs of one quantised type are copied in that type (the
/// output keeps it: no requantisation, no loss). Inputs of different types
/// are placed in the output's calibrated type; each INT8 input of another
/// type is first requantised by a table (tpu.Lut of the identity: the real
/// value of every input code rounded half away from zero to an output code
/// and saturated, the same rounding as a quantising cast), and a float
/// input is quantised straight to the output's type (one rounding, not a
/// cast to its own threshold and then a table). All inputs in float keep
/// the concat in float.
FailureOr<bool> lowerConcatInt8(Operation *o, Lowering &l, std::string &why) {
  auto op = cast<top::ConcatOp>(o);
  bool anyQuant = false;
  for (Value v : op.getInputs()) {
    if (Lowering::isWeight(v)) {
      why = "a weight operand";
      return false;
    }
    anyQuant |= bool(qtypeOf(v));
  }
  if (!anyQuant) {
    why = "its inputs are float values";
    return false;
  }
  // The type of each input: its own, or for a float one its calibrated
  // type (the type a quantising cast by its threshold would give).
  SmallVector<quant::UniformQuantizedType> types;
  for (Value v : op.getInputs()) {
    auto t = qtypeOf(v) ? qtypeOf(v) : l.quantType(v);
    if (!t) {
      why = noEntry(v);
      return false;
    }
    types.push_back(t);
  }
  bool same = llvm::all_equal(types);
  auto outQ = same ? types.front() : l.quantType(op.getOutput());
  if (!outQ) {
    why = noEntry(op.getOutput());
    return false;
  }
  SmallVector<Value> ins;
  for (Value v : op.getInputs())
    ins.push_back(qtypeOf(v) ? v : l.castTo(v, outQ));
  Shape outShape = module::getShape(op.getOutput());
  int64_t axis = normalizeAxis(op.getAxis(), int64_t(outShape.size()));
  if (axis < 0) {
    why = "axis out of range";
    return false;
  }
  OpBuilder b(o);
  std::string name = top::getTensorName(op.getOutput());
  for (auto [i, v] : llvm::enumerate(ins)) {
    auto inQ = qtypeOf(v);
    if (inQ == outQ)
      continue;
    std::optional<std::vector<float>> table =
        lutTable(inQ, outQ, [](double x) { return x; });
    std::string rq = name + "_input" + std::to_string(i) + "_requant";
    Value tw = l.newWeight(b, o->getLoc(), rq + "_lut", {256}, *table, outQ);
    v = b.create<tpu::LutOp>(
             o->getLoc(), RankedTensorType::get(module::getShape(v), outQ), v,
             tw, rq)
            .getOutput();
  }
  auto r = b.create<tpu::ConcatOp>(o->getLoc(),
                                   RankedTensorType::get(outShape, outQ), ins,
                                   axis, op.getName());
  replaceOp(o, r.getOutput());
  return true;
}

/// A transposed convolution: int8 x int8 -> int32 on the cube as the float
/// path runs it (the zero-inserted input, the rotated kernel), then the
/// conv's AR bias add and per-channel RQ1 with the same (OC, 4) records.
/// The inserted zeros and the pads are code 0, so the input's zero point
/// must be 0 (real 0 is code 0).
FailureOr<bool> lowerConvTransposeInt8(Operation *o, Lowering &l,
                                       std::string &why) {
  auto op = cast<top::ConvTransposeOp>(o);
  Shape in = module::getShape(op.getInput());
  Shape out = module::getShape(op.getOutput());
  Shape fshape = module::getShape(op.getFilter());
  Shape k = toI64(op.getKernelShape()), s = toI64(op.getStrides());
  Shape d = toI64(op.getDilations()), p = toI64(op.getPads());
  if (d.empty())
    d.assign(k.size(), 1);
  Shape outPad = toI64(op.getOutputPadding());
  if (outPad.empty())
    outPad = {0, 0};
  if (in.size() != 4 || k.size() != 2 || fshape.size() != 4 ||
      outPad.size() != 2) {
    why = "only 2-D transposed convolutions have an INT8 form";
    return false;
  }
  if (op.getGroup() != 1) {
    // The per-channel filter type's axis is the ONNX filter's dim 1, which
    // holds OC / group channels.
    why = "a grouped transposed convolution has no INT8 form";
    return false;
  }
  if (!Lowering::isWeight(op.getFilter()) ||
      (!top::isNone(op.getBias()) && !Lowering::isWeight(op.getBias()))) {
    why = "the filter and bias must be weights";
    return false;
  }
  if (llvm::any_of(s, [](int64_t x) { return x < 1 || x > 16; })) {
    why = "strides beyond the command's zero insertion (1..16)";
    return false;
  }
  auto outQ = l.quantType(op.getOutput());
  if (!outQ) {
    why = noEntry(op.getOutput());
    return false;
  }
  if (!l.quantType(op.getInput()) && !qtypeOf(op.getInput())) {
    why = noEntry(op.getInput());
    return false;
  }
  if (op.getDoRelu() && !reluIsSaturation(outQ) &&
      !(outQ.isSigned() && outQ.getZeroPoint() == 0)) {
    why = "a fused relu on a result of zero point " +
          std::to_string(outQ.getZeroPoint());
    return false;
  }
  // Checked before int8Operand makes a cast that nothing would read.
  auto inQ = qtypeOf(op.getInput()) ? qtypeOf(op.getInput())
                                    : l.quantType(op.getInput());
  if (inQ.getZeroPoint() != 0) {
    why = "its input has zero point " + std::to_string(inQ.getZeroPoint()) +
          " (the inserted zeros and pads are code 0)";
    return false;
  }
  Value input = l.int8Operand(op.getInput());
  int64_t ic = fshape[0], oc = fshape[1], area = fshape[2] * fshape[3];
  std::vector<float> w = l.weightData(op.getFilter());
  std::vector<float> bias = top::isNone(op.getBias())
                                ? std::vector<float>(size_t(oc), 0.0f)
                                : l.weightData(op.getBias());
  double sIn = inQ.getScale(), sOut = outQ.getScale();
  std::vector<double> scales(static_cast<size_t>(oc));
  std::vector<float> wq(w.size());
  // The model's own per-output-channel codes (TFLite's TRANSPOSE_CONV,
  // quantised along O, which the import's IOHW filter keeps in order):
  // its arithmetic, records of two steps; else max|w| / 127 per channel.
  const ModelQuant *wQ = l.modelQuant(op.getFilter());
  const ModelQuant *bQ = l.modelQuant(op.getBias());
  std::vector<int64_t> codes;
  bool tflite = wQ && wQ->fits(oc) && modelCodes(w, *wQ, size_t(area), codes);
  if (bQ && !bQ->fits(oc))
    bQ = nullptr;
  int64_t words = tflite ? 8 : 4;
  std::vector<int32_t> coeff(size_t(oc * words), 0);
  std::vector<float> chan(size_t(ic * area)), chanQ(chan.size());
  for (int64_t c = 0; c < oc; ++c) {
    if (tflite) {
      double sw = wQ->scale(size_t(c));
      scales[size_t(c)] = sw;
      for (int64_t i = 0; i < ic; ++i)
        for (int64_t a = 0; a < area; ++a) {
          size_t at = size_t((i * oc + c) * area + a);
          wq[at] = float(codes[at]);
        }
      int64_t bq = biasCode(bias[size_t(c)], bQ, size_t(c), sw * sIn);
      setTfliteRecord(coeff.data() + c * 8, bq, sIn * sw / sOut, outQ);
      continue;
    }
    // Output channel c's weights are w[i][c][:] of the (IC, OC, KH, KW)
    // filter.
    for (int64_t i = 0; i < ic; ++i)
      for (int64_t a = 0; a < area; ++a)
        chan[size_t(i * area + a)] = w[size_t((i * oc + c) * area + a)];
    double sw = quantizeSymmetricInt8(chan, chanQ);
    for (int64_t i = 0; i < ic; ++i)
      for (int64_t a = 0; a < area; ++a)
        wq[size_t((i * oc + c) * area + a)] = chanQ[size_t(i * area + a)];
    scales[size_t(c)] = sw;
    int64_t bq = tisa::roundToInt(double(bias[size_t(c)]) / (sw * sIn),
                                  tisa::RoundMode::HalfAwayFromZero);
    setRequantRecord(coeff, c, bq, sw * sIn / sOut, outQ);
  }
  MLIRContext *ctx = l.getContext();
  auto wType = int8FilterType(ctx, scales, 1);
  OpBuilder b(o);
  std::string name = op.getName().str();
  Value filter =
      l.newWeight(b, op.getLoc(), name + "_filter_int8", fshape, wq, wType);
  Value coeffW = l.newIntWeight(b, op.getLoc(), name + "_requant",
                                {oc, words}, coeff, IntegerType::get(ctx, 32));
  auto deconv = b.create<tpu::Deconv2DOp>(
      op.getLoc(), RankedTensorType::get(out, outQ), input, filter, coeffW,
      op.getKernelShape(), op.getStrides(), op.getPads(),
      b.getI64ArrayAttr(d), b.getI64ArrayAttr(outPad), op.getGroup(),
      op.getDoRelu(), op.getReluLimit(), op.getName());
  if (tflite)
    deconv->setAttr(tpu::kTfliteArithmeticAttr, b.getUnitAttr());
  replaceOp(o, deconv.getOutput());
  return true;
}

} // namespace

void registerInt8Lowerings(Int8LoweringTable &table) {
  table["top.Conv"] = lowerConvInt8;
  table["top.BatchNorm"] = lowerBatchNormInt8;
  table["top.MatMul"] = lowerMatMulInt8;
  table["top.MaxPool"] = lowerMaxPoolInt8;
  table["top.AvgPool"] = lowerAvgPoolInt8;
  table["top.Add"] = lowerAddSubInt8<top::AddOp, tpu::AddOp>;
  table["top.Sub"] = lowerAddSubInt8<top::SubOp, tpu::SubOp>;
  for (const char *name :
       {"top.Reshape", "top.Permute", "top.Slice", "top.Pad"})
    table[name] = lowerMoveInt8;
  table["top.Concat"] = lowerConcatInt8;
  table["top.Interp"] = lowerInterpInt8;
  table["top.ConvTranspose"] = lowerConvTransposeInt8;
  for (const char *name :
       {"top.Relu", "top.LeakyRelu", "top.Clip", "top.Sigmoid",
        "top.HardSigmoid", "top.HardSwish", "top.Tanh", "top.Exp", "top.Erf",
        "top.Gelu", "top.SiLU", "top.Abs", "top.Neg"})
    table[name] = lowerUnaryInt8;
  table["top.Mul"] = lowerMulInt8;
  for (const char *name : {"top.Div", "top.Max", "top.Min", "top.Pow"})
    table[name] = lowerScalarBinaryLut;
}

} // namespace tpuc::lowering
