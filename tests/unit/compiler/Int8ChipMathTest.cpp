//===- Int8ChipMathTest.cpp - the INT8 functions of ChipMath.h by hand ----===//
//
// chip::convInt8, avgPoolInt8, addInt8, quantizeRq0 and dequantizeDq0 (the
// tpu interpreter's model of the INT8 command sequences, compiler/docs/
// design.md "INT8") on inputs small enough to compute by hand; every
// expected value is derived in the comment beside it. TpuChipOrderTest and
// the e2e tests hold the same functions to tpusim bit for bit; these hold
// them to the arithmetic the design states.
//
//===----------------------------------------------------------------------===//
#include "tpuc/Dialect/Tpu/IR/ChipMath.h"

#include "tpu/isa/Numerics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

using namespace tpuc;
namespace chip = tpuc::tpu::chip;
using ::tpu::isa::RoundMode;

namespace {

constexpr RoundMode kUp = RoundMode::HalfUp;
constexpr RoundMode kAway = RoundMode::HalfAwayFromZero;

//===----------------------------------------------------------------------===//
// convInt8
//===----------------------------------------------------------------------===//

/// 1 -> 1 channel, 2x2 input, 2x2 kernel, pads top = left = 1, bottom =
/// right = 0: a 2x2 output whose every element reads the pad value.
kernels::ConvParams tinyConv() {
  kernels::ConvParams p;
  p.n = 1;
  p.ic = 1;
  p.ih = 2;
  p.iw = 2;
  p.oc = 1;
  p.oh = 2;
  p.ow = 2;
  p.kh = 2;
  p.kw = 2;
  p.pt = 1;
  p.pl = 1;
  return p;
}

// x = [[1, 2], [3, 4]], w = [[1, -1], [2, 1]], pad value -3. The padded
// input (a row and a column of -3 before) is
//   -3 -3 -3
//   -3  1  2
//   -3  3  4
// and out[oy][ox] = sum w[ky][kx] * P[oy + ky][ox + kx]:
//   out00 = -3*1 + -3*-1 + -3*2 + 1*1 = -3 + 3 - 6 + 1 = -5
//   out01 = -3*1 + -3*-1 +  1*2 + 2*1 = -3 + 3 + 2 + 2 =  4
//   out10 = -3*1 +  1*-1 + -3*2 + 3*1 = -3 - 1 - 6 + 3 = -7
//   out11 =  1*1 +  2*-1 +  3*2 + 4*1 =  1 - 2 + 6 + 4 =  9
const std::vector<float> kX = {1, 2, 3, 4};
const std::vector<float> kW = {1, -1, 2, 1};

TEST(Int8ChipConv, PadValueBiasAndRequant) {
  kernels::ConvParams p = tinyConv();
  std::vector<float> out(4);
  // bias 10: acc = 5, 14, 3, 19; multiplier 3, rshift 2 (record -2):
  // 15 / 4 = 3.75 -> 4, 42 / 4 = 10.5 -> 11, 9 / 4 = 2.25 -> 2,
  // 57 / 4 = 14.25 -> 14.
  chip::RequantRecord r{10, 3, -2, 0};
  chip::convInt8(p, kX.data(), kW.data(), &r, -3, false, true, false, kUp,
                 out.data(), 1);
  EXPECT_EQ(out, (std::vector<float>{4, 11, 2, 14}));
  // The same with output zero point -128: 4 - 128 = -124, -117, -126, -114.
  r.zeroPoint = -128;
  chip::convInt8(p, kX.data(), kW.data(), &r, -3, false, true, false, kUp,
                 out.data(), 1);
  EXPECT_EQ(out, (std::vector<float>{-124, -117, -126, -114}));
  // Pad value 0 instead: out00 = 1, out01 = 2 + 2 = 4, out10 = -1 + 3 = 2,
  // out11 = 9; + 10 = 11, 14, 12, 19; * 3 / 4 = 8.25 -> 8, 10.5 -> 11,
  // 9 -> 9, 14.25 -> 14. (The pad value matters.)
  r.zeroPoint = 0;
  chip::convInt8(p, kX.data(), kW.data(), &r, 0, false, true, false, kUp,
                 out.data(), 1);
  EXPECT_EQ(out, (std::vector<float>{8, 11, 9, 14}));
}

TEST(Int8ChipConv, NegativeTiesPerMode) {
  kernels::ConvParams p = tinyConv();
  std::vector<float> out(4);
  // bias 0, multiplier 1, rshift 1: -5 / 2 = -2.5, 4 / 2 = 2, -7 / 2 =
  // -3.5, 9 / 2 = 4.5. HalfUp: -2, 2, -3, 5; away from zero: -3, 2, -4, 5.
  chip::RequantRecord r{0, 1, -1, 0};
  chip::convInt8(p, kX.data(), kW.data(), &r, -3, false, true, false, kUp,
                 out.data(), 1);
  EXPECT_EQ(out, (std::vector<float>{-2, 2, -3, 5}));
  chip::convInt8(p, kX.data(), kW.data(), &r, -3, false, true, false, kAway,
                 out.data(), 1);
  EXPECT_EQ(out, (std::vector<float>{-3, 2, -4, 5}));
  // A signed result with the fused relu (AR max 0 after the RQ1):
  // HalfUp -2, 2, -3, 5 -> 0, 2, 0, 5.
  chip::convInt8(p, kX.data(), kW.data(), &r, -3, false, true, true, kUp,
                 out.data(), 1);
  EXPECT_EQ(out, (std::vector<float>{0, 2, 0, 5}));
  // Unsigned result: the RQ1 saturates at 0 instead: 0, 2, 0, 5 too.
  chip::convInt8(p, kX.data(), kW.data(), &r, -3, false, false, false, kUp,
                 out.data(), 1);
  EXPECT_EQ(out, (std::vector<float>{0, 2, 0, 5}));
}

TEST(Int8ChipConv, TwoChannelsPerChannelRecords) {
  // 2 -> 2 channels, 1x1 kernel, pads 1 on every side (4x4 output), pad
  // value 7. x0 = [[1, 2], [3, 4]], x1 = [[-1, 0], [2, -2]];
  // w[oc][ic] = [[1, 2], [-3, 1]].
  kernels::ConvParams p;
  p.ic = 2;
  p.ih = p.iw = 2;
  p.oc = 2;
  p.oh = p.ow = 4;
  p.pt = p.pl = p.pb = p.pr = 1;
  std::vector<float> x = {1, 2, 3, 4, -1, 0, 2, -2};
  std::vector<float> w = {1, 2, -3, 1};
  // oc 0: border 7 * 1 + 7 * 2 = 21; interior x0 + 2 x1 = [-1, 2, 7, 0].
  //   bias 100, multiplier 1, shift 0: 121 at the border, 99, 102, 107,
  //   100 inside.
  // oc 1: border 7 * -3 + 7 = -14; interior -3 x0 + x1 = [-4, -6, -7, -14].
  //   bias -1, multiplier 1, rshift 1, zero point 3: border -15 / 2 = -7.5
  //   -> -7 (HalfUp) + 3 = -4; inside -5 / 2 -> -2 + 3 = 1, -7 / 2 -> -3 + 3
  //   = 0, -8 / 2 = -4 + 3 = -1, -15 / 2 -> -7 + 3 = -4.
  std::vector<chip::RequantRecord> r = {{100, 1, 0, 0}, {-1, 1, -1, 3}};
  std::vector<float> out(32);
  chip::convInt8(p, x.data(), w.data(), r.data(), 7, false, true, false, kUp,
                 out.data(), 2);
  const float B0 = 121, B1 = -4;
  std::vector<float> expect = {
      B0, B0,  B0,  B0, //
      B0, 99,  102, B0, //
      B0, 107, 100, B0, //
      B0, B0,  B0,  B0, //
      B1, B1,  B1,  B1, //
      B1, 1,   0,   B1, //
      B1, -1,  -4,  B1, //
      B1, B1,  B1,  B1};
  EXPECT_EQ(out, expect);
}

TEST(Int8ChipConv, ConvWrapsDepthwiseSaturates) {
  // Two channels, 1x1 kernel, x = -128 and w = -128 (acc 16384) in channel
  // 0, x = -128 and w = 127 (acc -16256) in channel 1; biases INT32_MAX and
  // INT32_MIN, multiplier 1, rshift 24 (2^24 = 16777216).
  //
  // CONV + AR add (int32 modulo 2^32):
  //   ch 0: 16384 + 2147483647 = 2147500031 - 2^32 = -2147467265;
  //         / 2^24 = -127.999 -> -128.
  //   ch 1: -16256 - 2147483648 = -2147499904 + 2^32 = 2147467392;
  //         / 2^24 = 127.999 -> 128 -> saturated 127.
  // Depthwise sPorD (int64 sum + bias, saturated to int32):
  //   ch 0: 2147500031 -> 2147483647; / 2^24 = 127.99999994 -> 128 -> 127.
  //   ch 1: -2147499904 -> -2147483648; / 2^24 = -128 exactly.
  // The same data, opposite signs.
  kernels::ConvParams p;
  p.ic = p.oc = 2;
  std::vector<float> x = {-128, -128};
  std::vector<float> w = {-128, 127};
  std::vector<chip::RequantRecord> r = {
      {std::numeric_limits<int32_t>::max(), 1, -24, 0},
      {std::numeric_limits<int32_t>::min(), 1, -24, 0}};
  std::vector<float> out(2);
  // The normal conv path: group 1 would mix channels, so the CONV case
  // runs as a grouped conv (group = 2, one channel each), depthwise =
  // false: the accumulation rule is the flag's, not the grouping's.
  p.group = 2;
  chip::convInt8(p, x.data(), w.data(), r.data(), 0, false, true, false, kUp,
                 out.data(), 1);
  EXPECT_EQ(out, (std::vector<float>{-128, 127}));
  chip::convInt8(p, x.data(), w.data(), r.data(), 0, true, true, false, kUp,
                 out.data(), 1);
  EXPECT_EQ(out, (std::vector<float>{127, -128}));
}

//===----------------------------------------------------------------------===//
// avgPoolInt8
//===----------------------------------------------------------------------===//

TEST(Int8ChipDeconv, StrideTwoKernelTwoHandDerived) {
  // ONNX ConvTranspose, 1 -> 1 channel, kernel 2 x 2, stride 2, no pads:
  // out[2y + ky][2x + kx] = x[y][x] * w[ky][kx] (no overlap), x = [[1, -2],
  // [3, 4]], w = [[1, 2], [-1, 3]]; bias 1, multiplier 1, rshift 1, HalfUp:
  // x = 1: (1, 2, -1, 3) + 1 = (2, 3, 0, 4) / 2 -> 1, 2, 0, 2;
  // x = -2: (-1, -3, 3, -5) / 2 -> 0, -1, 2, -2;
  // x = 3: (4, 7, -2, 10) / 2 -> 2, 4, -1, 5;
  // x = 4: (5, 9, -3, 13) / 2 -> 3, 5, -1, 7.
  kernels::ConvParams p;
  p.n = 1;
  p.ic = p.oc = 1;
  p.ih = p.iw = 2;
  p.oh = p.ow = 4;
  p.kh = p.kw = 2;
  p.sh = p.sw = 2;
  p.dh = p.dw = 1;
  p.pt = p.pl = p.pb = p.pr = 0;
  p.group = 1;
  const std::vector<float> x{1, -2, 3, 4}, w{1, 2, -1, 3};
  chip::RequantRecord r{1, 1, -1, 0};
  std::vector<float> out(16);
  chip::deconvInt8(p, x.data(), w.data(), &r, true, false, kUp, out.data(), 1);
  EXPECT_EQ(out, (std::vector<float>{1, 2, 0, -1,  //
                                     0, 2, 2, -2,  //
                                     2, 4, 3, 5,   //
                                     -1, 5, -1, 7}));
  // Unsigned result: the negative ones saturate at 0 (a fused relu); a
  // signed one with the AR max gives the same.
  std::vector<float> relu{1, 2, 0, 0, 0, 2, 2, 0, 2, 4, 3, 5, 0, 5, 0, 7};
  chip::deconvInt8(p, x.data(), w.data(), &r, false, false, kUp, out.data(),
                   1);
  EXPECT_EQ(out, relu);
  chip::deconvInt8(p, x.data(), w.data(), &r, true, true, kUp, out.data(), 1);
  EXPECT_EQ(out, relu);
}

TEST(Int8ChipPool, AvgPoolWindowSumThenRq1) {
  // x = [[1, 2], [3, -6]], 2x2 window, stride 1, pads 1 on every side: a
  // 3x3 output of window sums (pads add 0):
  //   [x00, x00 + x01, x01]            [1,  3,  2]
  //   [x00 + x10, all four, x01 + x11] [4,  0, -4]
  //   [x10, x10 + x11, x11]            [3, -3, -6]
  kernels::PoolParams p;
  p.inShape = {1, 1, 2, 2};
  p.outShape = {1, 1, 3, 3};
  p.kernel = {2, 2};
  p.strides = {1, 1};
  p.dilations = {1, 1};
  p.pads = {1, 1, 1, 1};
  p.countIncludePad = true;
  std::vector<float> x = {1, 2, 3, -6};
  std::vector<float> out(9);
  // multiplier 1, rshift 2 (/ 4): 0.25 -> 0, 0.75 -> 1, 0.5 -> 1, 1, 0, -1,
  // 0.75 -> 1, -0.75 -> -1, -1.5 -> -1 (HalfUp) or -2 (away from zero).
  chip::avgPoolInt8(p, x.data(), 1, 2, 0, 0, true, kUp, out.data(), 1);
  EXPECT_EQ(out, (std::vector<float>{0, 1, 1, 1, 0, -1, 1, -1, -1}));
  chip::avgPoolInt8(p, x.data(), 1, 2, 0, 0, true, kAway, out.data(), 1);
  EXPECT_EQ(out, (std::vector<float>{0, 1, 1, 1, 0, -1, 1, -1, -2}));
  // uint8 output: the negatives saturate to 0.
  chip::avgPoolInt8(p, x.data(), 1, 2, 0, 0, false, kUp, out.data(), 1);
  EXPECT_EQ(out, (std::vector<float>{0, 1, 1, 1, 0, 0, 1, 0, 0}));
  // multiplier 100, rshift 0: 100, 300 -> 127, 200 -> 127, 400 -> 127, 0,
  // -400 -> -128, 300 -> 127, -300 -> -128, -600 -> -128.
  chip::avgPoolInt8(p, x.data(), 100, 0, 0, 0, true, kUp, out.data(), 1);
  EXPECT_EQ(out,
            (std::vector<float>{100, 127, 127, 127, 0, -128, 127, -128, -128}));
  // A global average of the 2x2 (no pads, 1x1 output): s_in / (s_out * 4)
  // with s_in = s_out is 1/4: multiplier 1, rshift 2 (getScaleAndShift).
  p.outShape = {1, 1, 1, 1};
  p.pads = {0, 0, 0, 0};
  std::vector<float> y = {5, 7, 9, 11}; // 32 / 4 = 8
  chip::avgPoolInt8(p, y.data(), 1, 2, 0, 0, true, kUp, out.data(), 1);
  EXPECT_EQ(out[0], 8);
  y = {5, 7, 9, 10}; // 31 / 4 = 7.75 -> 8
  chip::avgPoolInt8(p, y.data(), 1, 2, 0, 0, true, kUp, out.data(), 1);
  EXPECT_EQ(out[0], 8);
  y = {-5, -7, -9, -9}; // -30 / 4 = -7.5 -> -7 (HalfUp), -8 (away)
  chip::avgPoolInt8(p, y.data(), 1, 2, 0, 0, true, kUp, out.data(), 1);
  EXPECT_EQ(out[0], -7);
  chip::avgPoolInt8(p, y.data(), 1, 2, 0, 0, true, kAway, out.data(), 1);
  EXPECT_EQ(out[0], -8);
}

//===----------------------------------------------------------------------===//
/// Zero points of a symmetric add (the cases below).
const int64_t kNoZp[2] = {0, 0};

// addInt8
//===----------------------------------------------------------------------===//

TEST(Int8ChipAdd, HandComputed) {
  // m = {3, 5}, r = {1, 2}, fraction 2. a = 10, b = 7:
  //   t_a = 30 / 2 = 15, t_b = 35 / 4 = 8.75 -> 9;
  //   add: 24 / 4 = 6; sub: 6 / 4 = 1.5 -> 2.
  const int64_t m[2] = {3, 5}, r[2] = {1, 2};
  EXPECT_EQ(chip::addInt8(10, 7, m, r, kNoZp, 0, 2, false, true, kUp), 6);
  EXPECT_EQ(chip::addInt8(10, 7, m, r, kNoZp, 0, 2, true, true, kUp), 2);
  // a = 7, b = 10, sub: t_a = 21 / 2 = 10.5 -> 11, t_b = 50 / 4 = 12.5 ->
  // 13; (11 - 13) / 4 = -0.5 -> 0 (HalfUp), -1 (away from zero).
  EXPECT_EQ(chip::addInt8(7, 10, m, r, kNoZp, 0, 2, true, true, kUp), 0);
  EXPECT_EQ(chip::addInt8(7, 10, m, r, kNoZp, 0, 2, true, true, kAway), -1);
  // The scales of the lowering: s_a = 0.1, s_b = 0.2, s_out = 0.25 give
  // (13107, 7) and (13107, 6) (Int8RequantTest), 8 fraction bits.
  // a = 50 (5.0), b = -20 (-4.0), real sum 1.0 = 4 * s_out:
  //   t_a = 655350 / 128 = 5119.92 -> 5120; t_b = -262140 / 64 =
  //   -4095.94 -> -4096; (5120 - 4096) / 256 = 4.
  const int64_t ml[2] = {13107, 13107}, rl[2] = {7, 6};
  EXPECT_EQ(chip::addInt8(50, -20, ml, rl, kNoZp, 0, 8, false, true, kUp), 4);
  // a = 3 (0.3), b = 1 (0.2): 0.5 = 2 * s_out. t_a = 39321 / 128 = 307.2
  // -> 307; t_b = 13107 / 64 = 204.8 -> 205; 512 / 256 = 2.
  EXPECT_EQ(chip::addInt8(3, 1, ml, rl, kNoZp, 0, 8, false, true, kUp), 2);
}

TEST(Int8ChipAdd, NegativeTiesPerMode) {
  // m = {1, 1}, r = {1, 1}, fraction 1; a = -3, b = -2:
  //   HalfUp: t_a = -1.5 -> -1, t_b = -1; -2 / 2 = -1.
  //   away:   t_a = -1.5 -> -2, t_b = -1; -3 / 2 = -1.5 -> -2.
  const int64_t m[2] = {1, 1}, r[2] = {1, 1};
  EXPECT_EQ(chip::addInt8(-3, -2, m, r, kNoZp, 0, 1, false, true, kUp), -1);
  EXPECT_EQ(chip::addInt8(-3, -2, m, r, kNoZp, 0, 1, false, true, kAway), -2);
}

TEST(Int8ChipAdd, SaturationAndUnsigned) {
  // m = {256, 256}, r = {0, 0}, fraction 8: y = a + b (sub: a - b) exactly,
  // then saturated.
  const int64_t m[2] = {256, 256}, r[2] = {0, 0};
  EXPECT_EQ(chip::addInt8(127, 127, m, r, kNoZp, 0, 8, false, true, kUp), 127); // 254
  EXPECT_EQ(chip::addInt8(-128, -128, m, r, kNoZp, 0, 8, false, true, kUp), -128);
  EXPECT_EQ(chip::addInt8(-128, 127, m, r, kNoZp, 0, 8, true, true, kUp), -128); // -255
  EXPECT_EQ(chip::addInt8(127, -128, m, r, kNoZp, 0, 8, true, true, kUp), 127);  // 255
  EXPECT_EQ(chip::addInt8(100, -30, m, r, kNoZp, 0, 8, false, true, kUp), 70);
  // uint8 output: 100 + 50 = 150 (above 127, kept), 255 + 255 = 510 ->
  // 255, 50 - 100 = -50 -> 0, 100 - 50 = 50.
  EXPECT_EQ(chip::addInt8(100, 50, m, r, kNoZp, 0, 8, false, false, kUp), 150);
  EXPECT_EQ(chip::addInt8(255, 255, m, r, kNoZp, 0, 8, false, false, kUp), 255);
  EXPECT_EQ(chip::addInt8(50, 100, m, r, kNoZp, 0, 8, true, false, kUp), 0);
  EXPECT_EQ(chip::addInt8(100, 50, m, r, kNoZp, 0, 8, true, false, kUp), 50);
  // Halving (m = 128): (255 + 254) / 2 = 254.5 -> 255; (1 + 0) / 2 = 0.5 ->
  // 1; (-1 + 0) / 2 = -0.5 -> 0 (HalfUp).
  const int64_t h[2] = {128, 128};
  EXPECT_EQ(chip::addInt8(255, 254, h, r, kNoZp, 0, 8, false, false, kUp), 255);
  EXPECT_EQ(chip::addInt8(1, 0, h, r, kNoZp, 0, 8, false, true, kUp), 1);
  EXPECT_EQ(chip::addInt8(-1, 0, h, r, kNoZp, 0, 8, false, true, kUp), 0);
}

//===----------------------------------------------------------------------===//
// quantizeRq0 / dequantizeDq0
//===----------------------------------------------------------------------===//

TEST(Int8ChipCast, QuantizeRq0) {
  // scale 0.5: 1 / s = 2 exactly. 1.25 -> 2.5 -> 3 (away), 2 (half even);
  // -1.25 -> -2.5 -> -3 (away), -2 (HalfUp).
  EXPECT_EQ(chip::quantizeRq0(1.25f, 0.5, 0, true, kAway), 3);
  EXPECT_EQ(chip::quantizeRq0(1.25f, 0.5, 0, true, RoundMode::HalfToEven), 2);
  EXPECT_EQ(chip::quantizeRq0(-1.25f, 0.5, 0, true, kAway), -3);
  EXPECT_EQ(chip::quantizeRq0(-1.25f, 0.5, 0, true, kUp), -2);
  EXPECT_EQ(chip::quantizeRq0(0.2f, 0.5, 0, true, kAway), 0); // 0.4
  // Saturation: 100 -> 200 -> 127; -100 -> -128; uint8: -1 -> -2 -> 0,
  // 200 -> 400 -> 255, 127.5 -> 255.
  EXPECT_EQ(chip::quantizeRq0(100.0f, 0.5, 0, true, kAway), 127);
  EXPECT_EQ(chip::quantizeRq0(-100.0f, 0.5, 0, true, kAway), -128);
  EXPECT_EQ(chip::quantizeRq0(-1.0f, 0.5, 0, false, kAway), 0);
  EXPECT_EQ(chip::quantizeRq0(200.0f, 0.5, 0, false, kAway), 255);
  EXPECT_EQ(chip::quantizeRq0(127.5f, 0.5, 0, false, kAway), 255);
  // Zero point -128 (int8 holding [0, 255 s]): 0 -> -128; 1.25 -> 2.5 - 128
  // = -125.5 -> -126 (away); 127.5 -> 255 - 128 = 127; 128 -> 256 - 128 ->
  // 127; -3 -> -6 - 128 -> -128.
  EXPECT_EQ(chip::quantizeRq0(0.0f, 0.5, -128, true, kAway), -128);
  EXPECT_EQ(chip::quantizeRq0(1.25f, 0.5, -128, true, kAway), -126);
  EXPECT_EQ(chip::quantizeRq0(127.5f, 0.5, -128, true, kAway), 127);
  EXPECT_EQ(chip::quantizeRq0(128.0f, 0.5, -128, true, kAway), 127);
  EXPECT_EQ(chip::quantizeRq0(-3.0f, 0.5, -128, true, kAway), -128);
  // A positive zero point: 1.25 -> 2.5 + 3 = 5.5 -> 6.
  EXPECT_EQ(chip::quantizeRq0(1.25f, 0.5, 3, true, kAway), 6);
  // The product is rounded to fp32 before the rounding to an integer:
  // scale 0.1, fl32(1 / 0.1) = 10; fl32(0.05f) = 0.0500000007450580597,
  // times 10 = 0.500000007 rounds to fl32 0.5 exactly, a tie: HalfUp sends
  // -0.5 to 0 (the exact product, -0.500000007, would give -1); away from
  // zero gives -1 and +1.
  EXPECT_EQ(chip::quantizeRq0(-0.05f, 0.1, 0, true, kUp), 0);
  EXPECT_EQ(chip::quantizeRq0(-0.05f, 0.1, 0, true, kAway), -1);
  EXPECT_EQ(chip::quantizeRq0(0.05f, 0.1, 0, true, kAway), 1);
  // Infinities saturate; NaN gives code 0 whatever the zero point (with
  // zero point -128 that code means 128 s, not 0).
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(chip::quantizeRq0(inf, 0.5, 0, true, kAway), 127);
  EXPECT_EQ(chip::quantizeRq0(-inf, 0.5, 0, true, kAway), -128);
  EXPECT_EQ(chip::quantizeRq0(-inf, 0.5, 0, false, kAway), 0);
  EXPECT_EQ(chip::quantizeRq0(nan, 0.5, 0, true, kAway), 0);
  EXPECT_EQ(chip::quantizeRq0(nan, 0.5, -128, true, kAway), 0);
  EXPECT_EQ(chip::quantizeRq0(nan, 0.5, 0, false, kAway), 0);
}

TEST(Int8ChipCast, DequantizeDq0) {
  // fl32(float(q - zp) * fl32(s)).
  EXPECT_EQ(chip::dequantizeDq0(-128, 0.5, -128), 0.0f);
  EXPECT_EQ(chip::dequantizeDq0(127, 0.5, -128), 127.5f); // 255 * 0.5
  EXPECT_EQ(chip::dequantizeDq0(-128, 0.5, 0), -64.0f);
  EXPECT_EQ(chip::dequantizeDq0(255, 0.25, 0), 63.75f);
  EXPECT_EQ(chip::dequantizeDq0(5, 0.5, 3), 1.0f); // (5 - 3) * 0.5
  // The scale is rounded to fp32 first: 3 * fl32(0.1) = 3 *
  // 0.100000001490116 = 0.300000004470348, nearest fp32 0.3f.
  EXPECT_EQ(chip::dequantizeDq0(-3, 0.1, 0), -0.3f);
  // s = 1/3: fl32(1/3) = 0.3333333432674407958984375; times 3 is
  // 1.0000000298..., which rounds to 1.0f (half an ulp of 1 is 5.96e-8).
  EXPECT_EQ(chip::dequantizeDq0(3, 1.0 / 3.0, 0), 1.0f);
  // Round trip through rq0 with zero point -128 (all 256 codes): q = -28
  // means (-28 + 128) * 0.5 = 50.
  float q = chip::quantizeRq0(50.0f, 0.5, -128, true, kAway);
  EXPECT_EQ(q, -28);
  EXPECT_EQ(chip::dequantizeDq0(q, 0.5, -128), 50.0f);
}

} // namespace

