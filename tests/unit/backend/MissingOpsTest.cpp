//===- MissingOpsTest.cpp - compare, integer casts, gather, pad, pool3d ---===//
//
// The kernels the codegen needed beyond the first set, run on the simulator
// under every engine schedule (BackendTestUtil.h) and compared with plain
// nested-loop references written here:
//  - compare / compareConst: exact (0 / 1), NaN included;
//  - cast between float and integer types: exact (rounding written out per
//    round mode with <cmath>, saturation by clamping);
//  - gather with float-encoded run-time indices: exact;
//  - pad (reflect / edge, 4-D, every dim padded): exact;
//  - pool3d: max exact; average within one rounding of the output type
//    (rtol = ulpOf(output)) plus an absolute 1e-6 for the fp32 summation
//    order (the reference sums in double).
// Small local memories force the kernels to slice.
//
//===----------------------------------------------------------------------===//

#include "BackendTestUtil.h"

#include <algorithm>
#include <limits>

using namespace tpu;
using namespace tpu::backend;
using namespace tpu::backend::test;

namespace {

constexpr Prec kFloatPrecs[] = {Prec::Fp32, Prec::Fp16, Prec::Bf16};

/// Flat index of `idx` in dims `d` where dims of size 1 broadcast.
int64_t flatBroadcast(const std::vector<int64_t> &idx,
                      const std::vector<int64_t> &d) {
  size_t off = idx.size() - d.size();
  int64_t f = 0;
  for (size_t k = 0; k < d.size(); ++k)
    f = f * d[k] + (d[k] == 1 ? 0 : idx[off + k]);
  return f;
}

/// Integer tensors: raw little-endian elements of the tensor's width.
void writeInts(sim::MachineState &m, const GTensor &t,
               const std::vector<int64_t> &v) {
  unsigned eb = isa::precBytes(t.prec);
  std::vector<uint8_t> b(v.size() * eb);
  for (size_t i = 0; i < v.size(); ++i)
    for (unsigned k = 0; k < eb; ++k)
      b[i * eb + k] = uint8_t(uint64_t(v[i]) >> (8 * k));
  m.gmem.write(t.addr, b.data(), b.size());
}

std::vector<int64_t> readInts(const sim::MachineState &m, const GTensor &t) {
  unsigned eb = isa::precBytes(t.prec);
  std::vector<uint8_t> b(t.bytes());
  m.gmem.read(t.addr, b.data(), b.size());
  std::vector<int64_t> v(size_t(t.numElements()));
  for (size_t i = 0; i < v.size(); ++i) {
    uint64_t u = 0;
    for (unsigned k = 0; k < eb; ++k)
      u |= uint64_t(b[i * eb + k]) << (8 * k);
    if (t.isSigned && eb < 8 && (u >> (8 * eb - 1)) & 1)
      u |= ~uint64_t(0) << (8 * eb);
    v[i] = int64_t(u);
  }
  return v;
}

void expectEqualInts(const std::vector<int64_t> &got,
                     const std::vector<int64_t> &want,
                     const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i] && bad++ < 8)
      ADD_FAILURE() << what << ": element " << i << " is " << got[i]
                    << ", expected " << want[i];
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size()
                     << " elements differ";
}

/// Values that collide often (multiples of 1/4 in [-2, 2], exact in every
/// float type) with a NaN every 17th element from `nanFrom` on.
std::vector<float> collidingValues(size_t n, unsigned seed,
                                   size_t nanFrom = ~size_t(0)) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> d(-8, 8);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = i >= nanFrom && i % 17 == 0 ? std::numeric_limits<float>::quiet_NaN()
                                       : float(d(gen)) / 4.0f;
  return v;
}

bool holds(CompareKind k, float a, float b) {
  switch (k) {
  case CompareKind::Eq:
    return a == b;
  case CompareKind::Ne:
    return a != b; // true for NaN
  case CompareKind::Lt:
    return a < b;
  case CompareKind::Le:
    return a <= b;
  case CompareKind::Gt:
    return a > b;
  case CompareKind::Ge:
    return a >= b;
  }
  return false;
}

constexpr CompareKind kCompareKinds[] = {CompareKind::Eq, CompareKind::Ne,
                                         CompareKind::Lt, CompareKind::Le,
                                         CompareKind::Gt, CompareKind::Ge};

