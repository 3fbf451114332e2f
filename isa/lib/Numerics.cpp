//===- Numerics.cpp - BM1684X fixed-point and low-precision math ----------===//
//
// See Numerics.h. Every rounding decision goes through one of the two helpers
// below (floor form for two's-complement shifts, sign-magnitude form for
// floating-point encodings), so a mode means the same thing everywhere.
//
//===----------------------------------------------------------------------===//

#include "tpu/isa/Numerics.h"

#include "tpu/isa/Error.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace tpu::isa {

namespace {

using Int128 = __int128;
using UInt128 = unsigned __int128;

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

/// Where the discarded part of a division by a power of two lies, relative
/// to half of the divisor.
enum class Frac { Zero, BelowHalf, Half, AboveHalf };

template <typename T> Frac classify(T remainder, T half) {
  if (remainder == 0)
    return Frac::Zero;
  if (remainder < half)
    return Frac::BelowHalf;
  return remainder == half ? Frac::Half : Frac::AboveHalf;
}

/// Floor form (isa/docs/bm1684x.md 8.1): the exact value is q + f with q = floor and
/// f in [0, 1) classified by \p frac; \p negative is the sign of the value.
/// Returns whether the result is q + 1 rather than q.
bool incrementFloor(bool negative, bool qOdd, Frac frac, RoundMode mode) {
  if (frac == Frac::Zero)
    return false;
  switch (mode) {
  case RoundMode::HalfToEven:
    return frac == Frac::AboveHalf || (frac == Frac::Half && qOdd);
  case RoundMode::HalfAwayFromZero:
    return frac == Frac::AboveHalf || (frac == Frac::Half && !negative);
  case RoundMode::TowardsZero:
    return negative;
  case RoundMode::Down:
    return false;
  case RoundMode::Up:
    return true;
  case RoundMode::HalfUp:
    return frac != Frac::BelowHalf;
  case RoundMode::HalfDown:
    return frac == Frac::AboveHalf;
  }
  return false;
}

/// Sign-magnitude form: the exact magnitude is q + f with q = trunc; returns
/// whether the magnitude becomes q + 1. Same modes as incrementFloor, seen
/// from the magnitude (e.g. Down grows the magnitude of negative values).
bool incrementMagnitude(bool negative, bool qOdd, Frac frac, RoundMode mode) {
  if (frac == Frac::Zero)
    return false;
  switch (mode) {
  case RoundMode::HalfToEven:
    return frac == Frac::AboveHalf || (frac == Frac::Half && qOdd);
  case RoundMode::HalfAwayFromZero:
    return frac != Frac::BelowHalf;
  case RoundMode::TowardsZero:
    return false;
  case RoundMode::Down:
    return negative;
  case RoundMode::Up:
    return !negative;
  case RoundMode::HalfUp:
    return frac == Frac::AboveHalf || (frac == Frac::Half && !negative);
  case RoundMode::HalfDown:
    return frac == Frac::AboveHalf || (frac == Frac::Half && negative);
  }
  return false;
}

int64_t saturateToInt64(Int128 v) {
  if (v > kInt64Max)
    return kInt64Max;
  if (v < kInt64Min)
    return kInt64Min;
  return static_cast<int64_t>(v);
}

/// Largest right shift that the 128-bit path performs with shifts; any larger
/// shift of a value with |x| <= 2^126 (every product of two int64) leaves
/// the quotient at 0 or -1 with the fraction strictly below / above half.
constexpr int kMaxInt128Shift = 127;

/// RightShiftRound of isa/docs/bm1684x.md 8.1 on a 128-bit value, shift > 0.
Int128 rightShiftRound128(Int128 x, int shift, RoundMode mode) {
  if (shift > kMaxInt128Shift) {
    bool negative = x < 0;
    Frac frac =
        x == 0 ? Frac::Zero : (negative ? Frac::AboveHalf : Frac::BelowHalf);
    Int128 q = negative ? -1 : 0;
    return q + incrementFloor(negative, q & 1, frac, mode);
  }
  Int128 q = x >> shift; // arithmetic shift = floor division
  UInt128 mask = (UInt128(1) << shift) - 1;
  UInt128 r = UInt128(x) & mask;
  UInt128 half = UInt128(1) << (shift - 1);
  return q + incrementFloor(x < 0, q & 1, classify(r, half), mode);
}

/// x * 2^amount, saturated to the int64 range.
int64_t leftShiftSaturate(int64_t x, int64_t amount) {
  if (x == 0 || amount == 0)
    return x;
  constexpr int64_t kBits = 64;
  if (amount >= kBits - 1)
    return x < 0 ? kInt64Min : kInt64Max;
  if (x > (kInt64Max >> amount))
    return kInt64Max;
  if (x < (kInt64Min >> amount))
    return kInt64Min;
  return static_cast<int64_t>(static_cast<uint64_t>(x) << amount);
}

/// Bit layout of a binary floating-point format narrower than fp32.
struct SmallFloat {
  int mantBits;
  int expBits;
};
constexpr SmallFloat kFp16Format{10, 5};
constexpr SmallFloat kBf16Format{7, 8};

constexpr int kFp32MantBits = 23;
constexpr uint32_t kFp32ExpMask = 0xFF;
constexpr uint32_t kFp32MantMask = (1u << kFp32MantBits) - 1;
constexpr int kFp32Bias = 127;
/// An fp32 subnormal is mantissa * 2^-149 (= 2^(1 - bias - mantBits)).
constexpr int kFp32SubnormalExp = 1 - kFp32Bias - kFp32MantBits;

/// Encodes \p x in the format \p fmt rounding per \p mode (IEEE 754 rules
/// generalised to every RoundMode).
///
/// The value is split into an integer significand `sig` and exponent `exp2`
/// (x = sig * 2^exp2, exact). With E = floor(log2|x|) and Eeff = max(E,
/// Emin), every representable magnitude near x is k * 2^(Eeff - mantBits),
/// and its pattern is ((Eeff - Emin) << mantBits) + k for k in
/// [0, 2^(mantBits+1)]: this one formula covers subnormals (Eeff = Emin),
/// the subnormal -> normal step and a carry into the next binade, so
/// rounding is only the choice of k.
uint16_t encodeSmallFloat(float x, RoundMode mode, SmallFloat fmt) {
  uint32_t bits = floatToBits(x);
  bool negative = bits >> 31;
  int totalBits = 1 + fmt.expBits + fmt.mantBits;
  uint32_t sign = uint32_t(negative) << (totalBits - 1);
  uint32_t expField = (bits >> kFp32MantBits) & kFp32ExpMask;
  uint32_t mant = bits & kFp32MantMask;
  uint32_t infBits = ((1u << fmt.expBits) - 1) << fmt.mantBits;
  uint32_t maxFinite = infBits - 1;

  if (expField == kFp32ExpMask) {
    if (mant == 0)
      return sign | infBits;
    // NaN: the public facts say nothing about the hardware's NaN output. We
    // produce a quiet NaN (top mantissa bit set) that keeps the sign and the
    // top payload bits, which is what IEEE 754 recommends and what x86 F16C
    // and Arm FCVT do, so NaN never turns into infinity.
    uint32_t quietBit = 1u << (fmt.mantBits - 1);
    return sign | infBits | quietBit | (mant >> (kFp32MantBits - fmt.mantBits));
  }
  if (expField == 0 && mant == 0)
    return sign;

  // Overflow: IEEE 754 7.4 — round-to-nearest modes give infinity, directed
  // modes give the largest finite value unless they round away from zero
  // for this sign. The hardware's fp16 overflow behaviour is not public;
  // IEEE is the most plausible and matches numpy.
  auto overflow = [&]() -> uint16_t {
    bool toInf;
    switch (mode) {
    case RoundMode::TowardsZero:
      toInf = false;
      break;
    case RoundMode::Down:
      toInf = negative;
      break;
    case RoundMode::Up:
      toInf = !negative;
      break;
    default:
      toInf = true;
      break;
    }
    return sign | (toInf ? infBits : maxFinite);
  };

  uint64_t sig;
  int exp2;
  if (expField == 0) {
    sig = mant;
    exp2 = kFp32SubnormalExp;
  } else {
    sig = mant | (1u << kFp32MantBits);
    exp2 = int(expField) - kFp32Bias - kFp32MantBits;
  }
  constexpr int kSigBits = 64;
  int e = exp2 + (kSigBits - 1 - __builtin_clzll(sig));
  int bias = (1 << (fmt.expBits - 1)) - 1;
  int eMin = 1 - bias;
  if (e > bias)
    return overflow();
  int eEff = std::max(e, eMin);
  int shift = eEff - fmt.mantBits - exp2;
  uint64_t k;
  if (shift <= 0) {
    k = sig << -shift;
  } else {
    // sig < 2^24, so for shifts beyond 25 the discarded part is nonzero and
    // below half no matter how large the shift: clamp to keep it in range.
    constexpr int kMaxUsefulShift = kFp32MantBits + 3;
    shift = std::min(shift, kMaxUsefulShift);
    uint64_t q = sig >> shift;
    uint64_t r = sig & ((uint64_t(1) << shift) - 1);
    uint64_t half = uint64_t(1) << (shift - 1);
    k = q + incrementMagnitude(negative, q & 1, classify(r, half), mode);
  }
  uint64_t magnitude = (uint64_t(eEff - eMin) << fmt.mantBits) + k;
  if (magnitude >= infBits)
    return overflow();
  return uint16_t(sign | magnitude);
}

void requireInteger(Prec p, const char *what) {
  if (isFloat(p))
    throw Error(std::string(what) + ": precision " + precName(p) +
                " is not an integer precision");
}

} // namespace

