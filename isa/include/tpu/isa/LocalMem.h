//===- LocalMem.h - Local-memory addressing and tensor layouts ---*- C++
//-*-===//
//
// How tensors sit in the BM1684X local memory (isa/docs/bm1684x.md 2, 3): local
// addresses are (lane << laneShift) | offset; channel c of a tensor starting
// in lane L lives in lane (L + c) mod npu_num, channel slot (L + c) div
// npu_num; strides are in elements. The compiler (allocation, codegen) and
// the simulator (operand access) both use these functions.
//
//===----------------------------------------------------------------------===//
#ifndef TPU_ISA_LOCALMEM_H
#define TPU_ISA_LOCALMEM_H

#include "tpu/isa/ChipParams.h"
#include "tpu/isa/Types.h"

#include <cstdint>

namespace tpu::isa {

/// A TIU local address taken apart.
struct LocalAddr {
  unsigned lane;
  uint64_t offset; ///< Byte offset inside the lane.
  unsigned bank;   ///< Bank of `offset` inside the lane.
};

/// Splits a TIU local address (no lmem_base; below lmemTotal()). Throws
/// Error when the address is outside local memory.
LocalAddr splitLocalAddr(const ChipParams &p, uint64_t localAddr);
/// The TIU local address of byte `offset` of `lane`; throws Error when either
/// is out of range.
uint64_t joinLocalAddr(const ChipParams &p, unsigned lane, uint64_t offset);

/// Memory regions of the unified (GDMA, 40-bit) address map.
enum class MemRegion { Local, Static, L2, Global, None };

const char *memRegionName(MemRegion r); ///< "local", "static", "l2", ...
/// The region a unified address falls in (None if in no region).
MemRegion classifyAddr(const ChipParams &p, uint64_t unified);
/// Unified address of a TIU local address, and back (the latter throws
/// Error if `unified` is not in the local window).
uint64_t localToUnified(const ChipParams &p, uint64_t localAddr);
uint64_t unifiedToLocal(const ChipParams &p, uint64_t unified);

struct Shape4 {
  uint32_t n, c, h, w;
};

/// Strides in elements.
struct Stride4 {
  int64_t n, c, h, w;
};

/// Local tensor layouts (isa/docs/bm1684x.md 3.2). The first four are the codes of
/// the TIU `*_str` fields.
enum class LocalLayout {
  EuAligned = 0,  ///< Each channel starts on an EU boundary (64 bytes).
  Compact = 1,    ///< Channels packed, c_stride = H*W.
  PerChannel = 2, ///< One value per channel (strides 0, 1, 0, 0).
  FreeStride = 3, ///< Strides come from the command's *_str fields.
  LineAligned,    ///< Each row starts on an EU boundary.
};

/// Channel slots a tensor of `c` channels starting in `startLane` occupies
/// in each lane: ceil((startLane + c) / npu_num).
uint64_t channelSlots(const ChipParams &p, unsigned startLane, uint64_t c);
/// The lane channel `c` of a tensor starting in `startLane` lives in.
unsigned channelLane(const ChipParams &p, unsigned startLane, uint64_t c);
/// The channel slot of channel `c` inside its lane.
unsigned channelSlot(const ChipParams &p, unsigned startLane, uint64_t c);

/// Strides of a tensor in one of the computable layouts (all but
/// FreeStride, for which this throws Error).
Stride4 localStrides(const ChipParams &p, Shape4 shape, unsigned startLane,
                     Prec prec, LocalLayout layout);

/// Bytes one lane needs for the tensor: n * slots * c_stride elements (INT4:
/// rounded up to whole bytes). For startLane 0 and EuAligned/Compact this is
/// the compiler's formula `n * ceil(c/64) * (eu_align ? align_up(h*w, EU_NUM)
/// : h*w) * bytes`; PerChannel needs `slots` elements.
uint64_t localBytesPerLane(const ChipParams &p, Shape4 shape, Prec prec,
                           LocalLayout layout = LocalLayout::EuAligned,
                           unsigned startLane = 0);

/// Where one element lives.
struct LocalElementPos {
  unsigned lane;
  uint64_t offset;    ///< Byte offset inside the lane.
  unsigned bitOffset; ///< Bit inside that byte (non-zero only for INT4).
};

/// Position of element (n, c, h, w) of a tensor at TIU local address
/// `start` with element strides `stride` (isa/docs/bm1684x.md 3.1): lane
/// (L + c) mod npu_num, offset O + (n*ns + slot*cs + h*hs + w*ws) * size.
/// INT4 elements are packed two per byte, the even element in the low
/// nibble [inferred: the nibble order is not published]. Throws Error when
/// the element falls outside its lane.
LocalElementPos localElementPos(const ChipParams &p, uint64_t start,
                                const Stride4 &stride, Prec prec, uint32_t n,
                                uint32_t c, uint32_t h, uint32_t w);

} // namespace tpu::isa

#endif // TPU_ISA_LOCALMEM_H
