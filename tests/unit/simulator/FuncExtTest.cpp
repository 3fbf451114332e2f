//===- FuncExtTest.cpp - ROI PorD, wide-integer CONV, rq2/dq2, INT4 GDMA --===//
//
// The kernels added for the decisions in simulator/docs/semantics.md (ROI
// variants of PorD, int4/int16/int32 CONV, RQ&DQ rq2/dq2, INT4 GDMA moves,
// LAR / tsk 12 rejection). Each test writes operands with its own address
// arithmetic (isa/docs/bm1684x.md 3.1: lane (L + c) mod 64, slot (L + c) div 64;
// INT4 element e in byte e / 2, even elements in the low nibble), runs the
// command through encode + decode + execute, and compares with a plain
// nested-loop reference written here from the documented rules.
//
//===----------------------------------------------------------------------===//

#include "FuncTestUtil.h"
#include "SimTestUtil.h"

#include "tpu/isa/Disasm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

// The float references add rounded products in a fixed order.
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

using namespace tpu;
using namespace tpu::sim;
using namespace tpu::sim::test;

namespace {

//===----------------------------------------------------------------------===//
// Reference-side memory access (INT4 aware)
//===----------------------------------------------------------------------===//

unsigned bitsOf(Prec p) { return p == Prec::Int4 ? 4 : bytesOf(p) * 8; }

/// Elements per 64-byte EU row.
uint32_t euNumOf(Prec p) { return kEuBytes * 8 / bitsOf(p); }

/// Raw bits of element `e` of an array at byte `base` of `lane`.
uint64_t getLane(MachineState &m, unsigned lane, uint64_t base, uint64_t e,
                 Prec p) {
  if (p == Prec::Int4) {
    uint8_t b = *m.lmem.at(lane, base + e / 2, 1);
    return (e & 1) ? b >> 4 : b & 0xF;
  }
  uint64_t v = 0;
  std::memcpy(&v, m.lmem.at(lane, base + e * bytesOf(p), bytesOf(p)),
              bytesOf(p));
  return v;
}

void putLane(MachineState &m, unsigned lane, uint64_t base, uint64_t e, Prec p,
             uint64_t v) {
  if (p == Prec::Int4) {
    uint8_t *b = m.lmem.at(lane, base + e / 2, 1);
    *b = (e & 1) ? uint8_t((*b & 0x0F) | ((v & 0xF) << 4))
                 : uint8_t((*b & 0xF0) | (v & 0xF));
    return;
  }
  std::memcpy(m.lmem.at(lane, base + e * bytesOf(p), bytesOf(p)), &v,
              bytesOf(p));
}

/// A local tensor: TIU address and element strides.
struct LT {
  uint32_t addr;
  Prec p;
  int64_t ns, cs, hs, ws;

