//===- LowerShape.cpp - Lowering of data movement and reductions
//-----------===//
//
// Attributes are normalised on the way down: axes non-negative, slice starts
// clamped into the input (ONNX rules), Split becomes one Slice per output,
// Expand and Tile become tpu.Tile. Gather indices may be computed.
//
//===----------------------------------------------------------------------===//
#include "Lowering.h"

#include <algorithm>

using namespace mlir;
using namespace tpuc;
using namespace tpuc::lowering;

namespace {

LogicalResult lowerReshape(Operation *o, Lowering &l) {
  auto op = cast<top::ReshapeOp>(o);
  OpBuilder b(o);
  Value x = l.activation(b, op.getInput());
  auto r = b.create<tpu::ReshapeOp>(op.getLoc(), l.actTypeOf(op.getOutput()), x,
                                    op.getName());
  replaceOp(o, r.getOutput());
  return success();
}

LogicalResult lowerPermute(Operation *o, Lowering &l) {
  auto op = cast<top::PermuteOp>(o);
  OpBuilder b(o);
  Value x = l.activation(b, op.getInput());
  auto r = b.create<tpu::PermuteOp>(op.getLoc(), l.actTypeOf(op.getOutput()), x,
                                    op.getOrder(), op.getName());
  replaceOp(o, r.getOutput());
  return success();
}

LogicalResult lowerConcat(Operation *o, Lowering &l) {
  auto op = cast<top::ConcatOp>(o);
  int64_t axis =
      normalizeAxis(op.getAxis(), module::getShape(op.getOutput()).size());
  if (axis < 0)
    return l.unsupported(o, "axis out of range");
  OpBuilder b(o);
  SmallVector<Value> inputs;
  for (Value v : op.getInputs())
    inputs.push_back(l.activation(b, v));
  auto r = b.create<tpu::ConcatOp>(op.getLoc(), l.actTypeOf(op.getOutput()),
                                   inputs, axis, op.getName());
  replaceOp(o, r.getOutput());
  return success();
}

LogicalResult lowerSplit(Operation *o, Lowering &l) {
  auto op = cast<top::SplitOp>(o);
  Shape in = module::getShape(op.getInput());
  int64_t axis = normalizeAxis(op.getAxis(), in.size());
  if (axis < 0)
    return l.unsupported(o, "axis out of range");
  OpBuilder b(o);
  Value x = l.activation(b, op.getInput());
  SmallVector<Value> results;
  int64_t start = 0;
  for (Value out : op.getOutputs()) {
    Shape offset(in.size(), 0), steps(in.size(), 1);
    offset[axis] = start;
    start += module::getShape(out)[axis];
    auto s = b.create<tpu::SliceOp>(
        op.getLoc(), l.actTypeOf(out), x, b.getI64ArrayAttr(offset),
        b.getI64ArrayAttr(steps), top::getTensorName(out));
    results.push_back(s.getOutput());
  }
  replaceOp(o, results);
  return success();
}

LogicalResult lowerSlice(Operation *o, Lowering &l) {
  auto op = cast<top::SliceOp>(o);
  Shape in = module::getShape(op.getInput());
  Shape offset = toI64(op.getOffset()), steps = toI64(op.getSteps());
  if (offset.size() != in.size() || steps.size() != in.size())
    return l.unsupported(o, "offset and steps need one entry per axis");
  // ONNX Slice start normalisation: negative counts from the end, then
  // clamp to [0, dim] for positive steps and [-1, dim - 1] for negative.
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t s = offset[i] < 0 ? offset[i] + in[i] : offset[i];
    s = steps[i] > 0 ? std::clamp<int64_t>(s, 0, in[i])
                     : std::clamp<int64_t>(s, -1, in[i] - 1);
    offset[i] = std::clamp<int64_t>(s, 0, std::max<int64_t>(in[i] - 1, 0));
  }
  OpBuilder b(o);
  Value x = l.activation(b, op.getInput());
  auto r = b.create<tpu::SliceOp>(op.getLoc(), l.actTypeOf(op.getOutput()), x,
                                  b.getI64ArrayAttr(offset),
                                  b.getI64ArrayAttr(steps), op.getName());
  replaceOp(o, r.getOutput());
  return success();
}

