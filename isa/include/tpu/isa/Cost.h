//===- Cost.h - Cycle cost of one command -----------------------*- C++ -*-===//
//
// The cost formulas of the timing model, as plain functions of a command's
// work description (Work.h: TiuWork / GdmaWork) and the machine (Machine.h).
// They see one command at a time: what depends on other commands and units
// (waiting for ids, sharing DDR, bank contention between the engines) is the
// simulator's (simulator/lib/model) or, statically, the estimator's
// (Estimate.h); TiuBankHistory, the record of the TIU's banks that GDMA
// stalls are computed from, is shared by both. Every constant comes from
// TimingParams; simulator/docs/timing.md derives each formula.
//
//===----------------------------------------------------------------------===//
#ifndef TPU_ISA_COST_H
#define TPU_ISA_COST_H

#include "tpu/isa/ChipParams.h"
#include "tpu/isa/Decode.h"
#include "tpu/isa/Divisor.h"
#include "tpu/isa/Machine.h"
#include "tpu/isa/Work.h"

#include <cstdint>
#include <vector>

namespace tpu::isa {

/// Which part of the TIU a command occupies.
enum class TiuUnit : uint8_t {
  Cube,   ///< conv / matmul: reduces input channels in the cube.
  Vector, ///< everything else that computes: EU_NUM elements per step.
  System, ///< SYS commands (end, nop).
};

/// Local-memory banks an operand range covers, [first, last].
struct BankSpan {
  uint64_t first = 0, last = 0;
  bool overlaps(const BankSpan &o) const {
    return first <= o.last && o.first <= last;
  }
};

/// Banks of the lane bytes [offset, offset + bytes) (bytes > 0).
BankSpan bankSpan(const ChipParams &chip, uint64_t offset, uint64_t bytes);

/// Set of banks of a lane as a bit mask (bit b = bank b; a chip with more
/// than 64 banks folds bank b onto bit b mod 64, which can only add
/// conflicts).
using BankMask = uint64_t;
/// Banks of the lane bytes [offset, offset + bytes) (none for bytes = 0).
BankMask bankMask(const ChipParams &chip, uint64_t offset, uint64_t bytes);
/// The banks of a span as a mask.
BankMask spanMask(const BankSpan &span);

/// Port words one lane reads to feed the cube the input of one kernel
/// position for every output point of one (n, channel slot) plane of
/// `outH` x `outW` points. The cube computes `points` output points per
/// step in raster order; the inputs of the points of a step that lie in one
/// output row form one run of ((count - 1) * strideX + 1) elements of
/// `elemBits` bits, and a lane reads ceil(run bytes / portBytes) words of its
/// single port per run, at least one step per block of points. With every
/// run inside one word this is ceil(outH * outW / points).
uint64_t cubeFetchWords(uint64_t outH, uint64_t outW, uint64_t points,
                        uint64_t strideX, uint64_t elemBits,
                        uint64_t portBytes);

/// Cost of one TIU command in TIU cycles.
struct TiuCost {
  TiuUnit unit = TiuUnit::System;
  /// Fixed part: tiu.cube_startup, tiu.eu_startup or tiu.sys_cycles.
  uint64_t startupCycles = 0;
  /// Steps through the cube or the EU (grows with the data).
  uint64_t streamCycles = 0;
  /// Extra cycles for the read and write beats that collide in a shared
  /// bank (0 without conflict).
  uint64_t conflictCycles = 0;
  /// (read, write) operand pairs whose bank spans overlap.
  unsigned conflictPairs = 0;
  /// Banks the command's operands and results occupy (in every lane).
  BankMask banks = 0;
  /// Multiply-accumulates and the cube's peak for the command's precision
  /// (0 for non-cube commands), for MAC utilisation.
  uint64_t macs = 0;
  uint64_t peakMacsPerCycle = 0;

