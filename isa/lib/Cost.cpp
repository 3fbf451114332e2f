//===- Cost.cpp - Cycle cost of one command -------------------------------===//
#include "tpu/isa/Cost.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tpu::isa {

namespace {

/// Percent base of tiu.bank_conflict_pct.
constexpr uint64_t kPercent = 100;
/// Bits of a BankMask.
constexpr uint64_t kMaskBits = 64;
constexpr uint64_t kBitsPerByte = 8;

/// Input channels one output point reduces over: macs per output point
/// divided by the kernel size (both conv and matmul count macs as
/// outputs x reduction length).
uint64_t reductionChannels(const TiuWork &work) {
  uint64_t perOutput =
      work.outputElements * std::max<uint64_t>(1, work.kernelElements);
  return perOutput == 0 ? 0 : ceilDiv(work.macs, perOutput);
}

/// Bytes of the lane range [offset, offset + bytes) that lie in the banks of
/// `mask` (banks of `bankBytes` each).
uint64_t bytesInBanks(uint64_t offset, uint64_t bytes, BankMask mask,
                      uint64_t bankBytes) {
  uint64_t sum = 0, end = offset + bytes;
  for (uint64_t b = offset / bankBytes; b * bankBytes < end; ++b)
    if ((mask >> (b % kMaskBits)) & 1)
      sum +=
          std::min(end, (b + 1) * bankBytes) - std::max(offset, b * bankBytes);
  return sum;
}

/// Banks of the lane bytes [offset, offset + bytes) (bytes > 0), with the
/// bank size computed once by the caller.
BankSpan spanOf(uint64_t offset, uint64_t bytes, const Divisor &bankBytes) {
  return {bankBytes.div(offset), bankBytes.div(offset + bytes - 1)};
}

/// chip.bankBytes() without a hardware divide (banks are a power of two).
Divisor bankDivisor(const ChipParams &chip) {
  return Divisor(Divisor(chip.lmemBanks).div(chip.lmemBytes));
}

} // namespace

BankSpan bankSpan(const ChipParams &chip, uint64_t offset, uint64_t bytes) {
  return spanOf(offset, bytes, bankDivisor(chip));
}

BankMask bankMask(const ChipParams &chip, uint64_t offset, uint64_t bytes) {
  if (bytes == 0)
    return 0;
  return spanMask(bankSpan(chip, offset, bytes));
}

BankMask spanMask(const BankSpan &span) {
  uint64_t count = span.last - span.first + 1;
  if (count >= kMaskBits)
    return ~BankMask(0);
  // `count` bits from bit first (mod 64), wrapping around.
  BankMask run = (BankMask(1) << count) - 1;
  unsigned shift = unsigned(span.first % kMaskBits);
  return shift == 0 ? run : (run << shift) | (run >> (kMaskBits - shift));
}

uint64_t cubeFetchWords(uint64_t outH, uint64_t outW, uint64_t points,
                        uint64_t strideX, uint64_t elemBits,
                        uint64_t portBytes) {
  uint64_t total = outH * outW;
  if (total == 0 || points == 0)
    return 0;
  strideX = std::max<uint64_t>(1, strideX);
  // Words of the steps covering the points [begin, end) (block-aligned).
  auto words = [&](uint64_t begin, uint64_t end) {
    uint64_t sum = 0;
    for (uint64_t block = begin; block < end; block += points) {
      uint64_t blockEnd = std::min(block + points, end);
      for (uint64_t p = block; p < blockEnd;) {
        uint64_t runEnd = std::min(blockEnd, (p / outW + 1) * outW);
        uint64_t elems = (runEnd - p - 1) * strideX + 1;
        sum += ceilDiv(ceilDiv(elems * elemBits, kBitsPerByte), portBytes);
        p = runEnd;
      }
    }
    return sum;
  };
  // Blocks start every `points` points and rows every outW, so the pattern
  // of runs repeats every lcm(points, outW) points: cost one period, then
  // the remainder.
  uint64_t period = std::lcm(points, outW);
  if (total <= period)
    return words(0, total);
  uint64_t periods = total / period;
  return periods * words(0, period) + words(periods * period, total);
}

