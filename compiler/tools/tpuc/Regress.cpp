//===- Regress.cpp - tpuc regress: regression suites of deployed models ---===//
//
//   tpuc regress SUITE.toml [-o DIR] [--jobs N] [--shard I/N] [--cache DIR]
//       [--update-baseline] [--baseline FILE] [--junit FILE] [--json FILE]
//   tpuc regress merge DIR... --suite SUITE.toml [-o DIR] [...]
//
// A suite (a TOML subset, the format of tpuc explore's sweeps, see
// README.md "Regression suites") lists cases: a model (.onnx, .tflite, a top .mlir
// or a ready .bmodel), the modes and options to compile it with, an input
// .npz and what must hold: per-output cosine / Euclidean similarity / SQNR
// against a reference .npz (or against the top interpreter's or ONNX
// Runtime's outputs, made once and cached), bit-exactness against the tpu
// interpreter, and
// the simulated cycles, DDR bytes and MAC utilisation of a text baseline
// within a drift in percent. Each case (a case in one mode) runs in its own
// forked worker (Batch.h), --jobs at once: transform (.onnx, .tflite), the
// calibration table (from a dataset), the in-memory compile, then a full
// simulation (timing only without an input) with per-op statistics. The
// transform, the table, the reference and the compiled bmodel are cached
// under a hash of their inputs' content, the options and the toolchain (a
// hash of the tpuc executable), so an unchanged case is simulated again
// but not recompiled. A case that fails to compile, crashes or times out is
// a failed case; the other cases run on.
//
// Writes DIR/results.json (each case's figures, its stats JSON as tpusim
// --stats writes it and its verdict), DIR/junit.xml and a table on stdout;
// exits 1 when a case fails. --update-baseline writes the baseline from
// this run instead of checking against it.
//
//===----------------------------------------------------------------------===//
#include "Batch.h"
#include "Subcommands.h"
#include "ToolCommon.h"
#include "tpuc/Conversion/TopToTpu/TopToTpu.h"

#include "tpuc/Interpreter/Interpreter.h"
#include "tpuc/Support/Compare.h"

#include "tpu/Tool.h"
#include "tpu/isa/Bmodel.h"
#include "tpu/isa/Error.h"
#include "tpu/isa/Npz.h"
#include "tpu/isa/OpMap.h"
#include "tpusim/Config.h"
#include "tpusim/OpProfile.h"
#include "tpusim/Runner.h"

#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using tpuc::batch::ParseError;

constexpr const char *kTool = "tpuc regress";

namespace cl = llvm::cl;

cl::SubCommand command("regress",
                       "regression suite: compile (cached) + simulate cases, "
                       "check accuracy and cycles against a baseline; JSON, "
                       "JUnit XML");
tpuc::cli::Category category("tpuc regress options");

constexpr const char *kOverview =
    R"(tpuc regress: regression suites

  tpuc regress SUITE.toml [-o DIR] [--jobs N] [--shard I/N] [--cache DIR]
               [--update-baseline] [--baseline FILE] [--junit FILE]
               [--json FILE] [--check]
  tpuc regress merge DIR... --suite SUITE.toml [-o DIR] [...]

Compiles (in memory, cached) and simulates every case of a suite and
checks its accuracy and its simulated performance against a baseline.
Suite format: README.md, "Regression suites". `merge DIR...` joins the
results of shards (every case of --suite exactly once) and reports as one
run. Exit status 1 when a case fails (accuracy, performance, or it did not
compile or run) or on an error; 0 when every case passes.
)";

tpuc::batch::CommonOptions
    common(command, category, "SUITE.toml | merge DIR...",
           "results: DIR/results.json, DIR/junit.xml, DIR/logs (default: "
           "SUITE-results in the current directory)",
           "cases", "suite");
cl::opt<std::string>
    suiteArg("suite",
             cl::desc("merge: the suite (its cases, drifts and baseline)"),
             cl::value_desc("SUITE.toml"), cl::sub(command), cl::cat(category));
cl::opt<std::string>
    cacheArg("cache",
             cl::desc("compiled bmodels and transforms (default: DIR/cache, or "
                      "$TPUC_REGRESS_CACHE)"),
             cl::value_desc("DIR"), cl::sub(command), cl::cat(category));
cl::opt<bool> updateBaselineArg(
    "update-baseline",
    cl::desc("write the baseline from this run (accuracy is still checked)"),
    cl::sub(command), cl::cat(category));
cl::opt<std::string>
    baselineArg("baseline",
                cl::desc("the baseline (default: the suite's `baseline`)"),
                cl::value_desc("FILE"), cl::sub(command), cl::cat(category));
cl::opt<std::string> junitArg("junit",
                              cl::desc("JUnit XML (default: DIR/junit.xml)"),
                              cl::value_desc("FILE"), cl::sub(command),
                              cl::cat(category));
cl::opt<std::string>
    jsonArg("json", cl::desc("the JSON result (default: DIR/results.json)"),
            cl::value_desc("FILE"), cl::sub(command), cl::cat(category));

int fail(const std::string &message) {
  return tpuc::batch::fail(kTool, message);
}

/// Runs a program (PATH searched) with its output in this worker's log;
/// throws unless it exits 0.
void runProgram(const std::vector<std::string> &args) {
  llvm::outs() << "$";
  for (const std::string &a : args)
    llvm::outs() << " " << a;
  llvm::outs() << "\n";
  llvm::outs().flush();
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<char *> argv;
    for (const std::string &a : args)
      argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "error: cannot run %s: %s\n", argv[0],
                 std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0)
    throw tpu::Error(args[0] + " " + args[1] + " failed");
}

/// scripts/ort_run.js: $TPUC_ORT_RUN, else beside the build tree of this
/// executable (BUILD/bin/tpuc -> BUILD/../scripts); "" when neither is.
std::string ortRunScript() {
  if (const char *env = std::getenv("TPUC_ORT_RUN"))
    return fs::is_regular_file(env) ? fs::absolute(env).string() : "";
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  fs::path script = exe.parent_path().parent_path().parent_path() /
                    "scripts" / "ort_run.js";
  return !ec && fs::is_regular_file(script) ? script.string() : "";
}

//===----------------------------------------------------------------------===//
// The suite file
//===----------------------------------------------------------------------===//

struct Case {
  std::string name;
  int line = 0;
  std::map<std::string, int> lines; ///< key -> its line
  std::string model, kind;          ///< resolved path; onnx, mlir or bmodel
  std::string inputShapes;
  std::vector<std::string> modes;
  std::string cali, dataset, caliNum = "16", caliMethod, caliTune, qtable;
  /// The quantize table has INT8 entries: every mode reads the calibration
  /// table then, as tpuc deploy's does.
  bool qtableInt8 = false;
  /// Mode \p mode reads a calibration table (INT8, or INT8 ops of the
  /// quantize table in a float mode).
  bool calibrates(const std::string &mode) const {
    return mode == "INT8" || qtableInt8;
  }
  /// Compile knobs other than quantize, and machine keys, as given.
  std::vector<std::pair<std::string, std::string>> knobs, machine;
  std::string input, reference;
  /// The input files: `input`, or the .npz files of an input directory in
  /// name order.
  std::vector<std::string> samples;
  bool referenceTop = false, bitExact = false;
  /// reference = "onnxruntime": scripts/ort_run.js, which runs it.
  std::string ortRun;
  bool generatedReference() const { return referenceTop || !ortRun.empty(); }
  std::optional<double> cosine, euclid, sqnr;
  double drift = -1, timeout = -1;
};

struct Suite {
  std::string path, name, baseline;
  double drift = 2.0, timeout = 900;
  std::vector<Case> cases;
};

/// One case in one mode: what a worker runs.
struct Run {
  size_t index = 0;
  const Case *c = nullptr;
  std::string mode; ///< "" for a .bmodel
  std::string id;   ///< "name/MODE" or "name"
  double drift = 0, timeout = 0;
};

const std::set<std::string> kCaseKeys = {
    "model",       "input_shapes",        "quantize",
    "calibration_table", "calibration_dataset", "calibration_num",
    "calibration_method", "calibration_tune_num",
    "qtable",      "layer_group",         "lg_max_length",
    "lg_max_h_slices", "lg_h_first",      "weight_resident",
    "lg_kernels",
    "input",       "reference",           "cosine",
    "euclid",      "sqnr",                "bit_exact",
    "drift",       "timeout"};

/// Expands ${NAME} from the environment; an unset variable is an error.
std::string expand(const std::string &s, int line) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '$' && i + 1 < s.size() && s[i + 1] == '{') {
      size_t end = s.find('}', i);
      if (end == std::string::npos)
        throw ParseError{line, "unterminated ${ in '" + s + "'"};
      std::string var = s.substr(i + 2, end - i - 2);
      const char *v = std::getenv(var.c_str());
      if (!v)
        throw ParseError{line, "environment variable " + var + " is not set"};
      out += v;
      i = end;
    } else
      out += s[i];
  }
  return out;
}

double inRange(const std::string &text, const std::string &key, double lo,
               double hi, int line) {
  double v = tpuc::batch::number(text, key, line);
  if (v < lo || v > hi)
    throw ParseError{line, key + " = " + text + " is out of range [" +
                               tpuc::batch::formatNumber(lo) + ", " +
                               tpuc::batch::formatNumber(hi) + "]"};
  return v;
}

