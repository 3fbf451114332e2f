//===- NumericsTest.cpp - saturation, rounding, requant, fp16/bf16 --------===//
//
// Expected values are derived by hand in the comments (integer rounding,
// requantisation) or come from independent references: the compiler's
// _Float16 conversions and std::ldexp for fp16, "bits << 16" and the usual
// bit trick for bf16.
//
//===----------------------------------------------------------------------===//

#include "tpu/isa/Numerics.h"

#include "tpu/isa/Error.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>

using namespace tpu::isa;

namespace {

constexpr RoundMode kAllModes[] = {
    RoundMode::HalfToEven,  RoundMode::HalfAwayFromZero,
    RoundMode::TowardsZero, RoundMode::Down,
    RoundMode::Up,          RoundMode::HalfUp,
    RoundMode::HalfDown};

//===----------------------------------------------------------------------===//
// Saturation
//===----------------------------------------------------------------------===//

TEST(NumericsSaturate, Int8) {
  EXPECT_EQ(saturateInt8(127), 127);
  EXPECT_EQ(saturateInt8(128), 127);
  EXPECT_EQ(saturateInt8(-128), -128);
  EXPECT_EQ(saturateInt8(-129), -128);
  EXPECT_EQ(saturateInt8(0), 0);
  EXPECT_EQ(saturateUInt8(255), 255);
  EXPECT_EQ(saturateUInt8(256), 255);
  EXPECT_EQ(saturateUInt8(-1), 0);
  EXPECT_EQ(saturate(128, Prec::Int8, true), 127);
  EXPECT_EQ(saturate(-129, Prec::Int8, true), -128);
  EXPECT_EQ(saturate(256, Prec::Int8, false), 255);
  EXPECT_EQ(saturate(-1, Prec::Int8, false), 0);
}

TEST(NumericsSaturate, Int4Int16Int32) {
  // int4: [-8, 7] signed, [0, 15] unsigned.
  EXPECT_EQ(saturate(7, Prec::Int4, true), 7);
  EXPECT_EQ(saturate(8, Prec::Int4, true), 7);
  EXPECT_EQ(saturate(-8, Prec::Int4, true), -8);
  EXPECT_EQ(saturate(-9, Prec::Int4, true), -8);
  EXPECT_EQ(saturate(16, Prec::Int4, false), 15);
  EXPECT_EQ(saturate(-3, Prec::Int4, false), 0);
  EXPECT_EQ(saturateInt16(32767), 32767);
  EXPECT_EQ(saturateInt16(32768), 32767);
  EXPECT_EQ(saturateInt16(-32768), -32768);
  EXPECT_EQ(saturateInt16(-32769), -32768);
  EXPECT_EQ(saturateUInt16(65535), 65535);
  EXPECT_EQ(saturateUInt16(65536), 65535);
  EXPECT_EQ(saturateUInt16(-1), 0);
  EXPECT_EQ(saturate(40000, Prec::Int16, true), 32767);
  EXPECT_EQ(saturate(70000, Prec::Int16, false), 65535);
  EXPECT_EQ(saturateInt32(2147483647LL), 2147483647);
  EXPECT_EQ(saturateInt32(2147483648LL), 2147483647);
  EXPECT_EQ(saturateInt32(-2147483648LL), INT32_MIN);
  EXPECT_EQ(saturateInt32(-2147483649LL), INT32_MIN);
  EXPECT_EQ(saturateUInt32(4294967295LL), 4294967295u);
  EXPECT_EQ(saturateUInt32(4294967296LL), 4294967295u);
  EXPECT_EQ(saturateUInt32(-1), 0u);
  EXPECT_EQ(saturate(INT64_MAX, Prec::Int32, true), INT32_MAX);
  EXPECT_EQ(saturate(INT64_MIN, Prec::Int32, false), 0);
  EXPECT_EQ(precMin(Prec::Int16, true), -32768);
  EXPECT_EQ(precMax(Prec::Int32, false), 4294967295LL);
}

TEST(NumericsSaturate, FloatPrecisionThrows) {
  EXPECT_THROW(saturate(1, Prec::Fp16, true), tpu::Error);
  EXPECT_THROW(roundToPrec(1.0f, Prec::Int8), tpu::Error);
}

//===----------------------------------------------------------------------===//
// Rounding modes
//===----------------------------------------------------------------------===//

/// x / 2^shift in every mode, in the order of kAllModes:
/// HalfToEven, HalfAwayFromZero, TowardsZero, Down, Up, HalfUp, HalfDown.
struct RoundCase {
  int64_t x;
  int shift;
  int64_t expected[7];
};

// Derivations (q = floor, r = x - q * 2^s, half = 2^(s-1), isa/docs/bm1684x.md 8.1):
//  5 >> 1 =  2.5 : q= 2 r=1=half, q even  -> HTE 2, HAFZ 3, TZ 2, dn 2, up 3,
//                  HU 3, HD 2
// -5 >> 1 = -2.5 : q=-3 r=1=half, q odd   -> HTE -2, HAFZ -3, TZ -2, dn -3,
//                  up -2, HU -2, HD -3
//  7 >> 1 =  3.5 : q= 3 r=1=half, q odd   -> HTE 4, HAFZ 4, TZ 3, dn 3, up 4,
//                  HU 4, HD 3
// -7 >> 1 = -3.5 : q=-4 r=1=half, q even  -> HTE -4, HAFZ -4, TZ -3, dn -4,
//                  up -3, HU -3, HD -4
// 11 >> 2 =  2.75: q= 2 r=3>half          -> 3 except TZ, dn: 2
// -11>> 2 = -2.75: q=-3 r=1<half          -> -3 except TZ, up: -2
//  9 >> 2 =  2.25: q= 2 r=1<half          -> 2 except up: 3
// -9 >> 2 = -2.25: q=-3 r=3>half          -> -2 except dn: -3
// 12 >> 2 =  3, -12 >> 2 = -3: exact, every mode.
//  1 >> 1 =  0.5 : q= 0 r=1=half, q even  -> HTE 0, HAFZ 1, TZ 0, dn 0, up 1,
//                  HU 1, HD 0
// -1 >> 1 = -0.5 : q=-1 r=1=half, q odd   -> HTE 0, HAFZ -1, TZ 0, dn -1,
//                  up 0, HU 0, HD -1
constexpr RoundCase kRoundCases[] = {
    {5, 1, {2, 3, 2, 2, 3, 3, 2}},  {-5, 1, {-2, -3, -2, -3, -2, -2, -3}},
    {7, 1, {4, 4, 3, 3, 4, 4, 3}},  {-7, 1, {-4, -4, -3, -4, -3, -3, -4}},
    {11, 2, {3, 3, 2, 2, 3, 3, 3}}, {-11, 2, {-3, -3, -2, -3, -2, -3, -3}},
    {9, 2, {2, 2, 2, 2, 3, 2, 2}},  {-9, 2, {-2, -2, -2, -3, -2, -2, -2}},
    {12, 2, {3, 3, 3, 3, 3, 3, 3}}, {-12, 2, {-3, -3, -3, -3, -3, -3, -3}},
    {1, 1, {0, 1, 0, 0, 1, 1, 0}},  {-1, 1, {0, -1, 0, -1, 0, 0, -1}},
};

TEST(NumericsRounding, RightShiftRoundEveryMode) {
  for (const RoundCase &c : kRoundCases)
    for (size_t m = 0; m < std::size(kAllModes); ++m)
      EXPECT_EQ(rightShiftRound(c.x, c.shift, kAllModes[m]), c.expected[m])
          << c.x << " >> " << c.shift << " mode "
          << roundModeName(kAllModes[m]);
}

TEST(NumericsRounding, RoundToIntAndRoundFloatEveryMode) {
  // The same exact quotients as doubles and floats must round identically.
  for (const RoundCase &c : kRoundCases) {
    double v = std::ldexp(double(c.x), -c.shift);
    for (size_t m = 0; m < std::size(kAllModes); ++m) {
      EXPECT_EQ(roundToInt(v, kAllModes[m]), c.expected[m])
          << v << " mode " << roundModeName(kAllModes[m]);
      EXPECT_EQ(roundFloat(float(v), kAllModes[m]), float(c.expected[m]))
          << v << " mode " << roundModeName(kAllModes[m]);
    }
  }
}

TEST(NumericsRounding, RightShiftRoundLargeShifts) {
  // INT64_MIN / 2^64 = -0.5 exactly: q = -1 (odd), r = 2^63 = half.
  EXPECT_EQ(rightShiftRound(INT64_MIN, 64, RoundMode::HalfToEven), 0);
  EXPECT_EQ(rightShiftRound(INT64_MIN, 64, RoundMode::HalfAwayFromZero), -1);
  EXPECT_EQ(rightShiftRound(INT64_MIN, 64, RoundMode::HalfUp), 0);
  EXPECT_EQ(rightShiftRound(INT64_MIN, 64, RoundMode::HalfDown), -1);
  // INT64_MAX / 2^64 is just below 0.5.
  EXPECT_EQ(rightShiftRound(INT64_MAX, 64, RoundMode::HalfToEven), 0);
  EXPECT_EQ(rightShiftRound(INT64_MAX, 64, RoundMode::Up), 1);
  // INT64_MAX / 2^63 = 1 - 2^-63: above half.
  EXPECT_EQ(rightShiftRound(INT64_MAX, 63, RoundMode::HalfToEven), 1);
  EXPECT_EQ(rightShiftRound(INT64_MAX, 63, RoundMode::Down), 0);
  // Tiny magnitudes: -1 / 2^100 and 1 / 2^200.
  EXPECT_EQ(rightShiftRound(-1, 100, RoundMode::Down), -1);
  EXPECT_EQ(rightShiftRound(-1, 100, RoundMode::HalfToEven), 0);
  EXPECT_EQ(rightShiftRound(-1, 100, RoundMode::TowardsZero), 0);
  EXPECT_EQ(rightShiftRound(1, 200, RoundMode::Up), 1);
  EXPECT_EQ(rightShiftRound(1, 200, RoundMode::HalfAwayFromZero), 0);
}

TEST(NumericsRounding, LeftShiftSaturates) {
  EXPECT_EQ(rightShiftRound(3, -2, RoundMode::HalfToEven), 12);
  EXPECT_EQ(rightShiftRound(-3, -2, RoundMode::Down), -12);
  EXPECT_EQ(rightShiftRound(5, 0, RoundMode::Up), 5);
  // 2^62 << 1 = 2^63 does not fit: saturate.
  EXPECT_EQ(rightShiftRound(int64_t(1) << 62, -1, RoundMode::HalfToEven),
            INT64_MAX);
  // -2^62 << 1 = -2^63 fits exactly; one less does not.
  EXPECT_EQ(rightShiftRound(-(int64_t(1) << 62), -1, RoundMode::HalfToEven),
            INT64_MIN);
  EXPECT_EQ(rightShiftRound(-(int64_t(1) << 62) - 1, -1, RoundMode::HalfToEven),
            INT64_MIN);
  EXPECT_EQ(rightShiftRound(1, -63, RoundMode::HalfToEven), INT64_MAX);
  EXPECT_EQ(rightShiftRound(-1, -63, RoundMode::HalfToEven), INT64_MIN);
  EXPECT_EQ(rightShiftRound(0, -1000, RoundMode::HalfToEven), 0);
  EXPECT_EQ(rightShiftRound(7, INT32_MIN, RoundMode::HalfToEven), INT64_MAX);
}

TEST(NumericsRounding, RoundToIntSpecials) {
  EXPECT_EQ(roundToInt(std::nan(""), RoundMode::HalfToEven), 0);
  EXPECT_EQ(roundToInt(1e300, RoundMode::HalfToEven), INT64_MAX);
  EXPECT_EQ(roundToInt(-1e300, RoundMode::HalfToEven), INT64_MIN);
  EXPECT_EQ(roundToInt(-0.0, RoundMode::Up), 0);
  // 2^53 + 2 is an exact double and already integral.
  EXPECT_EQ(roundToInt(9007199254740994.0, RoundMode::Up), 9007199254740994LL);
}

TEST(NumericsRounding, RoundFloatSpecials) {
  EXPECT_TRUE(std::isnan(roundFloat(std::nanf(""), RoundMode::Up)));
  EXPECT_EQ(roundFloat(INFINITY, RoundMode::Down), INFINITY);
  EXPECT_EQ(roundFloat(1e30f, RoundMode::Down), 1e30f);
  // -0.3 toward zero is -0.0: the sign of zero is kept.
  float z = roundFloat(-0.3f, RoundMode::TowardsZero);
  EXPECT_EQ(z, 0.0f);
  EXPECT_TRUE(std::signbit(z));
  // 8388607.5 = 2^23 - 0.5 is the largest float with a .5 fraction.
  EXPECT_EQ(roundFloat(8388607.5f, RoundMode::HalfToEven), 8388608.0f);
  EXPECT_EQ(roundFloat(8388606.5f, RoundMode::HalfToEven), 8388606.0f);
}

//===----------------------------------------------------------------------===//
// Requantisation
//===----------------------------------------------------------------------===//

TEST(NumericsRequant, ApplyMultiplierAndRShift) {
  // 7 * 3 / 4 = 5.25 -> 5; -7 * 3 / 4 = -5.25 -> -5 (HTE), -6 (Down).
  EXPECT_EQ(applyMultiplierAndRShift(7, 3, 2, RoundMode::HalfToEven), 5);
  EXPECT_EQ(applyMultiplierAndRShift(-7, 3, 2, RoundMode::HalfToEven), -5);
  EXPECT_EQ(applyMultiplierAndRShift(-7, 3, 2, RoundMode::Down), -6);
  // 2^40 * 2^40 = 2^80 overflows int64; / 2^40 = 2^40 exactly.
  int64_t p40 = int64_t(1) << 40;
  EXPECT_EQ(applyMultiplierAndRShift(p40, p40, 40, RoundMode::HalfToEven), p40);
  // (-2^63)^2 / 2^63 = 2^63: saturates to INT64_MAX.
  EXPECT_EQ(
      applyMultiplierAndRShift(INT64_MIN, INT64_MIN, 63, RoundMode::HalfToEven),
      INT64_MAX);
  // Negative rshift = left shift: 5 * 3 << 2 = 60.
  EXPECT_EQ(applyMultiplierAndRShift(5, 3, -2, RoundMode::HalfToEven), 60);
}

TEST(NumericsRequant, Requantize) {
  // 7 * 3 / 4 = 5.25 -> 5, + 10 = 15. -7: -5 + 10 = 5.
  EXPECT_EQ(requantize(7, 3, 2, 10, RoundMode::HalfToEven, Prec::Int8, true),
            15);
  EXPECT_EQ(requantize(-7, 3, 2, 10, RoundMode::HalfToEven, Prec::Int8, true),
            5);
  // 10 * 1 / 4 = 2.5: HTE 2, HAFZ 3; -10: HTE -2, HAFZ -3, then zp -1.
  EXPECT_EQ(requantize(10, 1, 2, 0, RoundMode::HalfToEven, Prec::Int8, true),
            2);
  EXPECT_EQ(
      requantize(10, 1, 2, 0, RoundMode::HalfAwayFromZero, Prec::Int8, true),
      3);
  EXPECT_EQ(
      requantize(-10, 1, 2, -1, RoundMode::HalfAwayFromZero, Prec::Int8, true),
      -4);
  // Saturation after the zero point: 120 + 10 = 130 -> 127; uint8 keeps 130.
  EXPECT_EQ(requantize(120, 1, 0, 10, RoundMode::HalfToEven, Prec::Int8, true),
            127);
  EXPECT_EQ(requantize(120, 1, 0, 10, RoundMode::HalfToEven, Prec::Int8, false),
            130);
  EXPECT_EQ(requantize(-5, 1, 0, 0, RoundMode::HalfToEven, Prec::Int8, false),
            0);
  EXPECT_EQ(requantize(300, 1, 0, 0, RoundMode::HalfToEven, Prec::Int8, false),
            255);
  EXPECT_EQ(requantize(9, 1, 0, 0, RoundMode::HalfToEven, Prec::Int4, true), 7);
  EXPECT_EQ(requantize(-9, 1, 0, 0, RoundMode::HalfToEven, Prec::Int4, true),
            -8);
  EXPECT_EQ(
      requantize(40000, 1, 0, 0, RoundMode::HalfToEven, Prec::Int16, true),
      32767);
  // A conv-like case: acc 1000 with scale 0.3 = 322122547 / 2^30 (see
  // GetScaleAndShift below): 1000 * 322122547 = 322122547000, / 2^30 =
  // 299.9999998... -> 300, + zp -128 = 172 -> saturates to 127.
  EXPECT_EQ(requantize(1000, 322122547, 30, -128, RoundMode::HalfToEven,
                       Prec::Int8, true),
            127);
  EXPECT_EQ(requantize(1000, 322122547, 30, -128, RoundMode::HalfToEven,
                       Prec::Int16, true),
            172);
  // Down floors 299.99... to 299.
  EXPECT_EQ(
      requantize(1000, 322122547, 30, 0, RoundMode::Down, Prec::Int16, true),
      299);
}

TEST(NumericsRequant, QuantizeMultiplier) {
  int32_t m;
  int s;
  // 0.3 = 0.6 * 2^-1; 0.6 * 2^31 = 1288490188.8 -> 1288490189.
  quantizeMultiplier(0.3, m, s);
  EXPECT_EQ(m, 1288490189);
  EXPECT_EQ(s, -1);
  // 1.0 = 0.5 * 2^1 -> 2^30.
  quantizeMultiplier(1.0, m, s);
  EXPECT_EQ(m, 1 << 30);
  EXPECT_EQ(s, 1);
  // 0.75 = 0.75 * 2^0 -> 0.75 * 2^31 = 1610612736.
  quantizeMultiplier(0.75, m, s);
  EXPECT_EQ(m, 1610612736);
  EXPECT_EQ(s, 0);
  // 1 - 2^-40: q * 2^31 = 2^31 - 2^-9 rounds to 2^31 -> halved, shift + 1.
  quantizeMultiplier(1.0 - std::ldexp(1.0, -40), m, s);
  EXPECT_EQ(m, 1 << 30);
  EXPECT_EQ(s, 1);
  // 2^-40 = 0.5 * 2^-39: shift < -31 -> zero.
  quantizeMultiplier(std::ldexp(1.0, -40), m, s);
  EXPECT_EQ(m, 0);
  EXPECT_EQ(s, 0);
  // 2^40 = 0.5 * 2^41: shift > 30 -> clamped.
  quantizeMultiplier(std::ldexp(1.0, 40), m, s);
  EXPECT_EQ(m, INT32_MAX);
  EXPECT_EQ(s, 30);
  // -0.3 mirrors 0.3 (round is symmetric).
  quantizeMultiplier(-0.3, m, s);
  EXPECT_EQ(m, -1288490189);
  EXPECT_EQ(s, -1);
  quantizeMultiplier(0.0, m, s);
  EXPECT_EQ(m, 0);
  EXPECT_EQ(s, 0);
}

TEST(NumericsRequant, MultiplyByQuantizedMultiplier) {
  // m = 1288490189 ~ 0.6 * 2^31, shift -1 (0.3). 101 * m / 2^31 =
  // 60.60000001 -> 61 (HalfUp); then 61 / 2 = 30.5: HTE 30, HAFZ 31, Down 30,
  // Up 31.
  EXPECT_EQ(
      multiplyByQuantizedMultiplier(101, 1288490189, -1, RoundMode::HalfToEven),
      30);
  EXPECT_EQ(multiplyByQuantizedMultiplier(101, 1288490189, -1,
                                          RoundMode::HalfAwayFromZero),
            31);
  EXPECT_EQ(multiplyByQuantizedMultiplier(101, 1288490189, -1, RoundMode::Down),
            30);
  EXPECT_EQ(multiplyByQuantizedMultiplier(101, 1288490189, -1, RoundMode::Up),
            31);
  // -101: -60.6 -> -61 (floor(-60.6 + 0.5) = -61); -61 / 2 = -30.5: HTE -30.
  EXPECT_EQ(multiplyByQuantizedMultiplier(-101, 1288490189, -1,
                                          RoundMode::HalfToEven),
            -30);
  // shift 2: 3 << 2 = 12, * 2^30 / 2^31 = 6.
  EXPECT_EQ(multiplyByQuantizedMultiplier(3, 1 << 30, 2, RoundMode::HalfToEven),
            6);
  // (2^31 - 1) << 1 times ~1.0 does not fit int32: saturates.
  EXPECT_EQ(multiplyByQuantizedMultiplier(INT32_MAX, INT32_MAX, 1,
                                          RoundMode::HalfToEven),
            INT32_MAX);
  EXPECT_EQ(multiplyByQuantizedMultiplier(INT32_MIN, INT32_MAX, 1,
                                          RoundMode::HalfToEven),
            INT32_MIN);
}

TEST(NumericsRequant, GetScaleAndShift) {
  int64_t m;
  int s;
  // 0.375 = 3 / 2^3 exactly; n = 3 is the first shift with zero error
  // (n = 2: 1.5 -> 2, error 0.125), and later exact ones do not replace it.
  getScaleAndShift(0.375, m, s);
  EXPECT_EQ(m, 3);
  EXPECT_EQ(s, 3);
  // 0.3: the largest allowed n is 30 (0.3 * 2^30 = 322122547.2 < 2^31 - 1),
  // error 0.2 / 2^30; n = 29 gives 161061273.6 (0.4 / 2^29), n = 28
  // 80530636.8 (0.2 / 2^28): both worse.
  getScaleAndShift(0.3, m, s);
  EXPECT_EQ(m, 322122547);
  EXPECT_EQ(s, 30);
  getScaleAndShift(-0.3, m, s);
  EXPECT_EQ(m, -322122547);
  EXPECT_EQ(s, 30);
  // 2.6: 2.6 * 2^30 > 2^31 - 1, so n <= 29: 2.6 * 2^29 = 1395864371.2
  // (error 0.2 / 2^29); n = 28: 697932185.6 (0.4 / 2^28) is worse.
  getScaleAndShift(2.6, m, s);
  EXPECT_EQ(m, 1395864371);
  EXPECT_EQ(s, 29);
  // 8-bit multiplier (|m| < 127): 0.3 * 2^8 = 76.8 -> 77 (error 0.2 / 256);
  // 0.3 * 2^9 = 153.6 is too large; 2^7: 38.4 (0.4 / 128) is worse.
  getScaleAndShift(0.3, m, s, 8);
  EXPECT_EQ(m, 77);
  EXPECT_EQ(s, 8);
}

//===----------------------------------------------------------------------===//
// fp16
//===----------------------------------------------------------------------===//

/// fp16 value by the IEEE 754 formula, independent of the bit code under
/// test: subnormal m * 2^-24, normal (1024 + m) * 2^(e - 25).
double fp16Formula(uint16_t h) {
  int e = (h >> 10) & 0x1F;
  int m = h & 0x3FF;
  double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 0x1F)
    return m ? std::nan("") : sign * INFINITY;
  if (e == 0)
    return sign * std::ldexp(double(m), -24);
  return sign * std::ldexp(double(1024 + m), e - 25);
}

