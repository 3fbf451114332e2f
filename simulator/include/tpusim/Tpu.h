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
//   GdmaEngine         issues GDMA commands in order, several in flight,
//                      and completes their ids in order
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
#include <deque>
#include <memory>
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

/// One command of an engine's stream: its layout and byte offset in the
/// stream's bytes (isa::indexBuffer). The engines read each command's bits
/// when they reach it (CommandStream::command), so a long stream is not
/// held twice, once as bytes and once as decoded copies.
using QueuedCommand = isa::CommandSpan;

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
  /// The bytes the offsets refer to: the caller's buffer (splitStream; it
  /// must outlive the stream) or, when `owned` is not empty, `owned`.
  const uint8_t *external = nullptr;
  std::vector<uint8_t> owned;

  /// Commands including the unknown one (it has the next index).
  size_t size() const { return commands.size() + (unknown ? 1 : 0); }
  const uint8_t *bytes() const {
    return owned.empty() ? external : owned.data();
  }
  /// The bits of command `index` (< commands.size()).
  isa::RawCommand command(size_t index) const {
    const QueuedCommand &c = commands[index];
    return isa::RawCommand::fromBytes(c.layout, bytes() + c.offset);
  }
};

/// Splits a bmodel command buffer (isa::indexBuffer; on an unknown head the
/// commands before it are kept and the stream is marked `unknown`). Throws
/// Error for other malformations (truncation, data after the end command).
/// The stream refers to `bytes`, which must outlive it.
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
  /// With tracing: the intervals [start, end) (ps since the run's start)
  /// during which the DDR channel moved bytes, at its peak rate (a fluid
  /// channel shares that rate among its transfers; Simulator::ddrBusy).
  PsIntervals *ddrBusy = nullptr;
  unsigned group = 0;
  /// Called right after each command has executed (Simulator::
  /// setCommandObserver); null: none.
  const CommandObserver *observer = nullptr;
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
/// after the other engine's published id has reached d (isa/docs/bm1684x.md 6).
/// Because the completion *time* is recorded, an engine that runs ahead of
/// SystemC time (see EngineBase) publishes exact times, and a waiter computes
/// its start from them rather than from the moment it was woken.
class IdScoreboard : public sc_core::sc_module {
public:
  explicit IdScoreboard(sc_core::sc_module_name name);

  /// Restarts both counters at 0 for a new group.
  void reset();
  /// Blocks the calling thread until `producer` has published id `dep` (or
  /// the run is aborted) and returns the time it completed that id (0 for
  /// dep = 0 or an abort).
  uint64_t waitFor(isa::Engine producer, uint32_t dep, const bool &aborted);
  /// Like waitFor, but waits once on the caller's own event `wake`, which
  /// the scoreboard notifies when `producer` reaches `dep` and which the
  /// caller's other sources (its DDR transfers) notify too: true (and
  /// `donePs` set) once `producer` has published `dep`, false when woken
  /// before that. (One event instead of an or-list, which SystemC
  /// allocates on every wait.)
  bool waitForOr(isa::Engine producer, uint32_t dep, const bool &aborted,
                 sc_core::sc_event &wake, uint64_t &donePs);
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
    /// reachedPs[k] = time `last` first reached >= k (k <= last; grown by
    /// publish, so the streams need no pass to find their largest id).
    std::vector<uint64_t> reachedPs;
    uint32_t waiterWants = 0; ///< Id the other engine waits for (0: none).
    sc_core::sc_event advanced;
    sc_core::sc_event *wake = nullptr; ///< Waiter's own event (waitForOr).
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

  /// The TIU commands' banks over time (isa::TiuBankHistory), which GDMA
  /// transfers collide with.
  isa::TiuBankHistory &tiuBanks() { return tiuBanks_; }
  const isa::TiuBankHistory &tiuBanks() const { return tiuBanks_; }

private:
  const isa::ChipParams *chip_ = nullptr;
  SimStats *stats_ = nullptr;
  isa::TiuBankHistory tiuBanks_;
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

  /// One transfer's handle (holds its events); reusable once it drained.
  class Port {
  public:
    Port() = default;
    /// True once the transfer's last byte has drained.
    bool drained() const { return drained_; }
    /// When the last byte drained (valid once drained()).
    uint64_t drainedPs() const { return drainedPs_; }
    /// Notified when the last byte drains (the requester's own event,
    /// which may serve several ports and other sources).
    void setWake(sc_core::sc_event *wake) { wake_ = wake; }

