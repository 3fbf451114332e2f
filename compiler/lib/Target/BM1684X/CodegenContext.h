//===- CodegenContext.h - Helpers of the BM1684X op codegen -----*- C++ -*-===//
//
// What the codegenBM1684X methods (Codegen/*.cpp, see
// tpuc/Target/BM1684X/CodegenInterface.h) share: the command emitter, the
// GTensor of an SSA value (device address, precision, shape), the common
// parameter fillers, and CodegenError for what a kernel cannot do.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_LIB_TARGET_BM1684X_CODEGENCONTEXT_H
#define TPUC_LIB_TARGET_BM1684X_CODEGENCONTEXT_H

#include "tpuc/Dialect/Tpu/IR/ChipMath.h"
#include "tpuc/Dialect/Tpu/IR/Int8.h"
#include "tpuc/Dialect/Tpu/IR/TpuOps.h"
#include "tpuc/Support/Module.h"
#include "tpuc/Target/BM1684X/Codegen.h"

#include "tpuc/Backend/Backend.h"

#include "mlir/Dialect/Quant/QuantTypes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tpuc::bm1684x {

/// A codegen failure on \p op; the driver emits it as "codegen: <message>"
/// at the op's location.
struct CodegenError {
  mlir::Operation *op;
  std::string message;
};

/// The state the ops' codegenBM1684X methods emit into.
class CodegenContext {
public:
  CodegenContext(mlir::ModuleOp module, ::tpu::backend::CmdEmitter &em)
      : module(module), em(em), nextSynthetic(em.chip().gmemBase) {}

  /// The emitter the backend kernels append commands to.
  ::tpu::backend::CmdEmitter &emitter() { return em; }
  /// The machine the commands are generated for.
  const ::tpu::isa::ChipParams &chip() const { return em.chip(); }

  /// The GTensor of \p v (device address, precision, shape; \p shape
  /// overrides the value's). Throws CodegenError on \p user if \p v has no
  /// address or no BM1684X precision.
  ::tpu::backend::GTensor
  tensor(mlir::Operation *user, mlir::Value v,
         std::optional<std::vector<int64_t>> shape = {}) const;

  /// With \p on, tensor() gives address 0 for a value without one (values
  /// inside a layer group, whose place is local memory; planning before
  /// address assignment) instead of failing.
  void setLenient(bool on) { lenient = on; }
  /// Lenient for its lifetime, then as before.
  class LenientScope {
  public:
    explicit LenientScope(CodegenContext &ctx)
        : ctx(ctx), before(ctx.lenient) {
      ctx.lenient = true;
    }
    ~LenientScope() { ctx.lenient = before; }

  private:
    CodegenContext &ctx;
    bool before;
  };

  /// The device address of the optional operand \p v (none for top.None).
  std::optional<uint64_t> optionalAddr(mlir::Operation *user,
                                       mlir::Value v) const;

  /// Backend parameters of a one-input, one-output op: its name and the
  /// GTensors of `input` and `output`; the caller fills the op's attributes.
  template <typename Params, typename OpT> Params ioParams(OpT op) const {
    Params p;
    p.name = op.getName().str();
    p.input = tensor(op, op.getInput());
    p.output = tensor(op, op.getOutput());
    return p;
  }

  /// The value of a one-element tpu.Weight (rounded to its type), else none.
  std::optional<float> scalarWeight(mlir::Value v) const;

private:
  mlir::ModuleOp module;
  ::tpu::backend::CmdEmitter &em;
  bool lenient = false;
  /// Addresses tensor() gives values without one when lenient.
  mutable llvm::DenseMap<mlir::Value, uint64_t> synthetic;
  mutable uint64_t nextSynthetic = 0;
};

/// Shape of \p v as (n, c, h, w) for the 2-D kernels (a 3-D tensor is
/// (n, c, 1, w)).
std::vector<int64_t> nchw(mlir::Value v);

using module::toI64;

