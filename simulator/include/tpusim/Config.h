//===- Config.h - Typed configuration of the simulator ------------*- C++
//-*-===//
//
// Every timing constant of the model, as one typed struct generated from the
// table in SimParams.def, plus the chip shape (isa::ChipParams). Values come
// from a config file of `key = value  # unit, reason` lines
// (simulator/configs/bm1684x.cfg) and from `key=value` overrides; keys
// starting with `chip.` are handed to isa::ChipParams::set, so an architect
// can change lanes, local memory or banks without rebuilding.
//
//===----------------------------------------------------------------------===//
#ifndef TPUSIM_CONFIG_H
#define TPUSIM_CONFIG_H

#include "tpu/isa/ChipParams.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tpu::sim {

/// Description of one configuration key (a row of SimParams.def, or a chip
/// parameter with its `chip.` prefix).
struct ConfigKeyInfo {
  std::string key;
  std::string unit;
  std::string description;
};

struct SimConfig {
  /// Shape of the machine (lanes, local memory, banks, address map).
  isa::ChipParams chip;

#define TPUSIM_PARAM(Member, Key, Type, Unit, Description) Type Member = 0;
#include "tpusim/SimParams.def"

  /// Prefix of the keys that go to `chip`.
  static constexpr const char *kChipPrefix = "chip.";

  /// The default configuration: simulator/configs/bm1684x.cfg, whose text
  /// is compiled into the library at build time (so a copied or installed
  /// binary needs no source tree), complete and validated. Parsed once per
  /// process.
  static SimConfig defaults();
  /// The text of the built-in default configuration file.
  static std::string_view defaultText();
  /// The name the built-in file has in messages.
  static constexpr const char *kDefaultName = "bm1684x.cfg (built in)";

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
  /// override set, a rate or size that must be positive, or an inconsistent
  /// chip (isa::ChipParams::validate).
  void validate() const;

  /// Every key with its current value as text, chip keys first.
  std::vector<std::pair<std::string, std::string>> list() const;
  /// Every key with unit and description, in the order of list().
  static std::vector<ConfigKeyInfo> describe();

  //===--------------------------------------------------------------------===//
  // Derived quantities (used by the timing model and the tests)
  //===--------------------------------------------------------------------===//

  /// Clock periods in picoseconds (the simulator's time resolution).
  uint64_t tiuPeriodPs() const;
  uint64_t gdmaPeriodPs() const;
  /// DDR transfer time of one byte at full bandwidth, in picoseconds.
  double ddrPsPerByte() const { return kPsPerNs / ddrBandwidthGBps; }
  /// DDR latency in picoseconds.
  uint64_t ddrLatencyPs() const;
  /// MCU group launch time in picoseconds.
  uint64_t mcuGroupLaunchPs() const;
  /// Output points per lane and step of the cube for input precision `p`.
  uint64_t cubePixels(isa::Prec p) const;
  /// Peak multiply-accumulates per TIU cycle at precision `p`:
  /// lanes x icParallel(p) x cubePixels(p).
  uint64_t peakMacsPerCycle(isa::Prec p) const;

  /// Picoseconds per nanosecond; GB/s = bytes per ns.
  static constexpr double kPsPerNs = 1000.0;
  /// Picoseconds per microsecond (clock frequencies are in MHz).
  static constexpr double kPsPerUs = 1e6;

private:
  /// Which timing keys have been given a value (index = row of the table).
  std::vector<bool> assigned_;
};

} // namespace tpu::sim

#endif // TPUSIM_CONFIG_H
