//===- EstimateTest.cpp - Machine keys and the static estimator -----------===//
//
// The machine description (isa::Machine: chip shape + timing constants, set
// and listed by key) and isa::estimateGroup on a hand-built schedule whose
// cycles are derived in the comment from the constants (read from the
// Machine, never written as literals). The agreement of the estimator with
// the simulator is tested in tests/unit/simulator/SimEstimateTest.cpp.
//
//===----------------------------------------------------------------------===//
#include "tpu/isa/Estimate.h"

#include "tpu/isa/Bmodel.h"
#include "tpu/isa/Command.h"
#include "tpu/isa/Cost.h"
#include "tpu/isa/Error.h"
#include "tpu/isa/Machine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

using namespace tpu;
using namespace tpu::isa;

namespace {

//===----------------------------------------------------------------------===//
// Machine
//===----------------------------------------------------------------------===//

TEST(Machine, DefaultsAreTheTables) {
  Machine m = Machine::bm1684x();
  EXPECT_EQ(m.chip.npuNum, 64u);
  EXPECT_EQ(m.timing.cubeStartup, 32u);
  EXPECT_DOUBLE_EQ(m.timing.ddrBandwidthGBps, 64.0);
  EXPECT_NO_THROW(m.validate());
  // 64 lanes x 32 fp16 channels x 4 points.
  EXPECT_EQ(m.peakMacsPerCycle(Prec::Fp16), 64u * 32u * 4u);
  EXPECT_EQ(m.timing.tiuPeriodPs(), 1000u);
  EXPECT_DOUBLE_EQ(m.timing.ddrPsPerByte(), 15.625);
}

TEST(Machine, SetAndListByKey) {
  Machine m;
  m.set("chip.npu_num", "32");
  m.assign("tiu.cube_startup = 12");
  m.assign("ddr.bandwidth_gbps=32.5");
  EXPECT_EQ(m.chip.npuNum, 32u);
  EXPECT_EQ(m.timing.cubeStartup, 12u);
  EXPECT_DOUBLE_EQ(m.timing.ddrBandwidthGBps, 32.5);
  std::map<std::string, std::string> listed;
  for (auto &[k, v] : m.list())
    listed[k] = v;
  EXPECT_EQ(listed["chip.npu_num"], "32");
  EXPECT_EQ(listed["tiu.cube_startup"], "12");
  EXPECT_EQ(listed["ddr.bandwidth_gbps"], "32.5");
  // list() and describe() name the same keys in the same order; every
  // timing key has a reason.
  auto values = m.list();
  auto infos = Machine::describe();
  ASSERT_EQ(values.size(), infos.size());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(values[i].first, infos[i].key);
    if (infos[i].key.rfind("chip.", 0) != 0)
      EXPECT_FALSE(infos[i].reason.empty()) << infos[i].key;
  }
}

TEST(Machine, RejectsUnknownKeysAndBadValues) {
  Machine m;
  EXPECT_THROW(m.set("tiu.no_such_key", "1"), Error);
  EXPECT_THROW(m.set("chip.no_such_key", "1"), Error);
  EXPECT_THROW(m.set("tiu.cube_startup", "-1"), Error);
  EXPECT_THROW(m.set("ddr.latency_ns", "soon"), Error);
  EXPECT_THROW(m.assign("tiu.cube_startup"), Error);
  m.set("gdma.max_outstanding", "0");
  EXPECT_THROW(m.validate(), Error);
}

TEST(Machine, DefaultsTextListsEveryKeyWithItsDefault) {
  std::string text = Machine::defaultsText();
  for (auto &[key, value] : Machine().list()) {
    std::string line = key + " = " + value;
    EXPECT_NE(text.find("\n" + line + " "), std::string::npos) << line;
  }
}

