//===- Explore.cpp - tpuc explore: design-space sweeps --------------------===//
//
//   tpuc explore SWEEP.toml -o DIR [--jobs N] [--shard I/N]
//   tpuc explore merge DIR... -o DIR [--sweep SWEEP.toml]
//
// The sweep file (a TOML subset, see README.md "Design-space sweeps") gives
// models, quantisation modes, layer-group strategies and knobs, and machine
// keys (the keys of `tpusim config`) as lists or ranges; the points are
// their cross product, in a fixed order. Each point is compiled in memory
// (tpuc::deploy::compile, nothing written) and simulated in timing mode by
// the simulator library, in a forked worker process (the SystemC kernel
// runs one simulation per process at a time), --jobs at once (the worker
// pool, the file format's parser, the hashes and the shards are shared with
// tpuc regress: Batch.h). Results:
// DIR/results.json, DIR/results.csv, DIR/report.html; a point's record is
// keyed by a hash of its parameters and its model's (and calibration
// table's) content, and a rerun skips the points DIR holds that ran
// (failed ones run again).
//
//===----------------------------------------------------------------------===//
#include "Batch.h"
#include "DeployPipeline.h"
#include "Subcommands.h"
#include "ToolCommon.h"

#include "tpuc/Support/CaliTable.h"
#include "tpuc/Support/Machine.h"
#include "tpuc/Support/Weights.h"

#include "tpu/isa/Bmodel.h"
#include "tpu/isa/Error.h"
#include "tpu/isa/Machine.h"
#include "tpu/isa/Sha256.h"
#include "tpusim/Config.h"
#include "tpusim/Runner.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char *kTool = "tpuc explore";

namespace cl = llvm::cl;

cl::SubCommand
    command("explore",
            "sweep models, layer-group knobs and machine keys (compile + "
            "timing simulation per point)");
tpuc::cli::Category category("tpuc explore options");

constexpr const char *kOverview =
    R"(tpuc explore: design-space sweeps

  tpuc explore SWEEP.toml -o DIR [--jobs N] [--shard I/N]
  tpuc explore SWEEP.toml --check
  tpuc explore merge DIR... -o DIR [--sweep SWEEP.toml]

Compiles (in memory) and simulates (timing mode, in process) every point
of a sweep: the cross product of the models, quantisation modes,
layer-group strategies and knobs and machine keys the sweep file lists.
Writes DIR/results.json, DIR/results.csv and DIR/report.html; a rerun
skips the points DIR holds that ran (failed ones run again). Sweep format: README.md,
"Design-space sweeps". `merge DIR...` joins the results of shards into
-o DIR; with --sweep every point of the sweep must be there exactly once.
)";

tpuc::batch::CommonOptions common(command, category,
                                  "SWEEP.toml | merge DIR...",
                                  "the results directory", "points", "sweep");
cl::opt<std::string> sweepArg(
    "sweep",
    cl::desc("merge: the sweep whose every point must be there exactly "
             "once"),
    cl::value_desc("SWEEP.toml"), cl::sub(command), cl::cat(category));

int fail(const std::string &message) {
  return tpuc::batch::fail(kTool, message);
}

//===----------------------------------------------------------------------===//
// The sweep file
//===----------------------------------------------------------------------===//

/// One swept dimension: a key and its values as text, with the line that
/// gave them.
struct Dim {
  std::string key;
  std::vector<std::string> values;
  int line = 0;
};

struct Sweep {
  std::string path;
  std::vector<std::string> models; ///< as resolved paths
  std::vector<std::string> modelText; ///< as written
  std::map<std::string, std::string> calibration; ///< resolved model -> table
  /// Compile knobs in fixed order, then machine keys in file order.
  std::vector<Dim> knobs, machine;
  /// Seconds a point may take before it is killed (a failed point).
  double timeout = 900;
};

/// The compile knobs and their defaults (a knob the file does not give has
/// its default as its only value).
const std::vector<std::pair<std::string, std::string>> &kKnobs =
    tpuc::batch::kCompileKnobs;

using tpuc::batch::ParseError;

/// Steps `idx` (one index per dimension of `sizes`, the last fastest) to
/// the next combination; false after the last one.
bool nextCombination(std::vector<size_t> &idx,
                     const std::vector<size_t> &sizes) {
  for (size_t i = idx.size(); i-- > 0;) {
    if (++idx[i] < sizes[i])
      return true;
    idx[i] = 0;
  }
  return false;
}