/// Sets the 2-D window fields of a kernel's parameters (conv, deconv,
/// pool) from the op's kernel_shape, strides and pads (top, left, bottom,
/// right).
template <typename Params>
void setWindow(Params &p, mlir::ArrayAttr kernel, mlir::ArrayAttr strides,
               mlir::ArrayAttr pads) {
  std::vector<int64_t> k = toI64(kernel), s = toI64(strides),
                       tlbr = toI64(pads);
  p.kernelH = k[0];
  p.kernelW = k[1];
  p.strideH = s[0];
  p.strideW = s[1];
  p.padTop = tlbr[0];
  p.padLeft = tlbr[1];
  p.padBottom = tlbr[2];
  p.padRight = tlbr[3];
}

/// The fused activation of an op's do_relu / relu_limit: none, Relu, or
/// Clip(0, limit) when the limit is positive.
::tpu::backend::Activation fusedActivation(bool doRelu, double limit);

/// The parameters conv2d and convTranspose2d share: tensors (a 3-D tensor
/// as H = 1), filter, bias, window, dilations, groups, fused activation.
template <typename Params, typename OpT>
Params convParams(CodegenContext &ctx, OpT op) {
  Params p;
  p.name = op.getName().str();
  p.input = ctx.tensor(op, op.getInput(), nchw(op.getInput()));
  p.output = ctx.tensor(op, op.getOutput(), nchw(op.getOutput()));
  p.filterAddr = ctx.tensor(op, op.getFilter()).addr;
  p.biasAddr = ctx.optionalAddr(op, op.getBias());
  setWindow(p, op.getKernelShape(), op.getStrides(), op.getPads());
  std::vector<int64_t> d = toI64(op.getDilations());
  p.dilationH = d[0];
  p.dilationW = d[1];
  p.groups = op.getGroup();
  p.act = fusedActivation(op.getDoRelu(), op.getReluLimit().convertToDouble());
  if (auto inQ = mlir::dyn_cast<mlir::quant::UniformQuantizedType>(
          tpu::getElementType(op.getInput()))) {
    // INT8: the bias operand holds the requantisation records.
    ::tpu::backend::ConvQuant q;
    q.coeffAddr = p.biasAddr.value_or(0);
    q.inputZeroPoint = int32_t(inQ.getZeroPoint());
    q.round = tpu::kInt8RoundMode;
    // Records of eight words: TFLite's two steps.
    auto records = mlir::cast<mlir::ShapedType>(op.getBias().getType());
    if (records.getRank() == 2 && records.getDimSize(1) == 8) {
      q.twoSteps = true;
      q.round = tpu::kTfliteRoundModes[0];
      q.round2 = tpu::kTfliteRoundModes[1];
    }
    // A relu is the RQ1's saturation at the zero point (an unsigned
    // output, or zero point -128); a signed output of zero point 0 needs
    // the AR max.
    auto outQ = mlir::cast<mlir::quant::UniformQuantizedType>(
        tpu::getElementType(op.getOutput()));
    q.reluSigned = op.getDoRelu() && outQ.isSigned() &&
                   outQ.getZeroPoint() == 0;
    if (std::optional<int64_t> high = tpu::chip::int8ReluHigh(
            op.getDoRelu(), op.getReluLimit().convertToDouble(),
            outQ.getScale(), outQ.getZeroPoint(), outQ.isSigned()))
      q.reluHigh = int32_t(*high);
    p.quant = q;
    p.biasAddr.reset();
    p.act = {};
  }
  return p;
}

/// Backend parameters of tpu.Deconv2D (convParams and the output padding).
::tpu::backend::ConvTransposeParams deconvParams(CodegenContext &ctx,
                                                 tpu::Deconv2DOp op);

/// Backend parameters of tpu.Cast (quantising, through an integer type, or
/// a plain conversion).
::tpu::backend::CastParams castParams(CodegenContext &ctx, tpu::CastOp op);

/// Backend parameters of tpu.Interp (resize).
::tpu::backend::ResizeParams resizeParams(CodegenContext &ctx,
                                          tpu::InterpOp op);

