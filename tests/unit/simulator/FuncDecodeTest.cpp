//===- FuncDecodeTest.cpp - Canonical forms, memories, element access -----===//

#include "FuncTestUtil.h"

#include <gtest/gtest.h>

using namespace tpu;
using namespace tpu::sim;
using namespace tpu::sim::test;

namespace {

TEST(FuncDecode, ShortArExpandsToLongFieldsWithDefaults) {
  // The published TDB register dump of an fp32 add with an immediate
  // (isa/docs/bm1684x.md 4.5 sAR).
  isa::cmd::SAR c;
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
  TiuOp op = decodeTiu(isa::encode(c));
  EXPECT_TRUE(op.shortForm);
  EXPECT_EQ(op.layout, isa::LayoutId::SAR);
  EXPECT_EQ(op.task, isa::TiuTask::AR);
  EXPECT_EQ(op.eu, 2u);
  EXPECT_EQ(op.f.cmd_id, 15u);
  EXPECT_EQ(op.f.cmd_id_dep, 3u);
  EXPECT_EQ(op.f.opd1_addr, 0x3F800000u);
  EXPECT_EQ(op.f.opd0_addr, 212992u);
  EXPECT_EQ(op.f.res0_h, 54u);
  // Defaults of the short form: every lane, operands shaped like the result.
  EXPECT_EQ(op.f.tsk_lane_num, ~uint64_t(0));
  EXPECT_EQ(op.f.opd0_c, 32u);
  EXPECT_EQ(op.f.opd1_w, 160u);
  EXPECT_EQ(op.f.opd2_str, 2u); // per-channel third operand
}

TEST(FuncDecode, LongFormKeepsEveryField) {
  isa::cmd::TiuLong c;
  c.tsk_typ = 0;
  c.tsk_lane_num = 0x00FF00FF00FF00FFull;
  c.opd1_prec = 5;
  c.opd0_n_str = 1234;
  c.opd3_addr = 0xDEADBEEF;
  TiuOp op = decodeTiu(isa::encode(c));
  EXPECT_FALSE(op.shortForm);
  EXPECT_EQ(op.task, isa::TiuTask::Conv);
  EXPECT_EQ(op.f.tsk_lane_num, 0x00FF00FF00FF00FFull);
  EXPECT_EQ(op.f.opd1_prec, 5u);
  EXPECT_EQ(op.f.opd0_n_str, 1234u);
  EXPECT_EQ(op.f.opd3_addr, 0xDEADBEEFu);
}

TEST(FuncDecode, SysDecodesAndLarIsRejected) {
  isa::RawCommand end = isa::makeTiuEnd(7, 2);
  TiuOp op = decodeTiu(end);
  EXPECT_EQ(op.task, isa::TiuTask::Sys);
  EXPECT_EQ(op.eu, isa::kTiuSysEnd);
  EXPECT_EQ(op.f.cmd_id, 7u);
  MachineState m(isa::ChipParams::bm1684x());
  EXPECT_NO_THROW(executeTiu(op, m));
  isa::cmd::Lar lar;
  lar.tsk_typ = 7;
  EXPECT_THROW(decodeTiu(isa::encode(lar)), Error);
  // A GDMA command is not a TIU command.
  EXPECT_THROW(decodeTiu(isa::makeGdmaEnd(1, 1)), Error);
}

TEST(FuncDecode, ShortMatrixFieldsFollowTheDirection) {
  isa::cmd::SDmaMatrix s;
  s.cmd_short = 1;
  s.cmd_type = uint64_t(isa::GdmaType::Matrix);
  s.src_hstride = 11;
  s.dst_nstride = 22;
  s.dst_cstride = 33;
  s.src_hsize = 4;
  s.src_wsize = 5;
  s.dst_nsize = 6;
  s.dst_csize = 7;
  s.dst_wsize = 8;
  // Source in DDR: names as written (S2L).
  s.src_start_addr_h8 = 1;
  s.dst_start_addr_l32 = 0x08000000;
  GdmaOp s2l = decodeGdma(isa::encode(s));
  EXPECT_EQ(s2l.type, isa::GdmaType::Matrix);
  EXPECT_EQ(s2l.f.src_hstride, 11u);
  EXPECT_EQ(s2l.f.dst_nstride, 22u);
  EXPECT_EQ(s2l.f.dst_wsize, 8u);
  EXPECT_EQ(s2l.laneMask(), ~uint64_t(0)); // zero mask = no mask
  // Source in local memory: the second names apply (L2S).
  s.src_start_addr_h8 = 0;
  s.src_start_addr_l32 = 0x08000000;
  s.dst_start_addr_h8 = 1;
  s.dst_start_addr_l32 = 0;
  GdmaOp l2s = decodeGdma(isa::encode(s));
  EXPECT_EQ(l2s.f.dst_hstride, 11u);
  EXPECT_EQ(l2s.f.src_nstride, 22u);
  EXPECT_EQ(l2s.f.src_cstride, 33u);
  EXPECT_EQ(l2s.f.dst_hsize, 4u);
  EXPECT_EQ(l2s.f.dst_wsize, 5u);
  EXPECT_EQ(l2s.f.src_nsize, 6u);
  EXPECT_EQ(l2s.f.src_csize, 7u);
  EXPECT_EQ(l2s.f.src_wsize, 8u);
  EXPECT_EQ(l2s.f.src_hstride, 0u);
  EXPECT_EQ(l2s.srcAddr(), 0x08000000u);
  EXPECT_EQ(l2s.dstAddr(), 0x100000000u);
}

TEST(FuncDecode, NonzeroAndGatherExtras) {
  isa::cmd::DmaMaskedSelect nz;
  nz.cmd_type = uint64_t(isa::GdmaType::Nonzero);
  nz.mask_data_format = uint64_t(isa::GdmaFormat::Int16); // index format
  nz.dst_nstride = 77;                                    // base_i
  GdmaOp op = decodeGdma(isa::encode(nz));
  EXPECT_EQ(op.type, isa::GdmaType::Nonzero);
  EXPECT_EQ(op.base_i, 77u);
  EXPECT_EQ(op.index_data_format, isa::GdmaFormat::Int16);
  EXPECT_EQ(op.f.dst_nstride, 0u);
  isa::cmd::DmaGather g;
  g.cmd_type = uint64_t(isa::GdmaType::Gather);
  g.src_hsize = 100000; // 32-bit h sizes
  g.index_start_addr_l32 = 0x1234;
  g.index_start_addr_h8 = 2;
  g.index_hsize = 70000;
  op = decodeGdma(isa::encode(g));
  EXPECT_EQ(op.f.src_hsize, 100000u);
  EXPECT_EQ(op.index_hsize, 70000u);
  EXPECT_EQ(op.index_start_addr, 0x200001234u);
  GdmaOp sys = decodeGdma(isa::makeGdmaEnd(3, 4));
  EXPECT_EQ(sys.type, isa::GdmaType::Sys);
}

TEST(FuncMemory, LocalGlobalFlatBounds) {
  isa::ChipParams chip = isa::ChipParams::bm1684x();
  MachineState m(chip);
  EXPECT_EQ(m.lmem.lanes(), 64u);
  EXPECT_EQ(m.lmem.laneBytes(), kLaneBytes);
  EXPECT_NO_THROW(m.lmem.at(63, kLaneBytes - 4, 4));
  EXPECT_THROW(m.lmem.at(63, kLaneBytes - 3, 4), MemoryError);
  EXPECT_THROW(m.lmem.at(64, 0, 1), MemoryError);
  // Lanes are separate: writing the end of lane 0 leaves lane 1 alone.
  std::memset(m.lmem.at(0, kLaneBytes - 8, 8), 0xAB, 8);
  EXPECT_EQ(*m.lmem.at(1, 0, 1), 0);
  m.lmem.clear();
  EXPECT_EQ(*m.lmem.at(0, kLaneBytes - 1, 1), 0);

  // Global: never-written bytes read 0; a write across a 1 MiB page edge.
  uint8_t buf[16];
  m.gmem.read(kDdrBase + 12345, buf, 16);
  for (uint8_t b : buf)
    EXPECT_EQ(b, 0);
  EXPECT_EQ(m.gmem.residentBytes(), 0u);
  uint8_t pat[16];
  for (int i = 0; i < 16; ++i)
    pat[i] = uint8_t(i + 1);
  uint64_t edge = kDdrBase + (uint64_t(1) << 20) - 8;
  m.gmem.write(edge, pat, 16);
  m.gmem.read(edge, buf, 16);
  EXPECT_EQ(std::memcmp(buf, pat, 16), 0);
  EXPECT_EQ(m.gmem.residentBytes(), 2u << 20);
  m.gmem.fill(edge + 4, 0xEE, 4);
  m.gmem.read(edge, buf, 16);
  EXPECT_EQ(buf[3], 4);
  EXPECT_EQ(buf[4], 0xEE);
  EXPECT_EQ(buf[8], 9);
  EXPECT_THROW(m.gmem.read(kDdrBase - 1, buf, 2), MemoryError);
  EXPECT_THROW(m.gmem.write(kDdrBase + chip.gmemBytes - 8, pat, 16),
               MemoryError);
  EXPECT_TRUE(m.gmem.contains(kDdrBase, chip.gmemBytes));
  EXPECT_FALSE(m.gmem.contains(kDdrBase, chip.gmemBytes + 1));

  EXPECT_TRUE(m.smem.contains(0x09000000, 16 * 1024));
  EXPECT_THROW(m.smem.at(0x09000000 + 16 * 1024 - 2, 4), MemoryError);
  EXPECT_THROW(m.l2.at(0x0FFFFFFF, 1), MemoryError);
}

TEST(FuncElements, LoadStoreConversions) {
  uint8_t buf[16] = {};
  ElemType i8{Prec::Int8, true}, u8{Prec::Int8, false};
  storeInt(buf, 0, i8, 300); // saturates
  EXPECT_EQ(loadInt(buf, 0, i8), 127);
  storeInt(buf, 1, u8, -5);
  EXPECT_EQ(loadInt(buf, 1, u8), 0);
  storeInt(buf, 2, i8, -128);
  EXPECT_EQ(loadInt(buf, 2, u8), 128); // same bits, unsigned view
  // INT4: element 2k in the low nibble of byte k.
  ElemType i4{Prec::Int4, true};
  std::memset(buf, 0, sizeof(buf));
  storeInt(buf, 0, i4, -3);
  storeInt(buf, 1, i4, 5);
  EXPECT_EQ(buf[0], 0x5D);
  EXPECT_EQ(loadInt(buf, 0, i4), -3);
  EXPECT_EQ(loadInt(buf, 1, i4), 5);
  // Floats: fp16 rounding per mode; 1 + 2^-11 is a tie in fp16.
  ElemType f16{Prec::Fp16, true};
  float tie = 1.0f + 1.0f / 2048.0f;
  storeFloat(buf, 0, f16, tie, isa::RoundMode::HalfToEven);
  EXPECT_EQ(loadFloat(buf, 0, f16), 1.0f);
  storeFloat(buf, 0, f16, tie, isa::RoundMode::HalfAwayFromZero);
  EXPECT_EQ(loadFloat(buf, 0, f16), 1.0f + 1.0f / 1024.0f);
  // Float to int rounds per mode and saturates.
  storeFloat(buf, 0, i8, 2.5f, isa::RoundMode::HalfToEven);
  EXPECT_EQ(loadInt(buf, 0, i8), 2);
  storeFloat(buf, 0, i8, -1000.0f);
  EXPECT_EQ(loadInt(buf, 0, i8), -128);
  ElemType bf{Prec::Bf16, true};
  storeInt(buf, 0, bf, 257); // 257 is not a bf16: nearest even is 256
  EXPECT_EQ(loadFloat(buf, 0, bf), 256.0f);
  EXPECT_EQ(loadValue(buf, 0, bf), 256.0);
}

TEST(FuncElements, LocalTensorViewsMatchTheLayoutFormula) {
  MachineState m(isa::ChipParams::bm1684x());
  // fp16 (2, 70, 3, 5) at lane 60: EU-aligned c stride 32 elements.
  LocalTensor t = makeLocalTensor(m.chip, laddr(60, 0x40), {Prec::Fp16, true},
                                  {2, 70, 3, 5});
  EXPECT_EQ(t.stride.c, 32);
  EXPECT_EQ(t.stride.n, 3 * 32); // ceil((60 + 70) / 64) = 3 channel slots
  LaneGeometry geo(m.chip);
  LocalPos p = t.pos(geo, 1, 10, 2, 4);
  // Channel 10 -> lane 6, slot 1.
  EXPECT_EQ(p.lane, 6u);
  t.setFloat(m, 1, 10, 2, 4, 3.5f);
  Ref r = euRef(t.addr, Prec::Fp16, 2, 70, 3, 5);
  EXPECT_EQ(refGetFloat(m, r, 1, 10, 2, 4), 3.5f);
  EXPECT_EQ(t.getFloat(m, 1, 10, 2, 4), 3.5f);
  EXPECT_THROW(t.getFloat(m, 1, 10, 2, uint32_t(kLaneBytes)), MemoryError);
}

TEST(FuncMemory, SharedRangeReadsInPlaceAndCopiesAPageOnWrite) {
  // writeShared: the range is read where it lies (no page allocated); a
  // write or fill inside it allocates that page with the range's bytes
  // first; everything reads as after a plain write of the range.
  isa::ChipParams chip = isa::ChipParams::bm1684x();
  MachineState m(chip);
  const uint64_t page = uint64_t(1) << 20;
  std::vector<uint8_t> src(2 * page + 100);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = uint8_t(i * 7 + 3);
  uint64_t at = kDdrBase + page - 50; // spans four pages
  m.gmem.writeShared(at, src.data(), src.size());
  EXPECT_EQ(m.gmem.residentBytes(), 0u);
  std::vector<uint8_t> got(src.size() + 20);
  m.gmem.read(at - 10, got.data(), got.size());
  for (size_t i = 0; i < got.size(); ++i) {
    uint8_t want = i < 10 || i >= 10 + src.size() ? 0 : src[i - 10];
    ASSERT_EQ(got[i], want) << i;
  }
  // A write in the second page copies it whole; the others stay shared.
  uint8_t pat[4] = {0xA1, 0xA2, 0xA3, 0xA4};
  m.gmem.write(at + page, pat, 4);
  EXPECT_EQ(m.gmem.residentBytes(), page);
  m.gmem.fill(at + 2 * page, 0, 8); // zeros over shared bytes are written
  EXPECT_EQ(m.gmem.residentBytes(), 2 * page);
  std::vector<uint8_t> want = src;
  std::memcpy(want.data() + page, pat, 4);
  std::fill_n(want.begin() + 2 * page, 8, 0);
  m.gmem.read(at, got.data(), src.size());
  EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin()));
  // A second range is copied (one shared range only).
  uint8_t other[3] = {9, 8, 7};
  m.gmem.writeShared(kDdrBase + 16 * page, other, 3);
  EXPECT_EQ(m.gmem.residentBytes(), 3 * page);
  uint8_t back[3];
  m.gmem.read(kDdrBase + 16 * page, back, 3);
  EXPECT_EQ(std::memcmp(back, other, 3), 0);
}

} // namespace
