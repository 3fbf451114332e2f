//===- FuncOrderTest.cpp - When the kernels may run channels in parallel --===//
//
// The kernels compute a command's channels on several host threads only
// where the order cannot show (ResultView::elementsApart, channelOrderFree,
// semantics.md "Conventions"). These tests check the two predicates on
// hand-built views, and that commands whose result overlaps an operand give
// the bytes of the documented order (rows in n, c, h order, each read whole
// before it is written) on 1 and 4 threads, against a reference that
// applies that order to the same initial memory.
//
//===----------------------------------------------------------------------===//

#include "FuncImpl.h"
#include "FuncTestUtil.h"

#include "tpusim/Simd.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace tpu;
using namespace tpu::sim;
using namespace tpu::sim::test;
using namespace tpu::sim::detail;

namespace {

/// A local tensor at lane offset `off` of lane `lane`.
LocalTensor tensorAt(unsigned lane, uint32_t off, Prec p, Shape4 s,
                     Stride4 st) {
  LocalTensor t;
  t.addr = laddr(lane, off);
  t.type = {p, true};
  t.shape = s;
  t.stride = st;
  return t;
}

/// Every byte of local memory.
std::vector<uint8_t> lmemBytes(MachineState &m) {
  std::vector<uint8_t> v;
  for (unsigned lane = 0; lane < m.lmem.lanes(); ++lane) {
    const uint8_t *p = m.lmem.at(lane, 0, m.lmem.laneBytes());
    v.insert(v.end(), p, p + m.lmem.laneBytes());
  }
  return v;
}

/// Runs `cmd` with `threads` kernel threads on a machine that setup(m)
/// fills; local memory afterwards.
template <typename Setup, typename Cmd>
std::vector<uint8_t> runWithThreads(Setup setup, const Cmd &cmd,
                                    unsigned threads) {
  unsigned before = kernelThreads();
  setKernelThreads(threads);
  MachineState m(isa::ChipParams::bm1684x());
  setup(m);
  runTiu(cmd, m);
  setKernelThreads(before);
  return lmemBytes(m);
}

TEST(FuncOrder, ElementsApartFollowsTheStrides) {
  MachineState m(isa::ChipParams::bm1684x());
  TiuOp op;
  auto apart = [&](LocalTensor t) {
    return ResultView(m, t, "result", op).elementsApart();
  };
  // Compact (1, 67, 3, 5) fp16: two slots in lane 0, 15 elements each.
  EXPECT_TRUE(apart(tensorAt(0, 0, Prec::Fp16, {1, 67, 3, 5}, {30, 15, 5, 1})));
  // Rows that overlap (h stride 3 < w = 5).
  EXPECT_FALSE(
      apart(tensorAt(0, 0, Prec::Fp16, {1, 67, 3, 5}, {30, 15, 3, 1})));
  // Slots that overlap the second slot's rows (c stride 10 < 15).
  EXPECT_FALSE(
      apart(tensorAt(0, 0, Prec::Fp16, {1, 67, 3, 5}, {30, 10, 5, 1})));
  // One slot only (c <= 64): its c stride cannot collide.
  EXPECT_TRUE(apart(tensorAt(0, 0, Prec::Fp16, {1, 64, 3, 5}, {15, 0, 5, 1})));
  // Batches on top of each other (n stride 0).
  EXPECT_FALSE(apart(tensorAt(0, 0, Prec::Fp16, {2, 4, 3, 5}, {0, 15, 5, 1})));
  // Batches interleaved with slots but apart ([slot][n][h][w]).
  EXPECT_TRUE(apart(tensorAt(0, 0, Prec::Fp32, {2, 67, 3, 5}, {15, 30, 5, 1})));
  // A start lane past 0 adds a slot: 67 channels from lane 62 take 3.
  EXPECT_FALSE(
      apart(tensorAt(62, 0, Prec::Fp16, {2, 67, 3, 5}, {15, 15, 5, 1})));
  EXPECT_TRUE(
      apart(tensorAt(62, 0, Prec::Fp16, {2, 67, 3, 5}, {15, 45, 5, 1})));
  // Int4 elements share bytes.
  EXPECT_FALSE(apart(tensorAt(0, 0, Prec::Int4, {1, 4, 3, 6}, {18, 18, 6, 1})));
}

TEST(FuncOrder, ChannelOrderFreeOnlyForDisjointOrIdenticalOperands) {
  MachineState m(isa::ChipParams::bm1684x());
  TiuOp op;
  Shape4 s{1, 67, 2, 8};
  Stride4 st{32, 16, 8, 1}; // compact, two slots
  ResultView out(m, tensorAt(0, 0x1000, Prec::Fp32, s, st), "result", op);
  ASSERT_TRUE(out.elementsApart());
  auto freeWith = [&](LocalTensor t) {
    return channelOrderFree(out, OperandView(m, t, "input", op));
  };
  // Disjoint ranges of every lane: before and after the result's 128 bytes.
  EXPECT_TRUE(freeWith(tensorAt(0, 0x1000 - 128, Prec::Fp32, s, st)));
  EXPECT_TRUE(freeWith(tensorAt(0, 0x1080, Prec::Fp32, s, st)));
  // In place.
  EXPECT_TRUE(freeWith(tensorAt(0, 0x1000, Prec::Fp32, s, st)));
  // Shifted by one element, one row, or in another lane's range start.
  EXPECT_FALSE(freeWith(tensorAt(0, 0x1004, Prec::Fp32, s, st)));
  EXPECT_FALSE(freeWith(tensorAt(0, 0x1020, Prec::Fp32, s, st)));
  EXPECT_FALSE(freeWith(tensorAt(1, 0x1000, Prec::Fp32, s, st)));
  // Same address, other element type (an in-place cast).
  EXPECT_FALSE(freeWith(tensorAt(0, 0x1000, Prec::Fp16, s, {32, 16, 8, 1})));
  // Same address and type but broadcast (c = 1): read by every channel.
  EXPECT_FALSE(freeWith(tensorAt(0, 0x1000, Prec::Fp32, {1, 1, 2, 8}, st)));
  // A result whose elements collide is never free.
  ResultView clash(m, tensorAt(0, 0x1000, Prec::Fp32, s, {32, 16, 4, 1}),
                   "result", op);
  EXPECT_FALSE(channelOrderFree(
      clash, OperandView(m, tensorAt(0, 0x3000, Prec::Fp32, s, st), "in", op)));
}

/// A compact fp32 AR add of an immediate, y = x + 1, whose result starts
/// `shift` bytes after its input in every lane: 130 channels (three slots
/// in lanes 0 and 1), 2 batches, 2 rows of 8.
isa::cmd::SAR shiftedAdd(uint32_t shift) {
  isa::cmd::SAR c;
  c.cmd_short = 1;
  c.tsk_typ = 3;
  c.tsk_eu_typ = 2; // add
  c.tsk_opd_num = 2;
  c.opd0_prec = c.opd1_prec = c.res0_prec = uint64_t(Prec::Fp32);
  c.opd0_sign = c.opd1_sign = 1;
  c.res0_n = 2;
  c.res0_c = 130;
  c.res0_h = 2;
  c.res0_w = 8;
  c.opd0_str = c.res0_str = 1; // compact
  c.opd0_addr = laddr(0, 0);
  c.res0_addr = laddr(0, shift);
  c.opd1_const = 1;
  c.opd1_addr = 0x3F800000; // 1.0f
  return c;
}

TEST(FuncOrder, OverlappingResultsKeepTheRowOrderOnEveryThreadCount) {
  Ref x = compactRef(laddr(0, 0), Prec::Fp32, 2, 130, 2, 8);
  auto setup = [&](MachineState &m) {
    std::mt19937 rng(7);
    for (uint32_t n = 0; n < 2; ++n)
      for (uint32_t c = 0; c < 130; ++c)
        for (uint32_t h = 0; h < 2; ++h)
          for (uint32_t w = 0; w < 8; ++w)
            refSetFloat(m, x, n, c, h, w, randomFloat(rng, Prec::Fp32));
  };
  // Shifts (bytes): in place, one element, one row, one slot, apart.
  for (uint32_t shift : {0u, 4u, 32u, 64u, 0x1000u}) {
    Ref y = compactRef(laddr(0, shift), Prec::Fp32, 2, 130, 2, 8);
    // The documented order: rows (n, c, h) in turn, each read whole before
    // it is written, where a channel's rows that follow one another in
    // every operand (here: compact) merge into one row of h * w.
    MachineState ref(isa::ChipParams::bm1684x());
    setup(ref);
    for (uint32_t n = 0; n < 2; ++n)
      for (uint32_t c = 0; c < 130; ++c) {
        float row[16];
        for (uint32_t i = 0; i < 16; ++i)
          row[i] = refGetFloat(ref, x, n, c, i / 8, i % 8) + 1.0f;
        for (uint32_t i = 0; i < 16; ++i)
          refSetFloat(ref, y, n, c, i / 8, i % 8, row[i]);
      }
    std::vector<uint8_t> want = lmemBytes(ref);
    for (unsigned threads : {1u, 4u})
      EXPECT_TRUE(runWithThreads(setup, shiftedAdd(shift), threads) == want)
          << "shift " << shift << ", " << threads << " threads";
  }
}

TEST(FuncOrder, RequantWithOverlappingParametersOnEveryThreadCount) {
  // rq1 int32 -> int8 over 65 channels, its per-channel parameter records
  // either apart or inside the result's bytes (the parameters of later
  // channels are then overwritten by earlier channels' results): 1 and 4
  // threads give the same bytes either way.
  const uint32_t C = 65, W = 70;
  Ref x = euRef(laddr(0, 0), Prec::Int32, 1, C, 1, W);
  for (uint32_t pOff : {0x2000u, 0x1000u}) {
    auto setup = [&](MachineState &m) {
      std::mt19937 rng(11);
      for (uint32_t c = 0; c < C; ++c) {
        unsigned lane = c % 64, slot = c / 64;
        int32_t rec[3] = {int32_t(randomInt(rng, 1 << 20, 1 << 30)),
                          -int(randomInt(rng, 20, 30)),
                          int32_t(randomInt(rng, -20, 20))};
        std::memcpy(m.lmem.at(lane, pOff + slot * 64, 12), rec, 12);
        for (uint32_t w = 0; w < W; ++w)
          refSetBits(m, x, 0, c, 0, w, uint32_t(randomInt(rng, -1e6, 1e6)));
      }
    };
    isa::cmd::SRQDQ r;
    r.cmd_short = 1;
    r.tsk_typ = 4;
    r.tsk_eu_typ = 1; // rq1
    r.opd0_prec = uint64_t(Prec::Int32);
    r.res0_prec = uint64_t(Prec::Int8);
    r.opd0_sign = r.opd2_sign = 1;
    r.res0_n = 1;
    r.res0_c = C;
    r.res0_h = 1;
    r.res0_w = W;
    r.opd0_addr = x.addr;
    r.opd1_addr = laddr(0, pOff);
    r.res0_addr = laddr(0, 0x1000);
    EXPECT_TRUE(runWithThreads(setup, r, 1) == runWithThreads(setup, r, 4))
        << "parameters at " << pOff;
  }
}

} // namespace
