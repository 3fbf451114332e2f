//===- Types.cpp - BM1684X element types and enumerations ----------------===//
#include "tpu/isa/Types.h"

#include <iterator>

namespace tpu::isa {

namespace {

constexpr unsigned kBitsPerByte = 8;

/// Name and element width of each code, indexed by the code.
struct CodeInfo {
  const char *name;
  unsigned bits;
};

// Prec and GdmaFormat share their codes (isa/docs/bm1684x.md 4.3, 5.3).
constexpr CodeInfo kPrec[] = {{"INT8", 8},   {"FP16", 16},  {"FP32", 32},
                              {"INT16", 16}, {"INT32", 32}, {"BF16", 16},
                              {"INT4", 4}};
constexpr CodeInfo kGdmaFormat[] = {
    {"INT8", 8},   {"FLOAT16", 16},  {"FLOAT32", 32}, {"INT16", 16},
    {"INT32", 32}, {"BFLOAT16", 16}, {"INT4", 4}};
// bmodel DATA_TYPE_T (isa/docs/bm1684x.md 7.2).
constexpr CodeInfo kDataType[] = {
    {"F32", 32},    {"F16", 16},   {"INT8", 8},    {"UINT8", 8}, {"INT16", 16},
    {"UINT16", 16}, {"INT32", 32}, {"UINT32", 32}, {"BF16", 16}, {"INT4", 4},
    {"UINT4", 4},   {"FP20", 20},  {"F8E5M2", 8},  {"F8E4M3", 8}};
// Hardware-side ROUND_MODE (isa/docs/bm1684x.md 8.1).
constexpr const char *kRoundMode[] = {"HALF_TO_EVEN", "HALF_AWAY_FROM_ZERO",
                                      "TOWARDS_ZERO", "DOWN",
                                      "UP",           "HALF_UP",
                                      "HALF_DOWN"};

template <typename E, size_t N>
std::optional<E> fromCode(unsigned code, const CodeInfo (&)[N]) {
  if (code >= N)
    return std::nullopt;
  return static_cast<E>(code);
}

} // namespace

unsigned precBits(Prec p) { return kPrec[static_cast<unsigned>(p)].bits; }

unsigned precBytes(Prec p) {
  return (precBits(p) + kBitsPerByte - 1) / kBitsPerByte;
}

bool isFloat(Prec p) {
  return p == Prec::Fp16 || p == Prec::Fp32 || p == Prec::Bf16;
}

const char *precName(Prec p) { return kPrec[static_cast<unsigned>(p)].name; }

std::optional<Prec> precFromCode(unsigned code) {
  return fromCode<Prec>(code, kPrec);
}

unsigned gdmaFormatBits(GdmaFormat f) {
  return kGdmaFormat[static_cast<unsigned>(f)].bits;
}

const char *gdmaFormatName(GdmaFormat f) {
  return kGdmaFormat[static_cast<unsigned>(f)].name;
}

std::optional<GdmaFormat> gdmaFormatFromCode(unsigned code) {
  return fromCode<GdmaFormat>(code, kGdmaFormat);
}

GdmaFormat gdmaFormatFor(Prec p) {
  // The two enumerations use the same codes for the same widths.
  return static_cast<GdmaFormat>(static_cast<unsigned>(p));
}

unsigned dataTypeBits(DataType t) {
  return kDataType[static_cast<unsigned>(t)].bits;
}

const char *dataTypeName(DataType t) {
  return kDataType[static_cast<unsigned>(t)].name;
}

std::optional<DataType> dataTypeFromCode(uint32_t code) {
  return fromCode<DataType>(code, kDataType);
}

const char *roundModeName(RoundMode m) {
  return kRoundMode[static_cast<unsigned>(m)];
}

std::optional<RoundMode> roundModeFromCode(unsigned code) {
  if (code >= std::size(kRoundMode))
    return std::nullopt;
  return static_cast<RoundMode>(code);
}

} // namespace tpu::isa
