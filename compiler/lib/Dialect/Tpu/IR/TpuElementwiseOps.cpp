//===- TpuElementwiseOps.cpp - Elementwise ops
//-----------------------------===//
//
// Values are computed in f32 from operands that hold values of their element
// types and rounded once to the result's type, as the vector unit does for
// add / sub / mul / div / max / min (one fp32 operation, one rounding). The
// activations and powers evaluate the backend's command sequences
// (ChipMath.h: its polynomials, its constants as immediates of the tensor
// type where the backend computes in that type), so the simulator agrees
// bit for bit.
//
//===----------------------------------------------------------------------===//
#include "TpuCommon.h"

#include "tpu/isa/Numerics.h"

#include <cmath>

using namespace mlir;
using namespace tpuc;
using namespace tpuc::tpu;
using namespace tpuc::tpu::detail;

#define GET_OP_CLASSES
#include "tpuc/Dialect/Tpu/IR/TpuElementwiseOps.cpp.inc"

void TpuDialect::registerElementwiseOps() {
  addOperations<
#define GET_OP_LIST
#include "tpuc/Dialect/Tpu/IR/TpuElementwiseOps.cpp.inc"
      >();
}

namespace {

/// Verifies operands broadcasting (numpy) to the result's shape.
LogicalResult verifyBroadcast(Operation *op, ValueRange operands,
                              Value result) {
  if (failed(verifyName(op)))
    return failure();
  Shape out = shapeOf(operands.front());
  for (Value v : operands.drop_front()) {
    std::optional<Shape> s = kernels::broadcastShape(out, shapeOf(v));
    if (!s)
      return op->emitOpError("operand shapes ")
             << shapeStr(out) << " and " << shapeStr(shapeOf(v))
             << " do not broadcast";
    out = *s;
  }
  return checkShape(op, result, out, "result");
}

/// Verifies a binary op whose operands hold values of its result's type.
template <typename OpT> LogicalResult verifyBinary(OpT op) {
  if (failed(checkSameElementType(op, op.getLhs(), op.getOutput(), "lhs")) ||
      failed(checkSameElementType(op, op.getRhs(), op.getOutput(), "rhs")))
    return failure();
  return verifyBroadcast(op, op.getOperands(), op.getOutput());
}

/// INT8 add / sub (tpu.Add / tpu.Sub with quant_multiplier): both inputs
/// rescaled to the output (chip::addInt8).
template <typename OpT>
LogicalResult int8BinaryInference(OpT op, InferenceContext &ctx, bool sub,
                                  bool mul = false) {
  auto outQ =
      dyn_cast<quant::UniformQuantizedType>(getElementType(op.getOutput()));
  auto mult = op->template getAttrOfType<ArrayAttr>(kQuantMultiplierAttr);
  auto shift = op->template getAttrOfType<ArrayAttr>(kQuantRShiftAttr);
  // TFLite's arithmetic: three multipliers (inputs, output) and their six
  // right shifts (two steps each).
  bool tflite = !mul && op->hasAttr(kTfliteArithmeticAttr);
  size_t want = mul ? 1 : tflite ? 3 : 2;
  if (!outQ || !mult || !shift || mult.size() != want ||
      shift.size() != (tflite ? 6 : want))
    return op.emitOpError("an INT8 add / sub (mul) needs a quantised result "
                          "and two (one) ")
           << kQuantMultiplierAttr << " / " << kQuantRShiftAttr << " values";
  Shape m = toI64(mult), r = toI64(shift);
  bool isSigned = outQ.isSigned();
  auto lq = dyn_cast<quant::UniformQuantizedType>(getElementType(op.getLhs()));
  auto rq = dyn_cast<quant::UniformQuantizedType>(getElementType(op.getRhs()));
  if (!lq || !rq)
    return op.emitOpError("an INT8 add / sub needs quantised operands");
  int64_t zp[2] = {lq.getZeroPoint(), rq.getZeroPoint()};
  int64_t zo = outQ.getZeroPoint();
  std::vector<float> &out = ctx.output(op.getOutput());
  chip::RequantRecord steps[3];
  if (tflite) {
    for (int k = 0; k < 3; ++k) {
      steps[k].multiplier = int32_t(m[size_t(k)]);
      steps[k].shift = -int32_t(r[size_t(2 * k)]);
      steps[k].twoSteps = true;
      steps[k].shift2 = -int32_t(r[size_t(2 * k + 1)]);
    }
    steps[2].zeroPoint2 = int32_t(zo);
  }
  kernels::broadcastBinary(
      shapeOf(op.getLhs()), ctx.get(op.getLhs()).data(), shapeOf(op.getRhs()),
      ctx.get(op.getRhs()).data(), shapeOf(op.getOutput()), out.data(),
      [&](float a, float b) -> float {
        if (tflite)
          return float(chip::addInt8Tflite(int64_t(a), int64_t(b), zp, steps,
                                           steps[2], sub, isSigned));
        if (mul) // the RQ1 of (a - zp_a) (b - zp_b)
          return float(::tpu::isa::requantize(
              (int64_t(a) - zp[0]) * (int64_t(b) - zp[1]), m[0], int(r[0]), zo,
              kInt8RoundMode, ::tpu::isa::Prec::Int8, isSigned));
        return float(chip::addInt8(int64_t(a), int64_t(b), m.data(), r.data(),
                                   zp, zo, kAddFractionBits, sub, isSigned,
                                   kInt8RoundMode));
      });
  return success();
}

template <typename OpT, typename Fn>
LogicalResult binaryInference(OpT op, InferenceContext &ctx, Fn fn) {
  if (op->hasAttr(kQuantMultiplierAttr)) {
    if constexpr (std::is_same_v<OpT, AddOp> || std::is_same_v<OpT, SubOp> ||
                  std::is_same_v<OpT, MulOp>)
      return int8BinaryInference(op, ctx, std::is_same_v<OpT, SubOp>,
                                 std::is_same_v<OpT, MulOp>);
    return op.emitOpError("has no INT8 form");
  }
  std::vector<float> &out = ctx.output(op.getOutput());
  kernels::broadcastBinary(shapeOf(op.getLhs()), ctx.get(op.getLhs()).data(),
                           shapeOf(op.getRhs()), ctx.get(op.getRhs()).data(),
                           shapeOf(op.getOutput()), out.data(), fn);
  applyRelu(out, op.getDoRelu(), op.getReluLimit().convertToDouble());
  roundResult(ctx, op.getOutput());
  return success();
}

/// The modes of tpu.Active and how many coeffs each takes.
struct ActiveMode {
  llvm::StringLiteral name;
  unsigned numCoeffs;
};
constexpr ActiveMode kActiveModes[] = {
    {"relu", 1},         {"leaky_relu", 1}, {"clip", 2}, {"sigmoid", 0},
    {"hard_sigmoid", 2}, {"hard_swish", 0}, {"tanh", 0}, {"exp", 0},
    {"log", 0},          {"sqrt", 0},       {"erf", 0},  {"abs", 0},
    {"neg", 0},          {"reciprocal", 0}, {"gelu", 0}, {"gelu_tanh", 0},
    {"silu", 0},
};

} // namespace

