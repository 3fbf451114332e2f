//===- Norm.cpp - Softmax, layer normalisation and reductions -------------===//
//
// All three reduce along one (merged) axis D of a view (outer, D, inner).
// A tile in local memory is (n, c, D, w): outer rows on the lanes (c), D
// along H, inner along W; when there are fewer outer rows than lanes and
// inner splits, a factor of inner moves onto the lanes instead. The
// reduction along H is one sPorD pooling with a (D, 1) window: max pooling
// for max, average pooling with scale 1 (sum) or 1 / D (mean). Results
// (n, c, 1, w) broadcast back along H through a zero H stride of the AR
// operand. Everything runs in fp32 whatever the tensor precision.
//
// Reductions whose axis does not fit local memory split D into chunks
// and combine the partial results (add / max) in an fp32 accumulator.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "tpuc/Backend/LayerGroup.h"

#include <algorithm>
#include <cmath>

namespace tpu::backend {

using namespace detail;

namespace {

constexpr Prec kF32 = Prec::Fp32;

/// The (outer, D, inner) view as a 4-D (n, c, D, w) with D along H and
/// its DDR strides.
struct RowView {
  Shape4 shape;                ///< n, c, D, w
  Stride4 inStride, outStride; ///< out: the reduced (n, c, 1, w)
};

/// Splits dims into outer / reduced / inner (the reduced dims must be
/// contiguous) and picks the lane layout.
RowView rowView(const OpCtx &ctx, const std::vector<int64_t> &shape,
                std::vector<int64_t> axes, int64_t npu) {
  int64_t r = int64_t(shape.size());
  for (int64_t &a : axes) {
    if (a < 0)
      a += r;
    if (a < 0 || a >= r)
      ctx.fail("axis out of range");
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  // Unit dims do not matter for contiguity.
  std::vector<int64_t> real;
  for (int64_t a : axes)
    if (shape[size_t(a)] != 1)
      real.push_back(a);
  for (size_t i = 1; i < real.size(); ++i)
    for (int64_t d = real[i - 1] + 1; d < real[i]; ++d)
      if (shape[size_t(d)] != 1)
        ctx.fail("reducing non-adjacent axes is not supported; reduce them "
                 "one after the other");
  int64_t first = real.empty() ? r : real.front();
  int64_t last = real.empty() ? r - 1 : real.back();
  int64_t outer = 1, d = 1, inner = 1;
  for (int64_t i = 0; i < r; ++i) {
    if (i < first)
      outer *= shape[size_t(i)];
    else if (i <= last)
      d *= shape[size_t(i)];
    else
      inner *= shape[size_t(i)];
  }
  if (real.empty()) {
    // Nothing to reduce: each element is its own row.
    d = 1;
    outer = 1;
    for (int64_t s : shape)
      outer *= s;
    inner = 1;
  }
  RowView v;
  int64_t f = 1;
  if (outer < npu && inner > 1)
    for (int64_t k =
             std::min<int64_t>(npu / std::max<int64_t>(outer, 1), inner);
         k > 1; --k)
      if (inner % k == 0) {
        f = k;
        break;
      }
  if (f > 1) {
    int64_t q = inner / f;
    v.shape = {uint32_t(outer), uint32_t(f), uint32_t(d), uint32_t(q)};
    v.inStride = {d * inner, q, inner, 1};
    v.outStride = {inner, q, 0, 1};
  } else {
    v.shape = {1, uint32_t(outer), uint32_t(d), uint32_t(inner)};
    v.inStride = {0, d * inner, inner, 1};
    v.outStride = {0, inner, 0, 1};
  }
  return v;
}

/// Reduces the physical tile `x` along the view's axis (H, or W when
/// `alongW`) into `out`: max, or a sum scaled by `scale`.
void reduceAxis(CmdEmitter &em, const LTensor &x, const LTensor &out,
                bool alongW, bool max, float scale) {
  PorDCmd c;
  c.kind = max ? PorDCmd::MaxPool : PorDCmd::AvgPool;
  c.input = x;
  c.output = out;
  c.kh = alongW ? 1 : x.shape.h;
  c.kw = alongW ? x.shape.w : 1;
  c.avgScale = scale;
  c.padBits = floatBits(-INFINITY, x.prec);
  pord(em, c);
}

/// The reduced tile seen with the full physical tile's shape (zero stride
/// along the reduced axis).
LTensor broadcastAxis(const LTensor &small, Shape4 full, bool alongW) {
  return freeTensor(small.offset, small.prec, full,
                    {small.stride.n, small.stride.c,
                     alongW ? small.stride.h : 0, alongW ? 0 : small.stride.w});
}

/// The tile `in` as the fp32 EU-aligned tile the reducing pooling reads:
/// itself when it is one, else copied (converted) into `scratch`.
LTensor fp32Tile(CmdEmitter &em, const LTensor &in, uint64_t scratch) {
  if (in.prec == kF32 && in.layout != kStrFree)
    return in;
  LTensor x = localTensor(em.chip(), scratch, kF32, in.shape);
  ar(em, in.prec == kF32 ? ArOp::Copy : ArOp::Cast, x, Opd::of(in));
  return x;
}

} // namespace

namespace detail {

void softmaxTile(CmdEmitter &em, const LTensor &in, const LTensor &out,
                 bool alongW, bool log, const SoftmaxScratch &sc) {
  const isa::ChipParams &chip = em.chip();
  Shape4 f = in.shape;
  Shape4 s = alongW ? Shape4{f.n, f.c, f.h, 1} : Shape4{f.n, f.c, 1, f.w};
  auto tmp = [&](unsigned k) {
    return localTensor(chip, sc.temps[k], kF32, f);
  };
  LTensor x = fp32Tile(em, in, sc.temps[0]);
  LTensor m = localTensor(chip, sc.max, kF32, s);
  LTensor sum = localTensor(chip, sc.sum, kF32, s);
  reduceAxis(em, x, m, alongW, true, 0);
  LTensor d = tmp(1);
  ar(em, ArOp::Sub, d, Opd::of(x), Opd::of(broadcastAxis(m, f, alongW)));
  // e = exp(d) into temp 0 (the staged input is no longer needed); d and e
  // are fp32, so the exp needs only its two scratch tiles.
  LTensor e = tmp(0);
  UnaryScratch ex{{sc.temps[2], sc.temps[3], sc.temps[2], sc.temps[3]},
                  sc.tables};
  emitUnary(em, {UnaryKind::Exp}, d, e, ex);
  reduceAxis(em, e, sum, alongW, false, 1.0f);
  LTensor sb = broadcastAxis(sum, f, alongW);
  if (log) {
    UnaryScratch ls{{sc.logTemps.begin(), sc.logTemps.end()}, sc.tables};
    emitUnary(em, {UnaryKind::Log}, sum, sum, ls);
    ar(em, ArOp::Sub, out, Opd::of(d), Opd::of(sb));
  } else {
    ar(em, ArOp::Div, out, Opd::of(e), Opd::of(sb));
  }
}

void layerNormTile(CmdEmitter &em, const LTensor &in, const LTensor &out,
                   float epsilon, const LayerNormScratch &sc) {
  const isa::ChipParams &chip = em.chip();
  Shape4 f = in.shape, s{f.n, f.c, f.h, 1};
  LTensor x = fp32Tile(em, in, sc.x);
  LTensor mean = localTensor(chip, sc.mean, kF32, s);
  LTensor var = localTensor(chip, sc.var, kF32, s);
  LTensor dd = localTensor(chip, sc.d, kF32, f);
  LTensor sq = localTensor(chip, sc.q, kF32, f);
  float inv = 1.0f / float(f.w);
  reduceAxis(em, x, mean, true, false, inv);
  ar(em, ArOp::Sub, dd, Opd::of(x), Opd::of(broadcastAxis(mean, f, true)));
  ar(em, ArOp::Mul, sq, Opd::of(dd), Opd::of(dd));
  reduceAxis(em, sq, var, true, false, inv);
  ar(em, ArOp::Add, var, Opd::of(var), Opd::imm(epsilon, kF32));
  sfuRsqrt(em, var, var);
  bool affine = sc.scale || sc.bias;
  LTensor y = affine ? dd : out;
  ar(em, ArOp::Mul, y, Opd::of(dd), Opd::of(broadcastAxis(var, f, true)));
  // Scale / bias: (1, lanes, 1, D) copies, one per lane, seen with the
  // tile's shape (zero n, c and h strides: each lane reads its own copy).
  auto rep = [&](uint64_t off) {
    return freeTensor(off, kF32, f, {0, 0, 0, 1});
  };
  if (sc.scale)
    ar(em, ArOp::Mul, sc.bias ? dd : out, Opd::of(dd), Opd::of(rep(*sc.scale)));
  if (sc.bias)
    ar(em, ArOp::Add, out, Opd::of(dd), Opd::of(rep(*sc.bias)));
}

} // namespace detail

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

namespace {

/// `shape` as (outer, D, inner) around `axis` (D the axis' extent, or with
/// `trailing` every dim from it on).
std::array<int64_t, 3> aroundAxis(const OpCtx &ctx,
                                  const std::vector<int64_t> &shape,
                                  int64_t axis, bool trailing) {
  int64_t r = int64_t(shape.size());
  int64_t a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r)
    ctx.fail("axis out of range");
  std::array<int64_t, 3> v{1, 1, 1};
  for (int64_t i = 0; i < r; ++i)
    v[i < a ? 0 : (i == a || trailing) ? 1 : 2] *= shape[size_t(i)];
  return v;
}

/// `rows` rows of `d` elements as a dense 4-D (1, c, h, d): c the largest
/// divisor of the rows up to the lanes (h the rest, which the group slices),
/// more channels only where h would exceed the commands' 16-bit dims.
std::vector<int64_t> rowsView(const OpCtx &ctx, const isa::ChipParams &chip,
                              int64_t rows, int64_t d) {
  constexpr int64_t kMax = 65535;
  if (d > kMax)
    ctx.fail("rows of " + std::to_string(d) +
             " elements exceed the commands' 16-bit sizes");
  int64_t c = largestDivisorUpTo(rows, chip.npuNum);
  if (rows / c > kMax)
    for (c = std::min(rows, kMax); c > 1; --c)
      if (rows % c == 0 && rows / c <= kMax)
        break;
  if (rows / c > kMax)
    ctx.fail(std::to_string(rows) + " rows fit no 4-D view");
  return {1, c, rows / c, d};
}

} // namespace

void softmax(CmdEmitter &em, const SoftmaxParams &p) {
  OpCtx ctx{"softmax", p.name};
  requireFloat(ctx, p.input, "input");
  requireFloat(ctx, p.output, "output");
  requireElements(ctx, p.output, p.input.numElements(), "output");
  // A group of one over a 4-D view whose W (or H) is the normalised axis
  // (the local form normalises each row along W, or each column along H):
  // (N, C, H, W) as it is; rows of contiguous elements as (1, c, h, D);
  // with elements after the axis (inner), the axis along H.
  auto [outer, d, inner] = aroundAxis(ctx, p.input.shape, p.axis, false);
  SoftmaxParams q = p;
  q.axis = 3;
  bool last = p.axis == 3 || p.axis == -1;
  int64_t npu = em.chip().npuNum;
  // A 4-D tensor along W as it is; along H too when its channels fill the
  // lanes (else the view below spreads its columns over them).
  bool alongH = p.axis == 2 || p.axis == -2;
  if (p.input.shape.size() == 4 &&
      (last || (alongH && p.input.shape[1] >= npu))) {
    q.axis = last ? 3 : 2;
    q.output.shape = q.input.shape;
    runAlone(em, "softmax", q, {q.input}, q.output);
    return;
  }
  if (inner == 1) {
    q.input.shape = q.output.shape = rowsView(ctx, em.chip(), outer, d);
    runAlone(em, "softmax", q, {q.input}, q.output);
    return;
  }
  // Elements after the axis: normalised along H of (outer, c, D, w), the
  // inner elements as c lane channels of w contiguous ones (c the largest
  // divisor of `inner` within the lanes), so that every DDR run is w
  // elements long; each column of a slice is one softmax. When that c
  // fills less than half the lanes `inner` could (a prime `inner`), the
  // axis along W of (1, inner, outer, D) instead: every inner element a
  // lane channel, the axis read through a stride of `inner` elements (one
  // element per DDR run).
  constexpr int64_t kMax = 65535;
  int64_t c = largestDivisorUpTo(inner, npu);
  int64_t w = inner / c;
  bool columns = 2 * c >= std::min(inner, npu);
  if (outer > kMax || d > kMax || (columns ? w : inner) > kMax)
    ctx.fail("a softmax of (" + std::to_string(outer) + ", " +
             std::to_string(d) + ", " + std::to_string(inner) +
             ") around its axis exceeds the commands' 16-bit sizes");
  Stride4 st;
  if (columns) {
    q.axis = 2;
    q.input.shape = q.output.shape = {outer, c, d, w};
    st = {d * inner, w, inner, 1};
  } else {
    q.input.shape = q.output.shape = {1, inner, outer, d};
    st = {0, 1, d * inner, inner};
  }
  runAlone(em, "softmax", q, {q.input}, q.output, nullptr, {st, st});
}

//===----------------------------------------------------------------------===//
// Layer normalisation
//===----------------------------------------------------------------------===//

void layerNorm(CmdEmitter &em, const LayerNormParams &p) {
  OpCtx ctx{"layerNorm", p.name};
  requireFloat(ctx, p.input, "input");
  requireFloat(ctx, p.output, "output");
  requireElements(ctx, p.output, p.input.numElements(), "output");
  // Normalised over every dim from the axis on: rows of contiguous
  // elements, a group of one over (N, C, H, W) as it is (the axis W) or
  // over (1, c, h, D).
  std::array<int64_t, 3> rows = aroundAxis(ctx, p.input.shape, p.axis, true);
  LayerNormParams q = p;
  q.axis = 3;
  if (!(p.input.shape.size() == 4 && (p.axis == 3 || p.axis == -1)))
    q.input.shape = rowsView(ctx, em.chip(), rows[0], rows[1]);
  q.output.shape = q.input.shape;
  runAlone(em, "layerNorm", q, {q.input}, q.output);
}

//===----------------------------------------------------------------------===//
// Reduce
//===----------------------------------------------------------------------===//

void reduce(CmdEmitter &em, const ReduceParams &p) {
  OpCtx ctx{"reduce", p.name};
  requireFloat(ctx, p.input, "input");
  requireFloat(ctx, p.output, "output");
  if (p.kind == ReduceKind::Prod)
    ctx.fail("ReduceProd is not supported");
  const isa::ChipParams &chip = em.chip();
  RowView v = rowView(ctx, p.input.shape, p.axes, chip.npuNum);
  requireElements(ctx, p.output, int64_t(v.shape.n) * v.shape.c * v.shape.w,
                  "output");
  // A group of one over a 4-D view of (outer, D, inner) reduced along H
  // (the view rowView chose, its strides) or, with nothing after the axes,
  // over rows of D contiguous elements (1, c, h, D) reduced along W: one
  // pooling whose window is the whole reduced extent, or, when that fits
  // no slicing, its share of the extent in each of several reduced-axis
  // slices that accumulate (GroupPlan::kSlices).
  ReduceParams q = p;
  AloneStrides st;
  constexpr int64_t kMax = 65535;
  // D contiguous (nothing after the axes; rowView may also lay a reduced
  // axis along W when the elements after it all went onto the lanes).
  if (v.inStride.h == 1 && v.shape.h <= kMax) {
    q.input.shape =
        rowsView(ctx, chip, int64_t(v.shape.n) * v.shape.c, v.shape.h);
    q.output.shape = q.input.shape;
    q.output.shape[3] = 1;
    q.axes = {3};
  } else {
    Shape4 s = v.shape;
    q.input.shape = {s.n, s.c, s.h, s.w};
    q.output.shape = {s.n, s.c, 1, s.w};
    q.axes = {2};
    st = {v.inStride, v.outStride};
  }
  runAlone(em, "reduce", q, {q.input}, q.output, nullptr, st);
}

} // namespace tpu::backend
