//===- Batch.cpp - What tpuc explore and tpuc regress share ---------------===//
#include "Batch.h"
#include "ToolCommon.h"

#include "tpuc/Support/CaliTable.h"
#include "tpuc/Support/Machine.h"
#include "tpuc/Support/Module.h"
#include "tpuc/Support/Weights.h"

#include "tpu/isa/Bmodel.h"
#include "tpu/isa/Error.h"
#include "tpu/isa/Machine.h"
#include "tpu/isa/Sha256.h"
#include "tpusim/Config.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include <csignal>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tpuc::batch {

using nlohmann::json;

namespace {

/// Strips a `#` comment outside double quotes.
std::string stripComment(const std::string &s) {
  bool quoted = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '"')
      quoted = !quoted;
    else if (s[i] == '#' && !quoted)
      return s.substr(0, i);
  }
  return s;
}

/// Splits at commas outside quotes.
std::vector<std::string> splitList(const std::string &s) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char c : s) {
    if (c == '"')
      quoted = !quoted;
    if (c == ',' && !quoted) {
      out.push_back(cur);
      cur.clear();
    } else
      cur += c;
  }
  if (!trim(cur).empty() || !out.empty())
    out.push_back(cur);
  return out;
}

/// Reads the key of `key = value`: bare (letters, digits, _ - .) or quoted.
std::string keyOf(const std::string &raw, int line) {
  std::string k = trim(raw);
  if (k.size() >= 2 && k.front() == '"' && k.back() == '"')
    return k.substr(1, k.size() - 2);
  for (char c : k)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' &&
        c != '.')
      throw ParseError{line, "bad key '" + k + "'"};
  if (k.empty())
    throw ParseError{line, "missing key"};
  return k;
}

} // namespace

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::string scalar(const std::string &raw, int line) {
  std::string s = trim(raw);
  if (s.empty())
    throw ParseError{line, "empty value"};
  if (s.front() == '"') {
    if (s.size() < 2 || s.back() != '"')
      throw ParseError{line, "unterminated string " + s};
    return s.substr(1, s.size() - 2);
  }
  for (char c : s)
    if (c == '"' || c == '[' || c == ']' || c == '{' || c == '}' || c == '=' ||
        c == ' ')
      throw ParseError{line, "bad value '" + s + "'"};
  return s;
}

std::string bareScalar(const std::string &raw, const std::string &key,
                       int line) {
  std::string s = trim(raw);
  if (!s.empty() && s.front() == '"')
    throw ParseError{line, key + " = " + s +
                               " is a string; write the value without "
                               "quotes"};
  return scalar(s, line);
}

double number(const std::string &s, const std::string &what, int line) {
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end || errno || !std::isfinite(v))
    throw ParseError{line, what + " '" + s + "' is not a number"};
  return v;
}

std::string formatNumber(double v) {
  if (v == double(int64_t(v)) && std::abs(v) < 9e15)
    return std::to_string(int64_t(v));
  std::ostringstream os;
  os.precision(12);
  os << v;
  return os.str();
}

