//===- ElementwiseOps.cpp - Arithmetic, comparison, activations, casts ----===//

#include "Fold.h"
#include "ImportContext.h"

#include <cmath>
#include <functional>
#include <limits>

namespace tpuc::frontend {

namespace {

using FloatFn = double (*)(llvm::ArrayRef<double>);
using IntFn = int64_t (*)(llvm::ArrayRef<int64_t>);

/// Evaluation of the binary arithmetic ops on constants.
struct BinaryKind {
  llvm::StringRef name;
  FloatFn floatFn;
  IntFn intFn;
};

const BinaryKind kBinaryKinds[] = {
    {"Add", [](llvm::ArrayRef<double> v) { return v[0] + v[1]; },
     [](llvm::ArrayRef<int64_t> v) { return v[0] + v[1]; }},
    {"Sub", [](llvm::ArrayRef<double> v) { return v[0] - v[1]; },
     [](llvm::ArrayRef<int64_t> v) { return v[0] - v[1]; }},
    {"Mul", [](llvm::ArrayRef<double> v) { return v[0] * v[1]; },
     [](llvm::ArrayRef<int64_t> v) { return v[0] * v[1]; }},
    {"Div", [](llvm::ArrayRef<double> v) { return v[0] / v[1]; },
     [](llvm::ArrayRef<int64_t> v) -> int64_t {
       return v[1] == 0 ? 0 : v[0] / v[1];
     }},
    {"Pow",
     [](llvm::ArrayRef<double> v) {
       return static_cast<double>(
           std::pow(static_cast<float>(v[0]), static_cast<float>(v[1])));
     },
     [](llvm::ArrayRef<int64_t> v) {
       return static_cast<int64_t>(
           std::pow(static_cast<double>(v[0]), static_cast<double>(v[1])));
     }},
};

const BinaryKind &binaryKind(llvm::StringRef op) {
  for (const BinaryKind &k : kBinaryKinds)
    if (k.name == op)
      return k;
  llvm_unreachable("not a binary arithmetic op");
}

/// Operand \p i of a binary node, with the pre-opset-7 `axis` broadcast
/// turned into numpy broadcasting by reshaping B.
mlir::Value binaryOperand(ImportContext &ctx, const onnx::NodeProto &node,
                          unsigned i) {
  if (i == 1 && ctx.getOpset() < 7 &&
      ctx.getAttrInt(node, "broadcast", 0) != 0 && ctx.hasAttr(node, "axis")) {
    Shape a = ctx.getShape(node, 0);
    Shape b = ctx.getShape(node, 1);
    int64_t axis = ctx.normalizeAxis(node, ctx.getAttrInt(node, "axis", 0),
                                     static_cast<int64_t>(a.size()), "axis");
    Shape aligned(axis, 1);
    aligned.insert(aligned.end(), b.begin(), b.end());
    aligned.resize(std::max(aligned.size(), a.size()), 1);
    return ctx.getValueReshaped(node, 1, aligned, "aligned");
  }
  return ctx.getValue(node, i);
}

/// Constant inputs of \p node (every input present).
std::vector<const ConstTensor *> constInputs(ImportContext &ctx,
                                             const onnx::NodeProto &node) {
  std::vector<const ConstTensor *> v;
  for (unsigned i = 0; i < ImportContext::numInputs(node); ++i)
    if (ctx.hasInput(node, i))
      v.push_back(&ctx.getConstant(node, i, node.input(i)));
  return v;
}

/// The legacy-broadcast-aware constant of input 1.
ConstTensor alignedConstant(ImportContext &ctx, const onnx::NodeProto &node) {
  const ConstTensor &b = ctx.getConstant(node, 1, "B");
  if (ctx.getOpset() < 7 && ctx.getAttrInt(node, "broadcast", 0) != 0 &&
      ctx.hasAttr(node, "axis")) {
    Shape a = ctx.getShape(node, 0);
    int64_t axis = ctx.normalizeAxis(node, ctx.getAttrInt(node, "axis", 0),
                                     static_cast<int64_t>(a.size()), "axis");
    Shape aligned(axis, 1);
    aligned.insert(aligned.end(), b.getShape().begin(), b.getShape().end());
    aligned.resize(std::max(aligned.size(), a.size()), 1);
    return b.reshaped(aligned);
  }
  return b;
}

/// A [1, ..., 1] weight of \p rank holding \p value (broadcasts like a
/// scalar without changing the other operand's rank).
mlir::Value scalarLike(ImportContext &ctx, const onnx::NodeProto &node,
                       llvm::StringRef suffix, double value, int64_t rank) {
  return ctx.createScalarWeight(node, suffix, value, Shape(rank, 1));
}

} // namespace

//===----------------------------------------------------------------------===//
// Binary arithmetic
//===----------------------------------------------------------------------===//

void importBinary(ImportContext &ctx, const onnx::NodeProto &node) {
  llvm::StringRef op = node.op_type();
  ElemType type = ctx.getType(node, 0);
  const BinaryKind &kind = binaryKind(op);
  if (ctx.allConstant(node)) {
    ConstTensor b = alignedConstant(ctx, node);
    const ConstTensor &a = ctx.getConstant(node, 0, "A");
    ctx.setConstant(node, 0,
                    foldElementwise({&a, &b}, type, kind.floatFn, kind.intFn,
                                    ctx.getPath() + ": node '" +
                                        ImportContext::nodeName(node) + "'"));
    return;
  }
  if (isIntegerType(type))
    ctx.checkRuntimeArithmetic(node, type);
  mlir::Value lhs = ctx.getValue(node, 0);
  mlir::Value rhs = binaryOperand(ctx, node, 1);
  mlir::Value out;
  bool intDiv = op == "Div" && isIntegerType(type);
  llvm::StringRef suffix = intDiv ? "float" : "";
  if (op == "Add")
    out = ctx.emit<top::AddOp>(node, {lhs, rhs});
  else if (op == "Sub")
    out = ctx.emit<top::SubOp>(node, {lhs, rhs});
  else if (op == "Mul")
    out = ctx.emit<top::MulOp>(node, {lhs, rhs});
  else if (op == "Div")
    out = ctx.emit<top::DivOp>(node, {lhs, rhs}, {}, suffix);
  else
    out = ctx.emit<top::PowOp>(node, {lhs, rhs});
  if (intDiv)
    // Integer division truncates toward zero, as Cast to an integer does.
    out = ctx.emit<top::CastOp>(
        node, out,
        {ctx.named("to",
                   ctx.strAttr(type == elem::Int32 ? "int32" : "int64"))});
  ctx.setValue(node, 0, out, type);
}

void importVariadic(ImportContext &ctx, const onnx::NodeProto &node) {
  llvm::StringRef op = node.op_type();
  unsigned n = ImportContext::numInputs(node);
  if (n == 0)
    ctx.fail(node, "needs at least one input");
  ElemType type = ctx.getType(node, 0);
  if (ctx.allConstant(node)) {
    FloatFn ff;
    IntFn fi;
    if (op == "Max") {
      ff = [](llvm::ArrayRef<double> v) {
        double m = v[0];
        for (double x : v)
          m = std::isnan(x) || std::isnan(m) ? NAN : std::max(m, x);
        return m;
      };
      fi = [](llvm::ArrayRef<int64_t> v) {
        return *std::max_element(v.begin(), v.end());
      };
    } else if (op == "Min") {
      ff = [](llvm::ArrayRef<double> v) {
        double m = v[0];
        for (double x : v)
          m = std::isnan(x) || std::isnan(m) ? NAN : std::min(m, x);
        return m;
      };
      fi = [](llvm::ArrayRef<int64_t> v) {
        return *std::min_element(v.begin(), v.end());
      };
    } else if (op == "Sum") {
      ff = [](llvm::ArrayRef<double> v) {
        float s = 0;
        for (double x : v)
          s += static_cast<float>(x);
        return static_cast<double>(s);
      };
      fi = [](llvm::ArrayRef<int64_t> v) {
        int64_t s = 0;
        for (int64_t x : v)
          s += x;
        return s;
      };
    } else {
      ff = [](llvm::ArrayRef<double> v) {
        float s = 0;
        for (double x : v)
          s += static_cast<float>(x);
        return static_cast<double>(s / static_cast<float>(v.size()));
      };
      fi = [](llvm::ArrayRef<int64_t> v) {
        int64_t s = 0;
        for (int64_t x : v)
          s += x;
        return s / static_cast<int64_t>(v.size());
      };
    }
    ctx.setConstant(node, 0,
                    foldElementwise(constInputs(ctx, node), type, ff, fi,
                                    ctx.getPath() + ": node '" +
                                        ImportContext::nodeName(node) + "'"));
    return;
  }
  if (op != "Max" && op != "Min" && isIntegerType(type))
    ctx.checkRuntimeArithmetic(node, type);
  bool mean = op == "Mean";
  if (n == 1 && !mean) {
    ctx.setValue(node, 0, ctx.getValue(node, 0), type);
    return;
  }
  // A left-to-right chain; the last op carries the node's name.
  mlir::Value acc = ctx.getValue(node, 0);
  for (unsigned i = 1; i < n; ++i) {
    bool last = i + 1 == n && !mean;
    std::string suffix = last ? "" : "partial" + std::to_string(i);
    mlir::Value rhs = ctx.getValue(node, i);
    if (op == "Max")
      acc = ctx.emit<top::MaxOp>(node, {acc, rhs}, {}, suffix);
    else if (op == "Min")
      acc = ctx.emit<top::MinOp>(node, {acc, rhs}, {}, suffix);
    else
      acc = ctx.emit<top::AddOp>(node, {acc, rhs}, {}, suffix);
  }
  if (mean)
    acc = ctx.emit<top::MulOp>(
        node, {acc, scalarLike(ctx, node, "inv_count", 1.0 / n,
                               ImportContext::shapeOf(acc).size())});
  ctx.setValue(node, 0, acc, type);
}

//===----------------------------------------------------------------------===//
// Comparison and logic
//===----------------------------------------------------------------------===//

void importCompare(ImportContext &ctx, const onnx::NodeProto &node) {
  llvm::StringRef op = node.op_type();
  if (ctx.allConstant(node)) {
    ConstTensor b = alignedConstant(ctx, node);
    const ConstTensor &a = ctx.getConstant(node, 0, "A");
    FloatFn ff;
    IntFn fi;
    if (op == "Equal") {
      ff = [](llvm::ArrayRef<double> v) { return double(v[0] == v[1]); };
      fi = [](llvm::ArrayRef<int64_t> v) { return int64_t(v[0] == v[1]); };
    } else if (op == "Greater") {
      ff = [](llvm::ArrayRef<double> v) { return double(v[0] > v[1]); };
      fi = [](llvm::ArrayRef<int64_t> v) { return int64_t(v[0] > v[1]); };
    } else if (op == "GreaterOrEqual") {
      ff = [](llvm::ArrayRef<double> v) { return double(v[0] >= v[1]); };
      fi = [](llvm::ArrayRef<int64_t> v) { return int64_t(v[0] >= v[1]); };
    } else if (op == "Less") {
      ff = [](llvm::ArrayRef<double> v) { return double(v[0] < v[1]); };
      fi = [](llvm::ArrayRef<int64_t> v) { return int64_t(v[0] < v[1]); };
    } else {
      ff = [](llvm::ArrayRef<double> v) { return double(v[0] <= v[1]); };
      fi = [](llvm::ArrayRef<int64_t> v) { return int64_t(v[0] <= v[1]); };
    }
    ctx.setConstant(node, 0,
                    foldElementwise({&a, &b}, elem::Bool, ff, fi,
                                    ctx.getPath() + ": node '" +
                                        ImportContext::nodeName(node) + "'"));
    return;
  }
  mlir::Value out = ctx.emit<top::CompareOp>(
      node, {ctx.getValue(node, 0), binaryOperand(ctx, node, 1)},
      {ctx.named("mode", ctx.strAttr(op))});
  ctx.setValue(node, 0, out, elem::Bool);
}

void importLogical(ImportContext &ctx, const onnx::NodeProto &node) {
  llvm::StringRef op = node.op_type();
  if (ctx.allConstant(node)) {
    std::vector<const ConstTensor *> in = constInputs(ctx, node);
    ConstTensor b;
    if (op != "Not") {
      b = alignedConstant(ctx, node);
      in[1] = &b;
    }
    IntFn fi;
    if (op == "And")
      fi = [](llvm::ArrayRef<int64_t> v) { return int64_t(v[0] && v[1]); };
    else if (op == "Or")
      fi = [](llvm::ArrayRef<int64_t> v) { return int64_t(v[0] || v[1]); };
    else if (op == "Xor")
      fi = [](llvm::ArrayRef<int64_t> v) {
        return int64_t((v[0] != 0) != (v[1] != 0));
      };
    else
      fi = [](llvm::ArrayRef<int64_t> v) { return int64_t(v[0] == 0); };
    ctx.setConstant(node, 0,
                    foldElementwise(
                        in, elem::Bool,
                        [](llvm::ArrayRef<double>) -> double {
                          llvm_unreachable("logical ops take BOOL inputs");
                        },
                        fi, ctx.getPath()));
    return;
  }
  // On 0/1 values: and = a * b, or = max(a, b), xor = |a - b|, not = 1 - a.
  mlir::Value out;
  mlir::Value a = ctx.getValue(node, 0);
  if (op == "Not") {
    out = ctx.emit<top::SubOp>(
        node, {scalarLike(ctx, node, "one", 1.0, ctx.getRank(node, 0)), a});
  } else {
    mlir::Value b = binaryOperand(ctx, node, 1);
    if (op == "And") {
      out = ctx.emit<top::MulOp>(node, {a, b});
    } else if (op == "Or") {
      out = ctx.emit<top::MaxOp>(node, {a, b});
    } else {
      mlir::Value d = ctx.emit<top::SubOp>(node, {a, b}, {}, "diff");
      out = ctx.emit<top::AbsOp>(node, d);
    }
  }
  ctx.setValue(node, 0, out, elem::Bool);
}

void importWhere(ImportContext &ctx, const onnx::NodeProto &node) {
  ElemType type = ctx.getType(node, 1);
  if (ctx.allConstant(node)) {
    ctx.setConstant(
        node, 0,
        foldElementwise(
            constInputs(ctx, node), type,
            [](llvm::ArrayRef<double> v) { return v[0] != 0 ? v[1] : v[2]; },
            [](llvm::ArrayRef<int64_t> v) { return v[0] != 0 ? v[1] : v[2]; },
            ctx.getPath()));
    return;
  }
  mlir::Value out = ctx.emit<top::WhereOp>(
      node,
      {ctx.getValue(node, 0), ctx.getValue(node, 1), ctx.getValue(node, 2)});
  ctx.setValue(node, 0, out, type);
}

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

} // namespace

