//===- FuncConvTest.cpp - CONV kernel against a nested-loop reference -----===//
//
// Every test builds an sCONV (or long CONV) with the isa typed structs, runs
// it through encode + decodeTiu + executeTiu, and compares with a reference
// written here from the documented formulas: output position (oy, ox) reads
// virtual input row oy*stride + ky*dilation - pad_top; the virtual input has
// ins0 inserted values between real rows/columns; weights sit per output
// channel in the 64IC / 32IC / 1IC layouts of isa/docs/bm1684x.md 3.4.
//
//===----------------------------------------------------------------------===//

#include "FuncTestUtil.h"

#include <gtest/gtest.h>

// The float reference adds rounded products in a fixed order; keep the
// compiler from fusing them.
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

using namespace tpu;
using namespace tpu::sim;
using namespace tpu::sim::test;

namespace {

struct ConvCase : ConvGeom {
  Prec in = Prec::Int8, res = Prec::Int32;
  bool inSigned = true, wSigned = true, zpSigned = true;
  /// Kernel zero points all 0 (symmetric weights, as INT8 models have).
  bool zeroZps = false;
  uint32_t inAddr = laddr(0, 0), wAddr = laddr(0, 0x10000),
           outAddr = laddr(0, 0x20000), zpAddr = laddr(0, 0x30000),
           padAddr = laddr(0, 0x31000), biasAddr = laddr(0, 0x32000);