const char *kindName(CompareKind k) {
  static const char *names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  return names[int(k)];
}

} // namespace

//===----------------------------------------------------------------------===//
// Compare
//===----------------------------------------------------------------------===//

namespace {

/// lhs `ls` against rhs `rs` (numpy broadcasting to `os`), every kind.
void runCompare(Prec lp, Prec rp, Prec op, std::vector<int64_t> ls,
                std::vector<int64_t> rs, std::vector<int64_t> os,
                uint64_t lmem = 0) {
  auto x = collidingValues(size_t(count(ls)), 1, 3);
  auto y = collidingValues(size_t(count(rs)), 2, 5);
  for (CompareKind kind : kCompareKinds) {
    SCOPED_TRACE(std::string(kindName(kind)) + " " + isa::precName(lp) + "/" +
                 isa::precName(rp) + " -> " + isa::precName(op));
    KernelRun r;
    if (lmem)
      r.chip.lmemBytes = lmem;
    GlobalAlloc ga(r.chip);
    GTensor l = ga.tensor(lp, ls), rt = ga.tensor(rp, rs),
            out = ga.tensor(op, os);
    std::vector<float> want(size_t(count(os)));
    for (int64_t i = 0; i < count(os); ++i) {
      auto idx = unflat(i, os);
      float a = x[size_t(flatBroadcast(idx, ls))];
      float b = y[size_t(flatBroadcast(idx, rs))];
      want[size_t(i)] = holds(kind, a, b) ? 1.0f : 0.0f;
    }
    r.emit = [&](CmdEmitter &em) { compare(em, {"cmp", l, rt, out, kind}); };
    r.setup = [&](sim::MachineState &m) {
      writeTensor(m, l, x);
      writeTensor(m, rt, y);
    };
    r.check = [&](const sim::MachineState &m, const std::string &what) {
      if (isa::isFloat(op)) {
        expectClose(readTensor(m, out), want, 0, 0, what);
      } else {
        std::vector<int64_t> wi(want.begin(), want.end());
        expectEqualInts(readInts(m, out), wi, what);
      }
    };
    r.run();
  }
}

} // namespace

TEST(Compare, BroadcastRhsEveryFloatType) {
  for (Prec p : kFloatPrecs)
    runCompare(p, p, p, {2, 3, 5, 37}, {3, 1, 37}, {2, 3, 5, 37});
}

TEST(Compare, BroadcastLhsAndScalarRhs) {
  runCompare(Prec::Fp16, Prec::Fp16, Prec::Fp16, {1, 37}, {6, 1}, {6, 37});
  runCompare(Prec::Fp32, Prec::Fp32, Prec::Fp32, {4, 9, 11}, {}, {4, 9, 11});
  runCompare(Prec::Bf16, Prec::Bf16, Prec::Bf16, {300}, {1}, {300});
}

TEST(Compare, MixedPrecisionsAndInt8Output) {
  runCompare(Prec::Fp16, Prec::Fp32, Prec::Fp32, {2, 70, 9}, {70, 1},
             {2, 70, 9});
  runCompare(Prec::Fp32, Prec::Fp32, Prec::Int8, {3, 65, 7}, {3, 65, 7},
             {3, 65, 7});
}

TEST(Compare, SlicedLargeF16) {
  // 32 KiB of local memory: the tables and the tiles force many tiles.
  runCompare(Prec::Fp16, Prec::Fp16, Prec::Fp16, {3, 130, 257}, {130, 1},
             {3, 130, 257}, 32 * 1024);
}

TEST(Compare, ConstOnEitherSide) {
  for (Prec p : kFloatPrecs)
    for (bool left : {false, true})
      for (CompareKind kind : kCompareKinds) {
        SCOPED_TRACE(std::string(kindName(kind)) + " " + isa::precName(p) +
                     (left ? " const left" : " const right"));
        KernelRun r;
        r.chip.lmemBytes = 32 * 1024;
        GlobalAlloc ga(r.chip);
        std::vector<int64_t> s{5, 67, 41};
        GTensor in = ga.tensor(p, s), out = ga.tensor(p, s);
        auto x = collidingValues(size_t(count(s)), 4, 0);
        float c = 0.25f;
        std::vector<float> want(x.size());
        for (size_t i = 0; i < x.size(); ++i)
          want[i] = (left ? holds(kind, c, x[i]) : holds(kind, x[i], c)) ? 1.0f
                                                                         : 0.0f;
        r.emit = [&](CmdEmitter &em) {
          compareConst(em, {"cmpc", in, out, kind, c, left});
        };
        r.setup = [&](sim::MachineState &m) { writeTensor(m, in, x); };
        r.check = [&](const sim::MachineState &m, const std::string &what) {
          expectClose(readTensor(m, out), want, 0, 0, what);
        };
        r.run();
      }
}

