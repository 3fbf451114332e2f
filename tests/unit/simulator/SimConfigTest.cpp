//===- SimConfigTest.cpp - Config loading, overrides, validation ----------===//
#include "tpusim/Config.h"

#include "tpu/isa/Error.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using namespace tpu;
using namespace tpu::sim;

namespace {

TEST(SimConfig, DefaultsLoadEveryKeyAndValidate) {
  SimConfig cfg = SimConfig::defaults();
  EXPECT_NO_THROW(cfg.validate());
  // The published peaks follow from the default shape and cube constants:
  // 64 lanes x 64 ic x 4 points = 16384 int8 MACs/cycle = 32.8 TOPS at 1 GHz.
  EXPECT_EQ(cfg.peakMacsPerCycle(isa::Prec::Int8), 64u * 64u * 4u);
  EXPECT_EQ(cfg.peakMacsPerCycle(isa::Prec::Fp16), 64u * 32u * 4u);
  EXPECT_EQ(cfg.peakMacsPerCycle(isa::Prec::Bf16), 64u * 32u * 4u);
  EXPECT_EQ(cfg.peakMacsPerCycle(isa::Prec::Fp32), 64u * 1u * 16u);
  EXPECT_EQ(cfg.tiuPeriodPs(), 1000u);
  EXPECT_EQ(cfg.gdmaPeriodPs(), 1000u);
  // 64 GB/s = 64 bytes per ns = 15.625 ps per byte.
  EXPECT_DOUBLE_EQ(cfg.ddrPsPerByte(), 15.625);
}

TEST(SimConfig, DefaultsAreTheConfigFileBuiltIn) {
  // The built-in defaults are the tables of isa/ (TimingParams.def,
  // ChipParams.def); simulator/configs/bm1684x.cfg must be their text as
  // `tpusim config --defaults-file` writes it, so a stale file fails here.
  std::string path =
      std::string(TPU_TEST_DATA_DIR) + "/../../simulator/configs/bm1684x.cfg";
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << path;
  std::ostringstream text;
  text << in.rdbuf();
  EXPECT_EQ(std::string(SimConfig::defaultText()), text.str());
  // Loading that file by name gives the same values as the defaults.
  SimConfig fromFile;
  fromFile.loadFile(path);
  EXPECT_EQ(fromFile.list(), SimConfig::defaults().list());
}

TEST(SimConfig, OverridesReachTimingAndChipKeys) {
  SimConfig cfg = SimConfig::defaults();
  cfg.assign("tiu.cube_startup=12");
  cfg.assign("chip.npu_num = 32");
  cfg.set("chip.lmem_bytes", "128K");
  cfg.set("ddr.bandwidth_gbps", "32.5");
  EXPECT_EQ(cfg.cubeStartup, 12u);
  EXPECT_EQ(cfg.chip.npuNum, 32u);
  EXPECT_EQ(cfg.chip.lmemBytes, 128u * 1024u);
  EXPECT_DOUBLE_EQ(cfg.ddrBandwidthGBps, 32.5);
  EXPECT_NO_THROW(cfg.validate());
  EXPECT_EQ(cfg.peakMacsPerCycle(isa::Prec::Int8), 32u * 64u * 4u);
}

TEST(SimConfig, RejectsUnknownKeysAndBadValues) {
  SimConfig cfg = SimConfig::defaults();
  EXPECT_THROW(cfg.set("tiu.no_such_key", "1"), Error);
  EXPECT_THROW(cfg.set("chip.no_such_key", "1"), Error);
  EXPECT_THROW(cfg.set("tiu.cube_startup", "-1"), Error);
  EXPECT_THROW(cfg.set("tiu.cube_startup", "12x"), Error);
  EXPECT_THROW(cfg.set("ddr.bandwidth_gbps", "fast"), Error);
  EXPECT_THROW(cfg.assign("tiu.cube_startup"), Error);
  cfg.set("ddr.bandwidth_gbps", "0");
  EXPECT_THROW(cfg.validate(), Error);
  // At least one GDMA command must be able to be in flight.
  SimConfig none = SimConfig::defaults();
  none.set("gdma.max_outstanding", "0");
  EXPECT_THROW(none.validate(), Error);
}

TEST(SimConfig, FileMustSetEveryTimingKey) {
  SimConfig cfg;
  cfg.loadText("tiu.freq_mhz = 1000 # MHz\n", "partial.cfg");
  try {
    cfg.validate();
    FAIL() << "an incomplete config validated";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("has no value"), std::string::npos)
        << e.what();
  }
}

TEST(SimConfig, FileErrorsNameTheLine) {
  SimConfig cfg = SimConfig::defaults();
  try {
    cfg.loadText("# comment\n\ntiu.sys_cycles = 4\ntiu.sys_cycles = 5\n",
                 "twice.cfg");
    FAIL() << "a key set twice was accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("twice.cfg:4"), std::string::npos)
        << e.what();
  }
  try {
    cfg.loadText("tiu.sys_cycles 4\n", "noeq.cfg");
    FAIL() << "a line without '=' was accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("noeq.cfg:1"), std::string::npos);
  }
}

TEST(SimConfig, ListAndDescribeAgree) {
  SimConfig cfg = SimConfig::defaults();
  auto values = cfg.list();
  auto infos = SimConfig::describe();
  ASSERT_EQ(values.size(), infos.size());
  for (size_t i = 0; i < values.size(); ++i)
    EXPECT_EQ(values[i].first, infos[i].key);
  bool sawCube = false, sawLanes = false;
  for (auto &[k, v] : values) {
    sawCube |= k == "tiu.cube_startup";
    sawLanes |= k == "chip.npu_num" && v == "64";
  }
  EXPECT_TRUE(sawCube);
  EXPECT_TRUE(sawLanes);
}

} // namespace