bool isFp16Nan(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF); }
bool isBf16Nan(uint16_t b) { return (b & 0x7F80) == 0x7F80 && (b & 0x7F); }

#ifdef __FLT16_MANT_DIG__
float fp16ByCompiler(uint16_t h) {
  _Float16 v;
  std::memcpy(&v, &h, sizeof v);
  return float(v);
}
uint16_t fp16FromCompiler(float f) {
  _Float16 v = _Float16(f);
  uint16_t h;
  std::memcpy(&h, &v, sizeof h);
  return h;
}
#endif

TEST(NumericsFp16, DecodeAllPatterns) {
  for (uint32_t i = 0; i <= 0xFFFF; ++i) {
    auto h = uint16_t(i);
    float got = fp16ToFp32(h);
    if (isFp16Nan(h)) {
      // NaN: sign and payload kept exactly (lossless widening).
      ASSERT_TRUE(std::isnan(got)) << std::hex << i;
      EXPECT_EQ(floatToBits(got), (uint32_t(h & 0x8000) << 16) | 0x7F800000u |
                                      (uint32_t(h & 0x3FF) << 13))
          << std::hex << i;
      continue;
    }
    double ref = fp16Formula(h);
    ASSERT_EQ(double(got), ref) << std::hex << i;
    ASSERT_EQ(std::signbit(got), bool(h & 0x8000)) << std::hex << i;
#ifdef __FLT16_MANT_DIG__
    ASSERT_EQ(floatToBits(got), floatToBits(fp16ByCompiler(h)))
        << std::hex << i;
#endif
  }
}

