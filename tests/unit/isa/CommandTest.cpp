//===- CommandTest.cpp - Layout tables, codecs, buffers ------------------===//
//
// References: the bit tables of isa/docs/bm1684x.md 4-5 (via Layouts.def, whose
// consistency is checked here), the published sAR register dump of 4.5, and
// the layout-selection rules of 4.1, 4.2, 5.1.
//
//===----------------------------------------------------------------------===//
#include "tpu/isa/Command.h"

#include <gtest/gtest.h>

#include <functional>
#include <iostream>
#include <random>
#include <set>
#include <string>

using namespace tpu;
using namespace tpu::isa;

namespace {

/// Random values over a field's full width.
uint64_t randomFor(std::mt19937_64 &rng, const FieldInfo &f) {
  return rng() & f.mask();
}

/// A command of `layout` with every field random.
RawCommand randomCommand(LayoutId layout, std::mt19937_64 &rng) {
  RawCommand c(layout);
  const LayoutInfo &li = c.info();
  for (unsigned i = 0; i < li.numFields; ++i)
    c.set(i, randomFor(rng, li.fields[i]));
  return c;
}

std::vector<uint64_t> fieldValues(const RawCommand &c) {
  std::vector<uint64_t> v;
  for (unsigned i = 0; i < c.info().numFields; ++i)
    v.push_back(c.get(i));
  return v;
}

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "<no error>";
}

} // namespace

//===----------------------------------------------------------------------===//
// Tables
//===----------------------------------------------------------------------===//

TEST(LayoutTables, FieldsTileEachLayoutWithinWords) {
  ASSERT_EQ(kNumLayouts, 25u); // the 25 published tables
  for (unsigned l = 0; l < kNumLayouts; ++l) {
    const LayoutInfo &li = allLayouts()[l];
    EXPECT_EQ(&layoutInfo(li.id), &li);
    EXPECT_LE(li.bits, kMaxCommandBits);
    EXPECT_EQ(li.bits % 128, 0u) << li.name; // every size is 16-byte granular
    unsigned pos = 0;
    std::set<std::string> names;
    for (unsigned i = 0; i < li.numFields; ++i) {
      const FieldInfo &f = li.fields[i];
      EXPECT_EQ(f.lsb, pos) << li.name << "." << f.name;
      EXPECT_GT(f.width, 0u);
      EXPECT_EQ(f.lsb / 64, (f.lsb + f.width - 1) / 64)
          << li.name << "." << f.name << " straddles a 64-bit word";
      EXPECT_TRUE(names.insert(f.name).second) << li.name << "." << f.name;
      EXPECT_EQ(li.findField(f.name), static_cast<int>(i));
      pos += f.width;
    }
    EXPECT_EQ(pos, li.bits) << li.name;
  }
}

TEST(LayoutTables, SizesMatchRuntimeLengths) {
  // isa/docs/bm1684x.md 4.1 and 5.1 length tables, in bytes.
  const std::pair<LayoutId, unsigned> sizes[] = {
      {LayoutId::TiuLong, 128},
      {LayoutId::SConv, 64},
      {LayoutId::SPorD, 64},
      {LayoutId::SAR, 64},
      {LayoutId::SSEG, 16},
      {LayoutId::SMM, 48},
      {LayoutId::SMM2, 32},
      {LayoutId::SCMP, 48},
      {LayoutId::SSG, 48},
      {LayoutId::SSGL, 48},
      {LayoutId::SVC, 48},
      {LayoutId::SRQDQ, 32},
      {LayoutId::STransBC, 32},
      {LayoutId::SSFU, 32},
      {LayoutId::SLIN, 32},
      {LayoutId::SysId, 16},
      {LayoutId::Lar, 16},
      {LayoutId::DmaTensor, 96},
      {LayoutId::DmaGather, 96},
      {LayoutId::DmaMaskedSelect, 96},
      {LayoutId::SDmaGeneral, 48},
      {LayoutId::SDmaMatrix, 64},
      {LayoutId::SDmaMaskedSelect, 64},
      {LayoutId::SDmaNonzero, 48},
      {LayoutId::SDmaSys, 16}};
  for (auto [id, bytes] : sizes)
    EXPECT_EQ(layoutInfo(id).bytes(), bytes) << layoutInfo(id).name;
}