Suite readSuite(const std::string &path) {
  Suite su;
  su.path = path;
  su.name = fs::path(path).stem().string();
  fs::path base = fs::path(path).parent_path();
  auto resolve = [&](const std::string &p, int line) {
    fs::path q(expand(p, line));
    return (q.is_absolute() ? q : base / q).lexically_normal().string();
  };
  auto existing = [&](const tpuc::batch::Entry &e, const std::string &what) {
    std::string raw = tpuc::batch::scalar(e.value, e.line);
    std::string r = resolve(raw, e.line);
    if (!fs::exists(r))
      throw ParseError{e.line, what + " '" + raw + "' does not exist (" + r +
                                   ")"};
    return r;
  };
  auto onSection = [&](const std::string &section, int line) {
    if (section == "suite")
      return;
    if (section.rfind("case.", 0) != 0 || section.size() == 5)
      throw ParseError{line, "unknown section [" + section +
                                 "] (suite or case.NAME)"};
    std::string name = section.substr(5);
    if (name.size() >= 2 && name.front() == '"' && name.back() == '"')
      name = name.substr(1, name.size() - 2);
    for (char c : name)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' &&
          c != '-' && c != '.')
        throw ParseError{line, "case name '" + name +
                                   "' may hold letters, digits, _ - . only"};
    for (const Case &c : su.cases)
      if (c.name == name)
        throw ParseError{line, "case '" + name + "' given twice (line " +
                                   std::to_string(c.line) + ")"};
    Case c;
    c.name = name;
    c.line = line;
    su.cases.push_back(c);
  };
  auto onEntry = [&](const tpuc::batch::Entry &e) {
    const std::string &key = e.key;
    int line = e.line;
    if (e.section.empty() || e.section == "suite") {
      if (key == "name")
        su.name = tpuc::batch::scalar(e.value, line);
      else if (key == "baseline") {
        su.baseline = resolve(tpuc::batch::scalar(e.value, line), line);
      } else if (key == "drift")
        su.drift = inRange(tpuc::batch::bareScalar(e.value, key, line), key, 0,
                           1000, line);
      else if (key == "timeout")
        su.timeout = inRange(tpuc::batch::bareScalar(e.value, key, line), key,
                             1, 86400, line);
      else
        throw ParseError{line, "unknown key '" + key +
                                   "' in [suite] (name, baseline, drift, "
                                   "timeout; cases go under [case.NAME])"};
      return;
    }
    Case &c = su.cases.back();
    c.lines[key] = line;
    if (key.find('.') != std::string::npos) {
      std::string v = tpuc::batch::scalar(e.value, line);
      tpuc::batch::checkMachineKey(key, v, line);
      c.machine.push_back({key, v});
      return;
    }
    if (!kCaseKeys.count(key))
      throw ParseError{
          line, "unknown key '" + key +
                    "' (model, input_shapes, quantize, calibration_table, "
                    "calibration_dataset, calibration_num, "
                    "calibration_method, calibration_tune_num, qtable, "
                    "layer_group, lg_max_length, lg_max_h_slices, "
                    "lg_h_first, weight_resident, lg_kernels, input, "
                    "reference, cosine, "
                    "euclid, sqnr, bit_exact, drift, timeout, or a machine "
                    "key such as chip.npu_num)"};
    if (key == "model") {
      std::string raw = tpuc::batch::scalar(e.value, line);
      std::string r = resolve(raw, line);
      std::string ext = fs::path(r).extension().string();
      if (ext != ".onnx" && ext != ".tflite" && ext != ".mlir" &&
          ext != ".bmodel")
        throw ParseError{line, "model '" + raw +
                                   "' is not an .onnx, a .tflite, a top "
                                   ".mlir or a .bmodel"};
      if (!fs::is_regular_file(r))
        throw ParseError{line,
                         "model '" + raw + "' does not exist (" + r + ")"};
      c.model = r;
      c.kind = ext.substr(1);
    } else if (key == "quantize") {
      c.modes = tpuc::batch::values(e.value, line);
      std::set<std::string> seen;
      for (std::string &m : c.modes) {
        if (std::string why = tpuc::batch::checkCompileKnob(key, m);
            !why.empty())
          throw ParseError{line, "quantize = " + m + ": " + why};
        if (!seen.insert(m).second)
          throw ParseError{line, "quantize lists " + m + " twice"};
      }
    } else if (key == "input_shapes")
      c.inputShapes = tpuc::batch::scalar(e.value, line);
    else if (key == "calibration_table")
      c.cali = existing(e, "calibration table");
    else if (key == "calibration_dataset") {
      c.dataset = existing(e, "calibration dataset");
      if (!fs::is_directory(c.dataset))
        throw ParseError{line, "calibration dataset '" + c.dataset +
                                   "' is not a directory"};
    } else if (key == "calibration_num") {
      c.caliNum = tpuc::batch::bareScalar(e.value, key, line);
      inRange(c.caliNum, key, 1, 100000, line);
    } else if (key == "calibration_method") {
      c.caliMethod = tpuc::batch::scalar(e.value, line);
      static const std::set<std::string> methods = {
          "kld", "minmax", "percentile9999", "mse", "aciq_gauss",
          "aciq_laplace"}; // tpuc calibrate --method
      if (!methods.count(c.caliMethod))
        throw ParseError{line, "calibration_method = " + c.caliMethod +
                                   ": not kld, minmax, percentile9999, mse, "
                                   "aciq_gauss or aciq_laplace"};
    } else if (key == "calibration_tune_num") {
      c.caliTune = tpuc::batch::bareScalar(e.value, key, line);
      inRange(c.caliTune, key, 0, 10000, line);
    } else if (key == "qtable")
      c.qtable = existing(e, "quantize table");
    else if (key == "input") {
      c.input = existing(e, "input");
      if (fs::is_directory(c.input)) {
        for (auto &f : fs::directory_iterator(c.input))
          if (f.path().extension() == ".npz")
            c.samples.push_back(f.path().string());
        std::sort(c.samples.begin(), c.samples.end());
        if (c.samples.empty())
          throw ParseError{line, "input directory '" + c.input +
                                     "' holds no .npz file"};
      } else
        c.samples = {c.input};
    }
    else if (key == "reference") {
      std::string raw = tpuc::batch::scalar(e.value, line);
      if (raw == "top")
        c.referenceTop = true;
      else if (raw == "onnxruntime") {
        c.ortRun = ortRunScript();
        if (c.ortRun.empty())
          throw ParseError{line, "reference = \"onnxruntime\" needs "
                                 "scripts/ort_run.js: set TPUC_ORT_RUN to "
                                 "its path (beside the build tree it is "
                                 "found)"};
      } else
        c.reference = existing(e, "reference");
    } else if (key == "cosine")
      c.cosine = inRange(tpuc::batch::bareScalar(e.value, key, line), key, -1,
                         1, line);
    else if (key == "euclid")
      c.euclid =
          inRange(tpuc::batch::bareScalar(e.value, key, line), key, 0, 1, line);
    else if (key == "sqnr")
      c.sqnr = inRange(tpuc::batch::bareScalar(e.value, key, line), key, -100,
                       400, line);
    else if (key == "bit_exact") {
      std::string v = tpuc::batch::bareScalar(e.value, key, line);
      if (v != "true" && v != "false")
        throw ParseError{line, "bit_exact = " + v + ": not true or false"};
      c.bitExact = v == "true";
    } else if (key == "drift")
      c.drift = inRange(tpuc::batch::bareScalar(e.value, key, line), key, 0,
                        1000, line);
    else if (key == "timeout")
      c.timeout = inRange(tpuc::batch::bareScalar(e.value, key, line), key, 1,
                          86400, line);
    else {
      std::string v = tpuc::batch::scalar(e.value, line);
      if (std::string why = tpuc::batch::checkCompileKnob(key, v);
          !why.empty())
        throw ParseError{line, key + " = " + v + ": " + why};
      c.knobs.push_back({key, v});
    }
  };
  tpuc::batch::readEntries(path, "suite file", onSection, onEntry);
  // What needs the whole case.
  auto err = [&](int line, const std::string &m) {
    return tpu::Error(path + ":" + std::to_string(line) + ": " + m);
  };
  if (su.cases.empty())
    throw tpu::Error(path + ": no cases ([case.NAME] with model = ...)");
  for (Case &c : su.cases) {
    auto lineOf = [&](const std::string &k) {
      auto it = c.lines.find(k);
      return it == c.lines.end() ? c.line : it->second;
    };
    std::string what = "case '" + c.name + "': ";
    if (c.model.empty())
      throw err(c.line, what + "no model (model = \"FILE.onnx|.mlir|.bmodel\")");
    // The case's machine as a whole (rules between keys too).
    if (!c.machine.empty())
      if (std::string e = tpuc::batch::machineError(c.machine); !e.empty())
        throw err(lineOf(c.machine.back().first),
                  what + "the machine it sets is not valid: " + e);
    if (c.kind == "bmodel") {
      for (const char *k :
           {"quantize", "calibration_table", "calibration_dataset",
            "calibration_num", "calibration_method", "calibration_tune_num",
            "qtable",
            "input_shapes", "layer_group", "lg_max_length", "lg_max_h_slices",
            "lg_h_first", "weight_resident", "lg_kernels"})
        if (c.lines.count(k))
          throw err(lineOf(k), what + k +
                                   " is a compile option; a .bmodel is "
                                   "already compiled");
      if (c.bitExact)
        throw err(lineOf("bit_exact"),
                  what + "bit_exact needs the tpu module: give the .onnx or "
                         "the top .mlir, not a .bmodel");
      if (c.generatedReference())
        throw err(lineOf("reference"),
                  what + "reference = \"top\" / \"onnxruntime\" needs the "
                         "model, not a .bmodel");
      c.modes = {""};
    } else {
      if (c.modes.empty())
        c.modes = {"F16"};
      if (c.kind != "onnx" && c.kind != "tflite" &&
          c.lines.count("input_shapes"))
        throw err(lineOf("input_shapes"),
                  what + "input_shapes is for .onnx and .tflite models");
    }
    bool int8 = std::count(c.modes.begin(), c.modes.end(), "INT8");
    // A quantised .tflite carries its own scales (top.quant_table).
    if (int8 && c.cali.empty() && c.dataset.empty() && c.kind != "tflite")
      throw err(lineOf("quantize"),
                what + "INT8 needs calibration_table or calibration_dataset");
    if (!c.qtable.empty()) {
      llvm::Expected<tpuc::QuantTable> table = tpuc::readQuantTable(c.qtable);
      if (!table)
        throw err(lineOf("qtable"), llvm::toString(table.takeError()));
      for (const auto &entry : table->entries)
        c.qtableInt8 |= entry.second.mode == tpuc::QuantMode::INT8;
      if (c.qtableInt8 && c.cali.empty() && c.dataset.empty() &&
          c.kind != "tflite")
        throw err(lineOf("qtable"),
                  what + "the quantize table's INT8 entries need "
                         "calibration_table or calibration_dataset");
    }
    if (!c.cali.empty() && !c.dataset.empty())
      throw err(lineOf("calibration_dataset"),
                what + "give calibration_table or calibration_dataset, not "
                       "both");
    bool accuracy = c.cosine || c.euclid || c.sqnr;
    if (c.samples.size() > 1 && !c.reference.empty())
      throw err(lineOf("reference"),
                what + "a reference .npz is for one input file; with an "
                       "input directory use reference = \"top\" or "
                       "\"onnxruntime\"");
    if (!c.ortRun.empty() && c.kind != "onnx")
      throw err(lineOf("reference"),
                what + "reference = \"onnxruntime\" needs an .onnx model");
    if (accuracy && c.reference.empty() && !c.generatedReference())
      throw err(lineOf(c.cosine ? "cosine" : c.euclid ? "euclid" : "sqnr"),
                what + "a tolerance needs reference = \"REF.npz\" or \"top\"");
    if ((!c.reference.empty() || c.generatedReference()) && !accuracy)
      // tpuc compare's defaults.
      c.cosine = tpuc::Tolerance().cosine, c.euclid = tpuc::Tolerance().euclidean;
    if ((accuracy || c.bitExact || c.generatedReference() ||
         !c.reference.empty()) &&
        c.input.empty())
      throw err(c.line, what + "accuracy checks need input = \"IN.npz\"");
  }
  if (su.baseline.empty())
    su.baseline = (base / (su.name + ".baseline")).lexically_normal().string();
  return su;
}