  unsigned lane(uint32_t c) const {
    return ((addr >> kLaneShift) + c) % kLanes;
  }
  uint64_t elem(uint32_t n, uint32_t c, uint32_t h, uint32_t w) const {
    uint64_t slot = ((addr >> kLaneShift) + c) / kLanes;
    return uint64_t(n * ns + int64_t(slot) * cs + h * hs + w * ws);
  }
  uint64_t base() const { return addr & (kLaneBytes - 1); }
  void put(MachineState &m, uint32_t n, uint32_t c, uint32_t h, uint32_t w,
           uint64_t v) const {
    putLane(m, lane(c), base(), elem(n, c, h, w), p, v);
  }
  uint64_t get(MachineState &m, uint32_t n, uint32_t c, uint32_t h,
               uint32_t w) const {
    return getLane(m, lane(c), base(), elem(n, c, h, w), p);
  }
};

LT euTensor(uint32_t addr, Prec p, uint32_t c, uint32_t h, uint32_t w) {
  int64_t slots = ((addr >> kLaneShift) + c + kLanes - 1) / kLanes;
  int64_t cs = int64_t(test::alignUp(uint64_t(h) * w, euNumOf(p)));
  return {addr, p, slots * cs, cs, int64_t(w), 1};
}

LT compactTensor(uint32_t addr, Prec p, uint32_t c, uint32_t h, uint32_t w) {
  int64_t slots = ((addr >> kLaneShift) + c + kLanes - 1) / kLanes;
  int64_t cs = int64_t(h) * w;
  return {addr, p, slots * cs, cs, int64_t(w), 1};
}

int64_t signedBits(uint64_t v, unsigned bits) {
  uint64_t sign = uint64_t(1) << (bits - 1);
  v &= (sign << 1) - 1;
  return int64_t((v ^ sign) - sign);
}

int64_t asInt(uint64_t bits, Prec p, bool isSigned) {
  return isSigned ? signedBits(bits, bitsOf(p)) : int64_t(bits);
}

__int128 satTo(__int128 v, Prec p, bool isSigned) {
  unsigned b = bitsOf(p);
  __int128 lo = isSigned ? -(__int128(1) << (b - 1)) : 0;
  __int128 hi =
      isSigned ? (__int128(1) << (b - 1)) - 1 : (__int128(1) << b) - 1;
  return v < lo ? lo : v > hi ? hi : v;
}

/// x / 2^s rounded as ROUND_MODE 0 (half to even) or 1 (half away from
/// zero), written from the definitions (isa/docs/bm1684x.md 8.1).
__int128 shiftRound(__int128 x, unsigned s, unsigned mode) {
  if (s == 0)
    return x;
  __int128 d = __int128(1) << s;
  __int128 q = x >= 0 ? x / d : -((-x + d - 1) / d); // floor
  __int128 r = x - q * d;                            // 0 <= r < d
  __int128 half = d / 2;
  if (mode == 0)
    return (r > half || (r == half && (q & 1))) ? q + 1 : q;
  // Half away from zero.
  if (x >= 0)
    return r >= half ? q + 1 : q;
  return r > half ? q + 1 : q;
}

//===----------------------------------------------------------------------===//
// PorD ROI variants
//===----------------------------------------------------------------------===//

struct Box {
  int16_t x0, y0, x1, y1;
};

/// Whether window position (y, x) of a box reads the input (else the
/// out-of-range value): inside the input and not right of x1 / below y1.
bool roiInside(const Box &b, int64_t y, int64_t x, uint32_t ih, uint32_t iw) {
  return y >= 0 && x >= 0 && y < int64_t(ih) && x < int64_t(iw) && y <= b.y1 &&
         x <= b.x1;
}

isa::cmd::SPorD roiCmd(unsigned eu, Prec in, Prec res, uint32_t n, uint32_t c,
                       uint32_t ih, uint32_t iw, uint32_t kh, uint32_t kw,
                       uint32_t boxes) {
  isa::cmd::SPorD p = pordCmd(eu, in, res, c, ih, iw, kh, kw, 1, boxes);
  p.opd0_sign = 1;
  p.res0_n = n;
  // Geometry fields the ROI variants do not use (semantics.md "PorD").
  p.opd0_up_pad = p.opd0_lf_pad = 1;
  p.res_op_x_str = p.res_op_y_str = 2;
  p.opd1_x_ins0 = 1;
  return p;
}

void putBoxes(MachineState &m, uint32_t addr, const std::vector<Box> &bx) {
  LT t = compactTensor(addr, Prec::Int16, uint32_t(bx.size()), 1, 4);
  for (uint32_t b = 0; b < bx.size(); ++b) {
    int16_t v[4] = {bx[b].x0, bx[b].y0, bx[b].x1, bx[b].y1};
    for (uint32_t k = 0; k < 4; ++k)
      t.put(m, 0, b, 0, k, uint16_t(v[k]));
  }
}

TEST(FuncRoi, FloatPoolsAndDepthwiseWithBorderBoxes) {
  const uint32_t N = 2, C = 66, IH = 5, IW = 6, KH = 2, KW = 3;
  // Inside; over the top-left border; over the bottom-right border; smaller
  // than the window (x1, y1 clip it); empty (x1 < x0).
  const std::vector<Box> boxes = {
      {0, 0, 5, 4}, {-1, -1, 10, 10}, {4, 4, 5, 4}, {1, 1, 2, 1}, {3, 2, 2, 1}};
  const uint32_t B = uint32_t(boxes.size());
  const uint32_t inAddr = laddr(0, 0), outAddr = laddr(0, 0x10000),
                 boxAddr = laddr(0, 0x20000), wAddr = laddr(0, 0x30000);
  for (Prec p : {Prec::Fp32, Prec::Fp16, Prec::Bf16})
    for (unsigned eu : {5u, 6u, 7u})
      for (bool rotate : {false, true}) {
        if (rotate && eu != 5)
          continue;
        SCOPED_TRACE(std::string(isa::precName(p)) + " eu " +
                     std::to_string(eu) + (rotate ? " rotated" : ""));
        MachineState m(isa::ChipParams::bm1684x());
        std::mt19937 rng(100 + eu);
        LT in = euTensor(inAddr, p, C, IH, IW);
        LT wt = compactTensor(wAddr, p, C, KH, KW);
        LT out = euTensor(outAddr, p, C, 1, B);
        // Small integers: every sum below is exact in all three types.
        std::vector<float> x(size_t(N) * C * IH * IW), w(size_t(C) * KH * KW);
        for (uint32_t n = 0; n < N; ++n)
          for (uint32_t c = 0; c < C; ++c)
            for (uint32_t y = 0; y < IH; ++y)
              for (uint32_t xx = 0; xx < IW; ++xx) {
                float v = float(randomInt(rng, -8, 8));
                x[((size_t(n) * C + c) * IH + y) * IW + xx] = v;
                in.put(m, n, c, y, xx, fToBits(v, p));
              }
        for (uint32_t c = 0; c < C; ++c)
          for (uint32_t k = 0; k < KH * KW; ++k) {
            float v = float(randomInt(rng, -3, 3));
            w[size_t(c) * KH * KW + k] = v;
            wt.put(m, 0, c, k / KW, k % KW, fToBits(v, p));
          }
        putBoxes(m, boxAddr, boxes);
        const float except = eu == 7 ? -100.0f : 0.5f, scale = 0.25f;
        auto cmd = roiCmd(eu, p, p, N, C, IH, IW, KH, KW, B);
        cmd.kernel_rotate = rotate;
        cmd.opd0_addr = inAddr;
        cmd.res0_addr = outAddr;
        cmd.opd3_addr = boxAddr;
        cmd.opd2_const = 1;
        cmd.opd2_addr = fToBits(except, p);
        if (eu == 5) {
          cmd.opd1_addr = wAddr;
        } else if (eu == 6) {
          cmd.opd1_const = 1;
          cmd.opd1_addr = isa::floatToBits(scale);
        }
        runTiu(cmd, m);
        for (uint32_t b = 0; b < B; ++b)
          for (uint32_t n = 0; n < N; ++n)
            for (uint32_t c = 0; c < C; ++c) {
              float acc =
                  eu == 7 ? -std::numeric_limits<float>::infinity() : 0.0f;
              for (uint32_t ky = 0; ky < KH; ++ky)
                for (uint32_t kx = 0; kx < KW; ++kx) {
                  int64_t y = boxes[b].y0 + int64_t(ky);
                  int64_t xx = boxes[b].x0 + int64_t(kx);
                  float v =
                      roiInside(boxes[b], y, xx, IH, IW)
                          ? x[((size_t(n) * C + c) * IH + size_t(y)) * IW +
                              size_t(xx)]
                          : except;
                  uint32_t wy = rotate ? KH - 1 - ky : ky;
                  uint32_t wx = rotate ? KW - 1 - kx : kx;
                  if (eu == 7)
                    acc = std::max(acc, v);
                  else if (eu == 5)
                    acc = acc + v * w[size_t(c) * KH * KW + wy * KW + wx];
                  else
                    acc = acc + v;
                }
              if (eu == 6)
                acc = acc * scale;
              ASSERT_EQ(out.get(m, n, c, 0, b), fToBits(acc, p))
                  << "box " << b << " n " << n << " c " << c;
            }
      }
}

TEST(FuncRoi, Int8ShiftRoundSaturateAndDefaultExceptValue) {
  const uint32_t C = 3, IH = 4, IW = 4, KH = 2, KW = 2;
  const std::vector<Box> boxes = {
      {0, 0, 3, 3}, {-1, 2, 0, 3}, {3, 3, 3, 3}, {2, 0, 1, 5}, {1, 1, 1, 2}};
  const uint32_t B = uint32_t(boxes.size());
  const uint32_t inAddr = laddr(0, 0), outAddr = laddr(0, 0x10000),
                 boxAddr = laddr(0, 0x20000), wAddr = laddr(0, 0x30000);
  struct Variant {
    unsigned eu;
    Prec res;
    unsigned mode, shift;
    int64_t mul, except;
    bool exceptConst;
  };
  const Variant variants[] = {
      {7, Prec::Int8, 0, 0, 1, -100, true},
      {7, Prec::Int8, 0, 0, 1, 0, false}, // no immediate: reads 0
      {6, Prec::Int8, 0, 2, 3, 5, true},
      {6, Prec::Int16, 1, 2, -3, -7, true},
      {6, Prec::Int16, 1, 1, 1, 0, false},
      {5, Prec::Int16, 0, 3, 1, -7, true},
      {5, Prec::Int8, 1, 1, 1, 9, true},
  };
  for (const Variant &v : variants) {
    SCOPED_TRACE("eu " + std::to_string(v.eu) + " " + isa::precName(v.res) +
                 " mode " + std::to_string(v.mode));
    MachineState m(isa::ChipParams::bm1684x());
    std::mt19937 rng(7 + v.eu + v.mode);
    LT in = euTensor(inAddr, Prec::Int8, C, IH, IW);
    LT wt = compactTensor(wAddr, Prec::Int8, C, KH, KW);
    LT out = euTensor(outAddr, v.res, C, 1, B);
    std::vector<int64_t> x(size_t(C) * IH * IW), w(size_t(C) * KH * KW);
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = randomInt(rng, -128, 127);
      in.put(m, 0, uint32_t(i / (IH * IW)), uint32_t(i / IW % IH),
             uint32_t(i % IW), uint64_t(x[i]));
    }
    for (size_t i = 0; i < w.size(); ++i) {
      w[i] = randomInt(rng, -128, 127);
      wt.put(m, 0, uint32_t(i / (KH * KW)), uint32_t(i / KW % KH),
             uint32_t(i % KW), uint64_t(w[i]));
    }
    putBoxes(m, boxAddr, boxes);
    auto cmd = roiCmd(v.eu, Prec::Int8, v.res, 1, C, IH, IW, KH, KW, B);
    cmd.opd1_sign = 1;
    cmd.opd0_addr = inAddr;
    cmd.res0_addr = outAddr;
    cmd.opd3_addr = boxAddr;
    cmd.opd2_n_str = v.mode;
    cmd.res1_addr = v.shift;
    cmd.opd2_const = v.exceptConst;
    cmd.opd2_addr = v.exceptConst ? uint8_t(int8_t(v.except)) : 0xFF;
    if (v.eu == 5) {
      cmd.opd1_addr = wAddr;
    } else if (v.eu == 6) {
      cmd.opd1_const = 1;
      cmd.opd1_addr = uint8_t(int8_t(v.mul));
    }
    runTiu(cmd, m);
    int64_t except = v.exceptConst ? v.except : 0;
    for (uint32_t b = 0; b < B; ++b)
      for (uint32_t c = 0; c < C; ++c) {
        __int128 acc = v.eu == 7 ? -1000 : 0;
        for (uint32_t ky = 0; ky < KH; ++ky)
          for (uint32_t kx = 0; kx < KW; ++kx) {
            int64_t y = boxes[b].y0 + int64_t(ky),
                    xx = boxes[b].x0 + int64_t(kx);
            int64_t val =
                roiInside(boxes[b], y, xx, IH, IW)
                    ? x[(size_t(c) * IH + size_t(y)) * IW + size_t(xx)]
                    : except;
            if (v.eu == 7)
              acc = std::max<__int128>(acc, val);
            else if (v.eu == 5)
              acc += val * w[size_t(c) * KH * KW + ky * KW + kx];
            else
              acc += val;
          }
        if (v.eu == 6)
          acc *= v.mul;
        if (v.eu != 7)
          acc = shiftRound(acc, v.shift, v.mode);
        int64_t want = int64_t(satTo(acc, v.res, true));
        ASSERT_EQ(asInt(out.get(m, 0, c, 0, b), v.res, true), want)
            << "box " << b << " c " << c;
      }
  }
}

