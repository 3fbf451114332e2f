//===- TopCoreOps.td - None, Input and Weight ---------------*- tablegen -*-===//
//
// The ops that bring values into a top function: the `none` placeholder of
// absent optional operands, the function inputs, and named weights.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_DIALECT_TOP_IR_TOPCOREOPS
#define TPUC_DIALECT_TOP_IR_TOPCOREOPS

include "tpuc/Dialect/Top/IR/TopBase.td"

def Top_NoneOp : Top_Op<"None"> {
  let summary = "The value passed for an absent optional operand";
  let description = [{
    Produces the `none` value. Ops with optional operands (a Conv bias, the
    scale of a LayerNorm) take it where the operand is absent.

    ```mlir
    %0 = "top.None"() : () -> none
    %1 = "top.Conv"(%x, %w, %0) {...} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x6x6xf32>
    ```
  }];
  let results = (outs NoneType:$output);
}

def Top_InputOp : Top_BaseOp<"Input"> {
  let summary = "A named model input";
  let description = [{
    Gives a function argument its framework name; the interpreter and the
    tools address inputs by this name. The result has the argument's type.
    It is kept even when unused, so the model keeps its input list.

    ```mlir
    func.func @main(%arg0: tensor<1x3x224x224xf32>) -> tensor<1x1000xf32> {
      %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x3x224x224xf32>) -> tensor<1x3x224x224xf32>
      ...
    }
    ```
  }];
  // f32; in a tpu module deployed with --quant-input an int8 quantised
  // tensor (its calibration-table type), which the interpreter quantises
  // real inputs to.
  let arguments = (ins Top_InputTensor:$input, StrAttr:$name);
  let results = (outs Top_InputTensor:$output);
}

def Top_WeightOp : Top_Op<"Weight"> {
  let summary = "A named constant tensor";
  let description = [{
    A constant whose data is the array `name` of the module's weight file
    (`top.weight_file`), or of the in-memory weight store for weights that
    passes created and that are not saved yet. Its type gives the shape; the
    data is read as float32 (integer arrays are converted).

    ```mlir
    %2 = "top.Weight"() {name = "conv1_w"} : () -> tensor<64x3x7x7xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs Top_Tensor:$output);
}

#endif // TPUC_DIALECT_TOP_IR_TOPCOREOPS
