//===- ShapeOps.cpp - Data movement, reductions and shape computations ----===//

#include "Fold.h"
#include "ImportContext.h"

#include "tpu/isa/Error.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

namespace tpuc::frontend {

namespace {

/// The ints of an optional constant input, or of attribute \p attr before
/// \p inputSince (ONNX moved many attributes to inputs).
std::vector<int64_t> intsFromAttrOrInput(ImportContext &ctx,
                                         const onnx::NodeProto &node,
                                         llvm::StringRef attr, unsigned input,
                                         int64_t inputSince, bool &given) {
  // The other opsets' spelling is an error, not ignored: a model that
  // gives both, or the wrong one, means something this import would not.
  if (ctx.getOpset() < inputSince) {
    if (ctx.hasInput(node, input))
      ctx.fail(node, "'" + attr.str() + "' is an attribute before opset " +
                         std::to_string(inputSince) + ", not input " +
                         std::to_string(input) + " (the model's opset is " +
                         std::to_string(ctx.getOpset()) + ")");
    given = ctx.hasAttr(node, attr);
    return ctx.getAttrInts(node, attr);
  }
  if (ctx.hasAttr(node, attr))
    ctx.fail(node, "'" + attr.str() + "' is input " + std::to_string(input) +
                       " from opset " + std::to_string(inputSince) +
                       ", not an attribute (the model's opset is " +
                       std::to_string(ctx.getOpset()) + ")");
  given = ctx.hasInput(node, input);
  if (!given)
    return {};
  return ctx.getConstant(node, input, attr).toInts();
}

/// ONNX Reshape's target shape made concrete (0 copies, -1 infers).
Shape resolveReshape(ImportContext &ctx, const onnx::NodeProto &node,
                     const Shape &in, llvm::ArrayRef<int64_t> target,
                     bool allowZero) {
  Shape out(target.begin(), target.end());
  int64_t known = 1;
  int inferAt = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 0 && !allowZero) {
      if (i >= in.size())
        ctx.fail(node, "shape " + shapeToString(target) +
                           " copies a dimension the input " +
                           shapeToString(in) + " does not have");
      out[i] = in[i];
    } else if (out[i] == -1) {
      if (inferAt >= 0)
        ctx.fail(node, "shape " + shapeToString(target) + " has two -1");
      inferAt = static_cast<int>(i);
      continue;
    } else if (out[i] < 0) {
      ctx.fail(node,
               "shape " + shapeToString(target) + " has a negative dimension");
    }
    known *= out[i];
  }
  int64_t total = numElements(in);
  if (inferAt >= 0) {
    if (known == 0 || total % known != 0)
      ctx.fail(node, "cannot reshape " + shapeToString(in) + " to " +
                         shapeToString(target));
    out[inferAt] = total / known;
  }
  if (numElements(out) != total)
    ctx.fail(node, "cannot reshape " + shapeToString(in) + " (" +
                       llvm::Twine(total) + " elements) to " +
                       shapeToString(out));
  return out;
}

/// Reshapes input 0 to \p out: folded for a constant, else a top.Reshape.
void reshapeTo(ImportContext &ctx, const onnx::NodeProto &node,
               const Shape &out) {
  if (ctx.isConstant(node, 0)) {
    ctx.setConstant(node, 0, ctx.getConstant(node, 0, "data").reshaped(out));
    return;
  }
  mlir::Value v = ctx.emit<top::ReshapeOp>(
      node, ctx.getValue(node, 0), {ctx.named("shape", ctx.i64ArrayAttr(out))});
  ctx.setValue(node, 0, v, ctx.getType(node, 0));
}

/// Fails if a run-time tensor of \p shape would be empty.
void checkNotEmpty(ImportContext &ctx, const onnx::NodeProto &node,
                   const Shape &shape) {
  if (numElements(shape) == 0)
    ctx.fail(node, "produces an empty tensor " + shapeToString(shape) +
                       " at run time, which is not supported");
}

} // namespace

//===----------------------------------------------------------------------===//
// Reshape family
//===----------------------------------------------------------------------===//

void importReshape(ImportContext &ctx, const onnx::NodeProto &node) {
  Shape in = ctx.getShape(node, 0);
  std::vector<int64_t> target =
      ctx.getOpset() < 5 ? ctx.getAttrInts(node, "shape")
                         : ctx.getConstant(node, 1, "shape").toInts();
  bool allowZero = ctx.getAttrInt(node, "allowzero", 0) != 0;
  reshapeTo(ctx, node, resolveReshape(ctx, node, in, target, allowZero));
}

void importFlatten(ImportContext &ctx, const onnx::NodeProto &node) {
  Shape in = ctx.getShape(node, 0);
  int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = ctx.getAttrInt(node, "axis", 1);
  if (axis < -rank || axis > rank)
    ctx.failAttr(node, "axis",
                 llvm::Twine(axis) + " is out of range for rank " +
                     llvm::Twine(rank));
  if (axis < 0)
    axis += rank;
  llvm::ArrayRef<int64_t> s(in);
  reshapeTo(ctx, node,
            {numElements(s.take_front(axis)), numElements(s.drop_front(axis))});
}

