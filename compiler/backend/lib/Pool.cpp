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
// 3-D pooling puts the depth slices a tile needs into the local tile's N
// dim, pools all of them over (H, W) with one sPorD into fp32, and combines
// the taps of each output depth with one AR per depth tap over all output
// depths of the tile (max, or add and a single division by the window's
// real element count).
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "tpuc/Backend/LayerGroup.h"

#include <algorithm>
#include <cmath>

namespace tpu::backend {

using namespace detail;

namespace {

/// Real input rows an output range reads, with the pads the command needs
/// (no zero insertion for pooling).
struct Span {
  int64_t begin, count, padBefore, padAfter;
};

/// windowRows (LayerGroup.h) without inserted zeros.
bool spanOf(int64_t o0, int64_t oc, int64_t stride, int64_t pad, int64_t k,
            int64_t dil, int64_t in, Span &s) {
  RowSpan r = windowRows(o0, oc, stride, pad, k, dil, 0, in);
  s = {r.begin, r.count, r.padBefore, r.padAfter};
  return r.count > 0;
}

uint32_t negInfBits(Prec p) { return floatBits(-INFINITY, p); }

/// Grows the tile dim `v` (whose current value fits) up to `hi` while
/// `fits()`, which reads `v`, holds.
void grow(int64_t &v, int64_t hi, const std::function<bool()> &fits) {
  v = largestFitting(v, hi, [&](int64_t x) {
    v = x;
    return fits();
  });
}

} // namespace

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

namespace {

/// The free-stride view of `count` n entries of an EU-aligned tile, from
/// entry `first` on, every `step`-th.
LTensor nView(const LTensor &t, int64_t first, int64_t count, int64_t step) {
  return freeTensor(t.offset + uint64_t(first * t.stride.n) * elemBytes(t.prec),
                    t.prec, {uint32_t(count), t.shape.c, t.shape.h, t.shape.w},
                    {t.stride.n * step, t.stride.c, t.stride.h, t.stride.w});
}

/// Largest field value of AR n / c strides (16 bits).
constexpr int64_t kMaxArStride16 = 0xFFFF;

} // namespace

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
  const isa::ChipParams &chip = em.chip();
  constexpr Prec kF32 = Prec::Fp32;
  Prec pin = p.input.prec, pout = p.output.prec;
  bool isMax = p.kind == PoolKind::Max;
  bool padded2d = p.padTop || p.padBottom || p.padLeft || p.padRight;
  bool countReal =
      !isMax && !p.countIncludePad && (padded2d || p.padFront || p.padBack);
  bool ones2d = countReal && padded2d; // H x W counts from a tile of ones
  bool fused = p.act.kind == UnaryKind::None;
  unsigned temps = fused ? 0 : unaryTemps(p.act.kind);
  bool accIsOut = pout == kF32;

  // Real depth taps of output depth o.
  auto depthTaps = [&](int64_t o) {
    int64_t cnt = 0;
    for (int64_t i = 0; i < p.kernelD; ++i) {
      int64_t z = o * p.strideD - p.padFront + i * p.dilationD;
      cnt += z >= 0 && z < id;
    }
    return cnt;
  };
  for (int64_t o = 0; o < od; ++o)
    if (depthTaps(o) == 0)
      ctx.fail("output depth " + std::to_string(o) + " reads only padding");

