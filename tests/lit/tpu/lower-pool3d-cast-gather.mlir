// Lowering of 3-D pools (tpu.Pool3D), casts to integer types (tpu.Cast
// through the integer type) and Gather with computed indices.
// RUN: tpuc-opt %s --split-input-file --convert-top-to-tpu=mode=F32 | FileCheck %s --check-prefix=F32
// RUN: tpuc-opt %s --split-input-file --convert-top-to-tpu=mode=F16 | FileCheck %s --check-prefix=F16

// The window attributes are kept in ONNX order (pads: front, top, left,
// back, bottom, right); F16 runs the pool in f16 between casts.
// F32-LABEL: module @pool3d
// F32: "tpu.Pool3D"(%{{.*}}) {count_include_pad = true, do_relu = false, kernel_shape = [2, 3, 3], name = "avg", pads = [1, 1, 0, 0, 1, 1], pool_mode = "avg", relu_limit = -1.000000e+00 : f64, strides = [2, 2, 2]} : (tensor<1x4x6x7x8xf32>) -> tensor<1x4x3x4x4xf32>
// F32: "tpu.Pool3D"(%{{.*}}) {{{.*}}kernel_shape = [3, 2, 2], name = "max", pads = [0, 0, 0, 1, 1, 0], pool_mode = "max"{{.*}}strides = [2, 2, 3]} : (tensor<1x4x6x7x8xf32>) -> tensor<1x4x3x4x3xf32>
// F16-LABEL: module @pool3d
// F16: "tpu.Pool3D"(%{{.*}}) {{{.*}}name = "avg_f16"{{.*}} : (tensor<1x4x6x7x8xf16>) -> tensor<1x4x3x4x4xf16>
module @pool3d attributes {top.chip = "ALL", top.state = "TOP_F32"} {
  func.func @main(%arg0: tensor<1x4x6x7x8xf32>) -> (tensor<1x4x3x4x4xf32>, tensor<1x4x3x4x3xf32>) {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x4x6x7x8xf32>) -> tensor<1x4x6x7x8xf32>
    %1 = "top.AvgPool"(%0) {name = "avg", kernel_shape = [2, 3, 3], strides = [2, 2, 2], pads = [1, 1, 0, 0, 1, 1], count_include_pad = true} : (tensor<1x4x6x7x8xf32>) -> tensor<1x4x3x4x4xf32>
    %2 = "top.MaxPool"(%0) {name = "max", kernel_shape = [3, 2, 2], strides = [2, 2, 3], pads = [0, 0, 0, 1, 1, 0]} : (tensor<1x4x6x7x8xf32>) -> tensor<1x4x3x4x3xf32>
    return %1, %2 : tensor<1x4x3x4x4xf32>, tensor<1x4x3x4x3xf32>
  }
}

// -----

// Casts to integer types keep float values: a tpu.Cast through the integer
// type (int64 / uint64 through the 32-bit types); a cast to f32 is an alias.
// F32-LABEL: module @cast
// F32: %[[X:.*]] = "top.Input"
// F32: %[[I8:.*]] = "tpu.Cast"(%[[X]]) {name = "i8", via_int = i8} : (tensor<8xf32>) -> tensor<8xf32>
// F32: "tpu.Cast"(%[[X]]) {name = "u16", via_int = ui16} : (tensor<8xf32>) -> tensor<8xf32>
// F32: "tpu.Cast"(%[[X]]) {name = "i64", via_int = i32} : (tensor<8xf32>) -> tensor<8xf32>
// F32: "tpu.Cast"(%[[X]]) {name = "u64", via_int = ui32} : (tensor<8xf32>) -> tensor<8xf32>
// F32: "tpu.Reshape"(%[[I8]]) {name = "back"}
// F16-LABEL: module @cast
// F16: "tpu.Cast"(%{{.*}}) {name = "i8", via_int = i8} : (tensor<8xf16>) -> tensor<8xf16>
module @cast attributes {top.chip = "ALL", top.state = "TOP_F32"} {
  func.func @main(%arg0: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<8xf32>) -> tensor<8xf32>
    %1 = "top.Cast"(%0) {name = "i8", to = "int8"} : (tensor<8xf32>) -> tensor<8xf32>
    %2 = "top.Cast"(%0) {name = "u16", to = "uint16"} : (tensor<8xf32>) -> tensor<8xf32>
    %3 = "top.Cast"(%0) {name = "i64", to = "int64"} : (tensor<8xf32>) -> tensor<8xf32>
    %4 = "top.Cast"(%0) {name = "u64", to = "uint64"} : (tensor<8xf32>) -> tensor<8xf32>
    %5 = "top.Cast"(%1) {name = "back", to = "f32"} : (tensor<8xf32>) -> tensor<8xf32>
    return %5, %2, %3, %4 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  }
}

