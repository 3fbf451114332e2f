//===- LowerElementwise.cpp - Lowering of elementwise ops
//------------------===//
//
// Binary ops keep their operands (weights become tpu.Weight of the mode's
// type); unary activations become tpu.Active with a mode and coefficients.
//
//===----------------------------------------------------------------------===//
#include "Lowering.h"

#include <cmath>

using namespace mlir;
using namespace tpuc;
using namespace tpuc::lowering;

namespace {

template <typename TopOpT, typename TpuOpT>
LogicalResult lowerBinaryRelu(Operation *o, Lowering &l) {
  auto op = cast<TopOpT>(o);
  OpBuilder b(o);
  Value lhs = l.activation(b, op.getLhs());
  Value rhs = l.activation(b, op.getRhs());
  auto r = b.create<TpuOpT>(op.getLoc(), l.actTypeOf(op.getOutput()), lhs, rhs,
                            op.getDoRelu(), op.getReluLimit(), op.getName());
  replaceOp(o, r.getOutput());
  return success();
}

template <typename TopOpT, typename TpuOpT>
LogicalResult lowerBinary(Operation *o, Lowering &l) {
  auto op = cast<TopOpT>(o);
  OpBuilder b(o);
  Value lhs = l.activation(b, op.getLhs());
  Value rhs = l.activation(b, op.getRhs());
  auto r = b.create<TpuOpT>(op.getLoc(), l.actTypeOf(op.getOutput()), lhs, rhs,
                            false, APFloat(-1.0), op.getName());
  replaceOp(o, r.getOutput());
  return success();
}

LogicalResult lowerCompare(Operation *o, Lowering &l) {
  auto op = cast<top::CompareOp>(o);
  OpBuilder b(o);
  Value lhs = l.activation(b, op.getLhs());
  Value rhs = l.activation(b, op.getRhs());
  auto r = b.create<tpu::CompareOp>(op.getLoc(), l.actTypeOf(op.getOutput()),
                                    lhs, rhs, op.getMode(), op.getName());
  replaceOp(o, r.getOutput());
  return success();
}

LogicalResult lowerWhere(Operation *o, Lowering &l) {
  auto op = cast<top::WhereOp>(o);
  OpBuilder b(o);
  Value c = l.activation(b, op.getCond());
  Value x = l.activation(b, op.getX());
  Value y = l.activation(b, op.getY());
  auto r = b.create<tpu::WhereOp>(op.getLoc(), l.actTypeOf(op.getOutput()), c,
                                  x, y, op.getName());
  replaceOp(o, r.getOutput());
  return success();
}

LogicalResult lowerPRelu(Operation *o, Lowering &l) {
  auto op = cast<top::PReluOp>(o);
  OpBuilder b(o);
  Value x = l.activation(b, op.getInput());
  Value slope = l.activation(b, op.getSlope());
  auto r = b.create<tpu::PReluOp>(op.getLoc(), l.actTypeOf(op.getOutput()), x,
                                  slope, op.getName());
  replaceOp(o, r.getOutput());
  return success();
}

/// Creates tpu.Active(mode, coeffs) for the unary top op \p o.
LogicalResult makeActive(Operation *o, Lowering &l, StringRef mode,
                         ArrayRef<double> coeffs = {}) {
  OpBuilder b(o);
  Value x = l.activation(b, o->getOperand(0));
  auto r = b.create<tpu::ActiveOp>(o->getLoc(), l.actTypeOf(o->getResult(0)), x,
                                   mode, b.getF64ArrayAttr(coeffs), nameOf(o));
  replaceOp(o, r.getOutput());
  return success();
}

template <const char *Mode>
LogicalResult lowerActive(Operation *o, Lowering &l) {
  return makeActive(o, l, Mode);
}

constexpr char kSigmoid[] = "sigmoid";
constexpr char kHardSwish[] = "hard_swish";
constexpr char kTanh[] = "tanh";
constexpr char kExp[] = "exp";
constexpr char kLog[] = "log";
constexpr char kSqrt[] = "sqrt";
constexpr char kErf[] = "erf";
constexpr char kSilu[] = "silu";
constexpr char kAbs[] = "abs";
constexpr char kNeg[] = "neg";
constexpr char kReciprocal[] = "reciprocal";

LogicalResult lowerRelu(Operation *o, Lowering &l) {
  auto op = cast<top::ReluOp>(o);
  return makeActive(o, l, "relu", {op.getReluLimit().convertToDouble()});
}

LogicalResult lowerLeakyRelu(Operation *o, Lowering &l) {
  auto op = cast<top::LeakyReluOp>(o);
  return makeActive(o, l, "leaky_relu", {op.getAlpha().convertToDouble()});
}

LogicalResult lowerClip(Operation *o, Lowering &l) {
  auto op = cast<top::ClipOp>(o);
  return makeActive(
      o, l, "clip",
      {op.getMin().convertToDouble(), op.getMax().convertToDouble()});
}

LogicalResult lowerHardSigmoid(Operation *o, Lowering &l) {
  auto op = cast<top::HardSigmoidOp>(o);
  return makeActive(
      o, l, "hard_sigmoid",
      {op.getAlpha().convertToDouble(), op.getBeta().convertToDouble()});
}

LogicalResult lowerGelu(Operation *o, Lowering &l) {
  auto op = cast<top::GeluOp>(o);
  if (op.getApproximate() == "tanh")
    return makeActive(o, l, "gelu_tanh");
  return makeActive(o, l, "gelu");
}

/// The integer type a float-mode cast to the ONNX integer type \p to goes
/// through, or null. The chip has no 64-bit integers: int64 / uint64 go
/// through int32 / uint32, so their values saturate at that range (the
/// tpu.Cast description says so).
Type castIntType(MLIRContext *ctx, StringRef to) {
  auto signless = [&](unsigned w) { return IntegerType::get(ctx, w); };
  auto unsignedT = [&](unsigned w) {
    return IntegerType::get(ctx, w, IntegerType::Unsigned);
  };
  if (to == "int8")
    return signless(8);
  if (to == "uint8")
    return unsignedT(8);
  if (to == "int16")
    return signless(16);
  if (to == "uint16")
    return unsignedT(16);
  if (to == "int32" || to == "int64")
    return signless(32);
  if (to == "uint32" || to == "uint64")
    return unsignedT(32);
  return {};
}

/// Whether every value of `v` is 0 or 1: a comparison's result (top, or
/// tpu once lowered) or a cast to bool (a cast to bool of it, x != 0, is
/// then x itself).
bool isZeroOrOne(Value v) {
  Operation *def = v.getDefiningOp();
  if (auto c = dyn_cast_or_null<top::CastOp>(def))
    return c.getTo() == "bool";
  return isa_and_nonnull<top::CompareOp, tpu::CompareOp>(def);
}

/// Cast keeps float32 values in top; in a float mode the identity casts
/// (to f32 / f64, to the mode's own type, to bool of a value that is 0 or 1
/// already, as an ONNX Cast of a comparison before an If) become aliases and
/// the casts to an integer type a tpu.Cast through that type (toward zero,
/// saturating).
LogicalResult lowerCast(Operation *o, Lowering &l) {
  auto op = cast<top::CastOp>(o);
  StringRef to = op.getTo();
  OpBuilder b(o);
  bool identity = to == "f32" || to == "f64" ||
                  (to == "f16" && l.getMode() == QuantMode::F16) ||
                  (to == "bf16" && l.getMode() == QuantMode::BF16) ||
                  (to == "bool" && isZeroOrOne(op.getInput()));
  Type viaInt = castIntType(l.getContext(), to);
  if (!identity && !viaInt)
    return l.unsupported(o, "a cast to '" + to +
                                "' has no float-mode kernel (values are "
                                "rounded to another float type or to bool)");
  Value x = l.activation(b, op.getInput());
  Value r;
  if (identity)
    r = b.create<tpu::ReshapeOp>(op.getLoc(), l.actTypeOf(op.getOutput()), x,
                                 op.getName())
            .getOutput();
  else
    r = b.create<tpu::CastOp>(op.getLoc(), l.actTypeOf(op.getOutput()), x,
                              op.getName(), TypeAttr::get(viaInt))
            .getOutput();
  replaceOp(o, r);
  return success();
}

} // namespace

