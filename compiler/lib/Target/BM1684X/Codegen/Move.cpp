//===- Move.cpp - BM1684X codegen of the data-movement ops ---------------===//
//
// tpu.Permute, Concat, Slice, Pad, Interp (resize), Gather and Tile
// (broadcastTo). tpu.Reshape emits nothing: it aliases its input.
//
//===----------------------------------------------------------------------===//
#include "../CodegenContext.h"

using namespace mlir;
namespace backend = ::tpu::backend;

namespace tpuc::bm1684x {

backend::ResizeParams resizeParams(CodegenContext &ctx, tpu::InterpOp op) {
  auto p = ctx.ioParams<backend::ResizeParams>(op);
  p.mode = op.getMode() == "linear" ? backend::ResizeMode::Linear
                                    : backend::ResizeMode::Nearest;
  StringRef c = op.getCoordMode();
  p.coord = c == "align_corners"        ? backend::ResizeCoord::AlignCorners
            : c == "asymmetric"         ? backend::ResizeCoord::Asymmetric
            : c == "pytorch_half_pixel" ? backend::ResizeCoord::PytorchHalfPixel
                                        : backend::ResizeCoord::HalfPixel;
  StringRef n = op.getNearestMode();
  p.nearest = n == "round_prefer_ceil" ? backend::NearestMode::RoundPreferCeil
              : n == "floor"           ? backend::NearestMode::Floor
              : n == "ceil"            ? backend::NearestMode::Ceil
                                       : backend::NearestMode::RoundPreferFloor;
  p.scaleH = static_cast<float>(op.getScaleH().convertToDouble());
  p.scaleW = static_cast<float>(op.getScaleW().convertToDouble());
  return p;
}

backend::PermuteParams permuteParams(CodegenContext &ctx, tpu::PermuteOp op) {
  auto p = ctx.ioParams<backend::PermuteParams>(op);
  p.order = toI64(op.getOrder());
  return p;
}

backend::ConcatParams concatParams(CodegenContext &ctx, tpu::ConcatOp op) {
  backend::ConcatParams p;
  p.name = op.getName().str();
  for (Value v : op.getInputs())
    p.inputs.push_back(ctx.tensor(op, v));
  p.output = ctx.tensor(op, op.getOutput());
  p.axis = op.getAxis();
  return p;
}

backend::SliceParams sliceParams(CodegenContext &ctx, tpu::SliceOp op) {
  auto p = ctx.ioParams<backend::SliceParams>(op);
  p.starts = toI64(op.getOffset());
  p.steps = toI64(op.getSteps());
  return p;
}

} // namespace tpuc::bm1684x

namespace tpuc::tpu {

using namespace bm1684x;

void PermuteOp::codegenBM1684X(CodegenContext &ctx) {
  backend::permute(ctx.emitter(), permuteParams(ctx, *this));
}

void ConcatOp::codegenBM1684X(CodegenContext &ctx) {
  backend::concat(ctx.emitter(), concatParams(ctx, *this));
}

void SliceOp::codegenBM1684X(CodegenContext &ctx) {
  backend::slice(ctx.emitter(), sliceParams(ctx, *this));
}

void PadOp::codegenBM1684X(CodegenContext &ctx) {
  StringRef m = getMode();
  backend::PadMode mode = m == "reflect" ? backend::PadMode::Reflect
                          : m == "edge"  ? backend::PadMode::Edge
                                         : backend::PadMode::Constant;
  if (mode == backend::PadMode::Constant && m != "constant")
    throw CodegenError{*this,
                       "no BM1684X kernel for '" + m.str() + "' padding"};
  auto p = ctx.ioParams<backend::PadParams>(*this);
  p.pads = toI64(getPaddings());
  // Reflect pads of at least the axis size (the interpreter reflects
  // periodically) are rejected by the kernel, naming the op.
  p.mode = mode;
  p.value = static_cast<float>(getVal().convertToDouble());
  backend::pad(ctx.emitter(), p);
}

void InterpOp::codegenBM1684X(CodegenContext &ctx) {
  backend::resize(ctx.emitter(), resizeParams(ctx, *this));
}

void GatherOp::codegenBM1684X(CodegenContext &ctx) {
  backend::GatherParams p;
  p.name = getName().str();
  p.input = ctx.tensor(*this, getInput());
  p.indices = ctx.tensor(*this, getIndices());
  p.output = ctx.tensor(*this, getOutput());
  p.axis = getAxis();
  backend::gather(ctx.emitter(), p);
}

void TileOp::codegenBM1684X(CodegenContext &ctx) {
  backend::broadcastTo(ctx.emitter(),
                       ctx.ioParams<backend::BroadcastParams>(*this));
}

} // namespace tpuc::tpu
