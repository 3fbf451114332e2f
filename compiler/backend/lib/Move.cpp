//===- Move.cpp - Data movement: permute, concat, slice, pad, ... ---------===//
//
// Pure data movement runs as strided global-to-global DMA_tensor copies
// (copyGlobalNd merges what it can and loops over dims beyond four):
// permute, concat, slice, pad (a fill, then the interior), expand / tile.
// A permute that is a batch of matrix transposes runs through local memory
// instead (a transposing DMA_matrix load, then a matrix store), so that
// neither DDR side is read one element per run.
// Gather uses DMA_gather with its index list staged in local memory (where
// float-encoded indices are converted and negative ones wrapped by TIU
// commands). Resize runs as a group of one (runAlone, LayerGroup.h): its
// tile (resizeTile, nearestRepeat) is a pass over output columns then one
// over output rows, each a copy (nearest) or a two-tap blend (linear) of
// whole columns / rows, in fp32, or, for a nearest resize by whole
// factors, strided copies; an integer (INT8) resize is nearest and copies
// the codes in their own precision.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "tpuc/Backend/LayerGroup.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace tpu::backend {

using namespace detail;

namespace {

void requireSamePrec(const OpCtx &ctx, const GTensor &a, const GTensor &b) {
  if (a.prec != b.prec)
    ctx.fail(std::string("input is ") + isa::precName(a.prec) +
             " but output is " + isa::precName(b.prec) + " (use cast)");
}

std::vector<int64_t> dimsOf(const GTensor &t) {
  return t.shape.empty() ? std::vector<int64_t>{1} : t.shape;
}

/// The permute as P transposes of A x B matrices ([P, A, B] -> [P, B, A]),
/// if that is what it is once unit dims are dropped and input axes that
/// stay neighbours are merged: order [0, 2, 1] of (1, 120, 40), [0, 3, 1, 2]
/// of (1, 1, 40, 120), [0, 1, 3, 2] of (1, 8, 40, 15).
struct MatrixTranspose {
  int64_t p = 1, a = 1, b = 1;
};
std::optional<MatrixTranspose>
matrixTransposeOf(const std::vector<int64_t> &in,
                  const std::vector<int64_t> &order) {
  // Input axes of extent > 1, numbered 0.. in input order, listed in
  // output order.
  std::vector<int64_t> rank(in.size(), -1), extent;
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != 1) {
      rank[i] = int64_t(extent.size());
      extent.push_back(in[i]);
    }
  std::vector<int64_t> seq;
  for (int64_t o : order)
    if (rank[size_t(o)] >= 0)
      seq.push_back(rank[size_t(o)]);
  // Runs of consecutive input axes become one axis each.
  std::vector<std::pair<int64_t, int64_t>> groups; // (first axis, extent)
  for (size_t k = 0; k < seq.size(); ++k) {
    if (k > 0 && seq[k] == seq[k - 1] + 1)
      groups.back().second *= extent[size_t(seq[k])];
    else
      groups.push_back({seq[k], extent[size_t(seq[k])]});
  }
  // groups is in output order; their first axes must read [.., y, x] with
  // y > x for the last two and ascending before them.
  if (groups.size() == 2 && groups[0].first > groups[1].first)
    return MatrixTranspose{1, groups[1].second, groups[0].second};
  if (groups.size() == 3 && groups[0].first < groups[2].first &&
      groups[2].first < groups[1].first)
    return MatrixTranspose{groups[0].second, groups[2].second,
                           groups[1].second};
  return std::nullopt;
}

