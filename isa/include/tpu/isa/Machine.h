//===- Machine.h - The machine: chip shape and timing constants -*- C++ -*-===//
//
// One description of the machine the compiler targets and the simulator
// models: the chip shape (ChipParams, the table ChipParams.def) and the
// timing constants of the cost model (TimingParams, the table
// TimingParams.def). Both tables carry their BM1684X defaults; every value
// can be set by key: `chip.npu_num`, `chip.lmem_bytes`, ... for the shape,
// `tiu.cube_startup`, `ddr.bandwidth_gbps`, ... for the timing.
//
//===----------------------------------------------------------------------===//
#ifndef TPU_ISA_MACHINE_H
#define TPU_ISA_MACHINE_H

#include "tpu/isa/ChipParams.h"
#include "tpu/isa/Types.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tpu::isa {

/// Description of one key of the machine (a row of TimingParams.def, or a
/// chip parameter with its `chip.` prefix).
struct MachineKeyInfo {
  std::string key;
  std::string unit;
  std::string description;
  /// Why the default has its value ("" for chip keys).
  std::string reason;
};

/// The timing constants of the cost model, with the BM1684X defaults of
/// TimingParams.def.
struct TimingParams {
#define TPU_TIMING_PARAM(Member, Key, Type, Default, Unit, Description,        \
                         Reason)                                               \
  Type Member = Default;
#include "tpu/isa/TimingParams.def"

  /// Number of rows of TimingParams.def.
  static size_t size();
  /// Index of the row whose key is `key` ("tiu.cube_startup"), or -1.
  static int find(std::string_view key);

  /// Sets the constant called `key` from text: a non-negative integer
  /// (decimal, 0x hex or 0 octal) for counts, a non-negative finite number
  /// for rates and times. Throws Error naming the key for an unknown key or
  /// a malformed value. Does not validate the combination.
  void set(std::string_view key, std::string_view value);
  /// Every constant as (key, value text), in table order.
  std::vector<std::pair<std::string, std::string>> list() const;
  /// Keys, units, descriptions and reasons, in table order.
  static std::vector<MachineKeyInfo> describe();
  /// Throws Error naming the first rate or size that must be positive.
  void validate() const;

  //===--------------------------------------------------------------------===//
  // Derived quantities
  //===--------------------------------------------------------------------===//

  /// Clock periods in picoseconds (the time resolution of the model).
  uint64_t tiuPeriodPs() const;
  uint64_t gdmaPeriodPs() const;
  /// DDR transfer time of one byte at full bandwidth, in picoseconds.
  double ddrPsPerByte() const { return kPsPerNs / ddrBandwidthGBps; }
  /// DDR latency in picoseconds.
  uint64_t ddrLatencyPs() const;
  /// MCU group launch time in picoseconds.
  uint64_t mcuGroupLaunchPs() const;
  /// Output points per lane and step of the cube for input precision `p`.
  uint64_t cubePixels(Prec p) const;

  /// Picoseconds per nanosecond; GB/s = bytes per ns.
  static constexpr double kPsPerNs = 1000.0;
  /// Picoseconds per microsecond (clock frequencies are in MHz).
  static constexpr double kPsPerUs = 1e6;
};

/// Peak multiply-accumulates per TIU cycle at precision `p`:
/// lanes x icParallel(p) x cubePixels(p).
uint64_t peakMacsPerCycle(const ChipParams &chip, const TimingParams &timing,
                          Prec p);

/// The whole machine.
struct Machine {
  ChipParams chip;
  TimingParams timing;

  /// Prefix of the keys that go to `chip`.
  static constexpr const char *kChipPrefix = "chip.";

  /// The BM1684X defaults of both tables.
  static Machine bm1684x() { return Machine(); }

  /// Sets one key: `chip.<key>` goes to ChipParams::set, every other key to
  /// TimingParams::set. Throws Error for an unknown key or a bad value.
  void set(std::string_view key, std::string_view value);
  /// set() from "key=value" (spaces around key and value are ignored).
  void assign(std::string_view keyEqualsValue);
  /// Every key with its value as text: chip keys (with their prefix) first.
  std::vector<std::pair<std::string, std::string>> list() const;
  /// Every key with unit, description and reason, in the order of list().
  static std::vector<MachineKeyInfo> describe();
  /// Throws Error naming the first problem (TimingParams::validate, then
  /// ChipParams::validate).
  void validate() const;

  uint64_t peakMacsPerCycle(Prec p) const {
    return isa::peakMacsPerCycle(chip, timing, p);
  }

  /// Every key as `key = value` lines (list() order): the machine as text,
  /// as a bmodel records it; loadText() reads it back.
  std::string toText() const;
  /// Applies config text (`key = value` lines, `#` comments; parseConfigText)
  /// with set(); `sourceName` names it in errors.
  void loadText(std::string_view text, const std::string &sourceName);
  /// loadText() of a config file (`--config FILE` of the tools; a
  /// directory or a device is refused by name).
  void loadFile(const std::string &path);

  /// The defaults as a config file of `key = value  # unit; reason` lines,
  /// one section per group of TimingParams.def (simulator/configs/
  /// bm1684x.cfg is this text).
  static std::string defaultsText();
};

/// "key=value" as (key, value), spaces around each trimmed (a `-p`
/// argument). Throws Error for text without '='.
std::pair<std::string, std::string> splitKeyValue(std::string_view text);

/// Calls `apply(key, value)` for every `key = value` line of config text
/// (`#` starts a comment; blank lines are skipped; spaces around key and
/// value are trimmed). Throws Error naming `sourceName`, the line and the
/// problem for a line without '=', a key set twice, or an Error `apply`
/// throws.
void parseConfigText(
    std::string_view text, const std::string &sourceName,
    const std::function<void(const std::string &key, const std::string &value)>
        &apply);

/// Why a model compiled for the chip `compiledFor` cannot run on `simulated`
/// ("" when it can): it needs more lanes, more local memory per lane or more
/// banks than `simulated` has.
std::string chipShortfall(const ChipParams &compiledFor,
                          const ChipParams &simulated);

} // namespace tpu::isa

#endif // TPU_ISA_MACHINE_H
