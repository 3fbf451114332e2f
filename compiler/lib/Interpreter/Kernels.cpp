//===- Kernels.cpp - Float32 reference kernels of the interpreter ---------===//
//
// Convolutions and matrix products go through Eigen's GEMM (im2col for
// convolutions, a direct loop for depthwise ones) and split their work over
// a thread pool; the other kernels are plain loops.
//
//===----------------------------------------------------------------------===//
#include "tpuc/Interpreter/Kernels.h"

#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"

#include <Eigen/Core>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace tpuc::kernels {

namespace {

using RowMatrix =
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMatrix>;
using MutMap = Eigen::Map<RowMatrix>;
using Stride = Eigen::OuterStride<>;
using ConstStridedMap = Eigen::Map<const RowMatrix, 0, Stride>;
using MutStridedMap = Eigen::Map<RowMatrix, 0, Stride>;

/// Below this many multiply-adds a GEMM runs on one thread: handing work to
/// the pool costs a few microseconds, about what 64K FMAs take.
constexpr int64_t kMinParallelMacs = int64_t(1) << 16;

/// Upper bound of the im2col buffer per thread (floats): 4 MiB keeps the
/// column block and its GEMM operands within the L2/L3 caches.
constexpr int64_t kIm2colBlockFloats = int64_t(1) << 20;

llvm::ThreadPoolInterface &getPool() {
  static llvm::DefaultThreadPool pool(llvm::hardware_concurrency());
  return pool;
}

} // namespace

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

void parallelFor(unsigned numThreads, int64_t n, int64_t grain,
                 const std::function<void(int64_t, int64_t)> &fn) {
  if (n <= 0)
    return;
  grain = std::max<int64_t>(grain, 1);
  int64_t chunks =
      std::min<int64_t>(std::max(1u, numThreads), (n + grain - 1) / grain);
  if (chunks <= 1) {
    fn(0, n);
    return;
  }
  auto begin = [&](int64_t c) { return n * c / chunks; };
  llvm::ThreadPoolTaskGroup group(getPool());
  for (int64_t c = 1; c < chunks; ++c)
    group.async([&fn, b = begin(c), e = begin(c + 1)] { fn(b, e); });
  fn(0, begin(1));
  group.wait();
}

void applyRelu(float *data, int64_t n, double limit) {
  float upper = limit > 0 ? static_cast<float>(limit)
                          : std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i)
    data[i] = std::min(std::max(data[i], 0.0f), upper);
}

//===----------------------------------------------------------------------===//
// GEMM
//===----------------------------------------------------------------------===//

namespace {

/// c (rows [r0, r1) or columns [c0, c1)) of a * b on the calling thread.
/// ldb is b's row stride; ldc c's.
void gemmBlock(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
               const float *b, int64_t ldb, bool transB, float *c,
               int64_t ldc) {
  ConstStridedMap A(a, m, k, Stride(lda));
  MutStridedMap C(c, m, n, Stride(ldc));
  if (transB) {
    ConstStridedMap B(b, n, k, Stride(ldb));
    C.noalias() = A * B.transpose();
  } else {
    ConstStridedMap B(b, k, n, Stride(ldb));
    C.noalias() = A * B;
  }
}

} // namespace

void gemm(int64_t m, int64_t n, int64_t k, const float *a, const float *b,
          bool transB, float *c, unsigned numThreads) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    std::fill(c, c + m * n, 0.0f);
    return;
  }
  int64_t ldb = transB ? k : n;
  if (numThreads <= 1 || m * n * k < kMinParallelMacs) {
    gemmBlock(m, n, k, a, k, b, ldb, transB, c, n);
    return;
  }
  if (m >= n) {
    parallelFor(numThreads, m, 1, [&](int64_t r0, int64_t r1) {
      gemmBlock(r1 - r0, n, k, a + r0 * k, k, b, ldb, transB, c + r0 * n, n);
    });
  } else {
    parallelFor(numThreads, n, 1, [&](int64_t c0, int64_t c1) {
      const float *bBlock = transB ? b + c0 * k : b + c0;
      gemmBlock(m, c1 - c0, k, a, k, bBlock, ldb, transB, c + c0, n);
    });
  }
}

int64_t MatmulPlan::batchOffset(int64_t i, const Shape &dims) const {
  int64_t off = 0, stride = 1;
  for (size_t d = batch.size(); d-- > 0;) {
    int64_t coord = i % batch[d];
    i /= batch[d];
    if (dims[d] != 1)
      off += coord * stride;
    stride *= dims[d];
  }
  return off;
}