/// [P, A, B] -> [P, B, A] through local memory: a transposing DMA_matrix
/// load of B-column chunks (local: b rows x A columns), then a matrix store
/// of those rows. Both DDR sides move whole rows, where a strided
/// global-to-global copy reads one element per DDR run. False (nothing
/// emitted) when a dim exceeds the matrix commands' 65535 or one row of A
/// elements does not fit local memory.
bool transposeThroughLocal(CmdEmitter &em, const OpCtx &ctx, Prec prec,
                           uint64_t src, uint64_t dst,
                           const MatrixTranspose &t) {
  constexpr int64_t kMax = 65535;
  const isa::ChipParams &chip = em.chip();
  if (t.a > kMax || t.b > kMax)
    return false;
  int64_t w = ceilDiv(t.a, int64_t(chip.npuNum));
  auto tile = [&](int64_t rows) {
    return Shape4{uint32_t(rows), uint32_t(ceilDiv(t.a, w)), 1, uint32_t(w)};
  };
  uint64_t cap = chip.lmemBytes;
  if (euBytes(chip, prec, tile(1)) > cap)
    return false;
  int64_t rows = largestFitting(1, std::min(t.b, kMax), [&](int64_t r) {
    return euBytes(chip, prec, tile(r)) <= cap;
  });
  LocalAlloc alloc(chip, ctx);
  uint64_t buf = alloc.alloc(euBytes(chip, prec, tile(rows)), "matrix tile");
  unsigned eb = elemBytes(prec);
  for (int64_t i = 0; i < t.p; ++i)
    for (Range1 r : splitRange(t.b, rows)) {
      LTensor l = localTensor(chip, buf, prec, tile(r.size));
      uint64_t in = src + uint64_t((i * t.a * t.b + r.begin) * eb);
      uint64_t out = dst + uint64_t((i * t.b + r.begin) * t.a * eb);
      loadMatrix(em, in, prec, uint32_t(t.a), uint32_t(r.size), uint64_t(t.b),
                 l, /*transpose=*/true);
      storeMatrix(em, l, out, uint32_t(r.size), uint32_t(t.a), uint64_t(t.a));
    }
  return true;
}

} // namespace

void permute(CmdEmitter &em, const PermuteParams &p) {
  OpCtx ctx{"permute", p.name};
  requireSamePrec(ctx, p.input, p.output);
  size_t r = p.input.shape.size();
  if (p.order.size() != r)
    ctx.fail("order has " + std::to_string(p.order.size()) +
             " entries for rank " + std::to_string(r));
  std::vector<int64_t> in = p.input.shape, st = denseStrides(in);
  std::vector<int64_t> out(r), srcStrides(r), order(r);
  std::vector<bool> seen(r, false);
  for (size_t i = 0; i < r; ++i) {
    int64_t o = order[i] =
        p.order[i] < 0 ? p.order[i] + int64_t(r) : p.order[i];
    if (o < 0 || o >= int64_t(r) || seen[size_t(o)])
      ctx.fail("order is not a permutation");
    seen[size_t(o)] = true;
    out[i] = in[size_t(o)];
    srcStrides[i] = st[size_t(o)];
  }
  if (out != p.output.shape)
    ctx.fail("output shape does not match the permuted input");
  withCtx(ctx, [&] {
    if (auto t = matrixTransposeOf(in, order))
      if (transposeThroughLocal(em, ctx, p.input.prec, p.input.addr,
                                p.output.addr, *t))
        return;
    copyGlobalNd(em, p.input.prec, p.input.addr, srcStrides, p.output.addr,
                 denseStrides(out), out);
  });
}

void concat(CmdEmitter &em, const ConcatParams &p) {
  OpCtx ctx{"concat", p.name};
  std::vector<int64_t> out = dimsOf(p.output);
  int64_t r = int64_t(out.size());
  int64_t axis = p.axis < 0 ? p.axis + r : p.axis;
  if (axis < 0 || axis >= r)
    ctx.fail("axis out of range");
  std::vector<int64_t> ost = denseStrides(out);
  int64_t at = 0;
  unsigned eb = elemBytes(p.output.prec);
  withCtx(ctx, [&] {
    for (const GTensor &in : p.inputs) {
      requireSamePrec(ctx, in, p.output);
      std::vector<int64_t> d = dimsOf(in);
      if (int64_t(d.size()) != r)
        ctx.fail("inputs must have the output's rank");
      for (int64_t i = 0; i < r; ++i)
        if (i != axis && d[size_t(i)] != out[size_t(i)])
          ctx.fail("inputs differ from the output outside the axis");
      uint64_t dst = p.output.addr + uint64_t(at * ost[size_t(axis)]) * eb;
      // An input that address assignment placed inside the output, as the
      // contiguous block it is there (every dim before the axis is 1), is
      // already in its place.
      bool inPlace =
          in.addr == dst && std::all_of(out.begin(), out.begin() + axis,
                                        [](int64_t v) { return v == 1; });
      if (!inPlace)
        copyGlobalNd(em, in.prec, in.addr, denseStrides(d), dst, ost, d);
      at += d[size_t(axis)];
    }
    if (at != out[size_t(axis)])
      ctx.fail("inputs cover " + std::to_string(at) + " of " +
               std::to_string(out[size_t(axis)]) + " along the axis");
  });
}

