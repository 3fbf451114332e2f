//===- BmodelJsonTest.cpp - the JSON form of tpu-dis / tpu-asm ------------===//
//
// References: the opcode tables of isa/docs/bm1684x.md 4.2 and 5.1 (AR = tsk_typ 3,
// add = eu 2; GDMA sys = cmd_type 6, end = special function 0), the fp32
// immediate example of 4.1 (1.0 = 0x3F800000), and the end-of-stream rules
// of section 6.
//
//===----------------------------------------------------------------------===//
#include "tpu/isa/BmodelJson.h"
#include "tpu/isa/Error.h"

#include <gtest/gtest.h>

#include <functional>

using namespace tpu;
using namespace tpu::isa;
using namespace tpu::isa::bmodel;
using nlohmann::json;

namespace {

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "<no error>";
}

} // namespace

TEST(BmodelJson, OpSetsTheHeadFields) {
  RawCommand c = commandFromJson(
      json{{"op", "sAR.add"}, {"opd1_const", 1}, {"opd1_addr", "f32:1.0"}},
      Engine::Tiu, 7);
  EXPECT_EQ(c.layout(), LayoutId::SAR);
  EXPECT_EQ(c.get("cmd_short"), 1u);
  EXPECT_EQ(c.get("tsk_typ"), 3u);    // AR
  EXPECT_EQ(c.get("tsk_eu_typ"), 2u); // add
  EXPECT_EQ(c.get("cmd_id"), 7u);     // the default id
  EXPECT_EQ(c.get("opd1_addr"), 0x3F800000u);
}

TEST(BmodelJson, GdmaEndByName) {
  // cmd_type 6 with special function 0 is the GDMA end command.
  EXPECT_TRUE(commandFromJson(json{{"op", "sDMA_sys.end"}, {"cmd_id_dep", 4}},
                              Engine::Gdma, 3) == makeGdmaEnd(3, 4));
  EXPECT_TRUE(commandFromJson(json{{"op", "SYSID.end"}}, Engine::Tiu, 2) ==
              makeTiuEnd(2, 0));
}

TEST(BmodelJson, ValueForms) {
  auto field = [](const json &v, const char *name = "cmd_id_dep") {
    json j = {{"op", "sAR.add"}};
    j[name] = v;
    return commandFromJson(j, Engine::Tiu, 1).get(name);
  };
  EXPECT_EQ(field(-1), 0xFFFFFu); // 20-bit two's complement
  EXPECT_EQ(field("-2"), 0xFFFFEu);
  EXPECT_EQ(field("0x1f"), 31u);
  EXPECT_EQ(field("0b101"), 5u);
  EXPECT_EQ(field("12"), 12u);
  EXPECT_EQ(field(true), 1u);
  // fp32 -2.5 = sign 1, exponent 128, mantissa 0x200000.
  EXPECT_EQ(field("f32:-2.5", "opd0_addr"), 0xC0200000u);
  EXPECT_NE(errorOf([&] { field(-0x80001); }).find("does not fit 20 signed"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { field("0x100000"); }).find("does not fit 20 bits"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { field("12z"); }).find("bad integer"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { field(1.5); }).find("expected an integer"),
            std::string::npos);
}

TEST(BmodelJson, CommandErrorsNameThePath) {
  EXPECT_EQ(errorOf([] {
              commandFromJson(json{{"op", "sAR.add"}, {"tsk_eu_typ", 3}},
                              Engine::Tiu, 1, "tiu[4]");
            }),
            "tiu[4]: the fields make this command sAR.sub, not sAR.add");
  EXPECT_EQ(errorOf([] {
              commandFromJson(json{{"layout", "sAR"}}, Engine::Gdma, 1, "g");
            }),
            "g.layout: sAR is not a GDMA layout");
  EXPECT_EQ(errorOf([] {
              commandFromJson(json{{"op", "sAR.add"}, {"nope", 1}}, Engine::Tiu,
                              1, "c");
            }),
            "c: sAR has no field \"nope\"");
}

TEST(BmodelJson, GroupGetsEndCommandsThatWaitForEachOther) {
  json g = {
      {"tiu", {{{"op", "sAR.add"}, {"cmd_id", 4}}}},
      {"gdma", {{{"op", "DMA_tensor.none"}}, {{"op", "DMA_tensor.none"}}}}};
  CmdGroup group = groupFromJson(g);
  EXPECT_EQ(group.bdcNum, 2u);
  EXPECT_EQ(group.gdmaNum, 3u);
  auto tiu = splitBuffer(Engine::Tiu, group.tiu.data(), group.tiu.size());
  auto gdma = splitBuffer(Engine::Gdma, group.gdma.data(), group.gdma.size());
  // TIU end: id 4 + 1, waits for the last GDMA command (id 2).
  EXPECT_TRUE(tiu[1].cmd == makeTiuEnd(5, 2));
  // GDMA end: id 2 + 1, waits for the last TIU command (id 4).
  EXPECT_TRUE(gdma[2].cmd == makeGdmaEnd(3, 4));

  // A stream stated empty stays empty (tpu-dis prints such groups).
  CmdGroup gdmaOnly =
      groupFromJson(json{{"bdc_num", 0}, {"gdma", {{{"op", "sDMA_sys.end"}}}}});
  EXPECT_EQ(gdmaOnly.bdcNum, 0u);
  EXPECT_TRUE(gdmaOnly.tiu.empty());
  EXPECT_EQ(gdmaOnly.gdmaNum, 1u);

  AssembleOptions noEnd;
  noEnd.autoEnd = false;
  EXPECT_NE(errorOf([&] {
              groupFromJson(g, noEnd, "grp");
            }).find("grp.tiu: the stream does not end with an end command"),
            std::string::npos);
}

