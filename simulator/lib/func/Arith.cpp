//===- Arith.cpp - Element-wise TIU families
//--------------------------------===//
//
// AR (incl. the sSEG index generators), CMP, LIN, SFU, RQ&DQ and VC
// (isa/docs/bm1684x.md 4.2, 4.5, 8.3). Decisions where the public facts are silent are
// in semantics.md ("Arithmetic", "Compare", "Linear", "SFU", "Requantize").
//
// Float arithmetic runs in fp32, one rounding (to nearest even) per
// operation, then one conversion to the result precision; for fp16/bf16
// operands this equals correctly rounded arithmetic in that precision.
// Integer arithmetic runs in int64; non-saturating ops wrap to the result
// width, saturating ops (and every conversion) saturate.
//
//===----------------------------------------------------------------------===//

#include "FuncImpl.h"
#include "SimdImpl.h"

#include "tpu/isa/Numerics.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#if TPUSIM_X86_PATHS
#include <immintrin.h>
#endif

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace tpu::sim {
namespace detail {

using isa::Prec;
using isa::RoundMode;

namespace {

// AR sub-ops (isa/docs/bm1684x.md 4.2).
enum ArEu : unsigned {
  kMul = 0,
  kNot = 1,
  kAdd = 2,
  kSub = 3,
  kMax = 4,
  kMin = 5,
  kLogicShift = 6,
  kAnd = 7,
  kOr = 8,
  kXor = 9,
  kSelGt = 10,
  kSelEq = 11,
  kDiv = 12,
  kSelLt = 13,
  kCast = 14,
  kAddSat = 15,
  kSubSat = 16,
  kClamp = 17,
  kMac = 18,
  kCopy = 19,
  kMulSat = 20,
  kArithShift = 21,
  kRotateShift = 22,
  kMulDHR = 23,
  kEuIdxGen = 24,
  kNpuIdxGen = 25,
  kAbs = 26,
  kFSubAbs = 27,
  kCopyMB = 28,
  kFirstOne = 29,
  kFirstZero = 30,
};

/// Ops whose integer form takes an optional right shift in opd2 when
/// tsk_opd_num = 3 (semantics.md "Arithmetic").
bool takesShift(unsigned eu) {
  return eu == kMul || eu == kAdd || eu == kSub || eu == kMac ||
         eu == kAddSat || eu == kSubSat || eu == kMulSat;
}

bool saturates(unsigned eu) {
  return eu == kAddSat || eu == kSubSat || eu == kMulSat || eu == kMulDHR ||
         eu == kAbs || eu == kCast || eu == kClamp;
}

bool isFloatOp(unsigned eu) {
  switch (eu) {
  case kMul:
  case kAdd:
  case kSub:
  case kMax:
  case kMin:
  case kSelGt:
  case kSelEq:
  case kSelLt:
  case kDiv:
  case kCast:
  case kClamp:
  case kMac:
  case kCopy:
  case kAbs:
  case kFSubAbs:
  case kCopyMB:
    return true;
  default:
    return false;
  }
}

bool isUnary(unsigned eu) {
  return eu == kNot || eu == kCast || eu == kCopy || eu == kAbs ||
         eu == kCopyMB || eu == kFirstOne || eu == kFirstZero || eu == kClamp;
}

/// A source operand of an element-wise op: a tensor (broadcast along the
/// dimensions whose size is 1), an immediate, or absent.
struct Source {
  bool present = false;
  bool isConst = false;
  Immediate imm;
  std::unique_ptr<OperandView> view;
  Shape4 shape{1, 1, 1, 1};
  /// Rows span (h, w) merged into one row (see `merge` in the AR kernel):
  /// then only a source with h = w = 1 is broadcast along a row.
  bool mergedRows = false;

  bool rowBroadcast() const {
    return shape.w == 1 && (!mergedRows || shape.h == 1);
  }

  ElemType type() const { return isConst ? imm.type : view->type(); }
  void clampIdx(uint32_t &n, uint32_t &c, uint32_t &h, uint32_t &w) const {
    if (shape.n == 1)
      n = 0;
    if (shape.c == 1)
      c = 0;
    if (shape.h == 1)
      h = 0;
    if (shape.w == 1)
      w = 0;
  }
  int64_t i(uint32_t n, uint32_t c, uint32_t h, uint32_t w) const {
    if (isConst)
      return imm.asInt();
    clampIdx(n, c, h, w);
    return view->getInt(n, c, h, w);
  }
  float f(uint32_t n, uint32_t c, uint32_t h, uint32_t w) const {
    if (isConst)
      return imm.asFloat();
    clampIdx(n, c, h, w);
    return view->getFloat(n, c, h, w);
  }
  double d(uint32_t n, uint32_t c, uint32_t h, uint32_t w) const {
    if (isConst)
      return isa::isFloat(imm.type.prec) ? double(imm.asFloat())
                                         : double(imm.asInt());
    clampIdx(n, c, h, w);
    return view->get(n, c, h, w);
  }
  /// Row (n, c, h) of `width` elements, broadcast where the shape is 1.
  void rowF(uint32_t n, uint32_t c, uint32_t h, uint32_t width,
            float *out) const {
    if (isConst) {
      std::fill_n(out, width, imm.asFloat());
      return;
    }
    uint32_t w0 = 0;
    clampIdx(n, c, h, w0);
    if (rowBroadcast())
      std::fill_n(out, width, view->getFloat(n, c, h, 0));
    else
      view->rowFloat(n, c, h, out, width);
  }
  void rowI(uint32_t n, uint32_t c, uint32_t h, uint32_t width,
            int64_t *out) const {
    if (isConst) {
      std::fill_n(out, width, imm.asInt());
      return;
    }
    uint32_t w0 = 0;
    clampIdx(n, c, h, w0);
    if (rowBroadcast())
      std::fill_n(out, width, view->getInt(n, c, h, 0));
    else
      view->rowInt(n, c, h, out, width);
  }
  uint64_t bits(uint32_t n, uint32_t c, uint32_t h, uint32_t w) const {
    if (isConst)
      return imm.bits;
    clampIdx(n, c, h, w);
    return view->bits(n, c, h, w);
  }
};

Source makeSource(const TiuOp &op, const MachineState &m,
                  const LaneGeometry &geo, Opd which, bool isConst,
                  uint64_t addr, ElemType type, Shape4 shape, unsigned str,
                  const char *what) {
  Source s;
  s.present = true;
  s.isConst = isConst;
  s.shape = shape;
  if (isConst) {
    s.imm = Immediate{type, addr};
    return s;
  }
  LocalTensor t = tiuTensor(op, geo, which, addr, type, shape, str);
  s.view = std::make_unique<OperandView>(m, t, what, op);
  return s;
}

/// Operand dims of a long AR command: 0 means "as the result"; short forms
/// were filled with the result dims by decodeTiu.
Shape4 opdShape(uint64_t n, uint64_t c, uint64_t h, uint64_t w,
                const Shape4 &res) {
  auto pick = [](uint64_t v, uint32_t r) { return v == 0 ? r : uint32_t(v); };
  return {pick(n, res.n), pick(c, res.c), pick(h, res.h), pick(w, res.w)};
}

template <typename Fn>
void forEachElement(const Shape4 &s, const ResultView &out, Fn fn) {
  for (uint32_t n = 0; n < s.n; ++n)
    for (uint32_t c = 0; c < s.c; ++c) {
      if (!out.enabled(c))
        continue;
      for (uint32_t h = 0; h < s.h; ++h)
        for (uint32_t w = 0; w < s.w; ++w)
          fn(n, c, h, w);
    }
}

template <typename Fn>
void forEachRow(const Shape4 &s, const ResultView &out, Fn fn) {
  for (uint32_t n = 0; n < s.n; ++n)
    for (uint32_t c = 0; c < s.c; ++c) {
      if (!out.enabled(c))
        continue;
      for (uint32_t h = 0; h < s.h; ++h)
        fn(n, c, h);
    }
}

/// forEachRow (n, c, h order), or a channel per task on the kernel threads
/// when no source view can tell the order (channelOrderFree against each;
/// immediates and absent sources never can). fn(n, c, h) writes only row
/// (n, c, h) of out and must not throw.
template <typename Fn>
void forEachRowAnyOrder(const Shape4 &s, const ResultView &out,
                        std::initializer_list<const Source *> sources, Fn fn) {
  bool free = std::all_of(sources.begin(), sources.end(), [&](const Source *x) {
    return !x->present || x->isConst || channelOrderFree(out, *x->view);
  });
  if (!free) {
    forEachRow(s, out, fn);
    return;
  }
  forEachChannel(out, s.c, true, [&](uint32_t c) {
    for (uint32_t n = 0; n < s.n; ++n)
      for (uint32_t h = 0; h < s.h; ++h)
        fn(n, c, h);
  });
}

/// Integer element operation shared by AR and VC. `c` is the third operand
/// (shift / select value), `hasC` whether it is used.
/// out[w] = rightShiftRound(x[w], s[w], mode) (s clamped to +-64 as
/// intElement does). A row whose shifts are all one small right shift runs
/// a loop per round mode (the mode a constant, the loop branch-free).
template <RoundMode M>
void shiftRowFixed(const int64_t *x, int64_t *out, uint32_t n, int s) {
  for (uint32_t w = 0; w < n; ++w)
    out[w] = isa::rightShiftRoundSmall(x[w], s, M);
}
void shiftRow(const int64_t *x, const int64_t *s, int64_t *out, uint32_t n,
              RoundMode mode) {
  bool uniform = n > 0 && s[0] > 0 && s[0] <= isa::kMaxSmallShift &&
                 std::all_of(s, s + n, [&](int64_t v) { return v == s[0]; });
  if (!uniform) {
    for (uint32_t w = 0; w < n; ++w)
      out[w] = isa::rightShiftRoundFast(
          x[w], int(std::clamp<int64_t>(s[w], -64, 64)), mode);
    return;
  }
  int sh = int(s[0]);
  withRoundMode(
      mode, [&](auto m) { shiftRowFixed<decltype(m)::value>(x, out, n, sh); });
}

/// out[w] = low 32 bits of rightShiftRoundSmall(a[w] op b[w], s, M) (s = 0:
/// no shift), op the wrapping add, sub or mul of AR sub-op EU: what the
/// general integer loop computes for those ops with one immediate shift,
/// in one pass.
template <RoundMode M, unsigned EU>
void shiftedRowFixed(const int64_t *a, const int64_t *b, uint32_t *out,
                     uint32_t n, int s) {
  for (uint32_t w = 0; w < n; ++w) {
    int64_t v = EU == kAdd   ? a[w] + b[w]
                : EU == kSub ? a[w] - b[w]
                             : int64_t(uint64_t(a[w]) * uint64_t(b[w]));
    out[w] = uint32_t(s ? isa::rightShiftRoundSmall(v, s, M) : v);
  }
}
#if TPUSIM_X86_PATHS
/// shiftedRowFixed<HalfUp, EU> on AVX2 for operands within int32: the
/// product by vpmuldq (exact), the sum or difference in int64, the rounding
/// floor((v + 2^(s-1)) / 2^s) as a logical shift of v + 2^(s-1) + 2^62
/// (|v| <= 2^62) less 2^(62-s), the low 32 bits of each result. The last
/// n % 4 elements take the scalar loop.
template <unsigned EU>
TPUSIM_TARGET_AVX2 void shiftedRowHalfUpAvx2(const int64_t *a, const int64_t *b,
                                             uint32_t *out, uint32_t n, int s) {
  constexpr int64_t kBias = int64_t(1) << 62;
  const __m256i add = _mm256_set1_epi64x((int64_t(1) << (s - 1)) + kBias);
  const __m256i sub = _mm256_set1_epi64x(kBias >> s);
  const __m128i count = _mm_cvtsi32_si128(s);
  const __m256i lowHalves = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
  uint32_t w = 0;
  for (; w + 4 <= n; w += 4) {
    __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(a + w));
    __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b + w));
    __m256i v;
    if constexpr (EU == kAdd)
      v = _mm256_add_epi64(x, y);
    else if constexpr (EU == kSub)
      v = _mm256_sub_epi64(x, y);
    else
      v = _mm256_mul_epi32(x, y);
    __m256i q = _mm256_sub_epi64(
        _mm256_srl_epi64(_mm256_add_epi64(v, add), count), sub);
    _mm_storeu_si128(
        reinterpret_cast<__m128i *>(out + w),
        _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(q, lowHalves)));
  }
  shiftedRowFixed<RoundMode::HalfUp, EU>(a + w, b + w, out + w, n - w, s);
}
#endif