TEST(LayoutTables, HeadFieldsAtCommonBits) {
  // isa/docs/bm1684x.md 4.1 (TIU head, all but LAR) and 5.2 (GDMA head).
  struct Expect {
    const char *name;
    unsigned lsb, width;
  };
  const Expect tiu[] = {{"cmd_id", 1, 20},
                        {"cmd_id_dep", 21, 20},
                        {"tsk_typ", 41, 4},
                        {"tsk_eu_typ", 45, 5}};
  const Expect gdma[] = {
      {"cmd_short", 3, 1},         {"cmd_id", 9, 20},
      {"cmd_type", 32, 4},         {"cmd_special_function", 36, 3},
      {"fill_constant_en", 39, 1}, {"src_data_format", 40, 3},
      {"cmd_id_dep", 64, 20}};
  for (unsigned l = 0; l < kNumLayouts; ++l) {
    const LayoutInfo &li = allLayouts()[l];
    bool isTiu = li.engine == Engine::Tiu;
    if (li.id == LayoutId::Lar)
      continue;
    for (const Expect &e :
         isTiu ? std::vector<Expect>(std::begin(tiu), std::end(tiu))
               : std::vector<Expect>(std::begin(gdma), std::end(gdma))) {
      int idx = li.findField(e.name);
      ASSERT_GE(idx, 0) << li.name << " lacks " << e.name;
      EXPECT_EQ(li.fields[idx].lsb, e.lsb) << li.name << "." << e.name;
      EXPECT_EQ(li.fields[idx].width, e.width) << li.name << "." << e.name;
    }
    if (isTiu && li.id != LayoutId::SysId) {
      int idx = li.findField("cmd_short");
      ASSERT_GE(idx, 0) << li.name;
      EXPECT_EQ(li.fields[idx].lsb, 0u);
    }
  }
  // LAR keeps tsk_typ / tsk_eu_typ at the common bits but has no ids.
  const LayoutInfo &lar = layoutInfo(LayoutId::Lar);
  EXPECT_EQ(lar.fields[lar.fieldIndex("tsk_typ")].lsb, 41u);
  EXPECT_EQ(lar.fields[lar.fieldIndex("tsk_eu_typ")].lsb, 45u);
  EXPECT_LT(lar.findField("cmd_id"), 0);
}

//===----------------------------------------------------------------------===//
// Bit access
//===----------------------------------------------------------------------===//

TEST(Bits, InsertExtract) {
  uint64_t w[2] = {0, 0};
  insertBits(w, 60, 4, 0xA);
  EXPECT_EQ(w[0], 0xA000000000000000ull);
  EXPECT_EQ(extractBits(w, 60, 4), 0xAu);
  // A slice across the word boundary still works for callers other than
  // the tables (which never straddle).
  insertBits(w, 62, 4, 0xF);
  EXPECT_EQ(w[0] >> 62, 3u);
  EXPECT_EQ(w[1], 3u);
  EXPECT_EQ(extractBits(w, 62, 4), 0xFu);
  insertBits(w, 64, 64, ~uint64_t(0));
  EXPECT_EQ(extractBits(w, 64, 64), ~uint64_t(0));
}

TEST(Bits, InsertRejectsWideValues) {
  uint64_t w[1] = {0x5555};
  EXPECT_THROW(insertBits(w, 3, 4, 0x10), Error);
  EXPECT_THROW(insertBits(w, 0, 1, 2), Error);
  EXPECT_THROW(insertBits(w, 0, 0, 0), Error);
  EXPECT_EQ(w[0], 0x5555u); // untouched by the failed writes
  RawCommand c(LayoutId::SAR);
  EXPECT_THROW(c.set("tsk_typ", 16), Error);
  EXPECT_EQ(errorOf([&] { c.set("res0_h_str", 1u << 20); }),
            "sAR.res0_h_str: value 0x100000 does not fit in 20 bits");
  EXPECT_THROW(c.get("no_such_field"), Error);
  EXPECT_THROW(c.get(1000u), Error);
}

//===----------------------------------------------------------------------===//
// Round trips over every field of every layout
//===----------------------------------------------------------------------===//

TEST(RawCommandTest, EveryFieldRoundTrips) {
  std::mt19937_64 rng(1684);
  for (unsigned l = 0; l < kNumLayouts; ++l) {
    const LayoutInfo &li = allLayouts()[l];
    for (unsigned i = 0; i < li.numFields; ++i) {
      const FieldInfo &f = li.fields[i];
      std::vector<uint64_t> values = {0, f.mask()};
      for (int k = 0; k < 8; ++k)
        values.push_back(randomFor(rng, f));
      for (uint64_t v : values) {
        // Start from a random command so that neighbours are non-trivial.
        RawCommand c = randomCommand(li.id, rng);
        std::vector<uint64_t> before = fieldValues(c);
        c.set(i, v);
        std::vector<uint64_t> after = fieldValues(c);
        EXPECT_EQ(after[i], v) << li.name << "." << f.name;
        before[i] = v;
        EXPECT_EQ(after, before)
            << li.name << "." << f.name << " disturbed another field";
        EXPECT_EQ(c.get(f.name), v);
        // Bytes round trip as well.
        std::vector<uint8_t> bytes(c.bytes());
        c.toBytes(bytes.data());
        EXPECT_EQ(RawCommand::fromBytes(li.id, bytes.data()), c);
      }
    }
  }
}

TEST(RawCommandTest, BytesAreLittleEndian) {
  RawCommand c(LayoutId::SDmaSys);
  c.set("cmd_type", 6);                // bits 32..35 -> byte 4 low nibble
  c.set("constant_value", 0x11223344); // bits 96..127 -> bytes 12..15
  uint8_t b[16];
  c.toBytes(b);
  EXPECT_EQ(b[4], 0x06);
  EXPECT_EQ(b[12], 0x44);
  EXPECT_EQ(b[15], 0x11);
}

