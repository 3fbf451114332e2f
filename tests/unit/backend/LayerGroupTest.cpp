//===- LayerGroupTest.cpp - Local ops and the group scheduler -------------===//
//
// windowRows against hand-derived row spans (image edges, stride 2,
// dilation, spans that read only padding), then groups run on the
// simulator's functional kernels under several engine schedules against the
// same ops run one by one through the per-op kernels (their intermediate
// values through DDR): the local operations emit the per-op kernels' tile
// commands, so every output must be equal bit for bit, whatever the
// slicing (one slice, several, one row per slice, batch slices). The
// per-op entry points of convolutions, pooling, resizes, matmuls, softmax,
// layer norm, reductions and the element-wise ops are themselves groups of
// one (runAlone): for them this compares a group's slicing with the
// slicing each op gets alone, and their independent references are
// ConvTest, PoolNormTest, EltwiseTest, ScaleTest, MatMulTest,
// MissingOpsTest and MoveTest (resize) (direct loops in double precision)
// and TpuChipOrder (the tpu interpreter; INT8 matmuls against
// chip::matmulInt8 there and against numpy in lit int8-attention.test).
// Also: a
// group that cannot fit is refused with a reason, and the planner's choice
// emits what emitGroup emits.
//
//===----------------------------------------------------------------------===//

#include "BackendTestUtil.h"

#include "tpuc/Backend/LayerGroup.h"

#include "tpu/isa/Cost.h"
#include "tpu/isa/Decode.h"
#include "tpu/isa/Estimate.h"
#include "tpu/isa/Work.h"

#include <algorithm>
#include <map>
#include <optional>
#include <random>

using namespace tpu;
using namespace tpu::backend;
using namespace tpu::backend::test;

namespace {

//===----------------------------------------------------------------------===//
// windowRows
//===----------------------------------------------------------------------===//

void expectSpan(RowSpan s, int64_t begin, int64_t count, int64_t before,
                int64_t after) {
  EXPECT_EQ(s.begin, begin);
  EXPECT_EQ(s.count, count);
  EXPECT_EQ(s.padBefore, before);
  EXPECT_EQ(s.padAfter, after);
}

TEST(LayerGroupRows, HaloAtTheEdges) {
  // 3x3, pad 1, stride 1 over 8 rows. Outputs 0..3 read virtual rows -1..4:
  // real rows 0..4 with one pad row before; outputs 4..7 read 3..8: real
  // rows 3..7 and one pad row after.
  expectSpan(windowRows(0, 4, 1, 1, 3, 1, 0, 8), 0, 5, 1, 0);
  expectSpan(windowRows(4, 4, 1, 1, 3, 1, 0, 8), 3, 5, 0, 1);
  // One output row in the middle: rows 2..4, no padding.
  expectSpan(windowRows(3, 1, 1, 1, 3, 1, 0, 8), 2, 3, 0, 0);
}

TEST(LayerGroupRows, StrideAndDilation) {
  // 3x3, stride 2, pad 1 over 8 rows (4 outputs). Outputs 0..1 read
  // virtual rows -1..3 (v1 = 1 * 2 - 1 + 2 + 1 = 4): real 0..3, pad 1.
  expectSpan(windowRows(0, 2, 2, 1, 3, 1, 0, 8), 0, 4, 1, 0);
  // Outputs 2..3 read 3..7 (v1 = 3 * 2 - 1 + 3 = 8): real 3..7, none after.
  expectSpan(windowRows(2, 2, 2, 1, 3, 1, 0, 8), 3, 5, 0, 0);
  // 1x1 stride 2: output 3 reads row 6 only.
  expectSpan(windowRows(3, 1, 2, 0, 1, 1, 0, 8), 6, 1, 0, 0);
  // 3 taps dilated by 2, pad 2: output 0 reads -2, 0, 2: real 0..2, pad 2.
  expectSpan(windowRows(0, 1, 1, 2, 3, 2, 0, 8), 0, 3, 2, 0);
  // Output 7 reads 5, 7, 9: real 5..7, one virtual row past the end.
  expectSpan(windowRows(7, 1, 1, 2, 3, 2, 0, 8), 5, 3, 0, 2);
}

TEST(LayerGroupRows, OnlyPadding) {
  // 2x2 stride 1, pad 3 over 2 rows: output 0 reads virtual rows -3..-2.
  EXPECT_EQ(windowRows(0, 1, 1, 3, 2, 1, 0, 2).count, 0);
}

//===----------------------------------------------------------------------===//
// Groups against the per-op kernels
//===----------------------------------------------------------------------===//

/// A chain of ops built for both runs: every value has a DDR tensor for the
/// per-op run and one for the group's stores; weights are random blobs in
/// the layouts the kernels read.
class Net {
public:
  explicit Net(Prec prec) : prec(prec), ga(chip) {}

  isa::ChipParams chip = isa::ChipParams::bm1684x();
  Prec prec;
  /// The range of the input's random values (int8: truncated).
  float inLo = -2, inHi = 2;

  /// The input; of `p` when given, else of the net's precision.
  int input(int64_t n, int64_t c, int64_t h, int64_t w,
            std::optional<Prec> p = std::nullopt) {
    return value({n, c, h, w}, p);
  }

  /// A cast to `to` (quantising when `quant` is given: scale and zero point
  /// of the int8 side; through `viaInt` when given).
  int cast(int in, Prec to,
           std::optional<CastParams::Quant> quant = std::nullopt,
           std::optional<IntType> viaInt = std::nullopt) {
    int out = value(shapes[size_t(in)], to);
    CastParams p;
    p.name = "cast" + std::to_string(out);
    p.input = perOp[size_t(in)];
    p.output = perOp[size_t(out)];
    p.quant = quant;
    if (quant)
      p.round = isa::RoundMode::HalfAwayFromZero;
    p.viaInt = viaInt;
    if (viaInt)
      p.round = isa::RoundMode::TowardsZero;
    ops.push_back({p, {in}, out});
    return out;
  }

  int conv(int in, int64_t oc, int64_t k, int64_t stride, int64_t pad,
           int64_t dil = 1, int64_t groups = 1, bool bias = true,
           Activation act = {}) {
    auto s = shapes[size_t(in)];
    int64_t ic = s[1];
    int64_t oh = (s[2] + 2 * pad - dil * (k - 1) - 1) / stride + 1;
    int64_t ow = (s[3] + 2 * pad - dil * (k - 1) - 1) / stride + 1;
    int out = value({s[0], oc, oh, ow});
    ConvParams p;
    p.name = "conv" + std::to_string(out);
    p.kernelH = p.kernelW = k;
    p.strideH = p.strideW = stride;
    p.padTop = p.padBottom = p.padLeft = p.padRight = pad;
    p.dilationH = p.dilationW = dil;
    p.groups = groups;
    p.act = act;
    int64_t icg = ic / groups;
    auto w = randomValues(size_t(oc * icg * k * k), unsigned(100 + out), -0.5f,
                          0.5f);
    p.filterAddr = blob(reorderConvFilter(w.data(), oc, icg, k, k, prec,
                                          groups, chip));
    if (bias) {
      auto b = randomValues(size_t(oc), unsigned(200 + out), -0.5f, 0.5f);
      p.biasAddr = blob(encodeFloats(b.data(), b.size(), Prec::Fp32));
    }
    p.input = perOp[size_t(in)];
    p.output = perOp[size_t(out)];
    ops.push_back({p, {in}, out});
    return out;
  }

  /// A transposed convolution (ONNX ConvTranspose, groups 1) in the form a
  /// group holds it and convTranspose2d runs it (transposedAsConv).
  int deconv(int in, int64_t oc, int64_t k, int64_t stride, int64_t pad,
             int64_t outPad = 0, Activation act = {}, int64_t groups = 1) {
    auto s = shapes[size_t(in)];
    int64_t ic = s[1];
    int64_t oh = (s[2] - 1) * stride - 2 * pad + k + outPad;
    int64_t ow = (s[3] - 1) * stride - 2 * pad + k + outPad;
    int out = value({s[0], oc, oh, ow});
    ConvTransposeParams p;
    p.name = "deconv" + std::to_string(out);
    p.kernelH = p.kernelW = k;
    p.strideH = p.strideW = stride;
    p.padTop = p.padBottom = p.padLeft = p.padRight = pad;
    p.outputPadH = p.outputPadW = outPad;
    p.act = act;
    p.groups = groups;
    auto w = randomValues(size_t(ic * (oc / groups) * k * k),
                          unsigned(100 + out), -0.5f, 0.5f);
    p.filterAddr = blob(reorderConvTransposeFilter(w.data(), ic, oc / groups, k,
                                                   k, prec, groups, chip));
    auto b = randomValues(size_t(oc), unsigned(200 + out), -0.5f, 0.5f);
    p.biasAddr = blob(encodeFloats(b.data(), b.size(), Prec::Fp32));
    p.input = perOp[size_t(in)];
    p.output = perOp[size_t(out)];
    ops.push_back({transposedAsConv(p), {in}, out});
    return out;
  }

  /// A nearest upsampling by whole factors (ONNX Resize, asymmetric).
  int upsample(int in, int64_t fh, int64_t fw) {
    auto s = shapes[size_t(in)];
    int out = value({s[0], s[1], s[2] * fh, s[3] * fw});
    ResizeParams p;
    p.name = "up" + std::to_string(out);
    p.coord = ResizeCoord::Asymmetric;
    p.nearest = NearestMode::Floor;
    p.input = perOp[size_t(in)];
    p.output = perOp[size_t(out)];
    ops.push_back({p, {in}, out});
    return out;
  }

  /// A resize of H and W to (oh, ow) (ONNX Resize, explicit sizes).
  int resize(int in, int64_t oh, int64_t ow, ResizeMode mode,
             ResizeCoord coord) {
    auto s = shapes[size_t(in)];
    int out = value({s[0], s[1], oh, ow}, perOp[size_t(in)].prec);
    ResizeParams p;
    p.name = "resize" + std::to_string(out);
    p.mode = mode;
    p.coord = coord;
    p.input = perOp[size_t(in)];
    p.output = perOp[size_t(out)];
    ops.push_back({p, {in}, out});
    return out;
  }

  int pool(int in, PoolKind kind, int64_t k, int64_t stride, int64_t pad,
           bool countIncludePad = true) {
    auto s = shapes[size_t(in)];
    int64_t oh = (s[2] + 2 * pad - k) / stride + 1;
    int64_t ow = (s[3] + 2 * pad - k) / stride + 1;
    int out = value({s[0], s[1], oh, ow});
    PoolParams p;
    p.name = "pool" + std::to_string(out);
    p.kind = kind;
    p.kernelH = p.kernelW = k;
    p.strideH = p.strideW = stride;
    p.padTop = p.padBottom = p.padLeft = p.padRight = pad;
    p.countIncludePad = countIncludePad;
    p.input = perOp[size_t(in)];
    p.output = perOp[size_t(out)];
    ops.push_back({p, {in}, out});
    return out;
  }

  int add(int a, int b, Activation act = {}) {
    BinaryParams p;
    p.act = act;
    return binaryOp(p, "add", a, b);
  }

  int mul(int a, int b) {
    BinaryParams p;
    p.kind = BinaryKind::Mul;
    return binaryOp(p, "mul", a, b);
  }

  int mulInt8(int a, int b, int32_t multiplier, int rshift) {
    BinaryInt8Params p;
    p.kind = BinaryKind::Mul;
    p.multiplier[0] = multiplier;
    p.rshift[0] = rshift;
    return binaryOp(p, "muli8_", a, b);
  }

  /// a kind b as 1 / 0 of the net's precision (b the same shape as a or
  /// one value per (n, c)).
  int compare(int a, int b, CompareKind kind) {
    CompareParams p;
    p.kind = kind;
    return binaryOp(p, "cmp", a, b);
  }

  /// A parametric relu with a random slope per channel (seed `seed`; its
  /// values, rounded to the net's precision, into `slopes` when given).
  int prelu(int in, unsigned seed, std::vector<float> *slopes = nullptr) {
    int out = value(shapes[size_t(in)]);
    int64_t c = shapes[size_t(in)][1];
    PReluParams p;
    p.name = "prelu" + std::to_string(out);
    p.input = perOp[size_t(in)];
    p.output = perOp[size_t(out)];
    auto slope = randomValues(size_t(c), seed, -0.5f, 0.5f);
    if (slopes)
      for (float x : slope)
        slopes->push_back(isa::roundToPrec(x, prec));
    p.slope = ga.tensor(prec, {1, c, 1, 1});
    blobs.push_back(
        {p.slope.addr, encodeFloats(slope.data(), slope.size(), prec)});
    ops.push_back({p, {in}, out});
    return out;
  }

  /// H and W of `in` swapped (a permute [0, 1, 3, 2]).
  int transposeHW(int in) {
    auto s = shapes[size_t(in)];
    int out = value({s[0], s[1], s[3], s[2]});
    PermuteParams p;
    p.name = "transpose" + std::to_string(out);
    p.input = perOp[size_t(in)];
    p.output = perOp[size_t(out)];
    p.order = {0, 1, 3, 2};
    ops.push_back({p, {in}, out});
    return out;
  }

  /// in[:, c0 : c0 + c, h0 :: sh, w0 :: sw] with `h` rows and `w`
  /// columns.
  int slice(int in, int64_t c0, int64_t c, int64_t h0, int64_t sh, int64_t h,
            int64_t w0, int64_t sw, int64_t w) {
    auto s = shapes[size_t(in)];
    int out = value({s[0], c, h, w}, perOp[size_t(in)].prec);
    SliceParams p;
    p.name = "slice" + std::to_string(out);
    p.input = perOp[size_t(in)];
    p.output = perOp[size_t(out)];
    p.starts = {0, c0, h0, w0};
    p.steps = {1, 1, sh, sw};
    ops.push_back({p, {in}, out});
    return out;
  }

  /// The values `ins` concatenated along C.
  int concat(const std::vector<int> &ins) {
    auto s = shapes[size_t(ins[0])];
    s[1] = 0;
    for (int v : ins)
      s[1] += shapes[size_t(v)][1];
    int out = value(s);
    ConcatParams p;
    p.name = "concat" + std::to_string(out);
    for (int v : ins)
      p.inputs.push_back(perOp[size_t(v)]);
    p.output = perOp[size_t(out)];
    p.axis = 1;
    ops.push_back({p, ins, out});
    return out;
  }

  /// The element count of value v.
  int64_t count(int v) const {
    const auto &s = shapes[size_t(v)];
    return s[0] * s[1] * s[2] * s[3];
  }

  /// in kind c (c kind in with `constOnLeft`) as 1 / 0.
  int compareConst(int in, CompareKind kind, float c, bool constOnLeft) {
    int out = value(shapes[size_t(in)]);
    CompareConstParams p;
    p.name = "cmpc" + std::to_string(out);
    p.input = perOp[size_t(in)];
    p.output = perOp[size_t(out)];
    p.kind = kind;
    p.value = c;
    p.constOnLeft = constOnLeft;
    ops.push_back({p, {in}, out});
    return out;
  }

  /// cond != 0 ? x : y (each of the result's shape or one value per (n,
  /// c); the result of the largest).
  int where(int cond, int x, int y) {
    int big = cond;
    for (int v : {x, y})
      if (count(v) > count(big))
        big = v;
    int out = value(shapes[size_t(big)]);
    WhereParams p;
    p.name = "where" + std::to_string(out);
    p.cond = perOp[size_t(cond)];
    p.x = perOp[size_t(x)];
    p.y = perOp[size_t(y)];
    p.output = perOp[size_t(out)];
    ops.push_back({p, {cond, x, y}, out});
    return out;
  }

