//===- ChipMath.cpp - The float arithmetic of the BM1684X programs --------===//
//
// See ChipMath.h. The loops are arranged for speed (output columns
// innermost, so they vectorise) but every output element sees exactly the
// sequence of fp32 operations its command performs in the simulator.
//
//===----------------------------------------------------------------------===//
#include "tpuc/Dialect/Tpu/IR/ChipMath.h"
#include "tpuc/Dialect/Tpu/IR/Int8.h"

#include "tpu/isa/Numerics.h"
#include "tpuc/Backend/UnaryConstants.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>

// The order of fp32 roundings is the point of this file: a product must be
// rounded before it is added, as the simulator does.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace tpuc::tpu::chip {

namespace isa = ::tpu::isa;

float roundTo(float x, Prec p) {
  return p == Prec::Fp32 ? x : isa::roundToPrec(x, p);
}

namespace {

using kernels::validRange;

/// acc[o] = fl32(acc[o] + fl32(w * x[o * stride])) for o in [lo, hi).
inline void macRow(float *acc, const float *x, float w, int64_t stride,
                   int64_t lo, int64_t hi) {
  if (stride == 1) {
    for (int64_t o = lo; o < hi; ++o)
      acc[o] = acc[o] + w * x[o];
  } else {
    for (int64_t o = lo; o < hi; ++o)
      acc[o] = acc[o] + w * x[o * stride];
  }
}

/// The AR max / min of the simulator: a NaN operand wins.
inline float arMax(float a, float b) {
  return std::isnan(a) || std::isnan(b)
             ? std::numeric_limits<float>::quiet_NaN()
             : std::max(a, b);
}
inline float arMin(float a, float b) {
  return std::isnan(a) || std::isnan(b)
             ? std::numeric_limits<float>::quiet_NaN()
             : std::min(a, b);
}

} // namespace

//===----------------------------------------------------------------------===//
// Convolution and matrix products
//===----------------------------------------------------------------------===//

void conv2d(const kernels::ConvParams &p, const float *in, const float *filter,
            const float *bias, float *out, unsigned numThreads) {
  int64_t icg = p.ic / p.group, ocg = p.oc / p.group;
  int64_t inPlane = p.ih * p.iw, outPlane = p.oh * p.ow;
  int64_t kArea = p.kh * p.kw;
  // Valid output columns per kernel column.
  std::vector<int64_t> oxLo(p.kw), oxHi(p.kw);
  for (int64_t kx = 0; kx < p.kw; ++kx)
    validRange(kx * p.dw - p.pl, p.sw, p.iw, p.ow, oxLo[kx], oxHi[kx]);
  kernels::parallelFor(numThreads, p.n * p.oc, 1, [&](int64_t b, int64_t e) {
    std::vector<float> acc(p.ow);
    for (int64_t idx = b; idx < e; ++idx) {
      int64_t n = idx / p.oc, oc = idx % p.oc, g = oc / ocg;
      const float *src = in + (n * p.ic + g * icg) * inPlane;
      const float *w = filter + oc * icg * kArea;
      float *dst = out + idx * outPlane;
      for (int64_t oy = 0; oy < p.oh; ++oy) {
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t c = 0; c < icg; ++c) {
          const float *plane = src + c * inPlane;
          for (int64_t ky = 0; ky < p.kh; ++ky) {
            int64_t iy = oy * p.sh + ky * p.dh - p.pt;
            if (iy < 0 || iy >= p.ih)
              continue; // padding adds +0
            const float *row = plane + iy * p.iw;
            const float *wr = w + (c * p.kh + ky) * p.kw;
            for (int64_t kx = 0; kx < p.kw; ++kx)
              macRow(acc.data(), row + kx * p.dw - p.pl, wr[kx], p.sw, oxLo[kx],
                     oxHi[kx]);
          }
        }
        float bv = bias ? bias[oc] : 0.0f;
        for (int64_t ox = 0; ox < p.ow; ++ox)
          dst[oy * p.ow + ox] = acc[ox] + bv;
      }
    }
  });
}

