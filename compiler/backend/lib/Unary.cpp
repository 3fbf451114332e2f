//===- Unary.cpp - Element-wise functions as TIU command sequences --------===//
//
// Every unary function of the backend, as a sequence of TIU commands on
// local tiles. Piecewise-linear functions (relu, clip, hard-sigmoid, ...)
// are AR/LIN/CMP commands in the output precision. Transcendentals run in
// fp32 whatever the tensor precision:
//
//  exp(x)   x clamped to [-87, 88]; n = round(x log2 e); r = x - n ln2
//           (Cody-Waite: ln2 = hi + lo, hi exact in 8 bits); exp(r) by a
//           degree-7 Taylor polynomial on the SFU (|r| <= ln2/2, truncation
//           < 3e-9 relative); 2^n built as float bits ((n + 127) << 23).
//           Relative error about 3 ulp; exp(x < -87) gives exp(-87).
//  log(x)   SFU normalize: x = m 2^e, m in [1, 2); m > sqrt 2 -> m / 2,
//           e + 1; s = (m - 1) / (m + 1); log m = s P(s^2) with P the
//           atanh series to s^11 (truncation < 1e-9); + e ln2 (hi/lo).
//           About 2 ulp relative away from x = 1, 1e-7 absolute near it;
//           log(x <= 0) = -inf.
//  sqrt     1 / rsqrt(x) (SFU rsqrt then an AR divide); sqrt(0) = 0.
//  sigmoid  1 / (1 + exp(-x)); tanh = 1 - 2 / (exp(2x) + 1), below 0.25
//           its Maclaurin series (no cancellation near 0).
//  erf      Abramowitz & Stegun 7.1.26 on |x| (absolute error < 1.5e-7),
//           odd symmetry by a compare-select; below 0.5 the Maclaurin
//           series; gelu = x (1 + erf(x / sqrt 2)) / 2.
//  softplus max(x, 0) + log1p(exp(-|x|)) (log1p by Kahan's
//           log(u) e / (u - 1)); mish = x tanh(softplus x).
//  pow      integer exponents up to 16 by multiplications (reciprocal for
//           negative ones), 0.5 / -0.5 via rsqrt, else exp(a log x).
//  floor, ceil, round: AR cast to int32 with the rounding mode and back;
//           values with |x| >= 2^23 (already integral) pass through.
//
// Every fp32 rounding happens in the simulator exactly as in these
// sequences, so results match a float reference to the stated accuracy.
//
//===----------------------------------------------------------------------===//

#include "Common.h"
#include "tpuc/Backend/UnaryConstants.h"

#include <cmath>