  private:
    friend class DdrChannel;
    double remaining = 0;
    uint64_t joinPs = 0;
    const Port *after = nullptr; ///< Joins only once this one drained.
    bool drained_ = true;
    bool waiting_ = false; ///< transfer() waits for `done`.
    uint64_t drainedPs_ = 0;
    sc_core::sc_event done;
    sc_core::sc_event *wake_ = nullptr;
  };

  /// `busyLog` (may be null): where the intervals the channel moves bytes
  /// go, as ps since `originPs` (adjacent ones merged).
  void configure(double psPerByte, uint64_t latencyPs,
                 PsIntervals *busyLog = nullptr, uint64_t originPs = 0);
  /// Blocks the calling thread until `busBytes` have been moved for `port`;
  /// the transfer joins the channel `startDelayPs` from now (the requester's
  /// own start-up, folded in so that it costs no extra wake-up).
  void transfer(Port &port, uint64_t busBytes, uint64_t startDelayPs = 0);
  /// Queues a transfer without waiting: it joins the channel `startDelayPs`
  /// from now, but not before `after` (if given) has drained, so that one
  /// requester's transfers drain in order through its share of the
  /// channel. It completes ddr.latency after port.drainedPs().
  void start(Port &port, uint64_t busBytes, uint64_t startDelayPs,
             const Port *after = nullptr);
  uint64_t latencyPs() const { return latencyPs_; }
  /// Transfers draining now.
  size_t active() const { return active_.size(); }

private:
  void onChange();
  void advance();
  void reschedule();

  double psPerByte_ = 1;
  uint64_t latencyPs_ = 0;
  uint64_t lastPs_ = 0;
  PsIntervals *busyLog_ = nullptr;
  uint64_t originPs_ = 0;
  std::vector<Port *> active_;
  std::vector<Port *> pending_; ///< Joining later (startDelayPs > 0).
  sc_core::sc_event change_;
};

/// The in-order command loop both engines share.
///
/// Engines are temporally decoupled, like TLM-2.0 loosely-timed initiators:
/// each keeps its own time (`localPs_`, never behind SystemC time) and
/// returns control to the SystemC kernel only when it has to interact:
/// waiting for an id the other engine has not published yet, waiting for a
/// DDR transfer to drain (GDMA), and at the end of a group. The cycle counts
/// are the same as if every command ended with a wait, because every start time
/// is computed from published completion times; the saving is one thread switch
/// per command.
class EngineBase : public sc_core::sc_module {
public:
  EngineBase(sc_core::sc_module_name name, isa::Engine engine,
             CommandQueue &queue, IdScoreboard &scoreboard,
             LocalMemoryUnit &lmem);

  /// Starts executing the loaded queue in the next delta cycle; the first
  /// command may start `launchPs` from now (the MCU's group launch).
  void begin(RunContext &ctx, uint64_t launchPs = 0);
  bool finished() const { return finished_; }
  uint64_t finishPs() const { return finishPs_; }
  isa::Engine engine() const { return engine_; }

protected:
  /// Runs the queue of each group; `step` executes one command.
  void loop();
  /// Decodes, checks, executes (per mode) and times the command; sets
  /// `localPs_` to its end. False after an error (recorded in the context).
  virtual bool step(size_t index, const isa::RawCommand &cmd,
                    uint64_t startPs) = 0;
  virtual uint64_t periodPs() const = 0;
  /// Blocks until the other engine has completed `dep` and returns when it
  /// did (0 after an abort).
  virtual uint64_t awaitDependency(uint32_t dep);
  /// Called after step(): publishes the command's id at `localPs_`.
  virtual void completed(const isa::RawCommand &cmd);
  /// Called when a group starts, before its first command.
  virtual void startGroup() {}
  /// Called when the queue is done (or the run aborted): completes what is
  /// still in flight.
  virtual void finishGroup() {}
  /// Earliest time command `c` can start: its bytes have been fetched
  /// from the command buffer in DDR (see timing.md, "MCU").
  uint64_t fetchedPs(const QueuedCommand &c) const;
  /// Appends a trace event when tracing is on.
  void record(const isa::RawCommand &cmd, size_t index, uint64_t startPs,
              uint64_t cycles, TraceEvent extra);

  isa::Engine engine_;
  CommandQueue &queue_;
  IdScoreboard &scoreboard_;
  LocalMemoryUnit &lmem_;
  RunContext *ctx_ = nullptr;
  sc_core::sc_event start_;
  bool finished_ = true;
  uint64_t finishPs_ = 0;
  /// The engine's own time: when its previous command ended (GDMA: when
  /// its issue stage is free for the next command).
  uint64_t localPs_ = 0;
  /// When the group's commands start arriving from DDR (after the launch).
  uint64_t groupStartPs_ = 0;
  /// Per-group constants of fetchedPs (timed modes).
  uint64_t fetchBasePs_ = 0;
  double fetchPsPerByte_ = 0;
  /// When the whole buffer has arrived: no command waits for its fetch
  /// after that.
  uint64_t fetchAllPs_ = 0;
  uint64_t clockPs_ = 1;
};