  Span cols;
  if (!spanOf(0, ow, p.strideW, p.padLeft, p.kernelW, p.dilationW, iw, cols))
    ctx.fail("the output columns read only padding");
  LocalAlloc alloc(chip, ctx);
  UnaryScratch scratch;
  if (!fused) {
    scratch.tables = alloc.alloc(unaryTableBytes(), "coefficient tables");
    prepareUnaryTables(em, p.act.kind, scratch);
  }
  uint64_t cap = alloc.remaining();
  uint64_t al = chip.localAlign;
  auto up = [&](uint64_t b) { return uint64_t(alignUp(int64_t(b), al)); };
  int64_t npu = chip.npuNum;
  auto rowsFor = [&](int64_t o) {
    return std::min(ih,
                    (o - 1) * p.strideH + (p.kernelH - 1) * p.dilationH + 1);
  };
  auto depthsFor = [&](int64_t o) {
    return std::min(id,
                    (o - 1) * p.strideD + (p.kernelD - 1) * p.dilationD + 1);
  };
  auto u32 = [](int64_t v) { return uint32_t(v); };
  auto inShape = [&](int64_t cT, int64_t odT, int64_t ohT) {
    return Shape4{u32(depthsFor(odT)), u32(cT), u32(rowsFor(ohT)),
                  u32(cols.count)};
  };
  auto partShape = [&](int64_t cT, int64_t odT, int64_t ohT) {
    return Shape4{u32(depthsFor(odT)), u32(cT), u32(ohT), u32(ow)};
  };
  auto outShapeOf = [&](int64_t cT, int64_t odT, int64_t ohT) {
    return Shape4{u32(odT), u32(cT), u32(ohT), u32(ow)};
  };
  auto bytes = [&](int64_t cT, int64_t odT, int64_t ohT) {
    Shape4 ps = partShape(cT, odT, ohT), o = outShapeOf(cT, odT, ohT);
    // AR channel strides are 16-bit: a channel slot of the partial and
    // output tiles must stay below when the tile spans several slots.
    if (cT > npu &&
        (isa::localStrides(chip, ps, 0, kF32, isa::LocalLayout::EuAligned).c >
             kMaxArStride16 ||
         isa::localStrides(chip, o, 0, kF32, isa::LocalLayout::EuAligned).c >
             kMaxArStride16))
      return ~uint64_t(0) / 2;
    uint32_t lanes = u32(std::min<int64_t>(cT, npu));
    uint64_t b = 2 * up(euBytes(chip, pin, inShape(cT, odT, ohT))) +
                 up(euBytes(chip, kF32, ps)) + 2 * up(euBytes(chip, pout, o));
    if (!accIsOut)
      b += up(euBytes(chip, kF32, o));
    if (ones2d)
      b += up(euBytes(chip, kF32,
                      {1, lanes, u32(rowsFor(ohT)), u32(cols.count)})) +
           up(euBytes(chip, kF32, {1, lanes, u32(ohT), u32(ow)}));
    if (countReal)
      b += up(euBytes(chip, kF32, {1, lanes, u32(ohT), u32(ow)}));
    b += temps * up(euBytes(chip, kF32, o));
    return b;
  };
  int64_t cT = std::min<int64_t>(c, npu), odT = 1, ohT = 1;
  if (bytes(cT, 1, 1) > cap)
    ctx.fail("does not fit in local memory: one output row needs " +
             std::to_string(bytes(cT, 1, 1)) + " bytes per lane, " +
             std::to_string(cap) + " are available");
  // Rows, then output depths, then channel slots.
  grow(ohT, std::min<int64_t>(oh, 65535),
       [&] { return bytes(cT, odT, ohT) <= cap; });
  if (ohT == oh) {
    grow(odT, std::min<int64_t>(od, 65535),
         [&] { return bytes(cT, odT, ohT) <= cap; });
    if (odT == od) {
      int64_t slots = 1;
      grow(slots, ceilDiv(std::min<int64_t>(c, 65535), npu),
           [&] { return bytes(std::min(c, slots * npu), odT, ohT) <= cap; });
      cT = std::min(c, slots * npu);
    }
  }
  {
    Shape4 t = shrinkForPipeline(
        chip, {u32(od), u32(c), u32(oh), 1}, {u32(odT), u32(cT), u32(ohT), 1},
        [&](Shape4 x) {
          return euBytes(chip, pin, inShape(x.c, x.n, x.h)) +
                 euBytes(chip, pout, outShapeOf(x.c, x.n, x.h));
        });
    odT = t.n;
    cT = t.c;
    ohT = t.h;
  }
  Shape4 maxIn = inShape(cT, odT, ohT), maxPart = partShape(cT, odT, ohT),
         maxOut = outShapeOf(cT, odT, ohT);
  uint32_t lanes = u32(std::min<int64_t>(cT, npu));
  std::array<uint64_t, 2> inBuf, outBuf;
  for (auto &b : inBuf)
    b = alloc.alloc(euBytes(chip, pin, maxIn), "input tile");
  for (auto &b : outBuf)
    b = alloc.alloc(euBytes(chip, pout, maxOut), "output tile");
  uint64_t partBuf = alloc.alloc(euBytes(chip, kF32, maxPart), "depth slices");
  uint64_t accBuf =
      accIsOut ? 0 : alloc.alloc(euBytes(chip, kF32, maxOut), "accumulator");
  uint64_t onesBuf = 0, countBuf = 0, divBuf = 0;
  if (ones2d) {
    Shape4 onesShape{1, lanes, maxIn.h, maxIn.w};
    onesBuf = alloc.alloc(euBytes(chip, kF32, onesShape), "ones");
    countBuf = alloc.alloc(euBytes(chip, kF32, {1, lanes, maxOut.h, maxOut.w}),
                           "counts");
    ar(em, ArOp::Copy, localTensor(chip, onesBuf, kF32, onesShape),
       Opd::imm(1.0f, kF32));
  }
  if (countReal)
    divBuf = alloc.alloc(euBytes(chip, kF32, {1, lanes, maxOut.h, maxOut.w}),
                         "divisors");
  for (unsigned t = 0; t < temps; ++t)
    scratch.temps.push_back(
        alloc.alloc(euBytes(chip, kF32, maxOut), "scratch tile"));

