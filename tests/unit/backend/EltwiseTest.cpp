//===- EltwiseTest.cpp - unary, binary, cast, prelu, where ----------------===//
//
// References: libm in double for the functions (the tolerance of each
// transcendental is the accuracy the backend documents for it, in
// Unary.cpp), exact float arithmetic rounded once to the output precision
// for the AR operations (the simulator computes in fp32 and rounds once,
// which is the correctly rounded result for fp16 / bf16 operands).
//
//===----------------------------------------------------------------------===//

#include "BackendTestUtil.h"

#include <algorithm>
#include <map>

using namespace tpu;
using namespace tpu::backend;
using namespace tpu::backend::test;

namespace {

double refUnary(UnaryKind k, double x, const Activation &a) {
  switch (k) {
  case UnaryKind::Relu:
    return std::max(x, 0.0);
  case UnaryKind::Exp:
    return std::exp(x);
  case UnaryKind::Log:
    return std::log(x);
  case UnaryKind::Sigmoid:
    return 1 / (1 + std::exp(-x));
  case UnaryKind::Tanh:
    return std::tanh(x);
  case UnaryKind::Sqrt:
    return std::sqrt(x);
  case UnaryKind::Rsqrt:
    return 1 / std::sqrt(x);
  case UnaryKind::Reciprocal:
    return 1 / x;
  case UnaryKind::Erf:
    return std::erf(x);
  case UnaryKind::Gelu:
    return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  case UnaryKind::Silu:
    return x / (1 + std::exp(-x));
  case UnaryKind::Softplus:
    return std::log1p(std::exp(x));
  case UnaryKind::Mish:
    return x * std::tanh(std::log1p(std::exp(x)));
  case UnaryKind::Abs:
    return std::fabs(x);
  case UnaryKind::Neg:
    return -x;
  case UnaryKind::Square:
    return x * x;
  case UnaryKind::Floor:
    return std::floor(x);
  case UnaryKind::Ceil:
    return std::ceil(x);
  case UnaryKind::Round:
    return std::nearbyint(x);
  case UnaryKind::Sign:
    return x > 0 ? 1 : (x < 0 ? -1 : 0);
  case UnaryKind::Pow:
    return std::pow(x, double(a.alpha));
  case UnaryKind::Clip:
    return std::min(std::max(x, double(a.alpha)), double(a.beta));
  case UnaryKind::LeakyRelu:
    return x >= 0 ? x : a.alpha * x;
  case UnaryKind::HardSigmoid:
    return std::min(std::max(a.alpha * x + a.beta, 0.0), 1.0);
  case UnaryKind::HardSwish:
    return x * std::min(std::max(x / 6 + 0.5, 0.0), 1.0);
  case UnaryKind::Scale:
    return a.alpha * x + a.beta;
  default:
    return x;
  }
}

struct UnaryCase {
  Activation fn;
  float lo, hi;
  /// Accepted error: rtol * |ref| + atol (F32).
  float rtol, atol;
};

void runUnary(const UnaryCase &c, Prec prec, std::vector<int64_t> shape,
              uint64_t lmem = 0) {
  KernelRun r;
  if (lmem)
    r.chip.lmemBytes = lmem;
  GlobalAlloc ga(r.chip);
  GTensor in = ga.tensor(prec, shape), out = ga.tensor(prec, shape);
  auto x = randomValues(size_t(in.numElements()), 17, c.lo, c.hi);
  std::vector<float> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = roundTo(x[i], prec);
    want[i] = roundTo(float(refUnary(c.fn.kind, x[i], c.fn)), prec);
  }
  r.emit = [&](CmdEmitter &em) { unary(em, {"f", in, out, c.fn}); };
  r.setup = [&](sim::MachineState &m) { writeTensor(m, in, x); };
  r.check = [&](const sim::MachineState &m, const std::string &what) {
    // Low precisions add intermediate roundings (constants and steps in
    // the tensor precision for the piecewise-linear kinds, one final
    // rounding for the fp32-staged ones).
    float rt = prec == Prec::Fp32 ? c.rtol : c.rtol + 3 * ulpOf(prec);
    float at = prec == Prec::Fp32 ? c.atol : c.atol + 2 * ulpOf(prec);
    expectClose(readTensor(m, out), want, rt, at,
                what + " kind " + std::to_string(int(c.fn.kind)));
  };
  r.run();
}