/// x32: every a[w] and b[w] lies within int32 (the AVX2 HalfUp loop needs
/// it).
template <unsigned EU>
void shiftedRowOp(const int64_t *a, const int64_t *b, uint32_t *out, uint32_t n,
                  int s, RoundMode mode, bool x32) {
#if TPUSIM_X86_PATHS
  if (mode == RoundMode::HalfUp && s > 0 && s <= 62 && x32 &&
      simdPath() != SimdPath::Portable)
    return shiftedRowHalfUpAvx2<EU>(a, b, out, n, s);
#endif
  withRoundMode(mode, [&](auto m) {
    shiftedRowFixed<decltype(m)::value, EU>(a, b, out, n, s);
  });
}

/// rq1 of a row whose products x * mult cannot overflow int64 (|x| <
/// 2^32, |mult| <= 2^31) with one small right shift: isa::requantize's
/// clamp(rightShiftRound(x * mult, rshift) + zp, lo, hi) in int64, the
/// round mode a constant.
template <RoundMode M>
void requantRowFixed(const int64_t *x, int64_t *out, uint32_t n, int64_t mult,
                     int rshift, int64_t zp, int64_t lo, int64_t hi) {
  for (uint32_t w = 0; w < n; ++w)
    out[w] = std::clamp(isa::rightShiftRoundSmall(x[w] * mult, rshift, M) + zp,
                        lo, hi);
}
#if TPUSIM_X86_PATHS
/// requantRowFixed<HalfUp> on AVX2 for inputs within int32 (mult always
/// is): x * mult by vpmuldq (exact), then floor((v + 2^(s-1)) / 2^s) as
/// a logical shift of v + 2^(s-1) + 2^62 (never negative, never past 2^64:
/// |v| <= 2^62) less 2^(62-s), then + zp and the clamp in int64: the values
/// of the scalar loop (HalfUp rounds up when the dropped bits are at least
/// half). The last n % 4 elements take the scalar loop.
TPUSIM_TARGET_AVX2 void requantRowHalfUpAvx2(const int64_t *x, int64_t *out,
                                             uint32_t n, int64_t mult,
                                             int rshift, int64_t zp, int64_t lo,
                                             int64_t hi) {
  constexpr int64_t kBias = int64_t(1) << 62;
  const __m256i m = _mm256_set1_epi64x(mult);
  const __m256i add = _mm256_set1_epi64x((int64_t(1) << (rshift - 1)) + kBias);
  const __m256i sub = _mm256_set1_epi64x(kBias >> rshift);
  const __m256i z = _mm256_set1_epi64x(zp);
  const __m256i vlo = _mm256_set1_epi64x(lo), vhi = _mm256_set1_epi64x(hi);
  const __m128i count = _mm_cvtsi32_si128(rshift);
  uint32_t w = 0;
  for (; w + 4 <= n; w += 4) {
    __m256i v = _mm256_mul_epi32(
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(x + w)), m);
    __m256i q = _mm256_sub_epi64(
        _mm256_srl_epi64(_mm256_add_epi64(v, add), count), sub);
    q = _mm256_add_epi64(q, z);
    q = _mm256_blendv_epi8(q, vhi, _mm256_cmpgt_epi64(q, vhi));
    q = _mm256_blendv_epi8(q, vlo, _mm256_cmpgt_epi64(vlo, q));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + w), q);
  }
  requantRowFixed<RoundMode::HalfUp>(x + w, out + w, n - w, mult, rshift, zp,
                                     lo, hi);
}
#endif

/// requantRowFixed for a round mode known at run time; false (nothing
/// done) when the shift is not a small right shift. x32: every x lies
/// within int32 (the AVX2 HalfUp loop needs it).
bool requantRow(const int64_t *x, int64_t *out, uint32_t n, int64_t mult,
                int rshift, int64_t zp, int64_t lo, int64_t hi, RoundMode mode,
                bool x32) {
  if (rshift <= 0 || rshift > isa::kMaxSmallShift)
    return false;
#if TPUSIM_X86_PATHS
  if (mode == RoundMode::HalfUp && x32 && simdPath() != SimdPath::Portable &&
      rshift <= 62) {
    requantRowHalfUpAvx2(x, out, n, mult, rshift, zp, lo, hi);
    return true;
  }
#endif
  withRoundMode(mode, [&](auto m) {
    requantRowFixed<decltype(m)::value>(x, out, n, mult, rshift, zp, lo, hi);
  });
  return true;
}

/// a * b modulo 2^64: the product of two 32-bit unsigned operands does not
/// fit int64, and the stored result keeps only its low bits (or saturates
/// the wrapped product, as every build computed it before), so the multiply
/// wraps explicitly instead of overflowing signed arithmetic.
inline int64_t mulWrap(int64_t a, int64_t b) {
  return int64_t(uint64_t(a) * uint64_t(b));
}

