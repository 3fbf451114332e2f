//===- tpusim.cpp - Run a bmodel on the simulated BM1684X -----------------===//
//
//   tpusim run model.bmodel -i in.npz -o out.npz [--config FILE]
//          [-p key=value ...] [--mode full|functional|timing]
//          [--stats stats.json] [--trace trace.json] [--net NAME]
//   tpusim config [--config FILE] [-p key=value ...] [--defaults-file]
//
// `run` prints the end-of-run summary (total cycles, time, per-engine busy
// share, MAC utilisation, DDR bytes) on stdout. `config` prints every
// configuration key with its value, unit and description.
//
//===----------------------------------------------------------------------===//
#include "tpu/isa/Bmodel.h"
#include "tpu/isa/Npz.h"
#include "tpusim/Runner.h"
#include "tpusim/OpProfile.h"
#include "tpusim/Report.h"
#include "tpu/isa/OpMap.h"


#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

using namespace tpu;

constexpr const char *kTool = "tpusim";
/// Indentation of the JSON files we write.
constexpr int kJsonIndent = 1;

const char *kUsage =
    "usage: tpusim run MODEL.bmodel [-i IN.npz] [-o OUT.npz] [--config FILE]\n"
    "                  [-p KEY=VALUE]... [--mode full|functional|timing]\n"
    "                  [--stats STATS.json] [--trace TRACE.json] [--net NAME]\n"
    "                  [--report REPORT.html]\n"
    "       tpusim config [--config FILE] [-p KEY=VALUE]...\n"
    "       tpusim config --defaults-file\n"
    "\n"
    "The default configuration is the BM1684X machine built into tpusim; --config\n"
    "applies a file on top of it and -p sets single keys (chip.* keys change\n"
    "the machine shape). `run` simulates the machine the bmodel records (the\n"
    "--chip-param values of tpuc deploy) unless --config or -p change it.\n"
    "`tpusim config` lists every key; --defaults-file prints the defaults\n"
    "as a config file (simulator/configs/bm1684x.cfg is that text).\n";

struct Options {
  std::string command;
  std::string model, input, output, stats, trace, net, report;
  std::vector<std::string> configFiles, overrides;
  std::string mode = "full";
  bool defaultsFile = false;
};

Options parseArgs(int argc, char **argv) {
  Options o;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty())
    throw Error("missing command\n" + std::string(kUsage));
  o.command = args[0];
  if (o.command != "run" && o.command != "config")
    throw Error("unknown command '" + o.command + "'\n" + kUsage);
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string &a = args[i];
    auto value = [&]() -> const std::string & {
      if (i + 1 >= args.size())
        throw Error("option " + a + " needs a value");
      return args[++i];
    };
    if (a == "-i" || a == "--input")
      o.input = value();
    else if (a == "-o" || a == "--output")
      o.output = value();
    else if (a == "--config")
      o.configFiles.push_back(value());
    else if (a == "-p" || a == "--param")
      o.overrides.push_back(value());
    else if (a == "--mode")
      o.mode = value();
    else if (a == "--stats")
      o.stats = value();
    else if (a == "--trace")
      o.trace = value();
    else if (a == "--report")
      o.report = value();
    else if (a == "--net")
      o.net = value();
    else if (a == "--defaults-file" && o.command == "config")
      o.defaultsFile = true;
    else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (!a.empty() && a[0] == '-')
      throw Error("unknown option '" + a + "'");
    else if (o.model.empty() && o.command == "run")
      o.model = a;
    else
      throw Error("unexpected argument '" + a + "'");
  }
  return o;
}

sim::SimConfig loadConfig(const Options &o,
                          const isa::bmodel::Model *model = nullptr) {
  // The default configuration is compiled in (no file needed at run time);
  // the machine a bmodel records, --config files and -p overrides apply on
  // top of it, in order.
  sim::SimConfig cfg = sim::SimConfig::defaults();
  if (model) {
    try {
      cfg = sim::recordedConfig(*model, cfg);
    } catch (const Error &e) {
      throw Error(o.model + ": " + e.what()); // a corrupt bmodel names itself
    }
  }
  for (const std::string &f : o.configFiles)
    cfg.loadFile(f);
  for (const std::string &p : o.overrides) {
    try {
      cfg.assign(p);
    } catch (const Error &e) {
      throw Error("-p " + p + ": " + e.what());
    }
  }
  cfg.validate();
  return cfg;
}

void writeJson(const std::string &path, const nlohmann::json &j) {
  std::string text = j.dump(kJsonIndent) + "\n";
  isa::bmodel::writeFileAtomically(
      path, std::vector<uint8_t>(text.begin(), text.end()));
}

