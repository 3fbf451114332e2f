//===- MoveTest.cpp - permute, concat, slice, pad, expand, gather, resize
//--===//
//
// Data movement is exact: every output element must equal the input
// element the ONNX definition selects (references computed here by index
// arithmetic; linear resize by the two-tap formula in double).
//
//===----------------------------------------------------------------------===//

#include "BackendTestUtil.h"

using namespace tpu;
using namespace tpu::backend;
using namespace tpu::backend::test;

namespace {

/// Runs `emit` and compares one output with `want` exactly.
void runExact(const std::function<void(CmdEmitter &)> &emit,
              const std::vector<std::pair<GTensor, std::vector<float>>> &ins,
              const GTensor &out, const std::vector<float> &want,
              uint64_t lmem = 0) {
  KernelRun r;
  if (lmem)
    r.chip.lmemBytes = lmem;
  r.emit = emit;
  r.setup = [&](sim::MachineState &m) {
    for (auto &[t, v] : ins)
      writeTensor(m, t, v);
  };
  r.check = [&](const sim::MachineState &m, const std::string &what) {
    expectClose(readTensor(m, out), want, 0, 0, what);
  };
  r.run();
}

} // namespace

TEST(Permute, FourDimsNchwToNhwcF16) {
  GlobalAlloc ga(isa::ChipParams::bm1684x());
  std::vector<int64_t> s{2, 3, 4, 5}, order{0, 2, 3, 1}, os{2, 4, 5, 3};
  GTensor in = ga.tensor(Prec::Fp16, s), out = ga.tensor(Prec::Fp16, os);
  auto x = randomValues(size_t(count(s)), 1);
  for (float &v : x)
    v = roundTo(v, Prec::Fp16);
  std::vector<float> want(x.size());
  auto st = denseStrides(s);
  for (int64_t i = 0; i < count(os); ++i) {
    auto idx = unflat(i, os);
    int64_t src = 0;
    for (size_t k = 0; k < 4; ++k)
      src += idx[k] * st[size_t(order[k])];
    want[size_t(i)] = x[size_t(src)];
  }
  runExact(
      [&](CmdEmitter &em) {
        permute(em, {"p", in, out, order});
      },
      {{in, x}}, out, want);
}

TEST(Permute, SixDims) {
  GlobalAlloc ga(isa::ChipParams::bm1684x());
  std::vector<int64_t> s{2, 3, 2, 2, 3, 2}, order{5, 0, 3, 1, 4, 2};
  std::vector<int64_t> os;
  for (int64_t o : order)
    os.push_back(s[size_t(o)]);
  GTensor in = ga.tensor(Prec::Fp32, s), out = ga.tensor(Prec::Fp32, os);
  auto x = randomValues(size_t(count(s)), 2);
  std::vector<float> want(x.size());
  auto st = denseStrides(s);
  for (int64_t i = 0; i < count(os); ++i) {
    auto idx = unflat(i, os);
    int64_t src = 0;
    for (size_t k = 0; k < 6; ++k)
      src += idx[k] * st[size_t(order[k])];
    want[size_t(i)] = x[size_t(src)];
  }
  runExact(
      [&](CmdEmitter &em) {
        permute(em, {"p", in, out, order});
      },
      {{in, x}}, out, want);
}

namespace {

struct TransposeCase {
  const char *name;
  std::vector<int64_t> shape, order;
  Prec prec;
  /// GDMA commands expected, end command included: two per matrix tile
  /// (transposing load, store), or 2 for the strided copy.
  size_t gdma;
  uint64_t lmem = 0;
};

class PermuteTranspose : public ::testing::TestWithParam<TransposeCase> {};

} // namespace

