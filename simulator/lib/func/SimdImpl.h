//===- SimdImpl.h - Multi-target kernel builds and fast conversions -*- C++
//-*-===//
//
// Private to simulator/lib/func. A hot kernel is written once as an
// always_inline template and instantiated in three wrappers: one without a
// target attribute (portable) and two with TPUSIM_TARGET_AVX2 /
// TPUSIM_TARGET_AVX512; each kernel's caller switches on
// vectorBuild(simdPath()) to pick its wrapper (TPUSIM_TARGET_AVX512VNNI is
// for the 8-bit conv tile of the AVX-512 VNNI path).
// The always_inline body is compiled with its caller's target, so the three
// builds are the same operations in the same order on vectors of different
// widths. TPUSIM_TARGET_AVX2_FMA is for kernels that call FMA intrinsics
// explicitly (the fused conv tiles); dispatch to them checks cpuHasFma().
//
//===----------------------------------------------------------------------===//
#ifndef TPUSIM_LIB_FUNC_SIMDIMPL_H
#define TPUSIM_LIB_FUNC_SIMDIMPL_H

#include "tpusim/Func.h"
#include "tpusim/Simd.h"

#include "tpu/isa/Numerics.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <type_traits>
#include <vector>

#if (defined(__x86_64__) || defined(__i386__)) &&                            \
    (defined(__clang__) || defined(__GNUC__))
#define TPUSIM_X86_PATHS 1
#define TPUSIM_TARGET_AVX2 __attribute__((target("avx2")))
// Only for code with contraction off or explicit intrinsics: where
// fp-contract is on, "fma" lets the compiler fuse a * b + c.
#define TPUSIM_TARGET_AVX2_FMA __attribute__((target("avx2,fma")))
#define TPUSIM_TARGET_AVX512                                                  \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#define TPUSIM_TARGET_AVX512VNNI                                               \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))
#define TPUSIM_TARGET_AMX                                                      \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,"       \
                        "amx-tile,amx-int8")))
#else
#define TPUSIM_X86_PATHS 0
#define TPUSIM_TARGET_AVX2
#define TPUSIM_TARGET_AVX2_FMA
#define TPUSIM_TARGET_AVX512
#define TPUSIM_TARGET_AVX512VNNI
#define TPUSIM_TARGET_AMX
#endif

#define TPUSIM_INLINE inline __attribute__((always_inline))

namespace tpu::sim::detail {

/// The build of the kernels a path runs: AVX-512 with VNNI, and AMX, differ
/// from AVX-512 only in the 8-bit conv kernel (Simd.h), so every other
/// kernel switches on vectorBuild(path).
inline SimdPath vectorBuild(SimdPath p) {
  return p == SimdPath::Avx512Vnni || p == SimdPath::Amx ? SimdPath::Avx512 : p;
}

/// Defines the three builds of a kernel loop and its dispatcher: IMPL, an
/// always_inline template (template parameters TPARAMS, arguments TARGS),
/// becomes NAME##Portable, NAME##Avx2 and NAME##Avx512 with parameters
/// PARAMS, and NAME PARAMS calls the one vectorBuild(simdPath()) picks with
/// ARGS. Commas inside TPARAMS / TARGS are written TPUSIM_COMMA.
#define TPUSIM_COMMA ,
#if TPUSIM_X86_PATHS
#define TPUSIM_BUILDS(NAME, IMPL, TPARAMS, TARGS, PARAMS, ARGS)                \
  template <TPARAMS> void NAME##Portable PARAMS { IMPL<TARGS> ARGS; }          \
  template <TPARAMS> TPUSIM_TARGET_AVX2 void NAME##Avx2 PARAMS {               \
    IMPL<TARGS> ARGS;                                                          \
  }                                                                            \
  template <TPARAMS> TPUSIM_TARGET_AVX512 void NAME##Avx512 PARAMS {           \
    IMPL<TARGS> ARGS;                                                          \
  }                                                                            \
  template <TPARAMS> void NAME PARAMS {                                        \
    switch (vectorBuild(simdPath())) {                                         \
    case SimdPath::Avx512:                                                     \
      return NAME##Avx512<TARGS> ARGS;                                         \
    case SimdPath::Avx2:                                                       \
      return NAME##Avx2<TARGS> ARGS;                                           \
    default:                                                                   \
      return NAME##Portable<TARGS> ARGS;                                       \
    }                                                                          \
  }
#else
#define TPUSIM_BUILDS(NAME, IMPL, TPARAMS, TARGS, PARAMS, ARGS)                \
  template <TPARAMS> void NAME PARAMS { IMPL<TARGS> ARGS; }
#endif