namespace tpuc::lowering {

void registerElementwiseLowerings(LoweringTable &table) {
  table["top.Add"] = lowerBinaryRelu<top::AddOp, tpu::AddOp>;
  table["top.Sub"] = lowerBinaryRelu<top::SubOp, tpu::SubOp>;
  table["top.Mul"] = lowerBinaryRelu<top::MulOp, tpu::MulOp>;
  table["top.Div"] = lowerBinary<top::DivOp, tpu::DivOp>;
  table["top.Max"] = lowerBinary<top::MaxOp, tpu::MaxOp>;
  table["top.Min"] = lowerBinary<top::MinOp, tpu::MinOp>;
  table["top.Pow"] = lowerBinary<top::PowOp, tpu::PowOp>;
  table["top.Compare"] = lowerCompare;
  table["top.Where"] = lowerWhere;
  table["top.PRelu"] = lowerPRelu;
  table["top.Relu"] = lowerRelu;
  table["top.LeakyRelu"] = lowerLeakyRelu;
  table["top.Clip"] = lowerClip;
  table["top.HardSigmoid"] = lowerHardSigmoid;
  table["top.Gelu"] = lowerGelu;
  table["top.Sigmoid"] = lowerActive<kSigmoid>;
  table["top.HardSwish"] = lowerActive<kHardSwish>;
  table["top.Tanh"] = lowerActive<kTanh>;
  table["top.Exp"] = lowerActive<kExp>;
  table["top.Log"] = lowerActive<kLog>;
  table["top.Sqrt"] = lowerActive<kSqrt>;
  table["top.Erf"] = lowerActive<kErf>;
  table["top.SiLU"] = lowerActive<kSilu>;
  table["top.Abs"] = lowerActive<kAbs>;
  table["top.Neg"] = lowerActive<kNeg>;
  table["top.Reciprocal"] = lowerActive<kReciprocal>;
  table["top.Cast"] = lowerCast;
}

} // namespace tpuc::lowering
