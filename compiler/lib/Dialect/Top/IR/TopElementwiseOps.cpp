//===- TopElementwiseOps.cpp - Elementwise ops -----------------------------===//
#include "TopCommon.h"

#include "tpu/isa/Numerics.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace tpuc;
using namespace tpuc::top;
using namespace tpuc::top::detail;

#define GET_OP_CLASSES
#include "tpuc/Dialect/Top/IR/TopElementwiseOps.cpp.inc"

void TopDialect::registerElementwiseOps() {
  addOperations<
#define GET_OP_LIST
#include "tpuc/Dialect/Top/IR/TopElementwiseOps.cpp.inc"
      >();
}

namespace {

/// Shape of a numpy-broadcasting op over all its operands.
FailureOr<Shape> broadcastOperands(Operation *op) {
  Shape out;
  for (Value v : op->getOperands()) {
    auto b = kernels::broadcastShape(out, shapeOf(v));
    if (!b) {
      auto diag = op->emitOpError("operand shapes");
      for (Value w : op->getOperands())
        diag << " " << shapeStr(shapeOf(w));
      diag << " do not broadcast";
      return diag;
    }
    out = *b;
  }
  return out;
}

template <typename OpT> FailureOr<Shape> broadcastShapeFn(OpT op) {
  return broadcastOperands(op.getOperation());
}

/// Runs a binary op: out = fn(lhs, rhs) broadcast, with the optional relu
/// applied in the same pass.
template <typename OpT, typename Fn>
LogicalResult binaryInference(OpT op, InferenceContext &ctx, Fn fn,
                              bool doRelu = false, double reluLimit = -1.0) {
  Shape out = shapeOf(op.getOutput());
  std::vector<float> &dst = ctx.output(op.getOutput());
  const std::vector<float> &lhs = ctx.get(op.getLhs());
  const std::vector<float> &rhs = ctx.get(op.getRhs());
  Shape sa = shapeOf(op.getLhs()), sb = shapeOf(op.getRhs());
  if (!doRelu) {
    kernels::broadcastBinary(sa, lhs.data(), sb, rhs.data(), out, dst.data(),
                             fn, ctx.getNumThreads());
    return success();
  }
  float upper = reluLimit > 0 ? static_cast<float>(reluLimit)
                              : std::numeric_limits<float>::infinity();
  kernels::broadcastBinary(
      sa, lhs.data(), sb, rhs.data(), out, dst.data(),
      [fn, upper](float a, float b) {
        return std::min(std::max(fn(a, b), 0.0f), upper);
      },
      ctx.getNumThreads());
  return success();
}

/// Runs a unary op elementwise (split over threads when large).
template <typename OpT, typename Fn>
LogicalResult unaryInference(OpT op, InferenceContext &ctx, Fn fn) {
  const std::vector<float> &src = ctx.get(op.getInput());
  std::vector<float> &dst = ctx.output(op.getOutput());
  ctx.parallelFor(dst.size(), kernels::kMinParallelElements / 4,
                  [&](int64_t b, int64_t e) {
                    for (int64_t i = b; i < e; ++i)
                      dst[i] = fn(src[i]);
                  });
  return success();
}

LogicalResult verifyName(Operation *op) {
  auto name = op->getAttrOfType<StringAttr>("name");
  if (!name || name.getValue().empty())
    return op->emitOpError("needs a non-empty name");
  return success();
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

} // namespace

//===----------------------------------------------------------------------===//
// Binary ops
//===----------------------------------------------------------------------===//

#define TOP_BINARY_SHAPES(OP)                                                  \
  LogicalResult OP::verify() {                                                 \
    if (failed(verifyName(*this)))                                             \
      return failure();                                                        \
    return verifyShape(*this, broadcastShapeFn<OP>);                           \
  }                                                                            \
  LogicalResult OP::inferShapes() {                                            \
    return inferShape(*this, broadcastShapeFn<OP>);                            \
  }

TOP_BINARY_SHAPES(AddOp)
TOP_BINARY_SHAPES(SubOp)
TOP_BINARY_SHAPES(MulOp)
TOP_BINARY_SHAPES(DivOp)
TOP_BINARY_SHAPES(MaxOp)
TOP_BINARY_SHAPES(MinOp)
TOP_BINARY_SHAPES(PowOp)
TOP_BINARY_SHAPES(WhereOp)

LogicalResult AddOp::inference(InferenceContext &ctx) {
  return binaryInference(
      *this, ctx, [](float a, float b) { return a + b; }, getDoRelu(),
      getReluLimit().convertToDouble());
}
LogicalResult SubOp::inference(InferenceContext &ctx) {
  return binaryInference(
      *this, ctx, [](float a, float b) { return a - b; }, getDoRelu(),
      getReluLimit().convertToDouble());
}
LogicalResult MulOp::inference(InferenceContext &ctx) {
  return binaryInference(
      *this, ctx, [](float a, float b) { return a * b; }, getDoRelu(),
      getReluLimit().convertToDouble());
}
LogicalResult DivOp::inference(InferenceContext &ctx) {
  return binaryInference(*this, ctx, [](float a, float b) { return a / b; });
}
LogicalResult MaxOp::inference(InferenceContext &ctx) {
  // NaN propagates as in ONNX Max.
  return binaryInference(*this, ctx, [](float a, float b) {
    return std::isnan(a) || std::isnan(b) ? std::numeric_limits<float>::quiet_NaN()
                                          : std::max(a, b);
  });
}
LogicalResult MinOp::inference(InferenceContext &ctx) {
  return binaryInference(*this, ctx, [](float a, float b) {
    return std::isnan(a) || std::isnan(b) ? std::numeric_limits<float>::quiet_NaN()
                                          : std::min(a, b);
  });
}
LogicalResult PowOp::inference(InferenceContext &ctx) {
  return binaryInference(*this, ctx, [](float a, float b) {
    // Squares are common (variance in layer norms); keep them exact.
    if (b == 2.0f)
      return a * a;
    return std::pow(a, b);
  });
}

//===----------------------------------------------------------------------===//
// Compare / Where
//===----------------------------------------------------------------------===//

LogicalResult CompareOp::verify() {
  if (failed(verifyName(*this)))
    return failure();
  StringRef mode = getMode();
  if (mode != "Equal" && mode != "Greater" && mode != "GreaterOrEqual" &&
      mode != "Less" && mode != "LessOrEqual")
    return emitOpError("unknown mode '") << mode << "'";
  return verifyShape(*this, broadcastShapeFn<CompareOp>);
}
LogicalResult CompareOp::inferShapes() {
  return inferShape(*this, broadcastShapeFn<CompareOp>);
}
LogicalResult CompareOp::inference(InferenceContext &ctx) {
  StringRef mode = getMode();
  if (mode == "Equal")
    return binaryInference(*this, ctx,
                           [](float a, float b) { return float(a == b); });
  if (mode == "Greater")
    return binaryInference(*this, ctx,
                           [](float a, float b) { return float(a > b); });
  if (mode == "GreaterOrEqual")
    return binaryInference(*this, ctx,
                           [](float a, float b) { return float(a >= b); });
  if (mode == "Less")
    return binaryInference(*this, ctx,
                           [](float a, float b) { return float(a < b); });
  return binaryInference(*this, ctx,
                         [](float a, float b) { return float(a <= b); });
}

LogicalResult WhereOp::inference(InferenceContext &ctx) {
  Shape out = shapeOf(getOutput());
  int64_t n = kernels::numElements(out);
  std::vector<float> c(n), x(n), y(n);
  kernels::broadcastTo(shapeOf(getCond()), ctx.get(getCond()).data(), out,
                       c.data());
  kernels::broadcastTo(shapeOf(getX()), ctx.get(getX()).data(), out, x.data());
  kernels::broadcastTo(shapeOf(getY()), ctx.get(getY()).data(), out, y.data());
  std::vector<float> &dst = ctx.output(getOutput());
  for (int64_t i = 0; i < n; ++i)
    dst[i] = c[i] != 0.0f ? x[i] : y[i];
  return success();
}

//===----------------------------------------------------------------------===//
// PRelu
//===----------------------------------------------------------------------===//

namespace {
FailureOr<Shape> preluShape(PReluOp op) {
  Shape in = shapeOf(op.getInput()), slope = shapeOf(op.getSlope());
  auto b = kernels::broadcastShape(in, slope);
  if (!b || *b != in)
    return op.emitOpError("slope ")
           << shapeStr(slope) << " does not broadcast to the input "
           << shapeStr(in);
  return in;
}
} // namespace

LogicalResult PReluOp::verify() {
  if (failed(verifyName(*this)))
    return failure();
  return verifyShape(*this, preluShape);
}
LogicalResult PReluOp::inferShapes() { return inferShape(*this, preluShape); }
LogicalResult PReluOp::inference(InferenceContext &ctx) {
  Shape in = shapeOf(getInput());
  kernels::broadcastBinary(in, ctx.get(getInput()).data(), shapeOf(getSlope()),
                           ctx.get(getSlope()).data(), in,
                           ctx.output(getOutput()).data(),
                           [](float x, float s) { return x < 0 ? s * x : x; });
  return success();
}

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

#define TOP_UNARY_SHAPES(OP)                                                   \
  LogicalResult OP::inferShapes() {                                            \
    return inferShape(*this, sameAsInput<OP>);                                 \
  }

#define TOP_UNARY(OP, EXPR)                                                    \
  TOP_UNARY_SHAPES(OP)                                                         \
  LogicalResult OP::verify() {                                                 \
    if (failed(verifyName(*this)))                                             \
      return failure();                                                        \
    return verifyShape(*this, sameAsInput<OP>);                                \
  }                                                                            \
  LogicalResult OP::inference(InferenceContext &ctx) {                         \
    return unaryInference(*this, ctx, [](float x) -> float { return EXPR; });  \
  }

TOP_UNARY(SigmoidOp, sigmoid(x))
TOP_UNARY(HardSwishOp, x * std::clamp(x / 6.0f + 0.5f, 0.0f, 1.0f))
TOP_UNARY(TanhOp, std::tanh(x))
TOP_UNARY(ExpOp, std::exp(x))
TOP_UNARY(LogOp, std::log(x))
TOP_UNARY(SqrtOp, std::sqrt(x))
TOP_UNARY(ErfOp, std::erf(x))
TOP_UNARY(SiLUOp, x * sigmoid(x))
TOP_UNARY(AbsOp, std::fabs(x))
TOP_UNARY(NegOp, -x)
TOP_UNARY(ReciprocalOp, 1.0f / x)

TOP_UNARY_SHAPES(ReluOp)
LogicalResult ReluOp::verify() {
  if (failed(verifyName(*this)))
    return failure();
  return verifyShape(*this, sameAsInput<ReluOp>);
}
LogicalResult ReluOp::inference(InferenceContext &ctx) {
  float limit = getReluLimit().convertToDouble() > 0
                    ? static_cast<float>(getReluLimit().convertToDouble())
                    : std::numeric_limits<float>::infinity();
  // NaN stays NaN, as in ONNX Relu / Clip.
  return unaryInference(*this, ctx, [limit](float x) {
    return std::isnan(x) ? x : std::min(std::max(x, 0.0f), limit);
  });
}

TOP_UNARY_SHAPES(LeakyReluOp)
LogicalResult LeakyReluOp::verify() {
  if (failed(verifyName(*this)))
    return failure();
  return verifyShape(*this, sameAsInput<LeakyReluOp>);
}
LogicalResult LeakyReluOp::inference(InferenceContext &ctx) {
  float alpha = static_cast<float>(getAlpha().convertToDouble());
  return unaryInference(*this, ctx,
                        [alpha](float x) { return x < 0 ? alpha * x : x; });
}

TOP_UNARY_SHAPES(ClipOp)
LogicalResult ClipOp::verify() {
  if (failed(verifyName(*this)))
    return failure();
  if (getMin().convertToDouble() > getMax().convertToDouble())
    return emitOpError("min ")
           << getMin().convertToDouble() << " exceeds max "
           << getMax().convertToDouble();
  return verifyShape(*this, sameAsInput<ClipOp>);
}
LogicalResult ClipOp::inference(InferenceContext &ctx) {
  float lo = static_cast<float>(getMin().convertToDouble());
  float hi = static_cast<float>(getMax().convertToDouble());
  return unaryInference(*this, ctx, [lo, hi](float x) {
    return std::isnan(x) ? x : std::min(std::max(x, lo), hi);
  });
}

TOP_UNARY_SHAPES(HardSigmoidOp)
LogicalResult HardSigmoidOp::verify() {
  if (failed(verifyName(*this)))
    return failure();
  return verifyShape(*this, sameAsInput<HardSigmoidOp>);
}
LogicalResult HardSigmoidOp::inference(InferenceContext &ctx) {
  float alpha = static_cast<float>(getAlpha().convertToDouble());
  float beta = static_cast<float>(getBeta().convertToDouble());
  return unaryInference(*this, ctx, [alpha, beta](float x) {
    return std::clamp(alpha * x + beta, 0.0f, 1.0f);
  });
}

TOP_UNARY_SHAPES(GeluOp)
LogicalResult GeluOp::verify() {
  if (failed(verifyName(*this)))
    return failure();
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate must be \"none\" or \"tanh\", is \"")
           << getApproximate() << "\"";
  return verifyShape(*this, sameAsInput<GeluOp>);
}
LogicalResult GeluOp::inference(InferenceContext &ctx) {
  if (getApproximate() == "tanh") {
    // The tanh approximation of ONNX Gelu (and of Hendrycks & Gimpel):
    // sqrt(2 / pi) and the cubic term's coefficient.
    const double kSqrt2OverPi = std::sqrt(2.0 / M_PI);
    constexpr double kCubicCoeff = 0.044715;
    return unaryInference(*this, ctx, [kSqrt2OverPi](float x) {
      double v = x;
      return static_cast<float>(
          0.5 * v *
          (1 + std::tanh(kSqrt2OverPi * (v + kCubicCoeff * v * v * v))));
    });
  }
  return unaryInference(*this, ctx, [](float x) {
    double v = x;
    return static_cast<float>(0.5 * v * (1 + std::erf(v / M_SQRT2)));
  });
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

namespace {

/// Integer range of a Cast target, or false if \p to is no integer type.
bool integerRange(StringRef to, double &lo, double &hi) {
  struct Range {
    const char *name;
    double lo, hi;
  };
  static const Range kRanges[] = {
      {"int8", -128.0, 127.0},
      {"uint8", 0.0, 255.0},
      {"int16", -32768.0, 32767.0},
      {"uint16", 0.0, 65535.0},
      {"int32", -2147483648.0, 2147483647.0},
      {"uint32", 0.0, 4294967295.0},
      {"int64", -9223372036854775808.0, 9223372036854775807.0},
      {"uint64", 0.0, 18446744073709551615.0},
  };
  for (const Range &r : kRanges)
    if (to == r.name) {
      lo = r.lo;
      hi = r.hi;
      return true;
    }
  return false;
}

} // namespace

TOP_UNARY_SHAPES(CastOp)
LogicalResult CastOp::verify() {
  if (failed(verifyName(*this)))
    return failure();
  StringRef to = getTo();
  double lo, hi;
  if (to != "f32" && to != "f64" && to != "f16" && to != "bf16" &&
      to != "bool" && !integerRange(to, lo, hi))
    return emitOpError("unknown target type '") << to << "'";
  return verifyShape(*this, sameAsInput<CastOp>);
}
LogicalResult CastOp::inference(InferenceContext &ctx) {
  StringRef to = getTo();
  if (to == "f16" || to == "bf16") {
    tpu::isa::Prec prec =
        to == "f16" ? tpu::isa::Prec::Fp16 : tpu::isa::Prec::Bf16;
    return unaryInference(
        *this, ctx, [prec](float x) { return tpu::isa::roundToPrec(x, prec); });
  }
  if (to == "bool")
    return unaryInference(*this, ctx,
                          [](float x) { return x != 0.0f ? 1.0f : 0.0f; });
  double lo, hi;
  if (integerRange(to, lo, hi))
    return unaryInference(*this, ctx, [lo, hi](float x) {
      if (std::isnan(x))
        return 0.0f;
      return static_cast<float>(std::clamp(std::trunc(double(x)), lo, hi));
    });
  return unaryInference(*this, ctx, [](float x) { return x; });
}
