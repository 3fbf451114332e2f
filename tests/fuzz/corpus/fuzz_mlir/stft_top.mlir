module @stft attributes {top.chip = "ALL", top.state = "TOP_F32", top.weight_file = "stft_top_weights.npz"} {
  func.func @main(%arg0: tensor<1x2x100xf32>) -> tensor<1x6x4xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x2x100xf32>) -> tensor<1x2x100xf32>
    %1 = "top.Weight"() {name = "w"} : () -> tensor<6x2x40xf32>
    %2 = "top.Weight"() {name = "b"} : () -> tensor<6xf32>
    %3 = "top.Conv"(%0, %1, %2) {name = "y", kernel_shape = [40], strides = [20], pads = [5, 0], dilations = [1], group = 1} : (tensor<1x2x100xf32>, tensor<6x2x40xf32>, tensor<6xf32>) -> tensor<1x6x4xf32>
    return %3 : tensor<1x6x4xf32>
  }
}
