//===- Tpu.h - SystemC modules of the simulated BM1684X -----------*- C++
//-*-===//
//
// One module per hardware unit:
//
//   CommandQueue  x2   the commands of one engine for the current group
//   IdScoreboard       last completed id of each engine; blocks a command
//                      until the other engine has completed its cmd_id_dep
//   LocalMemoryUnit    lanes x banks: range checks, bank conflicts, traffic
//   DdrChannel         global memory bandwidth and latency, shared fairly by
//                      every transfer in flight
//   TiuEngine          executes TIU commands in order
//   GdmaEngine         executes GDMA commands in order
//   Tpu                the top module that wires them and runs a group
//
// Time advances by whole commands: each command's cost is computed from its
// fields (Timing.h), engines yield to the SystemC kernel only to wait for an
// id or to use the shared DDR channel, and the DDR channel has events only
// when a transfer joins or finishes; no process wakes every clock. The
// modules only decide *when*; what a command does is computed by the plain
// C++ kernels of Func.h. Simulator.h is the SystemC-free interface for tools
// and tests; simulator/docs/timing.md explains the model.
//
//===----------------------------------------------------------------------===//
#ifndef TPUSIM_TPU_H
#define TPUSIM_TPU_H

#include "tpu/isa/Command.h"
#include "tpusim/Config.h"
#include "tpusim/Func.h"
#include "tpusim/Memory.h"
#include "tpusim/Simulator.h"
#include "tpusim/Stats.h"
#include "tpusim/Timing.h"
#include "tpusim/Trace.h"

#include <systemc>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tpu::sim {

/// Simulated time in picoseconds (the SystemC time resolution).
inline uint64_t nowPs() { return sc_core::sc_time_stamp().value(); }
/// Suspends the calling thread for `ps` picoseconds (nothing for 0).
void waitPs(uint64_t ps);

//===----------------------------------------------------------------------===//
// Command streams
//===----------------------------------------------------------------------===//

/// One command of an engine's stream (as isa::splitBuffer returns it; the
/// ids are read from it with isa::cmdId / isa::cmdIdDep when needed).
using QueuedCommand = isa::DecodedCommand;

/// The commands of one engine for one group. When the stream contains a
/// head no layout covers, splitting stops there: `unknown` is set, the
/// commands before it run, and reaching it stops the run with an error.
struct CommandStream {
  isa::Engine engine = isa::Engine::Tiu;
  std::vector<QueuedCommand> commands;
  bool unknown = false;
  std::string unknownReason;
  size_t unknownOffset = 0;
  uint32_t unknownId = 0;
  std::vector<uint8_t> unknownBytes; ///< First bytes of the unknown command.
  uint32_t maxId = 0;                ///< Largest cmd_id in the stream.

  /// Commands including the unknown one (it has the next index).
  size_t size() const { return commands.size() + (unknown ? 1 : 0); }
};

/// Splits a bmodel command buffer (isa::splitBuffer; on an unknown head the
/// commands before it are kept and the stream is marked `unknown`). Throws
/// Error for other malformations (truncation, data after the end command).
CommandStream splitStream(isa::Engine engine,
                          const std::vector<uint8_t> &bytes);
/// Wraps already-built commands (each must belong to `engine`).
CommandStream makeStream(isa::Engine engine,
                         const std::vector<isa::RawCommand> &commands);

//===----------------------------------------------------------------------===//
// Per-run context shared by the modules
//===----------------------------------------------------------------------===//

struct RunContext {
  const SimConfig *cfg = nullptr;
  SimMode mode = SimMode::Full;
  MachineState *state = nullptr;
  SimStats *stats = nullptr;
  std::vector<TraceEvent> *trace = nullptr; ///< Null: tracing off.
  unsigned group = 0;
  uint64_t runStartPs = 0; ///< Time the Simulator started (trace origin).

  bool aborted = false;
  std::optional<SimError> error;

  bool timed() const { return mode != SimMode::Functional; }
  bool executes() const { return mode != SimMode::Timing; }

  /// Records the first error and stops both engines after their current
  /// command. The message names the engine, group, index, id and
  /// disassembly of `cmd` (or its raw bytes when it has no layout).
  void fail(SimError::Kind kind, isa::Engine engine, size_t index,
            const CommandStream &stream, const std::string &reason);
};

/// Text naming a command for messages: "TIU command 3 (cmd_id 4,
/// cmd_id_dep 2) of group 0" followed by its disassembly on the next line.
std::string describeCommand(isa::Engine engine, unsigned group, size_t index,
                            const CommandStream &stream);

