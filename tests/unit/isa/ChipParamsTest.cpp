//===- ChipParamsTest.cpp - Chip parameters
//--------------------------------===//
//
// Reference: the table of isa/docs/bm1684x.md 1.1 and the memory map of section 2.
//
//===----------------------------------------------------------------------===//
#include "tpu/isa/ChipParams.h"

#include "tpu/isa/Error.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>

using namespace tpu;
using namespace tpu::isa;

namespace {

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "<no error>";
}

std::map<std::string, std::string> listed(const ChipParams &p) {
  std::map<std::string, std::string> m;
  for (auto &[k, v] : p.list())
    m[k] = v;
  return m;
}

} // namespace

TEST(ChipParamsTest, DefaultsAreBm1684x) {
  ChipParams p = ChipParams::bm1684x();
  EXPECT_EQ(p.name, "BM1684X");
  EXPECT_EQ(p.npuNum, 64u);
  EXPECT_EQ(p.euBytes, 64u);
  EXPECT_EQ(p.lmemBytes, 256u * 1024);
  EXPECT_EQ(p.lmemBanks, 16u);
  EXPECT_EQ(p.bankBytes(), 16u * 1024);
  EXPECT_EQ(p.lmemTotal(), 16u * 1024 * 1024);
  EXPECT_EQ(p.laneShift(), 18u);
  // EU_NUM = 64 bytes / element size.
  EXPECT_EQ(p.euNum(Prec::Int4), 128u);
  EXPECT_EQ(p.euNum(Prec::Int8), 64u);
  EXPECT_EQ(p.euNum(Prec::Fp16), 32u);
  EXPECT_EQ(p.euNum(Prec::Bf16), 32u);
  EXPECT_EQ(p.euNum(Prec::Int16), 32u);
  EXPECT_EQ(p.euNum(Prec::Fp32), 16u);
  EXPECT_EQ(p.euNum(Prec::Int32), 16u);
  // IC_PARALLEL / CUBE_NUM table.
  EXPECT_EQ(p.icParallel(Prec::Int8), 64u);
  EXPECT_EQ(p.icParallel(Prec::Int4), 128u);
  EXPECT_EQ(p.icParallel(Prec::Fp16), 32u);
  EXPECT_EQ(p.icParallel(Prec::Bf16), 32u);
  EXPECT_EQ(p.icParallel(Prec::Int16), 32u);
  EXPECT_EQ(p.icParallel(Prec::Fp32), 1u);
  EXPECT_EQ(p.icParallel(Prec::Int32), 1u);
  EXPECT_EQ(p.lmemBase, 0x08000000u);
  EXPECT_EQ(p.smemBase, 0x09000000u);
  EXPECT_EQ(p.smemBytes, 16u * 1024);
  EXPECT_EQ(p.l2Base, 0x10000000u);
  EXPECT_EQ(p.l2Bytes, 0x1FB000u);
  EXPECT_EQ(p.gmemBase, 0x100000000u);
  EXPECT_EQ(p.gmemBytes, 0x100000000u);
  EXPECT_EQ(p.globalAlign, 4096u);
  EXPECT_EQ(p.localAlign, 64u);
  EXPECT_EQ(p.dmaAlignBytes, 512u);
  EXPECT_EQ(p.idWidth, 20u);
  EXPECT_EQ(p.maxDim, 65535u);
  EXPECT_NO_THROW(p.validate());
}

TEST(ChipParamsTest, SetParsesNumbers) {
  ChipParams p;
  p.set("npu_num", "32");
  EXPECT_EQ(p.npuNum, 32u);
  p.set("lmem_bytes", "512K");
  EXPECT_EQ(p.lmemBytes, 512u * 1024);
  EXPECT_EQ(p.laneShift(), 19u);
  p.set("lmem_bytes", "0x100000");
  EXPECT_EQ(p.lmemBytes, 1u << 20);
  p.set("lmem_bytes", "1M");
  EXPECT_EQ(p.lmemBytes, 1u << 20);
  p.set("gmem_bytes", "8G");
  EXPECT_EQ(p.gmemBytes, 8ull << 30);
  p.set("gmem_bytes", "0X2g");
  EXPECT_EQ(p.gmemBytes, 2ull << 30);
  p.set("name", "BM1684X-32");
  EXPECT_EQ(p.name, "BM1684X-32");
  p.assign("lmem_banks=8");
  EXPECT_EQ(p.lmemBanks, 8u);
  EXPECT_EQ(p.bankBytes(), (1u << 20) / 8);
  p.set("eu_bytes", "128");
  EXPECT_EQ(p.euNum(Prec::Fp32), 32u);
  // 32 lanes x 1 MiB would run into static memory at 0x0900_0000 ...
  EXPECT_THROW(p.validate(), Error);
  // ... 32 x 512 KiB fills exactly the 16 MiB local window.
  p.set("lmem_bytes", "512K");
  EXPECT_NO_THROW(p.validate());
}

