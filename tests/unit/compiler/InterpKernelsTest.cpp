//===- InterpKernelsTest.cpp - Interpreter kernels vs hand-derived values -===//
//
// Each expected value is derived by hand in the comment beside it; the
// randomised convolution tests compare against a naive direct loop written
// here from the ONNX definition (a different algorithm from the im2col +
// GEMM and depthwise kernels under test).
//
//===----------------------------------------------------------------------===//
#include "tpuc/Interpreter/Kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace tpuc::kernels;

namespace {

std::vector<float> iota(int64_t n, float start = 1.0f) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = start + i;
  return v;
}

void expectNear(const std::vector<float> &got, const std::vector<float> &want,
                float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol) << "at index " << i;
}

/// ONNX Conv by definition: a direct sum over the window.
std::vector<float> naiveConv(const ConvParams &p, const std::vector<float> &in,
                             const std::vector<float> &w,
                             const std::vector<float> &bias) {
  std::vector<float> out(p.n * p.oc * p.oh * p.ow);
  int64_t icg = p.ic / p.group, ocg = p.oc / p.group;
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t oc = 0; oc < p.oc; ++oc)
      for (int64_t oy = 0; oy < p.oh; ++oy)
        for (int64_t ox = 0; ox < p.ow; ++ox) {
          double sum = bias.empty() ? 0.0 : bias[oc];
          int64_t g = oc / ocg;
          for (int64_t c = 0; c < icg; ++c)
            for (int64_t ky = 0; ky < p.kh; ++ky)
              for (int64_t kx = 0; kx < p.kw; ++kx) {
                int64_t iy = oy * p.sh - p.pt + ky * p.dh;
                int64_t ix = ox * p.sw - p.pl + kx * p.dw;
                if (iy < 0 || iy >= p.ih || ix < 0 || ix >= p.iw)
                  continue;
                sum += in[((n * p.ic + g * icg + c) * p.ih + iy) * p.iw + ix] *
                       w[((oc * icg + c) * p.kh + ky) * p.kw + kx];
              }
          if (p.doRelu)
            sum = std::max(sum, 0.0);
          out[((n * p.oc + oc) * p.oh + oy) * p.ow + ox] = sum;
        }
  return out;
}

/// ONNX ConvTranspose by definition: every input pixel scatters its
/// weighted kernel into the (cropped) output.
std::vector<float> naiveConvTranspose(const ConvParams &p,
                                      const std::vector<float> &in,
                                      const std::vector<float> &w,
                                      const std::vector<float> &bias) {
  std::vector<float> out(p.n * p.oc * p.oh * p.ow, 0.0f);
  int64_t icg = p.ic / p.group, ocg = p.oc / p.group;
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t ic = 0; ic < p.ic; ++ic)
      for (int64_t iy = 0; iy < p.ih; ++iy)
        for (int64_t ix = 0; ix < p.iw; ++ix)
          for (int64_t j = 0; j < ocg; ++j)
            for (int64_t ky = 0; ky < p.kh; ++ky)
              for (int64_t kx = 0; kx < p.kw; ++kx) {
                int64_t oy = iy * p.sh + ky * p.dh - p.pt;
                int64_t ox = ix * p.sw + kx * p.dw - p.pl;
                if (oy < 0 || oy >= p.oh || ox < 0 || ox >= p.ow)
                  continue;
                int64_t oc = (ic / icg) * ocg + j;
                out[((n * p.oc + oc) * p.oh + oy) * p.ow + ox] +=
                    in[((n * p.ic + ic) * p.ih + iy) * p.iw + ix] *
                    w[((ic * ocg + j) * p.kh + ky) * p.kw + kx];
              }
  if (!bias.empty())
    for (int64_t n = 0; n < p.n; ++n)
      for (int64_t oc = 0; oc < p.oc; ++oc)
        for (int64_t i = 0; i < p.oh * p.ow; ++i)
          out[(n * p.oc + oc) * p.oh * p.ow + i] += bias[oc];
  return out;
}

std::vector<float> randomVector(std::mt19937 &rng, int64_t n) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

} // namespace

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

TEST(InterpKernels, Conv2x2Ones) {
  // in = [[1,2,3],[4,5,6],[7,8,9]], 2x2 ones filter, bias 1:
  // 1+2+4+5+1 = 13, 2+3+5+6+1 = 17, 4+5+7+8+1 = 25, 5+6+8+9+1 = 29.
  ConvParams p;
  p.ih = p.iw = 3;
  p.kh = p.kw = 2;
  p.oh = p.ow = 2;
  std::vector<float> out(4), w(4, 1.0f), bias = {1.0f};
  conv2d(p, iota(9).data(), w.data(), bias.data(), out.data(), 2);
  expectNear(out, {13, 17, 25, 29});
}

