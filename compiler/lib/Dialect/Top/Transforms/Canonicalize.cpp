//===- Canonicalize.cpp - Folding and fusion patterns of top ops ---------===//
//
// The patterns `--canonicalize` applies to top ops:
//   - constant folding: an op whose operands are all weights is evaluated
//     with its inference() and replaced by a new weight (dialect pattern);
//   - BatchNorm after a Conv / ConvTranspose folds into its filter and bias;
//   - Mul / Add by a per-channel or scalar weight after a Conv folds into
//     its filter and bias;
//   - Add of a constant row (one value per column) after a MatMul by a
//     weight folds into its bias;
//   - Mul / Add by a weight over the normalised axes after a LayerNorm
//     fold into its scale / bias;
//   - Relu, and Clip with min 0, fuse into the producing Conv,
//     ConvTranspose, MatMul, Add, Sub, Mul, pool or BatchNorm (do_relu /
//     relu_limit); a BatchNorm that absorbed a relu still folds into a conv
//     before it, which takes over the relu (the patterns may apply in
//     either order);
//   - a layer normalisation written out in Reduce / Sub / Mul / Sqrt ops
//     becomes one LayerNorm;
//   - a zero constant Pad of H / W before a Conv becomes its pads;
//   - identity Reshape / Permute disappear, chains of them merge, and a
//     Permute that moves only unit axes becomes a Reshape.
// Unused side-effect-free ops (everything but top.Input) are erased by the
// canonicalizer itself.
//
// A fused op takes the name of the op it absorbs last, since it now
// produces that tensor.
//
//===----------------------------------------------------------------------===//
#include "tpuc/Dialect/Top/IR/TopOps.h"
#include "tpuc/Support/Module.h"
#include "tpuc/Support/Weights.h"

#include "mlir/IR/PatternMatch.h"

#include <cmath>
#include <optional>
#include <type_traits>

using namespace mlir;
using namespace tpuc;
using namespace tpuc::top;

