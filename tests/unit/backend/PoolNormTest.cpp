//===- PoolNormTest.cpp - pooling, softmax, layer norm, reduce ------------===//
//
// References in double on the rounded inputs, rounded once to the output
// precision; tolerances are one output rounding plus fp32 summation error
// (and, for softmax, the exp accuracy documented in Unary.cpp).
//
//===----------------------------------------------------------------------===//

#include "BackendTestUtil.h"

using namespace tpu;
using namespace tpu::backend;
using namespace tpu::backend::test;

namespace {

struct PoolCase {
  int64_t n, c, h, w, kh, kw, sh, sw, pt, pb, pl, pr;
  PoolKind kind;
  bool includePad = false;
  Prec prec = Prec::Fp32;
  uint64_t lmem = 0;
};

void runPool(const PoolCase &c) {
  KernelRun r;
  if (c.lmem)
    r.chip.lmemBytes = c.lmem;
  GlobalAlloc ga(r.chip);
  int64_t oh = (c.h + c.pt + c.pb - c.kh) / c.sh + 1;
  int64_t ow = (c.w + c.pl + c.pr - c.kw) / c.sw + 1;
  GTensor in = ga.tensor(c.prec, {c.n, c.c, c.h, c.w});
  GTensor out = ga.tensor(c.prec, {c.n, c.c, oh, ow});
  auto x = randomValues(size_t(in.numElements()), 41, -3, 3);
  for (float &v : x)
    v = roundTo(v, c.prec);
  std::vector<float> want(size_t(out.numElements()));
  for (int64_t b = 0; b < c.n * c.c; ++b)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xx = 0; xx < ow; ++xx) {
        double acc = c.kind == PoolKind::Max ? -INFINITY : 0.0;
        int64_t count = 0;
        for (int64_t ky = 0; ky < c.kh; ++ky)
          for (int64_t kx = 0; kx < c.kw; ++kx) {
            int64_t iy = y * c.sh - c.pt + ky, ix = xx * c.sw - c.pl + kx;
            if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w)
              continue;
            double v = x[size_t((b * c.h + iy) * c.w + ix)];
            acc = c.kind == PoolKind::Max ? std::max(acc, v) : acc + v;
            ++count;
          }
        if (c.kind == PoolKind::Avg)
          acc /= c.includePad ? double(c.kh * c.kw) : double(count);
        want[size_t((b * oh + y) * ow + xx)] = roundTo(float(acc), c.prec);
      }
  r.emit = [&](CmdEmitter &em) {
    PoolParams p;
    p.name = "pool";
    p.input = in;
    p.output = out;
    p.kind = c.kind;
    p.kernelH = c.kh;
    p.kernelW = c.kw;
    p.strideH = c.sh;
    p.strideW = c.sw;
    p.padTop = c.pt;
    p.padBottom = c.pb;
    p.padLeft = c.pl;
    p.padRight = c.pr;
    p.countIncludePad = c.includePad;
    pool2d(em, p);
  };
  r.setup = [&](sim::MachineState &m) { writeTensor(m, in, x); };
  r.check = [&](const sim::MachineState &m, const std::string &what) {
    // Average: fp32 sum times the fp32 reciprocal (or a divide): a few
    // fp32 ulps before the output rounding.
    float rt = c.kind == PoolKind::Max ? 0 : 2 * ulpOf(c.prec) + 1e-6f;
    expectClose(readTensor(m, out), want, rt, 1e-6f, what);
  };
  r.run();
}

} // namespace

TEST(Pool2d, MaxPadded3x3Stride2F32) {
  runPool({1, 70, 15, 15, 3, 3, 2, 2, 1, 1, 1, 1, PoolKind::Max});
}

TEST(Pool2d, MaxF16N2) {
  runPool(
      {2, 10, 8, 9, 2, 2, 2, 2, 0, 0, 0, 1, PoolKind::Max, false, Prec::Fp16});
}

TEST(Pool2d, AvgExcludingPad) {
  runPool({1, 66, 9, 7, 3, 3, 1, 1, 1, 1, 1, 1, PoolKind::Avg});
}

TEST(Pool2d, AvgIncludingPadBF16) {
  runPool(
      {1, 5, 9, 7, 3, 3, 2, 2, 1, 1, 1, 1, PoolKind::Avg, true, Prec::Bf16});
}

