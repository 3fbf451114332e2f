//===- CodecBench.cpp - Command encode / decode / split throughput --------===//
//
// Items are commands: items_per_second is commands per second.
//
//===----------------------------------------------------------------------===//
#include "tpu/isa/Command.h"

#include <benchmark/benchmark.h>

#include <random>

using namespace tpu::isa;

namespace {

/// A typed command of layout T with every non-reserved field random.
template <typename T> T randomTyped(std::mt19937_64 &rng) {
  RawCommand raw(T::kLayout);
  const LayoutInfo &li = raw.info();
  for (unsigned i = 0; i < li.numFields; ++i)
    if (!li.fields[i].reserved)
      raw.set(i, rng() & li.fields[i].mask());
  return decodeAs<T>(raw);
}

template <typename T> void BM_Encode(benchmark::State &state) {
  std::mt19937_64 rng(1);
  T c = randomTyped<T>(rng);
  for (auto _ : state) {
    benchmark::DoNotOptimize(c);
    RawCommand raw = encode(c);
    benchmark::DoNotOptimize(raw);
  }
  state.SetItemsProcessed(state.iterations());
}

template <typename T> void BM_Decode(benchmark::State &state) {
  std::mt19937_64 rng(2);
  RawCommand raw = encode(randomTyped<T>(rng));
  for (auto _ : state) {
    benchmark::DoNotOptimize(raw);
    T c = decodeAs<T>(raw);
    benchmark::DoNotOptimize(c);
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK_TEMPLATE(BM_Encode, cmd::SAR);
BENCHMARK_TEMPLATE(BM_Encode, cmd::SConv);
BENCHMARK_TEMPLATE(BM_Encode, cmd::TiuLong);
BENCHMARK_TEMPLATE(BM_Encode, cmd::DmaTensor);
BENCHMARK_TEMPLATE(BM_Decode, cmd::SAR);
BENCHMARK_TEMPLATE(BM_Decode, cmd::SConv);
BENCHMARK_TEMPLATE(BM_Decode, cmd::TiuLong);
BENCHMARK_TEMPLATE(BM_Decode, cmd::DmaTensor);

/// A TIU stream of `n` commands cycling through the common short forms.
std::vector<uint8_t> mixedTiuBuffer(size_t n) {
  struct Kind {
    unsigned task, eu;
  };
  const Kind kinds[] = {{0, 0}, {1, 4}, {2, 1},  {2, 4},   {3, 2},
                        {4, 1}, {5, 0}, {9, 13}, {13, 22}, {6, 0}};
  std::vector<RawCommand> cmds;
  for (size_t i = 0; i < n; ++i) {
    const Kind &k = kinds[i % std::size(kinds)];
    RawCommand c(tiuLayoutFor(true, k.task, k.eu));
    c.set("cmd_short", 1);
    c.set("tsk_typ", k.task);
    c.set("tsk_eu_typ", k.eu);
    c.set("cmd_id", (i + 1) & 0xFFFFF);
    cmds.push_back(c);
  }
  cmds.push_back(makeTiuEnd((n + 1) & 0xFFFFF, 0));
  return packBuffer(cmds);
}

void BM_SplitTiuBuffer(benchmark::State &state) {
  size_t n = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> buf = mixedTiuBuffer(n);
  for (auto _ : state) {
    auto cmds = splitBuffer(Engine::Tiu, buf.data(), buf.size());
    benchmark::DoNotOptimize(cmds.data());
  }
  state.SetItemsProcessed(state.iterations() * (n + 1));
  state.SetBytesProcessed(state.iterations() * buf.size());
}
BENCHMARK(BM_SplitTiuBuffer)->Arg(100000);

void BM_SplitGdmaBuffer(benchmark::State &state) {
  size_t n = static_cast<size_t>(state.range(0));
  std::vector<RawCommand> cmds;
  const GdmaType types[] = {GdmaType::Tensor, GdmaType::General,
                            GdmaType::Matrix, GdmaType::Gather};
  for (size_t i = 0; i < n; ++i) {
    GdmaType t = types[i % std::size(types)];
    RawCommand c(gdmaLayoutFor(false, static_cast<unsigned>(t), 0));
    c.set("cmd_type", static_cast<unsigned>(t));
    c.set("cmd_id", (i + 1) & 0xFFFFF);
    cmds.push_back(c);
  }
  cmds.push_back(makeGdmaEnd((n + 1) & 0xFFFFF, 0));
  std::vector<uint8_t> buf = packBuffer(cmds);
  for (auto _ : state) {
    auto out = splitBuffer(Engine::Gdma, buf.data(), buf.size());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * (n + 1));
  state.SetBytesProcessed(state.iterations() * buf.size());
}
BENCHMARK(BM_SplitGdmaBuffer)->Arg(100000);

} // namespace
