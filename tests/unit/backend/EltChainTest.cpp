//===- EltChainTest.cpp - eltwiseChain against the separate kernels -------===//
//
// A fused chain must give exactly what its stages give as separate kernels
// (binary, binaryConst, unary, scale, prelu), each writing its result to
// global memory: every stage rounds to the tensor precision at the same
// point. Both run in one command group on the simulator's functional
// kernels and are compared bit for bit; the hardswish chain is also checked
// against a nested-loop reference.
//
//===----------------------------------------------------------------------===//

#include "BackendTestUtil.h"

using namespace tpu;
using namespace tpu::backend;
using namespace tpu::backend::test;

namespace {

using K = ChainOperand::Kind;

ChainOperand run() { return {}; }
ChainOperand input() { return {K::Input, 0, 0.0f}; }
ChainOperand extra(unsigned i) { return {K::Extra, i, 0.0f}; }
ChainOperand imm(float v) { return {K::Const, 0, v}; }

EltStage binaryStage(BinaryKind k, ChainOperand l, ChainOperand r,
                     Activation act = {}) {
  EltStage s;
  s.kind = EltStage::Kind::Binary;
  s.op = k;
  s.lhs = l;
  s.rhs = r;
  s.act = act;
  return s;
}
EltStage unaryStage(Activation fn) {
  EltStage s;
  s.kind = EltStage::Kind::Unary;
  s.act = fn;
  return s;
}
EltStage scaleStage(unsigned sc, unsigned b, Activation act = {}) {
  EltStage s;
  s.kind = EltStage::Kind::Scale;
  s.lhs = extra(sc);
  s.rhs = extra(b);
  s.act = act;
  return s;
}
EltStage preluStage(unsigned slope) {
  EltStage s;
  s.kind = EltStage::Kind::PRelu;
  s.lhs = extra(slope);
  return s;
}

/// The chain as the separate kernels the unfused codegen emits, each stage's
/// result in a global tensor of its own (the last one `out`).
void emitSeparate(CmdEmitter &em, GlobalAlloc &ga, const EltChainParams &p,
                  const GTensor &out) {
  GTensor cur = p.input;
  for (size_t i = 0; i < p.stages.size(); ++i) {
    const EltStage &st = p.stages[i];
    GTensor res = i + 1 == p.stages.size()
                      ? out
                      : ga.tensor(p.output.prec, p.output.shape);
    auto tensorOf = [&](const ChainOperand &o) {
      if (o.kind == K::Input)
        return p.input;
      if (o.kind == K::Extra)
        return p.extras[o.index];
      return cur;
    };
    std::string name = "stage" + std::to_string(i);
    switch (st.kind) {
    case EltStage::Kind::Binary:
      if (st.lhs.kind == K::Const || st.rhs.kind == K::Const) {
        bool left = st.lhs.kind == K::Const;
        binaryConst(em, {name, tensorOf(left ? st.rhs : st.lhs), res, st.op,
                         left ? st.lhs.value : st.rhs.value, left, st.act});
      } else {
        binary(em,
               {name, tensorOf(st.lhs), tensorOf(st.rhs), res, st.op, st.act});
      }
      break;
    case EltStage::Kind::Unary:
      unary(em, {name, cur, res, st.act});
      break;
    case EltStage::Kind::Scale:
      scale(em, {name, cur, p.extras[st.lhs.index], p.extras[st.rhs.index], res,
                 st.act});
      break;
    case EltStage::Kind::PRelu:
      prelu(em, {name, cur, p.extras[st.lhs.index], res});
      break;
    }
    cur = res;
  }
}

struct ChainCase {
  Prec prec;
  std::vector<int64_t> shape;
  /// Shapes of the extra operands.
  std::vector<std::vector<int64_t>> extras;
  std::vector<EltStage> stages;
  /// The output takes the input's memory (an address reused in place).
  bool inPlace = false;
  uint64_t lmem = 0;
};

/// Runs the chain and the separate kernels; returns the chain's result and
/// expects the two bit-identical. \p reference, if given, maps the input
/// and extras to an expected result checked within \p rtol.
std::vector<float> runChain(
    const ChainCase &k, const std::string &what,
    const std::function<std::vector<float>(
        const std::vector<float> &, const std::vector<std::vector<float>> &)>
        &reference = {},
    float atol = 0, float rtol = 0) {
  KernelRun r;
  if (k.lmem)
    r.chip.lmemBytes = k.lmem;
  GlobalAlloc ga(r.chip);
  EltChainParams p;
  p.name = "chain";
  p.input = ga.tensor(k.prec, k.shape);
  p.output = k.inPlace ? p.input : ga.tensor(k.prec, k.shape);
  for (const auto &s : k.extras)
    p.extras.push_back(ga.tensor(k.prec, s));
  p.stages = k.stages;
  // The separate kernels read a copy of the input (the chain may overwrite
  // the original).
  EltChainParams sep = p;
  sep.input = ga.tensor(k.prec, k.shape);
  GTensor want = ga.tensor(k.prec, k.shape);

  auto xv = randomValues(size_t(p.input.numElements()), 21, -5, 5);
  for (float &e : xv)
    e = roundTo(e, k.prec);
  std::vector<std::vector<float>> ev;
  for (size_t i = 0; i < p.extras.size(); ++i) {
    ev.push_back(randomValues(size_t(p.extras[i].numElements()),
                              unsigned(30 + i), -2, 2));
    for (float &e : ev.back())
      e = roundTo(e, k.prec);
  }
  r.emit = [&](CmdEmitter &em) {
    emitSeparate(em, ga, sep, want);
    eltwiseChain(em, p);
  };
  r.setup = [&](sim::MachineState &m) {
    writeTensor(m, p.input, xv);
    writeTensor(m, sep.input, xv);
    for (size_t i = 0; i < p.extras.size(); ++i)
      writeTensor(m, p.extras[i], ev[i]);
  };
  std::vector<float> got;
  r.check = [&](const sim::MachineState &m, const std::string &sched) {
    got = readTensor(m, p.output);
    expectClose(got, readTensor(m, want), 0, 0,
                what + " " + isa::precName(k.prec) + " " + sched);
    if (reference)
      expectClose(got, reference(xv, ev), rtol, atol,
                  what + " reference " + sched);
  };
  r.run();
  return got;
}

const Activation kRelu6{UnaryKind::Clip, 0.0f, 6.0f};

/// hardswish as ONNX exporters write it, then a learnable affine:
/// (x * relu6(x + 3)) / 6 * a + b (PP-OCR's LCNet).
std::vector<EltStage> hardswishAffine(float a, float b) {
  return {binaryStage(BinaryKind::Add, run(), imm(3.0f), kRelu6),
          binaryStage(BinaryKind::Mul, input(), run()),
          binaryStage(BinaryKind::Div, run(), imm(6.0f)),
          binaryStage(BinaryKind::Mul, imm(a), run()),
          binaryStage(BinaryKind::Add, run(), imm(b))};
}

} // namespace

