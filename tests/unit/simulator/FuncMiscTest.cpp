//===- FuncMiscTest.cpp - CMP, LIN, SFU, RQ&DQ, TRANS&BC, VC --------------===//
//
// Each family against a reference written from isa/docs/bm1684x.md 4.5 / 8.3 and the
// decisions of simulator/docs/semantics.md. SG / SGL are in FuncSgTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "FuncTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

using namespace tpu;
using namespace tpu::sim;
using namespace tpu::sim::test;

namespace {

TEST(FuncCmp, SelectsAndAndSelVariants) {
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(41);
  const uint32_t C = 3, W = 10;
  Ref a = euRef(laddr(0, 0), Prec::Fp32, 1, C, 1, W);
  Ref b = euRef(laddr(0, 0x100), Prec::Fp32, 1, C, 1, W);
  Ref t = euRef(laddr(0, 0x200), Prec::Int16, 1, C, 1, W);
  Ref r0f = euRef(laddr(0, 0x300), Prec::Fp32, 1, C, 1, W);
  Ref r0i = euRef(laddr(0, 0x300), Prec::Int16, 1, C, 1, W);
  Ref r1 = euRef(laddr(0, 0x400), Prec::Int16, 1, C, 1, W);
  std::vector<float> av, bv;
  std::vector<int64_t> tv;
  for (uint32_t c = 0; c < C; ++c)
    for (uint32_t w = 0; w < W; ++w) {
      float x = float(randomInt(rng, -2, 2)), y = float(randomInt(rng, -2, 2));
      int64_t z = randomInt(rng, -1000, 1000);
      refSetFloat(m, a, 0, c, 0, w, x);
      refSetFloat(m, b, 0, c, 0, w, y);
      refSetBits(m, t, 0, c, 0, w, uint16_t(z));
      av.push_back(x);
      bv.push_back(y);
      tv.push_back(z);
    }
  for (unsigned eu : {22u, 23u, 24u, 25u, 26u}) {
    isa::cmd::SCMP cmd;
    cmd.cmd_short = 1;
    cmd.tsk_typ = 13;
    cmd.tsk_eu_typ = eu;
    cmd.opd0_prec = uint64_t(Prec::Fp32);
    cmd.opd2_prec = uint64_t(Prec::Int16);
    cmd.opd0_sign = 1;
    cmd.res0_n = 1;
    cmd.res0_c = C;
    cmd.res0_h = 1;
    cmd.res0_w = W;
    cmd.opd0_addr = a.addr;
    cmd.opd1_addr = b.addr;
    cmd.opd2_addr = t.addr;
    cmd.opd3_const = 1;
    cmd.opd3_addr = uint16_t(-7); // false value
    cmd.res0_addr = r0f.addr;
    cmd.res1_addr = r1.addr;
    runTiu(cmd, m);
    size_t i = 0;
    for (uint32_t c = 0; c < C; ++c)
      for (uint32_t w = 0; w < W; ++w, ++i) {
        bool hit = eu == 22 || eu == 23 ? av[i] > bv[i]
                   : eu == 24           ? av[i] == bv[i]
                                        : av[i] < bv[i];
        int64_t sel = hit ? tv[i] : -7;
        if (eu == 22 || eu == 25) {
          float win =
              eu == 22 ? std::max(av[i], bv[i]) : std::min(av[i], bv[i]);
          EXPECT_EQ(refGetFloat(m, r0f, 0, c, 0, w), win) << eu;
          EXPECT_EQ(refGetInt(m, r1, true, 0, c, 0, w), sel) << eu;
        } else {
          EXPECT_EQ(refGetInt(m, r0i, true, 0, c, 0, w), sel) << eu;
        }
      }
  }
}

TEST(FuncLin, MacSquareSumSquareDiff) {
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(42);
  const uint32_t C = 66, W = 7;
  for (Prec p : {Prec::Fp32, Prec::Bf16}) {
    Ref a = euRef(laddr(0, 0), p, 1, C, 1, W);
    Ref mul{laddr(0, 0x1000), p, 1, C, 1, 1, 0, 1, 0, 0};
    Ref add{laddr(0, 0x1100), p, 1, C, 1, 1, 0, 1, 0, 0};
    Ref r = euRef(laddr(0, 0x2000), p, 1, C, 1, W);
    std::vector<float> av, mv(C), dv(C);
    for (uint32_t c = 0; c < C; ++c) {
      refSetFloat(m, mul, 0, c, 0, 0, mv[c] = randomFloat(rng, p));
      refSetFloat(m, add, 0, c, 0, 0, dv[c] = randomFloat(rng, p));
      for (uint32_t w = 0; w < W; ++w) {
        av.push_back(randomFloat(rng, p));
        refSetFloat(m, a, 0, c, 0, w, av.back());
      }
    }
    for (unsigned eu : {1u, 20u, 21u}) {
      isa::cmd::SLIN cmd;
      cmd.cmd_short = 1;
      cmd.tsk_typ = 10;
      cmd.tsk_eu_typ = eu;
      cmd.res0_prec = uint64_t(p);
      cmd.res0_n = 1;
      cmd.res0_c = C;
      cmd.res0_h = 1;
      cmd.res0_w = W;
      cmd.opd0_addr = a.addr;
      cmd.opd1_addr = mul.addr;
      cmd.opd2_addr = add.addr;
      cmd.res0_addr = r.addr;
      runTiu(cmd, m);
      size_t i = 0;
      for (uint32_t c = 0; c < C; ++c)
        for (uint32_t w = 0; w < W; ++w, ++i) {
          float v;
          if (eu == 1) {
            v = av[i] * mv[c];
            v = v + dv[c];
          } else {
            float s = eu == 20 ? av[i] + mv[c] : av[i] - mv[c];
            v = s * s;
          }
          ASSERT_EQ(refGetBits(m, r, 0, c, 0, w), fToBits(v, p))
              << isa::precName(p) << " eu " << eu << " " << i;
        }
    }
  }
}

TEST(FuncSfu, TaylorRsqrtNormalize) {
  MachineState m(isa::ChipParams::bm1684x());
  const uint32_t C = 2, W = 5, L = 4;
  Ref x = euRef(laddr(0, 0), Prec::Fp32, 1, C, 1, W);
  const float xs[W] = {0.5f, -1.0f, 2.0f, 0.125f, 3.0f};
  for (uint32_t c = 0; c < C; ++c)
    for (uint32_t w = 0; w < W; ++w)
      refSetFloat(m, x, 0, c, 0, w, xs[w] * float(c + 1));
  // Table k = {1, 1/2, 1/4, 1/8} at offset 0x100 of both lanes.
  const float k[L] = {1.0f, 0.5f, 0.25f, 0.125f};
  for (unsigned lane = 0; lane < C; ++lane)
    std::memcpy(m.lmem.at(lane, 0x100, sizeof(k)), k, sizeof(k));
  Ref r = euRef(laddr(0, 0x200), Prec::Fp32, 1, C, 1, W);
  isa::cmd::SSFU cmd;
  cmd.cmd_short = 1;
  cmd.tsk_typ = 9;
  cmd.tsk_eu_typ = 13;
  cmd.res0_prec = cmd.opd0_prec = uint64_t(Prec::Fp32);
  cmd.res0_n = 1;
  cmd.res0_c = C;
  cmd.res0_h = 1;
  cmd.res0_w = W;
  cmd.opd1_n = L;
  cmd.opd0_addr = x.addr;
  cmd.opd1_addr = 0x100;
  cmd.res0_addr = r.addr;
  runTiu(cmd, m);
  for (uint32_t c = 0; c < C; ++c)
    for (uint32_t w = 0; w < W; ++w) {
      float v = xs[w] * float(c + 1);
      // Horner: ((k3 x + k2) x + k1) x + k0, each step rounded to fp32.
      float y = k[3];
      for (int i = 2; i >= 0; --i) {
        y = y * v;
        y = y + k[i];
      }
      EXPECT_EQ(refGetFloat(m, r, 0, c, 0, w), y);
    }
  // rsqrt of positive inputs, correctly rounded to fp16.
  Ref rh = euRef(laddr(0, 0x300), Prec::Fp16, 1, C, 1, W);
  for (uint32_t w = 0; w < W; ++w)
    refSetFloat(m, x, 0, 0, 0, w, std::fabs(xs[w]) + 1.0f);
  cmd.tsk_eu_typ = 17;
  cmd.res0_c = 1;
  cmd.res0_prec = uint64_t(Prec::Fp16);
  cmd.res0_addr = rh.addr;
  runTiu(cmd, m);
  for (uint32_t w = 0; w < W; ++w)
    EXPECT_EQ(refGetBits(m, rh, 0, 0, 0, w),
              isa::fp32ToFp16(
                  float(1.0 / std::sqrt(double(std::fabs(xs[w]) + 1.0f)))));
  // normalize: 12 = 1.5 * 2^3 -> exponent 3 (int result), mantissa 1.5.
  refSetFloat(m, x, 0, 0, 0, 0, -12.0f);
  Ref ri = euRef(laddr(0, 0x400), Prec::Int32, 1, 1, 1, 1);
  cmd.tsk_eu_typ = 15;
  cmd.res0_w = 1;
  cmd.res0_prec = uint64_t(Prec::Int32);
  cmd.res0_addr = ri.addr;
  runTiu(cmd, m);
  EXPECT_EQ(refGetInt(m, ri, true, 0, 0, 0, 0), 3);
  cmd.res0_prec = uint64_t(Prec::Fp32);
  runTiu(cmd, m);
  Ref rf = euRef(ri.addr, Prec::Fp32, 1, 1, 1, 1);
  EXPECT_EQ(refGetFloat(m, rf, 0, 0, 0, 0), -1.5f);
}

isa::cmd::SRQDQ rqCmd(unsigned eu, Prec in, Prec out, uint32_t c, uint32_t w) {
  isa::cmd::SRQDQ r;
  r.cmd_short = 1;
  r.tsk_typ = 4;
  r.tsk_eu_typ = eu;
  r.opd0_prec = uint64_t(in);
  r.res0_prec = uint64_t(out);
  r.res0_n = 1;
  r.res0_c = c;
  r.res0_h = 1;
  r.res0_w = w;
  return r;
}

TEST(FuncRqDq, FixedPointRequantPerChannelAndImmediate) {
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(43);
  const uint32_t C = 65, W = 9;
  Ref x = euRef(laddr(0, 0), Prec::Int32, 1, C, 1, W);
  Ref y = euRef(laddr(0, 0x1000), Prec::Int8, 1, C, 1, W);
  // Params: one record of 3 int32 at the start of each 64-byte channel
  // slot (EU-aligned (1, C, 1, 1), isa/docs/bm1684x.md 8.3).
  uint32_t pAddr = laddr(0, 0x2000);
  std::vector<int64_t> xv, mult(C), zp(C);
  std::vector<int> shift(C);
  for (uint32_t c = 0; c < C; ++c) {
    mult[c] = randomInt(rng, 1 << 20, 1 << 30);
    shift[c] = -int(randomInt(rng, 20, 34)); // stored left shift: negative
    zp[c] = randomInt(rng, -20, 20);
    unsigned lane = c % 64, slot = c / 64;
    int32_t rec[3] = {int32_t(mult[c]), shift[c], int32_t(zp[c])};
    std::memcpy(m.lmem.at(lane, 0x2000 + slot * 64, 12), rec, 12);
    for (uint32_t w = 0; w < W; ++w) {
      xv.push_back(randomInt(rng, -100000, 100000));
      refSetBits(m, x, 0, c, 0, w, uint32_t(xv.back()));
    }
  }
  auto r = rqCmd(1, Prec::Int32, Prec::Int8, C, W);
  r.opd0_sign = r.opd2_sign = 1;
  r.opd2_n_str = 1; // half away from zero
  r.opd0_addr = x.addr;
  r.opd1_addr = pAddr;
  r.res0_addr = y.addr;
  runTiu(r, m);
  size_t i = 0;
  for (uint32_t c = 0; c < C; ++c)
    for (uint32_t w = 0; w < W; ++w, ++i) {
      // x * m / 2^rshift with the product exact (it fits a double's
      // 53 bits only approximately, so go through int128).
      __int128 prod = __int128(xv[i]) * mult[c];
      int rs = -shift[c];
      __int128 q = prod >> rs, rem = prod - q * (__int128(1) << rs);
      __int128 half = __int128(1) << (rs - 1);
      bool up = rem > half || (rem == half && prod >= 0);
      int64_t v = int64_t(q) + (up ? 1 : 0) + zp[c];
      ASSERT_EQ(refGetInt(m, y, true, 0, c, 0, w),
                std::clamp<int64_t>(v, -128, 127))
          << c << " " << w;
    }
  // Immediates: multiplier 3, shift -1 (>> 1), zero point 5 (bits 23..8).
  auto ri = rqCmd(1, Prec::Int32, Prec::Int8, 1, 4);
  ri.opd0_sign = ri.opd2_sign = 1;
  ri.opd1_const = 1;
  ri.opd1_addr = 3;
  ri.opd2_addr = (5u << 8) | uint8_t(-1);
  ri.opd0_addr = x.addr;
  ri.res0_addr = y.addr;
  const int32_t xs[4] = {1, 3, -5, 100};
  for (int k = 0; k < 4; ++k)
    refSetBits(m, x, 0, 0, 0, k, uint32_t(xs[k]));
  runTiu(ri, m);
  // 3x/2 rounded half to even: 1.5 -> 2, 4.5 -> 4, -7.5 -> -8, 150 -> 150;
  // plus 5, saturated: 7, 9, -3, 127.
  const int64_t want[4] = {7, 9, -3, 127};
  for (int k = 0; k < 4; ++k)
    EXPECT_EQ(refGetInt(m, y, true, 0, 0, 0, k), want[k]) << k;
}

TEST(FuncRqDq, FixedPointRequantHalfUpOnLongRows) {
  // rq1 with HalfUp (round mode 5): the dropped bits at least half round
  // up. Rows of 37 (whole vectors and a remainder), inputs and multipliers
  // at the int32 extremes and random, ties made on purpose, shifts from 1
  // to 40, int16 and int8 results (the clamp both ways).
  std::mt19937 rng(47);
  const uint32_t C = 8, W = 37;
  const int64_t mults[C] = {INT32_MIN, INT32_MAX, 1,        -1,
                            3,         1 << 30,   -1234567, 987654321};
  const int shifts[C] = {40, 31, 1, 2, 1, 20, 9, 33};
  for (Prec outPrec : {Prec::Int16, Prec::Int8}) {
    MachineState m(isa::ChipParams::bm1684x());
    Ref x = euRef(laddr(0, 0), Prec::Int32, 1, C, 1, W);
    Ref y = euRef(laddr(0, 0x1000), outPrec, 1, C, 1, W);
    std::vector<int64_t> xv;
    std::vector<int64_t> zp(C);
    for (uint32_t c = 0; c < C; ++c) {
      zp[c] = randomInt(rng, -20, 20);
      int32_t rec[3] = {int32_t(mults[c]), -shifts[c], int32_t(zp[c])};
      std::memcpy(m.lmem.at(c, 0x2000, 12), rec, 12);
      for (uint32_t w = 0; w < W; ++w) {
        int64_t v = w == 0   ? INT32_MIN
                    : w == 1 ? INT32_MAX
                    : w < 8  ? int64_t(w) - 4 // small: ties at odd x / 2
                             : randomInt(rng, INT32_MIN, INT32_MAX);
        xv.push_back(v);
        refSetBits(m, x, 0, c, 0, w, uint32_t(int32_t(v)));
      }
    }
    auto r = rqCmd(1, Prec::Int32, outPrec, C, W);
    r.opd0_sign = r.opd2_sign = 1;
    r.opd2_n_str = 5; // half up
    r.opd0_addr = x.addr;
    r.opd1_addr = laddr(0, 0x2000);
    r.res0_addr = y.addr;
    runTiu(r, m);
    int64_t lo = outPrec == Prec::Int8 ? -128 : -32768;
    int64_t hi = outPrec == Prec::Int8 ? 127 : 32767;
    size_t i = 0;
    for (uint32_t c = 0; c < C; ++c)
      for (uint32_t w = 0; w < W; ++w, ++i) {
        __int128 prod = __int128(xv[i]) * mults[c];
        int rs = shifts[c];
        __int128 q = prod >> rs, rem = prod - q * (__int128(1) << rs);
        bool up = rem >= (__int128(1) << (rs - 1));
        int64_t v = int64_t(q) + (up ? 1 : 0) + zp[c];
        ASSERT_EQ(refGetInt(m, y, true, 0, c, 0, w), std::clamp(v, lo, hi))
            << isa::precName(outPrec) << " channel " << c << " at " << w;
      }
  }
}

// RQ / DQ of a column tensor (w = 1, h > 1: (1, C, H, 1), what an
// element-wise layer group holds for counts with few divisors): every
// element requantised on its own. The channels' rows are merged into one
// row of H elements; reading that row as a broadcast column gave each
// channel its first element (fails without Source::mergedRows in RQDQ).
TEST(FuncRqDq, ColumnTensorsReadEveryRow) {
  const uint32_t C = 5, H = 23;
  for (unsigned eu : {1u, 3u}) { // rq1 (int32 -> int8), dq0 (int8 -> fp32)
    MachineState m(isa::ChipParams::bm1684x());
    Prec in = eu == 1 ? Prec::Int32 : Prec::Int8;
    Prec out = eu == 1 ? Prec::Int8 : Prec::Fp32;
    Ref x = euRef(laddr(0, 0), in, 1, C, H, 1);
    Ref y = euRef(laddr(0, 0x1000), out, 1, C, H, 1);
    for (uint32_t c = 0; c < C; ++c)
      for (uint32_t h = 0; h < H; ++h)
        refSetBits(m, x, 0, c, h, 0,
                   uint32_t(int32_t(c * 7 + h) - 40) & (eu == 1 ? ~0u : 0xFFu));
    auto r = rqCmd(eu, in, out, C, 1);
    r.res0_h = H;
    r.opd0_sign = r.opd2_sign = 1;
    r.opd1_const = 1;
    if (eu == 1) {
      r.opd1_addr = 3; // x * 3 >> 1, zero point 0
      r.opd2_addr = uint8_t(-1);
    } else {
      r.opd1_addr = 0;                      // zero point
      r.opd2_addr = isa::floatToBits(0.5f); // scale
    }
    r.opd0_addr = x.addr;
    r.res0_addr = y.addr;
    runTiu(r, m);
    for (uint32_t c = 0; c < C; ++c)
      for (uint32_t h = 0; h < H; ++h) {
        int64_t v = int64_t(c * 7 + h) - 40;
        if (eu == 1) {
          // 3v / 2 rounded half to even (round mode 0), saturated.
          int64_t want = std::clamp<int64_t>(
              int64_t(std::nearbyint(1.5 * double(v))), -128, 127);
          ASSERT_EQ(refGetInt(m, y, true, 0, c, h, 0), want) << c << " " << h;
        } else {
          ASSERT_EQ(refGetFloat(m, y, 0, c, h, 0), 0.5f * float(v))
              << c << " " << h;
        }
      }
  }
}

TEST(FuncRqDq, FloatRequantAndDequant) {
  MachineState m(isa::ChipParams::bm1684x());
  Ref x = euRef(laddr(0, 0), Prec::Int32, 1, 1, 1, 4);
  Ref f = euRef(laddr(0, 0x100), Prec::Fp32, 1, 1, 1, 4);
  Ref y = euRef(laddr(0, 0x200), Prec::Int8, 1, 1, 1, 4);
  const int32_t xs[4] = {10, 11, -11, 1000};
  for (int k = 0; k < 4; ++k)
    refSetBits(m, x, 0, 0, 0, k, uint32_t(xs[k]));
  // rq0: round(x * 0.25 + 0.5), half to even; 3.0, 3.25, -2.25, 250.5.
  auto r0 = rqCmd(0, Prec::Int32, Prec::Int8, 1, 4);
  r0.opd0_sign = r0.opd2_sign = 1;
  r0.opd1_const = 1;
  r0.opd1_addr = isa::floatToBits(0.25f);
  r0.opd2_addr = isa::floatToBits(0.5f);
  r0.opd0_addr = x.addr;
  r0.res0_addr = y.addr;
  runTiu(r0, m);
  const int64_t want0[4] = {3, 3, -2, 127};
  for (int k = 0; k < 4; ++k)
    EXPECT_EQ(refGetInt(m, y, true, 0, 0, 0, k), want0[k]) << k;
  // dq0: (x - 10) * 0.5 -> fp32.
  auto d0 = rqCmd(3, Prec::Int32, Prec::Fp32, 1, 4);
  d0.opd0_sign = 1;
  d0.opd1_const = 1;
  d0.opd1_addr = 10;
  d0.opd2_addr = isa::floatToBits(0.5f);
  d0.opd0_addr = x.addr;
  d0.res0_addr = f.addr;
  runTiu(d0, m);
  const float want1[4] = {0.0f, 0.5f, -10.5f, 495.0f};
  for (int k = 0; k < 4; ++k)
    EXPECT_EQ(refGetFloat(m, f, 0, 0, 0, k), want1[k]) << k;
  // dq1: ((x - 10) * 3) >> 2 (stored shift -2), half to even, int32 out.
  Ref yi = euRef(laddr(0, 0x300), Prec::Int32, 1, 1, 1, 4);
  auto d1 = rqCmd(4, Prec::Int32, Prec::Int32, 1, 4);
  d1.opd0_sign = d1.opd2_sign = 1;
  d1.opd1_const = 1;
  d1.opd1_addr = (uint32_t(uint16_t(-2)) << 16) | 10;
  d1.opd2_addr = 3;
  d1.opd0_addr = x.addr;
  d1.res0_addr = yi.addr;
  runTiu(d1, m);
  // 0, 3/4 = 0.75 -> 1, -63/4 = -15.75 -> -16, 2970/4 = 742.5 -> 742.
  const int64_t want2[4] = {0, 1, -16, 742};
  for (int k = 0; k < 4; ++k)
    EXPECT_EQ(refGetInt(m, yi, true, 0, 0, 0, k), want2[k]) << k;
}

TEST(FuncRqDq, FloatRequantToIntegersInEveryMode) {
  // rq0 from fp32 (scale 1, offset 0) into contiguous int8 / uint8 / int16
  // / int32 in every round mode: ties of both signs, the floats next to a
  // half (whose float sum with 0.5 would round to the next integer), the
  // range ends and past them, infinities, NaN and subnormals; each result
  // as isa::floatToInt gives it (tested on its own against hand-derived
  // values in the isa tests).
  const float kHalfBelow = std::nextafter(0.5f, 0.0f);
  const std::vector<float> xs = {0.5f,
                                 -0.5f,
                                 1.5f,
                                 -1.5f,
                                 2.5f,
                                 -2.5f,
                                 kHalfBelow,
                                 -kHalfBelow,
                                 std::nextafter(1.5f, 2.0f),
                                 0.0f,
                                 -0.0f,
                                 1e-45f,
                                 -1e-45f,
                                 127.5f,
                                 -128.5f,
                                 128.0f,
                                 255.5f,
                                 256.0f,
                                 -129.0f,
                                 32767.5f,
                                 -32768.5f,
                                 2147483520.0f,
                                 -2147483648.0f,
                                 3e9f,
                                 -3e9f,
                                 1e30f,
                                 std::numeric_limits<float>::infinity(),
                                 -std::numeric_limits<float>::infinity(),
                                 std::numeric_limits<float>::quiet_NaN(),
                                 7.25f,
                                 -7.75f,
                                 8388607.5f};
  const uint32_t W = uint32_t(xs.size());
  const std::pair<Prec, bool> kTypes[] = {{Prec::Int8, true},
                                          {Prec::Int8, false},
                                          {Prec::Int16, true},
                                          {Prec::Int32, true}};
  for (auto [prec, isSigned] : kTypes)
    for (unsigned mode = 0; mode < 7; ++mode) {
      MachineState m(isa::ChipParams::bm1684x());
      Ref x = euRef(laddr(0, 0), Prec::Fp32, 1, 1, 1, W);
      Ref y = euRef(laddr(0, 0x400), prec, 1, 1, 1, W);
      for (uint32_t k = 0; k < W; ++k)
        refSetBits(m, x, 0, 0, 0, k, isa::floatToBits(xs[k]));
      auto r = rqCmd(0, Prec::Fp32, prec, 1, W);
      r.opd0_sign = 1;
      r.opd2_sign = isSigned;
      r.opd1_const = 1;
      r.opd1_addr = isa::floatToBits(1.0f);
      r.opd2_addr = isa::floatToBits(0.0f);
      r.opd2_n_str = mode;
      r.opd0_addr = x.addr;
      r.res0_addr = y.addr;
      runTiu(r, m);
      auto rm = *isa::roundModeFromCode(mode);
      for (uint32_t k = 0; k < W; ++k)
        EXPECT_EQ(refGetInt(m, y, isSigned, 0, 0, 0, k),
                  isa::floatToInt(xs[k], prec, isSigned, rm))
            << isa::precName(prec) << (isSigned ? "" : " unsigned") << " mode "
            << mode << " x " << xs[k];
    }
}

isa::cmd::STransBC tbcCmd(unsigned eu, Prec p) {
  isa::cmd::STransBC t;
  t.cmd_short = 1;
  t.tsk_typ = 5;
  t.tsk_eu_typ = eu;
  t.res0_prec = uint64_t(p);
  return t;
}

TEST(FuncTransBC, TransposesAndBroadcasts) {
  MachineState m(isa::ChipParams::bm1684x());
  const uint32_t N = 2, C = 5, H = 2, W = 3;
  // eu 1: source (n, W, h, C) EU-aligned -> result (n, C, h, W).
  Ref src = euRef(laddr(0, 0), Prec::Fp16, N, W, H, C);
  for (uint32_t n = 0; n < N; ++n)
    for (uint32_t w = 0; w < W; ++w)
      for (uint32_t h = 0; h < H; ++h)
        for (uint32_t c = 0; c < C; ++c)
          refSetBits(m, src, n, w, h, c, n * 1000 + w * 100 + h * 10 + c);
  Ref dst = euRef(laddr(3, 0x400), Prec::Fp16, N, C, H, W);
  auto t = tbcCmd(1, Prec::Fp16);
  t.res0_n = N;
  t.res0_c = C;
  t.res0_h = H;
  t.res0_w = W;
  t.opd0_c = W;
  t.opd0_w = C;
  t.opd0_addr = src.addr;
  t.res0_addr = dst.addr;
  runTiu(t, m);
  for (uint32_t n = 0; n < N; ++n)
    for (uint32_t c = 0; c < C; ++c)
      for (uint32_t h = 0; h < H; ++h)
        for (uint32_t w = 0; w < W; ++w)
          ASSERT_EQ(refGetBits(m, dst, n, c, h, w),
                    n * 1000 + w * 100 + h * 10 + c);
  // eu 0 reads the same source compact.
  Ref srcC = compactRef(laddr(0, 0x800), Prec::Fp16, N, W, H, C);
  for (uint32_t n = 0; n < N; ++n)
    for (uint32_t w = 0; w < W; ++w)
      for (uint32_t h = 0; h < H; ++h)
        for (uint32_t c = 0; c < C; ++c)
          refSetBits(m, srcC, n, w, h, c, 7 + n * 1000 + w * 100 + h * 10 + c);
  t.tsk_eu_typ = 0;
  t.opd0_addr = srcC.addr;
  runTiu(t, m);
  EXPECT_EQ(refGetBits(m, dst, 1, 4, 1, 2), 7u + 1000 + 200 + 10 + 4);
  // eu 3 lane broadcast: (n, 1, h, w) -> (n, C, h, w).
  Ref one = euRef(laddr(7, 0), Prec::Int8, N, 1, H, W);
  for (uint32_t n = 0; n < N; ++n)
    for (uint32_t i = 0; i < H * W; ++i)
      refSetBits(m, one, n, 0, i / W, i % W, n * 10 + i);
  Ref bc = euRef(laddr(62, 0x1000), Prec::Int8, N, C, H, W);
  auto b = tbcCmd(3, Prec::Int8);
  b.res0_n = N;
  b.res0_c = C;
  b.res0_h = H;
  b.res0_w = W;
  b.opd0_c = 1;
  b.opd0_w = W;
  b.opd0_addr = one.addr;
  b.res0_addr = bc.addr;
  runTiu(b, m);
  for (uint32_t n = 0; n < N; ++n)
    for (uint32_t c = 0; c < C; ++c)
      for (uint32_t i = 0; i < H * W; ++i)
        ASSERT_EQ(refGetBits(m, bc, n, c, i / W, i % W), n * 10 + i);
  // eu 4 static broadcast from static memory; eu 5 static distribute.
  const uint32_t smem = 0x09000000;
  int32_t vec[4] = {11, 22, 33, 44};
  std::memcpy(m.smem.at(smem, sizeof(vec)), vec, sizeof(vec));
  Ref sb = euRef(laddr(0, 0x2000), Prec::Int32, 1, 3, 1, 4);
  auto s = tbcCmd(4, Prec::Int32);
  s.res0_n = s.res0_h = 1;
  s.res0_c = 3;
  s.res0_w = 4;
  s.opd0_addr = smem;
  s.res0_addr = sb.addr;
  runTiu(s, m);
  for (uint32_t c = 0; c < 3; ++c)
    for (uint32_t w = 0; w < 4; ++w)
      EXPECT_EQ(refGetBits(m, sb, 0, c, 0, w), uint64_t(vec[w]));
  Ref sd = compactRef(laddr(0, 0x3000), Prec::Int32, 1, 4, 1, 1);
  s.tsk_eu_typ = 5;
  s.res0_c = 4;
  s.res0_w = 1;
  s.res0_addr = sd.addr;
  runTiu(s, m);
  for (uint32_t c = 0; c < 4; ++c)
    EXPECT_EQ(refGetBits(m, sd, 0, c, 0, 0), uint64_t(vec[c]));
}

TEST(FuncVc, OuterCombination) {
  MachineState m(isa::ChipParams::bm1684x());
  // A: 7 elements stored as (1, 2, 1, 4) with 3 in the last lane; B (1, 3,
  // 1, 2); result (7, 3, 1, 2) = A[i] - B[c][w], int16 wrap.
  Ref a = euRef(laddr(0, 0), Prec::Int16, 1, 2, 1, 4);
  Ref b = euRef(laddr(0, 0x100), Prec::Int16, 1, 3, 1, 2);
  Ref r = euRef(laddr(0, 0x200), Prec::Int16, 7, 3, 1, 2);
  for (uint32_t i = 0; i < 7; ++i)
    refSetBits(m, a, 0, i / 4, 0, i % 4, 10 * i);
  for (uint32_t c = 0; c < 3; ++c)
    for (uint32_t w = 0; w < 2; ++w)
      refSetBits(m, b, 0, c, 0, w, c * 2 + w);
  isa::cmd::SVC v;
  v.cmd_short = 1;
  v.tsk_typ = 14;
  v.tsk_eu_typ = 3;
  v.opd0_sign = v.opd1_sign = 1;
  v.res0_prec = v.opd0_prec = v.opd1_prec = uint64_t(Prec::Int16);
  v.opd0_c = 2;
  v.opd0_w = 4;
  v.opd1_w = 3;
  v.res0_c = 3;
  v.res0_w = 2;
  v.opd0_addr = a.addr;
  v.opd1_addr = b.addr;
  v.res0_addr = r.addr;
  runTiu(v, m);
  for (uint32_t i = 0; i < 7; ++i)
    for (uint32_t c = 0; c < 3; ++c)
      for (uint32_t w = 0; w < 2; ++w)
        EXPECT_EQ(refGetInt(m, r, true, i, c, 0, w),
                  int64_t(10 * i) - (c * 2 + w));
}

TEST(FuncTiuWork, ConvMatmulAndVector) {
  isa::ChipParams chip = isa::ChipParams::bm1684x();
  isa::cmd::SConv c;
  c.cmd_short = 1;
  c.opd0_prec = uint64_t(Prec::Int8);
  c.res0_prec = uint64_t(Prec::Int32);
  c.res0_n = 1;
  c.res0_c = 64;
  c.res0_h = c.res0_w = 56;
  c.opd0_c = 64;
  c.opd0_h = c.opd0_w = 56;
  c.opd1_h = c.opd1_w = 3;
  c.res0_addr = 0x20000;
  c.opd1_addr = 0x10000;
  TiuWork w = tiuWork(decodeTiu(isa::encode(c)), chip);
  EXPECT_EQ(w.macs, 64ull * 64 * 56 * 56 * 9);
  EXPECT_EQ(w.outputElements, 64ull * 56 * 56);
  EXPECT_EQ(w.cubeIcPerStep, 64u);
  EXPECT_EQ(w.kernelElements, 9u);
  EXPECT_EQ(w.lanesUsed, 64u);
  EXPECT_EQ(w.elementsPerLane, 56ull * 56);
  ASSERT_EQ(w.writes.size(), 1u);
  // Output int32 56x56 EU-aligned: align_up(3136, 16) * 4 bytes per lane.
  EXPECT_EQ(w.writes[0].offset, 0x20000u);
  EXPECT_EQ(w.writes[0].bytesPerLane, 3136u * 4);
  ASSERT_EQ(w.reads.size(), 2u);
  // 64IC weights: one block of 9 * 64 bytes per lane.
  EXPECT_EQ(w.reads[1].bytesPerLane, 9u * 64);
  // fp32: the cube takes one input channel per step.
  c.opd0_prec = c.res0_prec = uint64_t(Prec::Fp32);
  w = tiuWork(decodeTiu(isa::encode(c)), chip);
  EXPECT_EQ(w.cubeIcPerStep, 1u);
  // A 130-channel AR op occupies three slots in its busiest lane.
  isa::cmd::SAR a;
  a.cmd_short = 1;
  a.tsk_typ = 3;
  a.tsk_eu_typ = 2;
  a.tsk_opd_num = 2;
  a.res0_n = 1;
  a.res0_c = 130;
  a.res0_h = 1;
  a.res0_w = 10;
  w = tiuWork(decodeTiu(isa::encode(a)), chip);
  EXPECT_EQ(w.outputElements, 1300u);
  EXPECT_EQ(w.elementsPerLane, 30u);
  EXPECT_EQ(w.macs, 0u);
  EXPECT_EQ(w.reads.size(), 2u);
}

// A per-channel operand read with zero h/w strides (layout code 3, as the
// backend emits for (1, C, 1, 1) operands) spans one element per channel
// slot, not a tile: bank spans and contention use this range.
TEST(FuncTiuWork, FreeStrideOperandRange) {
  isa::ChipParams chip = isa::ChipParams::bm1684x();
  isa::cmd::SAR a;
  a.cmd_short = 1;
  a.tsk_typ = 3; // AR
  a.tsk_eu_typ = 0; // mul
  a.tsk_opd_num = 2;
  a.opd0_prec = a.opd1_prec = a.res0_prec = uint64_t(Prec::Fp16);
  a.res0_n = 1;
  a.res0_c = 130; // three channel slots in lanes 0 and 1
  a.res0_h = 28;
  a.res0_w = 28;
  a.opd0_addr = 0x0;
  a.res0_addr = 0x8000;
  a.opd1_addr = 0x4000;
  a.opd1_str = 3;
  a.opd1_c_str = 32; // one EU-aligned fp16 element per slot
  TiuWork w = tiuWork(decodeTiu(isa::encode(a)), chip);
  ASSERT_EQ(w.reads.size(), 2u);
  // opd0 EU-aligned: slot stride align_up(28 x 28, 32) = 800 fp16; the
  // range ends with the last slot's 784 elements: (2 x 800 + 784) x 2.
  EXPECT_EQ(w.reads[0].bytesPerLane, (2u * 800 + 784) * 2);
  // opd1: elements 0, 32 and 64 of the lane -> (2 * 32 + 1) x 2 bytes.
  EXPECT_EQ(w.reads[1].offset, 0x4000u);
  EXPECT_EQ(w.reads[1].bytesPerLane, (2u * 32 + 1) * 2);
  // The same operand EU-aligned (code 0) spans the whole tile.
  a.opd1_str = 0;
  w = tiuWork(decodeTiu(isa::encode(a)), chip);
  EXPECT_EQ(w.reads[1].bytesPerLane, (2u * 800 + 784) * 2);
}

} // namespace