TEST(Machine, TextRoundTripsEveryKey) {
  Machine m;
  m.set("chip.npu_num", "32");
  m.set("chip.name", "BM1684X-32");
  m.set("mcu.group_launch_ns", "1250.5");
  Machine back;
  back.loadText(m.toText(), "text");
  EXPECT_EQ(back.list(), m.list());
  // The text is a config file: comments and a key set twice are handled as
  // in tpusim's --config files.
  EXPECT_THROW(back.loadText("tiu.sys_cycles = 4\ntiu.sys_cycles = 5\n", "t"),
               Error);
  back.loadText("# comment\n tiu.sys_cycles = 7 # why\n", "t");
  EXPECT_EQ(back.timing.tiuSysCycles, 7u);
}

TEST(Machine, ShortfallNamesWhatIsMissing) {
  ChipParams compiled, simulated;
  EXPECT_EQ(chipShortfall(compiled, simulated), "");
  compiled.npuNum = 32;
  EXPECT_EQ(chipShortfall(compiled, simulated), ""); // 64 lanes are enough
  simulated.npuNum = 16;
  simulated.lmemBanks = 8;
  std::string why = chipShortfall(compiled, simulated);
  EXPECT_NE(why.find("32 lanes (chip.npu_num)"), std::string::npos) << why;
  EXPECT_NE(why.find("16 local-memory banks (chip.lmem_banks)"),
            std::string::npos)
      << why;
  EXPECT_EQ(why.find("chip.lmem_bytes"), std::string::npos) << why;
}

TEST(Machine, BmodelRecordsTheMachine) {
  bmodel::Model model;
  bmodel::Net net;
  net.name = "empty";
  bmodel::Stage stage;
  bmodel::CmdGroup g;
  g.bdcNum = g.gdmaNum = 1;
  g.tiu = packBuffer({makeTiuEnd(1, 0)});
  g.gdma = packBuffer({makeGdmaEnd(1, 0)});
  stage.groups = {g};
  net.stages = {stage};
  model.nets = {net};
  // Without a machine the field is left out and reads back empty.
  std::vector<uint8_t> bytes = bmodel::serializeModel(model);
  bmodel::Model plain = bmodel::parseModel(bytes.data(), bytes.size(), "mem");
  EXPECT_EQ(plain.machine, "");
  Machine m;
  m.set("chip.npu_num", "32");
  model.machine = m.toText();
  bytes = bmodel::serializeModel(model);
  bmodel::Model back = bmodel::parseModel(bytes.data(), bytes.size(), "mem");
  EXPECT_EQ(back.machine, model.machine);
  ASSERT_EQ(back.nets.size(), 1u);
  Machine recorded;
  recorded.loadText(back.machine, "bmodel");
  EXPECT_EQ(recorded.chip.npuNum, 32u);
}

//===----------------------------------------------------------------------===//
// Hand-built commands
//===----------------------------------------------------------------------===//

constexpr uint64_t kLmemBase = 0x08000000;
constexpr uint64_t kDdrBase = 0x100000000;
constexpr uint64_t kAllLanes32 = 0xFFFFFFFF;
constexpr uint32_t kBankBytes = 16 * 1024;

// 64 channels x 4 x 4 int32: one channel per lane, 16 elements (64 bytes)
// per lane, 4096 bytes dense in DDR.
constexpr uint32_t kC = 64, kH = 4, kW = 4;
constexpr uint64_t kBytes = uint64_t(kC) * kH * kW * 4;

/// DMA_tensor between dense DDR and an EU-aligned int32 local tensor
/// (16 elements per lane = one EU step, so channel stride 16).
RawCommand dma(uint32_t id, uint32_t dep, bool load, uint32_t localOffset,
               uint64_t ddr) {
  cmd::DmaTensor c;
  c.cmd_id = id;
  c.cmd_id_dep = dep;
  c.cmd_type = unsigned(GdmaType::Tensor);
  c.stride_enable = 1;
  c.src_data_format = unsigned(gdmaFormatFor(Prec::Int32));
  uint64_t local[4] = {kH * kW, kH * kW, kW, 1};
  uint64_t dense[4] = {uint64_t(kC) * kH * kW, kH * kW, kW, 1};
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
  c.src_nsize = c.dst_nsize = 1;
  c.src_csize = c.dst_csize = kC;
  c.src_hsize = c.dst_hsize = kH;
  c.src_wsize = c.dst_wsize = kW;
  uint64_t local40 = kLmemBase + localOffset;
  uint64_t srcAddr = load ? ddr : local40;
  uint64_t dstAddr = load ? local40 : ddr;
  c.src_start_addr_l32 = srcAddr & 0xFFFFFFFF;
  c.src_start_addr_h8 = srcAddr >> 32;
  c.dst_start_addr_l32 = dstAddr & 0xFFFFFFFF;
  c.dst_start_addr_h8 = dstAddr >> 32;
  c.localmem_mask_l32 = kAllLanes32;
  c.localmem_mask_h32 = kAllLanes32;
  return encode(c);
}

