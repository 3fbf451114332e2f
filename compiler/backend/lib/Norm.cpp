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

#include <algorithm>
#include <cmath>

namespace tpu::backend {

using namespace detail;

namespace {

constexpr Prec kF32 = Prec::Fp32;

/// The (outer, D, inner) view as a 4-D local layout. Logically (n, c, D,
/// w) with D along H; when inner is 1 the layout is (n, c, 1, D) instead
/// (`alongW`: contiguous rows, the reduction window along W).
struct RowView {
  Shape4 shape;                ///< logical n, c, D, w
  Stride4 inStride, outStride; ///< logical; out: reduced (n, c, 1, w) or full
  bool alongW = false;

  Shape4 phys(Shape4 l) const {
    return alongW ? Shape4{l.n, l.c, l.w, l.h} : l;
  }
  Stride4 phys(Stride4 s) const {
    return alongW ? Stride4{s.n, s.c, s.w, s.h} : s;
  }
};

/// Splits dims into outer / reduced / inner (the reduced dims must be
/// contiguous) and picks the lane layout.
RowView rowView(const OpCtx &ctx, const std::vector<int64_t> &shape,
                std::vector<int64_t> axes, bool keepFull, int64_t npu) {
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
    v.outStride = keepFull ? v.inStride : Stride4{inner, q, 0, 1};
  } else {
    v.shape = {1, uint32_t(outer), uint32_t(d), uint32_t(inner)};
    v.inStride = {0, d * inner, inner, 1};
    v.outStride = keepFull ? v.inStride : Stride4{0, inner, 0, 1};
  }
  // One element per lane row along W: lay D along W instead.
  v.alongW = v.shape.w == 1;
  return v;
}

/// Tile of (n, c, D-chunk, w): `perElem` bytes per lane for each element of
/// the full tile, `perRow` bytes per element of the reduced tile.
struct RowTile {
  int64_t n, c, d, w;
};

/// Largest tile whose per-lane bytes (given by `bytes`) fit `cap`; D is
/// kept whole unless `splitD`.
bool chooseRowTile(const isa::ChipParams &chip, const RowView &v, bool splitD,
                   uint64_t cap,
                   const std::function<uint64_t(const RowTile &)> &bytes,
                   RowTile &t) {
  int64_t npu = chip.npuNum;
  constexpr int64_t kMax = 65535;
  t = {1, std::min<int64_t>(v.shape.c, npu), v.shape.h, 1};
  if (splitD) {
    t.d = std::min<int64_t>(t.d, kMax);
    while (t.d > 1 && bytes(t) > cap)
      t.d = (t.d + 1) / 2;
  }
  if (bytes(t) > cap)
    return false;
  auto grow = [&](int64_t RowTile::*f, int64_t hi, int64_t unit) {
    int64_t lo = t.*f / unit;
    hi = std::max<int64_t>(hi / unit, lo);
    t.*f = largestFitting(lo, hi, [&](int64_t units) {
             RowTile c = t;
             c.*f = units * unit;
             return bytes(c) <= cap;
           }) *
           unit;
  };
  grow(&RowTile::w, std::min<int64_t>(v.shape.w, kMax), 1);
  if (t.w == int64_t(v.shape.w) && v.shape.c > uint32_t(npu)) {
    grow(&RowTile::c, std::min<int64_t>(v.shape.c, kMax / npu * npu), npu);
    t.c = std::min<int64_t>(t.c, v.shape.c);
  }
  if (t.w == int64_t(v.shape.w) && t.c == int64_t(v.shape.c))
    grow(&RowTile::n, std::min<int64_t>(v.shape.n, kMax), 1);
  return true;
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

void softmax(CmdEmitter &em, const SoftmaxParams &p) {
  OpCtx ctx{"softmax", p.name};
  requireFloat(ctx, p.input, "input");
  requireFloat(ctx, p.output, "output");
  requireElements(ctx, p.output, p.input.numElements(), "output");
  const isa::ChipParams &chip = em.chip();
  RowView v = rowView(ctx, p.input.shape, {p.axis}, true, chip.npuNum);
  Prec pi = p.input.prec, po = p.output.prec;
  uint64_t al = chip.localAlign;
  auto up = [&](uint64_t b) { return uint64_t(alignUp(int64_t(b), al)); };
  LocalAlloc alloc(chip, ctx);
  SoftmaxScratch rs;
  rs.tables = alloc.alloc(unaryTableBytes(), "coefficient tables");
  prepareUnaryTables(em, p.log ? UnaryKind::Softplus : UnaryKind::Exp,
                     {{}, rs.tables});
  uint64_t cap = alloc.remaining();
  auto full = [&](const RowTile &t) {
    return v.phys(
        Shape4{uint32_t(t.n), uint32_t(t.c), uint32_t(t.d), uint32_t(t.w)});
  };
  auto small = [](const RowTile &t) {
    return Shape4{uint32_t(t.n), uint32_t(t.c), 1, uint32_t(t.w)};
  };
  // Full-size fp32 tiles: X (staged input), D (x - max), two exp temps;
  // log-softmax needs the log temps on the reduced tile only.
  unsigned fullTemps = unsigned(rs.temps.size());
  auto bytes = [&](const RowTile &t) {
    Shape4 f = full(t), s = small(t);
    return 2 * up(euBytes(chip, pi, f)) + 2 * up(euBytes(chip, po, f)) +
           fullTemps * up(euBytes(chip, kF32, f)) +
           2 * up(euBytes(chip, kF32, s)) +
           (p.log ? 4 * up(euBytes(chip, kF32, s)) : 0);
  };
  RowTile tile;
  if (!chooseRowTile(chip, v, false, cap, bytes, tile))
    ctx.fail("does not fit in local memory: one row of " +
             std::to_string(v.shape.h) + " elements needs " +
             std::to_string(bytes({1, 1, v.shape.h, 1})) + " bytes per lane, " +
             std::to_string(cap) + " are available");
  Shape4 ft = full(tile), st = small(tile);
  std::array<uint64_t, 2> inBuf, outBuf;
  for (auto &b : inBuf)
    b = alloc.alloc(euBytes(chip, pi, ft), "input tile");
  for (auto &b : outBuf)
    b = alloc.alloc(euBytes(chip, po, ft), "output tile");
  for (uint64_t &t : rs.temps)
    t = alloc.alloc(euBytes(chip, kF32, ft), "scratch");
  rs.max = alloc.alloc(euBytes(chip, kF32, st), "row max");
  rs.sum = alloc.alloc(euBytes(chip, kF32, st), "row sum");
  if (p.log)
    for (uint64_t &t : rs.logTemps)
      t = alloc.alloc(euBytes(chip, kF32, st), "log scratch");

  struct Step {
    Shape4 at, shape;
  };
  std::vector<Step> steps;
  for (Range1 n : splitRange(v.shape.n, tile.n))
    for (Range1 c : splitRange(v.shape.c, tile.c))
      for (Range1 w : splitRange(v.shape.w, tile.w))
        steps.push_back({v.phys(Shape4{uint32_t(n.begin), uint32_t(c.begin), 0,
                                       uint32_t(w.begin)}),
                         v.phys(Shape4{uint32_t(n.size), uint32_t(c.size),
                                       v.shape.h, uint32_t(w.size)})});
  DView inView{p.input.addr, pi, v.phys(v.shape), v.phys(v.inStride)};
  DView outView{p.output.addr, po, v.phys(v.shape), v.phys(v.outStride)};
  withCtx(ctx, [&] {
    pipeline(
        steps.size(),
        [&](size_t i) {
          load(em, subView(inView, steps[i].at, steps[i].shape),
               localTensor(chip, inBuf[i % 2], pi, steps[i].shape));
        },
        [&](size_t i) {
          Shape4 f = steps[i].shape;
          softmaxTile(em, localTensor(chip, inBuf[i % 2], pi, f),
                      localTensor(chip, outBuf[i % 2], po, f), v.alongW,
                      p.log, rs);
        },
        [&](size_t i) {
          store(em, localTensor(chip, outBuf[i % 2], po, steps[i].shape),
                subView(outView, steps[i].at, steps[i].shape));
        });
  });
}

//===----------------------------------------------------------------------===//
// Layer normalisation
//===----------------------------------------------------------------------===//

void layerNorm(CmdEmitter &em, const LayerNormParams &p) {
  OpCtx ctx{"layerNorm", p.name};
  requireFloat(ctx, p.input, "input");
  requireFloat(ctx, p.output, "output");
  requireElements(ctx, p.output, p.input.numElements(), "output");
  const isa::ChipParams &chip = em.chip();
  int64_t r = int64_t(p.input.shape.size());
  int64_t axis = p.axis < 0 ? p.axis + r : p.axis;
  if (axis < 0 || axis >= r)
    ctx.fail("axis out of range");
  int64_t outer = 1, d = 1;
  for (int64_t i = 0; i < r; ++i)
    (i < axis ? outer : d) *= p.input.shape[size_t(i)];
  // Rows on the lanes, the normalised elements along W.
  RowView v;
  v.shape = {1, uint32_t(outer), uint32_t(d), 1};
  v.inStride = v.outStride = {0, d, 1, 1};
  v.alongW = true;
  Prec pi = p.input.prec, po = p.output.prec;
  uint64_t al = chip.localAlign;
  auto up = [&](uint64_t b) { return uint64_t(alignUp(int64_t(b), al)); };
  LocalAlloc alloc(chip, ctx);
  // Scale and bias, replicated into every lane: (1, lanes, 1, D).
  uint32_t lanes = uint32_t(std::min<int64_t>(outer, chip.npuNum));
  Shape4 gs{1, lanes, 1, uint32_t(d)};
  uint64_t gBuf = 0, bBuf = 0;
  if (p.scaleAddr)
    gBuf = alloc.alloc(euBytes(chip, kF32, gs), "scale");
  if (p.biasAddr)
    bBuf = alloc.alloc(euBytes(chip, kF32, gs), "bias");
  uint64_t cap = alloc.remaining();
  auto full = [&](const RowTile &t) {
    return v.phys(
        Shape4{uint32_t(t.n), uint32_t(t.c), uint32_t(t.d), uint32_t(t.w)});
  };
  auto bytes = [&](const RowTile &t) {
    Shape4 f = full(t), s{f.n, f.c, 1, 1};
    return 2 * up(euBytes(chip, pi, f)) + 2 * up(euBytes(chip, po, f)) +
           3 * up(euBytes(chip, kF32, f)) + 2 * up(euBytes(chip, kF32, s));
  };
  RowTile tile;
  if (!chooseRowTile(chip, v, false, cap, bytes, tile))
    ctx.fail("does not fit in local memory: one row of " + std::to_string(d) +
             " elements needs " + std::to_string(bytes({1, 1, d, 1})) +
             " bytes per lane, " + std::to_string(cap) + " are available");
  Shape4 ft = full(tile), st{ft.n, ft.c, 1, 1};
  std::array<uint64_t, 2> inBuf, outBuf;
  for (auto &b : inBuf)
    b = alloc.alloc(euBytes(chip, pi, ft), "input tile");
  for (auto &b : outBuf)
    b = alloc.alloc(euBytes(chip, po, ft), "output tile");
  uint64_t xBuf = alloc.alloc(euBytes(chip, kF32, ft), "scratch");
  uint64_t dBuf = alloc.alloc(euBytes(chip, kF32, ft), "scratch");
  uint64_t qBuf = alloc.alloc(euBytes(chip, kF32, ft), "scratch");
  uint64_t mBuf = alloc.alloc(euBytes(chip, kF32, st), "mean");
  uint64_t sBuf = alloc.alloc(euBytes(chip, kF32, st), "variance");

  LayerNormScratch ls{xBuf, dBuf, qBuf, mBuf, sBuf, {}, {}};
  if (p.scaleAddr)
    ls.scale = gBuf;
  if (p.biasAddr)
    ls.bias = bBuf;
  withCtx(ctx, [&] {
    if (p.scaleAddr)
      load(em, {*p.scaleAddr, kF32, gs, {0, 0, 0, 1}},
           localTensor(chip, gBuf, kF32, gs));
    if (p.biasAddr)
      load(em, {*p.biasAddr, kF32, gs, {0, 0, 0, 1}},
           localTensor(chip, bBuf, kF32, gs));
    std::vector<Range1> rows = splitRange(outer, tile.c);
    DView inView{p.input.addr, pi, v.phys(v.shape), v.phys(v.inStride)};
    DView outView{p.output.addr, po, v.phys(v.shape), v.phys(v.outStride)};
    auto shapeOf = [&](size_t i) {
      return Shape4{1, uint32_t(rows[i].size), 1, uint32_t(d)};
    };
    auto atOf = [&](size_t i) {
      return Shape4{0, uint32_t(rows[i].begin), 0, 0};
    };
    pipeline(
        rows.size(),
        [&](size_t i) {
          load(em, subView(inView, atOf(i), shapeOf(i)),
               localTensor(chip, inBuf[i % 2], pi, shapeOf(i)));
        },
        [&](size_t i) {
          Shape4 f = shapeOf(i);
          layerNormTile(em, localTensor(chip, inBuf[i % 2], pi, f),
                        localTensor(chip, outBuf[i % 2], po, f), p.epsilon,
                        ls);
        },
        [&](size_t i) {
          store(em, localTensor(chip, outBuf[i % 2], po, shapeOf(i)),
                subView(outView, atOf(i), shapeOf(i)));
        });
  });
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
  RowView v = rowView(ctx, p.input.shape, p.axes, false, chip.npuNum);
  requireElements(ctx, p.output, int64_t(v.shape.n) * v.shape.c * v.shape.w,
                  "output");
  Prec pi = p.input.prec, po = p.output.prec;
  bool isMax = p.kind == ReduceKind::Max || p.kind == ReduceKind::Min;
  bool square = p.kind == ReduceKind::SumSquare || p.kind == ReduceKind::L2;
  int64_t dTotal = v.shape.h;
  uint64_t al = chip.localAlign;
  auto up = [&](uint64_t b) { return uint64_t(alignUp(int64_t(b), al)); };
  LocalAlloc alloc(chip, ctx);
  uint64_t cap = alloc.remaining();
  auto full = [&](const RowTile &t) {
    return v.phys(
        Shape4{uint32_t(t.n), uint32_t(t.c), uint32_t(t.d), uint32_t(t.w)});
  };
  auto bytes = [&](const RowTile &t) {
    Shape4 s{uint32_t(t.n), uint32_t(t.c), 1, uint32_t(t.w)}, f = full(t);
    return 2 * up(euBytes(chip, pi, f)) + up(euBytes(chip, kF32, f)) +
           2 * up(euBytes(chip, po, s)) + 2 * up(euBytes(chip, kF32, s));
  };
  RowTile tile;
  if (!chooseRowTile(chip, v, true, cap, bytes, tile))
    ctx.fail("does not fit in local memory");
  Shape4 ft = full(tile);
  Shape4 st{uint32_t(tile.n), uint32_t(tile.c), 1, uint32_t(tile.w)};
  std::array<uint64_t, 2> inBuf, outBuf;
  for (auto &b : inBuf)
    b = alloc.alloc(euBytes(chip, pi, ft), "input tile");
  for (auto &b : outBuf)
    b = alloc.alloc(euBytes(chip, po, st), "output tile");
  uint64_t xBuf = alloc.alloc(euBytes(chip, kF32, ft), "scratch");
  uint64_t accBuf = alloc.alloc(euBytes(chip, kF32, st), "accumulator");
  uint64_t partBuf = alloc.alloc(euBytes(chip, kF32, st), "partial");

  struct Step {
    Shape4 at, shape;
    bool first, last;
    size_t result;
  };
  std::vector<Step> steps;
  size_t results = 0;
  for (Range1 n : splitRange(v.shape.n, tile.n))
    for (Range1 c : splitRange(v.shape.c, tile.c))
      for (Range1 w : splitRange(v.shape.w, tile.w)) {
        for (Range1 dd : splitRange(dTotal, tile.d))
          steps.push_back(
              {v.phys(Shape4{uint32_t(n.begin), uint32_t(c.begin),
                             uint32_t(dd.begin), uint32_t(w.begin)}),
               v.phys(Shape4{uint32_t(n.size), uint32_t(c.size),
                             uint32_t(dd.size), uint32_t(w.size)}),
               dd.begin == 0, dd.begin + dd.size == dTotal, results});
        ++results;
      }
  DView inView{p.input.addr, pi, v.phys(v.shape), v.phys(v.inStride)};
  // The reduced result: (n, c, 1, w) logical = physical (the reduced axis
  // has size 1 either way).
  Shape4 os{v.shape.n, v.shape.c, 1, v.shape.w};
  DView outView{p.output.addr, po, os, v.outStride};
  // Logical (n, c, w) of a physical step position / size.
  auto small = [&](Shape4 ph) {
    return v.alongW ? Shape4{ph.n, ph.c, 1, ph.h} : Shape4{ph.n, ph.c, 1, ph.w};
  };
  withCtx(ctx, [&] {
    pipeline(
        steps.size(),
        [&](size_t i) {
          load(em, subView(inView, steps[i].at, steps[i].shape),
               localTensor(chip, inBuf[i % 2], pi, steps[i].shape));
        },
        [&](size_t i) {
          const Step &s = steps[i];
          Shape4 f = s.shape, sm = small(f);
          LTensor in = localTensor(chip, inBuf[i % 2], pi, f);
          LTensor x = localTensor(chip, xBuf, kF32, f);
          if (square)
            ar(em, ArOp::Mul, x, Opd::of(in), Opd::of(in));
          else if (p.kind == ReduceKind::Min)
            ar(em, ArOp::Mul, x, Opd::of(in), Opd::imm(-1.0f, pi));
          else if (pi != kF32)
            ar(em, ArOp::Cast, x, Opd::of(in));
          else
            x = in;
          LTensor acc = localTensor(chip, accBuf, kF32, sm);
          LTensor part = localTensor(chip, partBuf, kF32, sm);
          float scale =
              p.kind == ReduceKind::Mean ? 1.0f / float(dTotal) : 1.0f;
          reduceAxis(em, x, s.first ? acc : part, v.alongW, isMax, scale);
          if (!s.first)
            ar(em, isMax ? ArOp::Max : ArOp::Add, acc, Opd::of(acc),
               Opd::of(part));
          if (!s.last)
            return;
          LTensor out = localTensor(chip, outBuf[s.result % 2], po, sm);
          if (p.kind == ReduceKind::Min)
            ar(em, ArOp::Mul, out, Opd::of(acc), Opd::imm(-1.0f, kF32));
          else if (p.kind == ReduceKind::L2) {
            sfuRsqrt(em, acc, acc);
            ar(em, ArOp::Div, out, Opd::imm(1.0f, kF32), Opd::of(acc));
          } else if (po != kF32)
            ar(em, ArOp::Cast, out, Opd::of(acc));
          else
            ar(em, ArOp::Copy, out, Opd::of(acc));
        },
        [&](size_t i) {
          const Step &s = steps[i];
          if (!s.last)
            return;
          Shape4 sm = small(s.shape), at = small(s.at);
          store(em, localTensor(chip, outBuf[s.result % 2], po, sm),
                subView(outView, {at.n, at.c, 0, at.w}, sm));
        });
  });
}

} // namespace tpu::backend
