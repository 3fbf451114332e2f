//===- TpuChipOrderTest.cpp - The tpu interpreter against the simulator ---===//
//
// The tpu dialect's interpreter models what the compiled program computes
// (ChipMath.h). For each op family the backend emits commands for, a small
// tpu module is interpreted and the backend kernel's commands run on the
// simulator's functional kernels with the same data; the two results must
// agree bit for bit.
//
// The data spans many binades, so fp32 sums taken in another order (or with
// another intermediate precision) round differently somewhere: each test
// also checks that the top dialect's float32 reference kernel (another
// order, or the exact function instead of the backend's polynomial)
// differs from the simulator, i.e. that the data would catch an
// interpreter that stopped following the backend.
//
//===----------------------------------------------------------------------===//
#include "../backend/BackendTestUtil.h"

#include "tpuc/Dialect/Tpu/IR/ChipMath.h"
#include "tpuc/Dialect/Tpu/IR/Int8.h"
#include "tpuc/InitAll.h"
#include "tpuc/Interpreter/Interpreter.h"
#include "tpuc/Interpreter/Kernels.h"
#include "tpuc/Support/Weights.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

// The references below add products; they must not be fused.
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

using namespace mlir;
using namespace tpuc;

namespace be = ::tpu::backend;
namespace bt = ::tpu::backend::test;
using ::tpu::isa::Prec;

namespace {

using Shape = std::vector<int64_t>;

std::string elemName(Prec p) {
  switch (p) {
  case Prec::Fp16:
    return "f16";
  case Prec::Bf16:
    return "bf16";
  default:
    return "f32";
  }
}

std::string tensorType(const Shape &shape, const std::string &elem) {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + elem + ">";
}

std::string tensorType(const Shape &shape, Prec p) {
  return tensorType(shape, elemName(p));
}

int64_t count(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// sign * 2^e * (1 + f), e uniform in [minExp, maxExp], rounded to p: sums
/// of such values depend on their order.
std::vector<float> wideValues(size_t n, unsigned seed, Prec p, int minExp = -6,
                              int maxExp = 6) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> e(minExp, maxExp);
  std::uniform_real_distribution<float> f(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v) {
    x = std::ldexp(1.0f + f(gen), e(gen)) * ((gen() & 1) ? -1.0f : 1.0f);
    x = bt::roundTo(x, p);
  }
  return v;
}

/// Uniform values in [lo, hi) rounded to p.
std::vector<float> uniformValues(size_t n, unsigned seed, Prec p, float lo,
                                 float hi) {
  std::vector<float> v = bt::randomValues(n, seed, lo, hi);
  for (float &x : v)
    x = bt::roundTo(x, p);
  return v;
}

std::vector<float> roundAll(std::vector<float> v, Prec p) {
  for (float &x : v)
    x = bt::roundTo(x, p);
  return v;
}

/// Elements whose bit patterns differ.
size_t countDiff(const std::vector<float> &a, const std::vector<float> &b) {
  size_t n = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    n += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return n + (a.size() > b.size() ? a.size() - b.size() : b.size() - a.size());
}

void expectBitExact(const std::vector<float> &got,
                    const std::vector<float> &want, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0 && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << got[i]
                    << " in the interpreter, " << want[i]
                    << " in the simulator";
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size()
                     << " elements differ";
}

/// One weight of the module: name, shape, element type, layout, data.
struct Weight {
  std::string name;
  Shape shape;
  std::string elem;
  std::string layout;
  std::vector<float> data;
};

/// The backend kernel on the simulator: tensors in global memory, commands
/// run in an order their ids allow.
struct SimRun {
  ::tpu::isa::ChipParams chip = ::tpu::isa::ChipParams::bm1684x();
  ::tpu::sim::MachineState m{chip};
  bt::GlobalAlloc alloc{chip};
  be::CmdEmitter em{chip};

  SimRun() = default;
  /// A BM1684X with `lmemBytes` of local memory a lane.
  explicit SimRun(uint64_t lmemBytes)
      : chip(withLmem(lmemBytes)), m{chip}, alloc{chip}, em{chip} {}
  static ::tpu::isa::ChipParams withLmem(uint64_t bytes) {
    ::tpu::isa::ChipParams c = ::tpu::isa::ChipParams::bm1684x();
    c.lmemBytes = bytes;
    return c;
  }

  be::GTensor tensor(Prec p, Shape shape,
                     const std::vector<float> *data = nullptr) {
    be::GTensor t = alloc.tensor(p, std::move(shape));
    if (data)
      bt::writeTensor(m, t, *data);
    return t;
  }
  uint64_t raw(const std::vector<uint8_t> &bytes) {
    uint64_t a = alloc.alloc(bytes.size());
    bt::writeBytes(m, a, bytes);
    return a;
  }
  uint64_t fp32(const std::vector<float> &v) {
    return raw(be::encodeFloats(v.data(), v.size(), Prec::Fp32));
  }
  /// The mnemonics of the TIU commands run (run() fills it).
  std::vector<std::string> tiuOps;
  std::vector<float> run(const be::GTensor &out) {
    ::tpu::isa::bmodel::CmdGroup g = em.finish();
    for (const auto &c : ::tpu::isa::splitBuffer(::tpu::isa::Engine::Tiu,
                                                 g.tiu.data(), g.tiu.size()))
      tiuOps.push_back(::tpu::isa::mnemonic(c.cmd));
    bt::runGroup(m, g, bt::Schedule::Random, 3);
    return bt::readTensor(m, out);
  }
  size_t countTiu(const std::string &mnemonic) const {
    return size_t(std::count(tiuOps.begin(), tiuOps.end(), mnemonic));
  }
};

class TpuChipOrder : public ::testing::Test {
protected:
  TpuChipOrder() {
    DialectRegistry registry;
    registerAllDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
    handler =
        std::make_unique<ScopedDiagnosticHandler>(&ctx, [this](Diagnostic &d) {
          errors.push_back(d.str());
          return success();
        });
  }
  ~TpuChipOrder() override {
    if (owned)
      releaseWeights(*owned);
  }

