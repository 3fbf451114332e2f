//===- ConvTest.cpp - conv2d / convTranspose2d on the simulator -----------===//
//
// Each test fills global memory with random activations and weights
// (rounded to the tensor precision), emits the kernel, runs the commands
// on the simulator's functional model under three engine schedules and
// compares with a direct convolution written here (double accumulation of
// the rounded operands, then one rounding to the output precision).
// Tolerance: one rounding of the output plus fp32 accumulation error
// (2^-22 of the sum of |products|).
//
// Shapes cover odd channel counts (3), more channels than lanes (70, 130),
// N > 1, asymmetric padding, strides, dilation, groups, depthwise, 1-D
// convolutions and, with a chip whose local memory is shrunk, slicing of
// rows and output channels.
//
//===----------------------------------------------------------------------===//

#include "BackendTestUtil.h"

using namespace tpu;
using namespace tpu::backend;
using namespace tpu::backend::test;

namespace {

struct ConvCase {
  int64_t n, ic, ih, iw, oc, kh, kw;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pb = 0, pl = 0, pr = 0;
  int64_t groups = 1;
  bool bias = true;
  Activation act = {};
  Prec prec = Prec::Fp32;
  /// 0 = the BM1684X's 256 KiB per lane.
  uint64_t lmemBytes = 0;
};

/// The activation on the conv result `v` already rounded to `p`, with the
/// kernel's rounding points: hard-swish is x * clip(x * r(1/6) + 0.5) with
/// the multiply-add in fp32 rounded once to `p` (sLIN), then the product
/// rounded to `p`; the constants are immediates of `p`.
float applyAct(const Activation &a, float v, Prec p) {
  switch (a.kind) {
  case UnaryKind::Relu:
    return std::max(v, 0.0f);
  case UnaryKind::HardSwish: {
    float prod = v * roundTo(1.0f / 6, p);
    float sum = prod + 0.5f;
    float t = roundTo(sum, p);
    t = std::min(std::max(t, 0.0f), 1.0f);
    return roundTo(v * t, p);
  }
  default:
    return v;
  }
}

StreamStats runConvCase(const ConvCase &c) {
  KernelRun r;
  if (c.lmemBytes)
    r.chip.lmemBytes = c.lmemBytes;
  GlobalAlloc ga(r.chip);
  int64_t oh = (c.ih + c.pt + c.pb - c.dh * (c.kh - 1) - 1) / c.sh + 1;
  int64_t ow = (c.iw + c.pl + c.pr - c.dw * (c.kw - 1) - 1) / c.sw + 1;
  int64_t icg = c.ic / c.groups, ocg = c.oc / c.groups;
  GTensor in = ga.tensor(c.prec, {c.n, c.ic, c.ih, c.iw});
  GTensor out = ga.tensor(c.prec, {c.n, c.oc, oh, ow});
  auto x = randomValues(size_t(in.numElements()), 11);
  auto w = randomValues(size_t(c.oc * icg * c.kh * c.kw), 12);
  auto b = randomValues(size_t(c.oc), 13);
  for (float &v : x)
    v = roundTo(v, c.prec);
  for (float &v : w)
    v = roundTo(v, c.prec);
  auto filt = reorderConvFilter(w.data(), c.oc, icg, c.kh, c.kw, c.prec,
                                c.groups, r.chip);
  EXPECT_EQ(filt.size(),
            convFilterBytes(c.oc, icg, c.kh, c.kw, c.prec, c.groups, r.chip));
  uint64_t fAddr = ga.alloc(filt.size());
  uint64_t bAddr = ga.alloc(b.size() * 4);
  std::vector<float> want(size_t(out.numElements())), mag(want.size());
  for (int64_t nn = 0; nn < c.n; ++nn)
    for (int64_t o = 0; o < c.oc; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xx = 0; xx < ow; ++xx) {
          // Depthwise applies the bias in the activation precision (sPorD's
          // bias operand has the input's type); conv keeps it fp32.
          bool dw = isDepthwise(c.ic, c.oc, c.groups);
          double acc = !c.bias ? 0.0
                       : dw    ? roundTo(b[size_t(o)], c.prec)
                               : b[size_t(o)];
          double m = std::fabs(acc);
          int64_t grp = o / ocg;
          for (int64_t i = 0; i < icg; ++i)
            for (int64_t ky = 0; ky < c.kh; ++ky)
              for (int64_t kx = 0; kx < c.kw; ++kx) {
                int64_t iy = y * c.sh - c.pt + ky * c.dh;
                int64_t ix = xx * c.sw - c.pl + kx * c.dw;
                if (iy < 0 || iy >= c.ih || ix < 0 || ix >= c.iw)
                  continue;
                double p =
                    double(x[size_t(((nn * c.ic + grp * icg + i) * c.ih + iy) *
                                        c.iw +
                                    ix)]) *
                    w[size_t(((o * icg + i) * c.kh + ky) * c.kw + kx)];
                acc += p;
                m += std::fabs(p);
              }
          size_t at = size_t(((nn * c.oc + o) * oh + y) * ow + xx);
          want[at] = applyAct(c.act, roundTo(float(acc), c.prec), c.prec);
          mag[at] = float(m);
        }
  r.emit = [&](CmdEmitter &em) {
    ConvParams p;
    p.name = "conv";
    p.input = in;
    p.output = out;
    p.filterAddr = fAddr;
    if (c.bias)
      p.biasAddr = bAddr;
    p.kernelH = c.kh;
    p.kernelW = c.kw;
    p.strideH = c.sh;
    p.strideW = c.sw;
    p.dilationH = c.dh;
    p.dilationW = c.dw;
    p.padTop = c.pt;
    p.padBottom = c.pb;
    p.padLeft = c.pl;
    p.padRight = c.pr;
    p.groups = c.groups;
    p.act = c.act;
    conv2d(em, p);
  };
  r.setup = [&](sim::MachineState &m) {
    writeTensor(m, in, x);
    writeBytes(m, fAddr, filt);
    writeBytes(m, bAddr, encodeAs(b, Prec::Fp32));
  };
  r.check = [&](const sim::MachineState &m, const std::string &what) {
    auto got = readTensor(m, out);
    size_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      float tol = 2 * ulpOf(c.prec) * std::fabs(want[i]) +
                  mag[i] * (1.0f / (1 << 22)) + 1e-30f;
      // The hardware rounds once after fp32 accumulation; the reference
      // rounds the exact sum: allow a one-ulp disagreement at ties.
      if (!(std::fabs(got[i] - want[i]) <= tol) && bad++ < 5)
        ADD_FAILURE() << what << ": element " << i << " is " << got[i]
                      << ", expected " << want[i];
    }
    EXPECT_EQ(bad, 0u) << what;
  };
  return r.run();
}

} // namespace

