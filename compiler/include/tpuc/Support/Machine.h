//===- Machine.h - The machine a tpu module is compiled for ------*- C++
//-*-===//
//
// A tpu module records the machine it is compiled for (isa::Machine: chip
// shape and timing constants) as the module attribute tpu.machine, a
// dictionary of every machine key (`chip.npu_num`, `tiu.cube_startup`, ...)
// to its value as a string:
//   module attributes {tpu.machine = {"chip.npu_num" = "32", ...}}
// `tpuc deploy` sets it from its --chip-param values and writes the same
// machine into the bmodel (isa::bmodel::Model::machine).
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_SUPPORT_MACHINE_H
#define TPUC_SUPPORT_MACHINE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include "tpu/isa/Machine.h"

#include <optional>

namespace tpuc::module {

/// Attribute name.
inline constexpr llvm::StringLiteral kMachineAttr("tpu.machine");

/// Records `machine` as the module's tpu.machine attribute.
void setMachine(mlir::ModuleOp module, const ::tpu::isa::Machine &machine);

/// The machine of tpu.machine (the BM1684X defaults for every key it does
/// not list), or std::nullopt when the module has none; an error names the
/// entry that is not a string or not a valid machine key and value.
llvm::Expected<std::optional<::tpu::isa::Machine>>
getMachine(mlir::ModuleOp module);

/// The machine \p module records, else the BM1684X. Emits an error naming
/// \p passName on \p module and fails for an unreadable record.
mlir::FailureOr<::tpu::isa::Machine> getMachineOrDefault(mlir::ModuleOp module,
                                                       llvm::StringRef passName);

} // namespace tpuc::module

#endif // TPUC_SUPPORT_MACHINE_H
