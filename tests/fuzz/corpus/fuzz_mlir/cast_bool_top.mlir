module @castbool attributes {top.chip = "ALL", top.state = "TOP_F32"} {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<4xf32>) -> tensor<4xf32>
    %1 = "top.Cast"(%0) {name = "c", to = "bool"} : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
}