  /// Interprets `%y = <op>` on input %x (shape inShape, rounded to p from
  /// the f32 input "in") with weights %w0, %w1, ... and returns tensor y.
  std::vector<float> interpret(const Shape &inShape, Prec p,
                               const std::vector<float> &input,
                               const std::vector<Weight> &weights,
                               const std::string &op,
                               const std::string &outType) {
    std::string in32 = tensorType(inShape, "f32");
    std::ostringstream s;
    s << "module @t attributes {top.chip = \"BM1684X\", top.state = "
         "\"TPU_LOWERED\", tpu.mode = \"F32\"} {\n"
      << "  func.func @main(%arg0: " << in32 << ") -> " << outType << " {\n"
      << "    %none = \"top.None\"() : () -> none\n"
      << "    %in = \"top.Input\"(%arg0) {name = \"in\"} : (" << in32 << ") -> "
      << in32 << "\n"
      << "    %x = \"tpu.Cast\"(%in) {name = \"x\"} : (" << in32 << ") -> "
      << tensorType(inShape, p) << "\n";
    for (size_t i = 0; i < weights.size(); ++i)
      s << "    %w" << i << " = \"tpu.Weight\"() {layout = \""
        << weights[i].layout << "\", name = \"" << weights[i].name
        << "\"} : () -> " << tensorType(weights[i].shape, weights[i].elem)
        << "\n";
    s << "    %y = " << op << "\n"
      << "    return %y : " << outType << "\n  }\n}\n";
    if (owned)
      releaseWeights(*owned);
    owned = parseSourceString<ModuleOp>(s.str(), &ctx);
    if (!owned) {
      ADD_FAILURE() << "parse failed: " << (errors.empty() ? "" : errors.back())
                    << "\n"
                    << s.str();
      return {};
    }
    for (const Weight &w : weights)
      getWeightRegistry(&ctx).get(*owned).memory[w.name] =
          ::tpu::npz::Array::from<float>(w.shape, w.data);
    ModuleInterpreter interp(*owned);
    interp.setNumThreads(2);
    interp.setInput("in", input);
    if (failed(interp.run())) {
      if (!expectFailure)
        ADD_FAILURE() << "interpreter failed: "
                      << (errors.empty() ? "" : errors.back());
      return {};
    }
    if (expectFailure)
      ADD_FAILURE() << "the interpreter ran " << op;
    return interp.tensor("y");
  }
  /// interpret() expects the interpreter to fail (errors has why).
  bool expectFailure = false;

  MLIRContext ctx;
  OwningOpRef<ModuleOp> owned;
  std::vector<std::string> errors;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
};

//===----------------------------------------------------------------------===//
// Convolutions
//===----------------------------------------------------------------------===//

struct ConvCase {
  Prec prec;
  int64_t ic, ih, iw, oc, k, stride, dil, pad, groups;
  bool relu;
};

/// Orders a convolution's fp32 sum could be taken in.
enum class ConvOrder {
  Documented, ///< ic, ky, kx from +0, then the bias (semantics.md)
  BiasFirst,  ///< the bias, then ic, ky, kx
  KernelMajor ///< ky, kx, ic, then the bias
};

/// Plain nested-loop convolution in \p order; the bias is rounded to
/// \p biasPrec first (the depthwise PorD adds it in the input type); relu;
/// one rounding to \p prec.
std::vector<float> convRef(const ConvCase &c, int64_t oh, int64_t ow,
                           const std::vector<float> &x,
                           const std::vector<float> &w,
                           const std::vector<float> &b, ConvOrder order,
                           Prec biasPrec) {
  int64_t icg = c.ic / c.groups, ocg = c.oc / c.groups;
  std::vector<float> y(size_t(c.oc * oh * ow));
  for (int64_t o = 0; o < c.oc; ++o)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        float bias = bt::roundTo(b[size_t(o)], biasPrec);
        float acc = order == ConvOrder::BiasFirst ? bias : 0.0f;
        auto tap = [&](int64_t ci, int64_t ky, int64_t kx) {
          int64_t iy = oy * c.stride + ky * c.dil - c.pad;
          int64_t ix = ox * c.stride + kx * c.dil - c.pad;
          if (iy < 0 || iy >= c.ih || ix < 0 || ix >= c.iw)
            return;
          int64_t in = (o / ocg) * icg + ci;
          acc = acc + x[size_t((in * c.ih + iy) * c.iw + ix)] *
                          w[size_t(((o * icg + ci) * c.k + ky) * c.k + kx)];
        };
        if (order == ConvOrder::KernelMajor) {
          for (int64_t ky = 0; ky < c.k; ++ky)
            for (int64_t kx = 0; kx < c.k; ++kx)
              for (int64_t ci = 0; ci < icg; ++ci)
                tap(ci, ky, kx);
        } else {
          for (int64_t ci = 0; ci < icg; ++ci)
            for (int64_t ky = 0; ky < c.k; ++ky)
              for (int64_t kx = 0; kx < c.k; ++kx)
                tap(ci, ky, kx);
        }
        if (order != ConvOrder::BiasFirst)
          acc = acc + bias;
        if (c.relu)
          acc = std::max(acc, 0.0f);
        y[size_t((o * oh + oy) * ow + ox)] = bt::roundTo(acc, c.prec);
      }
  return y;
}

/// Large terms that cancel, so that the running fp32 sum passes through a
/// coarse grid (how coarse, and which terms it rounds, depends on the
/// order) while the exact result stays small: 16-bit products are exact in
/// fp32 and sums of a few of them nearly so, and the one rounding to the
/// result type would otherwise hide the order.
///  * general conv: input channels 0 and icg - 1 of every group hold +B and
///    -B, all their weights are B;
///  * depthwise: the input repeats with period 2 in H and W and the first
///    and last kernel taps are +B and -B (the taps read equal inputs when
///    the dilation is 1).
void plantCancellation(const ConvCase &c, std::vector<float> &x,
                       std::vector<float> &w, float big, bool depthwise) {
  int64_t icg = c.ic / c.groups, plane = c.ih * c.iw, kArea = c.k * c.k;
  if (depthwise) {
    for (int64_t ch = 0; ch < c.ic; ++ch) {
      float *p = x.data() + ch * plane;
      for (int64_t iy = 0; iy < c.ih; ++iy)
        for (int64_t ix = 0; ix < c.iw; ++ix)
          p[iy * c.iw + ix] = p[(iy % 2) * c.iw + ix % 2];
      w[size_t(ch * kArea)] = big;
      w[size_t(ch * kArea + kArea - 1)] = -big;
    }
    return;
  }
  for (int64_t g = 0; g < c.groups; ++g)
    for (int64_t i : {int64_t(0), icg - 1}) {
      float sign = i == 0 ? 1.0f : -1.0f;
      for (int64_t j = 0; j < plane; ++j)
        x[size_t((g * icg + i) * plane + j)] = sign * big;
    }
  for (int64_t o = 0; o < c.oc; ++o)
    for (int64_t i : {int64_t(0), icg - 1})
      for (int64_t k = 0; k < kArea; ++k)
        w[size_t((o * icg + i) * kArea + k)] = big;
}