  int mulConst(int in, float c) {
    int out = value(shapes[size_t(in)]);
    BinaryConstParams p;
    perOp[size_t(out)].shape = perOp[size_t(in)].shape; // a matrix stays one
    p.name = "mulc" + std::to_string(out);
    p.input = perOp[size_t(in)];
    p.output = perOp[size_t(out)];
    p.kind = BinaryKind::Mul;
    p.value = c;
    ops.push_back({p, {in}, out});
    return out;
  }

  int unary(int in, Activation fn) {
    int out = value(shapes[size_t(in)]);
    UnaryParams p;
    perOp[size_t(out)].shape = perOp[size_t(in)].shape; // a matrix stays one
    p.name = "unary" + std::to_string(out);
    p.input = perOp[size_t(in)];
    p.output = perOp[size_t(out)];
    p.fn = fn;
    ops.push_back({p, {in}, out});
    return out;
  }

  /// An INT8 table lookup with a random 256-entry table (seed `seed`).
  int lut(int in, unsigned seed) {
    int out = value(shapes[size_t(in)]);
    LutParams p;
    p.name = "lut" + std::to_string(out);
    p.input = perOp[size_t(in)];
    p.output = perOp[size_t(out)];
    std::mt19937 rng(seed);
    std::vector<uint8_t> table(256);
    for (uint8_t &t : table)
      t = uint8_t(rng());
    p.tableAddr = blob(table);
    ops.push_back({p, {in}, out});
    return out;
  }

  int scale(int in, Activation act = {}) {
    auto s = shapes[size_t(in)];
    int out = value(s);
    ScaleParams p;
    p.name = "scale" + std::to_string(out);
    p.input = perOp[size_t(in)];
    p.output = perOp[size_t(out)];
    p.act = act;
    auto sv = randomValues(size_t(s[1]), unsigned(300 + out), -1, 1);
    auto bv = randomValues(size_t(s[1]), unsigned(400 + out), -1, 1);
    p.scale = GTensor{blob(encodeFloats(sv.data(), sv.size(), prec)), prec,
                      true, {1, s[1], 1, 1}};
    p.bias = GTensor{blob(encodeFloats(bv.data(), bv.size(), prec)), prec,
                     true, {1, s[1], 1, 1}};
    ops.push_back({p, {in}, out});
    return out;
  }

  /// A second input (loaded by the group, random like the first; of `p`
  /// when given, else of the net's precision).
  int extraInput(std::array<int64_t, 4> s,
                 std::optional<Prec> p = std::nullopt) {
    int v = value(s, p);
    extra.push_back(v);
    return v;
  }
  /// Whether value v is an input of the net (the first or an extra one).
  bool isInput(int v) const {
    return v == 0 || std::count(extra.begin(), extra.end(), v);
  }
  /// The inputs' random values into their per-op tensors (which the group
  /// loads too).
  void writeInputs(sim::MachineState &m) const {
    for (int v = 0; v < int(perOp.size()); ++v)
      if (isInput(v))
        writeTensor(m, perOp[size_t(v)],
                    randomValues(size_t(perOp[size_t(v)].numElements()),
                                 unsigned(21 + v), inLo, inHi));
  }

  /// A matrix [B, M, K] (its kernels' tensors have rank 3; a group holds
  /// it as (B, M, 1, K), matrixRowsLayout), an input (the first, or an
  /// extra one).
  int matrixInput(int64_t b, int64_t m, int64_t k) {
    int v = perOp.empty() ? value({b, m, 1, k}) : extraInput({b, m, 1, k});
    perOp[size_t(v)].shape = {b, m, k};
    return v;
  }

  /// A matmul of matrix `in` by a random [K, N] weight (and bias); stored
  /// [N, K] and read transposed with `transposed` (ONNX Gemm transB).
  int matmul(int in, int64_t n, bool bias, Activation act = {},
             bool transposed = false) {
    auto s = shapes[size_t(in)];
    int64_t k = s[3];
    int out = value({s[0], s[1], 1, n});
    perOp[size_t(out)].shape = {s[0], s[1], n};
    MatMulParams p;
    p.name = "mm" + std::to_string(out);
    p.left = perOp[size_t(in)];
    p.output = perOp[size_t(out)];
    auto w = randomValues(size_t(k * n), unsigned(500 + out), -0.3f, 0.3f);
    p.right = GTensor{blob(encodeFloats(w.data(), w.size(), prec)), prec, true,
                      {k, n}};
    if (transposed) {
      std::vector<float> t(w.size());
      for (int64_t r = 0; r < k; ++r)
        for (int64_t c = 0; c < n; ++c)
          t[size_t(c * k + r)] = w[size_t(r * n + c)];
      p.right = GTensor{blob(encodeFloats(t.data(), t.size(), prec)), prec,
                        true, {n, k}};
      p.rightTransposed = true;
    }
    if (bias) {
      auto b = randomValues(size_t(n), unsigned(600 + out), -0.5f, 0.5f);
      p.biasAddr = blob(encodeFloats(b.data(), b.size(), Prec::Fp32));
    }
    p.act = act;
    ops.push_back({p, {in}, out});
    return out;
  }

  /// Attention's 4-D matrices [B, H, M, K] (held (B H, M, 1, K) in a group
  /// with a matmul of them), an input (the first, or an extra one).
  int matrices4(int64_t b, int64_t h, int64_t m, int64_t k) {
    int v = perOp.empty() ? value({b * h, m, 1, k}) : extraInput({b * h, m, 1, k});
    perOp[size_t(v)].shape = {b, h, m, k};
    return v;
  }

  /// The product of two matrix values of the same batch dims.
  int matmul2(int a, int b) {
    auto sa = shapes[size_t(a)], sb = shapes[size_t(b)];
    int out = value({sa[0], sa[1], 1, sb[3]});
    std::vector<int64_t> os = perOp[size_t(a)].shape;
    os.back() = perOp[size_t(b)].shape.back();
    perOp[size_t(out)].shape = os;
    MatMulParams p;
    p.name = "mm" + std::to_string(out);
    p.left = perOp[size_t(a)];
    p.right = perOp[size_t(b)];
    p.output = perOp[size_t(out)];
    ops.push_back({p, {a, b}, out});
    return out;
  }

  /// A reduction of `in` over H and / or W (the reduced axes kept, of
  /// extent 1).
  int reduce(int in, ReduceKind kind, bool overH, bool overW) {
    auto s = shapes[size_t(in)];
    int out = value({s[0], s[1], overH ? 1 : s[2], overW ? 1 : s[3]});
    ReduceParams p;
    p.name = "reduce" + std::to_string(out);
    p.input = perOp[size_t(in)];
    p.output = perOp[size_t(out)];
    p.kind = kind;
    if (overH)
      p.axes.push_back(2);
    if (overW)
      p.axes.push_back(3);
    ops.push_back({p, {in}, out});
    return out;
  }

  /// The inputs' values (as the per-op kernels read them).
  std::vector<std::vector<float>> values() const {
    return perOpValues([&](sim::MachineState &m) {
      writeInputs(m);
      for (const auto &[addr, bytes] : blobs)
        writeBytes(m, addr, bytes);
    });
  }

  /// Softmax of matrix `in` along its rows.
  int softmax(int in, std::optional<int64_t> axis = std::nullopt) {
    int out = value(shapes[size_t(in)]);
    perOp[size_t(out)].shape = perOp[size_t(in)].shape;
    SoftmaxParams p;
    p.name = "softmax" + std::to_string(out);
    p.input = perOp[size_t(in)];
    p.output = perOp[size_t(out)];
    p.axis = axis.value_or(int64_t(p.input.shape.size()) - 1);
    ops.push_back({p, {in}, out});
    return out;
  }

  /// Layer normalisation of matrix `in` along its rows (with a random
  /// scale and bias when `affine`).
  int layerNorm(int in, bool affine) {
    int out = value(shapes[size_t(in)]);
    perOp[size_t(out)].shape = perOp[size_t(in)].shape;
    LayerNormParams p;
    p.name = "ln" + std::to_string(out);
    p.input = perOp[size_t(in)];
    p.output = perOp[size_t(out)];
    p.axis = int64_t(p.input.shape.size()) - 1;
    p.epsilon = 1e-5f;
    if (affine) {
      size_t d = size_t(shapes[size_t(in)][3]);
      auto g = randomValues(d, unsigned(700 + out), 0.5f, 1.5f);
      auto b = randomValues(d, unsigned(800 + out), -0.5f, 0.5f);
      p.scaleAddr = blob(encodeFloats(g.data(), d, Prec::Fp32));
      p.biasAddr = blob(encodeFloats(b.data(), d, Prec::Fp32));
    }
    ops.push_back({p, {in}, out});
    return out;
  }

  /// Bytes at a new global address (weights a test writes itself).
  uint64_t blobOf(std::vector<uint8_t> bytes) { return blob(std::move(bytes)); }
  /// Value v's signedness (its kernels' tensors and the group's).
  void setSigned(int v, bool isSigned) {
    perOp[size_t(v)].isSigned = isSigned;
    grouped[size_t(v)].isSigned = isSigned;
    for (GroupOp &op : ops)
      std::visit(
          [&](auto &x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, MatMulParams>) {
              if (x.output.addr == perOp[size_t(v)].addr)
                x.output.isSigned = isSigned;
              if (x.left.addr == perOp[size_t(v)].addr)
                x.left.isSigned = isSigned;
            }
          },
          op.params);
  }

  /// The group spec with the last value and `alsoStored` stored.
  GroupSpec spec(const std::vector<int> &alsoStored = {}) const {
    GroupSpec g;
    g.name = "test";
    int last = ops.back().output;
    for (size_t v = 0; v < shapes.size(); ++v) {
      GroupValue gv;
      gv.name = "v" + std::to_string(v);
      gv.prec = perOp[v].prec;
      gv.isSigned = perOp[v].isSigned;
      gv.shape = shapes[v];
      gv.loaded = isInput(int(v));
      gv.stored = int(v) == last || std::count(alsoStored.begin(),
                                               alsoStored.end(), int(v));
      gv.addr = isInput(int(v)) ? perOp[v].addr : grouped[v].addr;
      g.values.push_back(gv);
    }
    g.ops = ops;
    return g;
  }

  /// The group of ops [begin, end): the values they read from before
  /// `begin` are loaded, the values read after `end` (and the last) stored.
  GroupSpec specOf(size_t begin, size_t end) const {
    GroupSpec g;
    g.name = "ops" + std::to_string(begin) + "-" + std::to_string(end);
    std::map<int, int> ids;
    auto id = [&](int v, bool loaded) {
      if (auto it = ids.find(v); it != ids.end())
        return it->second;
      GroupValue gv;
      gv.name = "v" + std::to_string(v);
      gv.prec = perOp[size_t(v)].prec;
      gv.isSigned = perOp[size_t(v)].isSigned;
      gv.shape = shapes[size_t(v)];
      gv.loaded = loaded;
      for (size_t o = end; o < ops.size() && !loaded; ++o)
        gv.stored |= std::count(ops[o].inputs.begin(), ops[o].inputs.end(), v) > 0;
      gv.stored |= !loaded && v == ops[end - 1].output;
      gv.addr = isInput(v) ? perOp[size_t(v)].addr : grouped[size_t(v)].addr;
      g.values.push_back(gv);
      return ids[v] = int(g.values.size() - 1);
    };
    for (size_t o = begin; o < end; ++o) {
      GroupOp op = ops[o];
      for (int &in : op.inputs)
        if (in >= 0)
          in = id(in, std::none_of(ops.begin() + begin, ops.begin() + o,
                                   [&](const GroupOp &p) {
                                     return p.output == in;
                                   }));
      op.output = id(op.output, false);
      g.ops.push_back(op);
    }
    return g;
  }

  /// checkEmit of group `g` emitted with `plan`: the values `compare` must
  /// equal the ops' run one by one bit for bit.
  void checkPlan(const GroupSpec &g, const GroupPlan &plan,
                 const std::vector<int> &compare, const std::string &label,
                 const isa::ChipParams *machine = nullptr) {
    checkEmit([&](CmdEmitter &em) { emitGroup(em, g, plan); }, compare, label,
              machine);
  }

  /// Runs `emit` (on `machine` when given, else the net's chip) and
  /// compares the values `compare` with the per-op kernels' (on the net's
  /// chip) bit for bit.
  void checkEmit(const std::function<void(CmdEmitter &)> &emit,
                 const std::vector<int> &compare, const std::string &label,
                 const isa::ChipParams *machine = nullptr) {
    auto setup = [&](sim::MachineState &m) {
      writeInputs(m);
      for (const auto &[addr, bytes] : blobs)
        writeBytes(m, addr, bytes);
    };
    std::vector<std::vector<float>> want = perOpValues(setup);
    KernelRun run;
    run.chip = machine ? *machine : chip;
    run.setup = setup;
    run.emit = emit;
    run.check = [&](const sim::MachineState &m, const std::string &what) {
      for (int v : compare)
        expectClose(readTensor(m, grouped[size_t(v)]), want[size_t(v)], 0, 0,
                    label + " value " + std::to_string(v) + " " + what);
    };
    run.run();
  }

  /// Runs the ops one by one and as one group with `n` x `h` slices; every
  /// stored value must equal the per-op kernels' bit for bit.
  void check(int64_t n, int64_t h, const std::vector<int> &alsoStored = {}) {
    auto setup = [&](sim::MachineState &m) {
      writeInputs(m);
      for (const auto &[addr, bytes] : blobs)
        writeBytes(m, addr, bytes);
    };
    std::vector<std::vector<float>> want = perOpValues(setup);

    GroupSpec g = spec(alsoStored);
    GroupPlan plan;
    plan.nSlices = n;
    plan.hSlices = h;
    KernelRun run;
    run.chip = chip;
    run.setup = setup;
    run.emit = [&](CmdEmitter &em) { emitGroup(em, g, plan); };
    run.check = [&](const sim::MachineState &m, const std::string &what) {
      for (size_t v = 1; v < shapes.size(); ++v)
        if (g.values[v].stored)
          expectClose(readTensor(m, grouped[v]), want[v], 0, 0,
                      "group " + std::to_string(n) + "x" + std::to_string(h) +
                          " value " + std::to_string(v) + " " + what);
    };
    run.run();
  }

  /// Plans the whole net as one group with `options` (planGroup) and, when
  /// a slicing fits, runs it: every stored value must equal the per-op
  /// kernels' bit for bit. Returns the plan, or nullopt when none fits.
  std::optional<GroupPlan> checkPlanned(const GroupOptions &options,
                                        const std::string &label) {
    GroupSpec g = spec();
    GroupPlan plan;
    std::string why;
    if (!planGroup(g, chip, options, plan, why))
      return std::nullopt;
    std::vector<int> stored;
    for (size_t v = 0; v < g.values.size(); ++v)
      if (g.values[v].stored)
        stored.push_back(int(v));
    checkPlan(g, plan, stored,
              label + " (" + std::to_string(plan.nSlices) + " x " +
                  std::to_string(plan.cSlices) + " x " +
                  std::to_string(plan.hSlices) + " slices)");
    return plan;
  }

  /// The shape of value v.
  std::array<int64_t, 4> shapeOf(int v) const { return shapes[size_t(v)]; }

