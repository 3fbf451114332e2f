//===- NNOps.cpp - Convolution, matmul, pooling, norms, softmax -----------===//

#include "Fold.h"
#include "ImportContext.h"

#include <cmath>

namespace tpuc::frontend {

namespace {

/// Window parameters of a conv or pool node, resolved against its input.
struct Window {
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads; ///< begins then ends
};

/// Reads kernel_shape (or \p kernelFromFilter), strides, dilations, pads and
/// auto_pad of \p node for \p spatial axes of input size \p in.
Window readWindow(ImportContext &ctx, const onnx::NodeProto &node,
                  llvm::ArrayRef<int64_t> in,
                  llvm::ArrayRef<int64_t> kernelFromFilter) {
  size_t k = in.size();
  Window w;
  w.kernel = ctx.getAttrInts(node, "kernel_shape");
  if (w.kernel.empty())
    w.kernel.assign(kernelFromFilter.begin(), kernelFromFilter.end());
  if (w.kernel.size() != k)
    ctx.failAttr(node, "kernel_shape",
                 "has " + llvm::Twine(w.kernel.size()) + " values for " +
                     llvm::Twine(k) + " spatial axes");
  w.strides = ctx.getAttrInts(node, "strides");
  if (w.strides.empty())
    w.strides.assign(k, 1);
  w.dilations = ctx.getAttrInts(node, "dilations");
  if (w.dilations.empty())
    w.dilations.assign(k, 1);
  w.pads = ctx.getAttrInts(node, "pads");
  if (w.pads.empty())
    w.pads.assign(2 * k, 0);
  if (w.strides.size() != k || w.dilations.size() != k ||
      w.pads.size() != 2 * k)
    ctx.fail(node, "strides, dilations and pads do not match the " +
                       llvm::Twine(k) + " spatial axes");
  std::string autoPad = ctx.getAttrString(node, "auto_pad", "NOTSET");
  if (autoPad == "VALID") {
    w.pads.assign(2 * k, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < k; ++i) {
      int64_t out = (in[i] + w.strides[i] - 1) / w.strides[i];
      int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
      int64_t total =
          std::max<int64_t>(0, (out - 1) * w.strides[i] + extent - in[i]);
      int64_t small = total / 2;
      w.pads[i] = autoPad == "SAME_UPPER" ? small : total - small;
      w.pads[i + k] = total - w.pads[i];
    }
  } else if (autoPad != "NOTSET") {
    ctx.failAttr(node, "auto_pad", "unknown value '" + autoPad + "'");
  }
  return w;
}

/// The input shape's spatial axes (everything after N and C).
std::vector<int64_t> spatialOf(const Shape &shape) {
  return std::vector<int64_t>(shape.begin() + 2, shape.end());
}

} // namespace

void importConv(ImportContext &ctx, const onnx::NodeProto &node) {
  Shape x = ctx.getShape(node, 0);
  Shape w = ctx.getShape(node, 1);
  if (x.size() != 3 && x.size() != 4)
    ctx.fail(node, "only 1-D and 2-D convolutions are supported (input rank " +
                       llvm::Twine(x.size()) + ")");
  if (w.size() != x.size())
    ctx.fail(node, "filter rank " + llvm::Twine(w.size()) +
                       " does not match input rank " + llvm::Twine(x.size()));
  Window win = readWindow(ctx, node, spatialOf(x), spatialOf(w));
  int64_t group = ctx.getAttrInt(node, "group", 1);
  mlir::Value out = ctx.emit<top::ConvOp>(
      node,
      {ctx.getValue(node, 0), ctx.getValue(node, 1), ctx.getValue(node, 2)},
      {ctx.named("kernel_shape", ctx.i64ArrayAttr(win.kernel)),
       ctx.named("strides", ctx.i64ArrayAttr(win.strides)),
       ctx.named("pads", ctx.i64ArrayAttr(win.pads)),
       ctx.named("dilations", ctx.i64ArrayAttr(win.dilations)),
       ctx.named("group", ctx.i64Attr(group)),
       ctx.named("do_relu", ctx.boolAttr(false))});
  ctx.setValue(node, 0, out, ctx.getType(node, 0));
}

void importConvTranspose(ImportContext &ctx, const onnx::NodeProto &node) {
  Shape x = ctx.getShape(node, 0);
  Shape w = ctx.getShape(node, 1);
  if (x.size() != 3 && x.size() != 4)
    ctx.fail(node, "only 1-D and 2-D transposed convolutions are supported "
                   "(input rank " +
                       llvm::Twine(x.size()) + ")");
  size_t k = x.size() - 2;
  std::vector<int64_t> in = spatialOf(x);
  std::vector<int64_t> kernel = ctx.getAttrInts(node, "kernel_shape");
  if (kernel.empty())
    kernel = spatialOf(w);
  std::vector<int64_t> strides = ctx.getAttrInts(node, "strides");
  if (strides.empty())
    strides.assign(k, 1);
  std::vector<int64_t> dilations = ctx.getAttrInts(node, "dilations");
  if (dilations.empty())
    dilations.assign(k, 1);
  std::vector<int64_t> pads = ctx.getAttrInts(node, "pads");
  if (pads.empty())
    pads.assign(2 * k, 0);
  std::vector<int64_t> outputPadding = ctx.getAttrInts(node, "output_padding");
  if (outputPadding.empty())
    outputPadding.assign(k, 0);
  if (kernel.size() != k || strides.size() != k || dilations.size() != k ||
      pads.size() != 2 * k || outputPadding.size() != k)
    ctx.fail(node, "kernel_shape, strides, dilations, pads and output_padding "
                   "do not match the " +
                       llvm::Twine(k) + " spatial axes");
  std::vector<int64_t> outputShape = ctx.getAttrInts(node, "output_shape");
  std::string autoPad = ctx.getAttrString(node, "auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER")
    ctx.failAttr(node, "auto_pad", "unknown value '" + autoPad + "'");
  if (autoPad == "VALID")
    pads.assign(2 * k, 0);
  // output_shape (or auto_pad SAME_*, whose output is in * stride) fixes the
  // total padding; the spec splits it with the larger half at the end for
  // SAME_UPPER and at the beginning otherwise.
  if (outputShape.size() == k + 2)
    outputShape.erase(outputShape.begin(), outputShape.begin() + 2);
  if (!outputShape.empty() || autoPad == "SAME_UPPER" ||
      autoPad == "SAME_LOWER") {
    if (outputShape.empty())
      for (size_t i = 0; i < k; ++i)
        outputShape.push_back(in[i] * strides[i]);
    if (outputShape.size() != k)
      ctx.failAttr(node, "output_shape",
                   "has " + llvm::Twine(outputShape.size()) + " values for " +
                       llvm::Twine(k) + " spatial axes");
    for (size_t i = 0; i < k; ++i) {
      int64_t full = strides[i] * (in[i] - 1) + outputPadding[i] +
                     (kernel[i] - 1) * dilations[i] + 1;
      int64_t total = full - outputShape[i];
      if (total < 0) {
        // A larger output than the kernel reaches: the extra end rows are
        // bias only, exactly what output_padding produces.
        outputPadding[i] -= total;
        total = 0;
      }
      int64_t half = total / 2;
      if (autoPad == "SAME_UPPER") {
        pads[i] = half;
        pads[i + k] = total - half;
      } else {
        pads[i] = total - half;
        pads[i + k] = half;
      }
    }
  }
  int64_t group = ctx.getAttrInt(node, "group", 1);
  mlir::Value out = ctx.emit<top::ConvTransposeOp>(
      node,
      {ctx.getValue(node, 0), ctx.getValue(node, 1), ctx.getValue(node, 2)},
      {ctx.named("kernel_shape", ctx.i64ArrayAttr(kernel)),
       ctx.named("strides", ctx.i64ArrayAttr(strides)),
       ctx.named("pads", ctx.i64ArrayAttr(pads)),
       ctx.named("dilations", ctx.i64ArrayAttr(dilations)),
       ctx.named("group", ctx.i64Attr(group)),
       ctx.named("output_padding", ctx.i64ArrayAttr(outputPadding))});
  ctx.setValue(node, 0, out, ctx.getType(node, 0));
}

void importGemm(ImportContext &ctx, const onnx::NodeProto &node) {
  double alpha =
      ImportContext::floatAttrValue(ctx.getAttrFloat(node, "alpha", 1.0f));
  double beta =
      ImportContext::floatAttrValue(ctx.getAttrFloat(node, "beta", 1.0f));
  bool transA = ctx.getAttrInt(node, "transA", 0) != 0;
  bool transB = ctx.getAttrInt(node, "transB", 0) != 0;
  if (ctx.getRank(node, 0) != 2 || ctx.getRank(node, 1) != 2)
    ctx.fail(node, "A and B must be 2-D");

  mlir::Value a;
  if (transA && ctx.isConstant(node, 0)) {
    a = ctx.createWeight(node.input(0) + "_transposed",
                         foldTranspose(ctx.getConstant(node, 0, "A"), {1, 0}));
  } else {
    a = ctx.getValue(node, 0);
    if (transA)
      a = ctx.emit<top::PermuteOp>(
          node, a, {ctx.named("order", ctx.i64ArrayAttr({1, 0}))}, "transA");
  }

  // A constant B absorbs alpha; a constant C absorbs beta.
  mlir::Value b;
  bool alphaDone = alpha == 1.0;
  if (ctx.isConstant(node, 1) && !alphaDone) {
    const ConstTensor &bc = ctx.getConstant(node, 1, "B");
    ConstTensor scale = ConstTensor::filled({}, alpha, bc.getType());
    b = ctx.createWeight(
        node.input(1) + "_scaled",
        foldElementwise(
            {&bc, &scale}, bc.getType(),
            [](llvm::ArrayRef<double> v) { return v[0] * v[1]; },
            [](llvm::ArrayRef<int64_t> v) { return v[0] * v[1]; },
            ctx.getPath()));
    alphaDone = true;
  } else {
    b = ctx.getValue(node, 1);
  }

  mlir::Value c = ctx.getNone();
  if (ctx.hasInput(node, 2) && beta != 0.0) {
    if (ctx.isConstant(node, 2)) {
      const ConstTensor &cc = ctx.getConstant(node, 2, "C");
      if (beta == 1.0) {
        c = ctx.getValue(node, 2);
      } else {
        ConstTensor scale = ConstTensor::filled({}, beta, cc.getType());
        c = ctx.createWeight(
            node.input(2) + "_scaled",
            foldElementwise(
                {&cc, &scale}, cc.getType(),
                [](llvm::ArrayRef<double> v) { return v[0] * v[1]; },
                [](llvm::ArrayRef<int64_t> v) { return v[0] * v[1]; },
                ctx.getPath()));
      }
    } else {
      c = ctx.getValue(node, 2);
      if (beta != 1.0)
        c = ctx.emit<top::MulOp>(
            node,
            {c, ctx.createScalarWeight(node, "beta", beta,
                                       Shape(ctx.getRank(node, 2), 1))},
            {}, "beta");
    }
  }

  ElemType type = ctx.getType(node, 0);
  mlir::Value out;
  if (alphaDone) {
    out = ctx.emit<top::MatMulOp>(
        node, {a, b, c}, {ctx.named("right_transpose", ctx.boolAttr(transB))});
  } else {
    // alpha * (A B) + C with a run-time B.
    mlir::Value ab = ctx.emit<top::MatMulOp>(
        node, {a, b, ctx.getNone()},
        {ctx.named("right_transpose", ctx.boolAttr(transB))}, "matmul");
    bool hasBias = !mlir::isa<mlir::NoneType>(c.getType());
    mlir::Value alphaW = ctx.createScalarWeight(node, "alpha", alpha, {1, 1});
    out = ctx.emit<top::MulOp>(node, {ab, alphaW}, {}, hasBias ? "alpha" : "");
    if (hasBias)
      out = ctx.emit<top::AddOp>(node, {out, c});
  }
  ctx.setValue(node, 0, out, type);
}

void importMatMul(ImportContext &ctx, const onnx::NodeProto &node) {
  mlir::Value out = ctx.emit<top::MatMulOp>(
      node, {ctx.getValue(node, 0), ctx.getValue(node, 1), ctx.getNone()});
  ctx.setValue(node, 0, out, ctx.getType(node, 0));
}

namespace {

/// Builds a MaxPool / AvgPool from \p node's attributes, folding ceil_mode
/// into extra end pads.
void importPool(ImportContext &ctx, const onnx::NodeProto &node, bool isMax) {
  Shape x = ctx.getShape(node, 0);
  if (x.size() < 3 || x.size() > 5)
    ctx.fail(node, "only 1-D, 2-D and 3-D pooling is supported (input rank " +
                       llvm::Twine(x.size()) + ")");
  if (isMax && ctx.isOutputUsed(node, 1))
    ctx.fail(node, "the Indices output is not supported");
  std::vector<int64_t> in = spatialOf(x);
  if (!ctx.hasAttr(node, "kernel_shape"))
    ctx.failAttr(node, "kernel_shape", "is required");
  Window w = readWindow(ctx, node, in, {});
  bool countIncludePad = ctx.getAttrInt(node, "count_include_pad", 0) != 0;
  if (ctx.getAttrInt(node, "ceil_mode", 0) != 0) {
    size_t k = in.size();
    for (size_t i = 0; i < k; ++i) {
      int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
      int64_t span = in[i] + w.pads[i] + w.pads[i + k] - extent;
      int64_t out = (span + w.strides[i] - 1) / w.strides[i] + 1;
      // The last window must start inside the input or its begin padding.
      if ((out - 1) * w.strides[i] >= in[i] + w.pads[i])
        --out;
      int64_t extra = (out - 1) * w.strides[i] + extent -
                      (in[i] + w.pads[i] + w.pads[i + k]);
      if (extra > 0) {
        if (!isMax && countIncludePad)
          ctx.failAttr(node, "ceil_mode",
                       "ceil_mode = 1 with count_include_pad = 1 is not "
                       "supported when the last window overhangs the pads");
        w.pads[i + k] += extra;
      }
    }
  }
  llvm::SmallVector<mlir::NamedAttribute> attrs = {
      ctx.named("kernel_shape", ctx.i64ArrayAttr(w.kernel)),
      ctx.named("strides", ctx.i64ArrayAttr(w.strides)),
      ctx.named("pads", ctx.i64ArrayAttr(w.pads)),
      ctx.named("count_include_pad", ctx.boolAttr(countIncludePad)),
      ctx.named("dilations", ctx.i64ArrayAttr(w.dilations))};
  mlir::Value v = ctx.getValue(node, 0);
  mlir::Value out = isMax ? ctx.emit<top::MaxPoolOp>(node, v, attrs)
                          : ctx.emit<top::AvgPoolOp>(node, v, attrs);
  ctx.setValue(node, 0, out, ctx.getType(node, 0));
}

} // namespace

void importMaxPool(ImportContext &ctx, const onnx::NodeProto &node) {
  importPool(ctx, node, /*isMax=*/true);
}

void importAveragePool(ImportContext &ctx, const onnx::NodeProto &node) {
  importPool(ctx, node, /*isMax=*/false);
}

void importGlobalPool(ImportContext &ctx, const onnx::NodeProto &node) {
  Shape x = ctx.getShape(node, 0);
  if (x.size() < 3 || x.size() > 5)
    ctx.fail(node, "only 1-D, 2-D and 3-D pooling is supported (input rank " +
                       llvm::Twine(x.size()) + ")");
  std::vector<int64_t> kernel = spatialOf(x);
  size_t k = kernel.size();
  llvm::SmallVector<mlir::NamedAttribute> attrs = {
      ctx.named("kernel_shape", ctx.i64ArrayAttr(kernel)),
      ctx.named("strides", ctx.i64ArrayAttr(std::vector<int64_t>(k, 1))),
      ctx.named("pads", ctx.i64ArrayAttr(std::vector<int64_t>(2 * k, 0)))};
  mlir::Value v = ctx.getValue(node, 0);
  mlir::Value out = node.op_type() == "GlobalMaxPool"
                        ? ctx.emit<top::MaxPoolOp>(node, v, attrs)
                        : ctx.emit<top::AvgPoolOp>(node, v, attrs);
  ctx.setValue(node, 0, out, ctx.getType(node, 0));
}

void importBatchNorm(ImportContext &ctx, const onnx::NodeProto &node) {
  if (ctx.getAttrInt(node, "training_mode", 0) != 0)
    ctx.failAttr(node, "training_mode", "training mode is not supported");
  if (ctx.getAttrInt(node, "spatial", 1) != 1)
    ctx.failAttr(node, "spatial", "spatial = 0 is not supported");
  for (unsigned o = 1; o < 5; ++o)
    if (ctx.isOutputUsed(node, o))
      ctx.fail(node, "the running statistics outputs (training) are not "
                     "supported");
  if (ctx.getRank(node, 0) < 2)
    ctx.fail(node, "input must have a channel axis");
  double eps =
      ImportContext::floatAttrValue(ctx.getAttrFloat(node, "epsilon", 1e-5f));
  // ONNX order: X, scale, B, mean, var; top order: input, mean, variance,
  // scale, bias.
  mlir::Value out = ctx.emit<top::BatchNormOp>(
      node,
      {ctx.getValue(node, 0), ctx.getValue(node, 3), ctx.getValue(node, 4),
       ctx.getValue(node, 1), ctx.getValue(node, 2)},
      {ctx.named("epsilon", ctx.f64Attr(eps))});
  ctx.setValue(node, 0, out, ctx.getType(node, 0));
}

void importInstanceNorm(ImportContext &ctx, const onnx::NodeProto &node) {
  Shape x = ctx.getShape(node, 0);
  if (x.size() < 3)
    ctx.fail(node, "input must have at least one spatial axis");
  double eps =
      ImportContext::floatAttrValue(ctx.getAttrFloat(node, "epsilon", 1e-5f));
  // Normalising every (n, c) over the spatial axes is LayerNorm from axis 2;
  // the per-channel scale and bias then broadcast as (C, 1, ..., 1).
  mlir::Value norm = ctx.emit<top::LayerNormOp>(
      node, {ctx.getValue(node, 0), ctx.getNone(), ctx.getNone()},
      {ctx.named("axis", ctx.i64Attr(2)),
       ctx.named("epsilon", ctx.f64Attr(eps))},
      "norm");
  Shape channel(x.size() - 1, 1);
  channel[0] = x[1];
  mlir::Value scale = ctx.getValueReshaped(node, 1, channel, "c11");
  mlir::Value bias = ctx.getValueReshaped(node, 2, channel, "c11");
  mlir::Value scaled = ctx.emit<top::MulOp>(node, {norm, scale}, {}, "scaled");
  mlir::Value out = ctx.emit<top::AddOp>(node, {scaled, bias});
  ctx.setValue(node, 0, out, ctx.getType(node, 0));
}

void importLayerNorm(ImportContext &ctx, const onnx::NodeProto &node) {
  int64_t rank = ctx.getRank(node, 0);
  int64_t axis =
      ctx.normalizeAxis(node, ctx.getAttrInt(node, "axis", -1), rank, "axis");
  double eps =
      ImportContext::floatAttrValue(ctx.getAttrFloat(node, "epsilon", 1e-5f));
  ElemType type = ctx.getType(node, 0);
  mlir::Value x = ctx.getValue(node, 0);
  mlir::Value out = ctx.emit<top::LayerNormOp>(
      node, {x, ctx.getValue(node, 1), ctx.getValue(node, 2)},
      {ctx.named("axis", ctx.i64Attr(axis)),
       ctx.named("epsilon", ctx.f64Attr(eps))});
  ctx.setValue(node, 0, out, type);
  if (!ctx.isOutputUsed(node, 1) && !ctx.isOutputUsed(node, 2))
    return;
  // The optional statistics (kept as size-1 axes): Mean = mean(x) and
  // InvStdDev = 1 / sqrt(mean((x - Mean)^2) + epsilon) over [axis, rank).
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d)
    axes.push_back(d);
  auto reduceMean = [&](mlir::Value v, llvm::StringRef suffix) {
    return ctx.emit<top::ReduceOp>(
        node, v,
        {ctx.named("mode", ctx.strAttr("ReduceMean")),
         ctx.named("axes", ctx.i64ArrayAttr(axes)),
         ctx.named("keepdims", ctx.boolAttr(true))},
        suffix);
  };
  mlir::Value mean = reduceMean(x, "mean");
  mlir::Value centered = ctx.emit<top::SubOp>(node, {x, mean}, {}, "centered");
  mlir::Value square =
      ctx.emit<top::MulOp>(node, {centered, centered}, {}, "square");
  mlir::Value var = reduceMean(square, "variance");
  mlir::Value varEps = ctx.emit<top::AddOp>(
      node, {var, ctx.createScalarWeight(node, "epsilon", eps, Shape(rank, 1))},
      {}, "variance_eps");
  mlir::Value stdDev = ctx.emit<top::SqrtOp>(node, varEps, {}, "stddev");
  mlir::Value inv = ctx.emit<top::ReciprocalOp>(node, stdDev, {}, "inv_stddev");
  ctx.setValue(node, 1, mean, elem::Float);
  ctx.setValue(node, 2, inv, elem::Float);
}

