//===- ChipMath.h - Float arithmetic of the BM1684X programs ---*- C++ -*-===//
//
// What the commands the backend (compiler/backend) emits for one op compute,
// evaluated on the host in the same order and at the same precisions, so
// that the tpu dialect's interpreter reproduces tpusim bit for bit (the
// simulator's rules are simulator/docs/semantics.md):
//
//  * every step is one fp32 operation rounded to nearest even (products are
//    never fused with additions: this file is compiled without FP
//    contraction), then one rounding to the result type;
//  * CONV sums over input channels, then kernel rows, then kernel columns,
//    from +0, and adds the fp32 bias last; the depthwise PorD sums over the
//    kernel window and adds a bias rounded to the input type; MM sums over
//    K ascending and adds the fp32 bias last;
//  * pooling and reductions sum along the window / axis in index order and
//    scale by fl32(1 / count);
//  * transcendentals run the backend's fp32 sequences (Unary.cpp): the same
//    constants, Horner polynomials, Cody-Waite reductions and selects.
//
// Each function names the backend kernel it follows. When a backend kernel
// changes its order or its intermediate precisions, the function here must
// change with it (tests/unit/compiler/ChipMathTest.cpp pins the order, the
// end-to-end tests compare tpusim with the interpreter).
//
// Inputs hold values of their element type already; `Prec` selects the
// type the result (and, where the backend does so, immediates) is rounded
// to. Fp32 makes those roundings the identity.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_DIALECT_TPU_IR_CHIPMATH_H
#define TPUC_DIALECT_TPU_IR_CHIPMATH_H

#include "tpuc/Interpreter/Kernels.h"

#include "tpu/isa/Types.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace tpuc::tpu::chip {

using Prec = ::tpu::isa::Prec;

/// Rounds to \p p (nearest even); identity for Fp32.
float roundTo(float x, Prec p);

//===----------------------------------------------------------------------===//
// Convolution and matrix products (backend Conv.cpp, MatMul.cpp)
//===----------------------------------------------------------------------===//

/// conv2d: one CONV per group (per tile; a tile holds all input channels of
/// its group). acc = +0; for ic, ky, kx: acc = fl32(acc + x * w); acc =
/// fl32(acc + bias[oc]) (fp32 bias); relu (limit) and the rounding to
/// \p out are left to the caller. filter is (oc, ic / group, kh, kw); bias
/// may be null. Depthwise layers (backend::isDepthwise) use depthwise().
void conv2d(const kernels::ConvParams &p, const float *in, const float *filter,
            const float *bias, float *out, unsigned numThreads);

/// The depthwise PorD: acc = +0; for ky, kx: acc = fl32(acc + x * w); acc =
/// fl32(acc + bias[c]) with the bias rounded to \p inPrec (the backend
/// casts the fp32 bias to the input type). filter is (c, 1, kh, kw).
void depthwise(const kernels::ConvParams &p, const float *in,
               const float *filter, const float *bias, Prec inPrec, float *out,
               unsigned numThreads);

/// convTranspose2d: the CONV of the zero-inserted input with the kernel
/// rotated by 180 degrees (backend Conv.cpp), summed over the group's input
/// channels, then the virtual kernel rows and columns; then the fp32 bias.
/// filter is ONNX's (ic, oc / group, kh, kw).
void deconv2d(const kernels::ConvParams &p, const float *in,
              const float *filter, const float *bias, float *out,
              unsigned numThreads);

/// The shares a reduced index is summed in (tpu::kKSharesAttr, the
/// commands' reduced-axis slices): share i is [bounds[i], bounds[i + 1]),
/// summed from +0, then added to the shares before it in fp32; for the
/// output columns [colBegin, colEnd) (0, 0: all of them).
struct KShares {
  int64_t colBegin = 0, colEnd = 0;
  std::vector<int64_t> bounds;
};

/// numpy matmul (kernels::matmulShape's shapes) as MM sums it: over K
/// ascending from +0, or in \p shares of K for their columns. The bias is
/// added by the caller.
void matmul(const kernels::Shape &shapeA, const float *a,
            const kernels::Shape &shapeB, const float *b, bool transB,
            float *out, unsigned numThreads,
            const std::vector<KShares> &shares = {});

//===----------------------------------------------------------------------===//
// Pooling and reductions (backend Pool.cpp, Norm.cpp)
//===----------------------------------------------------------------------===//

/// 2-D average pooling of (n, c, ih, iw): the window sum in (ky, kx) order
/// (padding adds +0), then fl32(sum * fl32(1 / (kh * kw))), or, with
/// padding that does not count, fl32(sum / real elements). Not rounded.
void avgPool2d(const kernels::PoolParams &p, const float *in, float *out,
               unsigned numThreads);

