//===- FuncTestUtil.h - Helpers for the functional-kernel tests ---*- C++
//-*-===//
//
// Independent access to local and global memory for the reference side of
// the tests: element positions are computed here directly from the layout
// formulas of isa/docs/bm1684x.md 3.1/3.2 (lane (L + c) mod 64, slot (L + c) div 64,
// offset O + (n*ns + slot*cs + h*hs + w*ws) * bytes), not through the
// simulator's own view classes.
//
//===----------------------------------------------------------------------===//
#ifndef TPUSIM_TEST_FUNCTESTUTIL_H
#define TPUSIM_TEST_FUNCTESTUTIL_H

#include "tpusim/Func.h"
#include "tpusim/Memory.h"

#include "tpu/isa/Command.h"
#include "tpu/isa/Numerics.h"

#include <cstring>
#include <random>
#include <vector>

namespace tpu::sim::test {

using isa::Prec;

/// The BM1684X: 64 lanes of 256 KiB, TIU local address = lane << 18 | off.
constexpr unsigned kLanes = 64;
constexpr unsigned kLaneShift = 18;
constexpr uint64_t kLaneBytes = uint64_t(1) << kLaneShift;
constexpr uint64_t kLmemBase = 0x08000000;
constexpr uint64_t kDdrBase = 0x100000000;
constexpr unsigned kEuBytes = 64;

inline uint32_t laddr(unsigned lane, uint32_t offset) {
  return (lane << kLaneShift) | offset;
}

inline unsigned bytesOf(Prec p) {
  switch (p) {
  case Prec::Int8:
  case Prec::Int4:
    return 1;
  case Prec::Fp16:
  case Prec::Bf16:
  case Prec::Int16:
    return 2;
  default:
    return 4;
  }
}

/// A tensor seen by the reference: start address, element size, strides.
struct Ref {
  uint32_t addr;
  Prec prec;
  uint32_t n, c, h, w;
  int64_t ns, cs, hs, ws;
};

inline uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/// EU-aligned strides (isa/docs/bm1684x.md 3.2 code 0).
inline Ref euRef(uint32_t addr, Prec p, uint32_t n, uint32_t c, uint32_t h,
                 uint32_t w) {
  unsigned start = addr >> kLaneShift;
  int64_t slots = (start + c + kLanes - 1) / kLanes;
  int64_t cs = int64_t(alignUp(uint64_t(h) * w, kEuBytes / bytesOf(p)));
  return {addr, p, n, c, h, w, slots * cs, cs, int64_t(w), 1};
}

/// Compact strides (code 1).
inline Ref compactRef(uint32_t addr, Prec p, uint32_t n, uint32_t c, uint32_t h,
                      uint32_t w) {
  unsigned start = addr >> kLaneShift;
  int64_t slots = (start + c + kLanes - 1) / kLanes;
  int64_t cs = int64_t(h) * w;
  return {addr, p, n, c, h, w, slots * cs, cs, int64_t(w), 1};
}

inline uint8_t *refPtr(MachineState &m, const Ref &r, uint32_t n, uint32_t c,
                       uint32_t h, uint32_t w) {
  unsigned start = r.addr >> kLaneShift;
  uint32_t off = r.addr & (kLaneBytes - 1);
  unsigned lane = (start + c) % kLanes;
  unsigned slot = (start + c) / kLanes;
  int64_t e = n * r.ns + slot * r.cs + h * r.hs + w * r.ws;
  return m.lmem.at(lane, off + uint64_t(e) * bytesOf(r.prec), bytesOf(r.prec));
}

inline uint64_t refGetBits(MachineState &m, const Ref &r, uint32_t n,
                           uint32_t c, uint32_t h, uint32_t w) {
  uint64_t v = 0;
  std::memcpy(&v, refPtr(m, r, n, c, h, w), bytesOf(r.prec));
  return v;
}

inline void refSetBits(MachineState &m, const Ref &r, uint32_t n, uint32_t c,
                       uint32_t h, uint32_t w, uint64_t v) {
  std::memcpy(refPtr(m, r, n, c, h, w), &v, bytesOf(r.prec));
}

/// Signed value of an integer element of `bytes` bytes.
inline int64_t sext(uint64_t v, unsigned bytes) {
  unsigned bits = bytes * 8;
  uint64_t sign = uint64_t(1) << (bits - 1);
  v &= (sign << 1) - 1;
  return int64_t((v ^ sign) - sign);
}

inline int64_t refGetInt(MachineState &m, const Ref &r, bool isSigned,
                         uint32_t n, uint32_t c, uint32_t h, uint32_t w) {
  uint64_t v = refGetBits(m, r, n, c, h, w);
  return isSigned ? sext(v, bytesOf(r.prec)) : int64_t(v);
}

inline float bitsToF(uint64_t b, Prec p) {
  switch (p) {
  case Prec::Fp16:
    return isa::fp16ToFp32(uint16_t(b));
  case Prec::Bf16:
    return isa::bf16ToFp32(uint16_t(b));
  default:
    return isa::bitsToFloat(uint32_t(b));
  }
}

inline uint64_t fToBits(float f, Prec p) {
  switch (p) {
  case Prec::Fp16:
    return isa::fp32ToFp16(f);
  case Prec::Bf16:
    return isa::fp32ToBf16(f);
  default:
    return isa::floatToBits(f);
  }
}

inline float refGetFloat(MachineState &m, const Ref &r, uint32_t n, uint32_t c,
                         uint32_t h, uint32_t w) {
  return bitsToF(refGetBits(m, r, n, c, h, w), r.prec);
}

inline void refSetFloat(MachineState &m, const Ref &r, uint32_t n, uint32_t c,
                        uint32_t h, uint32_t w, float v) {
  refSetBits(m, r, n, c, h, w, fToBits(v, r.prec));
}

/// A random value exactly representable in precision p (floats: a small
/// number of significant bits so sums stay exact where the tests need it).
inline float randomFloat(std::mt19937 &rng, Prec p, float lo = -2.0f,
                         float hi = 2.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  return bitsToF(fToBits(d(rng), p), p);
}

inline int64_t randomInt(std::mt19937 &rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

/// Runs a TIU command struct through encode + decodeTiu + executeTiu.
template <typename Cmd> void runTiu(const Cmd &c, MachineState &m) {
  executeTiu(decodeTiu(isa::encode(c)), m);
}

template <typename Cmd> void runGdma(const Cmd &c, MachineState &m) {
  executeGdma(decodeGdma(isa::encode(c), m.chip), m);
}

/// Geometry of a CONV test case: sizes, strides, dilation, inserted zeros,
/// padding, rotation and res_add. oh()/ow() are the output sizes of the
/// documented formula (isa/docs/bm1684x.md 4.5): the virtual input is
/// (i - 1) * (ins + 1) + 1 plus padding, the kernel spans d * (k - 1) + 1.
struct ConvGeom {
  uint32_t n = 1, ic = 3, ih = 5, iw = 5, oc = 2, kh = 3, kw = 3;
  uint32_t sh = 1, sw = 1, dh = 1, dw = 1, insH = 0, insW = 0;
  uint32_t padT = 0, padB = 0, padL = 0, padR = 0;
  bool rotate = false, resAdd = false;

  uint32_t oh() const {
    return ((ih - 1) * (insH + 1) + padT + padB + 1 - (dh * (kh - 1) + 1)) /
               sh +
           1;
  }
  uint32_t ow() const {
    return ((iw - 1) * (insW + 1) + padL + padR + 1 - (dw * (kw - 1) + 1)) /
               sw +
           1;
  }
};

/// Sets the geometry and operand addresses of a CONV command (short or
/// long form); precisions, signs, opd2/opd3 are the caller's.
template <typename Cmd>
void setConvGeometry(Cmd &c, const ConvGeom &k, uint32_t inAddr, uint32_t wAddr,
                     uint32_t outAddr) {
  c.res_add = k.resAdd;
  c.kernel_rotate = k.rotate;
  c.opd0_up_pad = k.padT;
  c.opd0_dn_pad = k.padB;
  c.opd0_lf_pad = k.padL;
  c.opd0_rt_pad = k.padR;
  c.res_op_x_str = k.sw;
  c.res_op_y_str = k.sh;
  c.opd0_x_ins0 = k.insW;
  c.opd0_y_ins0 = k.insH;
  c.opd1_x_ins0 = k.dw - 1;
  c.opd1_y_ins0 = k.dh - 1;
  c.res0_n = k.n;
  c.res0_c = k.oc;
  c.res0_h = k.oh();
  c.res0_w = k.ow();
  c.opd0_c = k.ic;
  c.opd0_h = k.ih;
  c.opd0_w = k.iw;
  c.opd1_h = k.kh;
  c.opd1_w = k.kw;
  c.opd0_addr = inAddr;
  c.opd1_addr = wAddr;
  c.res0_addr = outAddr;
}

/// A short PorD (tsk 1) of one batch with the given sizes; padding,
/// strides and signs are the caller's.
inline isa::cmd::SPorD pordCmd(unsigned eu, Prec in, Prec res, uint32_t c,
                               uint32_t ih, uint32_t iw, uint32_t kh,
                               uint32_t kw, uint32_t oh, uint32_t ow) {
  isa::cmd::SPorD p;
  p.cmd_short = 1;
  p.tsk_typ = 1;
  p.tsk_eu_typ = eu;
  p.opd0_prec = uint64_t(in);
  p.res0_prec = uint64_t(res);
  p.res0_n = 1;
  p.res0_c = c;
  p.res0_h = oh;
  p.res0_w = ow;
  p.opd0_h = ih;
  p.opd0_w = iw;
  p.opd1_h = kh;
  p.opd1_w = kw;
  return p;
}

/// A machine with a small DDR so out-of-range tests are cheap to provoke.
inline isa::ChipParams testChip() {
  isa::ChipParams p = isa::ChipParams::bm1684x();
  return p;
}

} // namespace tpu::sim::test

#endif // TPUSIM_TEST_FUNCTESTUTIL_H