class TiuEngine : public EngineBase {
public:
  SC_HAS_PROCESS(TiuEngine);
  TiuEngine(sc_core::sc_module_name name, CommandQueue &queue,
            IdScoreboard &scoreboard, LocalMemoryUnit &lmem);

private:
  void run() { loop(); }
  bool step(size_t index, const isa::RawCommand &cmd,
            uint64_t startPs) override;
  uint64_t periodPs() const override;
};

class GdmaEngine : public EngineBase {
public:
  SC_HAS_PROCESS(GdmaEngine);
  GdmaEngine(sc_core::sc_module_name name, CommandQueue &queue,
             IdScoreboard &scoreboard, LocalMemoryUnit &lmem, DdrChannel &ddr);

private:
  void run() { loop(); }
  bool step(size_t index, const isa::RawCommand &cmd,
            uint64_t startPs) override;
  uint64_t periodPs() const override;
  uint64_t awaitDependency(uint32_t dep) override;
  void completed(const isa::RawCommand &) override {}
  void startGroup() override;
  void finishGroup() override;

  /// A command issued whose data is not done yet (timed modes).
  struct InFlight {
    size_t index = 0;
    uint64_t seq = 0; ///< Commands issued before it in this group.
    uint32_t cmdId = 0;
    uint64_t startPs = 0;       ///< Issue start.
    uint64_t streamStartPs = 0; ///< After the start-up (descriptor decode).
    uint64_t datapathEndPs = 0; ///< Last beat through the data path.
    DdrChannel::Port *port = nullptr; ///< Null without DDR traffic.
    BankMask banks = 0;               ///< Local-memory banks it touches.
    uint64_t datapathCycles = 0;
    uint64_t ddrBusBytes = 0;
    GdmaWork work;
  };
  /// Retires the oldest command in flight if its data is done (or, with
  /// `block`, after waiting for it): publishes its id in order, counts it
  /// and traces it. False if nothing was retired.
  bool retireOldest(bool block);
  /// Retires every command whose data is done, without waiting.
  void retireReady() {
    while (retireOldest(false)) {
    }
  }
  /// Counts and traces a command that has no data phase (functional mode).
  void account(size_t index, const GdmaWork &work, uint64_t startPs,
               uint64_t endPs, uint64_t ddrBusBytes, uint64_t conflictCycles);

  DdrChannel &ddr_;
  /// One DDR port per in-flight slot (command seq uses seq % slots).
  std::vector<std::unique_ptr<DdrChannel::Port>> ports_;
  /// Commands in flight, oldest first: a ring of max_outstanding entries.
  std::vector<InFlight> ring_;
  size_t ringHead_ = 0, ringCount_ = 0;
  InFlight &oldest() { return ring_[ringHead_]; }
  void popOldest() {
    ringHead_ = (ringHead_ + 1) % ring_.size();
    --ringCount_;
  }
  /// Completion time of the last command of each slot (issue of command
  /// seq waits for command seq - max_outstanding).
  std::vector<uint64_t> slotFreePs_;
  uint64_t issued_ = 0;         ///< Commands issued in this group.
  uint64_t lastCompletePs_ = 0; ///< Completion of the last retired command.
  uint64_t lastDatapathEndPs_ = 0;
  uint64_t busyUntilPs_ = 0; ///< End of the busy time counted so far.
  /// Woken by a TIU id it waits for or a transfer of its own draining.
  sc_core::sc_event wake_;
  const DdrChannel::Port *lastDdrPort_ = nullptr;
  uint64_t lastDdrSeq_ = 0;
};

/// The chip: queues, scoreboard, memories and engines, wired once.
class Tpu : public sc_core::sc_module {
public:
  /// The process-wide instance (built, elaborated and initialised on first
  /// use).
  static Tpu &instance();

  /// Runs the SystemC kernel until no process has anything left to do and
  /// returns on the caller's stack. Every sc_start of the simulator goes
  /// through it: under AddressSanitizer it gives the main stack's bounds
  /// back after SystemC's coroutine switches (Tpu.cpp), without which
  /// LeakSanitizer scans a coroutine stack as the main thread's at exit.
  static void runKernel();

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