//===----------------------------------------------------------------------===//
// Modules
//===----------------------------------------------------------------------===//

/// The commands of one engine. The engine reads the front, executes it and
/// pops it; the queue never runs dry before the stream ends because the
/// MCU writes a whole group before starting it.
class CommandQueue : public sc_core::sc_module {
public:
  explicit CommandQueue(sc_core::sc_module_name name);

  void load(const CommandStream *stream);
  const CommandStream &stream() const { return *stream_; }
  /// Index of the front command in the stream.
  size_t index() const { return next_; }
  bool atEnd() const { return next_ >= stream_->size(); }
  /// True when the front command is the unknown one.
  bool frontUnknown() const { return next_ == stream_->commands.size(); }
  const QueuedCommand &front() const { return stream_->commands[next_]; }
  void pop() { ++next_; }

private:
  const CommandStream *stream_ = nullptr;
  size_t next_ = 0;
};

/// Each engine publishes the id of its last completed command, with the time
/// it completed; a command with cmd_id_dep = d > 0 may start sync.latency
/// after the other engine's published id has reached d (bm1684x.md 6).
/// Because the completion *time* is recorded, an engine that runs ahead of
/// SystemC time (see EngineBase) publishes exact times, and a waiter computes
/// its start from them rather than from the moment it was woken.
class IdScoreboard : public sc_core::sc_module {
public:
  explicit IdScoreboard(sc_core::sc_module_name name);

  /// Restarts both counters at 0 for a new group; `maxTiuId`/`maxGdmaId`
  /// bound the ids that will be published.
  void reset(uint32_t maxTiuId, uint32_t maxGdmaId);
  /// Blocks the calling thread until `producer` has published id `dep` (or
  /// the run is aborted) and returns the time it completed that id (0 for
  /// dep = 0 or an abort).
  uint64_t waitFor(isa::Engine producer, uint32_t dep, const bool &aborted);
  /// Publishes that `producer` completed `id` at time `atPs` (>= now).
  void publish(isa::Engine producer, uint32_t id, uint64_t atPs);
  uint32_t completed(isa::Engine producer) const;
  /// The id `waiter` is blocked on (0 = not blocked).
  uint32_t waitingFor(isa::Engine waiter) const;
  /// Wakes every blocked waiter (used when a run is aborted).
  void wakeAll();

private:
  struct Track {
    uint32_t last = 0;
    /// reachedPs[k] = time `last` first reached >= k.
    std::vector<uint64_t> reachedPs;
    uint32_t waiterWants = 0; ///< Id the other engine waits for (0: none).
    sc_core::sc_event advanced;
  };
  Track &track(isa::Engine e) { return tracks_[e == isa::Engine::Tiu ? 0 : 1]; }
  const Track &track(isa::Engine e) const {
    return tracks_[e == isa::Engine::Tiu ? 0 : 1];
  }
  Track tracks_[2];
};

/// Local memory, npu_num lanes of lmem_banks banks. Checks operand ranges,
/// finds bank conflicts and counts traffic; the bytes themselves are in
/// MachineState::lmem.
class LocalMemoryUnit : public sc_core::sc_module {
public:
  explicit LocalMemoryUnit(sc_core::sc_module_name name);

  void bind(const isa::ChipParams &chip, SimStats &stats);
  /// Throws MemoryError when an operand range of `work` leaves its lane;
  /// counts the bytes read and written.
  void tiuAccess(const TiuWork &work);
  /// Counts the local bytes of a GDMA command.
  void gdmaAccess(const GdmaWork &work);

private:
  const isa::ChipParams *chip_ = nullptr;
  SimStats *stats_ = nullptr;
};

/// The DDR channel: a fluid model of a shared bus. A transfer of B bus bytes
/// drains at peak / n bytes per ps while n transfers drain together, and
/// completes ddr.latency after its last byte drained (every transfer sees the
/// same latency, so putting it after the drain gives the same overlaps as
/// putting it before). Events happen only when a transfer joins or finishes.
class DdrChannel : public sc_core::sc_module {
public:
  SC_HAS_PROCESS(DdrChannel);
  explicit DdrChannel(sc_core::sc_module_name name);

  /// One requester's handle (holds its completion event).
  class Port {
  public:
    Port() = default;

  private:
    friend class DdrChannel;
    double remaining = 0;
    uint64_t joinPs = 0;
    sc_core::sc_event done;
  };