namespace tpu::backend::detail {

namespace {

constexpr Prec kF32 = Prec::Fp32;

using namespace fn_constants; // UnaryConstants.h


/// Byte offsets of the three tables inside the table area (each table is
/// at most 16 fp32 values = one EU of 64 bytes).
constexpr uint64_t kTableStride = 64;
constexpr uint64_t kExpTableAt = 0;
constexpr uint64_t kLogTableAt = kTableStride;
constexpr uint64_t kErfTableAt = 2 * kTableStride;
constexpr uint64_t kErfSmallTableAt = 3 * kTableStride;
constexpr uint64_t kTanhTableAt = 4 * kTableStride;
constexpr uint64_t kTableArea = 5 * kTableStride;

bool needsExp(UnaryKind k) {
  switch (k) {
  case UnaryKind::Exp:
  case UnaryKind::Sigmoid:
  case UnaryKind::Tanh:
  case UnaryKind::Silu:
  case UnaryKind::Softplus:
  case UnaryKind::Mish:
  case UnaryKind::Pow:
  case UnaryKind::Erf:
  case UnaryKind::Gelu:
    return true;
  default:
    return false;
  }
}
bool needsLog(UnaryKind k) {
  return k == UnaryKind::Log || k == UnaryKind::Softplus ||
         k == UnaryKind::Mish || k == UnaryKind::Pow;
}
bool needsErf(UnaryKind k) {
  return k == UnaryKind::Erf || k == UnaryKind::Gelu;
}
bool needsTanh(UnaryKind k) {
  return k == UnaryKind::Tanh || k == UnaryKind::Mish;
}

/// Kinds computed directly from input to output, no fp32 staging.
bool isDirect(UnaryKind k) {
  switch (k) {
  case UnaryKind::None:
  case UnaryKind::Relu:
  case UnaryKind::LeakyRelu:
  case UnaryKind::Clip:
  case UnaryKind::HardSigmoid:
  case UnaryKind::HardSwish:
  case UnaryKind::Abs:
  case UnaryKind::Neg:
  case UnaryKind::Square:
  case UnaryKind::Scale:
  case UnaryKind::Sign:
    return true;
  default:
    return false;
  }
}

/// Extra fp32 temps (beyond the staged input X and result D) per kind.
unsigned extraTemps(UnaryKind k) {
  switch (k) {
  case UnaryKind::LeakyRelu:
  case UnaryKind::HardSwish:
  case UnaryKind::Sign:
    return 1;
  case UnaryKind::Exp:
  case UnaryKind::Sigmoid:
  case UnaryKind::Tanh:
  case UnaryKind::Silu:
  case UnaryKind::Log:
  case UnaryKind::Floor:
  case UnaryKind::Ceil:
  case UnaryKind::Round:
  case UnaryKind::Pow:
    return 2;
  case UnaryKind::Erf:
    return 3;
  case UnaryKind::Gelu:
  case UnaryKind::Softplus:
    return 4;
  case UnaryKind::Mish:
    return 5;
  default:
    return 0;
  }
}

/// A small fp32 machine over tiles of one shape.
class Seq {
public:
  Seq(CmdEmitter &em, Shape4 shape, const UnaryScratch &s)
      : em_(em), shape_(shape), s_(s) {}

  LTensor temp(unsigned i, Prec p = kF32) const {
    return localTensor(em_.chip(), s_.temps.at(i), p, shape_);
  }
  LTensor view(const LTensor &t, Prec p) const {
    return localTensor(em_.chip(), t.offset, p, shape_);
  }

  void op(ArOp o, const LTensor &d, const LTensor &a, const LTensor &b) {
    ar(em_, o, d, Opd::of(a), Opd::of(b));
  }
  void opC(ArOp o, const LTensor &d, const LTensor &a, float c) {
    ar(em_, o, d, Opd::of(a), Opd::imm(c, a.prec));
  }
  /// d = c (op) a.
  void cOp(ArOp o, const LTensor &d, float c, const LTensor &a) {
    ar(em_, o, d, Opd::imm(c, a.prec), Opd::of(a));
  }
  void castTo(const LTensor &d, const LTensor &a,
              isa::RoundMode m = isa::RoundMode::HalfToEven) {
    if (d.offset == a.offset && d.prec == a.prec)
      return;
    if (d.prec == a.prec)
      ar(em_, ArOp::Copy, d, Opd::of(a));
    else
      ar(em_, ArOp::Cast, d, Opd::of(a), Opd(), m);
  }
  void taylor(const LTensor &d, const LTensor &x, uint64_t at, unsigned len) {
    sfuTaylor(em_, d, x, s_.tables + at, len);
  }

  /// d = exp(x); x may be d or t1; t1, t2 distinct scratch.
  void exp(const LTensor &d, const LTensor &x, const LTensor &t1,
           const LTensor &t2) {
    opC(ArOp::Max, t1, x, kExpLow);
    opC(ArOp::Min, t1, t1, kExpHigh);
    opC(ArOp::Mul, d, t1, kLog2E);
    LTensor n = view(t2, Prec::Int32);
    castTo(n, d);
    castTo(d, n);
    ar(em_, ArOp::Mac, t1, Opd::of(d), Opd::imm(-kLn2Hi, kF32));
    ar(em_, ArOp::Mac, t1, Opd::of(d), Opd::imm(-kLn2Lo, kF32));
    taylor(d, t1, kExpTableAt, std::size(kExpTable));
    ar(em_, ArOp::Add, n, Opd::of(n), Opd::immInt(kExpBias));
    ar(em_, ArOp::LogicShift, n, Opd::of(n), Opd::immInt(kMantBits));
    op(ArOp::Mul, d, d, view(t2, kF32));
  }