/// sAR add of two int32 tensors of the shape above (lane 0 offsets).
RawCommand add(uint32_t id, uint32_t dep, uint32_t res, uint32_t a,
               uint32_t b) {
  constexpr unsigned kAdd = 2;
  cmd::SAR c;
  c.cmd_short = 1;
  c.cmd_id = id;
  c.cmd_id_dep = dep;
  c.tsk_typ = unsigned(TiuTask::AR);
  c.tsk_eu_typ = kAdd;
  c.tsk_opd_num = 2;
  c.res0_prec = c.opd0_prec = c.opd1_prec = unsigned(Prec::Int32);
  c.opd0_sign = c.opd1_sign = 1;
  c.res0_n = 1;
  c.res0_c = kC;
  c.res0_h = kH;
  c.res0_w = kW;
  c.res0_addr = res;
  c.opd0_addr = a;
  c.opd1_addr = b;
  return encode(c);
}

uint64_t cyclesOf(uint64_t ps, uint64_t periodPs) {
  EXPECT_EQ(ps % periodPs, 0u);
  return ps / periodPs;
}

//===----------------------------------------------------------------------===//
// estimateGroup
//===----------------------------------------------------------------------===//

TEST(Estimate, LoadComputeStoreIsDerivedFromTheConstants) {
  // GDMA: load A (id 1); store R (id 2) waiting for TIU id 1.
  // TIU:  R = A + A (id 1) waiting for GDMA id 1.
  // In cycles of the (common) clock, with
  //   Lc  = mcu.group_launch_ns, lat = ddr.latency_ns,
  //   B   = DDR bytes per cycle, D = kBytes / B (drain of one transfer),
  //   st  = gdma.startup, S = sync.latency,
  //   V   = tiu.eu_startup + 1 (16 int32 per lane = one EU step; the
  //         operands in banks 0 and 1 do not conflict),
  //   F(b)= Lc + lat + ceil(b / B): a command whose buffer bytes end at b
  //         has arrived (DMA_tensor 96 bytes, sAR 64),
  // the schedule is
  //   load:  starts F(96), streams from F(96) + st; its DDR transfer
  //          (one 4096-byte run, whole bursts, no run switch) drains in D
  //          and completes lat later: E0 = F(96) + st + D + lat
  //          (the data path's 4096 / 64 beats end earlier);
  //   add:   starts E0 + S, ends E1 = E0 + S + V;
  //   store: starts E1 + S, completes E1 + S + st + D + lat.
  Machine m;
  const TimingParams &t = m.timing;
  ASSERT_EQ(t.tiuPeriodPs(), t.gdmaPeriodPs());
  uint64_t period = t.tiuPeriodPs();
  uint64_t bytesPerCycle = uint64_t(std::llround(period / t.ddrPsPerByte()));
  uint64_t launch = cyclesOf(t.mcuGroupLaunchPs(), period);
  uint64_t lat = cyclesOf(t.ddrLatencyPs(), period);
  uint64_t drain = kBytes / bytesPerCycle;
  uint64_t dmaBytes = layoutInfo(LayoutId::DmaTensor).bytes();
  ASSERT_EQ(dmaBytes, 96u);
  ASSERT_EQ(layoutInfo(LayoutId::SAR).bytes(), 64u);
  ASSERT_LE(ceilDiv(kBytes, t.gdmaDatapathBytes), drain + lat);
  uint64_t fLoad = launch + lat + ceilDiv(dmaBytes, bytesPerCycle);
  uint64_t v = t.euStartup + 1;
  uint64_t e0 = fLoad + t.gdmaStartup + drain + lat;
  uint64_t e1 = e0 + t.syncLatency + v;
  uint64_t e2 = e1 + t.syncLatency + t.gdmaStartup + drain + lat;

  uint32_t a = 0, r = kBankBytes;
  std::vector<RawCommand> tiu = {add(1, 1, r, a, a)};
  std::vector<RawCommand> gdma = {dma(1, 0, true, a, kDdrBase),
                                  dma(2, 1, false, r, kDdrBase + 0x10000)};
  Estimate e = estimateGroup(tiu, gdma, m);
  EXPECT_EQ(e.cycles, e2);
  EXPECT_EQ(e.launchCycles, launch);
  EXPECT_EQ(e.tiuBusyCycles, v);
  // Each GDMA command is in flight from its start to its completion.
  EXPECT_EQ(e.gdmaBusyCycles, 2 * (t.gdmaStartup + drain + lat));
  EXPECT_EQ(e.tiuWaitPs, (e0 + t.syncLatency - (launch + lat + 1)) * period);
  EXPECT_EQ(e.ddrReadBytes, kBytes);
  EXPECT_EQ(e.ddrWriteBytes, kBytes);
  EXPECT_EQ(e.ddrBusBytes, 2 * kBytes);
  EXPECT_EQ(e.tiuCommands, 1u);
  EXPECT_EQ(e.gdmaCommands, 2u);

  // The machine is a parameter: half the DDR bandwidth doubles both drains
  // and the load's command bytes arrive later.
  Machine slow = m;
  slow.timing.ddrBandwidthGBps = t.ddrBandwidthGBps / 2;
  Estimate es = estimateGroup(tiu, gdma, slow);
  EXPECT_EQ(es.cycles, e2 + 2 * drain + ceilDiv(dmaBytes, bytesPerCycle / 2) -
                           ceilDiv(dmaBytes, bytesPerCycle));
}

