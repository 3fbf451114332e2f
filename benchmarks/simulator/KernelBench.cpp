//===- KernelBench.cpp - Speed of the functional kernels ------------------===//
//
// Full-arithmetic convolution (64 -> 64 channels, 3x3, pad 1, 56x56, the
// ResNet-18 stage-1 conv) through executeTiu, against Eigen doing the same
// multiply-accumulates as im2col + GEMM; and commands per second of small
// AR commands. Items/s of the conv benchmarks are MACs/s.
//
// The conv benchmarks run on every SIMD path this CPU has (first argument:
// 0 portable, 1 AVX2, 2 AVX-512; tpusim/Simd.h) with 1 and 2 kernel
// threads (second argument); Eigen runs on one thread, so the /1 rows are
// the like-for-like comparison. CPU time is the process's (every thread),
// so items/s are MACs per CPU-second. BM_ConvShape runs the conv shapes of
// ResNet-50 (fp16 and int8, 1 and 2 threads) on the default path.
//
//===----------------------------------------------------------------------===//

#include "tpusim/Func.h"
#include "tpusim/Memory.h"
#include "tpusim/Simd.h"

#include "tpu/isa/Command.h"
#include "tpu/isa/Numerics.h"

#include <Eigen/Dense>
#include <benchmark/benchmark.h>

#include <random>

using namespace tpu;
using namespace tpu::sim;

namespace {

constexpr uint32_t kC = 64, kHW = 56, kK = 3, kPad = 1;
constexpr uint64_t kMacs = uint64_t(kC) * kC * kHW * kHW * kK * kK;
constexpr unsigned kLaneShift = 18;

/// A short-form conv, pad k / 2 on every side, no bias or zero point
/// (pad value 0): int8 operands give an int32 result, float ones their own.
TiuOp convCmd(isa::Prec p, uint32_t ic, uint32_t oc, uint32_t hw, uint32_t k,
              uint32_t stride, uint32_t inOff, uint32_t wOff, uint32_t outOff) {
  isa::cmd::SConv c;
  c.cmd_short = 1;
  c.tsk_typ = 0;
  c.opd0_prec = uint64_t(p);
  c.res0_prec = uint64_t(isa::isFloat(p) ? p : isa::Prec::Int32);
  c.opd0_sign = c.opd1_sign = c.opd2_sign = 1;
  uint32_t pad = k / 2;
  c.opd0_up_pad = c.opd0_dn_pad = c.opd0_lf_pad = c.opd0_rt_pad = pad;
  uint32_t ohw = (hw + 2 * pad - k) / stride + 1;
  c.res0_n = 1;
  c.res0_c = oc;
  c.res0_h = c.res0_w = ohw;
  c.opd0_c = ic;
  c.opd0_h = c.opd0_w = hw;
  c.opd1_h = c.opd1_w = k;
  c.res_op_x_str = c.res_op_y_str = stride;
  c.opd0_addr = inOff;
  c.opd1_addr = wOff;
  c.res0_addr = outOff;
  c.opd2_const = c.opd3_const = 1;
  return decodeTiu(isa::encode(c));
}

/// The ResNet-18 stage-1 conv: one output channel per lane; input at lane 0
/// offset 0, weights and output as each benchmark places them.
TiuOp convOp(isa::Prec p, uint32_t inOff, uint32_t wOff, uint32_t outOff) {
  return convCmd(p, kC, kC, kHW, kK, 1, inOff, wOff, outOff);
}

/// Sets the SIMD path and thread count of the benchmark's arguments.
void useArgs(const benchmark::State &state) {
  setSimdPath(SimdPath(state.range(0)));
  setKernelThreads(unsigned(state.range(1)));
}

/// Arguments: every available path x {1, 2} threads.
void simdArgs(benchmark::internal::Benchmark *b) {
  for (SimdPath p : availableSimdPaths())
    for (int threads : {1, 2})
      b->Args({int64_t(p), threads});
  b->ArgNames({"simd", "threads"});
}

void fillRandom(MachineState &m) {
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> d(-20, 20);
  for (unsigned lane = 0; lane < m.lmem.lanes(); ++lane) {
    uint8_t *p = m.lmem.at(lane, 0, m.lmem.laneBytes());
    for (uint64_t i = 0; i < m.lmem.laneBytes(); ++i)
      p[i] = uint8_t(d(rng));
  }
}

void BM_ConvFp32(benchmark::State &state) {
  MachineState m(isa::ChipParams::bm1684x());
  // Input 64 ch in 64 lanes: 56*56 fp32 = 12.25 KiB per lane; weights
  // 64*9 fp32 per lane; output 12.25 KiB per lane. Small random integers
  // as fp32 bit patterns would be denormals; write real floats.
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> d(-1, 1);
  for (unsigned lane = 0; lane < 64; ++lane) {
    float *in = reinterpret_cast<float *>(m.lmem.at(lane, 0, 0x4000));
    for (unsigned i = 0; i < 0x1000; ++i)
      in[i] = d(rng);
    float *w = reinterpret_cast<float *>(m.lmem.at(lane, 0x8000, 0x1000));
    for (unsigned i = 0; i < 0x400; ++i)
      w[i] = d(rng);
  }
  TiuOp op = convOp(isa::Prec::Fp32, 0, 0x8000, 0x10000);
  useArgs(state);
  for (auto _ : state)
    executeTiu(op, m);
  state.SetItemsProcessed(int64_t(state.iterations() * kMacs));
}
BENCHMARK(BM_ConvFp32)->Apply(simdArgs)->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);

