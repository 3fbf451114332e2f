//===- FuncVcTest.cpp - VC (vector correlation) sub-ops -----------------===//
//
// Every VC sub-op (tsk 14: 0 mul, 2 add, 3 sub, 4 max, 5 min, 7 and, 8 or,
// 9 xor, 10/11/13 select gt/eq/lt, 12 div, 15/16/20 saturating add/sub/mul,
// 23 mulDHR) against a plain nested-loop reference written from isa/docs/bm1684x.md
// 4.5 and simulator/docs/semantics.md "VC" / "AR" / "Conventions":
// res[i][c][0][w] = A[i] op B[c][w], integers in int64 then wrapped to the
// result width (saturated for the *_satu ops and mulDHR), floats in fp32
// with one rounding to the result type. The rounding of mulDHR is written
// here from the ROUND_MODE definitions (isa/docs/bm1684x.md 8.1), not taken from
// isa/Numerics.
//
//===----------------------------------------------------------------------===//

#include "FuncTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

using namespace tpu;
using namespace tpu::sim;
using namespace tpu::sim::test;

namespace {

enum VcEu : unsigned {
  kMul = 0,
  kAdd = 2,
  kSub = 3,
  kMax = 4,
  kMin = 5,
  kAnd = 7,
  kOr = 8,
  kXor = 9,
  kSelGt = 10,
  kSelEq = 11,
  kDiv = 12,
  kSelLt = 13,
  kAddSat = 15,
  kSubSat = 16,
  kMulSat = 20,
  kMulDHR = 23,
};

const unsigned kIntOps[] = {kMul,   kAdd,    kSub,    kMax,    kMin,
                            kAnd,   kOr,     kXor,    kSelGt,  kSelEq,
                            kSelLt, kAddSat, kSubSat, kMulSat, kMulDHR};
const unsigned kFloatOps[] = {kMul,   kAdd,   kSub,   kMax, kMin,
                              kSelGt, kSelEq, kSelLt, kDiv};

uint64_t maskOf(Prec p) {
  unsigned bits = bytesOf(p) * 8;
  return bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
}

int64_t minOf(Prec p, bool isSigned) {
  return isSigned ? -(int64_t(1) << (bytesOf(p) * 8 - 1)) : 0;
}
int64_t maxOf(Prec p, bool isSigned) {
  unsigned bits = bytesOf(p) * 8;
  return isSigned ? (int64_t(1) << (bits - 1)) - 1 : (int64_t(1) << bits) - 1;
}

/// x / 2^s rounded per the ROUND_MODE code (isa/docs/bm1684x.md 8.1): 0 half to
/// even, 1 half away from zero, 2 towards zero, 3 down, 4 up, 5 half up,
/// 6 half down.
int64_t refShiftRound(int64_t x, unsigned s, unsigned mode) {
  if (s == 0)
    return x;
  int64_t unit = int64_t(1) << s, half = unit / 2;
  int64_t q = x >= 0 ? x / unit : -((-x + unit - 1) / unit); // floor
  int64_t rem = x - q * unit;                                // 0 <= rem
  switch (mode) {
  case 0:
    return rem > half || (rem == half && (q & 1)) ? q + 1 : q;
  case 1:
    return rem > half || (rem == half && x >= 0) ? q + 1 : q;
  case 2:
    return x < 0 && rem != 0 ? q + 1 : q;
  case 3:
    return q;
  case 4:
    return rem != 0 ? q + 1 : q;
  case 5:
    return rem >= half ? q + 1 : q;
  default:
    return rem > half ? q + 1 : q;
  }
}

/// Operand and result types of one run. The result is signed when either
/// operand is (semantics.md "AR", which VC follows).
struct Types {
  Prec a;
  bool sa;
  Prec b;
  bool sb;
  Prec r;
};

std::string describe(unsigned eu, const Types &t, unsigned mode) {
  return "eu " + std::to_string(eu) + " A " + std::to_string(unsigned(t.a)) +
         (t.sa ? "s" : "u") + " B " + std::to_string(unsigned(t.b)) +
         (t.sb ? "s" : "u") + " R " + std::to_string(unsigned(t.r)) +
         " round " + std::to_string(mode);
}

/// Layout of one run: A of opd0_c lanes x opd0_w with opd1_w in the last
/// lane, starting in lane `laneA`; B (1, C, 1, W) and the result start in
/// lane `laneB`.
struct Geometry {
  uint32_t ac, aw, alast, C, W;
  unsigned laneA, laneB;
  uint32_t lenA() const { return (ac - 1) * aw + alast; }
};

const Geometry kGeometries[] = {{3, 4, 2, 6, 5, 3, 60}, {1, 7, 7, 2, 3, 0, 0}};

isa::cmd::SVC vcCmd(unsigned eu, const Types &t, const Geometry &g,
                    unsigned mode, const Ref &a, const Ref &b, const Ref &r) {
  isa::cmd::SVC v;
  v.cmd_short = 1;
  v.tsk_typ = 14;
  v.tsk_eu_typ = eu;
  v.opd0_sign = t.sa;
  v.opd1_sign = t.sb;
  v.opd2_n_str = mode;
  v.opd0_prec = uint64_t(t.a);
  v.opd1_prec = uint64_t(t.b);
  v.res0_prec = uint64_t(t.r);
  v.opd0_c = g.ac;
  v.opd0_w = g.aw;
  v.opd1_w = g.alast;
  v.res0_c = g.C;
  v.res0_w = g.W;
  v.opd0_addr = a.addr;
  v.opd1_addr = b.addr;
  v.res0_addr = r.addr;
  return v;
}

/// A random integer of type (p, signed): full range, or [-3, 3] (clipped
/// to the type) when `small`, so that equal pairs occur.
int64_t randomValue(std::mt19937 &rng, Prec p, bool isSigned, bool small) {
  if (small)
    return randomInt(rng, isSigned ? -3 : 0, 3);
  return randomInt(rng, minOf(p, isSigned), maxOf(p, isSigned));
}

int64_t refInt(unsigned eu, int64_t a, int64_t b, const Types &t,
               unsigned mode) {
  uint64_t ua = uint64_t(a) & maskOf(t.a), ub = uint64_t(b) & maskOf(t.a);
  switch (eu) {
  case kMul:
  case kMulSat:
    return a * b;
  case kAdd:
  case kAddSat:
    return a + b;
  case kSub:
  case kSubSat:
    return a - b;
  case kMax:
    return std::max(a, b);
  case kMin:
    return std::min(a, b);
  // Bitwise ops work on opd0's width (semantics.md "AR").
  case kAnd:
    return int64_t(ua & ub);
  case kOr:
    return int64_t(ua | ub);
  case kXor:
    return int64_t(ua ^ ub);
  case kSelGt:
    return a > b;
  case kSelEq:
    return a == b;
  case kSelLt:
    return a < b;
  case kMulDHR:
    return refShiftRound(a * b, bytesOf(t.a) * 8 - 1, mode);
  }
  ADD_FAILURE() << "no integer reference for eu " << eu;
  return 0;
}

bool saturating(unsigned eu) {
  return eu == kAddSat || eu == kSubSat || eu == kMulSat || eu == kMulDHR;
}

void runIntVc(MachineState &m, std::mt19937 &rng, unsigned eu, const Types &t,
              const Geometry &g, unsigned mode) {
  SCOPED_TRACE(describe(eu, t, mode));
  Ref a = euRef(laddr(g.laneA, 0), t.a, 1, g.ac, 1, g.aw);
  Ref b = euRef(laddr(g.laneB, 0x1000), t.b, 1, g.C, 1, g.W);
  Ref r = euRef(laddr(g.laneB, 0x8000), t.r, g.lenA(), g.C, 1, g.W);
  bool small = eu == kSelEq;
  std::vector<int64_t> av(g.lenA());
  for (uint32_t i = 0; i < g.lenA(); ++i) {
    av[i] = randomValue(rng, t.a, t.sa, small);
    refSetBits(m, a, 0, i / g.aw, 0, i % g.aw, uint64_t(av[i]) & maskOf(t.a));
  }
  for (uint32_t c = 0; c < g.C; ++c)
    for (uint32_t w = 0; w < g.W; ++w)
      refSetBits(m, b, 0, c, 0, w,
                 uint64_t(randomValue(rng, t.b, t.sb, small)) & maskOf(t.b));
  runTiu(vcCmd(eu, t, g, mode, a, b, r), m);
  bool rs = t.sa || t.sb;
  for (uint32_t i = 0; i < g.lenA(); ++i)
    for (uint32_t c = 0; c < g.C; ++c)
      for (uint32_t w = 0; w < g.W; ++w) {
        int64_t bv = refGetInt(m, b, t.sb, 0, c, 0, w);
        int64_t v = refInt(eu, av[i], bv, t, mode);
        if (saturating(eu))
          v = std::clamp(v, minOf(t.r, rs), maxOf(t.r, rs));
        uint64_t want = uint64_t(v) & maskOf(t.r); // others wrap
        ASSERT_EQ(refGetBits(m, r, i, c, 0, w), want)
            << "at (" << i << ", " << c << ", 0, " << w << "): A " << av[i]
            << ", B " << bv;
      }
}

float refFloat(unsigned eu, float a, float b) {
  switch (eu) {
  case kMul:
    return a * b;
  case kAdd:
    return a + b;
  case kSub:
    return a - b;
  case kMax:
    return a > b ? a : b;
  case kMin:
    return a < b ? a : b;
  case kDiv:
    return a / b;
  case kSelGt:
    return a > b ? 1.0f : 0.0f;
  case kSelEq:
    return a == b ? 1.0f : 0.0f;
  case kSelLt:
    return a < b ? 1.0f : 0.0f;
  }
  ADD_FAILURE() << "no float reference for eu " << eu;
  return 0;
}

void runFloatVc(MachineState &m, std::mt19937 &rng, unsigned eu, const Types &t,
                const Geometry &g) {
  SCOPED_TRACE(describe(eu, t, 0));
  Ref a = euRef(laddr(g.laneA, 0), t.a, 1, g.ac, 1, g.aw);
  Ref b = euRef(laddr(g.laneB, 0x1000), t.b, 1, g.C, 1, g.W);
  Ref r = euRef(laddr(g.laneB, 0x8000), t.r, g.lenA(), g.C, 1, g.W);
  auto pick = [&](Prec p) {
    if (eu == kSelEq)
      return float(randomInt(rng, -2, 2)); // equal pairs occur
    float v = randomFloat(rng, p, -4.0f, 4.0f);
    // Divisors stay away from 0 (a quotient, not an infinity, is tested).
    if (eu == kDiv && std::fabs(v) < 0.25f)
      v = v < 0 ? -0.75f : 0.75f;
    return v;
  };
  std::vector<float> av(g.lenA());
  for (uint32_t i = 0; i < g.lenA(); ++i) {
    av[i] = pick(t.a);
    refSetFloat(m, a, 0, i / g.aw, 0, i % g.aw, av[i]);
  }
  for (uint32_t c = 0; c < g.C; ++c)
    for (uint32_t w = 0; w < g.W; ++w)
      refSetFloat(m, b, 0, c, 0, w, pick(t.b));
  runTiu(vcCmd(eu, t, g, 0, a, b, r), m);
  for (uint32_t i = 0; i < g.lenA(); ++i)
    for (uint32_t c = 0; c < g.C; ++c)
      for (uint32_t w = 0; w < g.W; ++w) {
        float bv = refGetFloat(m, b, 0, c, 0, w);
        // One fp32 operation, then one round-to-nearest-even conversion.
        uint64_t want = fToBits(refFloat(eu, av[i], bv), t.r);
        ASSERT_EQ(refGetBits(m, r, i, c, 0, w), want)
            << "at (" << i << ", " << c << ", 0, " << w << "): A " << av[i]
            << ", B " << bv;
      }
}

TEST(FuncVc, IntegerSubOpsWrapAndSaturate) {
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(701);
  const Types kTypes[] = {
      {Prec::Int8, true, Prec::Int8, true, Prec::Int8},    // wraps a lot
      {Prec::Int8, false, Prec::Int8, false, Prec::Int16}, // unsigned
      {Prec::Int16, true, Prec::Int8, false, Prec::Int32}, // mixed sign
      {Prec::Int16, false, Prec::Int16, true, Prec::Int8}, // narrowing
      {Prec::Int32, true, Prec::Int32, true, Prec::Int32}, // int64 product
  };
  for (unsigned eu : kIntOps)
    for (const Types &t : kTypes)
      for (const Geometry &g : kGeometries)
        runIntVc(m, rng, eu, t, g, 0);
}

TEST(FuncVc, MulDHRRoundsEveryMode) {
  // mulDHR: sat(round(a * b / 2^(width(A) - 1))) with the round mode of
  // opd2_n_str (no third operand in sVC).
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(702);
  const Types kTypes[] = {
      {Prec::Int8, true, Prec::Int8, true, Prec::Int8},
      {Prec::Int16, true, Prec::Int16, true, Prec::Int16},
      {Prec::Int8, false, Prec::Int8, true, Prec::Int16},
  };
  for (unsigned mode = 0; mode <= 6; ++mode)
    for (const Types &t : kTypes)
      for (const Geometry &g : kGeometries)
        runIntVc(m, rng, kMulDHR, t, g, mode);
}

TEST(FuncVc, FloatSubOps) {
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(703);
  const Types kTypes[] = {
      {Prec::Fp32, true, Prec::Fp32, true, Prec::Fp32},
      {Prec::Fp16, true, Prec::Fp16, true, Prec::Fp16},
      {Prec::Bf16, true, Prec::Bf16, true, Prec::Bf16},
      {Prec::Fp16, true, Prec::Fp32, true, Prec::Bf16}, // one conversion
  };
  for (unsigned eu : kFloatOps)
    for (const Types &t : kTypes)
      for (const Geometry &g : kGeometries)
        runFloatVc(m, rng, eu, t, g);
}

TEST(FuncVc, HandDerivedValues) {
  // int8: A = {100, -128}, B = {100, -1, 2}; results (n = i, w = B index).
  MachineState m(isa::ChipParams::bm1684x());
  Ref a = euRef(laddr(0, 0), Prec::Int8, 1, 1, 1, 2);
  Ref b = euRef(laddr(0, 0x100), Prec::Int8, 1, 1, 1, 3);
  Ref r = euRef(laddr(0, 0x200), Prec::Int8, 2, 1, 1, 3);
  refSetBits(m, a, 0, 0, 0, 0, 100);
  refSetBits(m, a, 0, 0, 0, 1, 0x80);
  refSetBits(m, b, 0, 0, 0, 0, 100);
  refSetBits(m, b, 0, 0, 0, 1, 0xFF);
  refSetBits(m, b, 0, 0, 0, 2, 2);
  Types t{Prec::Int8, true, Prec::Int8, true, Prec::Int8};
  Geometry g{1, 2, 2, 1, 3, 0, 0};
  auto run = [&](unsigned eu, unsigned mode = 0) {
    runTiu(vcCmd(eu, t, g, mode, a, b, r), m);
    std::vector<int64_t> out;
    for (uint32_t i = 0; i < 2; ++i)
      for (uint32_t w = 0; w < 3; ++w)
        out.push_back(refGetInt(m, r, true, i, 0, 0, w));
    return out;
  };
  // add: 200 -> -56 (wrap), 99, 102; -28 (wrap of -28), 127 (wrap of -129),
  // -126.
  EXPECT_EQ(run(kAdd), (std::vector<int64_t>{-56, 99, 102, -28, 127, -126}));
  // add_satu: 127, 99, 102; -28, -128, -126.
  EXPECT_EQ(run(kAddSat),
            (std::vector<int64_t>{127, 99, 102, -28, -128, -126}));
  // mul_satu: 10000 -> 127, -100, 127 (200); -12800 -> -128, 128 -> 127,
  // -256 -> -128.
  EXPECT_EQ(run(kMulSat),
            (std::vector<int64_t>{127, -100, 127, -128, 127, -128}));
  // mulDHR half away from zero: 10000/128 = 78.125 -> 78; -100/128 =
  // -0.78 -> -1; 200/128 = 1.56 -> 2; -12800/128 = -100; 128/128 = 1;
  // -256/128 = -2.
  EXPECT_EQ(run(kMulDHR, 1), (std::vector<int64_t>{78, -1, 2, -100, 1, -2}));
  // down (floor): 78, -1, 1, -100, 1, -2.
  EXPECT_EQ(run(kMulDHR, 3), (std::vector<int64_t>{78, -1, 1, -100, 1, -2}));
  // select_gt writes 1 / 0: 100 > 100 no, > -1 yes, > 2 yes; -128 > all no.
  EXPECT_EQ(run(kSelGt), (std::vector<int64_t>{0, 1, 1, 0, 0, 0}));
}

TEST(FuncVc, RejectsUndefinedCombinations) {
  MachineState m(isa::ChipParams::bm1684x());
  Ref a = euRef(laddr(0, 0), Prec::Fp32, 1, 1, 1, 4);
  Ref b = euRef(laddr(0, 0x100), Prec::Fp32, 1, 1, 1, 4);
  Ref r = euRef(laddr(0, 0x200), Prec::Fp32, 4, 1, 1, 4);
  Geometry g{1, 4, 4, 1, 4, 0, 0};
  auto expectError = [&](unsigned eu, const Types &t, const char *what) {
    try {
      runTiu(vcCmd(eu, t, g, 0, a, b, r), m);
      ADD_FAILURE() << "eu " << eu << " accepted";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos)
          << e.what();
    }
  };
  Types f{Prec::Fp32, true, Prec::Fp32, true, Prec::Fp32};
  Types i{Prec::Int32, true, Prec::Int32, true, Prec::Int32};
  Types mixed{Prec::Int32, true, Prec::Fp32, true, Prec::Fp32};
  for (unsigned eu : {kAnd, kOr, kXor, kAddSat, kSubSat, kMulSat, kMulDHR})
    expectError(eu, f, "no float form");
  expectError(kDiv, i, "no integer form");
  expectError(kAdd, mixed, "mixes integer and float");
  for (unsigned eu : {1u, 6u, 14u, 17u, 24u})
    expectError(eu, f, "does not exist");
}

} // namespace