TEST(Conv2d, F32OddChannelsPaddedN2) {
  ConvCase c{2, 3, 9, 9, 8, 3, 3};
  c.pt = c.pb = c.pl = c.pr = 1;
  runConvCase(c);
}

TEST(Conv2d, F32ManyChannelsStrideDilationAsymmetricPads) {
  ConvCase c{1, 70, 11, 10, 130, 3, 3};
  c.sh = 2;
  c.sw = 1;
  c.dh = 1;
  c.dw = 2;
  c.pt = 1;
  c.pb = 0;
  c.pl = 2;
  c.pr = 1;
  runConvCase(c);
}

TEST(Conv2d, F32WidthOneAndNoBias) {
  ConvCase c{3, 5, 7, 1, 6, 3, 1};
  c.pt = 2;
  c.pb = 1;
  c.bias = false;
  runConvCase(c);
}

TEST(Conv2d, F16Relu1x1) {
  ConvCase c{2, 40, 6, 7, 72, 1, 1};
  c.prec = Prec::Fp16;
  c.act = {UnaryKind::Relu};
  runConvCase(c);
}

TEST(Conv2d, BF16Grouped) {
  ConvCase c{1, 12, 8, 8, 8, 3, 3};
  c.groups = 4;
  c.pt = c.pb = c.pl = c.pr = 1;
  c.prec = Prec::Bf16;
  runConvCase(c);
}

