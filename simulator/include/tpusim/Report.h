//===- Report.h - A self-contained HTML report of one run ---------*- C++ -*-===//
//
// `tpusim run ... --report report.html`: one HTML file with no network
// access, no external script or font, for a performance engineer:
//  - a summary: latency, engine utilisation, MAC utilisation, DDR traffic
//    and the machine (every chip and timing key of the run);
//  - the per-op table (OpProfile.h), sortable by any column, each row with
//    a stacked bar of where its cycles went (TIU running, only GDMA in
//    flight, neither);
//  - the engine timeline (TIU, GDMA and the op track) with zoom (mouse wheel
//    or the buttons) and pan (drag);
//  - a roofline: each op's operations (2 per MAC) per DDR byte against the
//    machine's compute ceilings (the cube's peak per precision) and its DDR
//    bandwidth, from the configuration;
//  - DDR bandwidth over time and local-memory occupancy over time (each
//    layer group's peak, from the op map, over its span).
// The numbers in the page are the stats JSON's (the same JSON is embedded).
//
//===----------------------------------------------------------------------===//
#ifndef TPUSIM_REPORT_H
#define TPUSIM_REPORT_H

#include "tpusim/Config.h"
#include "tpusim/OpProfile.h"
#include "tpusim/Trace.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace tpu::sim {

struct ReportInput {
  std::string netName, modelPath;
  /// The stats JSON the run writes (Stats::toJson, with "ops" when known).
  nlohmann::json stats;
  const std::vector<TraceEvent> *events = nullptr;
  /// Simulator::ddrBusy (null: the DDR chart shows no traffic).
  const PsIntervals *ddrBusy = nullptr;
  const OpProfile *profile = nullptr; ///< may be null (no op map)
};

/// The report page.
std::string renderReport(const ReportInput &in, const SimConfig &cfg);

} // namespace tpu::sim

#endif // TPUSIM_REPORT_H
