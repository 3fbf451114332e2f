//===- LayerGroup.cpp - Local operations and the group scheduler ----------===//
//
// See LayerGroup.h. The local operations emit the same commands, operand
// for operand, as the tiles of the per-op kernels (conv2d, pool2d, binary,
// binaryConst, unary, scale), so a value computed inside a group equals the
// value the kernel alone computes bit for bit; only where the operands live
// differs. A local op reads a row range of a value that another op of the
// group holds with more rows through a free-stride view (conv and AR
// operands accept one); sPorD (pooling, depthwise) has no operand strides,
// so its input must start at the first row its producer holds.
//
//===----------------------------------------------------------------------===//

#include "tpuc/Backend/LayerGroup.h"

#include "Common.h"

#include "tpu/isa/Estimate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

namespace tpu::backend {

using namespace detail;

RowSpan windowRows(int64_t o0, int64_t count, int64_t stride, int64_t pad,
                   int64_t k, int64_t dil, int64_t ins, int64_t inSize) {
  int64_t step = ins + 1;
  int64_t v0 = o0 * stride - pad;
  int64_t v1 = (o0 + count - 1) * stride - pad + (k - 1) * dil + 1;
  int64_t a = v0 <= 0 ? 0 : ceilDiv(v0, step);
  if (v1 - 1 < 0)
    return {};
  int64_t last = std::min((v1 - 1) / step, inSize - 1);
  if (last < a)
    return {};
  int64_t b = last + 1;
  return {a, b - a, a * step - v0, (v1 - 1) - (b - 1) * step};
}

bool broadcastsHW(const GTensor &t, const std::vector<int64_t> &out) {
  const std::vector<int64_t> &s = t.shape;
  return s.size() == 4 && out.size() == 4 && s[0] == out[0] && s[1] == out[1] &&
         (s[2] == out[2] || s[2] == 1) && (s[3] == out[3] || s[3] == 1);
}

bool isPerChannel(const GTensor &t, int64_t channels) {
  const std::vector<int64_t> &s = t.shape;
  int64_t elems = 1, c = 0;
  for (int64_t d : s)
    elems *= d;
  if (s.size() == 4)
    c = s[1];
  else if (s.size() == 3)
    c = s[0];
  return elems == channels && c == channels;
}

namespace {

//===----------------------------------------------------------------------===//
// What each local op needs
//===----------------------------------------------------------------------===//

Shape4 shape4(const std::array<int64_t, 4> &s) {
  return {uint32_t(s[0]), uint32_t(s[1]), uint32_t(s[2]), uint32_t(s[3])};
}

/// The fused activation or function of an op (None when it has none).
Activation activationOf(const LocalOpParams &p) {
  return std::visit(
      [](const auto &x) -> Activation {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, UnaryParams>)
          return x.fn;
        else if constexpr (std::is_same_v<T, ResizeParams> ||
                           std::is_same_v<T, CastParams> ||
                           std::is_same_v<T, SoftmaxParams> ||
                           std::is_same_v<T, LayerNormParams> ||
                           std::is_same_v<T, ReduceParams> ||
                           std::is_same_v<T, CompareParams> ||
                           std::is_same_v<T, CompareConstParams> ||
                           std::is_same_v<T, WhereParams> ||
                           std::is_same_v<T, PReluParams> ||
                           std::is_same_v<T, PermuteParams> ||
                           std::is_same_v<T, ConcatParams> ||
                           std::is_same_v<T, SliceParams>)
          return {};
        else
          return x.act;
      },
      p);
}

/// An average pooling whose divisor counts only the real inputs of each
/// window (ONNX count_include_pad = 0, TFLite SAME padding) and that has
/// pads.
bool excludesPads(const PoolParams &p) {
  return p.kind == PoolKind::Avg && !p.countIncludePad &&
         (p.padTop || p.padBottom || p.padLeft || p.padRight);
}

/// The scratch tiles of a 3-D pooling's depth taps (PoolParams::depth):
/// the tap's 2-D sums or maxima and the fp32 accumulator; excluding the
/// pads of (H, W) also a tile of ones (of the input rows), the 2-D counts
/// and the divisors.
unsigned depthPoolTemps(const PoolParams &p) { return excludesPads(p) ? 5 : 2; }

bool isConvDepthwise(const ConvParams &p) {
  return !isTransposedForm(p) &&
         isDepthwise(p.input.shape[1], p.output.shape[1], p.groups);
}

/// A transposed convolution whose kernel equals its stride, without pads
/// or dilation (ONNX ConvTranspose k = s, pads 0: the upsampling deconvs
/// of FPN heads). Output pixel (s y + a, s x + b) reads only input pixel
/// (y, x) with tap (a, b) of the stored filter (the command rotates it):
/// s^2 phases, each a 1 x 1 convolution of the input with that tap's
/// filter, where the zero-inserted form multiplies s^2 - 1 inserted zeros
/// for every real product.
bool subPixelDeconv(const ConvParams &c) {
  return isTransposedForm(c) && c.rotate && c.groups == 1 &&
         c.kernelH == c.insH + 1 && c.kernelW == c.insW + 1 &&
         c.kernelH * c.kernelW >= 2 && c.dilationH == 1 &&
         c.dilationW == 1 && c.strideH == 1 && c.strideW == 1 &&
         c.padTop == c.kernelH - 1 && c.padBottom == c.kernelH - 1 &&
         c.padLeft == c.kernelW - 1 && c.padRight == c.kernelW - 1;
}

/// The sliding window of a conv or pooling op.
struct Window {
  int64_t kh, kw, sh, sw, dh, dw, padT, padL;
  int64_t outW;
  /// Runs on sPorD (pooling, depthwise), which has no operand strides: its
  /// input must start at the first row and column its producer holds.
  bool pord;
  /// Zeros inserted between input rows / columns and the kernel rotated (a
  /// transposed convolution).
  int64_t insH = 0, insW = 0;
  bool rotate = false;
  RowSpan rows(int64_t o0, int64_t count, int64_t inH) const {
    return windowRows(o0, count, sh, padT, kh, dh, insH, inH);
  }
  RowSpan cols(int64_t inW) const { return colsFor(0, outW, inW); }
  /// The input columns output columns [o0, o0 + count) read.
  RowSpan colsFor(int64_t o0, int64_t count, int64_t inW) const {
    return windowRows(o0, count, sw, padL, kw, dw, insW, inW);
  }
};

/// The window of a conv or pooling op; none for the element-wise ops.
std::optional<Window> windowOf(const LocalOpParams &p) {
  if (const auto *c = std::get_if<ConvParams>(&p))
    return Window{
        c->kernelH,         c->kernelW,          c->strideH, c->strideW,
        c->dilationH,       c->dilationW,        c->padTop,  c->padLeft,
        c->output.shape[3], isConvDepthwise(*c), c->insH,    c->insW,
        c->rotate};
  if (const auto *q = std::get_if<PoolParams>(&p))
    return Window{q->kernelH,  q->kernelW,   q->strideH,
                  q->strideW,  q->dilationH, q->dilationW,
                  q->padTop,   q->padLeft,   q->output.shape[3],
                  true};
  return std::nullopt;
}

/// The window fields of a conv or sPorD command for one slice.
template <typename Cmd>
void setWindow(Cmd &cmd, const Window &w, const RowSpan &rows, int64_t padB,
               const RowSpan &cols, int64_t padR) {
  cmd.kh = unsigned(w.kh);
  cmd.kw = unsigned(w.kw);
  cmd.strideH = unsigned(w.sh);
  cmd.strideW = unsigned(w.sw);
  cmd.dilH = unsigned(w.dh);
  cmd.dilW = unsigned(w.dw);
  cmd.padT = unsigned(rows.padBefore);
  cmd.padB = unsigned(padB);
  cmd.padL = unsigned(cols.padBefore);
  cmd.padR = unsigned(padR);
  cmd.insH = unsigned(w.insH);
  cmd.insW = unsigned(w.insW);
  cmd.rotate = w.rotate;
}

/// The Activation a command sequence applies after the op's main command
/// (None when it is fused into it: Relu inside the conv).
Activation trailingActivation(const LocalOpParams &p) {
  Activation a = activationOf(p);
  if ((std::holds_alternative<ConvParams>(p) ||
       std::holds_alternative<MatMulParams>(p)) &&
      a.kind == UnaryKind::Relu)
    return {};
  return a;
}

/// A weight resident in local memory, compact (1, c, h, w) (or another
/// layout), read from DDR densely (or with `gstride`).
struct Resident {
  uint64_t addr = 0;
  Prec prec = Prec::Fp32;
  Shape4 shape;
  /// Depthwise bias: also a copy converted to this precision.
  std::optional<Prec> castTo;
  isa::LocalLayout layout = isa::LocalLayout::Compact;
  std::optional<Stride4> gstride = std::nullopt;
  /// Its channels are the op's output channels (a C slice loads its own);
  /// false for a matmul's right matrix in the row layout, which every
  /// slice reads whole (in the matrix(w) layout its column blocks are the
  /// channels).
  bool perChannel = true;
  /// A matrix(w) weight (matrixColumnsLayout), loaded by DMA_matrix:
  /// `shape` is (rows, ceil(matrixCols / w), 1, w), read from the dense
  /// [rows, matrixCols] matrix at `addr` with rows of `matrixStride`
  /// elements or, `matrixTranspose`, from the [matrixCols, rows] one (rows
  /// of matrixStride) read transposed. 0: a tensor move.
  int64_t matrixCols = 0;
  int64_t matrixStride = 0;
  bool matrixTranspose = false;
};

/// The columns of a matrix of `cols` columns held in blocks of `w`
/// (matrix(w) layout) that blocks [b0, b0 + count) hold: the first one and
/// how many, the last block cut at the matrix's end.
std::pair<int64_t, int64_t> blockColumns(int64_t b0, int64_t count, int64_t w,
                                         int64_t cols) {
  return {b0 * w, std::min(cols - b0 * w, count * w)};
}

/// A weight every lane holds whole (channel stride 0 in DDR: a lane
/// broadcast): a lookup table, a matmul bias, a layer norm's scale.
bool laneBroadcast(const Resident &r) {
  return r.gstride && r.gstride->c == 0;
}

/// A matmul's right operand: a 2-D weight (resident) or, in the rows
/// layout (matrixRowsLayout), a group value (B, K, 1, N), or (B, N, 1, K)
/// when transposed (mm2.nt reads it so).
bool rightIsWeight(const MatMulParams &m) { return m.right.shape.size() == 2; }
/// A matmul's reduction length K and result columns N.
std::array<int64_t, 2> matmulKN(const MatMulParams &m) {
  const std::vector<int64_t> &s = m.right.shape;
  if (rightIsWeight(m))
    return m.rightTransposed ? std::array<int64_t, 2>{s[1], s[0]}
                             : std::array<int64_t, 2>{s[0], s[1]};
  if (s.size() != 4)
    return {0, 0};
  return m.rightTransposed ? std::array<int64_t, 2>{s[3], s[1]}
                           : std::array<int64_t, 2>{s[1], s[3]};
}

/// The lanes a matrix held a row per channel (matrixRowsLayout: (B, M, 1,
/// K)) has rows in: a row copied into every lane (a matmul's bias, a layer
/// norm's scale) is needed in these only (a few rows use a few lanes).
uint32_t rowLanes(const GTensor &rows, const isa::ChipParams &chip) {
  int64_t m = rows.shape.size() == 4 ? rows.shape[1] : chip.npuNum;
  return uint32_t(std::clamp<int64_t>(m, 1, chip.npuNum));
}

/// The weights op `p` reads, in a fixed order (the emitter indexes them);
/// `columnsW`: the group's matrix(w) block width (GroupSpec::matrixColumns).
std::vector<Resident> residentsOf(const LocalOpParams &p,
                                  const std::vector<int> &inputs,
                                  const isa::ChipParams &chip,
                                  int64_t columnsW = 0) {
  std::vector<Resident> r;
  if (const auto *c = std::get_if<ConvParams>(&p)) {
    int64_t oc = c->output.shape[1];
    Prec prec = c->input.prec;
    bool dw = isConvDepthwise(*c);
    Shape4 tile = convFilterTile(chip, prec, oc, c->input.shape[1] / c->groups,
                                 c->kernelH, c->kernelW, dw);
    // A deconv in sub-pixel phases: each tap's filter as a 1 x 1 conv's,
    // (1, oc, ic blocks, block) gathered from the stored layout ([ic block]
    // [kh][kw][block] per output channel), tap 0 in the filter's place, the
    // others after the op's other weights (subPixelTap).
    std::vector<Resident> taps;
    if (subPixelDeconv(*c)) {
      int64_t icp = chip.icParallel(prec), t = c->kernelH * c->kernelW;
      for (int64_t k = 0; k < t; ++k)
        taps.push_back({c->filterAddr + uint64_t(k * icp) * elemBytes(prec),
                        prec,
                        {1, uint32_t(oc), tile.h, uint32_t(icp)},
                        {},
                        isa::LocalLayout::Compact,
                        Stride4{0, int64_t(tile.h) * tile.w, t * icp, 1}});
      r.push_back(taps[0]);
    } else {
      r.push_back({c->filterAddr, prec, tile, {},
                   isa::LocalLayout::Compact, std::nullopt});
    }
    if (c->quant) {
      // The records [bias, multiplier, -rshift, zp], stored part by part
      // (splitRequantRecords): the biases compact, each triple at the
      // start of a channel slot (RQ1). TFLite's two steps: the second
      // step's triples likewise (index 3).
      RequantRecordParts rec = requantRecordParts(c->quant->coeffAddr, oc, 0);
      r.push_back({rec.bias, Prec::Int32, {1, uint32_t(oc), 1, 1}, {},
                   isa::LocalLayout::Compact, std::nullopt});
      r.push_back({rec.step1, Prec::Int32, {1, uint32_t(oc), 1, 3}, {},
                   isa::LocalLayout::EuAligned, Stride4{0, 3, 1, 1}});
      if (c->quant->twoSteps)
        r.push_back({rec.step2, Prec::Int32, {1, uint32_t(oc), 1, 3}, {},
                     isa::LocalLayout::EuAligned, Stride4{0, 3, 1, 1}});
    }
    if (c->biasAddr) {
      std::optional<Prec> cast;
      if (dw && prec != Prec::Fp32)
        cast = prec;
      r.push_back({*c->biasAddr, Prec::Fp32, {1, uint32_t(oc), 1, 1}, cast,
                   isa::LocalLayout::Compact, std::nullopt});
    }
    for (size_t k = 1; k < taps.size(); ++k)
      r.push_back(taps[k]);
  } else if (const auto *m = std::get_if<MatMulParams>(&p)) {
    // The right matrix in matrix2 layout (a row of K per channel; none when
    // it is a group value), and the bias row copied into every lane.
    auto [k, n] = matmulKN(*m);
    std::optional<uint64_t> bias =
        m->quant ? m->quant->biasAddr : m->biasAddr;
    if (columnsW > 0) {
      // The matrix(w) layout: the right matrix (K, ceil(N / w), 1, w), its
      // columns in blocks across the lanes (a C slice loads its blocks),
      // and the bias row likewise, as the per-op matmul loads them.
      uint32_t blocks = uint32_t(ceilDiv(n, columnsW));
      Resident right{m->right.addr, m->right.prec,
                     {uint32_t(k), blocks, 1, uint32_t(columnsW)}, {},
                     isa::LocalLayout::EuAligned, std::nullopt};
      right.matrixCols = n;
      right.matrixStride = m->rightTransposed  ? k
                           : m->rightRowStride ? m->rightRowStride
                                               : n;
      right.matrixTranspose = m->rightTransposed;
      r.push_back(right);
      if (bias) {
        Resident b{*bias, m->quant ? Prec::Int32 : Prec::Fp32,
                   {1, blocks, 1, uint32_t(columnsW)}, {},
                   isa::LocalLayout::EuAligned, std::nullopt};
        b.matrixCols = n;
        b.matrixStride = n;
        r.push_back(b);
      }
      return r;
    }
    if (rightIsWeight(*m)) {
      // A weight stored [N, K] (ONNX Gemm transB, TFLite FULLY_CONNECTED)
      // is read transposed from DDR: row k of the resident is column k of
      // the stored matrix (element stride K along the row).
      std::optional<Stride4> strides;
      if (m->rightTransposed)
        strides = Stride4{k * n, 1, k * n, k};
      else if (m->rightRowStride) // 0 when the rows are N long
        strides = Stride4{k * m->rightRowStride, m->rightRowStride,
                          m->rightRowStride, 1};
      Resident right{m->right.addr, m->right.prec,
                     {1, uint32_t(k), 1, uint32_t(n)}, {},
                     isa::LocalLayout::EuAligned, strides};
      right.perChannel = false;
      r.push_back(right);
    }
    // INT8: the int32 bias, also copied into every lane that holds a row.
    if (bias)
      r.push_back({*bias, m->quant ? Prec::Int32 : Prec::Fp32,
                   {1, rowLanes(m->output, chip), 1, uint32_t(n)}, {},
                   isa::LocalLayout::Compact, Stride4{0, 0, 0, 1}});
  } else if (const auto *ln = std::get_if<LayerNormParams>(&p)) {
    // Scale and bias rows copied into every lane that holds a row.
    uint32_t d = uint32_t(ln->input.shape.back());
    for (const std::optional<uint64_t> &a : {ln->scaleAddr, ln->biasAddr})
      if (a)
        r.push_back({*a, Prec::Fp32, {1, rowLanes(ln->input, chip), 1, d}, {},
                     isa::LocalLayout::Compact, Stride4{0, 0, 0, 1}});
  } else if (const auto *l = std::get_if<LutParams>(&p)) {
    // The 256-entry table, the same bytes in every lane (channel stride 0
    // in DDR), as the lut kernel loads it.
    r.push_back({l->tableAddr, Prec::Int8,
                 {1, uint32_t(chip.npuNum), 1, 256}, {},
                 isa::LocalLayout::Compact, Stride4{0, 0, 0, 1}});
  } else if (const auto *s = std::get_if<ScaleParams>(&p)) {
    uint32_t c = uint32_t(s->input.shape[1]);
    r.push_back({s->scale.addr, s->scale.prec, {1, c, 1, 1}, {},
                 isa::LocalLayout::Compact, std::nullopt});
    r.push_back({s->bias.addr, s->bias.prec, {1, c, 1, 1}, {},
                 isa::LocalLayout::Compact, std::nullopt});
  } else if (const auto *pr = std::get_if<PReluParams>(&p);
             pr && inputs.size() < 2) {
    // A slope that is no group value is a per-channel weight.
    r.push_back({pr->slope.addr,
                 pr->slope.prec,
                 {1, uint32_t(pr->input.shape[1]), 1, 1},
                 {},
                 isa::LocalLayout::Compact,
                 std::nullopt});
  } else if (const auto *b = std::get_if<BinaryParams>(&p)) {
    // Operands that are no group value are per-channel weights.
    uint32_t c = uint32_t(b->output.shape[1]);
    const GTensor *ops[2] = {&b->lhs, &b->rhs};
    for (unsigned k = 0; k < 2; ++k)
      if (k < inputs.size() && inputs[k] < 0)
        r.push_back({ops[k]->addr, ops[k]->prec, {1, c, 1, 1}, {},
                     isa::LocalLayout::Compact, std::nullopt});
  }
  return r;
}

/// Local memory bytes per lane of weight `r`.
uint64_t residentBytes(const Resident &r, const isa::ChipParams &chip) {
  return localTensor(chip, 0, r.prec, r.shape, r.layout).range(chip).bytes;
}

/// Local memory bytes per lane of the cast copy of weight `r` (0: none).
uint64_t castBytes(const Resident &r, const isa::ChipParams &chip) {
  if (!r.castTo)
    return 0;
  return localTensor(chip, 0, *r.castTo, r.shape, isa::LocalLayout::Compact)
      .range(chip)
      .bytes;
}

/// An op that mixes channels: it reads all of its input's for each output
/// channel (a convolution but a depthwise one; in the matrix(w) layout, a
/// matmul, whose left matrix holds K across the lanes).
bool mixesChannels(const GroupSpec &spec, const GroupOp &op) {
  if (const auto *c = std::get_if<ConvParams>(&op.params))
    return !isConvDepthwise(*c);
  return spec.matrixColumns > 0 &&
         std::holds_alternative<MatMulParams>(op.params);
}

/// Why `spec` cannot be cut along C at all (empty when it can; the rules do
/// not depend on the count): every value holds the last output's channels
/// but the inputs of convolutions that mix channels, which are loaded whole
/// in every slice, so they must come from outside the group and feed only
/// such convolutions.
std::string channelSliceError(const GroupSpec &spec) {
  std::vector<int> whole(spec.values.size(), 0), other(spec.values.size(), 0);
  for (const GroupOp &op : spec.ops)
    for (size_t k = 0; k < op.inputs.size(); ++k)
      if (op.inputs[k] >= 0)
        (mixesChannels(spec, op) && k == 0 ? whole : other)[size_t(op.inputs[k])] =
            1;
  for (const GroupOp &op : spec.ops) {
    if (const auto *m = std::get_if<MatMulParams>(&op.params);
        m && !rightIsWeight(*m))
      return "a matmul of two activations (its right rows are no slice's)";
    // A slice's lane slots would cut through the groups, each of which
    // reads its own input channels.
    if (const auto *cv = std::get_if<ConvParams>(&op.params);
        cv && cv->groups > 1 && !isConvDepthwise(*cv))
      return "a grouped convolution";
    // Its inputs' channels are not the slice's.
    if (std::holds_alternative<ConcatParams>(op.params))
      return "a concat along C";
    if (const auto *sl = std::get_if<SliceParams>(&op.params);
        sl && sl->input.shape[1] != sl->output.shape[1])
      return "a slice along C";
  }
  int64_t c = spec.values[size_t(spec.ops.back().output)].shape[1];
  for (size_t v = 0; v < spec.values.size(); ++v) {
    if (whole[v] && !spec.values[v].loaded)
      return "a convolution reads channels computed in the group";
    if (whole[v] && other[v])
      return "a value read whole and by channel-wise ops";
    if (!whole[v] && spec.values[v].shape[1] != c)
      return "values of different channel counts";
  }
  return "";
}

/// The offsets of weights `rs` laid out one after another from `at` (the
/// region a previous group prefetches them into); `end` gets where the last
/// one ends. The group that loads them and the group that reads them both
/// call it, so they agree on every offset.
std::vector<uint64_t> layoutFrom(const std::vector<Resident> &rs,
                                 const isa::ChipParams &chip, uint64_t at,
                                 uint64_t &end) {
  std::vector<uint64_t> offsets;
  for (const Resident &r : rs) {
    offsets.push_back(at);
    at = uint64_t(alignUp(int64_t(at + residentBytes(r, chip)),
                          int64_t(chip.localAlign)));
  }
  end = at;
  return offsets;
}

/// The resident weights of the first op of `spec`.
std::vector<Resident> firstResidents(const GroupSpec &spec,
                                     const isa::ChipParams &chip) {
  if (spec.ops.empty())
    return {};
  return residentsOf(spec.ops[0].params, spec.ops[0].inputs, chip,
                     spec.matrixColumns);
}

unsigned tempsOfOp(const LocalOpParams &p);

/// fp32 (or int32) scratch tiles (of the output slice's shape) op `p`
/// needs: the INT8 ops' int32 accumulators, a matmul's products before its
/// bias, softmax's and layer norm's tiles, else the trailing function's
/// (tempsOfOp); and a sub-pixel deconv's phase tile.
unsigned tempsOf(const LocalOpParams &p) {
  unsigned t = tempsOfOp(p);
  // A deconv in sub-pixel phases: a phase's result before its strided copy
  // (after the INT8 accumulator).
  if (const auto *c = std::get_if<ConvParams>(&p); c && subPixelDeconv(*c))
    t = std::max(t, c->quant ? 2u : 1u);
  return t;
}

unsigned tempsOfOp(const LocalOpParams &p) {
  if (const auto *c = std::get_if<ConvParams>(&p); c && c->quant)
    return 1;
  if (const auto *q = std::get_if<PoolParams>(&p);
      q && q->quant && q->kind == PoolKind::Avg)
    return 1;
  // A 3-D pooling's depth taps; the trailing function's scratch reuses
  // them once the result is written.
  if (const auto *q = std::get_if<PoolParams>(&p); q && q->depth) {
    Activation a = trailingActivation(p);
    return std::max(depthPoolTemps(*q),
                    a.kind == UnaryKind::None ? 0u : unaryTemps(a.kind));
  }
  // An average pooling that excludes the pads: its sums, a tile of ones
  // (of the input rows, see Schedule::build) and the counts; the trailing
  // function's scratch after them.
  if (const auto *q = std::get_if<PoolParams>(&p); q && excludesPads(*q)) {
    Activation a = trailingActivation(p);
    return std::max(3u, a.kind == UnaryKind::None ? 0u : unaryTemps(a.kind));
  }
  if (std::holds_alternative<BinaryInt8Params>(p))
    return 2;
  // A cast through an integer type: its integer tile.
  if (const auto *c = std::get_if<CastParams>(&p))
    return c->viaInt ? 1 : 0;
  if (std::holds_alternative<SoftmaxParams>(p))
    return 4;
  if (std::holds_alternative<LayerNormParams>(p))
    return 3;
  // A reduction: its input rows in fp32 (of the input's shape, see
  // Schedule::build) and the fp32 result.
  if (std::holds_alternative<ReduceParams>(p))
    return 2;
  // A parametric relu: the slope's products.
  if (std::holds_alternative<PReluParams>(p))
    return 1;
  // A resize by its column and row passes (resizeTile): the fp32 input,
  // the column pass and the fp32 rows (sized by the larger of its input
  // and output, see Schedule::build).
  if (const auto *r = std::get_if<ResizeParams>(&p);
      r && !nearestWholeFactors(*r))
    return 3;
  // Comparisons and selections (sCMP): their own scratch, and the EU-
  // aligned copies of operands read through free strides (Schedule::
  // emitOp; operands of mixed precisions are converted into scratch
  // anyway).
  if (const auto *c = std::get_if<CompareParams>(&p)) {
    bool mixed = c->lhs.prec != c->rhs.prec;
    return compareTemps(c->kind, mixed) + (mixed ? 0 : 2);
  }
  if (const auto *c = std::get_if<CompareConstParams>(&p))
    return compareTemps(c->kind, false) + 1;
  if (std::holds_alternative<WhereParams>(p))
    return 3;
  // A power of two tensors: emitPowTensor's fp32 tiles, then the trailing
  // function's.
  if (const auto *b = std::get_if<BinaryParams>(&p);
      b && b->kind == BinaryKind::Pow) {
    Activation a = trailingActivation(p);
    return std::max(unaryTemps(UnaryKind::Pow) + 1,
                    a.kind == UnaryKind::None ? 0u : unaryTemps(a.kind));
  }
  Activation a = trailingActivation(p);
  unsigned t = a.kind == UnaryKind::None ? 0 : unaryTemps(a.kind);
  // A matmul with a bias: the fp32 products before the bias add (free
  // again before the trailing function); INT8: the int32 accumulator.
  if (const auto *m = std::get_if<MatMulParams>(&p);
      m && (m->biasAddr || m->quant))
    t = std::max(t, 1u);
  return t;
}

/// A softmax along H (each column normalised; softmaxTile's !alongW):
/// every row of a column in every slice, its statistics one per column.
bool softmaxAlongH(const LocalOpParams &p) {
  const auto *s = std::get_if<SoftmaxParams>(&p);
  return s && s->input.shape.size() == 4 && (s->axis == 2 || s->axis == -2);
}

/// fp32 scratch of one element per row of the output slice (n, c, h, 1)
/// (per column, (n, c, 1, w), for a softmax along H): the row statistics
/// of softmax (max, sum; log-softmax also the four tiles of the sum's log)
/// and layer norm (mean, var).
unsigned rowTempsOf(const LocalOpParams &p) {
  if (const auto *s = std::get_if<SoftmaxParams>(&p))
    return s->log ? 6 : 2;
  return std::holds_alternative<LayerNormParams>(p) ? 2 : 0;
}

/// The functions whose coefficient tables op `p` reads.
std::vector<UnaryKind> tableKindsOf(const LocalOpParams &p) {
  std::vector<UnaryKind> k;
  // Log-softmax: the exp and the log (softplus's tables hold both).
  if (const auto *s = std::get_if<SoftmaxParams>(&p))
    k.push_back(s->log ? UnaryKind::Softplus : UnaryKind::Exp);
  if (const auto *b = std::get_if<BinaryParams>(&p);
      b && b->kind == BinaryKind::Pow)
    k.push_back(UnaryKind::Pow);
  Activation a = trailingActivation(p);
  if (a.kind != UnaryKind::None)
    k.push_back(a.kind);
  return k;
}

} // namespace

