//===- MatMul.cpp - Batched matrix multiply -------------------------------===//
//
// Every matmul runs as groups of one (runAlone) in the row layout of the
// layer-group pass (one matrix row per channel, mm2), or the matrix(w)
// layout of MM where the planner finds that faster. A matmul whose K does
// not fit is cut into reduced-axis slices that accumulate (GroupPlan::
// kSlices); one whose N exceeds the commands' 16 bits, or whose result
// rows fit no slicing with all their columns, runs as groups of one per
// column chunk, each with its share of the right matrix's columns and of
// the bias.
//
//===----------------------------------------------------------------------===//

#include "Common.h"
#include "tpuc/Backend/LayerGroup.h"

#include <algorithm>

namespace tpu::backend {

using namespace detail;

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
  // Column chunks: per output batch, the right matrix of that batch as a
  // 2-D weight (its stored rows longer than a chunk's columns unless it is
  // stored transposed), the output's columns and the bias likewise; the
  // fewest chunks (within a factor of two: the counts tried double) whose
  // first chunk, the widest, fits.
  unsigned eb = elemBytes(p.left.prec), ebo = elemBytes(p.output.prec);
  std::vector<int64_t> lst = denseStrides(lb), rst = denseStrides(rb);
  auto chunk = [&](int64_t b, Range1 cr, std::string &whyNot) {
    auto [li, ri] = batchIndex(b, ob, lb, rb, lst, rst);
    MatMulParams q = p;
    q.left.addr = p.left.addr + uint64_t(li * m * k) * eb;
    q.left.shape = {1, m, 1, k};
    uint64_t right = p.right.addr + uint64_t(ri * k * n) * eb;
    q.right.addr =
        right + uint64_t(p.rightTransposed ? cr.begin * k : cr.begin) * eb;
    q.right.shape = p.rightTransposed ? std::vector<int64_t>{cr.size, k}
                                      : std::vector<int64_t>{k, cr.size};
    q.rightRowStride = p.rightTransposed || cr.size == n ? 0 : n;
    q.output.addr = p.output.addr + uint64_t(b * m * n + cr.begin) * ebo;
    q.output.shape = {1, m, 1, cr.size};
    uint64_t bias0 = uint64_t(cr.begin) * 4; // fp32 or int32 entries
    if (q.biasAddr)
      *q.biasAddr += bias0;
    if (q.quant && q.quant->biasAddr)
      *q.quant->biasAddr += bias0;
    AloneStrides st{std::nullopt, isa::Stride4{m * n, n, n, 1}};
    size_t noted = em.reducedShares().size();
    if (!runAlone(em, "matmul", q, {q.left}, q.output, &whyNot, st))
      return false;
    // Reduced-axis shares hold for this chunk's columns only.
    for (size_t i = noted; i < em.reducedShares().size(); ++i) {
      em.reducedShares()[i].colBegin = cr.begin;
      em.reducedShares()[i].colEnd = cr.begin + cr.size;
    }
    return true;
  };
  constexpr int64_t kMaxN = 65535;
  for (int64_t chunks = ceilDiv(n, kMaxN);; chunks = std::min(n, 2 * chunks)) {
    int64_t nc = ceilDiv(n, chunks);
    if (chunk(0, {0, nc}, why)) {
      for (int64_t b = 0; b < batches; ++b)
        for (Range1 cr : splitRange(n, nc))
          if ((b > 0 || cr.begin > 0) && !chunk(b, cr, why))
            throw Error("matmul '" + p.name + "': column chunk at " +
                        std::to_string(cr.begin) +
                        " fits no slicing where the first did: " + why);
      return;
    }
    if (nc == 1)
      break;
  }
  ctx.fail("fits no slicing of local memory: " + why);
}

} // namespace tpu::backend
