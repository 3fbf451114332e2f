//===- Elementwise.cpp - Element-wise kernels and their tiling ------------===//
//
// Unary functions, binary operations with numpy broadcasting, constants,
// PReLU, casts (float and integer types), comparisons and where: their
// checks, their per-tile command sequences (which the layer groups' local
// forms emit), and their per-op entry points, which run as groups of one
// (runAloneEltwise): over the op's own tensors when they are 4-D and the
// local form takes them, else over broadcastJobs' 4-D views of them.
//
// Lane mapping of the views: a dense tensor is flattened and laid out as
// (1, 64, 1, q) plus a remainder of fewer than 64 elements, so every lane
// works; with broadcasting the merged dims map to (n, c, h, w) and a short
// channel dim borrows a factor of the innermost one.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "tpuc/Backend/LayerGroup.h"

#include <algorithm>
#include <cmath>

namespace tpu::backend {

using namespace detail;

namespace detail {

std::vector<EltJob> broadcastJobs(const isa::ChipParams &chip,
                                  const std::vector<GTensor> &inputs,
                                  const GTensor &output) {
  std::vector<int64_t> out = output.shape;
  if (out.empty())
    out = {1};
  size_t r = out.size();
  size_t nv = inputs.size() + 1;
  // strides[v][d]: views 0..n-1 = inputs, n = output.
  std::vector<std::vector<int64_t>> strides(nv, std::vector<int64_t>(r, 0));
  for (size_t v = 0; v < inputs.size(); ++v) {
    std::vector<int64_t> dims = inputs[v].shape;
    if (dims.size() > r)
      throw Error("backend: input rank " + std::to_string(dims.size()) +
                  " exceeds the output rank " + std::to_string(r));
    dims.insert(dims.begin(), r - dims.size(), 1);
    std::vector<int64_t> dense = denseStrides(dims);
    for (size_t d = 0; d < r; ++d) {
      if (dims[d] != out[d] && dims[d] != 1)
        throw Error("backend: input dim " + std::to_string(dims[d]) +
                    " does not broadcast to " + std::to_string(out[d]));
      strides[v][d] = dims[d] == 1 ? 0 : dense[d];
    }
  }
  strides[nv - 1] = denseStrides(out);
  // Drop unit dims, merge mergeable neighbours.
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> st(nv);
  for (size_t d = 0; d < r; ++d) {
    if (out[d] == 1)
      continue;
    dims.push_back(out[d]);
    for (size_t v = 0; v < nv; ++v)
      st[v].push_back(strides[v][d]);
  }
  for (size_t d = dims.size(); d-- > 1;) {
    bool ok = true;
    for (size_t v = 0; v < nv && ok; ++v)
      ok = st[v][d - 1] == st[v][d] * dims[d];
    if (!ok)
      continue;
    dims[d - 1] *= dims[d];
    dims.erase(dims.begin() + d);
    for (size_t v = 0; v < nv; ++v) {
      st[v][d - 1] = st[v][d];
      st[v].erase(st[v].begin() + d);
    }
  }
  if (dims.empty()) {
    dims = {1};
    for (size_t v = 0; v < nv; ++v)
      st[v] = {1};
  }
  auto prec = [&](size_t v) {
    return v + 1 < nv ? inputs[v].prec : output.prec;
  };
  auto addr = [&](size_t v) {
    return v + 1 < nv ? inputs[v].addr : output.addr;
  };
  std::vector<EltJob> jobs;
  auto emitJob = [&](Shape4 shape, const std::vector<uint64_t> &base,
                     const std::vector<Stride4> &s) {
    EltJob j;
    j.shape = shape;
    for (size_t v = 0; v < nv; ++v) {
      DView view{base[v], prec(v), shape, s[v]};
      if (v + 1 < nv)
        j.inputs.push_back(view);
      else
        j.output = view;
    }
    jobs.push_back(j);
  };
  int64_t npu = chip.npuNum;
  size_t k = dims.size();
  size_t outer = k > 4 ? k - 4 : 0;
  int64_t outerCount = 1;
  for (size_t d = 0; d < outer; ++d)
    outerCount *= dims[d];
  for (int64_t o = 0; o < outerCount; ++o) {
    std::vector<uint64_t> base(nv);
    for (size_t v = 0; v < nv; ++v) {
      int64_t rem = o, off = 0;
      for (size_t d = outer; d-- > 0;) {
        off += (rem % dims[d]) * st[v][d];
        rem /= dims[d];
      }
      base[v] = addr(v) + uint64_t(off) * elemBytes(prec(v));
    }
    std::vector<int64_t> dd(dims.begin() + outer, dims.end());
    std::vector<std::vector<int64_t>> ss(nv);
    for (size_t v = 0; v < nv; ++v)
      ss[v].assign(st[v].begin() + outer, st[v].end());
    size_t kk = dd.size();
    if (kk == 1) {
      // Flat: (1, 64, 1, q) and a remainder of r < 64 elements.
      int64_t e = dd[0], q = e / npu, rem = e % npu;
      if (q > 0) {
        std::vector<Stride4> s;
        for (size_t v = 0; v < nv; ++v)
          s.push_back({0, q * ss[v][0], 0, ss[v][0]});
        emitJob({1, uint32_t(npu), 1, uint32_t(q)}, base, s);
      }
      if (rem > 0) {
        std::vector<uint64_t> b2(nv);
        std::vector<Stride4> s;
        for (size_t v = 0; v < nv; ++v) {
          b2[v] = base[v] + uint64_t(q * npu * ss[v][0]) * elemBytes(prec(v));
          s.push_back({0, ss[v][0], 0, ss[v][0]});
        }
        emitJob({1, uint32_t(rem), 1, 1}, b2, s);
      }
      continue;
    }
    // An input constant along B but not along A (one value per row: a
    // per-channel gate or bias) would be needed in every lane once B
    // spreads over the lanes, one DDR run per element; kept (1, A, 1, B)
    // it is one value per lane, which a group of one reads in place.
    auto perRow = [&] {
      for (size_t v = 0; v + 1 < nv; ++v)
        if (ss[v][1] == 0 && ss[v][0] != 0)
          return true;
      return false;
    };
    if (kk == 2 && dd[0] < npu && !perRow()) {
      // (A, B) with few rows: take a factor of B onto the lanes.
      int64_t b1 = 1;
      for (int64_t f = std::min<int64_t>(npu, dd[1]); f > 1; --f)
        if (dd[1] % f == 0) {
          b1 = f;
          break;
        }
      int64_t b2 = dd[1] / b1;
      std::vector<Stride4> s;
      for (size_t v = 0; v < nv; ++v)
        s.push_back({ss[v][0], b2 * ss[v][1], 0, ss[v][1]});
      emitJob({uint32_t(dd[0]), uint32_t(b1), 1, uint32_t(b2)}, base, s);
      continue;
    }
    while (dd.size() < 4) {
      // (A, B) -> (1, A, 1, B); (A, B, C) -> (A, B, 1, C).
      size_t at = dd.size() == 3 ? 2 : (dd.size() == 2 ? 0 : 0);
      if (dd.size() == 2) {
        dd.insert(dd.begin(), 1);
        dd.insert(dd.begin() + 2, 1);
        for (size_t v = 0; v < nv; ++v) {
          ss[v].insert(ss[v].begin(), 0);
          ss[v].insert(ss[v].begin() + 2, 0);
        }
        break;
      }
      dd.insert(dd.begin() + at, 1);
      for (size_t v = 0; v < nv; ++v)
        ss[v].insert(ss[v].begin() + at, 0);
    }
    std::vector<Stride4> s;
    for (size_t v = 0; v < nv; ++v)
      s.push_back({ss[v][0], ss[v][1], ss[v][2], ss[v][3]});
    emitJob(
        {uint32_t(dd[0]), uint32_t(dd[1]), uint32_t(dd[2]), uint32_t(dd[3])},
        base, s);
  }
  return jobs;
}

ArOp arOpOf(BinaryKind k) {
  switch (k) {
  case BinaryKind::Add:
    return ArOp::Add;
  case BinaryKind::Sub:
    return ArOp::Sub;
  case BinaryKind::Mul:
    return ArOp::Mul;
  case BinaryKind::Div:
    return ArOp::Div;
  case BinaryKind::Max:
    return ArOp::Max;
  case BinaryKind::Min:
    return ArOp::Min;
  case BinaryKind::Pow:
    break;
  }
  throw Error("backend: pow has no AR form");
}

} // namespace detail

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

namespace {

void checkSameCount(const OpCtx &ctx, const GTensor &in, const GTensor &out) {
  if (in.numElements() != out.numElements())
    ctx.fail("input has " + std::to_string(in.numElements()) +
             " elements, output " + std::to_string(out.numElements()));
}

std::vector<int64_t> dims(Shape4 s) {
  return {int64_t(s.n), int64_t(s.c), int64_t(s.h), int64_t(s.w)};
}

/// An element-wise op alone, as groups of one (runAlone): over its own
/// tensors when they are 4-D and its local form takes them (as the
/// layer-group pass runs it alone), else over each of broadcastJobs' 4-D
/// views of them (a dense tensor flattened to fill the lanes, the dims of a
/// higher rank looped over, broadcasting as zero DDR strides, which the
/// loads materialise). The operands `inPlace` marks (bit k: acts[k]), read
/// by the ARs only, keep a broadcast along H and W as a value of one row /
/// column, read at every output row / column through zero local strides: a
/// per-channel gate (PP-OCR rec's INT8 squeeze-excite (1, 480, 6, 80) x
/// (1, 480, 1, 1)) would otherwise cost one DDR run per element.
/// `sameCount`: an op of one input read with the output's shape.
template <typename P>
void runAloneEltwise(CmdEmitter &em, const OpCtx &ctx, const P &p,
                     const std::vector<GTensor P::*> &acts, unsigned inPlace,
                     bool sameCount) {
  P q = p;
  if (sameCount)
    for (GTensor P::*m : acts)
      (q.*m).shape = p.output.shape;
  // Direct: every operand 4-D, of the output's shape or (marked) one row /
  // column of it; every operand is a group value here, so one broadcast
  // along N or C (a weight's place in a layer group) takes the views.
  const std::vector<int64_t> &o = q.output.shape;
  std::vector<GTensor> ins;
  bool direct = o.size() == 4;
  for (size_t k = 0; k < acts.size(); ++k) {
    const GTensor &t = q.*acts[k];
    ins.push_back(t);
    direct = direct && t.shape.size() == 4 &&
             (t.shape == o || ((inPlace >> k & 1) && broadcastsHW(t, o)));
  }
  if (direct && localOpSupport(q, em.chip()).empty()) {
    runAlone(em, ctx.kernel, q, ins, q.output);
    return;
  }
  std::vector<EltJob> jobs;
  try {
    jobs = broadcastJobs(em.chip(), ins, q.output);
  } catch (const Error &e) {
    ctx.fail(e.what());
  }
  for (const EltJob &j : jobs) {
    P r = q;
    std::vector<GTensor> vals;
    AloneStrides st;
    for (size_t k = 0; k < acts.size(); ++k) {
      const DView &v = j.inputs[k];
      GTensor t = q.*acts[k];
      t.addr = v.addr;
      t.shape = dims(j.shape);
      if (inPlace >> k & 1) {
        if (v.stride.h == 0)
          t.shape[2] = 1;
        if (v.stride.w == 0)
          t.shape[3] = 1;
      }
      r.*acts[k] = t;
      vals.push_back(t);
      st.push_back(v.stride);
    }
    r.output.addr = j.output.addr;
    r.output.shape = dims(j.shape);
    st.push_back(j.output.stride);
    runAlone(em, ctx.kernel, r, vals, r.output, nullptr, st);
  }
}

} // namespace

void unary(CmdEmitter &em, const UnaryParams &p) {
  OpCtx ctx{"unary", p.name};
  requireFloat(ctx, p.input, "input");
  requireFloat(ctx, p.output, "output");
  checkSameCount(ctx, p.input, p.output);
  runAloneEltwise(em, ctx, p, {&UnaryParams::input}, 0, true);
}

namespace {

bool isIntPrec(Prec p) {
  return p == Prec::Int8 || p == Prec::Int16 || p == Prec::Int32;
}

void requireCastable(const OpCtx &ctx, const GTensor &t, const char *what) {
  if (!isa::isFloat(t.prec) && !isIntPrec(t.prec))
    ctx.fail(std::string(what) + " has precision " + isa::precName(t.prec) +
             "; cast supports F32, F16, BF16, Int8, Int16 and Int32");
}

} // namespace

void detail::castTile(CmdEmitter &em, const CastParams &p, const LTensor &inT,
                      const LTensor &outT, const LTensor *viaInt) {
  LTensor in = inT, out = outT;
  in.isSigned = p.input.isSigned;
  out.isSigned = p.output.isSigned;
  if (p.quant) {
    if (isa::isFloat(p.input.prec))
      rqFloat(em, out, in, float(1.0 / p.quant->scale), p.quant->zeroPoint,
              p.round);
    else
      dqFloat(em, out, in, float(p.quant->scale), p.quant->zeroPoint);
    return;
  }
  if (p.viaInt) {
    if (!viaInt)
      throw Error("backend: cast '" + p.name + "' needs its integer tile");
    LTensor t = *viaInt;
    t.isSigned = p.viaInt->isSigned;
    ar(em, ArOp::Cast, t, Opd::of(in), Opd(), p.round);
    // Back to float: integers round to nearest even like every other
    // activation rounding.
    ar(em, ArOp::Cast, out, Opd::of(t));
    return;
  }
  bool sameType =
      p.input.prec == p.output.prec &&
      (isa::isFloat(p.input.prec) || p.input.isSigned == p.output.isSigned);
  if (sameType)
    ar(em, ArOp::Copy, out, Opd::of(in));
  else
    ar(em, ArOp::Cast, out, Opd::of(in), Opd(), p.round);
}

void cast(CmdEmitter &em, const CastParams &p) {
  OpCtx ctx{"cast", p.name};
  requireCastable(ctx, p.input, "input");
  requireCastable(ctx, p.output, "output");
  checkSameCount(ctx, p.input, p.output);
  if (p.quant) {
    bool toInt = isa::isFloat(p.input.prec) && p.output.prec == Prec::Int8;
    bool toFloat = p.input.prec == Prec::Int8 && isa::isFloat(p.output.prec);
    if (!toInt && !toFloat)
      ctx.fail("a quantising cast converts between a float type and int8");
    if (!(p.quant->scale > 0) || !std::isfinite(p.quant->scale))
      ctx.fail("the quantisation scale must be positive and finite");
  }
  if (p.viaInt) {
    requireFloat(ctx, p.input, "input (with an integer step)");
    requireFloat(ctx, p.output, "output (with an integer step)");
    if (!isIntPrec(p.viaInt->prec))
      ctx.fail(std::string("the intermediate type ") +
               isa::precName(p.viaInt->prec) + " is not Int8, Int16 or Int32");
  }
  runAloneEltwise(em, ctx, p, {&CastParams::input}, 0, true);
}

void detail::emitBinaryInt8Tile(CmdEmitter &em, const BinaryInt8Params &p,
                        const LTensor &a, const LTensor &b, const LTensor &out,
                        const LTensor &ta, const LTensor &tb) {
  bool sub = p.kind == BinaryKind::Sub;
  bool asym = p.zeroPoint[0] || p.zeroPoint[1] || p.outZeroPoint;
  if (p.tflite && p.kind != BinaryKind::Mul) {
    auto step = [&](const LTensor &src, const LTensor &dst,
                    const RequantStep &s, int32_t zp) {
      RqCmd r;
      r.input = src;
      r.output = dst;
      r.multiplier = s.multiplier;
      r.rshift = s.rshift;
      r.zeroPoint = zp;
      r.round = s.round;
      rq(em, r);
    };
    const LTensor *in[2] = {&a, &b}, *t[2] = {&ta, &tb};
    for (int k = 0; k < 2; ++k) {
      ar(em, ArOp::Sub, *t[k], Opd::of(*in[k]),
         Opd::immInt(p.zeroPoint[k], Prec::Int32));
      step(*t[k], *t[k], p.tflite->steps[k][0], 0);
      step(*t[k], *t[k], p.tflite->steps[k][1], 0);
    }
    ar(em, sub ? ArOp::Sub : ArOp::Add, ta, Opd::of(ta), Opd::of(tb));
    step(ta, ta, p.tflite->steps[2][0], 0);
    step(ta, out, p.tflite->steps[2][1], p.outZeroPoint);
    return;
  }
  if (p.kind == BinaryKind::Mul) {
    // (a - zp_a) (b - zp_b) in int32, then RQ1 (multiplier[0], rshift[0],
    // the output zero point).
    if (p.zeroPoint[0] || p.zeroPoint[1]) {
      ar(em, ArOp::Sub, ta, Opd::of(a),
         Opd::immInt(p.zeroPoint[0], Prec::Int32));
      ar(em, ArOp::Sub, tb, Opd::of(b),
         Opd::immInt(p.zeroPoint[1], Prec::Int32));
      ar(em, ArOp::Mul, ta, Opd::of(ta), Opd::of(tb));
    } else {
      ar(em, ArOp::Mul, ta, Opd::of(a), Opd::of(b));
    }
    RqCmd r;
    r.input = ta;
    r.output = out;
    r.multiplier = p.multiplier[0];
    r.rshift = p.rshift[0];
    r.zeroPoint = p.outZeroPoint;
    r.round = p.round;
    rq(em, r);
    return;
  }
  if (!asym) {
    arShift(em, ArOp::Mul, ta, Opd::of(a),
            Opd::immInt(p.multiplier[0], Prec::Int32), p.rshift[0], p.round);
    arShift(em, ArOp::Mul, tb, Opd::of(b),
            Opd::immInt(p.multiplier[1], Prec::Int32), p.rshift[1], p.round);
    if (out.isSigned) {
      arShift(em, sub ? ArOp::SubSat : ArOp::AddSat, out, Opd::of(ta),
              Opd::of(tb), p.shift, p.round);
    } else {
      arShift(em, sub ? ArOp::Sub : ArOp::Add, ta, Opd::of(ta), Opd::of(tb),
              p.shift, p.round);
      ar(em, ArOp::Cast, out, Opd::of(ta), Opd(), p.round);
    }
    return;
  }
  const LTensor *in[2] = {&a, &b}, *t[2] = {&ta, &tb};
  for (int k = 0; k < 2; ++k) {
    ar(em, ArOp::Sub, *t[k], Opd::of(*in[k]),
       Opd::immInt(p.zeroPoint[k], Prec::Int32));
    arShift(em, ArOp::Mul, *t[k], Opd::of(*t[k]),
            Opd::immInt(p.multiplier[k], Prec::Int32), p.rshift[k], p.round);
  }
  arShift(em, sub ? ArOp::Sub : ArOp::Add, ta, Opd::of(ta), Opd::of(tb),
          p.shift, p.round);
  ar(em, ArOp::Add, ta, Opd::of(ta), Opd::immInt(p.outZeroPoint, Prec::Int32));
  ar(em, ArOp::Cast, out, Opd::of(ta), Opd(), p.round);
}

void lut(CmdEmitter &em, const LutParams &p) {
  OpCtx ctx{"lut", p.name};
  if (p.input.prec != Prec::Int8 || p.output.prec != Prec::Int8)
    ctx.fail("a table lookup takes an int8 / uint8 input and output");
  checkSameCount(ctx, p.input, p.output);
  runAloneEltwise(em, ctx, p, {&LutParams::input}, 0, true);
}

void binaryInt8(CmdEmitter &em, const BinaryInt8Params &p) {
  OpCtx ctx{"binaryInt8", p.name};
  for (auto [t, what] : {std::pair{&p.lhs, "lhs"}, std::pair{&p.rhs, "rhs"},
                         std::pair{&p.output, "output"}})
    if (t->prec != Prec::Int8)
      ctx.fail(std::string(what) + " must be int8 / uint8, got " +
               isa::precName(t->prec));
  if (p.kind != BinaryKind::Add && p.kind != BinaryKind::Sub &&
      p.kind != BinaryKind::Mul)
    ctx.fail("only add, sub and mul have an integer form");
  for (int k = 0; k < 2 && p.kind != BinaryKind::Mul && !p.tflite; ++k)
    if (p.multiplier[k] < 0 || p.multiplier[k] > 0xFFFF)
      ctx.fail("multipliers must fit 16 bits");
  // Both operands reach emitBinaryInt8Tile's AR commands only: a
  // per-(n, c) one stays one value per channel (runAloneEltwise).
  runAloneEltwise(em, ctx, p, {&BinaryInt8Params::lhs, &BinaryInt8Params::rhs},
                  3u, false);
}

void binary(CmdEmitter &em, const BinaryParams &p) {
  OpCtx ctx{"binary", p.name};
  requireFloat(ctx, p.lhs, "lhs");
  requireFloat(ctx, p.rhs, "rhs");
  requireFloat(ctx, p.output, "output");
  // A power reads whole tiles of both (localOpSupport); the others read
  // a per-(n, c) operand in place.
  bool isPow = p.kind == BinaryKind::Pow;
  runAloneEltwise(em, ctx, p, {&BinaryParams::lhs, &BinaryParams::rhs},
                  isPow ? 0u : 3u, false);
}

void scale(CmdEmitter &em, const ScaleParams &p) {
  OpCtx ctx{"scale", p.name};
  requireFloat(ctx, p.input, "input");
  requireFloat(ctx, p.output, "output");
  if (p.input.prec != p.output.prec || p.scale.prec != p.output.prec ||
      p.bias.prec != p.output.prec)
    ctx.fail("input, scale, bias and output must have one precision");
  if (p.input.shape != p.output.shape)
    ctx.fail("input and output must have one shape");
  // One scale and bias per channel of a 4-D tensor: its local form (the
  // weights resident). Otherwise the product and then the sum, each an
  // element-wise op alone, rounding where the local form rounds (after the
  // product, after the sum; the function last).
  if (localOpSupport(p, em.chip()).empty()) {
    runAlone(em, "scale", p, {p.input}, p.output);
    return;
  }
  binary(em, {p.name, p.input, p.scale, p.output, BinaryKind::Mul, {}});
  binary(em, {p.name, p.output, p.bias, p.output, BinaryKind::Add, p.act});
}

void binaryConst(CmdEmitter &em, const BinaryConstParams &p) {
  OpCtx ctx{"binary", p.name};
  requireFloat(ctx, p.input, "input");
  requireFloat(ctx, p.output, "output");
  checkSameCount(ctx, p.input, p.output);
  if (p.kind == BinaryKind::Pow && !p.constOnLeft) {
    unary(em, {p.name, p.input, p.output, {UnaryKind::Pow, p.value}});
    if (p.act.kind != UnaryKind::None)
      unary(em, {p.name, p.output, p.output, p.act});
    return;
  }
  if (p.kind == BinaryKind::Pow) {
    // c ^ x = exp(x ln c).
    unary(em, {p.name,
               p.input,
               p.output,
               {UnaryKind::Scale, std::log(p.value), 0.0f}});
    unary(em, {p.name, p.output, p.output, {UnaryKind::Exp}});
    if (p.act.kind != UnaryKind::None)
      unary(em, {p.name, p.output, p.output, p.act});
    return;
  }
  runAloneEltwise(em, ctx, p, {&BinaryConstParams::input}, 0, true);
}

void prelu(CmdEmitter &em, const PReluParams &p) {
  OpCtx ctx{"prelu", p.name};
  requireFloat(ctx, p.input, "input");
  requireFloat(ctx, p.slope, "slope");
  requireFloat(ctx, p.output, "output");
  if (p.input.prec != p.output.prec)
    ctx.fail("input and output must have one precision");
  // A per-channel slope of a 4-D tensor resident (as in the layer
  // groups), else a value, read in place when it is constant along H / W.
  if (localOpSupport(p, em.chip()).empty() &&
      isPerChannel(p.slope, p.output.shape[1])) {
    runAlone(em, "prelu", p, {p.input}, p.output);
    return;
  }
  runAloneEltwise(em, ctx, p, {&PReluParams::input, &PReluParams::slope}, 2u,
                  false);
}

void where(CmdEmitter &em, const WhereParams &p) {
  OpCtx ctx{"where", p.name};
  requireFloat(ctx, p.x, "x");
  requireFloat(ctx, p.y, "y");
  requireFloat(ctx, p.output, "output");
  if (p.x.prec != p.output.prec || p.y.prec != p.output.prec)
    ctx.fail("x, y and output must have one precision");
  runAloneEltwise(em, ctx, p,
                  {&WhereParams::cond, &WhereParams::x, &WhereParams::y}, 7u,
                  false);
}

//===----------------------------------------------------------------------===//
// Compare
//===----------------------------------------------------------------------===//

namespace {

/// out = (a kind b) ? 1 : 0 with sCMP selects. Le / Ge take two commands
/// (equality into `eqTmp`, then the strict relation choosing between 1 and
/// it) so that NaN compares false, as ONNX requires; Ne is Eq with the
/// selected values swapped (NaN != x is true).
void emitCompare(CmdEmitter &em, CompareKind kind, const LTensor &out,
                 const Opd &a, const Opd &b, const LTensor &eqTmp) {
  Opd one = Opd::imm(1.0f, out.prec), zero = Opd::imm(0.0f, out.prec);
  switch (kind) {
  case CompareKind::Eq:
    cmpSelect(em, CmpOp::SelEq, out, a, b, one, zero);
    return;
  case CompareKind::Ne:
    cmpSelect(em, CmpOp::SelEq, out, a, b, zero, one);
    return;
  case CompareKind::Lt:
    cmpSelect(em, CmpOp::SelLt, out, a, b, one, zero);
    return;
  case CompareKind::Gt:
    cmpSelect(em, CmpOp::SelGt, out, a, b, one, zero);
    return;
  case CompareKind::Le:
  case CompareKind::Ge:
    cmpSelect(em, CmpOp::SelEq, eqTmp, a, b, one, zero);
    cmpSelect(em, kind == CompareKind::Le ? CmpOp::SelLt : CmpOp::SelGt, out, a,
              b, one, Opd::of(eqTmp));
    return;
  }
}

bool needsEqTemp(CompareKind k) {
  return k == CompareKind::Le || k == CompareKind::Ge;
}

/// The relation with its operands swapped: (c kind x) == (x mirrored c).
CompareKind mirrored(CompareKind k) {
  switch (k) {
  case CompareKind::Lt:
    return CompareKind::Gt;
  case CompareKind::Gt:
    return CompareKind::Lt;
  case CompareKind::Le:
    return CompareKind::Ge;
  case CompareKind::Ge:
    return CompareKind::Le;
  default:
    return k;
  }
}

/// The equality scratch of a Le / Ge result, in scratch tile `t` (empty
/// otherwise).
LTensor eqTemp(CmdEmitter &em, CompareKind kind, const LTensor &out,
               const UnaryScratch &s, unsigned t) {
  LTensor eq;
  if (needsEqTemp(kind)) {
    eq = localTensor(em.chip(), s.temps[t], out.prec, out.shape);
    eq.isSigned = out.isSigned;
  }
  return eq;
}

} // namespace

namespace detail {

void emitPReluTile(CmdEmitter &em, const LTensor &x, const Opd &slope,
                   const LTensor &out, const UnaryScratch &s) {
  LTensor t = localTensor(em.chip(), s.temps[0], out.prec, out.shape);
  ar(em, ArOp::Mul, t, Opd::of(x), slope);
  cmpSelect(em, CmpOp::SelGt, out, Opd::of(x), Opd::imm(0.0f, x.prec),
            Opd::of(x), Opd::of(t));
}

void whereTile(CmdEmitter &em, const LTensor &out, const LTensor &cond,
               const LTensor &x, const LTensor &y) {
  cmpSelect(em, CmpOp::SelEq, out, Opd::of(cond), Opd::immInt(0, cond.prec),
            Opd::of(y), Opd::of(x));
}

unsigned compareTemps(CompareKind kind, bool mixed) {
  return (mixed ? 2 : 0) + (needsEqTemp(kind) ? 1 : 0);
}

void compareTile(CmdEmitter &em, CompareKind kind, const LTensor &out,
                 const LTensor &a, const LTensor &b, const UnaryScratch &s) {
  // sCMP compares operands of one type: mixed precisions meet in fp32
  // (exact: every F16 / BF16 value is an fp32 value).
  Opd oa = Opd::of(a), ob = Opd::of(b);
  unsigned next = 0;
  if (a.prec != b.prec) {
    LTensor fa = localTensor(em.chip(), s.temps[next++], Prec::Fp32, a.shape);
    LTensor fb = localTensor(em.chip(), s.temps[next++], Prec::Fp32, b.shape);
    ar(em, a.prec == Prec::Fp32 ? ArOp::Copy : ArOp::Cast, fa, oa);
    ar(em, b.prec == Prec::Fp32 ? ArOp::Copy : ArOp::Cast, fb, ob);
    oa = Opd::of(fa);
    ob = Opd::of(fb);
  }
  emitCompare(em, kind, out, oa, ob, eqTemp(em, kind, out, s, next));
}

void compareConstTile(CmdEmitter &em, const CompareConstParams &p,
                      const LTensor &out, const LTensor &in,
                      const UnaryScratch &s) {
  // The tensor stays opd0: (c kind x) is (x mirrored c).
  emitCompare(em, p.constOnLeft ? mirrored(p.kind) : p.kind, out, Opd::of(in),
              Opd::imm(p.value, in.prec), eqTemp(em, p.kind, out, s, 0));
}

} // namespace detail

void compare(CmdEmitter &em, const CompareParams &p) {
  OpCtx ctx{"compare", p.name};
  requireFloat(ctx, p.lhs, "lhs");
  requireFloat(ctx, p.rhs, "rhs");
  requireCastable(ctx, p.output, "output");
  runAloneEltwise(em, ctx, p, {&CompareParams::lhs, &CompareParams::rhs}, 3u,
                  false);
}

void compareConst(CmdEmitter &em, const CompareConstParams &p) {
  OpCtx ctx{"compare", p.name};
  requireFloat(ctx, p.input, "input");
  requireCastable(ctx, p.output, "output");
  checkSameCount(ctx, p.input, p.output);
  runAloneEltwise(em, ctx, p, {&CompareConstParams::input}, 0, true);
}

void copy(CmdEmitter &em, const std::string &name, const GTensor &input,
          const GTensor &output) {
  OpCtx ctx{"copy", name};
  checkSameCount(ctx, input, output);
  if (input.prec != output.prec)
    ctx.fail("copy cannot change the precision (use cast)");
  if (input.addr == output.addr)
    return;
  int64_t e = input.numElements();
  copyGlobalNd(em, input.prec, input.addr, {1}, output.addr, {1}, {e});
}

} // namespace tpu::backend