std::string localOpSupport(const LocalOpParams &params,
                           const isa::ChipParams &chip) {
  auto floatOk = [](const GTensor &t) { return isa::isFloat(t.prec); };
  auto rank4 = [](const GTensor &t) { return t.shape.size() == 4; };
  return std::visit(
      [&](const auto &x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, ConvParams>) {
          if (!rank4(x.input) || !rank4(x.output))
            return "not a 2-D convolution";
          if (x.quant) {
            if (x.input.prec != Prec::Int8 || x.output.prec != Prec::Int8)
              return "an INT8 convolution of other precisions";
            if (isConvDepthwise(x) && !x.input.isSigned)
              return "an INT8 depthwise convolution of an unsigned input";
          } else if (!floatOk(x.input) || !floatOk(x.output))
            return "integer convolution";
          if (x.quant && isTransposedForm(x) && x.quant->inputZeroPoint)
            return "an INT8 transposed convolution with an input zero point";
          if (x.act.kind != UnaryKind::None && x.act.kind != UnaryKind::Relu &&
              unaryTemps(x.act.kind) > 2)
            return "fused activation needs too much scratch";
          return "";
        } else if constexpr (std::is_same_v<T, PoolParams>) {
          if (!rank4(x.input) || !rank4(x.output))
            return "not a 2-D pooling";
          if (!floatOk(x.input) &&
              (x.input.prec != Prec::Int8 || x.output.prec != Prec::Int8 ||
               (x.kind == PoolKind::Avg && !x.quant)))
            return "integer pooling without its requantisation";
          if (!floatOk(x.input) && excludesPads(x))
            return "integer average pooling that excludes the pads";
          if (x.depth && (!floatOk(x.input) || !floatOk(x.output)))
            return "integer 3-D pooling";
          if (x.depth && x.depth->taps < 1)
            return "a 3-D pooling without depth taps";
          return "";
        } else if constexpr (std::is_same_v<T, BinaryParams>) {
          if (!rank4(x.output))
            return "not a 4-D element-wise op";
          if (x.lhs.prec != x.output.prec || x.rhs.prec != x.output.prec)
            return "mixed precisions";
          // A power reads whole tiles of both (emitPowTensor's fp32
          // sequence).
          if (x.kind == BinaryKind::Pow &&
              (x.lhs.shape != x.output.shape || x.rhs.shape != x.output.shape))
            return "a power of a broadcast operand";
          // Same shape, a per-channel weight, or a per-(n, c) activation.
          const std::vector<int64_t> &o = x.output.shape;
          for (const GTensor *t : {&x.lhs, &x.rhs})
            if (t->shape != o && !isPerChannel(*t, o[1]) &&
                !broadcastsHW(*t, o))
              return "broadcast operand";
          return "";
        } else if constexpr (std::is_same_v<T, BinaryConstParams>) {
          if (x.kind == BinaryKind::Pow)
            return "pow";
          if (!rank4(x.output) || x.input.shape != x.output.shape ||
              x.input.prec != x.output.prec)
            return "not a 4-D element-wise op of one shape and precision";
          return "";
        } else if constexpr (std::is_same_v<T, UnaryParams>) {
          if (!rank4(x.output) || x.input.shape != x.output.shape ||
              x.input.prec != x.output.prec)
            return "not a 4-D element-wise op of one shape and precision";
          return "";
        } else if constexpr (std::is_same_v<T, BinaryInt8Params>) {
          if (!rank4(x.output))
            return "an INT8 add / sub / mul of operands of other shapes";
          // Same shape, or a per-(n, c) activation: emitBinaryInt8Tile
          // passes its operands to AR commands only.
          const std::vector<int64_t> &o = x.output.shape;
          for (const GTensor *t : {&x.lhs, &x.rhs})
            if (t->shape != o && !broadcastsHW(*t, o))
              return "an INT8 add / sub / mul of operands of other shapes";
          return "";
        } else if constexpr (std::is_same_v<T, ResizeParams>) {
          if (!rank4(x.input) || !rank4(x.output) ||
              x.input.shape[0] != x.output.shape[0] ||
              x.input.shape[1] != x.output.shape[1])
            return "a resize of other than the two innermost dims";
          if (x.input.prec != x.output.prec)
            return "a resize of mixed precisions";
          std::optional<std::array<int64_t, 2>> f = nearestWholeFactors(x);
          // Otherwise the kernel's column and row passes (resizeTile; a
          // slice whose scratch planes exceed the AR's 16-bit strides
          // fails to emit, and the planner cuts finer).
          if (!f)
            return !isa::isFloat(x.input.prec) && x.mode != ResizeMode::Nearest
                       ? "an integer resize other than nearest"
                       : "";
          if (!nearestRepeatFits((*f)[0], (*f)[1], x.output.shape[3]))
            return "a resize whose output rows exceed the 16-bit stride";
          return "";
        } else if constexpr (std::is_same_v<T, CastParams>) {
          if (!rank4(x.input) || !rank4(x.output) ||
              x.input.shape != x.output.shape)
            return "a cast that reshapes";
          return "";
        } else if constexpr (std::is_same_v<T, MatMulParams>) {
          if (x.quant ? x.left.prec != Prec::Int8 ||
                            x.right.prec != Prec::Int8 ||
                            x.output.prec != Prec::Int8
                      : !floatOk(x.left) || !floatOk(x.output) ||
                            x.left.prec != x.right.prec)
            return "a matmul of other precisions";
          if (!rightIsWeight(x) &&
              (!rank4(x.right) || x.right.shape[2] != 1 ||
               x.right.shape[0] != x.left.shape[0]))
            return "a matmul by other than a 2-D weight or a matrix of each "
                   "batch";
          if (!rank4(x.left) || !rank4(x.output) || x.left.shape[2] != 1 ||
              x.output.shape[2] != 1)
            return "a matmul whose rows are not held one per channel";
          auto [k, n] = matmulKN(x);
          if (x.left.shape[3] != k || x.output.shape[3] != n ||
              x.left.shape[0] != x.output.shape[0] ||
              x.left.shape[1] != x.output.shape[1])
            return "a matmul of mismatched shapes";
          // A weight's K is cut by reduced-axis slices where it passes the
          // command's 16 bits (Schedule::build checks each slice's).
          if ((k > 65535 && !rightIsWeight(x)) || n > 65535)
            return "a matmul wider than the command's 16-bit sizes";
          if (x.act.kind != UnaryKind::None && x.act.kind != UnaryKind::Relu &&
              unaryTemps(x.act.kind) > 2)
            return "fused activation needs too much scratch";
          return "";
        } else if constexpr (std::is_same_v<T, SoftmaxParams> ||
                             std::is_same_v<T, LayerNormParams>) {
          if (!floatOk(x.input) || !floatOk(x.output))
            return "an integer normalisation";
          if (!rank4(x.input) || x.input.shape != x.output.shape)
            return "a normalisation that reshapes";
          // Softmax also along H (its tile normalises columns).
          if (x.axis != 3 && x.axis != -1 &&
              !(std::is_same_v<T, SoftmaxParams> &&
                (x.axis == 2 || x.axis == -2)))
            return std::is_same_v<T, SoftmaxParams>
                       ? "a softmax over other than H or W"
                       : "a normalisation over other than the last axis";
          return "";
        } else if constexpr (std::is_same_v<T, LutParams>) {
          if (!rank4(x.output) || x.input.shape != x.output.shape)
            return "a table lookup of a reshaping input";
          if (x.input.prec != Prec::Int8 || x.output.prec != Prec::Int8)
            return "a table lookup of other than int8 / uint8";
          return "";
        } else if constexpr (std::is_same_v<T, CompareParams> ||
                             std::is_same_v<T, WhereParams>) {
          // Operands of the result's shape or one value per (n, c).
          std::vector<const GTensor *> in;
          if constexpr (std::is_same_v<T, CompareParams>) {
            if (!floatOk(x.lhs) || !floatOk(x.rhs))
              return "a comparison of integers";
            in = {&x.lhs, &x.rhs};
          } else {
            if (!floatOk(x.output) || x.x.prec != x.output.prec ||
                x.y.prec != x.output.prec)
              return "a selection of other than one float precision";
            in = {&x.cond, &x.x, &x.y};
          }
          if (!rank4(x.output))
            return "not a 4-D element-wise op";
          for (const GTensor *t : in)
            if (t->shape != x.output.shape && !broadcastsHW(*t, x.output.shape))
              return "broadcast operand";
          return "";
        } else if constexpr (std::is_same_v<T, PermuteParams>) {
          // H and W swapped in every (n, c): one AR copy through a
          // transposed view, in each lane.
          if (x.order != std::vector<int64_t>{0, 1, 3, 2})
            return "a permute other than of H and W";
          if (!rank4(x.input) || !rank4(x.output) ||
              x.input.prec != x.output.prec)
            return "not a 4-D permute of one precision";
          const std::vector<int64_t> &i = x.input.shape, &o = x.output.shape;
          if (o != std::vector<int64_t>{i[0], i[1], i[3], i[2]})
            return "a permute of mismatched shapes";
          return "";
        } else if constexpr (std::is_same_v<T, SliceParams>) {
          // A view of the input's rows and columns with the steps in its
          // strides, copied: along C a channel range (step 1), by the GDMA
          // when it starts in another lane.
          if (!rank4(x.input) || !rank4(x.output) ||
              x.input.prec != x.output.prec || x.starts.size() != 4 ||
              x.steps.size() != 4)
            return "not a 4-D slice of one precision";
          for (int64_t st : x.steps)
            if (st < 1)
              return "a slice with a negative step";
          if (x.starts[0] != 0 || x.steps[0] != 1 ||
              x.input.shape[0] != x.output.shape[0])
            return "a slice along N";
          if (x.steps[1] != 1)
            return "a slice along C with a step";
          for (size_t d = 1; d < 4; ++d)
            if (x.starts[d] < 0 ||
                x.starts[d] + (x.output.shape[d] - 1) * x.steps[d] >=
                    x.input.shape[d])
              return "a slice out of its input";
          return "";
        } else if constexpr (std::is_same_v<T, ConcatParams>) {
          // Along C: a GDMA copy of each input's slice into its channels
          // of the result, which start in another lane.
          if (x.axis != 1)
            return "a concat along other than C";
          if (!rank4(x.output) || x.inputs.empty())
            return "not a 4-D concat";
          int64_t c = 0;
          for (const GTensor &t : x.inputs) {
            if (!rank4(t) || t.prec != x.output.prec)
              return "not a 4-D concat of one precision";
            if (t.shape[0] != x.output.shape[0] ||
                t.shape[2] != x.output.shape[2] ||
                t.shape[3] != x.output.shape[3])
              return "a concat of mismatched shapes";
            c += t.shape[1];
          }
          if (c != x.output.shape[1])
            return "a concat of mismatched shapes";
          return "";
        } else if constexpr (std::is_same_v<T, PReluParams>) {
          if (!floatOk(x.input) || x.input.prec != x.output.prec ||
              x.slope.prec != x.output.prec)
            return "not a float parametric relu of one precision";
          if (!rank4(x.output) || x.input.shape != x.output.shape)
            return "not a 4-D parametric relu of one shape";
          // A per-channel weight, or (a value) of the output's shape or
          // one per (n, c) row / column.
          if (!isPerChannel(x.slope, x.output.shape[1]) &&
              x.slope.shape != x.output.shape &&
              !broadcastsHW(x.slope, x.output.shape))
            return "a slope other than one per channel or of the input's "
                   "shape";
          return "";
        } else if constexpr (std::is_same_v<T, CompareConstParams>) {
          if (!floatOk(x.input))
            return "a comparison of integers";
          if (!rank4(x.output) || x.input.shape != x.output.shape)
            return "not a 4-D element-wise op of one shape";
          return "";
        } else if constexpr (std::is_same_v<T, ReduceParams>) {
          // Over H and / or W of (n, c, h, w), each (n, c) alone: one
          // pooling command whose window is the reduced extent.
          if (!floatOk(x.input) || !floatOk(x.output))
            return "an integer reduction";
          if (x.kind == ReduceKind::Prod)
            return "a product reduction";
          if (!rank4(x.input) || !rank4(x.output))
            return "a reduction of other than (n, c, h, w) into (n, c, h, w)";
          const std::vector<int64_t> &i = x.input.shape, &o = x.output.shape;
          if (o[0] != i[0] || o[1] != i[1] || (o[2] != i[2] && o[2] != 1) ||
              (o[3] != i[3] && o[3] != 1))
            return "a reduction over other than H and W";
          return "";
        } else {
          static_assert(std::is_same_v<T, ScaleParams>);
          if (!rank4(x.output) || x.input.shape != x.output.shape ||
              x.input.prec != x.output.prec || x.scale.prec != x.output.prec ||
              x.bias.prec != x.output.prec)
            return "not a 4-D scale of one shape and precision";
          // Resident weights, one value per channel.
          if (!isPerChannel(x.scale, x.output.shape[1]) ||
              !isPerChannel(x.bias, x.output.shape[1]))
            return "a scale or bias other than one per channel";
          return "";
        }
      },
      params);
}

