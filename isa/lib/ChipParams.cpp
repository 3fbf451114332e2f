//===- ChipParams.cpp - BM1684X chip parameters ---------------------------===//
#include "tpu/isa/ChipParams.h"

#include "tpu/isa/Format.h"

#include "tpu/isa/Command.h"
#include "tpu/isa/Error.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace tpu::isa {

namespace {

/// A row of ChipParams.def with typed access to its member.
struct ParamRow {
  ChipParamInfo info;
  uint64_t maxValue;
  uint64_t (*get)(const ChipParams &);
  void (*put)(ChipParams &, uint64_t);
};

const ParamRow kRows[] = {
#define TPU_CHIP_PARAM(Member, Key, Type, Default, Unit, Description)          \
  {{Key, Unit, Description},                                                   \
   std::numeric_limits<Type>::max(),                                           \
   [](const ChipParams &p) -> uint64_t { return p.Member; },                   \
   [](ChipParams &p, uint64_t v) { p.Member = static_cast<Type>(v); }},
#include "tpu/isa/ChipParams.def"
};

constexpr const char *kNameKey = "name";
constexpr const char *kAddressUnit = "address";
/// GDMA addresses are 40 bits (*_start_addr_l32 + *_start_addr_h8).
constexpr unsigned kGdmaAddrBits = 40;
/// The widest element (fp32/int32) must fit one EU step.
constexpr unsigned kWidestElemBytes = 4;

bool isPow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

/// Parses decimal or 0x hex with an optional K/M/G (binary) suffix.
bool parseUnsigned(std::string_view s, uint64_t &out) {
  unsigned base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  uint64_t v = 0;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    char ch = s[i];
    unsigned digit;
    if (ch >= '0' && ch <= '9')
      digit = ch - '0';
    else if (base == 16 && ch >= 'a' && ch <= 'f')
      digit = ch - 'a' + 10;
    else if (base == 16 && ch >= 'A' && ch <= 'F')
      digit = ch - 'A' + 10;
    else
      break;
    if (v > (std::numeric_limits<uint64_t>::max() - digit) / base)
      return false;
    v = v * base + digit;
  }
  if (i == 0)
    return false;
  if (i < s.size()) {
    if (i + 1 != s.size())
      return false;
    unsigned shift;
    switch (s[i]) {
    case 'K':
    case 'k':
      shift = 10;
      break;
    case 'M':
    case 'm':
      shift = 20;
      break;
    case 'G':
    case 'g':
      shift = 30;
      break;
    default:
      return false;
    }
    if (v > (std::numeric_limits<uint64_t>::max() >> shift))
      return false;
    v <<= shift;
  }
  out = v;
  return true;
}

[[noreturn]] void invalid(const std::string &what) {
  throw Error("chip parameters: " + what);
}

/// Width of a field of the generic long TIU layout.
unsigned tiuFieldWidth(const char *field) {
  const LayoutInfo &li = layoutInfo(LayoutId::TiuLong);
  return li.fields[li.fieldIndex(field)].width;
}

} // namespace

unsigned ChipParams::euNum(Prec p) const { return euBytes * 8 / precBits(p); }

unsigned ChipParams::icParallel(Prec p) const {
  switch (p) {
  case Prec::Int8:
    return icParallelInt8;
  case Prec::Int4:
    return icParallelInt4;
  case Prec::Fp16:
    return icParallelFp16;
  case Prec::Bf16:
    return icParallelBf16;
  case Prec::Int16:
    return icParallelInt16;
  case Prec::Fp32:
    return icParallelFp32;
  case Prec::Int32:
    return icParallelInt32;
  }
  return icParallelInt8;
}

unsigned ChipParams::laneShift() const {
  // The smallest shift with 2^shift >= lmemBytes, at most 63 (without a
  // loop: the simulator asks for every TIU command).
  constexpr unsigned kMaxShift = 63;
  if (lmemBytes <= 1)
    return 0;
  unsigned shift = 64 - unsigned(__builtin_clzll(lmemBytes - 1));
  return std::min(shift, kMaxShift);
}

void ChipParams::set(std::string_view key, std::string_view value) {
  if (key == kNameKey) {
    if (value.empty())
      invalid("'name' must not be empty");
    name = std::string(value);
    return;
  }
  for (const ParamRow &row : kRows) {
    if (key != row.info.key)
      continue;
    uint64_t v = 0;
    if (!parseUnsigned(value, v))
      invalid("'" + std::string(key) + "': invalid value '" +
              std::string(value) +
              "' (expected an unsigned integer, decimal or 0x hex, with an "
              "optional K, M or G suffix)");
    if (v > row.maxValue)
      invalid("'" + std::string(key) + "': value " + std::string(value) +
              " is larger than " + std::to_string(row.maxValue));
    row.put(*this, v);
    return;
  }
  std::string known = kNameKey;
  for (const ParamRow &row : kRows)
    known += std::string(", ") + row.info.key;
  invalid("unknown parameter '" + std::string(key) + "' (known: " + known +
          ")");
}

