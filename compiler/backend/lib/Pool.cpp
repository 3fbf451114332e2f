//===- Pool.cpp - Max and average pooling ---------------------------------===//
//
// 2-D pooling runs as a group of one (runAlone, LayerGroup.h; the local
// op's tile is sPorD max / avg pooling: max pads with -inf; average
// divides by the whole window, the command's scale immediate, unless
// padding must not count, ONNX count_include_pad = 0: then the window sums
// are divided by the number of real elements under each window, counted
// by the same pooling over a tile of ones). A global pool whose window
// does not fit local memory runs as a reduce.
//
// 3-D pooling runs as groups of one too, of a 2-D pooling with depth taps
// (PoolParams::depth): per batch and run of output depths that read the
// same real depth taps, one input per tap, the depth slice each output
// depth reads at that tap on N (its depth stride times the depth stride of
// the window). Each tap is pooled over (H, W) by sPorD into fp32 and the
// taps combined by one AR each (max, or add and a single division by the
// window's real element count).
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "tpuc/Backend/LayerGroup.h"

#include <algorithm>
#include <cmath>

namespace tpu::backend {

using namespace detail;

void pool2d(CmdEmitter &em, const PoolParams &p) {
  OpCtx ctx{"pool2d", p.name};
  const bool integer = !isa::isFloat(p.input.prec);
  if (integer) {
    if (p.input.prec != Prec::Int8 || p.output.prec != Prec::Int8)
      ctx.fail("integer pooling takes int8 / uint8 input and output");
    if (p.kind == PoolKind::Avg && !p.quant)
      ctx.fail("integer average pooling needs its requantisation");
    if (p.kind == PoolKind::Max && p.input.isSigned != p.output.isSigned)
      ctx.fail("integer max pooling keeps the input's type");
    if (p.act.kind != UnaryKind::None)
      ctx.fail("integer pooling takes no fused activation");
  } else {
    requireFloat(ctx, p.input, "input");
    requireFloat(ctx, p.output, "output");
  }
  if (p.input.shape.size() != 4 || p.output.shape.size() != 4)
    ctx.fail("input and output must have rank 4");
  int64_t ih = p.input.shape[2], iw = p.input.shape[3];
  if (p.output.shape[0] != p.input.shape[0] ||
      p.output.shape[1] != p.input.shape[1])
    ctx.fail("input and output batch / channels differ");
  // Every 2-D pooling the chip runs has a local form: alone, a group of
  // one (its tile: sPorD, the INT8 requantisation, the counts of an
  // average that excludes the pads, the fused function).
  std::string why;
  if (runAlone(em, "pool2d", p, {p.input}, p.output, &why))
    return;
  // A global pooling whose window does not fit local memory (a group
  // cannot cut a window) runs as a reduction, which can.
  bool padded = p.padTop || p.padBottom || p.padLeft || p.padRight;
  bool global = p.kernelH == ih && p.kernelW == iw && !padded &&
                p.output.shape[2] == 1 && p.output.shape[3] == 1;
  if (global && !integer && p.act.kind == UnaryKind::None) {
    reduce(em, {p.name,
                p.input,
                p.output,
                p.kind == PoolKind::Max ? ReduceKind::Max : ReduceKind::Mean,
                {2, 3}});
    return;
  }
  ctx.fail("does not fit in local memory: " + why);
}

//===----------------------------------------------------------------------===//
// 3-D pooling
//===----------------------------------------------------------------------===//

void pool3d(CmdEmitter &em, const Pool3dParams &p) {
  OpCtx ctx{"pool3d", p.name};
  requireFloat(ctx, p.input, "input");
  requireFloat(ctx, p.output, "output");
  if (p.input.shape.size() != 5 || p.output.shape.size() != 5)
    ctx.fail("input and output must have rank 5 (N, C, D, H, W)");
  const std::vector<int64_t> &is = p.input.shape, &os = p.output.shape;
  int64_t n = is[0], c = is[1], id = is[2], ih = is[3], iw = is[4];
  int64_t od = os[2], oh = os[3], ow = os[4];
  if (os[0] != n || os[1] != c)
    ctx.fail("input and output batch / channels differ");
  for (int64_t v : {p.kernelD, p.kernelH, p.kernelW, p.strideD, p.strideH,
                    p.strideW, p.dilationD, p.dilationH, p.dilationW})
    if (v < 1)
      ctx.fail("kernel, strides and dilations must be positive");
  for (int64_t v :
       {p.padFront, p.padBack, p.padTop, p.padBottom, p.padLeft, p.padRight})
    if (v < 0)
      ctx.fail("pads must not be negative");
  // The ONNX output size (floor): no window overhangs the pads.
  auto outSize = [](int64_t in, int64_t pb, int64_t pe, int64_t k, int64_t s,
                    int64_t d) {
    return (in + pb + pe - ((k - 1) * d + 1)) / s + 1;
  };
  int64_t wantD = outSize(id, p.padFront, p.padBack, p.kernelD, p.strideD,
                          p.dilationD),
          wantH = outSize(ih, p.padTop, p.padBottom, p.kernelH, p.strideH,
                          p.dilationH),
          wantW = outSize(iw, p.padLeft, p.padRight, p.kernelW, p.strideW,
                          p.dilationW);
  if (od != wantD || oh != wantH || ow != wantW)
    ctx.fail("output spatial shape " + std::to_string(od) + "x" +
             std::to_string(oh) + "x" + std::to_string(ow) +
             " does not match the window arithmetic (" + std::to_string(wantD) +
             "x" + std::to_string(wantH) + "x" + std::to_string(wantW) +
             "; fold ceil mode into the end pads)");
  // The runs of output depths with the same real depth taps; each batch
  // and each run is a group of one whose inputs are those taps' depth
  // slices, viewed with the output depth on N.
  struct Run {
    int64_t o0, count;
    std::vector<int64_t> taps;
  };
  std::vector<Run> runs;
  for (int64_t o = 0; o < od; ++o) {
    std::vector<int64_t> taps;
    for (int64_t t = 0; t < p.kernelD; ++t) {
      int64_t z = o * p.strideD - p.padFront + t * p.dilationD;
      if (z >= 0 && z < id)
        taps.push_back(t);
    }
    if (taps.empty())
      ctx.fail("output depth " + std::to_string(o) + " reads only padding");
    if (!runs.empty() && runs.back().taps == taps)
      ++runs.back().count;
    else
      runs.push_back({o, 1, std::move(taps)});
  }
  PoolParams q;
  q.name = p.name;
  q.kind = p.kind;
  q.kernelH = p.kernelH;
  q.kernelW = p.kernelW;
  q.strideH = p.strideH;
  q.strideW = p.strideW;
  q.dilationH = p.dilationH;
  q.dilationW = p.dilationW;
  q.padTop = p.padTop;
  q.padBottom = p.padBottom;
  q.padLeft = p.padLeft;
  q.padRight = p.padRight;
  q.countIncludePad = p.countIncludePad;
  q.act = p.act;
  int64_t inPlane = ih * iw, outPlane = oh * ow;
  unsigned ein = elemBytes(p.input.prec), eout = elemBytes(p.output.prec);
  for (int64_t b = 0; b < n; ++b)
    for (const Run &run : runs) {
      int64_t o0 = run.o0, cnt = run.count;
      q.depth = PoolParams::Depth{p.kernelD, int64_t(run.taps.size()),
                                  p.padFront > 0 || p.padBack > 0};
      std::vector<GTensor> ins;
      AloneStrides strides;
      for (int64_t t : run.taps) {
        int64_t z = o0 * p.strideD - p.padFront + t * p.dilationD;
        GTensor v = p.input;
        v.addr += uint64_t(((b * c) * id + z) * inPlane) * ein;
        v.shape = {cnt, c, ih, iw};
        ins.push_back(v);
        strides.push_back(
            isa::Stride4{p.strideD * inPlane, id * inPlane, iw, 1});
      }
      GTensor out = p.output;
      out.addr += uint64_t(((b * c) * od + o0) * outPlane) * eout;
      out.shape = {cnt, c, oh, ow};
      strides.push_back(isa::Stride4{outPlane, od * outPlane, ow, 1});
      q.output = out;
      q.input = ins[0];
      runAlone(em, "pool3d", q, ins, out, nullptr, strides);
    }
}

} // namespace tpu::backend
