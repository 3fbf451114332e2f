//===- Types.h - BM1684X element types and enumerations ----------*- C++ -*-===//
//
// The enumerations the hardware fields and the bmodel use, with their codes
// as published (isa/docs/bm1684x.md 4.3, 5.3, 7.2, 8.1).
//
//===----------------------------------------------------------------------===//
#ifndef TPU_ISA_TYPES_H
#define TPU_ISA_TYPES_H

#include <cstdint>
#include <optional>
#include <string_view>

namespace tpu::isa {

/// 3-bit precision code of TIU `*_prec` fields. Signedness of integer types
/// comes from a separate `*_sign` bit.
enum class Prec : uint8_t {
  Int8 = 0,
  Fp16 = 1,
  Fp32 = 2,
  Int16 = 3,
  Int32 = 4,
  Bf16 = 5,
  Int4 = 6,
};

/// 3-bit element format of GDMA `src_data_format` (width only, no sign).
enum class GdmaFormat : uint8_t {
  Int8 = 0,
  Fp16 = 1,
  Fp32 = 2,
  Int16 = 3,
  Int32 = 4,
  Bf16 = 5,
  Int4 = 6,
};

/// Tensor element type of the bmodel (`DATA_TYPE_T`).
enum class DataType : uint32_t {
  F32 = 0,
  F16 = 1,
  Int8 = 2,
  UInt8 = 3,
  Int16 = 4,
  UInt16 = 5,
  Int32 = 6,
  UInt32 = 7,
  BF16 = 8,
  Int4 = 9,
  UInt4 = 10,
  FP20 = 11,
  F8E5M2 = 12,
  F8E4M3 = 13,
};

/// Rounding modes of the hardware-side `ROUND_MODE` enumeration; this is the
/// enumeration the TIU round-mode fields (`opd2_n_str` of sAR, sRQ&sDQ, sPorD,
/// sVC) carry (isa/docs/bm1684x.md 8.1: the kernel-side enum is the one written into
/// command words by Sophgo's kernel code for a later TPU).
enum class RoundMode : uint8_t {
  HalfToEven = 0,
  HalfAwayFromZero = 1,
  TowardsZero = 2,
  Down = 3, ///< floor
  Up = 4,   ///< ceil
  HalfUp = 5,
  HalfDown = 6,
};

/// Size in bits of one element (Int4 = 4).
unsigned precBits(Prec p);
/// Size in bytes, rounded up (Int4 = 1). Use precBits for packing.
unsigned precBytes(Prec p);
bool isFloat(Prec p);
const char *precName(Prec p); ///< "INT8", "FP16", ...
std::optional<Prec> precFromCode(unsigned code);

unsigned gdmaFormatBits(GdmaFormat f);
const char *gdmaFormatName(GdmaFormat f);
std::optional<GdmaFormat> gdmaFormatFromCode(unsigned code);
/// The GDMA format that moves elements of this precision.
GdmaFormat gdmaFormatFor(Prec p);

unsigned dataTypeBits(DataType t);
const char *dataTypeName(DataType t); ///< "F32", "INT8", "BF16", ...
std::optional<DataType> dataTypeFromCode(uint32_t code);

const char *roundModeName(RoundMode m);
std::optional<RoundMode> roundModeFromCode(unsigned code);

} // namespace tpu::isa

#endif // TPU_ISA_TYPES_H