//===----------------------------------------------------------------------===//
// CONV with int4 / int16 / int32 operands
//===----------------------------------------------------------------------===//

struct IntConv : ConvGeom {
  Prec in = Prec::Int16, w = Prec::Int16, res = Prec::Int32, zp = Prec::Int8;
  bool inS = true, wS = true, zpS = true;
  unsigned eu = 0, mode = 0, shift = 0;
  int64_t bias = 0;
  bool relu = false, zpConst = false;
  bool longForm = true;
  int64_t zpImm = 0;
  int64_t inLo = -32768, inHi = 32767, wLo = -32768, wHi = 32767;
  int64_t zpLo = -5, zpHi = 5;
  /// Inputs at inLo / inHi and weights at wHi instead of random values.
  bool extremes = false;

  /// This file's base case differs from ConvGeom's: a 5x4 input, 3 output
  /// channels, padded at the top and right.
  IntConv() {
    iw = 4;
    oc = 3;
    padT = 1;
    padR = 1;
  }
  /// IC_PARALLEL of the weight type (isa/docs/bm1684x.md 3.4 and ChipParams).
  uint32_t icp() const {
    switch (w) {
    case Prec::Int4:
      return 128;
    case Prec::Int8:
      return 64;
    case Prec::Int16:
      return 32;
    default:
      return 1;
    }
  }
};

int64_t randomVal(std::mt19937 &rng, int64_t lo, int64_t hi) {
  return randomInt(rng, lo, hi);
}