//===----------------------------------------------------------------------===//
// Saturation
//===----------------------------------------------------------------------===//

int64_t precMin(Prec p, bool isSigned) {
  requireInteger(p, "precMin");
  if (!isSigned)
    return 0;
  return -(int64_t(1) << (precBits(p) - 1));
}

int64_t precMax(Prec p, bool isSigned) {
  requireInteger(p, "precMax");
  unsigned bits = precBits(p) - (isSigned ? 1 : 0);
  return (int64_t(1) << bits) - 1;
}

int64_t saturate(int64_t v, Prec p, bool isSigned) {
  return std::clamp(v, precMin(p, isSigned), precMax(p, isSigned));
}

int8_t saturateInt8(int64_t v) {
  return int8_t(std::clamp<int64_t>(v, INT8_MIN, INT8_MAX));
}
uint8_t saturateUInt8(int64_t v) {
  return uint8_t(std::clamp<int64_t>(v, 0, UINT8_MAX));
}
int16_t saturateInt16(int64_t v) {
  return int16_t(std::clamp<int64_t>(v, INT16_MIN, INT16_MAX));
}
uint16_t saturateUInt16(int64_t v) {
  return uint16_t(std::clamp<int64_t>(v, 0, UINT16_MAX));
}
int32_t saturateInt32(int64_t v) {
  return int32_t(std::clamp<int64_t>(v, INT32_MIN, INT32_MAX));
}
uint32_t saturateUInt32(int64_t v) {
  return uint32_t(std::clamp<int64_t>(v, 0, UINT32_MAX));
}