TEST(Pool2d, GlobalAverage) {
  runPool({2, 100, 7, 7, 7, 7, 1, 1, 0, 0, 0, 0, PoolKind::Avg});
}

TEST(Pool2d, SlicedRowsSmallLocalMemory) {
  runPool({1, 130, 50, 20, 3, 3, 2, 2, 1, 1, 1, 1, PoolKind::Avg, false,
           Prec::Fp32, 8 * 1024});
}

TEST(Pool2d, GlobalPoolTooLargeBecomesReduce) {
  // A 1 x 20000 window does not fit 8 KiB per lane: it runs as a reduce.
  runPool({1, 3, 1, 20000, 1, 20000, 1, 1, 0, 0, 0, 0, PoolKind::Max, false,
           Prec::Fp32, 8 * 1024});
}

namespace {

/// x viewed as (outer, d, inner) for an axis.
struct Axis3 {
  int64_t outer, d, inner;
};

Axis3 split(const std::vector<int64_t> &shape, int64_t axis) {
  Axis3 a{1, shape[size_t(axis)], 1};
  for (int64_t i = 0; i < int64_t(shape.size()); ++i) {
    if (i < axis)
      a.outer *= shape[size_t(i)];
    if (i > axis)
      a.inner *= shape[size_t(i)];
  }
  return a;
}

void runSoftmax(std::vector<int64_t> shape, int64_t axis, bool log, Prec p) {
  KernelRun r;
  GlobalAlloc ga(r.chip);
  GTensor in = ga.tensor(p, shape), out = ga.tensor(p, shape);
  auto x = randomValues(size_t(in.numElements()), 51, -8, 8);
  for (float &v : x)
    v = roundTo(v, p);
  Axis3 a = split(shape, axis < 0 ? axis + int64_t(shape.size()) : axis);
  std::vector<float> want(x.size());
  for (int64_t o = 0; o < a.outer; ++o)
    for (int64_t i = 0; i < a.inner; ++i) {
      auto at = [&](int64_t k) { return size_t((o * a.d + k) * a.inner + i); };
      double m = -INFINITY, s = 0;
      for (int64_t k = 0; k < a.d; ++k)
        m = std::max(m, double(x[at(k)]));
      for (int64_t k = 0; k < a.d; ++k)
        s += std::exp(x[at(k)] - m);
      for (int64_t k = 0; k < a.d; ++k)
        want[at(k)] = roundTo(float(log ? x[at(k)] - m - std::log(s)
                                        : std::exp(x[at(k)] - m) / s),
                              p);
    }
  r.emit = [&](CmdEmitter &em) { softmax(em, {"sm", in, out, axis, log}); };
  r.setup = [&](sim::MachineState &m) { writeTensor(m, in, x); };
  // Log-softmax x - m - log(s) is absolute where it is near 0: the sum s
  // carries the exp's error (about 3 ulp relative, Unary.cpp), which the
  // log turns into 3.6e-7 absolute, plus the log's own 1e-7 near 1; a
  // bound of 5e-7 (first met with an F32 case, Softmax.InnerAxes).
  float abs = log ? 5e-7f : 1e-7f;
  r.check = [&](const sim::MachineState &m, const std::string &what) {
    expectClose(readTensor(m, out), want, 2 * ulpOf(p) + 2e-6f, abs, what);
  };
  r.run();
}

} // namespace

TEST(Softmax, LastAxisF32) { runSoftmax({70, 33}, 1, false, Prec::Fp32); }
TEST(Softmax, ChannelAxisF16) {
  runSoftmax({2, 5, 3, 7}, 1, false, Prec::Fp16);
}
TEST(Softmax, LogSoftmaxBF16) { runSoftmax({4, 100}, -1, true, Prec::Bf16); }
// Axes with elements after them (each of those a lane channel, the axis
// read through strides): a segmentation head's classes (N, C, H, W) along
// C, along H of a 4-D tensor, along an inner axis of a 5-D one; log too.
TEST(Softmax, InnerAxes) {
  runSoftmax({2, 19, 5, 7}, 1, false, Prec::Fp16);
  runSoftmax({1, 3, 10, 4}, 2, true, Prec::Fp32);
  runSoftmax({2, 3, 4, 5, 6}, -3, false, Prec::Bf16);
}
TEST(Softmax, LargeClassCount) { runSoftmax({3, 6625}, 1, false, Prec::Fp32); }

