//===- LocalMemTest.cpp - Local-memory addressing and layouts ------------===//
//
// Reference values are derived by hand from isa/docs/bm1684x.md 2 and 3 (derivations
// beside each check).
//
//===----------------------------------------------------------------------===//
#include "tpu/isa/LocalMem.h"

#include "tpu/isa/Error.h"

#include <gtest/gtest.h>

using namespace tpu;
using namespace tpu::isa;

namespace {

void expectStrides(Stride4 got, Stride4 want) {
  EXPECT_EQ(got.n, want.n);
  EXPECT_EQ(got.c, want.c);
  EXPECT_EQ(got.h, want.h);
  EXPECT_EQ(got.w, want.w);
}

} // namespace

TEST(LocalMem, SplitAndJoinAddresses) {
  ChipParams p;
  // TDB example: opd0_addr 212992 = 0x34000 -> lane 0 (0x34000 >> 18 = 0),
  // bank 0x34000 / 0x4000 = 13.
  LocalAddr a = splitLocalAddr(p, 0x34000);
  EXPECT_EQ(a.lane, 0u);
  EXPECT_EQ(a.offset, 0x34000u);
  EXPECT_EQ(a.bank, 13u);
  // Lane 7 starts at 7 << 18 = 0x1C0000; 0x1C4010 is offset 0x4010, bank 1.
  a = splitLocalAddr(p, 0x1C4010);
  EXPECT_EQ(a.lane, 7u);
  EXPECT_EQ(a.offset, 0x4010u);
  EXPECT_EQ(a.bank, 1u);
  // Last byte of local memory: lane 63, offset 0x3FFFF, bank 15.
  a = splitLocalAddr(p, 0xFFFFFF);
  EXPECT_EQ(a.lane, 63u);
  EXPECT_EQ(a.offset, 0x3FFFFu);
  EXPECT_EQ(a.bank, 15u);
  EXPECT_EQ(joinLocalAddr(p, 7, 0x4010), 0x1C4010u);
  EXPECT_EQ(joinLocalAddr(p, 63, 0x3FFFF), 0xFFFFFFu);
  EXPECT_THROW(splitLocalAddr(p, 0x1000000), Error);
  EXPECT_THROW(joinLocalAddr(p, 64, 0), Error);
  EXPECT_THROW(joinLocalAddr(p, 0, 0x40000), Error);

  // An architect's variant: 32 lanes x 512 KiB in 8 banks of 64 KiB.
  ChipParams q;
  q.set("npu_num", "32");
  q.set("lmem_bytes", "512K");
  q.set("lmem_banks", "8");
  // 0x1C4010 = 3 << 19 | 0x44010 -> lane 3, bank 0x44010 / 0x10000 = 4.
  a = splitLocalAddr(q, 0x1C4010);
  EXPECT_EQ(a.lane, 3u);
  EXPECT_EQ(a.offset, 0x44010u);
  EXPECT_EQ(a.bank, 4u);
  EXPECT_EQ(joinLocalAddr(q, 3, 0x44010), 0x1C4010u);
}

TEST(LocalMem, ClassifyUnifiedAddresses) {
  ChipParams p;
  // isa/docs/bm1684x.md 2: R [0x0800_0000, 0x0900_0000), S [0x0900_0000, +16 KiB),
  // L2 [0x1000_0000, +0x1FB000), G [0x1_0000_0000, +4 GiB).
  struct Case {
    uint64_t addr;
    MemRegion want;
  };
  const Case cases[] = {{0, MemRegion::None},
                        {0x07FFFFFF, MemRegion::None},
                        {0x08000000, MemRegion::Local},
                        {0x08FFFFFF, MemRegion::Local},
                        {0x09000000, MemRegion::Static},
                        {0x09003FFF, MemRegion::Static},
                        {0x09004000, MemRegion::None},
                        {0x10000000, MemRegion::L2},
                        {0x101FAFFF, MemRegion::L2},
                        {0x101FB000, MemRegion::None},
                        {0x100000000, MemRegion::Global},
                        {0x1FFFFFFFF, MemRegion::Global},
                        {0x200000000, MemRegion::None}};
  for (const Case &c : cases)
    EXPECT_EQ(classifyAddr(p, c.addr), c.want) << std::hex << c.addr;
  EXPECT_STREQ(memRegionName(MemRegion::L2), "l2");
  EXPECT_EQ(localToUnified(p, 0x34000), 0x08034000u);
  EXPECT_EQ(unifiedToLocal(p, 0x08034000), 0x34000u);
  EXPECT_THROW(unifiedToLocal(p, 0x09000000), Error);
  EXPECT_THROW(localToUnified(p, 0x1000000), Error);
}

