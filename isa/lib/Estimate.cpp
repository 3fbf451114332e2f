//===- Estimate.cpp - Static cycle estimate of a command group ------------===//
//
// The schedule of Estimate.h, computed without events: each engine is a
// cursor over its stream that advances while the id its next command waits
// for has been completed by the other engine; the two cursors take turns
// until both streams are done. Every time is an integer number of
// picoseconds, rounded where the simulator rounds (clock edges, DDR drain).
//
//===----------------------------------------------------------------------===//
#include "tpu/isa/Estimate.h"

#include "tpu/isa/Cost.h"
#include "tpu/isa/Decode.h"
#include "tpu/isa/Error.h"
#include "tpu/isa/Work.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace tpu::isa {

namespace {

/// Slack when rounding a DDR drain time up to whole picoseconds (as the
/// simulator's DDR channel does), so that an exact result computed with
/// rounding error does not gain a picosecond.
constexpr double kTimeSlackPs = 1e-6;

/// `ps` rounded up to the next edge of a clock of `periodPs`.
uint64_t nextEdge(uint64_t ps, uint64_t periodPs) {
  return (ps + periodPs - 1) / periodPs * periodPs;
}

/// Completion times of one engine's ids: reached[id] for every id up to the
/// last completed (ids complete in order; an id skipped by the stream
/// completes with the next larger one).
class IdTrack {
public:
  /// True when `dep` has completed; then `donePs` is when.
  bool reached(uint32_t dep, uint64_t &donePs) const {
    if (dep > last_)
      return false;
    donePs = reachedPs_[dep];
    return true;
  }
  void publish(uint32_t id, uint64_t atPs) {
    if (id <= last_)
      return;
    reachedPs_.resize(size_t(id) + 1, atPs);
    last_ = id;
  }
  uint32_t last() const { return last_; }

private:
  uint32_t last_ = 0;
  std::vector<uint64_t> reachedPs_ = std::vector<uint64_t>(1, 0);
};

/// What both engines share: the machine, its clocks and the command
/// buffer fetch from DDR.
struct Context {
  explicit Context(const Machine &m)
      : machine(m), tiuPeriod(m.timing.tiuPeriodPs()),
        gdmaPeriod(m.timing.gdmaPeriodPs()), psPerByte(m.timing.ddrPsPerByte()),
        latencyPs(m.timing.ddrLatencyPs()) {}

  const Machine &machine;
  uint64_t tiuPeriod, gdmaPeriod;
  double psPerByte;
  uint64_t latencyPs;
};

/// State common to both engine cursors: position, own time, the command
/// buffer's arrival.
struct Cursor {
  Cursor(const std::vector<RawCommand> &cmds, uint64_t periodPs,
         const Context &ctx, uint64_t startPs)
      : cmds(cmds), period(periodPs), psPerByte(ctx.psPerByte),
        fetchBase(startPs + ctx.latencyPs), localPs(startPs) {
    uint64_t offset = 0;
    ends.reserve(cmds.size());
    for (const RawCommand &c : cmds) {
      offset += c.bytes();
      ends.push_back(offset);
    }
    if (!ends.empty())
      fetchAll = fetched(ends.size() - 1);
  }

  bool done() const { return next == cmds.size(); }

  /// Arrival of command i: its last byte, on the engine's next clock edge.
  uint64_t fetched(size_t i) const {
    uint64_t arrive =
        fetchBase + uint64_t(std::ceil(double(ends[i]) * psPerByte));
    return nextEdge(arrive, period);
  }

  /// The earliest start of the next command from its own engine's view:
  /// after the previous command's issue and after its bytes have arrived.
  uint64_t readyPs() const {
    uint64_t start = localPs;
    if (start < fetchAll)
      start = std::max(start, fetched(next));
    return start;
  }

  const std::vector<RawCommand> &cmds;
  std::vector<uint64_t> ends; ///< Byte offset of each command's end.
  uint64_t period;
  double psPerByte;
  uint64_t fetchBase;
  uint64_t fetchAll = 0;
  uint64_t localPs;
  size_t next = 0;
};

[[noreturn]] void fail(const char *engine, size_t index, const RawCommand &c,
                       const std::string &what) {
  throw Error(std::string("estimate: ") + engine + " command " +
              std::to_string(index) + " (" + mnemonic(c) + "): " + what);
}

} // namespace

