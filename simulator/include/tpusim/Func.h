//===- Func.h - Functional kernels of the simulated BM1684X -------*- C++
//-*-===//
//
// Plain C++ (no SystemC) meaning of every TIU and GDMA command: decoding into
// a canonical form, executing it on a MachineState, and describing the work it
// does for the timing model. The SystemC engines in lib/model call these; the
// kernels never know about time.
//
// Semantics follow bm1684x.md sections 3-5 and 8; every place where the public
// facts are silent is decided in simulator/docs/semantics.md. All rounding and
// conversion goes through isa/Numerics.h.
//
//===----------------------------------------------------------------------===//
#ifndef TPUSIM_FUNC_H
#define TPUSIM_FUNC_H

#include "tpu/isa/ChipParams.h"
#include "tpu/isa/Command.h"
#include "tpu/isa/LocalMem.h"
#include "tpu/isa/Types.h"
#include "tpusim/Memory.h"

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tpu::sim {

//===----------------------------------------------------------------------===//
// Canonical commands
//===----------------------------------------------------------------------===//

/// A TIU command in canonical form: any short or long layout expanded to the
/// long layout's field names. Fields a short layout lacks are filled with the
/// value that layout implies (lane mask all ones, the documented default
/// operand layouts and precisions; see semantics.md "Short forms").
struct TiuOp {
  isa::LayoutId layout = isa::LayoutId::TiuLong;
  bool shortForm = false;
  isa::TiuTask task = isa::TiuTask::Sys;
  unsigned eu = 0;
  isa::cmd::TiuLong f;
};

/// Decodes any TIU command into canonical form. Throws tpu::Error for layouts
/// the simulator cannot execute (LAR, tsk 12) and for heads no layout covers.
/// SYSID decodes to task Sys (executing it does nothing).
TiuOp decodeTiu(const isa::RawCommand &c);

/// A GDMA command in canonical form. `f` carries the DMA_tensor field names
/// (for DMA_general, `f.src_cstride` is the move length, as in the bit table);
/// the extra members keep the fields only gather/scatter, masked_select and
/// nonzero have. Short layouts are expanded (sDMA_general, sDMA_matrix,
/// sDMA_masked_select, sDMA_nonzero); sDMA_sys decodes to type Sys.
struct GdmaOp {
  isa::LayoutId layout = isa::LayoutId::DmaTensor;
  isa::GdmaType type = isa::GdmaType::Tensor;
  unsigned special = 0;
  isa::cmd::DmaTensor f;
  // DMA_gather / DMA_scatter (bm1684x.md 5.7).
  uint64_t index_cstride = 0;
  uint64_t index_hstride = 0;
  uint64_t index_csize = 0;
  uint64_t index_hsize = 0;
  uint64_t index_start_addr = 0; ///< 40-bit unified address.
  // DMA_masked_select (mask) / DMA_nonzero (index format, base) (5.8).
  uint64_t mask_start_addr = 0; ///< 40-bit unified address.
  isa::GdmaFormat mask_data_format = isa::GdmaFormat::Int8;
  isa::GdmaFormat index_data_format = isa::GdmaFormat::Int32;
  uint64_t base_i = 0;

  uint64_t srcAddr() const;  ///< 40-bit unified source address.
  uint64_t dstAddr() const;  ///< 40-bit unified destination address.
  uint64_t laneMask() const; ///< localmem_mask_h32:l32.
  isa::GdmaFormat format() const;
};

/// Decodes any GDMA command into canonical form; throws tpu::Error for a head
/// no layout covers. The chip's address map decides the direction of a short
/// sDMA_matrix (whose fields are named by direction); the one-argument form
/// uses the BM1684X defaults.
GdmaOp decodeGdma(const isa::RawCommand &c, const isa::ChipParams &chip);
GdmaOp decodeGdma(const isa::RawCommand &c);

/// Executes a TIU command. Throws MemoryError when an operand leaves local
/// memory, tpu::Error for an operand or type combination the command does not
/// accept (the message names the mnemonic and the reason).
void executeTiu(const TiuOp &op, MachineState &m);

/// Executes a GDMA command; same error contract as executeTiu.
void executeGdma(const GdmaOp &op, MachineState &m);

//===----------------------------------------------------------------------===//
// Work descriptions for the timing model (no arithmetic; O(1) or O(#dims))
//===----------------------------------------------------------------------===//

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
  isa::Prec computePrec = isa::Prec::Int8; ///< Precision the EU/cube runs at.
  unsigned lanesUsed = 0; ///< Lanes holding at least one output channel.
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
TiuWork tiuWork(const TiuOp &op, const isa::ChipParams &chip);

struct GdmaWork {
  uint64_t bytes = 0; ///< Payload bytes delivered to the destination.
  uint64_t ddrReadBytes = 0, ddrWriteBytes = 0;
  uint64_t localReadBytes = 0, localWriteBytes = 0;
  /// Number of contiguous DDR segments read or written (for the stride
  /// penalty); 0 when neither side is DDR.
  uint64_t contiguousRuns = 0;
  isa::MemRegion src = isa::MemRegion::None;
  isa::MemRegion dst = isa::MemRegion::None;
};

/// The work a GDMA command does. Cheap: never touches memory (masked_select
/// and nonzero report their worst case, every element selected).
GdmaWork gdmaWork(const GdmaOp &op, const isa::ChipParams &chip);

//===----------------------------------------------------------------------===//
// Element access (shared with the compiler tests that build tensor views)
//===----------------------------------------------------------------------===//

/// Precision plus signedness of an element (sign ignored for floats).
struct ElemType {
  isa::Prec prec = isa::Prec::Int8;
  bool isSigned = true;
};

/// Raw bit pattern of element `index` of an array at `base` (Int4 elements
/// are packed two per byte, element 2k in the low nibble of byte k).
uint64_t loadBits(const uint8_t *base, uint64_t index, isa::Prec prec);
void storeBits(uint8_t *base, uint64_t index, isa::Prec prec, uint64_t bits);

/// Integer value of an integer element (sign-extended per `t.isSigned`).
/// For a float element: its value rounded toward zero (use loadFloat).
int64_t loadInt(const uint8_t *base, uint64_t index, ElemType t);
/// Value of an element as float: float types are widened exactly, integer
/// types converted (int32 values beyond 2^24 round to nearest even).
float loadFloat(const uint8_t *base, uint64_t index, ElemType t);
/// Value as double (exact for every element type).
double loadValue(const uint8_t *base, uint64_t index, ElemType t);

/// Stores an integer: saturated for integer types, converted with
/// round-to-nearest-even for float types.
void storeInt(uint8_t *base, uint64_t index, ElemType t, int64_t v);
/// Stores a float: fp32ToFp16 / fp32ToBf16 with `mode` for 16-bit floats,
/// isa::floatToInt (round per `mode`, saturate) for integer types.
void storeFloat(uint8_t *base, uint64_t index, ElemType t, float v,
                isa::RoundMode mode = isa::RoundMode::HalfToEven);

using isa::LocalLayout;
using isa::Shape4;
using isa::Stride4;

inline uint64_t elementCount(const Shape4 &s) {
  return uint64_t(s.n) * s.c * s.h * s.w;
}

/// Where an element lives in local memory.
struct LocalPos {
  unsigned lane = 0;
  uint64_t elemIndex = 0; ///< Element index from the lane start (offset 0).
};

/// Lanes, lane size and address split of a chip, computed once.
struct LaneGeometry {
  explicit LaneGeometry(const isa::ChipParams &chip);
  unsigned lanes;
  unsigned laneShift; ///< log2(bytes per lane): TIU address = lane << shift.
  uint64_t laneBytes;
  unsigned euBytes;
  /// Elements per EU step (EU_NUM) for this precision.
  unsigned euNum(isa::Prec p) const;
};

/// A 4-D tensor in local memory (bm1684x.md 3.1): start address `addr`
/// (lane << laneShift | byte offset), element type, shape and strides.
struct LocalTensor {
  uint32_t addr = 0;
  ElemType type;
  Shape4 shape{1, 1, 1, 1};
  Stride4 stride{0, 0, 0, 0};

  unsigned startLane(const LaneGeometry &geo) const {
    return unsigned(addr >> geo.laneShift) % geo.lanes;
  }
  uint64_t startOffset(const LaneGeometry &geo) const {
    return addr & (geo.laneBytes - 1);
  }
  LocalPos pos(const LaneGeometry &geo, uint32_t n, uint32_t c, uint32_t h,
               uint32_t w) const;

  /// Element access with bounds checks (MemoryError outside the lane).
  double get(const MachineState &m, uint32_t n, uint32_t c, uint32_t h,
             uint32_t w) const;
  int64_t getInt(const MachineState &m, uint32_t n, uint32_t c, uint32_t h,
                 uint32_t w) const;
  float getFloat(const MachineState &m, uint32_t n, uint32_t c, uint32_t h,
                 uint32_t w) const;
  void setInt(MachineState &m, uint32_t n, uint32_t c, uint32_t h, uint32_t w,
              int64_t v) const;
  void setFloat(MachineState &m, uint32_t n, uint32_t c, uint32_t h, uint32_t w,
                float v,
                isa::RoundMode mode = isa::RoundMode::HalfToEven) const;
};

/// Builds an EU-aligned (or compact) local tensor view.
LocalTensor makeLocalTensor(const isa::ChipParams &chip, uint32_t addr,
                            ElemType type, Shape4 shape,
                            LocalLayout layout = LocalLayout::EuAligned);

} // namespace tpu::sim

#endif // TPUSIM_FUNC_H
