//===- OpProfileTest.cpp - Per-op figures from a trace --------------------===//
//
// profileOps and addOpTrack on hand-made traces: busy time is a union of
// the commands' intervals (in the engine's own clock), and the ops track
// of the Chrome trace never has two slices that overlap without nesting on
// one thread.
//
//===----------------------------------------------------------------------===//
#include "tpusim/OpProfile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

using namespace tpu;
using namespace tpu::sim;

namespace {

constexpr uint64_t kNs = 1000; // ps

TraceEvent gdma(uint32_t index, uint64_t startNs, uint64_t endNs) {
  TraceEvent e;
  e.engine = isa::Engine::Gdma;
  e.index = index;
  e.startPs = startNs * kNs;
  e.endPs = endNs * kNs;
  return e;
}

TraceEvent tiu(uint32_t index, uint64_t startNs, uint64_t endNs) {
  TraceEvent e = gdma(index, startNs, endNs);
  e.engine = isa::Engine::Tiu;
  return e;
}

/// One command group; `tiuOps` / `gdmaOps` tag each command with its op.
isa::OpMap opMap(size_t ops, std::vector<int32_t> tiuOps,
                 std::vector<int32_t> gdmaOps) {
  isa::OpMap m;
  for (size_t i = 0; i < ops; ++i)
    m.ops.push_back({"op" + std::to_string(i), "tpu.Group", "", 0, {}});
  m.groups.push_back({std::move(tiuOps), std::move(gdmaOps)});
  return m;
}

TEST(OpProfile, GdmaBusyIsTheUnionOfTheOpsCommands) {
  // op0: two loads in flight together [0, 100) and [50, 200) ns, then a
  // TIU command [200, 300); op1: a load [250, 400) overlapping op0's TIU.
  std::vector<TraceEvent> ev = {gdma(0, 0, 100), gdma(1, 50, 200),
                                tiu(0, 200, 300), gdma(2, 250, 400)};
  SimConfig cfg = SimConfig::defaults(); // 1 GHz: 1 cycle per ns
  OpProfile p = profileOps(ev, opMap(2, {0}, {0, 0, 1}), 400, cfg);
  // Union, not the sum (100 + 150 = 250).
  EXPECT_EQ(p.ops[0].gdmaBusyCycles, 200u);
  EXPECT_EQ(p.ops[0].tiuBusyCycles, 100u);
  EXPECT_EQ(p.ops[1].gdmaBusyCycles, 150u);
  // No op is busier than its span.
  EXPECT_LE(p.ops[0].gdmaBusyCycles, p.ops[0].spanCycles);

  // In the GDMA's own clock (the gdma.busy_cycles counter's): at 500 MHz
  // the same 200 ns are 100 GDMA cycles.
  cfg.set("gdma.freq_mhz", "500");
  OpProfile slow = profileOps(ev, opMap(2, {0}, {0, 0, 1}), 400, cfg);
  EXPECT_EQ(slow.ops[0].gdmaBusyCycles, 100u);
  EXPECT_EQ(slow.ops[0].tiuBusyCycles, 100u);
}

TEST(OpProfile, OpTrackSlicesNestOrSitOnTheirOwnRows) {
  // Three ops: op1 starts before op0 ends (a prefetch), op2 after both.
  std::vector<TraceEvent> ev = {gdma(0, 0, 100), tiu(0, 10, 90),
                                gdma(1, 80, 300), tiu(1, 120, 290),
                                gdma(2, 310, 400)};
  SimConfig cfg = SimConfig::defaults();
  OpProfile p = profileOps(ev, opMap(3, {0, 1}, {0, 1, 2}), 400, cfg);
  nlohmann::json trace = {{"traceEvents", nlohmann::json::array()}};
  addOpTrack(trace, p);
  std::map<int, std::vector<std::pair<double, double>>> rows;
  std::map<std::string, int> rowOf;
  for (const nlohmann::json &e : trace["traceEvents"])
    if (e["ph"] == "X") {
      double ts = e["ts"], dur = e["dur"];
      rows[e["tid"].get<int>()].push_back({ts, ts + dur});
      rowOf[e["name"]] = e["tid"];
    }
  ASSERT_EQ(rowOf.size(), 3u);
  // On each thread no two slices overlap (they do not nest either: an op's
  // slice is its span).
  for (auto &[tid, spans] : rows) {
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i)
      EXPECT_LE(spans[i - 1].second, spans[i].first) << "tid " << tid;
  }
  // op0 and op1 overlap: two rows; op2 goes back to the first.
  EXPECT_NE(rowOf["op0"], rowOf["op1"]);
  EXPECT_EQ(rowOf["op2"], rowOf["op0"]);
  // Every row has a thread name (the first keeps "ops").
  std::map<int, std::string> names;
  for (const nlohmann::json &e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name")
      names[e["tid"].get<int>()] = e["args"]["name"];
  for (auto &[tid, spans] : rows)
    EXPECT_TRUE(names.count(tid)) << "tid " << tid;
  EXPECT_EQ(names[rowOf["op0"]], "ops");
}

} // namespace