int64_t intElement(const TiuOp &op, unsigned eu, int64_t a, int64_t b,
                   int64_t c, bool hasC, ElemType ta, RoundMode mode) {
  unsigned wa = isa::precBits(ta.prec);
  uint64_t ua = wrapBits(a, wa);
  auto shiftAmount = [](int64_t s) {
    return int(std::clamp<int64_t>(s, -64, 64));
  };
  switch (eu) {
  case kMul:
  case kMulSat:
    return hasC ? isa::rightShiftRound(mulWrap(a, b), shiftAmount(c), mode)
                : mulWrap(a, b);
  case kAdd:
  case kAddSat:
    return hasC ? isa::rightShiftRound(a + b, shiftAmount(c), mode) : a + b;
  case kSub:
  case kSubSat:
    return hasC ? isa::rightShiftRound(a - b, shiftAmount(c), mode) : a - b;
  case kMax:
    return std::max(a, b);
  case kMin:
    return std::min(a, b);
  case kNot:
    return int64_t(~ua);
  case kAnd:
    return int64_t(ua & wrapBits(b, wa));
  case kOr:
    return int64_t(ua | wrapBits(b, wa));
  case kXor:
    return int64_t(ua ^ wrapBits(b, wa));
  case kLogicShift: {
    int s = shiftAmount(b);
    if (s >= int(wa) || -s >= int(wa))
      return 0;
    return s >= 0 ? int64_t(wrapBits(int64_t(ua << s), wa)) : int64_t(ua >> -s);
  }
  case kArithShift: {
    int s = shiftAmount(b);
    if (s >= 0)
      return s >= 63 ? 0 : int64_t(uint64_t(a) << s);
    return isa::rightShiftRound(a, -s, mode);
  }
  case kRotateShift: {
    int s = int(((b % int64_t(wa)) + wa) % wa);
    if (s == 0)
      return int64_t(ua);
    return int64_t(wrapBits(int64_t((ua << s) | (ua >> (wa - s))), wa));
  }
  case kMulDHR: {
    int s = hasC ? shiftAmount(c) : int(wa) - 1;
    return isa::rightShiftRound(a * b, s, mode);
  }
  case kAbs:
    return a < 0 ? -a : a;
  case kFSubAbs:
    return a > b ? a - b : b - a;
  case kFirstOne:
  case kFirstZero: {
    uint64_t v = eu == kFirstOne ? ua : wrapBits(int64_t(~ua), wa);
    for (unsigned i = 0; i < wa; ++i)
      if ((v >> i) & 1)
        return i;
    return wa;
  }
  default:
    failOp(op, "sub-op " + std::to_string(eu) + " has no integer form");
  }
}

/// max / min of two floats; NaN if either is (the default NaN).
inline float floatMax(float a, float b) {
  return std::isnan(a) || std::isnan(b)
             ? std::numeric_limits<float>::quiet_NaN()
             : std::max(a, b);
}
inline float floatMin(float a, float b) {
  return std::isnan(a) || std::isnan(b)
             ? std::numeric_limits<float>::quiet_NaN()
             : std::min(a, b);
}

float floatElement(const TiuOp &op, unsigned eu, float a, float b) {
  switch (eu) {
  case kMul:
    return a * b;
  case kAdd:
    return a + b;
  case kSub:
    return a - b;
  case kMax:
    return floatMax(a, b);
  case kMin:
    return floatMin(a, b);
  case kDiv:
    return a / b;
  case kAbs:
    return std::fabs(a);
  case kFSubAbs:
    return std::fabs(a - b);
  default:
    failOp(op, "sub-op " + std::to_string(eu) + " has no float form");
  }
}

bool compareHolds(unsigned eu, double a, double b) {
  switch (eu) {
  case kSelGt:
    return a > b;
  case kSelEq:
    return a == b;
  default:
    return a < b;
  }
}

/// Stores an integer result: wrapped to the result width unless the op
/// saturates (then storeInt saturates).
void storeIntResult(const ResultView &out, bool sat, uint32_t n, uint32_t c,
                    uint32_t h, uint32_t w, int64_t v) {
  ElemType rt = out.type();
  if (!sat && !isa::isFloat(rt.prec)) {
    unsigned bits = isa::precBits(rt.prec);
    out.setBits(n, c, h, w, wrapBits(v, bits));
    return;
  }
  out.setInt(n, c, h, w, v);
}

//===----------------------------------------------------------------------===//
// AR
//===----------------------------------------------------------------------===//

void execIndexGen(const TiuOp &op, MachineState &m) {
  const isa::cmd::TiuLong &f = op.f;
  LaneGeometry geo(m.chip);
  Prec resPrec = precOf(op, f.res0_prec, "res0_prec");
  Shape4 s{uint32_t(std::max<uint64_t>(f.res0_n, 1)), uint32_t(f.res0_c),
           uint32_t(std::max<uint64_t>(f.res0_h, 1)), uint32_t(f.res0_w)};
  LocalTensor t = tiuTensor(op, geo, Opd::Res0, f.res0_addr, {resPrec, false},
                            s, unsigned(f.res0_str));
  ResultView out(m, t, "result (res0)", op, tiuLaneMask(op, geo));
  unsigned eun = geo.euNum(resPrec);
  forEachElement(s, out, [&](uint32_t n, uint32_t c, uint32_t h, uint32_t w) {
    int64_t v = op.eu == kEuIdxGen ? int64_t((uint64_t(h) * s.w + w) % eun)
                                   : int64_t(out.lane(c));
    out.setInt(n, c, h, w, v);
  });
}

//===----------------------------------------------------------------------===//
// Direct integer rows
//===----------------------------------------------------------------------===//
//
// The integer steps every INT8 model runs on each conv and residual add (the
// bias add of the int32 sums, the rescaling of an add's inputs by a
// multiplier and a shift, the shifted int32 add, the saturating cast and the
// requantisation to 8 bits) as one loop over the rows in local memory: the
// values of the general row loops (int64 arithmetic, then the store), without
// their int64 copies of every operand and result row. A row that overlaps the
// result other than exactly in place is copied first, so every row is still
// read whole before it is written.

constexpr unsigned kBitsPerByte = 8;

/// Marks an operand that is one value for the whole row.
struct RowValue {};

/// Element w of an operand row: a T at p, or v for a RowValue operand.
template <typename T>
TPUSIM_INLINE int64_t rowElem(const uint8_t *p, int64_t v, size_t w) {
  if constexpr (std::is_same_v<T, RowValue>) {
    return v;
  } else {
    T x;
    std::memcpy(&x, p + w * sizeof(T), sizeof(T));
    return int64_t(x);
  }
}

/// r[w] = low 32 bits of floor((a[w] op b[w] + 2^(s-1)) / 2^s), op the add,
/// sub or mul of AR sub-op `eu` (s = 0: a op b): shiftedRowFixed<HalfUp, EU>
/// for operands within int32, whose sums and products int64 holds exactly.
/// Without a shift the low 32 bits are those of the 32-bit wrapping op.
/// IN_PLACE: a is the result row itself (the same elements, read before they
/// are written), which lets the loop vectorise.
template <typename A, typename B, bool IN_PLACE>
TPUSIM_INLINE void shiftedRowDirectImpl(unsigned eu, const uint8_t *a,
                                        int64_t av, const uint8_t *b,
                                        int64_t bv, uint8_t *r, uint32_t n,
                                        int s) {
  if constexpr (std::is_integral_v<A> && sizeof(A) == 1 &&
                std::is_same_v<B, RowValue>) {
    // An 8-bit tensor times a multiplier below 2^22 with a shift of at most
    // 22 (the rescaling of a residual add's inputs): the product and the
    // rounding term stay below 2^31, so int32 arithmetic gives the same
    // values at twice the elements per vector.
    if (eu == kMul && s > 0 && s <= 22 && bv > -(int64_t(1) << 22) &&
        bv < (int64_t(1) << 22)) {
      const int32_t b32 = int32_t(bv), half = int32_t(1) << (s - 1);
      for (uint32_t w = 0; w < n; ++w) {
        uint32_t q =
            uint32_t((int32_t(rowElem<A>(a, av, w)) * b32 + half) >> s);
        std::memcpy(r + size_t(w) * 4, &q, 4);
      }
      return;
    }
  }
  auto run = [&](auto op) {
    const uint8_t *pa = IN_PLACE ? r : a;
    if (s == 0) {
      for (uint32_t w = 0; w < n; ++w) {
        uint32_t q =
            op(uint32_t(rowElem<A>(pa, av, w)), uint32_t(rowElem<B>(b, bv, w)));
        std::memcpy(r + size_t(w) * 4, &q, 4);
      }
      return;
    }
    const int64_t half = int64_t(1) << (s - 1);
    for (uint32_t w = 0; w < n; ++w) {
      int64_t v = op(rowElem<A>(pa, av, w), rowElem<B>(b, bv, w));
      uint32_t q = uint32_t((v + half) >> s);
      std::memcpy(r + size_t(w) * 4, &q, 4);
    }
  };
  if (eu == kAdd)
    run([](auto x, auto y) { return x + y; });
  else if (eu == kSub)
    run([](auto x, auto y) { return x - y; });
  else
    run([](auto x, auto y) { return x * y; });
}

/// r[w] = clamp(floor((x[w] * mult + 2^(s-1)) / 2^s) + zp, lo, hi) as R:
/// requantRowFixed<HalfUp> (rq1) of int32 sums into an 8-bit result.
template <typename R>
TPUSIM_INLINE void requantRowDirectImpl(const uint8_t *x, uint8_t *r,
                                        uint32_t n, int32_t mult, int s,
                                        int64_t zp, int64_t lo, int64_t hi) {
  const int64_t half = int64_t(1) << (s - 1);
  for (uint32_t w = 0; w < n; ++w) {
    // Both factors int32 (a widening signed multiply).
    int64_t v = ((rowElem<int32_t>(x, 0, w) * int64_t(mult) + half) >> s) + zp;
    R q = R(std::clamp(v, lo, hi));
    std::memcpy(r + size_t(w) * sizeof(R), &q, sizeof(R));
  }
}

/// r[w] = clamp(x[w], lo, hi) as R: the saturating int32 -> 8-bit cast.
template <typename R>
TPUSIM_INLINE void saturateRowDirectImpl(const uint8_t *x, uint8_t *r,
                                         uint32_t n, int64_t lo, int64_t hi) {
  for (uint32_t w = 0; w < n; ++w) {
    R q = R(std::clamp(rowElem<int32_t>(x, 0, w), lo, hi));
    std::memcpy(r + size_t(w) * sizeof(R), &q, sizeof(R));
  }
}