void ChipParams::assign(std::string_view keyEqualsValue) {
  size_t eq = keyEqualsValue.find('=');
  if (eq == std::string_view::npos)
    invalid("expected key=value, got '" + std::string(keyEqualsValue) + "'");
  set(keyEqualsValue.substr(0, eq), keyEqualsValue.substr(eq + 1));
}

std::vector<std::pair<std::string, std::string>> ChipParams::list() const {
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back(kNameKey, name);
  for (const ParamRow &row : kRows) {
    uint64_t v = row.get(*this);
    bool address = std::strcmp(row.info.unit, kAddressUnit) == 0;
    out.emplace_back(row.info.key, address ? formatHex(v) : std::to_string(v));
  }
  return out;
}

std::vector<ChipParamInfo> ChipParams::describe() {
  std::vector<ChipParamInfo> out;
  for (const ParamRow &row : kRows)
    out.push_back(row.info);
  return out;
}

void ChipParams::validate() const {
  auto pow2 = [](const char *key, uint64_t v) {
    if (!isPow2(v))
      invalid(std::string(key) + " = " + std::to_string(v) +
              " must be a power of two");
  };
  pow2("npu_num", npuNum);
  pow2("lmem_bytes", lmemBytes);
  pow2("lmem_banks", lmemBanks);
  pow2("eu_bytes", euBytes);
  pow2("local_align", localAlign);
  pow2("global_align", globalAlign);
  pow2("dma_align_bytes", dmaAlignBytes);
  // Lane enables are bit masks (TIU tsk_lane_num, GDMA localmem_mask_*).
  if (npuNum > tiuFieldWidth("tsk_lane_num"))
    invalid("npu_num = " + std::to_string(npuNum) +
            " exceeds the 64-bit lane masks of the commands");
  if (lmemBanks > lmemBytes)
    invalid("lmem_banks = " + std::to_string(lmemBanks) +
            " does not divide lmem_bytes = " + std::to_string(lmemBytes));
  if (euBytes < kWidestElemBytes)
    invalid("eu_bytes = " + std::to_string(euBytes) +
            " is smaller than one 4-byte element");
  for (Prec p : {Prec::Int8, Prec::Int4, Prec::Fp16, Prec::Bf16, Prec::Int16,
                 Prec::Fp32, Prec::Int32})
    if (icParallel(p) == 0)
      invalid(std::string("ic_parallel for ") + precName(p) +
              " must be at least 1");
  // TIU operand addresses below lmemTotal() are local; above they are
  // unified addresses, so the two ranges must not meet.
  if (lmemTotal() > lmemBase)
    invalid("local memory (npu_num * lmem_bytes = " + formatHex(lmemTotal()) +
            ") must not reach lmem_base = " + formatHex(lmemBase));

  struct Region {
    const char *name, *baseKey;
    uint64_t base, bytes;
  };
  const Region regions[] = {
      {"local memory", "lmem_base", lmemBase, lmemTotal()},
      {"static memory", "smem_base", smemBase, smemBytes},
      {"L2 SRAM", "l2_base", l2Base, l2Bytes},
      {"global memory", "gmem_base", gmemBase, gmemBytes}};
  constexpr uint64_t addrLimit = uint64_t(1) << kGdmaAddrBits;
  for (const Region &r : regions)
    if (r.base >= addrLimit || r.bytes > addrLimit - r.base)
      invalid(std::string(r.name) + " [" + formatHex(r.base) + ", +" +
              formatHex(r.bytes) +
              ") does not fit the 40-bit GDMA address space");
  for (const Region &a : regions)
    for (const Region &b : regions)
      if (&a < &b && a.base < b.base + b.bytes && b.base < a.base + a.bytes)
        invalid(std::string(a.name) + " [" + formatHex(a.base) + ", +" +
                formatHex(a.bytes) + ") overlaps " + b.name + " [" +
                formatHex(b.base) + ", +" + formatHex(b.bytes) +
                "): move it, e.g. chip." + b.baseKey + " = " +
                formatHex(a.base + a.bytes) + " (just past " + a.name +
                "), or move chip." + a.baseKey);

  unsigned idBits = tiuFieldWidth("cmd_id");
  if (idWidth == 0 || idWidth > idBits)
    invalid("id_width = " + std::to_string(idWidth) + " must be 1.." +
            std::to_string(idBits) + " (the cmd_id field width)");
  uint64_t dimMax = (uint64_t(1) << tiuFieldWidth("res0_n")) - 1;
  if (maxDim == 0 || maxDim > dimMax)
    invalid("max_dim = " + std::to_string(maxDim) + " must be 1.." +
            std::to_string(dimMax) + " (the 16-bit shape fields)");
}

} // namespace tpu::isa
