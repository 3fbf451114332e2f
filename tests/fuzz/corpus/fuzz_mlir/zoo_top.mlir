module @zoo attributes {top.chip = "ALL", top.state = "TOP_F32", top.weight_file = "zoo_top_weights.npz"} {
  func.func @main(%arg0: tensor<1x8x6x6xf32>) -> tensor<1x16x4xf32> {
    %n = "top.None"() : () -> none
    %x = "top.Input"(%arg0) {name = "x"} : (tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
    %p0 = "top.Permute"(%x) {name = "nhwc", order = [0, 2, 3, 1]} : (tensor<1x8x6x6xf32>) -> tensor<1x6x6x8xf32>
    %lns = "top.Weight"() {name = "ln_scale"} : () -> tensor<8xf32>
    %lnb = "top.Weight"() {name = "ln_bias"} : () -> tensor<8xf32>
    %ln = "top.LayerNorm"(%p0, %lns, %lnb) {name = "ln", axis = -1 : i64, epsilon = 1.0e-05 : f64} : (tensor<1x6x6x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x6x6x8xf32>
    %p1 = "top.Permute"(%ln) {name = "nchw", order = [0, 3, 1, 2]} : (tensor<1x6x6x8xf32>) -> tensor<1x8x6x6xf32>
    %slope = "top.Weight"() {name = "slope"} : () -> tensor<8x1x1xf32>
    %pr = "top.PRelu"(%p1, %slope) {name = "prelu"} : (tensor<1x8x6x6xf32>, tensor<8x1x1xf32>) -> tensor<1x8x6x6xf32>
    %pad = "top.Pad"(%pr) {name = "pad", paddings = [0, 0, 1, 1, 0, 0, 1, 1], mode = "constant", val = 0.5 : f64} : (tensor<1x8x6x6xf32>) -> tensor<1x8x8x8xf32>
    %up = "top.Interp"(%pad) {name = "up", mode = "nearest", coord_mode = "asymmetric", nearest_mode = "floor", scale_h = 2.0 : f64, scale_w = 2.0 : f64} : (tensor<1x8x8x8xf32>) -> tensor<1x8x16x16xf32>
    %mp = "top.MaxPool"(%up) {name = "mp", kernel_shape = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0]} : (tensor<1x8x16x16xf32>) -> tensor<1x8x8x8xf32>
    %hs = "top.HardSwish"(%mp) {name = "hswish"} : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
    %rm = "top.Reduce"(%hs) {name = "se_mean", mode = "ReduceMean", axes = [2, 3], keepdims = true} : (tensor<1x8x8x8xf32>) -> tensor<1x8x1x1xf32>
    %sg = "top.Sigmoid"(%rm) {name = "se_gate"} : (tensor<1x8x1x1xf32>) -> tensor<1x8x1x1xf32>
    %se = "top.Mul"(%hs, %sg) {name = "se"} : (tensor<1x8x8x8xf32>, tensor<1x8x1x1xf32>) -> tensor<1x8x8x8xf32>
    %s0 = "top.Slice"(%se) {name = "even", offset = [0, 0, 0, 0], steps = [1, 1, 2, 2], ends = [1, 8, 8, 8]} : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x4xf32>
    %s1 = "top.Slice"(%se) {name = "odd", offset = [0, 0, 1, 1], steps = [1, 1, 2, 2], ends = [1, 8, 8, 8]} : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x4xf32>
    %th = "top.Tanh"(%s1) {name = "tanh"} : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
    %cat = "top.Concat"(%s0, %th) {name = "cat", axis = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x16x4x4xf32>
    %rs = "top.Reshape"(%cat) {name = "flat", shape = [1, 16, 16]} : (tensor<1x16x4x4xf32>) -> tensor<1x16x16xf32>
    %idx = "top.Weight"() {name = "idx"} : () -> tensor<3xf32>
    %g = "top.Gather"(%rs, %idx) {name = "gather", axis = 2 : i64} : (tensor<1x16x16xf32>, tensor<3xf32>) -> tensor<1x16x3xf32>
    %t = "top.Tile"(%g) {name = "tile", repeats = [1, 1, 2]} : (tensor<1x16x3xf32>) -> tensor<1x16x6xf32>
    %k = "top.Weight"() {name = "k"} : () -> tensor<f32>
    %dv = "top.Div"(%t, %k) {name = "div"} : (tensor<1x16x6xf32>, tensor<f32>) -> tensor<1x16x6xf32>
    %ng = "top.Neg"(%dv) {name = "neg"} : (tensor<1x16x6xf32>) -> tensor<1x16x6xf32>
    %cond = "top.Weight"() {name = "cond"} : () -> tensor<1x1x6xf32>
    %wh = "top.Where"(%cond, %dv, %ng) {name = "where"} : (tensor<1x1x6xf32>, tensor<1x16x6xf32>, tensor<1x16x6xf32>) -> tensor<1x16x6xf32>
    %mx = "top.Max"(%wh, %dv) {name = "max"} : (tensor<1x16x6xf32>, tensor<1x16x6xf32>) -> tensor<1x16x6xf32>
    %fcw = "top.Weight"() {name = "fc_w"} : () -> tensor<6x4xf32>
    %fcb = "top.Weight"() {name = "fc_b"} : () -> tensor<4xf32>
    %fc = "top.MatMul"(%mx, %fcw, %fcb) {name = "fc"} : (tensor<1x16x6xf32>, tensor<6x4xf32>, tensor<4xf32>) -> tensor<1x16x4xf32>
    %ge = "top.Gelu"(%fc) {name = "gelu"} : (tensor<1x16x4xf32>) -> tensor<1x16x4xf32>
    %sm = "top.Softmax"(%ge) {name = "prob", axis = -1 : i64} : (tensor<1x16x4xf32>) -> tensor<1x16x4xf32>
    return %sm : tensor<1x16x4xf32>
  }
}
