//===- SimDdrTest.cpp - Shared DDR bandwidth between concurrent transfers -===//
//
// Two requesters (spawned SystemC threads) use the machine's DDR channel at
// the same time. With bandwidth B (bytes per ps = 1 / ddrPsPerByte) and
// latency L, n transfers draining together each get B / n; a transfer ends
// L after its last byte drained.
//
//===----------------------------------------------------------------------===//
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "tpusim/Tpu.h"

#include <gtest/gtest.h>

using namespace tpu;
using namespace tpu::sim;

namespace {

struct Request {
  uint64_t delayPs; ///< When the requester starts, after the test's start.
  uint64_t bytes;
  uint64_t endPs = 0; ///< Filled in: completion time after the start.
};

/// Runs the requests concurrently on the DDR channel and returns them with
/// their completion times.
std::vector<Request> runConcurrently(std::vector<Request> reqs,
                                     const SimConfig &cfg) {
  Tpu &tpu = Tpu::instance();
  tpu.ddr.configure(cfg.ddrPsPerByte(), cfg.ddrLatencyPs());
  uint64_t t0 = nowPs();
  std::vector<std::unique_ptr<DdrChannel::Port>> ports;
  for (Request &r : reqs) {
    ports.push_back(std::make_unique<DdrChannel::Port>());
    DdrChannel::Port *port = ports.back().get();
    sc_core::sc_spawn([&tpu, &r, port, t0] {
      waitPs(r.delayPs);
      tpu.ddr.transfer(*port, r.bytes);
      r.endPs = nowPs() - t0;
    });
  }
  Tpu::runKernel();
  EXPECT_EQ(tpu.ddr.active(), 0u);
  return reqs;
}

TEST(SimDdr, OneTransferGetsTheWholeChannel) {
  // 4096 bytes: L + 4096 * ps-per-byte.
  SimConfig cfg = SimConfig::defaults();
  auto r = runConcurrently({{0, 4096}}, cfg);
  EXPECT_EQ(r[0].endPs,
            cfg.ddrLatencyPs() + uint64_t(4096 * cfg.ddrPsPerByte()));
}

TEST(SimDdr, TwoSimultaneousTransfersShareEqually) {
  // Both drain at B / 2 all the time: each ends at L + 2 * 4096 / B, twice
  // the drain time of one alone.
  SimConfig cfg = SimConfig::defaults();
  auto r = runConcurrently({{0, 4096}, {0, 4096}}, cfg);
  uint64_t alone = uint64_t(4096 * cfg.ddrPsPerByte());
  EXPECT_EQ(r[0].endPs, cfg.ddrLatencyPs() + 2 * alone);
  EXPECT_EQ(r[1].endPs, cfg.ddrLatencyPs() + 2 * alone);
}

TEST(SimDdr, OverlappingTransfersShareWhileTheyOverlap) {
  // A: 4096 bytes at t = 0. B: 1024 bytes at t = d, the time A needs for
  // 2048 bytes alone (d = 2048 / B).
  //  [0, d):        A alone drains 2048, 2048 left.
  //  [d, d + 2048/B): both at B/2: B drains its 1024, A 1024 more (1024 left).
  //  then A alone: 1024 / B.
  // B ends at d + 2048/B + L = 4096/B + L; A at 4096/B + 1024/B + L.
  SimConfig cfg = SimConfig::defaults();
  double psPerByte = cfg.ddrPsPerByte();
  uint64_t d = uint64_t(2048 * psPerByte);
  auto r = runConcurrently({{0, 4096}, {d, 1024}}, cfg);
  EXPECT_EQ(r[1].endPs, uint64_t(4096 * psPerByte) + cfg.ddrLatencyPs());
  EXPECT_EQ(r[0].endPs, uint64_t(5120 * psPerByte) + cfg.ddrLatencyPs());
  // The channel never exceeds its bandwidth: 5120 bytes took 5120 / B.
}

TEST(SimDdr, LatencyOverlapsWithOtherTransfers) {
  // Transfers that do not overlap in draining do not slow each other: A
  // drains [0, 1024/B), B starts at 1024/B and drains alone.
  SimConfig cfg = SimConfig::defaults();
  uint64_t a = uint64_t(1024 * cfg.ddrPsPerByte());
  auto r = runConcurrently({{0, 1024}, {a, 1024}}, cfg);
  EXPECT_EQ(r[0].endPs, a + cfg.ddrLatencyPs());
  EXPECT_EQ(r[1].endPs, 2 * a + cfg.ddrLatencyPs());
}

TEST(SimDdr, GdmaCostFormula) {
  // Strided access: 8 runs of 100 bytes = 800 payload bytes on the DDR side.
  // Bus bytes = 8 * alignUp(100, burst) + (8 - 1) * run_switch_bytes;
  // data path = 8 * ceil(100 / datapath_bytes) beats.
  SimConfig cfg = SimConfig::defaults();
  GdmaOp op;
  op.type = isa::GdmaType::Tensor;
  GdmaWork w;
  w.bytes = 800;
  w.ddrReadBytes = 800;
  w.localWriteBytes = 800;
  w.contiguousRuns = 8;
  GdmaCost c = gdmaCost(op, w, cfg);
  EXPECT_EQ(c.startupCycles, cfg.gdmaStartup);
  EXPECT_EQ(c.ddrBusBytes,
            8 * alignUp(100, cfg.ddrBurstBytes) + 7 * cfg.ddrRunSwitchBytes);
  EXPECT_EQ(c.datapathCycles, 8 * ceilDiv(100, cfg.gdmaDatapathBytes));
  // DDR to DDR: both sides have runs; 2 runs = one per side, no switch.
  w.ddrWriteBytes = 800;
  w.localWriteBytes = 0;
  w.contiguousRuns = 2;
  c = gdmaCost(op, w, cfg);
  EXPECT_EQ(c.ddrBusBytes, 2 * alignUp(800, cfg.ddrBurstBytes));
  EXPECT_EQ(c.datapathCycles, ceilDiv(800, cfg.gdmaDatapathBytes));
}

} // namespace