void importUnary(ImportContext &ctx, const onnx::NodeProto &node) {
  llvm::StringRef op = node.op_type();
  ElemType type = ctx.getType(node, 0);
  double alpha = ImportContext::floatAttrValue(
      ctx.getAttrFloat(node, "alpha", op == "HardSigmoid" ? 0.2f : 0.01f));
  double beta =
      ImportContext::floatAttrValue(ctx.getAttrFloat(node, "beta", 0.5f));
  std::string approximate = ctx.getAttrString(node, "approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    ctx.failAttr(node, "approximate", "unknown value '" + approximate + "'");

  if (ctx.isConstant(node, 0)) {
    const ConstTensor &x = ctx.getConstant(node, 0, "X");
    std::function<double(double)> f;
    if (op == "Relu")
      f = [](double v) { return v > 0 ? v : 0.0; };
    else if (op == "LeakyRelu")
      f = [alpha](double v) { return v < 0 ? alpha * v : v; };
    else if (op == "Sigmoid")
      f = sigmoid;
    else if (op == "HardSigmoid")
      f = [alpha, beta](double v) {
        return std::max(0.0, std::min(1.0, alpha * v + beta));
      };
    else if (op == "HardSwish")
      f = [](double v) {
        return v * std::max(0.0, std::min(1.0, v / 6.0 + 0.5));
      };
    else if (op == "Tanh")
      f = [](double v) { return std::tanh(v); };
    else if (op == "Exp")
      f = [](double v) { return std::exp(v); };
    else if (op == "Log")
      f = [](double v) { return std::log(v); };
    else if (op == "Sqrt")
      f = [](double v) { return std::sqrt(v); };
    else if (op == "Erf")
      f = [](double v) { return std::erf(v); };
    else if (op == "Abs")
      f = [](double v) { return std::fabs(v); };
    else if (op == "Neg")
      f = [](double v) { return -v; };
    else if (op == "Reciprocal")
      f = [](double v) { return 1.0 / v; };
    else if (op == "Gelu" && approximate == "tanh")
      f = [](double v) {
        constexpr double kSqrt2OverPi = 0.7978845608028654;
        constexpr double kCubicCoeff = 0.044715;
        return 0.5 * v *
               (1 + std::tanh(kSqrt2OverPi * (v + kCubicCoeff * v * v * v)));
      };
    else
      f = [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); };
    ConstTensor out = x;
    for (int64_t k = 0; k < x.size(); ++k) {
      if (!x.isFloat() && (op == "Abs" || op == "Neg"))
        out.setInt(k, op == "Abs" ? std::abs(x.getInt(k)) : -x.getInt(k));
      else
        out.set(k, f(x.getDouble(k)));
    }
    ctx.setConstant(node, 0, std::move(out));
    return;
  }

  if (isIntegerType(type) && op == "Neg")
    ctx.checkRuntimeArithmetic(node, type);
  mlir::Value x = ctx.getValue(node, 0);
  mlir::Value out;
  if (op == "Relu")
    out = ctx.emit<top::ReluOp>(node, x);
  else if (op == "LeakyRelu")
    out = ctx.emit<top::LeakyReluOp>(node, x,
                                     {ctx.named("alpha", ctx.f64Attr(alpha))});
  else if (op == "Sigmoid")
    out = ctx.emit<top::SigmoidOp>(node, x);
  else if (op == "HardSigmoid")
    out = ctx.emit<top::HardSigmoidOp>(node, x,
                                       {ctx.named("alpha", ctx.f64Attr(alpha)),
                                        ctx.named("beta", ctx.f64Attr(beta))});
  else if (op == "HardSwish")
    out = ctx.emit<top::HardSwishOp>(node, x);
  else if (op == "Tanh")
    out = ctx.emit<top::TanhOp>(node, x);
  else if (op == "Exp")
    out = ctx.emit<top::ExpOp>(node, x);
  else if (op == "Log")
    out = ctx.emit<top::LogOp>(node, x);
  else if (op == "Sqrt")
    out = ctx.emit<top::SqrtOp>(node, x);
  else if (op == "Erf")
    out = ctx.emit<top::ErfOp>(node, x);
  else if (op == "Abs")
    out = ctx.emit<top::AbsOp>(node, x);
  else if (op == "Neg")
    out = ctx.emit<top::NegOp>(node, x);
  else if (op == "Reciprocal")
    out = ctx.emit<top::ReciprocalOp>(node, x);
  else
    out = ctx.emit<top::GeluOp>(
        node, x, {ctx.named("approximate", ctx.strAttr(approximate))});
  ctx.setValue(node, 0, out, type);
}