void checkIntConv(const IntConv &k, unsigned seed) {
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(seed);
  const uint32_t inAddr = laddr(0, 0), wAddr = laddr(0, 0x10000),
                 outAddr = laddr(0, 0x20000), zpAddr = laddr(0, 0x30000),
                 padAddr = laddr(0, 0x31000);
  LT in = euTensor(inAddr, k.in, k.ic, k.ih, k.iw);
  LT out = euTensor(outAddr, k.res, k.oc, k.oh(), k.ow());
  ASSERT_LE(k.oc, kLanes); // weights: output channel o in lane o
  std::vector<int64_t> x(size_t(k.n) * k.ic * k.ih * k.iw);
  for (uint32_t n = 0; n < k.n; ++n)
    for (uint32_t c = 0; c < k.ic; ++c)
      for (uint32_t y = 0; y < k.ih; ++y)
        for (uint32_t xx = 0; xx < k.iw; ++xx) {
          // Half of the channels small so that not every sum saturates.
          int64_t v = c % 2 ? randomVal(rng, std::max<int64_t>(k.inLo, -100),
                                        std::min<int64_t>(k.inHi, 100))
                            : randomVal(rng, k.inLo, k.inHi);
          if (k.extremes)
            v = (y + xx) % 3 ? k.inLo : k.inHi;
          x[((size_t(n) * k.ic + c) * k.ih + y) * k.iw + xx] = v;
          in.put(m, n, c, y, xx, uint64_t(v));
        }
  // Weights: oc in lane oc, [ic / P][kh][kw][ic % P] in its slot.
  std::vector<int64_t> w(size_t(k.oc) * k.ic * k.kh * k.kw);
  uint32_t P = k.icp();
  for (uint32_t o = 0; o < k.oc; ++o)
    for (uint32_t i = 0; i < k.ic; ++i)
      for (uint32_t ky = 0; ky < k.kh; ++ky)
        for (uint32_t kx = 0; kx < k.kw; ++kx) {
          int64_t v = k.extremes ? k.wHi : randomVal(rng, k.wLo, k.wHi);
          w[((size_t(o) * k.ic + i) * k.kh + ky) * k.kw + kx] = v;
          uint64_t e = uint64_t(i / P) * k.kh * k.kw * P +
                       (uint64_t(ky) * k.kw + kx) * P + i % P;
          putLane(m, o, wAddr & (kLaneBytes - 1), e, k.w, uint64_t(v));
        }
  // Kernel zero points (1, ic, 1, 1), one per channel slot; pad / insert
  // pairs (1, ic, 1, 2) compact in the input type.
  std::vector<int64_t> zps(k.ic), padV(k.ic), insV(k.ic);
  LT zpT{zpAddr, k.zp, 0, 1, 0, 0};
  LT padsT = compactTensor(padAddr, k.in, k.ic, 1, 2);
  for (uint32_t c = 0; c < k.ic; ++c) {
    zps[c] = k.eu != 0   ? 0
             : k.zpConst ? k.zpImm
                         : randomVal(rng, k.zpLo, k.zpHi);
    zpT.put(m, 0, c, 0, 0, uint64_t(zps[c]));
    int64_t lo = std::max<int64_t>(k.inLo, k.inS ? -100 : 0);
    padV[c] =
        k.eu != 0 ? 0 : randomVal(rng, lo, std::min<int64_t>(k.inHi, 100));
    insV[c] =
        k.eu != 0 ? 0 : randomVal(rng, lo, std::min<int64_t>(k.inHi, 100));
    padsT.put(m, 0, c, 0, 0, uint64_t(padV[c]));
    padsT.put(m, 0, c, 0, 1, uint64_t(insV[c]));
  }
  bool resS = k.inS || k.wS || k.zpS;
  std::vector<int64_t> old;
  if (k.resAdd)
    for (uint32_t n = 0; n < k.n; ++n)
      for (uint32_t o = 0; o < k.oc; ++o)
        for (uint32_t y = 0; y < k.oh(); ++y)
          for (uint32_t xx = 0; xx < k.ow(); ++xx) {
            int64_t v = randomVal(rng, resS ? -50 : 0, 50);
            out.put(m, n, o, y, xx, uint64_t(v));
            old.push_back(v);
          }

  auto fill = [&](auto &c) {
    c.tsk_typ = 0;
    c.tsk_eu_typ = k.eu;
    c.opd0_prec = uint64_t(k.in);
    c.res0_prec = uint64_t(k.res);
    c.opd0_sign = k.inS;
    c.opd1_sign = k.wS;
    c.opd2_sign = k.zpS;
    setConvGeometry(c, k, inAddr, wAddr, outAddr);
    if (k.eu != 0) {
      c.opd2_const = c.opd3_const = 1;
      c.opd2_addr = uint16_t(int16_t(k.bias));
      c.opd3_addr = k.shift;
    } else {
      c.opd2_const = k.zpConst;
      c.opd2_addr = k.zpConst ? uint32_t(k.zpImm) : zpAddr;
      c.opd3_addr = padAddr;
    }
  };
  if (k.longForm) {
    isa::cmd::TiuLong c;
    fill(c);
    c.opd1_prec = uint64_t(k.w);
    c.opd2_prec = uint64_t(k.zp);
    c.opd2_n_str = k.mode;
    c.relu = k.relu;
    c.opd0_n = k.n;
    runTiu(c, m);
  } else {
    ASSERT_EQ(k.in, k.w);
    ASSERT_EQ(k.zp, Prec::Int8); // what the short form implies (4.5)
    ASSERT_EQ(k.mode, 0u);
    isa::cmd::SConv c;
    c.cmd_short = 1;
    fill(c);
    runTiu(c, m);
  }

  size_t oi = 0;
  for (uint32_t n = 0; n < k.n; ++n)
    for (uint32_t o = 0; o < k.oc; ++o)
      for (uint32_t oy = 0; oy < k.oh(); ++oy)
        for (uint32_t ox = 0; ox < k.ow(); ++ox) {
          __int128 acc = 0;
          for (uint32_t i = 0; i < k.ic; ++i)
            for (uint32_t ky = 0; ky < k.kh; ++ky)
              for (uint32_t kx = 0; kx < k.kw; ++kx) {
                // Virtual input: pads, then rows/columns with inserted values.
                int64_t vy =
                    int64_t(oy) * k.sh + int64_t(ky) * k.dh - int64_t(k.padT);
                int64_t vx =
                    int64_t(ox) * k.sw + int64_t(kx) * k.dw - int64_t(k.padL);
                int64_t realH = int64_t(k.ih - 1) * (k.insH + 1) + 1;
                int64_t realW = int64_t(k.iw - 1) * (k.insW + 1) + 1;
                int64_t xv;
                if (vy < 0 || vx < 0 || vy >= realH || vx >= realW)
                  xv = padV[i];
                else if (vy % (k.insH + 1) || vx % (k.insW + 1))
                  xv = insV[i];
                else
                  xv = x[((size_t(n) * k.ic + i) * k.ih +
                          size_t(vy / (k.insH + 1))) *
                             k.iw +
                         size_t(vx / (k.insW + 1))];
                uint32_t wy = k.rotate ? k.kh - 1 - ky : ky;
                uint32_t wx = k.rotate ? k.kw - 1 - kx : kx;
                int64_t wv =
                    w[((size_t(o) * k.ic + i) * k.kh + wy) * k.kw + wx];
                acc += __int128(xv) * (wv - zps[i]);
              }
          if (k.eu != 0)
            acc = shiftRound(acc + k.bias, k.shift, k.mode);
          if (k.resAdd)
            acc += old[oi++];
          if ((k.relu || k.eu == 2) && acc < 0)
            acc = 0;
          int64_t want = int64_t(satTo(acc, k.res, resS));
          ASSERT_EQ(asInt(out.get(m, n, o, oy, ox), k.res, resS), want)
              << n << " " << o << " " << oy << " " << ox;
        }
}

TEST(FuncConvWide, Int16ShortFormSaturatesInt32) {
  IntConv k;
  k.longForm = false;
  k.res = Prec::Int32;
  k.sh = 2;
  k.padT = k.padL = 1;
  checkIntConv(k, 1);
  // int16 result, unsigned input, inserted zeros and dilation.
  k.res = Prec::Int16;
  k.inS = false;
  k.inLo = 0;
  k.inHi = 65535;
  k.insW = 1;
  k.dh = 2;
  k.padB = 2;
  checkIntConv(k, 2);
}

TEST(FuncConvWide, Int32SignedTimesUnsignedExactAndSaturated) {
  IntConv k;
  k.in = k.w = Prec::Int32;
  k.zp = Prec::Int32;
  k.inLo = std::numeric_limits<int32_t>::min();
  k.inHi = std::numeric_limits<int32_t>::max();
  // Unsigned 32-bit weights up to 2^32 - 1: products need 64 bits, sums 66.
  k.wS = false;
  k.wLo = 0;
  k.wHi = std::numeric_limits<uint32_t>::max();
  k.zpS = true;
  k.zpLo = -1000;
  k.zpHi = 1000;
  k.ic = 2;
  k.kh = k.kw = 2;
  k.resAdd = true;
  checkIntConv(k, 3);
  // Small values only: exact sums that fit; immediate zero point; relu.
  k.inLo = -1000;
  k.inHi = 1000;
  k.wHi = 3000;
  k.zpConst = true;
  k.zpImm = 7;
  k.relu = true;
  k.rotate = true;
  checkIntConv(k, 4);
  // Extremes: (-2^31) * (2^32 - 1 - (-2)) is beyond int64 for one product,
  // and eight of them are beyond int64 as a sum.
  k.extremes = true;
  k.inLo = std::numeric_limits<int32_t>::min();
  k.inHi = std::numeric_limits<int32_t>::max();
  k.wHi = std::numeric_limits<uint32_t>::max();
  k.zpImm = -2;
  k.relu = false;
  k.resAdd = false;
  checkIntConv(k, 5);
}

TEST(FuncConvWide, Int8TimesInt16Mixed) {
  IntConv k;
  k.in = Prec::Int8;
  k.inLo = -128;
  k.inHi = 127;
  k.w = Prec::Int16; // 32IC weight layout, exact (wide) accumulation
  k.zp = Prec::Int16;
  k.zpLo = -300;
  k.zpHi = 300;
  k.ic = 35; // two IC blocks of 32
  k.kh = 2;
  k.kw = 1;
  k.res = Prec::Int16;
  checkIntConv(k, 5);
}

