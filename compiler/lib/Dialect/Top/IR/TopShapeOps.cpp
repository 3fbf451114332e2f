//===- TopShapeOps.cpp - Data movement and reductions ----------------------===//
#include "TopCommon.h"

#include "llvm/ADT/SmallSet.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace tpuc;
using namespace tpuc::top;
using namespace tpuc::top::detail;

#define GET_OP_CLASSES
#include "tpuc/Dialect/Top/IR/TopShapeOps.cpp.inc"

void TopDialect::registerShapeOps() {
  addOperations<
#define GET_OP_LIST
#include "tpuc/Dialect/Top/IR/TopShapeOps.cpp.inc"
      >();
}

namespace {

/// Copies operand 0 to result 0 unchanged (the data of a reshape).
LogicalResult copyInference(Operation *op, InferenceContext &ctx) {
  const std::vector<float> &src = ctx.get(op->getOperand(0));
  std::vector<float> &dst = ctx.output(op->getResult(0));
  std::copy(src.begin(), src.end(), dst.begin());
  return success();
}

/// Per-axis start and output length of an ONNX Slice.
struct SliceAxis {
  int64_t start, length;
};

SliceAxis normalizeSlice(int64_t dim, int64_t start, int64_t end,
                         int64_t step) {
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  int64_t length;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    length = end > start ? (end - start + step - 1) / step : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    length = start > end ? (start - end + (-step) - 1) / (-step) : 0;
  }
  return {start, length};
}

//===----------------------------------------------------------------------===//
// Shape functions
//===----------------------------------------------------------------------===//

FailureOr<Shape> reshapeShape(ReshapeOp op) {
  Shape in = shapeOf(op.getInput()), shape = toI64(op.getShape());
  int64_t total = kernels::numElements(in);
  int64_t known = 1, inferred = -1;
  Shape out(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = shape[i];
    if (d == -1) {
      if (inferred >= 0)
        return op.emitOpError("shape ")
               << shapeStr(shape) << " has more than one -1";
      inferred = i;
      continue;
    }
    if (d == 0) {
      if (i >= in.size())
        return op.emitOpError("shape ")
               << shapeStr(shape) << " copies axis " << i
               << " the input lacks";
      d = in[i];
    }
    if (d < 0)
      return op.emitOpError("shape ") << shapeStr(shape) << " is invalid";
    out[i] = d;
    known *= d;
  }
  if (inferred >= 0) {
    if (known == 0 || total % known)
      return op.emitOpError("cannot reshape ")
             << shapeStr(in) << " to " << shapeStr(shape);
    out[inferred] = total / known;
    known *= out[inferred];
  }
  if (known != total)
    return op.emitOpError("cannot reshape ")
           << shapeStr(in) << " (" << total << " elements) to "
           << shapeStr(shape);
  return out;
}

FailureOr<Shape> permuteShape(PermuteOp op) {
  Shape in = shapeOf(op.getInput()), order = toI64(op.getOrder());
  if (order.size() != in.size())
    return op.emitOpError("order ")
           << shapeStr(order) << " does not fit rank " << in.size();
  std::vector<bool> seen(in.size(), false);
  Shape out;
  for (int64_t o : order) {
    if (o < 0 || o >= int64_t(in.size()) || seen[o])
      return op.emitOpError("order ") << shapeStr(order)
                                      << " is not a permutation";
    seen[o] = true;
    out.push_back(in[o]);
  }
  return out;
}

FailureOr<Shape> concatShape(ConcatOp op) {
  if (op.getInputs().empty())
    return op.emitOpError("needs at least one input");
  Shape out = shapeOf(op.getInputs()[0]);
  int64_t axis = normalizeAxis(op.getAxis(), out.size());
  if (axis < 0)
    return op.emitOpError("axis ")
           << op.getAxis() << " is out of range for " << shapeStr(out);
  for (Value v : op.getInputs().drop_front()) {
    Shape s = shapeOf(v);
    bool fits = s.size() == out.size();
    for (size_t i = 0; fits && i < s.size(); ++i)
      fits = int64_t(i) == axis || s[i] == out[i];
    if (!fits)
      return op.emitOpError("input ")
             << shapeStr(s) << " does not fit " << shapeStr(out)
             << " along axis " << axis;
    out[axis] += s[axis];
  }
  return out;
}