TEST(InterpKernels, ConvDilated) {
  // in = 1..16 as 4x4, 2x2 ones filter with dilation 2 reads (y, x),
  // (y, x+2), (y+2, x), (y+2, x+2): (0,0) 1+3+9+11 = 24, (0,1) 2+4+10+12 =
  // 28, (1,0) 5+7+13+15 = 40, (1,1) 6+8+14+16 = 44.
  ConvParams p;
  p.ih = p.iw = 4;
  p.kh = p.kw = 2;
  p.dh = p.dw = 2;
  p.oh = p.ow = 2;
  std::vector<float> out(4), w(4, 1.0f);
  conv2d(p, iota(16).data(), w.data(), nullptr, out.data(), 1);
  expectNear(out, {24, 28, 40, 44});
}

TEST(InterpKernels, ConvPaddedStrided) {
  // 3x3 ones filter, pads 1, stride 2 on 1..9 (3x3): the window of output
  // (0,0) covers rows/cols -1..1, i.e. 1+2+4+5 = 12; (0,1) cols 1..3:
  // 2+3+5+6 = 16; (1,0) 4+5+7+8 = 24; (1,1) 5+6+8+9 = 28. Relu keeps them.
  ConvParams p;
  p.ih = p.iw = 3;
  p.kh = p.kw = 3;
  p.sh = p.sw = 2;
  p.pt = p.pl = p.pb = p.pr = 1;
  p.oh = p.ow = 2;
  p.doRelu = true;
  std::vector<float> out(4), w(9, 1.0f);
  conv2d(p, iota(9).data(), w.data(), nullptr, out.data(), 2);
  expectNear(out, {12, 16, 24, 28});
}

TEST(InterpKernels, ConvReluLimit) {
  // 1x1 filter -1 on [1, -2, 3, -4]: [-1, 2, -3, 4]; relu with limit 3
  // gives [0, 2, 0, 3].
  ConvParams p;
  p.iw = 4;
  p.ow = 4;
  p.doRelu = true;
  p.reluLimit = 3.0;
  std::vector<float> in = {1, -2, 3, -4}, w = {-1}, out(4);
  conv2d(p, in.data(), w.data(), nullptr, out.data(), 1);
  expectNear(out, {0, 2, 0, 3});
}

TEST(InterpKernels, DepthwiseWithMultiplier) {
  // Two 2x2 input channels [1,2,3,4] and [5,6,7,8], group 2, four 2x2
  // filters (multiplier 2): ones on ch0 -> 10; [1,0,0,1] on ch0 -> 1+4 =
  // 5; ones on ch1 -> 26; [0,1,1,0] on ch1 -> 6+7 = 13.
  ConvParams p;
  p.ic = 2;
  p.oc = 4;
  p.group = 2;
  p.ih = p.iw = 2;
  p.kh = p.kw = 2;
  p.oh = p.ow = 1;
  std::vector<float> w = {1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 1, 1, 0};
  std::vector<float> out(4);
  conv2d(p, iota(8).data(), w.data(), nullptr, out.data(), 2);
  expectNear(out, {10, 5, 26, 13});
}

