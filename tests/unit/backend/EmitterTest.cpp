//===- EmitterTest.cpp - CmdEmitter ids, dependencies and groups ----------===//
//
// The id rules of isa/docs/bm1684x.md 6: ids count up from 1 per engine, a
// dependency names an already emitted command of the other engine, each
// stream ends with its end command waiting for the other engine's last
// command; dependencies derived from local-memory use follow read/write
// conflicts only. The last test runs a kernel's group through the
// simulator's SystemC model (functional mode) as the runtime would.
//
//===----------------------------------------------------------------------===//

#include "BackendTestUtil.h"

#include "tpusim/Simulator.h"

using namespace tpu;
using namespace tpu::backend;
using namespace tpu::backend::test;

namespace {

isa::RawCommand tiuNop() {
  isa::cmd::SysId c;
  c.tsk_typ = unsigned(isa::TiuTask::Sys);
  c.tsk_eu_typ = isa::kTiuSysNop;
  return isa::encode(c);
}

isa::RawCommand gdmaNop() {
  isa::cmd::SDmaSys c;
  c.cmd_short = 1;
  c.cmd_type = unsigned(isa::GdmaType::Sys);
  c.cmd_special_function = isa::kGdmaSysNop;
  return isa::encode(c);
}

} // namespace

TEST(CmdEmitter, IdsAndExplicitDependencies) {
  CmdEmitter em;
  EXPECT_EQ(em.gdma(gdmaNop(), 0), 1u);
  EXPECT_EQ(em.tiu(tiuNop(), 1), 1u);
  EXPECT_EQ(em.tiu(tiuNop(), 0), 2u);
  EXPECT_EQ(em.gdma(gdmaNop(), 2), 2u);
  EXPECT_EQ(isa::cmdIdDep(em.tiuCommands()[0]), 1u);
  EXPECT_EQ(isa::cmdIdDep(em.gdmaCommands()[1]), 2u);
  // A dependency on a command not emitted yet is refused.
  EXPECT_THROW(em.tiu(tiuNop(), 3), Error);
  EXPECT_THROW(em.gdma(gdmaNop(), 3), Error);
  // Engines are checked.
  EXPECT_THROW(em.tiu(gdmaNop(), 0), Error);
}

TEST(CmdEmitter, FinishAppendsEndCommandsWaitingForTheOtherEngine) {
  CmdEmitter em;
  em.gdma(gdmaNop(), 0);
  em.tiu(tiuNop(), 1);
  em.tiu(tiuNop(), 1);
  isa::bmodel::CmdGroup g = em.finish();
  EXPECT_EQ(g.bdcNum, 3u);
  EXPECT_EQ(g.gdmaNum, 2u);
  // Streams are padded to 128 bytes (isa/docs/bm1684x.md 4.1).
  EXPECT_EQ(g.tiu.size() % 128, 0u);
  EXPECT_EQ(g.gdma.size() % 128, 0u);
  auto tiu = isa::splitBuffer(isa::Engine::Tiu, g.tiu.data(), g.tiu.size());
  auto gdma = isa::splitBuffer(isa::Engine::Gdma, g.gdma.data(), g.gdma.size());
  ASSERT_EQ(tiu.size(), 3u);
  ASSERT_EQ(gdma.size(), 2u);
  EXPECT_TRUE(isa::isEndCommand(tiu[2].cmd));
  EXPECT_EQ(isa::cmdId(tiu[2].cmd), 3u);
  EXPECT_EQ(isa::cmdIdDep(tiu[2].cmd), 1u); // last GDMA command
  EXPECT_TRUE(isa::isEndCommand(gdma[1].cmd));
  EXPECT_EQ(isa::cmdIdDep(gdma[1].cmd), 2u); // last TIU command
  // The emitter is empty and reusable afterwards.
  EXPECT_EQ(em.numTiu(), 0u);
  EXPECT_EQ(em.gdma(gdmaNop(), 0), 1u);
}

