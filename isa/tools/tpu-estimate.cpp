//===- tpu-estimate.cpp - Static cycle estimate of a bmodel ---------------===//
//
// tpu-estimate model.bmodel [-p key=value ...] [--net NAME] [--groups]
//              [--json FILE]
//
// Estimates every command group of a net's first stage with the static cost
// model (isa/Estimate.h) and prints the totals in the form of tpusim's
// summary; --groups adds one line per group, --json writes the figures as a
// JSON object. The machine is the one the bmodel records (the BM1684X
// defaults when it records none); -p sets machine keys on top of it as
// tpusim's -p does (chip.npu_num, tiu.cube_startup, ...).
//
//===----------------------------------------------------------------------===//

#include "tpu/Tool.h"
#include "tpu/isa/Bmodel.h"
#include "tpu/isa/Command.h"
#include "tpu/isa/Error.h"
#include "tpu/isa/Estimate.h"
#include "tpu/isa/Machine.h"

#include <nlohmann/json.hpp>

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

using namespace tpu;
using namespace tpu::isa;

namespace {

constexpr const char *kTool = "tpu-estimate";
constexpr int kJsonIndent = 1;
constexpr double kPercent = 100.0;

constexpr const char *kOverview =
    R"(static cycle estimate of a bmodel

Estimates the cycles of every command group of the net's first stage with
the static cost model (per-command costs and the two-engine schedule of
isa/Estimate.h, without simulating data) and prints the totals. The machine
is the one the bmodel records (BM1684X defaults when none), changed by -p.
)";

llvm::cl::OptionCategory category("tpu-estimate options");
llvm::cl::opt<std::string> modelArg(llvm::cl::Positional,
                                    llvm::cl::desc("MODEL.bmodel"),
                                    llvm::cl::cat(category));
llvm::cl::list<std::string> chipParamArg(
    "chip-param", llvm::cl::desc(tpu::tool::kChipParamHelp),
    llvm::cl::value_desc("KEY=VALUE"), llvm::cl::cat(category));
llvm::cl::alias chipParamShort("p", llvm::cl::desc("Alias for --chip-param"),
                               llvm::cl::aliasopt(chipParamArg),
                               llvm::cl::NotHidden, llvm::cl::cat(category));
llvm::cl::list<std::string> configArg(
    "config",
    llvm::cl::desc("apply a machine configuration file (KEY = VALUE lines, "
                   "as `tpusim config --defaults-file` prints) on top of the "
                   "machine the bmodel records, before -p"),
    llvm::cl::value_desc("FILE"), llvm::cl::cat(category));
llvm::cl::alias chipParamOld("param", llvm::cl::desc("Alias for --chip-param"),
                             llvm::cl::aliasopt(chipParamArg),
                             llvm::cl::Hidden);
llvm::cl::opt<std::string>
    netArg("net", llvm::cl::desc("the net to estimate (default: the first)"),
           llvm::cl::value_desc("NAME"), llvm::cl::cat(category));
llvm::cl::opt<bool>
    groupsArg("groups",
              llvm::cl::desc("also print one line per command group"),
              llvm::cl::cat(category));
llvm::cl::opt<std::string>
    jsonArg("json",
            llvm::cl::desc("write the totals and the groups as JSON"),
            llvm::cl::value_desc("FILE"), llvm::cl::cat(category));

struct Options {
  std::string model, net, json;
  std::vector<std::string> overrides, configFiles;
  bool groups = false;
};

Options parseArgs(int argc, char **argv) {
  tpu::tool::initTool(kTool);
  tpu::tool::parse(argc, argv, {&category}, kOverview);
  Options o;
  o.model = modelArg;
  o.net = netArg;
  o.json = jsonArg;
  o.groups = groupsArg;
  for (const std::string &kv : chipParamArg)
    o.overrides.push_back(tpu::tool::machineKey(kv));
  o.configFiles = configArg;
  if (o.model.empty())
    throw Error("missing MODEL.bmodel (see tpu-estimate --help)");
  return o;
}

/// The commands of one engine's buffer (none for an empty buffer).
std::vector<RawCommand> commandsOf(Engine engine,
                                   const std::vector<uint8_t> &buffer) {
  std::vector<RawCommand> out;
  if (buffer.empty())
    return out;
  for (const CommandSpan &s : indexBuffer(engine, buffer.data(), buffer.size()))
    out.push_back(RawCommand::fromBytes(s.layout, buffer.data() + s.offset));
  return out;
}

