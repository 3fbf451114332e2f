//===- CaliTable.h - Calibration tables (TPU-MLIR's text format) -*- C++ -*-===//
//
// A calibration table gives, per tensor of a top module, the threshold and
// the range its INT8 quantisation is derived from. The text format is
// TPU-MLIR's (`dump_cali_table` / `ImportCalibrationTable`), so tables move
// between the two tools:
//
//   # genetated time: ...            <- '#' lines are comments/header
//   # op_name    threshold    min    max
//   conv1 4.1234567 -3.0000000 4.1234567
//   ...
//   #int4_th                          <- optional sections start with '#'
//
// Lines are `name threshold min max` (whitespace separated; floats). The
// main section ends at the first line starting with "#int4_th", "#asym_op",
// "#weight_scale" or "#int4_op"; those sections are read and ignored except
// that "#asym_op" names are kept. Thresholds <= 1e-5 are clamped to 1e-5 on
// reading and on writing (TPU-MLIR's rule).
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_SUPPORT_CALITABLE_H
#define TPUC_SUPPORT_CALITABLE_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tpuc {

struct CaliEntry {
  double threshold = 0; ///< symmetric range [-threshold, threshold]
  double min = 0;       ///< calibrated minimum (asymmetric range)
  double max = 0;       ///< calibrated maximum
  unsigned line = 0;    ///< 1-based line in the file (0 if not read)
};

/// A tensor's exact quantisation as a model that carries its own states it
/// (a quantised TFLite model): storage type, zero point and scales (one, or
/// one per channel of a constant), float32 values held in doubles.
struct ModelQuant {
  enum class Storage { Int8, UInt8, Int32 } storage = Storage::Int8;
  int64_t zeroPoint = 0;
  std::vector<double> scales;

  /// Channel \p c's scale (the one scale of a per-tensor quantisation).
  double scale(size_t c) const {
    return scales.size() == 1 ? scales[0] : scales[c];
  }
  /// One scale, or one per channel of \p channels.
  bool fits(int64_t channels) const {
    return scales.size() == 1 || int64_t(scales.size()) == channels;
  }
};

struct CaliTable {
  std::string path; ///< for messages: "<path>:<line>: ..."
  llvm::StringMap<CaliEntry> entries;
  /// Entry names in file order.
  std::vector<std::string> order;
  /// Header comment lines (without the leading "# "), in order.
  std::vector<std::string> header;
  /// Names listed under "#asym_op".
  std::vector<std::string> asymOps;
  /// The exact quantisation of activations and constants, from a model
  /// that carries its own (empty for a calibrated table). When it is set,
  /// the INT8 lowering keeps these scales, zero points and weight codes and
  /// follows TFLite's integer arithmetic (compiler/docs/design.md, "TFLite
  /// arithmetic").
  llvm::StringMap<ModelQuant> modelQuant;

  bool hasModelQuant() const { return !modelQuant.empty(); }
  const ModelQuant *findModelQuant(llvm::StringRef name) const {
    auto it = modelQuant.find(name);
    return it == modelQuant.end() ? nullptr : &it->second;
  }

  const CaliEntry *find(llvm::StringRef name) const {
    auto it = entries.find(name);
    return it == entries.end() ? nullptr : &it->second;
  }
};

/// Parses table text; \p path names the source in errors
/// ("<path>:<line>: ..."). Malformed lines (not 4 fields, not numbers,
/// non-finite values, min > max, a name twice) and a table without entries
/// are errors.
llvm::Expected<CaliTable> parseCaliTable(llvm::StringRef text,
                                         llvm::StringRef path);
/// Reads and parses the file \p path.
llvm::Expected<CaliTable> readCaliTable(llvm::StringRef path);
/// The table as text: the header lines as "# ..." comments, the column
/// line "# op_name    threshold    min    max", then one line per entry in
/// `order`, floats with 7 decimals.
std::string formatCaliTable(const CaliTable &table);
/// The modelQuant entries as text, one line each: `name i8|u8|i32 zp s...`,
/// the scales as hexadecimal floats (exact); and its parser (errors name
/// \p path and the line).
std::string formatModelQuant(const llvm::StringMap<ModelQuant> &quant);
llvm::Expected<llvm::StringMap<ModelQuant>>
parseModelQuant(llvm::StringRef text, llvm::StringRef path);
/// Writes formatCaliTable(table) to \p path atomically (a temporary file
/// renamed into place: no half-written table on failure).
llvm::Error writeCaliTable(const CaliTable &table, llvm::StringRef path);

} // namespace tpuc

#endif // TPUC_SUPPORT_CALITABLE_H