// -----

// Constant indices become an i32 weight; computed ones are read in the
// type they have (here a model input: f32 in every mode, no cast).
// F32-LABEL: module @gather
// F32-DAG: %[[T:.*]] = "top.Input"(%arg0) {name = "t"}
// F32-DAG: %[[I:.*]] = "top.Input"(%arg1) {name = "i"}
// F32-DAG: %[[W:.*]] = "tpu.Weight"() {layout = "compact", name = "k"} : () -> tensor<2xi32>
// F32: "tpu.Gather"(%[[T]], %[[I]]) {axis = 0 : i64, name = "computed"} : (tensor<8x3xf32>, tensor<2x2xf32>) -> tensor<2x2x3xf32>
// F32: "tpu.Gather"(%[[T]], %[[W]]) {axis = 1 : i64, name = "constant"} : (tensor<8x3xf32>, tensor<2xi32>) -> tensor<8x2xf32>
// F16-LABEL: module @gather
// F16: %[[I:.*]] = "top.Input"(%arg1) {name = "i"}
// F16-NOT: "tpu.Cast"(%[[I]])
// F16: "tpu.Gather"(%{{.*}}, %[[I]]) {axis = 0 : i64, name = "computed_f16"} : (tensor<8x3xf16>, tensor<2x2xf32>) -> tensor<2x2x3xf16>
module @gather attributes {top.chip = "ALL", top.state = "TOP_F32"} {
  func.func @main(%arg0: tensor<8x3xf32>, %arg1: tensor<2x2xf32>) -> (tensor<2x2x3xf32>, tensor<8x2xf32>) {
    %0 = "top.Input"(%arg0) {name = "t"} : (tensor<8x3xf32>) -> tensor<8x3xf32>
    %1 = "top.Input"(%arg1) {name = "i"} : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %2 = "top.Weight"() {name = "k"} : () -> tensor<2xf32>
    %3 = "top.Gather"(%0, %1) {name = "computed", axis = 0} : (tensor<8x3xf32>, tensor<2x2xf32>) -> tensor<2x2x3xf32>
    %4 = "top.Gather"(%0, %2) {name = "constant", axis = -1} : (tensor<8x3xf32>, tensor<2xf32>) -> tensor<8x2xf32>
    return %3, %4 : tensor<2x2x3xf32>, tensor<8x2xf32>
  }
}

// -----

// A cast to bool of a comparison (ONNX's Cast before an If, hey_jarvis) is
// the comparison itself: an alias in every mode. A cast to bool of other
// values has no float-mode kernel (lower-errors.mlir).
// F32-LABEL: module @bool_of_compare
// F32: %[[C:.*]] = "tpu.Compare"
// F32: "tpu.Reshape"(%[[C]]) {name = "b"}
// F32: "tpu.Where"
// F16-LABEL: module @bool_of_compare
// F16: %[[C:.*]] = "tpu.Compare"
// F16: "tpu.Reshape"(%[[C]]) {name = "b"}
module @bool_of_compare attributes {top.chip = "ALL", top.state = "TOP_F32"} {
  func.func @main(%arg0: tensor<1x4xf32>) -> tensor<1x4xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x4xf32>) -> tensor<1x4xf32>
    %1 = "top.Weight"() {name = "t"} : () -> tensor<f32>
    %2 = "top.Compare"(%0, %1) {mode = "GreaterOrEqual", name = "ge"} : (tensor<1x4xf32>, tensor<f32>) -> tensor<1x4xf32>
    %3 = "top.Cast"(%2) {name = "b", to = "bool"} : (tensor<1x4xf32>) -> tensor<1x4xf32>
    %4 = "top.Where"(%3, %0, %1) {name = "y"} : (tensor<1x4xf32>, tensor<1x4xf32>, tensor<f32>) -> tensor<1x4xf32>
    return %4 : tensor<1x4xf32>
  }
}