std::vector<std::string> values(const std::string &raw, int line) {
  std::string s = trim(raw);
  if (!s.empty() && s.front() == '[') {
    if (s.back() != ']')
      throw ParseError{line, "a list must end with ']' on the same line"};
    std::vector<std::string> out;
    for (const std::string &item : splitList(s.substr(1, s.size() - 2)))
      out.push_back(scalar(item, line));
    if (out.empty())
      throw ParseError{line, "empty list"};
    return out;
  }
  if (!s.empty() && s.front() == '{') {
    if (s.back() != '}')
      throw ParseError{line, "a range must end with '}' on the same line"};
    std::map<std::string, double> f;
    for (const std::string &item : splitList(s.substr(1, s.size() - 2))) {
      size_t eq = item.find('=');
      if (eq == std::string::npos)
        throw ParseError{line, "range field '" + trim(item) +
                                   "' needs '= value'"};
      std::string k = trim(item.substr(0, eq));
      if (k != "from" && k != "to" && k != "step" && k != "factor")
        throw ParseError{line, "unknown range field '" + k +
                                   "' (from, to, step or factor)"};
      f[k] = number(trim(item.substr(eq + 1)), k, line);
    }
    if (!f.count("from") || !f.count("to"))
      throw ParseError{line, "a range needs from and to"};
    if (f.count("step") == f.count("factor"))
      throw ParseError{line, "a range needs exactly one of step, factor"};
    double from = f["from"], to = f["to"];
    std::vector<std::string> out;
    if (f.count("step")) {
      double step = f["step"];
      if (step <= 0)
        throw ParseError{line, "step must be positive"};
      for (double v = from; v <= to * (1 + 1e-12) && out.size() < 100000;
           v += step)
        out.push_back(formatNumber(v));
    } else {
      double factor = f["factor"];
      if (factor <= 1 || from <= 0)
        throw ParseError{line, "factor must be > 1 and from > 0"};
      for (double v = from; v <= to * (1 + 1e-12); v *= factor)
        out.push_back(formatNumber(v));
    }
    if (out.empty())
      throw ParseError{line, "empty range (from " + formatNumber(from) +
                                 " > to " + formatNumber(to) + ")"};
    return out;
  }
  return {scalar(s, line)};
}

void readEntries(const std::string &path, const std::string &what,
                 const std::function<void(const std::string &, int)> &onSection,
                 const std::function<void(const Entry &)> &onEntry) {
  if (std::string why = ::tpu::isa::bmodel::notAFile(path); !why.empty())
    throw ::tpu::Error(path + ": the " + what + " " + why);
  std::ifstream in(path);
  if (!in)
    throw ::tpu::Error(path + ": cannot read the " + what);
  std::string section, text;
  std::set<std::string> seen;
  int line = 0;
  try {
    while (std::getline(in, text)) {
      ++line;
      std::string s = trim(stripComment(text));
      if (s.empty())
        continue;
      if (s.front() == '[' && s.back() == ']' &&
          s.find('=') == std::string::npos) {
        section = trim(s.substr(1, s.size() - 2));
        onSection(section, line);
        continue;
      }
      size_t eq = s.find('=');
      if (eq == std::string::npos)
        throw ParseError{line, "expected 'key = value'"};
      Entry e{line, section, keyOf(s.substr(0, eq), line), s.substr(eq + 1)};
      if (!seen.insert(section + "\n" + e.key).second)
        throw ParseError{line, "'" + e.key + "' given twice"};
      onEntry(e);
    }
  } catch (const ParseError &e) {
    throw ::tpu::Error(path + ":" + std::to_string(e.line) + ": " + e.message);
  }
}

void checkMachineKey(const std::string &key, const std::string &value,
                     int line) {
  if (key.find('.') == std::string::npos)
    throw ParseError{line, "machine key '" + key +
                               "' needs its prefix (chip.npu_num, "
                               "ddr.bandwidth_gbps, ...; see tpusim config)"};
  try {
    ::tpu::sim::SimConfig cfg = ::tpu::sim::SimConfig::defaults();
    cfg.set(key, value);
    ::tpu::isa::Machine m = ::tpu::isa::Machine::bm1684x();
    m.assign(key + "=" + value);
  } catch (const std::exception &e) {
    throw ParseError{line, key + " = " + value + ": " + e.what()};
  }
  // tpuc compiles for the BM1684X only (tpuc deploy refuses another name;
  // every point would fail).
  if (key == "chip.name" && value != ::tpu::isa::bmodel::kChipName)
    throw ParseError{line, key + " = " + value +
                               ": tpuc compiles for the BM1684X only (the "
                               "machine keeps its name)"};
}

std::string canonicalMachineValue(const std::string &key,
                                  const std::string &value) {
  ::tpu::sim::SimConfig cfg = ::tpu::sim::SimConfig::defaults();
  cfg.set(key, value);
  for (const auto &[k, v] : cfg.list())
    if (k == key)
      return v;
  return value;
}

