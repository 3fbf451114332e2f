//===- SimTestUtil.h - Hand-built command streams for model tests -*- C++
//-*-===//
//
// Builders for the few commands the SystemC-model tests need, encoded through
// the isa typed structs (isa::encode), and helpers to read the timeline back.
// Cycle expectations in the tests are derived from the SimConfig constants,
// never from literals.
//
//===----------------------------------------------------------------------===//
#ifndef TPUSIM_TEST_SIMTESTUTIL_H
#define TPUSIM_TEST_SIMTESTUTIL_H

#include "tpusim/Config.h"
#include "tpusim/Simulator.h"
#include "tpusim/Timing.h"

#include "tpu/isa/Command.h"
#include "tpu/isa/Types.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace tpu::sim::simtest {

using isa::Prec;
using isa::RawCommand;

/// The BM1684X address map (isa/docs/bm1684x.md 2): TIU local address = lane << 18 |
/// offset; GDMA sees local memory at 0x0800_0000 and DDR from 0x1_0000_0000.
constexpr unsigned kLaneShift = 18;
constexpr uint64_t kLmemBase = 0x08000000;
constexpr uint64_t kDdrBase = 0x100000000;
constexpr uint64_t kBankBytes = 16 * 1024;
constexpr uint64_t kAllLanes32 = 0xFFFFFFFF;

inline uint32_t laddr(unsigned lane, uint32_t offset) {
  return (lane << kLaneShift) | offset;
}

/// Element bytes of a precision (no Int4 here).
inline unsigned elemBytes(Prec p) {
  switch (p) {
  case Prec::Int8:
    return 1;
  case Prec::Fp16:
  case Prec::Bf16:
  case Prec::Int16:
    return 2;
  default:
    return 4;
  }
}

struct Shape {
  uint32_t n = 1, c = 1, h = 1, w = 1;
  uint64_t count() const { return uint64_t(n) * c * h * w; }
};

/// EU-aligned local channel stride (isa/docs/bm1684x.md 3.2) of the default chip.
inline uint64_t euCStride(const Shape &s, Prec p, unsigned euBytes = 64) {
  uint64_t eu = euBytes / elemBytes(p);
  return (uint64_t(s.h) * s.w + eu - 1) / eu * eu;
}

/// DMA_tensor between a dense DDR tensor and an EU-aligned local tensor
/// starting in lane 0 (`lanes` = lanes of the chip).
inline RawCommand dmaTensor(uint32_t id, uint32_t dep, bool load,
                            uint64_t ddrAddr, uint32_t localAddr, Shape s,
                            Prec p, unsigned lanes = 64,
                            unsigned euBytes = 64) {
  isa::cmd::DmaTensor c;
  c.cmd_id = id;
  c.cmd_id_dep = dep;
  c.cmd_type = unsigned(isa::GdmaType::Tensor);
  c.stride_enable = 1;
  c.src_data_format = unsigned(isa::gdmaFormatFor(p));
  uint64_t cs = euCStride(s, p, euBytes);
  uint64_t slots = (s.c + lanes - 1) / lanes;
  uint64_t local[4] = {slots * cs, cs, s.w, 1};
  uint64_t dense[4] = {uint64_t(s.c) * s.h * s.w, uint64_t(s.h) * s.w, s.w, 1};
  const uint64_t *src = load ? dense : local;
  const uint64_t *dst = load ? local : dense;
  c.src_nstride = src[0];
  c.src_cstride = src[1];
  c.src_hstride = src[2];
  c.src_wstride = src[3];
  c.dst_nstride = dst[0];
  c.dst_cstride = dst[1];
  c.dst_hstride = dst[2];
  c.dst_wstride = dst[3];
  c.src_nsize = c.dst_nsize = s.n;
  c.src_csize = c.dst_csize = s.c;
  c.src_hsize = c.dst_hsize = s.h;
  c.src_wsize = c.dst_wsize = s.w;
  uint64_t local40 = kLmemBase + localAddr;
  uint64_t srcAddr = load ? ddrAddr : local40;
  uint64_t dstAddr = load ? local40 : ddrAddr;
  c.src_start_addr_l32 = srcAddr & 0xFFFFFFFF;
  c.src_start_addr_h8 = srcAddr >> 32;
  c.dst_start_addr_l32 = dstAddr & 0xFFFFFFFF;
  c.dst_start_addr_h8 = dstAddr >> 32;
  c.localmem_mask_l32 = kAllLanes32;
  c.localmem_mask_h32 = kAllLanes32;
  return isa::encode(c);
}

inline RawCommand load(uint32_t id, uint32_t dep, uint64_t ddrAddr,
                       uint32_t localAddr, Shape s, Prec p) {
  return dmaTensor(id, dep, true, ddrAddr, localAddr, s, p);
}
inline RawCommand store(uint32_t id, uint32_t dep, uint32_t localAddr,
                        uint64_t ddrAddr, Shape s, Prec p) {
  return dmaTensor(id, dep, false, ddrAddr, localAddr, s, p);
}

/// sAR element-wise op (eu: 0 mul, 2 add, ...) on EU-aligned tensors.
inline isa::cmd::SAR arCmd(uint32_t id, uint32_t dep, unsigned eu, uint32_t res,
                           uint32_t a, uint32_t b, Shape s, Prec p) {
  isa::cmd::SAR c;
  c.cmd_short = 1;
  c.cmd_id = id;
  c.cmd_id_dep = dep;
  c.tsk_typ = unsigned(isa::TiuTask::AR);
  c.tsk_eu_typ = eu;
  c.tsk_opd_num = 2;
  c.res0_prec = c.opd0_prec = c.opd1_prec = unsigned(p);
  c.opd0_sign = c.opd1_sign = 1;
  c.res0_n = s.n;
  c.res0_c = s.c;
  c.res0_h = s.h;
  c.res0_w = s.w;
  c.res0_addr = res;
  c.opd0_addr = a;
  c.opd1_addr = b;
  return c;
}

