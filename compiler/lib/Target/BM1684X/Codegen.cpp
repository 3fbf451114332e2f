//===- Codegen.cpp - tpu dialect -> BM1684X commands and bmodel
//------------===//
//
// See Codegen.h. Each tpu op maps onto one backend kernel call with its
// operands described as GTensors (address, precision, shape); the mapping
// functions below are the only place that knows both the IR and the
// backend's parameter structs.
//
//===----------------------------------------------------------------------===//
// Weights.h names ::tpu::npz as tpu::npz inside namespace tpuc: include it
// before the tpuc::tpu namespace exists.
#include "tpuc/Support/Weights.h"

#include "tpuc/Dialect/Top/IR/TopOps.h"
#include "tpuc/Dialect/Tpu/IR/TpuOps.h"
#include "tpuc/Dialect/Tpu/Transforms/Passes.h"
#include "tpuc/Support/Module.h"
#include "tpuc/Target/BM1684X/Codegen.h"

#include "tpu/isa/Error.h"
#include "tpu/isa/Numerics.h"
#include "tpuc/Backend/Backend.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Quant/QuantTypes.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cstring>
#include <ctime>

using namespace mlir;
namespace isa = ::tpu::isa;
namespace backend = ::tpu::backend;

namespace tpuc::bm1684x {

std::optional<isa::Prec> getPrec(Type t) {
  if (auto q = dyn_cast<quant::QuantizedType>(t))
    t = q.getStorageType();
  if (t.isF32())
    return isa::Prec::Fp32;
  if (t.isF16())
    return isa::Prec::Fp16;
  if (t.isBF16())
    return isa::Prec::Bf16;
  if (auto i = dyn_cast<IntegerType>(t)) {
    switch (i.getWidth()) {
    case 4:
      return isa::Prec::Int4;
    case 8:
      return isa::Prec::Int8;
    case 16:
      return isa::Prec::Int16;
    case 32:
      return isa::Prec::Int32;
    default:
      break;
    }
  }
  return std::nullopt;
}

bool isSignedType(Type t) {
  if (auto q = dyn_cast<quant::QuantizedType>(t))
    return q.isSigned();
  if (auto i = dyn_cast<IntegerType>(t))
    return !i.isUnsigned();
  return true;
}

std::optional<isa::DataType> getDataType(Type t) {
  std::optional<isa::Prec> p = getPrec(t);
  if (!p)
    return std::nullopt;
  bool s = isSignedType(t);
  switch (*p) {
  case isa::Prec::Fp32:
    return isa::DataType::F32;
  case isa::Prec::Fp16:
    return isa::DataType::F16;
  case isa::Prec::Bf16:
    return isa::DataType::BF16;
  case isa::Prec::Int8:
    return s ? isa::DataType::Int8 : isa::DataType::UInt8;
  case isa::Prec::Int16:
    return s ? isa::DataType::Int16 : isa::DataType::UInt16;
  case isa::Prec::Int32:
    return s ? isa::DataType::Int32 : isa::DataType::UInt32;
  case isa::Prec::Int4:
    return s ? isa::DataType::Int4 : isa::DataType::UInt4;
  }
  return std::nullopt;
}

namespace {

using tpu::getAddress;

/// Failure with a diagnostic, for the mapping functions.
struct CodegenError {
  Operation *op;
  std::string message;
};

/// Shape of \p v as (n, c, h, w) for the 2-D kernels (a 3-D tensor is
/// (n, c, 1, w)).
std::vector<int64_t> nchw(Value v) {
  std::vector<int64_t> s = module::getShape(v);
  if (s.size() == 3)
    return {s[0], s[1], 1, s[2]};
  return s;
}

std::vector<int64_t> toI64(ArrayAttr attr) {
  std::vector<int64_t> out;
  for (Attribute a : attr)
    out.push_back(cast<IntegerAttr>(a).getInt());
  return out;
}

class Emitter {
public:
  explicit Emitter(ModuleOp module) : module(module) {}