constexpr float kUlp = 1.0f / (1 << 23);

const std::vector<UnaryCase> &cases() {
  static const std::vector<UnaryCase> v = {
      {{UnaryKind::Relu}, -2, 2, 0, 0},
      {{UnaryKind::LeakyRelu, 0.1f}, -2, 2, kUlp, 0},
      {{UnaryKind::LeakyRelu, 1.5f}, -2, 2, kUlp, 0},
      {{UnaryKind::Clip, -0.5f, 0.7f}, -2, 2, 0, 0},
      {{UnaryKind::HardSigmoid, 0.2f, 0.5f}, -4, 4, 4 * kUlp, 1e-7f},
      {{UnaryKind::HardSwish}, -5, 5, 4 * kUlp, 1e-7f},
      {{UnaryKind::Exp}, -20, 20, 8 * kUlp, 0},
      {{UnaryKind::Exp}, -100, 5, 8 * kUlp, 1e-37f},
      {{UnaryKind::Log}, 1e-6f, 1e4f, 4 * kUlp, 2e-7f},
      {{UnaryKind::Log}, 0.5f, 2.0f, 4 * kUlp, 2e-7f},
      {{UnaryKind::Sigmoid}, -30, 30, 8 * kUlp, 1e-7f},
      {{UnaryKind::Tanh}, -10, 10, 8 * kUlp, 2e-7f},
      {{UnaryKind::Sqrt}, 0, 100, 2 * kUlp, 0},
      {{UnaryKind::Rsqrt}, 0.01f, 100, 2 * kUlp, 0},
      {{UnaryKind::Reciprocal}, 0.1f, 10, kUlp, 0},
      {{UnaryKind::Erf}, -4, 4, 0, 3e-7f},
      {{UnaryKind::Gelu}, -6, 6, 8 * kUlp, 3e-7f},
      {{UnaryKind::Silu}, -20, 20, 8 * kUlp, 1e-7f},
      {{UnaryKind::Softplus}, -20, 20, 8 * kUlp, 2e-7f},
      {{UnaryKind::Mish}, -10, 10, 16 * kUlp, 3e-7f},
      {{UnaryKind::Abs}, -2, 2, 0, 0},
      {{UnaryKind::Neg}, -2, 2, 0, 0},
      {{UnaryKind::Square}, -3, 3, kUlp, 0},
      {{UnaryKind::Scale, 2.5f, -1.0f}, -3, 3, 2 * kUlp, 1e-7f},
      {{UnaryKind::Floor}, -1e3f, 1e3f, 0, 0},
      {{UnaryKind::Ceil}, -1e3f, 1e3f, 0, 0},
      {{UnaryKind::Round}, -1e3f, 1e3f, 0, 0},
      {{UnaryKind::Sign}, -2, 2, 0, 0},
      {{UnaryKind::Pow, 3.0f}, -2, 2, 4 * kUlp, 0},
      {{UnaryKind::Pow, -2.0f}, 0.5f, 2, 4 * kUlp, 0},
      {{UnaryKind::Pow, 0.5f}, 0, 4, 2 * kUlp, 0},
      {{UnaryKind::Pow, 1.7f}, 0.1f, 4, 16 * kUlp, 0},
  };
  return v;
}

} // namespace

TEST(Unary, EveryKindF32) {
  for (const UnaryCase &c : cases())
    runUnary(c, Prec::Fp32, {3, 70, 5});
}

TEST(Unary, TranscendentalsF16) {
  for (const UnaryCase &c : cases())
    if (c.fn.kind == UnaryKind::Exp || c.fn.kind == UnaryKind::Sigmoid ||
        c.fn.kind == UnaryKind::Gelu || c.fn.kind == UnaryKind::HardSwish ||
        c.fn.kind == UnaryKind::Tanh || c.fn.kind == UnaryKind::Log)
      runUnary(c, Prec::Fp16, {1, 200});
}

