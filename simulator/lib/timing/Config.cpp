//===- Config.cpp - Typed configuration of the simulator ------------------===//
#include "tpusim/Config.h"

#include "tpu/isa/Error.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <mutex>
#include <set>
#include <sstream>

namespace tpu::sim {

namespace {

/// A row of SimParams.def with typed access to its member.
struct ParamRow {
  const char *key;
  const char *unit;
  const char *description;
  bool isDouble;
  void (*put)(SimConfig &, std::string_view text, const std::string &where);
  std::string (*get)(const SimConfig &);
};

[[noreturn]] void badValue(const std::string &where, std::string_view text,
                           const char *expected) {
  throw Error(where + ": '" + std::string(text) + "' is not " + expected);
}

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos)
    return {};
  size_t e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

void parseInto(uint64_t &out, std::string_view text, const std::string &where) {
  std::string s(text);
  if (s.empty() || s[0] == '-' || s[0] == '+')
    badValue(where, text, "a non-negative integer");
  errno = 0;
  char *end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 0);
  if (errno != 0 || end == s.c_str() || *end != '\0')
    badValue(where, text, "a non-negative integer");
  out = v;
}

void parseInto(double &out, std::string_view text, const std::string &where) {
  std::string s(text);
  errno = 0;
  char *end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || errno != 0 || end == s.c_str() || *end != '\0' ||
      !std::isfinite(v) || v < 0)
    badValue(where, text, "a non-negative number");
  out = v;
}

std::string format(uint64_t v) { return std::to_string(v); }
std::string format(double v) {
  std::ostringstream os;
  os.precision(std::numeric_limits<double>::max_digits10);
  os << v;
  return os.str();
}

template <typename T> constexpr bool isDoubleType() {
  return std::is_same_v<T, double>;
}

const ParamRow kRows[] = {
#define TPUSIM_PARAM(Member, Key, Type, Unit, Description)                     \
  {Key,                                                                        \
   Unit,                                                                       \
   Description,                                                                \
   isDoubleType<Type>(),                                                       \
   [](SimConfig &c, std::string_view t, const std::string &w) {                \
     parseInto(c.Member, t, w);                                                \
   },                                                                          \
   [](const SimConfig &c) { return format(c.Member); }},
#include "tpusim/SimParams.def"
};
constexpr size_t kNumRows = sizeof(kRows) / sizeof(kRows[0]);

int findRow(std::string_view key) {
  for (size_t i = 0; i < kNumRows; ++i)
    if (key == kRows[i].key)
      return static_cast<int>(i);
  return -1;
}

bool startsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

/// Periods are whole picoseconds; the clock must be slow enough that one
/// period is at least that.
uint64_t periodPs(double freqMhz) {
  return static_cast<uint64_t>(std::llround(SimConfig::kPsPerUs / freqMhz));
}

} // namespace

std::string_view SimConfig::defaultText() {
  // simulator/configs/bm1684x.cfg as a raw string literal, generated at
  // build time by simulator/cmake/EmbedText.cmake.
  static const char kText[] =
#include "tpusim/DefaultConfig.inc"
      ;
  return {kText, sizeof(kText) - 1};
}

SimConfig SimConfig::defaults() {
  static std::once_flag once;
  static SimConfig cached;
  std::call_once(once, [] {
    SimConfig c;
    c.loadText(defaultText(), kDefaultName);
    c.validate();
    cached = c;
  });
  return cached;
}

void SimConfig::loadFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(path + ": cannot open config file");
  std::ostringstream text;
  text << in.rdbuf();
  loadText(text.str(), path);
}

void SimConfig::loadText(std::string_view text, const std::string &sourceName) {
  std::set<std::string> seen;
  size_t lineNo = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text =
        nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++lineNo;
    if (size_t hash = line.find('#'); hash != std::string_view::npos)
      line = line.substr(0, hash);
    std::string body = trim(line);
    if (body.empty())
      continue;
    std::string where = sourceName + ":" + std::to_string(lineNo);
    size_t eq = body.find('=');
    if (eq == std::string::npos)
      throw Error(where + ": expected 'key = value', got '" + body + "'");
    std::string key = trim(std::string_view(body).substr(0, eq));
    std::string value = trim(std::string_view(body).substr(eq + 1));
    if (!seen.insert(key).second)
      throw Error(where + ": key '" + key + "' is set twice");
    try {
      set(key, value);
    } catch (const Error &e) {
      throw Error(where + ": " + e.what());
    }
  }
}

