//===- Numerics.h - BM1684X fixed-point and low-precision math ---*- C++
//-*-===//
//
// The one implementation of the hardware's arithmetic primitives: saturation,
// shift-and-round in every rounding mode, requantisation (multiplier + shift +
// zero point), fp16/bf16 conversion. The compiler's reference interpreter and
// the simulator both call these; nothing else re-implements rounding.
//
// Rounding-mode semantics follow isa/docs/bm1684x.md 8.1 (RightShiftRound) and the
// requantisation formulas follow 8.2. Where the public facts are silent the
// choice made is documented beside the implementation in Numerics.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef TPU_ISA_NUMERICS_H
#define TPU_ISA_NUMERICS_H

#include "tpu/isa/Types.h"

#include <cstdint>

namespace tpu::isa {

//===----------------------------------------------------------------------===//
// Saturation
//===----------------------------------------------------------------------===//

/// Clamps \p v to the range of the integer precision \p p (Int4, Int8, Int16
/// or Int32), signed or unsigned. Throws tpu::Error for a float precision.
int64_t saturate(int64_t v, Prec p, bool isSigned);

int8_t saturateInt8(int64_t v);
uint8_t saturateUInt8(int64_t v);
int16_t saturateInt16(int64_t v);
uint16_t saturateUInt16(int64_t v);
int32_t saturateInt32(int64_t v);
uint32_t saturateUInt32(int64_t v);

/// Lowest / highest value of an integer precision (throws for floats).
int64_t precMin(Prec p, bool isSigned);
int64_t precMax(Prec p, bool isSigned);

//===----------------------------------------------------------------------===//
// Integer rounding and requantisation
//===----------------------------------------------------------------------===//

/// x / 2^shift rounded per \p mode (isa/docs/bm1684x.md 8.1). For shift <= 0 this is
/// x * 2^-shift, saturated to the int64 range.
int64_t rightShiftRound(int64_t x, int shift, RoundMode mode);

/// rightShiftRound for 0 < shift <= kMaxSmallShift in 64-bit arithmetic,
/// inline: the one implementation of those shifts (rightShiftRound calls
/// it), for the per-element loops of the simulator's kernels. The exact
/// value is q + r / 2^shift with q = floor; the rule per mode is 8.1's.
constexpr int kMaxSmallShift = 62;
inline int64_t rightShiftRoundSmall(int64_t x, int shift, RoundMode mode) {
  int64_t q = x >> shift; // arithmetic shift = floor division
  uint64_t r = uint64_t(x) & ((uint64_t(1) << shift) - 1);
  uint64_t half = uint64_t(1) << (shift - 1);
  if (r == 0)
    return q;
  bool up = false;
  switch (mode) {
  case RoundMode::HalfToEven:
    up = r > half || (r == half && (q & 1));
    break;
  case RoundMode::HalfAwayFromZero:
    up = r > half || (r == half && x >= 0);
    break;
  case RoundMode::TowardsZero:
    up = x < 0;
    break;
  case RoundMode::Down:
    up = false;
    break;
  case RoundMode::Up:
    up = true;
    break;
  case RoundMode::HalfUp:
    up = r >= half;
    break;
  case RoundMode::HalfDown:
    up = r > half;
    break;
  }
  return q + int64_t(up);
}

/// rightShiftRound with the small shifts inline.
inline int64_t rightShiftRoundFast(int64_t x, int shift, RoundMode mode) {
  if (shift > 0 && shift <= kMaxSmallShift)
    return rightShiftRoundSmall(x, shift, mode);
  return rightShiftRound(x, shift, mode);
}

/// Rounds \p x to an integer per \p mode (ties per mode), saturating to the
/// int64 range; NaN gives 0.
int64_t roundToInt(double x, RoundMode mode);

/// Rounds \p x to an integral value per \p mode; the result stays a float
/// (NaN and infinities are returned unchanged).
float roundFloat(float x, RoundMode mode);

/// rightShiftRound(v * multiplier, rshift, mode) with an exact 128-bit
/// product; the result saturates to the int64 range.
int64_t applyMultiplierAndRShift(int64_t v, int64_t multiplier, int rshift,
                                 RoundMode mode);

/// applyMultiplierAndRShift with the common case inline (a product within
/// int64 and a small right shift).
inline int64_t applyMultiplierAndRShiftFast(int64_t v, int64_t multiplier,
                                            int rshift, RoundMode mode) {
  int64_t product;
  if (rshift > 0 && rshift <= kMaxSmallShift &&
      !__builtin_mul_overflow(v, multiplier, &product))
    return rightShiftRoundSmall(product, rshift, mode);
  return applyMultiplierAndRShift(v, multiplier, rshift, mode);
}

/// saturate(applyMultiplierAndRShift(v, multiplier, rshift, mode) +
/// zeroPoint, outPrec, outSigned): the fixed-point requantisation of
/// isa/docs/bm1684x.md 8.2 / 8.3 (rq1).
int64_t requantize(int64_t v, int64_t multiplier, int rshift, int64_t zeroPoint,
                   RoundMode mode, Prec outPrec, bool outSigned);

/// TFLite-style multiply (isa/docs/bm1684x.md 8.2): x' = x << max(shift, 0);
/// t = sat_int32(rightShiftRound(x' * multiplier, 31, HalfUp)); if shift < 0,
/// t = rightShiftRound(t, -shift, mode). \p shift is a left shift.
int32_t multiplyByQuantizedMultiplier(int32_t x, int32_t multiplier, int shift,
                                      RoundMode mode);

/// Splits \p real into multiplier * 2^(shift - 31) with the multiplier in
/// [2^30, 2^31) (frexp form of isa/docs/bm1684x.md 8.2). \p shift is a left shift.
void quantizeMultiplier(double real, int32_t &multiplier, int &shift);

/// Finds multiplier / 2^rshift closest to \p scale with rshift in [-32, 30]
/// and |multiplier| < 2^(bitwidth-1) - 1 (search form of isa/docs/bm1684x.md 8.2).
/// On equal error the smallest rshift wins.
void getScaleAndShift(double scale, int64_t &multiplier, int &rshift,
                      int bitwidth = 32);

//===----------------------------------------------------------------------===//
// Floating point
//===----------------------------------------------------------------------===//

uint32_t floatToBits(float f);
float bitsToFloat(uint32_t b);

/// fp32 -> IEEE binary16, rounded per \p mode, with subnormals, infinities
/// and quiet NaNs (sign and top payload bits kept).
uint16_t fp32ToFp16(float x, RoundMode mode = RoundMode::HalfToEven);

/// The common case of fp32ToFp16(x, HalfToEven), inline for the per-element
/// loops (fp32ToFp16 itself and the simulator's kernels): for a magnitude
/// \p mag (fp32 bits without the sign) whose result is a normal, finite
/// fp16 (fp16NormalRneInRange: [2^-14, 65520)), fp16NormalRneBits is the
/// result without its sign, rounded by adding half an ulp minus one plus the
/// lowest kept bit (a carry into the next binade is the right result). Both
/// are branch-free so that row loops vectorise; any other magnitude takes
/// fp32ToFp16's general path.
inline bool fp16NormalRneInRange(uint32_t mag) {
  constexpr uint32_t kSmallestNormal = 0x38800000u; // 2^-14
  constexpr uint32_t kRoundsToInf = 0x477FF000u;    // 65520
  return mag - kSmallestNormal < kRoundsToInf - kSmallestNormal;
}
inline uint16_t fp16NormalRneBits(uint32_t mag) {
  constexpr uint32_t kRebias = uint32_t(127 - 15) << 23;
  constexpr int kDrop = 23 - 10;
  return uint16_t((mag - kRebias + ((1u << (kDrop - 1)) - 1) +
                   ((mag >> kDrop) & 1u)) >>
                  kDrop);
}
/// Exact widening of a binary16 pattern (every pattern, NaN payload kept).
float fp16ToFp32(uint16_t h);

/// fp32 -> bfloat16 rounded per \p mode; subnormals are kept (no flush),
/// NaN stays a quiet NaN.
uint16_t fp32ToBf16(float x, RoundMode mode = RoundMode::HalfToEven);
/// Exact widening: the pattern shifted into the top half of an fp32.
float bf16ToFp32(uint16_t b);

/// Rounds \p x to fp16 or bf16 (nearest-even) and widens it back; identity
/// for Fp32. Throws tpu::Error for an integer precision.
float roundToPrec(float x, Prec p);

/// Rounds \p x to an integer per \p mode and saturates it to the integer
/// precision \p p; NaN gives 0.
int64_t floatToInt(float x, Prec p, bool isSigned, RoundMode mode);

/// A real value given for a quantised net input, as its code: round half
/// away from zero of x * inverseScale + zeroPoint in double, saturated to
/// \p p (the rule of tpu-mlir's model runner; a bmodel stores the input's
/// inverse scale as fp32). tpusim and the top interpreter both quantise
/// float inputs so.
int64_t quantizeInputValue(double x, float inverseScale, int64_t zeroPoint,
                           Prec p, bool isSigned);

} // namespace tpu::isa

#endif // TPU_ISA_NUMERICS_H