TEST(Unary, TranscendentalsBF16) {
  for (const UnaryCase &c : cases())
    if (c.fn.kind == UnaryKind::Silu || c.fn.kind == UnaryKind::Sqrt ||
        c.fn.kind == UnaryKind::Erf || c.fn.kind == UnaryKind::Relu)
      runUnary(c, Prec::Bf16, {7, 9});
}

TEST(Unary, ManyTilesWithSmallLocalMemory) {
  // 50000 elements through 2 KiB per lane: dozens of tiles plus a
  // remainder of fewer than 64 elements.
  runUnary({{UnaryKind::Sigmoid}, -8, 8, 8 * kUlp, 1e-7f}, Prec::Fp32, {50000},
           2 * 1024);
}

TEST(Unary, ScalarTensor) {
  runUnary({{UnaryKind::Exp}, -1, 1, 8 * kUlp, 0}, Prec::Fp32, {});
}

TEST(Unary, SpecialValues) {
  KernelRun r;
  GlobalAlloc ga(r.chip);
  GTensor in = ga.tensor(Prec::Fp32, {4});
  GTensor lg = ga.tensor(Prec::Fp32, {4}), sq = ga.tensor(Prec::Fp32, {4});
  std::vector<float> x{0.0f, 1.0f, 4.0f, 1e-30f};
  r.emit = [&](CmdEmitter &em) {
    unary(em, {"log", in, lg, {UnaryKind::Log}});
    unary(em, {"sqrt", in, sq, {UnaryKind::Sqrt}});
  };
  r.setup = [&](sim::MachineState &m) { writeTensor(m, in, x); };
  r.check = [&](const sim::MachineState &m, const std::string &what) {
    auto l = readTensor(m, lg);
    EXPECT_TRUE(std::isinf(l[0]) && l[0] < 0) << what; // log 0 = -inf
    EXPECT_EQ(l[1], 0.0f) << what;
    EXPECT_NEAR(l[3], std::log(1e-30), 1e-4) << what;
    auto s = readTensor(m, sq);
    EXPECT_EQ(s[0], 0.0f) << what; // 1 / rsqrt(0) = 1 / inf
    EXPECT_EQ(s[2], 2.0f) << what;
  };
  r.run();
}

namespace {

double refBinary(BinaryKind k, double a, double b) {
  switch (k) {
  case BinaryKind::Add:
    return a + b;
  case BinaryKind::Sub:
    return a - b;
  case BinaryKind::Mul:
    return a * b;
  case BinaryKind::Div:
    return a / b;
  case BinaryKind::Max:
    return std::max(a, b);
  case BinaryKind::Min:
    return std::min(a, b);
  case BinaryKind::Pow:
    return std::pow(a, b);
  }
  return 0;
}

/// Numpy-broadcast element-wise reference.
std::vector<float>
broadcastRef(const std::vector<float> &a, std::vector<int64_t> as,
             const std::vector<float> &b, std::vector<int64_t> bs,
             const std::vector<int64_t> &os,
             const std::function<double(double, double)> &f, Prec p) {
  size_t r = os.size();
  as.insert(as.begin(), r - as.size(), 1);
  bs.insert(bs.begin(), r - bs.size(), 1);
  int64_t total = 1;
  for (int64_t d : os)
    total *= d;
  std::vector<float> out(static_cast<size_t>(total));
  for (int64_t i = 0; i < total; ++i) {
    int64_t rem = i, ai = 0, bi = 0, am = 1, bm = 1;
    for (size_t d = r; d-- > 0;) {
      int64_t idx = rem % os[d];
      rem /= os[d];
      ai += (as[d] == 1 ? 0 : idx) * am;
      bi += (bs[d] == 1 ? 0 : idx) * bm;
      am *= as[d];
      bm *= bs[d];
    }
    out[size_t(i)] = roundTo(float(f(a[size_t(ai)], b[size_t(bi)])), p);
  }
  return out;
}

void runBinary(BinaryKind k, std::vector<int64_t> as, std::vector<int64_t> bs,
               std::vector<int64_t> os, Prec p, float lo = -2, float hi = 2,
               float rtol = 0, uint64_t lmem = 0) {
  KernelRun r;
  if (lmem)
    r.chip.lmemBytes = lmem;
  GlobalAlloc ga(r.chip);
  GTensor a = ga.tensor(p, as), b = ga.tensor(p, bs), o = ga.tensor(p, os);
  auto av = randomValues(size_t(a.numElements()), 1, lo, hi);
  auto bv = randomValues(size_t(b.numElements()), 2, lo, hi);
  for (float &v : av)
    v = roundTo(v, p);
  for (float &v : bv)
    v = roundTo(v, p);
  auto want = broadcastRef(
      av, as, bv, bs, os,
      [&](double x, double y) { return refBinary(k, x, y); }, p);
  r.emit = [&](CmdEmitter &em) { binary(em, {"bin", a, b, o, k, {}}); };
  r.setup = [&](sim::MachineState &m) {
    writeTensor(m, a, av);
    writeTensor(m, b, bv);
  };
  r.check = [&](const sim::MachineState &m, const std::string &what) {
    expectClose(readTensor(m, o), want, rtol, 0,
                what + " binary " + std::to_string(int(k)));
  };
  r.run();
}

} // namespace