TEST(NumericsFp16, EncodeRoundTripsEveryPattern) {
  for (uint32_t i = 0; i <= 0xFFFF; ++i) {
    auto h = uint16_t(i);
    float f = fp16ToFp32(h);
    if (isFp16Nan(h)) {
      // NaN comes back quiet (bit 9 set) with sign and payload kept.
      EXPECT_EQ(fp32ToFp16(f), h | 0x0200) << std::hex << i;
      continue;
    }
    for (RoundMode mode : kAllModes)
      ASSERT_EQ(fp32ToFp16(f, mode), h)
          << std::hex << i << " " << roundModeName(mode);
  }
}

/// For every pair of adjacent finite patterns (a, a+1) of one sign, the
/// exact midpoint rounds to the even pattern under HalfToEven, and the
/// floats just below / above it round to the nearer pattern; the directed
/// and other tie modes pick the pattern their definition names.
template <typename Encode, typename Decode>
void checkMidpoints(uint16_t maxFinite, Encode encode, Decode decode) {
  for (uint16_t signBit : {uint16_t(0), uint16_t(0x8000)}) {
    bool negative = signBit != 0;
    for (uint32_t a = 0; a < maxFinite; ++a) {
      auto lo = uint16_t(a | signBit);       // smaller magnitude
      auto hi = uint16_t((a + 1) | signBit); // larger magnitude
      double dlo = decode(lo), dhi = decode(hi);
      double mid = (dlo + dhi) / 2;
      auto fmid = float(mid);
      ASSERT_EQ(double(fmid), mid) << "midpoint not exact: " << std::hex << a;
      uint16_t even = (lo & 1) ? hi : lo;
      ASSERT_EQ(encode(fmid, RoundMode::HalfToEven), even) << std::hex << a;
      ASSERT_EQ(encode(fmid, RoundMode::HalfAwayFromZero), hi) << std::hex << a;
      ASSERT_EQ(encode(fmid, RoundMode::TowardsZero), lo) << std::hex << a;
      ASSERT_EQ(encode(fmid, RoundMode::Up), negative ? lo : hi);
      ASSERT_EQ(encode(fmid, RoundMode::Down), negative ? hi : lo);
      ASSERT_EQ(encode(fmid, RoundMode::HalfUp), negative ? lo : hi);
      ASSERT_EQ(encode(fmid, RoundMode::HalfDown), negative ? hi : lo);
      float towardLo = std::nextafter(fmid, float(dlo));
      float towardHi = std::nextafter(fmid, float(dhi));
      for (RoundMode mode : {RoundMode::HalfToEven, RoundMode::HalfAwayFromZero,
                             RoundMode::HalfUp, RoundMode::HalfDown}) {
        ASSERT_EQ(encode(towardLo, mode), lo) << std::hex << a;
        ASSERT_EQ(encode(towardHi, mode), hi) << std::hex << a;
      }
      // Strictly inside (lo, hi): directed modes.
      ASSERT_EQ(encode(towardLo, RoundMode::TowardsZero), lo);
      ASSERT_EQ(encode(towardHi, RoundMode::TowardsZero), lo);
      ASSERT_EQ(encode(towardLo, RoundMode::Up), negative ? lo : hi);
      ASSERT_EQ(encode(towardLo, RoundMode::Down), negative ? hi : lo);
    }
  }
}