void depthwise(const kernels::ConvParams &p, const float *in,
               const float *filter, const float *bias, Prec inPrec, float *out,
               unsigned numThreads) {
  int64_t inPlane = p.ih * p.iw, outPlane = p.oh * p.ow;
  std::vector<int64_t> oxLo(p.kw), oxHi(p.kw);
  for (int64_t kx = 0; kx < p.kw; ++kx)
    validRange(kx * p.dw - p.pl, p.sw, p.iw, p.ow, oxLo[kx], oxHi[kx]);
  kernels::parallelFor(numThreads, p.n * p.oc, 1, [&](int64_t b, int64_t e) {
    for (int64_t idx = b; idx < e; ++idx) {
      int64_t n = idx / p.oc, c = idx % p.oc;
      const float *src = in + (n * p.ic + c) * inPlane;
      float *dst = out + idx * outPlane;
      std::fill(dst, dst + outPlane, 0.0f); // +0: padding adds nothing
      for (int64_t ky = 0; ky < p.kh; ++ky) {
        int64_t oyLo, oyHi;
        validRange(ky * p.dh - p.pt, p.sh, p.ih, p.oh, oyLo, oyHi);
        for (int64_t kx = 0; kx < p.kw; ++kx) {
          float w = filter[(c * p.kh + ky) * p.kw + kx];
          for (int64_t oy = oyLo; oy < oyHi; ++oy)
            macRow(dst + oy * p.ow,
                   src + (oy * p.sh + ky * p.dh - p.pt) * p.iw + kx * p.dw -
                       p.pl,
                   w, p.sw, oxLo[kx], oxHi[kx]);
        }
      }
      if (bias) {
        float bv = roundTo(bias[c], inPrec);
        for (int64_t i = 0; i < outPlane; ++i)
          dst[i] = dst[i] + bv;
      }
    }
  });
}

void deconv2d(const kernels::ConvParams &p, const float *in,
              const float *filter, const float *bias, float *out,
              unsigned numThreads) {
  int64_t icg = p.ic / p.group, ocg = p.oc / p.group;
  int64_t inPlane = p.ih * p.iw, outPlane = p.oh * p.ow;
  int64_t kArea = p.kh * p.kw;
  // The equivalent convolution: stride 1 over the input with sh - 1 / sw - 1
  // zeros inserted, pads d * (k - 1) - pad (negative: cropped), kernel
  // rotated. Virtual row oy + ky * dh - padT holds input row (that) / sh
  // when it is a multiple of sh.
  int64_t padT = p.dh * (p.kh - 1) - p.pt;
  int64_t padL = p.dw * (p.kw - 1) - p.pl;
  kernels::parallelFor(numThreads, p.n * p.oc, 1, [&](int64_t b, int64_t e) {
    std::vector<float> acc(p.ow);
    for (int64_t idx = b; idx < e; ++idx) {
      int64_t n = idx / p.oc, oc = idx % p.oc, g = oc / ocg, o = oc % ocg;
      float *dst = out + idx * outPlane;
      for (int64_t oy = 0; oy < p.oh; ++oy) {
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t c = 0; c < icg; ++c) {
          const float *plane = in + (n * p.ic + g * icg + c) * inPlane;
          // ONNX filter (ic, ocg, kh, kw); the command reads it rotated.
          const float *w = filter + ((g * icg + c) * ocg + o) * kArea;
          for (int64_t ky = 0; ky < p.kh; ++ky) {
            int64_t vy = oy + ky * p.dh - padT;
            if (vy < 0 || vy % p.sh != 0 || vy / p.sh >= p.ih)
              continue;
            const float *row = plane + (vy / p.sh) * p.iw;
            for (int64_t kx = 0; kx < p.kw; ++kx) {
              float wv = w[(p.kh - 1 - ky) * p.kw + (p.kw - 1 - kx)];
              // Columns whose virtual column ox + off is a real one.
              int64_t off = kx * p.dw - padL;
              int64_t ox = off >= 0 ? 0 : -off;
              int64_t r = (ox + off) % p.sw;
              if (r)
                ox += p.sw - r;
              for (; ox < p.ow; ox += p.sw) {
                int64_t ix = (ox + off) / p.sw;
                if (ix >= p.iw)
                  break;
                acc[ox] = acc[ox] + wv * row[ix];
              }
            }
          }
        }
        float bv = bias ? bias[oc] : 0.0f;
        for (int64_t ox = 0; ox < p.ow; ++ox)
          dst[oy * p.ow + ox] = acc[ox] + bv;
      }
    }
  });
}

namespace {

/// c (m x n) = a (m x k) * b (k x n), each element summed over k ascending.
void gemmOrdered(int64_t m, int64_t n, int64_t k, const float *a,
                 const float *b, float *c, unsigned numThreads) {
  int64_t grain =
      std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, n * k));
  kernels::parallelFor(numThreads, m, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      float *row = c + i * n;
      std::fill(row, row + n, 0.0f);
      for (int64_t kk = 0; kk < k; ++kk) {
        float av = a[i * k + kk];
        const float *brow = b + kk * n;
        for (int64_t j = 0; j < n; ++j)
          row[j] = row[j] + av * brow[j];
      }
    }
  });
}