// Asymmetric: t_x = rsr((x - zp_x) m_x, r_x), y = sat(rsr(t_a + t_b, f) +
// zp_out). a = 10, zp_a = 2 -> 8; b = 7, zp_b = -1 -> 8; m = 1, r = 0,
// f = 0: 16, + zp_out 5 = 21. Sub: 8 - 8 = 0 + 5 = 5. Saturation after the
// zero point: 127 - (-128) = 255 with zp_out -128 -> 127.
TEST(Int8ChipMathTest, AddInt8ZeroPoints) {
  const int64_t m[2] = {1, 1}, r[2] = {0, 0}, zp[2] = {2, -1};
  EXPECT_EQ(chip::addInt8(10, 7, m, r, zp, 5, 0, false, true, kUp), 21);
  EXPECT_EQ(chip::addInt8(10, 7, m, r, zp, 5, 0, true, true, kUp), 5);
  const int64_t zq[2] = {-128, 0};
  EXPECT_EQ(chip::addInt8(127, 0, m, r, zq, -128, 0, false, true, kUp), 127);
  EXPECT_EQ(chip::addInt8(-128, 0, m, r, zq, -128, 0, false, true, kUp), -128);
}

// Asymmetric average pooling: a 2x2 window of 10s with input zero point 4
// sums (10 - 4) * 4 = 24; multiplier 1, rshift 2: 6; + output zero point 3
// = 9. With one pad row (count included) the pad reads zp_in = 4 -> 0:
// window [10, 10, pad, pad] -> 12 >> 2 = 3 + 3 = 6.
TEST(Int8ChipMathTest, AvgPoolInt8ZeroPoints) {
  kernels::PoolParams p;
  p.inShape = {1, 1, 2, 2};
  p.outShape = {1, 1, 1, 1};
  p.kernel = {2, 2};
  p.strides = {1, 1};
  p.dilations = {1, 1};
  p.pads = {0, 0, 0, 0};
  p.countIncludePad = true;
  std::vector<float> x{10, 10, 10, 10}, out(1);
  chip::avgPoolInt8(p, x.data(), 1, 2, 4, 3, true, kUp, out.data(), 1);
  EXPECT_EQ(out[0], 9.0f);
  p.inShape = {1, 1, 1, 2};
  p.pads = {1, 0, 0, 0};
  std::vector<float> y{10, 10};
  chip::avgPoolInt8(p, y.data(), 1, 2, 4, 3, true, kUp, out.data(), 1);
  EXPECT_EQ(out[0], 6.0f);
}

