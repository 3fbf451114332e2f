//===- Elementwise.cpp - BM1684X codegen of the element-wise ops ---------===//
//
// The binary ops (backend binary, binaryConst, or unary for x ^ c),
// tpu.Scale (scale), tpu.Active (unary), tpu.PRelu, tpu.Compare (compare,
// compareConst), tpu.Where and tpu.Cast. A chain of element-wise ops kept in
// local memory is a layer group (tpu-layer-group), not a kernel of its own.
//
//===----------------------------------------------------------------------===//
#include "../CodegenContext.h"

#include "tpuc/Dialect/Top/IR/TopOps.h"
#include "tpuc/Dialect/Tpu/Transforms/Passes.h"
#include "tpuc/Support/Module.h"

#include "tpu/isa/Numerics.h"

#include "mlir/Dialect/Quant/QuantTypes.h"

using namespace mlir;
namespace backend = ::tpu::backend;

namespace tpuc::tpu {

using namespace bm1684x;

namespace {

template <typename OpT>
void emitBinary(CodegenContext &ctx, OpT op, backend::BinaryKind k) {
  if (op->hasAttr(kQuantMultiplierAttr)) {
    backend::binaryInt8(ctx.emitter(), binaryInt8Params(ctx, op));
    return;
  }
  std::visit(
      [&](const auto &p) {
        using T = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<T, backend::UnaryParams>)
          backend::unary(ctx.emitter(), p);
        else if constexpr (std::is_same_v<T, backend::BinaryConstParams>)
          backend::binaryConst(ctx.emitter(), p);
        else
          backend::binary(ctx.emitter(), p);
      },
      binaryKernelParams(ctx, op, k));
}

} // namespace

} // namespace tpuc::tpu

