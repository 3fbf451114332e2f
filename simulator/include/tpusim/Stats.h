//===- Stats.h - Named counters of a simulation run ---------------*- C++
//-*-===//
//
// Every counter the simulator reports, declared once in the table below with
// its JSON name, type, unit and description. The engines add to the raw
// counters; finish() derives the ratios. A run ends with one JSON file
// holding every counter and the echoed configuration.
//
//===----------------------------------------------------------------------===//
#ifndef TPUSIM_STATS_H
#define TPUSIM_STATS_H

#include "tpusim/Config.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

// TPUSIM_STAT(Member, Name, Type, Unit, Description)
#define TPUSIM_STATS_TABLE(TPUSIM_STAT)                                        \
  TPUSIM_STAT(cycles, "total_cycles", uint64_t, "cycles",                      \
              "simulated time of all command groups, in TIU cycles")           \
  TPUSIM_STAT(timeUs, "total_time_us", double, "us",                           \
              "simulated time at the configured TIU clock")                    \
  TPUSIM_STAT(groups, "groups", uint64_t, "groups", "command groups run")      \
  TPUSIM_STAT(tiuCommands, "tiu.commands", uint64_t, "commands",               \
              "TIU commands completed (end commands included)")                \
  TPUSIM_STAT(tiuBusyCycles, "tiu.busy_cycles", uint64_t, "cycles",            \
              "TIU cycles spent executing commands")                           \
  TPUSIM_STAT(tiuBusyShare, "tiu.busy_share", double, "ratio",                 \
              "share of the total time the TIU was executing")                 \
  TPUSIM_STAT(tiuWaitCycles, "tiu.wait_cycles", uint64_t, "cycles",            \
              "TIU cycles spent waiting for a GDMA id (cmd_id_dep)")           \
  TPUSIM_STAT(tiuCubeCycles, "tiu.cube_cycles", uint64_t, "cycles",            \
              "TIU cycles of conv/matmul commands")                            \
  TPUSIM_STAT(tiuMacs, "tiu.macs", uint64_t, "MACs",                           \
              "multiply-accumulates of conv/matmul commands")                  \
  TPUSIM_STAT(macUtilisation, "tiu.mac_utilisation", double, "ratio",          \
              "sum over cube commands of macs / peak MACs per cycle of their " \
              "precision, divided by the total cycles")                        \
  TPUSIM_STAT(bankConflicts, "tiu.bank_conflicts", uint64_t, "commands",       \
              "TIU commands that read and write the same local-memory bank")   \
  TPUSIM_STAT(bankConflictCycles, "tiu.bank_conflict_cycles", uint64_t,        \
              "cycles", "TIU cycles added by bank conflicts")                  \
  TPUSIM_STAT(gdmaCommands, "gdma.commands", uint64_t, "commands",             \
              "GDMA commands completed (end commands included)")               \
  TPUSIM_STAT(gdmaBusyCycles, "gdma.busy_cycles", uint64_t, "cycles",          \
              "GDMA cycles (GDMA clock) spent executing commands")             \
  TPUSIM_STAT(gdmaBusyShare, "gdma.busy_share", double, "ratio",               \
              "share of the total time the GDMA was executing")                \
  TPUSIM_STAT(gdmaWaitCycles, "gdma.wait_cycles", uint64_t, "cycles",          \
              "GDMA cycles spent waiting for a TIU id (cmd_id_dep)")           \
  TPUSIM_STAT(gdmaLmemConflicts, "gdma.lmem_conflicts", uint64_t, "commands",  \
              "GDMA commands that moved data into or out of a local-memory "   \
              "bank while a TIU command used it")                              \
  TPUSIM_STAT(gdmaLmemConflictCycles, "gdma.lmem_conflict_cycles", uint64_t,   \
              "cycles",                                                        \
              "GDMA data-path cycles lost to TIU commands using the same "     \
              "local-memory banks")                                            \
  TPUSIM_STAT(mcuLaunchCycles, "mcu.launch_cycles", uint64_t, "cycles",        \
              "TIU cycles the MCU spent launching command groups")             \
  TPUSIM_STAT(fetchWaitCycles, "mcu.fetch_wait_cycles", uint64_t, "cycles",    \
              "TIU cycles (summed over both engines) an engine waited for "    \
              "its next command to arrive from the command buffer in DDR")     \
  TPUSIM_STAT(gdmaBytes, "gdma.bytes", uint64_t, "bytes",                      \
              "payload bytes the GDMA delivered")                              \
  TPUSIM_STAT(ddrReadBytes, "ddr.read_bytes", uint64_t, "bytes",               \
              "payload bytes read from DDR")                                   \
  TPUSIM_STAT(ddrWriteBytes, "ddr.write_bytes", uint64_t, "bytes",             \
              "payload bytes written to DDR")                                  \
  TPUSIM_STAT(ddrBusBytes, "ddr.bus_bytes", uint64_t, "bytes",                 \
              "DDR channel time used, in bytes at peak bandwidth (payload "    \
              "rounded to bursts plus run switches)")                          \
  TPUSIM_STAT(ddrUtilisation, "ddr.utilisation", double, "ratio",              \
              "payload bytes read and written / (peak bandwidth x total "      \
              "time)")                                                         \
  TPUSIM_STAT(lmemReadBytes, "lmem.read_bytes", uint64_t, "bytes",             \
              "local-memory bytes read by TIU operands and GDMA sources, "     \
              "summed over lanes")                                             \
  TPUSIM_STAT(lmemWriteBytes, "lmem.write_bytes", uint64_t, "bytes",           \
              "local-memory bytes written by TIU results and GDMA "            \
              "destinations, summed over lanes")

namespace tpu::sim {

/// Description of one counter (a row of TPUSIM_STATS_TABLE).
struct StatInfo {
  const char *name;
  const char *unit;
  const char *description;
};

struct SimStats {
#define TPUSIM_STAT_MEMBER(Member, Name, Type, Unit, Description)              \
  Type Member = 0;
  TPUSIM_STATS_TABLE(TPUSIM_STAT_MEMBER)
#undef TPUSIM_STAT_MEMBER

  /// Raw sums behind the ratios (not reported by themselves).
  uint64_t tiuBusyPs = 0, gdmaBusyPs = 0, totalPs = 0;
  uint64_t tiuWaitPs = 0, gdmaWaitPs = 0, tiuCubePs = 0;
  uint64_t launchPs = 0, fetchWaitPs = 0;
  /// Sum over cube commands of macs / peakMacsPerCycle, in cycles.
  double idealCubeCycles = 0;

  /// Computes cycles, times and ratios from the raw sums.
  void finish(const SimConfig &cfg);

  /// {"counters": [{"name", "value", "unit", "description"}, ...],
  ///  "config": [{"key", "value", "unit", "description"}, ...]}.
  nlohmann::json toJson(const SimConfig &cfg) const;
  /// Counter descriptions in table order.
  static std::vector<StatInfo> describe();
  /// The counter called `name` as a double; throws Error if unknown.
  double value(const std::string &name) const;

  /// The human-readable end-of-run summary (total cycles, time, per-engine
  /// busy share, MAC utilisation, DDR bytes).
  std::string summary(const SimConfig &cfg) const;
};

} // namespace tpu::sim

#endif // TPUSIM_STATS_H