/// Refuses a machine value no machine of the sweep can have: every
/// combination of the [machine] values that holds it breaks a rule of the
/// compiler or the simulator (chip.npu_num = 48: lanes are a power of two).
/// A value valid in some combinations only leaves the others to fail as
/// points. Sweeps of more than 100,000 machines are not checked here.
void checkMachines(const std::string &path, const std::vector<Dim> &dims) {
  std::vector<size_t> sizes;
  size_t total = 1;
  for (const Dim &d : dims) {
    sizes.push_back(d.values.size());
    total *= d.values.size();
    if (total > 100000)
      return;
  }
  if (dims.empty())
    return;
  // Per dimension and value: valid in some machine, else the first rule
  // one broke.
  struct Verdict {
    bool valid = false;
    std::string why;
  };
  std::vector<std::vector<Verdict>> verdicts;
  for (size_t size : sizes)
    verdicts.emplace_back(size);
  std::vector<size_t> idx(dims.size(), 0);
  do {
    std::vector<std::pair<std::string, std::string>> keys;
    for (size_t i = 0; i < dims.size(); ++i)
      keys.push_back({dims[i].key, dims[i].values[idx[i]]});
    std::string e = tpuc::batch::machineError(keys);
    for (size_t i = 0; i < dims.size(); ++i) {
      Verdict &v = verdicts[i][idx[i]];
      v.valid = v.valid || e.empty();
      if (v.why.empty())
        v.why = e;
    }
  } while (nextCombination(idx, sizes));
  for (size_t i = 0; i < dims.size(); ++i)
    for (size_t v = 0; v < dims[i].values.size(); ++v)
      if (!verdicts[i][v].valid)
        throw tpu::Error(path + ":" + std::to_string(dims[i].line) + ": " +
                         dims[i].key + " = " + dims[i].values[v] +
                         ": no machine of the sweep with it is valid (" +
                         verdicts[i][v].why + ")");
}

/// Parses and checks the sweep file; throws tpu::Error naming the file and
/// the line.
Sweep readSweep(const std::string &path) {
  Sweep sw;
  sw.path = path;
  fs::path base = fs::path(path).parent_path();
  auto resolve = [&](const std::string &p) {
    fs::path q(p);
    return (q.is_absolute() ? q : base / q).lexically_normal().string();
  };
  std::map<std::string, Dim> knobs;
  auto onSection = [](const std::string &section, int line) {
    if (section != "sweep" && section != "machine" && section != "calibration")
      throw ParseError{line, "unknown section [" + section +
                                 "] (sweep, machine or calibration)"};
  };
  auto onEntry = [&](const tpuc::batch::Entry &e) {
    const std::string &key = e.key;
    int line = e.line;
    std::string section = e.section.empty() ? "sweep" : e.section;
    if (section == "calibration") {
      std::string table = resolve(tpuc::batch::scalar(e.value, line));
      if (!fs::is_regular_file(table))
        throw ParseError{line,
                         "calibration table '" + table + "' does not exist"};
      sw.calibration[resolve(key)] = table;
      return;
    }
    if (section == "sweep" && key == "timeout") {
      std::string v = tpuc::batch::bareScalar(e.value, key, line);
      double t = tpuc::batch::number(v, key, line);
      if (t < 0.1 || t > 86400)
        throw ParseError{line,
                         "timeout = " + v + " is out of range [0.1, 86400]"};
      sw.timeout = t;
      return;
    }
    std::vector<std::string> vals = tpuc::batch::values(e.value, line);
    std::set<std::string> distinct(vals.begin(), vals.end());
    if (distinct.size() != vals.size())
      throw ParseError{line, "'" + key + "' lists a value twice"};
    if (section == "machine") {
      // The same value spelt twice (64K and 65536) would run one machine
      // twice.
      std::map<std::string, std::string> canonical;
      for (const std::string &v : vals) {
        tpuc::batch::checkMachineKey(key, v, line);
        auto [it, fresh] =
            canonical.emplace(tpuc::batch::canonicalMachineValue(key, v), v);
        if (!fresh)
          throw ParseError{line, "'" + key + "' lists a value twice (" +
                                     it->second + " and " + v + ")"};
      }
      sw.machine.push_back(Dim{key, vals, line});
      return;
    }
    // [sweep]
    if (key == "models") {
      // One file named two ways (tiny.mlir and ./tiny.mlir) would run its
      // points twice.
      std::map<std::string, std::string> files;
      for (const std::string &m : vals) {
        std::string r = resolve(m);
        if (!fs::is_regular_file(r))
          throw ParseError{line,
                           "model '" + m + "' does not exist (" + r + ")"};
        if (fs::path(r).extension() != ".mlir")
          throw ParseError{line, "model '" + m +
                                     "' is not a top .mlir (make one with "
                                     "tpuc transform)"};
        std::error_code ec;
        fs::path same = fs::canonical(r, ec);
        auto [it, fresh] = files.emplace(ec ? r : same.string(), m);
        if (!fresh)
          throw ParseError{line, "'models' names one file twice (" +
                                     it->second + " and " + m + ")"};
        sw.models.push_back(r);
        sw.modelText.push_back(m);
      }
      return;
    }
    auto known = std::find_if(kKnobs.begin(), kKnobs.end(),
                              [&](auto &k) { return k.first == key; });
    if (known == kKnobs.end())
      throw ParseError{line,
                       "unknown key '" + key +
                           "' (models, quantize, layer_group, "
                           "lg_max_length, lg_max_h_slices, lg_h_first, "
                           "weight_resident, lg_kernels, timeout; machine "
                           "keys go under "
                           "[machine])"};
    for (std::string &v : vals)
      if (std::string why = tpuc::batch::checkCompileKnob(key, v); !why.empty())
        throw ParseError{line, key + " = " + v + ": " + why};
    knobs[key] = Dim{key, vals, line};
  };
  tpuc::batch::readEntries(path, "sweep file", onSection, onEntry);
  if (sw.models.empty())
    throw tpu::Error(path + ": no models (models = [\"model_top.mlir\"])");
  for (const auto &[key, def] : kKnobs)
    sw.knobs.push_back(knobs.count(key) ? knobs[key] : Dim{key, {def}, 0});
  checkMachines(path, sw.machine);
  const Dim &q = sw.knobs[0];
  if (std::count(q.values.begin(), q.values.end(), "INT8"))
    for (const std::string &m : sw.models)
      if (!sw.calibration.count(m))
        throw tpu::Error(path + ":" + std::to_string(q.line) +
                         ": quantize INT8 needs a calibration table for " + m +
                         " ([calibration] \"" + m + "\" = \"TABLE\")");
  return sw;
}

