//===- Engines.cpp - TIU and GDMA engines ---------------------------------===//
//
// Each engine is one SystemC thread that takes its queue's commands in order:
// wait for the dependency (scoreboard), decode, check, execute (full and
// functional modes), time the command (full and timing modes) and publish
// its id with its completion time. Function is applied when the command
// starts; with correct ids no other command can observe the difference.
// See EngineBase in Tpu.h for how engines keep their own time.
//
//===----------------------------------------------------------------------===//
#include "tpusim/Tpu.h"

#include "tpu/isa/Format.h"

#include <cmath>
#include <cstdint>

namespace tpu::sim {

namespace {

/// Stack of each engine thread: decoded commands and the functional kernels
/// run on it.
constexpr size_t kEngineStackBytes = size_t(8) << 20;

isa::Engine otherEngine(isa::Engine e) {
  return e == isa::Engine::Tiu ? isa::Engine::Gdma : isa::Engine::Tiu;
}

/// Stops the run on the exception `e` that command `index` threw: a memory
/// fault, a command that decoded but is invalid, or one the model lacks.
void failCommand(RunContext &ctx, isa::Engine engine, size_t index,
                 const CommandStream &stream, bool decoded,
                 const std::exception &e) {
  if (dynamic_cast<const MemoryError *>(&e))
    ctx.fail(SimError::Kind::Memory, engine, index, stream, e.what());
  else if (decoded)
    ctx.fail(SimError::Kind::InvalidCommand, engine, index, stream, e.what());
  else
    ctx.fail(SimError::Kind::UnknownCommand, engine, index, stream,
             std::string("command not modelled: ") + e.what());
}

/// Asks the cache for the stream data a few commands ahead of `index`. The
/// stream is read front to back once, with much other work between two
/// commands, so without this nearly every command waits for memory (the
/// spans 16 bytes each, the commands up to 128 bytes).
void prefetchAhead(const CommandStream &stream, size_t index) {
  constexpr size_t kSpansAhead = 16, kBytesAhead = 4, kLineBytes = 64;
  const std::vector<QueuedCommand> &cmds = stream.commands;
  if (index + kSpansAhead < cmds.size())
    __builtin_prefetch(&cmds[index + kSpansAhead]);
  if (index + kBytesAhead < cmds.size()) {
    const uint8_t *p = stream.bytes() + cmds[index + kBytesAhead].offset;
    __builtin_prefetch(p);
    // The second line may lie past the buffer's end for the last short
    // commands: form its address as an integer (prefetches never fault).
    __builtin_prefetch(
        reinterpret_cast<const void *>(uintptr_t(p) + kLineBytes));
  }
}

/// `ps` rounded up to the next edge of a clock of `periodPs`.
uint64_t nextEdge(uint64_t ps, uint64_t periodPs) {
  return (ps + periodPs - 1) / periodPs * periodPs;
}

} // namespace

//===----------------------------------------------------------------------===//
// EngineBase
//===----------------------------------------------------------------------===//

EngineBase::EngineBase(sc_core::sc_module_name name, isa::Engine engine,
                       CommandQueue &queue, IdScoreboard &scoreboard,
                       LocalMemoryUnit &lmem)
    : sc_core::sc_module(name), engine_(engine), queue_(queue),
      scoreboard_(scoreboard), lmem_(lmem) {}

void EngineBase::begin(RunContext &ctx, uint64_t launchPs) {
  ctx_ = &ctx;
  finished_ = false;
  finishPs_ = nowPs();
  localPs_ = groupStartPs_ = nowPs() + launchPs;
  start_.notify(sc_core::SC_ZERO_TIME);
}

uint64_t EngineBase::awaitDependency(uint32_t dep) {
  return scoreboard_.waitFor(otherEngine(engine_), dep, ctx_->aborted);
}

void EngineBase::completed(const isa::RawCommand &cmd) {
  scoreboard_.publish(engine_, isa::cmdId(cmd), localPs_);
}

uint64_t EngineBase::fetchedPs(const QueuedCommand &c) const {
  // The queue streams the command buffer from DDR at the channel's peak:
  // the first bytes arrive ddr.latency after the launch, and command i once
  // its last byte has arrived, on the engine's next clock edge.
  double bytes = double(c.offset + isa::layoutInfo(c.layout).bytes());
  uint64_t arrive = fetchBasePs_ + uint64_t(std::ceil(bytes * fetchPsPerByte_));
  return nextEdge(arrive, clockPs_);
}

void EngineBase::loop() {
  for (;;) {
    sc_core::wait(start_);
    RunContext &ctx = *ctx_;
    uint64_t period = periodPs();
    clockPs_ = period;
    fetchBasePs_ = groupStartPs_ + ctx.cfg->ddrLatencyPs();
    fetchPsPerByte_ = ctx.cfg->ddrPsPerByte();
    fetchAllPs_ = 0;
    if (!queue_.stream().commands.empty())
      fetchAllPs_ = fetchedPs(queue_.stream().commands.back());
    startGroup();
    uint64_t syncPs = ctx.timed() ? ctx.cfg->syncLatency * period : 0;
    uint64_t &waitSum = engine_ == isa::Engine::Tiu ? ctx.stats->tiuWaitPs
                                                    : ctx.stats->gdmaWaitPs;
    while (!queue_.atEnd() && !ctx.aborted) {
      size_t index = queue_.index();
      if (queue_.frontUnknown()) {
        ctx.fail(SimError::Kind::UnknownCommand, engine_, index,
                 queue_.stream(), queue_.stream().unknownReason);
        break;
      }
      const QueuedCommand &c = queue_.front();
      prefetchAhead(queue_.stream(), index);
      // The command's bits, read from the stream's bytes now (not held for
      // the whole stream).
      const isa::RawCommand cmd = queue_.stream().command(index);
      uint64_t start = localPs_;
      if (ctx.timed() && start < fetchAllPs_) {
        uint64_t fetched = fetchedPs(c);
        if (fetched > start) {
          ctx.stats->fetchWaitPs += fetched - start;
          start = fetched;
        }
      }
      if (uint32_t dep = isa::cmdIdDep(cmd)) {
        uint64_t done = awaitDependency(dep);
        if (ctx.aborted)
          break;
        // Never behind SystemC time (it moved on while we were blocked).
        uint64_t ready = std::max({start, done + syncPs, nowPs()});
        waitSum += ready - start;
        start = ready;
      }
      if (!step(index, cmd, start))
        break;
      // The command's effect on the machine state is complete here (the
      // kernels run inside step), before any later command of this engine.
      if (ctx.observer && *ctx.observer)
        (*ctx.observer)(engine_, ctx.group, index);
      completed(cmd);
      queue_.pop();
    }
    finishGroup();
    // Let SystemC time catch up, so that the next group starts after both
    // engines have finished this one.
    if (localPs_ > nowPs())
      waitPs(localPs_ - nowPs());
    finished_ = queue_.atEnd();
    finishPs_ = localPs_ = nowPs();
  }
}

void EngineBase::record(const isa::RawCommand &cmd, size_t index,
                        uint64_t startPs, uint64_t cycles, TraceEvent ev) {
  if (!ctx_->trace)
    return;
  ev.engine = engine_;
  ev.group = ctx_->group;
  ev.index = static_cast<uint32_t>(index);
  ev.cmdId = isa::cmdId(cmd);
  ev.cmdIdDep = isa::cmdIdDep(cmd);
  ev.startPs = startPs - ctx_->runStartPs;
  ev.endPs = localPs_ - ctx_->runStartPs;
  ev.cycles = cycles;
  ev.name = isa::mnemonic(cmd);
  ctx_->trace->push_back(std::move(ev));
}

//===----------------------------------------------------------------------===//
// TiuEngine
//===----------------------------------------------------------------------===//

TiuEngine::TiuEngine(sc_core::sc_module_name name, CommandQueue &queue,
                     IdScoreboard &scoreboard, LocalMemoryUnit &lmem)
    : EngineBase(name, isa::Engine::Tiu, queue, scoreboard, lmem) {
  SC_THREAD(run);
  set_stack_size(kEngineStackBytes);
}

uint64_t TiuEngine::periodPs() const { return ctx_->cfg->tiuPeriodPs(); }

bool TiuEngine::step(size_t index, const isa::RawCommand &cmd, uint64_t start) {
  RunContext &ctx = *ctx_;
  const SimConfig &cfg = *ctx.cfg;
  const CommandStream &stream = queue_.stream();

  TiuWork work;
  TiuCost cost;
  bool decoded = false;
  try {
    TiuOp op = decodeTiu(cmd);
    decoded = true;
    if (op.task != isa::TiuTask::Sys) {
      work = tiuWork(op, cfg.chip);
      lmem_.tiuAccess(work);
    }
    if (ctx.timed())
      cost = tiuCost(op, work, cfg);
    if (ctx.executes())
      executeTiu(op, *ctx.state);
  } catch (const std::exception &e) {
    failCommand(ctx, engine_, index, stream, decoded, e);
    return false;
  }

  uint64_t cycles = cost.cycles();
  uint64_t busy = cycles * clockPs_;
  localPs_ = start + busy;
  // GDMA transfers into the banks this command uses pay for it (see
  // GdmaEngine::retireOldest).
  if (ctx.timed() && cfg.lmemGdmaConflictPct != 0)
    lmem_.tiuBanks().record(cost.banks, start, localPs_);

  SimStats &s = *ctx.stats;
  ++s.tiuCommands;
  s.tiuBusyPs += busy;
  if (cost.unit == TiuUnit::Cube) {
    s.tiuCubePs += busy;
    s.tiuMacs += cost.macs;
    if (cost.peakMacsPerCycle != 0)
      s.idealCubeCycles += double(cost.macs) / double(cost.peakMacsPerCycle);
  }
  if (cost.conflictPairs != 0) {
    ++s.bankConflicts;
    s.bankConflictCycles += cost.conflictCycles;
  }
  if (ctx.trace) {
    TraceEvent ev;
    ev.macs = work.macs;
    ev.cubeMacs = cost.macs;
    if (cost.peakMacsPerCycle != 0)
      ev.idealCycles = double(cost.macs) / double(cost.peakMacsPerCycle);
    ev.elements = work.outputElements;
    ev.bankConflict = cost.conflictPairs != 0;
    record(cmd, index, start, cycles, std::move(ev));
  }
  return true;
}

//===----------------------------------------------------------------------===//
// GdmaEngine
//===----------------------------------------------------------------------===//

GdmaEngine::GdmaEngine(sc_core::sc_module_name name, CommandQueue &queue,
                       IdScoreboard &scoreboard, LocalMemoryUnit &lmem,
                       DdrChannel &ddr)
    : EngineBase(name, isa::Engine::Gdma, queue, scoreboard, lmem), ddr_(ddr) {
  SC_THREAD(run);
  set_stack_size(kEngineStackBytes);
}

uint64_t GdmaEngine::periodPs() const { return ctx_->cfg->gdmaPeriodPs(); }

bool GdmaEngine::step(size_t index, const isa::RawCommand &cmd,
                      uint64_t start) {
  RunContext &ctx = *ctx_;
  const SimConfig &cfg = *ctx.cfg;
  const CommandStream &stream = queue_.stream();

  GdmaWork work;
  GdmaCost cost;
  BankMask banks = 0;
  bool decoded = false;
  try {
    GdmaOp op = decodeGdma(cmd, cfg.chip);
    decoded = true;
    if (op.type != isa::GdmaType::Sys) {
      work = gdmaWork(op, cfg.chip);
      // The regions come from isa::classifyAddr, which bounds global memory
      // by chip.gmem_bytes; checking them here catches bad addresses in the
      // timing-only mode too, which touches no memory.
      if (work.dst == isa::MemRegion::None)
        throw MemoryError("destination address " +
                          isa::formatHex(op.dstAddr()) +
                          " is outside every memory");
      if (!op.f.fill_constant_en && work.src == isa::MemRegion::None)
        throw MemoryError("source address " + isa::formatHex(op.srcAddr()) +
                          " is outside every memory");
      lmem_.gdmaAccess(work);
    }
    if (ctx.timed()) {
      cost = gdmaCost(op, work, cfg);
      if (cfg.lmemGdmaConflictPct != 0)
        banks = gdmaBanks(op, work, cfg.chip);
    }
    if (ctx.executes())
      executeGdma(op, *ctx.state);
  } catch (const std::exception &e) {
    failCommand(ctx, engine_, index, stream, decoded, e);
    return false;
  }

  if (!ctx.timed()) {
    localPs_ = start;
    account(index, work, start, start, 0, 0);
    scoreboard_.publish(engine_, isa::cmdId(cmd), start);
    return true;
  }

  // Issue: up to gdma.max_outstanding commands are in flight; command seq
  // may issue once command seq - max_outstanding has completed.
  uint64_t period = clockPs_;
  uint64_t slots = slotFreePs_.size();
  while (ringCount_ != 0 && oldest().seq + slots <= issued_)
    retireOldest(/*block=*/true);
  if (ctx.aborted)
    return false;
  start = std::max({start, slotFreePs_[issued_ % slots], nowPs()});

  // Start-up (descriptor decode, first address), then the data path and the
  // DDR transfer side by side. The data path is one per engine: beats of
  // commands in flight follow each other. DDR transfers of this engine
  // drain in order through its share of the channel; each completes
  // ddr.latency after its last byte, so the next one's transfer hides it.
  InFlight &f = ring_[(ringHead_ + ringCount_) % ring_.size()];
  f = InFlight();
  f.index = index;
  f.seq = issued_++;
  f.cmdId = isa::cmdId(cmd);
  f.startPs = start;
  f.streamStartPs = start + cost.startupCycles * period;
  f.datapathCycles = cost.datapathCycles;
  f.datapathEndPs = std::max(f.streamStartPs, lastDatapathEndPs_) +
                    cost.datapathCycles * period;
  lastDatapathEndPs_ = f.datapathEndPs;
  f.banks = banks;
  f.ddrBusBytes = cost.ddrBusBytes;
  f.work = work;
  if (cost.usesDdr()) {
    f.port = ports_[f.seq % slots].get();
    const DdrChannel::Port *after =
        lastDdrPort_ && lastDdrSeq_ + slots > f.seq ? lastDdrPort_ : nullptr;
    ddr_.start(*f.port, cost.ddrBusBytes, f.streamStartPs - nowPs(), after);
    lastDdrPort_ = f.port;
    lastDdrSeq_ = f.seq;
  }
  ++ringCount_;
  // The issue stage is free for the next command after the start-up.
  localPs_ = f.streamStartPs;
  retireReady();
  return !ctx.aborted;
}

bool GdmaEngine::retireOldest(bool block) {
  if (ringCount_ == 0)
    return false;
  InFlight &f = oldest();
  if (f.port && !f.port->drained()) {
    if (!block)
      return false;
    while (!f.port->drained() && !ctx_->aborted)
      sc_core::wait(wake_); // notified by every drain of this engine's ports
    if (ctx_->aborted) {
      ringCount_ = 0;
      return false;
    }
  }
  const SimConfig &cfg = *ctx_->cfg;
  uint64_t period = clockPs_;
  // Beats into banks a TIU command uses at the same time wait for the bank:
  // the TIU pipeline keeps the single port, the DMA data path stalls. The
  // TIU thread runs until it blocks on a GDMA id, so once this thread has
  // yielded, every TIU command that can overlap this one (all that do not
  // wait for this or a later GDMA id) is recorded; a transfer that waited
  // for DDR has yielded already, one without DDR traffic yields here.
  uint64_t conflictCycles = 0;
  if (f.banks != 0 && f.datapathCycles != 0 && !f.port) {
    sc_core::wait(sc_core::SC_ZERO_TIME);
    if (ctx_->aborted) {
      ringCount_ = 0;
      return false;
    }
  }
  if (f.banks != 0 && f.datapathCycles != 0) {
    uint64_t beatsFrom = f.datapathEndPs - f.datapathCycles * period;
    double overlap =
        lmem_.tiuBanks().overlapPs(f.banks, beatsFrom, f.datapathEndPs);
    conflictCycles = isa::gdmaConflictCycles(overlap, period, cfg);
  }
  uint64_t dataEnd = f.datapathEndPs + conflictCycles * period;
  if (conflictCycles != 0) {
    // The data path is one per engine: the beats of the commands issued
    // after this one follow its stalled beats, so they move too (up to the
    // first that had a gap before it).
    uint64_t prev = dataEnd;
    for (size_t k = 1; k < ringCount_; ++k) {
      InFlight &n = ring_[(ringHead_ + k) % ring_.size()];
      uint64_t end =
          std::max(n.streamStartPs, prev) + n.datapathCycles * period;
      if (end <= n.datapathEndPs)
        break;
      n.datapathEndPs = end;
      prev = end;
    }
    lastDatapathEndPs_ = std::max(lastDatapathEndPs_, prev);
  }
  if (f.port)
    dataEnd = std::max(dataEnd, f.port->drainedPs() + ddr_.latencyPs());
  // Ids complete in order.
  uint64_t end = nextEdge(std::max(dataEnd, lastCompletePs_), period);
  lastCompletePs_ = end;
  slotFreePs_[f.seq % slotFreePs_.size()] = end;
  scoreboard_.publish(engine_, f.cmdId, end);
  account(f.index, f.work, f.startPs, end, f.ddrBusBytes, conflictCycles);
  popOldest();
  return true;
}

uint64_t GdmaEngine::awaitDependency(uint32_t dep) {
  // While waiting for a TIU id, keep completing the transfers in flight:
  // the TIU may be waiting for one of them.
  uint64_t done = 0;
  isa::Engine tiu = isa::Engine::Tiu;
  for (;;) {
    retireReady();
    if (ctx_->aborted)
      return 0;
    if (ringCount_ == 0)
      return scoreboard_.waitFor(tiu, dep, ctx_->aborted);
    if (scoreboard_.waitForOr(tiu, dep, ctx_->aborted, wake_, done))
      return done;
  }
}

void GdmaEngine::startGroup() {
  const SimConfig &cfg = *ctx_->cfg;
  size_t slots = ctx_->timed() ? size_t(cfg.gdmaMaxOutstanding) : 1;
  while (ports_.size() < slots) {
    ports_.push_back(std::make_unique<DdrChannel::Port>());
    ports_.back()->setWake(&wake_);
  }
  slotFreePs_.assign(slots, localPs_);
  if (ring_.size() != slots)
    ring_.assign(slots, InFlight());
  ringHead_ = ringCount_ = 0;
  issued_ = 0;
  lastCompletePs_ = lastDatapathEndPs_ = localPs_;
  busyUntilPs_ = 0;
  lastDdrPort_ = nullptr;
  lastDdrSeq_ = 0;
}

void GdmaEngine::finishGroup() {
  while (ringCount_ != 0 && !ctx_->aborted)
    retireOldest(/*block=*/true);
  ringCount_ = 0;
  localPs_ = std::max(localPs_, lastCompletePs_);
}

void GdmaEngine::account(size_t index, const GdmaWork &work, uint64_t startPs,
                         uint64_t endPs, uint64_t ddrBusBytes,
                         uint64_t conflictCycles) {
  SimStats &s = *ctx_->stats;
  // Busy = time with at least one command in flight (commands overlap).
  uint64_t busyFrom = std::max(startPs, busyUntilPs_);
  if (endPs > busyFrom)
    s.gdmaBusyPs += endPs - busyFrom;
  busyUntilPs_ = std::max(busyUntilPs_, endPs);
  ++s.gdmaCommands;
  s.gdmaBytes += work.bytes;
  s.ddrReadBytes += work.ddrReadBytes;
  s.ddrWriteBytes += work.ddrWriteBytes;
  s.ddrBusBytes += ddrBusBytes;
  if (conflictCycles != 0) {
    ++s.gdmaLmemConflicts;
    s.gdmaLmemConflictCycles += conflictCycles;
  }
  if (ctx_->trace) {
    TraceEvent ev;
    ev.bytes = work.bytes;
    ev.ddrReadBytes = work.ddrReadBytes;
    ev.ddrWriteBytes = work.ddrWriteBytes;
    ev.conflictCycles = conflictCycles;
    ev.slot = slotFreePs_.empty() ? 0 : uint32_t(index % slotFreePs_.size());
    uint64_t saved = localPs_;
    localPs_ = endPs; // record() takes the end from localPs_
    record(queue_.stream().command(index), index, startPs,
           (endPs - startPs) / clockPs_, std::move(ev));
    localPs_ = saved;
  }
}

} // namespace tpu::sim
