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
// independent references), among them fp16 / bf16 convs that take the
// fused (FMA) tiles of the AVX2 / AVX-512 paths, fp16 and fp32 convs with
// NaN and infinite operands (a NaN puts every path on the portable tiles),
// and bf16 convs whose products overflow or underflow fp32 (where fusing
// would change the bits); and the inline fp16 / bf16 conversions equal
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
#include <optional>
#include <random>
#include <string>
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
  for (SimdPath p :
       {SimdPath::Avx2, SimdPath::Avx512, SimdPath::Avx512Vnni, SimdPath::Amx})
    if (!simdPathAvailable(p))
      EXPECT_THROW(setSimdPath(p), Error);
}

struct RandomConv {
  ConvGeom g;
  Prec prec;
  bool inSigned, wSigned, hasBias;
  /// Result precision of a float conv (int8 convs produce int32).
  std::optional<Prec> res;
};

/// The lanes the random convs touch (at most 20 output and 9 input
/// channels from lane 0).
constexpr unsigned kUsedLanes = 20;

/// Random bits in the used lanes for integer data; random finite floats of
/// the precision (zeros and subnormals included) for float data. With
/// `tiny` false, bf16 data has no values near fp32's smallest normal (whose
/// products underflow fp32, so such a conv never takes the fused tiles).
void fillLocal(MachineState &m, Prec p, std::mt19937 &rng, bool tiny = true) {
  // A pool of values to draw from (drawing each element afresh is slow).
  constexpr size_t kPool = 4096;
  std::vector<uint64_t> pool(kPool);
  for (size_t i = 0; i < kPool; ++i) {
    float small = p == Prec::Fp16 ? isa::fp16ToFp32(uint16_t(i))
                  : tiny          ? 1e-39f * float(i)
                                  : randomFloat(rng, p, -1e-4f, 1e-4f);
    float v = i < 256   ? 0.0f
              : i < 384 ? small
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
  c.res0_prec =
      uint64_t(isa::isFloat(k.prec) ? k.res.value_or(k.prec) : Prec::Int32);
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

/// Runs `c` from `init` on every path this CPU has with 1 and 3 threads
/// and expects local memory byte-identical to the portable single-thread
/// run, which it returns (`what` names the case in failures).
std::vector<uint8_t> expectSameOnEveryPath(const isa::cmd::SConv &c,
                                           const MachineState &init,
                                           MachineState &work,
                                           const std::string &what) {
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
      EXPECT_EQ(diff, ref.size())
          << what << " on " << simdPathName(p) << " with " << threads
          << " threads: first differing byte " << diff << " (lane "
          << diff / kLaneBytes << ", offset " << diff % kLaneBytes << ": "
          << std::hex << int(got[diff & ~size_t(1)]) << " "
          << int(got[diff | 1]) << " instead of " << int(ref[diff & ~size_t(1)])
          << " " << int(ref[diff | 1]) << std::dec << ")";
    }
  return ref;
}

std::string describe(unsigned i, const RandomConv &k) {
  return "case " + std::to_string(i) + " (" + isa::precName(k.prec) +
         (k.res ? std::string(" -> ") + isa::precName(*k.res) : "") + " ic " +
         std::to_string(k.g.ic) + " oc " + std::to_string(k.g.oc) + " k " +
         std::to_string(k.g.kh) + "x" + std::to_string(k.g.kw) + " s " +
         std::to_string(k.g.sh) + "x" + std::to_string(k.g.sw) + ")";
}

/// Runs \p cases random convs (seed \p seed) on every path: \p setup may
/// change case i's conv and must fill \p init's local memory; it returns
/// what the failure message adds to the case's description.
template <typename Setup>
void forRandomConvs(unsigned seed, unsigned cases, Setup setup) {
  SimdPathGuard guard;
  std::mt19937 rng(seed);
  MachineState init(isa::ChipParams::bm1684x());
  MachineState work(isa::ChipParams::bm1684x());
  for (unsigned i = 0; i < cases; ++i) {
    RandomConv k = randomConv(rng, i);
    std::string extra = setup(i, k, init, rng);
    expectSameOnEveryPath(convCmd(k), init, work, describe(i, k) + extra);
    if (testing::Test::HasFailure())
      return;
  }
}

TEST(SimdPaths, RandomConvsAreByteIdenticalOnEveryPath) {
  forRandomConvs(14, 40, [](unsigned, RandomConv &k, MachineState &init,
                            std::mt19937 &rng) {
    fillLocal(init, k.prec, rng);
    return std::string();
  });
}

// 8-bit convs as the AVX-512 VNNI path's quad tile takes them: signed
// weights without zero points (symmetric INT8: the weights go from their
// slots to the tile's quads without load), unit-stride walks (a quad's
// channels at one tap are one word of the slot) and strided ones (phases),
// channel counts that leave a last quad short, signed inputs (read as x + 128,
// the sums started at -128 * sum(w)) and unsigned ones; every sixth with
// kernel zero points, every sixth rotated (the general weight load).
TEST(SimdPaths, Int8QuadConvsAreByteIdenticalOnEveryPath) {
  forRandomConvs(
      17, 48,
      [](unsigned i, RandomConv &k, MachineState &init, std::mt19937 &rng) {
        k.prec = Prec::Int8;
        k.wSigned = true;
        k.hasBias = i % 6 == 5;
        k.g.rotate = i % 6 == 4;
        k.inSigned = i % 2 == 0;
        if (i % 3 != 2)
          k.g.sh = k.g.sw = 1;
        fillLocal(init, k.prec, rng);
        return std::string(" (8-bit quad case)");
      });
}

// fp16 / bf16 convs whose operands are in the fused tiles' range (no NaN,
// every product within fp32's normal range), so the AVX2 / AVX-512 paths
// run them with FMA; half of them with fp32 results, which would show a
// difference that rounding to the half type could hide.
TEST(SimdPaths, FusedHalfConvsAreByteIdenticalOnEveryPath) {
  forRandomConvs(15, 40, [](unsigned i, RandomConv &k, MachineState &init,
                            std::mt19937 &rng) {
    k.prec = i % 2 ? Prec::Bf16 : Prec::Fp16;
    if (i % 4 >= 2)
      k.res = Prec::Fp32;
    fillLocal(init, k.prec, rng, /*tiny=*/false);
    return std::string();
  });
}

// fp16 (and fp32) convs with NaNs (quiet and signalling, payloads of both
// signs) and infinities in the input, with NaNs in the weights (at least 8
// input channels and one NaN among the first 8, which the AVX-512 fp16
// weight packer loads together), with infinities only, and with a NaN pad
// value: a NaN operand puts every path on the portable tiles (which of
// two NaN payloads wins depends on the build of the tile), infinities
// alone take the fused ones; either way the bytes match the portable
// path.
TEST(SimdPaths, ConvsWithNanAndInfAreByteIdenticalOnEveryPath) {
  const uint64_t kNans16[] = {0x7E01, 0xFE77, 0x7D55, 0xFC01};
  const uint64_t kNans32[] = {0x7FC01234, 0xFFE00077, 0x7FA00055,
                              0xFF800001};
  forRandomConvs(16, 36, [&](unsigned i, RandomConv &k, MachineState &init,
                            std::mt19937 &rng) {
    k.prec = i % 6 < 4 ? Prec::Fp16 : Prec::Fp32;
    if (k.prec == Prec::Fp16 && i % 2)
      k.res = Prec::Fp32;
    bool f16 = k.prec == Prec::Fp16;
    // NaN + Inf in the input, NaN weights, Inf only, a NaN pad value.
    unsigned variant = i % 4;
    if (variant == 1)
      k.g.ic = 8 + uint32_t(rng() % 9);
    if (variant == 3)
      k.hasBias = true; // pad values from memory (convCmd)
    fillLocal(init, k.prec, rng);
    const ConvGeom &g = k.g;
    const uint32_t icp = init.chip.icParallel(k.prec);
    unsigned bytes = bytesOf(k.prec);
    // The input as convCmd places it; weight (oc, ic, tap) in lane oc's
    // slot at 96 KiB (IC_PARALLEL layout, isa/docs/bm1684x.md 3.4).
    Ref in = euRef(laddr(0, 0), k.prec, g.n, g.ic, g.ih, g.iw);
    auto pokeInput = [&](uint64_t bits) {
      refSetBits(init, in, uint32_t(rng() % g.n), uint32_t(rng() % g.ic),
                 uint32_t(rng() % g.ih), uint32_t(rng() % g.iw), bits);
    };
    for (int j = 0; j < 3; ++j) {
      pokeInput(f16 ? 0x7C00 : 0x7F800000);
      pokeInput(f16 ? 0xFC00 : 0xFF800000);
    }
    for (unsigned j = 0; j < 4; ++j) {
      uint64_t nan = f16 ? kNans16[j] : kNans32[j];
      if (variant == 0)
        pokeInput(nan);
      if (variant == 1) {
        uint32_t oc = uint32_t(rng() % g.oc);
        uint32_t ic = uint32_t(rng() % (j == 0 ? 8 : g.ic));
        uint32_t tap = uint32_t(rng() % (g.kh * g.kw));
        uint32_t e = (ic / icp) * g.kh * g.kw * icp + tap * icp + ic % icp;
        std::memcpy(init.lmem.at(oc, 0x18000 + e * bytes, bytes), &nan, bytes);
      }
      if (variant == 3 && j == 0)
        // Channel 0's pad value (convCmd's pad pairs: lane c, pad then
        // inserted value).
        std::memcpy(init.lmem.at(0, 0x3C000, bytes), &nan, bytes);
    }
    return " variant " + std::to_string(variant);
  });
}

// bf16 products can leave fp32's range (bf16 has its exponent range); then
// the fused tiles would round differently, so every path runs unfused and
// gives the unfused sums. A 1x1 conv of two channels: out = w0 * x0 + w1 *
// x1 with fp32 results, bias 0 and pad 0.
TEST(SimdPaths, Bf16ProductsOutOfFp32RangeStayUnfused) {
  SimdPathGuard guard;
  MachineState init(isa::ChipParams::bm1684x());
  MachineState work(isa::ChipParams::bm1684x());
  struct Case {
    const char *what;
    float x0, x1, w0, w1;
    uint32_t want; ///< fp32 bits of the unfused sum
  };
  const Case cases[] = {
      // 2^-149 + round(1.5 * 2^-149) = 2^-149 + 2^-148 = 3 * 2^-149; fused:
      // round(2.5 * 2^-149) = 2 * 2^-149.
      {"underflow", 0x1p-100f, 0x1p-100f, 0x1p-49f, 0x1.8p-49f, 3},
      // -1.5 * 2^127 + round(2^128) = -1.5 * 2^127 + inf = inf; fused:
      // 2^126.
      {"overflow", -0x1.8p100f, 0x1p100f, 0x1p27f, 0x1p28f, 0x7F800000u},
  };
  for (const Case &t : cases) {
    RandomConv k{};
    k.prec = Prec::Bf16;
    k.res = Prec::Fp32;
    k.g.ic = 2;
    k.g.oc = 3;
    k.g.kh = k.g.kw = 1;
    k.g.ih = 2;
    k.g.iw = 20;
    isa::cmd::SConv c = convCmd(k);
    c.opd2_addr = 0; // bias immediate 0
    c.opd3_addr = 0; // pad immediate 0
    for (unsigned lane = 0; lane < kUsedLanes; ++lane)
      std::memset(init.lmem.at(lane, 0, kLaneBytes), 0, kLaneBytes);
    // Every input element of channel 0 (lane 0) is x0, of channel 1 x1;
    // weights (oc, ic) at element ic of the channel's slot in lane oc.
    for (unsigned ch = 0; ch < 2; ++ch) {
      uint16_t x = uint16_t(fToBits(ch ? t.x1 : t.x0, Prec::Bf16));
      for (uint32_t off = 0; off < 0x1000; off += 2)
        std::memcpy(init.lmem.at(ch, off, 2), &x, 2);
    }
    for (unsigned oc = 0; oc < k.g.oc; ++oc)
      for (unsigned ic = 0; ic < 2; ++ic) {
        uint16_t w = uint16_t(fToBits(ic ? t.w1 : t.w0, Prec::Bf16));
        std::memcpy(init.lmem.at(oc, 0x18000 + 2 * ic, 2), &w, 2);
      }
    std::vector<uint8_t> ref = expectSameOnEveryPath(c, init, work, t.what);
    for (unsigned oc = 0; oc < k.g.oc; ++oc) {
      uint32_t got;
      std::memcpy(&got, ref.data() + oc * kLaneBytes + 0x28000, 4);
      EXPECT_EQ(got, t.want) << t.what << " oc " << oc;
    }
  }
}

/// The row conversions on every path (F16C on AVX2 / AVX-512 where the
/// CPU has it): rows of 64 patterns, so that most rows hold no NaN and take
/// the vector conversion, and the rows with NaNs the portable one.
TEST(SimdConversions, Fp16ToFp32EveryPattern) {
  SimdPath saved = simdPath();
  std::vector<uint16_t> all(1 << 16);
  for (uint32_t h = 0; h < all.size(); ++h)
    all[h] = uint16_t(h);
  for (SimdPath p : availableSimdPaths()) {
    setSimdPath(p);
    std::vector<float> row(all.size());
    for (size_t i0 = 0; i0 < all.size(); i0 += 64)
      detail::fp16RowToFp32(all.data() + i0, row.data() + i0, 64);
    for (uint32_t h = 0; h < all.size(); ++h) {
      uint32_t want = isa::floatToBits(isa::fp16ToFp32(uint16_t(h)));
      ASSERT_EQ(isa::floatToBits(detail::fp16ToFp32Fast(uint16_t(h))), want)
          << h;
      ASSERT_EQ(isa::floatToBits(row[h]), want)
          << h << " on " << simdPathName(p);
    }
    // A row shorter than a vector, and one with a remainder.
    uint16_t some[11] = {0x3C00, 0x8401, 0x0000, 0x7C00, 0x0001, 0xFBFF,
                         0x3555, 0x8000, 0x03FF, 0x4000, 0xC000};
    float out[11];
    for (size_t n : {size_t(3), size_t(11)}) {
      detail::fp16RowToFp32(some, out, n);
      for (size_t i = 0; i < n; ++i)
        EXPECT_EQ(isa::floatToBits(out[i]),
                  isa::floatToBits(isa::fp16ToFp32(some[i])))
            << i << " of " << n << " on " << simdPathName(p);
    }
  }
  setSimdPath(saved);
}

/// The conversions of rows at any address (halfRowToFloat /
/// floatRowToHalf, which the kernels run on local memory): every length up
/// to three vectors and more (the AVX-512 routines' masked last step), rows
/// starting at odd and even bytes, a NaN (signalling and quiet, payloads
/// kept) at each position or none, against isa::Numerics element by
/// element; halfRowToFloat also tells whether the row held a NaN, and
/// neither writes past the row.
TEST(SimdConversions, RowsAtAnyAddressEveryLength) {
  SimdPath saved = simdPath();
  std::mt19937 rng(77);
  for (SimdPath p : availableSimdPaths()) {
    setSimdPath(p);
    for (size_t n = 0; n <= 50; ++n)
      for (size_t shift : {size_t(0), size_t(1), size_t(2), size_t(6)})
        for (int nanAt = -1; nanAt < int(n); nanAt += (n > 20 ? 7 : 1)) {
          std::string what = std::string(simdPathName(p)) + " n " +
                             std::to_string(n) + " shift " +
                             std::to_string(shift) + " NaN at " +
                             std::to_string(nanAt);
          std::vector<uint16_t> half(n);
          for (uint16_t &h : half) {
            h = uint16_t(rng());
            if ((h & 0x7C00) == 0x7C00) // keep NaN where placed only
              h &= 0xBFFF;
          }
          if (nanAt >= 0)
            half[size_t(nanAt)] = nanAt % 2 ? 0x7D55 : 0xFE01;
          std::vector<uint8_t> bytes(2 * n + shift + 8, 0xA5);
          if (n != 0) // half.data() may be null
            std::memcpy(bytes.data() + shift, half.data(), 2 * n);
          std::vector<float> out(n + 4, 1.25f);
          bool nan =
              detail::halfRowToFloat(bytes.data() + shift, out.data(), n);
          EXPECT_EQ(nan, nanAt >= 0) << what;
          for (size_t i = 0; i < n; ++i)
            ASSERT_EQ(isa::floatToBits(out[i]),
                      isa::floatToBits(isa::fp16ToFp32(half[i])))
                << what << " element " << i;
          for (size_t i = n; i < out.size(); ++i)
            ASSERT_EQ(out[i], 1.25f) << what << ": wrote past the row";

          std::vector<float> vals(n);
          for (size_t i = 0; i < n; ++i)
            vals[i] = isa::bitsToFloat(uint32_t(rng()));
          if (nanAt >= 0)
            vals[size_t(nanAt)] = isa::bitsToFloat(0x7FA00055);
          std::fill(bytes.begin(), bytes.end(), 0xA5);
          detail::floatRowToHalf(vals.data(), bytes.data() + shift, n);
          for (size_t i = 0; i < n; ++i) {
            uint16_t got;
            std::memcpy(&got, bytes.data() + shift + 2 * i, 2);
            ASSERT_EQ(got, isa::fp32ToFp16(vals[i]))
                << what << " element " << i;
          }
          for (size_t i = 0; i < shift; ++i)
            ASSERT_EQ(bytes[i], 0xA5) << what << ": wrote before the row";
          for (size_t i = shift + 2 * n; i < bytes.size(); ++i)
            ASSERT_EQ(bytes[i], 0xA5) << what << ": wrote past the row";
        }
  }
  setSimdPath(saved);
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
  SimdPath saved = simdPath();
  // Rows of 61: most hold no NaN (the vector conversion) and all have a
  // remainder past the last whole vector.
  constexpr size_t kRow = 61;
  std::vector<float> vals(kRow);
  std::vector<uint16_t> row(kRow);
  for (SimdPath p : availableSimdPaths()) {
    setSimdPath(p);
    for (size_t i0 = 0; i0 < patterns.size(); i0 += kRow) {
      size_t n = std::min(kRow, patterns.size() - i0);
      for (size_t i = 0; i < n; ++i)
        vals[i] = isa::bitsToFloat(patterns[i0 + i]);
      detail::fp32RowToFp16(vals.data(), row.data(), n);
      for (size_t i = 0; i < n; ++i) {
        float x = vals[i];
        uint16_t want = isa::fp32ToFp16(x);
        ASSERT_EQ(row[i], want)
            << std::hex << patterns[i0 + i] << " on " << simdPathName(p);
        if (p == saved) {
          ASSERT_EQ(detail::fp32ToFp16Fast(x), want)
              << std::hex << patterns[i0 + i];
          ASSERT_EQ(detail::fp32ToBf16Fast(x), isa::fp32ToBf16(x))
              << std::hex << patterns[i0 + i];
        }
      }
    }
  }
  setSimdPath(saved);
}

} // namespace
