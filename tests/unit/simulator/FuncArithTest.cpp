//===- FuncArithTest.cpp - AR (element-wise) kernels ----------------------===//
//
// sAR commands built with the typed struct, run through encode/decode, and
// compared with per-element references computed here (int64 arithmetic, or
// fp32 arithmetic followed by one conversion for float types).
//
//===----------------------------------------------------------------------===//

#include "FuncTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

using namespace tpu;
using namespace tpu::sim;
using namespace tpu::sim::test;

namespace {

struct ArShape {
  uint32_t n = 2, c = 67, h = 3, w = 5;
};

isa::cmd::SAR arCmd(unsigned eu, const ArShape &s, Prec p0, Prec p1, Prec pr,
                    bool s0, bool s1) {
  isa::cmd::SAR c;
  c.cmd_short = 1;
  c.tsk_typ = 3;
  c.tsk_eu_typ = eu;
  c.tsk_opd_num = 2;
  c.opd0_prec = uint64_t(p0);
  c.opd1_prec = uint64_t(p1);
  c.res0_prec = uint64_t(pr);
  c.opd0_sign = s0;
  c.opd1_sign = s1;
  c.res0_n = s.n;
  c.res0_c = s.c;
  c.res0_h = s.h;
  c.res0_w = s.w;
  return c;
}

/// Fills an EU-aligned tensor with random integers in [lo, hi].
std::vector<int64_t> fillInt(MachineState &m, const Ref &r, std::mt19937 &rng,
                             int64_t lo, int64_t hi) {
  std::vector<int64_t> v;
  for (uint32_t n = 0; n < r.n; ++n)
    for (uint32_t c = 0; c < r.c; ++c)
      for (uint32_t h = 0; h < r.h; ++h)
        for (uint32_t w = 0; w < r.w; ++w) {
          int64_t x = randomInt(rng, lo, hi);
          refSetBits(m, r, n, c, h, w, uint64_t(x));
          v.push_back(x);
        }
  return v;
}

std::vector<float> fillFloat(MachineState &m, const Ref &r, std::mt19937 &rng) {
  std::vector<float> v;
  for (uint32_t n = 0; n < r.n; ++n)
    for (uint32_t c = 0; c < r.c; ++c)
      for (uint32_t h = 0; h < r.h; ++h)
        for (uint32_t w = 0; w < r.w; ++w) {
          float x = randomFloat(rng, r.prec, -8.0f, 8.0f);
          refSetFloat(m, r, n, c, h, w, x);
          v.push_back(x);
        }
  return v;
}

/// Visits every element in (n, c, h, w) order with its flat index.
template <typename Fn> void each(const ArShape &s, Fn fn) {
  size_t i = 0;
  for (uint32_t n = 0; n < s.n; ++n)
    for (uint32_t c = 0; c < s.c; ++c)
      for (uint32_t h = 0; h < s.h; ++h)
        for (uint32_t w = 0; w < s.w; ++w, ++i)
          fn(n, c, h, w, i);
}

/// Round-half-to-even / half-away division by 2^s, written directly.
int64_t shiftRoundRef(int64_t x, int s, bool toEven) {
  double q = double(x) / double(int64_t(1) << s);
  double f = std::floor(q);
  double frac = q - f;
  if (frac > 0.5)
    return int64_t(f) + 1;
  if (frac < 0.5)
    return int64_t(f);
  if (toEven)
    return int64_t(f) % 2 == 0 ? int64_t(f) : int64_t(f) + 1;
  return x >= 0 ? int64_t(f) + 1 : int64_t(f);
}

TEST(FuncArith, Int8AddSubMulWrapSaturateAndShift) {
  ArShape s;
  std::mt19937 rng(21);
  for (unsigned eu : {0u, 2u, 3u, 15u, 16u, 20u}) {
    for (bool withShift : {false, true}) {
      MachineState m(isa::ChipParams::bm1684x());
      Ref a = euRef(laddr(4, 0), Prec::Int8, s.n, s.c, s.h, s.w);
      Ref b = euRef(laddr(4, 0x4000), Prec::Int8, s.n, s.c, s.h, s.w);
      Ref r = euRef(laddr(4, 0x8000), Prec::Int8, s.n, s.c, s.h, s.w);
      auto av = fillInt(m, a, rng, -128, 127);
      auto bv = fillInt(m, b, rng, -128, 127);
      // Per-channel shift (opd2: (1, c, 1, 1), one int8 per channel slot).
      Ref sh{laddr(4, 0xC000), Prec::Int8, 1, s.c, 1, 1, 0, 1, 0, 0};
      std::vector<int> shifts(s.c);
      for (uint32_t c = 0; c < s.c; ++c) {
        shifts[c] = int(randomInt(rng, 0, 3));
        refSetBits(m, sh, 0, c, 0, 0, uint64_t(shifts[c]));
      }
      auto cmd = arCmd(eu, s, Prec::Int8, Prec::Int8, Prec::Int8, true, true);
      cmd.opd0_addr = a.addr;
      cmd.opd1_addr = b.addr;
      cmd.res0_addr = r.addr;
      if (withShift) {
        cmd.tsk_opd_num = 3;
        cmd.opd2_addr = sh.addr;
        cmd.opd2_prec = uint64_t(Prec::Int8);
        cmd.opd2_sign = 1;
        cmd.opd2_n_str = 1; // half away from zero
      }
      runTiu(cmd, m);
      bool sat = eu >= 15;
      each(s, [&](uint32_t n, uint32_t c, uint32_t h, uint32_t w, size_t i) {
        int64_t x = av[i], y = bv[i];
        int64_t v = eu == 0 || eu == 20   ? x * y
                    : eu == 3 || eu == 16 ? x - y
                                          : x + y;
        if (withShift)
          v = shiftRoundRef(v, shifts[c], false);
        int64_t want = sat ? std::clamp<int64_t>(v, -128, 127) : int8_t(v);
        ASSERT_EQ(refGetInt(m, r, true, n, c, h, w), want)
            << "eu " << eu << " shift " << withShift << " at " << i;
      });
    }
  }
}

/// x / 2^s rounded per round mode (isa/docs order: HalfToEven,
/// HalfAwayFromZero, TowardsZero, Down, Up, HalfUp, HalfDown), in double
/// (exact for |x| < 2^53).
int64_t roundShiftRef(int64_t x, int s, unsigned mode) {
  double q = double(x) / double(int64_t(1) << s);
  switch (mode) {
  case 0:
    return int64_t(std::nearbyint(q)); // the default: ties to even
  case 1:
    return int64_t(std::round(q));
  case 2:
    return int64_t(std::trunc(q));
  case 3:
    return int64_t(std::floor(q));
  case 4:
    return int64_t(std::ceil(q));
  case 5:
    return int64_t(std::floor(q + 0.5));
  default:
    return int64_t(std::ceil(q - 0.5));
  }
}

TEST(FuncArith, Int32ResultsWithAnImmediateShiftInEveryMode) {
  // The rescaled residual add of INT8 models: int8 x an int32 multiplier
  // >> 6, and int32 +/- int32 >> 6, wrapping into int32, every round mode.
  ArShape s;
  std::mt19937 rng(29);
  for (unsigned eu : {0u, 2u, 3u})
    for (unsigned mode = 0; mode < 7; ++mode) {
      MachineState m(isa::ChipParams::bm1684x());
      bool mul = eu == 0;
      Prec pa = mul ? Prec::Int8 : Prec::Int32;
      Ref a = euRef(laddr(4, 0), pa, s.n, s.c, s.h, s.w);
      Ref b = euRef(laddr(4, 0x4000), Prec::Int32, s.n, s.c, s.h, s.w);
      Ref r = euRef(laddr(4, 0x8000), Prec::Int32, s.n, s.c, s.h, s.w);
      auto av = mul ? fillInt(m, a, rng, -128, 127)
                    : fillInt(m, a, rng, -(int64_t(1) << 30), 1 << 30);
      auto bv = fillInt(m, b, rng, -(int64_t(1) << 30), 1 << 30);
      const int64_t mult = -27013;
      auto cmd = arCmd(eu, s, pa, Prec::Int32, Prec::Int32, true, true);
      cmd.opd0_addr = a.addr;
      cmd.opd1_addr = b.addr;
      if (mul) {
        cmd.opd1_const = 1;
        cmd.opd1_addr = uint64_t(uint32_t(int32_t(mult)));
      }
      cmd.res0_addr = r.addr;
      cmd.tsk_opd_num = 3;
      cmd.opd2_const = 1;
      cmd.opd2_addr = 6;
      cmd.opd2_prec = uint64_t(Prec::Int8);
      cmd.opd2_sign = 1;
      cmd.opd2_n_str = mode;
      runTiu(cmd, m);
      each(s, [&](uint32_t n, uint32_t c, uint32_t h, uint32_t w, size_t i) {
        int64_t x = av[i], y = mul ? mult : bv[i];
        int64_t v = mul ? x * y : eu == 3 ? x - y : x + y;
        int64_t want = int32_t(uint32_t(roundShiftRef(v, 6, mode)));
        ASSERT_EQ(refGetInt(m, r, true, n, c, h, w), want)
            << "eu " << eu << " mode " << mode << " at " << i;
      });
    }
}

TEST(FuncArith, Int32RowsInPlaceAndOverlapping) {
  // The one-pass integer rows (the bias add of conv sums, the shifted add of
  // a residual): the result over its first operand (in place), and one
  // element past it (each row then overlaps its own input, which it must
  // read whole before writing: the rows' EU padding keeps them apart).
  ArShape s{2, 64, 3, 5};
  std::mt19937 rng(37);
  for (bool shifted : {false, true})
    for (uint32_t rOff : {0u, 4u}) {
      MachineState m(isa::ChipParams::bm1684x());
      Ref a = euRef(laddr(4, 0), Prec::Int32, s.n, s.c, s.h, s.w);
      Ref b = euRef(laddr(4, 0x4000), Prec::Int32, s.n, s.c, s.h, s.w);
      Ref r = a;
      r.addr += rOff;
      auto av = fillInt(m, a, rng, -(int64_t(1) << 30), 1 << 30);
      auto bv = fillInt(m, b, rng, -(int64_t(1) << 30), 1 << 30);
      auto cmd = arCmd(2, s, Prec::Int32, Prec::Int32, Prec::Int32, true, true);
      cmd.opd0_addr = a.addr;
      cmd.opd1_addr = b.addr;
      cmd.res0_addr = r.addr;
      if (shifted) {
        cmd.tsk_opd_num = 3;
        cmd.opd2_const = 1;
        cmd.opd2_addr = 8;
        cmd.opd2_prec = uint64_t(Prec::Int8);
        cmd.opd2_sign = 1;
        cmd.opd2_n_str = 5; // HalfUp
      }
      runTiu(cmd, m);
      each(s, [&](uint32_t n, uint32_t c, uint32_t h, uint32_t w, size_t i) {
        int64_t v = av[i] + bv[i];
        int64_t want = int32_t(uint32_t(shifted ? roundShiftRef(v, 8, 5) : v));
        ASSERT_EQ(refGetInt(m, r, true, n, c, h, w), want)
            << (shifted ? "shifted" : "plain") << " add, result " << rOff
            << " bytes in, at " << i;
      });
    }
}

TEST(FuncArith, ShiftedMulOfTwoImmediates) {
  // int8 immediate -100 x immediate 3000 >> 4, HalfUp, into int32: every
  // element floor((-300000 + 8) / 16) = -18750 (both operands one value for
  // every row: the one-pass loops take them as such).
  ArShape s{1, 3, 2, 5};
  MachineState m(isa::ChipParams::bm1684x());
  Ref r = euRef(laddr(0, 0), Prec::Int32, s.n, s.c, s.h, s.w);
  auto cmd = arCmd(0, s, Prec::Int8, Prec::Int32, Prec::Int32, true, true);
  cmd.opd0_const = 1;
  cmd.opd0_addr = uint64_t(uint8_t(int8_t(-100)));
  cmd.opd1_const = 1;
  cmd.opd1_addr = 3000;
  cmd.res0_addr = r.addr;
  cmd.tsk_opd_num = 3;
  cmd.opd2_const = 1;
  cmd.opd2_addr = 4;
  cmd.opd2_prec = uint64_t(Prec::Int8);
  cmd.opd2_sign = 1;
  cmd.opd2_n_str = 5; // HalfUp
  runTiu(cmd, m);
  each(s, [&](uint32_t n, uint32_t c, uint32_t h, uint32_t w, size_t i) {
    ASSERT_EQ(refGetInt(m, r, true, n, c, h, w), -18750) << i;
  });
}

TEST(FuncArith, Int32ToInt8CastsSaturate) {
  // The cast of requantised sums to 8 bits: values across and beyond both
  // 8-bit ranges, signed and unsigned results (opd2_sign), into another
  // tensor and in place (each result row over the start of its own input
  // row: one channel per lane, so no row reaches another).
  ArShape s{1, 64, 3, 5};
  std::mt19937 rng(31);
  for (bool resSigned : {true, false})
    for (bool inPlace : {false, true}) {
      MachineState m(isa::ChipParams::bm1684x());
      Ref a = euRef(laddr(0, 0), Prec::Int32, s.n, s.c, s.h, s.w);
      Ref r =
          euRef(laddr(0, inPlace ? 0 : 0x8000), Prec::Int8, s.n, s.c, s.h, s.w);
      auto av = fillInt(m, a, rng, -400, 400);
      auto cmd =
          arCmd(14, s, Prec::Int32, Prec::Int32, Prec::Int8, true, false);
      cmd.tsk_opd_num = 1;
      cmd.opd0_addr = a.addr;
      cmd.res0_addr = r.addr;
      cmd.opd2_sign = resSigned;
      runTiu(cmd, m);
      each(s, [&](uint32_t n, uint32_t c, uint32_t h, uint32_t w, size_t i) {
        int64_t want = std::clamp<int64_t>(av[i], resSigned ? -128 : 0,
                                           resSigned ? 127 : 255);
        ASSERT_EQ(refGetInt(m, r, resSigned, n, c, h, w), want)
            << (resSigned ? "int8" : "uint8") << (inPlace ? " in place" : "")
            << " at " << i;
      });
    }
}

TEST(FuncArith, RoundingTiesPerMode) {
  // (x + 0) >> 1 for x = -3..3 under every round mode: ties at odd x.
  ArShape s{1, 1, 1, 7};
  const int64_t xs[7] = {-3, -2, -1, 0, 1, 2, 3};
  // Rows: HalfToEven, HalfAwayFromZero, TowardsZero, Down, Up, HalfUp,
  // HalfDown (isa/docs/bm1684x.md 8.1); columns x = -3..3, x / 2 = -1.5 .. 1.5.
  const int64_t want[7][7] = {{-2, -1, 0, 0, 0, 1, 2}, {-2, -1, -1, 0, 1, 1, 2},
                              {-1, -1, 0, 0, 0, 1, 1}, {-2, -1, -1, 0, 0, 1, 1},
                              {-1, -1, 0, 0, 1, 1, 2}, {-1, -1, 0, 0, 1, 1, 2},
                              {-2, -1, -1, 0, 0, 1, 1}};
  for (unsigned mode = 0; mode < 7; ++mode) {
    MachineState m(isa::ChipParams::bm1684x());
    Ref a = euRef(laddr(0, 0), Prec::Int16, 1, 1, 1, 7);
    Ref r = euRef(laddr(0, 0x100), Prec::Int16, 1, 1, 1, 7);
    for (int i = 0; i < 7; ++i)
      refSetBits(m, a, 0, 0, 0, i, uint64_t(xs[i]));
    auto cmd = arCmd(2, s, Prec::Int16, Prec::Int16, Prec::Int16, true, true);
    cmd.opd0_addr = a.addr;
    cmd.opd1_const = 1;
    cmd.opd1_addr = 0;
    cmd.tsk_opd_num = 3;
    cmd.opd2_const = 1;
    cmd.opd2_addr = 1;
    cmd.opd2_prec = uint64_t(Prec::Int8);
    cmd.opd2_n_str = mode;
    cmd.res0_addr = r.addr;
    runTiu(cmd, m);
    for (int i = 0; i < 7; ++i)
      EXPECT_EQ(refGetInt(m, r, true, 0, 0, 0, i), want[mode][i])
          << "mode " << mode << " x " << xs[i];
  }
}

TEST(FuncArith, FloatOpsInEveryFloatPrecision) {
  ArShape s{1, 5, 2, 9};
  std::mt19937 rng(22);
  for (Prec p : {Prec::Fp32, Prec::Fp16, Prec::Bf16}) {
    for (unsigned eu : {0u, 2u, 3u, 4u, 5u, 12u, 27u}) {
      MachineState m(isa::ChipParams::bm1684x());
      Ref a = euRef(laddr(0, 0), p, s.n, s.c, s.h, s.w);
      Ref b = euRef(laddr(0, 0x1000), p, s.n, s.c, s.h, s.w);
      Ref r = euRef(laddr(0, 0x2000), p, s.n, s.c, s.h, s.w);
      auto av = fillFloat(m, a, rng);
      auto bv = fillFloat(m, b, rng);
      auto cmd = arCmd(eu, s, p, p, p, true, true);
      cmd.opd0_addr = a.addr;
      cmd.opd1_addr = b.addr;
      cmd.res0_addr = r.addr;
      runTiu(cmd, m);
      each(s, [&](uint32_t n, uint32_t c, uint32_t h, uint32_t w, size_t i) {
        float x = av[i], y = bv[i], v;
        switch (eu) {
        case 0:
          v = x * y;
          break;
        case 2:
          v = x + y;
          break;
        case 3:
          v = x - y;
          break;
        case 4:
          v = std::max(x, y);
          break;
        case 5:
          v = std::min(x, y);
          break;
        case 12:
          v = x / y;
          break;
        default:
          v = std::fabs(x - y);
          break;
        }
        ASSERT_EQ(refGetBits(m, r, n, c, h, w), fToBits(v, p))
            << isa::precName(p) << " eu " << eu << " at " << i;
      });
    }
  }
}

TEST(FuncArith, Int32AddSubMulWrapForEveryOperandForm) {
  // The bias add and scaling of int32 conv sums: add / sub / mul of int32
  // operands over whole rows wrap modulo 2^32 (values over the whole int32
  // range, so most sums and products wrap), with opd1 a full tensor, one
  // value per channel (layout 2) or an immediate, signed and unsigned, and
  // with the result written over opd0.
  ArShape s{2, 40, 3, 5};
  std::mt19937 rng(14);
  for (unsigned eu : {2u, 3u, 0u})      // add, sub, mul
    for (int form = 0; form < 3; ++form) // full, per channel, immediate
      for (bool sign : {true, false})
        for (bool inPlace : {false, true}) {
          SCOPED_TRACE(testing::Message() << "eu " << eu << " form " << form
                                          << " signed " << sign
                                          << " in place " << inPlace);
          MachineState m(isa::ChipParams::bm1684x());
          Ref a = euRef(laddr(0, 0), Prec::Int32, s.n, s.c, s.h, s.w);
          Ref b = euRef(laddr(0, 0x400), Prec::Int32, s.n, s.c, s.h, s.w);
          Ref pc{laddr(0, 0x800), Prec::Int32, 1, s.c, 1, 1, 0, 1, 0, 0};
          Ref r = inPlace ? a
                          : euRef(laddr(0, 0xC00), Prec::Int32, s.n, s.c, s.h,
                                  s.w);
          int64_t lo = sign ? INT32_MIN : 0;
          int64_t hi = sign ? INT32_MAX : UINT32_MAX;
          std::vector<int64_t> va = fillInt(m, a, rng, lo, hi);
          std::vector<int64_t> vb = fillInt(m, b, rng, lo, hi);
          std::vector<int64_t> vc = fillInt(m, pc, rng, lo, hi);
          uint32_t imm = uint32_t(randomInt(rng, lo, hi));
          auto cmd = arCmd(eu, s, Prec::Int32, Prec::Int32, Prec::Int32, sign,
                           sign);
          cmd.opd0_addr = a.addr;
          cmd.res0_addr = r.addr;
          if (form == 0) {
            cmd.opd1_addr = b.addr;
          } else if (form == 1) {
            cmd.opd1_addr = pc.addr;
            cmd.opd1_str = 2;
          } else {
            cmd.opd1_const = 1;
            cmd.opd1_addr = imm;
          }
          runTiu(cmd, m);
          each(s, [&](uint32_t n, uint32_t c, uint32_t h, uint32_t w,
                      size_t i) {
            uint32_t x = uint32_t(va[i]);
            uint32_t y = form == 0   ? uint32_t(vb[i])
                         : form == 1 ? uint32_t(vc[c])
                                     : imm;
            uint32_t want = eu == 2 ? x + y : eu == 3 ? x - y : x * y;
            ASSERT_EQ(refGetInt(m, r, sign, n, c, h, w),
                      sign ? int64_t(int32_t(want)) : int64_t(want))
                << "at " << n << "," << c << "," << h << "," << w;
          });
        }
}

TEST(FuncArith, BroadcastByPerChannelLayoutImmediateAndZeroStride) {
  // res = opd0 + opd1 where opd1 is one value per channel (layout 2) and
  // opd0 is a free-stride tensor with h stride 0 (rows repeated).
  ArShape s{1, 3, 4, 2};
  MachineState m(isa::ChipParams::bm1684x());
  Ref a{laddr(0, 0), Prec::Int32, 1, 3, 1, 2, 0, 16, 0, 1};
  Ref b{laddr(0, 0x100), Prec::Int32, 1, 3, 1, 1, 0, 1, 0, 0};
  Ref r = euRef(laddr(0, 0x200), Prec::Int32, 1, 3, 4, 2);
  for (uint32_t c = 0; c < 3; ++c) {
    refSetBits(m, b, 0, c, 0, 0, 1000 * (c + 1));
    for (uint32_t w = 0; w < 2; ++w)
      refSetBits(m, a, 0, c, 0, w, 10 * c + w);
  }
  auto cmd = arCmd(2, s, Prec::Int32, Prec::Int32, Prec::Int32, true, true);
  cmd.opd0_addr = a.addr;
  cmd.opd0_str = 3;
  cmd.opd0_n_str = 0;
  cmd.opd0_c_str = 16;
  cmd.opd0_h_str = 0;
  cmd.opd0_w_str = 1;
  cmd.opd1_addr = b.addr;
  cmd.opd1_str = 2;
  cmd.res0_addr = r.addr;
  runTiu(cmd, m);
  for (uint32_t c = 0; c < 3; ++c)
    for (uint32_t h = 0; h < 4; ++h)
      for (uint32_t w = 0; w < 2; ++w)
        EXPECT_EQ(refGetInt(m, r, true, 0, c, h, w),
                  int64_t(1000 * (c + 1) + 10 * c + w));
  // Immediate fp32 operand (the published dump's add of 1.0f).
  Ref fa = euRef(laddr(0, 0x1000), Prec::Fp32, 1, 3, 4, 2);
  Ref fr = euRef(laddr(0, 0x2000), Prec::Fp32, 1, 3, 4, 2);
  for (uint32_t c = 0; c < 3; ++c)
    for (uint32_t i = 0; i < 8; ++i)
      refSetFloat(m, fa, 0, c, i / 2, i % 2, 0.25f * float(c * 8 + i));
  auto fc = arCmd(2, s, Prec::Fp32, Prec::Fp32, Prec::Fp32, true, true);
  fc.opd0_addr = fa.addr;
  fc.opd1_const = 1;
  fc.opd1_addr = 0x3F800000;
  fc.res0_addr = fr.addr;
  runTiu(fc, m);
  for (uint32_t c = 0; c < 3; ++c)
    for (uint32_t i = 0; i < 8; ++i)
      EXPECT_EQ(refGetFloat(m, fr, 0, c, i / 2, i % 2),
                0.25f * float(c * 8 + i) + 1.0f);
}

TEST(FuncArith, CastRoundModesAndSaturation) {
  ArShape s{1, 1, 1, 8};
  MachineState m(isa::ChipParams::bm1684x());
  const float xs[8] = {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 300.0f, -300.0f};
  Ref a = euRef(laddr(0, 0), Prec::Fp32, 1, 1, 1, 8);
  Ref r = euRef(laddr(0, 0x100), Prec::Int8, 1, 1, 1, 8);
  for (int i = 0; i < 8; ++i)
    refSetFloat(m, a, 0, 0, 0, i, xs[i]);
  // fp32 -> int8 (signed via opd2_sign), half to even then half away.
  const int64_t even[8] = {-2, -2, 0, 0, 2, 2, 127, -128};
  const int64_t away[8] = {-3, -2, -1, 1, 2, 3, 127, -128};
  for (unsigned mode : {0u, 1u}) {
    auto cmd = arCmd(14, s, Prec::Fp32, Prec::Fp32, Prec::Int8, true, false);
    cmd.tsk_opd_num = 1;
    cmd.opd2_sign = 1;
    cmd.opd2_n_str = mode;
    cmd.opd0_addr = a.addr;
    cmd.res0_addr = r.addr;
    runTiu(cmd, m);
    for (int i = 0; i < 8; ++i)
      EXPECT_EQ(refGetInt(m, r, true, 0, 0, 0, i), mode ? away[i] : even[i])
          << "mode " << mode << " x " << xs[i];
  }
  // Unsigned result: negative values saturate to 0, 300 to 255.
  auto u = arCmd(14, s, Prec::Fp32, Prec::Fp32, Prec::Int8, true, false);
  u.tsk_opd_num = 1;
  u.opd0_addr = a.addr;
  u.res0_addr = r.addr;
  runTiu(u, m);
  EXPECT_EQ(refGetBits(m, r, 0, 0, 0, 0), 0u);
  EXPECT_EQ(refGetBits(m, r, 0, 0, 0, 6), 255u);
  // int32 -> int16 saturates; int16 -> fp16 and fp32 -> bf16 round.
  Ref i32 = euRef(laddr(0, 0x200), Prec::Int32, 1, 1, 1, 2);
  Ref i16 = euRef(laddr(0, 0x300), Prec::Int16, 1, 1, 1, 2);
  refSetBits(m, i32, 0, 0, 0, 0, uint32_t(70000));
  refSetBits(m, i32, 0, 0, 0, 1, uint32_t(-70000));
  auto c32 = arCmd(14, {1, 1, 1, 2}, Prec::Int32, Prec::Int32, Prec::Int16,
                   true, false);
  c32.tsk_opd_num = 1;
  c32.opd2_sign = 1;
  c32.opd0_addr = i32.addr;
  c32.res0_addr = i16.addr;
  runTiu(c32, m);
  EXPECT_EQ(refGetInt(m, i16, true, 0, 0, 0, 0), 32767);
  EXPECT_EQ(refGetInt(m, i16, true, 0, 0, 0, 1), -32768);
  // 2049 is a tie between fp16 2048 and 2050: half to even gives 2048.
  refSetBits(m, i16, 0, 0, 0, 0, 2049);
  Ref h = euRef(laddr(0, 0x400), Prec::Fp16, 1, 1, 1, 2);
  auto ch = arCmd(14, {1, 1, 1, 2}, Prec::Int16, Prec::Int16, Prec::Fp16, true,
                  false);
  ch.tsk_opd_num = 1;
  ch.opd0_addr = i16.addr;
  ch.res0_addr = h.addr;
  runTiu(ch, m);
  EXPECT_EQ(refGetFloat(m, h, 0, 0, 0, 0), 2048.0f);
  EXPECT_EQ(refGetFloat(m, h, 0, 0, 0, 1), -32768.0f);
}

TEST(FuncArith, ShiftsAndLogic) {
  ArShape s{1, 1, 1, 6};
  MachineState m(isa::ChipParams::bm1684x());
  const int8_t xs[6] = {-128, -7, 5, 127, 0x35, -1};
  const int8_t sh[6] = {1, -1, 2, -2, 3, -3};
  Ref a = euRef(laddr(0, 0), Prec::Int8, 1, 1, 1, 6);
  Ref b = euRef(laddr(0, 0x40), Prec::Int8, 1, 1, 1, 6);
  Ref r = euRef(laddr(0, 0x80), Prec::Int8, 1, 1, 1, 6);
  for (int i = 0; i < 6; ++i) {
    refSetBits(m, a, 0, 0, 0, i, uint8_t(xs[i]));
    refSetBits(m, b, 0, 0, 0, i, uint8_t(sh[i]));
  }
  auto run = [&](unsigned eu, unsigned mode = 0) {
    auto cmd = arCmd(eu, s, Prec::Int8, Prec::Int8, Prec::Int8, true, true);
    cmd.opd0_addr = a.addr;
    cmd.opd1_addr = b.addr;
    cmd.res0_addr = r.addr;
    cmd.opd2_n_str = mode;
    if (eu == 1 || eu == 26 || eu == 29 || eu == 30)
      cmd.tsk_opd_num = 1;
    runTiu(cmd, m);
    std::vector<int> out;
    for (int i = 0; i < 6; ++i)
      out.push_back(int8_t(refGetBits(m, r, 0, 0, 0, i)));
    return out;
  };
  // Logical: positive = left, negative = right on the unsigned pattern.
  // -128 << 1 = 0; 0xF9 >> 1 = 0x7C; 5 << 2 = 20; 127 >> 2 = 31;
  // 0x35 << 3 = 0xA8 (-88); 0xFF >> 3 = 0x1F.
  EXPECT_EQ(run(6), (std::vector<int>{0, 124, 20, 31, -88, 31}));
  // Arithmetic right shifts round per mode (half away from zero here):
  // -7 / 2 = -3.5 -> -4; 127 / 4 = 31.75 -> 32; -1 / 8 = -0.125 -> 0.
  EXPECT_EQ(run(21, 1), (std::vector<int>{0, -4, 20, 32, -88, 0}));
  // Rotate within 8 bits: 0x80 rol 1 = 0x01; 0xF9 ror 1 = 0xFC; 0x05 rol 2
  // = 0x14; 0x7F ror 2 = 0xDF; 0x35 rol 3 = 0xA9; 0xFF ror 3 = 0xFF.
  EXPECT_EQ(run(22), (std::vector<int>{1, -4, 20, -33, -87, -1}));
  EXPECT_EQ(run(7), (std::vector<int>{0, -7, 0, 126, 1, -3}));
  EXPECT_EQ(run(8), (std::vector<int>{-127, -1, 7, -1, 55, -1}));
  EXPECT_EQ(run(9), (std::vector<int>{-127, 6, 7, -127, 54, 2}));
  EXPECT_EQ(run(1), (std::vector<int>{127, 6, -6, -128, -54, 0}));
  // abs saturates |-128| to 127.
  EXPECT_EQ(run(26), (std::vector<int>{127, 7, 5, 127, 0x35, 1}));
  // Lowest set bit: 0x80 -> 7, 0xF9 -> 0, 5 -> 0, 127 -> 0, 0x35 -> 0,
  // 0xFF -> 0; lowest clear bit: 0, 1, 1, 7, 1, 8 (none).
  EXPECT_EQ(run(29), (std::vector<int>{7, 0, 0, 0, 0, 0}));
  EXPECT_EQ(run(30), (std::vector<int>{0, 1, 1, 7, 1, 8}));
}

TEST(FuncArith, SelectMacCopyClampIndexGen) {
  ArShape s{2, 3, 1, 4};
  std::mt19937 rng(23);
  MachineState m(isa::ChipParams::bm1684x());
  Ref a = euRef(laddr(1, 0), Prec::Int16, s.n, s.c, s.h, s.w);
  Ref b = euRef(laddr(1, 0x400), Prec::Int16, s.n, s.c, s.h, s.w);
  Ref r = euRef(laddr(1, 0x800), Prec::Int16, s.n, s.c, s.h, s.w);
  auto av = fillInt(m, a, rng, -5, 5);
  auto bv = fillInt(m, b, rng, -5, 5);
  // select_gt / eq / lt: opd0 cmp opd1 ? opd2 (immediate 9) : 0.
  for (unsigned eu : {10u, 11u, 13u}) {
    auto cmd = arCmd(eu, s, Prec::Int16, Prec::Int16, Prec::Int16, true, true);
    cmd.tsk_opd_num = 3;
    cmd.opd0_addr = a.addr;
    cmd.opd1_addr = b.addr;
    cmd.opd2_const = 1;
    cmd.opd2_addr = 9;
    cmd.opd2_prec = uint64_t(Prec::Int16);
    cmd.res0_addr = r.addr;
    runTiu(cmd, m);
    each(s, [&](uint32_t n, uint32_t c, uint32_t h, uint32_t w, size_t i) {
      bool hit = eu == 10   ? av[i] > bv[i]
                 : eu == 11 ? av[i] == bv[i]
                            : av[i] < bv[i];
      ASSERT_EQ(refGetInt(m, r, true, n, c, h, w), hit ? 9 : 0) << eu;
    });
  }
  // mac: res += opd0 * opd1.
  std::vector<int64_t> old = fillInt(m, r, rng, -100, 100);
  auto mac = arCmd(18, s, Prec::Int16, Prec::Int16, Prec::Int16, true, true);
  mac.opd0_addr = a.addr;
  mac.opd1_addr = b.addr;
  mac.res0_addr = r.addr;
  runTiu(mac, m);
  each(s, [&](uint32_t n, uint32_t c, uint32_t h, uint32_t w, size_t i) {
    ASSERT_EQ(refGetInt(m, r, true, n, c, h, w), old[i] + av[i] * bv[i]);
  });
  // copy_mb: every batch receives batch 0 of opd0.
  auto cmb = arCmd(28, s, Prec::Int16, Prec::Int16, Prec::Int16, true, true);
  cmb.tsk_opd_num = 1;
  cmb.opd0_addr = a.addr;
  cmb.res0_addr = r.addr;
  runTiu(cmb, m);
  each(s, [&](uint32_t n, uint32_t c, uint32_t h, uint32_t w, size_t) {
    ASSERT_EQ(refGetInt(m, r, true, n, c, h, w),
              refGetInt(m, a, true, 0, c, h, w));
  });
  // clamp with per-channel (lo, hi) pairs.
  Ref bounds{laddr(1, 0xC00), Prec::Int16, 1, s.c, 1, 2, 0, 2, 0, 1};
  for (uint32_t c = 0; c < s.c; ++c) {
    refSetBits(m, bounds, 0, c, 0, 0, uint16_t(-1 - int(c)));
    refSetBits(m, bounds, 0, c, 0, 1, uint16_t(c));
  }
  auto cl = arCmd(17, s, Prec::Int16, Prec::Int16, Prec::Int16, true, true);
  cl.tsk_opd_num = 1;
  cl.opd0_addr = a.addr;
  cl.opd2_addr = bounds.addr;
  cl.opd2_prec = uint64_t(Prec::Int16);
  cl.opd2_sign = 1;
  cl.res0_addr = r.addr;
  runTiu(cl, m);
  each(s, [&](uint32_t n, uint32_t c, uint32_t h, uint32_t w, size_t i) {
    ASSERT_EQ(refGetInt(m, r, true, n, c, h, w),
              std::clamp<int64_t>(av[i], -1 - int(c), int(c)));
  });
  // EU / NPU index generation (sSEG): channel c of a tensor starting in
  // lane 1 lives in lane 1 + c; EU index = w mod EU_NUM (32 for int16).
  isa::cmd::SSEG seg;
  seg.cmd_short = 1;
  seg.tsk_typ = 3;
  seg.tsk_eu_typ = 25;
  seg.res0_prec = uint64_t(Prec::Int16);
  seg.res0_c = 3;
  seg.res0_w = 40;
  seg.res0_addr = r.addr;
  runTiu(seg, m);
  Ref g = euRef(r.addr, Prec::Int16, 1, 3, 1, 40);
  for (uint32_t c = 0; c < 3; ++c)
    EXPECT_EQ(refGetBits(m, g, 0, c, 0, 7), 1u + c);
  seg.tsk_eu_typ = 24;
  runTiu(seg, m);
  for (uint32_t w = 0; w < 40; ++w)
    EXPECT_EQ(refGetBits(m, g, 0, 2, 0, w), w % 32);
}

TEST(FuncArith, RejectsMixedTypesAndTypeChangingCopy) {
  ArShape s{1, 1, 1, 4};
  MachineState m(isa::ChipParams::bm1684x());
  auto add = arCmd(2, s, Prec::Int8, Prec::Fp32, Prec::Fp32, true, true);
  add.opd1_addr = 0x100;
  add.res0_addr = 0x200;
  EXPECT_THROW(runTiu(add, m), Error);
  auto copy = arCmd(19, s, Prec::Int8, Prec::Int8, Prec::Int16, true, true);
  copy.tsk_opd_num = 1;
  copy.res0_addr = 0x200;
  EXPECT_THROW(runTiu(copy, m), Error);
  auto far = arCmd(2, s, Prec::Int8, Prec::Int8, Prec::Int8, true, true);
  far.res0_addr = laddr(0, uint32_t(kLaneBytes - 2));
  EXPECT_THROW(runTiu(far, m), MemoryError);
}

} // namespace