TPUSIM_BUILDS(shiftedRowDirect, shiftedRowDirectImpl,
              typename A TPUSIM_COMMA typename B TPUSIM_COMMA bool IP,
              A TPUSIM_COMMA B TPUSIM_COMMA IP,
              (unsigned eu, const uint8_t *a, int64_t av, const uint8_t *b,
               int64_t bv, uint8_t *r, uint32_t n, int s),
              (eu, a, av, b, bv, r, n, s))
TPUSIM_BUILDS(requantRowDirect, requantRowDirectImpl, typename R, R,
              (const uint8_t *x, uint8_t *r, uint32_t n, int32_t mult, int s,
               int64_t zp, int64_t lo, int64_t hi),
              (x, r, n, mult, s, zp, lo, hi))
TPUSIM_BUILDS(saturateRowDirect, saturateRowDirectImpl, typename R, R,
              (const uint8_t *x, uint8_t *r, uint32_t n, int64_t lo,
               int64_t hi),
              (x, r, n, lo, hi))

/// Calls fn(T{}) with T the C++ type of an operand of the direct loops
/// (int8_t, uint8_t, int32_t, uint32_t, or RowValue for a value per row);
/// false for other types.
template <typename Fn> bool withDirectType(ElemType t, bool value, Fn fn) {
  if (value) {
    fn(RowValue{});
    return true;
  }
  if (t.prec == Prec::Int8) {
    if (t.isSigned)
      fn(int8_t{});
    else
      fn(uint8_t{});
    return true;
  }
  if (t.prec == Prec::Int32) {
    if (t.isSigned)
      fn(int32_t{});
    else
      fn(uint32_t{});
    return true;
  }
  return false;
}

/// `in` (inBytes), or a copy of it when it overlaps the result row `res`
/// (resBytes) other than exactly in place with elements no narrower than the
/// result's (`inPlaceOk`): what the direct loops read for a row that must be
/// read whole before it is written. Tag: the scratch buffer.
template <int Tag>
const uint8_t *readableRow(const uint8_t *in, size_t inBytes,
                           const uint8_t *res, size_t resBytes,
                           bool inPlaceOk) {
  if (!in || in + inBytes <= res || res + resBytes <= in ||
      (in == res && inPlaceOk))
    return in;
  uint8_t *copy = scratch<uint8_t, Tag>(inBytes);
  std::memcpy(copy, in, inBytes);
  return copy;
}

} // namespace

