module @ops attributes {top.chip = "ALL", top.state = "TOP_F32"} {
  func.func @main(%arg0: tensor<1x4x8x8xf32>, %arg1: tensor<1x4x8x8xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x8x8x8xf32>, tensor<1x4x64xf32>) {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %1 = "top.Input"(%arg1) {name = "y"} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %2 = "top.Mul"(%0, %1) {name = "mul"} : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %3 = "top.Relu"(%2) {name = "relu", relu_limit = 6.0 : f64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %4 = "top.MaxPool"(%3) {name = "mp", kernel_shape = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0]} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
    %5 = "top.Sigmoid"(%1) {name = "sig"} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %6 = "top.Concat"(%3, %5) {name = "cat", axis = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x8x8x8xf32>
    %7 = "top.Reshape"(%5) {name = "flat", shape = [1, 4, 64]} : (tensor<1x4x8x8xf32>) -> tensor<1x4x64xf32>
    %8 = "top.Softmax"(%7) {name = "sm", axis = 2 : i64} : (tensor<1x4x64xf32>) -> tensor<1x4x64xf32>
    return %4, %6, %8 : tensor<1x4x4x4xf32>, tensor<1x8x8x8xf32>, tensor<1x4x64xf32>
  }
}