  /// d = log(x); x stays intact and must differ from d, t1, t2.
  void log(const LTensor &d, const LTensor &x, const LTensor &t1,
           const LTensor &t2) {
    LTensor e = view(t2, Prec::Int32);
    sfuNormalize(em_, e, x);
    sfuNormalize(em_, t1, x);
    castTo(d, e);
    opC(ArOp::Add, t2, d, 1.0f);
    cmpSelect(em_, CmpOp::SelGt, d, Opd::of(t1), Opd::imm(kSqrt2, kF32),
              Opd::of(t2), Opd::of(d));
    opC(ArOp::Mul, t2, t1, 0.5f);
    cmpSelect(em_, CmpOp::SelGt, t1, Opd::of(t1), Opd::imm(kSqrt2, kF32),
              Opd::of(t2), Opd::of(t1));
    opC(ArOp::Add, t2, t1, 1.0f);
    opC(ArOp::Sub, t1, t1, 1.0f);
    op(ArOp::Div, t1, t1, t2);
    op(ArOp::Mul, t2, t1, t1);
    taylor(t2, t2, kLogTableAt, std::size(kLogTable));
    op(ArOp::Mul, t2, t2, t1);
    ar(em_, ArOp::Mac, t2, Opd::of(d), Opd::imm(kLn2Lo, kF32));
    opC(ArOp::Mul, d, d, kLn2Hi);
    op(ArOp::Add, d, d, t2);
    cmpSelect(em_, CmpOp::SelGt, d, Opd::of(x), Opd::imm(0.0f, kF32),
              Opd::of(d), Opd::imm(-INFINITY, kF32));
  }

  /// d = erf(x); x intact, distinct from d, t1..t3.
  void erf(const LTensor &d, const LTensor &x, const LTensor &t1,
           const LTensor &t2, const LTensor &t3) {
    ar(em_, ArOp::Abs, t1, Opd::of(x));
    opC(ArOp::Mul, d, t1, kErfP);
    opC(ArOp::Add, d, d, 1.0f);
    cOp(ArOp::Div, d, 1.0f, d);
    taylor(d, d, kErfTableAt, std::size(kErfTable));
    op(ArOp::Mul, t1, t1, t1);
    opC(ArOp::Mul, t1, t1, -1.0f);
    exp(t1, t1, t2, t3);
    op(ArOp::Mul, d, d, t1);
    cOp(ArOp::Sub, d, 1.0f, d);
    opC(ArOp::Mul, t1, d, -1.0f);
    cmpSelect(em_, CmpOp::SelLt, d, Opd::of(x), Opd::imm(0.0f, kF32),
              Opd::of(t1), Opd::of(d));
    // Small arguments: the series (no cancellation).
    op(ArOp::Mul, t1, x, x);
    taylor(t1, t1, kErfSmallTableAt, std::size(kErfSmallTable));
    op(ArOp::Mul, t1, t1, x);
    ar(em_, ArOp::Abs, t2, Opd::of(x));
    cmpSelect(em_, CmpOp::SelLt, d, Opd::of(t2), Opd::imm(kErfSmall, kF32),
              Opd::of(t1), Opd::of(d));
  }

  /// d = 1 / (1 + exp(-x)); x may be d.
  void sigmoid(const LTensor &d, const LTensor &x, const LTensor &t1,
               const LTensor &t2) {
    opC(ArOp::Mul, d, x, -1.0f);
    exp(d, d, t1, t2);
    opC(ArOp::Add, d, d, 1.0f);
    cOp(ArOp::Div, d, 1.0f, d);
  }

  /// d = tanh(x) = 1 - 2 / (exp(2x) + 1), the series below kTanhSmall;
  /// x intact and distinct from d, t1, t2.
  void tanh(const LTensor &d, const LTensor &x, const LTensor &t1,
            const LTensor &t2) {
    opC(ArOp::Mul, d, x, 2.0f);
    exp(d, d, t1, t2);
    opC(ArOp::Add, d, d, 1.0f);
    cOp(ArOp::Div, d, 2.0f, d);
    cOp(ArOp::Sub, d, 1.0f, d);
    op(ArOp::Mul, t1, x, x);
    taylor(t1, t1, kTanhTableAt, std::size(kTanhTable));
    op(ArOp::Mul, t1, t1, x);
    ar(em_, ArOp::Abs, t2, Opd::of(x));
    cmpSelect(em_, CmpOp::SelLt, d, Opd::of(t2), Opd::imm(kTanhSmall, kF32),
              Opd::of(t1), Opd::of(d));
  }

