// Fusion and clean-up patterns that need no weight data.
// RUN: tpuc-opt %s --split-input-file --canonicalize | FileCheck %s

// Relu fuses into the conv, which takes over the relu's name.
// CHECK-LABEL: func.func @relu_into_conv
// CHECK: %[[C:.*]] = "top.Conv"{{.*}}do_relu = true{{.*}}name = "r"{{.*}}relu_limit = -1.000000e+00
// CHECK-NOT: top.Relu
// CHECK: return %[[C]]
func.func @relu_into_conv(%arg0: tensor<1x3x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %n = "top.None"() : () -> none
  %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %w = "top.Weight"() {name = "w"} : () -> tensor<2x3x3x3xf32>
  %1 = "top.Conv"(%0, %w, %n) {name = "c", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1} : (tensor<1x3x4x4xf32>, tensor<2x3x3x3xf32>, none) -> tensor<1x2x4x4xf32>
  %2 = "top.Relu"(%1) {name = "r"} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %2 : tensor<1x2x4x4xf32>
}

// -----

// A zero Pad of W in NHWC, reshaped to NCHW (moving only unit axes), then
// a conv: the pads join the conv's (left and right), the input is the
// unpadded tensor reshaped. A Pad of a non-zero value, or of C, stays.
// CHECK-LABEL: func.func @pad_into_conv
// CHECK: %[[X:.*]] = "top.Input"
// CHECK: %[[R:.*]] = "top.Reshape"(%[[X]]) {name = "nchw", shape = [1, 1, 6, 4]} : (tensor<1x6x4x1xf32>) -> tensor<1x1x6x4xf32>
// CHECK-NEXT: "top.Conv"(%[[R]], {{.*}}name = "c", pads = [1, 2, 1, 2]{{.*}} : (tensor<1x1x6x4xf32>, tensor<2x1x3x3xf32>, none) -> tensor<1x2x6x6xf32>
// CHECK: "top.Pad"{{.*}}name = "ones"
// CHECK: "top.Pad"{{.*}}name = "chans"
func.func @pad_into_conv(%arg0: tensor<1x6x4x1xf32>, %arg1: tensor<1x1x6x6xf32>) -> (tensor<1x2x6x6xf32>, tensor<1x2x6x6xf32>, tensor<1x2x6x6xf32>) {
  %n = "top.None"() : () -> none
  %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x6x4x1xf32>) -> tensor<1x6x4x1xf32>
  %w = "top.Weight"() {name = "w"} : () -> tensor<2x1x3x3xf32>
  %1 = "top.Pad"(%0) {name = "p", paddings = [0, 0, 1, 0, 0, 0, 1, 0]} : (tensor<1x6x4x1xf32>) -> tensor<1x6x6x1xf32>
  %2 = "top.Reshape"(%1) {name = "nchw", shape = [1, 1, 6, 6]} : (tensor<1x6x6x1xf32>) -> tensor<1x1x6x6xf32>
  %3 = "top.Conv"(%2, %w, %n) {name = "c", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1} : (tensor<1x1x6x6xf32>, tensor<2x1x3x3xf32>, none) -> tensor<1x2x6x6xf32>
  %4 = "top.Pad"(%0) {name = "ones", paddings = [0, 0, 1, 0, 0, 0, 1, 0], val = 1.0 : f64} : (tensor<1x6x4x1xf32>) -> tensor<1x6x6x1xf32>
  %5 = "top.Reshape"(%4) {name = "nchw1", shape = [1, 1, 6, 6]} : (tensor<1x6x6x1xf32>) -> tensor<1x1x6x6xf32>
  %6 = "top.Conv"(%5, %w, %n) {name = "c1", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1} : (tensor<1x1x6x6xf32>, tensor<2x1x3x3xf32>, none) -> tensor<1x2x6x6xf32>
  %7 = "top.Input"(%arg1) {name = "z"} : (tensor<1x1x6x6xf32>) -> tensor<1x1x6x6xf32>
  %w2 = "top.Weight"() {name = "w2"} : () -> tensor<2x3x3x3xf32>
  %8 = "top.Pad"(%7) {name = "chans", paddings = [0, 1, 0, 0, 0, 1, 0, 0]} : (tensor<1x1x6x6xf32>) -> tensor<1x3x6x6xf32>
  %9 = "top.Conv"(%8, %w2, %n) {name = "c2", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1} : (tensor<1x3x6x6xf32>, tensor<2x3x3x3xf32>, none) -> tensor<1x2x6x6xf32>
  return %3, %6, %9 : tensor<1x2x6x6xf32>, tensor<1x2x6x6xf32>, tensor<1x2x6x6xf32>
}