TEST(Binary, SameShapeEveryKindF32) {
  for (BinaryKind k : {BinaryKind::Add, BinaryKind::Sub, BinaryKind::Mul,
                       BinaryKind::Div, BinaryKind::Max, BinaryKind::Min})
    runBinary(k, {2, 70, 3}, {2, 70, 3}, {2, 70, 3}, Prec::Fp32);
}

TEST(Binary, PerChannelBias) {
  runBinary(BinaryKind::Add, {2, 70, 3, 5}, {70, 1, 1}, {2, 70, 3, 5},
            Prec::Fp32);
}

TEST(Binary, ChannelGateF16) {
  // [N, C, H, W] * [N, C, 1, 1] (squeeze-and-excitation).
  runBinary(BinaryKind::Mul, {2, 80, 4, 6}, {2, 80, 1, 1}, {2, 80, 4, 6},
            Prec::Fp16);
}

// INT8 mul / add / sub of an int8 (N, C, H, W) tensor and a per-channel
// uint8 (N, C, 1, 1) gate (squeeze-and-excitation), symmetric and with
// zero points: the gate is loaded once per channel and read with zero
// h / w strides (DDR reads: the input and N x C gate bytes, where
// materialising the broadcast read the gate once per h x w position);
// every code equals the same op on the gate written out in full. Shapes:
// (2, 80, 4, 6); and PP-OCR cls's (1, 48, 3, 96), whose 48 rows are fewer
// than the lanes, so a plain (48, 288) job would spread 288 over the lanes
// and need the gate in each (48 x 48 single-byte runs).
class BinaryInt8Gate : public ::testing::TestWithParam<std::vector<int64_t>> {};

