//===- InferenceInterface.td - Reference interpreter hook --*- tablegen -*-===//
//
// Every op of the `top` (and later `tpu`) dialect computes its results on
// host float buffers, so that whole modules run in the reference interpreter
// and passes can evaluate ops whose operands are all constants.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_INTERFACES_INFERENCEINTERFACE
#define TPUC_INTERFACES_INFERENCEINTERFACE

include "mlir/IR/OpBase.td"

def InferenceInterface : OpInterface<"InferenceInterface"> {
  let description = [{
    Computes the op's results from its operands on float32 host buffers.
    The buffers live in a `tpuc::InferenceContext`: `ctx.get(value)` gives an
    operand's data (row-major, shape from the value's type) and
    `ctx.output(value)` a result's buffer, already sized to the result
    type's element count.
  }];
  let cppNamespace = "::tpuc";
  let methods = [
    InterfaceMethod<
      /*desc=*/"Reads the operand buffers and writes the result buffers.",
      /*retTy=*/"::mlir::LogicalResult",
      /*methodName=*/"inference",
      /*args=*/(ins "::tpuc::InferenceContext &":$ctx)>,
  ];
}

#endif // TPUC_INTERFACES_INFERENCEINTERFACE