namespace {

using Shape = std::vector<int64_t>;

/// The float data of \p v if it is a top.Weight whose data is available.
std::optional<std::vector<float>> weightValues(Value v) {
  auto weight = v.getDefiningOp<WeightOp>();
  if (!weight)
    return std::nullopt;
  ModuleOp module = module::getModule(weight);
  if (!module)
    return std::nullopt;
  const tpu::npz::Array *array =
      findWeight(module, weight.getName(), /*emitErrors=*/false);
  if (!array ||
      int64_t(array->numel()) != module::getNumElements(weight.getOutput()))
    return std::nullopt;
  return array->toFloat();
}

/// Creates a weight named after \p base (made unique) before \p anchor.
Value makeWeight(PatternRewriter &rewriter, Operation *anchor,
                 llvm::StringRef base, const Shape &shape,
                 const std::vector<float> &data) {
  ModuleOp module = module::getModule(anchor);
  std::string name = uniqueWeightName(module, base);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(anchor);
  return createWeight(rewriter, anchor->getLoc(), name, shape, data)
      .getOutput();
}

/// A Conv or ConvTranspose producing \p v alone, with constant filter and
/// bias and no fused relu yet.
struct FoldableConv {
  Operation *op = nullptr;
  bool transposed = false;
  int64_t outChannels = 0, group = 1;
  std::vector<float> filter, bias;
  Shape filterShape;
  Value filterValue;
};

std::optional<FoldableConv> matchFoldableConv(Value v) {
  Operation *op = v.getDefiningOp();
  if (!op || !isa<ConvOp, ConvTransposeOp>(op) || !v.hasOneUse())
    return std::nullopt;
  FoldableConv c;
  c.op = op;
  c.transposed = isa<ConvTransposeOp>(op);
  if (op->getAttrOfType<BoolAttr>("do_relu").getValue())
    return std::nullopt;
  c.filterValue = op->getOperand(1);
  auto filter = weightValues(c.filterValue);
  if (!filter)
    return std::nullopt;
  c.filter = std::move(*filter);
  c.filterShape = module::getShape(c.filterValue);
  c.outChannels = module::getShape(v)[1];
  c.group = op->getAttrOfType<IntegerAttr>("group").getInt();
  Value bias = op->getOperand(2);
  if (isNone(bias)) {
    c.bias.assign(c.outChannels, 0.0f);
  } else {
    auto data = weightValues(bias);
    if (!data)
      return std::nullopt;
    c.bias = std::move(*data);
  }
  return c;
}

/// Multiplies the filter weights of output channel oc by scale[oc].
void scaleFilter(FoldableConv &c, const std::vector<double> &scale) {
  int64_t total = c.filter.size();
  if (!c.transposed) {
    int64_t per = total / c.outChannels;
    for (int64_t oc = 0; oc < c.outChannels; ++oc)
      for (int64_t i = 0; i < per; ++i)
        c.filter[oc * per + i] *= scale[oc];
    return;
  }
  // (C, OC / group, k...): input channel ic belongs to group
  // ic / (C / group); its j-th filter is output channel g * OCg + j.
  int64_t inChannels = c.filterShape[0], ocg = c.filterShape[1];
  int64_t icg = inChannels / c.group;
  int64_t kernel = total / (inChannels * ocg);
  for (int64_t ic = 0; ic < inChannels; ++ic)
    for (int64_t j = 0; j < ocg; ++j) {
      int64_t oc = (ic / icg) * ocg + j;
      float *w = c.filter.data() + (ic * ocg + j) * kernel;
      for (int64_t i = 0; i < kernel; ++i)
        w[i] *= scale[oc];
    }
}

/// Rebuilds the convolution with the new filter and bias data (weights
/// "<name>_filter" / "<name>_bias"), named \p name, with \p doRelu /
/// \p reluLimit, replacing \p root.
void replaceWithConv(PatternRewriter &rewriter, Operation *root,
                     FoldableConv &c, StringRef name, bool doRelu,
                     APFloat reluLimit) {
  Value filter = makeWeight(rewriter, c.op, (name + "_filter").str(),
                            c.filterShape, c.filter);
  Value bias = makeWeight(rewriter, c.op, (name + "_bias").str(),
                          {c.outChannels}, c.bias);
  SmallVector<NamedAttribute> attrs(c.op->getAttrs());
  OperationState state(root->getLoc(), c.op->getName());
  state.addOperands({c.op->getOperand(0), filter, bias});
  state.addTypes(root->getResultTypes());
  state.addAttributes(attrs);
  Operation *conv = rewriter.create(state);
  conv->setAttr("name", rewriter.getStringAttr(name));
  conv->setAttr("do_relu", rewriter.getBoolAttr(doRelu));
  conv->setAttr("relu_limit", rewriter.getF64FloatAttr(
                                  reluLimit.convertToDouble()));
  rewriter.replaceOp(root, conv->getResults());
}

//===----------------------------------------------------------------------===//
// BatchNorm into Conv
//===----------------------------------------------------------------------===//

struct FoldBatchNormIntoConv : OpRewritePattern<BatchNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BatchNormOp bn,
                                PatternRewriter &rewriter) const override {
    auto conv = matchFoldableConv(bn.getInput());
    if (!conv)
      return rewriter.notifyMatchFailure(bn, "input is no foldable conv");
    int64_t oc = conv->outChannels;
    auto mean = weightValues(bn.getMean());
    auto var = weightValues(bn.getVariance());
    std::optional<std::vector<float>> scale, bias;
    if (!isNone(bn.getScale()) && !(scale = weightValues(bn.getScale())))
      return rewriter.notifyMatchFailure(bn, "scale is not constant");
    if (!isNone(bn.getBias()) && !(bias = weightValues(bn.getBias())))
      return rewriter.notifyMatchFailure(bn, "bias is not constant");
    if (!mean || !var)
      return rewriter.notifyMatchFailure(bn, "statistics are not constant");
    // y = (conv + b - mean) * s + beta with s = gamma / sqrt(var + eps).
    double eps = bn.getEpsilon().convertToDouble();
    std::vector<double> s(oc);
    for (int64_t c = 0; c < oc; ++c) {
      s[c] = (scale ? (*scale)[c] : 1.0) / std::sqrt((*var)[c] + eps);
      conv->bias[c] = static_cast<float>(
          (conv->bias[c] - (*mean)[c]) * s[c] + (bias ? (*bias)[c] : 0.0));
    }
    scaleFilter(*conv, s);
    // The conv had no relu (matchFoldableConv): it applies the BatchNorm's
    // fused relu, if any, after the folded bias.
    replaceWithConv(rewriter, bn, *conv, bn.getName(), bn.getDoRelu(),
                    bn.getReluLimit());
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Mul / Add by a constant into Conv
//===----------------------------------------------------------------------===//

/// Per-output-channel values of a weight that broadcasts to the conv
/// output \p outShape only along the channel axis (or is a scalar).
std::optional<std::vector<double>> channelValues(Value weight,
                                                 const Shape &outShape) {
  auto data = weightValues(weight);
  if (!data)
    return std::nullopt;
  Shape ws = module::getShape(weight);
  if (ws.size() > outShape.size())
    return std::nullopt;
  Shape padded(outShape.size() - ws.size(), 1);
  padded.insert(padded.end(), ws.begin(), ws.end());
  int64_t channels = outShape[1];
  for (size_t i = 0; i < padded.size(); ++i) {
    if (i == 1 ? (padded[i] != 1 && padded[i] != channels) : padded[i] != 1)
      return std::nullopt;
  }
  std::vector<double> out(channels);
  for (int64_t c = 0; c < channels; ++c)
    out[c] = data->size() == 1 ? (*data)[0] : (*data)[c];
  return out;
}

/// Matches lhs/rhs of a binary op as (conv result, constant per-channel).
template <typename OpT>
std::optional<std::pair<FoldableConv, std::vector<double>>>
matchConvAndConstant(OpT op) {
  for (auto [convSide, constSide] :
       {std::pair(op.getLhs(), op.getRhs()), std::pair(op.getRhs(), op.getLhs())}) {
    auto conv = matchFoldableConv(convSide);
    if (!conv)
      continue;
    Shape out = module::getShape(op.getOutput());
    if (out != module::getShape(convSide))
      continue;
    auto values = channelValues(constSide, out);
    if (!values)
      continue;
    return std::pair(std::move(*conv), std::move(*values));
  }
  return std::nullopt;
}

struct FoldMulIntoConv : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp mul,
                                PatternRewriter &rewriter) const override {
    auto match = matchConvAndConstant(mul);
    if (!match)
      return rewriter.notifyMatchFailure(mul, "no conv times a constant");
    auto &[conv, scale] = *match;
    for (int64_t c = 0; c < conv.outChannels; ++c)
      conv.bias[c] = static_cast<float>(conv.bias[c] * scale[c]);
    scaleFilter(conv, scale);
    replaceWithConv(rewriter, mul, conv, mul.getName(), mul.getDoRelu(),
                    mul.getReluLimit());
    return success();
  }
};