#define TPU_BINARY(OP, EXPR)                                                   \
  LogicalResult OP::verify() { return verifyBinary(*this); }                   \
  LogicalResult OP::inference(InferenceContext &ctx) {                         \
    return binaryInference(*this, ctx,                                         \
                           [](float a, float b) -> float { return EXPR; });    \
  }

TPU_BINARY(AddOp, a + b)
TPU_BINARY(SubOp, a - b)
TPU_BINARY(MulOp, a *b)
TPU_BINARY(DivOp, a / b)
TPU_BINARY(MaxOp, std::max(a, b))
TPU_BINARY(MinOp, std::min(a, b))

#undef TPU_BINARY

LogicalResult LutOp::verify() {
  if (failed(verifyName(*this)))
    return failure();
  auto in = dyn_cast<quant::UniformQuantizedType>(getElementType(getInput()));
  if (!in || in.getStorageTypeIntegralWidth() != 8)
    return emitOpError("needs an int8 / uint8 quantised input");
  if (shapeOf(getTable()) != Shape{256})
    return emitOpError("needs a table of 256 entries");
  if (storageType(getElementType(getTable())) !=
          storageType(getElementType(getOutput())) ||
      !isa<quant::UniformQuantizedType>(getElementType(getOutput())))
    return emitOpError("needs a quantised result of the table's type");
  return checkShape(*this, getOutput(), shapeOf(getInput()), "result");
}