std::optional<MatmulPlan> planMatmul(const Shape &shapeA, const Shape &shapeB,
                                     bool transB) {
  if (shapeA.empty() || shapeB.empty())
    return std::nullopt;
  Shape a = shapeA, b = shapeB;
  bool vecA = a.size() == 1, vecB = b.size() == 1;
  if (vecA)
    a.insert(a.begin(), 1);
  if (vecB) {
    // A 1-D right operand is a column (k) whatever transB says.
    b.push_back(1);
    if (transB)
      std::swap(b[0], b[1]);
  }
  MatmulPlan p;
  p.m = a[a.size() - 2];
  p.k = a.back();
  int64_t kb = transB ? b.back() : b[b.size() - 2];
  p.n = transB ? b[b.size() - 2] : b.back();
  if (p.k != kb)
    return std::nullopt;
  Shape batchA(a.begin(), a.end() - 2), batchB(b.begin(), b.end() - 2);
  auto batch = broadcastShape(batchA, batchB);
  if (!batch)
    return std::nullopt;
  p.batch = *batch;
  p.numBatch = numElements(p.batch);
  p.numRight = numElements(batchB);
  p.sharedRight = p.numRight == 1 && numElements(batchA) == p.numBatch;
  size_t rank = p.batch.size();
  p.batchA.assign(rank - batchA.size(), 1);
  p.batchA.insert(p.batchA.end(), batchA.begin(), batchA.end());
  p.batchB.assign(rank - batchB.size(), 1);
  p.batchB.insert(p.batchB.end(), batchB.begin(), batchB.end());
  p.outShape = p.batch;
  if (!vecA)
    p.outShape.push_back(p.m);
  if (!vecB)
    p.outShape.push_back(p.n);
  return p;
}

std::optional<Shape> matmulShape(const Shape &shapeA, const Shape &shapeB,
                                 bool transB) {
  std::optional<MatmulPlan> plan = planMatmul(shapeA, shapeB, transB);
  if (!plan)
    return std::nullopt;
  return plan->outShape;
}

void matmul(const Shape &shapeA, const float *a, const Shape &shapeB,
            const float *b, bool transB, float *out, unsigned numThreads) {
  std::optional<MatmulPlan> plan = planMatmul(shapeA, shapeB, transB);
  assert(plan && "matmul operands checked by matmulShape");
  const MatmulPlan &p = *plan;
  // Right operand shared by every batch (a weight): one tall GEMM.
  if (p.sharedRight) {
    gemm(p.numBatch * p.m, p.n, p.k, a, b, transB, out, numThreads);
    return;
  }
  auto runBatch = [&](int64_t i, unsigned threads) {
    gemm(p.m, p.n, p.k, a + p.leftOffset(i), b + p.rightOffset(i), transB,
         out + p.outOffset(i), threads);
  };
  if (p.numBatch >= numThreads) {
    parallelFor(numThreads, p.numBatch, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t i = b0; i < b1; ++i)
        runBatch(i, 1);
    });
  } else {
    for (int64_t i = 0; i < p.numBatch; ++i)
      runBatch(i, numThreads);
  }
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