void execAR(const TiuOp &op, MachineState &m) {
  const isa::cmd::TiuLong &f = op.f;
  unsigned eu = op.eu;
  if (eu == kEuIdxGen || eu == kNpuIdxGen) {
    execIndexGen(op, m);
    return;
  }
  if (eu > kFirstZero)
    failOp(op, "AR sub-op " + std::to_string(eu) + " does not exist");
  LaneGeometry geo(m.chip);
  const TiuOp &name = op;
  Shape4 rs{uint32_t(f.res0_n), uint32_t(f.res0_c), uint32_t(f.res0_h),
            uint32_t(f.res0_w)};
  Prec p0 = precOf(op, f.opd0_prec, "opd0_prec");
  Prec p1 = precOf(op, f.opd1_prec, "opd1_prec");
  Prec p2 = precOf(op, f.opd2_prec, "opd2_prec");
  Prec pr = precOf(op, f.res0_prec, "res0_prec");
  bool unary = isUnary(eu);
  unsigned opdNum = unsigned(f.tsk_opd_num);
  bool hasC = (opdNum == 3 && (takesShift(eu) || eu == kMulDHR)) ||
              eu == kSelGt || eu == kSelEq || eu == kSelLt || eu == kClamp;
  bool resSigned = eu == kCast ? bool(f.opd2_sign)
                               : bool(f.opd0_sign || (!unary && f.opd1_sign));
  ElemType t0{p0, bool(f.opd0_sign)}, t1{p1, bool(f.opd1_sign)},
      t2{p2, bool(f.opd2_sign)}, tr{pr, resSigned};

  Source a = makeSource(
      op, m, geo, Opd::Opd0, f.opd0_const, f.opd0_addr, t0,
      opdShape(eu == kCopyMB ? 1 : f.opd0_n, f.opd0_c, f.opd0_h, f.opd0_w, rs),
      unsigned(f.opd0_str), "opd0");
  if (eu == kCopyMB)
    a.shape.n = 1;
  Source b;
  if (!unary)
    b = makeSource(op, m, geo, Opd::Opd1, f.opd1_const, f.opd1_addr, t1,
                   opdShape(f.opd1_n, f.opd1_c, f.opd1_h, f.opd1_w, rs),
                   unsigned(f.opd1_str), "opd1");
  Source c;
  if (eu == kClamp) {
    // (1, C, 1, 2): lower bound then upper bound, per channel.
    if (f.opd2_const)
      failOp(op, "clamp needs its per-channel bound pair in local memory");
    c.present = true;
    c.shape = {1, rs.c, 1, 2};
    LocalTensor t;
    t.addr = uint32_t(f.opd2_addr);
    t.type = t2;
    t.shape = c.shape;
    t.stride = {0, 2, 0, 1};
    c.view = std::make_unique<OperandView>(m, t, "bounds (opd2)", name);
  } else if (hasC) {
    c = makeSource(op, m, geo, Opd::Opd2, f.opd2_const, f.opd2_addr, t2,
                   {1, rs.c, 1, 1}, unsigned(f.opd2_str), "opd2");
  }
  LocalTensor rt =
      tiuTensor(op, geo, Opd::Res0, f.res0_addr, tr, rs, unsigned(f.res0_str));
  ResultView out(m, rt, "result (res0)", name, tiuLaneMask(op, geo));

  // Rows of the arithmetic loops: (h, w) merge into one row when every
  // tensor is contiguous across rows (the common EU-aligned/compact case).
  auto contiguous = [&](const Source &s) {
    if (!s.present || s.isConst || (s.shape.h == 1 && s.shape.w == 1))
      return true;
    const Stride4 &st = s.view->tensor().stride;
    return s.shape.h == rs.h && s.shape.w == rs.w &&
           st.h == int64_t(rs.w) * st.w;
  };
  bool merge = contiguous(a) && (unary || contiguous(b)) &&
               (!hasC || contiguous(c)) &&
               rt.stride.h == int64_t(rs.w) * rt.stride.w;
  Shape4 rows = merge ? Shape4{rs.n, rs.c, 1, rs.h * rs.w} : rs;
  a.mergedRows = b.mergedRows = c.mergedRows = merge;

  bool anyFloat =
      isa::isFloat(p0) || (!unary && isa::isFloat(p1)) || isa::isFloat(pr);
  bool allFloat =
      isa::isFloat(p0) && (unary || isa::isFloat(p1)) && isa::isFloat(pr);
  RoundMode mode = eu == kDiv ? RoundMode::HalfToEven : roundModeOf(op);

  // Operands the direct integer loops read in place: whole rows of the
  // result's shape, elements contiguous; rowOf is the start of (n, c).
  auto directRow = [&](const Source &s) {
    return merge && !s.isConst && !s.rowBroadcast() && s.shape.n == rs.n &&
           s.shape.c == rs.c && s.shape.h == rs.h && s.shape.w == rs.w &&
           s.view->tensor().stride.w == 1;
  };
  auto rowOf = [&](const Source &s, uint32_t n, uint32_t ch) {
    return s.view->laneStart(ch) +
           uint64_t(s.view->index(n, ch, 0, 0)) *
               (isa::precBits(s.view->type().prec) / kBitsPerByte);
  };
  auto resultRow = [&](uint32_t n, uint32_t ch) {
    return out.laneStart(ch) + uint64_t(out.index(n, ch, 0, 0)) *
                                   (isa::precBits(pr) / kBitsPerByte);
  };

  // Ops that only move or compare values work for every type combination.
  if (eu == kCast && p0 == Prec::Int32 && t0.isSigned && pr == Prec::Int8 &&
      directRow(a) && rt.stride.w == 1) {
    // The saturating int32 -> 8-bit cast of requantised sums, in one pass.
    int64_t lo = isa::precMin(pr, tr.isSigned),
            hi = isa::precMax(pr, tr.isSigned);
    forEachRowAnyOrder(rows, out, {&a}, [&](uint32_t n, uint32_t ch, uint32_t) {
      uint8_t *r = resultRow(n, ch);
      const uint8_t *x =
          readableRow<24>(rowOf(a, n, ch), size_t(rows.w) * 4, r, rows.w, true);
      if (tr.isSigned)
        saturateRowDirect<int8_t>(x, r, rows.w, lo, hi);
      else
        saturateRowDirect<uint8_t>(x, r, rows.w, lo, hi);
    });
    return;
  }
  if (eu == kCast && !isa::isFloat(p0) && !isa::isFloat(pr) &&
      p0 != Prec::Int4 && pr != Prec::Int4) {
    // Integer to integer: the saturating store, a row at a time (which
    // cannot throw, so the channels may run on the kernel threads).
    forEachRowAnyOrder(rows, out, {&a},
                       [&](uint32_t n, uint32_t ch, uint32_t h) {
                         int64_t *row = scratch<int64_t, 20>(rows.w);
                         a.rowI(n, ch, h, rows.w, row);
                         out.storeRowInt(n, ch, h, row, rows.w, /*wrap=*/false);
                       });
    return;
  }
  if (eu == kCast) {
    forEachElement(rs, out,
                   [&](uint32_t n, uint32_t ch, uint32_t h, uint32_t w) {
                     if (isa::isFloat(p0))
                       out.setFloat(n, ch, h, w, a.f(n, ch, h, w), mode);
                     else if (isa::isFloat(pr))
                       out.setFloat(n, ch, h, w, float(a.i(n, ch, h, w)), mode);
                     else
                       out.setInt(n, ch, h, w, a.i(n, ch, h, w));
                   });
    return;
  }
  if (eu == kCopy || eu == kCopyMB) {
    if (p0 != pr)
      failOp(op, std::string("copy needs equal operand and result types (") +
                     isa::precName(p0) + " -> " + isa::precName(pr) +
                     "); use cast");
    forEachElement(rs, out,
                   [&](uint32_t n, uint32_t ch, uint32_t h, uint32_t w) {
                     out.setBits(n, ch, h, w, a.bits(n, ch, h, w));
                   });
    return;
  }
  if (eu == kSelGt || eu == kSelEq || eu == kSelLt) {
    forEachElement(
        rs, out, [&](uint32_t n, uint32_t ch, uint32_t h, uint32_t w) {
          bool hit = compareHolds(eu, a.d(n, ch, h, w), b.d(n, ch, h, w));
          if (isa::isFloat(pr))
            out.setFloat(n, ch, h, w, hit ? c.f(n, ch, h, w) : 0.0f);
          else
            out.setInt(n, ch, h, w, hit ? c.i(n, ch, h, w) : 0);
        });
    return;
  }
  if (eu == kClamp) {
    forEachElement(
        rs, out, [&](uint32_t n, uint32_t ch, uint32_t h, uint32_t w) {
          if (allFloat) {
            float lo = c.view->getFloat(0, ch, 0, 0);
            float hi = c.view->getFloat(0, ch, 0, 1);
            out.setFloat(n, ch, h, w,
                         std::min(std::max(a.f(n, ch, h, w), lo), hi));
          } else {
            int64_t lo = c.view->getInt(0, ch, 0, 0);
            int64_t hi = c.view->getInt(0, ch, 0, 1);
            out.setInt(n, ch, h, w,
                       std::min(std::max(a.i(n, ch, h, w), lo), hi));
          }
        });
    return;
  }

  if (anyFloat) {
    if (!allFloat)
      failOp(op, std::string("mixes integer and float operands (") +
                     isa::precName(p0) + ", " +
                     (unary ? "-" : isa::precName(p1)) + " -> " +
                     isa::precName(pr) + "); convert with cast first");
    if (!isFloatOp(eu))
      failOp(op, "has no float form");
    // Row by row: one type dispatch per row, plain loops inside.
    uint32_t width = rows.w;
    auto rowOp = [&](uint32_t n, uint32_t ch, uint32_t h) {
      float *ra = scratch<float, 20>(width), *rb = scratch<float, 21>(width),
            *rr = scratch<float, 22>(width);
      a.rowF(n, ch, h, width, ra);
      if (!unary)
        b.rowF(n, ch, h, width, rb);
      else
        std::fill_n(rb, width, 0.0f);
      switch (eu) {
      case kMax:
        for (uint32_t w = 0; w < width; ++w)
          rr[w] = floatMax(ra[w], rb[w]);
        break;
      case kMin:
        for (uint32_t w = 0; w < width; ++w)
          rr[w] = floatMin(ra[w], rb[w]);
        break;
      case kMac:
        out.rowFloat(n, ch, h, rr, width);
        for (uint32_t w = 0; w < width; ++w) {
          float p = ra[w] * rb[w];
          rr[w] = rr[w] + p;
        }
        break;
      case kMul:
        for (uint32_t w = 0; w < width; ++w)
          rr[w] = ra[w] * rb[w];
        break;
      case kAdd:
        for (uint32_t w = 0; w < width; ++w)
          rr[w] = ra[w] + rb[w];
        break;
      case kSub:
        for (uint32_t w = 0; w < width; ++w)
          rr[w] = ra[w] - rb[w];
        break;
      default:
        for (uint32_t w = 0; w < width; ++w)
          rr[w] = floatElement(op, eu, ra[w], rb[w]);
        break;
      }
      out.storeRowFloat(n, ch, h, rr, width);
    };
    forEachRowAnyOrder(rows, out, {&a, &b}, rowOp);
    return;
  }

  if (p0 == Prec::Int4 && eu != kNot && eu != kAnd && eu != kOr && eu != kXor)
    failOp(op, "int4 operands are supported by not/and/or/xor and cast only");
  bool sat = saturates(eu);
  uint32_t width = rows.w;
  // Add / sub / mul into int32 with one immediate right shift or none (the
  // bias add of int32 conv sums, the rescaled residual adds of INT8 models:
  // int8 x int32 multiplier >> s, then int32 + int32 >> s): the values of
  // the general loop below (int64 sums and products, shifted, the low 32
  // bits of the wrapping store) in one pass per row.
  int64_t immShift = hasC && c.isConst ? c.imm.asInt() : 0;
  if (!sat && (eu == kAdd || eu == kSub || eu == kMul) && !unary &&
      pr == Prec::Int32 && rt.stride.w == 1 &&
      (!hasC ||
       (c.isConst && immShift > 0 && immShift <= isa::kMaxSmallShift))) {
    int sh = int(immShift);
    // Operands within int32: immediates by value, tensors by type.
    auto in32 = [](const Source &src, ElemType t) {
      if (src.isConst) {
        int64_t v = src.imm.asInt();
        return v >= std::numeric_limits<int32_t>::min() &&
               v <= std::numeric_limits<int32_t>::max();
      }
      unsigned bits = isa::precBits(t.prec);
      return bits < 32 || (bits == 32 && t.isSigned);
    };
    bool x32 = in32(a, t0) && in32(b, t1);
    // One value per (n, c): an immediate, or zero h and w strides (a
    // per-channel bias or multiplier read in place) that give every element
    // of a merged row the same address.
    auto perRow = [&](const Source &s) {
      if (s.isConst || s.rowBroadcast())
        return true;
      const Stride4 &st = s.view->tensor().stride;
      return st.w == 0 && st.h == 0;
    };
    auto directOk = [&](const Source &s, ElemType t) {
      return perRow(s) ||
             (directRow(s) && withDirectType(t, false, [](auto) {}));
    };
    // The direct loops: operands within int32, or any without a shift
    // (whose low 32 bits are those of the 32-bit wrapping op).
    if (merge && (x32 || sh == 0) && (sh == 0 || mode == RoundMode::HalfUp) &&
        directOk(a, t0) && directOk(b, t1)) {
      forEachRowAnyOrder(
          rows, out, {&a, &b}, [&](uint32_t n, uint32_t ch, uint32_t) {
            uint8_t *r = resultRow(n, ch);
            size_t bytes = size_t(width) * sizeof(uint32_t);
            auto value = [&](const Source &s) {
              int64_t v;
              if (s.isConst)
                v = s.imm.asInt();
              else
                s.rowI(n, ch, 0, 1, &v);
              return v;
            };
            withDirectType(t0, perRow(a), [&](auto ta) {
              withDirectType(t1, perRow(b), [&](auto tb) {
                using A = decltype(ta);
                using B = decltype(tb);
                const uint8_t *xa = nullptr, *xb = nullptr;
                int64_t av = 0, bv = 0;
                if constexpr (std::is_same_v<A, RowValue>)
                  av = value(a);
                else
                  xa = readableRow<24>(rowOf(a, n, ch), width * sizeof(A), r,
                                       bytes, sizeof(A) >= 4);
                if constexpr (std::is_same_v<B, RowValue>)
                  bv = value(b);
                else
                  xb = readableRow<25>(rowOf(b, n, ch), width * sizeof(B), r,
                                       bytes, sizeof(B) >= 4);
                if constexpr (sizeof(A) == 4)
                  if (xa == r)
                    return shiftedRowDirect<A, B, true>(eu, xa, av, xb, bv, r,
                                                        width, sh);
                shiftedRowDirect<A, B, false>(eu, xa, av, xb, bv, r, width, sh);
              });
            });
          });
      return;
    }
    forEachRowAnyOrder(
        rows, out, {&a, &b}, [&](uint32_t n, uint32_t ch, uint32_t h) {
          int64_t *ra = scratch<int64_t, 20>(width),
                  *rb = scratch<int64_t, 21>(width);
          uint32_t *rr = scratch<uint32_t, 22>(width);
          a.rowI(n, ch, h, width, ra);
          b.rowI(n, ch, h, width, rb);
          if (eu == kAdd)
            shiftedRowOp<kAdd>(ra, rb, rr, width, sh, mode, x32);
          else if (eu == kSub)
            shiftedRowOp<kSub>(ra, rb, rr, width, sh, mode, x32);
          else
            shiftedRowOp<kMul>(ra, rb, rr, width, sh, mode, x32);
          std::memcpy(out.laneStart(ch) +
                          uint64_t(out.index(n, ch, h, 0)) * sizeof(uint32_t),
                      rr, width * sizeof(uint32_t));
        });
    return;
  }
  auto rowOp = [&](uint32_t n, uint32_t ch, uint32_t h) {
    int64_t *ra = scratch<int64_t, 20>(width),
            *rb = scratch<int64_t, 21>(width),
            *rc = scratch<int64_t, 22>(width),
            *rr = scratch<int64_t, 23>(width);
    a.rowI(n, ch, h, width, ra);
    if (!unary)
      b.rowI(n, ch, h, width, rb);
    else
      std::fill_n(rb, width, 0);
    if (hasC)
      c.rowI(n, ch, h, width, rc);
    else
      std::fill_n(rc, width, 0);
    bool plain = !hasC;
    if (eu == kMac) {
      out.rowInt(n, ch, h, rr, width);
      for (uint32_t w = 0; w < width; ++w) {
        int64_t prod = mulWrap(ra[w], rb[w]);
        if (hasC)
          prod = isa::rightShiftRound(prod, int(rc[w]), mode);
        rr[w] += prod;
      }
    } else if (plain && (eu == kAdd || eu == kAddSat)) {
      for (uint32_t w = 0; w < width; ++w)
        rr[w] = ra[w] + rb[w];
    } else if (plain && (eu == kSub || eu == kSubSat)) {
      for (uint32_t w = 0; w < width; ++w)
        rr[w] = ra[w] - rb[w];
    } else if (plain && (eu == kMul || eu == kMulSat)) {
      for (uint32_t w = 0; w < width; ++w)
        rr[w] = mulWrap(ra[w], rb[w]);
    } else if (hasC && (eu == kAdd || eu == kAddSat || eu == kSub ||
                        eu == kSubSat || eu == kMul || eu == kMulSat)) {
      // intElement's shifted add / sub / mul without its per-element
      // dispatch.
      for (uint32_t w = 0; w < width; ++w)
        rr[w] = eu == kAdd || eu == kAddSat   ? ra[w] + rb[w]
                : eu == kSub || eu == kSubSat ? ra[w] - rb[w]
                                              : mulWrap(ra[w], rb[w]);
      shiftRow(rr, rc, rr, width, mode);
    } else {
      for (uint32_t w = 0; w < width; ++w)
        rr[w] = intElement(op, eu, ra[w], rb[w], rc[w], hasC, t0, mode);
    }
    out.storeRowInt(n, ch, h, rr, width, !sat);
  };
  // The arithmetic above never throws; intElement may (an op without an
  // integer form), so the other ops run in order.
  if (eu == kMac || eu == kAdd || eu == kAddSat || eu == kSub ||
      eu == kSubSat || eu == kMul || eu == kMulSat)
    forEachRowAnyOrder(rows, out, {&a, &b, &c}, rowOp);
  else
    forEachRow(rows, out, rowOp);
}