  /// d = softplus(x) = max(x, 0) + log1p(exp(-|x|)), log1p(e) computed
  /// as log(u) * e / (u - 1) with u = 1 + e rounded (exact where the
  /// rounding of 1 + e would lose e's digits); x intact, distinct from d,
  /// t1..t4.
  void softplus(const LTensor &d, const LTensor &x, const LTensor &t1,
                const LTensor &t2, const LTensor &t3, const LTensor &t4) {
    ar(em_, ArOp::Abs, t1, Opd::of(x));
    opC(ArOp::Mul, t1, t1, -1.0f);
    exp(t1, t1, t2, t3);
    opC(ArOp::Add, t2, t1, 1.0f);
    log(d, t2, t3, t4);
    opC(ArOp::Sub, t2, t2, 1.0f);
    op(ArOp::Mul, d, d, t1);
    op(ArOp::Div, d, d, t2);
    cmpSelect(em_, CmpOp::SelEq, d, Opd::of(t2), Opd::imm(0.0f, kF32),
              Opd::of(t1), Opd::of(d));
    opC(ArOp::Max, t1, x, 0.0f);
    op(ArOp::Add, d, d, t1);
  }

  /// d = x ^ n for an integer n (binary powering; d distinct from x, t1).
  void intPow(const LTensor &d, const LTensor &x, int n, const LTensor &t1) {
    int m = n < 0 ? -n : n;
    if (m == 0) {
      ar(em_, ArOp::Copy, d, Opd::imm(1.0f, d.prec));
      return;
    }
    castTo(t1, x);
    bool have = false;
    while (m) {
      if (m & 1) {
        if (have)
          op(ArOp::Mul, d, d, t1);
        else
          castTo(d, t1);
        have = true;
      }
      m >>= 1;
      if (m)
        op(ArOp::Mul, t1, t1, t1);
    }
    if (n < 0)
      cOp(ArOp::Div, d, 1.0f, d);
  }

private:
  CmdEmitter &em_;
  Shape4 shape_;
  const UnaryScratch &s_;
};

/// The direct (no fp32 staging) functions: out = f(in).
void emitDirect(CmdEmitter &em, const Activation &fn, const LTensor &in,
                const LTensor &out, Seq &q) {
  Prec po = out.prec;
  switch (fn.kind) {
  case UnaryKind::None:
    q.castTo(out, in);
    return;
  case UnaryKind::Relu:
    ar(em, ArOp::Max, out, Opd::of(in), Opd::imm(0.0f, in.prec));
    return;
  case UnaryKind::LeakyRelu: {
    // max(x, a x) for a <= 1, min(x, a x) above.
    LTensor t = q.temp(0, po);
    q.opC(ArOp::Mul, t, in, fn.alpha);
    q.op(fn.alpha <= 1.0f ? ArOp::Max : ArOp::Min, out, in, t);
    return;
  }
  case UnaryKind::Clip:
    ar(em, ArOp::Max, out, Opd::of(in), Opd::imm(fn.alpha, in.prec));
    ar(em, ArOp::Min, out, Opd::of(out), Opd::imm(fn.beta, po));
    return;
  case UnaryKind::HardSigmoid:
  case UnaryKind::HardSwish: {
    float a = fn.kind == UnaryKind::HardSwish ? 1.0f / 6.0f : fn.alpha;
    float b = fn.kind == UnaryKind::HardSwish ? 0.5f : fn.beta;
    LTensor t = fn.kind == UnaryKind::HardSwish ? q.temp(0, po) : out;
    if (in.prec == po && in.layout == kStrEuAligned)
      linMac(em, t, in, a, b);
    else {
      q.opC(ArOp::Mul, t, in, a);
      q.opC(ArOp::Add, t, t, b);
    }
    q.opC(ArOp::Max, t, t, 0.0f);
    q.opC(ArOp::Min, t, t, 1.0f);
    if (fn.kind == UnaryKind::HardSwish)
      q.op(ArOp::Mul, out, in, t);
    return;
  }
  case UnaryKind::Abs:
    if (in.prec == po)
      ar(em, ArOp::Abs, out, Opd::of(in));
    else {
      q.castTo(out, in);
      ar(em, ArOp::Abs, out, Opd::of(out));
    }
    return;
  case UnaryKind::Neg:
    q.opC(ArOp::Mul, out, in, -1.0f);
    return;
  case UnaryKind::Square:
    q.op(ArOp::Mul, out, in, in);
    return;
  case UnaryKind::Scale:
    if (in.prec == po && in.layout == kStrEuAligned)
      linMac(em, out, in, fn.alpha, fn.beta);
    else {
      q.opC(ArOp::Mul, out, in, fn.alpha);
      q.opC(ArOp::Add, out, out, fn.beta);
    }
    return;
  case UnaryKind::Sign: {
    LTensor t = q.temp(0, po);
    cmpSelect(em, CmpOp::SelGt, t, Opd::of(in), Opd::imm(0.0f, in.prec),
              Opd::imm(1.0f, po), Opd::imm(0.0f, po));
    cmpSelect(em, CmpOp::SelLt, out, Opd::of(in), Opd::imm(0.0f, in.prec),
              Opd::imm(-1.0f, po), Opd::of(t));
    return;
  }
  default:
    throw Error("backend: unary kind is not direct");
  }
}

} // namespace

unsigned unaryTemps(UnaryKind kind) {
  return isDirect(kind) ? extraTemps(kind) : 2 + extraTemps(kind);
}

uint64_t unaryTableBytes() { return kTableArea; }

void prepareUnaryTables(CmdEmitter &em, UnaryKind kind, const UnaryScratch &s) {
  auto write = [&](uint64_t at, const float *v, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      LTensor t = localTensor(em.chip(), s.tables + at + i * sizeof(float),
                              kF32, {1, em.chip().npuNum, 1, 1});
      ar(em, ArOp::Copy, t, Opd::imm(v[i], kF32));
    }
  };
  if (needsExp(kind))
    write(kExpTableAt, kExpTable, std::size(kExpTable));
  if (needsLog(kind))
    write(kLogTableAt, kLogTable, std::size(kLogTable));
  if (needsErf(kind)) {
    write(kErfTableAt, kErfTable, std::size(kErfTable));
    write(kErfSmallTableAt, kErfSmallTable, std::size(kErfSmallTable));
  }
  if (needsTanh(kind))
    write(kTanhTableAt, kTanhTable, std::size(kTanhTable));
}

