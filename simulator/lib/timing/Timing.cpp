//===- Timing.cpp - Cycle cost of one command -----------------------------===//
#include "tpusim/Timing.h"

#include <algorithm>

namespace tpu::sim {

namespace {

/// Percent base of tiu.bank_conflict_pct.
constexpr uint64_t kPercent = 100;

/// Input channels one output point reduces over: macs per output point
/// divided by the kernel size (both conv and matmul count macs as
/// outputs x reduction length).
uint64_t reductionChannels(const TiuWork &work) {
  uint64_t perOutput =
      work.outputElements * std::max<uint64_t>(1, work.kernelElements);
  return perOutput == 0 ? 0 : ceilDiv(work.macs, perOutput);
}

} // namespace

BankSpan bankSpan(const isa::ChipParams &chip, uint64_t offset,
                  uint64_t bytes) {
  uint64_t bank = chip.bankBytes();
  return {offset / bank, (offset + bytes - 1) / bank};
}

unsigned bankConflictPairs(const TiuWork &work, const isa::ChipParams &chip) {
  unsigned pairs = 0;
  for (const TiuWork::Operand &r : work.reads) {
    if (r.bytesPerLane == 0)
      continue;
    BankSpan rs = bankSpan(chip, r.offset, r.bytesPerLane);
    for (const TiuWork::Operand &w : work.writes)
      if (w.bytesPerLane != 0 &&
          rs.overlaps(bankSpan(chip, w.offset, w.bytesPerLane)))
        ++pairs;
  }
  return pairs;
}

TiuCost tiuCost(const TiuOp &op, const TiuWork &work, const SimConfig &cfg) {
  TiuCost cost;
  if (op.task == isa::TiuTask::Sys) {
    cost.unit = TiuUnit::System;
    cost.startupCycles = cfg.tiuSysCycles;
    return cost;
  }
  uint64_t kernel = std::max<uint64_t>(1, work.kernelElements);
  if (work.cubeIcPerStep > 0) {
    cost.unit = TiuUnit::Cube;
    cost.startupCycles = cfg.cubeStartup;
    uint64_t icSteps = ceilDiv(reductionChannels(work), work.cubeIcPerStep);
    cost.streamCycles =
        ceilDiv(work.elementsPerLane, cfg.cubePixels(work.computePrec)) *
        kernel * icSteps;
    cost.macs = work.macs;
    cost.peakMacsPerCycle = cfg.peakMacsPerCycle(work.computePrec);
  } else {
    cost.unit = TiuUnit::Vector;
    cost.startupCycles = cfg.euStartup;
    uint64_t steps =
        ceilDiv(work.elementsPerLane, cfg.chip.euNum(work.computePrec)) *
        kernel * std::max(1u, work.iterations);
    cost.streamCycles = ceilDiv(steps, cfg.euStepsPerCycle);
  }
  cost.conflictPairs = bankConflictPairs(work, cfg.chip);
  if (cost.conflictPairs > 0)
    cost.conflictCycles =
        ceilDiv(cost.streamCycles * cfg.bankConflictPct, kPercent);
  return cost;
}

GdmaCost gdmaCost(const GdmaOp &op, const GdmaWork &work,
                  const SimConfig &cfg) {
  GdmaCost cost;
  if (op.type == isa::GdmaType::Sys) {
    cost.startupCycles = cfg.gdmaSysCycles;
    return cost;
  }
  cost.startupCycles = cfg.gdmaStartup;
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
        ceilDiv(ceilDiv(work.bytes, runsPerSide), cfg.gdmaDatapathBytes);
  if (ddrBytes > 0)
    cost.ddrBusBytes =
        runs * alignUp(ceilDiv(ddrBytes, runs), cfg.ddrBurstBytes) +
        (runs - sides) * cfg.ddrRunSwitchBytes;
  return cost;
}

} // namespace tpu::sim