//===----------------------------------------------------------------------===//
// TFLite's arithmetic (two RQ1 steps), against TFLite's reference integer
// functions written out here from their definitions (gemmlowp's
// SaturatingRoundingDoublingHighMul and RoundingDivideByPOT, TFLite's
// QuantizeMultiplier, MultiplyByQuantizedMultiplier, its int8 ADD and
// average pool)
//===----------------------------------------------------------------------===//

namespace {

namespace tfl_ref {

int32_t srdhm(int32_t a, int32_t b) {
  if (a == b && a == std::numeric_limits<int32_t>::min())
    return std::numeric_limits<int32_t>::max();
  int64_t ab = int64_t(a) * int64_t(b);
  int64_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
  return int32_t((ab + nudge) / (int64_t(1) << 31)); // truncating
}

int32_t rdbp(int32_t x, int e) {
  int32_t mask = int32_t((int64_t(1) << e) - 1);
  int32_t rem = x & mask;
  int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> e) + (rem > threshold ? 1 : 0);
}

void quantizeMultiplier(double real, int32_t &m, int &shift) {
  double q = std::frexp(real, &shift);
  auto f = int64_t(std::round(q * double(int64_t(1) << 31)));
  if (f == (int64_t(1) << 31)) {
    f /= 2;
    ++shift;
  }
  m = int32_t(f);
}

int32_t mbqm(int32_t x, int32_t m, int shift) {
  int left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
  return rdbp(srdhm(x * (1 << left), m), right);
}

} // namespace tfl_ref

