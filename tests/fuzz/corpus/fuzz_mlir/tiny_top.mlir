module @tiny attributes {top.chip = "ALL", top.state = "TOP_F32", top.weight_file = "tiny_top_weights.npz"} {
  func.func @main(%arg0: tensor<1x4x8x8xf32>) -> tensor<1x8x4x4xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %1 = "top.Weight"() {name = "w"} : () -> tensor<8x4x3x3xf32>
    %2 = "top.Weight"() {name = "b"} : () -> tensor<8xf32>
    %3 = "top.Conv"(%0, %1, %2) {name = "c", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1, do_relu = true} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
    %4 = "top.MaxPool"(%3) {name = "y", kernel_shape = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0]} : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x4xf32>
    return %4 : tensor<1x8x4x4xf32>
  }
}