//===----------------------------------------------------------------------===//
// Integer rounding and requantisation
//===----------------------------------------------------------------------===//

int64_t rightShiftRound(int64_t x, int shift, RoundMode mode) {
  // shift <= 0 is a left shift. The reference does it in plain int64 (and
  // wraps, or is undefined, on overflow); we saturate to the int64 range so
  // an out-of-range request can never flip the sign. Real parameters never
  // get near it.
  if (shift <= 0)
    return leftShiftSaturate(x, -int64_t(shift));
  if (shift <= kMaxSmallShift)
    return rightShiftRoundSmall(x, shift, mode);
  return saturateToInt64(rightShiftRound128(x, shift, mode));
}

int64_t roundToInt(double x, RoundMode mode) {
  // NaN -> 0 and out-of-range values saturate, the usual behaviour of
  // hardware float->int converters (the TPU's is not public).
  if (std::isnan(x))
    return 0;
  constexpr double kTwoTo63 = 9223372036854775808.0;
  if (x >= kTwoTo63)
    return kInt64Max;
  if (x <= -kTwoTo63)
    return kInt64Min;
  double f = std::floor(x);
  double fraction = x - f; // exact: x and floor(x) share the binade's ulp
  auto q = static_cast<int64_t>(f);
  return q + incrementFloor(x < 0, q & 1, classify(fraction, 0.5), mode);
}