  /// Every value computed by the per-op kernels, one op after another
  /// (the same under every engine schedule).
  std::vector<std::vector<float>>
  perOpValues(const std::function<void(sim::MachineState &)> &setup) const {
    std::vector<std::vector<float>> want(shapes.size());
    KernelRun ref;
    ref.chip = chip;
    ref.setup = setup;
    ref.emit = [&](CmdEmitter &em) {
      for (const GroupOp &op : ops)
        std::visit(
            [&](const auto &x) {
              using T = std::decay_t<decltype(x)>;
              if constexpr (std::is_same_v<T, ConvParams>)
                conv2d(em, x);
              else if constexpr (std::is_same_v<T, PoolParams>)
                pool2d(em, x);
              else if constexpr (std::is_same_v<T, BinaryParams>)
                binary(em, x);
              else if constexpr (std::is_same_v<T, BinaryConstParams>)
                binaryConst(em, x);
              else if constexpr (std::is_same_v<T, UnaryParams>)
                tpu::backend::unary(em, x);
              else if constexpr (std::is_same_v<T, BinaryInt8Params>)
                binaryInt8(em, x);
              else if constexpr (std::is_same_v<T, LutParams>)
                tpu::backend::lut(em, x);
              else if constexpr (std::is_same_v<T, ResizeParams>)
                tpu::backend::resize(em, x);
              else if constexpr (std::is_same_v<T, CastParams>)
                tpu::backend::cast(em, x);
              else if constexpr (std::is_same_v<T, MatMulParams>)
                tpu::backend::matmul(em, x);
              else if constexpr (std::is_same_v<T, SoftmaxParams>)
                tpu::backend::softmax(em, x);
              else if constexpr (std::is_same_v<T, LayerNormParams>)
                tpu::backend::layerNorm(em, x);
              else if constexpr (std::is_same_v<T, ReduceParams>)
                tpu::backend::reduce(em, x);
              else if constexpr (std::is_same_v<T, CompareParams>)
                tpu::backend::compare(em, x);
              else if constexpr (std::is_same_v<T, CompareConstParams>)
                tpu::backend::compareConst(em, x);
              else if constexpr (std::is_same_v<T, WhereParams>)
                tpu::backend::where(em, x);
              else if constexpr (std::is_same_v<T, PReluParams>)
                tpu::backend::prelu(em, x);
              else if constexpr (std::is_same_v<T, PermuteParams>)
                tpu::backend::permute(em, x);
              else if constexpr (std::is_same_v<T, ConcatParams>)
                tpu::backend::concat(em, x);
              else if constexpr (std::is_same_v<T, SliceParams>)
                tpu::backend::slice(em, x);
              else
                tpu::backend::scale(em, x);
            },
            op.params);
    };
    ref.check = [&](const sim::MachineState &m, const std::string &what) {
      for (size_t v = 0; v < shapes.size(); ++v) {
        std::vector<float> got = readTensor(m, perOp[v]);
        if (want[v].empty())
          want[v] = got;
        else
          expectClose(got, want[v], 0, 0, "per-op " + what);
      }
    };
    ref.run();
    return want;
  }

  std::vector<GroupOp> ops;

private:
  std::vector<int> extra;
  GlobalAlloc ga;
  std::vector<std::array<int64_t, 4>> shapes;
  std::vector<GTensor> perOp, grouped;
  std::vector<std::pair<uint64_t, std::vector<uint8_t>>> blobs;

  int value(std::array<int64_t, 4> s, std::optional<Prec> p = std::nullopt) {
    shapes.push_back(s);
    perOp.push_back(ga.tensor(p.value_or(prec), {s[0], s[1], s[2], s[3]}));
    grouped.push_back(ga.tensor(p.value_or(prec), {s[0], s[1], s[2], s[3]}));
    return int(shapes.size() - 1);
  }
  /// Appends the binary op `p` (its kind and constants set) of values a
  /// and b; the result has a's shape.
  template <typename P> int binaryOp(P p, const char *name, int a, int b) {
    int out = value(shapes[size_t(a)]);
    perOp[size_t(out)].shape = perOp[size_t(a)].shape; // a matrix stays one
    p.name = name + std::to_string(out);
    p.lhs = perOp[size_t(a)];
    p.rhs = perOp[size_t(b)];
    p.output = perOp[size_t(out)];
    ops.push_back({p, {a, b}, out});
    return out;
  }
  uint64_t blob(std::vector<uint8_t> bytes) {
    uint64_t a = ga.alloc(bytes.size());
    blobs.push_back({a, std::move(bytes)});
    return a;
  }
};

const Activation kRelu{UnaryKind::Relu};

/// A residual block: conv 3x3 + relu, conv 3x3, add of the block input,
/// relu. Slices of one row (h = 8) and the edges' pads included.
TEST(LayerGroup, ResidualBlockEverySlicing) {
  for (Prec p : {Prec::Fp32, Prec::Fp16, Prec::Bf16}) {
    Net net(p);
    int x = net.input(1, 16, 8, 10);
    int c1 = net.conv(x, 16, 3, 1, 1, 1, 1, true, kRelu);
    int c2 = net.conv(c1, 16, 3, 1, 1);
    net.add(c2, x, kRelu);
    for (int64_t h : {1, 2, 3, 8})
      net.check(1, h);
  }
}

/// Stride 2 and dilation inside a group, a value read by two windows of
/// different spans (the downsample branch and the main branch of a
/// bottleneck), stored intermediate values, batch slices.
TEST(LayerGroup, StridedDilatedAndTwoReaders) {
  Net net(Prec::Fp16);
  int x = net.input(2, 32, 12, 12);
  int a = net.conv(x, 32, 1, 1, 0, 1, 1, true, kRelu);
  int b = net.conv(a, 32, 3, 2, 1);          // stride 2: 6 x 6
  int d = net.conv(x, 32, 1, 2, 0, 1, 1, false); // downsample: 6 x 6
  int s = net.add(b, d, kRelu);
  int e = net.conv(s, 32, 3, 1, 2, 2);       // dilated 2, pad 2
  (void)e;
  for (auto [n, h] : {std::pair<int64_t, int64_t>{1, 1}, {2, 1}, {2, 2},
                      {2, 3}, {2, 6}})
    net.check(n, h, {a, s});
}

/// Transposed convolutions inside a group, as in a DBNet head: a 3x3 conv,
/// two 2x2 stride-2 deconvolutions (each output row pair reads one input
/// row; they run as four sub-pixel 1 x 1 convs and strided copies,
/// subPixelDeconv; a slice of an odd number of rows starts some phases one
/// row later) and a sigmoid; and
/// a 3x3 stride-2 one with pad 1 and an output padding (a slice's first
/// output row may fall between input rows, and the last reads the inserted
/// zeros and the bottom pad only); a 3 x 3 stride-3 one from 40 to 80
/// channels (two channel blocks, two lane slots; also in channel slices).
/// Every value equals the ops' alone (groups of one in their own
/// slicing); the phases' taps are held to a scatter reference by
/// ConvTranspose2d.KernelEqualsStride (ConvTest.cpp).
TEST(LayerGroup, TransposedConvolutions) {
  for (Prec p : {Prec::Fp32, Prec::Fp16, Prec::Bf16}) {
    Net net(p);
    int x = net.input(1, 24, 5, 6);
    int c = net.conv(x, 16, 3, 1, 1, 1, 1, true, kRelu);
    int d1 = net.deconv(c, 8, 2, 2, 0, 0, kRelu); // 10 x 12
    int d2 = net.deconv(d1, 4, 2, 2, 0);          // 20 x 24
    net.unary(d2, {UnaryKind::Sigmoid});
    for (int64_t h : {1, 2, 3, 7, 20})
      net.check(1, h, {d1});
  }
  Net net(Prec::Fp16);
  int x = net.input(2, 8, 6, 6);
  int d = net.deconv(x, 8, 3, 2, 1, 1, kRelu); // 12 x 12
  net.conv(d, 8, 3, 1, 1);
  for (auto [n, h] :
       {std::pair<int64_t, int64_t>{1, 1}, {2, 1}, {1, 5}, {2, 12}})
    net.check(n, h, {d});
  // A grouped one (96 -> 96 channels in 4 groups of 24: group 2 starts at
  // lane 48 and wraps into the second slot), one CONV per group as for
  // the grouped convolutions.
  {
    Net grouped(Prec::Fp16);
    int in = grouped.input(1, 96, 5, 4);
    int up = grouped.deconv(in, 96, 3, 2, 1, 1, kRelu, 4); // 10 x 8
    grouped.conv(up, 16, 1, 1, 0);
    for (int64_t h : {1, 3, 10})
      grouped.check(1, h, {up});
  }
  // Sub-pixel phases over more than one block of input channels (40 > 32)
  // and one lane slot of output channels (80 > 64), k = s = 3, in every
  // float precision, whole and in channel slices.
  for (Prec p : {Prec::Fp32, Prec::Fp16, Prec::Bf16}) {
    Net wide(p);
    int in = wide.input(1, 40, 4, 5);
    int up = wide.deconv(in, 80, 3, 3, 0, 0, kRelu); // 12 x 15
    for (int64_t h : {1, 4, 7})
      wide.check(1, h);
    GroupSpec g = wide.spec();
    GroupPlan cut;
    cut.cSlices = 2;
    wide.checkPlan(g, cut, {up},
                   std::string(isa::precName(p)) + " 2 channel slices");
  }
}

/// Grouped convolutions inside a group (ResNeXt's 3x3 of 32 groups, a
/// ShuffleNet unit's): one CONV per group on channel ranges that start in
/// the lane of their first channel. 48 -> 96 channels in 4 groups: group 2
/// writes channels 48..71 (lanes 48..63, then 0..7 of the second slot) and
/// reads 24..35; stride 2 and a relu before, a 1 x 1 conv after; 2 x 96
/// channels in 32 groups of 3 -> 3 after it, in batch slices (one CONV per
/// group and batch) and one-row slices. Every value equals the op's alone
/// (a group of one in its own slicing); a group reading the wrong input
/// channels or weights is caught against the interpreter by
/// TpuChipOrder.Deconv2D and against direct loops by ConvTest.
TEST(LayerGroup, GroupedConvolutions) {
  for (Prec p : {Prec::Fp32, Prec::Fp16, Prec::Bf16}) {
    Net net(p);
    int x = net.input(1, 48, 9, 10);
    int a = net.conv(x, 48, 1, 1, 0, 1, 1, true, kRelu);
    int g = net.conv(a, 96, 3, 2, 1, 1, 4, true, kRelu); // 5 x 5
    net.conv(g, 32, 1, 1, 0);
    for (int64_t h : {1, 2, 5})
      net.check(1, h, {g});
  }
  Net net(Prec::Fp16);
  int x = net.input(2, 96, 6, 7);
  int g = net.conv(x, 96, 3, 1, 1, 1, 32, false);
  net.unary(g, {UnaryKind::Sigmoid});
  for (auto [n, h] :
       {std::pair<int64_t, int64_t>{1, 1}, {2, 1}, {1, 3}, {2, 6}})
    net.check(n, h, {g});
  // Channel slices (two of 64 channels, which every other op allows)
  // would cut through the groups: refused.
  GroupSpec spec = net.spec();
  GroupPlan cut;
  cut.cSlices = 2;
  CmdEmitter em(net.chip);
  try {
    emitGroup(em, spec, cut);
    ADD_FAILURE() << "channel slices of a grouped convolution were emitted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("a grouped convolution"),
              std::string::npos)
        << e.what();
  }
}

/// Resizes other than nearest by whole factors inside a group, as in a
/// segmentation head (LR-ASPP: a bilinear upsampling by 8 after a 1x1
/// conv, then a sigmoid): the kernel's column and row passes on each slice
/// (resizeTile), the input rows of both taps of the slice's output rows
/// (resizeRows). Bilinear by 8 (half pixel), by 7 / 3 (align corners, 3 x
/// 4 -> 7 x 9) and down (pytorch half pixel, 12 x 10 -> 5 x 4), a nearest
/// 5 -> 7, and an INT8 nearest one (its codes copied); one-row slices,
/// batch slices. Every value equals the per-op kernel's bit for bit.
TEST(LayerGroup, LinearAndFractionalResizes) {
  for (Prec p : {Prec::Fp32, Prec::Fp16, Prec::Bf16}) {
    Net net(p);
    int x = net.input(1, 21, 4, 5);
    int c = net.conv(x, 21, 1, 1, 0);
    int up = net.resize(c, 32, 40, ResizeMode::Linear, ResizeCoord::HalfPixel);
    net.unary(up, {UnaryKind::Sigmoid});
    for (int64_t h : {1, 3, 32})
      net.check(1, h, {up});
  }
  Net net(Prec::Fp16);
  int x = net.input(2, 70, 3, 4);
  int a = net.resize(x, 7, 9, ResizeMode::Linear, ResizeCoord::AlignCorners);
  int b = net.unary(a, {UnaryKind::Relu});
  int d = net.resize(b, 5, 7, ResizeMode::Nearest, ResizeCoord::HalfPixel);
  for (auto [n, h] :
       {std::pair<int64_t, int64_t>{1, 1}, {2, 1}, {2, 2}, {1, 5}})
    net.check(n, h, {a, d});
  Net down(Prec::Fp32);
  int y = down.input(1, 8, 12, 10);
  down.resize(y, 5, 4, ResizeMode::Linear, ResizeCoord::PytorchHalfPixel);
  for (int64_t h : {1, 2, 5})
    down.check(1, h);
  Net codes(Prec::Int8);
  int q = codes.input(1, 16, 5, 6);
  codes.resize(q, 7, 9, ResizeMode::Nearest, ResizeCoord::Asymmetric);
  for (int64_t h : {1, 7})
    codes.check(1, h);
}

/// Average poolings that exclude the pads (ONNX count_include_pad = 0,
/// TFLite SAME): each window's sum divided by its count of real inputs,
/// counted by the same window over a tile of ones, as the pool kernel
/// does: a 3x3 stride-1 pad-1 one between convs (its edge windows hold 4
/// and 6 inputs), a 3x3 stride-2 pad-1 one over 70 channels (two lane
/// slots, the counts read through a zero channel stride), in row and batch
/// slices. Every value equals the per-op kernel's bit for bit.
TEST(LayerGroup, AveragePoolingExcludingPads) {
  for (Prec p : {Prec::Fp32, Prec::Fp16, Prec::Bf16}) {
    Net net(p);
    int x = net.input(1, 16, 9, 11);
    int a = net.conv(x, 16, 1, 1, 0);
    int b = net.pool(a, PoolKind::Avg, 3, 1, 1, false);
    net.conv(b, 8, 3, 1, 1);
    for (int64_t h : {1, 2, 9})
      net.check(1, h, {b});
  }
  Net net(Prec::Fp16);
  int x = net.input(2, 70, 10, 7);
  int b = net.pool(x, PoolKind::Avg, 3, 2, 1, false); // 5 x 4
  net.unary(b, {UnaryKind::Sigmoid});
  for (auto [n, h] :
       {std::pair<int64_t, int64_t>{1, 1}, {2, 1}, {2, 5}, {1, 2}})
    net.check(n, h, {b});
}

/// Slices inside a group: a YOLOv5 "focus" (the four pixel phases of a
/// 2 x 2 grid, rows and columns with step 2, concatenated along C, then a
/// conv) and a ShuffleNet channel split (channels 0..47 and 48..95 of 96:
/// the second starts in lane 48, moved by the GDMA; channels 64..95 start
/// at a lane slot boundary, copied by the TIU), in row, batch and column
/// slices. Every value equals the per-op kernels' (DDR copies) bit for
/// bit; the test fails with the steps or the channel start dropped.
TEST(LayerGroup, SlicesOfRowsColumnsAndChannels) {
  for (Prec p : {Prec::Fp32, Prec::Fp16}) {
    Net net(p);
    int x = net.input(1, 3, 12, 10);
    std::vector<int> phases;
    for (int64_t a : {0, 1})
      for (int64_t b : {0, 1})
        phases.push_back(net.slice(x, 0, 3, a, 2, 6, b, 2, 5));
    int cat = net.concat(phases);
    net.conv(cat, 16, 3, 1, 1);
    for (int64_t h : {1, 2, 6})
      net.check(1, h, {cat});
  }
  Net net(Prec::Bf16);
  int x = net.input(2, 96, 5, 6);
  int a = net.slice(x, 0, 48, 0, 1, 5, 0, 1, 6);
  int b = net.slice(x, 48, 48, 0, 1, 5, 0, 1, 6);
  int c = net.slice(x, 64, 32, 1, 1, 3, 2, 1, 4);
  int ab = net.add(a, b);
  net.unary(c, {UnaryKind::Sigmoid});
  for (auto [n, h] : {std::pair<int64_t, int64_t>{1, 1}, {2, 1}, {2, 3}})
    net.check(n, h, {ab, b});
  GroupSpec g = net.spec({ab, b});
  GroupPlan cut;
  cut.wSlices = 2;
  net.checkPlan(g, cut, {ab, b, int(g.values.size()) - 1}, "2 column slices");
}