TEST_F(TpuChipOrder, Conv2D) {
  // 40 input channels cross the bf16 IC_PARALLEL block (32); a grouped
  // strided dilated f16 conv with relu; depthwise convs with more channels
  // than lanes (sPorD, bias in the input type).
  const ConvCase cases[] = {
      {Prec::Bf16, 40, 9, 11, 8, 3, 1, 1, 1, 1, false},
      {Prec::Fp32, 40, 9, 11, 8, 3, 1, 1, 1, 1, false},
      {Prec::Fp16, 12, 10, 10, 6, 3, 2, 2, 2, 2, true},
      {Prec::Bf16, 70, 8, 9, 70, 3, 1, 1, 1, 70, false},
      {Prec::Fp32, 70, 8, 9, 70, 3, 2, 1, 1, 70, true},
  };
  unsigned seed = 1;
  for (const ConvCase &c : cases) {
    int64_t icg = c.ic / c.groups, span = c.dil * (c.k - 1) + 1;
    int64_t oh = (c.ih + 2 * c.pad - span) / c.stride + 1;
    int64_t ow = (c.iw + 2 * c.pad - span) / c.stride + 1;
    Shape inS{1, c.ic, c.ih, c.iw}, wS{c.oc, icg, c.k, c.k},
        outS{1, c.oc, oh, ow};
    bool dw = be::isDepthwise(c.ic, c.oc, c.groups);
    // f16 sums must stay below 65504.
    int maxExp = c.prec == Prec::Fp16 ? 3 : 6;
    std::vector<float> x = wideValues(count(inS), seed++, c.prec, -6, maxExp);
    std::vector<float> w = wideValues(count(wS), seed++, c.prec, -6, maxExp);
    // 16-bit products are exact in fp32 and its sums of them nearly so:
    // cancelling large terms make the order show after the rounding.
    if (c.prec != Prec::Fp32)
      plantCancellation(c, x, w, dw ? 65536.0f : 1024.0f, dw);
    // A bias that is not a bf16 / f16 value: the depthwise PorD rounds it.
    std::vector<float> b = uniformValues(c.oc, seed++, Prec::Fp32, -40, 40);
    std::string what = std::string(dw ? "depthwise " : "conv ") +
                       elemName(c.prec) + " ic " + std::to_string(c.ic);

    std::ostringstream op;
    op << "\"tpu.Conv2D\"(%x, %w0, %w1) {dilations = [" << c.dil << ", "
       << c.dil << "], do_relu = " << (c.relu ? "true" : "false")
       << ", group = " << c.groups << " : i64, kernel_shape = [" << c.k << ", "
       << c.k << "], name = \"y\", pads = [" << c.pad << ", " << c.pad << ", "
       << c.pad << ", " << c.pad << "], relu_limit = -1.0 : f64, strides = ["
       << c.stride << ", " << c.stride << "]} : (" << tensorType(inS, c.prec)
       << ", " << tensorType(wS, c.prec) << ", tensor<" << c.oc << "xf32>) -> "
       << tensorType(outS, c.prec);
    std::string layout = dw                     ? "depthwise"
                         : c.prec == Prec::Fp32 ? "conv_1ic"
                                                : "conv_32ic";
    std::vector<float> got = interpret(inS, c.prec, x,
                                       {{"w", wS, elemName(c.prec), layout, w},
                                        {"b", {c.oc}, "f32", "compact", b}},
                                       op.str(), tensorType(outS, c.prec));

    SimRun sim;
    be::ConvParams p;
    p.name = "y";
    p.input = sim.tensor(c.prec, inS, &x);
    p.output = sim.tensor(c.prec, outS);
    p.filterAddr = sim.raw(be::reorderConvFilter(w.data(), c.oc, icg, c.k, c.k,
                                                 c.prec, c.groups, sim.chip));
    p.biasAddr = sim.fp32(b);
    p.kernelH = p.kernelW = c.k;
    p.strideH = p.strideW = c.stride;
    p.dilationH = p.dilationW = c.dil;
    p.padTop = p.padBottom = p.padLeft = p.padRight = c.pad;
    p.groups = c.groups;
    if (c.relu)
      p.act.kind = be::UnaryKind::Relu;
    be::conv2d(sim.em, p);
    std::vector<float> want = sim.run(p.output);
    expectBitExact(got, want, what);

    // The documented order reproduces the simulator; other orders (and, for
    // the depthwise PorD, an fp32 bias) do not on this data.
    Prec biasPrec = dw ? c.prec : Prec::Fp32;
    expectBitExact(convRef(c, oh, ow, x, w, b, ConvOrder::Documented, biasPrec),
                   want, what + " (nested-loop reference)");
    for (ConvOrder alt : {ConvOrder::BiasFirst, ConvOrder::KernelMajor})
      if (icg > 1 || alt != ConvOrder::KernelMajor) // one channel: same order
        EXPECT_GT(countDiff(convRef(c, oh, ow, x, w, b, alt, biasPrec), want),
                  0u)
            << what << ": the data does not tell summation orders apart";
    if (dw && c.prec != Prec::Fp32)
      EXPECT_GT(countDiff(convRef(c, oh, ow, x, w, b, ConvOrder::Documented,
                                  Prec::Fp32),
                          want),
                0u)
          << what << ": the data does not show the bias rounding";
  }
}

TEST_F(TpuChipOrder, Deconv2D) {
  // Stride 2 with output padding (zero insertion, rotated kernel, cropped
  // pads) and a grouped one.
  struct Case {
    Prec prec;
    int64_t ic, ih, oc, k, stride, pad, outPad, groups;
  };
  // The last: 4 groups of 24 channels, group 2 from lane 48 into the
  // second lane slot (one CONV per group on channel ranges).
  const Case cases[] = {{Prec::Bf16, 40, 7, 6, 3, 2, 1, 1, 1},
                        {Prec::Fp32, 8, 6, 6, 4, 2, 1, 0, 2},
                        {Prec::Fp16, 96, 5, 96, 3, 2, 1, 1, 4}};
  unsigned seed = 100;
  for (const Case &c : cases) {
    int64_t ocg = c.oc / c.groups;
    int64_t oh = (c.ih - 1) * c.stride - 2 * c.pad + c.k + c.outPad;
    Shape inS{1, c.ic, c.ih, c.ih}, wS{c.ic, ocg, c.k, c.k},
        outS{1, c.oc, oh, oh};
    std::vector<float> x = wideValues(count(inS), seed++, c.prec);
    std::vector<float> w = wideValues(count(wS), seed++, c.prec);
    std::vector<float> b = uniformValues(c.oc, seed++, Prec::Fp32, -40, 40);
    std::ostringstream op;
    op << "\"tpu.Deconv2D\"(%x, %w0, %w1) {dilations = [1, 1], do_relu = "
          "false, group = "
       << c.groups << " : i64, kernel_shape = [" << c.k << ", " << c.k
       << "], name = \"y\", output_padding = [" << c.outPad << ", " << c.outPad
       << "], pads = [" << c.pad << ", " << c.pad << ", " << c.pad << ", "
       << c.pad << "], relu_limit = -1.0 : f64, strides = [" << c.stride << ", "
       << c.stride << "]} : (" << tensorType(inS, c.prec) << ", "
       << tensorType(wS, c.prec) << ", tensor<" << c.oc << "xf32>) -> "
       << tensorType(outS, c.prec);
    std::vector<float> got =
        interpret(inS, c.prec, x,
                  {{"w", wS, elemName(c.prec), "deconv", w},
                   {"b", {c.oc}, "f32", "compact", b}},
                  op.str(), tensorType(outS, c.prec));

    SimRun sim;
    be::ConvTransposeParams p;
    p.name = "y";
    p.input = sim.tensor(c.prec, inS, &x);
    p.output = sim.tensor(c.prec, outS);
    p.filterAddr = sim.raw(be::reorderConvTransposeFilter(
        w.data(), c.ic, ocg, c.k, c.k, c.prec, c.groups, sim.chip));
    p.biasAddr = sim.fp32(b);
    p.kernelH = p.kernelW = c.k;
    p.strideH = p.strideW = c.stride;
    p.padTop = p.padBottom = p.padLeft = p.padRight = c.pad;
    p.outputPadH = p.outputPadW = c.outPad;
    p.groups = c.groups;
    be::convTranspose2d(sim.em, p);
    std::vector<float> want = sim.run(p.output);
    std::string what = "deconv " + elemName(c.prec);
    expectBitExact(got, want, what);

    if (c.prec != Prec::Fp32)
      continue; // 16-bit products: the top kernel's order rounds alike here
    kernels::ConvParams kp;
    kp.ic = c.ic;
    kp.ih = kp.iw = c.ih;
    kp.oc = c.oc;
    kp.oh = kp.ow = oh;
    kp.kh = kp.kw = c.k;
    kp.sh = kp.sw = c.stride;
    kp.pt = kp.pl = kp.pb = kp.pr = c.pad;
    kp.group = c.groups;
    std::vector<float> top(want.size());
    kernels::convTranspose2d(kp, x.data(), w.data(), b.data(), top.data(), 1);
    EXPECT_GT(countDiff(roundAll(top, c.prec), want), 0u) << what;
  }
}