TEST(Compare, RejectsIntegerOperands) {
  CmdEmitter em;
  GlobalAlloc ga(em.chip());
  GTensor a = ga.tensor(Prec::Int32, {4}), b = ga.tensor(Prec::Fp32, {4}),
          o = ga.tensor(Prec::Fp32, {4});
  try {
    compare(em, {"bad", a, b, o, CompareKind::Lt});
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("compare 'bad': lhs"),
              std::string::npos)
        << e.what();
  }
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

namespace {

/// Rounds per mode, written out independently of isa/Numerics.
double roundRef(double x, isa::RoundMode m) {
  switch (m) {
  case isa::RoundMode::HalfToEven:
    return std::nearbyint(x); // default environment: ties to even
  case isa::RoundMode::HalfAwayFromZero:
    return std::round(x);
  case isa::RoundMode::TowardsZero:
    return std::trunc(x);
  case isa::RoundMode::Down:
    return std::floor(x);
  case isa::RoundMode::Up:
    return std::ceil(x);
  case isa::RoundMode::HalfUp:
    return std::floor(x + 0.5);
  case isa::RoundMode::HalfDown:
    return std::ceil(x - 0.5);
  }
  return x;
}

struct IntRange {
  int64_t lo, hi;
};
IntRange rangeOf(Prec p, bool isSigned) {
  unsigned bits = isa::precBits(p);
  if (isSigned)
    return {-(int64_t(1) << (bits - 1)), (int64_t(1) << (bits - 1)) - 1};
  return {0, (int64_t(1) << bits) - 1};
}

int64_t toIntRef(float x, Prec p, bool isSigned, isa::RoundMode m) {
  if (std::isnan(x))
    return 0;
  IntRange r = rangeOf(p, isSigned);
  double v = roundRef(double(x), m);
  return int64_t(std::clamp(v, double(r.lo), double(r.hi)));
}

/// Float inputs with ties, near-ties, negatives and values beyond the int16
/// range (after rounding to `p`).
std::vector<float> castInputs(size_t n, Prec p) {
  std::vector<float> base{
      0.5f,      1.5f,   2.5f,    -0.5f,  -1.5f,   -2.5f,    0.49f,
      -0.51f,    3.75f,  -7.25f,  127.4f, 127.6f,  128.0f,   -128.5f,
      -129.0f,   255.5f, 256.0f,  300.0f, -300.0f, 32767.0f, 40000.0f,
      -40000.0f, 1.0e9f, -3.0e9f, 0.0f,   -0.0f};
  if (p == Prec::Fp32)
    base.push_back(std::numeric_limits<float>::quiet_NaN());
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> d(-300.0f, 300.0f);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = roundTo(i < base.size() ? base[i] : d(gen), p);
  return v;
}

} // namespace

TEST(Cast, FloatToIntegerEveryRoundMode) {
  struct IntOut {
    Prec p;
    bool isSigned;
  };
  const IntOut outs[] = {{Prec::Int8, true},
                         {Prec::Int8, false},
                         {Prec::Int16, true},
                         {Prec::Int32, true}};
  const isa::RoundMode modes[] = {
      isa::RoundMode::HalfToEven,  isa::RoundMode::HalfAwayFromZero,
      isa::RoundMode::TowardsZero, isa::RoundMode::Down,
      isa::RoundMode::Up,          isa::RoundMode::HalfUp,
      isa::RoundMode::HalfDown};
  std::vector<int64_t> shape{3, 70, 13};
  for (Prec ip : kFloatPrecs)
    for (IntOut o : outs)
      for (isa::RoundMode mode : modes) {
        SCOPED_TRACE(std::string(isa::precName(ip)) + " -> " +
                     (o.isSigned ? "" : "u") + isa::precName(o.p) + " " +
                     isa::roundModeName(mode));
        KernelRun r;
        GlobalAlloc ga(r.chip);
        GTensor in = ga.tensor(ip, shape), out = ga.tensor(o.p, shape);
        out.isSigned = o.isSigned;
        auto x = castInputs(size_t(count(shape)), ip);
        std::vector<int64_t> want(x.size());
        for (size_t i = 0; i < x.size(); ++i)
          want[i] = toIntRef(x[i], o.p, o.isSigned, mode);
        CastParams cp{"cast", in, out, mode, std::nullopt};
        r.emit = [&](CmdEmitter &em) { cast(em, cp); };
        r.setup = [&](sim::MachineState &m) { writeTensor(m, in, x); };
        r.check = [&](const sim::MachineState &m, const std::string &what) {
          expectEqualInts(readInts(m, out), want, what);
        };
        r.run();
      }
}