/// The columns \p s holds of c (m x n) = a (m x k) * b (k x n) again, share
/// by share of K: the first summed into c from +0, each other one into a
/// row of its own from +0 and then added to c (the commands' reduced-axis
/// slices).
void gemmShares(int64_t m, int64_t n, int64_t k, const float *a, const float *b,
                float *c, const KShares &s, unsigned numThreads) {
  int64_t c0 = s.colBegin, w = (s.colEnd ? s.colEnd : n) - c0;
  kernels::parallelFor(numThreads, m, 1, [&](int64_t r0, int64_t r1) {
    std::vector<float> part(static_cast<size_t>(w));
    for (int64_t i = r0; i < r1; ++i) {
      float *row = c + i * n + c0;
      for (size_t sh = 0; sh + 1 < s.bounds.size(); ++sh) {
        float *dst = sh == 0 ? row : part.data();
        std::fill(dst, dst + w, 0.0f);
        for (int64_t kk = s.bounds[sh]; kk < s.bounds[sh + 1]; ++kk) {
          float av = a[i * k + kk];
          const float *brow = b + kk * n + c0;
          for (int64_t j = 0; j < w; ++j)
            dst[j] = dst[j] + av * brow[j];
        }
        if (sh > 0)
          for (int64_t j = 0; j < w; ++j)
            row[j] = row[j] + part[size_t(j)];
      }
    }
  });
}

} // namespace

void matmul(const kernels::Shape &shapeA, const float *a,
            const kernels::Shape &shapeB, const float *b, bool transB,
            float *out, unsigned numThreads,
            const std::vector<KShares> &shares) {
  std::optional<kernels::MatmulPlan> plan =
      kernels::planMatmul(shapeA, shapeB, transB);
  assert(plan && "matmul operands checked by matmulShape");
  const kernels::MatmulPlan &p = *plan;
  int64_t m = p.m, n = p.n, k = p.k, sizeB = k * n;
  // Right operands as (k x n).
  std::vector<float> bt;
  const float *right = b;
  if (transB) {
    bt.resize(size_t(p.numRight * sizeB));
    for (int64_t i = 0; i < p.numRight; ++i)
      for (int64_t r = 0; r < n; ++r)
        for (int64_t kk = 0; kk < k; ++kk)
          bt[size_t(i * sizeB + kk * n + r)] = b[i * sizeB + r * k + kk];
    right = bt.data();
  }
  // The columns no share covers (the shares' column ranges are disjoint)
  // are one pass over K.
  int64_t shared = 0;
  for (const KShares &s : shares)
    shared += (s.colEnd ? s.colEnd : n) - s.colBegin;
  bool onePass = shared < n;
  if (p.sharedRight) {
    if (onePass)
      gemmOrdered(p.numBatch * m, n, k, a, right, out, numThreads);
    for (const KShares &s : shares)
      gemmShares(p.numBatch * m, n, k, a, right, out, s, numThreads);
    return;
  }
  kernels::parallelFor(numThreads, p.numBatch, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t i = b0; i < b1; ++i) {
      if (onePass)
        gemmOrdered(m, n, k, a + p.leftOffset(i), right + p.rightOffset(i),
                    out + p.outOffset(i), 1);
      for (const KShares &s : shares)
        gemmShares(m, n, k, a + p.leftOffset(i), right + p.rightOffset(i),
                   out + p.outOffset(i), s, 1);
    }
  });
}

//===----------------------------------------------------------------------===//
// Pooling and reductions
//===----------------------------------------------------------------------===//