//===----------------------------------------------------------------------===//
// Points
//===----------------------------------------------------------------------===//

struct Point {
  size_t index = 0;
  std::string model, modelText, cali;
  /// knob and machine key -> value, in sweep order.
  std::vector<std::pair<std::string, std::string>> params;
  std::string hash;
  std::string get(const std::string &k) const {
    for (auto &[kk, v] : params)
      if (kk == k)
        return v;
    return "";
  }
};

/// The points in their fixed order: models outermost, then the knobs, then
/// the machine keys in file order (the last varies fastest).
std::vector<Point> enumerate(const Sweep &sw) {
  std::vector<const Dim *> dims;
  for (const Dim &d : sw.knobs)
    dims.push_back(&d);
  for (const Dim &d : sw.machine)
    dims.push_back(&d);
  std::vector<size_t> sizes;
  for (const Dim *d : dims)
    sizes.push_back(d->values.size());
  std::map<std::string, std::string> digests;
  std::vector<Point> points;
  for (size_t m = 0; m < sw.models.size(); ++m) {
    const std::string &model = sw.models[m];
    if (!digests.count(model))
      digests[model] = tpuc::batch::fileDigest(model);
    std::string cali;
    if (auto it = sw.calibration.find(model); it != sw.calibration.end())
      cali = it->second;
    std::vector<size_t> idx(dims.size(), 0);
    while (true) {
      Point p;
      p.index = points.size();
      p.model = model;
      p.modelText = sw.modelText[m];
      for (size_t i = 0; i < dims.size(); ++i)
        p.params.push_back({dims[i]->key, dims[i]->values[idx[i]]});
      std::string canon = "model=" + digests[model] + "\n";
      if (p.get("quantize") == "INT8" && !cali.empty()) {
        p.cali = cali;
        canon += "cali=" + tpuc::batch::fileDigest(cali) + "\n";
      }
      for (auto &[k, v] : p.params)
        canon += k + "=" + v + "\n";
      p.hash = tpuc::batch::hexDigest(canon).substr(0, 16);
      points.push_back(std::move(p));
      if (!nextCombination(idx, sizes))
        break;
    }
  }
  return points;
}

//===----------------------------------------------------------------------===//
// One point (in a worker process)
//===----------------------------------------------------------------------===//