void importSqueeze(ImportContext &ctx, const onnx::NodeProto &node) {
  Shape in = ctx.getShape(node, 0);
  int64_t rank = static_cast<int64_t>(in.size());
  bool given;
  std::vector<int64_t> axes =
      intsFromAttrOrInput(ctx, node, "axes", 1, 13, given);
  if (!given) {
    for (int64_t d = 0; d < rank; ++d)
      if (in[d] == 1)
        axes.push_back(d);
  }
  axes = ctx.normalizeAxes(node, axes, rank, "axes");
  Shape out;
  for (int64_t d = 0; d < rank; ++d) {
    bool squeezed = llvm::is_contained(axes, d);
    if (squeezed && in[d] != 1)
      ctx.fail(node, "cannot squeeze axis " + llvm::Twine(d) + " of size " +
                         llvm::Twine(in[d]));
    if (!squeezed)
      out.push_back(in[d]);
  }
  reshapeTo(ctx, node, out);
}

void importUnsqueeze(ImportContext &ctx, const onnx::NodeProto &node) {
  Shape in = ctx.getShape(node, 0);
  bool given;
  std::vector<int64_t> axes =
      intsFromAttrOrInput(ctx, node, "axes", 1, 13, given);
  if (!given)
    ctx.fail(node, "axes are required");
  int64_t outRank = static_cast<int64_t>(in.size() + axes.size());
  axes = ctx.normalizeAxes(node, axes, outRank, "axes");
  Shape out;
  size_t next = 0;
  for (int64_t d = 0; d < outRank; ++d)
    out.push_back(llvm::is_contained(axes, d) ? 1 : in[next++]);
  reshapeTo(ctx, node, out);
}

void importTranspose(ImportContext &ctx, const onnx::NodeProto &node) {
  Shape in = ctx.getShape(node, 0);
  int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> perm = ctx.getAttrInts(node, "perm");
  if (perm.empty())
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  std::vector<int64_t> sorted = ctx.normalizeAxes(node, perm, rank, "perm");
  if (static_cast<int64_t>(sorted.size()) != rank)
    ctx.failAttr(node, "perm",
                 "is not a permutation of the " + llvm::Twine(rank) + " axes");
  for (int64_t &p : perm)
    p = p < 0 ? p + rank : p;
  if (ctx.isConstant(node, 0)) {
    ctx.setConstant(node, 0,
                    foldTranspose(ctx.getConstant(node, 0, "data"), perm));
    return;
  }
  mlir::Value v =
      ctx.emit<top::PermuteOp>(node, ctx.getValue(node, 0),
                               {ctx.named("order", ctx.i64ArrayAttr(perm))});
  ctx.setValue(node, 0, v, ctx.getType(node, 0));
}

void importDepthToSpace(ImportContext &ctx, const onnx::NodeProto &node) {
  Shape in = ctx.getShape(node, 0);
  if (in.size() != 4)
    ctx.fail(node, "input must be 4-D");
  int64_t bs = ctx.getAttrInt(node, "blocksize", 0);
  if (bs <= 0)
    ctx.failAttr(node, "blocksize", "must be positive");
  int64_t n = in[0], c = in[1], h = in[2], w = in[3];
  Shape split, perm, out;
  if (node.op_type() == "DepthToSpace") {
    if (c % (bs * bs) != 0)
      ctx.fail(node, "channels are not a multiple of blocksize^2");
    std::string mode = ctx.getAttrString(node, "mode", "DCR");
    if (mode == "DCR") {
      split = {n, bs, bs, c / (bs * bs), h, w};
      perm = {0, 3, 4, 1, 5, 2};
    } else if (mode == "CRD") {
      split = {n, c / (bs * bs), bs, bs, h, w};
      perm = {0, 1, 4, 2, 5, 3};
    } else {
      ctx.failAttr(node, "mode", "unknown value '" + mode + "'");
    }
    out = {n, c / (bs * bs), h * bs, w * bs};
  } else {
    if (h % bs != 0 || w % bs != 0)
      ctx.fail(node, "height and width are not multiples of blocksize");
    split = {n, c, h / bs, bs, w / bs, bs};
    perm = {0, 3, 5, 1, 2, 4};
    out = {n, c * bs * bs, h / bs, w / bs};
  }
  mlir::Value x = ctx.reshape(node, ctx.getValue(node, 0), split, "blocks");
  mlir::Value p = ctx.emit<top::PermuteOp>(
      node, x, {ctx.named("order", ctx.i64ArrayAttr(perm))}, "permuted");
  ctx.setValue(node, 0, ctx.reshape(node, p, out, ""), ctx.getType(node, 0));
}

//===----------------------------------------------------------------------===//
// Concat, Split, Slice, Pad
//===----------------------------------------------------------------------===//