TEST(Cast, IntegerToFloatAndInteger) {
  struct Case {
    Prec ip;
    bool inSigned;
    Prec op;
    bool outSigned;
  };
  const Case cases[] = {
      {Prec::Int8, true, Prec::Fp32, true},
      {Prec::Int8, false, Prec::Fp16, true},
      {Prec::Int16, true, Prec::Bf16, true},
      {Prec::Int16, true, Prec::Fp16, true},
      {Prec::Int32, true, Prec::Fp32, true},
      {Prec::Int32, true, Prec::Int8, true},  // saturating narrowing
      {Prec::Int16, true, Prec::Int8, false}, // into uint8
      {Prec::Int8, false, Prec::Int16, true}, // uint8 widened
      {Prec::Int8, true, Prec::Int32, true},  // sign extension
  };
  std::vector<int64_t> shape{2, 66, 31};
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(c.inSigned ? "" : "u") + isa::precName(c.ip) +
                 " -> " + (c.outSigned ? "" : "u") + isa::precName(c.op));
    KernelRun r;
    GlobalAlloc ga(r.chip);
    GTensor in = ga.tensor(c.ip, shape), out = ga.tensor(c.op, shape);
    in.isSigned = c.inSigned;
    out.isSigned = c.outSigned;
    IntRange ir = rangeOf(c.ip, c.inSigned);
    std::mt19937_64 gen(5);
    std::uniform_int_distribution<int64_t> d(ir.lo, ir.hi);
    std::vector<int64_t> x(size_t(count(shape)));
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = i == 0 ? ir.lo : i == 1 ? ir.hi : i == 2 ? 0 : d(gen);
    r.emit = [&](CmdEmitter &em) { cast(em, {"cast", in, out}); };
    r.setup = [&](sim::MachineState &m) { writeInts(m, in, x); };
    r.check = [&](const sim::MachineState &m, const std::string &what) {
      if (isa::isFloat(c.op)) {
        // int -> fp32 (nearest even, exact below 2^24) -> the output type.
        std::vector<float> want(x.size());
        for (size_t i = 0; i < x.size(); ++i)
          want[i] = roundTo(float(x[i]), c.op);
        expectClose(readTensor(m, out), want, 0, 0, what);
      } else {
        IntRange orr = rangeOf(c.op, c.outSigned);
        std::vector<int64_t> want(x.size());
        for (size_t i = 0; i < x.size(); ++i)
          want[i] = std::clamp(x[i], orr.lo, orr.hi);
        expectEqualInts(readInts(m, out), want, what);
      }
    };
    r.run();
  }
}

TEST(Cast, FloatToFloatWithRoundMode) {
  // fp32 -> fp16 toward zero and up: 1 + 2^-11 + 2^-12 lies between two
  // fp16 values (1 and 1 + 2^-10).
  KernelRun r;
  GlobalAlloc ga(r.chip);
  GTensor in = ga.tensor(Prec::Fp32, {4}), out = ga.tensor(Prec::Fp16, {4});
  float a = 1.0f + 0x1p-11f + 0x1p-12f;
  std::vector<float> x{a, -a, 2.0f, 0.0f};
  for (isa::RoundMode mode : {isa::RoundMode::TowardsZero, isa::RoundMode::Up,
                              isa::RoundMode::HalfToEven}) {
    float hi = 1.0f + 0x1p-10f;
    std::vector<float> want;
    if (mode == isa::RoundMode::TowardsZero)
      want = {1.0f, -1.0f, 2.0f, 0.0f};
    else if (mode == isa::RoundMode::Up)
      want = {hi, -1.0f, 2.0f, 0.0f};
    else // a is above the midpoint 1 + 2^-11: nearest is 1 + 2^-10
      want = {hi, -hi, 2.0f, 0.0f};
    CastParams cp{"cast", in, out, mode, std::nullopt};
    r.emit = [&](CmdEmitter &em) { cast(em, cp); };
    r.setup = [&](sim::MachineState &m) { writeTensor(m, in, x); };
    r.check = [&](const sim::MachineState &m, const std::string &what) {
      expectClose(readTensor(m, out), want, 0, 0,
                  what + " " + isa::roundModeName(mode));
    };
    r.run();
  }
}

