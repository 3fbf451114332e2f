//===- DisasmTest.cpp - Text and JSON views of commands -----------------===//
#include "tpu/isa/Disasm.h"

#include <gtest/gtest.h>

#include <random>

using namespace tpu;
using namespace tpu::isa;

namespace {

/// The published sAR register dump of isa/docs/bm1684x.md 4.5 (fp32 add with an
/// immediate 1.0f).
RawCommand publishedSar() {
  cmd::SAR c;
  c.cmd_short = 1;
  c.cmd_id = 15;
  c.cmd_id_dep = 3;
  c.tsk_typ = 3;
  c.tsk_eu_typ = 2;
  c.opd1_const = 1;
  c.tsk_opd_num = 2;
  c.cmd_id_en = 1;
  c.res0_prec = c.opd0_prec = c.opd1_prec = 2;
  c.opd0_sign = c.opd1_sign = 1;
  c.res0_n = 1;
  c.res0_c = 32;
  c.res0_h = 54;
  c.res0_w = 160;
  c.opd0_addr = 212992;
  c.opd1_addr = 0x3F800000;
  return encode(c);
}

} // namespace

TEST(Disasm, KnownCommandText) {
  // Fields in bit order (sAR table), zeros omitted, addresses in hex.
  EXPECT_EQ(disassemble(publishedSar()),
            "sAR.add cmd_short=1 cmd_id=15 cmd_id_dep=3 tsk_typ=3 tsk_eu_typ=2 "
            "opd1_const=1 tsk_opd_num=2 cmd_id_en=1 res0_prec=2 opd0_prec=2 "
            "opd1_prec=2 opd0_sign=1 opd1_sign=1 res0_n=1 res0_c=32 res0_h=54 "
            "res0_w=160 opd0_addr=0x34000 opd1_addr=0x3f800000");
}

TEST(Disasm, ShowZeroAndReserved) {
  RawCommand end = makeTiuEnd(7, 2);
  EXPECT_EQ(disassemble(end), "SYSID.end cmd_id=7 cmd_id_dep=2 tsk_typ=15 "
                              "tsk_eu_typ=31");
  DisasmOptions all;
  all.showZero = true;
  // Reserved fields stay hidden when zero, even with showZero.
  EXPECT_EQ(disassemble(end, all),
            "SYSID.end cmd_id=7 cmd_id_dep=2 tsk_typ=15 tsk_eu_typ=31 "
            "cmd_id_en=0 pwr_step=0 intr_en=0 cmd_id_eng1=0 cmd_id_eng2=0 "
            "cmd_id_eng3=0");
  end.set("reserved2", 5); // bits 124..127
  EXPECT_EQ(disassemble(end), "SYSID.end cmd_id=7 cmd_id_dep=2 tsk_typ=15 "
                              "tsk_eu_typ=31 reserved2=5");

  RawCommand t(LayoutId::DmaTensor);
  t.set("cmd_type", 0);
  t.set("localmem_mask_l32", 0xFFFFFFFF);
  t.set("dst_start_addr_h8", 1);
  t.set("src_nsize", 2);
  EXPECT_EQ(disassemble(t), "DMA_tensor.none src_nsize=2 dst_start_addr_h8=0x1 "
                            "localmem_mask_l32=0xffffffff");
}

TEST(Disasm, JsonShape) {
  nlohmann::json j = toJson(publishedSar());
  EXPECT_EQ(j["layout"], "sAR");
  EXPECT_EQ(j["mnemonic"], "sAR.add");
  EXPECT_EQ(j["bytes"], 64);
  EXPECT_EQ(j["fields"]["opd0_addr"], 212992);
  EXPECT_EQ(j["fields"]["res0_addr"], 0); // non-reserved zeros are present
  EXPECT_FALSE(j["fields"].contains("reserved0"));
}

TEST(Disasm, JsonRoundTripEveryLayout) {
  std::mt19937_64 rng(42);
  for (unsigned l = 0; l < kNumLayouts; ++l) {
    const LayoutInfo &li = allLayouts()[l];
    for (int iter = 0; iter < 4; ++iter) {
      RawCommand c(li.id);
      for (unsigned i = 0; i < li.numFields; ++i) {
        // Iteration 0 keeps reserved bits zero, the others set them too.
        if (li.fields[i].reserved && iter == 0)
          continue;
        c.set(i, iter == 1 ? li.fields[i].mask() : rng() & li.fields[i].mask());
      }
      nlohmann::json j = toJson(c);
      EXPECT_TRUE(fromJson(j) == c) << li.name << " " << j.dump();
      // And through text.
      EXPECT_TRUE(fromJson(nlohmann::json::parse(j.dump())) == c) << li.name;
    }
  }
}

TEST(Disasm, FromJsonErrors) {
  using nlohmann::json;
  auto err = [](const json &j) -> std::string {
    try {
      fromJson(j);
    } catch (const Error &e) {
      return e.what();
    }
    return "<no error>";
  };
  EXPECT_EQ(err(json::array()), "command JSON: expected an object");
  EXPECT_EQ(err({{"fields", json::object()}}),
            "command JSON: missing string \"layout\"");
  EXPECT_EQ(err({{"layout", "sXX"}}), "command JSON: unknown layout 'sXX'");
  EXPECT_EQ(err({{"layout", "sAR"}, {"extra", 1}}),
            "command JSON: unknown key 'extra'");
  EXPECT_EQ(err({{"layout", "sAR"}, {"fields", {{"relu", 1}}}}),
            "command JSON: sAR has no field 'relu'");
  EXPECT_EQ(err({{"layout", "sAR"}, {"fields", {{"tsk_typ", 16}}}}),
            "command JSON: sAR.tsk_typ: value 0x10 does not fit in 4 bits");
  EXPECT_EQ(
      err({{"layout", "sAR"}, {"fields", {{"tsk_typ", -1}}}}),
      "command JSON: sAR.tsk_typ: expected a non-negative integer, got -1");
  EXPECT_EQ(err({{"layout", "sAR"}, {"fields", {{"tsk_typ", "3"}}}}),
            "command JSON: sAR.tsk_typ: expected a non-negative integer, got "
            "\"3\"");
  EXPECT_EQ(err({{"layout", "sAR"}, {"fields", {{"tsk_typ", 1.5}}}}),
            "command JSON: sAR.tsk_typ: expected a non-negative integer, got "
            "1.5");
  // Missing fields are zero.
  RawCommand c = fromJson({{"layout", "SYSID"}});
  EXPECT_EQ(c.layout(), LayoutId::SysId);
  EXPECT_EQ(c.get("cmd_id"), 0u);
}