namespace {

/// Adds the bias and applies relu to a (channels x plane) output block.
void finishChannels(const ConvParams &p, const float *bias, int64_t c0,
                    int64_t c1, int64_t plane, float *out) {
  for (int64_t c = c0; c < c1; ++c) {
    float *dst = out + c * plane;
    if (bias) {
      float v = bias[c];
      for (int64_t i = 0; i < plane; ++i)
        dst[i] += v;
    }
    if (p.doRelu)
      applyRelu(dst, plane, p.reluLimit);
  }
}

/// Convolution where every group has one input channel (depthwise, with a
/// channel multiplier of ocg = oc / group).
void depthwiseConv(const ConvParams &p, const float *in, const float *filter,
                   const float *bias, float *out, unsigned numThreads) {
  int64_t ocg = p.oc / p.group;
  int64_t inPlane = p.ih * p.iw, outPlane = p.oh * p.ow;
  parallelFor(numThreads, p.n * p.oc, 1, [&](int64_t b, int64_t e) {
    for (int64_t idx = b; idx < e; ++idx) {
      int64_t n = idx / p.oc, oc = idx % p.oc, ic = oc / ocg;
      const float *src = in + (n * p.ic + ic) * inPlane;
      float *dst = out + idx * outPlane;
      std::fill(dst, dst + outPlane, bias ? bias[oc] : 0.0f);
      for (int64_t ky = 0; ky < p.kh; ++ky) {
        int64_t oyLo, oyHi;
        validRange(ky * p.dh - p.pt, p.sh, p.ih, p.oh, oyLo, oyHi);
        for (int64_t kx = 0; kx < p.kw; ++kx) {
          float w = filter[(oc * p.kh + ky) * p.kw + kx];
          int64_t oxLo, oxHi;
          int64_t xOff = kx * p.dw - p.pl;
          validRange(xOff, p.sw, p.iw, p.ow, oxLo, oxHi);
          for (int64_t oy = oyLo; oy < oyHi; ++oy) {
            const float *row = src + (oy * p.sh + ky * p.dh - p.pt) * p.iw;
            float *o = dst + oy * p.ow;
            if (p.sw == 1) {
              const float *r = row + xOff;
              for (int64_t ox = oxLo; ox < oxHi; ++ox)
                o[ox] += w * r[ox];
            } else {
              for (int64_t ox = oxLo; ox < oxHi; ++ox)
                o[ox] += w * row[ox * p.sw + xOff];
            }
          }
        }
      }
      if (p.doRelu)
        applyRelu(dst, outPlane, p.reluLimit);
    }
  });
}

/// Writes the im2col columns [j0, j1) (flattened oy * ow + ox) of one
/// group's input: col is (icg * kh * kw) x (j1 - j0).
void im2col(const ConvParams &p, const float *in, int64_t icg, int64_t j0,
            int64_t j1, float *col) {
  int64_t cols = j1 - j0;
  for (int64_t kx = 0; kx < p.kw; ++kx) {
    // Output columns whose input column ox * sw + base is inside the row.
    int64_t base = kx * p.dw - p.pl;
    int64_t oxLo, oxHi;
    validRange(base, p.sw, p.iw, p.ow, oxLo, oxHi);
    for (int64_t c = 0; c < icg; ++c) {
      const float *plane = in + c * p.ih * p.iw;
      for (int64_t ky = 0; ky < p.kh; ++ky) {
        float *dst = col + ((c * p.kh + ky) * p.kw + kx) * cols;
        int64_t oy = j0 / p.ow, ox = j0 % p.ow;
        for (int64_t j = 0; j < cols;) {
          int64_t run = std::min(p.ow - ox, cols - j);
          int64_t iy = oy * p.sh + ky * p.dh - p.pt;
          float *d = dst + j - ox; // d[x] is output column x of this row
          if (iy < 0 || iy >= p.ih) {
            std::fill(d + ox, d + ox + run, 0.0f);
          } else {
            const float *row = plane + iy * p.iw;
            int64_t lo = std::clamp(oxLo, ox, ox + run);
            int64_t hi = std::clamp(oxHi, lo, ox + run);
            std::fill(d + ox, d + lo, 0.0f);
            if (p.sw == 1)
              std::copy(row + (lo + base), row + (hi + base), d + lo);
            else
              for (int64_t x = lo; x < hi; ++x)
                d[x] = row[x * p.sw + base];
            std::fill(d + hi, d + ox + run, 0.0f);
          }
          j += run;
          ox = 0;
          ++oy;
        }
      }
    }
  }
}

} // namespace

void conv2d(const ConvParams &p, const float *in, const float *filter,
            const float *bias, float *out, unsigned numThreads) {
  int64_t icg = p.ic / p.group, ocg = p.oc / p.group;
  int64_t outPlane = p.oh * p.ow, inPlane = p.ih * p.iw;
  if (icg == 1 && p.group > 1) {
    depthwiseConv(p, in, filter, bias, out, numThreads);
    return;
  }
  int64_t kSize = icg * p.kh * p.kw;
  bool pointwise = p.kh == 1 && p.kw == 1 && p.sh == 1 && p.sw == 1 &&
                   p.pt == 0 && p.pl == 0 && p.pb == 0 && p.pr == 0;
  for (int64_t n = 0; n < p.n; ++n) {
    for (int64_t g = 0; g < p.group; ++g) {
      const float *src = in + (n * p.ic + g * icg) * inPlane;
      const float *w = filter + g * ocg * kSize;
      float *dst = out + (n * p.oc + g * ocg) * outPlane;
      if (pointwise) {
        gemm(ocg, outPlane, kSize, w, src, false, dst, numThreads);
        continue;
      }
      // Split the output columns over the threads; each thread builds its
      // im2col blocks of at most kIm2colBlockFloats.
      int64_t block = std::max<int64_t>(1, kIm2colBlockFloats / kSize);
      int64_t grain = std::max<int64_t>(
          1, kMinParallelMacs / std::max<int64_t>(1, ocg * kSize));
      parallelFor(numThreads, outPlane, grain, [&](int64_t j0, int64_t j1) {
        std::vector<float> col(std::min(block, j1 - j0) * kSize);
        for (int64_t b0 = j0; b0 < j1; b0 += block) {
          int64_t b1 = std::min(j1, b0 + block);
          im2col(p, src, icg, b0, b1, col.data());
          gemmBlock(ocg, b1 - b0, kSize, w, kSize, col.data(), b1 - b0, false,
                    dst + b0, outPlane);
        }
      });
    }
    parallelFor(numThreads, p.oc, 1, [&](int64_t c0, int64_t c1) {
      finishChannels(p, bias, c0, c1, outPlane, out + n * p.oc * outPlane);
    });
  }
}

