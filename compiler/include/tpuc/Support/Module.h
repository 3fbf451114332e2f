//===- Module.h - Module-level attributes and small IR helpers ----*- C++ -*-===//
//
// A top/tpu module records its weight file, target chip and compilation
// stage as module attributes:
//   module @name attributes {top.weight_file = "name_top_weights.npz",
//                            top.chip = "ALL", top.state = "TOP_F32"}
// Dictionary attributes have their own headers: top.preprocess (how an
// image becomes the input, Preprocess.h) and tpu.machine (Machine.h).
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_SUPPORT_MODULE_H
#define TPUC_SUPPORT_MODULE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tpuc::module {

/// Attribute names.
inline constexpr llvm::StringLiteral kWeightFileAttr("top.weight_file");
inline constexpr llvm::StringLiteral kChipAttr("top.chip");
inline constexpr llvm::StringLiteral kStateAttr("top.state");

/// Stage names for top.state.
inline constexpr llvm::StringLiteral kStateTopF32("TOP_F32");
/// Chip name of a module not yet bound to a chip.
inline constexpr llvm::StringLiteral kChipAll("ALL");

/// The weight file (path relative to the .mlir file), "" if none.
llvm::StringRef getWeightFile(mlir::ModuleOp module);
void setWeightFile(mlir::ModuleOp module, llvm::StringRef file);
/// The chip, "" if unset.
llvm::StringRef getChip(mlir::ModuleOp module);
void setChip(mlir::ModuleOp module, llvm::StringRef chip);
/// The stage, "" if unset.
llvm::StringRef getState(mlir::ModuleOp module);
void setState(mlir::ModuleOp module, llvm::StringRef state);

/// The directory of the file the module was parsed from (from its
/// location), or "" when the location names no file.
std::string getSourceDirectory(mlir::ModuleOp module);

/// The function @main, else the first function; null if there is none.
mlir::func::FuncOp getMainFunc(mlir::ModuleOp module);

/// The module enclosing \p op (or \p op itself if it is one); null if none.
mlir::ModuleOp getModule(mlir::Operation *op);

/// Shape of a ranked tensor value (empty for other types).
std::vector<int64_t> getShape(mlir::Value v);
std::vector<int64_t> getShape(mlir::Type type);
/// Element count of a static ranked tensor value; 0 otherwise.
int64_t getNumElements(mlir::Value v);

/// A ranked f32 tensor type of \p shape.
mlir::RankedTensorType getF32Type(mlir::MLIRContext *ctx,
                                  llvm::ArrayRef<int64_t> shape);

/// The integers of an I64ArrayAttr; empty for a null (absent optional)
/// attribute.
std::vector<int64_t> toI64(mlir::ArrayAttr attr);

/// \p axis in [-rank, rank) made non-negative, or -1 if out of range (the
/// caller reports the error: verifiers name the op, lowerings rely on it).
inline int64_t normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return -1;
  return axis < 0 ? axis + rank : axis;
}

} // namespace tpuc::module

#endif // TPUC_SUPPORT_MODULE_H