FailureOr<SmallVector<Shape>> splitShapes(SplitOp op) {
  Shape in = shapeOf(op.getInput()), split = toI64(op.getSplit());
  int64_t axis = normalizeAxis(op.getAxis(), in.size());
  if (axis < 0)
    return op.emitOpError("axis ")
           << op.getAxis() << " is out of range for " << shapeStr(in);
  if (split.size() != op.getNumResults())
    return op.emitOpError("split has ")
           << split.size() << " entries for " << op.getNumResults()
           << " results";
  int64_t sum = 0;
  SmallVector<Shape> out;
  for (int64_t s : split) {
    if (s < 0)
      return op.emitOpError("split sizes must not be negative");
    sum += s;
    Shape r = in;
    r[axis] = s;
    out.push_back(r);
  }
  if (sum != in[axis])
    return op.emitOpError("split ")
           << shapeStr(split) << " does not add up to " << in[axis];
  return out;
}

FailureOr<Shape> sliceShape(SliceOp op) {
  Shape in = shapeOf(op.getInput());
  Shape starts = toI64(op.getOffset()), ends = toI64(op.getEnds()),
        steps = toI64(op.getSteps());
  if (starts.size() != in.size() || ends.size() != in.size() ||
      steps.size() != in.size())
    return op.emitOpError("offset, ends and steps need one entry per axis (")
           << in.size() << ")";
  Shape out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (steps[i] == 0)
      return op.emitOpError("steps must not be 0");
    out.push_back(normalizeSlice(in[i], starts[i], ends[i], steps[i]).length);
  }
  return out;
}

FailureOr<Shape> padShape(PadOp op) {
  Shape in = shapeOf(op.getInput()), pads = toI64(op.getPaddings());
  StringRef mode = op.getMode();
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return op.emitOpError("unknown mode '") << mode << "'";
  if (pads.size() != 2 * in.size())
    return op.emitOpError("paddings needs ")
           << 2 * in.size() << " values (begins, then ends), has "
           << pads.size();
  Shape out;
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t d = in[i] + pads[i] + pads[in.size() + i];
    if (d < 0)
      return op.emitOpError("paddings ")
             << shapeStr(pads) << " crop more than " << shapeStr(in);
    if (mode != "constant" && in[i] == 0 && d > 0)
      return op.emitOpError("cannot ") << mode << "-pad an empty axis";
    out.push_back(d);
  }
  return out;
}

LogicalResult checkInterpAttrs(InterpOp op) {
  StringRef mode = op.getMode(), coord = op.getCoordMode(),
            nearest = op.getNearestMode();
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return op.emitOpError("unknown mode '") << mode << "'";
  if (coord != "half_pixel" && coord != "pytorch_half_pixel" &&
      coord != "align_corners" && coord != "asymmetric" &&
      coord != "tf_half_pixel_for_nn")
    return op.emitOpError("unknown coord_mode '") << coord << "'";
  if (nearest != "round_prefer_floor" && nearest != "round_prefer_ceil" &&
      nearest != "floor" && nearest != "ceil")
    return op.emitOpError("unknown nearest_mode '") << nearest << "'";
  if (op.getScaleH().convertToDouble() < 0 ||
      op.getScaleW().convertToDouble() < 0)
    return op.emitOpError("scales must not be negative");
  return success();
}

/// Interp keeps the result's last two (or one, for rank 3) axes and takes
/// the others from the input; without a ranked result the scales give them.
FailureOr<Shape> interpShape(InterpOp op) {
  if (failed(checkInterpAttrs(op)))
    return failure();
  Shape in = shapeOf(op.getInput());
  if (in.size() < 3)
    return op.emitOpError("input must have rank 3 or more, is ")
           << shapeStr(in);
  size_t resized = in.size() == 3 ? 1 : 2;
  Shape out = in;
  Shape current = shapeOf(op.getOutput());
  if (current.size() == in.size()) {
    for (size_t i = in.size() - resized; i < in.size(); ++i)
      out[i] = current[i];
    return out;
  }
  double scales[2] = {op.getScaleH().convertToDouble(),
                      op.getScaleW().convertToDouble()};
  for (size_t j = 0; j < resized; ++j) {
    double s = scales[2 - resized + j];
    if (s <= 0)
      return op.emitOpError("needs a ranked result type or scales");
    size_t i = in.size() - resized + j;
    out[i] = static_cast<int64_t>(std::floor(in[i] * s));
  }
  return out;
}

/// Reduced axes of a Reduce op, normalised; empty axes means all.
FailureOr<Shape> reduceAxes(ReduceOp op, size_t rank) {
  Shape axes = toI64(op.getAxes());
  if (axes.empty())
    for (size_t i = 0; i < rank; ++i)
      axes.push_back(i);
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t &a : axes) {
    int64_t n = normalizeAxis(a, rank);
    if (n < 0 || !seen.insert(n).second)
      return op.emitOpError("axes ")
             << shapeStr(toI64(op.getAxes())) << " are invalid for rank "
             << rank;
    a = n;
  }
  return axes;
}