TEST(Conv2d, F16InputChannelsAboveIcParallel) {
  // 40 input channels: two 32-channel blocks of the fp16 weight layout.
  ConvCase c{1, 40, 5, 6, 10, 3, 2};
  c.prec = Prec::Fp16;
  c.pl = 1;
  runConvCase(c);
}

TEST(Conv2d, DepthwiseF32StrideTwoRelu) {
  ConvCase c{2, 100, 9, 9, 100, 3, 3};
  c.groups = 100;
  c.sh = c.sw = 2;
  c.pt = c.pb = c.pl = c.pr = 1;
  c.act = {UnaryKind::Relu};
  runConvCase(c);
}

TEST(Conv2d, DepthwiseF16WithBias) {
  ConvCase c{1, 70, 7, 5, 70, 5, 5};
  c.groups = 70;
  c.pt = c.pb = c.pl = c.pr = 2;
  c.prec = Prec::Fp16;
  runConvCase(c);
}

TEST(Conv2d, FusedHardSwishBF16) {
  ConvCase c{1, 8, 6, 6, 16, 3, 3};
  c.pt = c.pb = c.pl = c.pr = 1;
  c.prec = Prec::Bf16;
  c.act = {UnaryKind::HardSwish};
  runConvCase(c);
}

TEST(Conv2d, OneDimensional) {
  ConvCase c{1, 16, 1, 50, 24, 1, 5};
  c.pl = c.pr = 2;
  c.sw = 2;
  runConvCase(c);
}

TEST(Conv2d, SlicesRowsAndChannelsWithSmallLocalMemory) {
  // 8 KiB per lane: the 60-row input does not fit at once, nor do the
  // weights of all 130 output channels: rows and channels are sliced and
  // the pipeline alternates buffers.
  ConvCase c{2, 20, 60, 17, 130, 3, 3};
  c.pt = c.pb = c.pl = c.pr = 1;
  c.lmemBytes = 8 * 1024;
  StreamStats st = runConvCase(c);
  EXPECT_GT(st.gdma, 10u);
}

TEST(Conv2d, SlicedDepthwiseWithSmallLocalMemory) {
  ConvCase c{1, 130, 40, 30, 130, 3, 3};
  c.groups = 130;
  c.pt = c.pb = c.pl = c.pr = 1;
  c.lmemBytes = 8 * 1024;
  c.prec = Prec::Fp16;
  runConvCase(c);
}

TEST(Conv2d, TooLargeFilterNamesTheOp) {
  // The filter of one output channel (4096 x 7 x 7 F32, 784 KiB) is more
  // than a lane's local memory: no slicing of the group of one fits.
  CmdEmitter em;
  GlobalAlloc ga(em.chip());
  ConvParams p;
  p.name = "huge_conv";
  p.input = ga.tensor(Prec::Fp32, {1, 4096, 7, 7});
  p.output = ga.tensor(Prec::Fp32, {1, 64, 1, 1});
  p.kernelH = p.kernelW = 7;
  try {
    conv2d(em, p);
    FAIL() << "expected an error";
  } catch (const Error &e) {
    std::string m = e.what();
    EXPECT_NE(m.find("conv2d 'huge_conv'"), std::string::npos) << m;
    EXPECT_NE(m.find("does not fit in local memory"), std::string::npos) << m;
  }
}