void avgPool2d(const kernels::PoolParams &p, const float *in, float *out,
               unsigned numThreads) {
  int64_t planes = p.inShape[0] * p.inShape[1];
  int64_t ih = p.inShape[2], iw = p.inShape[3];
  int64_t oh = p.outShape[2], ow = p.outShape[3];
  int64_t kh = p.kernel[0], kw = p.kernel[1];
  int64_t sh = p.strides[0], sw = p.strides[1];
  int64_t pt = p.pads[0], pl = p.pads[1], pb = p.pads[2], pr = p.pads[3];
  bool countReal = !p.countIncludePad && (pt || pl || pb || pr);
  float scale = 1.0f / float(kh * kw);
  kernels::parallelFor(numThreads, planes, 1, [&](int64_t b, int64_t e) {
    for (int64_t pIdx = b; pIdx < e; ++pIdx) {
      const float *src = in + pIdx * ih * iw;
      float *dst = out + pIdx * oh * ow;
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          float acc = 0.0f, count = 0.0f;
          for (int64_t ky = 0; ky < kh; ++ky) {
            int64_t iy = oy * sh + ky - pt;
            if (iy < 0 || iy >= ih)
              continue;
            for (int64_t kx = 0; kx < kw; ++kx) {
              int64_t ix = ox * sw + kx - pl;
              if (ix < 0 || ix >= iw)
                continue;
              acc = acc + src[iy * iw + ix];
              count = count + 1.0f;
            }
          }
          dst[oy * ow + ox] = countReal ? acc / count : acc * scale;
        }
    }
  });
}

void reduce(ReduceMode mode, int64_t outer, int64_t d, int64_t inner,
            const float *in, float *out, const KShares *shares) {
  bool isMax = mode == ReduceMode::Max, isMin = mode == ReduceMode::Min;
  float scale = mode == ReduceMode::Mean ? 1.0f / float(d) : 1.0f;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const float *x = in + o * d * inner + i;
      float acc;
      if (isMax || isMin) {
        // min runs as -max(-x) (exact negations).
        acc = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < d; ++j)
          acc = std::max(acc, isMin ? -x[j * inner] : x[j * inner]);
        acc = isMin ? -acc : acc;
      } else if (shares) {
        // Each share's sum, scaled, then added: the reduced-axis slices.
        acc = 0.0f;
        for (size_t sh = 0; sh + 1 < shares->bounds.size(); ++sh) {
          float part = 0.0f;
          for (int64_t j = shares->bounds[sh]; j < shares->bounds[sh + 1]; ++j)
            part = part + x[j * inner];
          part = part * scale;
          acc = sh == 0 ? part : acc + part;
        }
      } else {
        acc = 0.0f;
        for (int64_t j = 0; j < d; ++j)
          acc = acc + x[j * inner];
        acc = acc * scale;
      }
      out[o * inner + i] = acc;
    }
}

void softmax(int64_t outer, int64_t d, int64_t inner, const float *in, bool log,
             float *out) {
  std::vector<float> diff(d), ex(d);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const float *x = in + o * d * inner + i;
      float *y = out + o * d * inner + i;
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < d; ++j)
        m = std::max(m, x[j * inner]);
      float sum = 0.0f;
      for (int64_t j = 0; j < d; ++j) {
        diff[j] = x[j * inner] - m;
        ex[j] = chip::exp(diff[j]);
      }
      for (int64_t j = 0; j < d; ++j)
        sum = sum + ex[j];
      sum = sum * 1.0f; // the pooling's scale
      if (log) {
        float ls = chip::log(sum);
        for (int64_t j = 0; j < d; ++j)
          y[j * inner] = diff[j] - ls;
      } else {
        for (int64_t j = 0; j < d; ++j)
          y[j * inner] = ex[j] / sum;
      }
    }
}

void layerNorm(int64_t outer, int64_t d, const float *in, const float *scale,
               const float *bias, float eps, float *out) {
  float inv = 1.0f / float(d);
  std::vector<float> v(d);
  for (int64_t o = 0; o < outer; ++o) {
    const float *x = in + o * d;
    float *y = out + o * d;
    float mean = 0.0f;
    for (int64_t j = 0; j < d; ++j)
      mean = mean + x[j];
    mean = mean * inv;
    float var = 0.0f;
    for (int64_t j = 0; j < d; ++j) {
      v[j] = x[j] - mean;
      var = var + v[j] * v[j];
    }
    var = var * inv;
    var = var + eps;
    float r = rsqrt(var);
    for (int64_t j = 0; j < d; ++j) {
      float t = v[j] * r;
      if (scale)
        t = t * scale[j];
      if (bias)
        t = t + bias[j];
      y[j] = t;
    }
  }
}

//===----------------------------------------------------------------------===//
// Element-wise functions (the constants and sequences of backend Unary.cpp)
//===----------------------------------------------------------------------===//