void convTranspose2d(const ConvParams &p, const float *in, const float *filter,
                     const float *bias, float *out, unsigned numThreads) {
  int64_t icg = p.ic / p.group, ocg = p.oc / p.group;
  int64_t inPlane = p.ih * p.iw, outPlane = p.oh * p.ow;
  int64_t kSize = ocg * p.kh * p.kw;
  std::vector<float> col(kSize * inPlane);
  std::vector<float> wT(kSize * icg);
  std::fill(out, out + p.n * p.oc * outPlane, 0.0f);
  for (int64_t g = 0; g < p.group; ++g) {
    // The group's filter is (icg x kSize); GEMM wants its transpose.
    ConstMap wg(filter + g * icg * kSize, icg, kSize);
    MutMap(wT.data(), kSize, icg) = wg.transpose();
    for (int64_t n = 0; n < p.n; ++n) {
      const float *src = in + (n * p.ic + g * icg) * inPlane;
      gemm(kSize, inPlane, icg, wT.data(), src, false, col.data(), numThreads);
      float *dst = out + (n * p.oc + g * ocg) * outPlane;
      // col2im: col[(c, ky, kx)][(iy, ix)] adds to
      // out[c][iy * sh + ky * dh - pt][ix * sw + kx * dw - pl].
      parallelFor(numThreads, ocg, 1, [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c) {
          float *plane = dst + c * outPlane;
          for (int64_t ky = 0; ky < p.kh; ++ky) {
            for (int64_t kx = 0; kx < p.kw; ++kx) {
              const float *src =
                  col.data() + ((c * p.kh + ky) * p.kw + kx) * inPlane;
              for (int64_t iy = 0; iy < p.ih; ++iy) {
                int64_t oy = iy * p.sh + ky * p.dh - p.pt;
                if (oy < 0 || oy >= p.oh)
                  continue;
                float *orow = plane + oy * p.ow;
                const float *irow = src + iy * p.iw;
                for (int64_t ix = 0; ix < p.iw; ++ix) {
                  int64_t ox = ix * p.sw + kx * p.dw - p.pl;
                  if (ox >= 0 && ox < p.ow)
                    orow[ox] += irow[ix];
                }
              }
            }
          }
        }
      });
    }
  }
  for (int64_t n = 0; n < p.n; ++n)
    finishChannels(p, bias, 0, p.oc, outPlane, out + n * p.oc * outPlane);
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

namespace {

/// Pool parameters widened to three spatial axes (missing leading axes have
/// size, kernel, stride and dilation 1 and no pads).
struct Pool3d {
  int64_t planes = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  int64_t s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, pb[3] = {0, 0, 0},
          pe[3] = {0, 0, 0};
};

Pool3d widenPool(const PoolParams &p) {
  Pool3d q;
  size_t sp = p.kernel.size();
  q.planes = p.inShape[0] * p.inShape[1];
  for (size_t i = 0; i < sp; ++i) {
    size_t j = 3 - sp + i;
    q.in[j] = p.inShape[2 + i];
    q.out[j] = p.outShape[2 + i];
    q.k[j] = p.kernel[i];
    q.s[j] = p.strides[i];
    q.d[j] = p.dilations.empty() ? 1 : p.dilations[i];
    q.pb[j] = p.pads[i];
    q.pe[j] = p.pads[sp + i];
  }
  return q;
}

template <typename Fn>
void forEachWindow(const PoolParams &p, const float *in, float *out,
                   unsigned numThreads, Fn fn) {
  Pool3d q = widenPool(p);
  int64_t inPlane = q.in[0] * q.in[1] * q.in[2];
  int64_t outPlane = q.out[0] * q.out[1] * q.out[2];
  parallelFor(numThreads, q.planes, 1, [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl) {
      const float *src = in + pl * inPlane;
      float *dst = out + pl * outPlane;
      for (int64_t od = 0; od < q.out[0]; ++od)
        for (int64_t oh = 0; oh < q.out[1]; ++oh)
          for (int64_t ow = 0; ow < q.out[2]; ++ow)
            *dst++ = fn(q, src, od, oh, ow);
    }
  });
}

} // namespace

void maxPool(const PoolParams &p, const float *in, float *out,
             unsigned numThreads) {
  forEachWindow(p, in, out, numThreads,
                [](const Pool3d &q, const float *src, int64_t od, int64_t oh,
                   int64_t ow) {
                  float best = -std::numeric_limits<float>::infinity();
                  int64_t o[3] = {od, oh, ow};
                  int64_t base[3];
                  for (int a = 0; a < 3; ++a)
                    base[a] = o[a] * q.s[a] - q.pb[a];
                  for (int64_t i = 0; i < q.k[0]; ++i) {
                    int64_t z = base[0] + i * q.d[0];
                    if (z < 0 || z >= q.in[0])
                      continue;
                    for (int64_t j = 0; j < q.k[1]; ++j) {
                      int64_t y = base[1] + j * q.d[1];
                      if (y < 0 || y >= q.in[1])
                        continue;
                      const float *row = src + (z * q.in[1] + y) * q.in[2];
                      for (int64_t l = 0; l < q.k[2]; ++l) {
                        int64_t x = base[2] + l * q.d[2];
                        if (x >= 0 && x < q.in[2])
                          best = std::max(best, row[x]);
                      }
                    }
                  }
                  return best;
                });
}