json pointParams(const Point &p) {
  json j;
  j["model"] = p.modelText;
  for (auto &[k, v] : p.params)
    j[k] = v;
  return j;
}

/// Compiles and simulates \p p; fills the result fields of \p rec.
void runPoint(const Point &p, json &rec) {
  double t0 = tpuc::batch::cpuSeconds();
  tpuc::batch::CompileJob job;
  job.model = p.model;
  job.params = p.params;
  job.cali = p.cali;
  tpuc::deploy::PipelineResult r;
  tpuc::batch::compileInMemory(job, r);
  double t1 = tpuc::batch::cpuSeconds();

  tpu::sim::SimConfig cfg =
      tpu::sim::recordedConfig(r.model, tpu::sim::SimConfig::defaults());
  cfg.validate();
  tpu::sim::ModelRunner runner(r.model, cfg, tpu::sim::SimMode::Timing);
  runner.run();
  double t2 = tpuc::batch::cpuSeconds();
  const tpu::sim::SimStats &s = runner.simulator().stats();
  uint64_t lmemPeak = 0;
  for (const auto &g : r.groups)
    lmemPeak = std::max<uint64_t>(lmemPeak, g.plan.lmemBytes);
  rec["status"] = "ok";
  rec["latency_us"] = s.timeUs;
  rec["cycles"] = s.cycles;
  rec["tiu_busy_cycles"] = s.tiuBusyCycles;
  rec["gdma_busy_cycles"] = s.gdmaBusyCycles;
  rec["tiu_busy_share"] = s.tiuBusyShare;
  rec["gdma_busy_share"] = s.gdmaBusyShare;
  rec["mac_utilisation"] = s.macUtilisation;
  rec["ddr_read_bytes"] = s.ddrReadBytes;
  rec["ddr_write_bytes"] = s.ddrWriteBytes;
  rec["ddr_bytes"] = s.ddrReadBytes + s.ddrWriteBytes;
  rec["layer_groups"] = r.groups.size();
  rec["lmem_peak_bytes_per_lane"] = lmemPeak;
  rec["cost_proxy"] = double(cfg.chip.npuNum) * double(cfg.chip.lmemBytes);
  rec["cpu_seconds"] = {{"compile", t1 - t0}, {"simulate", t2 - t1}};
}

//===----------------------------------------------------------------------===//
// Results
//===----------------------------------------------------------------------===//

const std::vector<std::string> kMetrics = {
    "latency_us",      "cycles",          "tiu_busy_cycles",
    "gdma_busy_cycles", "tiu_busy_share", "gdma_busy_share",
    "mac_utilisation", "ddr_read_bytes",  "ddr_write_bytes",
    "ddr_bytes",       "layer_groups",    "lmem_peak_bytes_per_lane",
    "cost_proxy"};

std::vector<json> readResults(const std::string &dir) {
  std::string path = dir + "/results.json";
  if (!fs::is_regular_file(path))
    return {};
  std::ifstream in(path);
  json j;
  try {
    j = json::parse(in);
  } catch (const std::exception &e) {
    throw tpu::Error(path + ": " + e.what());
  }
  if (!j.contains("points") || !j["points"].is_array())
    throw tpu::Error(path + ": no \"points\" array");
  std::vector<json> points = j["points"].get<std::vector<json>>();
  // Records of earlier versions had "reason" on failed points only.
  for (json &p : points)
    if (p.is_object() && !p.contains("reason"))
      p["reason"] = "";
  return points;
}

std::string csvField(const json &v) {
  std::string s = v.is_string() ? v.get<std::string>()
                  : v.is_null() ? ""
                                : v.dump();
  if (s.find_first_of(",\"\n") != std::string::npos) {
    std::string q = "\"";
    for (char c : s)
      q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  }
  return s;
}

std::string renderReport(const std::vector<json> &records);