namespace {

/// The input indices outputs [o0, o0 + count) of a slice read along dim
/// `d` (H or W): output o reads input start + o * step.
RowSpan slicedSpan(const SliceParams &p, size_t d, int64_t o0, int64_t count) {
  return {p.starts[d] + o0 * p.steps[d], (count - 1) * p.steps[d] + 1, 0, 0};
}

} // namespace

RowSpan localInputRows(const GroupOp &op, const GroupSpec &spec, unsigned k,
                       int64_t o0, int64_t count) {
  int64_t inH = spec.values[op.inputs[k]].shape[2];
  if (std::optional<Window> w = windowOf(op.params))
    return w->rows(o0, count, inH);
  if (const auto *r = std::get_if<ResizeParams>(&op.params)) {
    std::optional<std::array<int64_t, 2>> f = nearestWholeFactors(*r);
    if (!f) {
      // The rows of both taps of every output row.
      auto [first, rows] = resizeRows(*r, o0, count);
      return {first, rows, 0, 0};
    }
    // Output row o reads input row o / fh.
    int64_t fh = (*f)[0];
    int64_t a = o0 / fh, b = (o0 + count - 1) / fh + 1;
    return {a, b - a, 0, 0};
  }
  if (const auto *sl = std::get_if<SliceParams>(&op.params))
    return slicedSpan(*sl, 2, o0, count);
  // A reduction over H reads every row; so does a transpose of H and W
  // (its output rows are its input's columns).
  if ((std::holds_alternative<ReduceParams>(op.params) &&
       spec.values[op.output].shape[2] == 1) ||
      std::holds_alternative<PermuteParams>(op.params) ||
      softmaxAlongH(op.params))
    return {0, inH, 0, 0};
  // An element-wise operand of one row broadcasts along H.
  if (inH == 1 && spec.values[op.output].shape[2] > 1)
    return {0, 1, 0, 0};
  return {o0, count, 0, 0};
}

RowSpan localInputCols(const GroupOp &op, const GroupSpec &spec, unsigned k,
                       int64_t o0, int64_t count) {
  int64_t inW = spec.values[op.inputs[k]].shape[3];
  if (std::optional<Window> w = windowOf(op.params))
    return w->colsFor(o0, count, inW);
  if (const auto *sl = std::get_if<SliceParams>(&op.params))
    return slicedSpan(*sl, 3, o0, count);
  // A reduction over W (which columnSliceError keeps out of W slices)
  // reads every column.
  if (std::holds_alternative<ReduceParams>(op.params) &&
      spec.values[op.output].shape[3] == 1)
    return {0, inW, 0, 0};
  // An element-wise operand of one column broadcasts along W.
  if (inW == 1 && spec.values[op.output].shape[3] > 1)
    return {0, 1, 0, 0};
  return {o0, count, 0, 0};
}

/// Why `spec` cannot be cut along H (empty when it can): an op whose every
/// output row reads every input row (a softmax along H).
std::string rowSliceError(const GroupSpec &spec) {
  for (const GroupOp &op : spec.ops)
    if (softmaxAlongH(op.params))
      return "'" + std::visit([](const auto &x) { return x.name; }, op.params) +
             "' (a softmax along H) reads every row";
  return "";
}

int accumulatedAxis(const GroupSpec &spec) {
  if (spec.ops.size() != 1)
    return -1;
  const GroupOp &op = spec.ops[0];
  if (std::holds_alternative<ReduceParams>(op.params)) {
    const auto &in = spec.values[op.inputs[0]].shape;
    const auto &out = spec.values[op.output].shape;
    if (out[2] == 1 && in[2] > 1)
      return 2;
    if (out[3] == 1 && in[3] > 1)
      return 3;
  }
  // A matmul by a weight, in the row layout: the left rows' K columns and
  // the weight's K rows.
  if (const auto *m = std::get_if<MatMulParams>(&op.params);
      m && rightIsWeight(*m) && !spec.matrixColumns &&
      spec.values[op.inputs[0]].shape[3] > 1)
    return 3;
  return -1;
}

std::string columnSliceError(const GroupSpec &spec) {
  if (spec.matrixColumns)
    return "the matrix(w) layout cannot be cut along W";
  for (const GroupOp &op : spec.ops) {
    std::string name =
        std::visit([](const auto &x) { return x.name; }, op.params);
    if (std::holds_alternative<MatMulParams>(op.params) ||
        (std::holds_alternative<SoftmaxParams>(op.params) &&
         !softmaxAlongH(op.params)) ||
        std::holds_alternative<LayerNormParams>(op.params))
      return "'" + name + "' reads whole rows of its matrices";
    if (std::holds_alternative<ResizeParams>(op.params))
      return "'" + name + "' (a resize) cannot be cut along W";
    if (std::holds_alternative<PermuteParams>(op.params))
      return "'" + name + "' (a transpose) cannot be cut along W";
    if (std::holds_alternative<ReduceParams>(op.params) &&
        spec.values[op.output].shape[3] == 1 &&
        spec.values[op.inputs[0]].shape[3] > 1)
      return "'" + name + "' reduces along W";
    if (const auto *c = std::get_if<ConvParams>(&op.params);
        c && subPixelDeconv(*c))
      return "'" + name + "' (sub-pixel phases) cannot be cut along W";
  }
  return "";
}

namespace {

/// The GTensors of an element-wise op's operands and result when they all
/// have one shape and the op reads no weight (flattenElementwise); empty
/// otherwise.
std::vector<GTensor *> elementwiseTensors(LocalOpParams &params,
                                          const std::vector<int> &inputs) {
  for (int in : inputs)
    if (in < 0)
      return {}; // a resident per-channel weight
  std::vector<GTensor *> ts = std::visit(
      [](auto &x) -> std::vector<GTensor *> {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, BinaryParams> ||
                      std::is_same_v<T, BinaryInt8Params> ||
                      std::is_same_v<T, CompareParams>)
          return {&x.lhs, &x.rhs, &x.output};
        else if constexpr (std::is_same_v<T, WhereParams>)
          return {&x.cond, &x.x, &x.y, &x.output};
        else if constexpr (std::is_same_v<T, CompareConstParams>)
          return {&x.input, &x.output};
        else if constexpr (std::is_same_v<T, UnaryParams> ||
                           std::is_same_v<T, BinaryConstParams> ||
                           std::is_same_v<T, CastParams> ||
                           std::is_same_v<T, LutParams>)
          return {&x.input, &x.output};
        else
          return {};
      },
      params);
  for (GTensor *t : ts)
    if (t->shape != ts.back()->shape)
      return {};
  return ts;
}

} // namespace

bool flattenElementwise(GroupSpec &spec, const isa::ChipParams &chip) {
  if (spec.values.empty() || spec.ops.empty())
    return false;
  auto count = [](const std::array<int64_t, 4> &s) {
    return s[0] * s[1] * s[2] * s[3];
  };
  int64_t e = count(spec.values[0].shape);
  for (const GroupValue &v : spec.values)
    if (count(v.shape) != e)
      return false;
  std::vector<std::vector<GTensor *>> tensors;
  for (GroupOp &op : spec.ops) {
    tensors.push_back(elementwiseTensors(op.params, op.inputs));
    if (tensors.back().empty())
      return false;
  }
  // Lanes: the largest divisor of the count up to the lane count. Rows:
  // the fewest columns that leave at most kRows rows (enough for the
  // scheduler's H slices; a row is the smallest slice), within the
  // commands' 16-bit dims.
  constexpr int64_t kRows = 256, kMaxDim = 65535;
  int64_t npu = chip.npuNum, c = largestDivisorUpTo(e, npu);
  int64_t r = e / c, w = ceilDiv(r, kRows);
  while (r % w)
    ++w;
  int64_t h = r / w;
  if (w > kMaxDim || h > kMaxDim)
    return false;
  // Only when it fills more lanes: the share of the lane slots a value's
  // channels use.
  auto fill = [&](int64_t channels) {
    return double(channels) / double(ceilDiv(channels, npu) * npu);
  };
  bool gains = false;
  for (const GroupValue &v : spec.values)
    gains |= fill(c) > fill(v.shape[1]);
  if (!gains)
    return false;
  for (GroupValue &v : spec.values)
    v.shape = {1, c, h, w};
  for (auto &ts : tensors)
    for (GTensor *t : ts)
      t->shape = {1, c, h, w};
  return true;
}

bool matrixRowsLayout(GroupSpec &spec, bool rows4) {
  auto rows = [&](std::vector<int64_t> &s) {
    if (s.empty())
      s = {1, 1, 1, 1}; // a scalar
    else if (s.size() == 4 && rows4)
      s = {s[0] * s[1], s[2], 1, s[3]};
    else if (s.size() == 3)
      s = {s[0], s[1], 1, s[2]};
    else if (s.size() == 2)
      s = {1, s[0], 1, s[1]};
  };
  // Ops that need the (n, c, h, w) of a 4-D value have no rows form.
  if (rows4)
    for (const GroupOp &op : spec.ops) {
      if (std::holds_alternative<ConvParams>(op.params) ||
          std::holds_alternative<PoolParams>(op.params) ||
          std::holds_alternative<ResizeParams>(op.params) ||
          std::holds_alternative<ScaleParams>(op.params) ||
          std::holds_alternative<PReluParams>(op.params) ||
          std::holds_alternative<PermuteParams>(op.params) ||
          std::holds_alternative<ConcatParams>(op.params) ||
          std::holds_alternative<SliceParams>(op.params) ||
          std::holds_alternative<ReduceParams>(op.params))
        return false;
      bool matmul = std::holds_alternative<MatMulParams>(op.params);
      for (int in : op.inputs)
        if (in < 0 || // a per-channel weight, or a per-(n, c) operand
            (!matmul && spec.values[size_t(in)].shape !=
                            spec.values[size_t(op.output)].shape))
          return false;
    }
  // The last axis becomes W; the others keep their place ([B, M] -> N, C).
  auto lastToW = [&](int64_t a, size_t rank) -> int64_t {
    if (rank == 4 && rows4)
      return a == 3 || a == -1 ? 3 : 0;
    if (rank != 2 && rank != 3)
      return a;
    if (a < 0)
      a += int64_t(rank);
    if (a == int64_t(rank) - 1)
      return 3;
    return rank == 2 ? a + 1 : a;
  };
  for (GroupOp &op : spec.ops)
    std::visit(
        [&](auto &x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, MatMulParams>) {
            rows(x.left.shape);
            rows(x.output.shape);
            if (op.inputs.size() > 1 && op.inputs[1] >= 0)
              rows(x.right.shape);
          } else if constexpr (std::is_same_v<T, SoftmaxParams> ||
                               std::is_same_v<T, LayerNormParams>) {
            x.axis = lastToW(x.axis, x.input.shape.size());
            rows(x.input.shape);
            rows(x.output.shape);
          } else if constexpr (std::is_same_v<T, WhereParams>) {
            rows(x.cond.shape);
            rows(x.x.shape);
            rows(x.y.shape);
            rows(x.output.shape);
          } else if constexpr (std::is_same_v<T, BinaryParams> ||
                               std::is_same_v<T, BinaryInt8Params> ||
                               std::is_same_v<T, CompareParams>) {
            // Activation operands only (a weight keeps its shape, and the
            // support check refuses it unless it is per channel).
            if (op.inputs.size() > 0 && op.inputs[0] >= 0)
              rows(x.lhs.shape);
            if (op.inputs.size() > 1 && op.inputs[1] >= 0)
              rows(x.rhs.shape);
            rows(x.output.shape);
          } else if constexpr (std::is_same_v<T, UnaryParams> ||
                               std::is_same_v<T, BinaryConstParams> ||
                               std::is_same_v<T, CompareConstParams> ||
                               std::is_same_v<T, CastParams> ||
                               std::is_same_v<T, LutParams> ||
                               std::is_same_v<T, ScaleParams>) {
            rows(x.input.shape);
            rows(x.output.shape);
          }
        },
        op.params);
  return true;
}

bool matrixColumnsLayout(GroupSpec &spec, int64_t w,
                         const isa::ChipParams &chip) {
  if (w <= 0 || spec.matrixColumns || spec.ops.empty())
    return false;
  const auto *m = std::get_if<MatMulParams>(&spec.ops[0].params);
  if (!m || !rightIsWeight(*m) || spec.ops[0].inputs.size() != 1)
    return false;
  int left = spec.ops[0].inputs[0], res = spec.ops[0].output;
  if (left < 0 || !spec.values[size_t(left)].loaded)
    return false;
  // DMA_matrix moves dense matrices only (a view of a wider one, a column
  // chunk's result, is held a row per channel); MM takes K in 16 bits
  // (the row layout cuts a longer one into reduced-axis slices).
  for (const GroupValue &v : spec.values)
    if (v.gstride)
      return false;
  if (matmulKN(*m)[0] > 65535)
    return false;
  // Matrices a row per channel: (B, M, 1, X).
  auto isRows = [&](int v) { return spec.values[size_t(v)].shape[2] == 1; };
  const auto outShape = spec.values[size_t(res)].shape;
  if (!isRows(left) || !isRows(res))
    return false;
  for (size_t o = 1; o < spec.ops.size(); ++o) {
    const GroupOp &op = spec.ops[o];
    bool elementwise = std::visit(
        [](const auto &x) {
          using T = std::decay_t<decltype(x)>;
          return std::is_same_v<T, UnaryParams> ||
                 std::is_same_v<T, CastParams> ||
                 std::is_same_v<T, LutParams> ||
                 std::is_same_v<T, BinaryConstParams> ||
                 std::is_same_v<T, BinaryParams> ||
                 std::is_same_v<T, BinaryInt8Params> ||
                 std::is_same_v<T, CompareParams> ||
                 std::is_same_v<T, CompareConstParams> ||
                 std::is_same_v<T, WhereParams>;
        },
        op.params);
    if (!elementwise)
      return false;
    // Operands and result of the matmul's result shape, no weight operand.
    for (int in : op.inputs)
      if (in < 0 || in == left || spec.values[size_t(in)].shape != outShape)
        return false;
    if (spec.values[size_t(op.output)].shape != outShape)
      return false;
  }
  auto [k, n] = matmulKN(*m);
  int64_t lw = ceilDiv(k, int64_t(chip.npuNum));
  auto cols = [](GroupValue &gv, int64_t x, int64_t bw) {
    int64_t rows = gv.shape[0] * gv.shape[1];
    gv.matrixCols = x;
    gv.shape = {rows, ceilDiv(x, bw), 1, bw};
  };
  for (size_t v = 0; v < spec.values.size(); ++v)
    cols(spec.values[v], int(v) == left ? k : n, int(v) == left ? lw : w);
  // The element-wise ops' tensors take their values' shape (the matmul's
  // keep the row form its support check reads).
  const std::array<int64_t, 4> &held = spec.values[size_t(res)].shape;
  std::vector<int64_t> s4(held.begin(), held.end());
  for (size_t o = 1; o < spec.ops.size(); ++o)
    for (GTensor *t : elementwiseTensors(spec.ops[o].params, spec.ops[o].inputs))
      t->shape = s4;
  spec.matrixColumns = w;
  return true;
}

namespace {

//===----------------------------------------------------------------------===//
// The schedule of one slicing
//===----------------------------------------------------------------------===//

struct Range {
  int64_t begin = 0, count = 0;
  int64_t end() const { return begin + count; }
  void unite(int64_t b, int64_t c) {
    if (c <= 0)
      return;
    if (count <= 0) {
      begin = b;
      count = c;
      return;
    }
    int64_t e = std::max(end(), b + c);
    begin = std::min(begin, b);
    count = e - begin;
  }
};

/// One slice: a batch range and, per value, the rows it holds; per stored
/// value the rows it stores.
struct Slice {
  int64_t n0 = 0, nCount = 0;
  /// The channels the channel-sliced values hold (all when not C-sliced).
  int64_t c0 = 0, cCount = 0;
  std::vector<Range> rows;   ///< per value
  std::vector<Range> stores; ///< per value (stored ones)
  /// Per value the columns it holds, per stored value those it stores
  /// (all of them without W slices).
  std::vector<Range> cols, storeCols;
  /// With reduced-axis slices (GroupPlan::kSlices): which one this is; the
  /// first starts the accumulator, the last finishes the result and stores
  /// it (Schedule::lastShare).
  int64_t k = 0;
};

/// The weights prefetched into a group and by it (GroupOptions).
struct SchedulePrefetch {
  int64_t firstAt = -1;
  const GroupSpec *next = nullptr;
  int64_t nextAt = -1;
};

/// Where everything lives and what each slice computes.
class Schedule {
public:
  using Prefetch = SchedulePrefetch;

