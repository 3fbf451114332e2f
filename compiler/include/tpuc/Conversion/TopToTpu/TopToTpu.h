//===- TopToTpu.h - Lowering top to tpu ----------------------------*- C++
//-*-===//
#ifndef TPUC_CONVERSION_TOPTOTPU_TOPTOTPU_H
#define TPUC_CONVERSION_TOPTOTPU_TOPTOTPU_H

#include "tpuc/Dialect/Tpu/IR/TpuOps.h"

#include "mlir/Pass/Pass.h"

#include <memory>
#include <string>

namespace tpuc {

/// The float modes of the lowering.
enum class QuantMode { F32, F16, BF16 };

/// "F32" / "F16" / "BF16" (case-insensitive) -> mode; nullopt otherwise.
std::optional<QuantMode> parseQuantMode(llvm::StringRef text);
/// "F32", "F16", "BF16".
llvm::StringRef quantModeName(QuantMode mode);

/// Lowers every top op of \p module's functions to tpu ops in \p mode (see
/// the ConvertTopToTpu pass). Errors are emitted on the failing op.
mlir::LogicalResult lowerTopToTpu(mlir::ModuleOp module, QuantMode mode);

/// --convert-top-to-tpu=mode=F16
std::unique_ptr<mlir::Pass> createConvertTopToTpuPass();

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "tpuc/Conversion/TopToTpu/Passes.h.inc"

} // namespace tpuc

#endif // TPUC_CONVERSION_TOPTOTPU_TOPTOTPU_H