TEST(Cast, ThroughIntegerStaysFloatSliced) {
  // The float-mode form of ONNX Cast(to = int8 / uint8 / int16): round
  // toward zero, saturate, back to the float type. 8 KiB of local memory
  // slices the 3 x 130 x 257 tensor (unsliced it would be two tiles: the
  // 64-lane body and the remainder, so four GDMA commands).
  for (Prec p : kFloatPrecs)
    for (IntType via : {IntType{Prec::Int8, true}, IntType{Prec::Int8, false},
                        IntType{Prec::Int16, true}}) {
      SCOPED_TRACE(std::string(isa::precName(p)) + " via " +
                   (via.isSigned ? "" : "u") + isa::precName(via.prec));
      KernelRun r;
      r.chip.lmemBytes = 8 * 1024;
      GlobalAlloc ga(r.chip);
      std::vector<int64_t> shape{3, 130, 257};
      GTensor in = ga.tensor(p, shape), out = ga.tensor(p, shape);
      auto x = castInputs(size_t(count(shape)), p);
      std::vector<float> want(x.size());
      for (size_t i = 0; i < x.size(); ++i)
        want[i] = roundTo(float(toIntRef(x[i], via.prec, via.isSigned,
                                         isa::RoundMode::TowardsZero)),
                          p);
      CastParams cp{"cast", in, out, isa::RoundMode::TowardsZero, via};
      r.emit = [&](CmdEmitter &em) { cast(em, cp); };
      r.setup = [&](sim::MachineState &m) { writeTensor(m, in, x); };
      r.check = [&](const sim::MachineState &m, const std::string &what) {
        expectClose(readTensor(m, out), want, 0, 0, what);
      };
      StreamStats st = r.run();
      EXPECT_GT(st.gdma, 6u); // more than 2 loads, 2 stores and the end
    }
}

//===----------------------------------------------------------------------===//
// Gather
//===----------------------------------------------------------------------===//

namespace {

/// Gather of `in` along `axis` with float-encoded indices `iv` (index
/// tensor shape `is`) in precision `ip`; data precision `dp`.
void runGather(Prec dp, Prec ip, std::vector<int64_t> ds, int64_t axis,
               std::vector<int64_t> is, const std::vector<float> &iv,
               uint64_t lmem = 0) {
  SCOPED_TRACE(std::string("data ") + isa::precName(dp) + ", indices " +
               isa::precName(ip) + ", axis " + std::to_string(axis));
  KernelRun r;
  if (lmem)
    r.chip.lmemBytes = lmem;
  GlobalAlloc ga(r.chip);
  int64_t d = ds[size_t(axis)], outer = 1, inner = 1;
  for (int64_t i = 0; i < int64_t(ds.size()); ++i) {
    if (i < axis)
      outer *= ds[size_t(i)];
    if (i > axis)
      inner *= ds[size_t(i)];
  }
  std::vector<int64_t> os(ds.begin(), ds.begin() + axis);
  os.insert(os.end(), is.begin(), is.end());
  os.insert(os.end(), ds.begin() + axis + 1, ds.end());
  GTensor in = ga.tensor(dp, ds), idx = ga.tensor(ip, is),
          out = ga.tensor(dp, os);
  auto x = randomValues(size_t(count(ds)), 21);
  for (float &v : x)
    v = roundTo(v, dp);
  int64_t nIdx = int64_t(iv.size());
  std::vector<float> want;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < nIdx; ++k) {
      // ONNX: negative indices count from the end; the rest of the
      // out-of-range ones select zeros (the kernel's documented choice).
      int64_t j = int64_t(std::trunc(iv[size_t(k)]));
      if (j < 0)
        j += d;
      for (int64_t w = 0; w < inner; ++w)
        want.push_back(j >= 0 && j < d ? x[size_t((o * d + j) * inner + w)]
                                       : 0.0f);
    }
  r.emit = [&](CmdEmitter &em) { gather(em, {"g", in, idx, out, axis}); };
  r.setup = [&](sim::MachineState &m) {
    writeTensor(m, in, x);
    writeTensor(m, idx, iv);
  };
  r.check = [&](const sim::MachineState &m, const std::string &what) {
    expectClose(readTensor(m, out), want, 0, 0, what);
  };
  r.run();
}

} // namespace

