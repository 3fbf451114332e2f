//===- tpusim.cpp - Run a bmodel on the simulated BM1684X -----------------===//
//
//   tpusim run model.bmodel -i in.npz -o out.npz [--config FILE]
//          [-p key=value ...] [--mode full|functional|timing]
//          [--stats stats.json] [--trace trace.json] [--net NAME]
//          [--dump-all dump.npz]
//   tpusim config [--config FILE] [-p key=value ...] [--defaults-file]
//   tpusim --help | help [run|config] | --version
//
// `run` prints the end-of-run summary (total cycles, time, per-engine busy
// share, MAC utilisation, DDR bytes) on stdout. `config` prints every
// configuration key with its value, unit and description.
//
// `run --dump-all` writes every op's output as global memory holds it right
// after the op's commands completed (TPU-MLIR's bmodel_checker; Runner.h),
// from the tensors the op map beside the bmodel lists; `tpuc compare
// dump.npz tpu_dump.npz --allow-missing --first-mismatch` against the tpu
// interpreter's `tpuc run model_tpu.mlir --dump-all` names the first op
// that departs.
//
//===----------------------------------------------------------------------===//
#include "tpu/Tool.h"
#include "tpu/isa/Bmodel.h"
#include "tpu/isa/Npz.h"
#include "tpusim/Runner.h"
#include "tpusim/OpProfile.h"
#include "tpusim/Report.h"
#include "tpusim/Simd.h"
#include "tpu/isa/OpMap.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace tpu;

constexpr const char *kTool = "tpusim";
/// Indentation of the JSON files we write.
constexpr int kJsonIndent = 1;

constexpr const char *kOverview =
    R"(the BM1684X simulator

  tpusim run MODEL.bmodel [-i IN.npz] [-o OUT.npz] [options]
  tpusim config [--config FILE] [-p KEY=VALUE]...
  tpusim config --defaults-file
  tpusim config --simd-paths
  tpusim run --help        the options of run (modes, statistics, traces)

The default configuration is the BM1684X machine built into tpusim; --config
applies a file on top of it and -p sets single keys (chip.* keys change the
machine shape). `run` simulates the machine the bmodel records (the
--chip-param values of tpuc deploy) unless --config or -p change it.
`tpusim config` lists every key; --defaults-file prints the defaults as a
config file (share/tpu-toolchain/bm1684x.cfg, simulator/configs/bm1684x.cfg in
the sources, is that text); --simd-paths lists the SIMD builds of the
functional kernels this machine can run (run --simd, TPUSIM_SIMD).
)";

namespace cl = llvm::cl;

cl::OptionCategory category("tpusim options");
cl::SubCommand runCommand(
    "run", "run a bmodel on the simulated BM1684X: outputs, cycles, statistics");
cl::SubCommand configCommand(
    "config", "print every configuration key with its value, unit and meaning");

cl::opt<std::string> modelArg(cl::Positional, cl::desc("MODEL.bmodel"),
                              cl::sub(runCommand), cl::cat(category));
cl::opt<std::string> inputArg(
    "input", cl::desc("the inputs, one array per net input (.npz)"),
    cl::value_desc("IN.npz"), cl::sub(runCommand), cl::cat(category));
cl::alias inputShort("i", cl::desc("Alias for --input"), cl::aliasopt(inputArg),
                     cl::NotHidden, cl::cat(category));
cl::opt<std::string> outputArg(
    "output", cl::desc("write the net's outputs to this .npz"),
    cl::value_desc("OUT.npz"), cl::sub(runCommand), cl::cat(category));
cl::alias outputShort("o", cl::desc("Alias for --output"),
                      cl::aliasopt(outputArg), cl::NotHidden,
                      cl::cat(category));
cl::opt<std::string> modeArg(
    "mode",
    cl::desc("full (default): values and cycles, the commands timed as the "
             "hardware runs them; functional: values only, no timing (fast); "
             "timing: cycles only, no values (no -i needed, no -o allowed)"),
    cl::value_desc("full|functional|timing"), cl::init("full"),
    cl::sub(runCommand), cl::cat(category));