// Permutes that are batches of matrix transposes once unit dims are dropped
// and neighbouring axes merged run as DMA_matrix transposing loads and
// matrix stores ([P, A, B] -> [P, B, A]: P x tiles pairs of commands); the
// others stay one strided copy. Every element must land where the index
// arithmetic puts it.
TEST_P(PermuteTranspose, ElementsAndCommands) {
  const TransposeCase &c = GetParam();
  GlobalAlloc ga(isa::ChipParams::bm1684x());
  std::vector<int64_t> os;
  for (int64_t o : c.order)
    os.push_back(c.shape[size_t(o)]);
  GTensor in = ga.tensor(c.prec, c.shape), out = ga.tensor(c.prec, os);
  in.isSigned = out.isSigned = true;
  auto x = randomValues(size_t(count(c.shape)), 5);
  for (float &v : x)
    v = c.prec == Prec::Int8 ? std::round(v * 100) : roundTo(v, c.prec);
  std::vector<float> want(x.size());
  auto st = denseStrides(c.shape);
  for (int64_t i = 0; i < count(os); ++i) {
    auto idx = unflat(i, os);
    int64_t src = 0;
    for (size_t k = 0; k < os.size(); ++k)
      src += idx[k] * st[size_t(c.order[k])];
    want[size_t(i)] = x[size_t(src)];
  }
  KernelRun r;
  if (c.lmem)
    r.chip.lmemBytes = c.lmem;
  r.emit = [&](CmdEmitter &em) { permute(em, {"p", in, out, c.order}); };
  r.setup = [&](sim::MachineState &m) { writeTensor(m, in, x); };
  r.check = [&](const sim::MachineState &m, const std::string &what) {
    expectClose(readTensor(m, out), want, 0, 0, what);
  };
  StreamStats stats = r.run();
  EXPECT_EQ(stats.gdma, c.gdma);
  EXPECT_EQ(stats.tiu, 1u); // its end command only
}

INSTANTIATE_TEST_SUITE_P(
    Move, PermuteTranspose,
    ::testing::Values(
        // PP-OCR rec's [0, 2, 1] of (1, 120, 40): one 120 x 40 transpose.
        TransposeCase{"rec3d", {1, 120, 40}, {0, 2, 1}, Prec::Fp16, 3},
        // Unit dims dropped: (1, 1, 40, 120) [0, 3, 1, 2] is 40 x 120.
        TransposeCase{"unitDims", {1, 1, 40, 120}, {0, 3, 1, 2}, Prec::Fp32, 3},
        // Eight heads: P = 8 matrices of 40 x 15.
        TransposeCase{"heads", {1, 8, 40, 15}, {0, 1, 3, 2}, Prec::Fp16, 17},
        // NCHW -> NHWC merges H and W: P = 2, 3 x 20; int8 codes.
        TransposeCase{"nhwc", {2, 3, 4, 5}, {0, 2, 3, 1}, Prec::Int8, 5},
        // More columns than lanes (A = 130: w = 3 per lane, 44 lanes) and
        // 2 KiB of local memory per lane: a row takes 3 fp32 = 12 bytes,
        // 64 with the n stride's alignment, so 32 of the 300 rows fit a
        // tile: 10 tiles.
        TransposeCase{
            "tiled", {130, 300}, {1, 0}, Prec::Fp32, 1 + 2 * 10, 2048},
        // Not a matrix transpose: one strided copy.
        TransposeCase{
            "middleSwap", {1, 8, 40, 15}, {0, 2, 1, 3}, Prec::Fp16, 2}),
    [](const ::testing::TestParamInfo<TransposeCase> &i) {
      return std::string(i.param.name);
    });

TEST(Concat, MiddleAxis) {
  GlobalAlloc ga(isa::ChipParams::bm1684x());
  GTensor a = ga.tensor(Prec::Fp32, {2, 3, 4}),
          b = ga.tensor(Prec::Fp32, {2, 1, 4}),
          o = ga.tensor(Prec::Fp32, {2, 4, 4});
  auto av = randomValues(24, 3), bv = randomValues(8, 4);
  std::vector<float> want;
  for (int n = 0; n < 2; ++n) {
    want.insert(want.end(), av.begin() + n * 12, av.begin() + n * 12 + 12);
    want.insert(want.end(), bv.begin() + n * 4, bv.begin() + n * 4 + 4);
  }
  runExact(
      [&](CmdEmitter &em) {
        concat(em, {"cat", {a, b}, o, 1});
      },
      {{a, av}, {b, bv}}, o, want);
}

