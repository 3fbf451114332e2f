//===- Int8RequantTest.cpp - the requantisation primitives INT8 uses ------===//
//
// The rounding and requantisation the INT8 path (compiler/docs/design.md
// "INT8") relies on, with the modes it uses: HalfUp (every requantisation:
// RQ1, the AR mul-shifts of add) and HalfAwayFromZero (quantising casts,
// weight and bias rounding). Every expected value is derived by hand in the
// comment beside it; NumericsTest.cpp covers the primitives in general.
//
//===----------------------------------------------------------------------===//

#include "tpu/isa/Numerics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

using namespace tpu::isa;

namespace {

constexpr RoundMode kUp = RoundMode::HalfUp;
constexpr RoundMode kAway = RoundMode::HalfAwayFromZero;

TEST(Int8Requant, RightShiftRoundHalfUpAndAwayTies) {
  // x / 2^s exactly; HalfUp sends a tie towards +inf, HalfAwayFromZero away
  // from zero: they differ only on negative ties.
  EXPECT_EQ(rightShiftRound(5, 1, kUp), 3);    // 2.5 -> 3
  EXPECT_EQ(rightShiftRound(5, 1, kAway), 3);  // 2.5 -> 3
  EXPECT_EQ(rightShiftRound(-5, 1, kUp), -2);  // -2.5 -> -2
  EXPECT_EQ(rightShiftRound(-5, 1, kAway), -3); // -2.5 -> -3
  EXPECT_EQ(rightShiftRound(-6, 2, kUp), -1);  // -1.5 -> -1
  EXPECT_EQ(rightShiftRound(-6, 2, kAway), -2); // -1.5 -> -2
  EXPECT_EQ(rightShiftRound(-2, 2, kUp), 0);   // -0.5 -> 0
  EXPECT_EQ(rightShiftRound(-2, 2, kAway), -1); // -0.5 -> -1
  EXPECT_EQ(rightShiftRound(2, 2, kUp), 1);    // 0.5 -> 1
  EXPECT_EQ(rightShiftRound(2, 2, kAway), 1);  // 0.5 -> 1
  // Not ties: both modes round to nearest.
  EXPECT_EQ(rightShiftRound(-7, 2, kUp), -2);  // -1.75
  EXPECT_EQ(rightShiftRound(-7, 2, kAway), -2);
  EXPECT_EQ(rightShiftRound(-3, 2, kUp), -1);  // -0.75
  EXPECT_EQ(rightShiftRound(-5, 2, kUp), -1);  // -1.25
  EXPECT_EQ(rightShiftRound(-5, 2, kAway), -1);
  EXPECT_EQ(rightShiftRound(1, 2, kUp), 0);    // 0.25
  EXPECT_EQ(rightShiftRound(-1, 2, kAway), 0); // -0.25
  // Above 32 bits (an int32 accumulator times a 31-bit multiplier):
  // (2^40 + 2^9) / 2^10 = 2^30 + 0.5.
  const int64_t big = (int64_t(1) << 40) + (int64_t(1) << 9);
  EXPECT_EQ(rightShiftRound(big, 10, kUp), (int64_t(1) << 30) + 1);
  EXPECT_EQ(rightShiftRound(big, 10, kAway), (int64_t(1) << 30) + 1);
  EXPECT_EQ(rightShiftRound(-big, 10, kUp), -(int64_t(1) << 30));
  EXPECT_EQ(rightShiftRound(-big, 10, kAway), -(int64_t(1) << 30) - 1);
  // INT32_MIN / 2^31 = -1 exactly.
  EXPECT_EQ(rightShiftRound(INT32_MIN, 31, kUp), -1);
  // shift 0 is the identity, a negative shift a left shift (-rshift in the
  // conv records is an rshift of the other sign).
  EXPECT_EQ(rightShiftRound(-7, 0, kUp), -7);
  EXPECT_EQ(rightShiftRound(5, -3, kUp), 40);
}

TEST(Int8Requant, RequantizeRoundsThenAddsZeroPointThenSaturates) {
  // 100 * 3 / 2^3 = 37.5 -> 38 (both); -37.5 -> -37 (HalfUp), -38 (away).
  EXPECT_EQ(requantize(100, 3, 3, 0, kUp, Prec::Int8, true), 38);
  EXPECT_EQ(requantize(-100, 3, 3, 0, kUp, Prec::Int8, true), -37);
  EXPECT_EQ(requantize(-100, 3, 3, 0, kAway, Prec::Int8, true), -38);
  // The zero point is added after the rounding: -3 / 2 = -1.5 -> -1
  // (HalfUp) + 10 = 9; -2 (away) + 10 = 8.
  EXPECT_EQ(requantize(-3, 1, 1, 10, kUp, Prec::Int8, true), 9);
  EXPECT_EQ(requantize(-3, 1, 1, 10, kAway, Prec::Int8, true), 8);
  // int8 saturation at both ends.
  EXPECT_EQ(requantize(1000, 1, 0, 0, kUp, Prec::Int8, true), 127);
  EXPECT_EQ(requantize(-1000, 1, 0, 0, kUp, Prec::Int8, true), -128);
  EXPECT_EQ(requantize(127, 1, 0, 0, kUp, Prec::Int8, true), 127);
  EXPECT_EQ(requantize(-128, 1, 0, 0, kUp, Prec::Int8, true), -128);
  // uint8: negatives clamp to 0, above 255 to 255; 509 / 2 = 254.5 -> 255.
  EXPECT_EQ(requantize(-5, 1, 0, 0, kUp, Prec::Int8, false), 0);
  EXPECT_EQ(requantize(300, 1, 0, 0, kUp, Prec::Int8, false), 255);
  EXPECT_EQ(requantize(509, 1, 1, 0, kUp, Prec::Int8, false), 255);
  EXPECT_EQ(requantize(507, 1, 1, 0, kUp, Prec::Int8, false), 254); // 253.5
  // Zero point -128 (an int8 holding [0, th] in all 256 codes): 200 / 2 =
  // 100 - 128 = -28; 510 / 2 = 255 - 128 = 127; 512 / 2 = 256 - 128 = 128
  // -> 127; -300 / 2 = -150 - 128 -> -128.
  EXPECT_EQ(requantize(200, 1, 1, -128, kUp, Prec::Int8, true), -28);
  EXPECT_EQ(requantize(510, 1, 1, -128, kUp, Prec::Int8, true), 127);
  EXPECT_EQ(requantize(512, 1, 1, -128, kUp, Prec::Int8, true), 127);
  EXPECT_EQ(requantize(-300, 1, 1, -128, kUp, Prec::Int8, true), -128);
  // The int32 accumulator extremes times a 31-bit multiplier do not
  // overflow: INT32_MAX * (2^30) / 2^37 = (2^31 - 1) / 2^7 = 16777215.99
  // -> saturated 127; INT32_MIN: -2^24 -> -128.
  EXPECT_EQ(requantize(INT32_MAX, int64_t(1) << 30, 37, 0, kUp, Prec::Int8,
                       true),
            127);
  EXPECT_EQ(requantize(INT32_MIN, int64_t(1) << 30, 37, 0, kUp, Prec::Int8,
                       true),
            -128);
  // A realistic conv record: s_w * s_in / s_out = 1/3 -> (357913941, 30)
  // (below); 300 * 357913941 / 2^30 = 107374182300 / 1073741824 =
  // 100 * (2^30 - 1) / 2^30 = 99.99999991 -> 100.
  EXPECT_EQ(requantize(300, 357913941, 30, 0, kUp, Prec::Int8, true), 100);
  // 357913941 = (2^30 - 1) / 3, so -381 gives -127 * (2^30 - 1) / 2^30 =
  // -126.99999988 -> -127.
  EXPECT_EQ(requantize(-381, 357913941, 30, 0, kUp, Prec::Int8, true), -127);
}

TEST(Int8Requant, GetScaleAndShiftHandDerived) {
  int64_t m;
  int s;
  // For each n in [-32, 30]: m = round(scale * 2^n) (half away from zero),
  // skipped if |m| >= 2^31 - 1, error |m / 2^n - scale|; the least error
  // wins and, among equal errors, the first (smallest) n.
  //
  // 1.0: n = -32 .. -2 give m = 0 (error 1), n = -1 gives round(0.5) = 1,
  // i.e. 2.0 (error 1, not smaller); n = 0 is exact.
  getScaleAndShift(1.0, m, s);
  EXPECT_EQ(m, 1);
  EXPECT_EQ(s, 0);
  // 0.75: n = 0: 1 (error 0.25), n = 1: round(1.5) = 2 -> 1.0 (0.25), n = 2:
  // 3 / 4 exact.
  getScaleAndShift(0.75, m, s);
  EXPECT_EQ(m, 3);
  EXPECT_EQ(s, 2);
  // 2^-10 (a scale ratio that is a power of two): n = 9 gives round(0.5) =
  // 1 -> 2^-9 (error 2^-10); n = 10 is exact and no later n replaces it
  // (the multiplier stays 1, not 2^30).
  getScaleAndShift(std::ldexp(1.0, -10), m, s);
  EXPECT_EQ(m, 1);
  EXPECT_EQ(s, 10);
  // 1/3: never exact; the error is about |frac(2^n / 3)| / 2^n, smallest at
  // the largest n, 30: 2^30 / 3 = 357913941.33 -> 357913941.
  getScaleAndShift(1.0 / 3.0, m, s);
  EXPECT_EQ(m, 357913941);
  EXPECT_EQ(s, 30);
  // 2^31 (very large scale): m = 2^31 * 2^n must stay below 2^31 - 1, so
  // n <= -1; n = -32 gives round(0.5) = 1 -> 2^32 (error 2^31), n = -31 is
  // exact: multiplier 1 with a left shift of 31.
  getScaleAndShift(std::ldexp(1.0, 31), m, s);
  EXPECT_EQ(m, 1);
  EXPECT_EQ(s, -31);
  // 2^-33 (tiny): 2^-33 * 2^30 = 0.125 -> 0 for every n, all errors equal
  // the scale: the first n (-32) with multiplier 0. Such a channel
  // requantises every accumulator to its zero point.
  getScaleAndShift(std::ldexp(1.0, -33), m, s);
  EXPECT_EQ(m, 0);
  EXPECT_EQ(s, -32);
  // The add's 16-bit multipliers (|m| < 2^15 - 1 = 32767): s_a / s_out *
  // 2^8 with s_a = 0.1, s_out = 0.25 is 102.4. n = 8: 26214.4 -> 26214
  // (= 102.3984375); n = 9: 52428.8 is too large; n = 7: 13107.2 -> 13107,
  // 13107 / 2^7 = 102.3984375 as well: the same value, so the same error,
  // and the smaller shift wins (an even multiplier is never chosen when
  // half of it at one shift less is the same number).
  getScaleAndShift(0.1 / 0.25 * 256.0, m, s, 16);
  EXPECT_EQ(m, 13107);
  EXPECT_EQ(s, 7);
  // s_b = 0.2: 204.8; n = 7: 26214.4 -> 26214, n = 6: 13107.2 -> 13107,
  // both 204.796875: (13107, 6).
  getScaleAndShift(0.2 / 0.25 * 256.0, m, s, 16);
  EXPECT_EQ(m, 13107);
  EXPECT_EQ(s, 6);
  // 0.375 * 2^8 = 96 = 3 * 2^5 exactly: the first exact n is 5 (n = 4:
  // round(1.5) = 2 -> 128, error 32), so (3, -5) ... i.e. m = 3, n = -5.
  getScaleAndShift(96.0, m, s, 16);
  EXPECT_EQ(m, 3);
  EXPECT_EQ(s, -5);
}

} // namespace
