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

void EngineBase::begin(RunContext &ctx) {
  ctx_ = &ctx;
  finished_ = false;
  finishPs_ = localPs_ = nowPs();
  start_.notify(sc_core::SC_ZERO_TIME);
}

void EngineBase::loop() {
  for (;;) {
    sc_core::wait(start_);
    RunContext &ctx = *ctx_;
    uint64_t period = periodPs();
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
      uint64_t start = localPs_;
      if (uint32_t dep = isa::cmdIdDep(c.cmd)) {
        uint64_t done =
            scoreboard_.waitFor(otherEngine(engine_), dep, ctx.aborted);
        if (ctx.aborted)
          break;
        // Never behind SystemC time (it moved on while we were blocked).
        start = std::max({start, done + syncPs, nowPs()});
        waitSum += start - localPs_;
      }
      if (!step(index, c, start))
        break;
      scoreboard_.publish(engine_, isa::cmdId(c.cmd), localPs_);
      queue_.pop();
    }
    // Let SystemC time catch up, so that the next group starts after both
    // engines have finished this one.
    if (localPs_ > nowPs())
      waitPs(localPs_ - nowPs());
    finished_ = queue_.atEnd();
    finishPs_ = localPs_ = nowPs();
  }
}

void EngineBase::record(const QueuedCommand &c, size_t index, uint64_t startPs,
                        uint64_t cycles, TraceEvent ev) {
  if (!ctx_->trace)
    return;
  ev.engine = engine_;
  ev.group = ctx_->group;
  ev.index = static_cast<uint32_t>(index);
  ev.cmdId = isa::cmdId(c.cmd);
  ev.cmdIdDep = isa::cmdIdDep(c.cmd);
  ev.startPs = startPs - ctx_->runStartPs;
  ev.endPs = localPs_ - ctx_->runStartPs;
  ev.cycles = cycles;
  ev.name = isa::mnemonic(c.cmd);
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

bool TiuEngine::step(size_t index, const QueuedCommand &c, uint64_t start) {
  RunContext &ctx = *ctx_;
  const SimConfig &cfg = *ctx.cfg;
  const CommandStream &stream = queue_.stream();

  TiuWork work;
  TiuCost cost;
  bool decoded = false;
  try {
    TiuOp op = decodeTiu(c.cmd);
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
  uint64_t busy = cycles * periodPs();
  localPs_ = start + busy;

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
    ev.elements = work.outputElements;
    ev.bankConflict = cost.conflictPairs != 0;
    record(c, index, start, cycles, std::move(ev));
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

bool GdmaEngine::step(size_t index, const QueuedCommand &c, uint64_t start) {
  RunContext &ctx = *ctx_;
  const SimConfig &cfg = *ctx.cfg;
  const CommandStream &stream = queue_.stream();

  GdmaWork work;
  GdmaCost cost;
  bool decoded = false;
  try {
    GdmaOp op = decodeGdma(c.cmd, cfg.chip);
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
    if (ctx.timed())
      cost = gdmaCost(op, work, cfg);
    if (ctx.executes())
      executeGdma(op, *ctx.state);
  } catch (const std::exception &e) {
    failCommand(ctx, engine_, index, stream, decoded, e);
    return false;
  }

  uint64_t period = periodPs();
  uint64_t end = start;
  if (ctx.timed()) {
    // Start-up, then the DDR transfer and the data path side by side: the
    // command ends when the slower of the two is done. The DDR channel is
    // shared, so joining it brings SystemC time up to this engine's time.
    uint64_t streamStart = start + cost.startupCycles * period;
    end = streamStart + cost.datapathCycles * period;
    if (cost.usesDdr()) {
      ddr_.transfer(port_, cost.ddrBusBytes, streamStart - nowPs());
      end = std::max(end, nowPs());
    }
    end = nextEdge(end, period);
  }
  localPs_ = end;

  SimStats &s = *ctx.stats;
  uint64_t busy = end - start;
  ++s.gdmaCommands;
  s.gdmaBusyPs += busy;
  s.gdmaBytes += work.bytes;
  s.ddrReadBytes += work.ddrReadBytes;
  s.ddrWriteBytes += work.ddrWriteBytes;
  s.ddrBusBytes += cost.ddrBusBytes;
  if (ctx.trace) {
    TraceEvent ev;
    ev.bytes = work.bytes;
    ev.ddrReadBytes = work.ddrReadBytes;
    ev.ddrWriteBytes = work.ddrWriteBytes;
    record(c, index, start, busy / period, std::move(ev));
  }
  return true;
}

} // namespace tpu::sim