TEST(InterpKernels, ConvMatchesDirectLoop) {
  std::mt19937 rng(7);
  struct Case {
    int64_t ic, oc, group, ih, iw, kh, kw, s, d, pt, pl, pb, pr;
  };
  const Case cases[] = {
      {3, 8, 1, 9, 11, 3, 3, 1, 1, 1, 1, 1, 1},  // plain 3x3 same
      {4, 6, 2, 8, 8, 3, 3, 2, 1, 1, 1, 0, 0},   // grouped, strided
      {8, 8, 8, 10, 7, 3, 3, 1, 1, 1, 1, 1, 1},  // depthwise
      {8, 8, 8, 10, 10, 5, 5, 2, 1, 2, 2, 2, 2}, // depthwise 5x5 stride 2
      {6, 12, 6, 9, 9, 3, 3, 2, 2, 2, 1, 0, 2},  // depthwise x2, dilated
      {16, 5, 1, 6, 6, 1, 1, 1, 1, 0, 0, 0, 0},  // pointwise
      {5, 7, 1, 13, 1, 3, 1, 1, 1, 1, 0, 1, 0},  // W = 1
      {3, 4, 1, 7, 7, 2, 3, 3, 1, 0, 2, 1, 0},   // asymmetric pads
  };
  for (const Case &c : cases) {
    ConvParams p;
    p.n = 2;
    p.ic = c.ic;
    p.oc = c.oc;
    p.group = c.group;
    p.ih = c.ih;
    p.iw = c.iw;
    p.kh = c.kh;
    p.kw = c.kw;
    p.sh = p.sw = c.s;
    p.dh = p.dw = c.d;
    p.pt = c.pt;
    p.pl = c.pl;
    p.pb = c.pb;
    p.pr = c.pr;
    p.oh = (c.ih + c.pt + c.pb - (c.d * (c.kh - 1) + 1)) / c.s + 1;
    p.ow = (c.iw + c.pl + c.pr - (c.d * (c.kw - 1) + 1)) / c.s + 1;
    auto in = randomVector(rng, p.n * p.ic * p.ih * p.iw);
    auto w = randomVector(rng, p.oc * (p.ic / p.group) * p.kh * p.kw);
    auto bias = randomVector(rng, p.oc);
    std::vector<float> out(p.n * p.oc * p.oh * p.ow);
    conv2d(p, in.data(), w.data(), bias.data(), out.data(), 2);
    SCOPED_TRACE("ic " + std::to_string(c.ic) + " group " +
                 std::to_string(c.group) + " k " + std::to_string(c.kh));
    expectNear(out, naiveConv(p, in, w, bias), 1e-4f);
  }
}