namespace {

using namespace ::tpu::backend::fn_constants; // shared with backend Unary.cpp

/// The SFU Taylor command: Horner from the highest coefficient.
template <size_t N> float horner(const float (&k)[N], float x) {
  float y = k[N - 1];
  for (size_t i = N - 1; i-- > 0;) {
    y = y * x;
    y = y + k[i];
  }
  return y;
}

/// AR mac: fl32(old + fl32(a * b)).
inline float mac(float old, float a, float b) { return old + a * b; }

/// AR cast fp32 -> int32, nearest even, saturating.
inline int32_t toInt32(float x) {
  return int32_t(
      isa::floatToInt(x, Prec::Int32, true, isa::RoundMode::HalfToEven));
}

} // namespace

float exp(float x) {
  float t1 = arMax(x, kExpLow);
  t1 = arMin(t1, kExpHigh);
  float d = t1 * kLog2E;
  int32_t n = toInt32(d);
  d = float(n);
  t1 = mac(t1, d, -kLn2Hi);
  t1 = mac(t1, d, -kLn2Lo);
  d = horner(kExpTable, t1);
  // 2^n from the exponent bits (int32 add wraps, the shift is logical).
  uint32_t bits = uint32_t(n) + uint32_t(kExpBias);
  bits <<= kMantBits;
  return d * isa::bitsToFloat(bits);
}

float log(float x) {
  // SFU normalize: x = s * m * 2^e, m in [1, 2); 0 / inf / NaN give e = 0
  // and m = x.
  int32_t e = 0;
  float t1 = x;
  if (x != 0 && std::isfinite(x)) {
    int ex = 0;
    float frac = std::frexp(x, &ex);
    e = ex - 1;
    t1 = frac * 2.0f;
  }
  float d = float(e);
  float t2 = d + 1.0f;
  d = t1 > kSqrt2 ? t2 : d;
  t2 = t1 * 0.5f;
  t1 = t1 > kSqrt2 ? t2 : t1;
  t2 = t1 + 1.0f;
  t1 = t1 - 1.0f;
  t1 = t1 / t2;
  t2 = t1 * t1;
  t2 = horner(kLogTable, t2);
  t2 = t2 * t1;
  t2 = mac(t2, d, kLn2Lo);
  d = d * kLn2Hi;
  d = d + t2;
  return x > 0.0f ? d : -std::numeric_limits<float>::infinity();
}

float erf(float x) {
  float t1 = std::fabs(x);
  float d = t1 * kErfP;
  d = d + 1.0f;
  d = 1.0f / d;
  d = horner(kErfTable, d);
  t1 = t1 * t1;
  t1 = t1 * -1.0f;
  t1 = chip::exp(t1);
  d = d * t1;
  d = 1.0f - d;
  t1 = d * -1.0f;
  d = x < 0.0f ? t1 : d;
  // Small arguments: the Maclaurin series.
  t1 = x * x;
  t1 = horner(kErfSmallTable, t1);
  t1 = t1 * x;
  return std::fabs(x) < kErfSmall ? t1 : d;
}

float sigmoid(float x) {
  float d = x * -1.0f;
  d = chip::exp(d);
  d = d + 1.0f;
  return 1.0f / d;
}

float tanh(float x) {
  float d = x * 2.0f;
  d = chip::exp(d);
  d = d + 1.0f;
  d = 2.0f / d;
  d = 1.0f - d;
  float t1 = x * x;
  t1 = horner(kTanhTable, t1);
  t1 = t1 * x;
  return std::fabs(x) < kTanhSmall ? t1 : d;
}

float silu(float x) { return sigmoid(x) * x; }

float gelu(float x) {
  float u = x * kInvSqrt2;
  float d = chip::erf(u);
  d = d + 1.0f;
  d = d * x;
  return d * 0.5f;
}

float rsqrt(float x) { return float(1.0 / std::sqrt(double(x))); }

float sqrt(float x) { return 1.0f / rsqrt(x); }

float powConst(float x, float a) {
  if (a == std::round(a) && std::fabs(a) <= kMaxIntPow) {
    int n = int(a), m = n < 0 ? -n : n;
    if (m == 0)
      return 1.0f;
    float t = x, d = 0.0f;
    bool have = false;
    while (m) {
      if (m & 1) {
        d = have ? d * t : t;
        have = true;
      }
      m >>= 1;
      if (m)
        t = t * t;
    }
    return n < 0 ? 1.0f / d : d;
  }
  if (a == 0.5f)
    return sqrt(x);
  if (a == -0.5f)
    return rsqrt(x);
  float d = chip::log(x);
  d = d * a;
  return chip::exp(d);
}

float leakyRelu(float x, float alpha, Prec p) {
  float t = roundTo(x * roundTo(alpha, p), p);
  return alpha <= 1.0f ? arMax(x, t) : arMin(x, t);
}