  unsigned icp() const {
    return in == Prec::Int8 ? 64 : (in == Prec::Fp32 ? 1 : 32);
  }
};

/// Offset (elements, from the weight base offset in the oc's lane) of
/// weight (oc, ic, ky, kx).
uint64_t weightElem(const ConvCase &k, uint32_t oc, uint32_t ic, uint32_t ky,
                    uint32_t kx) {
  unsigned start = k.wAddr >> kLaneShift;
  uint64_t slot = (start + oc) / kLanes;
  unsigned p = k.icp();
  uint64_t slotElems = (k.ic + p - 1) / p * k.kh * k.kw * p;
  return slot * slotElems + (ic / p) * k.kh * k.kw * p +
         (uint64_t(ky) * k.kw + kx) * p + ic % p;
}

uint8_t *weightPtr(MachineState &m, const ConvCase &k, uint32_t oc, uint32_t ic,
                   uint32_t ky, uint32_t kx) {
  unsigned start = k.wAddr >> kLaneShift;
  unsigned lane = (start + oc) % kLanes;
  uint32_t off = k.wAddr & (kLaneBytes - 1);
  return m.lmem.at(lane, off + weightElem(k, oc, ic, ky, kx) * bytesOf(k.in),
                   bytesOf(k.in));
}

/// The value the reference reads at virtual position (vy, vx) of channel
/// ic: a real element, an inserted value, or padding.
template <typename T, typename Real>
T virtualInput(const ConvCase &k, int64_t vy, int64_t vx, T pad, T ins,
               Real real) {
  int64_t y = vy - k.padT, x = vx - k.padL;
  int64_t realH = int64_t(k.ih - 1) * (k.insH + 1) + 1;
  int64_t realW = int64_t(k.iw - 1) * (k.insW + 1) + 1;
  if (y < 0 || x < 0 || y >= realH || x >= realW)
    return pad;
  if (y % (k.insH + 1) || x % (k.insW + 1))
    return ins;
  return real(uint32_t(y / (k.insH + 1)), uint32_t(x / (k.insW + 1)));
}

isa::cmd::SConv shortConv(const ConvCase &k) {
  isa::cmd::SConv c;
  c.cmd_short = 1;
  c.tsk_typ = 0;
  c.tsk_eu_typ = 0;
  c.opd0_sign = k.inSigned;
  c.opd1_sign = k.wSigned;
  c.opd2_sign = k.zpSigned;
  c.res0_prec = uint64_t(k.res);
  c.opd0_prec = uint64_t(k.in);
  setConvGeometry(c, k, k.inAddr, k.wAddr, k.outAddr);
  return c;
}

/// Fills every weight slot of `k` with random bytes (`seed`), before the
/// weights are written: where no weight lies (the channels past ic of a
/// last IC_PARALLEL group) they stay, so that a kernel reading them as
/// weights fails the sums.
void fillWeightSlots(MachineState &m, const ConvCase &k, unsigned seed) {
  unsigned p = k.icp();
  uint64_t slotBytes =
      uint64_t(k.ic + p - 1) / p * k.kh * k.kw * p * bytesOf(k.in);
  uint64_t slots =
      (uint64_t(k.wAddr >> kLaneShift) + k.oc + kLanes - 1) / kLanes;
  uint32_t off = k.wAddr & (kLaneBytes - 1);
  std::mt19937 junk(seed + 1000);
  for (unsigned lane = 0; lane < kLanes; ++lane) {
    uint8_t *at = m.lmem.at(lane, off, slots * slotBytes);
    for (uint64_t i = 0; i < slots * slotBytes; ++i)
      at[i] = uint8_t(randomInt(junk, 0, 255));
  }
}

/// Int8 conv: random input, weights, kernel zero points and pad pairs;
/// result compared exactly.
void checkIntConv(const ConvCase &k, unsigned seed) {
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(seed);
  Ref in = euRef(k.inAddr, Prec::Int8, k.n, k.ic, k.ih, k.iw);
  Ref out = euRef(k.outAddr, k.res, k.n, k.oc, k.oh(), k.ow());
  // Kernel zero point (1, ic, 1, 1) one per channel slot; pad/insert
  // pair (1, ic, 1, 2) compact.
  Ref zp{k.zpAddr, Prec::Int8, 1, k.ic, 1, 1, 0, 1, 0, 0};
  Ref pads{k.padAddr, Prec::Int8, 1, k.ic, 1, 2, 0, 2, 0, 1};
  int64_t lo = k.inSigned ? -128 : 0, hi = k.inSigned ? 127 : 255;
  for (uint32_t n = 0; n < k.n; ++n)
    for (uint32_t c = 0; c < k.ic; ++c)
      for (uint32_t y = 0; y < k.ih; ++y)
        for (uint32_t x = 0; x < k.iw; ++x)
          refSetBits(m, in, n, c, y, x, uint64_t(randomInt(rng, lo, hi)));
  fillWeightSlots(m, k, seed);
  std::vector<int64_t> w(size_t(k.oc) * k.ic * k.kh * k.kw);
  int64_t wlo = k.wSigned ? -128 : 0, whi = k.wSigned ? 127 : 255;
  for (uint32_t oc = 0; oc < k.oc; ++oc)
    for (uint32_t ic = 0; ic < k.ic; ++ic)
      for (uint32_t ky = 0; ky < k.kh; ++ky)
        for (uint32_t kx = 0; kx < k.kw; ++kx) {
          int64_t v = randomInt(rng, wlo, whi);
          w[((size_t(oc) * k.ic + ic) * k.kh + ky) * k.kw + kx] = v;
          *weightPtr(m, k, oc, ic, ky, kx) = uint8_t(v);
        }
  std::vector<int64_t> zps(k.ic), padV(k.ic), insV(k.ic);
  for (uint32_t c = 0; c < k.ic; ++c) {
    zps[c] = k.zeroZps ? 0 : randomInt(rng, k.zpSigned ? -5 : 0, 5);
    padV[c] = randomInt(rng, lo, hi);
    insV[c] = randomInt(rng, lo, hi);
    refSetBits(m, zp, 0, c, 0, 0, uint64_t(zps[c]));
    refSetBits(m, pads, 0, c, 0, 0, uint64_t(padV[c]));
    refSetBits(m, pads, 0, c, 0, 1, uint64_t(insV[c]));
  }
  bool resSigned = k.inSigned || k.wSigned || k.zpSigned;
  std::vector<int64_t> old;
  unsigned resBits = isa::precBits(k.res);
  int64_t resLo = resSigned ? -(int64_t(1) << (resBits - 1)) : 0;
  int64_t resHi = resSigned ? (int64_t(1) << (resBits - 1)) - 1
                            : (int64_t(1) << resBits) - 1;
  if (k.resAdd)
    for (uint32_t n = 0; n < k.n; ++n)
      for (uint32_t oc = 0; oc < k.oc; ++oc)
        for (uint32_t y = 0; y < k.oh(); ++y)
          for (uint32_t x = 0; x < k.ow(); ++x) {
            // Old results the result type holds (an int8 result's old
            // value is an int8).
            int64_t v = randomInt(rng, std::max<int64_t>(-1000, resLo),
                                  std::min<int64_t>(1000, resHi));
            refSetBits(m, out, n, oc, y, x, uint64_t(v));
            old.push_back(v);
          }

  isa::cmd::SConv c = shortConv(k);
  c.opd2_addr = k.zpAddr;
  c.opd3_addr = k.padAddr;
  runTiu(c, m);

  size_t oi = 0;
  for (uint32_t n = 0; n < k.n; ++n)
    for (uint32_t oc = 0; oc < k.oc; ++oc)
      for (uint32_t oy = 0; oy < k.oh(); ++oy)
        for (uint32_t ox = 0; ox < k.ow(); ++ox) {
          int64_t acc = 0;
          for (uint32_t ic = 0; ic < k.ic; ++ic)
            for (uint32_t ky = 0; ky < k.kh; ++ky)
              for (uint32_t kx = 0; kx < k.kw; ++kx) {
                int64_t x = virtualInput<int64_t>(
                    k, int64_t(oy) * k.sh + int64_t(ky) * k.dh,
                    int64_t(ox) * k.sw + int64_t(kx) * k.dw, padV[ic], insV[ic],
                    [&](uint32_t y, uint32_t xx) {
                      return refGetInt(m, in, k.inSigned, n, ic, y, xx);
                    });
                uint32_t wy = k.rotate ? k.kh - 1 - ky : ky;
                uint32_t wx = k.rotate ? k.kw - 1 - kx : kx;
                int64_t wv =
                    w[((size_t(oc) * k.ic + ic) * k.kh + wy) * k.kw + wx];
                acc += x * (wv - zps[ic]);
              }
          if (k.resAdd)
            acc += old[oi++];
          int64_t expect = isa::saturate(acc, k.res, resSigned);
          ASSERT_EQ(refGetInt(m, out, resSigned, n, oc, oy, ox), expect)
              << "n " << n << " oc " << oc << " oy " << oy << " ox " << ox;
        }
}

TEST(FuncConv, Int8PaddingStrideDilationZeroPoints) {
  ConvCase k;
  k.n = 2;
  k.ic = 70; // two 64-channel blocks in the 64IC layout
  k.ih = 9;
  k.iw = 11;
  k.oc = 67; // output channels wrap into a second lane slot
  k.kh = 3;
  k.kw = 2;
  k.sh = 2;
  k.dw = 2;
  k.padT = 1;
  k.padB = 2;
  k.padR = 1;
  k.inAddr = laddr(3, 0x100); // start lanes other than 0
  k.outAddr = laddr(5, 0x20000);
  k.wAddr = laddr(1, 0x8000);
  checkIntConv(k, 1);
}

TEST(FuncConv, Int8UnsignedInsertedZerosRotatedKernel) {
  ConvCase k;
  k.ic = 5;
  k.ih = 4;
  k.iw = 6;
  k.oc = 4;
  k.kh = 3;
  k.kw = 3;
  k.insH = 1;
  k.insW = 2;
  k.padT = k.padB = k.padL = k.padR = 2;
  k.rotate = true;
  k.inSigned = false;
  k.wSigned = false;
  k.zpSigned = false;
  checkIntConv(k, 2);
}

TEST(FuncConv, Int8SaturatingResultWithResAdd) {
  ConvCase k;
  k.ic = 64;
  k.ih = 4;
  k.iw = 4;
  k.oc = 3;
  k.kh = 2;
  k.kw = 2;
  k.res = Prec::Int16;
  k.resAdd = true;
  checkIntConv(k, 3);
  k.res = Prec::Int8; // 64*4 products of up to 2^14 saturate int8
  checkIntConv(k, 4);
  k.res = Prec::Int32; // the sums added to int32 results (no saturation)
  checkIntConv(k, 5);
}

/// Float conv: the reference adds rounded products in the documented order
/// (ic, then ky, then kx), then the bias, then rounds once to the result.
void checkFloatConv(const ConvCase &k, unsigned seed) {
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(seed);
  Ref in = euRef(k.inAddr, k.in, k.n, k.ic, k.ih, k.iw);
  Ref out = euRef(k.outAddr, k.res, k.n, k.oc, k.oh(), k.ow());
  Ref bias{k.biasAddr, Prec::Fp32, 1, k.oc, 1, 1, 0, 1, 0, 0};
  Ref pads{k.padAddr, k.in, 1, k.ic, 1, 2, 0, 2, 0, 1};
  for (uint32_t n = 0; n < k.n; ++n)
    for (uint32_t c = 0; c < k.ic; ++c)
      for (uint32_t y = 0; y < k.ih; ++y)
        for (uint32_t x = 0; x < k.iw; ++x)
          refSetFloat(m, in, n, c, y, x, randomFloat(rng, k.in));
  fillWeightSlots(m, k, seed);
  std::vector<float> w(size_t(k.oc) * k.ic * k.kh * k.kw);
  for (uint32_t oc = 0; oc < k.oc; ++oc)
    for (uint32_t ic = 0; ic < k.ic; ++ic)
      for (uint32_t ky = 0; ky < k.kh; ++ky)
        for (uint32_t kx = 0; kx < k.kw; ++kx) {
          float v = randomFloat(rng, k.in);
          w[((size_t(oc) * k.ic + ic) * k.kh + ky) * k.kw + kx] = v;
          uint64_t bits = fToBits(v, k.in);
          std::memcpy(weightPtr(m, k, oc, ic, ky, kx), &bits, bytesOf(k.in));
        }
  std::vector<float> b(k.oc), padV(k.ic), insV(k.ic);
  for (uint32_t oc = 0; oc < k.oc; ++oc) {
    b[oc] = randomFloat(rng, Prec::Fp32);
    refSetFloat(m, bias, 0, oc, 0, 0, b[oc]);
  }
  for (uint32_t c = 0; c < k.ic; ++c) {
    padV[c] = randomFloat(rng, k.in);
    insV[c] = randomFloat(rng, k.in);
    refSetFloat(m, pads, 0, c, 0, 0, padV[c]);
    refSetFloat(m, pads, 0, c, 0, 1, insV[c]);
  }
  // res_add: the result goes on from what the output holds.
  std::vector<float> old;
  if (k.resAdd)
    for (uint32_t n = 0; n < k.n; ++n)
      for (uint32_t oc = 0; oc < k.oc; ++oc)
        for (uint32_t oy = 0; oy < k.oh(); ++oy)
          for (uint32_t ox = 0; ox < k.ow(); ++ox) {
            refSetFloat(m, out, n, oc, oy, ox, randomFloat(rng, k.res));
            old.push_back(refGetFloat(m, out, n, oc, oy, ox));
          }
  isa::cmd::SConv c = shortConv(k);
  c.opd2_addr = k.biasAddr;
  c.opd3_addr = k.padAddr;
  runTiu(c, m);
  size_t at = 0;
  for (uint32_t n = 0; n < k.n; ++n)
    for (uint32_t oc = 0; oc < k.oc; ++oc)
      for (uint32_t oy = 0; oy < k.oh(); ++oy)
        for (uint32_t ox = 0; ox < k.ow(); ++ox) {
          float acc = 0;
          for (uint32_t ic = 0; ic < k.ic; ++ic)
            for (uint32_t ky = 0; ky < k.kh; ++ky)
              for (uint32_t kx = 0; kx < k.kw; ++kx) {
                float x = virtualInput<float>(
                    k, int64_t(oy) * k.sh + int64_t(ky) * k.dh,
                    int64_t(ox) * k.sw + int64_t(kx) * k.dw, padV[ic], insV[ic],
                    [&](uint32_t y, uint32_t xx) {
                      return refGetFloat(m, in, n, ic, y, xx);
                    });
                uint32_t wy = k.rotate ? k.kh - 1 - ky : ky;
                uint32_t wx = k.rotate ? k.kw - 1 - kx : kx;
                float prod =
                    x * w[((size_t(oc) * k.ic + ic) * k.kh + wy) * k.kw + wx];
                acc = acc + prod;
              }
          acc = acc + b[oc];
          if (k.resAdd)
            acc = old[at++] + acc;
          uint64_t expect = fToBits(acc, k.res);
          ASSERT_EQ(refGetBits(m, out, n, oc, oy, ox), expect)
              << "n " << n << " oc " << oc << " oy " << oy << " ox " << ox
              << ": got " << refGetFloat(m, out, n, oc, oy, ox) << ", want "
              << bitsToF(expect, k.res);
        }
}

TEST(FuncConv, Fp32ExactInDocumentedOrder) {
  ConvCase k;
  k.in = k.res = Prec::Fp32;
  k.n = 2;
  k.ic = 6;
  k.ih = 7;
  k.iw = 8;
  k.oc = 66;
  k.kh = 3;
  k.kw = 3;
  k.sw = 2;
  k.dh = 2;
  k.padT = 2;
  k.padL = 1;
  k.padR = 2;
  k.outAddr = laddr(2, 0x20000);
  checkFloatConv(k, 10);
}

/// Strides whose taps fall in several phases of the plane (dilation 3
/// with stride 2: ky * 3 mod 2 alternates; stride 3 with dilation 2: every
/// column phase), with inserted zeros, uneven padding and a rotated
/// kernel: float sums in the documented order and exact int8 sums against
/// the references, on every path.
TEST(FuncConv, StridesAcrossPhases) {
  for (Prec p : {Prec::Fp32, Prec::Fp16, Prec::Int8}) {
    SCOPED_TRACE(isa::precName(p));
    ConvCase k;
    k.in = p;
    k.res = p == Prec::Int8 ? Prec::Int32 : p;
    k.n = 2;
    k.ic = 5;
    k.ih = 13;
    k.iw = 17;
    k.oc = 7;
    k.kh = 3;
    k.kw = 4;
    k.sh = 2;
    k.dh = 3;
    k.sw = 3;
    k.dw = 2;
    k.padT = 2;
    k.padB = 1;
    k.padL = 3;
    auto check = p == Prec::Int8 ? checkIntConv : checkFloatConv;
    check(k, 50);
    k.insH = 1;
    k.insW = 2;
    k.rotate = true;
    k.sh = 3;
    k.sw = 2;
    check(k, 51);
  }
}

TEST(FuncConv, Fp16And32ICLayout) {
  ConvCase k;
  k.in = k.res = Prec::Fp16;
  k.ic = 40; // two 32-channel blocks
  k.ih = 5;
  k.iw = 6;
  k.oc = 5;
  k.kh = 2;
  k.kw = 3;
  k.padL = k.padR = 1;
  k.insH = 1;
  k.rotate = true;
  checkFloatConv(k, 11);
}

/// fp16 convs on each of the kernel's ways with their planes and sums:
/// 1x1 without padding (the input plane converted in one piece, a
/// channel's result rows stored as one), with top and bottom padding only
/// (one piece between pad rows), with left padding (planes row by row,
/// results as one), with a stride (phases copied from a one-piece plane)
/// and a rotated 3x3 kernel with padding (row by row both ways); input
/// channels a multiple of 8 and not (the AVX-512 weight packer takes
/// eight at a time), output channels filling whole blocks of 8 and not,
/// with and without res_add; and more than 64 output channels from a
/// lane other than the first (the packer's slots in the next row of
/// lanes).
TEST(FuncConv, Fp16WholePlanesAndRowsAgainstTheReference) {
  unsigned seed = 60;
  for (uint32_t ic : {16u, 19u, 40u})
    for (bool resAdd : {false, true}) {
      SCOPED_TRACE("ic " + std::to_string(ic) + (resAdd ? " res_add" : ""));
      ConvCase k;
      k.in = k.res = Prec::Fp16;
      k.n = 2;
      k.ic = ic;
      k.ih = 9;
      k.iw = 7;
      k.oc = ic == 16 ? 16 : 21;
      k.kh = k.kw = 1;
      k.resAdd = resAdd;
      checkFloatConv(k, seed++);
      k.padT = 2;
      k.padB = 1;
      checkFloatConv(k, seed++);
      k.padT = k.padB = 0;
      k.padL = 1;
      checkFloatConv(k, seed++);
      k.padL = 0;
      k.sh = k.sw = 2;
      checkFloatConv(k, seed++);
      k.sh = k.sw = 1;
      k.kh = k.kw = 3;
      k.padT = k.padL = k.padR = 1;
      k.rotate = true;
      checkFloatConv(k, seed++);
    }
  ConvCase k;
  k.in = k.res = Prec::Fp16;
  k.ic = 24;
  k.ih = 5;
  k.iw = 6;
  k.oc = 70;
  k.kh = k.kw = 1;
  k.wAddr = laddr(5, 0x10000);
  k.outAddr = laddr(3, 0x20000);
  checkFloatConv(k, seed++);
}

TEST(FuncConv, Bf16WithFp32Result) {
  ConvCase k;
  k.in = Prec::Bf16;
  k.res = Prec::Fp32;
  k.ic = 33;
  k.ih = 6;
  k.iw = 5;
  k.oc = 3;
  k.kh = 3;
  k.kw = 1;
  k.sh = 2;
  k.padT = k.padB = 1;
  checkFloatConv(k, 12);
}

/// Convs long enough that the walk kernels split the planes into chunks
/// (more than 512 plane x tap weights per channel) and the positions into
/// chunks (the planes of a chunk over 256 KiB), and with several channel
/// blocks, so that a chunk goes on from the sums the one before left:
/// the same bits as the reference sum in the documented order. Direct
/// 3x3, strided (phases) and 1x1 (one tap) walks.
TEST(FuncConv, LongSumsAcrossPlaneAndPositionChunks) {
  ConvCase k;
  k.in = k.res = Prec::Fp16;
  k.ic = 128;
  k.ih = k.iw = 48;
  k.oc = 13;
  k.kh = k.kw = 3;
  k.padT = k.padB = k.padL = k.padR = 1;
  checkFloatConv(k, 13);

  ConvCase s;
  s.in = s.res = Prec::Fp16;
  s.ic = 64;
  s.ih = s.iw = 40;
  s.oc = 13;
  s.kh = s.kw = 3;
  s.sh = s.sw = 2;
  s.padT = s.padL = 1;
  checkFloatConv(s, 14);

  ConvCase p;
  p.in = p.res = Prec::Fp32;
  p.ic = 96;
  p.ih = p.iw = 64;
  p.oc = 9;
  p.kh = p.kw = 1;
  checkFloatConv(p, 15);
  p.ic = 600;
  p.ih = p.iw = 8;
  checkFloatConv(p, 16);
}

TEST(FuncConv, Int8LongSumsAcrossPlaneAndPositionChunks) {
  ConvCase k;
  k.ic = 150;
  k.ih = k.iw = 50;
  k.oc = 13;
  k.kh = k.kw = 3;
  k.padT = k.padB = k.padL = k.padR = 1;
  checkIntConv(k, 17);
  k.ic = 1100;
  k.ih = k.iw = 6;
  k.kh = k.kw = 1;
  k.padT = k.padB = k.padL = k.padR = 0;
  checkIntConv(k, 18);
}

/// Symmetric int8 weights (no zero points, the INT8 models' convs), the
/// case the 8-bit kernels of the avx512vnni and amx paths take straight
/// from the weight slots: channel counts that fill several AMX K steps (16
/// quads, one 64-channel IC_PARALLEL group each) and end in a partial one,
/// output channels over several 32-channel blocks with a partial last one,
/// K steps split into chunks (more than 512 quad x tap weights per
/// channel), direct 3x3, strided (phases) and 1x1 (in order) walks, signed
/// and unsigned inputs, weights from lane 0 and from lane 40. Every path
/// must give the exact sums.
TEST(FuncConv, Int8SymmetricWeightsAcrossStepsAndBlocks) {
  ConvCase k;
  k.zeroZps = true;
  k.ic = 100;
  k.oc = 70;
  k.ih = k.iw = 20;
  k.kh = k.kw = 3;
  k.padT = k.padB = k.padL = k.padR = 1;
  checkIntConv(k, 40);
  k.inSigned = false;
  checkIntConv(k, 41);

  ConvCase c = k;
  c.inSigned = true;
  c.ic = 300;
  c.oc = 40;
  c.ih = c.iw = 12;
  checkIntConv(c, 42);

  ConvCase s = k;
  s.inSigned = true;
  s.ic = 130;
  s.oc = 33;
  s.ih = s.iw = 17;
  s.sh = s.sw = 2;
  checkIntConv(s, 43);

  // Weights from lane 40: a 32-channel block runs past the last lane into
  // the next slot (the amx path packs such weights instead of reading its
  // tiles from the slots).
  ConvCase l = k;
  l.inSigned = true;
  l.wAddr = laddr(40, 0x10000);
  checkIntConv(l, 45);

  ConvCase p = k;
  p.inSigned = true;
  p.ic = 200;
  p.oc = 64;
  p.ih = p.iw = 9;
  p.kh = p.kw = 1;
  p.padT = p.padB = p.padL = p.padR = 0;
  checkIntConv(p, 44);
}

/// Few input channels and many taps (a network's first conv: 3 channels,
/// 7 x 7, stride 2; and 30 channels, 3 x 3: K steps of the amx path that
/// hold one or eight of their 16 quads): symmetric and zero-point weights,
/// signed and unsigned inputs, two 32-channel blocks. Every path must give
/// the exact sums.
TEST(FuncConv, Int8FewChannelsManyTaps) {
  ConvCase k;
  k.ic = 3;
  k.oc = 64;
  k.ih = 30;
  k.iw = 40;
  k.kh = k.kw = 7;
  k.sh = k.sw = 2;
  k.padT = k.padB = k.padL = k.padR = 3;
  k.zeroZps = true;
  checkIntConv(k, 60);
  k.inSigned = false;
  checkIntConv(k, 61);
  k.zeroZps = false;
  checkIntConv(k, 62);

  ConvCase c;
  c.ic = 30;
  c.oc = 40;
  c.ih = c.iw = 15;
  c.kh = c.kw = 3;
  c.padT = c.padB = c.padL = c.padR = 1;
  c.zeroZps = true;
  checkIntConv(c, 63);
}

TEST(FuncConv, WrqShiftsRoundsAndRelus) {
  // 1x1 conv, ic = 1: acc = x * w, then (acc + bias) >> shift with the
  // round mode of opd2_n_str (0 = half to even in the short form), then
  // ReLU for eu 2.
  MachineState m(isa::ChipParams::bm1684x());
  ConvCase k;
  k.ic = 1;
  k.ih = 1;
  k.iw = 6;
  k.oc = 1;
  k.kh = k.kw = 1;
  k.res = Prec::Int8;
  Ref in = euRef(k.inAddr, Prec::Int8, 1, 1, 1, 6);
  Ref out = euRef(k.outAddr, Prec::Int8, 1, 1, 1, 6);
  const int8_t xs[6] = {3, 5, -3, -5, 7, -100};
  for (int i = 0; i < 6; ++i)
    refSetBits(m, in, 0, 0, 0, i, uint8_t(xs[i]));
  *weightPtr(m, k, 0, 0, 0, 0) = 2;
  isa::cmd::SConv c = shortConv(k);
  c.tsk_eu_typ = 1;
  c.opd2_const = 1;
  c.opd2_addr = uint16_t(int16_t(-2)); // bias -2 (int16, signed)
  c.opd3_const = 1;
  c.opd3_addr = 2; // >> 2
  runTiu(c, m);
  // (2x - 2) / 4: 1.0 -> 1, 2.0 -> 2, -2.0 -> -2, -3.0 -> -3, 3.0 -> 3,
  // -202/4 = -50.5 -> -50 (half to even).
  const int8_t want[6] = {1, 2, -2, -3, 3, -50};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(int8_t(refGetBits(m, out, 0, 0, 0, i)), want[i]) << i;
  // x = 5: (10 - 2) / 4 = 2; x = 3: 4 / 4 = 1 -- and ties: x = 4 would be
  // 6/4 = 1.5 -> 2 (even); covered by the -50.5 case above.
  c.tsk_eu_typ = 2; // wrq + relu
  runTiu(c, m);
  const int8_t wantRelu[6] = {1, 2, 0, 0, 3, 0};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(int8_t(refGetBits(m, out, 0, 0, 0, i)), wantRelu[i]) << i;
}

TEST(FuncConv, LongFormLaneMaskAndFreeStrideInput) {
  // Long CONV with tsk_lane_num = lanes 0..1 only, input in free-stride
  // layout (opd0_str = 3) with padding between rows.
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(5);
  const uint32_t ic = 2, ih = 3, iw = 3, oc = 4;
  Ref in{laddr(0, 0), Prec::Fp32, 1, ic, ih, iw, 64, 32, 8, 1};
  for (uint32_t c = 0; c < ic; ++c)
    for (uint32_t y = 0; y < ih; ++y)
      for (uint32_t x = 0; x < iw; ++x)
        refSetFloat(m, in, 0, c, y, x, float(randomInt(rng, -4, 4)));
  ConvCase k;
  k.in = k.res = Prec::Fp32;
  k.ic = ic;
  k.oc = oc;
  k.kh = k.kw = 1;
  k.ih = ih;
  k.iw = iw;
  for (uint32_t o = 0; o < oc; ++o)
    for (uint32_t i = 0; i < ic; ++i) {
      float v = float(o + 1) * (i ? -1.0f : 1.0f);
      std::memcpy(weightPtr(m, k, o, i, 0, 0), &v, 4);
    }
  Ref out = euRef(k.outAddr, Prec::Fp32, 1, oc, ih, iw);
  for (uint32_t o = 0; o < oc; ++o)
    refSetFloat(m, out, 0, o, 0, 0, 99.0f);
  isa::cmd::TiuLong c;
  c.tsk_typ = 0;
  c.tsk_lane_num = 0x3;
  c.opd0_prec = c.opd1_prec = c.res0_prec = uint64_t(Prec::Fp32);
  c.opd2_prec = uint64_t(Prec::Fp32);
  c.opd0_sign = c.opd1_sign = 1;
  c.opd0_str = 3;
  c.opd0_n_str = 64;
  c.opd0_c_str = 32;
  c.opd0_h_str = 8;
  c.opd0_w_str = 1;
  c.res0_n = 1;
  c.res0_c = oc;
  c.res0_h = ih;
  c.res0_w = iw;
  c.opd0_n = 1;
  c.opd0_c = ic;
  c.opd0_h = ih;
  c.opd0_w = iw;
  c.opd1_h = c.opd1_w = 1;
  c.opd0_addr = in.addr;
  c.opd1_addr = k.wAddr;
  c.opd2_const = 1; // bias 0.0
  c.opd3_const = 1; // pad 0.0
  c.res0_addr = k.outAddr;
  runTiu(c, m);
  for (uint32_t o = 0; o < oc; ++o)
    for (uint32_t y = 0; y < ih; ++y)
      for (uint32_t x = 0; x < iw; ++x) {
        if (o >= 2) { // lanes 2, 3 masked off: untouched
          if (y == 0 && x == 0)
            EXPECT_EQ(refGetFloat(m, out, 0, o, 0, 0), 99.0f);
          continue;
        }
        float want = float(o + 1) * (refGetFloat(m, in, 0, 0, y, x) -
                                     refGetFloat(m, in, 0, 1, y, x));
        EXPECT_EQ(refGetFloat(m, out, 0, o, y, x), want);
      }
}

TEST(FuncConv, OperandOutsideLocalMemoryThrows) {
  MachineState m(isa::ChipParams::bm1684x());
  ConvCase k;
  k.outAddr = laddr(0, uint32_t(kLaneBytes - 16)); // 2x3x3 int32 > 16 bytes
  isa::cmd::SConv c = shortConv(k);
  c.opd2_const = c.opd3_const = 1;
  EXPECT_THROW(runTiu(c, m), MemoryError);
}

TEST(FuncConv, RejectsUnsupportedTypes) {
  MachineState m(isa::ChipParams::bm1684x());
  ConvCase k;
  k.res = Prec::Fp32; // an integer conv cannot produce a float
  isa::cmd::SConv c = shortConv(k);
  c.opd2_const = c.opd3_const = 1;
  try {
    runTiu(c, m);
    FAIL() << "int8 conv with an fp32 result accepted";
  } catch (const MemoryError &) {
    FAIL() << "wrong error type";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("CONV"), std::string::npos)
        << e.what();
  }
}

} // namespace
