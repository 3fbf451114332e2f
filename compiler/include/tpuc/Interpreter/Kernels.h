//===- Kernels.h - Float32 reference kernels of the interpreter ---*- C++ -*-===//
//
// Plain C++ kernels (no MLIR) that the top ops' inference methods call and
// that the unit tests check directly. All tensors are row-major float32.
// Semantics follow ONNX; each kernel says where it differs.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_INTERPRETER_KERNELS_H
#define TPUC_INTERPRETER_KERNELS_H

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tpuc::kernels {

using Shape = std::vector<int64_t>;

/// Elementwise work below this many elements stays on one thread (handing
/// a chunk to the pool costs about as much as 16K simple float operations).
constexpr int64_t kMinParallelElements = int64_t(1) << 16;

/// Element count of \p shape (1 for rank 0).
int64_t numElements(const Shape &shape);

/// Runs fn(begin, end) over [0, n) in at most \p numThreads contiguous
/// chunks of at least \p grain items; chunk 0 runs on the calling thread.
void parallelFor(unsigned numThreads, int64_t n, int64_t grain,
                 const std::function<void(int64_t, int64_t)> &fn);

/// Applies relu (and the upper limit when limit > 0) in place.
void applyRelu(float *data, int64_t n, double limit);

//===----------------------------------------------------------------------===//
// Convolution and matrix products
//===----------------------------------------------------------------------===//

/// A 2-D convolution (1-D ones use ih = kh = 1 and zero H pads).
struct ConvParams {
  int64_t n = 1, ic = 1, ih = 1, iw = 1;
  int64_t oc = 1, oh = 1, ow = 1;
  int64_t kh = 1, kw = 1;
  int64_t sh = 1, sw = 1;
  int64_t dh = 1, dw = 1;
  /// Pads: top, left, bottom, right.
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t group = 1;
  bool doRelu = false;
  double reluLimit = -1.0;
};

/// out[n][oc][oh][ow] = bias[oc] + sum over the group's input channels and
/// the kernel window of in * filter; filter is (oc, ic / group, kh, kw);
/// bias may be null.
void conv2d(const ConvParams &p, const float *in, const float *filter,
            const float *bias, float *out, unsigned numThreads);

/// Transposed convolution: in is (n, ic, ih, iw), filter (ic, oc / group,
/// kh, kw), out (n, oc, oh, ow) with oh, ow as in ConvParams (the pads
/// crop the full output, output padding only enlarges oh / ow).
void convTranspose2d(const ConvParams &p, const float *in, const float *filter,
                     const float *bias, float *out, unsigned numThreads);

/// c (m x n) = a (m x k) * b, b being (k x n), or (n x k) if \p transB.
/// Row-major, dense. Overwrites c.
void gemm(int64_t m, int64_t n, int64_t k, const float *a, const float *b,
          bool transB, float *c, unsigned numThreads);

/// How a numpy matmul (see matmul) splits into 2-D products: 1-D operands
/// promoted as numpy does, the batch axes (all but the last two) broadcast.
/// Shared by matmul and chip::matmul, which differ only in how each product
/// is summed.
struct MatmulPlan {
  /// One product is (m x k) * (k x n).
  int64_t m = 0, n = 0, k = 0;
  /// numpy's output shape (the axes added to 1-D operands dropped again).
  Shape outShape;
  /// The broadcast batch axes; batchA and batchB are the operands' batch
  /// axes left-padded with 1 to the same rank.
  Shape batch, batchA, batchB;
  /// Products (elements of batch) and right matrices stored in b.
  int64_t numBatch = 0, numRight = 0;
  /// Every product reads the one right matrix and its own left matrix (b is
  /// a weight): the products form one (numBatch * m) x k left operand.
  bool sharedRight = false;

  /// Element offsets in a, b and out of product \p i's matrices.
  int64_t leftOffset(int64_t i) const { return batchOffset(i, batchA) * m * k; }
  int64_t rightOffset(int64_t i) const {
    return batchOffset(i, batchB) * k * n;
  }
  int64_t outOffset(int64_t i) const { return i * m * n; }

private:
  /// Index of product \p i's matrix in an operand whose batch axes are
  /// \p dims (broadcast axes repeat it).
  int64_t batchOffset(int64_t i, const Shape &dims) const;
};

/// The plan of a (shapeA) * b (shapeB), b's last two axes swapped first
/// when \p transB; nullopt if the shapes do not fit.
/// Output range [lo, hi) along one axis of outSize outputs whose input
/// index o * stride + offset lies in [0, size) (window taps that miss the
/// padding).
void validRange(int64_t offset, int64_t stride, int64_t size, int64_t outSize,
                int64_t &lo, int64_t &hi);

std::optional<MatmulPlan> planMatmul(const Shape &shapeA, const Shape &shapeB,
                                     bool transB);

/// numpy matmul of a (shapeA) and b (shapeB) with b's last two axes
/// swapped first when \p transB; 1-D operands are promoted as in numpy.
/// matmulShape gives the output shape, nullopt if the shapes do not fit.
std::optional<Shape> matmulShape(const Shape &shapeA, const Shape &shapeB,
                                 bool transB);
void matmul(const Shape &shapeA, const float *a, const Shape &shapeB,
            const float *b, bool transB, float *out, unsigned numThreads);

//===----------------------------------------------------------------------===//
// Pooling and normalisation
//===----------------------------------------------------------------------===//

/// N-D pooling over the trailing kernel.size() axes of a (n, c, ...) input.
struct PoolParams {
  Shape inShape;  ///< (n, c, spatial...)
  Shape outShape; ///< (n, c, spatial...)
  Shape kernel, strides, dilations;
  Shape pads; ///< begins then ends
  bool countIncludePad = false;
};
void maxPool(const PoolParams &p, const float *in, float *out,
             unsigned numThreads);
void avgPool(const PoolParams &p, const float *in, float *out,
             unsigned numThreads);

/// y = (x - mean) / sqrt(var + eps) * scale + bias over axis 1 of shape;
/// scale / bias may be null.
void batchNorm(const Shape &shape, const float *in, const float *mean,
               const float *var, const float *scale, const float *bias,
               double eps, float *out);

/// Normalises over the axes [axis, rank): outer x inner elements; scale and
/// bias (inner elements each, or null) apply per inner element.
void layerNorm(int64_t outer, int64_t inner, const float *in,
               const float *scale, const float *bias, double eps, float *out);

/// Softmax (or log-softmax) along an axis of extent \p axisLen between
/// \p outer outer and \p inner inner elements.
void softmax(int64_t outer, int64_t axisLen, int64_t inner, const float *in,
             bool log, float *out);

//===----------------------------------------------------------------------===//
// Broadcasting
//===----------------------------------------------------------------------===//

/// numpy broadcast of two shapes; nullopt if incompatible.
std::optional<Shape> broadcastShape(const Shape &a, const Shape &b);

/// Walks an output shape as rows of contiguous elements, giving for each
/// row the offset of every broadcast input; axes along which all inputs
/// are contiguous (or all broadcast) are merged, so rows are long.
struct BroadcastPlan {
  BroadcastPlan(const Shape &outShape, const std::vector<Shape> &inShapes);
  /// Offsets of row \p row in each input (inShapes.size() values).
  void rowOffsets(int64_t row, int64_t *offsets) const;

  int64_t numRows = 1;
  int64_t innerSize = 1;
  /// Per input: 1 if it walks along the row, 0 if it repeats one value.
  std::vector<int64_t> innerStrides;
  Shape outerDims;
  std::vector<Shape> outerStrides;
};

/// out[i] = fn(a[i'], b[i'']) over the broadcast shape \p outShape, split
/// over \p numThreads threads when large. \p out may alias an input of
/// the output's shape.
template <typename Fn>
void broadcastBinary(const Shape &shapeA, const float *a, const Shape &shapeB,
                     const float *b, const Shape &outShape, float *out, Fn fn,
                     unsigned numThreads = 1) {
  BroadcastPlan plan(outShape, {shapeA, shapeB});
  int64_t n = plan.innerSize;
  int64_t sa = plan.innerStrides[0], sb = plan.innerStrides[1];
  // Elements [i0, i1) of row r.
  auto rowPart = [&](int64_t r, int64_t i0, int64_t i1) {
    int64_t off[2];
    plan.rowOffsets(r, off);
    const float *pa = a + off[0], *pb = b + off[1];
    float *po = out + r * n;
    if (sa && sb) {
      for (int64_t i = i0; i < i1; ++i)
        po[i] = fn(pa[i], pb[i]);
    } else if (sa) {
      float vb = *pb;
      for (int64_t i = i0; i < i1; ++i)
        po[i] = fn(pa[i], vb);
    } else if (sb) {
      float va = *pa;
      for (int64_t i = i0; i < i1; ++i)
        po[i] = fn(va, pb[i]);
    } else {
      float v = fn(*pa, *pb);
      for (int64_t i = i0; i < i1; ++i)
        po[i] = v;
    }
  };
  int64_t total = plan.numRows * n;
  if (numThreads <= 1 || total < kMinParallelElements) {
    for (int64_t r = 0; r < plan.numRows; ++r)
      rowPart(r, 0, n);
  } else if (plan.numRows == 1) {
    parallelFor(numThreads, n, kMinParallelElements / 4,
                [&](int64_t i0, int64_t i1) { rowPart(0, i0, i1); });
  } else {
    parallelFor(numThreads, plan.numRows, 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        rowPart(r, 0, n);
    });
  }
}

