//===- Decode.h - Canonical forms of TIU and GDMA commands ------*- C++ -*-===//
//
// Every TIU command widened to the long TIU layout's field names and every
// GDMA command to DMA_tensor's, so that the work and cost model (Work.h,
// Cost.h) and the simulator's kernels see one form per engine. Fields a
// short layout lacks get the value its documented defaults imply
// (simulator/docs/semantics.md "Short forms").
//
//===----------------------------------------------------------------------===//
#ifndef TPU_ISA_DECODE_H
#define TPU_ISA_DECODE_H

#include "tpu/isa/ChipParams.h"
#include "tpu/isa/Command.h"
#include "tpu/isa/Types.h"

#include <cstdint>

namespace tpu::isa {

/// A TIU command in canonical form: any short or long layout expanded to the
/// long layout's field names. Fields a short layout lacks are filled with the
/// value that layout implies (lane mask all ones, the documented default
/// operand layouts and precisions; see semantics.md "Short forms").
struct TiuOp {
  LayoutId layout = LayoutId::TiuLong;
  bool shortForm = false;
  TiuTask task = TiuTask::Sys;
  unsigned eu = 0;
  cmd::TiuLong f;
};

/// Decodes any TIU command into canonical form. Throws tpu::Error for layouts
/// that have no executable meaning (LAR, tsk 12) and for heads no layout
/// covers. SYSID decodes to task Sys.
TiuOp decodeTiu(const RawCommand &c);

/// A GDMA command in canonical form. `f` carries the DMA_tensor field names
/// (for DMA_general, `f.src_cstride` is the move length, as in the bit table);
/// the extra members keep the fields only gather/scatter, masked_select and
/// nonzero have. Short layouts are expanded (sDMA_general, sDMA_matrix,
/// sDMA_masked_select, sDMA_nonzero); sDMA_sys decodes to type Sys.
struct GdmaOp {
  LayoutId layout = LayoutId::DmaTensor;
  GdmaType type = GdmaType::Tensor;
  unsigned special = 0;
  cmd::DmaTensor f;
  // DMA_gather / DMA_scatter (isa/docs/bm1684x.md 5.7).
  uint64_t index_cstride = 0;
  uint64_t index_hstride = 0;
  uint64_t index_csize = 0;
  uint64_t index_hsize = 0;
  uint64_t index_start_addr = 0; ///< 40-bit unified address.
  // DMA_masked_select (mask) / DMA_nonzero (index format, base) (5.8).
  uint64_t mask_start_addr = 0; ///< 40-bit unified address.
  GdmaFormat mask_data_format = GdmaFormat::Int8;
  GdmaFormat index_data_format = GdmaFormat::Int32;
  uint64_t base_i = 0;

  uint64_t srcAddr() const;  ///< 40-bit unified source address.
  uint64_t dstAddr() const;  ///< 40-bit unified destination address.
  uint64_t laneMask() const; ///< localmem_mask_h32:l32.
  GdmaFormat format() const;
};

/// Decodes any GDMA command into canonical form; throws tpu::Error for a head
/// no layout covers. The chip's address map decides the direction of a short
/// sDMA_matrix (whose fields are named by direction); the one-argument form
/// uses the BM1684X defaults.
GdmaOp decodeGdma(const RawCommand &c, const ChipParams &chip);
GdmaOp decodeGdma(const RawCommand &c);

} // namespace tpu::isa

#endif // TPU_ISA_DECODE_H