nlohmann::json toJson(const Estimate &e) {
  return {{"cycles", e.cycles},
          {"launch_cycles", e.launchCycles},
          {"tiu_busy_cycles", e.tiuBusyCycles},
          {"gdma_busy_cycles", e.gdmaBusyCycles},
          {"tiu_commands", e.tiuCommands},
          {"gdma_commands", e.gdmaCommands},
          {"ddr_read_bytes", e.ddrReadBytes},
          {"ddr_write_bytes", e.ddrWriteBytes},
          {"ddr_bus_bytes", e.ddrBusBytes},
          {"gdma_stall_cycles", e.gdmaConflictCycles}};
}

int run(const Options &o) {
  bmodel::Model model = bmodel::readModel(o.model);
  // The machine the bmodel records (if any), then the -p overrides.
  Machine m, recorded;
  if (!model.machine.empty()) {
    recorded.loadText(model.machine, "the bmodel's machine");
    m = recorded;
  }
  for (const std::string &f : o.configFiles)
    m.loadFile(f);
  for (const std::string &p : o.overrides) {
    try {
      m.assign(p);
    } catch (const Error &e) {
      throw Error("-p " + p + ": " + e.what());
    }
  }
  m.validate();
  if (std::string why = chipShortfall(recorded.chip, m.chip); !why.empty())
    throw Error("the bmodel cannot run on the estimated machine: " + why);
  const bmodel::Net *net = nullptr;
  for (const bmodel::Net &n : model.nets)
    if (o.net.empty() || n.name == o.net) {
      net = &n;
      break;
    }
  if (!net)
    throw Error(o.model + (o.net.empty() ? ": the bmodel has no net"
                                         : ": the bmodel has no net called '" +
                                               o.net + "'"));
  if (net->stages.empty())
    throw Error("net '" + net->name + "' has no stage");
  const bmodel::Stage &stage = net->stages[0];

  Estimate total;
  nlohmann::json groups = nlohmann::json::array();
  for (size_t g = 0; g < stage.groups.size(); ++g) {
    const bmodel::CmdGroup &group = stage.groups[g];
    Estimate e;
    try {
      e = estimateGroup(commandsOf(Engine::Tiu, group.tiu),
                        commandsOf(Engine::Gdma, group.gdma), m);
    } catch (const Error &err) {
      throw Error("command group " + std::to_string(g) + ": " + err.what());
    }
    total.accumulate(e, m);
    groups.push_back(toJson(e));
    if (o.groups)
      std::printf(
          "group %-4zu: %12" PRIu64 " cycles, TIU busy %5.1f %%, "
          "GDMA busy %5.1f %%, DDR %" PRIu64 " + %" PRIu64 " bytes\n",
          g, e.cycles,
          e.totalPs ? kPercent * double(e.tiuBusyPs) / double(e.totalPs) : 0.0,
          e.totalPs ? kPercent * double(e.gdmaBusyPs) / double(e.totalPs) : 0.0,
          e.ddrReadBytes, e.ddrWriteBytes);
  }
  auto share = [&](uint64_t ps) {
    return total.totalPs ? kPercent * double(ps) / double(total.totalPs) : 0.0;
  };
  std::printf("net             : %s (%s, %zu command groups, static estimate)\n"
              "total cycles    : %" PRIu64 "\n"
              "time            : %.3f us at %g MHz\n"
              "TIU busy        : %.1f %% (%" PRIu64 " commands)\n"
              "GDMA busy       : %.1f %% (%" PRIu64 " commands)\n"
              "GDMA bank stall : %" PRIu64 " cycles\n"
              "DDR read        : %" PRIu64 " bytes\n"
              "DDR written     : %" PRIu64 " bytes\n",
              net->name.c_str(), m.chip.name.c_str(), stage.groups.size(),
              total.cycles, double(total.totalPs) / TimingParams::kPsPerUs,
              m.timing.tiuFreqMhz, share(total.tiuBusyPs), total.tiuCommands,
              share(total.gdmaBusyPs), total.gdmaCommands,
              total.gdmaConflictCycles, total.ddrReadBytes,
              total.ddrWriteBytes);
  if (!o.json.empty()) {
    nlohmann::json j = toJson(total);
    j["net"] = net->name;
    j["groups"] = std::move(groups);
    std::string text = j.dump(kJsonIndent) + "\n";
    bmodel::writeFileAtomically(o.json,
                                std::vector<uint8_t>(text.begin(), text.end()));
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(parseArgs(argc, argv));
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s: error: %s\n", kTool, e.what());
    return 1;
  }
}
