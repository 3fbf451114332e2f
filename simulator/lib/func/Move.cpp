//===- Move.cpp - Data movement inside local memory -----------------------===//
//
// TRANS&BC (transposes and broadcasts between lanes) and the SG / SGL
// gather-scatter family, all 20 sub-ops (isa/docs/bm1684x.md 4.2, 4.5). Values move
// as bit patterns; no conversion happens. Operand shapes follow Sophgo's
// public command generators and decoder; where those are silent the
// decisions are in semantics.md "SG / SGL: gather and scatter".
//
//===----------------------------------------------------------------------===//

#include "FuncImpl.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

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

//===----------------------------------------------------------------------===//
// SG / SGL (semantics.md "SG / SGL: gather and scatter")
//===----------------------------------------------------------------------===//

namespace {

enum SgEu : unsigned {
  kPlGatherD1 = 0,
  kPlGatherD2 = 1,
  kPlGatherRec = 2,
  kPlScatterD1 = 3,
  kPlScatterD2 = 4,
  kPeGatherD1 = 5,
  kPeScatterD1 = 6,
  kPeMGatherD1 = 7,
  kMaskSelect = 8,
  kNonzero = 9,
  kPeScatterPP = 10,
  kPlGatherPerW = 11,
  kPlScatterPerW = 12,
  kPeGatherHzd = 13,
  kPeScatterHzd = 14,
  kMaskSelHzd = 15,
  kNonzeroHzd = 16,
  kGatherLine = 17,
  kScatterLine = 18,
  kMaskSeLine = 19,
};

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

bool isScatter(unsigned eu) {
  return eu == kPlScatterD1 || eu == kPlScatterD2 || eu == kPeScatterD1 ||
         eu == kPeScatterPP || eu == kPlScatterPerW || eu == kPeScatterHzd ||
         eu == kScatterLine;
}

/// An (h, w) position a coordinate addresses, or nullopt when it is masked.
using Coord = std::optional<std::pair<uint32_t, uint32_t>>;

/// One SG/SGL command: its fields, checks and operand construction.
struct SgCmd {
  const TiuOp &op;
  MachineState &m;
  const isa::cmd::TiuLong &f;
  LaneGeometry geo;
  uint64_t laneMask;
  unsigned eu;
  Shape4 rs;    ///< res0 (n, c, h, w)
  uint32_t ha;  ///< opd0_h
  uint32_t wa;  ///< opd0_w
  ElemType val; ///< moved values: res0_prec, as bits
  ElemType idx; ///< indices / masks: opd1_prec, unsigned
  bool limit;   ///< opd3_const: out-of-range coordinates are masked
  bool fill;    ///< opd2_const: masked gather elements get fillBits
  uint64_t fillBits;

  SgCmd(const TiuOp &o, MachineState &ms)
      : op(o), m(ms), f(o.f), geo(ms.chip), laneMask(tiuLaneMask(o, geo)),
        eu(o.eu), rs{uint32_t(f.res0_n), uint32_t(f.res0_c), uint32_t(f.res0_h),
                     uint32_t(f.res0_w)},
        ha(uint32_t(f.opd0_h)), wa(uint32_t(f.opd0_w)),
        limit(f.opd3_const != 0), fill(f.opd2_const != 0),
        fillBits(f.opd2_addr) {
    val = {precOf(op, f.res0_prec, "res0_prec"), false};
    // nonzero reads no opd1 (Sophgo's generator leaves opd1_prec 0).
    bool readsOpd1 = eu != kNonzero && eu != kNonzeroHzd;
    idx = {readsOpd1 ? precOf(op, f.opd1_prec, "opd1_prec") : Prec::Int8,
           false};
  }