std::vector<Run> enumerate(const Suite &su) {
  std::vector<Run> runs;
  for (const Case &c : su.cases)
    for (const std::string &m : c.modes) {
      Run r;
      r.index = runs.size();
      r.c = &c;
      r.mode = m;
      r.id = m.empty() ? c.name : c.name + "/" + m;
      r.drift = c.drift >= 0 ? c.drift : su.drift;
      r.timeout = c.timeout > 0 ? c.timeout : su.timeout;
      runs.push_back(r);
    }
  return runs;
}

//===----------------------------------------------------------------------===//
// The cache
//===----------------------------------------------------------------------===//

/// digest(path) (default: fileDigest), remembered in \p cacheDir per (path,
/// inode, size, mtime): suites hash the same large models and datasets in
/// every case and run.
std::string memoDigest(
    const std::string &cacheDir, const std::string &path,
    std::string (*digest)(const std::string &) = tpuc::batch::fileDigest) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    return digest(path);
  std::string memo =
      cacheDir + "/digest-" +
      tpuc::batch::hexDigest(fs::absolute(path).string() + "\n" +
                             std::to_string(st.st_ino) + "\n" +
                             std::to_string(st.st_size) + "\n" +
                             std::to_string(st.st_mtim.tv_sec) + "." +
                             std::to_string(st.st_mtim.tv_nsec))
          .substr(0, 16);
  std::ifstream in(memo);
  std::string id;
  if (in >> id && id.size() == 64)
    return id;
  id = digest(path);
  tpuc::batch::writeText(memo, id + "\n");
  return id;
}

/// The toolchain's identity: a hash of the tpuc executable (the compiler
/// and the simulator linked in) without its version text, read once per
/// build.
std::string toolchainId(const std::string &cacheDir) {
  return memoDigest(cacheDir, "/proc/self/exe", [](const std::string &p) {
    return tpuc::batch::executableDigest(p, tpu::toolchainVersion());
  });
}

/// A hash of a top module: its text and the weight file it names (its
/// digest remembered in \p cacheDir, as memoDigest does).
std::string moduleDigest(const std::string &cacheDir, const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str(), canon = tpuc::batch::hexDigest(text);
  std::smatch m;
  static const std::regex weights("top\\.weight_file = \"([^\"]*)\"");
  if (std::regex_search(text, m, weights)) {
    fs::path w(m[1].str());
    if (!w.is_absolute())
      w = fs::path(path).parent_path() / w;
    canon += memoDigest(cacheDir, w.string());
  }
  return tpuc::batch::hexDigest(canon);
}

/// A hash of every file under \p dir (names and content).
std::string directoryDigest(const std::string &cacheDir,
                            const std::string &dir) {
  std::vector<std::string> files;
  for (auto &e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file())
      files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::string canon;
  for (const std::string &f : files)
    canon += fs::relative(f, dir).string() + "=" + memoDigest(cacheDir, f) +
             "\n";
  return tpuc::batch::hexDigest(canon);
}

/// Makes cache entry \p dir (a directory) with \p make(tmpDir) unless it
/// exists. Workers that need one entry at once take turns on DIR.lock
/// (flock, held while it is made), so it is made once; what a killed
/// worker leaves in its temporary directory is never renamed into place.
/// Returns true when it was made now.
bool cached(const std::string &dir,
            const std::function<void(const std::string &)> &make) {
  if (fs::is_directory(dir))
    return false;
  // Held while the entry is made (closing the file, or the worker's end,
  // releases it).
  struct Lock {
    int fd;
    ~Lock() {
      if (fd >= 0)
        close(fd);
    }
  } lock{open((dir + ".lock").c_str(), O_RDWR | O_CREAT, 0644)};
  if (lock.fd >= 0)
    flock(lock.fd, LOCK_EX);
  if (fs::is_directory(dir))
    return false;
  // Holding the lock, any DIR.tmpPID left is a killed worker's.
  std::error_code ec;
  std::string stem = fs::path(dir).filename().string() + ".tmp";
  for (auto &e : fs::directory_iterator(fs::path(dir).parent_path(), ec))
    if (e.path().filename().string().rfind(stem, 0) == 0)
      fs::remove_all(e.path(), ec);
  std::string tmp = dir + ".tmp" + std::to_string(getpid());
  fs::create_directories(tmp);
  make(tmp);
  fs::rename(tmp, dir, ec);
  if (ec)
    fs::remove_all(tmp, ec);
  return true;
}

/// Calls a tpuc subcommand in this (worker) process.
void subcommand(const std::vector<std::string> &args) {
  llvm::outs() << "$ tpuc";
  for (const std::string &a : args)
    llvm::outs() << " " << a;
  llvm::outs() << "\n";
  llvm::outs().flush();
  int rc = tpuc::cli::runInProcess(args);
  llvm::outs().flush();
  llvm::errs().flush();
  if (rc != 0)
    throw tpu::Error("tpuc " + args[0] + " failed (exit " +
                     std::to_string(rc) + ")");
}

//===----------------------------------------------------------------------===//
// One case (in a worker process)
//===----------------------------------------------------------------------===//

struct Context {
  std::string cacheDir, toolchain;
};

/// The outputs of the tpu module \p module on \p inputPath, by name.
tpu::npz::Npz interpretOutputs(mlir::ModuleOp module,
                               const std::string &inputPath) {
  tpu::npz::Npz inputs = tpu::npz::readNpz(inputPath);
  tpuc::ModuleInterpreter interpreter(module);
  tpuc::tool::setInputs(interpreter, inputs, inputPath);
  if (mlir::failed(interpreter.run()))
    throw tpu::Error("interpreting the tpu module failed");
  tpu::npz::Npz out;
  for (const std::string &name : interpreter.outputNames())
    out.set(name, tpu::npz::Array::from<float>(interpreter.shape(name),
                                               interpreter.tensor(name)));
  return out;
}

std::string key16(const std::string &canon) {
  return tpuc::batch::hexDigest(canon).substr(0, 16);
}

/// A figure as the JSON result holds it: a number, or, as JSON has no
/// infinities, the text "inf" / "-inf" (an output equal to its reference,
/// one holding nothing of it; SQNR), "nan" for a NaN.
json figureJson(double v) {
  if (std::isfinite(v))
    return v;
  return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
}

/// figureJson's value back.
double figureValue(const json &v) {
  if (v.is_number())
    return v.get<double>();
  std::string s = v.is_string() ? v.get<std::string>() : "nan";
  return s == "inf" ? INFINITY : s == "-inf" ? -INFINITY : NAN;
}