TEST(InterpKernels, ConvTransposeHandValues) {
  // in [1,2,3,4] (2x2), 2x2 ones filter, stride 1: every input scatters
  // onto a 2x2 block, so out (3x3) = [[1, 1+2, 2], [1+3, 1+2+3+4, 2+4],
  // [3, 3+4, 4]].
  ConvParams p;
  p.ih = p.iw = 2;
  p.kh = p.kw = 2;
  p.oh = p.ow = 3;
  std::vector<float> w(4, 1.0f), out(9);
  convTranspose2d(p, iota(4).data(), w.data(), nullptr, out.data(), 1);
  expectNear(out, {1, 3, 2, 4, 10, 6, 3, 7, 4});
  // Stride 2: the blocks no longer overlap, each value fills its own 2x2.
  p.sh = p.sw = 2;
  p.oh = p.ow = 4;
  out.assign(16, 0);
  convTranspose2d(p, iota(4).data(), w.data(), nullptr, out.data(), 1);
  expectNear(out, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  // Stride 1 with pads 1 crops the 3x3 result to its centre: 10.
  p.sh = p.sw = 1;
  p.pt = p.pl = p.pb = p.pr = 1;
  p.oh = p.ow = 1;
  out.assign(1, 0);
  convTranspose2d(p, iota(4).data(), w.data(), nullptr, out.data(), 1);
  expectNear(out, {10});
}

TEST(InterpKernels, ConvTransposeMatchesScatterLoop) {
  std::mt19937 rng(11);
  struct Case {
    int64_t ic, oc, group, ih, k, s, d, pad, outPad;
  };
  const Case cases[] = {
      {4, 6, 1, 5, 3, 2, 1, 1, 1},
      {6, 4, 2, 4, 2, 2, 1, 0, 0},
      {3, 3, 3, 6, 4, 2, 1, 1, 0},
      {2, 5, 1, 3, 3, 1, 2, 2, 0},
  };
  for (const Case &c : cases) {
    ConvParams p;
    p.n = 2;
    p.ic = c.ic;
    p.oc = c.oc;
    p.group = c.group;
    p.ih = p.iw = c.ih;
    p.kh = p.kw = c.k;
    p.sh = p.sw = c.s;
    p.dh = p.dw = c.d;
    p.pt = p.pl = p.pb = p.pr = c.pad;
    p.oh = p.ow =
        (c.ih - 1) * c.s + c.d * (c.k - 1) + 1 + c.outPad - 2 * c.pad;
    auto in = randomVector(rng, p.n * p.ic * p.ih * p.iw);
    auto w = randomVector(rng, p.ic * (p.oc / p.group) * p.kh * p.kw);
    auto bias = randomVector(rng, p.oc);
    std::vector<float> out(p.n * p.oc * p.oh * p.ow);
    convTranspose2d(p, in.data(), w.data(), bias.data(), out.data(), 2);
    expectNear(out, naiveConvTranspose(p, in, w, bias), 1e-4f);
  }
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

TEST(InterpKernels, Gemm) {
  // [[1,2,3],[4,5,6]] x [[1,2],[3,4],[5,6]] = [[22,28],[49,64]].
  std::vector<float> a = iota(6), b = iota(6), c(4);
  gemm(2, 2, 3, a.data(), b.data(), false, c.data(), 1);
  expectNear(c, {22, 28, 49, 64});
  // With b given as its transpose [[1,3,5],[2,4,6]] the result is the same.
  std::vector<float> bt = {1, 3, 5, 2, 4, 6};
  gemm(2, 2, 3, a.data(), bt.data(), true, c.data(), 2);
  expectNear(c, {22, 28, 49, 64});
}

TEST(InterpKernels, GemmLargeThreadedMatchesSingle) {
  // The threaded split hands each thread whole rows (or columns) with all
  // of k, yet it is not bit-exact. Eigen's GEBP kernel (Eigen 3.4) tiles
  // each thread's block of C in register panels (AVX2 float: 24/16/8/4
  // rows x 4 columns) with edge kernels for what is left, and they sum k in
  // different orders: the 8/4-row x 4-column kernels keep two accumulators
  // (even and odd k steps) added at the end, the 1-column edge kernel one
  // sequential accumulator, the 1-row edge kernel spreads k over several
  // vector accumulators reduced at the end. Which kernel computes an
  // element depends on its place in its block, and the split moves the
  // block edges. Measured (AVX2 + FMA): 97 x 13 at 4 threads happens to be
  // bit-identical; 5 x 301 differs in 73 of 1505 elements (among them
  // columns 72-74, 147-149, 222-224, the last of each 75-column block), by
  // at most 2.1e-6 on values up to 14.3 (about 2 ulp); 97 x 13 at 7 threads
  // in 129 (the rows at the block edges), by at most 3.8e-6. Hence a
  // tolerance rather than bit equality.
  std::mt19937 rng(3);
  for (auto [m, n] : {std::pair<int64_t, int64_t>{97, 13}, {5, 301}}) {
    int64_t k = 129;
    auto a = randomVector(rng, m * k), b = randomVector(rng, k * n);
    std::vector<float> one(m * n), many(m * n);
    gemm(m, n, k, a.data(), b.data(), false, one.data(), 1);
    gemm(m, n, k, a.data(), b.data(), false, many.data(), 4);
    expectNear(many, one, 1e-5f);
    // Every element against a plain dot product in double.
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double dot = 0;
        for (int64_t i = 0; i < k; ++i)
          dot += double(a[r * k + i]) * b[i * n + c];
        EXPECT_NEAR(one[r * n + c], dot, 1e-4) << r << "," << c;
      }
  }
}

TEST(InterpKernels, MatmulShapes) {
  EXPECT_EQ(*matmulShape({2, 3}, {3, 4}, false), (Shape{2, 4}));
  EXPECT_EQ(*matmulShape({5, 2, 3}, {4, 3}, true), (Shape{5, 2, 4}));
  EXPECT_EQ(*matmulShape({3}, {3, 4}, false), (Shape{4}));
  EXPECT_EQ(*matmulShape({2, 3}, {3}, false), (Shape{2}));
  EXPECT_EQ(*matmulShape({2, 1, 2, 3}, {4, 3, 5}, false),
            (Shape{2, 4, 2, 5}));
  EXPECT_FALSE(matmulShape({2, 3}, {4, 5}, false));
  EXPECT_FALSE(matmulShape({2, 2, 3}, {3, 3, 4}, false));
}

TEST(InterpKernels, MatmulPlanOffsets) {
  // (2, 1, 2, 3) x (4, 3, 5): batch (2, 4); product i = (i / 4, i % 4)
  // reads left matrix i / 4 (2x3 = 6 elements each), right matrix i % 4
  // (3x5 = 15 each) and writes output matrix i (2x5 = 10 each).
  std::optional<MatmulPlan> p = planMatmul({2, 1, 2, 3}, {4, 3, 5}, false);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->outShape, (Shape{2, 4, 2, 5}));
  EXPECT_EQ(p->numBatch, 8);
  EXPECT_EQ(p->numRight, 4);
  EXPECT_FALSE(p->sharedRight);
  for (int64_t i = 0; i < 8; ++i) {
    EXPECT_EQ(p->leftOffset(i), (i / 4) * 6) << i;
    EXPECT_EQ(p->rightOffset(i), (i % 4) * 15) << i;
    EXPECT_EQ(p->outOffset(i), i * 10) << i;
  }
  // A weight right operand (transposed, 4x3) shared by 5 left matrices.
  p = planMatmul({5, 2, 3}, {4, 3}, true);
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->sharedRight);
  EXPECT_EQ(p->numBatch, 5);
  EXPECT_EQ(p->n, 4);
  EXPECT_EQ(p->k, 3);
  // A broadcast left operand is not a shared right one: (1, 2, 3) x
  // (2, 3, 4) reads left matrix 0 twice.
  p = planMatmul({1, 2, 3}, {2, 3, 4}, false);
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->sharedRight);
  EXPECT_EQ(p->leftOffset(1), 0);
  EXPECT_EQ(p->rightOffset(1), 12);
}

