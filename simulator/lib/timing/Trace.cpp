//===- Trace.cpp - Chrome / Perfetto trace of a run -----------------------===//
#include "tpusim/Trace.h"

#include <algorithm>

namespace tpu::sim {

namespace {

/// Chrome trace timestamps are microseconds.
constexpr double kPsPerUs = 1e6;
/// One process, one thread (track) per engine.
constexpr int kPid = 0;
int trackOf(isa::Engine e) { return e == isa::Engine::Tiu ? 0 : 1; }
/// GDMA slot s > 0 (commands in flight beside slot 0's) gets track 1 + s.
int trackOf(const TraceEvent &ev) {
  return trackOf(ev.engine) + (ev.engine == isa::Engine::Gdma ? ev.slot : 0);
}

} // namespace

nlohmann::json traceToJson(const std::vector<TraceEvent> &events) {
  nlohmann::json list = nlohmann::json::array();
  list.push_back({{"name", "process_name"},
                  {"ph", "M"},
                  {"pid", kPid},
                  {"args", {{"name", "BM1684X"}}}});
  for (isa::Engine e : {isa::Engine::Tiu, isa::Engine::Gdma})
    list.push_back({{"name", "thread_name"},
                    {"ph", "M"},
                    {"pid", kPid},
                    {"tid", trackOf(e)},
                    {"args", {{"name", isa::engineName(e)}}}});
  uint32_t slots = 1;
  for (const TraceEvent &ev : events)
    if (ev.engine == isa::Engine::Gdma)
      slots = std::max(slots, ev.slot + 1);
  for (uint32_t s = 1; s < slots; ++s)
    list.push_back({{"name", "thread_name"},
                    {"ph", "M"},
                    {"pid", kPid},
                    {"tid", trackOf(isa::Engine::Gdma) + int(s)},
                    {"args", {{"name", "GDMA #" + std::to_string(s + 1)}}}});
  for (const TraceEvent &ev : events) {
    nlohmann::json args = {{"group", ev.group},
                           {"index", ev.index},
                           {"cmd_id", ev.cmdId},
                           {"cmd_id_dep", ev.cmdIdDep},
                           {"cycles", ev.cycles}};
    if (ev.engine == isa::Engine::Tiu) {
      args["macs"] = ev.macs;
      args["elements"] = ev.elements;
      args["bank_conflict"] = ev.bankConflict;
    } else {
      args["bytes"] = ev.bytes;
      args["ddr_read_bytes"] = ev.ddrReadBytes;
      args["ddr_write_bytes"] = ev.ddrWriteBytes;
      args["lmem_conflict_cycles"] = ev.conflictCycles;
    }
    list.push_back({{"name", ev.name},
                    {"cat", isa::engineName(ev.engine)},
                    {"ph", "X"},
                    {"pid", kPid},
                    {"tid", trackOf(ev)},
                    {"ts", double(ev.startPs) / kPsPerUs},
                    {"dur", double(ev.endPs - ev.startPs) / kPsPerUs},
                    {"args", args}});
  }
  return {{"traceEvents", list}, {"displayTimeUnit", "ns"}};
}

} // namespace tpu::sim