/// Concats along C inside a group, as in a DBNet neck or a DenseNet
/// block: four branches of 24 channels (a conv, a loaded input, a pooling
/// and an upsampling) into 96, whose channels 24, 48 and 72 start in lanes
/// 24, 48 and 8 of the second slot, then a conv of all 96; and 40 + 40
/// channels read again by a conv of the concat and a residual add of one
/// branch. Each input's rows go to their channels by a GDMA copy, local to
/// local. Every value equals the per-op kernels' (DDR copies); the test
/// fails when an input lands in the wrong channels.
TEST(LayerGroup, ConcatAlongChannels) {
  for (Prec p : {Prec::Fp32, Prec::Fp16}) {
    Net net(p);
    int x = net.input(1, 24, 8, 10);
    int a = net.conv(x, 24, 3, 1, 1, 1, 1, true, kRelu);
    int b = net.extraInput({1, 24, 8, 10});
    int c = net.pool(x, PoolKind::Max, 3, 1, 1);
    int small = net.extraInput({1, 24, 4, 5});
    int d = net.upsample(small, 2, 2);
    int cat = net.concat({a, b, c, d});
    net.conv(cat, 16, 3, 1, 1);
    for (int64_t h : {1, 3, 8})
      net.check(1, h, {cat});
  }
  Net net(Prec::Bf16);
  int x = net.input(2, 40, 6, 7);
  int a = net.conv(x, 40, 1, 1, 0);
  int cat = net.concat({x, a});
  int y = net.conv(cat, 40, 3, 1, 1);
  net.add(y, a);
  for (auto [n, h] :
       {std::pair<int64_t, int64_t>{1, 1}, {2, 1}, {1, 6}, {2, 6}})
    net.check(n, h);
  // Column slices too (the copies move sub-rows).
  GroupSpec g = net.spec();
  GroupPlan cut;
  cut.hSlices = 2;
  cut.wSlices = 3;
  net.checkPlan(g, cut, {int(g.values.size()) - 1}, "3 column slices");
}

/// Nearest upsampling inside a group, as in an FPN neck: a feature map
/// upsampled x2 and added to the finer one, then a 3x3 conv; a 4 x 2
/// upsampling of int8 codes (copies of the codes) before a max pooling and
/// a table lookup, in slices whose first output row falls inside an input
/// row's repeats.
TEST(LayerGroup, NearestUpsampling) {
  for (Prec p : {Prec::Fp32, Prec::Fp16, Prec::Bf16}) {
    Net net(p);
    int x = net.input(1, 70, 10, 12);
    int coarse = net.conv(x, 70, 3, 2, 1, 1, 1, true, kRelu); // 5 x 6
    int up = net.upsample(coarse, 2, 2);
    int sum = net.add(up, x);
    net.conv(sum, 16, 3, 1, 1);
    for (int64_t h : {1, 2, 3, 10})
      net.check(1, h, {up});
  }
  Net net(Prec::Int8);
  net.inLo = -128;
  net.inHi = 127;
  int x = net.input(2, 8, 3, 5);
  int up = net.upsample(x, 4, 2); // 12 x 10
  int m = net.pool(up, PoolKind::Max, 3, 1, 1);
  net.lut(m, 5);
  for (auto [n, h] :
       {std::pair<int64_t, int64_t>{1, 1}, {2, 1}, {1, 5}, {2, 12}})
    net.check(n, h);
}

/// Casts at a group's edges, as a model's input and output casts: f32 in,
/// cast to the convs' precision, cast back to f32 out; the INT8 input
/// quantisation (rq0, asymmetric) and dequantisation (dq0) around an int8
/// max pooling; a float -> int32 -> float cast (ONNX Cast twice). Every
/// slicing, batch 2; the values equal the per-op cast kernels bit for bit.
TEST(LayerGroup, CastsAtTheEdges) {
  for (Prec p : {Prec::Fp16, Prec::Bf16}) {
    Net net(p);
    int x = net.input(2, 3, 12, 10, Prec::Fp32);
    int h = net.cast(x, p);
    int c1 = net.conv(h, 16, 3, 2, 1, 1, 1, true, kRelu);
    int c2 = net.conv(c1, 8, 3, 1, 1);
    net.cast(c2, Prec::Fp32);
    for (auto [n, hs] :
         {std::pair<int64_t, int64_t>{1, 1}, {2, 1}, {2, 3}, {2, 6}})
      net.check(n, hs);
  }
  {
    Net net(Prec::Int8);
    int x = net.input(2, 8, 12, 12, Prec::Fp32);
    int q = net.cast(x, Prec::Int8, CastParams::Quant{0.015, 3});
    int m = net.pool(q, PoolKind::Max, 3, 2, 1);
    net.cast(m, Prec::Fp32, CastParams::Quant{0.015, 3});
    for (auto [n, hs] : {std::pair<int64_t, int64_t>{1, 1}, {2, 2}, {2, 6}})
      net.check(n, hs);
  }
  {
    Net net(Prec::Fp32);
    net.inLo = -40;
    net.inHi = 40;
    int x = net.input(1, 16, 8, 8);
    int t = net.cast(x, Prec::Fp32, std::nullopt, IntType{Prec::Int32, true});
    net.add(t, x);
    for (int64_t hs : {1, 3, 8})
      net.check(1, hs);
  }
}

/// Pooling and depthwise convolution (sPorD, whose input must start at
/// the first row its producer holds), scale and a transcendental.
TEST(LayerGroup, PoolDepthwiseScaleSigmoid) {
  Net net(Prec::Fp32);
  int x = net.input(1, 8, 16, 16);
  int c = net.conv(x, 8, 3, 2, 1, 1, 1, true, kRelu); // 8 x 8
  int m = net.pool(c, PoolKind::Max, 3, 2, 1);        // 4 x 4
  int dw = net.conv(m, 8, 3, 1, 1, 1, 8);             // depthwise
  int sc = net.scale(dw, kRelu);
  int sg = net.unary(sc, {UnaryKind::Sigmoid});
  net.mulConst(sg, 0.5f);
  for (int64_t h : {1, 2, 4})
    net.check(1, h);
}

/// Squeeze-excite: a global average pool (the whole height, whatever the
/// slicing), a 1x1 conv and a sigmoid give one value per (n, c), which a Mul
/// reads at every (h, w) of the block's input (zero h / w strides).
TEST(LayerGroup, SqueezeExcitePerChannelActivation) {
  for (Prec p : {Prec::Fp32, Prec::Fp16}) {
    Net net(p);
    int x = net.input(2, 16, 8, 8);
    int g = net.pool(x, PoolKind::Avg, 8, 1, 0); // (2, 16, 1, 1)
    int c = net.conv(g, 16, 1, 1, 0);
    int a = net.unary(c, {UnaryKind::Sigmoid});
    net.mul(x, a);
    for (auto [n, h] : {std::pair<int64_t, int64_t>{1, 1}, {2, 1}, {1, 2},
                        {2, 4}})
      net.check(n, h);
  }
}

/// Reductions over H and W, H alone and W alone, in a group: max, min,
/// sum and mean, each (n, c) alone. A whole-plane reduction read back at
/// every (h, w) (as openWakeWord's mel spectrogram clips to its maximum)
/// is recomputed by every H slice. Every value equals the per-op kernels'
/// bit for bit, and the reductions equal ones computed here from the
/// input (fp32 sums in index order from +0, as the interpreter).
TEST(LayerGroup, ReductionsOverHeightAndWidth) {
  for (Prec p : {Prec::Fp32, Prec::Fp16})
    for (ReduceKind k :
         {ReduceKind::Max, ReduceKind::Min, ReduceKind::Sum, ReduceKind::Mean})
      for (auto [overH, overW] :
           {std::pair{true, true}, {true, false}, {false, true}}) {
        SCOPED_TRACE(std::to_string(int(p)) + " kind " +
                     std::to_string(int(k)) + (overH ? " H" : "") +
                     (overW ? " W" : ""));
        Net net(p);
        int x = net.input(2, 70, 6, 5);
        int r = net.reduce(x, k, overH, overW);
        if (overH && overW)
          net.mul(x, r);
        std::vector<std::vector<float>> v = net.values();
        // The reduction by hand.
        auto s = net.shapeOf(x), rs = net.shapeOf(r);
        for (int64_t n = 0; n < s[0]; ++n)
          for (int64_t c = 0; c < s[1]; ++c)
            for (int64_t oh = 0; oh < rs[2]; ++oh)
              for (int64_t ow = 0; ow < rs[3]; ++ow) {
                float acc = k == ReduceKind::Max   ? -INFINITY
                            : k == ReduceKind::Min ? INFINITY
                                                   : 0.0f;
                int64_t count = 0;
                for (int64_t h = 0; h < s[2]; ++h)
                  for (int64_t w = 0; w < s[3]; ++w) {
                    if ((!overH && h != oh) || (!overW && w != ow))
                      continue;
                    float e = v[size_t(x)]
                               [size_t(((n * s[1] + c) * s[2] + h) * s[3] + w)];
                    acc = k == ReduceKind::Max   ? std::max(acc, e)
                          : k == ReduceKind::Min ? std::min(acc, e)
                                                 : acc + e;
                    ++count;
                  }
                if (k == ReduceKind::Mean)
                  acc = acc * (1.0f / float(count));
                float want = isa::roundToPrec(acc, p);
                ASSERT_EQ(v[size_t(r)][size_t(
                              ((n * rs[1] + c) * rs[2] + oh) * rs[3] + ow)],
                          want);
              }
        for (auto [n, h] :
             {std::pair<int64_t, int64_t>{1, 1}, {2, 1}, {1, 2}, {2, 3}})
          if (h <= net.shapeOf(net.ops.back().output)[2])
            net.check(n, h);
      }
}

/// Reduced-axis slices. A reduction whose reduced rows (or, over W alone,
/// columns) fit no slicing of 8 KiB per lane is cut along that axis, its
/// slices accumulating (GroupPlan::kSlices); the values are checked in
/// PoolNormTest (Reduce.ReducedAxisSlicesEveryKind). Here: the plans.
TEST(LayerGroup, ReducedAxisSlicesPlans) {
  struct Case {
    bool overH, overW;
    int64_t h, w;
  };
  for (Case c : {Case{true, false, 3000, 4}, Case{true, true, 1000, 6},
                 Case{false, true, 3, 3000}}) {
    SCOPED_TRACE(std::to_string(c.h) + " x " + std::to_string(c.w));
    Net net(Prec::Fp32);
    net.chip.lmemBytes = 8 * 1024;
    int x = net.input(2, 70, c.h, c.w);
    net.reduce(x, ReduceKind::Sum, c.overH, c.overW);
    GroupPlan plan;
    std::string why;
    ASSERT_TRUE(planGroup(net.spec(), net.chip, {}, plan, why)) << why;
    EXPECT_GT(plan.kSlices, 1);
    EXPECT_EQ(plan.hSlices, 1);
    EXPECT_LE(plan.lmemBytes, net.chip.lmemBytes);
    EXPECT_EQ(plan.timesteps,
              plan.nSlices * plan.cSlices * plan.wSlices * plan.kSlices + 2);
    // With a tenth of the extent in 256 KiB the whole extent fits: no
    // reduced-axis slices.
    Net small(Prec::Fp32);
    int y =
        small.input(2, 70, c.overH ? c.h / 10 : c.h, c.overH ? c.w : c.w / 10);
    small.reduce(y, ReduceKind::Sum, c.overH, c.overW);
    ASSERT_TRUE(planGroup(small.spec(), small.chip, {}, plan, why)) << why;
    EXPECT_EQ(plan.kSlices, 1);
  }
  // Only a group of one accumulates: with an op after the reduction the
  // group has no slicing (the pass then cuts it before the next op).
  Net net(Prec::Fp32);
  net.chip.lmemBytes = 8 * 1024;
  int x = net.input(1, 70, 3000, 4);
  int r = net.reduce(x, ReduceKind::Max, true, false);
  net.unary(r, {UnaryKind::Relu});
  GroupPlan plan;
  std::string why;
  EXPECT_FALSE(planGroup(net.spec(), net.chip, {}, plan, why));
}

/// Reduced-axis slices of a matmul by a weight: in 4 KiB a lane, K = 3000
/// rows of the weight fit no group of one whole; the plan cuts K, each
/// slice loading its rows of the weight (not resident), and counts each
/// product once (MatMul.SplitsKWithSmallLocalMemoryF16 and TpuChipOrder.
/// Int8MatMulInSlicesOfKAndColumns check the values).
TEST(LayerGroup, MatMulReducedAxisSlicesPlans) {
  for (bool transposed : {false, true}) {
    Net net(Prec::Fp16);
    net.chip.lmemBytes = 4 * 1024;
    int x = net.matrixInput(1, 3, 3000);
    net.matmul(x, 20, true, {}, transposed);
    GroupSpec g = net.spec();
    matrixRowsLayout(g);
    GroupPlan plan;
    std::string why;
    ASSERT_TRUE(planGroup(g, net.chip, {}, plan, why)) << why;
    EXPECT_GT(plan.kSlices, 1);
    EXPECT_FALSE(plan.weightResident);
    EXPECT_EQ(plan.macs, uint64_t(3) * 3000 * 20);
    // The weight is read once over all the slices, the rows once.
    EXPECT_EQ(plan.ddrReadBytes,
              uint64_t(3000 * 20 + 3 * 3000) * 2 + 20 * 4 * plan.kSlices);
  }
}

/// A matmul whose weight fits local memory whole still cuts K when the
/// cost model finds that faster: the slices' weight rows load while the
/// previous slice multiplies, where a whole weight loads before any
/// multiply. A 32768 x 256 F16 weight in 512 KiB lanes (it fits whole):
/// the group of one takes reduced-axis slices and costs at most 90 % of
/// the same matmul followed by a ReLU (a group that cannot cut K). Before,
/// reduced-axis slices were tried only when nothing else fitted, so the
/// lanes of 512 KiB made this layer slower than lanes of 256 KiB.
TEST(LayerGroup, MatMulCutsKWhereThatOverlapsTheWeightLoad) {
  auto plan = [](bool relu, GroupPlan &p) {
    Net net(Prec::Fp16);
    net.chip.lmemBytes = 512 * 1024;
    int x = net.matrixInput(1, 1, 32768);
    int y = net.matmul(x, 256, true);
    if (relu)
      net.unary(y, {UnaryKind::Relu});
    GroupSpec g = net.spec();
    matrixRowsLayout(g);
    std::string why;
    ASSERT_TRUE(planGroup(g, net.chip, {}, p, why)) << why;
  };
  GroupPlan alone, whole;
  plan(false, alone);
  plan(true, whole);
  EXPECT_EQ(whole.kSlices, 1);
  EXPECT_GT(alone.kSlices, 1);
  EXPECT_LT(double(alone.estimatedCycles), 0.9 * double(whole.estimatedCycles))
      << alone.kSlices << " reduced-axis slices";
}