namespace tpuc::bm1684x {

backend::LutParams lutParams(CodegenContext &ctx, tpu::LutOp op) {
  backend::LutParams p;
  p.name = op.getName().str();
  p.input = ctx.tensor(op, op.getInput());
  p.output = ctx.tensor(op, op.getOutput());
  p.tableAddr = ctx.tensor(op, op.getTable()).addr;
  return p;
}

backend::BinaryInt8Params binaryInt8Params(CodegenContext &ctx,
                                           Operation *op) {
  auto mult = op->getAttrOfType<ArrayAttr>(tpu::kQuantMultiplierAttr);
  auto shift = op->getAttrOfType<ArrayAttr>(tpu::kQuantRShiftAttr);
  bool tflite =
      !isa<tpu::MulOp>(op) && op->hasAttr(tpu::kTfliteArithmeticAttr);
  size_t want = isa<tpu::MulOp>(op) ? 1 : tflite ? 3 : 2;
  if (!mult || !shift || mult.size() != want ||
      shift.size() != (tflite ? 6 : want))
    throw CodegenError{op, "an INT8 add / sub needs two multipliers and two "
                           "shifts (TFLite's: three and six), a mul one"};
  backend::BinaryInt8Params p;
  p.name = top::getTensorName(op->getResult(0));
  p.lhs = ctx.tensor(op, op->getOperand(0));
  p.rhs = ctx.tensor(op, op->getOperand(1));
  p.output = ctx.tensor(op, op->getResult(0));
  p.kind = isa<tpu::SubOp>(op)   ? backend::BinaryKind::Sub
           : isa<tpu::MulOp>(op) ? backend::BinaryKind::Mul
                                 : backend::BinaryKind::Add;
  std::vector<int64_t> m = toI64(mult), r = toI64(shift);
  if (tflite) {
    backend::BinaryInt8Params::Tflite t;
    for (size_t k = 0; k < 3; ++k) {
      t.steps[k][0] = {int32_t(m[k]), int(r[2 * k]), tpu::kTfliteRoundModes[0]};
      t.steps[k][1] = {1, int(r[2 * k + 1]), tpu::kTfliteRoundModes[1]};
    }
    p.tflite = t;
  } else {
    for (size_t i = 0; i < want; ++i) {
      p.multiplier[i] = int32_t(m[i]);
      p.rshift[i] = int(r[i]);
    }
  }
  p.shift = tpu::kAddFractionBits;
  p.round = tpu::kInt8RoundMode;
  for (int i = 0; i < 2; ++i)
    if (auto q = dyn_cast<quant::UniformQuantizedType>(
            tpu::getElementType(op->getOperand(unsigned(i)))))
      p.zeroPoint[i] = int32_t(q.getZeroPoint());
  if (auto q = dyn_cast<quant::UniformQuantizedType>(
          tpu::getElementType(op->getResult(0))))
    p.outZeroPoint = int32_t(q.getZeroPoint());
  return p;
}

/// The backend function of a tpu.Active mode and its coefficients.
backend::Activation activeFunction(tpu::ActiveOp op) {
  using backend::UnaryKind;
  std::vector<double> c;
  for (Attribute a : op.getCoeffs())
    c.push_back(cast<FloatAttr>(a).getValueAsDouble());
  StringRef m = op.getMode();
  static const std::pair<StringRef, UnaryKind> kSimple[] = {
      {"sigmoid", UnaryKind::Sigmoid}, {"hard_swish", UnaryKind::HardSwish},
      {"tanh", UnaryKind::Tanh},       {"exp", UnaryKind::Exp},
      {"log", UnaryKind::Log},         {"sqrt", UnaryKind::Sqrt},
      {"erf", UnaryKind::Erf},         {"abs", UnaryKind::Abs},
      {"neg", UnaryKind::Neg},         {"reciprocal", UnaryKind::Reciprocal},
      {"gelu", UnaryKind::Gelu},       {"silu", UnaryKind::Silu},
  };
  backend::Activation fn;
  for (auto &[name, kind] : kSimple)
    if (m == name) {
      fn.kind = kind;
      return fn;
    }
  if (m == "relu")
    return fusedActivation(true, c[0]);
  if (m == "leaky_relu") {
    fn.kind = UnaryKind::LeakyRelu;
    fn.alpha = static_cast<float>(c[0]);
  } else if (m == "clip") {
    fn.kind = UnaryKind::Clip;
    fn.alpha = static_cast<float>(c[0]);
    fn.beta = static_cast<float>(c[1]);
  } else if (m == "hard_sigmoid") {
    fn.kind = UnaryKind::HardSigmoid;
    fn.alpha = static_cast<float>(c[0]);
    fn.beta = static_cast<float>(c[1]);
  } else {
    throw CodegenError{op,
                       "no BM1684X kernel for activation '" + m.str() + "'"};
  }
  return fn;
}

BinaryKernelParams binaryKernelParams(CodegenContext &ctx, Operation *op,
                                      StringRef name, Value lhs, Value rhs,
                                      Value out, bool doRelu, double limit,
                                      backend::BinaryKind k) {
  std::optional<float> lc = ctx.scalarWeight(lhs), rc = ctx.scalarWeight(rhs);
  Value tensor = rc ? lhs : rhs;
  bool sameCount =
      module::getNumElements(tensor) == module::getNumElements(out);
  if ((lc || rc) && !(lc && rc) && sameCount) {
    std::vector<int64_t> shape = module::getShape(out);
    if (k == backend::BinaryKind::Pow && rc && !doRelu) {
      backend::UnaryParams p;
      p.name = name.str();
      p.input = ctx.tensor(op, lhs, shape);
      p.output = ctx.tensor(op, out);
      p.fn.kind =
          *rc == 2.0f ? backend::UnaryKind::Square : backend::UnaryKind::Pow;
      p.fn.alpha = *rc;
      return p;
    }
    if (k != backend::BinaryKind::Pow) {
      backend::BinaryConstParams p;
      p.name = name.str();
      p.input = ctx.tensor(op, tensor, shape);
      p.output = ctx.tensor(op, out);
      p.kind = k;
      p.value = rc ? *rc : *lc;
      p.constOnLeft = !rc;
      p.act = fusedActivation(doRelu, limit);
      return p;
    }
  }
  backend::BinaryParams p;
  p.name = name.str();
  p.lhs = ctx.tensor(op, lhs);
  p.rhs = ctx.tensor(op, rhs);
  p.output = ctx.tensor(op, out);
  p.kind = k;
  p.act = fusedActivation(doRelu, limit);
  return p;
}

backend::UnaryParams activeParams(CodegenContext &ctx, tpu::ActiveOp op) {
  auto p = ctx.ioParams<backend::UnaryParams>(op);
  p.fn = activeFunction(op);
  return p;
}

backend::ScaleParams scaleParams(CodegenContext &ctx, tpu::ScaleOp op) {
  backend::ScaleParams p;
  p.name = op.getName().str();
  p.input = ctx.tensor(op, op.getInput());
  p.scale = ctx.tensor(op, op.getScale());
  p.bias = ctx.tensor(op, op.getBias());
  p.output = ctx.tensor(op, op.getOutput());
  p.act = fusedActivation(op.getDoRelu(), op.getReluLimit().convertToDouble());
  return p;
}

backend::CastParams castParams(CodegenContext &ctx, tpu::CastOp op) {
  Type from = tpu::getElementType(op.getInput()),
       to = tpu::getElementType(op.getOutput());
  auto qFrom = dyn_cast<quant::UniformQuantizedType>(from);
  auto qTo = dyn_cast<quant::UniformQuantizedType>(to);
  auto p = ctx.ioParams<backend::CastParams>(op);
  if ((qFrom && isa<FloatType>(to)) || (qTo && isa<FloatType>(from))) {
    auto q = qFrom ? qFrom : qTo;
    p.quant =
        backend::CastParams::Quant{q.getScale(), int32_t(q.getZeroPoint())};
    p.round = tpu::kQuantizeRoundMode;
    return p;
  }
  if (isa<quant::QuantizedType>(from) || isa<quant::QuantizedType>(to))
    throw CodegenError{op, "no BM1684X kernel for a cast between these "
                           "quantised types"};
  if (std::optional<Type> via = op.getViaInt()) {
    std::optional<::tpu::isa::Prec> prec = getPrec(*via);
    if (!prec)
      throw CodegenError{op, "no BM1684X integer type for via_int"};
    p.viaInt = backend::IntType{*prec, isSignedType(*via)};
    p.round = ::tpu::isa::RoundMode::TowardsZero;
  } else if (isa<FloatType>(from) && isa<IntegerType>(to)) {
    // As the interpreter rounds to an integer type (tpu::roundToType).
    p.round = ::tpu::isa::RoundMode::HalfAwayFromZero;
  }
  return p;
}

backend::PReluParams preluParams(CodegenContext &ctx, tpu::PReluOp op) {
  auto p = ctx.ioParams<backend::PReluParams>(op);
  p.slope = ctx.tensor(op, op.getSlope());
  return p;
}

backend::WhereParams whereParams(CodegenContext &ctx, tpu::WhereOp op) {
  backend::WhereParams p;
  p.name = op.getName().str();
  p.cond = ctx.tensor(op, op.getCond());
  p.x = ctx.tensor(op, op.getX());
  p.y = ctx.tensor(op, op.getY());
  p.output = ctx.tensor(op, op.getOutput());
  return p;
}

CompareKernelParams compareParams(CodegenContext &ctx, tpu::CompareOp op) {
  static const std::pair<StringRef, backend::CompareKind> kKinds[] = {
      {"Equal", backend::CompareKind::Eq},
      {"Greater", backend::CompareKind::Gt},
      {"GreaterOrEqual", backend::CompareKind::Ge},
      {"Less", backend::CompareKind::Lt},
      {"LessOrEqual", backend::CompareKind::Le},
  };
  auto it =
      llvm::find_if(kKinds, [&](auto &e) { return e.first == op.getMode(); });
  if (it == std::end(kKinds))
    throw CodegenError{op, "no BM1684X kernel for comparison '" +
                               op.getMode().str() + "'"};
  backend::CompareKind k = it->second;
  Value lhs = op.getLhs(), rhs = op.getRhs(), out = op.getOutput();
  // A one-element weight against a full-size tensor: an immediate. The
  // weight is already of the tensor's type, so the kernel's rounding of the
  // immediate to that type leaves it unchanged.
  std::optional<float> lc = ctx.scalarWeight(lhs), rc = ctx.scalarWeight(rhs);
  Value tensor = rc ? lhs : rhs;
  if ((lc || rc) && !(lc && rc) &&
      module::getNumElements(tensor) == module::getNumElements(out) &&
      tpu::getElementType(tensor) == tpu::getElementType(rc ? rhs : lhs)) {
    backend::CompareConstParams p;
    p.name = op.getName().str();
    p.input = ctx.tensor(op, tensor, module::getShape(out));
    p.output = ctx.tensor(op, out);
    p.kind = k;
    p.value = rc ? *rc : *lc;
    p.constOnLeft = !rc;
    return p;
  }
  backend::CompareParams p;
  p.name = op.getName().str();
  p.lhs = ctx.tensor(op, lhs);
  p.rhs = ctx.tensor(op, rhs);
  p.output = ctx.tensor(op, out);
  p.kind = k;
  return p;
}

} // namespace tpuc::bm1684x