  [[noreturn]] void fail(const std::string &what) const {
    failOp(op, std::string(sgName(eu)) + ": " + what);
  }
  void requirePositive(uint64_t v, const char *field) const {
    if (v == 0)
      fail(std::string(field) + " is zero");
  }
  void requireEqual(uint64_t v, uint64_t want, const char *field,
                    const char *meaning) const {
    if (v != want)
      fail(std::string(field) + " = " + std::to_string(v) + " must equal " +
           meaning + " (" + std::to_string(want) + ")");
  }
  /// Index and mask operands: unsigned integers of 8, 16 or 32 bits.
  void requireIntegerIndex() const {
    if (idx.prec != Prec::Int8 && idx.prec != Prec::Int16 &&
        idx.prec != Prec::Int32)
      fail("opd1_prec must be an 8, 16 or 32-bit integer (indices are "
           "unsigned integers)");
  }
  /// Data-moving sub-ops copy opd0 elements bit for bit into res0.
  void requireSameDataType() const {
    if (f.opd0_prec != f.res0_prec)
      fail("opd0_prec (" + std::to_string(f.opd0_prec) +
           ") must equal res0_prec (" + std::to_string(f.res0_prec) +
           "): values are moved unchanged");
  }

  /// Whether coordinate `v` lies in [0, bound). Outside it, the element is
  /// masked when limit_enable is on and the command is rejected otherwise
  /// (the hardware would address memory outside the operand).
  bool inRange(uint64_t v, uint64_t bound, const char *what, uint32_t n,
               uint32_t c, uint32_t h, uint32_t w) const {
    if (v < bound)
      return true;
    if (limit)
      return false;
    fail(std::string(what) + " " + std::to_string(v) + " at (" +
         std::to_string(n) + ", " + std::to_string(c) + ", " +
         std::to_string(h) + ", " + std::to_string(w) +
         ") of opd1 is outside [0, " + std::to_string(bound) +
         ") and limit_enable (opd3_const) is off");
  }

  LocalTensor local(Opd which, uint64_t addr, ElemType t, Shape4 s,
                    LocalLayout layout) const {
    if (layout == LocalLayout::LineAligned) {
      LocalTensor lt = tiuTensor(op, geo, which, addr, t, s, 0);
      lt.stride = isa::localStrides(m.chip, s, lt.startLane(geo), t.prec,
                                    LocalLayout::LineAligned);
      return lt;
    }
    return tiuTensor(op, geo, which, addr, t, s, unsigned(layout));
  }

  /// res0 of shape `s` as the result view every sub-op writes.
  ResultView result(Shape4 s, LocalLayout layout) const {
    return ResultView(m, local(Opd::Res0, f.res0_addr, val, s, layout),
                      "result (res0)", op, laneMask);
  }

  /// The per-element index / mask operand opd1, EU-aligned.
  OperandView alignedOpd1(Shape4 s, const char *what) const {
    return OperandView(
        m, local(Opd::Opd1, f.opd1_addr, idx, s, LocalLayout::EuAligned), what,
        op);
  }

  /// A masked gather element: fillBits when fill is on, else left as is.
  void putMasked(const ResultView &out, uint32_t n, uint32_t c, uint32_t h,
                 uint32_t w) const {
    if (fill)
      out.setBits(n, c, h, w, fillBits);
  }

  /// The opd0 table of the pe_* sub-ops, (1, c, h, w): EU-aligned for
  /// opd0_str 0; for opd0_str 4 one line-aligned table per lane shared by
  /// all channels of that lane (c stride 0).
  LocalTensor sharedTable(Shape4 s) const {
    if (f.opd0_str == 0)
      return local(Opd::Opd0, f.opd0_addr, val, s, LocalLayout::EuAligned);
    if (f.opd0_str == 4) {
      LocalTensor t =
          local(Opd::Opd0, f.opd0_addr, val, s, LocalLayout::LineAligned);
      t.stride.n = t.stride.c = 0;
      return t;
    }
    fail("opd0_str = " + std::to_string(f.opd0_str) +
         " is not a table layout (0 EU-aligned, 4 one table per lane)");
  }

  /// The opd0 lines of SGL, (1, c, h, w): line-aligned for opd0_str 3, one
  /// line-aligned table per lane for 4 (Sophgo's generator writes 3 or 4).
  LocalTensor lineTable(Shape4 s) const {
    if (f.opd0_str != 3 && f.opd0_str != 4)
      fail("opd0_str = " + std::to_string(f.opd0_str) +
           " is not a line layout (3 line-aligned, 4 one table per lane)");
    LocalTensor t =
        local(Opd::Opd0, f.opd0_addr, val, s, LocalLayout::LineAligned);
    if (f.opd0_str == 4)
      t.stride.n = t.stride.c = 0;
    return t;
  }