/// Comparisons (with a constant on either side, of two activations, of
/// mixed precisions, against one value per (n, c)) and selections in a
/// group, under N and H slices: every value equals the per-op kernels'
/// bit for bit, and the results equal ones computed here.
TEST(LayerGroup, ComparisonsAndSelection) {
  for (Prec p : {Prec::Fp32, Prec::Fp16}) {
    SCOPED_TRACE(int(p));
    Net net(p);
    int x = net.input(2, 40, 6, 7);
    int y = net.extraInput({2, 40, 6, 7});
    int yf = net.extraInput({2, 40, 6, 7}, Prec::Fp32);
    int ge = net.compareConst(x, CompareKind::Ge, 0.25f, false);
    int lt = net.compare(x, y, CompareKind::Lt);
    int sel = net.where(ge, x, y);
    int gt = net.compare(x, yf, CompareKind::Gt); // mixed: met in fp32
    int cl = net.compareConst(x, CompareKind::Le, -0.5f, true); // -0.5 <= x
    int top = net.reduce(y, ReduceKind::Max, true, true);       // (2, 40, 1, 1)
    int le = net.compare(sel, top, CompareKind::Le);            // per (n, c)
    int any = net.add(net.add(lt, gt), cl);
    net.add(net.where(le, any, sel), net.where(ge, top, x));
    std::vector<std::vector<float>> v = net.values();
    float quarter = isa::roundToPrec(0.25f, p);
    for (size_t i = 0; i < v[size_t(x)].size(); ++i) {
      float a = v[size_t(x)][i], b = v[size_t(y)][i], bf = v[size_t(yf)][i];
      ASSERT_EQ(v[size_t(ge)][i], a >= quarter ? 1.0f : 0.0f) << i;
      ASSERT_EQ(v[size_t(lt)][i], a < b ? 1.0f : 0.0f) << i;
      ASSERT_EQ(v[size_t(gt)][i], a > bf ? 1.0f : 0.0f) << i;
      ASSERT_EQ(v[size_t(cl)][i], -0.5f <= a ? 1.0f : 0.0f) << i;
      ASSERT_EQ(v[size_t(sel)][i], a >= quarter ? a : b) << i;
      ASSERT_EQ(v[size_t(le)][i],
                v[size_t(sel)][i] <= v[size_t(top)][i / 42] ? 1.0f : 0.0f)
          << i;
    }
    for (auto [n, h] :
         {std::pair<int64_t, int64_t>{1, 1}, {2, 1}, {1, 2}, {2, 6}})
      net.check(n, h);
  }
}

/// Element-wise operands broadcast along H (a column maximum), along W (a
/// row sum) and along both (a plane mean), read through zero strides,
/// under N and H slices: every value equals the per-op kernels' (which
/// broadcast them in DDR) bit for bit.
TEST(LayerGroup, BroadcastAlongHeightAndWidth) {
  for (Prec p : {Prec::Fp32, Prec::Fp16}) {
    SCOPED_TRACE(int(p));
    Net net(p);
    int x = net.input(2, 40, 6, 7);
    int cols = net.reduce(x, ReduceKind::Max, true, false); // (2, 40, 1, 7)
    int rows = net.reduce(x, ReduceKind::Sum, false, true); // (2, 40, 6, 1)
    int plane = net.reduce(x, ReduceKind::Mean, true, true);
    int a = net.add(x, cols);
    int m = net.mul(a, rows);
    int ge = net.compare(m, plane, CompareKind::Ge);
    net.add(net.where(ge, cols, rows), m);
    for (auto [n, h] :
         {std::pair<int64_t, int64_t>{1, 1}, {2, 1}, {1, 2}, {2, 6}})
      net.check(n, h);
  }
}

/// Transposes of H and W in a group (as a mel spectrogram's frames and
/// attention's keys have): one AR copy per slice through a view with the h
/// and w strides swapped, every input row read (its columns are the
/// output's rows), in float and int8, between convolutions, under N and H
/// slices: every value equals the per-op permute kernel's bit for bit.
TEST(LayerGroup, TransposeHeightAndWidth) {
  for (Prec p : {Prec::Fp32, Prec::Fp16, Prec::Int8}) {
    SCOPED_TRACE(int(p));
    Net net(p);
    int x = net.input(2, 70, 5, 9);
    int t = p == Prec::Int8 ? net.transposeHW(x)
                            : net.transposeHW(net.conv(x, 70, 3, 1, 1));
    int u = net.transposeHW(net.transposeHW(t)); // back and forth
    if (p == Prec::Int8)
      net.lut(u, 3);
    else
      net.conv(u, 16, 3, 1, 1, 1, 1, true, kRelu);
    for (auto [n, h] :
         {std::pair<int64_t, int64_t>{1, 1}, {2, 1}, {1, 3}, {2, 9}})
      net.check(n, h, {t});
  }
}

/// Parametric relus (a slope per channel, resident like a scale's) before
/// and after a convolution, under N, H and C slices: every value equals
/// the per-op kernels' bit for bit, and the first the one computed here.
TEST(LayerGroup, ParametricRelu) {
  for (Prec p : {Prec::Fp32, Prec::Fp16, Prec::Bf16}) {
    SCOPED_TRACE(int(p));
    Net net(p);
    std::vector<float> slopes;
    int x = net.input(2, 70, 6, 8);
    int a = net.prelu(x, 31, &slopes);
    int c = net.conv(a, 70, 3, 1, 1, 1, 70); // depthwise: C slices allowed
    net.prelu(c, 32);
    std::vector<std::vector<float>> v = net.values();
    for (size_t i = 0; i < v[size_t(x)].size(); ++i) {
      float e = v[size_t(x)][i];
      float want = e > 0 ? e : isa::roundToPrec(slopes[(i / 48) % 70] * e, p);
      ASSERT_EQ(v[size_t(a)][i], want) << i;
    }
    for (auto [n, h] :
         {std::pair<int64_t, int64_t>{1, 1}, {2, 1}, {1, 3}, {2, 6}})
      net.check(n, h);
    GroupSpec g = net.spec();
    GroupPlan cut;
    cut.cSlices = 2;
    cut.hSlices = 2;
    net.checkPlan(g, cut, {net.ops.back().output},
                  "2 x 2 channel and row slices");
  }
}

/// The INT8 squeeze-excite of PP-OCR's blocks: a per-(n, c) gate (here a
/// global max pool of a table lookup) multiplies the block's int8 input at
/// every (h, w) through zero strides, inside the group, under every
/// slicing: every value equals the per-op kernels' bit for bit.
TEST(LayerGroup, Int8SqueezeExciteGate) {
  Net net(Prec::Int8);
  net.inLo = -128;
  net.inHi = 127;
  int x = net.input(2, 64, 8, 8);
  int a = net.lut(x, 3);
  int g = net.pool(a, PoolKind::Max, 8, 1, 0); // (2, 64, 1, 1)
  net.mulInt8(x, g, 23112391, 30);
  for (auto [n, h] :
       {std::pair<int64_t, int64_t>{1, 1}, {2, 1}, {1, 2}, {2, 4}})
    net.check(n, h);
  GroupPlan plan;
  std::string why;
  EXPECT_TRUE(planGroup(net.spec(), net.chip, {}, plan, why)) << why;
}

/// INT8 lookup tables (sSG gathers of a resident 256-entry table) inside a
/// group, around an int8 max pooling, sliced by rows (one row per slice
/// included): every value equals the per-op lut and pool kernels' bit for
/// bit.
TEST(LayerGroup, Int8LookupTables) {
  Net net(Prec::Int8);
  net.inLo = -128;
  net.inHi = 127;
  int x = net.input(2, 64, 8, 8);
  int a = net.lut(x, 1);
  int m = net.pool(a, PoolKind::Max, 3, 2, 1); // 4 x 4
  net.lut(m, 2);
  for (auto [n, h] : {std::pair<int64_t, int64_t>{1, 1}, {2, 1}, {2, 2},
                      {2, 4}})
    net.check(n, h, {a});
  GroupPlan plan;
  std::string why;
  EXPECT_TRUE(planGroup(net.spec(), net.chip, {}, plan, why)) << why;
}

/// Element-wise groups fill the lanes: a group of only element-wise ops of
/// one shape holds its values as (1, C, H, W), C the largest divisor of
/// the element count up to 64, H at most 256 rows. Here 2 x 1 x 160 x 192
/// = 61440 elements of one channel (a detection head's sigmoid) become
/// (1, 64, 240, 4): 960 per lane, the fewest columns (4) that leave at most
/// 256 rows. Every value under every slicing equals the per-op kernels'
/// (which spread element-wise work over the lanes too), and the group is
/// much faster than the same group on one lane.
TEST(LayerGroup, ElementwiseGroupFillsTheLanes) {
  Net net(Prec::Fp16);
  int x = net.input(2, 1, 160, 192);
  int s = net.unary(x, {UnaryKind::Sigmoid});
  int m = net.mulConst(s, 0.5f);
  int a = net.add(m, x);
  GroupSpec oneLane = net.spec({s});
  GroupSpec g = oneLane;
  ASSERT_TRUE(flattenElementwise(g, net.chip));
  for (const GroupValue &v : g.values)
    EXPECT_EQ(v.shape, (std::array<int64_t, 4>{1, 64, 240, 4})) << v.name;
  const auto &add = std::get<BinaryParams>(g.ops[2].params);
  EXPECT_EQ(add.rhs.shape, (std::vector<int64_t>{1, 64, 240, 4}));
  for (int64_t h : {int64_t(1), int64_t(7), int64_t(240)}) {
    GroupPlan plan;
    plan.hSlices = h;
    net.checkPlan(g, plan, {s, a}, "flat " + std::to_string(h));
  }
  GroupPlan flat, one;
  std::string why;
  ASSERT_TRUE(planGroup(g, net.chip, {}, flat, why)) << why;
  ASSERT_TRUE(planGroup(oneLane, net.chip, {}, one, why)) << why;
  // 64 lanes instead of one: the TIU work per lane is 1/64; DDR traffic
  // (the same bytes) bounds the gain well before that.
  EXPECT_LT(flat.estimatedCycles * 4, one.estimatedCycles);
  EXPECT_EQ(flat.ddrReadBytes, one.ddrReadBytes);
}

/// INT8 element-wise groups flatten too (a table lookup and an INT8 mul of
/// two activations, 3 channels); a group with a convolution, one with a
/// per-channel weight, one whose channels fill the lanes already and one
/// whose element count has no divisor but 1 up to 64 keep their shapes.
TEST(LayerGroup, ElementwiseFlatteningOnlyWhereItHelps) {
  {
    Net net(Prec::Int8);
    net.inLo = -128;
    net.inHi = 127;
    int x = net.input(1, 3, 50, 70); // 10500 = 60 x 175
    int l = net.lut(x, 4);
    int m = net.mulInt8(l, x, 23112391, 30);
    GroupSpec g = net.spec({l});
    ASSERT_TRUE(flattenElementwise(g, net.chip));
    EXPECT_EQ(g.values[0].shape, (std::array<int64_t, 4>{1, 60, 175, 1}));
    for (int64_t h : {int64_t(1), int64_t(3), int64_t(175)}) {
      GroupPlan plan;
      plan.hSlices = h;
      net.checkPlan(g, plan, {l, m}, "int8 flat " + std::to_string(h));
    }
  }
  Net conv(Prec::Fp32);
  int x = conv.input(1, 2, 8, 8);
  conv.unary(conv.conv(x, 2, 3, 1, 1), {UnaryKind::Sigmoid});
  GroupSpec withConv = conv.spec();
  EXPECT_FALSE(flattenElementwise(withConv, conv.chip));

  Net scaled(Prec::Fp32);
  scaled.scale(scaled.unary(scaled.input(1, 2, 8, 8), {UnaryKind::Exp}));
  GroupSpec withWeight = scaled.spec();
  EXPECT_FALSE(flattenElementwise(withWeight, scaled.chip));

  Net wide(Prec::Fp32);
  wide.unary(wide.input(1, 128, 4, 4), {UnaryKind::Exp});
  GroupSpec full = wide.spec();
  EXPECT_FALSE(flattenElementwise(full, wide.chip));

  Net prime(Prec::Fp32);
  prime.unary(prime.input(1, 1, 1, 67), {UnaryKind::Exp});
  GroupSpec p = prime.spec();
  EXPECT_FALSE(flattenElementwise(p, prime.chip));
  EXPECT_EQ(p.values[0].shape, (std::array<int64_t, 4>{1, 1, 1, 67}));
}

/// Matrix rows: a transformer block's row-wise ops in one group, the
/// matrices [2, 70, K] held a row per channel (two lane slots of 70 rows):
/// layer norm, a matmul by a weight with bias and relu, a second without
/// an activation, a residual add, softmax. Every value equals the per-op
/// kernels' (MM with the matrix(w) layout, the row kernels) in F32, F16
/// and BF16, whole, in two batch slices and in two channel slices (the
/// right matrices and the lane copies of bias, scale and bias are read
/// whole by each); the support check refuses what the local forms cannot
/// do.
TEST(LayerGroup, MatrixRowsMatmulSoftmaxLayerNorm) {
  for (Prec prec : {Prec::Fp32, Prec::Fp16, Prec::Bf16}) {
    Net net(prec);
    int x = net.matrixInput(2, 70, 48);
    int ln = net.layerNorm(x, true);
    int h = net.matmul(ln, 96, true, kRelu);
    int y = net.matmul(h, 48, true);
    int r = net.add(y, ln);
    int sm = net.softmax(r);
    int z = net.layerNorm(net.matmul(sm, 33, false), false);
    GroupSpec g = net.spec({ln, h, r, sm});
    EXPECT_FALSE(flattenElementwise(g, net.chip));
    matrixRowsLayout(g);
    const auto &mm = std::get<MatMulParams>(g.ops[1].params);
    EXPECT_EQ(mm.left.shape, (std::vector<int64_t>{2, 70, 1, 48}));
    EXPECT_EQ(mm.right.shape, (std::vector<int64_t>{48, 96}));
    EXPECT_EQ(std::get<SoftmaxParams>(g.ops[4].params).axis, 3);
    for (const GroupOp &op : g.ops)
      EXPECT_EQ(localOpSupport(op.params, net.chip), "");
    for (auto [n, c] : {std::pair{1, 1}, std::pair{2, 1}, std::pair{1, 2},
                        std::pair{2, 2}}) {
      GroupPlan plan;
      plan.nSlices = n;
      plan.cSlices = c;
      net.checkPlan(g, plan, {ln, h, r, sm, z},
                    std::string(isa::precName(prec)) + " " + std::to_string(n) +
                        "x" + std::to_string(c));
    }
    GroupPlan plan;
    std::string why;
    ASSERT_TRUE(planGroup(g, net.chip, {}, plan, why)) << why;
    EXPECT_EQ(plan.macs, uint64_t(2 * 70) * (48 * 96 + 96 * 48 + 48 * 33));
  }
  {
    // K = 1 (an outer product): the left operand is a whole buffer, not
    // a per-(n, c) value read at every column.
    Net k1(Prec::Fp16);
    int x = k1.matrixInput(1, 8, 1);
    int y = k1.matmul(x, 16, true);
    GroupSpec g = k1.spec();
    matrixRowsLayout(g);
    k1.checkEmit([&](CmdEmitter &em) { emitGroup(em, g, {}); }, {y}, "k1");
  }
  Net net(Prec::Fp32);
  int x = net.matrixInput(1, 8, 16);
  net.softmax(x);
  net.matmul(x, 4, false);
  GroupSpec g = net.spec();
  matrixRowsLayout(g);
  auto sm = std::get<SoftmaxParams>(g.ops[0].params);
  // Log-softmax: four more row tiles for the log of the sum (rowTempsOf).
  sm.log = true;
  EXPECT_EQ(localOpSupport(sm, net.chip), "");
  sm.log = false;
  sm.axis = 1;
  EXPECT_EQ(localOpSupport(sm, net.chip), "a softmax over other than H or W");
  auto mm = std::get<MatMulParams>(g.ops[1].params);
  // A weight stored [N, K] (Gemm transB) is local, read transposed; the
  // same flag on the stored [K, N] shape is a mismatch.
  mm.rightTransposed = true;
  EXPECT_EQ(localOpSupport(mm, net.chip), "a matmul of mismatched shapes");
  std::swap(mm.right.shape[0], mm.right.shape[1]);
  EXPECT_EQ(localOpSupport(mm, net.chip), "");
  std::swap(mm.right.shape[0], mm.right.shape[1]);
  mm.rightTransposed = false;
  mm.quant = MatMulParams::Quant{};
  EXPECT_EQ(localOpSupport(mm, net.chip), "a matmul of other precisions");
}