//===----------------------------------------------------------------------===//
// CMP
//===----------------------------------------------------------------------===//

void execCMP(const TiuOp &op, MachineState &m) {
  const isa::cmd::TiuLong &f = op.f;
  constexpr unsigned kGtAndSel = 22, kSelGtC = 23, kSelEqC = 24, kLtAndSel = 25,
                     kSelLtC = 26;
  if (op.eu < kGtAndSel || op.eu > kSelLtC)
    failOp(op, "CMP sub-op " + std::to_string(op.eu) + " does not exist");
  LaneGeometry geo(m.chip);
  const TiuOp &name = op;
  Shape4 rs{uint32_t(f.res0_n), uint32_t(f.res0_c), uint32_t(f.res0_h),
            uint32_t(f.res0_w)};
  ElemType t0{precOf(op, f.opd0_prec, "opd0_prec"), bool(f.opd0_sign)};
  ElemType t2{precOf(op, f.opd2_prec, "opd2_prec"), bool(f.opd2_sign)};
  Source a = makeSource(op, m, geo, Opd::Opd0, f.opd0_const, f.opd0_addr, t0,
                        rs, unsigned(f.opd0_str), "opd0");
  Source b = makeSource(op, m, geo, Opd::Opd1, f.opd1_const, f.opd1_addr, t0,
                        rs, unsigned(f.opd1_str), "opd1");
  Source tv = makeSource(op, m, geo, Opd::Opd2, f.opd2_const, f.opd2_addr, t2,
                         rs, unsigned(f.opd2_str), "true value (opd2)");
  // opd3 has no layout field: EU-aligned.
  Source fv;
  fv.present = true;
  fv.isConst = f.opd3_const;
  fv.shape = rs;
  if (fv.isConst) {
    fv.imm = Immediate{t2, f.opd3_addr};
  } else {
    LocalTensor t = tiuTensor(op, geo, Opd::Opd2, f.opd3_addr, t2, rs, 0);
    fv.view = std::make_unique<OperandView>(m, t, "false value (opd3)", name);
  }
  bool twoResults = op.eu == kGtAndSel || op.eu == kLtAndSel;
  uint64_t mask = tiuLaneMask(op, geo);
  LocalTensor r0 = tiuTensor(op, geo, Opd::Res0, f.res0_addr,
                             twoResults ? t0 : t2, rs, unsigned(f.res0_str));
  ResultView out0(m, r0, "result (res0)", name, mask);
  std::unique_ptr<ResultView> out1;
  if (twoResults) {
    LocalTensor r1 = tiuTensor(op, geo, Opd::Res0, f.res1_addr, t2, rs, 0);
    out1 = std::make_unique<ResultView>(m, r1, "result (res1)", name, mask);
  }
  forEachElement(rs, out0, [&](uint32_t n, uint32_t c, uint32_t h, uint32_t w) {
    double av = a.d(n, c, h, w), bv = b.d(n, c, h, w);
    bool hit = op.eu == kGtAndSel || op.eu == kSelGtC ? av > bv
               : op.eu == kSelEqC                     ? av == bv
                                                      : av < bv;
    uint64_t sel = hit ? tv.bits(n, c, h, w) : fv.bits(n, c, h, w);
    if (twoResults) {
      // res0 receives the winning comparison operand.
      bool takeA = op.eu == kGtAndSel ? av >= bv : av <= bv;
      out0.setBits(n, c, h, w, takeA ? a.bits(n, c, h, w) : b.bits(n, c, h, w));
      out1->setBits(n, c, h, w, sel);
    } else {
      out0.setBits(n, c, h, w, sel);
    }
  });
}

//===----------------------------------------------------------------------===//
// LIN
//===----------------------------------------------------------------------===//

void execLIN(const TiuOp &op, MachineState &m) {
  const isa::cmd::TiuLong &f = op.f;
  constexpr unsigned kLinMac = 1, kSquareSum = 20, kSquareDiff = 21;
  if (op.eu != kLinMac && op.eu != kSquareSum && op.eu != kSquareDiff)
    failOp(op, "LIN sub-op " + std::to_string(op.eu) + " does not exist");
  LaneGeometry geo(m.chip);
  const TiuOp &name = op;
  Shape4 rs{uint32_t(f.res0_n), uint32_t(f.res0_c), uint32_t(f.res0_h),
            uint32_t(f.res0_w)};
  Prec pr = precOf(op, f.res0_prec, "res0_prec");
  Prec p0 = precOf(op, f.opd0_prec, "opd0_prec");
  Prec p1 = precOf(op, f.opd1_prec, "opd1_prec");
  Prec p2 = precOf(op, f.opd2_prec, "opd2_prec");
  if (!isa::isFloat(pr) || !isa::isFloat(p0) || !isa::isFloat(p1) ||
      (op.eu == kLinMac && !isa::isFloat(p2)))
    failOp(op, "LIN is float-only (fp32/fp16/bf16)");
  Source a = makeSource(op, m, geo, Opd::Opd0, false, f.opd0_addr, {p0, true},
                        rs, unsigned(f.opd0_str), "opd0");
  Source b =
      makeSource(op, m, geo, Opd::Opd1, f.opd1_const, f.opd1_addr, {p1, true},
                 {1, rs.c, 1, 1}, unsigned(f.opd1_str), "opd1");
  Source c;
  if (op.eu == kLinMac)
    c = makeSource(op, m, geo, Opd::Opd2, f.opd2_const, f.opd2_addr, {p2, true},
                   {1, rs.c, 1, 1}, unsigned(f.opd2_str), "opd2");
  LocalTensor rt = tiuTensor(op, geo, Opd::Res0, f.res0_addr, {pr, true}, rs,
                             unsigned(f.res0_str));
  ResultView out(m, rt, "result (res0)", name, tiuLaneMask(op, geo));
  forEachElement(rs, out, [&](uint32_t n, uint32_t ch, uint32_t h, uint32_t w) {
    float x = a.f(n, ch, h, w), y = b.f(n, ch, h, w), v;
    if (op.eu == kLinMac) {
      v = x * y;
      v = v + c.f(n, ch, h, w);
    } else {
      float s = op.eu == kSquareSum ? x + y : x - y;
      v = s * s;
    }
    out.setFloat(n, ch, h, w, v);
  });
}

//===----------------------------------------------------------------------===//
// SFU
//===----------------------------------------------------------------------===//

