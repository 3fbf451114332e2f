//===- OpProfile.cpp - Time, traffic and MACs per op ---------------------===//
#include "tpusim/OpProfile.h"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace tpu::sim {

OpProfile profileOps(const std::vector<TraceEvent> &events,
                     const isa::OpMap &map, uint64_t totalCycles,
                     const SimConfig &cfg) {
  OpProfile p;
  size_t nOps = map.ops.size();
  for (const isa::OpMapEntry &e : map.ops)
    p.ops.push_back({e.name, e.type, e.members, e.lmemBytes});
  OpStats other;
  other.name = "(other)";
  other.type = "launch, fetch and waits";
  p.ops.push_back(other);
  const size_t otherIndex = nOps;
  uint64_t period = cfg.tiuPeriodPs();
  // Each op's GDMA commands as (start, end): busy is their union.
  std::vector<PsIntervals> gdmaSpans(nOps + 1);

  // The op of every event.
  std::vector<size_t> opOf(events.size(), otherIndex);
  for (size_t i = 0; i < events.size(); ++i) {
    const TraceEvent &ev = events[i];
    const std::vector<int32_t> &tags = ev.engine == isa::Engine::Tiu
                                           ? map.groups[ev.group].tiu
                                           : map.groups[ev.group].gdma;
    int32_t t = tags[ev.index];
    size_t op = t < 0 ? otherIndex : size_t(t);
    opOf[i] = op;
    OpStats &s = p.ops[op];
    if (s.tiuCommands + s.gdmaCommands == 0 || ev.startPs < s.firstPs)
      s.firstPs = ev.startPs;
    s.lastPs = std::max(s.lastPs, ev.endPs);
    if (ev.engine == isa::Engine::Tiu) {
      ++s.tiuCommands;
      s.tiuBusyCycles += (ev.endPs - ev.startPs) / period;
      s.macs += ev.cubeMacs;
      s.idealCubeCycles += ev.idealCycles;
    } else {
      ++s.gdmaCommands;
      gdmaSpans[op].push_back({ev.startPs, ev.endPs});
      s.ddrReadBytes += ev.ddrReadBytes;
      s.ddrWriteBytes += ev.ddrWriteBytes;
      s.gdmaConflictCycles += ev.conflictCycles;
    }
  }

  uint64_t gdmaPeriod = cfg.gdmaPeriodPs();
  for (size_t op = 0; op < gdmaSpans.size(); ++op) {
    PsIntervals &spans = gdmaSpans[op];
    std::sort(spans.begin(), spans.end());
    uint64_t busyPs = 0, until = 0;
    for (auto [start, end] : spans) {
      uint64_t from = std::max(start, until);
      if (end > from)
        busyPs += end - from;
      until = std::max(until, end);
    }
    p.ops[op].gdmaBusyCycles = busyPs / gdmaPeriod;
  }

  // Exclusive cycles: sweep the run's timeline in TIU cycles; each cycle
  // goes to the running TIU command's op, else to the op of the GDMA
  // command in flight that started first, else to "(other)".
  struct Edge {
    uint64_t at;
    bool open;
    size_t event;
  };
  std::vector<Edge> edges;
  edges.reserve(events.size() * 2);
  for (size_t i = 0; i < events.size(); ++i) {
    uint64_t a = events[i].startPs / period, b = events[i].endPs / period;
    if (b <= a)
      continue;
    edges.push_back({a, true, i});
    edges.push_back({b, false, i});
  }
  std::sort(edges.begin(), edges.end(), [](const Edge &x, const Edge &y) {
    return x.at != y.at ? x.at < y.at : (!x.open && y.open);
  });
  std::vector<size_t> tiuActive, gdmaActive; // event indices
  uint64_t attributed = 0, prev = 0;
  // The op owning the current cycles and which engine gives it them.
  auto owner = [&](bool &byTiu) -> size_t {
    byTiu = !tiuActive.empty();
    if (byTiu)
      return opOf[tiuActive.front()];
    if (gdmaActive.empty())
      return otherIndex;
    size_t best = gdmaActive.front();
    for (size_t e : gdmaActive)
      if (events[e].startPs < events[best].startPs)
        best = e;
    return opOf[best];
  };
  for (const Edge &e : edges) {
    if (e.at > prev) {
      uint64_t len = e.at - prev;
      bool byTiu = false;
      size_t o = owner(byTiu);
      p.ops[o].cycles += len;
      if (byTiu)
        p.ops[o].tiuOwnedCycles += len;
      else if (!gdmaActive.empty())
        p.ops[o].gdmaOwnedCycles += len;
      attributed += len;
      prev = e.at;
    }
    auto &active =
        events[e.event].engine == isa::Engine::Tiu ? tiuActive : gdmaActive;
    if (e.open)
      active.push_back(e.event);
    else
      active.erase(std::find(active.begin(), active.end(), e.event));
  }
  // The sweep gave the time before the first command and between groups to
  // "(other)"; so is what follows the last command.
  if (totalCycles > attributed)
    p.ops[otherIndex].cycles += totalCycles - attributed;
  for (OpStats &s : p.ops)
    if (s.tiuCommands + s.gdmaCommands)
      s.spanCycles = (s.lastPs - s.firstPs) / period;
  p.eventOp = std::move(opOf);
  return p;
}

