//===- Elementwise.cpp - BM1684X codegen of the element-wise ops ---------===//
//
// The binary ops (backend binary, binaryConst, or unary for x ^ c),
// tpu.Scale (scale), tpu.Active (unary), tpu.PRelu, tpu.Compare (compare,
// compareConst), tpu.Where and tpu.Cast.
//
//===----------------------------------------------------------------------===//
#include "../CodegenContext.h"

#include "tpuc/Support/Module.h"

#include "mlir/Dialect/Quant/QuantTypes.h"

using namespace mlir;
namespace backend = ::tpu::backend;

namespace tpuc::tpu {

using namespace bm1684x;

namespace {

/// A binary op with a one-element weight operand runs as a vector op with
/// an immediate (binaryConst); x ^ c runs as the unary power (Square for
/// 2), which also handles negative bases with integer exponents.
template <typename OpT>
void emitBinary(CodegenContext &ctx, OpT op, backend::BinaryKind k) {
  std::string name = op.getName().str();
  bool doRelu = op.getDoRelu();
  double limit = op.getReluLimit().convertToDouble();
  Value lhs = op.getLhs(), rhs = op.getRhs(), out = op.getOutput();
  std::optional<float> lc = ctx.scalarWeight(lhs), rc = ctx.scalarWeight(rhs);
  Value tensor = rc ? lhs : rhs;
  bool sameCount =
      module::getNumElements(tensor) == module::getNumElements(out);
  if ((lc || rc) && !(lc && rc) && sameCount) {
    std::vector<int64_t> shape = module::getShape(out);
    if (k == backend::BinaryKind::Pow && rc && !doRelu) {
      backend::UnaryParams p;
      p.name = name;
      p.input = ctx.tensor(op, lhs, shape);
      p.output = ctx.tensor(op, out);
      p.fn.kind =
          *rc == 2.0f ? backend::UnaryKind::Square : backend::UnaryKind::Pow;
      p.fn.alpha = *rc;
      backend::unary(ctx.emitter(), p);
      return;
    }
    if (k != backend::BinaryKind::Pow) {
      backend::BinaryConstParams p;
      p.name = name;
      p.input = ctx.tensor(op, tensor, shape);
      p.output = ctx.tensor(op, out);
      p.kind = k;
      p.value = rc ? *rc : *lc;
      p.constOnLeft = !rc;
      p.act = fusedActivation(doRelu, limit);
      backend::binaryConst(ctx.emitter(), p);
      return;
    }
  }
  backend::BinaryParams p;
  p.name = name;
  p.lhs = ctx.tensor(op, lhs);
  p.rhs = ctx.tensor(op, rhs);
  p.output = ctx.tensor(op, out);
  p.kind = k;
  p.act = fusedActivation(doRelu, limit);
  backend::binary(ctx.emitter(), p);
}

/// The backend function of a tpu.Active mode and its coefficients.
backend::Activation activeFunction(ActiveOp op) {
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

} // namespace

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

void ActiveOp::codegenBM1684X(CodegenContext &ctx) {
  backend::Activation fn = activeFunction(*this);
  auto p = ctx.ioParams<backend::UnaryParams>(*this);
  p.fn = fn;
  backend::unary(ctx.emitter(), p);
}

void PReluOp::codegenBM1684X(CodegenContext &ctx) {
  backend::PReluParams p;
  p.name = getName().str();
  p.input = ctx.tensor(*this, getInput());
  p.slope = ctx.tensor(*this, getSlope());
  p.output = ctx.tensor(*this, getOutput());
  backend::prelu(ctx.emitter(), p);
}

void ScaleOp::codegenBM1684X(CodegenContext &ctx) {
  backend::ScaleParams p;
  p.name = getName().str();
  p.input = ctx.tensor(*this, getInput());
  p.scale = ctx.tensor(*this, getScale());
  p.bias = ctx.tensor(*this, getBias());
  p.output = ctx.tensor(*this, getOutput());
  p.act = fusedActivation(getDoRelu(), getReluLimit().convertToDouble());
  backend::scale(ctx.emitter(), p);
}

void WhereOp::codegenBM1684X(CodegenContext &ctx) {
  backend::WhereParams p;
  p.name = getName().str();
  p.cond = ctx.tensor(*this, getCond());
  p.x = ctx.tensor(*this, getX());
  p.y = ctx.tensor(*this, getY());
  p.output = ctx.tensor(*this, getOutput());
  backend::where(ctx.emitter(), p);
}

void CompareOp::codegenBM1684X(CodegenContext &ctx) {
  static const std::pair<StringRef, backend::CompareKind> kKinds[] = {
      {"Equal", backend::CompareKind::Eq},
      {"Greater", backend::CompareKind::Gt},
      {"GreaterOrEqual", backend::CompareKind::Ge},
      {"Less", backend::CompareKind::Lt},
      {"LessOrEqual", backend::CompareKind::Le},
  };
  auto it =
      llvm::find_if(kKinds, [&](auto &e) { return e.first == getMode(); });
  if (it == std::end(kKinds))
    throw CodegenError{*this, "no BM1684X kernel for comparison '" +
                                  getMode().str() + "'"};
  backend::CompareKind k = it->second;
  Value lhs = getLhs(), rhs = getRhs(), out = getOutput();
  // A one-element weight against a full-size tensor: an immediate. The
  // weight is already of the tensor's type, so the kernel's rounding of the
  // immediate to that type leaves it unchanged.
  std::optional<float> lc = ctx.scalarWeight(lhs), rc = ctx.scalarWeight(rhs);
  Value tensor = rc ? lhs : rhs;
  if ((lc || rc) && !(lc && rc) &&
      module::getNumElements(tensor) == module::getNumElements(out) &&
      tpu::getElementType(tensor) == tpu::getElementType(rc ? rhs : lhs)) {
    backend::CompareConstParams p;
    p.name = getName().str();
    p.input = ctx.tensor(*this, tensor, module::getShape(out));
    p.output = ctx.tensor(*this, out);
    p.kind = k;
    p.value = rc ? *rc : *lc;
    p.constOnLeft = !rc;
    backend::compareConst(ctx.emitter(), p);
    return;
  }
  backend::CompareParams p;
  p.name = getName().str();
  p.lhs = ctx.tensor(*this, lhs);
  p.rhs = ctx.tensor(*this, rhs);
  p.output = ctx.tensor(*this, out);
  p.kind = k;
  backend::compare(ctx.emitter(), p);
}

void CastOp::codegenBM1684X(CodegenContext &ctx) {
  Type from = tpu::getElementType(getInput()),
       to = tpu::getElementType(getOutput());
  if (isa<quant::QuantizedType>(from) || isa<quant::QuantizedType>(to))
    throw CodegenError{*this, "no BM1684X kernel for a cast to or from a "
                              "quantised type (scale, zero point)"};
  auto p = ctx.ioParams<backend::CastParams>(*this);
  if (std::optional<Type> via = getViaInt()) {
    std::optional<::tpu::isa::Prec> prec = getPrec(*via);
    if (!prec)
      throw CodegenError{*this, "no BM1684X integer type for via_int"};
    p.viaInt = backend::IntType{*prec, isSignedType(*via)};
    p.round = ::tpu::isa::RoundMode::TowardsZero;
  } else if (isa<FloatType>(from) && isa<IntegerType>(to)) {
    // As the interpreter rounds to an integer type (tpu::roundToType).
    p.round = ::tpu::isa::RoundMode::HalfAwayFromZero;
  }
  backend::cast(ctx.emitter(), p);
}

} // namespace tpuc::tpu