TEST_P(BinaryInt8Gate, PerChannelGateEqualsMaterialised) {
  isa::ChipParams chip = isa::ChipParams::bm1684x();
  std::vector<int64_t> xs = GetParam(), gs{xs[0], xs[1], 1, 1};
  uint64_t xBytes = uint64_t(count(xs)), gBytes = uint64_t(count(gs));
  size_t plane = size_t(xs[2] * xs[3]);
  auto xv = randomValues(size_t(count(xs)), 3, -128, 127);
  auto gv = randomValues(size_t(count(gs)), 4, 0, 255);
  for (float &v : xv)
    v = std::round(v);
  for (float &v : gv)
    v = std::round(v);
  std::vector<float> full(xv.size());
  for (size_t i = 0; i < full.size(); ++i)
    full[i] = gv[i / plane];
  for (BinaryKind kind : {BinaryKind::Mul, BinaryKind::Add, BinaryKind::Sub})
    for (bool asym : {false, true}) {
      std::string what = std::to_string(int(kind)) + (asym ? " asym" : "");
      GlobalAlloc ga(chip);
      GTensor x = ga.tensor(Prec::Int8, xs), g = ga.tensor(Prec::Int8, gs);
      GTensor gFull = ga.tensor(Prec::Int8, xs);
      GTensor y = ga.tensor(Prec::Int8, xs), yFull = ga.tensor(Prec::Int8, xs);
      x.isSigned = y.isSigned = yFull.isSigned = true;
      g.isSigned = gFull.isSigned = false;
      BinaryInt8Params p;
      p.name = "gate";
      p.lhs = x;
      p.rhs = g;
      p.output = y;
      p.kind = kind;
      if (kind == BinaryKind::Mul) {
        p.multiplier[0] = 23112391;
        p.rshift[0] = 30;
      } else {
        p.multiplier[0] = 181;
        p.multiplier[1] = 77;
        p.rshift[0] = 7;
        p.rshift[1] = 9;
        p.shift = 1;
      }
      if (asym) {
        p.zeroPoint[0] = -3;
        p.zeroPoint[1] = 17;
        p.outZeroPoint = 5;
      }
      BinaryInt8Params pFull = p;
      pFull.rhs = gFull;
      pFull.output = yFull;
      CmdEmitter probe(chip);
      binaryInt8(probe, p);
      EXPECT_EQ(ddrReadBytes(probe), xBytes + gBytes) << what;
      CmdEmitter probeFull(chip);
      binaryInt8(probeFull, pFull);
      EXPECT_EQ(ddrReadBytes(probeFull), 2 * xBytes) << what;
      KernelRun r;
      r.emit = [&](CmdEmitter &em) {
        binaryInt8(em, p);
        binaryInt8(em, pFull);
      };
      r.setup = [&](sim::MachineState &m) {
        writeTensor(m, x, xv);
        writeTensor(m, g, gv);
        writeTensor(m, gFull, full);
      };
      r.check = [&](const sim::MachineState &m, const std::string &sched) {
        std::vector<float> a = readTensor(m, y), b = readTensor(m, yFull);
        expectClose(a, b, 0, 0, what + " " + sched);
        // Not a constant result: the codes spread.
        EXPECT_GT(*std::max_element(a.begin(), a.end()) -
                      *std::min_element(a.begin(), a.end()),
                  20.0f)
            << what;
      };
      r.run();
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, BinaryInt8Gate,
                         ::testing::Values(std::vector<int64_t>{2, 80, 4, 6},
                                           std::vector<int64_t>{1, 48, 3, 96}));

// An INT8 table lookup: every code is table[raw byte of the input code]
// (the table derived here), and the 256-byte table, which every lane
// holds, is read from DDR once: one lane-broadcast GDMA (special function
// 3), where a move with a zero channel stride read it once per lane.
TEST(Lut, TableBroadcastIntoEveryLane) {
  KernelRun r;
  GlobalAlloc ga(r.chip);
  std::vector<int64_t> shape{2, 100, 3, 7};
  GTensor x = ga.tensor(Prec::Int8, shape), y = ga.tensor(Prec::Int8, shape);
  x.isSigned = y.isSigned = true;
  auto xv = randomValues(size_t(count(shape)), 81, -128, 127);
  for (float &v : xv)
    v = std::round(v);
  std::mt19937 rng(82);
  std::vector<uint8_t> table(256);
  for (uint8_t &t : table)
    t = uint8_t(rng());
  uint64_t tableAddr = ga.alloc(256);
  std::vector<float> want(xv.size());
  for (size_t i = 0; i < xv.size(); ++i)
    want[i] = float(int8_t(table[uint8_t(int8_t(xv[i]))]));
  LutParams p{"lut", x, y, tableAddr, {}};
  CmdEmitter probe(r.chip);
  lut(probe, p);
  EXPECT_EQ(ddrReadBytes(probe), uint64_t(count(shape)) + 256);
  unsigned broadcasts = 0;
  for (const isa::RawCommand &c : probe.gdmaCommands())
    broadcasts += sim::decodeGdma(c, r.chip).special == 3;
  EXPECT_EQ(broadcasts, 1u);
  r.emit = [&](CmdEmitter &em) { lut(em, p); };
  r.setup = [&](sim::MachineState &m) {
    writeTensor(m, x, xv);
    writeBytes(m, tableAddr, table);
  };
  r.check = [&](const sim::MachineState &m, const std::string &what) {
    expectClose(readTensor(m, y), want, 0, 0, what);
  };
  r.run();
}

TEST(Binary, OuterBroadcastBF16) {
  runBinary(BinaryKind::Sub, {4, 1, 6}, {1, 5, 1}, {4, 5, 6}, Prec::Bf16);
}

TEST(Binary, RowVectorAndScalar) {
  runBinary(BinaryKind::Div, {7, 33}, {33}, {7, 33}, Prec::Fp32, 0.5f, 2.0f);
  runBinary(BinaryKind::Max, {3, 4, 5}, {}, {3, 4, 5}, Prec::Fp32);
}

TEST(Binary, SixDimsLoopOuterDims) {
  runBinary(BinaryKind::Add, {2, 3, 1, 4, 5, 2}, {3, 2, 1, 5, 1},
            {2, 3, 2, 4, 5, 2}, Prec::Fp32);
}

TEST(Binary, PowF32) {
  runBinary(BinaryKind::Pow, {50}, {50}, {50}, Prec::Fp32, 0.5f, 2.0f,
            32 * kUlp);
}

TEST(Binary, LargeWithSmallLocalMemory) {
  runBinary(BinaryKind::Add, {3, 1000, 7}, {1000, 1}, {3, 1000, 7}, Prec::Fp16,
            -2, 2, 0, 4 * 1024);
}

TEST(Binary, NonBroadcastableIsAnError) {
  CmdEmitter em;
  GlobalAlloc ga(em.chip());
  BinaryParams p{"add3",
                 ga.tensor(Prec::Fp32, {3, 4}),
                 ga.tensor(Prec::Fp32, {3, 5}),
                 ga.tensor(Prec::Fp32, {3, 5}),
                 BinaryKind::Add,
                 {}};
  try {
    binary(em, p);
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("binary 'add3'"), std::string::npos)
        << e.what();
  }
}