void importConcat(ImportContext &ctx, const onnx::NodeProto &node) {
  unsigned n = ImportContext::numInputs(node);
  if (n == 0)
    ctx.fail(node, "needs at least one input");
  int64_t rank = ctx.getRank(node, 0);
  if (ctx.getOpset() >= 4 && !ctx.hasAttr(node, "axis"))
    ctx.failAttr(node, "axis", "is required");
  int64_t axis =
      ctx.normalizeAxis(node, ctx.getAttrInt(node, "axis", 1), rank, "axis");
  Shape first = ctx.getShape(node, 0);
  for (unsigned i = 1; i < n; ++i) {
    Shape s = ctx.getShape(node, i);
    bool fits = s.size() == first.size();
    for (size_t d = 0; fits && d < s.size(); ++d)
      fits = static_cast<int64_t>(d) == axis || s[d] == first[d];
    if (!fits)
      ctx.fail(node, "input shapes " + shapeToString(first) + " and " +
                         shapeToString(s) + " differ off axis " +
                         llvm::Twine(axis));
  }
  if (ctx.allConstant(node)) {
    std::vector<const ConstTensor *> in;
    std::vector<ConstTensor> converted;
    converted.reserve(n);
    ElemType type = ctx.getType(node, 0);
    for (unsigned i = 0; i < n; ++i)
      converted.push_back(ctx.getConstant(node, i, node.input(i)).castTo(type));
    for (const ConstTensor &t : converted)
      in.push_back(&t);
    ctx.setConstant(node, 0, foldConcat(in, axis));
    return;
  }
  llvm::SmallVector<mlir::Value> operands;
  for (unsigned i = 0; i < n; ++i)
    if (numElements(ctx.getShape(node, i)) > 0)
      operands.push_back(ctx.getValue(node, i));
  if (operands.size() == 1) {
    ctx.setValue(node, 0, operands.front(), ctx.getType(node, 0));
    return;
  }
  mlir::Value v = ctx.emit<top::ConcatOp>(
      node, operands, {ctx.named("axis", ctx.i64Attr(axis))});
  ctx.setValue(node, 0, v, ctx.getType(node, 0));
}

void importSplit(ImportContext &ctx, const onnx::NodeProto &node) {
  Shape in = ctx.getShape(node, 0);
  int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis =
      ctx.normalizeAxis(node, ctx.getAttrInt(node, "axis", 0), rank, "axis");
  int64_t n = node.output_size();
  if (n < 1)
    ctx.fail(node, "Split has no outputs");
  bool given;
  std::vector<int64_t> split =
      intsFromAttrOrInput(ctx, node, "split", 1, 13, given);
  int64_t dim = in[axis];
  if (!given) {
    if (ctx.hasAttr(node, "num_outputs")) {
      // Opset 18: equal chunks of ceil(dim / n), the last one smaller.
      int64_t num = ctx.getAttrInt(node, "num_outputs", n);
      if (num != n)
        ctx.fail(node, "num_outputs = " + llvm::Twine(num) +
                           " but the node has " + llvm::Twine(n) + " outputs");
      if ((num - 1) * ((dim + num - 1) / num) >= dim)
        ctx.fail(node, "axis of size " + llvm::Twine(dim) + " does not give " +
                           llvm::Twine(num) + " non-empty chunks");
      int64_t chunk = (dim + num - 1) / num;
      for (int64_t i = 0; i < num; ++i)
        split.push_back(std::min(chunk, dim - i * chunk));
    } else {
      if (dim % n != 0)
        ctx.fail(node, "axis of size " + llvm::Twine(dim) +
                           " does not split into " + llvm::Twine(n) +
                           " equal parts");
      split.assign(n, dim / n);
    }
  }
  if (static_cast<int64_t>(split.size()) != n)
    ctx.fail(node, "split has " + llvm::Twine(split.size()) + " entries for " +
                       llvm::Twine(n) + " outputs");
  int64_t sum = 0;
  for (int64_t s : split) {
    if (s < 0)
      ctx.fail(node, "negative split size");
    // Sizes past the axis (a corrupt split input) must not overflow the
    // sum into a match.
    if (__builtin_add_overflow(sum, s, &sum) || sum > dim)
      ctx.fail(node, "split sizes add up to more than the axis's " +
                         llvm::Twine(dim));
  }
  if (sum != dim)
    ctx.fail(node, "split sizes add up to " + llvm::Twine(sum) +
                       " but the axis has " + llvm::Twine(dim));

  if (ctx.isConstant(node, 0)) {
    const ConstTensor &x = ctx.getConstant(node, 0, "input");
    int64_t offset = 0;
    for (int64_t i = 0; i < n; ++i) {
      std::vector<int64_t> starts(rank, 0), steps(rank, 1);
      starts[axis] = offset;
      Shape outShape = in;
      outShape[axis] = split[i];
      ctx.setConstant(node, i, foldSlice(x, starts, steps, outShape));
      offset += split[i];
    }
    return;
  }
  for (int64_t s : split)
    if (s == 0)
      ctx.fail(node, "zero-size outputs are not supported at run time");
  std::vector<llvm::StringRef> names;
  for (const std::string &o : node.output())
    names.push_back(o);
  mlir::Operation *op = ctx.create<top::SplitOp>(
      node, ctx.getValue(node, 0),
      {ctx.named("axis", ctx.i64Attr(axis)),
       ctx.named("split", ctx.i64ArrayAttr(split)),
       ctx.named("names", ctx.getBuilder().getStrArrayAttr(names))},
      "", {}, static_cast<unsigned>(n));
  for (int64_t i = 0; i < n; ++i)
    ctx.setValue(node, i, op->getResult(i), ctx.getType(node, 0));
}