  uint64_t cycles() const {
    return startupCycles + streamCycles + conflictCycles;
  }
};

/// Cost of a TIU command whose work is `work`:
///  - cube (work.cubeIcPerStep > 0):
///      ic     = macs / (outputElements * kernelElements)
///      stream = planes * cubeFetchWords(res0_h, res0_w, cubePixels(prec),
///               x stride, input element bits, EU_BYTES)
///               * kernelElements * ceil(ic / cubeIcPerStep)
///      (conv; matmul: ceil(elementsPerLane / cubePixels(prec)) steps)
///      startup = tiu.cube_startup
///  - vector: stream = ceil(ceil(elementsPerLane / EU_NUM(prec))
///               * kernelElements * iterations / tiu.eu_steps_per_cycle),
///      startup = tiu.eu_startup
///  - SYS: startup = tiu.sys_cycles, no stream.
/// A bank conflict (a read and a write range sharing a bank) adds
///      ceil(min(read beats, write beats) * tiu.bank_conflict_pct / 100)
/// counting only the beats in the shared banks: read beats
/// ceil(stream * shared bytes / operand bytes) per operand, write beats
/// ceil(shared bytes / (EU_BYTES, times tiu.eu_steps_per_cycle for vector
/// commands)) per result.
TiuCost tiuCost(const TiuOp &op, const TiuWork &work, const ChipParams &chip,
                const TimingParams &timing);
inline TiuCost tiuCost(const TiuOp &op, const TiuWork &work, const Machine &m) {
  return tiuCost(op, work, m.chip, m.timing);
}

/// Cost of one GDMA command. The engine's own time is in GDMA cycles; the
/// DDR part depends on other requesters and is resolved by the DDR channel.
struct GdmaCost {
  /// gdma.startup (or gdma.sys_cycles for sys commands).
  uint64_t startupCycles = 0;
  /// Beats of the GDMA data path: each contiguous run occupies whole beats
  /// of gdma.datapath_bytes.
  uint64_t datapathCycles = 0;
  /// Bytes of DDR channel time the command occupies: each contiguous run
  /// rounded up to ddr.burst_bytes, plus ddr.run_switch_bytes per jump
  /// between runs. 0 when the command does not touch DDR.
  uint64_t ddrBusBytes = 0;
  uint64_t ddrReadBytes = 0, ddrWriteBytes = 0;
  uint64_t payloadBytes = 0;

  bool usesDdr() const { return ddrBusBytes != 0; }
};

GdmaCost gdmaCost(const GdmaOp &op, const GdmaWork &work,
                  const TimingParams &timing);
inline GdmaCost gdmaCost(const GdmaOp &op, const GdmaWork &work,
                         const Machine &m) {
  return gdmaCost(op, work, m.timing);
}

/// Banks of each lane a GDMA command reads or writes on its local-memory
/// side(s) (0 when it touches no local memory). The range in a lane starts
/// at the local address's offset and covers the command's local bytes
/// divided by the lanes it reaches (all lanes, or the channels of a tensor
/// when fewer).
BankMask gdmaBanks(const GdmaOp &op, const GdmaWork &work,
                   const ChipParams &chip);

/// The banks the most recent TIU commands used and when: what a GDMA
/// transfer collides with (lmem.gdma_conflict_pct). The simulator and the
/// compiler's cost model (isa::estimateGroup) both record every TIU
/// command here and ask it for each GDMA data path, so the two compute a
/// conflict the same way.
class TiuBankHistory {
public:
  /// Records that a TIU command uses `banks` during [startPs, endPs).
  /// Commands are recorded in start order (the TIU runs in order).
  void record(BankMask banks, uint64_t startPs, uint64_t endPs);
  /// Time in [fromPs, toPs) during which a recorded TIU command uses a bank
  /// of `banks`, weighted by the share of `banks` it uses (a transfer
  /// spread over four banks of which the TIU uses one collides in a quarter
  /// of its beats), in picoseconds.
  double overlapPs(BankMask banks, uint64_t fromPs, uint64_t toPs) const;
  /// Forgets the recorded commands (start of a group).
  void clear() {
    ring_.clear();
    head_ = 0;
  }

  /// Commands remembered: a transfer overlaps only a few recent ones.
  static constexpr size_t kCapacity = 64;

private:
  struct Span {
    BankMask banks;
    uint64_t startPs, endPs;
  };
  std::vector<Span> ring_;
  size_t head_ = 0; ///< Next slot to write once the ring is full.
};

/// Cycles a GDMA data path of `period` ps per beat waits for banks a TIU
/// command holds during `overlapPs` of it: one per colliding beat, scaled
/// by lmem.gdma_conflict_pct (the TIU keeps the single port).
uint64_t gdmaConflictCycles(double overlapPs, uint64_t periodPs,
                            const TimingParams &timing);

} // namespace tpu::isa

#endif // TPU_ISA_COST_H