/// The one value of a one-element weight, else none.
std::optional<double> scalarWeight(Value v) {
  std::optional<std::vector<float>> w = weightValues(v);
  if (!w || w->size() != 1)
    return std::nullopt;
  return double((*w)[0]);
}

/// x * relu6(x + 3) / 6 (a hard-swish as opset-9 exporters write it:
/// Add(x, 3) with a fused relu limited to 6, Mul by x, Div by 6) becomes
/// one HardSwish named as the Div: one kernel in float, one lookup table in
/// INT8 (each step quantised on its own loses accuracy: PP-OCR det's map
/// cosine 0.97 -> 0.90).
struct FuseHardSwish : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp mul,
                                PatternRewriter &rewriter) const override {
    if (mul.getDoRelu() || !mul->hasOneUse())
      return rewriter.notifyMatchFailure(mul, "not a hard-swish product");
    auto div = dyn_cast<DivOp>(*mul->getUsers().begin());
    if (!div || div.getLhs() != mul.getOutput() ||
        scalarWeight(div.getRhs()) != std::optional<double>(6.0))
      return rewriter.notifyMatchFailure(mul, "no division by 6");
    for (auto [x, a] : {std::pair{mul.getLhs(), mul.getRhs()},
                        std::pair{mul.getRhs(), mul.getLhs()}}) {
      auto add = a.getDefiningOp<AddOp>();
      if (!add || !add->hasOneUse() || !add.getDoRelu() ||
          add.getReluLimit().convertToDouble() != 6.0)
        continue;
      Value other = add.getLhs() == x ? add.getRhs()
                    : add.getRhs() == x ? add.getLhs()
                                        : Value();
      if (!other || scalarWeight(other) != std::optional<double>(3.0))
        continue;
      if (x.getType() != div.getOutput().getType())
        continue;
      auto hs = rewriter.create<HardSwishOp>(div.getLoc(), div.getType(), x,
                                             div.getName());
      rewriter.replaceOp(div, hs.getOutput());
      rewriter.eraseOp(mul);
      rewriter.eraseOp(add);
      return success();
    }
    return rewriter.notifyMatchFailure(mul, "no relu6(x + 3) operand");
  }
};

/// A layer normalisation written out as exporters decompose it (onnx-tf's
/// TFLite files, ONNX before opset 17):
///   m = ReduceMean(x); d = x - m; v = ReduceMean(d * d | Pow(d, 2));
///   y = d * Reciprocal(Sqrt(v + eps)) | d / Sqrt(v + eps)
/// over the same trailing axes becomes one LayerNorm named as y. The fused
/// kernel keeps the mean, the squares and the variance in fp32 whatever the
/// mode (isa/docs/bm1684x.md 8.4), where the decomposed ops store them in
/// the mode's type: the squared deviations of hey_rhasspy's first hidden
/// layer reach ~1e6 on loud inputs and overflow fp16, and in INT8 one
/// scale cannot serve both d and d * d.
class LayerNormMatch {
public:
  /// Matches \p d (the deviations) and \p stdDev (the Sqrt of variance +
  /// eps) of the final multiplication / division.
  static std::optional<LayerNormMatch> match(Value d, Value stdDev) {
    auto sub = d.getDefiningOp<SubOp>();
    auto sqrt = stdDev.getDefiningOp<SqrtOp>();
    if (!sub || sub.getDoRelu() || !sqrt)
      return std::nullopt;
    auto mean = sub.getRhs().getDefiningOp<ReduceOp>();
    Value x = sub.getLhs();
    if (!mean || mean.getInput() != x || x.getType() != d.getType())
      return std::nullopt;
    std::optional<int64_t> axis = trailingMeanAxis(mean);
    if (!axis)
      return std::nullopt;
    auto add = sqrt.getInput().getDefiningOp<AddOp>();
    if (!add || add.getDoRelu())
      return std::nullopt;
    for (auto [v, e] : {std::pair{add.getLhs(), add.getRhs()},
                        std::pair{add.getRhs(), add.getLhs()}}) {
      std::optional<double> eps = scalarWeight(e);
      auto var = v.getDefiningOp<ReduceOp>();
      if (!eps || *eps < 0 || !var || trailingMeanAxis(var) != axis ||
          !isSquareOf(var.getInput(), d))
        continue;
      return LayerNormMatch{x, *axis, *eps};
    }
    return std::nullopt;
  }