std::string
machineError(const std::vector<std::pair<std::string, std::string>> &keys) {
  try {
    ::tpu::sim::SimConfig cfg = ::tpu::sim::SimConfig::defaults();
    ::tpu::isa::Machine m = ::tpu::isa::Machine::bm1684x();
    for (const auto &[key, value] : keys) {
      cfg.set(key, value);
      m.assign(key + "=" + value);
    }
    cfg.validate();
    m.validate();
  } catch (const std::exception &e) {
    return e.what();
  }
  return "";
}

const std::vector<std::pair<std::string, std::string>> kCompileKnobs = {
    {"quantize", "F16"},      {"layer_group", "dp"},
    {"lg_max_length", "24"},  {"lg_max_h_slices", "0"},
    {"lg_h_first", "false"},  {"weight_resident", "true"},
    {"lg_kernels", "false"}};

std::string checkCompileKnob(const std::string &key, std::string &v) {
  if (key == "quantize") {
    std::transform(v.begin(), v.end(), v.begin(), ::toupper);
    if (v != "F32" && v != "F16" && v != "BF16" && v != "INT8")
      return "not F32, F16, BF16 or INT8";
  } else if (key == "layer_group") {
    if (v != "none" && v != "greedy" && v != "dp")
      return "not none, greedy or dp";
  } else if (key == "lg_h_first" || key == "weight_resident" ||
             key == "lg_kernels") {
    if (v != "true" && v != "false")
      return "not true or false";
  } else {
    char *end = nullptr;
    long long n = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end || n < (key == "lg_max_length" ? 1 : 0))
      return key == "lg_max_length" ? "not a positive integer"
                                    : "not a non-negative integer";
  }
  return "";
}

void compileInMemory(const CompileJob &job, deploy::PipelineResult &r) {
  auto get = [&](const std::string &key) {
    for (auto &[k, v] : job.params)
      if (k == key)
        return v;
    for (auto &[k, v] : kCompileKnobs)
      if (k == key)
        return v;
    return std::string();
  };
  std::unique_ptr<mlir::MLIRContext> context = tool::createContext();
  context->disableMultithreading();
  tool::ParsedModule parsed;
  if (std::string e = tool::loadModule(*context, job.model, true, parsed);
      !e.empty())
    throw ::tpu::Error(e);
  mlir::ModuleOp module = *parsed.module;
  deploy::PipelineOptions o;
  ::tpu::isa::Machine machine = ::tpu::isa::Machine::bm1684x();
  for (auto &[k, v] : job.params)
    if (k.find('.') != std::string::npos)
      machine.assign(k + "=" + v);
  machine.validate();
  o.machine = machine;
  o.mode = *parseQuantMode(get("quantize"));
  o.layerGroup = get("layer_group");
  o.lgMaxLength = get("lg_max_length");
  o.lgMaxHSlices = get("lg_max_h_slices");
  o.lgHFirst = get("lg_h_first") == "true";
  o.weightResident = get("weight_resident") == "true";
  o.lgKernels = get("lg_kernels") == "true";
  if (std::string e = tool::checkTensorSizes(
          module, o.mode == QuantMode::F32 ? 4 : 2, machine.chip.gmemBytes,
          "the chip's global memory (gmem_bytes)");
      !e.empty())
    throw ::tpu::Error(e);
  module::setMachine(module, machine);
  std::optional<QuantTable> table;
  std::optional<CaliTable> cali;
  if (std::string e = tool::loadCompileTables(module, job.model, job.qtable,
                                              job.cali, table, cali);
      !e.empty())
    throw ::tpu::Error(e);
  o.quantTable = table ? &*table : nullptr;
  o.cali = cali ? &*cali : nullptr;
  if (std::string e = deploy::compile(module, o, job.hooks, r); !e.empty())
    throw ::tpu::Error(e);
  getWeightRegistry(context.get()).release(module);
}

std::string hexDigest(const std::string &data) {
  return ::tpu::isa::hexString(::tpu::isa::sha256(
      reinterpret_cast<const uint8_t *>(data.data()), data.size()));
}

std::string fileDigest(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return hexDigest(ss.str());
}