  /// `wSlices` cuts every row's columns (the last resort).
  Schedule(const GroupSpec &spec, const isa::ChipParams &chip, int64_t nSlices,
           int64_t cSlices, int64_t hSlices, int64_t wSlices,
           bool weightResident = true, bool bankedWeights = true,
           Prefetch prefetch = {}, WeightOrder order = WeightOrder::InOrder)
      : spec(spec), chip(chip), nSlices(nSlices), cSlices(cSlices),
        hSlices(hSlices), wSlices(wSlices), weightResident(weightResident),
        bankedWeights(bankedWeights), order(order), prefetch(prefetch) {}

  /// Builds the slices and the allocation; empty on success, else why not.
  std::string build();
  /// With C slices: one or two copies of the weights (before build()).
  void setWeightCopies(unsigned n) { weightCopies = n; }
  /// Reduced-axis slices (GroupPlan::kSlices; before build()).
  void setReducedSlices(int64_t k) { kSlices = k; }
  /// Share `k` of a reduced extent `d` cut into the reduced-axis slices.
  Range1 share(int64_t d, int64_t k) const {
    int64_t b = d * k / kSlices;
    return {b, d * (k + 1) / kSlices - b};
  }
  /// Whether slice `s` finishes its result (the last reduced-axis share).
  bool lastShare(const Slice &s) const { return s.k + 1 == kSlices; }
  /// With reduced-axis slices, slice s's partial result accumulated: the
  /// first slice computes it (`compute(dst)`) into the accumulator, the
  /// others into `part` and then add (max: `combine`) it in. The
  /// accumulator, of part's type and shape, once s is the last share;
  /// nullopt before.
  template <typename Compute>
  std::optional<LTensor> accumulate(CmdEmitter &em, const Slice &s,
                                    const LTensor &part, ArOp combine,
                                    Compute compute) const {
    LTensor total = localTensor(chip, accumulator, part.prec, part.shape);
    compute(s.k == 0 ? total : part);
    if (s.k > 0)
      ar(em, combine, total, Opd::of(total), Opd::of(part));
    if (!lastShare(s))
      return std::nullopt;
    return total;
  }
  /// Whether the weights stay loaded for the whole group (after build():
  /// not with C slices or a matmul's reduced-axis slices).
  bool residentWeights() const { return weightResident; }
  void emit(CmdEmitter &em) const;

  uint64_t peak = 0, weightBytes = 0;
  uint64_t ddrRead = 0, ddrWrite = 0, macs = 0;
  std::vector<Slice> slices;

private:
  const GroupSpec &spec;
  const isa::ChipParams &chip;
  int64_t nSlices, cSlices, hSlices, wSlices;
  /// Reduced-axis slices of a group of one (GroupPlan::kSlices), the input
  /// axis they cut (accumulatedAxis; -1: none) and the fp32 accumulator
  /// their results add into, a scratch tile of its own.
  int64_t kSlices = 1;
  int kAxis = -1;
  uint64_t accumulator = 0;
  /// With C slices: the values held with all their channels in every
  /// slice (the inputs of convolutions that mix channels, loaded whole),
  /// the channels of the others and the most a slice holds of them.
  std::vector<bool> wholeC;
  int64_t groupC = 0, chunkC = 0;
  /// Weights loaded once (else again with every slice, into one buffer).
  bool weightResident;
  /// Large weights on bank boundaries (else packed).
  bool bankedWeights;
  WeightOrder order;
  Prefetch prefetch;
  /// Where the group's own allocation starts and ends: above the first
  /// op's prefetched weights when they are at offset 0, else below them.
  uint64_t base = 0, limit = 0, firstEnd = 0;
  /// The next group's first weights this group loads, and where; the op
  /// of the last slice after whose commands the loads are emitted (-1:
  /// before the last slice's ops), the last that touches their region.
  std::vector<Resident> nextResidents;
  std::vector<uint64_t> nextOffsets;
  int prefetchAfter = -1;
  uint64_t tempBytesAll = 0;
  /// Per value: buffer offsets (one or two copies) and rows it holds at most.
  std::vector<std::array<uint64_t, 2>> buf;
  std::vector<unsigned> copies;
  std::vector<int64_t> maxRows, maxCols;
  int64_t maxN = 0;
  /// Per op: resident weights and their offsets (and cast copies).
  std::vector<std::vector<Resident>> residents;
  std::vector<std::vector<uint64_t>> resOffset, resCast;
  /// With C slices (or a matmul's reduced-axis slices), a second copy of
  /// every weight (weightCopies = 2, never without them: buildSchedule), so
  /// that the next slice's weights load while a slice computes; odd slices
  /// use it.
  unsigned weightCopies = 1;
  std::vector<std::vector<uint64_t>> resOffset2, resCast2;
  const std::vector<uint64_t> &offsetsOf(size_t o, size_t si) const {
    return weightCopies > 1 && si % 2 ? resOffset2[o] : resOffset[o];
  }
  const std::vector<uint64_t> &castsOf(size_t o, size_t si) const {
    return weightCopies > 1 && si % 2 ? resCast2[o] : resCast[o];
  }
  uint64_t tables = 0;
  bool needTables = false;
  std::vector<uint64_t> temps, rowTemps;
  /// Where the temps, the accumulator and the row temps start.
  uint64_t tempBase = 0;