// tpu-address-assign places a concat input inside the output when it is a
// contiguous block there (every dim before the axis 1): such an input is
// not copied, the others are, and the result is the concat either way.
TEST(Concat, InputAlreadyInPlaceIsNotCopied) {
  GlobalAlloc ga(isa::ChipParams::bm1684x());
  GTensor o = ga.tensor(Prec::Fp16, {1, 5, 4, 8});
  GTensor elsewhere = ga.tensor(Prec::Fp16, {1, 3, 4, 8}),
          b = ga.tensor(Prec::Fp16, {1, 2, 4, 8});
  GTensor inPlace = elsewhere;
  inPlace.addr = o.addr; // channels 0..2 of the output
  auto av = randomValues(96, 11), bv = randomValues(64, 12);
  for (float &v : av)
    v = roundTo(v, Prec::Fp16);
  for (float &v : bv)
    v = roundTo(v, Prec::Fp16);
  std::vector<float> want = av;
  want.insert(want.end(), bv.begin(), bv.end());
  auto gdmaCommands = [&](const GTensor &a) {
    KernelRun r;
    r.emit = [&](CmdEmitter &em) { concat(em, {"cat", {a, b}, o, 1}); };
    r.setup = [&](sim::MachineState &m) {
      writeTensor(m, a, av);
      writeTensor(m, b, bv);
    };
    r.check = [&](const sim::MachineState &m, const std::string &what) {
      expectClose(readTensor(m, o), want, 0, 0, what);
    };
    return r.run().gdma;
  };
  size_t copied = gdmaCommands(elsewhere), kept = gdmaCommands(inPlace);
  // b's copies are the same in both; a's are gone.
  EXPECT_LT(kept, copied);
  EXPECT_EQ(kept - 1, (copied - 1) / 2) << "copied " << copied;
}

TEST(Slice, StepsIncludingNegative) {
  GlobalAlloc ga(isa::ChipParams::bm1684x());
  std::vector<int64_t> s{4, 10, 6};
  GTensor in = ga.tensor(Prec::Fp32, s);
  // [1:4:2, 9:0:-3, 0:6:1]
  std::vector<int64_t> starts{1, 9, 0}, steps{2, -3, 1}, os{2, 3, 6};
  GTensor out = ga.tensor(Prec::Fp32, os);
  auto x = randomValues(size_t(count(s)), 5);
  std::vector<float> want;
  auto st = denseStrides(s);
  for (int64_t i = 0; i < count(os); ++i) {
    auto idx = unflat(i, os);
    int64_t src = 0;
    for (size_t k = 0; k < 3; ++k)
      src += (starts[k] + idx[k] * steps[k]) * st[k];
    want.push_back(x[size_t(src)]);
  }
  runExact(
      [&](CmdEmitter &em) {
        slice(em, {"s", in, out, starts, steps});
      },
      {{in, x}}, out, want);
}

TEST(Pad, ConstantValueBF16) {
  GlobalAlloc ga(isa::ChipParams::bm1684x());
  GTensor in = ga.tensor(Prec::Bf16, {1, 2, 3, 3}),
          out = ga.tensor(Prec::Bf16, {1, 3, 4, 6});
  std::vector<int64_t> pads{0, 1, 0, 2, 0, 0, 1, 1};
  auto x = randomValues(18, 6);
  for (float &v : x)
    v = roundTo(v, Prec::Bf16);
  std::vector<float> want(size_t(out.numElements()), -2.5f);
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t h = 0; h < 3; ++h)
      for (int64_t w = 0; w < 3; ++w)
        want[size_t(((c + 1) * 4 + h) * 6 + w + 2)] =
            x[size_t((c * 3 + h) * 3 + w)];
  runExact(
      [&](CmdEmitter &em) {
        pad(em, {"pad", in, out, pads, -2.5f});
      },
      {{in, x}}, out, want);
}

TEST(Pad, ReflectAndEdge) {
  for (PadMode mode : {PadMode::Reflect, PadMode::Edge}) {
    GlobalAlloc ga(isa::ChipParams::bm1684x());
    std::vector<int64_t> s{2, 4, 5}, pads{0, 2, 3, 1, 3, 1};
    std::vector<int64_t> os{3, 9, 9};
    GTensor in = ga.tensor(Prec::Fp32, s), out = ga.tensor(Prec::Fp32, os);
    auto x = randomValues(40, 12);
    std::vector<float> want;
    auto src = [&](int64_t o, int64_t pb, int64_t n) {
      int64_t i = o - pb;
      if (mode == PadMode::Edge)
        return std::clamp<int64_t>(i, 0, n - 1);
      if (i < 0)
        return -i;
      if (i >= n)
        return 2 * (n - 1) - i;
      return i;
    };
    for (int64_t a = 0; a < 3; ++a)
      for (int64_t b = 0; b < 9; ++b)
        for (int64_t c = 0; c < 9; ++c)
          want.push_back(
              x[size_t((src(a, 0, 2) * 4 + src(b, 2, 4)) * 5 + src(c, 3, 5))]);
    runExact(
        [&](CmdEmitter &em) {
          pad(em, {"pad", in, out, pads, 0.0f, mode});
        },
        {{in, x}}, out, want);
  }
}

