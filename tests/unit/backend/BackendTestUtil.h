//===- BackendTestUtil.h - Running backend kernels on the simulator -*- C++
//-*-===//
//
// Shared by the backend unit tests: global tensors in a simulated machine,
// execution of a finished command group through the simulator's functional
// kernels (decodeTiu/executeTiu, decodeGdma/executeGdma) in an order that
// honours cmd_id_dep, and float references with the precision rounding of
// isa/Numerics.h.
//
// Every kernel is run under several schedules of the two engines (GDMA as
// early as the ids allow, TIU as early as they allow, and seeded random
// interleavings): a missing dependency shows up as a result that differs
// between schedules or from the reference.
//
//===----------------------------------------------------------------------===//
#ifndef TPU_TESTS_BACKEND_TESTUTIL_H
#define TPU_TESTS_BACKEND_TESTUTIL_H

#include "tpuc/Backend/Backend.h"

#include "tpu/isa/Command.h"
#include "tpu/isa/Numerics.h"
#include "tpu/isa/Work.h"
#include "tpusim/Func.h"
#include "tpusim/Memory.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace tpu::backend::test {

using isa::Prec;

/// Schedules of the two command streams.
enum class Schedule { GdmaFirst, TiuFirst, Random };

inline const char *scheduleName(Schedule s) {
  switch (s) {
  case Schedule::GdmaFirst:
    return "gdma-first";
  case Schedule::TiuFirst:
    return "tiu-first";
  default:
    return "random";
  }
}

/// Number of elements of dims `d`.
inline int64_t count(const std::vector<int64_t> &d) {
  int64_t n = 1;
  for (int64_t v : d)
    n *= v;
  return n;
}

/// Dense row-major strides (in elements) of dims `d`.
inline std::vector<int64_t> denseStrides(const std::vector<int64_t> &d) {
  std::vector<int64_t> s(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;)
    s[i - 1] = s[i] * d[i];
  return s;
}

/// Multi-index of flat index `i` in dims `d`.
inline std::vector<int64_t> unflat(int64_t i, const std::vector<int64_t> &d) {
  std::vector<int64_t> idx(d.size());
  for (size_t k = d.size(); k-- > 0;) {
    idx[k] = i % d[k];
    i /= d[k];
  }
  return idx;
}

/// Rounds to the precision as the tensor stores it.
inline float roundTo(float v, Prec p) { return isa::roundToPrec(v, p); }

/// Deterministic pseudo-random values in [lo, hi).
inline std::vector<float> randomValues(size_t n, unsigned seed, float lo = -1,
                                       float hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(gen);
  return v;
}

/// A bump allocator of global addresses (4 KiB aligned, as tpu-mlir).
class GlobalAlloc {
public:
  explicit GlobalAlloc(const isa::ChipParams &chip) : next_(chip.gmemBase) {}
  uint64_t alloc(uint64_t bytes) {
    uint64_t a = next_;
    next_ += (bytes + kAlign - 1) / kAlign * kAlign + kAlign;
    return a;
  }
  GTensor tensor(Prec p, std::vector<int64_t> shape) {
    GTensor t;
    t.prec = p;
    t.shape = std::move(shape);
    t.addr = alloc(std::max<uint64_t>(t.bytes(), 1));
    return t;
  }

private:
  static constexpr uint64_t kAlign = 4096;
  uint64_t next_;
};

inline std::vector<uint8_t> encodeAs(const std::vector<float> &v, Prec p) {
  return encodeFloats(v.data(), v.size(), p);
}

inline void writeBytes(sim::MachineState &m, uint64_t addr,
                       const std::vector<uint8_t> &b) {
  m.gmem.write(addr, b.data(), b.size());
}

/// Writes float values into a global tensor (converted to its precision).
inline void writeTensor(sim::MachineState &m, const GTensor &t,
                        const std::vector<float> &v) {
  ASSERT_EQ(int64_t(v.size()), t.numElements());
  writeBytes(m, t.addr, encodeAs(v, t.prec));
}