nlohmann::json opProfileToJson(const OpProfile &p) {
  nlohmann::json list = nlohmann::json::array();
  for (const OpStats &s : p.ops) {
    // MAC utilisation: the ideal cube time over the op's own cycles.
    double util = s.cycles ? s.idealCubeCycles / double(s.cycles) : 0.0;
    list.push_back({{"name", s.name},
                    {"type", s.type},
                    {"ops", s.members},
                    {"cycles", s.cycles},
                    {"span_cycles", s.spanCycles},
                    {"tiu_owned_cycles", s.tiuOwnedCycles},
                    {"gdma_owned_cycles", s.gdmaOwnedCycles},
                    {"tiu_busy_cycles", s.tiuBusyCycles},
                    {"gdma_busy_cycles", s.gdmaBusyCycles},
                    {"tiu_commands", s.tiuCommands},
                    {"gdma_commands", s.gdmaCommands},
                    {"macs", s.macs},
                    {"mac_utilisation", util},
                    {"ddr_read_bytes", s.ddrReadBytes},
                    {"ddr_write_bytes", s.ddrWriteBytes},
                    {"gdma_lmem_conflict_cycles", s.gdmaConflictCycles}});
  }
  return list;
}

void addOpTrack(nlohmann::json &trace, const OpProfile &p) {
  nlohmann::json &list = trace["traceEvents"];
  // Ops overlap (a group's first loads run beside the one before it), and
  // the slices of one trace thread must nest: each op goes on the first row
  // free at its start, rows 99, 98, ... ("ops", "ops 2", ...) above the
  // engines.
  constexpr int kOpTrack = 99;
  std::vector<size_t> order;
  for (size_t i = 0; i < p.ops.size(); ++i)
    if (p.ops[i].tiuCommands + p.ops[i].gdmaCommands != 0 &&
        p.ops[i].name != "(other)")
      order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return p.ops[a].firstPs < p.ops[b].firstPs;
  });
  std::vector<uint64_t> rowEnd; // ps
  std::vector<int> rowOf(p.ops.size(), 0);
  for (size_t i : order) {
    const OpStats &s = p.ops[i];
    size_t row = 0;
    while (row < rowEnd.size() && rowEnd[row] > s.firstPs)
      ++row;
    if (row == rowEnd.size())
      rowEnd.push_back(0);
    rowEnd[row] = s.lastPs;
    rowOf[i] = int(row);
  }
  for (size_t row = 0; row < std::max<size_t>(1, rowEnd.size()); ++row) {
    int tid = kOpTrack - int(row);
    list.push_back({{"name", "thread_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"tid", tid},
                    {"args",
                     {{"name", row == 0 ? std::string("ops")
                                        : "ops " + std::to_string(row + 1)}}}});
    list.push_back(
        {{"name", "thread_sort_index"},
         {"ph", "M"},
         {"pid", 0},
         {"tid", tid},
         {"args", {{"sort_index", -1 - int(rowEnd.size()) + int(row)}}}});
  }
  for (size_t i : order) {
    const OpStats &s = p.ops[i];
    list.push_back({{"name", s.name},
                    {"cat", s.type},
                    {"ph", "X"},
                    {"pid", 0},
                    {"tid", kOpTrack - rowOf[i]},
                    {"ts", double(s.firstPs) / 1e6},
                    {"dur", double(s.lastPs - s.firstPs) / 1e6},
                    {"args",
                     {{"cycles", s.cycles},
                      {"ops", s.members},
                      {"ddr_read_bytes", s.ddrReadBytes},
                      {"ddr_write_bytes", s.ddrWriteBytes},
                      {"macs", s.macs}}}});
  }
}

std::string opProfileSummary(const OpProfile &p, size_t top) {
  std::vector<size_t> order(p.ops.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return p.ops[a].cycles > p.ops[b].cycles;
  });
  uint64_t total = 0;
  for (const OpStats &s : p.ops)
    total += s.cycles;
  std::string out = "ops by cycles   :\n";
  char line[256];
  for (size_t k = 0; k < order.size() && k < top; ++k) {
    const OpStats &s = p.ops[order[k]];
    std::snprintf(line, sizeof(line),
                  "  %-40.40s %-23.23s %10llu cycles %5.1f %%  DDR %.2f MB\n",
                  s.name.c_str(), s.type.c_str(), (unsigned long long)s.cycles,
                  total ? 100.0 * double(s.cycles) / double(total) : 0.0,
                  double(s.ddrReadBytes + s.ddrWriteBytes) / 1e6);
    out += line;
  }
  return out;
}

} // namespace tpu::sim
