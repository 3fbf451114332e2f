//===- Passes.h - Passes on the tpu dialect -----------------------*- C++
//-*-===//
#ifndef TPUC_DIALECT_TPU_TRANSFORMS_PASSES_H
#define TPUC_DIALECT_TPU_TRANSFORMS_PASSES_H

#include "tpuc/Dialect/Tpu/IR/TpuOps.h"

#include "tpu/isa/ChipParams.h"

#include "mlir/Pass/Pass.h"

#include <memory>
#include <string>

namespace tpuc::tpu {

/// --tpu-weight-reorder (see Passes.td).
mlir::LogicalResult reorderWeights(mlir::ModuleOp module);
std::unique_ptr<mlir::Pass> createWeightReorderPass();

/// --tpu-address-assign for the machine \p chip (its DDR base and size).
mlir::LogicalResult assignAddresses(mlir::ModuleOp module,
                                    const ::tpu::isa::ChipParams &chip);
std::unique_ptr<mlir::Pass> createAddressAssignPass();

/// --tpu-codegen=file=<bmodel>.
std::unique_ptr<mlir::Pass> createCodegenPass();

std::unique_ptr<mlir::Pass> createLayerGroupPass();

/// Bytes a value occupies in DDR (weights in their layout).
uint64_t getDeviceBytes(mlir::Value v, const ::tpu::isa::ChipParams &chip);

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "tpuc/Dialect/Tpu/Transforms/Passes.h.inc"

} // namespace tpuc::tpu

#endif // TPUC_DIALECT_TPU_TRANSFORMS_PASSES_H