TEST(Estimate, AccumulatedGroupsAddUp) {
  Machine m;
  std::vector<RawCommand> tiu = {add(1, 1, kBankBytes, 0, 0)};
  std::vector<RawCommand> gdma = {dma(1, 0, true, 0, kDdrBase)};
  Estimate one = estimateGroup(tiu, gdma, m);
  Estimate sum;
  sum.accumulate(one, m);
  sum.accumulate(one, m);
  EXPECT_EQ(sum.totalPs, 2 * one.totalPs);
  EXPECT_EQ(sum.cycles, 2 * one.cycles);
  EXPECT_EQ(sum.ddrReadBytes, 2 * one.ddrReadBytes);
  EXPECT_EQ(sum.launchCycles, 2 * one.launchCycles);
}

TEST(Estimate, DeadlockNamesTheWaitingCommand) {
  Machine m;
  // The TIU waits for GDMA id 2, which never comes.
  std::vector<RawCommand> tiu = {add(1, 2, kBankBytes, 0, 0)};
  std::vector<RawCommand> gdma = {dma(1, 0, true, 0, kDdrBase)};
  try {
    estimateGroup(tiu, gdma, m);
    FAIL() << "a deadlock was estimated";
  } catch (const Error &e) {
    std::string what = e.what();
    EXPECT_NE(what.find("TIU command 0"), std::string::npos) << what;
    EXPECT_NE(what.find("deadlock"), std::string::npos) << what;
    EXPECT_NE(what.find("GDMA id 2"), std::string::npos) << what;
  }
}

TEST(Estimate, EmptyGroupCostsTheLaunch) {
  Machine m;
  Estimate e = estimateGroup({}, {}, m);
  EXPECT_EQ(e.totalPs, m.timing.mcuGroupLaunchPs());
  EXPECT_EQ(e.tiuCommands + e.gdmaCommands, 0u);
}

} // namespace