TEST(EltChain, HardswishAffine) {
  for (Prec p : {Prec::Fp32, Prec::Fp16, Prec::Bf16}) {
    float a = roundTo(0.75f, p), b = roundTo(-0.375f, p);
    // Each step rounded to the precision (the AR commands round once per
    // step; should the division differ from the exactly rounded quotient by
    // an ulp, the last two steps carry it: a few ulps of the result's
    // magnitude, at most about 3).
    auto ref = [&](const std::vector<float> &x,
                   const std::vector<std::vector<float>> &) {
      std::vector<float> y(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        float t = std::min(std::max(roundTo(x[i] + 3.0f, p), 0.0f), 6.0f);
        t = roundTo(x[i] * t, p);
        t = roundTo(t / 6.0f, p);
        t = roundTo(a * t, p);
        y[i] = roundTo(t + b, p);
      }
      return y;
    };
    // 1x32x20x20: several tiles of 64 lanes.
    runChain({p, {1, 32, 20, 20}, {}, hardswishAffine(a, b)}, "hardswish", ref,
             8 * ulpOf(p), 4 * ulpOf(p));
  }
}

TEST(EltChain, TranscendentalScalePReluPerChannel) {
  // Per-channel extras (read in place) and a full-size one; unary stages
  // with different temps and tables; Sub with the constant on the left.
  std::vector<EltStage> stages = {
      scaleStage(0, 1, {UnaryKind::Relu}),
      unaryStage({UnaryKind::Sigmoid}),
      binaryStage(BinaryKind::Mul, run(), extra(2)),
      binaryStage(BinaryKind::Sub, imm(0.5f), run()),
      preluStage(0),
      unaryStage({UnaryKind::Tanh}),
      binaryStage(BinaryKind::Max, run(), input()),
      binaryStage(BinaryKind::Div, input(), run()),
      unaryStage({UnaryKind::Erf}),
      binaryStage(BinaryKind::Min, run(), extra(3), {UnaryKind::Exp}),
  };
  for (Prec p : {Prec::Fp32, Prec::Fp16, Prec::Bf16})
    runChain({p,
              {2, 70, 5, 7},
              {{1, 70, 1, 1}, {1, 70, 1, 1}, {2, 70, 5, 7}, {70, 1, 1}},
              stages},
             "mixed");
}

TEST(EltChain, ManyTilesWithSmallLocalMemory) {
  runChain({Prec::Fp16,
            {1, 130, 33, 17},
            {{1, 130, 1, 1}, {1, 130, 1, 1}},
            {scaleStage(0, 1), unaryStage({UnaryKind::Gelu}),
             binaryStage(BinaryKind::Mul, input(), run(), kRelu6)},
            false,
            4 * 1024},
           "small lmem");
}

TEST(EltChain, OutputInPlaceOfTheInput) {
  // The output takes the input's memory while later stages still read the
  // input: every tile is read before it is overwritten.
  runChain(
      {Prec::Fp16, {1, 48, 40, 40}, {}, hardswishAffine(1.5f, 0.25f), true},
      "in place");
}

TEST(EltChain, BadOperandIsAnError) {
  CmdEmitter em;
  GlobalAlloc ga(em.chip());
  EltChainParams p;
  p.name = "hs";
  p.input = ga.tensor(Prec::Fp16, {1, 4, 2, 2});
  p.output = ga.tensor(Prec::Fp16, {1, 4, 2, 2});
  p.stages = {binaryStage(BinaryKind::Add, run(), extra(0))};
  try {
    eltwiseChain(em, p);
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("eltwise chain 'hs'"),
              std::string::npos)
        << e.what();
  }
}