TEST(BroadcastTo, ExpandAndTile) {
  GlobalAlloc ga(isa::ChipParams::bm1684x());
  GTensor in = ga.tensor(Prec::Fp32, {3, 1, 2}),
          out = ga.tensor(Prec::Fp32, {2, 3, 4, 4});
  auto x = randomValues(6, 7);
  std::vector<float> want(size_t(out.numElements()));
  for (int64_t i = 0; i < out.numElements(); ++i) {
    auto idx = unflat(i, {2, 3, 4, 4});
    want[size_t(i)] = x[size_t(idx[1] * 2 + idx[3] % 2)];
  }
  runExact(
      [&](CmdEmitter &em) {
        broadcastTo(em, {"bc", in, out});
      },
      {{in, x}}, out, want);
}

TEST(Copy, ReshapeLarge) {
  GlobalAlloc ga(isa::ChipParams::bm1684x());
  GTensor in = ga.tensor(Prec::Fp16, {300, 700}),
          out = ga.tensor(Prec::Fp16, {210000});
  auto x = randomValues(210000, 8);
  for (float &v : x)
    v = roundTo(v, Prec::Fp16);
  runExact([&](CmdEmitter &em) { copy(em, "cp", in, out); }, {{in, x}}, out, x);
}

TEST(Gather, NegativeIndicesMiddleAxis) {
  KernelRun r;
  GlobalAlloc ga(r.chip);
  GTensor in = ga.tensor(Prec::Fp32, {3, 7, 5});
  GTensor idx = ga.tensor(Prec::Int32, {2, 2});
  GTensor out = ga.tensor(Prec::Fp32, {3, 2, 2, 5});
  auto x = randomValues(105, 9);
  std::vector<int32_t> iv{6, -1, 0, -7};
  std::vector<float> want;
  for (int a = 0; a < 3; ++a)
    for (int32_t k : iv) {
      int32_t j = k < 0 ? k + 7 : k;
      for (int b = 0; b < 5; ++b)
        want.push_back(x[size_t((a * 7 + j) * 5 + b)]);
    }
  r.emit = [&](CmdEmitter &em) { gather(em, {"g", in, idx, out, 1}); };
  r.setup = [&](sim::MachineState &m) {
    writeTensor(m, in, x);
    m.gmem.write(idx.addr, iv.data(), iv.size() * 4);
  };
  r.check = [&](const sim::MachineState &m, const std::string &what) {
    expectClose(readTensor(m, out), want, 0, 0, what);
  };
  r.run();
}

namespace {

void runResize(ResizeParams p, int64_t ih, int64_t iw, int64_t oh, int64_t ow,
               uint64_t lmem = 0) {
  GlobalAlloc ga(isa::ChipParams::bm1684x());
  p.input = ga.tensor(Prec::Fp32, {1, 70, ih, iw});
  p.output = ga.tensor(Prec::Fp32, {1, 70, oh, ow});
  auto x = randomValues(size_t(p.input.numElements()), 10);
  auto coord = [&](int64_t o, int64_t in, int64_t out) {
    double s = double(out) / double(in);
    switch (p.coord) {
    case ResizeCoord::HalfPixel:
      return (o + 0.5) / s - 0.5;
    case ResizeCoord::AlignCorners:
      return out > 1 ? double(o) * (in - 1) / (out - 1) : 0.0;
    case ResizeCoord::Asymmetric:
      return o / s;
    default:
      return out > 1 ? (o + 0.5) / s - 0.5 : 0.0;
    }
  };
  std::vector<float> want(size_t(p.output.numElements()));
  for (int64_t c = 0; c < 70; ++c)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xx = 0; xx < ow; ++xx) {
        double sy = coord(y, ih, oh), sx = coord(xx, iw, ow);
        auto at = [&](int64_t a, int64_t b) {
          return double(x[size_t((c * ih + a) * iw + b)]);
        };
        double v;
        if (p.mode == ResizeMode::Nearest) {
          // round_prefer_floor
          auto nr = [](double t, int64_t n) {
            double f = std::floor(t);
            int64_t i = int64_t(t - f > 0.5 ? f + 1 : f);
            return std::clamp<int64_t>(i, 0, n - 1);
          };
          v = at(nr(sy, ih), nr(sx, iw));
        } else {
          sy = std::clamp(sy, 0.0, double(ih - 1));
          sx = std::clamp(sx, 0.0, double(iw - 1));
          int64_t y0 = int64_t(sy), x0 = int64_t(sx);
          int64_t y1 = std::min(y0 + 1, ih - 1), x1 = std::min(x0 + 1, iw - 1);
          double fy = sy - y0, fx = sx - x0;
          v = (at(y0, x0) * (1 - fx) + at(y0, x1) * fx) * (1 - fy) +
              (at(y1, x0) * (1 - fx) + at(y1, x1) * fx) * fy;
        }
        want[size_t((c * oh + y) * ow + xx)] = float(v);
      }
  KernelRun r;
  if (lmem)
    r.chip.lmemBytes = lmem;
  r.emit = [&](CmdEmitter &em) { resize(em, p); };
  r.setup = [&](sim::MachineState &m) { writeTensor(m, p.input, x); };
  r.check = [&](const sim::MachineState &m, const std::string &what) {
    expectClose(readTensor(m, p.output), want, 1e-6f, 1e-6f, what);
  };
  r.run();
}

} // namespace

