//===- Simulator.cpp - SystemC-free driver of the Tpu module --------------===//
#include "tpusim/Simulator.h"

#include "tpusim/Tpu.h"

namespace tpu::sim {

const char *simModeName(SimMode m) {
  switch (m) {
  case SimMode::Full:
    return "full";
  case SimMode::Functional:
    return "functional";
  case SimMode::Timing:
    return "timing";
  }
  return "?";
}

std::optional<SimMode> simModeFromName(std::string_view name) {
  for (SimMode m : {SimMode::Full, SimMode::Functional, SimMode::Timing})
    if (name == simModeName(m))
      return m;
  return std::nullopt;
}

struct Simulator::Impl {
  Impl(const SimConfig &c, SimMode m)
      : cfg(c), mode(m), state(c.chip), tpu(Tpu::instance()) {}

  void run(const CommandStream &tiu, const CommandStream &gdma);
  /// Throws unless the budget leaves room for both streams.
  void charge(const CommandStream &tiu, const CommandStream &gdma);

  SimConfig cfg;
  SimMode mode;
  MachineState state;
  Tpu &tpu;
  SimStats stats;
  std::vector<TraceEvent> trace;
  PsIntervals ddrBusy;
  bool tracing = false;
  CommandObserver observer;
  unsigned groups = 0;
  uint64_t startPs = 0;
  uint64_t budget = 0; ///< 0: none.
  uint64_t commands = 0;
};

void Simulator::Impl::charge(const CommandStream &tiu,
                             const CommandStream &gdma) {
  uint64_t n = tiu.size() + gdma.size();
  if (budget != 0 && (commands > budget || n > budget - commands))
    throw Error("command group " + std::to_string(groups) + ": its " +
                std::to_string(n) + " commands exceed the command budget of " +
                std::to_string(budget) + " (" + std::to_string(commands) +
                " run before it); the group did not run");
  commands += n;
}

void Simulator::Impl::run(const CommandStream &tiu, const CommandStream &gdma) {
  RunContext ctx;
  ctx.cfg = &cfg;
  ctx.mode = mode;
  ctx.state = &state;
  ctx.stats = &stats;
  ctx.trace = tracing ? &trace : nullptr;
  ctx.ddrBusy = tracing ? &ddrBusy : nullptr;
  ctx.group = groups;
  ctx.observer = observer ? &observer : nullptr;
  ctx.runStartPs = startPs;
  uint64_t groupStart = nowPs();
  auto account = [&] {
    ++groups;
    stats.totalPs +=
        std::max(tpu.tiu.finishPs(), tpu.gdma.finishPs()) - groupStart;
    stats.groups = groups;
    stats.finish(cfg);
  };
  try {
    tpu.runGroup(ctx, tiu, gdma);
  } catch (...) {
    account();
    throw;
  }
  account();
}

Simulator::Simulator(const SimConfig &cfg, SimMode mode) {
  cfg.validate();
  impl_ = std::make_unique<Impl>(cfg, mode);
  impl_->startPs = nowPs();
  impl_->stats.finish(impl_->cfg);
}

Simulator::~Simulator() = default;

const SimConfig &Simulator::config() const { return impl_->cfg; }
SimMode Simulator::mode() const { return impl_->mode; }
MachineState &Simulator::state() { return impl_->state; }

void Simulator::setTracing(bool on) { impl_->tracing = on; }
void Simulator::setCommandObserver(CommandObserver observer) {
  impl_->observer = std::move(observer);
}
const std::vector<TraceEvent> &Simulator::trace() const { return impl_->trace; }
const PsIntervals &Simulator::ddrBusy() const { return impl_->ddrBusy; }
void Simulator::setCommandBudget(uint64_t maxCommands) {
  impl_->budget = maxCommands;
}
uint64_t Simulator::commandsRun() const { return impl_->commands; }

void Simulator::runGroup(const std::vector<uint8_t> &tiu,
                         const std::vector<uint8_t> &gdma) {
  CommandStream t, g;
  t.engine = isa::Engine::Tiu;
  g.engine = isa::Engine::Gdma;
  try {
    // An engine without commands in a group has no buffer at all.
    if (!tiu.empty())
      t = splitStream(isa::Engine::Tiu, tiu);
    if (!gdma.empty())
      g = splitStream(isa::Engine::Gdma, gdma);
  } catch (const Error &e) {
    throw Error("command group " + std::to_string(impl_->groups) + ": " +
                e.what());
  }
  impl_->charge(t, g);
  impl_->run(t, g);
}

void Simulator::runGroup(const std::vector<isa::RawCommand> &tiu,
                         const std::vector<isa::RawCommand> &gdma) {
  CommandStream t = makeStream(isa::Engine::Tiu, tiu);
  CommandStream g = makeStream(isa::Engine::Gdma, gdma);
  impl_->charge(t, g);
  impl_->run(t, g);
}

const SimStats &Simulator::stats() const { return impl_->stats; }
uint64_t Simulator::elapsedPs() const { return impl_->stats.totalPs; }
uint64_t Simulator::cycles() const { return impl_->stats.cycles; }
unsigned Simulator::groupsRun() const { return impl_->groups; }

} // namespace tpu::sim