LogicalResult LutOp::inference(InferenceContext &ctx) {
  const std::vector<float> &in = ctx.get(getInput());
  const std::vector<float> &table = ctx.get(getTable());
  std::vector<float> &out = ctx.output(getOutput());
  for (size_t i = 0; i < in.size(); ++i)
    out[i] = table[size_t(uint8_t(int8_t(int32_t(in[i]))))];
  return success();
}

LogicalResult PowOp::verify() { return verifyBinary(*this); }

LogicalResult PowOp::inference(InferenceContext &ctx) {
  // As the BM1684X codegen emits it (lib/Target/BM1684X): x ^ c with a
  // one-element weight c is the unary power (x * x in the result type for
  // c = 2); anything else is exp(y * log x) in fp32.
  chip::Prec p = chipPrec(getElementType(getOutput()));
  auto isScalarWeight = [](Value v) {
    return v.getDefiningOp<WeightOp>() && module::getNumElements(v) == 1;
  };
  if (isScalarWeight(getRhs()) && !isScalarWeight(getLhs()) &&
      module::getNumElements(getLhs()) == module::getNumElements(getOutput()) &&
      !getDoRelu()) {
    float c = ctx.get(getRhs())[0];
    const std::vector<float> &in = ctx.get(getLhs());
    std::vector<float> &out = ctx.output(getOutput());
    for (size_t i = 0; i < in.size(); ++i)
      out[i] = c == 2.0f ? chip::roundTo(in[i] * in[i], p)
                         : chip::powConst(in[i], c);
    roundResult(ctx, getOutput());
    return success();
  }
  return binaryInference(*this, ctx, [](float a, float b) -> float {
    float d = chip::log(a);
    d = d * b;
    return chip::exp(d);
  });
}

//===----------------------------------------------------------------------===//
// Scale
//===----------------------------------------------------------------------===//

LogicalResult ScaleOp::verify() {
  if (failed(verifyName(*this)))
    return failure();
  Shape in = shapeOf(getInput());
  if (in.size() < 2)
    return emitOpError("input needs a channel axis, is ") << shapeStr(in);
  Shape channel(in.size(), 1);
  channel[1] = in[1];
  for (auto [v, what] : {std::pair(getScale(), "scale"),
                         std::pair(getBias(), "bias")}) {
    if (failed(checkSameElementType(*this, v, getOutput(), what)) ||
        failed(checkShape(*this, v, channel, what)))
      return failure();
  }
  if (failed(checkSameElementType(*this, getInput(), getOutput(), "input")))
    return failure();
  return checkShape(*this, getOutput(), in, "result");
}

