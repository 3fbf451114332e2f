//===- FuncGdmaTest.cpp - GDMA kernels against direct index arithmetic ----===//
//
// Each test encodes a GDMA command with the isa typed structs, executes it,
// and checks every destination element at the position the documented
// formulas give (DDR: base + (n*ns + c*cs + h*hs + w*ws) * bytes; local:
// isa/docs/bm1684x.md 3.1 with the unified window at 0x0800_0000).
//
//===----------------------------------------------------------------------===//

#include "FuncTestUtil.h"

#include "tpusim/Simd.h"

#include <gtest/gtest.h>

using namespace tpu;
using namespace tpu::sim;
using namespace tpu::sim::test;

namespace {

constexpr uint64_t kAllLanesMask = 0xFFFFFFFF;

/// A DDR tensor for the reference side.
struct Ddr {
  uint64_t addr;
  unsigned bytes;
  int64_t ns, cs, hs, ws;
  uint64_t at(uint32_t n, uint32_t c, uint32_t h, uint32_t w) const {
    return addr + uint64_t(n * ns + c * cs + h * hs + w * ws) * bytes;
  }
};

uint64_t getDdr(MachineState &m, uint64_t a, unsigned bytes) {
  uint64_t v = 0;
  m.gmem.read(a, &v, bytes);
  return v;
}
void putDdr(MachineState &m, uint64_t a, unsigned bytes, uint64_t v) {
  m.gmem.write(a, &v, bytes);
}

/// Distinct value for element (n, c, h, w) (fits 16 bits).
uint64_t tag(uint32_t n, uint32_t c, uint32_t h, uint32_t w) {
  return (uint64_t(n) * 7919 + c * 131 + h * 17 + w * 3 + 1) & 0xFFFF;
}

template <typename Cmd> void setSrc(Cmd &c, uint64_t a) {
  c.src_start_addr_l32 = a & 0xFFFFFFFF;
  c.src_start_addr_h8 = a >> 32;
}
template <typename Cmd> void setDst(Cmd &c, uint64_t a) {
  c.dst_start_addr_l32 = a & 0xFFFFFFFF;
  c.dst_start_addr_h8 = a >> 32;
}

isa::cmd::DmaTensor tensorCmd(unsigned sp, isa::GdmaFormat fmt) {
  isa::cmd::DmaTensor c;
  c.cmd_type = uint64_t(isa::GdmaType::Tensor);
  c.cmd_special_function = sp;
  c.src_data_format = uint64_t(fmt);
  c.stride_enable = 1;
  c.localmem_mask_l32 = c.localmem_mask_h32 = kAllLanesMask;
  return c;
}

template <typename Cmd>
void setSrcShape(Cmd &c, uint32_t n, uint32_t ch, uint32_t h, uint32_t w,
                 int64_t ns, int64_t cs, int64_t hs, int64_t ws) {
  c.src_nsize = n;
  c.src_csize = ch;
  c.src_hsize = h;
  c.src_wsize = w;
  c.src_nstride = ns;
  c.src_cstride = cs;
  c.src_hstride = hs;
  c.src_wstride = ws;
}
template <typename Cmd>
void setDstShape(Cmd &c, uint32_t n, uint32_t ch, uint32_t h, uint32_t w,
                 int64_t ns, int64_t cs, int64_t hs, int64_t ws) {
  c.dst_nsize = n;
  c.dst_csize = ch;
  c.dst_hsize = h;
  c.dst_wsize = w;
  c.dst_nstride = ns;
  c.dst_cstride = cs;
  c.dst_hstride = hs;
  c.dst_wstride = ws;
}

/// Writes each element's tag into the fp16 DDR tensor `src` (the shape of
/// `dst`) and returns the tensor command that loads it into the local
/// tensor `dst`, all lanes enabled.
isa::cmd::DmaTensor tagAndLoadCmd(MachineState &m, const Ddr &src,
                                  const Ref &dst) {
  for (uint32_t n = 0; n < dst.n; ++n)
    for (uint32_t c = 0; c < dst.c; ++c)
      for (uint32_t h = 0; h < dst.h; ++h)
        for (uint32_t w = 0; w < dst.w; ++w)
          putDdr(m, src.at(n, c, h, w), 2, tag(n, c, h, w));
  auto cmd = tensorCmd(0, isa::GdmaFormat::Fp16);
  setSrc(cmd, src.addr);
  setDst(cmd, kLmemBase + dst.addr);
  setSrcShape(cmd, dst.n, dst.c, dst.h, dst.w, src.ns, src.cs, src.hs, src.ws);
  setDstShape(cmd, dst.n, dst.c, dst.h, dst.w, dst.ns, dst.cs, dst.hs, dst.ws);
  return cmd;
}

/// Loads the fp16 DDR tensor `src` (N x C x H x W, each element its tag)
/// into an EU-aligned local tensor from lane 10 with the lanes `off` masked
/// off (a marker in their last element stays); checks every element.
void checkDdrToLocal(uint32_t N, uint32_t C, uint32_t H, uint32_t W,
                     const Ddr &src, std::initializer_list<unsigned> off) {
  MachineState m(isa::ChipParams::bm1684x());
  Ref dst = euRef(laddr(10, 0x400), Prec::Fp16, N, C, H, W);
  auto cmd = tagAndLoadCmd(m, src, dst);
  uint64_t mask = ~uint64_t(0);
  for (unsigned lane : off)
    mask &= ~(uint64_t(1) << lane);
  auto enabled = [&](uint32_t c) { return (mask >> ((10 + c) % 64)) & 1; };
  for (uint32_t n = 0; n < N; ++n)
    for (uint32_t c = 0; c < C; ++c)
      if (!enabled(c))
        refSetBits(m, dst, n, c, H - 1, W - 1, 0xBEEF);
  cmd.localmem_mask_l32 = mask & 0xFFFFFFFF;
  cmd.localmem_mask_h32 = mask >> 32;
  runGdma(cmd, m);
  for (uint32_t n = 0; n < N; ++n)
    for (uint32_t c = 0; c < C; ++c) {
      if (!enabled(c)) {
        EXPECT_EQ(refGetBits(m, dst, n, c, H - 1, W - 1), 0xBEEFu);
        continue;
      }
      for (uint32_t h = 0; h < H; ++h)
        for (uint32_t w = 0; w < W; ++w)
          ASSERT_EQ(refGetBits(m, dst, n, c, h, w), tag(n, c, h, w))
              << n << " " << c << " " << h << " " << w;
    }
}

TEST(FuncGdma, TensorDdrToLocalWithStridesAndLaneMask) {
  // Elements two apart in DDR (w stride 2).
  const uint32_t N = 2, C = 70, H = 3, W = 5;
  checkDdrToLocal(N, C, H, W,
                  {kDdrBase + 0x1000, 2, C * H * W * 2, H * W * 2, W * 2, 2},
                  {12});
}

// Loads of 64 KiB and more run their channels on the kernel threads: rows
// apart in DDR (h stride past W) or whole planes, from lane 10 across the
// last lane twice, two lanes masked off, N = 2.
TEST(FuncGdma, LargeTensorDdrToLocalRowsAndPlanes) {
  const uint32_t N = 2, C = 130, H = 8, W = 40;
  ASSERT_GE(uint64_t(N) * C * H * W * 2, uint64_t(64) << 10);
  for (int64_t hs : {int64_t(W) + 3, int64_t(W)})
    checkDdrToLocal(N, C, H, W,
                    {kDdrBase + 0x2000, 2, C * H * hs, H * hs, hs, 1},
                    {12, 40});
}

// A large load whose destination rows overlap within a lane (n stride 0:
// both batches on one place; slot stride 0: channels c, c + 64 and c + 128
// on one place) gives the bytes of (n, c, h, w) order, the last write
// winning, on 1 to 4 kernel threads and again and again (a race between
// threads writing one lane would show as a different winner).
TEST(FuncGdma, LargeLoadOverlappingRowsKeepOrder) {
  const unsigned saved = kernelThreads();
  const uint32_t N = 2, H = 8, W = 64;
  for (unsigned threads : {1u, 2u, 4u})
    for (bool slotsOverlap : {false, true}) {
      setKernelThreads(threads);
      const uint32_t C = slotsOverlap ? 130 : 70;
      ASSERT_GE(uint64_t(N) * C * H * W * 2, uint64_t(64) << 10);
      MachineState m(isa::ChipParams::bm1684x());
      Ddr src{kDdrBase + 0x4000, 2, C * H * W, H * W, W, 1};
      // EU-aligned rows, but the n (or slot) stride 0.
      Ref dst = euRef(laddr(10, 0x400), Prec::Fp16, N, C, H, W);
      if (slotsOverlap)
        dst.cs = 0;
      else
        dst.ns = 0;
      auto cmd = tagAndLoadCmd(m, src, dst);
      for (int round = 0; round < 10; ++round) {
        runGdma(cmd, m);
        // The last write to the place of (n, c): with the n stride 0,
        // batch N - 1's; with the slot stride 0, the last channel of c's
        // lane (each batch in its own place).
        for (uint32_t n = 0; n < (slotsOverlap ? N : 1); ++n)
          for (uint32_t c = 0; c < C; ++c) {
            uint32_t last = c;
            while (slotsOverlap && last + 64 < C)
              last += 64;
            uint32_t lastN = slotsOverlap ? n : N - 1;
            for (uint32_t h = 0; h < H; ++h)
              for (uint32_t w = 0; w < W; ++w)
                ASSERT_EQ(refGetBits(m, dst, n, c, h, w),
                          tag(lastN, last, h, w))
                    << threads << " threads, slots " << slotsOverlap << ": n "
                    << n << " c " << c << " " << h << " " << w;
          }
      }
    }
  setKernelThreads(saved);
}

TEST(FuncGdma, TensorLocalToDdrStridedAndMasked) {
  MachineState m(isa::ChipParams::bm1684x());
  const uint32_t N = 1, C = 4, H = 2, W = 3;
  Ref src = compactRef(laddr(62, 0x40), Prec::Int32, N, C, H, W);
  for (uint32_t c = 0; c < C; ++c)
    for (uint32_t h = 0; h < H; ++h)
      for (uint32_t w = 0; w < W; ++w)
        refSetBits(m, src, 0, c, h, w, tag(0, c, h, w) | 0x50000);
  // DDR destination with a W stride of 2 (every other element).
  Ddr dst{kDdrBase + 0x20000, 4, 0, H * W * 2, W * 2, 2};
  auto cmd = tensorCmd(0, isa::GdmaFormat::Int32);
  setSrc(cmd, kLmemBase + src.addr);
  setDst(cmd, dst.addr);
  setSrcShape(cmd, N, C, H, W, src.ns, src.cs, src.hs, src.ws);
  setDstShape(cmd, N, C, H, W, dst.ns, dst.cs, dst.hs, dst.ws);
  // Source channels 0, 1 sit in lanes 62, 63; channel 2 in lane 0 (slot 1)
  // which is masked: its elements are not stored.
  cmd.localmem_mask_l32 = 0xFFFFFFFE;
  cmd.localmem_mask_h32 = kAllLanesMask;
  runGdma(cmd, m);
  for (uint32_t c = 0; c < C; ++c)
    for (uint32_t h = 0; h < H; ++h)
      for (uint32_t w = 0; w < W; ++w) {
        uint64_t want = c == 2 ? 0 : (tag(0, c, h, w) | 0x50000);
        EXPECT_EQ(getDdr(m, dst.at(0, c, h, w), 4), want) << c << h << w;
        EXPECT_EQ(getDdr(m, dst.at(0, c, h, w) + 4, 4), 0u); // gap untouched
      }
}

TEST(FuncGdma, TensorLocalToDdrPlainCopyRowsAndPlanes) {
  // A plain copy (same shape, unit W strides) from local memory to DDR goes
  // row by row straight into DDR: with a DDR H stride wider than W each row
  // is its own run and the gaps stay as they were; with compact DDR strides
  // a whole (n, c) plane is one run. Lane 12 is masked: its channels are
  // not stored.
  for (bool gaps : {true, false}) {
    SCOPED_TRACE(gaps ? "rows with gaps" : "compact planes");
    MachineState m(isa::ChipParams::bm1684x());
    const uint32_t N = 2, C = 70, H = 3, W = 5;
    Ref src = euRef(laddr(10, 0x400), Prec::Fp16, N, C, H, W);
    for (uint32_t n = 0; n < N; ++n)
      for (uint32_t c = 0; c < C; ++c)
        for (uint32_t h = 0; h < H; ++h)
          for (uint32_t w = 0; w < W; ++w)
            refSetBits(m, src, n, c, h, w, tag(n, c, h, w));
    const int64_t hs = gaps ? W + 3 : W;
    Ddr dst{kDdrBase + 0x30000, 2, C * H * hs, H * hs, hs, 1};
    // Marker in every DDR element of the destination's span, gaps included.
    const uint64_t span = uint64_t(N) * dst.ns;
    for (uint64_t i = 0; i < span; ++i)
      putDdr(m, dst.addr + i * 2, 2, 0xBEEF);
    auto cmd = tensorCmd(0, isa::GdmaFormat::Fp16);
    setSrc(cmd, kLmemBase + src.addr);
    setDst(cmd, dst.addr);
    setSrcShape(cmd, N, C, H, W, src.ns, src.cs, src.hs, src.ws);
    setDstShape(cmd, N, C, H, W, dst.ns, dst.cs, dst.hs, dst.ws);
    cmd.localmem_mask_l32 = ~(uint64_t(1) << 12) & 0xFFFFFFFF;
    runGdma(cmd, m);
    for (uint32_t n = 0; n < N; ++n)
      for (uint32_t c = 0; c < C; ++c)
        for (uint32_t h = 0; h < H; ++h)
          for (int64_t w = 0; w < hs; ++w) {
            uint64_t a = dst.addr +
                         uint64_t(n * dst.ns + c * dst.cs + h * dst.hs + w) * 2;
            bool stored = w < W && (10 + c) % 64 != 12;
            ASSERT_EQ(getDdr(m, a, 2),
                      stored ? tag(n, c, h, uint32_t(w)) : 0xBEEFu)
                << n << " " << c << " " << h << " " << w;
          }
    // And back: DDR to another local tensor, the same rows or planes; lane
    // 12 keeps its marker.
    Ref back = euRef(laddr(10, 0x8000), Prec::Fp16, N, C, H, W);
    for (uint32_t n = 0; n < N; ++n)
      for (uint32_t c : {2u, 66u})
        for (uint32_t h = 0; h < H; ++h)
          for (uint32_t w = 0; w < W; ++w)
            refSetBits(m, back, n, c, h, w, 0xBEEF);
    auto load = tensorCmd(0, isa::GdmaFormat::Fp16);
    setSrc(load, dst.addr);
    setDst(load, kLmemBase + back.addr);
    setSrcShape(load, N, C, H, W, dst.ns, dst.cs, dst.hs, dst.ws);
    setDstShape(load, N, C, H, W, back.ns, back.cs, back.hs, back.ws);
    load.localmem_mask_l32 = ~(uint64_t(1) << 12) & 0xFFFFFFFF;
    runGdma(load, m);
    for (uint32_t n = 0; n < N; ++n)
      for (uint32_t c = 0; c < C; ++c)
        for (uint32_t h = 0; h < H; ++h)
          for (uint32_t w = 0; w < W; ++w)
            ASSERT_EQ(refGetBits(m, back, n, c, h, w),
                      (10 + c) % 64 == 12 ? 0xBEEFu : tag(n, c, h, w))
                << n << " " << c << " " << h << " " << w;
  }
}
TEST(FuncGdma, TensorTransposesAndReshape) {
  MachineState m(isa::ChipParams::bm1684x());
  const uint32_t N = 2, C = 3, H = 2, W = 4;
  Ddr src{kDdrBase, 1, C * H * W, H * W, W, 1};
  for (uint32_t n = 0; n < N; ++n)
    for (uint32_t c = 0; c < C; ++c)
      for (uint32_t h = 0; h < H; ++h)
        for (uint32_t w = 0; w < W; ++w)
          putDdr(m, src.at(n, c, h, w), 1, tag(n, c, h, w) & 0xFF);
  // N<->C transpose DDR -> DDR, destination (C, N, H, W) dense.
  {
    Ddr dst{kDdrBase + 0x10000, 1, N * H * W, H * W, W, 1};
    auto cmd = tensorCmd(1, isa::GdmaFormat::Int8);
    setSrc(cmd, src.addr);
    setDst(cmd, dst.addr);
    setSrcShape(cmd, N, C, H, W, src.ns, src.cs, src.hs, src.ws);
    setDstShape(cmd, C, N, H, W, dst.ns, dst.cs, dst.hs, dst.ws);
    runGdma(cmd, m);
    for (uint32_t n = 0; n < N; ++n)
      for (uint32_t c = 0; c < C; ++c)
        for (uint32_t h = 0; h < H; ++h)
          for (uint32_t w = 0; w < W; ++w)
            ASSERT_EQ(getDdr(m, dst.at(c, n, h, w), 1), tag(n, c, h, w) & 0xFF);
  }
  // Distribute (sp 4): DDR (n, c, h, w) -> local (n, w, h, c), then collect
  // (sp 2) back to DDR (n, c, h, w) again.
  Ref loc = euRef(laddr(7, 0), Prec::Int8, N, W, H, C);
  {
    auto cmd = tensorCmd(4, isa::GdmaFormat::Int8);
    setSrc(cmd, src.addr);
    setDst(cmd, kLmemBase + loc.addr);
    setSrcShape(cmd, N, C, H, W, src.ns, src.cs, src.hs, src.ws);
    setDstShape(cmd, N, W, H, C, loc.ns, loc.cs, loc.hs, loc.ws);
    runGdma(cmd, m);
    for (uint32_t n = 0; n < N; ++n)
      for (uint32_t c = 0; c < C; ++c)
        for (uint32_t h = 0; h < H; ++h)
          for (uint32_t w = 0; w < W; ++w)
            ASSERT_EQ(refGetBits(m, loc, n, w, h, c), tag(n, c, h, w) & 0xFF);
  }
  {
    Ddr back{kDdrBase + 0x30000, 1, C * H * W, H * W, W, 1};
    auto cmd = tensorCmd(2, isa::GdmaFormat::Int8);
    setSrc(cmd, kLmemBase + loc.addr);
    setDst(cmd, back.addr);
    setSrcShape(cmd, N, W, H, C, loc.ns, loc.cs, loc.hs, loc.ws);
    cmd.nchw_copy = 1; // destination shape from the source: (n, c, h, w)
    cmd.dst_nstride = back.ns;
    cmd.dst_cstride = back.cs;
    cmd.dst_hstride = back.hs;
    runGdma(cmd, m);
    for (uint32_t n = 0; n < N; ++n)
      for (uint32_t c = 0; c < C; ++c)
        for (uint32_t h = 0; h < H; ++h)
          for (uint32_t w = 0; w < W; ++w)
            ASSERT_EQ(getDdr(m, back.at(n, c, h, w), 1),
                      tag(n, c, h, w) & 0xFF);
  }
  // Reshape: (2, 3, 2, 4) -> (1, 1, 6, 8) dense, same element order.
  {
    auto cmd = tensorCmd(0, isa::GdmaFormat::Int8);
    setSrc(cmd, src.addr);
    setDst(cmd, kDdrBase + 0x40000);
    setSrcShape(cmd, N, C, H, W, src.ns, src.cs, src.hs, src.ws);
    setDstShape(cmd, 1, 1, 6, 8, 48, 48, 8, 1);
    runGdma(cmd, m);
    for (uint32_t i = 0; i < N * C * H * W; ++i)
      ASSERT_EQ(getDdr(m, kDdrBase + 0x40000 + i, 1),
                getDdr(m, src.addr + i, 1));
  }
}

TEST(FuncGdma, BroadcastIgnoresMaskAndFourBankCopy) {
  MachineState m(isa::ChipParams::bm1684x());
  const uint32_t H = 2, W = 3, C = 5;
  Ddr src{kDdrBase, 2, H * W, H * W, W, 1};
  for (uint32_t h = 0; h < H; ++h)
    for (uint32_t w = 0; w < W; ++w)
      putDdr(m, src.at(0, 0, h, w), 2, tag(0, 0, h, w));
  Ref dst = euRef(laddr(60, 0x100), Prec::Int16, 1, C, H, W);
  auto cmd = tensorCmd(3, isa::GdmaFormat::Int16);
  setSrc(cmd, src.addr);
  setDst(cmd, kLmemBase + dst.addr);
  setSrcShape(cmd, 1, 1, H, W, src.ns, src.cs, src.hs, src.ws);
  setDstShape(cmd, 1, C, H, W, dst.ns, dst.cs, dst.hs, dst.ws);
  cmd.localmem_mask_h32 = 0; // would hide lanes 32..63; broadcast ignores it
  runGdma(cmd, m);
  for (uint32_t c = 0; c < C; ++c)
    for (uint32_t h = 0; h < H; ++h)
      for (uint32_t w = 0; w < W; ++w)
        ASSERT_EQ(refGetBits(m, dst, 0, c, h, w), tag(0, 0, h, w));

  // 4-bank copy: four copies spaced by the 16 KiB bank size.
  auto bank = tensorCmd(5, isa::GdmaFormat::Int16);
  setSrc(bank, src.addr);
  setDst(bank, kLmemBase + laddr(0, 0));
  setSrcShape(bank, 1, 1, H, W, src.ns, src.cs, src.hs, src.ws);
  setDstShape(bank, 1, 1, H, W, 8, 8, W, 1);
  runGdma(bank, m);
  for (unsigned k = 0; k < 4; ++k) {
    Ref copy{laddr(0, k * 16384), Prec::Int16, 1, 1, H, W, 8, 8, W, 1};
    for (uint32_t h = 0; h < H; ++h)
      for (uint32_t w = 0; w < W; ++w)
        ASSERT_EQ(refGetBits(m, copy, 0, 0, h, w), tag(0, 0, h, w)) << k;
  }
}

TEST(FuncGdma, FillConstantLocalAndDdr) {
  MachineState m(isa::ChipParams::bm1684x());
  Ref dst = euRef(laddr(1, 0x80), Prec::Fp32, 1, 3, 2, 2);
  auto cmd = tensorCmd(0, isa::GdmaFormat::Fp32);
  cmd.fill_constant_en = 1;
  cmd.constant_value = isa::floatToBits(-1.5f);
  setSrc(cmd, 0); // ignored
  setDst(cmd, kLmemBase + dst.addr);
  setDstShape(cmd, 1, 3, 2, 2, dst.ns, dst.cs, dst.hs, dst.ws);
  runGdma(cmd, m);
  for (uint32_t c = 0; c < 3; ++c)
    for (uint32_t i = 0; i < 4; ++i)
      EXPECT_EQ(refGetFloat(m, dst, 0, c, i / 2, i % 2), -1.5f);
  cmd.src_data_format = uint64_t(isa::GdmaFormat::Int8);
  cmd.constant_value = 0x7F;
  setDst(cmd, kDdrBase + 0x100);
  setDstShape(cmd, 1, 1, 2, 3, 6, 6, 4, 1); // rows of 3 at a pitch of 4
  runGdma(cmd, m);
  for (uint32_t h = 0; h < 2; ++h)
    for (uint32_t w = 0; w < 4; ++w)
      EXPECT_EQ(getDdr(m, kDdrBase + 0x100 + h * 4 + w, 1), w < 3 ? 0x7Fu : 0u);
}

TEST(FuncGdma, GeneralCopyFillAndLaneBroadcast) {
  MachineState m(isa::ChipParams::bm1684x());
  for (unsigned i = 0; i < 10; ++i)
    putDdr(m, kDdrBase + 2 * i, 2, 1000 + i);
  isa::cmd::SDmaGeneral g;
  g.cmd_short = 1;
  g.cmd_type = uint64_t(isa::GdmaType::General);
  g.src_data_format = uint64_t(isa::GdmaFormat::Int16);
  g.src_cstride = 10; // move length
  g.localmem_mask_l32 = g.localmem_mask_h32 = kAllLanesMask;
  setSrc(g, kDdrBase);
  setDst(g, kDdrBase + 0x1000);
  runGdma(g, m);
  for (unsigned i = 0; i < 10; ++i)
    EXPECT_EQ(getDdr(m, kDdrBase + 0x1000 + 2 * i, 2), 1000u + i);
  // Lane broadcast into lanes 3..6 at offset 0x200.
  g.cmd_special_function = 1;
  g.dst_csize = 4;
  setDst(g, kLmemBase + laddr(3, 0x200));
  runGdma(g, m);
  for (unsigned lane = 3; lane < 7; ++lane)
    for (unsigned i = 0; i < 10; ++i) {
      uint16_t v;
      std::memcpy(&v, m.lmem.at(lane, 0x200 + 2 * i, 2), 2);
      EXPECT_EQ(v, 1000u + i);
    }
  // Fill: the source is ignored.
  g.cmd_special_function = 0;
  g.fill_constant_en = 1;
  g.constant_value = 0xABCD;
  setDst(g, kDdrBase + 0x2000);
  runGdma(g, m);
  for (unsigned i = 0; i < 10; ++i)
    EXPECT_EQ(getDdr(m, kDdrBase + 0x2000 + 2 * i, 2), 0xABCDu);
}

TEST(FuncGdma, MatrixBothDirectionsAndTranspose) {
  MachineState m(isa::ChipParams::bm1684x());
  const uint32_t R = 3, K = 10, Wb = 4; // 3 x 10 matrix, blocks of 4 columns
  const uint64_t ddr = kDdrBase + 0x5000, pitch = 12;
  for (uint32_t r = 0; r < R; ++r)
    for (uint32_t k = 0; k < K; ++k)
      putDdr(m, ddr + (r * pitch + k) * 4, 4, r * 100 + k);
  // S2L with the short form: local matrix(4): rows -> N, blocks -> C.
  uint32_t local = laddr(2, 0x1000);
  // 3 column blocks land in lanes 2..4 (one slot each); rows step by 4.
  const int64_t lcs = 4;
  isa::cmd::SDmaMatrix s;
  s.cmd_short = 1;
  s.cmd_type = uint64_t(isa::GdmaType::Matrix);
  s.src_data_format = uint64_t(isa::GdmaFormat::Int32);
  s.stride_enable = 1;
  s.src_hstride = pitch; // DDR row stride
  s.dst_nstride = 4;     // local N stride (one slot holds one row block)
  s.dst_cstride = lcs;
  s.src_hsize = R;
  s.src_wsize = K;
  s.dst_nsize = R;
  s.dst_csize = 3;
  s.dst_wsize = Wb;
  s.localmem_mask_l32 = s.localmem_mask_h32 = kAllLanesMask;
  setSrc(s, ddr);
  setDst(s, kLmemBase + local);
  runGdma(s, m);
  for (uint32_t r = 0; r < R; ++r)
    for (uint32_t k = 0; k < K; ++k) {
      Ref t{local, Prec::Int32, R, 3, 1, Wb, 4, lcs, 0, 1};
      ASSERT_EQ(refGetBits(m, t, r, k / Wb, 0, k % Wb), r * 100 + k);
    }
  // L2S with the long layout and transpose: the local matrix (3 x 10) is
  // read as the transpose of a 10 x 3 DDR matrix... here: DDR receives the
  // 10 x 3 transpose of the local 3 x 10 matrix.
  isa::cmd::DmaTensor l;
  l.cmd_type = uint64_t(isa::GdmaType::Matrix);
  l.cmd_special_function = 1;
  l.src_data_format = uint64_t(isa::GdmaFormat::Int32);
  l.stride_enable = 1;
  l.src_nstride = 4;
  l.src_cstride = lcs;
  l.src_nsize = R;
  l.src_csize = 3;
  l.src_wsize = Wb;
  l.dst_hsize = K; // DDR matrix K x R
  l.dst_wsize = R;
  l.dst_hstride = 5;
  l.localmem_mask_l32 = l.localmem_mask_h32 = kAllLanesMask;
  setSrc(l, kLmemBase + local);
  setDst(l, kDdrBase + 0x9000);
  runGdma(l, m);
  for (uint32_t k = 0; k < K; ++k)
    for (uint32_t r = 0; r < R; ++r)
      ASSERT_EQ(getDdr(m, kDdrBase + 0x9000 + (k * 5 + r) * 4, 4), r * 100 + k);
}

TEST(FuncGdma, CwTranspose) {
  MachineState m(isa::ChipParams::bm1684x());
  const uint32_t N = 1, C = 3, H = 2, W = 5;
  Ref src = euRef(laddr(0, 0), Prec::Bf16, N, C, H, W);
  for (uint32_t c = 0; c < C; ++c)
    for (uint32_t h = 0; h < H; ++h)
      for (uint32_t w = 0; w < W; ++w)
        refSetBits(m, src, 0, c, h, w, tag(0, c, h, w));
  Ref dst = euRef(laddr(9, 0x800), Prec::Bf16, N, W, H, C);
  isa::cmd::DmaTensor cmd = tensorCmd(0, isa::GdmaFormat::Bf16);
  cmd.cmd_type = uint64_t(isa::GdmaType::CwTranspose);
  setSrc(cmd, kLmemBase + src.addr);
  setDst(cmd, kLmemBase + dst.addr);
  setSrcShape(cmd, N, C, H, W, src.ns, src.cs, src.hs, src.ws);
  setDstShape(cmd, N, W, H, C, dst.ns, dst.cs, dst.hs, dst.ws);
  runGdma(cmd, m);
  for (uint32_t c = 0; c < C; ++c)
    for (uint32_t h = 0; h < H; ++h)
      for (uint32_t w = 0; w < W; ++w)
        ASSERT_EQ(refGetBits(m, dst, 0, w, h, c), tag(0, c, h, w));
}

TEST(FuncGdma, GatherAndScatterRows) {
  MachineState m(isa::ChipParams::bm1684x());
  const uint32_t C = 2, H = 4, W = 3, outH = 5;
  Ddr src{kDdrBase, 2, 0, H * W, W, 1};
  for (uint32_t c = 0; c < C; ++c)
    for (uint32_t h = 0; h < H; ++h)
      for (uint32_t w = 0; w < W; ++w)
        putDdr(m, src.at(0, c, h, w), 2, tag(0, c, h, w));
  // One index column shared by both channels: rows 3, 0, 9 (invalid), 1, 3.
  const uint32_t idx[outH] = {3, 0, 9, 1, 3};
  for (uint32_t i = 0; i < outH; ++i)
    putDdr(m, kDdrBase + 0x1000 + 4 * i, 4, idx[i]);
  isa::cmd::DmaGather g;
  g.cmd_type = uint64_t(isa::GdmaType::Gather);
  g.src_data_format = uint64_t(isa::GdmaFormat::Int16);
  g.constant_value = 0x7777;
  g.src_csize = C;
  g.src_hsize = H;
  g.src_wsize = W;
  g.index_csize = 1;
  g.dst_hsize = outH;
  g.localmem_mask_l32 = g.localmem_mask_h32 = kAllLanesMask;
  setSrc(g, src.addr);
  setDst(g, kDdrBase + 0x2000);
  g.index_start_addr_l32 = 0x1000;
  g.index_start_addr_h8 = 1;
  runGdma(g, m); // stride_enable = 0: dense tensors
  for (uint32_t c = 0; c < C; ++c)
    for (uint32_t h = 0; h < outH; ++h)
      for (uint32_t w = 0; w < W; ++w) {
        uint64_t want = idx[h] < H ? tag(0, c, idx[h], w) : 0x7777;
        ASSERT_EQ(
            getDdr(m, kDdrBase + 0x2000 + ((c * outH + h) * W + w) * 2, 2),
            want);
      }
  // Scatter rows 0..3 of the source to rows idx2[h] of a 6-row table.
  const uint32_t idx2[H] = {5, 1, 7, 0};
  for (uint32_t i = 0; i < H; ++i)
    putDdr(m, kDdrBase + 0x3000 + 4 * i, 4, idx2[i]);
  isa::cmd::DmaGather s = g;
  s.cmd_type = uint64_t(isa::GdmaType::Scatter);
  s.dst_csize = C;
  s.dst_hsize = 6;
  s.index_start_addr_l32 = 0x3000;
  setDst(s, kDdrBase + 0x4000);
  runGdma(s, m);
  for (uint32_t c = 0; c < C; ++c)
    for (uint32_t h = 0; h < H; ++h) {
      if (idx2[h] >= 6)
        continue;
      for (uint32_t w = 0; w < W; ++w)
        ASSERT_EQ(
            getDdr(m, kDdrBase + 0x4000 + ((c * 6 + idx2[h]) * W + w) * 2, 2),
            tag(0, c, h, w));
    }
  EXPECT_EQ(getDdr(m, kDdrBase + 0x4000 + ((0 * 6 + 2) * W) * 2, 2), 0u);
}

TEST(FuncGdma, MaskedSelectAndNonzero) {
  MachineState m(isa::ChipParams::bm1684x());
  const uint32_t C = 2, H = 1, W = 6;
  // stride_enable = 0: local operands are compact (bm1684x semantics.md).
  Ref srcC = compactRef(laddr(0, 0), Prec::Int8, 1, C, H, W);
  Ref maskC = compactRef(laddr(0, 0x1000), Prec::Int8, 1, C, H, W);
  const int8_t vals[C][W] = {{1, 0, 3, 0, 5, 6}, {0, 8, 0, 0, 11, 0}};
  const int8_t mk[C][W] = {{1, 1, 0, 0, 1, 0}, {0, 0, 1, 0, 1, 1}};
  for (uint32_t c = 0; c < C; ++c)
    for (uint32_t w = 0; w < W; ++w) {
      refSetBits(m, srcC, 0, c, 0, w, uint8_t(vals[c][w]));
      refSetBits(m, maskC, 0, c, 0, w, uint8_t(mk[c][w]));
    }
  isa::cmd::SDmaMaskedSelect ms;
  ms.cmd_short = 1;
  ms.cmd_type = uint64_t(isa::GdmaType::MaskedSelect);
  ms.src_data_format = uint64_t(isa::GdmaFormat::Int8);
  ms.mask_data_format = uint64_t(isa::GdmaFormat::Int8);
  ms.src_nsize = 1;
  ms.src_csize = C;
  ms.src_hsize = H;
  ms.src_wsize = W;
  setSrc(ms, kLmemBase + srcC.addr);
  setDst(ms, kDdrBase);
  ms.mask_start_addr_l32 = kLmemBase + maskC.addr;
  runGdma(ms, m);
  const uint8_t want[] = {1, 0, 5, 0, 11, 0};
  for (unsigned i = 0; i < sizeof(want); ++i)
    EXPECT_EQ(getDdr(m, kDdrBase + i, 1), want[i]) << i;

  isa::cmd::SDmaNonzero nz;
  nz.cmd_short = 1;
  nz.cmd_type = uint64_t(isa::GdmaType::Nonzero);
  nz.src_data_format = uint64_t(isa::GdmaFormat::Int8);
  nz.index_data_format = uint64_t(isa::GdmaFormat::Int32);
  nz.dst_nstride = 100; // base_i
  nz.src_nsize = 1;
  nz.src_csize = C;
  nz.src_hsize = H;
  nz.src_wsize = W;
  setSrc(nz, kLmemBase + srcC.addr);
  setDst(nz, kDdrBase + 0x100);
  runGdma(nz, m);
  // Flat (n, c, h, w) indices of the non-zero values, plus 100.
  const uint32_t wantIdx[] = {100, 102, 104, 105, 107, 110};
  for (unsigned i = 0; i < 6; ++i)
    EXPECT_EQ(getDdr(m, kDdrBase + 0x100 + 4 * i, 4), wantIdx[i]) << i;
}

TEST(FuncGdma, StaticMemoryAndL2AreFlat) {
  MachineState m(isa::ChipParams::bm1684x());
  const uint64_t l2 = 0x10000000, smem = 0x09000000;
  for (unsigned i = 0; i < 6; ++i)
    putDdr(m, kDdrBase + 4 * i, 4, 0x1000 + i);
  // DDR (1, 2, 1, 3) dense -> L2 with a channel pitch of 4 elements.
  auto t = tensorCmd(0, isa::GdmaFormat::Int32);
  setSrc(t, kDdrBase);
  setDst(t, l2 + 0x40);
  setSrcShape(t, 1, 2, 1, 3, 6, 3, 3, 1);
  setDstShape(t, 1, 2, 1, 3, 8, 4, 4, 1);
  runGdma(t, m);
  for (unsigned c = 0; c < 2; ++c)
    for (unsigned w = 0; w < 3; ++w) {
      uint32_t v;
      std::memcpy(&v, m.l2.at(l2 + 0x40 + (c * 4 + w) * 4, 4), 4);
      EXPECT_EQ(v, 0x1000u + c * 3 + w);
    }
  // L2 -> SMEM, 1-D general copy of 8 elements (including the gap).
  isa::cmd::SDmaGeneral g;
  g.cmd_short = 1;
  g.cmd_type = uint64_t(isa::GdmaType::General);
  g.src_data_format = uint64_t(isa::GdmaFormat::Int32);
  g.src_cstride = 8;
  setSrc(g, l2 + 0x40);
  setDst(g, smem + 0x100);
  runGdma(g, m);
  EXPECT_EQ(
      std::memcmp(m.smem.at(smem + 0x100, 32), m.l2.at(l2 + 0x40, 32), 32), 0);
  // A general copy running past the end of static memory.
  setDst(g, smem + 16 * 1024 - 16);
  EXPECT_THROW(runGdma(g, m), MemoryError);
}

TEST(FuncGdma, OutOfRangeAddressesThrowMemoryError) {
  MachineState m(isa::ChipParams::bm1684x());
  auto cmd = tensorCmd(0, isa::GdmaFormat::Int8);
  setSrcShape(cmd, 1, 1, 1, 64, 64, 64, 64, 1);
  setDstShape(cmd, 1, 1, 1, 64, 64, 64, 64, 1);
  // Local destination running past the end of its lane.
  setSrc(cmd, kDdrBase);
  setDst(cmd, kLmemBase + laddr(0, uint32_t(kLaneBytes - 32)));
  EXPECT_THROW(runGdma(cmd, m), MemoryError);
  // DDR source beyond the 4 GiB of global memory.
  setSrc(cmd, kDdrBase + 0x100000000 - 16);
  setDst(cmd, kLmemBase);
  EXPECT_THROW(runGdma(cmd, m), MemoryError);
  // An address in no region at all.
  setSrc(cmd, 0x20000000);
  EXPECT_THROW(runGdma(cmd, m), MemoryError);
  // A load large enough for the kernel threads whose DDR source runs past
  // the end, or whose destination runs past the end of a lane.
  setSrcShape(cmd, 1, 64, 1, 4096, 64 * 4096, 4096, 4096, 1);
  setDstShape(cmd, 1, 64, 1, 4096, 4096, 4096, 4096, 1);
  setSrc(cmd, kDdrBase + 0x100000000 - 64 * 4096 + 1);
  setDst(cmd, kLmemBase);
  EXPECT_THROW(runGdma(cmd, m), MemoryError);
  setSrc(cmd, kDdrBase);
  setDst(cmd, kLmemBase + laddr(0, uint32_t(kLaneBytes - 4000)));
  EXPECT_THROW(runGdma(cmd, m), MemoryError);
}

TEST(FuncGdma, WorkCountsBytesAndRuns) {
  isa::ChipParams chip = isa::ChipParams::bm1684x();
  auto cmd = tensorCmd(0, isa::GdmaFormat::Fp16);
  setSrc(cmd, kDdrBase);
  setDst(cmd, kLmemBase);
  // DDR rows of 8 elements at a pitch of 16: 2*3*4 = 24 runs.
  setSrcShape(cmd, 2, 3, 4, 8, 3 * 4 * 16, 4 * 16, 16, 1);
  setDstShape(cmd, 2, 3, 4, 8, 64, 32, 8, 1);
  GdmaWork w = gdmaWork(decodeGdma(isa::encode(cmd), chip), chip);
  EXPECT_EQ(w.bytes, 2u * 3 * 4 * 8 * 2);
  EXPECT_EQ(w.ddrReadBytes, w.bytes);
  EXPECT_EQ(w.localWriteBytes, w.bytes);
  EXPECT_EQ(w.ddrWriteBytes, 0u);
  EXPECT_EQ(w.contiguousRuns, 24u);
  EXPECT_EQ(w.src, isa::MemRegion::Global);
  EXPECT_EQ(w.dst, isa::MemRegion::Local);
  // Dense source: everything merges into one run.
  setSrcShape(cmd, 2, 3, 4, 8, 96, 32, 8, 1);
  w = gdmaWork(decodeGdma(isa::encode(cmd), chip), chip);
  EXPECT_EQ(w.contiguousRuns, 1u);
}

} // namespace