TEST(BmodelJson, FlatProgramDefaults) {
  json doc = json::parse(R"({
    "net": "n",
    "inputs": [{"name": "a", "dtype": "int4", "shape": [3]},
               {"name": "b", "dtype": 6, "shape": [2, 2]}],
    "outputs": [{"name": "c", "dtype": "F16", "shape": [5], "hidden": 5}],
    "coeff": {"address": "0x100000000", "data": "0a 0B"}
  })");
  Model m = modelFromJson(doc);
  ASSERT_EQ(m.nets.size(), 1u);
  const Stage &s = m.nets[0].stages[0];
  EXPECT_EQ(s.inputs[0].dataType, DataType::Int4);
  EXPECT_EQ(s.inputs[0].size, 2u); // 3 x 4 bits = 12 bits -> 2 bytes
  EXPECT_EQ(s.inputs[1].dataType, DataType::Int32);
  EXPECT_EQ(s.inputs[1].size, 16u);
  EXPECT_EQ(s.inputs[1].index, 1);
  EXPECT_EQ(s.inputs[1].hidden, kHiddenInput);
  EXPECT_EQ(s.outputs[0].size, 10u);
  EXPECT_EQ(s.outputs[0].hidden, 5); // stated values win
  EXPECT_EQ(s.coeff, (std::vector<uint8_t>{0x0a, 0x0b}));
  EXPECT_EQ(s.coeffAddr, 0x100000000u);
  EXPECT_TRUE(s.groups.empty());

  doc["inptus"] = json::array();
  EXPECT_EQ(errorOf([&] { modelFromJson(doc); }), "unknown key \"inptus\"");
}

TEST(BmodelJson, ModelSurvivesTheJsonForm) {
  json doc = json::parse(R"({
    "time": "t",
    "kernel_module": {"file_name": "k.so", "data": "0102"},
    "nets": [{"name": "n", "addr_mode": 1, "stages": [{
      "inputs": [{"name": "x", "dtype": "BF16", "shapes": [[1, 2], [2, 2]],
                  "device_addr": 4096, "scale": 0.25, "zero_point": -1}],
      "outputs": [],
      "ctx_addr": "0x100100000", "ctx_size": 256, "ctx_sizes": [128, 128],
      "io_addr": 7, "io_size": 9,
      "groups": [{"tiu": [{"op": "sAR.add"}]}, {"gdma": [{"op": "sDMA_general.none"}]}],
      "subnets": [{"id": 0, "next_subnet_ids": [1, -1],
                   "groups": [{"tiu": [{"op": "sAR.add"}]}]},
                  {"id": 1, "subnet_mode": 1}]
    }]}]})");
  Model m = modelFromJson(doc);
  std::vector<uint8_t> bytes = serializeModel(m);
  Model back = parseModel(bytes.data(), bytes.size(), "mem");
  Model again = modelFromJson(modelToJson(back));
  EXPECT_EQ(serializeModel(again), bytes);
  const Stage &s = again.nets[0].stages[0];
  EXPECT_EQ(s.subnets.size(), 2u);
  EXPECT_EQ(s.subnets[0].nextSubnetIds, (std::vector<int32_t>{1, -1}));
  EXPECT_EQ(s.subnets[1].mode, kSubnetCpu);
  EXPECT_EQ(s.inputs[0].shapes.size(), 2u);
  EXPECT_EQ(s.inputs[0].scale, 0.25f);
  EXPECT_EQ(s.ioSize, 9u);
  ASSERT_TRUE(again.kernelModule.has_value());
  EXPECT_EQ(again.kernelModule->binary, (std::vector<uint8_t>{1, 2}));
}

TEST(BmodelJson, Hex) {
  EXPECT_EQ(toHex({0x00, 0xab, 0x7f}), "00ab7f");
  EXPECT_EQ(fromHex("00 AB\n7f", "h"), (std::vector<uint8_t>{0, 0xab, 0x7f}));
  EXPECT_EQ(errorOf([] { fromHex("0g", "h"); }), "h: bad hex digit 'g'");
  EXPECT_EQ(errorOf([] { fromHex("abc", "h"); }),
            "h: odd number of hex digits");
}
