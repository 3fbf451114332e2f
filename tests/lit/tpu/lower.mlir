// Lowering top -> tpu in the three float modes.
// RUN: tpuc-opt %s --split-input-file --convert-top-to-tpu=mode=F32 | FileCheck %s --check-prefix=F32
// RUN: tpuc-opt %s --split-input-file --convert-top-to-tpu=mode=F16 | FileCheck %s --check-prefix=F16
// RUN: tpuc-opt %s --split-input-file --convert-top-to-tpu=mode=BF16 | FileCheck %s --check-prefix=BF16

// Conv + relu: filter in the mode's type, bias stays f32; in F16 / BF16 the
// input and the output stay f32 with a cast at entry and exit; the cast at
// the exit takes the output's name.
// F32-LABEL: module @conv attributes
// F32-SAME: top.chip = "BM1684X", top.state = "TPU_LOWERED"
// F32-SAME: tpu.mode = "F32"
// F32: func.func @main(%arg0: tensor<1x3x8x8xf32>) -> tensor<1x4x8x8xf32>
// F32: %[[X:.*]] = "top.Input"(%arg0) {name = "x"}
// F32-DAG: %[[W:.*]] = "tpu.Weight"() {layout = "compact", name = "w"} : () -> tensor<4x3x3x3xf32>
// F32-DAG: %[[B:.*]] = "tpu.Weight"() {layout = "compact", name = "b"} : () -> tensor<4xf32>
// F32: %[[C:.*]] = "tpu.Conv2D"(%[[X]], %[[W]], %[[B]]) {dilations = [1, 1], do_relu = true, group = 1 : i64, kernel_shape = [3, 3], name = "y", pads = [1, 1, 1, 1], relu_limit = -1.000000e+00 : f64, strides = [1, 1]}
// F32-SAME: -> tensor<1x4x8x8xf32>
// F32-NOT: tpu.Cast
// F32: return %[[C]]
// F16-LABEL: module @conv
// F16: %[[X:.*]] = "top.Input"(%arg0) {name = "x"}
// F16: %[[XC:.*]] = "tpu.Cast"(%[[X]]) {name = "x_f16"} : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf16>
// F16-DAG: "tpu.Weight"() {layout = "compact", name = "w"} : () -> tensor<4x3x3x3xf16>
// F16-DAG: "tpu.Weight"() {layout = "compact", name = "b"} : () -> tensor<4xf32>
// F16: %[[C:.*]] = "tpu.Conv2D"(%[[XC]], {{.*}} name = "y_f16"{{.*}} -> tensor<1x4x8x8xf16>
// F16: %[[O:.*]] = "tpu.Cast"(%[[C]]) {name = "y"} : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf32>
// F16: return %[[O]] : tensor<1x4x8x8xf32>
// BF16-LABEL: module @conv
// BF16: "tpu.Cast"({{.*}}) {name = "x_bf16"} : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xbf16>
// BF16: "tpu.Conv2D"{{.*}} -> tensor<1x4x8x8xbf16>
// BF16: "tpu.Cast"({{.*}}) {name = "y"} : (tensor<1x4x8x8xbf16>) -> tensor<1x4x8x8xf32>
module @conv attributes {top.chip = "ALL", top.state = "TOP_F32"} {
  func.func @main(%arg0: tensor<1x3x8x8xf32>) -> tensor<1x4x8x8xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
    %1 = "top.Weight"() {name = "w"} : () -> tensor<4x3x3x3xf32>
    %2 = "top.Weight"() {name = "b"} : () -> tensor<4xf32>
    %3 = "top.Conv"(%0, %1, %2) {name = "y", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1, do_relu = true} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    return %3 : tensor<1x4x8x8xf32>
  }
}

// -----