  void configure(double psPerByte, uint64_t latencyPs);
  /// Blocks the calling thread until `busBytes` have been moved for `port`;
  /// the transfer joins the channel `startDelayPs` from now (the requester's
  /// own start-up, folded in so that it costs no extra wake-up).
  void transfer(Port &port, uint64_t busBytes, uint64_t startDelayPs = 0);
  /// Transfers draining now.
  size_t active() const { return active_.size(); }

private:
  void onChange();
  void advance();
  void reschedule();

  double psPerByte_ = 1;
  uint64_t latencyPs_ = 0;
  uint64_t lastPs_ = 0;
  std::vector<Port *> active_;
  std::vector<Port *> pending_; ///< Joining later (startDelayPs > 0).
  sc_core::sc_event change_;
};

/// The in-order command loop both engines share.
///
/// Engines are temporally decoupled, like TLM-2.0 loosely-timed initiators:
/// each keeps its own time (`localPs_`, never behind SystemC time) and
/// returns control to the SystemC kernel only when it has to interact:
/// waiting for an id the other engine has not published yet, joining the
/// shared DDR channel (which needs SystemC time to equal its own), and at the
/// end of a group. The cycle counts are the same as if every command ended
/// with a wait, because every start time is computed from published
/// completion times; the saving is one thread switch per command.
class EngineBase : public sc_core::sc_module {
public:
  EngineBase(sc_core::sc_module_name name, isa::Engine engine,
             CommandQueue &queue, IdScoreboard &scoreboard,
             LocalMemoryUnit &lmem);

  /// Starts executing the loaded queue in the next delta cycle.
  void begin(RunContext &ctx);
  bool finished() const { return finished_; }
  uint64_t finishPs() const { return finishPs_; }
  isa::Engine engine() const { return engine_; }

protected:
  /// Runs the queue of each group; `step` executes one command.
  void loop();
  /// Decodes, checks, executes (per mode) and times the command; sets
  /// `localPs_` to its end. False after an error (recorded in the context).
  virtual bool step(size_t index, const QueuedCommand &c, uint64_t startPs) = 0;
  virtual uint64_t periodPs() const = 0;
  /// Appends a trace event when tracing is on.
  void record(const QueuedCommand &c, size_t index, uint64_t startPs,
              uint64_t cycles, TraceEvent extra);

  isa::Engine engine_;
  CommandQueue &queue_;
  IdScoreboard &scoreboard_;
  LocalMemoryUnit &lmem_;
  RunContext *ctx_ = nullptr;
  sc_core::sc_event start_;
  bool finished_ = true;
  uint64_t finishPs_ = 0;
  /// The engine's own time: when its previous command ended.
  uint64_t localPs_ = 0;
};

class TiuEngine : public EngineBase {
public:
  SC_HAS_PROCESS(TiuEngine);
  TiuEngine(sc_core::sc_module_name name, CommandQueue &queue,
            IdScoreboard &scoreboard, LocalMemoryUnit &lmem);

private:
  void run() { loop(); }
  bool step(size_t index, const QueuedCommand &c, uint64_t startPs) override;
  uint64_t periodPs() const override;
};

class GdmaEngine : public EngineBase {
public:
  SC_HAS_PROCESS(GdmaEngine);
  GdmaEngine(sc_core::sc_module_name name, CommandQueue &queue,
             IdScoreboard &scoreboard, LocalMemoryUnit &lmem, DdrChannel &ddr);

private:
  void run() { loop(); }
  bool step(size_t index, const QueuedCommand &c, uint64_t startPs) override;
  uint64_t periodPs() const override;

  DdrChannel &ddr_;
  DdrChannel::Port port_;
};

/// The chip: queues, scoreboard, memories and engines, wired once.
class Tpu : public sc_core::sc_module {
public:
  /// The process-wide instance (built, elaborated and initialised on first
  /// use).
  static Tpu &instance();

  /// Runs one group to completion. Throws SimError on an error or a
  /// deadlock; the modules are idle again afterwards either way.
  void runGroup(RunContext &ctx, const CommandStream &tiu,
                const CommandStream &gdma);

  CommandQueue tiuQueue, gdmaQueue;
  IdScoreboard scoreboard;
  LocalMemoryUnit lmem;
  DdrChannel ddr;
  TiuEngine tiu;
  GdmaEngine gdma;

private:
  explicit Tpu(sc_core::sc_module_name name);
  std::string deadlockMessage(const RunContext &ctx) const;
};

} // namespace tpu::sim

#endif // TPUSIM_TPU_H