void SimConfig::set(std::string_view key, std::string_view value) {
  if (startsWith(key, kChipPrefix)) {
    chip.set(key.substr(std::string_view(kChipPrefix).size()), value);
    return;
  }
  int row = findRow(key);
  if (row < 0)
    throw Error("unknown configuration key '" + std::string(key) + "'");
  kRows[row].put(*this, value, "key '" + std::string(key) + "'");
  if (assigned_.size() != kNumRows)
    assigned_.assign(kNumRows, false);
  assigned_[row] = true;
}

void SimConfig::assign(std::string_view keyEqualsValue) {
  size_t eq = keyEqualsValue.find('=');
  if (eq == std::string_view::npos)
    throw Error("expected key=value, got '" + std::string(keyEqualsValue) +
                "'");
  set(trim(keyEqualsValue.substr(0, eq)), trim(keyEqualsValue.substr(eq + 1)));
}

void SimConfig::validate() const {
  for (size_t i = 0; i < kNumRows; ++i)
    if (assigned_.size() != kNumRows || !assigned_[i])
      throw Error(std::string("configuration key '") + kRows[i].key +
                  "' has no value (every timing constant must be set in the "
                  "config file)");
  auto positive = [](const char *key, double v) {
    if (!(v > 0))
      throw Error(std::string("configuration key '") + key +
                  "' must be positive");
  };
  positive("tiu.freq_mhz", tiuFreqMhz);
  positive("gdma.freq_mhz", gdmaFreqMhz);
  if (tiuPeriodPs() == 0 || gdmaPeriodPs() == 0)
    throw Error("clock frequencies above 1e6 MHz are not representable "
                "(time resolution is 1 ps)");
  positive("tiu.cube_pixels_int8", double(cubePixelsInt8));
  positive("tiu.cube_pixels_16bit", double(cubePixels16));
  positive("tiu.cube_pixels_32bit", double(cubePixels32));
  positive("tiu.eu_steps_per_cycle", double(euStepsPerCycle));
  positive("gdma.datapath_bytes", double(gdmaDatapathBytes));
  positive("gdma.max_outstanding", double(gdmaMaxOutstanding));
  positive("ddr.bandwidth_gbps", ddrBandwidthGBps);
  positive("ddr.burst_bytes", double(ddrBurstBytes));
  chip.validate();
}

std::vector<std::pair<std::string, std::string>> SimConfig::list() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto &[key, value] : chip.list())
    out.emplace_back(kChipPrefix + key, value);
  for (const ParamRow &row : kRows)
    out.emplace_back(row.key, row.get(*this));
  return out;
}

std::vector<ConfigKeyInfo> SimConfig::describe() {
  std::vector<ConfigKeyInfo> out;
  out.push_back({std::string(kChipPrefix) + "name", "", "chip name"});
  for (const isa::ChipParamInfo &info : isa::ChipParams::describe())
    out.push_back(
        {std::string(kChipPrefix) + info.key, info.unit, info.description});
  for (const ParamRow &row : kRows)
    out.push_back({row.key, row.unit, row.description});
  return out;
}

uint64_t SimConfig::tiuPeriodPs() const { return periodPs(tiuFreqMhz); }
uint64_t SimConfig::gdmaPeriodPs() const { return periodPs(gdmaFreqMhz); }

uint64_t SimConfig::ddrLatencyPs() const {
  return static_cast<uint64_t>(std::llround(ddrLatencyNs * kPsPerNs));
}

uint64_t SimConfig::mcuGroupLaunchPs() const {
  return static_cast<uint64_t>(std::llround(mcuGroupLaunchNs * kPsPerNs));
}

uint64_t SimConfig::cubePixels(isa::Prec p) const {
  switch (isa::precBits(p)) {
  case 32:
    return cubePixels32;
  case 16:
    return cubePixels16;
  default:
    return cubePixelsInt8;
  }
}

uint64_t SimConfig::peakMacsPerCycle(isa::Prec p) const {
  return uint64_t(chip.npuNum) * chip.icParallel(p) * cubePixels(p);
}

} // namespace tpu::sim
