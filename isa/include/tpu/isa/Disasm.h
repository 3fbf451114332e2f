//===- Disasm.h - Text and JSON views of BM1684X commands --------*- C++ -*-===//
//
// Printing is driven by the field tables in Layouts.def: every command prints
// as its mnemonic followed by its fields by name, so a field added to the
// table is printed without touching this code.
//
//===----------------------------------------------------------------------===//
#ifndef TPU_ISA_DISASM_H
#define TPU_ISA_DISASM_H

#include "tpu/isa/Command.h"

#include <nlohmann/json.hpp>
#include <string>

namespace tpu::isa {

struct DisasmOptions {
  /// Print fields whose value is zero (reserved fields are printed only when
  /// they are non-zero, whatever this says).
  bool showZero = false;
};

/// One line: mnemonic, then `name=value` for each field in bit order, e.g.
/// `sAR.add cmd_short=1 cmd_id=15 cmd_id_dep=3 tsk_typ=3 tsk_eu_typ=2 ...`.
/// Addresses and masks print in hex, everything else in decimal.
std::string disassemble(const RawCommand &c, const DisasmOptions &opts = {});

/// {"layout": "sAR", "mnemonic": "sAR.add", "bytes": 64,
///  "fields": {"cmd_short": 1, ...}} with every non-reserved field (and any
/// non-zero reserved one).
nlohmann::json toJson(const RawCommand &c);

/// The inverse of toJson: "layout" names the layout; missing fields are zero.
/// Throws Error naming an unknown layout or field, or a value that does not
/// fit its field.
RawCommand fromJson(const nlohmann::json &j);

} // namespace tpu::isa

#endif // TPU_ISA_DISASM_H