// A tile of width 1 and height > 1 (a conv output with OW = 1, a reduced
// column) is contiguous across rows, so the kernel walks it as one merged row
// of h elements; every element must still come from its own (h, 0) position,
// not be broadcast from the first one.
TEST(FuncArith, WidthOneTilesAreNotBroadcastAcrossRows) {
  ArShape s{2, 3, 6, 1};
  std::mt19937 rng(31);
  MachineState m(isa::ChipParams::bm1684x());
  Ref a = euRef(laddr(0, 0), Prec::Fp32, s.n, s.c, s.h, s.w);
  Ref b = euRef(laddr(0, 0x1000), Prec::Fp32, s.n, s.c, s.h, s.w);
  Ref r = euRef(laddr(0, 0x2000), Prec::Fp32, s.n, s.c, s.h, s.w);
  auto av = fillFloat(m, a, rng);
  auto bv = fillFloat(m, b, rng);
  auto cmd = arCmd(2, s, Prec::Fp32, Prec::Fp32, Prec::Fp32, true, true);
  cmd.opd0_addr = a.addr;
  cmd.opd1_addr = b.addr;
  cmd.res0_addr = r.addr;
  runTiu(cmd, m);
  each(s, [&](uint32_t n, uint32_t c, uint32_t h, uint32_t w, size_t i) {
    ASSERT_EQ(refGetBits(m, r, n, c, h, w), fToBits(av[i] + bv[i], Prec::Fp32))
        << "fp32 add at " << i;
  });

  Ref ai = euRef(laddr(0, 0x3000), Prec::Int8, s.n, s.c, s.h, s.w);
  Ref bi = euRef(laddr(0, 0x4000), Prec::Int8, s.n, s.c, s.h, s.w);
  Ref ri = euRef(laddr(0, 0x5000), Prec::Int8, s.n, s.c, s.h, s.w);
  auto aiv = fillInt(m, ai, rng, -20, 20);
  auto biv = fillInt(m, bi, rng, -20, 20);
  auto icmd = arCmd(2, s, Prec::Int8, Prec::Int8, Prec::Int8, true, true);
  icmd.opd0_addr = ai.addr;
  icmd.opd1_addr = bi.addr;
  icmd.res0_addr = ri.addr;
  runTiu(icmd, m);
  each(s, [&](uint32_t n, uint32_t c, uint32_t h, uint32_t w, size_t i) {
    ASSERT_EQ(int8_t(refGetBits(m, ri, n, c, h, w)), int8_t(aiv[i] + biv[i]))
        << "int8 add at " << i;
  });
}