/// Backend parameters of tpu.Pool2D.
::tpu::backend::PoolParams poolParams(CodegenContext &ctx, tpu::Pool2DOp op);

/// The backend function of a tpu.Active mode and its coefficients.
::tpu::backend::Activation activeFunction(tpu::ActiveOp op);
/// Backend parameters of tpu.Active (unary) and tpu.Scale (scale).
::tpu::backend::UnaryParams activeParams(CodegenContext &ctx, tpu::ActiveOp op);
::tpu::backend::ScaleParams scaleParams(CodegenContext &ctx, tpu::ScaleOp op);

/// The kernel a binary op runs as: with a one-element weight operand a
/// vector op with an immediate (binaryConst), x ^ c the unary power (Square
/// for 2, which also handles negative bases with integer exponents), else
/// binary with numpy broadcasting.
using BinaryKernelParams =
    std::variant<::tpu::backend::UnaryParams,
                 ::tpu::backend::BinaryConstParams,
                 ::tpu::backend::BinaryParams>;
BinaryKernelParams binaryKernelParams(CodegenContext &ctx, mlir::Operation *op,
                                      llvm::StringRef name, mlir::Value lhs,
                                      mlir::Value rhs, mlir::Value out,
                                      bool doRelu, double limit,
                                      ::tpu::backend::BinaryKind k);
template <typename OpT>
BinaryKernelParams binaryKernelParams(CodegenContext &ctx, OpT op,
                                      ::tpu::backend::BinaryKind k) {
  return binaryKernelParams(ctx, op, op.getName(), op.getLhs(), op.getRhs(),
                            op.getOutput(), op.getDoRelu(),
                            op.getReluLimit().convertToDouble(), k);
}

/// Backend parameters of an INT8 tpu.Add / tpu.Sub (quant_multiplier,
/// quant_rshift).
::tpu::backend::BinaryInt8Params binaryInt8Params(CodegenContext &ctx,
                                                  mlir::Operation *op);
/// Backend parameters of tpu.Lut.
::tpu::backend::LutParams lutParams(CodegenContext &ctx, tpu::LutOp op);

/// Backend parameters of tpu.MatMul (float, or INT8 with its requantisation),
/// tpu.Softmax and tpu.LayerNorm.
::tpu::backend::MatMulParams matmulParams(CodegenContext &ctx,
                                          tpu::MatMulOp op);
::tpu::backend::SoftmaxParams softmaxParams(CodegenContext &ctx,
                                            tpu::SoftmaxOp op);
::tpu::backend::LayerNormParams layerNormParams(CodegenContext &ctx,
                                                tpu::LayerNormOp op);
/// Backend parameters of tpu.Permute.
::tpu::backend::PermuteParams permuteParams(CodegenContext &ctx,
                                            tpu::PermuteOp op);
/// Backend parameters of tpu.Concat.
::tpu::backend::ConcatParams concatParams(CodegenContext &ctx,
                                          tpu::ConcatOp op);
/// Backend parameters of tpu.Slice.
::tpu::backend::SliceParams sliceParams(CodegenContext &ctx, tpu::SliceOp op);

/// Backend parameters of tpu.PRelu.
::tpu::backend::PReluParams preluParams(CodegenContext &ctx, tpu::PReluOp op);

/// Backend parameters of tpu.Where.
::tpu::backend::WhereParams whereParams(CodegenContext &ctx, tpu::WhereOp op);

/// The kernel a comparison runs as: with a one-element weight of the
/// tensor's type compareConst (an immediate), else compare.
using CompareKernelParams = std::variant<::tpu::backend::CompareConstParams,
                                         ::tpu::backend::CompareParams>;
CompareKernelParams compareParams(CodegenContext &ctx, tpu::CompareOp op);

/// Backend parameters of tpu.Reduce.
::tpu::backend::ReduceParams reduceParams(CodegenContext &ctx,
                                          tpu::ReduceOp op);

} // namespace tpuc::bm1684x

#endif // TPUC_LIB_TARGET_BM1684X_CODEGENCONTEXT_H
