//===- MatMul.cpp - Batched matrix multiply -------------------------------===//
//
// sMM (mm.normal) in the matrix(w) layouts of isa/docs/bm1684x.md 3.3: the left
// matrix's K columns spread over the lanes in blocks of lw = ceil(K / 64),
// the right matrix's N columns in blocks of rw. DMA_matrix moves the
// operands (its transpose variant loads a right operand stored [N, K]).
//
// Slicing: columns of the result in tiles of up to 64 * rw (the right
// matrix tile and bias loaded once per column tile), rows in tiles that
// fit, double-buffered. When even one lane-block of the right matrix does
// not fit, K is split and partial products accumulate (res_add) in an fp32
// tile, converted to the output precision at the end.
//
// A right operand shared by all batches (a fully connected layer) with a
// contiguous left operand runs as one matrix of B * M rows.
//
//===----------------------------------------------------------------------===//

#include "Common.h"
#include "tpuc/Backend/LayerGroup.h"

#include <algorithm>

namespace tpu::backend {

using namespace detail;

namespace {

struct MatJob {
  uint64_t left, right, out;
};

struct MatPlan {
  int64_t nT = 0, kT = 0, mT = 0;
  unsigned rCopies = 1;
};

void runMatmul(CmdEmitter &em, const OpCtx &ctx, const MatMulParams &p,
               int64_t m, int64_t k, int64_t n,
               const std::vector<MatJob> &jobs) {
  const isa::ChipParams &chip = em.chip();
  int64_t npu = chip.npuNum;
  Prec pin = p.left.prec, pout = p.output.prec;
  unsigned eb = elemBytes(pin), ebo = elemBytes(pout);
  bool relu = p.act.kind == UnaryKind::Relu;
  unsigned temps = relu ? 0 : unaryTemps(p.act.kind);
  bool fused = p.act.kind == UnaryKind::None || relu;
  bool hasBias = p.biasAddr.has_value();
  // INT8: int32 accumulator, int32 bias added by an AR, RQ1 to the output.
  const bool quant = p.quant.has_value();
  const bool qBias = quant && p.quant->biasAddr.has_value();
  const Prec accPrec = quant ? Prec::Int32 : Prec::Fp32;
  if (quant && p.act.kind != UnaryKind::None)
    ctx.fail("an integer matmul takes no fused activation");
  if (quant)
    hasBias = false;

  LocalAlloc alloc(chip, ctx);
  UnaryScratch scratch;
  if (!fused) {
    scratch.tables = alloc.alloc(unaryTableBytes(), "coefficient tables");
    prepareUnaryTables(em, p.act.kind, scratch);
  }
  uint64_t cap = alloc.remaining();
  uint64_t al = chip.localAlign;
  auto up = [&](uint64_t b) { return uint64_t(alignUp(int64_t(b), al)); };
  auto lwOf = [&](int64_t kk) { return ceilDiv(kk, npu); };
  auto rwOf = [&](int64_t nn) { return ceilDiv(nn, npu); };
  auto leftShape = [&](int64_t mm, int64_t kk) {
    int64_t lw = lwOf(kk);
    return Shape4{uint32_t(mm), uint32_t(ceilDiv(kk, lw)), 1, uint32_t(lw)};
  };
  auto rightShape = [&](int64_t kk, int64_t nn) {
    int64_t rw = rwOf(nn);
    return Shape4{uint32_t(kk), uint32_t(ceilDiv(nn, rw)), 1, uint32_t(rw)};
  };
  auto outShape = [&](int64_t mm, int64_t nn) {
    int64_t rw = rwOf(nn);
    return Shape4{uint32_t(mm), uint32_t(ceilDiv(nn, rw)), 1, uint32_t(rw)};
  };
  auto total = [&](const MatPlan &q) {
    bool split = q.kT < k;
    uint64_t b =
        q.rCopies *
        (up(euBytes(chip, pin, rightShape(q.kT, q.nT))) +
         (hasBias || qBias ? up(euBytes(chip, Prec::Fp32, outShape(1, q.nT)))
                          : 0));
    b += 2 * up(euBytes(chip, pin, leftShape(q.mT, q.kT)));
    b += 2 * up(euBytes(chip, pout, outShape(q.mT, q.nT)));
    if ((split && pout != Prec::Fp32) || quant)
      b += up(euBytes(chip, Prec::Fp32, outShape(q.mT, q.nT)));
    b += temps * up(euBytes(chip, Prec::Fp32, outShape(q.mT, q.nT)));
    return b;
  };
  constexpr int64_t kMaxRows = 65535;
  MatPlan plan;
  // Column tiles: all N (rw = ceil(N / 64)) or narrower blocks; K split
  // only when a single row does not fit otherwise.
  std::vector<int64_t> nCands;
  for (int64_t rw = rwOf(std::min<int64_t>(n, npu * kMaxRows)); rw >= 1;
       rw = rw > 1 ? (rw + 1) / 2 : 0)
    nCands.push_back(std::min(n, rw * npu));
  for (int64_t nT : nCands) {
    for (unsigned copies : {nT < n ? 2u : 1u, 1u}) {
      MatPlan q{nT, k, 1, copies};
      if (total(q) > cap)
        continue;
      q.mT = largestFitting(1, std::min(m, kMaxRows), [&](int64_t mT) {
        return total({nT, k, mT, copies}) <= cap;
      });
      plan = q;
      break;
    }
    if (plan.nT)
      break;
  }
  if (!plan.nT) {
    // Split K: the smallest column tile, as many K rows as fit.
    int64_t nT = std::min<int64_t>(n, npu);
    int64_t kT = largestFitting(0, std::min<int64_t>(k, kMaxRows),
                                [&](int64_t v) {
                                  return total({nT, v, 1, 1}) <= cap;
                                });
    if (kT == 0)
      ctx.fail("does not fit in local memory: one row needs " +
               std::to_string(total({nT, 1, 1, 1})) + " bytes per lane, " +
               std::to_string(cap) + " are available");
    plan = {nT, kT, 1, 1};
    plan.mT = largestFitting(1, std::min(m, kMaxRows), [&](int64_t mT) {
      return total({nT, kT, mT, 1}) <= cap;
    });
  }
  bool split = plan.kT < k;
  // Enough row tiles to overlap loads and stores with the multiplies.
  {
    Shape4 t = shrinkForPipeline(
        chip,
        {uint32_t(jobs.size() * ceilDiv(n, plan.nT) * ceilDiv(k, plan.kT)), 1,
         uint32_t(m), 1},
        {1, 1, uint32_t(plan.mT), 1}, [&](Shape4 x) {
          return euBytes(chip, pin, leftShape(x.h, plan.kT)) +
                 euBytes(chip, pout, outShape(x.h, plan.nT));
        });
    plan.mT = t.h;
  }

  std::vector<uint64_t> rBuf(plan.rCopies), bBuf(plan.rCopies);
  for (unsigned i = 0; i < plan.rCopies; ++i) {
    rBuf[i] = alloc.alloc(euBytes(chip, pin, rightShape(plan.kT, plan.nT)),
                          "right matrix tile");
    if (hasBias || qBias)
      bBuf[i] =
          alloc.alloc(euBytes(chip, Prec::Fp32, outShape(1, plan.nT)), "bias");
  }
  std::array<uint64_t, 2> lBuf, oBuf;
  for (auto &b : lBuf)
    b = alloc.alloc(euBytes(chip, pin, leftShape(plan.mT, plan.kT)),
                    "left matrix tile");
  uint64_t accBuf = 0;
  bool accSeparate = (split && pout != Prec::Fp32) || quant;
  // Results in banks of their own when they fit there (bank conflicts;
  // LocalAlloc::startNewBank).
  {
    uint64_t outBytes = up(euBytes(chip, pout, outShape(plan.mT, plan.nT)));
    uint64_t f32Bytes =
        up(euBytes(chip, Prec::Fp32, outShape(plan.mT, plan.nT)));
    alloc.startNewBank(2 * outBytes + (accSeparate ? f32Bytes : 0) +
                       temps * f32Bytes);
  }
  for (auto &b : oBuf)
    b = alloc.alloc(euBytes(chip, pout, outShape(plan.mT, plan.nT)),
                    "result tile");
  if (accSeparate)
    accBuf = alloc.alloc(euBytes(chip, accPrec, outShape(plan.mT, plan.nT)),
                         "accumulator");
  for (unsigned t = 0; t < temps; ++t)
    scratch.temps.push_back(alloc.alloc(
        euBytes(chip, Prec::Fp32, outShape(plan.mT, plan.nT)), "scratch"));

  struct Step {
    size_t job;
    int64_t n0, nT, m0, mT, k0, kT;
    bool loadRight;   ///< first step using this right tile
    bool first, last; ///< first / last K chunk of this result tile
    unsigned rSlot;
  };
  std::vector<Step> steps;
  unsigned rLoads = 0, slot = 0;
  for (size_t j = 0; j < jobs.size(); ++j)
    for (Range1 nr : splitRange(n, plan.nT)) {
      bool firstUse = true;
      for (Range1 mr : splitRange(m, plan.mT))
        for (Range1 kr : splitRange(k, plan.kT)) {
          bool newRight = split || firstUse;
          if (newRight)
            slot = rLoads++ % plan.rCopies;
          steps.push_back({j, nr.begin, nr.size, mr.begin, mr.size, kr.begin,
                           kr.size, newRight, kr.begin == 0,
                           kr.begin + kr.size == k, slot});
          firstUse = false;
        }
    }

  auto leftTile = [&](size_t i) {
    const Step &s = steps[i];
    LTensor t = localTensor(chip, lBuf[i % 2], pin, leftShape(s.mT, s.kT));
    t.isSigned = p.left.isSigned;
    return t;
  };
  auto rightTile = [&](const Step &s) {
    LTensor t = localTensor(chip, rBuf[s.rSlot], pin, rightShape(s.kT, s.nT));
    t.isSigned = p.right.isSigned;
    return t;
  };
  auto biasTile = [&](const Step &s) {
    return localTensor(chip, bBuf[s.rSlot], quant ? Prec::Int32 : Prec::Fp32,
                       outShape(1, s.nT));
  };
  // Result tiles alternate per result (not per K chunk).
  std::vector<unsigned> resSlot(steps.size());
  unsigned res = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    resSlot[i] = res % 2;
    if (steps[i].last)
      ++res;
  }
  auto outTile = [&](size_t i) {
    const Step &s = steps[i];
    LTensor t =
        localTensor(chip, oBuf[resSlot[i]], pout, outShape(s.mT, s.nT));
    t.isSigned = p.output.isSigned;
    return t;
  };
  auto accTile = [&](size_t i) {
    const Step &s = steps[i];
    return accSeparate
               ? localTensor(chip, accBuf, accPrec, outShape(s.mT, s.nT))
               : outTile(i);
  };
  int64_t rightCols = p.rightTransposed ? k : n;
  // A new right tile (and bias) is prefetched with the step's left tile
  // when it has a buffer of its own; otherwise it is loaded only after the
  // previous step's multiply has been emitted.
  bool prefetchRight = plan.rCopies > 1;
  auto loadRight = [&](const Step &s) {
    const MatJob &job = jobs[s.job];
    if (p.rightTransposed)
      loadMatrix(em, job.right + uint64_t(s.n0 * k + s.k0) * eb, pin,
                 uint32_t(s.nT), uint32_t(s.kT), uint64_t(rightCols),
                 rightTile(s), true);
    else
      loadMatrix(em, job.right + uint64_t(s.k0 * n + s.n0) * eb, pin,
                 uint32_t(s.kT), uint32_t(s.nT), uint64_t(rightCols),
                 rightTile(s));
    if (hasBias && s.first)
      loadMatrix(em, *p.biasAddr + uint64_t(s.n0) * sizeof(float), Prec::Fp32,
                 1, uint32_t(s.nT), uint64_t(n), biasTile(s));
    if (qBias && s.first)
      loadMatrix(em, *p.quant->biasAddr + uint64_t(s.n0) * 4, Prec::Int32, 1,
                 uint32_t(s.nT), uint64_t(n), biasTile(s));
  };
  pipeline(
      steps.size(),
      [&](size_t i) {
        const Step &s = steps[i];
        const MatJob &job = jobs[s.job];
        if (s.loadRight && prefetchRight)
          loadRight(s);
        loadMatrix(em, job.left + uint64_t(s.m0 * k + s.k0) * eb, pin,
                   uint32_t(s.mT), uint32_t(s.kT), uint64_t(k), leftTile(i));
      },
      [&](size_t i) {
        const Step &s = steps[i];
        if (s.loadRight && !prefetchRight)
          loadRight(s);
        MMCmd c;
        c.left = leftTile(i);
        c.right = rightTile(s);
        c.output = accTile(i);
        c.m = uint32_t(s.mT);
        c.k = uint32_t(s.kT);
        c.n = uint32_t(ceilDiv(s.nT, rwOf(s.nT)) * rwOf(s.nT));
        c.hasBias = hasBias && s.first;
        if (c.hasBias)
          c.bias = biasTile(s);
        c.accumulate = !s.first;
        mm(em, c);
        if (!s.last)
          return;
        LTensor out = outTile(i);
        if (quant) {
          LTensor acc = c.output;
          if (qBias) {
            // The bias row read at every row through a zero n stride.
            LTensor b = biasTile(s);
            LTensor bb = freeTensor(b.offset, Prec::Int32, acc.shape,
                                    {0, b.stride.c, 0, 1});
            ar(em, ArOp::Add, acc, Opd::of(acc), Opd::of(bb));
          }
          matmulRequant(em, *p.quant, acc, out);
          return;
        }
        if (accSeparate)
          ar(em, ArOp::Cast, out, Opd::of(c.output));
        if (relu)
          ar(em, ArOp::Max, out, Opd::of(out), Opd::imm(0.0f, pout));
        else if (!fused)
          emitUnary(em, p.act, out, out, scratch);
      },
      [&](size_t i) {
        const Step &s = steps[i];
        if (!s.last)
          return;
        storeMatrix(em, outTile(i),
                    jobs[s.job].out + uint64_t(s.m0 * n + s.n0) * ebo,
                    uint32_t(s.mT), uint32_t(s.nT), uint64_t(n));
      });
}

} // namespace