TEST(Conv2d, WrongOutputShapeIsAnError) {
  CmdEmitter em;
  GlobalAlloc ga(em.chip());
  ConvParams p;
  p.name = "c1";
  p.input = ga.tensor(Prec::Fp32, {1, 4, 8, 8});
  p.output = ga.tensor(Prec::Fp32, {1, 4, 8, 8});
  p.kernelH = p.kernelW = 3;
  EXPECT_THROW(conv2d(em, p), Error);
}

namespace {

/// One ConvTranspose2d case (batch 1, groups 1, square kernel, equal pads),
/// checked against the scatter form of ConvTranspose computed here.
struct DeconvCase {
  int64_t ic, ih, iw, oc, k, s, pad, opad;
  bool bias;
  unsigned seed; ///< input; the weights use seed + 1, the bias seed + 2
  uint64_t lmem = 0;
};

StreamStats runDeconv(const DeconvCase &c) {
  KernelRun r;
  if (c.lmem)
    r.chip.lmemBytes = c.lmem;
  GlobalAlloc ga(r.chip);
  const int64_t ic = c.ic, ih = c.ih, iw = c.iw, oc = c.oc, k = c.k, s = c.s,
                pad = c.pad;
  int64_t oh = (ih - 1) * s - 2 * pad + k + c.opad;
  int64_t ow = (iw - 1) * s - 2 * pad + k + c.opad;
  GTensor in = ga.tensor(Prec::Fp32, {1, ic, ih, iw});
  GTensor out = ga.tensor(Prec::Fp32, {1, oc, oh, ow});
  auto x = randomValues(size_t(in.numElements()), c.seed);
  auto w = randomValues(size_t(ic * oc * k * k), c.seed + 1);
  std::vector<float> b(size_t(oc), 0.0f);
  if (c.bias)
    b = randomValues(size_t(oc), c.seed + 2);
  auto filt = reorderConvTransposeFilter(w.data(), ic, oc, k, k, Prec::Fp32, 1);
  uint64_t fAddr = ga.alloc(filt.size());
  uint64_t bAddr = c.bias ? ga.alloc(oc * 4) : 0;
  // Reference: the bias, then every input element scattered through the
  // kernel.
  std::vector<double> acc(size_t(out.numElements()), 0.0);
  for (int64_t o = 0; o < oc; ++o)
    for (int64_t i = 0; i < oh * ow; ++i)
      acc[size_t(o * oh * ow + i)] = b[size_t(o)];
  for (int64_t i = 0; i < ic; ++i)
    for (int64_t y = 0; y < ih; ++y)
      for (int64_t xx = 0; xx < iw; ++xx)
        for (int64_t o = 0; o < oc; ++o)
          for (int64_t ky = 0; ky < k; ++ky)
            for (int64_t kx = 0; kx < k; ++kx) {
              int64_t oy = y * s - pad + ky, ox = xx * s - pad + kx;
              if (oy < 0 || oy >= oh || ox < 0 || ox >= ow)
                continue;
              acc[size_t((o * oh + oy) * ow + ox)] +=
                  double(x[size_t((i * ih + y) * iw + xx)]) *
                  w[size_t(((i * oc + o) * k + ky) * k + kx)];
            }
  std::vector<float> want(acc.begin(), acc.end());
  r.emit = [&](CmdEmitter &em) {
    ConvTransposeParams p;
    p.name = "deconv";
    p.input = in;
    p.output = out;
    p.filterAddr = fAddr;
    if (c.bias)
      p.biasAddr = bAddr;
    p.kernelH = p.kernelW = k;
    p.strideH = p.strideW = s;
    p.padTop = p.padBottom = p.padLeft = p.padRight = pad;
    p.outputPadH = p.outputPadW = c.opad;
    convTranspose2d(em, p);
  };
  r.setup = [&](sim::MachineState &m) {
    writeTensor(m, in, x);
    writeBytes(m, fAddr, filt);
    if (c.bias)
      writeBytes(m, bAddr, encodeAs(b, Prec::Fp32));
  };
  r.check = [&](const sim::MachineState &m, const std::string &what) {
    expectClose(readTensor(m, out), want, 1e-5f, 1e-5f, what);
  };
  return r.run();
}

} // namespace