/// One output's figures over the samples: the worst of each.
struct Figures {
  bool compared = false, exactKnown = false, exact = true;
  double cosine = 2, euclid = 2, sqnr = INFINITY, maxAbsError = 0;
  json toJson(const std::string &name, size_t samples) const {
    json o = {{"name", name}};
    if (samples > 1)
      o["samples"] = samples;
    if (compared) {
      o["cosine"] = cosine;
      o["euclid"] = euclid;
      o["sqnr_db"] = figureJson(sqnr);
      o["max_abs_error"] = maxAbsError;
    }
    if (exactKnown)
      o["bit_exact"] = exact;
    return o;
  }
};

/// Checks one sample's outputs \p actual against \p ref (similarity, the
/// case's minimums) and \p tpu (bit for bit); either may be null. Folds
/// the figures into \p figures (outputs in \p names' order) and adds each
/// failure to \p reasons, \p sample appended.
void checkOutputs(const Case &c, const tpu::npz::Npz &actual,
                  const tpu::npz::Npz *ref, const tpu::npz::Npz *tpu,
                  const std::string &sample, std::vector<std::string> &names,
                  std::map<std::string, Figures> &figures, json &reasons) {
  auto failed = [&](const std::string &what) {
    reasons.push_back(what + sample);
  };
  for (const std::string &name : actual.names()) {
    if (!figures.count(name))
      names.push_back(name);
    Figures &f = figures[name];
    const tpu::npz::Array &a = actual.get(name);
    std::vector<double> av = a.toDouble();
    if (ref) {
      const tpu::npz::Array *b = ref->find(name);
      if (!b) {
        failed("output " + name + " is not in the reference");
      } else if (!tpuc::sameLayout(a.shape, b->shape)) {
        failed("output " + name + ": shape differs from the reference's");
      } else {
        tpuc::Similarity sm = tpuc::computeSimilarity(av, b->toDouble());
        f.compared = true;
        f.cosine = std::min(f.cosine, sm.cosine);
        f.euclid = std::min(f.euclid, sm.euclidean);
        f.sqnr = std::min(f.sqnr, sm.sqnrDb);
        f.maxAbsError = std::max(f.maxAbsError, sm.maxAbsError);
        char buf[160];
        // Which side holds the inf / NaN: the output's own (a model that
        // overflows) or the reference's (a bad reference file).
        if (sm.nonFiniteInActual)
          failed("output " + name + ": " +
                 std::to_string(sm.nonFiniteInActual) +
                 " inf/NaN where the reference holds another value");
        if (sm.nonFiniteInReference)
          failed("output " + name + ": the reference holds " +
                 std::to_string(sm.nonFiniteInReference) +
                 " inf/NaN where the output holds another value");
        if (c.cosine && !(sm.cosine >= *c.cosine)) {
          std::snprintf(buf, sizeof buf, "output %s: cosine %.6f < %g",
                        name.c_str(), sm.cosine, *c.cosine);
          failed(buf);
        }
        if (c.euclid && !(sm.euclidean >= *c.euclid)) {
          std::snprintf(buf, sizeof buf, "output %s: euclid %.6f < %g",
                        name.c_str(), sm.euclidean, *c.euclid);
          failed(buf);
        }
        if (c.sqnr && !(sm.sqnrDb >= *c.sqnr)) {
          std::snprintf(buf, sizeof buf, "output %s: SQNR %.2f dB < %g dB",
                        name.c_str(), sm.sqnrDb, *c.sqnr);
          failed(buf);
        }
      }
    }
    if (tpu) {
      const tpu::npz::Array *b = tpu->find(name);
      bool same = b && a.shape == b->shape;
      size_t differ = 0;
      if (same) {
        std::vector<double> bv = b->toDouble();
        for (size_t i = 0; i < av.size(); ++i)
          differ += !(av[i] == bv[i] ||
                      (std::isnan(av[i]) && std::isnan(bv[i])));
      }
      f.exactKnown = true;
      f.exact = f.exact && same && differ == 0;
      if (!b)
        failed("output " + name + " is not among the tpu interpreter's");
      else if (!same)
        failed("output " + name + ": shape differs from the tpu interpreter's");
      else if (differ)
        failed("output " + name + ": not bit-exact against the tpu "
               "interpreter (" + std::to_string(differ) + " of " +
               std::to_string(av.size()) + " values differ)");
    }
  }
}

/// The line runCase logs as it enters a step (lastStep finds it).
const std::string kStepLine = std::string(tpuc::batch::kLogMarker) + "step ";

/// The step whose line is the last of the log at \p path: where a case
/// that was killed or crashed was. Empty when there is none.
std::string lastStep(const std::string &path) {
  std::ifstream in(path);
  std::string line, step;
  while (std::getline(in, line))
    if (line.rfind(kStepLine, 0) == 0)
      step = line.substr(kStepLine.size());
  return step;
}