void avgPool(const PoolParams &p, const float *in, float *out,
             unsigned numThreads) {
  bool includePad = p.countIncludePad;
  forEachWindow(
      p, in, out, numThreads,
      [includePad](const Pool3d &q, const float *src, int64_t od, int64_t oh,
                   int64_t ow) {
        double sum = 0;
        int64_t count = 1;
        int64_t o[3] = {od, oh, ow};
        int64_t base[3], realCount[3], padCount[3];
        // Per axis: taps on real input and taps inside the padded input.
        for (int a = 0; a < 3; ++a) {
          base[a] = o[a] * q.s[a] - q.pb[a];
          realCount[a] = padCount[a] = 0;
          for (int64_t t = 0; t < q.k[a]; ++t) {
            int64_t x = base[a] + t * q.d[a];
            if (x >= -q.pb[a] && x < q.in[a] + q.pe[a])
              ++padCount[a];
            if (x >= 0 && x < q.in[a])
              ++realCount[a];
          }
          count *= includePad ? padCount[a] : realCount[a];
        }
        for (int64_t i = 0; i < q.k[0]; ++i) {
          int64_t z = base[0] + i * q.d[0];
          if (z < 0 || z >= q.in[0])
            continue;
          for (int64_t j = 0; j < q.k[1]; ++j) {
            int64_t y = base[1] + j * q.d[1];
            if (y < 0 || y >= q.in[1])
              continue;
            const float *row = src + (z * q.in[1] + y) * q.in[2];
            for (int64_t l = 0; l < q.k[2]; ++l) {
              int64_t x = base[2] + l * q.d[2];
              if (x >= 0 && x < q.in[2])
                sum += row[x];
            }
          }
        }
        return count > 0 ? static_cast<float>(sum / count) : 0.0f;
      });
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

void batchNorm(const Shape &shape, const float *in, const float *mean,
               const float *var, const float *scale, const float *bias,
               double eps, float *out) {
  int64_t n = shape[0], c = shape[1];
  int64_t plane = numElements(shape) / std::max<int64_t>(1, n * c);
  for (int64_t ch = 0; ch < c; ++ch) {
    // y = x * a + b with a = scale / sqrt(var + eps), b = bias - mean * a.
    double a = (scale ? scale[ch] : 1.0) / std::sqrt(double(var[ch]) + eps);
    double b = (bias ? bias[ch] : 0.0) - mean[ch] * a;
    for (int64_t i = 0; i < n; ++i) {
      const float *src = in + (i * c + ch) * plane;
      float *dst = out + (i * c + ch) * plane;
      for (int64_t j = 0; j < plane; ++j)
        dst[j] = static_cast<float>(src[j] * a + b);
    }
  }
}

void layerNorm(int64_t outer, int64_t inner, const float *in,
               const float *scale, const float *bias, double eps, float *out) {
  for (int64_t o = 0; o < outer; ++o) {
    const float *src = in + o * inner;
    float *dst = out + o * inner;
    double sum = 0;
    for (int64_t i = 0; i < inner; ++i)
      sum += src[i];
    double mean = sum / inner;
    double sq = 0;
    for (int64_t i = 0; i < inner; ++i)
      sq += (src[i] - mean) * (src[i] - mean);
    double rstd = 1.0 / std::sqrt(sq / inner + eps);
    for (int64_t i = 0; i < inner; ++i) {
      double v = (src[i] - mean) * rstd;
      if (scale)
        v *= scale[i];
      if (bias)
        v += bias[i];
      dst[i] = static_cast<float>(v);
    }
  }
}

void softmax(int64_t outer, int64_t axisLen, int64_t inner, const float *in,
             bool log, float *out) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const float *src = in + o * axisLen * inner + i;
      float *dst = out + o * axisLen * inner + i;
      float maxV = -std::numeric_limits<float>::infinity();
      for (int64_t a = 0; a < axisLen; ++a)
        maxV = std::max(maxV, src[a * inner]);
      double sum = 0;
      for (int64_t a = 0; a < axisLen; ++a)
        sum += std::exp(double(src[a * inner]) - maxV);
      if (log) {
        double logSum = std::log(sum);
        for (int64_t a = 0; a < axisLen; ++a)
          dst[a * inner] =
              static_cast<float>(double(src[a * inner]) - maxV - logSum);
      } else {
        for (int64_t a = 0; a < axisLen; ++a)
          dst[a * inner] = static_cast<float>(
              std::exp(double(src[a * inner]) - maxV) / sum);
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Broadcasting
//===----------------------------------------------------------------------===//

std::optional<Shape> broadcastShape(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

BroadcastPlan::BroadcastPlan(const Shape &outShape,
                             const std::vector<Shape> &inShapes) {
  size_t rank = outShape.size();
  size_t numIn = inShapes.size();
  // Per axis: extent and each input's stride (0 where it broadcasts).
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides(numIn);
  std::vector<int64_t> running(numIn, 1);
  std::vector<std::vector<int64_t>> rev(numIn);
  for (size_t i = rank; i-- > 0;) {
    dims.push_back(outShape[i]);
    for (size_t t = 0; t < numIn; ++t) {
      const Shape &s = inShapes[t];
      size_t off = rank - s.size();
      int64_t d = i < off ? 1 : s[i - off];
      rev[t].push_back(d == 1 ? 0 : running[t]);
      running[t] *= d;
    }
  }
  // dims / rev are innermost first; merge axis i+1 into axis i when every
  // input is contiguous across them.
  std::vector<int64_t> mDims;
  std::vector<std::vector<int64_t>> mStrides(numIn);
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1)
      continue;
    bool merge = !mDims.empty();
    for (size_t t = 0; t < numIn && merge; ++t) {
      int64_t prevStride = mStrides[t].back();
      int64_t expect = prevStride * mDims.back();
      merge = (rev[t][i] == 0 && prevStride == 0) || rev[t][i] == expect;
      if (prevStride == 0 && rev[t][i] != 0)
        merge = false;
    }
    if (merge) {
      mDims.back() *= dims[i];
      continue;
    }
    mDims.push_back(dims[i]);
    for (size_t t = 0; t < numIn; ++t)
      mStrides[t].push_back(rev[t][i]);
  }
  if (mDims.empty()) {
    mDims.push_back(1);
    for (size_t t = 0; t < numIn; ++t)
      mStrides[t].push_back(0);
  }
  innerSize = mDims[0];
  for (size_t t = 0; t < numIn; ++t)
    innerStrides.push_back(mStrides[t][0]);
  outerDims.assign(mDims.begin() + 1, mDims.end());
  outerStrides.resize(numIn);
  for (size_t t = 0; t < numIn; ++t)
    outerStrides[t].assign(mStrides[t].begin() + 1, mStrides[t].end());
  numRows = numElements(outerDims);
}

void BroadcastPlan::rowOffsets(int64_t row, int64_t *offsets) const {
  size_t numIn = innerStrides.size();
  for (size_t t = 0; t < numIn; ++t)
    offsets[t] = 0;
  for (size_t i = 0; i < outerDims.size(); ++i) {
    int64_t coord = row % outerDims[i];
    row /= outerDims[i];
    for (size_t t = 0; t < numIn; ++t)
      offsets[t] += coord * outerStrides[t][i];
  }
}

void broadcastTo(const Shape &inShape, const float *in, const Shape &outShape,
                 float *out) {
  BroadcastPlan plan(outShape, {inShape});
  int64_t inner = plan.innerSize, stride = plan.innerStrides[0];
  for (int64_t r = 0; r < plan.numRows; ++r) {
    int64_t off;
    plan.rowOffsets(r, &off);
    float *dst = out + r * inner;
    if (stride == 0)
      std::fill(dst, dst + inner, in[off]);
    else
      std::copy(in + off, in + off + inner, dst);
  }
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

void permute(const Shape &inShape, const float *in, const Shape &order,
             float *out) {
  size_t rank = inShape.size();
  Shape inStrides(rank, 1);
  for (size_t i = rank; i-- > 1;)
    inStrides[i - 1] = inStrides[i] * inShape[i];
  Shape outShape(rank), strides(rank);
  for (size_t i = 0; i < rank; ++i) {
    outShape[i] = inShape[order[i]];
    strides[i] = inStrides[order[i]];
  }
  int64_t total = numElements(outShape);
  if (total == 0)
    return;
  if (rank == 0) {
    out[0] = in[0];
    return;
  }
  int64_t inner = outShape[rank - 1], innerStride = strides[rank - 1];
  // When the input's contiguous axis is not the output's last (a
  // transpose), the rows above read one element per cache line: copy in
  // square tiles of that axis and the output's last instead, each tile's
  // input lines reused across the tile (a [25088, 4096] weight: ~10x).
  constexpr int64_t kTile = 32;
  size_t c = rank;
  for (size_t i = 0; i + 1 < rank; ++i)
    if (strides[i] == 1 && outShape[i] > 1)
      c = i;
  if (innerStride != 1 && c < rank && inner > 1) {
    Shape outStrides(rank, 1);
    for (size_t i = rank; i-- > 1;)
      outStrides[i - 1] = outStrides[i] * outShape[i];
    Shape idx(rank, 0);
    int64_t cn = outShape[c], cOut = outStrides[c];
    for (;;) {
      int64_t inBase = 0, outBase = 0;
      for (size_t i = 0; i + 1 < rank; ++i)
        if (i != c) {
          inBase += idx[i] * strides[i];
          outBase += idx[i] * outStrides[i];
        }
      for (int64_t c0 = 0; c0 < cn; c0 += kTile)
        for (int64_t j0 = 0; j0 < inner; j0 += kTile) {
          int64_t c1 = std::min(cn, c0 + kTile),
                  j1 = std::min(inner, j0 + kTile);
          for (int64_t ci = c0; ci < c1; ++ci)
            for (int64_t j = j0; j < j1; ++j)
              out[outBase + ci * cOut + j] = in[inBase + ci + j * innerStride];
        }
      // The next index of the axes other than c and the last.
      size_t i = rank - 1;
      while (i-- > 0) {
        if (i == c)
          continue;
        if (++idx[i] < outShape[i])
          break;
        idx[i] = 0;
      }
      if (i == size_t(-1))
        return;
    }
  }
  Shape idx(rank, 0);
  for (int64_t base = 0; base < total; base += inner) {
    int64_t off = 0;
    for (size_t i = 0; i + 1 < rank; ++i)
      off += idx[i] * strides[i];
    for (int64_t j = 0; j < inner; ++j)
      out[base + j] = in[off + j * innerStride];
    for (size_t i = rank - 1; i-- > 0;) {
      if (++idx[i] < outShape[i])
        break;
      idx[i] = 0;
    }
  }
}

namespace {

/// Input coordinate of output coordinate \p x (ONNX
/// coordinate_transformation_mode).
double sourceCoord(const std::string &mode, int64_t x, double scale,
                   int64_t inLen, int64_t outLen) {
  if (mode == "align_corners")
    return outLen == 1 ? 0.0 : double(x) * (inLen - 1) / (outLen - 1);
  if (mode == "asymmetric")
    return x / scale;
  if (mode == "pytorch_half_pixel")
    return outLen > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (mode == "tf_half_pixel_for_nn")
    return (x + 0.5) / scale;
  // half_pixel
  return (x + 0.5) / scale - 0.5;
}

int64_t nearestIndex(const std::string &mode, double x, int64_t inLen) {
  double r;
  if (mode == "floor")
    r = std::floor(x);
  else if (mode == "ceil")
    r = std::ceil(x);
  else if (x - std::floor(x) == 0.5)
    r = mode == "round_prefer_ceil" ? std::ceil(x) : std::floor(x);
  else
    r = std::round(x);
  return std::clamp<int64_t>(static_cast<int64_t>(r), 0, inLen - 1);
}

/// Per output coordinate of one axis: up to four source indices and their
/// weights (nearest: one tap; linear: two; cubic: four).
struct AxisTaps {
  static constexpr int kMaxTaps = 4;
  struct Taps {
    int count = 0;
    int64_t index[kMaxTaps];
    float weight[kMaxTaps];
  };
  std::vector<Taps> taps;
};

/// Cubic convolution weights of the taps at offsets -1, 0, 1, 2 from
/// floor(x) for fraction t (Keys' kernel with coefficient a, as ONNX).
void cubicWeights(double t, double a, double w[4]) {
  auto far = [a](double d) { // 1 <= d < 2
    return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  };
  auto near = [a](double d) { // 0 <= d < 1
    return ((a + 2) * d - (a + 3)) * d * d + 1;
  };
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

AxisTaps axisTaps(const ResizeParams &p, int64_t inLen, int64_t outLen,
                  double scale) {
  AxisTaps t;
  if (scale <= 0)
    scale = double(outLen) / inLen;
  for (int64_t x = 0; x < outLen; ++x) {
    double src = sourceCoord(p.coordMode, x, scale, inLen, outLen);
    AxisTaps::Taps taps;
    if (p.mode == "nearest") {
      taps.count = 1;
      taps.index[0] = nearestIndex(p.nearestMode, src, inLen);
      taps.weight[0] = 1.0f;
    } else if (p.mode == "cubic") {
      // Taps outside the input read the edge, or are dropped (and the
      // others renormalised) with exclude_outside.
      double base = std::floor(src);
      double w[4];
      cubicWeights(src - base, p.cubicCoeffA, w);
      double sum = 0;
      for (int k = 0; k < 4; ++k) {
        int64_t i = static_cast<int64_t>(base) - 1 + k;
        if (p.excludeOutside && (i < 0 || i >= inLen))
          w[k] = 0;
        sum += w[k];
      }
      taps.count = 4;
      for (int k = 0; k < 4; ++k) {
        int64_t i = static_cast<int64_t>(base) - 1 + k;
        taps.index[k] = std::clamp<int64_t>(i, 0, inLen - 1);
        taps.weight[k] =
            static_cast<float>(p.excludeOutside && sum != 0 ? w[k] / sum
                                                            : w[k]);
      }
    } else {
      // linear: reading the edge beyond the input equals clamping src.
      src = std::clamp(src, 0.0, double(inLen - 1));
      int64_t i0 = static_cast<int64_t>(std::floor(src));
      float frac = static_cast<float>(src - i0);
      taps.count = 2;
      taps.index[0] = i0;
      taps.index[1] = std::min(i0 + 1, inLen - 1);
      taps.weight[0] = 1 - frac;
      taps.weight[1] = frac;
    }
    t.taps.push_back(taps);
  }
  return t;
}

} // namespace

#if !defined(__clang__) && defined(__GNUC__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
void resize(const ResizeParams &p, const float *in, float *out) {
  // Each product rounded before its add, as the chip's AR Mul / Mac
  // sequence computes it (the tpu interpreter's F32 linear resize must
  // equal the simulator's bit for bit; with -march=native clang would
  // otherwise fuse `acc += w * x` into an FMA and differ by an ulp).
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  AxisTaps ty = axisTaps(p, p.ih, p.oh, p.scaleH);
  AxisTaps tx = axisTaps(p, p.iw, p.ow, p.scaleW);
  for (int64_t o = 0; o < p.outer; ++o) {
    const float *src = in + o * p.ih * p.iw;
    float *dst = out + o * p.oh * p.ow;
    for (int64_t y = 0; y < p.oh; ++y) {
      const AxisTaps::Taps &vy = ty.taps[y];
      for (int64_t x = 0; x < p.ow; ++x) {
        const AxisTaps::Taps &vx = tx.taps[x];
        float acc = 0;
        for (int i = 0; i < vy.count; ++i) {
          const float *row = src + vy.index[i] * p.iw;
          float rowAcc = 0;
          for (int j = 0; j < vx.count; ++j)
            rowAcc += vx.weight[j] * row[vx.index[j]];
          acc += vy.weight[i] * rowAcc;
        }
        dst[y * p.ow + x] = acc;
      }
    }
  }
}
#if !defined(__clang__) && defined(__GNUC__)
#pragma GCC pop_options
#endif

void pad(const Shape &inShape, const float *in, const Shape &pads,
         const std::string &mode, float value, float *out) {
  size_t rank = inShape.size();
  Shape outShape(rank), inStrides(rank, 1);
  for (size_t i = 0; i < rank; ++i)
    outShape[i] = inShape[i] + pads[i] + pads[rank + i];
  for (size_t i = rank; i-- > 1;)
    inStrides[i - 1] = inStrides[i] * inShape[i];
  int64_t total = numElements(outShape);
  // Source index along axis i of output index o, or -1 for the constant.
  auto source = [&](size_t i, int64_t o) -> int64_t {
    int64_t x = o - pads[i], n = inShape[i];
    if (x >= 0 && x < n)
      return x;
    if (mode == "edge")
      return x < 0 ? 0 : n - 1;
    if (mode == "reflect") {
      if (n == 1)
        return 0;
      int64_t period = 2 * (n - 1);
      x = ((x % period) + period) % period;
      return x < n ? x : period - x;
    }
    return -1;
  };
  Shape idx(rank, 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t off = 0;
    bool inside = true;
    for (size_t i = 0; i < rank && inside; ++i) {
      int64_t s = source(i, idx[i]);
      inside = s >= 0;
      off += s * inStrides[i];
    }
    out[flat] = inside ? in[off] : value;
    for (size_t i = rank; i-- > 0;) {
      if (++idx[i] < outShape[i])
        break;
      idx[i] = 0;
    }
  }
}

void slice(const Shape &inShape, const float *in, const Shape &starts,
           const Shape &steps, const Shape &outShape, float *out) {
  size_t rank = inShape.size();
  Shape inStrides(rank, 1);
  for (size_t i = rank; i-- > 1;)
    inStrides[i - 1] = inStrides[i] * inShape[i];
  int64_t total = numElements(outShape);
  Shape idx(rank, 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t off = 0;
    for (size_t i = 0; i < rank; ++i)
      off += (starts[i] + idx[i] * steps[i]) * inStrides[i];
    out[flat] = in[off];
    for (size_t i = rank; i-- > 0;) {
      if (++idx[i] < outShape[i])
        break;
      idx[i] = 0;
    }
  }
}

void validRange(int64_t offset, int64_t stride, int64_t size, int64_t outSize,
                int64_t &lo, int64_t &hi) {
  // o * stride + offset >= 0  <=>  o >= ceil(-offset / stride)
  lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  // o * stride + offset <= size - 1
  int64_t top = size - 1 - offset;
  hi = top < 0 ? 0 : top / stride + 1;
  lo = std::min(lo, outSize);
  hi = std::clamp(hi, lo, outSize);
}

} // namespace tpuc::kernels