  /// Replaces \p root (producing y) by the LayerNorm.
  void rewrite(PatternRewriter &rewriter, Operation *root,
               StringRef name) const {
    Value none = rewriter.create<NoneOp>(root->getLoc(), rewriter.getNoneType())
                     .getOutput();
    auto ln = rewriter.create<LayerNormOp>(root->getLoc(),
                                           root->getResult(0).getType(), input,
                                           none, none, axis,
                                           llvm::APFloat(epsilon), name);
    rewriter.replaceOp(root, ln.getOutput());
  }

private:
  LayerNormMatch(Value input, int64_t axis, double epsilon)
      : input(input), axis(axis), epsilon(epsilon) {}

  /// The first axis of a keepdims ReduceMean over the trailing axes
  /// [axis, rank).
  static std::optional<int64_t> trailingMeanAxis(ReduceOp op) {
    if (op.getMode() != "ReduceMean" || !op.getKeepdims())
      return std::nullopt;
    auto rank = int64_t(module::getShape(op.getInput()).size());
    Shape axes = module::toI64(op.getAxes());
    for (int64_t &a : axes)
      a = module::normalizeAxis(a, rank);
    llvm::sort(axes);
    if (axes.empty() || axes.front() < 0)
      return std::nullopt;
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[i] != rank - int64_t(axes.size()) + int64_t(i))
        return std::nullopt;
    return axes.front();
  }

  /// \p sq is d * d or Pow(d, 2).
  static bool isSquareOf(Value sq, Value d) {
    if (auto mul = sq.getDefiningOp<MulOp>())
      return !mul.getDoRelu() && mul.getLhs() == d && mul.getRhs() == d;
    if (auto pow = sq.getDefiningOp<PowOp>())
      return pow.getLhs() == d &&
             scalarWeight(pow.getRhs()) == std::optional<double>(2.0);
    return false;
  }

  Value input;
  int64_t axis;
  double epsilon;
};

/// d * Reciprocal(Sqrt(var + eps)) (a TFLite RSQRT or DIV imported).
struct FuseLayerNormMul : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp mul,
                                PatternRewriter &rewriter) const override {
    if (mul.getDoRelu())
      return rewriter.notifyMatchFailure(mul, "fused relu");
    for (auto [d, r] : {std::pair{mul.getLhs(), mul.getRhs()},
                        std::pair{mul.getRhs(), mul.getLhs()}}) {
      auto recip = r.getDefiningOp<ReciprocalOp>();
      if (!recip)
        continue;
      if (auto m = LayerNormMatch::match(d, recip.getInput())) {
        m->rewrite(rewriter, mul, mul.getName());
        return success();
      }
    }
    return rewriter.notifyMatchFailure(mul, "not a layer normalisation");
  }
};

/// d / Sqrt(var + eps) (ONNX exporters before opset 17).
struct FuseLayerNormDiv : OpRewritePattern<DivOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DivOp div,
                                PatternRewriter &rewriter) const override {
    auto m = LayerNormMatch::match(div.getLhs(), div.getRhs());
    if (!m)
      return rewriter.notifyMatchFailure(div, "not a layer normalisation");
    m->rewrite(rewriter, div, div.getName());
    return success();
  }
};

struct FoldAddIntoConv : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    auto match = matchConvAndConstant(add);
    if (!match)
      return rewriter.notifyMatchFailure(add, "no conv plus a constant");
    auto &[conv, shift] = *match;
    for (int64_t c = 0; c < conv.outChannels; ++c)
      conv.bias[c] = static_cast<float>(conv.bias[c] + shift[c]);
    replaceWithConv(rewriter, add, conv, add.getName(), add.getDoRelu(),
                    add.getReluLimit());
    return success();
  }
};