/// The record of TFLite's requantisation by \p real, as the lowering
/// writes it (ChipMath.h RequantRecord): (acc * M) >> (31 - max(e, 0))
/// half up, then >> max(-e, 0) half away, plus zp.
chip::RequantRecord tfliteRecord(double real, int32_t zp) {
  int32_t m = 0;
  int e = 0;
  tfl_ref::quantizeMultiplier(real, m, e);
  chip::RequantRecord r;
  r.multiplier = m;
  r.shift = -(31 - std::max(e, 0));
  r.twoSteps = true;
  r.multiplier2 = 1;
  r.shift2 = -std::max(-e, 0);
  r.zeroPoint2 = zp;
  return r;
}

TEST(Int8ChipTflite, TwoStepsEqualMultiplyByQuantizedMultiplier) {
  // Right shifts 0 to 20, a left shift of 1, and multipliers whose
  // products land on ties of both roundings (0.5, 0.25: M = 2^30).
  for (double real : {0.5, 0.25, 0.0037, 0.0123456, 0.75, 1.7, 9.5e-7,
                      0.999999}) {
    int32_t m = 0;
    int e = 0;
    tfl_ref::quantizeMultiplier(real, m, e);
    chip::RequantRecord r = tfliteRecord(real, -7);
    for (int32_t acc = -300000; acc <= 300000; acc += 7) {
      int64_t want = std::clamp<int64_t>(
          int64_t(tfl_ref::mbqm(acc, m, e)) - 7, -128, 127);
      ASSERT_EQ(chip::requantByRecord(acc, r, kUp, true), want)
          << "real " << real << " acc " << acc;
    }
  }
}

