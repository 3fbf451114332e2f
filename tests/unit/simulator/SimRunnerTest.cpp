//===- SimRunnerTest.cpp - bmodel-level runs: chip, inputs, outputs -------===//
#include "SimTestUtil.h"

#include "tpusim/Runner.h"

#include <gtest/gtest.h>

using namespace tpu;
using namespace tpu::sim;
using namespace tpu::sim::simtest;
using isa::DataType;
using isa::bmodel::Model;
using isa::bmodel::Tensor;

namespace {

constexpr uint64_t kIn = 0x100100000, kOut = 0x100101000;

Tensor tensor(const char *name, DataType t, std::vector<uint64_t> shape,
              uint64_t addr, uint64_t bytes) {
  Tensor x;
  x.name = name;
  x.dataType = t;
  x.shapes = {shape};
  x.deviceAddr = addr;
  x.size = bytes;
  return x;
}

/// A one-group model whose GDMA copies `bytes` bytes from the input to the
/// output address (DDR to DDR, int8 elements).
Model copyModel(Tensor in, Tensor out, uint32_t bytes) {
  isa::cmd::DmaTensor c;
  c.cmd_id = 1;
  c.cmd_type = unsigned(isa::GdmaType::Tensor);
  c.src_data_format = unsigned(isa::GdmaFormat::Int8);
  c.src_nsize = c.dst_nsize = c.src_csize = c.dst_csize = 1;
  c.src_hsize = c.dst_hsize = 1;
  c.src_wsize = c.dst_wsize = bytes;
  c.src_start_addr_l32 = kIn & 0xFFFFFFFF;
  c.src_start_addr_h8 = kIn >> 32;
  c.dst_start_addr_l32 = kOut & 0xFFFFFFFF;
  c.dst_start_addr_h8 = kOut >> 32;
  isa::bmodel::CmdGroup g;
  g.tiu = isa::packBuffer({isa::makeTiuEnd(1, 1)});
  g.gdma = isa::packBuffer({isa::encode(c), isa::makeGdmaEnd(2, 0)});
  g.bdcNum = 1;
  g.gdmaNum = 2;
  isa::bmodel::Stage s;
  s.inputs = {in};
  s.outputs = {out};
  s.groups = {g};
  isa::bmodel::Net n;
  n.name = "copy";
  n.stages = {s};
  Model m;
  m.nets = {n};
  return m;
}

TEST(SimRunner, QuantisesFloatInputsToInt8) {
  // q = sat8(round_half_away(x * scale + zero_point)), scale 2 (tpu-mlir
  // stores 1 / real scale for inputs), zero point 1.
  Tensor in = tensor("x", DataType::Int8, {2, 4}, kIn, 8);
  in.scale = 2.0f;
  in.zeroPoint = 1;
  Model m = copyModel(in, tensor("y", DataType::Int8, {2, 4}, kOut, 8), 8);
  ModelRunner r(m, SimConfig::defaults(), SimMode::Full);
  npz::Npz inputs;
  std::vector<float> x = {-1.3f,  0.25f, 2.6f,   100.f,
                          -100.f, 0.75f, -0.25f, 1.f};
  inputs.set("x", npz::Array::from<float>({2, 4}, x));
  r.setInputs(inputs);
  r.run();
  npz::Npz out = r.outputs();
  const npz::Array &y = out.get("y");
  EXPECT_EQ(y.dtype, npz::DType::I8);
  EXPECT_EQ(y.shape, (std::vector<int64_t>{2, 4}));
  // -2.6+1=-1.6 -> -2; 0.5+1=1.5 -> 2; 5.2+1=6.2 -> 6; 201 -> 127;
  // -199 -> -128; 1.5+1=2.5 -> 3 (half away); -0.5+1=0.5 -> 1; 2+1 -> 3.
  std::vector<int8_t> want = {-2, 2, 6, 127, -128, 3, 1, 3};
  EXPECT_EQ(std::vector<int8_t>(y.as<int8_t>(), y.as<int8_t>() + 8), want);
}

TEST(SimRunner, ConvertsFp16BothWays) {
  // Float32 in, fp16 in DDR, float32 out: 0.1 becomes the nearest fp16,
  // 0.0999755859375 (= 1638 / 16384); 65504 is the largest fp16.
  Model m = copyModel(tensor("x", DataType::F16, {3}, kIn, 6),
                      tensor("y", DataType::F16, {3}, kOut, 6), 6);
  ModelRunner r(m, SimConfig::defaults(), SimMode::Functional);
  npz::Npz inputs;
  inputs.set("x", npz::Array::from<float>({3}, {1.0f, 0.1f, 65504.0f}));
  r.setInputs(inputs);
  r.run();
  npz::Npz out = r.outputs();
  const npz::Array &y = out.get("y");
  ASSERT_EQ(y.dtype, npz::DType::F32);
  EXPECT_EQ(y.as<float>()[0], 1.0f);
  EXPECT_EQ(y.as<float>()[1], 0.0999755859375f);
  EXPECT_EQ(y.as<float>()[2], 65504.0f);
}

TEST(SimRunner, RejectsWhatItCannotRun) {
  Model m = copyModel(tensor("x", DataType::Int8, {4}, kIn, 4),
                      tensor("y", DataType::Int8, {4}, kOut, 4), 4);
  SimConfig cfg = SimConfig::defaults();
  auto message = [](auto f) {
    try {
      f();
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Model other = m;
  other.chip = "BM1688";
  EXPECT_NE(message([&] { ModelRunner(other, cfg, SimMode::Full); })
                .find("the bmodel is for chip 'BM1688', but tpusim simulates "
                      "'BM1684X'"),
            std::string::npos);
  // Sophgo's alias for the same chip is accepted.
  Model alias = m;
  alias.chip = "BM1686";
  EXPECT_NO_THROW(ModelRunner(alias, cfg, SimMode::Full));

  ModelRunner r(m, cfg, SimMode::Full);
  npz::Npz none;
  none.setSource("in.npz");
  none.set("z", npz::Array::from<int8_t>({4}, {1, 2, 3, 4}));
  EXPECT_EQ(message([&] { r.setInputs(none); }),
            "in.npz: input 'x' is missing (the file holds: z)");
  npz::Npz wide;
  wide.setSource("wide.npz");
  wide.set("x", npz::Array::from<int32_t>({4}, {1, 2, 300, 4}));
  EXPECT_EQ(message([&] { r.setInputs(wide); }),
            "wide.npz: input 'x' has dtype int32, the model wants int8 "
            "(convert it, e.g. numpy's astype)");
  npz::Npz extra;
  extra.setSource("extra.npz");
  extra.set("x", npz::Array::from<int8_t>({4}, {1, 2, 3, 4}));
  extra.set("z", npz::Array::from<int8_t>({4}, {1, 2, 3, 4}));
  EXPECT_EQ(message([&] { r.setInputs(extra); }),
            "extra.npz: array 'z' is not an input of the model (inputs: x)");
  EXPECT_NE(message([&] {
              ModelRunner(m, cfg, SimMode::Full, "nope");
            }).find("no net called 'nope'"),
            std::string::npos);
}

TEST(SimRunner, IntegerInputsPassUnchanged) {
  Model m = copyModel(tensor("x", DataType::Int16, {4}, kIn, 8),
                      tensor("y", DataType::Int16, {4}, kOut, 8), 8);
  ModelRunner r(m, SimConfig::defaults(), SimMode::Full);
  npz::Npz inputs;
  inputs.set("x", npz::Array::from<int16_t>({4}, {-32768, -1, 0, 32767}));
  r.setInputs(inputs);
  r.run();
  npz::Npz out = r.outputs();
  const npz::Array &y = out.get("y");
  ASSERT_EQ(y.dtype, npz::DType::I16);
  EXPECT_EQ(std::vector<int16_t>(y.as<int16_t>(), y.as<int16_t>() + 4),
            (std::vector<int16_t>{-32768, -1, 0, 32767}));
  // The copy starts when its command has arrived after the group launch
  // (F = fetchedCycles of the 96-byte DMA_tensor) and costs what a solo
  // 8-byte DMA costs. The GDMA end has no dependency: it is issued while the
  // copy is in flight (gdma.max_outstanding >= 2) and completes with it,
  // ids completing in order. The TIU end waits for GDMA id 1, S later.
  const SimConfig &cfg = r.simulator().config();
  ASSERT_GE(cfg.gdmaMaxOutstanding, 2u);
  // Reading and writing DDR: two runs (one per side), each one burst.
  uint64_t bus = 2 * cfg.ddrBurstBytes;
  uint64_t dma =
      cfg.gdmaStartup + std::max(ceilDiv(8, cfg.gdmaDatapathBytes),
                                 ddrLatencyCycles(cfg) + ddrCycles(cfg, bus));
  uint64_t copyBytes = isa::layoutInfo(isa::LayoutId::DmaTensor).bytes();
  EXPECT_EQ(r.simulator().cycles(), fetchedCycles(cfg, copyBytes) + dma +
                                        cfg.syncLatency + cfg.tiuSysCycles);
}

} // namespace
