//===- Work.cpp - The work a command does, for the cost model -------------===//
#include "tpu/isa/Work.h"

#include "tpu/isa/Divisor.h"

#include <algorithm>
#include <array>

namespace tpu::isa {

namespace {

constexpr unsigned kBitsPerByte = 8;

/// The geometry of a local tensor operand, as far as its byte range needs.
struct WorkTensor {
  uint32_t addr = 0;
  Prec prec = Prec::Int8;
  Shape4 shape{1, 1, 1, 1};
  Stride4 stride{0, 0, 0, 0};
};

uint64_t elementCount(const Shape4 &s) {
  return uint64_t(s.n) * s.c * s.h * s.w;
}

/// The lane geometry with the divisions by the lane count and the EU width
/// as shifts where they can be (Divisor.h): tiuWork runs for every command.
struct WorkGeometry {
  explicit WorkGeometry(const ChipParams &chip)
      : laneCount(chip.npuNum), laneShift(chip.laneShift()),
        laneBytes(chip.lmemBytes), euBytes(chip.euBytes), lanes(laneCount),
        localEnd(uint64_t(laneCount) << laneShift) {}

  /// Lane of a local address (lane << laneShift | offset).
  unsigned startLane(uint32_t addr) const {
    return unsigned(lanes.mod(unsigned(addr >> laneShift)));
  }
  /// Byte offset of a local address in its lane.
  uint64_t startOffset(uint32_t addr) const { return addr & (laneBytes - 1); }
  /// EU_NUM (element sizes are powers of two).
  unsigned euNum(Prec p) const {
    return unsigned(Divisor(precBits(p)).div(euBytes * kBitsPerByte));
  }

