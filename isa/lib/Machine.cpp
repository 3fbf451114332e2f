//===- Machine.cpp - The machine: chip shape and timing constants ---------===//
#include "tpu/isa/Machine.h"

#include "tpu/isa/Bmodel.h"

#include "tpu/isa/Error.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <sstream>
#include <vector>

namespace tpu::isa {

namespace {

/// A row of TimingParams.def with typed access to its member.
struct TimingRow {
  const char *key;
  const char *unit;
  const char *description;
  const char *reason;
  void (*put)(TimingParams &, std::string_view text, const std::string &where);
  std::string (*get)(const TimingParams &);
};

struct TimingSection {
  const char *title;
  const char *note;
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

/// The table in its order: a section (title, note) or a row (both null; the
/// rows are kRows in the same order).
const TimingSection kLayout[] = {
#define TPU_TIMING_SECTION(Title, Note) {Title, Note},
#define TPU_TIMING_PARAM(Member, Key, Type, Default, Unit, Description,        \
                         Reason)                                               \
  {nullptr, nullptr},
#include "tpu/isa/TimingParams.def"
};

const TimingRow kRows[] = {
#define TPU_TIMING_PARAM(Member, Key, Type, Default, Unit, Description,        \
                         Reason)                                               \
  {Key,                                                                        \
   Unit,                                                                       \
   Description,                                                                \
   Reason,                                                                     \
   [](TimingParams &t, std::string_view s, const std::string &w) {             \
     parseInto(t.Member, s, w);                                                \
   },                                                                          \
   [](const TimingParams &t) { return format(t.Member); }},
#include "tpu/isa/TimingParams.def"
};
constexpr size_t kNumRows = sizeof(kRows) / sizeof(kRows[0]);

/// Periods are whole picoseconds; the clock must be slow enough that one
/// period is at least that.
uint64_t periodPs(double freqMhz) {
  return static_cast<uint64_t>(std::llround(TimingParams::kPsPerUs / freqMhz));
}

bool startsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

} // namespace

//===----------------------------------------------------------------------===//
// TimingParams
//===----------------------------------------------------------------------===//

size_t TimingParams::size() { return kNumRows; }

int TimingParams::find(std::string_view key) {
  for (size_t i = 0; i < kNumRows; ++i)
    if (key == kRows[i].key)
      return static_cast<int>(i);
  return -1;
}

namespace {
/// Levenshtein distance of two short keys.
size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min(
          {row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}
} // namespace

void TimingParams::set(std::string_view key, std::string_view value) {
  int row = find(key);
  if (row < 0) {
    // A misspelt key: the nearest machine key, when it is near (a third of
    // the key's letters at most).
    std::string best;
    size_t bestDistance = key.size() / 3 + 1;
    for (const MachineKeyInfo &info : Machine::describe())
      if (size_t d = editDistance(key, info.key); d < bestDistance)
        best = info.key, bestDistance = d;
    throw Error("unknown configuration key '" + std::string(key) + "'" +
                (best.empty() ? "" : " (did you mean '" + best + "'?)") +
                "; `tpusim config` lists the keys");
  }
  kRows[row].put(*this, value, "key '" + std::string(key) + "'");
}

std::vector<std::pair<std::string, std::string>> TimingParams::list() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const TimingRow &row : kRows)
    out.emplace_back(row.key, row.get(*this));
  return out;
}

std::vector<MachineKeyInfo> TimingParams::describe() {
  std::vector<MachineKeyInfo> out;
  for (const TimingRow &row : kRows)
    out.push_back({row.key, row.unit, row.description, row.reason});
  return out;
}

void TimingParams::validate() const {
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
}

uint64_t TimingParams::tiuPeriodPs() const { return periodPs(tiuFreqMhz); }
uint64_t TimingParams::gdmaPeriodPs() const { return periodPs(gdmaFreqMhz); }

uint64_t TimingParams::ddrLatencyPs() const {
  return static_cast<uint64_t>(std::llround(ddrLatencyNs * kPsPerNs));
}

uint64_t TimingParams::mcuGroupLaunchPs() const {
  return static_cast<uint64_t>(std::llround(mcuGroupLaunchNs * kPsPerNs));
}

uint64_t TimingParams::cubePixels(Prec p) const {
  switch (precBits(p)) {
  case 32:
    return cubePixels32;
  case 16:
    return cubePixels16;
  default:
    return cubePixelsInt8;
  }
}

uint64_t peakMacsPerCycle(const ChipParams &chip, const TimingParams &timing,
                          Prec p) {
  return uint64_t(chip.npuNum) * chip.icParallel(p) * timing.cubePixels(p);
}

//===----------------------------------------------------------------------===//
// Machine
//===----------------------------------------------------------------------===//

void Machine::set(std::string_view key, std::string_view value) {
  if (startsWith(key, kChipPrefix)) {
    chip.set(key.substr(std::string_view(kChipPrefix).size()), value);
    return;
  }
  timing.set(key, value);
}

std::pair<std::string, std::string> splitKeyValue(std::string_view text) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos)
    throw Error("expected key=value, got '" + std::string(text) + "'");
  std::string key = trim(text.substr(0, eq));
  if (key.empty())
    throw Error("expected key=value, got '" + std::string(text) + "' (no key)");
  return {key, trim(text.substr(eq + 1))};
}