float roundFloat(float x, RoundMode mode) {
  // Every float with |x| >= 2^23 is integral; NaN and infinities stay.
  constexpr float kTwoTo23 = 8388608.0f;
  if (!(std::fabs(x) < kTwoTo23))
    return x;
  float f = std::floor(x);
  float fraction = x - f; // exact
  auto q = static_cast<int32_t>(f);
  float r =
      f + float(incrementFloor(x < 0, q & 1, classify(fraction, 0.5f), mode));
  // Keep the sign of a zero result (-0.3 -> -0.0), like IEEE
  // roundToIntegral.
  return r == 0.0f ? std::copysign(0.0f, x) : r;
}

int64_t applyMultiplierAndRShift(int64_t v, int64_t multiplier, int rshift,
                                 RoundMode mode) {
  // The reference multiplies in int64; we keep the exact 128-bit product and
  // saturate only the final result, which is identical whenever the 64-bit
  // product does not overflow.
  int64_t product64;
  if (rshift > 0 && rshift <= kMaxSmallShift &&
      !__builtin_mul_overflow(v, multiplier, &product64))
    return rightShiftRoundSmall(product64, rshift, mode);
  Int128 product = Int128(v) * multiplier;
  if (rshift > 0)
    return saturateToInt64(rightShiftRound128(product, rshift, mode));
  int64_t narrowed = saturateToInt64(product);
  return leftShiftSaturate(narrowed, -int64_t(rshift));
}

int64_t requantize(int64_t v, int64_t multiplier, int rshift, int64_t zeroPoint,
                   RoundMode mode, Prec outPrec, bool outSigned) {
  Int128 sum =
      Int128(applyMultiplierAndRShift(v, multiplier, rshift, mode)) + zeroPoint;
  return saturate(saturateToInt64(sum), outPrec, outSigned);
}

int32_t multiplyByQuantizedMultiplier(int32_t x, int32_t multiplier, int shift,
                                      RoundMode mode) {
  constexpr int kFixedPointBits = 31; // multiplier is a Q0.31 fraction
  int64_t shifted = leftShiftSaturate(x, std::max(shift, 0));
  int32_t t = saturateInt32(saturateToInt64(rightShiftRound128(
      Int128(shifted) * multiplier, kFixedPointBits, RoundMode::HalfUp)));
  if (shift < 0)
    t = saturateInt32(rightShiftRound(t, -shift, mode));
  return t;
}

void quantizeMultiplier(double real, int32_t &multiplier, int &shift) {
  constexpr int kFixedPointBits = 31;
  constexpr int kMinShift = -31; // smaller: the multiplier rounds to nothing
  constexpr int kMaxShift = 30;  // larger: does not fit the int32 shift use
  if (real == 0.0 || std::isnan(real)) {
    multiplier = 0;
    shift = 0;
    return;
  }
  double q = std::frexp(real, &shift); // real = q * 2^shift, |q| in [0.5, 1)
  auto fixed = static_cast<int64_t>(std::round(std::ldexp(q, kFixedPointBits)));
  constexpr int64_t kOne = int64_t(1) << kFixedPointBits;
  if (fixed == kOne || fixed == -kOne) {
    fixed /= 2;
    ++shift;
  }
  if (shift < kMinShift) {
    shift = 0;
    fixed = 0;
  }
  if (shift > kMaxShift) {
    shift = kMaxShift;
    fixed = fixed < 0 ? -(kOne - 1) : kOne - 1;
  }
  multiplier = int32_t(fixed);
}

