//===- TopNNOps.td - Convolution, matmul, pooling, norms -----*- tablegen -*-===//
//
// The compute-heavy ops: convolutions, matrix products, pooling,
// normalisations and softmax. Attributes follow ONNX conventions (pads
// list all begins, then all ends).
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_DIALECT_TOP_IR_TOPNNOPS
#define TPUC_DIALECT_TOP_IR_TOPNNOPS

include "tpuc/Dialect/Top/IR/TopBase.td"

def Top_ConvOp : Top_Op<"Conv"> {
  let summary = "1-D or 2-D grouped convolution";
  let description = [{
    ONNX Conv on (N, C, W) or (N, C, H, W) input with filter
    (OC, C / group, kW) or (OC, C / group, kH, kW) and an optional bias of
    OC values. `pads` holds the begin pads of every spatial axis, then the
    end pads. With `do_relu` the result is max(x, 0), clamped to
    `relu_limit` when that is positive.

    ```mlir
    %3 = "top.Conv"(%1, %2, %0) {name = "conv1", kernel_shape = [7, 7], strides = [2, 2],
           pads = [3, 3, 3, 3], dilations = [1, 1], group = 1, do_relu = false}
         : (tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32>, none) -> tensor<1x64x112x112xf32>
    ```
  }];
  let arguments = (ins Top_Tensor:$input, Top_Tensor:$filter,
                       Top_TensorOrNone:$bias,
                       I64ArrayAttr:$kernel_shape, I64ArrayAttr:$strides,
                       I64ArrayAttr:$pads, I64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group,
                       Top_DoRelu:$do_relu, Top_ReluLimit:$relu_limit,
                       StrAttr:$name);
  let results = (outs Top_Tensor:$output);
}

def Top_ConvTransposeOp : Top_Op<"ConvTranspose"> {
  let summary = "1-D or 2-D grouped transposed convolution";
  let description = [{
    ONNX ConvTranspose with filter (C, OC / group, kH, kW) and an optional
    bias of OC values. The output size per axis is
    (in - 1) * stride + dilation * (k - 1) + 1 + output_padding - pad_begin
    - pad_end (the importer turns `output_shape` and `auto_pad` into pads).

    ```mlir
    %4 = "top.ConvTranspose"(%1, %2, %3) {name = "up", kernel_shape = [2, 2], strides = [2, 2],
           pads = [0, 0, 0, 0], dilations = [1, 1], group = 1, output_padding = [0, 0]}
         : (tensor<1x64x20x20xf32>, tensor<64x32x2x2xf32>, tensor<32xf32>) -> tensor<1x32x40x40xf32>
    ```
  }];
  let arguments = (ins Top_Tensor:$input, Top_Tensor:$filter,
                       Top_TensorOrNone:$bias,
                       I64ArrayAttr:$kernel_shape, I64ArrayAttr:$strides,
                       I64ArrayAttr:$pads, I64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group,
                       DefaultValuedAttr<I64ArrayAttr, "{}">:$output_padding,
                       Top_DoRelu:$do_relu, Top_ReluLimit:$relu_limit,
                       StrAttr:$name);
  let results = (outs Top_Tensor:$output);
}

def Top_MatMulOp : Top_Op<"MatMul"> {
  let summary = "Batched matrix product with optional bias";
  let description = [{
    numpy matmul: the last two axes multiply, leading axes broadcast; 1-D
    operands are promoted as in numpy. With `right_transpose` the last two
    axes of `right` are swapped first. `bias` is added with numpy
    broadcasting; `do_relu` / `relu_limit` as for Conv. ONNX Gemm imports as
    MatMul with alpha and beta folded into the weights.

    ```mlir
    %3 = "top.MatMul"(%1, %2, %0) {name = "fc", right_transpose = true}
         : (tensor<1x512xf32>, tensor<1000x512xf32>, none) -> tensor<1x1000xf32>
    ```
  }];
  let arguments = (ins Top_Tensor:$input, Top_Tensor:$right,
                       Top_TensorOrNone:$bias,
                       Top_DoRelu:$do_relu, Top_ReluLimit:$relu_limit,
                       DefaultValuedAttr<BoolAttr, "false">:$right_transpose,
                       StrAttr:$name);
  let results = (outs Top_Tensor:$output);
}