TiuCost tiuCost(const TiuOp &op, const TiuWork &work, const ChipParams &chip,
                const TimingParams &timing) {
  TiuCost cost;
  if (op.task == TiuTask::Sys) {
    cost.unit = TiuUnit::System;
    cost.startupCycles = timing.tiuSysCycles;
    return cost;
  }
  uint64_t kernel = std::max<uint64_t>(1, work.kernelElements);
  if (work.cubeIcPerStep > 0) {
    cost.unit = TiuUnit::Cube;
    cost.startupCycles = timing.cubeStartup;
    uint64_t icSteps = ceilDiv(reductionChannels(work), work.cubeIcPerStep);
    uint64_t points = timing.cubePixels(work.computePrec);
    uint64_t plane = uint64_t(op.f.res0_h) * op.f.res0_w;
    uint64_t steps;
    if (op.task == TiuTask::Conv && plane != 0 &&
        work.elementsPerLane % plane == 0) {
      // Each (n, channel slot) plane is fed run by run through the lane's
      // port (cubeFetchWords); a step whose inputs fit one word costs one
      // cycle.
      steps =
          work.elementsPerLane / plane *
          cubeFetchWords(op.f.res0_h, op.f.res0_w, points, op.f.res_op_x_str,
                         precBits(work.computePrec), chip.euBytes);
    } else {
      steps = ceilDiv(work.elementsPerLane, points);
    }
    cost.streamCycles = steps * kernel * icSteps;
    cost.macs = work.macs;
    cost.peakMacsPerCycle = peakMacsPerCycle(chip, timing, work.computePrec);
  } else {
    cost.unit = TiuUnit::Vector;
    cost.startupCycles = timing.euStartup;
    // EU_NUM = eu_bytes * 8 / element bits (a power of two).
    unsigned euNum =
        unsigned(Divisor(precBits(work.computePrec)).div(chip.euBytes * 8));
    uint64_t steps = Divisor(euNum).ceilDiv(work.elementsPerLane) * kernel *
                     std::max(1u, work.iterations);
    cost.streamCycles = Divisor(timing.euStepsPerCycle).ceilDiv(steps);
  }
  // Bank spans of every operand and result, once: for the conflicts inside
  // the command and for the banks it holds (TIU/GDMA contention).
  Divisor bank = bankDivisor(chip);
  // Fills `spans` with the non-empty ranges of `list`; returns their count.
  auto collect = [&bank](const auto &list, BankSpan *spans, BankMask &mask) {
    size_t n = 0;
    for (const TiuWork::Operand &o : list)
      if (o.bytesPerLane != 0) {
        spans[n] = spanOf(o.offset, o.bytesPerLane, bank);
        mask |= spanMask(spans[n++]);
      }
    return n;
  };
  BankSpan readSpans[TiuWork::kMaxReads], writeSpans[TiuWork::kMaxWrites];
  BankMask readBanks = 0, writeBanks = 0;
  size_t reads = collect(work.reads, readSpans, readBanks);
  size_t writes = collect(work.writes, writeSpans, writeBanks);
  cost.banks = readBanks | writeBanks;
  for (size_t i = 0; i < reads; ++i)
    for (size_t j = 0; j < writes; ++j)
      cost.conflictPairs += readSpans[i].overlaps(writeSpans[j]);
  if (cost.conflictPairs == 0)
    return cost;
  // Single-ported banks: every write beat into a bank the read stream is
  // using takes one read cycle (and vice versa), so the colliding accesses
  // are the fewer of the read beats and the write beats in the shared
  // banks. The stream reads its operands one port word per cycle, spread
  // over each operand's range; results leave one port word per beat (a
  // vector command moves tiu.eu_steps_per_cycle words per cycle).
  uint64_t beatBytes = chip.euBytes;
  if (cost.unit == TiuUnit::Vector)
    beatBytes *= timing.euStepsPerCycle;
  uint64_t readBeats = 0, writeBeats = 0;
  for (const TiuWork::Operand &r : work.reads)
    if (r.bytesPerLane != 0) {
      uint64_t shared =
          bytesInBanks(r.offset, r.bytesPerLane, writeBanks, bank.value());
      readBeats += ceilDiv(cost.streamCycles * shared, r.bytesPerLane);
    }
  for (const TiuWork::Operand &w : work.writes) {
    uint64_t shared =
        bytesInBanks(w.offset, w.bytesPerLane, readBanks, bank.value());
    writeBeats += ceilDiv(shared, beatBytes);
  }
  cost.conflictCycles = ceilDiv(
      std::min(readBeats, writeBeats) * timing.bankConflictPct, kPercent);
  return cost;
}