LogicalResult lowerPad(Operation *o, Lowering &l) {
  auto op = cast<top::PadOp>(o);
  Shape pads = toI64(op.getPaddings());
  if (llvm::any_of(pads, [](int64_t p) { return p < 0; }))
    return l.unsupported(o, "negative pads (cropping) are not supported");
  OpBuilder b(o);
  Value x = l.activation(b, op.getInput());
  auto r = b.create<tpu::PadOp>(op.getLoc(), l.actTypeOf(op.getOutput()), x,
                                op.getPaddings(), op.getMode(), op.getVal(),
                                op.getName());
  replaceOp(o, r.getOutput());
  return success();
}

LogicalResult lowerInterp(Operation *o, Lowering &l) {
  auto op = cast<top::InterpOp>(o);
  OpBuilder b(o);
  Value x = l.activation(b, op.getInput());
  auto r = b.create<tpu::InterpOp>(op.getLoc(), l.actTypeOf(op.getOutput()), x,
                                   op.getMode(), op.getCoordMode(),
                                   op.getNearestMode(), op.getScaleH(),
                                   op.getScaleW(), op.getName());
  replaceOp(o, r.getOutput());
  return success();
}

LogicalResult lowerReduce(Operation *o, Lowering &l) {
  auto op = cast<top::ReduceOp>(o);
  Shape in = module::getShape(op.getInput());
  Shape axes = toI64(op.getAxes());
  if (axes.empty())
    for (size_t i = 0; i < in.size(); ++i)
      axes.push_back(i);
  for (int64_t &a : axes) {
    a = normalizeAxis(a, in.size());
    if (a < 0)
      return l.unsupported(o, "axis out of range");
  }
  llvm::sort(axes);
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  OpBuilder b(o);
  Value x = l.activation(b, op.getInput());
  auto r = b.create<tpu::ReduceOp>(op.getLoc(), l.actTypeOf(op.getOutput()), x,
                                   op.getMode(), b.getI64ArrayAttr(axes),
                                   op.getName());
  replaceOp(o, r.getOutput());
  return success();
}

LogicalResult lowerGather(Operation *o, Lowering &l) {
  auto op = cast<top::GatherOp>(o);
  Shape in = module::getShape(op.getInput());
  int64_t axis = normalizeAxis(op.getAxis(), in.size());
  if (axis < 0)
    return l.unsupported(o, "axis out of range");
  OpBuilder b(o);
  Value x = l.activation(b, op.getInput());
  // Constant indices are stored as i32. Computed ones are read in the float
  // type they were produced in (the kernel converts them toward zero): no
  // cast to the mode's type, so that f32 indices (a model input, an op
  // kept in F32) stay exact beyond 2048 (f16) / 256 (bf16).
  Value indices = op.getIndices();
  if (Lowering::isWeight(indices))
    indices = l.weight(indices, b.getIntegerType(32));
  else if (!isa<FloatType>(tpu::getElementType(indices)))
    indices = l.activation(b, indices);
  auto r = b.create<tpu::GatherOp>(op.getLoc(), l.actTypeOf(op.getOutput()), x,
                                   indices, axis, op.getName());
  replaceOp(o, r.getOutput());
  return success();
}

template <typename TopOpT> LogicalResult lowerTile(Operation *o, Lowering &l) {
  auto op = cast<TopOpT>(o);
  OpBuilder b(o);
  Value x = l.activation(b, op.getInput());
  auto r = b.create<tpu::TileOp>(op.getLoc(), l.actTypeOf(op.getOutput()), x,
                                 op.getName());
  replaceOp(o, r.getOutput());
  return success();
}

} // namespace

namespace tpuc::lowering {

void registerShapeLowerings(LoweringTable &table) {
  table["top.Reshape"] = lowerReshape;
  table["top.Permute"] = lowerPermute;
  table["top.Concat"] = lowerConcat;
  table["top.Split"] = lowerSplit;
  table["top.Slice"] = lowerSlice;
  table["top.Pad"] = lowerPad;
  table["top.Interp"] = lowerInterp;
  table["top.Reduce"] = lowerReduce;
  table["top.Gather"] = lowerGather;
  table["top.Expand"] = lowerTile<top::ExpandOp>;
  table["top.Tile"] = lowerTile<top::TileOp>;
}

} // namespace tpuc::lowering