void Machine::assign(std::string_view keyEqualsValue) {
  auto [key, value] = splitKeyValue(keyEqualsValue);
  set(key, value);
}

std::vector<std::pair<std::string, std::string>> Machine::list() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto &[key, value] : chip.list())
    out.emplace_back(kChipPrefix + key, value);
  for (auto &kv : timing.list())
    out.push_back(std::move(kv));
  return out;
}

std::vector<MachineKeyInfo> Machine::describe() {
  std::vector<MachineKeyInfo> out;
  out.push_back({std::string(kChipPrefix) + "name", "", "chip name", ""});
  for (const ChipParamInfo &info : ChipParams::describe())
    out.push_back(
        {std::string(kChipPrefix) + info.key, info.unit, info.description, ""});
  for (MachineKeyInfo &info : TimingParams::describe())
    out.push_back(std::move(info));
  return out;
}

std::string Machine::toText() const {
  std::string out;
  for (auto &[key, value] : list())
    out += key + " = " + value + "\n";
  return out;
}

void Machine::loadText(std::string_view text, const std::string &sourceName) {
  parseConfigText(text, sourceName,
                  [this](const std::string &key, const std::string &value) {
                    set(key, value);
                  });
}

void Machine::loadFile(const std::string &path) {
  std::vector<uint8_t> bytes = bmodel::readFile(path);
  loadText(std::string_view(reinterpret_cast<const char *>(bytes.data()),
                            bytes.size()),
           path);
}

void parseConfigText(
    std::string_view text, const std::string &sourceName,
    const std::function<void(const std::string &key, const std::string &value)>
        &apply) {
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
      apply(key, value);
    } catch (const Error &e) {
      throw Error(where + ": " + e.what());
    }
  }
}

std::string chipShortfall(const ChipParams &compiledFor,
                          const ChipParams &simulated) {
  std::string out;
  auto need = [&](const char *key, uint64_t wants, uint64_t has,
                  const char *what) {
    if (wants <= has)
      return;
    out += std::string(out.empty() ? "" : "; ") + "it needs " +
           std::to_string(wants) + " " + what + " (chip." + key +
           "), the machine has " + std::to_string(has);
  };
  need("npu_num", compiledFor.npuNum, simulated.npuNum, "lanes");
  need("lmem_bytes", compiledFor.lmemBytes, simulated.lmemBytes,
       "bytes of local memory per lane");
  need("lmem_banks", compiledFor.lmemBanks, simulated.lmemBanks,
       "local-memory banks");
  return out;
}

void Machine::validate() const {
  timing.validate();
  chip.validate();
}

namespace {

constexpr size_t kTextWidth = 78;

/// `text` as `# ` comment lines of at most kTextWidth columns.
void appendWrapped(std::string &out, std::string_view text) {
  std::string line = "#";
  std::istringstream words{std::string(text)};
  std::string word;
  while (words >> word) {
    if (line.size() > 1 && line.size() + 1 + word.size() > kTextWidth) {
      out += line + "\n";
      line = "#";
    }
    line += " " + word;
  }
  if (line.size() > 1)
    out += line + "\n";
}

/// "key = value" padded so that the comments of a section line up.
std::string keyValue(const std::string &key, const std::string &value) {
  constexpr size_t kColumn = 30;
  std::string s = key + " = " + value;
  if (s.size() < kColumn)
    s.append(kColumn - s.size(), ' ');
  return s + " ";
}

void appendSection(std::string &out, const std::string &title) {
  std::string head = "# --- " + title + " ";
  if (head.size() < kTextWidth)
    head.append(kTextWidth - head.size(), '-');
  out += "\n" + head + "\n";
}

} // namespace

std::string Machine::defaultsText() {
  Machine m;
  std::string out =
      "# BM1684X machine: the defaults of isa/include/tpu/isa/ChipParams.def\n"
      "# and isa/include/tpu/isa/TimingParams.def. GENERATED, do not edit:\n"
      "# change the tables and regenerate with\n"
      "#   tpusim config --defaults-file > simulator/configs/bm1684x.cfg\n"
      "# Lines are `key = value  # unit; reason`. A file of such lines (any\n"
      "# subset of the keys) overrides the defaults: `tpusim --config FILE`;\n"
      "# single keys: `tpusim -p key=value`. simulator/docs/timing.md derives\n"
      "# the formulas that use the timing keys.\n";
  appendSection(out, "Machine shape (isa/docs/bm1684x.md 1.1, 2)");
  auto chipInfos = ChipParams::describe();
  auto chipValues = m.chip.list();
  // list() starts with "name", describe() does not.
  out += keyValue(std::string(kChipPrefix) + chipValues[0].first,
                  chipValues[0].second) +
         "# chip name\n";
  for (size_t i = 0; i < chipInfos.size(); ++i)
    out += keyValue(std::string(kChipPrefix) + chipInfos[i].key,
                    chipValues[i + 1].second) +
           "# " + chipInfos[i].unit + "; " + chipInfos[i].description + "\n";
  size_t row = 0;
  for (const TimingSection &item : kLayout) {
    if (item.title) {
      appendSection(out, item.title);
      if (*item.note)
        appendWrapped(out, item.note);
      continue;
    }
    const TimingRow &r = kRows[row++];
    out += keyValue(r.key, r.get(m.timing)) + "# " + r.unit + "; " + r.reason +
           "\n";
  }
  return out;
}

} // namespace tpu::isa
