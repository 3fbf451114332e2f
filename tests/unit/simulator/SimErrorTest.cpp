//===- SimErrorTest.cpp - Runs the machine stops, and what they say -------===//
//
// Each error kind must stop the run with a SimError whose message names the
// engine, the command group, the command index, its id and its disassembly.
// After an error the (process-wide) SystemC model must be reusable.
//
//===----------------------------------------------------------------------===//
#include "SimTestUtil.h"

#include <gtest/gtest.h>

using namespace tpu;
using namespace tpu::sim;
using namespace tpu::sim::simtest;

namespace {

const Shape kShape{1, 64, 4, 4};
constexpr Prec kPrec = Prec::Int32;
const uint32_t kA = laddr(0, 0), kB = laddr(0, kBankBytes),
               kC = laddr(0, 2 * kBankBytes);

/// Runs the group and returns the SimError it must raise.
SimError runExpectingError(SimMode mode, const std::vector<RawCommand> &tiu,
                           const std::vector<RawCommand> &gdma,
                           SimConfig cfg = SimConfig::defaults()) {
  Simulator sim(cfg, mode);
  try {
    sim.runGroup(tiu, gdma);
  } catch (const SimError &e) {
    return e;
  }
  ADD_FAILURE() << "the run did not fail";
  return SimError(SimError::Kind::InvalidCommand, "");
}

void expectMentions(const SimError &e,
                    std::initializer_list<const char *> parts) {
  std::string msg = e.what();
  for (const char *p : parts)
    EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' missing from:\n"
                                              << msg;
}

/// A simple run must succeed after any error: the model is back to idle.
/// One add alone: it starts when it has been fetched after the group
/// launch, and takes V(16).
void expectModelReusable() {
  SimConfig cfg = SimConfig::defaults();
  Simulator sim(cfg, SimMode::Timing);
  RawCommand a = add(1, 0, kC, kA, kB, kShape, kPrec);
  sim.runGroup({a}, {});
  EXPECT_EQ(sim.cycles(),
            fetchedCycles(cfg, a.bytes()) + vectorCycles(cfg, 16, kPrec));
}

TEST(SimError, MutualWaitIsADeadlock) {
  // TIU id 1 waits for GDMA id 2; GDMA id 1 (before id 2) waits for TIU id 1.
  SimError e =
      runExpectingError(SimMode::Full, {add(1, 2, kC, kA, kB, kShape, kPrec)},
                        {load(1, 1, kDdrBase, kA, kShape, kPrec),
                         load(2, 0, kDdrBase, kB, kShape, kPrec)});
  EXPECT_EQ(e.kind(), SimError::Kind::Deadlock);
  expectMentions(e, {"deadlock in group 0",
                     "TIU command 0 (cmd_id 1, "
                     "cmd_id_dep 2)",
                     "waits for GDMA id 2",
                     "GDMA command 0 (cmd_id 1, cmd_id_dep 1)",
                     "waits for TIU id 1", "sAR.add", "DMA_tensor"});
  expectModelReusable();
}

TEST(SimError, WaitForAnIdThatNeverComes) {
  // The GDMA stream ends at id 1; the TIU waits for id 5.
  for (SimMode mode : {SimMode::Full, SimMode::Functional, SimMode::Timing}) {
    SimError e = runExpectingError(mode, {add(1, 5, kC, kA, kB, kShape, kPrec)},
                                   {load(1, 0, kDdrBase, kA, kShape, kPrec)});
    EXPECT_EQ(e.kind(), SimError::Kind::Deadlock) << simModeName(mode);
    expectMentions(e, {"TIU command 0 (cmd_id 1, cmd_id_dep 5) of group 0",
                       "waits for GDMA id 5", "GDMA has completed up to id 1",
                       "GDMA finished its stream"});
  }
  expectModelReusable();
}

TEST(SimError, LocalAddressOutsideTheLane) {
  // 16 int32 per lane starting 32 bytes before the end of the lane.
  uint32_t nearEnd = laddr(0, (1u << kLaneShift) - 32);
  for (SimMode mode : {SimMode::Full, SimMode::Timing}) {
    SimError e = runExpectingError(mode,
                                   {add(1, 0, kC, kA, kB, kShape, kPrec),
                                    add(2, 0, nearEnd, kA, kB, kShape, kPrec)},
                                   {});
    EXPECT_EQ(e.kind(), SimError::Kind::Memory) << simModeName(mode);
    expectMentions(
        e, {"TIU command 1 (cmd_id 2, cmd_id_dep 0) of group 0", "sAR.add"});
  }
  expectModelReusable();
}

TEST(SimError, GlobalAddressOutsideDdr) {
  // Just past the DDR (chip.gmem_bytes from its base).
  SimConfig cfg = SimConfig::defaults();
  uint64_t past = cfg.chip.gmemBase + cfg.chip.gmemBytes + 0x1000;
  for (SimMode mode : {SimMode::Full, SimMode::Timing}) {
    SimError e = runExpectingError(mode, {},
                                   {load(1, 0, kDdrBase, kA, kShape, kPrec),
                                    load(2, 0, past, kA, kShape, kPrec)});
    EXPECT_EQ(e.kind(), SimError::Kind::Memory) << simModeName(mode);
    expectMentions(e, {"GDMA command 1 (cmd_id 2, cmd_id_dep 0) of group 0",
                       "DMA_tensor"});
  }
  // Outside every memory region.
  SimError e = runExpectingError(SimMode::Full, {},
                                 {load(7, 0, 0x50000000, kA, kShape, kPrec)});
  EXPECT_EQ(e.kind(), SimError::Kind::Memory);
  expectMentions(e, {"GDMA command 0 (cmd_id 7", "0x50000000"});
  expectModelReusable();
}

TEST(SimError, MisalignedOperand) {
  // int32 operands must start on a 4-byte boundary.
  SimError e = runExpectingError(
      SimMode::Full, {add(3, 0, kC, laddr(0, 2), kB, kShape, kPrec)}, {});
  EXPECT_EQ(e.kind(), SimError::Kind::Memory);
  expectMentions(e, {"TIU command 0 (cmd_id 3", "aligned", "sAR.add"});
  expectModelReusable();
}

TEST(SimError, UnknownOpcode) {
  // tsk_typ 8 has no layout on the BM1684X. The add before it runs; the run
  // stops when the TIU reaches the unknown command.
  isa::cmd::TiuLong bad;
  bad.cmd_id = 2;
  bad.tsk_typ = 8;
  std::vector<uint8_t> tiu =
      isa::packBuffer({add(1, 0, kC, kA, kB, kShape, kPrec), isa::encode(bad),
                       isa::makeTiuEnd(3, 0)});
  SimConfig cfg = SimConfig::defaults();
  Simulator sim(cfg, SimMode::Full);
  try {
    sim.runGroup(tiu, std::vector<uint8_t>());
    FAIL() << "the unknown opcode was executed";
  } catch (const SimError &e) {
    EXPECT_EQ(e.kind(), SimError::Kind::UnknownCommand);
    expectMentions(e, {"TIU command 1 (cmd_id 2) of group 0", "unknown opcode",
                       "tsk_typ=8", "raw head"});
  }
  EXPECT_EQ(sim.stats().tiuCommands, 1u);
}

TEST(SimError, SimulatorsKeepSeparateState) {
  // Two simulators share the SystemC kernel but not memories or counters.
  SimConfig cfg = SimConfig::defaults();
  Simulator a(cfg, SimMode::Full), b(cfg, SimMode::Full);
  uint8_t one = 1;
  a.state().gmem.write(kDdrBase, &one, 1);
  a.runGroup({add(1, 0, kC, kA, kB, kShape, kPrec)}, {});
  uint8_t seen = 7;
  b.state().gmem.read(kDdrBase, &seen, 1);
  EXPECT_EQ(seen, 0);
  EXPECT_EQ(a.stats().tiuCommands, 1u);
  EXPECT_EQ(b.stats().tiuCommands, 0u);
  EXPECT_EQ(b.cycles(), 0u);
}

} // namespace
