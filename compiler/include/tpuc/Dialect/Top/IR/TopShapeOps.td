//===- TopShapeOps.td - Data movement and reductions ---------*- tablegen -*-===//
//
// Ops that move, select, replicate or reduce data: reshape, permute,
// concat, split, slice, pad, resize, reduce, gather, expand, tile.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_DIALECT_TOP_IR_TOPSHAPEOPS
#define TPUC_DIALECT_TOP_IR_TOPSHAPEOPS

include "tpuc/Dialect/Top/IR/TopBase.td"

def Top_ReshapeOp : Top_Op<"Reshape"> {
  let summary = "Same data, new shape";
  let description = [{
    `shape` is the new shape; as in ONNX Reshape, one entry may be -1 (the
    rest of the elements) and 0 copies the input's dimension at that index.
    Flatten, Squeeze and Unsqueeze import as Reshape.

    ```mlir
    %1 = "top.Reshape"(%0) {name = "flat", shape = [1, -1]} : (tensor<1x512x1x1xf32>) -> tensor<1x512xf32>
    ```
  }];
  let arguments = (ins Top_Tensor:$input, I64ArrayAttr:$shape, StrAttr:$name);
  let results = (outs Top_Tensor:$output);
  let hasCanonicalizer = 1;
}

def Top_PermuteOp : Top_Op<"Permute"> {
  let summary = "Transpose (ONNX Transpose)";
  let description = [{
    Output axis i is input axis order[i].

    ```mlir
    %1 = "top.Permute"(%0) {name = "t", order = [0, 2, 3, 1]} : (tensor<1x3x4x5xf32>) -> tensor<1x4x5x3xf32>
    ```
  }];
  let arguments = (ins Top_Tensor:$input, I64ArrayAttr:$order, StrAttr:$name);
  let results = (outs Top_Tensor:$output);
  let hasCanonicalizer = 1;
}

def Top_ConcatOp : Top_Op<"Concat"> {
  let summary = "Joins tensors along an axis";
  let description = [{
    All inputs agree on every axis but `axis` (negative counts from the
    end).

    ```mlir
    %2 = "top.Concat"(%0, %1) {name = "cat", axis = 1 : i64}
         : (tensor<1x2x4x4xf32>, tensor<1x3x4x4xf32>) -> tensor<1x5x4x4xf32>
    ```
  }];
  let arguments = (ins Variadic<Top_Tensor>:$inputs, I64Attr:$axis,
                       StrAttr:$name);
  let results = (outs Top_Tensor:$output);
}

def Top_SplitOp : Top_Op<"Split"> {
  let summary = "Cuts a tensor into pieces along an axis";
  let description = [{
    Result i takes `split[i]` entries of `axis`. `name` is the first
    output's name and `names` (when present) lists every output's name.

    ```mlir
    %1:2 = "top.Split"(%0) {name = "a", names = ["a", "b"], axis = 1 : i64, split = [2, 6]}
           : (tensor<1x8x4xf32>) -> (tensor<1x2x4xf32>, tensor<1x6x4xf32>)
    ```
  }];
  let arguments = (ins Top_Tensor:$input, I64Attr:$axis, I64ArrayAttr:$split,
                       OptionalAttr<StrArrayAttr>:$names, StrAttr:$name);
  let results = (outs Variadic<Top_Tensor>:$outputs);
}

def Top_SliceOp : Top_Op<"Slice"> {
  let summary = "Strided slice with one entry per axis";
  let description = [{
    Per axis: start `offset[i]`, end `ends[i]` (exclusive), step `steps[i]`
    (not 0, negative walks backwards). Values follow ONNX Slice: negative
    starts and ends count from the end, and both are clamped to the axis
    (to [0, dim] for positive steps, [-1, dim - 1] for negative ones), so a
    very large end means "to the end".

    ```mlir
    %1 = "top.Slice"(%0) {name = "s", offset = [0, 1], ends = [2, 9223372036854775807], steps = [1, 2]}
         : (tensor<2x8xf32>) -> tensor<2x4xf32>
    ```
  }];
  let arguments = (ins Top_Tensor:$input, I64ArrayAttr:$offset,
                       I64ArrayAttr:$steps, I64ArrayAttr:$ends, StrAttr:$name);
  let results = (outs Top_Tensor:$output);
}

def Top_PadOp : Top_Op<"Pad"> {
  let summary = "Pads every axis";
  let description = [{
    `paddings` lists the begin pads of every axis, then the end pads (ONNX
    order); negative pads crop. `mode` is "constant" (fill `val`),
    "reflect" (mirror without the edge) or "edge" (repeat the edge).

    ```mlir
    %1 = "top.Pad"(%0) {name = "p", paddings = [0, 0, 1, 1, 0, 0, 1, 1], mode = "constant", val = 0.0 : f64}
         : (tensor<1x3x4x4xf32>) -> tensor<1x3x6x6xf32>
    ```
  }];
  let arguments = (ins Top_Tensor:$input, I64ArrayAttr:$paddings,
                       DefaultValuedAttr<StrAttr, "\"constant\"">:$mode,
                       DefaultValuedAttr<F64Attr, "0.0">:$val,
                       StrAttr:$name);
  let results = (outs Top_Tensor:$output);
}