/// Copies \p in (shape \p inShape) broadcast to \p outShape.
void broadcastTo(const Shape &inShape, const float *in, const Shape &outShape,
                 float *out);

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// out = transpose(in, order) (output axis i is input axis order[i]).
void permute(const Shape &inShape, const float *in, const Shape &order,
             float *out);

/// Resize of the last two axes of (..., ih, iw) to (..., oh, ow).
struct ResizeParams {
  int64_t outer = 1, ih = 1, iw = 1, oh = 1, ow = 1;
  std::string mode = "nearest";            ///< nearest | linear | cubic
  std::string coordMode = "half_pixel";    ///< see top.Interp
  std::string nearestMode = "round_prefer_floor";
  double scaleH = 0, scaleW = 0;           ///< 0: oh / ih, ow / iw
  double cubicCoeffA = -0.75;              ///< ONNX cubic_coeff_a
  bool excludeOutside = false;             ///< ONNX exclude_outside (cubic)
};
void resize(const ResizeParams &p, const float *in, float *out);

/// Pads every axis (begins then ends, negative = crop); mode constant /
/// reflect / edge.
void pad(const Shape &inShape, const float *in, const Shape &pads,
         const std::string &mode, float value, float *out);

/// ONNX Slice with normalised per-axis starts / steps and the output shape.
void slice(const Shape &inShape, const float *in, const Shape &starts,
           const Shape &steps, const Shape &outShape, float *out);

} // namespace tpuc::kernels

#endif // TPUC_INTERPRETER_KERNELS_H
