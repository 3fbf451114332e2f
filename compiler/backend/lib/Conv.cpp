//===- Conv.cpp - Convolutions and their weight layouts -------------------===//
//
// conv2d and convTranspose2d. Slicing: the output is cut into tiles of
// (N, output channels, output rows, all columns); all input channels of a
// group stay in one tile, so one command computes a tile. Weights (and
// bias) are loaded once per output-channel tile and kept while the spatial
// tiles of that channel tile run; input and output tiles are
// double-buffered, so GDMA loads the next input rows while the TIU
// convolves. The tile search prefers all output channels of a group (their
// weights loaded once), then as many output rows as fit. The output tiles
// start on a new local-memory bank behind the weights and input tiles when
// that costs at most some rows, so a convolution never writes a bank it
// reads (LocalAlloc::startNewBank).
//
// A transposed convolution runs as the convolution of the zero-inserted
// input (opd0_*_ins0 = stride - 1) with the kernel rotated by 180 degrees
// (kernel_rotate) and pads dilation * (k - 1) - pad; pads that turn
// negative crop the input instead.
//
// Depthwise convolutions (one input channel per group) use sPorD
// depthwise with (1, C, kh, kw) weights and a per-channel bias in the
// input precision (converted from the fp32 bias in local memory).
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "tpuc/Backend/LayerGroup.h"

#include <algorithm>