LogicalResult ScaleOp::inference(InferenceContext &ctx) {
  // Chip order (backend scale()): the product rounded to the tensor type,
  // then the sum, then the relu on the rounded sum.
  Shape in = shapeOf(getInput());
  int64_t channels = in[1], outer = in[0];
  int64_t rows = outer * channels;
  int64_t inner = rows ? kernels::numElements(in) / rows : 0;
  chip::Prec p = chipPrec(getElementType(getOutput()));
  bool doRelu = getDoRelu();
  float limit = static_cast<float>(getReluLimit().convertToDouble());
  const float *x = ctx.get(getInput()).data();
  const float *scale = ctx.get(getScale()).data();
  const float *bias = ctx.get(getBias()).data();
  float *out = ctx.output(getOutput()).data();
  ctx.parallelFor(rows, 1, [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      int64_t c = row % channels;
      const float *src = x + row * inner;
      float *dst = out + row * inner;
      for (int64_t i = 0; i < inner; ++i)
        dst[i] = chip::scaleShift(src[i], scale[c], bias[c], doRelu, limit, p);
    }
  });
  roundResult(ctx, getOutput());
  return success();
}

//===----------------------------------------------------------------------===//
// Compare, Where
//===----------------------------------------------------------------------===//

LogicalResult CompareOp::verify() {
  StringRef m = getMode();
  if (m != "Equal" && m != "Greater" && m != "GreaterOrEqual" && m != "Less" &&
      m != "LessOrEqual")
    return emitOpError("unknown mode '") << m << "'";
  return verifyBroadcast(*this, getOperands(), getOutput());
}

LogicalResult CompareOp::inference(InferenceContext &ctx) {
  // The mode is resolved once, not per element.
  enum class Cmp { Eq, Gt, Ge, Lt, Le };
  StringRef m = getMode();
  Cmp mode = m == "Equal"            ? Cmp::Eq
             : m == "Greater"        ? Cmp::Gt
             : m == "GreaterOrEqual" ? Cmp::Ge
             : m == "Less"           ? Cmp::Lt
                                     : Cmp::Le;
  auto cmp = [mode](float a, float b) -> float {
    bool r = mode == Cmp::Eq   ? a == b
             : mode == Cmp::Gt ? a > b
             : mode == Cmp::Ge ? a >= b
             : mode == Cmp::Lt ? a < b
                               : a <= b;
    return r ? 1.0f : 0.0f;
  };
  std::vector<float> &out = ctx.output(getOutput());
  kernels::broadcastBinary(shapeOf(getLhs()), ctx.get(getLhs()).data(),
                           shapeOf(getRhs()), ctx.get(getRhs()).data(),
                           shapeOf(getOutput()), out.data(), cmp);
  return success();
}

LogicalResult WhereOp::verify() {
  return verifyBroadcast(*this, getOperands(), getOutput());
}

LogicalResult WhereOp::inference(InferenceContext &ctx) {
  Shape outShape = shapeOf(getOutput());
  std::vector<float> c(module::getNumElements(getOutput()));
  std::vector<float> x(c.size()), y(c.size());
  kernels::broadcastTo(shapeOf(getCond()), ctx.get(getCond()).data(), outShape,
                       c.data());
  kernels::broadcastTo(shapeOf(getX()), ctx.get(getX()).data(), outShape,
                       x.data());
  kernels::broadcastTo(shapeOf(getY()), ctx.get(getY()).data(), outShape,
                       y.data());
  std::vector<float> &out = ctx.output(getOutput());
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = c[i] != 0.0f ? x[i] : y[i];
  roundResult(ctx, getOutput());
  return success();
}

//===----------------------------------------------------------------------===//
// Active
//===----------------------------------------------------------------------===//

LogicalResult ActiveOp::verify() {
  if (failed(verifyName(*this)))
    return failure();
  const ActiveMode *mode = llvm::find_if(
      kActiveModes, [&](const ActiveMode &m) { return m.name == getMode(); });
  if (mode == std::end(kActiveModes))
    return emitOpError("unknown mode '") << getMode() << "'";
  if (getCoeffs().size() != mode->numCoeffs)
    return emitOpError("mode '") << getMode() << "' takes " << mode->numCoeffs
                                 << " coeffs, has " << getCoeffs().size();
  if (failed(checkSameElementType(*this, getInput(), getOutput(), "input")))
    return failure();
  return checkShape(*this, getOutput(), shapeOf(getInput()), "result");
}

