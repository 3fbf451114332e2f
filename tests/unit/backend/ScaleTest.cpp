//===- ScaleTest.cpp - scale (per-channel x * s + b, fused relu) ----------===//
//
// The commands of backend::scale() run on the simulator's functional kernels
// against a nested-loop reference: y = round_p(round_p(x * s[c]) + b[c])
// (each step computed exactly in double and rounded once to fp32 and then
// to the tensor precision p: the product of two fp16 values is exact in
// fp32, and fp32 carries 2 * 11 + 2 bits, so its rounding before the one to
// fp16 / bf16 cannot change the result), then max(y, 0) and the limit.
//
//===----------------------------------------------------------------------===//

#include "BackendTestUtil.h"

using namespace tpu;
using namespace tpu::backend;
using namespace tpu::backend::test;

namespace {

struct ScaleCase {
  Prec prec;
  int64_t n, c, h, w;
  Activation act;
};

std::string describe(const ScaleCase &k) {
  return std::string(isa::precName(k.prec)) + " " + std::to_string(k.n) +
         "x" + std::to_string(k.c) + "x" + std::to_string(k.h) + "x" +
         std::to_string(k.w) + " act " + std::to_string(int(k.act.kind));
}

/// One rounding of an exact (double) result: to fp32, then to \p p.
float round1(double v, Prec p) { return roundTo(float(v), p); }

void runScale(const ScaleCase &k, uint64_t lmem = 0) {
  KernelRun r;
  if (lmem)
    r.chip.lmemBytes = lmem;
  GlobalAlloc ga(r.chip);
  GTensor x = ga.tensor(k.prec, {k.n, k.c, k.h, k.w});
  GTensor s = ga.tensor(k.prec, {1, k.c, 1, 1});
  GTensor b = ga.tensor(k.prec, {1, k.c, 1, 1});
  GTensor y = ga.tensor(k.prec, {k.n, k.c, k.h, k.w});
  auto xv = randomValues(size_t(x.numElements()), 11, -3, 3);
  auto sv = randomValues(size_t(k.c), 12, -2, 2);
  auto bv = randomValues(size_t(k.c), 13, -1, 1);
  for (auto *v : {&xv, &sv, &bv})
    for (float &e : *v)
      e = roundTo(e, k.prec);
  std::vector<float> want(xv.size());
  int64_t inner = k.h * k.w;
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t c = 0; c < k.c; ++c)
      for (int64_t i = 0; i < inner; ++i) {
        size_t at = size_t((n * k.c + c) * inner + i);
        float prod = round1(double(xv[at]) * sv[size_t(c)], k.prec);
        float v = round1(double(prod) + bv[size_t(c)], k.prec);
        if (k.act.kind == UnaryKind::Relu)
          v = std::max(v, 0.0f);
        else if (k.act.kind == UnaryKind::Clip)
          v = std::min(std::max(v, roundTo(k.act.alpha, k.prec)),
                       roundTo(k.act.beta, k.prec));
        want[at] = v;
      }
  r.emit = [&](CmdEmitter &em) { scale(em, {"bn", x, s, b, y, k.act}); };
  r.setup = [&](sim::MachineState &m) {
    writeTensor(m, x, xv);
    writeTensor(m, s, sv);
    writeTensor(m, b, bv);
  };
  r.check = [&](const sim::MachineState &m, const std::string &what) {
    // Bit-exact: the reference rounds where the commands round.
    expectClose(readTensor(m, y), want, 0, 0, what + " " + describe(k));
  };
  r.run();
}

const Activation kNone{};
const Activation kRelu{UnaryKind::Relu};
const Activation kRelu6{UnaryKind::Clip, 0.0f, 6.0f};

} // namespace

TEST(Scale, ThreeChannelsWithAndWithoutRelu) {
  for (Prec p : {Prec::Fp32, Prec::Fp16})
    for (const Activation &a : {kNone, kRelu})
      runScale({p, 2, 3, 5, 7, a}); // H * W = 35, odd
}

TEST(Scale, ChannelsBeyondTheLanes) {
  // 130 channels: more than the 64 lanes, a partial last channel slot.
  for (Prec p : {Prec::Fp32, Prec::Fp16})
    for (const Activation &a : {kNone, kRelu})
      runScale({p, 1, 130, 3, 3, a});
}

TEST(Scale, ReluLimitBF16) { runScale({Prec::Bf16, 1, 70, 1, 9, kRelu6}); }

TEST(Scale, ManyTilesWithSmallLocalMemory) {
  // 2 KiB per lane: the 130 x 33 x 17 planes split into many tiles.
  runScale({Prec::Fp16, 2, 130, 33, 17, kRelu}, 2 * 1024);
}

TEST(Scale, MixedPrecisionIsAnError) {
  CmdEmitter em;
  GlobalAlloc ga(em.chip());
  ScaleParams p{"bn3",
                ga.tensor(Prec::Fp16, {1, 4, 2, 2}),
                ga.tensor(Prec::Fp32, {1, 4, 1, 1}),
                ga.tensor(Prec::Fp16, {1, 4, 1, 1}),
                ga.tensor(Prec::Fp16, {1, 4, 2, 2}),
                {}};
  try {
    scale(em, p);
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("scale 'bn3'"), std::string::npos)
        << e.what();
  }
}
