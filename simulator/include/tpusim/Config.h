//===- Config.h - Typed configuration of the simulator ------------*- C++
//-*-===//
//
// The machine the simulator models: the timing constants (isa::TimingParams,
// the table isa/include/tpu/isa/TimingParams.def, whose defaults are the
// BM1684X model) plus the chip shape (isa::ChipParams). Values can be
// overridden from config files of `key = value  # unit, reason` lines and by
// `key=value` arguments; keys starting with `chip.` are handed to
// isa::ChipParams::set, so an architect can change lanes, local memory or
// banks without rebuilding. simulator/configs/bm1684x.cfg is the defaults
// written out as such a file (isa::Machine::defaultsText()).
//
//===----------------------------------------------------------------------===//
#ifndef TPUSIM_CONFIG_H
#define TPUSIM_CONFIG_H

#include "tpu/isa/ChipParams.h"
#include "tpu/isa/Machine.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tpu::sim {

/// Description of one configuration key (a row of TimingParams.def, or a chip
/// parameter with its `chip.` prefix).
struct ConfigKeyInfo {
  std::string key;
  std::string unit;
  std::string description;
};

/// The timing constants are the members of the base (cfg.cubeStartup, ...).
struct SimConfig : isa::TimingParams {
  /// Shape of the machine (lanes, local memory, banks, address map).
  isa::ChipParams chip;

  /// Prefix of the keys that go to `chip`.
  static constexpr const char *kChipPrefix = isa::Machine::kChipPrefix;

  /// The default configuration: the defaults of the tables (isa::Machine),
  /// every key counted as set, validated.
  static SimConfig defaults();
  /// The defaults as config file text (isa::Machine::defaultsText(), the
  /// content of simulator/configs/bm1684x.cfg).
  static std::string_view defaultText();

  /// The configuration of `m`, every key counted as set.
  static SimConfig fromMachine(const isa::Machine &m);
  /// The chip and timing constants as an isa::Machine.
  isa::Machine machine() const;

  /// Applies every `key = value` line of a config file (`#` starts a
  /// comment). Throws Error naming the file, line and key on an unknown key,
  /// a malformed value or a key set twice in the same file.
  void loadFile(const std::string &path);
  /// Applies config text; `sourceName` names it in errors.
  void loadText(std::string_view text, const std::string &sourceName);
  /// Sets one key from text. Throws Error for an unknown key or bad value.
  void set(std::string_view key, std::string_view value);
  /// set() from "key=value" (a `-p` argument).
  void assign(std::string_view keyEqualsValue);

  /// Throws Error naming the first problem: a timing key that no file or
  /// override set (a configuration built from nothing must set them all), a
  /// rate or size that must be positive, or an inconsistent chip
  /// (isa::ChipParams::validate).
  void validate() const;

  /// Every key with its current value as text, chip keys first.
  std::vector<std::pair<std::string, std::string>> list() const;
  /// Every key with unit and description, in the order of list().
  static std::vector<ConfigKeyInfo> describe();

  /// Peak multiply-accumulates per TIU cycle at precision `p`:
  /// lanes x icParallel(p) x cubePixels(p).
  uint64_t peakMacsPerCycle(isa::Prec p) const {
    return isa::peakMacsPerCycle(chip, *this, p);
  }

private:
  /// Which timing keys have been given a value (index = row of the table).
  std::vector<bool> assigned_;
};

} // namespace tpu::sim

#endif // TPUSIM_CONFIG_H