namespace {

/// Copies with possibly negative source strides: dims with a negative
/// stride are unrolled (one copy per index).
void copyAnyStride(CmdEmitter &em, Prec prec, uint64_t src,
                   std::vector<int64_t> ss, uint64_t dst,
                   std::vector<int64_t> ds, std::vector<int64_t> dims) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (ss[i] >= 0)
      continue;
    unsigned eb = elemBytes(prec);
    int64_t count = dims[i], step = ss[i];
    dims[i] = 1;
    ss[i] = 0;
    for (int64_t k = 0; k < count; ++k)
      copyAnyStride(em, prec, src + uint64_t(k * step * int64_t(eb)), ss,
                    dst + uint64_t(k * ds[i]) * eb, ds, dims);
    return;
  }
  copyGlobalNd(em, prec, src, ss, dst, ds, dims);
}

} // namespace

void slice(CmdEmitter &em, const SliceParams &p) {
  OpCtx ctx{"slice", p.name};
  requireSamePrec(ctx, p.input, p.output);
  std::vector<int64_t> in = dimsOf(p.input), out = dimsOf(p.output);
  size_t r = in.size();
  if (out.size() != r || p.starts.size() != r || p.steps.size() != r)
    ctx.fail("starts, steps and output must have the input's rank");
  std::vector<int64_t> st = denseStrides(in), ss(r);
  int64_t off = 0;
  for (size_t i = 0; i < r; ++i) {
    int64_t last = p.starts[i] + (out[i] - 1) * p.steps[i];
    if (p.steps[i] == 0 || p.starts[i] < 0 || p.starts[i] >= in[i] ||
        last < 0 || last >= in[i])
      ctx.fail("slice of dim " + std::to_string(i) + " leaves the input");
    off += p.starts[i] * st[i];
    ss[i] = p.steps[i] * st[i];
  }
  withCtx(ctx, [&] {
    copyAnyStride(em, p.input.prec,
                  p.input.addr + uint64_t(off) * elemBytes(p.input.prec), ss,
                  p.output.addr, denseStrides(out), out);
  });
}

void pad(CmdEmitter &em, const PadParams &p) {
  OpCtx ctx{"pad", p.name};
  requireSamePrec(ctx, p.input, p.output);
  std::vector<int64_t> in = dimsOf(p.input), out = dimsOf(p.output);
  size_t r = in.size();
  if (out.size() != r || p.pads.size() != 2 * r)
    ctx.fail("pads must have two entries per dim");
  std::vector<int64_t> ost = denseStrides(out);
  int64_t off = 0;
  for (size_t i = 0; i < r; ++i) {
    if (p.pads[i] < 0 || p.pads[r + i] < 0)
      ctx.fail("negative pads are not supported (use slice)");
    if (in[i] + p.pads[i] + p.pads[r + i] != out[i])
      ctx.fail("output dim " + std::to_string(i) + " does not match the pads");
    if (p.mode == PadMode::Reflect &&
        (p.pads[i] >= in[i] || p.pads[r + i] >= in[i]))
      ctx.fail("reflect pads must be smaller than the dim");
    off += p.pads[i] * ost[i];
  }
  unsigned eb = elemBytes(p.output.prec);
  withCtx(ctx, [&] {
    if (p.mode == PadMode::Constant) {
      int64_t total = p.output.numElements();
      // The fill as (rows, 65535-wide) plus the rest.
      constexpr int64_t kRow = 65535;
      DView all{p.output.addr,
                p.output.prec,
                {1, 1, uint32_t(total / kRow), uint32_t(kRow)},
                {0, 0, kRow, 1}};
      uint32_t bits = floatBits(p.value, p.output.prec);
      if (total / kRow)
        fillGlobal(em, all, bits);
      if (total % kRow)
        fillGlobal(em,
                   denseView(p.output.addr + uint64_t(total / kRow * kRow) * eb,
                             p.output.prec, {1, 1, 1, uint32_t(total % kRow)}),
                   bits);
    }
    copyGlobalNd(em, p.input.prec, p.input.addr, denseStrides(in),
                 p.output.addr + uint64_t(off) * eb, ost, in);
    if (p.mode == PadMode::Constant)
      return;
    // Border planes, innermost dim first: a plane of dim d spans the full
    // (already padded) extent of the inner dims and the interior of the
    // outer ones, and is copied from inside the output (GDMA runs in order).
    for (size_t d = r; d-- > 0;) {
      std::vector<int64_t> plane(r);
      int64_t base = 0;
      for (size_t i = 0; i < r; ++i) {
        plane[i] = i > d ? out[i] : (i == d ? 1 : in[i]);
        if (i < d)
          base += p.pads[i] * ost[i];
      }
      int64_t begin = p.pads[d], n = in[d];
      auto copyPlane = [&](int64_t from, int64_t to) {
        copyGlobalNd(em, p.output.prec,
                     p.output.addr + uint64_t(base + from * ost[d]) * eb, ost,
                     p.output.addr + uint64_t(base + to * ost[d]) * eb, ost,
                     plane);
      };
      bool reflect = p.mode == PadMode::Reflect;
      for (int64_t j = 0; j < begin; ++j)
        copyPlane(reflect ? 2 * begin - j : begin, j);
      for (int64_t k = 0; k < p.pads[r + d]; ++k)
        copyPlane(reflect ? begin + n - 2 - k : begin + n - 1, begin + n + k);
    }
  });
}

