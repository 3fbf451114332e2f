//===- Estimate.h - Static cycle estimate of a command group ----*- C++ -*-===//
//
// The cost model of a compiler: the cycles of one command group computed
// from its TIU and GDMA command streams and the machine, without simulating
// data. Each command costs what isa/Cost.h says; the two engines are
// scheduled as the simulator schedules them (simulator/docs/timing.md):
//
//  - the MCU launch (mcu.group_launch_ns) precedes both engines; each engine
//    then receives its command buffer from DDR at the peak bandwidth after
//    ddr.latency_ns, and a command starts no earlier than its last byte has
//    arrived (on the engine's next clock edge);
//  - each engine runs its commands in order; a command with cmd_id_dep = d
//    starts sync.latency cycles (of its own clock) after the other engine
//    completed id d;
//  - TIU: one command at a time, for tiuCost() cycles;
//  - GDMA: up to gdma.max_outstanding commands in flight. After its start-up
//    the next command may issue; data-path beats of consecutive commands
//    follow each other; the DDR transfers drain one after another at the
//    peak bandwidth (ddrBusBytes of each, nothing else uses DDR) and a
//    transfer completes ddr.latency_ns after its last byte; ids complete in
//    order on a GDMA clock edge;
//  - a GDMA beat into a local-memory bank that a TIU command uses at the
//    same time waits for the bank (lmem.gdma_conflict_pct; the history of
//    the TIU's banks is isa::TiuBankHistory, shared with the simulator).
//    The simulator decides such a stall when the transfer retires; the
//    estimate decides it at issue, after running the TIU as far as the ids
//    allow. Both see the same TIU commands; they can differ when a stall
//    shifts a later transfer that the simulator had already issued.
//
// What the simulator adds and the estimate leaves out is the sharing of
// DDR between concurrent requesters (the estimate drains transfers one
// after another at the peak bandwidth). Without bank stalls
// (lmem.gdma_conflict_pct = 0) the estimate equals `tpusim --mode timing`
// for the same group.
//
//===----------------------------------------------------------------------===//
#ifndef TPU_ISA_ESTIMATE_H
#define TPU_ISA_ESTIMATE_H

#include "tpu/isa/Command.h"
#include "tpu/isa/Machine.h"

#include <cstdint>
#include <vector>

namespace tpu::isa {

/// Estimated time and traffic of one command group (or, accumulated, of
/// several). Times are in picoseconds; the *Cycles members are the same
/// times in cycles, rounded as tpusim's statistics round them.
struct Estimate {
  /// From the start of the group (before the MCU launch) until both engines
  /// have completed their last command.
  uint64_t totalPs = 0;
  /// MCU launch time included in totalPs.
  uint64_t launchPs = 0;
  /// Time the TIU executes commands.
  uint64_t tiuBusyPs = 0;
  /// Time at least one GDMA command is in flight.
  uint64_t gdmaBusyPs = 0;
  /// Time each engine waits for an id of the other engine (sync included).
  uint64_t tiuWaitPs = 0, gdmaWaitPs = 0;

  /// totalPs in TIU cycles, rounded up.
  uint64_t cycles = 0;
  /// tiuBusyPs in TIU cycles, gdmaBusyPs in GDMA cycles, launchPs in TIU
  /// cycles (rounded down, as tpusim's counters).
  uint64_t tiuBusyCycles = 0, gdmaBusyCycles = 0, launchCycles = 0;

  uint64_t tiuCommands = 0, gdmaCommands = 0;
  /// Payload bytes read from / written to DDR.
  uint64_t ddrReadBytes = 0, ddrWriteBytes = 0;
  /// DDR channel time in bytes at peak bandwidth (bursts, run switches).
  uint64_t ddrBusBytes = 0;
  /// Cycles of TIU commands spent in the cube (conv, matmul).
  uint64_t tiuCubePs = 0;
  /// GDMA cycles that transfers waited for local-memory banks a TIU
  /// command used (lmem.gdma_conflict_pct).
  uint64_t gdmaConflictCycles = 0;

  /// Adds the times, counts and bytes of `group` (a later group of the same
  /// run) and recomputes the cycle members for machine `m`.
  void accumulate(const Estimate &group, const Machine &m);
  /// Recomputes the cycle members from the times.
  void finish(const Machine &m);
};

/// Estimates one command group: the TIU and GDMA streams as
/// tpu::backend::CmdEmitter produces them (each ending with its end
/// command). Throws Error for a command the cost model cannot decode and
/// for a deadlock (every unfinished engine waits for an id the other never
/// completes), naming the engine, the command index and the id.
Estimate estimateGroup(const std::vector<RawCommand> &tiu,
                       const std::vector<RawCommand> &gdma, const Machine &m);

} // namespace tpu::isa

#endif // TPU_ISA_ESTIMATE_H