// 1-D conv becomes a 2-D one with H = 1; pools likewise; a global pool,
// flatten (alias), gemm with an N-element bias fused, softmax with a
// normalised axis.
// F32-LABEL: module @head
// F32: "tpu.Conv2D"{{.*}}kernel_shape = [1, 3]{{.*}}pads = [0, 1, 0, 1]{{.*}}strides = [1, 2]{{.*}} -> tensor<1x8x8xf32>
// F32: "tpu.Pool2D"{{.*}}kernel_shape = [1, 8]{{.*}}pool_mode = "avg"{{.*}} -> tensor<1x8x1xf32>
// F32: %[[R:.*]] = "tpu.Reshape"({{.*}}) {name = "flat"} : (tensor<1x8x1xf32>) -> tensor<1x8xf32>
// F32: %[[M:.*]] = "tpu.MatMul"(%[[R]], {{.*}}) {do_relu = false, name = "fc", relu_limit = -1.000000e+00 : f64, right_transpose = true}
// F32: "tpu.Softmax"(%[[M]]) {axis = 1 : i64, log = false, name = "prob"}
// In F16 the softmax (fp32 inside) read only by the output writes f32
// itself: no cast after it.
// F16-LABEL: module @head
// F16: %[[M:.*]] = "tpu.MatMul"({{.*}}name = "fc"{{.*}} -> tensor<1x5xf16>
// F16: %[[S:.*]] = "tpu.Softmax"(%[[M]]) {axis = 1 : i64, log = false, name = "prob"} : (tensor<1x5xf16>) -> tensor<1x5xf32>
// F16-NOT: tpu.Cast
// F16: return %[[S]]
module @head attributes {top.chip = "ALL", top.state = "TOP_F32"} {
  func.func @main(%arg0: tensor<1x4x16xf32>) -> tensor<1x5xf32> {
    %n = "top.None"() : () -> none
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
    %1 = "top.Weight"() {name = "w"} : () -> tensor<8x4x3xf32>
    %2 = "top.Conv"(%0, %1, %n) {name = "c", kernel_shape = [3], strides = [2], pads = [1, 1], dilations = [1], group = 1} : (tensor<1x4x16xf32>, tensor<8x4x3xf32>, none) -> tensor<1x8x8xf32>
    %3 = "top.AvgPool"(%2) {name = "gap", kernel_shape = [8], strides = [1], pads = [0, 0]} : (tensor<1x8x8xf32>) -> tensor<1x8x1xf32>
    %4 = "top.Reshape"(%3) {name = "flat", shape = [1, 8]} : (tensor<1x8x1xf32>) -> tensor<1x8xf32>
    %5 = "top.Weight"() {name = "fc_w"} : () -> tensor<5x8xf32>
    %6 = "top.Weight"() {name = "fc_b"} : () -> tensor<5xf32>
    %7 = "top.MatMul"(%4, %5, %6) {name = "fc", right_transpose = true} : (tensor<1x8xf32>, tensor<5x8xf32>, tensor<5xf32>) -> tensor<1x5xf32>
    %8 = "top.Softmax"(%7) {name = "prob", axis = -1} : (tensor<1x5xf32>) -> tensor<1x5xf32>
    return %8 : tensor<1x5xf32>
  }
}

// -----

