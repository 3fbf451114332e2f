//===- SimLayerTest.cpp - A hand-built int8 conv layer, end to end --------===//
//
// One command group that does what a compiled layer does: GDMA loads the
// input and the weights, the TIU convolves (int8 x int8 -> int32) and
// requantises (rq1, fixed-point multiplier and shift) to int8, GDMA stores
// the result. The output is compared with a reference computed here from the
// formulas, and the cycle count with its derivation from the configuration.
//
//===----------------------------------------------------------------------===//
#include "SimTestUtil.h"

#include <gtest/gtest.h>

#include <random>

using namespace tpu;
using namespace tpu::sim;
using namespace tpu::sim::simtest;

namespace {

constexpr uint32_t kIc = 8, kOc = 4, kIh = 4, kIw = 4, kK = 3;
constexpr uint32_t kOh = kIh - kK + 1, kOw = kIw - kK + 1;
/// int8 weights are stored per output channel as [ic / 64][ky][kx][ic % 64]
/// with ic padded to IC_PARALLEL = 64 (isa/docs/bm1684x.md 3.4): 9 * 64 bytes per oc.
constexpr uint32_t kIcPar = 64;
constexpr uint32_t kWRow = kK * kK * kIcPar;
/// rq1 parameters: y = sat8(round_half_away(acc * kMult / 2^kShift) + kZp).
constexpr int32_t kMult = 109;
constexpr int kShift = 15;
constexpr int32_t kZp = 3;

constexpr uint64_t kDdrIn = kDdrBase;
constexpr uint64_t kDdrW = kDdrBase + 0x1000;
constexpr uint64_t kDdrOut = kDdrBase + 0x2000;
const uint32_t kIn = laddr(0, 0), kW = laddr(0, kBankBytes),
               kAcc = laddr(0, 2 * kBankBytes), kOut = laddr(0, 3 * kBankBytes);

isa::cmd::SConv convCmd() {
  isa::cmd::SConv c;
  c.cmd_short = 1;
  c.cmd_id = 1;
  c.cmd_id_dep = 2; // both loads
  c.tsk_typ = unsigned(isa::TiuTask::Conv);
  c.opd0_sign = c.opd1_sign = 1;
  c.opd0_prec = unsigned(Prec::Int8);
  c.res0_prec = unsigned(Prec::Int32);
  c.opd2_const = 1; // kernel zero point 0
  c.opd3_const = 1; // pad value 0 (no padding here anyway)
  c.res_op_x_str = c.res_op_y_str = 1;
  c.res0_n = 1;
  c.res0_c = kOc;
  c.res0_h = kOh;
  c.res0_w = kOw;
  c.opd0_c = kIc;
  c.opd0_h = kIh;
  c.opd0_w = kIw;
  c.opd1_h = c.opd1_w = kK;
  c.opd0_addr = kIn;
  c.opd1_addr = kW;
  c.res0_addr = kAcc;
  return c;
}

isa::cmd::SRQDQ requantCmd() {
  constexpr unsigned kRq1 = 1;
  constexpr unsigned kZpShift = 8;
  isa::cmd::SRQDQ c;
  c.cmd_short = 1;
  c.cmd_id = 2;
  c.cmd_id_dep = 0; // in order after the conv on the same engine
  c.tsk_typ = unsigned(isa::TiuTask::RQDQ);
  c.tsk_eu_typ = kRq1;
  c.opd0_sign = 1;
  c.opd2_sign = 1; // signed result
  c.opd0_prec = unsigned(Prec::Int32);
  c.res0_prec = unsigned(Prec::Int8);
  c.opd2_n_str = unsigned(isa::RoundMode::HalfAwayFromZero);
  c.opd1_const = 1;
  c.opd1_addr = uint32_t(kMult);
  // bits 7..0: int8 shift (a left shift; negative shifts right),
  // bits 23..8: int16 zero point.
  c.opd2_addr = (uint32_t(uint8_t(int8_t(-kShift)))) |
                (uint32_t(uint16_t(int16_t(kZp))) << kZpShift);
  c.res0_n = 1;
  c.res0_c = kOc;
  c.res0_h = kOh;
  c.res0_w = kOw;
  c.opd0_addr = kAcc;
  c.res0_addr = kOut;
  return c;
}

struct Layer {
  std::vector<int8_t> in, w; ///< w: [oc][ic][ky][kx]
  std::vector<int8_t> expected;
};

Layer makeLayer() {
  Layer l;
  std::mt19937 rng(1684);
  std::uniform_int_distribution<int> d(-128, 127);
  l.in.resize(kIc * kIh * kIw);
  l.w.resize(kOc * kIc * kK * kK);
  for (auto &v : l.in)
    v = int8_t(d(rng));
  for (auto &v : l.w)
    v = int8_t(d(rng));
  for (uint32_t oc = 0; oc < kOc; ++oc)
    for (uint32_t y = 0; y < kOh; ++y)
      for (uint32_t x = 0; x < kOw; ++x) {
        int64_t acc = 0;
        for (uint32_t ic = 0; ic < kIc; ++ic)
          for (uint32_t ky = 0; ky < kK; ++ky)
            for (uint32_t kx = 0; kx < kK; ++kx)
              acc += int64_t(l.in[(ic * kIh + y + ky) * kIw + x + kx]) *
                     l.w[((oc * kIc + ic) * kK + ky) * kK + kx];
        int64_t prod = acc * kMult;
        int64_t half = int64_t(1) << (kShift - 1);
        int64_t q =
            prod >= 0 ? (prod + half) >> kShift : -((-prod + half) >> kShift);
        q = std::min<int64_t>(127, std::max<int64_t>(-128, q + kZp));
        l.expected.push_back(int8_t(q));
      }
  return l;
}

/// The weights as the TIU reads them, one kWRow-byte row per oc.
std::vector<int8_t> packWeights(const Layer &l) {
  std::vector<int8_t> rows(kOc * kWRow, 0);
  for (uint32_t oc = 0; oc < kOc; ++oc)
    for (uint32_t ic = 0; ic < kIc; ++ic)
      for (uint32_t ky = 0; ky < kK; ++ky)
        for (uint32_t kx = 0; kx < kK; ++kx)
          rows[oc * kWRow + (ky * kK + kx) * kIcPar + ic] =
              l.w[((oc * kIc + ic) * kK + ky) * kK + kx];
  return rows;
}

std::unique_ptr<Simulator> runLayer(SimMode mode, const Layer &l) {
  SimConfig cfg = SimConfig::defaults();
  auto sim = std::make_unique<Simulator>(cfg, mode);
  sim->setTracing(true);
  std::vector<int8_t> rows = packWeights(l);
  sim->state().gmem.write(kDdrIn, l.in.data(), l.in.size());
  sim->state().gmem.write(kDdrW, rows.data(), rows.size());
  const Shape inShape{1, kIc, kIh, kIw}, wShape{1, kOc, 1, kWRow},
      outShape{1, kOc, kOh, kOw};
  sim->runGroup({isa::encode(convCmd()), isa::encode(requantCmd()),
                 isa::makeTiuEnd(3, 3)},
                {load(1, 0, kDdrIn, kIn, inShape, Prec::Int8),
                 load(2, 0, kDdrW, kW, wShape, Prec::Int8),
                 store(3, 2, kOut, kDdrOut, outShape, Prec::Int8),
                 isa::makeGdmaEnd(4, 3)});
  return sim;
}

TEST(SimLayer, ConvRequantMatchesReferenceAndDerivation) {
  Layer l = makeLayer();
  auto sim = runLayer(SimMode::Full, l);
  std::vector<int8_t> out(kOc * kOh * kOw);
  sim->state().gmem.read(kDdrOut, out.data(), out.size());
  EXPECT_EQ(out, l.expected);

  const SimConfig &cfg = sim->config();
  uint64_t s = cfg.syncLatency;
  // Loads: input 8*4*4 = 128 bytes, weights 4 * 576 = 2304 bytes, each one
  // contiguous DDR run. The first starts at Fg (launch and fetch of the
  // 96-byte DMA_tensor). With two commands in flight the weights load is
  // issued one start-up later and, the input having drained by then, runs
  // like a solo load: GDMA id 2 completes at Fg + startup + L(2304), after
  // the input load (Fg + L(128)).
  ASSERT_GE(cfg.gdmaMaxOutstanding, 2u);
  uint64_t inBytes = kIc * kIh * kIw, wBytes = kOc * kWRow;
  ASSERT_LE(cfg.gdmaStartup +
                ddrCycles(cfg, alignUp(inBytes, cfg.ddrBurstBytes)),
            2 * cfg.gdmaStartup);
  uint64_t fg =
      fetchedCycles(cfg, isa::layoutInfo(isa::LayoutId::DmaTensor).bytes());
  uint64_t loads = fg + cfg.gdmaStartup + soloDmaCycles(cfg, wBytes);
  ASSERT_GT(loads, fg + soloDmaCycles(cfg, inBytes));
  // Conv (waits for GDMA id 2): one channel slot per lane, 2x2 outputs per
  // lane: one step of cube_pixels = 4 points, but the 4 points lie in two
  // output rows, so the lane reads two input runs (two port words) per
  // kernel position: 2 cycles x 9 kernel positions x ceil(8 / 8)
  // input-channel steps (8 input channels fit one step).
  ASSERT_EQ(cfg.cubePixels(Prec::Int8), uint64_t(kOh * kOw));
  uint64_t conv =
      cfg.cubeStartup +
      2 * kK * kK *
          ceilDiv(kIc, std::min(kIc, cfg.chip.icParallel(Prec::Int8)));
  // Requant: 4 int32 elements per lane -> ceil(4 / EU_NUM(int32)) steps.
  uint64_t rq = vectorCycles(cfg, kOh * kOw, Prec::Int32);
  // Store (waits for TIU id 2; its slot was freed by the input load long
  // before): 16 bytes, one run, nothing else in flight.
  uint64_t st = soloDmaCycles(cfg, kOc * kOh * kOw);
  // TIU end waits for the store, GDMA end for the TIU end.
  uint64_t total = loads + s + conv + rq + s + st + s + cfg.tiuSysCycles + s +
                   cfg.gdmaSysCycles;
  EXPECT_EQ(sim->cycles(), total);

  auto tiu = eventsOf(*sim, isa::Engine::Tiu);
  ASSERT_EQ(tiu.size(), 3u);
  EXPECT_EQ(tiu[0].name, "sCONV.conv.normal");
  EXPECT_EQ(tiu[0].cycles, conv);
  EXPECT_EQ(tiu[1].cycles, rq);
  EXPECT_EQ(sim->stats().tiuMacs, uint64_t(kOc) * kOh * kOw * kIc * kK * kK);
  EXPECT_EQ(sim->stats().ddrReadBytes, uint64_t(kIc * kIh * kIw + kOc * kWRow));
  EXPECT_EQ(sim->stats().ddrWriteBytes, uint64_t(kOc * kOh * kOw));

  // The timing-only mode gives the same time without computing anything.
  auto timing = runLayer(SimMode::Timing, l);
  EXPECT_EQ(timing->cycles(), total);
  // The functional mode gives the same values in no time.
  auto functional = runLayer(SimMode::Functional, l);
  std::vector<int8_t> fout(out.size());
  functional->state().gmem.read(kDdrOut, fout.data(), fout.size());
  EXPECT_EQ(fout, l.expected);
  EXPECT_EQ(functional->cycles(), 0u);
}

} // namespace
