module @rounding attributes {top.chip = "BM1684X", top.state = "TPU_LOWERED", tpu.mode = "F16"} {
  func.func @main(%arg0: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<4xf32>) -> tensor<4xf32>
    %1 = "tpu.Cast"(%0) {name = "h"} : (tensor<4xf32>) -> tensor<4xf16>
    %2 = "tpu.Cast"(%1) {name = "h32"} : (tensor<4xf16>) -> tensor<4xf32>
    %3 = "tpu.Add"(%1, %1) {name = "twice"} : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
    %4 = "tpu.Cast"(%3) {name = "twice32"} : (tensor<4xf16>) -> tensor<4xf32>
    %5 = "tpu.Active"(%1) {name = "e", mode = "exp"} : (tensor<4xf16>) -> tensor<4xf16>
    %6 = "tpu.Cast"(%5) {name = "e32"} : (tensor<4xf16>) -> tensor<4xf32>
    %7 = "tpu.Cast"(%0) {name = "b"} : (tensor<4xf32>) -> tensor<4xbf16>
    %8 = "tpu.Cast"(%7) {name = "b32"} : (tensor<4xbf16>) -> tensor<4xf32>
    return %2, %4, %6, %8 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}