// Elementwise: binary ops keep their operands (a weight operand becomes a
// tpu.Weight of the mode's type); unary activations become tpu.Active.
// F16-LABEL: module @eltwise
// F16: "tpu.Weight"() {layout = "compact", name = "k"} : () -> tensor<1x4x1x1xf16>
// F16: "tpu.Mul"({{.*}}) {do_relu = false, name = "m"{{.*}} -> tensor<1x4x2x2xf16>
// F16: "tpu.Active"({{.*}}) {coeffs = [], mode = "sigmoid", name = "s"}
// F16: "tpu.Active"({{.*}}) {coeffs = [0.000000e+00, 6.000000e+00], mode = "clip", name = "c"}
// F16: "tpu.Active"({{.*}}) {coeffs = [1.000000e-01], mode = "leaky_relu", name = "l"}
// F16: "tpu.Add"({{.*}}) {do_relu = true, name = "a_f16"
// F16: "tpu.Cast"({{.*}}) {name = "a"} : (tensor<1x4x2x2xf16>) -> tensor<1x4x2x2xf32>
module @eltwise attributes {top.chip = "ALL", top.state = "TOP_F32"} {
  func.func @main(%arg0: tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
    %1 = "top.Weight"() {name = "k"} : () -> tensor<1x4x1x1xf32>
    %2 = "top.Mul"(%0, %1) {name = "m"} : (tensor<1x4x2x2xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x2x2xf32>
    %3 = "top.Sigmoid"(%2) {name = "s"} : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
    %4 = "top.Clip"(%3) {name = "c", min = 0.0, max = 6.0} : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
    %5 = "top.LeakyRelu"(%4) {name = "l", alpha = 0.1} : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
    %6 = "top.Add"(%5, %0) {name = "a", do_relu = true} : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
    return %6 : tensor<1x4x2x2xf32>
  }
}

// -----

// Shape ops: negative axes normalised, Split as one Slice per output,
// Expand as Tile, Reduce axes sorted.
// F32-LABEL: module @shape
// F32: "tpu.Slice"({{.*}}) {name = "s0", offset = [0, 0, 0], steps = [1, 1, 1]} {{.*}} -> tensor<2x2x4xf32>
// F32: "tpu.Slice"({{.*}}) {name = "s1", offset = [0, 2, 0], steps = [1, 1, 1]} {{.*}} -> tensor<2x4x4xf32>
// F32: "tpu.Concat"({{.*}}) {axis = 1 : i64, name = "cat"}
// F32: "tpu.Permute"({{.*}}) {name = "t", order = [0, 2, 1]}
// F32: "tpu.Reduce"({{.*}}) {axes = [1, 2], mode = "ReduceMean", name = "r"}
// F32: "tpu.Tile"({{.*}}) {name = "e"} : (tensor<2x1x1xf32>) -> tensor<2x3x5xf32>
module @shape attributes {top.chip = "ALL", top.state = "TOP_F32"} {
  func.func @main(%arg0: tensor<2x6x4xf32>) -> tensor<2x3x5xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
    %1:2 = "top.Split"(%0) {name = "s0", names = ["s0", "s1"], axis = -2, split = [2, 4]} : (tensor<2x6x4xf32>) -> (tensor<2x2x4xf32>, tensor<2x4x4xf32>)
    %2 = "top.Concat"(%1#1, %1#0) {name = "cat", axis = -2} : (tensor<2x4x4xf32>, tensor<2x2x4xf32>) -> tensor<2x6x4xf32>
    %3 = "top.Permute"(%2) {name = "t", order = [0, 2, 1]} : (tensor<2x6x4xf32>) -> tensor<2x4x6xf32>
    %4 = "top.Reduce"(%3) {name = "r", mode = "ReduceMean", axes = [-1, 1], keepdims = true} : (tensor<2x4x6xf32>) -> tensor<2x1x1xf32>
    %5 = "top.Expand"(%4) {name = "e", shape = [2, 3, 5]} : (tensor<2x1x1xf32>) -> tensor<2x3x5xf32>
    return %5 : tensor<2x3x5xf32>
  }
}

// -----

// A softmax that another op reads as well keeps the mode's type; the
// output gets the cast, named as the output.
// F16-LABEL: module @softmax_read
// F16: %[[S:.*]] = "tpu.Softmax"({{.*}}) {axis = 1 : i64, log = false, name = "p_f16"} : (tensor<1x5xf16>) -> tensor<1x5xf16>
// F16: "tpu.Mul"(%[[S]], %[[S]])
// F16: %[[C:.*]] = "tpu.Cast"(%[[S]]) {name = "p"} : (tensor<1x5xf16>) -> tensor<1x5xf32>
// F16: return %[[C]],
module @softmax_read attributes {top.chip = "ALL", top.state = "TOP_F32"} {
  func.func @main(%arg0: tensor<1x5xf32>) -> (tensor<1x5xf32>, tensor<1x5xf32>) {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x5xf32>) -> tensor<1x5xf32>
    %1 = "top.Softmax"(%0) {name = "p", axis = -1} : (tensor<1x5xf32>) -> tensor<1x5xf32>
    %2 = "top.Mul"(%1, %1) {name = "sq"} : (tensor<1x5xf32>, tensor<1x5xf32>) -> tensor<1x5xf32>
    return %1, %2 : tensor<1x5xf32>, tensor<1x5xf32>
  }
}
