//===- FuncMatmulTest.cpp - MM, MM2 and PorD kernels ----------------------===//
//
// References index the documented layouts directly: matrix(w) stores an
// R x K matrix as (R, ceil(K/w), 1, w) EU-aligned (row -> N, column block ->
// C, column in block -> W); matrix2 stores it as (1, R, 1, K) (row -> C).
//
//===----------------------------------------------------------------------===//

#include "FuncTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

using namespace tpu;
using namespace tpu::sim;
using namespace tpu::sim::test;

namespace {

/// Element (r, k) of a matrix(w) operand at `addr` with `rows` rows.
Ref matW(uint32_t addr, Prec p, uint32_t rows, uint32_t cols, uint32_t w) {
  return euRef(addr, p, rows, (cols + w - 1) / w, 1, w);
}
uint64_t getW(MachineState &m, const Ref &r, uint32_t w, uint32_t i,
              uint32_t k) {
  return refGetBits(m, r, i, k / w, 0, k % w);
}
void setW(MachineState &m, const Ref &r, uint32_t w, uint32_t i, uint32_t k,
          uint64_t v) {
  refSetBits(m, r, i, k / w, 0, k % w, v);
}

isa::cmd::SMM mmCmd(unsigned eu, Prec in, Prec res) {
  isa::cmd::SMM c;
  c.cmd_short = 1;
  c.tsk_typ = 2;
  c.tsk_eu_typ = eu;
  c.opd0_prec = uint64_t(in);
  c.res0_prec = uint64_t(res);
  c.opd0_sign = c.opd1_sign = 1;
  return c;
}

/// An int8 x int8 -> int32 MM (mm.normal, no shift) on random operands: A
/// (M x K, K = lw * (lc - 1) + lastW) signed in matrix(lw) at lane 0, B (K
/// x N, N = rc * rw) in matrix(rw) at `bAddr`, signed or unsigned (the
/// opd1 sign); every sum checked against the exact one.
struct MmInt8 {
  uint32_t M, K, N, rw;
  std::vector<int64_t> a, b;
  isa::cmd::SMM cmd;
  int64_t sum(uint32_t i, uint32_t j) const {
    int64_t acc = 0;
    for (uint32_t k = 0; k < K; ++k)
      acc += a[i * K + k] * b[k * N + j];
    return acc;
  }
};
MmInt8 runMmInt8(MachineState &m, std::mt19937 &rng, uint32_t M, uint32_t lw,
                 uint32_t lc, uint32_t lastW, uint32_t rc, uint32_t rw,
                 uint32_t bAddr, bool bSigned) {
  MmInt8 r{M, lw * (lc - 1) + lastW, rc * rw, rw, {}, {}, {}};
  const uint32_t K = r.K, N = r.N;
  Ref a = matW(laddr(0, 0), Prec::Int8, M, K, lw);
  Ref b = matW(bAddr, Prec::Int8, K, N, rw);
  Ref y = matW(laddr(0, 0x8000), Prec::Int32, M, N, rw);
  r.a.resize(M * K);
  r.b.resize(K * N);
  for (uint32_t i = 0; i < M; ++i)
    for (uint32_t k = 0; k < K; ++k)
      setW(m, a, lw, i, k, uint8_t(r.a[i * K + k] = randomInt(rng, -128, 127)));
  for (uint32_t k = 0; k < K; ++k)
    for (uint32_t j = 0; j < N; ++j)
      setW(m, b, rw, k, j,
           uint8_t(r.b[k * N + j] = bSigned ? randomInt(rng, -128, 127)
                                            : randomInt(rng, 0, 255)));
  auto &c = r.cmd = mmCmd(1, Prec::Int8, Prec::Int32);
  c.opd1_sign = bSigned;
  c.opd0_n = M;
  c.opd0_c = lc;
  c.opd0_w = lw;
  c.opd1_w = lastW;
  c.res0_c = rc;
  c.res0_w = rw;
  c.opd0_addr = a.addr;
  c.opd1_addr = b.addr;
  c.res0_addr = y.addr;
  c.opd2_const = 1; // no shift
  runTiu(c, m);
  for (uint32_t i = 0; i < M; ++i)
    for (uint32_t j = 0; j < N; ++j)
      EXPECT_EQ(sext(getW(m, y, rw, i, j), 4), r.sum(i, j))
          << (bSigned ? "signed " : "unsigned ") << i << " " << j;
  return r;
}

TEST(FuncMatmul, MMInt8Exact) {
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(31);
  MmInt8 r = runMmInt8(m, rng, 5, 32, 3, 6, 3, 16, laddr(0, 0x2000), true);
  // wrq: (acc + bias16) >> 4, half to even, saturated to int8, relu (eu 3).
  Ref y8 = matW(laddr(0, 0xC000), Prec::Int8, r.M, r.N, r.rw);
  isa::cmd::SMM c = r.cmd;
  c.tsk_eu_typ = 3;
  c.res0_prec = uint64_t(Prec::Int8);
  c.res0_addr = y8.addr;
  c.opd2_addr = 37;
  c.opd2_sign = 1;
  c.opd3_addr = 4;
  runTiu(c, m);
  for (uint32_t i = 0; i < r.M; ++i)
    for (uint32_t j = 0; j < r.N; ++j) {
      int64_t v =
          isa::rightShiftRound(r.sum(i, j) + 37, 4, isa::RoundMode::HalfToEven);
      v = std::clamp<int64_t>(std::max<int64_t>(v, 0), -128, 127);
      ASSERT_EQ(sext(getW(m, y8, r.rw, i, j), 1), v) << i << " " << j;
    }
}

// The right matrix read in place (8-bit rows) and its column blocks on the
// kernel threads: unsigned and signed bytes, blocks from lane 60 wrapping
// past the last lane into the next slot, more blocks than threads.
TEST(FuncMatmul, MMInt8RightBlocksAcrossLanes) {
  for (bool bSigned : {false, true}) {
    MachineState m(isa::ChipParams::bm1684x());
    std::mt19937 rng(bSigned ? 77 : 78);
    runMmInt8(m, rng, 3, 32, 3, 6, 9, 5, laddr(60, 0x2000), bSigned);
  }
}

TEST(FuncMatmul, MMFp32LeftTransposedBiasResAdd) {
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(32);
  // Stored left matrix 6 x 10 in matrix(4) (opd0_c = 3, last block 2);
  // used transposed: M = 10, K = 6.
  const uint32_t Rs = 6, lw = 4, lc = 3, lastW = 2, Ks = lw * (lc - 1) + lastW;
  const uint32_t M = Ks, K = Rs, rc = 2, rw = 5, N = rc * rw;
  Ref a = matW(laddr(3, 0), Prec::Fp32, Rs, Ks, lw);
  Ref b = matW(laddr(3, 0x1000), Prec::Fp32, K, N, rw);
  Ref bias = matW(laddr(3, 0x2000), Prec::Fp32, 1, N, rw);
  Ref y = matW(laddr(3, 0x3000), Prec::Fp32, M, N, rw);
  std::vector<float> s(Rs * Ks), bv(K * N), bs(N), old(M * N);
  for (uint32_t r = 0; r < Rs; ++r)
    for (uint32_t k = 0; k < Ks; ++k) {
      s[r * Ks + k] = randomFloat(rng, Prec::Fp32);
      setW(m, a, lw, r, k, isa::floatToBits(s[r * Ks + k]));
    }
  for (uint32_t k = 0; k < K; ++k)
    for (uint32_t j = 0; j < N; ++j) {
      bv[k * N + j] = randomFloat(rng, Prec::Fp32);
      setW(m, b, rw, k, j, isa::floatToBits(bv[k * N + j]));
    }
  for (uint32_t j = 0; j < N; ++j) {
    bs[j] = randomFloat(rng, Prec::Fp32);
    setW(m, bias, rw, 0, j, isa::floatToBits(bs[j]));
  }
  for (uint32_t i = 0; i < M; ++i)
    for (uint32_t j = 0; j < N; ++j) {
      old[i * N + j] = randomFloat(rng, Prec::Fp32);
      setW(m, y, rw, i, j, isa::floatToBits(old[i * N + j]));
    }
  auto c = mmCmd(1, Prec::Fp32, Prec::Fp32);
  c.left_tran = 1;
  c.res_add = 1;
  c.opd0_n = Rs;
  c.opd0_c = lc;
  c.opd0_w = lw;
  c.opd1_w = lastW;
  c.res0_c = rc;
  c.res0_w = rw;
  c.opd0_addr = a.addr;
  c.opd1_addr = b.addr;
  c.opd2_addr = bias.addr;
  c.res0_addr = y.addr;
  runTiu(c, m);
  for (uint32_t i = 0; i < M; ++i)
    for (uint32_t j = 0; j < N; ++j) {
      float acc = 0;
      for (uint32_t k = 0; k < K; ++k) {
        float p = s[k * Ks + i] * bv[k * N + j];
        acc = acc + p;
      }
      acc = acc + bs[j];
      acc = old[i * N + j] + acc;
      ASSERT_EQ(isa::bitsToFloat(uint32_t(getW(m, y, rw, i, j))), acc)
          << i << " " << j;
    }
}

isa::cmd::SMM2 mm2Cmd(unsigned eu, Prec in, Prec res) {
  isa::cmd::SMM2 c;
  c.cmd_short = 1;
  c.tsk_typ = 2;
  c.tsk_eu_typ = eu;
  c.opd0_prec = uint64_t(in);
  c.res0_prec = uint64_t(res);
  c.opd0_sign = c.opd1_sign = 1;
  return c;
}

TEST(FuncMatmul, MM2AllTransposesInt8WithZeroPoints) {
  std::mt19937 rng(33);
  const uint32_t M = 70, K = 9, N = 6;
  for (unsigned eu : {4u, 5u, 6u}) {
    MachineState m(isa::ChipParams::bm1684x());
    bool leftT = eu == 6, rightT = eu != 4;
    // Stored shapes (rows x cols), rows across lanes.
    uint32_t aR = leftT ? K : M, aC = leftT ? M : K;
    uint32_t bR = rightT ? N : K, bC = rightT ? K : N;
    Ref a = euRef(laddr(2, 0), Prec::Int8, 1, aR, 1, aC);
    Ref b = euRef(laddr(0, 0x1000), Prec::Int8, 1, bR, 1, bC);
    Ref y = euRef(laddr(5, 0x2000), Prec::Int32, 1, M, 1, N);
    std::vector<int64_t> av(aR * aC), bv(bR * bC);
    for (uint32_t r = 0; r < aR; ++r)
      for (uint32_t k = 0; k < aC; ++k)
        refSetBits(m, a, 0, r, 0, k,
                   uint8_t(av[r * aC + k] = randomInt(rng, -128, 127)));
    for (uint32_t r = 0; r < bR; ++r)
      for (uint32_t k = 0; k < bC; ++k)
        refSetBits(m, b, 0, r, 0, k,
                   uint8_t(bv[r * bC + k] = randomInt(rng, -128, 127)));
    // Zero points: NN/NT (1, 64, 1, N), every lane its own vector; a result
    // row in lane L reads the vector in lane L. TT: (1, M, 1, 1) compact.
    uint32_t zpAddr = laddr(0, 0x3000);
    auto zpOf = [&](uint32_t i, uint32_t j) -> int64_t {
      if (eu == 6)
        return int64_t(i % 7) - 3;
      unsigned lane = (5 + i) % 64;
      return int64_t((lane + j) % 5) - 2;
    };
    if (eu == 6) {
      Ref z{zpAddr, Prec::Int8, 1, M, 1, 1, 0, 1, 0, 1};
      for (uint32_t i = 0; i < M; ++i)
        refSetBits(m, z, 0, i, 0, 0, uint8_t(zpOf(i, 0)));
    } else {
      Ref z = euRef(zpAddr, Prec::Int8, 1, 64, 1, N);
      for (uint32_t lane = 0; lane < 64; ++lane)
        for (uint32_t j = 0; j < N; ++j)
          refSetBits(m, z, 0, lane, 0, j, uint8_t(int64_t((lane + j) % 5) - 2));
    }
    auto c = mm2Cmd(eu, Prec::Int8, Prec::Int32);
    c.res0_c = M;
    c.res0_w = N;
    c.opd1_c = rightT ? N : K;
    c.opd1_w = rightT ? K : N;
    c.opd0_addr = a.addr;
    c.opd1_addr = b.addr;
    c.opd2_addr = zpAddr;
    c.res0_addr = y.addr;
    runTiu(c, m);
    for (uint32_t i = 0; i < M; ++i)
      for (uint32_t j = 0; j < N; ++j) {
        int64_t acc = 0;
        for (uint32_t k = 0; k < K; ++k) {
          int64_t x = leftT ? av[k * aC + i] : av[i * aC + k];
          int64_t wv = rightT ? bv[j * bC + k] : bv[k * bC + j];
          acc += x * (wv - zpOf(i, j));
        }
        ASSERT_EQ(refGetInt(m, y, true, 0, i, 0, j), acc)
            << "eu " << eu << " " << i << " " << j;
      }
  }
}

TEST(FuncMatmul, MM2Bf16ResAdd) {
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(34);
  const uint32_t M = 3, K = 40, N = 4;
  Ref a = euRef(laddr(0, 0), Prec::Bf16, 1, M, 1, K);
  Ref b = euRef(laddr(0, 0x1000), Prec::Bf16, 1, K, 1, N);
  Ref y = euRef(laddr(0, 0x2000), Prec::Fp32, 1, M, 1, N);
  std::vector<float> av(M * K), bv(K * N), old(M * N);
  for (uint32_t i = 0; i < M; ++i)
    for (uint32_t k = 0; k < K; ++k)
      refSetFloat(m, a, 0, i, 0, k,
                  av[i * K + k] = randomFloat(rng, Prec::Bf16));
  for (uint32_t k = 0; k < K; ++k)
    for (uint32_t j = 0; j < N; ++j)
      refSetFloat(m, b, 0, k, 0, j,
                  bv[k * N + j] = randomFloat(rng, Prec::Bf16));
  for (uint32_t i = 0; i < M; ++i)
    for (uint32_t j = 0; j < N; ++j)
      refSetFloat(m, y, 0, i, 0, j,
                  old[i * N + j] = randomFloat(rng, Prec::Fp32));
  auto c = mm2Cmd(4, Prec::Bf16, Prec::Fp32);
  c.res_add = 1;
  c.res0_c = M;
  c.res0_w = N;
  c.opd1_c = K;
  c.opd1_w = N;
  c.opd0_addr = a.addr;
  c.opd1_addr = b.addr;
  c.res0_addr = y.addr;
  runTiu(c, m);
  for (uint32_t i = 0; i < M; ++i)
    for (uint32_t j = 0; j < N; ++j) {
      float acc = 0;
      for (uint32_t k = 0; k < K; ++k) {
        float p = av[i * K + k] * bv[k * N + j];
        acc = acc + p;
      }
      ASSERT_EQ(refGetFloat(m, y, 0, i, 0, j), old[i * N + j] + acc);
    }
}

TEST(FuncPorD, DepthwiseInt8ShiftRoundSaturateRelu) {
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(35);
  const uint32_t C = 66, IH = 6, IW = 7, KH = 3, KW = 3, S = 2, PAD = 1;
  const uint32_t OH = (IH + 2 * PAD - KH) / S + 1,
                 OW = (IW + 2 * PAD - KW) / S + 1;
  Ref in = euRef(laddr(0, 0), Prec::Int8, 1, C, IH, IW);
  Ref w = compactRef(laddr(0, 0x1000), Prec::Int8, 1, C, KH, KW);
  Ref bias{laddr(0, 0x2000), Prec::Int32, 1, C, 1, 1, 0, 1, 0, 0};
  Ref out = euRef(laddr(0, 0x3000), Prec::Int8, 1, C, OH, OW);
  std::vector<int64_t> x(C * IH * IW), k(C * KH * KW), b(C);
  for (uint32_t c = 0; c < C; ++c) {
    for (uint32_t i = 0; i < IH * IW; ++i)
      refSetBits(m, in, 0, c, i / IW, i % IW,
                 uint8_t(x[c * IH * IW + i] = randomInt(rng, -128, 127)));
    for (uint32_t i = 0; i < KH * KW; ++i)
      refSetBits(m, w, 0, c, i / KW, i % KW,
                 uint8_t(k[c * KH * KW + i] = randomInt(rng, -128, 127)));
    refSetBits(m, bias, 0, c, 0, 0,
               uint32_t(b[c] = randomInt(rng, -3000, 3000)));
  }
  const int64_t padV = -3;
  for (unsigned eu : {0u, 2u}) {
    auto p = pordCmd(eu, Prec::Int8, Prec::Int8, C, IH, IW, KH, KW, OH, OW);
    p.opd0_sign = p.opd1_sign = p.opd2_sign = 1;
    p.opd0_up_pad = p.opd0_dn_pad = p.opd0_lf_pad = p.opd0_rt_pad = PAD;
    p.res_op_x_str = p.res_op_y_str = S;
    p.opd0_addr = in.addr;
    p.opd1_addr = w.addr;
    p.opd2_addr = bias.addr;
    p.opd3_const = 1;
    p.opd3_addr = uint8_t(padV);
    p.res1_addr = 6;  // right shift 6
    p.opd2_n_str = 1; // half away from zero
    p.res0_addr = out.addr;
    runTiu(p, m);
    bool relu = eu == 2;
    for (uint32_t c = 0; c < C; ++c)
      for (uint32_t oy = 0; oy < OH; ++oy)
        for (uint32_t ox = 0; ox < OW; ++ox) {
          int64_t acc = 0;
          for (uint32_t ky = 0; ky < KH; ++ky)
            for (uint32_t kx = 0; kx < KW; ++kx) {
              int64_t y = int64_t(oy * S + ky) - PAD,
                      xx = int64_t(ox * S + kx) - PAD;
              int64_t v = (y < 0 || xx < 0 || y >= IH || xx >= IW)
                              ? padV
                              : x[c * IH * IW + y * IW + xx];
              acc += v * k[c * KH * KW + ky * KW + kx];
            }
          acc += b[c];
          int64_t v =
              isa::rightShiftRound(acc, 6, isa::RoundMode::HalfAwayFromZero);
          // depthwise+relu writes an unsigned int8 (isa/docs/bm1684x.md 4.5).
          int64_t want = relu ? std::clamp<int64_t>(v, 0, 255)
                              : std::clamp<int64_t>(v, -128, 127);
          ASSERT_EQ(refGetInt(m, out, !relu, 0, c, oy, ox), want)
              << "eu " << eu << " c " << c << " " << oy << " " << ox;
        }
  }
}

TEST(FuncPorD, MaxAndAvgPoolingFloat) {
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(36);
  const uint32_t C = 3, IH = 5, IW = 5, KH = 2, KW = 3;
  const uint32_t OH = IH + 1 - KH + 1, OW = IW + 2 - KW + 1; // pads b1, l1 r1
  for (Prec p : {Prec::Fp16, Prec::Fp32}) {
    Ref in = euRef(laddr(0, 0), p, 1, C, IH, IW);
    Ref out = euRef(laddr(0, 0x1000), p, 1, C, OH, OW);
    std::vector<float> x(C * IH * IW);
    for (uint32_t c = 0; c < C; ++c)
      for (uint32_t i = 0; i < IH * IW; ++i)
        refSetFloat(m, in, 0, c, i / IW, i % IW,
                    x[c * IH * IW + i] = randomFloat(rng, p, -4, 4));
    for (unsigned eu : {1u, 4u}) {
      auto cmd = pordCmd(eu, p, p, C, IH, IW, KH, KW, OH, OW);
      cmd.opd0_dn_pad = 1;
      cmd.opd0_lf_pad = cmd.opd0_rt_pad = 1;
      cmd.opd0_addr = in.addr;
      cmd.res0_addr = out.addr;
      cmd.opd3_const = 1;
      // Pad value: -inf for max pooling, 0 for average pooling.
      cmd.opd3_addr =
          eu == 4 ? fToBits(-std::numeric_limits<float>::infinity(), p) : 0;
      runTiu(cmd, m);
      float scale = 1.0f / float(KH * KW);
      for (uint32_t c = 0; c < C; ++c)
        for (uint32_t oy = 0; oy < OH; ++oy)
          for (uint32_t ox = 0; ox < OW; ++ox) {
            float acc =
                eu == 4 ? -std::numeric_limits<float>::infinity() : 0.0f;
            for (uint32_t ky = 0; ky < KH; ++ky)
              for (uint32_t kx = 0; kx < KW; ++kx) {
                int64_t y = oy + ky, xx = int64_t(ox + kx) - 1;
                float v =
                    (y >= IH || xx < 0 || xx >= IW)
                        ? (eu == 4 ? -std::numeric_limits<float>::infinity()
                                   : 0.0f)
                        : x[c * IH * IW + y * IW + xx];
                acc = eu == 4 ? std::max(acc, v) : acc + v;
              }
            if (eu == 1)
              acc = acc * scale;
            ASSERT_EQ(refGetBits(m, out, 0, c, oy, ox), fToBits(acc, p))
                << isa::precName(p) << " eu " << eu << " " << c << " " << oy
                << " " << ox;
          }
    }
  }
}

// Pooling with different strides and dilations per axis, padding with a
// value that wins some windows: int8 max pooling and the int8 sum pool
// (multiplier 3, shift 2), against the window read directly.
TEST(FuncPorD, Int8PoolingStridesAndDilationPerAxis) {
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(37);
  const uint32_t C = 70, IH = 11, IW = 13, KH = 3, KW = 2;
  const uint32_t SH = 2, SW = 3, DH = 2, DW = 3, PT = 1, PB = 0, PL = 2, PR = 1;
  const uint32_t OH = (IH + PT + PB - (DH * (KH - 1) + 1)) / SH + 1,
                 OW = (IW + PL + PR - (DW * (KW - 1) + 1)) / SW + 1;
  Ref in = euRef(laddr(0, 0), Prec::Int8, 1, C, IH, IW);
  std::vector<int64_t> x(C * IH * IW);
  for (uint32_t c = 0; c < C; ++c)
    for (uint32_t i = 0; i < IH * IW; ++i)
      refSetBits(m, in, 0, c, i / IW, i % IW,
                 uint8_t(x[c * IH * IW + i] = randomInt(rng, -128, 126)));
  const int64_t padV = 127; // above every input: wins where it is read
  for (unsigned eu : {4u, 1u}) {
    bool maxPool = eu == 4;
    Ref out = euRef(laddr(0, 0x2000), Prec::Int8, 1, C, OH, OW);
    auto p = pordCmd(eu, Prec::Int8, Prec::Int8, C, IH, IW, KH, KW, OH, OW);
    p.opd0_sign = 1;
    p.opd0_up_pad = PT;
    p.opd0_dn_pad = PB;
    p.opd0_lf_pad = PL;
    p.opd0_rt_pad = PR;
    p.res_op_y_str = SH;
    p.res_op_x_str = SW;
    p.opd1_y_ins0 = DH - 1;
    p.opd1_x_ins0 = DW - 1;
    p.opd0_addr = in.addr;
    p.opd3_const = 1;
    p.opd3_addr = uint8_t(padV);
    if (!maxPool) {
      p.opd1_const = 1;
      p.opd1_addr = 3; // multiplier
      p.res1_addr = 2; // right shift
    }
    p.res0_addr = out.addr;
    runTiu(p, m);
    for (uint32_t c = 0; c < C; ++c)
      for (uint32_t oy = 0; oy < OH; ++oy)
        for (uint32_t ox = 0; ox < OW; ++ox) {
          int64_t acc = maxPool ? std::numeric_limits<int64_t>::min() : 0;
          for (uint32_t ky = 0; ky < KH; ++ky)
            for (uint32_t kx = 0; kx < KW; ++kx) {
              int64_t y = int64_t(oy * SH + ky * DH) - PT,
                      xx = int64_t(ox * SW + kx * DW) - PL;
              int64_t v = (y < 0 || xx < 0 || y >= IH || xx >= IW)
                              ? padV
                              : x[c * IH * IW + y * IW + xx];
              acc = maxPool ? std::max(acc, v) : acc + v;
            }
          if (!maxPool)
            acc = std::clamp<int64_t>(
                isa::rightShiftRound(acc * 3, 2, isa::RoundMode::HalfToEven),
                -128, 127);
          ASSERT_EQ(refGetInt(m, out, true, 0, c, oy, ox), acc)
              << "eu " << eu << " c " << c << " " << oy << " " << ox;
        }
  }
}

TEST(FuncPorD, RoiResultMustBeOneRow) {
  // ROI results are one row of boxes (FuncExtTest covers the arithmetic).
  MachineState m(isa::ChipParams::bm1684x());
  auto cmd = pordCmd(6, Prec::Fp32, Prec::Fp32, 1, 4, 4, 2, 2, 3, 3);
  try {
    runTiu(cmd, m);
    FAIL() << "roi pooling with res0_h = 3 accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("res0_h must be 1"), std::string::npos)
        << e.what();
  }
}

} // namespace