TEST(FuncConvWide, Int4RoundingTiesAndZeroPoints) {
  IntConv k;
  k.in = k.w = Prec::Int4;
  k.inLo = -8;
  k.inHi = 7;
  k.wS = false;
  k.wLo = 0;
  k.wHi = 15;
  k.zp = Prec::Int8;
  k.zpLo = -5;
  k.zpHi = 9;
  k.ic = 130; // two 128-channel blocks, nibble-packed
  k.ih = 3;
  k.iw = 5; // odd: rows straddle bytes
  k.kh = k.kw = 2;
  k.oc = 5;
  k.res = Prec::Int16;
  checkIntConv(k, 6); // conv.normal with kernel zero points and pads
  // int4 result (saturating), unsigned input, short form.
  IntConv s = k;
  s.longForm = false;
  s.w = Prec::Int4;
  s.wS = true;
  s.wLo = -8;
  s.wHi = 7;
  s.inS = false;
  s.inLo = 0;
  s.inHi = 15;
  s.ic = 5;
  s.res = Prec::Int4;
  checkIntConv(s, 7);
  // wrq / wrqrelu: bias + shift by 1 makes every odd sum a tie.
  for (unsigned mode : {0u, 1u})
    for (unsigned eu : {1u, 2u}) {
      IntConv q = k;
      q.eu = eu;
      q.mode = mode;
      q.shift = 1;
      q.bias = -3;
      q.res = Prec::Int8;
      q.resAdd = true;
      q.padT = q.padR = 0;
      checkIntConv(q, 8 + mode + 2 * eu);
    }
}

//===----------------------------------------------------------------------===//
// RQ&DQ rq2 / dq2
//===----------------------------------------------------------------------===//

isa::cmd::SRQDQ rqCmd(unsigned eu, Prec in, bool inS, Prec res, bool resS,
                      uint32_t c, uint32_t h, uint32_t w) {
  isa::cmd::SRQDQ q;
  q.cmd_short = 1;
  q.tsk_typ = 4;
  q.tsk_eu_typ = eu;
  q.opd0_prec = uint64_t(in);
  q.opd0_sign = inS;
  q.res0_prec = uint64_t(res);
  q.opd2_sign = resS;
  q.res0_n = 1;
  q.res0_c = c;
  q.res0_h = h;
  q.res0_w = w;
  return q;
}

uint16_t halfBits(float v, Prec p) { return uint16_t(fToBits(v, p)); }

/// fp32 -> integer per ROUND_MODE 0 / 1 and saturation, written out.
int64_t refFloatToInt(float v, unsigned mode, Prec res, bool resS) {
  double r = mode == 0 ? std::nearbyint(double(v)) : std::round(double(v));
  double lo = double(satTo(std::numeric_limits<int64_t>::min(), res, resS));
  double hi = double(satTo(std::numeric_limits<int64_t>::max(), res, resS));
  return int64_t(std::min(std::max(r, lo), hi));
}

TEST(FuncRqDq2, Rq2HalfParamsTiesAndSaturation) {
  const uint32_t C = 3, H = 2, W = 6;
  // x * scale + offset lands on .5 for odd x (ties), beyond int8 for 1000.
  const float xs[] = {3, 5, -3, -5, 1000, -1000, 7, 0.25f, -0.75f, 2, 9, -11};
  struct Variant {
    Prec in, res;
    bool resS, immediate;
    unsigned mode;
  };
  const Variant variants[] = {
      {Prec::Fp16, Prec::Int8, true, false, 0},
      {Prec::Fp16, Prec::Int8, true, false, 1},
      {Prec::Bf16, Prec::Int8, false, false, 1},
      {Prec::Bf16, Prec::Int16, true, true, 0},
      {Prec::Fp16, Prec::Int4, true, true, 1},
  };
  const uint32_t inAddr = laddr(0, 0), pAddr = laddr(0, 0x1000),
                 outAddr = laddr(0, 0x2000);
  for (const Variant &v : variants) {
    SCOPED_TRACE(std::string(isa::precName(v.in)) + " -> " +
                 isa::precName(v.res) + (v.resS ? "" : " unsigned") + " mode " +
                 std::to_string(v.mode));
    MachineState m(isa::ChipParams::bm1684x());
    LT in = euTensor(inAddr, v.in, C, H, W);
    LT out = euTensor(outAddr, v.res, C, H, W);
    std::vector<float> scale(C), offset(C);
    for (uint32_t c = 0; c < C; ++c) {
      scale[c] = v.immediate ? 0.5f : 0.5f * float(c + 1);
      offset[c] = v.immediate ? 0.0f : (c == 2 ? 0.25f : float(c));
      uint32_t word = halfBits(scale[c], v.in) |
                      (uint32_t(halfBits(offset[c], v.in)) << 16);
      // (1, C, 1, 1) EU-aligned: one int32 word at each channel's slot.
      putLane(m, c, pAddr & (kLaneBytes - 1), 0, Prec::Int32, word);
      for (uint32_t i = 0; i < H * W; ++i)
        in.put(m, 0, c, i / W, i % W, fToBits(xs[i], v.in));
    }
    auto q = rqCmd(2, v.in, true, v.res, v.resS, C, H, W);
    q.opd0_addr = inAddr;
    q.res0_addr = outAddr;
    q.opd2_n_str = v.mode;
    if (v.immediate) {
      q.opd1_const = 1;
      q.opd1_addr = halfBits(scale[0], v.in) |
                    (uint32_t(halfBits(offset[0], v.in)) << 16);
    } else {
      q.opd1_addr = pAddr;
    }
    runTiu(q, m);
    for (uint32_t c = 0; c < C; ++c)
      for (uint32_t i = 0; i < H * W; ++i) {
        float xv = bitsToF(fToBits(xs[i], v.in), v.in);
        float prod = xv * scale[c];
        float sum = prod + offset[c];
        ASSERT_EQ(asInt(out.get(m, 0, c, i / W, i % W), v.res, v.resS),
                  refFloatToInt(sum, v.mode, v.res, v.resS))
            << "c " << c << " x " << xv;
      }
  }
}