inline RawCommand add(uint32_t id, uint32_t dep, uint32_t res, uint32_t a,
                      uint32_t b, Shape s, Prec p) {
  constexpr unsigned kAdd = 2;
  return isa::encode(arCmd(id, dep, kAdd, res, a, b, s, p));
}

/// A valid 3x3 convolution, stride 1, 64 -> 64 channels, over an
/// (out + 2) x (out + 2) plane at `prec` (int8 accumulates into int32),
/// operands in banks 0, 2 and 4 of the lanes.
inline isa::cmd::SConv conv3x3Cmd(uint32_t id, uint32_t dep, Prec prec,
                                  uint32_t out) {
  isa::cmd::SConv c;
  c.cmd_short = 1;
  c.cmd_id = id;
  c.cmd_id_dep = dep;
  c.tsk_typ = unsigned(isa::TiuTask::Conv);
  c.opd0_prec = unsigned(prec);
  c.res0_prec = unsigned(prec == Prec::Int8 ? Prec::Int32 : prec);
  c.opd0_sign = c.opd1_sign = 1;
  c.opd2_const = c.opd3_const = 1;
  c.res_op_x_str = c.res_op_y_str = 1;
  c.res0_n = 1;
  c.res0_c = 64;
  c.res0_h = c.res0_w = out;
  c.opd0_c = 64;
  c.opd0_h = c.opd0_w = out + 2;
  c.opd1_h = c.opd1_w = 3;
  c.opd0_addr = laddr(0, 0);
  c.opd1_addr = laddr(0, 2 * kBankBytes);
  c.res0_addr = laddr(0, 4 * kBankBytes);
  return c;
}

/// Trace events of one engine, in order.
inline std::vector<TraceEvent> eventsOf(const Simulator &sim, isa::Engine e) {
  std::vector<TraceEvent> out;
  for (const TraceEvent &ev : sim.trace())
    if (ev.engine == e)
      out.push_back(ev);
  return out;
}

/// Picoseconds -> cycles of the TIU clock (asserts a whole number).
inline uint64_t tiuCycles(const SimConfig &cfg, uint64_t ps) {
  EXPECT_EQ(ps % cfg.tiuPeriodPs(), 0u) << ps << " ps is not whole cycles";
  return ps / cfg.tiuPeriodPs();
}

/// DDR time of `bytes` bus bytes at full bandwidth, in (whole) cycles of
/// the 1 GHz clocks the default config uses.
inline uint64_t ddrCycles(const SimConfig &cfg, uint64_t bytes) {
  double ps = double(bytes) * cfg.ddrPsPerByte();
  EXPECT_EQ(uint64_t(ps) % cfg.gdmaPeriodPs(), 0u);
  return uint64_t(ps) / cfg.gdmaPeriodPs();
}

inline uint64_t ddrLatencyCycles(const SimConfig &cfg) {
  EXPECT_EQ(cfg.ddrLatencyPs() % cfg.gdmaPeriodPs(), 0u);
  return cfg.ddrLatencyPs() / cfg.gdmaPeriodPs();
}

/// Cycles of a dense load/store of `bytes` (one contiguous DDR run) on an
/// otherwise idle DDR: startup + max(data path beats, latency + DDR time).
inline uint64_t soloDmaCycles(const SimConfig &cfg, uint64_t bytes) {
  uint64_t bus = alignUp(bytes, cfg.ddrBurstBytes);
  uint64_t beats = ceilDiv(bytes, cfg.gdmaDatapathBytes);
  uint64_t ddr = ddrLatencyCycles(cfg) + ddrCycles(cfg, bus);
  return cfg.gdmaStartup + std::max(beats, ddr);
}

/// MCU group launch (mcu.group_launch_ns) in TIU cycles.
inline uint64_t launchCycles(const SimConfig &cfg) {
  EXPECT_EQ(cfg.mcuGroupLaunchPs() % cfg.tiuPeriodPs(), 0u);
  return cfg.mcuGroupLaunchPs() / cfg.tiuPeriodPs();
}

/// Cycles from the start of a group until the command whose last byte is
/// byte `bytesThrough` of its engine's command buffer has arrived: the MCU
/// launch, then ddr.latency and the buffer's bytes at the DDR peak, on the
/// next edge of the (1 GHz) engine clock. A group's first command of b
/// bytes can start at fetchedCycles(cfg, b).
inline uint64_t fetchedCycles(const SimConfig &cfg, uint64_t bytesThrough) {
  double ps = double(cfg.ddrLatencyPs()) +
              std::ceil(double(bytesThrough) * cfg.ddrPsPerByte());
  return launchCycles(cfg) + ceilDiv(uint64_t(ps), cfg.tiuPeriodPs());
}

/// Cycles of a vector TIU command over `perLane` elements per lane of
/// precision p, without bank conflict.
inline uint64_t vectorCycles(const SimConfig &cfg, uint64_t perLane, Prec p) {
  return cfg.euStartup +
         ceilDiv(ceilDiv(perLane, cfg.chip.euNum(p)), cfg.euStepsPerCycle);
}

} // namespace tpu::sim::simtest

#endif // TPUSIM_TEST_SIMTESTUTIL_H
