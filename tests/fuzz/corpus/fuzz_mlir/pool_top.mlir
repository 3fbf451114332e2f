module @pool attributes {top.chip = "ALL", top.state = "TOP_F32"} {
  func.func @main(%arg0: tensor<1x4x8x8xf32>, %arg1: tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %1 = "top.Input"(%arg1) {name = "y"} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %2 = "top.Mul"(%0, %1) {name = "mul"} : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %3 = "top.Relu"(%2) {name = "relu", relu_limit = 6.0 : f64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %4 = "top.MaxPool"(%3) {name = "mp", kernel_shape = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0]} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
    return %4 : tensor<1x4x4x4xf32>
  }
}
