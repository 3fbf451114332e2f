//===- Timing.h - Cycle cost of one command -----------------------*- C++
//-*-===//
//
// The cost formulas of the timing model are the machine's, in isa/Cost.h
// (functions of a command's work description and the machine); this header
// brings them into tpu::sim and binds them to a SimConfig. The engines in
// lib/model add what depends on other units (waiting for ids, the shared DDR
// channel, bank contention between the engines).
//
//===----------------------------------------------------------------------===//
#ifndef TPUSIM_TIMING_H
#define TPUSIM_TIMING_H

#include "tpu/isa/Cost.h"
#include "tpusim/Config.h"
#include "tpusim/Func.h"

#include <cstdint>

namespace tpu::sim {

using isa::alignUp;
using isa::BankMask;
using isa::bankMask;
using isa::BankSpan;
using isa::bankSpan;
using isa::ceilDiv;
using isa::cubeFetchWords;
using isa::gdmaBanks;
using isa::GdmaCost;
using isa::spanMask;
using isa::TiuCost;
using isa::TiuUnit;

/// isa::tiuCost with the chip and timing constants of `cfg`.
inline TiuCost tiuCost(const TiuOp &op, const TiuWork &work,
                       const SimConfig &cfg) {
  return isa::tiuCost(op, work, cfg.chip, cfg);
}

/// isa::gdmaCost with the timing constants of `cfg`.
inline GdmaCost gdmaCost(const GdmaOp &op, const GdmaWork &work,
                         const SimConfig &cfg) {
  return isa::gdmaCost(op, work, cfg);
}

} // namespace tpu::sim

#endif // TPUSIM_TIMING_H
