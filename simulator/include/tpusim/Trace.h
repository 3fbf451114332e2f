//===- Trace.h - Per-command timeline of a simulation run ---------*- C++
//-*-===//
//
// When tracing is on, every executed command leaves one TraceEvent (engine,
// group, index, ids, start and end time, mnemonic and key numbers). The
// events print as a Chrome / Perfetto trace (`traceEvents` with one "X" slice
// per command on a TIU and a GDMA track, `ts` and `dur` in microseconds).
// Without tracing nothing here is touched, so the fast path builds no strings.
//
//===----------------------------------------------------------------------===//
#ifndef TPUSIM_TRACE_H
#define TPUSIM_TRACE_H

#include "tpu/isa/Command.h"
#include "tpusim/Config.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tpu::sim {

/// Intervals of simulated time [start, end), in ps since the run's start,
/// in time order (Simulator::ddrBusy).
using PsIntervals = std::vector<std::pair<uint64_t, uint64_t>>;

struct TraceEvent {
  isa::Engine engine = isa::Engine::Tiu;
  uint32_t group = 0;
  uint32_t index = 0; ///< Position in the engine's stream of the group.
  uint32_t cmdId = 0;
  uint32_t cmdIdDep = 0;
  /// Simulated time in picoseconds since the start of the run.
  uint64_t startPs = 0;
  uint64_t endPs = 0;
  /// Cycles of the engine's own clock.
  uint64_t cycles = 0;
  std::string name; ///< Mnemonic, e.g. "sCONV.conv.normal".
  // TIU: cube/vector work; GDMA: bytes moved.
  uint64_t macs = 0;
  /// The cube's multiply-accumulates (tiu.macs counts these) and their time
  /// at the cube's peak for the command's precision, in cycles.
  uint64_t cubeMacs = 0;
  double idealCycles = 0;
  uint64_t elements = 0;
  bool bankConflict = false;
  uint64_t bytes = 0;
  uint64_t ddrReadBytes = 0;
  uint64_t ddrWriteBytes = 0;
  /// GDMA: cycles lost to TIU commands using the same local-memory banks.
  uint64_t conflictCycles = 0;
  /// GDMA: in-flight slot (index mod gdma.max_outstanding); commands of
  /// different slots may overlap, so each slot has its own trace track.
  uint32_t slot = 0;
};

/// Chrome trace JSON of `events`: {"traceEvents": [...], "displayTimeUnit":
/// "ns"} with thread-name metadata for the TIU and GDMA tracks.
nlohmann::json traceToJson(const std::vector<TraceEvent> &events);

} // namespace tpu::sim

#endif // TPUSIM_TRACE_H
