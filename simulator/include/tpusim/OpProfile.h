//===- OpProfile.h - Time, traffic and MACs per op ----------------*- C++ -*-===//
//
// With the op map tpuc deploy writes beside a bmodel (<stem>_ops.json,
// tpu/isa/OpMap.h), the trace of a run (one event per command) is
// attributed to the ops (layer groups and single ops) the commands were
// emitted for:
//  - `cycles`: every TIU cycle of the run goes to exactly one op or to
//    "(other)": the op of the TIU command running then, else the op of the
//    GDMA command in flight that started first, else "(other)" (MCU launch,
//    command fetch, both engines waiting). So the cycles of all ops and
//    "(other)" add up to total_cycles;
//  - `span_cycles`: from the op's first command's start to its last's end
//    (spans of neighbouring ops overlap where the engines overlap them);
//  - TIU and GDMA busy cycles, MACs and the MAC utilisation over the span,
//    DDR bytes read and written (adding up to the run's), bank-conflict
//    cycles of its GDMA commands, commands per engine.
//
//===----------------------------------------------------------------------===//
#ifndef TPUSIM_OPPROFILE_H
#define TPUSIM_OPPROFILE_H

#include "tpu/isa/OpMap.h"
#include "tpusim/Config.h"
#include "tpusim/Trace.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tpu::sim {

struct OpStats {
  std::string name, type, members;
  /// A layer group's local memory per lane at the peak (the op map's).
  uint64_t lmemBytes = 0;
  uint64_t cycles = 0, spanCycles = 0;
  /// Of `cycles`: those a TIU command of the op ran, those only a GDMA
  /// command of the op was in flight (the rest of an op's cycles is none).
  uint64_t tiuOwnedCycles = 0, gdmaOwnedCycles = 0;
  uint64_t firstPs = 0, lastPs = 0;
  /// The time a command of the op ran: TIU cycles; GDMA cycles (the GDMA
  /// clock, as the gdma.busy_cycles counter) with at least one of the op's
  /// GDMA commands in flight (two in flight at once count once; the
  /// transfers of two ops that overlap count for each).
  uint64_t tiuBusyCycles = 0, gdmaBusyCycles = 0;
  uint64_t tiuCommands = 0, gdmaCommands = 0;
  uint64_t macs = 0;
  /// The MACs at the cube's peak for each command's precision, in cycles.
  double idealCubeCycles = 0;
  uint64_t ddrReadBytes = 0, ddrWriteBytes = 0;
  uint64_t gdmaConflictCycles = 0;
};

struct OpProfile {
  std::vector<OpStats> ops; ///< in program order; the last is "(other)"
  /// Per trace event: the index of its op in `ops`.
  std::vector<size_t> eventOp;
};

/// Attributes `events` (the whole run's trace) to the ops of `map`, which
/// must describe the bmodel that ran (isa::checkOpMap).
OpProfile profileOps(const std::vector<TraceEvent> &events,
                     const isa::OpMap &map, uint64_t totalCycles,
                     const SimConfig &cfg);

/// The profile as a JSON array (one object per op, counters by name).
nlohmann::json opProfileToJson(const OpProfile &p);

/// Adds an "ops" track (one slice per op over its span) to a Chrome trace
/// made by traceToJson; an op that starts before the last one ended goes
/// on a further row ("ops 2", ...), as slices of one row must nest.
void addOpTrack(nlohmann::json &trace, const OpProfile &p);

/// The `top` ops with the most cycles as text lines for the terminal.
std::string opProfileSummary(const OpProfile &p, size_t top);

} // namespace tpu::sim

#endif // TPUSIM_OPPROFILE_H