std::string executableDigest(const std::string &path,
                             const std::string &version) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  if (!version.empty())
    for (size_t at = bytes.find(version); at != std::string::npos;
         at = bytes.find(version, at + version.size()))
      std::fill_n(bytes.begin() + at, version.size(), '\0');
  // The ELF note NT_GNU_BUILD_ID: namesz 4, descsz, type 3, "GNU\0", then
  // descsz bytes (little-endian words; the first such note, near the start).
  const std::string tag("\x03\0\0\0GNU\0", 8);
  size_t at = bytes.find(tag);
  if (at != std::string::npos && at >= 8 && at < 4096 &&
      bytes.compare(at - 8, 4, std::string("\x04\0\0\0", 4)) == 0) {
    uint32_t descsz = 0;
    std::memcpy(&descsz, bytes.data() + at - 4, 4);
    size_t desc = at + tag.size();
    if (descsz <= 64 && desc + descsz <= bytes.size())
      std::fill_n(bytes.begin() + desc, descsz, '\0');
  }
  return hexDigest(bytes);
}

Shard parseShard(const std::string &text) {
  unsigned long long i = 0, n = 0;
  char slash = 0, extra = 0;
  if (std::sscanf(text.c_str(), "%llu%c%llu%c", &i, &slash, &n, &extra) != 3 ||
      slash != '/' || n == 0 || i >= n)
    throw ::tpu::Error("--shard '" + text + "' is not I/N with 0 <= I < N");
  return Shard{size_t(i), size_t(n), /*given=*/true};
}

CommonOptions::CommonOptions(llvm::cl::SubCommand &sub,
                             llvm::cl::OptionCategory &category,
                             const char *positionalDesc, const char *outputDesc,
                             const char *items, const char *file)
    : jobsDesc(std::string(items) + " run at once (default: the cores)"),
      shardDesc(std::string("only the ") + items + " whose index % N == I"),
      checkDesc(std::string("only check the ") + file + " file and count its " +
                items),
      positional(llvm::cl::Positional, llvm::cl::desc(positionalDesc),
                 llvm::cl::sub(sub), llvm::cl::cat(category)),
      outDir("output", llvm::cl::desc(outputDesc), llvm::cl::value_desc("DIR"),
             llvm::cl::sub(sub), llvm::cl::cat(category)),
      outDirShort("o", llvm::cl::desc("Alias for --output"),
                  llvm::cl::aliasopt(outDir), llvm::cl::NotHidden,
                  llvm::cl::cat(category)),
      jobs("jobs", llvm::cl::desc(jobsDesc), llvm::cl::value_desc("N"),
           llvm::cl::sub(sub), llvm::cl::cat(category)),
      jobsShort("j", llvm::cl::desc("Alias for --jobs"),
                llvm::cl::aliasopt(jobs), llvm::cl::NotHidden,
                llvm::cl::cat(category)),
      shard("shard", llvm::cl::desc(shardDesc), llvm::cl::value_desc("I/N"),
            llvm::cl::sub(sub), llvm::cl::cat(category)),
      check("check", llvm::cl::desc(checkDesc), llvm::cl::sub(sub),
            llvm::cl::cat(category)) {}

CommandLine readCommandLine(const CommonOptions &options) {
  CommandLine cl;
  cl.jobs = options.jobs.getNumOccurrences()
                ? parsePositive(options.jobs, "--jobs")
                : defaultJobs();
  if (options.shard.getNumOccurrences())
    cl.shard = parseShard(options.shard);
  cl.check = options.check;
  cl.outDir = options.outDir;
  cl.positional.assign(options.positional.begin(), options.positional.end());
  // `merge` first is the merge form (`tpuc explore merge DIR...`).
  if (!cl.positional.empty() && cl.positional.front() == "merge") {
    cl.merge = true;
    cl.positional.erase(cl.positional.begin());
  }
  // Options that mean nothing to a merge: refused rather than ignored.
  if (cl.merge && options.shard.getNumOccurrences())
    throw ::tpu::Error("--shard is for running a shard; merge joins them "
                       "(drop --shard)");
  if (cl.merge && options.jobs.getNumOccurrences())
    throw ::tpu::Error("--jobs is for running; merge runs nothing (drop "
                       "--jobs)");
  // --check reads one file and writes nothing: what would run or write
  // is refused too.
  if (cl.check) {
    if (cl.merge)
      throw ::tpu::Error("--check checks one file; merge joins results (drop "
                         "--check or merge)");
    refuseWithCheck({&options.outDir, &options.jobs, &options.shard});
  }
  return cl;
}

