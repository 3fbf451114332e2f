// Every top op parses, verifies and prints back in the generic form of the
// module files `tpuc transform` writes (attributes in the dictionary).
// RUN: tpuc-opt %s | tpuc-opt | FileCheck %s

// CHECK-LABEL: module @m attributes {top.chip = "ALL", top.state = "TOP_F32", top.weight_file = "m_top_weights.npz"}
module @m attributes {top.weight_file = "m_top_weights.npz", top.chip = "ALL", top.state = "TOP_F32"} {
  // CHECK-LABEL: func.func @nn
  func.func @nn(%arg0: tensor<1x3x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x16x16xf32>, tensor<1x4x2xf32>, tensor<1x3x8xf32>) {
    // CHECK: %[[N:.*]] = "top.None"() : () -> none
    %0 = "top.None"() : () -> none
    // CHECK: "top.Input"(%arg0) {name = "x"}
    %1 = "top.Input"(%arg0) {name = "x"} : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
    // CHECK: "top.Weight"() {name = "w"} : () -> tensor<4x3x3x3xf32>
    %2 = "top.Weight"() {name = "w"} : () -> tensor<4x3x3x3xf32>
    %3 = "top.Weight"() {name = "b"} : () -> tensor<4xf32>
    // CHECK: "top.Conv"({{.*}}, %[[N]]) {dilations = [1, 1], do_relu = false, group = 1 : i64, kernel_shape = [3, 3], name = "conv", pads = [1, 1, 1, 1], relu_limit = -1.000000e+00 : f64, strides = [1, 1]}
    %4 = "top.Conv"(%1, %2, %0) {name = "conv", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1, do_relu = false} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x8x8xf32>
    // CHECK: "top.MaxPool"
    %5 = "top.MaxPool"(%4) {name = "mp", kernel_shape = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0]} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
    // CHECK: "top.AvgPool"{{.*}}count_include_pad = true
    %6 = "top.AvgPool"(%4) {name = "ap", kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 0, 0], count_include_pad = true} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
    // CHECK: "top.BatchNorm"{{.*}}epsilon = 1.000000e-03 : f64
    %7 = "top.BatchNorm"(%4, %3, %3, %3, %0) {name = "bn", epsilon = 1.0e-3 : f64} : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, none) -> tensor<1x4x8x8xf32>
    // CHECK: "top.LayerNorm"
    %8 = "top.LayerNorm"(%4, %0, %0) {name = "ln", axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<1x4x8x8xf32>, none, none) -> tensor<1x4x8x8xf32>
    // CHECK: "top.Softmax"{{.*}}log = true
    %9 = "top.Softmax"(%4) {name = "sm", axis = 1 : i64, log = true} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %10 = "top.Weight"() {name = "dw"} : () -> tensor<4x4x2x2xf32>
    // CHECK: "top.ConvTranspose"{{.*}}output_padding = [0, 0]
    %11 = "top.ConvTranspose"(%4, %10, %3) {name = "up", kernel_shape = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1, output_padding = [0, 0]} : (tensor<1x4x8x8xf32>, tensor<4x4x2x2xf32>, tensor<4xf32>) -> tensor<1x4x16x16xf32>
    %12 = "top.Reshape"(%5) {name = "flat", shape = [1, 4, 16]} : (tensor<1x4x4x4xf32>) -> tensor<1x4x16xf32>
    %13 = "top.Weight"() {name = "fc"} : () -> tensor<2x16xf32>
    // CHECK: "top.MatMul"{{.*}}right_transpose = true
    %14 = "top.MatMul"(%12, %13, %0) {name = "mm", right_transpose = true, do_relu = true, relu_limit = 6.0 : f64} : (tensor<1x4x16xf32>, tensor<2x16xf32>, none) -> tensor<1x4x2xf32>
    %15 = "top.Weight"() {name = "k1"} : () -> tensor<3x3x1xf32>
    // CHECK: "top.Conv"{{.*}}kernel_shape = [1]
    %16 = "top.Reshape"(%1) {name = "seq", shape = [1, 3, 64]} : (tensor<1x3x8x8xf32>) -> tensor<1x3x64xf32>
    %17 = "top.Conv"(%16, %15, %0) {name = "conv1d", kernel_shape = [1], strides = [8], pads = [0, 0], dilations = [1], group = 1} : (tensor<1x3x64xf32>, tensor<3x3x1xf32>, none) -> tensor<1x3x8xf32>
    return %4, %5, %6, %7, %8, %9, %11, %14, %17 : tensor<1x4x8x8xf32>, tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x16x16xf32>, tensor<1x4x2xf32>, tensor<1x3x8xf32>
  }

  // CHECK-LABEL: func.func @elementwise
  func.func @elementwise(%arg0: tensor<2x3xf32>, %arg1: tensor<3xf32>) -> tensor<2x3xf32> {
    %x = "top.Input"(%arg0) {name = "x"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %y = "top.Input"(%arg1) {name = "y"} : (tensor<3xf32>) -> tensor<3xf32>
    // CHECK: "top.Add"{{.*}}do_relu = true
    %0 = "top.Add"(%x, %y) {name = "add", do_relu = true} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %1 = "top.Sub"(%0, %y) {name = "sub"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %2 = "top.Mul"(%1, %y) {name = "mul"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %3 = "top.Div"(%2, %y) {name = "div"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %4 = "top.Max"(%3, %y) {name = "max"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %5 = "top.Min"(%4, %y) {name = "min"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %6 = "top.Pow"(%5, %y) {name = "pow"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    // CHECK: "top.Compare"{{.*}}mode = "GreaterOrEqual"
    %7 = "top.Compare"(%6, %y) {name = "cmp", mode = "GreaterOrEqual"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    // CHECK: "top.Where"
    %8 = "top.Where"(%7, %6, %y) {name = "where"} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %9 = "top.Relu"(%8) {name = "relu", relu_limit = 6.0 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %10 = "top.LeakyRelu"(%9) {name = "lrelu", alpha = 0.1 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    // CHECK: "top.PRelu"
    %11 = "top.PRelu"(%10, %y) {name = "prelu"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %12 = "top.Clip"(%11) {name = "clip", min = -1.0 : f64, max = 1.0 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %13 = "top.Sigmoid"(%12) {name = "sig"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %14 = "top.HardSigmoid"(%13) {name = "hsig", alpha = 0.2 : f64, beta = 0.5 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %15 = "top.HardSwish"(%14) {name = "hswish"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %16 = "top.Tanh"(%15) {name = "tanh"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %17 = "top.Exp"(%16) {name = "exp"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %18 = "top.Log"(%17) {name = "log"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %19 = "top.Sqrt"(%18) {name = "sqrt"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %20 = "top.Erf"(%19) {name = "erf"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    // CHECK: "top.Gelu"{{.*}}approximate = "tanh"
    %21 = "top.Gelu"(%20) {name = "gelu", approximate = "tanh"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %22 = "top.SiLU"(%21) {name = "silu"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %23 = "top.Abs"(%22) {name = "abs"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %24 = "top.Neg"(%23) {name = "neg"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %25 = "top.Reciprocal"(%24) {name = "rcp"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    // CHECK: "top.Cast"{{.*}}to = "bf16"
    %26 = "top.Cast"(%25) {name = "cast", to = "bf16"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    return %26 : tensor<2x3xf32>
  }

  // CHECK-LABEL: func.func @shape
  func.func @shape(%arg0: tensor<1x4x6xf32>) -> (tensor<4x6xf32>, tensor<1x6x4xf32>, tensor<1x8x6xf32>, tensor<1x1x6xf32>, tensor<1x3x6xf32>, tensor<1x2x3xf32>, tensor<1x6x8xf32>, tensor<1x4x1xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<1x4x12xf32>, tensor<1x2x6xf32>) {
    %x = "top.Input"(%arg0) {name = "x"} : (tensor<1x4x6xf32>) -> tensor<1x4x6xf32>
    %0 = "top.Reshape"(%x) {name = "r", shape = [4, 6]} : (tensor<1x4x6xf32>) -> tensor<4x6xf32>
    %1 = "top.Permute"(%x) {name = "p", order = [0, 2, 1]} : (tensor<1x4x6xf32>) -> tensor<1x6x4xf32>
    %2 = "top.Concat"(%x, %x) {name = "cat", axis = 1 : i64} : (tensor<1x4x6xf32>, tensor<1x4x6xf32>) -> tensor<1x8x6xf32>
    // CHECK: "top.Split"{{.*}}names = ["s0", "s1"]
    %3:2 = "top.Split"(%x) {name = "s0", names = ["s0", "s1"], axis = 1 : i64, split = [1, 3]} : (tensor<1x4x6xf32>) -> (tensor<1x1x6xf32>, tensor<1x3x6xf32>)
    %4 = "top.Slice"(%x) {name = "sl", offset = [0, 0, 5], ends = [1, 4, -9223372036854775808], steps = [1, 2, -2]} : (tensor<1x4x6xf32>) -> tensor<1x2x3xf32>
    %5 = "top.Pad"(%1) {name = "pad", paddings = [0, 0, 2, 0, 0, 2], mode = "reflect"} : (tensor<1x6x4xf32>) -> tensor<1x6x8xf32>
    // CHECK: "top.Reduce"{{.*}}mode = "ReduceMax"
    %6 = "top.Reduce"(%x) {name = "red", mode = "ReduceMax", axes = [2], keepdims = true} : (tensor<1x4x6xf32>) -> tensor<1x4x1xf32>
    %7 = "top.Weight"() {name = "idx"} : () -> tensor<2xf32>
    %8 = "top.Gather"(%0, %7) {name = "g", axis = 0 : i64} : (tensor<4x6xf32>, tensor<2xf32>) -> tensor<2x6xf32>
    %9 = "top.Expand"(%x) {name = "e", shape = [2, 1, 1]} : (tensor<1x4x6xf32>) -> tensor<2x4x6xf32>
    %10 = "top.Tile"(%x) {name = "t", repeats = [2, 1, 1]} : (tensor<1x4x6xf32>) -> tensor<2x4x6xf32>
    // CHECK: "top.Interp"{{.*}}coord_mode = "align_corners"{{.*}}mode = "linear"
    %11 = "top.Interp"(%x) {name = "i", mode = "linear", coord_mode = "align_corners", scale_h = 1.0 : f64, scale_w = 2.0 : f64} : (tensor<1x4x6xf32>) -> tensor<1x4x12xf32>
    %12 = "top.Reshape"(%8) {name = "g3", shape = [1, 2, 6]} : (tensor<2x6xf32>) -> tensor<1x2x6xf32>
    return %0, %1, %2, %3#0, %3#1, %4, %5, %6, %9, %10, %11, %12 : tensor<4x6xf32>, tensor<1x6x4xf32>, tensor<1x8x6xf32>, tensor<1x1x6xf32>, tensor<1x3x6xf32>, tensor<1x2x3xf32>, tensor<1x6x8xf32>, tensor<1x4x1xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<1x4x12xf32>, tensor<1x2x6xf32>
  }
}