class Top_PoolOp<string mnemonic> : Top_Op<mnemonic> {
  let arguments = (ins Top_Tensor:$input,
                       I64ArrayAttr:$kernel_shape, I64ArrayAttr:$strides,
                       I64ArrayAttr:$pads,
                       DefaultValuedAttr<BoolAttr, "false">:$count_include_pad,
                       DefaultValuedAttr<I64ArrayAttr, "{}">:$dilations,
                       Top_DoRelu:$do_relu, Top_ReluLimit:$relu_limit,
                       StrAttr:$name);
  let results = (outs Top_Tensor:$output);
}

def Top_MaxPoolOp : Top_PoolOp<"MaxPool"> {
  let summary = "1-D, 2-D or 3-D max pooling";
  let description = [{
    ONNX MaxPool: padded positions never win. `dilations` (default all 1)
    spaces the window taps; ceil_mode is folded into extra end pads by the
    importer, and a global pool is a pool whose kernel is the spatial size.

    ```mlir
    %2 = "top.MaxPool"(%1) {name = "pool1", kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]}
         : (tensor<1x64x112x112xf32>) -> tensor<1x64x56x56xf32>
    ```
  }];
}

def Top_AvgPoolOp : Top_PoolOp<"AvgPool"> {
  let summary = "1-D, 2-D or 3-D average pooling";
  let description = [{
    ONNX AveragePool: with `count_include_pad` the divisor is the window
    size clipped to the padded input, else the number of real input
    elements under the window.

    ```mlir
    %2 = "top.AvgPool"(%1) {name = "gap", kernel_shape = [7, 7], strides = [1, 1], pads = [0, 0, 0, 0]}
         : (tensor<1x512x7x7xf32>) -> tensor<1x512x1x1xf32>
    ```
  }];
}

def Top_BatchNormOp : Top_Op<"BatchNorm"> {
  let summary = "Inference batch normalisation over axis 1";
  let description = [{
    y = (x - mean) / sqrt(variance + epsilon) * scale + bias per channel
    (axis 1); absent scale is 1, absent bias 0. With `do_relu` the result
    is max(y, 0), clamped to `relu_limit` when that is positive (a Relu
    after a BatchNorm that no conv absorbs fuses here).

    ```mlir
    %6 = "top.BatchNorm"(%1, %2, %3, %4, %5) {name = "bn1", epsilon = 1.0e-05 : f64}
         : (tensor<1x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
         -> tensor<1x64x56x56xf32>
    ```
  }];
  let arguments = (ins Top_Tensor:$input, Top_Tensor:$mean,
                       Top_Tensor:$variance, Top_TensorOrNone:$scale,
                       Top_TensorOrNone:$bias,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon,
                       Top_DoRelu:$do_relu, Top_ReluLimit:$relu_limit,
                       StrAttr:$name);
  let results = (outs Top_Tensor:$output);
  let hasCanonicalizer = 1;
}

def Top_LayerNormOp : Top_Op<"LayerNorm"> {
  let summary = "Layer normalisation over the trailing axes";
  let description = [{
    ONNX LayerNormalization: mean and (biased) variance over axes
    [axis, rank); scale and bias have the shape of those axes (or
    broadcast to it).

    ```mlir
    %4 = "top.LayerNorm"(%1, %2, %3) {name = "ln", axis = -1 : i64, epsilon = 1.0e-05 : f64}
         : (tensor<1x40x120xf32>, tensor<120xf32>, tensor<120xf32>) -> tensor<1x40x120xf32>
    ```
  }];
  let arguments = (ins Top_Tensor:$input, Top_TensorOrNone:$scale,
                       Top_TensorOrNone:$bias,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon,
                       StrAttr:$name);
  let results = (outs Top_Tensor:$output);
}

def Top_SoftmaxOp : Top_Op<"Softmax"> {
  let summary = "Softmax (or log-softmax) along one axis";
  let description = [{
    exp(x - max) / sum(exp(x - max)) along `axis` (ONNX opset 13
    semantics); with `log` the logarithm of that, computed as
    x - max - log(sum).

    ```mlir
    %2 = "top.Softmax"(%1) {name = "prob", axis = 1 : i64}
         : (tensor<1x1000xf32>) -> tensor<1x1000xf32>
    ```
  }];
  let arguments = (ins Top_Tensor:$input,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$log,
                       StrAttr:$name);
  let results = (outs Top_Tensor:$output);
}

#endif // TPUC_DIALECT_TOP_IR_TOPNNOPS