// -----

// A Pad of nothing (PyTorch's before DenseNet's transition AveragePool)
// is its input; one that is a model output stays (it carries its name).
// CHECK-LABEL: func.func @empty_pad
// CHECK: %[[X:.*]] = "top.Input"
// CHECK-NEXT: %[[P:.*]] = "top.AvgPool"(%[[X]])
// CHECK: %[[O:.*]] = "top.Pad"(%[[X]]) {{.*}}name = "out"
// CHECK: return %[[P]], %[[O]]
func.func @empty_pad(%arg0: tensor<1x2x4x4xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x4x4xf32>) {
  %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %1 = "top.Pad"(%0) {name = "p", paddings = [0, 0, 0, 0, 0, 0, 0, 0]} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %2 = "top.AvgPool"(%1) {name = "pool", kernel_shape = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0]} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %3 = "top.Pad"(%0) {name = "out", paddings = [0, 0, 0, 0, 0, 0, 0, 0]} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %2, %3 : tensor<1x2x2x2xf32>, tensor<1x2x4x4xf32>
}

// -----

// Clip(0, 6) is a relu with limit 6; it fuses into an Add.
// CHECK-LABEL: func.func @clip_into_add
// CHECK: %[[A:.*]] = "top.Add"{{.*}}do_relu = true{{.*}}name = "clip"{{.*}}relu_limit = 6.000000e+00
// CHECK-NOT: top.Clip
// CHECK: return %[[A]]
func.func @clip_into_add(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "top.Input"(%arg0) {name = "a"} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "top.Input"(%arg1) {name = "b"} : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "top.Add"(%0, %1) {name = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = "top.Clip"(%2) {name = "clip", min = 0.0 : f64, max = 6.0 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  return %3 : tensor<4xf32>
}

// -----

// A Clip that is not a relu (min != 0) stays.
// CHECK-LABEL: func.func @clip_not_relu
// CHECK: "top.Add"
// CHECK-NOT: do_relu = true
// CHECK: "top.Clip"
func.func @clip_not_relu(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "top.Input"(%arg0) {name = "a"} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "top.Add"(%0, %0) {name = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = "top.Clip"(%1) {name = "clip", min = -1.0 : f64, max = 6.0 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// Relu into MatMul; a producer with a second user keeps its own output.
// CHECK-LABEL: func.func @relu_into_matmul
// CHECK: "top.MatMul"{{.*}}do_relu = true{{.*}}name = "r1"
// CHECK: %[[M2:.*]] = "top.MatMul"{{.*}}do_relu = false{{.*}}name = "m2"
// CHECK: "top.Relu"(%[[M2]])
func.func @relu_into_matmul(%arg0: tensor<2x3xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %n = "top.None"() : () -> none
  %0 = "top.Input"(%arg0) {name = "x"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %w = "top.Weight"() {name = "w"} : () -> tensor<3x4xf32>
  %1 = "top.MatMul"(%0, %w, %n) {name = "m1"} : (tensor<2x3xf32>, tensor<3x4xf32>, none) -> tensor<2x4xf32>
  %2 = "top.Relu"(%1) {name = "r1"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = "top.MatMul"(%0, %w, %n) {name = "m2"} : (tensor<2x3xf32>, tensor<3x4xf32>, none) -> tensor<2x4xf32>
  %4 = "top.Relu"(%3) {name = "r2"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %2, %3, %4 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// Identity reshapes and permutes vanish; chains merge into one op named
// after the last.
// CHECK-LABEL: func.func @reshape_permute
// CHECK: %[[X:.*]] = "top.Input"
// CHECK-NEXT: %[[R:.*]] = "top.Reshape"(%[[X]]) {name = "r2", shape = [6, 4]} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT: %[[P:.*]] = "top.Permute"(%[[R]]) {name = "p2", order = [1, 0]} : (tensor<6x4xf32>) -> tensor<4x6xf32>
// CHECK-NEXT: return %[[P]]
func.func @reshape_permute(%arg0: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %0 = "top.Input"(%arg0) {name = "x"} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %1 = "top.Reshape"(%0) {name = "same", shape = [2, 3, 4]} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %2 = "top.Reshape"(%1) {name = "r1", shape = [24]} : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %3 = "top.Reshape"(%2) {name = "r2", shape = [-1, 4]} : (tensor<24xf32>) -> tensor<6x4xf32>
  %4 = "top.Permute"(%3) {name = "id", order = [0, 1]} : (tensor<6x4xf32>) -> tensor<6x4xf32>
  %5 = "top.Permute"(%4) {name = "p1", order = [1, 0]} : (tensor<6x4xf32>) -> tensor<4x6xf32>
  %6 = "top.Permute"(%5) {name = "back", order = [1, 0]} : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %7 = "top.Permute"(%6) {name = "p2", order = [1, 0]} : (tensor<6x4xf32>) -> tensor<4x6xf32>
  return %7 : tensor<4x6xf32>
}

// -----

// Two permutes compose: [0,2,3,1] after [0,3,1,2] is the identity.
// CHECK-LABEL: func.func @permute_pair
// CHECK-NOT: top.Permute
// CHECK: return %{{.*}} : tensor<1x2x3x4xf32>
func.func @permute_pair(%arg0: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %1 = "top.Permute"(%0) {name = "to_nhwc", order = [0, 2, 3, 1]} : (tensor<1x2x3x4xf32>) -> tensor<1x3x4x2xf32>
  %2 = "top.Permute"(%1) {name = "to_nchw", order = [0, 3, 1, 2]} : (tensor<1x3x4x2xf32>) -> tensor<1x2x3x4xf32>
  return %2 : tensor<1x2x3x4xf32>
}

// -----

// A permute that moves only unit axes moves no data: a reshape (TFLite's
// NHWC -> NCHW of one channel, NCHW -> NHWC of one pixel). One that swaps
// two axes of extent > 1 stays.
// CHECK-LABEL: func.func @permute_of_unit_axes
// CHECK: %[[X:.*]] = "top.Input"
// CHECK-NEXT: "top.Input"
// CHECK-NEXT: %[[A:.*]] = "top.Reshape"(%[[X]]) {name = "nchw", shape = [1, 1, 76, 34]} : (tensor<1x76x34x1xf32>) -> tensor<1x1x76x34xf32>
// CHECK-NEXT: %[[B:.*]] = "top.Reshape"(%{{.*}}) {name = "nhwc", shape = [1, 1, 1, 96]} : (tensor<1x96x1x1xf32>) -> tensor<1x1x1x96xf32>
// CHECK-NEXT: %[[C:.*]] = "top.Permute"(%[[X]]) {name = "swap", order = [0, 2, 1, 3]} : (tensor<1x76x34x1xf32>) -> tensor<1x34x76x1xf32>
// CHECK-NEXT: return %[[A]], %[[B]], %[[C]]
func.func @permute_of_unit_axes(%arg0: tensor<1x76x34x1xf32>, %arg1: tensor<1x96x1x1xf32>) -> (tensor<1x1x76x34xf32>, tensor<1x1x1x96xf32>, tensor<1x34x76x1xf32>) {
  %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x76x34x1xf32>) -> tensor<1x76x34x1xf32>
  %1 = "top.Input"(%arg1) {name = "y"} : (tensor<1x96x1x1xf32>) -> tensor<1x96x1x1xf32>
  %2 = "top.Permute"(%0) {name = "nchw", order = [0, 3, 1, 2]} : (tensor<1x76x34x1xf32>) -> tensor<1x1x76x34xf32>
  %3 = "top.Permute"(%1) {name = "nhwc", order = [0, 2, 3, 1]} : (tensor<1x96x1x1xf32>) -> tensor<1x1x1x96xf32>
  %4 = "top.Permute"(%0) {name = "swap", order = [0, 2, 1, 3]} : (tensor<1x76x34x1xf32>) -> tensor<1x34x76x1xf32>
  return %2, %3, %4 : tensor<1x1x76x34xf32>, tensor<1x1x1x96xf32>, tensor<1x34x76x1xf32>
}

// -----

// Dead ops and unused weights disappear; an unused input stays.
// CHECK-LABEL: func.func @dead_code
// CHECK-NEXT: "top.Input"(%arg0)
// CHECK-NEXT: %[[Y:.*]] = "top.Input"(%arg1)
// CHECK-NEXT: return %[[Y]]
func.func @dead_code(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "top.Input"(%arg0) {name = "unused"} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "top.Input"(%arg1) {name = "y"} : (tensor<4xf32>) -> tensor<4xf32>
  %w = "top.Weight"() {name = "w"} : () -> tensor<4xf32>
  %2 = "top.Mul"(%0, %w) {name = "dead"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = "top.Sigmoid"(%2) {name = "dead2"} : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// Without weight data nothing is folded (and nothing fails).
// CHECK-LABEL: func.func @no_data
// CHECK: "top.Add"
func.func @no_data() -> tensor<2xf32> {
  %a = "top.Weight"() {name = "a"} : () -> tensor<2xf32>
  %b = "top.Weight"() {name = "b"} : () -> tensor<2xf32>
  %0 = "top.Add"(%a, %b) {name = "sum"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