float clip(float x, float lo, float hi, Prec p) {
  return arMin(arMax(x, roundTo(lo, p)), roundTo(hi, p));
}

float scaleShift(float x, float s, float b, bool doRelu, float limit, Prec p) {
  float y = roundTo(roundTo(x * s, p) + b, p);
  if (!doRelu)
    return y;
  return limit > 0 ? clip(y, 0.0f, limit, p) : arMax(y, 0.0f);
}

float hardSigmoid(float x, float alpha, float beta, Prec p) {
  // LIN mac with immediates of the tensor type, one rounding; then clamps.
  float t = roundTo(x * roundTo(alpha, p) + roundTo(beta, p), p);
  t = arMax(t, 0.0f);
  return arMin(t, 1.0f);
}

float hardSwish(float x, Prec p) {
  return roundTo(x * hardSigmoid(x, 1.0f / 6.0f, 0.5f, p), p);
}

//===----------------------------------------------------------------------===//
// INT8
//===----------------------------------------------------------------------===//

namespace {
namespace isa = ::tpu::isa;
} // namespace

int64_t requantByRecord(int64_t acc, const RequantRecord &r,
                        isa::RoundMode mode, bool outSigned, isa::Prec outPrec) {
  if (!r.twoSteps)
    return isa::requantize(acc, r.multiplier, -r.shift, r.zeroPoint, mode,
                           outPrec, outSigned);
  int64_t t = isa::requantize(acc, r.multiplier, -r.shift, r.zeroPoint,
                              kTfliteRoundModes[0], isa::Prec::Int32, true);
  return isa::requantize(t, r.multiplier2, -r.shift2, r.zeroPoint2,
                         kTfliteRoundModes[1], outPrec, outSigned);
}

std::optional<int64_t> int8ReluHigh(bool doRelu, double limit, double scale,
                                    int64_t zeroPoint, bool isSigned) {
  if (!doRelu || !(limit > 0))
    return std::nullopt;
  int64_t high = zeroPoint + isa::roundToInt(limit / scale,
                                             isa::RoundMode::HalfAwayFromZero);
  if (high >= (isSigned ? 127 : 255))
    return std::nullopt;
  return high;
}

void convInt8(const kernels::ConvParams &p, const float *in, const float *filter,
              const RequantRecord *records, int32_t padValue, bool depthwise,
              bool outSigned, bool reluSigned, isa::RoundMode mode, float *out,
              unsigned numThreads, int64_t reluHigh) {
  int64_t icg = p.ic / p.group, ocg = p.oc / p.group;
  int64_t plane = p.oh * p.ow;
  // Integer copies of the operands (their float values are integers).
  std::vector<int32_t> x(size_t(p.n * p.ic * p.ih * p.iw));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = int32_t(in[i]);
  std::vector<int32_t> w(size_t(p.oc * icg * p.kh * p.kw));
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = int32_t(filter[i]);
  auto work = [&](int64_t begin, int64_t end) {
    std::vector<uint32_t> acc(static_cast<size_t>(plane));
    for (int64_t job = begin; job < end; ++job) {
      int64_t n = job / p.oc, oc = job % p.oc;
      int64_t g = oc / ocg;
      std::fill(acc.begin(), acc.end(), 0u);
      for (int64_t ci = 0; ci < icg; ++ci) {
        int64_t c = g * icg + ci;
        const int32_t *xs = x.data() + size_t((n * p.ic + c) * p.ih * p.iw);
        for (int64_t ky = 0; ky < p.kh; ++ky)
          for (int64_t kx = 0; kx < p.kw; ++kx) {
            uint32_t wv = uint32_t(
                w[size_t(((oc * icg + ci) * p.kh + ky) * p.kw + kx)]);
            if (wv == 0)
              continue;
            for (int64_t oy = 0; oy < p.oh; ++oy) {
              int64_t iy = oy * p.sh + ky * p.dh - p.pt;
              bool rowIn = iy >= 0 && iy < p.ih;
              uint32_t *a = acc.data() + size_t(oy * p.ow);
              for (int64_t ox = 0; ox < p.ow; ++ox) {
                int64_t ix = ox * p.sw + kx * p.dw - p.pl;
                int32_t v = rowIn && ix >= 0 && ix < p.iw
                                ? xs[size_t(iy * p.iw + ix)]
                                : padValue;
                a[ox] += uint32_t(v) * wv; // int32 modulo 2^32
              }
            }
          }
      }
      const RequantRecord &r = records[oc];
      float *o = out + size_t((n * p.oc + oc) * plane);
      for (int64_t i = 0; i < plane; ++i) {
        int64_t a;
        if (depthwise) // sPorD: int64 sum + bias, saturated to int32
          a = isa::saturate(int64_t(int32_t(acc[size_t(i)])) + r.bias,
                            isa::Prec::Int32, true);
        else // CONV int32, then the AR add (wrapping)
          a = int32_t(acc[size_t(i)] + uint32_t(r.bias));
        int64_t y = requantByRecord(a, r, mode, outSigned);
        if (reluSigned)
          y = std::max<int64_t>(y, 0);
        o[i] = float(std::min(y, reluHigh));
      }
    }
  };
  kernels::parallelFor(numThreads, p.n * p.oc, 1, work);
}