  struct Step {
    int64_t b, c0, cT, od0, odT, oh0, ohT;
    Span depths, rows;
  };
  std::vector<Step> steps;
  for (int64_t b = 0; b < n; ++b)
    for (Range1 cr : splitRange(c, cT))
      for (Range1 dr : splitRange(od, odT))
        for (Range1 hr : splitRange(oh, ohT)) {
          Step s{b,        cr.begin, cr.size, dr.begin, dr.size,
                 hr.begin, hr.size,  {},      {}};
          if (!spanOf(dr.begin, dr.size, p.strideD, p.padFront, p.kernelD,
                      p.dilationD, id, s.depths) ||
              !spanOf(hr.begin, hr.size, p.strideH, p.padTop, p.kernelH,
                      p.dilationH, ih, s.rows))
            ctx.fail("an output tile reads only padding");
          steps.push_back(s);
        }
  unsigned ein = elemBytes(pin), eout = elemBytes(pout);
  int64_t inPlane = ih * iw, outPlane = oh * ow;
  auto inTile = [&](size_t i) {
    const Step &s = steps[i];
    return localTensor(
        chip, inBuf[i % 2], pin,
        {u32(s.depths.count), u32(s.cT), u32(s.rows.count), u32(cols.count)});
  };
  auto outTile = [&](size_t i) {
    const Step &s = steps[i];
    return localTensor(chip, outBuf[i % 2], pout,
                       outShapeOf(s.cT, s.odT, s.ohT));
  };
  withCtx(ctx, [&] {
    pipeline(
        steps.size(),
        [&](size_t i) {
          const Step &s = steps[i];
          LTensor t = inTile(i);
          int64_t at = (s.b * c + s.c0) * id * inPlane +
                       s.depths.begin * inPlane + s.rows.begin * iw +
                       cols.begin;
          DView v{p.input.addr + uint64_t(at) * ein,
                  pin,
                  t.shape,
                  {inPlane, id * inPlane, iw, 1}};
          load(em, v, t);
        },
        [&](size_t i) {
          const Step &s = steps[i];
          LTensor in = inTile(i);
          LTensor out = outTile(i);
          // 2-D pooling of every depth slice (the slices are the tile's n).
          LTensor part = localTensor(
              chip, partBuf, kF32,
              {u32(s.depths.count), u32(s.cT), u32(s.ohT), u32(ow)});
          PorDCmd cmd;
          cmd.input = in;
          cmd.output = part;
          cmd.kh = unsigned(p.kernelH);
          cmd.kw = unsigned(p.kernelW);
          cmd.strideH = unsigned(p.strideH);
          cmd.strideW = unsigned(p.strideW);
          cmd.dilH = unsigned(p.dilationH);
          cmd.dilW = unsigned(p.dilationW);
          cmd.padT = unsigned(s.rows.padBefore);
          cmd.padB = unsigned(s.rows.padAfter);
          cmd.padL = unsigned(cols.padBefore);
          cmd.padR = unsigned(cols.padAfter);
          if (isMax) {
            cmd.kind = PorDCmd::MaxPool;
            cmd.padBits = negInfBits(pin);
          } else {
            cmd.kind = PorDCmd::AvgPool;
            cmd.avgScale = 1.0f; // window sums
          }
          pord(em, cmd);
          // Combine the depth taps: acc[o] = max / sum over taps i of
          // part[o * sd - pf + i * dd - depths.begin], each tap one AR over
          // the output depths it is real for.
          LTensor acc =
              accIsOut ? out : localTensor(chip, accBuf, kF32, out.shape);
          ar(em, ArOp::Copy, acc, Opd::imm(isMax ? -INFINITY : 0.0f, kF32));
          ArOp combine = isMax ? ArOp::Max : ArOp::Add;
          bool vector = acc.stride.n <= kMaxArStride16 &&
                        part.stride.n * p.strideD <= kMaxArStride16;
          for (int64_t t = 0; t < p.kernelD; ++t) {
            int64_t off = p.padFront - t * p.dilationD; // z = o*sd - off
            int64_t lo =
                std::max(s.od0, ceilDiv(std::max<int64_t>(off, 0), p.strideD));
            int64_t hiZ = id - 1 + off; // o*sd <= hiZ
            if (hiZ < 0)
              continue;
            int64_t hi = std::min(s.od0 + s.odT - 1, hiZ / p.strideD);
            if (lo > hi)
              continue;
            int64_t z0 = lo * p.strideD - off - s.depths.begin;
            auto one = [&](int64_t o0, int64_t cnt) {
              LTensor a = nView(acc, o0 - s.od0, cnt, 1);
              LTensor b =
                  nView(part, z0 + (o0 - lo) * p.strideD, cnt, p.strideD);
              ar(em, combine, a, Opd::of(a), Opd::of(b));
            };
            if (vector)
              one(lo, hi - lo + 1);
            else
              for (int64_t o = lo; o <= hi; ++o)
                one(o, 1);
          }
          if (isMax) {
            if (!accIsOut)
              ar(em, ArOp::Cast, out, Opd::of(acc));
          } else if (!countReal) {
            float k = float(p.kernelD * p.kernelH * p.kernelW);
            ar(em, ArOp::Div, out, Opd::of(acc), Opd::imm(k, kF32));
          } else {
            // Divisor per output element: real H x W taps (the same pooling
            // over ones, one tile per lane) times the real depth taps.
            uint32_t l = u32(std::min<int64_t>(s.cT, npu));
            Shape4 cs{1, l, u32(s.ohT), u32(ow)};
            LTensor cnt = localTensor(chip, countBuf, kF32, cs);
            if (ones2d) {
              PorDCmd cc = cmd;
              cc.kind = PorDCmd::AvgPool;
              cc.avgScale = 1.0f;
              cc.padBits = 0;
              cc.input =
                  localTensor(chip, onesBuf, kF32,
                              {1, l, u32(s.rows.count), u32(cols.count)});
              cc.output = cnt;
              pord(em, cc);
            }
            LTensor dv = localTensor(chip, divBuf, kF32, cs);
            LTensor dvAll =
                freeTensor(divBuf, kF32, {1, u32(s.cT), u32(s.ohT), u32(ow)},
                           {0, 0, int64_t(ow), 1});
            for (int64_t o = 0; o < s.odT; ++o) {
              float dt = float(depthTaps(s.od0 + o));
              if (ones2d)
                ar(em, ArOp::Mul, dv, Opd::of(cnt), Opd::imm(dt, kF32));
              LTensor a = nView(acc, o, 1, 1);
              LTensor r = nView(out, o, 1, 1);
              if (ones2d)
                ar(em, ArOp::Div, r, Opd::of(a), Opd::of(dvAll));
              else
                ar(em, ArOp::Div, r, Opd::of(a),
                   Opd::imm(dt * float(p.kernelH * p.kernelW), kF32));
            }
          }
          if (!fused)
            emitUnary(em, p.act, out, out, scratch);
        },
        [&](size_t i) {
          const Step &s = steps[i];
          LTensor t = outTile(i);
          int64_t at =
              (s.b * c + s.c0) * od * outPlane + s.od0 * outPlane + s.oh0 * ow;
          DView v{p.output.addr + uint64_t(at) * eout,
                  pout,
                  t.shape,
                  {outPlane, od * outPlane, ow, 1}};
          store(em, t, v);
        });
  });
}

} // namespace tpu::backend
