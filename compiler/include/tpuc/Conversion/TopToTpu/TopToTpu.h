//===- TopToTpu.h - Lowering top to tpu ----------------------------*- C++
//-*-===//
#ifndef TPUC_CONVERSION_TOPTOTPU_TOPTOTPU_H
#define TPUC_CONVERSION_TOPTOTPU_TOPTOTPU_H

#include "tpuc/Dialect/Tpu/IR/TpuOps.h"

#include "mlir/Pass/Pass.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tpuc {

/// The modes of the lowering: three float types and INT8 (per-channel
/// symmetric int8 weights, int8 / uint8 activations with the scales of a
/// calibration table; compiler/docs/design.md "INT8").
enum class QuantMode { F32, F16, BF16, INT8 };

/// "F32" / "F16" / "BF16" / "INT8" (case-insensitive) -> mode; nullopt
/// otherwise.
std::optional<QuantMode> parseQuantMode(llvm::StringRef text);
/// "F32", "F16", "BF16", "INT8".
llvm::StringRef quantModeName(QuantMode mode);

struct CaliTable;

/// What INT8 lowering needs besides the mode.
struct Int8Options {
  /// Thresholds per tensor (required when any op is lowered to INT8).
  const CaliTable *cali = nullptr;
  /// The float mode of the ops that have no INT8 form (F32, F16 or BF16).
  QuantMode fallback = QuantMode::F32;
  /// Asymmetric activations: int8 with scale (max - min) / 255 and a zero
  /// point from the table's min / max (TPU-MLIR's --asymmetric).
  bool asymmetric = false;
  /// Model inputs / outputs stay int8 (their table types) instead of f32
  /// with a quantising / dequantising cast on the chip (TPU-MLIR's
  /// --quant_input / --quant_output).
  bool quantInput = false, quantOutput = false;
  /// Filled by the lowering: the ops an INT8 lowering left in `fallback`,
  /// "<op name> (<op type>): <why>".
  std::vector<std::string> *floatOps = nullptr;
  /// Filled by the lowering: the names of the ops an INT8 form lowered
  /// (conv, pooling, add / sub), in program order; not the data movement
  /// that only keeps its input's quantised type, not the ops of floatOps.
  /// The ops whose precision a mixed-precision search can trade.
  std::vector<std::string> *int8Ops = nullptr;
};

/// Per-op float modes overriding the module's mode: TPU-MLIR's quantize
/// table (`model_deploy --quantize_table`). One `op_name MODE` per line,
/// `#` starts a comment, blank lines are ignored. Op names are the top ops'
/// framework names (a multi-result op's result names also select it).
struct QuantTable {
  struct Entry {
    QuantMode mode;
    unsigned line; ///< 1-based line of the entry in `path`
  };
  std::string path; ///< for messages: "<path>:<line>: ..."
  llvm::StringMap<Entry> entries;
  /// Entry names in file order (for messages and deterministic checks).
  std::vector<std::string> order;
};

/// Parses the text of a quantize table; \p path only names the source in
/// errors ("<path>:<line>: ..."). Modes the lowering does not have
/// (TPU-MLIR's INT4 / W8A16 ...) and unknown modes are errors.
llvm::Expected<QuantTable> parseQuantTable(llvm::StringRef text,
                                           llvm::StringRef path);
/// Reads and parses the quantize table file \p path.
llvm::Expected<QuantTable> readQuantTable(llvm::StringRef path);
/// Fails with "<path>:<line>: ..." for the first entry that names no top
/// op of \p module (inputs and weights are not ops the table can select).
llvm::Error checkQuantTable(mlir::ModuleOp module, const QuantTable &table);

/// Lowers every top op of \p module's functions to tpu ops in \p mode (see
/// the ConvertTopToTpu pass), or in the mode \p table gives the op; casts
/// join values of different float types. Errors are emitted on the failing
/// op (a table entry naming no op: on the module).
mlir::LogicalResult lowerTopToTpu(mlir::ModuleOp module, QuantMode mode,
                                  const QuantTable *table = nullptr,
                                  const Int8Options &int8 = {});

/// --convert-top-to-tpu=mode=F16 [qtable=FILE]
std::unique_ptr<mlir::Pass> createConvertTopToTpuPass();

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "tpuc/Conversion/TopToTpu/Passes.h.inc"

} // namespace tpuc

#endif // TPUC_CONVERSION_TOPTOTPU_TOPTOTPU_H