//===----------------------------------------------------------------------===//
// Matrix multiply
//===----------------------------------------------------------------------===//

/// The text of tpu.MatMul "y" of %x [aS] by %w0 [bS] (stored [N, K] with
/// `trans`) into [oS], with the fp32 bias %w1 of `biasN` elements or none.
std::string matmulOp(const Shape &aS, const Shape &bS, const Shape &oS,
                     Prec prec, bool trans, std::optional<int64_t> biasN) {
  std::ostringstream op;
  op << "\"tpu.MatMul\"(%x, %w0, " << (biasN ? "%w1" : "%none")
     << ") {do_relu = false, name = \"y\", relu_limit = -1.0 : f64, "
        "right_transpose = "
     << (trans ? "true" : "false") << "} : (" << tensorType(aS, prec) << ", "
     << tensorType(bS, prec) << ", "
     << (biasN ? "tensor<" + std::to_string(*biasN) + "xf32>" : "none")
     << ") -> " << tensorType(oS, prec);
  return op.str();
}

/// The backend's matmul "y" of `a` [aS] by `b` [bS] into [oS] (float),
/// on `sim`: its parameters, before the bias and the emission.
be::MatMulParams simMatmul(SimRun &sim, Prec prec, const Shape &aS,
                           const std::vector<float> &a, const Shape &bS,
                           const std::vector<float> &b, const Shape &oS,
                           bool trans) {
  be::MatMulParams p;
  p.name = "y";
  p.left = sim.tensor(prec, aS, &a);
  p.right = sim.tensor(prec, bS, &b);
  p.output = sim.tensor(prec, oS);
  p.rightTransposed = trans;
  return p;
}

TEST_F(TpuChipOrder, MatMul) {
  // [2, 30, K] x [K, 50] (+ fp32 bias), right operand plain and stored
  // transposed.
  for (Prec prec : {Prec::Bf16, Prec::Fp32})
    for (bool trans : {false, true}) {
      int64_t m = 30, k = 150, n = 50;
      Shape aS{2, m, k}, bS = trans ? Shape{n, k} : Shape{k, n}, oS{2, m, n};
      unsigned seed = 200 + unsigned(prec) * 2 + trans;
      std::vector<float> a = wideValues(count(aS), seed, prec);
      std::vector<float> b = wideValues(count(bS), seed + 10, prec);
      std::vector<float> bias =
          uniformValues(n, seed + 20, Prec::Fp32, -40, 40);
      // Cancelling large terms (see plantCancellation): column 0 of the
      // left matrix +B, column K-1 -B, rows 0 and K-1 of the right B.
      const float big = 65536.0f;
      for (int64_t r = 0; r < 2 * m; ++r) {
        a[size_t(r * k)] = big;
        a[size_t(r * k + k - 1)] = -big;
      }
      for (int64_t j = 0; j < n; ++j)
        for (int64_t kk : {int64_t(0), k - 1})
          b[size_t(trans ? j * k + kk : kk * n + j)] = big;
      std::vector<float> got =
          interpret(aS, prec, a,
                    {{"w", bS, elemName(prec), "compact", b},
                     {"b", {n}, "f32", "compact", bias}},
                    matmulOp(aS, bS, oS, prec, trans, n), tensorType(oS, prec));

      SimRun sim;
      be::MatMulParams p = simMatmul(sim, prec, aS, a, bS, b, oS, trans);
      p.biasAddr = sim.fp32(bias);
      be::matmul(sim.em, p);
      std::vector<float> want = sim.run(p.output);
      std::string what = "matmul " + elemName(prec) + (trans ? " NT" : "");
      expectBitExact(got, want, what);

      // K ascending then the bias (nested loops) reproduces the simulator;
      // K descending or the bias first does not.
      auto ref = [&](bool ascending, bool biasFirst) {
        std::vector<float> y(want.size());
        for (int64_t r = 0; r < 2 * m; ++r)
          for (int64_t j = 0; j < n; ++j) {
            float acc = biasFirst ? bias[size_t(j)] : 0.0f;
            for (int64_t t = 0; t < k; ++t) {
              int64_t kk = ascending ? t : k - 1 - t;
              acc = acc + a[size_t(r * k + kk)] *
                              b[size_t(trans ? j * k + kk : kk * n + j)];
            }
            if (!biasFirst)
              acc = acc + bias[size_t(j)];
            y[size_t(r * n + j)] = bt::roundTo(acc, prec);
          }
        return y;
      };
      expectBitExact(ref(true, false), want, what + " (nested-loop reference)");
      EXPECT_GT(countDiff(ref(false, false), want), 0u) << what;
      EXPECT_GT(countDiff(ref(true, true), want), 0u) << what;
    }
}

