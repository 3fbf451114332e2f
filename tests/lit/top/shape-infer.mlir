// --shape-infer fills every result type and the function type.
// RUN: tpuc-opt %s --split-input-file --shape-infer | FileCheck %s

// CHECK-LABEL: func.func @cnn(%arg0: tensor<2x3x8x8xf32>) -> tensor<2x24xf32>
// Conv: (8 + 1 + 0 - 3) / 2 + 1 = 4.
// CHECK: "top.Conv"{{.*}} -> tensor<2x6x4x4xf32>
// Pool with an extra end pad (ceil mode): (4 + 1 - 2) / 2 + 1 = 2.
// CHECK: "top.MaxPool"{{.*}} -> tensor<2x6x2x2xf32>
// Reshape [0, -1]: 2 x (6 * 2 * 2).
// CHECK: "top.Reshape"{{.*}} -> tensor<2x24xf32>
func.func @cnn(%arg0: tensor<2x3x8x8xf32>) -> tensor<*xf32> {
  %n = "top.None"() : () -> none
  %0 = "top.Input"(%arg0) {name = "x"} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  %w = "top.Weight"() {name = "w"} : () -> tensor<6x1x3x3xf32>
  %1 = "top.Conv"(%0, %w, %n) {name = "c", kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 0, 0], dilations = [1, 1], group = 3} : (tensor<2x3x8x8xf32>, tensor<6x1x3x3xf32>, none) -> tensor<*xf32>
  %2 = "top.MaxPool"(%1) {name = "p", kernel_shape = [2, 2], strides = [2, 2], pads = [0, 0, 1, 1]} : (tensor<*xf32>) -> tensor<*xf32>
  %3 = "top.Reshape"(%2) {name = "r", shape = [0, -1]} : (tensor<*xf32>) -> tensor<*xf32>
  return %3 : tensor<*xf32>
}

// -----

// A new batch size flows through: the Input takes its argument's type.
// CHECK-LABEL: func.func @rebatch(%arg0: tensor<4x3xf32>) -> tensor<4x5xf32>
// CHECK: "top.Input"{{.*}} -> tensor<4x3xf32>
// CHECK: "top.MatMul"{{.*}} -> tensor<4x5xf32>
func.func @rebatch(%arg0: tensor<4x3xf32>) -> tensor<*xf32> {
  %n = "top.None"() : () -> none
  %0 = "top.Input"(%arg0) {name = "x"} : (tensor<4x3xf32>) -> tensor<*xf32>
  %w = "top.Weight"() {name = "w"} : () -> tensor<5x3xf32>
  %1 = "top.MatMul"(%0, %w, %n) {name = "fc", right_transpose = true} : (tensor<*xf32>, tensor<5x3xf32>, none) -> tensor<*xf32>
  return %1 : tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @shapes
// CHECK: "top.ConvTranspose"{{.*}} -> tensor<1x4x9x9xf32>
// CHECK: "top.Slice"{{.*}} -> tensor<1x4x3x9xf32>
// CHECK: "top.Pad"{{.*}} -> tensor<1x4x5x10xf32>
// CHECK: "top.Reduce"{{.*}} -> tensor<1x4xf32>
// CHECK: "top.Concat"{{.*}} -> tensor<1x8xf32>
// CHECK: "top.Split"{{.*}} -> (tensor<1x3xf32>, tensor<1x5xf32>)
// CHECK: "top.Gather"{{.*}} -> tensor<2x3x5xf32>
// CHECK: "top.Tile"{{.*}} -> tensor<2x24xf32>
// CHECK: "top.Expand"{{.*}} -> tensor<3x1x8xf32>
// CHECK: "top.Permute"{{.*}} -> tensor<8x1xf32>
// CHECK: "top.Interp"{{.*}} -> tensor<1x4x18x18xf32>
// CHECK: "top.Softmax"{{.*}} -> tensor<1x8xf32>
// CHECK: "top.Where"{{.*}} -> tensor<2x1x8xf32>
func.func @shapes(%arg0: tensor<1x2x4x4xf32>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>) {
  %n = "top.None"() : () -> none
  %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %w = "top.Weight"() {name = "w"} : () -> tensor<2x4x3x3xf32>
  // (4 - 1) * 2 + 3 + 1 - 1 - 0 = 9.
  %1 = "top.ConvTranspose"(%0, %w, %n) {name = "up", kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 0, 0], dilations = [1, 1], group = 1, output_padding = [1, 1]} : (tensor<1x2x4x4xf32>, tensor<2x4x3x3xf32>, none) -> tensor<*xf32>
  // Rows 8 down to 2 by -3: 8, 5, 2.
  %2 = "top.Slice"(%1) {name = "s", offset = [0, 0, -1, 0], ends = [1, 4, 1, 9], steps = [1, 1, -3, 1]} : (tensor<*xf32>) -> tensor<*xf32>
  %3 = "top.Pad"(%2) {name = "p", paddings = [0, 0, 1, 0, 0, 0, 1, 1], mode = "reflect"} : (tensor<*xf32>) -> tensor<*xf32>
  %4 = "top.Reduce"(%3) {name = "m", mode = "ReduceMean", axes = [2, -1], keepdims = false} : (tensor<*xf32>) -> tensor<*xf32>
  %5 = "top.Concat"(%4, %4) {name = "cat", axis = -1 : i64} : (tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32>
  %6:2 = "top.Split"(%5) {name = "a", names = ["a", "b"], axis = 1 : i64, split = [3, 5]} : (tensor<*xf32>) -> (tensor<*xf32>, tensor<*xf32>)
  %i = "top.Weight"() {name = "idx"} : () -> tensor<2x3xf32>
  %7 = "top.Gather"(%6#1, %i) {name = "g", axis = 0 : i64} : (tensor<*xf32>, tensor<2x3xf32>) -> tensor<*xf32>
  %8 = "top.Tile"(%5) {name = "t", repeats = [2, 3]} : (tensor<*xf32>) -> tensor<*xf32>
  %9 = "top.Expand"(%5) {name = "e", shape = [3, 1, 1]} : (tensor<*xf32>) -> tensor<*xf32>
  %10 = "top.Permute"(%5) {name = "tr", order = [1, 0]} : (tensor<*xf32>) -> tensor<*xf32>
  %11 = "top.Interp"(%1) {name = "i", mode = "nearest", scale_h = 2.0 : f64, scale_w = 2.0 : f64} : (tensor<*xf32>) -> tensor<*xf32>
  %12 = "top.Softmax"(%5) {name = "sm", axis = 1 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  %c = "top.Weight"() {name = "cond"} : () -> tensor<2x1x1xf32>
  %13 = "top.Where"(%c, %5, %12) {name = "wh"} : (tensor<2x1x1xf32>, tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32>
  return %7, %8, %9, %10, %11, %12, %13 : tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>
}