/// The values of weight \p v if it varies only along the trailing axes
/// [first, rank) of \p out, with their extents (shape (120), (1, 1, 120),
/// ... for first = rank - 1 of (1, 40, 120)), one per element of those
/// axes; else none.
std::optional<std::vector<float>> trailingValues(Value v, const Shape &out,
                                                 size_t first) {
  Shape s = module::getShape(v);
  if (s.size() > out.size())
    return std::nullopt;
  s.insert(s.begin(), out.size() - s.size(), 1);
  for (size_t d = 0; d < out.size(); ++d)
    if (s[d] != (d < first ? 1 : out[d]))
      return std::nullopt;
  return weightValues(v);
}

//===----------------------------------------------------------------------===//
// Mul / Add by constants of the normalised axes into LayerNorm
//===----------------------------------------------------------------------===//

/// LayerNorm(x) * w and LayerNorm(x) + b, with w / b weights over the
/// normalised axes (shape (120), (1, 1, 120), ... for axes [axis, rank)),
/// become the LayerNorm's scale and bias: the decomposed norm exporters
/// write (PP-OCR rec: LayerNorm, then Mul by its gamma and Add of its
/// beta, five times) needs no element-wise kernels after it, and the
/// kernel applies them in fp32 before its one rounding. An existing scale
/// multiplies (the bias too, for a Mul); an Add adds to the bias. Stays:
/// a fused relu on the Mul / Add (LayerNorm has none), a LayerNorm with
/// another reader, a constant that varies along the other axes.
template <typename OpT> struct FoldAffineIntoLayerNorm : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const override {
    constexpr bool isMul = std::is_same_v<OpT, MulOp>;
    if (op.getDoRelu())
      return rewriter.notifyMatchFailure(op, "a relu follows");
    for (auto [lnSide, constSide] : {std::pair(op.getLhs(), op.getRhs()),
                                     std::pair(op.getRhs(), op.getLhs())}) {
      auto ln = lnSide.template getDefiningOp<LayerNormOp>();
      if (!ln || !lnSide.hasOneUse())
        continue;
      Shape in = module::getShape(lnSide);
      if (module::getShape(op.getOutput()) != in)
        continue;
      int64_t rank = int64_t(in.size());
      int64_t axis = static_cast<int64_t>(ln.getAxis());
      if (axis < 0)
        axis += rank;
      if (axis < 0 || axis >= rank)
        continue;
      Shape trailing(in.begin() + axis, in.end());
      int64_t inner = 1;
      for (int64_t d : trailing)
        inner *= d;
      // The constant: one value per normalised element, broadcast only
      // along the leading axes.
      auto k = trailingValues(constSide, in, size_t(axis));
      if (!k)
        continue;
      // The norm's own scale and bias, if any, of `inner` values each.
      auto param = [&](Value v) -> std::optional<std::vector<float>> {
        if (isNone(v))
          return std::vector<float>();
        auto data = weightValues(v);
        if (!data || int64_t(data->size()) != inner)
          return std::nullopt;
        return data;
      };
      auto scale = param(ln.getScale()), bias = param(ln.getBias());
      if (!scale || !bias)
        continue;
      if (isMul) {
        if (scale->empty())
          *scale = *k;
        else
          for (int64_t i = 0; i < inner; ++i)
            (*scale)[size_t(i)] *= (*k)[size_t(i)];
        for (size_t i = 0; i < bias->size(); ++i)
          (*bias)[i] *= (*k)[i];
      } else {
        if (bias->empty())
          *bias = *k;
        else
          for (int64_t i = 0; i < inner; ++i)
            (*bias)[size_t(i)] += (*k)[size_t(i)];
      }
      StringRef name = op.getName();
      auto make = [&](const std::vector<float> &data,
                      const char *suffix) -> Value {
        if (data.empty())
          return rewriter.create<NoneOp>(op.getLoc(), rewriter.getNoneType())
              .getOutput();
        return makeWeight(rewriter, ln, (name + suffix).str(), trailing, data);
      };
      Value sv = make(*scale, "_scale"), bv = make(*bias, "_bias");
      rewriter.setInsertionPoint(op);
      auto fused = rewriter.create<LayerNormOp>(
          op.getLoc(), op.getOutput().getType(), ln.getInput(), sv, bv,
          ln.getAxis(), ln.getEpsilon(), name);
      rewriter.replaceOp(op, fused.getOutput());
      return success();
    }
    return rewriter.notifyMatchFailure(op, "no layer norm and a constant");
  }
};

//===----------------------------------------------------------------------===//
// Add of a constant row into MatMul's bias
//===----------------------------------------------------------------------===//

