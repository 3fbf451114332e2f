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

/// Re-batches \p module, imported and shape-inferred for a batch of 1, for
/// a batch of \p batch (tpuc transform --batch): the inputs get it as their
/// first dimension, a Reshape whose target starts with the batch of 1
/// (TFLite and ONNX files spell the batch out: [1, 1536]) starts with
/// \p batch instead, a Reshape of one sample's single value to a scalar
/// keeps its input's shape, a Reduce over the batch axis becomes one over
/// the other axes with keepdims (over every axis to a scalar: [N, 1, ..., 1]
/// of the input's rank, which the scalar's readers broadcast per sample),
/// then shapes are inferred again. Every activation must have the batch as
/// its first dimension before and its batch-1 shape with the batch first
/// after (a former scalar [N, 1, ..., 1], read only into results of its
/// rank); an error (in \p error, naming the input or op) otherwise, the
/// module then being unusable.
mlir::LogicalResult rebatch(mlir::ModuleOp module, int64_t batch,
                            std::string &error);

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "tpuc/Dialect/Top/Transforms/Passes.h.inc"

} // namespace tpuc::top

#endif // TPUC_DIALECT_TOP_TRANSFORMS_PASSES_H