  /// The GTensor of \p v (address, precision, shape).
  backend::GTensor gt(Operation *user, Value v,
                      std::optional<std::vector<int64_t>> shape = {}) {
    std::optional<uint64_t> addr = getAddress(v);
    if (!addr)
      throw CodegenError{user, "operand '" + top::getTensorName(v) +
                                   "' has no device address (run "
                                   "--tpu-address-assign)"};
    Type et = tpu::getElementType(v);
    std::optional<isa::Prec> prec = getPrec(et);
    if (!prec)
      throw CodegenError{user, "no BM1684X precision for element type"};
    backend::GTensor t;
    t.addr = *addr;
    t.prec = *prec;
    t.isSigned = isSignedType(et);
    t.shape = shape ? *shape : module::getShape(v);
    return t;
  }

  /// Backend parameters of a one-input, one-output op: its name and the
  /// GTensors of `input` and `output`; the caller fills the op's attributes.
  template <typename Params, typename OpT> Params ioParams(OpT op) {
    Params p;
    p.name = op.getName().str();
    p.input = gt(op, op.getInput());
    p.output = gt(op, op.getOutput());
    return p;
  }

  std::optional<uint64_t> optionalAddr(Operation *user, Value v) {
    if (top::isNone(v))
      return std::nullopt;
    return gt(user, v).addr;
  }

  static backend::Activation relu(bool doRelu, double limit) {
    backend::Activation a;
    if (!doRelu)
      return a;
    if (limit > 0) {
      a.kind = backend::UnaryKind::Clip;
      a.alpha = 0.0f;
      a.beta = static_cast<float>(limit);
    } else {
      a.kind = backend::UnaryKind::Relu;
    }
    return a;
  }

  /// Emits the commands of \p op; false if the op emits none (aliases,
  /// constants, inputs).
  bool emit(backend::CmdEmitter &em, Operation *op);

private:
  void conv(backend::CmdEmitter &em, tpu::Conv2DOp op);
  void active(backend::CmdEmitter &em, tpu::ActiveOp op);
  void binary(backend::CmdEmitter &em, Operation *op, backend::BinaryKind k,
              bool doRelu, double limit);
  std::optional<float> scalarWeight(Value v);