void execSFU(const TiuOp &op, MachineState &m) {
  const isa::cmd::TiuLong &f = op.f;
  constexpr unsigned kTaylor4x = 12, kTaylor = 13, kNormalize = 15, kRsqrt = 17;
  if (op.eu != kTaylor4x && op.eu != kTaylor && op.eu != kNormalize &&
      op.eu != kRsqrt)
    failOp(op, "SFU sub-op " + std::to_string(op.eu) + " does not exist");
  LaneGeometry geo(m.chip);
  const TiuOp &name = op;
  Shape4 rs{uint32_t(f.res0_n), uint32_t(f.res0_c), uint32_t(f.res0_h),
            uint32_t(f.res0_w)};
  Prec p0 = precOf(op, f.opd0_prec, "opd0_prec");
  Prec pr = precOf(op, f.res0_prec, "res0_prec");
  if (!isa::isFloat(p0))
    failOp(op, "SFU input must be a float type");
  if (op.eu != kNormalize && !isa::isFloat(pr))
    failOp(op, "SFU result must be a float type");
  Source a = makeSource(op, m, geo, Opd::Opd0, false, f.opd0_addr, {p0, true},
                        rs, unsigned(f.opd0_str), "opd0");
  LocalTensor rt = tiuTensor(op, geo, Opd::Res0, f.res0_addr, {pr, true}, rs,
                             unsigned(f.res0_str));
  ResultView out(m, rt, "result (res0)", name, tiuLaneMask(op, geo));

  if (op.eu == kTaylor || op.eu == kTaylor4x) {
    uint32_t len = uint32_t(f.opd1_n);
    if (len == 0)
      failOp(op, "Taylor table length (opd1_n) is zero");
    // The table: opd1_n coefficients of the input precision, at the same
    // offset of every lane (channel stride 0).
    Prec pt = precOf(op, f.opd1_prec, "opd1_prec");
    LocalTensor tt;
    tt.addr = uint32_t(f.opd1_addr);
    tt.type = {pt, true};
    tt.shape = {1, rs.c, 1, len};
    tt.stride = {0, 0, 0, 1};
    OperandView table(m, tt, "coefficient table (opd1)", name);
    forEachElement(rs, out,
                   [&](uint32_t n, uint32_t c, uint32_t h, uint32_t w) {
                     float x = a.f(n, c, h, w);
                     // Horner from the highest coefficient: y = (..(k[n-1] x +
                     // k[n-2]) x ..) + k[0].
                     float y = table.getFloat(0, c, 0, len - 1);
                     for (uint32_t i = len - 1; i-- > 0;) {
                       y = y * x;
                       y = y + table.getFloat(0, c, 0, i);
                     }
                     out.setFloat(n, c, h, w, y);
                   });
    return;
  }
  if (op.eu == kRsqrt) {
    forEachElement(rs, out,
                   [&](uint32_t n, uint32_t c, uint32_t h, uint32_t w) {
                     double x = double(a.f(n, c, h, w));
                     out.setFloat(n, c, h, w, float(1.0 / std::sqrt(x)));
                   });
    return;
  }
  // normalize: x = s * 2^e * m with m in [1, 2). Integer result: e; float
  // result: s * m (semantics.md "SFU").
  forEachElement(rs, out, [&](uint32_t n, uint32_t c, uint32_t h, uint32_t w) {
    float x = a.f(n, c, h, w);
    int e = 0;
    float frac = std::frexp(x, &e); // x = frac * 2^e, |frac| in [0.5, 1)
    if (x == 0 || !std::isfinite(x)) {
      if (isa::isFloat(pr))
        out.setFloat(n, c, h, w, x);
      else
        out.setInt(n, c, h, w, 0);
      return;
    }
    if (isa::isFloat(pr))
      out.setFloat(n, c, h, w, frac * 2.0f);
    else
      out.setInt(n, c, h, w, e - 1);
  });
}

//===----------------------------------------------------------------------===//
// RQ&DQ
//===----------------------------------------------------------------------===//

void execRQDQ(const TiuOp &op, MachineState &m) {
  const isa::cmd::TiuLong &f = op.f;
  constexpr unsigned kRq0 = 0, kRq1 = 1, kRq2 = 2, kDq0 = 3, kDq1 = 4, kDq2 = 5;
  if (op.eu > kDq2)
    failOp(op, "RQ&DQ sub-op " + std::to_string(op.eu) + " does not exist");
  LaneGeometry geo(m.chip);
  const TiuOp &name = op;
  Shape4 rs{uint32_t(f.res0_n), uint32_t(f.res0_c), uint32_t(f.res0_h),
            uint32_t(f.res0_w)};
  Prec p0 = precOf(op, f.opd0_prec, "opd0_prec");
  Prec pr = precOf(op, f.res0_prec, "res0_prec");
  ElemType t0{p0, bool(f.opd0_sign)};
  ElemType tr{pr, bool(f.opd2_sign)};
  bool isDq = op.eu == kDq0 || op.eu == kDq1 || op.eu == kDq2;
  bool floatOut = op.eu == kDq0 || op.eu == kDq2;
  if (floatOut != isa::isFloat(pr))
    failOp(op,
           std::string("result type ") + isa::precName(pr) +
               (floatOut ? " must be a float type" : " must be an integer"));
  if ((op.eu == kRq1 || isDq) && isa::isFloat(p0))
    failOp(op, "input must be an integer type");
  // rq2 / dq2: 16-bit float parameters packed into one 32-bit word
  // (semantics.md "RQ&DQ"), in the type of the float side.
  auto isHalf = [](Prec p) { return p == Prec::Fp16 || p == Prec::Bf16; };
  if (op.eu == kRq2 && !isHalf(p0))
    failOp(op, std::string("rq2 converts fp16/bf16 input, got ") +
                   isa::precName(p0));
  if (op.eu == kDq2 && !isHalf(pr))
    failOp(op, std::string("dq2 produces fp16/bf16, got ") + isa::precName(pr));
  Prec halfPrec = op.eu == kRq2 ? p0 : pr;
  auto halfToFloat = [&](uint32_t bits) {
    return halfPrec == Prec::Bf16 ? isa::bf16ToFp32(uint16_t(bits))
                                  : isa::fp16ToFp32(uint16_t(bits));
  };
  RoundMode mode = roundModeOf(op);
  Source a = makeSource(op, m, geo, Opd::Opd0, false, f.opd0_addr, t0, rs,
                        unsigned(f.opd0_str), "opd0");
  LocalTensor rt =
      tiuTensor(op, geo, Opd::Res0, f.res0_addr, tr, rs, unsigned(f.res0_str));
  ResultView out(m, rt, "result (res0)", name, tiuLaneMask(op, geo));

  // Parameters per channel: one record of int32 words at the start of each
  // channel slot of a (1, C, 1, 1) EU-aligned tensor (isa/docs/bm1684x.md 8.3).
  uint32_t paramWords = op.eu == kRq1 || op.eu == kDq1   ? 3
                        : op.eu == kRq2 || op.eu == kDq2 ? 1
                                                         : 2;
  std::unique_ptr<OperandView> params;
  if (!f.opd1_const) {
    LocalTensor pt;
    pt.addr = uint32_t(f.opd1_addr);
    pt.type = {Prec::Int32, true};
    pt.shape = {1, rs.c, 1, paramWords};
    pt.stride = {0, int64_t(geo.euNum(Prec::Int32)), 0, 1};
    params = std::make_unique<OperandView>(m, pt, "parameters (opd1)", name);
  }
  auto word = [&](uint32_t c, uint32_t i) -> uint32_t {
    return uint32_t(params->bits(0, c, 0, i));
  };
  constexpr unsigned kShiftBits = 8, kHalfBits = 16;
  // Inputs of at most 32 bits: |x| < 2^32, so x * mult (an int32) fits
  // int64 (requantRow).
  bool narrowIn = !isa::isFloat(p0) && isa::precBits(p0) <= 32;
  // Inputs within int32: signed ones of at most 32 bits, unsigned ones of
  // fewer.
  bool in32 = narrowIn && (t0.isSigned || isa::precBits(p0) < 32);
  int64_t resLo = 0, resHi = 0;
  if (!floatOut) {
    resLo = isa::precMin(pr, tr.isSigned);
    resHi = isa::precMax(pr, tr.isSigned);
  }
  // A channel at a time: its parameters, then its rows. The order shows
  // only if the results overlap the input or the parameters.
  bool anyOrder = channelOrderFree(out, *a.view) &&
                  (!params || channelOrderFree(out, *params));
  // Then nothing the command writes is read but in place, and a channel's
  // rows merge into one where they follow one another in input and result.
  const Stride4 &as = a.view->tensor().stride;
  bool merged = anyOrder && as.h == int64_t(rs.w) * as.w &&
                rt.stride.h == int64_t(rs.w) * rt.stride.w &&
                uint64_t(rs.h) * rs.w <= std::numeric_limits<uint32_t>::max();
  uint32_t width = merged ? rs.h * rs.w : rs.w;
  uint32_t rowsPerChannel = merged ? 1 : rs.h;
  // int32 sums requantised to 8 bits, rows contiguous: requantRowDirect.
  bool direct8 = p0 == Prec::Int32 && t0.isSigned && pr == Prec::Int8 &&
                 as.w == 1 && rt.stride.w == 1;
  // A merged row spans (h, w): the input is read along it, not broadcast
  // as a column of one element per row would be (w = 1, h > 1).
  a.mergedRows = merged;
  forEachChannel(out, rs.c, anyOrder, [&](uint32_t c) {
    float scale = 0, offset = 0;
    int64_t mult = 0, zp = 0;
    int shift = 0;
    switch (op.eu) {
    case kRq0:
      scale =
          isa::bitsToFloat(f.opd1_const ? uint32_t(f.opd1_addr) : word(c, 0));
      offset =
          isa::bitsToFloat(f.opd1_const ? uint32_t(f.opd2_addr) : word(c, 1));
      break;
    case kRq1:
      if (f.opd1_const) {
        mult = int32_t(uint32_t(f.opd1_addr));
        shift = int(int8_t(uint8_t(f.opd2_addr & 0xFF)));
        uint64_t zpBits = (f.opd2_addr >> kShiftBits) & 0xFFFF;
        zp = f.opd2_sign ? signExtend(zpBits, kHalfBits) : int64_t(zpBits);
      } else {
        mult = int32_t(word(c, 0));
        shift = int(int32_t(word(c, 1)));
        zp = int32_t(word(c, 2));
      }
      break;
    case kDq0:
      if (f.opd1_const) {
        zp = int32_t(uint32_t(f.opd1_addr));
        scale = isa::bitsToFloat(uint32_t(f.opd2_addr));
      } else {
        zp = int32_t(word(c, 0));
        scale = isa::bitsToFloat(word(c, 1));
      }
      break;
    case kRq2: {
      // [15:0] scale, [31:16] offset, both in the input's 16-bit type.
      uint32_t wd = f.opd1_const ? uint32_t(f.opd1_addr) : word(c, 0);
      scale = halfToFloat(wd & 0xFFFF);
      offset = halfToFloat(wd >> kHalfBits);
      break;
    }
    case kDq2: {
      // [15:0] zero point (int16, sign = opd0_sign), [31:16] scale in the
      // result's 16-bit type.
      uint32_t wd = f.opd1_const ? uint32_t(f.opd1_addr) : word(c, 0);
      zp = f.opd0_sign ? signExtend(wd & 0xFFFF, kHalfBits)
                       : int64_t(wd & 0xFFFF);
      scale = halfToFloat(wd >> kHalfBits);
      break;
    }
    case kDq1:
      if (f.opd1_const) {
        uint64_t zpBits = f.opd1_addr & 0xFFFF;
        zp = f.opd0_sign ? signExtend(zpBits, kHalfBits) : int64_t(zpBits);
        shift = int(signExtend((f.opd1_addr >> kHalfBits) & 0xFFFF, kHalfBits));
        mult = int32_t(uint32_t(f.opd2_addr));
      } else {
        zp = int32_t(word(c, 0));
        mult = int32_t(word(c, 1));
        shift = int(int32_t(word(c, 2)));
      }
      break;
    }
    // Row by row (one type dispatch per row); the same operations per
    // element in the same order as one element at a time.
    float *rowF = scratch<float, 20>(width);
    int64_t *rowI = scratch<int64_t, 20>(width);
    for (uint32_t n = 0; n < rs.n; ++n)
      for (uint32_t h = 0; h < rowsPerChannel; ++h) {
        switch (op.eu) {
        case kRq0:
        case kRq2: {
          a.rowF(n, c, h, width, rowF);
          for (uint32_t w = 0; w < width; ++w) {
            float v = rowF[w] * scale;
            rowF[w] = v + offset;
          }
          out.storeRowFloat(n, c, h, rowF, width, mode);
          break;
        }
        case kRq1:
          // The stored shift is a left shift; negative values shift right
          // (isa/docs/bm1684x.md 8.2).
          if (direct8 && -shift > 0 && -shift <= 62 &&
              mode == RoundMode::HalfUp) {
            // int32 sums to 8 bits in one pass (requantRowDirect).
            uint8_t *r = out.laneStart(c) + uint64_t(out.index(n, c, h, 0));
            const uint8_t *x = readableRow<24>(
                a.view->laneStart(c) +
                    uint64_t(a.view->index(n, c, h, 0)) * sizeof(int32_t),
                size_t(width) * sizeof(int32_t), r, width, true);
            // mult came from an int32 (a word or the immediate).
            if (tr.isSigned)
              requantRowDirect<int8_t>(x, r, width, int32_t(mult), -shift, zp,
                                       resLo, resHi);
            else
              requantRowDirect<uint8_t>(x, r, width, int32_t(mult), -shift, zp,
                                        resLo, resHi);
            break;
          }
          // isa::requantize with the result range hoisted: the exact sum
          // clamped to the result type.
          a.rowI(n, c, h, width, rowI);
          if (!(narrowIn && requantRow(rowI, rowI, width, mult, -shift, zp,
                                       resLo, resHi, mode, in32)))
            for (uint32_t w = 0; w < width; ++w) {
              __int128 sum = __int128(isa::applyMultiplierAndRShiftFast(
                                 rowI[w], mult, -shift, mode)) +
                             zp;
              rowI[w] = int64_t(std::clamp<__int128>(sum, resLo, resHi));
            }
          out.storeRowInt(n, c, h, rowI, width, /*wrap=*/false);
          break;
        case kDq0:
        case kDq2: {
          a.rowI(n, c, h, width, rowI);
          for (uint32_t w = 0; w < width; ++w)
            rowF[w] = float(rowI[w] - zp) * scale;
          out.storeRowFloat(n, c, h, rowF, width);
          break;
        }
        case kDq1:
          a.rowI(n, c, h, width, rowI);
          for (uint32_t w = 0; w < width; ++w)
            rowI[w] = isa::applyMultiplierAndRShiftFast(rowI[w] - zp, mult,
                                                        -shift, mode);
          out.storeRowInt(n, c, h, rowI, width, /*wrap=*/false);
          break;
        }
      }
  });
}