TEST(Gather, FloatIndicesEveryAxis) {
  std::vector<int64_t> ds{4, 9, 6};
  for (Prec ip : kFloatPrecs)
    for (int64_t axis = 0; axis < 3; ++axis) {
      int64_t d = ds[size_t(axis)];
      // In range, negative, the extremes, and out of range both ways.
      std::vector<float> iv{0.0f,           float(d - 1),  -1.0f, float(-d),
                            float(d),       float(-d - 1), 2.0f,  1.0f,
                            float(d + 100), -3.0f};
      runGather(ip == Prec::Fp32 ? Prec::Fp16 : Prec::Fp32, ip, ds, axis,
                {2, 5}, iv);
    }
}

TEST(Gather, ManyIndicesSlicedIntoChunks) {
  // 8 KiB of local memory: index chunks of fewer than 1024 entries.
  std::vector<float> iv(2500);
  std::mt19937 gen(3);
  std::uniform_int_distribution<int> d(-37, 36);
  for (float &v : iv)
    v = float(d(gen));
  runGather(Prec::Bf16, Prec::Fp32, {3, 37, 5}, 1, {2500}, iv, 8 * 1024);
}

TEST(Gather, RejectsInt8Indices) {
  CmdEmitter em;
  GlobalAlloc ga(em.chip());
  GTensor in = ga.tensor(Prec::Fp32, {4, 4}), idx = ga.tensor(Prec::Int8, {2}),
          out = ga.tensor(Prec::Fp32, {2, 4});
  try {
    gather(em, {"g8", in, idx, out, 0});
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("gather 'g8': indices"),
              std::string::npos)
        << e.what();
  }
}

//===----------------------------------------------------------------------===//
// Pad (reflect, edge) in 4-D
//===----------------------------------------------------------------------===//

TEST(Pad, ReflectAndEdgeFourDimsEveryType) {
  std::vector<int64_t> s{2, 5, 6, 7};
  // begin then end pads, every dim padded on at least one side; reflect
  // needs pads < dim.
  std::vector<int64_t> pads{1, 2, 0, 6, 1, 4, 5, 3};
  std::vector<int64_t> os(4);
  for (size_t i = 0; i < 4; ++i)
    os[i] = s[i] + pads[i] + pads[4 + i];
  for (PadMode mode : {PadMode::Reflect, PadMode::Edge})
    for (Prec p : kFloatPrecs) {
      SCOPED_TRACE(
          std::string(mode == PadMode::Reflect ? "reflect " : "edge ") +
          isa::precName(p));
      KernelRun r;
      GlobalAlloc ga(r.chip);
      GTensor in = ga.tensor(p, s), out = ga.tensor(p, os);
      auto x = randomValues(size_t(count(s)), 13);
      for (float &v : x)
        v = roundTo(v, p);
      auto src = [&](int64_t o, int64_t pb, int64_t n) {
        int64_t i = o - pb;
        if (mode == PadMode::Edge)
          return std::clamp<int64_t>(i, 0, n - 1);
        if (i < 0)
          return -i;
        if (i >= n)
          return 2 * (n - 1) - i;
        return i;
      };
      std::vector<float> want;
      for (int64_t i = 0; i < count(os); ++i) {
        auto o = unflat(i, os);
        int64_t f = 0;
        for (size_t k = 0; k < 4; ++k)
          f = f * s[k] + src(o[k], pads[k], s[k]);
        want.push_back(x[size_t(f)]);
      }
      PadParams pp{"pad", in, out, pads, 0.0f, mode};
      r.emit = [&](CmdEmitter &em) { pad(em, pp); };
      r.setup = [&](sim::MachineState &m) { writeTensor(m, in, x); };
      r.check = [&](const sim::MachineState &m, const std::string &what) {
        expectClose(readTensor(m, out), want, 0, 0, what);
      };
      r.run();
    }
}