TEST(LayerNorm, AffineF32AndF16) {
  for (Prec p : {Prec::Fp32, Prec::Fp16}) {
    KernelRun r;
    GlobalAlloc ga(r.chip);
    const int64_t rows = 70, d = 48;
    GTensor in = ga.tensor(p, {2, 35, d}), out = ga.tensor(p, {2, 35, d});
    auto x = randomValues(size_t(rows * d), 61, -2, 3);
    auto g = randomValues(size_t(d), 62);
    auto b = randomValues(size_t(d), 63);
    for (float &v : x)
      v = roundTo(v, p);
    uint64_t gA = ga.alloc(d * 4), bA = ga.alloc(d * 4);
    std::vector<float> want(x.size());
    for (int64_t r0 = 0; r0 < rows; ++r0) {
      double mean = 0, var = 0;
      for (int64_t k = 0; k < d; ++k)
        mean += x[size_t(r0 * d + k)];
      mean /= d;
      for (int64_t k = 0; k < d; ++k)
        var += std::pow(x[size_t(r0 * d + k)] - mean, 2);
      var /= d;
      for (int64_t k = 0; k < d; ++k)
        want[size_t(r0 * d + k)] =
            roundTo(float((x[size_t(r0 * d + k)] - mean) /
                              std::sqrt(var + 1e-5) * g[size_t(k)] +
                          b[size_t(k)]),
                    p);
    }
    LayerNormParams lp{"ln", in, out, -1, 1e-5f, gA, bA};
    // The scale and bias, needed in every lane, are each read from DDR
    // once (a lane broadcast), not once per lane.
    CmdEmitter probe(r.chip);
    layerNorm(probe, lp);
    EXPECT_EQ(ddrReadBytes(probe),
              uint64_t(rows * d) * isa::precBytes(p) + 2 * d * 4);
    r.emit = [&](CmdEmitter &em) { layerNorm(em, lp); };
    r.setup = [&](sim::MachineState &m) {
      writeTensor(m, in, x);
      writeBytes(m, gA, encodeAs(g, Prec::Fp32));
      writeBytes(m, bA, encodeAs(b, Prec::Fp32));
    };
    r.check = [&](const sim::MachineState &m, const std::string &what) {
      expectClose(readTensor(m, out), want, 2 * ulpOf(p) + 1e-5f, 1e-5f, what);
    };
    r.run();
  }
}

namespace {

/// Reduces `shape` over `axes` on a chip of `lmem` bytes a lane (0: the
/// BM1684X's) and checks the result against a double-precision reference;
/// `slices`: whether the emitter must note reduced-axis shares (their
/// bounds from 0 to the reduced extent) or none.
void runReduce(std::vector<int64_t> shape, std::vector<int64_t> axes,
               ReduceKind k, Prec p, uint64_t lmem = 0, bool slices = false) {
  KernelRun r;
  if (lmem)
    r.chip.lmemBytes = lmem;
  GlobalAlloc ga(r.chip);
  GTensor in = ga.tensor(p, shape);
  // Output: the reduced dims kept as 1.
  std::vector<int64_t> os = shape;
  for (int64_t a : axes)
    os[size_t(a < 0 ? a + int64_t(shape.size()) : a)] = 1;
  GTensor out = ga.tensor(p, os);
  auto x = randomValues(size_t(in.numElements()), 71, -2, 2);
  for (float &v : x)
    v = roundTo(v, p);
  std::vector<int64_t> st = denseStrides(shape), ost = denseStrides(os);
  std::vector<double> acc(size_t(out.numElements()),
                          k == ReduceKind::Max   ? -INFINITY
                          : k == ReduceKind::Min ? INFINITY
                                                 : 0.0);
  for (int64_t i = 0; i < in.numElements(); ++i) {
    int64_t o = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      o += (i / st[d] % shape[d]) * (os[d] == 1 ? 0 : ost[d]);
    double v = x[size_t(i)];
    double &a = acc[size_t(o)];
    switch (k) {
    case ReduceKind::Max:
      a = std::max(a, v);
      break;
    case ReduceKind::Min:
      a = std::min(a, v);
      break;
    case ReduceKind::SumSquare:
    case ReduceKind::L2:
      a += v * v;
      break;
    default:
      a += v;
    }
  }
  int64_t count = in.numElements() / out.numElements();
  std::vector<float> want(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) {
    double v = acc[i];
    if (k == ReduceKind::Mean)
      v /= double(count);
    if (k == ReduceKind::L2)
      v = std::sqrt(v);
    want[i] = roundTo(float(v), p);
  }
  r.emit = [&](CmdEmitter &em) { reduce(em, {"red", in, out, k, axes}); };
  r.setup = [&](sim::MachineState &m) { writeTensor(m, in, x); };
  r.check = [&](const sim::MachineState &m, const std::string &what) {
    expectClose(readTensor(m, out), want, 2 * ulpOf(p) + 1e-5f, 1e-5f,
                what + " reduce " + std::to_string(int(k)));
  };
  std::vector<ReducedShares> shares = r.run().reducedShares;
  ASSERT_EQ(shares.size(), slices ? 1u : 0u)
      << "reduce of " << in.numElements() << " elements to "
      << out.numElements();
  if (slices) {
    int64_t extent = in.numElements() / out.numElements();
    EXPECT_EQ(shares[0].op, "red");
    ASSERT_GT(shares[0].bounds.size(), 2u);
    EXPECT_EQ(shares[0].bounds.front(), 0);
    EXPECT_EQ(shares[0].bounds.back(), extent);
    EXPECT_TRUE(
        std::is_sorted(shares[0].bounds.begin(), shares[0].bounds.end()));
  }
}

} // namespace