void broadcastTo(CmdEmitter &em, const BroadcastParams &p) {
  OpCtx ctx{"broadcastTo", p.name};
  requireSamePrec(ctx, p.input, p.output);
  std::vector<int64_t> out = dimsOf(p.output), in = p.input.shape;
  if (in.size() > out.size())
    ctx.fail("input rank exceeds the output rank");
  in.insert(in.begin(), out.size() - in.size(), 1);
  std::vector<int64_t> ist = denseStrides(in), ost = denseStrides(out);
  // Each output dim becomes (repeats, in_dim): source strides (0, dense).
  std::vector<int64_t> dims, ss, ds;
  for (size_t i = 0; i < out.size(); ++i) {
    if (in[i] == 0 || out[i] % in[i] != 0)
      ctx.fail("input dim " + std::to_string(in[i]) + " does not divide " +
               std::to_string(out[i]));
    int64_t rep = out[i] / in[i];
    dims.push_back(rep);
    ss.push_back(0);
    ds.push_back(ost[i] * in[i]);
    dims.push_back(in[i]);
    ss.push_back(ist[i]);
    ds.push_back(ost[i]);
  }
  withCtx(ctx, [&] {
    copyGlobalNd(em, p.input.prec, p.input.addr, ss, p.output.addr, ds, dims);
  });
}

//===----------------------------------------------------------------------===//
// Gather
//===----------------------------------------------------------------------===//