void importPRelu(ImportContext &ctx, const onnx::NodeProto &node) {
  Shape x = ctx.getShape(node, 0);
  Shape slope = ctx.getShape(node, 1);
  // Before opset 7 a slope of C values applied per channel.
  mlir::Value s = ctx.getValue(node, 1);
  if (ctx.getOpset() < 7 && slope.size() == 1 && x.size() > 2 &&
      slope[0] == x[1] && slope[0] != x.back()) {
    Shape channel(x.size() - 1, 1);
    channel[0] = x[1];
    s = ctx.getValueReshaped(node, 1, channel, "c11");
  }
  mlir::Value out = ctx.emit<top::PReluOp>(node, {ctx.getValue(node, 0), s});
  ctx.setValue(node, 0, out, ctx.getType(node, 0));
}

void importClip(ImportContext &ctx, const onnx::NodeProto &node) {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  if (ctx.getOpset() < 11) {
    if (ctx.hasAttr(node, "min"))
      lo = ImportContext::floatAttrValue(ctx.getAttrFloat(node, "min", 0));
    if (ctx.hasAttr(node, "max"))
      hi = ImportContext::floatAttrValue(ctx.getAttrFloat(node, "max", 0));
  } else if (!ctx.allConstant(node) &&
             ((ctx.hasInput(node, 1) && !ctx.isConstant(node, 1)) ||
              (ctx.hasInput(node, 2) && !ctx.isConstant(node, 2)))) {
    // Bounds computed at run time: max(x, min), then min(., max).
    ElemType type = ctx.getType(node, 0);
    mlir::Value out = ctx.getValue(node, 0);
    bool hasMax = ctx.hasInput(node, 2);
    if (ctx.hasInput(node, 1))
      out = ctx.emit<top::MaxOp>(node, {out, ctx.getValue(node, 1)}, {},
                                 hasMax ? "lower" : "");
    if (hasMax)
      out = ctx.emit<top::MinOp>(node, {out, ctx.getValue(node, 2)});
    ctx.setValue(node, 0, out, type);
    return;
  } else {
    for (unsigned i = 1; i <= 2; ++i) {
      if (!ctx.hasInput(node, i))
        continue;
      const ConstTensor &c = ctx.getConstant(node, i, i == 1 ? "min" : "max");
      if (c.size() != 1)
        ctx.fail(node,
                 llvm::Twine(i == 1 ? "min" : "max") + " must hold one value");
      double v = c.getDouble(0);
      if (c.isFloat() && c.getType() == elem::Float)
        v = ImportContext::floatAttrValue(static_cast<float>(v));
      (i == 1 ? lo : hi) = v;
    }
  }
  ElemType type = ctx.getType(node, 0);
  if (ctx.isConstant(node, 0)) {
    ConstTensor out = ctx.getConstant(node, 0, "input");
    for (int64_t k = 0; k < out.size(); ++k)
      out.set(k, std::min(std::max(out.getDouble(k), lo), hi));
    ctx.setConstant(node, 0, std::move(out));
    return;
  }
  mlir::Value out = ctx.emit<top::ClipOp>(
      node, ctx.getValue(node, 0),
      {ctx.named("min", ctx.f64Attr(lo)), ctx.named("max", ctx.f64Attr(hi))});
  ctx.setValue(node, 0, out, type);
}

