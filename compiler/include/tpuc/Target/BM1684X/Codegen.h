//===- Codegen.h - tpu dialect -> BM1684X commands and bmodel ------*- C++
//-*-===//
//
// Turns an addressed tpu module (after --tpu-address-assign) into a bmodel:
// every tpu op in program order appends the TIU / GDMA commands of its
// backend kernel (::tpu::backend, compiler/backend) to a CmdEmitter through
// its codegenBM1684X method (CodegenInterface.h); the coefficient blob holds
// every tpu.Weight at its address in its layout; the IO tensors are the
// top.Input results and the returned values.
//
// Command groups: by default one CmdEmitter collects the ops in program
// order and a new group starts only when its 20-bit ids near their limit,
// so consecutive kernels overlap wherever their local memory does not
// conflict (the emitter tracks it). `groupPerOp` closes a group after every
// op instead (each op then starts with idle engines: simpler to debug and
// to attribute time per op).
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_TARGET_BM1684X_CODEGEN_H
#define TPUC_TARGET_BM1684X_CODEGEN_H

#include "tpu/isa/Bmodel.h"
#include "tpu/isa/ChipParams.h"
#include "tpu/isa/Machine.h"
#include "tpu/isa/OpMap.h"
#include "tpu/isa/Types.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Types.h"
#include "mlir/Support/LogicalResult.h"

#include <cstdint>
#include <optional>
#include <string>

namespace tpuc::bm1684x {

struct CodegenOptions {
  /// One command group per op (see the file comment).
  bool groupPerOp = false;
  /// Net name in the bmodel; the module's symbol name when empty.
  std::string netName;
};

/// What the codegen produced, for reports.
struct CodegenSummary {
  size_t numGroups = 0;
  size_t numTiu = 0;
  size_t numGdma = 0;
  uint64_t coeffBytes = 0;
  uint64_t neuronBytes = 0;
  /// The op each command was emitted for (tpuc deploy writes it as
  /// <stem>_ops.json for tpusim's per-op statistics).
  ::tpu::isa::OpMap opMap;
};

/// The hardware precision of a tensor element type (f32, f16, bf16, i8,
/// i16, i32, !quant.uniform storage); nullopt for others.
std::optional<::tpu::isa::Prec> getPrec(mlir::Type elementType);
/// Whether an integer element type is signed (true for floats).
bool isSignedType(mlir::Type elementType);
/// The bmodel data type of a tensor element type; nullopt if none fits.
std::optional<::tpu::isa::DataType> getDataType(mlir::Type elementType);

/// Bytes of the tpu.Weight \p weightOp in the coefficient blob: its layout
/// (conv_1ic, conv_32ic, depthwise, deconv: the backend's filter formats,
/// with the group count of the conv that reads it) or compact.
uint64_t getWeightBytes(mlir::Operation *weightOp,
                        const ::tpu::isa::ChipParams &chip);

/// Builds the bmodel of \p module for \p machine (its chip; its timing
/// chooses the slicing of the ops that run alone). Errors are emitted as
/// diagnostics on the failing op (a missing address, an op without a
/// kernel, a kernel's ::tpu::Error) and give failure().
mlir::FailureOr<::tpu::isa::bmodel::Model>
buildBmodel(mlir::ModuleOp module, const ::tpu::isa::Machine &machine,
            const CodegenOptions &options, CodegenSummary *summary = nullptr);

} // namespace tpuc::bm1684x

#endif // TPUC_TARGET_BM1684X_CODEGEN_H
