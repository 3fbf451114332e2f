//===- TpuNNOps.td - Convolution, matmul, pooling, norms -----*- tablegen -*-===//
//
// The cube and pooling ops. Spatial attributes are always 2-D (a 1-D op
// from top becomes H = 1); pads are [top, left, bottom, right].
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_DIALECT_TPU_IR_TPUNNOPS
#define TPUC_DIALECT_TPU_IR_TPUNNOPS

include "tpuc/Dialect/Tpu/IR/TpuBase.td"

def Tpu_Conv2DOp : Tpu_Op<"Conv2D", [Tpu_BM1684XCodegen]> {
  let summary = "2-D grouped convolution on the cube";
  let description = [{
    Input (N, IC, H, W) (or (N, IC, W), read as H = 1), filter
    (OC, IC / group, KH, KW) of the input's element type, optional bias of
    OC f32 values (the cube adds it in f32). `group` = IC = OC is a
    depthwise convolution. Products are accumulated in f32 and the result
    is rounded once to the output's element type (after the relu).

    ```mlir
    %3 = "tpu.Conv2D"(%0, %1, %2) {name = "conv1", kernel_shape = [3, 3], strides = [1, 1],
           pads = [1, 1, 1, 1], dilations = [1, 1], group = 1, do_relu = true}
         : (tensor<1x3x32x32xf16>, tensor<16x3x3x3xf16>, tensor<16xf32>) -> tensor<1x16x32x32xf16>
    ```
  }];
  let arguments = (ins Tpu_Tensor:$input, Tpu_Tensor:$filter,
                       Tpu_TensorOrNone:$bias,
                       I64ArrayAttr:$kernel_shape, I64ArrayAttr:$strides,
                       I64ArrayAttr:$pads, I64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group,
                       Tpu_DoRelu:$do_relu, Tpu_ReluLimit:$relu_limit,
                       StrAttr:$name);
  let results = (outs Tpu_Tensor:$output);
}

def Tpu_Deconv2DOp : Tpu_Op<"Deconv2D", [Tpu_BM1684XCodegen]> {
  let summary = "2-D grouped transposed convolution";
  let description = [{
    ONNX ConvTranspose on (N, IC, H, W) (or (N, IC, W), H = 1) with the
    filter in ONNX order (IC, OC / group, KH, KW), of the input's element
    type, and an optional f32 bias of OC values. The output extent per axis
    is (in - 1) * stride + dilation * (k - 1) + 1 + output_padding - pad
    begin - pad end; `pads` is [top, left, bottom, right], `output_padding`
    [h, w]. The chip runs it as a convolution of the zero-inserted input
    with the rotated filter; accumulation in f32, one rounding.

    ```mlir
    %3 = "tpu.Deconv2D"(%0, %1, %2) {name = "up", kernel_shape = [2, 2], strides = [2, 2],
           pads = [0, 0, 0, 0], dilations = [1, 1], output_padding = [0, 0], group = 1}
         : (tensor<1x16x8x8xf32>, tensor<16x8x2x2xf32>, tensor<8xf32>) -> tensor<1x8x16x16xf32>
    ```
  }];
  let arguments = (ins Tpu_Tensor:$input, Tpu_Tensor:$filter,
                       Tpu_TensorOrNone:$bias,
                       I64ArrayAttr:$kernel_shape, I64ArrayAttr:$strides,
                       I64ArrayAttr:$pads, I64ArrayAttr:$dilations,
                       I64ArrayAttr:$output_padding,
                       DefaultValuedAttr<I64Attr, "1">:$group,
                       Tpu_DoRelu:$do_relu, Tpu_ReluLimit:$relu_limit,
                       StrAttr:$name);
  let results = (outs Tpu_Tensor:$output);
}

def Tpu_MatMulOp : Tpu_Op<"MatMul", [Tpu_BM1684XCodegen]> {
  let summary = "Batched matrix product with optional bias and relu";
  let description = [{
    numpy matmul of `input` and `right` (its last two axes swapped first
    when `right_transpose`), plus an optional f32 `bias` broadcast over the
    last axis, relu when `do_relu`. Accumulation in f32, one rounding of
    the result.

    ```mlir
    %3 = "tpu.MatMul"(%0, %1, %2) {name = "fc", right_transpose = false}
         : (tensor<1x64xf32>, tensor<64x10xf32>, tensor<10xf32>) -> tensor<1x10xf32>
    ```
  }];
  let arguments = (ins Tpu_Tensor:$input, Tpu_Tensor:$right,
                       Tpu_TensorOrNone:$bias,
                       DefaultValuedAttr<BoolAttr, "false">:$right_transpose,
                       Tpu_DoRelu:$do_relu, Tpu_ReluLimit:$relu_limit,
                       StrAttr:$name);
  let results = (outs Tpu_Tensor:$output);
}