TEST(ConvTranspose2d, StrideTwoPadOutputPadding) {
  runDeconv({/*ic=*/6, /*ih=*/5, /*iw=*/4, /*oc=*/3, /*k=*/3, /*s=*/2,
             /*pad=*/1, /*opad=*/1, /*bias=*/false, /*seed=*/21});
}

// Kernel = stride, no pads (an FPN head's upsampling): the sub-pixel form,
// one 1 x 1 convolution per tap into every s-th row and column. The layer
// group tests compare it with ops alone, which take the same form, so this
// scatter reference is what holds its taps to the right phases.
TEST(ConvTranspose2d, KernelEqualsStride) {
  runDeconv({/*ic=*/6, /*ih=*/5, /*iw=*/4, /*oc=*/3, /*k=*/2, /*s=*/2,
             /*pad=*/0, /*opad=*/0, /*bias=*/true, /*seed=*/41});
  runDeconv({/*ic=*/5, /*ih=*/3, /*iw=*/6, /*oc=*/4, /*k=*/3, /*s=*/3,
             /*pad=*/0, /*opad=*/0, /*bias=*/false, /*seed=*/42});
}

TEST(ConvTranspose2d, SlicedRowsSmallLocalMemory) {
  StreamStats st =
      runDeconv({/*ic=*/4, /*ih=*/30, /*iw=*/9, /*oc=*/5, /*k=*/4, /*s=*/2,
                 /*pad=*/1, /*opad=*/0, /*bias=*/true, /*seed=*/31,
                 /*lmem=*/4 * 1024});
  // More than one row tile: several input loads and convolutions.
  EXPECT_GT(st.tiu, 3u);
  EXPECT_GT(st.gdma, 6u);
}

TEST(Conv2d, ResNet18ShapesFitAndPipeline) {
  // Every convolution shape of ResNet-18 at 224 x 224 plans without error
  // in each float precision (emission only; the arithmetic is covered
  // above), and the largest ones are sliced into several tiles.
  struct Shape {
    int64_t ic, hw, oc, k, s;
  };
  const Shape shapes[] = {
      {3, 224, 64, 7, 2},   {64, 56, 64, 3, 1},   {64, 56, 128, 3, 2},
      {64, 56, 128, 1, 2},  {128, 28, 128, 3, 1}, {128, 28, 256, 3, 2},
      {256, 14, 256, 3, 1}, {256, 14, 512, 3, 2}, {512, 7, 512, 3, 1}};
  for (Prec p : {Prec::Fp32, Prec::Fp16, Prec::Bf16})
    for (const Shape &s : shapes) {
      CmdEmitter em;
      GlobalAlloc ga(em.chip());
      int64_t pad = s.k / 2;
      int64_t o = (s.hw + 2 * pad - s.k) / s.s + 1;
      ConvParams c;
      c.name = "resnet";
      c.input = ga.tensor(p, {1, s.ic, s.hw, s.hw});
      c.output = ga.tensor(p, {1, s.oc, o, o});
      c.filterAddr = ga.alloc(convFilterBytes(s.oc, s.ic, s.k, s.k, p, 1, isa::ChipParams::bm1684x()));
      c.biasAddr = ga.alloc(uint64_t(s.oc) * 4);
      c.kernelH = c.kernelW = s.k;
      c.strideH = c.strideW = s.s;
      c.padTop = c.padBottom = c.padLeft = c.padRight = pad;
      c.act = {UnaryKind::Relu};
      ASSERT_NO_THROW(conv2d(em, c)) << s.ic << "x" << s.hw;
      EXPECT_GE(em.numTiu(), 1u);
      if (s.ic == 3)
        EXPECT_GT(em.numTiu(), 2u) << "the 224 x 224 input is sliced";
      EXPECT_NO_THROW(em.finish());
    }
}