TEST(NumericsFp16, MidpointsRoundCorrectly) {
  checkMidpoints(
      0x7BFF, [](float f, RoundMode m) { return fp32ToFp16(f, m); },
      [](uint16_t h) { return fp16Formula(h); });
}

#ifdef __FLT16_MANT_DIG__
TEST(NumericsFp16, EncodeMatchesCompilerOnSampledFloats) {
  // The compiler's float -> _Float16 conversion is IEEE round-to-nearest-
  // even; compare on a stride through all 2^32 float patterns.
  constexpr uint64_t kStride = 997; // prime, so every bit position varies
  for (uint64_t b = 0; b <= 0xFFFFFFFFu; b += kStride) {
    float f = bitsToFloat(uint32_t(b));
    if (std::isnan(f))
      continue;
    ASSERT_EQ(fp32ToFp16(f), fp16FromCompiler(f)) << std::hex << b;
  }
}

TEST(NumericsFp16, EncodeMatchesCompilerAtEveryRoundingCase) {
  // fp32ToFp16's fast path (normal results) and its general path meet at
  // binade, subnormal and overflow edges; the result depends on the sign,
  // the exponent, the 10 kept mantissa bits and whether the 13 dropped ones
  // are zero, below, at or above half an ulp. Every combination, against
  // the compiler's IEEE conversion.
  const uint32_t kDropped[] = {0, 1, 0xFFF, 0x1000, 0x1001, 0x1FFF};
  for (uint32_t sign = 0; sign < 2; ++sign)
    for (uint32_t exp = 0; exp < 255; ++exp)
      for (uint32_t kept = 0; kept < 1024; ++kept)
        for (uint32_t low : kDropped) {
          uint32_t b = sign << 31 | exp << 23 | kept << 13 | low;
          float f = bitsToFloat(b);
          ASSERT_EQ(fp32ToFp16(f), fp16FromCompiler(f)) << std::hex << b;
        }
}
#endif