TEST(LocalMem, ChannelMapping) {
  ChipParams p;
  // Start lane 62: channels 0, 1 in lanes 62, 63 (slot 0); channel 2 wraps
  // to lane 0, slot 1; 70 channels need ceil((62 + 70) / 64) = 3 slots.
  EXPECT_EQ(channelLane(p, 62, 0), 62u);
  EXPECT_EQ(channelLane(p, 62, 2), 0u);
  EXPECT_EQ(channelSlot(p, 62, 1), 0u);
  EXPECT_EQ(channelSlot(p, 62, 2), 1u);
  EXPECT_EQ(channelSlot(p, 62, 66), 2u);
  EXPECT_EQ(channelSlots(p, 62, 70), 3u);
  EXPECT_EQ(channelSlots(p, 0, 64), 1u);
  EXPECT_EQ(channelSlots(p, 0, 65), 2u);
}

TEST(LocalMem, Strides) {
  ChipParams p;
  // EU-aligned fp32 (1, 32, 54, 160), lane 0: EU_NUM = 16; h*w = 8640 =
  // 540 * 16 is already aligned -> c = 8640; one slot -> n = 8640.
  expectStrides(
      localStrides(p, {1, 32, 54, 160}, 0, Prec::Fp32, LocalLayout::EuAligned),
      {8640, 8640, 160, 1});
  // Same shape from lane 40: ceil((40 + 32) / 64) = 2 slots -> n = 17280.
  expectStrides(
      localStrides(p, {1, 32, 54, 160}, 40, Prec::Fp32, LocalLayout::EuAligned),
      {17280, 8640, 160, 1});
  // EU-aligned int8 (2, 100, 7, 9), lane 10: h*w = 63 -> align_up(63, 64) =
  // 64; slots = ceil(110 / 64) = 2 -> n = 128.
  expectStrides(
      localStrides(p, {2, 100, 7, 9}, 10, Prec::Int8, LocalLayout::EuAligned),
      {128, 64, 9, 1});
  // Compact: c = 63, n = 2 * 63.
  expectStrides(
      localStrides(p, {2, 100, 7, 9}, 10, Prec::Int8, LocalLayout::Compact),
      {126, 63, 9, 1});
  // EU-aligned fp16 (1, 64, 3, 3): EU_NUM 32, align_up(9, 32) = 32.
  expectStrides(
      localStrides(p, {1, 64, 3, 3}, 0, Prec::Fp16, LocalLayout::EuAligned),
      {32, 32, 3, 1});
  // Line-aligned int8 (1, 3, 5, 10): h = align_up(10, 64) = 64, c = 5 * 64.
  expectStrides(
      localStrides(p, {1, 3, 5, 10}, 0, Prec::Int8, LocalLayout::LineAligned),
      {320, 320, 64, 1});
  // Int4: EU_NUM = 128; align_up(3 * 50, 128) = 256.
  expectStrides(
      localStrides(p, {1, 8, 3, 50}, 0, Prec::Int4, LocalLayout::EuAligned),
      {256, 256, 50, 1});
  expectStrides(
      localStrides(p, {4, 70, 9, 9}, 3, Prec::Int8, LocalLayout::PerChannel),
      {0, 1, 0, 0});
  EXPECT_THROW(
      localStrides(p, {1, 1, 1, 1}, 0, Prec::Int8, LocalLayout::FreeStride),
      Error);
}