cl::opt<std::string> simdArg(
    "simd",
    cl::desc("SIMD build of the functional kernels: auto (default: the "
             "widest this CPU has, or TPUSIM_SIMD), portable, avx2, avx512, "
             "avx512vnni, amx; every path computes the same bits"),
    cl::value_desc("PATH"), cl::sub(runCommand), cl::cat(category));
cl::opt<unsigned> threadsArg(
    "threads",
    cl::desc("threads of the conv kernels (default: TPUSIM_THREADS, else "
             "the hardware threads, at most 8; 1 to 256); results do not "
             "depend on it"),
    cl::value_desc("N"), cl::init(0), cl::sub(runCommand), cl::cat(category));
cl::opt<std::string> statsArg(
    "stats",
    cl::desc("write the run's statistics as JSON: cycles, time, per-engine "
             "busy share, MAC utilisation, DDR bytes, the configuration, and "
             "per op (with the <stem>_ops.json beside the bmodel) its "
             "cycles, busy cycles, MACs, DDR bytes and commands"),
    cl::value_desc("STATS.json"), cl::sub(runCommand), cl::cat(category));
cl::opt<std::string> traceArg(
    "trace",
    cl::desc("write every command's start and end (Chrome trace JSON, for "
             "chrome://tracing or Perfetto)"),
    cl::value_desc("TRACE.json"), cl::sub(runCommand), cl::cat(category));
cl::opt<std::string> reportArg(
    "report",
    cl::desc("write a self-contained HTML report: summary, per-op table, "
             "timeline, roofline, DDR bandwidth and local memory over time"),
    cl::value_desc("REPORT.html"), cl::sub(runCommand), cl::cat(category));
cl::opt<std::string> dumpAllArg(
    "dump-all",
    cl::desc("write every op's output, as global memory holds it right after "
             "the op's commands completed, to this .npz (needs the "
             "<stem>_ops.json tpuc deploy writes beside the bmodel; values "
             "inside layer groups never reach global memory and are not "
             "dumped)"),
    cl::value_desc("DUMP.npz"), cl::sub(runCommand), cl::cat(category));
cl::opt<std::string> corruptOpArg(
    "debug-corrupt-op",
    cl::desc("debugging the dump comparison: flip the lowest bit of op "
             "NAME's first output in global memory once it completed"),
    cl::value_desc("NAME"), cl::sub(runCommand), cl::Hidden);
cl::opt<std::string> netArg(
    "net", cl::desc("the net of the bmodel to run (default: the first)"),
    cl::value_desc("NAME"), cl::sub(runCommand), cl::cat(category));
cl::opt<uint64_t> maxCommandsArg(
    "max-commands",
    cl::desc("refuse to run past N commands (both engines, end commands "
             "included): stop with an error before the command group that "
             "would exceed them (default 0: no limit)"),
    cl::value_desc("N"), cl::init(0), cl::sub(runCommand), cl::cat(category));
cl::list<std::string> configArg(
    "config",
    cl::desc("apply a configuration file (KEY = VALUE lines, as `tpusim "
             "config --defaults-file` prints) on top of the machine the "
             "bmodel records (run) or of the defaults (config), before -p"),
    cl::value_desc("FILE"), cl::sub(runCommand), cl::sub(configCommand),
    cl::cat(category));
cl::list<std::string> chipParamArg(
    "chip-param", cl::desc(tpu::tool::kChipParamHelp),
    cl::value_desc("KEY=VALUE"), cl::sub(runCommand), cl::sub(configCommand),
    cl::cat(category));
cl::alias chipParamShort("p", cl::desc("Alias for --chip-param"),
                         cl::aliasopt(chipParamArg), cl::NotHidden,
                         cl::cat(category));
cl::alias chipParamOld("param", cl::desc("Alias for --chip-param"),
                       cl::aliasopt(chipParamArg), cl::Hidden);
cl::opt<bool> defaultsFileArg(
    "defaults-file",
    cl::desc("print the default configuration as a config file"),
    cl::sub(configCommand), cl::cat(category));
cl::opt<bool> simdPathsArg(
    "simd-paths",
    cl::desc("print the SIMD paths of the functional kernels this machine "
             "can run (CPU and, for amx, the kernel's permission), "
             "narrowest first, one per line; auto takes the last"),
    cl::sub(configCommand), cl::cat(category));

