//===- SimSyncTest.cpp - Id synchronisation and command timing ------------===//
//
// Hand-built streams through the whole SystemC model. Every cycle count is
// derived in a comment from the configuration constants, which the test reads
// from SimConfig (so the derivation stays true when bm1684x.cfg changes).
// Abbreviations used in the derivations:
//   L(b)  = solo DMA of b bytes in one contiguous run
//         = gdma.startup + max(ceil(b / gdma.datapath_bytes),
//                              latency + alignUp(b, burst) / bytes-per-cycle)
//   V(e)  = vector command over e elements per lane
//         = tiu.eu_startup + ceil(e / EU_NUM)
//   S     = sync.latency
//   D     = DDR drain time of the 4096-byte loads = 4096 / bytes-per-cycle
//   Ft/Fg = start of the first TIU / GDMA command of a group: the MCU
//           launch, then ddr.latency and the command's bytes from the
//           command buffer (fetchedCycles; 64-byte sAR, 96-byte DMA_tensor)
// With gdma.max_outstanding = 2, the GDMA issues a command while the
// previous one is in flight: its transfer drains right after the previous
// one's through the GDMA's share of DDR, so back-to-back loads end at L and
// L + D (the second one's latency and start-up are hidden), and a third
// waits for the first to complete before it is issued.
//
//===----------------------------------------------------------------------===//
#include "SimTestUtil.h"

#include "tpusim/Memory.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace tpu;
using namespace tpu::sim;
using namespace tpu::sim::simtest;
using isa::Engine;