  /// Plain EU-aligned opd0 (the pl_* and nonzero sub-ops).
  LocalTensor alignedOpd0(Shape4 s, ElemType t) const {
    if (f.opd0_str != 0)
      fail("opd0_str = " + std::to_string(f.opd0_str) +
           " is not defined for this sub-op (only 0, EU-aligned)");
    return local(Opd::Opd0, f.opd0_addr, t, s, LocalLayout::EuAligned);
  }

  /// The positions the `count` indices of a pl_* sub-op address in a
  /// (boundH, boundW) plane. The indices are opd1, (1, count, 1, 1) compact:
  /// d1coor gives w (h = 0); perw gives h (w = the index's own column);
  /// d2coor gives one (h, w) pair per element, h in the low half
  /// (isa/docs/bm1684x.md 4.5: "uint16 stored as INT32 with [h, w]").
  std::vector<Coord> plCoords(uint32_t count, bool d2, bool perw,
                              uint32_t boundH, uint32_t boundW) const {
    ElemType it = idx;
    unsigned coordBits = isa::precBits(idx.prec);
    if (d2) {
      if (idx.prec == Prec::Int8)
        it.prec = Prec::Int16;
      else if (idx.prec == Prec::Int16)
        it.prec = Prec::Int32;
      else
        fail("opd1_prec must be INT8 or INT16 (an (h, w) pair per index)");
    }
    OperandView index(m,
                      local(Opd::Opd1, f.opd1_addr, it, {1, count, 1, 1},
                            LocalLayout::Compact),
                      "index (opd1)", op);
    std::vector<Coord> at(count);
    for (uint32_t i = 0; i < count; ++i) {
      uint64_t v = index.bits(0, i, 0, 0);
      uint64_t h = 0, w = v;
      if (d2) {
        uint64_t low = (uint64_t(1) << coordBits) - 1;
        h = v & low;
        w = v >> coordBits;
      } else if (perw) {
        h = v;
        w = i;
      }
      bool ok = d2 ? inRange(h, boundH, "h coordinate", 0, i, 0, 0) &&
                         inRange(w, boundW, "w coordinate", 0, i, 0, 0)
                : perw ? inRange(h, boundH, "index", 0, i, 0, 0)
                       : inRange(w, boundW, "index", 0, i, 0, 0);
      if (ok)
        at[i] = std::make_pair(uint32_t(h), uint32_t(w));
    }
    return at;
  }

  /// The per-(n, c) count of the select sub-ops: res1, (n, c, 1, 1) uint16,
  /// compact.
  LocalTensor countTensor() const {
    return local(Opd::Res0, f.res1_addr, {Prec::Int16, false},
                 {rs.n, rs.c, 1, 1}, LocalLayout::Compact);
  }

  /// Calls body(n, c) for every batch and every channel on an enabled lane.
  template <typename Body>
  void forEachLane(const ResultView &out, Body body) const {
    for (uint32_t n = 0; n < rs.n; ++n)
      for (uint32_t c = 0; c < rs.c; ++c)
        if (out.enabled(c))
          body(n, c);
  }
};

/// The packing of the select sub-ops: for i < len with selected(i), calls
/// put(k, i) for the k-th selected element while k < cap. Returns how many
/// were selected (may exceed cap; the count records it unclipped).
template <typename Selected, typename Put>
uint32_t packSelected(uint32_t len, uint32_t cap, Selected selected, Put put) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < len; ++i) {
    if (!selected(i))
      continue;
    if (k < cap)
      put(k, i);
    ++k;
  }
  return k;
}

