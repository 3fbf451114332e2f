//===- Passes.h - Passes on the top dialect -----------------------*- C++ -*-===//
#ifndef TPUC_DIALECT_TOP_TRANSFORMS_PASSES_H
#define TPUC_DIALECT_TOP_TRANSFORMS_PASSES_H

#include "tpuc/Dialect/Top/IR/TopOps.h"

#include "mlir/Pass/Pass.h"

#include <memory>
#include <string>

namespace tpuc::top {

/// --shape-infer: result types of every op, then the function types.
std::unique_ptr<mlir::Pass> createShapeInferPass();
/// --save-weights=file=<npz>: writes the module's weights and points
/// top.weight_file at them.
std::unique_ptr<mlir::Pass> createSaveWeightsPass();
std::unique_ptr<mlir::Pass> createSaveWeightsPass(const std::string &file);

/// Runs shape inference on \p module directly (what --shape-infer does).
mlir::LogicalResult inferShapes(mlir::ModuleOp module);

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "tpuc/Dialect/Top/Transforms/Passes.h.inc"

} // namespace tpuc::top

#endif // TPUC_DIALECT_TOP_TRANSFORMS_PASSES_H