void importActivation(ImportContext &ctx, const onnx::NodeProto &node) {
  llvm::StringRef op = node.op_type();
  ElemType type = ctx.getType(node, 0);
  int64_t rank = ctx.getRank(node, 0);
  mlir::Value x = ctx.getValue(node, 0);
  auto scalar = [&](llvm::StringRef suffix, double v) {
    return scalarLike(ctx, node, suffix, v, rank);
  };
  mlir::Value out;
  if (op == "Softplus") {
    mlir::Value e = ctx.emit<top::ExpOp>(node, x, {}, "exp");
    mlir::Value e1 =
        ctx.emit<top::AddOp>(node, {e, scalar("one", 1.0)}, {}, "exp_plus_1");
    out = ctx.emit<top::LogOp>(node, e1);
  } else if (op == "Softsign") {
    mlir::Value a = ctx.emit<top::AbsOp>(node, x, {}, "abs");
    mlir::Value a1 =
        ctx.emit<top::AddOp>(node, {a, scalar("one", 1.0)}, {}, "abs_plus_1");
    out = ctx.emit<top::DivOp>(node, {x, a1});
  } else if (op == "ThresholdedRelu") {
    double alpha =
        ImportContext::floatAttrValue(ctx.getAttrFloat(node, "alpha", 1.0f));
    mlir::Value c = ctx.emit<top::CompareOp>(
        node, {x, scalar("alpha", alpha)},
        {ctx.named("mode", ctx.strAttr("Greater"))}, "above");
    out = ctx.emit<top::WhereOp>(node, {c, x, scalar("zero", 0.0)});
  } else {
    // Elu family: x > 0 ? x : alpha * (exp(x / k) - 1), times gamma for
    // Selu; Celu divides by alpha inside the exponential.
    bool selu = op == "Selu";
    bool celu = op == "Celu";
    // Selu's defaults are the constants of the spec (float32 values).
    constexpr float kSeluAlpha = 1.67326319217681884765625f;
    constexpr float kSeluGamma = 1.05070102214813232421875f;
    double alpha = ImportContext::floatAttrValue(
        ctx.getAttrFloat(node, "alpha", selu ? kSeluAlpha : 1.0f));
    double gamma = ImportContext::floatAttrValue(
        ctx.getAttrFloat(node, "gamma", kSeluGamma));
    mlir::Value pos = ctx.emit<top::CompareOp>(
        node, {x, scalar("zero", 0.0)},
        {ctx.named("mode", ctx.strAttr("Greater"))}, "positive");
    mlir::Value arg = x;
    if (celu && alpha != 1.0)
      arg =
          ctx.emit<top::DivOp>(node, {x, scalar("alpha", alpha)}, {}, "scaled");
    mlir::Value e = ctx.emit<top::ExpOp>(node, arg, {}, "exp");
    mlir::Value em1 =
        ctx.emit<top::SubOp>(node, {e, scalar("one", 1.0)}, {}, "expm1");
    mlir::Value neg =
        alpha == 1.0 ? em1
                     : ctx.emit<top::MulOp>(node, {em1, scalar("alpha", alpha)},
                                            {}, "negative");
    if (selu) {
      mlir::Value elu = ctx.emit<top::WhereOp>(node, {pos, x, neg}, {}, "elu");
      out = ctx.emit<top::MulOp>(node, {elu, scalar("gamma", gamma)});
    } else {
      out = ctx.emit<top::WhereOp>(node, {pos, x, neg});
    }
  }
  ctx.setValue(node, 0, out, type);
}