namespace {

// Typed structs: member lists generated from the same table, so every layout
// (including ones added later) gets a test.
#define TPU_LAYOUT(Id, Name, Eng, Bits)                                        \
  [[maybe_unused]] std::vector<uint64_t> members(const cmd::Id &c) {           \
    return {
#define TPU_FIELD(Id, Field, Lsb, Width, Reserved, Meaning) c.Field,
#define TPU_LAYOUT_END(Id)                                                     \
  }                                                                            \
  ;                                                                            \
  }
#include "tpu/isa/Layouts.def"

#define TPU_LAYOUT(Id, Name, Eng, Bits)                                        \
  [[maybe_unused]] void setMembers(cmd::Id &c,                                 \
                                   const std::vector<uint64_t> &v) {           \
    size_t i = 0;
#define TPU_FIELD(Id, Field, Lsb, Width, Reserved, Meaning) c.Field = v.at(i++);
#define TPU_LAYOUT_END(Id) }
#include "tpu/isa/Layouts.def"

template <typename T> void checkTyped() {
  const LayoutInfo &li = layoutInfo(T::kLayout);
  std::mt19937_64 rng(static_cast<unsigned>(T::kLayout) + 1);
  std::vector<std::vector<uint64_t>> cases;
  cases.emplace_back(li.numFields, 0);
  std::vector<uint64_t> ones, rnd;
  for (unsigned i = 0; i < li.numFields; ++i) {
    ones.push_back(li.fields[i].mask());
    rnd.push_back(randomFor(rng, li.fields[i]));
  }
  cases.push_back(ones);
  cases.push_back(rnd);
  for (const auto &values : cases) {
    T c;
    setMembers(c, values);
    RawCommand raw = encode(c);
    EXPECT_EQ(raw.layout(), T::kLayout);
    EXPECT_EQ(fieldValues(raw), values) << li.name;
    T back = decodeAs<T>(raw);
    EXPECT_EQ(members(back), values) << li.name;
  }
  // A member wider than its field is rejected, naming the field.
  T wide;
  std::vector<uint64_t> v(li.numFields, 0);
  unsigned narrow = 0;
  while (li.fields[narrow].width == 64)
    ++narrow;
  v[narrow] = li.fields[narrow].mask() + 1;
  setMembers(wide, v);
  EXPECT_NE(errorOf([&] { encode(wide); }).find(li.fields[narrow].name),
            std::string::npos);
  // decodeAs checks the layout.
  LayoutId other =
      T::kLayout == LayoutId::SAR ? LayoutId::SConv : LayoutId::SAR;
  EXPECT_THROW(decodeAs<T>(RawCommand(other)), Error);
}

} // namespace

TEST(TypedStructs, EncodeDecodeEveryLayout) {
#define TPU_LAYOUT(Id, Name, Eng, Bits) checkTyped<cmd::Id>();
#include "tpu/isa/Layouts.def"
}

//===----------------------------------------------------------------------===//
// The published sAR register dump (isa/docs/bm1684x.md 4.5)
//===----------------------------------------------------------------------===//

namespace {

// fp32 add with an immediate, from the TDB guide; words as published.
const uint32_t kSarWords[16] = {0x0060001f, 0x00c84600, 0x00003092, 0x00200001,
                                0x00a00036, 0x00000000, 0x00034000, 0x3f800000};

cmd::SAR documentedSar() {
  cmd::SAR c;
  c.cmd_short = 1;
  c.cmd_id = 15;
  c.cmd_id_dep = 3;
  c.tsk_typ = 3;
  c.tsk_eu_typ = 2;
  c.opd1_const = 1;
  c.tsk_opd_num = 2;
  c.cmd_id_en = 1;
  c.res0_prec = c.opd0_prec = c.opd1_prec = 2; // FP32
  c.opd0_sign = c.opd1_sign = 1;
  c.res0_n = 1;
  c.res0_c = 32;
  c.res0_h = 54;
  c.res0_w = 160;
  c.res0_addr = 0;
  c.opd0_addr = 212992;
  c.opd1_addr = 0x3F800000; // 1.0f
  return c;
}

} // namespace

TEST(SarVector, EncodesToPublishedWords) {
  RawCommand raw = encode(documentedSar());
  uint8_t bytes[64];
  raw.toBytes(bytes);
  for (int i = 0; i < 16; ++i) {
    uint32_t w = bytes[4 * i] | bytes[4 * i + 1] << 8 | bytes[4 * i + 2] << 16 |
                 uint32_t(bytes[4 * i + 3]) << 24;
    EXPECT_EQ(w, kSarWords[i]) << "word " << i;
  }
}

TEST(SarVector, DecodesToDocumentedFields) {
  uint8_t bytes[64];
  for (int i = 0; i < 16; ++i)
    for (int b = 0; b < 4; ++b)
      bytes[4 * i + b] = static_cast<uint8_t>(kSarWords[i] >> (8 * b));
  RawCommand raw = RawCommand::fromBytes(LayoutId::SAR, bytes);
  cmd::SAR d = decodeAs<cmd::SAR>(raw);
  EXPECT_EQ(members(d), members(documentedSar()));
  EXPECT_EQ(d.opd0_addr, 212992u);
  EXPECT_EQ(d.opd1_addr, 0x3F800000u);
  EXPECT_EQ(d.res0_w, 160u);
  EXPECT_EQ(cmdId(raw), 15u);
  EXPECT_EQ(cmdIdDep(raw), 3u);
  EXPECT_EQ(mnemonic(raw), "sAR.add");
}

//===----------------------------------------------------------------------===//
// Layout selection
//===----------------------------------------------------------------------===//

TEST(LayoutSelection, Tiu) {
  struct Case {
    bool isShort;
    unsigned task, eu;
    LayoutId want;
  };
  const Case cases[] = {
      {false, 0, 0, LayoutId::TiuLong}, {false, 3, 2, LayoutId::TiuLong},
      {false, 2, 5, LayoutId::TiuLong}, {false, 15, 31, LayoutId::SysId},
      {true, 15, 30, LayoutId::SysId},  {false, 7, 2, LayoutId::Lar},
      {true, 7, 30, LayoutId::Lar},     {true, 0, 0, LayoutId::SConv},
      {true, 1, 4, LayoutId::SPorD},    {true, 2, 0, LayoutId::SMM},
      {true, 2, 3, LayoutId::SMM},      {true, 2, 4, LayoutId::SMM2},
      {true, 2, 6, LayoutId::SMM2},     {true, 3, 2, LayoutId::SAR},
      {true, 3, 23, LayoutId::SAR},     {true, 3, 24, LayoutId::SSEG},
      {true, 3, 25, LayoutId::SSEG},    {true, 3, 26, LayoutId::SAR},
      {true, 4, 1, LayoutId::SRQDQ},    {true, 5, 3, LayoutId::STransBC},
      {true, 6, 0, LayoutId::SSG},      {true, 6, 16, LayoutId::SSG},
      {true, 6, 17, LayoutId::SSGL},    {true, 6, 19, LayoutId::SSGL},
      {true, 9, 17, LayoutId::SSFU},    {true, 10, 1, LayoutId::SLIN},
      {true, 13, 22, LayoutId::SCMP},   {true, 14, 0, LayoutId::SVC}};
  for (const Case &c : cases)
    EXPECT_EQ(tiuLayoutFor(c.isShort, c.task, c.eu), c.want)
        << c.isShort << " " << c.task << " " << c.eu;
  for (unsigned task : {8u, 11u, 12u}) {
    EXPECT_THROW(tiuLayoutFor(true, task, 0), Error);
    EXPECT_THROW(tiuLayoutFor(false, task, 0), Error);
  }
  EXPECT_THROW(tiuLayoutFor(true, 6, 20), Error);
}

TEST(LayoutSelection, Gdma) {
  struct Case {
    bool isShort;
    unsigned type;
    LayoutId want;
  };
  const Case cases[] = {{false, 0, LayoutId::DmaTensor},
                        {false, 1, LayoutId::DmaTensor},
                        {false, 3, LayoutId::DmaTensor},
                        {false, 4, LayoutId::DmaTensor},
                        {false, 7, LayoutId::DmaGather},
                        {false, 8, LayoutId::DmaGather},
                        {false, 2, LayoutId::DmaMaskedSelect},
                        {false, 5, LayoutId::DmaMaskedSelect},
                        {false, 6, LayoutId::SDmaSys},
                        {true, 6, LayoutId::SDmaSys},
                        {true, 3, LayoutId::SDmaGeneral},
                        {true, 1, LayoutId::SDmaMatrix},
                        {true, 2, LayoutId::SDmaMaskedSelect},
                        {true, 5, LayoutId::SDmaNonzero}};
  for (const Case &c : cases)
    EXPECT_EQ(gdmaLayoutFor(c.isShort, c.type, 0), c.want)
        << c.isShort << " " << c.type;
  for (unsigned type : {0u, 4u, 7u, 8u, 9u, 15u})
    EXPECT_THROW(gdmaLayoutFor(true, type, 0), Error) << type;
  for (unsigned type : {9u, 10u, 11u, 15u})
    EXPECT_THROW(gdmaLayoutFor(false, type, 0), Error) << type;
}

TEST(Mnemonics, Names) {
  auto tiu = [](LayoutId l, unsigned task, unsigned eu, bool isShort = true) {
    RawCommand c(l);
    if (l != LayoutId::SysId && l != LayoutId::Lar)
      c.set("cmd_short", isShort);
    c.set("tsk_typ", task);
    c.set("tsk_eu_typ", eu);
    return mnemonic(c);
  };
  EXPECT_EQ(tiu(LayoutId::SConv, 0, 0), "sCONV.conv.normal");
  EXPECT_EQ(tiu(LayoutId::SAR, 3, 2), "sAR.add");
  EXPECT_EQ(tiu(LayoutId::SAR, 3, 31), "sAR.eu31");
  EXPECT_EQ(tiu(LayoutId::SPorD, 1, 4), "sPorD.max_pooling");
  EXPECT_EQ(tiu(LayoutId::SMM2, 2, 5), "sMM2.mm2.nt");
  EXPECT_EQ(tiu(LayoutId::SSEG, 3, 25), "sSEG.npuIdxGen");
  EXPECT_EQ(tiu(LayoutId::SRQDQ, 4, 3), "sRQ&sDQ.dq0");
  EXPECT_EQ(tiu(LayoutId::SysId, 15, 31), "SYSID.end");
  EXPECT_EQ(tiu(LayoutId::SysId, 15, 30), "SYSID.nop");
  EXPECT_EQ(tiu(LayoutId::Lar, 7, 0), "LAR.mul");
  EXPECT_EQ(tiu(LayoutId::TiuLong, 3, 2, false), "AR.add");
  EXPECT_EQ(tiu(LayoutId::TiuLong, 2, 4, false), "MM2.mm2.nn");
  EXPECT_EQ(tiu(LayoutId::TiuLong, 6, 18, false), "SGL.pe_s_scatter_line");
  EXPECT_EQ(tiu(LayoutId::TiuLong, 8, 0, false), "TIU_long.tsk8.eu0");

  auto gdma = [](LayoutId l, unsigned type, unsigned sp, bool fill = false) {
    RawCommand c(l);
    c.set("cmd_short", isShortForm(l));
    c.set("cmd_type", type);
    c.set("cmd_special_function", sp);
    c.set("fill_constant_en", fill);
    return mnemonic(c);
  };
  EXPECT_EQ(gdma(LayoutId::DmaTensor, 0, 0), "DMA_tensor.none");
  EXPECT_EQ(gdma(LayoutId::DmaTensor, 0, 1), "DMA_tensor.nc_transpose");
  EXPECT_EQ(gdma(LayoutId::DmaTensor, 0, 7), "DMA_tensor.sp7");
  EXPECT_EQ(gdma(LayoutId::DmaTensor, 3, 0, true), "DMA_general.fill");
  EXPECT_EQ(gdma(LayoutId::DmaTensor, 3, 1), "DMA_general.broadcast");
  EXPECT_EQ(gdma(LayoutId::DmaTensor, 1, 1), "DMA_matrix.transpose");
  EXPECT_EQ(gdma(LayoutId::DmaTensor, 4, 0), "DMA_cw_transpose");
  EXPECT_EQ(gdma(LayoutId::DmaGather, 8, 0), "DMA_scatter");
  EXPECT_EQ(gdma(LayoutId::DmaMaskedSelect, 5, 0), "DMA_nonzero");
  EXPECT_EQ(gdma(LayoutId::SDmaGeneral, 3, 0, true), "sDMA_general.fill");
  EXPECT_EQ(gdma(LayoutId::SDmaSys, 6, 0), "sDMA_sys.end");
  EXPECT_EQ(gdma(LayoutId::SDmaSys, 6, 1), "sDMA_sys.nop");
}

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

namespace {

RawCommand tiuCmd(LayoutId l, unsigned task, unsigned eu, uint32_t id,
                  std::mt19937_64 &rng) {
  RawCommand c = randomCommand(l, rng);
  const LayoutInfo &li = c.info();
  for (unsigned i = 0; i < li.numFields; ++i)
    if (li.fields[i].reserved)
      c.set(i, 0);
  if (l != LayoutId::SysId && l != LayoutId::Lar)
    c.set("cmd_short", isShortForm(l));
  c.set("tsk_typ", task);
  c.set("tsk_eu_typ", eu);
  if (l != LayoutId::Lar)
    c.set("cmd_id", id);
  return c;
}

RawCommand gdmaCmd(LayoutId l, unsigned type, unsigned sp, uint32_t id,
                   std::mt19937_64 &rng) {
  RawCommand c = randomCommand(l, rng);
  c.set("cmd_short", isShortForm(l));
  c.set("cmd_type", type);
  c.set("cmd_special_function", sp);
  c.set("cmd_id", id);
  return c;
}

std::vector<RawCommand> mixedTiuStream() {
  std::mt19937_64 rng(7);
  return {tiuCmd(LayoutId::SConv, 0, 0, 1, rng),
          tiuCmd(LayoutId::SAR, 3, 2, 2, rng),
          tiuCmd(LayoutId::SMM, 2, 1, 3, rng),
          tiuCmd(LayoutId::SMM2, 2, 4, 4, rng),
          tiuCmd(LayoutId::TiuLong, 3, 0, 5, rng),
          tiuCmd(LayoutId::SSEG, 3, 24, 6, rng),
          tiuCmd(LayoutId::SSG, 6, 2, 7, rng),
          tiuCmd(LayoutId::SSGL, 6, 17, 8, rng),
          tiuCmd(LayoutId::SRQDQ, 4, 1, 9, rng),
          tiuCmd(LayoutId::Lar, 7, 2, 0, rng),
          tiuCmd(LayoutId::SysId, 15, kTiuSysNop, 10, rng),
          tiuCmd(LayoutId::SCMP, 13, 22, 11, rng),
          makeTiuEnd(12, 9)};
}

std::vector<RawCommand> mixedGdmaStream() {
  std::mt19937_64 rng(8);
  return {gdmaCmd(LayoutId::DmaTensor, 0, 1, 1, rng),
          gdmaCmd(LayoutId::DmaTensor, 3, 0, 2, rng),
          gdmaCmd(LayoutId::DmaGather, 7, 0, 3, rng),
          gdmaCmd(LayoutId::DmaMaskedSelect, 5, 0, 4, rng),
          gdmaCmd(LayoutId::SDmaGeneral, 3, 1, 5, rng),
          gdmaCmd(LayoutId::SDmaMatrix, 1, 0, 6, rng),
          gdmaCmd(LayoutId::SDmaMaskedSelect, 2, 0, 7, rng),
          gdmaCmd(LayoutId::SDmaNonzero, 5, 0, 8, rng),
          gdmaCmd(LayoutId::SDmaSys, 6, kGdmaSysNop, 9, rng),
          makeGdmaEnd(10, 12)};
}

void expectRoundTrip(Engine engine, const std::vector<RawCommand> &cmds) {
  std::vector<uint8_t> buf = packBuffer(cmds);
  EXPECT_EQ(buf.size() % 128, 0u);
  std::vector<DecodedCommand> got = splitBuffer(engine, buf.data(), buf.size());
  ASSERT_EQ(got.size(), cmds.size());
  size_t offset = 0;
  for (size_t i = 0; i < cmds.size(); ++i) {
    EXPECT_EQ(got[i].offset, offset);
    EXPECT_EQ(got[i].cmd.layout(), cmds[i].layout()) << i;
    EXPECT_TRUE(got[i].cmd == cmds[i]) << i << " " << mnemonic(cmds[i]);
    offset += cmds[i].bytes();
  }
  for (size_t i = offset; i < buf.size(); ++i)
    EXPECT_EQ(buf[i], 0) << "padding byte " << i;
}

} // namespace

TEST(Buffers, MixedStreamsRoundTrip) {
  expectRoundTrip(Engine::Tiu, mixedTiuStream());
  expectRoundTrip(Engine::Gdma, mixedGdmaStream());
}

TEST(Buffers, EndCommands) {
  RawCommand t = makeTiuEnd(5, 7), g = makeGdmaEnd(6, 8);
  EXPECT_TRUE(isEndCommand(t));
  EXPECT_TRUE(isEndCommand(g));
  EXPECT_EQ(cmdId(t), 5u);
  EXPECT_EQ(cmdIdDep(t), 7u);
  EXPECT_EQ(cmdId(g), 6u);
  EXPECT_EQ(cmdIdDep(g), 8u);
  EXPECT_EQ(mnemonic(t), "SYSID.end");
  EXPECT_EQ(mnemonic(g), "sDMA_sys.end");
  std::mt19937_64 rng(3);
  EXPECT_FALSE(isEndCommand(tiuCmd(LayoutId::SysId, 15, kTiuSysNop, 1, rng)));
  EXPECT_FALSE(isEndCommand(RawCommand(LayoutId::SAR)));
  EXPECT_EQ(cmdId(RawCommand(LayoutId::Lar)), 0u);
}

TEST(Buffers, PackPadsToMultipleOf128) {
  // 64 + 16 = 80 bytes -> 128; 128 + 16 = 144 -> 256.
  EXPECT_EQ(packBuffer({RawCommand(LayoutId::SAR), makeTiuEnd(1, 0)}).size(),
            128u);
  EXPECT_EQ(
      packBuffer({RawCommand(LayoutId::TiuLong), makeTiuEnd(1, 0)}).size(),
      256u);
  EXPECT_TRUE(packBuffer({}).empty());
}

TEST(Buffers, TruncationAtEveryByteThrows) {
  std::mt19937_64 rng(5);
  for (Engine engine : {Engine::Tiu, Engine::Gdma}) {
    std::vector<RawCommand> cmds =
        engine == Engine::Tiu
            ? std::vector<RawCommand>{tiuCmd(LayoutId::SAR, 3, 2, 1, rng),
                                      tiuCmd(LayoutId::SSEG, 3, 24, 2, rng),
                                      makeTiuEnd(3, 0)}
            : std::vector<RawCommand>{
                  gdmaCmd(LayoutId::DmaTensor, 0, 0, 1, rng),
                  makeGdmaEnd(2, 0)};
    std::vector<uint8_t> buf = packBuffer(cmds);
    for (size_t len = 0; len < buf.size(); ++len) {
      std::vector<uint8_t> part(buf.begin(), buf.begin() + len);
      std::string msg =
          errorOf([&] { splitBuffer(engine, part.data(), part.size()); });
      EXPECT_NE(msg.find("command buffer: offset 0x"), std::string::npos)
          << engineName(engine) << " len " << len << ": " << msg;
    }
    EXPECT_NO_THROW(splitBuffer(engine, buf.data(), buf.size()));
  }
}

TEST(Buffers, ErrorMessages) {
  std::mt19937_64 rng(6);
  // The example of the interface: a second sAR cut after 12 bytes.
  std::vector<uint8_t> buf = packBuffer({tiuCmd(LayoutId::SAR, 3, 2, 1, rng),
                                         tiuCmd(LayoutId::SAR, 3, 2, 2, rng)});
  EXPECT_EQ(errorOf([&] { splitBuffer(Engine::Tiu, buf.data(), 64 + 12); }),
            "TIU command buffer: offset 0x40: truncated sAR command (needs 64 "
            "bytes, 12 left)");

  // Unknown head (tsk_typ 8) at offset 0x40.
  RawCommand bad(LayoutId::SAR);
  bad.set("cmd_short", 1);
  bad.set("tsk_typ", 8);
  buf =
      packBuffer({tiuCmd(LayoutId::SAR, 3, 2, 1, rng), bad, makeTiuEnd(3, 0)});
  std::string msg =
      errorOf([&] { splitBuffer(Engine::Tiu, buf.data(), buf.size()); });
  EXPECT_EQ(
      msg.rfind("TIU command buffer: offset 0x40: unknown command head", 0), 0u)
      << msg;
  EXPECT_NE(msg.find("tsk_typ=8"), std::string::npos) << msg;

  // Unknown GDMA head: short DMA_tensor does not exist.
  RawCommand badDma(LayoutId::SDmaSys);
  badDma.set("cmd_short", 1);
  badDma.set("cmd_type", 0);
  buf = packBuffer({badDma, makeGdmaEnd(1, 0)});
  msg = errorOf([&] { splitBuffer(Engine::Gdma, buf.data(), buf.size()); });
  EXPECT_EQ(
      msg.rfind("GDMA command buffer: offset 0x0: unknown command head", 0), 0u)
      << msg;

  // Garbage in the padding after the end command: 64 + 16 = 0x50, so the
  // stray byte at 0x60 is reported.
  buf = packBuffer({tiuCmd(LayoutId::SAR, 3, 2, 1, rng), makeTiuEnd(2, 0)});
  buf[0x60] = 1;
  EXPECT_EQ(errorOf([&] { splitBuffer(Engine::Tiu, buf.data(), buf.size()); }),
            "TIU command buffer: offset 0x60: non-zero byte in the padding "
            "after the end command");

  // Data (even zeros) beyond the padded end.
  buf[0x60] = 0;
  buf.resize(256, 0);
  msg = errorOf([&] { splitBuffer(Engine::Tiu, buf.data(), buf.size()); });
  EXPECT_EQ(msg.rfind("TIU command buffer: offset 0x50: end command must be "
                      "followed by zero padding to 0x80 bytes",
                      0),
            0u)
      << msg;

  // No end command: one long command fills the buffer exactly.
  buf = packBuffer({tiuCmd(LayoutId::TiuLong, 3, 2, 1, rng)});
  EXPECT_EQ(errorOf([&] { splitBuffer(Engine::Tiu, buf.data(), buf.size()); }),
            "TIU command buffer: offset 0x80: no end command");
  EXPECT_EQ(errorOf([&] { splitBuffer(Engine::Gdma, nullptr, 0); }),
            "GDMA command buffer: offset 0x0: no end command");
  // A nop is not an end: the zero padding after it decodes as a long
  // command that does not fit.
  buf = packBuffer({tiuCmd(LayoutId::SysId, 15, kTiuSysNop, 1, rng)});
  EXPECT_EQ(errorOf([&] { splitBuffer(Engine::Tiu, buf.data(), buf.size()); }),
            "TIU command buffer: offset 0x10: truncated TIU_long command "
            "(needs 128 bytes, 112 left)");
}

namespace {

/// Splits \p buf both ways (splitBuffer, indexBuffer) and checks what
/// either outcome must satisfy: an accepted buffer is exactly its commands
/// re-packed (every bit of it belongs to a command or to the zero padding),
/// and indexBuffer finds the same layouts and offsets; a rejected one names
/// the byte offset, with the same message from both. Returns true if
/// accepted.
bool checkSplit(Engine engine, const std::vector<uint8_t> &buf,
                const std::string &what) {
  std::vector<DecodedCommand> cmds;
  std::string splitError, indexError;
  try {
    cmds = splitBuffer(engine, buf.data(), buf.size());
  } catch (const Error &e) {
    splitError = e.what();
  }
  std::vector<CommandSpan> spans;
  try {
    spans = indexBuffer(engine, buf.data(), buf.size());
  } catch (const Error &e) {
    indexError = e.what();
  }
  EXPECT_EQ(indexError, splitError) << what;
  if (!splitError.empty()) {
    EXPECT_NE(splitError.find("command buffer: offset 0x"), std::string::npos)
        << what << ": " << splitError;
    return false;
  }
  std::vector<RawCommand> raw;
  for (const DecodedCommand &d : cmds)
    raw.push_back(d.cmd);
  EXPECT_TRUE(packBuffer(raw) == buf) << what;
  EXPECT_TRUE(!raw.empty() && isEndCommand(raw.back())) << what;
  EXPECT_EQ(spans.size(), cmds.size()) << what;
  for (size_t i = 0; i < std::min(spans.size(), cmds.size()); ++i) {
    EXPECT_EQ(spans[i].layout, cmds[i].cmd.layout()) << what << " #" << i;
    EXPECT_EQ(spans[i].offset, cmds[i].offset) << what << " #" << i;
  }
  return true;
}

} // namespace

TEST(Buffers, RandomBytesNeverCrash) {
  // Pure noise, some with an end command planted at a random place: the
  // parser must throw a located Error, never crash or read out of bounds
  // (tests/fuzz/fuzz_decode.cpp fuzzes it further). Such buffers are almost
  // never valid (measured: all 6000 rejected), so this part only exercises
  // the rejecting paths.
  std::mt19937_64 rng(11);
  unsigned noiseRejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<uint8_t> buf(rng() % 400);
    for (uint8_t &b : buf)
      b = static_cast<uint8_t>(rng());
    if (iter % 2 && buf.size() >= 16) {
      RawCommand end = iter % 4 == 1 ? makeTiuEnd(1, 0) : makeGdmaEnd(1, 0);
      size_t at = (rng() % (buf.size() / 16)) * 16;
      end.toBytes(buf.data() + at);
    }
    for (Engine engine : {Engine::Tiu, Engine::Gdma})
      noiseRejected +=
          !checkSplit(engine, buf, "noise #" + std::to_string(iter));
  }
  EXPECT_GT(noiseRejected, 0u);

