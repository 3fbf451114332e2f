module @ovf attributes {top.chip = "ALL", top.state = "TOP_F32", top.weight_file = "qtable_top_weights.npz"} {
  func.func @main(%arg0: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
    %n = "top.None"() : () -> none
    %x = "top.Input"(%arg0) {name = "x"} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
    %xp = "top.Permute"(%x) {name = "xp", order = [0, 1, 3, 2]} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
    %k = "top.Weight"() {name = "k"} : () -> tensor<1x4x1x1xf32>
    %big = "top.Mul"(%xp, %k) {name = "big"} : (tensor<1x4x4x4xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x4x4xf32>
    %w = "top.Weight"() {name = "w"} : () -> tensor<4x4x1x1xf32>
    %c = "top.Conv"(%big, %w, %n) {name = "c", kernel_shape = [1, 1], strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1} : (tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32>, none) -> tensor<1x4x4x4xf32>
    %g = "top.Abs"(%c) {name = "g"} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
    %k2 = "top.Weight"() {name = "k2"} : () -> tensor<1x1x1x1xf32>
    %big2 = "top.Mul"(%g, %k2) {name = "big2"} : (tensor<1x4x4x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x4x4x4xf32>
    %k3 = "top.Weight"() {name = "k3"} : () -> tensor<1x1x1x1xf32>
    %sm = "top.Mul"(%big2, %k3) {name = "sm"} : (tensor<1x4x4x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x4x4x4xf32>
    %y = "top.Relu"(%sm) {name = "y"} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
    %inf = "top.Weight"() {name = "inf"} : () -> tensor<1x1x1x1xf32>
    %out = "top.Min"(%y, %inf) {name = "out"} : (tensor<1x4x4x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x4x4x4xf32>
    return %out : tensor<1x4x4x4xf32>
  }
}
