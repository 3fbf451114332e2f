//===- Stats.cpp - Named counters of a simulation run ---------------------===//
#include "tpusim/Stats.h"

#include "tpu/isa/Error.h"

#include <cinttypes>
#include <cstdio>

namespace tpu::sim {

namespace {

/// Ratios print as percentages in the summary.
constexpr double kPercent = 100.0;

double ratio(double part, double whole) { return whole > 0 ? part / whole : 0; }

} // namespace

void SimStats::finish(const SimConfig &cfg) {
  uint64_t tiuPeriod = cfg.tiuPeriodPs();
  uint64_t gdmaPeriod = cfg.gdmaPeriodPs();
  cycles = (totalPs + tiuPeriod - 1) / tiuPeriod;
  timeUs = double(totalPs) / SimConfig::kPsPerUs;
  tiuBusyCycles = tiuBusyPs / tiuPeriod;
  tiuWaitCycles = tiuWaitPs / tiuPeriod;
  tiuCubeCycles = tiuCubePs / tiuPeriod;
  gdmaBusyCycles = gdmaBusyPs / gdmaPeriod;
  gdmaWaitCycles = gdmaWaitPs / gdmaPeriod;
  mcuLaunchCycles = launchPs / tiuPeriod;
  fetchWaitCycles = fetchWaitPs / tiuPeriod;
  tiuBusyShare = ratio(double(tiuBusyPs), double(totalPs));
  gdmaBusyShare = ratio(double(gdmaBusyPs), double(totalPs));
  macUtilisation = ratio(idealCubeCycles, double(totalPs) / double(tiuPeriod));
  ddrUtilisation =
      ratio(double(ddrReadBytes + ddrWriteBytes) * cfg.ddrPsPerByte(),
            double(totalPs));
}

std::vector<StatInfo> SimStats::describe() {
  return {
#define TPUSIM_STAT_INFO(Member, Name, Type, Unit, Description)                \
  {Name, Unit, Description},
      TPUSIM_STATS_TABLE(TPUSIM_STAT_INFO)
#undef TPUSIM_STAT_INFO
  };
}

double SimStats::value(const std::string &name) const {
#define TPUSIM_STAT_VALUE(Member, Name, Type, Unit, Description)               \
  if (name == Name)                                                            \
    return double(Member);
  TPUSIM_STATS_TABLE(TPUSIM_STAT_VALUE)
#undef TPUSIM_STAT_VALUE
  throw Error("unknown statistic '" + name + "'");
}

nlohmann::json SimStats::toJson(const SimConfig &cfg) const {
  nlohmann::json counters = nlohmann::json::array();
#define TPUSIM_STAT_JSON(Member, Name, Type, Unit, Description)                \
  counters.push_back({{"name", Name},                                          \
                      {"value", Member},                                       \
                      {"unit", Unit},                                          \
                      {"description", Description}});
  TPUSIM_STATS_TABLE(TPUSIM_STAT_JSON)
#undef TPUSIM_STAT_JSON
  nlohmann::json config = nlohmann::json::array();
  std::vector<std::pair<std::string, std::string>> values = cfg.list();
  std::vector<ConfigKeyInfo> infos = SimConfig::describe();
  for (size_t i = 0; i < values.size(); ++i)
    config.push_back(
        {{"key", values[i].first},
         {"value", values[i].second},
         {"unit", i < infos.size() ? infos[i].unit : ""},
         {"description", i < infos.size() ? infos[i].description : ""}});
  return {{"counters", counters}, {"config", config}};
}

std::string SimStats::summary(const SimConfig &cfg) const {
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "total cycles    : %" PRIu64 "\n"
                "time            : %.3f us at %g MHz\n"
                "TIU busy        : %.1f %% (%" PRIu64 " commands)\n"
                "GDMA busy       : %.1f %% (%" PRIu64 " commands)\n"
                "MAC utilisation : %.1f %%\n"
                "DDR read        : %" PRIu64 " bytes\n"
                "DDR written     : %" PRIu64 " bytes\n",
                cycles, timeUs, cfg.tiuFreqMhz, tiuBusyShare * kPercent,
                tiuCommands, gdmaBusyShare * kPercent, gdmaCommands,
                macUtilisation * kPercent, ddrReadBytes, ddrWriteBytes);
  return buf;
}

} // namespace tpu::sim