def Tpu_Pool2DOp : Tpu_Op<"Pool2D", [Tpu_BM1684XCodegen]> {
  let summary = "2-D max or average pooling";
  let description = [{
    `pool_mode` is "max" (padding never wins) or "avg" (divisor: the real
    elements under the window, or the padded window clipped to the padded
    input when `count_include_pad`). Global pools have kernel = H x W.

    ```mlir
    %1 = "tpu.Pool2D"(%0) {name = "pool", pool_mode = "max", kernel_shape = [2, 2],
           strides = [2, 2], pads = [0, 0, 0, 0]}
         : (tensor<1x16x32x32xf32>) -> tensor<1x16x16x16xf32>
    ```
  }];
  let arguments = (ins Tpu_Tensor:$input, StrAttr:$pool_mode,
                       I64ArrayAttr:$kernel_shape, I64ArrayAttr:$strides,
                       I64ArrayAttr:$pads,
                       DefaultValuedAttr<BoolAttr, "false">:$count_include_pad,
                       Tpu_DoRelu:$do_relu, Tpu_ReluLimit:$relu_limit,
                       StrAttr:$name);
  let results = (outs Tpu_Tensor:$output);
}

def Tpu_Pool3DOp : Tpu_Op<"Pool3D", [Tpu_BM1684XCodegen]> {
  let summary = "3-D max or average pooling";
  let description = [{
    ONNX MaxPool / AveragePool on (N, C, D, H, W). `kernel_shape` and
    `strides` are (d, h, w); `pads` are the begins (front, top, left), then
    the ends (back, bottom, right). `pool_mode` "max": padding never wins;
    "avg": the divisor is kd * kh * kw with `count_include_pad`, else the
    number of real elements under the window.

    Evaluated as the BM1684X kernel does (backend pool3d): every depth
    slice is pooled over (H, W) into f32 (the window's maximum, or its sum
    in (ky, kx) order), the depth taps of each output are combined in order
    (max, or an f32 sum), an average divides that sum once by the divisor;
    then the relu, and one rounding to the result type.

    ```mlir
    %1 = "tpu.Pool3D"(%0) {name = "pool", pool_mode = "avg", kernel_shape = [2, 3, 3],
           strides = [2, 2, 2], pads = [0, 1, 1, 0, 1, 1]}
         : (tensor<1x4x8x8x8xf32>) -> tensor<1x4x4x4x4xf32>
    ```
  }];
  let arguments = (ins Tpu_Tensor:$input, StrAttr:$pool_mode,
                       I64ArrayAttr:$kernel_shape, I64ArrayAttr:$strides,
                       I64ArrayAttr:$pads,
                       DefaultValuedAttr<BoolAttr, "false">:$count_include_pad,
                       Tpu_DoRelu:$do_relu, Tpu_ReluLimit:$relu_limit,
                       StrAttr:$name);
  let results = (outs Tpu_Tensor:$output);
}

def Tpu_SoftmaxOp : Tpu_Op<"Softmax", [Tpu_BM1684XCodegen]> {
  let summary = "Softmax (or log-softmax) along one axis";
  let description = [{
    exp(x - max) / sum(exp(x - max)) along `axis`; `log` gives
    x - max - log(sum). Computed in f32, rounded once.

    ```mlir
    %1 = "tpu.Softmax"(%0) {name = "prob", axis = 1 : i64} : (tensor<1x10xf32>) -> tensor<1x10xf32>
    ```
  }];
  let arguments = (ins Tpu_Tensor:$input, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$log,
                       StrAttr:$name);
  let results = (outs Tpu_Tensor:$output);
}

def Tpu_LayerNormOp : Tpu_Op<"LayerNorm", [Tpu_BM1684XCodegen]> {
  let summary = "Layer normalisation over the trailing axes";
  let description = [{
    Mean and biased variance over axes [axis, rank), then the optional
    f32 `scale` and `bias` (shape of those axes). Computed in f32, rounded
    once.

    ```mlir
    %3 = "tpu.LayerNorm"(%0, %1, %2) {name = "ln", axis = 2 : i64, epsilon = 1.0e-05 : f64}
         : (tensor<1x40x120xf32>, tensor<120xf32>, tensor<120xf32>) -> tensor<1x40x120xf32>
    ```
  }];
  let arguments = (ins Tpu_Tensor:$input, Tpu_TensorOrNone:$scale,
                       Tpu_TensorOrNone:$bias, I64Attr:$axis,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon,
                       StrAttr:$name);
  let results = (outs Tpu_Tensor:$output);
}

#endif // TPUC_DIALECT_TPU_IR_TPUNNOPS
