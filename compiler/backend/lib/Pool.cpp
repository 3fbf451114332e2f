//===- Pool.cpp - Max and average pooling ---------------------------------===//
//
// sPorD max / avg pooling on tiles of (N, C, output rows, all columns),
// double-buffered like the convolutions. Max pooling pads with -inf.
// Average pooling divides by the whole window (the command's scale
// immediate) unless padding must not count (ONNX count_include_pad = 0):
// then the window sums are divided by the number of real elements under
// each window, counted by the same pooling over a tile of ones.
//
// A global pool whose window does not fit local memory runs as a reduce.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

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

bool spanOf(int64_t o0, int64_t oc, int64_t stride, int64_t pad, int64_t k,
            int64_t dil, int64_t in, Span &s) {
  int64_t v0 = o0 * stride - pad;
  int64_t v1 = (o0 + oc - 1) * stride - pad + (k - 1) * dil + 1;
  int64_t a = std::max<int64_t>(v0, 0), b = std::min(v1, in);
  if (b <= a)
    return false;
  s = {a, b - a, a - v0, v1 - b};
  return true;
}

uint32_t negInfBits(Prec p) { return floatBits(-INFINITY, p); }

} // namespace

void pool2d(CmdEmitter &em, const PoolParams &p) {
  OpCtx ctx{"pool2d", p.name};
  requireFloat(ctx, p.input, "input");
  requireFloat(ctx, p.output, "output");
  if (p.input.shape.size() != 4 || p.output.shape.size() != 4)
    ctx.fail("input and output must have rank 4");
  int64_t n = p.input.shape[0], c = p.input.shape[1], ih = p.input.shape[2],
          iw = p.input.shape[3];
  int64_t oh = p.output.shape[2], ow = p.output.shape[3];
  if (p.output.shape[0] != n || p.output.shape[1] != c)
    ctx.fail("input and output batch / channels differ");
  bool padded = p.padTop || p.padBottom || p.padLeft || p.padRight;
  bool global =
      p.kernelH == ih && p.kernelW == iw && !padded && oh == 1 && ow == 1;
  const isa::ChipParams &chip = em.chip();
  Prec pin = p.input.prec, pout = p.output.prec;
  bool countReal = p.kind == PoolKind::Avg && padded && !p.countIncludePad;
  bool fused = p.act.kind == UnaryKind::None;
  unsigned temps = fused ? 0 : unaryTemps(p.act.kind);

  Span cols;
  if (!spanOf(0, ow, p.strideW, p.padLeft, p.kernelW, p.dilationW, iw, cols))
    ctx.fail("the output columns read only padding");
  LocalAlloc alloc(chip, ctx);
  UnaryScratch scratch;
  if (!fused) {
    scratch.tables = alloc.alloc(unaryTableBytes(), "coefficient tables");
    prepareUnaryTables(em, p.act.kind, scratch);
  }
  uint64_t cap = alloc.capacity() - alloc.used();
  uint64_t al = chip.localAlign;
  auto up = [&](uint64_t b) { return uint64_t(alignUp(int64_t(b), al)); };
  int64_t npu = chip.npuNum;
  auto rowsFor = [&](int64_t o) {
    return std::min(ih,
                    (o - 1) * p.strideH + (p.kernelH - 1) * p.dilationH + 1);
  };
  auto bytes = [&](int64_t nT, int64_t cT, int64_t ohT) {
    Shape4 is{uint32_t(nT), uint32_t(cT), uint32_t(rowsFor(ohT)),
              uint32_t(cols.count)};
    Shape4 os{uint32_t(nT), uint32_t(cT), uint32_t(ohT), uint32_t(ow)};
    uint64_t b =
        2 * up(euBytes(chip, pin, is)) + 2 * up(euBytes(chip, pout, os));
    if (countReal) {
      uint32_t lanes = uint32_t(std::min<int64_t>(cT, npu));
      b +=
          up(euBytes(chip, Prec::Fp32,
                     {1, lanes, uint32_t(rowsFor(ohT)), uint32_t(cols.count)}));
      b += up(
          euBytes(chip, Prec::Fp32, {1, lanes, uint32_t(ohT), uint32_t(ow)}));
      b += up(euBytes(chip, Prec::Fp32, os));
    }
    b += temps * up(euBytes(chip, Prec::Fp32, os));
    return b;
  };
  if (bytes(1, std::min<int64_t>(c, npu), 1) > cap) {
    if (global && fused) {
      reduce(em, {p.name,
                  p.input,
                  p.output,
                  p.kind == PoolKind::Max ? ReduceKind::Max : ReduceKind::Mean,
                  {2, 3}});
      return;
    }
    ctx.fail("does not fit in local memory: one output row needs " +
             std::to_string(bytes(1, std::min<int64_t>(c, npu), 1)) +
             " bytes per lane, " + std::to_string(cap) + " are available");
  }
  // Rows first, then channel slots, then batch.
  int64_t cT = std::min<int64_t>(c, npu), ohT = 1, nT = 1;
  auto grow = [&](int64_t &v, int64_t hi, const std::function<bool()> &ok) {
    int64_t lo = v;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo + 1) / 2;
      v = mid;
      if (ok())
        lo = mid;
      else
        hi = mid - 1;
    }
    v = lo;
  };
  grow(ohT, oh, [&] { return bytes(nT, cT, ohT) <= cap; });
  if (ohT == oh) {
    int64_t slots = 1;
    grow(slots, ceilDiv(std::min<int64_t>(c, 65535), npu),
         [&] { return bytes(nT, std::min(c, slots * npu), ohT) <= cap; });
    cT = std::min(c, slots * npu);
    if (cT == c)
      grow(nT, n, [&] { return bytes(nT, cT, ohT) <= cap; });
  }
  {
    Shape4 t = shrinkForPipeline(
        chip, {uint32_t(n), uint32_t(c), uint32_t(oh), 1},
        {uint32_t(nT), uint32_t(cT), uint32_t(ohT), 1}, [&](Shape4 x) {
          return euBytes(
                     chip, pin,
                     {x.n, x.c, uint32_t(rowsFor(x.h)), uint32_t(cols.count)}) +
                 euBytes(chip, pout, {x.n, x.c, x.h, uint32_t(ow)});
        });
    nT = t.n;
    cT = t.c;
    ohT = t.h;
  }
  Shape4 maxIn{uint32_t(nT), uint32_t(cT), uint32_t(rowsFor(ohT)),
               uint32_t(cols.count)};
  Shape4 maxOut{uint32_t(nT), uint32_t(cT), uint32_t(ohT), uint32_t(ow)};
  std::array<uint64_t, 2> inBuf, outBuf;
  for (auto &b : inBuf)
    b = alloc.alloc(euBytes(chip, pin, maxIn), "input tile");
  for (auto &b : outBuf)
    b = alloc.alloc(euBytes(chip, pout, maxOut), "output tile");
  uint64_t onesBuf = 0, countBuf = 0, sumBuf = 0;
  uint32_t lanes = uint32_t(std::min<int64_t>(cT, npu));
  if (countReal) {
    Shape4 onesShape{1, lanes, maxIn.h, maxIn.w};
    onesBuf = alloc.alloc(euBytes(chip, Prec::Fp32, onesShape), "ones");
    countBuf = alloc.alloc(
        euBytes(chip, Prec::Fp32, {1, lanes, maxOut.h, maxOut.w}), "counts");
    sumBuf = alloc.alloc(euBytes(chip, Prec::Fp32, maxOut), "sums");
    ar(em, ArOp::Copy, localTensor(chip, onesBuf, Prec::Fp32, onesShape),
       Opd::imm(1.0f, Prec::Fp32));
  }
  for (unsigned t = 0; t < temps; ++t)
    scratch.temps.push_back(
        alloc.alloc(euBytes(chip, Prec::Fp32, maxOut), "scratch tile"));

  struct Step {
    int64_t n0, nT, c0, cT, oh0, ohT;
    Span rows;
  };
  std::vector<Step> steps;
  for (Range1 nr : splitRange(n, nT))
    for (Range1 cr : splitRange(c, cT))
      for (Range1 hr : splitRange(oh, ohT)) {
        Step s{nr.begin, nr.size, cr.begin, cr.size, hr.begin, hr.size, {}};
        if (!spanOf(hr.begin, hr.size, p.strideH, p.padTop, p.kernelH,
                    p.dilationH, ih, s.rows))
          ctx.fail("output rows read only padding");
        steps.push_back(s);
      }
  DView inView =
      denseView(p.input.addr, pin,
                {uint32_t(n), uint32_t(c), uint32_t(ih), uint32_t(iw)});
  DView outView =
      denseView(p.output.addr, pout,
                {uint32_t(n), uint32_t(c), uint32_t(oh), uint32_t(ow)});
  auto inTile = [&](size_t i) {
    const Step &s = steps[i];
    return localTensor(chip, inBuf[i % 2], pin,
                       {uint32_t(s.nT), uint32_t(s.cT), uint32_t(s.rows.count),
                        uint32_t(cols.count)});
  };
  auto outShape = [&](const Step &s) {
    return Shape4{uint32_t(s.nT), uint32_t(s.cT), uint32_t(s.ohT),
                  uint32_t(ow)};
  };
  auto outTile = [&](size_t i) {
    return localTensor(chip, outBuf[i % 2], pout, outShape(steps[i]));
  };
  auto fill = [&](PorDCmd &cmd, const Step &s) {
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
  };
  withCtx(ctx, [&] {
    pipeline(
        steps.size(),
        [&](size_t i) {
          const Step &s = steps[i];
          load(em,
               subView(inView,
                       {uint32_t(s.n0), uint32_t(s.c0), uint32_t(s.rows.begin),
                        uint32_t(cols.begin)},
                       inTile(i).shape),
               inTile(i));
        },
        [&](size_t i) {
          const Step &s = steps[i];
          LTensor out = outTile(i);
          PorDCmd cmd;
          fill(cmd, s);
          cmd.input = inTile(i);
          if (p.kind == PoolKind::Max) {
            cmd.kind = PorDCmd::MaxPool;
            cmd.padBits = negInfBits(pin);
            cmd.output = out;
            pord(em, cmd);
          } else if (!countReal) {
            cmd.kind = PorDCmd::AvgPool;
            cmd.output = out;
            pord(em, cmd);
          } else {
            cmd.kind = PorDCmd::AvgPool;
            cmd.avgScale = 1.0f;
            LTensor sum = localTensor(chip, sumBuf, Prec::Fp32, out.shape);
            cmd.output = sum;
            pord(em, cmd);
            // Counts: the same window sums over ones (one tile per lane).
            uint32_t l = uint32_t(std::min<int64_t>(s.cT, npu));
            PorDCmd cc = cmd;
            cc.input = localTensor(
                chip, onesBuf, Prec::Fp32,
                {1, l, uint32_t(s.rows.count), uint32_t(cols.count)});
            LTensor cnt = localTensor(chip, countBuf, Prec::Fp32,
                                      {1, l, uint32_t(s.ohT), uint32_t(ow)});
            cc.output = cnt;
            pord(em, cc);
            LTensor cb = freeTensor(countBuf, Prec::Fp32, out.shape,
                                    {0, 0, int64_t(ow), 1});
            ar(em, ArOp::Div, out, Opd::of(sum), Opd::of(cb));
          }
          if (!fused)
            emitUnary(em, p.act, out, out, scratch);
        },
        [&](size_t i) {
          const Step &s = steps[i];
          store(em, outTile(i),
                subView(outView,
                        {uint32_t(s.n0), uint32_t(s.c0), uint32_t(s.oh0), 0},
                        outShape(s)));
        });
  });
}

} // namespace tpu::backend
