//===- GroupSpec.h - tpu ops as the backend's local operations ---*- C++ -*-===//
//
// Private to the BM1684X target (Codegen/Group.cpp): shared by the
// layer-group search (LayerGroup.cpp) and tpu.Group's codegen.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_LIB_TARGET_BM1684X_GROUPSPEC_H
#define TPUC_LIB_TARGET_BM1684X_GROUPSPEC_H

#include "CodegenContext.h"

#include "tpuc/Backend/LayerGroup.h"

#include "llvm/ADT/ArrayRef.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tpuc::bm1684x {

/// The backend parameters of \p op as a local operation, and in \p acts the
/// activations it reads in the backend's operand order (a null Value for an
/// operand that is a resident weight); none with the reason in \p why when
/// the op has no local form.
std::optional<::tpu::backend::LocalOpParams>
localOpParams(CodegenContext &ctx, mlir::Operation *op,
              std::vector<mlir::Value> &acts, std::string &why);

/// The GroupSpec of \p ops (in program order): values defined outside them
/// are loaded, values \p isStored says are read after them are stored, each
/// at \p addrOf's address.
std::optional<::tpu::backend::GroupSpec>
buildGroupSpec(CodegenContext &ctx, llvm::ArrayRef<mlir::Operation *> ops,
               const std::function<bool(mlir::Value)> &isStored,
               const std::function<uint64_t(mlir::Value)> &addrOf,
               std::string &why);

} // namespace tpuc::bm1684x

#endif // TPUC_LIB_TARGET_BM1684X_GROUPSPEC_H