/// pl_gather_d1coor / d2coor / perw: one index vector (1, W, 1, 1) compact,
/// shared by every batch and channel; out (n, c, 1, W).
void plGather(const SgCmd &x) {
  const Shape4 &rs = x.rs;
  x.requireEqual(rs.h, 1, "res0_h", "1 for a gather");
  x.requireEqual(x.f.opd1_c, rs.w, "opd1_c", "the index count res0_w");
  bool d2 = x.eu == kPlGatherD2, perw = x.eu == kPlGatherPerW;
  if (perw)
    x.requireEqual(x.wa, rs.w, "opd0_w", "res0_w (one index per column)");
  uint32_t dataH = x.eu == kPlGatherD1 ? 1 : x.ha;
  x.requirePositive(dataH, "opd0_h");
  Shape4 ds{rs.n, rs.c, dataH, x.wa};
  OperandView data(x.m, x.alignedOpd0(ds, x.val), "data (opd0)", x.op);
  std::vector<Coord> at = x.plCoords(rs.w, d2, perw, dataH, x.wa);
  ResultView out = x.result(rs, LocalLayout::EuAligned);
  x.forEachLane(out, [&](uint32_t n, uint32_t c) {
    for (uint32_t i = 0; i < rs.w; ++i) {
      if (at[i])
        out.setBits(n, c, 0, i, data.bits(n, c, at[i]->first, at[i]->second));
      else
        x.putMasked(out, n, c, 0, i);
    }
  });
}

/// pl_scatter_d1coor / d2coor / perw: source (n, c, 1, opd0_w), one index
/// per source column (1, opd0_w, 1, 1) compact; out (n, c, H, W).
void plScatter(const SgCmd &x) {
  const Shape4 &rs = x.rs;
  x.requireEqual(x.f.opd1_c, x.wa, "opd1_c", "the index count opd0_w");
  bool d2 = x.eu == kPlScatterD2, perw = x.eu == kPlScatterPerW;
  if (x.eu == kPlScatterD1)
    x.requireEqual(rs.h, 1, "res0_h", "1 for pl_scatter_d1coor");
  if (perw)
    x.requireEqual(x.wa, rs.w, "opd0_w", "res0_w (one index per column)");
  Shape4 ss{rs.n, rs.c, 1, x.wa};
  OperandView src(x.m, x.alignedOpd0(ss, x.val), "source (opd0)", x.op);
  std::vector<Coord> to = x.plCoords(x.wa, d2, perw, rs.h, rs.w);
  ResultView out = x.result(rs, LocalLayout::EuAligned);
  x.forEachLane(out, [&](uint32_t n, uint32_t c) {
    for (uint32_t i = 0; i < x.wa; ++i)
      if (to[i])
        out.setBits(n, c, to[i]->first, to[i]->second, src.bits(n, c, 0, i));
  });
}

/// pl_gather_rec: per output column i a record (h0, w0, rh, rw) in opd1
/// (1, W, 1, 4) compact; out (n, c, kh*kw, W) line-aligned with
/// out[n][c][y*kw + x][i] = data[n][c][h0 + y][w0 + x] for y < rh, x < rw.
void plGatherRec(const SgCmd &x) {
  const Shape4 &rs = x.rs;
  uint32_t kh = uint32_t(x.f.opd3_addr >> 16),
           kw = uint32_t(x.f.opd3_addr & 0xFFFF);
  x.requirePositive(kh, "kh (opd3_addr >> 16)");
  x.requirePositive(kw, "kw (opd3_addr & 0xFFFF)");
  x.requireEqual(x.f.opd1_c, rs.w, "opd1_c", "the record count res0_w");
  x.requirePositive(x.ha, "opd0_h");
  Shape4 ds{rs.n, rs.c, x.ha, x.wa};
  OperandView data(x.m, x.alignedOpd0(ds, x.val), "data (opd0)", x.op);
  OperandView recs(x.m,
                   x.local(Opd::Opd1, x.f.opd1_addr, x.idx, {1, rs.w, 1, 4},
                           LocalLayout::Compact),
                   "records (opd1)", x.op);
  ResultView out =
      x.result({rs.n, rs.c, kh * kw, rs.w}, LocalLayout::LineAligned);
  // Source position of every (window element, column), or nullopt.
  std::vector<Coord> at(uint64_t(kh) * kw * rs.w);
  for (uint32_t i = 0; i < rs.w; ++i) {
    uint64_t h0 = recs.bits(0, i, 0, 0), w0 = recs.bits(0, i, 0, 1);
    uint64_t rh = recs.bits(0, i, 0, 2), rw = recs.bits(0, i, 0, 3);
    for (uint32_t y = 0; y < kh; ++y)
      for (uint32_t xx = 0; xx < kw; ++xx) {
        if (y >= rh || xx >= rw)
          continue; // outside the rectangle: masked
        if (x.inRange(h0 + y, x.ha, "h coordinate", 0, i, 0, 0) &&
            x.inRange(w0 + xx, x.wa, "w coordinate", 0, i, 0, 1))
          at[(uint64_t(y) * kw + xx) * rs.w + i] =
              std::make_pair(uint32_t(h0 + y), uint32_t(w0 + xx));
      }
  }
  x.forEachLane(out, [&](uint32_t n, uint32_t c) {
    for (uint32_t k = 0; k < kh * kw; ++k)
      for (uint32_t i = 0; i < rs.w; ++i) {
        const auto &p = at[uint64_t(k) * rs.w + i];
        if (p)
          out.setBits(n, c, k, i, data.bits(n, c, p->first, p->second));
        else
          x.putMasked(out, n, c, k, i);
      }
  });
}