void gather(CmdEmitter &em, const GatherParams &p) {
  OpCtx ctx{"gather", p.name};
  requireSamePrec(ctx, p.input, p.output);
  Prec ip = p.indices.prec;
  if (ip != Prec::Int32 && !isa::isFloat(ip))
    ctx.fail(std::string("indices have precision ") + isa::precName(ip) +
             "; gather takes Int32 or float-encoded (F32, F16, BF16) indices");
  std::vector<int64_t> in = dimsOf(p.input);
  int64_t r = int64_t(in.size());
  int64_t axis = p.axis < 0 ? p.axis + r : p.axis;
  if (axis < 0 || axis >= r)
    ctx.fail("axis out of range");
  int64_t outer = 1, d = in[size_t(axis)], inner = 1;
  for (int64_t i = 0; i < r; ++i) {
    if (i < axis)
      outer *= in[size_t(i)];
    if (i > axis)
      inner *= in[size_t(i)];
  }
  int64_t nIdx = p.indices.numElements();
  requireElements(ctx, p.output, outer * nIdx * inner, "output");
  const isa::ChipParams &chip = em.chip();
  constexpr int64_t kMax = 65535;
  unsigned eb = elemBytes(p.input.prec);
  LocalAlloc alloc(chip, ctx);
  // Index chunks staged in lane 0: (1, 1, 1, count) int32, plus a temp.
  int64_t chunk = std::min<int64_t>(
      nIdx, int64_t((alloc.capacity() / 2 - chip.localAlign) / 4));
  chunk = std::min<int64_t>(chunk, kMax);
  uint64_t idxBuf = alloc.alloc(uint64_t(chunk) * 4, "indices");
  uint64_t tmpBuf = alloc.alloc(uint64_t(chunk) * 4, "indices");
  withCtx(ctx, [&] {
    for (Range1 ic : splitRange(nIdx, chunk)) {
      Shape4 is{1, 1, 1, uint32_t(ic.size)};
      LTensor idx =
          localTensor(chip, idxBuf, Prec::Int32, is, isa::LocalLayout::Compact);
      LTensor tmp =
          localTensor(chip, tmpBuf, Prec::Int32, is, isa::LocalLayout::Compact);
      if (ip == Prec::Int32) {
        load(em, denseView(p.indices.addr + uint64_t(ic.begin) * 4, ip, is),
             idx);
      } else {
        // Float-encoded indices: staged in the temp, converted toward zero
        // (saturating: huge values stay out of range).
        LTensor raw =
            localTensor(chip, tmpBuf, ip, is, isa::LocalLayout::Compact);
        load(em,
             denseView(p.indices.addr + uint64_t(ic.begin) * elemBytes(ip), ip,
                       is),
             raw);
        ar(em, ArOp::Cast, idx, Opd::of(raw), Opd(),
           isa::RoundMode::TowardsZero);
      }
      // Negative indices count from the end; what is still out of range
      // becomes a huge unsigned index, for which DMA_gather writes its
      // constant (zero).
      ar(em, ArOp::Add, tmp, Opd::of(idx), Opd::immInt(int32_t(d)));
      LTensor idxEu = localTensor(chip, idxBuf, Prec::Int32, is);
      cmpSelect(em, CmpOp::SelLt, idxEu, Opd::of(idxEu), Opd::immInt(0),
                Opd::of(localTensor(chip, tmpBuf, Prec::Int32, is)),
                Opd::of(idxEu));
      for (Range1 oc : splitRange(outer, kMax))
        for (Range1 wc : splitRange(inner, kMax)) {
          isa::cmd::DmaGather c;
          c.stride_enable = 1;
          c.cmd_type = unsigned(isa::GdmaType::Gather);
          c.src_data_format = unsigned(isa::gdmaFormatFor(p.input.prec));
          c.src_cstride = uint64_t(d * inner);
          c.src_hstride = uint64_t(inner);
          c.dst_cstride = uint64_t(nIdx * inner);
          c.dst_hstride = uint64_t(inner);
          c.index_cstride = uint64_t(ic.size);
          c.index_hstride = 1;
          c.src_csize = uint64_t(oc.size);
          c.src_hsize = uint64_t(d);
          c.src_wsize = uint64_t(wc.size);
          c.dst_csize = uint64_t(oc.size);
          c.dst_hsize = uint64_t(ic.size);
          c.dst_wsize = uint64_t(wc.size);
          c.index_csize = 1;
          c.index_hsize = uint64_t(ic.size);
          c.constant_value = 0; // written for out-of-range indices
          uint64_t src =
              p.input.addr + uint64_t(oc.begin * d * inner + wc.begin) * eb;
          uint64_t dst =
              p.output.addr +
              uint64_t((oc.begin * nIdx + ic.begin) * inner + wc.begin) * eb;
          uint64_t ia = chip.lmemBase + idxBuf;
          c.src_start_addr_l32 = src & 0xFFFFFFFFu;
          c.src_start_addr_h8 = src >> 32;
          c.dst_start_addr_l32 = dst & 0xFFFFFFFFu;
          c.dst_start_addr_h8 = dst >> 32;
          c.index_start_addr_l32 = ia & 0xFFFFFFFFu;
          c.index_start_addr_h8 = ia >> 32;
          c.localmem_mask_l32 = 0xFFFFFFFFu;
          c.localmem_mask_h32 = 0xFFFFFFFFu;
          em.gdmaAccess(isa::encode(c), {idx.range(chip)}, {});
        }
    }
  });
}

//===----------------------------------------------------------------------===//
// Resize
//===----------------------------------------------------------------------===//