GdmaCost gdmaCost(const GdmaOp &op, const GdmaWork &work,
                  const TimingParams &timing) {
  GdmaCost cost;
  if (op.type == GdmaType::Sys) {
    cost.startupCycles = timing.gdmaSysCycles;
    return cost;
  }
  cost.startupCycles = timing.gdmaStartup;
  cost.payloadBytes = work.bytes;
  cost.ddrReadBytes = work.ddrReadBytes;
  cost.ddrWriteBytes = work.ddrWriteBytes;

  // A command that reads and writes DDR (DDR to DDR) has runs on both sides.
  uint64_t ddrBytes = work.ddrReadBytes + work.ddrWriteBytes;
  uint64_t sides = (work.ddrReadBytes > 0) + (work.ddrWriteBytes > 0);
  uint64_t runs =
      std::max<uint64_t>(std::max<uint64_t>(1, sides), work.contiguousRuns);
  uint64_t runsPerSide = sides == 0 ? 1 : ceilDiv(runs, sides);

  if (work.bytes > 0)
    cost.datapathCycles =
        runsPerSide *
        ceilDiv(ceilDiv(work.bytes, runsPerSide), timing.gdmaDatapathBytes);
  if (ddrBytes > 0)
    cost.ddrBusBytes =
        runs * alignUp(ceilDiv(ddrBytes, runs), timing.ddrBurstBytes) +
        (runs - sides) * timing.ddrRunSwitchBytes;
  return cost;
}

BankMask gdmaBanks(const GdmaOp &op, const GdmaWork &work,
                   const ChipParams &chip) {
  if (op.type == GdmaType::Sys)
    return 0;
  BankMask mask = 0;
  auto side = [&](uint64_t unified, uint64_t bytes, uint64_t channels) {
    if (bytes == 0)
      return;
    uint64_t lanes = chip.npuNum;
    if (op.type == GdmaType::Tensor && channels != 0)
      lanes = std::min<uint64_t>(lanes, channels);
    uint64_t offset = unified & (chip.lmemBytes - 1);
    mask |= bankMask(chip, offset, ceilDiv(bytes, lanes));
  };
  if (work.src == MemRegion::Local)
    side(op.srcAddr(), work.localReadBytes, op.f.src_csize);
  if (work.dst == MemRegion::Local)
    side(op.dstAddr(), work.localWriteBytes, op.f.dst_csize);
  return mask;
}

void TiuBankHistory::record(BankMask banks, uint64_t startPs, uint64_t endPs) {
  if (banks == 0 || endPs <= startPs)
    return;
  Span span{banks, startPs, endPs};
  if (ring_.size() < kCapacity) {
    ring_.push_back(span);
    return;
  }
  ring_[head_] = span;
  head_ = (head_ + 1) % kCapacity;
}

double TiuBankHistory::overlapPs(BankMask banks, uint64_t fromPs,
                                 uint64_t toPs) const {
  if (banks == 0 || toPs <= fromPs)
    return 0;
  double total = 0;
  double bankCount = double(__builtin_popcountll(banks));
  // Newest first: the TIU runs in order, so end times only grow and the
  // walk stops at the first command that ended before the window.
  size_t n = ring_.size();
  size_t newest = n < kCapacity ? n : head_ + kCapacity;
  for (size_t k = 0; k < n; ++k) {
    const Span &t = ring_[(newest - 1 - k) % kCapacity];
    if (t.endPs <= fromPs)
      break;
    BankMask shared = t.banks & banks;
    uint64_t from = std::max(fromPs, t.startPs), to = std::min(toPs, t.endPs);
    if (shared == 0 || to <= from)
      continue;
    total +=
        double(to - from) * double(__builtin_popcountll(shared)) / bankCount;
  }
  return total;
}

uint64_t gdmaConflictCycles(double overlapPs, uint64_t periodPs,
                            const TimingParams &timing) {
  // Slack when rounding up, so that a whole number computed with rounding
  // error does not gain a cycle.
  constexpr double kCycleSlack = 1e-9;
  if (overlapPs <= 0 || timing.lmemGdmaConflictPct == 0)
    return 0;
  return uint64_t(
      std::max(0.0, std::ceil(overlapPs / double(periodPs) *
                                  double(timing.lmemGdmaConflictPct) / 100.0 -
                              kCycleSlack)));
}

} // namespace tpu::isa