/// Reduction of (outer, d, inner) along d in index order: sum, mean
/// (fl32(sum * fl32(1 / d))), max or min. Not rounded. With \p shares (one
/// entry, its bounds from 0 to d), a sum or mean is summed share by share,
/// each share's sum scaled (a mean) and then added to the shares before it.
enum class ReduceMode { Sum, Mean, Max, Min };
void reduce(ReduceMode mode, int64_t outer, int64_t d, int64_t inner,
            const float *in, float *out, const KShares *shares = nullptr);

/// Softmax / log-softmax along d of (outer, d, inner): m = max; e =
/// exp(x - m); s = sum e; y = e / s, or (x - m) - log(s). Not rounded (the
/// last AR writes the result type).
void softmax(int64_t outer, int64_t d, int64_t inner, const float *in, bool log,
             float *out);

/// Layer normalisation over the inner \p d elements of each of \p outer
/// rows: mean = fl32(sum x * fl32(1/d)); v = x - mean; var = fl32(sum v*v *
/// fl32(1/d)); r = rsqrt(var + eps); y = v * r, then * scale, + bias (fp32,
/// either may be null). Not rounded.
void layerNorm(int64_t outer, int64_t d, const float *in, const float *scale,
               const float *bias, float eps, float *out);

//===----------------------------------------------------------------------===//
// Element-wise functions (backend Unary.cpp)
//===----------------------------------------------------------------------===//

/// The fp32 sequences, for an fp32 input (the backend stages the input to
/// fp32 first, exactly). Not rounded to the result type.
float exp(float x);
float log(float x);
float erf(float x);
float sigmoid(float x);
float tanh(float x);
float silu(float x);
float gelu(float x);
/// 1 / rsqrt(x).
float sqrt(float x);
/// The SFU rsqrt: 1 / sqrt(x) in double, rounded to fp32.
float rsqrt(float x);
/// x ^ a for a constant exponent: integer |a| <= 16 by binary powering
/// (and a reciprocal for a < 0), 0.5 / -0.5 by rsqrt, else exp(a log x).
float powConst(float x, float a);

/// The functions computed in the output type (each command rounds to \p p;
/// constants are immediates of \p p).
float leakyRelu(float x, float alpha, Prec p);
float clip(float x, float lo, float hi, Prec p);
float hardSigmoid(float x, float alpha, float beta, Prec p);
float hardSwish(float x, Prec p);

/// tpu.Scale as backend scale() computes it: y = fl_p(fl_p(x * s) + b)
/// (two AR commands writing the tensor type); then, with \p doRelu, AR
/// max(y, 0), or clip(y, 0, limit, p) when \p limit > 0.
float scaleShift(float x, float s, float b, bool doRelu, float limit, Prec p);

//===----------------------------------------------------------------------===//
// INT8 (backend Conv.cpp, Pool.cpp, Elementwise.cpp; the command sequences
// of compiler/docs/design.md "INT8")
//===----------------------------------------------------------------------===//

/// One output channel's requantisation record: [bias, multiplier, -rshift,
/// zero point] (the conv's coefficient weight, (OC, 4)). TFLite's
/// arithmetic takes two RQ1 steps, records of eight words (OC, 8): [bias,
/// m1, -r1, zp1, m2, -r2, zp2, 0], the first into int32 rounding half up
/// (TFLite's rounding doubling high multiply), the second into the result
/// rounding half away from zero (its rounding divide by a power of two).
struct RequantRecord {
  int32_t bias = 0, multiplier = 1, shift = 0, zeroPoint = 0;
  bool twoSteps = false;
  int32_t multiplier2 = 1, shift2 = 0, zeroPoint2 = 0;
};

/// Requantises the int32 accumulator \p acc by record \p r: one RQ1 with
/// \p mode, or r's two steps (kTfliteRoundModes, the first into int32),
/// into \p outPrec (int8 / uint8 by \p outSigned, or int32).
int64_t requantByRecord(int64_t acc, const RequantRecord &r,
                        ::tpu::isa::RoundMode mode, bool outSigned,
                        ::tpu::isa::Prec outPrec = ::tpu::isa::Prec::Int8);