namespace {

/// Source coordinate of output index `o` (ONNX coordinate transforms).
double sourceCoord(ResizeCoord m, int64_t o, int64_t in, int64_t out,
                   double scale) {
  switch (m) {
  case ResizeCoord::HalfPixel:
    return (double(o) + 0.5) / scale - 0.5;
  case ResizeCoord::PytorchHalfPixel:
    return out > 1 ? (double(o) + 0.5) / scale - 0.5 : 0.0;
  case ResizeCoord::AlignCorners:
    return out > 1 ? double(o) * double(in - 1) / double(out - 1) : 0.0;
  case ResizeCoord::Asymmetric:
    return double(o) / scale;
  }
  return 0.0;
}

int64_t nearestIndex(NearestMode m, double x, int64_t in) {
  double v;
  switch (m) {
  case NearestMode::RoundPreferFloor:
    v = x == std::floor(x) + 0.5 ? std::floor(x) : std::round(x);
    break;
  case NearestMode::RoundPreferCeil:
    v = x == std::floor(x) + 0.5 ? std::ceil(x) : std::round(x);
    break;
  case NearestMode::Floor:
    v = std::floor(x);
    break;
  default:
    v = std::ceil(x);
    break;
  }
  return std::clamp<int64_t>(int64_t(v), 0, in - 1);
}

/// One output index: source indices and the weight of the second.
struct Tap {
  int64_t i0, i1;
  float f;
};

std::vector<Tap> taps(const ResizeParams &p, int64_t in, int64_t out,
                      float scaleParam) {
  double scale = scaleParam > 0 ? scaleParam : double(out) / double(in);
  std::vector<Tap> t(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    double x = sourceCoord(p.coord, o, in, out, scale);
    if (p.mode == ResizeMode::Nearest) {
      int64_t i = nearestIndex(p.nearest, x, in);
      t[size_t(o)] = {i, i, 0.0f};
    } else {
      x = std::clamp(x, 0.0, double(in - 1));
      int64_t i0 = int64_t(std::floor(x));
      int64_t i1 = std::min(i0 + 1, in - 1);
      t[size_t(o)] = {i0, i1, float(x - double(i0))};
    }
  }
  return t;
}

} // namespace

std::optional<std::array<int64_t, 2>>
nearestWholeFactors(const ResizeParams &p) {
  if (p.mode != ResizeMode::Nearest || p.input.shape.size() != 4 ||
      p.output.shape.size() != 4)
    return std::nullopt;
  std::array<int64_t, 2> f{};
  for (unsigned d = 0; d < 2; ++d) {
    int64_t in = p.input.shape[2 + d], out = p.output.shape[2 + d];
    if (in <= 0 || out % in)
      return std::nullopt;
    f[d] = out / in;
    std::vector<Tap> t = taps(p, in, out, d == 0 ? p.scaleH : p.scaleW);
    for (int64_t o = 0; o < out; ++o)
      if (t[size_t(o)].i0 != o / f[d])
        return std::nullopt;
  }
  return f;
}