//===----------------------------------------------------------------------===//
// Cast, Identity, Dropout
//===----------------------------------------------------------------------===//

namespace {

/// The top.Cast `to` value of an ONNX element type ("" if unsupported).
llvm::StringRef castTarget(ElemType t) {
  switch (t) {
  case elem::Float:
    return "f32";
  case elem::Double:
    return "f64";
  case elem::Float16:
    return "f16";
  case elem::BFloat16:
    return "bf16";
  case elem::Bool:
    return "bool";
  case elem::Int8:
    return "int8";
  case elem::UInt8:
    return "uint8";
  case elem::Int16:
    return "int16";
  case elem::UInt16:
    return "uint16";
  case elem::Int32:
    return "int32";
  case elem::UInt32:
    return "uint32";
  case elem::Int64:
    return "int64";
  case elem::UInt64:
    return "uint64";
  default:
    return "";
  }
}

} // namespace

void importCast(ImportContext &ctx, const onnx::NodeProto &node) {
  ElemType to = node.op_type() == "CastLike"
                    ? ctx.getType(node, 1)
                    : static_cast<ElemType>(ctx.getAttrInt(node, "to", 0));
  llvm::StringRef target = castTarget(to);
  if (target.empty())
    ctx.failAttr(node, "to",
                 "casting to " + elemTypeName(to) + " is not supported");
  ElemType from = ctx.getType(node, 0);
  if (castTarget(from).empty())
    ctx.fail(node, "casting from " + elemTypeName(from) + " is not supported");
  if (ctx.isConstant(node, 0)) {
    ctx.setConstant(node, 0, ctx.getConstant(node, 0, "input").castTo(to));
    return;
  }
  mlir::Value out = ctx.emit<top::CastOp>(
      node, ctx.getValue(node, 0), {ctx.named("to", ctx.strAttr(target))});
  ctx.setValue(node, 0, out, to);
}