int runConfig(const Options &o) {
  if (o.defaultsFile) {
    std::fputs(std::string(sim::SimConfig::defaultText()).c_str(), stdout);
    return 0;
  }
  sim::SimConfig cfg = loadConfig(o);
  std::vector<std::pair<std::string, std::string>> values = cfg.list();
  std::vector<sim::ConfigKeyInfo> infos = sim::SimConfig::describe();
  for (size_t i = 0; i < values.size(); ++i)
    std::printf("%-26s = %-12s # %s; %s\n", values[i].first.c_str(),
                values[i].second.c_str(), infos[i].unit.c_str(),
                infos[i].description.c_str());
  return 0;
}

int runModel(const Options &o) {
  if (o.model.empty())
    throw Error("run: missing MODEL.bmodel\n" + std::string(kUsage));
  std::optional<sim::SimMode> mode = sim::simModeFromName(o.mode);
  if (!mode)
    throw Error("unknown --mode '" + o.mode +
                "' (expected full, functional or timing)");
  if (*mode == sim::SimMode::Timing && !o.output.empty())
    throw Error("--mode timing computes no values; drop -o or use --mode full");
  isa::bmodel::Model model = isa::bmodel::readModel(o.model);
  sim::SimConfig cfg = loadConfig(o, &model);
  // What goes wrong while setting up or running the model names the file
  // (the reader's messages already do).
  auto inModel = [&](auto &&fn) {
    try {
      return fn();
    } catch (const Error &e) {
      throw Error(o.model + ": " + e.what());
    }
  };
  sim::ModelRunner runner =
      inModel([&] { return sim::ModelRunner(model, cfg, *mode, o.net); });
  if (!o.input.empty()) {
    npz::Npz inputs = npz::readNpz(o.input);
    inputs.setSource(o.input);
    runner.setInputs(inputs);
  } else if (!runner.stage().inputs.empty() && *mode != sim::SimMode::Timing) {
    throw Error("net '" + runner.net().name + "' has " +
                std::to_string(runner.stage().inputs.size()) +
                " input(s); give them with -i IN.npz");
  }
  // The op map tpuc deploy writes beside the bmodel: per-op statistics.
  std::string opsPath = o.model;
  if (opsPath.size() > 7 &&
      opsPath.compare(opsPath.size() - 7, 7, ".bmodel") == 0)
    opsPath.resize(opsPath.size() - 7);
  opsPath += "_ops.json";
  std::optional<isa::OpMap> opMap;
  if (std::filesystem::is_regular_file(opsPath))
    opMap = isa::readOpMap(opsPath);
  runner.simulator().setTracing(!o.trace.empty() || !o.report.empty() ||
                                opMap);
  inModel([&] { runner.run(); });

  const sim::Simulator &s = runner.simulator();
  std::optional<sim::OpProfile> profile;
  if (opMap)
    profile = sim::profileOps(s.trace(), *opMap, s.stats().cycles, cfg,
                              opsPath);
  if (!o.output.empty())
    npz::writeNpz(o.output, runner.outputs());
  nlohmann::json statsJson = s.stats().toJson(cfg);
  if (profile)
    statsJson["ops"] = sim::opProfileToJson(*profile, cfg);
  if (!o.stats.empty())
    writeJson(o.stats, statsJson);
  if (!o.report.empty()) {
    sim::ReportInput r;
    r.netName = runner.net().name;
    r.modelPath = o.model;
    r.stats = statsJson;
    r.events = &s.trace();
    r.profile = profile ? &*profile : nullptr;
    // Each layer group's local-memory peak, from the compiler's report.
    std::string groupsPath = opsPath.substr(0, opsPath.size() - 9) +
                             "_groups.json";
    if (std::filesystem::is_regular_file(groupsPath)) {
      std::ifstream gin(groupsPath);
      nlohmann::json g = nlohmann::json::parse(gin, nullptr, false);
      if (g.is_object() && g.contains("groups") && g["groups"].is_array())
        for (const auto &grp : g["groups"])
          if (grp.contains("name") && grp.contains("lmem_bytes"))
            r.groupLmemBytes[grp["name"].get<std::string>()] =
                grp["lmem_bytes"].get<uint64_t>();
    }
    std::string html = sim::renderReport(r, cfg);
    isa::bmodel::writeFileAtomically(
        o.report, std::vector<uint8_t>(html.begin(), html.end()));
  }
  if (!o.trace.empty()) {
    nlohmann::json t = sim::traceToJson(s.trace());
    if (profile)
      sim::addOpTrack(t, *profile);
    writeJson(o.trace, t);
  }

  std::printf("net             : %s (%s, %zu command groups, mode %s)\n",
              runner.net().name.c_str(), model.chip.c_str(),
              runner.stage().groups.size(), sim::simModeName(*mode));
  std::fputs(s.stats().summary(cfg).c_str(), stdout);
  if (profile)
    std::fputs(sim::opProfileSummary(*profile, 10).c_str(), stdout);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    Options o = parseArgs(argc, argv);
    return o.command == "config" ? runConfig(o) : runModel(o);
  } catch (const std::exception &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error: %s\n", kTool, e.what());
    return 1;
  }
}
