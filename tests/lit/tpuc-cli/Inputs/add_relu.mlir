module @add_relu attributes {top.weight_file = "add_relu_weights.npz", top.chip = "ALL", top.state = "TOP_F32"} {
  func.func @main(%arg0: tensor<1x4xf32>) -> tensor<1x4xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x4xf32>) -> tensor<1x4xf32>
    %1 = "top.Weight"() {name = "w"} : () -> tensor<1x4xf32>
    %2 = "top.Add"(%0, %1) {name = "sum"} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
    %3 = "top.Relu"(%2) {name = "y"} : (tensor<1x4xf32>) -> tensor<1x4xf32>
    return %3 : tensor<1x4xf32>
  }
}