/// Attention in one group: Q K^T (K stored transposed), a scale, softmax
/// along the rows, times V, on [2, 3, 40, 16] matrices held as (6, 40, 1,
/// K): one mm2.nn per head of the slice, both operands group values; every
/// value equals the ops alone (each matmul a group of one) in F32 and F16,
/// whole and in batch slices; the rows layout refuses a group that needs (n, c,
/// h, w), and channel slices are refused (a right operand's rows are no
/// slice's).
TEST(LayerGroup, AttentionMatmulsOfTwoActivations) {
  for (Prec prec : {Prec::Fp32, Prec::Fp16}) {
    Net net(prec);
    int q = net.matrices4(2, 3, 40, 16);
    int kt = net.matrices4(2, 3, 16, 40);
    int v = net.matrices4(2, 3, 40, 24);
    int s = net.mulConst(net.matmul2(q, kt), 0.25f);
    int a = net.softmax(s);
    int o = net.matmul2(a, net.unary(v, {UnaryKind::Sigmoid}));
    GroupSpec g = net.spec({s, a});
    ASSERT_TRUE(matrixRowsLayout(g, true));
    for (const GroupOp &op : g.ops)
      EXPECT_EQ(localOpSupport(op.params, net.chip), "");
    for (int64_t n : {1, 2, 3, 6}) {
      GroupPlan plan;
      plan.nSlices = n;
      net.checkPlan(g, plan, {s, a, o},
                    std::string(isa::precName(prec)) + " " + std::to_string(n));
    }
    GroupPlan plan;
    std::string why;
    ASSERT_TRUE(planGroup(g, net.chip, {}, plan, why)) << why;
    GroupPlan cut;
    cut.nSlices = 1;
    cut.cSlices = 2;
    CmdEmitter em(net.chip);
    EXPECT_THROW(emitGroup(em, g, cut), Error);
  }
  Net net(Prec::Fp32);
  int x = net.input(1, 2, 8, 8);
  net.matmul2(net.conv(x, 2, 3, 1, 1), x);
  GroupSpec g = net.spec();
  EXPECT_FALSE(matrixRowsLayout(g, true));
}

/// INT8 matmuls by a weight in a group: int8 x int8 -> int32 by mm2.nn,
/// the int32 bias from its lane copies, one RQ1 (and TFLite's two steps),
/// unsigned and signed activations, 70 rows over two lane slots; every
/// value equals the ops alone (groups of one, in the layout the planner
/// picks for each) under every slicing.
TEST(LayerGroup, Int8MatrixRowsMatmul) {
  Net net(Prec::Int8);
  net.inLo = -128;
  net.inHi = 127;
  int x = net.matrixInput(2, 70, 40);
  auto quantMM = [&](int in, int64_t n, bool bias, bool twoSteps,
                     bool unsignedOut) {
    int out = net.matmul(in, n, false);
    auto &p = std::get<MatMulParams>(net.ops.back().params);
    int64_t k = p.right.shape[0];
    auto w = randomValues(size_t(k * n), unsigned(900 + out), -127, 127);
    p.right.addr = net.blobOf(encodeFloats(w.data(), w.size(), Prec::Int8));
    MatMulParams::Quant q;
    if (bias) {
      auto b = randomValues(size_t(n), unsigned(950 + out), -20000, 20000);
      q.biasAddr = net.blobOf(encodeFloats(b.data(), b.size(), Prec::Int32));
    }
    q.multiplier = 1549556 + out;
    q.rshift = 30;
    q.zeroPoint = unsignedOut ? 7 : -3;
    if (twoSteps)
      q.second = RequantStep{1431655765, 31, isa::RoundMode::HalfAwayFromZero};
    p.quant = q;
    net.setSigned(out, !unsignedOut);
    return out;
  };
  int a = quantMM(x, 96, true, false, true);
  int b = quantMM(a, 48, false, true, false);
  GroupSpec g = net.spec({a});
  matrixRowsLayout(g);
  for (const GroupOp &op : g.ops)
    EXPECT_EQ(localOpSupport(op.params, net.chip), "");
  for (auto [n, c] : {std::pair{1, 1}, std::pair{2, 1}, std::pair{1, 2}}) {
    GroupPlan plan;
    plan.nSlices = n;
    plan.cSlices = c;
    net.checkPlan(g, plan, {a, b},
                  "int8 " + std::to_string(n) + "x" + std::to_string(c));
  }
}

/// Random chains (fixed seeds, so a failure names its case): convolutions
/// (1 x 1 and 3 x 3, stride 2, dilation 2, depthwise), pooling, nearest
/// upsampling, sub-pixel deconvolutions, residual adds of an earlier value
/// or a second input, activations, scale and constants, on random shapes in
/// F32, F16 and BF16, each planned by planGroup with random options (N or
/// H first, a cap on the H slices, channel slices on or off, weights
/// resident or reloaded) on a local memory of 256, 64 or 32 KiB per lane.
/// Where a slicing fits, the group's stored values equal the per-op
/// kernels' bit for bit. The hand-written cases above each pin one rule;
/// this looks for the combinations nobody wrote down.
TEST(LayerGroup, RandomChainsMatchKernels) {
  const Prec precs[] = {Prec::Fp32, Prec::Fp16, Prec::Bf16};
  const uint64_t lmems[] = {256 * 1024, 64 * 1024, 32 * 1024};
  const UnaryKind fns[] = {UnaryKind::Relu, UnaryKind::Sigmoid,
                           UnaryKind::HardSwish, UnaryKind::Tanh};
  int planned = 0, sliced = 0, forced = 0, cases = 0;
  for (unsigned seed = 1; seed <= 48; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return int(rng() % unsigned(n)); };
    Net net(precs[pick(3)]);
    net.chip.lmemBytes = lmems[pick(3)];
    int64_t n = 1 + pick(2), c = 1 + pick(72), h = 3 + pick(12),
            w = 3 + pick(14);
    int cur = net.input(n, c, h, w);
    std::string what = "seed " + std::to_string(seed) + ":";
    int numOps = 2 + pick(4);
    for (int k = 0; k < numOps; ++k) {
      auto s = net.shapeOf(cur);
      int kind = pick(9);
      if (kind == 0 || kind == 1) {
        int64_t ks = pick(2) ? 3 : 1, stride = 1 + pick(2), pad = ks / 2,
                dil = ks == 3 && pick(3) == 0 ? 2 : 1;
        if (dil == 2)
          pad = 2;
        int64_t oh = (s[2] + 2 * pad - dil * (ks - 1) - 1) / stride + 1;
        int64_t ow = (s[3] + 2 * pad - dil * (ks - 1) - 1) / stride + 1;
        if (oh < 1 || ow < 1)
          continue;
        bool dw = kind == 1 && ks == 3;
        int64_t oc = dw ? s[1] : 1 + pick(80);
        Activation act;
        if (pick(2))
          act = kRelu;
        cur = net.conv(cur, oc, ks, stride, pad, dil, dw ? s[1] : 1,
                       pick(4) != 0, act);
        what += dw ? " dwconv" : " conv" + std::to_string(ks);
      } else if (kind == 2) {
        int64_t ks = 2 + pick(2), stride = 1 + pick(2),
                pad = ks == 3 ? pick(2) : 0;
        if (s[2] + 2 * pad < ks || s[3] + 2 * pad < ks)
          continue;
        cur = net.pool(cur, pick(2) ? PoolKind::Max : PoolKind::Avg, ks, stride,
                       pad);
        what += " pool";
      } else if (kind == 3) {
        // Residual: an earlier value of this shape, else a second input.
        std::vector<int> same;
        for (int v = 0; v < cur; ++v)
          if (net.shapeOf(v) == s)
            same.push_back(v);
        int other = same.empty() || pick(3) == 0
                        ? net.extraInput(s)
                        : same[size_t(pick(int(same.size())))];
        cur = net.add(cur, other, pick(2) ? kRelu : Activation{});
        what += " add";
      } else if (kind == 4) {
        Activation fn;
        fn.kind = fns[pick(4)];
        cur = net.unary(cur, fn);
        what += " unary";
      } else if (kind == 5) {
        cur = net.scale(cur);
        what += " scale";
      } else if (kind == 6) {
        cur = net.mulConst(cur, 0.75f);
        what += " mulc";
      } else if (kind == 7) {
        if (s[2] * s[3] > 64)
          continue;
        cur = net.upsample(cur, 2, 2);
        what += " up";
      } else {
        if (s[2] * s[3] > 64)
          continue;
        cur = net.deconv(cur, 1 + pick(48), 2, 2, 0);
        what += " deconv";
      }
    }
    if (net.ops.empty())
      continue;
    GroupOptions options;
    options.hFirst = pick(2);
    options.maxHSlices = pick(3) == 0 ? 2 : 0;
    options.channelSlices = pick(4) != 0;
    options.weightResident = pick(4) != 0;
    what += " lmem " + std::to_string(net.chip.lmemBytes / 1024) + "K";
    SCOPED_TRACE(what);
    ++cases;
    std::optional<GroupPlan> plan = net.checkPlanned(options, what);
    if (!plan)
      continue;
    ++planned;
    sliced += plan->nSlices * plan->cSlices * plan->hSlices > 1;
    // The cost model keeps small groups whole; the same group forced into
    // more row slices (one row each at most), every image apart.
    int64_t outH = net.shapeOf(net.ops.back().output)[2];
    int64_t hs = std::min<int64_t>(outH, plan->hSlices + 1 + pick(3));
    if (plan->cSlices == 1 && hs > plan->hSlices) {
      net.check(n, hs);
      ++forced;
    }
  }
  // The seeds cover groups that fit whole, groups that need slices, and
  // some that fit no slicing (planGroup says so and nothing runs).
  EXPECT_GE(cases, 40);
  EXPECT_GE(planned, cases / 2);
  EXPECT_GE(forced, cases / 2);
  std::printf("random chains: %d cases, %d planned (%d of them sliced), %d "
              "forced into more slices\n",
              cases, planned, sliced, forced);
}

/// Random matrix chains (fixed seeds), held a row per channel
/// (matrixRowsLayout): layer norms, linear layers (bias, ReLU), residual
/// adds of an earlier matrix of the same shape, softmax, activations and
/// constants on [B, M, K] of random sizes (rows beyond one lane slot
/// included), in F32, F16 and BF16 on 256, 64 or 32 KiB of local memory;
/// planned by planGroup and, where the rows allow, forced into batch and
/// channel slices. Every stored value equals the per-op kernels' bit for
/// bit.
TEST(LayerGroup, RandomMatrixChainsMatchKernels) {
  const Prec precs[] = {Prec::Fp32, Prec::Fp16, Prec::Bf16};
  const uint64_t lmems[] = {256 * 1024, 64 * 1024, 32 * 1024};
  int planned = 0, forced = 0, cases = 0, columns = 0;
  for (unsigned seed = 1; seed <= 32; ++seed) {
    std::mt19937 rng(1000 + seed);
    auto pick = [&](int n) { return int(rng() % unsigned(n)); };
    Net net(precs[pick(3)]);
    net.chip.lmemBytes = lmems[pick(3)];
    int64_t b = 1 + pick(3), m = 1 + pick(140), k = 1 + pick(100);
    int cur = net.matrixInput(b, m, k);
    std::string what = "seed " + std::to_string(seed) + ": [" +
                       std::to_string(b) + ", " + std::to_string(m) + ", " +
                       std::to_string(k) + "]";
    int numOps = 2 + pick(4);
    for (int o = 0; o < numOps; ++o) {
      auto s = net.shapeOf(cur);
      switch (pick(6)) {
      case 0:
        cur = net.layerNorm(cur, pick(2));
        what += " ln";
        break;
      case 1:
      case 2: {
        int64_t n = 1 + pick(120);
        bool t = pick(2);
        cur = net.matmul(cur, n, pick(2), pick(2) ? kRelu : Activation{}, t);
        what += (t ? " mmT" : " mm") + std::to_string(n);
        break;
      }
      case 3: {
        std::vector<int> same;
        for (int v = 0; v < cur; ++v)
          if (net.shapeOf(v) == s)
            same.push_back(v);
        if (same.empty())
          continue;
        cur = net.add(cur, same[size_t(pick(int(same.size())))]);
        what += " add";
        break;
      }
      case 4:
        cur = net.softmax(cur);
        what += " softmax";
        break;
      default:
        cur = pick(2) ? net.mulConst(cur, 0.5f)
                      : net.unary(cur, Activation{UnaryKind::Sigmoid});
        what += " eltwise";
        break;
      }
    }
    if (net.ops.empty())
      continue;
    what += " lmem " + std::to_string(net.chip.lmemBytes / 1024) + "K";
    SCOPED_TRACE(what);
    GroupSpec g = net.spec();
    if (!matrixRowsLayout(g))
      continue;
    ++cases;
    std::vector<int> stored;
    for (size_t v = 0; v < g.values.size(); ++v)
      if (g.values[v].stored)
        stored.push_back(int(v));
    GroupPlan plan;
    std::string why;
    if (!planGroup(g, net.chip, {}, plan, why))
      continue;
    ++planned;
    net.checkPlan(g, plan, stored, what + " planned");
    // Forced: every matrix of the batch apart, or the rows cut into lane
    // slots where there are more than one (in the matrix(w) layout, the
    // rows are the N slices: two of them).
    GroupPlan more = plan;
    if (plan.matrixColumns) {
      ++columns;
      if (b * m < 2 || plan.nSlices > 1)
        continue;
      more.nSlices = 2;
    } else if (b > 1 && plan.nSlices < b)
      more.nSlices = b;
    else if (m > int64_t(net.chip.npuNum) && plan.cSlices == 1)
      more.cSlices = (m + net.chip.npuNum - 1) / net.chip.npuNum;
    else
      continue;
    more.weightResident = more.cSlices == 1 && plan.weightResident;
    ++forced;
    net.checkPlan(g, more, stored,
                  what + " forced " + std::to_string(more.nSlices) + " x " +
                      std::to_string(more.cSlices));
  }
  EXPECT_GE(cases, 24);
  EXPECT_GE(planned, cases / 2);
  EXPECT_GE(forced, 6);
  std::printf("random matrix chains: %d cases, %d planned (%d in matrix "
              "columns), %d forced into more slices\n",
              cases, planned, columns, forced);
}