TEST(InterpKernels, MatmulBroadcastBatch) {
  // a: (1, 2, 2) = [[1,2],[3,4]]; b: (2, 2, 1) = [[1],[1]] and [[1],[-1]].
  // Batch 0: [[3],[7]]; batch 1: [[-1],[-1]].
  std::vector<float> a = iota(4), b = {1, 1, 1, -1}, out(4);
  matmul({1, 2, 2}, a.data(), {2, 2, 1}, b.data(), false, out.data(), 2);
  expectNear(out, {3, 7, -1, -1});
  // 1-D left operand: [1, 2] x [[1,2],[3,4]] = [7, 10].
  std::vector<float> v = {1, 2}, out2(2);
  matmul({2}, v.data(), {2, 2}, a.data(), false, out2.data(), 1);
  expectNear(out2, {7, 10});
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

namespace {
PoolParams pool2(Shape in, Shape out, Shape k, Shape s, Shape pads,
                 bool includePad = false) {
  PoolParams p;
  p.inShape = std::move(in);
  p.outShape = std::move(out);
  p.kernel = std::move(k);
  p.strides = std::move(s);
  p.pads = std::move(pads);
  p.countIncludePad = includePad;
  return p;
}
} // namespace

TEST(InterpKernels, MaxPoolEndPads) {
  // 1..9 as 3x3, kernel 2 stride 2, end pads 1 (ceil mode): windows
  // {1,2,4,5} -> 5, {3,6} -> 6, {7,8} -> 8, {9} -> 9 (pads never win).
  std::vector<float> out(4);
  maxPool(pool2({1, 1, 3, 3}, {1, 1, 2, 2}, {2, 2}, {2, 2}, {0, 0, 1, 1}),
          iota(9).data(), out.data(), 1);
  expectNear(out, {5, 6, 8, 9});
  // All-negative input: a padded zero must not win either.
  std::vector<float> neg = iota(9, -20.0f);
  maxPool(pool2({1, 1, 3, 3}, {1, 1, 2, 2}, {2, 2}, {2, 2}, {0, 0, 1, 1}),
          neg.data(), out.data(), 1);
  expectNear(out, {-16, -15, -13, -12});
}

TEST(InterpKernels, AvgPoolCountIncludePad) {
  // Same windows: exclude pads: (1+2+4+5)/4 = 3, (3+6)/2 = 4.5,
  // (7+8)/2 = 7.5, 9/1 = 9. Include pads (all four taps lie inside the
  // padded input): 12/4 = 3, 9/4 = 2.25, 15/4 = 3.75, 9/4 = 2.25.
  std::vector<float> out(4);
  avgPool(pool2({1, 1, 3, 3}, {1, 1, 2, 2}, {2, 2}, {2, 2}, {0, 0, 1, 1}),
          iota(9).data(), out.data(), 1);
  expectNear(out, {3, 4.5, 7.5, 9});
  avgPool(
      pool2({1, 1, 3, 3}, {1, 1, 2, 2}, {2, 2}, {2, 2}, {0, 0, 1, 1}, true),
      iota(9).data(), out.data(), 1);
  expectNear(out, {3, 2.25, 3.75, 2.25});
  // 3x3 window, pads 1, stride 1 at the corner: {1,2,4,5} = 12 over 4 real
  // taps = 3, or over all 9 padded taps = 4/3.
  std::vector<float> full(9);
  avgPool(
      pool2({1, 1, 3, 3}, {1, 1, 3, 3}, {3, 3}, {1, 1}, {1, 1, 1, 1}, true),
      iota(9).data(), full.data(), 1);
  EXPECT_NEAR(full[0], 12.0f / 9.0f, 1e-6f);
  // Centre: all of 1..9 = 45 / 9 = 5.
  EXPECT_NEAR(full[4], 5.0f, 1e-6f);
  avgPool(pool2({1, 1, 3, 3}, {1, 1, 3, 3}, {3, 3}, {1, 1}, {1, 1, 1, 1}),
          iota(9).data(), full.data(), 1);
  EXPECT_NEAR(full[0], 3.0f, 1e-6f);
}

TEST(InterpKernels, Pool1DAndDilation) {
  // 1-D max pool, kernel 2, dilation 2 on [1, 5, 2, 4, 3]: windows
  // {1,2} -> 2, {5,4} -> 5, {2,3} -> 3.
  PoolParams p = pool2({1, 1, 5}, {1, 1, 3}, {2}, {1}, {0, 0});
  p.dilations = {2};
  std::vector<float> in = {1, 5, 2, 4, 3}, out(3);
  maxPool(p, in.data(), out.data(), 1);
  expectNear(out, {2, 5, 3});
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

TEST(InterpKernels, Softmax) {
  // softmax([1,2,3]) = e^{x-3} / (e^-2 + e^-1 + 1) = [0.0900306,
  // 0.2447285, 0.6652410]; log-softmax = x - 3 - log(1.5032147) =
  // [-2.4076059, -1.4076059, -0.4076059].
  std::vector<float> in = {1, 2, 3}, out(3);
  softmax(1, 3, 1, in.data(), false, out.data());
  expectNear(out, {0.0900306f, 0.2447285f, 0.6652410f});
  softmax(1, 3, 1, in.data(), true, out.data());
  expectNear(out, {-2.4076059f, -1.4076059f, -0.4076059f});
  // Max subtraction keeps huge inputs finite: [1000, 1000] -> [0.5, 0.5].
  std::vector<float> big = {1000, 1000}, out2(2);
  softmax(1, 2, 1, big.data(), false, out2.data());
  expectNear(out2, {0.5f, 0.5f});
  // Along axis 0 of a 2x2 (inner 2): columns [1,3] and [2,4] each give
  // [e^-2, 1] / (1 + e^-2) = [0.1192029, 0.8807971].
  std::vector<float> m = {1, 2, 3, 4}, out3(4);
  softmax(1, 2, 2, m.data(), false, out3.data());
  expectNear(out3, {0.1192029f, 0.1192029f, 0.8807971f, 0.8807971f});
}

TEST(InterpKernels, LayerNorm) {
  // [1,2,3,4]: mean 2.5, variance 1.25, so (x - 2.5) / sqrt(1.25) =
  // [-1.3416408, -0.4472136, 0.4472136, 1.3416408]; times 2 plus 1 =
  // [-1.6832816, 0.1055728, 1.8944272, 3.6832816].
  std::vector<float> in = iota(4), out(4), scale(4, 2.0f), bias(4, 1.0f);
  layerNorm(1, 4, in.data(), nullptr, nullptr, 0.0, out.data());
  expectNear(out, {-1.3416408f, -0.4472136f, 0.4472136f, 1.3416408f});
  layerNorm(1, 4, in.data(), scale.data(), bias.data(), 0.0, out.data());
  expectNear(out, {-1.6832816f, 0.1055728f, 1.8944272f, 3.6832816f});
}

TEST(InterpKernels, BatchNorm) {
  // Channel 0: (x - 1) / sqrt(4) * 2 + 0 on [1, 3] -> [0, 2];
  // channel 1: (x - 0) / sqrt(1) * 1 + 5 on [2, 4] -> [7, 9].
  std::vector<float> in = {1, 3, 2, 4}, mean = {1, 0}, var = {4, 1},
                     scale = {2, 1}, bias = {0, 5}, out(4);
  batchNorm({1, 2, 2}, in.data(), mean.data(), var.data(), scale.data(),
            bias.data(), 0.0, out.data());
  expectNear(out, {0, 2, 7, 9});
}

//===----------------------------------------------------------------------===//
// Broadcasting and data movement
//===----------------------------------------------------------------------===//

TEST(InterpKernels, Broadcast) {
  EXPECT_EQ(*broadcastShape({2, 1, 3}, {4, 1}), (Shape{2, 4, 3}));
  EXPECT_EQ(*broadcastShape({}, {3}), (Shape{3}));
  EXPECT_FALSE(broadcastShape({2, 3}, {3, 2}));
  // [[10],[20]] + [1,2,3] = [[11,12,13],[21,22,23]].
  std::vector<float> a = {10, 20}, b = {1, 2, 3}, out(6);
  broadcastBinary({2, 1}, a.data(), {3}, b.data(), {2, 3}, out.data(),
                  [](float x, float y) { return x + y; });
  expectNear(out, {11, 12, 13, 21, 22, 23});
  // Per-channel (1,2,1,1) times (1,2,2,2): channel 0 x 2, channel 1 x 3.
  std::vector<float> s = {2, 3}, x = iota(8), y(8);
  broadcastBinary({1, 2, 2, 2}, x.data(), {1, 2, 1, 1}, s.data(),
                  {1, 2, 2, 2}, y.data(),
                  [](float p, float q) { return p * q; });
  expectNear(y, {2, 4, 6, 8, 15, 18, 21, 24});
  // Middle-axis broadcast (2,1,2) to (2,3,2): rows repeat 3 times.
  std::vector<float> m = {1, 2, 3, 4}, mb(12);
  broadcastTo({2, 1, 2}, m.data(), {2, 3, 2}, mb.data());
  expectNear(mb, {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
}

TEST(InterpKernels, Permute) {
  // (2,3) = [[1,2,3],[4,5,6]] transposed = [[1,4],[2,5],[3,6]].
  std::vector<float> out(6);
  permute({2, 3}, iota(6).data(), {1, 0}, out.data());
  expectNear(out, {1, 4, 2, 5, 3, 6});
  // (2,1,3) with order [2,0,1] -> (3,2,1): out[k][i][0] = in[i][0][k].
  permute({2, 1, 3}, iota(6).data(), {2, 0, 1}, out.data());
  expectNear(out, {1, 4, 2, 5, 3, 6});
}

TEST(InterpKernels, PermuteEveryOrderAgainstIndexMath) {
  // Every order of shapes past the 32-element tiles of the transposing
  // path (and not multiples of them), against the definition: out at
  // index o holds in at the index whose axis order[i] is o[i].
  for (const Shape &shape : {Shape{70, 45}, Shape{3, 40, 33},
                             Shape{2, 35, 3, 37}, Shape{1, 65, 1, 33}}) {
    size_t rank = shape.size();
    Shape order(rank);
    for (size_t i = 0; i < rank; ++i)
      order[i] = int64_t(i);
    std::vector<float> in = iota(size_t(numElements(shape)));
    do {
      Shape outShape(rank), inStrides(rank, 1), outStrides(rank, 1);
      for (size_t i = rank; i-- > 1;)
        inStrides[i - 1] = inStrides[i] * shape[i];
      for (size_t i = 0; i < rank; ++i)
        outShape[i] = shape[size_t(order[i])];
      for (size_t i = rank; i-- > 1;)
        outStrides[i - 1] = outStrides[i] * outShape[i];
      std::vector<float> got(in.size()), want(in.size());
      for (int64_t o = 0; o < int64_t(in.size()); ++o) {
        int64_t src = 0;
        for (size_t i = 0; i < rank; ++i)
          src +=
              (o / outStrides[i] % outShape[i]) * inStrides[size_t(order[i])];
        want[size_t(o)] = in[size_t(src)];
      }
      permute(shape, in.data(), order, got.data());
      ASSERT_EQ(got, want) << "rank " << rank << " order "
                           << ::testing::PrintToString(order);
    } while (std::next_permutation(order.begin(), order.end()));
  }
}

TEST(InterpKernels, Pad) {
  std::vector<float> in = {1, 2, 3}, out(7);
  // reflect mirrors without repeating the edge: [3,2 | 1,2,3 | 2,1].
  pad({3}, in.data(), {2, 2}, "reflect", 0, out.data());
  expectNear(out, {3, 2, 1, 2, 3, 2, 1});
  pad({3}, in.data(), {2, 2}, "edge", 0, out.data());
  expectNear(out, {1, 1, 1, 2, 3, 3, 3});
  pad({3}, in.data(), {2, 2}, "constant", 9, out.data());
  expectNear(out, {9, 9, 1, 2, 3, 9, 9});
  // A negative begin pad crops: [2, 3].
  std::vector<float> crop(2);
  pad({3}, in.data(), {-1, 0}, "constant", 0, crop.data());
  expectNear(crop, {2, 3});
}

TEST(InterpKernels, ResizeLinear) {
  // [1, 2] -> 4 wide, half_pixel: source x = (x + 0.5) / 2 - 0.5 =
  // -0.25, 0.25, 0.75, 1.25, clamped to [0, 1]: [1, 1.25, 1.75, 2].
  ResizeParams p;
  p.iw = 2;
  p.ow = 4;
  p.mode = "linear";
  std::vector<float> in = {1, 2}, out(4);
  resize(p, in.data(), out.data());
  expectNear(out, {1, 1.25f, 1.75f, 2});
  // align_corners: x * (2 - 1) / (4 - 1) = 0, 1/3, 2/3, 1.
  p.coordMode = "align_corners";
  resize(p, in.data(), out.data());
  expectNear(out, {1, 4.0f / 3, 5.0f / 3, 2});
  // asymmetric: x / 2 = 0, 0.5, 1, 1.5 (clamped to 1): [1, 1.5, 2, 2].
  p.coordMode = "asymmetric";
  resize(p, in.data(), out.data());
  expectNear(out, {1, 1.5f, 2, 2});
}

TEST(InterpKernels, ResizeNearest) {
  // [1,2,3,4] -> 2 wide, half_pixel: x = (x + 0.5) / 0.5 - 0.5 = 0.5, 2.5:
  // ties round down with round_prefer_floor ([1, 3]), up with
  // round_prefer_ceil ([2, 4]).
  ResizeParams p;
  p.iw = 4;
  p.ow = 2;
  std::vector<float> in = iota(4), out(2);
  resize(p, in.data(), out.data());
  expectNear(out, {1, 3});
  p.nearestMode = "round_prefer_ceil";
  resize(p, in.data(), out.data());
  expectNear(out, {2, 4});
  // 2x2 -> 4x4 asymmetric floor: each value repeats in a 2x2 block.
  ResizeParams q;
  q.ih = q.iw = 2;
  q.oh = q.ow = 4;
  q.coordMode = "asymmetric";
  q.nearestMode = "floor";
  std::vector<float> big(16);
  resize(q, iota(4).data(), big.data());
  expectNear(big, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  // pytorch_half_pixel with a single output reads index 0.
  ResizeParams r;
  r.iw = 4;
  r.ow = 1;
  r.mode = "linear";
  r.coordMode = "pytorch_half_pixel";
  std::vector<float> one(1);
  resize(r, in.data(), one.data());
  expectNear(one, {1});
}

TEST(InterpKernels, ResizeCubic) {
  // [0,1,2,3] -> 8 wide, asymmetric (source x / 2), a = -0.75. At a
  // fraction t = 0.5 the Keys weights of taps -1, 0, 1, 2 are
  // [-0.09375, 0.59375, 0.59375, -0.09375]:
  //   x = 1 (source 0.5, taps 0,0,1,2 with the edge repeated):
  //     0.59375 * 1 - 0.09375 * 2 = 0.40625;
  //   x = 3 (source 1.5): a cubic reproduces the ramp, 1.5;
  //   x = 0 (source 0, t = 0): weights [0, 1, 0, 0], exactly 0.
  // exclude_outside drops tap -1 and renormalises by 1.09375:
  //   x = 1: 0.40625 / 1.09375 = 0.3714286.
  ResizeParams p;
  p.iw = 4;
  p.ow = 8;
  p.mode = "cubic";
  p.coordMode = "asymmetric";
  std::vector<float> in = {0, 1, 2, 3}, out(8);
  resize(p, in.data(), out.data());
  EXPECT_NEAR(out[0], 0.0f, 1e-6f);
  EXPECT_NEAR(out[1], 0.40625f, 1e-6f);
  EXPECT_NEAR(out[3], 1.5f, 1e-6f);
  p.excludeOutside = true;
  resize(p, in.data(), out.data());
  EXPECT_NEAR(out[1], 0.3714286f, 1e-6f);
  EXPECT_NEAR(out[3], 1.5f, 1e-6f);
}

TEST(InterpKernels, Slice) {
  // (2,4) = [[1,2,3,4],[5,6,7,8]], rows from 1 step 1, cols from 3 step -2:
  // [[8, 6]].
  std::vector<float> out(2);
  slice({2, 4}, iota(8).data(), {1, 3}, {1, -2}, {1, 2}, out.data());
  expectNear(out, {8, 6});
}

TEST(InterpKernels, ParallelForCoversRangeOnce) {
  std::vector<int> hits(1000, 0);
  parallelFor(4, 1000, 10, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      ++hits[i];
  });
  for (int h : hits)
    ASSERT_EQ(h, 1);
}