//===----------------------------------------------------------------------===//
// Pool3d
//===----------------------------------------------------------------------===//

namespace {

/// Plain nested-loop 3-D pooling in double (ONNX semantics).
std::vector<float> pool3dRef(const Pool3dParams &p,
                             const std::vector<float> &x) {
  const auto &is = p.input.shape, &os = p.output.shape;
  int64_t id = is[2], ih = is[3], iw = is[4], od = os[2], oh = os[3],
          ow = os[4];
  std::vector<float> out;
  for (int64_t nc = 0; nc < is[0] * is[1]; ++nc)
    for (int64_t z = 0; z < od; ++z)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xx = 0; xx < ow; ++xx) {
          double best = -INFINITY, sum = 0;
          int64_t real = 0;
          for (int64_t a = 0; a < p.kernelD; ++a)
            for (int64_t b = 0; b < p.kernelH; ++b)
              for (int64_t c = 0; c < p.kernelW; ++c) {
                int64_t zi = z * p.strideD - p.padFront + a * p.dilationD;
                int64_t yi = y * p.strideH - p.padTop + b * p.dilationH;
                int64_t xi = xx * p.strideW - p.padLeft + c * p.dilationW;
                if (zi < 0 || zi >= id || yi < 0 || yi >= ih || xi < 0 ||
                    xi >= iw)
                  continue;
                double v = x[size_t(((nc * id + zi) * ih + yi) * iw + xi)];
                best = std::max(best, v);
                sum += v;
                ++real;
              }
          double r;
          if (p.kind == PoolKind::Max)
            r = best;
          else
            r = sum / double(p.countIncludePad
                                 ? p.kernelD * p.kernelH * p.kernelW
                                 : real);
          if (p.act.kind == UnaryKind::Relu)
            r = std::max(r, 0.0);
          out.push_back(float(r));
        }
  return out;
}

int64_t outDim(int64_t in, int64_t pb, int64_t pe, int64_t k, int64_t s,
               int64_t d) {
  return (in + pb + pe - ((k - 1) * d + 1)) / s + 1;
}

/// Runs pool3d with the window of `w` on input [n, c, d, h, w].
StreamStats runPool3d(Pool3dParams w, Prec prec, std::vector<int64_t> is,
                      uint64_t lmem = 0) {
  KernelRun r;
  if (lmem)
    r.chip.lmemBytes = lmem;
  GlobalAlloc ga(r.chip);
  std::vector<int64_t> os{
      is[0], is[1],
      outDim(is[2], w.padFront, w.padBack, w.kernelD, w.strideD, w.dilationD),
      outDim(is[3], w.padTop, w.padBottom, w.kernelH, w.strideH, w.dilationH),
      outDim(is[4], w.padLeft, w.padRight, w.kernelW, w.strideW, w.dilationW)};
  w.input = ga.tensor(prec, is);
  w.output = ga.tensor(prec, os);
  auto x = randomValues(size_t(count(is)), 17);
  for (float &v : x)
    v = roundTo(v, prec);
  std::vector<float> want = pool3dRef(w, x);
  for (float &v : want)
    v = roundTo(v, prec);
  r.emit = [&](CmdEmitter &em) { pool3d(em, w); };
  r.setup = [&](sim::MachineState &m) { writeTensor(m, w.input, x); };
  r.check = [&](const sim::MachineState &m, const std::string &what) {
    if (w.kind == PoolKind::Max)
      expectClose(readTensor(m, w.output), want, 0, 0, what);
    else
      expectClose(readTensor(m, w.output), want, ulpOf(prec), 1e-6f, what);
  };
  return r.run();
}

Pool3dParams window(PoolKind kind, std::vector<int64_t> k,
                    std::vector<int64_t> s, std::vector<int64_t> pads,
                    std::vector<int64_t> dil = {1, 1, 1},
                    bool includePad = false) {
  Pool3dParams p;
  p.name = "pool3d";
  p.kind = kind;
  p.kernelD = k[0];
  p.kernelH = k[1];
  p.kernelW = k[2];
  p.strideD = s[0];
  p.strideH = s[1];
  p.strideW = s[2];
  p.dilationD = dil[0];
  p.dilationH = dil[1];
  p.dilationW = dil[2];
  // ONNX order: D, H, W begins, then D, H, W ends.
  p.padFront = pads[0];
  p.padTop = pads[1];
  p.padLeft = pads[2];
  p.padBack = pads[3];
  p.padBottom = pads[4];
  p.padRight = pads[5];
  p.countIncludePad = includePad;
  return p;
}

} // namespace

