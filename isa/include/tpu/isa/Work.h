//===- Work.h - The work a command does, for the cost model -----*- C++ -*-===//
//
// What a canonical command (Decode.h) asks of the machine, without executing
// it: multiply-accumulates, elements per lane, the local-memory ranges its
// operands and results cover, the bytes a GDMA command moves and where. The
// cost functions of Cost.h turn this into cycles; the simulator also uses it
// for range checks and traffic counters. No arithmetic on data, O(1) or
// O(#dims) per command.
//
//===----------------------------------------------------------------------===//
#ifndef TPU_ISA_WORK_H
#define TPU_ISA_WORK_H

#include "tpu/isa/ChipParams.h"
#include "tpu/isa/Decode.h"
#include "tpu/isa/LocalMem.h"
#include "tpu/isa/Types.h"

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace tpu::isa {

/// Up to `N` items stored in place. TiuWork is built for every simulated
/// command, and a std::vector there would allocate each time.
template <typename T, size_t N> class FixedList {
public:
  /// Throws std::length_error past N items (a kernel listing more operands
  /// than the capacity below allows).
  void push_back(const T &item) {
    if (size_ == N)
      throwFull();
    items_[size_++] = item;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T &operator[](size_t i) const { return items_[i]; }
  const T *begin() const { return items_.data(); }
  const T *end() const { return items_.data() + size_; }

private:
  // Out of line, so that push_back inlines.
  [[noreturn, gnu::noinline, gnu::cold]] static void throwFull() {
    throw std::length_error("FixedList: more than " + std::to_string(N) +
                            " items");
  }

  std::array<T, N> items_{};
  size_t size_ = 0;
};

struct TiuWork {
  /// A TIU command reads at most three tensors (opd0, opd1, opd2) and writes
  /// at most two (res0, res1).
  static constexpr size_t kMaxReads = 3, kMaxWrites = 2;

  /// One local-memory range of an operand, relative to the lane start: the
  /// bytes [offset, offset + bytesPerLane) of every lane it touches.
  struct Operand {
    uint64_t offset = 0;
    uint64_t bytesPerLane = 0;
  };

  uint64_t macs = 0;           ///< Multiply-accumulates (conv, mm, depthwise).
  uint64_t outputElements = 0; ///< Elements written (all results).
  uint64_t inputElements = 0;  ///< Elements read from operand 0 (and 1 for AR).
  Prec computePrec = Prec::Int8; ///< Precision the EU/cube runs at.
  unsigned lanesUsed = 0;        ///< Lanes holding at least one output channel.
  /// Input channels the cube reduces per step for this op (<= icParallel of
  /// computePrec); 0 for ops that do not use the cube.
  unsigned cubeIcPerStep = 0;
  uint64_t kernelElements = 0; ///< kh * kw (conv, pooling), else 1.
  /// Output elements of the busiest lane: n * channel slots * h * w.
  uint64_t elementsPerLane = 0;
  /// Extra passes per element (SFU table length, rsqrt/div iterations), >= 1.
  unsigned iterations = 1;
  FixedList<Operand, kMaxReads> reads;
  FixedList<Operand, kMaxWrites> writes;
};

/// The work a TIU command does. Cheap: never touches memory.
TiuWork tiuWork(const TiuOp &op, const ChipParams &chip);

struct GdmaWork {
  uint64_t bytes = 0; ///< Payload bytes delivered to the destination.
  uint64_t ddrReadBytes = 0, ddrWriteBytes = 0;
  uint64_t localReadBytes = 0, localWriteBytes = 0;
  /// Number of contiguous DDR segments read or written (for the stride
  /// penalty); 0 when neither side is DDR.
  uint64_t contiguousRuns = 0;
  MemRegion src = MemRegion::None;
  MemRegion dst = MemRegion::None;
};

/// The work a GDMA command does. Cheap: never touches memory (masked_select
/// and nonzero report their worst case, every element selected).
GdmaWork gdmaWork(const GdmaOp &op, const ChipParams &chip);

/// Source and destination shapes of a canonical GDMA command's fields.
inline Shape4 gdmaSrcShape(const cmd::DmaTensor &f) {
  return {uint32_t(f.src_nsize), uint32_t(f.src_csize), uint32_t(f.src_hsize),
          uint32_t(f.src_wsize)};
}
inline Shape4 gdmaDstShape(const cmd::DmaTensor &f) {
  return {uint32_t(f.dst_nsize), uint32_t(f.dst_csize), uint32_t(f.dst_hsize),
          uint32_t(f.dst_wsize)};
}

/// Bytes of one gather/scatter index element (uint32, isa/docs/bm1684x.md 5.7).
constexpr unsigned kGdmaIndexBytes = 4;

} // namespace tpu::isa

#endif // TPU_ISA_WORK_H