namespace detail {

void matmulRequant(CmdEmitter &em, const MatMulParams::Quant &q,
                   const LTensor &acc, const LTensor &out) {
  RqCmd r;
  r.input = acc;
  r.output = out;
  r.multiplier = q.multiplier;
  r.rshift = q.rshift;
  r.zeroPoint = q.zeroPoint;
  r.round = q.round;
  if (const auto &second = q.second) {
    // TFLite's two steps: the first into the int32 accumulator.
    r.output = acc;
    r.zeroPoint = 0;
    rq(em, r);
    r.output = out;
    r.multiplier = second->multiplier;
    r.rshift = second->rshift;
    r.zeroPoint = q.zeroPoint;
    r.round = second->round;
  }
  rq(em, r);
}

} // namespace detail

namespace {

/// The left and right matrix indices of output batch `b` (numpy
/// broadcasting of the batch dims `ob`; `lb` / `rb` the operands', 1 where
/// broadcast, with dense strides `lst` / `rst`).
std::pair<int64_t, int64_t>
batchIndex(int64_t b, const std::vector<int64_t> &ob,
           const std::vector<int64_t> &lb, const std::vector<int64_t> &rb,
           const std::vector<int64_t> &lst, const std::vector<int64_t> &rst) {
  int64_t rem = b, li = 0, ri = 0;
  for (size_t i = ob.size(); i-- > 0;) {
    int64_t idx = rem % ob[i];
    rem /= ob[i];
    if (lb[i] != 1)
      li += idx * lst[i];
    if (rb[i] != 1)
      ri += idx * rst[i];
  }
  return {li, ri};
}

/// The matmul as groups of one (runAlone), in the row layout the
/// layer-group pass holds matrices in (matrixRowsLayout: (B, M, 1, K), one
/// row per channel; the planner also tries the matrix(w) layout of a right
/// matrix shared by all the rows). The batch dims split in two: the
/// longest run of trailing ones the left operand does not broadcast along
/// and the right one either does along all or along none of them, held as
/// the N of one group (the right matrix one 2-D operand when shared, else
/// (B, K, 1, N), or (B, N, 1, K) transposed: mm2.nt); the leading ones, one
/// group each. A transposed right matrix that differs from group to group
/// of one matrix each is a value too, (1, N, 1, K), read contiguously (as
/// a 2-D operand its rows would be read an element per DDR run). False
/// (nothing emitted; `why` says why) when the op has no local form or fits
/// no slicing.
bool aloneJobs(CmdEmitter &em, const MatMulParams &p, int64_t m, int64_t k,
               int64_t n, const std::vector<int64_t> &ob,
               const std::vector<int64_t> &lb, const std::vector<int64_t> &rb,
               std::string &why) {
  // The trailing run: `shared` when the right operand is one matrix in it.
  size_t split = ob.size();
  std::optional<bool> shared;
  for (size_t i = ob.size(); i-- > 0;) {
    if (ob[i] == 1) {
      split = i;
      continue;
    }
    bool rs = rb[i] == 1;
    if (lb[i] != ob[i] || (shared && *shared != rs))
      break;
    shared = rs;
    split = i;
  }
  int64_t inner = 1, outer = 1;
  for (size_t i = 0; i < ob.size(); ++i)
    (i < split ? outer : inner) *= ob[i];
  bool rightVaries =
      std::any_of(rb.begin(), rb.end(), [](int64_t d) { return d != 1; });
  bool rightShared = shared.value_or(true) &&
                     !(p.rightTransposed && inner == 1 && rightVaries);
  MatMulParams q = p;
  q.left.shape = {inner, m, 1, k};
  q.output.shape = {inner, m, 1, n};
  if (rightShared)
    q.right.shape = p.rightTransposed ? std::vector<int64_t>{n, k}
                                      : std::vector<int64_t>{k, n};
  else
    q.right.shape = p.rightTransposed ? std::vector<int64_t>{inner, n, 1, k}
                                      : std::vector<int64_t>{inner, k, 1, n};
  why = localOpSupport(q, em.chip());
  if (!why.empty())
    return false;
  unsigned eb = elemBytes(p.left.prec), ebo = elemBytes(p.output.prec);
  std::vector<int64_t> lst = denseStrides(lb), rst = denseStrides(rb);
  for (int64_t j = 0; j < outer; ++j) {
    auto [li, ri] = batchIndex(j * inner, ob, lb, rb, lst, rst);
    q.left.addr = p.left.addr + uint64_t(li * m * k) * eb;
    q.right.addr = p.right.addr + uint64_t(ri * k * n) * eb;
    q.output.addr = p.output.addr + uint64_t(j * inner * m * n) * ebo;
    std::vector<GTensor> inputs{q.left};
    if (!rightShared)
      inputs.push_back(q.right);
    // The jobs have one shape: the first fits or none does.
    if (!runAlone(em, "matmul", q, inputs, q.output, &why)) {
      if (j > 0)
        throw Error("matmul '" + p.name + "': batch " + std::to_string(j) +
                    " fits no slicing where batch 0 did: " + why);
      return false;
    }
  }
  return true;
}

} // namespace

