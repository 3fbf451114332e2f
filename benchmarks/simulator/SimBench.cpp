//===- SimBench.cpp - Simulated commands per second -----------------------===//
//
// A long synthetic command group in the shape of compiled code: per step the
// GDMA loads a tile (2 KiB) and stores a result, the TIU runs a few vector
// commands on it, with ids so that the TIU waits for each load and the store
// waits for the TIU. Measured: whole runGroup calls (splitting the byte
// streams, decoding, costing and, in full mode, executing every command),
// reported as simulated commands per second.
//
//===----------------------------------------------------------------------===//
#include "tpusim/Runner.h"
#include "tpusim/Simulator.h"

#include "tpu/isa/Command.h"

#include <benchmark/benchmark.h>

#include <cstdlib>

using namespace tpu;
using namespace tpu::sim;

namespace {

constexpr unsigned kLaneShift = 18;
constexpr uint64_t kLmemBase = 0x08000000;
constexpr uint64_t kDdrBase = 0x100000000;
constexpr uint32_t kBank = 16 * 1024;
/// TIU commands per loaded tile.
constexpr unsigned kTiuPerStep = 4;
/// int8 tile (1, 64, 8, 32): 256 bytes per lane, 16 KiB in all.
constexpr uint32_t kC = 64, kH = 8, kW = 32;

isa::RawCommand dma(uint32_t id, uint32_t dep, uint64_t src, uint64_t dst) {
  isa::cmd::DmaTensor c;
  c.cmd_id = id;
  c.cmd_id_dep = dep;
  c.cmd_type = unsigned(isa::GdmaType::Tensor);
  c.src_data_format = unsigned(isa::GdmaFormat::Int8);
  c.src_nsize = c.dst_nsize = 1;
  c.src_csize = c.dst_csize = kC;
  c.src_hsize = c.dst_hsize = kH;
  c.src_wsize = c.dst_wsize = kW;
  c.src_start_addr_l32 = src & 0xFFFFFFFF;
  c.src_start_addr_h8 = src >> 32;
  c.dst_start_addr_l32 = dst & 0xFFFFFFFF;
  c.dst_start_addr_h8 = dst >> 32;
  c.localmem_mask_l32 = c.localmem_mask_h32 = 0xFFFFFFFF;
  return isa::encode(c);
}

isa::RawCommand vectorOp(uint32_t id, uint32_t dep, uint32_t res, uint32_t a,
                         uint32_t b) {
  isa::cmd::SAR c;
  c.cmd_short = 1;
  c.cmd_id = id;
  c.cmd_id_dep = dep;
  c.tsk_typ = unsigned(isa::TiuTask::AR);
  c.tsk_eu_typ = 2; // add
  c.tsk_opd_num = 2;
  c.res0_prec = c.opd0_prec = c.opd1_prec = unsigned(isa::Prec::Int8);
  c.opd0_sign = c.opd1_sign = 1;
  c.res0_n = 1;
  c.res0_c = kC;
  c.res0_h = kH;
  c.res0_w = kW;
  c.res0_addr = res;
  c.opd0_addr = a;
  c.opd1_addr = b;
  return isa::encode(c);
}

/// One group of `steps` steps: 2 GDMA + kTiuPerStep TIU commands each.
struct Program {
  std::vector<uint8_t> tiu, gdma;
  uint64_t commands = 0;
};

Program makeProgram(unsigned steps) {
  std::vector<isa::RawCommand> tiu, gdma;
  uint32_t tid = 0, gid = 0;
  for (unsigned s = 0; s < steps; ++s) {
    uint32_t in = (s % 2) * kBank, out = 4 * kBank + (s % 2) * kBank;
    gdma.push_back(
        dma(++gid, tid, kDdrBase + (s % 64) * 0x10000, kLmemBase + in));
    uint32_t loaded = gid;
    for (unsigned k = 0; k < kTiuPerStep; ++k)
      tiu.push_back(vectorOp(++tid, k == 0 ? loaded : 0, out, in, 2 * kBank));
    gdma.push_back(dma(++gid, tid, kLmemBase + out,
                       kDdrBase + 0x4000000 + (s % 64) * 0x10000));
  }
  tiu.push_back(isa::makeTiuEnd(++tid, gid));
  gdma.push_back(isa::makeGdmaEnd(++gid, tid));
  Program p;
  p.commands = tiu.size() + gdma.size();
  p.tiu = isa::packBuffer(tiu);
  p.gdma = isa::packBuffer(gdma);
  return p;
}

void runBench(benchmark::State &state, SimMode mode) {
  Program p = makeProgram(unsigned(state.range(0)));
  SimConfig cfg = SimConfig::defaults();
  Simulator sim(cfg, mode);
  uint64_t commands = 0;
  for (auto _ : state) {
    sim.runGroup(p.tiu, p.gdma);
    commands += p.commands;
  }
  state.SetItemsProcessed(int64_t(commands));
  state.counters["commands/s"] =
      benchmark::Counter(double(commands), benchmark::Counter::kIsRate);
  state.counters["sim_cycles/group"] =
      double(sim.cycles()) / double(sim.groupsRun());
}

void BM_TimingOnly(benchmark::State &state) {
  runBench(state, SimMode::Timing);
}
void BM_Full(benchmark::State &state) { runBench(state, SimMode::Full); }
void BM_FunctionalOnly(benchmark::State &state) {
  runBench(state, SimMode::Functional);
}

/// A whole bmodel simulated in full mode, again and again in one process:
/// the model read once, then per iteration a new runner (machine state),
/// the inputs placed, every command group run and the outputs read, as
/// `tpuc regress` does for each sample of a case. The bmodel and its
/// inputs come from SIM_BENCH_BMODEL and SIM_BENCH_INPUT (npz); without
/// them the benchmark is skipped.
void BM_ModelRun(benchmark::State &state) {
  const char *path = std::getenv("SIM_BENCH_BMODEL");
  const char *input = std::getenv("SIM_BENCH_INPUT");
  if (!path || !input) {
    state.SkipWithError("set SIM_BENCH_BMODEL and SIM_BENCH_INPUT");
    return;
  }
  isa::bmodel::ParseOptions parse;
  parse.coefficientsInPlace = true;
  isa::bmodel::Model model = isa::bmodel::readModel(path, parse);
  npz::Npz inputs = npz::readNpz(input);
  SimConfig cfg = recordedConfig(model, SimConfig::defaults());
  for (auto _ : state) {
    ModelRunner runner(model, cfg, SimMode::Full);
    runner.setInputs(inputs);
    runner.run();
    benchmark::DoNotOptimize(runner.outputs());
  }
}

} // namespace

BENCHMARK(BM_ModelRun)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TimingOnly)->Arg(20000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Full)->Arg(2000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FunctionalOnly)->Arg(2000)->Unit(benchmark::kMillisecond);
