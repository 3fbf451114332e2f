//===- Elementwise.cpp - Element-wise kernels and their tiling ------------===//
//
// Unary functions, binary operations with numpy broadcasting, constants,
// PReLU, casts (float and integer types), comparisons and where. All share
// one engine (runEltwise): the output is described as 4-D jobs whose input
// views may broadcast (zero strides); each job is cut into tiles that fit
// local memory, each tile is loaded, computed and stored, double-buffered.
//
// Lane mapping: a dense tensor is flattened and laid out as (1, 64, 1, q)
// plus a remainder of fewer than 64 elements, so every lane works; with
// broadcasting the merged dims map to (n, c, h, w) and a short channel dim
// borrows a factor of the innermost one.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include <algorithm>
#include <cmath>

namespace tpu::backend {

using namespace detail;

namespace detail {

namespace {

constexpr int64_t kMaxDim = 65535;

/// Largest v in [1, hi] with pred(v) (pred monotone decreasing); 0 if none.
int64_t largest(int64_t hi, const std::function<bool(int64_t)> &pred) {
  if (hi < 1 || !pred(1))
    return 0;
  return largestFitting(1, hi, pred);
}

} // namespace

Shape4 chooseTile(const isa::ChipParams &chip, Shape4 s,
                  const std::function<bool(Shape4)> &fits) {
  int64_t npu = chip.npuNum;
  Shape4 t{1, uint32_t(std::min<int64_t>(s.c, npu)), 1, 1};
  int64_t maxW = std::min<int64_t>(s.w, kMaxDim);
  int64_t w = largest(maxW, [&](int64_t v) {
    return fits({1, t.c, 1, uint32_t(v)});
  });
  if (w == 0)
    return {0, 0, 0, 0};
  t.w = uint32_t(w);
  if (t.w < s.w)
    return t;
  t.h = uint32_t(largest(std::min<int64_t>(s.h, kMaxDim), [&](int64_t v) {
    return fits({1, t.c, uint32_t(v), t.w});
  }));
  if (t.h < s.h)
    return t;
  int64_t slots =
      largest(ceilDiv(std::min<int64_t>(s.c, kMaxDim), npu), [&](int64_t v) {
        uint32_t c = uint32_t(
            std::min<int64_t>(std::min<int64_t>(s.c, kMaxDim), v * npu));
        return fits({1, c, t.h, t.w});
      });
  t.c = uint32_t(std::min<int64_t>(std::min<int64_t>(s.c, kMaxDim),
                                   std::max<int64_t>(slots, 1) * npu));
  if (t.c < s.c)
    return t;
  t.n = uint32_t(std::max<int64_t>(
      1, largest(std::min<int64_t>(s.n, kMaxDim), [&](int64_t v) {
        return fits({uint32_t(v), t.c, t.h, t.w});
      })));
  return t;
}

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
    // it is one value per lane, which runEltwise loads once per row.
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

void runEltwise(
    CmdEmitter &em, const OpCtx &ctx, const std::vector<EltJob> &jobs,
    Prec outPrec, unsigned temps, const std::vector<UnaryKind> &tables,
    const std::function<void(const std::vector<LTensor> &, const LTensor &,
                             const UnaryScratch &)> &compute,
    unsigned arBroadcastMask) {
  if (jobs.empty())
    return;
  const isa::ChipParams &chip = em.chip();
  LocalAlloc alloc(chip, ctx);
  UnaryScratch scratch;
  scratch.tables = alloc.alloc(unaryTableBytes(), "coefficient tables");
  for (UnaryKind k : tables)
    prepareUnaryTables(em, k, scratch);
  size_t nIn = jobs[0].inputs.size();
  std::vector<Prec> inPrec;
  for (const DView &v : jobs[0].inputs)
    inPrec.push_back(v.prec);
  // Per-channel inputs read in place: a tile of them is (n, c, 1, 1), at
  // most (job n, job c, 1, 1); two buffers of that size each, reserved
  // before the tiles are sized. Materialising the broadcast instead would
  // load the same element once per h x w position (a DDR run per element).
  std::vector<bool> perChannel(nIn, false);
  std::vector<std::array<uint64_t, 2>> inBuf(nIn);
  for (size_t k = 0; k < nIn && k < 32; ++k) {
    if (!(arBroadcastMask >> k & 1))
      continue;
    bool all = true, wider = false;
    uint64_t bytes = 0;
    for (const EltJob &j : jobs) {
      const DView &v = j.inputs[k];
      all = all && (v.stride.h == 0 || j.shape.h == 1) &&
            (v.stride.w == 0 || j.shape.w == 1);
      wider = wider || j.shape.h * j.shape.w > 1;
      bytes = std::max(bytes,
                       euBytes(chip, inPrec[k], {j.shape.n, j.shape.c, 1, 1}));
    }
    // Keep the reservation small against the tiles (1/32 of local memory
    // per buffer); larger per-channel operands take the ordinary path.
    if (!all || !wider || bytes > alloc.remaining() / 32)
      continue;
    perChannel[k] = true;
    for (auto &b : inBuf[k])
      b = alloc.alloc(bytes, "per-channel operand tile");
  }
  auto perChannelTile = [&](Shape4 t) { return Shape4{t.n, t.c, 1, 1}; };
  // Split the free memory in proportion to the element bytes each buffer
  // holds: two copies of every input and of the output, one of each temp.
  uint64_t units = 2 * elemBytes(outPrec) + uint64_t(temps) * sizeof(float);
  for (size_t k = 0; k < nIn; ++k)
    if (!perChannel[k])
      units += 2 * elemBytes(inPrec[k]);
  uint64_t freeBytes = alloc.remaining();
  uint64_t align = chip.localAlign;
  auto budget = [&](Prec p) {
    return freeBytes / units * elemBytes(p) / align * align;
  };
  auto fits = [&](Shape4 t) {
    for (size_t k = 0; k < nIn; ++k)
      if (!perChannel[k] && euBytes(chip, inPrec[k], t) > budget(inPrec[k]))
        return false;
    if (temps && euBytes(chip, Prec::Fp32, t) > budget(Prec::Fp32))
      return false;
    return euBytes(chip, outPrec, t) <= budget(outPrec);
  };
  struct Step {
    size_t job;
    Shape4 at, shape;
  };
  std::vector<Step> steps;
  for (size_t j = 0; j < jobs.size(); ++j) {
    Shape4 s = jobs[j].shape;
    Shape4 t = chooseTile(chip, s, fits);
    if (t.w == 0)
      ctx.fail("does not fit in local memory: not even one element per lane");
    t = shrinkForPipeline(chip, s, t, [&](Shape4 x) {
      uint64_t b = euBytes(chip, outPrec, x);
      for (size_t k = 0; k < nIn; ++k)
        b += euBytes(chip, inPrec[k], perChannel[k] ? perChannelTile(x) : x);
      return b;
    });
    for (Range1 n : splitRange(s.n, t.n))
      for (Range1 c : splitRange(s.c, t.c))
        for (Range1 h : splitRange(s.h, t.h))
          for (Range1 w : splitRange(s.w, t.w))
            steps.push_back({j,
                             {uint32_t(n.begin), uint32_t(c.begin),
                              uint32_t(h.begin), uint32_t(w.begin)},
                             {uint32_t(n.size), uint32_t(c.size),
                              uint32_t(h.size), uint32_t(w.size)}});
  }
  // Buffers as large as the largest tile (at most the budget), so that the
  // output tiles can start on a bank of their own behind the input tiles:
  // an element-wise command writing a bank it reads loses its streaming
  // time again (bank conflicts; LocalAlloc::startNewBank).
  auto largest = [&](Prec p) {
    uint64_t b = 0;
    for (const Step &st : steps)
      b = std::max(b, euBytes(chip, p, st.shape));
    return uint64_t(alignUp(int64_t(b), int64_t(align)));
  };
  for (size_t i = 0; i < nIn; ++i)
    if (!perChannel[i])
      for (auto &b : inBuf[i])
        b = alloc.alloc(largest(inPrec[i]), "input tile");
  alloc.startNewBank(2 * largest(outPrec) +
                     uint64_t(temps) * largest(Prec::Fp32));
  std::array<uint64_t, 2> outBuf;
  for (auto &b : outBuf)
    b = alloc.alloc(largest(outPrec), "output tile");
  for (unsigned t = 0; t < temps; ++t)
    scratch.temps.push_back(alloc.alloc(largest(Prec::Fp32), "scratch tile"));

  // What the load writes; for a per-channel input, (n, c, 1, 1).
  auto loadTile = [&](size_t i, size_t k) {
    Shape4 s = perChannel[k] ? perChannelTile(steps[i].shape) : steps[i].shape;
    return localTensor(chip, inBuf[k][i % 2], inPrec[k], s);
  };
  // What the compute reads: the per-channel tile seen with the tile's shape.
  auto inTile = [&](size_t i, size_t k) {
    LTensor t = loadTile(i, k);
    if (!perChannel[k])
      return t;
    return freeTensor(t.offset, t.prec, steps[i].shape,
                      {t.stride.n, t.stride.c, 0, 0});
  };
  auto outTile = [&](size_t i) {
    return localTensor(chip, outBuf[i % 2], outPrec, steps[i].shape);
  };
  pipeline(
      steps.size(),
      [&](size_t i) {
        const Step &s = steps[i];
        for (size_t k = 0; k < nIn; ++k) {
          LTensor dst = loadTile(i, k);
          load(em, subView(jobs[s.job].inputs[k], s.at, dst.shape), dst);
        }
      },
      [&](size_t i) {
        std::vector<LTensor> ins;
        for (size_t k = 0; k < nIn; ++k)
          ins.push_back(inTile(i, k));
        compute(ins, outTile(i), scratch);
      },
      [&](size_t i) {
        const Step &s = steps[i];
        store(em, outTile(i), subView(jobs[s.job].output, s.at, s.shape));
      });
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

/// A dense tensor viewed with the output's shape (for same-count ops).
GTensor reshaped(const GTensor &t, const std::vector<int64_t> &shape) {
  GTensor r = t;
  r.shape = shape;
  return r;
}


// The per-tile command sequences of the kernels.

/// out = act(a (k) b): the tile of binary and binaryConst (k not Pow).
void emitBinaryTile(CmdEmitter &em, BinaryKind k, const Opd &a, const Opd &b,
                    const Activation &act, const LTensor &out,
                    const UnaryScratch &s) {
  ar(em, arOpOf(k), out, a, b);
  if (act.kind != UnaryKind::None)
    emitUnary(em, act, out, out, s);
}

/// out = act(x * scale + bias), rounding after the product and the sum:
/// the tile of scale.
void emitScaleTile(CmdEmitter &em, const Opd &x, const Opd &scale,
                   const Opd &bias, const Activation &act, const LTensor &out,
                   const UnaryScratch &s) {
  ar(em, ArOp::Mul, out, x, scale);
  ar(em, ArOp::Add, out, Opd::of(out), bias);
  if (act.kind != UnaryKind::None)
    emitUnary(em, act, out, out, s);
}

} // namespace

void unary(CmdEmitter &em, const UnaryParams &p) {
  OpCtx ctx{"unary", p.name};
  requireFloat(ctx, p.input, "input");
  requireFloat(ctx, p.output, "output");
  checkSameCount(ctx, p.input, p.output);
  auto jobs = broadcastJobs(em.chip(), {reshaped(p.input, p.output.shape)}, p.output);
  runEltwise(
      em, ctx, jobs, p.output.prec, unaryTemps(p.fn.kind), {p.fn.kind},
      [&](const std::vector<LTensor> &in, const LTensor &out,
          const UnaryScratch &s) { emitUnary(em, p.fn, in[0], out, s); });
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
  auto jobs =
      broadcastJobs(em.chip(), {reshaped(p.input, p.output.shape)}, p.output);
  runEltwise(em, ctx, jobs, p.output.prec, p.viaInt ? 1 : 0, {},
             [&](const std::vector<LTensor> &ins, const LTensor &res,
                 const UnaryScratch &s) {
               if (!p.viaInt)
                 return castTile(em, p, ins[0], res);
               // The integer tile lives in the fp32 scratch tile (never
               // larger for the same shape).
               LTensor t = localTensor(em.chip(), s.temps[0], p.viaInt->prec,
                                       ins[0].shape);
               castTile(em, p, ins[0], res, &t);
             });
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
  auto jobs = broadcastJobs(em.chip(), {reshaped(p.input, p.output.shape)},
                            p.output);
  bool loaded = false;
  // The table goes into the coefficient-table area runEltwise reserves
  // (320 bytes per lane; no unary tables are prepared here).
  runEltwise(em, ctx, jobs, p.output.prec, 0, {},
             [&](const std::vector<LTensor> &ins, const LTensor &res,
                 const UnaryScratch &s) {
               if (!loaded) {
                 Shape4 ts{1, uint32_t(em.chip().npuNum), 1, 256};
                 load(em, DView{p.tableAddr, Prec::Int8, ts, {0, 0, 0, 1}},
                      localTensor(em.chip(), s.tables, Prec::Int8, ts,
                                  isa::LocalLayout::Compact));
                 loaded = true;
               }
               LTensor in = ins[0];
               if (in.layout != kStrEuAligned) {
                 ar(em, ArOp::Copy, res, Opd::of(in));
                 in = res;
               }
               lutGather(em, res, in, s.tables);
             });
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
  std::vector<EltJob> jobs;
  try {
    jobs = broadcastJobs(em.chip(), {p.lhs, p.rhs}, p.output);
  } catch (const Error &e) {
    ctx.fail(e.what());
  }
  // Two int32 scratch tiles (the fp32 temps have the same size). Both
  // inputs reach emitBinaryInt8Tile's AR commands only, so a per-channel
  // one (a squeeze-excite scale (1, C, 1, 1)) is loaded once per channel
  // and read with zero h / w strides, not materialised by a DMA that
  // moves one element per DDR run (PP-OCR rec's INT8 (1, 480, 6, 80) x
  // (1, 480, 1, 1) took 468651 cycles that way; compiler/docs/design.md,
  // "INT8").
  runEltwise(
      em, ctx, jobs, p.output.prec, 2, {},
      [&](const std::vector<LTensor> &in, const LTensor &res,
          const UnaryScratch &s) {
        LTensor a = in[0], b = in[1], out = res;
        a.isSigned = p.lhs.isSigned;
        b.isSigned = p.rhs.isSigned;
        out.isSigned = p.output.isSigned;
        LTensor ta = localTensor(em.chip(), s.temps[0], Prec::Int32, out.shape);
        LTensor tb = localTensor(em.chip(), s.temps[1], Prec::Int32, out.shape);
        emitBinaryInt8Tile(em, p, a, b, out, ta, tb);
      },
      /*arBroadcastMask=*/3u);
}

void binary(CmdEmitter &em, const BinaryParams &p) {
  OpCtx ctx{"binary", p.name};
  requireFloat(ctx, p.lhs, "lhs");
  requireFloat(ctx, p.rhs, "rhs");
  requireFloat(ctx, p.output, "output");
  std::vector<EltJob> jobs;
  try {
    jobs = broadcastJobs(em.chip(), {p.lhs, p.rhs}, p.output);
  } catch (const Error &e) {
    ctx.fail(e.what());
  }
  bool isPow = p.kind == BinaryKind::Pow;
  unsigned temps = std::max(unaryTemps(p.act.kind),
                            isPow ? unaryTemps(UnaryKind::Pow) + 1 : 0u);
  std::vector<UnaryKind> tables{p.act.kind};
  if (isPow)
    tables.push_back(UnaryKind::Pow);
  runEltwise(
      em, ctx, jobs, p.output.prec, temps, tables,
      [&](const std::vector<LTensor> &in, const LTensor &out,
          const UnaryScratch &s) {
        if (!isPow) {
          emitBinaryTile(em, p.kind, Opd::of(in[0]), Opd::of(in[1]), p.act, out,
                         s);
          return;
        }
        emitPowTensor(em, in[0], in[1], out, s);
        if (p.act.kind != UnaryKind::None)
          emitUnary(em, p.act, out, out, s);
      },
      isPow ? 0u : 3u);
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
  std::vector<EltJob> jobs;
  try {
    jobs = broadcastJobs(em.chip(), {p.input, p.scale, p.bias}, p.output);
  } catch (const Error &e) {
    ctx.fail(e.what());
  }
  runEltwise(
      em, ctx, jobs, p.output.prec, unaryTemps(p.act.kind), {p.act.kind},
      [&](const std::vector<LTensor> &in, const LTensor &out,
          const UnaryScratch &s) {
        emitScaleTile(em, Opd::of(in[0]), Opd::of(in[1]), Opd::of(in[2]), p.act,
                      out, s);
      },
      // scale and bias only feed the ARs: read in place per channel.
      0b110u);
}

void binaryConst(CmdEmitter &em, const BinaryConstParams &p) {
  OpCtx ctx{"binary", p.name};
  requireFloat(ctx, p.input, "input");
  requireFloat(ctx, p.output, "output");
  checkSameCount(ctx, p.input, p.output);
  auto jobs = broadcastJobs(em.chip(), {reshaped(p.input, p.output.shape)}, p.output);
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
  runEltwise(em, ctx, jobs, p.output.prec, unaryTemps(p.act.kind), {p.act.kind},
             [&](const std::vector<LTensor> &in, const LTensor &out,
                 const UnaryScratch &s) {
               Opd x = Opd::of(in[0]);
               Opd c = Opd::imm(p.value, in[0].prec);
               emitBinaryTile(em, p.kind, p.constOnLeft ? c : x,
                              p.constOnLeft ? x : c, p.act, out, s);
             });
}

void prelu(CmdEmitter &em, const PReluParams &p) {
  OpCtx ctx{"prelu", p.name};
  requireFloat(ctx, p.input, "input");
  requireFloat(ctx, p.slope, "slope");
  requireFloat(ctx, p.output, "output");
  if (p.input.prec != p.output.prec)
    ctx.fail("input and output must have one precision");
  std::vector<EltJob> jobs;
  try {
    jobs = broadcastJobs(em.chip(), {p.input, p.slope}, p.output);
  } catch (const Error &e) {
    ctx.fail(e.what());
  }
  runEltwise(
      em, ctx, jobs, p.output.prec, 1, {},
      [&](const std::vector<LTensor> &in, const LTensor &out,
          const UnaryScratch &s) {
        emitPReluTile(em, in[0], Opd::of(in[1]), out, s);
      },
      /*arBroadcastMask=*/2u);
}

void where(CmdEmitter &em, const WhereParams &p) {
  OpCtx ctx{"where", p.name};
  requireFloat(ctx, p.x, "x");
  requireFloat(ctx, p.y, "y");
  requireFloat(ctx, p.output, "output");
  if (p.x.prec != p.output.prec || p.y.prec != p.output.prec)
    ctx.fail("x, y and output must have one precision");
  std::vector<EltJob> jobs;
  try {
    jobs = broadcastJobs(em.chip(), {p.cond, p.x, p.y}, p.output);
  } catch (const Error &e) {
    ctx.fail(e.what());
  }
  runEltwise(
      em, ctx, jobs, p.output.prec, 0, {},
      [&](const std::vector<LTensor> &in, const LTensor &out,
          const UnaryScratch &) { whereTile(em, out, in[0], in[1], in[2]); });
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
  std::vector<EltJob> jobs;
  try {
    jobs = broadcastJobs(em.chip(), {p.lhs, p.rhs}, p.output);
  } catch (const Error &e) {
    ctx.fail(e.what());
  }
  runEltwise(em, ctx, jobs, p.output.prec,
             compareTemps(p.kind, p.lhs.prec != p.rhs.prec), {},
             [&](const std::vector<LTensor> &in, const LTensor &res,
                 const UnaryScratch &s) {
               LTensor out = res;
               out.isSigned = p.output.isSigned;
               compareTile(em, p.kind, out, in[0], in[1], s);
             });
}

void compareConst(CmdEmitter &em, const CompareConstParams &p) {
  OpCtx ctx{"compare", p.name};
  requireFloat(ctx, p.input, "input");
  requireCastable(ctx, p.output, "output");
  checkSameCount(ctx, p.input, p.output);
  auto jobs = broadcastJobs(em.chip(), {reshaped(p.input, p.output.shape)}, p.output);
  runEltwise(em, ctx, jobs, p.output.prec, compareTemps(p.kind, false), {},
             [&](const std::vector<LTensor> &in, const LTensor &res,
                 const UnaryScratch &s) {
               LTensor out = res;
               out.isSigned = p.output.isSigned;
               compareConstTile(em, p, out, in[0], s);
             });
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