void matmul(CmdEmitter &em, const MatMulParams &p) {
  OpCtx ctx{"matmul", p.name};
  if (p.quant) {
    for (auto [t, what] : {std::pair{&p.left, "left"},
                           std::pair{&p.right, "right"},
                           std::pair{&p.output, "output"}})
      if (t->prec != Prec::Int8)
        ctx.fail(std::string("an integer matmul needs an int8 / uint8 ") +
                 what + ", got " + isa::precName(t->prec));
  } else {
    requireFloat(ctx, p.left, "left");
    requireFloat(ctx, p.right, "right");
    requireFloat(ctx, p.output, "output");
  }
  if (p.left.prec != p.right.prec)
    ctx.fail("left and right operands must have one precision");
  const auto &ls = p.left.shape, &rs = p.right.shape, &os = p.output.shape;
  if (ls.size() < 2 || rs.size() < 2 || os.size() < 2)
    ctx.fail("operands must have rank 2 or more");
  int64_t m = ls[ls.size() - 2], k = ls.back();
  int64_t rk = p.rightTransposed ? rs.back() : rs[rs.size() - 2];
  int64_t n = p.rightTransposed ? rs[rs.size() - 2] : rs.back();
  if (rk != k)
    ctx.fail("inner dimensions differ: left K = " + std::to_string(k) +
             ", right K = " + std::to_string(rk));
  if (os[os.size() - 2] != m || os.back() != n)
    ctx.fail("output must be [..., " + std::to_string(m) + ", " +
             std::to_string(n) + "]");
  // Batch dims (numpy broadcasting of the leading dims).
  std::vector<int64_t> ob(os.begin(), os.end() - 2);
  auto batchOf = [&](const std::vector<int64_t> &s) {
    std::vector<int64_t> b(s.begin(), s.end() - 2);
    b.insert(b.begin(), ob.size() - std::min(ob.size(), b.size()), 1);
    return b;
  };
  std::vector<int64_t> lb = batchOf(ls), rb = batchOf(rs);
  int64_t batches = 1;
  for (size_t i = 0; i < ob.size(); ++i) {
    if ((lb[i] != ob[i] && lb[i] != 1) || (rb[i] != ob[i] && rb[i] != 1))
      ctx.fail("batch dims do not broadcast to the output");
    batches *= ob[i];
  }
  std::string why;
  if (aloneJobs(em, p, m, k, n, ob, lb, rb, why))
    return;
  em.noteFallback("matmul '" + p.name + "': " + why);
  // The fallback: the kernel below, for what has no local form or fits no
  // slicing (K or N past the commands' 16 bits, a right matrix whose one
  // column block does not fit a lane: K is split).
  bool rightShared =
      std::all_of(rb.begin(), rb.end(), [](int64_t d) { return d == 1; });
  bool leftFull = lb == ob;
  unsigned eb = elemBytes(p.left.prec), ebo = elemBytes(p.output.prec);
  std::vector<MatJob> jobs;
  if (rightShared && leftFull) {
    jobs.push_back({p.left.addr, p.right.addr, p.output.addr});
    withCtx(ctx, [&] { runMatmul(em, ctx, p, m * batches, k, n, jobs); });
    return;
  }
  std::vector<int64_t> lst = denseStrides(lb), rst = denseStrides(rb);
  for (int64_t b = 0; b < batches; ++b) {
    auto [li, ri] = batchIndex(b, ob, lb, rb, lst, rst);
    jobs.push_back({p.left.addr + uint64_t(li * m * k) * eb,
                    p.right.addr + uint64_t(ri * k * n) * eb,
                    p.output.addr + uint64_t(b * m * n) * ebo});
  }
  withCtx(ctx, [&] { runMatmul(em, ctx, p, m, k, n, jobs); });
}

} // namespace tpu::backend
