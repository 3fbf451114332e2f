//===- TopInterfaces.td - Interfaces every top op implements -*- tablegen -*-===//
//
// Every `top` op runs in the reference interpreter (InferenceInterface) and
// recomputes its result types (ShapeInterface). Both interfaces are shared
// with the `tpu` dialect and live in tpuc/Interfaces.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_DIALECT_TOP_IR_TOPINTERFACES
#define TPUC_DIALECT_TOP_IR_TOPINTERFACES

include "tpuc/Interfaces/InferenceInterface.td"
include "tpuc/Interfaces/ShapeInterface.td"

#endif // TPUC_DIALECT_TOP_IR_TOPINTERFACES
