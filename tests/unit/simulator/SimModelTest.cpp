//===- SimModelTest.cpp - Bank conflicts, modes, stats and trace ----------===//
#include "SimTestUtil.h"

#include "tpusim/Stats.h"
#include "tpusim/Trace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>

using namespace tpu;
using namespace tpu::sim;
using namespace tpu::sim::simtest;
using isa::Engine;

namespace {

// int32 (1, 64, 16, 16): 256 elements = 1024 bytes per lane, 16 EU steps.
const Shape kShape{1, 64, 16, 16};
constexpr Prec kPrec = Prec::Int32;
constexpr uint64_t kPerLane = 16 * 16;
constexpr uint64_t kLaneBytesUsed = kPerLane * 4;

/// Cycles of one add whose result is at lane offset `res`, operands at
/// `a` and `b`, from its start (the group time less the launch and fetch
/// of the command, fetchedCycles).
uint64_t addCycles(uint32_t res, uint32_t a, uint32_t b,
                   SimStats *stats = nullptr) {
  SimConfig cfg = SimConfig::defaults();
  Simulator sim(cfg, SimMode::Timing);
  RawCommand c = add(1, 0, res, a, b, kShape, kPrec);
  sim.runGroup({c}, {});
  if (stats)
    *stats = sim.stats();
  return sim.cycles() - fetchedCycles(cfg, c.bytes());
}

TEST(SimBank, ElementwiseInOneBankPaysItsStreamAgain) {
  // An element-wise op reads one port word of each operand and writes one
  // word of result per step, so when the result shares the bank of an
  // operand every one of its stream's beats collides with a write beat:
  // min(read beats, write beats) = the streaming time (1024 bytes per lane,
  // 16 words of 64 bytes each way), charged at tiu.bank_conflict_pct.
  SimConfig cfg = SimConfig::defaults();
  uint64_t stream = ceilDiv(kPerLane, cfg.chip.euNum(kPrec));
  ASSERT_EQ(stream, kLaneBytesUsed / cfg.chip.euBytes);
  uint64_t clean = cfg.euStartup + stream;
  uint64_t penalty = ceilDiv(stream * cfg.bankConflictPct, 100);
  // Banks 0, 1, 2: no conflict.
  SimStats s;
  EXPECT_EQ(addCycles(laddr(0, 2 * kBankBytes), laddr(0, 0),
                      laddr(0, kBankBytes), &s),
            clean);
  EXPECT_EQ(s.bankConflicts, 0u);
  // Result in operand 0's bank (bank 0, different bytes): operand 0's 16
  // read beats against the result's 16 write beats; operand 1 (bank 1) is
  // not in a shared bank.
  EXPECT_EQ(addCycles(laddr(0, 8192), laddr(0, 0), laddr(0, kBankBytes), &s),
            clean + penalty);
  EXPECT_EQ(s.bankConflicts, 1u);
  EXPECT_EQ(s.bankConflictCycles, penalty);
  // In place (result = operand 1) conflicts the same way.
  EXPECT_EQ(addCycles(laddr(0, kBankBytes), laddr(0, 0), laddr(0, kBankBytes)),
            clean + penalty);
  // Both operands in the result's bank: 32 read beats, still 16 write
  // beats, so 16 collisions.
  EXPECT_EQ(addCycles(laddr(0, 8192), laddr(0, 0), laddr(0, 4096)),
            clean + penalty);
}

TEST(SimBank, BankBoundaryIsExact) {
  // Operand 0 ends exactly at the end of bank 0 and the result starts bank
  // 1: no conflict. Moved 64 bytes later, operand 0 reaches into bank 1
  // with 64 of its 1024 bytes per lane: the 16-cycle stream reads that part
  // in ceil(16 * 64 / 1024) = 1 beat, against the result's 16 write beats
  // in bank 1, so one beat collides.
  SimConfig cfg = SimConfig::defaults();
  uint64_t stream = ceilDiv(kPerLane, cfg.chip.euNum(kPrec));
  uint64_t clean = cfg.euStartup + stream;
  uint32_t res = laddr(0, kBankBytes);
  uint32_t b = laddr(0, 4 * kBankBytes);
  uint32_t endsAtBoundary = laddr(0, kBankBytes - kLaneBytesUsed);
  EXPECT_EQ(addCycles(res, endsAtBoundary, b), clean);
  uint64_t readBeats = ceilDiv(stream * 64, kLaneBytesUsed);
  ASSERT_EQ(readBeats, 1u);
  EXPECT_EQ(
      addCycles(res, endsAtBoundary + 64, b),
      clean + ceilDiv(std::min(readBeats, stream) * cfg.bankConflictPct, 100));
}

// An int8 conv, 64 -> 64 channels, 3x3 kernel, 10x10 -> 8x8, int32
// result. One channel (slot) per lane: input 100 bytes per lane, result
// 64 points x 4 = 256 bytes per lane, weights 9 x 64 bytes per lane.
constexpr uint32_t kConvCh = 64, kConvIn = 10, kConvK = 3,
                   kConvOut = kConvIn - kConvK + 1;

RawCommand convCmd(uint32_t in, uint32_t weights, uint32_t res) {
  isa::cmd::SConv c;
  c.cmd_short = 1;
  c.cmd_id = 1;
  c.tsk_typ = unsigned(isa::TiuTask::Conv);
  c.opd0_sign = c.opd1_sign = 1;
  c.opd0_prec = unsigned(Prec::Int8);
  c.res0_prec = unsigned(Prec::Int32);
  c.opd2_const = 1; // kernel zero point 0
  c.opd3_const = 1; // pad value 0
  c.res_op_x_str = c.res_op_y_str = 1;
  c.res0_n = 1;
  c.res0_c = kConvCh;
  c.res0_h = c.res0_w = kConvOut;
  c.opd0_c = kConvCh;
  c.opd0_h = c.opd0_w = kConvIn;
  c.opd1_h = c.opd1_w = kConvK;
  c.opd0_addr = in;
  c.opd1_addr = weights;
  c.res0_addr = res;
  return isa::encode(c);
}

uint64_t convCycles(uint32_t in, uint32_t weights, uint32_t res,
                    SimStats *stats = nullptr) {
  SimConfig cfg = SimConfig::defaults();
  Simulator sim(cfg, SimMode::Timing);
  RawCommand c = convCmd(in, weights, res);
  sim.runGroup({c}, {});
  if (stats)
    *stats = sim.stats();
  return sim.cycles() - fetchedCycles(cfg, c.bytes());
}

TEST(SimBank, ConvInOneBankPaysOnlyItsWriteBeats) {
  // The cube reads its input for every kernel position and input-channel
  // step but writes each result once: 8 rows of 8 points at 4 points per
  // step are 16 steps, each one 4-byte run (one port word), times 9 kernel
  // positions times ceil(64 / 64) channel steps = 144 read cycles. The
  // result, 256 bytes per lane, leaves in 4 write beats. With the result
  // right after the input in bank 0 (a dense placement), 4 write beats meet
  // the input's 144 read beats: 4 collisions.
  SimConfig cfg = SimConfig::defaults();
  ASSERT_EQ(cfg.cubePixels(Prec::Int8), 4u);
  ASSERT_EQ(cfg.chip.icParallel(Prec::Int8), kConvCh);
  uint64_t stream = uint64_t(kConvOut) * (kConvOut / 4) * kConvK * kConvK * 1;
  uint64_t clean = cfg.cubeStartup + stream;
  uint32_t in = laddr(0, 0), weights = laddr(0, kBankBytes);
  uint64_t resBytes = uint64_t(kConvOut) * kConvOut * 4;
  uint64_t writeBeats = ceilDiv(resBytes, cfg.chip.euBytes);
  ASSERT_EQ(writeBeats, 4u);
  SimStats s;
  // Result in bank 2: no conflict.
  EXPECT_EQ(convCycles(in, weights, laddr(0, 2 * kBankBytes), &s), clean);
  EXPECT_EQ(s.bankConflicts, 0u);
  // Result at offset 128 (the input's 100 bytes rounded to 64): bank 0.
  uint64_t penalty =
      ceilDiv(std::min(stream, writeBeats) * cfg.bankConflictPct, 100);
  EXPECT_EQ(convCycles(in, weights, laddr(0, 128), &s), clean + penalty);
  EXPECT_EQ(s.bankConflicts, 1u);
  EXPECT_EQ(s.bankConflictCycles, penalty);
  EXPECT_EQ(penalty, 4u);
}

TEST(SimBank, PenaltyComesFromTheConfig) {
  SimConfig cfg = SimConfig::defaults();
  cfg.set("tiu.bank_conflict_pct", "50");
  Simulator sim(cfg, SimMode::Timing);
  RawCommand c = add(1, 0, laddr(0, 8192), laddr(0, 0), laddr(0, kBankBytes),
                     kShape, kPrec);
  sim.runGroup({c}, {});
  uint64_t stream = ceilDiv(kPerLane, cfg.chip.euNum(kPrec));
  EXPECT_EQ(sim.cycles(), fetchedCycles(cfg, c.bytes()) + cfg.euStartup +
                              stream + ceilDiv(stream * 50, 100));
}

/// One load + add + store program; returns the simulator after the run.
std::unique_ptr<Simulator> runProgram(SimMode mode) {
  const Shape s{1, 64, 4, 4};
  SimConfig cfg = SimConfig::defaults();
  auto sim = std::make_unique<Simulator>(cfg, mode);
  sim->setTracing(true);
  std::vector<int32_t> in(s.count());
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = int32_t(i) * 3 - 50;
  sim->state().gmem.write(kDdrBase, in.data(), in.size() * 4);
  uint32_t a = laddr(0, 0), c = laddr(0, 2 * kBankBytes);
  sim->runGroup({add(1, 1, c, a, a, s, kPrec), isa::makeTiuEnd(2, 2)},
                {load(1, 0, kDdrBase, a, s, kPrec),
                 store(2, 1, c, kDdrBase + 0x10000, s, kPrec),
                 isa::makeGdmaEnd(3, 2)});
  return sim;
}

std::vector<int32_t> output(Simulator &sim) {
  std::vector<int32_t> out(64 * 16);
  sim.state().gmem.read(kDdrBase + 0x10000, out.data(), out.size() * 4);
  return out;
}

TEST(SimModes, FullFunctionalAndTimingAgree) {
  auto full = runProgram(SimMode::Full);
  auto functional = runProgram(SimMode::Functional);
  auto timing = runProgram(SimMode::Timing);
  // Values: out = 2 * in, in full and functional mode; timing mode computes
  // nothing, so the output area stays zero.
  std::vector<int32_t> f = output(*full);
  for (size_t i = 0; i < f.size(); ++i)
    ASSERT_EQ(f[i], 2 * (int32_t(i) * 3 - 50));
  EXPECT_EQ(output(*functional), f);
  for (int32_t v : output(*timing))
    ASSERT_EQ(v, 0);
  // Time: full and timing agree exactly; functional takes no time but runs
  // every command in an order the ids allow.
  EXPECT_GT(full->cycles(), 0u);
  EXPECT_EQ(timing->cycles(), full->cycles());
  EXPECT_EQ(functional->cycles(), 0u);
  EXPECT_EQ(functional->stats().tiuCommands, 2u);
  EXPECT_EQ(functional->stats().gdmaCommands, 3u);
  // The store ran after the add in every mode (trace order by id).
  for (Simulator *sim : {full.get(), functional.get(), timing.get()}) {
    auto tiu = eventsOf(*sim, Engine::Tiu);
    auto gdma = eventsOf(*sim, Engine::Gdma);
    EXPECT_GE(gdma[1].startPs, tiu[0].endPs);
  }
}

TEST(SimStats, CountersAndConfigInJson) {
  auto sim = runProgram(SimMode::Full);
  const SimStats &s = sim->stats();
  SimConfig cfg = SimConfig::defaults();
  // 4096 bytes loaded, 4096 stored, both from / to DDR.
  EXPECT_EQ(s.ddrReadBytes, 4096u);
  EXPECT_EQ(s.ddrWriteBytes, 4096u);
  EXPECT_EQ(s.gdmaBytes, 8192u);
  EXPECT_EQ(s.groups, 1u);
  EXPECT_DOUBLE_EQ(s.tiuBusyShare, double(s.tiuBusyCycles) / double(s.cycles));
  EXPECT_DOUBLE_EQ(s.ddrUtilisation,
                   8192 * cfg.ddrPsPerByte() / (double(s.cycles) * 1000.0));
  nlohmann::json j = s.toJson(sim->config());
  ASSERT_TRUE(j.contains("counters"));
  std::set<std::string> names;
  for (const auto &c : j["counters"]) {
    EXPECT_TRUE(c.contains("value"));
    EXPECT_FALSE(c["unit"].get<std::string>().empty());
    EXPECT_FALSE(c["description"].get<std::string>().empty());
    names.insert(c["name"].get<std::string>());
  }
  for (const char *n : {"total_cycles", "tiu.busy_share", "gdma.busy_share",
                        "tiu.mac_utilisation", "ddr.read_bytes",
                        "ddr.write_bytes", "tiu.bank_conflicts"})
    EXPECT_TRUE(names.count(n)) << n;
  bool echoed = false;
  for (const auto &c : j["config"])
    echoed |= c["key"] == "tiu.cube_startup" &&
              c["value"] == std::to_string(cfg.cubeStartup);
  EXPECT_TRUE(echoed);
  EXPECT_EQ(s.value("total_cycles"), double(s.cycles));
  std::string summary = s.summary(cfg);
  EXPECT_NE(summary.find("total cycles"), std::string::npos);
  EXPECT_NE(summary.find("MAC utilisation"), std::string::npos);
}

TEST(SimTrace, ChromeTraceHasOneSlicePerCommand) {
  auto sim = runProgram(SimMode::Full);
  nlohmann::json j = traceToJson(sim->trace());
  size_t slices = 0;
  std::set<int> tids;
  for (const auto &ev : j["traceEvents"]) {
    if (ev["ph"] != "X")
      continue;
    ++slices;
    tids.insert(ev["tid"].get<int>());
    EXPECT_TRUE(ev["ts"].is_number_float());
    EXPECT_TRUE(ev["args"].contains("cycles"));
    EXPECT_TRUE(ev["args"].contains("cmd_id"));
  }
  EXPECT_EQ(slices, 5u);
  // A TIU track and a GDMA track per in-flight slot in use: the load and the
  // GDMA end are in slot 0 (commands 0 and 2), the store in slot 1.
  ASSERT_GE(sim->config().gdmaMaxOutstanding, 2u);
  EXPECT_EQ(tids.size(), 3u);
  // Names are mnemonics; the TIU add is first on its track.
  auto tiu = eventsOf(*sim, Engine::Tiu);
  EXPECT_EQ(tiu[0].name, "sAR.add");
  // Durations are in microseconds: cycles / (MHz).
  for (const auto &ev : j["traceEvents"])
    if (ev["ph"] == "X" && ev["name"] == "sAR.add")
      EXPECT_DOUBLE_EQ(ev["dur"].get<double>(),
                       double(tiu[0].cycles) / sim->config().tiuFreqMhz);
}

TEST(SimStream, SplitsBmodelBuffers) {
  // The byte-stream entry point splits and runs the same as commands.
  const Shape s{1, 64, 4, 4};
  std::vector<RawCommand> tiu = {
      add(1, 1, laddr(0, 2 * kBankBytes), laddr(0, 0), laddr(0, 0), s, kPrec),
      isa::makeTiuEnd(2, 1)};
  std::vector<RawCommand> gdma = {load(1, 0, kDdrBase, laddr(0, 0), s, kPrec),
                                  isa::makeGdmaEnd(2, 1)};
  SimConfig cfg = SimConfig::defaults();
  uint64_t fromCommands, fromBytes;
  {
    Simulator sim(cfg, SimMode::Timing);
    sim.runGroup(tiu, gdma);
    fromCommands = sim.cycles();
  }
  {
    Simulator sim(cfg, SimMode::Timing);
    sim.runGroup(isa::packBuffer(tiu), isa::packBuffer(gdma));
    fromBytes = sim.cycles();
    EXPECT_EQ(sim.stats().tiuCommands, 2u);
  }
  EXPECT_EQ(fromBytes, fromCommands);
}

TEST(SimStream, CommandBudgetRefusesTheGroupThatExceedsIt) {
  // Two groups of 2 TIU + 2 GDMA commands (end commands count): a budget
  // of 6 lets the first run and refuses the second before any of it runs.
  const Shape s{1, 64, 4, 4};
  std::vector<RawCommand> tiu = {
      add(1, 1, laddr(0, 2 * kBankBytes), laddr(0, 0), laddr(0, 0), s, kPrec),
      isa::makeTiuEnd(2, 1)};
  std::vector<RawCommand> gdma = {load(1, 0, kDdrBase, laddr(0, 0), s, kPrec),
                                  isa::makeGdmaEnd(2, 1)};
  Simulator sim(SimConfig::defaults(), SimMode::Functional);
  sim.setCommandBudget(6);
  sim.runGroup(tiu, gdma);
  EXPECT_EQ(sim.commandsRun(), 4u);
  try {
    sim.runGroup(isa::packBuffer(tiu), isa::packBuffer(gdma));
    FAIL() << "the second group ran past the budget";
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()),
              "command group 1: its 4 commands exceed the command budget of "
              "6 (4 run before it); the group did not run");
  }
  EXPECT_EQ(sim.commandsRun(), 4u);
  EXPECT_EQ(sim.groupsRun(), 1u);
  EXPECT_EQ(sim.stats().tiuCommands, 2u);
  // Exactly at the budget is allowed; 0 lifts it.
  sim.setCommandBudget(8);
  sim.runGroup(tiu, gdma);
  sim.setCommandBudget(0);
  sim.runGroup(tiu, gdma);
  EXPECT_EQ(sim.commandsRun(), 12u);
  EXPECT_EQ(sim.groupsRun(), 3u);
}

} // namespace