void emitUnary(CmdEmitter &em, const Activation &fn, const LTensor &in,
               const LTensor &out, const UnaryScratch &s) {
  Seq q(em, in.shape, s);
  if (isDirect(fn.kind)) {
    emitDirect(em, fn, in, out, q);
    return;
  }
  // Staged: X = fp32 input, D = fp32 result, T1.. scratch.
  LTensor x = in.prec == kF32 ? in : q.temp(0);
  q.castTo(x, in);
  bool outIsF32 = out.prec == kF32 && out.offset != in.offset;
  LTensor d = outIsF32 ? out : q.temp(1);
  auto t = [&](unsigned i) { return q.temp(1 + i); };
  switch (fn.kind) {
  case UnaryKind::Exp:
    q.exp(d, x, t(1), t(2));
    break;
  case UnaryKind::Sigmoid:
    q.sigmoid(d, x, t(1), t(2));
    break;
  case UnaryKind::Tanh:
    q.tanh(d, x, t(1), t(2));
    break;
  case UnaryKind::Silu:
    q.sigmoid(d, x, t(1), t(2));
    q.op(ArOp::Mul, d, d, x);
    break;
  case UnaryKind::Log:
    q.log(d, x, t(1), t(2));
    break;
  case UnaryKind::Sqrt:
    sfuRsqrt(em, d, x);
    q.cOp(ArOp::Div, d, 1.0f, d);
    break;
  case UnaryKind::Rsqrt:
    sfuRsqrt(em, d, x);
    break;
  case UnaryKind::Reciprocal:
    q.cOp(ArOp::Div, d, 1.0f, x);
    break;
  case UnaryKind::Erf:
    q.erf(d, x, t(1), t(2), t(3));
    break;
  case UnaryKind::Gelu: {
    LTensor u = t(4);
    q.opC(ArOp::Mul, u, x, kInvSqrt2);
    q.erf(d, u, t(1), t(2), t(3));
    q.opC(ArOp::Add, d, d, 1.0f);
    q.op(ArOp::Mul, d, d, x);
    q.opC(ArOp::Mul, d, d, 0.5f);
    break;
  }
  case UnaryKind::Softplus:
    q.softplus(d, x, t(1), t(2), t(3), t(4));
    break;
  case UnaryKind::Mish:
    q.softplus(t(5), x, t(1), t(2), t(3), t(4));
    q.tanh(d, t(5), t(1), t(2));
    q.op(ArOp::Mul, d, d, x);
    break;
  case UnaryKind::Pow: {
    float a = fn.alpha;
    if (a == std::round(a) && std::fabs(a) <= kMaxIntPow) {
      q.intPow(d, x, int(a), t(1));
    } else if (a == 0.5f) {
      sfuRsqrt(em, d, x);
      q.cOp(ArOp::Div, d, 1.0f, d);
    } else if (a == -0.5f) {
      sfuRsqrt(em, d, x);
    } else {
      q.log(d, x, t(1), t(2));
      q.opC(ArOp::Mul, d, d, a);
      q.exp(d, d, t(1), t(2));
    }
    break;
  }
  case UnaryKind::Floor:
  case UnaryKind::Ceil:
  case UnaryKind::Round: {
    isa::RoundMode m = fn.kind == UnaryKind::Floor ? isa::RoundMode::Down
                       : fn.kind == UnaryKind::Ceil
                           ? isa::RoundMode::Up
                           : isa::RoundMode::HalfToEven;
    LTensor n = q.view(t(2), Prec::Int32);
    q.castTo(n, x, m);
    q.castTo(d, n);
    ar(em, ArOp::Abs, t(1), Opd::of(x));
    cmpSelect(em, CmpOp::SelGt, d, Opd::of(t(1)), Opd::imm(kTwoPow23, kF32),
              Opd::of(x), Opd::of(d));
    break;
  }
  default:
    throw Error("backend: unary kind not implemented");
  }
  q.castTo(out, d);
}