/// Runs one case into \p rec; \p step names the step it is in (transform,
/// reference, onnxruntime, calibrate, compile, simulate, compare), which it
/// also logs, for the message of a case that fails.
void runCase(const Run &run, const Context &ctx, json &rec, std::string &step) {
  const Case &c = *run.c;
  double cpu0 = tpuc::batch::cpuSeconds();
  json steps = json::array();
  auto enter = [&](const char *name) {
    step = name;
    llvm::outs() << kStepLine << name << "\n";
    llvm::outs().flush();
  };
  // 1. The top module.
  std::string top = c.model, topDigest;
  if (c.kind == "onnx" || c.kind == "tflite") {
    enter("transform");
    std::string key = key16("transform\n" + ctx.toolchain + "\n" +
                            memoDigest(ctx.cacheDir, c.model) + "\n" +
                            c.inputShapes);
    std::string dir = ctx.cacheDir + "/top-" + key;
    bool made = cached(dir, [&](const std::string &tmp) {
      std::vector<std::string> args = {"transform", c.model, "-o",
                                       tmp + "/model_top.mlir"};
      if (!c.inputShapes.empty())
        args.insert(args.end(), {"--input-shapes", c.inputShapes});
      subcommand(args);
    });
    steps.push_back({{"transform", made ? "made" : "cached"}});
    top = dir + "/model_top.mlir";
    topDigest = key;
  } else if (c.kind == "mlir")
    topDigest = moduleDigest(ctx.cacheDir, c.model);
  std::string inputDigest =
      c.input.empty()             ? ""
      : fs::is_directory(c.input) ? directoryDigest(ctx.cacheDir, c.input)
                                  : memoDigest(ctx.cacheDir, c.input);
  auto sampleFile = [](const std::string &dir, const char *stem, size_t k) {
    return dir + "/" + stem + "_" + std::to_string(k) + ".npz";
  };
  // 2. The reference.
  // One reference per sample (a given reference: the one sample's).
  std::vector<std::string> references;
  if (!c.reference.empty())
    references = {c.reference};
  if (c.referenceTop) {
    enter("reference");
    std::string dir =
        ctx.cacheDir + "/ref-" +
        key16("reference\n" + ctx.toolchain + "\n" + topDigest + "\n" +
              inputDigest);
    bool made = cached(dir, [&](const std::string &tmp) {
      for (size_t k = 0; k < c.samples.size(); ++k)
        subcommand({"run", top, "-i", c.samples[k], "-o",
                    sampleFile(tmp, "reference", k)});
    });
    steps.push_back({{"reference", made ? "made" : "cached"}});
    for (size_t k = 0; k < c.samples.size(); ++k)
      references.push_back(sampleFile(dir, "reference", k));
  } else if (!c.ortRun.empty()) {
    enter("onnxruntime");
    // ONNX Runtime's outputs do not depend on this toolchain.
    std::string dir = ctx.cacheDir + "/ort-" +
                      key16("onnxruntime\n" + memoDigest(ctx.cacheDir, c.model) +
                            "\n" + inputDigest);
    bool made = cached(dir, [&](const std::string &tmp) {
      for (size_t k = 0; k < c.samples.size(); ++k)
        runProgram({"node", c.ortRun, c.model, c.samples[k],
                    sampleFile(tmp, "reference", k)});
    });
    steps.push_back({{"onnxruntime", made ? "made" : "cached"}});
    for (size_t k = 0; k < c.samples.size(); ++k)
      references.push_back(sampleFile(dir, "reference", k));
  }
  // 3. The calibration table.
  std::string cali = c.cali;
  if (c.calibrates(run.mode) && !c.dataset.empty()) {
    enter("calibrate");
    std::string dir = ctx.cacheDir + "/cali-" +
                      key16("calibrate\n" + ctx.toolchain + "\n" + topDigest +
                            "\n" + directoryDigest(ctx.cacheDir, c.dataset) + "\n" +
                            c.caliNum + "\n" + c.caliMethod + "\n" +
                            c.caliTune);
    bool made = cached(dir, [&](const std::string &tmp) {
      std::vector<std::string> args = {"calibrate", top, "--dataset",
                                       c.dataset, "--input-num", c.caliNum,
                                       "-o", tmp + "/cali.table"};
      if (!c.caliMethod.empty())
        args.insert(args.end(), {"--method", c.caliMethod});
      if (!c.caliTune.empty())
        args.insert(args.end(), {"--tune-num", c.caliTune});
      subcommand(args);
    });
    steps.push_back({{"calibrate", made ? "made" : "cached"}});
    cali = dir + "/cali.table";
  }
  // 4. The bmodel.
  std::string bmodel = c.model, opsPath;
  std::vector<std::string> tpuOutputs; // per sample, for bit_exact
  bool compiled = false;
  double compileCpu = 0;
  if (c.kind == "bmodel") {
    opsPath = c.model.substr(0, c.model.size() - 7) + "_ops.json";
    if (!fs::is_regular_file(opsPath))
      opsPath.clear();
  } else {
    enter("compile");
    std::vector<std::pair<std::string, std::string>> params = {
        {"quantize", run.mode}};
    for (auto &kv : c.knobs)
      params.push_back(kv);
    std::vector<std::pair<std::string, std::string>> machine = c.machine;
    std::sort(machine.begin(), machine.end());
    for (auto &kv : machine)
      params.push_back(kv);
    std::string canon = "compile\n" + ctx.toolchain + "\n" + topDigest + "\n";
    // The options in a fixed order: the knobs (defaults filled in), the
    // machine keys sorted.
    for (auto &[k, def] : tpuc::batch::kCompileKnobs) {
      std::string v = def;
      for (auto &[kk, vv] : params)
        if (kk == k)
          v = vv;
      canon += k + "=" + v + "\n";
    }
    for (auto &[k, v] : machine)
      canon += k + "=" + v + "\n";
    if (c.calibrates(run.mode)) // the other modes do not read the table
      canon += "cali=" + tpuc::batch::fileDigest(cali) + "\n";
    if (!c.qtable.empty())
      canon += "qtable=" + tpuc::batch::fileDigest(c.qtable) + "\n";
    if (c.bitExact)
      canon += "tpu-outputs-of=" + inputDigest + "\n";
    std::string dir = ctx.cacheDir + "/bm-" + key16(canon);
    compiled = cached(dir, [&](const std::string &tmp) {
      double t0 = tpuc::batch::cpuSeconds();
      tpuc::batch::CompileJob job;
      job.model = top;
      job.params = params;
      job.cali = c.calibrates(run.mode) ? cali : "";
      job.qtable = c.qtable;
      if (c.bitExact)
        job.hooks.afterCodegen = [&](mlir::ModuleOp module) {
          for (size_t k = 0; k < c.samples.size(); ++k)
            tpu::npz::writeNpz(sampleFile(tmp, "tpu_outputs", k),
                               interpretOutputs(module, c.samples[k]),
                               /*compress=*/false);
          return std::string();
        };
      tpuc::deploy::PipelineResult r;
      tpuc::batch::compileInMemory(job, r);
      tpu::isa::bmodel::writeModel(r.model, tmp + "/model.bmodel");
      tpu::isa::writeOpMap(r.summary.opMap, tmp + "/model_ops.json");
      json info = {{"layer_groups", r.groups.size()},
                   {"command_groups", r.summary.numGroups},
                   {"tiu_commands", r.summary.numTiu},
                   {"gdma_commands", r.summary.numGdma},
                   {"coeff_bytes", r.summary.coeffBytes},
                   {"neuron_bytes", r.summary.neuronBytes},
                   {"float_ops", r.floatOps},
                   {"compile_cpu_seconds", tpuc::batch::cpuSeconds() - t0}};
      tpuc::batch::writeText(tmp + "/compile.json", info.dump(1) + "\n");
    });
    steps.push_back({{"compile", compiled ? "made" : "cached"}});
    bmodel = dir + "/model.bmodel";
    opsPath = dir + "/model_ops.json";
    if (c.bitExact)
      for (size_t k = 0; k < c.samples.size(); ++k)
        tpuOutputs.push_back(sampleFile(dir, "tpu_outputs", k));
    std::ifstream info(dir + "/compile.json");
    rec["compile"] = json::parse(info);
    if (compiled)
      compileCpu = rec["compile"].value("compile_cpu_seconds", 0.0);
  }
  rec["bmodel"] = bmodel;
  if (c.kind != "bmodel")
    rec["compiled"] = compiled;
  rec["steps"] = steps;
  double cpu1 = tpuc::batch::cpuSeconds();
  // 5. Simulate.
  enter("simulate");
  tpu::isa::bmodel::Model model = tpu::isa::bmodel::readModel(bmodel);
  tpu::sim::SimConfig cfg =
      tpu::sim::recordedConfig(model, tpu::sim::SimConfig::defaults());
  // A compiled case records its machine keys; a ready bmodel's case gives
  // them to the simulator (tpusim run -p).
  for (auto &[k, v] : c.machine)
    cfg.set(k, v);
  cfg.validate();
  tpu::sim::SimMode mode =
      c.input.empty() ? tpu::sim::SimMode::Timing : tpu::sim::SimMode::Full;
  tpu::sim::ModelRunner runner(model, cfg, mode);
  auto setInputs = [&](tpu::sim::ModelRunner &r, const std::string &path) {
    tpu::npz::Npz inputs = tpu::npz::readNpz(path);
    inputs.setSource(path);
    r.setInputs(inputs);
  };
  if (!c.samples.empty())
    setInputs(runner, c.samples[0]);
  std::optional<tpu::isa::OpMap> opMap;
  if (!opsPath.empty()) {
    opMap = tpu::isa::readOpMap(opsPath);
    tpu::isa::checkOpMap(*opMap, runner.stage(), opsPath);
  }
  runner.simulator().setTracing(bool(opMap));
  runner.run();
  const tpu::sim::Simulator &sim = runner.simulator();
  const tpu::sim::SimStats &s = sim.stats();
  json stats = s.toJson(cfg);
  if (opMap)
    stats["ops"] = tpu::sim::opProfileToJson(
        tpu::sim::profileOps(sim.trace(), *opMap, s.cycles, cfg));
  rec["sim_mode"] = tpu::sim::simModeName(mode);
  rec["metrics"] = {{"cycles", s.cycles},
                    {"time_us", s.timeUs},
                    {"ddr_bytes", s.ddrReadBytes + s.ddrWriteBytes},
                    {"ddr_read_bytes", s.ddrReadBytes},
                    {"ddr_write_bytes", s.ddrWriteBytes},
                    {"mac_utilisation", s.macUtilisation}};
  rec["stats"] = stats; // of the first sample (timing does not depend on
                        // the values)
  double cpu2 = tpuc::batch::cpuSeconds();
  // 6. Accuracy, sample by sample (the first sample's run above; each
  // other sample simulated in full mode here).
  enter("compare");
  json reasons = json::array();
  std::vector<std::string> names;
  std::map<std::string, Figures> figures;
  for (size_t k = 0; k < c.samples.size(); ++k) {
    tpu::npz::Npz actual;
    if (k == 0)
      actual = runner.outputs();
    else {
      tpu::sim::ModelRunner other(model, cfg, tpu::sim::SimMode::Full);
      setInputs(other, c.samples[k]);
      other.run();
      actual = other.outputs();
    }
    std::optional<tpu::npz::Npz> ref, tpu;
    if (k < references.size())
      ref = tpu::npz::readNpz(references[k]);
    if (k < tpuOutputs.size())
      tpu = tpu::npz::readNpz(tpuOutputs[k]);
    std::string sample =
        c.samples.size() > 1
            ? " (sample " + fs::path(c.samples[k]).filename().string() + ")"
            : "";
    checkOutputs(c, actual, ref ? &*ref : nullptr, tpu ? &*tpu : nullptr,
                 sample, names, figures, reasons);
  }
  json outputs = json::array();
  for (const std::string &name : names)
    outputs.push_back(figures[name].toJson(name, c.samples.size()));
  rec["outputs"] = outputs;
  rec["accuracy_failures"] = reasons;
  rec["status"] = "ok";
  rec["cpu_seconds"] = {{"prepare", cpu1 - cpu0 - compileCpu},
                        {"compile", compileCpu},
                        {"simulate", cpu2 - cpu1},
                        {"compare", tpuc::batch::cpuSeconds() - cpu2}};
}

//===----------------------------------------------------------------------===//
// Baselines
//===----------------------------------------------------------------------===//

struct Perf {
  uint64_t cycles = 0, ddrBytes = 0;
  /// As the baseline stores them (asStored); time 0 in a baseline written
  /// before it held the time (not compared).
  double timeUs = 0, macUtilisation = 0;
  std::vector<std::pair<std::string, uint64_t>> ops; ///< program order
};

