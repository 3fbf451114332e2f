module @add2 attributes {top.weight_file = "add2_top_weights.npz", top.chip = "ALL", top.state = "TOP_F32"} {
  func.func @main(%arg0: tensor<1x4xf32>, %arg1: tensor<1x4xf32>) -> tensor<1x4xf32> {
    %0 = "top.Input"(%arg0) {name = "a"} : (tensor<1x4xf32>) -> tensor<1x4xf32>
    %1 = "top.Input"(%arg1) {name = "b"} : (tensor<1x4xf32>) -> tensor<1x4xf32>
    %2 = "top.Add"(%0, %1) {name = "sum"} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
    return %2 : tensor<1x4xf32>
  }
}