/// The matrix(w) layout (matrixColumnsLayout): random linear layers (fixed
/// seeds) of 1 to 100 rows in batches of 1 or 2, K up to 150, N up to 400,
/// with and without bias and ReLU, weights stored [K, N] or [N, K], then
/// up to two element-wise ops (sigmoid, a constant multiple, an add of a
/// second input), in F32, F16 and BF16 on 256 or 64 KiB of local memory.
/// Each is laid out with the result's columns over one, two and four lane
/// slots and emitted whole, in two row (N) slices and in one column (C)
/// slice per lane slot; planGroup's own choice too. Every stored value
/// equals the per-op kernels' bit for bit.
TEST(LayerGroup, MatrixColumnsMatchKernels) {
  const Prec precs[] = {Prec::Fp32, Prec::Fp16, Prec::Bf16};
  int cases = 0, emitted = 0, cSliced = 0, chosen = 0;
  for (unsigned seed = 1; seed <= 16; ++seed) {
    std::mt19937 rng(3000 + seed);
    auto pick = [&](int n) { return int(rng() % unsigned(n)); };
    Net net(precs[pick(3)]);
    net.chip.lmemBytes = pick(2) ? 256 * 1024 : 64 * 1024;
    int64_t b = 1 + pick(2), m = 1 + pick(100), k = 1 + pick(150),
            n = 1 + pick(400);
    bool bias = pick(2), relu = pick(2), transposed = pick(2);
    std::string what = "seed " + std::to_string(seed) + ": [" +
                       std::to_string(b) + ", " + std::to_string(m) + ", " +
                       std::to_string(k) + "] x " + std::to_string(n) +
                       (bias ? " bias" : "") + (relu ? " relu" : "") +
                       (transposed ? " transposed" : "");
    int x = net.matrixInput(b, m, k);
    int cur = net.matmul(x, n, bias, relu ? kRelu : Activation{}, transposed);
    int tail = pick(3);
    for (int o = 0; o < tail; ++o) {
      switch (pick(3)) {
      case 0:
        cur = net.unary(cur, Activation{UnaryKind::Sigmoid});
        what += " sigmoid";
        break;
      case 1:
        cur = net.mulConst(cur, 0.5f);
        what += " mulconst";
        break;
      default: {
        cur = net.add(cur, net.matrixInput(b, m, n));
        what += " add";
        break;
      }
      }
    }
    SCOPED_TRACE(what);
    ++cases;
    GroupSpec rows = net.spec();
    ASSERT_TRUE(matrixRowsLayout(rows));
    std::vector<int> stored;
    for (size_t v = 0; v < rows.values.size(); ++v)
      if (rows.values[v].stored)
        stored.push_back(int(v));
    for (int64_t slots : {1, 2, 4}) {
      int64_t w = (n + slots * net.chip.npuNum - 1) / (slots * net.chip.npuNum);
      GroupSpec g = rows;
      ASSERT_TRUE(matrixColumnsLayout(g, w, net.chip));
      int64_t blocks = (n + w - 1) / w;
      int64_t laneSlots = (blocks + net.chip.npuNum - 1) / net.chip.npuNum;
      std::vector<std::pair<int64_t, int64_t>> slicings{{1, 1}};
      if (b * m >= 2)
        slicings.push_back({2, 1});
      if (laneSlots > 1)
        slicings.push_back({1, laneSlots});
      for (auto [ns, cs] : slicings) {
        GroupPlan plan;
        plan.nSlices = ns;
        plan.cSlices = cs;
        plan.weightResident = cs == 1;
        plan.matrixColumns = w;
        // Whole in 64 KiB only when it fits there.
        CmdEmitter probe(net.chip);
        try {
          emitGroup(probe, g, plan);
        } catch (const Error &) {
          continue;
        }
        ++emitted;
        cSliced += cs > 1;
        net.checkPlan(g, plan, stored,
                      what + " w " + std::to_string(w) + " " +
                          std::to_string(ns) + " x " + std::to_string(cs));
      }
    }
    GroupPlan plan;
    std::string why;
    ASSERT_TRUE(planGroup(rows, net.chip, {}, plan, why)) << why;
    chosen += plan.matrixColumns > 0;
    net.checkEmit([&](CmdEmitter &em) { emitGroup(em, rows, plan); }, stored,
                  what + " planned");
  }
  EXPECT_EQ(cases, 16);
  EXPECT_GE(emitted, 40);
  EXPECT_GE(cSliced, 6);
  std::printf("matrix columns: %d cases, %d emitted (%d in column slices), "
              "%d planned in matrix columns\n",
              cases, emitted, cSliced, chosen);
}

/// INT8 in the matrix(w) layout: int8 x int8 -> int32 by MM, the int32
/// bias row added by an AR, one RQ1 (and TFLite's two steps), unsigned and
/// signed results, 140 rows; whole, in row slices and in column slices,
/// every value equals the ops alone (groups of one). The layout refuses groups
/// it has no form for.
TEST(LayerGroup, Int8MatrixColumns) {
  for (bool twoSteps : {false, true}) {
    Net net(Prec::Int8);
    net.inLo = -128;
    net.inHi = 127;
    int x = net.matrixInput(2, 70, 40);
    int out = net.matmul(x, 300, false);
    auto &p = std::get<MatMulParams>(net.ops.back().params);
    auto w = randomValues(size_t(40 * 300), 901, -127, 127);
    p.right.addr = net.blobOf(encodeFloats(w.data(), w.size(), Prec::Int8));
    MatMulParams::Quant q;
    auto bv = randomValues(300, 951, -20000, 20000);
    q.biasAddr = net.blobOf(encodeFloats(bv.data(), bv.size(), Prec::Int32));
    q.multiplier = 1549556;
    q.rshift = 30;
    q.zeroPoint = twoSteps ? -3 : 7;
    if (twoSteps)
      q.second = RequantStep{1431655765, 31, isa::RoundMode::HalfAwayFromZero};
    p.quant = q;
    net.setSigned(out, twoSteps);
    GroupSpec g = net.spec();
    ASSERT_TRUE(matrixRowsLayout(g));
    ASSERT_TRUE(matrixColumnsLayout(g, 3, net.chip)); // 100 blocks: 2 slots
    for (auto [ns, cs] : {std::pair{1, 1}, std::pair{3, 1}, std::pair{1, 2},
                          std::pair{2, 2}}) {
      GroupPlan plan;
      plan.nSlices = ns;
      plan.cSlices = cs;
      plan.weightResident = cs == 1;
      plan.matrixColumns = 3;
      net.checkPlan(g, plan, {out},
                    "int8 " + std::to_string(ns) + "x" + std::to_string(cs));
    }
  }
  // No matrix-column form: a softmax after the matmul, a matmul that is
  // not the first op, a left matrix read by another op too.
  Net net(Prec::Fp32);
  int x = net.matrixInput(1, 8, 16);
  net.softmax(net.matmul(x, 16, true));
  GroupSpec g = net.spec();
  ASSERT_TRUE(matrixRowsLayout(g));
  EXPECT_FALSE(matrixColumnsLayout(g, 1, net.chip));
  Net second(Prec::Fp32);
  int y = second.matrixInput(1, 8, 16);
  second.matmul(second.unary(y, Activation{UnaryKind::Sigmoid}), 16, true);
  g = second.spec();
  ASSERT_TRUE(matrixRowsLayout(g));
  EXPECT_FALSE(matrixColumnsLayout(g, 1, second.chip));
  Net shared(Prec::Fp32);
  int z = shared.matrixInput(1, 8, 16);
  shared.add(shared.matmul(z, 16, false), z);
  g = shared.spec();
  ASSERT_TRUE(matrixRowsLayout(g));
  EXPECT_FALSE(matrixColumnsLayout(g, 1, shared.chip));
}

/// Channel slices: with 4 KiB of local memory per lane, an F16 3x3 conv
/// 64 -> 256 (its filter alone is 4 slots x 2 blocks of 32 input channels
/// x 9 taps x 32 x 2 bytes = 4608 bytes per lane) fits no slicing of the
/// batch and rows; cut into channel slices of whole lane slots (128 or 64
/// of the 256 output channels) each slice loads the whole input rows it
/// needs and its channels' filter, bias and scale. Every value equals the
/// per-op kernels' (which tile the output channels too) under every
/// slicing; a channel count that gives no whole slots (3 slices of 256)
/// and a conv reading channels computed in the group are refused.
TEST(LayerGroup, ChannelSlicesForWeightsLargerThanLocalMemory) {
  Net net(Prec::Fp16);
  net.chip.lmemBytes = 4096;
  int x = net.input(2, 64, 6, 6);
  int c = net.conv(x, 256, 3, 1, 1, 1, 1, true, kRelu);
  int sc = net.scale(c);
  int p = net.pool(sc, PoolKind::Max, 2, 2, 0);
  GroupSpec g = net.spec({c});
  GroupPlan plan;
  std::string why;
  ASSERT_TRUE(planGroup(g, net.chip, {}, plan, why)) << why;
  EXPECT_GT(plan.cSlices, 1);
  EXPECT_FALSE(plan.weightResident);
  EXPECT_LE(plan.lmemBytes, net.chip.lmemBytes);
  EXPECT_EQ(plan.timesteps, plan.nSlices * plan.cSlices * plan.hSlices + 2);
  GroupOptions noC;
  noC.channelSlices = false;
  GroupPlan none;
  EXPECT_FALSE(planGroup(g, net.chip, noC, none, why));
  // The plan's slicing (2 x 2 x 1 here: the two images together do not
  // fit with half the channels) and ones with more slices.
  for (auto [n, cs, h] : {std::array<int64_t, 3>{plan.nSlices, plan.cSlices,
                                                 plan.hSlices},
                          {2, 4, 1}, {2, 2, 3}, {1, 4, 3}}) {
    GroupPlan q;
    q.nSlices = n;
    q.cSlices = cs;
    q.hSlices = h;
    q.weightResident = false;
    net.checkPlan(g, q, {c, p},
                  "c slices " + std::to_string(n) + "x" + std::to_string(cs) +
                      "x" + std::to_string(h));
  }
  GroupPlan three;
  three.cSlices = 3;
  CmdEmitter em(net.chip);
  EXPECT_THROW(emitGroup(em, g, three), Error);

  Net two(Prec::Fp16);
  two.chip.lmemBytes = 4096;
  two.conv(two.conv(two.input(1, 64, 4, 4), 128, 1, 1, 0), 128, 1, 1, 0);
  GroupPlan q;
  q.cSlices = 2;
  CmdEmitter em2(two.chip);
  EXPECT_THROW(emitGroup(em2, two.spec(), q), Error);
}

/// The planner refuses what cannot fit and says why; what it accepts
/// emits, and its plan is what emitGroup then uses.
TEST(LayerGroup, PlanFitsOrSays) {
  Net net(Prec::Fp32);
  int x = net.input(1, 64, 32, 32);
  int c1 = net.conv(x, 64, 3, 1, 1);
  net.conv(c1, 64, 3, 1, 1);
  GroupPlan plan;
  std::string why;
  GroupSpec g = net.spec();
  ASSERT_TRUE(planGroup(g, net.chip, {}, plan, why)) << why;
  EXPECT_GE(plan.lmemBytes, plan.weightBytes);
  EXPECT_LE(plan.lmemBytes, net.chip.lmemBytes);
  EXPECT_GT(plan.estimatedCycles, 0u);
  EXPECT_EQ(plan.timesteps, plan.nSlices * plan.hSlices + 2);
  net.check(plan.nSlices, plan.hSlices);

  // Two f32 64 x 64 3x3 filters take 2 x 64 x 9 x 4 = 4608 bytes per lane;
  // with 4 KiB of local memory no slicing fits.
  isa::ChipParams small = net.chip;
  small.lmemBytes = 4096;
  EXPECT_FALSE(planGroup(g, small, {}, plan, why));
  EXPECT_FALSE(why.empty());
}

/// Column slices: every row's columns cut into W slices, each value
/// holding the columns its slice of the last output reads with the halo
/// (localInputCols), the pads only at the image's left and right edges;
/// stride 2, dilation, a pooling and a depthwise conv (sPorD: their input
/// starts at the first column its producer holds), a value broadcast along
/// W, intermediate values stored in their own column slices. Every value
/// equals the per-op kernels' bit for bit, down to slices of one column.
/// A softmax along H inside a group (a segmentation head's classes laid
/// along H): each column normalised over every row, so the group is never
/// cut into row slices, but its columns are. The ops alone are the
/// reference here (the softmax's own arithmetic is held to the tpu
/// interpreter by TpuChipOrder.SoftmaxAndLayerNorm and to double precision
/// by Softmax.InnerAxes).
TEST(LayerGroup, SoftmaxAlongH) {
  for (Prec p : {Prec::Fp32, Prec::Fp16}) {
    Net net(p);
    int x = net.input(2, 16, 9, 20);
    int c = net.conv(x, 16, 3, 1, 1);
    int y = net.softmax(c, 2);
    GroupSpec g = net.spec({c});
    EXPECT_EQ(localOpSupport(g.ops[1].params, net.chip), "");
    EXPECT_NE(rowSliceError(g), "");
    EXPECT_EQ(columnSliceError(g), "");
    for (auto [n, w] : {std::pair{1, 1}, {2, 1}, {2, 3}}) {
      GroupPlan plan;
      plan.nSlices = n;
      plan.wSlices = w;
      net.checkPlan(g, plan, {c, y},
                    std::string(isa::precName(p)) + " " + std::to_string(n) +
                        " x " + std::to_string(w));
    }
    GroupPlan rowsCut;
    rowsCut.hSlices = 3;
    CmdEmitter em(net.chip);
    EXPECT_THROW(emitGroup(em, g, rowsCut), Error);
    // The planner cuts columns, never rows, when a slice must be small:
    // in 4 KiB a lane no batch of all the rows fits.
    GroupPlan chosen;
    std::string why;
    isa::ChipParams small = net.chip;
    small.lmemBytes = 4096;
    GroupOptions opts;
    ASSERT_TRUE(planGroup(g, small, opts, chosen, why)) << why;
    EXPECT_EQ(chosen.hSlices, 1);
    EXPECT_GT(chosen.wSlices, 1);
    net.checkPlan(g, chosen, {c, y},
                  std::string(isa::precName(p)) + " planned in 4 KiB", &small);
  }
}

TEST(LayerGroup, ColumnSlicesAtTheEdges) {
  for (Prec p : {Prec::Fp32, Prec::Fp16}) {
    Net net(p);
    int x = net.input(1, 8, 5, 23);
    int c1 = net.conv(x, 8, 3, 1, 1, 1, 1, true, kRelu);
    int c2 = net.conv(c1, 8, 3, 2, 1);           // 3 x 12
    int d = net.conv(c2, 8, 3, 1, 2, 2);         // dilated
    int m = net.pool(d, PoolKind::Max, 3, 1, 1); // sPorD
    int dw = net.conv(m, 8, 3, 1, 1, 1, 8);      // depthwise, sPorD
    int col = net.extraInput({1, 8, 3, 1});      // broadcast along W
    int y = net.add(dw, col);
    GroupSpec g = net.spec({c2, m});
    for (int64_t w : {2, 3, 5, 12})
      for (int64_t h : {1, 3}) {
        GroupPlan plan;
        plan.hSlices = h;
        plan.wSlices = w;
        net.checkPlan(g, plan, {c2, m, y},
                      std::string(isa::precName(p)) + " " + std::to_string(h) +
                          " x " + std::to_string(w));
      }
    // More column slices than columns, and ops that read whole rows.
    GroupPlan tooMany;
    tooMany.wSlices = 13;
    CmdEmitter em(net.chip);
    EXPECT_THROW(emitGroup(em, g, tooMany), Error);
  }
  Net rows(Prec::Fp32);
  int a = rows.matrixInput(1, 6, 40);
  rows.softmax(a);
  EXPECT_NE(columnSliceError(rows.spec()), "");
}