/// A fraction (time, MAC utilisation) as the baseline writes it: 9
/// significant digits.
std::string storedText(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

/// The value of storedText(v), so that a run compares with the baseline it
/// just wrote as equal.
double asStored(double v) {
  return std::strtod(storedText(v).c_str(), nullptr);
}

/// The baseline file: blocks "case ID" followed by indented "cycles N",
/// "time_us X" (simulated time: the cycles alone miss a change of clock),
/// "ddr_bytes N", "mac_utilisation X" and "op NAME CYCLES".
std::map<std::string, Perf> readBaseline(const std::string &path) {
  std::map<std::string, Perf> out;
  std::ifstream in(path);
  if (!in)
    return out;
  std::string text, id;
  int line = 0;
  auto bad = [&](const std::string &m) {
    return tpu::Error(path + ":" + std::to_string(line) + ": " + m);
  };
  while (std::getline(in, text)) {
    ++line;
    std::string s = tpuc::batch::trim(text);
    if (s.empty() || s[0] == '#')
      continue;
    size_t sp = s.find(' ');
    std::string word = s.substr(0, sp);
    std::string rest =
        sp == std::string::npos ? "" : tpuc::batch::trim(s.substr(sp + 1));
    if (word == "case") {
      id = rest;
      if (id.empty() || out.count(id))
        throw bad("case '" + id + "' empty or given twice");
      out[id];
      continue;
    }
    if (id.empty())
      throw bad("'" + word + "' before the first 'case ID' line");
    Perf &p = out[id];
    char *end = nullptr;
    if (word == "op") {
      size_t last = rest.rfind(' ');
      if (last == std::string::npos)
        throw bad("expected 'op NAME CYCLES'");
      std::string name = tpuc::batch::trim(rest.substr(0, last));
      std::string v = rest.substr(last + 1);
      uint64_t n = std::strtoull(v.c_str(), &end, 10);
      if (*end)
        throw bad("op cycles '" + v + "' is not an integer");
      p.ops.push_back({name, n});
      continue;
    }
    double v = std::strtod(rest.c_str(), &end);
    if (rest.empty() || *end)
      throw bad(word + " '" + rest + "' is not a number");
    if (word == "cycles")
      p.cycles = uint64_t(v);
    else if (word == "time_us")
      p.timeUs = v;
    else if (word == "ddr_bytes")
      p.ddrBytes = uint64_t(v);
    else if (word == "mac_utilisation")
      p.macUtilisation = v;
    else
      throw bad("unknown baseline field '" + word +
                "' (cycles, time_us, ddr_bytes, mac_utilisation, op)");
  }
  return out;
}

Perf perfOf(const json &rec) {
  Perf p;
  const json &m = rec["metrics"];
  p.cycles = m["cycles"].get<uint64_t>();
  p.ddrBytes = m["ddr_bytes"].get<uint64_t>();
  p.timeUs = asStored(m["time_us"].get<double>());
  p.macUtilisation = asStored(m["mac_utilisation"].get<double>());
  if (rec["stats"].contains("ops"))
    for (const json &o : rec["stats"]["ops"])
      p.ops.push_back({o["name"].get<std::string>(),
                       o["cycles"].get<uint64_t>()});
  return p;
}

std::string formatBlock(const std::string &id, const Perf &p) {
  std::string s = "case " + id + "\n";
  s += "  cycles " + std::to_string(p.cycles) + "\n";
  s += "  time_us " + storedText(p.timeUs) + "\n";
  s += "  ddr_bytes " + std::to_string(p.ddrBytes) + "\n";
  s += "  mac_utilisation " + storedText(p.macUtilisation) + "\n";
  for (auto &[name, cycles] : p.ops)
    s += "  op " + name + " " + std::to_string(cycles) + "\n";
  return s;
}

//===----------------------------------------------------------------------===//
// Verdicts and reports
//===----------------------------------------------------------------------===//

double percent(double now, double before) {
  return before == 0 ? (now == 0 ? 0 : 100) : (now - before) / before * 100;
}

/// The ops against the baseline's, matched by name: those whose cycles
/// moved most (largest first, `top` of them), and how many are new and
/// gone (when some are, the compiler grouped the layers otherwise and a
/// group of one name may hold other layers than the baseline's).
struct OpDiff {
  json moved;
  size_t added = 0, gone = 0;
};
OpDiff opDiff(const Perf &now, const Perf &before, size_t top) {
  OpDiff diff;
  std::map<std::string, uint64_t> old(before.ops.begin(), before.ops.end());
  std::set<std::string> seen;
  std::vector<json> moved;
  for (auto &[name, cycles] : now.ops) {
    seen.insert(name);
    auto it = old.find(name);
    diff.added += it == old.end();
    int64_t b = it == old.end() ? 0 : int64_t(it->second);
    int64_t d = int64_t(cycles) - b;
    if (d != 0 || it == old.end())
      moved.push_back({{"op", name},
                       {"baseline", it == old.end() ? json() : json(b)},
                       {"cycles", cycles},
                       {"delta", d}});
  }
  for (auto &[name, cycles] : before.ops) {
    if (seen.count(name))
      continue;
    ++diff.gone;
    moved.push_back({{"op", name},
                     {"baseline", cycles},
                     {"cycles", json()},
                     {"delta", -int64_t(cycles)}});
  }
  // Largest move first; ties in program order (the order built above).
  for (size_t i = 0; i < moved.size(); ++i)
    moved[i]["order"] = i;
  std::sort(moved.begin(), moved.end(), [](const json &a, const json &b) {
    int64_t da = std::llabs(a["delta"].get<int64_t>());
    int64_t db = std::llabs(b["delta"].get<int64_t>());
    return da != db ? da > db : a["order"] < b["order"];
  });
  for (json &m : moved)
    m.erase("order");
  if (moved.size() > top)
    moved.resize(top);
  diff.moved = std::move(moved);
  return diff;
}

std::string describeOp(const json &d) {
  char buf[256];
  if (d["baseline"].is_null())
    std::snprintf(buf, sizeof buf, "%s new (%llu cycles)",
                  d["op"].get<std::string>().c_str(),
                  (unsigned long long)d["cycles"].get<uint64_t>());
  else if (d["cycles"].is_null())
    std::snprintf(buf, sizeof buf, "%s gone (was %llu cycles)",
                  d["op"].get<std::string>().c_str(),
                  (unsigned long long)d["baseline"].get<uint64_t>());
  else
    std::snprintf(buf, sizeof buf, "%s %+lld cycles (%+.1f %%)",
                  d["op"].get<std::string>().c_str(),
                  (long long)d["delta"].get<int64_t>(),
                  percent(double(d["cycles"].get<uint64_t>()),
                          double(d["baseline"].get<uint64_t>())));
  return buf;
}

/// Adds "verdict" (pass, fail, error), "reasons" and "baseline" to each
/// record.
void judge(std::vector<json> &records, const std::vector<Run> &runs,
           const std::map<std::string, Perf> &baseline, bool updating) {
  std::map<std::string, const Run *> byId;
  for (const Run &r : runs)
    byId[r.id] = &r;
  for (json &rec : records) {
    std::string id = rec["id"];
    json reasons = json::array(), notes = json::array();
    if (rec.value("status", "") != "ok") {
      rec["verdict"] = "error";
      reasons.push_back(rec.value("reason", std::string("failed")));
      rec["reasons"] = reasons;
      continue;
    }
    for (const json &r : rec["accuracy_failures"])
      reasons.push_back(r);
    double drift = byId.count(id) ? byId[id]->drift : 0;
    rec["drift_percent"] = drift;
    auto it = baseline.find(id);
    if (it == baseline.end()) {
      rec["baseline"] = nullptr;
      if (!updating)
        reasons.push_back("no baseline for this case (tpuc regress "
                          "--update-baseline writes it)");
    } else {
      const Perf &b = it->second;
      Perf now = perfOf(rec);
      OpDiff ops = opDiff(now, b, 5);
      const json &diff = ops.moved;
      rec["baseline"] = {
          {"cycles", b.cycles},
          // A baseline from before time_us: no time, none compared.
          {"time_us", b.timeUs > 0 ? json(b.timeUs) : json()},
          {"ddr_bytes", b.ddrBytes},
          {"mac_utilisation", b.macUtilisation},
          {"cycles_percent", percent(now.cycles, b.cycles)},
          {"time_percent",
           b.timeUs > 0 ? json(percent(now.timeUs, b.timeUs)) : json()},
          {"ddr_bytes_percent", percent(now.ddrBytes, b.ddrBytes)},
          {"mac_utilisation_percent",
           percent(now.macUtilisation, b.macUtilisation)},
          {"ops_moved_most", diff},
          {"ops_new", ops.added},
          {"ops_gone", ops.gone}};
      if (!updating) {
        char buf[256];
        std::string most;
        for (size_t i = 0; i < diff.size() && i < 3; ++i)
          most += (i ? ", " : "") + describeOp(diff[i]);
        // A regression: more cycles, time or DDR bytes, less MAC
        // utilisation. The time, because fewer cycles of a slower clock
        // can take longer.
        auto check = [&](const char *what, double now, double before,
                         double sign, const std::string &more) {
          double d = percent(now, before);
          if (std::abs(d) <= drift || before == 0)
            return;
          if (sign * d < 0) { // better than the baseline: passes, noted
            std::snprintf(buf, sizeof buf,
                          "%s %.9g vs baseline %.9g (%+.2f %%): better than "
                          "the baseline (--update-baseline records it)",
                          what, now, before, d);
            notes.push_back(buf);
            return;
          }
          std::snprintf(buf, sizeof buf,
                        "%s %.9g vs baseline %.9g (%+.2f %%, allowed %s%g %%)",
                        what, now, before, d, sign < 0 ? "-" : "", drift);
          reasons.push_back(buf + more);
        };
        check("cycles", double(now.cycles), double(b.cycles), 1,
              most.empty() ? "" : "; moved most: " + most);
        check("time (us)", now.timeUs, b.timeUs, 1, "");
        check("DDR bytes", double(now.ddrBytes), double(b.ddrBytes), 1, "");
        check("MAC utilisation", now.macUtilisation, b.macUtilisation, -1,
              "");
      }
    }
    rec["reasons"] = reasons;
    rec["notes"] = notes;
    rec["verdict"] = reasons.empty() ? "pass" : "fail";
  }
}

std::string xmlEscape(const std::string &s) {
  std::string out;
  for (unsigned char ch : s) {
    switch (ch) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&apos;"; break;
    case '\n': out += "&#10;"; break;
    case '\t': out += "&#9;"; break;
    default:
      // XML 1.0 allows no other control characters.
      if (ch < 0x20 && ch != '\r')
        out += '?';
      else
        out += char(ch);
    }
  }
  return out;
}