namespace {

// Two int32 tensors of 64 channels x 4 x 4: one channel per lane, 16
// elements (64 bytes) per lane, 4096 bytes in DDR.
const Shape kShape{1, 64, 4, 4};
constexpr Prec kPrec = Prec::Int32;
constexpr uint64_t kBytes = 64 * 16 * 4;
constexpr uint64_t kDdrA = kDdrBase;
constexpr uint64_t kDdrB = kDdrBase + 0x10000;
// Operands in different banks (0, 1, 2) so no bank conflict.
const uint32_t kA = laddr(0, 0), kB = laddr(0, kBankBytes),
               kC = laddr(0, 2 * kBankBytes);

/// Start of the first TIU / GDMA command of a group (see the header).
uint64_t firstTiu(const SimConfig &cfg) {
  return fetchedCycles(cfg, isa::layoutInfo(isa::LayoutId::SAR).bytes());
}
uint64_t firstGdma(const SimConfig &cfg) {
  return fetchedCycles(cfg, isa::layoutInfo(isa::LayoutId::DmaTensor).bytes());
}

/// The conditions under which back-to-back loads end at L and L + D: the
/// second is issued and started up before the first has drained.
void assertSecondLoadHidesLatency(const SimConfig &cfg) {
  ASSERT_GE(cfg.gdmaMaxOutstanding, 2u);
  ASSERT_LE(2 * cfg.gdmaStartup, cfg.gdmaStartup + ddrCycles(cfg, kBytes));
  ASSERT_LE(ceilDiv(kBytes, cfg.gdmaDatapathBytes), ddrCycles(cfg, kBytes));
}

void fillDdr(Simulator &sim, uint64_t addr, int32_t base) {
  std::vector<int32_t> v(kShape.count());
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = base + int32_t(i);
  sim.state().gmem.write(addr, v.data(), v.size() * sizeof(int32_t));
}

/// Element (c, h, w) of the EU-aligned int32 tensor at lane-0 offset `off`.
int32_t local(Simulator &sim, uint32_t off, uint32_t c, uint32_t i) {
  int32_t v;
  std::memcpy(&v, sim.state().lmem.at(c, off + i * 4, 4), 4);
  return v;
}

TEST(SimSync, LoadThenDependentAdd) {
  SimConfig cfg = SimConfig::defaults();
  Simulator sim(cfg, SimMode::Full);
  sim.setTracing(true);
  fillDdr(sim, kDdrA, 100);
  fillDdr(sim, kDdrB, -7);
  sim.runGroup({add(1, 2, kC, kA, kB, kShape, kPrec)},
               {load(1, 0, kDdrA, kA, kShape, kPrec),
                load(2, 0, kDdrB, kB, kShape, kPrec)});

  auto tiu = eventsOf(sim, Engine::Tiu);
  auto gdma = eventsOf(sim, Engine::Gdma);
  ASSERT_EQ(tiu.size(), 1u);
  ASSERT_EQ(gdma.size(), 2u);
  assertSecondLoadHidesLatency(cfg);
  uint64_t l = soloDmaCycles(cfg, kBytes), d = ddrCycles(cfg, kBytes);
  uint64_t fg = firstGdma(cfg), ft = firstTiu(cfg);
  // The loads overlap: they end at Fg + L and Fg + L + D.
  EXPECT_EQ(tiuCycles(cfg, gdma[0].endPs), fg + l);
  EXPECT_EQ(tiuCycles(cfg, gdma[1].endPs), fg + l + d);
  // The add waits for GDMA id 2: it starts S after that (not one cycle
  // earlier), and takes V(16).
  EXPECT_EQ(tiuCycles(cfg, tiu[0].startPs), fg + l + d + cfg.syncLatency);
  uint64_t v = vectorCycles(cfg, 16, kPrec);
  EXPECT_EQ(tiu[0].cycles, v);
  EXPECT_EQ(sim.cycles(), fg + l + d + cfg.syncLatency + v);
  // The TIU waited from its own fetch (Ft) until then.
  EXPECT_EQ(sim.stats().tiuWaitCycles, fg + l + d + cfg.syncLatency - ft);

  // And the data is right: c = a + b, element i of the dense tensor is
  // channel i / 16, position i % 16.
  for (uint32_t c = 0; c < 64; ++c)
    for (uint32_t i = 0; i < 16; ++i)
      ASSERT_EQ(local(sim, 2 * kBankBytes, c, i),
                (100 + int32_t(c * 16 + i)) + (-7 + int32_t(c * 16 + i)));
}

TEST(SimSync, WaitsForExactlyTheNamedId) {
  // Depending on GDMA id 1 instead of 2, the add starts S after the first
  // load ends (Fg + L), while the second load is still running.
  SimConfig cfg = SimConfig::defaults();
  Simulator sim(cfg, SimMode::Timing);
  sim.setTracing(true);
  sim.runGroup({add(1, 1, kC, kA, kB, kShape, kPrec)},
               {load(1, 0, kDdrA, kA, kShape, kPrec),
                load(2, 0, kDdrB, kB, kShape, kPrec)});
  assertSecondLoadHidesLatency(cfg);
  uint64_t l = soloDmaCycles(cfg, kBytes), d = ddrCycles(cfg, kBytes);
  uint64_t fg = firstGdma(cfg);
  auto tiu = eventsOf(sim, Engine::Tiu);
  EXPECT_EQ(tiuCycles(cfg, tiu[0].startPs), fg + l + cfg.syncLatency);
  // Total: the second load ends last at Fg + L + D.
  uint64_t v = vectorCycles(cfg, 16, kPrec);
  ASSERT_LT(cfg.syncLatency + v, d);
  EXPECT_EQ(sim.cycles(), fg + l + d);
}

TEST(SimSync, SyncLatencyIsTheGapAfterThePublishedId) {
  // With sync.latency = 0 the dependent command starts in the very cycle its
  // producer completes; with 5 it starts 5 cycles later.
  for (uint64_t sync : {0u, 5u}) {
    SimConfig cfg = SimConfig::defaults();
    cfg.set("sync.latency", std::to_string(sync));
    Simulator sim(cfg, SimMode::Timing);
    sim.setTracing(true);
    sim.runGroup({add(1, 1, kC, kA, kB, kShape, kPrec)},
                 {load(1, 0, kDdrA, kA, kShape, kPrec)});
    auto tiu = eventsOf(sim, Engine::Tiu);
    auto gdma = eventsOf(sim, Engine::Gdma);
    EXPECT_EQ(tiu[0].startPs - gdma[0].endPs, sync * cfg.tiuPeriodPs());
  }
}

TEST(SimSync, GdmaWaitsForTiu) {
  // A store that depends on the add: GDMA id 3 starts S after TIU id 1.
  SimConfig cfg = SimConfig::defaults();
  Simulator sim(cfg, SimMode::Full);
  sim.setTracing(true);
  fillDdr(sim, kDdrA, 1);
  fillDdr(sim, kDdrB, 2);
  uint64_t out = kDdrBase + 0x20000;
  sim.runGroup({add(1, 2, kC, kA, kB, kShape, kPrec)},
               {load(1, 0, kDdrA, kA, kShape, kPrec),
                load(2, 0, kDdrB, kB, kShape, kPrec),
                store(3, 1, kC, out, kShape, kPrec)});
  assertSecondLoadHidesLatency(cfg);
  uint64_t l = soloDmaCycles(cfg, kBytes), d = ddrCycles(cfg, kBytes);
  uint64_t v = vectorCycles(cfg, 16, kPrec);
  auto gdma = eventsOf(sim, Engine::Gdma);
  // The add ends as in LoadThenDependentAdd; the store (whose slot the
  // first load freed long before) starts S later.
  uint64_t addEnd = firstGdma(cfg) + l + d + cfg.syncLatency + v;
  EXPECT_EQ(tiuCycles(cfg, gdma[2].startPs), addEnd + cfg.syncLatency);
  // The store is a solo DMA of the same size (write latency = read
  // latency): nothing else is in flight.
  EXPECT_EQ(sim.cycles(), addEnd + cfg.syncLatency + l);
  std::vector<int32_t> got(kShape.count());
  sim.state().gmem.read(out, got.data(), kBytes);
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(got[i], (1 + int32_t(i)) + (2 + int32_t(i)));
}

TEST(SimTiming, IndependentStreamsOverlap) {
  // No ids: the engines run side by side. GDMA: loads 1 and 2 end at
  // Fg + L and Fg + L + D; load 3 is issued when load 1 completes (two in
  // flight), after load 2 has drained, so it runs like a solo load and ends
  // at Fg + 2L. TIU: 5 adds back to back from Ft = 5 V(16). Total = max of
  // the two, not the sum. (The loads write bank 0, which the adds read:
  // the beats that collide stall the GDMA data path, but the loads are
  // DDR-bound, so their times do not change.)
  SimConfig cfg = SimConfig::defaults();
  Simulator sim(cfg, SimMode::Timing);
  sim.setTracing(true);
  std::vector<RawCommand> tiu, gdma;
  for (uint32_t i = 1; i <= 5; ++i)
    tiu.push_back(add(i, 0, kC, kA, kB, kShape, kPrec));
  for (uint32_t i = 1; i <= 3; ++i)
    gdma.push_back(load(i, 0, kDdrA, kA, kShape, kPrec));
  sim.runGroup(tiu, gdma);
  assertSecondLoadHidesLatency(cfg);
  uint64_t l = soloDmaCycles(cfg, kBytes), d = ddrCycles(cfg, kBytes);
  uint64_t v = vectorCycles(cfg, 16, kPrec);
  uint64_t fg = firstGdma(cfg), ft = firstTiu(cfg);
  // Load 2 has drained (Fg + startup + 2D) before load 3 joins the channel
  // (Fg + L + startup).
  ASSERT_LE(cfg.gdmaStartup + 2 * d, l + cfg.gdmaStartup);
  auto t = eventsOf(sim, Engine::Tiu);
  for (uint64_t i = 0; i < 5; ++i)
    EXPECT_EQ(tiuCycles(cfg, t[i].startPs), ft + i * v);
  EXPECT_EQ(sim.cycles(), std::max(fg + 2 * l, ft + 5 * v));
  EXPECT_LT(sim.cycles(), fg + 3 * l + 5 * v);
  EXPECT_EQ(sim.stats().tiuBusyCycles, 5 * v);
  // Busy = time with a load in flight: [Fg, Fg + 2L).
  EXPECT_EQ(sim.stats().gdmaBusyCycles, 2 * l);
}

TEST(SimTiming, DmaBound) {
  // Four loads, each followed by an add that needs it. Two loads are in
  // flight at a time: load k + 2 is issued when load k completes. Loads 1
  // and 2 end at Fg + L and Fg + L + D; load 3 is issued at Fg + L, after
  // load 2 drained, and ends at Fg + 2L; load 4 is issued at Fg + L + D and
  // joins the channel at Fg + L + D + startup, just when load 3 has
  // drained, so it ends D after load 3: Fg + 2L + D. Each add (V(16)) is
  // shorter than the gaps, so the TIU idles between loads and the run ends
  // S + V(16) after the last load.
  SimConfig cfg = SimConfig::defaults();
  Simulator sim(cfg, SimMode::Timing);
  std::vector<RawCommand> tiu, gdma;
  for (uint32_t i = 1; i <= 4; ++i) {
    gdma.push_back(load(i, 0, kDdrA, kA, kShape, kPrec));
    tiu.push_back(add(i, i, kC, kA, kB, kShape, kPrec));
  }
  sim.runGroup(tiu, gdma);
  assertSecondLoadHidesLatency(cfg);
  uint64_t l = soloDmaCycles(cfg, kBytes), d = ddrCycles(cfg, kBytes);
  uint64_t v = vectorCycles(cfg, 16, kPrec);
  ASSERT_LT(cfg.syncLatency + v, d)
      << "the configuration no longer makes this case DMA-bound";
  uint64_t fg = firstGdma(cfg);
  EXPECT_EQ(sim.cycles(), fg + 2 * l + d + cfg.syncLatency + v);
  // Busy = time with a load in flight: [Fg, Fg + 2L + D).
  EXPECT_EQ(sim.stats().gdmaBusyCycles, 2 * l + d);
  EXPECT_EQ(sim.stats().tiuBusyCycles, 4 * v);
}

/// An int8 3x3 convolution, 64 -> 64 channels, 18x18 -> 16x16.
isa::cmd::SConv conv3x3(uint32_t id, uint32_t dep) {
  return conv3x3Cmd(id, dep, Prec::Int8, 16);
}

TEST(SimTiming, ComputeBound) {
  // GDMA: two 4 KiB loads (ids 1, 2). TIU: two convolutions, the first
  // waiting for id 1, the second for id 2. One conv is
  //   C = tiu.cube_startup + ceil(16*16 / cube_pixels_int8) * 9
  //       * ceil(64 / 64)
  // which is longer than a load, so the second load is hidden and the run
  // is Fg + L + S + 2C. (The first conv's operands are in banks 0, 2 and
  // 4; the second load writes bank 1: no contention.)
  SimConfig cfg = SimConfig::defaults();
  Simulator sim(cfg, SimMode::Timing);
  sim.setTracing(true);
  sim.runGroup({isa::encode(conv3x3(1, 1)), isa::encode(conv3x3(2, 2))},
               {load(1, 0, kDdrA, kA, kShape, kPrec),
                load(2, 0, kDdrB, kB, kShape, kPrec)});
  uint64_t l = soloDmaCycles(cfg, kBytes);
  uint64_t conv =
      cfg.cubeStartup + ceilDiv(16 * 16, cfg.cubePixels(Prec::Int8)) * 9 *
                            ceilDiv(64, cfg.chip.icParallel(Prec::Int8));
  ASSERT_GT(conv, l) << "the configuration no longer makes this compute-bound";
  EXPECT_EQ(eventsOf(sim, Engine::Tiu)[0].cycles, conv);
  EXPECT_EQ(sim.cycles(), firstGdma(cfg) + l + cfg.syncLatency + 2 * conv);
  // MACs: 64 oc x 256 points x 64 ic x 9 per conv.
  uint64_t macs = 64ull * 256 * 64 * 9;
  EXPECT_EQ(sim.stats().tiuMacs, 2 * macs);
  // Utilisation: each conv needs macs / peak cycles at full speed.
  double ideal = 2.0 * double(macs) / double(cfg.peakMacsPerCycle(Prec::Int8));
  EXPECT_DOUBLE_EQ(sim.stats().macUtilisation, ideal / double(sim.cycles()));
}

TEST(SimTiming, ChipShapeFromConfig) {
  // With 32 lanes, 64 output channels need two channel slots per lane, so
  // the cube streams twice as many points: stream = ceil(2*256/4) * 9. The
  // conv starts once fetched (a 64-byte sCONV).
  SimConfig cfg = SimConfig::defaults();
  cfg.set("chip.npu_num", "32");
  Simulator sim(cfg, SimMode::Timing);
  sim.setTracing(true);
  sim.runGroup({isa::encode(conv3x3(1, 0))}, {});
  uint64_t stream = ceilDiv(2 * 16 * 16, cfg.cubePixels(Prec::Int8)) * 9;
  uint64_t fetched =
      fetchedCycles(cfg, isa::layoutInfo(isa::LayoutId::SConv).bytes());
  EXPECT_EQ(sim.cycles(), fetched + cfg.cubeStartup + stream);
}

TEST(SimTiming, ClockAndBandwidthFromConfig) {
  // Half the DDR bandwidth doubles the DDR part of a load; the data path
  // (beats) is unchanged. The command buffer streams in at the same half
  // bandwidth (firstGdma reads the configuration).
  SimConfig cfg = SimConfig::defaults();
  cfg.set("ddr.bandwidth_gbps", "32");
  Simulator sim(cfg, SimMode::Timing);
  sim.runGroup({}, {load(1, 0, kDdrA, kA, kShape, kPrec)});
  EXPECT_EQ(sim.cycles(), firstGdma(cfg) + cfg.gdmaStartup +
                              ddrLatencyCycles(cfg) + ddrCycles(cfg, kBytes));
  SimConfig base = SimConfig::defaults();
  EXPECT_EQ(ddrCycles(cfg, kBytes), 2 * ddrCycles(base, kBytes));
}

TEST(SimTiming, GroupsRunInOrderWithLocalIds) {
  // Two groups, each using ids from 1: the second starts when the first has
  // finished on both engines; times add up.
  SimConfig cfg = SimConfig::defaults();
  Simulator sim(cfg, SimMode::Timing);
  sim.setTracing(true);
  for (int g = 0; g < 2; ++g)
    sim.runGroup(
        {add(1, 1, kC, kA, kB, kShape, kPrec), isa::makeTiuEnd(2, 2)},
        {load(1, 0, kDdrA, kA, kShape, kPrec), isa::makeGdmaEnd(2, 1)});
  // One group: launch and fetch, load from Fg for L; add at Fg + L + S for
  // V; TIU end waits GDMA id 2; GDMA end waits TIU id 1: starts at
  // Fg + L + 2S + V, takes gdma.sys_cycles; TIU end starts S after that and
  // takes tiu.sys_cycles. The next group's launch starts when both are done.
  uint64_t l = soloDmaCycles(cfg, kBytes);
  uint64_t v = vectorCycles(cfg, 16, kPrec);
  uint64_t fg = firstGdma(cfg);
  uint64_t group = fg + l + cfg.syncLatency + v + cfg.syncLatency +
                   cfg.gdmaSysCycles + cfg.syncLatency + cfg.tiuSysCycles;
  EXPECT_EQ(sim.cycles(), 2 * group);
  EXPECT_EQ(sim.groupsRun(), 2u);
  auto tiu = eventsOf(sim, Engine::Tiu);
  ASSERT_EQ(tiu.size(), 4u);
  EXPECT_EQ(tiu[2].group, 1u);
  EXPECT_EQ(tiuCycles(cfg, tiu[2].startPs), group + fg + l + cfg.syncLatency);
}

} // namespace