/// pe_s_gather_d1coor / hzd and pe_m_gather_d1coor: per-element indices
/// (n, c, 1, W) into one table per channel; out (n, c, 1, W).
void peGather(const SgCmd &x) {
  const Shape4 &rs = x.rs;
  x.requireEqual(rs.h, 1, "res0_h", "1 for a gather");
  x.requireEqual(x.f.opd1_w, rs.w, "opd1_w", "the index width res0_w");
  bool multi = x.eu == kPeMGatherD1;
  uint32_t tableH = multi ? 1 : x.ha;
  x.requirePositive(tableH, "opd0_h");
  LocalTensor tt;
  if (multi) {
    // Four identical copies of the table, one bank apart (Sophgo's
    // atomic_pem_gather_d1 comment: A = [4, C, 1, A_w], n stride = one bank).
    tt = x.sharedTable({4, rs.c, 1, x.wa});
    tt.stride.n = int64_t(x.m.chip.bankBytes() * 8 / isa::precBits(x.val.prec));
  } else {
    tt = x.sharedTable({1, rs.c, tableH, x.wa});
  }
  OperandView table(x.m, tt, "table (opd0)", x.op);
  OperandView index = x.alignedOpd1({rs.n, rs.c, 1, rs.w}, "index (opd1)");
  ResultView out = x.result(rs, LocalLayout::EuAligned);
  uint64_t bound = uint64_t(tableH) * x.wa;
  x.forEachLane(out, [&](uint32_t n, uint32_t c) {
    for (uint32_t w = 0; w < rs.w; ++w) {
      uint64_t k = index.bits(n, c, 0, w);
      if (!x.inRange(k, bound, "index", n, c, 0, w)) {
        x.putMasked(out, n, c, 0, w);
        continue;
      }
      // pe_m reads copy w mod 4, so a kernel that fills only one copy is
      // caught (the copies exist to serve four lookups at once).
      uint32_t copy = multi ? w % 4 : 0;
      out.setBits(n, c, 0, w,
                  table.bits(copy, c, uint32_t(k / x.wa), uint32_t(k % x.wa)));
    }
  });
}