/// fn(std::integral_constant<isa::RoundMode, M>{}) for M = mode: a loop
/// with the round mode a compile-time constant, chosen at run time.
template <typename Fn>
decltype(auto) withRoundMode(isa::RoundMode mode, Fn fn) {
  using isa::RoundMode;
  auto call = [&](auto m) -> decltype(auto) { return fn(m); };
  switch (mode) {
  case RoundMode::HalfToEven:
    return call(std::integral_constant<RoundMode, RoundMode::HalfToEven>{});
  case RoundMode::HalfAwayFromZero:
    return call(
        std::integral_constant<RoundMode, RoundMode::HalfAwayFromZero>{});
  case RoundMode::TowardsZero:
    return call(std::integral_constant<RoundMode, RoundMode::TowardsZero>{});
  case RoundMode::Down:
    return call(std::integral_constant<RoundMode, RoundMode::Down>{});
  case RoundMode::Up:
    return call(std::integral_constant<RoundMode, RoundMode::Up>{});
  case RoundMode::HalfUp:
    return call(std::integral_constant<RoundMode, RoundMode::HalfUp>{});
  case RoundMode::HalfDown:
    break;
  }
  return call(std::integral_constant<RoundMode, RoundMode::HalfDown>{});
}

/// Whether the CPU has FMA3 (needed besides AVX2 by TPUSIM_TARGET_AVX2_FMA
/// code; AVX-512F includes it). Checked once.
bool cpuHasFma();

/// Runs fn(0) .. fn(n - 1) on kernelThreads() threads (the caller's
/// included), in any order; returns when all are done. fn must not throw.
void parallelTasks(int64_t n, const std::function<void(int64_t)> &fn);

/// The storage of one scratch buffer: grows (at least doubling, so a run of
/// growing commands reallocates a few times only) without copying or
/// clearing, since the contents are stale anyway (std::vector::resize did
/// both: a memmove and a memset, each a pass over fresh pages).
class ScratchBlock {
public:
  ScratchBlock() = default;
  ScratchBlock(const ScratchBlock &) = delete;
  ScratchBlock &operator=(const ScratchBlock &) = delete;
  ~ScratchBlock() { release(); }
  void *get(size_t bytes) {
    if (bytes > cap_)
      grow(bytes);
    return data_;
  }

private:
  void grow(size_t bytes);
  void release();
  void *data_ = nullptr;
  size_t cap_ = 0;
};

/// A buffer of at least n elements reused across calls on this thread (the
/// kernels' scratch: fresh multi-megabyte allocations every command cost
/// more in page faults than the arithmetic). Contents are stale: callers
/// write what they read. Tag tells apart the buffers of one element type.
template <typename T, int Tag> T *scratch(size_t n) {
  static_assert(std::is_trivially_copyable_v<T> &&
                    std::is_trivially_destructible_v<T>,
                "scratch holds raw storage");
  thread_local ScratchBlock buf;
  return static_cast<T *>(buf.get(n * sizeof(T)));
}

inline float bitsAsFloat(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
inline uint32_t floatAsBits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

/// isa::fp16ToFp32 with the normal numbers inline (the bit pattern is the
/// same: sign, rebiased exponent, mantissa shifted); subnormals, zeros,
/// infinities and NaNs go to isa::fp16ToFp32.
TPUSIM_INLINE float fp16ToFp32Fast(uint16_t h) {
  uint32_t e = (h >> 10) & 0x1F;
  if (e - 1 < 30) // 1..30: normal
    return bitsAsFloat((uint32_t(h & 0x8000) << 16) |
                       ((e + (127 - 15)) << 23) | (uint32_t(h & 0x3FF) << 13));
  if ((h & 0x7FFF) == 0) // signed zero
    return bitsAsFloat(uint32_t(h) << 16);
  return isa::fp16ToFp32(h);
}

TPUSIM_INLINE float bf16ToFp32Fast(uint16_t b) {
  return bitsAsFloat(uint32_t(b) << 16);
}

/// isa::fp32ToFp16(x, HalfToEven) with the inputs whose result is a normal
/// fp16 (|x| in [2^-14, 65504 rounded]) inline: round the 13 dropped bits to
/// nearest even, a carry into the exponent included; the rest (zeros,
/// subnormal results, overflow, infinities, NaNs) goes to isa::fp32ToFp16.
TPUSIM_INLINE uint16_t fp32ToFp16Fast(float x) {
  uint32_t b = floatAsBits(x);
  uint32_t a = b & 0x7FFFFFFFu;
  if (isa::fp16NormalRneInRange(a))
    return uint16_t(((b >> 16) & 0x8000u) | isa::fp16NormalRneBits(a));
  if (a == 0)
    return uint16_t((b >> 16) & 0x8000u);
  return isa::fp32ToFp16(x, isa::RoundMode::HalfToEven);
}

/// isa::fp32ToBf16(x, HalfToEven) with finite results inline: finite inputs
/// that do not round to infinity and are not fp32 subnormals (those go to
/// the exact routine, as do infinities and NaNs).
TPUSIM_INLINE uint16_t fp32ToBf16Fast(float x) {
  uint32_t b = floatAsBits(x);
  uint32_t a = b & 0x7FFFFFFFu;
  // Normal fp32 below 0x7F7F8000 (which rounds to infinity).
  if (a - 0x00800000u < 0x7F7F8000u - 0x00800000u) {
    uint32_t r = b + 0x7FFFu + ((b >> 16) & 1u);
    return uint16_t(r >> 16);
  }
  if (a == 0)
    return uint16_t((b >> 16) & 0x8000u);
  return isa::fp32ToBf16(x, isa::RoundMode::HalfToEven);
}

/// fp16 -> fp32 of n contiguous elements, branch-free (the compiler
/// vectorises it): every class of isa::fp16ToFp32 by a select, with the
/// same bits: normal numbers rebiased; zeros and subnormals as mant * 2^-24
/// (exact in fp32: a small integer times a power of two); infinities and
/// NaNs with their payload kept. Random-initialised weights have many fp16
/// subnormals, so a scalar pass for them would run on most rows.
TPUSIM_INLINE void fp16RowToFp32Portable(const uint16_t *in, float *out,
                                         size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t h = in[i];
    uint32_t e = (h >> 10) & 0x1F, m = h & 0x3FF;
    uint32_t sign = (h & 0x8000) << 16;
    uint32_t normal = sign | ((e + (127 - 15)) << 23) | (m << 13);
    uint32_t small = sign | floatAsBits(float(int32_t(m)) * 0x1p-24f);
    uint32_t special = sign | 0x7F800000u | (m << 13);
    out[i] = bitsAsFloat(e == 0 ? small : e == 0x1F ? special : normal);
  }
}