TEST(NumericsFp16, Boundaries) {
  // Largest finite 65504 = 0x7BFF; half an ulp (16) above is 65520, a tie
  // between 0x7BFF (odd) and 2^16 (pattern 0x7C00 = inf): RNE gives inf.
  EXPECT_EQ(fp32ToFp16(65504.0f), 0x7BFF);
  EXPECT_EQ(fp32ToFp16(65520.0f), 0x7C00);
  EXPECT_EQ(fp32ToFp16(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
  EXPECT_EQ(fp32ToFp16(-65520.0f), 0xFC00);
  EXPECT_EQ(fp32ToFp16(65520.0f, RoundMode::HalfAwayFromZero), 0x7C00);
  EXPECT_EQ(fp32ToFp16(65520.0f, RoundMode::TowardsZero), 0x7BFF);
  // Overflow in directed modes: toward zero -> max finite.
  EXPECT_EQ(fp32ToFp16(1e6f, RoundMode::TowardsZero), 0x7BFF);
  EXPECT_EQ(fp32ToFp16(-1e6f, RoundMode::TowardsZero), 0xFBFF);
  EXPECT_EQ(fp32ToFp16(1e6f, RoundMode::Up), 0x7C00);
  EXPECT_EQ(fp32ToFp16(-1e6f, RoundMode::Up), 0xFBFF);
  EXPECT_EQ(fp32ToFp16(1e6f, RoundMode::Down), 0x7BFF);
  EXPECT_EQ(fp32ToFp16(-1e6f, RoundMode::Down), 0xFC00);
  EXPECT_EQ(fp32ToFp16(1e6f), 0x7C00);
  EXPECT_EQ(fp32ToFp16(FLT_MAX), 0x7C00);
  // 65505 is inside (65504, 65536): RNE -> 65504, Up -> inf.
  EXPECT_EQ(fp32ToFp16(65505.0f, RoundMode::Up), 0x7C00);
  // Smallest subnormal 2^-24 = 0x0001; 2^-25 is a tie between 0 and 0x0001
  // -> even 0; anything above it -> 0x0001.
  EXPECT_EQ(fp32ToFp16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(fp32ToFp16(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(fp32ToFp16(-std::ldexp(1.0f, -25)), 0x8000);
  EXPECT_EQ(fp32ToFp16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(fp32ToFp16(std::ldexp(1.0f, -25), RoundMode::HalfAwayFromZero),
            0x0001);
  EXPECT_EQ(fp32ToFp16(std::ldexp(1.0f, -25), RoundMode::Up), 0x0001);
  EXPECT_EQ(fp32ToFp16(std::ldexp(1.0f, -25), RoundMode::TowardsZero), 0x0000);
  // 1.5 * 2^-24: tie between 0x0001 and 0x0002 -> 0x0002.
  EXPECT_EQ(fp32ToFp16(std::ldexp(3.0f, -25)), 0x0002);
  // Smallest float subnormal: 0 to nearest, 0x0001 rounding up.
  float tiny = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(fp32ToFp16(tiny), 0x0000);
  EXPECT_EQ(fp32ToFp16(tiny, RoundMode::Up), 0x0001);
  EXPECT_EQ(fp32ToFp16(-tiny, RoundMode::Down), 0x8001);
  EXPECT_EQ(fp32ToFp16(-tiny, RoundMode::Up), 0x8000);
  // Subnormal/normal boundary: 2^-14 = 0x0400, 1023 * 2^-24 = 0x03FF.
  EXPECT_EQ(fp32ToFp16(std::ldexp(1.0f, -14)), 0x0400);
  EXPECT_EQ(fp32ToFp16(std::ldexp(1023.0f, -24)), 0x03FF);
  // 1 + 2^-11 is a tie between 1.0 (0x3C00, even) and 1 + 2^-10 (0x3C01).
  EXPECT_EQ(fp32ToFp16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(fp32ToFp16(1.0f + std::ldexp(3.0f, -11)), 0x3C02);
  EXPECT_EQ(fp32ToFp16(-0.0f), 0x8000);
  EXPECT_EQ(fp32ToFp16(1.0f), 0x3C00);
  EXPECT_EQ(fp32ToFp16(-2.0f), 0xC000);
}

TEST(NumericsFp16, InfinityAndNan) {
  EXPECT_EQ(fp32ToFp16(INFINITY), 0x7C00);
  EXPECT_EQ(fp32ToFp16(-INFINITY), 0xFC00);
  EXPECT_EQ(fp32ToFp16(INFINITY, RoundMode::TowardsZero), 0x7C00);
  // Quiet NaN 0x7FC00000 -> 0x7E00.
  EXPECT_EQ(fp32ToFp16(bitsToFloat(0x7FC00000u)), 0x7E00);
  // Signalling NaN with only a low payload bit: becomes quiet, not inf.
  EXPECT_EQ(fp32ToFp16(bitsToFloat(0x7F800001u)), 0x7E00);
  // Negative sNaN with payload bit 21: sign | 0x7C00 | quiet 0x200 |
  // (0x200000 >> 13 = 0x100) = 0xFF00.
  EXPECT_EQ(fp32ToFp16(bitsToFloat(0xFFA00000u)), 0xFF00);
}

//===----------------------------------------------------------------------===//
// bf16
//===----------------------------------------------------------------------===//

TEST(NumericsBf16, DecodeAllPatterns) {
  for (uint32_t i = 0; i <= 0xFFFF; ++i) {
    uint32_t wide = i << 16;
    float ref;
    std::memcpy(&ref, &wide, sizeof ref);
    ASSERT_EQ(floatToBits(bf16ToFp32(uint16_t(i))), floatToBits(ref))
        << std::hex << i;
  }
}

TEST(NumericsBf16, EncodeRoundTripsEveryPattern) {
  for (uint32_t i = 0; i <= 0xFFFF; ++i) {
    auto b = uint16_t(i);
    float f = bf16ToFp32(b);
    if (isBf16Nan(b)) {
      EXPECT_EQ(fp32ToBf16(f), b | 0x0040) << std::hex << i;
      continue;
    }
    for (RoundMode mode : kAllModes)
      ASSERT_EQ(fp32ToBf16(f, mode), b)
          << std::hex << i << " " << roundModeName(mode);
  }
}

TEST(NumericsBf16, MidpointsRoundCorrectly) {
  checkMidpoints(
      0x7F7F, [](float f, RoundMode m) { return fp32ToBf16(f, m); },
      [](uint16_t b) { return double(bf16ToFp32(b)); });
}

TEST(NumericsBf16, EncodeMatchesBitTrickOnSampledFloats) {
  // Reference RNE for non-NaN floats: add 0x7FFF plus the lowest kept bit,
  // truncate (carries into the exponent and to infinity are correct).
  constexpr uint64_t kStride = 997;
  for (uint64_t b = 0; b <= 0xFFFFFFFFu; b += kStride) {
    auto bits = uint32_t(b);
    float f = bitsToFloat(bits);
    if (std::isnan(f))
      continue;
    auto ref = uint16_t((bits + 0x7FFFu + ((bits >> 16) & 1)) >> 16);
    ASSERT_EQ(fp32ToBf16(f), ref) << std::hex << b;
    // Truncation is TowardsZero.
    ASSERT_EQ(fp32ToBf16(f, RoundMode::TowardsZero), uint16_t(bits >> 16))
        << std::hex << b;
  }
}

TEST(NumericsBf16, Boundaries) {
  // Max finite 0x7F7F = (2 - 2^-7) * 2^127; (2 - 2^-8) * 2^127 is the tie
  // with 2^128 (odd 0x7F7F) -> inf under RNE.
  float tie = std::ldexp(2.0f - std::ldexp(1.0f, -8), 127);
  EXPECT_EQ(fp32ToBf16(tie), 0x7F80);
  EXPECT_EQ(fp32ToBf16(std::nextafter(tie, 0.0f)), 0x7F7F);
  EXPECT_EQ(fp32ToBf16(tie, RoundMode::TowardsZero), 0x7F7F);
  EXPECT_EQ(fp32ToBf16(FLT_MAX), 0x7F80);
  EXPECT_EQ(fp32ToBf16(FLT_MAX, RoundMode::TowardsZero), 0x7F7F);
  EXPECT_EQ(fp32ToBf16(-FLT_MAX, RoundMode::Up), 0xFF7F);
  // Subnormals are kept: 2^-133 = 0x0001, 2^-130 = 0x0008; 2^-134 ties to
  // 0, 3 * 2^-134 ties to 0x0002.
  EXPECT_EQ(fp32ToBf16(std::ldexp(1.0f, -133)), 0x0001);
  EXPECT_EQ(fp32ToBf16(std::ldexp(1.0f, -130)), 0x0008);
  EXPECT_EQ(fp32ToBf16(std::ldexp(1.0f, -134)), 0x0000);
  EXPECT_EQ(fp32ToBf16(std::ldexp(3.0f, -134)), 0x0002);
  float tiny = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(fp32ToBf16(tiny), 0x0000);
  EXPECT_EQ(fp32ToBf16(tiny, RoundMode::Up), 0x0001);
  // NaN stays a quiet NaN with sign and top payload bits.
  EXPECT_EQ(fp32ToBf16(bitsToFloat(0x7FC00000u)), 0x7FC0);
  EXPECT_EQ(fp32ToBf16(bitsToFloat(0x7F800001u)), 0x7FC0);
  EXPECT_EQ(fp32ToBf16(bitsToFloat(0xFF810000u)), 0xFFC1);
  EXPECT_EQ(fp32ToBf16(INFINITY), 0x7F80);
  EXPECT_EQ(fp32ToBf16(-INFINITY, RoundMode::TowardsZero), 0xFF80);
}

//===----------------------------------------------------------------------===//
// Float helpers
//===----------------------------------------------------------------------===//

TEST(NumericsFloat, RoundToPrec) {
  // 1/3 = 1.0101...b * 2^-2. fp16 keeps 10 bits 0101010101, the rest
  // (0101...) is below half -> 1365/1024 / 4 = 0.333251953125.
  EXPECT_EQ(roundToPrec(1.0f / 3, Prec::Fp16), 0.333251953125f);
  // bf16 keeps 7 bits 0101010, the rest (1010...1011) is above half ->
  // 0101011 = 43: (128 + 43) / 128 / 4 = 0.333984375.
  EXPECT_EQ(roundToPrec(1.0f / 3, Prec::Bf16), 0.333984375f);
  EXPECT_EQ(roundToPrec(1.0f / 3, Prec::Fp32), 1.0f / 3);
  EXPECT_EQ(roundToPrec(70000.0f, Prec::Fp16), INFINITY);
}

TEST(NumericsFloat, FloatToInt) {
  EXPECT_EQ(floatToInt(2.5f, Prec::Int8, true, RoundMode::HalfToEven), 2);
  EXPECT_EQ(floatToInt(-2.5f, Prec::Int8, true, RoundMode::HalfAwayFromZero),
            -3);
  EXPECT_EQ(floatToInt(300.7f, Prec::Int8, true, RoundMode::HalfToEven), 127);
  EXPECT_EQ(floatToInt(-300.0f, Prec::Int8, false, RoundMode::HalfToEven), 0);
  // 127.5 -> 128 (HTE, 128 even) -> saturates to 127; -128.5 -> -128.
  EXPECT_EQ(floatToInt(127.5f, Prec::Int8, true, RoundMode::HalfToEven), 127);
  EXPECT_EQ(floatToInt(-128.5f, Prec::Int8, true, RoundMode::HalfToEven), -128);
  EXPECT_EQ(floatToInt(15.5f, Prec::Int4, false, RoundMode::HalfAwayFromZero),
            15);
  EXPECT_EQ(floatToInt(-2.7f, Prec::Int16, true, RoundMode::TowardsZero), -2);
  EXPECT_EQ(floatToInt(std::nanf(""), Prec::Int32, true, RoundMode::Up), 0);
  EXPECT_EQ(floatToInt(INFINITY, Prec::Int32, true, RoundMode::Up), INT32_MAX);
  EXPECT_EQ(floatToInt(-INFINITY, Prec::Int32, true, RoundMode::Up), INT32_MIN);
  EXPECT_EQ(floatToInt(3e9f, Prec::Int32, false, RoundMode::Up), 3000000000LL);
}

TEST(NumericsFloat, Bits) {
  EXPECT_EQ(floatToBits(1.0f), 0x3F800000u);
  EXPECT_EQ(bitsToFloat(0xC0000000u), -2.0f);
}

} // namespace

// The inline 64-bit rounding (rightShiftRoundSmall, the path of every shift
// up to 62) against a reference in long double arithmetic on the exact
// quotient: x / 2^s is exact in long double's 64-bit significand for
// |x| < 2^63 and the nearest integers below / above are found with floorl.
// Random values of every magnitude, every shift 1..62, every mode, ties
// and their neighbours.
TEST(NumericsRounding, SmallShiftsMatchExactQuotient) {
  using tpu::isa::RoundMode;
  std::mt19937_64 rng(8);
  const RoundMode modes[] = {RoundMode::HalfToEven, RoundMode::HalfAwayFromZero,
                             RoundMode::TowardsZero, RoundMode::Down,
                             RoundMode::Up, RoundMode::HalfUp,
                             RoundMode::HalfDown};
  auto reference = [](int64_t x, int s, RoundMode mode) {
    long double v = std::ldexp((long double)x, -s);
    long double fl = std::floor(v), frac = v - fl;
    int64_t q = int64_t(fl);
    bool up = false;
    if (frac != 0) {
      switch (mode) {
      case RoundMode::HalfToEven:
        up = frac > 0.5L || (frac == 0.5L && (q & 1));
        break;
      case RoundMode::HalfAwayFromZero:
        up = frac > 0.5L || (frac == 0.5L && v > 0);
        break;
      case RoundMode::TowardsZero:
        up = v < 0;
        break;
      case RoundMode::Down:
        break;
      case RoundMode::Up:
        up = true;
        break;
      case RoundMode::HalfUp:
        up = frac >= 0.5L;
        break;
      case RoundMode::HalfDown:
        up = frac > 0.5L;
        break;
      }
    }
    return q + int64_t(up);
  };
  for (int i = 0; i < 20000; ++i) {
    int bits = int(rng() % 63) + 1;
    int64_t x = int64_t(rng() >> (64 - bits));
    if (rng() & 1)
      x = -x;
    int s = int(rng() % 62) + 1;
    if (i % 4 == 0 && bits < 60) // ties and their neighbours
      x = (x >> s) * (int64_t(1) << s) + (int64_t(1) << (s - 1)) + int64_t(rng() % 3) - 1;
    for (RoundMode mode : modes) {
      ASSERT_EQ(tpu::isa::rightShiftRound(x, s, mode), reference(x, s, mode))
          << x << " >> " << s << " mode " << int(mode);
      ASSERT_EQ(tpu::isa::rightShiftRoundFast(x, s, mode),
                reference(x, s, mode));
    }
  }
}