void importSlice(ImportContext &ctx, const onnx::NodeProto &node) {
  Shape in = ctx.getShape(node, 0);
  int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.getOpset() < 10) {
    starts = ctx.getAttrInts(node, "starts");
    ends = ctx.getAttrInts(node, "ends");
    axes = ctx.getAttrInts(node, "axes");
  } else {
    starts = ctx.getConstant(node, 1, "starts").toInts();
    ends = ctx.getConstant(node, 2, "ends").toInts();
    if (ctx.hasInput(node, 3))
      axes = ctx.getConstant(node, 3, "axes").toInts();
    if (ctx.hasInput(node, 4))
      steps = ctx.getConstant(node, 4, "steps").toInts();
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<int64_t>(i));
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    ctx.fail(node, "starts, ends, axes and steps differ in length");

  std::vector<int64_t> offset(rank, 0), end(in.begin(), in.end()),
      step(rank, 1);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = ctx.normalizeAxis(node, axes[i], rank, "axes");
    if (seen[a])
      ctx.fail(node, "axis " + llvm::Twine(a) + " is sliced twice");
    seen[a] = true;
    int64_t dim = in[a];
    int64_t s = starts[i], e = ends[i], st = steps[i];
    if (st == 0)
      ctx.fail(node, "step 0 on axis " + llvm::Twine(a));
    if (s < 0)
      s += dim;
    if (e < 0)
      e += dim;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    offset[a] = s;
    end[a] = e;
    step[a] = st;
  }
  Shape out(rank);
  for (int64_t d = 0; d < rank; ++d) {
    int64_t span = step[d] > 0 ? end[d] - offset[d] : offset[d] - end[d];
    int64_t st = std::abs(step[d]);
    out[d] = span <= 0 ? 0 : (span + st - 1) / st;
  }
  if (ctx.isConstant(node, 0)) {
    ctx.setConstant(
        node, 0,
        foldSlice(ctx.getConstant(node, 0, "data"), offset, step, out));
    return;
  }
  checkNotEmpty(ctx, node, out);
  // top.Slice reads negative ends from the end of the axis: "before index
  // 0" (end -1 after normalisation) is written as -(dim + 1).
  for (int64_t d = 0; d < rank; ++d)
    if (end[d] < 0)
      end[d] = -(in[d] + 1);
  mlir::Value v =
      ctx.emit<top::SliceOp>(node, ctx.getValue(node, 0),
                             {ctx.named("offset", ctx.i64ArrayAttr(offset)),
                              ctx.named("steps", ctx.i64ArrayAttr(step)),
                              ctx.named("ends", ctx.i64ArrayAttr(end))});
  ctx.setValue(node, 0, v, ctx.getType(node, 0));
}