TEST_F(TpuChipOrder, MatMulOfActivations) {
  // Attention's products: [2, 3, M, K] x [2, 3, K, N], the right matrix of
  // each batch plain (mm2.nn) or stored [N, K] (Q K^T, mm2.nt), alone as a
  // group of one; no bias.
  for (Prec prec : {Prec::Fp16, Prec::Fp32})
    for (bool trans : {false, true}) {
      int64_t m = 17, k = 70, n = 23;
      Shape aS{2, 3, m, k}, oS{2, 3, m, n};
      Shape bS = trans ? Shape{2, 3, n, k} : Shape{2, 3, k, n};
      unsigned seed = 240 + unsigned(prec) * 2 + trans;
      std::vector<float> a = wideValues(count(aS), seed, prec);
      std::vector<float> b = wideValues(count(bS), seed + 10, prec);
      std::vector<float> got =
          interpret(aS, prec, a, {{"w", bS, elemName(prec), "compact", b}},
                    matmulOp(aS, bS, oS, prec, trans, std::nullopt),
                    tensorType(oS, prec));

      SimRun sim;
      be::MatMulParams p = simMatmul(sim, prec, aS, a, bS, b, oS, trans);
      be::matmul(sim.em, p);
      std::string what =
          "matmul of activations " + elemName(prec) + (trans ? " NT" : "");
      expectBitExact(got, sim.run(p.output), what);
      // One mm2 per (batch, head), each 17 rows in the lanes.
      EXPECT_EQ(sim.countTiu(trans ? "sMM2.mm2.nt" : "sMM2.mm2.nn"), 6u)
          << what;
    }
}

/// `n` random integer codes in [lo, hi].
std::vector<float> randomCodes(int64_t n, unsigned seed, float lo, float hi) {
  std::vector<float> v = bt::randomValues(n, seed, lo, hi);
  for (float &x : v)
    x = std::round(x);
  return v;
}

/// The backend's INT8 matmul "y" of codes `a` [aS] by `b` [bS] into int8
/// [oS] on `sim`, requantised as `rq` says with the interpreter's rounding
/// (no bias).
be::MatMulParams simMatmulInt8(SimRun &sim, const Shape &aS,
                               const std::vector<float> &a, const Shape &bS,
                               const std::vector<float> &b, const Shape &oS,
                               bool trans,
                               const tpuc::tpu::chip::RequantRecord &rq) {
  be::MatMulParams p = simMatmul(sim, Prec::Int8, aS, a, bS, b, oS, trans);
  be::MatMulParams::Quant q;
  q.multiplier = rq.multiplier;
  q.rshift = -rq.shift;
  q.zeroPoint = rq.zeroPoint;
  q.round = tpuc::tpu::kInt8RoundMode;
  p.quant = q;
  return p;
}

TEST_F(TpuChipOrder, Int8MatMulOfActivationsTransposed) {
  // INT8 Q K^T alone: int8 (or uint8, as softmax codes) [2, 3, 17, 40] by
  // int8 [2, 3, 23, 40] stored transposed, int32 sums by mm2.nt, one RQ1;
  // the codes equal chip::matmulInt8's (the tpu interpreter's arithmetic).
  for (bool leftSigned : {true, false}) {
    int64_t m = 17, k = 40, n = 23, batches = 6;
    Shape aS{2, 3, m, k}, bS{2, 3, n, k}, oS{2, 3, m, n};
    std::vector<float> a =
        randomCodes(count(aS), 260 + leftSigned, leftSigned ? -128 : 0,
                    leftSigned ? 127 : 255);
    std::vector<float> b = randomCodes(count(bS), 262, -128, 127);
    tpuc::tpu::chip::RequantRecord rq;
    rq.multiplier = 1549556;
    rq.shift = -24;
    rq.zeroPoint = -3;
    std::vector<float> want(size_t(count(oS)));
    for (int64_t i = 0; i < batches; ++i)
      tpuc::tpu::chip::matmulInt8(
          m, k, n, a.data() + i * m * k, b.data() + i * n * k, true, nullptr,
          rq, true, tpuc::tpu::kInt8RoundMode, want.data() + i * m * n);
    SimRun sim;
    be::MatMulParams p = simMatmulInt8(sim, aS, a, bS, b, oS, true, rq);
    p.left.isSigned = leftSigned;
    be::matmul(sim.em, p);
    std::string what =
        std::string("int8 Q K^T, ") + (leftSigned ? "int8" : "uint8") + " left";
    expectBitExact(want, sim.run(p.output), what);
    EXPECT_EQ(sim.countTiu("sMM2.mm2.nt"), size_t(batches)) << what;
  }
}

TEST_F(TpuChipOrder, Int8MatMulInSlicesOfKAndColumns) {
  // INT8 linear layers with an int32 bias that fit no group of one whole:
  // K = 3000 in 4 KiB a lane runs in reduced-axis slices (each an mm2.nn
  // of its K rows into int32, added to the accumulator: exact), N = 70000
  // past the commands' 16 bits in column chunks. The codes equal
  // chip::matmulInt8's (the tpu interpreter's arithmetic).
  struct Case {
    int64_t m, k, n;
    uint64_t lmem;
  };
  for (Case c : {Case{3, 3000, 20, 4096}, Case{2, 8, 70000, 256 * 1024}}) {
    std::string what = "int8 [" + std::to_string(c.m) + ", " +
                       std::to_string(c.k) + "] x [" + std::to_string(c.k) +
                       ", " + std::to_string(c.n) + "]";
    Shape aS{c.m, c.k}, bS{c.k, c.n}, oS{c.m, c.n};
    std::vector<float> a = randomCodes(count(aS), 270, -128, 127);
    std::vector<float> b = randomCodes(count(bS), 271, -128, 127);
    std::vector<float> biasF = bt::randomValues(size_t(c.n), 272, -5000, 5000);
    std::vector<int32_t> bias(biasF.begin(), biasF.end());
    tpuc::tpu::chip::RequantRecord rq;
    rq.multiplier = 1549556;
    rq.shift = -28;
    rq.zeroPoint = 5;
    std::vector<float> want(size_t(count(oS)));
    tpuc::tpu::chip::matmulInt8(c.m, c.k, c.n, a.data(), b.data(), false,
                                bias.data(), rq, true,
                                tpuc::tpu::kInt8RoundMode, want.data());
    SimRun sim(c.lmem);
    be::MatMulParams p = simMatmulInt8(sim, aS, a, bS, b, oS, false, rq);
    std::vector<uint8_t> bb(bias.size() * 4);
    std::memcpy(bb.data(), bias.data(), bb.size());
    p.quant->biasAddr = sim.raw(bb);
    be::matmul(sim.em, p);
    expectBitExact(want, sim.run(p.output), what);
    // More than one product: K slices, or two column chunks.
    EXPECT_GT(sim.countTiu("sMM2.mm2.nn") + sim.countTiu("sMM.mm.normal"), 1u)
        << what;
  }
}

/// ", k_shares = [...]" for the reduced-axis shares the emitter noted (the
/// attribute codegen sets, tpu::kKSharesAttr); checks that there are some.
std::string kSharesText(be::CmdEmitter &em, const std::string &what) {
  std::vector<be::ReducedShares> shares = em.takeReducedShares();
  EXPECT_FALSE(shares.empty()) << what << ": no reduced-axis slices";
  std::string text = ", k_shares = [";
  for (size_t i = 0; i < shares.size(); ++i) {
    EXPECT_EQ(shares[i].op, "y") << what;
    text += std::string(i ? ", " : "") +
            "array<i64: " + std::to_string(shares[i].colBegin) + ", " +
            std::to_string(shares[i].colEnd);
    for (int64_t b : shares[i].bounds)
      text += ", " + std::to_string(b);
    text += ">";
  }
  return text + "]";
}