TEST(Pool3d, MaxPaddedStridedEveryType) {
  for (Prec p : kFloatPrecs) {
    SCOPED_TRACE(isa::precName(p));
    runPool3d(window(PoolKind::Max, {3, 3, 2}, {2, 1, 2}, {1, 1, 0, 1, 0, 1}),
              p, {2, 70, 7, 9, 11});
  }
}

TEST(Pool3d, AvgExcludeAndIncludePadEveryType) {
  for (Prec p : kFloatPrecs)
    for (bool include : {false, true}) {
      SCOPED_TRACE(std::string(isa::precName(p)) +
                   (include ? " include pad" : " exclude pad"));
      runPool3d(window(PoolKind::Avg, {3, 3, 3}, {2, 2, 1}, {1, 1, 1, 1, 0, 1},
                       {1, 1, 1}, include),
                p, {1, 66, 6, 8, 9});
    }
}

TEST(Pool3d, AvgDepthPadsOnlyAndDilation) {
  // Depth pads only (the H x W divisor is the constant kh * kw), depth and
  // row dilation.
  runPool3d(window(PoolKind::Avg, {2, 2, 3}, {1, 2, 2}, {1, 0, 0, 2, 0, 0},
                   {2, 2, 1}),
            Prec::Fp32, {2, 5, 6, 9, 10});
  runPool3d(window(PoolKind::Max, {2, 2, 3}, {3, 2, 2}, {1, 0, 0, 2, 0, 0},
                   {2, 2, 1}),
            Prec::Fp16, {2, 5, 9, 9, 10});
}

TEST(Pool3d, GlobalAvgAndReluSliced) {
  Pool3dParams g =
      window(PoolKind::Avg, {4, 6, 6}, {1, 1, 1}, {0, 0, 0, 0, 0, 0});
  runPool3d(g, Prec::Fp16, {2, 130, 4, 6, 6});
  Pool3dParams m =
      window(PoolKind::Max, {2, 3, 3}, {2, 2, 2}, {0, 1, 1, 1, 1, 1});
  m.act = {UnaryKind::Relu};
  // 32 KiB of local memory: depth, rows and channels are sliced (one tile
  // would be one load and one store).
  StreamStats st = runPool3d(m, Prec::Bf16, {1, 140, 9, 30, 33}, 32 * 1024);
  EXPECT_GT(st.gdma, 10u);
  Pool3dParams a =
      window(PoolKind::Avg, {3, 3, 3}, {1, 1, 1}, {1, 1, 1, 1, 1, 1});
  runPool3d(a, Prec::Fp32, {1, 70, 10, 24, 20}, 32 * 1024);
}

TEST(Pool3d, AvgExcludingPadsInColumnSlices) {
  // A 3-D average that excludes the pads of all three axes, with a relu,
  // in 8 KiB of local memory: a row of 700 fp32 columns per tile times the
  // five scratch tiles leaves no whole row, so the groups of one (three
  // runs of output depths: the first and last read two depth taps) cut the
  // columns too, each with its halo and edge pads.
  Pool3dParams a =
      window(PoolKind::Avg, {3, 2, 3}, {1, 1, 2}, {1, 1, 1, 1, 0, 1});
  a.act = {UnaryKind::Relu};
  StreamStats st = runPool3d(a, Prec::Fp32, {1, 3, 4, 3, 700}, 8 * 1024);
  // Unsliced, the three groups would move 11 tensors (8 tap loads, 3
  // stores); here 361 (many column slices of each).
  EXPECT_GT(st.gdma, 100u);
}

TEST(Pool3d, RejectsMismatchedOutput) {
  CmdEmitter em;
  GlobalAlloc ga(em.chip());
  Pool3dParams p =
      window(PoolKind::Max, {2, 2, 2}, {2, 2, 2}, {0, 0, 0, 0, 0, 0});
  p.input = ga.tensor(Prec::Fp32, {1, 4, 4, 4, 4});
  p.output = ga.tensor(Prec::Fp32, {1, 4, 3, 2, 2});
  try {
    pool3d(em, p);
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("pool3d 'pool3d': output spatial"),
              std::string::npos)
        << e.what();
  }
}