  unsigned laneCount;
  unsigned laneShift;
  uint64_t laneBytes;
  unsigned euBytes;
  Divisor lanes;
  uint64_t localEnd; ///< Addresses from here on are static memory.
};

/// Lane-relative byte range of a local tensor (empty for static memory).
TiuWork::Operand rangeOf(const WorkTensor &t, const WorkGeometry &wg) {
  TiuWork::Operand r;
  if (t.addr >= wg.localEnd)
    return r;
  const Shape4 &s = t.shape;
  if (s.n == 0 || s.c == 0 || s.h == 0 || s.w == 0)
    return r;
  unsigned start = wg.startLane(t.addr);
  uint64_t lastSlot = wg.lanes.div(uint64_t(start) + s.c - 1);
  int64_t maxElem =
      int64_t(s.n - 1) * t.stride.n + int64_t(lastSlot) * t.stride.c +
      int64_t(s.h - 1) * t.stride.h + int64_t(s.w - 1) * t.stride.w;
  r.offset = wg.startOffset(t.addr);
  r.bytesPerLane =
      (uint64_t(std::max<int64_t>(maxElem, 0) + 1) * precBits(t.prec) +
       kBitsPerByte - 1) /
      kBitsPerByte;
  return r;
}

Prec precOr(uint64_t code, Prec fallback) {
  auto p = precFromCode(unsigned(code));
  return p ? *p : fallback;
}

/// Adds a tensor operand (unless it is an immediate).
template <size_t N>
void addRange(FixedList<TiuWork::Operand, N> &v, bool isConst,
              const WorkTensor &t, const WorkGeometry &wg) {
  if (isConst)
    return;
  TiuWork::Operand r = rangeOf(t, wg);
  if (r.bytesPerLane)
    v.push_back(r);
}

WorkTensor plain(uint64_t addr, Prec p, Shape4 s, LocalLayout layout,
                 const WorkGeometry &wg) {
  WorkTensor t;
  t.addr = uint32_t(addr);
  t.prec = p;
  t.shape = s;
  unsigned start = t.addr < wg.localEnd ? wg.startLane(t.addr) : 0;
  int64_t slots = int64_t(wg.lanes.ceilDiv(uint64_t(start) + s.c));
  int64_t hw = int64_t(s.h) * s.w;
  int64_t cs = layout == LocalLayout::Compact
                   ? hw
                   : int64_t(Divisor(wg.euNum(p)).alignUp(uint64_t(hw)));
  t.stride = {slots * cs, cs, int64_t(s.w), 1};
  return t;
}

/// A vector operand as its layout code says (`*_str`: 0 EU-aligned,
/// 1 compact, 2 one element per channel, 3 the command's free strides),
/// so that the range of, say, a per-channel operand read with zero h/w
/// strides is its few bytes and not a whole tile.
WorkTensor laidOut(uint64_t addr, Prec p, Shape4 s, uint64_t str,
                   std::array<int64_t, 4> freeStrides, const WorkGeometry &wg) {
  constexpr uint64_t kCompact = 1, kPerChannel = 2, kFree = 3;
  WorkTensor t = plain(
      addr, p, s,
      str == kCompact ? LocalLayout::Compact : LocalLayout::EuAligned, wg);
  if (str == kPerChannel)
    t.stride = {0, 1, 0, 0};
  else if (str == kFree)
    t.stride = {freeStrides[0], freeStrides[1], freeStrides[2], freeStrides[3]};
  return t;
}

} // namespace

TiuWork tiuWork(const TiuOp &op, const ChipParams &chip) {
  TiuWork w;
  const cmd::TiuLong &f = op.f;
  WorkGeometry wg(chip);
  Prec p0 = precOr(f.opd0_prec, Prec::Int8);
  Prec pr = precOr(f.res0_prec, p0);
  w.computePrec = p0;
  Shape4 rs{uint32_t(f.res0_n), uint32_t(f.res0_c), uint32_t(f.res0_h),
            uint32_t(f.res0_w)};
  auto lanesFor = [&](uint64_t c) {
    return unsigned(std::min<uint64_t>(c, wg.laneCount));
  };
  auto slotsFor = [&](uint64_t addr, uint64_t c) {
    unsigned start =
        addr < wg.localEnd
            ? unsigned(wg.lanes.mod(unsigned(addr >> wg.laneShift)))
            : 0;
    return wg.lanes.ceilDiv(uint64_t(start) + c);
  };
  auto setOutput = [&](Shape4 s, uint64_t addr) {
    w.outputElements = elementCount(s);
    w.lanesUsed = lanesFor(s.c);
    w.elementsPerLane = uint64_t(s.n) * slotsFor(addr, s.c) * s.h * s.w;
  };

  switch (op.task) {
  case TiuTask::Conv: {
    uint64_t ic = f.opd0_c, kArea = f.opd1_h * f.opd1_w;
    setOutput(rs, f.res0_addr);
    w.macs = w.outputElements * ic * kArea;
    w.inputElements = f.res0_n * ic * f.opd0_h * f.opd0_w;
    w.cubeIcPerStep = unsigned(std::min<uint64_t>(ic, chip.icParallel(p0)));
    w.kernelElements = kArea;
    Shape4 is{rs.n, uint32_t(ic), uint32_t(f.opd0_h), uint32_t(f.opd0_w)};
    addRange(w.reads, false,
             plain(f.opd0_addr, p0, is, LocalLayout::EuAligned, wg), wg);
    uint32_t icp = chip.icParallel(p0);
    Shape4 ws{1, rs.c, 1, uint32_t(ceilDiv(ic, icp) * kArea * icp)};
    addRange(w.reads, f.opd1_const,
             plain(f.opd1_addr, p0, ws, LocalLayout::Compact, wg), wg);
    addRange(w.writes, false,
             plain(f.res0_addr, pr, rs, LocalLayout::EuAligned, wg), wg);
    break;
  }
  case TiuTask::PorD: {
    uint64_t kArea = f.opd1_h * f.opd1_w;
    setOutput(rs, f.res0_addr);
    w.macs = w.outputElements * kArea;
    w.inputElements = f.res0_n * f.res0_c * f.opd0_h * f.opd0_w;
    w.kernelElements = kArea;
    Shape4 is{rs.n, rs.c, uint32_t(f.opd0_h), uint32_t(f.opd0_w)};
    addRange(w.reads, false,
             plain(f.opd0_addr, p0, is, LocalLayout::EuAligned, wg), wg);
    if (op.eu == 0 || op.eu == 2)
      addRange(w.reads, f.opd1_const,
               plain(f.opd1_addr, p0,
                     {1, rs.c, uint32_t(f.opd1_h), uint32_t(f.opd1_w)},
                     LocalLayout::Compact, wg),
               wg);
    addRange(w.writes, false,
             plain(f.res0_addr, pr, rs, LocalLayout::EuAligned, wg), wg);
    break;
  }
  case TiuTask::MM: {
    uint64_t mRows, kDim, nCols;
    if (op.eu >= 4) {
      mRows = f.res0_c;
      nCols = f.res0_w;
      kDim = op.eu == 4 ? f.opd1_c : f.opd1_w;
      setOutput({1, uint32_t(mRows), 1, uint32_t(nCols)}, f.res0_addr);
      addRange(w.reads, f.opd0_const,
               plain(f.opd0_addr, p0, {1, uint32_t(mRows), 1, uint32_t(kDim)},
                     LocalLayout::EuAligned, wg),
               wg);
      addRange(w.reads, f.opd1_const,
               plain(f.opd1_addr, p0,
                     {1, uint32_t(f.opd1_c), 1, uint32_t(f.opd1_w)},
                     LocalLayout::EuAligned, wg),
               wg);
      addRange(w.writes, false,
               plain(f.res0_addr, pr, {1, uint32_t(mRows), 1, uint32_t(nCols)},
                     LocalLayout::EuAligned, wg),
               wg);
    } else {
      uint64_t stored = f.opd0_c ? f.opd0_w * (f.opd0_c - 1) + f.opd1_w : 0;
      mRows = f.left_tran ? stored : f.opd0_n;
      kDim = f.left_tran ? f.opd0_n : stored;
      nCols = f.res0_c * f.res0_w;
      Shape4 os{uint32_t(mRows), rs.c, 1, rs.w};
      setOutput(os, f.res0_addr);
      addRange(
          w.reads, f.opd0_const,
          plain(f.opd0_addr, p0,
                {uint32_t(f.opd0_n), uint32_t(f.opd0_c), 1, uint32_t(f.opd0_w)},
                LocalLayout::EuAligned, wg),
          wg);
      addRange(w.reads, f.opd1_const,
               plain(f.opd1_addr, p0, {uint32_t(kDim), rs.c, 1, rs.w},
                     LocalLayout::EuAligned, wg),
               wg);
      addRange(w.writes, false,
               plain(f.res0_addr, pr, os, LocalLayout::EuAligned, wg), wg);
    }
    w.macs = mRows * kDim * nCols;
    w.inputElements = mRows * kDim + kDim * nCols;
    w.cubeIcPerStep = unsigned(std::min<uint64_t>(kDim, chip.icParallel(p0)));
    w.kernelElements = 1;
    break;
  }
  case TiuTask::VC: {
    uint64_t lenA = f.opd0_c ? (f.opd0_c - 1) * f.opd0_w + f.opd1_w : 0;
    Shape4 os{uint32_t(lenA), rs.c, 1, rs.w};
    setOutput(os, f.res0_addr);
    w.inputElements = lenA + uint64_t(rs.c) * rs.w;
    w.kernelElements = 1;
    addRange(w.writes, false,
             plain(f.res0_addr, pr, os, LocalLayout::EuAligned, wg), wg);
    break;
  }
  case TiuTask::TransBC:
  case TiuTask::SG:
  case TiuTask::AR:
  case TiuTask::CMP:
  case TiuTask::LIN:
  case TiuTask::SFU:
  case TiuTask::RQDQ: {
    Shape4 s = rs;
    s.n = std::max<uint32_t>(s.n, 1);
    s.h = std::max<uint32_t>(s.h, 1);
    setOutput(s, f.res0_addr);
    w.inputElements = w.outputElements;
    w.kernelElements = 1;
    if (op.task == TiuTask::SFU) {
      constexpr unsigned kTaylor4x = 12, kTaylor = 13, kRsqrt = 17;
      if (op.eu == kTaylor || op.eu == kTaylor4x)
        w.iterations = unsigned(std::max<uint64_t>(f.opd1_n, 1));
      else if (op.eu == kRsqrt)
        w.iterations = unsigned(f.opd2_n_str + 1);
    }
    // AR sub-ops (isa/docs/bm1684x.md 4.2): div iterates opd2_n_str + 1 times; the
    // index generators read no tensor.
    constexpr unsigned kArDiv = 12, kArEuIdxGen = 24, kArNpuIdxGen = 25;
    // CMP sub-ops that also write the selected value to res1.
    constexpr unsigned kCmpGtAndSel = 22, kCmpLtAndSel = 25;
    if (op.task == TiuTask::AR && op.eu == kArDiv)
      w.iterations = unsigned(f.opd2_n_str + 1);
    bool readsOpd0 = !(op.task == TiuTask::AR &&
                       (op.eu == kArEuIdxGen || op.eu == kArNpuIdxGen));
    // AR operands follow their layout codes (free strides included), as
    // the functional kernel reads them; the other tasks' operands are
    // estimated as EU-aligned tensors of the result's shape.
    bool isAr = op.task == TiuTask::AR;
    auto operand = [&](uint64_t addr, Prec p, uint64_t str,
                       std::array<int64_t, 4> free) {
      return isAr ? laidOut(addr, p, s, str, free, wg)
                  : plain(addr, p, s, LocalLayout::EuAligned, wg);
    };
    // The per-element gathers (SG pe_s_gather_d1coor / hzd, pe_m_gather_d1coor)
    // read a table of opd0_h x opd0_w elements, not a tensor of the
    // result's shape: with opd0_str 4 one row-aligned table per lane (every
    // channel of the lane reads it), else an EU-aligned (1, c, h, w) table;
    // pe_m reads four copies, one bank apart. Their indices, opd1, are
    // (n, c, 1, w) EU-aligned. isa/docs/bm1684x.md 3.2 (T4) and 4.5 (sSG).
    constexpr unsigned kPeSGatherD1 = 5, kPeMGatherD1 = 7, kPeSGatherHzd = 13;
    bool gather = op.task == TiuTask::SG &&
                  (op.eu == kPeSGatherD1 || op.eu == kPeMGatherD1 ||
                   op.eu == kPeSGatherHzd);
    if (gather) {
      bool multi = op.eu == kPeMGatherD1;
      uint32_t th = multi ? 1 : std::max<uint32_t>(uint32_t(f.opd0_h), 1);
      uint32_t tw = std::max<uint32_t>(uint32_t(f.opd0_w), 1);
      WorkTensor table;
      if (f.opd0_str == 4) {
        table =
            plain(f.opd0_addr, p0, {1, 1, th, tw}, LocalLayout::EuAligned, wg);
        // Each row starts on an EU boundary.
        uint64_t eu = wg.euNum(p0);
        table.stride.h = int64_t((uint64_t(tw) + eu - 1) / eu * eu);
      } else {
        table = plain(f.opd0_addr, p0, {1, rs.c, th, tw},
                      LocalLayout::EuAligned, wg);
      }
      if (multi) {
        table.shape.n = 4;
        table.stride.n =
            int64_t(chip.bankBytes() * kBitsPerByte / precBits(p0));
      }
      addRange(w.reads, false, table, wg);
      addRange(w.reads, false,
               plain(f.opd1_addr, precOr(f.opd1_prec, Prec::Int8), s,
                     LocalLayout::EuAligned, wg),
               wg);
    } else if (readsOpd0 && !(isAr && f.opd0_const)) {
      addRange(w.reads, false,
               operand(f.opd0_addr, p0, f.opd0_str,
                       {int64_t(f.opd0_n_str), int64_t(f.opd0_c_str),
                        int64_t(f.opd0_h_str), int64_t(f.opd0_w_str)}),
               wg);
    }
    bool binary = (isAr && f.tsk_opd_num >= 2) || op.task == TiuTask::CMP;
    if (binary) {
      addRange(w.reads, f.opd1_const,
               operand(f.opd1_addr, precOr(f.opd1_prec, p0), f.opd1_str,
                       {int64_t(f.opd1_n_str), int64_t(f.opd1_c_str),
                        int64_t(f.opd1_h_str), int64_t(f.opd1_w_str)}),
               wg);
      w.inputElements += w.outputElements;
    }
    addRange(w.writes, false,
             operand(f.res0_addr, pr, f.res0_str,
                     {int64_t(f.res0_n_str), int64_t(f.res0_c_str),
                      int64_t(f.res0_h_str), int64_t(f.res0_w_str)}),
             wg);
    if (op.task == TiuTask::CMP &&
        (op.eu == kCmpGtAndSel || op.eu == kCmpLtAndSel))
      addRange(w.writes, false,
               plain(f.res1_addr, precOr(f.opd2_prec, p0), s,
                     LocalLayout::EuAligned, wg),
               wg);
    break;
  }
  case TiuTask::Sys:
  default:
    break;
  }
  return w;
}

//===----------------------------------------------------------------------===//
// Work
//===----------------------------------------------------------------------===//

namespace {

// Tensor special functions (isa/docs/bm1684x.md 5.1).
constexpr unsigned kSpNcTrans = 1, kSpCollect = 2, kSpBroadcast = 3,
                   kSpDistribute = 4, kSpBankCopy = 5, kSpBankBroadcast = 6;
/// Copies a bank copy or bank broadcast writes.
constexpr unsigned kBankCopies = 4;

/// Contiguous runs of a strided 4-D access: dimensions merge from the inside
/// while each stride equals the extent of everything inside it.
uint64_t runsOf(const Shape4 &s, const Stride4 &st) {
  uint32_t dims[4] = {s.n, s.c, s.h, s.w};
  int64_t strides[4] = {st.n, st.c, st.h, st.w};
  uint64_t runs = 1;
  int64_t inner = 1;
  bool merging = true;
  for (int i = 3; i >= 0; --i) {
    if (dims[i] == 1)
      continue;
    if (merging && strides[i] == inner) {
      inner *= dims[i];
      continue;
    }
    merging = false;
    runs *= dims[i];
  }
  return runs;
}

void account(GdmaWork &w, MemRegion r, uint64_t bytes, bool isRead) {
  if (r == MemRegion::Global)
    (isRead ? w.ddrReadBytes : w.ddrWriteBytes) += bytes;
  else if (r == MemRegion::Local)
    (isRead ? w.localReadBytes : w.localWriteBytes) += bytes;
}

} // namespace

GdmaWork gdmaWork(const GdmaOp &op, const ChipParams &chip) {
  GdmaWork w;
  if (op.type == GdmaType::Sys)
    return w;
  const cmd::DmaTensor &f = op.f;
  auto fmt = gdmaFormatFromCode(unsigned(f.src_data_format));
  uint64_t bits = fmt ? gdmaFormatBits(*fmt) : kBitsPerByte;
  // Bytes of `elems` elements (INT4: two per byte).
  auto bytesOf = [](uint64_t elems, uint64_t elemBits) {
    return (elems * elemBits + kBitsPerByte - 1) / kBitsPerByte;
  };
  bool fill = f.fill_constant_en;
  w.src = fill ? MemRegion::None : classifyAddr(chip, op.srcAddr());
  w.dst = classifyAddr(chip, op.dstAddr());
  Shape4 s = gdmaSrcShape(f);
  uint64_t srcElems = 0, dstElems = 0;
  Stride4 srcSt{int64_t(f.src_nstride), int64_t(f.src_cstride),
                int64_t(f.src_hstride), int64_t(f.src_wstride)};
  Stride4 dstSt{int64_t(f.dst_nstride), int64_t(f.dst_cstride),
                int64_t(f.dst_hstride), int64_t(f.dst_wstride)};
  Shape4 d = f.nchw_copy ? s : gdmaDstShape(f);
  switch (op.type) {
  case GdmaType::Tensor: {
    Shape4 sc = s;
    if (op.special == kSpBroadcast || op.special == kSpBankBroadcast)
      sc.c = 1;
    srcElems = fill ? 0 : elementCount(sc);
    if (f.nchw_copy) {
      if (op.special == kSpNcTrans)
        d = {s.c, s.n, s.h, s.w};
      else if (op.special == kSpCollect || op.special == kSpDistribute)
        d = {s.n, s.w, s.h, s.c};
      else if (op.special == kSpBroadcast || op.special == kSpBankBroadcast)
        d.c = uint32_t(f.dst_csize);
    }
    dstElems = elementCount(d);
    if (op.special == kSpBankCopy || op.special == kSpBankBroadcast)
      dstElems *= kBankCopies;
    break;
  }
  case GdmaType::CwTranspose:
    srcElems = elementCount(s);
    d = {s.n, s.w, s.h, s.c};
    dstElems = srcElems;
    break;
  case GdmaType::General:
    srcElems = fill ? 0 : f.src_cstride;
    dstElems = f.src_cstride *
               (op.special == 1 ? std::max<uint64_t>(f.dst_csize, 1) : 1);
    s = {1, 1, 1, uint32_t(f.src_cstride)};
    d = s;
    srcSt = dstSt = {0, 0, 0, 1};
    break;
  case GdmaType::Matrix: {
    bool toGlobal = w.src == MemRegion::Local;
    uint64_t rows = toGlobal ? f.dst_hsize : f.src_hsize;
    uint64_t cols = toGlobal ? f.dst_wsize : f.src_wsize;
    srcElems = fill ? 0 : rows * cols;
    dstElems = rows * cols;
    Shape4 gm{1, 1, uint32_t(rows), uint32_t(cols)};
    Stride4 gs{0, 0, int64_t(toGlobal ? f.dst_hstride : f.src_hstride), 1};
    if (!f.stride_enable)
      gs.h = int64_t(cols);
    if (toGlobal) {
      d = gm;
      dstSt = gs;
    } else {
      s = gm;
      srcSt = gs;
    }
    break;
  }
  case GdmaType::Gather:
  case GdmaType::Scatter: {
    uint64_t rows = op.type == GdmaType::Gather
                        ? (f.nchw_copy ? f.src_hsize : f.dst_hsize)
                        : f.src_hsize;
    uint64_t chans = op.type == GdmaType::Gather
                         ? std::max<uint64_t>(f.src_csize, op.index_csize)
                         : f.dst_csize;
    srcElems = dstElems = rows * chans * f.src_wsize;
    s = {1, uint32_t(chans), uint32_t(rows), uint32_t(f.src_wsize)};
    d = s;
    srcSt = {0, int64_t(f.src_cstride), int64_t(f.src_hstride), 1};
    dstSt = {0, int64_t(f.dst_cstride), int64_t(f.dst_hstride), 1};
    account(w, classifyAddr(chip, op.index_start_addr),
            rows * chans * kGdmaIndexBytes, true);
    break;
  }
  case GdmaType::MaskedSelect:
  case GdmaType::Nonzero:
    srcElems = dstElems = elementCount(s);
    d = {1, 1, 1, uint32_t(std::min<uint64_t>(dstElems, UINT32_MAX))};
    dstSt = {0, 0, 0, 1};
    if (op.type == GdmaType::MaskedSelect)
      account(w, classifyAddr(chip, op.mask_start_addr),
              bytesOf(srcElems, gdmaFormatBits(op.mask_data_format)), true);
    break;
  default:
    break;
  }
  w.bytes = bytesOf(dstElems, bits);
  account(w, w.src, bytesOf(srcElems, bits), true);
  account(w, w.dst, w.bytes, false);
  if (!f.stride_enable && op.type != GdmaType::General) {
    srcSt = {int64_t(s.c) * s.h * s.w, int64_t(s.h) * s.w, int64_t(s.w), 1};
    dstSt = {int64_t(d.c) * d.h * d.w, int64_t(d.h) * d.w, int64_t(d.w), 1};
  }
  if (w.src == MemRegion::Global && srcElems)
    w.contiguousRuns += runsOf(s, srcSt);
  if (w.dst == MemRegion::Global && dstElems)
    w.contiguousRuns += runsOf(d, dstSt);
  return w;
}

} // namespace tpu::isa