/// pe_s_scatter_d1coor / hzd (values from a per-channel source) and
/// pe_s_scatter_pp_d1coor (values = source positions): per-element
/// indices (n, c, 1, S) into the flat (H, W) plane of out (n, c, H, W).
void peScatter(const SgCmd &x) {
  const Shape4 &rs = x.rs;
  bool positions = x.eu == kPeScatterPP;
  uint32_t count = positions ? uint32_t(x.f.opd1_w) : x.wa;
  if (!positions)
    x.requireEqual(x.f.opd1_w, x.wa, "opd1_w", "the source width opd0_w");
  x.requirePositive(count, positions ? "opd1_w" : "opd0_w");
  std::unique_ptr<OperandView> src;
  if (positions) {
    if (x.val.prec != Prec::Int16 && x.val.prec != Prec::Int32)
      x.fail("res0_prec must be INT16 or INT32 (positions are written)");
  } else {
    src = std::make_unique<OperandView>(x.m, x.sharedTable({1, rs.c, 1, x.wa}),
                                        "source (opd0)", x.op);
  }
  OperandView index = x.alignedOpd1({rs.n, rs.c, 1, count}, "index (opd1)");
  ResultView out = x.result(rs, LocalLayout::EuAligned);
  uint64_t bound = uint64_t(rs.h) * rs.w;
  x.forEachLane(out, [&](uint32_t n, uint32_t c) {
    for (uint32_t i = 0; i < count; ++i) {
      uint64_t k = index.bits(n, c, 0, i);
      if (!x.inRange(k, bound, "index", n, c, 0, i))
        continue;
      uint64_t v = positions ? i : src->bits(0, c, 0, i);
      out.setBits(n, c, uint32_t(k / rs.w), uint32_t(k % rs.w), v);
    }
  });
}

/// pe_s_mask_select / selhzd: per (n, c), the table elements (1, c, 1,
/// opd0_w) whose mask (n, c, 1, opd0_w) is non-zero, packed from w = 0.
void maskSelect(const SgCmd &x) {
  const Shape4 &rs = x.rs;
  x.requireEqual(x.f.opd1_w, x.wa, "opd1_w", "the mask width opd0_w");
  OperandView table(x.m, x.sharedTable({1, rs.c, 1, x.wa}), "data (opd0)",
                    x.op);
  OperandView maskView = x.alignedOpd1({rs.n, rs.c, 1, x.wa}, "mask (opd1)");
  ResultView out = x.result({rs.n, rs.c, 1, rs.w}, LocalLayout::EuAligned);
  ResultView count(x.m, x.countTensor(), "count (res1)", x.op, x.laneMask);
  x.forEachLane(out, [&](uint32_t n, uint32_t c) {
    uint32_t k = packSelected(
        x.wa, rs.w, [&](uint32_t w) { return maskView.bits(n, c, 0, w) != 0; },
        [&](uint32_t slot, uint32_t w) {
          out.setBits(n, c, 0, slot, table.bits(0, c, 0, w));
        });
    count.setInt(n, c, 0, 0, k);
  });
}

/// pe_s_nonzero / nonzero_hzd: per (n, c), the positions w of the non-zero
/// elements of (n, c, 1, opd0_w), packed from w = 0.
void nonzero(const SgCmd &x) {
  const Shape4 &rs = x.rs;
  Prec p0 = precOf(x.op, x.f.opd0_prec, "opd0_prec");
  if (p0 != Prec::Int8 && p0 != Prec::Int16 && p0 != Prec::Int32)
    x.fail("opd0_prec must be INT8, INT16 or INT32");
  if (x.val.prec != Prec::Int16 && x.val.prec != Prec::Int32)
    x.fail("res0_prec must be INT16 or INT32 (positions are written)");
  OperandView data(x.m, x.alignedOpd0({rs.n, rs.c, 1, x.wa}, {p0, false}),
                   "data (opd0)", x.op);
  ResultView out = x.result({rs.n, rs.c, 1, rs.w}, LocalLayout::EuAligned);
  ResultView count(x.m, x.countTensor(), "count (res1)", x.op, x.laneMask);
  x.forEachLane(out, [&](uint32_t n, uint32_t c) {
    uint32_t k = packSelected(
        x.wa, rs.w, [&](uint32_t w) { return data.bits(n, c, 0, w) != 0; },
        [&](uint32_t slot, uint32_t w) { out.setBits(n, c, 0, slot, w); });
    count.setInt(n, c, 0, 0, k);
  });
}