void refuseWithCheck(std::initializer_list<const llvm::cl::Option *> options) {
  for (const llvm::cl::Option *o : options)
    if (o->getNumOccurrences())
      throw ::tpu::Error("--" + o->ArgStr.str() +
                         " is for running; --check runs and writes nothing "
                         "(drop --" +
                         o->ArgStr.str() + ")");
}

unsigned parsePositive(const std::string &v, const std::string &option) {
  char *end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || n < 1)
    throw ::tpu::Error(option + " '" + v + "' is not a positive integer");
  return unsigned(n);
}

unsigned defaultJobs() {
  return std::max(1u, unsigned(sysconf(_SC_NPROCESSORS_ONLN)));
}

std::string tailOf(const std::string &path, size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  std::string l;
  while (std::getline(in, l)) {
    // Our tools' "error:" and node's / Python's "Error:" ("SyntaxError:
    // Unexpected token", "Error: Cannot find module").
    if (l.find("error:") != std::string::npos ||
        l.find("Error:") != std::string::npos)
      return trim(l).substr(0, 400);
    if (!trim(l).empty() && l.rfind(kLogMarker, 0) != 0)
      all.push_back(l.substr(0, 200));
  }
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size();
       ++i)
    out += (out.empty() ? "" : " | ") + all[i];
  return out;
}

namespace {

/// The child's side of runPool: runs the job, writes its record, exits.
[[noreturn]] void childMain(
    size_t i, const std::string &logPath, const std::string &recPath,
    const std::function<void(size_t, json &)> &work) {
  int fd = open(logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
  }
  // Line by line, so that the log holds what a job printed before it
  // crashed.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  llvm::outs().SetUnbuffered();
  json rec = json::object();
  try {
    work(i, rec);
  } catch (const std::exception &e) {
    rec["status"] = "failed";
    rec["reason"] = e.what();
  }
  if (rec.value("status", "") == "failed") {
    std::fflush(nullptr);
    llvm::errs().flush();
    llvm::outs().flush();
    std::string diag = tailOf(logPath, 3);
    std::string reason = rec.value("reason", "");
    if (!diag.empty() && reason.find(diag) == std::string::npos)
      rec["reason"] = reason + " [" + diag + "]";
    // The log says it too (a job that throws may have printed nothing).
    std::fprintf(stderr, "failed: %s\n", reason.c_str());
    std::fflush(stderr);
  }
  {
    std::ofstream out(recPath + ".tmp");
    out << rec.dump() << "\n";
  }
  std::rename((recPath + ".tmp").c_str(), recPath.c_str());
  llvm::outs().flush();
  llvm::errs().flush();
  std::fflush(nullptr);
  _exit(0);
}

} // namespace