TEST(FuncRqDq2, Dq2HalfScaleInt16ZeroPoint) {
  const uint32_t C = 4, H = 1, W = 7;
  struct Variant {
    Prec in;
    bool inS;
    Prec res;
    bool immediate;
  };
  const Variant variants[] = {
      {Prec::Int8, true, Prec::Fp16, false},
      {Prec::Int16, false, Prec::Bf16, false},
      {Prec::Int16, true, Prec::Fp16, true},
      {Prec::Int4, true, Prec::Bf16, false},
  };
  const uint32_t inAddr = laddr(0, 0), pAddr = laddr(0, 0x1000),
                 outAddr = laddr(0, 0x2000);
  for (const Variant &v : variants) {
    SCOPED_TRACE(std::string(isa::precName(v.in)) + (v.inS ? "" : "u") +
                 " -> " + isa::precName(v.res));
    MachineState m(isa::ChipParams::bm1684x());
    std::mt19937 rng(55);
    LT in = euTensor(inAddr, v.in, C, H, W);
    LT out = euTensor(outAddr, v.res, C, H, W);
    unsigned bits = bitsOf(v.in);
    int64_t lo = v.inS ? -(int64_t(1) << (bits - 1)) : 0;
    int64_t hi =
        v.inS ? (int64_t(1) << (bits - 1)) - 1 : (int64_t(1) << bits) - 1;
    std::vector<int64_t> x(C * W), zp(C);
    std::vector<float> scale(C);
    for (uint32_t c = 0; c < C; ++c) {
      zp[c] = v.immediate ? -300 : randomInt(rng, v.inS ? -40 : 0, 40);
      scale[c] = v.immediate ? 0.375f : float(c + 1) * 0.125f + 1.0f / 1024;
      uint32_t word = uint32_t(uint16_t(zp[c])) |
                      (uint32_t(halfBits(scale[c], v.res)) << 16);
      putLane(m, c, pAddr & (kLaneBytes - 1), 0, Prec::Int32, word);
      for (uint32_t i = 0; i < W; ++i) {
        x[c * W + i] = randomInt(rng, lo, hi);
        in.put(m, 0, c, 0, i, uint64_t(x[c * W + i]));
      }
    }
    auto q = rqCmd(5, v.in, v.inS, v.res, true, C, H, W);
    q.opd0_addr = inAddr;
    q.res0_addr = outAddr;
    if (v.immediate) {
      q.opd1_const = 1;
      q.opd1_addr = uint32_t(uint16_t(zp[0])) |
                    (uint32_t(halfBits(scale[0], v.res)) << 16);
    } else {
      q.opd1_addr = pAddr;
    }
    runTiu(q, m);
    for (uint32_t c = 0; c < C; ++c)
      for (uint32_t i = 0; i < W; ++i) {
        float s = bitsToF(halfBits(scale[c], v.res), v.res);
        float want = float(x[c * W + i] - zp[c]) * s;
        ASSERT_EQ(out.get(m, 0, c, 0, i), fToBits(want, v.res))
            << "c " << c << " x " << x[c * W + i];
      }
  }
}

TEST(FuncRqDq2, RejectsTypesOutsideTheHalfModes) {
  MachineState m(isa::ChipParams::bm1684x());
  auto q = rqCmd(2, Prec::Fp32, true, Prec::Int8, true, 1, 1, 4);
  q.opd1_const = 1;
  EXPECT_THROW(runTiu(q, m), Error);
  auto d = rqCmd(5, Prec::Int8, true, Prec::Fp32, true, 1, 1, 4);
  d.opd1_const = 1;
  try {
    runTiu(d, m);
    FAIL() << "dq2 to fp32 accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("dq2 produces fp16/bf16"),
              std::string::npos)
        << e.what();
  }
}

//===----------------------------------------------------------------------===//
// INT4 GDMA
//===----------------------------------------------------------------------===//

constexpr uint64_t kMaskAll32 = 0xFFFFFFFF;

uint8_t ddrNib(MachineState &m, uint64_t base, uint64_t e) {
  uint8_t b;
  m.gmem.read(base + e / 2, &b, 1);
  return (e & 1) ? b >> 4 : b & 0xF;
}
void putDdrNib(MachineState &m, uint64_t base, uint64_t e, uint8_t v) {
  uint8_t b;
  m.gmem.read(base + e / 2, &b, 1);
  b = (e & 1) ? uint8_t((b & 0x0F) | (v << 4)) : uint8_t((b & 0xF0) | v);
  m.gmem.write(base + e / 2, &b, 1);
}
void fillDdr(MachineState &m, uint64_t a, size_t bytes, uint8_t v) {
  std::vector<uint8_t> buf(bytes, v);
  m.gmem.write(a, buf.data(), bytes);
}
void fillLanes(MachineState &m, uint64_t off, size_t bytes, uint8_t v) {
  for (unsigned lane = 0; lane < kLanes; ++lane)
    std::memset(m.lmem.at(lane, off, bytes), v, bytes);
}

template <typename Cmd> void setAddrs(Cmd &c, uint64_t src, uint64_t dst) {
  c.src_start_addr_l32 = src & 0xFFFFFFFF;
  c.src_start_addr_h8 = src >> 32;
  c.dst_start_addr_l32 = dst & 0xFFFFFFFF;
  c.dst_start_addr_h8 = dst >> 32;
}

isa::cmd::DmaTensor int4Cmd(isa::GdmaType type, unsigned sp) {
  isa::cmd::DmaTensor c;
  c.cmd_type = uint64_t(type);
  c.cmd_special_function = sp;
  c.src_data_format = uint64_t(isa::GdmaFormat::Int4);
  c.stride_enable = 1;
  c.localmem_mask_l32 = c.localmem_mask_h32 = kMaskAll32;
  return c;
}

uint8_t tag4(uint32_t n, uint32_t c, uint32_t h, uint32_t w) {
  return uint8_t((n * 7 + c * 5 + h * 3 + w + 1) & 0xF);
}

TEST(FuncGdmaInt4, TensorOddWidthsStridesAndLaneMask) {
  MachineState m(isa::ChipParams::bm1684x());
  const uint32_t N = 2, C = 3, H = 3, W = 5;
  // DDR source: W odd, H stride 5 (rows straddle bytes), C stride 17.
  const uint64_t src = kDdrBase + 0x100;
  const int64_t sns = 52, scs = 17, shs = 5;
  fillDdr(m, src, 64, 0x99);
  for (uint32_t n = 0; n < N; ++n)
    for (uint32_t c = 0; c < C; ++c)
      for (uint32_t h = 0; h < H; ++h)
        for (uint32_t w = 0; w < W; ++w)
          putDdrNib(m, src, uint64_t(n * sns + c * scs + h * shs + w),
                    tag4(n, c, h, w));
  // Local destination from lane 62 (channel 2 wraps to lane 0, slot 1),
  // odd strides; lane 63 (channel 1) masked off.
  const uint32_t dstOff = 0x101;
  LT dst{laddr(62, dstOff), Prec::Int4, 31, 15, 5, 1};
  fillLanes(m, dstOff, 64, 0xAA);
  auto cmd = int4Cmd(isa::GdmaType::Tensor, 0);
  setAddrs(cmd, src, kLmemBase + dst.addr);
  cmd.src_nsize = cmd.dst_nsize = N;
  cmd.src_csize = cmd.dst_csize = C;
  cmd.src_hsize = cmd.dst_hsize = H;
  cmd.src_wsize = cmd.dst_wsize = W;
  cmd.src_nstride = sns;
  cmd.src_cstride = scs;
  cmd.src_hstride = shs;
  cmd.src_wstride = 1;
  cmd.dst_nstride = dst.ns;
  cmd.dst_cstride = dst.cs;
  cmd.dst_hstride = dst.hs;
  cmd.dst_wstride = dst.ws;
  cmd.localmem_mask_h32 = kMaskAll32 & ~(uint64_t(1) << 31); // lane 63
  runGdma(cmd, m);
  // Every nibble of the first 64 bytes of lanes 62, 63 and 0: either a
  // moved element or the untouched 0xA.
  for (unsigned lane : {62u, 63u, 0u}) {
    std::vector<int> want(128, 0xA);
    for (uint32_t n = 0; n < N; ++n)
      for (uint32_t c = 0; c < C; ++c) {
        if (dst.lane(c) != lane || lane == 63)
          continue;
        for (uint32_t h = 0; h < H; ++h)
          for (uint32_t w = 0; w < W; ++w)
            want[dst.elem(n, c, h, w)] = tag4(n, c, h, w);
      }
    for (uint64_t e = 0; e < 128; ++e)
      ASSERT_EQ(getLane(m, lane, dstOff, e, Prec::Int4), uint64_t(want[e]))
          << "lane " << lane << " nibble " << e;
  }
  // Work: 90 nibbles are 45 bytes.
  GdmaWork wk = gdmaWork(decodeGdma(isa::encode(cmd), m.chip), m.chip);
  EXPECT_EQ(wk.bytes, 45u);
  EXPECT_EQ(wk.ddrReadBytes, 45u);
}