  /// The buffer copy value v uses in slice `slice` (double-buffered
  /// values alternate).
  unsigned copyOf(int v, size_t slice) const {
    return copies[v] > 1 ? unsigned(slice % 2) : 0u;
  }
  /// The scratch tiles op `op` needs here (tempsOf): in the matrix(w)
  /// layout a float matmul adds its bias inside the MM, so only its
  /// trailing function's.
  unsigned opTemps(const GroupOp &op) const {
    const auto *m = std::get_if<MatMulParams>(&op.params);
    if (m && spec.matrixColumns && !m->quant) {
      Activation a = trailingActivation(op.params);
      return a.kind == UnaryKind::None ? 0 : unaryTemps(a.kind);
    }
    // With reduced-axis slices a matmul's products go to scratch first.
    if (m && kSlices > 1)
      return std::max(tempsOf(op.params), 1u);
    return tempsOf(op.params);
  }
  /// Whether value v holds a slice's channels only (C slicing).
  bool cSliced(int v) const { return cSlices > 1 && !wholeC[size_t(v)]; }
  /// The channels value v holds in slice s, the first of them, and the
  /// most it holds in any slice.
  int64_t chans(int v, const Slice &s) const {
    return cSliced(v) ? s.cCount : spec.values[v].shape[1];
  }
  int64_t chanBegin(int v, const Slice &s) const {
    return cSliced(v) ? s.c0 : 0;
  }
  /// The columns of matrix value v (GroupValue::matrixCols) slice s
  /// holds: where they start in DDR (the slice's first row) and how many.
  struct MatrixSpan {
    uint64_t addr;
    int64_t cols;
  };
  MatrixSpan matrixSpan(int v, const Slice &s) const {
    const GroupValue &gv = spec.values[v];
    auto [c0, cols] =
        blockColumns(chanBegin(v, s), chans(v, s), gv.shape[3], gv.matrixCols);
    return {gv.addr + uint64_t(s.n0 * gv.matrixCols + c0) * elemBytes(gv.prec),
            cols};
  }
  int64_t maxChans(int v) const {
    return cSliced(v) ? chunkC : spec.values[v].shape[1];
  }
  /// The largest slice of value v (its buffers' shape).
  Shape4 maxShape(int v) const {
    return shape4({maxN, maxChans(v), maxRows[size_t(v)], maxCols[size_t(v)]});
  }
  /// A per-channel resident weight (every one but a lookup table, which
  /// every lane holds whole): its channels follow the slice's.
  static bool perChannelResident(const Resident &r) {
    return r.perChannel && !laneBroadcast(r);
  }
  /// Resident i of op o as slice s loads it: its DDR address and shape.
  Resident sliceResident(size_t o, size_t i, const Slice &s) const {
    Resident r = residents[o][i];
    if (cSlices > 1 && perChannelResident(r) && r.matrixCols) {
      // The slice's column blocks of the matrix.
      auto [col0, cols] =
          blockColumns(s.c0, s.cCount, r.shape.w, r.matrixCols);
      r.addr += uint64_t(r.matrixTranspose ? col0 * r.matrixStride : col0) *
                elemBytes(r.prec);
      r.matrixCols = cols;
      r.shape.c = uint32_t(ceilDiv(cols, int64_t(r.shape.w)));
      return r;
    }
    // Channels [c0, c0 + count) of the resident.
    auto channels = [&](int64_t c0, int64_t count) {
      int64_t cstride =
          r.gstride ? r.gstride->c : int64_t(r.shape.h) * r.shape.w;
      r.addr += uint64_t(c0 * cstride) * elemBytes(r.prec);
      r.shape.c = uint32_t(count);
    };
    if (cSlices > 1 && perChannelResident(r)) {
      channels(s.c0, s.cCount);
    } else if (kSlices > 1 && i == 0 &&
               std::holds_alternative<MatMulParams>(spec.ops[o].params)) {
      // The slice's K rows of a matmul's weight.
      Range1 k =
          share(matmulKN(std::get<MatMulParams>(spec.ops[o].params))[0], s.k);
      channels(k.begin, k.size);
    }
    return r;
  }
  LTensor bufferTensor(int v, unsigned copy, const Slice &s) const {
    const GroupValue &gv = spec.values[v];
    LTensor t = localTensor(
        chip, buf[v][copy], gv.prec,
        shape4({s.nCount, chans(v, s), s.rows[v].count, s.cols[v].count}));
    t.isSigned = gv.isSigned;
    return t;
  }
  /// Rows [begin, begin + count) and columns [c0, c0 + cols) (of the whole
  /// value) of value v as held in slice s: the buffer itself when they are
  /// all of it, else a free-stride view.
  LTensor view(int v, unsigned copy, const Slice &s, int64_t begin,
               int64_t count, int64_t c0, int64_t cols) const;
  /// The tile `held` read from element `skip` on as `shape` with these h
  /// and w strides (its own n and c strides; those of dims that hold one
  /// entry are never used, and 0 keeps them inside the commands' 16-bit
  /// stride fields).
  LTensor restrided(const LTensor &held, int64_t skip, Shape4 shape,
                    uint32_t hStride, uint32_t wStride) const {
    LTensor t = freeTensor(
        held.offset + uint64_t(skip) * elemBytes(held.prec), held.prec, shape,
        {held.shape.n > 1 ? held.stride.n : 0,
         isa::channelSlots(chip, 0, held.shape.c) > 1 ? held.stride.c : 0,
         hStride, wStride});
    t.isSigned = held.isSigned;
    return t;
  }
  void emitOp(CmdEmitter &em, size_t o, size_t si) const;
};

LTensor Schedule::view(int v, unsigned copy, const Slice &s, int64_t begin,
                       int64_t count, int64_t c0, int64_t cols) const {
  LTensor whole = bufferTensor(v, copy, s);
  const Range &held = s.rows[v], &heldCols = s.cols[v];
  int64_t w = heldCols.count;
  if (begin == held.begin && count == held.count && c0 == heldCols.begin &&
      cols == w)
    return whole;
  return restrided(
      whole, (begin - held.begin) * w + (c0 - heldCols.begin),
      {whole.shape.n, whole.shape.c, uint32_t(count), uint32_t(cols)},
      uint32_t(w), 1);
}

std::string Schedule::build() {
  const size_t nv = spec.values.size(), no = spec.ops.size();
  if (no == 0)
    return "empty group";
  // The op that computes every value (-1: loaded).
  std::vector<int> producer(nv, -1);
  for (size_t o = 0; o < no; ++o)
    producer[spec.ops[o].output] = int(o);
  int last = spec.ops.back().output;
  int64_t n = spec.values[last].shape[0];
  int64_t outH = spec.values[last].shape[2];
  if (hSlices > outH || nSlices > n)
    return "more slices than rows or batches";
  if (hSlices > 1)
    if (std::string why = rowSliceError(spec); !why.empty())
      return why;
  if (ceilDiv(n, ceilDiv(n, nSlices)) != nSlices)
    return "a batch of " + std::to_string(n) + " cannot be cut into " +
           std::to_string(nSlices) + " slices of equal size but the last";
  for (const GroupValue &v : spec.values)
    if (v.shape[0] != n)
      return "values of different batch sizes";
  kAxis = -1;
  if (kSlices > 1) {
    kAxis = accumulatedAxis(spec);
    if (kAxis < 0)
      return "no op whose reduced axis can be sliced";
    if ((kAxis == 2 && hSlices > 1) || (kAxis == 3 && wSlices > 1))
      return "reduced-axis slices with slices of the reduced axis's result";
    if (prefetch.firstAt >= 0 || prefetch.next)
      return "weights prefetched across groups need one reduced-axis slice";
    if (kSlices > spec.values[spec.ops[0].inputs[0]].shape[kAxis])
      return "more reduced-axis slices than reduced elements";
    // A matmul's slices load their rows of the weight.
    if (std::holds_alternative<MatMulParams>(spec.ops[0].params))
      weightResident = false;
  }

  // C slices: ranges of whole channel slots of the values the ops compute
  // channel by channel. A convolution that mixes channels reads all of
  // its input's: that value is loaded whole in every slice, so it must
  // come from outside the group and feed only such convolutions.
  wholeC.assign(nv, false);
  groupC = spec.values[last].shape[1];
  chunkC = groupC;
  if (cSlices > 1) {
    if (prefetch.firstAt >= 0 || prefetch.next)
      return "weights prefetched across groups need one channel slice";
    if (std::string why = channelSliceError(spec); !why.empty())
      return why;
    for (const GroupOp &op : spec.ops)
      if (mixesChannels(spec, op))
        wholeC[size_t(op.inputs[0])] = true;
    int64_t npu = chip.npuNum;
    chunkC = alignUp(ceilDiv(groupC, cSlices), npu);
    if (ceilDiv(groupC, chunkC) != cSlices)
      return std::to_string(groupC) + " channels cannot be cut into " +
             std::to_string(cSlices) + " slices of whole lane slots";
    // Each slice loads its own channels' weights.
    weightResident = false;
  }

  // W slices: of every op's columns apart (not a matrix layout's rows).
  int64_t outW = spec.values[last].shape[3];
  if (wSlices > 1) {
    if (wSlices > outW)
      return "more column slices than columns";
    if (std::string why = columnSliceError(spec); !why.empty())
      return why;
  }

  // Slices: N ranges x C ranges x H ranges x W ranges of the last output,
  // then every value's rows and columns backwards through the ops.
  for (Range1 nr : splitRange(n, ceilDiv(n, nSlices)))
    for (Range1 cr : splitRange(groupC, chunkC))
      for (int64_t h = 0; h < hSlices; ++h)
        for (int64_t wi = 0; wi < wSlices; ++wi)
          for (int64_t kk = 0; kk < kSlices; ++kk) {
            Slice s;
            s.n0 = nr.begin;
            s.nCount = nr.size;
            s.c0 = cr.begin;
            s.cCount = cr.size;
            s.k = kk;
            s.rows.assign(nv, {});
            s.stores.assign(nv, {});
            s.cols.assign(nv, {});
            s.storeCols.assign(nv, {});
            for (size_t v = 0; v < nv; ++v) {
              int64_t W = spec.values[v].shape[3];
              // Every value whole in its columns (but the share of a reduced
              // axis along W, below).
              if (wSlices == 1 &&
                  !(kAxis == 3 && int(v) == spec.ops[0].inputs[0]))
                s.cols[v] = {0, W};
              if (spec.values[v].stored || int(v) == last) {
                int64_t H = spec.values[v].shape[2];
                int64_t b = H * h / hSlices, e = H * (h + 1) / hSlices;
                int64_t cb = W * wi / wSlices, ce = W * (wi + 1) / wSlices;
                // Reduced-axis slices: only the last has the result.
                if (lastShare(s)) {
                  s.stores[v] = {b, e - b};
                  s.storeCols[v] = {cb, ce - cb};
                }
                s.rows[v].unite(b, e - b);
                s.cols[v].unite(cb, ce - cb);
              }
            }
            for (size_t o = no; o-- > 0;) {
              const GroupOp &op = spec.ops[o];
              const Range &out = s.rows[op.output];
              if (out.count <= 0)
                continue;
              for (unsigned k = 0; k < op.inputs.size(); ++k) {
                if (op.inputs[k] < 0)
                  continue;
                RowSpan in = localInputRows(op, spec, k, out.begin, out.count);
                // Without W slices every value holds all its columns.
                const Range &oc = s.cols[op.output];
                RowSpan inCols =
                    wSlices > 1
                        ? localInputCols(op, spec, k, oc.begin, oc.count)
                        : RowSpan{0, spec.values[op.inputs[k]].shape[3], 0, 0};
                if (kAxis >= 0) {
                  // This slice's share of the reduced axis.
                  Range1 r = share(spec.values[op.inputs[k]].shape[kAxis], kk);
                  (kAxis == 2 ? in : inCols) = {r.begin, r.size, 0, 0};
                }
                if (in.count <= 0 || inCols.count <= 0)
                  return "a slice of '" +
                         std::visit([](const auto &x) { return x.name; },
                                    op.params) +
                         "' reads only padding";
                s.rows[op.inputs[k]].unite(in.begin, in.count);
                s.cols[op.inputs[k]].unite(inCols.begin, inCols.count);
              }
            }
            slices.push_back(std::move(s));
          }
  // A reduction's pooling window is the rows and columns a slice reads:
  // 16-bit fields.
  for (const GroupOp &op : spec.ops) {
    bool reduce = std::holds_alternative<ReduceParams>(op.params);
    bool matmul = std::holds_alternative<MatMulParams>(op.params);
    if (reduce || matmul)
      for (const Slice &s : slices)
        if ((reduce && s.rows[op.inputs[0]].count > 65535) ||
            s.cols[op.inputs[0]].count > 65535)
          return matmul ? "a matmul's K wider than the command's 16-bit "
                          "sizes (reduced-axis slices cut it)"
                        : "a reduced extent wider than the pooling's 16-bit "
                          "window (reduced-axis slices cut it)";
  }
  // sPorD (pooling, depthwise) has no operand strides: its input must start
  // at the first row and column its producer holds.
  for (size_t o = 0; o < no; ++o) {
    const GroupOp &op = spec.ops[o];
    std::optional<Window> w = windowOf(op.params);
    if (!w || !w->pord)
      continue;
    for (const Slice &s : slices) {
      const Range &out = s.rows[op.output], &oc = s.cols[op.output];
      if (out.count > 0 &&
          w->colsFor(oc.begin, oc.count, spec.values[op.inputs[0]].shape[3])
                  .begin != s.cols[op.inputs[0]].begin)
        return "a pooling or depthwise input would start inside its columns";
      if (out.count > 0 && localInputRows(op, spec, 0, out.begin, out.count)
                                   .begin != s.rows[op.inputs[0]].begin)
        return "a pooling or depthwise input would start inside its "
               "producer's rows";
    }
  }

  // rq0 / dq0 read EU-aligned tiles: a quantising cast reads the whole rows
  // its producer holds.
  for (size_t o = 0; o < no; ++o) {
    const auto *c = std::get_if<CastParams>(&spec.ops[o].params);
    if (!c || !c->quant)
      continue;
    int in = spec.ops[o].inputs[0], out = spec.ops[o].output;
    for (const Slice &s : slices)
      if (s.rows[out].count > 0 && (s.rows[out].begin != s.rows[in].begin ||
                                    s.rows[out].count != s.rows[in].count ||
                                    s.cols[out].begin != s.cols[in].begin ||
                                    s.cols[out].count != s.cols[in].count))
        return "a quantising cast would read part of its producer's rows";
  }

  // Sizes.
  maxRows.assign(nv, 0);
  maxCols.assign(nv, 0);
  for (const Slice &s : slices) {
    maxN = std::max(maxN, s.nCount);
    for (size_t v = 0; v < nv; ++v) {
      maxRows[v] = std::max(maxRows[v], s.rows[v].count);
      maxCols[v] = std::max(maxCols[v], s.cols[v].count);
    }
  }
  uint64_t align = chip.localAlign;
  auto up = [&](uint64_t b) { return uint64_t(alignUp(int64_t(b), align)); };
  limit = chip.lmemBytes;
  if (prefetch.firstAt >= 0) {
    if (!weightResident)
      return "prefetched weights need resident weights";
    layoutFrom(firstResidents(spec, chip), chip, uint64_t(prefetch.firstAt),
               firstEnd);
    if (firstEnd > chip.lmemBytes)
      return "the prefetched weights end at " + std::to_string(firstEnd) +
             ", past local memory";
    if (prefetch.firstAt == 0)
      base = firstEnd;
    else
      limit = uint64_t(prefetch.firstAt);
  }
  uint64_t at = base;
  // Coefficient tables and resident weights first.
  unsigned nTemps = 0, nRowTemps = 0;
  uint64_t tempBytes = 0, rowTempBytes = 0;
  residents.resize(no);
  resOffset.resize(no);
  resCast.resize(no);
  for (size_t o = 0; o < no; ++o) {
    const GroupOp &op = spec.ops[o];
    if (!tableKindsOf(op.params).empty())
      needTables = true;
    if (unsigned t = rowTempsOf(op.params)) {
      nRowTemps = std::max(nRowTemps, t);
      Shape4 rs = maxShape(op.output);
      (softmaxAlongH(op.params) ? rs.h : rs.w) = 1;
      rowTempBytes = std::max(rowTempBytes, up(euBytes(chip, Prec::Fp32, rs)));
    }
    unsigned t = opTemps(op);
    if (t) {
      nTemps = std::max(nTemps, t);
      // The scratch of a reduction, a resize and an average pooling that
      // excludes the pads also holds input rows: of the larger of the
      // input's and the output's rows and columns.
      Shape4 os = maxShape(op.output);
      const auto *pool = std::get_if<PoolParams>(&op.params);
      if (std::holds_alternative<ReduceParams>(op.params) ||
          std::holds_alternative<ResizeParams>(op.params) ||
          (pool && (excludesPads(*pool) || pool->depth))) {
        Shape4 is = maxShape(op.inputs[0]);
        os.h = std::max(os.h, is.h);
        os.w = std::max(os.w, is.w);
      }
      tempBytes = std::max(tempBytes, up(euBytes(chip, Prec::Fp32, os)));
    }
  }
  if (needTables) {
    tables = at;
    at = up(at + unaryTableBytes());
  }
  // The ops in the order their weights are laid out, and those whose
  // weights start on a bank boundary (WeightOrder).
  std::vector<size_t> weightOps{0};
  std::vector<bool> apart(no, false);
  if (order == WeightOrder::Parity) {
    for (size_t first : {size_t(1), size_t(2)})
      for (size_t o = first; o < no; o += 2)
        weightOps.push_back(o);
    for (size_t o : {size_t(1), size_t(2)})
      if (o < no)
        apart[o] = true;
  } else {
    for (size_t o = 1; o < no; ++o)
      weightOps.push_back(o);
    if (order == WeightOrder::FirstApart && no > 1)
      apart[1] = true;
  }
  for (size_t o : weightOps) {
    residents[o] = residentsOf(spec.ops[o].params, spec.ops[o].inputs, chip,
                               spec.matrixColumns);
    // With C slices a buffer holds one slice's channels.
    for (Resident &r : residents[o])
      if (cSlices > 1 && perChannelResident(r))
        r.shape.c = uint32_t(std::min<int64_t>(r.shape.c, chunkC));
    // With reduced-axis slices, a matmul's weight buffer the most K rows
    // of a slice.
    if (kSlices > 1 && std::holds_alternative<MatMulParams>(spec.ops[o].params))
      residents[o][0].shape.c =
          uint32_t(ceilDiv(int64_t(residents[o][0].shape.c), kSlices));
    std::vector<uint64_t> prefetched;
    if (o == 0 && prefetch.firstAt >= 0) {
      uint64_t end;
      prefetched =
          layoutFrom(residents[0], chip, uint64_t(prefetch.firstAt), end);
    }
    // A weight cast to another type gets its cast copy right after it (0:
    // none).
    auto placeCast = [&](const Resident &r) {
      if (!r.castTo) {
        resCast[o].push_back(0);
        return;
      }
      resCast[o].push_back(at);
      at = up(at + castBytes(r, chip));
    };
    for (const Resident &r : residents[o]) {
      uint64_t bytes = residentBytes(r, chip);
      if (!prefetched.empty()) {
        // Loaded by the previous group; a cast copy is made here.
        resOffset[o].push_back(prefetched[resOffset[o].size()]);
        placeCast(r);
        continue;
      }
      // A weight of a bank or more starts on a bank boundary (when the
      // group fits that way): the weights load while earlier ops compute,
      // and a GDMA beat into a bank a TIU command reads waits for it.
      if ((bankedWeights && bytes >= chip.bankBytes()) ||
          (apart[o] && resOffset[o].empty()))
        at = alignUp(at, chip.bankBytes());
      resOffset[o].push_back(at);
      at = up(at + bytes);
      placeCast(r);
    }
  }
  if (weightCopies > 1) {
    // The second copy, laid out as the first.
    resOffset2.assign(no, {});
    resCast2.assign(no, {});
    for (size_t o : weightOps)
      for (const Resident &r : residents[o]) {
        uint64_t bytes = residentBytes(r, chip);
        if (bankedWeights && bytes >= chip.bankBytes())
          at = alignUp(at, chip.bankBytes());
        resOffset2[o].push_back(at);
        at = up(at + bytes);
        resCast2[o].push_back(r.castTo ? at : 0);
        if (r.castTo)
          at = up(at + castBytes(r, chip));
      }
  }
  weightBytes = at;
  tempBase = at;
  for (unsigned t = 0; t < nTemps; ++t) {
    temps.push_back(at);
    at += tempBytes;
  }
  // Reduced-axis slices: the accumulator, one more tile of the temps' size
  // behind them (no op writes it but the sliced one).
  unsigned nAcc = kSlices > 1 ? 1 : 0;
  if (nAcc) {
    accumulator = at;
    at += tempBytes;
  }
  for (unsigned t = 0; t < nRowTemps; ++t) {
    rowTemps.push_back(at);
    at += rowTempBytes;
  }
  tempBytesAll = (nTemps + nAcc) * tempBytes + nRowTemps * rowTempBytes;
  // Values: loaded and stored ones double-buffered for the whole group;
  // the others by lifetime over the op order (first fit).
  buf.assign(nv, {0, 0});
  copies.assign(nv, 1);
  std::vector<int64_t> lastUse(nv, -1);
  for (size_t o = 0; o < no; ++o)
    for (int in : spec.ops[o].inputs)
      if (in >= 0)
        lastUse[in] = std::max(lastUse[in], int64_t(o));
  auto bytesOf = [&](size_t v) {
    const GroupValue &gv = spec.values[v];
    return up(euBytes(chip, gv.prec, maxShape(int(v))));
  };
  for (size_t v = 0; v < nv; ++v) {
    const GroupValue &gv = spec.values[v];
    if (!(gv.loaded || gv.stored))
      continue;
    if (gv.loaded && gv.stored)
      return "a value both loaded and stored";
    if (gv.loaded && producer[v] >= 0)
      return "a loaded value computed inside the group";
    copies[v] = slices.size() > 1 ? 2 : 1;
  }
  // The copies GDMA moves while the TIU computes another slice start on
  // bank boundaries (and the TIU-only buffers after them on one), so that a
  // load or store never shares a bank with the commands running meanwhile
  // (a GDMA beat into a bank a TIU command uses waits for it); dense when
  // that does not fit.
  const uint64_t copiesBase = at;
  auto placeCopies = [&](bool banked) {
    uint64_t a = copiesBase;
    uint64_t bank = chip.bankBytes();
    for (size_t v = 0; v < nv; ++v)
      for (unsigned c = 0; c < copies[v] && (spec.values[v].loaded ||
                                            spec.values[v].stored);
           ++c) {
        if (banked)
          a = alignUp(a, bank);
        buf[v][c] = a;
        a += bytesOf(v);
      }
    return banked ? uint64_t(alignUp(a, bank)) : a;
  };
  at = placeCopies(true);
  // Banks each op reads (its operands' buffers and its weights), so that
  // its result can go to other banks (a TIU command whose result shares a
  // bank with an operand loses cycles to the collisions).
  uint64_t bankBytes = chip.bankBytes();
  auto banksOf = [&](uint64_t off, uint64_t bytes) {
    uint64_t m = 0;
    if (bytes == 0)
      return m;
    for (uint64_t b = off / bankBytes; b <= (off + bytes - 1) / bankBytes; ++b)
      m |= uint64_t(1) << (b % 64);
    return m;
  };
  struct Live {
    uint64_t offset, bytes;
    int64_t end;
  };
  uint64_t base0 = at;
  // First fit over the op order; with `apart`, the first place whose banks
  // the op's operands do not use, when there is one.
  auto place = [&](bool apart) {
    std::vector<Live> live;
    uint64_t top = base0;
    for (size_t o = 0; o < no; ++o) {
      int v = spec.ops[o].output;
      if (spec.values[v].stored)
        continue;
      live.erase(std::remove_if(live.begin(), live.end(),
                                [&](const Live &l) { return l.end < int64_t(o); }),
                 live.end());
      uint64_t bytes = bytesOf(v);
      uint64_t reads = 0;
      if (apart) {
        for (int in : spec.ops[o].inputs)
          if (in >= 0)
            for (unsigned c = 0; c < copies[in]; ++c)
              reads |= banksOf(buf[in][c], bytesOf(size_t(in)));
        for (size_t i = 0; i < residents[o].size(); ++i)
          reads |= banksOf(resOffset[o][i],
                           localTensor(chip, 0, residents[o][i].prec,
                                       residents[o][i].shape,
                                       residents[o][i].layout)
                               .range(chip)
                               .bytes);
      }
      std::vector<uint64_t> cands{base0};
      for (const Live &l : live)
        cands.push_back(l.offset + l.bytes);
      if (apart)
        for (uint64_t b = alignUp(base0, bankBytes); b < limit;
             b += bankBytes)
          cands.push_back(b);
      std::sort(cands.begin(), cands.end());
      auto freeAt = [&](uint64_t off) {
        for (const Live &l : live)
          if (off < l.offset + l.bytes && l.offset < off + bytes)
            return false;
        return true;
      };
      uint64_t chosen = UINT64_MAX, fallback = UINT64_MAX;
      for (uint64_t c : cands) {
        if (!freeAt(c))
          continue;
        if (fallback == UINT64_MAX)
          fallback = c;
        if (!apart || !(banksOf(c, bytes) & reads)) {
          if (c + bytes <= limit || !apart) {
            chosen = c;
            break;
          }
        }
      }
      if (chosen == UINT64_MAX)
        chosen = fallback;
      buf[v][0] = chosen;
      live.push_back({chosen, bytes, std::max(lastUse[v], int64_t(o))});
      top = std::max(top, chosen + bytes);
    }
    return top;
  };
  for (size_t o = 0; o < no; ++o)
    if (spec.values[spec.ops[o].output].loaded)
      return "a loaded value computed inside the group";
  uint64_t top = place(true);
  if (top > limit) {
    // Dense copies, then results apart from operands if that fits.
    at = placeCopies(false);
    base0 = at;
    top = place(true);
    if (top > limit)
      top = place(false);
  }
  // The prefetched weights count as used: the peak is the highest byte.
  peak = std::max(top, firstEnd);
  if (top > limit)
    return "needs " + std::to_string(top) + " bytes of local memory per lane, " +
           std::to_string(limit) +
           (limit == chip.lmemBytes ? " exist" : " are below the prefetched "
                                                 "weights");
  if (prefetch.next) {
    // The next group's first weights go where the last slice's remaining
    // commands no longer read or write: they are loaded right after the
    // last op of that slice that touches their region (the emitter makes
    // the load wait for it; commands emitted after the load must not touch
    // the region, or they would see the next group's weights).
    nextResidents = firstResidents(*prefetch.next, chip);
    uint64_t nextAt = uint64_t(std::max<int64_t>(prefetch.nextAt, 0)), end;
    nextOffsets = layoutFrom(nextResidents, chip, nextAt, end);
    std::string where = "the next group's weights at " +
                        std::to_string(prefetch.nextAt) + " (to " +
                        std::to_string(end) + ")";
    if (prefetch.nextAt < 0 || end > chip.lmemBytes)
      return where + " are not inside local memory";
    auto hits = [&](uint64_t off, uint64_t bytes) {
      return bytes > 0 && off < end && nextAt < off + bytes;
    };
    size_t lastSlice = slices.size() - 1;
    for (size_t v = 0; v < nv; ++v)
      if (spec.values[v].stored &&
          hits(buf[v][copyOf(int(v), lastSlice)], bytesOf(v)))
        return where + " overlap a value the last slice stores";
    for (size_t o = 0; o < no; ++o) {
      const GroupOp &op = spec.ops[o];
      bool touches = false;
      std::vector<int> vals = op.inputs;
      vals.push_back(op.output);
      for (int v : vals)
        if (v >= 0)
          touches |= hits(buf[v][copyOf(v, lastSlice)], bytesOf(size_t(v)));
      for (size_t i = 0; i < residents[o].size(); ++i) {
        const Resident &r = residents[o][i];
        touches |= hits(resOffset[o][i], residentBytes(r, chip));
        if (r.castTo)
          touches |= hits(resCast[o][i], castBytes(r, chip));
      }
      if ((opTemps(op) || rowTempsOf(op.params)) && tempBytesAll)
        touches |= hits(tempBase, tempBytesAll);
      if (!tableKindsOf(op.params).empty())
        touches |= hits(tables, unaryTableBytes());
      if (touches)
        prefetchAfter = int(o);
    }
  }

  // DDR traffic.
  for (const Slice &s : slices)
    for (size_t v = 0; v < nv; ++v) {
      const GroupValue &gv = spec.values[v];
      auto rowBytes = [&](int64_t cols) {
        return uint64_t(s.nCount) *
               uint64_t(gv.matrixCols ? matrixSpan(int(v), s).cols
                                      : chans(int(v), s) * cols) *
               elemBytes(gv.prec);
      };
      if (gv.loaded)
        ddrRead += rowBytes(s.cols[v].count) * uint64_t(s.rows[v].count);
      if (gv.stored)
        ddrWrite +=
            rowBytes(s.storeCols[v].count) * uint64_t(s.stores[v].count);
    }
  // A table every lane holds is read once (a lane broadcast, load()).
  auto weightDdrBytes = [](const Resident &r) {
    if (r.matrixCols)
      return uint64_t(r.shape.n) * uint64_t(r.matrixCols) * elemBytes(r.prec);
    uint64_t c = laneBroadcast(r) ? 1 : r.shape.c;
    return c * r.shape.h * r.shape.w * elemBytes(r.prec);
  };
  for (size_t o = 0; o < no; ++o) {
    if (o == 0 && prefetch.firstAt >= 0)
      continue; // the previous group loaded them
    if (cSlices > 1 || (kSlices > 1 && !weightResident)) {
      // Each slice loads its channels' (its K rows') share.
      for (const Slice &s : slices)
        for (size_t i = 0; i < residents[o].size(); ++i)
          ddrRead += weightDdrBytes(sliceResident(o, i, s));
      continue;
    }
    for (const Resident &r : residents[o])
      ddrRead += weightDdrBytes(r) *
                 (weightResident ? 1 : uint64_t(slices.size()));
  }
  for (const Resident &r : nextResidents)
    ddrRead += weightDdrBytes(r);
  for (const Slice &s : slices)
    for (const GroupOp &op : spec.ops) {
      if (const auto *m = std::get_if<MatMulParams>(&op.params)) {
        auto [k, n] = matmulKN(*m);
        // Rows x K x N; in the matrix(w) layout the slice's rows are its
        // batch and its columns a share of N.
        macs += spec.matrixColumns
                    ? uint64_t(s.nCount) * uint64_t(k) *
                          uint64_t(matrixSpan(op.output, s).cols)
                    : uint64_t(s.nCount) * uint64_t(chans(op.output, s)) *
                          uint64_t(s.cols[op.inputs[0]].count) * uint64_t(n);
      }
      if (const auto *c = std::get_if<ConvParams>(&op.params))
        macs += uint64_t(s.nCount) * uint64_t(s.rows[op.output].count) *
                uint64_t(s.cols[op.output].count) *
                uint64_t(chans(op.output, s)) *
                uint64_t(c->input.shape[1] / c->groups) *
                uint64_t(c->kernelH * c->kernelW);
    }
  return "";
}

/// Applies `act` to `out` in place (the trailing commands of a kernel).
void trailing(CmdEmitter &em, const Activation &act, const LTensor &out,
              const UnaryScratch &s) {
  if (act.kind != UnaryKind::None)
    emitUnary(em, act, out, out, s);
}

void Schedule::emitOp(CmdEmitter &em, size_t o, size_t si) const {
  const GroupOp &op = spec.ops[o];
  const Slice &s = slices[si];
  // This slice's copy of the op's weights.
  const std::vector<uint64_t> &off = offsetsOf(o, si),
                              &castOff = castsOf(o, si);
  const Range &outRows = s.rows[op.output], &outCols = s.cols[op.output];
  if (outRows.count <= 0)
    return;
  LTensor out = bufferTensor(op.output, copyOf(op.output, si), s);
  UnaryScratch scratch;
  scratch.tables = tables;
  scratch.temps = temps;
  // The rows output rows outRows read of operand k, as a view.
  auto operand = [&](unsigned k, const RowSpan &rows, int64_t c0,
                     int64_t cols) {
    int v = op.inputs[k];
    return view(v, copyOf(v, si), s, rows.begin, rows.count, c0, cols);
  };
  auto sameRows = [&](unsigned k) {
    int v = op.inputs[k];
    const auto &vs = spec.values[v].shape;
    const auto &os = spec.values[op.output].shape;
    bool alongH = vs[2] == 1 && os[2] > 1, alongW = vs[3] == 1 && os[3] > 1;
    if (alongH || alongW) {
      // A value broadcast along H and / or W (per (n, c): both): its one
      // row / column read at every output row / column, zero strides.
      LTensor held = alongH ? bufferTensor(v, copyOf(v, si), s)
                            : view(v, copyOf(v, si), s, outRows.begin,
                                   outRows.count, 0, 1);
      return restrided(held, 0, out.shape, alongH ? 0 : held.stride.h,
                       alongW ? 0 : held.stride.w);
    }
    return view(v, copyOf(v, si), s, outRows.begin, outRows.count,
                outCols.begin, outCols.count);
  };
  auto resident = [&](size_t i) {
    Resident r = sliceResident(o, i, s);
    return localTensor(chip, off[i], r.prec, r.shape, r.layout);
  };
  // A per-channel weight read at every (h, w) through zero strides.
  auto perChannel = [&](size_t i) {
    const Resident &r = residents[o][i];
    return freeTensor(off[i], r.prec, out.shape, {0, 1, 0, 0});
  };
  Activation act = trailingActivation(op.params);

  if (std::optional<Window> w = windowOf(op.params)) {
    const GroupValue &input = spec.values[op.inputs[0]];
    int64_t iw = input.shape[3];
    RowSpan rows = w->rows(outRows.begin, outRows.count, input.shape[2]);
    RowSpan cols = w->colsFor(outCols.begin, outCols.count, iw);
    int64_t padB = std::max<int64_t>(rows.padAfter, 0);
    int64_t padR = std::max<int64_t>(cols.padAfter, 0);
    LTensor in;
    if (w->pord) {
      // From the window's first row to the last its producer holds, every
      // column: rows and columns past the window's last are read as the
      // input's end (the command ignores what it does not need).
      int64_t count = s.rows[op.inputs[0]].end() - rows.begin;
      int64_t colCount = s.cols[op.inputs[0]].end() - cols.begin;
      if (count != rows.count)
        padB = 0;
      if (colCount != cols.count)
        padR = 0;
      in = operand(0, {rows.begin, count, 0, 0}, cols.begin, colCount);
    } else {
      in = operand(0, rows, cols.begin, cols.count);
    }
    // INT8: the command writes the int32 accumulator (scratch), an RQ1
    // requantises it into the result.
    LTensor acc = localTensor(chip, temps.empty() ? 0 : temps[0],
                              Prec::Int32, out.shape);
    auto requant = [&](const RqCmd &proto) {
      RqCmd r = proto;
      r.input = acc;
      r.output = out;
      rq(em, r);
    };
    if (const auto *c = std::get_if<ConvParams>(&op.params)) {
      bool relu = c->act.kind == UnaryKind::Relu;
      // A deconv with kernel = stride in sub-pixel phases (subPixelDeconv):
      // phase (a, b), output rows a, a + s, ... of the slice from the input
      // rows they read, is a 1 x 1 conv with the filter's tap (a, b) into a
      // scratch tile (float: with the bias and relu, as the full command
      // adds them; INT8: the int32 sums), then an AR copy into every s-th
      // row and column of `dst`. Each output's products are the full
      // command's real ones in the same order (the inserted zeros add
      // nothing), so the values are the same.
      // The CONV of weight `wi` from `src` into `dst`: INT8 the int32 sums
      // (the input zero point the pad value), float with the bias and relu.
      auto convCmd = [&](const LTensor &src, const LTensor &dst, size_t wi) {
        ConvCmd cmd;
        cmd.input = src;
        cmd.output = dst;
        cmd.weights = off[wi];
        cmd.weightBytes = resident(wi).range(chip).bytes;
        if (c->quant) {
          cmd.padBits = uint32_t(c->quant->inputZeroPoint) & 0xFF;
        } else {
          cmd.hasBias = c->biasAddr.has_value();
          if (cmd.hasBias)
            cmd.bias = off[1];
          cmd.relu = relu;
        }
        return cmd;
      };
      auto subPixel = [&](const LTensor &dst, unsigned phaseTemp) {
        int64_t sh = c->kernelH, sw = c->kernelW, iw = input.shape[3];
        // Tap 0 is the first weight, the others the op's last ones.
        size_t others = residents[o].size() - size_t(sh * sw - 1);
        auto tap = [&](int64_t k) { return k ? others + size_t(k - 1) : 0; };
        unsigned eb = elemBytes(dst.prec);
        for (int64_t a = 0; a < sh; ++a) {
          int64_t r = outRows.begin + ((a - outRows.begin % sh) + sh) % sh;
          if (r >= outRows.end())
            continue;
          int64_t cnt = (outRows.end() - 1 - r) / sh + 1;
          LTensor src = operand(0, {r / sh, cnt, 0, 0}, 0, iw);
          Shape4 ps{out.shape.n, out.shape.c, uint32_t(cnt), uint32_t(iw)};
          LTensor phase = localTensor(chip, temps[phaseTemp], dst.prec, ps);
          phase.isSigned = dst.isSigned;
          for (int64_t b = 0; b < sw; ++b) {
            conv(em, convCmd(src, phase, tap(a * sw + b)));
            LTensor to = freeTensor(
                dst.offset + uint64_t((r - outRows.begin) * dst.stride.h + b *
                                                                   dst.stride.w) *
                                 eb,
                dst.prec, ps,
                {dst.stride.n, dst.stride.c, uint32_t(sh) * dst.stride.h,
                 uint32_t(sw) * dst.stride.w});
            to.isSigned = dst.isSigned;
            ar(em, ArOp::Copy, to, Opd::of(phase));
          }
        }
      };
      // The CONV of `src` into `dst` with the window of this slice; a
      // grouped convolution (1 < groups, not depthwise) is one CONV per
      // group, as the chip has no groups: group g reads input channels
      // [g icg, (g + 1) icg) and writes output channels [g ocg, (g + 1)
      // ocg), channel ranges that start in the lanes of their first
      // channel (channelRange), with the weights (and float bias) of those
      // output channels, which lie in the same lanes. The result's n stride
      // follows from its start lane, so a slice of several batches is one
      // CONV per group and batch. Each group's sums are those of the
      // per-op kernel's command for that group (its input channels at lane
      // 0), so the values are the same.
      auto convGroups = [&](const LTensor &src, const LTensor &dst) {
        ConvCmd cmd = convCmd(src, dst, 0);
        setWindow(cmd, *w, rows, padB, cols, padR);
        if (c->groups == 1) {
          conv(em, cmd);
          return;
        }
        int64_t g = c->groups, icg = int64_t(src.shape.c) / g,
                ocg = int64_t(dst.shape.c) / g;
        LTensor filter = resident(0);
        LTensor bias =
            localTensor(chip, cmd.bias, Prec::Fp32, {1, dst.shape.c, 1, 1},
                        isa::LocalLayout::Compact);
        auto batch = [&](LTensor t, uint32_t n) {
          t.offset += uint64_t(n) * t.stride.n * elemBytes(t.prec);
          t.shape.n = 1;
          return t;
        };
        for (int64_t k = 0; k < g; ++k)
          for (uint32_t n = 0; n < dst.shape.n; ++n) {
            ConvCmd gc = cmd;
            gc.input = channelRange(chip, batch(src, n), k * icg, icg);
            gc.output = channelRange(chip, batch(dst, n), k * ocg, ocg);
            LTensor f = channelRange(chip, filter, k * ocg, ocg);
            gc.weights = f.offset;
            gc.weightBytes = f.range(chip).bytes;
            if (gc.hasBias)
              gc.bias = channelRange(chip, bias, k * ocg, ocg).offset;
            conv(em, gc);
          }
      };
      bool phases = subPixelDeconv(*c);
      if (c->quant) {
        uint32_t padBits = uint32_t(c->quant->inputZeroPoint) & 0xFF;
        if (w->pord) {
          PorDCmd cmd;
          cmd.kind = PorDCmd::Depthwise;
          cmd.input = in;
          cmd.output = acc;
          cmd.weights = off[0];
          cmd.hasBias = true;
          cmd.bias = off[1];
          cmd.padBits = padBits;
          setWindow(cmd, *w, rows, padB, cols, padR);
          pord(em, cmd);
        } else {
          if (phases) {
            subPixel(acc, 1);
          } else {
            convGroups(in, acc);
          }
          ar(em, ArOp::Add, acc, Opd::of(acc), Opd::of(perChannel(1)));
        }
        RqCmd r;
        r.perChannel = true;
        r.params = off[2];
        r.round = c->quant->round;
        if (c->quant->twoSteps) {
          // The first step back into the int32 accumulator.
          r.input = acc;
          r.output = acc;
          rq(em, r);
          r.params = off[3];
          r.round = c->quant->round2;
        }
        requant(r);
        if (c->quant->reluSigned)
          ar(em, ArOp::Max, out, Opd::of(out), Opd::immInt(0, Prec::Int8));
        if (c->quant->reluHigh)
          ar(em, ArOp::Min, out, Opd::of(out),
             Opd::immInt(*c->quant->reluHigh, Prec::Int32));
        return;
      }
      if (w->pord) {
        PorDCmd cmd;
        cmd.kind = relu ? PorDCmd::DepthwiseRelu : PorDCmd::Depthwise;
        cmd.input = in;
        cmd.output = out;
        cmd.weights = off[0];
        cmd.hasBias = c->biasAddr.has_value();
        if (cmd.hasBias)
          cmd.bias = c->input.prec == Prec::Fp32 ? off[1] : castOff[1];
        setWindow(cmd, *w, rows, padB, cols, padR);
        pord(em, cmd);
      } else if (phases) {
        subPixel(out, 0);
      } else {
        convGroups(in, out);
      }
    } else {
      const auto &p = std::get<PoolParams>(op.params);
      PorDCmd cmd;
      cmd.input = in;
      cmd.output = out;
      setWindow(cmd, *w, rows, padB, cols, padR);
      if (p.depth) {
        // A 3-D pooling's depth taps, as the 3-D kernel computed them:
        // each tap's (H, W) window sums (scale 1) or maxima into fp32, the
        // accumulator from 0 / -inf combined with every tap in order, then
        // the cast, or the division by the window's count.
        bool isMax = p.kind == PoolKind::Max;
        LTensor part = localTensor(chip, temps[0], Prec::Fp32, out.shape);
        LTensor acc = out.prec == Prec::Fp32
                          ? out
                          : localTensor(chip, temps[1], Prec::Fp32, out.shape);
        if (isMax) {
          cmd.kind = PorDCmd::MaxPool;
          cmd.padBits = floatBits(-INFINITY, input.prec);
        } else {
          cmd.kind = PorDCmd::AvgPool;
          cmd.avgScale = 1.0f;
        }
        cmd.output = part;
        ar(em, ArOp::Copy, acc, Opd::imm(isMax ? -INFINITY : 0.0f, Prec::Fp32));
        for (unsigned k = 0; k < op.inputs.size(); ++k) {
          // Every tap holds the same rows and columns (only this op reads
          // them).
          cmd.input = operand(k, {rows.begin, in.shape.h, 0, 0}, cols.begin,
                              in.shape.w);
          pord(em, cmd);
          ar(em, isMax ? ArOp::Max : ArOp::Add, acc, Opd::of(acc),
             Opd::of(part));
        }
        bool padded2d = p.padTop || p.padBottom || p.padLeft || p.padRight;
        float taps = float(p.depth->taps), hw = float(p.kernelH * p.kernelW);
        if (isMax) {
          if (acc.offset != out.offset)
            ar(em, ArOp::Cast, out, Opd::of(acc));
        } else if (p.countIncludePad || !(padded2d || p.depth->padded)) {
          ar(em, ArOp::Div, out, Opd::of(acc),
             Opd::imm(float(p.depth->kernel) * hw, Prec::Fp32));
        } else if (!padded2d) {
          ar(em, ArOp::Div, out, Opd::of(acc), Opd::imm(taps * hw, Prec::Fp32));
        } else {
          // Divisors: the real (H, W) inputs under each window (the same
          // windows over a tile of ones, one channel per lane) times the
          // real depth taps, read by every slot and depth through zero
          // strides.
          uint32_t lanes = std::min<uint32_t>(out.shape.c, chip.npuNum);
          LTensor ones = localTensor(chip, temps[2], Prec::Fp32,
                                     {1, lanes, in.shape.h, in.shape.w});
          ar(em, ArOp::Copy, ones, Opd::imm(1.0f, Prec::Fp32));
          PorDCmd cc = cmd;
          cc.kind = PorDCmd::AvgPool;
          cc.padBits = 0;
          cc.input = ones;
          cc.output = localTensor(chip, temps[3], Prec::Fp32,
                                  {1, lanes, out.shape.h, out.shape.w});
          pord(em, cc);
          LTensor div =
              localTensor(chip, temps[4], Prec::Fp32, cc.output.shape);
          ar(em, ArOp::Mul, div, Opd::of(cc.output),
             Opd::imm(taps, Prec::Fp32));
          ar(em, ArOp::Div, out, Opd::of(acc),
             Opd::of(freeTensor(temps[4], Prec::Fp32, out.shape,
                                {0, 0, int64_t(div.stride.h), 1})));
        }
        trailing(em, act, out, scratch);
        return;
      }
      bool integer = !isa::isFloat(input.prec);
      if (p.kind == PoolKind::Max) {
        cmd.kind = PorDCmd::MaxPool;
        cmd.padBits = integer ? (input.isSigned ? 0x80u : 0u)
                              : floatBits(-INFINITY, input.prec);
      } else {
        cmd.kind = PorDCmd::AvgPool;
      }
      if (integer && p.kind == PoolKind::Avg) {
        cmd.output = acc;
        cmd.padBits = uint32_t(p.quant->inZeroPoint) & 0xFF;
        pord(em, cmd);
        if (p.quant->inZeroPoint)
          ar(em, ArOp::Add, acc, Opd::of(acc),
             Opd::immInt(int32_t(-w->kh * w->kw * p.quant->inZeroPoint)));
        RqCmd r;
        r.zeroPoint = p.quant->outZeroPoint;
        r.multiplier = p.quant->multiplier;
        r.rshift = p.quant->rshift;
        r.round = p.quant->round;
        requant(r);
        return;
      }
      if (excludesPads(p)) {
        // As the pool kernel: the window sums (scale 1) into fp32, the
        // same windows over a tile of ones count the real inputs (one
        // channel per lane, read by every slot through a zero channel
        // stride), the sums divided by the counts.
        cmd.avgScale = 1.0f;
        LTensor sum = localTensor(chip, temps[0], Prec::Fp32, out.shape);
        cmd.output = sum;
        pord(em, cmd);
        uint32_t lanes = std::min<uint32_t>(out.shape.c, chip.npuNum);
        LTensor ones = localTensor(chip, temps[1], Prec::Fp32,
                                   {1, lanes, in.shape.h, in.shape.w});
        ar(em, ArOp::Copy, ones, Opd::imm(1.0f, Prec::Fp32));
        PorDCmd cc = cmd;
        cc.input = ones;
        cc.output = localTensor(chip, temps[2], Prec::Fp32,
                                {1, lanes, out.shape.h, out.shape.w});
        pord(em, cc);
        LTensor counts = freeTensor(temps[2], Prec::Fp32, out.shape,
                                    {0, 0, int64_t(cc.output.stride.h), 1});
        ar(em, ArOp::Div, out, Opd::of(sum), Opd::of(counts));
      } else {
        pord(em, cmd);
      }
    }
    trailing(em, act, out, scratch);
    return;
  }
  if (const auto *m = std::get_if<MatMulParams>(&op.params);
      m && spec.matrixColumns) {
    // The matrix(w) layout: one MM (mm.normal) of the slice's rows by its
    // column blocks of the right matrix, the per-op matmul's command: a
    // float bias added inside it before its one rounding; INT8 into the
    // int32 scratch, the bias row added by an AR (zero n stride), RQ1.
    LTensor left = bufferTensor(op.inputs[0], copyOf(op.inputs[0], si), s);
    LTensor right = resident(0);
    right.isSigned = m->right.isSigned;
    const auto &q = m->quant;
    bool hasBias = q ? q->biasAddr.has_value() : m->biasAddr.has_value();
    LTensor acc =
        q ? localTensor(chip, temps[0], Prec::Int32, out.shape) : out;
    MMCmd c;
    c.left = left;
    c.right = right;
    c.output = acc;
    c.m = out.shape.n;
    c.k = uint32_t(matmulKN(*m)[0]);
    c.n = out.shape.c * out.shape.w;
    c.hasBias = hasBias && !q;
    if (c.hasBias)
      c.bias = resident(1);
    mm(em, c);
    if (q) {
      if (hasBias) {
        LTensor b = resident(1);
        ar(em, ArOp::Add, acc, Opd::of(acc),
           Opd::of(freeTensor(b.offset, Prec::Int32, acc.shape,
                              {0, b.stride.c, 0, 1})));
      }
      matmulRequant(em, *q, acc, out);
      return;
    }
    if (m->act.kind == UnaryKind::Relu)
      ar(em, ArOp::Max, out, Opd::of(out), Opd::imm(0.0f, out.prec));
    trailing(em, act, out, scratch);
    return;
  }
  if (const auto *m = std::get_if<MatMulParams>(&op.params)) {
    // One mm2.nn (mm2.nt: a transposed right value) per batch of the slice: the
    // rows (one per channel) times the resident right matrix, into the fp32
    // scratch when a bias follows (added by an AR from its copy in every lane,
    // the output's one rounding after it, as MM in the matrix(w) layout rounds
    // once after its bias), then the activation.
    bool weight = rightIsWeight(*m);
    // Whole buffers (a matrix value holds one row of H): sameRows would
    // read a K = 1 left operand as a per-(n, c) broadcast.
    auto whole = [&](unsigned k) {
      return bufferTensor(op.inputs[k], copyOf(op.inputs[k], si), s);
    };
    LTensor left = whole(0), right = weight ? resident(0) : whole(1);
    right.isSigned = m->right.isSigned;
    size_t biasAt = weight ? 1 : 0;
    // INT8: int32 products (the kernel's MM likewise), the int32 bias, one
    // RQ1 (or TFLite's two) with the kernel's immediates.
    const auto &q = m->quant;
    LTensor acc = m->biasAddr || q
                      ? localTensor(chip, temps[0],
                                    q ? Prec::Int32 : Prec::Fp32, out.shape)
                      : out;
    auto batch = [&](const LTensor &t, uint32_t n) {
      LTensor b = localTensor(chip,
                              t.offset + uint64_t(n) * uint64_t(t.stride.n) *
                                             elemBytes(t.prec),
                              t.prec, {1, t.shape.c, 1, t.shape.w});
      b.isSigned = t.isSigned;
      return b;
    };
    auto products = [&](const LTensor &dst) {
      for (uint32_t n = 0; n < out.shape.n; ++n)
        mm2(em, {batch(left, n), weight ? right : batch(right, n),
                 batch(dst, n), !weight && m->rightTransposed});
    };
    if (kSlices > 1) {
      // Reduced-axis slices (a weight on the right: accumulatedAxis): this
      // slice's K columns of the rows times its K rows of the weight, into
      // the accumulator (the first slice) or into scratch and added to it
      // (fp32; INT8 int32, exact); the last slice goes on with the
      // accumulator as the products.
      LTensor part =
          localTensor(chip, temps[0], q ? Prec::Int32 : Prec::Fp32, out.shape);
      std::optional<LTensor> total =
          accumulate(em, s, part, ArOp::Add, products);
      if (!total)
        return;
      acc = *total;
      if (!m->biasAddr && !q)
        ar(em, out.prec == Prec::Fp32 ? ArOp::Copy : ArOp::Cast, out,
           Opd::of(acc));
    } else {
      products(acc);
    }
    // The bias row, the same in every lane, read at every row.
    auto addBias = [&](const LTensor &res) {
      ar(em, ArOp::Add, res, Opd::of(acc),
         Opd::of(freeTensor(off[biasAt], acc.prec, out.shape, {0, 0, 0, 1})));
    };
    if (q) {
      if (q->biasAddr)
        addBias(acc);
      matmulRequant(em, *q, acc, out);
      return;
    }
    if (m->biasAddr)
      addBias(out);
    if (m->act.kind == UnaryKind::Relu)
      ar(em, ArOp::Max, out, Opd::of(out), Opd::imm(0.0f, out.prec));
    trailing(em, act, out, scratch);
    return;
  }
  if (const auto *sm = std::get_if<SoftmaxParams>(&op.params)) {
    SoftmaxScratch sc;
    sc.tables = tables;
    for (unsigned i = 0; i < 4; ++i)
      sc.temps[i] = temps[i];
    sc.max = rowTemps[0];
    sc.sum = rowTemps[1];
    if (sm->log)
      for (unsigned i = 0; i < 4; ++i)
        sc.logTemps[i] = rowTemps[2 + i];
    softmaxTile(em, sameRows(0), out, !softmaxAlongH(op.params), sm->log, sc);
    return;
  }
  if (const auto *ln = std::get_if<LayerNormParams>(&op.params)) {
    LayerNormScratch sc{temps[0], temps[1], temps[2], rowTemps[0],
                        rowTemps[1], {}, {}};
    size_t r = 0;
    if (ln->scaleAddr)
      sc.scale = off[r++];
    if (ln->biasAddr)
      sc.bias = off[r++];
    layerNormTile(em, sameRows(0), out, ln->epsilon, sc);
    return;
  }
  if (const auto *r = std::get_if<ResizeParams>(&op.params)) {
    RowSpan rows = localInputRows(op, spec, 0, outRows.begin, outRows.count);
    const Range &inCols = s.cols[op.inputs[0]];
    LTensor in = operand(0, rows, inCols.begin, inCols.count);
    if (std::optional<std::array<int64_t, 2>> f = nearestWholeFactors(*r)) {
      // As the resize kernel's tile: fh * fw strided copies.
      nearestRepeat(em, in, rows.begin, out, outRows.begin, (*f)[0], (*f)[1]);
      return;
    }
    // As the resize kernel's tile: the column and row passes.
    resizeTile(em, *r, in, rows.begin, out, outRows.begin,
               {temps[0], temps[1], temps[2]});
    return;
  }
  if (const auto *c = std::get_if<CastParams>(&op.params)) {
    // As the cast kernel's tile.
    if (!c->viaInt)
      return castTile(em, *c, sameRows(0), out);
    LTensor t = localTensor(chip, temps[0], c->viaInt->prec, out.shape);
    castTile(em, *c, sameRows(0), out, &t);
    return;
  }
  // sCMP reads EU-aligned operands only: an operand read through free
  // strides (rows starting inside its producer's, a per-(n, c) value read
  // at every (h, w)) is copied into scratch `t` first (exact).
  auto aligned = [&](unsigned k, unsigned t) {
    LTensor v = sameRows(k);
    if (v.layout == kStrEuAligned)
      return v;
    LTensor c = localTensor(chip, temps[t], v.prec, out.shape);
    c.isSigned = v.isSigned;
    ar(em, ArOp::Copy, c, Opd::of(v));
    return c;
  };
  if (const auto *c = std::get_if<CompareParams>(&op.params)) {
    // Operands of mixed precisions are converted into scratch anyway.
    if (c->lhs.prec != c->rhs.prec)
      return compareTile(em, c->kind, out, sameRows(0), sameRows(1), scratch);
    unsigned t = compareTemps(c->kind, false);
    return compareTile(em, c->kind, out, aligned(0, t), aligned(1, t + 1),
                       scratch);
  }
  if (const auto *c = std::get_if<CompareConstParams>(&op.params))
    return compareConstTile(em, *c, out,
                            aligned(0, compareTemps(c->kind, false)), scratch);
  if (std::holds_alternative<WhereParams>(op.params))
    return whereTile(em, out, aligned(0, 0), aligned(1, 1), aligned(2, 2));
  if (std::holds_alternative<PReluParams>(op.params)) {
    Opd slope =
        op.inputs.size() > 1 ? Opd::of(sameRows(1)) : Opd::of(perChannel(0));
    emitPReluTile(em, sameRows(0), slope, out, scratch);
    return;
  }
  if (std::holds_alternative<PermuteParams>(op.params)) {
    // out (n, c, i, j) = in (n, c, j, i): the slice's output rows are the
    // input's columns [outRows) of every row, read through a view whose h
    // and w strides are swapped (exact: a copy).
    int v = op.inputs[0];
    LTensor in = view(v, copyOf(v, si), s, 0, spec.values[v].shape[2],
                      outRows.begin, outRows.count);
    ar(em, ArOp::Copy, out,
       Opd::of(restrided(in, 0, out.shape, in.stride.w, in.stride.h)));
    return;
  }
  if (const auto *r = std::get_if<ReduceParams>(&op.params)) {
    // The input rows in fp32 (negated for a minimum), one pooling whose
    // window is the reduced extent (sums in index order from +0, as the
    // interpreter), the result converted (negated back).
    // With reduced-axis slices: this slice's share, its sums (a mean
    // scaled by the whole extent) started in or added to the accumulator,
    // which the last slice converts.
    RowSpan rows =
        kAxis == 2 ? RowSpan{s.rows[op.inputs[0]].begin,
                             s.rows[op.inputs[0]].count, 0, 0}
                   : localInputRows(op, spec, 0, outRows.begin, outRows.count);
    const Range &inCols = s.cols[op.inputs[0]];
    LTensor in = operand(0, rows, inCols.begin, inCols.count);
    bool isMin = r->kind == ReduceKind::Min;
    bool square = r->kind == ReduceKind::SumSquare || r->kind == ReduceKind::L2;
    LTensor x = localTensor(chip, temps[0], Prec::Fp32, in.shape);
    if (square)
      ar(em, ArOp::Mul, x, Opd::of(in), Opd::of(in));
    else if (isMin)
      ar(em, ArOp::Mul, x, Opd::of(in), Opd::imm(-1.0f, in.prec));
    else
      ar(em, in.prec == Prec::Fp32 ? ArOp::Copy : ArOp::Cast, x, Opd::of(in));
    LTensor acc = localTensor(chip, temps[1], Prec::Fp32, out.shape);
    PorDCmd c;
    bool isMax = isMin || r->kind == ReduceKind::Max;
    c.kind = isMax ? PorDCmd::MaxPool : PorDCmd::AvgPool;
    c.input = x;
    c.output = acc;
    // The reduced axes are those of extent 1 in the result value (a slice
    // of one row of a reduction over W alone has one row too).
    const auto &is = spec.values[op.inputs[0]].shape;
    const auto &os = spec.values[op.output].shape;
    c.kh = os[2] == 1 ? x.shape.h : 1;
    c.kw = os[3] == 1 ? x.shape.w : 1;
    float extent = float((os[2] == 1 ? is[2] : 1) * (os[3] == 1 ? is[3] : 1));
    c.avgScale = r->kind == ReduceKind::Mean ? 1.0f / extent : 1.0f;
    c.padBits = floatBits(-INFINITY, Prec::Fp32);
    if (kSlices > 1) {
      std::optional<LTensor> total = accumulate(
          em, s, acc, isMax ? ArOp::Max : ArOp::Add, [&](const LTensor &dst) {
            c.output = dst;
            pord(em, c);
          });
      if (!total)
        return;
      acc = *total;
    } else {
      pord(em, c);
    }
    if (isMin) {
      ar(em, ArOp::Mul, out, Opd::of(acc), Opd::imm(-1.0f, Prec::Fp32));
    } else if (r->kind == ReduceKind::L2) {
      // sqrt(sum) = 1 / rsqrt(sum), as the kernel.
      sfuRsqrt(em, acc, acc);
      ar(em, ArOp::Div, out, Opd::imm(1.0f, Prec::Fp32), Opd::of(acc));
    } else {
      ar(em, out.prec == Prec::Fp32 ? ArOp::Copy : ArOp::Cast, out,
         Opd::of(acc));
    }
    return;
  }
  if (const auto *sl = std::get_if<SliceParams>(&op.params)) {
    // The rows and columns the slice reads, as a view whose strides step
    // over the input's rows and columns, then its channels: the same
    // lanes (a start at a lane slot boundary) copied by the TIU, others
    // moved across lanes by the GDMA, local to local. The bytes move
    // unchanged, as the per-op kernel's DDR copy moves them.
    int v = op.inputs[0];
    RowSpan rows = localInputRows(op, spec, 0, outRows.begin, outRows.count);
    RowSpan cols = localInputCols(op, spec, 0, outCols.begin, outCols.count);
    LTensor held = view(v, copyOf(v, si), s, rows.begin, rows.count, cols.begin,
                        cols.count);
    LTensor in =
        freeTensor(held.offset, held.prec,
                   {out.shape.n, held.shape.c, out.shape.h, out.shape.w},
                   {held.stride.n, held.stride.c, held.stride.h * sl->steps[2],
                    held.stride.w * sl->steps[3]});
    in.isSigned = held.isSigned;
    int64_t c0 = sl->starts[1];
    LTensor src = in;
    if (c0 != 0 || int64_t(out.shape.c) != int64_t(in.shape.c))
      src = channelRange(chip, in, c0, out.shape.c);
    if (c0 % int64_t(chip.npuNum) == 0)
      ar(em, ArOp::Copy, out, Opd::of(src));
    else
      copyLocal(em, src, out);
    return;
  }
  if (std::holds_alternative<ConcatParams>(op.params)) {
    // Each input's rows of the slice into its channels of the result: a
    // channel range that starts in the lane of its first channel
    // (channelRange), so the copy crosses lanes and the GDMA moves it,
    // local to local. The bytes move unchanged, as the per-op kernel's
    // DDR copies move them.
    int64_t c0 = 0;
    for (unsigned k = 0; k < op.inputs.size(); ++k) {
      LTensor in = sameRows(k);
      copyLocal(em, in, channelRange(chip, out, c0, in.shape.c));
      c0 += in.shape.c;
    }
    return;
  }
  if (std::holds_alternative<LutParams>(op.params)) {
    // As the lut kernel: the gather reads EU-aligned indices, so a view
    // is copied into the result first (exact), then looked up in place.
    LTensor in = sameRows(0);
    if (in.layout != kStrEuAligned) {
      ar(em, ArOp::Copy, out, Opd::of(in));
      in = out;
    }
    lutGather(em, out, in, off[0]);
    return;
  }
  if (const auto *b = std::get_if<BinaryInt8Params>(&op.params)) {
    emitBinaryInt8Tile(em, *b, sameRows(0), sameRows(1), out,
                       localTensor(chip, temps[0], Prec::Int32, out.shape),
                       localTensor(chip, temps[1], Prec::Int32, out.shape));
    return;
  }
  if (const auto *b = std::get_if<BinaryParams>(&op.params);
      b && b->kind == BinaryKind::Pow) {
    // As the kernel: exp(b log a) in fp32 on tiles of the output's shape
    // (localOpSupport: no broadcast operand, so both are group values).
    if (op.inputs[0] < 0 || op.inputs[1] < 0)
      throw Error("layer group '" + spec.name + "': a power of a weight");
    LTensor base = sameRows(0);
    if (base.layout == kStrFree) {
      // The log's SFU sequence reads an EU-aligned tile: copy the rows into
      // the output first (exact; read before the result is written).
      ar(em, ArOp::Copy, out, Opd::of(base));
      base = out;
    }
    emitPowTensor(em, base, sameRows(1), out, scratch);
    trailing(em, act, out, scratch);
    return;
  }
  if (const auto *b = std::get_if<BinaryParams>(&op.params)) {
    size_t r = 0;
    Opd lhs = op.inputs[0] >= 0 ? Opd::of(sameRows(0)) : Opd::of(perChannel(r++));
    Opd rhs = op.inputs[1] >= 0 ? Opd::of(sameRows(1)) : Opd::of(perChannel(r++));
    ar(em, arOpOf(b->kind), out, lhs, rhs);
    trailing(em, act, out, scratch);
    return;
  }
  if (const auto *b = std::get_if<BinaryConstParams>(&op.params)) {
    Opd x = Opd::of(sameRows(0));
    Opd c = Opd::imm(b->value, spec.values[op.inputs[0]].prec);
    ar(em, arOpOf(b->kind), out, b->constOnLeft ? c : x, b->constOnLeft ? x : c);
    trailing(em, act, out, scratch);
    return;
  }
  if (std::holds_alternative<UnaryParams>(op.params)) {
    LTensor in = sameRows(0);
    if (in.layout == kStrFree) {
      // emitUnary reads EU-aligned tiles: copy the rows into the output
      // first (exact), then compute in place.
      ar(em, ArOp::Copy, out, Opd::of(in));
      in = out;
    }
    emitUnary(em, act, in, out, scratch);
    return;
  }
  // Scale: x * scale + bias per channel.
  Opd x = Opd::of(sameRows(0));
  ar(em, ArOp::Mul, out, x, Opd::of(perChannel(0)));
  ar(em, ArOp::Add, out, Opd::of(out), Opd::of(perChannel(1)));
  trailing(em, act, out, scratch);
}

void Schedule::emit(CmdEmitter &em) const {
  UnaryScratch scratch;
  scratch.tables = tables;
  if (needTables) {
    std::vector<UnaryKind> done;
    for (const GroupOp &op : spec.ops)
      for (UnaryKind k : tableKindsOf(op.params)) {
        if (std::find(done.begin(), done.end(), k) != done.end())
          continue;
        prepareUnaryTables(em, k, scratch);
        done.push_back(k);
      }
  }
  // Weights: once, or (not resident) before each slice's computation.
  auto loadWeight = [&](const Resident &r, uint64_t offset) {
    LTensor dst = localTensor(chip, offset, r.prec, r.shape, r.layout);
    if (r.matrixCols) {
      uint32_t rows = r.shape.n, cols = uint32_t(r.matrixCols);
      if (r.matrixTranspose)
        loadMatrix(em, r.addr, r.prec, cols, rows, uint64_t(r.matrixStride),
                   dst, true);
      else
        loadMatrix(em, r.addr, r.prec, rows, cols, uint64_t(r.matrixStride),
                   dst);
      return dst;
    }
    DView src = denseView(r.addr, r.prec, r.shape);
    if (r.gstride)
      src.stride = *r.gstride;
    load(em, src, dst);
    return dst;
  };
  // The weights of slice `si` (all of them unless C-sliced).
  auto loadWeights = [&](size_t si) {
    for (size_t o = 0; o < spec.ops.size(); ++o)
      for (size_t i = 0; i < residents[o].size(); ++i) {
        Resident r = sliceResident(o, i, slices[si]);
        uint64_t at = offsetsOf(o, si)[i];
        // The first op's weights, prefetched, are in place already.
        LTensor dst =
            o == 0 && prefetch.firstAt >= 0
                ? localTensor(chip, at, r.prec, r.shape, r.layout)
                : loadWeight(r, at);
        if (r.castTo)
          ar(em, ArOp::Cast,
             localTensor(chip, castsOf(o, si)[i], *r.castTo, r.shape,
                         isa::LocalLayout::Compact),
             Opd::of(dst));
      }
  };
  // Resident weights are loaded once, after the first slice's inputs and in
  // op order: the first op waits for its own weights only, the others' load
  // while it computes.
  auto gview = [&](size_t v) {
    const GroupValue &gv = spec.values[v];
    DView d = denseView(gv.addr, gv.prec, shape4(gv.shape));
    if (gv.gstride)
      d.stride = *gv.gstride;
    return d;
  };
  pipeline(
      slices.size(),
      [&](size_t i) {
        const Slice &s = slices[i];
        for (size_t v = 0; v < spec.values.size(); ++v) {
          if (!spec.values[v].loaded || s.rows[v].count <= 0)
            continue;
          LTensor dst = bufferTensor(int(v), copyOf(int(v), i), s);
          if (const GroupValue &gv = spec.values[v]; gv.matrixCols) {
            MatrixSpan m = matrixSpan(int(v), s);
            loadMatrix(em, m.addr, gv.prec, uint32_t(s.nCount),
                       uint32_t(m.cols), uint64_t(gv.matrixCols), dst);
            continue;
          }
          load(em,
               subView(gview(v),
                       {uint32_t(s.n0), uint32_t(chanBegin(int(v), s)),
                        uint32_t(s.rows[v].begin), uint32_t(s.cols[v].begin)},
                       dst.shape),
               dst);
        }
        if (i == 0 && weightResident)
          loadWeights(0);
        // C slices with two copies of the weights: each slice's load with
        // its inputs (emitted before the previous slice's computation, which
        // reads the other copy), into the copy the slice before last used.
        if (weightCopies > 1)
          loadWeights(i);
      },
      [&](size_t i) {
        // One copy: a slice's weights load once the slice before is done
        // with them (right before its own commands).
        if (!weightResident && weightCopies == 1)
          loadWeights(i);
        // The next group's first weights load while the last slice
        // computes, once its commands are done with their region.
        bool last = i + 1 == slices.size();
        auto prefetchNext = [&] {
          for (size_t k = 0; k < nextResidents.size(); ++k)
            loadWeight(nextResidents[k], nextOffsets[k]);
        };
        if (last && prefetchAfter < 0)
          prefetchNext();
        for (size_t o = 0; o < spec.ops.size(); ++o) {
          emitOp(em, o, i);
          if (last && int(o) == prefetchAfter)
            prefetchNext();
        }
      },
      [&](size_t i) {
        const Slice &s = slices[i];
        for (size_t v = 0; v < spec.values.size(); ++v) {
          if (!spec.values[v].stored || s.stores[v].count <= 0)
            continue;
          const Range &st = s.stores[v], &sc = s.storeCols[v];
          LTensor src = view(int(v), copyOf(int(v), i), s, st.begin, st.count,
                             sc.begin, sc.count);
          if (const GroupValue &gv = spec.values[v]; gv.matrixCols) {
            MatrixSpan m = matrixSpan(int(v), s);
            storeMatrix(em, src, m.addr, uint32_t(s.nCount), uint32_t(m.cols),
                        uint64_t(gv.matrixCols));
            continue;
          }
          store(em, src,
                subView(gview(v),
                        {uint32_t(s.n0), uint32_t(chanBegin(int(v), s)),
                         uint32_t(st.begin), uint32_t(sc.begin)},
                        src.shape));
        }
      });
}

/// The schedule of `spec` sliced n x c x h with its weights in `order`:
/// large weights on bank boundaries when that fits, else packed. `why` says
/// why not when neither fits.
std::optional<Schedule> buildSchedule(const GroupSpec &spec,
                                      const isa::ChipParams &chip, int64_t n,
                                      int64_t c, int64_t h, int64_t w,
                                      int64_t k, bool weightResident,
                                      Schedule::Prefetch prefetch,
                                      WeightOrder order, std::string &why) {
  std::optional<Schedule> sch;
  // C slices load each slice's weights: double-buffered where that fits.
  for (unsigned copies : {2u, 1u}) {
    if (copies == 2 && c == 1 && k == 1)
      continue;
    for (bool banked : {true, false}) {
      sch.emplace(spec, chip, n, c, h, w, weightResident, banked, prefetch,
                  order);
      sch->setWeightCopies(copies);
      sch->setReducedSlices(k);
      if ((why = sch->build()).empty())
        return sch;
    }
  }
  return std::nullopt;
}

/// A slicing: batch, channel, row, column and reduced-axis slices.
struct Slicing {
  int64_t n = 1, c = 1, h = 1, w = 1, k = 1;
  int64_t steps() const { return n * c * h * w * k; }
};

/// Candidate slicings in the order they are tried: fewest slices first, the
/// batch and rows (in the options' order) with all channels, then the same
/// with the channels cut into 2, 3, ... slices of whole lane slots (what
/// fits when the weights exceed local memory, and what double-buffers
/// them), and last the rows' columns cut into 2, 3, ... slices (when not
/// even one row fits).
std::vector<Slicing> candidates(const GroupSpec &spec,
                                const GroupOptions &options,
                                const isa::ChipParams &chip) {
  const GroupValue &last = spec.values[spec.ops.back().output];
  int64_t n = last.shape[0], h = last.shape[2], ch = last.shape[1];
  int64_t maxH = options.maxHSlices > 0 ? std::min(options.maxHSlices, h) : h;
  // Ops that read every row: the batch and channels alone, then columns.
  bool wholeRows = !rowSliceError(spec).empty();
  if (wholeRows)
    maxH = 1;
  int64_t npu = chip.npuNum;
  std::vector<int64_t> cCounts{1};
  if (options.channelSlices && channelSliceError(spec).empty())
    for (int64_t k = ceilDiv(ch, npu) - 1; k >= 1; --k) {
      int64_t cs = ceilDiv(ch, k * npu);
      if (cs != cCounts.back())
        cCounts.push_back(cs);
    }
  std::vector<Slicing> out;
  for (int64_t cs : cCounts) {
    if (!options.hFirst) {
      // Only counts that splitRange(n, ceilDiv(n, ns)) really gives.
      for (int64_t ns = 1; ns <= n; ++ns)
        if (ceilDiv(n, ceilDiv(n, ns)) == ns)
          out.push_back({ns, cs, 1});
      for (int64_t hs = 2; hs <= maxH; ++hs)
        out.push_back({n, cs, hs});
    } else {
      for (int64_t hs = 1; hs <= maxH; ++hs)
        out.push_back({1, cs, hs});
      for (int64_t ns = 2; ns <= n; ++ns)
        if (ceilDiv(n, ceilDiv(n, ns)) == ns)
          out.push_back({ns, cs, maxH});
    }
  }
  // The last resort, once every row is a slice of its own (not when the
  // options bound the H slices below that): the last of those with each
  // row's columns cut into 2, 3, ... slices.
  if (options.widthSlices && (maxH == h || wholeRows) &&
      columnSliceError(spec).empty()) {
    Slicing lastResort = out.back();
    for (int64_t ws = 2; ws <= last.shape[3]; ++ws) {
      lastResort.w = ws;
      out.push_back(lastResort);
    }
  }
  // A group of one that reduces an axis: its reduced extent cut into 2, 3,
  // ... slices (each count that gives a new slice length), with the whole
  // batch, then a slice per batch entry, then with the channels cut too,
  // then the rows (a reduction over W) or the columns (over H).
  if (int axis = accumulatedAxis(spec); axis >= 0) {
    int64_t d = spec.values[spec.ops[0].inputs[0]].shape[axis];
    std::vector<int64_t> counts;
    for (int64_t ks = 2, len = 0; ks <= d; ++ks)
      if (int64_t l = ceilDiv(d, ks); l != len) {
        counts.push_back(ks);
        len = l;
      }
    std::vector<Slicing> bases{{1, 1, 1, 1, 1}};
    if (n > 1)
      bases.push_back({n, 1, 1, 1, 1});
    // Then the channels (whole lane slots, doubling), the rows (a
    // reduction over W), the columns (over H), doubling too.
    for (int64_t cs = 2; options.channelSlices && cs <= ceilDiv(ch, npu) &&
                         channelSliceError(spec).empty();
         cs *= 2)
      bases.push_back({n, cs, 1, 1, 1});
    int64_t cLast = bases.back().c;
    if (axis == 3)
      for (int64_t hs = 2; hs <= maxH; hs *= 2)
        bases.push_back({n, cLast, hs, 1, 1});
    if (axis == 2 && options.widthSlices && columnSliceError(spec).empty())
      for (int64_t ws = 2; ws <= last.shape[3]; ws *= 2)
        bases.push_back({n, cLast, 1, ws, 1});
    for (Slicing b : bases)
      for (int64_t ks : counts) {
        b.k = ks;
        out.push_back(b);
      }
  }
  return out;
}

} // namespace