void runPool(size_t n, const PoolOptions &options,
             const std::function<std::string(size_t)> &logPath,
             const std::function<void(size_t, json &)> &work,
             const std::function<void(size_t, json &&, const std::string &)>
                 &done) {
  using Clock = std::chrono::steady_clock;
  struct Running {
    size_t index;
    Clock::time_point started;
    double timeout = 0;
    bool killed = false;
  };
  std::map<pid_t, Running> running;
  size_t next = 0;
  unsigned jobs = std::max(1u, options.jobs);
  while (next < n || !running.empty()) {
    while (next < n && running.size() < jobs) {
      size_t i = next++;
      std::string log = logPath(i), rec = log + ".record";
      std::remove(rec.c_str());
      llvm::outs().flush();
      llvm::errs().flush();
      std::fflush(nullptr);
      pid_t pid = fork();
      if (pid < 0)
        throw ::tpu::Error(std::string("fork failed: ") + std::strerror(errno));
      if (pid == 0)
        childMain(i, log, rec, work);
      running[pid] = Running{
          i, Clock::now(),
          options.timeoutSeconds ? options.timeoutSeconds(i) : 0.0};
    }
    int status = 0;
    bool timed = std::any_of(running.begin(), running.end(),
                             [](auto &r) { return r.second.timeout > 0; });
    pid_t pid = waitpid(-1, &status, timed ? WNOHANG : 0);
    if (pid < 0) {
      if (errno == EINTR)
        continue;
      throw ::tpu::Error(std::string("waitpid: ") + std::strerror(errno));
    }
    if (pid == 0) {
      // Nothing ended: kill the jobs past their time, then wait a little.
      for (auto &[p, r] : running)
        if (!r.killed && r.timeout > 0 &&
            std::chrono::duration<double>(Clock::now() - r.started).count() >
                r.timeout) {
          kill(p, SIGKILL);
          r.killed = true;
        }
      usleep(20000);
      continue;
    }
    auto it = running.find(pid);
    if (it == running.end())
      continue;
    Running r = it->second;
    running.erase(it);
    std::string log = logPath(r.index), recPath = log + ".record";
    json rec;
    bool ok = false;
    if (!r.killed) {
      std::ifstream in(recPath);
      if (in) {
        try {
          rec = json::parse(in);
          ok = true;
        } catch (...) {
        }
      }
    }
    std::remove(recPath.c_str());
    if (ok) {
      done(r.index, std::move(rec), "");
      continue;
    }
    std::string why =
        r.killed ? "timed out after " + formatNumber(r.timeout) +
                       " s (killed)"
        : WIFSIGNALED(status)
            ? "worker killed by signal " + std::to_string(WTERMSIG(status)) +
                  " (" + strsignal(WTERMSIG(status)) + ")"
            : "worker exited with status " +
                  std::to_string(WEXITSTATUS(status)) + " without a record";
    std::string diag = tailOf(log, 3);
    if (std::FILE *f = std::fopen(log.c_str(), "a")) {
      std::fprintf(f, "failed: %s\n", why.c_str());
      std::fclose(f);
    }
    json ran = {
        {"wall_seconds",
         std::chrono::duration<double>(Clock::now() - r.started).count()}};
    done(r.index, std::move(ran),
         why + (diag.empty() ? "" : " [" + diag + "]"));
  }
}

int fail(const char *tool, const std::string &message) {
  llvm::outs().flush();
  llvm::errs() << tool << ": error: " << message << "\n";
  return 1;
}

std::string listSome(const std::vector<std::string> &items, size_t most) {
  std::string list;
  for (size_t i = 0; i < items.size() && i < most; ++i)
    list += (i ? ", " : "") + items[i];
  return list + (items.size() > most ? ", ..." : "");
}

void createDirectory(const std::string &dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw ::tpu::Error("cannot create " + dir + ": " + ec.message());
}

void writeText(const std::string &path, const std::string &text) {
  ::tpu::isa::bmodel::writeFileAtomically(
      path, std::vector<uint8_t>(text.begin(), text.end()));
}

double cpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

Progress::Progress(std::string noun, size_t total, size_t skipped)
    : noun(std::move(noun)), total(total), skipped(skipped), tty(isatty(2)) {}

double Progress::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       start)
      .count();
}

void Progress::update() {
  if (!tty)
    return;
  constexpr int kWidth = 30;
  int filled = total ? int(kWidth * done / total) : kWidth;
  std::string bar(filled, '#');
  bar += std::string(kWidth - filled, '.');
  double e = elapsed();
  std::string eta = "--";
  if (done) {
    int s = int(e / done * (total - done) + 0.5);
    eta = std::to_string(s / 60) + "m" + std::to_string(s % 60) + "s";
  }
  std::fprintf(stderr, "\r[%s] %zu/%zu %s, %zu failed, ETA %s   ", bar.c_str(),
               done, total, noun.c_str(), failed, eta.c_str());
  std::fflush(stderr);
}

void Progress::finish() {
  if (tty)
    std::fprintf(stderr, "\n");
}

} // namespace tpuc::batch
