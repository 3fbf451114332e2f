//===- Tpu.cpp - Top module: wiring and running one command group ---------===//
#include "tpusim/Tpu.h"

#include <cstdlib>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TPUSIM_ASAN 1
#include <pthread.h>
#include <sanitizer/common_interface_defs.h>
#endif
#endif

namespace tpu::sim {

namespace {

/// Runs the SystemC kernel (sc_start(args...)) and returns on the caller's
/// stack. Under AddressSanitizer, SystemC (2.3.4, QuickThreads) announces
/// its coroutine switches to ASan, but the switch back to the main stack
/// leaves ASan without that stack's bounds: every later throw there warns
/// "ASan is ignoring requested __asan_handle_no_return" and leaves the
/// frames it unwinds poisoned (a later, deeper call then reads as a
/// stack-buffer-overflow that is none), and LeakSanitizer no longer scans
/// the stack for pointers (reporting what it holds as leaked). Give the
/// bounds back, as a switch to the same stack.
template <typename... Args> void startKernel(Args... args) {
  sc_core::sc_start(args...);
#ifdef TPUSIM_ASAN
  thread_local void *bottom = nullptr;
  thread_local size_t size = 0;
  if (!bottom) {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
      return;
    pthread_attr_getstack(&attr, &bottom, &size);
    pthread_attr_destroy(&attr);
  }
  __sanitizer_start_switch_fiber(nullptr, bottom, size);
  __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
}

/// SystemC prints a banner on first use unless this is set.
constexpr const char *kNoBannerEnv = "SYSTEMC_DISABLE_COPYRIGHT_MESSAGE";

const char *otherName(isa::Engine e) {
  return isa::engineName(e == isa::Engine::Tiu ? isa::Engine::Gdma
                                               : isa::Engine::Tiu);
}

} // namespace

Tpu::Tpu(sc_core::sc_module_name name)
    : sc_core::sc_module(name), tiuQueue("tiu_queue"), gdmaQueue("gdma_queue"),
      scoreboard("scoreboard"), lmem("lmem"), ddr("ddr"),
      tiu("tiu", tiuQueue, scoreboard, lmem),
      gdma("gdma", gdmaQueue, scoreboard, lmem, ddr) {}

Tpu &Tpu::instance() {
  static Tpu *tpu = [] {
    ::setenv(kNoBannerEnv, "1", /*overwrite=*/0);
    if (sc_core::sc_get_time_resolution() !=
        sc_core::sc_time(1, sc_core::SC_PS))
      throw Error("tpusim needs the SystemC time resolution of 1 ps");
    // Starting with nothing to do is how every run ends; not worth a warning.
    sc_core::sc_report_handler::set_actions(
        sc_core::SC_ID_NO_SC_START_ACTIVITY_, sc_core::SC_DO_NOTHING);
    auto *t = new Tpu("tpu");
    // Elaborate and let every thread reach its first wait.
    startKernel(sc_core::SC_ZERO_TIME);
    return t;
  }();
  return *tpu;
}

void Tpu::runKernel() { startKernel(); }

void Tpu::runGroup(RunContext &ctx, const CommandStream &tiuStream,
                   const CommandStream &gdmaStream) {
  ctx.aborted = false;
  ctx.error.reset();
  scoreboard.reset();
  tiuQueue.load(&tiuStream);
  gdmaQueue.load(&gdmaStream);
  lmem.bind(ctx.state->chip, *ctx.stats);
  lmem.tiuBanks().clear();
  ddr.configure(ctx.cfg->ddrPsPerByte(), ctx.cfg->ddrLatencyPs(), ctx.ddrBusy,
                ctx.runStartPs);
  // The MCU starts both engines on the group (timing.md, "MCU").
  uint64_t launch = ctx.timed() ? ctx.cfg->mcuGroupLaunchPs() : 0;
  ctx.stats->launchPs += launch;
  tiu.begin(ctx, launch);
  gdma.begin(ctx, launch);
  startKernel();

  if (!ctx.error && !(tiu.finished() && gdma.finished()))
    ctx.error.emplace(SimError::Kind::Deadlock, deadlockMessage(ctx));
  if (ctx.error) {
    // Let blocked engines see the abort and return to idle, so the next
    // run starts clean.
    ctx.aborted = true;
    scoreboard.wakeAll();
    startKernel();
    throw *ctx.error;
  }
}

std::string Tpu::deadlockMessage(const RunContext &ctx) const {
  std::string msg = "deadlock in group " + std::to_string(ctx.group) +
                    ": every unfinished engine waits for an id that never "
                    "comes";
  const EngineBase *engines[] = {&tiu, &gdma};
  const CommandQueue *queues[] = {&tiuQueue, &gdmaQueue};
  for (int i = 0; i < 2; ++i) {
    const EngineBase &e = *engines[i];
    const CommandQueue &q = *queues[i];
    isa::Engine producer =
        e.engine() == isa::Engine::Tiu ? isa::Engine::Gdma : isa::Engine::Tiu;
    msg += "\n";
    if (e.finished()) {
      msg += std::string(isa::engineName(e.engine())) +
             " finished its stream (last id " +
             std::to_string(scoreboard.completed(e.engine())) + ")";
      continue;
    }
    std::string where =
        describeCommand(e.engine(), ctx.group, q.index(), q.stream());
    size_t nl = where.find('\n');
    msg += where.substr(0, nl) + " waits for " + otherName(e.engine()) +
           " id " + std::to_string(scoreboard.waitingFor(e.engine())) + "; " +
           otherName(e.engine()) + " has completed up to id " +
           std::to_string(scoreboard.completed(producer)) + where.substr(nl);
  }
  return msg;
}

} // namespace tpu::sim

/// libsystemc's own `main` calls sc_main; our programs have their own main
/// and drive SystemC through Tpu::instance(), so this is never called. It
/// lives in this file because every program that uses the model links it.
int sc_main(int, char **) {
  throw tpu::Error("sc_main is not used: tpusim drives SystemC itself");
}