FailureOr<Shape> reduceShape(ReduceOp op) {
  StringRef mode = op.getMode();
  if (mode != "ReduceMean" && mode != "ReduceMax" && mode != "ReduceMin" &&
      mode != "ReduceSum")
    return op.emitOpError("unknown mode '") << mode << "'";
  Shape in = shapeOf(op.getInput());
  auto axes = reduceAxes(op, in.size());
  if (failed(axes))
    return failure();
  Shape out;
  for (size_t i = 0; i < in.size(); ++i) {
    bool reduced = llvm::is_contained(*axes, int64_t(i));
    if (!reduced)
      out.push_back(in[i]);
    else if (op.getKeepdims())
      out.push_back(1);
  }
  return out;
}

FailureOr<Shape> gatherShape(GatherOp op) {
  Shape in = shapeOf(op.getInput()), idx = shapeOf(op.getIndices());
  int64_t axis = normalizeAxis(op.getAxis(), in.size());
  if (axis < 0)
    return op.emitOpError("axis ")
           << op.getAxis() << " is out of range for " << shapeStr(in);
  Shape out(in.begin(), in.begin() + axis);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), in.begin() + axis + 1, in.end());
  return out;
}

FailureOr<Shape> expandShape(ExpandOp op) {
  Shape in = shapeOf(op.getInput()), shape = toI64(op.getShape());
  auto out = kernels::broadcastShape(in, shape);
  if (!out)
    return op.emitOpError("cannot expand ")
           << shapeStr(in) << " to " << shapeStr(shape);
  return *out;
}

FailureOr<Shape> tileShape(TileOp op) {
  Shape in = shapeOf(op.getInput()), reps = toI64(op.getRepeats());
  if (reps.size() != in.size())
    return op.emitOpError("repeats needs ") << in.size() << " values";
  Shape out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (reps[i] < 0)
      return op.emitOpError("repeats must not be negative");
    out.push_back(in[i] * reps[i]);
  }
  return out;
}

} // namespace

//===----------------------------------------------------------------------===//
// Reshape / Permute
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() { return verifyShape(*this, reshapeShape); }
LogicalResult ReshapeOp::inferShapes() {
  return inferShape(*this, reshapeShape);
}
LogicalResult ReshapeOp::inference(InferenceContext &ctx) {
  return copyInference(*this, ctx);
}

LogicalResult PermuteOp::verify() { return verifyShape(*this, permuteShape); }
LogicalResult PermuteOp::inferShapes() {
  return inferShape(*this, permuteShape);
}
LogicalResult PermuteOp::inference(InferenceContext &ctx) {
  kernels::permute(shapeOf(getInput()), ctx.get(getInput()).data(),
                   toI64(getOrder()), ctx.output(getOutput()).data());
  return success();
}

//===----------------------------------------------------------------------===//
// Concat / Split
//===----------------------------------------------------------------------===//

LogicalResult ConcatOp::verify() { return verifyShape(*this, concatShape); }
LogicalResult ConcatOp::inferShapes() {
  return inferShape(*this, concatShape);
}
LogicalResult ConcatOp::inference(InferenceContext &ctx) {
  Shape out = shapeOf(getOutput());
  int64_t axis = normalizeAxis(getAxis(), out.size());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= out[i];
  for (size_t i = axis + 1; i < out.size(); ++i)
    inner *= out[i];
  int64_t outRow = out[axis] * inner;
  float *dst = ctx.output(getOutput()).data();
  int64_t offset = 0;
  for (Value v : getInputs()) {
    int64_t row = shapeOf(v)[axis] * inner;
    const float *src = ctx.get(v).data();
    for (int64_t o = 0; o < outer; ++o)
      std::copy(src + o * row, src + (o + 1) * row,
                dst + o * outRow + offset);
    offset += row;
  }
  return success();
}

