//===- Move.cpp - Data movement inside local memory -----------------------===//
//
// TRANS&BC (transposes and broadcasts between lanes) and the SG / SGL
// gather-scatter family (bm1684x.md 4.5). Values move as bit patterns; no
// conversion happens. The SG variants whose index semantics could be
// decided are implemented (semantics.md "Gather and scatter"); the others
// throw a "not supported" error naming the sub-op.
//
//===----------------------------------------------------------------------===//

#include "FuncImpl.h"

#include <memory>

namespace tpu::sim {
namespace detail {

using isa::Prec;

void execTransBC(const TiuOp &op, MachineState &m) {
  const isa::cmd::TiuLong &f = op.f;
  constexpr unsigned kCW = 0, kWC = 1, kLaneCopy = 2, kLaneBroadcast = 3,
                     kStaticBroadcast = 4, kStaticDistribute = 5;
  if (op.eu > kStaticDistribute)
    failOp(op, "TRANS&BC sub-op " + std::to_string(op.eu) + " does not exist");
  LaneGeometry geo(m.chip);
  const TiuOp &name = op;
  ElemType t{precOf(op, f.res0_prec, "res0_prec"), false};
  Shape4 rs{uint32_t(f.res0_n), uint32_t(f.res0_c), uint32_t(f.res0_h),
            uint32_t(f.res0_w)};
  Shape4 srcShape = rs;
  LocalLayout srcLayout = LocalLayout::EuAligned;
  LocalLayout resLayout = LocalLayout::EuAligned;
  switch (op.eu) {
  case kCW:
  case kWC:
    if (f.opd0_c != rs.w || f.opd0_w != rs.c)
      failOp(op, "transpose needs opd0_c = res0_w and opd0_w = res0_c (got "
                 "opd0_c " +
                     std::to_string(f.opd0_c) + ", opd0_w " +
                     std::to_string(f.opd0_w) + ")");
    srcShape = {rs.n, rs.w, rs.h, rs.c};
    // eu 0 reads its source compact, eu 1 EU-aligned (semantics.md).
    srcLayout = op.eu == kCW ? LocalLayout::Compact : LocalLayout::EuAligned;
    break;
  case kLaneCopy:
    break;
  case kLaneBroadcast:
    srcShape.c = 1;
    break;
  case kStaticBroadcast:
    rs.n = rs.h = 1;
    srcShape = {1, 1, 1, rs.w};
    srcLayout = LocalLayout::Compact;
    break;
  case kStaticDistribute:
    rs = {1, rs.c, 1, 1};
    srcShape = {1, 1, 1, rs.c};
    srcLayout = resLayout = LocalLayout::Compact;
    break;
  }
  LocalTensor st = tiuTensor(op, geo, Opd::Opd0, f.opd0_addr, t, srcShape,
                             unsigned(srcLayout));
  OperandView src(m, st, "source (opd0)", name);
  LocalTensor dt =
      tiuTensor(op, geo, Opd::Res0, f.res0_addr, t, rs, unsigned(resLayout));
  ResultView out(m, dt, "result (res0)", name, tiuLaneMask(op, geo));
  for (uint32_t n = 0; n < rs.n; ++n)
    for (uint32_t c = 0; c < rs.c; ++c) {
      if (!out.enabled(c))
        continue;
      for (uint32_t h = 0; h < rs.h; ++h)
        for (uint32_t w = 0; w < rs.w; ++w) {
          uint64_t v = 0;
          switch (op.eu) {
          case kCW:
          case kWC:
            v = src.bits(n, w, h, c);
            break;
          case kLaneCopy:
            v = src.bits(n, c, h, w);
            break;
          case kLaneBroadcast:
            v = src.bits(n, 0, h, w);
            break;
          case kStaticBroadcast:
            v = src.bits(0, 0, 0, w);
            break;
          case kStaticDistribute:
            v = src.bits(0, 0, 0, c);
            break;
          }
          out.setBits(n, c, h, w, v);
        }
    }
}

namespace {

constexpr unsigned kPlGatherD1 = 0, kPlScatterD1 = 3, kPeGatherD1 = 5,
                   kPeScatterD1 = 6, kMaskSelect = 8, kNonzero = 9,
                   kGatherLine = 17, kScatterLine = 18;

const char *sgName(unsigned eu) {
  static const char *const kNames[] = {
      "pl_gather_d1coor",    "pl_gather_d2coor",       "pl_gather_rec",
      "pl_scatter_d1coor",   "pl_scatter_d2coor",      "pe_s_gather_d1coor",
      "pe_s_scatter_d1coor", "pe_m_gather_d1coor",     "pe_s_mask_select",
      "pe_s_nonzero",        "pe_s_scatter_pp_d1coor", "pl_gather_perw",
      "pl_scatter_perw",     "pe_s_gather_hzd",        "pe_s_scatter_hzd",
      "pe_s_mask_selhzd",    "pe_s_nonzero_hzd",       "pe_s_gather_line",
      "pe_s_scatter_line",   "pe_s_mask_seline"};
  return eu < std::size(kNames) ? kNames[eu] : "unknown";
}

} // namespace

void execSG(const TiuOp &op, MachineState &m) {
  const isa::cmd::TiuLong &f = op.f;
  unsigned eu = op.eu;
  if (eu != kPlGatherD1 && eu != kPlScatterD1 && eu != kPeGatherD1 &&
      eu != kPeScatterD1 && eu != kMaskSelect && eu != kNonzero &&
      eu != kGatherLine && eu != kScatterLine)
    failOp(op, std::string(sgName(eu)) +
                   " is not supported: its index semantics are not public");
  LaneGeometry geo(m.chip);
  const TiuOp &name = op;
  uint64_t mask = tiuLaneMask(op, geo);
  Prec pr = precOf(op, f.res0_prec, "res0_prec");
  Prec p0 = precOf(op, f.opd0_prec, "opd0_prec");
  Prec pi = precOf(op, f.opd1_prec, "opd1_prec");
  Shape4 rs{uint32_t(f.res0_n), uint32_t(f.res0_c), uint32_t(f.res0_h),
            uint32_t(f.res0_w)};
  ElemType dataType{p0, false};
  ElemType idxType{pi, false};
  bool fill = f.opd2_const;
  uint64_t fillBits = f.opd2_addr;
  bool isGather = eu == kPlGatherD1 || eu == kPeGatherD1 || eu == kGatherLine;

  if (eu == kMaskSelect || eu == kNonzero) {
    // Per (n, c): scan the (opd0_h, opd0_w) plane in row-major order; mask
    // select copies the elements whose mask (opd1) is non-zero, nonzero
    // writes their flat indices h * W + w; the count goes to res1 (int16,
    // one per (n, c), compact).
    Shape4 ds{rs.n, rs.c, uint32_t(f.opd0_h), uint32_t(f.opd0_w)};
    OperandView data(
        m, tiuTensor(op, geo, Opd::Opd0, f.opd0_addr, dataType, ds, 0),
        "data (opd0)", name);
    std::unique_ptr<OperandView> maskView;
    if (eu == kMaskSelect)
      maskView = std::make_unique<OperandView>(
          m, tiuTensor(op, geo, Opd::Opd1, f.opd1_addr, idxType, ds, 0),
          "mask (opd1)", name);
    ElemType outType{eu == kMaskSelect ? p0 : pr, false};
    ResultView out(m,
                   tiuTensor(op, geo, Opd::Res0, f.res0_addr, outType,
                             {rs.n, rs.c, 1, rs.w}, 0),
                   "result (res0)", name, mask);
    ResultView count(m,
                     tiuTensor(op, geo, Opd::Res0, f.res1_addr,
                               {Prec::Int16, true}, {rs.n, rs.c, 1, 1}, 1),
                     "count (res1)", name, mask);
    for (uint32_t n = 0; n < rs.n; ++n)
      for (uint32_t c = 0; c < rs.c; ++c) {
        uint32_t k = 0;
        for (uint32_t h = 0; h < ds.h; ++h)
          for (uint32_t w = 0; w < ds.w; ++w) {
            bool take = eu == kMaskSelect ? maskView->bits(n, c, h, w) != 0
                                          : data.bits(n, c, h, w) != 0;
            if (!take)
              continue;
            if (k < rs.w) {
              if (eu == kMaskSelect)
                out.setBits(n, c, 0, k, data.bits(n, c, h, w));
              else
                out.setInt(n, c, 0, k, int64_t(h) * ds.w + w);
            }
            ++k;
          }
        count.setInt(n, c, 0, 0, k);
      }
    return;
  }

  if (eu == kGatherLine || eu == kScatterLine) {
    // Lines of W elements: gather out[n][c][h][:] = data[0][c][idx][:],
    // idx = index[n][c][h][0]; scatter is the reverse.
    Shape4 ds{1, rs.c, uint32_t(f.opd0_h), rs.w};
    Shape4 is{rs.n, rs.c, rs.h, 1};
    LocalLayout dl =
        f.opd0_str == 3 ? LocalLayout::LineAligned : LocalLayout::EuAligned;
    LocalTensor dt =
        tiuTensor(op, geo, Opd::Opd0, f.opd0_addr, {pr, false}, ds, 0);
    dt.stride = isa::localStrides(m.chip, ds, dt.startLane(geo), pr, dl);
    OperandView index(
        m, tiuTensor(op, geo, Opd::Opd1, f.opd1_addr, idxType, is, 0),
        "index (opd1)", name);
    if (eu == kGatherLine) {
      OperandView data(m, dt, "data (opd0)", name);
      ResultView out(
          m, tiuTensor(op, geo, Opd::Res0, f.res0_addr, {pr, false}, rs, 0),
          "result (res0)", name, mask);
      for (uint32_t n = 0; n < rs.n; ++n)
        for (uint32_t c = 0; c < rs.c; ++c)
          for (uint32_t h = 0; h < rs.h; ++h) {
            uint64_t idx = index.bits(n, c, h, 0);
            bool ok = idx < ds.h;
            if (!ok && !fill)
              continue;
            for (uint32_t w = 0; w < rs.w; ++w)
              out.setBits(n, c, h, w,
                          ok ? data.bits(0, c, uint32_t(idx), w) : fillBits);
          }
    } else {
      // Scatter line: res0 is the (1, c, opd0_h, w) table, opd0 the lines.
      OperandView lines(
          m, tiuTensor(op, geo, Opd::Opd0, f.opd0_addr, {pr, false}, rs, 0),
          "lines (opd0)", name);
      LocalTensor ot = dt;
      ot.addr = uint32_t(f.res0_addr);
      ot.stride = isa::localStrides(m.chip, ds, ot.startLane(geo), pr, dl);
      ResultView out(m, ot, "result (res0)", name, mask);
      for (uint32_t n = 0; n < rs.n; ++n)
        for (uint32_t c = 0; c < rs.c; ++c)
          for (uint32_t h = 0; h < rs.h; ++h) {
            uint64_t idx = index.bits(n, c, h, 0);
            if (idx >= ds.h)
              continue;
            for (uint32_t w = 0; w < rs.w; ++w)
              out.setBits(0, c, uint32_t(idx), w, lines.bits(n, c, h, w));
          }
    }
    return;
  }

  // Element gathers/scatters with one coordinate. pl_*: data (n, c, 1,
  // opd0_w), index (1, c, 1, W) shared by the batch; pe_s_*: data (1, c,
  // opd0_h, opd0_w) addressed by the flat index h * opd0_w + w, index (n, c,
  // 1, W). W = res0_w for gathers, the data width for scatters.
  bool perElem = eu == kPeGatherD1 || eu == kPeScatterD1;
  uint32_t dataH = perElem ? uint32_t(f.opd0_h) : 1;
  uint32_t dataW = uint32_t(f.opd0_w);
  uint32_t tableN = perElem ? 1 : rs.n;
  if (isGather) {
    Shape4 ds{tableN, rs.c, dataH, dataW};
    OperandView data(
        m, tiuTensor(op, geo, Opd::Opd0, f.opd0_addr, dataType, ds, 0),
        "data (opd0)", name);
    Shape4 is{perElem ? rs.n : 1, rs.c, 1, rs.w};
    OperandView index(
        m, tiuTensor(op, geo, Opd::Opd1, f.opd1_addr, idxType, is, 0),
        "index (opd1)", name);
    ResultView out(m,
                   tiuTensor(op, geo, Opd::Res0, f.res0_addr, {p0, false},
                             {rs.n, rs.c, 1, rs.w}, 0),
                   "result (res0)", name, mask);
    uint64_t limit = uint64_t(dataH) * dataW;
    for (uint32_t n = 0; n < rs.n; ++n)
      for (uint32_t c = 0; c < rs.c; ++c)
        for (uint32_t w = 0; w < rs.w; ++w) {
          uint64_t idx = index.bits(perElem ? n : 0, c, 0, w);
          if (idx >= limit) {
            if (fill)
              out.setBits(n, c, 0, w, fillBits);
            continue;
          }
          out.setBits(n, c, 0, w,
                      data.bits(perElem ? 0 : n, c, uint32_t(idx / dataW),
                                uint32_t(idx % dataW)));
        }
    return;
  }
  // Scatter: source (n, c, 1, opd0_w) values go to res0 positions given by
  // the index; res0 is (n, c, 1, res0_w) (pl) or (1, c, res0_h, res0_w) (pe).
  Shape4 ss{rs.n, rs.c, 1, dataW};
  OperandView src(m,
                  tiuTensor(op, geo, Opd::Opd0, f.opd0_addr, dataType, ss, 0),
                  "source (opd0)", name);
  Shape4 is{perElem ? rs.n : 1, rs.c, 1, dataW};
  OperandView index(m,
                    tiuTensor(op, geo, Opd::Opd1, f.opd1_addr, idxType, is, 0),
                    "index (opd1)", name);
  Shape4 os =
      perElem ? Shape4{1, rs.c, rs.h, rs.w} : Shape4{rs.n, rs.c, 1, rs.w};
  ResultView out(m,
                 tiuTensor(op, geo, Opd::Res0, f.res0_addr, {p0, false}, os, 0),
                 "result (res0)", name, mask);
  uint64_t limit = uint64_t(os.h) * os.w;
  for (uint32_t n = 0; n < rs.n; ++n)
    for (uint32_t c = 0; c < rs.c; ++c)
      for (uint32_t w = 0; w < dataW; ++w) {
        uint64_t idx = index.bits(perElem ? n : 0, c, 0, w);
        if (idx >= limit)
          continue;
        out.setBits(perElem ? 0 : n, c, uint32_t(idx / os.w),
                    uint32_t(idx % os.w), src.bits(n, c, 0, w));
      }
}

} // namespace detail
} // namespace tpu::sim