void importIdentity(ImportContext &ctx, const onnx::NodeProto &node) {
  if (ctx.isConstant(node, 0))
    ctx.setConstant(node, 0, ctx.getConstant(node, 0, "input"));
  else
    ctx.setValue(node, 0, ctx.getValue(node, 0), ctx.getType(node, 0));
}

void importIf(ImportContext &ctx, const onnx::NodeProto &node) {
  // importOnnxModel replaces every If by its branches and a Where first
  // (inlineIfs in OnnxImporter.cpp); the row exists for the dispatch table
  // and the support matrix.
  ctx.fail(node, "internal error: If reached the importer without being "
                 "inlined");
}

void importDropout(ImportContext &ctx, const onnx::NodeProto &node) {
  // Before opset 7 the is_test attribute chose the mode; we always run in
  // inference, as every deployment toolchain does.
  if (ctx.hasInput(node, 2)) {
    const ConstTensor &t = ctx.getConstant(node, 2, "training_mode");
    if (t.size() != 1 || t.getInt(0) != 0)
      ctx.fail(node, "training_mode = true is not supported");
  }
  importIdentity(ctx, node);
  if (ctx.isOutputUsed(node, 1)) {
    // In inference the mask keeps every element (BOOL since opset 10).
    ElemType maskType = ctx.getOpset() < 10 ? ctx.getType(node, 0) : elem::Bool;
    ctx.setConstant(node, 1,
                    ConstTensor::filled(ctx.getShape(node, 0), 1.0, maskType));
  }
}

} // namespace tpuc::frontend