// A table lookup (SG pe_s_gather_d1coor, opd0_str 4) reads one 256-entry
// table per lane and its (n, c, 1, w) indices, not a tensor of the result's
// shape at the table's address: the backend places the table in the last
// 256 bytes of a lane, which that estimate (960 bytes from 0x3ff00) ran past
// and tpusim --mode timing rejected as outside the lane.
TEST(FuncTiuWork, GatherTableRange) {
  isa::ChipParams chip = isa::ChipParams::bm1684x();
  isa::cmd::SSG c;
  c.cmd_short = 1;
  c.tsk_typ = unsigned(isa::TiuTask::SG);
  c.tsk_eu_typ = 5; // pe_s_gather_d1coor
  c.opd0_str = 4;
  c.res0_n = 1;
  c.res0_c = 64;
  c.res0_h = 1;
  c.res0_w = 960;
  c.opd0_h = 1;
  c.opd0_w = 256;
  c.opd1_w = 960;
  c.res0_prec = c.opd0_prec = c.opd1_prec = uint64_t(Prec::Int8);
  c.opd0_addr = 0x3ff00;
  c.opd1_addr = 0x4000;
  c.res0_addr = 0x8000;
  TiuWork w = tiuWork(decodeTiu(isa::encode(c)), chip);
  ASSERT_EQ(w.reads.size(), 2u);
  EXPECT_EQ(w.reads[0].offset, 0x3ff00u);
  EXPECT_EQ(w.reads[0].bytesPerLane, 256u);
  EXPECT_EQ(w.reads[1].offset, 0x4000u);
  EXPECT_EQ(w.reads[1].bytesPerLane, 960u);
  ASSERT_EQ(w.writes.size(), 1u);
  EXPECT_EQ(w.writes[0].offset, 0x8000u);
  EXPECT_EQ(w.writes[0].bytesPerLane, 960u);
  // An EU-aligned table (opd0_str 0) of 130 channels: three slots of
  // align_up(256, 64) bytes in lanes 0 and 1.
  c.opd0_str = 0;
  c.res0_c = 130;
  c.opd0_addr = 0x10000;
  w = tiuWork(decodeTiu(isa::encode(c)), chip);
  EXPECT_EQ(w.reads[0].bytesPerLane, 3u * 256);
}