void importSoftmax(ImportContext &ctx, const onnx::NodeProto &node) {
  bool log = node.op_type() == "LogSoftmax";
  Shape x = ctx.getShape(node, 0);
  int64_t rank = static_cast<int64_t>(x.size());
  bool legacy = ctx.getOpset() < 13;
  int64_t axis = ctx.normalizeAxis(
      node, ctx.getAttrInt(node, "axis", legacy ? 1 : -1), rank, "axis");
  llvm::SmallVector<mlir::NamedAttribute> attrs = {
      ctx.named("log", ctx.boolAttr(log))};
  mlir::Value in = ctx.getValue(node, 0);
  bool tail = true;
  for (int64_t d = axis + 1; d < rank; ++d)
    tail &= x[d] == 1;
  if (!legacy || tail) {
    attrs.push_back(ctx.named("axis", ctx.i64Attr(axis)));
    ctx.setValue(node, 0, ctx.emit<top::SoftmaxOp>(node, in, attrs),
                 ctx.getType(node, 0));
    return;
  }
  // Before opset 13 the input is coerced to 2-D at `axis` and the softmax
  // runs over the whole second dimension.
  Shape flat = {numElements(llvm::ArrayRef<int64_t>(x).take_front(axis)),
                numElements(llvm::ArrayRef<int64_t>(x).drop_front(axis))};
  mlir::Value r = ctx.reshape(node, in, flat, "2d");
  attrs.push_back(ctx.named("axis", ctx.i64Attr(1)));
  mlir::Value s = ctx.emit<top::SoftmaxOp>(node, r, attrs, "2d_softmax");
  ctx.setValue(node, 0, ctx.reshape(node, s, x, ""), ctx.getType(node, 0));
}

} // namespace tpuc::frontend