inline std::vector<float> readTensor(const sim::MachineState &m,
                                     const GTensor &t) {
  std::vector<uint8_t> b(t.bytes());
  m.gmem.read(t.addr, b.data(), b.size());
  std::vector<float> v(size_t(t.numElements()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = sim::loadFloat(b.data(), i, {t.prec, true});
  return v;
}

/// DDR bytes the GDMA commands of `em` read (isa::gdmaWork of each).
inline uint64_t ddrReadBytes(const CmdEmitter &em) {
  uint64_t bytes = 0;
  for (const isa::RawCommand &c : em.gdmaCommands())
    bytes +=
        isa::gdmaWork(sim::decodeGdma(c, em.chip()), em.chip()).ddrReadBytes;
  return bytes;
}

struct StreamStats {
  size_t tiu = 0, gdma = 0;
  /// The groups in reduced-axis slices (CmdEmitter::reducedShares; set by
  /// KernelRun::run).
  std::vector<ReducedShares> reducedShares;
};

/// Executes one finished group on `m` under `sched`. Checks the id rules
/// on the way: ids count up from 1, each stream ends with its end command,
/// dependencies point into the other stream, and the schedule never
/// deadlocks.
inline StreamStats runGroup(sim::MachineState &m,
                            const isa::bmodel::CmdGroup &g, Schedule sched,
                            unsigned seed = 1) {
  auto tiu = isa::splitBuffer(isa::Engine::Tiu, g.tiu.data(), g.tiu.size());
  auto gdma = isa::splitBuffer(isa::Engine::Gdma, g.gdma.data(), g.gdma.size());
  StreamStats st{tiu.size(), gdma.size()};
  EXPECT_EQ(tiu.size(), g.bdcNum);
  EXPECT_EQ(gdma.size(), g.gdmaNum);
  EXPECT_TRUE(!tiu.empty() && isa::isEndCommand(tiu.back().cmd));
  EXPECT_TRUE(!gdma.empty() && isa::isEndCommand(gdma.back().cmd));
  for (size_t i = 0; i < tiu.size(); ++i) {
    EXPECT_EQ(isa::cmdId(tiu[i].cmd), i + 1);
    EXPECT_LE(isa::cmdIdDep(tiu[i].cmd), gdma.size());
  }
  for (size_t i = 0; i < gdma.size(); ++i) {
    EXPECT_EQ(isa::cmdId(gdma[i].cmd), i + 1);
    EXPECT_LE(isa::cmdIdDep(gdma[i].cmd), tiu.size());
  }
  std::mt19937 gen(seed);
  size_t ti = 0, gi = 0;
  while (ti < tiu.size() || gi < gdma.size()) {
    bool tReady = ti < tiu.size() && isa::cmdIdDep(tiu[ti].cmd) <= gi;
    bool gReady = gi < gdma.size() && isa::cmdIdDep(gdma[gi].cmd) <= ti;
    if (!tReady && !gReady) {
      ADD_FAILURE() << "deadlock at TIU " << ti + 1 << ", GDMA " << gi + 1;
      return st;
    }
    bool runTiu;
    if (tReady && gReady)
      runTiu = sched == Schedule::TiuFirst ||
               (sched == Schedule::Random && (gen() & 1));
    else
      runTiu = tReady;
    if (runTiu) {
      sim::executeTiu(sim::decodeTiu(tiu[ti].cmd), m);
      ++ti;
    } else {
      sim::executeGdma(sim::decodeGdma(gdma[gi].cmd, m.chip), m);
      ++gi;
    }
  }
  return st;
}

/// |got - want| <= atol + rtol * |want| for every element.
inline void expectClose(const std::vector<float> &got,
                        const std::vector<float> &want, float rtol, float atol,
                        const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    bool ok = std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i]);
    if (std::isnan(want[i]))
      ok = std::isnan(got[i]);
    else if (std::isinf(want[i]))
      ok = got[i] == want[i];
    if (!ok && bad++ < 8)
      ADD_FAILURE() << what << ": element " << i << " is " << got[i]
                    << ", expected " << want[i];
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size()
                     << " elements differ";
}

/// Relative tolerance of one rounding to `p`.
inline float ulpOf(Prec p) {
  switch (p) {
  case Prec::Fp16:
    return 1.0f / 1024;
  case Prec::Bf16:
    return 1.0f / 128;
  default:
    return 1.0f / (1 << 23);
  }
}

/// Runs `build` (which fills an emitter and global memory) under every
/// schedule and checks the outputs with `check`.
struct KernelRun {
  isa::ChipParams chip = isa::ChipParams::bm1684x();
  /// Emits the kernel(s) into `em`.
  std::function<void(CmdEmitter &em)> emit;
  /// Writes inputs into a fresh machine.
  std::function<void(sim::MachineState &m)> setup;
  /// Checks the outputs.
  std::function<void(const sim::MachineState &m, const std::string &what)>
      check;

  StreamStats run() {
    CmdEmitter em(chip);
    emit(em);
    std::vector<ReducedShares> shares = em.takeReducedShares();
    isa::bmodel::CmdGroup g = em.finish();
    StreamStats st;
    for (Schedule s :
         {Schedule::GdmaFirst, Schedule::TiuFirst, Schedule::Random}) {
      sim::MachineState m(chip);
      setup(m);
      st = runGroup(m, g, s, 7);
      check(m, scheduleName(s));
    }
    st.reducedShares = std::move(shares);
    return st;
  }
};

} // namespace tpu::backend::test

#endif // TPU_TESTS_BACKEND_TESTUTIL_H