/// The last resort: when not even one row of every value fits local
/// memory (16 KiB per lane here: a 3 x 3 conv of 64 channels of 600
/// columns needs its three input rows twice, 14,400 bytes, besides its
/// output and filter; the per-op conv kernel, which cuts rows but not
/// columns, cannot run it either), the planner cuts the rows' columns, and
/// the result equals the kernel's at the full 256 KiB bit for bit; with
/// GroupOptions::widthSlices off nothing fits.
TEST(LayerGroup, ColumnSlicesAsTheLastResort) {
  for (Prec p : {Prec::Fp32, Prec::Fp16}) {
    Net net(p);
    int x = net.input(1, 64, 4, 600);
    int c = net.conv(x, 64, 3, 1, 1, 1, 1, true, kRelu);
    int m = net.pool(c, PoolKind::Max, 3, 1, 1);
    isa::ChipParams small = net.chip;
    small.lmemBytes = p == Prec::Fp32 ? 16384 : 8192;
    GroupSpec g = net.spec();
    GroupPlan plan;
    std::string why;
    ASSERT_TRUE(planGroup(g, small, {}, plan, why)) << why;
    EXPECT_GT(plan.wSlices, 1);
    EXPECT_EQ(plan.hSlices, 4);
    EXPECT_LE(plan.lmemBytes, small.lmemBytes);
    EXPECT_EQ(plan.timesteps, plan.hSlices * plan.wSlices + 2);
    net.checkPlan(g, plan, {m}, std::to_string(plan.wSlices) + " column slices",
                  &small);
    GroupOptions whole;
    whole.widthSlices = false;
    EXPECT_FALSE(planGroup(g, small, whole, plan, why));
  }
}

/// The pipeline of a small group, cycle for cycle (the cost model,
/// isa::estimateGroup, on the scheduler's commands). x is f32
/// 1 x 64 x 8 x 4, y = x * 3 (one sAR with an immediate), 2 H slices of 4
/// rows: per slice 64 channels x 4 rows x 4 columns x 4 bytes = 4096 bytes,
/// in DDR one run of 64 bytes (one burst) per channel, and 16 fp32 = one EU
/// step per lane. The scheduler emits
///   GDMA: g1 load slice 0 (copy 0), g2 load slice 1 (copy 1),
///         g3 store slice 0 (waits t1), g4 store slice 1 (waits t2);
///   TIU:  t1 = slice 0 (waits g1), t2 = slice 1 (waits g2);
/// x's copies and y's on bank boundaries, so no operand shares a bank.
/// With Lc the MCU launch, lat the DDR latency, B the DDR bytes per cycle,
/// D = (64 x 64 + 63 x ddr.run_switch_bytes) / B one slice's drain (64 runs,
/// 63 jumps between them), st = gdma.startup, S = sync.latency,
/// V = tiu.eu_startup + 1, F = Lc + lat + ceil(96 / B) the arrival of the
/// first GDMA descriptor:
///   g1 drains [F + st, F + st + D), completes E1 = F + st + D + lat;
///   g2 issues after g1's start-up and drains right behind it: completes
///      E2 = F + st + 2D + lat (the slice-1 load overlaps t1 and the wait);
///   t1 runs [E1 + S, E1 + S + V); g3 issues S after it: at E1 + 2S + V,
///      drains from its start-up on (g2's drain ended earlier, since
///      lat + 2S + V + st > D), completes E1 + 2S + V + st + D + lat;
///   t2 runs [E2 + S, E2 + S + V); g4 issues at E2 + 2S + V = g3's + D,
///      exactly when g3's drain ends: completes
///      E2 + 2S + V + st + D + lat.
/// So the group takes F + 2 st + 3 D + 2 lat + 2 S + V: the second slice's
/// load hides behind the first slice, and only one slice's load, compute
/// and store are not overlapped.
TEST(LayerGroup, TwoSlicePipelineCycles) {
  Net net(Prec::Fp32);
  int x = net.input(1, 64, 8, 4);
  net.mulConst(x, 3.0f);
  GroupSpec g = net.spec();
  GroupPlan plan;
  plan.nSlices = 1;
  plan.hSlices = 2;
  CmdEmitter em(net.chip);
  emitGroup(em, g, plan);
  ASSERT_EQ(em.numGdma(), 4u);
  ASSERT_EQ(em.numTiu(), 2u);
  isa::Machine m;
  const isa::TimingParams &t = m.timing;
  uint64_t period = t.tiuPeriodPs();
  ASSERT_EQ(period, t.gdmaPeriodPs());
  uint64_t b = uint64_t(std::llround(double(period) / t.ddrPsPerByte()));
  uint64_t launch = t.mcuGroupLaunchPs() / period;
  uint64_t lat = t.ddrLatencyPs() / period;
  uint64_t d = (64 * 64 + 63 * t.ddrRunSwitchBytes) / b;
  ASSERT_EQ((64 * 64 + 63 * t.ddrRunSwitchBytes) % b, 0u);
  ASSERT_GT(lat + 2 * t.syncLatency + t.euStartup + 1 + t.gdmaStartup, d);
  uint64_t f = launch + lat + (96 + b - 1) / b;
  uint64_t v = t.euStartup + 1;
  uint64_t want = f + 2 * t.gdmaStartup + 3 * d + 2 * lat +
                  2 * t.syncLatency + v;
  isa::Estimate e =
      isa::estimateGroup(em.tiuCommands(), em.gdmaCommands(), m);
  EXPECT_EQ(e.cycles, want);
  EXPECT_EQ(e.tiuBusyCycles, 2 * v);
}

/// Bank placement: a chain of element-wise ops on values of two banks each
/// (1 x 64 x 128 x 128 f16: 32 KiB per lane, banks of 16 KiB) in one slice
/// has room to put every op's result in banks its operand does not use, so
/// no TIU command of the group reads and writes one bank (tiuCost's
/// conflict pairs are 0; plain first fit gives one pair).
TEST(LayerGroup, ResultsApartFromOperandsInBanks) {
  Net net(Prec::Fp16);
  int x = net.input(1, 64, 128, 128);
  int a = net.unary(x, {UnaryKind::Abs});
  int b = net.mulConst(a, 3.0f);
  net.unary(b, {UnaryKind::Neg});
  GroupSpec g = net.spec();
  GroupPlan plan;
  plan.nSlices = 1;
  plan.hSlices = 1;
  auto conflicts = [&](const isa::ChipParams &chip) {
    CmdEmitter em(chip);
    emitGroup(em, g, plan);
    unsigned pairs = 0;
    for (const isa::RawCommand &c : em.tiuCommands()) {
      isa::TiuOp op = isa::decodeTiu(c);
      pairs += isa::tiuCost(op, isa::tiuWork(op, chip), chip,
                            isa::TimingParams())
                   .conflictPairs;
    }
    return pairs;
  };
  EXPECT_EQ(conflicts(net.chip), 0u);
  net.check(1, 1);
}

/// Two groups, A = conv 3x3 + relu, conv 3x3 (ops 0, 1) and B = conv 3x3
/// stride 2 + relu, conv 3x3 (ops 2, 3), for the next group's weight
/// prefetch: A loads B's first filter and bias during its last slice, B
/// reads them there and loads them no more. `at`: on the bank boundary
/// below the top of local memory that holds them (memory A never uses).
class LayerGroupPrefetch : public ::testing::Test {
protected:
  void build(Prec p) {
    net.emplace(p);
    int x = net->input(1, 32, 16, 16);
    int c1 = net->conv(x, 32, 3, 1, 1, 1, 1, true, kRelu);
    c2 = net->conv(c1, 32, 3, 1, 1);
    int c3 = net->conv(c2, 64, 3, 2, 1, 1, 1, true, kRelu);
    c4 = net->conv(c3, 64, 3, 1, 1);
    a = net->specOf(0, 2);
    b = net->specOf(2, 4);
    bytes = firstWeightBytes(b, net->chip);
    uint64_t bank = net->chip.bankBytes();
    at = int64_t((net->chip.lmemBytes - bytes) / bank * bank);
  }
  std::optional<Net> net;
  int c2 = -1, c4 = -1;
  GroupSpec a, b;
  uint64_t bytes = 0;
  int64_t at = -1;
};

/// Both groups in one command stream on the simulator, under every engine
/// schedule: A's and B's stored values equal the per-op kernels' bit for
/// bit, whatever the slicing, with B's weights at the top of local memory
/// and at offset 0, where A's first filter is (A loads them after its last
/// slice's first conv, the last command to read that filter: the emitter's
/// ids make the load wait for it and B's reads wait for the load).
TEST_F(LayerGroupPrefetch, BitExactAcrossGroups) {
  for (Prec p : {Prec::Fp32, Prec::Fp16}) {
    build(p);
    // B's first conv: 64 filters of 32 x 3 x 3 over 64 lanes, one filter
    // per lane (32 x 9 x 4 or 2 bytes) and its f32 bias (4 bytes, aligned
    // up): a region of less than a bank.
    ASSERT_GT(bytes, 0u);
    ASSERT_LT(bytes, net->chip.bankBytes());
    for (int64_t where : {at, int64_t(0)})
      for (auto [ha, hb] : {std::pair<int64_t, int64_t>{1, 1}, {2, 1}, {4, 2},
                            {16, 8}}) {
        GroupPlan pa, pb;
        pa.hSlices = ha;
        pa.nextWeightsAt = where;
        pb.hSlices = hb;
        pb.firstWeightsAt = where;
        net->checkEmit(
            [&](CmdEmitter &em) {
              emitGroup(em, a, pa, &b);
              emitGroup(em, b, pb);
            },
            {c2, c4},
            "prefetch at " + std::to_string(where) + " " + std::to_string(ha) +
                "/" + std::to_string(hb));
      }
  }
}

/// What the cost model sees: with the prefetch B issues two GDMA commands
/// fewer (the filter and the bias) and reads their bytes no more, A reads
/// them instead; B alone and the two groups in one stream get faster (B's
/// first conv no longer waits for its filter behind the loads of A's last
/// slice). One slice each, so the slicings compare.
TEST_F(LayerGroupPrefetch, CostModelAndTraffic) {
  build(Prec::Fp16);
  GroupOptions one;
  one.maxHSlices = 1;
  GroupOptions oa = one, ob = one;
  oa.next = &b;
  oa.nextWeightsAt = at;
  ob.firstWeightsAt = at;
  GroupPlan a0, b0, a1, b1;
  std::string why;
  ASSERT_TRUE(planGroup(a, net->chip, one, a0, why)) << why;
  ASSERT_TRUE(planGroup(b, net->chip, one, b0, why)) << why;
  ASSERT_TRUE(planGroup(a, net->chip, oa, a1, why)) << why;
  ASSERT_TRUE(planGroup(b, net->chip, ob, b1, why)) << why;
  EXPECT_EQ(a1.nextWeightsAt, at);
  EXPECT_EQ(b1.firstWeightsAt, at);
  EXPECT_EQ(b1.numGdma + 2, b0.numGdma);
  EXPECT_EQ(a1.numGdma, a0.numGdma + 2);
  // f16 filter, DDR bytes as the per-lane tile has them (64 channels x 32
  // x 9 x 2), and the f32 bias (64 x 4).
  uint64_t weights = 64 * 32 * 9 * 2 + 64 * 4;
  EXPECT_EQ(b0.ddrReadBytes - b1.ddrReadBytes, weights);
  EXPECT_EQ(a1.ddrReadBytes - a0.ddrReadBytes, weights);
  EXPECT_LT(b1.estimatedCycles, b0.estimatedCycles);

  auto both = [&](const GroupPlan &pa, const GroupPlan &pb) {
    CmdEmitter em(net->chip);
    emitGroup(em, a, pa, &b);
    emitGroup(em, b, pb);
    return estimateCycles(em, isa::Machine());
  };
  EXPECT_LT(both(a1, b1), both(a0, b0));
}

/// The region must lie inside local memory and miss the values A's last
/// slice stores (the stores follow the load); memory A's ops use is fine.
/// One slice: A's stored value is single buffer on a bank
/// boundary, so some bank boundary hits it and offset 0 (A's first filter)
/// does not.
TEST_F(LayerGroupPrefetch, RefusesAnOverlappingRegion) {
  build(Prec::Fp32);
  GroupPlan plan;
  std::string why;
  GroupOptions oa;
  oa.maxHSlices = 1;
  oa.next = &b;
  oa.nextWeightsAt = int64_t(net->chip.lmemBytes) - 64;
  EXPECT_FALSE(planGroup(a, net->chip, oa, plan, why));
  EXPECT_NE(why.find("not inside local memory"), std::string::npos) << why;
  oa.nextWeightsAt = 0;
  EXPECT_TRUE(planGroup(a, net->chip, oa, plan, why)) << why;
  unsigned refused = 0;
  for (uint64_t k = 0; k < net->chip.lmemBytes / net->chip.bankBytes(); ++k) {
    oa.nextWeightsAt = int64_t(k * net->chip.bankBytes());
    if (!planGroup(a, net->chip, oa, plan, why)) {
      EXPECT_NE(why.find("overlap a value the last slice stores"),
                std::string::npos)
          << why;
      ++refused;
    }
  }
  EXPECT_GE(refused, 1u);
  GroupOptions ob;
  ob.firstWeightsAt = int64_t(net->chip.lmemBytes) - 64;
  EXPECT_FALSE(planGroup(b, net->chip, ob, plan, why));
  EXPECT_NE(why.find("past local memory"), std::string::npos) << why;
  GroupPlan pa;
  pa.nextWeightsAt = at;
  CmdEmitter em(net->chip);
  EXPECT_THROW(emitGroup(em, a, pa), Error);
}

} // namespace

/// A network's stem (7 x 7, stride 2, 3 -> 128 channels, 16 x 16 outputs)
/// and two 3 x 3 convs behind it, one slice: in op order the 3 x 3 filters
/// are packed behind the stem's and their loads, which run while the stem
/// computes, wait for the banks its filter and bias are in (measured: 9216
/// stalled cycles), and the second conv waits for its filter. planGroup
/// compares the weight orders with the cost model: parity keeps each
/// filter out of its neighbours' banks, no stall, about a quarter fewer
/// cycles (31912 -> 24360 with the launch). Every order computes the same
/// values bit for bit.
TEST(LayerGroup, WeightOrderAvoidsBankStalls) {
  Net net(Prec::Fp16);
  int x = net.input(1, 3, 32, 32);
  int v = net.conv(x, 128, 7, 2, 3, 1, 1, true, kRelu);
  v = net.conv(v, 128, 3, 1, 1, 1, 1, true, kRelu);
  int last = net.conv(v, 128, 3, 1, 1, 1, 1, true, kRelu);
  GroupSpec g = net.spec();
  GroupPlan plan;
  std::string why;
  ASSERT_TRUE(planGroup(g, net.chip, GroupOptions(), plan, why)) << why;
  EXPECT_EQ(plan.weightOrder, WeightOrder::Parity);
  EXPECT_EQ(plan.stallCycles, 0u);

  isa::Machine m;
  m.chip = net.chip;
  auto estimate = [&](WeightOrder order) {
    GroupPlan p = plan;
    p.weightOrder = order;
    CmdEmitter em(net.chip);
    emitGroup(em, g, p);
    auto [tiu, gdma] = em.streamsWithEnd();
    return isa::estimateGroup(tiu, gdma, m);
  };
  isa::Estimate inOrder = estimate(WeightOrder::InOrder);
  isa::Estimate chosen = estimate(plan.weightOrder);
  EXPECT_EQ(chosen.cycles - chosen.launchCycles, plan.estimatedCycles);
  EXPECT_GT(inOrder.gdmaConflictCycles, 0u);
  EXPECT_LT(chosen.cycles, inOrder.cycles);

  for (WeightOrder order :
       {WeightOrder::InOrder, WeightOrder::FirstApart, WeightOrder::Parity}) {
    GroupPlan p = plan;
    p.weightOrder = order;
    net.checkPlan(g, p, {last}, weightOrderName(order));
  }
}

TEST(LayerGroup, WeightOrderNames) {
  for (WeightOrder order :
       {WeightOrder::InOrder, WeightOrder::FirstApart, WeightOrder::Parity}) {
    WeightOrder back = WeightOrder::InOrder;
    ASSERT_TRUE(parseWeightOrder(weightOrderName(order), back));
    EXPECT_EQ(back, order);
  }
  WeightOrder o;
  EXPECT_FALSE(parseWeightOrder("reversed", o));
}