TEST(Int8ChipTflite, AddEqualsTfliteAddForEveryPairOfCodes) {
  // TFLite's int8 ADD: left shift 20, inputs by s / (2 max), output by
  // 2 max / (2^20 s_out), every code pair of two scale / zero point sets.
  struct Case {
    double sa, sb, so;
    int32_t za, zb, zo;
  };
  for (Case c : {Case{0.03, 0.025, 0.05, -128, 5, -20},
                 Case{0.1, 0.1, 0.2, 0, 0, 0},
                 Case{0.007, 0.05, 0.04, 17, -3, 9}}) {
    double twice = 2 * std::max(c.sa, c.sb);
    double reals[3] = {c.sa / twice, c.sb / twice,
                       twice / (double(1 << 20) * c.so)};
    int32_t m[3];
    int e[3];
    chip::RequantRecord rec[3];
    for (int k = 0; k < 3; ++k) {
      tfl_ref::quantizeMultiplier(reals[k], m[k], e[k]);
      rec[k] = tfliteRecord(reals[k], k == 2 ? c.zo : 0);
      if (k < 2) // the left shift of 20 folded into the first step
        rec[k].shift += 20;
    }
    int64_t zp[2] = {c.za, c.zb};
    for (bool sub : {false, true})
      for (int a = -128; a <= 127; ++a)
        for (int b = -128; b <= 127; ++b) {
          int32_t ta = tfl_ref::mbqm((a - c.za) * (1 << 20), m[0], e[0]);
          int32_t tb = tfl_ref::mbqm((b - c.zb) * (1 << 20), m[1], e[1]);
          int64_t want = std::clamp<int64_t>(
              int64_t(tfl_ref::mbqm(sub ? ta - tb : ta + tb, m[2], e[2])) +
                  c.zo,
              -128, 127);
          ASSERT_EQ(chip::addInt8Tflite(a, b, zp, rec, rec[2], sub, true),
                    want)
              << a << (sub ? " - " : " + ") << b;
        }
  }
}

TEST(Int8ChipTflite, AvgPoolIsTflitesRoundedAverage) {
  // sum * (floor(2^30 / k) + 1) >> 30 rounding half up equals TFLite's
  // (sum +/- k / 2) / k (truncating) for every sum of k int8 codes.
  for (int64_t k : {1, 2, 3, 4, 6, 9, 16, 25, 49, 225}) {
    int64_t mult = (int64_t(1) << 30) / k + 1;
    for (int64_t sum = -128 * k; sum <= 127 * k; ++sum) {
      int64_t want = sum > 0 ? (sum + k / 2) / k : (sum - k / 2) / k;
      ASSERT_EQ(::tpu::isa::requantize(sum, mult, 30, 0, kUp,
                                       ::tpu::isa::Prec::Int8, true),
                std::clamp<int64_t>(want, -128, 127))
          << "k " << k << " sum " << sum;
    }
  }
}

} // namespace