TEST(FuncGdmaInt4, LocalToDdrStridedWAndFill) {
  MachineState m(isa::ChipParams::bm1684x());
  const uint32_t C = 2, H = 2, W = 5;
  LT src = compactTensor(laddr(5, 0x40), Prec::Int4, C, H, W);
  for (uint32_t c = 0; c < C; ++c)
    for (uint32_t h = 0; h < H; ++h)
      for (uint32_t w = 0; w < W; ++w)
        src.put(m, 0, c, h, w, tag4(0, c, h, w));
  // DDR destination: every third nibble, rows 15 apart, channels 31.
  const uint64_t dst = kDdrBase + 0x2000;
  const int64_t cs = 31, hs = 15, ws = 3;
  fillDdr(m, dst, 48, 0x55);
  auto cmd = int4Cmd(isa::GdmaType::Tensor, 0);
  setAddrs(cmd, kLmemBase + src.addr, dst);
  cmd.src_nsize = cmd.dst_nsize = 1;
  cmd.src_csize = cmd.dst_csize = C;
  cmd.src_hsize = cmd.dst_hsize = H;
  cmd.src_wsize = cmd.dst_wsize = W;
  cmd.src_cstride = src.cs;
  cmd.src_hstride = src.hs;
  cmd.src_wstride = 1;
  cmd.dst_cstride = cs;
  cmd.dst_hstride = hs;
  cmd.dst_wstride = ws;
  runGdma(cmd, m);
  std::vector<int> want(96, 0x5);
  for (uint32_t c = 0; c < C; ++c)
    for (uint32_t h = 0; h < H; ++h)
      for (uint32_t w = 0; w < W; ++w)
        want[c * cs + h * hs + w * ws] = tag4(0, c, h, w);
  for (uint64_t e = 0; e < 96; ++e)
    ASSERT_EQ(ddrNib(m, dst, e), want[e]) << "nibble " << e;

  // Fill: constant 0x1B keeps its low nibble; (1, 1, 3, 5) with row
  // stride 7, neighbours untouched.
  const uint64_t fdst = kDdrBase + 0x3001;
  fillDdr(m, fdst, 16, 0x66);
  auto fill = int4Cmd(isa::GdmaType::Tensor, 0);
  fill.fill_constant_en = 1;
  fill.constant_value = 0x1B;
  setAddrs(fill, 0, fdst);
  fill.dst_nsize = fill.dst_csize = 1;
  fill.dst_hsize = 3;
  fill.dst_wsize = 5;
  fill.dst_hstride = 7;
  fill.dst_wstride = 1;
  runGdma(fill, m);
  for (uint64_t e = 0; e < 32; ++e) {
    bool in = e < 21 && e % 7 < 5;
    ASSERT_EQ(ddrNib(m, fdst, e), in ? 0xB : 0x6) << "nibble " << e;
  }
}

TEST(FuncGdmaInt4, MatrixRoundTripOddColumnsAndGeneralCopy) {
  MachineState m(isa::ChipParams::bm1684x());
  const uint32_t R = 3, K = 7, Wb = 3; // blocks of 3 columns: C = 3
  const uint64_t ddr = kDdrBase + 0x5000, pitch = 9;
  fillDdr(m, ddr, 32, 0);
  for (uint32_t r = 0; r < R; ++r)
    for (uint32_t k = 0; k < K; ++k)
      putDdrNib(m, ddr, r * pitch + k, tag4(0, r, 0, k));
  // S2L: local matrix(3): row r -> N (stride 5), block -> C (stride 3 in
  // each lane's slot), all odd so elements straddle bytes.
  const uint32_t local = laddr(1, 0x800);
  LT lt{local, Prec::Int4, 5, 3, 0, 1};
  fillLanes(m, 0x800, 16, 0xCC);
  auto s2l = int4Cmd(isa::GdmaType::Matrix, 0);
  setAddrs(s2l, ddr, kLmemBase + local);
  s2l.src_hsize = R;
  s2l.src_wsize = K;
  s2l.src_hstride = pitch;
  s2l.dst_nsize = R;
  s2l.dst_csize = 3;
  s2l.dst_wsize = Wb;
  s2l.dst_nstride = lt.ns;
  s2l.dst_cstride = lt.cs;
  runGdma(s2l, m);
  for (unsigned lane = 1; lane < 4; ++lane) {
    std::vector<int> want(32, 0xC);
    for (uint32_t r = 0; r < R; ++r)
      for (uint32_t k = 0; k < K; ++k)
        if (lt.lane(k / Wb) == lane)
          want[lt.elem(r, k / Wb, 0, k % Wb)] = tag4(0, r, 0, k);
    for (uint64_t e = 0; e < 32; ++e)
      ASSERT_EQ(getLane(m, lane, 0x800, e, Prec::Int4), uint64_t(want[e]))
          << "lane " << lane << " nibble " << e;
  }
  // L2S back into a DDR matrix with an odd row stride of 11.
  const uint64_t back = kDdrBase + 0x6000;
  fillDdr(m, back, 32, 0x77);
  auto l2s = int4Cmd(isa::GdmaType::Matrix, 0);
  setAddrs(l2s, kLmemBase + local, back);
  l2s.src_nsize = R;
  l2s.src_csize = 3;
  l2s.src_wsize = Wb;
  l2s.src_nstride = lt.ns;
  l2s.src_cstride = lt.cs;
  l2s.dst_hsize = R;
  l2s.dst_wsize = K;
  l2s.dst_hstride = 11;
  runGdma(l2s, m);
  for (uint64_t e = 0; e < 64; ++e) {
    bool in = e < 3 * 11 && e % 11 < K;
    ASSERT_EQ(ddrNib(m, back, e),
              in ? tag4(0, uint32_t(e / 11), 0, uint32_t(e % 11)) : 0x7)
        << "nibble " << e;
  }

  // General copy of 7 nibbles: the high nibble of the 4th byte survives.
  isa::cmd::SDmaGeneral g;
  g.cmd_short = 1;
  g.cmd_type = uint64_t(isa::GdmaType::General);
  g.src_data_format = uint64_t(isa::GdmaFormat::Int4);
  g.src_cstride = 7;
  g.localmem_mask_l32 = g.localmem_mask_h32 = kMaskAll32;
  const uint64_t gsrc = kDdrBase + 0x7000, gdst = kDdrBase + 0x7100;
  fillDdr(m, gsrc, 8, 0);
  for (uint64_t e = 0; e < 8; ++e)
    putDdrNib(m, gsrc, e, uint8_t(e + 1));
  fillDdr(m, gdst, 8, 0xEE);
  setAddrs(g, gsrc, gdst);
  runGdma(g, m);
  for (uint64_t e = 0; e < 16; ++e)
    ASSERT_EQ(unsigned(ddrNib(m, gdst, e)), e < 7 ? unsigned(e + 1) : 0xEu)
        << "nibble " << e;
  // Fill into local memory through the general form.
  g.fill_constant_en = 1;
  g.constant_value = 0x3;
  fillLanes(m, 0x900, 8, 0xEE);
  setAddrs(g, 0, kLmemBase + laddr(4, 0x900));
  runGdma(g, m);
  for (uint64_t e = 0; e < 16; ++e)
    ASSERT_EQ(getLane(m, 4, 0x900, e, Prec::Int4), e < 7 ? 0x3u : 0xEu)
        << "nibble " << e;
}