TEST(Reduce, EveryKindLastAxis) {
  for (ReduceKind k : {ReduceKind::Sum, ReduceKind::Mean, ReduceKind::Max,
                       ReduceKind::Min, ReduceKind::SumSquare, ReduceKind::L2})
    runReduce({70, 31}, {1}, k, Prec::Fp32);
}

TEST(Reduce, SpatialMeanF16) {
  runReduce({2, 80, 5, 6}, {2, 3}, ReduceKind::Mean, Prec::Fp16);
}

TEST(Reduce, ChannelAxisFewRows) {
  // One outer row: a factor of the inner dims goes onto the lanes.
  runReduce({1, 20, 8, 9}, {1}, ReduceKind::Max, Prec::Fp32);
}

TEST(Reduce, AllElementsChunked) {
  runReduce({300, 200}, {0, 1}, ReduceKind::Sum, Prec::Fp32, 8 * 1024, true);
}

TEST(Reduce, ReducedAxisSlicesEveryKind) {
  // 16 KiB of local memory per lane: the reduced extents, 30000 along H of
  // a strided view (axis 1 of [3, 30000, 5]) and 20000 along W (the last
  // axis of [4, 20000]), fit only cut into reduced-axis slices that
  // accumulate (LayerGroup.ReducedAxisSlicesPlans).
  for (ReduceKind k :
       {ReduceKind::Sum, ReduceKind::Mean, ReduceKind::Max, ReduceKind::Min,
        ReduceKind::SumSquare, ReduceKind::L2}) {
    SCOPED_TRACE(int(k));
    runReduce({3, 30000, 5}, {1}, k, Prec::Fp32, 16 * 1024, true);
    runReduce({4, 20000}, {1}, k, Prec::Fp16, 16 * 1024, true);
  }
  // 4099 rows (prime: held in one lane, (1, 1, 4099, 100)) of 100 in 4
  // KiB: not even one column of every row fits, the rows are cut too;
  // 70000 elements along H, past the pooling's 16-bit window, with 67
  // channels over the lanes.
  runReduce({4099, 100}, {1}, ReduceKind::Mean, Prec::Fp32, 4 * 1024);
  runReduce({67, 70000}, {1}, ReduceKind::Max, Prec::Fp16, 0, true);
}

TEST(Reduce, NonAdjacentAxesIsAnError) {
  CmdEmitter em;
  GlobalAlloc ga(em.chip());
  ReduceParams p{"r2",
                 ga.tensor(Prec::Fp32, {2, 3, 4}),
                 ga.tensor(Prec::Fp32, {1, 3, 1}),
                 ReduceKind::Sum,
                 {0, 2}};
  try {
    reduce(em, p);
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("reduce 'r2'"), std::string::npos);
  }
}