namespace detail {

std::pair<int64_t, int64_t> resizeRows(const ResizeParams &p, int64_t o0,
                                       int64_t count) {
  int64_t ih = p.input.shape[2], oh = p.output.shape[2];
  std::vector<Tap> t = taps(p, ih, oh, p.scaleH);
  int64_t lo = ih, hi = -1;
  for (int64_t o = o0; o < o0 + count; ++o) {
    const Tap &k = t[size_t(o)];
    lo = std::min({lo, k.i0, k.i1});
    hi = std::max({hi, k.i0, k.i1});
  }
  return {lo, hi - lo + 1};
}

void resizeTile(CmdEmitter &em, const ResizeParams &p, const LTensor &in,
                int64_t inRow0, const LTensor &out, int64_t outRow0,
                const std::array<uint64_t, 3> &scratch) {
  const isa::ChipParams &chip = em.chip();
  const bool integer = !isa::isFloat(p.input.prec);
  const bool linear = p.mode == ResizeMode::Linear;
  constexpr Prec kF32 = Prec::Fp32;
  const Prec pr = p.input.prec, wp = integer ? pr : kF32;
  int64_t iw = p.input.shape[3], ow = p.output.shape[3];
  std::vector<Tap> rowTaps =
      taps(p, p.input.shape[2], p.output.shape[2], p.scaleH);
  std::vector<Tap> colTaps = taps(p, iw, ow, p.scaleW);
  uint32_t nn = in.shape.n, cc = in.shape.c, rows = in.shape.h;
  unsigned e4 = elemBytes(wp);
  // Integer tiles carry the data's sign (a copy keeps the code).
  auto sign = [&](LTensor t) {
    t.isSigned = p.input.isSigned;
    return t;
  };
  LTensor x = in;
  if (!integer) {
    x = localTensor(chip, scratch[0], kF32, in.shape);
    ar(em, pr == kF32 ? ArOp::Copy : ArOp::Cast, x, Opd::of(in));
  }
  LTensor mid = localTensor(chip, scratch[1], wp, {nn, cc, rows, uint32_t(ow)});
  // Column pass: mid[:, :, :, o] from x columns.
  auto col = [&](const LTensor &t, int64_t k) {
    return sign(freeTensor(t.offset + uint64_t(k * t.stride.w) * e4, wp,
                           {nn, cc, rows, 1},
                           {t.stride.n, t.stride.c, t.stride.h, 1}));
  };
  for (int64_t o = 0; o < ow; ++o) {
    const Tap &t = colTaps[size_t(o)];
    if (!linear || t.f == 0.0f || t.i0 == t.i1)
      ar(em, ArOp::Copy, col(mid, o), Opd::of(col(x, t.i0)));
    else {
      ar(em, ArOp::Mul, col(mid, o), Opd::of(col(x, t.i0)),
         Opd::imm(1.0f - t.f, kF32));
      ar(em, ArOp::Mac, col(mid, o), Opd::of(col(x, t.i1)),
         Opd::imm(t.f, kF32));
    }
  }
  // Row pass into the fp32 result, then the output precision (an integer
  // resize writes the output directly).
  Shape4 rs{nn, cc, out.shape.h, uint32_t(ow)};
  LTensor res = integer ? out : localTensor(chip, scratch[2], kF32, rs);
  auto row = [&](const LTensor &t, int64_t k) {
    return sign(freeTensor(t.offset + uint64_t(k * t.stride.h) * e4, wp,
                           {nn, cc, 1, uint32_t(ow)},
                           {t.stride.n, t.stride.c, 0, 1}));
  };
  for (int64_t o = 0; o < int64_t(out.shape.h); ++o) {
    const Tap &t = rowTaps[size_t(outRow0 + o)];
    int64_t a = t.i0 - inRow0, b = t.i1 - inRow0;
    if (!linear || t.f == 0.0f || a == b)
      ar(em, ArOp::Copy, row(res, o), Opd::of(row(mid, a)));
    else {
      ar(em, ArOp::Mul, row(res, o), Opd::of(row(mid, a)),
         Opd::imm(1.0f - t.f, kF32));
      ar(em, ArOp::Mac, row(res, o), Opd::of(row(mid, b)), Opd::imm(t.f, kF32));
    }
  }
  if (!integer)
    ar(em, pr == kF32 ? ArOp::Copy : ArOp::Cast, out, Opd::of(res));
}

void nearestRepeat(CmdEmitter &em, const LTensor &in, int64_t inRow0,
                   const LTensor &out, int64_t outRow0, int64_t fh,
                   int64_t fw) {
  unsigned eb = elemBytes(out.prec);
  int64_t rows = out.shape.h;
  for (int64_t dy = 0; dy < fh; ++dy) {
    // The first output row of this phase, and how many follow it.
    int64_t r = outRow0 + ((dy - outRow0 % fh) + fh) % fh;
    if (r >= outRow0 + rows)
      continue;
    uint32_t count = uint32_t((outRow0 + rows - 1 - r) / fh + 1);
    LTensor src = freeTensor(
        in.offset + uint64_t((r / fh - inRow0) * in.stride.h) * eb, in.prec,
        {out.shape.n, out.shape.c, count, in.shape.w}, in.stride);
    src.isSigned = in.isSigned;
    for (int64_t dx = 0; dx < fw; ++dx) {
      LTensor dst = freeTensor(
          out.offset + uint64_t((r - outRow0) * out.stride.h + dx) * eb,
          out.prec, src.shape,
          {out.stride.n, out.stride.c, uint32_t(fh) * out.stride.h,
           uint32_t(fw) * out.stride.w});
      dst.isSigned = out.isSigned;
      ar(em, ArOp::Copy, dst, Opd::of(src));
    }
  }
}

} // namespace detail

void resize(CmdEmitter &em, const ResizeParams &p) {
  // Every resize the chip runs has a local form: alone, a group of one.
  runAlone(em, "resize", p, {p.input}, p.output);
}

} // namespace tpu::backend