TEST(BinaryConst, EveryKindAndSide) {
  for (bool left : {false, true})
    for (BinaryKind k : {BinaryKind::Add, BinaryKind::Sub, BinaryKind::Mul,
                         BinaryKind::Div, BinaryKind::Max, BinaryKind::Min}) {
      KernelRun r;
      GlobalAlloc ga(r.chip);
      GTensor a = ga.tensor(Prec::Fp16, {5, 30}),
              o = ga.tensor(Prec::Fp16, {5, 30});
      auto av = randomValues(size_t(a.numElements()), 9, 0.5f, 2);
      const float c = 0.75f; // exact in fp16
      std::vector<float> want(av.size());
      for (size_t i = 0; i < av.size(); ++i) {
        av[i] = roundTo(av[i], Prec::Fp16);
        want[i] = roundTo(
            float(left ? refBinary(k, c, av[i]) : refBinary(k, av[i], c)),
            Prec::Fp16);
      }
      r.emit = [&](CmdEmitter &em) {
        binaryConst(em, {"bc", a, o, k, c, left, {UnaryKind::None}});
      };
      r.setup = [&](sim::MachineState &m) { writeTensor(m, a, av); };
      r.check = [&](const sim::MachineState &m, const std::string &what) {
        expectClose(readTensor(m, o), want, 0, 0, what);
      };
      r.run();
    }
}

