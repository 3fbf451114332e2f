//===- ShapeInterface.td - Result shape inference ----------*- tablegen -*-===//
//
// Ops set their result types from their operand types and attributes. The
// `--shape-infer` pass calls this on every op in program order.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_INTERFACES_SHAPEINTERFACE
#define TPUC_INTERFACES_SHAPEINTERFACE

include "mlir/IR/OpBase.td"

def ShapeInterface : OpInterface<"ShapeInterface"> {
  let description = [{
    Recomputes the op's result types (ranked f32 tensors) from its operand
    types and attributes, and updates them in place. Fails with a diagnostic
    when the operands' shapes do not fit the op.
  }];
  let cppNamespace = "::tpuc";
  let methods = [
    InterfaceMethod<
      /*desc=*/"Sets the result types from the operands and attributes.",
      /*retTy=*/"::mlir::LogicalResult",
      /*methodName=*/"inferShapes",
      /*args=*/(ins)>,
  ];
}

#endif // TPUC_INTERFACES_SHAPEINTERFACE