/// fp32 -> fp16 (nearest even) of n elements into contiguous out: the
/// normal-result rounding of fp32ToFp16Fast branch-free (vectorised), with
/// zeros; any other input goes through the exact routine.
TPUSIM_INLINE void fp32RowToFp16Portable(const float *in, uint16_t *out,
                                         size_t n) {
  uint32_t special = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t b = floatAsBits(in[i]);
    uint32_t a = b & 0x7FFFFFFFu;
    bool inRange = isa::fp16NormalRneInRange(a);
    uint32_t h = isa::fp16NormalRneBits(a);
    special |= uint32_t(!inRange && a != 0);
    out[i] = uint16_t(((b >> 16) & 0x8000u) | (inRange ? h : 0u));
  }
  if (special)
    for (size_t i = 0; i < n; ++i) {
      uint32_t a = floatAsBits(in[i]) & 0x7FFFFFFFu;
      if (!isa::fp16NormalRneInRange(a) && a != 0)
        out[i] = isa::fp32ToFp16(in[i], isa::RoundMode::HalfToEven);
    }
}

/// Whether the kernels may use F16C (vcvtph2ps / vcvtps2ph): the CPU has
/// it and the path is not the portable one (which the tests force to
/// check the portable code).
bool useF16c();

/// The row conversions the kernels call: the portable ones above, or on
/// the AVX2 and AVX-512 paths with the CPU's F16C, vcvtph2ps / vcvtps2ph
/// (round to nearest even), which give the same bits for every input but
/// NaNs (vcvtph2ps quiets a signalling NaN, which fp16ToFp32 keeps as it
/// is): a row with a NaN in it is converted again by the portable routine.
void fp16RowToFp32(const uint16_t *in, float *out, size_t n);
void fp32RowToFp16(const float *in, uint16_t *out, size_t n);

/// The same conversions on rows of fp16 bits at any address (local
/// memory), on the AVX-512 paths 16 elements a step with a masked last
/// step. halfRowToFloat returns whether the row holds a NaN (|h| above
/// 0x7C00), which the callers need for the fused conv tiles (fmaExact);
/// without `testNan` the answer may be false for a row with a NaN (the
/// paths other than AVX-512 then skip the test).
bool halfRowToFloat(const void *in, float *out, size_t n, bool testNan = true);
void floatRowToHalf(const float *in, void *out, size_t n);

/// loadFloat / loadInt with the common types inline (same values).
TPUSIM_INLINE float loadFloatFast(const uint8_t *base, uint64_t index,
                                  ElemType t) {
  uint16_t h;
  switch (t.prec) {
  case isa::Prec::Fp32: {
    float f;
    std::memcpy(&f, base + index * 4, 4);
    return f;
  }
  case isa::Prec::Fp16:
    std::memcpy(&h, base + index * 2, 2);
    return fp16ToFp32Fast(h);
  case isa::Prec::Bf16:
    std::memcpy(&h, base + index * 2, 2);
    return bf16ToFp32Fast(h);
  default:
    return loadFloat(base, index, t);
  }
}
TPUSIM_INLINE int64_t loadIntFast(const uint8_t *base, uint64_t index,
                                  ElemType t) {
  if (t.prec == isa::Prec::Int8)
    return t.isSigned ? int64_t(int8_t(base[index])) : int64_t(base[index]);
  return loadInt(base, index, t);
}

} // namespace tpu::sim::detail

#endif // TPUSIM_LIB_FUNC_SIMDIMPL_H