TEST(CmdEmitter, DependenciesFollowLocalMemoryConflicts) {
  CmdEmitter em;
  LocalRange a{0, 256}, b{1024, 256};
  // GDMA writes A (id 1) and B (id 2).
  em.gdmaAccess(gdmaNop(), {}, {a});
  em.gdmaAccess(gdmaNop(), {}, {b});
  // TIU reads A: waits for GDMA 1 only (read after write).
  em.tiuAccess(tiuNop(), {a}, {});
  EXPECT_EQ(isa::cmdIdDep(em.tiuCommands().back()), 1u);
  // TIU writes a disjoint range: no wait.
  em.tiuAccess(tiuNop(), {}, {{4096, 64}});
  EXPECT_EQ(isa::cmdIdDep(em.tiuCommands().back()), 0u);
  // TIU reads B: waits for GDMA 2.
  em.tiuAccess(tiuNop(), {b}, {});
  EXPECT_EQ(isa::cmdIdDep(em.tiuCommands().back()), 2u);
  // GDMA overwrites A: waits for TIU 1, the last reader (write after read).
  em.gdmaAccess(gdmaNop(), {}, {a});
  EXPECT_EQ(isa::cmdIdDep(em.gdmaCommands().back()), 1u);
  // GDMA reads B: B was only read by the TIU, so no wait.
  em.gdmaAccess(gdmaNop(), {b}, {});
  EXPECT_EQ(isa::cmdIdDep(em.gdmaCommands().back()), 0u);
  // GDMA reads what TIU 2 wrote: waits for it (store after compute).
  em.gdmaAccess(gdmaNop(), {{4096 + 32, 8}}, {});
  EXPECT_EQ(isa::cmdIdDep(em.gdmaCommands().back()), 2u);
}

TEST(CmdEmitter, KernelsOverlapLoadsWithCompute) {
  // A sliced convolution on a chip with 8 KiB per lane. With every command
  // taking one time unit and each engine running in order, serialised
  // streams (each load waiting for the previous tile's convolution and
  // store) finish after the sum of both streams' lengths; with double
  // buffering the longer stream (GDMA: two loads and a store per tile)
  // only waits for the first load and the last convolution.
  isa::ChipParams chip;
  chip.lmemBytes = 8 * 1024;
  CmdEmitter em(chip);
  GlobalAlloc ga(chip);
  ConvParams p;
  p.name = "c";
  p.input = ga.tensor(Prec::Fp32, {1, 16, 200, 16});
  p.output = ga.tensor(Prec::Fp32, {1, 16, 200, 16});
  p.filterAddr = ga.alloc(16 * 16 * 9 * 4);
  p.kernelH = p.kernelW = 3;
  p.padTop = p.padBottom = p.padLeft = p.padRight = 1;
  conv2d(em, p);
  const auto &tiu = em.tiuCommands();
  const auto &gdma = em.gdmaCommands();
  ASSERT_GT(tiu.size(), 4u);
  // finish[i]: completion time of command i + 1 of each engine.
  std::vector<uint64_t> tDone(tiu.size()), gDone(gdma.size());
  size_t ti = 0, gi = 0;
  while (ti < tiu.size() || gi < gdma.size()) {
    bool progressed = false;
    if (ti < tiu.size()) {
      uint32_t d = isa::cmdIdDep(tiu[ti]);
      if (d <= gi) {
        uint64_t start = std::max(ti ? tDone[ti - 1] : 0, d ? gDone[d - 1] : 0);
        tDone[ti++] = start + 1;
        progressed = true;
      }
    }
    if (gi < gdma.size()) {
      uint32_t d = isa::cmdIdDep(gdma[gi]);
      if (d <= ti) {
        uint64_t start = std::max(gi ? gDone[gi - 1] : 0, d ? tDone[d - 1] : 0);
        gDone[gi++] = start + 1;
        progressed = true;
      }
    }
    ASSERT_TRUE(progressed) << "deadlock";
  }
  uint64_t makespan = std::max(tDone.back(), gDone.back());
  EXPECT_LE(makespan, uint64_t(std::max(tiu.size(), gdma.size())) + 2)
      << tiu.size() << " TIU and " << gdma.size() << " GDMA commands";
}

TEST(CmdEmitter, RunsOnTheSimulatorModel) {
  // The same group through the SystemC model in functional mode (what
  // tpusim run does with a bmodel's groups).
  sim::SimConfig cfg = sim::SimConfig::defaults();
  sim::Simulator s(cfg, sim::SimMode::Functional);
  CmdEmitter em(cfg.chip);
  GlobalAlloc ga(cfg.chip);
  GTensor a = ga.tensor(Prec::Fp32, {2, 70, 9}),
          o = ga.tensor(Prec::Fp32, {2, 70, 9});
  auto av = randomValues(size_t(a.numElements()), 3, -3, 3);
  unary(em, {"sig", a, o, {UnaryKind::Sigmoid}});
  isa::bmodel::CmdGroup g = em.finish();
  writeTensor(s.state(), a, av);
  s.runGroup(g.tiu, g.gdma);
  std::vector<float> want(av.size());
  for (size_t i = 0; i < av.size(); ++i)
    want[i] = float(1 / (1 + std::exp(-double(av[i]))));
  expectClose(readTensor(s.state(), o), want, 8.0f / (1 << 23), 1e-7f,
              "systemc");
}
