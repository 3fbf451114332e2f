//===- UnaryConstants.h - Constants of the backend's function sequences ---===//
//
// The polynomial coefficients, clamp bounds and splits that the backend's
// unary sequences (compiler/backend/lib/Unary.cpp) load into TIU commands.
// The tpu interpreter (compiler/lib/Dialect/Tpu/IR/ChipMath.cpp) evaluates
// the same sequences on the host with these same constants, which is what
// makes tpusim and the interpreter agree bit for bit: change a value here
// and both follow. MLIR-free.
//
//===----------------------------------------------------------------------===//

#ifndef TPUC_BACKEND_UNARYCONSTANTS_H
#define TPUC_BACKEND_UNARYCONSTANTS_H

#include <cstdint>

namespace tpu::backend::fn_constants {

// exp: clamp bounds keep 2^n a normal float (n in [-126, 127]).
constexpr float kExpLow = -87.0f;
constexpr float kExpHigh = 88.0f;
constexpr float kLog2E = 1.44269504088896341f;
/// ln 2 split so that n * kLn2Hi is exact for |n| < 2^8 (kLn2Hi has 9
/// significant bits: 0.693359375 = 0x3F318000).
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
/// Float exponent bias and mantissa width: 2^n = bits((n + 127) << 23).
constexpr int32_t kExpBias = 127;
constexpr int32_t kMantBits = 23;
/// exp(r) = sum r^k / k!, k = 0..7.
constexpr float kExpTable[] = {1.0f,          1.0f,          0.5f,
                               1.0f / 6.0f,   1.0f / 24.0f,  1.0f / 120.0f,
                               1.0f / 720.0f, 1.0f / 5040.0f};
/// log m = s * sum c_k s^2k with c_k = 2 / (2k + 1), k = 0..5.
constexpr float kLogTable[] = {2.0f,        2.0f / 3.0f, 2.0f / 5.0f,
                               2.0f / 7.0f, 2.0f / 9.0f, 2.0f / 11.0f};
constexpr float kSqrt2 = 1.41421356237309505f;
/// Abramowitz & Stegun 7.1.26.
constexpr float kErfP = 0.3275911f;
constexpr float kErfTable[] = {0.0f,         0.254829592f,  -0.284496736f,
                               1.421413741f, -1.453152027f, 1.061405429f};
constexpr float kInvSqrt2 = 0.70710678118654752f;
/// erf x = x * sum e_k x^2k for |x| < kErfSmall (Maclaurin series,
/// e_k = 2 / sqrt(pi) * (-1)^k / (k! (2k + 1)), k = 0..5; truncation
/// < 2e-8 relative at 0.5).
constexpr float kErfSmall = 0.5f;
constexpr float kTwoOverSqrtPi = 1.12837916709551257f;
constexpr float kErfSmallTable[] = {
    kTwoOverSqrtPi,          -kTwoOverSqrtPi / 3.0f,
    kTwoOverSqrtPi / 10.0f,  -kTwoOverSqrtPi / 42.0f,
    kTwoOverSqrtPi / 216.0f, -kTwoOverSqrtPi / 1320.0f};
/// tanh x = x * sum t_k x^2k for |x| < kTanhSmall (Maclaurin series to
/// x^9; truncation < 1e-8 relative at 0.25), avoiding the cancellation of
/// 1 - 2 / (exp(2x) + 1) near 0.
constexpr float kTanhSmall = 0.25f;
constexpr float kTanhTable[] = {1.0f, -1.0f / 3.0f, 2.0f / 15.0f,
                                -17.0f / 315.0f, 62.0f / 2835.0f};
/// Floats with magnitude >= 2^23 are integers already.
constexpr float kTwoPow23 = 8388608.0f;
/// Largest integer exponent pow() expands into multiplications.
constexpr int kMaxIntPow = 16;

} // namespace tpu::backend::fn_constants

#endif // TPUC_BACKEND_UNARYCONSTANTS_H