void getScaleAndShift(double scale, int64_t &multiplier, int &rshift,
                      int bitwidth) {
  constexpr int kMinShift = -32;
  constexpr int kMaxShift = 30;
  if (bitwidth < 2 || bitwidth > 64)
    throw Error("getScaleAndShift: bitwidth " + std::to_string(bitwidth) +
                " is outside [2, 64]");
  // |m| < 2^(bitwidth-1) - 1, the reference's INT_MAX / CHAR_MAX limit.
  double limit = std::ldexp(1.0, bitwidth - 1) - 1.0;
  double bestErr = std::numeric_limits<double>::infinity();
  multiplier = 0;
  rshift = 0;
  for (int n = kMinShift; n <= kMaxShift; ++n) {
    double m = std::round(std::ldexp(scale, n));
    if (!(std::fabs(m) < limit))
      continue;
    double err = std::fabs(std::ldexp(m, -n) - scale);
    if (err < bestErr) {
      bestErr = err;
      rshift = n;
      multiplier = static_cast<int64_t>(m);
    }
  }
}

//===----------------------------------------------------------------------===//
// Floating point
//===----------------------------------------------------------------------===//

uint32_t floatToBits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

float bitsToFloat(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

uint16_t fp32ToFp16(float x, RoundMode mode) {
  // The common case inline (every weight and activation conversion); the
  // same bits as encodeSmallFloat for every such input (NumericsTest
  // checks all rounding cases).
  uint32_t bits = floatToBits(x);
  uint32_t mag = bits & 0x7FFFFFFFu;
  if (mode == RoundMode::HalfToEven && fp16NormalRneInRange(mag))
    return uint16_t(((bits >> 16) & 0x8000u) | fp16NormalRneBits(mag));
  return encodeSmallFloat(x, mode, kFp16Format);
}

float fp16ToFp32(uint16_t h) {
  constexpr int kFp16MantBits = 10;
  constexpr uint32_t kFp16ExpMask = 0x1F;
  constexpr uint32_t kFp16MantMask = (1u << kFp16MantBits) - 1;
  constexpr int kFp16Bias = 15;
  constexpr int kSignShift = 16; // fp16 sign bit 15 -> fp32 sign bit 31
  uint32_t sign = uint32_t(h & 0x8000) << kSignShift;
  uint32_t expField = (h >> kFp16MantBits) & kFp16ExpMask;
  uint32_t mant = h & kFp16MantMask;
  constexpr int kMantShift = kFp32MantBits - kFp16MantBits;
  if (expField == kFp16ExpMask) {
    // Infinity, or NaN with its payload (and quiet bit) kept as is: the
    // widening is lossless for every pattern; fp32ToFp16 quiets on the way
    // back.
    return bitsToFloat(sign | (kFp32ExpMask << kFp32MantBits) |
                       (mant << kMantShift));
  }
  if (expField == 0) {
    // Zero or subnormal: mant * 2^-24, exact in fp32.
    constexpr int kFp16SubnormalExp = 1 - kFp16Bias - kFp16MantBits;
    float mag = std::ldexp(float(mant), kFp16SubnormalExp);
    return bitsToFloat(sign | floatToBits(mag));
  }
  uint32_t exp32 = expField - kFp16Bias + kFp32Bias;
  return bitsToFloat(sign | (exp32 << kFp32MantBits) | (mant << kMantShift));
}

uint16_t fp32ToBf16(float x, RoundMode mode) {
  return encodeSmallFloat(x, mode, kBf16Format);
}

float bf16ToFp32(uint16_t b) {
  constexpr int kBf16Shift = 16; // bf16 is the top half of an fp32
  return bitsToFloat(uint32_t(b) << kBf16Shift);
}

float roundToPrec(float x, Prec p) {
  switch (p) {
  case Prec::Fp32:
    return x;
  case Prec::Fp16:
    return fp16ToFp32(fp32ToFp16(x));
  case Prec::Bf16:
    return bf16ToFp32(fp32ToBf16(x));
  default:
    throw Error(std::string("roundToPrec: precision ") + precName(p) +
                " is not a float precision");
  }
}

int64_t floatToInt(float x, Prec p, bool isSigned, RoundMode mode) {
  if (std::isnan(x))
    return 0;
  return saturate(roundToInt(double(x), mode), p, isSigned);
}

int64_t quantizeInputValue(double x, float inverseScale, int64_t zeroPoint,
                           Prec p, bool isSigned) {
  return saturate(roundToInt(x * double(inverseScale) + double(zeroPoint),
                             RoundMode::HalfAwayFromZero),
                  p, isSigned);
}

} // namespace tpu::isa
