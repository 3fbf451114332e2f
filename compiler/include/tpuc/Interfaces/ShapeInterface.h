//===- ShapeInterface.h - Result shape inference -----------------*- C++ -*-===//
//
// The op interface generated from ShapeInterface.td.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_INTERFACES_SHAPEINTERFACE_H
#define TPUC_INTERFACES_SHAPEINTERFACE_H

#include "mlir/IR/OpDefinition.h"

/// Include the generated interface declarations.
#include "tpuc/Interfaces/ShapeInterface.h.inc"

#endif // TPUC_INTERFACES_SHAPEINTERFACE_H
