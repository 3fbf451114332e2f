// Ops a float mode cannot lower: the error names the op and the mode.
// RUN: tpuc-opt %s --split-input-file --convert-top-to-tpu=mode=F16 --verify-diagnostics

module attributes {top.chip = "ALL", top.state = "TOP_F32"} {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<4xf32>) -> tensor<4xf32>
    // expected-error @+1 {{top.Cast 'c' cannot be lowered to F16: a cast to 'bool' has no float-mode kernel}}
    %1 = "top.Cast"(%0) {name = "c", to = "bool"} : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
}

// -----

module attributes {top.chip = "ALL", top.state = "TOP_F32"} {
  func.func @main(%arg0: tensor<1x4x8x8xf32>, %arg1: tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32> {
    %n = "top.None"() : () -> none
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %1 = "top.Input"(%arg1) {name = "w"} : (tensor<8x4x3x3xf32>) -> tensor<8x4x3x3xf32>
    // expected-error @+1 {{top.Conv 'c' cannot be lowered to F16: the filter must be a weight}}
    %2 = "top.Conv"(%0, %1, %n) {name = "c", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1]} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>, none) -> tensor<1x8x8x8xf32>
    return %2 : tensor<1x8x8x8xf32>
  }
}

// -----

module attributes {top.chip = "ALL", top.state = "TOP_F32"} {
  func.func @main(%arg0: tensor<1x4x8x8x8xf32>) -> tensor<1x4x4x3x4xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x4x8x8x8xf32>) -> tensor<1x4x8x8x8xf32>
    // expected-error @+1 {{top.MaxPool 'p' cannot be lowered to F16: dilated pooling is not supported}}
    %1 = "top.MaxPool"(%0) {name = "p", kernel_shape = [2, 2, 2], strides = [2, 2, 2], pads = [0, 0, 0, 0, 0, 0], dilations = [1, 2, 1]} : (tensor<1x4x8x8x8xf32>) -> tensor<1x4x4x3x4xf32>
    return %1 : tensor<1x4x4x3x4xf32>
  }
}

// -----

module attributes {top.chip = "ALL", top.state = "TOP_F32"} {
  func.func @main(%arg0: tensor<1x4x8x8x8xf32>) -> tensor<1x4x5x4x4xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x4x8x8x8xf32>) -> tensor<1x4x8x8x8xf32>
    // expected-error @+1 {{top.AvgPool 'p' cannot be lowered to F16: pads must be smaller than the kernel}}
    %1 = "top.AvgPool"(%0) {name = "p", kernel_shape = [2, 2, 2], strides = [2, 2, 2], pads = [2, 0, 0, 0, 0, 0]} : (tensor<1x4x8x8x8xf32>) -> tensor<1x4x5x4x4xf32>
    return %1 : tensor<1x4x5x4x4xf32>
  }
}