struct Options {
  std::string command;
  std::string model, input, output, stats, trace, net, report;
  std::string dumpAll, corruptOp;
  std::vector<std::string> configFiles, overrides;
  std::string mode = "full";
  std::string simd;
  unsigned threads = 0;
  bool threadsGiven = false;
  uint64_t maxCommands = 0;
  bool defaultsFile = false;
  bool simdPaths = false;
};

Options parseArgs(int argc, char **argv) {
  // `tpusim help [COMMAND]` is `tpusim [COMMAND] --help`.
  std::vector<char *> args(argv, argv + argc);
  static char helpFlag[] = "--help";
  if (args.size() >= 2 && llvm::StringRef(args[1]) == "help") {
    args.erase(args.begin() + 1);
    args.push_back(helpFlag);
  }
  tpu::tool::initTool(kTool);
  tpu::tool::parse(int(args.size()), args.data(), {&category}, kOverview);
  Options o;
  if (runCommand)
    o.command = "run";
  else if (configCommand)
    o.command = "config";
  else {
    llvm::errs() << kTool
                 << ": error: missing command (run or config; see tpusim "
                    "--help)\n";
    std::exit(1);
  }
  o.model = modelArg;
  o.input = inputArg;
  o.output = outputArg;
  o.stats = statsArg;
  o.trace = traceArg;
  o.report = reportArg;
  o.net = netArg;
  o.dumpAll = dumpAllArg;
  o.corruptOp = corruptOpArg;
  o.mode = modeArg;
  o.simd = simdArg;
  o.threads = threadsArg;
  o.threadsGiven = threadsArg.getNumOccurrences() > 0;
  o.maxCommands = maxCommandsArg;
  o.configFiles = configArg;
  for (const std::string &kv : chipParamArg)
    o.overrides.push_back(tpu::tool::machineKey(kv));
  o.defaultsFile = defaultsFileArg;
  o.simdPaths = simdPathsArg;
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
  if (o.simdPaths) {
    for (sim::SimdPath p : sim::availableSimdPaths())
      std::printf("%s\n", sim::simdPathName(p));
    return 0;
  }
  if (o.defaultsFile) {
    std::fputs(std::string(sim::SimConfig::defaultText()).c_str(), stdout);
    return 0;
  }
  sim::SimConfig cfg = loadConfig(o);
  std::vector<std::pair<std::string, std::string>> values = cfg.list();
  std::vector<sim::ConfigKeyInfo> infos = sim::SimConfig::describe();
  for (size_t i = 0; i < values.size(); ++i) {
    std::string note = infos[i].unit.empty()
                           ? infos[i].description
                           : infos[i].unit + "; " + infos[i].description;
    std::printf("%-26s = %-12s # %s\n", values[i].first.c_str(),
                values[i].second.c_str(), note.c_str());
  }
  return 0;
}

/// Slices of the check codes' hash the background helper takes: 64 KiB is
/// ~30 us of SHA-256 where the CPU has the SHA extensions (2 GB/s on the
/// Xeon measured), how soon it sees a new piece of work or the end.
constexpr uint64_t kHashSliceBytes = uint64_t(64) << 10;

/// Starts hashing the check codes readModel deferred, on a kernel helper
/// thread before it joins the kernels (sim::runOnHelper), or on a thread of
/// its own when there is no helper; awaitCheckCodes hashes what is left.
/// Measured on 2 vCPUs, ResNet-50 full runs (median of 9 alternating
/// whole processes): INT8 68.8 ms with a thread of its own (3 threads on 2
/// cores, the hash taking turns with the simulation's critical thread),
/// 66.2 ms hashed only while the helper had no kernel work (the rest after
/// the run), 63.7 ms on the helper first; F16 (51 MB of coefficients, the
/// kernels keeping both cores busy) 131.9, 140.5 and 126.2 ms.
std::future<void> hashInBackground(const isa::bmodel::Model &model) {
  if (model.pendingCheckCodes.empty())
    return {};
  auto step = [pending = model.pendingCheckCodes] {
    return isa::bmodel::hashCheckCodes(pending, kHashSliceBytes);
  };
  if (sim::runOnHelper(step))
    return {};
  return std::async(std::launch::async, [step] {
    while (step()) {
    }
  });
}