void writeResults(const std::string &dir, std::vector<json> records,
                  bool report) {
  std::sort(records.begin(), records.end(), [](const json &a, const json &b) {
    return a["index"].get<size_t>() < b["index"].get<size_t>();
  });
  json all = {{"points", records}};
  tpuc::batch::writeText(dir + "/results.json", all.dump(1) + "\n");
  // CSV: index, hash, the parameters (union, first-seen order), status,
  // reason, the metrics.
  std::vector<std::string> params;
  for (const json &r : records)
    for (auto &[k, v] : r["params"].items())
      if (std::find(params.begin(), params.end(), k) == params.end())
        params.push_back(k);
  std::string csv = "index,hash";
  for (auto &k : params)
    csv += "," + k;
  csv += ",status,reason";
  for (auto &m : kMetrics)
    csv += "," + m;
  csv += ",compile_cpu_s,simulate_cpu_s\n";
  for (const json &r : records) {
    csv += std::to_string(r["index"].get<size_t>()) + "," +
           r["hash"].get<std::string>();
    for (auto &k : params)
      csv += "," + csvField(r["params"].value(k, json()));
    csv += "," + csvField(r.value("status", json())) + "," +
           csvField(r.value("reason", json()));
    for (auto &m : kMetrics)
      csv += "," + csvField(r.value(m, json()));
    json cpu = r.value("cpu_seconds", json::object());
    csv += "," + csvField(cpu.value("compile", json())) + "," +
           csvField(cpu.value("simulate", json())) + "\n";
  }
  tpuc::batch::writeText(dir + "/results.csv", csv);
  if (report)
    tpuc::batch::writeText(dir + "/report.html", renderReport(records));
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

/// Whether a point's record says it ran (compiled and simulated).
bool ran(const json &record) { return record.value("status", "") == "ok"; }

json baseRecord(const Point &p) {
  return json{{"index", p.index}, {"hash", p.hash}, {"params", pointParams(p)}};
}

int runSweep(const std::string &sweepPath, const std::string &outDir,
             unsigned jobs, tpuc::batch::Shard shard) {
  Sweep sw = readSweep(sweepPath);
  std::vector<Point> points = enumerate(sw);
  // Keep the records of the sweep's points already there (this shard's
  // and, run into the same directory, another's); run the rest of this
  // shard's.
  std::map<std::string, json> have;
  for (json &r : readResults(outDir))
    have[r["hash"].get<std::string>()] = r;
  // Records of points this sweep does not have (another sweep's, or this
  // one before an edit) would be dropped when the results are written:
  // refused instead.
  std::set<std::string> ours;
  for (const Point &p : points)
    ours.insert(p.hash);
  size_t foreign = 0;
  for (auto &[hash, r] : have)
    foreign += !ours.count(hash);
  if (foreign)
    throw tpu::Error(outDir + "/results.json holds " + std::to_string(foreign) +
                     " point(s) that are not points of " + sweepPath +
                     " as it is now (another sweep's, or from before an "
                     "edit of the sweep, its models or tables); "
                     "rerunning would drop them: give another -o, or "
                     "remove that directory");
  tpuc::batch::createDirectory(outDir + "/logs");
  std::vector<json> records;
  std::vector<const Point *> todo;
  size_t skipped = 0;
  // Failed points run again (their cause, a timeout or a crash, may be
  // gone); points that ran are kept. A failed record stays until its
  // point's new one replaces it (an interrupted rerun keeps it).
  for (const Point &p : points) {
    auto it = have.find(p.hash);
    if (it == have.end()) {
      if (shard.mine(p.index))
        todo.push_back(&p);
      continue;
    }
    json r = it->second;
    r["index"] = p.index; // same parameters and model: same point
    records.push_back(r);
    if (!ran(r) && shard.mine(p.index))
      todo.push_back(&p);
    else
      skipped += shard.mine(p.index);
  }
  tpuc::batch::Progress progress("points", todo.size(), skipped);
  progress.update();
  auto logPath = [&](size_t i) {
    return outDir + "/logs/" + todo[i]->hash + ".log";
  };
  tpuc::batch::PoolOptions pool;
  pool.jobs = jobs;
  pool.timeoutSeconds = [&](size_t) { return sw.timeout; };
  tpuc::batch::runPool(
      todo.size(), pool, logPath,
      [&](size_t i, json &rec) {
        rec = baseRecord(*todo[i]);
        runPoint(*todo[i], rec);
      },
      [&](size_t i, json &&rec, const std::string &failure) {
        if (!failure.empty()) {
          rec = baseRecord(*todo[i]);
          rec["status"] = "failed";
          rec["reason"] = failure;
        }
        // Every record has every key (the CSV's columns): "" for a point
        // that ran.
        if (!rec.contains("reason"))
          rec["reason"] = "";
        std::error_code ec;
        if (rec["status"] == "ok")
          fs::remove(logPath(i), ec);
        else
          ++progress.failed;
        ++progress.done;
        auto old =
            std::find_if(records.begin(), records.end(), [&](const json &r) {
              return r["hash"] == rec["hash"];
            });
        if (old != records.end())
          *old = rec;
        else
          records.push_back(rec);
        writeResults(outDir, records, /*report=*/false);
        progress.update();
      });
  writeResults(outDir, records, /*report=*/true);
  progress.finish();
  std::fprintf(stderr,
               "%s: %zu point(s) run (%zu failed), %zu skipped (already in "
               "the results), %.1f s\n",
               kTool, progress.done, progress.failed, progress.skipped,
               progress.elapsed());
  // No point that ran: nothing to compare. A whole sweep so fails (exit
  // 1); a shard only warns, since a shard of points no machine of the
  // sweep can run is no error and its merge must still go ahead.
  if (!records.empty() && std::none_of(records.begin(), records.end(), ran)) {
    std::fprintf(stderr, "%s: %s: no point ran (see %s/logs)\n", kTool,
                 shard.given ? "warning" : "error", outDir.c_str());
    if (!shard.given)
      return 1;
  }
  return 0;
}
int runMerge(const std::vector<std::string> &dirs, const std::string &outDir,
             const std::string &sweepPath) {
  std::map<std::string, std::pair<json, std::string>> byHash;
  for (const std::string &d : dirs) {
    if (!fs::is_regular_file(d + "/results.json"))
      return fail(d + ": no results.json");
    for (json &r : readResults(d)) {
      std::string h = r["hash"].get<std::string>();
      if (auto it = byHash.find(h); it != byHash.end())
        return fail("point " + h + " (index " + r["index"].dump() +
                    ") is in both " + it->second.second + " and " + d);
      byHash[h] = {r, d};
    }
  }
  if (!sweepPath.empty()) {
    std::vector<Point> points = enumerate(readSweep(sweepPath));
    std::set<std::string> want;
    std::vector<std::string> missing;
    for (const Point &p : points) {
      want.insert(p.hash);
      if (!byHash.count(p.hash))
        missing.push_back(std::to_string(p.index));
    }
    if (!missing.empty())
      return fail(std::to_string(missing.size()) + " of " +
                  std::to_string(points.size()) + " point(s) of " + sweepPath +
                  " are missing (indices " + tpuc::batch::listSome(missing) +
                  ")");
    for (auto &[h, rd] : byHash)
      if (!want.count(h))
        return fail("point " + h + " (index " + rd.first["index"].dump() +
                    ", from " + rd.second + ") is not a point of " + sweepPath);
  }
  tpuc::batch::createDirectory(outDir);
  std::vector<json> records;
  for (auto &[h, rd] : byHash)
    records.push_back(rd.first);
  writeResults(outDir, records, /*report=*/true);
  std::fprintf(stderr, "%s merge: %zu point(s) from %zu dir(s) into %s\n",
               kTool, records.size(), dirs.size(), outDir.c_str());
  // As a whole sweep: none of its points ran, nothing to compare.
  if (!records.empty() && std::none_of(records.begin(), records.end(), ran)) {
    std::fprintf(stderr, "%s merge: error: no point ran\n", kTool);
    return 1;
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// The HTML report
//===----------------------------------------------------------------------===//

constexpr const char *kReportHead = R"HTML(<!DOCTYPE html>
<html><head><meta charset="utf-8">
<title>tpuc explore report</title>
<style>
body{font:14px sans-serif;margin:20px;max-width:1200px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
svg{background:#fafafa;border:1px solid #ddd;margin:4px}
.ax{stroke:#444}.grid{stroke:#e4e4e4}.pt{fill:#4a7fc1;opacity:.7}
.front{fill:#d9480f}.line{stroke:#d9480f;fill:none;stroke-width:1.5}
text{font:11px sans-serif}table{border-collapse:collapse}
td,th{border:1px solid #ddd;padding:2px 6px;font-size:12px}
.failed{color:#b00}
</style></head><body>
<h1>tpuc explore report</h1>
<p id="summary"></p>
<section><h2>Pareto front: latency against cost</h2>
<p>Cost proxy = lanes x local memory per lane (chip.npu_num x chip.lmem_bytes,
in bytes): the local-memory area the point pays for. Orange: the points no
other point beats in both latency and cost (the Pareto front), joined. One
front per workload (model and quantisation): the latencies of two models
do not compete.</p>
<div id="fronts"></div></section>
<section><h2>Latency and DDR traffic against each swept parameter</h2>
<p>One chart per parameter that takes more than one value, per workload;
each dot is a point (the other parameters vary across the dots of one x
value).</p>
<div id="params"></div></section>
<section><h2>Failed points</h2><table id="failed"></table></section>
<script>
const DATA = )HTML";

constexpr const char *kReportTail = R"HTML(;
const NS = 'http://www.w3.org/2000/svg';
function el(tag, attrs, parent, text) {
  const e = document.createElementNS(NS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}
function fmt(v) {
  if (typeof v !== 'number') return String(v);
  const a = Math.abs(v);
  if (a >= 1e9) return (v / 1e9).toPrecision(3) + 'G';
  if (a >= 1e6) return (v / 1e6).toPrecision(3) + 'M';
  if (a >= 1e3) return (v / 1e3).toPrecision(3) + 'k';
  return Number(v.toPrecision(4)).toString();
}
const ok = DATA.points.filter(p => p.status === 'ok');
const failed = DATA.points.filter(p => p.status !== 'ok');
document.getElementById('summary').textContent =
  DATA.points.length + ' points: ' + ok.length + ' simulated, ' +
  failed.length + ' failed.';
// A scatter of ys over xs: categorical x when some x is not a number.
function scatter(svg, pts, xl, yl, opts) {
  const W = +svg.getAttribute('width'), H = +svg.getAttribute('height');
  const L = 70, R = 20, T = 20, B = 45;
  const numeric = pts.every(p => typeof p.x === 'number');
  let cats = [];
  if (!numeric) cats = [...new Set(pts.map(p => String(p.x)))];
  const xv = p => numeric ? p.x : cats.indexOf(String(p.x));
  let x0 = Math.min(...pts.map(xv)), x1 = Math.max(...pts.map(xv));
  let y0 = 0, y1 = Math.max(...pts.map(p => p.y));
  if (!numeric) { x0 -= 0.5; x1 += 0.5; }
  if (x0 === x1) { x0 -= 1; x1 += 1; }
  if (y1 <= y0) y1 = y0 + 1;
  const sx = v => L + (v - x0) / (x1 - x0) * (W - L - R);
  const sy = v => H - B - (v - y0) / (y1 - y0) * (H - T - B);
  for (let i = 0; i <= 4; ++i) {
    const yv = y0 + (y1 - y0) * i / 4;
    el('line', {x1: L, x2: W - R, y1: sy(yv), y2: sy(yv), class: 'grid'}, svg);
    el('text', {x: L - 4, y: sy(yv) + 4, 'text-anchor': 'end'}, svg, fmt(yv));
  }
  const ticks = numeric ? [...new Set(pts.map(p => p.x))].sort((a, b) => a - b)
                        : cats.map((c, i) => i);
  const shown = ticks.length > 12 ? ticks.filter((t, i) => i % Math.ceil(ticks.length / 12) === 0) : ticks;
  for (const t of shown)
    el('text', {x: sx(t), y: H - B + 14, 'text-anchor': 'middle'}, svg,
       numeric ? fmt(t) : cats[t]);
  el('line', {x1: L, x2: W - R, y1: H - B, y2: H - B, class: 'ax'}, svg);
  el('line', {x1: L, x2: L, y1: T, y2: H - B, class: 'ax'}, svg);
  el('text', {x: (L + W - R) / 2, y: H - 8, 'text-anchor': 'middle'}, svg, xl);
  el('text', {x: 14, y: (T + H - B) / 2, transform: 'rotate(-90 14 ' + (T + H - B) / 2 + ')',
              'text-anchor': 'middle'}, svg, yl);
  if (opts && opts.front) {
    const f = opts.front.slice().sort((a, b) => a.x - b.x);
    el('polyline', {points: f.map(p => sx(xv(p)) + ',' + sy(p.y)).join(' '), class: 'line'}, svg);
  }
  for (const p of pts) {
    const c = el('circle', {cx: sx(xv(p)) + (numeric ? 0 : (p.j || 0)), cy: sy(p.y), r: 4,
                            class: p.front ? 'pt front' : 'pt'}, svg);
    el('title', {}, c, p.label);
  }
}
function label(p) {
  return '#' + p.index + ' ' + Object.entries(p.params).map(([k, v]) => k + '=' + v).join(' ') +
    '\nlatency ' + p.latency_us + ' us, ' + p.cycles + ' cycles, DDR ' + p.ddr_bytes + ' B';
}
// The workloads: a model in one quantisation, in the order of the points.
const workloadOf = p => p.params.model + (p.params.quantize ? ' ' + p.params.quantize : '');
const workloads = [...new Set(ok.map(workloadOf))];
const many = workloads.length > 1;
function heading(parent, tag, text) {
  const h = document.createElement(tag);
  h.textContent = text;
  parent.appendChild(h);
}
// Pareto front of each workload: no other point of it has both
// lower-or-equal latency and cost, one of them strictly lower.
const fronts = document.getElementById('fronts');
for (const w of workloads) {
  const pp = ok.filter(p => workloadOf(p) === w)
               .map(p => ({x: p.cost_proxy, y: p.latency_us, label: label(p), rec: p}));
  for (const a of pp)
    a.front = !pp.some(b => b !== a && b.x <= a.x && b.y <= a.y && (b.x < a.x || b.y < a.y));
  heading(fronts, 'h3', w);
  const svg = el('svg', {width: 760, height: 420, 'data-workload': w});
  fronts.appendChild(svg);
  scatter(svg, pp, 'cost proxy: lanes x local memory per lane (bytes)', 'latency (us)',
          {front: pp.filter(p => p.front)});
  const ft = document.createElement('table');
  fronts.appendChild(ft);
  const front = pp.filter(p => p.front).sort((a, b) => a.x - b.x);
  const keys = Object.keys(front[0].rec.params);
  const h = ft.insertRow();
  for (const k of ['#', ...keys, 'cost proxy', 'latency (us)', 'DDR bytes'])
    h.appendChild(document.createElement('th')).textContent = k;
  for (const p of front) {
    const r = ft.insertRow();
    r.className = 'front-row';
    for (const v of [p.rec.index, ...keys.map(k => p.rec.params[k]), fmt(p.x), p.y, p.rec.ddr_bytes])
      r.insertCell().textContent = v;
  }
}
// Per swept parameter, per workload.
const keys = [...new Set(DATA.points.flatMap(p => Object.keys(p.params)))];
const div = document.getElementById('params');
for (const k of keys) {
  // The heading once a chart follows (a key that only tells the workloads
  // apart, model or quantize, has none within one).
  let titled = false;
  for (const w of workloads) {
    const mine = ok.filter(p => workloadOf(p) === w);
    const vals = new Set(mine.map(p => p.params[k]));
    if (vals.size < 2) continue;
    if (!titled) heading(div, 'h3', k);
    titled = true;
    if (many) heading(div, 'h4', w);
    const num = [...vals].every(v => v !== '' && !isNaN(Number(v)));
    const xOf = p => num ? Number(p.params[k]) : p.params[k];
    for (const [m, name] of [['latency_us', 'latency (us)'], ['ddr_bytes', 'DDR bytes']]) {
      const svg = el('svg', {width: 560, height: 300});
      div.appendChild(svg);
      scatter(svg, mine.map(p => ({x: xOf(p), y: p[m], label: label(p)})), k, name);
    }
  }
}
const fl = document.getElementById('failed');
if (!failed.length) fl.outerHTML = '<p>None.</p>';
for (const p of failed) {
  const r = fl.insertRow();
  r.insertCell().textContent = '#' + p.index;
  r.insertCell().textContent = Object.entries(p.params).map(([k, v]) => k + '=' + v).join(' ');
  const c = r.insertCell(); c.textContent = p.reason; c.className = 'failed';
}
</script></body></html>
)HTML";

std::string renderReport(const std::vector<json> &records) {
  std::string data = json{{"points", records}}.dump();
  // The data sits in a <script>: no "</" may close it early.
  std::string safe;
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i] == '<' && i + 1 < data.size() && data[i + 1] == '/')
      safe += "<\\";
    else
      safe += data[i];
  }
  return std::string(kReportHead) + safe + kReportTail;
}

} // namespace

static int runExplore() {
  tpuc::batch::CommandLine line = tpuc::batch::readCommandLine(common);
  if (line.check && !line.merge && line.positional.size() == 1) {
    std::vector<Point> points = enumerate(readSweep(line.positional[0]));
    llvm::outs() << line.positional[0] << ": " << points.size()
                 << " point(s)\n";
    return 0;
  }
  if (line.outDir.empty())
    return fail("-o DIR is required (see tpuc explore --help)");
  if (line.merge) {
    if (line.positional.empty())
      return fail("merge needs result directories");
    return runMerge(line.positional, line.outDir, sweepArg);
  }
  if (line.positional.size() != 1)
    return fail("expected one SWEEP.toml (see tpuc explore --help)");
  return runSweep(line.positional[0], line.outDir, line.jobs, line.shard);
}

const tpuc::cli::Subcommand tpuc::cli::explore{command, kOverview, runExplore};