namespace {

/// planGroup in the spec's own layout.
bool planInLayout(const GroupSpec &spec, const isa::ChipParams &chip,
                  const GroupOptions &options, GroupPlan &plan,
                  std::string &why) {
  if (spec.ops.empty()) {
    why = "empty group";
    return false;
  }
  for (const GroupOp &op : spec.ops) {
    std::string s = localOpSupport(op.params, chip);
    if (!s.empty()) {
      why = std::visit([](const auto &x) { return x.name; }, op.params) + ": " +
            s;
      return false;
    }
  }
  std::vector<Slicing> cands = candidates(spec, options, chip);
  isa::Machine machine;
  machine.chip = chip;
  if (options.timing)
    machine.timing = *options.timing;
  why = "no slicing fits";
  Schedule::Prefetch prefetch{options.firstWeightsAt, options.next,
                              options.next ? options.nextWeightsAt : -1};
  auto tryOrder = [&](size_t i, WeightOrder order, GroupPlan &out,
                      std::string &whyNot) -> bool {
    std::optional<Schedule> sch = buildSchedule(
        spec, chip, cands[i].n, cands[i].c, cands[i].h, cands[i].w, cands[i].k,
        options.weightResident, prefetch, order, whyNot);
    if (!sch)
      return false;
    Schedule &s = *sch;
    CmdEmitter em(chip);
    try {
      s.emit(em);
    } catch (const Error &e) {
      whyNot = e.what();
      return false;
    }
    out.nSlices = cands[i].n;
    out.cSlices = cands[i].c;
    out.hSlices = cands[i].h;
    out.wSlices = cands[i].w;
    out.kSlices = cands[i].k;
    out.lmemBytes = s.peak;
    out.weightBytes = s.weightBytes;
    out.timesteps = int64_t(s.slices.size()) + 2;
    out.ddrReadBytes = s.ddrRead;
    out.ddrWriteBytes = s.ddrWrite;
    out.numTiu = em.numTiu();
    out.numGdma = em.numGdma();
    out.macs = s.macs;
    out.weightResident = s.residentWeights();
    out.firstWeightsAt = prefetch.firstAt;
    out.nextWeightsAt = prefetch.nextAt;
    out.weightOrder = order;
    auto [tiu, gdma] = em.streamsWithEnd();
    isa::Estimate e = isa::estimateGroup(tiu, gdma, machine);
    out.estimatedCycles = e.cycles - std::min(e.cycles, e.launchCycles);
    out.stallCycles = e.gdmaConflictCycles;
    return true;
  };
  auto tryPlan = [&](size_t i, GroupPlan &out) -> bool {
    return tryOrder(i, WeightOrder::InOrder, out, why);
  };
  // The candidates come in runs: one per channel count (the batch and rows
  // sliced, every column and the reduced extent whole), then the last
  // resort's (each slicing with column slices alone; the reduced-axis
  // slices, a run per channel count). Of each run, its first slicing that
  // fits, then a few with more slices (doubling the last count tried)
  // until two in a row are slower than the run's fastest. The fastest of
  // all by the cost model wins; on a tie the first in the candidates'
  // order (the fewest slices). Every channel count's run is searched, not
  // only the first that fits: the cost is not monotone in the count
  // (weight slices small enough for two copies load the next slice's
  // while this one computes), and stopping at the first count that fits,
  // or after two slower ones, made more local memory slower: ResNet-18's
  // layer4 3x3 convs in F16 on 16 lanes cost 103,681 cycles in 32 channel
  // slices with 32 KiB, while with 64 KiB the search stopped after 6, 7
  // and 8 slices (162,843, 163,670 and 164,494 cycles), before 16
  // (92,956). In the matrix(w) layout the column blocks, the C slices, are
  // also what overlaps the weight's load with the multiplies. When a
  // slicing of those runs fits a matmul alone, its reduced-axis runs
  // compete with it on cost: cutting K is what overlaps the weight's load
  // with the multiplies (two copies of a K slice, the next loading while
  // this one multiplies), and without them more local
  // memory was slower: a 32768 x 256 F16 linear layer on 512 KiB lanes
  // fit whole and cost 329,184 cycles, where 8 K slices cost 272,780
  // (and on 256 KiB, where it did not fit whole, 14 cost 275,380). When
  // none fits, the last resort (the columns-only runs, then the
  // reduced-axis ones): its first run that does, as before (columns keep
  // a reduction's sums in one pass).
  auto runEnd = [&](size_t b) {
    size_t e = b + 1;
    if (cands[b].w == 1)
      while (e < cands.size() && cands[e].c == cands[b].c && cands[e].w == 1 &&
             (cands[e].k > 1) == (cands[b].k > 1))
        ++e;
    return e;
  };
  auto lastResort = [&](size_t k) { return cands[k].w > 1 || cands[k].k > 1; };
  GroupPlan best;
  bool found = false;
  size_t bestIndex = 0;
  // Keeps candidate k's plan when it is the fastest so far.
  auto consider = [&](size_t k, const GroupPlan &plan) {
    if (!found || plan.estimatedCycles < best.estimatedCycles) {
      best = plan;
      bestIndex = k;
      found = true;
    }
  };
  // Searches run [b, e); false when none of it fits.
  auto searchRun = [&](size_t b, size_t e) {
    size_t f = b;
    GroupPlan next;
    while (f < e && !tryPlan(f, next))
      ++f;
    if (f == e)
      return false;
    uint64_t runBest = next.estimatedCycles;
    consider(f, next);
    int64_t steps = cands[f].steps();
    int slower = 0;
    for (size_t k = f + 1; k < e && slower < 2; ++k) {
      if (cands[k].steps() < 2 * steps)
        continue;
      if (!tryPlan(k, next))
        break;
      steps = cands[k].steps();
      consider(k, next);
      if (next.estimatedCycles < runBest) {
        runBest = next.estimatedCycles;
        slower = 0;
      } else {
        ++slower;
      }
    }
    return true;
  };
  for (size_t b = 0, e; b < cands.size(); b = e) {
    e = runEnd(b);
    if (!lastResort(b))
      searchRun(b, e);
  }
  // Something fits: a matmul's reduced-axis runs (whole columns) compete
  // with it. Not a reduction's: its input loads slice by slice either way,
  // and cutting its extent only rounds its sums otherwise.
  if (found && spec.ops.size() == 1 &&
      std::holds_alternative<MatMulParams>(spec.ops[0].params))
    for (size_t b = 0, e; b < cands.size(); b = e) {
      e = runEnd(b);
      if (cands[b].k > 1 && cands[b].w == 1)
        searchRun(b, e);
    }
  for (size_t b = 0, e; !found && b < cands.size(); b = e) {
    e = runEnd(b);
    if (lastResort(b))
      searchRun(b, e);
  }
  if (!found)
    return false;
  // The other weight orders on the chosen slicing, the fastest wins. They
  // can only save GDMA stalls, so they are tried when the op-order layout
  // has some; with fewer than two ops with weights they differ at most by
  // padding. (On the chosen slicing only: trying them on every slicing
  // found the same plans on ResNet-50 and PP-OCR at 2.5 times the time.)
  size_t weighted = 0;
  for (const GroupOp &op : spec.ops)
    weighted +=
        !residentsOf(op.params, op.inputs, chip, spec.matrixColumns).empty();
  if (weighted >= 2 && best.weightResident && best.stallCycles != 0)
    for (WeightOrder order : {WeightOrder::FirstApart, WeightOrder::Parity}) {
      GroupPlan other;
      std::string ignored;
      if (tryOrder(bestIndex, order, other, ignored) &&
          other.estimatedCycles < best.estimatedCycles)
        best = other;
    }
  plan = best;
  plan.matrixColumns = spec.matrixColumns;
  why.clear();
  return true;
}

} // namespace