TEST_F(TpuChipOrder, FloatMatMulInReducedAxisSlices) {
  // Float linear layers whose K fits no group of one whole (3000 in 4 KiB a
  // lane; with 600 columns also cut into column chunks): each slice's
  // products are summed from +0 and added to the accumulator, which rounds
  // otherwise than one pass over K. The interpreter given the shares the
  // emitter noted (k_shares) equals the commands bit for bit; without them
  // it does not.
  struct Case {
    int64_t m, k, n;
    Prec prec;
    bool trans;
  };
  for (Case c : {Case{3, 3000, 20, Prec::Fp32, false},
                 Case{2, 3000, 600, Prec::Fp32, true},
                 Case{2, 2500, 400, Prec::Fp16, false}}) {
    std::string what = "matmul " + elemName(c.prec) + " [" +
                       std::to_string(c.m) + ", " + std::to_string(c.k) +
                       "] x [" + std::to_string(c.k) + ", " +
                       std::to_string(c.n) + "]";
    Shape aS{c.m, c.k}, bS = c.trans ? Shape{c.n, c.k} : Shape{c.k, c.n},
                        oS{c.m, c.n};
    std::vector<float> a = wideValues(count(aS), 280, c.prec);
    std::vector<float> b = wideValues(count(bS), 281, c.prec);
    std::vector<float> bias = uniformValues(c.n, 282, Prec::Fp32, -40, 40);
    SimRun sim(4096);
    be::MatMulParams p = simMatmul(sim, c.prec, aS, a, bS, b, oS, c.trans);
    p.biasAddr = sim.fp32(bias);
    be::matmul(sim.em, p);
    std::string shares = kSharesText(sim.em, what);
    if (c.n == 600)
      EXPECT_NE(shares.find("array<i64: 0, " + std::to_string(c.n / 4)),
                std::string::npos)
          << what << ": expected four column chunks, got" << shares;
    std::vector<float> want = sim.run(p.output);
    std::vector<Weight> w = {{"w", bS, elemName(c.prec), "compact", b},
                             {"b", {c.n}, "f32", "compact", bias}};
    std::string op = matmulOp(aS, bS, oS, c.prec, c.trans, c.n);
    std::string withShares = op;
    withShares.insert(withShares.find("} :"), shares);
    expectBitExact(
        interpret(aS, c.prec, a, w, withShares, tensorType(oS, c.prec)), want,
        what);
    EXPECT_GT(countDiff(interpret(aS, c.prec, a, w, op, tensorType(oS, c.prec)),
                        want),
              0u)
        << what << ": one pass over K gives the same bits";
  }
}

//===----------------------------------------------------------------------===//
// Pooling and reductions
//===----------------------------------------------------------------------===//

TEST_F(TpuChipOrder, AvgPool) {
  // Padding that does not count (sums divided by real counts) and a plain
  // window (sum times fl32(1/9)).
  for (bool includePad : {false, true}) {
    Prec prec = includePad ? Prec::Fp32 : Prec::Bf16;
    int64_t pad = includePad ? 0 : 1, stride = includePad ? 1 : 2;
    Shape inS{1, 70, 10, 11};
    int64_t oh = (10 + 2 * pad - 3) / stride + 1,
            ow = (11 + 2 * pad - 3) / stride + 1;
    Shape outS{1, 70, oh, ow};
    std::vector<float> x = wideValues(count(inS), 300 + includePad, prec);
    std::ostringstream op;
    op << "\"tpu.Pool2D\"(%x) {count_include_pad = "
       << (includePad ? "true" : "false")
       << ", do_relu = false, kernel_shape = [3, 3], name = \"y\", pads = ["
       << pad << ", " << pad << ", " << pad << ", " << pad
       << "], pool_mode = \"avg\", relu_limit = -1.0 : f64, strides = ["
       << stride << ", " << stride << "]} : (" << tensorType(inS, prec)
       << ") -> " << tensorType(outS, prec);
    std::vector<float> got =
        interpret(inS, prec, x, {}, op.str(), tensorType(outS, prec));

    SimRun sim;
    be::PoolParams p;
    p.name = "y";
    p.input = sim.tensor(prec, inS, &x);
    p.output = sim.tensor(prec, outS);
    p.kind = be::PoolKind::Avg;
    p.kernelH = p.kernelW = 3;
    p.strideH = p.strideW = stride;
    p.padTop = p.padBottom = p.padLeft = p.padRight = pad;
    p.countIncludePad = includePad;
    be::pool2d(sim.em, p);
    std::vector<float> want = sim.run(p.output);
    std::string what = std::string("avg pool ") + elemName(prec);
    expectBitExact(got, want, what);
    if (!includePad)
      continue; // the top kernel divides by the real count too

    kernels::PoolParams kp;
    kp.inShape = inS;
    kp.outShape = outS;
    kp.kernel = {3, 3};
    kp.strides = {stride, stride};
    kp.dilations = {1, 1};
    kp.pads = {pad, pad, pad, pad};
    kp.countIncludePad = includePad;
    std::vector<float> top(want.size());
    kernels::avgPool(kp, x.data(), top.data(), 1);
    EXPECT_GT(countDiff(roundAll(top, prec), want), 0u) << what;
  }
}

/// A reduction "y" of %x in `prec`: the tpu.Reduce text (with `extra`
/// attributes) and the backend's commands for it on `sim`.
struct ReduceCase {
  const char *mode;
  Shape in, axes, out;
  be::ReduceKind kind;

  std::string op(Prec prec, const std::string &extra = "") const {
    std::string a = "[";
    for (size_t i = 0; i < axes.size(); ++i)
      a += (i ? ", " : "") + std::to_string(axes[i]);
    return std::string("\"tpu.Reduce\"(%x) {axes = ") + a + "], mode = \"" +
           mode + "\", name = \"y\"" + extra + "} : (" + tensorType(in, prec) +
           ") -> " + tensorType(out, prec);
  }
  be::GTensor emit(SimRun &sim, Prec prec, const std::vector<float> &x) const {
    be::ReduceParams p;
    p.name = "y";
    p.input = sim.tensor(prec, in, &x);
    p.output = sim.tensor(prec, out);
    p.kind = kind;
    p.axes = axes;
    be::reduce(sim.em, p);
    return p.output;
  }
};

TEST_F(TpuChipOrder, Reduce) {
  // Mean along the last axis (D along W), sum over two adjacent axes with
  // an inner axis (D along H), max.
  const ReduceCase cases[] = {
      {"ReduceMean", {1, 40, 120}, {2}, {1, 40, 1}, be::ReduceKind::Mean},
      {"ReduceSum", {2, 8, 16, 5}, {1, 2}, {2, 1, 1, 5}, be::ReduceKind::Sum},
      {"ReduceMax", {3, 50, 7}, {1}, {3, 1, 7}, be::ReduceKind::Max},
  };
  unsigned seed = 400;
  for (const ReduceCase &c : cases) {
    Prec prec = Prec::Bf16;
    std::vector<float> x = wideValues(count(c.in), seed++, prec);
    std::vector<float> got =
        interpret(c.in, prec, x, {}, c.op(prec), tensorType(c.out, prec));
    SimRun sim;
    std::vector<float> want = sim.run(c.emit(sim, prec, x));
    expectBitExact(got, want, c.mode);
  }
}