std::string junit(const std::string &suite, const std::vector<json> &records,
                  double seconds) {
  size_t failures = 0, errors = 0;
  for (const json &r : records) {
    failures += r["verdict"] == "fail";
    errors += r["verdict"] == "error";
  }
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", std::gmtime(&now));
  auto num = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3f", v);
    return std::string(b);
  };
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  std::string counts = " tests=\"" + std::to_string(records.size()) +
                       "\" failures=\"" + std::to_string(failures) +
                       "\" errors=\"" + std::to_string(errors) + "\"";
  s += "<testsuites name=\"" + xmlEscape(suite) + "\"" + counts + " time=\"" +
       num(seconds) + "\">\n";
  s += "  <testsuite name=\"" + xmlEscape(suite) + "\"" + counts +
       " skipped=\"0\" time=\"" + num(seconds) + "\" timestamp=\"" + stamp +
       "\" hostname=\"" + xmlEscape(host) + "\">\n";
  for (const json &r : records) {
    std::string id = r["id"];
    std::string cls = suite + "." + r["case"].get<std::string>();
    s += "    <testcase name=\"" + xmlEscape(id) + "\" classname=\"" +
         xmlEscape(cls) + "\" time=\"" + num(r.value("wall_seconds", 0.0)) +
         "\"";
    std::string v = r["verdict"];
    if (v == "pass") {
      s += "/>\n";
      continue;
    }
    std::string all;
    for (const json &why : r["reasons"])
      all += why.get<std::string>() + "\n";
    std::string first = r["reasons"].empty()
                            ? std::string("failed")
                            : r["reasons"][0].get<std::string>();
    std::string tag = v == "error" ? "error" : "failure";
    s += ">\n      <" + tag + " message=\"" + xmlEscape(first) +
         "\" type=\"" + (v == "error" ? "CaseError" : "Regression") + "\">" +
         xmlEscape(all) + "</" + tag + ">\n";
    if (r.contains("log"))
      s += "      <system-out>" + xmlEscape("log: " + r["log"].get<std::string>()) +
           "</system-out>\n";
    s += "    </testcase>\n";
  }
  s += "  </testsuite>\n</testsuites>\n";
  return s;
}

std::string accuracyText(const json &r) {
  if (!r.contains("outputs") || r["outputs"].empty())
    return "-";
  double cos = 2, euc = 2, sq = INFINITY;
  bool any = false, exactKnown = false, exact = true;
  for (const json &o : r["outputs"]) {
    if (o.contains("cosine")) {
      any = true;
      cos = std::min(cos, o["cosine"].get<double>());
      euc = std::min(euc, o["euclid"].get<double>());
      // A NaN figure (none is made today) shows as the worst.
      double v = figureValue(o["sqnr_db"]);
      sq = std::isnan(v) ? -INFINITY : std::min(sq, v);
    }
    if (o.contains("bit_exact")) {
      exactKnown = true;
      exact = exact && o["bit_exact"].get<bool>();
    }
  }
  char buf[128] = "";
  if (any) {
    // %.1f prints infinities as "inf" / "-inf".
    std::snprintf(buf, sizeof buf, "cos %.5f euc %.4f %.1f dB", cos, euc, sq);
  }
  std::string s = buf;
  if (exactKnown)
    s += std::string(s.empty() ? "" : ", ") + (exact ? "bit-exact" : "NOT exact");
  return s.empty() ? "-" : s;
}

std::string table(const std::vector<json> &records) {
  std::vector<std::vector<std::string>> rows = {
      {"case", "mode", "accuracy", "cycles", "baseline", "change", "verdict"}};
  for (const json &r : records) {
    std::string mode = r.value("mode", "");
    std::vector<std::string> row = {r["case"], mode.empty() ? "-" : mode,
                                    accuracyText(r)};
    if (r.contains("metrics")) {
      row.push_back(std::to_string(r["metrics"]["cycles"].get<uint64_t>()));
      if (r.contains("baseline") && r["baseline"].is_object()) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%+.2f %%",
                      r["baseline"]["cycles_percent"].get<double>());
        row.push_back(
            std::to_string(r["baseline"]["cycles"].get<uint64_t>()));
        row.push_back(buf);
      } else
        row.insert(row.end(), {"-", "-"});
    } else
      row.insert(row.end(), {"-", "-", "-"});
    std::string v = r["verdict"];
    std::transform(v.begin(), v.end(), v.begin(), ::toupper);
    row.push_back(v);
    rows.push_back(row);
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (auto &row : rows)
    for (size_t i = 0; i < row.size(); ++i)
      width[i] = std::max(width[i], row[i].size());
  std::string s;
  for (size_t k = 0; k < rows.size(); ++k) {
    for (size_t i = 0; i < rows[k].size(); ++i) {
      bool right = i == 3 || i == 4 || i == 5;
      std::string pad(width[i] - rows[k][i].size(), ' ');
      s += (i ? "  " : "") + (right ? pad + rows[k][i] : rows[k][i] + pad);
    }
    while (!s.empty() && s.back() == ' ')
      s.pop_back();
    s += "\n";
  }
  // Why each case failed, and the ops that moved.
  for (const json &r : records) {
    for (const json &note : r.value("notes", json::array()))
      s += r["id"].get<std::string>() + ": NOTE: " + note.get<std::string>() +
           "\n";
    if (r["verdict"] != "pass")
      for (const json &why : r["reasons"])
        s += r["id"].get<std::string>() + ": " +
             (r["verdict"] == "error" ? "ERROR: " : "FAIL: ") +
             why.get<std::string>() + "\n";
    if (r.contains("baseline") && r["baseline"].is_object() &&
        !r["baseline"]["ops_moved_most"].empty()) {
      const json &b = r["baseline"];
      size_t opsNew = b.value("ops_new", 0), opsGone = b.value("ops_gone", 0);
      s += r["id"].get<std::string>() + ": ops moved most against the "
                                        "baseline";
      if (opsNew + opsGone)
        s += " (the ops differ from the baseline's, " + std::to_string(opsNew) +
             " new and " + std::to_string(opsGone) +
             " gone: the layers were grouped otherwise, and ops are matched "
             "by name)";
      s += ":";
      for (const json &d : r["baseline"]["ops_moved_most"])
        s += "\n    " + describeOp(d);
      s += "\n";
    }
  }
  return s;
}

struct Outputs {
  std::string dir, json, junit, baseline;
  bool updateBaseline = false;
};

/// Judges, writes the reports (and the baseline) and returns the exit
/// status.
int report(const Suite &su, const std::vector<Run> &runs,
           const std::map<std::string, Perf> &baseline,
           std::vector<json> records, const Outputs &out, double seconds,
           bool partial) {
  std::sort(records.begin(), records.end(), [](const json &a, const json &b) {
    return a["index"].get<size_t>() < b["index"].get<size_t>();
  });
  std::string baselinePath = out.baseline.empty() ? su.baseline : out.baseline;
  judge(records, runs, baseline, out.updateBaseline);
  size_t pass = 0, failed = 0, errors = 0, compiled = 0, cachedN = 0;
  for (const json &r : records) {
    pass += r["verdict"] == "pass";
    failed += r["verdict"] == "fail";
    errors += r["verdict"] == "error";
    if (r.contains("compiled"))
      (r["compiled"].get<bool>() ? compiled : cachedN) += 1;
  }
  json all = {{"suite", su.name},
              {"suite_file", su.path},
              {"baseline", baselinePath},
              {"partial", partial},
              {"summary",
               {{"cases", records.size()},
                {"passed", pass},
                {"failed", failed},
                {"errors", errors},
                {"compiled", compiled},
                {"from_cache", cachedN},
                {"wall_seconds", seconds}}},
              {"cases", records}};
  tpuc::batch::writeText(out.json, all.dump(1) + "\n");
  tpuc::batch::writeText(out.junit, junit(su.name, records, seconds));
  llvm::outs() << table(records);
  // The suite's cases: a baseline's blocks of others (renamed, removed)
  // are noted, and dropped when it is written.
  std::set<std::string> ids;
  for (const Run &r : runs)
    ids.insert(r.id);
  if (!out.updateBaseline) {
    // Not compared; said, as a renamed case would otherwise only fail for
    // want of a baseline.
    std::vector<std::string> stale;
    for (auto &[id, p] : baseline)
      if (!ids.count(id))
        stale.push_back(id);
    if (!stale.empty())
      llvm::outs() << kTool << ": note: the baseline " << baselinePath
                   << " holds " << stale.size()
                   << " case(s) the suite does not have ("
                   << tpuc::batch::listSome(stale)
                   << "); --update-baseline drops them\n";
  }
  if (out.updateBaseline) {
    // Keep the blocks of the suite's other cases (other shards).
    std::map<std::string, Perf> next;
    for (auto &[id, p] : baseline)
      if (ids.count(id))
        next[id] = p;
    for (const json &r : records)
      if (r.value("status", "") == "ok")
        next[r["id"].get<std::string>()] = perfOf(r);
    std::string text = "# tpuc regress baseline of " +
                       fs::path(su.path).filename().string() +
                       " (written by tpuc regress --update-baseline).\n"
                       "# One block per case: simulated cycles and time, "
                       "DDR bytes read + written,\n# MAC utilisation, then "
                       "each op's cycles in program order.\n";
    for (const Run &r : runs)
      if (auto it = next.find(r.id); it != next.end())
        text += "\n" + formatBlock(r.id, it->second);
    tpuc::batch::writeText(baselinePath, text);
    llvm::outs() << kTool << ": baseline " << baselinePath << " written ("
                 << next.size() << " case(s))\n";
  }
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%s: %zu case(s): %zu passed, %zu failed, %zu error(s); %zu "
                "compiled, %zu from the cache; %.1f s\n",
                kTool, records.size(), pass, failed, errors, compiled, cachedN,
                seconds);
  llvm::outs() << buf;
  llvm::outs() << kTool << ": results " << out.json << ", JUnit " << out.junit
               << "\n";
  llvm::outs().flush();
  return pass == records.size() ? 0 : 1;
}