/// SGL: whole lines of W elements. Table (1, c, opd0_h, W) per opd0_str,
/// index / mask (n, c, h, 1) EU-aligned, out (n, c, H, W) line-aligned.
void lineOps(const SgCmd &x) {
  const Shape4 &rs = x.rs;
  x.requirePositive(x.ha, "opd0_h");
  OperandView table(x.m, x.lineTable({1, rs.c, x.ha, rs.w}), "lines (opd0)",
                    x.op);
  // gather_line: one index per output line; scatter_line and mask_seline:
  // one index / mask element per table line.
  uint32_t ih = x.eu == kGatherLine ? rs.h : x.ha;
  OperandView index =
      x.alignedOpd1({rs.n, rs.c, ih, 1},
                    x.eu == kMaskSeLine ? "mask (opd1)" : "index (opd1)");
  ResultView out = x.result(rs, LocalLayout::LineAligned);
  std::unique_ptr<ResultView> count;
  if (x.eu == kMaskSeLine)
    count = std::make_unique<ResultView>(x.m, x.countTensor(), "count (res1)",
                                         x.op, x.laneMask);
  auto copyLine = [&](uint32_t n, uint32_t c, uint32_t to, uint32_t from) {
    for (uint32_t w = 0; w < rs.w; ++w)
      out.setBits(n, c, to, w, table.bits(0, c, from, w));
  };
  x.forEachLane(out, [&](uint32_t n, uint32_t c) {
    if (x.eu == kMaskSeLine) {
      uint32_t k = packSelected(
          x.ha, rs.h, [&](uint32_t h) { return index.bits(n, c, h, 0) != 0; },
          [&](uint32_t slot, uint32_t h) { copyLine(n, c, slot, h); });
      count->setInt(n, c, 0, 0, k);
      return;
    }
    for (uint32_t h = 0; h < ih; ++h) {
      uint64_t k = index.bits(n, c, h, 0);
      if (x.eu == kGatherLine) {
        if (x.inRange(k, x.ha, "index", n, c, h, 0))
          copyLine(n, c, h, uint32_t(k));
        else
          for (uint32_t w = 0; w < rs.w; ++w)
            x.putMasked(out, n, c, h, w);
      } else if (x.inRange(k, rs.h, "index", n, c, h, 0)) {
        copyLine(n, c, uint32_t(k), h);
      }
    }
  });
}

} // namespace

void execSG(const TiuOp &op, MachineState &m) {
  if (op.eu > kMaskSeLine)
    failOp(op, "SG sub-op " + std::to_string(op.eu) + " does not exist");
  SgCmd x(op, m);
  x.requirePositive(x.rs.n, "res0_n");
  x.requirePositive(x.rs.c, "res0_c");
  x.requirePositive(x.rs.h, "res0_h");
  x.requirePositive(x.rs.w, "res0_w");
  bool line = x.eu >= kGatherLine;
  if (!line && x.eu != kPeScatterPP)
    x.requirePositive(x.wa, "opd0_w");
  if (x.eu != kNonzero && x.eu != kNonzeroHzd)
    x.requireIntegerIndex();
  // SGL carries no opd0 type of its own (the long form leaves opd0_prec 0);
  // the values are res0_prec.
  if (!line && x.eu != kNonzero && x.eu != kNonzeroHzd && x.eu != kPeScatterPP)
    x.requireSameDataType();
  if (x.fill && isScatter(x.eu))
    x.fail("fill (opd2_const) is not defined for a scatter");
  switch (x.eu) {
  case kPlGatherD1:
  case kPlGatherD2:
  case kPlGatherPerW:
    return plGather(x);
  case kPlScatterD1:
  case kPlScatterD2:
  case kPlScatterPerW:
    return plScatter(x);
  case kPlGatherRec:
    return plGatherRec(x);
  case kPeGatherD1:
  case kPeGatherHzd:
  case kPeMGatherD1:
    return peGather(x);
  case kPeScatterD1:
  case kPeScatterHzd:
  case kPeScatterPP:
    return peScatter(x);
  case kMaskSelect:
  case kMaskSelHzd:
    return maskSelect(x);
  case kNonzero:
  case kNonzeroHzd:
    return nonzero(x);
  default:
    return lineOps(x);
  }
}

} // namespace detail
} // namespace tpu::sim