int runReadModel(const Options &o, sim::SimMode mode,
                 const isa::bmodel::Model &model);

int runModel(const Options &o) {
  if (o.model.empty())
    throw Error("run: missing MODEL.bmodel (see tpusim run --help)");
  if (!o.simd.empty()) {
    std::optional<sim::SimdPath> p = sim::simdPathFromName(o.simd);
    if (!p)
      throw Error("unknown --simd '" + o.simd +
                  "' (auto, portable, avx2, avx512, avx512vnni or amx)");
    sim::setSimdPath(*p);
  } else {
    sim::simdPath(); // a bad TPUSIM_SIMD fails here, before any work
  }
  // A bad TPUSIM_THREADS fails here, before any work, even when --threads
  // overrides it (the first kernel would otherwise report it as a fault of
  // its command).
  sim::kernelThreads();
  if (o.threadsGiven) {
    if (o.threads < 1 || o.threads > 256)
      throw Error("--threads " + std::to_string(o.threads) +
                  ": expected a thread count from 1 to 256");
    sim::setKernelThreads(o.threads);
  }
  std::optional<sim::SimMode> mode = sim::simModeFromName(o.mode);
  if (!mode)
    throw Error("unknown --mode '" + o.mode +
                "' (expected full, functional or timing)");
  if (*mode == sim::SimMode::Timing && !o.output.empty())
    throw Error("--mode timing computes no values; drop -o or use --mode full");
  if (*mode == sim::SimMode::Timing && !o.dumpAll.empty())
    throw Error("--mode timing computes no values; drop --dump-all or use "
                "--mode full");
  // Functional mode keeps no time: its statistics, trace and report
  // would be all zeros (the MAC counts too), read as results.
  if (*mode == sim::SimMode::Functional)
    for (auto [flag, path] :
         {std::pair<const char *, const std::string &>{"--stats", o.stats},
          {"--trace", o.trace},
          {"--report", o.report}})
      if (!path.empty())
        throw Error(std::string("--mode functional keeps no time; drop ") +
                    flag + " or use --mode full");
  if (!o.corruptOp.empty() && o.dumpAll.empty())
    throw Error("--debug-corrupt-op needs --dump-all");
  // Timing needs the commands only: the coefficients (most of the file)
  // are not read, nor their check code verified; full and functional
  // modes load and verify them.
  isa::bmodel::ParseOptions parse;
  parse.loadCoefficients = *mode != sim::SimMode::Timing;
  // The check code's hash runs beside the set-up and simulation (waiting
  // for it took ~45 ms of a 0.36 s ResNet-50 F16 run on 2 vCPUs); it is
  // awaited before anything is written or printed, and its error wins over
  // any other, as it would have come first.
  parse.deferCheckCode = true;
  // The coefficients are only read (global memory reads them where the
  // file mapping holds them; GlobalMemory::writeShared).
  parse.coefficientsInPlace = true;
  isa::bmodel::Model model = isa::bmodel::readModel(o.model, parse);
  std::future<void> hashing = hashInBackground(model);
  try {
    return runReadModel(o, *mode, model);
  } catch (...) {
    isa::bmodel::awaitCheckCodes(model);
    throw;
  }
}