TEST_F(TpuChipOrder, ReduceInReducedAxisSlices) {
  // Reductions whose extent fits no group of one whole in 16 KiB a lane:
  // 20000 along W, 30000 along H of a strided view. A sum or mean is summed
  // share by share (a mean's shares each scaled by the whole extent), then
  // added; the interpreter given the shares (k_shares) equals the commands
  // bit for bit, without them it does not. Max and min need no shares.
  const ReduceCase cases[] = {
      {"ReduceSum", {4, 20000}, {1}, {4, 1}, be::ReduceKind::Sum},
      {"ReduceMean", {3, 30000, 5}, {1}, {3, 1, 5}, be::ReduceKind::Mean},
      {"ReduceMax", {4, 20000}, {1}, {4, 1}, be::ReduceKind::Max},
  };
  unsigned seed = 420;
  for (const ReduceCase &c : cases) {
    Prec prec = Prec::Fp32;
    std::vector<float> x = wideValues(count(c.in), seed++, prec);
    SimRun sim(16 * 1024);
    be::GTensor out = c.emit(sim, prec, x);
    std::string shares = kSharesText(sim.em, c.mode);
    std::vector<float> want = sim.run(out);
    std::string type = tensorType(c.out, prec);
    expectBitExact(interpret(c.in, prec, x, {}, c.op(prec, shares), type), want,
                   c.mode);
    size_t differ =
        countDiff(interpret(c.in, prec, x, {}, c.op(prec), type), want);
    if (c.kind == be::ReduceKind::Max)
      EXPECT_EQ(differ, 0u) << c.mode;
    else
      EXPECT_GT(differ, 0u) << c.mode << ": one pass gives the same bits";
  }
}

TEST_F(TpuChipOrder, BadKSharesAreErrors) {
  // Shares that do not cover the reduced index from 0 to its end, or
  // columns past the result's, fail the op with the attribute named.
  ReduceCase c{"ReduceSum", {2, 100}, {1}, {2, 1}, be::ReduceKind::Sum};
  std::vector<float> x = wideValues(count(c.in), 430, Prec::Fp32);
  for (const char *bad :
       {"[array<i64: 0, 0, 0, 50, 99>]", "[array<i64: 0, 0, 0, 60, 50, 100>]",
        "[array<i64: 0, 5, 0, 100>]", "[array<i64: 0, 0, 100>]",
        "[array<i64: 0, 0, 0, 50, 100>, array<i64: 0, 0, 0, 100>]"}) {
    errors.clear();
    expectFailure = true;
    std::vector<float> got =
        interpret(c.in, Prec::Fp32, x, {},
                  c.op(Prec::Fp32, std::string(", k_shares = ") + bad),
                  tensorType(c.out, Prec::Fp32));
    expectFailure = false;
    EXPECT_TRUE(got.empty()) << bad;
    ASSERT_FALSE(errors.empty()) << bad;
    EXPECT_NE(errors.back().find("k_shares"), std::string::npos)
        << bad << ": " << errors.back();
  }
}

TEST_F(TpuChipOrder, SoftmaxAndLayerNorm) {
  // Softmax along the last axis and along a middle one (inner > 1),
  // log-softmax in f32, layer norm with scale and bias.
  struct Case {
    Prec prec;
    Shape shape;
    int64_t axis;
    bool log;
  };
  // Along C of (1, 19, 8, 16): a (1, 64, 19, 2) view normalised along H;
  // along H of a 4-D tensor of 64 channels as it is, of 5 through the
  // (10, 9, 7, 1) view; a prime count of elements after the axis (67)
  // along W of (1, 67, 1, 6).
  const Case cases[] = {{Prec::Bf16, {1, 30, 100}, 2, false},
                        {Prec::Fp16, {2, 12, 9}, 1, false},
                        {Prec::Fp32, {1, 30, 100}, 2, true},
                        {Prec::Fp16, {1, 19, 8, 16}, 1, false},
                        {Prec::Fp32, {1, 19, 8, 16}, 1, true},
                        {Prec::Bf16, {2, 5, 7, 9}, 2, false},
                        {Prec::Fp16, {1, 64, 5, 3}, 2, false},
                        {Prec::Fp16, {1, 6, 67}, 1, false}};
  unsigned seed = 500;
  for (const Case &c : cases) {
    std::vector<float> x =
        uniformValues(count(c.shape), seed++, c.prec, -12, 12);
    std::string op = "\"tpu.Softmax\"(%x) {axis = " + std::to_string(c.axis) +
                     " : i64, log = " + (c.log ? "true" : "false") +
                     ", name = \"y\"} : (" + tensorType(c.shape, c.prec) +
                     ") -> " + tensorType(c.shape, c.prec);
    std::vector<float> got =
        interpret(c.shape, c.prec, x, {}, op, tensorType(c.shape, c.prec));
    SimRun sim;
    be::SoftmaxParams p;
    p.name = "y";
    p.input = sim.tensor(c.prec, c.shape, &x);
    p.output = sim.tensor(c.prec, c.shape);
    p.axis = c.axis;
    p.log = c.log;
    be::softmax(sim.em, p);
    std::vector<float> want = sim.run(p.output);
    std::string what =
        std::string(c.log ? "log-softmax " : "softmax ") + elemName(c.prec);
    expectBitExact(got, want, what);
    if (c.prec == Prec::Fp32) {
      // libm's exp / log differ from the backend's polynomials.
      int64_t outer = 1, inner = 1;
      for (int64_t i = 0; i < c.axis; ++i)
        outer *= c.shape[size_t(i)];
      for (size_t i = size_t(c.axis) + 1; i < c.shape.size(); ++i)
        inner *= c.shape[i];
      std::vector<float> top(want.size());
      kernels::softmax(outer, c.shape[size_t(c.axis)], inner, x.data(), c.log,
                       top.data());
      EXPECT_GT(countDiff(top, want), 0u) << what;
    }
  }

  Shape shape{1, 30, 96};
  for (Prec prec : {Prec::Bf16, Prec::Fp32}) {
    std::vector<float> x = uniformValues(count(shape), seed++, prec, -5, 9);
    std::vector<float> g = uniformValues(96, seed++, Prec::Fp32, 0.5f, 2);
    std::vector<float> b = uniformValues(96, seed++, Prec::Fp32, -1, 1);
    std::string op =
        "\"tpu.LayerNorm\"(%x, %w0, %w1) {axis = 2 : i64, epsilon = "
        "1.0e-05 : f64, name = \"y\"} : (" +
        tensorType(shape, prec) + ", tensor<96xf32>, tensor<96xf32>) -> " +
        tensorType(shape, prec);
    std::vector<float> got = interpret(
        shape, prec, x,
        {{"g", {96}, "f32", "compact", g}, {"b", {96}, "f32", "compact", b}},
        op, tensorType(shape, prec));
    SimRun sim;
    be::LayerNormParams p;
    p.name = "y";
    p.input = sim.tensor(prec, shape, &x);
    p.output = sim.tensor(prec, shape);
    p.axis = 2;
    p.epsilon = 1e-5f;
    p.scaleAddr = sim.fp32(g);
    p.biasAddr = sim.fp32(b);
    be::layerNorm(sim.em, p);
    std::vector<float> want = sim.run(p.output);
    std::string what = "layer norm " + elemName(prec);
    expectBitExact(got, want, what);
    if (prec == Prec::Fp32) {
      std::vector<float> top(want.size());
      kernels::layerNorm(30, 96, x.data(), g.data(), b.data(), 1e-5,
                         top.data());
      EXPECT_GT(countDiff(top, want), 0u) << what;
    }
  }
}