LogicalResult SplitOp::verify() {
  if (auto names = getNames(); names && names->size() != getNumResults())
    return emitOpError("names has ")
           << names->size() << " entries for " << getNumResults()
           << " results";
  if (!operandsRanked(*this))
    return success();
  auto shapes = splitShapes(*this);
  if (failed(shapes))
    return failure();
  for (auto [result, shape] : llvm::zip(getOutputs(), *shapes))
    if (failed(checkResultShape(*this, result, shape)))
      return failure();
  return success();
}
LogicalResult SplitOp::inferShapes() {
  if (!operandsRanked(*this))
    return emitOpError("operand shapes are not known");
  auto shapes = splitShapes(*this);
  if (failed(shapes))
    return failure();
  for (auto [result, shape] : llvm::zip(getOutputs(), *shapes))
    setShape(result, shape);
  return success();
}
LogicalResult SplitOp::inference(InferenceContext &ctx) {
  Shape in = shapeOf(getInput());
  int64_t axis = normalizeAxis(getAxis(), in.size());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= in[i];
  for (size_t i = axis + 1; i < in.size(); ++i)
    inner *= in[i];
  int64_t inRow = in[axis] * inner;
  const float *src = ctx.get(getInput()).data();
  int64_t offset = 0;
  for (Value v : getOutputs()) {
    int64_t row = shapeOf(v)[axis] * inner;
    float *dst = ctx.output(v).data();
    for (int64_t o = 0; o < outer; ++o)
      std::copy(src + o * inRow + offset, src + o * inRow + offset + row,
                dst + o * row);
    offset += row;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Slice / Pad
//===----------------------------------------------------------------------===//

LogicalResult SliceOp::verify() { return verifyShape(*this, sliceShape); }
LogicalResult SliceOp::inferShapes() { return inferShape(*this, sliceShape); }
LogicalResult SliceOp::inference(InferenceContext &ctx) {
  Shape in = shapeOf(getInput());
  Shape starts = toI64(getOffset()), ends = toI64(getEnds()),
        steps = toI64(getSteps());
  for (size_t i = 0; i < in.size(); ++i)
    starts[i] = normalizeSlice(in[i], starts[i], ends[i], steps[i]).start;
  kernels::slice(in, ctx.get(getInput()).data(), starts, steps,
                 shapeOf(getOutput()), ctx.output(getOutput()).data());
  return success();
}

LogicalResult PadOp::verify() { return verifyShape(*this, padShape); }
LogicalResult PadOp::inferShapes() { return inferShape(*this, padShape); }
LogicalResult PadOp::inference(InferenceContext &ctx) {
  kernels::pad(shapeOf(getInput()), ctx.get(getInput()).data(),
               toI64(getPaddings()), getMode().str(),
               static_cast<float>(getVal().convertToDouble()),
               ctx.output(getOutput()).data());
  return success();
}

//===----------------------------------------------------------------------===//
// Interp
//===----------------------------------------------------------------------===//

LogicalResult InterpOp::verify() {
  if (failed(checkInterpAttrs(*this)))
    return failure();
  if (!isRanked(getInput()) || !isRanked(getOutput()))
    return success();
  Shape in = shapeOf(getInput()), out = shapeOf(getOutput());
  if (in.size() < 3 || out.size() != in.size())
    return emitOpError("input ")
           << shapeStr(in) << " and result " << shapeStr(out)
           << " must have the same rank, 3 or more";
  size_t resized = in.size() == 3 ? 1 : 2;
  for (size_t i = 0; i + resized < in.size(); ++i)
    if (in[i] != out[i])
      return emitOpError("only the last ")
             << resized << " axes may change: " << shapeStr(in) << " -> "
             << shapeStr(out);
  return success();
}
LogicalResult InterpOp::inferShapes() { return inferShape(*this, interpShape); }
LogicalResult InterpOp::inference(InferenceContext &ctx) {
  Shape in = shapeOf(getInput()), out = shapeOf(getOutput());
  kernels::ResizeParams p;
  bool oneD = in.size() == 3;
  p.ih = oneD ? 1 : in[in.size() - 2];
  p.oh = oneD ? 1 : out[out.size() - 2];
  p.iw = in.back();
  p.ow = out.back();
  p.outer = kernels::numElements(in) / std::max<int64_t>(1, p.ih * p.iw);
  p.mode = getMode().str();
  p.coordMode = getCoordMode().str();
  p.nearestMode = getNearestMode().str();
  p.scaleH = oneD ? 1.0 : getScaleH().convertToDouble();
  p.scaleW = getScaleW().convertToDouble();
  p.cubicCoeffA = getCubicCoeffA().convertToDouble();
  p.excludeOutside = getExcludeOutside();
  kernels::resize(p, ctx.get(getInput()).data(),
                  ctx.output(getOutput()).data());
  return success();
}

//===----------------------------------------------------------------------===//
// Reduce
//===----------------------------------------------------------------------===//

LogicalResult ReduceOp::verify() { return verifyShape(*this, reduceShape); }
LogicalResult ReduceOp::inferShapes() {
  return inferShape(*this, reduceShape);
}
LogicalResult ReduceOp::inference(InferenceContext &ctx) {
  Shape in = shapeOf(getInput());
  Shape axes = *reduceAxes(*this, in.size());
  size_t rank = in.size();
  // Output strides over the input's axes (0 along reduced axes).
  Shape outStrides(rank, 0);
  int64_t stride = 1, reducedCount = 1;
  for (size_t i = rank; i-- > 0;) {
    if (llvm::is_contained(axes, int64_t(i))) {
      reducedCount *= in[i];
      continue;
    }
    outStrides[i] = stride;
    stride *= in[i];
  }
  StringRef mode = getMode();
  std::vector<float> &dst = ctx.output(getOutput());
  std::vector<double> acc(dst.size());
  double init = mode == "ReduceMax"   ? -std::numeric_limits<double>::infinity()
                : mode == "ReduceMin" ? std::numeric_limits<double>::infinity()
                                      : 0.0;
  std::fill(acc.begin(), acc.end(), init);
  const std::vector<float> &src = ctx.get(getInput());
  int64_t total = src.size();
  if (total > 0) {
    Shape idx(rank, 0);
    int64_t off = 0;
    bool isMax = mode == "ReduceMax", isMin = mode == "ReduceMin";
    for (int64_t flat = 0; flat < total; ++flat) {
      double v = src[flat];
      double &a = acc[off];
      if (isMax)
        a = std::max(a, v);
      else if (isMin)
        a = std::min(a, v);
      else
        a += v;
      for (size_t i = rank; i-- > 0;) {
        off += outStrides[i];
        if (++idx[i] < in[i])
          break;
        off -= outStrides[i] * in[i];
        idx[i] = 0;
      }
    }
  }
  bool mean = mode == "ReduceMean";
  for (size_t i = 0; i < dst.size(); ++i)
    dst[i] = static_cast<float>(mean ? acc[i] / reducedCount : acc[i]);
  return success();
}

//===----------------------------------------------------------------------===//
// Gather / Expand / Tile
//===----------------------------------------------------------------------===//

LogicalResult GatherOp::verify() { return verifyShape(*this, gatherShape); }
LogicalResult GatherOp::inferShapes() {
  return inferShape(*this, gatherShape);
}
LogicalResult GatherOp::inference(InferenceContext &ctx) {
  Shape in = shapeOf(getInput());
  int64_t axis = normalizeAxis(getAxis(), in.size());
  int64_t outer = 1, inner = 1, len = in[axis];
  for (int64_t i = 0; i < axis; ++i)
    outer *= in[i];
  for (size_t i = axis + 1; i < in.size(); ++i)
    inner *= in[i];
  const std::vector<float> &indices = ctx.get(getIndices());
  const float *src = ctx.get(getInput()).data();
  float *dst = ctx.output(getOutput()).data();
  int64_t numIdx = indices.size();
  for (int64_t j = 0; j < numIdx; ++j) {
    int64_t k = static_cast<int64_t>(indices[j]);
    if (k < 0)
      k += len;
    if (k < 0 || k >= len)
      return emitOpError("index ")
             << static_cast<int64_t>(indices[j]) << " is out of range for "
             << len << " entries";
    for (int64_t o = 0; o < outer; ++o)
      std::copy(src + (o * len + k) * inner, src + (o * len + k + 1) * inner,
                dst + (o * numIdx + j) * inner);
  }
  return success();
}

LogicalResult ExpandOp::verify() { return verifyShape(*this, expandShape); }
LogicalResult ExpandOp::inferShapes() {
  return inferShape(*this, expandShape);
}
LogicalResult ExpandOp::inference(InferenceContext &ctx) {
  kernels::broadcastTo(shapeOf(getInput()), ctx.get(getInput()).data(),
                       shapeOf(getOutput()), ctx.output(getOutput()).data());
  return success();
}

LogicalResult TileOp::verify() { return verifyShape(*this, tileShape); }
LogicalResult TileOp::inferShapes() { return inferShape(*this, tileShape); }
LogicalResult TileOp::inference(InferenceContext &ctx) {
  // Tiling axis i is broadcasting (1, d) to (r, d) and flattening: output
  // index r * d + x reads input index x.
  Shape in = shapeOf(getInput()), reps = toI64(getRepeats());
  Shape from, to;
  for (size_t i = 0; i < in.size(); ++i) {
    from.push_back(1);
    from.push_back(in[i]);
    to.push_back(reps[i]);
    to.push_back(in[i]);
  }
  kernels::broadcastTo(from, ctx.get(getInput()).data(), to,
                       ctx.output(getOutput()).data());
  return success();
}