namespace tpuc::tpu {

void AddOp::codegenBM1684X(CodegenContext &ctx) {
  emitBinary(ctx, *this, backend::BinaryKind::Add);
}
void SubOp::codegenBM1684X(CodegenContext &ctx) {
  emitBinary(ctx, *this, backend::BinaryKind::Sub);
}
void MulOp::codegenBM1684X(CodegenContext &ctx) {
  emitBinary(ctx, *this, backend::BinaryKind::Mul);
}
void DivOp::codegenBM1684X(CodegenContext &ctx) {
  emitBinary(ctx, *this, backend::BinaryKind::Div);
}
void MaxOp::codegenBM1684X(CodegenContext &ctx) {
  emitBinary(ctx, *this, backend::BinaryKind::Max);
}
void MinOp::codegenBM1684X(CodegenContext &ctx) {
  emitBinary(ctx, *this, backend::BinaryKind::Min);
}
void PowOp::codegenBM1684X(CodegenContext &ctx) {
  emitBinary(ctx, *this, backend::BinaryKind::Pow);
}

void LutOp::codegenBM1684X(CodegenContext &ctx) {
  backend::lut(ctx.emitter(), lutParams(ctx, *this));
}

void ActiveOp::codegenBM1684X(CodegenContext &ctx) {
  backend::unary(ctx.emitter(), activeParams(ctx, *this));
}

void PReluOp::codegenBM1684X(CodegenContext &ctx) {
  backend::prelu(ctx.emitter(), preluParams(ctx, *this));
}

void ScaleOp::codegenBM1684X(CodegenContext &ctx) {
  backend::scale(ctx.emitter(), scaleParams(ctx, *this));
}

void WhereOp::codegenBM1684X(CodegenContext &ctx) {
  backend::where(ctx.emitter(), whereParams(ctx, *this));
}

void CompareOp::codegenBM1684X(CodegenContext &ctx) {
  std::visit(
      [&](const auto &p) {
        using T = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<T, backend::CompareConstParams>)
          backend::compareConst(ctx.emitter(), p);
        else
          backend::compare(ctx.emitter(), p);
      },
      compareParams(ctx, *this));
}

void CastOp::codegenBM1684X(CodegenContext &ctx) {
  backend::cast(ctx.emitter(), castParams(ctx, *this));
}

} // namespace tpuc::tpu