LogicalResult ActiveOp::inference(InferenceContext &ctx) {
  std::vector<double> c = toF64(getCoeffs());
  StringRef m = getMode();
  const std::vector<float> &in = ctx.get(getInput());
  std::vector<float> &out = ctx.output(getOutput());
  // The precision of the backend's direct (non-staged) commands.
  chip::Prec p = chipPrec(getElementType(getOutput()));
  auto apply = [&](auto fn) {
    ctx.parallelFor(static_cast<int64_t>(in.size()),
                    kernels::kMinParallelElements, [&](int64_t b, int64_t e) {
                      for (int64_t i = b; i < e; ++i)
                        out[i] = fn(in[i]);
                    });
  };
  constexpr float kSqrt2OverPi = 0.7978845608f;
  constexpr float kGeluCubic = 0.044715f;
  if (m == "relu") {
    // relu with a limit runs as clip(0, limit).
    float limit = static_cast<float>(c[0]);
    if (limit > 0)
      apply([&](float x) { return chip::clip(x, 0.0f, limit, p); });
    else
      apply([](float x) { return std::max(x, 0.0f); });
  } else if (m == "leaky_relu") {
    float alpha = static_cast<float>(c[0]);
    apply([&](float x) { return chip::leakyRelu(x, alpha, p); });
  } else if (m == "clip") {
    float lo = static_cast<float>(c[0]), hi = static_cast<float>(c[1]);
    apply([&](float x) { return chip::clip(x, lo, hi, p); });
  } else if (m == "sigmoid") {
    apply([](float x) { return chip::sigmoid(x); });
  } else if (m == "hard_sigmoid") {
    float alpha = static_cast<float>(c[0]), beta = static_cast<float>(c[1]);
    apply([&](float x) { return chip::hardSigmoid(x, alpha, beta, p); });
  } else if (m == "hard_swish") {
    apply([&](float x) { return chip::hardSwish(x, p); });
  } else if (m == "tanh") {
    apply([](float x) { return chip::tanh(x); });
  } else if (m == "exp") {
    apply([](float x) { return chip::exp(x); });
  } else if (m == "log") {
    apply([](float x) { return chip::log(x); });
  } else if (m == "sqrt") {
    apply([](float x) { return chip::sqrt(x); });
  } else if (m == "erf") {
    apply([](float x) { return chip::erf(x); });
  } else if (m == "abs") {
    apply([](float x) { return std::fabs(x); });
  } else if (m == "neg") {
    apply([](float x) { return -x; });
  } else if (m == "reciprocal") {
    apply([](float x) { return 1.0f / x; });
  } else if (m == "gelu") {
    apply([](float x) { return chip::gelu(x); });
  } else if (m == "gelu_tanh") {
    // No BM1684X kernel (codegen rejects it): the formula in f32.
    apply([&](float x) {
      return 0.5f * x *
             (1.0f + std::tanh(kSqrt2OverPi * (x + kGeluCubic * x * x * x)));
    });
  } else if (m == "silu") {
    apply([](float x) { return chip::silu(x); });
  } else {
    return emitOpError("unknown mode '") << m << "'";
  }
  roundResult(ctx, getOutput());
  return success();
}

//===----------------------------------------------------------------------===//
// PRelu
//===----------------------------------------------------------------------===//

LogicalResult PReluOp::verify() {
  return verifyBroadcast(*this, getOperands(), getOutput());
}

LogicalResult PReluOp::inference(InferenceContext &ctx) {
  std::vector<float> &out = ctx.output(getOutput());
  kernels::broadcastBinary(shapeOf(getInput()), ctx.get(getInput()).data(),
                           shapeOf(getSlope()), ctx.get(getSlope()).data(),
                           shapeOf(getOutput()), out.data(),
                           [](float x, float s) { return x < 0 ? s * x : x; });
  roundResult(ctx, getOutput());
  return success();
}
