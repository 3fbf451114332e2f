//===- InitAll.h - Register every dialect and pass of tpuc --------*- C++ -*-===//
#ifndef TPUC_INITALL_H
#define TPUC_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace tpuc {

/// Adds top, func, arith, quant and tensor to \p registry.
void registerAllDialects(mlir::DialectRegistry &registry);
/// Registers the tpuc passes and the MLIR passes tpuc-opt offers
/// (canonicalize, cse, ...) with the global pass registry.
void registerAllPasses();

} // namespace tpuc

#endif // TPUC_INITALL_H