TEST(LocalMem, BytesPerLane) {
  ChipParams p;
  // Compiler formula n * ceil(c/64) * align_up(h*w, EU_NUM) * bytes:
  // fp32 (1, 32, 54, 160): 1 * 1 * 8640 * 4 = 34560.
  EXPECT_EQ(localBytesPerLane(p, {1, 32, 54, 160}, Prec::Fp32), 34560u);
  // int8 (2, 100, 7, 9): 2 * 2 * 64 * 1 = 256; compact 2 * 2 * 63 = 252.
  EXPECT_EQ(localBytesPerLane(p, {2, 100, 7, 9}, Prec::Int8), 256u);
  EXPECT_EQ(
      localBytesPerLane(p, {2, 100, 7, 9}, Prec::Int8, LocalLayout::Compact),
      252u);
  // fp16 (3, 64, 5, 5): 3 * 1 * 32 * 2 = 192.
  EXPECT_EQ(localBytesPerLane(p, {3, 64, 5, 5}, Prec::Fp16), 192u);
  // int4 compact (1, 1, 3, 3): 9 elements -> round up to 10, halved = 5.
  EXPECT_EQ(
      localBytesPerLane(p, {1, 1, 3, 3}, Prec::Int4, LocalLayout::Compact), 5u);
  // Start lane 60 with 8 channels needs 2 slots: 1 * 2 * 64 = 128 bytes.
  EXPECT_EQ(localBytesPerLane(p, {1, 8, 8, 8}, Prec::Int8,
                              LocalLayout::EuAligned, 60),
            128u);
  // Per-channel int32 values for 100 channels: 2 slots * 4 bytes.
  EXPECT_EQ(localBytesPerLane(p, {1, 100, 1, 1}, Prec::Int32,
                              LocalLayout::PerChannel),
            8u);
}

TEST(LocalMem, ElementPosition) {
  ChipParams p;
  // fp16 (1, 5, 2, 3) EU-aligned at lane 62, offset 0x100: strides
  // (64, 32, 3, 1). Element (0, 3, 1, 2): lane (62 + 3) mod 64 = 1, slot 1,
  // index 1*32 + 1*3 + 2 = 37 -> byte 0x100 + 74 = 0x14A.
  uint64_t start = joinLocalAddr(p, 62, 0x100);
  Stride4 st =
      localStrides(p, {1, 5, 2, 3}, 62, Prec::Fp16, LocalLayout::EuAligned);
  LocalElementPos e = localElementPos(p, start, st, Prec::Fp16, 0, 3, 1, 2);
  EXPECT_EQ(e.lane, 1u);
  EXPECT_EQ(e.offset, 0x14Au);
  EXPECT_EQ(e.bitOffset, 0u);
  // Channel 1 stays in slot 0 of lane 63: index 0*32 + 0*3 + 1 = 1 -> 0x102.
  e = localElementPos(p, start, st, Prec::Fp16, 0, 1, 0, 1);
  EXPECT_EQ(e.lane, 63u);
  EXPECT_EQ(e.offset, 0x102u);
  // Int4: element 3 of a row is bits 12..15 -> byte 1, high nibble.
  e = localElementPos(p, 0x200, {0, 16, 4, 1}, Prec::Int4, 0, 0, 0, 3);
  EXPECT_EQ(e.lane, 0u);
  EXPECT_EQ(e.offset, 0x201u);
  EXPECT_EQ(e.bitOffset, 4u);
  // Broadcast strides (zeros) and an element past the lane end.
  e = localElementPos(p, 0x10, {0, 0, 0, 0}, Prec::Int32, 5, 0, 7, 9);
  EXPECT_EQ(e.offset, 0x10u);
  EXPECT_THROW(
      localElementPos(p, 0x3FFFC, {0, 0, 0, 1}, Prec::Fp32, 0, 0, 0, 1), Error);
  EXPECT_THROW(localElementPos(p, 0x10, {0, 0, 0, -8}, Prec::Int8, 0, 0, 0, 3),
               Error);
}