/// INT8 conv2d on the cube: acc = sum x * w over (ic, ky, kx) in int32
/// modulo 2^32 (pads read `padValue`), acc += bias (int32, wrapping: the
/// AR add), then RQ1: sat(rightShiftRound(acc * multiplier, -shift, mode)
/// + zp) to int8 / uint8 (\p outSigned). Depthwise (the sPorD) sums x * w
/// + bias in int64 and saturates to int32 before the RQ1. With
/// \p reluSigned the result is max(y, 0) afterwards (an AR max), and
/// min(y, reluHigh) after that (an AR min: a relu's upper limit inside the
/// code range, int8ReluHigh). Inputs hold integer values.
void convInt8(const kernels::ConvParams &p, const float *in, const float *filter,
              const RequantRecord *records, int32_t padValue, bool depthwise,
              bool outSigned, bool reluSigned, ::tpu::isa::RoundMode mode,
              float *out, unsigned numThreads,
              int64_t reluHigh = std::numeric_limits<int64_t>::max());

/// The code a relu's upper limit \p limit (> 0; RELU6's 6) clamps an int8
/// / uint8 result of \p scale and \p zeroPoint to: zp + round(limit /
/// scale), half away from zero (TFLite's activation range); none when
/// there is no limit or it lies at or beyond the largest code (the
/// saturation does it).
std::optional<int64_t> int8ReluHigh(bool doRelu, double limit, double scale,
                                    int64_t zeroPoint, bool isSigned);

/// INT8 transposed convolution as the cube runs it (the float deconv2d's
/// zero-inserted input and rotated kernel; ONNX filter (IC, OC / group, KH,
/// KW)): int32 sums modulo 2^32 (inserted zeros and pads are code 0: the
/// input's zero point is 0), then the AR add of the bias and RQ1 as
/// convInt8.
void deconvInt8(const kernels::ConvParams &p, const float *in,
                const float *filter, const RequantRecord *records,
                bool outSigned, bool reluSigned, ::tpu::isa::RoundMode mode,
                float *out, unsigned numThreads,
                int64_t reluHigh = std::numeric_limits<int64_t>::max());

/// INT8 average pooling: the window sum of q - inZeroPoint (pads add 0:
/// the command pads with the zero point and an AR takes k * zp off) in
/// int64, saturated to int32, then RQ1 with the immediates (multiplier,
/// rshift, outZeroPoint).
void avgPoolInt8(const kernels::PoolParams &p, const float *in,
                 int64_t multiplier, int rshift, int64_t inZeroPoint,
                 int64_t outZeroPoint, bool outSigned,
                 ::tpu::isa::RoundMode mode, float *out, unsigned numThreads);

/// TFLite's int8 ADD / SUB (\p sub) as the chip runs it: per input t_k =
/// x_k - zp_k (AR, int32), then the two RQ1 steps of \p in[k] into int32
/// (its (x << 20) * m >> 31 rounding half up, then the rounding divide);
/// y = the two steps of \p out (zero point in its second) applied to
/// t_a +/- t_b, saturated to int8 / uint8.
int64_t addInt8Tflite(int64_t a, int64_t b, const int64_t zeroPoint[2],
                      const RequantRecord in[2], const RequantRecord &out,
                      bool sub, bool outSigned);

/// INT8 add (\p sub: subtract) of rescaled inputs: t_x =
/// rightShiftRound((x - zp_x) * m_x, r_x) for both, y =
/// sat(rightShiftRound(t_a +/- t_b, fraction) + outZeroPoint).
int64_t addInt8(int64_t a, int64_t b, const int64_t mult[2],
                const int64_t rshift[2], const int64_t zeroPoint[2],
                int64_t outZeroPoint, int fraction, bool sub, bool outSigned,
                ::tpu::isa::RoundMode mode);

/// INT8 matmul of a (M, K) left and a (K, N) (or, with \p transB, (N, K))
/// right matrix as the MM computes it: int32 sums modulo 2^32, + the int32
/// bias (null: none; the AR add wraps), then RQ1 with the immediates to
/// int8 / uint8. (With K split into chunks the MM saturates each partial
/// sum to int32: equal unless a partial sum overflows, K > 133000.)
/// The requantisation is \p rq's (its bias unused): one RQ1, or TFLite's
/// two steps.
void matmulInt8(int64_t m, int64_t k, int64_t n, const float *a,
                const float *b, bool transB, const int32_t *bias,
                const RequantRecord &rq, bool outSigned,
                ::tpu::isa::RoundMode mode, float *out);

/// Float -> int8 / uint8 as rq0: sat(round(fl32(fl32(x * fl32(1 / scale))
/// + zp))) rounded per \p mode.
float quantizeRq0(float x, double scale, int64_t zeroPoint, bool isSigned,
                  ::tpu::isa::RoundMode mode);
/// int8 / uint8 -> float as dq0: fl32(float(q - zp) * fl32(scale)) (the
/// caller rounds to a 16-bit result type).
float dequantizeDq0(float q, double scale, int64_t zeroPoint);

} // namespace tpuc::tpu::chip

#endif // TPUC_DIALECT_TPU_IR_CHIPMATH_H
