//===- SimdPathTest.cpp - Every SIMD path computes the same bits ----------===//
//
// The functional kernels exist in a portable, an AVX2 and an AVX-512 build
// (tpusim/Simd.h). Here: the forced path (TPUSIM_SIMD, set by the ctest
// variants that rerun the Func* kernel tests on each path) is the one in
// use; random convolutions of every shape family (unit and larger strides,
// dilation, padding, inserted zeros, odd channel counts, 1x1 and 7x7
// kernels, int8 signed / unsigned with kernel zero points, fp32 / fp16 /
// bf16 with bias, res_add) leave local memory byte-identical on
// every path this CPU has and with 1 or 3 worker threads, against the
// portable single-thread run (whose values the Func* tests check against
// independent references); and the inline fp16 / bf16 conversions equal
// isa/Numerics.h's on every fp16 pattern and on a dense sample of fp32
// patterns.
//
//===----------------------------------------------------------------------===//

#include "FuncTestUtil.h"
#include "SimdImpl.h"

#include "tpusim/Simd.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

using namespace tpu;
using namespace tpu::sim;
using namespace tpu::sim::test;

namespace {

/// Puts the process's path choice back after a test forced others.
class SimdPathGuard {
public:
  SimdPathGuard() : path_(simdPath()), threads_(kernelThreads()) {}
  ~SimdPathGuard() {
    setSimdPath(path_);
    setKernelThreads(threads_);
  }

private:
  SimdPath path_;
  unsigned threads_;
};

TEST(SimdPaths, ForcedPathIsUsed) {
  const char *env = std::getenv("TPUSIM_SIMD");
  std::vector<SimdPath> avail = availableSimdPaths();
  ASSERT_FALSE(avail.empty());
  EXPECT_EQ(avail.front(), SimdPath::Portable);
  if (env && *env && std::string(env) != "auto") {
    std::optional<SimdPath> p = simdPathFromName(env);
    ASSERT_TRUE(p) << env;
    EXPECT_EQ(simdPath(), *p);
  } else {
    EXPECT_EQ(simdPath(), avail.back());
  }
  EXPECT_FALSE(simdPathFromName("sse9"));
}

TEST(SimdPaths, UnavailablePathIsRefused) {
  SimdPathGuard guard;
  for (SimdPath p : {SimdPath::Avx2, SimdPath::Avx512})
    if (!simdPathAvailable(p))
      EXPECT_THROW(setSimdPath(p), Error);
}

struct RandomConv {
  ConvGeom g;
  Prec prec;
  bool inSigned, wSigned, hasBias;
};

/// The lanes the random convs touch (at most 20 output and 9 input
/// channels from lane 0).
constexpr unsigned kUsedLanes = 20;

/// Random bits in the used lanes for integer data; random finite floats of
/// the precision (zeros and subnormals included) for float data.
void fillLocal(MachineState &m, Prec p, std::mt19937 &rng) {
  // A pool of values to draw from (drawing each element afresh is slow).
  constexpr size_t kPool = 4096;
  std::vector<uint64_t> pool(kPool);
  for (size_t i = 0; i < kPool; ++i) {
    float v = i < 256   ? 0.0f
              : i < 384 ? (p == Prec::Fp16 ? isa::fp16ToFp32(uint16_t(i))
                                           : 1e-39f * float(i))
                        : randomFloat(rng, p, -3.0f, 3.0f);
    pool[i] = isa::isFloat(p) ? fToBits(v, p) : 0;
  }
  for (unsigned lane = 0; lane < kUsedLanes; ++lane) {
    uint8_t *base = m.lmem.at(lane, 0, kLaneBytes);
    if (!isa::isFloat(p)) {
      for (uint64_t i = 0; i < kLaneBytes; i += 4) {
        uint32_t v = uint32_t(rng());
        std::memcpy(base + i, &v, 4);
      }
      continue;
    }
    unsigned bytes = bytesOf(p);
    for (uint64_t i = 0; i < kLaneBytes; i += bytes)
      std::memcpy(base + i, &pool[rng() % kPool], bytes);
  }
}

isa::cmd::SConv convCmd(const RandomConv &k) {
  isa::cmd::SConv c;
  c.cmd_short = 1;
  c.tsk_typ = 0;
  c.tsk_eu_typ = 0;
  c.opd0_prec = uint64_t(k.prec);
  c.res0_prec = uint64_t(isa::isFloat(k.prec) ? k.prec : Prec::Int32);
  c.opd0_sign = k.inSigned;
  c.opd1_sign = k.wSigned;
  c.opd2_sign = 1;
  // Input at lane 0 offset 0, weights at 96 KiB, result at 160 KiB, zero
  // points / bias at 224 KiB, pad pairs at 240 KiB.
  setConvGeometry(c, k.g, laddr(0, 0), laddr(0, 0x18000),
                  laddr(0, 0x28000));
  c.opd2_addr = laddr(0, 0x38000);
  c.opd2_const = !k.hasBias;
  c.opd3_addr = laddr(0, 0x3C000);
  c.opd3_const = k.hasBias ? 0 : 1;
  return c;
}

RandomConv randomConv(std::mt19937 &rng, unsigned i) {
  static const Prec kPrecs[] = {Prec::Int8, Prec::Fp16, Prec::Bf16,
                                Prec::Fp32};
  RandomConv k;
  k.prec = kPrecs[i % 4];
  ConvGeom &g = k.g;
  auto r = [&](int lo, int hi) { return uint32_t(randomInt(rng, lo, hi)); };
  g.n = r(1, 2);
  g.ic = r(1, 9);
  g.oc = r(1, 20);
  unsigned shape = i % 5;
  g.kh = shape == 0 ? 1 : shape == 4 ? 7 : r(1, 3);
  g.kw = shape == 0 ? 1 : shape == 4 ? 7 : r(1, 3);
  g.sh = shape == 3 ? 2 : r(1, 2);
  g.sw = shape == 3 ? 2 : (shape == 0 ? 1 : r(1, 3));
  g.dh = shape == 2 ? 2 : 1;
  g.dw = shape == 2 ? r(1, 2) : 1;
  g.insH = shape == 1 ? 1 : 0;
  g.insW = shape == 1 ? r(0, 1) : 0;
  g.ih = r(g.kh * g.dh, 18);
  g.iw = r(g.kw * g.dw, 40);
  g.padT = r(0, 2);
  g.padB = r(0, 2);
  g.padL = r(0, 3);
  g.padR = r(0, 3);
  g.rotate = r(0, 3) == 0;
  g.resAdd = r(0, 2) == 0;
  k.inSigned = r(0, 1);
  k.wSigned = r(0, 1);
  k.hasBias = r(0, 1) == 1; // float bias / int8 kernel zero points
  return k;
}

/// Local memory after running `c` on path p with `threads` threads.
/// `m` is a scratch machine whose lanes beyond kUsedLanes stay zero.
std::vector<uint8_t> runOn(const isa::cmd::SConv &c, const MachineState &init,
                           MachineState &m, SimdPath p, unsigned threads) {
  setSimdPath(p);
  setKernelThreads(threads);
  for (unsigned lane = 0; lane < kUsedLanes; ++lane)
    std::memcpy(m.lmem.at(lane, 0, kLaneBytes),
                const_cast<MachineState &>(init).lmem.at(lane, 0, kLaneBytes),
                kLaneBytes);
  runTiu(c, m);
  // Every lane: a write outside the used ones would show up too.
  std::vector<uint8_t> bytes(kLanes * kLaneBytes);
  for (unsigned lane = 0; lane < kLanes; ++lane)
    std::memcpy(bytes.data() + lane * kLaneBytes,
                m.lmem.at(lane, 0, kLaneBytes), kLaneBytes);
  return bytes;
}

TEST(SimdPaths, RandomConvsAreByteIdenticalOnEveryPath) {
  SimdPathGuard guard;
  std::mt19937 rng(14);
  MachineState init(isa::ChipParams::bm1684x());
  MachineState work(isa::ChipParams::bm1684x());
  constexpr unsigned kCases = 40;
  for (unsigned i = 0; i < kCases; ++i) {
    RandomConv k = randomConv(rng, i);
    fillLocal(init, k.prec, rng);
    isa::cmd::SConv c = convCmd(k);
    std::vector<uint8_t> ref = runOn(c, init, work, SimdPath::Portable, 1);
    for (SimdPath p : availableSimdPaths())
      for (unsigned threads : {1u, 3u}) {
        if (p == SimdPath::Portable && threads == 1)
          continue;
        std::vector<uint8_t> got = runOn(c, init, work, p, threads);
        size_t diff = ref.size();
        if (std::memcmp(ref.data(), got.data(), ref.size()) != 0)
          for (diff = 0; ref[diff] == got[diff]; ++diff) {
          }
        ASSERT_EQ(diff, ref.size())
            << "case " << i << " (" << isa::precName(k.prec) << " ic "
            << k.g.ic << " oc " << k.g.oc << " k " << k.g.kh << "x" << k.g.kw
            << " s " << k.g.sh << "x" << k.g.sw << ") on " << simdPathName(p)
            << " with " << threads << " threads: first differing byte "
            << diff << " (lane " << diff / kLaneBytes << ", offset "
            << diff % kLaneBytes << ")";
      }
  }
}

TEST(SimdConversions, Fp16ToFp32EveryPattern) {
  std::vector<uint16_t> all(1 << 16);
  for (uint32_t h = 0; h < all.size(); ++h)
    all[h] = uint16_t(h);
  std::vector<float> row(all.size());
  detail::fp16RowToFp32(all.data(), row.data(), all.size());
  for (uint32_t h = 0; h < all.size(); ++h) {
    uint32_t want = isa::floatToBits(isa::fp16ToFp32(uint16_t(h)));
    ASSERT_EQ(isa::floatToBits(detail::fp16ToFp32Fast(uint16_t(h))), want) << h;
    ASSERT_EQ(isa::floatToBits(row[h]), want) << h;
  }
  // A row shorter than a vector (the compiler's scalar remainder).
  uint16_t normal[3] = {0x3C00, 0x8001 + 0x0400, 0x0000};
  float out[3];
  detail::fp16RowToFp32(normal, out, 3);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(isa::floatToBits(out[i]),
              isa::floatToBits(isa::fp16ToFp32(normal[i])));
}

TEST(SimdConversions, Fp32ToFp16AndBf16DenseSample) {
  // Every 97th fp32 pattern, plus every pattern whose low 13 / 16 bits sit
  // at a rounding boundary (ties, one either side) for every high part.
  std::vector<uint32_t> patterns;
  for (uint64_t b = 0; b < (uint64_t(1) << 32); b += 97)
    patterns.push_back(uint32_t(b));
  for (uint32_t hi = 0; hi < (1u << 19); ++hi)
    for (uint32_t lo : {0x0000u, 0x0FFFu, 0x1000u, 0x1001u, 0x1FFFu})
      patterns.push_back((hi << 13) | lo);
  for (uint32_t hi = 0; hi < (1u << 16); ++hi)
    for (uint32_t lo : {0x0000u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu})
      patterns.push_back((hi << 16) | lo);
  constexpr size_t kRow = 4096;
  std::vector<float> vals(kRow);
  std::vector<uint16_t> row(kRow);
  for (size_t i0 = 0; i0 < patterns.size(); i0 += kRow) {
    size_t n = std::min(kRow, patterns.size() - i0);
    for (size_t i = 0; i < n; ++i)
      vals[i] = isa::bitsToFloat(patterns[i0 + i]);
    detail::fp32RowToFp16(vals.data(), row.data(), n);
    for (size_t i = 0; i < n; ++i) {
      float x = vals[i];
      uint16_t want = isa::fp32ToFp16(x);
      ASSERT_EQ(detail::fp32ToFp16Fast(x), want) << std::hex << patterns[i0 + i];
      ASSERT_EQ(row[i], want) << std::hex << patterns[i0 + i];
      ASSERT_EQ(detail::fp32ToBf16Fast(x), isa::fp32ToBf16(x))
          << std::hex << patterns[i0 + i];
    }
  }
}

} // namespace