def Top_InterpOp : Top_Op<"Interp"> {
  let summary = "Resizes the last one or two axes (ONNX Resize)";
  let description = [{
    The output shape is the result type (the axes before the last two are
    copied from the input). `mode` is "nearest", "linear" or "cubic";
    `coord_mode` maps an output coordinate to the input as ONNX's
    coordinate_transformation_mode ("half_pixel", "pytorch_half_pixel",
    "align_corners", "asymmetric", "tf_half_pixel_for_nn"); `nearest_mode`
    rounds it in nearest mode. `scale_h` / `scale_w` are the scales used in
    that mapping; 0 means output size / input size. Cubic mode uses ONNX's
    `cubic_coeff_a` and `exclude_outside`.

    ```mlir
    %1 = "top.Interp"(%0) {name = "up", mode = "nearest", coord_mode = "asymmetric",
           nearest_mode = "floor", scale_h = 2.0 : f64, scale_w = 2.0 : f64}
         : (tensor<1x8x10x10xf32>) -> tensor<1x8x20x20xf32>
    ```
  }];
  let arguments = (ins Top_Tensor:$input,
                       DefaultValuedAttr<StrAttr, "\"nearest\"">:$mode,
                       DefaultValuedAttr<StrAttr, "\"half_pixel\"">:$coord_mode,
                       DefaultValuedAttr<StrAttr, "\"round_prefer_floor\"">:$nearest_mode,
                       DefaultValuedAttr<F64Attr, "0.0">:$scale_h,
                       DefaultValuedAttr<F64Attr, "0.0">:$scale_w,
                       DefaultValuedAttr<F64Attr, "-0.75">:$cubic_coeff_a,
                       DefaultValuedAttr<BoolAttr, "false">:$exclude_outside,
                       StrAttr:$name);
  let results = (outs Top_Tensor:$output);
}

def Top_ReduceOp : Top_Op<"Reduce"> {
  let summary = "Mean, max, min or sum over axes";
  let description = [{
    `mode` is "ReduceMean", "ReduceMax", "ReduceMin" or "ReduceSum";
    `axes` (negative count from the end; empty means all axes) are reduced
    and kept as size 1 when `keepdims`.

    ```mlir
    %1 = "top.Reduce"(%0) {name = "m", mode = "ReduceMean", axes = [2, 3], keepdims = true}
         : (tensor<1x64x7x7xf32>) -> tensor<1x64x1x1xf32>
    ```
  }];
  let arguments = (ins Top_Tensor:$input, StrAttr:$mode, I64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims,
                       StrAttr:$name);
  let results = (outs Top_Tensor:$output);
}

def Top_GatherOp : Top_Op<"Gather"> {
  let summary = "Takes entries along an axis by index";
  let description = [{
    ONNX Gather: output shape is x.shape[:axis] + indices.shape +
    x.shape[axis+1:]. `indices` holds integers as f32; negative ones count
    from the end.

    ```mlir
    %2 = "top.Gather"(%0, %1) {name = "g", axis = 0 : i64}
         : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
    ```
  }];
  let arguments = (ins Top_Tensor:$input, Top_Tensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis, StrAttr:$name);
  let results = (outs Top_Tensor:$output);
}

def Top_ExpandOp : Top_Op<"Expand"> {
  let summary = "Broadcasts to a shape";
  let description = [{
    ONNX Expand: the output shape is the numpy broadcast of the input shape
    and `shape`.

    ```mlir
    %1 = "top.Expand"(%0) {name = "e", shape = [2, 3, 4]} : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
    ```
  }];
  let arguments = (ins Top_Tensor:$input, I64ArrayAttr:$shape, StrAttr:$name);
  let results = (outs Top_Tensor:$output);
}

def Top_TileOp : Top_Op<"Tile"> {
  let summary = "Repeats a tensor along every axis";
  let description = [{
    Axis i is repeated `repeats[i]` times.

    ```mlir
    %1 = "top.Tile"(%0) {name = "t", repeats = [1, 2]} : (tensor<2x3xf32>) -> tensor<2x6xf32>
    ```
  }];
  let arguments = (ins Top_Tensor:$input, I64ArrayAttr:$repeats, StrAttr:$name);
  let results = (outs Top_Tensor:$output);
}

#endif // TPUC_DIALECT_TOP_IR_TOPSHAPEOPS