//===----------------------------------------------------------------------===//
// Activations and powers
//===----------------------------------------------------------------------===//

TEST_F(TpuChipOrder, Active) {
  // Transcendentals in f32 (their polynomials show in every bit); the
  // functions the backend computes in the tensor type in bf16 (immediates
  // of that type: 0.2 is 0.2001953125 in bf16).
  struct Case {
    const char *mode, *coeffs;
    be::UnaryKind kind;
    float alpha, beta, lo, hi;
    Prec prec;
    double (*libm)(double);
  };
  auto sig = [](double x) { return 1 / (1 + std::exp(-x)); };
  auto silu = [](double x) { return x / (1 + std::exp(-x)); };
  auto gelu = [](double x) {
    return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  };
  auto hsig = [](double x) { return std::clamp(0.2 * x + 0.5, 0.0, 1.0); };
  auto hswish = [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); };
  auto leaky = [](double x) { return x < 0 ? 0.2 * x : x; };
  const Case cases[] = {
      {"exp", "", be::UnaryKind::Exp, 0, 0, -20, 20, Prec::Fp32, std::exp},
      {"log", "", be::UnaryKind::Log, 0, 0, 1e-3f, 100, Prec::Fp32, std::log},
      {"sqrt", "", be::UnaryKind::Sqrt, 0, 0, 0, 100, Prec::Fp32, std::sqrt},
      {"sigmoid", "", be::UnaryKind::Sigmoid, 0, 0, -12, 12, Prec::Fp32, sig},
      {"tanh", "", be::UnaryKind::Tanh, 0, 0, -5, 5, Prec::Fp32, std::tanh},
      {"erf", "", be::UnaryKind::Erf, 0, 0, -3, 3, Prec::Fp32, std::erf},
      {"gelu", "", be::UnaryKind::Gelu, 0, 0, -5, 5, Prec::Fp32, gelu},
      {"silu", "", be::UnaryKind::Silu, 0, 0, -10, 10, Prec::Fp32, silu},
      {"reciprocal", "", be::UnaryKind::Reciprocal, 0, 0, 0.1f, 9, Prec::Bf16,
       nullptr},
      {"hard_sigmoid", "2.000000e-01, 5.000000e-01", be::UnaryKind::HardSigmoid,
       0.2f, 0.5f, -6, 6, Prec::Bf16, hsig},
      {"hard_swish", "", be::UnaryKind::HardSwish, 0, 0, -6, 6, Prec::Bf16,
       hswish},
      {"leaky_relu", "2.000000e-01", be::UnaryKind::LeakyRelu, 0.2f, 0, -9, 9,
       Prec::Bf16, leaky},
      {"sigmoid", "", be::UnaryKind::Sigmoid, 0, 0, -12, 12, Prec::Bf16,
       nullptr},
  };
  Shape shape{1, 64, 1, 300};
  unsigned seed = 600;
  for (const Case &c : cases) {
    std::vector<float> x =
        uniformValues(count(shape), seed++, c.prec, c.lo, c.hi);
    std::string op = std::string("\"tpu.Active\"(%x) {coeffs = [") + c.coeffs +
                     "], mode = \"" + c.mode + "\", name = \"y\"} : (" +
                     tensorType(shape, c.prec) + ") -> " +
                     tensorType(shape, c.prec);
    std::vector<float> got =
        interpret(shape, c.prec, x, {}, op, tensorType(shape, c.prec));
    SimRun sim;
    be::UnaryParams p;
    p.name = "y";
    p.input = sim.tensor(c.prec, shape, &x);
    p.output = sim.tensor(c.prec, shape);
    p.fn.kind = c.kind;
    p.fn.alpha = c.alpha;
    p.fn.beta = c.beta;
    be::unary(sim.em, p);
    std::vector<float> want = sim.run(p.output);
    std::string what = std::string(c.mode) + " " + elemName(c.prec);
    expectBitExact(got, want, what);
    // The exact function, rounded once, differs somewhere (not checked
    // where both are one correctly rounded fp32 operation, or where bf16
    // rounding hides the polynomial's few fp32 ulps).
    if (!c.libm)
      continue;
    std::vector<float> exact(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      exact[i] = bt::roundTo(float(c.libm(double(x[i]))), c.prec);
    EXPECT_GT(countDiff(exact, want), 0u) << what;
  }
}

TEST_F(TpuChipOrder, PowConst) {
  // x ^ c with a one-element weight c runs as the unary power: binary
  // powering for integers (x^3 = x * x^2 rounded per step), rsqrt for 0.5,
  // exp(c log x) otherwise.
  Shape shape{1, 64, 1, 200};
  unsigned seed = 700;
  for (float c : {3.0f, -2.0f, 0.5f, 1.7f}) {
    Prec prec = Prec::Fp32;
    std::vector<float> x = uniformValues(count(shape), seed++, prec, 0.1f, 9);
    std::string op = "\"tpu.Pow\"(%x, %w0) {do_relu = false, name = \"y\", "
                     "relu_limit = -1.0 : f64} : (" +
                     tensorType(shape, prec) + ", tensor<1xf32>) -> " +
                     tensorType(shape, prec);
    std::vector<float> got =
        interpret(shape, prec, x, {{"c", {1}, "f32", "compact", {c}}}, op,
                  tensorType(shape, prec));
    SimRun sim;
    be::UnaryParams p;
    p.name = "y";
    p.input = sim.tensor(prec, shape, &x);
    p.output = sim.tensor(prec, shape);
    p.fn.kind = be::UnaryKind::Pow;
    p.fn.alpha = c;
    be::unary(sim.em, p);
    std::vector<float> want = sim.run(p.output);
    std::string what = "pow " + std::to_string(c);
    expectBitExact(got, want, what);
    std::vector<float> exact(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      exact[i] = std::pow(x[i], c);
    EXPECT_GT(countDiff(exact, want), 0u) << what;
  }
}

} // namespace