  // Valid streams (every layout of each engine) with 1-3 bytes changed
  // (xor with a non-zero value, so each is a real change). Payload bytes
  // keep the stream valid, head or padding bytes break it: both outcomes
  // must occur, and each must satisfy checkSplit. The seed is fixed, so the
  // counts are the same on every run.
  unsigned accepted = 0, rejected = 0;
  for (Engine engine : {Engine::Tiu, Engine::Gdma}) {
    const std::vector<uint8_t> valid = packBuffer(
        engine == Engine::Tiu ? mixedTiuStream() : mixedGdmaStream());
    ASSERT_TRUE(checkSplit(engine, valid, "unchanged"));
    for (int iter = 0; iter < 2000; ++iter) {
      std::vector<uint8_t> buf = valid;
      int changes = 1 + static_cast<int>(rng() % 3);
      for (int c = 0; c < changes; ++c)
        buf[rng() % buf.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
      if (checkSplit(engine, buf,
                     std::string(engineName(engine)) + " mutation #" +
                         std::to_string(iter)))
        ++accepted;
      else
        ++rejected;
    }
  }
  EXPECT_GT(accepted, 0u);
  EXPECT_GT(rejected, 0u);
  std::cout << "mutated valid streams: " << accepted << " accepted, "
            << rejected << " rejected; noise: " << noiseRejected
            << " of 6000 rejected\n";
}

//===----------------------------------------------------------------------===//
// Layout conversion
//===----------------------------------------------------------------------===//

TEST(ConvertLayout, ShortToLongAndBack) {
  RawCommand sar = encode(documentedSar());
  RawCommand longForm = convertLayout(sar, LayoutId::TiuLong);
  EXPECT_EQ(longForm.get("cmd_short"), 0u);
  EXPECT_EQ(longForm.get("opd0_addr"), 212992u);
  EXPECT_EQ(longForm.get("opd1_addr"), 0x3F800000u);
  EXPECT_EQ(longForm.get("res0_w"), 160u);
  EXPECT_EQ(longForm.get("tsk_opd_num"), 2u);
  EXPECT_EQ(longForm.get("cmd_id_en"), 1u);
  EXPECT_EQ(mnemonic(longForm), "AR.add");
  EXPECT_TRUE(convertLayout(longForm, LayoutId::SAR) == sar);
}

TEST(ConvertLayout, RejectsLostFields) {
  RawCommand longForm(LayoutId::TiuLong);
  longForm.set("tsk_typ", 3);
  longForm.set("relu", 1);
  EXPECT_EQ(errorOf([&] { convertLayout(longForm, LayoutId::SAR); }),
            "cannot convert TIU_long to sAR: field relu = 0x1 has no place in "
            "sAR");
  longForm.set("relu", 0);
  longForm.set("res0_h_str", 1u << 20); // 32 bits long, 20 bits in sAR
  EXPECT_NE(errorOf([&] {
              convertLayout(longForm, LayoutId::SAR);
            }).find("res0_h_str"),
            std::string::npos);
}