TEST(FuncGdmaInt4, NcTransposeAndMaskedSelect) {
  MachineState m(isa::ChipParams::bm1684x());
  const uint32_t N = 2, C = 3, H = 1, W = 3;
  const uint64_t src = kDdrBase + 0x8000, dst = kDdrBase + 0x8100;
  fillDdr(m, src, 16, 0);
  for (uint32_t n = 0; n < N; ++n)
    for (uint32_t c = 0; c < C; ++c)
      for (uint32_t w = 0; w < W; ++w)
        putDdrNib(m, src, n * 9 + c * 3 + w, tag4(n, c, 0, w));
  fillDdr(m, dst, 16, 0xFF);
  auto t = int4Cmd(isa::GdmaType::Tensor, 1); // N <-> C
  setAddrs(t, src, dst);
  t.src_nsize = N;
  t.src_csize = C;
  t.src_hsize = H;
  t.src_wsize = W;
  t.src_nstride = 9;
  t.src_cstride = 3;
  t.src_hstride = 3;
  t.dst_nsize = C;
  t.dst_csize = N;
  t.dst_hsize = H;
  t.dst_wsize = W;
  t.dst_nstride = 6;
  t.dst_cstride = 3;
  t.dst_hstride = 3;
  runGdma(t, m);
  for (uint32_t c = 0; c < C; ++c)
    for (uint32_t n = 0; n < N; ++n)
      for (uint32_t w = 0; w < W; ++w)
        ASSERT_EQ(ddrNib(m, dst, c * 6 + n * 3 + w), tag4(n, c, 0, w));
  EXPECT_EQ(ddrNib(m, dst, 18), 0xF); // after the last element

  // masked_select of INT4 data with an INT4 mask: 5 of 9 selected, packed.
  const uint64_t data = kDdrBase + 0x9000, mask = kDdrBase + 0x9100,
                 out = kDdrBase + 0x9200;
  const uint8_t vals[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const uint8_t sel[9] = {1, 0, 1, 1, 0, 0, 8, 0, 1};
  fillDdr(m, data, 8, 0);
  fillDdr(m, mask, 8, 0);
  for (uint64_t e = 0; e < 9; ++e) {
    putDdrNib(m, data, e, vals[e]);
    putDdrNib(m, mask, e, sel[e]);
  }
  fillDdr(m, out, 8, 0xDD);
  isa::cmd::DmaMaskedSelect ms;
  ms.cmd_type = uint64_t(isa::GdmaType::MaskedSelect);
  ms.src_data_format = uint64_t(isa::GdmaFormat::Int4);
  ms.mask_data_format = uint64_t(isa::GdmaFormat::Int4);
  ms.src_nsize = ms.src_csize = ms.src_hsize = 1;
  ms.src_wsize = 9;
  ms.src_start_addr_l32 = data & 0xFFFFFFFF;
  ms.src_start_addr_h8 = data >> 32;
  ms.mask_start_addr_l32 = mask & 0xFFFFFFFF;
  ms.mask_start_addr_h8 = mask >> 32;
  ms.dst_start_addr_l32 = out & 0xFFFFFFFF;
  ms.dst_start_addr_h8 = out >> 32;
  ms.localmem_mask_l32 = ms.localmem_mask_h32 = kMaskAll32;
  runGdma(ms, m);
  const uint8_t want[6] = {1, 3, 4, 7, 9, 0xD};
  for (uint64_t e = 0; e < 6; ++e)
    ASSERT_EQ(ddrNib(m, out, e), want[e]) << "nibble " << e;
}

//===----------------------------------------------------------------------===//
// LAR and tsk 12 stay rejected, with engine, index and disassembly
//===----------------------------------------------------------------------===//

TEST(FuncDecodeExt, LarAndTask12AreRejectedWithContext) {
  namespace st = tpu::sim::simtest;
  const st::Shape shape{1, 64, 4, 4};
  const uint32_t a = st::laddr(0, 0), b = st::laddr(0, st::kBankBytes),
                 c = st::laddr(0, 2 * st::kBankBytes);
  // LAR: decodable layout, not executed.
  isa::cmd::Lar lar;
  lar.tsk_typ = 7;
  lar.tsk_eu_typ = 2;
  try {
    decodeTiu(isa::encode(lar));
    FAIL() << "LAR decoded";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("LAR (tsk 7) is not executed"),
              std::string::npos)
        << e.what();
  }
  {
    const std::string dis = isa::disassemble(isa::encode(lar));
    SimConfig cfg = SimConfig::defaults();
    Simulator sim(cfg, SimMode::Full);
    try {
      sim.runGroup({st::add(1, 0, c, a, b, shape, Prec::Int32),
                    isa::encode(lar), isa::makeTiuEnd(3, 0)},
                   std::vector<isa::RawCommand>());
      FAIL() << "LAR executed";
    } catch (const SimError &e) {
      std::string msg = e.what();
      EXPECT_EQ(e.kind(), SimError::Kind::UnknownCommand);
      for (const char *part :
           {"TIU command 1", "of group 0", "LAR", "not executed", dis.c_str()})
        EXPECT_NE(msg.find(part), std::string::npos)
            << "'" << part << "' missing from:\n"
            << msg;
    }
  }
  // tsk 12: no BM1684X layout; the stream stops at its head.
  isa::cmd::TiuLong t12;
  t12.cmd_id = 2;
  t12.tsk_typ = 12;
  try {
    decodeTiu(isa::encode(t12));
    FAIL() << "tsk 12 decoded";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("TIU task type 12"), std::string::npos)
        << e.what();
  }
  SimConfig cfg = SimConfig::defaults();
  Simulator sim(cfg, SimMode::Full);
  std::vector<uint8_t> tiu =
      isa::packBuffer({st::add(1, 0, c, a, b, shape, Prec::Int32),
                       isa::encode(t12), isa::makeTiuEnd(3, 0)});
  try {
    sim.runGroup(tiu, std::vector<uint8_t>());
    FAIL() << "tsk 12 executed";
  } catch (const SimError &e) {
    std::string msg = e.what();
    EXPECT_EQ(e.kind(), SimError::Kind::UnknownCommand);
    for (const char *part : {"TIU command 1 (cmd_id 2) of group 0",
                             "unknown opcode", "tsk_typ=12", "raw head"})
      EXPECT_NE(msg.find(part), std::string::npos)
          << "'" << part << "' missing from:\n"
          << msg;
  }
}

} // namespace