void Estimate::finish(const Machine &m) {
  uint64_t tiuPeriod = m.timing.tiuPeriodPs();
  uint64_t gdmaPeriod = m.timing.gdmaPeriodPs();
  cycles = (totalPs + tiuPeriod - 1) / tiuPeriod;
  tiuBusyCycles = tiuBusyPs / tiuPeriod;
  gdmaBusyCycles = gdmaBusyPs / gdmaPeriod;
  launchCycles = launchPs / tiuPeriod;
}

void Estimate::accumulate(const Estimate &g, const Machine &m) {
  totalPs += g.totalPs;
  launchPs += g.launchPs;
  tiuBusyPs += g.tiuBusyPs;
  gdmaBusyPs += g.gdmaBusyPs;
  tiuWaitPs += g.tiuWaitPs;
  gdmaWaitPs += g.gdmaWaitPs;
  tiuCubePs += g.tiuCubePs;
  tiuCommands += g.tiuCommands;
  gdmaCommands += g.gdmaCommands;
  ddrReadBytes += g.ddrReadBytes;
  ddrWriteBytes += g.ddrWriteBytes;
  ddrBusBytes += g.ddrBusBytes;
  gdmaConflictCycles += g.gdmaConflictCycles;
  finish(m);
}

Estimate estimateGroup(const std::vector<RawCommand> &tiuCmds,
                       const std::vector<RawCommand> &gdmaCmds,
                       const Machine &m) {
  Context ctx(m);
  const ChipParams &chip = m.chip;
  const TimingParams &timing = m.timing;
  Estimate est;
  IdTrack tiuIds, gdmaIds;

  // Times are absolute from the group's start, which is where the MCU
  // begins launching it (clock edges are absolute too, as in a simulation
  // that starts with this group).
  est.launchPs = timing.mcuGroupLaunchPs();
  uint64_t startPs = est.launchPs;
  Cursor tiu(tiuCmds, ctx.tiuPeriod, ctx, startPs);
  Cursor gdma(gdmaCmds, ctx.gdmaPeriod, ctx, startPs);
  uint64_t tiuSyncPs = timing.syncLatency * ctx.tiuPeriod;
  uint64_t gdmaSyncPs = timing.syncLatency * ctx.gdmaPeriod;

  // GDMA in-flight state (simulator: GdmaEngine).
  uint64_t slots = std::max<uint64_t>(1, timing.gdmaMaxOutstanding);
  std::vector<uint64_t> slotFreePs(slots, startPs);
  uint64_t issued = 0;
  uint64_t lastDatapathEnd = startPs, lastDrainEnd = 0, lastComplete = startPs;
  uint64_t busyUntil = 0;
  // The banks the TIU commands use over time, for GDMA transfers that meet
  // them (as the simulator's local memory records them).
  TiuBankHistory tiuBanks;
  bool conflicts = timing.lmemGdmaConflictPct != 0;

  // Moves `start` past the other engine's completion of the id `c` waits
  // for (plus the sync latency), adding the wait to `waitPs`; false while
  // that id has not completed.
  auto waitFor = [](const RawCommand &c, const IdTrack &other, uint64_t syncPs,
                    uint64_t &start, uint64_t &waitPs) {
    uint32_t dep = cmdIdDep(c);
    if (!dep)
      return true;
    uint64_t donePs;
    if (!other.reached(dep, donePs))
      return false;
    uint64_t ready = std::max(start, donePs + syncPs);
    waitPs += ready - start;
    start = ready;
    return true;
  };

  // Runs TIU commands until one waits for a GDMA id not yet completed;
  // returns whether any ran.
  auto stepTiu = [&]() {
    bool progressed = false;
    while (!tiu.done()) {
      const RawCommand &c = tiuCmds[tiu.next];
      uint64_t start = tiu.readyPs();
      if (!waitFor(c, gdmaIds, tiuSyncPs, start, est.tiuWaitPs))
        break;
      TiuCost cost;
      try {
        TiuOp op = decodeTiu(c);
        TiuWork work;
        if (op.task != TiuTask::Sys)
          work = tiuWork(op, chip);
        cost = tiuCost(op, work, chip, timing);
      } catch (const Error &e) {
        fail("TIU", tiu.next, c, e.what());
      }
      uint64_t busy = cost.cycles() * ctx.tiuPeriod;
      tiu.localPs = start + busy;
      if (conflicts)
        tiuBanks.record(cost.banks, start, tiu.localPs);
      est.tiuBusyPs += busy;
      if (cost.unit == TiuUnit::Cube)
        est.tiuCubePs += busy;
      ++est.tiuCommands;
      tiuIds.publish(cmdId(c), tiu.localPs);
      ++tiu.next;
      progressed = true;
    }
    return progressed;
  };

  // Issues GDMA commands until one waits for a TIU id not yet completed.
  // A command's completion follows from its issue (nothing later changes
  // it), so it is published at once.
  auto stepGdma = [&]() {
    bool progressed = false;
    uint64_t period = ctx.gdmaPeriod;
    while (!gdma.done()) {
      const RawCommand &c = gdmaCmds[gdma.next];
      uint64_t start = gdma.readyPs();
      if (!waitFor(c, tiuIds, gdmaSyncPs, start, est.gdmaWaitPs))
        break;
      GdmaCost cost;
      BankMask banks = 0;
      try {
        GdmaOp op = decodeGdma(c, chip);
        GdmaWork work;
        if (op.type != GdmaType::Sys)
          work = gdmaWork(op, chip);
        cost = gdmaCost(op, work, timing);
        if (conflicts)
          banks = gdmaBanks(op, work, chip);
      } catch (const Error &e) {
        fail("GDMA", gdma.next, c, e.what());
      }
      // Issue once the command `slots` before this one has completed.
      start = std::max(start, slotFreePs[issued % slots]);
      uint64_t streamStart = start + cost.startupCycles * period;
      uint64_t datapathEnd =
          std::max(streamStart, lastDatapathEnd) + cost.datapathCycles * period;
      if (banks != 0 && cost.datapathCycles != 0) {
        // Beats into banks a TIU command uses at the same time wait for the
        // bank. The TIU commands that can overlap this transfer are all
        // those that do not wait for it or a later GDMA id; every earlier id
        // is published, so the TIU cursor runs up to the first that does
        // (the simulator decides the stall when the transfer retires, by
        // which time its TIU thread has run as far).
        stepTiu();
        uint64_t beatsFrom = datapathEnd - cost.datapathCycles * period;
        uint64_t stall = gdmaConflictCycles(
            tiuBanks.overlapPs(banks, beatsFrom, datapathEnd), period, timing);
        datapathEnd += stall * period;
        est.gdmaConflictCycles += stall;
      }
      lastDatapathEnd = datapathEnd;
      uint64_t dataEnd = datapathEnd;
      if (cost.usesDdr()) {
        // Transfers drain one after another at the peak bandwidth.
        uint64_t drainStart = std::max(streamStart, lastDrainEnd);
        double drainPs = double(cost.ddrBusBytes) * ctx.psPerByte;
        uint64_t drainEnd =
            drainStart +
            uint64_t(std::ceil(std::max(0.0, drainPs - kTimeSlackPs)));
        lastDrainEnd = drainEnd;
        dataEnd = std::max(dataEnd, drainEnd + ctx.latencyPs);
      }
      // Ids complete in order.
      uint64_t end = nextEdge(std::max(dataEnd, lastComplete), period);
      lastComplete = end;
      slotFreePs[issued % slots] = end;
      ++issued;
      uint64_t busyFrom = std::max(start, busyUntil);
      if (end > busyFrom)
        est.gdmaBusyPs += end - busyFrom;
      busyUntil = std::max(busyUntil, end);
      ++est.gdmaCommands;
      est.ddrReadBytes += cost.ddrReadBytes;
      est.ddrWriteBytes += cost.ddrWriteBytes;
      est.ddrBusBytes += cost.ddrBusBytes;
      gdmaIds.publish(cmdId(c), end);
      // The issue stage is free for the next command after the start-up.
      gdma.localPs = streamStart;
      ++gdma.next;
      progressed = true;
    }
    return progressed;
  };

  while (!tiu.done() || !gdma.done()) {
    bool progressed = stepTiu();
    progressed |= stepGdma();
    if (progressed)
      continue;
    // Neither engine can move: report the first waiting command.
    bool tiuWaits = !tiu.done();
    const Cursor &w = tiuWaits ? tiu : gdma;
    const RawCommand &c = w.cmds[w.next];
    const IdTrack &other = tiuWaits ? gdmaIds : tiuIds;
    fail(tiuWaits ? "TIU" : "GDMA", w.next, c,
         "deadlock: waits for " + std::string(tiuWaits ? "GDMA" : "TIU") +
             " id " + std::to_string(cmdIdDep(c)) + ", which completes up to " +
             std::to_string(other.last()) + " only");
  }

  est.totalPs = std::max({tiu.localPs, gdma.localPs, lastComplete});
  est.finish(m);
  return est;
}

} // namespace tpu::isa