/// MatMul(x, W) + b, with W and b weights and b one value per output column
/// (shape (N), (1, N), (1, 1, N), ...), becomes MatMul(x, W, bias) named as
/// the Add: the kernel adds the bias to its fp32 sums before the one
/// rounding to the result type, where the Add reads the rounded product
/// from DDR (a second kernel, and in F16 a second rounding). Exporters
/// that write Gemm as MatMul + Add (paddle2onnx: PP-OCR rec's attention
/// and head, cls's head) leave this pair. An existing constant bias is
/// summed in; a MatMul with a fused relu (the Add would follow it) or two
/// activations (their INT8 form has no bias) stays.
struct FoldAddIntoMatMul : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    for (auto [mmSide, constSide] : {std::pair(add.getLhs(), add.getRhs()),
                                     std::pair(add.getRhs(), add.getLhs())}) {
      auto mm = mmSide.getDefiningOp<MatMulOp>();
      if (!mm || !mmSide.hasOneUse() || mm.getDoRelu() ||
          !mm.getRight().getDefiningOp<WeightOp>() ||
          mm.getInput().getDefiningOp<WeightOp>())
        continue;
      Shape out = module::getShape(add.getOutput());
      if (out.empty() || out != module::getShape(mmSide))
        continue;
      int64_t n = out.back();
      auto row = trailingValues(constSide, out, out.size() - 1);
      if (!row)
        continue;
      std::vector<float> bias(size_t(n), 0.0f);
      if (!isNone(mm.getBias())) {
        auto old = weightValues(mm.getBias());
        if (!old || int64_t(old->size()) != n)
          continue;
        bias = std::move(*old);
      }
      for (int64_t j = 0; j < n; ++j)
        bias[size_t(j)] = static_cast<float>(double(bias[size_t(j)]) +
                                             double((*row)[size_t(j)]));
      Value b =
          makeWeight(rewriter, mm, (add.getName() + "_bias").str(), {n}, bias);
      rewriter.setInsertionPoint(add);
      auto fused = rewriter.create<MatMulOp>(
          add.getLoc(), add.getOutput().getType(), mm.getInput(), mm.getRight(),
          b, add.getDoRelu(), add.getReluLimit(), mm.getRightTranspose(),
          add.getName());
      rewriter.replaceOp(add, fused.getOutput());
      return success();
    }
    return rewriter.notifyMatchFailure(add, "no matmul plus a constant row");
  }
};

//===----------------------------------------------------------------------===//
// Relu fusion
//===----------------------------------------------------------------------===//

/// Sets do_relu / relu_limit / name on the single-use producer of
/// \p input if it can absorb an activation, and replaces \p act by it.
LogicalResult fuseActivation(Operation *act, Value input, double limit,
                             PatternRewriter &rewriter) {
  Operation *producer = input.getDefiningOp();
  if (!producer ||
      !isa<ConvOp, ConvTransposeOp, MatMulOp, AddOp, SubOp, MulOp, MaxPoolOp,
           AvgPoolOp, BatchNormOp>(producer))
    return rewriter.notifyMatchFailure(act, "producer cannot absorb a relu");
  if (!input.hasOneUse())
    return rewriter.notifyMatchFailure(act, "producer has other users");
  if (producer->getAttrOfType<BoolAttr>("do_relu").getValue())
    return rewriter.notifyMatchFailure(act, "producer already has a relu");
  StringAttr name = act->getAttrOfType<StringAttr>("name");
  rewriter.modifyOpInPlace(producer, [&] {
    producer->setAttr("do_relu", rewriter.getBoolAttr(true));
    producer->setAttr("relu_limit", rewriter.getF64FloatAttr(limit));
    producer->setAttr("name", name);
  });
  rewriter.replaceOp(act, producer->getResults());
  return success();
}

struct FuseRelu : OpRewritePattern<ReluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReluOp relu,
                                PatternRewriter &rewriter) const override {
    return fuseActivation(relu, relu.getInput(),
                          relu.getReluLimit().convertToDouble(), rewriter);
  }
};

struct FuseClip : OpRewritePattern<ClipOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ClipOp clip,
                                PatternRewriter &rewriter) const override {
    double lo = clip.getMin().convertToDouble();
    double hi = clip.getMax().convertToDouble();
    if (lo != 0.0 || !(hi > 0.0))
      return rewriter.notifyMatchFailure(clip, "not a (limited) relu");
    double limit = std::isinf(hi) ? -1.0 : hi;
    return fuseActivation(clip, clip.getInput(), limit, rewriter);
  }
};

//===----------------------------------------------------------------------===//
// Reshape / Permute
//===----------------------------------------------------------------------===//

struct RemoveIdentityReshape : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getInput().getType() != op.getOutput().getType())
      return rewriter.notifyMatchFailure(op, "changes the shape");
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

struct MergeReshapes : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<ReshapeOp>();
    auto type = dyn_cast<RankedTensorType>(op.getOutput().getType());
    if (!inner || !type || !type.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "no reshape of a reshape");
    rewriter.replaceOpWithNewOp<ReshapeOp>(
        op, type, inner.getInput(), rewriter.getI64ArrayAttr(type.getShape()),
        op.getName());
    return success();
  }
};