  ModuleOp module;
};

/// The value of a one-element tpu.Weight (rounded to its type), else none.
std::optional<float> Emitter::scalarWeight(Value v) {
  auto w = v.getDefiningOp<tpu::WeightOp>();
  if (!w || module::getNumElements(v) != 1)
    return std::nullopt;
  const ::tpu::npz::Array *array = findWeight(module, w.getName());
  if (!array || array->numel() != 1)
    return std::nullopt;
  return tpu::roundToType(array->toFloat()[0], tpu::getElementType(v));
}

void Emitter::conv(backend::CmdEmitter &em, tpu::Conv2DOp op) {
  backend::ConvParams p;
  p.name = op.getName().str();
  p.input = gt(op, op.getInput(), nchw(op.getInput()));
  p.output = gt(op, op.getOutput(), nchw(op.getOutput()));
  p.filterAddr = gt(op, op.getFilter()).addr;
  p.biasAddr = optionalAddr(op, op.getBias());
  std::vector<int64_t> k = toI64(op.getKernelShape());
  std::vector<int64_t> s = toI64(op.getStrides());
  std::vector<int64_t> d = toI64(op.getDilations());
  std::vector<int64_t> pads = toI64(op.getPads()); // t, l, b, r
  p.kernelH = k[0];
  p.kernelW = k[1];
  p.strideH = s[0];
  p.strideW = s[1];
  p.dilationH = d[0];
  p.dilationW = d[1];
  p.padTop = pads[0];
  p.padLeft = pads[1];
  p.padBottom = pads[2];
  p.padRight = pads[3];
  p.groups = op.getGroup();
  p.act = relu(op.getDoRelu(), op.getReluLimit().convertToDouble());
  backend::conv2d(em, p);
}

void Emitter::active(backend::CmdEmitter &em, tpu::ActiveOp op) {
  using backend::UnaryKind;
  std::vector<double> c;
  for (Attribute a : op.getCoeffs())
    c.push_back(cast<FloatAttr>(a).getValueAsDouble());
  backend::Activation fn;
  StringRef m = op.getMode();
  static const std::pair<StringRef, UnaryKind> kSimple[] = {
      {"sigmoid", UnaryKind::Sigmoid}, {"hard_swish", UnaryKind::HardSwish},
      {"tanh", UnaryKind::Tanh},       {"exp", UnaryKind::Exp},
      {"log", UnaryKind::Log},         {"sqrt", UnaryKind::Sqrt},
      {"erf", UnaryKind::Erf},         {"abs", UnaryKind::Abs},
      {"neg", UnaryKind::Neg},         {"reciprocal", UnaryKind::Reciprocal},
      {"gelu", UnaryKind::Gelu},       {"silu", UnaryKind::Silu},
  };
  bool found = false;
  for (auto &[name, kind] : kSimple)
    if (m == name) {
      fn.kind = kind;
      found = true;
    }
  if (!found) {
    if (m == "relu") {
      fn = relu(true, c[0]);
    } else if (m == "leaky_relu") {
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
  }
  backend::UnaryParams p;
  p.name = op.getName().str();
  p.input = gt(op, op.getInput());
  p.output = gt(op, op.getOutput());
  p.fn = fn;
  backend::unary(em, p);
}

/// Binary ops with a one-element weight operand run as a vector op with an
/// immediate (binaryConst); x ^ c runs as the unary power (Square for 2),
/// which also handles negative bases with integer exponents.
void Emitter::binary(backend::CmdEmitter &em, Operation *op,
                     backend::BinaryKind k, bool doRelu, double limit) {
  std::string name = op->getAttrOfType<StringAttr>("name").str();
  Value lhs = op->getOperand(0), rhs = op->getOperand(1),
        out = op->getResult(0);
  std::optional<float> lc = scalarWeight(lhs), rc = scalarWeight(rhs);
  Value tensor = rc ? lhs : rhs;
  bool sameCount =
      module::getNumElements(tensor) == module::getNumElements(out);
  if ((lc || rc) && !(lc && rc) && sameCount) {
    std::vector<int64_t> shape = module::getShape(out);
    if (k == backend::BinaryKind::Pow && rc && !doRelu) {
      backend::UnaryParams p;
      p.name = name;
      p.input = gt(op, lhs, shape);
      p.output = gt(op, out);
      p.fn.kind =
          *rc == 2.0f ? backend::UnaryKind::Square : backend::UnaryKind::Pow;
      p.fn.alpha = *rc;
      backend::unary(em, p);
      return;
    }
    if (k != backend::BinaryKind::Pow) {
      backend::BinaryConstParams p;
      p.name = name;
      p.input = gt(op, tensor, shape);
      p.output = gt(op, out);
      p.kind = k;
      p.value = rc ? *rc : *lc;
      p.constOnLeft = !rc;
      p.act = relu(doRelu, limit);
      backend::binaryConst(em, p);
      return;
    }
  }
  backend::BinaryParams p;
  p.name = name;
  p.lhs = gt(op, op->getOperand(0));
  p.rhs = gt(op, op->getOperand(1));
  p.output = gt(op, op->getResult(0));
  p.kind = k;
  p.act = relu(doRelu, limit);
  backend::binary(em, p);
}

bool Emitter::emit(backend::CmdEmitter &em, Operation *op) {
  using backend::BinaryKind;
  auto binaryOp = [&](auto o, BinaryKind k) {
    binary(em, o, k, o.getDoRelu(), o.getReluLimit().convertToDouble());
    return true;
  };
  return TypeSwitch<Operation *, bool>(op)
      .Case<top::InputOp, top::NoneOp, tpu::WeightOp, tpu::ReshapeOp>(
          [](auto) { return false; })
      .Case<tpu::Conv2DOp>([&](auto o) {
        conv(em, o);
        return true;
      })
      .Case<tpu::Deconv2DOp>([&](tpu::Deconv2DOp o) {
        backend::ConvTransposeParams p;
        p.name = o.getName().str();
        p.input = gt(o, o.getInput(), nchw(o.getInput()));
        p.output = gt(o, o.getOutput(), nchw(o.getOutput()));
        p.filterAddr = gt(o, o.getFilter()).addr;
        p.biasAddr = optionalAddr(o, o.getBias());
        std::vector<int64_t> k = toI64(o.getKernelShape());
        std::vector<int64_t> s = toI64(o.getStrides());
        std::vector<int64_t> d = toI64(o.getDilations());
        std::vector<int64_t> pads = toI64(o.getPads());
        std::vector<int64_t> outPad = toI64(o.getOutputPadding());
        p.kernelH = k[0];
        p.kernelW = k[1];
        p.strideH = s[0];
        p.strideW = s[1];
        p.dilationH = d[0];
        p.dilationW = d[1];
        p.padTop = pads[0];
        p.padLeft = pads[1];
        p.padBottom = pads[2];
        p.padRight = pads[3];
        p.outputPadH = outPad[0];
        p.outputPadW = outPad[1];
        p.groups = o.getGroup();
        p.act = relu(o.getDoRelu(), o.getReluLimit().convertToDouble());
        backend::convTranspose2d(em, p);
        return true;
      })
      .Case<tpu::MatMulOp>([&](tpu::MatMulOp o) {
        backend::MatMulParams p;
        p.name = o.getName().str();
        p.left = gt(o, o.getInput());
        p.right = gt(o, o.getRight());
        p.output = gt(o, o.getOutput());
        p.rightTransposed = o.getRightTranspose();
        p.biasAddr = optionalAddr(o, o.getBias());
        p.act = relu(o.getDoRelu(), o.getReluLimit().convertToDouble());
        backend::matmul(em, p);
        return true;
      })
      .Case<tpu::Pool2DOp>([&](tpu::Pool2DOp o) {
        backend::PoolParams p;
        p.name = o.getName().str();
        p.input = gt(o, o.getInput(), nchw(o.getInput()));
        p.output = gt(o, o.getOutput(), nchw(o.getOutput()));
        p.kind = o.getPoolMode() == "max" ? backend::PoolKind::Max
                                          : backend::PoolKind::Avg;
        std::vector<int64_t> k = toI64(o.getKernelShape());
        std::vector<int64_t> s = toI64(o.getStrides());
        std::vector<int64_t> pads = toI64(o.getPads());
        p.kernelH = k[0];
        p.kernelW = k[1];
        p.strideH = s[0];
        p.strideW = s[1];
        p.padTop = pads[0];
        p.padLeft = pads[1];
        p.padBottom = pads[2];
        p.padRight = pads[3];
        p.countIncludePad = o.getCountIncludePad();
        p.act = relu(o.getDoRelu(), o.getReluLimit().convertToDouble());
        backend::pool2d(em, p);
        return true;
      })
      .Case<tpu::AddOp>([&](auto o) { return binaryOp(o, BinaryKind::Add); })
      .Case<tpu::SubOp>([&](auto o) { return binaryOp(o, BinaryKind::Sub); })
      .Case<tpu::MulOp>([&](auto o) { return binaryOp(o, BinaryKind::Mul); })
      .Case<tpu::DivOp>([&](auto o) { return binaryOp(o, BinaryKind::Div); })
      .Case<tpu::MaxOp>([&](auto o) { return binaryOp(o, BinaryKind::Max); })
      .Case<tpu::MinOp>([&](auto o) { return binaryOp(o, BinaryKind::Min); })
      .Case<tpu::PowOp>([&](auto o) { return binaryOp(o, BinaryKind::Pow); })
      .Case<tpu::ActiveOp>([&](auto o) {
        active(em, o);
        return true;
      })
      .Case<tpu::PReluOp>([&](tpu::PReluOp o) {
        backend::PReluParams p;
        p.name = o.getName().str();
        p.input = gt(o, o.getInput());
        p.slope = gt(o, o.getSlope());
        p.output = gt(o, o.getOutput());
        backend::prelu(em, p);
        return true;
      })
      .Case<tpu::CastOp>([&](tpu::CastOp o) {
        auto p = ioParams<backend::CastParams>(o);
        backend::cast(em, p);
        return true;
      })
      .Case<tpu::SoftmaxOp>([&](tpu::SoftmaxOp o) {
        auto p = ioParams<backend::SoftmaxParams>(o);
        p.axis = o.getAxis();
        p.log = o.getLog();
        backend::softmax(em, p);
        return true;
      })
      .Case<tpu::LayerNormOp>([&](tpu::LayerNormOp o) {
        auto p = ioParams<backend::LayerNormParams>(o);
        p.axis = o.getAxis();
        p.epsilon = static_cast<float>(o.getEpsilon().convertToDouble());
        p.scaleAddr = optionalAddr(o, o.getScale());
        p.biasAddr = optionalAddr(o, o.getBias());
        backend::layerNorm(em, p);
        return true;
      })
      .Case<tpu::ReduceOp>([&](tpu::ReduceOp o) {
        auto p = ioParams<backend::ReduceParams>(o);
        StringRef m = o.getMode();
        p.kind = m == "ReduceMean"  ? backend::ReduceKind::Mean
                 : m == "ReduceMax" ? backend::ReduceKind::Max
                 : m == "ReduceMin" ? backend::ReduceKind::Min
                                    : backend::ReduceKind::Sum;
        p.axes = toI64(o.getAxes());
        backend::reduce(em, p);
        return true;
      })
      .Case<tpu::PermuteOp>([&](tpu::PermuteOp o) {
        auto p = ioParams<backend::PermuteParams>(o);
        p.order = toI64(o.getOrder());
        backend::permute(em, p);
        return true;
      })
      .Case<tpu::ConcatOp>([&](tpu::ConcatOp o) {
        backend::ConcatParams p;
        p.name = o.getName().str();
        for (Value v : o.getInputs())
          p.inputs.push_back(gt(o, v));
        p.output = gt(o, o.getOutput());
        p.axis = o.getAxis();
        backend::concat(em, p);
        return true;
      })
      .Case<tpu::SliceOp>([&](tpu::SliceOp o) {
        auto p = ioParams<backend::SliceParams>(o);
        p.starts = toI64(o.getOffset());
        p.steps = toI64(o.getSteps());
        backend::slice(em, p);
        return true;
      })
      .Case<tpu::PadOp>([&](tpu::PadOp o) {
        if (o.getMode() != "constant")
          throw CodegenError{o, "no BM1684X kernel for '" + o.getMode().str() +
                                    "' padding"};
        auto p = ioParams<backend::PadParams>(o);
        p.pads = toI64(o.getPaddings());
        p.value = static_cast<float>(o.getVal().convertToDouble());
        backend::pad(em, p);
        return true;
      })
      .Case<tpu::InterpOp>([&](tpu::InterpOp o) {
        auto p = ioParams<backend::ResizeParams>(o);
        p.mode = o.getMode() == "linear" ? backend::ResizeMode::Linear
                                         : backend::ResizeMode::Nearest;
        StringRef c = o.getCoordMode();
        p.coord = c == "align_corners" ? backend::ResizeCoord::AlignCorners
                  : c == "asymmetric"  ? backend::ResizeCoord::Asymmetric
                  : c == "pytorch_half_pixel"
                      ? backend::ResizeCoord::PytorchHalfPixel
                      : backend::ResizeCoord::HalfPixel;
        StringRef n = o.getNearestMode();
        p.nearest = n == "round_prefer_ceil"
                        ? backend::NearestMode::RoundPreferCeil
                    : n == "floor" ? backend::NearestMode::Floor
                    : n == "ceil"  ? backend::NearestMode::Ceil
                                   : backend::NearestMode::RoundPreferFloor;
        p.scaleH = static_cast<float>(o.getScaleH().convertToDouble());
        p.scaleW = static_cast<float>(o.getScaleW().convertToDouble());
        backend::resize(em, p);
        return true;
      })
      .Case<tpu::GatherOp>([&](tpu::GatherOp o) {
        backend::GatherParams p;
        p.name = o.getName().str();
        p.input = gt(o, o.getInput());
        p.indices = gt(o, o.getIndices());
        p.output = gt(o, o.getOutput());
        p.axis = o.getAxis();
        backend::gather(em, p);
        return true;
      })
      .Case<tpu::WhereOp>([&](tpu::WhereOp o) {
        backend::WhereParams p;
        p.name = o.getName().str();
        p.cond = gt(o, o.getCond());
        p.x = gt(o, o.getX());
        p.y = gt(o, o.getY());
        p.output = gt(o, o.getOutput());
        backend::where(em, p);
        return true;
      })
      .Case<tpu::TileOp>([&](tpu::TileOp o) {
        auto p = ioParams<backend::BroadcastParams>(o);
        backend::broadcastTo(em, p);
        return true;
      })
      .Default([&](Operation *o) -> bool {
        throw CodegenError{o, "no BM1684X kernel for this op"};
      });
}

/// The group count of the conv or deconv that reads filter \p w (1 if none).
int64_t filterGroups(tpu::WeightOp w) {
  for (Operation *user : w->getUsers()) {
    if (auto conv = dyn_cast<tpu::Conv2DOp>(user))
      return conv.getGroup();
    if (auto deconv = dyn_cast<tpu::Deconv2DOp>(user))
      return deconv.getGroup();
  }
  return 1;
}

/// The bytes of weight \p w in its layout.
std::vector<uint8_t> weightBytes(ModuleOp module, tpu::WeightOp w,
                                 const isa::ChipParams &chip) {
  const ::tpu::npz::Array *array = findWeight(module, w.getName());
  if (!array)
    throw CodegenError{w, "no data for weight '" + w.getName().str() + "'"};
  std::vector<float> data = array->toFloat();
  auto type = cast<RankedTensorType>(w.getOutput().getType());
  if (static_cast<int64_t>(data.size()) != type.getNumElements())
    throw CodegenError{w, "weight '" + w.getName().str() +
                              "' holds a different element count than its "
                              "type"};
  std::optional<isa::Prec> prec = getPrec(type.getElementType());
  if (!prec)
    throw CodegenError{w, "no BM1684X precision for the weight's type"};
  StringRef layout = w.getLayout();
  if (layout == tpu::kLayoutDeconv)
    return backend::reorderConvTransposeFilter(
        data.data(), type.getDimSize(0), type.getDimSize(1), type.getDimSize(2),
        type.getDimSize(3), *prec, filterGroups(w), chip);
  if (layout != tpu::kLayoutCompact)
    return backend::reorderConvFilter(
        data.data(), type.getDimSize(0), type.getDimSize(1), type.getDimSize(2),
        type.getDimSize(3), *prec, filterGroups(w), chip);
  if (isa::isFloat(*prec))
    return backend::encodeFloats(data.data(), data.size(), *prec);
  // Integer data (gather indices, later quantised weights): little-endian
  // values of the element width, rounded and saturated.
  unsigned bytes = isa::precBytes(*prec);
  bool isSigned = isSignedType(type.getElementType());
  std::vector<uint8_t> out(data.size() * bytes);
  for (size_t i = 0; i < data.size(); ++i) {
    int64_t v = isa::floatToInt(data[i], *prec, isSigned,
                                isa::RoundMode::HalfAwayFromZero);
    for (unsigned b = 0; b < bytes; ++b)
      out[i * bytes + b] =
          static_cast<uint8_t>((uint64_t(v) >> (8 * b)) & 0xFF);
  }
  return out;
}

isa::bmodel::Tensor ioTensor(Value v, const std::string &name, int32_t hidden,
                             int32_t index, const isa::ChipParams &chip) {
  isa::bmodel::Tensor t;
  t.name = name;
  std::optional<isa::DataType> dt = getDataType(tpu::getElementType(v));
  if (!dt)
    throw CodegenError{v.getDefiningOp(),
                       "IO tensor '" + name + "' has no bmodel data type"};
  t.dataType = *dt;
  std::optional<uint64_t> addr = tpu::getAddress(v);
  if (!addr)
    throw CodegenError{v.getDefiningOp(),
                       "IO tensor '" + name + "' has no device address"};
  t.deviceAddr = *addr;
  t.size = tpu::getDeviceBytes(v, chip);
  std::vector<uint64_t> dims;
  for (int64_t d : module::getShape(v))
    dims.push_back(static_cast<uint64_t>(d));
  t.shapes = {dims};
  t.hidden = hidden;
  t.index = index;
  return t;
}

uint64_t moduleAttr(ModuleOp module, StringRef name) {
  auto attr = module->getAttrOfType<IntegerAttr>(name);
  if (!attr)
    throw CodegenError{module, "module attribute " + name.str() +
                                   " is missing (run --tpu-address-assign)"};
  return static_cast<uint64_t>(attr.getInt());
}

} // namespace

uint64_t getWeightBytes(Operation *weightOp, const isa::ChipParams &chip) {
  auto w = cast<tpu::WeightOp>(weightOp);
  auto type = cast<RankedTensorType>(w.getOutput().getType());
  std::optional<isa::Prec> prec = getPrec(type.getElementType());
  unsigned elemBytes = prec ? isa::precBytes(*prec) : 4;
  StringRef layout = w.getLayout();
  if (!prec || layout == tpu::kLayoutCompact)
    return static_cast<uint64_t>(type.getNumElements()) * elemBytes;
  int64_t groups = filterGroups(w);
  if (layout == tpu::kLayoutDeconv) {
    // reorderConvTransposeFilter: the conv filter (oc, ic / g, kh, kw) with
    // input channels padded to IC_PARALLEL, never the depthwise form.
    int64_t icPerGroup = type.getDimSize(0) / groups;
    int64_t oc = type.getDimSize(1) * groups;
    int64_t icp = chip.icParallel(*prec);
    int64_t padded = (icPerGroup + icp - 1) / icp * icp;
    return static_cast<uint64_t>(oc * padded * type.getDimSize(2) *
                                 type.getDimSize(3)) *
           elemBytes;
  }
  return backend::convFilterBytes(type.getDimSize(0), type.getDimSize(1),
                                  type.getDimSize(2), type.getDimSize(3), *prec,
                                  groups);
}

FailureOr<isa::bmodel::Model> buildBmodel(ModuleOp module,
                                          const isa::ChipParams &chip,
                                          const CodegenOptions &options,
                                          CodegenSummary *summary) {
  func::FuncOp func = module::getMainFunc(module);
  if (!func || func.isExternal())
    return module.emitError("codegen: no main function");
  if (failed(loadWeights(module)))
    return failure();
  Block &body = func.getBody().front();
  try {
    isa::bmodel::Stage stage;
    stage.coeffAddr = moduleAttr(module, tpu::kCoeffAddrAttr);
    uint64_t coeffSize = moduleAttr(module, tpu::kCoeffSizeAttr);
    stage.ctxAddr = moduleAttr(module, tpu::kNeuronAddrAttr);
    stage.ctxSize = moduleAttr(module, tpu::kNeuronSizeAttr);
    stage.ctxSizes = {stage.ctxSize};

    // Coefficient blob.
    stage.coeff.assign(coeffSize, 0);
    for (auto w : body.getOps<tpu::WeightOp>()) {
      std::optional<uint64_t> addr = tpu::getAddress(w.getOutput());
      if (!addr)
        throw CodegenError{w, "weight has no device address"};
      std::vector<uint8_t> bytes = weightBytes(module, w, chip);
      uint64_t offset = *addr - stage.coeffAddr;
      if (*addr < stage.coeffAddr || offset + bytes.size() > coeffSize)
        throw CodegenError{w, "weight lies outside the coefficient region"};
      std::memcpy(stage.coeff.data() + offset, bytes.data(), bytes.size());
    }

    // Commands.
    Emitter emitter(module);
    backend::CmdEmitter em(chip);
    bool pending = false;
    for (Operation &op : body) {
      if (op.hasTrait<OpTrait::IsTerminator>())
        break;
      try {
        if (!emitter.emit(em, &op))
          continue;
      } catch (const ::tpu::Error &e) {
        throw CodegenError{&op, e.what()};
      }
      pending = true;
      if (options.groupPerOp || em.nearIdLimit()) {
        stage.groups.push_back(em.finish());
        pending = false;
      }
    }
    if (pending || stage.groups.empty())
      stage.groups.push_back(em.finish());

    // IO.
    int32_t index = 0;
    for (auto input : body.getOps<top::InputOp>())
      stage.inputs.push_back(ioTensor(input.getOutput(), input.getName().str(),
                                      isa::bmodel::kHiddenInput, index++,
                                      chip));
    index = 0;
    for (Value v : body.getTerminator()->getOperands())
      stage.outputs.push_back(ioTensor(
          v, top::getTensorName(v), isa::bmodel::kHiddenOutput, index++, chip));

    isa::bmodel::Net net;
    net.name = options.netName;
    if (net.name.empty())
      net.name = module.getSymName() ? module.getSymName()->str() : "net";
    net.stages.push_back(std::move(stage));

    isa::bmodel::Model model;
    std::time_t now = std::time(nullptr);
    char text[64] = {};
    std::strftime(text, sizeof(text), "%a %b %d %H:%M:%S %Y",
                  std::localtime(&now));
    model.time = text;
    model.nets.push_back(std::move(net));

    if (summary) {
      const isa::bmodel::Stage &s = model.nets[0].stages[0];
      summary->numGroups = s.groups.size();
      summary->numTiu = summary->numGdma = 0;
      for (const isa::bmodel::CmdGroup &g : s.groups) {
        summary->numTiu += g.bdcNum;
        summary->numGdma += g.gdmaNum;
      }
      summary->coeffBytes = s.coeff.size();
      summary->neuronBytes = s.ctxSize;
    }
    return model;
  } catch (const CodegenError &e) {
    return e.op->emitError("codegen: ") << e.message;
  } catch (const ::tpu::Error &e) {
    return module.emitError("codegen: ") << e.what();
  }
}

} // namespace tpuc::bm1684x