bool planGroup(const GroupSpec &spec, const isa::ChipParams &chip,
               const GroupOptions &options, GroupPlan &plan,
               std::string &why) {
  bool ok = planInLayout(spec, chip, options, plan, why);
  // The matrix(w) layout, for result columns over 1, 2, 4, ... lane slots
  // (not when the first weights are prefetched: the previous group loads
  // them in the spec's own layout).
  if (options.firstWeightsAt >= 0 || spec.matrixColumns || spec.ops.empty())
    return ok;
  const auto *m = std::get_if<MatMulParams>(&spec.ops[0].params);
  if (!m || !rightIsWeight(*m))
    return ok;
  int64_t n = matmulKN(*m)[1], prev = 0;
  for (int64_t slots = 1; slots <= 16; slots *= 2) {
    int64_t w = ceilDiv(n, slots * int64_t(chip.npuNum));
    if (w == prev)
      break;
    prev = w;
    GroupSpec cs = spec;
    if (!matrixColumnsLayout(cs, w, chip))
      break;
    GroupPlan p;
    std::string whyNot;
    if (!planInLayout(cs, chip, options, p, whyNot))
      continue;
    if (!ok || p.estimatedCycles < plan.estimatedCycles) {
      plan = p;
      ok = true;
      why.clear();
    }
  }
  return ok;
}