void deconvInt8(const kernels::ConvParams &p, const float *in,
                const float *filter, const RequantRecord *records,
                bool outSigned, bool reluSigned, isa::RoundMode mode,
                float *out, unsigned numThreads, int64_t reluHigh) {
  int64_t icg = p.ic / p.group, ocg = p.oc / p.group;
  int64_t inPlane = p.ih * p.iw, outPlane = p.oh * p.ow;
  int64_t kArea = p.kh * p.kw;
  // deconv2d's walk: virtual row oy + ky * dh - padT is input row (that) /
  // sh when it is a multiple of sh.
  int64_t padT = p.dh * (p.kh - 1) - p.pt;
  int64_t padL = p.dw * (p.kw - 1) - p.pl;
  kernels::parallelFor(numThreads, p.n * p.oc, 1, [&](int64_t b, int64_t e) {
    std::vector<uint32_t> acc(static_cast<size_t>(p.ow));
    for (int64_t idx = b; idx < e; ++idx) {
      int64_t n = idx / p.oc, oc = idx % p.oc, g = oc / ocg, o = oc % ocg;
      float *dst = out + idx * outPlane;
      const RequantRecord &r = records[oc];
      for (int64_t oy = 0; oy < p.oh; ++oy) {
        std::fill(acc.begin(), acc.end(), 0u);
        for (int64_t c = 0; c < icg; ++c) {
          const float *plane = in + (n * p.ic + g * icg + c) * inPlane;
          const float *w = filter + ((g * icg + c) * ocg + o) * kArea;
          for (int64_t ky = 0; ky < p.kh; ++ky) {
            int64_t vy = oy + ky * p.dh - padT;
            if (vy < 0 || vy % p.sh != 0 || vy / p.sh >= p.ih)
              continue;
            const float *row = plane + (vy / p.sh) * p.iw;
            for (int64_t kx = 0; kx < p.kw; ++kx) {
              auto wv = uint32_t(
                  int32_t(w[(p.kh - 1 - ky) * p.kw + (p.kw - 1 - kx)]));
              int64_t off = kx * p.dw - padL;
              int64_t ox = off >= 0 ? 0 : -off;
              int64_t rem = (ox + off) % p.sw;
              if (rem)
                ox += p.sw - rem;
              for (; ox < p.ow; ox += p.sw) {
                int64_t ix = (ox + off) / p.sw;
                if (ix >= p.iw)
                  break;
                acc[size_t(ox)] += uint32_t(int32_t(row[ix])) * wv;
              }
            }
          }
        }
        for (int64_t ox = 0; ox < p.ow; ++ox) {
          // The AR add of the bias wraps, as the CONV's int32 sum.
          int64_t a = int32_t(acc[size_t(ox)] + uint32_t(r.bias));
          int64_t y = requantByRecord(a, r, mode, outSigned);
          if (reluSigned)
            y = std::max<int64_t>(y, 0);
          dst[oy * p.ow + ox] = float(std::min(y, reluHigh));
        }
      }
    }
  });
}

