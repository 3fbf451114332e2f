//===- Tiu.cpp - TIU dispatch and work descriptions -----------------------===//

#include "FuncImpl.h"

#include "../Divisor.h"

#include <algorithm>
#include <array>

namespace tpu::sim {

using isa::Prec;
using isa::TiuTask;

void executeTiu(const TiuOp &op, MachineState &m) {
  using namespace detail;
  switch (op.task) {
  case TiuTask::Conv:
    return execConv(op, m);
  case TiuTask::PorD:
    return execPorD(op, m);
  case TiuTask::MM:
    return op.eu >= 4 ? execMM2(op, m) : execMM(op, m);
  case TiuTask::AR:
    return execAR(op, m);
  case TiuTask::RQDQ:
    return execRQDQ(op, m);
  case TiuTask::TransBC:
    return execTransBC(op, m);
  case TiuTask::SG:
    return execSG(op, m);
  case TiuTask::SFU:
    return execSFU(op, m);
  case TiuTask::LIN:
    return execLIN(op, m);
  case TiuTask::CMP:
    return execCMP(op, m);
  case TiuTask::VC:
    return execVC(op, m);
  case TiuTask::Sys:
    return; // nop, end, barriers: nothing to compute.
  default:
    failOp(op, "task type " + std::to_string(unsigned(op.task)) +
                   " cannot be executed");
  }
}

namespace {

using detail::ceilDiv;

constexpr unsigned kBitsPerByte = 8;

/// The lane geometry with the divisions by the lane count and the EU width
/// as shifts where they can be (Divisor.h): tiuWork runs for every command.
struct WorkGeometry {
  explicit WorkGeometry(const isa::ChipParams &chip)
      : geo(chip), lanes(geo.lanes),
        localEnd(uint64_t(geo.lanes) << geo.laneShift) {}

  /// LocalTensor::startLane.
  unsigned startLane(uint32_t addr) const {
    return unsigned(lanes.mod(unsigned(addr >> geo.laneShift)));
  }
  /// LaneGeometry::euNum (element sizes are powers of two).
  unsigned euNum(Prec p) const {
    return unsigned(Divisor(isa::precBits(p)).div(geo.euBytes * kBitsPerByte));
  }

  LaneGeometry geo;
  Divisor lanes;
  uint64_t localEnd; ///< Addresses from here on are static memory.
};

/// Lane-relative byte range of a local tensor (empty for static memory).
TiuWork::Operand rangeOf(const LocalTensor &t, const WorkGeometry &wg) {
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
  r.offset = t.startOffset(wg.geo);
  r.bytesPerLane = (uint64_t(std::max<int64_t>(maxElem, 0) + 1) *
                        isa::precBits(t.type.prec) +
                    kBitsPerByte - 1) /
                   kBitsPerByte;
  return r;
}

Prec precOr(uint64_t code, Prec fallback) {
  auto p = isa::precFromCode(unsigned(code));
  return p ? *p : fallback;
}

/// Adds a tensor operand (unless it is an immediate).
template <size_t N>
void addRange(FixedList<TiuWork::Operand, N> &v, bool isConst,
              const LocalTensor &t, const WorkGeometry &wg) {
  if (isConst)
    return;
  TiuWork::Operand r = rangeOf(t, wg);
  if (r.bytesPerLane)
    v.push_back(r);
}

LocalTensor plain(uint64_t addr, Prec p, Shape4 s, LocalLayout layout,
                  const WorkGeometry &wg) {
  LocalTensor t;
  t.addr = uint32_t(addr);
  t.type = {p, true};
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
LocalTensor laidOut(uint64_t addr, Prec p, Shape4 s, uint64_t str,
                    std::array<int64_t, 4> freeStrides,
                    const WorkGeometry &wg) {
  constexpr uint64_t kCompact = 1, kPerChannel = 2, kFree = 3;
  LocalTensor t = plain(addr, p, s,
                        str == kCompact ? LocalLayout::Compact
                                        : LocalLayout::EuAligned,
                        wg);
  if (str == kPerChannel)
    t.stride = {0, 1, 0, 0};
  else if (str == kFree)
    t.stride = {freeStrides[0], freeStrides[1], freeStrides[2],
                freeStrides[3]};
  return t;
}

} // namespace

TiuWork tiuWork(const TiuOp &op, const isa::ChipParams &chip) {
  TiuWork w;
  const isa::cmd::TiuLong &f = op.f;
  WorkGeometry wg(chip);
  Prec p0 = precOr(f.opd0_prec, Prec::Int8);
  Prec pr = precOr(f.res0_prec, p0);
  w.computePrec = p0;
  Shape4 rs{uint32_t(f.res0_n), uint32_t(f.res0_c), uint32_t(f.res0_h),
            uint32_t(f.res0_w)};
  auto lanesFor = [&](uint64_t c) {
    return unsigned(std::min<uint64_t>(c, wg.geo.lanes));
  };
  auto slotsFor = [&](uint64_t addr, uint64_t c) {
    unsigned start =
        addr < wg.localEnd
            ? unsigned(wg.lanes.mod(unsigned(addr >> wg.geo.laneShift)))
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
    // AR sub-ops (bm1684x.md 4.2): div iterates opd2_n_str + 1 times; the
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
    if (readsOpd0 && !(isAr && f.opd0_const))
      addRange(w.reads, false,
               operand(f.opd0_addr, p0, f.opd0_str,
                       {int64_t(f.opd0_n_str), int64_t(f.opd0_c_str),
                        int64_t(f.opd0_h_str), int64_t(f.opd0_w_str)}),
               wg);
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

} // namespace tpu::sim