//===----------------------------------------------------------------------===//
// VC
//===----------------------------------------------------------------------===//

void execVC(const TiuOp &op, MachineState &m) {
  const isa::cmd::TiuLong &f = op.f;
  unsigned eu = op.eu;
  static constexpr unsigned kVcOps[] = {
      kMul,   kAdd,   kSub, kMax,   kMin,    kAnd,    kOr,     kXor,
      kSelGt, kSelEq, kDiv, kSelLt, kAddSat, kSubSat, kMulSat, kMulDHR};
  if (std::find(std::begin(kVcOps), std::end(kVcOps), eu) == std::end(kVcOps))
    failOp(op, "VC sub-op " + std::to_string(eu) + " does not exist");
  LaneGeometry geo(m.chip);
  const TiuOp &name = op;
  if (f.opd0_c == 0)
    failOp(op, "opd0_c is zero");
  uint32_t lenA = uint32_t((f.opd0_c - 1) * f.opd0_w + f.opd1_w);
  Shape4 rs{lenA, uint32_t(f.res0_c), 1, uint32_t(f.res0_w)};
  Prec p0 = precOf(op, f.opd0_prec, "opd0_prec");
  Prec p1 = precOf(op, f.opd1_prec, "opd1_prec");
  Prec pr = precOf(op, f.res0_prec, "res0_prec");
  ElemType t0{p0, bool(f.opd0_sign)}, t1{p1, bool(f.opd1_sign)},
      tr{pr, bool(f.opd0_sign || f.opd1_sign)};
  LocalTensor at = tiuTensor(op, geo, Opd::Opd0, f.opd0_addr, t0,
                             {1, uint32_t(f.opd0_c), 1, uint32_t(f.opd0_w)}, 0);
  OperandView a(m, at, "vector A (opd0)", name);
  LocalTensor bt =
      tiuTensor(op, geo, Opd::Opd1, f.opd1_addr, t1, {1, rs.c, 1, rs.w}, 0);
  OperandView b(m, bt, "vector B (opd1)", name);
  LocalTensor rt = tiuTensor(op, geo, Opd::Res0, f.res0_addr, tr, rs, 0);
  ResultView out(m, rt, "result (res0)", name, tiuLaneMask(op, geo));
  uint32_t aw = uint32_t(f.opd0_w);
  bool allFloat = isa::isFloat(p0) && isa::isFloat(p1) && isa::isFloat(pr);
  bool anyFloat = isa::isFloat(p0) || isa::isFloat(p1) || isa::isFloat(pr);
  if (anyFloat && !allFloat)
    failOp(op, "mixes integer and float operands");
  // VC select ops write the true value 1 (no third operand in sVC).
  RoundMode mode = roundModeOf(op);
  bool sat = saturates(eu);
  forEachElement(rs, out, [&](uint32_t i, uint32_t c, uint32_t, uint32_t w) {
    uint32_t ac = i / aw, awi = i % aw;
    if (eu == kSelGt || eu == kSelEq || eu == kSelLt) {
      bool hit = compareHolds(eu, a.get(0, ac, 0, awi), b.get(0, c, 0, w));
      if (allFloat)
        out.setFloat(i, c, 0, w, hit ? 1.0f : 0.0f);
      else
        out.setInt(i, c, 0, w, hit ? 1 : 0);
      return;
    }
    if (allFloat) {
      out.setFloat(i, c, 0, w,
                   floatElement(op, eu, a.getFloat(0, ac, 0, awi),
                                b.getFloat(0, c, 0, w)));
      return;
    }
    int64_t v = intElement(op, eu, a.getInt(0, ac, 0, awi),
                           b.getInt(0, c, 0, w), 0, false, t0, mode);
    storeIntResult(out, sat, i, c, 0, w, v);
  });
}

} // namespace detail
} // namespace tpu::sim