void avgPoolInt8(const kernels::PoolParams &p, const float *in,
                 int64_t multiplier, int rshift, int64_t inZeroPoint,
                 int64_t outZeroPoint, bool outSigned, isa::RoundMode mode,
                 float *out, unsigned) {
  int64_t n = p.inShape[0], c = p.inShape[1], ih = p.inShape[2],
          iw = p.inShape[3];
  int64_t oh = p.outShape[2], ow = p.outShape[3];
  int64_t kh = p.kernel[0], kw = p.kernel[1];
  int64_t sh = p.strides[0], sw = p.strides[1];
  int64_t pt = p.pads[0], pl = p.pads[1];
  for (int64_t b = 0; b < n * c; ++b) {
    const float *x = in + size_t(b * ih * iw);
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        int64_t sum = 0;
        for (int64_t ky = 0; ky < kh; ++ky)
          for (int64_t kx = 0; kx < kw; ++kx) {
            int64_t iy = oy * sh + ky - pt, ix = ox * sw + kx - pl;
            // The command's pads read the zero point.
            sum += iy >= 0 && iy < ih && ix >= 0 && ix < iw
                       ? int64_t(x[size_t(iy * iw + ix)])
                       : inZeroPoint;
          }
        sum = isa::saturate(sum, isa::Prec::Int32, true);
        if (inZeroPoint) // the AR add of -k * zp (int32, wrapping)
          sum = int32_t(uint32_t(sum) - uint32_t(kh * kw * inZeroPoint));
        out[size_t((b * oh + oy) * ow + ox)] =
            float(isa::requantize(sum, multiplier, rshift, outZeroPoint, mode,
                                  isa::Prec::Int8, outSigned));
      }
  }
}

int64_t addInt8Tflite(int64_t a, int64_t b, const int64_t zeroPoint[2],
                      const RequantRecord in[2], const RequantRecord &out,
                      bool sub, bool outSigned) {
  int64_t t[2];
  int64_t v[2] = {a, b};
  for (int k = 0; k < 2; ++k) {
    // The AR x - zp (int32, wrapping), then the input's two steps in int32.
    int64_t x = int32_t(uint32_t(v[k]) - uint32_t(zeroPoint[k]));
    t[k] = requantByRecord(x, in[k], kTfliteRoundModes[0], true,
                           isa::Prec::Int32);
  }
  // The AR add / sub (int32, wrapping).
  int64_t sum = int32_t(sub ? uint32_t(t[0]) - uint32_t(t[1])
                            : uint32_t(t[0]) + uint32_t(t[1]));
  return requantByRecord(sum, out, kTfliteRoundModes[0], outSigned);
}

int64_t addInt8(int64_t a, int64_t b, const int64_t mult[2],
                const int64_t rshift[2], const int64_t zeroPoint[2],
                int64_t outZeroPoint, int fraction, bool sub, bool outSigned,
                isa::RoundMode mode) {
  int64_t ta =
      isa::rightShiftRound((a - zeroPoint[0]) * mult[0], int(rshift[0]), mode);
  int64_t tb =
      isa::rightShiftRound((b - zeroPoint[1]) * mult[1], int(rshift[1]), mode);
  int64_t t = isa::rightShiftRound(sub ? ta - tb : ta + tb, fraction, mode);
  return isa::saturate(t + outZeroPoint, isa::Prec::Int8, outSigned);
}

void matmulInt8(int64_t m, int64_t k, int64_t n, const float *a,
                const float *b, bool transB, const int32_t *bias,
                const RequantRecord &rq, bool outSigned, isa::RoundMode mode,
                float *out) {
  std::vector<int32_t> bi(size_t(k * n));
  for (int64_t kk = 0; kk < k; ++kk)
    for (int64_t j = 0; j < n; ++j)
      bi[size_t(kk * n + j)] =
          int32_t(transB ? b[size_t(j * k + kk)] : b[size_t(kk * n + j)]);
  std::vector<uint32_t> acc(static_cast<size_t>(n));
  for (int64_t i = 0; i < m; ++i) {
    std::fill(acc.begin(), acc.end(), 0u);
    for (int64_t kk = 0; kk < k; ++kk) {
      uint32_t av = uint32_t(int32_t(a[size_t(i * k + kk)]));
      const int32_t *row = bi.data() + size_t(kk * n);
      for (int64_t j = 0; j < n; ++j)
        acc[size_t(j)] += av * uint32_t(row[j]);
    }
    for (int64_t j = 0; j < n; ++j) {
      uint32_t v = acc[size_t(j)] + (bias ? uint32_t(bias[j]) : 0u);
      out[size_t(i * n + j)] =
          float(requantByRecord(int32_t(v), rq, mode, outSigned));
    }
  }
}

float quantizeRq0(float x, double scale, int64_t zeroPoint, bool isSigned,
                  isa::RoundMode mode) {
  float inv = float(1.0 / scale);
  float v = x * inv;
  v = v + float(zeroPoint);
  return float(isa::floatToInt(v, isa::Prec::Int8, isSigned, mode));
}

float dequantizeDq0(float q, double scale, int64_t zeroPoint) {
  float v = float(int64_t(q) - zeroPoint);
  return v * float(scale);
}

} // namespace tpuc::tpu::chip
