//===- TpuShapeOps.cpp - Data movement and reductions
//----------------------===//
//
// Data movement is exact in every element type; Interp (linear) computes in
// f32 and rounds once; Reduce follows the backend's order (ChipMath.h).
//
//===----------------------------------------------------------------------===//
#include "TpuCommon.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace tpuc;
using namespace tpuc::tpu;
using namespace tpuc::tpu::detail;

#define GET_OP_CLASSES
#include "tpuc/Dialect/Tpu/IR/TpuShapeOps.cpp.inc"

void TpuDialect::registerShapeOps() {
  addOperations<
#define GET_OP_LIST
#include "tpuc/Dialect/Tpu/IR/TpuShapeOps.cpp.inc"
      >();
}

namespace {

/// Row-major strides of \p shape.
Shape stridesOf(const Shape &shape) {
  Shape strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// Calls fn(flat output index, output coordinates) for every element.
template <typename Fn> void forEachIndex(const Shape &shape, Fn fn) {
  int64_t n = kernels::numElements(shape);
  Shape idx(shape.size(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    fn(flat, idx);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Reshape
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  if (failed(verifyName(*this)) ||
      failed(checkSameElementType(*this, getInput(), getOutput(), "input")))
    return failure();
  if (module::getNumElements(getInput()) != module::getNumElements(getOutput()))
    return emitOpError("input and result element counts differ");
  return success();
}

LogicalResult ReshapeOp::inference(InferenceContext &ctx) {
  ctx.set(getOutput(), ctx.get(getInput()));
  return success();
}

//===----------------------------------------------------------------------===//
// Permute
//===----------------------------------------------------------------------===//

LogicalResult PermuteOp::verify() {
  if (failed(verifyName(*this)) ||
      failed(checkSameElementType(*this, getInput(), getOutput(), "input")))
    return failure();
  Shape in = shapeOf(getInput()), order = toI64(getOrder());
  if (order.size() != in.size())
    return emitOpError("order needs ") << in.size() << " entries";
  Shape out;
  std::vector<bool> seen(in.size(), false);
  for (int64_t o : order) {
    if (o < 0 || o >= static_cast<int64_t>(in.size()) || seen[o])
      return emitOpError("order is not a permutation");
    seen[o] = true;
    out.push_back(in[o]);
  }
  return checkShape(*this, getOutput(), out, "result");
}

LogicalResult PermuteOp::inference(InferenceContext &ctx) {
  kernels::permute(shapeOf(getInput()), ctx.get(getInput()).data(),
                   toI64(getOrder()), ctx.output(getOutput()).data());
  return success();
}

//===----------------------------------------------------------------------===//
// Concat
//===----------------------------------------------------------------------===//

LogicalResult ConcatOp::verify() {
  if (failed(verifyName(*this)))
    return failure();
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  Shape out = shapeOf(getInputs().front());
  int64_t axis = getAxis();
  if (axis < 0 || axis >= static_cast<int64_t>(out.size()))
    return emitOpError("axis ") << axis << " out of range";
  out[axis] = 0;
  for (Value v : getInputs()) {
    Shape s = shapeOf(v);
    if (s.size() != out.size())
      return emitOpError("inputs differ in rank");
    for (size_t i = 0; i < s.size(); ++i)
      if (static_cast<int64_t>(i) != axis && s[i] != out[i])
        return emitOpError("inputs differ outside the concat axis");
    out[axis] += s[axis];
    if (failed(checkSameElementType(*this, v, getOutput(), "input")))
      return failure();
  }
  return checkShape(*this, getOutput(), out, "result");
}

LogicalResult ConcatOp::inference(InferenceContext &ctx) {
  Shape out = shapeOf(getOutput());
  int64_t axis = getAxis();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= out[i];
  for (size_t i = axis + 1; i < out.size(); ++i)
    inner *= out[i];
  std::vector<float> &dst = ctx.output(getOutput());
  int64_t offset = 0;
  for (Value v : getInputs()) {
    int64_t len = shapeOf(v)[axis] * inner;
    const std::vector<float> &src = ctx.get(v);
    for (int64_t o = 0; o < outer; ++o)
      std::copy_n(src.begin() + o * len, len,
                  dst.begin() + o * out[axis] * inner + offset);
    offset += len;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Slice
//===----------------------------------------------------------------------===//

LogicalResult SliceOp::verify() {
  if (failed(verifyName(*this)) ||
      failed(checkSameElementType(*this, getInput(), getOutput(), "input")))
    return failure();
  Shape in = shapeOf(getInput()), out = shapeOf(getOutput());
  Shape off = toI64(getOffset()), steps = toI64(getSteps());
  if (off.size() != in.size() || steps.size() != in.size() ||
      out.size() != in.size())
    return emitOpError("offset, steps and the result need one entry per axis");
  for (size_t i = 0; i < in.size(); ++i) {
    if (steps[i] == 0)
      return emitOpError("steps must not be 0");
    if (out[i] == 0)
      continue;
    int64_t last = off[i] + (out[i] - 1) * steps[i];
    if (off[i] < 0 || off[i] >= in[i] || last < 0 || last >= in[i])
      return emitOpError("axis ") << i << " slice leaves the input";
  }
  return success();
}

LogicalResult SliceOp::inference(InferenceContext &ctx) {
  kernels::slice(shapeOf(getInput()), ctx.get(getInput()).data(),
                 toI64(getOffset()), toI64(getSteps()), shapeOf(getOutput()),
                 ctx.output(getOutput()).data());
  return success();
}

//===----------------------------------------------------------------------===//
// Pad
//===----------------------------------------------------------------------===//

LogicalResult PadOp::verify() {
  if (failed(verifyName(*this)) ||
      failed(checkSameElementType(*this, getInput(), getOutput(), "input")))
    return failure();
  StringRef m = getMode();
  if (m != "constant" && m != "reflect" && m != "edge")
    return emitOpError("unknown mode '") << m << "'";
  Shape in = shapeOf(getInput()), pads = toI64(getPaddings());
  if (pads.size() != 2 * in.size())
    return emitOpError("paddings needs ") << 2 * in.size() << " values";
  Shape out = in;
  for (size_t i = 0; i < in.size(); ++i) {
    if (pads[i] < 0 || pads[i + in.size()] < 0)
      return emitOpError("paddings must not be negative");
    out[i] += pads[i] + pads[i + in.size()];
  }
  return checkShape(*this, getOutput(), out, "result");
}

LogicalResult PadOp::inference(InferenceContext &ctx) {
  kernels::pad(shapeOf(getInput()), ctx.get(getInput()).data(),
               toI64(getPaddings()), getMode().str(),
               static_cast<float>(getVal().convertToDouble()),
               ctx.output(getOutput()).data());
  roundResult(ctx, getOutput());
  return success();
}

//===----------------------------------------------------------------------===//
// Interp
//===----------------------------------------------------------------------===//

LogicalResult InterpOp::verify() {
  if (failed(verifyName(*this)) ||
      failed(checkSameElementType(*this, getInput(), getOutput(), "input")))
    return failure();
  if (getMode() != "nearest" && getMode() != "linear")
    return emitOpError("mode must be nearest or linear");
  Shape in = shapeOf(getInput()), out = shapeOf(getOutput());
  if (in.size() < 2 || in.size() != out.size())
    return emitOpError("input and result need the same rank (at least 2)");
  for (size_t i = 0; i + 2 < in.size(); ++i)
    if (in[i] != out[i])
      return emitOpError("only the last two axes may change");
  return success();
}

LogicalResult InterpOp::inference(InferenceContext &ctx) {
  Shape in = shapeOf(getInput()), out = shapeOf(getOutput());
  kernels::ResizeParams p;
  size_t r = in.size();
  for (size_t i = 0; i + 2 < r; ++i)
    p.outer *= in[i];
  p.ih = in[r - 2];
  p.iw = in[r - 1];
  p.oh = out[r - 2];
  p.ow = out[r - 1];
  p.mode = getMode().str();
  p.coordMode = getCoordMode().str();
  p.nearestMode = getNearestMode().str();
  p.scaleH = getScaleH().convertToDouble();
  p.scaleW = getScaleW().convertToDouble();
  kernels::resize(p, ctx.get(getInput()).data(),
                  ctx.output(getOutput()).data());
  roundResult(ctx, getOutput());
  return success();
}

//===----------------------------------------------------------------------===//
// Reduce
//===----------------------------------------------------------------------===//

LogicalResult ReduceOp::verify() {
  if (failed(verifyName(*this)) ||
      failed(checkSameElementType(*this, getInput(), getOutput(), "input")))
    return failure();
  StringRef m = getMode();
  if (m != "ReduceMean" && m != "ReduceMax" && m != "ReduceMin" &&
      m != "ReduceSum")
    return emitOpError("unknown mode '") << m << "'";
  Shape in = shapeOf(getInput()), axes = toI64(getAxes());
  int64_t prev = -1, kept = 1;
  for (int64_t a : axes) {
    if (a <= prev || a >= static_cast<int64_t>(in.size()))
      return emitOpError("axes must be sorted, unique and in range");
    prev = a;
  }
  for (size_t i = 0; i < in.size(); ++i)
    if (!llvm::is_contained(axes, static_cast<int64_t>(i)))
      kept *= in[i];
  if (module::getNumElements(getOutput()) != kept)
    return emitOpError("result needs ") << kept << " elements";
  return success();
}

LogicalResult ReduceOp::inference(InferenceContext &ctx) {
  Shape in = shapeOf(getInput()), axes = toI64(getAxes());
  StringRef m = getMode();
  // The backend reduces one merged axis of (outer, d, inner): the reduced
  // axes other than unit ones must be adjacent (compiler/backend/lib/
  // Norm.cpp rejects the rest). It sums in index order from +0 and scales
  // a mean by fl32(1 / d).
  Shape real;
  for (int64_t a : axes)
    if (in[a] != 1)
      real.push_back(a);
  bool adjacent = true;
  for (size_t i = 1; i < real.size(); ++i)
    for (int64_t d = real[i - 1] + 1; d < real[i]; ++d)
      adjacent = adjacent && in[d] == 1;
  std::vector<float> &out = ctx.output(getOutput());
  const std::vector<float> &src = ctx.get(getInput());
  if (!adjacent) {
    // No BM1684X kernel (codegen rejects it): fp32 sums in index order.
    Shape reduced = in;
    for (int64_t a : axes)
      reduced[a] = 1;
    Shape outStrides = stridesOf(reduced);
    bool isMax = m == "ReduceMax", isMin = m == "ReduceMin";
    float init = isMax   ? -std::numeric_limits<float>::infinity()
                 : isMin ? std::numeric_limits<float>::infinity()
                         : 0.0f;
    std::fill(out.begin(), out.end(), init);
    int64_t count = 1;
    forEachIndex(in, [&](int64_t flat, const Shape &idx) {
      int64_t o = 0;
      for (size_t d = 0; d < idx.size(); ++d)
        o += (reduced[d] == 1 ? 0 : idx[d]) * outStrides[d];
      float x = src[flat];
      out[o] = isMax   ? std::max(out[o], x)
               : isMin ? std::min(out[o], x)
                       : out[o] + x;
    });
    for (int64_t a : axes)
      count *= in[a];
    if (m == "ReduceMean")
      for (float &v : out)
        v = v * (1.0f / float(count));
    roundResult(ctx, getOutput());
    return success();
  }
  int64_t first = real.empty() ? 0 : real.front();
  int64_t last = real.empty() ? -1 : real.back();
  int64_t outer = 1, d = 1, inner = 1;
  for (int64_t i = 0; i < static_cast<int64_t>(in.size()); ++i)
    (i < first ? outer : i <= last ? d : inner) *= in[i];
  chip::ReduceMode mode = m == "ReduceMean"  ? chip::ReduceMode::Mean
                          : m == "ReduceMax" ? chip::ReduceMode::Max
                          : m == "ReduceMin" ? chip::ReduceMode::Min
                                             : chip::ReduceMode::Sum;
  FailureOr<std::vector<chip::KShares>> shares = kSharesAttr(*this, d, 0);
  if (failed(shares))
    return failure();
  if (shares->size() > 1)
    return emitOpError(kKSharesAttr) << " of a reduction has one entry";
  chip::reduce(mode, outer, d, inner, src.data(), out.data(),
               shares->empty() ? nullptr : &shares->front());
  roundResult(ctx, getOutput());
  return success();
}

//===----------------------------------------------------------------------===//
// Gather
//===----------------------------------------------------------------------===//

LogicalResult GatherOp::verify() {
  if (failed(verifyName(*this)) ||
      failed(checkSameElementType(*this, getInput(), getOutput(), "input")))
    return failure();
  Shape in = shapeOf(getInput()), idx = shapeOf(getIndices());
  int64_t axis = getAxis();
  if (axis < 0 || axis >= static_cast<int64_t>(in.size()))
    return emitOpError("axis ") << axis << " out of range";
  Shape out(in.begin(), in.begin() + axis);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), in.begin() + axis + 1, in.end());
  return checkShape(*this, getOutput(), out, "result");
}

LogicalResult GatherOp::inference(InferenceContext &ctx) {
  Shape in = shapeOf(getInput());
  int64_t axis = getAxis();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= in[i];
  for (size_t i = axis + 1; i < in.size(); ++i)
    inner *= in[i];
  const std::vector<float> &src = ctx.get(getInput());
  const std::vector<float> &indices = ctx.get(getIndices());
  std::vector<float> &out = ctx.output(getOutput());
  int64_t n = static_cast<int64_t>(indices.size());
  for (int64_t k = 0; k < n; ++k) {
    int64_t i = static_cast<int64_t>(indices[k]);
    if (i < 0)
      i += in[axis];
    if (i < 0 || i >= in[axis])
      return emitOpError("index ") << indices[k] << " out of range";
    for (int64_t o = 0; o < outer; ++o)
      std::copy_n(src.begin() + (o * in[axis] + i) * inner, inner,
                  out.begin() + (o * n + k) * inner);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Tile
//===----------------------------------------------------------------------===//

LogicalResult TileOp::verify() {
  if (failed(verifyName(*this)) ||
      failed(checkSameElementType(*this, getInput(), getOutput(), "input")))
    return failure();
  Shape in = shapeOf(getInput()), out = shapeOf(getOutput());
  if (in.size() > out.size())
    return emitOpError("the result cannot have a lower rank than the input");
  in.insert(in.begin(), out.size() - in.size(), 1);
  for (size_t i = 0; i < out.size(); ++i)
    if (in[i] == 0 || out[i] % in[i] != 0)
      return emitOpError("result axis ")
             << i << " is not a multiple of the input's";
  return success();
}

LogicalResult TileOp::inference(InferenceContext &ctx) {
  Shape in = shapeOf(getInput()), out = shapeOf(getOutput());
  in.insert(in.begin(), out.size() - in.size(), 1);
  Shape inStrides = stridesOf(in);
  const std::vector<float> &src = ctx.get(getInput());
  std::vector<float> &dst = ctx.output(getOutput());
  forEachIndex(out, [&](int64_t flat, const Shape &idx) {
    int64_t o = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      o += (idx[d] % in[d]) * inStrides[d];
    dst[flat] = src[o];
  });
  return success();
}