const char *weightOrderName(WeightOrder order) {
  switch (order) {
  case WeightOrder::InOrder:
    return "in_order";
  case WeightOrder::FirstApart:
    return "first_apart";
  case WeightOrder::Parity:
    return "parity";
  }
  return "in_order";
}

bool parseWeightOrder(const std::string &name, WeightOrder &order) {
  for (WeightOrder o :
       {WeightOrder::InOrder, WeightOrder::FirstApart, WeightOrder::Parity})
    if (name == weightOrderName(o)) {
      order = o;
      return true;
    }
  return false;
}

uint64_t firstWeightBytes(const GroupSpec &spec, const isa::ChipParams &chip) {
  uint64_t end = 0;
  layoutFrom(firstResidents(spec, chip), chip, 0, end);
  return end;
}

bool runAlone(CmdEmitter &em, const char *kernel, const LocalOpParams &params,
              const std::vector<GTensor> &inputs, const GTensor &output,
              std::string *noFit, const AloneStrides &strides) {
  std::string name = std::visit([](const auto &x) { return x.name; }, params);
  OpCtx ctx{kernel, name};
  if (std::string why = localOpSupport(params, em.chip()); !why.empty())
    ctx.fail(why);
  GroupSpec spec;
  spec.name = name;
  auto value = [&](const GTensor &t, const std::string &what) {
    if (t.shape.size() != 4)
      ctx.fail(what + " must have rank 4");
    GroupValue v;
    v.name = name + "." + what;
    v.prec = t.prec;
    v.isSigned = t.isSigned;
    v.shape = {t.shape[0], t.shape[1], t.shape[2], t.shape[3]};
    v.addr = t.addr;
    return v;
  };
  if (!strides.empty() && strides.size() != inputs.size() + 1)
    throw Error("runAlone: " + std::to_string(strides.size()) +
                " strides for " + std::to_string(inputs.size() + 1) +
                " tensors");
  auto strideOf = [&](size_t k) {
    return strides.empty() ? std::nullopt : strides[k];
  };
  GroupOp op{params, {}, -1};
  for (size_t k = 0; k < inputs.size(); ++k) {
    spec.values.push_back(value(inputs[k], "input" + std::to_string(k)));
    spec.values.back().loaded = true;
    spec.values.back().gstride = strideOf(k);
    op.inputs.push_back(int(k));
  }
  spec.values.push_back(value(output, "output"));
  spec.values.back().stored = true;
  spec.values.back().gstride = strideOf(inputs.size());
  op.output = int(inputs.size());
  spec.ops.push_back(op);
  // An element-wise op of dense tensors fills the lanes, as its group of
  // one in the layer-group pass does.
  if (strides.empty())
    flattenElementwise(spec, em.chip());
  // The module's slicing options, without the neighbours' weight prefetch.
  GroupOptions options =
      em.aloneOptions() ? *em.aloneOptions() : GroupOptions{};
  options.firstWeightsAt = options.nextWeightsAt = -1;
  options.next = nullptr;
  GroupPlan plan;
  std::string why;
  if (!planGroup(spec, em.chip(), options, plan, why)) {
    // Name the options that took slicings away.
    std::string off;
    for (auto [on, what] : {std::pair{options.channelSlices, "channel"},
                            std::pair{options.widthSlices, "column"}})
      if (!on)
        off += std::string(off.empty() ? "" : " and ") + what;
    if (!off.empty())
      why += " (" + off + " slices are off)";
    if (!options.weightResident)
      why += " (weights not resident)";
    if (!noFit)
      ctx.fail("does not fit in local memory: " + why);
    *noFit = why;
    return false;
  }
  emitGroup(em, spec, plan);
  return true;
}

void emitGroup(CmdEmitter &em, const GroupSpec &spec, const GroupPlan &plan,
               const GroupSpec *next) {
  if (plan.nextWeightsAt >= 0 && !next)
    throw Error("layer group '" + spec.name +
                "': prefetches the next group's weights, but there is none");
  std::string why;
  // The matrix(w) layout the plan was made in (unless `spec` is in it).
  GroupSpec columns;
  const GroupSpec *laid = &spec;
  if (plan.matrixColumns && plan.firstWeightsAt >= 0)
    throw Error("layer group '" + spec.name +
                "': the matrix(w) layout (matrix_columns) with first weights "
                "prefetched in the row layout (first_weights_at)");
  if (plan.matrixColumns != spec.matrixColumns) {
    columns = spec;
    if (!matrixColumnsLayout(columns, plan.matrixColumns, em.chip()))
      throw Error("layer group '" + spec.name +
                  "': has no matrix-column form (matrix_columns = " +
                  std::to_string(plan.matrixColumns) + ")");
    laid = &columns;
  }
  std::optional<Schedule> sch = buildSchedule(
      *laid, em.chip(), plan.nSlices, plan.cSlices, plan.hSlices, plan.wSlices,
      plan.kSlices, plan.weightResident,
      {plan.firstWeightsAt, plan.nextWeightsAt >= 0 ? next : nullptr,
       plan.nextWeightsAt},
      plan.weightOrder, why);
  if (!sch)
    throw Error("layer group '" + spec.name + "': " + why);
  sch->emit(em);
  if (plan.kSlices > 1) {
    // The shares Schedule::share cut, in the op's reduced index: rows of a
    // reduction over H count their elements when W is reduced with them.
    int axis = accumulatedAxis(*laid);
    const GroupOp &op = laid->ops[0];
    const auto &in = laid->values[op.inputs[0]].shape;
    const auto &out = laid->values[op.output].shape;
    int64_t d = in[size_t(axis)]; // a matmul's rows: (B, M, 1, K)
    int64_t unit = axis == 2 && out[3] == 1 ? in[3] : 1;
    ReducedShares r;
    r.op = std::visit([](const auto &x) { return x.name; }, op.params);
    for (int64_t k = 0; k <= plan.kSlices; ++k)
      r.bounds.push_back(unit * (d * k / plan.kSlices));
    em.noteReducedShares(std::move(r));
  }
}

uint64_t estimateCycles(const CmdEmitter &em, const isa::Machine &machine) {
  auto [tiu, gdma] = em.streamsWithEnd();
  isa::Estimate e = isa::estimateGroup(tiu, gdma, machine);
  return e.cycles - std::min(e.cycles, e.launchCycles);
}

} // namespace tpu::backend