TEST(Cast, F32ToF16ToBF16) {
  KernelRun r;
  GlobalAlloc ga(r.chip);
  GTensor a = ga.tensor(Prec::Fp32, {3, 100}), h = ga.tensor(Prec::Fp16, {300}),
          b = ga.tensor(Prec::Bf16, {3, 100}), f = ga.tensor(Prec::Fp32, {300});
  auto av = randomValues(300, 4, -100, 100);
  r.emit = [&](CmdEmitter &em) {
    cast(em, {"c1", a, h});
    cast(em, {"c2", h, b});
    cast(em, {"c3", b, f});
  };
  r.setup = [&](sim::MachineState &m) { writeTensor(m, a, av); };
  r.check = [&](const sim::MachineState &m, const std::string &what) {
    std::vector<float> wh(300), wf(300);
    for (size_t i = 0; i < 300; ++i) {
      wh[i] = roundTo(av[i], Prec::Fp16);
      wf[i] = roundTo(wh[i], Prec::Bf16);
    }
    expectClose(readTensor(m, h), wh, 0, 0, what);
    expectClose(readTensor(m, f), wf, 0, 0, what);
  };
  r.run();
}

namespace {

/// prelu of an input of `xs` with a slope of `ss` against numpy-style
/// broadcasting of a >= 0 ? a : a * b, exact (one rounding).
void runPRelu(Prec prec, const std::vector<int64_t> &xs,
              const std::vector<int64_t> &ss) {
  KernelRun r;
  GlobalAlloc ga(r.chip);
  GTensor x = ga.tensor(prec, xs), s = ga.tensor(prec, ss),
          o = ga.tensor(prec, xs);
  auto xv = randomValues(size_t(x.numElements()), 5, -4, 4);
  auto sv = randomValues(size_t(s.numElements()), 6, -2, 2);
  for (auto *v : {&xv, &sv})
    for (float &e : *v)
      e = roundTo(e, prec);
  auto want = broadcastRef(
      xv, x.shape, sv, s.shape, o.shape,
      [](double a, double b) { return a >= 0 ? a : a * b; }, prec);
  r.emit = [&](CmdEmitter &em) { prelu(em, {"prelu", x, s, o}); };
  r.setup = [&](sim::MachineState &m) {
    writeTensor(m, x, xv);
    writeTensor(m, s, sv);
  };
  r.check = [&](const sim::MachineState &m, const std::string &what) {
    expectClose(readTensor(m, o), want, 0, 0, what);
  };
  r.run();
}

} // namespace

TEST(PRelu, PerChannelSlope) {
  runPRelu(Prec::Fp32, {2, 70, 3, 3}, {70, 1, 1});
}

/// Slopes that are not one per channel (ONNX PRelu broadcasts them like a
/// binary op): along the last axis of a rank-3 input (test_prelu_broadcast's
/// (3, 4, 5) x (5)), of the input's whole shape, per (n, c) and along H of
/// a 4-D input, read as a value (a group of one over broadcastJobs' views)
/// rather than a resident per-channel weight.
TEST(PRelu, SlopesOtherThanPerChannel) {
  runPRelu(Prec::Fp16, {3, 4, 5}, {5});
  runPRelu(Prec::Fp16, {2, 3, 7}, {2, 3, 7});
  runPRelu(Prec::Fp16, {2, 70, 3, 5}, {2, 70, 1, 1});
  runPRelu(Prec::Fp16, {1, 8, 3, 5}, {1, 1, 3, 1});
}

TEST(Where, BroadcastCondition) {
  KernelRun r;
  GlobalAlloc ga(r.chip);
  GTensor c = ga.tensor(Prec::Int8, {1, 6});
  GTensor x = ga.tensor(Prec::Fp32, {4, 6}), y = ga.tensor(Prec::Fp32, {1}),
          o = ga.tensor(Prec::Fp32, {4, 6});
  std::vector<uint8_t> cv{1, 0, 0, 1, 1, 0};
  auto xv = randomValues(24, 8);
  std::vector<float> yv{-7.0f};
  std::vector<float> want(24);
  for (size_t i = 0; i < 24; ++i)
    want[i] = cv[i % 6] ? xv[i] : yv[0];
  r.emit = [&](CmdEmitter &em) { where(em, {"where", c, x, y, o}); };
  r.setup = [&](sim::MachineState &m) {
    writeBytes(m, c.addr, cv);
    writeTensor(m, x, xv);
    writeTensor(m, y, yv);
  };
  r.check = [&](const sim::MachineState &m, const std::string &what) {
    expectClose(readTensor(m, o), want, 0, 0, what);
  };
  r.run();
}
