//===- Config.cpp - Typed configuration of the simulator ------------------===//
#include "tpusim/Config.h"

#include "tpu/isa/Bmodel.h"
#include "tpu/isa/Error.h"

#include <fstream>
#include <mutex>
#include <sstream>

namespace tpu::sim {

namespace {

bool startsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

} // namespace

std::string_view SimConfig::defaultText() {
  static const std::string text = isa::Machine::defaultsText();
  return text;
}

SimConfig SimConfig::fromMachine(const isa::Machine &m) {
  SimConfig c;
  static_cast<isa::TimingParams &>(c) = m.timing;
  c.chip = m.chip;
  c.assigned_.assign(isa::TimingParams::size(), true);
  return c;
}

isa::Machine SimConfig::machine() const {
  isa::Machine m;
  m.chip = chip;
  m.timing = *this;
  return m;
}

SimConfig SimConfig::defaults() {
  static std::once_flag once;
  static SimConfig cached;
  std::call_once(once, [] {
    SimConfig c = fromMachine(isa::Machine::bm1684x());
    c.validate();
    cached = c;
  });
  return cached;
}

void SimConfig::loadFile(const std::string &path) {
  // A directory or a device is refused by name (an ifstream opens a
  // directory and reads nothing from it: the defaults, silently).
  if (std::string why = isa::bmodel::notAFile(path); !why.empty())
    throw Error(path + ": config file " + why);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(path + ": cannot open config file");
  std::ostringstream text;
  text << in.rdbuf();
  loadText(text.str(), path);
}

void SimConfig::loadText(std::string_view text, const std::string &sourceName) {
  isa::parseConfigText(text, sourceName,
                       [this](const std::string &key,
                              const std::string &value) { set(key, value); });
}

void SimConfig::set(std::string_view key, std::string_view value) {
  if (startsWith(key, kChipPrefix)) {
    chip.set(key.substr(std::string_view(kChipPrefix).size()), value);
    return;
  }
  isa::TimingParams::set(key, value);
  size_t rows = isa::TimingParams::size();
  if (assigned_.size() != rows)
    assigned_.assign(rows, false);
  assigned_[size_t(isa::TimingParams::find(key))] = true;
}

void SimConfig::assign(std::string_view keyEqualsValue) {
  auto [key, value] = isa::splitKeyValue(keyEqualsValue);
  set(key, value);
}

void SimConfig::validate() const {
  std::vector<isa::MachineKeyInfo> rows = isa::TimingParams::describe();
  for (size_t i = 0; i < rows.size(); ++i)
    if (assigned_.size() != rows.size() || !assigned_[i])
      throw Error(std::string("configuration key '") + rows[i].key +
                  "' has no value (a configuration built from nothing must "
                  "set every timing constant; SimConfig::defaults() has "
                  "them all)");
  isa::TimingParams::validate();
  chip.validate();
}

std::vector<std::pair<std::string, std::string>> SimConfig::list() const {
  return machine().list();
}

std::vector<ConfigKeyInfo> SimConfig::describe() {
  std::vector<ConfigKeyInfo> out;
  for (isa::MachineKeyInfo &info : isa::Machine::describe())
    out.push_back({std::move(info.key), std::move(info.unit),
                   std::move(info.description)});
  return out;
}

} // namespace tpu::sim