struct RemoveIdentityPermute : OpRewritePattern<PermuteOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PermuteOp op,
                                PatternRewriter &rewriter) const override {
    int64_t i = 0;
    for (Attribute a : op.getOrder())
      if (cast<IntegerAttr>(a).getInt() != i++)
        return rewriter.notifyMatchFailure(op, "not the identity");
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

/// A permute whose axes of extent > 1 keep their order moves only unit
/// axes: the elements stay in their order, so it is a reshape (no data
/// moves; TFLite's NHWC <-> NCHW transposes of a one-channel or one-pixel
/// tensor, a transpose of a vector).
struct PermuteOfUnitAxes : OpRewritePattern<PermuteOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PermuteOp op,
                                PatternRewriter &rewriter) const override {
    auto in = dyn_cast<RankedTensorType>(op.getInput().getType());
    auto out = dyn_cast<RankedTensorType>(op.getOutput().getType());
    if (!in || !out || !in.hasStaticShape() || !out.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "not static shapes");
    int64_t prev = -1;
    for (Attribute a : op.getOrder()) {
      int64_t axis = cast<IntegerAttr>(a).getInt();
      if (in.getDimSize(axis) == 1)
        continue;
      if (axis < prev)
        return rewriter.notifyMatchFailure(op, "moves data");
      prev = axis;
    }
    rewriter.replaceOpWithNewOp<ReshapeOp>(
        op, out, op.getInput(), rewriter.getI64ArrayAttr(out.getShape()),
        op.getName());
    return success();
  }
};

struct MergePermutes : OpRewritePattern<PermuteOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PermuteOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<PermuteOp>();
    if (!inner)
      return rewriter.notifyMatchFailure(op, "no permute of a permute");
    // out axis i = mid axis outer[i] = in axis inner[outer[i]].
    SmallVector<int64_t> order;
    for (Attribute a : op.getOrder())
      order.push_back(cast<IntegerAttr>(
                          inner.getOrder()[cast<IntegerAttr>(a).getInt()])
                          .getInt());
    rewriter.replaceOpWithNewOp<PermuteOp>(op, op.getOutput().getType(),
                                           inner.getInput(),
                                           rewriter.getI64ArrayAttr(order),
                                           op.getName());
    return success();
  }
};

