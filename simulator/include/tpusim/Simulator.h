//===- Simulator.h - Running command groups on the simulated chip -*- C++
//-*-===//
//
// The public face of the SystemC model, free of SystemC types: a Simulator
// owns the machine state (local, static and global memory), runs command
// groups (one TIU and one GDMA stream each) and accumulates statistics and
// an optional trace. The SystemC modules behind it are in Tpu.h.
//
// SystemC allows one elaboration per process, so the module tree is built
// once, on first use, and every Simulator drives that same tree: the modules
// keep no state between groups, each Simulator owns its machine state and
// counters. Several Simulators may exist; runs happen one at a time (the
// SystemC kernel is not thread-safe, so use one thread per process).
//
//===----------------------------------------------------------------------===//
#ifndef TPUSIM_SIMULATOR_H
#define TPUSIM_SIMULATOR_H

#include "tpu/isa/Command.h"
#include "tpu/isa/Error.h"
#include "tpusim/Config.h"
#include "tpusim/Memory.h"
#include "tpusim/Stats.h"
#include "tpusim/Trace.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tpu::sim {

enum class SimMode : uint8_t {
  Full,       ///< Execute every command and time it.
  Functional, ///< Execute, no timing (ids are still honoured).
  Timing,     ///< Time only, no arithmetic (for fast sweeps).
};

const char *simModeName(SimMode m); ///< "full", "functional", "timing"
std::optional<SimMode> simModeFromName(std::string_view name);

/// A run stopped by the simulated machine: an access outside memory, an
/// operand the hardware rejects, an unknown command or a deadlock. The
/// message names the engine, the command group, the command index, its id
/// and its disassembly.
class SimError : public tpu::Error {
public:
  enum class Kind : uint8_t {
    Memory,         ///< Address outside local/global memory, misalignment.
    UnknownCommand, ///< A head no layout covers, or a command not modelled.
    InvalidCommand, ///< A command whose fields the hardware rejects.
    Deadlock, ///< Every unfinished engine waits for an id that never comes.
  };
  SimError(Kind kind, const std::string &message)
      : tpu::Error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

private:
  Kind kind_;
};

/// Called with the engine, the command group and the command's index in
/// that engine's stream right after the command has executed (full and
/// functional modes; in timing mode it is called too, but nothing has
/// executed). Each engine calls it
/// in its stream order; the two streams interleave as the id dependencies
/// let the engines run (a command runs only after the other engine's
/// command it waits for has run). TIU commands change only local memory,
/// so global memory changes in GDMA stream order.
using CommandObserver =
    std::function<void(isa::Engine engine, unsigned group, size_t index)>;

class Simulator {
public:
  /// Throws Error when `cfg` does not validate.
  Simulator(const SimConfig &cfg, SimMode mode);
  ~Simulator();
  Simulator(const Simulator &) = delete;
  Simulator &operator=(const Simulator &) = delete;

  const SimConfig &config() const;
  SimMode mode() const;
  MachineState &state();

  /// Records one TraceEvent per command from now on.
  void setTracing(bool on);
  const std::vector<TraceEvent> &trace() const;
  /// While tracing: the intervals [start, end), ps since the run's start,
  /// in which the DDR channel moved bytes (at its peak rate, which its
  /// transfers share), in time order.
  const PsIntervals &ddrBusy() const;

  /// Calls `observer` after every command from now on (an empty function
  /// removes it). The observer may read and write the machine state.
  void setCommandObserver(CommandObserver observer);

  /// Limits the commands of all groups run from now on to `maxCommands`
  /// (0: no limit; end commands count). A group whose commands would take
  /// the total past the limit is refused before any of it runs: runGroup
  /// throws Error naming the group, its command count and the limit.
  void setCommandBudget(uint64_t maxCommands);
  /// Commands of the groups run so far (end commands included).
  uint64_t commandsRun() const;

  /// Runs one command group given as its two byte streams (as stored in a
  /// bmodel). Group ids are local: both scoreboards restart at 0. The group
  /// starts when the previous one has finished on both engines. Throws
  /// SimError (or Error for a stream that does not split into commands).
  void runGroup(const std::vector<uint8_t> &tiu,
                const std::vector<uint8_t> &gdma);
  /// Runs one group given as commands. End commands are optional here.
  void runGroup(const std::vector<isa::RawCommand> &tiu,
                const std::vector<isa::RawCommand> &gdma);

  /// Counters so far (finished: ratios are up to date after every group).
  const SimStats &stats() const;
  /// Simulated time so far in picoseconds and in TIU cycles.
  uint64_t elapsedPs() const;
  uint64_t cycles() const;

  /// Groups run so far (the index the next group gets in messages).
  unsigned groupsRun() const;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace tpu::sim

#endif // TPUSIM_SIMULATOR_H
