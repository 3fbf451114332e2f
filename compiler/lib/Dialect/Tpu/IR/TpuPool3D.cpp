//===- TpuPool3D.cpp - tpu.Pool3D -----------------------------------------===//
//
// The verifier and the interpreter of tpu.Pool3D. The interpreter evaluates
// what the backend's pool3d commands compute (compiler/backend/lib/Pool.cpp,
// simulator/docs/semantics.md "PorD" and "AR"), in the same order and at
// the same precisions, so that tpusim's output equals it bit for bit:
//
//  1. sPorD pools every depth slice over (H, W) into fp32: max (padding is
//     -inf), or the window sum in (ky, kx) order from +0 (scale 1);
//  2. the depth taps of each output depth are combined in tap order by one
//     AR each: acc = -inf / +0, acc = max(acc, part) / fl32(acc + part);
//  3. average: one fp32 AR division by the divisor (kd * kh * kw, or, when
//     padding does not count, the real H x W taps, counted as the sum of a
//     pooled tile of ones, times the real depth taps);
//  4. relu (limit), then one rounding to the result type.
//
//===----------------------------------------------------------------------===//
#include "TpuCommon.h"

#include <cmath>
#include <limits>

// Every step below is one rounded fp32 operation, as on the chip.
#pragma clang fp contract(off)

using namespace mlir;
using namespace tpuc;
using namespace tpuc::tpu;
using namespace tpuc::tpu::detail;

namespace {

/// The ONNX output extent of one spatial axis (floor), or 0 when the
/// window does not fit the padded input.
int64_t pooledExtent(int64_t in, int64_t k, int64_t s, int64_t padBegin,
                     int64_t padEnd) {
  int64_t padded = in + padBegin + padEnd;
  if (padded < k || s <= 0)
    return 0;
  return (padded - k) / s + 1;
}

} // namespace

LogicalResult Pool3DOp::verify() {
  if (failed(verifyName(*this)))
    return failure();
  if (getPoolMode() != "max" && getPoolMode() != "avg")
    return emitOpError("pool_mode must be \"max\" or \"avg\"");
  Shape k = toI64(getKernelShape()), s = toI64(getStrides());
  Shape pads = toI64(getPads());
  if (k.size() != 3 || s.size() != 3)
    return emitOpError("kernel_shape and strides need 3 values (d, h, w)");
  if (pads.size() != 6)
    return emitOpError("pads needs 6 values (front, top, left, back, bottom, "
                       "right)");
  for (int i = 0; i < 3; ++i)
    if (k[i] < 1 || s[i] < 1)
      return emitOpError("kernel_shape and strides must be positive");
  for (int64_t p : pads)
    if (p < 0)
      return emitOpError("pads must not be negative");
  for (int i = 0; i < 3; ++i)
    if (pads[i] >= k[i] || pads[i + 3] >= k[i])
      return emitOpError("a pad of ")
             << std::max(pads[i], pads[i + 3]) << " on axis " << i + 2
             << " would give windows of padding only (kernel " << k[i] << ")";
  Shape in = shapeOf(getInput());
  if (in.size() != 5)
    return emitOpError("input must be 5-D (N, C, D, H, W), is ")
           << shapeStr(in);
  if (failed(checkSameElementType(*this, getInput(), getOutput(), "input")))
    return failure();
  Shape out = {in[0], in[1]};
  for (int i = 0; i < 3; ++i) {
    int64_t o = pooledExtent(in[i + 2], k[i], s[i], pads[i], pads[i + 3]);
    if (o <= 0)
      return emitOpError("the window does not fit axis ")
             << i + 2 << " of " << shapeStr(in);
    out.push_back(o);
  }
  return checkShape(*this, getOutput(), out, "result");
}

LogicalResult Pool3DOp::inference(InferenceContext &ctx) {
  Shape in = shapeOf(getInput()), outShape = shapeOf(getOutput());
  Shape k = toI64(getKernelShape()), s = toI64(getStrides());
  Shape pads = toI64(getPads());
  int64_t planes = in[0] * in[1];
  int64_t id = in[2], ih = in[3], iw = in[4];
  int64_t od = outShape[2], oh = outShape[3], ow = outShape[4];
  int64_t kd = k[0], kh = k[1], kw = k[2];
  int64_t sd = s[0], sh = s[1], sw = s[2];
  int64_t pf = pads[0], pt = pads[1], pl = pads[2];
  bool isMax = getPoolMode() == "max";
  bool padded2d = pads[1] || pads[2] || pads[4] || pads[5];
  bool countReal =
      !isMax && !getCountIncludePad() && (padded2d || pads[0] || pads[3]);
  const float negInf = -std::numeric_limits<float>::infinity();
  const std::vector<float> &x = ctx.get(getInput());
  std::vector<float> &out = ctx.output(getOutput());
  kernels::parallelFor(
      ctx.getNumThreads(), planes, 1, [&](int64_t begin, int64_t end) {
        std::vector<float> part(size_t(id * oh * ow)), count(size_t(oh * ow));
        for (int64_t plane = begin; plane < end; ++plane) {
          const float *src = x.data() + plane * id * ih * iw;
          float *dst = out.data() + plane * od * oh * ow;
          // 1. Every depth slice over (H, W), and the real H x W taps.
          for (int64_t z = 0; z < id; ++z)
            for (int64_t oy = 0; oy < oh; ++oy)
              for (int64_t ox = 0; ox < ow; ++ox) {
                float acc = isMax ? negInf : 0.0f, cnt = 0.0f;
                for (int64_t ky = 0; ky < kh; ++ky) {
                  int64_t iy = oy * sh + ky - pt;
                  if (iy < 0 || iy >= ih)
                    continue;
                  for (int64_t kx = 0; kx < kw; ++kx) {
                    int64_t ix = ox * sw + kx - pl;
                    if (ix < 0 || ix >= iw)
                      continue;
                    float v = src[(z * ih + iy) * iw + ix];
                    acc = isMax ? std::max(acc, v) : acc + v;
                    cnt = cnt + 1.0f;
                  }
                }
                part[size_t((z * oh + oy) * ow + ox)] = acc;
                count[size_t(oy * ow + ox)] = cnt;
              }
          // 2. and 3. The depth taps in order, then one division.
          for (int64_t o = 0; o < od; ++o) {
            float depthTaps = 0.0f;
            for (int64_t t = 0; t < kd; ++t) {
              int64_t z = o * sd - pf + t;
              depthTaps += (z >= 0 && z < id) ? 1.0f : 0.0f;
            }
            for (int64_t i = 0; i < oh * ow; ++i) {
              float acc = isMax ? negInf : 0.0f;
              for (int64_t t = 0; t < kd; ++t) {
                int64_t z = o * sd - pf + t;
                if (z < 0 || z >= id)
                  continue;
                float v = part[size_t(z * oh * ow + i)];
                acc = isMax ? std::max(acc, v) : acc + v;
              }
              if (!isMax) {
                float divisor;
                if (!countReal)
                  divisor = float(kd * kh * kw);
                else if (padded2d)
                  divisor = count[size_t(i)] * depthTaps;
                else
                  divisor = depthTaps * float(kh * kw);
                acc = acc / divisor;
              }
              dst[o * oh * ow + i] = acc;
            }
          }
        }
      });
  applyRelu(out, getDoRelu(), getReluLimit().convertToDouble());
  roundResult(ctx, getOutput());
  return success();
}