TEST(Resize, NearestUpsampleTwice) {
  ResizeParams p;
  p.name = "up";
  runResize(p, 5, 4, 10, 8);
}

TEST(Resize, NearestDownsampleAsymmetric) {
  ResizeParams p;
  p.name = "down";
  p.coord = ResizeCoord::Asymmetric;
  runResize(p, 9, 7, 4, 3);
}

TEST(Resize, LinearHalfPixel) {
  ResizeParams p;
  p.name = "lin";
  p.mode = ResizeMode::Linear;
  runResize(p, 6, 5, 13, 9);
}

TEST(Resize, LinearAlignCornersSlicedRows) {
  ResizeParams p;
  p.name = "lin";
  p.mode = ResizeMode::Linear;
  p.coord = ResizeCoord::AlignCorners;
  runResize(p, 20, 6, 41, 11, 4 * 1024);
}

/// A nearest resize by whole factors runs as fh * fw strided copies per
/// tile; rows sliced through a small local memory (tiles of whole input
/// rows) and factors that differ between H and W.
TEST(Resize, NearestWholeFactorsSlicedRows) {
  ResizeParams p;
  p.name = "up32";
  runResize(p, 7, 5, 21, 10, 1024); // tiles of 9, 9 and 3 rows
  p.coord = ResizeCoord::Asymmetric;
  runResize(p, 4, 6, 8, 24);
}

/// Which resizes are whole-factor repeats: hand-derived source indices
/// (half_pixel x2: o / 2 - 1/4 rounds to o / 2 either way a tie would go;
/// asymmetric x2 with ceil reads index 1 for output 1; align_corners
/// spreads the input over the output).
TEST(Resize, NearestWholeFactorsDetection) {
  GlobalAlloc ga(isa::ChipParams::bm1684x());
  ResizeParams p;
  p.input = ga.tensor(Prec::Fp16, {1, 3, 4, 5});
  p.output = ga.tensor(Prec::Fp16, {1, 3, 8, 15});
  auto f = nearestWholeFactors(p);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ((*f)[0], 2);
  EXPECT_EQ((*f)[1], 3);
  p.nearest = NearestMode::RoundPreferCeil;
  EXPECT_TRUE(nearestWholeFactors(p).has_value());
  p.coord = ResizeCoord::Asymmetric;
  p.nearest = NearestMode::Floor;
  EXPECT_TRUE(nearestWholeFactors(p).has_value());
  p.nearest = NearestMode::Ceil;
  EXPECT_FALSE(nearestWholeFactors(p).has_value());
  p.nearest = NearestMode::RoundPreferFloor;
  p.coord = ResizeCoord::AlignCorners;
  EXPECT_FALSE(nearestWholeFactors(p).has_value());
  p.coord = ResizeCoord::HalfPixel;
  p.mode = ResizeMode::Linear;
  EXPECT_FALSE(nearestWholeFactors(p).has_value());
  p.mode = ResizeMode::Nearest;
  p.output = ga.tensor(Prec::Fp16, {1, 3, 9, 15}); // 9 / 4 is no whole factor
  EXPECT_FALSE(nearestWholeFactors(p).has_value());
}