/// A Pad of nothing (every padding 0; PyTorch exports one before an
/// AveragePool with ceil_mode or count_include_pad, DenseNet's transitions)
/// is its input: as an op it would copy the tensor through DDR. Kept when
/// it is a model output, whose name it carries.
struct RemoveEmptyPad : OpRewritePattern<PadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PadOp op,
                                PatternRewriter &rewriter) const override {
    for (Attribute a : op.getPaddings())
      if (cast<IntegerAttr>(a).getInt() != 0)
        return rewriter.notifyMatchFailure(op, "pads something");
    if (op.getInput().getType() != op.getOutput().getType())
      return rewriter.notifyMatchFailure(op, "changes the type");
    for (Operation *user : op.getOutput().getUsers())
      if (user->hasTrait<OpTrait::IsTerminator>())
        return rewriter.notifyMatchFailure(op, "a model output");
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

/// A zero constant Pad of H and / or W before a 2-D Conv (through a Reshape
/// that moves only unit axes: TFLite's NHWC Pad before its NCHW conv)
/// becomes the conv's own pads: the padded products are zeros either way,
/// and the pad moves no data through DDR. Only within the conv command's
/// 4-bit pad fields (15 a side), and when nothing else reads the pad.
struct FoldZeroPadIntoConv : OpRewritePattern<ConvOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvOp conv,
                                PatternRewriter &rewriter) const override {
    Value in = conv.getInput();
    auto reshape = in.getDefiningOp<ReshapeOp>();
    auto pad = (reshape ? reshape.getInput() : in).getDefiningOp<PadOp>();
    if (!pad || pad.getMode() != "constant" ||
        pad.getVal().convertToDouble() != 0.0)
      return rewriter.notifyMatchFailure(conv, "no zero pad before it");
    if (!pad->hasOneUse() || (reshape && !reshape->hasOneUse()))
      return rewriter.notifyMatchFailure(conv, "the pad is read elsewhere");
    auto pt = dyn_cast<RankedTensorType>(pad.getOutput().getType());
    auto ct = dyn_cast<RankedTensorType>(in.getType());
    std::vector<int64_t> pads = module::toI64(conv.getPads());
    if (!pt || !ct || !pt.hasStaticShape() || !ct.hasStaticShape() ||
        ct.getRank() != 4 || pads.size() != 4)
      return rewriter.notifyMatchFailure(conv, "not a 2-D conv");
    // The pad's axes of extent > 1 are the conv input's, in order.
    auto nonUnit = [](RankedTensorType t) {
      SmallVector<int64_t> axes;
      for (int64_t a = 0; a < t.getRank(); ++a)
        if (t.getDimSize(a) != 1)
          axes.push_back(a);
      return axes;
    };
    SmallVector<int64_t> pa = nonUnit(pt), ca = nonUnit(ct);
    if (pa.size() != ca.size())
      return rewriter.notifyMatchFailure(conv, "the reshape moves data");
    for (size_t k = 0; k < pa.size(); ++k)
      if (pt.getDimSize(pa[k]) != ct.getDimSize(ca[k]))
        return rewriter.notifyMatchFailure(conv, "the reshape moves data");
    std::vector<int64_t> pp = module::toI64(pad.getPaddings());
    int64_t r = pt.getRank();
    // pads: top, left, bottom, right.
    std::array<int64_t, 4> add{0, 0, 0, 0};
    for (int64_t a = 0; a < r; ++a) {
      int64_t b = pp[size_t(a)], e = pp[size_t(a + r)];
      if (b < 0 || e < 0)
        return rewriter.notifyMatchFailure(conv, "the pad crops");
      if (b == 0 && e == 0)
        continue;
      auto it = llvm::find(pa, a);
      int64_t c = it == pa.end() ? -1 : ca[size_t(it - pa.begin())];
      if (c != 2 && c != 3)
        return rewriter.notifyMatchFailure(conv, "pads other than H and W");
      add[size_t(c - 2)] += b;
      add[size_t(c)] += e;
    }
    for (size_t k = 0; k < 4; ++k)
      if ((pads[k] += add[k]) > 15)
        return rewriter.notifyMatchFailure(conv, "pads over 15");
    SmallVector<int64_t> shape(ct.getShape());
    shape[2] -= add[0] + add[2];
    shape[3] -= add[1] + add[3];
    auto type = RankedTensorType::get(shape, ct.getElementType());
    Value x = pad.getInput();
    if (x.getType() != type)
      x = rewriter.create<ReshapeOp>(conv.getLoc(), type, x,
                                     rewriter.getI64ArrayAttr(shape),
                                     reshape ? reshape.getName()
                                             : pad.getName());
    rewriter.modifyOpInPlace(conv, [&] {
      conv.getInputMutable().assign(x);
      conv.setPadsAttr(rewriter.getI64ArrayAttr(pads));
    });
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Constant folding
//===----------------------------------------------------------------------===//

/// Evaluates an op whose operands are all weights (or none) and replaces
/// its results by new weights named after the results' tensors.
struct ConstantFold : RewritePattern {
  explicit ConstantFold(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isa_and_nonnull<TopDialect>(op->getDialect()) ||
        isa<WeightOp, NoneOp, InputOp>(op) || op->getNumOperands() == 0)
      return failure();
    auto infer = dyn_cast<InferenceInterface>(op);
    if (!infer)
      return failure();
    for (Value r : op->getResults())
      if (!isa<RankedTensorType>(r.getType()) ||
          !cast<RankedTensorType>(r.getType()).hasStaticShape())
        return rewriter.notifyMatchFailure(op, "result shape unknown");
    InferenceContext ctx;
    for (Value v : op->getOperands()) {
      if (isNone(v))
        continue;
      auto data = weightValues(v);
      if (!data)
        return rewriter.notifyMatchFailure(op, "operand is not constant");
      ctx.set(v, std::move(*data));
    }
    if (failed(infer.inference(ctx)))
      return rewriter.notifyMatchFailure(op, "inference failed");
    SmallVector<Value> replacements;
    for (Value r : op->getResults())
      replacements.push_back(makeWeight(rewriter, op, getTensorName(r),
                                        module::getShape(r), ctx.get(r)));
    rewriter.replaceOp(op, replacements);
    return success();
  }
};

} // namespace

void TopDialect::getCanonicalizationPatterns(RewritePatternSet &results) const {
  // The Div form of the layer norm is matched here: DivOp declares no
  // canonicalizer of its own.
  results
      .add<ConstantFold, FuseLayerNormDiv, FoldZeroPadIntoConv, RemoveEmptyPad>(
          getContext());
}

void BatchNormOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *ctx) {
  results.add<FoldBatchNormIntoConv>(ctx);
}

void MulOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *ctx) {
  results.add<FoldMulIntoConv, FuseHardSwish, FuseLayerNormMul,
              FoldAffineIntoLayerNorm<MulOp>>(ctx);
}

void AddOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *ctx) {
  results
      .add<FoldAddIntoConv, FoldAddIntoMatMul, FoldAffineIntoLayerNorm<AddOp>>(
          ctx);
}

void ReluOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                         MLIRContext *ctx) {
  results.add<FuseRelu>(ctx);
}

void ClipOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                         MLIRContext *ctx) {
  results.add<FuseClip>(ctx);
}

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *ctx) {
  results.add<RemoveIdentityReshape, MergeReshapes>(ctx);
}

void PermuteOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *ctx) {
  results.add<RemoveIdentityPermute, PermuteOfUnitAxes, MergePermutes>(ctx);
}