/// What stops the run from writing its files: tpuc::tool::checkOutputPaths
/// on the results, the JUnit file and, when updating it, the baseline,
/// against each other and the suite (and the baseline it reads).
std::string checkOutputs(const Suite &su, const Outputs &out) {
  std::string baselinePath = out.baseline.empty() ? su.baseline : out.baseline;
  std::vector<tpu::isa::bmodel::NamedPath> outputs = {{"--json", out.json},
                                                      {"--junit", out.junit}};
  std::vector<tpu::isa::bmodel::NamedPath> inputs = {{"the suite", su.path}};
  (out.updateBaseline ? outputs : inputs)
      .push_back({"the baseline", baselinePath});
  return tpu::isa::bmodel::checkOutputPaths(outputs, inputs);
}

/// Creates the output directory (the default --json and --junit lie in
/// it) and checks the outputs (checkOutputs); on a refusal removes the
/// directories it made, so that nothing is left behind.
std::string makeOutputDirectory(const Suite &su, const Outputs &out) {
  std::error_code ec;
  fs::path top; // the outermost directory made now
  for (fs::path p = fs::absolute(out.dir, ec).lexically_normal();
       !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    top = p;
    if (p == p.parent_path())
      break;
  }
  tpuc::batch::createDirectory(out.dir);
  std::string e = checkOutputs(su, out);
  if (!e.empty() && !top.empty())
    fs::remove_all(top, ec);
  return e;
}

json baseRecord(const Run &r) {
  return json{{"index", r.index},
              {"id", r.id},
              {"case", r.c->name},
              {"mode", r.mode},
              {"model", r.c->model}};
}

int runSuite(const std::string &suitePath, Outputs out,
             const std::string &cacheArg, unsigned jobs,
             tpuc::batch::Shard shard) {
  auto start = std::chrono::steady_clock::now();
  Suite su = readSuite(suitePath);
  std::vector<Run> runs = enumerate(su);
  // A bad baseline, too, fails before any case runs.
  std::map<std::string, Perf> baseline =
      readBaseline(out.baseline.empty() ? su.baseline : out.baseline);
  std::vector<const Run *> mine;
  for (const Run &r : runs)
    if (shard.mine(r.index))
      mine.push_back(&r);
  if (std::string e = makeOutputDirectory(su, out); !e.empty())
    return fail(e + "; nothing run");
  tpuc::batch::createDirectory(out.dir + "/logs");
  Context ctx;
  const char *envCache = std::getenv("TPUC_REGRESS_CACHE");
  ctx.cacheDir = !cacheArg.empty() ? cacheArg
                 : envCache        ? std::string(envCache)
                                   : out.dir + "/cache";
  tpuc::batch::createDirectory(ctx.cacheDir);
  ctx.cacheDir = fs::absolute(ctx.cacheDir).lexically_normal().string();
  ctx.toolchain = toolchainId(ctx.cacheDir);
  std::vector<json> records;
  tpuc::batch::Progress progress("cases", mine.size(), 0);
  progress.update();
  auto logPath = [&](size_t i) {
    std::string id = mine[i]->id;
    std::replace(id.begin(), id.end(), '/', '.');
    return out.dir + "/logs/" + id + ".log";
  };
  tpuc::batch::PoolOptions pool;
  pool.jobs = jobs;
  pool.timeoutSeconds = [&](size_t i) { return mine[i]->timeout; };
  tpuc::batch::runPool(
      mine.size(), pool, logPath,
      [&](size_t i, json &rec) {
        rec = baseRecord(*mine[i]);
        auto t0 = std::chrono::steady_clock::now();
        // The case's time, whether it ran or failed.
        auto timed = [&] {
          rec["wall_seconds"] = std::chrono::duration<double>(
                                    std::chrono::steady_clock::now() - t0)
                                    .count();
        };
        std::string step;
        try {
          runCase(*mine[i], ctx, rec, step);
        } catch (const std::exception &e) {
          timed();
          // The reason says where it stopped.
          throw tpu::Error(step.empty() ? e.what() : step + ": " + e.what());
        }
        timed();
      },
      [&](size_t i, json &&rec, const std::string &failure) {
        if (!failure.empty()) {
          // Killed or crashed: the pool's time, the step from the log.
          json wall = rec.value("wall_seconds", json());
          std::string step = lastStep(logPath(i));
          rec = baseRecord(*mine[i]);
          rec["status"] = "failed";
          rec["reason"] = step.empty() ? failure : step + ": " + failure;
          if (!wall.is_null())
            rec["wall_seconds"] = wall;
        }
        rec["log"] = logPath(i);
        if (rec["status"] != "ok")
          ++progress.failed;
        ++progress.done;
        records.push_back(rec);
        progress.update();
      });
  progress.finish();
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  return report(su, runs, baseline, records, out, seconds, shard.count > 1);
}

int runMerge(const std::vector<std::string> &dirs, const std::string &suitePath,
             const Outputs &out) {
  Suite su = readSuite(suitePath);
  std::vector<Run> runs = enumerate(su);
  std::map<std::string, Perf> baseline =
      readBaseline(out.baseline.empty() ? su.baseline : out.baseline);
  std::map<std::string, std::pair<json, std::string>> byId;
  double seconds = 0;
  for (const std::string &d : dirs) {
    std::string path = d + "/results.json";
    std::ifstream in(path);
    if (!in)
      return fail(d + ": no results.json");
    json j;
    try {
      j = json::parse(in);
    } catch (const std::exception &e) {
      return fail(path + ": " + e.what());
    }
    if (!j.contains("cases") || !j["cases"].is_array())
      return fail(path + ": no \"cases\" array");
    seconds = std::max(seconds, j["summary"].value("wall_seconds", 0.0));
    for (json &r : j["cases"]) {
      std::string id = r["id"];
      if (auto it = byId.find(id); it != byId.end())
        return fail("case " + id + " is in both " + it->second.second +
                    " and " + d);
      for (const char *k :
           {"verdict", "reasons", "notes", "baseline", "drift_percent"})
        r.erase(k);
      byId[id] = {r, d};
    }
  }
  std::vector<std::string> missing, foreign;
  std::set<std::string> want;
  for (const Run &r : runs) {
    want.insert(r.id);
    if (!byId.count(r.id))
      missing.push_back(r.id);
  }
  for (auto &[id, rd] : byId)
    if (!want.count(id))
      foreign.push_back(id + " (from " + rd.second + ")");
  // Both at once: a wrong --suite shows as cases missing and cases foreign.
  std::string wrong;
  if (!missing.empty())
    wrong = std::to_string(missing.size()) + " of " +
            std::to_string(runs.size()) + " case(s) of " + suitePath +
            " are missing (" + tpuc::batch::listSome(missing) + ")";
  if (!foreign.empty())
    wrong += (wrong.empty() ? "" : "; ") + std::to_string(foreign.size()) +
             " case(s) of the results are not cases of " + suitePath + " (" +
             tpuc::batch::listSome(foreign) + ")";
  if (!wrong.empty())
    return fail(wrong);
  std::vector<json> records;
  for (auto &[id, rd] : byId) {
    // The index of this suite's enumeration.
    for (const Run &r : runs)
      if (r.id == id)
        rd.first["index"] = r.index;
    records.push_back(rd.first);
  }
  if (std::string e = makeOutputDirectory(su, out); !e.empty())
    return fail(e + "; nothing run");
  return report(su, runs, baseline, records, out, seconds, false);
}

} // namespace

static int runRegress() {
  tpuc::batch::CommandLine line = tpuc::batch::readCommandLine(common);
  Outputs out;
  out.dir = line.outDir;
  out.baseline = baselineArg;
  out.junit = junitArg;
  out.json = jsonArg;
  out.updateBaseline = updateBaselineArg;
  std::string suitePath = suiteArg;
  std::string cacheDir = cacheArg;
  bool merge = line.merge, check = line.check;
  std::vector<std::string> &positional = line.positional;
  if (merge) {
    if (positional.empty())
      return fail("merge needs result directories");
    if (suitePath.empty())
      return fail("merge needs --suite SUITE.toml (its cases, drifts and "
                  "baseline)");
  } else {
    if (positional.size() != 1)
      return fail("expected one SUITE.toml (see tpuc regress --help)");
    suitePath = positional[0];
  }
  if (check) {
    tpuc::batch::refuseWithCheck(
        {&updateBaselineArg, &baselineArg, &junitArg, &jsonArg, &cacheArg});
    Suite su = readSuite(suitePath);
    llvm::outs() << suitePath << ": " << su.cases.size() << " case(s), "
                 << enumerate(su).size() << " run(s)\n";
    return 0;
  }
  if (out.dir.empty())
    out.dir = fs::path(suitePath).stem().string() + "-results";
  if (out.json.empty())
    out.json = out.dir + "/results.json";
  if (out.junit.empty())
    out.junit = out.dir + "/junit.xml";
  if (merge)
    return runMerge(positional, suitePath, out);
  return runSuite(suitePath, out, cacheDir, line.jobs, line.shard);
}

const tpuc::cli::Subcommand tpuc::cli::regress{command, kOverview, runRegress};
