//===- SimEstimateTest.cpp - Static estimate against the simulator --------===//
//
// isa::estimateGroup schedules a group as the SystemC model does, less the
// sharing of DDR between requesters. On a generated double-buffered stream
// (loads of the next tile while the TIU works on this one, stores behind the
// TIU, operands placed in varying banks) it must equal the simulator's time,
// busy and wait times, GDMA stalls and bytes exactly, with GDMA beats stalled
// by TIU commands in the same banks (the default machine) and without
// (lmem.gdma_conflict_pct = 0). Nothing in these streams shares DDR, the one
// effect the estimate leaves out.
//
//===----------------------------------------------------------------------===//
#include "SimTestUtil.h"

#include "tpu/isa/Estimate.h"

#include <gtest/gtest.h>

#include <random>

using namespace tpu;
using namespace tpu::sim;
using namespace tpu::sim::simtest;

namespace {

/// Streams generated (seeds 1..kSeeds).
constexpr unsigned kSeeds = 29;

struct Group {
  std::vector<RawCommand> tiu, gdma;
};

/// `tiles` tiles of loads A, B -> TIU R = A + B (and up to three more adds
/// into R) -> store R, double-buffered, with random shapes and bank offsets,
/// ending like CmdEmitter::finish (each end command waits for the other
/// engine's last command).
Group generate(unsigned tiles, unsigned seed) {
  std::mt19937 rng(seed);
  auto pick = [&](std::initializer_list<uint32_t> values) {
    std::uniform_int_distribution<size_t> d(0, values.size() - 1);
    return *(values.begin() + d(rng));
  };
  Group g;
  uint32_t gdmaId = 0, tiuId = 0;
  struct Tile {
    Shape shape;
    Prec prec;
    uint32_t a, b, r;
    uint32_t loadedId = 0; ///< GDMA id of the tile's last load.
    uint32_t computedId = 0;
  };
  std::vector<Tile> t(tiles);
  // TIU id after which the buffers of tile i are free again (the compute of
  // tile i - 2, which used the same buffer set).
  auto freeAfter = [&](unsigned i) {
    return i >= 2 ? t[i - 2].computedId : 0u;
  };
  for (unsigned i = 0; i < tiles; ++i) {
    Tile &x = t[i];
    x.prec = pick({0, 1}) ? Prec::Fp16 : Prec::Int32;
    x.shape = {1, pick({16, 64, 128}), pick({4, 8, 16}), pick({8, 16, 32})};
    // Buffer set i % 2 holds A and B in banks 0..3 or 4..7. R is either
    // in bank 12, both sets sharing it (one half each), so that the store
    // of tile i meets the TIU writing tile i + 1's R in that bank, or in a
    // bank of its own (13 + set).
    uint32_t set = i % 2;
    auto at = [](uint32_t bank, uint32_t offset) {
      return laddr(0, bank * uint32_t(kBankBytes) + offset);
    };
    x.a = at(4 * set + pick({0, 1}), 0);
    x.b = at(4 * set + pick({2, 3}), 0);
    x.r =
        pick({0, 1}) ? at(12, set * uint32_t(kBankBytes) / 2) : at(13 + set, 0);
  }
  uint64_t ddrIn = kDdrBase, ddrOut = kDdrBase + 0x4000000;
  auto loadTile = [&](unsigned i) {
    Tile &x = t[i];
    uint64_t bytes = x.shape.count() * elemBytes(x.prec);
    g.gdma.push_back(load(++gdmaId, freeAfter(i), ddrIn, x.a, x.shape, x.prec));
    g.gdma.push_back(load(++gdmaId, 0, ddrIn + bytes, x.b, x.shape, x.prec));
    ddrIn += 2 * bytes;
    x.loadedId = gdmaId;
  };
  loadTile(0);
  for (unsigned i = 0; i < tiles; ++i) {
    Tile &x = t[i];
    g.tiu.push_back(add(++tiuId, x.loadedId, x.r, x.a, x.b, x.shape, x.prec));
    for (uint32_t k = pick({0, 1, 2, 3}); k > 0; --k)
      g.tiu.push_back(add(++tiuId, 0, x.r, x.r, x.a, x.shape, x.prec));
    x.computedId = tiuId;
    if (i + 1 < tiles)
      loadTile(i + 1);
    // Stores go to DDR, or (one in three) to local memory in bank 15: a
    // move without DDR, whose time is its data path, so beats stalled by
    // the TIU show in the total.
    if (pick({0, 1, 2}) == 0) {
      uint64_t bank15 = kLmemBase + laddr(0, 15 * uint32_t(kBankBytes));
      g.gdma.push_back(
          store(++gdmaId, x.computedId, x.r, bank15, x.shape, x.prec));
    } else {
      g.gdma.push_back(
          store(++gdmaId, x.computedId, x.r, ddrOut, x.shape, x.prec));
      ddrOut += x.shape.count() * elemBytes(x.prec);
    }
  }
  g.tiu.push_back(isa::makeTiuEnd(tiuId + 1, gdmaId));
  g.gdma.push_back(isa::makeGdmaEnd(gdmaId + 1, tiuId));
  return g;
}

SimStats simulate(const Group &g, const SimConfig &cfg) {
  Simulator sim(cfg, SimMode::Timing);
  sim.runGroup(g.tiu, g.gdma);
  return sim.stats();
}

void expectEqual(const Group &g, const SimConfig &cfg, unsigned seed) {
  SimStats s = simulate(g, cfg);
  isa::Estimate e = isa::estimateGroup(g.tiu, g.gdma, cfg.machine());
  EXPECT_EQ(e.cycles, s.cycles) << "seed " << seed;
  EXPECT_EQ(e.tiuBusyCycles, s.tiuBusyCycles) << "seed " << seed;
  EXPECT_EQ(e.gdmaBusyCycles, s.gdmaBusyCycles) << "seed " << seed;
  EXPECT_EQ(e.tiuWaitPs, s.tiuWaitPs) << "seed " << seed;
  EXPECT_EQ(e.gdmaConflictCycles, s.gdmaLmemConflictCycles) << "seed " << seed;
  EXPECT_EQ(e.ddrReadBytes, s.ddrReadBytes);
  EXPECT_EQ(e.ddrWriteBytes, s.ddrWriteBytes);
  EXPECT_EQ(e.ddrBusBytes, s.ddrBusBytes);
  EXPECT_EQ(e.launchCycles, s.mcuLaunchCycles);
}

TEST(SimEstimate, EqualsTheSimulatorWithoutBankContention) {
  SimConfig cfg = SimConfig::defaults();
  cfg.set("lmem.gdma_conflict_pct", "0");
  for (unsigned seed = 1; seed <= kSeeds; ++seed)
    expectEqual(generate(12, seed), cfg, seed);
}

TEST(SimEstimate, EqualsTheSimulatorWithBankContention) {
  SimConfig cfg = SimConfig::defaults();
  uint64_t stalled = 0;
  for (unsigned seed = 1; seed <= kSeeds; ++seed) {
    Group g = generate(12, seed);
    expectEqual(g, cfg, seed);
    stalled +=
        isa::estimateGroup(g.tiu, g.gdma, cfg.machine()).gdmaConflictCycles !=
        0;
  }
  // The streams do exercise the contention (measured: 25 of the 29 streams
  // have stalled beats).
  EXPECT_GT(stalled, kSeeds / 2);
}

} // namespace
