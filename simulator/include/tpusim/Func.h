//===- Func.h - Functional kernels of the simulated BM1684X -------*- C++
//-*-===//
//
// Plain C++ (no SystemC) meaning of every TIU and GDMA command: executing its
// canonical form (isa/Decode.h) on a MachineState. The work a command does
// for the timing model is isa/Work.h's. The SystemC engines in lib/model call
// these; the kernels never know about time.
//
// Semantics follow isa/docs/bm1684x.md sections 3-5 and 8; every place where the public
// facts are silent is decided in simulator/docs/semantics.md. All rounding and
// conversion goes through isa/Numerics.h.
//
//===----------------------------------------------------------------------===//
#ifndef TPUSIM_FUNC_H
#define TPUSIM_FUNC_H

#include "tpu/isa/ChipParams.h"
#include "tpu/isa/Command.h"
#include "tpu/isa/Decode.h"
#include "tpu/isa/LocalMem.h"
#include "tpu/isa/Types.h"
#include "tpu/isa/Work.h"
#include "tpusim/Memory.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tpu::sim {

//===----------------------------------------------------------------------===//
// Canonical commands (isa/Decode.h)
//===----------------------------------------------------------------------===//

using isa::decodeGdma;
using isa::decodeTiu;
using isa::GdmaOp;
using isa::TiuOp;

/// Executes a TIU command. Throws MemoryError when an operand leaves local
/// memory, tpu::Error for an operand or type combination the command does not
/// accept (the message names the mnemonic and the reason).
void executeTiu(const TiuOp &op, MachineState &m);

/// Executes a GDMA command; same error contract as executeTiu.
void executeGdma(const GdmaOp &op, MachineState &m);

//===----------------------------------------------------------------------===//
// Work descriptions for the timing model (isa/Work.h)
//===----------------------------------------------------------------------===//

using isa::FixedList;
using isa::gdmaWork;
using isa::GdmaWork;
using isa::tiuWork;
using isa::TiuWork;

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

/// A 4-D tensor in local memory (isa/docs/bm1684x.md 3.1): start address `addr`
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