void emitPowTensor(CmdEmitter &em, const LTensor &a, const LTensor &b,
                   const LTensor &out, const UnaryScratch &s) {
  Seq q(em, a.shape, s);
  LTensor x = a.prec == kF32 ? a : q.temp(0);
  q.castTo(x, a);
  LTensor d = q.temp(1);
  q.log(d, x, q.temp(2), q.temp(3));
  LTensor y = b.prec == kF32 ? b : q.temp(4);
  q.castTo(y, b);
  q.op(ArOp::Mul, d, d, y);
  q.exp(d, d, q.temp(2), q.temp(3));
  q.castTo(out, d);
}

} // namespace tpu::backend::detail

namespace tpu::backend {

std::string describeUnaryMethod(UnaryKind kind) {
  switch (kind) {
  case UnaryKind::Exp:
    return "fp32: clamp to [-87, 88], 2^n by exponent bits, degree-7 Taylor "
           "on the SFU; ~3 ulp";
  case UnaryKind::Log:
    return "fp32: SFU normalize, atanh series on the SFU; ~2 ulp (1e-7 "
           "absolute near 1)";
  case UnaryKind::Sigmoid:
    return "fp32: 1 / (1 + exp(-x)); ~4 ulp";
  case UnaryKind::Tanh:
    return "fp32: 1 - 2 / (exp(2x) + 1); ~1e-7 absolute";
  case UnaryKind::Erf:
  case UnaryKind::Gelu:
    return "fp32: Abramowitz-Stegun 7.1.26; < 1.5e-7 absolute";
  case UnaryKind::Sqrt:
  case UnaryKind::Rsqrt:
  case UnaryKind::Reciprocal:
    return "fp32: SFU rsqrt / AR divide; ~1 ulp";
  default:
    return "exact in the output precision (AR / LIN / CMP commands)";
  }
}

} // namespace tpu::backend