void importPad(ImportContext &ctx, const onnx::NodeProto &node) {
  Shape in = ctx.getShape(node, 0);
  int64_t rank = static_cast<int64_t>(in.size());
  std::string mode = ctx.getAttrString(node, "mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    ctx.failAttr(node, "mode", "mode '" + mode + "' is not supported");
  std::vector<int64_t> pads;
  double value = 0;
  if (ctx.getOpset() < 11) {
    pads = ctx.getAttrInts(node, ctx.getOpset() < 2 ? "paddings" : "pads");
    value = ImportContext::floatAttrValue(ctx.getAttrFloat(node, "value", 0));
  } else {
    pads = ctx.getConstant(node, 1, "pads").toInts();
    if (ctx.hasInput(node, 2)) {
      const ConstTensor &v = ctx.getConstant(node, 2, "constant_value");
      if (v.size() != 1)
        ctx.fail(node, "constant_value must hold one value");
      value = v.getDouble(0);
    }
  }
  if (ctx.hasInput(node, 3)) {
    std::vector<int64_t> axes = ctx.getConstant(node, 3, "axes").toInts();
    if (pads.size() != 2 * axes.size())
      ctx.fail(node, "pads has " + llvm::Twine(pads.size()) + " values for " +
                         llvm::Twine(axes.size()) + " axes");
    std::vector<int64_t> full(2 * rank, 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = ctx.normalizeAxis(node, axes[i], rank, "axes");
      full[a] = pads[i];
      full[a + rank] = pads[i + axes.size()];
    }
    pads = full;
  }
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    ctx.fail(node, "pads has " + llvm::Twine(pads.size()) +
                       " values for rank " + llvm::Twine(rank));
  mlir::Value v =
      ctx.emit<top::PadOp>(node, ctx.getValue(node, 0),
                           {ctx.named("paddings", ctx.i64ArrayAttr(pads)),
                            ctx.named("mode", ctx.strAttr(mode)),
                            ctx.named("val", ctx.f64Attr(value))});
  ctx.setValue(node, 0, v, ctx.getType(node, 0));
}

//===----------------------------------------------------------------------===//
// Resize / Upsample
//===----------------------------------------------------------------------===//

void importResize(ImportContext &ctx, const onnx::NodeProto &node) {
  Shape in = ctx.getShape(node, 0);
  int64_t rank = static_cast<int64_t>(in.size());
  if (rank < 2)
    ctx.fail(node, "input must have at least 2 axes");
  bool upsample = node.op_type() == "Upsample";
  int64_t opset = ctx.getOpset();
  std::string mode = ctx.getAttrString(node, "mode", "nearest");
  if (mode == "bilinear")
    mode = "linear";
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    ctx.failAttr(node, "mode", "mode '" + mode + "' is not supported");

  // Opset 10 Resize and Upsample: asymmetric coordinates, nearest = floor.
  bool legacy = upsample || opset < 11;
  std::string coord =
      legacy ? "asymmetric"
             : ctx.getAttrString(node, "coordinate_transformation_mode",
                                 "half_pixel");
  if (coord != "half_pixel" && coord != "pytorch_half_pixel" &&
      coord != "align_corners" && coord != "asymmetric" &&
      coord != "tf_half_pixel_for_nn")
    ctx.failAttr(node, "coordinate_transformation_mode",
                 "'" + coord + "' is not supported");
  std::string nearest =
      legacy ? "floor"
             : ctx.getAttrString(node, "nearest_mode", "round_prefer_floor");
  if (nearest != "round_prefer_floor" && nearest != "round_prefer_ceil" &&
      nearest != "floor" && nearest != "ceil")
    ctx.failAttr(node, "nearest_mode", "'" + nearest + "' is not supported");
  if (ctx.getAttrInt(node, "antialias", 0) != 0)
    ctx.failAttr(node, "antialias", "antialiasing is not supported");
  std::string policy =
      ctx.getAttrString(node, "keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch")
    ctx.failAttr(node, "keep_aspect_ratio_policy",
                 "'" + policy + "' is not supported");

  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (upsample && opset < 9) {
    for (float s : ctx.getAttrFloats(node, "scales"))
      scales.push_back(s);
  } else if (legacy) {
    scales = ctx.getConstant(node, 1, "scales").toDoubles();
  } else {
    if (ctx.hasInput(node, 2) && ctx.getConstant(node, 2, "scales").size() > 0)
      scales = ctx.getConstant(node, 2, "scales").toDoubles();
    if (ctx.hasInput(node, 3) && ctx.getConstant(node, 3, "sizes").size() > 0)
      sizes = ctx.getConstant(node, 3, "sizes").toInts();
  }
  if (!scales.empty() && !sizes.empty())
    ctx.fail(node, "give scales or sizes, not both");
  if (scales.empty() && sizes.empty())
    ctx.fail(node, "needs scales or sizes");
  std::vector<int64_t> axes = ctx.getAttrInts(node, "axes");
  if (!axes.empty()) {
    // Opset 18: scales/sizes for the listed axes only.
    std::vector<double> fullScales(rank, 1.0);
    std::vector<int64_t> fullSizes(in.begin(), in.end());
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = ctx.normalizeAxis(node, axes[i], rank, "axes");
      if (!scales.empty() && i < scales.size())
        fullScales[a] = scales[i];
      if (!sizes.empty() && i < sizes.size())
        fullSizes[a] = sizes[i];
    }
    if (!scales.empty())
      scales = fullScales;
    else
      sizes = fullSizes;
  }
  size_t count = scales.empty() ? sizes.size() : scales.size();
  if (static_cast<int64_t>(count) != rank)
    ctx.fail(node, llvm::Twine(scales.empty() ? "sizes" : "scales") + " has " +
                       llvm::Twine(count) + " values for rank " +
                       llvm::Twine(rank));
  Shape out(rank);
  for (int64_t d = 0; d < rank; ++d) {
    if (scales.empty()) {
      out[d] = sizes[d];
      continue;
    }
    double size = std::floor(static_cast<double>(in[d]) *
                             static_cast<double>(static_cast<float>(scales[d])));
    // Converting a double outside int64's range is undefined; such a scale
    // (or a negative or NaN one) gives no valid size anyway.
    if (!(size >= 0 && size < 0x1p62)) {
      char text[64];
      std::snprintf(text, sizeof(text), "%g gives %g", scales[d], size);
      ctx.fail(node, "scale of axis " + llvm::Twine(d) + ": " + text +
                         " for its size " + llvm::Twine(in[d]) +
                         ", not a valid size");
    }
    out[d] = static_cast<int64_t>(size);
  }
  for (int64_t d = 0; d + 2 < rank; ++d)
    if (out[d] != in[d])
      ctx.fail(node, "only the last two axes can be resized (axis " +
                         llvm::Twine(d) + " goes from " + llvm::Twine(in[d]) +
                         " to " + llvm::Twine(out[d]) + ")");
  checkNotEmpty(ctx, node, out);
  if (coord == "align_corners" && !scales.empty()) {
    // With align_corners the mapping divides by (output size - 1); when
    // in * scale is not a whole number ONNX's reference uses the unrounded
    // product and ONNX Runtime the rounded size, so there is no single
    // answer to reproduce.
    for (int64_t d = rank - 2; d < rank; ++d) {
      double exact = static_cast<double>(in[d]) *
                     static_cast<double>(static_cast<float>(scales[d]));
      if (exact != std::floor(exact))
        ctx.failAttr(node, "coordinate_transformation_mode",
                     "align_corners with scales whose output size (" +
                         std::to_string(exact) +
                         ") is not a whole number is not supported; give "
                         "sizes instead");
    }
  }
  double scaleH = 0.0, scaleW = 0.0;
  if (!scales.empty()) {
    scaleH =
        ImportContext::floatAttrValue(static_cast<float>(scales[rank - 2]));
    scaleW =
        ImportContext::floatAttrValue(static_cast<float>(scales[rank - 1]));
  }
  mlir::Value v = ctx.emit<top::InterpOp>(
      node, ctx.getValue(node, 0),
      {ctx.named("mode", ctx.strAttr(mode)),
       ctx.named("coord_mode", ctx.strAttr(coord)),
       ctx.named("nearest_mode", ctx.strAttr(nearest)),
       ctx.named("scale_h", ctx.f64Attr(scaleH)),
       ctx.named("scale_w", ctx.f64Attr(scaleW)),
       ctx.named("cubic_coeff_a",
                 ctx.f64Attr(ImportContext::floatAttrValue(
                     ctx.getAttrFloat(node, "cubic_coeff_a", -0.75f)))),
       ctx.named(
           "exclude_outside",
           ctx.boolAttr(ctx.getAttrInt(node, "exclude_outside", 0) != 0))},
      "", mlir::RankedTensorType::get(out, ctx.getBuilder().getF32Type()));
  ctx.setValue(node, 0, v, ctx.getType(node, 0));
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

void importReduce(ImportContext &ctx, const onnx::NodeProto &node) {
  llvm::StringRef op = node.op_type();
  Shape in = ctx.getShape(node, 0);
  int64_t rank = static_cast<int64_t>(in.size());
  int64_t inputSince = op == "ReduceSum" ? 13 : 18;
  bool given;
  std::vector<int64_t> axes =
      intsFromAttrOrInput(ctx, node, "axes", 1, inputSince, given);
  bool keepDims = ctx.getAttrInt(node, "keepdims", 1) != 0;
  if (axes.empty()) {
    if (ctx.getAttrInt(node, "noop_with_empty_axes", 0) != 0) {
      if (ctx.isConstant(node, 0))
        ctx.setConstant(node, 0, ctx.getConstant(node, 0, "data"));
      else
        ctx.setValue(node, 0, ctx.getValue(node, 0), ctx.getType(node, 0));
      return;
    }
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  axes = ctx.normalizeAxes(node, axes, rank, "axes");
  ElemType type = ctx.getType(node, 0);

  if (ctx.isConstant(node, 0)) {
    ConstTensor x = ctx.getConstant(node, 0, "data");
    auto map = [&](ConstTensor t, double (*f)(double)) {
      for (int64_t k = 0; k < t.size(); ++k)
        t.set(k, f(t.getDouble(k)));
      return t;
    };
    ReduceKind kind = ReduceKind::Sum;
    if (op == "ReduceMean")
      kind = ReduceKind::Mean;
    else if (op == "ReduceMax")
      kind = ReduceKind::Max;
    else if (op == "ReduceMin")
      kind = ReduceKind::Min;
    else if (op == "ReduceSumSquare" || op == "ReduceL2")
      x = map(x.castTo(x.isFloat() ? x.getType() : elem::Double),
              [](double v) { return v * v; });
    else if (op == "ReduceL1")
      x = map(x, [](double v) { return std::fabs(v); });
    else if (op == "ReduceLogSumExp")
      x = map(x.castTo(elem::Double), [](double v) { return std::exp(v); });
    ConstTensor r = foldReduce(x, axes, keepDims, kind);
    if (op == "ReduceL2")
      r = map(r, [](double v) { return std::sqrt(v); });
    else if (op == "ReduceLogSum" || op == "ReduceLogSumExp")
      r = map(r.castTo(elem::Double), [](double v) { return std::log(v); });
    ctx.setConstant(node, 0, r.castTo(type));
    return;
  }

  mlir::Value x = ctx.getValue(node, 0);
  auto reduce = [&](mlir::Value v, llvm::StringRef mode,
                    llvm::StringRef suffix) {
    return ctx.emit<top::ReduceOp>(
        node, v,
        {ctx.named("mode", ctx.strAttr(mode)),
         ctx.named("axes", ctx.i64ArrayAttr(axes)),
         ctx.named("keepdims", ctx.boolAttr(keepDims))},
        suffix);
  };
  mlir::Value out;
  if (op == "ReduceMean" || op == "ReduceMax" || op == "ReduceMin" ||
      op == "ReduceSum") {
    out = reduce(x, op, "");
  } else if (op == "ReduceSumSquare") {
    out = reduce(ctx.emit<top::MulOp>(node, {x, x}, {}, "square"), "ReduceSum",
                 "");
  } else if (op == "ReduceL1") {
    out = reduce(ctx.emit<top::AbsOp>(node, x, {}, "abs"), "ReduceSum", "");
  } else if (op == "ReduceL2") {
    mlir::Value s = reduce(ctx.emit<top::MulOp>(node, {x, x}, {}, "square"),
                           "ReduceSum", "sum");
    out = ctx.emit<top::SqrtOp>(node, s);
  } else if (op == "ReduceLogSum") {
    out = ctx.emit<top::LogOp>(node, reduce(x, "ReduceSum", "sum"));
  } else {
    mlir::Value e = ctx.emit<top::ExpOp>(node, x, {}, "exp");
    out = ctx.emit<top::LogOp>(node, reduce(e, "ReduceSum", "sum"));
  }
  ctx.setValue(node, 0, out, type);
}

//===----------------------------------------------------------------------===//
// Gather, Expand, Tile
//===----------------------------------------------------------------------===//

void importGather(ImportContext &ctx, const onnx::NodeProto &node) {
  int64_t rank = ctx.getRank(node, 0);
  int64_t axis =
      ctx.normalizeAxis(node, ctx.getAttrInt(node, "axis", 0), rank, "axis");
  if (ctx.allConstant(node)) {
    ctx.setConstant(node, 0,
                    foldGather(ctx.getConstant(node, 0, "data"),
                               ctx.getConstant(node, 1, "indices"), axis,
                               ctx.getPath() + ": node '" +
                                   ImportContext::nodeName(node) + "'"));
    return;
  }
  if (ctx.isConstant(node, 1)) {
    // Constant indices are checked here; the op sees them normalised.
    const ConstTensor &idx = ctx.getConstant(node, 1, "indices");
    int64_t dim = ctx.getShape(node, 0)[axis];
    for (int64_t k = 0; k < idx.size(); ++k)
      if (idx.getInt(k) < -dim || idx.getInt(k) >= dim)
        ctx.fail(node, "index " + llvm::Twine(idx.getInt(k)) +
                           " is out of range for an axis of size " +
                           llvm::Twine(dim));
  }
  mlir::Value v = ctx.emit<top::GatherOp>(
      node, {ctx.getValue(node, 0), ctx.getValue(node, 1)},
      {ctx.named("axis", ctx.i64Attr(axis))});
  ctx.setValue(node, 0, v, ctx.getType(node, 0));
}

void importExpand(ImportContext &ctx, const onnx::NodeProto &node) {
  Shape in = ctx.getShape(node, 0);
  std::vector<int64_t> shape = ctx.getConstant(node, 1, "shape").toInts();
  Shape out = broadcastShapes(in, shape,
                              ctx.getPath() + ": node '" +
                                  ImportContext::nodeName(node) + "'");
  if (ctx.isConstant(node, 0)) {
    ctx.setConstant(node, 0,
                    foldBroadcast(ctx.getConstant(node, 0, "input"), out));
    return;
  }
  checkNotEmpty(ctx, node, out);
  mlir::Value v = ctx.emit<top::ExpandOp>(
      node, ctx.getValue(node, 0), {ctx.named("shape", ctx.i64ArrayAttr(out))});
  ctx.setValue(node, 0, v, ctx.getType(node, 0));
}

void importTile(ImportContext &ctx, const onnx::NodeProto &node) {
  Shape in = ctx.getShape(node, 0);
  std::vector<int64_t> repeats = ctx.getConstant(node, 1, "repeats").toInts();
  if (repeats.size() != in.size())
    ctx.fail(node, "repeats has " + llvm::Twine(repeats.size()) +
                       " values for rank " + llvm::Twine(in.size()));
  for (int64_t r : repeats)
    if (r < 0)
      ctx.fail(node, "negative repeat count");
  if (ctx.isConstant(node, 0)) {
    ctx.setConstant(node, 0,
                    foldTile(ctx.getConstant(node, 0, "input"), repeats));
    return;
  }
  mlir::Value v =
      ctx.emit<top::TileOp>(node, ctx.getValue(node, 0),
                            {ctx.named("repeats", ctx.i64ArrayAttr(repeats))});
  ctx.setValue(node, 0, v, ctx.getType(node, 0));
}

//===----------------------------------------------------------------------===//
// Constants and shape computations
//===----------------------------------------------------------------------===//

void importConstant(ImportContext &ctx, const onnx::NodeProto &node) {
  if (node.attribute_size() != 1)
    ctx.fail(node, "needs exactly one value attribute");
  const onnx::AttributeProto &a = node.attribute(0);
  std::string what = ctx.getPath() + ": node '" +
                     ImportContext::nodeName(node) + "' (Constant)";
  if (a.name() == "value") {
    ctx.setConstant(node, 0,
                    constTensorFromProto(a.t(), ctx.getBaseDir(), what));
  } else if (a.name() == "value_float") {
    ctx.setConstant(node, 0, ConstTensor::ofDoubles({}, {a.f()}, elem::Float));
  } else if (a.name() == "value_floats") {
    std::vector<double> v(a.floats().begin(), a.floats().end());
    int64_t n = static_cast<int64_t>(v.size());
    ctx.setConstant(node, 0, ConstTensor::ofDoubles({n}, v, elem::Float));
  } else if (a.name() == "value_int") {
    ctx.setConstant(node, 0, ConstTensor::ofInts({}, {a.i()}, elem::Int64));
  } else if (a.name() == "value_ints") {
    std::vector<int64_t> v(a.ints().begin(), a.ints().end());
    int64_t n = static_cast<int64_t>(v.size());
    ctx.setConstant(node, 0, ConstTensor::ofInts({n}, v, elem::Int64));
  } else {
    ctx.failAttr(node, a.name(),
                 "sparse and string constants are not "
                 "supported");
  }
}

void importConstantOfShape(ImportContext &ctx, const onnx::NodeProto &node) {
  std::vector<int64_t> shape = ctx.getConstant(node, 0, "input").toInts();
  for (int64_t d : shape)
    if (d < 0)
      ctx.fail(node, "negative dimension in " + shapeToString(shape));
  double value = 0;
  ElemType type = elem::Float;
  if (const onnx::AttributeProto *a = ctx.findAttr(node, "value")) {
    ConstTensor v = constTensorFromProto(
        a->t(), ctx.getBaseDir(),
        ctx.getPath() + ": node '" + ImportContext::nodeName(node) + "'");
    if (v.size() != 1)
      ctx.failAttr(node, "value", "must hold one element");
    value = v.getDouble(0);
    type = v.getType();
  }
  ctx.setConstant(node, 0, ConstTensor::filled(shape, value, type));
}

void importShape(ImportContext &ctx, const onnx::NodeProto &node) {
  Shape in = ctx.getShape(node, 0);
  int64_t rank = static_cast<int64_t>(in.size());
  int64_t start = ctx.getAttrInt(node, "start", 0);
  int64_t end = ctx.getAttrInt(node, "end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d)
    dims.push_back(in[d]);
  int64_t n = static_cast<int64_t>(dims.size());
  ctx.setConstant(node, 0, ConstTensor::ofInts({n}, dims, elem::Int64));
}

void importSize(ImportContext &ctx, const onnx::NodeProto &node) {
  ctx.setConstant(node, 0,
                  ConstTensor::ofInts({}, {numElements(ctx.getShape(node, 0))},
                                      elem::Int64));
}

void importFoldOnly(ImportContext &ctx, const onnx::NodeProto &node) {
  llvm::StringRef op = node.op_type();
  for (unsigned i = 0; i < ImportContext::numInputs(node); ++i)
    if (ctx.hasInput(node, i) && !ctx.isConstant(node, i))
      ctx.fail(node, "is supported only on constant inputs (shape "
                     "computations); input '" +
                         node.input(i) + "' depends on run-time data");
  std::string what =
      ctx.getPath() + ": node '" + ImportContext::nodeName(node) + "'";

  if (op == "Range") {
    const ConstTensor &start = ctx.getConstant(node, 0, "start");
    const ConstTensor &limit = ctx.getConstant(node, 1, "limit");
    const ConstTensor &delta = ctx.getConstant(node, 2, "delta");
    if (start.size() != 1 || limit.size() != 1 || delta.size() != 1)
      ctx.fail(node, "start, limit and delta must be scalars");
    ElemType type = start.getType();
    if (start.isFloat()) {
      double s = start.getDouble(0), l = limit.getDouble(0),
             d = delta.getDouble(0);
      if (d == 0)
        ctx.fail(node, "delta is 0");
      int64_t n =
          std::max<int64_t>(0, static_cast<int64_t>(std::ceil((l - s) / d)));
      std::vector<double> v(n);
      for (int64_t k = 0; k < n; ++k)
        v[k] = s + static_cast<double>(k) * d;
      ctx.setConstant(node, 0, ConstTensor::ofDoubles({n}, v, type));
    } else {
      int64_t s = start.getInt(0), l = limit.getInt(0), d = delta.getInt(0);
      if (d == 0)
        ctx.fail(node, "delta is 0");
      int64_t span = l - s;
      int64_t n = d > 0 ? (span + d - 1) / d : (-span + (-d) - 1) / (-d);
      n = std::max<int64_t>(0, n);
      std::vector<int64_t> v(n);
      for (int64_t k = 0; k < n; ++k)
        v[k] = s + k * d;
      ctx.setConstant(node, 0, ConstTensor::ofInts({n}, v, type));
    }
    return;
  }

  if (op == "ReduceProd") {
    const ConstTensor &x = ctx.getConstant(node, 0, "data");
    int64_t rank = x.getRank();
    bool given;
    std::vector<int64_t> axes =
        intsFromAttrOrInput(ctx, node, "axes", 1, 18, given);
    if (axes.empty()) {
      if (ctx.getAttrInt(node, "noop_with_empty_axes", 0) != 0) {
        ctx.setConstant(node, 0, x);
        return;
      }
      for (int64_t d = 0; d < rank; ++d)
        axes.push_back(d);
    }
    axes = ctx.normalizeAxes(node, axes, rank, "axes");
    ctx.setConstant(node, 0,
                    foldReduce(x, axes, ctx.getAttrInt(node, "keepdims", 1),
                               ReduceKind::Prod));
    return;
  }

  if (op == "Mod") {
    const ConstTensor &a = ctx.getConstant(node, 0, "A");
    const ConstTensor &b = ctx.getConstant(node, 1, "B");
    bool fmodMode = ctx.getAttrInt(node, "fmod", 0) != 0;
    if (a.isFloat() && !fmodMode)
      ctx.failAttr(node, "fmod", "must be 1 for floating-point inputs");
    ctx.setConstant(
        node, 0,
        foldElementwise(
            {&a, &b}, a.getType(),
            [](llvm::ArrayRef<double> v) { return std::fmod(v[0], v[1]); },
            fmodMode ? +[](llvm::ArrayRef<int64_t> v) -> int64_t {
              return v[1] == 0 ? 0 : v[0] % v[1];
            }
                     : +[](llvm::ArrayRef<int64_t> v) -> int64_t {
                         if (v[1] == 0)
                           return 0;
                         int64_t r = v[0] % v[1];
                         // The result takes the divisor's sign (Python %).
                         return r != 0 && ((r < 0) != (v[1] < 0)) ? r + v[1]
                                                                  : r;
                       },
            what));
    return;
  }

  // Elementwise rounding and sign.
  ConstTensor x = ctx.getConstant(node, 0, "X");
  if (x.isFloat()) {
    for (int64_t k = 0; k < x.size(); ++k) {
      double v = x.getDouble(k);
      double r;
      if (op == "Floor")
        r = std::floor(v);
      else if (op == "Ceil")
        r = std::ceil(v);
      else if (op == "Round")
        r = std::nearbyint(v); // half to even in the default rounding mode
      else
        r = v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0);
      x.set(k, r);
    }
  } else if (op == "Sign") {
    for (int64_t k = 0; k < x.size(); ++k)
      x.setInt(k, x.getInt(k) > 0 ? 1 : (x.getInt(k) < 0 ? -1 : 0));
  }
  ctx.setConstant(node, 0, std::move(x));
}

} // namespace tpuc::frontend
