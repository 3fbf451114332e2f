//===- ChipParams.h - BM1684X chip parameters ---------------------*- C++
//-*-===//
//
// The machine's sizes and address map as one typed, overridable struct. The
// defaults are the BM1684X (isa/docs/bm1684x.md 1.1, 2); architects change lanes, local
// memory or banks with set("npu_num", "32") etc. The parameter list itself is
// the table in ChipParams.def, which also drives set() and list().
//
//===----------------------------------------------------------------------===//
#ifndef TPU_ISA_CHIPPARAMS_H
#define TPU_ISA_CHIPPARAMS_H

#include "tpu/isa/Types.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tpu::isa {

/// Description of one numeric parameter (a row of ChipParams.def).
struct ChipParamInfo {
  const char *key;
  const char *unit;
  const char *description;
};

struct ChipParams {
  /// Chip name, echoed in stats and reports.
  std::string name = "BM1684X";
#define TPU_CHIP_PARAM(Member, Key, Type, Default, Unit, Description)          \
  Type Member = Default;
#include "tpu/isa/ChipParams.def"

  /// The BM1684X defaults.
  static ChipParams bm1684x() { return ChipParams(); }

  /// Bytes of one local memory bank in one lane.
  uint64_t bankBytes() const { return lmemBytes / lmemBanks; }
  /// Local memory of all lanes together.
  uint64_t lmemTotal() const { return uint64_t(npuNum) * lmemBytes; }
  /// Elements of precision `p` one lane processes per step (EU_NUM).
  unsigned euNum(Prec p) const;
  /// Input channels the cube reduces per lane and step for precision `p`.
  unsigned icParallel(Prec p) const;
  /// log2(lmemBytes): TIU local addresses are (lane << laneShift) | offset.
  unsigned laneShift() const;

  /// Sets the parameter called `key` ("npu_num", "lmem_bytes", ..., or
  /// "name") from text: decimal or 0x hex, optionally followed by K, M or G
  /// (binary multiples). Throws Error naming the key for an unknown key or a
  /// malformed or out-of-range value. Does not validate the combination.
  void set(std::string_view key, std::string_view value);
  /// set() from "key=value".
  void assign(std::string_view keyEqualsValue);
  /// Every parameter as (key, value text), "name" first, in table order.
  std::vector<std::pair<std::string, std::string>> list() const;
  /// The numeric parameters' keys, units and descriptions, in table order.
  static std::vector<ChipParamInfo> describe();
  /// Throws Error naming the first inconsistency: lanes, local memory,
  /// banks, EU width and alignments must be powers of two; banks must divide
  /// the lane; lanes fit the 64-bit lane masks; the local memory fits its
  /// window and below it (TIU addresses under lmemTotal() are local); the
  /// memory regions must not overlap and must fit the 40-bit GDMA addresses;
  /// id_width and max_dim must fit the command fields.
  void validate() const;
};

} // namespace tpu::isa

#endif // TPU_ISA_CHIPPARAMS_H