TEST(ChipParamsTest, SetRejectsBadInput) {
  ChipParams p;
  const char *bad[] = {"",
                       "abc",
                       "12x",
                       "0x",
                       "-1",
                       "+1",
                       "1KK",
                       " 1",
                       "1 ",
                       "1.5",
                       "0xg",
                       "K",
                       "1e3",
                       "1B",
                       "99999999999999999999",
                       "0x10000000000000000",
                       "17179869184G"};
  for (const char *v : bad) {
    std::string msg = errorOf([&] { p.set("lmem_bytes", v); });
    EXPECT_NE(msg.find("'lmem_bytes'"), std::string::npos) << v << ": " << msg;
  }
  EXPECT_EQ(p.lmemBytes, 256u * 1024); // unchanged
  // Too large for the member's type (npu_num is 32-bit).
  EXPECT_EQ(errorOf([&] { p.set("npu_num", "4G"); }),
            "chip parameters: 'npu_num': value 4G is larger than 4294967295");
  std::string msg = errorOf([&] { p.set("lanes", "4"); });
  EXPECT_EQ(
      msg.rfind("chip parameters: unknown parameter 'lanes' (known: name, "
                "npu_num, eu_bytes",
                0),
      0u)
      << msg;
  EXPECT_NE(errorOf([&] { p.set("name", ""); }).find("name"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { p.assign("npu_num"); }).find("key=value"),
            std::string::npos);
}

TEST(ChipParamsTest, ListEchoesEveryParameter) {
  ChipParams p;
  auto l = p.list();
  ASSERT_FALSE(l.empty());
  EXPECT_EQ(l.front(),
            (std::pair<std::string, std::string>("name", "BM1684X")));
  EXPECT_EQ(l.size(), ChipParams::describe().size() + 1);
  auto m = listed(p);
  EXPECT_EQ(m["npu_num"], "64");
  EXPECT_EQ(m["lmem_bytes"], "262144");
  EXPECT_EQ(m["lmem_base"], "0x8000000");
  EXPECT_EQ(m["gmem_base"], "0x100000000");
  EXPECT_EQ(m["ic_parallel_int4"], "128");
  // Every listed value can be set back (list and set share the table).
  ChipParams q;
  q.set("npu_num", "16");
  q.set("l2_base", "0x20000000");
  for (auto &[k, v] : q.list())
    p.set(k, v);
  EXPECT_EQ(listed(p), listed(q));
  for (const ChipParamInfo &info : ChipParams::describe()) {
    EXPECT_TRUE(m.count(info.key)) << info.key;
    EXPECT_STRNE(info.unit, "");
    EXPECT_STRNE(info.description, "");
  }
}

TEST(ChipParamsTest, ValidateRejectsInconsistentMachines) {
  struct Case {
    const char *key, *value, *expect;
  };
  const Case cases[] = {
      {"npu_num", "48", "npu_num = 48 must be a power of two"},
      {"npu_num", "0", "npu_num = 0 must be a power of two"},
      {"npu_num", "128", "exceeds the 64-bit lane masks"},
      {"lmem_banks", "3", "lmem_banks = 3 must be a power of two"},
      {"lmem_banks", "512K", "does not divide lmem_bytes"},
      {"lmem_bytes", "100000", "lmem_bytes = 100000 must be a power of two"},
      {"eu_bytes", "2", "smaller than one 4-byte element"},
      {"ic_parallel_fp32", "0", "ic_parallel for FP32 must be at least 1"},
      // 64 lanes x 4 MiB = 256 MiB reaches past lmem_base (128 MiB).
      {"lmem_bytes", "4M", "must not reach lmem_base"},
      {"smem_base", "0x10001000",
       "static memory [0x10001000, +0x4000) "
       "overlaps L2 SRAM"},
      // 64 lanes x 512 KiB reach static memory: the message says which
      // key moves it out of the way.
      {"lmem_bytes", "512K",
       "local memory [0x8000000, +0x2000000) overlaps static memory "
       "[0x9000000, +0x4000): move it, e.g. chip.smem_base = 0xa000000 "
       "(just past local memory), or move chip.lmem_base"},
      {"gmem_bytes", "1024G",
       "global memory [0x100000000, +0x10000000000) "
       "does not fit the 40-bit GDMA address space"},
      {"global_align", "1000", "must be a power of two"},
      {"id_width", "21", "id_width = 21 must be 1..20"},
      {"max_dim", "65536", "max_dim = 65536 must be 1..65535"},
  };
  for (const Case &c : cases) {
    ChipParams p;
    p.set(c.key, c.value);
    std::string msg = errorOf([&] { p.validate(); });
    EXPECT_NE(msg.find(c.expect), std::string::npos)
        << c.key << "=" << c.value << ": " << msg;
  }
  // A smaller valid machine.
  ChipParams small;
  small.set("npu_num", "8");
  small.set("lmem_bytes", "64K");
  small.set("lmem_banks", "4");
  EXPECT_NO_THROW(small.validate());
}
