//===- TpuShapeOps.td - Data movement and reductions ---------*- tablegen -*-===//
//
// Ops that move, select or reduce data. Reshape moves nothing: it aliases
// its input's memory.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_DIALECT_TPU_IR_TPUSHAPEOPS
#define TPUC_DIALECT_TPU_IR_TPUSHAPEOPS

include "tpuc/Dialect/Tpu/IR/TpuBase.td"

def Tpu_ReshapeOp : Tpu_Op<"Reshape"> {
  let summary = "Same data, new shape (an alias, no copy)";
  let description = [{
    The result type gives the new shape, with as many elements as the input
    and the same element type. It emits no command: its address is its
    input's.

    ```mlir
    %1 = "tpu.Reshape"(%0) {name = "flat"} : (tensor<1x64x1x1xf32>) -> tensor<1x64xf32>
    ```
  }];
  let arguments = (ins Tpu_Tensor:$input, StrAttr:$name);
  let results = (outs Tpu_Tensor:$output);
}

def Tpu_PermuteOp : Tpu_Op<"Permute", [Tpu_BM1684XCodegen]> {
  let summary = "Transpose: output axis i is input axis order[i]";
  let description = [{
    ```mlir
    %1 = "tpu.Permute"(%0) {name = "t", order = [0, 2, 3, 1]}
         : (tensor<1x3x4x5xf32>) -> tensor<1x4x5x3xf32>
    ```
  }];
  let arguments = (ins Tpu_Tensor:$input, I64ArrayAttr:$order, StrAttr:$name);
  let results = (outs Tpu_Tensor:$output);
}

def Tpu_ConcatOp : Tpu_Op<"Concat", [Tpu_BM1684XCodegen]> {
  let summary = "Joins tensors along an axis";
  let description = [{
    `axis` is non-negative; all inputs agree on the other axes.

    ```mlir
    %2 = "tpu.Concat"(%0, %1) {name = "cat", axis = 1 : i64}
         : (tensor<1x2x4x4xf32>, tensor<1x3x4x4xf32>) -> tensor<1x5x4x4xf32>
    ```
  }];
  let arguments = (ins Variadic<Tpu_Tensor>:$inputs, I64Attr:$axis,
                       StrAttr:$name);
  let results = (outs Tpu_Tensor:$output);
}

def Tpu_SliceOp : Tpu_Op<"Slice", [Tpu_BM1684XCodegen]> {
  let summary = "Strided slice with normalised starts";
  let description = [{
    Per axis: first element `offset[i]` (in range), step `steps[i]`
    (non-zero); the result type gives the element count per axis.

    ```mlir
    %1 = "tpu.Slice"(%0) {name = "s", offset = [0, 1], steps = [1, 2]}
         : (tensor<2x8xf32>) -> tensor<2x4xf32>
    ```
  }];
  let arguments = (ins Tpu_Tensor:$input, I64ArrayAttr:$offset,
                       I64ArrayAttr:$steps, StrAttr:$name);
  let results = (outs Tpu_Tensor:$output);
}

def Tpu_PadOp : Tpu_Op<"Pad", [Tpu_BM1684XCodegen]> {
  let summary = "Pads every axis";
  let description = [{
    `paddings` holds the begin pads of every axis, then the end pads
    (non-negative); `mode` is "constant" (fill `val`), "reflect" (mirror
    without repeating the edge; pads smaller than the axis) or "edge"
    (repeat the edge element).

    ```mlir
    %1 = "tpu.Pad"(%0) {name = "p", paddings = [0, 0, 1, 1, 0, 0, 1, 1], mode = "constant", val = 0.0 : f64}
         : (tensor<1x3x4x4xf32>) -> tensor<1x3x6x6xf32>
    ```
  }];
  let arguments = (ins Tpu_Tensor:$input, I64ArrayAttr:$paddings,
                       DefaultValuedAttr<StrAttr, "\"constant\"">:$mode,
                       DefaultValuedAttr<F64Attr, "0.0">:$val, StrAttr:$name);
  let results = (outs Tpu_Tensor:$output);
}

def Tpu_InterpOp : Tpu_Op<"Interp", [Tpu_BM1684XCodegen]> {
  let summary = "Resizes the last two axes";
  let description = [{
    As top.Interp: `mode` nearest / linear, `coord_mode`, `nearest_mode`,
    `scale_h` / `scale_w` (0: output size / input size).

    ```mlir
    %1 = "tpu.Interp"(%0) {name = "up", mode = "nearest", coord_mode = "asymmetric",
           nearest_mode = "floor", scale_h = 2.0 : f64, scale_w = 2.0 : f64}
         : (tensor<1x8x10x10xf32>) -> tensor<1x8x20x20xf32>
    ```
  }];
  let arguments = (ins Tpu_Tensor:$input, StrAttr:$mode, StrAttr:$coord_mode,
                       StrAttr:$nearest_mode, F64Attr:$scale_h,
                       F64Attr:$scale_w, StrAttr:$name);
  let results = (outs Tpu_Tensor:$output);
}

def Tpu_ReduceOp : Tpu_Op<"Reduce", [Tpu_BM1684XCodegen]> {
  let summary = "Mean, max, min or sum over axes";
  let description = [{
    `mode` is "ReduceMean", "ReduceMax", "ReduceMin" or "ReduceSum"; `axes`
    are non-negative and sorted; the result type tells whether they are
    kept as 1 (the data is the same either way). Accumulation in f32.

    ```mlir
    %1 = "tpu.Reduce"(%0) {name = "m", mode = "ReduceMean", axes = [2, 3]}
         : (tensor<1x64x7x7xf32>) -> tensor<1x64x1x1xf32>
    ```
  }];
  let arguments = (ins Tpu_Tensor:$input, StrAttr:$mode, I64ArrayAttr:$axes,
                       StrAttr:$name);
  let results = (outs Tpu_Tensor:$output);
}

def Tpu_GatherOp : Tpu_Op<"Gather", [Tpu_BM1684XCodegen]> {
  let summary = "Takes entries along an axis by index";
  let description = [{
    ONNX Gather with a non-negative `axis`; `indices` holds integers
    (negative ones count from the end) in an i32 tensor (a weight) or in a
    float tensor (f32, f16 or bf16: a model input or another op's result,
    in the type it was computed in; values are converted toward zero). The
    indices are read at run time; f16 / bf16 hold every integer only up to
    2048 / 256.

    ```mlir
    %2 = "tpu.Gather"(%0, %1) {name = "g", axis = 0 : i64}
         : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
    ```
  }];
  let arguments = (ins Tpu_Tensor:$input, Tpu_Tensor:$indices, I64Attr:$axis,
                       StrAttr:$name);
  let results = (outs Tpu_Tensor:$output);
}

def Tpu_TileOp : Tpu_Op<"Tile", [Tpu_BM1684XCodegen]> {
  let summary = "Broadcasts or repeats a tensor to the result's shape";
  let description = [{
    Covers ONNX Expand and Tile: result axis i repeats the input
    result_dim / input_dim times (the input is first padded to the result's
    rank with leading 1s). Expand is the case of input dims of 1.

    ```mlir
    %1 = "tpu.Tile"(%0) {name = "t"} : (tensor<2x3xf32>) -> tensor<2x6xf32>
    ```
  }];
  let arguments = (ins Tpu_Tensor:$input, StrAttr:$name);
  let results = (outs Tpu_Tensor:$output);
}

#endif // TPUC_DIALECT_TPU_IR_TPUSHAPEOPS