/// runModel after the model is read.
int runReadModel(const Options &o, sim::SimMode mode,
                 const isa::bmodel::Model &model) {
  if (std::string e = isa::bmodel::checkOutputPaths(
          {{"-o", o.output},
           {"--dump-all", o.dumpAll},
           {"--stats", o.stats},
           {"--report", o.report},
           {"--trace", o.trace}},
          {{"the model", o.model}, {"-i", o.input}});
      !e.empty())
    throw Error(e);
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
      inModel([&] { return sim::ModelRunner(model, cfg, mode, o.net); });
  if (!o.input.empty()) {
    npz::Npz inputs = npz::readNpz(o.input);
    inputs.setSource(o.input);
    runner.setInputs(inputs);
  } else if (!runner.stage().inputs.empty() && mode != sim::SimMode::Timing) {
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
  if (std::filesystem::is_regular_file(opsPath)) {
    opMap = isa::readOpMap(opsPath);
    isa::checkOpMap(*opMap, runner.stage(), opsPath);
  } else if (!o.dumpAll.empty()) {
    throw Error("--dump-all needs the op map " + opsPath +
                " (tpuc deploy writes it beside the bmodel)");
  }
  if (!o.dumpAll.empty()) {
    try {
      runner.enableDump(*opMap);
      if (!o.corruptOp.empty())
        runner.corruptAfter(o.corruptOp);
    } catch (const Error &e) {
      throw Error(opsPath + ": " + e.what());
    }
  }
  runner.simulator().setTracing(!o.trace.empty() || !o.report.empty() ||
                                opMap);
  sim::RunOptions runOptions;
  runOptions.maxCommands = o.maxCommands;
  inModel([&] { runner.run(runOptions); });
  isa::bmodel::awaitCheckCodes(model);

  const sim::Simulator &s = runner.simulator();
  std::optional<sim::OpProfile> profile;
  if (opMap)
    profile = sim::profileOps(s.trace(), *opMap, s.stats().cycles, cfg);
  // The outputs are written as one set (isa::bmodel::StagedFiles): if one
  // cannot be written, every path keeps what it held before the run.
  isa::bmodel::StagedFiles files;
  if (!o.output.empty())
    files.write(o.output, [&](const std::string &t) {
      npz::writeNpz(t, runner.outputs());
    });
  std::optional<size_t> dumped;
  if (!o.dumpAll.empty()) {
    npz::Npz dump = runner.dump();
    std::vector<std::string> missing = runner.undumpedOps();
    if (!missing.empty())
      std::fprintf(stderr,
                   "%s: warning: %zu op(s) of the op map ran no command, "
                   "their tensors are not dumped (first: %s)\n",
                   kTool, missing.size(), missing.front().c_str());
    // Stored, not deflated, as tpuc run --dump-all writes its dumps.
    files.write(o.dumpAll, [&](const std::string &t) {
      npz::writeNpz(t, dump, /*compress=*/false);
    });
    dumped = dump.size();
  }
  nlohmann::json statsJson = s.stats().toJson(cfg);
  if (profile)
    statsJson["ops"] = sim::opProfileToJson(*profile);
  if (!o.stats.empty())
    files.write(o.stats,
                [&](const std::string &t) { writeJson(t, statsJson); });
  if (!o.report.empty()) {
    sim::ReportInput r;
    r.netName = runner.net().name;
    r.modelPath = o.model;
    r.stats = statsJson;
    r.events = &s.trace();
    r.ddrBusy = &s.ddrBusy();
    r.profile = profile ? &*profile : nullptr;
    std::string html = sim::renderReport(r, cfg);
    files.write(o.report, [&](const std::string &t) {
      isa::bmodel::writeFileAtomically(
          t, std::vector<uint8_t>(html.begin(), html.end()));
    });
  }
  if (!o.trace.empty()) {
    nlohmann::json t = sim::traceToJson(s.trace());
    if (profile)
      sim::addOpTrack(t, *profile);
    files.write(o.trace, [&](const std::string &tmp) { writeJson(tmp, t); });
  }
  files.commit();

  if (dumped)
    std::printf("dump            : %s (%zu tensors of %zu ops)\n",
                o.dumpAll.c_str(), *dumped, opMap->ops.size());
  std::printf("net             : %s (%s, %zu command groups, mode %s)\n",
              runner.net().name.c_str(), model.chip.c_str(),
              runner.stage().groups.size(), sim::simModeName(mode));
  if (mode == sim::SimMode::Functional) {
    // No time passes in this mode: cycles, busy shares and the per-op
    // table would all be zeros.
    const sim::SimStats &st = s.stats();
    std::printf("commands        : %" PRIu64 " TIU, %" PRIu64 " GDMA\n"
                "DDR read        : %" PRIu64 " bytes\n"
                "DDR written     : %" PRIu64 " bytes\n"
                "(functional mode keeps no time: --mode full for cycles)\n",
                st.tiuCommands, st.gdmaCommands, st.ddrReadBytes,
                st.ddrWriteBytes);
    return 0;
  }
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