namespace tpu::backend {

using namespace detail;

namespace {

/// Geometry of one convolution (a transposed one already rewritten).
struct ConvGeo {
  int64_t n, ic, ih, iw, oc, oh, ow;
  int64_t groups, icg, ocg;
  int64_t kh, kw, sh, sw, dh, dw, insH, insW;
  int64_t padT, padL; ///< May be negative: the input is cropped.
  bool rotate;
};

/// The real input rows (or columns) a range of outputs reads, and the
/// padding the command needs before and after them.
struct InSpan {
  int64_t begin = 0, count = 0, padBefore = 0, padAfter = 0;
};

/// windowRows (LayerGroup.h), the one form of the backward rule.
bool inputSpan(int64_t o0, int64_t oCount, int64_t stride, int64_t pad,
               int64_t k, int64_t dil, int64_t ins, int64_t inSize,
               InSpan &span) {
  RowSpan r = windowRows(o0, oCount, stride, pad, k, dil, ins, inSize);
  span = {r.begin, r.count, r.padBefore, r.padAfter};
  return r.count > 0;
}

/// Upper bound of the real rows an output tile of `o` rows reads.
int64_t rowsFor(int64_t o, int64_t stride, int64_t k, int64_t dil, int64_t ins,
                int64_t inSize) {
  int64_t virt = (o - 1) * stride + (k - 1) * dil + 1;
  return std::min(inSize, virt / (ins + 1) + 1);
}

struct Plan {
  int64_t ocT = 0, nT = 0, ohT = 0;
  unsigned wCopies = 1;
};

/// Shared driver of conv2d, convTranspose2d and depthwise.
struct ConvJob {
  OpCtx ctx;
  ConvGeo g;
  Prec inPrec, outPrec;
  uint64_t inAddr, outAddr, filterAddr;
  std::optional<uint64_t> biasAddr;
  Activation act;
  bool depthwise;
  /// Integer convolution: see ConvQuant.
  std::optional<ConvQuant> quant;
  bool inSigned = true, outSigned = true;
};

void runConv(CmdEmitter &em, const ConvJob &job) {
  const isa::ChipParams &chip = em.chip();
  const ConvGeo &g = job.g;
  const OpCtx &ctx = job.ctx;
  int64_t npu = chip.npuNum;
  unsigned eb = elemBytes(job.inPrec);
  // The filter tile of one output channel and its element count.
  Shape4 filter1 =
      convFilterTile(chip, job.inPrec, 1, g.icg, g.kh, g.kw, job.depthwise);
  int64_t wPerOc = int64_t(filter1.h) * filter1.w;
  // Input columns: the whole width span.
  InSpan cols;
  if (!inputSpan(0, g.ow, g.sw, g.padL, g.kw, g.dw, g.insW, g.iw, cols))
    ctx.fail("the output columns read only padding");
  bool relu = job.act.kind == UnaryKind::Relu;
  unsigned temps = relu ? 0 : unaryTemps(job.act.kind);
  bool hasBias = job.biasAddr.has_value();
  bool fusedAct = job.act.kind == UnaryKind::None || relu;
  // INT8: int32 accumulator tile, int32 bias (compact) and the RQ1 records
  // (EU-aligned (1, oc, 1, 3) int32) per weight copy.
  const bool quant = job.quant.has_value();
  if (quant && job.act.kind != UnaryKind::None)
    ctx.fail("an integer convolution takes no fused activation");
  if (quant)
    hasBias = false;
  // sPorD's result takes the input's sign: a depthwise sum of an unsigned
  // input would saturate at 0 (the lowering keeps such inputs signed).
  if (quant && job.depthwise && !job.inSigned)
    ctx.fail("an integer depthwise convolution needs a signed input");

  LocalAlloc alloc(chip, ctx);
  UnaryScratch scratch;
  if (!fusedAct) {
    scratch.tables = alloc.alloc(unaryTableBytes(), "coefficient tables");
    prepareUnaryTables(em, job.act.kind, scratch);
  }
  uint64_t cap = alloc.remaining();
  uint64_t align = chip.localAlign;
  auto al = [&](uint64_t b) { return uint64_t(alignUp(int64_t(b), align)); };
  // Channels that share a tile's input: the group's input channels (general)
  // or the tile's own channels (depthwise).
  auto inChannels = [&](int64_t ocT) { return job.depthwise ? ocT : g.icg; };
  auto wBytes = [&](int64_t ocT) {
    return al(uint64_t(ceilDiv(ocT, npu) * wPerOc) * eb);
  };
  auto biasBytes = [&](int64_t ocT) {
    if (quant)
      return al(uint64_t(ceilDiv(ocT, npu)) * 4) +
             al(euBytes(chip, Prec::Int32, {1, uint32_t(ocT), 1, 3}));
    if (!hasBias)
      return uint64_t(0);
    uint64_t slots = uint64_t(ceilDiv(ocT, npu));
    // Depthwise keeps the fp32 bias and its converted copy.
    return al(slots * sizeof(float)) + (job.depthwise ? al(slots * eb) : 0);
  };
  auto inBytes = [&](int64_t ocT, int64_t nT, int64_t ohT) {
    int64_t rows = rowsFor(ohT, g.sh, g.kh, g.dh, g.insH, g.ih);
    return euBytes(chip, job.inPrec,
                   {uint32_t(nT), uint32_t(inChannels(ocT)), uint32_t(rows),
                    uint32_t(cols.count)});
  };
  auto outShape = [&](int64_t ocT, int64_t nT, int64_t ohT) {
    return Shape4{uint32_t(nT), uint32_t(ocT), uint32_t(ohT), uint32_t(g.ow)};
  };
  // The buffers the convolution reads (weights, bias, input tiles) come
  // first, the ones it writes (output tiles, activation scratch) after them.
  auto readBytes = [&](const Plan &p) {
    return p.wCopies * (wBytes(p.ocT) + biasBytes(p.ocT)) +
           2 * al(inBytes(p.ocT, p.nT, p.ohT));
  };
  auto writeBytes = [&](const Plan &p) {
    Shape4 os = outShape(p.ocT, p.nT, p.ohT);
    return 2 * al(euBytes(chip, job.outPrec, os)) +
           temps * al(euBytes(chip, Prec::Fp32, os)) +
           (quant ? al(euBytes(chip, Prec::Int32, os)) : 0);
  };
  // With `apart`, the written buffers start on a new bank, so that the
  // command's result shares no bank with its operands (bank conflicts).
  uint64_t base = al(alloc.used());
  auto total = [&](const Plan &p, bool apart) {
    uint64_t r = readBytes(p);
    return r + (apart ? alloc.toNextBank(base + r) : 0) + writeBytes(p);
  };
  // Tile search: output channels (all, then multiples of the lanes), then
  // rows, then batch. Keeping reads and writes in separate banks comes
  // after the channel tile (which decides how often the input is loaded)
  // but before the row count.
  Plan plan;
  std::vector<int64_t> ocCands{g.ocg};
  for (int64_t s = ceilDiv(g.ocg, npu) - 1; s >= 1; --s)
    ocCands.push_back(s * npu);
  for (int64_t ocT : ocCands) {
    bool several = ocT < g.ocg || g.groups > 1;
    for (unsigned copies : {several ? 2u : 1u, 1u}) {
      Plan p{ocT, 1, 1, copies};
      if (total(p, false) > cap)
        continue;
      bool apart = total(p, true) <= cap;
      // Grows one dim of p as far as the plan fits.
      auto grow = [&](int64_t Plan::*dim, int64_t hi) {
        p.*dim = largestFitting(1, hi, [&](int64_t v) {
          Plan q = p;
          q.*dim = v;
          return total(q, apart) <= cap;
        });
      };
      grow(&Plan::ohT, g.oh);
      if (p.ohT == g.oh)
        grow(&Plan::nT, g.n);
      plan = p;
      break;
    }
    if (plan.ocT)
      break;
  }
  if (!plan.ocT) {
    Plan one{std::min<int64_t>(g.ocg, npu), 1, 1, 1};
    ctx.fail("does not fit in local memory: one output row of " +
             std::to_string(one.ocT) + " channels needs " +
             std::to_string(total(one, false)) + " bytes per lane (input " +
             std::to_string(inBytes(one.ocT, 1, 1)) + ", weights " +
             std::to_string(wBytes(one.ocT)) + "), " + std::to_string(cap) +
             " are available");
  }

  // Enough steps to overlap loads with convolutions (rows, then batch:
  // shrinkForPipeline's order is batch first, which keeps the weights).
  {
    Shape4 whole{uint32_t(g.n), uint32_t(g.ocg), uint32_t(g.oh), 1};
    Shape4 t = shrinkForPipeline(
        chip, whole,
        {uint32_t(plan.nT), uint32_t(g.ocg), uint32_t(plan.ohT), 1},
        [&](Shape4 x) {
          return inBytes(plan.ocT, x.n, x.h) +
                 euBytes(chip, job.outPrec, outShape(plan.ocT, x.n, x.h));
        });
    int64_t ocSteps = g.groups * ceilDiv(g.ocg, plan.ocT);
    if (ocSteps == 1) {
      plan.nT = t.n;
      plan.ohT = t.h;
    }
  }

  // Buffers.
  std::vector<uint64_t> wBuf(plan.wCopies), bBuf(plan.wCopies),
      bConv(plan.wCopies), rqBuf(plan.wCopies), rq2Buf(plan.wCopies);
  const bool twoSteps = quant && job.quant->twoSteps;
  for (unsigned i = 0; i < plan.wCopies; ++i) {
    wBuf[i] = alloc.alloc(wBytes(plan.ocT), "weights");
    if (quant) {
      bBuf[i] = alloc.alloc(uint64_t(ceilDiv(plan.ocT, npu)) * 4, "bias");
      rqBuf[i] = alloc.alloc(
          euBytes(chip, Prec::Int32, {1, uint32_t(plan.ocT), 1, 3}),
          "requantisation records");
      if (twoSteps)
        rq2Buf[i] = alloc.alloc(
            euBytes(chip, Prec::Int32, {1, uint32_t(plan.ocT), 1, 3}),
            "second requantisation records");
    }
    if (hasBias) {
      uint64_t slots = uint64_t(ceilDiv(plan.ocT, npu));
      bBuf[i] = alloc.alloc(slots * sizeof(float), "bias");
      if (job.depthwise)
        bConv[i] = alloc.alloc(slots * eb, "bias");
    }
  }
  std::array<uint64_t, 2> inBuf, outBuf;
  for (auto &b : inBuf)
    b = alloc.alloc(inBytes(plan.ocT, plan.nT, plan.ohT), "input tile");
  Shape4 maxOut = outShape(plan.ocT, plan.nT, plan.ohT);
  alloc.startNewBank(writeBytes(plan));
  for (auto &b : outBuf)
    b = alloc.alloc(euBytes(chip, job.outPrec, maxOut), "output tile");
  for (unsigned t = 0; t < temps; ++t)
    scratch.temps.push_back(
        alloc.alloc(euBytes(chip, Prec::Fp32, maxOut), "scratch tile"));
  uint64_t accBuf =
      quant ? alloc.alloc(euBytes(chip, Prec::Int32, maxOut), "accumulator")
            : 0;

  struct Step {
    int64_t grp, oc0, ocT, n0, nT, oh0, ohT;
    bool newWeights;
    unsigned wSlot;
    InSpan rows;
  };
  std::vector<Step> steps;
  unsigned wTile = 0;
  for (int64_t grp = 0; grp < g.groups; ++grp)
    for (Range1 oc : splitRange(g.ocg, plan.ocT)) {
      bool first = true;
      for (Range1 n : splitRange(g.n, plan.nT))
        for (Range1 oh : splitRange(g.oh, plan.ohT)) {
          Step s{grp,     oc.begin, oc.size,
                 n.begin, n.size,   oh.begin,
                 oh.size, first,    wTile % plan.wCopies,
                 {}};
          if (!inputSpan(oh.begin, oh.size, g.sh, g.padT, g.kh, g.dh, g.insH,
                         g.ih, s.rows))
            ctx.fail("output rows " + std::to_string(oh.begin) + ".." +
                     std::to_string(oh.begin + oh.size - 1) +
                     " read only padding; such convolutions are not "
                     "supported");
          steps.push_back(s);
          first = false;
        }
      ++wTile;
    }

  // Channels of the input a step reads (first channel, count).
  auto inChan = [&](const Step &s) {
    return job.depthwise ? std::make_pair(s.oc0, s.ocT)
                         : std::make_pair(s.grp * g.icg, g.icg);
  };
  auto inTile = [&](size_t i) {
    const Step &s = steps[i];
    LTensor t = localTensor(chip, inBuf[i % 2], job.inPrec,
                            {uint32_t(s.nT), uint32_t(inChan(s).second),
                             uint32_t(s.rows.count), uint32_t(cols.count)});
    t.isSigned = job.inSigned;
    return t;
  };
  auto outTile = [&](size_t i) {
    const Step &s = steps[i];
    LTensor t = localTensor(chip, outBuf[i % 2], job.outPrec,
                            outShape(s.ocT, s.nT, s.ohT));
    t.isSigned = job.outSigned;
    return t;
  };
  DView inView = denseView(
      job.inAddr, job.inPrec,
      {uint32_t(g.n), uint32_t(g.ic), uint32_t(g.ih), uint32_t(g.iw)});
  DView outView = denseView(
      job.outAddr, job.outPrec,
      {uint32_t(g.n), uint32_t(g.oc), uint32_t(g.oh), uint32_t(g.ow)});

  // Weights of a new channel tile. With two weight buffers they are
  // prefetched with the step's input; with one they must wait until the
  // previous step's convolution has been emitted (program order is what
  // the emitter derives the waits from).
  bool prefetchWeights = plan.wCopies > 1;
  auto loadWeights = [&](const Step &s) {
    int64_t ocAbs = s.grp * g.ocg + s.oc0;
    Shape4 ws = filter1;
    ws.c = uint32_t(s.ocT);
    load(em,
         denseView(job.filterAddr + uint64_t(ocAbs * wPerOc) * eb, job.inPrec,
                   ws),
         localTensor(chip, wBuf[s.wSlot], job.inPrec, ws,
                     isa::LocalLayout::Compact));
    if (quant) {
      // Records [bias, multiplier, -rshift, zp] per output channel, stored
      // part by part (splitRequantRecords): the biases compact, each
      // triple at the start of a channel slot (RQ1); with two steps the
      // second step's triples likewise. Each load is one DDR run.
      RequantRecordParts rec =
          requantRecordParts(job.quant->coeffAddr, g.oc, ocAbs);
      Shape4 bs{1, uint32_t(s.ocT), 1, 1};
      load(em, DView{rec.bias, Prec::Int32, bs, {0, 1, 0, 1}},
           localTensor(chip, bBuf[s.wSlot], Prec::Int32, bs,
                       isa::LocalLayout::Compact));
      Shape4 rs{1, uint32_t(s.ocT), 1, 3};
      load(em, DView{rec.step1, Prec::Int32, rs, {0, 3, 0, 1}},
           localTensor(chip, rqBuf[s.wSlot], Prec::Int32, rs));
      if (twoSteps)
        load(em, DView{rec.step2, Prec::Int32, rs, {0, 3, 0, 1}},
             localTensor(chip, rq2Buf[s.wSlot], Prec::Int32, rs));
    }
    if (hasBias) {
      Shape4 bs{1, uint32_t(s.ocT), 1, 1};
      load(em,
           denseView(*job.biasAddr + uint64_t(ocAbs) * sizeof(float),
                     Prec::Fp32, bs),
           localTensor(chip, bBuf[s.wSlot], Prec::Fp32, bs,
                       isa::LocalLayout::Compact));
    }
  };

  pipeline(
      steps.size(),
      [&](size_t i) {
        const Step &s = steps[i];
        if (s.newWeights && prefetchWeights)
          loadWeights(s);
        auto [c0, cn] = inChan(s);
        load(em,
             subView(inView,
                     {uint32_t(s.n0), uint32_t(c0), uint32_t(s.rows.begin),
                      uint32_t(cols.begin)},
                     {uint32_t(s.nT), uint32_t(cn), uint32_t(s.rows.count),
                      uint32_t(cols.count)}),
             inTile(i));
      },
      [&](size_t i) {
        const Step &s = steps[i];
        if (s.newWeights && !prefetchWeights)
          loadWeights(s);
        LTensor out = outTile(i);
        LTensor final = out;
        if (quant) {
          out = localTensor(chip, accBuf, Prec::Int32, out.shape);
          out.isSigned = true;
        }
        if (job.depthwise) {
          Shape4 bs{1, uint32_t(s.ocT), 1, 1};
          if (hasBias && s.newWeights && isa::isFloat(job.inPrec) &&
              job.inPrec != Prec::Fp32)
            ar(em, ArOp::Cast,
               localTensor(chip, bConv[s.wSlot], job.inPrec, bs,
                           isa::LocalLayout::Compact),
               Opd::of(localTensor(chip, bBuf[s.wSlot], Prec::Fp32, bs,
                                   isa::LocalLayout::Compact)));
          PorDCmd c;
          c.kind = relu ? PorDCmd::DepthwiseRelu : PorDCmd::Depthwise;
          c.input = inTile(i);
          c.output = out;
          c.weights = wBuf[s.wSlot];
          c.hasBias = hasBias || quant;
          c.bias = job.inPrec == Prec::Fp32 || quant ? bBuf[s.wSlot]
                                                    : bConv[s.wSlot];
          if (quant)
            c.padBits = uint32_t(job.quant->inputZeroPoint) & 0xFF;
          c.kh = unsigned(g.kh);
          c.kw = unsigned(g.kw);
          c.strideH = unsigned(g.sh);
          c.strideW = unsigned(g.sw);
          c.dilH = unsigned(g.dh);
          c.dilW = unsigned(g.dw);
          c.insH = unsigned(g.insH);
          c.insW = unsigned(g.insW);
          c.padT = unsigned(s.rows.padBefore);
          c.padB = unsigned(std::max<int64_t>(s.rows.padAfter, 0));
          c.padL = unsigned(cols.padBefore);
          c.padR = unsigned(std::max<int64_t>(cols.padAfter, 0));
          c.rotate = g.rotate;
          pord(em, c);
        } else {
          ConvCmd c;
          c.input = inTile(i);
          c.output = out;
          c.weights = wBuf[s.wSlot];
          c.weightBytes = wBytes(s.ocT);
          c.hasBias = hasBias;
          c.bias = bBuf[s.wSlot];
          c.kh = unsigned(g.kh);
          c.kw = unsigned(g.kw);
          c.strideH = unsigned(g.sh);
          c.strideW = unsigned(g.sw);
          c.dilH = unsigned(g.dh);
          c.dilW = unsigned(g.dw);
          c.insH = unsigned(g.insH);
          c.insW = unsigned(g.insW);
          c.padT = unsigned(s.rows.padBefore);
          c.padB = unsigned(std::max<int64_t>(s.rows.padAfter, 0));
          c.padL = unsigned(cols.padBefore);
          c.padR = unsigned(std::max<int64_t>(cols.padAfter, 0));
          c.relu = relu;
          c.rotate = g.rotate;
          if (quant)
            c.padBits = uint32_t(job.quant->inputZeroPoint) & 0xFF;
          conv(em, c);
          if (quant) {
            // acc += bias[oc], the bias read through zero n/h/w strides.
            LTensor bias = freeTensor(bBuf[s.wSlot], Prec::Int32, out.shape,
                                      {0, 1, 0, 0});
            ar(em, ArOp::Add, out, Opd::of(out), Opd::of(bias));
          }
        }
        if (quant) {
          RqCmd r;
          r.input = out;
          r.output = final;
          r.perChannel = true;
          r.params = rqBuf[s.wSlot];
          r.round = job.quant->round;
          if (twoSteps) {
            r.output = out; // the first step stays int32
            rq(em, r);
            r.params = rq2Buf[s.wSlot];
            r.round = job.quant->round2;
            r.output = final;
          }
          rq(em, r);
          if (job.quant->reluSigned)
            ar(em, ArOp::Max, final, Opd::of(final),
               Opd::immInt(0, Prec::Int8));
          if (job.quant->reluHigh)
            ar(em, ArOp::Min, final, Opd::of(final),
               Opd::immInt(*job.quant->reluHigh, Prec::Int32));
        }
        if (!fusedAct)
          emitUnary(em, job.act, out, out, scratch);
      },
      [&](size_t i) {
        const Step &s = steps[i];
        Shape4 os = outShape(s.ocT, s.nT, s.ohT);
        store(em, outTile(i),
              subView(outView,
                      {uint32_t(s.n0), uint32_t(s.grp * g.ocg + s.oc0),
                       uint32_t(s.oh0), 0},
                      os));
      });
}

/// [N, C, H, W] of a rank-4 (or rank-3: H = 1) tensor.
std::array<int64_t, 4> dims4(const OpCtx &ctx, const GTensor &t,
                             const char *what) {
  if (t.shape.size() == 4)
    return {t.shape[0], t.shape[1], t.shape[2], t.shape[3]};
  if (t.shape.size() == 3)
    return {t.shape[0], t.shape[1], 1, t.shape[2]};
  ctx.fail(std::string(what) + " must have rank 3 or 4, got rank " +
           std::to_string(t.shape.size()));
}

void checkParam(const OpCtx &ctx, bool ok, const std::string &what) {
  if (!ok)
    ctx.fail(what);
}

} // namespace

bool isDepthwise(int64_t inChannels, int64_t outChannels, int64_t groups) {
  return groups > 1 && groups == inChannels && groups == outChannels;
}

namespace {

/// conv2d of `p` (its transposed form included) under `ctx`.
void runConvParams(CmdEmitter &em, const OpCtx &ctx, const ConvParams &p) {
  const bool transposed = isTransposedForm(p);
  if (p.quant) {
    auto int8 = [&](const GTensor &t, const char *what) {
      checkParam(ctx, t.prec == Prec::Int8,
                 std::string(transposed ? "an integer deconvolution"
                                        : "an integer convolution") +
                     " needs an int8 / uint8 " + what + ", got " +
                     isa::precName(t.prec));
    };
    int8(p.input, "input");
    int8(p.output, "output");
    // The command inserts zeros and pads with the pad value; both must be
    // real 0, which only a zero point of 0 gives for the inserted ones.
    if (transposed)
      checkParam(ctx, p.quant->inputZeroPoint == 0,
                 "an integer deconvolution needs an input zero point of 0");
  } else {
    requireFloat(ctx, p.input, "input");
    requireFloat(ctx, p.output, "output");
  }
  auto in = dims4(ctx, p.input, "input");
  auto out = dims4(ctx, p.output, "output");
  ConvGeo g{};
  g.n = in[0];
  g.ic = in[1];
  g.ih = in[2];
  g.iw = in[3];
  g.oc = out[1];
  g.oh = out[2];
  g.ow = out[3];
  g.groups = p.groups;
  checkParam(ctx, out[0] == g.n, "input and output batch differ");
  checkParam(ctx, p.groups >= 1 && g.ic % p.groups == 0 && g.oc % p.groups == 0,
             "groups " + std::to_string(p.groups) +
                 " must divide the input and output channels");
  g.icg = g.ic / p.groups;
  g.ocg = g.oc / p.groups;
  g.kh = p.kernelH;
  g.kw = p.kernelW;
  g.sh = p.strideH;
  g.sw = p.strideW;
  g.dh = p.dilationH;
  g.dw = p.dilationW;
  g.insH = p.insH;
  g.insW = p.insW;
  g.padT = p.padTop;
  g.padL = p.padLeft;
  g.rotate = p.rotate;
  checkParam(ctx,
             g.kh >= 1 && g.kw >= 1 && g.sh >= 1 && g.sw >= 1 && g.dh >= 1 &&
                 g.dw >= 1,
             "kernel, strides and dilations must be positive");
  checkParam(ctx,
             transposed || (p.padTop >= 0 && p.padBottom >= 0 &&
                            p.padLeft >= 0 && p.padRight >= 0),
             "pads must not be negative");
  checkParam(ctx, p.insH >= 0 && p.insW >= 0 && p.insH < 16 && p.insW < 16,
             "zeros inserted must be in 0..15 (the field is 4 bits)");
  int64_t vih = (g.ih - 1) * (g.insH + 1) + 1;
  int64_t viw = (g.iw - 1) * (g.insW + 1) + 1;
  int64_t eoh =
      (vih + p.padTop + p.padBottom - g.dh * (g.kh - 1) - 1) / g.sh + 1;
  int64_t eow =
      (viw + p.padLeft + p.padRight - g.dw * (g.kw - 1) - 1) / g.sw + 1;
  checkParam(ctx, eoh == g.oh && eow == g.ow,
             "output is " + std::to_string(g.oh) + " x " +
                 std::to_string(g.ow) + ", the parameters give " +
                 std::to_string(eoh) + " x " + std::to_string(eow));
  ConvJob job{ctx,
              g,
              p.input.prec,
              p.output.prec,
              p.input.addr,
              p.output.addr,
              p.filterAddr,
              p.biasAddr,
              p.act,
              !transposed && isDepthwise(g.ic, g.oc, p.groups),
              p.quant,
              p.input.isSigned,
              p.output.isSigned};
  if (job.depthwise) {
    // Depthwise runs as one group of all channels.
    job.g.groups = 1;
    job.g.icg = job.g.ocg = g.oc;
  }
  withCtx(ctx, [&] { runConv(em, job); });
}

} // namespace

void conv2d(CmdEmitter &em, const ConvParams &p) {
  runConvParams(em, OpCtx{"conv2d", p.name}, p);
}

ConvParams transposedAsConv(const ConvTransposeParams &p) {
  ConvParams c;
  c.name = p.name;
  c.input = p.input;
  c.output = p.output;
  c.filterAddr = p.filterAddr;
  c.biasAddr = p.biasAddr;
  c.quant = p.quant;
  c.kernelH = p.kernelH;
  c.kernelW = p.kernelW;
  c.dilationH = p.dilationH;
  c.dilationW = p.dilationW;
  c.groups = p.groups;
  c.act = p.act;
  c.insH = p.strideH - 1;
  c.insW = p.strideW - 1;
  c.rotate = true;
  c.padTop = p.dilationH * (p.kernelH - 1) - p.padTop;
  c.padBottom = p.dilationH * (p.kernelH - 1) - p.padBottom + p.outputPadH;
  c.padLeft = p.dilationW * (p.kernelW - 1) - p.padLeft;
  c.padRight = p.dilationW * (p.kernelW - 1) - p.padRight + p.outputPadW;
  return c;
}

void convTranspose2d(CmdEmitter &em, const ConvTransposeParams &p) {
  OpCtx ctx{"convTranspose2d", p.name};
  checkParam(ctx,
             p.strideH >= 1 && p.strideW >= 1 && p.strideH <= 16 &&
                 p.strideW <= 16,
             "strides must be in 1..16 (zero insertion is 4 bits)");
  runConvParams(em, ctx, transposedAsConv(p));
}

//===----------------------------------------------------------------------===//
// Weight layouts
//===----------------------------------------------------------------------===//

std::vector<uint8_t> encodeFloats(const float *v, size_t count,
                                  isa::Prec prec) {
  unsigned eb = elemBytes(prec);
  if (!isa::isFloat(prec)) {
    // Integer values held as floats (quantised weights): their low bytes.
    if (prec == Prec::Int4)
      throw Error("encodeFloats: int4 is not supported");
    std::vector<uint8_t> out(count * eb);
    for (size_t i = 0; i < count; ++i) {
      auto bits = uint64_t(int64_t(v[i]));
      for (unsigned b = 0; b < eb; ++b)
        out[i * eb + b] = uint8_t(bits >> (8 * b));
    }
    return out;
  }
  std::vector<uint8_t> out(count * eb);
  for (size_t i = 0; i < count; ++i) {
    uint32_t bits = floatBits(v[i], prec);
    for (unsigned b = 0; b < eb; ++b)
      out[i * eb + b] = uint8_t(bits >> (8 * b));
  }
  return out;
}

namespace detail {

Shape4 convFilterTile(const isa::ChipParams &chip, Prec prec, int64_t oc,
                      int64_t icg, int64_t kh, int64_t kw, bool depthwise) {
  if (depthwise)
    return {1, uint32_t(oc), uint32_t(kh), uint32_t(kw)};
  int64_t icp = chip.icParallel(prec);
  return {1, uint32_t(oc), uint32_t(ceilDiv(icg, icp)),
          uint32_t(kh * kw * icp)};
}

} // namespace detail

uint64_t convFilterBytes(int64_t oc, int64_t icPerGroup, int64_t kh, int64_t kw,
                         isa::Prec prec, int64_t groups,
                         const isa::ChipParams &chip) {
  Shape4 t = convFilterTile(chip, prec, 1, icPerGroup, kh, kw,
                            isDepthwise(groups * icPerGroup, oc, groups));
  return uint64_t(oc) * t.h * t.w * elemBytes(prec);
}

std::vector<uint8_t> reorderConvFilter(const float *w, int64_t oc,
                                       int64_t icPerGroup, int64_t kh,
                                       int64_t kw, isa::Prec prec,
                                       int64_t groups,
                                       const isa::ChipParams &chip) {
  if (isDepthwise(groups * icPerGroup, oc, groups))
    return encodeFloats(w, size_t(oc * kh * kw), prec);
  int64_t icp = chip.icParallel(prec);
  int64_t blocks = ceilDiv(icPerGroup, icp);
  int64_t kArea = kh * kw;
  std::vector<float> r(size_t(oc * blocks * kArea * icp), 0.0f);
  for (int64_t o = 0; o < oc; ++o)
    for (int64_t i = 0; i < icPerGroup; ++i)
      for (int64_t k = 0; k < kArea; ++k)
        r[size_t(((o * blocks + i / icp) * kArea + k) * icp + i % icp)] =
            w[size_t((o * icPerGroup + i) * kArea + k)];
  return encodeFloats(r.data(), r.size(), prec);
}

std::vector<uint8_t> reorderConvTransposeFilter(const float *w, int64_t ic,
                                                int64_t ocPerGroup, int64_t kh,
                                                int64_t kw, isa::Prec prec,
                                                int64_t groups,
                                                const isa::ChipParams &chip) {
  // ONNX [ic, ocPerGroup, kh, kw] -> conv [oc, icPerGroup, kh, kw] per group;
  // the command rotates the kernel.
  int64_t icg = ic / groups, oc = ocPerGroup * groups, kArea = kh * kw;
  std::vector<float> c(size_t(oc * icg * kArea));
  for (int64_t grp = 0; grp < groups; ++grp)
    for (int64_t o = 0; o < ocPerGroup; ++o)
      for (int64_t i = 0; i < icg; ++i)
        for (int64_t k = 0; k < kArea; ++k)
          c[size_t((((grp * ocPerGroup + o) * icg) + i) * kArea + k)] =
              w[size_t(((grp * icg + i) * ocPerGroup + o) * kArea + k)];
  // Never depthwise-reordered: convTranspose2d always uses the general path.
  int64_t icp = chip.icParallel(prec);
  int64_t blocks = ceilDiv(icg, icp);
  std::vector<float> r(size_t(oc * blocks * kArea * icp), 0.0f);
  for (int64_t o = 0; o < oc; ++o)
    for (int64_t i = 0; i < icg; ++i)
      for (int64_t k = 0; k < kArea; ++k)
        r[size_t(((o * blocks + i / icp) * kArea + k) * icp + i % icp)] =
            c[size_t((o * icg + i) * kArea + k)];
  return encodeFloats(r.data(), r.size(), prec);
}

std::vector<uint8_t> splitRequantRecords(const std::vector<uint8_t> &rows,
                                         int64_t oc, int64_t words) {
  constexpr size_t kWord = 4;
  if ((words != 4 && words != 8) || rows.size() != size_t(oc * words) * kWord)
    throw Error("backend: requantisation records must be " +
                std::to_string(oc) + " rows of 4 or 8 int32 words");
  // The parts as (first word, word count), in storage order.
  std::vector<std::pair<int64_t, int64_t>> parts{{0, 1}, {1, 3}};
  if (words == 8)
    parts.insert(parts.end(), {{4, 3}, {7, 1}});
  std::vector<uint8_t> out;
  out.reserve(rows.size());
  for (auto [first, count] : parts)
    for (int64_t c = 0; c < oc; ++c) {
      auto at = rows.begin() + ptrdiff_t((c * words + first) * kWord);
      out.insert(out.end(), at, at + ptrdiff_t(count * kWord));
    }
  return out;
}

RequantRecordParts requantRecordParts(uint64_t addr, int64_t oc, int64_t c) {
  constexpr uint64_t kWord = 4;
  RequantRecordParts p;
  p.bias = addr + uint64_t(c) * kWord;
  p.step1 = addr + uint64_t(oc) * kWord + uint64_t(c) * 3 * kWord;
  p.step2 = addr + uint64_t(oc) * 4 * kWord + uint64_t(c) * 3 * kWord;
  return p;
}

} // namespace tpu::backend