void BM_ConvInt8(benchmark::State &state) {
  MachineState m(isa::ChipParams::bm1684x());
  fillRandom(m);
  TiuOp op = convOp(isa::Prec::Int8, 0, 0x8000, 0x10000);
  useArgs(state);
  for (auto _ : state)
    executeTiu(op, m);
  state.SetItemsProcessed(int64_t(state.iterations() * kMacs));
}
BENCHMARK(BM_ConvInt8)->Apply(simdArgs)->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);

void BM_ConvFp16(benchmark::State &state) {
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-1, 1);
  for (unsigned lane = 0; lane < 64; ++lane) {
    uint16_t *p = reinterpret_cast<uint16_t *>(m.lmem.at(lane, 0, 0x10000));
    for (unsigned i = 0; i < 0x8000; ++i)
      p[i] = isa::fp32ToFp16(d(rng));
  }
  TiuOp op = convOp(isa::Prec::Fp16, 0, 0x8000, 0x10000);
  useArgs(state);
  for (auto _ : state)
    executeTiu(op, m);
  state.SetItemsProcessed(int64_t(state.iterations() * kMacs));
}
BENCHMARK(BM_ConvFp16)->Apply(simdArgs)->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);

/// The same convolution as im2col + GEMM in Eigen (scalar type T).
template <typename T> void eigenConv(benchmark::State &state) {
  using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  std::mt19937 rng(4);
  std::uniform_int_distribution<int> d(-20, 20);
  const int pw = kHW + 2 * kPad;
  Mat in(kC, pw * pw), w(kC, kC * kK * kK), cols(kC * kK * kK, kHW * kHW),
      out(kC, kHW * kHW);
  for (Eigen::Index i = 0; i < in.size(); ++i)
    in.data()[i] = T(d(rng));
  for (Eigen::Index i = 0; i < w.size(); ++i)
    w.data()[i] = T(d(rng));
  for (auto _ : state) {
    for (uint32_t c = 0; c < kC; ++c)
      for (uint32_t ky = 0; ky < kK; ++ky)
        for (uint32_t kx = 0; kx < kK; ++kx) {
          T *dst = cols.row((c * kK + ky) * kK + kx).data();
          for (uint32_t y = 0; y < kHW; ++y)
            for (uint32_t x = 0; x < kHW; ++x)
              dst[y * kHW + x] = in(c, (y + ky) * pw + x + kx);
        }
    out.noalias() = w * cols;
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(int64_t(state.iterations() * kMacs));
}

void BM_EigenConvFp32(benchmark::State &state) { eigenConv<float>(state); }
BENCHMARK(BM_EigenConvFp32)->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);

void BM_EigenConvInt32(benchmark::State &state) { eigenConv<int32_t>(state); }
BENCHMARK(BM_EigenConvInt32)->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);

