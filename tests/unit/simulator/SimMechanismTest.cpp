//===- SimMechanismTest.cpp - In-flight GDMA, bank contention, MCU, cube --===//
//
// Exact cycles of the timing mechanisms beyond one command at a time, on
// hand-built streams (timing-only mode). Every number is derived in a
// comment from the configuration; the tests read the constants from
// SimConfig. Abbreviations:
//   L     = solo DMA of 4096 bytes in one run (soloDmaCycles)
//         = gdma.startup + latency + D when DDR-bound
//   D     = DDR drain time of 4096 bytes = 4096 / bytes-per-cycle
//   P     = gdma.startup
//   S     = sync.latency
//   V(e)  = vector command over e elements per lane
//   Ft/Fg = start of the first TIU / GDMA command of a group: the MCU launch,
//           then ddr.latency and the command's bytes from the command buffer
//           (fetchedCycles; 64-byte sAR / sCONV, 96-byte DMA_tensor)
//
//===----------------------------------------------------------------------===//
#include "SimTestUtil.h"

#include "tpu/isa/Estimate.h"

#include "tpusim/Timing.h"

#include <gtest/gtest.h>

using namespace tpu;
using namespace tpu::sim;
using namespace tpu::sim::simtest;
using isa::Engine;

namespace {

// int32 (1, 64, 4, 4): 16 elements = 64 bytes per lane, 4096 bytes in all.
const Shape kShape{1, 64, 4, 4};
constexpr Prec kPrec = Prec::Int32;
constexpr uint64_t kBytes = 64 * 16 * 4;

uint64_t firstTiu(const SimConfig &cfg) {
  return fetchedCycles(cfg, isa::layoutInfo(isa::LayoutId::SAR).bytes());
}
uint64_t firstGdma(const SimConfig &cfg) {
  return fetchedCycles(cfg, isa::layoutInfo(isa::LayoutId::DmaTensor).bytes());
}

/// A DMA_tensor copying the EU-aligned tensor `s` inside local memory, from
/// lane-0 offset `src` to lane-0 offset `dst` (no DDR traffic).
RawCommand localCopy(uint32_t id, uint32_t dep, uint32_t src, uint32_t dst,
                     Shape s, Prec p) {
  RawCommand c = dmaTensor(id, dep, /*load=*/true, 0, dst, s, p);
  isa::cmd::DmaTensor t = isa::decodeAs<isa::cmd::DmaTensor>(c);
  uint64_t local = kLmemBase + src;
  t.src_start_addr_l32 = local & 0xFFFFFFFF;
  t.src_start_addr_h8 = local >> 32;
  // Source strides: the same EU-aligned layout as the destination.
  t.src_nstride = t.dst_nstride;
  t.src_cstride = t.dst_cstride;
  t.src_hstride = t.dst_hstride;
  t.src_wstride = t.dst_wstride;
  return isa::encode(t);
}

/// The three back-to-back 4096-byte loads of the in-flight tests.
std::vector<RawCommand> threeLoads() {
  return {
      load(1, 0, kDdrBase, laddr(0, 0), kShape, kPrec),
      load(2, 0, kDdrBase + 0x10000, laddr(0, kBankBytes), kShape, kPrec),
      load(3, 0, kDdrBase + 0x20000, laddr(0, 2 * kBankBytes), kShape, kPrec)};
}

std::vector<uint64_t> loadEnds(uint64_t outstanding) {
  SimConfig cfg = SimConfig::defaults();
  cfg.set("gdma.max_outstanding", std::to_string(outstanding));
  Simulator sim(cfg, SimMode::Timing);
  sim.setTracing(true);
  sim.runGroup({}, threeLoads());
  std::vector<uint64_t> ends;
  for (const TraceEvent &ev : eventsOf(sim, Engine::Gdma))
    ends.push_back(tiuCycles(cfg, ev.endPs) - firstGdma(cfg));
  EXPECT_EQ(sim.cycles(), firstGdma(cfg) + ends.back());
  return ends;
}

TEST(SimGdmaInFlight, OutstandingCommandsHideLatency) {
  SimConfig cfg = SimConfig::defaults();
  uint64_t l = soloDmaCycles(cfg, kBytes), d = ddrCycles(cfg, kBytes);
  uint64_t p = cfg.gdmaStartup;
  // The loads are DDR-bound and the next one's start-up fits in one drain,
  // which the derivations below use.
  ASSERT_EQ(l, p + ddrLatencyCycles(cfg) + d);
  ASSERT_LE(ceilDiv(kBytes, cfg.gdmaDatapathBytes), d);
  ASSERT_LE(p, d);
  // One at a time: every load waits for the previous one: L, 2L, 3L.
  EXPECT_EQ(loadEnds(1), (std::vector<uint64_t>{l, 2 * l, 3 * l}));
  // Two in flight: load 2 is issued at P (when load 1's start-up is done),
  // joins the channel when load 1 has drained (P + D, later than 2P) and
  // ends D after load 1: L + D. Load 3 needs load 1's slot: issued at L,
  // it joins at L + P, after load 2 drained (P + 2D), and runs like a
  // solo load: 2L.
  ASSERT_LE(p + 2 * d, l + p);
  EXPECT_EQ(loadEnds(2), (std::vector<uint64_t>{l, l + d, 2 * l}));
  // Three in flight: load 3 is issued at 2P and follows load 2 through the
  // channel (P + 2D > 3P): L + 2D. The latency is paid once.
  ASSERT_LE(3 * p, p + 2 * d);
  EXPECT_EQ(loadEnds(3), (std::vector<uint64_t>{l, l + d, l + 2 * d}));
}

TEST(SimGdmaInFlight, IdsCompleteInOrder) {
  // GDMA: a 4096-byte load (id 1), then a local-to-local copy (id 2) of the
  // same size whose own data is done long before the load's: P + 64 beats
  // on the data path, which it gets after the load's beats. Ids complete in
  // order, so id 2 completes with id 1 at Fg + L, and the TIU add waiting
  // for id 2 starts S later. (The copy reads bank 4 and writes bank 5; the
  // load writes bank 0; the add runs after both: no contention.)
  SimConfig cfg = SimConfig::defaults();
  ASSERT_GE(cfg.gdmaMaxOutstanding, 2u);
  Simulator sim(cfg, SimMode::Timing);
  sim.setTracing(true);
  const uint32_t a = laddr(0, 0), b = laddr(0, kBankBytes),
                 c = laddr(0, 2 * kBankBytes);
  sim.runGroup(
      {add(1, 2, c, a, b, kShape, kPrec)},
      {load(1, 0, kDdrBase, a, kShape, kPrec),
       localCopy(2, 0, 4 * kBankBytes, 5 * kBankBytes, kShape, kPrec)});
  uint64_t l = soloDmaCycles(cfg, kBytes), fg = firstGdma(cfg);
  uint64_t beats = ceilDiv(kBytes, cfg.gdmaDatapathBytes);
  // The copy's own data: issued at Fg + P, start-up until Fg + 2P, beats
  // after the load's (which end at Fg + P + beats): Fg + P + 2 beats.
  ASSERT_LT(cfg.gdmaStartup + 2 * beats, l);
  auto gdma = eventsOf(sim, Engine::Gdma);
  ASSERT_EQ(gdma.size(), 2u);
  EXPECT_EQ(tiuCycles(cfg, gdma[1].startPs), fg + cfg.gdmaStartup);
  EXPECT_EQ(tiuCycles(cfg, gdma[1].endPs), fg + l);
  auto tiu = eventsOf(sim, Engine::Tiu);
  EXPECT_EQ(tiuCycles(cfg, tiu[0].startPs), fg + l + cfg.syncLatency);
  EXPECT_EQ(sim.cycles(),
            fg + l + cfg.syncLatency + vectorCycles(cfg, 16, kPrec));
  EXPECT_EQ(sim.stats().gdmaLmemConflicts, 0u);
}

/// A long int32 add over (1, 64, 64, 64): 4096 elements = 16 KiB (one bank)
/// per operand and lane; operands in banks 0 and 1, result in bank 2.
const Shape kBig{1, 64, 64, 64};

/// Runs the big add beside a local copy of kShape from bank `srcBank` to
/// bank `dstBank` and returns the simulator.
std::unique_ptr<Simulator> addBesideCopy(const SimConfig &cfg, uint64_t srcBank,
                                         uint64_t dstBank) {
  auto sim = std::make_unique<Simulator>(cfg, SimMode::Timing);
  sim->setTracing(true);
  sim->runGroup({add(1, 0, laddr(0, 2 * kBankBytes), laddr(0, 0),
                     laddr(0, kBankBytes), kBig, kPrec)},
                {localCopy(1, 0, uint32_t(srcBank * kBankBytes),
                           uint32_t(dstBank * kBankBytes), kShape, kPrec)});
  return sim;
}

TEST(SimBankContention, GdmaBeatsIntoBanksTheTiuUsesWait) {
  SimConfig cfg = SimConfig::defaults();
  uint64_t v = vectorCycles(cfg, 64 * 64, kPrec);
  uint64_t beats = ceilDiv(kBytes, cfg.gdmaDatapathBytes);
  uint64_t ft = firstTiu(cfg), fg = firstGdma(cfg);
  uint64_t beatsFrom = fg + cfg.gdmaStartup;
  // The add covers the copy's whole data phase [Fg + P, Fg + P + beats).
  ASSERT_LE(ft, beatsFrom);
  ASSERT_GE(ft + v, beatsFrom + beats);

  // Control: the copy moves bank 4 -> bank 5, which the add does not use:
  // P + beats.
  auto clean = addBesideCopy(cfg, 4, 5);
  auto g = eventsOf(*clean, Engine::Gdma);
  EXPECT_EQ(tiuCycles(cfg, g[0].endPs), fg + cfg.gdmaStartup + beats);
  EXPECT_EQ(clean->stats().gdmaLmemConflicts, 0u);

  // The copy writes bank 0, which the add reads, and reads bank 4: half of
  // its beats (one of its two banks) go to a bank the add holds during the
  // whole data phase, and each of those waits one cycle
  // (lmem.gdma_conflict_pct = 100): P + beats + beats / 2. The add is not
  // slowed.
  ASSERT_EQ(cfg.lmemGdmaConflictPct, 100u);
  auto hit = addBesideCopy(cfg, 4, 0);
  g = eventsOf(*hit, Engine::Gdma);
  EXPECT_EQ(tiuCycles(cfg, g[0].endPs),
            fg + cfg.gdmaStartup + beats + beats / 2);
  EXPECT_EQ(hit->stats().gdmaLmemConflicts, 1u);
  EXPECT_EQ(hit->stats().gdmaLmemConflictCycles, beats / 2);
  EXPECT_EQ(eventsOf(*hit, Engine::Tiu)[0].cycles, v);
  EXPECT_EQ(hit->cycles(), ft + v);

  // Both of its banks in use (bank 1 -> bank 0): every beat waits.
  auto both = addBesideCopy(cfg, 1, 0);
  g = eventsOf(*both, Engine::Gdma);
  EXPECT_EQ(tiuCycles(cfg, g[0].endPs), fg + cfg.gdmaStartup + 2 * beats);

  // The penalty comes from the configuration: 0 turns it off.
  SimConfig off = cfg;
  off.set("lmem.gdma_conflict_pct", "0");
  auto free = addBesideCopy(off, 1, 0);
  g = eventsOf(*free, Engine::Gdma);
  EXPECT_EQ(tiuCycles(off, g[0].endPs), fg + off.gdmaStartup + beats);
}

TEST(SimBankContention, StalledBeatsDelayTheNextTransfersBeats) {
  // Two local copies issued back to back beside the big add: the first
  // (bank 1 -> bank 0, both banks the add holds) waits a cycle on every
  // beat, so its data path ends at Fg + P + 2 beats; the second (bank 4 ->
  // bank 5, free) was issued at Fg + P, before that stall was known, but
  // the data path is one per engine: its beats follow the first's,
  // Fg + P + 3 beats. The compiler's cost model (isa::estimateGroup) gives
  // the same time.
  SimConfig cfg = SimConfig::defaults();
  uint64_t v = vectorCycles(cfg, 64 * 64, kPrec);
  uint64_t beats = ceilDiv(kBytes, cfg.gdmaDatapathBytes);
  uint64_t ft = firstTiu(cfg), fg = firstGdma(cfg);
  ASSERT_GE(cfg.gdmaMaxOutstanding, 2u);
  ASSERT_LE(cfg.gdmaStartup, beats); // the second waits for the data path
  ASSERT_GE(ft + v, fg + cfg.gdmaStartup + 3 * beats); // the add covers both
  std::vector<RawCommand> tiu = {add(1, 0, laddr(0, 2 * kBankBytes),
                                     laddr(0, 0), laddr(0, kBankBytes), kBig,
                                     kPrec)};
  std::vector<RawCommand> gdma = {
      localCopy(1, 0, kBankBytes, 0, kShape, kPrec),
      localCopy(2, 0, 4 * kBankBytes, 5 * kBankBytes, kShape, kPrec)};
  Simulator sim(cfg, SimMode::Timing);
  sim.setTracing(true);
  sim.runGroup(tiu, gdma);
  auto g = eventsOf(sim, Engine::Gdma);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(tiuCycles(cfg, g[0].endPs), fg + cfg.gdmaStartup + 2 * beats);
  EXPECT_EQ(tiuCycles(cfg, g[1].endPs), fg + cfg.gdmaStartup + 3 * beats);
  EXPECT_EQ(sim.stats().gdmaLmemConflicts, 1u);
  EXPECT_EQ(sim.stats().gdmaLmemConflictCycles, beats);

  isa::Estimate e = isa::estimateGroup(tiu, gdma, cfg.machine());
  EXPECT_EQ(e.gdmaConflictCycles, beats);
  EXPECT_EQ(e.cycles, sim.cycles());
}

TEST(SimMcu, EveryGroupPaysTheLaunch) {
  // Two groups of one add each: each takes the launch, the fetch of the
  // 64-byte command (ddr.latency + 1 cycle) and V(16); the second group is
  // launched when the first has finished.
  SimConfig cfg = SimConfig::defaults();
  cfg.set("mcu.group_launch_ns", "2500");
  Simulator sim(cfg, SimMode::Timing);
  RawCommand a = add(1, 0, laddr(0, 2 * kBankBytes), laddr(0, 0),
                     laddr(0, kBankBytes), kShape, kPrec);
  sim.runGroup({a}, {});
  sim.runGroup({a}, {});
  ASSERT_EQ(ddrCycles(cfg, 64), 1u); // 64 bytes per cycle at 1 GHz
  ASSERT_EQ(a.bytes(), 64u);
  uint64_t group =
      2500 + ddrLatencyCycles(cfg) + 1 + vectorCycles(cfg, 16, kPrec);
  EXPECT_EQ(sim.cycles(), 2 * group);
  EXPECT_EQ(sim.stats().mcuLaunchCycles, 2u * 2500u);
}

TEST(SimMcu, CommandFetchCanBindAStreamOfShortCommands) {
  // At 2 GB/s the 16-byte SYSID commands arrive one per 8 cycles, slower
  // than the TIU runs them (tiu.sys_cycles = 4): command i (from 0) starts
  // when it has arrived, launch + latency + 8 (i + 1), so ten of them end at
  // launch + latency + 80 + 4. The engine waits for the fetch
  // latency + 8 cycles before the first and 8 - 4 before each other one.
  SimConfig cfg = SimConfig::defaults();
  cfg.set("ddr.bandwidth_gbps", "2");
  ASSERT_EQ(cfg.tiuSysCycles, 4u);
  std::vector<RawCommand> tiu;
  for (uint32_t i = 1; i <= 10; ++i)
    tiu.push_back(isa::makeTiuEnd(i, 0));
  ASSERT_EQ(tiu[0].bytes(), 16u);
  Simulator sim(cfg, SimMode::Timing);
  sim.runGroup(tiu, {});
  uint64_t lat = ddrLatencyCycles(cfg);
  EXPECT_EQ(sim.cycles(), launchCycles(cfg) + lat + 80 + 4);
  EXPECT_EQ(sim.stats().fetchWaitCycles, lat + 8 + 9 * 4);
}

TEST(SimCube, InputRunsThroughTheLanePort) {
  // cubeFetchWords(outH, outW, points, strideX, elemBits, portBytes):
  // 4-point int8 steps inside 16-wide rows: one word each, 256 / 4 = 64.
  EXPECT_EQ(cubeFetchWords(16, 16, 4, 1, 8, 64), 64u);
  // fp32, 16 points = 64 bytes = one word per step; a 56-wide row is 3 full
  // steps and a step of 8 points: 4 words.
  EXPECT_EQ(cubeFetchWords(1, 56, 16, 1, 32, 64), 4u);
  // Two 56-wide rows, 7 steps: the 4th step (points 48..63) takes 8 points
  // of each row, two runs: 8 words.
  EXPECT_EQ(cubeFetchWords(2, 56, 16, 1, 32, 64), 8u);
  // ...and the pattern repeats every two rows: 100 rows = 50 x 8 = 400.
  EXPECT_EQ(cubeFetchWords(100, 56, 16, 1, 32, 64), 400u);
  // Stride 2: the 16 inputs of a step span 31 elements = 124 bytes, two
  // words; a 32-wide row is two steps: 4 words.
  EXPECT_EQ(cubeFetchWords(1, 32, 16, 2, 32, 64), 4u);
  // 7x7 fp32: steps of 16 points span three rows (7 + 7 + 2, 5 + 7 + 4,
  // 3 + 7 + 6: three runs of at most 28 bytes, one word each) and the last
  // step is one point: 3 + 3 + 3 + 1 = 10 words for ceil(49 / 16) = 4 steps.
  EXPECT_EQ(cubeFetchWords(7, 7, 16, 1, 32, 64), 10u);
  // 7x7 fp16, 4-point steps: the steps starting at points 4, 12, 20, 32 and
  // 40 cross a row (two runs), the other eight do not: 13 steps, 18 words.
  EXPECT_EQ(cubeFetchWords(7, 7, 4, 1, 16, 64), 18u);
}

/// A 3x3 convolution 64 -> 64 channels, 9x9 -> 7x7, stride 1, at `prec`.
RawCommand conv7x7(Prec prec) { return isa::encode(conv3x3Cmd(1, 0, prec, 7)); }

TEST(SimCube, Fp32ConvOnASmallPlaneIsPortBound) {
  // fp32: the cube reduces 1 input channel per step for 16 output points;
  // 7x7 outputs need 10 port words per kernel position (SimCube above),
  // times 9 kernel positions and 64 input-channel steps:
  //   C = tiu.cube_startup + 10 * 9 * 64 = 32 + 5760
  // instead of 4 * 9 * 64 if every step were one word.
  SimConfig cfg = SimConfig::defaults();
  ASSERT_EQ(cfg.cubePixels(Prec::Fp32), 16u);
  ASSERT_EQ(cfg.chip.icParallel(Prec::Fp32), 1u);
  Simulator sim(cfg, SimMode::Timing);
  sim.setTracing(true);
  sim.runGroup({conv7x7(Prec::Fp32)}, {});
  EXPECT_EQ(eventsOf(sim, Engine::Tiu)[0].cycles,
            cfg.cubeStartup + 10 * 9 * 64);
  // int8 on the same shape: 4-point steps, 18 words per kernel position
  // (the 8-bit runs are as short as the fp16 ones above), one input-channel
  // step of 64: 32 + 18 * 9.
  Simulator sim8(cfg, SimMode::Timing);
  sim8.setTracing(true);
  sim8.runGroup({conv7x7(Prec::Int8)}, {});
  ASSERT_EQ(cfg.cubePixels(Prec::Int8), 4u);
  EXPECT_EQ(eventsOf(sim8, Engine::Tiu)[0].cycles, cfg.cubeStartup + 18 * 9);
}

} // namespace