/// The conv shapes that take most of ResNet-50's time in full mode (each
/// one command, as the F16 / INT8 bmodels run them): arguments precision
/// (0 fp16, 1 int8), ic, oc, input h = w, kernel, stride, kernel threads.
/// Input at lane offset 0, weights at 64 KiB, output at 160 KiB, all
/// filled with small random values.
void BM_ConvShape(benchmark::State &state) {
  bool int8 = state.range(0) != 0;
  uint32_t ic = uint32_t(state.range(1)), oc = uint32_t(state.range(2));
  uint32_t hw = uint32_t(state.range(3)), k = uint32_t(state.range(4));
  uint32_t stride = uint32_t(state.range(5));
  MachineState m(isa::ChipParams::bm1684x());
  if (int8) {
    fillRandom(m);
  } else {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> d(-1, 1);
    for (unsigned lane = 0; lane < m.lmem.lanes(); ++lane) {
      uint16_t *p =
          reinterpret_cast<uint16_t *>(m.lmem.at(lane, 0, m.lmem.laneBytes()));
      for (uint64_t i = 0; i < m.lmem.laneBytes() / 2; ++i)
        p[i] = isa::fp32ToFp16(d(rng));
    }
  }
  isa::Prec p = int8 ? isa::Prec::Int8 : isa::Prec::Fp16;
  TiuOp op = convCmd(p, ic, oc, hw, k, stride, 0, 0x10000, 0x28000);
  uint32_t ohw = (hw + 2 * (k / 2) - k) / stride + 1;
  setKernelThreads(unsigned(state.range(6)));
  for (auto _ : state)
    executeTiu(op, m);
  state.SetItemsProcessed(
      int64_t(state.iterations() * uint64_t(ic) * oc * ohw * ohw * k * k));
}
void convShapes(benchmark::internal::Benchmark *b) {
  const int64_t shapes[][5] = {
      {64, 64, 56, 3, 1},    {64, 256, 56, 1, 1},   {256, 64, 56, 1, 1},
      {128, 128, 28, 3, 1},  {128, 512, 28, 1, 1},  {256, 256, 14, 3, 1},
      {256, 1024, 14, 1, 1}, {1024, 256, 14, 1, 1}, {512, 512, 7, 3, 1},
      {512, 2048, 7, 1, 1},  {2048, 512, 7, 1, 1},  {512, 512, 14, 3, 2}};
  for (int prec : {0, 1})
    for (const auto &s : shapes)
      for (int threads : {1, 2})
        b->Args({prec, s[0], s[1], s[2], s[3], s[4], threads});
  b->ArgNames({"int8", "ic", "oc", "hw", "k", "s", "threads"});
}
BENCHMARK(BM_ConvShape)
    ->Apply(convShapes)
    ->MeasureProcessCPUTime()
    ->Unit(benchmark::kMillisecond);

/// Small AR commands (1 x 64 x 8 x 8 fp32 add): decoded once, executed.
void BM_ArAddSmall(benchmark::State &state) {
  MachineState m(isa::ChipParams::bm1684x());
  isa::cmd::SAR c;
  c.cmd_short = 1;
  c.tsk_typ = 3;
  c.tsk_eu_typ = 2;
  c.tsk_opd_num = 2;
  c.res0_prec = c.opd0_prec = c.opd1_prec = uint64_t(isa::Prec::Fp32);
  c.opd0_sign = c.opd1_sign = 1;
  c.res0_n = 1;
  c.res0_c = 64;
  c.res0_h = c.res0_w = 8;
  c.opd1_addr = 0x1000;
  c.res0_addr = 0x2000;
  TiuOp op = decodeTiu(isa::encode(c));
  for (auto _ : state)
    executeTiu(op, m);
  state.SetItemsProcessed(int64_t(state.iterations()));
}
BENCHMARK(BM_ArAddSmall);

/// The same with decoding from raw bits every time (what a stream runner
/// does per command).
void BM_ArAddSmallDecode(benchmark::State &state) {
  MachineState m(isa::ChipParams::bm1684x());
  isa::cmd::SAR c;
  c.cmd_short = 1;
  c.tsk_typ = 3;
  c.tsk_eu_typ = 2;
  c.tsk_opd_num = 2;
  c.res0_prec = c.opd0_prec = c.opd1_prec = uint64_t(isa::Prec::Int8);
  c.res0_n = 1;
  c.res0_c = 64;
  c.res0_h = c.res0_w = 8;
  c.opd1_addr = 0x1000;
  c.res0_addr = 0x2000;
  isa::RawCommand raw = isa::encode(c);
  for (auto _ : state)
    executeTiu(decodeTiu(raw), m);
  state.SetItemsProcessed(int64_t(state.iterations()));
}
BENCHMARK(BM_ArAddSmallDecode);

} // namespace
